package hca

import (
	"fmt"
	"slices"

	"github.com/hcasim/hcasim/ib"
)

// mcastGroup is one multicast group the device's QPs are attached to: the
// HCA's multicast table entry (ibv_attach_mcast), by MLID.
type mcastGroup struct {
	mlid uint16
	qps  []*QP // attached, in attach order: each gets a copy of a packet
}

// AttachMcast attaches UD QP qp to the multicast group of mlid
// (ibv_attach_mcast: the group's MGID, ib.MGID(mlid) in the model, and
// its MLID). A packet the port receives for mlid is then handed to every
// attached QP, each consuming a receive WQE of its own. Only a UD QP may
// join (verbs returns EINVAL for another type), mlid must be a multicast
// LID, and a QP attaches to a group once.
func (d *Device) AttachMcast(qp *QP, mlid uint16) error {
	if !qp.UD {
		return fmt.Errorf("qp 0x%x: only a UD QP can attach to a multicast group", qp.Num)
	}
	if !ib.IsMulticastLID(mlid) {
		return fmt.Errorf("qp 0x%x: LID 0x%x is not a multicast LID (0xc000 to 0xfffe)", qp.Num, mlid)
	}
	g := d.mcastGroupOf(mlid)
	if g == nil {
		d.mcast = append(d.mcast, mcastGroup{mlid: mlid})
		g = &d.mcast[len(d.mcast)-1]
	}
	if slices.Contains(g.qps, qp) {
		return fmt.Errorf("qp 0x%x: already attached to multicast LID 0x%x", qp.Num, mlid)
	}
	g.qps = append(g.qps, qp)
	return nil
}

// DetachMcast detaches qp from the group of mlid (ibv_detach_mcast); a QP
// not attached is an error.
func (d *Device) DetachMcast(qp *QP, mlid uint16) error {
	g := d.mcastGroupOf(mlid)
	i := -1
	if g != nil {
		i = slices.Index(g.qps, qp)
	}
	if i < 0 {
		return fmt.Errorf("qp 0x%x: not attached to multicast LID 0x%x", qp.Num, mlid)
	}
	g.qps = slices.Delete(g.qps, i, i+1)
	return nil
}

// McastMembers returns the QPs attached to the group of mlid, in attach
// order.
func (d *Device) McastMembers(mlid uint16) []*QP {
	if g := d.mcastGroupOf(mlid); g != nil {
		return slices.Clone(g.qps)
	}
	return nil
}

// mcastGroupOf returns the device's entry for mlid, nil if it has none. A
// linear scan: a host joins few groups.
func (d *Device) mcastGroupOf(mlid uint16) *mcastGroup {
	for i := range d.mcast {
		if d.mcast[i].mlid == mlid {
			return &d.mcast[i]
		}
	}
	return nil
}

// deliverMcast hands a packet to a multicast LID to every QP attached to
// its group, each a UD receive of its own (receiveUD: Q_Key check, a
// receive WQE or a counted drop, the payload after the GRH area, a CQE).
// A packet with no QP attached to its group, or not a UD SEND with a GRH
// to QP 0xFFFFFF (IBA 9.8.1; a multicast packet carries a GRH), is
// dropped and counted (Counters.McastDrops).
//
// The port's receive buffer frees as for a unicast packet when one QP is
// attached (the common case: perftest's -g attaches one). With several,
// it frees when the last of the copies' payload writes ends, or, when one
// of them is booked later than the PCIe link books yet, by the estimate
// receive makes for a payload it does not write (a simplification: the
// hardware's replication buffer is not published).
func (d *Device) deliverMcast(pkt *ib.Packet) {
	g := d.mcastGroupOf(pkt.DLID)
	if g == nil || len(g.qps) == 0 || !pkt.GRH || pkt.DestQP != ib.MulticastQPN ||
		pkt.Opcode != ib.UDSendOnly && pkt.Opcode != ib.UDSendOnlyImm {
		d.Counters.McastDrops++
		return
	}
	d.Counters.McastCopies += int64(len(g.qps))
	if len(g.qps) == 1 {
		d.receiveUD(g.qps[0], pkt)
		return
	}
	blocks := d.rxBlocks
	var end ib.PS
	later := false
	for _, qp := range g.qps {
		// No copy's write frees the buffer itself; the packet's does, below.
		d.rxWriteEnd, d.rxBlocks = 0, 0
		d.receiveUD(qp, pkt)
		if d.rxWriteEnd < 0 {
			later = true
		}
		end = max(end, d.rxWriteEnd)
	}
	d.rxBlocks = blocks
	if later {
		end = 0
	}
	d.rxWriteEnd = end
}

// loopback gives the QPs of this HCA attached to the group of the
// multicast packet pkt, about to leave on the wire, a copy of their own:
// the switch never sends a packet back out of the port it came in on, so
// the sender's own members get theirs inside the HCA, as ConnectX loops a
// multicast send back (unless a QP is created with
// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, which the model does not have: the
// sending QP itself, if attached, gets a copy too). The copy enters the
// receive pipeline when the packet's last byte has left (its wire time,
// as if it had crossed a cable of no length) and goes through
// transport-rx, then deliverMcast. It takes no port buffer and no credit,
// and is not announced as a delivery: the fabric did not carry it.
func (d *Device) loopback(pkt *ib.Packet) {
	g := d.mcastGroupOf(pkt.DLID)
	if g == nil || len(g.qps) == 0 {
		return
	}
	// The copy keeps the packet's number (it is the same packet) and has
	// bytes of its own, so a deferred ICRC stays valid on both.
	c := d.s.NewPacketNumbered(pkt.Seq)
	buf := c.Payload[:0]
	*c = *pkt
	c.Payload = append(buf, pkt.Payload...)
	d.Counters.McastLoopback++
	e := d.at(d.s.Now()+d.Port.Timing().Serialization(pkt.WireBytes()), evLoopback)
	e.Pkt = c
}

// receiveLoopback hands a looped-back copy to the attached QPs: a
// received packet that holds no port buffer.
func (d *Device) receiveLoopback(pkt *ib.Packet) {
	d.rxWriteEnd, d.rxVL, d.rxBlocks = 0, int8(pkt.VL), 0
	d.deliverMcast(pkt)
	d.rxWriteEnd = 0
	d.s.FreePacket(pkt)
}
