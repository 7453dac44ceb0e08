package switchasic

import (
	"fmt"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// evAggIn is a packet for the aggregation node whose tail is in (Port =
// input, VL = its VL, Pkt = the packet). The AN handles its own events, so
// the switch's event dispatch is what it was without one.
const evAggIn uint8 = 1

// evAggFree is the ALU done with a reduced fragment: its slot (Arg)
// frees.
const evAggFree uint8 = 2

// evAggSend is the AN's send queue offering its next reduced fragment to
// the crossbar, the one before it granted.
const evAggSend uint8 = 3

// AggConfig is one switch's SHARP aggregation node (AN) for one
// aggregation tree, as the Aggregation Manager sets it up: which ports its
// children's fragments come in on, where the reduced fragment goes, and
// the AN's resources. Ports are the model's 0-based indices.
type AggConfig struct {
	// LID is the AN's address: a packet to it (DLID) with DestQP QPN is a
	// fragment the AN takes in instead of forwarding (the switch's own LID:
	// the AN sits behind its port 0).
	LID uint16
	QPN uint32
	// Children are the ports a child's fragments arrive on: member hosts'
	// ports and the tree links down; every fragment index takes exactly one
	// from each.
	Children components.PortSet
	// ParentLID is the parent AN's LID, 0 at the root. A reduced fragment
	// goes to it as a packet routed by the LFT.
	ParentLID uint16
	// ResultMLID is the multicast group the root sends the result down on
	// (the switches' MFTs replicate it to every member); the root only.
	ResultMLID uint16
	// OSTs is the number of fragment slots (SHARP's outstanding
	// transactions): fragment f takes slot f mod OSTs; a fragment whose
	// slot holds an earlier one waits at its input, holding its credits.
	OSTs int
	// FragmentBytes is the largest fragment payload a slot holds.
	FragmentBytes int
	// ALUPSPerByte is the ALU's time per payload byte it reduces
	// (1/throughput), 0 for an ALU as fast as its inputs.
	ALUPSPerByte ib.PS
	// ALULatency is from the ALU's end with the last child's fragment to
	// the reduced fragment entering the route stage (and its slot freeing).
	ALULatency ib.PS
}

// AggCounters are the aggregation node's counts.
type AggCounters struct {
	FragmentsIn uint64 // child fragments taken in
	Reduced     uint64 // fragments fully reduced and sent on (up, or down at the root)
	Stalls      uint64 // fragments that found their slot held by an earlier fragment and waited
	StallPS     ib.PS  // time those fragments waited at their input
	SlotsMax    int    // most slots in use at once
	SlotPS      ib.PS  // slot-time: slots in use integrated over time (mean occupancy = SlotPS / window)
}

// aggSlot is one OST: a fragment being reduced, from its first child's
// fragment to the ALU's end with its last.
type aggSlot struct {
	busy  bool
	frag  uint32             // fragment index (the packets' immediate)
	got   components.PortSet // children whose contribution is in
	count int                // len(got)
	acc   []byte             // running sum, FragmentBytes
	n     int                // payload length of the fragment
}

// aggSend is a reduced fragment waiting for the AN's send queue: the
// input whose buffer holds it and the input queue entry it becomes.
type aggSend struct {
	in, inVL int
	e        entry
}

// aggWait is a fragment whose tail is in, queued at its input for the ALU
// (it waits there while its slot holds an earlier fragment).
type aggWait struct {
	pkt     *ib.Packet
	inVL    int
	since   ib.PS // tail in
	stalled bool  // found its slot held (counted once)
}

// aggNode is the switch's AN state.
type aggNode struct {
	cfg      AggConfig
	children int
	slots    []aggSlot
	wait     [][]aggWait // per input port, in arrival order, from whead
	whead    []int
	aluFree  ib.PS  // when the ALU finishes the fragment it is adding
	psn      uint32 // the next reduced fragment's PSN (24 bits)
	inUse    int
	lastT    ib.PS // last time inUse changed
	counters AggCounters
	sw       *Switch
	path     string // trace path of the AN's own inject/deliver events
	// The AN's send queue: its reduced fragments go to the crossbar one at
	// a time, in the order they were numbered (their PSNs), as from one
	// send queue behind one port. sending is set while one is in an input
	// queue (or the next is on its way there, evAggSend); the rest wait in
	// sendQ from sendHead, each still holding its input buffer blocks.
	// Offering them all at once let the crossbar's arbitration between the
	// inputs they sit at reorder the AN's packet stream.
	sendQ    []aggSend
	sendHead int
	sending  bool
	// mutate, when set, is called on each child fragment's payload before
	// it is added (tests: a corrupting AN; SetAggMutation).
	mutate func(frag uint32, port int, payload []byte) bool
}

// SetAggNode makes the switch an aggregation node of one tree: every
// port's packets go through aggOwner, which takes the AN's fragments
// aside. Call it after Build, before the run. A FIFO switch with an MFT
// only (the result goes down by multicast replication).
func (sw *Switch) SetAggNode(c AggConfig) error {
	if sw.mft == nil || sw.cfg.Queueing != QueueFIFO {
		return fmt.Errorf("switch %s: an aggregation node needs fifo input queueing and an MFT", sw.name)
	}
	if c.OSTs < 1 || c.FragmentBytes < 1 || !c.Children.Any() {
		return fmt.Errorf("switch %s: aggregation node with %d OSTs, %d-byte fragments, children %v", sw.name, c.OSTs, c.FragmentBytes, c.Children)
	}
	a := &aggNode{cfg: c, slots: make([]aggSlot, c.OSTs), wait: make([][]aggWait, sw.radix), whead: make([]int, sw.radix), sw: sw, path: sw.name + ".AN"}
	for k := range a.slots {
		a.slots[k].acc = make([]byte, c.FragmentBytes)
	}
	for range c.Children.All() {
		a.children++
	}
	sw.agg = a
	for _, p := range sw.ports {
		p.Owner = aggOwner{sw}
	}
	return nil
}

// AggCounters returns the aggregation node's counts (zero without one).
func (sw *Switch) AggCounters() (AggCounters, bool) {
	if sw.agg == nil {
		return AggCounters{}, false
	}
	a := sw.agg
	c := a.counters
	c.SlotPS += ib.PS(a.inUse) * (sw.s.Now() - a.lastT)
	return c, true
}

// SetAggMutation installs a test hook that may change a child fragment's
// payload before the ALU adds it, or drop the contribution (return false:
// the fragment is counted in but not added). Tests only.
func (sw *Switch) SetAggMutation(f func(frag uint32, port int, payload []byte) bool) {
	sw.agg.mutate = f
}

// aggOwner is the port owner of an AN switch: the AN's fragments go to
// it, any other packet to the multicast or unicast stages.
type aggOwner struct{ *Switch }

// PacketArrived implements link.Owner.
func (m aggOwner) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	sw := m.Switch
	a := sw.agg
	if pkt.DLID != a.cfg.LID || pkt.DestQP != a.cfg.QPN || pkt.VL == ib.ManagementVL {
		mcOwner{sw}.PacketArrived(p, pkt, head, tail)
		return
	}
	i := int(p.Index)
	if !a.cfg.Children.Has(i) {
		panic(fmt.Sprintf("switchasic %s: aggregation fragment %d (seq %d) arrived on port %d, not a child of the tree", sw.name, pkt.Imm, pkt.Seq, i))
	}
	sw.counters.Received++
	q := sw.inputVL(i, int(pkt.VL))
	q.occ.Add(head, int64(pkt.Credits()))
	if sw.NumHooks() > 0 {
		sw.trace(head, p.Name, components.TraceBufEnq, pkt, i, -1, "")
	}
	// The ALU reads a whole fragment: it acts on the clock edge after the
	// tail (store-and-forward into the AN, whatever switch.cut_through).
	ev := sw.s.Schedule(sw.ceilCycle(tail), a, evAggIn)
	ev.Port, ev.VL, ev.Pkt = int32(i), int8(pkt.VL), pkt
}

// HandleEvent implements components.EventHandler: a fragment's tail is
// in, or the ALU is through with a reduced fragment.
func (a *aggNode) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case evAggIn:
		a.sw.aggIn(int(ev.Port), int(ev.VL), ev.Pkt)
	case evAggFree:
		a.freeSlot(&a.slots[ev.Arg], ev.At())
		a.sw.aggRetry()
	case evAggSend:
		x := a.sendQ[a.sendHead]
		a.sendQ[a.sendHead] = aggSend{}
		a.sendHead++
		if a.sendHead == len(a.sendQ) {
			a.sendQ, a.sendHead = a.sendQ[:0], 0
		}
		a.sw.aggOffer(x.in, x.inVL, x.e)
	default:
		panic(fmt.Sprintf("switchasic %s: aggregation node event kind %d", a.sw.name, ev.Kind))
	}
}

// aggIn queues a fragment whose tail is in behind the earlier ones of its
// input and lets the input's queue into the ALU.
func (sw *Switch) aggIn(i, inVL int, pkt *ib.Packet) {
	a := sw.agg
	a.wait[i] = append(a.wait[i], aggWait{pkt: pkt, inVL: inVL, since: sw.s.Now()})
	if sw.aggDrain(i) {
		sw.aggRetry() // a slot freed: another input's fragment may go
	}
}

// aggDrain takes input i's waiting fragments into the ALU in order while
// their slots are free or already theirs. A fragment whose slot holds an
// earlier fragment stays, with its input buffer blocks (credits) held:
// back-pressure, never a drop.
func (sw *Switch) aggDrain(i int) (reduced bool) {
	a := sw.agg
	now := sw.s.Now()
	for a.whead[i] < len(a.wait[i]) {
		w := &a.wait[i][a.whead[i]]
		pkt := w.pkt
		s := &a.slots[int(pkt.Imm)%len(a.slots)]
		if s.busy && s.frag != pkt.Imm {
			if !w.stalled {
				w.stalled = true
				a.counters.Stalls++
			}
			return reduced
		}
		if w.stalled {
			a.counters.StallPS += now - w.since
		}
		inVL := w.inVL
		*w = aggWait{}
		a.whead[i]++
		if a.whead[i] == len(a.wait[i]) {
			a.wait[i], a.whead[i] = a.wait[i][:0], 0
		}
		if sw.aggAbsorb(i, inVL, pkt, s) {
			reduced = true
		}
	}
	return reduced
}

// aggAbsorb adds one child's fragment into its slot. The ALU takes
// fragments one at a time (ALUPSPerByte per byte); the fragment's input
// buffer frees when the ALU has read it. The last child's fragment becomes
// the reduced one: its packet, payload overwritten with the sum, is queued
// at its input for the parent (LFT) or, at the root, for the result
// group's MFT ports, ALULatency after the ALU is through.
func (sw *Switch) aggAbsorb(i, inVL int, pkt *ib.Packet, s *aggSlot) (reduced bool) {
	a := sw.agg
	now := sw.s.Now()
	n := pkt.PayloadLen
	if n > a.cfg.FragmentBytes {
		panic(fmt.Sprintf("switchasic %s: aggregation fragment %d of %d bytes, slots hold %d", sw.name, pkt.Imm, n, a.cfg.FragmentBytes))
	}
	if !s.busy {
		*s = aggSlot{busy: true, frag: pkt.Imm, acc: s.acc, n: n}
		clear(s.acc[:n])
		a.counters.SlotPS += ib.PS(a.inUse) * (now - a.lastT)
		a.lastT = now
		a.inUse++
		a.counters.SlotsMax = max(a.counters.SlotsMax, a.inUse)
	}
	if s.got.Has(i) || n != s.n {
		panic(fmt.Sprintf("switchasic %s: aggregation fragment %d from port %d twice or of another length (%d, slot %d)", sw.name, pkt.Imm, i, n, s.n))
	}
	s.got.Set(i)
	s.count++
	a.counters.FragmentsIn++
	blocks := pkt.Credits()
	if sw.NumHooks() > 0 {
		// The fragment leaves flight here: the AN is its destination.
		sw.trace(now, sw.ports[i].Name, components.TraceBufDeq, pkt, i, -1, "")
		sw.trace(now, a.path, components.TraceDeliver, pkt, i, -1, "")
	}
	add := true
	if a.mutate != nil {
		// A broken ALU (tests): what it adds is not what arrived.
		add = a.mutate(pkt.Imm, i, pkt.Payload[:n])
	}
	if add {
		for k, b := range pkt.Payload[:n] {
			s.acc[k] += b // uint8 sum, wrapping: the collectives' data type
		}
	}
	start := max(now, a.aluFree)
	a.aluFree = start + ib.PS(n)*a.cfg.ALUPSPerByte
	if s.count < a.children {
		ev := sw.s.Schedule(a.aluFree, sw, evRelease)
		ev.Port, ev.VL, ev.Arg, ev.Pkt = int32(i), int8(inVL), int64(blocks), pkt
		return false
	}
	// Reduced: the last fragment's packet carries the sum on, in the input
	// buffer space it holds (the same size: every fragment has the same
	// headers).
	copy(pkt.Payload[:n], s.acc[:n])
	a.counters.Reduced++
	// The slot holds the sum until the ALU is through with it.
	if done := a.aluFree + a.cfg.ALULatency; done > now {
		ev := sw.s.Schedule(done, a, evAggFree)
		ev.Arg = int64(int(pkt.Imm) % len(a.slots))
	} else {
		a.freeSlot(s, now)
		reduced = true
	}
	seq := sw.s.NewPacketNumbered(sw.s.ReserveSeqs(1))
	pkt.Seq = seq.Seq
	sw.s.FreePacket(seq)
	// The AN sends as its own source (SLID) on its own packet sequence:
	// the last child's PSN belongs to that child's stream, and which child
	// comes last varies from fragment to fragment.
	pkt.SLID = a.cfg.LID
	pkt.PSN = a.psn
	a.psn = (a.psn + 1) & 0xFFFFFF
	pkt.InjectAt = now
	pkt.Hops = 0
	ready := sw.ceilCycle(a.aluFree+a.cfg.ALULatency) + sw.routePS
	if a.cfg.ParentLID != 0 {
		pkt.DLID = a.cfg.ParentLID
	} else {
		pkt.DLID, pkt.DestQP = a.cfg.ResultMLID, ib.MulticastQPN
	}
	pkt.ICRC = ib.ComputeICRC(pkt)
	if sw.NumHooks() > 0 {
		sw.trace(now, a.path, components.TraceInject, pkt, -1, -1, "")
		sw.trace(now, sw.ports[i].Name, components.TraceBufEnq, pkt, i, -1, "")
	}
	if a.cfg.ParentLID != 0 {
		o := sw.lft.Lookup(pkt.DLID)
		if o == NoPort || o >= sw.radix {
			panic(fmt.Sprintf("switchasic %s: no route to the parent aggregation node LID %d", sw.name, pkt.DLID))
		}
		outVL := sw.sl2vl.VL(i, o, pkt.SL)
		sw.aggSend(i, inVL, entry{pkt: pkt, tail: now, ready: ready, out: int16(o), outVL: outVL, blocks: int32(blocks)})
	} else {
		mask := sw.mft.Lookup(pkt.DLID)
		if !mask.Any() {
			panic(fmt.Sprintf("switchasic %s: the result group %#x has no MFT entry at the root", sw.name, pkt.DLID))
		}
		// Every tree port gets a copy, the one the last fragment came in
		// on too: the result goes back to every child.
		k := sw.newMcast(mcState{remaining: mask, arrived: now})
		sw.counters.McastReceived++
		sw.aggSend(i, inVL, entry{pkt: pkt, tail: now, ready: ready, out: mcastOut, mc: k, blocks: int32(blocks)})
	}
	return reduced
}

// aggSend gives a reduced fragment to the AN's send queue: to the crossbar
// now when none of the AN's is there, else behind the ones waiting.
func (sw *Switch) aggSend(i, inVL int, e entry) {
	a := sw.agg
	if a.sending {
		a.sendQ = append(a.sendQ, aggSend{in: i, inVL: inVL, e: e})
		return
	}
	a.sending = true
	sw.aggOffer(i, inVL, e)
}

// aggOffer puts the AN's next reduced fragment into the queue of the
// input whose buffer holds it, for the crossbar.
func (sw *Switch) aggOffer(i, inVL int, e entry) {
	sw.enqueue(i, inVL, e)
	sw.wake(max(e.ready, sw.inFreeBy[i]-sw.allocPS))
}

// aggGranted is the AN's fragment in the crossbar's queues granted (a
// multicast one: its last copy): the next one waiting goes in, through an
// event, since a grant is made inside an allocation round, whose queues
// must not grow under it. The next one waits at least to the next round,
// as a send queue's next packet does.
func (sw *Switch) aggGranted() {
	a := sw.agg
	if a.sendHead == len(a.sendQ) {
		a.sending = false
		return
	}
	sw.s.Schedule(sw.s.Now(), a, evAggSend)
}

// freeSlot ends a reduced fragment's hold on its slot.
func (a *aggNode) freeSlot(s *aggSlot, now ib.PS) {
	s.busy = false
	a.counters.SlotPS += ib.PS(a.inUse) * (now - a.lastT)
	a.lastT = now
	a.inUse--
}

// aggRetry lets the inputs whose fragments wait into the ALU: a slot
// may have freed.
func (sw *Switch) aggRetry() {
	for again := true; again; {
		again = false
		for i := range sw.agg.wait {
			if sw.agg.whead[i] < len(sw.agg.wait[i]) && sw.aggDrain(i) {
				again = true
			}
		}
	}
}

// AggConfig returns the aggregation node's configuration (false without
// one).
func (sw *Switch) AggConfig() (AggConfig, bool) {
	if sw.agg == nil {
		return AggConfig{}, false
	}
	return sw.agg.cfg, true
}
