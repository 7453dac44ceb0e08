package hca

import (
	"math/bits"

	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// Congestion control (IBA Annex A10; docs/congestion.md, "The HCA's
// reaction"): the channel adapter's two roles.
//
// Destination: a packet that arrives with FECN is answered with a CNP (BTH
// opcode 0x80, no payload, BECN set, on the data's SL) to the QP that sent
// it, at the packet's source LID: for a request on an RC QP, the requester
// (the local responder QP's remote QPN); for a READ response or an atomic
// ACK, the responder (the local requester QP's remote QPN); for a UD
// datagram, its DETH.SrcQP. IBA Annex A10 returns the BECN to the marked
// packet's source whichever way the packet went; the Linux hfi1 driver
// does the same for responses (hfi1_process_ecn_slowpath: a CNP for RDMA
// READ responses through ATOMIC ACKNOWLEDGE) and ignores the FECN of a
// plain ACKNOWLEDGE (an ACK or NAK), as this model does (FECNIgnored, with
// packets for no QP). The CNP goes ahead of every data packet of the port
// (trySend looks at the CNP queue first), as the synthetic endpoints send
// theirs.
//
// Source: a CNP with BECN raises the CCT index of the QP it names
// (cc.Throttle, one flow per QP: IBA's CA reacts per QP), and one timer per
// HCA lowers every raised index by one per CCTI_Timer. A QP at an index
// whose delay is above zero may be granted its next packet no sooner than
// this grant's time + the packet's serialization + CCT[index] (holdUntil,
// which pickQP already honours for RNR waits, with an evSchedule at that
// time). The gate sits at the grant, where the HCA chooses whose packet to
// build next, not at the wire: a throttled QP's packets then do not sit in
// its VL's transmit queue ahead of other QPs' (head-of-line blocking at the
// source), and the grant-to-wire time (DMA read and transport stage) is
// the same for each packet of a flow, so the wire spacing follows the
// grants'. The same index spaces the QP's responses (READ responses,
// atomic ACKs, ACKs and NAKs) at the wire: its next response may start no
// sooner than this one's start + serialization + CCT[index] (respHold).
// A response is built from host memory as the request asks, not granted
// by the scheduler, so its gate is in the response queue; a held QP's
// entry there does not hold back other QPs' responses behind it
// (ccGateResponses brings forward the oldest response of a QP that is not
// held; a QP's own responses keep their order). At delay 0 nothing is
// gated, so a run in which nothing is marked sends exactly what it sends
// without congestion control.

// cnpQueue bounds the CNPs waiting at an HCA; past it a FECN is not
// answered (CNPsSkipped), as at the synthetic endpoints.
const cnpQueue = 256

// ccState is an HCA's congestion control state (EnableCC).
type ccState struct {
	throttle *cc.Throttle
	timer    ib.PS
	ticking  bool // an evCCTick is queued
	cnp      *components.FIFO[*ib.Packet]
	// respHolds: some response has left at a delay above zero, so the
	// response queues may hold a QP's entry (ccGateResponses runs).
	respHolds bool
	scan      uint32 // the current response queue scan's mark (QP.ccScan)

	// Counters over the whole run.
	FECNReceived  uint64 // packets that arrived with FECN and are answered
	FECNResponses uint64 // of them, READ responses and atomic ACKs
	FECNIgnored   uint64 // ACKs, NAKs and packets for no QP that arrived with FECN
	CNPsSent      uint64 // CNPs put on the wire
	CNPsSkipped   uint64 // FECNs not answered: the CNP queue was full
	BECNs         uint64 // CNPs that arrived here for one of its QPs
}

// EnableCC turns congestion control on at this HCA with p's parameters.
// Call it before the run starts; QPs may be created before or after.
func (d *Device) EnableCC(p *cc.Params) {
	d.cc = &ccState{
		throttle: cc.NewThrottle(p, len(d.qps)),
		timer:    p.Timer,
		cnp:      components.NewFIFO[*ib.Packet](cnpQueue),
	}
}

// SetCCWindow sets the window over which the CCT index statistics are
// averaged (no-op without congestion control).
func (d *Device) SetCCWindow(lo, hi ib.PS) {
	if d.cc != nil {
		d.cc.throttle.SetWindow(lo, hi)
	}
}

// CCStats are an HCA's congestion control counters and index statistics.
type CCStats struct {
	FECNReceived, FECNResponses, FECNIgnored, CNPsSent, CNPsSkipped, BECNs uint64
	Throttle                                                               cc.ThrottleStats
}

// CC returns the HCA's congestion control statistics at now, or false
// without congestion control.
func (d *Device) CC(now ib.PS) (CCStats, bool) {
	c := d.cc
	if c == nil {
		return CCStats{}, false
	}
	c.throttle.Grow(len(d.qps))
	return CCStats{c.FECNReceived, c.FECNResponses, c.FECNIgnored, c.CNPsSent, c.CNPsSkipped, c.BECNs, c.throttle.Stats(now)}, true
}

// CCIndex returns qp's current CCT index (0 without congestion control).
func (d *Device) CCIndex(qp *QP) int {
	if d.cc == nil {
		return 0
	}
	d.cc.throttle.Grow(len(d.qps))
	return d.cc.throttle.Index(int(qp.Num - qpBase))
}

// ccReceive acts on a received packet's congestion bits, before it is
// processed; qp is the local QP it names (nil: none).
func (d *Device) ccReceive(qp *QP, pkt *ib.Packet) {
	c := d.cc
	now := d.s.Now()
	if pkt.Opcode == ib.CNP {
		if qp == nil || !pkt.BECN {
			return
		}
		c.BECNs++
		i := int(qp.Num - qpBase)
		c.throttle.Grow(i + 1)
		c.throttle.BECN(i, now)
		if !c.ticking && c.throttle.Active() {
			c.ticking = true
			d.at(now+c.timer, evCCTick)
		}
		return
	}
	if !pkt.FECN {
		return
	}
	var srcQP uint32
	switch {
	case pkt.Opcode == ib.UDSendOnly || pkt.Opcode == ib.UDSendOnlyImm:
		srcQP = pkt.DETH.SrcQP
	case qp == nil || qp.UD:
		c.FECNIgnored++ // a packet for no QP
		return
	case pkt.Opcode.IsRequest():
		srcQP = qp.remoteQPN // the requester
	case pkt.Opcode >= ib.RDMAReadResponseFirst && pkt.Opcode <= ib.RDMAReadResponseOnly,
		pkt.Opcode == ib.AtomicAcknowledge:
		srcQP = qp.remoteQPN // the responder
		c.FECNResponses++
	default:
		c.FECNIgnored++ // an ACK or NAK (hfi1 ignores them too)
		return
	}
	c.FECNReceived++
	if c.cnp.Full() {
		c.CNPsSkipped++
		return
	}
	p := d.s.NewPacket()
	p.Opcode = ib.CNP
	p.BECN = true
	p.SL, p.VL = pkt.SL, d.sl2vl[pkt.SL&15]
	p.SLID, p.DLID = d.LID, pkt.SLID
	p.DestQP = srcQP
	p.InjectAt = now
	c.cnp.Push(p)
	d.wake(now)
}

// ccTick is a CCTI_Timer expiry: every raised index drops by one.
func (d *Device) ccTick() {
	c := d.cc
	if c.throttle.Tick(d.s.Now()) {
		d.at(d.s.Now()+c.timer, evCCTick)
		return
	}
	c.ticking = false
}

// ccGranted applies qp's inter-packet delay after a grant of a packet of
// wireBytes at now: with a delay above zero, its next grant waits for
// now + serialization + CCT[index] (an RNR wait already longer stands).
func (d *Device) ccGranted(qp *QP, wireBytes int, now ib.PS) {
	delay := d.ccDelay(qp)
	if delay == 0 {
		return
	}
	t := now + d.Port.Timing().Serialization(wireBytes) + delay
	if t > qp.holdUntil {
		qp.holdUntil = t
		d.at(t, evSchedule)
	}
}

// ccDelay returns qp's inter-packet delay now: CCT[its index] (the
// throttle grows to the QP on its first use).
func (d *Device) ccDelay(qp *QP) ib.PS {
	i := int(qp.Num - qpBase)
	d.cc.throttle.Grow(i + 1)
	return d.cc.throttle.Delay(i)
}

// ccBeforeSend is the transmit loop's congestion control step at now: it
// puts a waiting CNP on the wire if it can (and reports so: a CNP goes
// ahead of every data packet, ACK and response), else applies the QPs'
// response holds (ccGateResponses). One call, so the loop stays small
// enough for the compiler to inline it into PortReady.
func (d *Device) ccBeforeSend(now ib.PS) bool {
	c := d.cc
	if c.cnp.Len() > 0 && d.ccSendCNP() {
		return true
	}
	if c.respHolds {
		d.ccGateResponses(now)
	}
	return false
}

// ccResponded applies qp's inter-packet delay after its response pkt
// started at now: with a delay above zero, the QP's next response waits
// for now + serialization + CCT[index].
func (d *Device) ccResponded(qp *QP, pkt *ib.Packet, now ib.PS) {
	wireBytes := pkt.WireBytes()
	c := d.cc
	delay := d.ccDelay(qp)
	if delay == 0 {
		return
	}
	if t := now + d.Port.Timing().Serialization(wireBytes) + delay; t > qp.respHold {
		qp.respHold = t
		c.respHolds = true
	}
}

// ccGateResponses applies the QPs' response holds to the response queues'
// heads at now. A head whose QP is held gives way to the oldest entry, if
// ready, of a QP that is neither held nor has an older entry in the queue
// (so each QP's responses keep their order; moving it to the front keeps
// the others' order too); with none ready, the head waits for its QP's
// hold, and a wake-up is set for the earliest time another QP's entry
// could go. Nothing is allocated: a scan marks the QPs it has passed.
func (d *Device) ccGateResponses(now ib.PS) {
	c := d.cc
	for m := d.tx.used; m != 0; m &= m - 1 {
		q := &d.tx.vl[bits.TrailingZeros16(m)].resp
		if q.len() == 0 {
			continue
		}
		h := q.peek()
		if h.qp.respHold <= now {
			continue
		}
		c.scan++
		h.qp.ccScan = c.scan
		pick, wake := -1, ib.PS(-1)
		for k := q.head + 1; k < len(q.items); k++ {
			e := &q.items[k]
			if e.qp.ccScan == c.scan {
				continue // an older entry of its QP is ahead of it
			}
			e.qp.ccScan = c.scan
			at := max(e.readyAt, e.qp.respHold)
			if at <= now {
				pick = k
				break
			}
			if wake < 0 || at < wake {
				wake = at
			}
		}
		if pick >= 0 {
			e := q.items[pick]
			copy(q.items[q.head+1:pick+1], q.items[q.head:pick])
			q.items[q.head] = e
			continue
		}
		h.readyAt = max(h.readyAt, h.qp.respHold)
		if wake >= 0 && wake < h.readyAt {
			d.wake(wake)
		}
	}
}

// ccSendCNP puts the oldest waiting CNP on the wire if its VL has credits;
// it reports whether it did.
func (d *Device) ccSendCNP() bool {
	c := d.cc
	p, _ := c.cnp.Peek()
	if !d.Port.HasCredits(int(p.VL), p.Credits()) {
		return false
	}
	c.cnp.Pop()
	c.CNPsSent++
	p.DeferICRC()
	d.tracePacket(components.TraceInject, p)
	d.Port.Send(p)
	if d.tx.arb != nil && d.Port.VLs() > 1 {
		d.tx.arb.Commit(int(p.VL), p.Credits())
	}
	return true
}
