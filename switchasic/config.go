package switchasic

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/ib"
)

// Queueing disciplines, as spelled in switch.queueing.
const (
	// QueueFIFO keeps one FIFO per input VL: a packet waits behind the head
	// of its VL even when its own output is free (head-of-line blocking).
	QueueFIFO = "fifo"
	// QueueVOQ keeps one virtual output queue per input VL and output, so no
	// packet waits behind a packet for another output.
	QueueVOQ = "voq"
)

// Multicast replication policies, as spelled in switch.mcast_replication
// (docs/switch.md, "Replication at a FIFO input").
const (
	// McastSplit: a multicast head takes, in every allocation round, the
	// outputs that are free and have credits, and leaves the rest for
	// later rounds (fanout splitting).
	McastSplit = "split"
	// McastHold: as McastSplit, except that a head whose round would
	// split its fanout while every output it would leave behind has
	// credits and frees within the input's crossbar hold of this round
	// withholds its request until they are all free, once per packet.
	McastHold = "hold"
)

// VLArbConfig is one VL arbitration table entry as a user writes it:
// {vl: 1, weight: 4}. Weight is in 64-byte units (ib-facts.md §3). Like
// OpenSM, the switch programs the entry with VL vl & ib.VLMask(vls), so with
// fewer than 15 VLs an entry for a VL the port lacks folds onto one it has
// (VLArbTables).
type VLArbConfig struct {
	VL     int `yaml:"vl"`     // VL 0..14 as written; folded to vl & ib.VLMask(vls)
	Weight int `yaml:"weight"` // 64-byte blocks per turn, 0..255; 0 = skipped
}

// Config is the `switch:` section: one switch ASIC's knobs. Every knob's
// default and source is in Defaults and docs/switch.md.
type Config struct {
	// Radix is the number of external ports, 2..256 (IBA 1.6; ib-facts.md §4).
	Radix int `yaml:"radix"`
	// VLs is the number of data VLs per port: 1, 2, 4, 8 or 15 (VLCap).
	VLs int `yaml:"vls"`
	// VLBufferBytes is each input port's static buffer per data VL, bytes,
	// a multiple of 64 (one credit is 64 bytes).
	VLBufferBytes int `yaml:"vl_buffer_bytes"`
	// SharedBufferBytes is each input port's pool shared by its VLs on top
	// of the static reservations, bytes, a multiple of 64; 0 = none.
	SharedBufferBytes int `yaml:"shared_buffer_bytes"`
	// Queueing is fifo or voq.
	Queueing string `yaml:"queueing"`
	// Allocator is the crossbar allocator: separable, islip or wavefront.
	Allocator string `yaml:"allocator"`
	// ISLIPIterations is the iSLIP request-grant-accept iterations per
	// allocation round.
	ISLIPIterations int `yaml:"islip_iterations"`
	// Speedup is how many crossbar connections one input may hold at once
	// (the allocator runs Speedup passes per round); 1 = no speedup.
	Speedup int `yaml:"speedup"`
	// DatapathBytes is the crossbar datapath width per port, bytes per core
	// cycle; with CoreClockMHz it sets the internal port rate.
	DatapathBytes int `yaml:"datapath_bytes"`
	// CoreClockMHz is the switch core clock; allocation happens on its edges.
	CoreClockMHz float64 `yaml:"core_clock_mhz"`
	// CutThrough forwards a packet's head before its tail is in; false =
	// store-and-forward.
	CutThrough bool `yaml:"cut_through"`
	// RouteCycles is the route-lookup (LFT + SL-to-VL) stage, core cycles.
	RouteCycles int `yaml:"route_cycles"`
	// AllocCycles is the crossbar allocation stage, core cycles.
	AllocCycles int `yaml:"alloc_cycles"`
	// XbarCycles is the crossbar traversal to the output wire, core cycles.
	XbarCycles int `yaml:"xbar_cycles"`
	// VLArbHigh and VLArbLow are the output ports' VL arbitration tables
	// (up to 64 entries each), each entry's VL folded to the port's VLs as
	// OpenSM does (VLArbTables).
	VLArbHigh []VLArbConfig `yaml:"vlarb_high"`
	VLArbLow  []VLArbConfig `yaml:"vlarb_low"`
	// VLHighLimit is LimitOfHighPriority in 4096-byte units, 0..255;
	// 255 = unbounded.
	VLHighLimit int `yaml:"vl_high_limit"`
	// SL2VL maps SL 0..15 to a VL, for every (input, output) pair unless the
	// fabric sets a pair's table; 16 entries, each < VLs, or 15 = drop. Empty
	// = OpenSM's default table with each VL masked as OpenSM masks it for
	// VLs (ib.VLMask; the same as reducing it modulo VLs).
	SL2VL []int `yaml:"sl2vl"`
	// SL2VLPairs overrides SL2VL for the (input, output) port pairs each
	// entry selects, on the switches it names; where entries overlap the
	// later one wins. The fabric builder resolves the port classes (which
	// ports face hosts, which go up the tree), so a switch built on its own
	// ignores them; empty = every pair uses SL2VL.
	SL2VLPairs []SL2VLPairConfig `yaml:"sl2vl_pairs,omitempty"`
	// McastReplication is how a multicast head at a FIFO input takes its
	// outputs when only some are free: split (McastSplit) or hold
	// (McastHold). A switch without an MFT ignores it.
	McastReplication string `yaml:"mcast_replication,omitempty"`
}

// SL2VLPairConfig is one switch.sl2vl_pairs entry: the SL-to-VL table the
// selected switches use from the selected input ports to the selected
// output ports (IBA 7.6.6: a switch's SLtoVLMappingTable is indexed by input
// and output port; OpenSM can only program one table per port type,
// qos_swe_sl2vl for switch external ports, and leaves per-pair tables to
// routing engines such as torus-2QoS).
type SL2VLPairConfig struct {
	// Switches is a glob over switch names ('*' any run, '?' one
	// character, brackets literal, as --trace-path); empty = every switch.
	Switches string `yaml:"switches,omitempty"`
	// In and Out select ports (PortSelector): a class (any, host, switch,
	// up, down) or IB port numbers such as "1-4,7" (or the YAML list
	// [1-4, 7]); empty = any.
	In  config.Items `yaml:"in,omitempty"`
	Out config.Items `yaml:"out,omitempty"`
	// SL2VL maps SL 0..15 to a VL on these pairs: 16 entries, each < VLs,
	// or 15 = drop.
	SL2VL []int `yaml:"sl2vl"`
}

// Port classes of switch.sl2vl_pairs' in and out. The fabric builder
// resolves them from the cables and the subnet manager's up/down ranks.
const (
	PortsAny    = "any"    // every port
	PortsHost   = "host"   // cabled to a host (a channel adapter)
	PortsSwitch = "switch" // cabled to another switch
	PortsUp     = "up"     // cabled to a switch nearer the up/down roots (a leaf's spine ports)
	PortsDown   = "down"   // cabled to a host or a switch farther from the roots
)

// PortClasses lists the port classes in the order the docs give them.
var PortClasses = []string{PortsAny, PortsHost, PortsSwitch, PortsUp, PortsDown}

// PortSelector is a parsed in or out of switch.sl2vl_pairs: a class, or a
// set of IB port numbers (1-based, as the topology and its port names
// number them).
type PortSelector struct {
	Class string // one of PortClasses, or "" when Ports is set
	Ports []int  // IB port numbers, ascending, without repeats, when Class is ""
}

// ParsePortSelector parses a class name or a port list ("3", "1-4,7");
// empty is any. key names the field in errors.
func ParsePortSelector(key, s string) (PortSelector, error) {
	if s == "" {
		return PortSelector{Class: PortsAny}, nil
	}
	for _, c := range PortClasses {
		if s == c {
			return PortSelector{Class: c}, nil
		}
	}
	bad := func(why string) error {
		return fmt.Errorf("%s: %q %s (allowed: any, host, switch, up, down, or IB port numbers 1 to %d such as \"1-4,7\")",
			key, s, why, components.MaxPorts)
	}
	var seen [components.MaxPorts + 1]bool
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var errB error
		if isRange {
			b, errB = strconv.Atoi(strings.TrimSpace(hi))
		}
		switch {
		case errA != nil || errB != nil:
			return PortSelector{}, bad("is not a port class or a list of port numbers")
		case a < 1:
			return PortSelector{}, bad(fmt.Sprintf("names port %d, which is not an external port", a))
		case b > components.MaxPorts:
			return PortSelector{}, bad(fmt.Sprintf("names port %d, which is not an external port", b))
		case a > b:
			return PortSelector{}, bad(fmt.Sprintf("has the range %d-%d, which runs backwards", a, b))
		}
		for p := a; p <= b; p++ {
			seen[p] = true
		}
	}
	var sel PortSelector
	for p, ok := range seen {
		if ok {
			sel.Ports = append(sel.Ports, p)
		}
	}
	return sel, nil
}

// String returns the selector as written in the config (a class, or the
// port list).
func (p PortSelector) String() string {
	if p.Class != "" {
		return p.Class
	}
	parts := make([]string, len(p.Ports))
	for i, x := range p.Ports {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

// openSMSL2VL is OpenSM's default qos_sl2vl: SL i → VL i for 0..14, SL15 →
// VL7 (linux-rdma/opensm doc/QoS_management_in_OpenSM.txt; ib-facts.md §3).
var openSMSL2VL = [16]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7}

// Defaults returns the switch defaults. Sources (ib-facts.md sections):
//
//   - radix 64: Quantum-2 QM9700, 64 × 400G (§8) [S].
//   - vls 15: OpenSM default max_vls 15 (§3) [P].
//   - vl_buffer_bytes 12800: 200 flits × 64 B per VL, the Mellanox flit
//     model's IBUF static credits (§3, ib_flit_sim) [P model default].
//   - shared_buffer_bytes 0: model choice (static buffers only).
//   - queueing voq, allocator islip, islip_iterations 1: model choice; one
//     iSLIP iteration already gives 100 % throughput under uniform traffic
//     (McKeown 1999).
//   - speedup 1: model choice (no speedup).
//   - datapath_bytes 64, core_clock_mhz 1000: 64 GB/s per port, 1.28 × a 4x
//     NDR data rate (50 GB/s, §1), the same kind of margin as the flit
//     model's 24 B × 250 MHz = 6 GB/s over 4x QDR's 4 GB/s (§3). Unconfirmed
//     for any real ASIC.
//   - route/alloc/xbar cycles 40/40/40: 120 ns at 1 GHz; with the link's
//     RS(544,514) codeword time on 4x NDR (12.8 ns, §1) a hop is ≈ 133 ns,
//     the 130 ns class of Quantum-2 (§8) [S]. The split over stages is
//     unconfirmed (the flit model uses 50 + 50 ns, §3).
//   - cut_through true: IB switches forward while still receiving (§8) [P].
//   - mcast_replication split: the model's original policy, kept as the
//     default so that earlier results stand; hold is the alternative
//     (docs/switch.md, "Replication at a FIFO input").
//   - vlarb_high 0:4, vlarb_low 1..14:4, vl_high_limit 0, sl2vl 0..14,7:
//     OpenSM QoS defaults (§3) [P], each VL masked to the port's VLs as
//     OpenSM programs them (ib.VLMask).
func Defaults() Config {
	low := make([]VLArbConfig, 0, 14)
	for vl := 1; vl <= 14; vl++ {
		low = append(low, VLArbConfig{VL: vl, Weight: 4})
	}
	return Config{
		Radix:             64,
		VLs:               15,
		VLBufferBytes:     200 * ib.CreditBytes,
		SharedBufferBytes: 0,
		Queueing:          QueueVOQ,
		Allocator:         components.AllocISLIP,
		ISLIPIterations:   1,
		Speedup:           1,
		DatapathBytes:     64,
		CoreClockMHz:      1000,
		CutThrough:        true,
		RouteCycles:       40,
		AllocCycles:       40,
		XbarCycles:        40,
		VLArbHigh:         []VLArbConfig{{VL: 0, Weight: 4}},
		VLArbLow:          low,
		VLHighLimit:       0,
		McastReplication:  McastSplit,
	}
}

// maxVLBlocks is the largest per-VL buffer the 12-bit credit counters can
// address: a limit at most half the counter range ahead (credit package).
const maxVLBlocks = ib.CreditModulus / 2

// Validate checks every knob and returns the first user error, naming the
// switch.xxx key, the bad value and what is allowed.
func (c *Config) Validate() error {
	if c.Radix < 2 || c.Radix > components.MaxPorts {
		return fmt.Errorf("switch.radix: %d is out of range (2 to %d)", c.Radix, components.MaxPorts)
	}
	if !ib.ValidVLCount(c.VLs) {
		return fmt.Errorf("switch.vls: %d is not a VL count an IB port supports (1, 2, 4, 8, 15)", c.VLs)
	}
	if c.VLBufferBytes < ib.CreditBytes || c.VLBufferBytes%ib.CreditBytes != 0 {
		return fmt.Errorf("switch.vl_buffer_bytes: %d is not a positive multiple of 64 (one credit is 64 bytes)", c.VLBufferBytes)
	}
	if c.SharedBufferBytes < 0 || c.SharedBufferBytes%ib.CreditBytes != 0 {
		return fmt.Errorf("switch.shared_buffer_bytes: %d is not a multiple of 64 at least 0", c.SharedBufferBytes)
	}
	if b := (c.VLBufferBytes + c.SharedBufferBytes) / ib.CreditBytes; b > maxVLBlocks {
		return fmt.Errorf("switch.vl_buffer_bytes: %d plus shared_buffer_bytes %d is %d credits, more than one VL's 12-bit credit window addresses (at most %d credits, %d bytes)",
			c.VLBufferBytes, c.SharedBufferBytes, b, maxVLBlocks, maxVLBlocks*ib.CreditBytes)
	}
	switch c.Queueing {
	case QueueFIFO, QueueVOQ:
	default:
		return fmt.Errorf("switch.queueing: %q is not a queueing discipline (fifo, voq)", c.Queueing)
	}
	switch c.McastReplication {
	case McastSplit, McastHold:
	default:
		return fmt.Errorf("switch.mcast_replication: %q is not a multicast replication policy (split, hold)", c.McastReplication)
	}
	known := false
	for _, n := range components.AllocatorNames() {
		known = known || n == c.Allocator
	}
	if !known {
		return fmt.Errorf("switch.allocator: %q is not an allocator (separable, islip, wavefront)", c.Allocator)
	}
	if c.ISLIPIterations < 1 || c.ISLIPIterations > c.Radix {
		return fmt.Errorf("switch.islip_iterations: %d is out of range (1 to radix %d)", c.ISLIPIterations, c.Radix)
	}
	if c.Speedup < 1 || c.Speedup > 8 {
		return fmt.Errorf("switch.speedup: %d is out of range (1 to 8)", c.Speedup)
	}
	if c.DatapathBytes < 1 || c.DatapathBytes > 4096 {
		return fmt.Errorf("switch.datapath_bytes: %d is out of range (1 to 4096)", c.DatapathBytes)
	}
	if math.IsNaN(c.CoreClockMHz) || c.CoreClockMHz < 1 || c.CoreClockMHz > 10000 {
		return fmt.Errorf("switch.core_clock_mhz: %v is out of range (1 to 10000)", c.CoreClockMHz)
	}
	for _, st := range []struct {
		key string
		v   int
	}{{"route_cycles", c.RouteCycles}, {"alloc_cycles", c.AllocCycles}, {"xbar_cycles", c.XbarCycles}} {
		if st.v < 0 || st.v > 100000 {
			return fmt.Errorf("switch.%s: %d is out of range (0 to 100000)", st.key, st.v)
		}
	}
	for _, tb := range []struct {
		key   string
		table []VLArbConfig
	}{{"vlarb_high", c.VLArbHigh}, {"vlarb_low", c.VLArbLow}} {
		if len(tb.table) > components.MaxVLArbEntries {
			return fmt.Errorf("switch.%s: %d entries, at most %d allowed", tb.key, len(tb.table), components.MaxVLArbEntries)
		}
		for i, e := range tb.table {
			if e.VL < 0 || e.VL > 14 {
				return fmt.Errorf("switch.%s[%d].vl: %d is not a data VL (0 to 14)", tb.key, i, e.VL)
			}
			if e.Weight < 0 || e.Weight > 255 {
				return fmt.Errorf("switch.%s[%d].weight: %d is out of range (0 to 255, in 64-byte units)", tb.key, i, e.Weight)
			}
		}
	}
	if c.VLHighLimit < 0 || c.VLHighLimit > 255 {
		return fmt.Errorf("switch.vl_high_limit: %d is out of range (0 to 255; 255 = unbounded)", c.VLHighLimit)
	}
	if vl := c.vlArbStarvedVL(); vl >= 0 {
		return fmt.Errorf("switch.vlarb_high/vlarb_low: VL %d (a data VL below vls %d) has no entry with weight > 0 (an entry's vl counts as vl & %d, as OpenSM masks it for %d VLs), so its packets could never leave",
			vl, c.VLs, ib.VLMask(c.VLs), c.VLs)
	}
	if len(c.SL2VL) != 0 {
		if len(c.SL2VL) != 16 {
			return fmt.Errorf("switch.sl2vl: %d entries, want 16 (one per SL) or none for the default", len(c.SL2VL))
		}
		if err := c.checkSL2VL("switch.sl2vl", c.SL2VL); err != nil {
			return err
		}
	}
	for i, e := range c.SL2VLPairs {
		key := fmt.Sprintf("switch.sl2vl_pairs[%d]", i)
		if len(e.SL2VL) != 16 {
			return fmt.Errorf("%s.sl2vl: %d entries, want 16 (one VL per SL)", key, len(e.SL2VL))
		}
		if err := c.checkSL2VL(key+".sl2vl", e.SL2VL); err != nil {
			return err
		}
		if _, err := ParsePortSelector(key+".in", string(e.In)); err != nil {
			return err
		}
		if _, err := ParsePortSelector(key+".out", string(e.Out)); err != nil {
			return err
		}
	}
	return nil
}

// checkSL2VL checks that every VL of an SL-to-VL table is a data VL of the
// port or 15 (drop).
func (c *Config) checkSL2VL(key string, table []int) error {
	for sl, vl := range table {
		if vl != ib.ManagementVL && (vl < 0 || vl >= c.VLs) {
			return fmt.Errorf("%s[%d]: vl %d is not a data VL of this port (0 to %d) or 15 (drop)", key, sl, vl, c.VLs-1)
		}
	}
	return nil
}

// vlArbStarvedVL returns a data VL of the port that no arbitration table
// entry with a weight above zero serves once the entries' VLs are folded
// (VLArbTables), or -1 if every one is served. c.VLs must be valid and the
// entries' VLs in 0..14.
func (c *Config) vlArbStarvedVL() int {
	var has [16]bool
	mask := ib.VLMask(c.VLs)
	for _, t := range [][]VLArbConfig{c.VLArbHigh, c.VLArbLow} {
		for _, e := range t {
			if e.Weight > 0 {
				has[uint8(e.VL)&mask] = true
			}
		}
	}
	for vl := 0; vl < c.VLs; vl++ {
		if !has[vl] {
			return vl
		}
	}
	return -1
}

// CheckPacketFits returns a user error if one VL's buffer cannot hold a
// packet of maxPacketBytes wire bytes (the largest packet the link's MTU
// allows): the credit rule lets a packet start only with credits for all its
// blocks, so such a packet could never be sent into the switch.
func (c *Config) CheckPacketFits(maxPacketBytes int) error {
	need := ib.Credits(maxPacketBytes) * ib.CreditBytes
	if c.VLBufferBytes < need {
		return fmt.Errorf("switch.vl_buffer_bytes: %d cannot hold one %d-byte packet of the link MTU (at least %d bytes needed)",
			c.VLBufferBytes, maxPacketBytes, need)
	}
	return nil
}

// CyclePS returns the core clock period in picoseconds.
func (c *Config) CyclePS() ib.PS { return ib.CyclePS(c.CoreClockMHz) }

// PipelinePS returns route + allocation + crossbar latency in picoseconds:
// the zero-load port-to-port delay from a head on a clock edge to the head on
// the output wire.
func (c *Config) PipelinePS() ib.PS {
	return ib.PS(c.RouteCycles+c.AllocCycles+c.XbarCycles) * c.CyclePS()
}

// SL2VLTable returns the default SL-to-VL table in force: SL2VL if set, else
// OpenSM's default with each VL masked as sl2vl_update_table masks it
// (ib.VLMask: SL15 → 7 & 3 = 3 with 4 VLs). For the VL counts a port
// supports the mask equals reducing modulo VLs.
func (c *Config) SL2VLTable() [16]uint8 {
	var t [16]uint8
	for sl := range t {
		if len(c.SL2VL) == 16 {
			t[sl] = uint8(c.SL2VL[sl])
		} else {
			t[sl] = uint8(openSMSL2VL[sl]) & ib.VLMask(c.VLs)
		}
	}
	return t
}

// PairTable returns entry i of SL2VLPairs's table as a switch programs it.
// c must be valid.
func (c *Config) PairTable(i int) [16]uint8 {
	var t [16]uint8
	for sl, vl := range c.SL2VLPairs[i].SL2VL {
		t[sl] = uint8(vl)
	}
	return t
}

// VLArbTables returns the arbitration tables as the switch's VL arbiters are
// programmed with them: each entry's VL folded to vl & ib.VLMask(VLs), as
// OpenSM's vlarb_update_table_block does to every table it writes, the
// defaults and a user's alike. With 2 VLs the default low table 1..14
// becomes 1, 0, 1, 0, ... (mask 1), so VL 0 gets the high table's turns and
// half the low table's; without the fold the entries for VLs 2..14 would
// never be ready and VL 0 would get only the high table's turns. c must be
// valid.
func (c *Config) VLArbTables() (high, low []components.VLArbEntry) {
	mask := ib.VLMask(c.VLs)
	conv := func(t []VLArbConfig) []components.VLArbEntry {
		out := make([]components.VLArbEntry, len(t))
		for i, e := range t {
			out[i] = components.VLArbEntry{VL: uint8(e.VL) & mask, Weight: uint8(e.Weight)}
		}
		return out
	}
	return conv(c.VLArbHigh), conv(c.VLArbLow)
}
