package hca

import (
	"math/bits"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// PortQoS is what a subnet manager programs into an HCA port for quality of
// service (IBA 7.6.6 SL-to-VL mapping, 7.6.9 VL arbitration; ib-facts §3):
// the VL each SL goes on and how the port shares its wire between VLs.
type PortQoS struct {
	// SL2VL maps each SL to a data VL below the port's VL count, or to 15,
	// which the port refuses to send on (ModifyQP says so at RTR).
	SL2VL [16]uint8
	// VLArbHigh and VLArbLow are the port's VL arbitration tables, each VL
	// already masked to the port's VLs (switchasic.Config.VLArbTables), and
	// HighLimit its LimitOfHighPriority (4096-byte units, 255 unbounded).
	// With no entries at all the port takes its VLs in turn (round robin).
	VLArbHigh, VLArbLow []components.VLArbEntry
	HighLimit           uint8
}

// SetPortQoS programs the port's SL-to-VL table and VL arbitration. Call it
// before the QPs reach RTR: a QP's VL is looked up then.
func (d *Device) SetPortQoS(q PortQoS) {
	d.sl2vl = q.SL2VL
	d.tx.arb = nil
	if len(q.VLArbHigh)+len(q.VLArbLow) > 0 {
		d.tx.arb = components.NewVLArbiter(q.VLArbHigh, q.VLArbLow, q.HighLimit)
	}
}

// SL2VL returns the port's SL-to-VL table.
func (d *Device) SL2VL() [16]uint8 { return d.sl2vl }

// txPort is the transmit side of an HCA port: a request and a response
// queue per data VL, each VL with its own share of the transmit buffer,
// and the VL arbiter that picks which VL's head packet goes next. A VL
// whose head lacks credits (or whose share of the buffer is full) holds
// back only its own QPs; every QP's packets are on one VL (its SL's), in
// one queue each for requests and responses, so each keeps its order.
type txPort struct {
	vl [ib.ManagementVL]txVL // data VLs 0..14 (an HCA sends no VL15 SMPs)
	// used has bit v set once a QP sends on VL v (set at RTR): the VLs
	// trySend looks at and the scheduler grants for.
	used uint16
	// full has bit v set while VL v's request queue holds at least
	// hca.tx_buffer_bytes of wire bytes: the scheduler grants no packet to
	// a QP on it until one leaves.
	full uint16
	// markers counts the UD completion markers queued (entries with no
	// packet, rare: a UD WQE flushed or failed before sending), so the
	// transmit loop looks for them only when there are some.
	markers int
	// arb is the port's VL arbiter (PortQoS); nil: round robin from rr.
	arb *components.VLArbiter
	rr  int // round-robin pointer over VLs when arb is nil
}

// txVL is one VL's share of the transmit side.
type txVL struct {
	req, resp txQueue
	reqBytes  int // wire bytes of the request packets in req
}

// held notes that a request packet of bytes wire bytes was queued on vl
// (its req.push is the caller's: an entry passed down by value would cost
// a copy per packet).
func (t *txPort) held(vl uint8, bytes, limit int) {
	v := &t.vl[vl]
	v.reqBytes += bytes
	if v.reqBytes >= limit {
		t.full |= 1 << vl
	}
}

// freed notes that request bytes left vl's queue.
func (t *txPort) freed(vl int, bytes, limit int) {
	v := &t.vl[vl]
	v.reqBytes -= bytes
	if v.reqBytes < limit {
		t.full &^= 1 << uint(vl)
	}
}

// roomFor reports whether a QP on vl may be granted a packet: its VL's
// share of the transmit buffer is not full.
func (t *txPort) roomFor(vl uint8) bool { return t.full&(1<<vl) == 0 }

// anyRoom reports whether some VL a QP sends on has room in its share of
// the transmit buffer.
func (t *txPort) anyRoom() bool { return t.full&t.used != t.used }

// pick returns the VL to send on next among ready (bit v: VL v's head
// packet may start now, credits included): the VL arbiter's choice, or
// the first ready VL at or after the round-robin pointer, which then
// moves past it. The caller asks only for a port of more than one VL.
func (t *txPort) pick(ready uint16) int {
	if t.arb != nil {
		return t.arb.Pick(ready)
	}
	n := len(t.vl)
	rot := (ready>>uint(t.rr) | ready<<uint(n-t.rr)) & (1<<n - 1)
	v := (t.rr + bits.TrailingZeros16(rot)) % n
	t.rr = (v + 1) % n
	return v
}
