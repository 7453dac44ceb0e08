package components

import "fmt"

// VLArbEntry is one entry of a VL arbitration table (IBA 7.6.9 VLArbitrationTable;
// ib-facts.md §3 "VLArb entry"): a data VL and the number of 64-byte blocks it
// may send when its turn comes. Weight 0 means the entry is skipped. The same VL
// may appear in many entries and in both tables.
type VLArbEntry struct {
	VL     uint8 // data VL 0..14; VL15 is never arbitrated by a table
	Weight uint8 // 64-byte blocks per turn, 0..255; 0 = entry skipped
}

const (
	// MaxVLArbEntries is the largest VL arbitration table (VLArbHighCap and
	// VLArbLowCap are at most 64; ib-facts.md §3, opensm osm_qos.c).
	MaxVLArbEntries = 64
	// HighLimitUnbounded is the LimitOfHighPriority value that lets the high
	// table starve the low table (ib-facts.md §3, opensm QoS doc).
	HighLimitUnbounded = 255
	// HighLimitBlocks is one LimitOfHighPriority unit, 4096 bytes, in 64-byte
	// blocks.
	HighLimitBlocks = 4096 / 64
	// highCountMax saturates the high-priority block counter: it only ever needs
	// to reach 254 × 64 = 16256, so 15 bits suffice (the RTL counter is 15 bits).
	highCountMax = 1<<15 - 1
)

// VLArbiter is the InfiniBand output-port VL arbiter (IBA 7.6.9; ib-facts.md §3
// lines on VLArb tables and LimitOfHighPriority): the Go model of
// rtl/verilog/vl_arbiter.v. Pick proposes the VL to send next and changes no
// arbitration state; Commit charges the packet that was sent.
//
// Our reading of the spec, which the RTL implements identically:
//
//   - VL15 (subnet management) always goes first when ready; it is not in any
//     table and charges nothing (C7-18: VL15 is not flow-controlled).
//   - Each table is walked round-robin from its current entry. The current
//     entry keeps the turn while its remaining weight is > 0 and its VL is
//     ready; a packet is charged ceil(bytes/64) blocks and the packet that takes
//     the remaining weight to zero or below still completes ("a packet is
//     counted if it begins transmission before the weight is used up"). When
//     the current entry is exhausted or its VL is not ready, the walk moves to
//     the next entry (wrapping) with weight > 0 whose VL is ready, and that
//     entry starts with its full weight. Unused weight of a skipped entry is
//     forfeited.
//   - The high table has priority over the low table, except that once
//     LimitOfHighPriority × 4096 bytes of high-priority data have been sent
//     while the low table had a sendable VL, one low-priority packet goes.
//     A high packet is counted if it starts before the limit is reached, so
//     limit 0 means one high packet, then a low-priority opportunity.
//     Limit 255 is unbounded: the low table only sends when no high entry can.
//     The counter restarts at 0 when a low packet is sent, and also when a high
//     packet is sent while the low table had nothing to send (low was not
//     being held back, so there is no debt to repay).
//   - A table entry whose VL the port does not have is simply never ready.
//     (A subnet manager never writes one: OpenSM masks every entry's VL to
//     the port's VLs, which switchasic.Config.VLArbTables does too.)
//
// A VLArbiter may be copied by value before use: the copies share the
// read-only tables and keep separate walk state (a switch keeps one copy per
// output inside its output unit).
type VLArbiter struct {
	high, low vlTable
	// limit is LimitOfHighPriority in 4096-byte units; HighLimitUnbounded = no limit.
	limit uint8
	// highCount is the 64-byte blocks of high-priority data sent since the
	// last low-priority packet while the low table had a sendable VL;
	// saturates at highCountMax.
	highCount int
	// lastReady is the ready mask the last Pick saw, so Commit charges the
	// table entry Pick chose. It is an input latch, not arbitration state.
	lastReady uint16
}

// vlTable is one arbitration table with its walk position.
type vlTable struct {
	entries []VLArbEntry
	idx     int // current entry, 0..len(entries)-1
	remain  int // blocks the current entry may still start a packet with; 0 = used up
}

// vlClass says which part of the arbiter a decision came from.
type vlClass uint8

const (
	vlNone vlClass = iota
	vlManagement
	vlHigh
	vlLow
)

type vlDecision struct {
	vl    int     // chosen VL, -1 if none
	class vlClass // where it came from
	entry int     // table entry for vlHigh / vlLow
}

// ValidateVLArbTable checks a table a user configured: at most 64 entries,
// each VL in 0..14. field names the table in the message (for example
// "switch.vlarb_high").
func ValidateVLArbTable(field string, table []VLArbEntry) error {
	if len(table) > MaxVLArbEntries {
		return fmt.Errorf("%s: %d entries, at most %d allowed", field, len(table), MaxVLArbEntries)
	}
	for i, e := range table {
		if e.VL > 14 {
			return fmt.Errorf("%s[%d]: vl %d is not a data VL (0..14)", field, i, e.VL)
		}
	}
	return nil
}

// NewVLArbiter returns an arbiter with the given high- and low-priority tables
// (each up to 64 entries, VLs 0..14; the slices are copied) and
// LimitOfHighPriority in 4096-byte units (255 = unbounded, 0 = one high
// packet). Both walks start at entry 0. It panics on a table that
// ValidateVLArbTable rejects: the config layer validates user input first.
func NewVLArbiter(high, low []VLArbEntry, limitOfHighPriority uint8) *VLArbiter {
	for _, t := range []struct {
		name  string
		table []VLArbEntry
	}{{"high", high}, {"low", low}} {
		if err := ValidateVLArbTable(t.name, t.table); err != nil {
			panic("components.NewVLArbiter: " + err.Error())
		}
	}
	return &VLArbiter{
		high:  newVLTable(high),
		low:   newVLTable(low),
		limit: limitOfHighPriority,
	}
}

// newVLTable copies entries and parks the walk on the last entry with no
// weight left, so the first choice scans from entry 0.
func newVLTable(entries []VLArbEntry) vlTable {
	return vlTable{entries: append([]VLArbEntry(nil), entries...), idx: max(len(entries)-1, 0)}
}

// Pick returns the VL to send next given ready, where bit v is set when VL v
// has a packet at the head of its queue and enough credits for it, or -1 if
// nothing can go. It changes no arbitration state (it latches ready for
// Commit).
func (a *VLArbiter) Pick(ready uint16) int {
	a.lastReady = ready
	return a.decide(ready).vl
}

// Commit charges a packet of blocks 64-byte blocks (ib.Credits of its wire
// bytes) sent on vl: the table entry's remaining weight, the table pointer and
// the high-priority counter. vl is normally the value Pick just returned; a
// VL that Pick did not choose is charged to the first sendable entry for it in
// the high table, else the low table, else nothing. It panics if blocks < 1.
func (a *VLArbiter) Commit(vl int, blocks int) {
	if blocks < 1 {
		panic(fmt.Sprintf("components.VLArbiter.Commit: vl %d blocks %d, want >= 1", vl, blocks))
	}
	d := a.decide(a.lastReady)
	if d.vl != vl {
		d = a.decideFor(vl)
	}
	switch d.class {
	case vlHigh:
		if a.low.choose(a.lastReady&0x7fff) >= 0 {
			a.highCount = min(a.highCount+blocks, highCountMax)
		} else {
			a.highCount = 0
		}
		a.high.charge(d.entry, blocks)
	case vlLow:
		a.highCount = 0
		a.low.charge(d.entry, blocks)
	}
}

// HighCount returns the high-priority blocks counted against
// LimitOfHighPriority (for traces and tests).
func (a *VLArbiter) HighCount() int { return a.highCount }

// decide is the combinational arbitration function of the RTL.
func (a *VLArbiter) decide(ready uint16) vlDecision {
	if ready&(1<<15) != 0 {
		return vlDecision{vl: 15, class: vlManagement}
	}
	ready &= 0x7fff
	h := a.high.choose(ready)
	l := a.low.choose(ready)
	switch {
	case l >= 0 && (h < 0 || a.highLimitReached()):
		return vlDecision{vl: int(a.low.entries[l].VL), class: vlLow, entry: l}
	case h >= 0:
		return vlDecision{vl: int(a.high.entries[h].VL), class: vlHigh, entry: h}
	}
	return vlDecision{vl: -1}
}

// decideFor finds where a packet on vl that Pick did not choose is charged.
func (a *VLArbiter) decideFor(vl int) vlDecision {
	if vl < 0 || vl > 14 {
		return vlDecision{vl: vl, class: vlManagement}
	}
	only := uint16(1) << vl
	if h := a.high.choose(only); h >= 0 {
		return vlDecision{vl: vl, class: vlHigh, entry: h}
	}
	if l := a.low.choose(only); l >= 0 {
		return vlDecision{vl: vl, class: vlLow, entry: l}
	}
	return vlDecision{vl: vl, class: vlNone}
}

// highLimitReached reports whether the high table has used up
// LimitOfHighPriority: a high packet may start while the count is below
// limit × 64 blocks, and limit 0 still allows one packet.
func (a *VLArbiter) highLimitReached() bool {
	if a.limit == HighLimitUnbounded {
		return false
	}
	return a.highCount > 0 && a.highCount >= int(a.limit)*HighLimitBlocks
}

// choose returns the entry that sends next among ready VLs, or -1: the
// current entry if it has weight left and its VL is ready, else the next entry
// after it (wrapping, ending at the current entry itself with its full weight)
// with weight > 0 and a ready VL.
func (t *vlTable) choose(ready uint16) int {
	n := len(t.entries)
	if n == 0 {
		return -1
	}
	if t.remain > 0 && ready&(1<<t.entries[t.idx].VL) != 0 {
		return t.idx
	}
	for k := 1; k <= n; k++ {
		j := t.idx + k
		if j >= n {
			j -= n
		}
		e := t.entries[j]
		if e.Weight > 0 && ready&(1<<e.VL) != 0 {
			return j
		}
	}
	return -1
}

// charge records a packet of blocks sent from entry j: j becomes current,
// starting with its full weight unless it already was current with weight
// left; the packet that uses up the weight completes and leaves remain 0.
func (t *vlTable) charge(j, blocks int) {
	if j != t.idx || t.remain == 0 {
		t.idx = j
		t.remain = int(t.entries[j].Weight)
	}
	t.remain = max(t.remain-blocks, 0)
}
