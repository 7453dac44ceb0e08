package fabric

import "fmt"

// D-mod-K on a Dragonfly+ (topology.routing: dmodk on topology.kind
// dragonfly-plus, or on a topology file of that shape; docs/fabric.md,
// "D-mod-K on a Dragonfly+").
//
// Zahavi's D-mod-K picks, at each switch a route climbs, the candidate
// given by a digit of the destination's index, the digits of successive
// levels independent, so the choices never line up. A Dragonfly+ route to
// another group makes two choices: the source leaf picks a spine, the spine
// picks one of its global cables to the destination's group. Number the
// c global cables from the source group to the destination group in round
// order (round r, the group's spines in node order, each spine's r-th cable
// to that group in port order) and let i be the destination's index among
// its group's hosts. Every switch of the source group sends i over cable
// e = i mod c: the leaf climbs to cable e's spine, and that spine takes
// cable e. When every spine has k cables to the group (a of them), e's
// spine is i mod a and its cable (i / a) mod k: two independent digits, as
// D-mod-K's levels are. When the spines have unequal counts (the last round
// is short) the rule is the same, and every cable still carries ⌊N/c⌋ or
// ⌈N/c⌉ of a group's N destinations from every source leaf, because the N
// indices are consecutive. Within a group the fabric is a fat-tree-2 and the
// rule is D-mod-K's: climb to spine i mod S over parallel cable (i / S) mod
// P, and descend from a spine to the destination's leaf over parallel cable
// (i / S) mod P, the cable the destination's leaf would climb on.
//
// Every choice is made among minimal candidates (route.go's min-hop
// candidates), so routes stay leaf–spine–global–spine–leaf and
// deadlock-free on one VL, and adaptive routing groups are the candidates,
// as under minhop.

// dflyDModK is the precomputed state of D-mod-K on a Dragonfly+.
type dflyDModK struct {
	group   []int32 // node → group, for switches and hosts (a host's is its leaf's)
	inGroup []int32 // host node → its index among its group's hosts, in host order; -1 for a switch
	spineAt []int32 // spine node → its position among its group's spines; -1 otherwise
	spines  [][]int // group → its spines, in node order
	// up[x][sp] are leaf x's ports to spine sp of its group, in port order.
	up [][][]int
	// cables[gs][gd] are the global cables from group gs to group gd in
	// round order: the cable a destination of index i takes is entry
	// i mod len.
	cables [][][]PortRef
}

// builderSpines returns which switches are spines when t is a Dragonfly+
// whose tiers are known — the dragonfly-plus builder made it, or a topology
// file gives them (tier=) — every switch a leaf, tier 1, or a spine, tier
// 2, and some spines cabled to each other; and nil otherwise.
func builderSpines(t *Topology) []bool {
	spine := make([]bool, len(t.Nodes))
	global := false
	for _, x := range t.Switches() {
		switch t.Nodes[x].Level {
		case 1:
		case 2:
			spine[x] = true
			for p := 1; p <= t.Nodes[x].Ports; p++ {
				if q, ok := t.Peer(PortRef{x, p}); ok && t.Nodes[q.Node].Kind == Switch && t.Nodes[q.Node].Level == 2 {
					global = true
				}
			}
		default:
			return nil
		}
	}
	if !global {
		return nil
	}
	return spine
}

// fileSpines returns which switches are spines when t, without tiers (a
// topology file), is shaped as a Dragonfly+: a switch with hosts is a leaf
// and one without a spine, every leaf is cabled only to hosts and spines,
// every spine to some leaf, and some spines to each other. It returns nil
// otherwise (a fat tree's cores have no leaf; a ring's switches all have
// hosts). A leaf without hosts would be taken for a spine, so such a file
// is not recognised.
func fileSpines(t *Topology) []bool {
	spine := make([]bool, len(t.Nodes))
	switches := t.Switches()
	for _, x := range switches {
		spine[x] = true
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			if q, ok := t.Peer(PortRef{x, p}); ok && t.Nodes[q.Node].Kind == Host {
				spine[x] = false
			}
		}
	}
	global := false
	for _, x := range switches {
		leaves := 0
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			q, ok := t.Peer(PortRef{x, p})
			if !ok || t.Nodes[q.Node].Kind != Switch {
				continue
			}
			switch {
			case !spine[x] && !spine[q.Node]:
				return nil // leaf to leaf
			case spine[x] && spine[q.Node]:
				global = true
			case spine[x]:
				leaves++
			}
		}
		if spine[x] && leaves == 0 {
			return nil
		}
	}
	if !global {
		return nil
	}
	return spine
}

// newDflyDModK returns D-mod-K's Dragonfly+ state for t, whose spines are
// spine (builderSpines, fileSpines), or says what keeps it from balancing
// the fabric.
func newDflyDModK(t *Topology, spine []bool) (*dflyDModK, error) {
	switches := t.Switches()
	n := len(t.Nodes)
	f := &dflyDModK{group: make([]int32, n), inGroup: make([]int32, n), spineAt: make([]int32, n), up: make([][][]int, n)}
	for i := range f.group {
		f.group[i], f.inGroup[i], f.spineAt[i] = -1, -1, -1
	}
	// Groups: the switches joined by leaf–spine cables.
	groups := 0
	var queue, first []int // first: each group's first switch, to name it
	for _, x := range switches {
		if f.group[x] >= 0 {
			continue
		}
		first = append(first, x)
		f.group[x] = int32(groups)
		queue = append(queue[:0], x)
		for k := 0; k < len(queue); k++ {
			y := queue[k]
			for p := 1; p <= t.Nodes[y].Ports; p++ {
				q, ok := t.Peer(PortRef{y, p})
				if !ok || t.Nodes[q.Node].Kind != Switch || spine[q.Node] == spine[y] || f.group[q.Node] >= 0 {
					continue
				}
				f.group[q.Node] = int32(groups)
				queue = append(queue, q.Node)
			}
		}
		groups++
	}
	if groups < 2 {
		return nil, fmt.Errorf("topology.routing: dmodk needs a fat tree or a Dragonfly+, but this fabric's spines cabled to each other are all in one group (minhop, updown, random)")
	}
	f.spines = make([][]int, groups)
	for _, x := range switches {
		if spine[x] {
			g := f.group[x]
			f.spineAt[x] = int32(len(f.spines[g]))
			f.spines[g] = append(f.spines[g], x)
		}
	}
	count := make([]int32, groups)
	for _, h := range t.Hosts() {
		q, ok := t.Peer(PortRef{h, 1})
		if !ok {
			continue
		}
		g := f.group[q.Node]
		f.group[h] = g
		f.inGroup[h] = count[g]
		count[g]++
	}
	// Leaves: their ports to each spine of their group, and one count of
	// parallel cables for all (the fat-tree-2 rule descends over the
	// parallel cable a leaf climbs on, so every leaf needs the same).
	parallel := -1
	for _, x := range switches {
		if spine[x] {
			continue
		}
		g := f.group[x]
		f.up[x] = make([][]int, len(f.spines[g]))
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			if q, ok := t.Peer(PortRef{x, p}); ok && t.Nodes[q.Node].Kind == Switch {
				sp := f.spineAt[q.Node]
				f.up[x][sp] = append(f.up[x][sp], p)
			}
		}
		for sp, ports := range f.up[x] {
			if parallel < 0 {
				parallel = len(ports)
			}
			if len(ports) != parallel {
				return nil, fmt.Errorf("topology.routing: dmodk needs every leaf of a Dragonfly+ cabled to every spine of its group by the same number of cables, but %s has %d to %s, not %d (minhop, updown, random)",
					t.Nodes[x].Name, len(ports), t.Nodes[f.spines[g][sp]].Name, parallel)
			}
		}
	}
	// Global cables in round order, per ordered pair of groups.
	f.cables = make([][][]PortRef, groups)
	for gs := range f.cables {
		f.cables[gs] = make([][]PortRef, groups)
		perSpine := make([][][]int, len(f.spines[gs])) // [sp][gd] ports in port order
		rounds := 0
		for sp, x := range f.spines[gs] {
			perSpine[sp] = make([][]int, groups)
			for p := 1; p <= t.Nodes[x].Ports; p++ {
				if q, ok := t.Peer(PortRef{x, p}); ok && t.Nodes[q.Node].Kind == Switch && spine[q.Node] {
					gd := f.group[q.Node]
					perSpine[sp][gd] = append(perSpine[sp][gd], p)
					rounds = max(rounds, len(perSpine[sp][gd]))
				}
			}
		}
		for gd := range f.cables[gs] {
			for r := range rounds {
				for sp, x := range f.spines[gs] {
					if ports := perSpine[sp][gd]; r < len(ports) {
						f.cables[gs][gd] = append(f.cables[gs][gd], PortRef{x, ports[r]})
					}
				}
			}
			if gd != gs && len(f.cables[gs][gd]) == 0 {
				return nil, fmt.Errorf("topology.routing: dmodk needs a global cable between every pair of Dragonfly+ groups, but the group of %s has none to the group of %s (minhop, updown, random)",
					t.Nodes[first[gs]].Name, t.Nodes[first[gd]].Name)
			}
		}
	}
	return f, nil
}

// choose picks switch x's port for host d among cands, its minimal
// candidates in port order (see the comment at the top of the file).
func (f *dflyDModK) choose(x, d int, cands []int) int {
	if len(cands) == 1 {
		return cands[0]
	}
	i := int(f.inGroup[d])
	gx, gd := f.group[x], f.group[d]
	switch {
	case f.spineAt[x] < 0 && gx == gd: // a leaf climbs within the group
		s := len(f.spines[gx])
		ports := f.up[x][i%s]
		return pick(cands, ports[(i/s)%len(ports)], i)
	case f.spineAt[x] < 0: // a leaf climbs toward a global cable to d's group
		cables := f.cables[gx][gd]
		c := len(cables)
		ports := f.up[x][f.spineAt[cables[i%c].Node]]
		return pick(cands, ports[(i/c)%len(ports)], i)
	case gx == gd: // a spine descends to d's leaf over the parallel cable d's leaf climbs on
		return cands[(i/len(f.spines[gx]))%len(cands)]
	default: // a spine of another group: the cable the source leaves chose
		cable := f.cables[gx][gd][i%len(f.cables[gx][gd])]
		if cable.Node == x {
			return pick(cands, cable.Port, i)
		}
		// No minimal host route brings d here (the group's leaves climb to
		// cable's spine), so any candidate serves; take one by the index.
		return cands[i%len(cands)]
	}
}

// pick returns port p if it is one of cands, and otherwise the candidate of
// index i mod len(cands): a fabric the builder made always has p among
// them, since every rule above names a port on a minimal route.
func pick(cands []int, p, i int) int {
	for _, c := range cands {
		if c == p {
			return p
		}
	}
	return cands[i%len(cands)]
}
