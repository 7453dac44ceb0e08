package fabric

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dflyCableShare routes every host pair in different groups and counts, per
// source leaf, the destinations each global cable (a spine's egress port)
// carries: share[leaf][cable]. cables[gs][gd] lists the global cables from
// group gs to group gd, read from the topology.
func dflyCableShare(t *testing.T, topo *Topology, sub *Subnet, sh DragonflyPlusShape) (share map[int]map[PortRef]int, cables map[[2]int][]PortRef) {
	t.Helper()
	cables = map[[2]int][]PortRef{}
	for _, x := range topo.Switches() {
		if topo.Nodes[x].Level != 2 {
			continue
		}
		for p := 1; p <= topo.Nodes[x].Ports; p++ {
			if q, ok := topo.Peer(PortRef{x, p}); ok && topo.Nodes[q.Node].Level == 2 {
				key := [2]int{dflyGroupOf(sh, x), dflyGroupOf(sh, q.Node)}
				cables[key] = append(cables[key], PortRef{x, p})
			}
		}
	}
	share = map[int]map[PortRef]int{}
	firstOn := map[int]int{} // leaf → its first host: a leaf's routes do not depend on which of its hosts sends
	hosts := sub.Hosts()
	for _, a := range hosts {
		leaf, _ := topo.Peer(PortRef{a, 1})
		if _, ok := firstOn[leaf.Node]; !ok {
			firstOn[leaf.Node] = a
			share[leaf.Node] = map[PortRef]int{}
		}
	}
	for leaf, a := range firstOn {
		for _, b := range hosts {
			if dflyGroupOf(sh, a) == dflyGroupOf(sh, b) {
				continue
			}
			path, err := sub.Path(a, b)
			require.NoError(t, err)
			globals := 0
			for _, out := range path[1:] {
				if next, _ := topo.Peer(out); topo.Nodes[out.Node].Level == 2 && topo.Nodes[next.Node].Level == 2 {
					share[leaf][out]++
					globals++
				}
			}
			require.Equal(t, 1, globals, "route %s", sub.pathString(path))
		}
	}
	return share, cables
}

// TestDragonflyPlusDModKCableShare: under dmodk every global cable from a
// source group to a destination group carries, from every source leaf of
// that group, ⌊N/c⌋ or ⌈N/c⌉ of the N hosts of the destination group, c
// being the cables between the two groups. The derivation: every switch of
// the source group sends the destination of index i (among its group's
// hosts) over cable i mod c of the pair's c cables, and N consecutive
// indices fall ⌊N/c⌋ or ⌈N/c⌉ times on each residue mod c. Radix 16 (64
// hosts a group, 8 spines of 8 global ports, 64 global ports a group):
//
//	128 hosts, 2 groups: c = 64/1 = 64, N/c = 1 exactly
//	192 hosts, 3 groups: c = 64/2 = 32, N/c = 2 exactly
//	256 hosts, 4 groups: c = ⌊64/3⌋ = 21 (one port a group uncabled),
//	                     64 = 3·21 + 1: 3 or 4, one cable of 21 with 4
//
// and on 256 hosts a spine has 2 or 3 cables to a group (its global ports
// k = 8s … 8s+7 serve offset k mod 3 + 1), the shape where a per-spine
// digit alone could not balance the cables. Per spine the count is the sum
// over its k cables to the group, between k⌊N/c⌋ and k⌈N/c⌉: 8 from each
// leaf on 128 hosts (8 cables of 1) and on 192 (4 of 2), in proportion to
// the spine's cables on 256. minhop's counts on the same fabrics are not within ±1
// (TestDragonflyPlusMinhopAliasing: on 128 hosts one cable in 8 of each
// spine carries 8 destinations from each leaf). Further shapes: radix 4
// (each spine cabled to 2 of the 4 other groups, so half the spines have
// no cable to a given group), radix 8 with 3 groups and one global link
// (2 cables a pair on 2 of the 4 spines), and a partly filled radix-16
// fabric (100 hosts: the second group has 36, so 0 or 1 a cable).
func TestDragonflyPlusDModKCableShare(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sets       []string
		minhopOff  bool // minhop's counts are out of ±1 here (asserted)
		wantGroups int
	}{
		{"radix 16, 128 hosts", []string{"switch.radix=16", "topology.hosts=128"}, true, 2},
		{"radix 16, 192 hosts", []string{"switch.radix=16", "topology.hosts=192"}, true, 3},
		{"radix 16, 256 hosts", []string{"switch.radix=16", "topology.hosts=256"}, true, 4},
		{"radix 16, 100 hosts", []string{"switch.radix=16", "topology.hosts=100"}, false, 2},
		{"radix 4", []string{"switch.radix=4"}, false, 5},
		{"radix 8, 3 groups, h 1", []string{"switch.radix=8", "topology.groups=3", "topology.global_links=1"}, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, sub, sh := dflyFabric(t, append([]string{"topology.routing=dmodk"}, tc.sets...)...)
			require.Equal(t, tc.wantGroups, sh.Groups)
			groupHosts := make([]int, sh.Groups)
			for _, h := range sub.Hosts() {
				groupHosts[dflyGroupOf(sh, h)]++
			}
			share, cables := dflyCableShare(t, topo, sub, sh)
			checked := 0
			for leaf, got := range share {
				gs := dflyGroupOf(sh, leaf)
				for gd := range sh.Groups {
					if gd == gs {
						continue
					}
					pair := cables[[2]int{gs, gd}]
					require.Len(t, pair, sh.PairCables, "cables from group %d to %d", gs, gd)
					n, c := groupHosts[gd], len(pair)
					perSpine, cablesOf := map[int]int{}, map[int]int{}
					for _, cable := range pair {
						assert.GreaterOrEqual(t, got[cable], n/c, "%s: %s to group %d", topo.Nodes[leaf].Name, topo.PortName(cable), gd)
						assert.LessOrEqual(t, got[cable], (n+c-1)/c, "%s: %s to group %d", topo.Nodes[leaf].Name, topo.PortName(cable), gd)
						perSpine[cable.Node] += got[cable]
						cablesOf[cable.Node]++
						checked++
					}
					// A spine with k cables to the group carries k shares.
					for x, k := range cablesOf {
						assert.GreaterOrEqual(t, perSpine[x], k*(n/c), "%s: %s to group %d", topo.Nodes[leaf].Name, topo.Nodes[x].Name, gd)
						assert.LessOrEqual(t, perSpine[x], k*((n+c-1)/c), "%s: %s to group %d", topo.Nodes[leaf].Name, topo.Nodes[x].Name, gd)
					}
				}
			}
			// Every leaf with hosts, every cable out of its group.
			assert.Equal(t, len(share)*sh.PairCables*(sh.Groups-1), checked)
			if !tc.minhopOff {
				return
			}
			topo, sub, sh = dflyFabric(t, append([]string{"topology.routing=minhop"}, tc.sets...)...)
			share, cables = dflyCableShare(t, topo, sub, sh)
			spread := 0 // the largest max − min over one leaf's cables to one group
			for leaf, got := range share {
				gs := dflyGroupOf(sh, leaf)
				for gd := range sh.Groups {
					if gd == gs {
						continue
					}
					lo, hi := groupHosts[gd], 0
					for _, cable := range cables[[2]int{gs, gd}] {
						lo, hi = min(lo, got[cable]), max(hi, got[cable])
					}
					spread = max(spread, hi-lo)
				}
			}
			t.Logf("minhop: largest spread of one leaf's destinations over its group's cables to another: %d", spread)
			assert.Greater(t, spread, 1, "minhop aliases here")
		})
	}
}

// TestDragonflyPlusDModKShift: counted from the routes (MaxChannelLoad,
// no simulation), the shift permutations i → i + k mod N on radix-16
// Dragonfly+ fabrics (64 hosts a group: 8 leaves of 8, 8 spines).
//
// 128 hosts, 2 groups, c = 64 cables a pair: dmodk gives destination j (its
// index in its group) cable j of the 64, which is spine j mod 8's cable
// j/8, and the pair's cables join group port k to port k, so the cable
// lands on spine j mod 8 of j's group, which descends to j's leaf j/8.
// Destinations within the group climb to spine j mod 8 too. So the
// channels into j's leaf from spine s carry only j = 8·leaf + s, a global
// cable only its j, and a leaf's up-link to spine s only destinations
// j ≡ s mod 8. A shift sends a leaf's 8 hosts to 8 consecutive hosts,
// whose indices in their groups are consecutive mod 64, so distinct mod 8:
// one flow per up-link. Every shift is link-disjoint: worst 1. minhop's
// group-to-group shift (k = 64) puts a spine's 8 destinations on one cable
// (TestDragonflyPlusMinhopAliasing): worst 8.
//
// 192 hosts, 3 groups, c = 32: cable j mod 32, spine j mod 8 again (the
// pair's cables join port k to a port of the same spine), so the same
// argument holds but for the cables, which carry 2 destinations each:
// every shift worst at most 2, and the group shift (k = 64: all 64 hosts
// of a group to the next) exactly 2.
//
// 256 hosts, 4 groups, c = 21: cable j mod 21 carries 3 or 4 destinations
// (j = 0, 21, 42, 63 share cable 0), so the group shift k = 64, which sends
// all four from one group, has worst 4 = ⌈64/21⌉, the fewest any routing
// of 64 flows over 21 cables can have. (Other shifts are not derived here:
// a leaf's 8 consecutive destinations can fall on one spine twice, as
// cable 20 and cable 0 may be on the same spine.)
func TestDragonflyPlusDModKShift(t *testing.T) {
	shifts := func(sub *Subnet, n int) (group, worst int) {
		flows := make([][2]int, n)
		for k := 1; k < n; k++ {
			for i := range flows {
				flows[i] = [2]int{i, (i + k) % n}
			}
			w, err := sub.MaxChannelLoad(flows)
			require.NoError(t, err)
			worst = max(worst, w)
			if k == 64 {
				group = w
			}
		}
		return group, worst
	}
	for _, tc := range []struct {
		hosts, group, worst int
	}{{128, 1, 1}, {192, 2, 2}, {256, 4, 0}} { // worst 0: not derived, not checked
		_, sub, sh := dflyFabric(t, "switch.radix=16", fmt.Sprintf("topology.hosts=%d", tc.hosts), "topology.routing=dmodk")
		group, worst := shifts(sub, sh.Hosts)
		assert.Equal(t, tc.group, group, "%d hosts: group shift", tc.hosts)
		if tc.worst > 0 {
			assert.Equal(t, tc.worst, worst, "%d hosts: every shift", tc.hosts)
		}
	}
	_, sub, sh := dflyFabric(t, "switch.radix=16", "topology.hosts=128", "topology.routing=minhop")
	group, _ := shifts(sub, sh.Hosts)
	assert.Equal(t, 8, group, "minhop, 128 hosts: group shift")
}

// TestDragonflyPlusDModKUniform: uniform traffic at 0.3 offered on two
// groups of radix 16 (128 hosts, NDR, 1 KiB) is carried under dmodk. Per
// global cable: a host sends λ = 0.3 of its link spread over 127
// destinations, 64 of them in the other group; dmodk gives each of the 64
// cables one destination, so a cable carries the 64 source hosts' flows to
// it, 64 · 0.3/127 = 0.151 of its rate. Per leaf up-link: 8 hosts send
// 0.3 · 120/127 each outside their leaf, over 8 spines: 0.283; the down
// links are the mirror image. Every channel is below 1, so the fabric
// carries what is offered (the test allows 4 % for the edges of the
// measurement window). Under minhop one cable of each spine carries its 8
// destinations, 8 · 0.151 = 1.21 > 1: saturated (0.113 accepted,
// docs/fabric.md).
func TestDragonflyPlusDModKUniform(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=dragonfly-plus", "switch.radix=16", "topology.hosts=128",
		"topology.routing=dmodk", "switch.vls=1", "link.generation=NDR", "link.length_m=2",
		"workload.kind=uniform", "workload.size=1024", "workload.offered_load=0.3",
		"workload.warmup_ns=2000", "workload.measure_ns=3000"})
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	got := m["accepted_load"].(float64)
	t.Logf("dmodk, uniform 0.3 on 128 hosts: accepted %.4f", got)
	assert.EqualValues(t, 0, m["packets_dropped"])
	assert.InEpsilon(t, 0.3, got, 0.04)
}

// TestDragonflyPlusDModKFile: a Dragonfly+ read from a topology file
// without tiers (written by hand; FormatTopology's tier= taken out);
// dmodk takes a switch with hosts for a leaf and one
// without for a spine, and routes it as it routes the builder's fabric:
// the same forwarding tables, switch by switch, on the shapes of
// TestDragonflyPlusDModKCableShare and one with two parallel cables. A file
// it recognises but cannot balance is refused on one line naming the
// cables: a leaf with one cable to a spine and two to the other, and two
// groups without a cable between them.
func TestDragonflyPlusDModKFile(t *testing.T) {
	fileOf := func(spec DragonflyPlusSpec) (built, read *Topology, text string) {
		built, err := DragonflyPlus(spec, testCable, testCable, testCable)
		require.NoError(t, err)
		var buf strings.Builder
		require.NoError(t, FormatTopology(&buf, built))
		text = regexp.MustCompile(` tier=\d`).ReplaceAllString(buf.String(), "")
		read, err = ParseTopology(strings.NewReader(text), "dfly", testCable)
		require.NoError(t, err)
		return built, read, text
	}
	o := SubnetOptions{Routing: RoutingDModK, VLs: 1}
	for _, spec := range []DragonflyPlusSpec{
		{Radix: 4, Oversubscription: 1},
		{Radix: 16, Oversubscription: 1, Hosts: 256},
		{Radix: 8, Oversubscription: 1, Groups: 3, GlobalLinks: 1},
		{Radix: 8, Oversubscription: 1, Groups: 3, Spines: 2},
	} {
		built, read, _ := fileOf(spec)
		a, err := NewSubnet(built, o)
		require.NoError(t, err)
		b, err := NewSubnet(read, o)
		require.NoError(t, err, "%+v", spec)
		for _, x := range built.Switches() {
			require.Equal(t, a.LFT(x), b.LFT(x), "%+v: %s", spec, built.Nodes[x].Name)
		}
	}

	_, _, text := fileOf(DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Groups: 3, Spines: 2})
	const cut = "cable Fabric.Leaf[0].Port[7] Fabric.Spine[0].Port[2] 2m copper\n"
	require.Contains(t, text, cut)
	read, err := ParseTopology(strings.NewReader(strings.Replace(text, cut, "", 1)), "dfly", testCable)
	require.NoError(t, err)
	_, err = NewSubnet(read, o)
	assert.EqualError(t, err, "topology.routing: dmodk needs every leaf of a Dragonfly+ cabled to every spine of its group by the same number of cables, but Fabric.Leaf[0] has 2 to Fabric.Spine[1], not 1 (minhop, updown, random)")

	// Radix 4, 5 groups, one cable a pair: without the cable between
	// groups 0 and 1 (Spine[0] port 3 to Spine[3]) there is no minimal
	// route between them to balance.
	_, _, text = fileOf(DragonflyPlusSpec{Radix: 4, Oversubscription: 1})
	var kept []string
	for _, line := range strings.SplitAfter(text, "\n") {
		if !strings.HasPrefix(line, "cable Fabric.Spine[0].Port[3] Fabric.Spine[3].Port[4] ") {
			kept = append(kept, line)
		}
	}
	require.Len(t, kept, len(strings.SplitAfter(text, "\n"))-1)
	read, err = ParseTopology(strings.NewReader(strings.Join(kept, "")), "dfly", testCable)
	require.NoError(t, err)
	_, err = NewSubnet(read, o)
	assert.EqualError(t, err, "topology.routing: dmodk needs a global cable between every pair of Dragonfly+ groups, but the group of Fabric.Leaf[0] has none to the group of Fabric.Leaf[2] (minhop, updown, random)")
}

// TestDragonflyPlusDModKParallel: with two cables between each leaf and
// each spine (radix 8, 2 spines a group: down 4, up 4, P = 2, 2 leaves a
// group, h = 4, 9 groups, one cable a pair), dmodk spreads destinations
// over the parallel cables, read from the forwarding tables:
//
//   - Up: a leaf has 68 destinations off itself, 4 on its group's other
//     leaf and 8 in each of 8 other groups. The other leaf's hosts
//     (indices i = 4 … 7) climb to spine i mod 2 over parallel cable
//     (i / 2) mod 2: one each of the 4 up-ports. A group's 8 hosts all
//     take the pair's one cable (c = 1), on spine k/4 for the group's
//     global port k serving it, over parallel cable i mod 2: 4 each of
//     that spine's two up-ports; the 8 groups' ports are 4 on each spine.
//     So every up-port carries 1 + 4·4 = 17 = 68/4.
//   - Down: a spine descends to a leaf of its group (destinations of its
//     group; its other entries are global) over parallel cable
//     (i / 2) mod 2, the cable that leaf climbs on for i, so each of the
//     2 cables to a leaf carries 2 of its 4 hosts.
func TestDragonflyPlusDModKParallel(t *testing.T) {
	topo, sub, sh := dflyFabric(t, "switch.radix=8", "topology.spines=2", "topology.routing=dmodk")
	require.Equal(t, DragonflyPlusShape{Down: 4, Up: 4, Leaves: 2, Spines: 2, Parallel: 2, GlobalLinks: 4, Groups: 9, PairCables: 1, Hosts: 72}, sh)
	checked := 0
	for _, x := range topo.Switches() {
		count := map[int]int{}
		for _, h := range sub.Hosts() {
			if topo.Nodes[x].Level == 2 && dflyGroupOf(sh, h) != dflyGroupOf(sh, x) {
				// A spine's entries for other groups are global cables,
				// or, for a group it has no cable to, whatever the
				// minimal candidates are (no host route reaches them).
				continue
			}
			p := int(sub.Egress(x, sub.LID(h)))
			if q, _ := topo.Peer(PortRef{x, p}); topo.Nodes[q.Node].Kind == Switch && topo.Nodes[q.Node].Level != topo.Nodes[x].Level {
				count[p]++ // up from a leaf, down from a spine
			}
		}
		want, ports := 17, sh.Up
		if topo.Nodes[x].Level == 2 {
			want, ports = 2, sh.Leaves*sh.Parallel
		}
		require.Len(t, count, ports, "%s", topo.Nodes[x].Name)
		for p, n := range count {
			assert.Equal(t, want, n, "%s port %d", topo.Nodes[x].Name, p)
			checked++
		}
	}
	assert.Equal(t, sh.Groups*(sh.Leaves*sh.Up+sh.Spines*sh.Leaves*sh.Parallel), checked)
}

// TestDragonflyPlusDModKFileEmptyLeaves: a Dragonfly+ whose hosts do not
// fill every leaf (radix 8, 5 groups of 4 leaves of 4 host ports, 60
// hosts: leaves 0-14 full, leaf 15 of group 3 and group 4's leaves 16-19
// without hosts). Written by hcasim topology (FormatTopology, with tier=)
// and read back, dmodk routes it to the builder's tables, switch by
// switch. Without the tiers a leaf without hosts looks like a spine, so
// the file is not taken for a Dragonfly+; the refusal says what it needs.
func TestDragonflyPlusDModKFileEmptyLeaves(t *testing.T) {
	built, err := DragonflyPlus(DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Groups: 5, Hosts: 60}, testCable, testCable, testCable)
	require.NoError(t, err)
	var buf strings.Builder
	require.NoError(t, FormatTopology(&buf, built))
	o := SubnetOptions{Routing: RoutingDModK, VLs: 1}
	a, err := NewSubnet(built, o)
	require.NoError(t, err)
	read, err := ParseTopology(strings.NewReader(buf.String()), "dfly", testCable)
	require.NoError(t, err)
	b, err := NewSubnet(read, o)
	require.NoError(t, err)
	for _, x := range built.Switches() {
		require.Equal(t, a.LFT(x), b.LFT(x), built.Nodes[x].Name)
	}
	bare := regexp.MustCompile(` tier=\d`).ReplaceAllString(buf.String(), "")
	read, err = ParseTopology(strings.NewReader(bare), "dfly", testCable)
	require.NoError(t, err)
	_, err = NewSubnet(read, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "; a Dragonfly+ in a topology file whose leaves do not all have hosts needs its switches' tiers (tier=1 leaves, tier=2 spines; hcasim topology writes them)")
}
