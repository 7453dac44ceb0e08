package fabric

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ringPathGroup is a multicast group on Ring(4, 1) (Switch[i] has host i on
// port 1, port 2 to Switch[i+1], port 3 from Switch[i-1]) whose tree is the
// path of three switches clockwise from Switch[start]: members the hosts of
// its ends, entries {host, clockwise out} at the first, {in, out} in the
// middle, {in, host} at the last. It stands for what a subnet manager with
// other roots could program; the trees AddMulticastGroup grows on a ring
// are tested by the fat-tree cases.
func ringPathGroup(sn *Subnet, start int) *MulticastGroup {
	sw := sn.Topo.Switches()
	a, b, c := start, (start+1)%4, (start+2)%4
	g := &MulticastGroup{MLID: uint16(0xC000 + len(sn.mcast)), Members: []int{min(a, c), max(a, c)}, Root: sw[b]}
	ports := map[int][]int{sw[a]: {1, 2}, sw[b]: {2, 3}, sw[c]: {1, 3}}
	for _, n := range sw {
		if p, ok := ports[n]; ok {
			g.Switches = append(g.Switches, n)
			g.Ports = append(g.Ports, p)
		}
	}
	return g
}

// TestDeadlockMulticastUnionCycle: the deadlock check holds the union of the
// unicast routes and the multicast trees. On a ring of four switches routed
// up/down the unicast routes alone are acyclic. Host 0 to host 2 and host 1
// to host 3 go clockwise (asserted below), so the unicast routes hold the
// turns Switch[0].Port[2] → Switch[1].Port[2] (at Switch[1]) and
// Switch[1].Port[2] → Switch[2].Port[2] (at Switch[2]). A group whose tree is
// the path Switch[2]-Switch[3]-Switch[0] adds the turn at Switch[3], one on
// Switch[3]-Switch[0]-Switch[1] the turn at Switch[0]. Either group alone
// leaves the clockwise ring one turn short of a cycle, and is accepted;
// both close the cycle of the four clockwise channels, and the check names
// it. Each tree alone has no cycle (a path), nor do the two trees without
// the unicast turns (two turns of four).
func TestDeadlockMulticastUnionCycle(t *testing.T) {
	topo, err := Ring(4, 1, testCable)
	require.NoError(t, err)
	build := func(starts ...int) *Subnet {
		sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingUpDown, VLs: 1})
		require.NoError(t, err)
		for _, st := range starts {
			sn.mcast = append(sn.mcast, ringPathGroup(sn, st))
		}
		return sn
	}
	sn := build()
	require.NoError(t, sn.CheckDeadlock(nil))
	hosts, sw := sn.Hosts(), sn.Topo.Switches()
	for _, pair := range [][2]int{{0, 2}, {1, 3}} {
		path, err := sn.Path(hosts[pair[0]], hosts[pair[1]])
		require.NoError(t, err)
		a := pair[0]
		assert.Equal(t, []PortRef{{hosts[a], 1}, {sw[a], 2}, {sw[a+1], 2}, {sw[a+2], 1}}, path, "host %d to host %d goes clockwise", pair[0], pair[1])
	}
	assert.NoError(t, build(2).CheckDeadlock(nil), "the tree Switch[2]-[3]-[0] alone beside the unicast routes")
	assert.NoError(t, build(3).CheckDeadlock(nil), "the tree Switch[3]-[0]-[1] alone beside the unicast routes")
	assert.EqualError(t, build(2, 3).CheckDeadlock(nil), "deadlock: updown routing with the trees of 2 multicast groups has a cycle of 4 channels in its channel dependency graph: "+
		"Fabric.Switch[0].Port[2] -> Fabric.Switch[1].Port[2] -> Fabric.Switch[2].Port[2] -> Fabric.Switch[3].Port[2] -> Fabric.Switch[0].Port[2]")

}

// TestDeadlockMulticastTreesFatTrees: the trees the subnet manager grows
// on the shipped fat trees, beside their D-mod-K routes, have no cycle. A
// tree is grown breadth first from a top-tier switch, so each switch's
// parent link goes up (towards the root) and a copy that comes down a tree
// link only goes further down: its turns are up→up, up→down and
// down→down, never down→up, as D-mod-K's up*/down* routes' (Dally and
// Seitz's ordering argument: every dependency goes up the order "up
// channels by level, then down channels by level", so no cycle). The
// check still sees the trees: the graph gains the dependencies of copies
// a D-mod-K route never makes (a spine's copy down to every host of a
// leaf, where D-mod-K brings each host's packets down one spine of its
// choice), so it has more edges with the groups than without.
func TestDeadlockMulticastTreesFatTrees(t *testing.T) {
	for _, tc := range []struct {
		sets   []string
		groups [][]int
		// eachAdds: every group's tree is rooted at a spine no other
		// group's is, and a spine's copy down to every member of a leaf
		// is a dependency no D-mod-K route makes, so each group adds
		// dependencies to the graph.
		eachAdds bool
	}{
		// 64 hosts, radix 16: 8 leaves of 8 hosts. Four groups of 8 on
		// leaf pairs {0..3 of leaf k, 4..7 of leaf k+4}, roots Spine[k].
		{[]string{"topology.kind=fat-tree-2", "topology.hosts=64", "switch.radix=16"},
			[][]int{{0, 1, 2, 3, 36, 37, 38, 39}, {8, 9, 10, 11, 44, 45, 46, 47}, {16, 17, 18, 19, 52, 53, 54, 55}, {24, 25, 26, 27, 60, 61, 62, 63}}, true},
		// The same four and a fifth of all 64 hosts (as IPoIB's broadcast
		// group beside applications' groups), root Spine[4]: every host
		// of the four is in two groups, a tree link in several entries.
		{[]string{"topology.kind=fat-tree-2", "topology.hosts=64", "switch.radix=16"},
			[][]int{{0, 1, 2, 3, 36, 37, 38, 39}, {8, 9, 10, 11, 44, 45, 46, 47}, {16, 17, 18, 19, 52, 53, 54, 55}, {24, 25, 26, 27, 60, 61, 62, 63}, allHosts(64)}, true},
		// 16 hosts, radix 4: three groups across pods.
		{[]string{"topology.kind=fat-tree-3", "topology.hosts=16", "switch.radix=4"},
			[][]int{{0, 2, 8}, {1, 5, 13}, {4, 10, 15}}, false},
	} {
		t.Run(fmt.Sprintf("%s/%d-groups", tc.sets[0], len(tc.groups)), func(t *testing.T) {
			l, err := Load(nil, append([]string{"workload.kind=multicast", "switch.queueing=fifo"}, tc.sets...))
			require.NoError(t, err)
			_, sub, err := ConfigureFabric(&l.Config, 1)
			require.NoError(t, err)
			edges := func() int {
				_, adj, err := sub.DependencyGraph(nil)
				require.NoError(t, err)
				n := 0
				for _, a := range adj {
					n += len(a)
				}
				return n
			}
			unicast := edges()
			for k, g := range tc.groups {
				before := edges()
				_, err := sub.AddMulticastGroup(g)
				require.NoError(t, err)
				if tc.eachAdds {
					assert.Greater(t, edges(), before, "group %d adds dependencies", k)
				}
			}
			assert.NoError(t, sub.CheckDeadlock(nil))
			assert.Greater(t, edges(), unicast, "the trees add dependencies")
		})
	}
}

// allHosts returns hosts 0 … n − 1.
func allHosts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// ring4Text is a topology file of Ring(4, 3): Switch[i] has hosts 3i..3i+2
// on ports 1..3, port 4 to Switch[i+1], port 5 from Switch[i-1].
func ring4Text() string {
	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, "switch Fabric.Switch[%d] 5\n", i)
	}
	for h := range 12 {
		fmt.Fprintf(&b, "host Fabric.Host[%d]\ncable Fabric.Host[%d].Port[1] Fabric.Switch[%d].Port[%d]\n", h, h, h/3, h%3+1)
	}
	for i := range 4 {
		fmt.Fprintf(&b, "cable Fabric.Switch[%d].Port[4] Fabric.Switch[%d].Port[5]\n", i, (i+1)%4)
	}
	return b.String()
}

// TestMulticastRunRefusesADeadlockingUnion: a multicast run whose groups'
// trees close a cycle with its unicast background's routes is refused on
// one line before it starts. The ring of TestDeadlockMulticastUnionCycle
// with three hosts a switch, routed up/down (acyclic alone); every switch
// is a root (rank 0), so group k's tree grows from Switch[k mod 4]. Group
// 0 {3, 9} (Switch[1] and Switch[3], from Switch[0]) is the path 1-0-3,
// group 3 {0, 6} (Switch[0] and Switch[2], from Switch[3]) the path 0-3-2;
// groups 1 and 2 stay on one switch. The paths give the turns at
// Switch[0] and Switch[3] of the clockwise cycle, the background's unicast
// routes (hosts in no group: 1, 2, 10, 11) the other two, on the same SL
// and VL. Without the background, or with it on SL 1, which the default
// table puts on VL 1, the trees' channels share no cycle: the run goes.
func TestMulticastRunRefusesADeadlockingUnion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring4.topo")
	require.NoError(t, os.WriteFile(path, []byte(ring4Text()), 0o644))
	run := func(sets ...string) error {
		l, err := Load(nil, append([]string{"topology.kind=file", "topology.file=" + path, "topology.routing=updown", "switch.radix=5",
			"switch.vls=2", "switch.queueing=fifo", "workload.kind=multicast", `workload.groups=["3,9","4,5","7,8","0,6"]`,
			"workload.size=1024", "workload.offered_load=0.2", "workload.warmup_ns=500", "workload.measure_ns=1000"}, sets...))
		require.NoError(t, err)
		_, err = Run(l, RunOptions{})
		return err
	}
	err := run("workload.background=true")
	require.Error(t, err)
	assert.Equal(t, "workload.groups: deadlock: updown routing with the trees of 4 multicast groups on SL 0 has a cycle of 4 channels in its channel dependency graph: "+
		"Fabric.Switch[0].Port[4] VL0 -> Fabric.Switch[1].Port[4] VL0 -> Fabric.Switch[2].Port[4] VL0 -> Fabric.Switch[3].Port[4] VL0 -> Fabric.Switch[0].Port[4] VL0; "+
		"give other groups, or the background an SL on another VL (workload.background_sl)", err.Error())
	assert.NoError(t, run())
	assert.NoError(t, run("workload.background=true", "workload.background_sl=1"))
}
