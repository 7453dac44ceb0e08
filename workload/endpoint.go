package workload

import (
	"fmt"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// Endpoint is a packet host for synthetic traffic: an open-loop source that
// creates packets by an injection process and a destination pattern and
// queues them at the host (latency counts from creation, as BookSim counts
// it), and a sink that accepts every packet at its tail.
type Endpoint struct {
	// What a packet's creation, send and delivery touch comes first, in
	// four cache lines: the first line (sim, port, identity, traffic
	// source and callbacks), the source queue's ends and the next packet,
	// the PSN table, window and counters, and the stall timer. The source
	// queue is kept by value, not behind a pointer of its own, and the
	// struct is 448 bytes, a Go size class of seven whole lines, so every
	// endpoint starts a line (TestEndpointLayout): at 1,024 hosts each line
	// a host touches per packet is a cache miss.
	s    *components.Sim
	port *link.Port
	LID  uint16 // this host's LID
	// SL is the service level of every packet; VL is the host port's VL for it.
	SL, VL uint8
	// traced: a hook listens (AcceptHook). The packet paths test it here
	// rather than read the tracer's hook list, which lies in a line of its
	// own at the struct's end: at 1,024 hosts that line was a cache miss
	// per event.
	traced    bool
	injecting bool
	// sharedWire: another source sends on this port too (SharePort), so
	// every packet's end is a PortReady, as the two take turns there.
	sharedWire bool
	Index      int // host index

	// Traffic is the host's synthetic traffic: gaps, destinations, sizes.
	Traffic *Source
	// LIDOf maps a host index to its LID.
	LIDOf func(host int) uint16
	// OnDeliver is called for each packet accepted here.
	OnDeliver func(pkt *ib.Packet, tail ib.PS)
	// OnInject is called for each packet put on the wire.
	OnInject func(pkt *ib.Packet)

	queue   components.FIFO[*ib.Packet] // source queue: the FIFO model the RTL co-simulates
	pending Packet                      // the next packet the traffic source asked for

	psnTo     []uint32 // next PSN per destination host: each (source, destination) pair is one flow, as one RC QP would be
	measureLo ib.PS    // packets created in [measureLo, measureHi) are measured
	measureHi ib.PS
	Created   uint64 // packets created by the injection process
	Sent      uint64
	Received  uint64

	stall components.StallTimer // the head packet waiting for credits with the wire free
	// cc is congestion control's state (EnableCC), nil when off. The CC
	// endpoint runs its own copies of the per-packet methods
	// (endpoint_cc.go), so these run exactly what they ran before CC.
	cc        *ccSource
	Skipped   uint64 // creations skipped because the source queue was full
	WrongDest uint64 // packets that arrived at a host they were not for

	Name string
	tracer
	_ [48]byte // to 448 bytes
}

// AcceptHook adds a hook (sim.Hookable) and notes that the host is traced.
func (e *Endpoint) AcceptHook(h sim.Hook) {
	e.tracer.AcceptHook(h)
	e.traced = true
}

// MaxSourceQueue bounds a host's source queue in packets; past it the
// injection process skips (the host is saturated: more offered load cannot
// raise accepted load, only memory).
const MaxSourceQueue = 4096

const evInject uint8 = 1

// NewEndpoint makes an endpoint; its traffic comes from src.
func NewEndpoint(s *components.Sim, name string, index int, lid uint16, src *Source) *Endpoint {
	return &Endpoint{tracer: tracer{path: name}, Name: name, Index: index, LID: lid, s: s,
		Traffic: src, queue: components.MakeFIFO[*ib.Packet](MaxSourceQueue)}
}

// Attach gives the endpoint its port.
func (e *Endpoint) Attach(p *link.Port) { e.port = p }

// Port returns the endpoint's port.
func (e *Endpoint) Port() *link.Port { return e.port }

// Start begins injection at the process's first gap; packets created in
// [lo, hi) are marked for measurement.
func (e *Endpoint) Start(lo, hi ib.PS) {
	e.measureLo, e.measureHi = lo, hi
	if e.Traffic.Idle() {
		return
	}
	if e.cc != nil {
		e.startCC(lo, hi)
		return
	}
	e.injecting = true
	e.pending = e.Traffic.Next(sendOnlyBytes)
	e.s.Schedule(e.s.Now()+e.pending.Gap, e, evInject)
}

// sendOnlyBytes is the wire size of a synthetic packet (RC SEND ONLY).
func sendOnlyBytes(payload int) int {
	p := ib.Packet{Opcode: ib.SendOnly, PayloadLen: payload}
	return p.WireBytes()
}

// StopInjecting ends the injection process.
func (e *Endpoint) StopInjecting() { e.injecting = false }

// Queued returns the packets waiting in the source queue (with congestion
// control, CCQueued the rest).
func (e *Endpoint) Queued() int { return e.queue.Len() }

// CreditStallAt returns the time the head packet has waited for credits
// with the wire free up to now, a stall still going on included: sampled at
// a window's two ends, the stall inside it.
func (e *Endpoint) CreditStallAt(now ib.PS) ib.PS { return e.stall.Total(now) }

// HandleEvent implements components.EventHandler: one packet creation.
func (e *Endpoint) HandleEvent(ev *components.Event) {
	if !e.injecting {
		return
	}
	now := e.s.Now()
	dst, size := e.pending.Dst, e.pending.Payload
	if dst >= 0 && dst != e.Index {
		if e.queue.Full() {
			e.Skipped++
		} else {
			pkt := e.newPacket(now, dst, size)
			e.queue.Push(pkt)
			e.port.Pending(true)
			e.trySend()
		}
	}
	e.pending = e.Traffic.Next(sendOnlyBytes)
	e.s.Schedule(now+e.pending.Gap, e, evInject)
}

// newPacket makes the SEND ONLY packet of size payload bytes that the
// injection process creates at now for dst, and counts it created.
func (e *Endpoint) newPacket(now ib.PS, dst, size int) *ib.Packet {
	pkt := e.s.NewPacket()
	pkt.Opcode = ib.SendOnly
	pkt.SL, pkt.VL = e.SL, e.VL
	pkt.SLID, pkt.DLID = e.LID, e.LIDOf(dst)
	pkt.PayloadLen = size
	pkt.InjectAt = now
	pkt.Src, pkt.Dst = int32(e.Index), int32(dst)
	pkt.Measure = now >= e.measureLo && now < e.measureHi
	// The destination sees each source as its own QP (QPN = source
	// index + 1) with its own PSN sequence, so the ordering checker
	// can hold every flow to in-order delivery.
	if dst >= len(e.psnTo) {
		e.psnTo = append(e.psnTo, make([]uint32, dst+1-len(e.psnTo))...)
	}
	pkt.DestQP = uint32(e.Index) + 1
	pkt.PSN = e.psnTo[dst]
	e.psnTo[dst] = (e.psnTo[dst] + 1) & 0xFFFFFF
	pkt.ICRC = ib.ComputeICRC(pkt)
	e.Created++
	return pkt
}

func (e *Endpoint) trySend() {
	pkt, ok := e.queue.Peek()
	if !ok || !e.port.Idle() {
		return
	}
	now := e.s.Now()
	if !e.port.HasCredits(int(pkt.VL), pkt.Credits()) {
		e.stall.Start(now)
		return
	}
	e.stall.Stop(now)
	e.queue.Pop()
	e.Sent++
	if e.OnInject != nil {
		e.OnInject(pkt)
	}
	if e.traced {
		e.tracePacket(now, components.TraceInject, pkt)
	}
	switch {
	case e.sharedWire || e.queue.Len() > 0:
		e.port.Send(pkt) // the next one goes when this one's tail has left
	default:
		e.port.SendQuiet(pkt) // an injection tries the wire: no news needed
		e.port.Pending(false) // nor credits, until a packet is queued
	}
}

// SharePort notes that another source sends on the endpoint's port and
// takes turns with it in the owner's PortReady, which must then come at
// the end of every packet the endpoint sends.
func (e *Endpoint) SharePort() { e.sharedWire = true }

// PortReady implements link.Owner.
func (e *Endpoint) PortReady(p *link.Port) { e.trySend() }

// PacketArrived implements link.Owner: the host accepts the packet at its
// tail; its blocks free then (an endpoint drains at line rate).
func (e *Endpoint) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	if pkt.DLID != e.LID {
		e.WrongDest++
	}
	e.Received++
	ev := e.s.Schedule(tail, (*endpointSink)(e), 0)
	ev.Pkt = pkt
}

// endpointSink handles an endpoint's tail-arrival events.
type endpointSink Endpoint

// HandleEvent releases the packet's blocks and reports the delivery.
func (k *endpointSink) HandleEvent(ev *components.Event) {
	e := (*Endpoint)(k)
	pkt := ev.Pkt
	e.port.Release(int(pkt.VL), pkt.Credits())
	if e.traced {
		e.tracePacket(ev.At(), components.TraceDeliver, pkt)
	}
	if e.OnDeliver != nil {
		e.OnDeliver(pkt, ev.At())
	}
	e.s.FreePacket(pkt)
}

// String names the endpoint.
func (e *Endpoint) String() string { return fmt.Sprintf("%s(lid %d)", e.Name, e.LID) }
