package fabric

import (
	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
	"github.com/hcasim/hcasim/workload"
)

// mcastMixedHost is a group member that also sends unicast background
// (workload.background_hosts: all): its multicast host and its packet
// endpoint share the host's port. An arriving packet goes by its DLID, a
// multicast LID to the member and any other to the endpoint. The wire is
// offered to the two in turn, a packet each while both have one ready (the
// one that did not send last goes first): packet endpoints have no VL
// arbitration tables, so a member's port does not weigh its VLs as a
// switch's does.
type mcastMixedHost struct {
	m *workload.McastHost
	e *workload.Endpoint
	// mcastLast: the multicast host put the port's latest packet on the
	// wire (the endpoint goes first next).
	mcastLast    bool
	mSeen, eSeen uint64 // the two's Sent when last looked at
}

// Attach implements HostDevice: both share the port.
func (h *mcastMixedHost) Attach(p *link.Port) {
	h.m.Attach(p)
	h.e.Attach(p)
	h.m.SharePort()
	h.e.SharePort()
}

// PacketArrived implements link.Owner.
func (h *mcastMixedHost) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	if pkt.DLID >= switchasic.FirstMLID && pkt.DLID <= switchasic.LastMLID {
		h.m.PacketArrived(p, pkt, head, tail)
		return
	}
	h.e.PacketArrived(p, pkt, head, tail)
}

// PortReady implements link.Owner: each of the two may send, the one that
// did not send last first; whichever sends takes the port (it is busy for
// the other). A packet sent outside this (a source that found the port
// idle when it made the packet) counts as the last too.
func (h *mcastMixedHost) PortReady(p *link.Port) {
	h.noteSent()
	if h.mcastLast {
		h.e.PortReady(p)
		h.m.PortReady(p)
	} else {
		h.m.PortReady(p)
		h.e.PortReady(p)
	}
	h.noteSent()
}

// noteSent records which of the two sent since it last looked.
func (h *mcastMixedHost) noteSent() {
	dm, de := h.m.Sent != h.mSeen, h.e.Sent != h.eSeen
	switch {
	case dm && !de:
		h.mcastLast = true
	case de && !dm:
		h.mcastLast = false
	}
	h.mSeen, h.eSeen = h.m.Sent, h.e.Sent
}

// AcceptHook implements sim.Hookable: a hook sees both (their trace
// events carry the host's name).
func (h *mcastMixedHost) AcceptHook(hook sim.Hook) {
	h.m.AcceptHook(hook)
	h.e.AcceptHook(hook)
}

// NumHooks implements sim.Hookable.
func (h *mcastMixedHost) NumHooks() int { return h.m.NumHooks() }

// Hooks implements sim.Hookable.
func (h *mcastMixedHost) Hooks() []sim.Hook { return h.m.Hooks() }
