package fabric

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// TestAdaptiveRoutingSLsRefusals: topology.adaptive_routing_sls takes
// service levels (0..15), each once, and only beside adaptive_routing; an
// HCA workload is refused while its SL (workload.sl, on which the HCAs
// send requests, responses and ACKs) is one AR applies to. Each refusal is
// one line naming the key.
func TestAdaptiveRoutingSLsRefusals(t *testing.T) {
	ft := []string{"topology.kind=fat-tree-2", "switch.radix=4", "topology.hosts=8", "workload.kind=uniform"}
	ar := append([]string{"topology.adaptive_routing=true"}, ft...)
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{append([]string{"topology.adaptive_routing_sls=[16]"}, ar...),
			"topology.adaptive_routing_sls: 16 is not a service level (0 to 15)"},
		{append([]string{"topology.adaptive_routing_sls=[-1]"}, ar...),
			"topology.adaptive_routing_sls: -1 is not a service level (0 to 15)"},
		{append([]string{"topology.adaptive_routing_sls=[1, 3, 1]"}, ar...),
			"topology.adaptive_routing_sls: SL 1 is listed twice (each SL once)"},
		{append([]string{"topology.adaptive_routing_sls=[]"}, ar...),
			"topology.adaptive_routing_sls: [] lets no SL adapt; leave the key out for every SL, or set topology.adaptive_routing false"},
		{append([]string{"topology.adaptive_routing_sls=1"}, ar...),
			`topology.adaptive_routing_sls: want a list, got the value "1"`},
		{append([]string{"topology.adaptive_routing_sls=[1]"}, ft...),
			"topology.adaptive_routing_sls: [1] is set, but topology.adaptive_routing is false; set adaptive_routing true to use it, or remove the key"},
		{[]string{"topology.adaptive_routing_sls=[1]", "workload.kind=stream"},
			"topology.adaptive_routing_sls: [1] is set, but topology.kind back-to-back does not use it (no switches; remove the key)"},
		// Every SL adapts (the key unset): the HCAs' SL 0 does.
		{append([]string{"workload.kind=perftest"}, ar[:4]...),
			"topology.adaptive_routing: true reorders the packets of a flow on every SL (topology.adaptive_routing_sls is unset), but workload.kind perftest runs the hca model's transport on SL 0 (workload.sl), which needs them in order; list the SLs that may adapt in topology.adaptive_routing_sls without SL 0 (e.g. background traffic on workload.background_sl: 1 and adaptive_routing_sls: [1]), use a synthetic workload, or set adaptive_routing: false"},
		{append([]string{"workload.kind=perftest", "topology.adaptive_routing_sls=[1, 0]", "workload.background=true", "workload.background_sl=1"}, ar[:4]...),
			"topology.adaptive_routing_sls: [1 0] has SL 0, on which workload.kind perftest runs the hca model's transport (workload.sl), which needs a flow's packets in order; leave SL 0 out of the list, or put the HCAs on an SL it does not have"},
		{append([]string{"workload.kind=allreduce", "workload.sl=2", "switch.vls=4", "topology.adaptive_routing_sls=[2]"}, ar[:4]...),
			"topology.adaptive_routing_sls: [2] has SL 2, on which workload.kind allreduce runs the hca model's transport"},
		{append([]string{"workload.kind=alltoall", "topology.adaptive_routing_sls=[0]"}, ar[:4]...),
			"topology.adaptive_routing_sls: [0] has SL 0, on which workload.kind alltoall runs the hca model's transport"},
	} {
		_, err := Load(nil, tc.sets)
		require.Error(t, err, "%v", tc.sets)
		assert.Contains(t, err.Error(), tc.want)
		assert.NotContains(t, err.Error(), "\n")
	}
	// The HCAs on an SL AR does not apply to: a perftest beside adaptive
	// background, and the collectives.
	for _, sets := range [][]string{
		{"workload.kind=perftest", "topology.adaptive_routing_sls=[1]", "workload.background=true", "workload.background_sl=1"},
		{"workload.kind=perftest", "topology.adaptive_routing_sls=[3, 5]"},
		{"workload.kind=allreduce", "workload.sl=1", "switch.vls=2", "topology.adaptive_routing_sls=[0]"},
		{"workload.kind=alltoall", "topology.adaptive_routing_sls=[1]"},
	} {
		_, err := Load(nil, append(sets, ar[:4]...))
		assert.NoError(t, err, "%v", sets)
	}
}

// TestAdaptiveRoutingSLMask: the subnet's AR SLs are the list, or every SL
// when the list is empty; Egresses gives a group only to an AR SL.
func TestAdaptiveRoutingSLMask(t *testing.T) {
	tc := TopologyConfig{Kind: KindFatTree2, Radix: 4, Oversubscription: 1, Routing: RoutingDModK, AdaptiveRouting: true}
	assert.Equal(t, AllSLs, tc.ARSLMask())
	tc.AdaptiveRoutingSLs = []int{1, 3}
	assert.Equal(t, uint16(0b1010), tc.ARSLMask())
	_, sub, err := tc.BuildFabric(4, CableSpec{LengthM: 2}, SubnetOptions{Seed: 1, VLs: 1}, []uint8{0, 1, 3})
	require.NoError(t, err)
	assert.Equal(t, uint16(0b1010), sub.ARSLs())
	leaf0, lid := sub.Topo.Switches()[0], sub.HostLID(4)
	var one [1]uint16
	assert.Equal(t, []uint16{3, 4}, sub.Egresses(leaf0, lid, 1, &one))
	assert.Equal(t, []uint16{3, 4}, sub.Egresses(leaf0, lid, 3, &one))
	assert.Equal(t, []uint16{sub.Egress(leaf0, lid)}, sub.Egresses(leaf0, lid, 0, &one))
	assert.Equal(t, []uint16{sub.Egress(leaf0, lid)}, sub.Egresses(leaf0, lid, 2, &one))
	tc.AdaptiveRouting, tc.AdaptiveRoutingSLs = false, nil
	assert.Zero(t, tc.ARSLMask())
}

// TestAdaptiveRoutingDeadlockPerSL: the deadlock check walks, per SL, the
// routes that SL's packets can take. On the ring of four switches
// (TestAdaptiveRoutingDeadlock) the static min-hop routes are acyclic and
// the AR groups' alternatives close the cycle of the four clockwise
// channels. With AR on SL 1 only, traffic on SL 0 has the static routes
// (no cycle) and traffic on SL 1 the alternatives (the cycle); both SLs
// together have it too. With two VLs (SL 1 on VL 1) the cycle is VL 1's
// channels alone.
func TestAdaptiveRoutingDeadlockPerSL(t *testing.T) {
	ring, err := Ring(4, 1, CableSpec{LengthM: 2})
	require.NoError(t, err)
	cycle := "Fabric.Switch[0].Port[2] -> Fabric.Switch[1].Port[2] -> Fabric.Switch[2].Port[2] -> Fabric.Switch[3].Port[2] -> Fabric.Switch[0].Port[2]"
	ar, err := NewSubnet(ring, SubnetOptions{Routing: RoutingMinHop, VLs: 1, AdaptiveRouting: true, ARSLs: 1 << 1})
	require.NoError(t, err)
	assert.NoError(t, ar.CheckDeadlock([]uint8{0}), "SL 0 keeps the static routes")
	assert.NoError(t, ar.CheckDeadlock([]uint8{0, 2, 15}), "as every SL but 1")
	assert.EqualError(t, ar.CheckDeadlock([]uint8{1}), "deadlock: minhop routing with adaptive routing has a cycle of 4 channels in its channel dependency graph: "+cycle)
	assert.EqualError(t, ar.CheckDeadlock([]uint8{0, 1}), "deadlock: minhop routing with adaptive routing has a cycle of 4 channels in its channel dependency graph: "+cycle)

	ar2, err := NewSubnet(ring, SubnetOptions{Routing: RoutingMinHop, VLs: 2, AdaptiveRouting: true, ARSLs: 1 << 1})
	require.NoError(t, err)
	assert.NoError(t, ar2.CheckDeadlock([]uint8{0}))
	assert.EqualError(t, ar2.CheckDeadlock([]uint8{0, 1}), "deadlock: minhop routing with adaptive routing has a cycle of 4 channels in its channel dependency graph: "+
		"Fabric.Switch[0].Port[2] VL1 -> Fabric.Switch[1].Port[2] VL1 -> Fabric.Switch[2].Port[2] VL1 -> Fabric.Switch[3].Port[2] VL1 -> Fabric.Switch[0].Port[2] VL1")

	// From a config: the ring's traffic on SL 0 with AR on SL 1 runs
	// (the SL that could deadlock carries nothing); on SL 1 it is refused
	// under topology.adaptive_routing, whose SL's alternatives close it.
	base := []string{"topology.kind=file", "topology.file=" + ring4File(t), "switch.radix=3", "topology.routing=minhop",
		"topology.adaptive_routing=true", "topology.adaptive_routing_sls=[1]", "switch.vls=2", "workload.kind=uniform", "workload.measure_ns=1000"}
	l, err := Load(nil, base)
	require.NoError(t, err)
	_, _, err = ConfigureFabric(&l.Config, 1)
	assert.NoError(t, err, "SL 0's static routes are acyclic")
	l, err = Load(nil, append(base, "workload.sl=1"))
	require.NoError(t, err)
	_, _, err = ConfigureFabric(&l.Config, 1)
	assert.ErrorContains(t, err, "topology.adaptive_routing: deadlock: minhop routing with adaptive routing has a cycle of 4 channels")
}

// TestAdaptiveRoutingStaticSLRunsStatic: with adaptive routing on SL 1
// only, the shift traffic of TestAdaptiveRoutingSplitsSharedUplink on SL 0
// takes the LFT's port at every switch: the run is the static run, result
// for result, and packets_reordered is 0 (the key is there: AR is on).
func TestAdaptiveRoutingStaticSLRunsStatic(t *testing.T) {
	static, err := runARChecked(t, nil, interleavedSets(false, "switch.vls=2")...)
	require.NoError(t, err)
	sl1, err := runARChecked(t, nil, interleavedSets(true, "switch.vls=2", "topology.adaptive_routing_sls=[1]")...)
	require.NoError(t, err)
	assert.EqualValues(t, 0, sl1["packets_reordered"])
	delete(sl1, "packets_reordered")
	delete(sl1, "wall_s")
	delete(static, "wall_s")
	assert.Equal(t, static, sl1)
	assert.LessOrEqual(t, static["accepted_load"].(float64), 0.505, "static: two flows share each up-link")
}

// TestRouteCheckCatchesStaticSLAdapting: the route check holds a packet on
// an SL adaptive routing does not apply to to its LFT port. The subnet
// manager enables AR on SL 1 only, but every switch is made to adapt SL 0
// too (its table's static SLs cleared): the shift traffic on SL 0, whose
// two flows per leaf the LFTs send up one link, spreads, and the first
// packet granted to the other up-link is reported.
func TestRouteCheckCatchesStaticSLAdapting(t *testing.T) {
	_, err := runARChecked(t, func(s *Simulation) {
		for _, sw := range s.Net.Switches {
			sw.AR().SetStaticSLs(0)
		}
	}, interleavedSets(true, "topology.adaptive_routing_sls=[1]")...)
	require.Error(t, err)
	assert.ErrorContains(t, err, "on SL 0 granted to output")
	assert.ErrorContains(t, err, "which is neither the dlid's LFT port nor, on an SL adaptive routing applies to, in its adaptive routing group (misrouted)")
}

// grantCount counts arb_grant events by switch node, SL, DLID and output.
type grantCount struct {
	net *Network
	n   map[[4]int64]int
}

func (g *grantCount) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev := ctx.Item.(*components.TraceEvent)
	if ev.Kind != components.TraceArbGrant {
		return
	}
	sl, _ := ev.Int("sl")
	dlid, _ := ev.Int("dlid")
	out, _ := ev.Int("out")
	g.n[[4]int64{int64(g.net.RouteSwitch(ev.Path)), sl, dlid, out}]++
}

// TestAdaptiveRoutingSLPerftest: ib_write_lat (64-byte RDMA writes, RC) on
// SL 0 with static routes, beside background traffic on SL 1 that adapts
// (topology.adaptive_routing_sls: [1]), on testdata/ar-sl-perftest.topo:
// two radix-5 leaves, two spines, the perftest pair Host[0] (Leaf[0]) and
// Host[5] (Leaf[1]), and the background hosts Host[1..4] interleaved over
// the leaves, shifting by one among themselves (1→2→3→4→1), 4 KiB packets
// at 0.9 of the link.
//
// Every background flow crosses a spine, and the two flows of each leaf go
// to destinations D-mod-K sends up one up-link (checked below from the
// LFTs). Statically they share that link: their wire bytes in the window
// add up to at most one link's, so the four background hosts' mean
// accepted load is at most 2/4 = 0.5 of the link (to a fraction of a
// packet per flow at the window's edges). With AR on SL 1 each leaf's two
// flows offer 1.8 links to its two up-links, within their capacity (the
// test's writes, 64 bytes a round trip of about 1.2 µs, take under 0.1 %
// of one): AR's spreading carries them at nearly the offered load, held
// here to within 3 % of it (0.873).
//
// The test's flow stays in order: --check's ordering invariant holds SL 0's
// request PSNs to order (ReorderSLs has SL 1 only) and the route
// invariant every SL 0 grant to its LFT port; the responder sends no NAK,
// nothing is retried, and every SL 0 packet at Leaf[0] toward Host[5] is
// granted to the LFT's up-port, while the background's SL 1 packets use
// both up-ports.
func TestAdaptiveRoutingSLPerftest(t *testing.T) {
	const offered = 0.9
	sets := func(ar bool) []string {
		s := []string{"topology.kind=file", "topology.file=testdata/ar-sl-perftest.topo", "switch.radix=5",
			"switch.vls=1", "topology.routing=dmodk", "switch.vl_buffer_bytes=66560", "link.generation=NDR", "link.mtu=4096",
			"workload.kind=perftest", "workload.test=write_lat", "workload.size=64", "workload.iterations=200",
			"workload.background=true", "workload.background_pattern=shift", "workload.shift=1", "workload.background_sl=1",
			"workload.offered_load=0.9", "workload.warmup_ns=5000", "workload.measure_ns=30000"}
		if ar {
			s = append(s, "topology.adaptive_routing=true", "topology.adaptive_routing_sls=[1]")
		}
		return s
	}
	var grants *grantCount
	var sub *Subnet
	count := func(s *Simulation) {
		sub = s.Net.Subnet
		grants = &grantCount{net: s.Net, n: map[[4]int64]int{}}
		for _, b := range s.Blocks {
			b.AcceptHook(grants)
		}
	}
	static, err := runARChecked(t, count, sets(false)...)
	require.NoError(t, err)
	// The premise of the static bound, from the LFTs: each leaf's two
	// background flows climb one up-link.
	topo := sub.Topo
	leaf0, leaf1 := topo.Switches()[0], topo.Switches()[1]
	require.Equal(t, "Fabric.Leaf[1]", topo.Nodes[leaf1].Name)
	assert.Equal(t, sub.Egress(leaf0, sub.HostLID(2)), sub.Egress(leaf0, sub.HostLID(4)), "Host[1]→Host[2] and Host[3]→Host[4]")
	assert.Equal(t, sub.Egress(leaf1, sub.HostLID(3)), sub.Egress(leaf1, sub.HostLID(1)), "Host[2]→Host[3] and Host[4]→Host[1]")
	staticGrants := grants.n

	ar, err := runARChecked(t, count, sets(true)...)
	require.NoError(t, err, "--check: lossless, route (SL 0 on its LFT port), ordering (SL 0 in order)")
	assert.Equal(t, uint16(1<<1), sub.ARSLs())

	for _, m := range []map[string]any{static, ar} {
		assert.Equal(t, true, m["data_verified"])
		assert.EqualValues(t, 200, m["iterations"])
		assert.EqualValues(t, 0, m["host0_naks_sent"])
		assert.EqualValues(t, 0, m["host1_naks_sent"])
		assert.EqualValues(t, 0, m["retries"])
		assert.EqualValues(t, 0, m["packets_misrouted"])
	}
	s, a := static["accepted_load"].(float64), ar["accepted_load"].(float64)
	typ := func(m map[string]any) float64 { return m["lat_us"].(map[string]any)["typical"].(float64) * 1000 }
	t.Logf("background accepted load at %.2f offered: static %.4f, AR on SL 1 %.4f (%v packets reordered); write_lat typical %.1f ns static, %.1f ns beside AR",
		offered, s, a, ar["packets_reordered"], typ(static), typ(ar))
	assert.LessOrEqual(t, s, 0.5+0.005, "static: two background flows share each up-link")
	assert.Greater(t, s, 0.49)
	assert.Greater(t, a, offered*0.97, "AR: the background at nearly its offered load")
	assert.LessOrEqual(t, a, offered+0.005)
	require.Contains(t, ar, "packets_reordered")

	// Grants at Leaf[0]: the test's SL 0 packets toward Host[5] all on
	// the LFT's up-port; the background's SL 1 packets on both.
	lft := int64(sub.Egress(leaf0, sub.HostLID(5))) - 1
	ups := map[int64]bool{3: true, 4: true} // switchasic outputs of IB ports 4 and 5
	sl0, sl1 := map[int64]int{}, map[int64]int{}
	for k, n := range grants.n {
		if k[0] != int64(leaf0) || !ups[k[3]] {
			continue
		}
		switch {
		case k[1] == 0 && k[2] == int64(sub.HostLID(5)):
			sl0[k[3]] += n
		case k[1] == 1:
			sl1[k[3]] += n
		}
	}
	t.Logf("Leaf[0] up-port grants: SL 0 to Host[5] %v (LFT output %d), SL 1 %v", sl0, lft, sl1)
	assert.Equal(t, map[int64]int{lft: sl0[lft]}, sl0, "the RC flow keeps its LFT port")
	assert.GreaterOrEqual(t, sl0[lft], 200, "at least one write per iteration")
	assert.Greater(t, sl1[3], 0)
	assert.Greater(t, sl1[4], 0)
	// Statically the background at Leaf[0] used one up-port only.
	st := map[int64]int{}
	for k, n := range staticGrants {
		if k[0] == int64(leaf0) && ups[k[3]] && k[1] == 1 {
			st[k[3]] += n
		}
	}
	assert.Len(t, st, 1, "static background at Leaf[0]: %v", st)
}
