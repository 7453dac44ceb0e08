package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFatTree2Shape(t *testing.T) {
	cases := []struct {
		name string
		spec FatTree2Spec
		want FatTree2Shape
	}{
		// radix 8, 1:1: 4 down, 4 up; one spine per up-port; each spine of
		// radix 8 takes one cable per leaf → 8 leaves → 32 hosts (R²/2).
		{"radix 8 full", FatTree2Spec{Radix: 8, Oversubscription: 1},
			FatTree2Shape{Down: 4, Up: 4, Leaves: 8, Spines: 4, Parallel: 1, Hosts: 32}},
		// radix 12, 2:1: down = 12·2/3 = 8, up 4; 12 leaves of 8 hosts.
		{"radix 12 2:1", FatTree2Spec{Radix: 12, Oversubscription: 2},
			FatTree2Shape{Down: 8, Up: 4, Leaves: 12, Spines: 4, Parallel: 1, Hosts: 96}},
		// 2 spines for 4 up-ports: 2 cables per leaf-spine pair, so a spine
		// takes 8/2 = 4 leaves.
		{"radix 8 two spines", FatTree2Spec{Radix: 8, Oversubscription: 1, Spines: 2},
			FatTree2Shape{Down: 4, Up: 4, Leaves: 4, Spines: 2, Parallel: 2, Hosts: 16}},
		// 10 hosts need ceil(10/4) = 3 leaves.
		{"radix 8 ten hosts", FatTree2Spec{Radix: 8, Oversubscription: 1, Hosts: 10},
			FatTree2Shape{Down: 4, Up: 4, Leaves: 3, Spines: 4, Parallel: 1, Hosts: 10}},
		// 3:1 on radix 64 (48 down, 16 up): 64 leaves, 3072 hosts.
		{"radix 64 3:1", FatTree2Spec{Radix: 64, Oversubscription: 3},
			FatTree2Shape{Down: 48, Up: 16, Leaves: 64, Spines: 16, Parallel: 1, Hosts: 3072}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.Shape()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			topo, err := FatTree2(tc.spec, testCable)
			require.NoError(t, err)
			assert.Len(t, topo.Hosts(), tc.want.Hosts)
			assert.Len(t, topo.Switches(), tc.want.Leaves+tc.want.Spines)
			// One cable per host plus Up per leaf.
			assert.Len(t, topo.Cables, tc.want.Hosts+tc.want.Leaves*tc.want.Up)
			require.NoError(t, topo.Check())
		})
	}
}

func TestFatTree2Errors(t *testing.T) {
	cases := []struct {
		spec FatTree2Spec
		want string
	}{
		{FatTree2Spec{Radix: 1, Oversubscription: 1}, "topology.radix: 1 is out of range for a fat tree (2..256)"},
		{FatTree2Spec{Radix: 8, Oversubscription: 0}, "topology.oversubscription: 0 must be positive (down:up ratio at a leaf, 1 = non-blocking)"},
		{FatTree2Spec{Radix: 8, Oversubscription: 2}, "topology.oversubscription: 2 does not split radix 8 into whole down and up ports (down = radix × o / (1 + o) = 5.333333333333333)"},
		{FatTree2Spec{Radix: 8, Oversubscription: 1, Spines: 3}, "topology.spines: 3 must divide the 4 up-ports of each leaf"},
		{FatTree2Spec{Radix: 8, Oversubscription: 1, Leaves: 9}, "topology.leaves: 9 is out of range (1..8: each spine of radix 8 takes 1 cable per leaf)"},
		{FatTree2Spec{Radix: 8, Oversubscription: 1, Leaves: 2, Hosts: 9}, "topology.hosts: 9 does not fit 2 leaf switches of 4 host ports (at most 8)"},
		{FatTree2Spec{Radix: 8, Oversubscription: 1, Leaves: 1, Hosts: 5}, "topology.hosts: 5 does not fit 1 leaf switch of 4 host ports (at most 4)"},
		{FatTree2Spec{Radix: 8, Oversubscription: 1, Hosts: 1}, "topology.hosts: 1 is too few (a fat tree connects at least 2 hosts; 0 = every host port)"},
		// Radix 8, non-blocking: 4 host ports per leaf, one cable from each
		// leaf to each of 4 spines, so at most 8 leaves and 32 hosts.
		{FatTree2Spec{Radix: 8, Oversubscription: 1, Hosts: 33}, "topology.hosts: 33 does not fit a two-level fat tree of radix 8 (at most 32: 8 leaves of 4 host ports; use a larger switch.radix or fat-tree-3)"},
		{FatTree2Spec{Radix: 8, Oversubscription: 1, Spines: 2, Leaves: 5}, "topology.leaves: 5 is out of range (1..4: each spine of radix 8 takes 2 cables per leaf)"},
	}
	for _, tc := range cases {
		_, err := FatTree2(tc.spec, testCable)
		assert.EqualError(t, err, tc.want)
	}
}

// TestFatTree3Size: a k-ary three-level tree has k pods of k/2 leaves and
// k/2 spines, (k/2)² cores and k³/4 hosts; every tier has k³/4 cables
// (hosts–leaves, leaves–spines, spines–cores).
func TestFatTree3Size(t *testing.T) {
	for _, k := range []int{4, 6, 8} {
		topo, err := FatTree3(k, 0, testCable)
		require.NoError(t, err)
		half := k / 2
		assert.Len(t, topo.Hosts(), k*k*k/4)
		assert.Len(t, topo.Switches(), k*half+k*half+half*half)
		assert.Len(t, topo.Cables, 3*k*k*k/4)
		require.NoError(t, topo.Check())
	}
	// 20 hosts on radix 8: 16 per pod → 2 pods, 8 leaves, 8 spines, 16 cores.
	sh, err := FatTree3Size(8, 20)
	require.NoError(t, err)
	assert.Equal(t, FatTree3Shape{Half: 4, Pods: 2, Cores: 16, Hosts: 20}, sh)
	_, err = FatTree3Size(7, 0)
	assert.EqualError(t, err, "topology.radix: 7 must be even and in 2..256 for a three-level fat tree")
	_, err = FatTree3Size(4, 17)
	assert.EqualError(t, err, "topology.hosts: 17 does not fit a three-level fat tree of radix 4 (2..16 = k³/4)")

	// Every node takes a unicast LID, 1..0xBFFF = 49151 of them. Radix 64
	// full: 64 pods × 1024 hosts = 65536 hosts, 64 pods × (32 leaves + 32
	// spines) + 32² cores = 5120 switches, 70656 LIDs. With p pods the
	// hosts can be at most 49151 − 64p − 1024 and must need p pods (more
	// than 1024(p−1)): p = 45 gives 45247 (> 45056), p = 46 gives 45183
	// (< 46080, so 45 pods would do), so 45247 hosts is the most.
	_, err = FatTree3Size(64, 0)
	assert.EqualError(t, err, "topology.hosts: 0 (a full tree, 65536 hosts) in a three-level fat tree of radix 64 need 70656 LIDs with the tree's 5120 switches, more than the unicast range 0x0001-0xBFFF (49151) holds (at most 45247 hosts at this radix)")
	sh, err = FatTree3Size(64, 45247)
	require.NoError(t, err)
	assert.Equal(t, 45, sh.Pods)
	_, err = FatTree3Size(64, 45248)
	assert.ErrorContains(t, err, "need 49152 LIDs")
}

func TestNamesAndWiring(t *testing.T) {
	topo, err := FatTree2(FatTree2Spec{Radix: 8, Oversubscription: 1}, testCable)
	require.NoError(t, err)
	h17, ok := topo.Lookup("Fabric.Host[17]")
	require.True(t, ok)
	// Host 17 is on leaf 17/4 = 4, port 17%4+1 = 2.
	peer, ok := topo.Peer(PortRef{h17, 1})
	require.True(t, ok)
	assert.Equal(t, "Fabric.Leaf[4].Port[2]", topo.PortName(peer))
	// Leaf 2's up-port u=1 is port 4+1+1 = 6, to Spine[1] port 2·1+0+1 = 3.
	leaf2, _ := topo.Lookup("Fabric.Leaf[2]")
	peer, _ = topo.Peer(PortRef{leaf2, 6})
	assert.Equal(t, "Fabric.Spine[1].Port[3]", topo.PortName(peer))
	for _, n := range topo.Nodes {
		assert.True(t, ValidName(n.Name), n.Name)
	}
	c, ok := topo.CableAt(PortRef{h17, 1})
	require.True(t, ok)
	assert.Equal(t, 2.0, c.LengthM)
	assert.Equal(t, Copper, c.Medium)
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"Fabric.Leaf[2]":         true,
		"Fabric.Host[17]":        true,
		"Fabric.Pod[1].Leaf[0]":  true,
		"Rack3.Switch":           true,
		"fabric.leaf[2]":         false,
		"Fabric.Leaf_2":          false,
		"Fabric.Leaf-2":          false,
		"Fabric.Leaf[x]":         false,
		"Fabric..Leaf":           false,
		"Fabric.Leaf[2].Port[5]": true,
	} {
		assert.Equal(t, want, ValidName(name), name)
	}
}

func TestConnectAndCheckErrors(t *testing.T) {
	topo := &Topology{}
	sw, err := topo.AddSwitch("Fabric.Switch[0]", 2)
	require.NoError(t, err)
	h0, _ := topo.AddHost("Fabric.Host[0]")
	h1, _ := topo.AddHost("Fabric.Host[1]")
	_, err = topo.AddHost("Fabric.Host[1]")
	assert.EqualError(t, err, "host name Fabric.Host[1] is used twice")
	_, err = topo.AddHost("host_2")
	assert.EqualError(t, err, `host name "host_2" is not in Akita form (capitalised parts, e.g. Fabric.Host[3])`)
	_, err = topo.AddSwitch("Fabric.Switch[1]", 257)
	assert.EqualError(t, err, "switch Fabric.Switch[1]: radix 257 is out of range (1..256)")

	assert.EqualError(t, topo.Connect(PortRef{sw, 1}, PortRef{sw, 2}, 1, Copper),
		"cable: Fabric.Switch[0].Port[1] to Fabric.Switch[0].Port[2] loops back into Fabric.Switch[0]; a cable must join two different nodes")
	_, cabled := topo.Peer(PortRef{sw, 2})
	assert.False(t, cabled, "a refused loopback leaves the port free")
	require.NoError(t, topo.Connect(PortRef{h0, 1}, PortRef{sw, 1}, 1, Copper))
	assert.EqualError(t, topo.Connect(PortRef{h1, 1}, PortRef{sw, 1}, 1, Copper),
		"cable: Fabric.Switch[0].Port[1] is already cabled to Fabric.Host[0].Port[1]")
	assert.EqualError(t, topo.Connect(PortRef{h1, 1}, PortRef{sw, 3}, 1, Copper),
		"cable: Fabric.Switch[0] has ports 1..2, not 3")
	assert.EqualError(t, topo.Check(), "Fabric.Host[1].Port[1] has no cable")
	require.NoError(t, topo.Connect(PortRef{h1, 1}, PortRef{sw, 2}, 1, Copper))
	assert.NoError(t, topo.Check())
}

func TestBackToBackRoutes(t *testing.T) {
	topo := BackToBack(testCable)
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 1})
	require.NoError(t, err)
	path, err := sn.Path(0, 1)
	require.NoError(t, err)
	assert.Equal(t, []PortRef{{0, 1}}, path)
	assert.Equal(t, uint16(1), sn.LID(0))
	assert.Equal(t, uint16(2), sn.LID(1))
	assert.NoError(t, sn.CheckDeadlock(nil))
}

// TestLIDOrder: hosts get LIDs 1..H in node order, then switches H+1...
func TestLIDOrder(t *testing.T) {
	topo, err := FatTree2(FatTree2Spec{Radix: 4, Oversubscription: 1}, testCable)
	require.NoError(t, err)
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 1})
	require.NoError(t, err)
	// Radix 4: 2 down, 2 up, 4 leaves, 2 spines, 8 hosts.
	for i, h := range sn.Hosts() {
		assert.Equal(t, uint16(i+1), sn.LID(h))
		assert.Equal(t, h, sn.NodeOf(uint16(i+1)))
	}
	for i, s := range topo.Switches() {
		assert.Equal(t, uint16(8+i+1), sn.LID(s))
	}
	assert.Equal(t, uint16(14), sn.MaxLID())
	for _, s := range topo.Switches() {
		assert.Len(t, sn.LFT(s), 15)
	}
	assert.Equal(t, -1, sn.NodeOf(0))
	assert.Equal(t, -1, sn.NodeOf(15))
}

func TestDefaultSL2VL(t *testing.T) {
	// OpenSM's table SL i → i (0..14), SL15 → 7, each reduced mod VLs.
	assert.Equal(t, SL2VLTable{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7}, DefaultSL2VL(15))
	assert.Equal(t, SL2VLTable{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, DefaultSL2VL(4))
	assert.Equal(t, SL2VLTable{}, DefaultSL2VL(1))

	topo, err := SingleSwitch(2, 4, testCable)
	require.NoError(t, err)
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 2})
	require.NoError(t, err)
	bad := DefaultSL2VL(2)
	bad[3] = 5
	assert.EqualError(t, sn.SetSL2VL(0, 1, 2, bad), "sl2vl: Fabric.Switch[0] (1, 2): SL3 maps to VL5 but the port has 2 data VLs (VL15 = drop)")
	assert.EqualError(t, sn.SetSL2VL(0, 1, 5, bad), "sl2vl: Fabric.Switch[0] has ports 0..4, not (1, 5)")
}
