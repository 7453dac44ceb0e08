package hca

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// portTap stands between a device and its IB port (as the port's owner) and
// loses the packets drop picks, as a faulty link would. A lost packet's
// receive buffer is freed at once, so credits keep flowing. The tap also
// sees every packet that arrives, lost or not.
type portTap struct {
	d       *Device
	drop    func(pkt *ib.Packet) bool
	dropped int
}

// tapPort makes a portTap the owner of d's port; set drop to lose packets.
func tapPort(d *Device) *portTap {
	tap := &portTap{d: d}
	d.Port.Owner = tap
	return tap
}

// PacketArrived implements link.Owner.
func (tap *portTap) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	if tap.drop != nil && tap.drop(pkt) {
		tap.dropped++
		p.Release(int(pkt.VL), pkt.Credits())
		tap.d.s.FreePacket(pkt)
		return
	}
	tap.d.PacketArrived(p, pkt, head, tail)
}

// PortReady implements link.Owner.
func (tap *portTap) PortReady(p *link.Port) { tap.d.PortReady(p) }

// inject sends a hand-built request from a's port to qb at B, as a rogue
// or confused requester would: the QP's own requester knows nothing of it.
func (p *pair) inject(t *testing.T, pkt *ib.Packet) {
	pkt.SLID, pkt.DLID, pkt.DestQP = p.a.LID, p.b.LID, p.qb.Num
	pkt.InjectAt = p.s.Now()
	pkt.ICRC = ib.ComputeICRC(pkt)
	require.True(t, p.a.Port.Idle() && p.a.Port.CanSend(pkt), "the injected packet needs an idle wire")
	p.a.Port.Send(pkt)
}
