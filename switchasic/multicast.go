package switchasic

import (
	"fmt"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// Multicast LIDs (IBA 1.2 §4.1.1; ib-facts.md §4: 0xC000–0xFFFE, 0xFFFF is
// the permissive LID, never a group).
const (
	FirstMLID = 0xC000
	LastMLID  = 0xFFFE
)

// MFT is a switch's multicast forwarding table: per multicast LID the set
// of ports a packet to it leaves by (IBA's MulticastForwardingTable, a port
// mask per MLID; ib-facts.md §4, "MFT"). Ports are the model's 0-based
// external indices. The subnet manager fills it; the switch never sends a
// copy back out of the port the packet arrived on, whatever the mask says.
// It is dense from FirstMLID up to the highest MLID set (groups are
// numbered from FirstMLID), so a lookup is an index, not a map.
type MFT struct {
	masks []components.PortSet // masks[mlid-FirstMLID]
}

// NewMFT returns a table with no groups.
func NewMFT() *MFT { return &MFT{} }

// Set makes mlid's port mask ports (0-based). It is made at build time and
// may allocate.
func (t *MFT) Set(mlid uint16, ports components.PortSet) {
	if mlid < FirstMLID || mlid > LastMLID {
		panic(fmt.Sprintf("switchasic.MFT.Set: mlid %#x outside %#x..%#x", mlid, FirstMLID, LastMLID))
	}
	k := int(mlid - FirstMLID)
	for k >= len(t.masks) {
		t.masks = append(t.masks, components.PortSet{})
	}
	t.masks[k] = ports
}

// Lookup returns dlid's port mask; the empty set for a DLID that is not a
// multicast LID or has no entry.
func (t *MFT) Lookup(dlid uint16) components.PortSet {
	if dlid < FirstMLID || int(dlid-FirstMLID) >= len(t.masks) {
		return components.PortSet{}
	}
	return t.masks[dlid-FirstMLID]
}

// Entries returns the MLIDs with a non-empty mask, in increasing order, and
// their masks.
func (t *MFT) Entries() (mlids []uint16, masks []components.PortSet) {
	for k, m := range t.masks {
		if m.Any() {
			mlids = append(mlids, uint16(FirstMLID+k))
			masks = append(masks, m)
		}
	}
	return mlids, masks
}

// mcOwner is the port owner of a switch with an MFT: a packet whose DLID
// is a multicast LID with an entry is queued for its copies, any other
// goes to the unicast route stage (Switch.PacketArrived).
type mcOwner struct{ *Switch }

// PacketArrived implements link.Owner.
func (m mcOwner) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	sw := m.Switch
	if pkt.DLID >= FirstMLID && sw.lft.Lookup(pkt.DLID) == NoPort && sw.multicastArrived(int(p.Index), int(pkt.VL), pkt, head, tail) {
		return
	}
	sw.PacketArrived(p, pkt, head, tail)
}

// MFT returns the multicast forwarding table the switch forwards by
// (WithMFT), or nil. The table is the switch's own: a change takes effect
// at the next packet (the checkers' mutation tests break it this way).
func (sw *Switch) MFT() *MFT { return sw.mft }

// mcastOut marks an input entry as a multicast packet: its outputs are the
// remaining set of its mcState (entry.mc), not entry.out.
const mcastOut = -1

// mcState is a multicast packet at an input: the outputs it still has to
// be copied to. The packet stays at the head of its input VL's FIFO until
// this set is empty; its buffer blocks are released when the last copy's
// tail is through the crossbar.
type mcState struct {
	remaining components.PortSet // outputs not yet granted a copy
	arrived   ib.PS              // head arrival at the input
	// heldUntil is, under the hold policy, the round at which the head's
	// one held-back request ends (the last of the outputs it waited for
	// frees); 0 while it has not held back.
	heldUntil ib.PS
}

// multicastArrived queues a packet whose DLID has an MFT entry for the
// entry's ports less the arrival port and less the ports whose SL-to-VL
// table drops the packet's SL. It reports false when the DLID has no entry
// or no port is left (the packet is then dropped as having no route).
func (sw *Switch) multicastArrived(i, inVL int, pkt *ib.Packet, head, tail ib.PS) bool {
	mask := sw.mft.Lookup(pkt.DLID)
	mask.Clear(i) // never back out of the arrival port
	if inVL != ib.ManagementVL {
		for o := range mask.All() {
			if o >= sw.radix {
				mask.Clear(o)
				continue
			}
			if sw.sl2vl.VL(i, o, pkt.SL) == ib.ManagementVL {
				mask.Clear(o)
				sw.counters.DropSL2VL++
				sw.trace(head, sw.ports[i].Name, components.TraceDrop, pkt, i, o, "sl2vl")
			}
		}
	}
	q := sw.inputVL(i, inVL)
	if !mask.Any() || q == nil {
		return false // no entry (or a VL the port lacks: PacketArrived's panic)
	}
	q.occ.Add(head, int64(pkt.Credits()))
	k := sw.newMcast(mcState{remaining: mask, arrived: head})
	sw.counters.Received++
	sw.counters.McastReceived++
	ready := sw.ceilCycle(head) + sw.routePS
	if !sw.cutThrough {
		ready = sw.ceilCycle(tail) + sw.routePS
	}
	sw.enqueue(i, inVL, entry{pkt: pkt, tail: tail, ready: ready, out: mcastOut, mc: k, blocks: int32(pkt.Credits())})
	if sw.NumHooks() > 0 {
		sw.trace(head, sw.ports[i].Name, components.TraceBufEnq, pkt, i, -1, "")
	}
	sw.wake(max(ready, sw.inFreeBy[i]-sw.allocPS))
	return true
}

// copyVL is the VL a copy of a packet on sl from input i leaves output o
// on: VL15 stays on VL15, data takes the pair's SL-to-VL table.
func (sw *Switch) copyVL(i, inVL, o int, sl uint8) uint8 {
	if inVL == ib.ManagementVL {
		return ib.ManagementVL
	}
	return sw.sl2vl.VL(i, o, sl)
}

// grantCopy starts one copy of the multicast packet at the head of input
// i's VL inVL (a FIFO) through the crossbar to output o on VL v at round t.
// The first copy of a round takes one of the input's crossbar connections
// (the allocator's grant); the others of that round ride on it (shared: a
// crossbar drives one input's bytes to several outputs at once), so they
// leave the input together. Each copy reserves its own credits on its
// output, and has its own timing there, as doGrant's. When no output is
// left, the packet leaves the queue and its blocks are released when this
// (the last) copy's tail is through the crossbar: copies granted in
// earlier rounds were through earlier. It reports whether that was the
// last copy.
func (sw *Switch) grantCopy(i, inVL, o, v int, t ib.PS, shared bool) bool {
	in := &sw.in[i]
	q := sw.inputVL(i, inVL)
	e := &q.slots[q.ends[0].head]
	st := &sw.mcast[e.mc]
	orig := e.pkt
	cp := sw.s.NewPacketNumbered(orig.Seq)
	orig.SourceICRC() // a deferred ICRC now, from the source's payload
	buf := cp.Payload[:0]
	*cp = *orig // the same packet: seq, headers, CRCs; its own VL per output
	// and its own payload bytes: the original goes back to the packet pool
	// once its last copy is through the crossbar, and a packet taken from
	// the pool reuses its buffer, while the copies are still on their way.
	// The last copy takes the original's bytes and leaves it its own
	// buffer, so a group of one receiver copies nothing.
	rest := st.remaining
	rest.Clear(o)
	if rest.Any() {
		cp.Payload = append(buf, orig.Payload...)
	} else {
		orig.Payload = buf
	}
	cp.VL = uint8(v)
	in.rr = uint8((inVL + 1) & 15)
	bytes := cp.WireBytes()
	blocks := int(e.blocks)
	out := &sw.out[o]
	port := sw.ports[o]
	ser := port.Serialization(bytes)

	xbarIn := t + sw.allocPS
	xfer := ib.PS((bytes+int(sw.datapathBytes)-1)/int(sw.datapathBytes)) * sw.cycle
	xbarTail := max(xbarIn+xfer, sw.ceilCycle(e.tail))
	start := max(xbarIn+sw.xbarPS, xbarTail+sw.xbarPS-ser, out.wireFreeEst, port.BusyUntil())
	out.wireFreeEst = start + ser
	out.xbarFree = xbarTail
	sw.refreshOutput(o)
	if !shared {
		sw.takeXbar(i, xbarIn, xbarTail)
		sw.counters.McastRounds++
	}
	if v != ib.ManagementVL {
		out.vl[v].pending += int32(blocks)
	}
	if !sw.oneVL {
		out.vlarb.Commit(v, blocks)
	}
	out.stage(cp, start)
	ev := sw.s.Schedule(start, sw, evWireStart)
	ev.Port = int32(o)
	sw.staged(port, start)
	st.remaining.Clear(o)
	sw.counters.McastCopies++
	if sw.NumHooks() > 0 {
		sw.trace(t, port.Name, components.TraceArbGrant, cp, i, o, "")
	}
	last := !st.remaining.Any()
	if last {
		sw.counters.McastDone++
		sw.counters.McastHold += xbarTail - st.arrived
		sw.mcFree = append(sw.mcFree, e.mc)
		sw.dequeue(i, inVL, 0)
		if sw.agg != nil && orig.SLID == sw.agg.cfg.LID {
			sw.aggGranted() // the aggregation node's result, copied to the last of its ports
		}
		ev := sw.s.Schedule(xbarTail, sw, evRelease)
		ev.Port, ev.VL, ev.Arg, ev.Pkt = int32(i), int8(inVL), int64(blocks), orig
		if sw.NumHooks() > 0 {
			sw.trace(t, sw.ports[i].Name, components.TraceBufDeq, orig, i, -1, "")
		}
	}
	if in.nonEmpty != 0 {
		sw.wake(sw.inFreeBy[i] - sw.allocPS)
	}
	sw.wake(sw.outFreeFrom[o])
	return last
}

// grantMulticast is match's grant of output o to input i on VL v when
// the head the allocator granted is a multicast packet's (it reports false
// for a unicast head, which doGrant grants). The allocator gives the head
// one output; every other output the head asked for that no input is
// matched to in this pass or an earlier one is granted to it too (fanout
// splitting: a head takes in each round the outputs that are free, have
// credits and chose its VL; the rest wait for later rounds, the head
// staying in place). The copies of a round ride on one crossbar
// connection. matchedOut, winner and chosen are match's.
func (sw *Switch) grantMulticast(i, o, v int, t ib.PS, matchedOut *components.PortSet, winner *[components.MaxPorts]uint8, chosen *[components.MaxPorts]int8) bool {
	inVL := int(sw.candInVLs[(v*sw.radix+o)*sw.radix+i])
	q := sw.inputVL(i, inVL)
	if len(q.ends) != 1 || q.slots[q.ends[0].head].out != mcastOut {
		return false
	}
	// The outputs the allocator matched in this pass: taken by their own
	// grants, which the caller makes after this one.
	taken := *matchedOut
	for _, g := range sw.grant {
		if g >= 0 {
			taken.Set(g)
		}
	}
	winner[o] = uint8(i)
	matchedOut.Set(o)
	if sw.grantCopy(i, inVL, o, v, t, false) {
		return true
	}
	for o2 := range sw.req.Row(i).All() {
		if taken.Has(o2) || matchedOut.Has(o2) {
			continue
		}
		v2 := int(chosen[o2])
		if int(sw.candInVLs[(v2*sw.radix+o2)*sw.radix+i]) != inVL {
			continue // another input VL's head asked for o2
		}
		winner[o2] = uint8(i)
		matchedOut.Set(o2)
		if sw.grantCopy(i, inVL, o2, v2, t, true) {
			break // the packet's last copy: the queue's next head waits for its own round
		}
	}
	return true
}

// lookCopies is collectCandidates' look at a multicast head (slot k of
// input i's VL inVL, a FIFO): a candidate for every output it still has to
// be copied to, under the rules of a unicast head's (consider), each copy
// on its own output VL.
func (sw *Switch) lookCopies(i, inVL int, q *inputVL, k int32, t ib.PS, inFree bool, of *outputsFree, stalled components.PortSet) {
	e := &q.slots[k]
	if sw.mcHold {
		st := &sw.mcast[e.mc]
		if t < st.heldUntil {
			return // holding back: it asks for nothing until its outputs free
		}
		if st.heldUntil == 0 && inFree && e.ready <= t && sw.holdBack(i, inVL, e, st, t, of) {
			return
		}
	}
	for o := range sw.mcast[e.mc].remaining.All() {
		free := inFree && of.has(o)
		if (stalled.Has(o) || free) && e.ready <= t {
			v := int(sw.copyVL(i, inVL, o, e.pkt.SL))
			if v != ib.ManagementVL && !sw.hasCredits(o, v, int(e.blocks)) {
				sw.blocked[o] |= 1 << v
				sw.stallOuts.Set(o)
			} else if c := v*sw.radix + o; free && !sw.cand.Has(c, i) {
				sw.cand.Set(c, i)
				sw.candInVLs[c*sw.radix+i] = int8(inVL)
				sw.candVLs[o] |= 1 << v
				sw.touched.Set(o)
			}
		}
		if inFree && !free {
			sw.askFree(o)
		}
	}
}

// holdBack is the hold policy's look at a ready multicast head at a free
// input (switch.mcast_replication: hold; docs/switch.md, "Replication at a
// FIFO input"). When this round could grant some of the head's due outputs
// but not the others, and every one it would leave behind has credits now
// and frees by t + D, D being how long a grant in this round holds the
// input (its crossbar transfer, or until its tail is in), the head asks
// for nothing until the last of them frees, and then takes its outputs
// together. Splitting would take the free outputs now and the rest no
// earlier than t + D (the input is busy until then), holding the input
// until t + 2D at the earliest; held, the one round at f <= t + D frees
// the input by f + D <= t + 2D, so holding never frees the input later
// than splitting. An output short of credits frees at no time the switch
// knows, so it never holds a packet back. A packet holds back at most once
// (heldUntil stays set): from its held round on it asks as under split,
// so unicast traffic that takes its outputs one at a time cannot keep it
// waiting for them all at once. It reports whether the head held back.
func (sw *Switch) holdBack(i, inVL int, e *entry, st *mcState, t ib.PS, of *outputsFree) bool {
	xbarIn := t + sw.allocPS
	xfer := ib.PS((e.pkt.WireBytes()+int(sw.datapathBytes)-1)/int(sw.datapathBytes)) * sw.cycle
	limit := max(xbarIn+xfer, sw.ceilCycle(e.tail)) - sw.allocPS // t + D
	var until ib.PS
	free := false
	for o := range st.remaining.All() {
		v := int(sw.copyVL(i, inVL, o, e.pkt.SL))
		if v != ib.ManagementVL && !sw.hasCredits(o, v, int(e.blocks)) {
			return false
		}
		if of.has(o) {
			free = true
			continue
		}
		f := sw.ceilCycle(sw.outputFreeAt(o)) // the round at which o can be granted
		if f > limit {
			return false
		}
		until = max(until, f)
	}
	if !free || until == 0 {
		return false // nothing free (no split to avoid), or everything free (no split)
	}
	st.heldUntil = until
	sw.counters.McastHeld++
	sw.wake(until)
	return true
}

// newMcast stores a queued multicast packet's state in a free slot of
// sw.mcast (growing it only past the most packets ever queued at once)
// and returns the slot, for its entry's mc.
func (sw *Switch) newMcast(st mcState) int32 {
	if n := len(sw.mcFree); n > 0 {
		k := sw.mcFree[n-1]
		sw.mcFree = sw.mcFree[:n-1]
		sw.mcast[k] = st
		return k
	}
	sw.mcast = append(sw.mcast, st)
	return int32(len(sw.mcast) - 1)
}
