package switchasic

import "github.com/hcasim/hcasim/ib"

// FlowletEntries is the size of an AR switch's flowlet table: the flows
// whose port it remembers at once. A flow is found by a hash of its
// (source LID, destination LID, SL), one entry per hash value (direct
// mapped, as a hardware flow table is indexed); 4096 entries hold every
// flow a switch of the fabrics modelled here carries at once in the
// tests, and a collision is counted (FlowletStats.Collisions).
const FlowletEntries = 4096

// flowletTable is an AR switch's flowlet state (Builder.WithARFlowlet): per
// flow, the port its current flowlet leaves on and when its latest packet
// arrived. A packet that arrives less than gap after its flow's previous
// one takes that port; after an idle gap of at least gap it starts a new
// flowlet, whose port is chosen as per-packet AR chooses (Switch.adaptive).
// While a flow keeps one port through a switch its packets take one path,
// and one path with FIFO queues per (input, output, VL) keeps them in
// order; an idle gap longer than the difference between two paths' delays
// lets the flow move without overtaking itself (the flowlet argument of
// Kandula et al., "Dynamic Load Balancing Without Packet Reordering",
// SIGCOMM CCR 37(2), 2007). The table is allocated once, at build time.
type flowletTable struct {
	gap     ib.PS // idle gap that ends a flowlet
	entries []flowletEntry
	shift   uint // 64 − log2(len(entries)): the hash's top bits index the table
	stats   FlowletStats
}

// flowletEntry is one flow's state: tag is 0 when empty, else
// (flow key + 1) << 8 | port (0-based, the radix is at most 256).
type flowletEntry struct {
	tag  uint64
	last ib.PS // head arrival of the flow's latest packet at this switch
}

// FlowletStats counts an AR switch's flowlet decisions over the whole run.
type FlowletStats struct {
	Flowlets   uint64 // packets that started a flowlet (a port chosen and remembered)
	Kept       uint64 // packets that took their flowlet's remembered port
	Collisions uint64 // packets whose entry held another flow's live flowlet: routed on their own, not remembered
}

func newFlowletTable(gap ib.PS, entries int) *flowletTable {
	bits := uint(0)
	for 1<<bits < entries {
		bits++
	}
	return &flowletTable{gap: gap, entries: make([]flowletEntry, 1<<bits), shift: 64 - bits}
}

// flowletKey packs a flow's identity into 36 bits.
func flowletKey(pkt *ib.Packet) uint64 {
	return uint64(pkt.SLID)<<20 | uint64(pkt.DLID)<<4 | uint64(pkt.SL&15)
}

// flowlet returns the port of group g (the DLID's AR group; lftPort its LFT
// port) that a data packet arriving on input i at head leaves on, under
// flowlet stickiness: its flow's remembered port while the flow's packets
// arrive less than the gap apart (and that port's SL-to-VL does not drop
// the SL), else a port chosen now (Switch.adaptive) and remembered. An
// entry that holds another flow's live flowlet is left to it: this packet
// is routed on its own. Nothing is allocated.
func (sw *Switch) flowlet(i int, pkt *ib.Packet, head ib.PS, lftPort int, g []int16, minimal int) int {
	f := sw.flowlets
	key := flowletKey(pkt) + 1
	e := &f.entries[(key*0x9E3779B97F4A7C15)>>f.shift] // Fibonacci hashing
	live := e.tag != 0 && head-e.last < f.gap
	switch {
	case live && e.tag>>8 == key:
		if p := int(e.tag & 0xFF); sw.sl2vl.VL(i, p, pkt.SL) != ib.ManagementVL {
			e.last = head
			f.stats.Kept++
			return p
		}
	case live:
		f.stats.Collisions++
		return sw.arChoose(i, pkt, lftPort, g, minimal)
	}
	p := sw.arChoose(i, pkt, lftPort, g, minimal)
	e.tag, e.last = key<<8|uint64(p), head
	f.stats.Flowlets++
	return p
}

// FlowletStats returns the switch's flowlet counts (Builder.WithARFlowlet),
// zero without flowlets.
func (sw *Switch) FlowletStats() FlowletStats {
	if sw.flowlets == nil {
		return FlowletStats{}
	}
	return sw.flowlets.stats
}
