package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
)

// TestPerftestBackgroundWindowNeverOpened: a background whose warm-up
// outlasts the test has an empty window, [warmup_ns, min(warmup_ns +
// measure_ns, end of the test)] with the end before the start
// (docs/config.md, workload.background). Nothing can be measured over it:
// no accepted_load or goodput_gbps (a rate over no time; the window's
// length was negative, so both came out -0, and a knee search read that
// as saturated), and every statistic summed over the window is 0 — no
// measured packet, no credit stall, no switch activity. The stall and the
// switch statistics were instead counted from time 0 through the warm-up,
// which at 0.8 load into one-packet switch buffers stalls the hosts for
// a good while.
func TestPerftestBackgroundWindowNeverOpened(t *testing.T) {
	yaml, ok := configs.Lookup("ndr.yaml")
	require.True(t, ok)
	l, err := Load(yaml, []string{"sweep={}", "switch.vl_buffer_bytes=4160", "workload.offered_load=0.8",
		"workload.warmup_ns=1000000000"})
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	require.Less(t, m["sim_time_ns"].(float64), 1e9, "the test ends inside the warm-up")
	assert.NotContains(t, m, "accepted_load")
	assert.NotContains(t, m, "goodput_gbps")
	assert.Equal(t, 0.0, m["credit_stall_ns"])
	assert.Equal(t, 0.0, m["latency_ns"].(map[string]float64)["count"])
	assert.Equal(t, 0.0, m["switch_xbar_conflicts"])
	assert.Equal(t, 0.0, m["switch_arb_losses"])
	assert.Equal(t, 0.0, m["switch_link_util_max"])
	// A buffer's peak over the instant the window is: what it holds
	// then, at most the one 4160-byte packet switch.vl_buffer_bytes takes.
	assert.LessOrEqual(t, m["switch_buf_peak_bytes"], 4160.0)
	// The background ran all the same, and the test has its results.
	assert.Positive(t, m["packets_delivered"])
	assert.Contains(t, m, "bw_gbps")
}
