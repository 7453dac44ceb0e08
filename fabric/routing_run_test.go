package fabric

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDModKDeliversFullBandwidth (issue 5): a full two-level fat tree of
// radix-8 switches (8 leaves × 4 hosts, 4 spines) under shift permutations
// that cross the spines. D-mod-K gives every destination its own up-link per
// leaf, so no channel carries two flows: each host's offered load (95 % of
// the link) is accepted in full. Random up-port choice puts two flows on one
// channel for most shifts: those flows share 100 % of a link, so the
// accepted load falls measurably below the offered one.
func TestDModKDeliversFullBandwidth(t *testing.T) {
	const offered = 0.95
	run := func(routing string, shift int) float64 {
		l, err := Load(nil, []string{"topology.kind=fat-tree-2", "switch.radix=8", "topology.hosts=32", "switch.vls=1",
			"topology.routing=" + routing, "workload.kind=shift", fmt.Sprintf("workload.shift=%d", shift),
			"workload.size=4096", fmt.Sprintf("workload.offered_load=%v", offered),
			// 16 packets of buffer per VL: enough to cover the credit round
			// trip, so only routing limits throughput.
			"switch.vl_buffer_bytes=66560", "workload.measure_ns=30000"})
		require.NoError(t, err)
		m, err := Run(l, RunOptions{})
		require.NoError(t, err)
		assert.EqualValues(t, 0, m["packets_dropped"])
		return m["accepted_load"].(float64)
	}
	var randomSum float64
	shifts := []int{4, 5, 6, 9}
	for _, sh := range shifts {
		d := run(RoutingDModK, sh)
		assert.InEpsilon(t, offered, d, 0.01, "dmodk shift %d accepted %.3f", sh, d)
		r := run(RoutingRandom, sh)
		assert.Less(t, r, d, "random shift %d", sh)
		randomSum += r
	}
	assert.Less(t, randomSum/float64(len(shifts)), 0.9*offered, "random routing blocks on average")
}
