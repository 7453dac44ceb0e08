package fabric

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// TestQoSLatencyOnHighPriorityVL: perftest write_lat (2 bytes) between the
// first and the last host of an oversubscribed two-level tree while every
// other host offers its full link rate of 4 KiB background packets. The
// switches' buffers hold one MTU packet per VL (4160 bytes), far below the
// credit loop, so the background backs up into every switch on the test's
// path (tree saturation).
//
// On SL 1, which switch.sl2vl puts on VL 1 and the arbitration's high
// table serves first, with the background on SL 0 (VL 0, low table), the
// test's packets get their own credits and wait only for what a VL
// arbiter cannot take back. Per switch, at most:
//
//   - S: one VL 0 packet already on the output wire (arbitration is per
//     packet, non-preemptive): 4122 bytes (4096 + LRH 8 + BTH 12 + ICRC 4
//   - VCRC 2) × 20 ps (4x NDR, 400 Gb/s) = 82.44 ns, on an output that
//     carries background;
//   - 2X: on an input that carries background, a VL 0 packet holding the
//     input's one crossbar connection (speedup 1), ⌈4122 / 64⌉ = 65 cycles
//     of 1 ns, and one accept lost to it: iSLIP's accept pointer is not
//     VL-aware, but after an accept it points past that output, and these
//     inputs forward to at most two outputs (the spine has three cabled
//     ports, the last leaf two hosts), so at most one more 65 ns transfer;
//   - P: an allocation round's wait for the next 1 ns clock edge.
//
// The test's packets cross three switches each way: the first leaf (its
// input from the host is the test's alone; its up-link carries background:
// S), the spine (input and output both: 2X + S), the last leaf (input from
// the spine: 2X; its output to the test host is the test's alone). So
// each one-way trip, and write_lat's half round trip with it, is at most
// 2S + 4X + 3P = 164.88 + 260 + 3 = 427.88 ns above the unloaded one.
// Flow-control packets (6 bytes, 0.12 ns each) go ahead of data; two per
// wire on four loaded wires add under 1 ns: the bound is 429 ns.
//
// On SL 0 with the background the test shares VL 0's one-packet buffers
// with packets that wait for the saturated links: it must wait well
// beyond what priority bounds, so its latency exceeds the same bound.
func TestQoSLatencyOnHighPriorityVL(t *testing.T) {
	const boundNs = 429.0
	base := []string{
		"link.generation=NDR", "link.width=4x", "link.length_m=2", "link.mtu=4096", "hca.profile=cx7",
		// radix 16, 15:1: 15 hosts and one up-link per leaf, one spine;
		// 32 hosts fill leaves 0 and 1 and put hosts 30 and 31 on leaf 2.
		"topology.kind=fat-tree-2", "topology.hosts=32", "topology.oversubscription=15", "topology.routing=dmodk",
		"topology.cable_length_m=5", "switch.radix=16", "switch.vls=2", "switch.vl_buffer_bytes=4160",
		"switch.vlarb_high=[{vl: 1, weight: 4}]", "switch.vlarb_low=[{vl: 0, weight: 4}]",
		"workload.kind=perftest", "workload.test=write_lat", "workload.size=2", "workload.iterations=100",
		"workload.background_pattern=uniform", "workload.offered_load=1.0", "workload.measure_ns=1000000",
	}
	run := func(sets ...string) (map[string]any, slCount) {
		l, err := Load(nil, append(append([]string{}, base...), sets...))
		require.NoError(t, err)
		sls := slCount{}
		m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
			for _, b := range s.Blocks {
				b.AcceptHook(sls)
			}
		}})
		require.NoError(t, err)
		return m, sls
	}
	typical := func(m map[string]any) float64 { return m["lat_us"].(map[string]any)["typical"].(float64) * 1000 }

	unloaded, _ := run("workload.sl=1", "workload.background=false")
	high, highSLs := run("workload.sl=1", "workload.background=true", "workload.background_sl=0")
	shared, _ := run("workload.sl=0", "workload.background=true")
	u, h, sh := typical(unloaded), typical(high), typical(shared)
	t.Logf("write_lat typical: unloaded %.1f ns, SL 1 (high) vs background on SL 0 %.1f ns (+%.1f), same SL 0 %.1f ns (+%.1f); bound +%.0f",
		u, h, h-u, sh, sh-u, boundNs)
	for _, m := range []map[string]any{high, shared} {
		require.Greater(t, m["accepted_load"].(float64), 0.0, "the background ran")
		assert.Equal(t, true, m["data_verified"])
	}
	assert.LessOrEqual(t, h-u, boundNs, "on the high-priority VL the background costs at most the bound")
	assert.Greater(t, sh-u, boundNs, "sharing the background's VL costs more than priority bounds")
	// Every packet the HCAs sent carried SL 1 in its LRH, on VL 1; the
	// background hosts' carried SL 0 on VL 0.
	require.NotZero(t, highSLs["HCA sl=1 vl=1"])
	require.NotZero(t, highSLs["Endpoint sl=0 vl=0"])
	assert.Equal(t, slCount{"HCA sl=1 vl=1": highSLs["HCA sl=1 vl=1"], "Endpoint sl=0 vl=0": highSLs["Endpoint sl=0 vl=0"]}, highSLs)
}

// slCount counts inject trace events by source kind (HCA or packet
// Endpoint), SL and VL.
type slCount map[string]int

func (c slCount) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev := ctx.Item.(*components.TraceEvent)
	if ev.Kind != components.TraceInject {
		return
	}
	kind := "Endpoint"
	if strings.HasSuffix(ev.Path, ".HCA") {
		kind = "HCA"
	}
	var sl, vl int64
	for _, f := range ev.Fields {
		switch f.Key {
		case "sl":
			sl = f.Int
		case "vl":
			vl = f.Int
		}
	}
	c[fmt.Sprintf("%s sl=%d vl=%d", kind, sl, vl)]++
}

// TestHCAsSendOnWorkloadSL: perftest (RC and UD) and the collectives put
// workload.sl in every packet their HCAs send, requests, ACKs and
// responses alike, on the VL switch.sl2vl gives it: OpenSM's default maps
// SL 2 to VL 2 of 4. Back to back too: there the ports then have
// switch.vls VLs.
func TestHCAsSendOnWorkloadSL(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"b2b write_bw", []string{"workload.kind=perftest", "workload.test=write_bw", "workload.iterations=50"}},
		{"b2b read_lat", []string{"workload.kind=perftest", "workload.test=read_lat", "workload.iterations=20"}},
		{"b2b UD send_bw", []string{"workload.kind=perftest", "workload.test=send_bw", "workload.connection=UD",
			"workload.size=1024", "workload.iterations=50"}},
		{"b2b allreduce", []string{"workload.kind=allreduce", "workload.size=65536"}},
		{"switch alltoall", []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=4",
			"workload.kind=alltoall", "workload.size=65536"}},
		{"switch perftest", []string{"topology.kind=single-switch", "topology.hosts=2", "switch.radix=4",
			"workload.kind=perftest", "workload.test=send_lat", "workload.iterations=20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(nil, append([]string{"switch.vls=4", "workload.sl=2"}, tc.sets...))
			require.NoError(t, err)
			sls := slCount{}
			m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
				for _, b := range s.Blocks {
					b.AcceptHook(sls)
				}
			}})
			require.NoError(t, err)
			assert.Equal(t, true, m["data_verified"])
			require.NotZero(t, sls["HCA sl=2 vl=2"])
			assert.Equal(t, slCount{"HCA sl=2 vl=2": sls["HCA sl=2 vl=2"]}, sls)
		})
	}
}
