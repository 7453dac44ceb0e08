package fabric

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// Non-minimal routing on a Dragonfly+ (SubnetOptions.NonMinimal,
// topology.nonminimal; docs/fabric.md, "Non-minimal routing").
//
// A source group's spine that holds a minimal (direct) global cable to the
// destination's group also gets, in its AR group for that destination,
// every global port to a third group whose spine on that cable has a
// direct cable to the destination's group: the L-G-G-L route Shpiner et
// al. (HiPINEB 2017) give second priority after the minimal L-G-L one.
// The intermediate spine forwards by its LFT, whose entry for a group it
// has a cable to is that cable (minimal routing), so a detour takes
// exactly two global cables. Only packets from a spine's own group's
// leaves may detour (ARTable.SetDetourInputs): one that arrives over a
// global cable goes on minimally, so no packet takes a third.
//
// Deadlock freedom needs a second VL: every spine's (global in, global
// out) port pairs map each data SL to VL 1 (VL 15 stays drop), the other
// pairs keep their tables. On VL 0 a packet then takes up, at most one
// global, down (the minimal order); the only VL 1 channels are second
// global cables, entered from a first global cable and left for a down
// cable of the destination group (back on VL 0). Channel classes ordered
// host→leaf < leaf→spine < global VL 0 < global VL 1 < spine→leaf <
// leaf→host, every route takes them in strictly increasing order, so the
// channel dependency graph is acyclic (Dally and Seitz 1987); the check
// (CheckDeadlock) confirms it on the built tables.

// DetourVL is the VL a detour's second global cable takes: the spines'
// (global in, global out) SL-to-VL tables map every data SL to it.
const DetourVL = 1

// dragonflyGroups finds a Dragonfly+'s global cables and groups from the
// cables alone: a global cable joins two switches without hosts (spines;
// a leaf has hosts), and the groups are the switches joined by the other
// switch-to-switch cables. global[n] lists switch n's global ports in port
// order (nil for a leaf); group[n] numbers switch n's group (groups in
// order of their lowest switch), and a host's is its leaf's.
type dragonflyGroups struct {
	global [][]int
	group  []int32
	groups int
	// reach[x] has bit G set when switch x has a global cable to group G.
	reach [][]uint64
	// detour[x][G] are switch x's detour ports toward group G (detours),
	// computed once per spine and group: they do not depend on the host.
	detour [][][]int
}

func newDragonflyGroups(t *Topology) (*dragonflyGroups, error) {
	n := len(t.Nodes)
	hasHost := make([]bool, n)
	for x := range t.Nodes {
		if t.Nodes[x].Kind != Switch {
			continue
		}
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			if q, ok := t.Peer(PortRef{x, p}); ok && t.Nodes[q.Node].Kind == Host {
				hasHost[x] = true
			}
		}
	}
	g := &dragonflyGroups{global: make([][]int, n), group: make([]int32, n)}
	isGlobal := func(x, p int) bool {
		q, ok := t.Peer(PortRef{x, p})
		return ok && t.Nodes[q.Node].Kind == Switch && !hasHost[x] && !hasHost[q.Node]
	}
	for x := range g.group {
		g.group[x] = -1
	}
	var queue []int
	for _, x := range t.Switches() {
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			if isGlobal(x, p) {
				g.global[x] = append(g.global[x], p)
			}
		}
		if g.group[x] >= 0 {
			continue
		}
		g.group[x] = int32(g.groups)
		queue = append(queue[:0], x)
		for i := 0; i < len(queue); i++ {
			y := queue[i]
			for p := 1; p <= t.Nodes[y].Ports; p++ {
				q, ok := t.Peer(PortRef{y, p})
				if !ok || t.Nodes[q.Node].Kind != Switch || isGlobal(y, p) || g.group[q.Node] >= 0 {
					continue
				}
				g.group[q.Node] = int32(g.groups)
				queue = append(queue, q.Node)
			}
		}
		g.groups++
	}
	for _, h := range t.Hosts() {
		if q, ok := t.Peer(PortRef{h, 1}); ok {
			g.group[h] = g.group[q.Node]
		}
	}
	if g.groups < 2 {
		return nil, &NotDragonflyError{fmt.Sprintf("this fabric has %d group (a Dragonfly+ has two or more leaf/spine groups joined by spine-to-spine global cables)", g.groups)}
	}
	// A cable between two spines of one group (joined through its leaves)
	// would pass for a global cable: a detour over it would take a
	// group's own spine for a third group, and the second VL, kept for a
	// second global cable, a first one. A Dragonfly+ has no such cable.
	for x, ports := range g.global {
		for _, p := range ports {
			if q, _ := t.Peer(PortRef{x, p}); g.group[q.Node] == g.group[x] && x < q.Node {
				return nil, &NotDragonflyError{fmt.Sprintf("%s and %s, spines of one group (joined through its leaves), are cabled to each other (%s.Port[%d]); a Dragonfly+'s spine-to-spine cables join different groups",
					t.Nodes[x].Name, t.Nodes[q.Node].Name, t.Nodes[x].Name, p)}
			}
		}
	}
	words := (g.groups + 63) / 64
	g.reach = make([][]uint64, n)
	for x, ports := range g.global {
		if len(ports) == 0 {
			continue
		}
		g.reach[x] = make([]uint64, words)
		for _, p := range ports {
			q, _ := t.Peer(PortRef{x, p})
			gr := g.group[q.Node]
			g.reach[x][gr/64] |= 1 << (gr % 64)
		}
	}
	// A spine x's detours toward group G (x cabled to G, G not its own):
	// every global port of x to a third group's spine that has a direct
	// cable to G. Spines × groups × global ports in all.
	g.detour = make([][][]int, n)
	detours := 0
	for x, ports := range g.global {
		if len(ports) == 0 {
			continue
		}
		g.detour[x] = make([][]int, g.groups)
		for gd := range int32(g.groups) {
			if gd == g.group[x] || !g.cableTo(x, gd) {
				continue
			}
			for _, p := range ports {
				q, _ := t.Peer(PortRef{x, p})
				if g.group[q.Node] != gd && g.cableTo(q.Node, gd) {
					g.detour[x][gd] = append(g.detour[x][gd], p)
					detours++
				}
			}
		}
	}
	if detours == 0 {
		// A topology file of another shape (a three-level fat tree's
		// pods look like groups, its cores like one-switch groups) has
		// no spine cabled both to a group and to a third group's spine
		// cabled there: nothing to detour through, and the global-to-
		// global VL 1 pairs would only move its traffic to another VL.
		return nil, &NotDragonflyError{fmt.Sprintf("no spine of this fabric's %d groups has a detour (a switch without hosts cabled to another group and to a third group's spine cabled to that group, as a Dragonfly+'s spines are)", g.groups)}
	}
	return g, nil
}

// NotDragonflyError is NewSubnet's refusal of non-minimal routing on a
// fabric that is not shaped as a Dragonfly+ (a topology file's may be
// anything): Reason says what the groups found lack.
type NotDragonflyError struct{ Reason string }

func (e *NotDragonflyError) Error() string {
	return "subnet: non-minimal routing needs a Dragonfly+: " + e.Reason
}

// cableTo reports whether switch x has a global cable to group gr.
func (g *dragonflyGroups) cableTo(x int, gr int32) bool {
	r := g.reach[x]
	return r != nil && r[gr/64]&(1<<(gr%64)) != 0
}

// detours appends to out switch x's detour ports toward host d: none
// unless x is a spine of another group than d's with a direct cable to
// d's group (the spines minimal routing climbs to); then every global
// port of x to a third group's spine that has a direct cable to d's group.
func (g *dragonflyGroups) detours(x, d int, out []int) []int {
	if g.detour[x] == nil {
		return out
	}
	return append(out, g.detour[x][g.group[d]]...)
}

// installDetourVLs gives every spine's (global in, global out) port pairs
// its default table with every data SL mapped to DetourVL.
func (s *Subnet) installDetourVLs() {
	t := s.Topo
	for _, x := range t.Switches() {
		ports := s.nonmin.global[x]
		if len(ports) == 0 {
			continue
		}
		tbl := s.sl2vl[x].tables[0]
		for sl, vl := range tbl {
			if vl != ib.ManagementVL {
				tbl[sl] = DetourVL
			}
		}
		k := s.tableIndex(x, tbl, -1)
		stride := t.Nodes[x].Ports + 1
		for _, a := range ports {
			for _, b := range ports {
				s.sl2vl[x].pair[a*stride+b] = k
			}
		}
	}
}

// NonMinimal reports whether the subnet manager gave the spines detour
// ports (SubnetOptions.NonMinimal).
func (s *Subnet) NonMinimal() bool { return s.nonmin != nil }

// GlobalPorts returns a Dragonfly+ switch's global ports (non-minimal
// routing only; nil otherwise or for a leaf).
func (s *Subnet) GlobalPorts(n int) []int {
	if s.nonmin == nil {
		return nil
	}
	return s.nonmin.global[n]
}

// ARSplit returns switch n's AR group for dlid (as ARGroup) and how many
// of its leading ports are minimal; the rest are detours.
func (s *Subnet) ARSplit(n int, dlid uint16) ([]uint16, int) {
	g := s.ARGroup(n, dlid)
	if g == nil {
		return nil, 0
	}
	return g, int(s.arMin[n][s.arOf[n][dlid]-1])
}

// DetourFrom reports whether a packet that entered switch n on IB port in
// may take a detour port: in is a port to its own group (not a global
// cable). Always false without non-minimal routing.
func (s *Subnet) DetourFrom(n, in int) bool {
	if s.nonmin == nil || len(s.nonmin.global[n]) == 0 || in == 0 {
		return false
	}
	for _, p := range s.nonmin.global[n] {
		if p == in {
			return false
		}
	}
	return true
}

// egressesFrom is Egresses for a packet that entered switch n on port in:
// without the detour ports of its AR group when it may not detour there
// (DetourFrom).
func (s *Subnet) egressesFrom(n, in int, dlid uint16, sl uint8, one *[1]uint16) []uint16 {
	eg := s.Egresses(n, dlid, sl, one)
	if g, k := s.ARSplit(n, dlid); s.AdaptiveSL(sl) && k < len(g) && !s.DetourFrom(n, in) {
		return g[:k] // eg is g: the group less its detours
	}
	return eg
}
