package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// TestCQModerationAtomicLat: atomic_lat -e with cq_count 2 and cq_period
// 1000 µs. Unmoderated, the client is woken by its stale re-arm's event,
// not by the atomic's CQE (TestEventModeLatencyDerived). With count 2 the
// stale re-arm holds the CQE being polled (one, below the count), so it
// fires nothing; the next atomic's CQE is the second held and fires as an
// unmoderated CQE does. So each steady iteration is the polling one plus
// eventPathPS (5586 + 1778 ps + W), exactly, and one event an iteration:
// the first atomic's CQE, held alone, waits for the 1000 µs timer (that
// iteration is the slowest, not the median).
func TestCQModerationAtomicLat(t *testing.T) {
	cfg := hca.Defaults()
	iters := 200
	run := edrRun("atomic_lat", 8, iters)
	run.HCA = cfg
	poll, err := RunPerftest(run)
	require.NoError(t, err)
	run.UseEvent, run.CQModCount, run.CQModPeriodUS = true, 2, 1000
	ev, err := RunPerftest(run)
	require.NoError(t, err)
	assert.Equal(t, typicalPS(t, poll)+eventPathPS(cfg), typicalPS(t, ev))
	assert.Equal(t, int64(iters), ev["host0_cq_events"])
	assert.Equal(t, int64(iters), ev["host0_interrupts"])
	worst := ev["lat_us"].(map[string]any)["max"].(float64)
	assert.Greater(t, worst, 1000.0, "the first iteration waits for the period")

	// Out of range, or without use_event: refused, naming the key.
	for _, tc := range []struct {
		count, period int
		event         bool
		want          string
	}{
		{65536, 0, true, "workload.cq_moderation_count: 65536 is out of range (0 to 65535, mlx5's 16-bit cq_max_count)"},
		{0, 4096, true, "workload.cq_moderation_period_us: 4096 is out of range (0 to 4095 µs, mlx5's 12-bit cq_period)"},
		{4, 0, false, "workload.cq_moderation_count: 4 is set, but workload.use_event is not"},
	} {
		run := edrRun("atomic_lat", 8, 10)
		run.UseEvent, run.CQModCount, run.CQModPeriodUS = tc.event, tc.count, tc.period
		_, err := RunPerftest(run)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}
