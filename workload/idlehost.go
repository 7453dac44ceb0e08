package workload

import (
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// IdleHost is a host that sends nothing and is sent nothing: the hosts of
// a fabric outside a two-host test without background traffic, or in no
// multicast group. Only a wrong forwarding entry can send it a packet; one
// that arrives anyway is taken at its tail as an endpoint takes it (its
// blocks released, so the sender's credits come back and the run goes on),
// counted in WrongDest, and announced as a deliver event, so the lossless
// checker names the host it was delivered to.
type IdleHost struct {
	tracer
	Name      string
	WrongDest uint64 // packets that arrived here: every one is misrouted
	s         *components.Sim
	port      *link.Port
}

// NewIdleHost returns an idle host named name (its trace path).
func NewIdleHost(s *components.Sim, name string) *IdleHost {
	return &IdleHost{tracer: tracer{path: name}, Name: name, s: s}
}

// Attach implements the fabric's host device: the host's one port.
func (h *IdleHost) Attach(p *link.Port) { h.port = p }

// PortReady implements link.Owner: the host has nothing to send.
func (h *IdleHost) PortReady(*link.Port) {}

// PacketArrived implements link.Owner: the packet is counted and taken at
// its tail.
func (h *IdleHost) PacketArrived(_ *link.Port, pkt *ib.Packet, _, tail ib.PS) {
	h.WrongDest++
	ev := h.s.Schedule(tail, (*idleSink)(h), 0)
	ev.Pkt = pkt
}

// idleSink handles an idle host's tail-arrival events.
type idleSink IdleHost

// HandleEvent releases the packet's blocks and announces the delivery.
func (k *idleSink) HandleEvent(ev *components.Event) {
	h := (*IdleHost)(k)
	pkt := ev.Pkt
	h.port.Release(int(pkt.VL), pkt.Credits())
	h.tracePacket(ev.At(), components.TraceDeliver, pkt)
	h.s.FreePacket(pkt)
}
