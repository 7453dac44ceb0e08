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
	if r < 2 || r > MaxRadix {
		return sh, fmt.Errorf("topology.radix: %d is out of range for a fat tree (2..%d)", r, MaxRadix)
	}
	o := s.Oversubscription
	if o <= 0 {
		return sh, fmt.Errorf("topology.oversubscription: %g must be positive (down:up ratio at a leaf, 1 = non-blocking)", o)
	}
	down := float64(r) * o / (1 + o)
	if math.Abs(down-math.Round(down)) > 1e-9 {
		return sh, fmt.Errorf("topology.oversubscription: %g does not split radix %d into whole down and up ports (down = radix × o / (1 + o) = %g)", o, r, down)
	}
	sh.Down = int(math.Round(down))
	sh.Up = r - sh.Down
	if sh.Down < 1 || sh.Up < 1 {
		return sh, fmt.Errorf("topology.oversubscription: %g leaves a leaf of radix %d with %d down and %d up ports; both must be at least 1", o, r, sh.Down, sh.Up)
	}
	sh.Spines = s.Spines
	if sh.Spines == 0 {
		sh.Spines = sh.Up
	}
	if sh.Spines < 1 || sh.Up%sh.Spines != 0 {
		return sh, fmt.Errorf("topology.spines: %d must divide the %d up-ports of each leaf", s.Spines, sh.Up)
	}
	sh.Parallel = sh.Up / sh.Spines
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
