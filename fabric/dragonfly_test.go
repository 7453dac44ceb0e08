package fabric

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/verif"
)

// dflyGroupOf returns the group of node n of a DragonflyPlus fabric of
// shape sh. The builder adds the leaves (group-major), then the spines
// (group-major), then the hosts (leaf by leaf).
func dflyGroupOf(sh DragonflyPlusShape, n int) int {
	leaves, spines := sh.Groups*sh.Leaves, sh.Groups*sh.Spines
	switch {
	case n < leaves:
		return n / sh.Leaves
	case n < leaves+spines:
		return (n - leaves) / sh.Spines
	default:
		return (n - leaves - spines) / sh.Down / sh.Leaves
	}
}

// TestDragonflyPlusShape: the shape follows from the radix as the paper
// splits it (a leaf's ports half to hosts, half to its group's spines; a
// spine's half to the group's leaves, half to other groups), and the fabric
// built from it has the nodes and cables the shape says:
//
//	switches = g × (L + S)
//	cables   = hosts + g × L × Up (leaf–spine) + g(g−1)/2 × PairCables (global)
//
// with PairCables = ⌊S·h / (g−1)⌋. Every pair of groups is joined by exactly
// PairCables global cables, every global cable joins two spines of
// different groups, and no spine has more than h of them. When g−1 ≥ h a
// pair's copies lie g−1 ≥ h ports apart in the consecutive per-spine
// layout, so on different spines: no spine has two cables to one group.
func TestDragonflyPlusShape(t *testing.T) {
	cases := []struct {
		name string
		spec DragonflyPlusSpec
		want DragonflyPlusShape
	}{
		// Radix 4: 2 host ports and 2 up-ports (one to each of 2 spines);
		// a spine gives 4/2 = 2 ports to 2 leaves and keeps 2 global ones:
		// S·h = 4 global ports per group join at most 5 groups, one cable
		// a pair; 5 groups × 2 leaves × 2 hosts = 20 hosts.
		{"radix 4 full", DragonflyPlusSpec{Radix: 4, Oversubscription: 1},
			DragonflyPlusShape{Down: 2, Up: 2, Leaves: 2, Spines: 2, Parallel: 1, GlobalLinks: 2, Groups: 5, PairCables: 1, Hosts: 20}},
		// Radix 8: 4 hosts, 4 spines, 4 leaves, h = 4: 16 global ports,
		// 17 groups (the paper's g = S·h + 1), 17 × 16 = 272 hosts.
		{"radix 8 full", DragonflyPlusSpec{Radix: 8, Oversubscription: 1},
			DragonflyPlusShape{Down: 4, Up: 4, Leaves: 4, Spines: 4, Parallel: 1, GlobalLinks: 4, Groups: 17, PairCables: 1, Hosts: 272}},
		// 5 groups share 16 global ports 4 ways: 4 cables a pair.
		{"radix 8 five groups", DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Groups: 5},
			DragonflyPlusShape{Down: 4, Up: 4, Leaves: 4, Spines: 4, Parallel: 1, GlobalLinks: 4, Groups: 5, PairCables: 4, Hosts: 80}},
		// 4 groups: ⌊16/3⌋ = 5 cables a pair; one port a group stays free.
		{"radix 8 four groups", DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Groups: 4},
			DragonflyPlusShape{Down: 4, Up: 4, Leaves: 4, Spines: 4, Parallel: 1, GlobalLinks: 4, Groups: 4, PairCables: 5, Hosts: 64}},
		// 40 hosts need ⌈40/16⌉ = 3 groups: 8 cables a pair.
		{"radix 8 forty hosts", DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Hosts: 40},
			DragonflyPlusShape{Down: 4, Up: 4, Leaves: 4, Spines: 4, Parallel: 1, GlobalLinks: 4, Groups: 3, PairCables: 8, Hosts: 40}},
		// 2 spines for 4 up-ports: 2 cables per leaf–spine pair, so a spine
		// takes ⌊8/2⌋/2 = 2 leaves (4 ports) and keeps 4 global: 2·4+1 = 9
		// groups of 2 leaves × 4 hosts.
		{"radix 8 two spines", DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Spines: 2},
			DragonflyPlusShape{Down: 4, Up: 4, Leaves: 2, Spines: 2, Parallel: 2, GlobalLinks: 4, Groups: 9, PairCables: 1, Hosts: 72}},
		// h = 2: 4·2 + 1 = 9 groups of 16 hosts.
		{"radix 8 two global links", DragonflyPlusSpec{Radix: 8, Oversubscription: 1, GlobalLinks: 2},
			DragonflyPlusShape{Down: 4, Up: 4, Leaves: 4, Spines: 4, Parallel: 1, GlobalLinks: 2, Groups: 9, PairCables: 1, Hosts: 144}},
		// 3:1 leaves on radix 8: 6 host ports, 2 spines; a spine takes 4
		// leaves and keeps 4 global ports: 2·4 + 1 = 9 groups of 24 hosts.
		{"radix 8 3:1", DragonflyPlusSpec{Radix: 8, Oversubscription: 3},
			DragonflyPlusShape{Down: 6, Up: 2, Leaves: 4, Spines: 2, Parallel: 1, GlobalLinks: 4, Groups: 9, PairCables: 1, Hosts: 216}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sh, err := tc.spec.Shape()
			require.NoError(t, err)
			assert.Equal(t, tc.want, sh)
			local := CableSpec{LengthM: 5, Medium: Copper}
			global := CableSpec{LengthM: 40, Medium: Fibre}
			topo, err := DragonflyPlus(tc.spec, testCable, local, global)
			require.NoError(t, err)
			require.NoError(t, topo.Check())
			g := sh.Groups
			assert.Len(t, topo.Hosts(), sh.Hosts)
			assert.Len(t, topo.Switches(), g*(sh.Leaves+sh.Spines))
			assert.Len(t, topo.Cables, sh.Hosts+g*sh.Leaves*sh.Up+g*(g-1)/2*sh.PairCables)
			pair := map[[2]int]int{}
			perSpine := map[int]int{}
			spineToGroup := map[[2]int]int{}
			for _, c := range topo.Cables {
				a, b := topo.Nodes[c.A.Node], topo.Nodes[c.B.Node]
				ga, gb := dflyGroupOf(sh, c.A.Node), dflyGroupOf(sh, c.B.Node)
				switch {
				case a.Kind == Host || b.Kind == Host:
					assert.Equal(t, ga, gb, "host cable %s–%s", a.Name, b.Name)
					assert.Equal(t, testCable.LengthM, c.LengthM)
				case a.Level == 2 && b.Level == 2:
					require.NotEqual(t, ga, gb, "global cable %s–%s inside a group", a.Name, b.Name)
					assert.Equal(t, global.LengthM, c.LengthM)
					assert.Equal(t, Fibre, c.Medium)
					pair[[2]int{min(ga, gb), max(ga, gb)}]++
					perSpine[c.A.Node]++
					perSpine[c.B.Node]++
					spineToGroup[[2]int{c.A.Node, gb}]++
					spineToGroup[[2]int{c.B.Node, ga}]++
				default: // leaf–spine
					assert.Equal(t, ga, gb, "leaf–spine cable %s–%s across groups", a.Name, b.Name)
					assert.Equal(t, local.LengthM, c.LengthM)
					assert.Equal(t, Copper, c.Medium)
				}
			}
			for i := 0; i < g; i++ {
				for j := i + 1; j < g; j++ {
					assert.Equal(t, sh.PairCables, pair[[2]int{i, j}], "global cables between groups %d and %d", i, j)
				}
			}
			assert.Len(t, pair, g*(g-1)/2)
			for n, k := range perSpine {
				assert.LessOrEqual(t, k, sh.GlobalLinks, "%s", topo.Nodes[n].Name)
			}
			if g-1 >= sh.GlobalLinks {
				for sg, k := range spineToGroup {
					assert.Equal(t, 1, k, "%s has %d cables to group %d", topo.Nodes[sg[0]].Name, k, sg[1])
				}
			}
		})
	}
}

func TestDragonflyPlusErrors(t *testing.T) {
	cases := []struct {
		spec DragonflyPlusSpec
		want string
	}{
		{DragonflyPlusSpec{Radix: 1, Oversubscription: 1}, "topology.radix: 1 is out of range for a dragonfly-plus (2..256)"},
		{DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Spines: 3}, "topology.spines: 3 must divide the 4 up-ports of each leaf"},
		// Radix 8 with 4 spines: a spine keeps a global port, so at most 7 leaves.
		{DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Leaves: 8}, "topology.leaves: 8 is out of range for a dragonfly-plus group (1..7: a spine of radix 8 takes 1 cable per leaf and keeps a port for a global cable)"},
		{DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Leaves: 6, GlobalLinks: 3}, "topology.global_links: 3 is out of range (1..2: a spine of radix 8 has 2 ports left beside its 6 cables to 6 leaves)"},
		// Radix 8, h = 1: 4 spines × 1 = 4 global ports join at most 5 groups.
		{DragonflyPlusSpec{Radix: 8, Oversubscription: 1, GlobalLinks: 1, Groups: 6}, "topology.groups: 6 is out of range (2..5: every pair of groups needs a global cable, and a group has 4 spines × 1 global links = 4)"},
		{DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Groups: 1}, "topology.groups: 1 is out of range (2..17: every pair of groups needs a global cable, and a group has 4 spines × 4 global links = 16)"},
		{DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Hosts: 16}, "topology.hosts: 16 fit one group of 4 leaves × 4 host ports; a dragonfly-plus has at least 2 groups (set topology.groups, or use fat-tree-2)"},
		// 5 groups of 16 hosts at most with h = 1.
		{DragonflyPlusSpec{Radix: 8, Oversubscription: 1, GlobalLinks: 1, Hosts: 81}, "topology.hosts: 81 need 6 groups of 16 hosts, but 4 spines × 1 global links join at most 5 (at most 80 hosts; use a larger switch.radix)"},
		{DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Groups: 2, Hosts: 33}, "topology.hosts: 33 does not fit 2 groups of 4 leaves × 4 host ports (at most 32)"},
		// Radix 64 by default: 32 × 32 global ports join 1025 groups of
		// 1024 hosts: 1,049,600 hosts and 65,600 switches, far beyond the
		// 49,151 unicast LIDs; a full group takes 1024 + 64 LIDs, so 45 fit.
		{DragonflyPlusSpec{Radix: 64, Oversubscription: 1}, "topology.groups: 0 (the most the global ports join, 1025): 1049600 hosts and 65600 switches need 1115200 LIDs, more than the unicast range 0x0001-0xBFFF (49151) holds (at most 45 full groups at this shape)"},
	}
	for _, tc := range cases {
		_, err := DragonflyPlus(tc.spec, testCable, testCable, testCable)
		assert.EqualError(t, err, tc.want)
	}
}

// TestDragonflyPlusConfigErrors: the config keys say which key is wrong, and
// kinds that do not use the dragonfly-plus keys refuse them.
func TestDragonflyPlusConfigErrors(t *testing.T) {
	cases := []struct {
		sets []string
		want string
	}{
		{[]string{"topology.kind=dragonfly-plus", "switch.radix=4", "topology.groups=6"},
			"topology.groups: 6 is out of range (2..5: every pair of groups needs a global cable, and a group has 2 spines × 2 global links = 4)"},
		{[]string{"topology.kind=dragonfly-plus", "switch.radix=4", "topology.global_cable_medium=glass"},
			`topology.global_cable_medium: "glass" is not a medium (copper, fibre; empty = fibre)`},
		{[]string{"topology.kind=dragonfly-plus", "switch.radix=4", "topology.global_cable_length_m=-1"},
			"topology.global_cable_length_m: -1 is out of range (0 = 30 m, up to 100000 m)"},
		{[]string{"topology.kind=dragonfly-plus", "switch.radix=4", "topology.file=x.topo"},
			`topology.file: "x.topo" is set, but topology.kind dragonfly-plus does not use it (set topology.kind: file to use it)`},
		{[]string{"topology.kind=fat-tree-2", "switch.radix=4", "topology.global_links=2"},
			"topology.global_links: 2 is set, but topology.kind fat-tree-2 does not use it (set topology.kind: dragonfly-plus to use it)"},
		{[]string{"topology.kind=single-switch", "switch.radix=4", "topology.global_cable_length_m=30"},
			"topology.global_cable_length_m: 30 is set, but topology.kind single-switch does not use it (set topology.kind: dragonfly-plus to use it)"},
	}
	for _, tc := range cases {
		_, err := Load(nil, tc.sets)
		assert.EqualError(t, err, tc.want, "%v", tc.sets)
	}
}

// TestDragonflyPlusCables: from the config, host cables take link.length_m
// and link.medium, leaf–spine cables topology.cable_length_m, and global
// cables topology.global_cable_length_m, by default 30 m of fibre —
// cable_length_m, which sets every switch-to-switch cable of a fat tree,
// leaves them alone.
func TestDragonflyPlusCables(t *testing.T) {
	for _, tc := range []struct {
		sets          []string
		local, global float64
		globalMedium  Medium
	}{
		{nil, 2, 30, Fibre},
		{[]string{"topology.cable_length_m=5"}, 5, 30, Fibre},
		{[]string{"topology.cable_length_m=5", "topology.global_cable_length_m=100", "topology.global_cable_medium=copper"}, 5, 100, Copper},
	} {
		topo, _, _ := dflyFabric(t, append([]string{"switch.radix=4", "link.length_m=2", "link.medium=copper"}, tc.sets...)...)
		kinds := map[string]int{}
		for _, c := range topo.Cables {
			a, b := topo.Nodes[c.A.Node], topo.Nodes[c.B.Node]
			switch {
			case a.Kind == Host || b.Kind == Host:
				kinds["host"]++
				assert.Equal(t, 2.0, c.LengthM)
				assert.Equal(t, Copper, c.Medium)
			case a.Level == 2 && b.Level == 2:
				kinds["global"]++
				assert.Equal(t, tc.global, c.LengthM, "%v", tc.sets)
				assert.Equal(t, tc.globalMedium, c.Medium, "%v", tc.sets)
			default:
				kinds["local"]++
				assert.Equal(t, tc.local, c.LengthM, "%v", tc.sets)
				assert.Equal(t, Copper, c.Medium)
			}
		}
		// Radix 4: 20 hosts, 5 groups × 2 leaves × 2 up-ports, 5·4/2 pairs × 1.
		assert.Equal(t, map[string]int{"host": 20, "local": 20, "global": 10}, kinds)
	}
}

// dflyFabric builds a dragonfly-plus from config overrides and routes it.
func dflyFabric(t *testing.T, sets ...string) (*Topology, *Subnet, DragonflyPlusShape) {
	t.Helper()
	l, err := Load(nil, append([]string{"topology.kind=dragonfly-plus", "switch.vls=1", "workload.kind=uniform"}, sets...))
	require.NoError(t, err)
	cfg := &l.Config
	sh, err := cfg.Topology.dragonflyPlusSpec(cfg.Topology.radix(cfg.Switch.Radix)).Shape()
	require.NoError(t, err)
	topo, sub, err := ConfigureFabric(cfg, l.Config.Seed)
	require.NoError(t, err)
	return topo, sub, sh
}

// TestDragonflyPlusMinimalRoutes: minhop's route between every pair of
// hosts is minimal. Inside a group the fabric is a two-level fat tree: one
// switch on a leaf, leaf–spine–leaf (3 switches) across leaves. Between
// groups every leaf reaches every spine of its group and some spine has a
// cable to the destination group, so the shortest route is leaf–spine–
// (global)–spine–leaf: 4 switches, one global cable, which must join the
// two groups directly. The route climbs (leaf to spine), crosses at most
// one global cable and descends (spine to leaf), never back up: the order
// that makes minimal routing deadlock-free on one VL
// (TestDragonflyPlusDeadlockFree). Random routing and dmodk pick from the
// same minimal candidates, so they are held to the same.
func TestDragonflyPlusMinimalRoutes(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"radix 4 minhop", []string{"switch.radix=4"}},
		{"radix 8 five groups minhop", []string{"switch.radix=8", "topology.groups=5"}},
		{"radix 8 four groups random", []string{"switch.radix=8", "topology.groups=4", "topology.routing=random"}},
		// h = 1, 3 groups: 2 cables a pair on 2 of the 4 spines, so half a
		// leaf's spines have no cable to a given group and must not be taken.
		{"radix 8 three groups one global link", []string{"switch.radix=8", "topology.groups=3", "topology.global_links=1"}},
		// dmodk (route_dfly.go) picks among the same minimal candidates;
		// the shapes of TestDragonflyPlusDModKCableShare: one spine with
		// no cable to a group (radix 4), several (radix 16, 4 groups: 2
		// or 3 a spine), one global link a spine.
		{"radix 4 dmodk", []string{"switch.radix=4", "topology.routing=dmodk"}},
		{"radix 8 three groups one global link dmodk", []string{"switch.radix=8", "topology.groups=3", "topology.global_links=1", "topology.routing=dmodk"}},
		{"radix 16 four groups dmodk", []string{"switch.radix=16", "topology.groups=4", "topology.routing=dmodk"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, sub, sh := dflyFabric(t, tc.sets...)
			hosts := sub.Hosts()
			counts := map[int]int{}
			for _, a := range hosts {
				for _, b := range hosts {
					if a == b {
						continue
					}
					path, err := sub.Path(a, b)
					require.NoError(t, err)
					switches := len(path) - 1 // the egress ports after the host's own
					leafA, _ := topo.Peer(PortRef{a, 1})
					leafB, _ := topo.Peer(PortRef{b, 1})
					ga, gb := dflyGroupOf(sh, a), dflyGroupOf(sh, b)
					want := 4
					switch {
					case leafA.Node == leafB.Node:
						want = 1
					case ga == gb:
						want = 3
					}
					require.Equal(t, want, switches, "route %s to %s: %s", topo.Nodes[a].Name, topo.Nodes[b].Name, sub.pathString(path))
					counts[want]++
					// Levels along the route: up, at most one global hop, down.
					phase, globals := 0, 0 // 0 climbing, 1 after the global hop or the top, 2 descending
					for _, out := range path[1:] {
						x := out.Node
						next, _ := topo.Peer(out)
						lx, ln := topo.Nodes[x].Level, topo.Nodes[next.Node].Level
						switch {
						case ln == 2 && lx == 1: // up
							require.Equal(t, 0, phase, "route %s climbs after the top", sub.pathString(path))
						case ln == 2 && lx == 2: // global
							require.Less(t, phase, 2, "route %s crosses after descending", sub.pathString(path))
							globals++
							require.Equal(t, ga, dflyGroupOf(sh, x), "global hop leaves from the source group")
							require.Equal(t, gb, dflyGroupOf(sh, next.Node), "global hop lands in the destination group")
							phase = 1
						default: // down to a leaf or a host
							phase = 2
						}
					}
					assert.LessOrEqual(t, globals, 1)
				}
			}
			// Pairs by kind: each host has Down−1 leaf mates, (L−1)·Down
			// group mates on other leaves and the rest in other groups
			// (full fabrics here).
			n := sh.Hosts
			assert.Equal(t, n*(sh.Down-1), counts[1])
			assert.Equal(t, n*(sh.Leaves-1)*sh.Down, counts[3])
			assert.Equal(t, n*(n-sh.Leaves*sh.Down), counts[4])
		})
	}
}

// TestDragonflyPlusDeadlockFree: the channel dependency graph of minimal
// routing on one VL is acyclic, with and without adaptive routing. The
// paper's argument: a minimal route takes its channels in the order
// host→leaf, leaf→spine (up), at most one spine→spine (global),
// spine→leaf (down), leaf→host, and a channel only ever waits for one of a
// later class; within a class no route takes two channels (one up hop,
// one global hop, one down hop), so no cycle can close. AR's groups hold
// only minimal candidates (the same hop-count rule), so they keep the
// order. Updown routes (on a single root, NewSubnet's fallback) are
// acyclic by construction.
//
// The control shows the check can fail here: routes that take two global
// hops on one VL (the non-minimal, Valiant-style routes Dragonfly+ uses
// under adversarial traffic, which need a second VL) close a cycle of
// global channels around the groups.
func TestDragonflyPlusDeadlockFree(t *testing.T) {
	for _, sets := range [][]string{
		{"switch.radix=4"},
		{"switch.radix=4", "topology.adaptive_routing=true"},
		{"switch.radix=8", "topology.groups=5", "topology.adaptive_routing=true"},
		{"switch.radix=4", "topology.routing=updown"},
		{"switch.radix=4", "topology.routing=random"},
		{"switch.radix=4", "topology.routing=dmodk"},
		{"switch.radix=8", "topology.groups=5", "topology.routing=dmodk", "topology.adaptive_routing=true"},
		{"switch.radix=16", "topology.groups=4", "topology.routing=dmodk"},
	} {
		_, sub, _ := dflyFabric(t, sets...) // ConfigureFabric runs CheckDeadlock and fails on a cycle
		require.NoError(t, sub.CheckDeadlock(nil), "%v", sets)
		if sub.AdaptiveRouting() {
			// Some AR group must offer a choice, or the AR case checks
			// nothing more than the static one.
			groups := 0
			for _, n := range sub.Topo.Switches() {
				groups += len(sub.ar[n])
			}
			assert.Positive(t, groups, "%v: no AR groups", sets)
		}
	}

	// The AR groups are the minimal candidates. Radix 8, 5 groups: each
	// pair's 4 cables sit on 4 different spines (g−1 = 4 ≥ h = 4), so at
	// Fabric.Leaf[0] every one of its 4 up-ports leads to a spine cabled to
	// group 1, and the group for a host there (Fabric.Host[16], the first
	// of group 1) is those 4 ports (5..8: after 4 host ports). A spine has
	// one cable to that group: one candidate, so no AR group.
	topo, sub, _ := dflyFabric(t, "switch.radix=8", "topology.groups=5", "topology.adaptive_routing=true")
	leaf0, _ := topo.Lookup("Fabric.Leaf[0]")
	host16, _ := topo.Lookup("Fabric.Host[16]")
	assert.Equal(t, []uint16{5, 6, 7, 8}, sub.ARGroup(leaf0, sub.LID(host16)))
	for _, sp := range topo.Switches() {
		if topo.Nodes[sp].Level == 2 {
			assert.Empty(t, sub.ARGroup(sp, sub.LID(host16)), "%s", topo.Nodes[sp].Name)
		}
	}

	// Control: radix 4, 5 groups, one cable a pair, each spine cabled to
	// two groups. Have every leaf send a packet for another group to a
	// spine with no cable to that group: the spine's table entries for
	// such destinations (which minimal host routes never reach) go on
	// through another group's spine, or down to a leaf and back up to
	// the group's other spine. Those non-minimal routes take two global
	// hops or turn from down to up, and on one VL they close a cycle.
	topo, sub, sh := dflyFabric(t, "switch.radix=4")
	cabledTo := func(spine, group int) bool {
		for p := 1; p <= topo.Nodes[spine].Ports; p++ {
			if q, ok := topo.Peer(PortRef{spine, p}); ok && topo.Nodes[q.Node].Level == 2 && dflyGroupOf(sh, q.Node) == group {
				return true
			}
		}
		return false
	}
	changed := 0
	for _, h := range sub.Hosts() {
		dst, lid := dflyGroupOf(sh, h), sub.LID(h)
		for _, leaf := range topo.Switches() {
			if topo.Nodes[leaf].Level != 1 || dflyGroupOf(sh, leaf) == dst {
				continue
			}
			for p := 1; p <= topo.Nodes[leaf].Ports; p++ {
				if q, ok := topo.Peer(PortRef{leaf, p}); ok && topo.Nodes[q.Node].Level == 2 && !cabledTo(q.Node, dst) {
					sub.lft[leaf][lid] = uint16(p)
					changed++
					break
				}
			}
		}
	}
	require.Positive(t, changed)
	err := sub.CheckDeadlock(nil)
	require.Error(t, err, "two global hops on one VL must close a cycle")
	assert.Contains(t, err.Error(), "deadlock: minhop routing has a cycle of")
}

// traceHops returns, in time order, the node and time of the first
// tx_start of a packet to dlid at each node (switch ports are traced as
// NODE.Port[i]; hosts as NODE.Port[1]).
func traceHops(t *testing.T, trace string, dlid int) (nodes []string, times []ib.PS) {
	t.Helper()
	seen := map[string]bool{}
	for _, line := range strings.Split(trace, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "tx_start" || !strings.Contains(line, fmt.Sprintf(" dlid=%d ", dlid)) || !strings.Contains(line, " seq=1 ") {
			continue
		}
		node := f[1][:strings.LastIndex(f[1], ".Port[")]
		if seen[node] {
			continue
		}
		seen[node] = true
		var v int64
		_, err := fmt.Sscan(f[0], &v)
		require.NoError(t, err)
		nodes = append(nodes, node)
		times = append(times, ib.PS(v))
	}
	return nodes, times
}

// TestDragonflyPlusZeroLoadLatency: one RDMA write (write_lat, its first
// packet) from the first host (group 0) to the last (group 4) on an idle
// radix-4 dragonfly-plus, hop by hop. The packet is LRH 8 + BTH 12 + RETH
// 16 + 64 payload + ICRC 4 + VCRC 2 = 106 bytes: ser = 106 × 8 / 400 Gb/s
// = 2.12 ns at NDR 4x. Each cable adds L = FEC + propagation: RS(544,514)
// at NDR 4x accumulates 5440 bits at 4 × 106.25 Gb/s = 12.8 ns; copper
// 4.276 ns/m and fibre 4.897 ns/m (link.CopperPsPerM, FibrePsPerM), so
//
//	host cable   2 m copper:  L_h = 12800 + 8552   = 21352 ps
//	leaf–spine   5 m copper:  L_l = 12800 + 21380  = 34180 ps
//	global      40 m fibre:   L_g = 12800 + 195880 = 208680 ps
//
// A switch of clock c = 1 ns takes the head at the next edge and, cut
// through, starts it on the output wire R + A + max(X, xfer + X − ser)
// later (TestSharpZeroLoadLatencyHopByHop; R = A = X = 40 cycles, xfer =
// ⌈106/64⌉ = 2 cycles): out = 40 + 40 + max(40, 2 + 40 − 2.12) = 120 ns.
// So from the host's first bit t0, with ⌈⌉ to the 1 ns edge:
//
//	source leaf   t1 = ⌈t0 + L_h⌉ + out
//	source spine  t2 = ⌈t1 + L_l⌉ + out
//	dest spine    t3 = ⌈t2 + L_g⌉ + out
//	dest leaf     t4 = ⌈t3 + L_l⌉ + out
//	dest host head at t4 + L_h
//
// and the route is leaf, spine of group 0, spine of group 4, leaf of group
// 4: one global cable.
func TestDragonflyPlusZeroLoadLatency(t *testing.T) {
	r := runRecorded(t, []string{"topology.kind=dragonfly-plus", "switch.radix=4", "switch.vls=1",
		"link.length_m=2", "topology.cable_length_m=5", "topology.global_cable_length_m=40",
		"workload.kind=perftest", "workload.test=write_lat", "workload.size=64", "workload.iterations=2"},
		func(s *Simulation) verif.CheckConfig { return verif.CheckConfig{Routes: s.Net} }, nil)
	require.NoError(t, r.Err)
	// Hosts take LIDs after the 20 switches: the last host, Host[19], is LID 20.
	nodes, times := traceHops(t, r.Trace, 20)
	require.Len(t, nodes, 5, "%v", nodes)
	assert.Equal(t, "Fabric.Host[0]", nodes[0])
	assert.Equal(t, "Fabric.Leaf[0]", nodes[1])
	// Radix 4: 2 spines a group, Spine[0..1] in group 0 and Spine[8..9] in group 4.
	assert.Contains(t, []string{"Fabric.Spine[0]", "Fabric.Spine[1]"}, nodes[2])
	assert.Contains(t, []string{"Fabric.Spine[8]", "Fabric.Spine[9]"}, nodes[3])
	assert.Equal(t, "Fabric.Leaf[9]", nodes[4]) // group 4's second leaf holds hosts 18, 19
	const c = ib.PS(1000)
	ceil := func(x ib.PS) ib.PS { return (x + c - 1) / c * c }
	const lh, ll, lg, out = ib.PS(21352), ib.PS(34180), ib.PS(208680), ib.PS(120000)
	t0 := times[0]
	t1 := ceil(t0+lh) + out
	t2 := ceil(t1+ll) + out
	t3 := ceil(t2+lg) + out
	t4 := ceil(t3+ll) + out
	assert.Equal(t, []ib.PS{t0, t1, t2, t3, t4}, times)
	assert.Equal(t, t4+lh, traceAt(t, r.Trace, "Fabric.Host[19].Port[1]", "rx_head", "dlid=20"))
	t.Logf("t0 %d, leaf %d, spine %d, global %d, leaf %d: %d ps across the fabric", t0, t1, t2, t3, t4, t4+lh-t0)
}

// TestDragonflyPlusUniformChecked: uniform traffic at 70 % on a radix-4
// dragonfly-plus under the invariant checkers (lossless, credits,
// ordering, routes: every hop on the LFT's port or, with AR, a port of its
// AR group), static and adaptive: no violation, nothing dropped,
// every packet delivered, and the mean hop count is the minimal routes'
// (TestDragonflyPlusMinimalRoutes): from each of 20 hosts, 1 leaf mate at
// 2 links, 2 group mates at 4 and 16 others at 5: (2 + 8 + 80)/19 links.
func TestDragonflyPlusUniformChecked(t *testing.T) {
	for _, ar := range []string{"false", "true"} {
		r := runRecorded(t, []string{"topology.kind=dragonfly-plus", "switch.radix=4", "switch.vls=1",
			"topology.adaptive_routing=" + ar, "workload.kind=uniform", "workload.size=2048",
			"workload.offered_load=0.7", "workload.warmup_ns=2000", "workload.measure_ns=10000"},
			func(s *Simulation) verif.CheckConfig {
				// AR reorders a flow's packets; the ordering check then
				// holds only the SLs AR leaves alone (as --check does).
				return verif.CheckConfig{Routes: s.Net, ReorderSLs: s.Net.Subnet.ARSLs()}
			}, nil)
		require.NoError(t, r.Err, "adaptive_routing %s", ar)
		assert.True(t, r.Settled, "adaptive_routing %s", ar)
		assert.EqualValues(t, 0, r.M["packets_dropped"])
		assert.Equal(t, r.M["packets_created"], r.M["packets_delivered"])
		assert.InDelta(t, 90.0/19, r.M["hops_mean"].(float64), 0.15, "adaptive_routing %s", ar)
	}
}

// TestDragonflyPlusGlobalBisection: uniform traffic at 100 % offered on
// 3 groups of radix-8 leaves (16 hosts a group, N = 48), balanced (h = 4
// global links a spine: 16 global ports, 8 cables a pair) against starved
// (h = 1: 4 global ports, 2 cables a pair). A host sends the fraction
// f = (N − 16)/(N − 1) = 32/47 of its packets out of its group, so a
// group's outbound load at per-host rate λ is 16 λ f, and it has C =
// 2 × 2 = 4 global cables out (two a peer group), each carrying at most one
// link's rate: λ ≤ C / (16 f) = 4 × 47 / (16 × 32) = 0.367. Balanced, C =
// 16: the bound is 1.47, above the offered load, and the global cables do
// not limit. Minimal routing spreads each pair's traffic over its cables
// (each leaf reaches both spines with a cable to the peer group), so the
// starved fabric reaches the bound (within 3 %: edges of the measurement
// window), and the balanced one carries at least 1.5 times as much.
func TestDragonflyPlusGlobalBisection(t *testing.T) {
	run := func(h int) float64 {
		return dragonflyAccepted(t, 48, "topology.groups=3", fmt.Sprintf("topology.global_links=%d", h), "workload.kind=uniform")
	}
	const groupHosts, n = 16.0, 48.0
	f := (n - groupHosts) / (n - 1)
	bound := func(cablesOut float64) float64 { return cablesOut / (groupHosts * f) }
	starved, balanced := run(1), run(4)
	t.Logf("accepted at 100%% offered: h=1 %.4f (bound %.4f), h=4 %.4f (bound %.4f)", starved, bound(4), balanced, bound(16))
	assert.InEpsilon(t, bound(4), starved, 0.03)
	assert.Greater(t, balanced, 1.5*starved)
}

// TestDragonflyPlusFileRoundTrip: the builder's fabric written as a
// topology file (FormatTopology) and read back has the same nodes (with
// their tiers, as tier=), the same cables with their
// lengths and media, and the same minhop routes and AR groups: a
// dragonfly-plus exported this way is a starting point for a hand-edited
// one (another arrangement, unequal groups) under topology.kind: file.
func TestDragonflyPlusFileRoundTrip(t *testing.T) {
	built, err := DragonflyPlus(DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Groups: 4},
		testCable, CableSpec{LengthM: 5, Medium: Copper}, CableSpec{LengthM: 30, Medium: Fibre})
	require.NoError(t, err)
	var buf strings.Builder
	require.NoError(t, FormatTopology(&buf, built))
	read, err := ParseTopology(strings.NewReader(buf.String()), "roundtrip", testCable)
	require.NoError(t, err)
	require.Len(t, read.Nodes, len(built.Nodes))
	for i := range built.Nodes {
		assert.Equal(t, built.Nodes[i], read.Nodes[i])
	}
	assert.Equal(t, built.Cables, read.Cables)
	o := SubnetOptions{Routing: RoutingMinHop, VLs: 1, AdaptiveRouting: true}
	a, err := NewSubnet(built, o)
	require.NoError(t, err)
	b, err := NewSubnet(read, o)
	require.NoError(t, err)
	for _, s := range built.Switches() {
		assert.Equal(t, a.LFT(s), b.LFT(s), built.Nodes[s].Name)
		for lid := uint16(1); lid <= a.MaxLID(); lid++ {
			assert.Equal(t, a.ARGroup(s, lid), b.ARGroup(s, lid))
		}
	}
}

// TestDragonflyPlusAdversarialShift: minimal routing's known limit, the
// reason Dragonfly+ deployments add non-minimal routing
// (topology.nonminimal: TestDragonflyPlusNonMinimalShift).
// Radix 8, 5 groups: 16 hosts a group, and the group's 16 global ports
// shared 4 ways, so 4 cables join each pair of groups. With shift 16,
// host i sends to host i+16, the same place in the next group: all of a
// group's traffic leaves over the 4 cables to that one group, since a
// minimal route takes the direct cable. At 100 % offered each of the 16
// hosts can get at most 4 cables' rate / 16 hosts = 0.25 of its link, with
// adaptive routing too (its candidates are the same 4 cables). Uniform
// traffic on the same fabric is not bound by the global cables (a group
// sends 64/79 of its traffic out over 16 cables: 16 / (16 · 64/79) > 1)
// and accepts far more.
func TestDragonflyPlusAdversarialShift(t *testing.T) {
	run := func(sets ...string) float64 {
		return dragonflyAccepted(t, 80, append([]string{"topology.groups=5", "topology.global_cable_length_m=10"}, sets...)...)
	}
	const bound = 4.0 / 16
	for _, ar := range []string{"false", "true"} {
		got := run("workload.kind=shift", "workload.shift=16", "topology.adaptive_routing="+ar)
		t.Logf("shift 16, adaptive_routing %s: accepted %.5f (bound %.4f)", ar, got, bound)
		assert.LessOrEqual(t, got, bound+1e-3, "AR %s", ar)
		assert.InEpsilon(t, bound, got, 0.01, "AR %s", ar)
	}
	uniform := run("workload.kind=uniform")
	t.Logf("uniform: accepted %.4f", uniform)
	assert.Greater(t, uniform, 3*bound)
}

// dragonflyAccepted runs a radix-8 dragonfly-plus of hosts hosts at 100 %
// offered load, 4 KiB packets, with the further keys of sets, and returns
// the accepted load; nothing may be dropped. 16 packets of buffer per VL:
// the credit loop never limits a flow, so what bounds the result is the
// cables.
func dragonflyAccepted(t *testing.T, hosts int, sets ...string) float64 {
	t.Helper()
	l, err := Load(nil, append([]string{"topology.kind=dragonfly-plus", "switch.radix=8", "switch.vls=1",
		"switch.vl_buffer_bytes=66560", "workload.size=4096", "workload.offered_load=1.0",
		"workload.warmup_ns=5000", "workload.measure_ns=20000"}, sets...))
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 0, m["packets_dropped"])
	require.Equal(t, hosts, m["hosts"])
	return m["accepted_load"].(float64)
}

// TestDragonflyPlusMinhopAliasing: on two groups of radix-16 switches (8
// leaves of 8 hosts and 8 spines a group, each spine's 8 global cables to
// the other group) minhop sends all of a spine's traffic to the other
// group over one of its 8 global cables. Both choices balance in LID
// order, by the count of destinations already routed through each
// candidate (OpenSM's stage 2; fabric.md): a leaf gives the j-th
// destination outside its group spine j mod 8 (its 56 group mates on other
// leaves, 7 to a spine, come first), and a spine gives the j-th
// destination in the other group global cable j mod 8 — so the
// destinations that reach spine s are those with j ≡ s (mod 8), and all of
// them leave on the spine's cable s. Random routing, drawing from the same
// candidates, spreads them. An architect sees it as minhop accepting less
// than random on this fabric (docs/fabric.md, "Routing").
func TestDragonflyPlusMinhopAliasing(t *testing.T) {
	for _, tc := range []struct {
		routing string
		minhop  bool
	}{{"minhop", true}, {"random", false}} {
		t.Run(tc.routing, func(t *testing.T) {
			topo, sub, sh := dflyFabric(t, "switch.radix=16", "topology.hosts=128", "topology.routing="+tc.routing)
			require.Equal(t, 2, sh.Groups)
			require.Equal(t, 8, sh.Spines)
			used := map[int]map[int]bool{} // spine → its global ports that carry a route
			hosts := sub.Hosts()
			for _, a := range hosts {
				for _, b := range hosts {
					if dflyGroupOf(sh, a) == dflyGroupOf(sh, b) {
						continue
					}
					path, err := sub.Path(a, b)
					require.NoError(t, err)
					globals := 0
					for _, out := range path[1:] {
						next, _ := topo.Peer(out)
						if topo.Nodes[out.Node].Level == 2 && topo.Nodes[next.Node].Level == 2 {
							if used[out.Node] == nil {
								used[out.Node] = map[int]bool{}
							}
							used[out.Node][out.Port] = true
							globals++
						}
					}
					require.Equal(t, 1, globals, "route %s", sub.pathString(path))
				}
			}
			require.Len(t, used, 2*sh.Spines, "every spine carries routes to the other group")
			for x, ports := range used {
				if !tc.minhop {
					assert.Greater(t, len(ports), 1, "%s", topo.Nodes[x].Name)
					continue
				}
				// Spine s of its group (spines follow the leaves in node
				// order) uses its global cable s: ports 1..8 go down to the
				// leaves, 9..16 are the global ones.
				s := (x - sh.Groups*sh.Leaves) % sh.Spines
				assert.Equal(t, map[int]bool{sh.Leaves*sh.Parallel + 1 + s: true}, ports, "%s", topo.Nodes[x].Name)
			}
		})
	}
}
