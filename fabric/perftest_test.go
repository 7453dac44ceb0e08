package fabric

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/configs"
)

// TestPerftestBreakdownIsTheMedianIteration: under background load every
// iteration of a latency test takes a different time, so the middle
// iteration (the one traced first) is in general not the median. The
// breakdown must be the median iteration's own: its segments add up to the
// reported median to the picosecond's rounding (a ping-pong segment is the
// mean of the ping's and the pong's, which may end in half a picosecond; a
// float sum of a dozen segments keeps that well inside 1e-6 ns).
func TestPerftestBreakdownIsTheMedianIteration(t *testing.T) {
	yaml, ok := configs.Lookup("ndr.yaml")
	require.True(t, ok)
	for _, test := range []string{"write_lat", "send_lat", "read_lat", "atomic_lat"} {
		t.Run(test, func(t *testing.T) {
			// configs/ndr.yaml: host 0 and host 15 of a radix-8 fat tree
			// while 14 hosts offer 80 % of the link rate.
			l, err := Load(yaml, []string{"workload.test=" + test, "workload.offered_load=0.8", "workload.iterations=100"})
			require.NoError(t, err)
			m, err := Run(l, RunOptions{})
			require.NoError(t, err)
			lat := m["lat_us"].(map[string]any)
			require.Greater(t, lat["stdev"].(float64), 0.0, "the background makes iterations differ")
			bd := m["latency_breakdown"].([]any)
			total := bd[len(bd)-1].(map[string]any)
			require.Equal(t, "total", total["segment"])
			sum := 0.0
			for _, s := range bd[:len(bd)-1] {
				seg := s.(map[string]any)
				assert.GreaterOrEqual(t, seg["ns"].(float64), 0.0, "%v", seg["segment"])
				sum += seg["ns"].(float64)
			}
			assert.InDelta(t, total["ns"].(float64), sum, 1e-6, "segments add up to the total")
			assert.InDelta(t, lat["typical"].(float64)*1000, total["ns"].(float64), 1e-6, "the total is the median")
		})
	}
}

// TestPerftestBackgroundStatsInWindow: a perftest's background traffic
// reports its credit stall and the switches' statistics over its window
// (warm-up end to window end, or the test's end), as a synthetic run does.
// The stall was summed over the background's partition, which held no
// endpoint (always 0, though one-packet switch buffers at 0.8 load stall
// the hosts for milliseconds), and the switch statistics ran from time 0
// whatever the warm-up. So: the stall is positive, and a longer warm-up
// (a later window start, the same traffic) counts fewer conflicts.
func TestPerftestBackgroundStatsInWindow(t *testing.T) {
	yaml, ok := configs.Lookup("ndr.yaml")
	require.True(t, ok)
	run := func(warmup string) map[string]any {
		l, err := Load(yaml, []string{"sweep={}", "switch.vl_buffer_bytes=4160", "workload.offered_load=0.8",
			"workload.warmup_ns=" + warmup})
		require.NoError(t, err)
		m, err := Run(l, RunOptions{})
		require.NoError(t, err)
		return m
	}
	early, late := run("2000"), run("200000")
	assert.Positive(t, early["credit_stall_ns"].(float64))
	assert.Less(t, late["switch_xbar_conflicts"].(float64), early["switch_xbar_conflicts"].(float64))
	assert.Less(t, late["credit_stall_ns"].(float64), early["credit_stall_ns"].(float64))
}

// TestPerftestBackgroundPatternErrors: the background runs among the hosts
// other than the perftest pair, a count the user never wrote, so an error
// about it names workload.background_pattern and says where the count comes
// from. configs/ndr.yaml's fat tree has 16 hosts: 16 − 2 = 14 background
// hosts, not a power of two (bitcomp) and a multiple of 14 (shift 14); a
// single switch with 3 hosts leaves one, too few for any pattern. The
// message once said "workload.kind: bitcomp needs a power-of-two number of
// hosts, the topology has 14" of a 16-host topology.
func TestPerftestBackgroundPatternErrors(t *testing.T) {
	yaml, ok := configs.Lookup("ndr.yaml")
	require.True(t, ok)
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"workload.background_pattern=bitcomp"},
			"workload.background_pattern: bitcomp needs a power-of-two number of background hosts, the fabric has 14 besides the two perftest hosts"},
		{[]string{"workload.background_pattern=shift", "workload.shift=14"},
			"workload.shift: 14 is a multiple of the 14 background hosts, so every host would send to itself"},
		{[]string{"topology.kind=single-switch", "topology.cable_length_m=0", "topology.hosts=3"},
			"workload.background_pattern: uniform needs at least 2 background hosts, the fabric has 1 besides the two perftest hosts"},
	} {
		l, err := Load(yaml, append([]string{"sweep={}"}, tc.set...))
		require.NoError(t, err)
		_, err = Run(l, RunOptions{})
		assert.EqualError(t, err, tc.want)
		var un *UnsupportedError
		assert.ErrorAs(t, err, &un, "a user's mistake, exit 2")
	}
}

// TestHCAsSendOnTheirSLsVL: an HCA port maps SL to VL as a switch port does
// (IBA's SLtoVLMappingTable exists on CA ports too; OpenSM programs both
// from one QoS table). The HCAs' QPs send on workload.sl, 0 here, so with
// switch.sl2vl putting SL 0 on VL 1 every packet on every link — the
// hosts' links included, which used to carry them on VL 0 — is on VL 1, and
// the run still completes with its data verified.
func TestHCAsSendOnTheirSLsVL(t *testing.T) {
	for _, test := range []string{"write_bw", "read_lat", "send_lat"} {
		t.Run(test, func(t *testing.T) {
			l, err := Load(nil, []string{"topology.kind=single-switch", "topology.hosts=2", "switch.vls=2",
				"switch.sl2vl=[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", "workload.kind=perftest",
				"workload.test=" + test, "workload.iterations=20"})
			require.NoError(t, err)
			vls := vlCount{}
			m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
				for _, b := range s.Blocks {
					b.AcceptHook(vls)
				}
			}})
			require.NoError(t, err)
			assert.Equal(t, true, m["data_verified"])
			require.NotZero(t, vls["Host vl=1"], "the hosts sent nothing?")
			assert.Equal(t, vlCount{"Host vl=1": vls["Host vl=1"], "Switch vl=1": vls["Switch vl=1"]}, vls)
		})
	}
}

// vlCount counts tx_start trace events by block kind (Host, Switch) and VL.
type vlCount map[string]int

func (c vlCount) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev := ctx.Item.(*components.TraceEvent)
	if ev.Kind != components.TraceTxStart {
		return
	}
	kind := "Switch"
	if strings.Contains(ev.Path, ".Host[") {
		kind = "Host"
	}
	for _, f := range ev.Fields {
		if f.Key == "vl" {
			c[fmt.Sprintf("%s vl=%d", kind, f.Int)]++
		}
	}
}
