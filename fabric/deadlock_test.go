package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ring5Cycle is the clockwise cycle of a five-switch ring routed by shortest
// path. With one host per switch, host i to host i+2 has one shortest route,
// Switch[i] → Switch[i+1] → Switch[i+2] (the other way is 3 switch hops), so
// the packet holding Switch[i].Port[2] (clockwise) waits for
// Switch[i+1].Port[2], for every i: five channels in a cycle. The search
// starts at the lowest channel, Switch[0].Port[1] (a host port with no
// successors), then Switch[0].Port[2], and walks clockwise.
const ring5Cycle = "deadlock: minhop routing has a cycle of 5 channels in its channel dependency graph: " +
	"Fabric.Switch[0].Port[2] -> Fabric.Switch[1].Port[2] -> Fabric.Switch[2].Port[2] -> " +
	"Fabric.Switch[3].Port[2] -> Fabric.Switch[4].Port[2] -> Fabric.Switch[0].Port[2]"

func TestDeadlockRingShortestPath(t *testing.T) {
	fromFile, err := LoadTopologyFile("testdata/ring5.topo", testCable)
	require.NoError(t, err)
	built, err := Ring(5, 1, testCable)
	require.NoError(t, err)
	for name, topo := range map[string]*Topology{"file": fromFile, "builder": built} {
		t.Run(name, func(t *testing.T) {
			sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 1})
			require.NoError(t, err)
			assert.EqualError(t, sn.CheckDeadlock(nil), ring5Cycle)

			// The same ring under up/down has no cycle, and every route
			// still arrives.
			ud, err := NewSubnet(topo, SubnetOptions{Routing: RoutingUpDown, VLs: 1})
			require.NoError(t, err)
			assert.NoError(t, ud.CheckDeadlock(nil))
			for _, a := range ud.Hosts() {
				for _, b := range ud.Hosts() {
					if a != b {
						_, err := ud.Path(a, b)
						assert.NoError(t, err)
					}
				}
			}
		})
	}
}

// TestDeadlockRingDateline breaks both ring cycles with a second VL: at
// Switch[0], a packet that crosses it going round the ring (in from the ring
// on one side, out on the other) moves from VL0 to VL1. Every VL0 cycle
// would have to pass Switch[0] in that way, and VL1 carries only the single
// hop after Switch[0], so both VLs are acyclic. Without the dateline the same
// two-VL fabric still has the cycle on VL0.
func TestDeadlockRingDateline(t *testing.T) {
	topo, err := Ring(5, 1, testCable)
	require.NoError(t, err)
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 2})
	require.NoError(t, err)
	err = sn.CheckDeadlock([]uint8{0})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Fabric.Switch[0].Port[2] VL0 -> Fabric.Switch[1].Port[2] VL0")

	dateline := DefaultSL2VL(2)
	dateline[0] = 1
	sw0, _ := topo.Lookup("Fabric.Switch[0]")
	// Port 3 faces Switch[4], port 2 faces Switch[1] (Ring's wiring).
	require.NoError(t, sn.SetSL2VL(sw0, 3, 2, dateline))
	require.NoError(t, sn.SetSL2VL(sw0, 2, 3, dateline))
	assert.NoError(t, sn.CheckDeadlock([]uint8{0}))
	assert.Equal(t, uint8(1), sn.VL(sw0, 3, 2, 0))
	assert.Equal(t, uint8(0), sn.VL(sw0, 1, 2, 0), "other pairs keep the default table")

	// SL1 maps to VL1 by default and has no dateline: its cycle is on VL1.
	err = sn.CheckDeadlock([]uint8{0, 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), " VL1 -> ")
}

// TestDeadlockFollowsDefaultTable: with the switches' own table given as
// the default, the check follows it. Mapping every SL to VL1 on a two-VL
// ring moves the cycle to VL1.
func TestDeadlockFollowsDefaultTable(t *testing.T) {
	topo, err := Ring(5, 1, testCable)
	require.NoError(t, err)
	allVL1 := SL2VLTable{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 2, SL2VL: &allVL1})
	require.NoError(t, err)
	err = sn.CheckDeadlock(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Fabric.Switch[0].Port[2] VL1 -> Fabric.Switch[1].Port[2] VL1")

	bad := SL2VLTable{3}
	_, err = NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 2, SL2VL: &bad})
	assert.EqualError(t, err, "subnet: SL-to-VL table maps SL0 to VL3 but ports have 2 data VLs (VL15 = drop)")
}

func TestDeadlockFreeFatTrees(t *testing.T) {
	for _, tc := range fatTreeCases() {
		topo, err := tc.topo()
		require.NoError(t, err)
		for _, engine := range RoutingEngines {
			t.Run(tc.name+"/"+engine, func(t *testing.T) {
				sn, err := NewSubnet(topo, SubnetOptions{Routing: engine, Seed: 5, VLs: 1})
				require.NoError(t, err)
				// On a tree every min-hop route climbs then descends, so
				// every engine is up*/down* there and cycle-free.
				assert.NoError(t, sn.CheckDeadlock(nil))
			})
		}
	}
}

// TestDependencyGraphSingleSwitch: through one switch a packet from host a to
// host b holds a's link then waits for the switch's port to b. With 3 hosts
// each host channel has 2 successors (the other two hosts' ports) and the
// switch's egress channels have none: 3 × 2 = 6 dependencies.
func TestDependencyGraphSingleSwitch(t *testing.T) {
	topo, err := SingleSwitch(3, 4, testCable)
	require.NoError(t, err)
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 1})
	require.NoError(t, err)
	chans, adj, err := sn.DependencyGraph(nil)
	require.NoError(t, err)
	edges := 0
	for i, succ := range adj {
		edges += len(succ)
		if topo.Nodes[chans[i].Port.Node].Kind == Host {
			assert.Len(t, succ, 2, topo.PortName(chans[i].Port))
		} else {
			assert.Empty(t, succ, topo.PortName(chans[i].Port))
		}
	}
	assert.Equal(t, 6, edges)
}

func TestFindCycle(t *testing.T) {
	cases := []struct {
		name string
		adj  [][]int
		want []int
	}{
		{"empty", nil, nil},
		{"chain", [][]int{{1}, {2}, {}}, nil},
		{"diamond", [][]int{{1, 2}, {3}, {3}, {}}, nil},
		{"self loop", [][]int{{0}}, []int{0}},
		{"triangle after a tail", [][]int{{1}, {2}, {3}, {1}}, []int{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, findCycle(tc.adj))
		})
	}
}
