package fabric

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

const unreached = int32(-1)

// rootSwitches returns the switches the up/down ranking starts from: those
// marked Root or, when none is marked, the switches farthest from their
// nearest host (a fat tree's top tier; every switch of a ring). auto says
// the roots were picked that way rather than given.
func (s *Subnet) rootSwitches() (roots []int, auto bool) {
	t := s.Topo
	switches := t.Switches()
	for _, n := range switches {
		if t.Nodes[n].Root {
			roots = append(roots, n)
		}
	}
	if len(roots) > 0 || len(switches) == 0 {
		return roots, false
	}
	// Distance from every switch to its nearest host.
	hd := make([]int32, len(t.Nodes))
	for i := range hd {
		hd[i] = unreached
	}
	var queue []int
	for _, h := range t.Hosts() {
		hd[h] = 0
		queue = append(queue, h)
	}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			if q, ok := t.Peer(PortRef{x, p}); ok && t.Nodes[q.Node].Kind == Switch && hd[q.Node] == unreached {
				hd[q.Node] = hd[x] + 1
				queue = append(queue, q.Node)
			}
		}
	}
	far := int32(0)
	for _, n := range switches {
		far = max(far, hd[n])
	}
	for _, n := range switches {
		if hd[n] == far {
			roots = append(roots, n)
		}
	}
	return roots, true
}

// rankSwitches ranks the switches by breadth-first search from roots over
// switch-to-switch cables, as OpenSM's updn engine does
// (doc/current-routing.txt, "Ranking process"). Hosts rank one below the
// deepest switch.
func (s *Subnet) rankSwitches(roots []int) error {
	t := s.Topo
	s.roots = roots
	s.rank = make([]int, len(t.Nodes))
	switches := t.Switches()
	if len(switches) == 0 {
		return nil
	}
	for i := range s.rank {
		s.rank[i] = -1
	}
	queue := append([]int{}, roots...)
	for _, r := range roots {
		s.rank[r] = 0
	}
	deepest := 0
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		deepest = max(deepest, s.rank[x])
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			if q, ok := t.Peer(PortRef{x, p}); ok && t.Nodes[q.Node].Kind == Switch && s.rank[q.Node] < 0 {
				s.rank[q.Node] = s.rank[x] + 1
				queue = append(queue, q.Node)
			}
		}
	}
	for _, n := range switches {
		if s.rank[n] < 0 {
			return fmt.Errorf("subnet: %s cannot be reached from the root switches through switches", t.Nodes[n].Name)
		}
	}
	for _, h := range t.Hosts() {
		s.rank[h] = deepest + 1
	}
	return nil
}

// noRouteError is a switch left without a legal route to a destination.
type noRouteError struct{ msg string }

func (e *noRouteError) Error() string { return e.msg }

// isUp reports whether the hop from node x to its neighbour m goes up: toward
// a lower rank, or, between switches of equal rank, toward the lower node
// index (the Up*/Down* tie-break that makes the direction a total order).
// A hop into a host is always down; a hop out of a host always up.
func (s *Subnet) isUp(x, m int) bool {
	if s.Topo.Nodes[m].Kind == Host {
		return false
	}
	if s.Topo.Nodes[x].Kind == Host {
		return true
	}
	return s.rank[m] < s.rank[x] || (s.rank[m] == s.rank[x] && m < x)
}

// router holds the scratch state of one routing pass.
type router struct {
	s       *Subnet
	routing string
	upDown  bool // the current destination is routed by the up*/down* rule
	rng     *rand.Rand
	load    [][]int32 // switch → port → host destinations routed through it
	dist    []int32   // min-hop distance to the destination (minhop, random)
	down    []int32   // up/down: down-only distance to the destination
	any     []int32   // up/down: distance with the up*/down* rule
	queue   []int
	buckets [][]int // up/down: nodes by tentative distance
	cands   []int
	// D-mod-K: per switch its up-ports in port order, its level (1 = leaf),
	// and per level the up-port count U and the divisor W = ∏ U below it.
	upPorts [][]int
	level   []int
	upCount []int
	divisor []int
	// dfly is D-mod-K's state on a Dragonfly+ (route_dfly.go), nil on a
	// fat tree.
	dfly *dflyDModK
}

func (s *Subnet) route(o SubnetOptions) error {
	t := s.Topo
	r := &router{s: s, routing: o.Routing}
	switch o.Routing {
	case RoutingMinHop, RoutingUpDown:
	case RoutingRandom:
		// The second PCG word is a fixed stream constant so that seed 0 is
		// as good as any.
		r.rng = rand.New(rand.NewPCG(o.Seed, 0x6a09e667f3bcc908))
	case RoutingDModK:
		if err := r.prepareDModKOn(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("topology.routing: %q is not a routing engine (minhop, dmodk, updown, random)", o.Routing)
	}
	s.lft = make([][]uint16, len(t.Nodes))
	s.ar, s.arOf, s.arMin = nil, nil, nil
	var arIndex []map[string]uint16 // per switch: group (as a string of its ports) → 1 + index in s.ar[n]
	if o.AdaptiveRouting {
		s.ar = make([][][]uint16, len(t.Nodes))
		s.arOf = make([][]uint16, len(t.Nodes))
		s.arMin = make([][]uint16, len(t.Nodes))
		arIndex = make([]map[string]uint16, len(t.Nodes))
	}
	var group []int // scratch: a switch's AR group, minimal ports then detours
	r.load = make([][]int32, len(t.Nodes))
	switches := t.Switches()
	for _, n := range switches {
		lft := make([]uint16, len(s.nodeOf))
		for i := range lft {
			lft[i] = NoPort
		}
		lft[s.lid[n]] = 0 // port 0: the switch's own management port
		s.lft[n] = lft
		r.load[n] = make([]int32, t.Nodes[n].Ports+1)
	}
	r.dist = make([]int32, len(t.Nodes))
	r.down = make([]int32, len(t.Nodes))
	r.any = make([]int32, len(t.Nodes))
	// Destination-major order. Each switch's choice for a LID depends only on
	// its own port counters, which only its own earlier LIDs changed, so this
	// gives the same tables as OpenSM's switch-major loop.
	for lid := 1; lid < len(s.nodeOf); lid++ {
		d := int(s.nodeOf[lid])
		// Routes to a switch LID carry subnet management on VL15, which has
		// no flow control and cannot deadlock, so they are plain min-hop under
		// every engine. (Up/down could not route them at all between two
		// roots: OpenSM's doc/current-routing.txt notes the same limit.)
		// D-mod-K on a Dragonfly+ chooses among the min-hop candidates (its
		// spines are cabled to each other, so up*/down* does not apply).
		r.upDown = (r.routing == RoutingUpDown || r.routing == RoutingDModK && r.dfly == nil) && t.Nodes[d].Kind == Host
		if r.upDown {
			r.upDownDistances(d)
		} else {
			r.minHopDistances(d)
		}
		for _, x := range switches {
			if x == d {
				continue
			}
			cands := r.candidates(x, d)
			if len(cands) == 0 {
				if !r.upDown {
					return &noRouteError{fmt.Sprintf("subnet: %s routing: %s has no route to %s", o.Routing, t.Nodes[x].Name, t.Nodes[d].Name)}
				}
				names := make([]string, len(s.roots))
				for i, n := range s.roots {
					names[i] = t.Nodes[n].Name
				}
				return &noRouteError{fmt.Sprintf("subnet: %s routing: %s has no up*/down* route to %s from the root switches %s (a route climbs toward them, then descends; mark one root, e.g. a root line in the topology file)",
					o.Routing, t.Nodes[x].Name, t.Nodes[d].Name, strings.Join(names, ", "))}
			}
			if arIndex != nil && t.Nodes[d].Kind == Host {
				group = append(group[:0], cands...)
				if s.nonmin != nil {
					group = s.nonmin.detours(x, d, group)
				}
				if len(group) >= 2 {
					s.setARGroup(arIndex, x, lid, group, len(cands))
				}
			}
			p := r.choose(x, d, cands)
			s.lft[x][lid] = uint16(p)
			if t.Nodes[d].Kind == Host {
				r.load[x][p]++
			}
		}
	}
	return nil
}

// setARGroup makes cands (ports in port order; under non-minimal routing
// the first minimal of them, then the detours) switch x's adaptive routing
// group for lid. Only host destinations get one: routes to switch LIDs
// carry subnet management on VL15, which stays on the LFT's route.
func (s *Subnet) setARGroup(index []map[string]uint16, x, lid int, cands []int, minimal int) {
	if s.arOf[x] == nil {
		s.arOf[x] = make([]uint16, len(s.nodeOf))
		index[x] = map[string]uint16{}
	}
	key := make([]byte, 0, 2*len(cands)+2)
	for _, p := range cands {
		key = append(key, byte(p>>8), byte(p))
	}
	if minimal < len(cands) { // a group with detours differs from the same ports all minimal
		key = append(key, 0xFF, byte(minimal))
	}
	g, ok := index[x][string(key)]
	if !ok {
		ports := make([]uint16, len(cands))
		for i, p := range cands {
			ports[i] = uint16(p)
		}
		s.ar[x] = append(s.ar[x], ports)
		s.arMin[x] = append(s.arMin[x], uint16(minimal))
		g = uint16(len(s.ar[x]))
		index[x][string(key)] = g
	}
	s.arOf[x][lid] = g
}

// minHopDistances fills dist with hop counts to d by breadth-first search.
// Hosts other than d do not forward, so the search does not pass through them.
func (r *router) minHopDistances(d int) {
	t := r.s.Topo
	for i := range r.dist {
		r.dist[i] = unreached
	}
	r.dist[d] = 0
	queue := append(r.queue[:0], d)
	for i := 0; i < len(queue); i++ {
		x := queue[i]
		if x != d && t.Nodes[x].Kind == Host {
			continue
		}
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			if q, ok := t.Peer(PortRef{x, p}); ok && r.dist[q.Node] == unreached {
				r.dist[q.Node] = r.dist[x] + 1
				queue = append(queue, q.Node)
			}
		}
	}
	r.queue = queue
}

// upDownDistances fills down (hops to d going only down) and any (hops to d
// under the up*/down* rule) for destination d. A switch with a down-only path
// always takes it, even where going up first would be shorter (possible only
// off a tree): a destination-based table cannot tell a packet that arrived
// going down from one that has not, so every switch below which d lies must
// route down, or a packet that already went down could be sent up again.
func (r *router) upDownDistances(d int) {
	s := r.s
	t := s.Topo
	for i := range r.down {
		r.down[i] = unreached
		r.any[i] = unreached
	}
	r.down[d] = 0
	queue := append(r.queue[:0], d)
	for i := 0; i < len(queue); i++ {
		m := queue[i]
		for p := 1; p <= t.Nodes[m].Ports; p++ {
			q, ok := t.Peer(PortRef{m, p})
			// x = q.Node reaches m by a down hop iff the hop m → x is up.
			if ok && t.Nodes[q.Node].Kind == Switch && r.down[q.Node] == unreached && s.isUp(m, q.Node) {
				r.down[q.Node] = r.down[m] + 1
				queue = append(queue, q.Node)
			}
		}
	}
	r.queue = queue
	// Bucket search outward from every node with a down-only path, over hops
	// x → m that go up.
	for i := range r.buckets {
		r.buckets[i] = r.buckets[i][:0]
	}
	push := func(n int, dist int32) {
		for int(dist) >= len(r.buckets) {
			r.buckets = append(r.buckets, nil)
		}
		r.buckets[dist] = append(r.buckets[dist], n)
	}
	for _, n := range queue {
		r.any[n] = r.down[n]
		push(n, r.down[n])
	}
	for dist := 0; dist < len(r.buckets); dist++ {
		for j := 0; j < len(r.buckets[dist]); j++ {
			m := r.buckets[dist][j]
			if r.any[m] != int32(dist) {
				continue
			}
			for p := 1; p <= t.Nodes[m].Ports; p++ {
				q, ok := t.Peer(PortRef{m, p})
				if !ok || t.Nodes[q.Node].Kind != Switch || r.down[q.Node] != unreached || !s.isUp(q.Node, m) {
					continue
				}
				if a := r.any[q.Node]; a == unreached || a > int32(dist)+1 {
					r.any[q.Node] = int32(dist) + 1
					push(q.Node, int32(dist)+1)
				}
			}
		}
	}
}

// candidates returns switch x's ports that lie on a legal shortest route to d,
// in port order.
func (r *router) candidates(x, d int) []int {
	s := r.s
	t := s.Topo
	c := r.cands[:0]
	for p := 1; p <= t.Nodes[x].Ports; p++ {
		q, ok := t.Peer(PortRef{x, p})
		if !ok {
			continue
		}
		m := q.Node
		if m != d && t.Nodes[m].Kind == Host {
			continue
		}
		var onRoute bool
		switch {
		case !r.upDown:
			onRoute = r.dist[x] != unreached && r.dist[m] == r.dist[x]-1
		case r.down[x] != unreached: // d lies below x: only down hops
			onRoute = !s.isUp(x, m) && r.down[m] == r.down[x]-1
		default: // climb toward a switch d lies below
			onRoute = r.any[x] != unreached && s.isUp(x, m) && r.any[m] == r.any[x]-1
		}
		if onRoute {
			c = append(c, p)
		}
	}
	r.cands = c
	return c
}

// choose picks one of the candidate ports at switch x for destination d.
func (r *router) choose(x, d int, cands []int) int {
	switch r.routing {
	case RoutingRandom:
		return cands[r.rng.IntN(len(cands))]
	case RoutingDModK:
		if hd := r.s.hostIndex[d]; hd >= 0 {
			if r.dfly != nil {
				return r.dfly.choose(x, d, cands)
			}
			return r.dModK(x, int(hd), cands)
		}
	}
	// OpenSM minhop/updn port selection (doc/current-routing.txt, stage 2):
	// among equal-hop ports the one with fewer destinations already routed
	// through it; ties go to the lower port number.
	best := cands[0]
	for _, p := range cands[1:] {
		if r.load[x][p] < r.load[x][best] {
			best = p
		}
	}
	return best
}

// prepareDModKOn prepares D-mod-K for the fabric: its Dragonfly+ form
// (route_dfly.go) on a fabric the dragonfly-plus builder made or a
// topology file with its tiers (tier=), its fat-tree form on a regular fat
// tree, and on a topology file without tiers that is no fat tree but is
// shaped as a Dragonfly+, the Dragonfly+ form. A file of neither shape gets
// the fat-tree form's refusal.
func (r *router) prepareDModKOn() error {
	t := r.s.Topo
	if spine := builderSpines(t); spine != nil {
		var err error
		r.dfly, err = newDflyDModK(t, spine)
		return err
	}
	treeErr := r.prepareDModK()
	if treeErr == nil {
		return nil
	}
	spine := fileSpines(t)
	if spine == nil {
		if hostlessSwitchCable(t) {
			// Perhaps a Dragonfly+ with a leaf without hosts, which a file
			// without tiers cannot tell from a spine.
			return fmt.Errorf("%v; a Dragonfly+ in a topology file whose leaves do not all have hosts needs its switches' tiers (tier=1 leaves, tier=2 spines; hcasim topology writes them)", treeErr)
		}
		return treeErr
	}
	var err error
	r.dfly, err = newDflyDModK(t, spine)
	return err
}

// hostlessSwitchCable reports whether t, without tiers, has a cable between
// two switches without hosts: spine-to-spine cables, or cables to a leaf
// without hosts.
func hostlessSwitchCable(t *Topology) bool {
	hosted := make([]bool, len(t.Nodes))
	for _, h := range t.Hosts() {
		if q, ok := t.Peer(PortRef{h, 1}); ok {
			hosted[q.Node] = true
		}
	}
	for _, c := range t.Cables {
		a, b := c.A.Node, c.B.Node
		if t.Nodes[a].Kind == Switch && t.Nodes[b].Kind == Switch && t.Nodes[a].Level == 0 && !hosted[a] && !hosted[b] {
			return true
		}
	}
	return false
}

// prepareDModK checks that the fabric is a regular tree and derives, per
// switch level, the up-port count U and the divisor W (the product of U over
// the levels below).
func (r *router) prepareDModK() error {
	s := r.s
	t := s.Topo
	switches := t.Switches()
	deepest := 0
	for _, n := range switches {
		deepest = max(deepest, s.rank[n])
	}
	r.upPorts = make([][]int, len(t.Nodes))
	r.level = make([]int, len(t.Nodes))
	r.upCount = make([]int, deepest+2)
	for i := range r.upCount {
		r.upCount[i] = -1
	}
	owner := make([]int, deepest+2)
	for _, n := range switches {
		lv := deepest - s.rank[n] + 1
		r.level[n] = lv
		for p := 1; p <= t.Nodes[n].Ports; p++ {
			q, ok := t.Peer(PortRef{n, p})
			if !ok || t.Nodes[q.Node].Kind != Switch {
				continue
			}
			if s.rank[q.Node] == s.rank[n] {
				return fmt.Errorf("topology.routing: dmodk needs a fat tree or a Dragonfly+, but %s and %s are cabled at the same tier (minhop, updown, random)", t.Nodes[n].Name, t.Nodes[q.Node].Name)
			}
			if s.rank[q.Node] < s.rank[n] {
				r.upPorts[n] = append(r.upPorts[n], p)
			}
		}
		u := len(r.upPorts[n])
		if r.upCount[lv] < 0 {
			r.upCount[lv], owner[lv] = u, n
		} else if r.upCount[lv] != u {
			return fmt.Errorf("topology.routing: dmodk needs a regular fat tree, but %s has %d up-ports and %s, at the same level, %d",
				t.Nodes[n].Name, u, t.Nodes[owner[lv]].Name, r.upCount[lv])
		}
	}
	r.divisor = make([]int, deepest+2)
	w := 1
	for lv := 1; lv <= deepest+1; lv++ {
		r.divisor[lv] = w
		if r.upCount[lv] > 0 {
			w *= r.upCount[lv]
		}
	}
	return nil
}

// dModK is D-mod-K routing (Zahavi, "D-Mod-K Routing Providing Non-Blocking
// Traffic for Shift Permutations on Real Life Fat Trees", Technion CCIT
// Report 776, 2010), the closed form of what OpenSM's ftree engine builds:
// going up from level l, destination d (its host index) leaves on up-port
// (d / W_l) mod U_l, so each destination climbs to exactly one top switch;
// going down, a switch uses the cable the child below would have used to
// climb toward it for d, so all traffic to d comes down one path. On a
// complete tree this puts every shift permutation (i → i+k mod N) on
// disjoint links.
func (r *router) dModK(x, hd int, cands []int) int {
	s := r.s
	t := s.Topo
	if r.down[x] == unreached && r.upCount[r.level[x]] > 0 {
		lv := r.level[x]
		q := (hd / r.divisor[lv]) % r.upCount[lv]
		p := r.upPorts[x][q]
		for _, c := range cands {
			if c == p {
				return p
			}
		}
		return cands[q%len(cands)]
	}
	child, _ := t.Peer(PortRef{x, cands[0]})
	m := child.Node
	if t.Nodes[m].Kind == Switch {
		lv := r.level[m]
		if u := r.upCount[lv]; u > 0 {
			up := r.upPorts[m][(hd/r.divisor[lv])%u]
			if back, ok := t.Peer(PortRef{m, up}); ok && back.Node == x {
				for _, c := range cands {
					if c == back.Port {
						return c
					}
				}
			}
		}
	}
	return cands[hd%len(cands)]
}
