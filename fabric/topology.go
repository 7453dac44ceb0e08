package fabric

import (
	"fmt"
	"regexp"
	"strconv"
)

// NodeKind tells a host (a channel adapter with one port) from a switch.
type NodeKind uint8

// Node kinds.
const (
	Host NodeKind = iota
	Switch
)

// String returns "host" or "switch".
func (k NodeKind) String() string {
	if k == Host {
		return "host"
	}
	return "switch"
}

// Medium is what a cable is made of; the link model turns it and the length
// into a propagation delay.
type Medium uint8

// Cable media.
const (
	Copper Medium = iota
	Fibre
)

// String returns "copper" or "fibre".
func (m Medium) String() string {
	if m == Copper {
		return "copper"
	}
	return "fibre"
}

// ParseMedium parses "copper" or "fibre" (also "fiber").
func ParseMedium(s string) (Medium, bool) {
	switch s {
	case "copper":
		return Copper, true
	case "fibre", "fiber":
		return Fibre, true
	}
	return Copper, false
}

// MaxRadix is the largest switch radix IBA 1.6 allows (ib-facts.md §4:
// infinibandta.org, "256-port switches").
const MaxRadix = 256

// Node is a host channel adapter or a switch. Ports are numbered as in IB:
// 1..Ports are the external ports; port 0 of a switch is its management port,
// which has no cable (it is where the switch's own LID ends).
type Node struct {
	Name  string   // Akita form, e.g. "Fabric.Leaf[2]"
	Kind  NodeKind // host or switch
	Ports int      // external ports: 1 for a host, the radix for a switch
	// Level is the switch's tier in a tree built by a builder: 1 for a leaf,
	// 2 for a spine, 3 for a core switch; 0 for hosts and for switches whose
	// tier is not known (a topology file without tier=; the subnet manager
	// then ranks them).
	Level int
	// Root marks a switch the up/down ranking starts from (rank 0). Builders
	// mark the top tier; a topology file marks them with `root` lines. When no
	// switch is marked the subnet manager picks the roots itself.
	Root bool
}

// PortRef names one port of one node: Node indexes Topology.Nodes, Port is the
// IB port number (1..Ports).
type PortRef struct {
	Node int
	Port int
}

// Cable joins two ports. A cable is full duplex: it carries a link in each
// direction.
type Cable struct {
	A, B    PortRef
	LengthM float64 // metres
	Medium  Medium
	// BER, if HasBER, is this cable's post-FEC bit error rate, both
	// directions (a topology file's ber=…); otherwise link.ber applies.
	BER    float64
	HasBER bool
	// Width, Gen and FEC override the link section's width, generation
	// and FEC mode for this cable, both directions ("" = link.width,
	// link.generation, link.fec): a split or degraded cable, a faster
	// tier. A cable of another generation than the link section's takes
	// its own generation's default FEC unless FEC is set (cableLink).
	Width string // 1x, 2x, 4x, 8x, 12x
	Gen   string // SDR … XDR, canonical spelling
	FEC   string // a link.fec mode
	// FECNs, if HasFECNs, is this cable's FEC latency in ns, both
	// directions (a topology file's fec_ns=…), in place of
	// link.fec_latency_ns or the derived latency (cableLink). It does not
	// change the cable's data rate, so Mixed does not count it.
	FECNs    float64
	HasFECNs bool
}

// Mixed reports whether the cable overrides the link section's speed.
func (c Cable) Mixed() bool { return c.Width != "" || c.Gen != "" || c.FEC != "" }

// Topology is the fabric graph: nodes and the cables between their ports.
// Build it with AddHost, AddSwitch and Connect, or with a builder.
type Topology struct {
	Nodes  []Node
	Cables []Cable

	byName map[string]int
	// peer[n][p] is the port at the far end of node n's port p (index p for
	// IB port p; index 0 unused); Node == -1 when the port has no cable.
	peer [][]PortRef
	// cableOf[n][p] is the index into Cables of the cable on node n's port p,
	// or -1.
	cableOf [][]int32
}

// akitaName matches an Akita-form component name: dot-separated parts, each
// capitalised letters/digits with an optional [index].
var akitaName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(\[[0-9]+\])?(\.[A-Z][A-Za-z0-9]*(\[[0-9]+\])?)*$`)

// ValidName reports whether name is in Akita form ("Fabric.Leaf[2]"):
// capitalised parts, no '_' or '-' (STYLE.md, Components).
func ValidName(name string) bool { return akitaName.MatchString(name) }

// AddHost adds a host (a channel adapter with one port) and returns its index.
func (t *Topology) AddHost(name string) (int, error) {
	return t.addNode(Node{Name: name, Kind: Host, Ports: 1})
}

// AddSwitch adds a switch with radix external ports and returns its index.
func (t *Topology) AddSwitch(name string, radix int) (int, error) {
	if radix < 1 || radix > MaxRadix {
		return -1, fmt.Errorf("switch %s: radix %d is out of range (1..%d)", name, radix, MaxRadix)
	}
	return t.addNode(Node{Name: name, Kind: Switch, Ports: radix})
}

func (t *Topology) addNode(n Node) (int, error) {
	if !ValidName(n.Name) {
		return -1, fmt.Errorf("%s name %q is not in Akita form (capitalised parts, e.g. Fabric.Host[3])", n.Kind, n.Name)
	}
	if t.byName == nil {
		t.byName = make(map[string]int)
	}
	if _, dup := t.byName[n.Name]; dup {
		return -1, fmt.Errorf("%s name %s is used twice", n.Kind, n.Name)
	}
	idx := len(t.Nodes)
	t.Nodes = append(t.Nodes, n)
	t.byName[n.Name] = idx
	peers := make([]PortRef, n.Ports+1)
	cables := make([]int32, n.Ports+1)
	for i := range peers {
		peers[i] = PortRef{Node: -1}
		cables[i] = -1
	}
	t.peer = append(t.peer, peers)
	t.cableOf = append(t.cableOf, cables)
	return idx, nil
}

// Lookup returns the index of the node called name.
func (t *Topology) Lookup(name string) (int, bool) {
	i, ok := t.byName[name]
	return i, ok
}

// Connect cables port a to port b. The two ports must be on different
// nodes: a loopback cable between two ports of one switch carries nothing a
// route could use, and the routing engines take every cable to join two
// nodes (dmodk would report one as two switches cabled at the same tier), so
// it is refused as the user's mistake it is.
func (t *Topology) Connect(a, b PortRef, lengthM float64, medium Medium) error {
	for _, p := range []PortRef{a, b} {
		if p.Node < 0 || p.Node >= len(t.Nodes) {
			return fmt.Errorf("cable: node index %d does not exist", p.Node)
		}
		if n := t.Nodes[p.Node]; p.Port < 1 || p.Port > n.Ports {
			return fmt.Errorf("cable: %s has ports 1..%d, not %d", n.Name, n.Ports, p.Port)
		}
		if q := t.peer[p.Node][p.Port]; q.Node >= 0 {
			return fmt.Errorf("cable: %s is already cabled to %s", t.PortName(p), t.PortName(q))
		}
	}
	if a == b {
		return fmt.Errorf("cable: %s is cabled to itself", t.PortName(a))
	}
	if a.Node == b.Node {
		return fmt.Errorf("cable: %s to %s loops back into %s; a cable must join two different nodes",
			t.PortName(a), t.PortName(b), t.Nodes[a.Node].Name)
	}
	if lengthM < 0 {
		return fmt.Errorf("cable: %s to %s has negative length %g m", t.PortName(a), t.PortName(b), lengthM)
	}
	t.peer[a.Node][a.Port] = b
	t.peer[b.Node][b.Port] = a
	t.cableOf[a.Node][a.Port] = int32(len(t.Cables))
	t.cableOf[b.Node][b.Port] = int32(len(t.Cables))
	t.Cables = append(t.Cables, Cable{A: a, B: b, LengthM: lengthM, Medium: medium})
	return nil
}

// Peer returns the port cabled to p; ok is false when p has no cable.
func (t *Topology) Peer(p PortRef) (PortRef, bool) {
	q := t.peer[p.Node][p.Port]
	return q, q.Node >= 0
}

// CableAt returns the cable on port p; ok is false when p has no cable.
func (t *Topology) CableAt(p PortRef) (Cable, bool) {
	c := t.cableOf[p.Node][p.Port]
	if c < 0 {
		return Cable{}, false
	}
	return t.Cables[c], true
}

// SetSwitchCableLength sets the length of every cable that joins two
// switches (leaf–spine, spine–core) to lengthM metres; host cables keep
// theirs. In a machine room host cables are short in-rack links and
// switch-to-switch cables run between racks.
func (t *Topology) SetSwitchCableLength(lengthM float64) {
	for i, c := range t.Cables {
		if t.Nodes[c.A.Node].Kind == Switch && t.Nodes[c.B.Node].Kind == Switch {
			t.Cables[i].LengthM = lengthM
		}
	}
}

// PortName returns the Akita name of a port: "Fabric.Leaf[2].Port[5]".
func (t *Topology) PortName(p PortRef) string {
	if p.Node < 0 || p.Node >= len(t.Nodes) {
		return "Node[" + strconv.Itoa(p.Node) + "].Port[" + strconv.Itoa(p.Port) + "]"
	}
	return t.Nodes[p.Node].Name + ".Port[" + strconv.Itoa(p.Port) + "]"
}

// Hosts returns the indices of the hosts in node order.
func (t *Topology) Hosts() []int { return t.ofKind(Host) }

// Switches returns the indices of the switches in node order.
func (t *Topology) Switches() []int { return t.ofKind(Switch) }

func (t *Topology) ofKind(k NodeKind) []int {
	var out []int
	for i, n := range t.Nodes {
		if n.Kind == k {
			out = append(out, i)
		}
	}
	return out
}

// CheckError is what Check reports: the message and the node or cable it is
// about (-1 when none), so a topology file can name the line that declared
// it.
type CheckError struct {
	Msg   string
	Node  int // index into Nodes, or -1
	Cable int // index into Cables, or -1
}

func (e *CheckError) Error() string { return e.Msg }

// Check reports a topology the subnet manager cannot route: no hosts, a host
// without a cable, or a part of the fabric that cannot reach the rest. The
// error is a *CheckError.
func (t *Topology) Check() error {
	hosts := t.Hosts()
	if len(hosts) < 2 {
		return &CheckError{Msg: fmt.Sprintf("topology has %s; at least 2 are needed", plural(len(hosts), "host")), Node: -1, Cable: -1}
	}
	for _, h := range hosts {
		if _, ok := t.Peer(PortRef{h, 1}); !ok {
			return &CheckError{Msg: fmt.Sprintf("%s has no cable", t.PortName(PortRef{h, 1})), Node: h, Cable: -1}
		}
	}
	if len(hosts) > 2 {
		// Back-to-back hosts are a topology of their own; inside a larger
		// fabric two hosts cabled together could not reach anyone else.
		for i, c := range t.Cables {
			if t.Nodes[c.A.Node].Kind == Host && t.Nodes[c.B.Node].Kind == Host {
				return &CheckError{Msg: fmt.Sprintf("cable %s to %s joins two hosts in a fabric of %d hosts", t.PortName(c.A), t.PortName(c.B), len(hosts)), Node: -1, Cable: i}
			}
		}
	}
	// Every node must be reachable from the first host (hosts do not forward,
	// but a host is reachable through its own cable).
	seen := make([]bool, len(t.Nodes))
	queue := []int{hosts[0]}
	seen[hosts[0]] = true
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if t.Nodes[n].Kind == Host && n != hosts[0] {
			continue
		}
		for p := 1; p <= t.Nodes[n].Ports; p++ {
			if q, ok := t.Peer(PortRef{n, p}); ok && !seen[q.Node] {
				seen[q.Node] = true
				queue = append(queue, q.Node)
			}
		}
	}
	for i, s := range seen {
		if !s {
			return &CheckError{Msg: fmt.Sprintf("%s cannot be reached from %s", t.Nodes[i].Name, t.Nodes[hosts[0]].Name), Node: i, Cable: -1}
		}
	}
	return nil
}
