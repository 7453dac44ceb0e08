package hca

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// txRecorder keeps the data packets a port starts sending.
type txRecorder struct{ pkts []ib.Packet }

func (r *txRecorder) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	if ev := ctx.Item.(*components.TraceEvent); ev.Kind == components.TraceTxStart && ev.Pkt != nil && ev.Pkt.Kind == ib.Data {
		p := *ev.Pkt
		p.Payload = append([]byte(nil), ev.Pkt.Payload...)
		r.pkts = append(r.pkts, p)
	}
}

// udQP makes a UD QP on d in RTS with Q_Key qkey.
func udQP(t *testing.T, d *Device, pd uint32, qkey uint32, mtu int) *QP {
	qp := d.CreateUDQP(pd, d.CreateCQ(16), d.CreateCQ(16), 64, 64, qkey)
	require.NoError(t, d.ModifyQP(qp, QPAttr{State: QPInit}))
	require.NoError(t, d.ModifyQP(qp, QPAttr{State: QPRTR, MTU: mtu}))
	require.NoError(t, d.ModifyQP(qp, QPAttr{State: QPRTS}))
	return qp
}

// TestUDMulticast sends datagrams to multicast LIDs back to back (no
// switch: the cable takes the packet to the one peer, whose HCA then
// replicates it to the QPs attached to the group).
//
// Host b has three UD QPs: q1 and q2 attached to MLID 0xC000 (q1 with 3
// receives posted, q2 with 2), q3 attached to nothing. Host a sends 3
// datagrams of 9 bytes to 0xC000 (QP 0xFFFFFF) and 1 to 0xC001, which b
// has no QP attached to. Expected, from the rules alone:
//   - q1 completes 3 receives; q2 completes 2 and drops its third copy
//     (UDDrops 1); q3 sees nothing (it is not attached, and a multicast
//     packet goes to attached QPs only, whatever its DestQP says);
//   - McastCopies = 3 packets × 2 attached QPs = 6; McastDrops = 1 (the
//     packet to 0xC001); RxPackets = 4.
//   - every multicast packet carries a GRH: 8 LRH + 40 GRH + 12 BTH + 8
//     DETH + 9 payload + 3 pad + 4 ICRC + 2 VCRC = 86 bytes on the wire,
//     40 more than the same datagram to a unicast LID (46); its wire
//     encoding says LNH 3 (GRH next) and its DGID is ff12::c000.
func TestUDMulticast(t *testing.T) {
	cfg := Defaults()
	lc := edrLink()
	lc.MTU = 1024
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	var tx txRecorder
	a.Port.AcceptHook(&tx)
	pa, pb := a.AllocPD(), b.AllocPD()
	qa := udQP(t, a, pa, 0x1111, lc.MTU)
	q1, q2, q3 := udQP(t, b, pb, 0x2222, lc.MTU), udQP(t, b, pb, 0x2222, lc.MTU), udQP(t, b, pb, 0x2222, lc.MTU)
	const mlid, other = 0xC000, 0xC001
	require.NoError(t, b.AttachMcast(q1, mlid))
	require.NoError(t, b.AttachMcast(q2, mlid))
	assert.Equal(t, []*QP{q1, q2}, b.McastMembers(mlid))

	bufA, bufB := a.Malloc(8192), b.Malloc(16384)
	mrA := a.RegMR(pa, bufA, 8192, AccessLocalWrite)
	mrB := b.RegMR(pb, bufB, 16384, AccessLocalWrite)
	a.Mem.Write(bufA, []byte("multicast"))
	post := func(qp *QP, n int, base uint64) {
		for i := 0; i < n; i++ {
			require.NoError(t, b.PostRecv(qp, &RecvWR{ID: uint64(i), Addr: base + uint64(i)*1100, Length: 1064, LKey: mrB.LKey}))
		}
	}
	post(q1, 3, bufB)
	post(q2, 2, bufB+4096)
	post(q3, 3, bufB+8192)
	send := func(id uint64, dlid uint16) {
		require.NoError(t, a.PostSend(qa, &SendWR{ID: id, Opcode: WRSend, Signaled: true, LocalAddr: bufA, Length: 9,
			LKey: mrA.LKey, UD: true, DLID: dlid, RemoteQPN: ib.MulticastQPN, RemoteQKey: 0x2222}))
	}
	for i := range 3 {
		send(uint64(i), mlid)
	}
	send(3, other)
	s.StopAt(50 * ib.Microsecond)
	require.NoError(t, s.Run())

	var wc [8]WC
	assert.Equal(t, 4, a.PollCQ(qa.SendCQ, wc[:]), "UD: every send completes when its packet leaves")
	n1 := b.PollCQ(q1.RecvCQ, wc[:])
	require.Equal(t, 3, n1)
	for _, w := range wc[:n1] {
		assert.Equal(t, WCSuccess, w.Status)
		assert.Equal(t, uint32(40+9), w.ByteLen)
		assert.Equal(t, qa.Num, w.SrcQP)
	}
	assert.Equal(t, 2, b.PollCQ(q2.RecvCQ, wc[:]))
	assert.Equal(t, 0, b.PollCQ(q3.RecvCQ, wc[:]))
	got := make([]byte, 9)
	for _, at := range []uint64{bufB, bufB + 2*1100, bufB + 4096 + 1100} {
		b.Mem.Read(at+UDGRHBytes, got)
		assert.Equal(t, []byte("multicast"), got)
	}
	assert.Equal(t, int64(1), b.Counters.UDDrops, "q2's third copy")
	assert.Equal(t, int64(6), b.Counters.McastCopies)
	assert.Equal(t, int64(1), b.Counters.McastDrops)
	assert.Equal(t, int64(4), b.Counters.RxPackets)

	require.Len(t, tx.pkts, 4)
	mgid := ib.MGID(mlid)
	for _, p := range tx.pkts {
		assert.True(t, p.GRH)
		assert.Equal(t, uint32(ib.MulticastQPN), p.DestQP)
		assert.Equal(t, 86, p.WireBytes())
		w := ib.AppendWire(nil, &p)
		require.Len(t, w, 86)
		assert.Equal(t, byte(3), w[1]&3, "LNH: GRH next")
		if p.DLID == mlid {
			assert.Equal(t, mgid[:], w[8+24:8+40], "DGID")
		}
		back, err := ib.ParseWire(w)
		require.NoError(t, err)
		assert.True(t, back.GRH)
		assert.Equal(t, p.DLID, back.DLID)
	}
	// Every port buffer block came back: b's receive buffer is empty.
	assert.Equal(t, 0, b.Port.BufferUsed(0))
}

// TestMcastAttachRules: only UD QPs attach, only to multicast LIDs, once;
// a detached QP gets no more copies.
func TestMcastAttachRules(t *testing.T) {
	cfg := Defaults()
	lc := edrLink()
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	pb := b.AllocPD()
	rc := b.CreateQP(pb, b.CreateCQ(16), b.CreateCQ(16), 64, 64)
	ud := udQP(t, b, pb, 1, lc.MTU)
	assert.EqualError(t, b.AttachMcast(rc, 0xC000), "qp 0x100: only a UD QP can attach to a multicast group")
	assert.EqualError(t, b.AttachMcast(ud, 0x0012), "qp 0x101: LID 0x12 is not a multicast LID (0xc000 to 0xfffe)")
	assert.EqualError(t, b.AttachMcast(ud, 0xFFFF), "qp 0x101: LID 0xffff is not a multicast LID (0xc000 to 0xfffe)")
	require.NoError(t, b.AttachMcast(ud, 0xC005))
	assert.EqualError(t, b.AttachMcast(ud, 0xC005), "qp 0x101: already attached to multicast LID 0xc005")
	require.NoError(t, b.DetachMcast(ud, 0xC005))
	assert.Empty(t, b.McastMembers(0xC005))
	assert.EqualError(t, b.DetachMcast(ud, 0xC005), "qp 0x101: not attached to multicast LID 0xc005")

	// Detached, the QP's group has no member: a packet to it is dropped
	// whole, though the QP has a receive posted.
	pa := a.AllocPD()
	qa := udQP(t, a, pa, 1, lc.MTU)
	buf := b.Malloc(4096)
	mr := b.RegMR(pb, buf, 4096, AccessLocalWrite)
	require.NoError(t, b.PostRecv(ud, &RecvWR{Addr: buf, Length: 4096, LKey: mr.LKey}))
	require.NoError(t, a.PostSend(qa, &SendWR{Opcode: WRSend, Signaled: true, Length: 0, UD: true,
		DLID: 0xC005, RemoteQPN: ib.MulticastQPN, RemoteQKey: 1}))
	s.StopAt(20 * ib.Microsecond)
	require.NoError(t, s.Run())
	assert.Equal(t, int64(1), b.Counters.McastDrops)
	assert.Equal(t, int64(0), b.Counters.McastCopies)
	var wc [1]WC
	assert.Equal(t, 0, b.PollCQ(ud.RecvCQ, wc[:]))
}

// TestMcastLoopback: the sending HCA's own QPs attached to the group get
// their copies inside the HCA (the switch would not send one back), the
// sending QP included; a QP of the sender not attached gets none. Host a
// sends 2 datagrams of 9 bytes to MLID 0xC000 from qa, with qa and qa2
// attached on a and qb on b: qa, qa2 and qb each complete 2 receives;
// a's McastLoopback is 2 (one per packet, whatever the number of local
// members), its McastCopies 2 × 2 = 4, and b's McastCopies 2. A loopback
// copy takes no port buffer: a's port received nothing (RxPackets 0).
// The looped copy reaches transport-rx when the packet's last byte has
// left; the copy on the wire reaches b's a cable's flight and b's own
// store-and-forward later, so a's copies complete first.
func TestMcastLoopback(t *testing.T) {
	cfg := Defaults()
	lc := edrLink()
	lc.MTU = 1024
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	pa, pb := a.AllocPD(), b.AllocPD()
	qa, qa2, qa3 := udQP(t, a, pa, 7, lc.MTU), udQP(t, a, pa, 7, lc.MTU), udQP(t, a, pa, 7, lc.MTU)
	qb := udQP(t, b, pb, 7, lc.MTU)
	const mlid = 0xC000
	require.NoError(t, a.AttachMcast(qa, mlid))
	require.NoError(t, a.AttachMcast(qa2, mlid))
	require.NoError(t, b.AttachMcast(qb, mlid))
	bufA, bufB := a.Malloc(16384), b.Malloc(8192)
	mrA := a.RegMR(pa, bufA, 16384, AccessLocalWrite)
	mrB := b.RegMR(pb, bufB, 8192, AccessLocalWrite)
	a.Mem.Write(bufA, []byte("loopback!"))
	for i, qp := range []*QP{qa, qa2, qa3} {
		for j := range 2 {
			require.NoError(t, a.PostRecv(qp, &RecvWR{ID: uint64(j), Addr: bufA + 4096 + uint64(i*2+j)*1100, Length: 1064, LKey: mrA.LKey}))
		}
	}
	for j := range 2 {
		require.NoError(t, b.PostRecv(qb, &RecvWR{ID: uint64(j), Addr: bufB + uint64(j)*1100, Length: 1064, LKey: mrB.LKey}))
	}
	var done [4]ib.PS
	a.OnCQE = func(cq *CQ, now ib.PS) {
		if cq == qa2.RecvCQ && done[0] == 0 {
			done[0] = now
		}
	}
	b.OnCQE = func(cq *CQ, now ib.PS) {
		if cq == qb.RecvCQ && done[1] == 0 {
			done[1] = now
		}
	}
	for i := range 2 {
		require.NoError(t, a.PostSend(qa, &SendWR{ID: uint64(i), Opcode: WRSend, Signaled: true, LocalAddr: bufA, Length: 9,
			LKey: mrA.LKey, UD: true, DLID: mlid, RemoteQPN: ib.MulticastQPN, RemoteQKey: 7}))
	}
	s.StopAt(50 * ib.Microsecond)
	require.NoError(t, s.Run())
	var wc [4]WC
	for _, x := range []struct {
		d    *Device
		qp   *QP
		want int
	}{{a, qa, 2}, {a, qa2, 2}, {a, qa3, 0}, {b, qb, 2}} {
		n := x.d.PollCQ(x.qp.RecvCQ, wc[:])
		assert.Equal(t, x.want, n, "qp 0x%x", x.qp.Num)
		for _, w := range wc[:n] {
			assert.Equal(t, WCSuccess, w.Status)
			assert.Equal(t, qa.Num, w.SrcQP)
		}
	}
	got := make([]byte, 9)
	a.Mem.Read(bufA+4096+2*1100+UDGRHBytes, got)
	assert.Equal(t, []byte("loopback!"), got)
	assert.Equal(t, int64(2), a.Counters.McastLoopback)
	assert.Equal(t, int64(4), a.Counters.McastCopies)
	assert.Equal(t, int64(0), a.Counters.RxPackets)
	assert.Equal(t, int64(2), b.Counters.McastCopies)
	assert.Equal(t, int64(0), b.Counters.McastLoopback)
	require.NotZero(t, done[0])
	assert.Less(t, done[0], done[1], "the looped copy skips the cable")
}
