package workload

import (
	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// ccFlowQueue bounds one destination's queue at a source with congestion
// control, in packets; past it that flow's creations are skipped. Per flow,
// not per host: a throttled flow to a hotspot fills its own queue and must
// not stop the host creating packets for its other destinations (that
// would be head-of-line blocking at the source, which per-QP send queues
// do not have).
const ccFlowQueue = 256

// ccCNPQueue bounds the CNPs waiting at a host; past it a FECN is not
// answered (counted in CNPsSkipped).
const ccCNPQueue = 256

// ccSource is an endpoint's congestion control state (EnableCC): the
// reaction point's indexes, a queue per destination (a flow, as a QP would
// be: a throttled flow waits without holding up the others), and the CNPs
// it owes other hosts.
type ccSource struct {
	throttle *cc.Throttle
	timer    ib.PS // CCTI_Timer period

	queues  [][]ccEntry // per destination: packets, oldest at heads[d]
	heads   []int
	backlog []int32 // destinations with queued packets
	next    []ib.PS // per destination: the earliest start of its next packet
	made    uint64  // packets created, which orders every queue's entries
	queued  int     // data packets in the queues
	cnp     *components.FIFO[*ib.Packet]
	wakeAt  ib.PS // a wake-up is scheduled for this time (-1: none)

	// Counters over the whole run.
	FECNReceived uint64 // data packets that arrived here with FECN
	CNPsSent     uint64 // CNPs (BECN) put on the wire
	CNPsSkipped  uint64 // FECNs not answered: the CNP queue was full
	BECNs        uint64 // CNPs that arrived here
}

type ccEntry struct {
	pkt *ib.Packet
	n   uint64 // creation order
}

// Event kinds of the ccTimer handler.
const (
	evCCWake uint8 = iota + 1 // a throttled flow may send
	evCCTick                  // CCTI_Timer expiry
)

// EnableCC turns congestion control on at this endpoint, for a fabric of
// hosts hosts: one flow per destination. Call it before Start, and attach
// the returned owner (not the endpoint) to the endpoint's port: it runs the
// CC versions of the per-packet methods, so an endpoint without congestion
// control runs exactly the code it ran before CC existed.
func (e *Endpoint) EnableCC(p *cc.Params, hosts int) *CCEndpoint {
	e.cc = &ccSource{
		throttle: cc.NewThrottle(p, hosts),
		timer:    p.Timer,
		queues:   make([][]ccEntry, hosts),
		heads:    make([]int, hosts),
		next:     make([]ib.PS, hosts),
		cnp:      components.NewFIFO[*ib.Packet](ccCNPQueue),
		wakeAt:   -1,
	}
	return &CCEndpoint{e}
}

// CCEndpoint is an Endpoint with congestion control as its port's owner
// (link.Owner): a CNP goes first, the flows' queues are served oldest
// eligible first, and each arrival's FECN or BECN is acted on.
type CCEndpoint struct{ *Endpoint }

// PortReady implements link.Owner.
func (c *CCEndpoint) PortReady(p *link.Port) { c.trySendCC() }

// PacketArrived implements link.Owner as Endpoint.PacketArrived does; the
// packet's tail is handled by ccSink.
func (c *CCEndpoint) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	e := c.Endpoint
	if pkt.DLID != e.LID {
		e.WrongDest++
	}
	e.Received++
	ev := e.s.Schedule(tail, (*ccSink)(e), 0)
	ev.Pkt = pkt
}

// ccSink handles a CC endpoint's tail arrivals: endpointSink's work, and
// the packet's congestion bits before it is reported.
type ccSink Endpoint

// HandleEvent releases the packet's blocks, acts on FECN or BECN and
// reports the delivery.
func (k *ccSink) HandleEvent(ev *components.Event) {
	e := (*Endpoint)(k)
	pkt := ev.Pkt
	e.port.Release(int(pkt.VL), pkt.Credits())
	if e.traced {
		e.tracePacket(ev.At(), components.TraceDeliver, pkt)
	}
	e.ccReceive(pkt, ev.At())
	if e.OnDeliver != nil {
		e.OnDeliver(pkt, ev.At())
	}
	e.s.FreePacket(pkt)
}

// startCC is Start with congestion control: creations go to ccInject.
func (e *Endpoint) startCC(lo, hi ib.PS) {
	e.cc.throttle.SetWindow(lo, hi)
	e.injecting = true
	e.pending = e.Traffic.Next(sendOnlyBytes)
	e.s.Schedule(e.s.Now()+e.pending.Gap, (*ccInject)(e), evInject)
}

// ccInject handles a CC endpoint's packet creations.
type ccInject Endpoint

// HandleEvent is Endpoint.HandleEvent with a queue per destination: the
// same packet, made from the same draws, queued behind its own flow only.
// (A copy rather than a shared helper: Endpoint.HandleEvent stays the code
// it was, inlining included.)
func (k *ccInject) HandleEvent(ev *components.Event) {
	e := (*Endpoint)(k)
	if !e.injecting {
		return
	}
	now := e.s.Now()
	dst, size := e.pending.Dst, e.pending.Payload
	if dst >= 0 && dst != e.Index {
		if e.cc.full(dst) {
			e.Skipped++
		} else {
			pkt := e.newPacket(now, dst, size)
			e.cc.push(dst, pkt)
			e.trySendCC()
		}
	}
	e.pending = e.Traffic.Next(sendOnlyBytes)
	e.s.Schedule(now+e.pending.Gap, k, evInject)
}

// CC returns the endpoint's congestion control counters and reaction point
// statistics at now, or false without congestion control.
func (e *Endpoint) CC(now ib.PS) (fecn, cnpsSent, cnpsSkipped, becns uint64, st cc.ThrottleStats, ok bool) {
	c := e.cc
	if c == nil {
		return 0, 0, 0, 0, cc.ThrottleStats{}, false
	}
	return c.FECNReceived, c.CNPsSent, c.CNPsSkipped, c.BECNs, c.throttle.Stats(now), true
}

// CCFlowMean returns the CCT index of this endpoint's flow to destination
// d averaged over the measurement window up to now (0 without congestion
// control).
func (e *Endpoint) CCFlowMean(d int, now ib.PS) float64 {
	if e.cc == nil {
		return 0
	}
	return e.cc.throttle.FlowMean(d, now)
}

// CCQueued returns, with congestion control, the packets waiting in the
// flows' queues and the CNPs waiting (0 without).
func (e *Endpoint) CCQueued() int {
	if e.cc == nil {
		return 0
	}
	return e.cc.queued + e.cc.cnp.Len()
}

// full reports whether destination d's queue is full.
func (c *ccSource) full(d int) bool { return len(c.queues[d])-c.heads[d] >= ccFlowQueue }

// push queues pkt for destination d.
func (c *ccSource) push(d int, pkt *ib.Packet) {
	if len(c.queues[d]) == c.heads[d] {
		c.backlog = append(c.backlog, int32(d))
	}
	c.made++
	c.queues[d] = append(c.queues[d], ccEntry{pkt: pkt, n: c.made})
	c.queued++
}

// pop removes destination d's oldest packet.
func (c *ccSource) pop(d int) {
	q, h := c.queues[d], c.heads[d]
	q[h] = ccEntry{}
	h++
	c.queued--
	switch {
	case h == len(q):
		c.queues[d], h = q[:0], 0
		for k, x := range c.backlog {
			if int(x) == d {
				last := len(c.backlog) - 1
				c.backlog[k] = c.backlog[last]
				c.backlog = c.backlog[:last]
				break
			}
		}
	case h >= 64 && 2*h >= len(q):
		// A flow that never empties (throttled, always backlogged):
		// slide it down so the slice does not grow without bound.
		n := copy(q, q[h:])
		clear(q[n:])
		c.queues[d], h = q[:n], 0
	}
	c.heads[d] = h
}

// trySendCC is trySend with congestion control: a CNP first (it is small,
// and its delay is the control loop's), else the oldest packet among the
// flows whose inter-packet delay has passed. With every index at a zero
// delay that is the oldest packet of all, so a run in which nothing is
// marked sends what the single source FIFO sends, in the same order.
func (e *Endpoint) trySendCC() {
	c := e.cc
	if c.cnp.Len() == 0 && len(c.backlog) == 0 || !e.port.Idle() {
		return // nothing to send, or (Idle) the wire's end will call again
	}
	now := e.s.Now()
	d := -1
	var pkt *ib.Packet
	if c.cnp.Len() > 0 {
		pkt, _ = c.cnp.Peek()
	} else {
		var bestN uint64
		wake := ib.PS(-1)
		for _, f := range c.backlog {
			if t := c.next[f]; t > now {
				if wake < 0 || t < wake {
					wake = t
				}
				continue
			}
			if n := c.queues[f][c.heads[f]].n; d < 0 || n < bestN {
				d, bestN = int(f), n
			}
		}
		if d < 0 {
			if wake >= 0 {
				e.ccWake(wake)
			}
			return
		}
		pkt = c.queues[d][c.heads[d]].pkt
	}
	if !e.port.HasCredits(int(pkt.VL), pkt.Credits()) {
		e.stall.Start(now)
		return
	}
	e.stall.Stop(now)
	if d < 0 {
		c.cnp.Pop()
		c.CNPsSent++
	} else {
		c.pop(d)
		e.Sent++
		// IBA's inter-packet delay: the flow's next packet starts no
		// sooner than CCT[index] after this one's tail leaves.
		c.next[d] = now + e.port.Timing().Serialization(pkt.WireBytes()) + c.throttle.Delay(d)
	}
	if e.OnInject != nil {
		e.OnInject(pkt)
	}
	if e.traced {
		e.tracePacket(now, components.TraceInject, pkt)
	}
	if c.cnp.Len() > 0 || len(c.backlog) > 0 {
		e.port.Send(pkt) // the next try comes when this one's tail has left
	} else {
		e.port.SendQuiet(pkt) // nothing waits: a new packet tries the wire
	}
}

// ccWake asks for a send attempt at t, unless one is already due by then.
func (e *Endpoint) ccWake(t ib.PS) {
	c := e.cc
	if c.wakeAt >= 0 && c.wakeAt <= t {
		return
	}
	c.wakeAt = t
	e.s.Schedule(t, (*ccTimer)(e), evCCWake)
}

// ccReceive handles, at the tail of a packet that arrived here, its
// congestion bits: a CNP's BECN raises the index of the flow to its
// sender; a data packet's FECN is answered with a CNP to its source.
func (e *Endpoint) ccReceive(pkt *ib.Packet, now ib.PS) {
	c := e.cc
	if pkt.Opcode == ib.CNP {
		c.BECNs++
		if c.throttle.BECN(int(pkt.Src), now) {
			e.s.Schedule(now+c.timer, (*ccTimer)(e), evCCTick)
		}
		return
	}
	if !pkt.FECN {
		return
	}
	c.FECNReceived++
	if c.cnp.Full() {
		c.CNPsSkipped++
		return
	}
	// A CNP: no payload, BECN set, on the data's SL, back to its source,
	// addressed to the flow's QP (the data's QPN names its source).
	p := e.s.NewPacket()
	p.Opcode = ib.CNP
	p.BECN = true
	p.SL, p.VL = e.SL, e.VL
	p.SLID, p.DLID = e.LID, pkt.SLID
	p.InjectAt = now
	p.Src, p.Dst = int32(e.Index), pkt.Src
	p.DestQP = pkt.DestQP
	p.ICRC = ib.ComputeICRC(p)
	c.cnp.Push(p)
	e.trySendCC()
}

// ccTimer handles an endpoint's congestion control events.
type ccTimer Endpoint

// HandleEvent runs a wake-up or a CCTI_Timer expiry.
func (k *ccTimer) HandleEvent(ev *components.Event) {
	e := (*Endpoint)(k)
	c := e.cc
	switch ev.Kind {
	case evCCWake:
		if c.wakeAt == ev.At() {
			c.wakeAt = -1
		}
		e.trySendCC()
	case evCCTick:
		if c.throttle.Tick(ev.At()) {
			e.s.Schedule(ev.At()+c.timer, k, evCCTick)
		}
	}
}
