package hca

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// srqRig is two hosts back to back: n RC QPs on A, each connected to a QP
// on B, and B's QPs all on one SRQ. Each B QP has its own receive CQ when
// cqPerQP, else they share one.
type srqRig struct {
	s          *components.Sim
	a, b       *Device
	qa, qb     []*QP
	srq        *SRQ
	bufA, bufB uint64
	mrA, mrB   MR
}

func newSRQRig(t *testing.T, cfg Config, n, maxWR int, cqPerQP bool) *srqRig {
	lc := edrLink()
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	r := &srqRig{s: s, a: a, b: b}
	pdA, pdB := a.AllocPD(), b.AllocPD()
	srq, err := b.CreateSRQ(pdB, maxWR, 1)
	require.NoError(t, err)
	r.srq = srq
	scqA, rcqA, scqB, rcqB := a.CreateCQ(256), a.CreateCQ(256), b.CreateCQ(256), b.CreateCQ(256)
	for i := 0; i < n; i++ {
		qa := a.CreateQP(pdA, scqA, rcqA, 64, 64)
		rcq := rcqB
		if cqPerQP {
			rcq = b.CreateCQ(256)
		}
		qb, err := b.CreateQPSRQ(pdB, scqB, rcq, 64, srq)
		require.NoError(t, err)
		require.NoError(t, ConnectRC(qa, qb, lc.MTU, uint32(0x10+i), uint32(0x20+i)))
		r.qa, r.qb = append(r.qa, qa), append(r.qb, qb)
	}
	acc := AccessLocalWrite | AccessRemoteWrite
	r.bufA, r.bufB = a.Malloc(1<<16), b.Malloc(1<<16)
	r.mrA, r.mrB = a.RegMR(pdA, r.bufA, 1<<16, acc), b.RegMR(pdB, r.bufB, 1<<16, acc)
	return r
}

// recvBuf is B's receive buffer k: 256 bytes each.
func (r *srqRig) recvBuf(k int) uint64 { return r.bufB + uint64(k)*256 }

// postRecvs posts receives for buffers from … to-1 to the SRQ, wr_id 100 + k.
func (r *srqRig) postRecvs(t *testing.T, from, to int) {
	for k := from; k < to; k++ {
		require.NoError(t, r.b.PostSRQRecv(r.srq, &RecvWR{ID: uint64(100 + k), Addr: r.recvBuf(k), Length: 256, LKey: r.mrB.LKey}))
	}
}

// send posts a SEND of msg on A's QP i (from A's buffer at 256 × i).
func (r *srqRig) send(t *testing.T, i int, msg string) {
	at := r.bufA + uint64(i)*256
	r.a.Mem.Write(at, []byte(msg))
	require.NoError(t, r.a.PostSend(r.qa[i], &SendWR{ID: uint64(i), Opcode: WRSend, Signaled: true,
		LocalAddr: at, Length: uint32(len(msg)), LKey: r.mrA.LKey}))
}

// at runs fn at simulated time t (the rig's script: the simulation runs
// once, Run being final).
func (r *srqRig) at(t ib.PS, fn func()) { r.s.Schedule(t, &poster{fn: fn}, 1) }

// runTo runs the script until t.
func (r *srqRig) runTo(t *testing.T, end ib.PS) {
	r.s.StopAt(end)
	require.NoError(t, r.s.Run())
}

// recvAll polls every receive completion of B's QPs, in QP order.
func (r *srqRig) recvAll() []WC {
	var out []WC
	var wc [16]WC
	seen := map[*CQ]bool{}
	for _, qp := range r.qb {
		if seen[qp.RecvCQ] {
			continue
		}
		seen[qp.RecvCQ] = true
		for n := r.b.PollCQ(qp.RecvCQ, wc[:]); n > 0; n = r.b.PollCQ(qp.RecvCQ, wc[:]) {
			out = append(out, wc[:n]...)
		}
	}
	return out
}

// gap spaces the messages of a script: a SEND of a few bytes lands in
// about 1.3 µs (a cold key miss on each side, 0.55 µs each), so each is
// received whole before the next is posted.
const gap = 5 * ib.Microsecond

// TestSRQSharedByThreeQPs: three QPs of B share an SRQ. Messages are sent
// one at a time on QPs 1, 0, 2, 1, 0, 2, so each arrives after the last
// is received: the SRQ hands out its WQEs in posting order (the list from
// head: the WQEs posted, in order), so message k lands in buffer k and
// its completion carries wr_id 100 + k, and the QP number of the QP it
// came in on (the CQE's sop_drop_qpn), so the consumer tells the QPs
// apart on a shared CQ.
func TestSRQSharedByThreeQPs(t *testing.T) {
	r := newSRQRig(t, Defaults(), 3, 7, false)
	r.postRecvs(t, 0, 6)
	order := []int{1, 0, 2, 1, 0, 2}
	msgs := make([]string, len(order))
	for k, i := range order {
		msgs[k] = fmt.Sprintf("message %d on qp %d", k, i)
		r.at(ib.PS(k+1)*gap, func() { r.send(t, i, msgs[k]) })
	}
	r.runTo(t, ib.PS(len(order)+2)*gap)
	wcs := r.recvAll()
	require.Len(t, wcs, len(order))
	for k, i := range order {
		assert.Equal(t, WC{WRID: uint64(100 + k), Status: WCSuccess, Opcode: WCRecv, ByteLen: uint32(len(msgs[k])), QPN: r.qb[i].Num}, wcs[k], "message %d", k)
		got := make([]byte, len(msgs[k]))
		r.b.Mem.Read(r.recvBuf(k), got)
		assert.Equal(t, msgs[k], string(got), "buffer %d", k)
	}
	assert.Zero(t, r.srq.Posted())
	assert.Zero(t, r.b.Counters.RNRNaks)
}

// TestSRQFollowsItsList: with a CQ per QP, polling the CQs in another
// order than the WQEs were taken frees them out of ring order, so the
// free list, and the WQEs posted next, leave the ring's order. The SRQ's
// depth is 4 (max_wr 3 + 1, a power of two), holding 3: after create the
// list is 0 → 1 → 2 → 3, head 0, tail 3. Three posts take slots 0, 1, 2
// (head 3 = tail: full, a fourth is ENOMEM). QPs 0, 1, 2 take slots 0, 1,
// 2; freeing by polling QP 2's CQ, then 1's, then 0's appends 2, 1, 0
// after the tail 3: the list is 3 → 2 → 1 → 0. The next three posts take
// slots 3, 2, 1 (each WQE's next index not the following slot), and the
// HCA, following the list, hands them out in that order: the messages
// land in buffers 3, 4, 5, their completions name slots 3, 2, 1.
func TestSRQFollowsItsList(t *testing.T) {
	r := newSRQRig(t, Defaults(), 3, 3, true)
	require.Equal(t, 3, r.srq.MaxWR)
	require.Equal(t, 4, r.srq.Depth())
	r.postRecvs(t, 0, 3)
	err := r.b.PostSRQRecv(r.srq, &RecvWR{ID: 999, Addr: r.recvBuf(9), Length: 256, LKey: r.mrB.LKey})
	assert.True(t, errors.Is(err, syscall.ENOMEM), "a fourth post: %v", err)
	for i := 0; i < 3; i++ {
		// One at a time: slot i to QP i.
		r.at(ib.PS(i+1)*gap, func() { r.send(t, i, fmt.Sprintf("first %d", i)) })
	}
	var first []WC
	var list []uint16
	r.at(5*gap, func() {
		for i := 2; i >= 0; i-- {
			var wc [1]WC
			require.Equal(t, 1, r.b.PollCQ(r.qb[i].RecvCQ, wc[:]), "qp %d", i)
			first = append(first, wc[0])
		}
		list = []uint16{r.srq.nextIndex(3), r.srq.nextIndex(2), r.srq.nextIndex(1)}
		r.postRecvs(t, 3, 6)
	})
	msgs := []string{"second 0", "second 1", "second 2"}
	for k := range msgs {
		r.at(ib.PS(6+k)*gap, func() { r.send(t, k, msgs[k]) })
	}
	r.runTo(t, 10*gap)
	require.Len(t, first, 3)
	for j, i := range []int{2, 1, 0} {
		assert.Equal(t, uint64(100+i), first[j].WRID)
	}
	assert.Equal(t, []uint16{2, 1, 0}, list, "the free list 3 → 2 → 1 → 0")
	wcs := r.recvAll()
	require.Len(t, wcs, 3)
	for k := range msgs {
		assert.Equal(t, uint64(103+k), wcs[k].WRID, "message %d takes WQE %d as posted", k, 3+k)
		assert.Equal(t, r.qb[k].Num, wcs[k].QPN)
		got := make([]byte, len(msgs[k]))
		r.b.Mem.Read(r.recvBuf(3+k), got)
		assert.Equal(t, msgs[k], string(got))
	}
}

// TestSRQEmptyIsRNRAsAnRQ: an empty SRQ answers a SEND with an RNR NAK as
// an empty RQ does, and the SEND completes once a receive is posted. The
// same SEND on the same link against a QP with its own RQ, the receive
// posted at the same time, must run identically: in both the receive is
// posted at 5 µs, before the requester's RNR wait (min_rnr_timer 1:
// 10 µs) ends, so one RNR NAK; the WQE is prefetched long before the
// retry (its read takes about 0.55 µs), so the retry finds it on chip in
// both, and the retry is granted when the wait ends, at the NAK's arrival
// + 10 µs. So the receive completion lands at the same picosecond, later
// than 10 µs after the first packet went out.
func TestSRQEmptyIsRNRAsAnRQ(t *testing.T) {
	cfg := Defaults()
	cfg.MinRNRTimer = 1 // 10 µs
	landed := func(useSRQ bool) (ib.PS, int64, WC) {
		var r *srqRig
		if useSRQ {
			r = newSRQRig(t, cfg, 1, 7, false)
		} else {
			p := newPair(t, edrLink(), cfg, 1<<16)
			r = &srqRig{s: p.s, a: p.a, b: p.b, qa: []*QP{p.qa}, qb: []*QP{p.qb}, bufA: p.bufA, bufB: p.bufB, mrA: p.mrA, mrB: p.mrB}
		}
		r.send(t, 0, "hello")
		r.at(5*ib.Microsecond, func() {
			wr := &RecvWR{ID: 77, Addr: r.recvBuf(0), Length: 256, LKey: r.mrB.LKey}
			if useSRQ {
				require.NoError(t, r.b.PostSRQRecv(r.srq, wr))
			} else {
				require.NoError(t, r.b.PostRecv(r.qb[0], wr))
			}
		})
		var at ib.PS
		r.b.OnCQE = func(cq *CQ, now ib.PS) {
			if cq == r.qb[0].RecvCQ && at == 0 {
				at = now
			}
		}
		r.runTo(t, 100*ib.Microsecond)
		wcs := r.recvAll()
		require.Len(t, wcs, 1)
		return at, r.b.Counters.RNRNaks, wcs[0]
	}
	atRQ, nakRQ, wcRQ := landed(false)
	atSRQ, nakSRQ, wcSRQ := landed(true)
	assert.Equal(t, int64(1), nakSRQ, "one RNR NAK from the empty SRQ")
	assert.Equal(t, nakRQ, nakSRQ)
	assert.Equal(t, atRQ, atSRQ, "the SEND lands when it does on an RQ")
	assert.Greater(t, atSRQ, RNRTimerPS(1))
	assert.Equal(t, uint64(77), wcSRQ.WRID)
	assert.Equal(t, WCSuccess, wcSRQ.Status)
	wcRQ.QPN, wcSRQ.QPN = 0, 0
	assert.Equal(t, wcRQ, wcSRQ)
}

// TestSRQLimitEvent: 8 WQEs posted, the limit armed at 5. Each message
// takes one: after k messages 8 − k are left, and the event fires when
// that drops below 5, at k = 4, not at k ≤ 3; once, not at 5 or 6 (it
// disarms). Armed again at 5 with 2 left, it fires at the next take (1 <
// 5), once. Disarmed (0), it never fires.
func TestSRQLimitEvent(t *testing.T) {
	r := newSRQRig(t, Defaults(), 2, 15, false)
	r.postRecvs(t, 0, 8)
	// max_wr 15: depth 16, 15 posted at most; max_sge 1: stride
	// max(32, 16 + 16) = 32, (32 − 16) / 16 = 1; no limit armed.
	assert.Equal(t, SRQAttr{MaxWR: 15, MaxSGE: 1}, r.b.QuerySRQ(r.srq))
	require.NoError(t, r.b.ModifySRQ(r.srq, 5))
	var posted, limits []int
	for k := 1; k <= 8; k++ {
		r.at(ib.PS(k)*gap, func() {
			posted = append(posted, r.srq.Posted())
			limits = append(limits, r.b.QuerySRQ(r.srq).SRQLimit)
			switch k {
			case 7:
				require.NoError(t, r.b.ModifySRQ(r.srq, 5)) // 2 left
			case 8:
				require.NoError(t, r.b.ModifySRQ(r.srq, 0))
			}
			r.send(t, k%2, fmt.Sprintf("m%d", k))
		})
	}
	r.runTo(t, 10*gap)
	assert.Equal(t, []int{8, 7, 6, 5, 4, 3, 2, 1}, posted, "before message k, 9 − k posted")
	require.Len(t, r.recvAll(), 8)
	var fired []int // the message during whose window each event came
	for {
		e, ok := r.b.GetAsyncEvent()
		if !ok {
			break
		}
		assert.Equal(t, EventSRQLimitReached, e.Type)
		assert.Same(t, r.srq, e.SRQ)
		fired = append(fired, int(e.At/gap))
	}
	assert.Equal(t, []int{4, 7}, fired, "once at message 4 (4 left < 5), once at 7 after re-arming (1 < 5)")
	// ibv_query_srq before message k: 5 while armed (messages 1 … 4),
	// 0 once message 4's take fired it (5, 6), 5 again re-armed before
	// message 7 is sent but read before (so 0 at 7), 0 after 7's take
	// fired it, and message 8's query precedes its disarm.
	assert.Equal(t, []int{5, 5, 5, 5, 0, 0, 0, 0}, limits, "srq_limit")
}

// TestSRQRefusesBadArguments: out-of-range sizes at create, too many
// elements or a full SRQ at post, a limit of depth or more, a receive
// posted to a QP on an SRQ, an SRQ of another PD.
func TestSRQRefusesBadArguments(t *testing.T) {
	s := components.NewSim()
	d := NewDevice(s, "Fabric.Host[0].HCA", 1, Defaults())
	pd := d.AllocPD()
	for _, c := range []struct{ wr, sge int }{{0, 1}, {MaxSRQWR + 1, 1}, {1, 0}, {1, MaxSRQSGE + 1}} {
		_, err := d.CreateSRQ(pd, c.wr, c.sge)
		assert.True(t, errors.Is(err, syscall.EINVAL), "max_wr %d max_sge %d: %v", c.wr, c.sge, err)
	}
	srq, err := d.CreateSRQ(pd, MaxSRQWR, MaxSRQSGE)
	require.NoError(t, err, "the device's limits are allowed")
	assert.Equal(t, MaxSRQWR, srq.MaxWR, "32767 + 1 is 32768, a power of two")
	assert.Equal(t, 512, srq.Stride(), "16 + 31 × 16 bytes")
	srq, err = d.CreateSRQ(pd, 2, 2)
	require.NoError(t, err)
	// max_sge 2: 16 + 32 = 48 bytes, a stride of 64, which holds 3.
	assert.Equal(t, 3, srq.MaxSGE)
	assert.Equal(t, 3, srq.MaxWR, "depth 4 (2 + 1 rounded up) holds 3")
	mr := d.RegMR(pd, d.Malloc(4096), 4096, AccessLocalWrite)
	sge := SGE{Addr: mr.Addr, Length: 8, LKey: mr.LKey}
	err = d.PostSRQRecv(srq, &RecvWR{SGL: []SGE{sge, sge, sge, sge}})
	assert.True(t, errors.Is(err, syscall.EINVAL), "4 SGEs: %v", err)
	for i := 0; i < 3; i++ {
		require.NoError(t, d.PostSRQRecv(srq, &RecvWR{SGL: []SGE{sge, sge, sge}}))
	}
	err = d.PostSRQRecv(srq, &RecvWR{Addr: mr.Addr, Length: 8, LKey: mr.LKey})
	assert.True(t, errors.Is(err, syscall.ENOMEM), "full: %v", err)
	for _, l := range []int{-1, 4} {
		err = d.ModifySRQ(srq, l)
		assert.True(t, errors.Is(err, syscall.EINVAL), "limit %d: %v", l, err)
	}
	assert.NoError(t, d.ModifySRQ(srq, 3))
	cq := d.CreateCQ(16)
	qp, err := d.CreateQPSRQ(pd, cq, cq, 16, srq)
	require.NoError(t, err)
	require.NoError(t, d.ModifyQP(qp, QPAttr{State: QPInit}))
	err = d.PostRecv(qp, &RecvWR{Addr: mr.Addr, Length: 8, LKey: mr.LKey})
	assert.True(t, errors.Is(err, syscall.EINVAL), "post_recv on an SRQ QP: %v", err)
	_, err = d.CreateQPSRQ(d.AllocPD(), cq, cq, 16, srq)
	assert.Error(t, err, "another PD")
	_, err = d.CreateQPSRQ(pd, cq, cq, 16, nil)
	assert.Error(t, err, "no SRQ")
}

// TestSRQQPInErrorLeavesTheWQEs: moving one of two QPs on an SRQ to ERR
// flushes none of the SRQ's WQEs (they are the SRQ's, rxe
// flush_recv_queue): its receive CQ gets no CQE, the four WQEs stay
// posted, the HCA raises QP_LAST_WQE_REACHED for it, and the other QP's
// next message takes the first WQE posted.
func TestSRQQPInErrorLeavesTheWQEs(t *testing.T) {
	r := newSRQRig(t, Defaults(), 2, 7, true)
	r.postRecvs(t, 0, 4)
	var before, after int
	var errWCs int
	r.at(gap, func() {
		before = r.srq.Posted()
		require.NoError(t, r.b.ModifyQP(r.qb[0], QPAttr{State: QPErr}))
	})
	r.at(2*gap, func() {
		var wc [8]WC
		errWCs = r.b.PollCQ(r.qb[0].RecvCQ, wc[:])
		after = r.srq.Posted()
		r.send(t, 1, "after")
	})
	r.runTo(t, 4*gap)
	assert.Equal(t, 4, before)
	assert.Zero(t, errWCs, "no flush CQE for the SRQ's WQEs")
	assert.Equal(t, 4, after, "the four WQEs stay posted")
	e, ok := r.b.GetAsyncEvent()
	require.True(t, ok)
	assert.Equal(t, EventQPLastWQEReached, e.Type)
	assert.Same(t, r.qb[0], e.QP)
	_, ok = r.b.GetAsyncEvent()
	assert.False(t, ok, "one event")
	wcs := r.recvAll()
	require.Len(t, wcs, 1)
	assert.Equal(t, WC{WRID: 100, Status: WCSuccess, Opcode: WCRecv, ByteLen: 5, QPN: r.qb[1].Num}, wcs[0])
	assert.Equal(t, 3, r.srq.Posted())
}

// TestUDQPsShareAnSRQ: two UD QPs of B on one SRQ of three WQEs. A sends
// datagrams to B's QP 1, QP 0, QP 1, QP 0, 5 µs apart: the first three
// take the SRQ's WQEs in posting order, each payload after the 40-byte
// GRH area of its buffer, each CQE naming the QP it came in on and the
// sender's QP (DETH); the fourth finds the SRQ empty and is dropped (UD
// has no RNR), counted in UDDrops. An SRQ of more than one SGE is refused
// for a UD QP.
func TestUDQPsShareAnSRQ(t *testing.T) {
	lc := edrLink()
	cfg := Defaults()
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	pa, pb := a.AllocPD(), b.AllocPD()
	srq, err := b.CreateSRQ(pb, 3, 1)
	require.NoError(t, err)
	qa := a.CreateUDQP(pa, a.CreateCQ(16), a.CreateCQ(16), 64, 64, 0x1111)
	rcq := b.CreateCQ(16)
	var qb []*QP
	for i := 0; i < 2; i++ {
		q, err := b.CreateUDQPSRQ(pb, b.CreateCQ(16), rcq, 64, srq, 0x2222)
		require.NoError(t, err)
		qb = append(qb, q)
	}
	for _, x := range []struct {
		d  *Device
		qp *QP
	}{{a, qa}, {b, qb[0]}, {b, qb[1]}} {
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPInit}))
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPRTR, MTU: lc.MTU}))
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPRTS, SQPSN: 7}))
	}
	bufA, bufB := a.Malloc(8192), b.Malloc(8192)
	mrA, mrB := a.RegMR(pa, bufA, 8192, AccessLocalWrite), b.RegMR(pb, bufB, 8192, AccessLocalWrite)
	for k := 0; k < 3; k++ {
		require.NoError(t, b.PostSRQRecv(srq, &RecvWR{ID: uint64(10 + k), Addr: bufB + uint64(k)*1024, Length: 1024, LKey: mrB.LKey}))
	}
	to := []int{1, 0, 1, 0}
	for k, i := range to {
		s.Schedule(ib.PS(k+1)*gap, &poster{fn: func() {
			at := bufA + uint64(k)*64
			a.Mem.Write(at, []byte(fmt.Sprintf("dgram %d", k)))
			require.NoError(t, a.PostSend(qa, &SendWR{ID: uint64(k), Opcode: WRSend, Signaled: true, LocalAddr: at, Length: 7, LKey: mrA.LKey,
				UD: true, DLID: b.LID, RemoteQPN: qb[i].Num, RemoteQKey: 0x2222}))
		}}, 1)
	}
	s.StopAt(ib.PS(len(to)+2) * gap)
	require.NoError(t, s.Run())
	var wc [8]WC
	n := b.PollCQ(rcq, wc[:])
	require.Equal(t, 3, n)
	for k := 0; k < 3; k++ {
		assert.Equal(t, WC{WRID: uint64(10 + k), Opcode: WCRecv, ByteLen: UDGRHBytes + 7, QPN: qb[to[k]].Num, SrcQP: qa.Num}, wc[k], "datagram %d", k)
		got := make([]byte, 7)
		b.Mem.Read(bufB+uint64(k)*1024+UDGRHBytes, got)
		assert.Equal(t, fmt.Sprintf("dgram %d", k), string(got))
	}
	assert.Equal(t, int64(1), b.Counters.UDDrops, "the fourth finds the SRQ empty")
	assert.Zero(t, srq.Posted())
}

// srqReadPS is the time of a prefetch read of one SRQ WQE of stride bytes,
// from its issue to on chip: the dma stage, the request TLP, the host's
// read latency, the completion (stride + its overhead) and the wqe_fetch
// stage (with Defaults and stride 32: 10 + 1.524 + 533 + 3.301 + 10 =
// 557.825 ns).
func srqReadPS(cfg Config, stride int) ib.PS {
	p := NewPCIe(cfg.PCIe)
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	return ib.PS(cfg.DMA.LatencyCycles)*cyc + p.SerPS(cfg.PCIe.TLPOverheadBytes) + ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS) +
		p.SerPS(stride+cfg.PCIe.CompletionOverheadBytes) + ib.PS(cfg.WQEFetch.LatencyCycles)*cyc
}

// srqEventTimes returns, from B's trace, when each of qpns had its first
// packet delivered and its first receive CQE written at or after from.
func srqEventTimes(rec *traceRecorder, from ib.PS, qpns []uint32) (deliver, cqe []ib.PS) {
	deliver, cqe = make([]ib.PS, len(qpns)), make([]ib.PS, len(qpns))
	for _, e := range rec.events {
		at := ib.PS(e.Time)
		if at < from || (e.Kind != components.TraceDeliver && e.Kind != components.TraceCQE) {
			continue
		}
		q, _ := e.Int("qpn")
		for i, n := range qpns {
			if int64(n) != q {
				continue
			}
			if e.Kind == components.TraceDeliver && deliver[i] == 0 {
				deliver[i] = at
			}
			if queue, _ := e.Str("queue"); e.Kind == components.TraceCQE && queue == "rq" && cqe[i] == 0 {
				cqe[i] = at
			}
		}
	}
	return deliver, cqe
}

// TestSRQReadsFollowTheChain: the HCA learns where the list goes only from
// the WQEs it reads. Every post rings its own doorbell (60 ns of CPU, then
// the 308 ns MMIO), and a read of one WQE takes srqReadPS, 557.825 ns,
// from its issue to on chip. Round 1: a fresh SRQ of depth 4, three WQEs
// posted in slots 0, 1, 2, in ring order: each read as its doorbell
// comes, on chip by 0.678 µs after the first doorbell D. Round 2: after
// the out-of-order frees of TestSRQFollowsItsList the next three are in
// slots 3, 2, 1, each WQE's next index breaking the ring's order, so each
// read waits for the one bringing its address: on chip at D + 1, 2 and 3
// reads = D + 0.558, 1.116 and 1.673 µs (slot 3's, the only one the
// prefetch puts in the cache, traced as wqe_fetch; the other two are
// taken while in flight). In each round three SENDs of a
// few bytes are posted 0.1 µs after the receives, back to back on three
// QPs; a SEND reaches B's responder 1.04 µs after its post (60 ns CPU, 308
// MMIO, 20 doorbell, 10 parse, 10 L_Key, 10 dma, the payload read 1.5 +
// 533 + 2, 40 transmit, the wire, 40 receive), so at D − 0.368 + 0.1 +
// 1.04 = D + 0.772, 0.832, 0.892 µs (round 1 later: its keys are cold).
// Round 1 finds every WQE on chip; round 2 the first only, and the other
// two take WQEs whose reads are in flight, waiting at the chain's pace
// (a WQE neither on chip nor being read would stop the run: srqInvariant).
//
// A receive CQE is written a time c after the later of the SEND's arrival
// (deliver) and its WQE on chip, the same c for the three (each QP has
// its own CQ): c is measured on round 2's first message, whose WQE is on
// chip before it arrives. So round 2's CQEs are at D + 0.772 + c, D + 2
// reads + c and D + 3 reads + c. A responder that read the WQEs in
// flight again on demand, from their arrival, would have the second at D
// + 0.832 + 0.548 = D + 1.380 µs (later than D + 1.116); a prefetch that
// did not wait for the chain would have them all by D + 0.678.
func TestSRQReadsFollowTheChain(t *testing.T) {
	cfg := Defaults()
	r := newSRQRig(t, cfg, 3, 3, true)
	var rec traceRecorder
	r.b.AcceptHook(&rec)
	sendAll := func(round int) {
		for i := 0; i < 3; i++ {
			r.send(t, i, fmt.Sprintf("round %d qp %d", round, i))
		}
	}
	const lead = 100 * ib.Nanosecond
	const round2 = 5 * gap
	r.at(gap, func() { r.postRecvs(t, 0, 3) })
	r.at(gap+lead, func() { sendAll(1) })
	r.at(round2, func() {
		for i := 2; i >= 0; i-- { // frees slots 2, 1, 0: the list 3 → 2 → 1 → 0
			var wc [1]WC
			require.Equal(t, 1, r.b.PollCQ(r.qb[i].RecvCQ, wc[:]))
		}
		r.postRecvs(t, 3, 6)
	})
	r.at(round2+lead, func() { sendAll(2) })
	r.runTo(t, 8*gap)
	wcs := r.recvAll()
	require.Len(t, wcs, 3)
	for k := range wcs {
		assert.Equal(t, uint64(103+k), wcs[k].WRID)
	}

	read := srqReadPS(cfg, r.srq.Stride())
	doorbell := round2 + ib.FromNanoseconds(cfg.Host.PostNS+cfg.PCIe.MMIOLatencyNS)
	deliver, cqe := srqEventTimes(&rec, round2, []uint32{r.qb[0].Num, r.qb[1].Num, r.qb[2].Num})
	onChip := []ib.PS{doorbell + read, doorbell + 2*read, doorbell + 3*read}
	require.Less(t, onChip[0], deliver[0], "round 2's first SEND finds its WQE on chip")
	var fetched []ib.PS // the prefetch's wqe_fetch events of round 2: slot 3's only
	for _, e := range rec.events {
		if e.Kind == components.TraceWQEFetch && ib.PS(e.Time) >= round2 {
			fetched = append(fetched, ib.PS(e.Time))
		}
	}
	assert.Equal(t, onChip[:1], fetched, "slot 3 on chip one read after its doorbell")
	c := cqe[0] - deliver[0]
	for k := 1; k < 3; k++ {
		assert.Less(t, deliver[k], onChip[k], "SEND %d arrives before its WQE is on chip", k)
		assert.Equal(t, onChip[k]+c, cqe[k], "SEND %d completes c after its WQE's read along the chain", k)
	}
}

// TestSRQTakeAtABreakHoldsThePrefetch: the prefetch read that a take
// starts, of the WQE after one whose next index leaves the ring, issues
// no sooner than the read bringing that index is in, as any read at a
// break. (Before responders waited for reads in flight, the WQE at the
// break was read on demand here and held the next read likewise. A WQE
// is no longer read on demand at all: a WQE the HCA knows is posted has
// its read issued at its doorbell or, once the window has room, at the
// take before it, and the window has room for the WQE after the last
// taken.)
//
// B's prefetch window is one 64-byte block (hca.wqe_prefetch_depth 1, set
// on B only, so A's SEND path is TestSRQReadsFollowTheChain's): two
// 32-byte WQEs. The SRQ has depth 8. Round 1 posts 5 WQEs (slots 0 … 4),
// taken by messages on QPs 0, 1, 0, 1, 0; polling QP 1's CQ, then QP 0's,
// frees 1, 3, 0, 2, 4, so the tail 7 points at 1 and the list from head 5
// is 5 → 6 → 7 → 1 → …: round 2's four WQEs are in slots 5, 6, 7, 1, the
// list leaving the ring after 7 (its next is 1, not 0).
//
// Round 2 posts the four receives at R, doorbells at R + 0.368, 0.428,
// 0.488, 0.548 µs (60 ns of CPU each, then the 308-ns MMIO). The window
// takes two: slots 5 and 6 are read from their doorbells, on chip a read
// (srqReadPS, 557.825 ns) later, at R + 0.926 and 0.986. Three SENDs on
// QPs 0, 1, 2, posted at R − 0.3 µs, reach B 1.04 µs after their posts,
// 60 ns apart (TestSRQReadsFollowTheChain's SEND path): at R + 0.740,
// 0.800 and 0.860, all after the last doorbell and before the first read
// is in. The first takes slot 5, in flight, and the window has room for
// one more: slot 7's read issues at R + 0.740, on chip at R + 1.298, and
// its next index, 1, breaks the ring. The second takes slot 6, and slot
// 1's read issues no sooner than R + 1.298: on chip at R + 1.298 + 0.558
// = R + 1.855. Issued at once (R + 0.800) it would be on chip at R +
// 1.358. A fourth SEND, on QP 3, posted at R + 0.66, reaches B at R +
// 1.700, between the two: it takes slot 1, in flight, and waits for it.
//
// Each SEND's receive CQE is written c after the later of its arrival
// and its WQE on chip (TestSRQReadsFollowTheChain): the four at R + 0.926
// + c, 0.986 + c, 1.298 + c and 1.855 + c, c measured on the first.
// The messages take the WQEs in posting order, each on chip or being read.
func TestSRQTakeAtABreakHoldsThePrefetch(t *testing.T) {
	cfg := Defaults()
	r := newSRQRig(t, cfg, 4, 7, true)
	r.b.Cfg.WQEPrefetchDepth = 1
	require.Equal(t, 8, r.srq.Depth())
	var rec traceRecorder
	r.b.AcceptHook(&rec)
	r.at(gap, func() { r.postRecvs(t, 0, 5) })
	for k, i := range []int{0, 1, 0, 1, 0} {
		r.at(ib.PS(k+2)*gap, func() { r.send(t, i, fmt.Sprintf("round 1 msg %d", k)) })
	}
	const round2 = 10 * gap
	var list []uint16
	r.at(8*gap, func() {
		for _, i := range []int{1, 0} {
			for n := 0; n < 3; n++ {
				var wc [1]WC
				if r.b.PollCQ(r.qb[i].RecvCQ, wc[:]) == 0 {
					break
				}
			}
		}
		list = []uint16{r.srq.nextIndex(7), r.srq.nextIndex(1), r.srq.nextIndex(3)}
	})
	r.at(round2-300*ib.Nanosecond, func() {
		for i := 0; i < 3; i++ {
			r.send(t, i, fmt.Sprintf("round 2 qp %d", i))
		}
	})
	r.at(round2, func() { r.postRecvs(t, 5, 9) })
	r.at(round2+660*ib.Nanosecond, func() { r.send(t, 3, "round 2 qp 3") })
	r.runTo(t, round2+3*gap)
	assert.Equal(t, []uint16{1, 3, 0}, list, "the list 7 → 1 → 3 → 0 after round 1's frees")
	wcs := r.recvAll()
	require.Len(t, wcs, 4)
	for i, wc := range wcs {
		assert.Equal(t, uint64(105+i), wc.WRID, "qp %d takes the WQE posted %d-th", i, i)
		got := make([]byte, len("round 2 qp 0"))
		r.b.Mem.Read(r.recvBuf(5+i), got)
		assert.Equal(t, fmt.Sprintf("round 2 qp %d", i), string(got))
	}

	read := srqReadPS(cfg, r.srq.Stride())
	post := ib.FromNanoseconds(cfg.Host.PostNS)
	doorbell := round2 + post + ib.FromNanoseconds(cfg.PCIe.MMIOLatencyNS) // the first post's
	deliver, cqe := srqEventTimes(&rec, round2-300*ib.Nanosecond, []uint32{r.qb[0].Num, r.qb[1].Num, r.qb[2].Num, r.qb[3].Num})
	slot7 := deliver[0] + read // issued when the first SEND takes slot 5
	onChip := []ib.PS{doorbell + read, doorbell + post + read, slot7, slot7 + read}
	assert.Less(t, doorbell+3*post, deliver[0], "the SENDs arrive after the last doorbell")
	assert.Less(t, deliver[2], onChip[0], "and before the first read is in")
	assert.Less(t, slot7, deliver[3], "the fourth SEND arrives after slot 7's read is in")
	assert.Less(t, deliver[3], onChip[3], "and before slot 1's")
	c := cqe[0] - onChip[0]
	for k := 1; k < 4; k++ {
		assert.Equal(t, onChip[k]+c, cqe[k], "SEND %d completes c after its WQE is on chip", k)
	}
}

// TestQuerySRQReturnsTheRoundedCaps: ibv_query_srq returns what create
// made of the caps: max_wr 5 → depth the power of two at or above 6, 8,
// so 7; max_wr 100 → 128, 127; max_sge 3 → stride the power of two at or
// above max(32, 16 + 48) = 64, (64 − 16) / 16 = 3; max_sge 4 → 16 + 64 =
// 80 → 128, 7.
func TestQuerySRQReturnsTheRoundedCaps(t *testing.T) {
	d := NewDevice(components.NewSim(), "Fabric.Host[0].HCA", 1, Defaults())
	pd := d.AllocPD()
	for _, tc := range []struct{ wr, sge, maxWR, maxSGE int }{{5, 3, 7, 3}, {100, 4, 127, 7}} {
		s, err := d.CreateSRQ(pd, tc.wr, tc.sge)
		require.NoError(t, err)
		assert.Equal(t, SRQAttr{MaxWR: tc.maxWR, MaxSGE: tc.maxSGE}, d.QuerySRQ(s), "%+v", tc)
		require.NoError(t, d.ModifySRQ(s, 2))
		assert.Equal(t, 2, d.QuerySRQ(s).SRQLimit)
	}
}

// TestSRQPrefetchIsTraced: each WQE the SRQ's prefetch puts on chip is a
// wqe_fetch event with srq, queue=srq and wqe its slot, and no qpn. Four
// WQEs posted to a fresh SRQ take slots 0 … 3 (the list follows the ring
// after create); the window, wqe_prefetch_depth 8 × 64 / stride 32 = 16
// WQEs, holds them all, so all four are read before the first SEND and
// none after it (nothing more is posted). A fifth posted after the SEND
// takes slot 4 (slot 0, freed when its CQE is polled, goes to the list's
// tail).
func TestSRQPrefetchIsTraced(t *testing.T) {
	r := newSRQRig(t, Defaults(), 1, 15, false)
	var rec traceRecorder
	r.b.AcceptHook(&rec)
	r.at(gap, func() { r.postRecvs(t, 0, 4) })
	r.at(2*gap, func() { r.send(t, 0, "m0") })
	r.at(3*gap, func() {
		require.Len(t, r.recvAll(), 1)
		r.postRecvs(t, 4, 5)
	})
	r.runTo(t, 5*gap)
	var slots []int64
	var at []ib.PS
	for _, e := range rec.events {
		if e.Kind != components.TraceWQEFetch {
			continue
		}
		q, _ := e.Str("queue")
		require.Equal(t, "srq", q)
		n, ok := e.Int("srq")
		require.True(t, ok)
		assert.Equal(t, int64(r.srq.Num), n)
		_, hasQPN := e.Int("qpn")
		assert.False(t, hasQPN)
		w, _ := e.Int("wqe")
		slots = append(slots, w)
		at = append(at, ib.PS(e.Time))
	}
	assert.Equal(t, []int64{0, 1, 2, 3, 4}, slots)
	require.Len(t, at, 5)
	for i := 0; i < 4; i++ {
		assert.Less(t, at[i], 2*gap, "slot %d read before the SEND", i)
	}
	assert.Greater(t, at[4], 3*gap, "slot 4 read after its post")
}
