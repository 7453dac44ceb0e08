package fabric

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSynthGoodputFromAcceptedLoad derives goodput_gbps from accepted_load.
// Both sum the same packets over the same window with the same pro-rata
// share for a packet cut by an edge (docs/metrics.md), one counting wire
// bytes per sending host, the other payload bytes in all. A 1024-byte SEND
// ONLY is 1024 + 26 = 1050 bytes on the wire (LRH 8, BTH 12, ICRC 4, VCRC
// 2; 1024 needs no pad), so with every packet that size
//
//	goodput_gbps = accepted_load × senders × 400 Gb/s × 1024 / 1050
//
// exactly, but for float rounding. Incast's sink sends nothing: 7 senders
// of 8 hosts.
//
// Over a long window accepted_load is also the offered load, in the same
// wire bytes: at 0.3 a host sends a packet in 0.3 of the 1050 × 8 / 400 =
// 21 ns slots, ≈ 2860 packets in 200 µs, 8 hosts ≈ 22 900. Bernoulli's
// count has relative sd sqrt((1 − L) / n) ≈ 0.55 %; on-off with bursts of
// 8 is about 8 times noisier in variance (≈ 1.6 %, docs/fabric.md's
// burst/idle cycle); 5 % bounds both. Incast at 0.1 (7 × 0.1 = 0.7 of the
// sink's link) delivers what is offered too.
func TestSynthGoodputFromAcceptedLoad(t *testing.T) {
	for _, tc := range []struct {
		kind, inject string
		load         float64
		senders      float64
	}{
		{"permutation", "bernoulli", 0.3, 8},
		{"permutation", "onoff", 0.3, 8},
		{"uniform", "bernoulli", 0.3, 8},
		{"incast", "bernoulli", 0.1, 7},
	} {
		t.Run(tc.kind+"/"+tc.inject, func(t *testing.T) {
			l, err := Load(nil, []string{"topology.kind=single-switch", "topology.hosts=8", "switch.vls=1",
				"link.generation=NDR", "link.width=4x", "link.length_m=2", "workload.kind=" + tc.kind,
				"workload.size=1024", "workload.injection=" + tc.inject,
				fmt.Sprintf("workload.offered_load=%v", tc.load),
				"workload.warmup_ns=5000", "workload.measure_ns=200000"})
			require.NoError(t, err)
			m, err := Run(l, RunOptions{})
			require.NoError(t, err)
			require.Equal(t, true, m["drain_complete"])
			require.Equal(t, 400.0, m["link_data_rate_gbps"])
			acc := m["accepted_load"].(float64)
			good := m["goodput_gbps"].(float64)
			assert.InEpsilon(t, acc*tc.senders*400*1024/1050, good, 1e-9)
			assert.InEpsilon(t, tc.load, acc, 0.05)
		})
	}
}
