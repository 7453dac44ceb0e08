package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdaptiveRoutingSLsRefusals: topology.adaptive_routing_sls takes
// service levels (0..15), each once, and only beside adaptive_routing;
// each refusal is one line naming the key.
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
			"topology.adaptive_routing_sls: [1] is set, but topology.kind back-to-back does not use it (no switches)"},
	} {
		_, err := Load(nil, tc.sets)
		require.Error(t, err, "%v", tc.sets)
		assert.Contains(t, err.Error(), tc.want)
		assert.NotContains(t, err.Error(), "\n")
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
