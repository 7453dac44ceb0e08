package hca

import (
	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// Congestion control (IBA Annex A10; docs/congestion.md, "The HCA's
// reaction"): the channel adapter's two roles.
//
// Destination: a request on an RC QP or a UD datagram that arrives with
// FECN is answered with a CNP (BTH opcode 0x80, no payload, BECN set, on
// the data's SL) to the packet's source LID and QP: the RC QP's remote QPN,
// or the datagram's DETH.SrcQP. The CNP goes ahead of every data packet of
// the port (trySend looks at the CNP queue first), as the synthetic
// endpoints send theirs. A response (ACK, NAK, READ or atomic response)
// with FECN is counted and not answered: the model throttles a QP's
// requests only, and a responder's responses follow the requests that
// elicit them.
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
// grants'. At delay 0 nothing is gated, so a run in which nothing is
// marked sends exactly what it sends without congestion control.

// cnpQueue bounds the CNPs waiting at an HCA; past it a FECN is not
// answered (CNPsSkipped), as at the synthetic endpoints.
const cnpQueue = 256

// ccState is an HCA's congestion control state (EnableCC).
type ccState struct {
	throttle *cc.Throttle
	timer    ib.PS
	ticking  bool // an evCCTick is queued
	cnp      *components.FIFO[*ib.Packet]

	// Counters over the whole run.
	FECNReceived uint64 // requests and datagrams that arrived with FECN
	FECNIgnored  uint64 // responses that arrived with FECN (not answered)
	CNPsSent     uint64 // CNPs put on the wire
	CNPsSkipped  uint64 // FECNs not answered: the CNP queue was full
	BECNs        uint64 // CNPs that arrived here for one of its QPs
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
	FECNReceived, FECNIgnored, CNPsSent, CNPsSkipped, BECNs uint64
	Throttle                                                cc.ThrottleStats
}

// CC returns the HCA's congestion control statistics at now, or false
// without congestion control.
func (d *Device) CC(now ib.PS) (CCStats, bool) {
	c := d.cc
	if c == nil {
		return CCStats{}, false
	}
	c.throttle.Grow(len(d.qps))
	return CCStats{c.FECNReceived, c.FECNIgnored, c.CNPsSent, c.CNPsSkipped, c.BECNs, c.throttle.Stats(now)}, true
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
	case qp != nil && !qp.UD && pkt.Opcode.IsRequest():
		srcQP = qp.remoteQPN
	default:
		c.FECNIgnored++ // a response, or a packet for no QP
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
	c := d.cc
	i := int(qp.Num - qpBase)
	c.throttle.Grow(i + 1)
	delay := c.throttle.Delay(i)
	if delay == 0 {
		return
	}
	t := now + d.Port.Timing().Serialization(wireBytes) + delay
	if t > qp.holdUntil {
		qp.holdUntil = t
		d.at(t, evSchedule)
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
	p.ICRC = ib.ComputeICRC(p)
	d.tracePacket(components.TraceInject, p)
	d.Port.Send(p)
	if d.tx.arb != nil && d.Port.VLs() > 1 {
		d.tx.arb.Commit(int(p.VL), p.Credits())
	}
	return true
}
