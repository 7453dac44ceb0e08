package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// ctxMissPS is one cold miss of a 64-byte context (hca.cq_context_bytes
// and hca.srq_context_bytes: mlx5_ifc_cqc_bits and mlx5_ifc_srqc_bits are
// 0x200 bits each) on an idle Gen3 x16 link with the defaults: a byte
// takes 8000 × 130 / (8 × 16 × 128) = 63.4765625 ps; the request, a
// header-only TLP of tlp_overhead_bytes 24, 1523.4 → 1524 ps (each TLP
// rounds up to the picosecond); the read latency 533 ns; the context in
// one completion of read_completion_bytes 64, 64 + 20 = 84 bytes, 5332.03
// → 5333 ps. 1524 + 533000 + 5333 = 539857 ps.
const ctxMissPS ib.PS = 1524 + 533_000 + 5333

// ctxWriteBackPS is the write-back of an evicted 64-byte context on Gen3
// x16: one posted write TLP of 64 + 24 = 88 bytes, 5585.9 → 5586 ps.
const ctxWriteBackPS ib.PS = 5586

// TestColdCQMissIsAContextRead checks one cold CQ-context miss against its
// parts (a request TLP up, the host's read latency, one completion down),
// that a use of the CQ while the read is in flight waits for it without a
// read of its own, that one after it is free, and that nothing is written
// back (nothing was evicted).
func TestColdCQMissIsAContextRead(t *testing.T) {
	cfg := Defaults()
	cfg.CQCacheEntries = 4
	p := newPair(t, edrLink(), cfg, 4096)
	s := p.s
	require.Equal(t, ib.PS(539_857), ctxMissPS)
	cq := p.qb.RecvCQ
	at := 10 * ib.Microsecond
	missDone, underMissDone, hitDone := missUnderMissHit(t, p, at, func() ib.PS { return p.b.contextModify(p.b.cqc, s.Now(), cq.Num) })
	assert.Equal(t, at+ctxMissPS, missDone)
	assert.Equal(t, at+ctxMissPS, underMissDone)
	assert.Equal(t, at+ib.Microsecond, hitDone)
	c := p.b.CQCache()
	assert.Equal(t, int64(1), c.Misses)
	assert.Equal(t, int64(2), c.Hits)
	assert.Equal(t, int64(0), c.WriteBacks)
	assert.Equal(t, int64(1), p.b.PCIe.ReadRequests)
	assert.Equal(t, int64(cfg.CQContextBytes), p.b.PCIe.ReadBytes)
}

// TestCQEvictionWritesBack: with one entry, a use of a second CQ evicts
// the first, whose producer index the HCA moved, so the miss writes it
// back: a posted write of 64 bytes issued at the miss, and the read
// request issued with it may not pass it (PCIe ordering), so the read
// waits for the write's TLP: 5586 + 539857 ps. A third use, of the first
// CQ again, evicts the second the same way.
func TestCQEvictionWritesBack(t *testing.T) {
	cfg := Defaults()
	cfg.CQCacheEntries = 1
	p := newPair(t, edrLink(), cfg, 4096)
	s := p.s
	x, y := p.qb.SendCQ, p.qb.RecvCQ
	require.NotEqual(t, x.Num, y.Num)
	var first, second, third ib.PS
	at := 10 * ib.Microsecond
	use := func(at ib.PS, cq *CQ, done *ib.PS) {
		s.Schedule(at, &poster{fn: func() { *done = p.b.contextModify(p.b.cqc, s.Now(), cq.Num) }}, 0)
	}
	use(at, x, &first)
	use(at+2*ib.Microsecond, y, &second)
	use(at+4*ib.Microsecond, x, &third)
	s.StopAt(20 * ib.Microsecond)
	require.NoError(t, s.Run())
	assert.Equal(t, at+ctxMissPS, first, "cold: nothing to evict")
	assert.Equal(t, at+2*ib.Microsecond+ctxWriteBackPS+ctxMissPS, second, "x written back first")
	assert.Equal(t, at+4*ib.Microsecond+ctxWriteBackPS+ctxMissPS, third, "y written back first")
	c := p.b.CQCache()
	assert.Equal(t, int64(3), c.Misses)
	assert.Equal(t, int64(2), c.WriteBacks)
	// The upstream carried three read requests and two 88-byte writes.
	assert.Equal(t, 3*ib.PS(1524)+2*ctxWriteBackPS, p.b.PCIe.up.busy)
}

// TestColdCQMissDelaysACompletion runs one signaled 64-byte RDMA WRITE on
// a cold pair with CQ contexts modelled and without: the requester's send
// CQE waits for one cold CQ-context read (A's PCIe is idle when the ACK
// comes), so the completion lands ctxMissPS later; the responder writes no
// CQE for a WRITE, so B's cache sees no use.
func TestColdCQMissDelaysACompletion(t *testing.T) {
	run := func(entries int) (ib.PS, *pair) {
		cfg := Defaults()
		cfg.CQCacheEntries = entries
		return firstWriteCompletes(t, cfg)
	}
	off, pOff := run(0)
	on, pOn := run(4)
	assert.Nil(t, pOff.a.CQCache())
	assert.Equal(t, ctxMissPS, on-off, "one cold CQ context read, 539.857 ns")
	assert.Equal(t, int64(1), pOn.a.CQCache().Misses, "the send CQE")
	assert.Equal(t, int64(0), pOn.b.CQCache().Misses+pOn.b.CQCache().Hits, "no CQE at the responder")
}

// srqSendCQE runs one 64-byte SEND from A's QP 0 to B's QP on an SRQ
// (receives posted long before) with cfg, and returns when B's receive
// CQE lands and B.
func srqSendCQE(t *testing.T, cfg Config) (ib.PS, *Device) {
	r := newSRQRig(t, cfg, 1, 16, false)
	r.postRecvs(t, 0, 4)
	var done ib.PS
	r.b.OnCQE = func(_ *CQ, now ib.PS) { done = now; r.s.Stop() }
	r.at(5*ib.Microsecond, func() { r.send(t, 0, string(make([]byte, 64))) })
	r.runTo(t, ib.Millisecond)
	require.NotZero(t, done)
	return done, r.b
}

// TestSRQTakeReadsItsContext: a SEND taking a WQE from an SRQ whose
// context is cold waits for one context read before its key check,
// payload write and CQE (B's PCIe is idle then: the WQEs were prefetched
// microseconds before), so the receive CQE lands ctxMissPS later than
// with SRQ contexts not modelled. With QP contexts modelled too, the
// SRQ's read issues only when B's QP context is in (the QP context names
// the SRQ): the CQE then lands two QP-context reads (A's grant, B's
// request: qpcMissPS each, TestColdQPMissesDelayAWrite) and the SRQ
// context read later, one after another; reads issued together would
// overlap and save about ctxMissPS.
func TestSRQTakeReadsItsContext(t *testing.T) {
	base := Defaults()
	off, _ := srqSendCQE(t, base)
	cfg := base
	cfg.SRQCacheEntries = 4
	on, b := srqSendCQE(t, cfg)
	assert.Equal(t, ctxMissPS, on-off, "one cold SRQ context read, 539.857 ns")
	assert.Equal(t, int64(1), b.SRQCache().Misses)
	assert.Nil(t, b.CQCache())

	cfg.QPCacheEntries = 4
	both, b := srqSendCQE(t, cfg)
	assert.Equal(t, 2*qpcMissPS+ctxMissPS, both-off, "QP contexts at A and B, then B's SRQ context")
	assert.Equal(t, int64(1), b.SRQCache().Misses)
	assert.Equal(t, int64(1), b.QPCache().Misses)
}

// TestCQCacheThrashIsPCIeBound runs 64 QPs taking turns with one 64-byte
// WRITE each, every QP of A with its own send CQ, through a CQ context
// cache of 4 entries on hosts with a Gen3 x1 link: every send CQE misses,
// evicting a CQ whose producer index moved, so A's upstream bounds the
// rate.
//
// Derivation. Gen3 x1 moves a byte in 8000 × 130 / (8 × 1 × 128) =
// 1015.625 ps. Per message A's upstream carries two read requests of 24
// bytes (the payload's, the CQ context's), 24375 ps each; the evicted
// context's write-back, 64 + 24 = 88 bytes, 89375 ps; and the CQE, 88
// bytes, 89375 ps: 227500 ps. Its downstream carries the payload and the
// context, a completion of 64 + 20 = 84 bytes each, 85312.5 → 85313 ps:
// 170626 ps. Every other resource has room: B writes the payload (88
// bytes up, 89.4 ns); A's CPU posts and polls in 100 ns (host.post_ns 60
// + poll_ns 40); the wire takes a 106-byte packet in 8.5 ns; 64 QPs each
// with a message outstanding over a round trip of about 3.5 µs (two reads
// and the payload's write at x1, the CQ context's read) are 18 M/s, 55
// ns a message. So the upstream is the bottleneck: 227.5 ns per message,
// 4.40 M/s. Without the write-back the bound would be the downstream's
// 170.6 ns. The test holds the upstream work booked per message to the
// 227500 ps, and the period between that and 3 % above it (the booking
// holes of TestQPCacheThrashIsPCIeBound).
func TestCQCacheThrashIsPCIeBound(t *testing.T) {
	const (
		n, entries  = 64, 4
		msgs        = 2000
		first, last = 400, msgs - n - 100
		upPS        = ib.PS(2*24375 + 2*89375)
	)
	cfg := Defaults()
	cfg.PCIe.Lanes = 1
	cfg.CQCacheEntries = entries
	r := newQPRingOf(t, cfg, n, msgs, true, WRRDMAWrite)
	c := r.a.CQCache()
	assert.Equal(t, int64(msgs), c.Misses, "every send CQE missed")
	assert.Equal(t, int64(0), c.Hits)
	assert.Equal(t, int64(msgs-entries), c.WriteBacks, "every miss past the first 4 evicted")
	work := float64(r.upAt[last-1]-r.upAt[first-1]) / float64(last-first)
	assert.InEpsilon(t, float64(upPS), work, 5e-4, "upstream ps booked per message")
	period := float64(r.doneAt[last-1]-r.doneAt[first-1]) / float64(last-first)
	assert.GreaterOrEqual(t, period, float64(upPS)*(1-1e-4), "ps per message: not faster than the bound")
	assert.Less(t, period, float64(upPS)*1.03, "ps per message: within the booking holes of the bound")
}

// TestCQCacheHitsWhenCQsFit runs the same ring with as many entries as
// CQs: each CQ misses once, at its first CQE, nothing is evicted or
// written back, and the rate is bound by the downstream's payload and
// the upstream's request and CQE, well above the thrashing ring's.
func TestCQCacheHitsWhenCQsFit(t *testing.T) {
	const n, msgs = 64, 2000
	cfg := Defaults()
	cfg.PCIe.Lanes = 1
	cfg.CQCacheEntries = n
	r := newQPRingOf(t, cfg, n, msgs, true, WRRDMAWrite)
	c := r.a.CQCache()
	assert.Equal(t, int64(n), c.Misses)
	assert.Equal(t, int64(msgs-n), c.Hits)
	assert.Equal(t, int64(0), c.WriteBacks)
	period := float64(r.doneAt[msgs-n-100-1]-r.doneAt[400-1]) / float64(msgs-n-100-400)
	// Upstream per message without context traffic: a request and a CQE,
	// 24375 + 89375 = 113750 ps.
	assert.Less(t, period, float64(2*24375+2*89375)*0.6, "ps per message: well under the thrashing ring's")
}

// TestContextMissesAllocateNothing: a SEND through an SRQ whose every CQ
// and SRQ context use misses and writes back allocates nothing once warm
// (the caches' slots are fixed; a miss is a PCIe read and a posted write
// like any other). Before each message a use of another CQ and SRQ
// number on each host evicts the contexts the message needs, so its CQEs
// (A's send CQE, B's receive CQE) and B's take each miss and write back.
func TestContextMissesAllocateNothing(t *testing.T) {
	cfg := Defaults()
	cfg.CQCacheEntries = 1
	cfg.SRQCacheEntries = 1
	r := newRecvCycleRigCfg(t, true, cfg)
	const other = 1000 // a CQ and SRQ number no verb made
	round := func() {
		now := r.s.Now()
		r.a.contextModify(r.a.cqc, now, other)
		r.b.contextModify(r.b.cqc, now, other)
		r.b.contextModify(r.b.srqc, now, other)
		r.round(t)
	}
	for i := 0; i < 200; i++ {
		round()
	}
	wa, wb, ws := r.a.CQCache().WriteBacks, r.b.CQCache().WriteBacks, r.b.SRQCache().WriteBacks
	allocs := testing.AllocsPerRun(100, round)
	assert.Zero(t, allocs, "allocations per message")
	// Each round wrote back twice in each cache (the other context's
	// use, the message's), AllocsPerRun running one more.
	assert.Equal(t, int64(202), r.a.CQCache().WriteBacks-wa)
	assert.Equal(t, int64(202), r.b.CQCache().WriteBacks-wb)
	assert.Equal(t, int64(202), r.b.SRQCache().WriteBacks-ws)
}

// TestDestroyedCQContextIsNotWrittenBack: DestroyCQ takes the CQ's
// context through the firmware, so a later miss that would have evicted
// it finds a free slot: no write-back, and the read is a cold miss's
// (ctxMissPS, not ctxWriteBackPS more).
func TestDestroyedCQContextIsNotWrittenBack(t *testing.T) {
	cfg := Defaults()
	cfg.CQCacheEntries = 1
	p := newPair(t, edrLink(), cfg, 4096)
	s := p.s
	x := p.b.CreateCQ(16)
	y := p.qb.RecvCQ
	var second ib.PS
	at := 10 * ib.Microsecond
	s.Schedule(at, &poster{fn: func() { p.b.contextModify(p.b.cqc, s.Now(), x.Num) }}, 0)
	s.Schedule(at+2*ib.Microsecond, &poster{fn: func() { require.NoError(t, p.b.DestroyCQ(x)) }}, 0)
	s.Schedule(at+3*ib.Microsecond, &poster{fn: func() { second = p.b.contextModify(p.b.cqc, s.Now(), y.Num) }}, 0)
	s.StopAt(20 * ib.Microsecond)
	require.NoError(t, s.Run())
	assert.Equal(t, at+3*ib.Microsecond+ctxMissPS, second)
	assert.Equal(t, int64(0), p.b.CQCache().WriteBacks)
}

// TestEQContextCache runs three completion events on B, from CQs x and z
// on completion vector 0 and y on vector 1 (an EQ per vector, as mlx5
// makes them: the CQ's context names its EQ), 20 µs apart, and compares
// each event's delivery with EQ contexts not modelled. Each event's EQE
// is posted at its CQE's issue, behind the CQE; with EQ contexts modelled
// it waits for its EQ's context, whose read request, issued then too, may
// not pass the CQE's posted write (nor a write-back issued before it), so
// a miss delays the event by exactly a cold read, ctxMissPS (the CQE's TLP
// precedes the read either way), and a miss that evicts a context the
// EQE before moved (its producer_counter, its state) by ctxWriteBackPS
// more. With 2 entries x's EQ and y's fit: x and y miss, z hits the EQ
// x brought. With 1 entry y evicts vector 0's EQ and z vector 1's, each
// written back.
func TestEQContextCache(t *testing.T) {
	run := func(entries int) ([3]ib.PS, *Device) {
		cfg := Defaults()
		cfg.EQCacheEntries = entries
		s := components.NewSim()
		a, b := BackToBack(s, edrLink(), cfg, cfg)
		ch := b.CreateCompChannel()
		pdA, pdB := a.AllocPD(), b.AllocPD()
		bufA, bufB := a.Malloc(4096), b.Malloc(4096)
		mrA, mrB := a.RegMR(pdA, bufA, 4096, AccessLocalWrite), b.RegMR(pdB, bufB, 4096, AccessLocalWrite)
		var got [3]ib.PS
		k := 0
		ch.OnEvent = func(_ *CQ, now ib.PS) { got[k] = now; k++ }
		for i, vector := range []uint32{0, 1, 0} {
			qa := a.CreateQP(pdA, a.CreateCQ(16), a.CreateCQ(16), 64, 64)
			qb := b.CreateQP(pdB, b.CreateCQ(16), b.CreateCQVector(16, ch, vector), 64, 64)
			require.NoError(t, ConnectRC(qa, qb, 4096, 1, 2))
			require.NoError(t, b.PostRecv(qb, &RecvWR{Addr: bufB, Length: 64, LKey: mrB.LKey}))
			require.NoError(t, b.ReqNotifyCQ(qb.RecvCQ, false))
			s.Schedule(ib.PS(i+1)*20*ib.Microsecond, &poster{fn: func() {
				require.NoError(t, a.PostSend(qa, &SendWR{Opcode: WRSend, LocalAddr: bufA, Length: 8, LKey: mrA.LKey}))
			}}, 1)
		}
		s.StopAt(100 * ib.Microsecond)
		require.NoError(t, s.Run())
		require.Equal(t, 3, k)
		return got, b
	}
	off, b := run(0)
	assert.Nil(t, b.EQCache())
	for _, tc := range []struct {
		entries            int
		delay              [3]ib.PS
		misses, writeBacks int64
	}{
		{2, [3]ib.PS{ctxMissPS, ctxMissPS, 0}, 2, 0},
		{1, [3]ib.PS{ctxMissPS, ctxWriteBackPS + ctxMissPS, ctxWriteBackPS + ctxMissPS}, 3, 2},
	} {
		on, b := run(tc.entries)
		for i := range on {
			assert.Equal(t, tc.delay[i], on[i]-off[i], "%d entries, event %d", tc.entries, i)
		}
		c := b.EQCache()
		assert.Equal(t, tc.misses, c.Misses, "%d entries", tc.entries)
		assert.Equal(t, 3-tc.misses, c.Hits, "%d entries", tc.entries)
		assert.Equal(t, tc.writeBacks, c.WriteBacks, "%d entries", tc.entries)
	}
}
