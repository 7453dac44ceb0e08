package hca

import (
	"errors"
	"syscall"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/verif"
)

// TestDestroyBusyRules: each destroy verb refuses an object something
// still uses with EBUSY and leaves it usable, then succeeds once the user
// is gone, and a second destroy is ENOENT. The rules (Linux
// drivers/infiniband/core/verbs.c, uverbs_std_types.c):
//
//   - ib_destroy_cq_user: cq->usecnt, raised by each QP's send_cq and
//     recv_cq at create: a CQ a QP uses is EBUSY.
//   - ib_destroy_srq_user: srq->usecnt, raised by each QP on it.
//   - uverbs_free_pd: pd->usecnt, raised by each QP, SRQ, MR and MW.
//   - ib_destroy_qp_user: qp->usecnt, raised by ib_attach_mcast
//     (uverbs_free_qp: a non-empty mcast_list is EBUSY).
//   - an MR with a window bound: EINVAL (rxe_dereg_mr, KeyTable.Deregister).
//
// A destroyed QP's number is not given again: the next QP made takes the
// number after the last one made (rxe's cyclic allocation reaches a freed
// number only after its whole range; the model never wraps).
func TestDestroyBusyRules(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	b, pd := p.b, p.qb.PD

	// CQ: B's qb2 sends and receives on its own two CQs.
	scq, rcq := p.qb2.SendCQ, p.qb2.RecvCQ
	assert.True(t, errors.Is(b.DestroyCQ(scq), syscall.EBUSY), "send CQ of a live QP")
	assert.True(t, errors.Is(b.DestroyCQ(rcq), syscall.EBUSY), "receive CQ of a live QP")

	// SRQ with a QP on it.
	srq, err := b.CreateSRQ(pd, 7, 1)
	require.NoError(t, err)
	qs, err := b.CreateQPSRQ(pd, b.CreateCQ(16), b.CreateCQ(16), 64, srq)
	require.NoError(t, err)
	assert.True(t, errors.Is(b.DestroySRQ(srq), syscall.EBUSY), "an SRQ a QP takes from")

	// QP attached to a multicast group (a UD QP).
	ud := b.CreateUDQP(pd, b.CreateCQ(16), b.CreateCQ(16), 64, 8, 0x11)
	require.NoError(t, b.AttachMcast(ud, 0xc001))
	assert.True(t, errors.Is(b.DestroyQP(ud), syscall.EBUSY), "a QP attached to a multicast group")
	assert.False(t, ud.Destroyed())
	require.NoError(t, b.DetachMcast(ud, 0xc001))
	require.NoError(t, b.DestroyQP(ud))
	assert.True(t, errors.Is(b.DestroyQP(ud), syscall.ENOENT), "destroyed already")

	// MR with a window bound: EINVAL, the window's region.
	bind, _ := p.bindWR(0, 4096, AccessRemoteWrite)
	wcs := p.script(t, mwStep{d: p.b, q: p.qb, wr: bind})
	require.Equal(t, WCSuccess, wcs[0].Status)
	assert.True(t, errors.Is(b.DeregMR(p.mr), syscall.EINVAL), "a region with a window bound")

	// PD: one PD per kind of user, each EBUSY until that user is gone.
	for _, user := range []struct {
		what string
		make func(pd uint32) (gone func() error)
	}{
		{"a QP", func(pd uint32) func() error {
			qp := b.CreateQP(pd, b.CreateCQ(16), b.CreateCQ(16), 64, 8)
			return func() error { return b.DestroyQP(qp) }
		}},
		{"an SRQ", func(pd uint32) func() error {
			s, err := b.CreateSRQ(pd, 7, 1)
			require.NoError(t, err)
			return func() error { return b.DestroySRQ(s) }
		}},
		{"an MR", func(pd uint32) func() error {
			mr := b.RegMR(pd, p.bufB, 4096, AccessLocalWrite)
			return func() error { return b.DeregMR(mr) }
		}},
		{"a memory window", func(pd uint32) func() error {
			mw, err := b.AllocMW(pd, MWType2)
			require.NoError(t, err)
			return func() error { return b.DeallocMW(mw) }
		}},
	} {
		pd := b.AllocPD()
		gone := user.make(pd)
		assert.True(t, errors.Is(b.DeallocPD(pd), syscall.EBUSY), "pd with %s", user.what)
		require.NoError(t, gone())
		assert.NoError(t, b.DeallocPD(pd), "pd whose %s is gone", user.what)
		assert.True(t, errors.Is(b.DeallocPD(pd), syscall.ENOENT), "freed already")
	}
	assert.True(t, errors.Is(b.DeallocPD(999), syscall.ENOENT), "never allocated")

	// The QPs, CQs, SRQ and regions of pair's PD, undone in turn.
	for _, qp := range []*QP{p.qb, p.qb2, qs} {
		require.NoError(t, b.DestroyQP(qp))
	}
	assert.NoError(t, b.DestroyCQ(scq), "no QP uses it now")
	assert.NoError(t, b.DestroyCQ(rcq))
	assert.True(t, errors.Is(b.DestroyCQ(rcq), syscall.ENOENT))
	require.NoError(t, b.DestroySRQ(srq), "its QP is destroyed")
	assert.True(t, errors.Is(b.DestroySRQ(srq), syscall.ENOENT))
	require.NoError(t, b.DeallocMW(p.mw))
	require.NoError(t, b.DeregMR(p.mr), "no window bound any more")
	assert.True(t, errors.Is(b.DeregMR(p.mr), syscall.EINVAL), "deregistered already")
	require.NoError(t, b.DeregMR(p.mrB))
	require.NoError(t, b.DeallocPD(pd))

	// A destroyed QP keeps its number; the next one takes a new one.
	last := qs.Num
	for _, qp := range b.qps {
		last = max(last, qp.Num)
	}
	fresh := b.CreateQP(b.AllocPD(), b.CreateCQ(16), b.CreateCQ(16), 64, 8)
	assert.Equal(t, last+1, fresh.Num)
	assert.Same(t, p.qb, b.qpByNum(p.qb.Num), "the number still names the destroyed QP, so its packets drop")
	assert.True(t, errors.Is(b.ModifyQP(p.qb, QPAttr{State: QPInit}), syscall.EINVAL), "a destroyed QP stays destroyed")
}

// checkedPair attaches the verif checkers (lossless, buffers, credits,
// ordering, protection, wire, …) to both HCAs and their ports.
func checkedPair(p *pair) *verif.Checkers {
	return verif.AttachCheckers(verif.CheckConfig{OnViolation: func(*verif.Violation) { p.s.Stop() }},
		[]sim.Hookable{p.a, p.b, p.a.Port, p.b.Port}...)
}

// TestDestroyedQPNIsDroppedAndCounted: B's QP is destroyed before A
// sends it a one-packet WRITE. Each attempt's packet reaches B, whose
// HCA drops it (no QP to take it: Counters.NoQPDrops) and answers
// nothing; A's retry timer fires and resends, retry_cnt 2 times (rxe
// req_retry, the Requester's rule), and the third timeout completes the
// WRITE with RETRY_EXC_ERR. So B drops 1 + retry_cnt = 3 packets, A
// counts 3 timeouts, nothing is written at B, and the checkers, which
// count a packet delivered when B's HCA accepts it from the fabric, see
// no loss: the fabric lost nothing, the transport gave up.
func TestDestroyedQPNIsDroppedAndCounted(t *testing.T) {
	cfg := Defaults()
	cfg.RetryCnt, cfg.RetryTimeout = 2, 1 // 8.192 µs
	p := newPair(t, edrLink(), cfg, 4096)
	chk := checkedPair(p)
	require.NoError(t, p.b.DestroyQP(p.qb))
	p.a.Mem.Write(p.bufA, []byte{1, 2, 3, 4})
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 7, Opcode: WRRDMAWrite, Signaled: true, Inline: true,
		LocalAddr: p.bufA, Length: 4, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	var wc [1]WC
	n := 0
	p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wc[n:]); return n == 1 })
	require.Equal(t, 1, n)
	assert.Equal(t, WCRetryExcErr, wc[0].Status)
	assert.Equal(t, int64(1+cfg.RetryCnt), p.b.Counters.NoQPDrops, "every attempt dropped at B")
	assert.Equal(t, int64(1+cfg.RetryCnt), p.b.Counters.RxPackets)
	assert.Equal(t, int64(1+cfg.RetryCnt), p.a.Counters.Timeouts)
	assert.Zero(t, p.b.Counters.Acks+p.b.Counters.Naks, "a destroyed QP answers nothing")
	got := make([]byte, 4)
	p.b.Mem.Read(p.bufB, got)
	assert.Equal(t, make([]byte, 4), got)
	chk.Finish(p.s.Now(), true)
	assert.NoError(t, chk.Err())
}

// TestDestroyQPMidTransfer: A's QP is destroyed as soon as the first
// ACK is in (a look every nanosecond), with more work outstanding: its
// first WRITE's CQE on its way, eleven more 64-byte WRITEs, posted 60 ns
// apart (hca.host.post_ns), and two of 16 KiB (4 packets of 4 KiB each).
// The QP goes through RESET (mlx5 destroy_qp_common: 2RST_QP), so:
//
//   - no CQE of its work is left to poll: the one visible is removed
//     (libmlx5 __mlx5_cq_clean), those in flight are dropped as they land,
//     and the outstanding WRITEs get none (RESET flushes nothing);
//   - its packets queued for the wire never leave: A sends no request
//     packet after the destroy, and its transmit buffer's share is empty;
//   - every packet that reaches A afterwards (B's ACKs of the WRITEs
//     already sent: A has no other QP) is dropped and counted: NoQPDrops
//     = A's packets received since;
//   - the checkers find nothing: the packets A sent before were delivered
//     at B, those purged were never injected.
func TestDestroyQPMidTransfer(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	chk := checkedPair(p)
	const small, large = 12, 2
	const size = 16 << 10
	for i := range small + large {
		n := 64
		if i >= small {
			n = size
		}
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Signaled: true,
			LocalAddr: p.bufA, Length: uint32(n), LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	}
	var reqAt, rxAt int64
	var at ib.PS
	look := &poster{}
	look.fn = func() {
		if p.a.Counters.RxPackets == 0 {
			p.s.Schedule(p.s.Now()+ib.Nanosecond, look, 1)
			return
		}
		at = p.s.Now()
		require.Zero(t, p.a.Counters.CQEs, "the first CQE is still on its way")
		require.NoError(t, p.a.DestroyQP(p.qa))
		reqAt, rxAt = p.a.Counters.ReqPackets, p.a.Counters.RxPackets
	}
	p.s.Schedule(ib.Nanosecond, look, 1)
	p.s.StopAt(ib.Millisecond)
	require.NoError(t, p.s.Run())
	require.NotZero(t, at, "an ACK came")
	t.Logf("destroy at %d ps: %d request packets sent of %d, %d received", at, reqAt, small+4*large, rxAt)
	require.Less(t, reqAt, int64(small+4*large), "the destroy came with requests still queued")
	var wc [16]WC
	assert.Zero(t, p.a.PollCQ(p.qa.SendCQ, wc[:]), "no CQE of the destroyed QP to poll")
	assert.Zero(t, p.a.Counters.CQEs, "the one in flight dropped as it landed")
	assert.Equal(t, reqAt, p.a.Counters.ReqPackets, "no request packet left after the destroy")
	assert.Zero(t, p.a.tx.vl[p.qa.vl].reqBytes, "its queued packets freed their transmit buffer share")
	drops := p.a.Counters.RxPackets - rxAt
	assert.Positive(t, drops, "B's ACKs came after the destroy")
	assert.Equal(t, drops, p.a.Counters.NoQPDrops, "each dropped and counted")
	chk.Finish(p.s.Now(), true)
	assert.NoError(t, chk.Err())
}

// TestDestroyQPCleansASharedCQ: A's QPs qa and qa2 share a send CQ. Three
// signalled WRITEs, on qa, qa2, qa, complete before anything is polled;
// destroying qa removes its two CQEs (libmlx5's __mlx5_cq_clean walks
// from the newest back, moving each other CQE up past the ones dropped,
// keeping the destination slot's owner bit, and advances the consumer
// index by the number dropped): a poll then finds qa2's one CQE, with its
// wr_id, and the next WRITE on qa2 completes after it as usual.
func TestDestroyQPCleansASharedCQ(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite)
	require.Same(t, p.qa.SendCQ, p.qa2.SendCQ)
	write := func(q *QP, id uint64) {
		require.NoError(t, p.a.PostSend(q, &SendWR{ID: id, Opcode: WRRDMAWrite, Signaled: true,
			LocalAddr: p.bufA, Length: 64, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	}
	write(p.qa, 1)
	write(p.qa2, 2)
	write(p.qa, 3)
	cq := p.qa.SendCQ
	var wc [4]WC
	destroyed, n := false, 0
	p.runUntil(t, func() bool {
		if !destroyed && cq.pi == 3 {
			destroyed = true
			require.NoError(t, p.a.DestroyQP(p.qa))
			assert.Equal(t, uint32(2), cq.ci, "two CQEs dropped")
			require.Equal(t, 1, p.a.PollCQ(cq, wc[:]))
			assert.Equal(t, WC{WRID: 2, Status: WCSuccess, Opcode: WCRDMAWrite, ByteLen: 64, QPN: p.qa2.Num}, wc[0])
			write(p.qa2, 4)
			return false
		}
		if destroyed {
			n += p.a.PollCQ(cq, wc[n:])
		}
		return n == 1
	})
	require.True(t, destroyed)
	require.Equal(t, 1, n)
	assert.Equal(t, uint64(4), wc[0].WRID)
}

// TestDestroyQPWithWorkNotYetFetched: A posts a WRITE and B a receive,
// and each destroys its QP at once, before the doorbells reach the HCAs
// (308 ns of MMIO after 60 ns of CPU): the HCAs then do nothing for them.
// A QP destroyed goes through RESET, which drops its work requests with
// no CQE (mlx5 destroy_qp_common: 2RST_QP, no flush), so A sends no
// packet, no CQE is written on either side, and nothing lands at B.
func TestDestroyQPWithWorkNotYetFetched(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 4096)
	p.a.Mem.Write(p.bufA, []byte{9, 9, 9, 9})
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true,
		LocalAddr: p.bufA, Length: 4, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 2, Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	require.NoError(t, p.a.DestroyQP(p.qa))
	require.NoError(t, p.b.DestroyQP(p.qb))
	p.s.StopAt(100 * ib.Microsecond)
	require.NoError(t, p.s.Run())
	assert.Zero(t, p.a.Counters.ReqPackets)
	assert.Zero(t, p.a.Counters.CQEs+p.b.Counters.CQEs)
	assert.Zero(t, p.b.Counters.RxPackets)
	assert.Zero(t, p.a.PCIe.ReadBytes+p.b.PCIe.ReadBytes, "no WQE read on either side")
}

// TestDestroyQPCleanAcrossTheRingsWrap: the CQE a clean moves past a
// dropped one takes its new slot's owner bit. A CQ of depth 4 shared by
// two QPs: two CQEs polled (consumer index 2), then three WRITEs, on q1,
// q2, q1, complete at indices 2, 3 and 4, index 4 in slot 0 on the
// ring's second pass (owner 1). Destroying q1 drops indices 4 and 2 and
// moves q2's CQE from index 3 (owner 0) to index 4 (slot 0, owner 1);
// the consumer index goes to 4, where a poll finds it only if its owner
// bit is the second pass's.
func TestDestroyQPCleanAcrossTheRingsWrap(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 4096)
	cq := p.a.CreateCQ(4)
	q1 := p.a.CreateQP(p.qa.PD, cq, p.a.CreateCQ(4), 64, 8)
	q2 := p.a.CreateQP(p.qa.PD, cq, p.a.CreateCQ(4), 64, 8)
	for i, q := range []*QP{q1, q2} {
		peer := p.b.CreateQP(p.qb.PD, p.b.CreateCQ(4), p.b.CreateCQ(4), 64, 8)
		require.NoError(t, ConnectRC(q, peer, 4096, uint32(0x100+i), uint32(0x200+i)))
	}
	write := func(q *QP, id uint64) {
		require.NoError(t, p.a.PostSend(q, &SendWR{ID: id, Opcode: WRRDMAWrite, Signaled: true,
			LocalAddr: p.bufA, Length: 8, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	}
	write(q2, 10)
	write(q2, 11)
	var wc [4]WC
	step, n := 0, 0
	p.runUntil(t, func() bool {
		switch {
		case step == 0 && cq.pi == 2:
			require.Equal(t, 2, p.a.PollCQ(cq, wc[:]))
			step = 1
			write(q1, 1)
			write(q2, 2)
			write(q1, 3)
		case step == 1 && cq.pi == 5:
			step = 2
			require.NoError(t, p.a.DestroyQP(q1))
			assert.Equal(t, uint32(4), cq.ci, "indices 2 and 4 dropped")
			n = p.a.PollCQ(cq, wc[:])
			return true
		}
		return false
	})
	require.Equal(t, 2, step)
	require.Equal(t, 1, n, "q2's CQE found at index 4, slot 0, owner 1")
	assert.Equal(t, WC{WRID: 2, Status: WCSuccess, Opcode: WCRDMAWrite, ByteLen: 8, QPN: q2.Num}, wc[0])
}

// TestDestroySRQWithReadsToCome: an SRQ destroyed just after a post, its
// doorbell still on its way (60 ns of CPU, 308 of MMIO), does nothing
// more: no WQE is read (ibv_destroy_srq drops its posted WQEs; a destroyed
// SRQ's context is gone, so the HCA has nothing to fetch into).
func TestDestroySRQWithReadsToCome(t *testing.T) {
	r := newSRQRig(t, Defaults(), 1, 7, false)
	require.NoError(t, r.b.DestroyQP(r.qb[0]))
	r.postRecvs(t, 0, 2)
	require.NoError(t, r.b.DestroySRQ(r.srq))
	r.runTo(t, 100*ib.Microsecond)
	assert.Zero(t, r.b.PCIe.ReadBytes)
	assert.Zero(t, r.srq.cache.len())
}

// TestUseAfterDestroyIsRefused: an object made in a freed PD or on a
// destroyed CQ, a receive posted to a destroyed SRQ and an arm of a
// destroyed CQ are refused with EINVAL (with the verbs each handle is
// gone, a use of it the application's bug); the same calls on live
// objects succeed, so each refusal is the destroy's doing.
func TestUseAfterDestroyIsRefused(t *testing.T) {
	s := components.NewSim()
	_, d := BackToBack(s, edrLink(), Defaults(), Defaults())
	ch := d.CreateCompChannel()
	live, gone := d.AllocPD(), d.AllocPD()
	require.NoError(t, d.DeallocPD(gone))
	cq, dead := d.CreateCQChannel(16, ch), d.CreateCQChannel(16, ch)
	require.NoError(t, d.DestroyCQ(dead))
	srq, err := d.CreateSRQ(live, 7, 1)
	require.NoError(t, err)
	deadSRQ, err := d.CreateSRQ(live, 7, 1)
	require.NoError(t, err)
	require.NoError(t, d.DestroySRQ(deadSRQ))
	buf := d.Malloc(64)
	mr := d.RegMR(live, buf, 64, AccessLocalWrite)

	for _, c := range []struct {
		name      string
		good, bad func() error
	}{
		{"create_qp: pd",
			func() error { _, err := d.CreateQPCap(live, cq, cq, 64, 8, QPCap{MaxRecvSGE: 1}); return err },
			func() error { _, err := d.CreateQPCap(gone, cq, cq, 64, 8, QPCap{MaxRecvSGE: 1}); return err }},
		{"create_qp: send cq",
			func() error { _, err := d.CreateQPCap(live, cq, cq, 64, 8, QPCap{MaxRecvSGE: 1}); return err },
			func() error { _, err := d.CreateQPCap(live, dead, cq, 64, 8, QPCap{MaxRecvSGE: 1}); return err }},
		{"create_qp on an srq: receive cq",
			func() error { _, err := d.CreateQPSRQ(live, cq, cq, 64, srq); return err },
			func() error { _, err := d.CreateQPSRQ(live, cq, dead, 64, srq); return err }},
		{"create_srq: pd",
			func() error { _, err := d.CreateSRQ(live, 7, 1); return err },
			func() error { _, err := d.CreateSRQ(gone, 7, 1); return err }},
		{"alloc_mw: pd",
			func() error { _, err := d.AllocMW(live, MWType2); return err },
			func() error { _, err := d.AllocMW(gone, MWType2); return err }},
		{"post_srq_recv",
			func() error { return d.PostSRQRecv(srq, &RecvWR{Addr: buf, Length: 64, LKey: mr.LKey}) },
			func() error { return d.PostSRQRecv(deadSRQ, &RecvWR{Addr: buf, Length: 64, LKey: mr.LKey}) }},
		{"req_notify_cq",
			func() error { return d.ReqNotifyCQ(cq, false) },
			func() error { return d.ReqNotifyCQ(dead, false) }},
	} {
		assert.NoError(t, c.good(), "%s, live", c.name)
		assert.ErrorIs(t, c.bad(), syscall.EINVAL, "%s, destroyed", c.name)
	}
}
