package hca

import (
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// receive handles a packet that passed the transport-rx stage: the receive
// buffer frees (credits go back), then the responder or the requester acts.
// A packet whose payload is written to host memory frees its buffer only
// when that payload fits in the posted-write queue: when writes arrive
// faster than PCIe takes them (an incast into one HCA on a narrow PCIe
// link), the queue stays full, the port's credits return at the PCIe
// write rate, and so the senders slow to it, as the receive buffer of a
// real HCA backs up into link-level flow control.
func (d *Device) receive(pkt *ib.Packet) {
	n := pkt.PayloadLen
	if n == 0 {
		d.Port.Release(int(pkt.VL), pkt.Credits())
		// It may still write (an atomic's result): nothing more to free.
		d.rxBlocks = 0
		d.deliver(pkt)
		return
	}
	// The payload fits when the bytes queued ahead of its last TLP's end,
	// its own included, are at most the queue's: from its write's end less
	// the queue's bytes. The write is booked while the packet is handled
	// (rxWriteEnd), and goes where the dma stage and the PCIe link put it:
	// behind a key miss of its own QP, or into a gap before another QP's
	// write booked ahead (stage.acceptQP), so its buffer frees by that
	// write, not by what else is booked. A packet with a payload that is
	// not written (a duplicate, a NAKed request) frees by the estimate of
	// a write offered as it arrived behind everything booked then
	// (WriteQueuedUntil), as every payload did before. A written payload
	// leaves the buffer no sooner than the dma stage takes it: one whose
	// write waits for its key, its translation or its QP's previous item
	// is in the buffer meanwhile, not yet in the posted-write queue. Such
	// a write issues later than the PCIe link books at once (PCIe.Post):
	// it is booked a horizon before it issues, no sooner than the dma
	// stage takes it, and frees the buffer then (postedBooked). A write
	// booked at once issues by now + horizon, so its payload was taken by
	// now.
	now := d.s.Now()
	vl, blocks := int(pkt.VL), pkt.Credits()
	busy := d.PCIe.up.last // the upstream is booked until then as it arrives
	d.rxWriteEnd, d.rxVL, d.rxBlocks = 0, int8(vl), int32(blocks)
	d.deliver(pkt)
	end := d.rxWriteEnd
	if end < 0 {
		// The write is booked later; it frees the buffer then
		// (postedBooked).
		return
	}
	if end == 0 {
		end = d.PCIe.WriteQueuedUntil(max(now, busy), n)
	}
	if release := end - d.PCIe.queuePS; release > now {
		e := d.at(release, evRxRelease)
		e.VL, e.Arg = int8(vl), int64(blocks)
	} else {
		d.Port.Release(vl, blocks)
	}
}

// deliver hands a received packet to the CC reaction and to its QP's
// responder or requester, and frees it.
func (d *Device) deliver(pkt *ib.Packet) {
	d.Counters.RxPackets++
	d.tracePacket(components.TraceDeliver, pkt)
	if ib.IsMulticastLID(pkt.DLID) {
		if d.cc != nil {
			d.ccReceive(nil, pkt) // FECN: a CNP to the source QP (DETH)
		}
		d.deliverMcast(pkt)
		d.s.FreePacket(pkt)
		return
	}
	qp := d.qpByNum(pkt.DestQP)
	if d.cc != nil {
		d.ccReceive(qp, pkt)
		if pkt.Opcode == ib.CNP {
			d.s.FreePacket(pkt)
			return
		}
	}
	if qp == nil || qp.State < QPRTR {
		// No such QP (or destroyed, or not ready): silently dropped, as
		// hardware does, and counted.
		d.Counters.NoQPDrops++
		d.s.FreePacket(pkt)
		return
	}
	if pkt.Opcode == ib.UDSendOnly || pkt.Opcode == ib.UDSendOnlyImm {
		d.receiveUD(qp, pkt)
	} else if qp.UD {
		// An RC packet for a UD QP: dropped.
	} else if pkt.Opcode.IsRequest() {
		d.respond(qp, pkt)
	} else {
		d.complete(qp, pkt)
	}
	d.s.FreePacket(pkt)
}

// recvWQEAt returns when the receive WQE a packet arriving at t just took
// (PopRecv) is on chip: at t if it was, else when its prefetch read brings
// it (rqWait).
//
// A WQE taken from an SRQ with SRQ contexts modelled (srqTook) waits for
// the SRQ's context as well, used from t, when the QP's context that
// names the SRQ (mlx5 qpc srqn_rmpn_xrqn) is on chip: the take moves its
// WQE counter and checks its limit.
func (d *Device) recvWQEAt(qp *QP, t ib.PS) ib.PS {
	if qp.srqTook {
		qp.srqTook = false
		t = d.contextModify(d.srqc, t, qp.srq.Num)
	}
	if qp.rqWait > t {
		d.Counters.RecvWQEWaits++
		return qp.rqWait
	}
	return t
}

// sendAck queues an ACK or NAK built by the transport stage at t.
func (d *Device) sendAck(qp *QP, t ib.PS, syn uint8, psn, msn uint32) {
	p := d.newPacket(qp)
	p.Opcode = ib.Acknowledge
	p.PSN = psn
	p.AETH = ib.AETH{Syndrome: syn, MSN: msn}
	ready := d.stages[StageTransportTx].accept(t, 0)
	d.tx.vl[qp.vl].resp.push(txEntry{pkt: p, readyAt: ready, qp: qp})
	if syn&synTypeMask == SynACK {
		d.Counters.Acks++
		d.trace(components.TraceAck, qp.Num, components.IntField("psn", int64(psn)), components.IntField("msn", int64(msn)))
	} else {
		d.Counters.Naks++
		if syn&synTypeMask == SynRNRNAK {
			d.Counters.RNRNaks++
		}
		d.trace(components.TraceNak, qp.Num, components.IntField("psn", int64(psn)), components.IntField("syndrome", int64(syn)))
	}
	d.wake(ready)
}

// respond runs the responder on a request packet and carries out its action
// with timing: key check, payload DMA, ACK/NAK, read responses, atomics and
// the receive CQE.
func (d *Device) respond(qp *QP, pkt *ib.Packet) {
	now := d.s.Now()
	// The responder works from the QP's context: the packet's work waits
	// for it when it is not on chip (qpContext).
	ctx := d.qpContext(qp, now)
	qp.rqWait = 0
	var before respContext
	if d.qpc != nil {
		before = qp.resp.context()
	}
	a := qp.resp.Receive(pkt, qp)
	if d.qpc != nil && qp.resp.context() != before {
		d.qpModified(qp)
	}
	defer func() {
		if qp.resp.State == QPErr && qp.State != QPErr {
			// A class C error at the responder: the QP goes to ERR and its
			// posted receives are flushed (ib-facts §5, §6).
			qp.State = QPErr
			d.flushRecvs(qp, d.s.Now())
		}
	}()
	t := d.recvWQEAt(qp, ctx)
	if a.KeyChecked && a.RecvSGL != nil {
		bad := len(a.RecvSGL)
		for i, e := range a.RecvSGL {
			if a.KeyResult != KeyOK && e.LKey == a.Key && e.Addr == a.KeyAddr && uint64(e.Length) == a.KeyLen {
				bad = i
				break
			}
		}
		t = d.recvKeyLookups(qp, t, a.RecvSGL, bad, a.KeyResult)
	} else if a.KeyChecked {
		t = d.keyCheck(qp, t, a.Key)
		d.traceKeyCheck(qp.Num, a.Key, a.KeyResult, a.KeyAddr, uint64(a.KeyLen))
		if a.KeyResult == KeyOK {
			if mr, ok := d.Keys.regionKey(a.Key); ok {
				// A memory window's context names its region, whose
				// context (translation size, MTT) is a second lookup.
				t = d.keyCheck(qp, t, mr)
			}
		}
	}
	// The packet's DMA waits for the translation it needs (translate): the
	// one it starts here, after its key check if it has one, or else its
	// message's, started by the message's first packet (RespAction.Xlate).
	// qp.xlateAt is 0 unless translation is modelled.
	if a.Xlate && d.mtt != nil && a.RecvSGL != nil {
		// Each element's part the packet writes, its own region's MTT.
		d.sglPieces = sglSlice(d.sglPieces[:0], a.RecvSGL, a.ScatterOff, a.XlateLen)
		t0, done := t, t
		for _, p := range d.sglPieces {
			done = max(done, d.translate(t0, p.LKey, p.Addr, uint64(p.Length)))
		}
		t = done
		qp.xlateAt = t
	} else if a.Xlate && d.mtt != nil {
		t = d.translate(t, a.XlateKey, a.XlateAddr, a.XlateLen)
		qp.xlateAt = t
	} else if !a.KeyChecked {
		t = max(t, qp.xlateAt)
	}
	tl := d.Timeline
	traced := tl.atResponder(d, pkt)
	if traced && tl.RxDone == 0 {
		tl.RxDone, tl.RespKey = now, t
	}
	if a.Write && a.RecvSGL != nil {
		t = d.scatter(qp, t, a.RecvSGL, a.ScatterOff, pkt.Payload[:pkt.PayloadLen], traced && pkt.PSN == tl.LastPSN)
	} else if a.Write {
		t = d.writePayload(qp, t, a.WriteAddr, pkt.Payload[:pkt.PayloadLen], traced && pkt.PSN == tl.LastPSN)
	}
	if a.RecvDone && a.RecvOpcode == CQERespSendInv && a.RecvStatus == WCSuccess {
		t = d.remoteInvalidate(qp, t, &a)
	}
	if a.RecvDone {
		if traced && tl.RespCQEIssue == 0 {
			tl.RespCQEIssue = t
		}
		qp.rqDone++
		d.writeCQE(qp.RecvCQ, ResponderCQE(qp.Num, &a, pkt.SE), t)
	}
	if a.Ack {
		d.sendAck(qp, t, a.AckSyn, a.AckPSN, a.MSN)
	}
	if a.DropReply {
		d.dropReply(qp, a.ReadRes)
	}
	if a.Read {
		d.fetchRead(qp, t, a)
	}
	if a.Atomic || a.AtomicReplay {
		d.atomic(qp, t, pkt, a.XlateAddr, a.AtomicReplay)
	}
	if d.rxPending == 0 {
		if psn, msn, ok := qp.resp.FlushAck(); ok {
			d.sendAck(qp, t, SynACKNoLimit, psn, msn)
		}
	}
}

// recvKeyLookups times and traces the L_Key lookups of a receive WQE's
// scatter list from t: one per element, each in the key_check stage (its
// issue slots in order), up to element bad, whose check gave r (bad ==
// len(sgl): every element passed). It returns when the last lookup is
// done. An RC SEND's first packet and a UD datagram check their lists so.
func (d *Device) recvKeyLookups(qp *QP, t ib.PS, sgl []SGE, bad int, r KeyResult) ib.PS {
	done := t
	for i, e := range sgl {
		done = max(done, d.keyCheck(qp, t, e.LKey))
		res := KeyOK
		if i == bad {
			res = r
		}
		d.traceKeyCheck(qp.Num, e.LKey, res, e.Addr, uint64(e.Length))
		if i == bad {
			break
		}
	}
	return done
}

// fetchRead starts a READ reply: the read engine issues the payload reads
// of the responses a.FetchLo ≤ k < a.FetchHi at t, each a DMA read and then
// the transport stage, and records when each response is ready and its
// payload (copied at issue, as every payload read is: a later request in
// PSN order, an atomic say, must not change what the READ returns); then the
// reply joins the response queue as one entry, from which trySend builds
// one response at a time as the wire takes them (NextReadResponse). A
// replay replaces the resource's reply still queued, if any (dropReply).
func (d *Device) fetchRead(qp *QP, t ib.PS, a RespAction) {
	mtu := qp.resp.MTU
	if len(qp.readReady) != len(qp.resp.res) {
		qp.readReady = make([][]ib.PS, len(qp.resp.res))
		qp.readSeq = make([][]uint64, len(qp.resp.res))
		qp.readData = make([][]byte, len(qp.resp.res))
	}
	ready, seq, data := qp.readReady[a.ReadRes], qp.readSeq[a.ReadRes], qp.readData[a.ReadRes]
	if n := int(psnDiff(qp.resp.res[a.ReadRes].lastPSN, qp.resp.res[a.ReadRes].firstPSN)) + 1; len(ready) < n {
		// A larger READ than this resource held before: room for n
		// responses, each payload at its index × MTU.
		ready, seq, data = make([]ib.PS, n), make([]uint64, n), make([]byte, n*mtu)
		qp.readReady[a.ReadRes], qp.readSeq[a.ReadRes], qp.readData[a.ReadRes] = ready, seq, data
	}
	// Each response is numbered now, in the order its payload is read.
	first := d.s.ReserveSeqs(a.FetchHi - a.FetchLo)
	p := int(psnDiff(a.ReadPSN, qp.resp.res[a.ReadRes].firstPSN))
	for k := a.FetchLo; k < a.FetchHi; k++ {
		lo := (k - p) * mtu
		plen := int(min(uint32(mtu), a.ReadLen-uint32(lo)))
		at := t
		if plen > 0 {
			issue := d.stages[StageDMA].acceptQP(t, &qp.dmaSlot, 0)
			at = d.PCIe.Read(issue, a.ReadVA+uint64(lo), plen)
			d.Mem.Read(a.ReadVA+uint64(lo), data[k*mtu:k*mtu+plen])
			d.trace(components.TraceDMARead, qp.Num, components.IntField("psn", int64(psnAdd(a.ReadPSN, k-p))),
				components.IntField("addr", int64(a.ReadVA)+int64(lo)), components.IntField("len", int64(plen)))
		}
		ready[k] = d.stages[StageTransportTx].accept(at, 0)
		seq[k] = first + uint64(k-a.FetchLo)
	}
	e := txEntry{readyAt: ready[p], qp: qp, readRes: a.ReadRes + 1}
	d.tx.vl[qp.vl].resp.push(e)
	d.wake(e.readyAt)
}

// dropReply takes resource slot's queued reply out of the response queue
// (with the response built for it, if one waits for credits).
func (d *Device) dropReply(qp *QP, slot int) {
	q := &d.tx.vl[qp.vl].resp
	kept := q.items[:q.head]
	for _, e := range q.items[q.head:] {
		if e.qp == qp && e.readRes == slot+1 {
			if e.pkt != nil {
				d.s.FreePacket(e.pkt)
			}
			continue
		}
		kept = append(kept, e)
	}
	clear(q.items[len(kept):])
	q.items = kept
}

// nextReadResponse builds the next response of the reply entry e stands
// for, with the payload fetchRead read for it.
func (d *Device) nextReadResponse(e *txEntry) {
	qp, slot := e.qp, e.readRes-1
	p := d.s.NewPacketNumbered(qp.readSeq[slot][qp.resp.ReadCursor(slot)])
	d.address(p, qp)
	k, _ := qp.resp.NextReadResponse(slot, p)
	if p.PayloadLen > 0 {
		lo := k * qp.resp.MTU
		p.Payload = append(p.Payload[:0], qp.readData[slot][lo:lo+p.PayloadLen]...)
	}
	e.pkt = p
}

// atomic executes a FETCH_ADD or CMP_SWAP on host memory (a read, then a
// posted write) and answers with an ATOMIC_ACKNOWLEDGE carrying the
// original value. A duplicate gets the saved value without re-executing.
// va is the address the AtomicETH's VA resolves to (RespAction.XlateAddr:
// the VA, or a zero-based window's first byte plus it).
func (d *Device) atomic(qp *QP, t ib.PS, pkt *ib.Packet, va uint64, replay bool) {
	var orig uint64
	issue := d.stages[StageDMA].acceptQP(t, &qp.dmaSlot, 0)
	done := issue
	if replay {
		orig, _ = qp.resp.LastAtomic(pkt.PSN)
	} else {
		issue = d.atomics.wait(va, issue, d.s.Now())
		done = d.PCIe.Read(issue, va, 8)
		orig = d.Mem.ReadU64(va)
		nv := orig + pkt.Atomic.SwapAdd
		if pkt.Opcode == ib.CompareSwap {
			nv = orig
			if orig == pkt.Atomic.Compare {
				nv = pkt.Atomic.SwapAdd
			}
		}
		d.atomics.hold(va, d.PCIe.Write(done, 8)-d.PCIe.writeLat)
		d.Mem.WriteU64(va, nv)
		qp.resp.SaveAtomic(pkt.PSN, orig)
	}
	p := d.newPacket(qp)
	p.Opcode = ib.AtomicAcknowledge
	p.PSN = pkt.PSN
	p.AETH = ib.AETH{Syndrome: SynACKNoLimit, MSN: qp.resp.MSN()}
	p.AtomicAck = orig
	ready := d.stages[StageTransportTx].accept(done, 0)
	d.tx.vl[qp.vl].resp.push(txEntry{pkt: p, readyAt: ready, qp: qp})
	d.wake(ready)
}

// complete runs the requester on an ACK, NAK or response. What it writes
// (CQEs, a response's payload) waits for the QP's context when that is not
// on chip (qpContext); the requester's state moves at once, as a key
// check's outcome is known at once and only its timing waits. One the
// requester acts on (it completes, progresses, rewinds or places data)
// modifies the context; a stale one only reads it.
func (d *Device) complete(qp *QP, pkt *ib.Packet) {
	now := d.qpContext(qp, d.s.Now())
	var res AckResult
	t, placed := now, false
	switch pkt.Opcode {
	case ib.Acknowledge:
		if d.DropAcks > 0 && pkt.AETH.Syndrome&synTypeMask == SynACK {
			d.DropAcks--
			d.Counters.AcksDropped++
			return
		}
		syn := pkt.AETH.Syndrome
		if syn&synTypeMask == SynACK {
			d.trace(components.TraceAck, qp.Num, components.IntField("psn", int64(pkt.PSN)), components.StrField("result", "rx"))
		} else {
			d.trace(components.TraceNak, qp.Num, components.IntField("psn", int64(pkt.PSN)),
				components.IntField("syndrome", int64(syn)), components.StrField("result", "rx"))
		}
		res = qp.req.OnAck(pkt.PSN, syn)
	case ib.AtomicAcknowledge:
		var pl Placement
		pl, placed, res = qp.req.OnAtomicAck(pkt)
		if placed {
			var b [8]byte
			putLE64(b[:], pkt.AtomicAck)
			t = d.place(qp, now, pl, b[:])
		}
	default: // read responses
		var pl Placement
		pl, placed, res = qp.req.OnReadResponse(pkt)
		if placed && pkt.PayloadLen > 0 {
			t = d.place(qp, now, pl, pkt.Payload[:pkt.PayloadLen])
		}
	}
	if placed || res.Progress || res.Rewound || len(res.Completions) > 0 {
		d.qpModified(qp)
	}
	d.afterAck(qp, res, t)
}

func putLE64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

// receiveUD places a UD SEND: Q_Key check, a receive WQE (none: the packet
// is silently dropped — UD has no RNR), the message [GRH area | payload]
// into the WQE's buffer or list, a receive CQE with the source QP.
//
// The message is the 40-byte GRH area (UDGRHBytes) and then the payload:
// byte_len counts both, and the payload is scattered from offset 40 of
// the list as an RC SEND's from offset 0 (scatter). The model carries no
// GIDs, so it writes no GRH: the area is left as it was whether the
// packet has a GRH or not (a unicast packet without one, as verbs leave
// it), but its bytes are counted and must fit.
func (d *Device) receiveUD(qp *QP, pkt *ib.Packet) {
	// The Q_Key and state checks read the QP's context (qpContext).
	ctx := d.qpContext(qp, d.s.Now())
	if !qp.UD || qp.State == QPErr || pkt.DETH.QKey != qp.QKey {
		d.Counters.UDDrops++
		return
	}
	qp.rqWait = 0
	recv, ok := qp.PopRecv()
	if !ok {
		d.Counters.UDDrops++
		return
	}
	if qp.srq == nil {
		d.qpModified(qp) // the take moves the QP's hw_rq_counter
	}
	t := d.recvWQEAt(qp, ctx)
	msgLen := uint64(UDGRHBytes + pkt.PayloadLen)
	var r KeyResult
	if recv.SGL != nil {
		// Every element's L_Key over the whole element, in order, up to
		// the first that fails, as an RC SEND's list (respond).
		bad := len(recv.SGL)
		for i, e := range recv.SGL {
			if r = d.Keys.Check(e.LKey, qp.PD, AccessLocalWrite, e.Addr, uint64(e.Length)); r != KeyOK {
				bad = i
				break
			}
		}
		t = d.recvKeyLookups(qp, t, recv.SGL, bad, r)
	} else {
		t = d.keyCheck(qp, t, recv.LKey)
		r = d.Keys.Check(recv.LKey, qp.PD, AccessLocalWrite, recv.Addr, uint64(recv.Length))
		d.traceKeyCheck(qp.Num, recv.LKey, r, recv.Addr, uint64(recv.Length))
	}
	tl := d.Timeline
	traced := tl.atResponder(d, pkt)
	if traced && tl.RxDone == 0 {
		tl.RxDone, tl.RespKey = d.s.Now(), t
	}
	if r == KeyOK && recv.SGL != nil {
		// The bytes the datagram writes, the GRH area's and its payload's,
		// each element's part in its own region's MTT.
		d.sglPieces = sglSlice(d.sglPieces[:0], recv.SGL, 0, min(uint64(recv.Length), msgLen))
		t0, done := t, t
		for _, p := range d.sglPieces {
			done = max(done, d.translate(t0, p.LKey, p.Addr, uint64(p.Length)))
		}
		t = done
	} else if r == KeyOK {
		// The bytes the datagram writes: the GRH area and its payload.
		t = d.translate(t, recv.LKey, recv.Addr, min(uint64(recv.Length), msgLen))
	}
	c := CQE{Opcode: CQERespSend, QPN: qp.Num, Counter: uint16(recv.Index), Receiver: true,
		SrcQP: pkt.DETH.SrcQP, ByteCnt: uint32(msgLen), Solicited: pkt.SE}
	if pkt.Opcode == ib.UDSendOnlyImm {
		c.Opcode, c.Imm, c.HasImm = CQERespSendImm, pkt.Imm, true
	}
	switch {
	case r != KeyOK:
		c.Status = WCLocProtErr
	case msgLen > uint64(recv.Length):
		c.Status = WCLocLenErr
	case pkt.PayloadLen > 0 && recv.SGL != nil:
		t = d.scatter(qp, t, recv.SGL, UDGRHBytes, pkt.Payload[:pkt.PayloadLen], traced)
	case pkt.PayloadLen > 0:
		t = d.writePayload(qp, t, recv.Addr+UDGRHBytes, pkt.Payload[:pkt.PayloadLen], traced)
	}
	if traced && tl.RespCQEIssue == 0 {
		tl.RespCQEIssue = t
	}
	qp.rqDone++
	d.writeCQE(qp.RecvCQ, c, t)
}

// FlushRecvCQE returns the CQE of receive WQE index of QP qpn flushed
// (flushRecvs): WR_FLUSH_ERR, RESP_SEND (written RESP_ERR with the
// error's syndrome), the index as the WQE counter, byte_len and the
// immediate 0. The RTL's flush (rtl, hca_responder's rc_* for hca_rq's
// flush takes) is checked against it.
func FlushRecvCQE(qpn, index uint32) CQE {
	return CQE{Opcode: CQERespSend, Status: WCWRFlushErr, QPN: qpn, Counter: uint16(index), Receiver: true}
}

// flushRecvs completes every receive WQE the HCA knows of and has not used
// with WR_FLUSH_ERR (a QP in ERR).
//
// A QP on an SRQ flushes nothing: the WQEs belong to the SRQ and stay
// posted for its other QPs (rxe flush_recv_queue returns for a QP with an
// SRQ); the HCA raises EventQPLastWQEReached instead, as rxe does, once.
func (d *Device) flushRecvs(qp *QP, t ib.PS) {
	if qp.srq != nil {
		if !qp.lastWQE {
			qp.lastWQE = true
			d.asyncEvents = append(d.asyncEvents, AsyncEvent{Type: EventQPLastWQEReached, QP: qp, At: t})
		}
		return
	}
	for cntDiff(qp.rqDB, qp.rqTaken) > 0 {
		idx := qp.rqTaken
		qp.rqTaken++
		d.writeCQE(qp.RecvCQ, FlushRecvCQE(qp.Num, idx), t)
	}
	qp.rqCache.clear()
}
