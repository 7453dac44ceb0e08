package fabric

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/switchasic"
)

// LID range for unicast (ib-facts.md §4: opensm ib_types.h
// IB_LID_UCAST_START/END_HO).
const (
	FirstUnicastLID = 0x0001
	LastUnicastLID  = 0xBFFF
)

// NoPort marks an LFT entry with no route. OpenSM uses 0xFF in its 8-bit
// LFTs (OSM_NO_PATH); a 256-port switch (IBA 1.6) needs wider entries, so
// hcasim keeps LFT entries in 16 bits.
const NoPort uint16 = 0xFFFF

// Routing engine names, as the topology.routing key spells them.
const (
	RoutingMinHop = "minhop"
	RoutingDModK  = "dmodk"
	RoutingUpDown = "updown"
	RoutingRandom = "random"
)

// RoutingEngines lists the engine names in the order the docs give them.
var RoutingEngines = []string{RoutingMinHop, RoutingDModK, RoutingUpDown, RoutingRandom}

// SubnetOptions chooses how the subnet manager configures the fabric.
type SubnetOptions struct {
	Routing string // minhop | dmodk | updown | random
	Seed    uint64 // seeds the random engine; ignored by the others
	VLs     int    // data VLs per port (1, 2, 4, 8, 15), for the default SL-to-VL tables
	// SL2VL is the table every node's port pairs start with, as the switches
	// use it (switchasic.Config.SL2VLTable, from switch.sl2vl); nil =
	// DefaultSL2VL(VLs). The deadlock check follows these tables, so they
	// must be the ones the switches forward by.
	SL2VL *SL2VLTable
	// SL2VLPairs are switch.sl2vl_pairs: tables for the switches' port
	// pairs they select, applied in order over SL2VL (applySL2VLPairs).
	// They must have passed switchasic.Config.Validate.
	SL2VLPairs []switchasic.SL2VLPairConfig
	// AdaptiveRouting (topology.adaptive_routing) also gives every switch,
	// per host destination with two or more candidate ports, its adaptive
	// routing group: the engine's candidates, the legal shortest ports the
	// LFT entry was chosen from (ARGroup). The LFT stays the static default.
	AdaptiveRouting bool
	// ARSLs are the service levels whose packets may take an AR group's
	// ports, bit i for SL i (topology.adaptive_routing_sls, NVIDIA's
	// ar_sl_mask); the others keep the LFT's port. 0 = every SL (AllSLs).
	ARSLs uint16
	// NonMinimal (topology.nonminimal) adds detours to a Dragonfly+'s AR
	// groups: at a source group's spine, the global ports to groups whose
	// spine there has a direct cable to the destination's group, taken
	// over a second VL (nonminimal.go). It needs AdaptiveRouting and two
	// or more VLs.
	NonMinimal bool
}

// AllSLs is the service level mask with every SL set: adaptive routing on
// every SL, as NVIDIA's subnet manager enables it by default (its
// OSM_ALL_SL_VL_AR_ENABLED, 0xFFFF).
const AllSLs uint16 = 0xFFFF

// SL2VLTable maps each of the 16 SLs to a VL (ib-facts.md §3: opensm
// ib_slvl_table_t). VL 15 in a data SL's entry means drop.
type SL2VLTable [16]uint8

// openSMSL2VL is OpenSM's default qos_sl2vl: SL i → VL i for 0..14, SL15 →
// VL7 (ib-facts.md §3: opensm doc/QoS_management_in_OpenSM.txt).
var openSMSL2VL = SL2VLTable{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7}

// DefaultSL2VL returns OpenSM's default SL-to-VL table with each VL masked
// as OpenSM's sl2vl_update_table masks it for vls data VLs (ib.VLMask, the
// same as reducing it modulo vls for every VL count a port supports): SL mod
// vls for SL 0..14, and SL15 → 7 & mask. switchasic.Config.SL2VLTable uses
// the same default, so switches and the subnet manager agree.
func DefaultSL2VL(vls int) SL2VLTable {
	var t SL2VLTable
	mask := ib.VLMask(vls)
	for sl, vl := range openSMSL2VL {
		t[sl] = vl & mask
	}
	return t
}

// sl2vlPorts holds one node's SL-to-VL tables. IB indexes a switch's tables by
// (input port, output port); almost every fabric uses one table everywhere, so
// the per-pair index is only allocated once a pair gets a table of its own.
type sl2vlPorts struct {
	tables []SL2VLTable // tables[0] is the node's default
	rule   []int32      // per table: the switch.sl2vl_pairs entry that set it, -1 for the default and SetSL2VL
	pair   []uint16     // (in×(ports+1) + out) → index into tables; nil = all default
}

// Subnet is what a subnet manager leaves behind in a fabric: a LID for every
// host and switch, a linear forwarding table in every switch, and SL-to-VL
// tables. It is computed once, before the run, from a Topology.
type Subnet struct {
	Topo    *Topology
	Routing string
	VLs     int

	hosts     []int    // host node indices in LID order
	hostIndex []int32  // node → index in hosts, -1 for a switch
	lid       []uint16 // node → LID
	nodeOf    []int32  // LID → node, -1 if unassigned; len = max LID + 1
	lft       [][]uint16
	rank      []int // node → up/down rank (0 = root); hosts rank below every switch
	roots     []int // the switches of rank 0
	sl2vl     []sl2vlPorts
	// Adaptive routing groups (SubnetOptions.AdaptiveRouting), nil without:
	// per switch, arOf[n][lid] is 1 + the index of lid's group in ar[n],
	// or 0 for none (a single candidate, or a switch LID); equal groups
	// are kept once, as a switch's AR group table holds each set once.
	ar   [][][]uint16
	arOf [][]uint16
	// arMin is, per switch and group of ar, how many of the group's
	// leading ports are minimal (the rest detours: NonMinimal).
	arMin [][]uint16
	// nonmin holds a Dragonfly+'s groups and global ports under
	// non-minimal routing (SubnetOptions.NonMinimal), nil without.
	nonmin *dragonflyGroups
	// arSLs are the SLs that may take the groups (SubnetOptions.ARSLs),
	// bit i for SL i.
	arSLs uint16
	// mcast are the multicast groups (AddMulticastGroup), in MLID order.
	mcast []*MulticastGroup
}

// NewSubnet assigns LIDs, computes forwarding tables with the chosen routing
// engine and installs the default SL-to-VL tables.
//
// LIDs are assigned in a fixed order: hosts in node order first (so host i of
// Topology.Hosts() has LID i+1), then switches in node order. Each node gets
// one LID (LMC 0).
func NewSubnet(t *Topology, o SubnetOptions) (*Subnet, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	if !ib.ValidVLCount(o.VLs) {
		return nil, fmt.Errorf("subnet: %d is not a VL count an IB port supports (1, 2, 4, 8, 15)", o.VLs)
	}
	s := &Subnet{Topo: t, Routing: o.Routing, VLs: o.VLs}
	if o.AdaptiveRouting {
		s.arSLs = o.ARSLs
		if s.arSLs == 0 {
			s.arSLs = AllSLs
		}
	}
	if o.NonMinimal {
		if !o.AdaptiveRouting {
			return nil, fmt.Errorf("subnet: non-minimal routing puts its detours in the adaptive routing groups, so it needs adaptive routing")
		}
		if o.VLs < 2 {
			return nil, fmt.Errorf("subnet: non-minimal routing moves a detour's second global hop to VL %d, so it needs 2 or more data VLs, not %d", DetourVL, o.VLs)
		}
		g, err := newDragonflyGroups(t)
		if err != nil {
			return nil, err
		}
		s.nonmin = g
	}
	if err := s.assignLIDs(); err != nil {
		return nil, err
	}
	roots, auto := s.rootSwitches()
	if err := s.rankSwitches(roots); err != nil {
		return nil, err
	}
	err := s.route(o)
	var noRoute *noRouteError
	if err != nil && auto && len(roots) > 1 && errors.As(err, &noRoute) {
		// Roots picked as "the switches farthest from any host" serve a
		// tree, whose top tier every switch can climb to and descend from.
		// Off a tree they may not: a switch that climbs to one root may find
		// no down path from it to the destination's switch. One root always
		// serves: every switch climbs its breadth-first parents to it and
		// descends the same tree to any other switch. So fall back to the
		// first of them.
		if err := s.rankSwitches(roots[:1]); err != nil {
			return nil, err
		}
		err = s.route(o)
	}
	if err != nil {
		return nil, err
	}
	def := DefaultSL2VL(o.VLs)
	if o.SL2VL != nil {
		def = *o.SL2VL
		for sl, vl := range def {
			if int(vl) >= o.VLs && vl != ib.ManagementVL {
				return nil, fmt.Errorf("subnet: SL-to-VL table maps SL%d to VL%d but ports have %d data VLs (VL15 = drop)", sl, vl, o.VLs)
			}
		}
	}
	s.sl2vl = make([]sl2vlPorts, len(t.Nodes))
	for n := range s.sl2vl {
		s.sl2vl[n].tables = []SL2VLTable{def}
		s.sl2vl[n].rule = []int32{-1}
	}
	if s.nonmin != nil {
		s.installDetourVLs()
	}
	if err := s.applySL2VLPairs(o.SL2VLPairs); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Subnet) assignLIDs() error {
	t := s.Topo
	s.hosts = t.Hosts()
	switches := t.Switches()
	total := len(s.hosts) + len(switches)
	if total > LastUnicastLID {
		return fmt.Errorf("subnet: %d hosts and switches need more LIDs than the unicast range 0x0001-0xBFFF holds", total)
	}
	s.lid = make([]uint16, len(t.Nodes))
	s.hostIndex = make([]int32, len(t.Nodes))
	s.nodeOf = make([]int32, total+1)
	s.nodeOf[0] = -1
	next := FirstUnicastLID
	for i := range s.hostIndex {
		s.hostIndex[i] = -1
	}
	for i, h := range s.hosts {
		s.hostIndex[h] = int32(i)
	}
	for _, n := range append(append([]int{}, s.hosts...), switches...) {
		s.lid[n] = uint16(next)
		s.nodeOf[next] = int32(n)
		next++
	}
	return nil
}

// LID returns the LID of node n (a switch's LID is that of its port 0).
func (s *Subnet) LID(n int) uint16 { return s.lid[n] }

// NodeOf returns the node that owns lid, or -1.
func (s *Subnet) NodeOf(lid uint16) int {
	if int(lid) >= len(s.nodeOf) {
		return -1
	}
	return int(s.nodeOf[lid])
}

// MaxLID returns the highest LID assigned; every LFT has MaxLID()+1 entries.
func (s *Subnet) MaxLID() uint16 { return uint16(len(s.nodeOf) - 1) }

// Hosts returns the host node indices in LID order (host i has LID i+1).
func (s *Subnet) Hosts() []int { return s.hosts }

// HostLID returns the LID of host number i (i indexes Hosts()).
func (s *Subnet) HostLID(i int) uint16 { return s.lid[s.hosts[i]] }

// LFT returns switch n's linear forwarding table: entry DLID is the egress
// port (0 = the switch itself, NoPort = no route). It is nil for a host. The
// slice is the subnet's own; do not change it.
func (s *Subnet) LFT(n int) []uint16 { return s.lft[n] }

// Egress returns the port switch n forwards dlid to, or NoPort.
func (s *Subnet) Egress(n int, dlid uint16) uint16 {
	if int(dlid) >= len(s.lft[n]) {
		return NoPort
	}
	return s.lft[n][dlid]
}

// AdaptiveRouting reports whether the subnet manager gave the switches
// adaptive routing groups.
func (s *Subnet) AdaptiveRouting() bool { return s.arOf != nil }

// ARGroup returns switch n's adaptive routing group for dlid: the IB ports
// (1-based, in port order) a packet for dlid may leave on, its LFT port
// among them; nil when the destination has one candidate or adaptive
// routing is off (then only the LFT port). Under non-minimal routing the
// minimal ports come first, then the detours (ARSplit). The slice is the
// subnet's own.
func (s *Subnet) ARGroup(n int, dlid uint16) []uint16 {
	if s.arOf == nil || s.arOf[n] == nil || int(dlid) >= len(s.arOf[n]) {
		return nil
	}
	if g := s.arOf[n][dlid]; g > 0 {
		return s.ar[n][g-1]
	}
	return nil
}

// ARSLs returns the service levels whose packets may take the AR groups,
// bit i for SL i; 0 without adaptive routing.
func (s *Subnet) ARSLs() uint16 { return s.arSLs }

// AdaptiveSL reports whether packets on sl may take the AR groups' ports:
// adaptive routing is on and sl is one of its SLs.
func (s *Subnet) AdaptiveSL(sl uint8) bool { return s.arSLs&(1<<(sl&15)) != 0 }

// Egresses returns every port switch n may forward a packet on sl for dlid
// to: its AR group when sl is an AR SL (AdaptiveSL), else the LFT port
// alone (NoPort when there is none). one is scratch for the single-port
// case, so the call does not allocate.
func (s *Subnet) Egresses(n int, dlid uint16, sl uint8, one *[1]uint16) []uint16 {
	if s.AdaptiveSL(sl) {
		if g := s.ARGroup(n, dlid); g != nil {
			return g
		}
	}
	one[0] = s.Egress(n, dlid)
	return one[:]
}

// Rank returns node n's up/down rank: 0 for a root switch, growing away from
// the roots; hosts rank one below the deepest switch.
func (s *Subnet) Rank(n int) int { return s.rank[n] }

// SL2VL returns the SL-to-VL table node n uses for packets that enter on port
// in and leave on port out. For a host, in is 0 (the host itself) and out is 1.
func (s *Subnet) SL2VL(n, in, out int) *SL2VLTable {
	p := &s.sl2vl[n]
	if p.pair == nil {
		return &p.tables[0]
	}
	return &p.tables[p.pair[in*(s.Topo.Nodes[n].Ports+1)+out]]
}

// VL returns the VL a packet of service level sl takes out of port out of node
// n when it entered on port in.
func (s *Subnet) VL(n, in, out int, sl uint8) uint8 { return s.SL2VL(n, in, out)[sl&0xF] }

// SetSL2VL gives node n's (in, out) port pair its own table.
func (s *Subnet) SetSL2VL(n, in, out int, t SL2VLTable) error {
	ports := s.Topo.Nodes[n].Ports
	if in < 0 || in > ports || out < 0 || out > ports {
		return fmt.Errorf("sl2vl: %s has ports 0..%d, not (%d, %d)", s.Topo.Nodes[n].Name, ports, in, out)
	}
	for sl, vl := range t {
		if int(vl) >= s.VLs && vl != ib.ManagementVL {
			return fmt.Errorf("sl2vl: %s (%d, %d): SL%d maps to VL%d but the port has %d data VLs (VL15 = drop)", s.Topo.Nodes[n].Name, in, out, sl, vl, s.VLs)
		}
	}
	s.sl2vl[n].pair[in*(ports+1)+out] = s.tableIndex(n, t, -1)
	return nil
}

// tableIndex returns the index of node n's table t set by rule (-1: none),
// adding it if the node has no such table yet, and makes sure the node has
// its per-pair index. Equal tables of one rule share an index, so a rule
// over every pair of a switch costs one table.
func (s *Subnet) tableIndex(n int, t SL2VLTable, rule int) uint16 {
	p := &s.sl2vl[n]
	if p.pair == nil {
		ports := s.Topo.Nodes[n].Ports
		p.pair = make([]uint16, (ports+1)*(ports+1))
	}
	for k := range p.tables {
		if k > 0 && p.tables[k] == t && p.rule[k] == int32(rule) {
			return uint16(k)
		}
	}
	if len(p.tables) > 0xFFFF {
		panic(fmt.Sprintf("fabric: %s has more than 65535 SL-to-VL tables", s.Topo.Nodes[n].Name))
	}
	p.tables = append(p.tables, t)
	p.rule = append(p.rule, int32(rule))
	return uint16(len(p.tables) - 1)
}

// HasPairTables reports whether some port pair of node n has a table other
// than the node's default.
func (s *Subnet) HasPairTables(n int) bool { return s.sl2vl[n].pair != nil }

// Path follows the forwarding tables from host src to host dst (node
// indices) and returns the egress port of every hop, starting with src's own
// port 1. It fails, naming the switch, if a table has no route, sends the
// packet to the wrong host, or loops.
func (s *Subnet) Path(src, dst int) ([]PortRef, error) {
	t := s.Topo
	if t.Nodes[src].Kind != Host || t.Nodes[dst].Kind != Host {
		panic(fmt.Sprintf("fabric: Path(%d, %d): both ends must be hosts", src, dst))
	}
	dlid := s.lid[dst]
	out := PortRef{src, 1}
	path := []PortRef{out}
	for hop := 0; ; hop++ {
		next, ok := t.Peer(out)
		if !ok {
			return path, fmt.Errorf("route %s to %s: %s has no cable", t.Nodes[src].Name, t.Nodes[dst].Name, t.PortName(out))
		}
		n := next.Node
		if n == dst {
			return path, nil
		}
		if t.Nodes[n].Kind == Host {
			return path, fmt.Errorf("route %s to %s ends at %s", t.Nodes[src].Name, t.Nodes[dst].Name, t.Nodes[n].Name)
		}
		if hop > len(t.Nodes) {
			return path, fmt.Errorf("route %s to %s loops: %s", t.Nodes[src].Name, t.Nodes[dst].Name, s.pathString(path))
		}
		p := s.Egress(n, dlid)
		if p == NoPort || p == 0 {
			return path, fmt.Errorf("route %s to %s: %s has no route to LID %d", t.Nodes[src].Name, t.Nodes[dst].Name, t.Nodes[n].Name, dlid)
		}
		out = PortRef{n, int(p)}
		path = append(path, out)
	}
}

// MaxChannelLoad routes every flow (a pair of host indices into Hosts())
// through the forwarding tables and returns the largest number of flows that
// leave through one port: 1 means the flows are link-disjoint, so a pattern
// of full-rate flows could run without contention under this routing.
func (s *Subnet) MaxChannelLoad(flows [][2]int) (int, error) {
	load := make(map[PortRef]int)
	worst := 0
	for _, f := range flows {
		if f[0] == f[1] {
			continue
		}
		path, err := s.Path(s.hosts[f[0]], s.hosts[f[1]])
		if err != nil {
			return 0, err
		}
		for _, c := range path {
			load[c]++
			worst = max(worst, load[c])
		}
	}
	return worst, nil
}

// WriteLFTs writes every switch's forwarding table in the manner of
// ibroute: a header per switch, then one line per routed LID with its egress
// port and the name of the node that owns the LID.
func (s *Subnet) WriteLFTs(w io.Writer) error {
	t := s.Topo
	bw := bufio.NewWriter(w)
	for _, n := range t.Switches() {
		fmt.Fprintf(bw, "%s LID %d (%s routing)\n", t.Nodes[n].Name, s.lid[n], s.Routing)
		for lid := 1; lid < len(s.nodeOf); lid++ {
			p := s.lft[n][lid]
			if p == NoPort {
				continue
			}
			fmt.Fprintf(bw, "  %5d -> port %3d  %s\n", lid, p, t.Nodes[s.nodeOf[lid]].Name)
		}
	}
	return bw.Flush()
}

func (s *Subnet) pathString(path []PortRef) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = s.Topo.PortName(p)
	}
	return strings.Join(parts, " -> ")
}
