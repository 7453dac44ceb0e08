package fabric

import (
	"fmt"
	"math"
	"strconv"

	"github.com/hcasim/hcasim/link"
)

// CableSpec is the length and medium every cable a builder makes gets.
type CableSpec struct {
	LengthM float64 // metres
	Medium  Medium
	// Link is the link section, against which a topology file's per-cable
	// width=, gen= and fec= are checked; zero = link.Defaults().
	Link link.Config
}

func indexed(kind string, i int) string { return "Fabric." + kind + "[" + strconv.Itoa(i) + "]" }

// HostName returns the Akita name of host i: "Fabric.Host[17]".
func HostName(i int) string { return indexed("Host", i) }

// mustAdd panics on a builder bug: builders make names that are valid and
// unique by construction.
func mustAdd(i int, err error) int {
	if err != nil {
		panic("fabric: builder: " + err.Error())
	}
	return i
}

func mustConnect(t *Topology, a, b PortRef, c CableSpec) {
	if err := t.Connect(a, b, c.LengthM, c.Medium); err != nil {
		panic("fabric: builder: " + err.Error())
	}
}

// BackToBack builds two hosts cabled port to port: Fabric.Host[0].Port[1] to
// Fabric.Host[1].Port[1].
func BackToBack(c CableSpec) *Topology {
	t := &Topology{}
	a := mustAdd(t.AddHost(HostName(0)))
	b := mustAdd(t.AddHost(HostName(1)))
	mustConnect(t, PortRef{a, 1}, PortRef{b, 1}, c)
	return t
}

// SingleSwitch builds one switch Fabric.Switch[0] of the given radix with
// hosts hosts; host i is on switch port i+1.
func SingleSwitch(hosts, radix int, c CableSpec) (*Topology, error) {
	if radix < 2 || radix > MaxRadix {
		return nil, fmt.Errorf("topology.radix: %d is out of range for a single switch (2..%d)", radix, MaxRadix)
	}
	if hosts < 2 || hosts > radix {
		return nil, fmt.Errorf("topology.hosts: %d does not fit a single switch of radix %d (2..%d)", hosts, radix, radix)
	}
	t := &Topology{}
	sw := mustAdd(t.AddSwitch(indexed("Switch", 0), radix))
	t.Nodes[sw].Level = 1
	t.Nodes[sw].Root = true
	for h := 0; h < hosts; h++ {
		n := mustAdd(t.AddHost(HostName(h)))
		mustConnect(t, PortRef{n, 1}, PortRef{sw, h + 1}, c)
	}
	return t, nil
}

// FatTree2Spec sizes a two-level (leaf/spine) fat tree.
type FatTree2Spec struct {
	Radix int // ports per switch, leaves and spines alike
	// Oversubscription is the leaf's down:up port ratio (1 = non-blocking,
	// 2 = 2:1). Down ports = radix × o / (1 + o) must be a whole number.
	Oversubscription float64
	Hosts            int // 0 = fill every leaf
	Leaves           int // 0 = as many as the hosts need, or as the spines can take
	Spines           int // 0 = one per leaf up-port; must divide the up-ports
}

// FatTree2Shape is the derived shape of a two-level fat tree.
type FatTree2Shape struct {
	Down, Up       int // leaf ports to hosts and to spines
	Leaves, Spines int
	Parallel       int // cables between each leaf and each spine: Up / Spines
	Hosts          int
}

// Shape derives the tree's shape from the spec, or says which knob is wrong.
func (s FatTree2Spec) Shape() (FatTree2Shape, error) {
	var sh FatTree2Shape
	r := s.Radix
	var err error
	if sh.Down, sh.Up, sh.Spines, sh.Parallel, err = leafSplit(r, s.Oversubscription, s.Spines, "a fat tree"); err != nil {
		return sh, err
	}
	maxLeaves := r / sh.Parallel // every leaf takes Parallel ports on every spine
	sh.Leaves = s.Leaves
	if sh.Leaves == 0 {
		if s.Hosts > 0 {
			sh.Leaves = (s.Hosts + sh.Down - 1) / sh.Down
		} else {
			sh.Leaves = maxLeaves
		}
	}
	if s.Leaves == 0 && s.Hosts > 0 && sh.Leaves > maxLeaves {
		// The leaves were derived from the hosts: the hosts are what to change.
		return sh, fmt.Errorf("topology.hosts: %d does not fit a two-level fat tree of radix %d (at most %d: %d leaves of %d host ports; use a larger switch.radix or fat-tree-3)",
			s.Hosts, r, maxLeaves*sh.Down, maxLeaves, sh.Down)
	}
	if sh.Leaves < 1 || sh.Leaves > maxLeaves {
		return sh, fmt.Errorf("topology.leaves: %d is out of range (1..%d: each spine of radix %d takes %s per leaf)", sh.Leaves, maxLeaves, r, plural(sh.Parallel, "cable"))
	}
	sh.Hosts = s.Hosts
	if sh.Hosts == 0 {
		sh.Hosts = sh.Leaves * sh.Down
	}
	if sh.Hosts < 2 {
		return sh, fmt.Errorf("topology.hosts: %d is too few (a fat tree connects at least 2 hosts; 0 = every host port)", sh.Hosts)
	}
	if sh.Hosts > sh.Leaves*sh.Down {
		leaves := fmt.Sprintf("%d leaf switches", sh.Leaves)
		if sh.Leaves == 1 {
			leaves = "1 leaf switch"
		}
		return sh, fmt.Errorf("topology.hosts: %d does not fit %s of %d host ports (at most %d)", sh.Hosts, leaves, sh.Down, sh.Leaves*sh.Down)
	}
	return sh, nil
}

// leafSplit splits a leaf switch of radix r (what: the fabric, for the
// radix error) into down ports to hosts and up ports, by the
// oversubscription o (down:up), and the up ports over spines spines (0 =
// one per up port), each leaf then having parallel cables to each spine:
// the leaf of a fat-tree-2 and of a dragonfly-plus group.
func leafSplit(r int, o float64, spines int, what string) (down, up, nSpines, parallel int, err error) {
	if r < 2 || r > MaxRadix {
		return 0, 0, 0, 0, fmt.Errorf("topology.radix: %d is out of range for %s (2..%d)", r, what, MaxRadix)
	}
	if o <= 0 {
		return 0, 0, 0, 0, fmt.Errorf("topology.oversubscription: %g must be positive (down:up ratio at a leaf, 1 = non-blocking)", o)
	}
	d := float64(r) * o / (1 + o)
	if math.Abs(d-math.Round(d)) > 1e-9 {
		return 0, 0, 0, 0, fmt.Errorf("topology.oversubscription: %g does not split radix %d into whole down and up ports (down = radix × o / (1 + o) = %g)", o, r, d)
	}
	down = int(math.Round(d))
	up = r - down
	if down < 1 || up < 1 {
		return 0, 0, 0, 0, fmt.Errorf("topology.oversubscription: %g leaves a leaf of radix %d with %d down and %d up ports; both must be at least 1", o, r, down, up)
	}
	nSpines = spines
	if nSpines == 0 {
		nSpines = up
	}
	if nSpines < 1 || up%nSpines != 0 {
		return 0, 0, 0, 0, fmt.Errorf("topology.spines: %d must divide the %d up-ports of each leaf", spines, up)
	}
	return down, up, nSpines, up / nSpines, nil
}

// FatTree2 builds a two-level fat tree. Leaf l is Fabric.Leaf[l]: ports
// 1..Down go to hosts, filled leaf by leaf (host h on leaf h/Down, port
// h%Down+1); up-port u (port Down+1+u) goes to Fabric.Spine[u%Spines], port
// l×Parallel + u/Spines + 1. Spines are the up/down roots.
func FatTree2(s FatTree2Spec, c CableSpec) (*Topology, error) {
	sh, err := s.Shape()
	if err != nil {
		return nil, err
	}
	t := &Topology{}
	leaves := make([]int, sh.Leaves)
	for l := range leaves {
		leaves[l] = mustAdd(t.AddSwitch(indexed("Leaf", l), s.Radix))
		t.Nodes[leaves[l]].Level = 1
	}
	spines := make([]int, sh.Spines)
	for i := range spines {
		spines[i] = mustAdd(t.AddSwitch(indexed("Spine", i), s.Radix))
		t.Nodes[spines[i]].Level = 2
		t.Nodes[spines[i]].Root = true
	}
	for h := 0; h < sh.Hosts; h++ {
		n := mustAdd(t.AddHost(HostName(h)))
		mustConnect(t, PortRef{n, 1}, PortRef{leaves[h/sh.Down], h%sh.Down + 1}, c)
	}
	for l, leaf := range leaves {
		for u := 0; u < sh.Up; u++ {
			spinePort := l*sh.Parallel + u/sh.Spines + 1
			mustConnect(t, PortRef{leaf, sh.Down + 1 + u}, PortRef{spines[u%sh.Spines], spinePort}, c)
		}
	}
	return t, nil
}

// FatTree3Shape is the derived shape of a three-level k-ary fat tree.
type FatTree3Shape struct {
	Half  int // k/2: hosts per leaf, leaves and spines per pod, up-ports per switch
	Pods  int
	Cores int // (k/2)²
	Hosts int
}

// FatTree3Size derives the shape of a three-level fat tree of radix k holding
// hosts hosts (0 = all k³/4).
func FatTree3Size(radix, hosts int) (FatTree3Shape, error) {
	var sh FatTree3Shape
	if radix < 2 || radix > MaxRadix || radix%2 != 0 {
		return sh, fmt.Errorf("topology.radix: %d must be even and in 2..%d for a three-level fat tree", radix, MaxRadix)
	}
	sh.Half = radix / 2
	perPod := sh.Half * sh.Half
	maxHosts := radix * perPod
	given := fmt.Sprint(hosts)
	if hosts == 0 {
		hosts = maxHosts
		given = fmt.Sprintf("0 (a full tree, %d hosts)", hosts)
	}
	if hosts < 2 || hosts > maxHosts {
		return sh, fmt.Errorf("topology.hosts: %d does not fit a three-level fat tree of radix %d (2..%d = k³/4)", hosts, radix, maxHosts)
	}
	sh.Hosts = hosts
	sh.Pods = (hosts + perPod - 1) / perPod
	sh.Cores = perPod
	// Every host and switch takes one unicast LID (LMC 0); the largest trees
	// need more than the range holds (radix 64: 65536 hosts + 5120 switches).
	if lids := hosts + sh.Pods*radix + sh.Cores; lids > LastUnicastLID {
		fit := 0
		for pods := 1; pods <= radix; pods++ {
			h := min(pods*perPod, LastUnicastLID-pods*radix-sh.Cores)
			if h > (pods-1)*perPod {
				fit = h
			}
		}
		return sh, fmt.Errorf("topology.hosts: %s in a three-level fat tree of radix %d need %d LIDs with the tree's %d switches, more than the unicast range 0x0001-0xBFFF (%d) holds (at most %d hosts at this radix)",
			given, radix, lids, sh.Pods*radix+sh.Cores, LastUnicastLID, fit)
	}
	return sh, nil
}

// FatTree3 builds a three-level k-ary fat tree from the switch radix k
// (Al-Fares et al., "A Scalable, Commodity Data Center Network Architecture",
// SIGCOMM 2008): pods of k/2 leaves (Fabric.Leaf[pod×k/2+e]) and k/2 spines
// (Fabric.Spine[pod×k/2+a]), and (k/2)² cores (Fabric.Core[a×k/2+j]). Leaf
// ports 1..k/2 go to hosts, port k/2+1+a to spine a of its pod (spine port
// e+1); spine port k/2+1+j goes to core a×k/2+j (core port pod+1). Only as
// many pods as the hosts need are built; hosts fill leaf by leaf.
func FatTree3(radix, hosts int, c CableSpec) (*Topology, error) {
	sh, err := FatTree3Size(radix, hosts)
	if err != nil {
		return nil, err
	}
	half := sh.Half
	t := &Topology{}
	leaves := make([]int, sh.Pods*half)
	for i := range leaves {
		leaves[i] = mustAdd(t.AddSwitch(indexed("Leaf", i), radix))
		t.Nodes[leaves[i]].Level = 1
	}
	spines := make([]int, sh.Pods*half)
	for i := range spines {
		spines[i] = mustAdd(t.AddSwitch(indexed("Spine", i), radix))
		t.Nodes[spines[i]].Level = 2
	}
	cores := make([]int, sh.Cores)
	for i := range cores {
		cores[i] = mustAdd(t.AddSwitch(indexed("Core", i), radix))
		t.Nodes[cores[i]].Level = 3
		t.Nodes[cores[i]].Root = true
	}
	for h := 0; h < sh.Hosts; h++ {
		n := mustAdd(t.AddHost(HostName(h)))
		mustConnect(t, PortRef{n, 1}, PortRef{leaves[h/half], h%half + 1}, c)
	}
	for pod := 0; pod < sh.Pods; pod++ {
		for e := 0; e < half; e++ {
			for a := 0; a < half; a++ {
				mustConnect(t, PortRef{leaves[pod*half+e], half + 1 + a}, PortRef{spines[pod*half+a], e + 1}, c)
			}
		}
		for a := 0; a < half; a++ {
			for j := 0; j < half; j++ {
				mustConnect(t, PortRef{spines[pod*half+a], half + 1 + j}, PortRef{cores[a*half+j], pod + 1}, c)
			}
		}
	}
	return t, nil
}

// Ring builds switches Fabric.Switch[0..n-1] in a ring, each with
// hostsPerSwitch hosts on ports 1..hostsPerSwitch; port hostsPerSwitch+1 goes
// to the next switch's port hostsPerSwitch+2. A ring routed by shortest path
// has a cyclic channel dependency graph; it exists to show the deadlock check.
func Ring(n, hostsPerSwitch int, c CableSpec) (*Topology, error) {
	if n < 3 {
		return nil, fmt.Errorf("ring: %d switches; a ring needs at least 3", n)
	}
	if hostsPerSwitch < 1 || hostsPerSwitch+2 > MaxRadix {
		return nil, fmt.Errorf("ring: %d hosts per switch is out of range (1..%d)", hostsPerSwitch, MaxRadix-2)
	}
	t := &Topology{}
	sw := make([]int, n)
	for i := range sw {
		sw[i] = mustAdd(t.AddSwitch(indexed("Switch", i), hostsPerSwitch+2))
	}
	for h := 0; h < n*hostsPerSwitch; h++ {
		hn := mustAdd(t.AddHost(HostName(h)))
		mustConnect(t, PortRef{hn, 1}, PortRef{sw[h/hostsPerSwitch], h%hostsPerSwitch + 1}, c)
	}
	for i := range sw {
		mustConnect(t, PortRef{sw[i], hostsPerSwitch + 1}, PortRef{sw[(i+1)%n], hostsPerSwitch + 2}, c)
	}
	return t, nil
}

// plural returns "n noun" with an s for any n but 1.
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// DragonflyPlusSpec sizes a Dragonfly+ fabric (Shpiner et al., "Dragonfly+:
// Low Cost Topology for Scaling Datacenters", HiPINEB 2017): groups that are
// each a two-level leaf/spine fat tree, their spines joined group to group by
// global cables.
type DragonflyPlusSpec struct {
	Radix int // ports per switch, leaves and spines alike
	// Oversubscription is the leaf's down:up port ratio, as in a fat-tree-2
	// (1 = half the leaf's ports to hosts, half to the spines).
	Oversubscription float64
	Hosts            int // 0 = fill every leaf
	Groups           int // 0 = as many as the hosts need, or the most the global ports join (S·h + 1)
	Leaves           int // per group; 0 = half the spine's ports' worth (⌊radix/2⌋ / Parallel)
	Spines           int // per group; 0 = one per leaf up-port; must divide the up-ports
	GlobalLinks      int // global cables per spine (h); 0 = every spine port the leaves leave free
}

// DragonflyPlusShape is the derived shape of a Dragonfly+ fabric.
type DragonflyPlusShape struct {
	Down, Up       int // leaf ports to hosts and to spines
	Leaves, Spines int // per group
	Parallel       int // cables between each leaf and each spine of its group: Up / Spines
	GlobalLinks    int // global ports per spine (h)
	Groups         int
	// PairCables is the global cables that join each pair of groups,
	// ⌊Spines·GlobalLinks / (Groups−1)⌋ (at least 1); the
	// Spines·GlobalLinks − PairCables·(Groups−1) global ports a group has
	// beyond those stay without a cable.
	PairCables int
	Hosts      int
}

// GlobalPorts returns the global ports of one group: Spines × GlobalLinks.
func (sh DragonflyPlusShape) GlobalPorts() int { return sh.Spines * sh.GlobalLinks }

// MaxGroups returns the most groups the global ports can join, every pair
// by at least one cable: Spines × GlobalLinks + 1 (Kim et al., ISCA 2008,
// g = a·h + 1, with a group's spines as the dragonfly's routers).
func (sh DragonflyPlusShape) MaxGroups() int { return sh.GlobalPorts() + 1 }

// Shape derives the fabric's shape from the spec, or says which knob is
// wrong.
func (s DragonflyPlusSpec) Shape() (DragonflyPlusShape, error) {
	var sh DragonflyPlusShape
	r := s.Radix
	// The leaf is a fat-tree-2 leaf: the same split of its ports, the same
	// spines per group.
	var err error
	if sh.Down, sh.Up, sh.Spines, sh.Parallel, err = leafSplit(r, s.Oversubscription, s.Spines, "a dragonfly-plus"); err != nil {
		return sh, err
	}
	// A spine gives Parallel ports to each leaf of its group and keeps at
	// least one for a global cable.
	maxLeaves := (r - 1) / sh.Parallel
	if maxLeaves < 1 {
		return sh, fmt.Errorf("topology.radix: %d leaves a spine no port for a global cable (its leaves take %s each)", r, plural(sh.Parallel, "port"))
	}
	sh.Leaves = s.Leaves
	if sh.Leaves == 0 {
		// The paper's split: half the spine's ports down to the leaves,
		// half out to other groups.
		sh.Leaves = max(1, r/2/sh.Parallel)
	}
	if sh.Leaves < 1 || sh.Leaves > maxLeaves {
		return sh, fmt.Errorf("topology.leaves: %d is out of range for a dragonfly-plus group (1..%d: a spine of radix %d takes %s per leaf and keeps a port for a global cable)",
			sh.Leaves, maxLeaves, r, plural(sh.Parallel, "cable"))
	}
	free := r - sh.Leaves*sh.Parallel
	sh.GlobalLinks = s.GlobalLinks
	if sh.GlobalLinks == 0 {
		sh.GlobalLinks = free
	}
	if sh.GlobalLinks < 1 || sh.GlobalLinks > free {
		leaves := "1 leaf"
		if sh.Leaves != 1 {
			leaves = fmt.Sprintf("%d leaves", sh.Leaves)
		}
		return sh, fmt.Errorf("topology.global_links: %d is out of range (1..%d: a spine of radix %d has %d ports left beside its %s to %s)",
			sh.GlobalLinks, free, r, free, plural(sh.Leaves*sh.Parallel, "cable"), leaves)
	}
	maxGroups := sh.MaxGroups()
	perGroup := sh.Leaves * sh.Down
	sh.Groups = s.Groups
	if sh.Groups == 0 {
		if s.Hosts > 0 {
			sh.Groups = (s.Hosts + perGroup - 1) / perGroup
			if sh.Groups < 2 {
				return sh, fmt.Errorf("topology.hosts: %d fit one group of %d leaves × %d host ports; a dragonfly-plus has at least 2 groups (set topology.groups, or use fat-tree-2)",
					s.Hosts, sh.Leaves, sh.Down)
			}
			if sh.Groups > maxGroups {
				return sh, fmt.Errorf("topology.hosts: %d need %d groups of %d hosts, but %d spines × %d global links join at most %d (at most %d hosts; use a larger switch.radix)",
					s.Hosts, sh.Groups, perGroup, sh.Spines, sh.GlobalLinks, maxGroups, maxGroups*perGroup)
			}
		} else {
			sh.Groups = maxGroups
		}
	}
	if sh.Groups < 2 || sh.Groups > maxGroups {
		return sh, fmt.Errorf("topology.groups: %d is out of range (2..%d: every pair of groups needs a global cable, and a group has %d spines × %d global links = %d)",
			sh.Groups, maxGroups, sh.Spines, sh.GlobalLinks, sh.GlobalPorts())
	}
	sh.PairCables = sh.GlobalPorts() / (sh.Groups - 1)
	sh.Hosts = s.Hosts
	if sh.Hosts == 0 {
		sh.Hosts = sh.Groups * perGroup
	}
	if sh.Hosts < 2 {
		return sh, fmt.Errorf("topology.hosts: %d is too few (a fabric connects at least 2 hosts; 0 = every host port)", sh.Hosts)
	}
	if sh.Hosts > sh.Groups*perGroup {
		return sh, fmt.Errorf("topology.hosts: %d does not fit %d groups of %d leaves × %d host ports (at most %d)",
			sh.Hosts, sh.Groups, sh.Leaves, sh.Down, sh.Groups*perGroup)
	}
	// Every host and switch takes one unicast LID (LMC 0).
	switches := sh.Groups * (sh.Leaves + sh.Spines)
	if lids := sh.Hosts + switches; lids > LastUnicastLID {
		key, val := "topology.groups", fmt.Sprint(s.Groups)
		if s.Groups == 0 {
			val = fmt.Sprintf("0 (the most the global ports join, %d)", sh.Groups)
			if s.Hosts > 0 {
				key, val = "topology.hosts", fmt.Sprint(s.Hosts)
			}
		}
		fit := (LastUnicastLID) / (perGroup + sh.Leaves + sh.Spines)
		return sh, fmt.Errorf("%s: %s: %d hosts and %d switches need %d LIDs, more than the unicast range 0x0001-0xBFFF (%d) holds (at most %d full groups at this shape)",
			key, val, sh.Hosts, switches, lids, LastUnicastLID, fit)
	}
	return sh, nil
}

// DragonflyPlus builds a Dragonfly+ fabric. Switches are numbered group-major
// in one flat namespace, as in the fat trees: group G's leaf l is
// Fabric.Leaf[G×Leaves+l] and its spine s is Fabric.Spine[G×Spines+s]; host
// h is on leaf h/Down, port h%Down+1 (hosts fill leaf by leaf, group by
// group). Inside a group the wiring is FatTree2's: leaf up-port u (port
// Down+1+u) goes to spine u%Spines, port l×Parallel + u/Spines + 1. A
// spine's ports Leaves×Parallel+1 … +GlobalLinks are its global ports.
//
// Global cables follow the relative (circulant) arrangement, its ports laid
// out consecutively per spine: a group's global port k (spine k/h, its
// (k%h)-th global port) serves offset δ = k%(g−1) + 1, copy c = k/(g−1),
// and joins group (G+δ) mod g at that group's port c×(g−1) + (g−1−δ) — the
// port of the same copy that serves the offset back, g−δ. Every group's
// wiring is group 0's turned by G, every pair of groups gets PairCables
// cables, and a pair's copies sit g−1 ports apart, on different spines
// whenever g−1 ≥ h. Leaves are tier 1 and spines tier 2. No switch is
// marked Root: a dragonfly has no top tier. The subnet manager then takes
// every spine as a root (the switches farthest from the hosts), which
// spreads multicast trees over them, and updown, which cannot route
// between roots joined spine to spine, falls back to the first spine
// alone (NewSubnet).
//
// host is every host cable's spec, local every leaf–spine cable's, global
// every spine–spine cable's.
func DragonflyPlus(s DragonflyPlusSpec, host, local, global CableSpec) (*Topology, error) {
	sh, err := s.Shape()
	if err != nil {
		return nil, err
	}
	t := &Topology{}
	leaves := make([]int, sh.Groups*sh.Leaves)
	for i := range leaves {
		leaves[i] = mustAdd(t.AddSwitch(indexed("Leaf", i), s.Radix))
		t.Nodes[leaves[i]].Level = 1
	}
	spines := make([]int, sh.Groups*sh.Spines)
	for i := range spines {
		spines[i] = mustAdd(t.AddSwitch(indexed("Spine", i), s.Radix))
		t.Nodes[spines[i]].Level = 2
	}
	for h := 0; h < sh.Hosts; h++ {
		n := mustAdd(t.AddHost(HostName(h)))
		mustConnect(t, PortRef{n, 1}, PortRef{leaves[h/sh.Down], h%sh.Down + 1}, host)
	}
	for g := 0; g < sh.Groups; g++ {
		for l := 0; l < sh.Leaves; l++ {
			for u := 0; u < sh.Up; u++ {
				spinePort := l*sh.Parallel + u/sh.Spines + 1
				mustConnect(t, PortRef{leaves[g*sh.Leaves+l], sh.Down + 1 + u}, PortRef{spines[g*sh.Spines+u%sh.Spines], spinePort}, local)
			}
		}
	}
	for g := 0; g < sh.Groups; g++ {
		for k := 0; k < sh.PairCables*(sh.Groups-1); k++ {
			p := sh.globalPeer(g, k)
			if p.Group < g {
				continue // cabled from the lower group
			}
			mustConnect(t, sh.globalPort(spines, g, k), sh.globalPort(spines, p.Group, p.Port), global)
		}
	}
	return t, nil
}

// GlobalEnd is one end of a global cable: a group and its global port.
type GlobalEnd struct{ Group, Port int }

// globalPeer returns the far end of group g's global port k (k below
// PairCables×(Groups−1)).
func (sh DragonflyPlusShape) globalPeer(g, k int) GlobalEnd {
	n := sh.Groups - 1
	delta, cp := k%n+1, k/n
	return GlobalEnd{Group: (g + delta) % sh.Groups, Port: cp*n + n - delta}
}

// globalPort returns the switch port of group g's global port k.
func (sh DragonflyPlusShape) globalPort(spines []int, g, k int) PortRef {
	return PortRef{spines[g*sh.Spines+k/sh.GlobalLinks], sh.Leaves*sh.Parallel + 1 + k%sh.GlobalLinks}
}
