package hca

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestRecvInvariantsStopTheRun: the receive queue invariants that replaced
// the on-demand read and the stale-front loops fire, naming the QP or SRQ
// and the counters, when the state they rule out is made by hand: a WQE
// the HCA knows is posted (a doorbell seen) with no prefetch read issued
// for it, and a cache whose front is not the next WQE to take. (Every
// hca, workload, fabric and cmd test runs with them in place and none
// fires; the report lists the mutants of the prefetch they catch.)
func TestRecvInvariantsStopTheRun(t *testing.T) {
	t.Run("rq posted, not read", func(t *testing.T) {
		p := newPair(t, edrLink(), Defaults(), 4096)
		p.qb.rqDB = 1 // a doorbell seen with no recvFetch after it
		assert.PanicsWithValue(t, "hca: Fabric.Host[1].HCA qp 0x100: receive queue invariant broken (a model bug): "+
			"WQE 0 is posted (doorbell 1) but neither on chip nor being read (prefetch at 0); taken 0, fetch 0, doorbell 1",
			func() { p.qb.PopRecv() })
	})
	t.Run("rq cache out of order", func(t *testing.T) {
		p := newPair(t, edrLink(), Defaults(), 4096)
		p.qb.rqDB, p.qb.rqFetch = 2, 2
		p.qb.rqCache.push(RecvWQE{Index: 1}, 4) // WQE 0 missing from the front
		assert.PanicsWithValue(t, "hca: Fabric.Host[1].HCA qp 0x100: receive queue invariant broken (a model bug): "+
			"the cache's front is WQE 1, the next to take 0; taken 0, fetch 2, doorbell 2",
			func() { p.qb.PopRecv() })
	})
	t.Run("srq posted, not read", func(t *testing.T) {
		r := newSRQRig(t, Defaults(), 1, 7, false)
		r.srq.db = 1
		assert.PanicsWithValue(t, "hca: Fabric.Host[1].HCA srq 0: shared receive queue invariant broken (a model bug): "+
			"WQE number 0 is posted but neither on chip nor being read; taken 0, fetch 0, doorbell 1",
			func() { r.qb[0].PopRecv() })
	})
	t.Run("srq cache out of order", func(t *testing.T) {
		r := newSRQRig(t, Defaults(), 1, 7, false)
		r.srq.db, r.srq.fetch = 2, 2
		r.srq.cache.push(srqEntry{seq: 1}, 4)
		assert.PanicsWithValue(t, "hca: Fabric.Host[1].HCA srq 0: shared receive queue invariant broken (a model bug): "+
			"the cache's front is WQE number 1, the next to take 0; taken 0, fetch 2, doorbell 2",
			func() { r.qb[0].PopRecv() })
	})
}

// TestSRQQPCaps: a QP on an SRQ takes send caps as CreateQPCap's QPs do
// (TestQPInlineLimit's derivations): RC, 1 SGE, 64 inline bytes gives
// 320-byte WQEs and a limit of 320 − 192 − 4 = 124, so 124 bytes inline
// post and 125 are ENOMEM; max_send_sge 2 refuses a WR of 3 elements
// with ENOMEM (libmlx5's _mlx5_post_send: num_sge > sq.max_gs); caps
// above the device's (max_send_sge 31 > 30, max_inline_data 237 > 236,
// or negative) are EINVAL at create; max_recv_sge is not looked at (the
// kernel's set_rq_size zeroes it for a QP without an RQ). UD, 4 SGEs, 20
// inline: 64 + 4 × 16 = 128 bytes against 64 + align16(24) = 96, so 128,
// and 128 − 64 − 4 = 60. CreateQPSRQ and CreateUDQPSRQ keep the device's
// limits (236 inline bytes, 30 elements).
func TestSRQQPCaps(t *testing.T) {
	r := newSRQRig(t, Defaults(), 1, 7, false)
	pd, cq := r.srq.PD, r.b.CreateCQ(16)
	for _, bad := range []QPCap{{MaxSendSGE: MaxSendSGE + 1}, {MaxSendSGE: -1}, {MaxInlineData: 237}, {MaxInlineData: -1}} {
		_, err := r.b.CreateQPSRQCap(pd, cq, cq, 64, r.srq, bad)
		assert.True(t, errors.Is(err, syscall.EINVAL), "%+v: %v", bad, err)
		_, err = r.b.CreateUDQPSRQCap(pd, cq, cq, 64, r.srq, 1, bad)
		assert.True(t, errors.Is(err, syscall.EINVAL), "UD %+v: %v", bad, err)
	}
	q, err := r.b.CreateQPSRQCap(pd, cq, cq, 64, r.srq, QPCap{MaxRecvSGE: 99, MaxSendSGE: 2, MaxInlineData: 64})
	require.NoError(t, err)
	assert.Equal(t, 124, q.MaxInlineData())
	assert.Equal(t, 2, q.MaxSendSGE())
	peer := r.a.CreateQP(r.qa[0].PD, r.a.CreateCQ(16), r.a.CreateCQ(16), 64, 8)
	require.NoError(t, ConnectRC(q, peer, 4096, 1, 2))
	inline := func(n int) *SendWR {
		return &SendWR{Opcode: WRSend, Inline: true, LocalAddr: r.bufB, Length: uint32(n), LKey: r.mrB.LKey}
	}
	assert.NoError(t, r.b.PostSend(q, inline(124)))
	assert.True(t, errors.Is(r.b.PostSend(q, inline(125)), syscall.ENOMEM))
	sgl := []SGE{{Addr: r.bufB, Length: 8, LKey: r.mrB.LKey}, {Addr: r.bufB + 8, Length: 8, LKey: r.mrB.LKey}, {Addr: r.bufB + 16, Length: 8, LKey: r.mrB.LKey}}
	assert.True(t, errors.Is(r.b.PostSend(q, &SendWR{Opcode: WRSend, SGL: sgl}), syscall.ENOMEM))
	assert.NoError(t, r.b.PostSend(q, &SendWR{Opcode: WRSend, SGL: sgl[:2]}))

	ud, err := r.b.CreateUDQPSRQCap(pd, cq, cq, 64, r.srq, 0x1111, QPCap{MaxSendSGE: 4, MaxInlineData: 20})
	require.NoError(t, err)
	assert.Equal(t, 60, ud.MaxInlineData())
	assert.True(t, ud.UD)
	assert.Equal(t, uint32(0x1111), ud.QKey)

	def, err := r.b.CreateQPSRQ(pd, cq, cq, 64, r.srq)
	require.NoError(t, err)
	assert.Equal(t, 236, def.MaxInlineData())
	assert.Equal(t, MaxSendSGE, def.MaxSendSGE())
	defUD, err := r.b.CreateUDQPSRQ(pd, cq, cq, 64, r.srq, 7)
	require.NoError(t, err)
	assert.Equal(t, 236, defUD.MaxInlineData())
	assert.Equal(t, MaxSendSGE, defUD.MaxSendSGE())
	assert.True(t, defUD.UD)
}

// TestFlushWithReceiveReadsInFlight: the one case where the receive
// prefetch finds the responder past it, and moves up (recvFetch's
// catch-up): a QP put in ERR flushes every WQE the HCA knows posted,
// read or not. B posts 64 one-element receives (16 bytes each), their
// doorbells in at 60k + 368 ns (60 ns of CPU each, then 308 of MMIO); the
// window is hca.wqe_prefetch_depth 8 blocks × 4 = 32 WQEs, so reads of
// WQEs 0 … 31 issue from their doorbells, the last at 2.288 µs, each on
// chip over 533 ns of host read latency later. At 2.5 µs B moves its QP
// to ERR: the HCA knows 36 posted (doorbells up to 2.468 µs), has read or
// is reading 32, some still in flight; all 64 complete WR_FLUSH_ERR (the
// rest flushed at their doorbells), and the reads landing after the flush
// issue no read of the flushed WQEs 32 … 35: B reads the window's 32 × 16
// bytes in all.
func TestFlushWithReceiveReadsInFlight(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 4096)
	for i := range 64 {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: uint64(i), Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	}
	p.s.Schedule(2500*ib.Nanosecond, &poster{fn: func() {
		require.Equal(t, uint32(36), p.qb.rqDB, "doorbells in")
		require.Equal(t, uint32(32), p.qb.rqFetch, "the window's reads issued")
		require.Less(t, p.qb.rqCache.len(), 32, "reads still in flight")
		require.NoError(t, p.b.ModifyQP(p.qb, QPAttr{State: QPErr}))
	}}, 1)
	p.s.StopAt(50 * ib.Microsecond)
	require.NoError(t, p.s.Run())
	var wc [64]WC
	n := p.b.PollCQ(p.qb.RecvCQ, wc[:])
	require.Equal(t, 64, n)
	for i := range n {
		assert.Equal(t, WCWRFlushErr, wc[i].Status)
	}
	assert.Equal(t, int64(32*16), p.b.PCIe.ReadBytes, "no read of a flushed WQE")
}
