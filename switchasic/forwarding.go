package switchasic

import "fmt"

// NoPort is what LFT.Lookup returns for a DLID with no route: the switch
// drops such a packet (OpenSM writes 0xFF, OSM_NO_PATH, into such LFT slots).
const NoPort = -1

// LFT is a linear forwarding table: a dense array indexed by DLID that gives
// the output port (ib-facts.md §4, "LFT"). Ports are the model's 0-based
// external port indices. The zero value routes nothing.
//
// An entry is a byte, port+1 (0 for no route), so that a 1,024-host fabric's
// tables, which every packet's hop reads at a random DLID, take 1 KiB per
// switch rather than 2; a radix-256 switch that routes to port 255 keeps
// its table in 16 bits instead (wide).
type LFT struct {
	ports []uint8 // ports[dlid] = output port + 1, 0 for NoPort; nil once wide is in use
	wide  []int16 // the table when port 255 is routed: output port, or NoPort
}

// NewLFT returns a table for DLIDs 0..maxLID with no routes.
func NewLFT(maxLID int) *LFT {
	if maxLID < 0 || maxLID > 0xFFFF {
		panic(fmt.Sprintf("switchasic.NewLFT: maxLID %d outside 0..65535", maxLID))
	}
	return &LFT{ports: make([]uint8, maxLID+1)}
}

// Set routes dlid to port; NoPort removes the route. It grows the table if
// dlid is beyond its end.
func (t *LFT) Set(dlid uint16, port int) {
	if port < NoPort || port > 255 {
		panic(fmt.Sprintf("switchasic.LFT.Set: dlid %d port %d outside -1..255", dlid, port))
	}
	if port == 255 && t.wide == nil {
		t.wide = make([]int16, len(t.ports))
		for d, p := range t.ports {
			t.wide[d] = int16(p) - 1
		}
		t.ports = nil
	}
	if t.wide != nil {
		for int(dlid) >= len(t.wide) {
			t.wide = append(t.wide, NoPort)
		}
		t.wide[dlid] = int16(port)
		return
	}
	for int(dlid) >= len(t.ports) {
		t.ports = append(t.ports, 0)
	}
	t.ports[dlid] = uint8(port + 1)
}

// Lookup returns the output port for dlid, or NoPort.
func (t *LFT) Lookup(dlid uint16) int {
	if t.wide != nil {
		if int(dlid) >= len(t.wide) {
			return NoPort
		}
		return int(t.wide[dlid])
	}
	if int(dlid) >= len(t.ports) {
		return NoPort
	}
	return int(t.ports[dlid]) - 1
}

// Len returns the number of DLIDs the table covers (maxLID + 1).
func (t *LFT) Len() int {
	if t.wide != nil {
		return len(t.wide)
	}
	return len(t.ports)
}

// MaxPort returns the largest port any DLID routes to, or NoPort.
func (t *LFT) MaxPort() int {
	if t.wide != nil {
		m := NoPort
		for _, p := range t.wide {
			m = max(m, int(p))
		}
		return m
	}
	m := 0
	for _, p := range t.ports {
		m = max(m, int(p))
	}
	return m - 1
}

// SL2VL is a switch's SL-to-VL mapping, one 16-entry table per (input,
// output) port pair (ib-facts.md §3: on switches the table is indexed by
// in-port and out-port). VL 15 in a table means drop. Pairs never set use
// the default table.
type SL2VL struct {
	radix int
	def   [16]uint8
	pairs [][16]uint8 // radix × radix tables, allocated on the first SetPair
}

// NewSL2VL returns the mapping for radix ports with every pair using def.
func NewSL2VL(radix int, def [16]uint8) *SL2VL {
	for sl, vl := range def {
		if vl > 15 {
			panic(fmt.Sprintf("switchasic.NewSL2VL: sl %d maps to vl %d", sl, vl))
		}
	}
	return &SL2VL{radix: radix, def: def}
}

// SetPair sets the table used from input in to output out.
func (m *SL2VL) SetPair(in, out int, table [16]uint8) {
	if in < 0 || in >= m.radix || out < 0 || out >= m.radix {
		panic(fmt.Sprintf("switchasic.SL2VL.SetPair: pair (%d,%d) outside radix %d", in, out, m.radix))
	}
	if m.pairs == nil {
		m.pairs = make([][16]uint8, m.radix*m.radix)
		for i := range m.pairs {
			m.pairs[i] = m.def
		}
	}
	m.pairs[in*m.radix+out] = table
}

// VL returns the output VL for a packet on sl going from in to out.
func (m *SL2VL) VL(in, out int, sl uint8) uint8 {
	if m.pairs == nil {
		return m.def[sl&15]
	}
	return m.pairs[in*m.radix+out][sl&15]
}

// ARTable holds a switch's adaptive routing groups, as the subnet manager
// programs them (NVIDIA's AR groups and AR LFT: per DLID, the set of ports
// a packet may leave on; the LFT keeps the static port). Ports are 0-based.
// Equal groups are stored once. The groups apply to the packets of every
// service level but those SetStaticSLs names (NVIDIA's subnet manager
// enables AR per SL, its ar_sl_mask). The zero value has no groups.
type ARTable struct {
	of    []uint16  // per DLID: 1 + group index, 0 = no group (the LFT alone)
	group [][]int16 // groups: minimal ports in port order, then detour ports in port order
	// minimal is, per group, how many of its leading ports are minimal;
	// the rest are detours (SetSplit), len(group) when it has none.
	minimal []int
	static  uint16 // SLs whose packets keep the LFT's port, bit i for SL i (0: AR on every SL)
	// detourIn marks, per input port (0-based), that a packet entering on
	// it may take a group's detour ports (SetDetourInputs); nil = no input
	// may, so detours are never taken.
	detourIn []bool
	// detourBias is how much more loaded, in 64-byte blocks, the least
	// loaded minimal port must be than the least loaded detour port before
	// a packet takes the detour (SetDetourBias).
	detourBias int64
}

// NewARTable returns a table with no groups.
func NewARTable() *ARTable { return &ARTable{} }

// Set gives dlid the group ports (0-based; at least two, so that there is a
// choice). It is made at build time and may allocate.
func (t *ARTable) Set(dlid uint16, ports []int) { t.SetSplit(dlid, ports, len(ports)) }

// SetSplit gives dlid the group ports whose first minimal ports are the
// minimal ones (a shortest route) and the rest detours (non-minimal
// routes, taken only by packets from the inputs SetDetourInputs names and
// only when the minimal ports are loaded beyond the bias). Each part is in
// port order. At least two ports in all, at least one minimal.
func (t *ARTable) SetSplit(dlid uint16, ports []int, minimal int) {
	if len(ports) < 2 {
		panic(fmt.Sprintf("switchasic.ARTable.Set: dlid %d group %v has fewer than two ports", dlid, ports))
	}
	if minimal < 1 || minimal > len(ports) {
		panic(fmt.Sprintf("switchasic.ARTable.SetSplit: dlid %d group %v: %d minimal ports", dlid, ports, minimal))
	}
	g := -1
	for k, grp := range t.group {
		if len(grp) != len(ports) || t.minimal[k] != minimal {
			continue
		}
		same := true
		for j, p := range grp {
			same = same && int(p) == ports[j]
		}
		if same {
			g = k
			break
		}
	}
	if g < 0 {
		grp := make([]int16, len(ports))
		for j, p := range ports {
			if p < 0 || p > 255 {
				panic(fmt.Sprintf("switchasic.ARTable.Set: dlid %d port %d outside 0..255", dlid, p))
			}
			grp[j] = int16(p)
		}
		t.group = append(t.group, grp)
		t.minimal = append(t.minimal, minimal)
		g = len(t.group) - 1
		if g >= 0xFFFF {
			panic("switchasic.ARTable.Set: more than 65534 groups")
		}
	}
	for int(dlid) >= len(t.of) {
		t.of = append(t.of, 0)
	}
	t.of[dlid] = uint16(g + 1)
}

// Group returns dlid's group (0-based ports, in port order), or nil.
func (t *ARTable) Group(dlid uint16) []int16 {
	if int(dlid) >= len(t.of) {
		return nil
	}
	if g := t.of[dlid]; g > 0 {
		return t.group[g-1]
	}
	return nil
}

// Split returns dlid's group (as Group) and how many of its leading ports
// are minimal; the rest are detours.
func (t *ARTable) Split(dlid uint16) ([]int16, int) {
	if int(dlid) >= len(t.of) {
		return nil, 0
	}
	if g := t.of[dlid]; g > 0 {
		return t.group[g-1], t.minimal[g-1]
	}
	return nil, 0
}

// SetDetourInputs names the input ports (0-based) whose packets may take
// detour ports: in a Dragonfly+ spine the ports from its own group's
// leaves, so that a packet detours at most once (one that arrives over a
// global cable has already left its group and must go on minimally). A
// table keyed on the DLID alone cannot tell those packets apart, so some
// state keyed on the input port is needed; NVIDIA documents a Dragonfly+
// AR algorithm (DF_PLUS, InfiniBand Cluster Bring-up Procedure, "Adaptive
// Routing") but not the tables behind it, so this per-input gate is the
// model's assumption of that mechanism, the least one that works.
func (t *ARTable) SetDetourInputs(in []bool) { t.detourIn = in }

// DetourFrom reports whether a packet that entered on input port i
// (0-based) may take detour ports.
func (t *ARTable) DetourFrom(i int) bool { return i < len(t.detourIn) && t.detourIn[i] }

// SetDetourBias sets the bias, in 64-byte blocks, by which the least
// loaded minimal port's load must exceed the least loaded detour port's
// before a packet detours.
func (t *ARTable) SetDetourBias(blocks int64) { t.detourBias = blocks }

// DetourBias returns the bias SetDetourBias set.
func (t *ARTable) DetourBias() int64 { return t.detourBias }

// SetStaticSLs makes the packets of the service levels in mask (bit i for
// SL i) keep their LFT port whatever their DLID's group: adaptive routing
// applies to the other SLs only. 0 (the default) is AR on every SL.
func (t *ARTable) SetStaticSLs(mask uint16) { t.static = mask }

// Adaptive reports whether a packet on sl may leave by a port of its
// DLID's group rather than the LFT's.
func (t *ARTable) Adaptive(sl uint8) bool { return t.static&(1<<(sl&15)) == 0 }
