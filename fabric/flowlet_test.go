package fabric

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/verif"
)

// flowPorts records, per switch and flow (SLID, DLID), the outputs its
// packets were granted.
type flowPorts struct {
	net *Network
	out map[[3]int64]map[int64]bool
}

func (f *flowPorts) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev := ctx.Item.(*components.TraceEvent)
	if ev.Kind != components.TraceArbGrant {
		return
	}
	slid, _ := ev.Int("slid")
	dlid, _ := ev.Int("dlid")
	out, _ := ev.Int("out")
	k := [3]int64{int64(f.net.RouteSwitch(ev.Path)), slid, dlid}
	if f.out[k] == nil {
		f.out[k] = map[int64]bool{}
	}
	f.out[k][out] = true
}

// TestFlowletsKeepFlowsInOrder: the permutation of
// examples/adaptive-routing.yaml (radix-8 two-level tree, 32 hosts,
// D-mod-K, 4 KiB packets at 0.9 of the link). Per-packet AR reorders a
// share of every flow's packets (packets_reordered > 0). With
// topology.ar_flowlet_gap_ns: 1000, a leaf keeps a flow's up-port while its
// packets arrive less than 1 µs apart (12 times a packet's 82.44 ns on the
// wire); at 0.9 a source rarely idles that long, and in this run none
// did: every flow was granted one output at every switch, one flowlet per
// flow that crosses leaves (27). One path and FIFO queues per
// (input, output, VL) keep a flow in order, so no packet arrives behind a
// later one: packets_reordered is 0, and the ordering invariant holds
// every flow's PSNs to order (ReorderSLs 0, as for a static run). The
// price is balance: a flow stays where its first packet went.
func TestFlowletsKeepFlowsInOrder(t *testing.T) {
	sets := func(extra ...string) []string {
		return append([]string{"topology.kind=fat-tree-2", "switch.radix=8", "topology.hosts=32", "switch.vls=1",
			"switch.vl_buffer_bytes=66560", "topology.routing=dmodk", "workload.kind=permutation", "workload.size=4096",
			"workload.offered_load=0.9", "workload.warmup_ns=5000", "workload.measure_ns=30000"}, extra...)
	}
	perPacket, err := runARChecked(t, nil, sets("topology.adaptive_routing=true")...)
	require.NoError(t, err)
	static, err := runARChecked(t, nil, sets()...)
	require.NoError(t, err)

	l, err := Load(nil, append([]string{"sim.check=true"}, sets("topology.adaptive_routing=true", "topology.ar_flowlet_gap_ns=1000")...))
	require.NoError(t, err)
	var chk *verif.Checkers
	var view *Simulation
	var ports *flowPorts
	flowlet, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		view = s
		ports = &flowPorts{net: s.Net, out: map[[3]int64]map[int64]bool{}}
		for _, b := range s.Blocks {
			b.AcceptHook(ports)
		}
		// ReorderSLs 0: every flow held to PSN order, AR or not.
		chk = verif.AttachCheckers(verif.CheckConfig{Routes: s.Net, OnViolation: func(*verif.Violation) { s.Stop() }}, s.Blocks...)
	}})
	require.NoError(t, err)
	chk.Finish(view.Now(), view.Settled)
	require.NoError(t, chk.Err(), "in order, on their routes, lossless")

	var st struct{ flowlets, kept, collisions uint64 }
	for _, sw := range view.Net.Switches {
		s := sw.FlowletStats()
		st.flowlets += s.Flowlets
		st.kept += s.Kept
		st.collisions += s.Collisions
	}
	t.Logf("accepted at 0.9: static %.3f, per-packet AR %.3f (%v reordered), flowlet AR %.3f (%v reordered); flowlets %d, kept %d, collisions %d",
		static["accepted_load"], perPacket["accepted_load"], perPacket["packets_reordered"],
		flowlet["accepted_load"], flowlet["packets_reordered"], st.flowlets, st.kept, st.collisions)
	assert.Greater(t, perPacket["packets_reordered"], uint64(0))
	assert.EqualValues(t, 0, flowlet["packets_reordered"])
	assert.EqualValues(t, 0, flowlet["ar_flowlet_collisions"])
	assert.Zero(t, st.collisions)
	assert.Greater(t, st.kept, 100*st.flowlets, "flowlets span many packets")
	require.NotEmpty(t, ports.out)
	for k, outs := range ports.out {
		assert.Len(t, outs, 1, "switch node %d, SLID %d → DLID %d: one output", k[0], k[1], k[2])
	}
	assert.Equal(t, true, flowlet["drain_complete"])
	assert.NotContains(t, perPacket, "ar_flowlet_collisions", "per packet: no flowlet table")
}

// TestFlowletGapRefusals: topology.ar_flowlet_gap_ns is a time from 0 to
// 1 s, only with adaptive routing; each refusal is one line naming it.
func TestFlowletGapRefusals(t *testing.T) {
	ft := []string{"topology.kind=fat-tree-2", "switch.radix=4", "topology.hosts=8", "workload.kind=uniform"}
	ar := append([]string{"topology.adaptive_routing=true"}, ft...)
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{append([]string{"topology.ar_flowlet_gap_ns=-1"}, ar...),
			"topology.ar_flowlet_gap_ns: -1 is out of range (0 = choose a port for every packet, up to 1e+09 ns)"},
		{append([]string{"topology.ar_flowlet_gap_ns=2e9"}, ar...),
			"topology.ar_flowlet_gap_ns: 2e+09 is out of range (0 = choose a port for every packet, up to 1e+09 ns)"},
		{append([]string{"topology.ar_flowlet_gap_ns=.nan"}, ar...),
			`topology.ar_flowlet_gap_ns: ".nan" is not a finite number`},
		{append([]string{"topology.ar_flowlet_gap_ns=soon"}, ar...),
			"topology.ar_flowlet_gap_ns: "},
		{append([]string{"topology.ar_flowlet_gap_ns=500"}, ft...),
			"topology.ar_flowlet_gap_ns: 500 is set, but topology.adaptive_routing is false; set adaptive_routing true to use it, or remove the key"},
		{[]string{"topology.ar_flowlet_gap_ns=500", "workload.kind=stream"},
			"topology.ar_flowlet_gap_ns: 500 is set, but topology.kind back-to-back does not use it (no switches; remove the key)"},
	} {
		_, err := Load(nil, tc.sets)
		require.Error(t, err, "%v", tc.sets)
		assert.Contains(t, err.Error(), tc.want)
		assert.NotContains(t, err.Error(), "\n")
	}
	_, err := Load(nil, append([]string{"topology.ar_flowlet_gap_ns=500"}, ar...))
	assert.NoError(t, err)
}
