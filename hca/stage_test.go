package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

func TestStageServer(t *testing.T) {
	// 1 GHz: 1 cycle = 1000 ps. Latency 10 cycles, interval 4 cycles.
	s := newStage(StageConfig{LatencyCycles: 10, IntervalCycles: 4}, ib.CyclePS(1000))
	tests := []struct {
		offer, extra, want ib.PS
	}{
		{0, 0, 10000},       // idle: leaves after the latency
		{1000, 0, 14000},    // waits for the interval: starts at 4000
		{2000, 500, 18500},  // starts at 8000, + 500 ps miss
		{100000, 0, 110000}, // idle again
		{100000, 0, 114000}, // same cycle as the previous: one interval later
	}
	for i, tc := range tests {
		assert.Equal(t, tc.want, s.accept(tc.offer, tc.extra), "item %d", i)
	}
	st := s.stats(200000)
	assert.Equal(t, int64(5), st.Items)
	// Busy 5 × 4000 ps over 200 ns = 0.1.
	assert.InDelta(t, 0.1, st.Busy, 1e-12)
	// Residency: 10000 + 13000 + 16500 + 10000 + 14000 = 63500 ps → 0.3175 items.
	assert.InDelta(t, 0.3175, st.Occupancy, 1e-12)
}

// TestStageIssueLeaveIsAccept: accept is issue then leave written out
// (for speed); offering the same items both ways gives the same times and
// statistics.
func TestStageIssueLeaveIsAccept(t *testing.T) {
	cfg := StageConfig{LatencyCycles: 10, IntervalCycles: 4}
	a := newStage(cfg, ib.CyclePS(1000))
	b := newStage(cfg, ib.CyclePS(1000))
	for i, o := range []struct{ offer, extra ib.PS }{{0, 0}, {1000, 0}, {2000, 500}, {100000, 0}, {100000, 7}} {
		start := b.issue(o.offer)
		assert.Equal(t, a.accept(o.offer, o.extra), b.leave(o.offer, start, start+b.lat+o.extra), "item %d", i)
	}
	assert.Equal(t, a.stats(200000), b.stats(200000))
	assert.Equal(t, int64(5), b.stats(200000).Items)
}

// TestDMAStageNotHeldBehindAnotherQPsKeyMiss: the dma and key_check stages
// serve in time order, each QP's items in the order offered. Host A has
// two QPs to B. QP 1 WRITEs 64 bytes into a region of B's that B has never
// checked: B's R_Key lookup misses, and the payload write is offered to
// the dma stage only when the MKey context is in, 549.857 ns after the
// lookup. QP 2 WRITEs 64 bytes 100 ns later into a region whose key an
// earlier message warmed. Its write must go as on an idle HCA, from its
// tail's arrival at B (profile cx5 at 1 GHz, Gen3 x16):
//
//	transport_rx 40 + R_Key lookup (hit) 10 + dma stage 10
//	+ one posted-write TLP of 64 + 24 B 5.586 + write latency 200
//	= 265.586 ns.
//
// Served in offer order, the dma stage held it behind QP 1's write,
// offered first for about 440 ns later. QP 1's own packets still keep
// their order behind its miss (TestTimelineGolden: write_10000's second
// and third packets are written after the first, whose key missed).
func TestDMAStageNotHeldBehindAnotherQPsKeyMiss(t *testing.T) {
	cfg := Defaults()
	c := newColdWarm(t, cfg)
	p, q2, cold, warm := c.pair, c.q2, c.cold, c.warm
	var tl Timeline
	p.a.Timeline, p.b.Timeline = &tl, &tl
	var coldVisible ib.PS // when QP 1's payload is visible in B's memory
	p.b.OnMemWrite = func(addr uint64, n int, now ib.PS) {
		if addr == cold.Addr {
			coldVisible = now
		}
	}
	p.runColdWarm(t, q2, &tl, c.write64(t), cold, warm, ib.Millisecond)
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	pcie := NewPCIe(cfg.PCIe)
	require.Equal(t, ib.PS(5586), pcie.SerPS(64+cfg.PCIe.TLPOverheadBytes))
	rx, lookup, dma := ib.PS(cfg.TransportRx.LatencyCycles)*cyc, ib.PS(cfg.KeyCheck.LatencyCycles)*cyc,
		ib.PS(cfg.DMA.LatencyCycles)*cyc
	write64 := pcie.SerPS(64+cfg.PCIe.TLPOverheadBytes) + ib.FromNanoseconds(cfg.PCIe.WriteLatencyNS)
	want := rx + lookup + dma + write64
	require.Equal(t, ib.PS(265_586), want)
	// The premise: B missed on the warm key once (the first message) and
	// on the cold one (TestColdKeyMissIsAContextRead: 549.857 ns with the
	// lookup). QP 1's packet came first, and its write, booked then, was
	// for a time after QP 2's was offered: QP 1's tail arrived at its
	// write's visibility less the write, the dma stage, the miss and rx.
	require.Equal(t, int64(2), p.b.KeyCache().Misses)
	qp1Tail := coldVisible - write64 - dma - 549_857 - rx
	qp1DMAStart := coldVisible - write64 - dma
	require.Less(t, qp1Tail, tl.RxTail, "QP 1's write booked first")
	require.Less(t, tl.RxTail+rx+lookup, qp1DMAStart, "for a time after QP 2's offer")
	assert.Equal(t, want, tl.RespWrite-tl.RxTail)
}

// TestStageKeepsEachQPsOrder: in a stage that serves in time order
// (gapFill: dma, key_check, transport_tx), acceptQP gives an item the
// first free slot at or after its own time that starts after its QP's
// previous item's. The dma stage of the defaults: 10 cycles of latency,
// an interval of 2, at 1 GHz. QP x offers an item for 1 µs; then QP y
// offers one for 0, which takes the free slot at 0 (in offer order it
// waited for 1 µs + 2 ns); then QP x offers one for 0, which must not pass
// x's first: it takes the slot after it, 1002 ns, and leaves 10 ns later.
func TestStageKeepsEachQPsOrder(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 4096)
	st := &p.a.stages[StageDMA]
	require.True(t, st.gapFill)
	const ns = ib.Nanosecond
	var x, y ib.PS
	assert.Equal(t, 1010*ns, st.acceptQP(1000*ns, &x, 0))
	assert.Equal(t, 10*ns, st.acceptQP(0, &y, 0))
	assert.Equal(t, 1012*ns, st.acceptQP(0, &x, 0))
	assert.Equal(t, 1002*ns, x)
	assert.Equal(t, ib.PS(0), y)
}

// TestRxBufferFreesByItsOwnWrite: a received packet's buffer frees when its
// payload fits in the posted-write queue, by its own write: here the queue
// is 0 bytes (hca.pcie.posted_write_queue_bytes), so a packet's 64-byte
// blocks stay until its write's last TLP has left. The scenario of
// TestDMAStageNotHeldBehindAnotherQPsKeyMiss: QP 1's 64-byte WRITE misses
// its R_Key at B, its payload write booked for when the MKey context is in;
// QP 2's 64-byte WRITE arrives 100 ns later, hits, and its write fills the
// gap before QP 1's. Each packet is LRH 8 + BTH 12 + RETH 16 + 64 + ICRC 4
// + VCRC 2 = 106 bytes, 2 blocks. QP 2's blocks must free as its TLP
// leaves: transport_rx 40 + lookup 10 + dma stage 10 + one TLP of 64 + 24 B
// 5.586 = 65.586 ns after its tail; QP 1's only as its own TLP leaves, the
// write latency (200 ns) before its payload is visible. Freed by the
// estimate of a write offered on arrival behind everything booked
// upstream, QP 1's blocks went at once (nothing booked before it) and QP
// 2's waited for the end of QP 1's write booked ahead, 440 ns on: the
// hold the dma stage no longer makes, moved to the port's credits.
func TestRxBufferFreesByItsOwnWrite(t *testing.T) {
	cfg := Defaults()
	cfg.PCIe.PostedWriteQueueBytes = 0
	const blocks = 2
	require.Equal(t, blocks, ib.Credits(8+12+16+64+4+2))
	// run plays the scenario and samples B's VL 0 buffer (blocks in use)
	// at the given times.
	run := func(at []ib.PS) (tl Timeline, coldVisible ib.PS, used []int) {
		c := newColdWarm(t, cfg)
		p, s, q2, cold, warm := c.pair, c.s, c.q2, c.cold, c.warm
		p.a.Timeline, p.b.Timeline = &tl, &tl
		p.b.OnMemWrite = func(addr uint64, n int, now ib.PS) {
			if addr == cold.Addr {
				coldVisible = now
			}
		}
		used = make([]int, len(at))
		for i, ti := range at {
			s.Schedule(ti, &poster{fn: func() { used[i] = p.b.Port.BufferUsed(0) }}, 0)
		}
		p.runColdWarm(t, q2, &tl, c.write64(t), cold, warm, 100*ib.Microsecond)
		return tl, coldVisible, used
	}
	// The first run finds the tails and the cold write's visibility; the
	// simulation is deterministic, so the second, sampling around the
	// derived release times, replays it.
	tl, coldVisible, _ := run(nil)
	require.NotZero(t, tl.RxTail)
	pcie := NewPCIe(cfg.PCIe)
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	qp2Free := tl.RxTail + ib.PS(cfg.TransportRx.LatencyCycles+cfg.KeyCheck.LatencyCycles+cfg.DMA.LatencyCycles)*cyc +
		pcie.SerPS(64+cfg.PCIe.TLPOverheadBytes)
	require.Equal(t, ib.PS(65_586), qp2Free-tl.RxTail)
	qp1Free := coldVisible - ib.FromNanoseconds(cfg.PCIe.WriteLatencyNS)
	require.Less(t, qp2Free, qp1Free, "QP 2's write went before QP 1's")
	at := []ib.PS{qp2Free - 1, qp2Free + 1, qp1Free - 1, qp1Free + 1}
	tl2, _, used := run(at)
	require.Equal(t, tl.RxTail, tl2.RxTail, "the replay")
	assert.Equal(t, []int{2 * blocks, blocks, blocks, 0}, used,
		"blocks in use just before and after QP 2's TLP leaves, then QP 1's")
}

// coldWarm is the two-QP scenario of the tests of the HCA's time order:
// newPair's QP 1 (qa → qb) and a second connected QP (q2 → q2b), with 4 KiB
// of B's memory registered twice: cold, QP 1's, whose R_Key no packet has
// looked up (its first WRITE misses in the key cache), and warm, QP 2's,
// eight pages on.
type coldWarm struct {
	*pair
	q2, q2b    *QP
	cold, warm MR
}

func newColdWarm(t *testing.T, cfg Config) *coldWarm {
	p := newPair(t, edrLink(), cfg, 1<<16)
	c := &coldWarm{pair: p}
	c.q2 = p.a.CreateQP(p.qa.PD, p.a.CreateCQ(64), p.a.CreateCQ(64), 64, 64)
	c.q2b = p.b.CreateQP(p.qb.PD, p.b.CreateCQ(64), p.b.CreateCQ(64), 64, 64)
	require.NoError(t, ConnectRC(c.q2, c.q2b, 4096, 0x30, 0x40))
	acc := AccessLocalWrite | AccessRemoteWrite
	c.cold = p.b.RegMR(p.qb.PD, p.bufB, 4096, acc)
	c.warm = p.b.RegMR(c.q2b.PD, p.bufB+8*4096, 4096, acc)
	return c
}

// write returns an event that posts a signaled n-byte RDMA WRITE from A's
// buffer on qp into mr.
func (c *coldWarm) write(t *testing.T, qp *QP, mr MR, n uint32, id uint64) *poster {
	return &poster{fn: func() {
		require.NoError(t, c.a.PostSend(qp, &SendWR{ID: id, Opcode: WRRDMAWrite, Signaled: true,
			LocalAddr: c.bufA, Length: n, LKey: c.mrA.LKey, RemoteAddr: mr.Addr, RKey: mr.RKey}))
	}}
}

// write64 is write for the 64-byte WRITEs of runColdWarm.
func (c *coldWarm) write64(t *testing.T) func(qp *QP, mr MR, id uint64) *poster {
	return func(qp *QP, mr MR, id uint64) *poster { return c.write(t, qp, mr, 64, id) }
}

// countSuccesses polls A's completions as they come, requiring each to be
// a success, and returns the count so far.
func (p *pair) countSuccesses(t *testing.T) *int {
	done := 0
	var wcs [4]WC
	p.a.OnCQE = func(cq *CQ, now ib.PS) {
		n := p.a.PollCQ(cq, wcs[:])
		for i := 0; i < n; i++ {
			require.Equal(t, WCSuccess, wcs[i].Status)
		}
		done += n
	}
	return &done
}

// runColdWarm plays the time-order tests' three WRITEs from A: QP 2's
// first into warm at 0 (which warms its keys and pages), QP 1's into cold
// at 20 µs, and QP 2's second into warm 100 ns later, traced in tl; it
// runs the simulation to stop and requires the three to have completed
// successfully. write(qp, mr, id) makes a post.
func (p *pair) runColdWarm(t *testing.T, q2 *QP, tl *Timeline, write func(qp *QP, mr MR, id uint64) *poster,
	cold, warm MR, stop ib.PS) {
	s := p.s
	s.Schedule(0, write(q2, warm, 1), 0)
	at := 20 * ib.Microsecond
	s.Schedule(at, write(p.qa, cold, 2), 0)
	s.Schedule(at+100*ib.Nanosecond, &poster{fn: func() {
		tl.Trace(q2, q2.NextWQEIndex())
		write(q2, warm, 3).fn()
	}}, 0)
	done := p.countSuccesses(t)
	s.StopAt(stop)
	require.NoError(t, s.Run())
	require.Equal(t, 3, *done)
}

// TestWQEFetchNotHeldBehindAnotherQueuesPrefetch: the wqe_fetch stage
// parses WQEs as they come on chip, in time order, each queue's in its own
// order (acceptQP with the queue's parse slot). On host A, QP 1 posts a
// receive at 0 and QP 2 a 2-byte inline RDMA WRITE at 100 ns, which goes by
// BlueFlame (its WQE comes with the doorbell, on chip then). With the
// defaults (1 GHz; doorbell stage 20 cycles, wqe_fetch 10 and an interval
// of 2, dma 10; post 60 ns, MMIO 308 ns, read completion 533 ns):
//
//	the receive: doorbell at 60 + 308 = 368 ns, its prefetch read (one
//	WQE, the QP's receive stride) issued through the dma stage at 378 ns,
//	back at PCIe.Read(378 ns) = 914.81 ns (request TLP, 533 ns, the
//	completion) and parsed in 10 ns: on chip at 924.81 ns;
//	the WRITE: post 100 + 60 (the thread's post), doorbell at
//	160 + 308 = 468 ns, doorbell stage done at 488 ns, parsed in 10 ns:
//	498 ns.
//
// The receive's parse was booked first (at 368 ns), for a slot after the
// WRITE's doorbell. Served in offer order (the mutant: gapFill off) the
// WRITE's parse took the next slot after it, one interval later, and left
// at the receive's on-chip time + 2 ns, 926.81 ns: the artefact behind
// the +369.951 ns of docs/fabric.md's warm tree iteration, now fixed.
func TestWQEFetchNotHeldBehindAnotherQueuesPrefetch(t *testing.T) {
	cfg := Defaults()
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	ns := func(f float64) ib.PS { return ib.FromNanoseconds(f) }
	lat, ii := ib.PS(cfg.WQEFetch.LatencyCycles)*cyc, ib.PS(cfg.WQEFetch.IntervalCycles)*cyc
	for _, tc := range []struct {
		name   string
		mutate func(d *Device)
	}{
		{"time order", nil},
		{"mutant: wqe_fetch in offer order", func(d *Device) { d.stages[StageWQEFetch].gapFill = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newColdWarm(t, cfg)
			p, q2 := c.pair, c.q2
			require.True(t, p.a.stages[StageWQEFetch].gapFill)
			if tc.mutate != nil {
				tc.mutate(p.a)
			}
			var rec traceRecorder
			p.a.AcceptHook(&rec)
			var tl Timeline
			p.a.Timeline = &tl
			p.s.Schedule(0, &poster{fn: func() {
				require.NoError(t, p.a.PostRecv(p.qa, &RecvWR{ID: 1, Addr: p.bufA, Length: 64, LKey: p.mrA.LKey}))
			}}, 0)
			p.s.Schedule(100*ib.Nanosecond, &poster{fn: func() {
				tl.Trace(q2, q2.NextWQEIndex())
				require.NoError(t, p.a.PostSend(q2, &SendWR{ID: 2, Opcode: WRRDMAWrite, Signaled: true, Inline: true,
					LocalAddr: p.bufA, Length: 2, RemoteAddr: c.warm.Addr, RKey: c.warm.RKey}))
			}}, 0)
			done := p.countSuccesses(t)
			p.s.StopAt(100 * ib.Microsecond)
			require.NoError(t, p.s.Run())
			require.Equal(t, 1, *done)

			var rqOnChip, sqParsed []ib.PS
			for _, e := range rec.events {
				q, _ := e.Str("queue")
				qpn, _ := e.Int("qpn")
				switch {
				case e.Kind == components.TraceWQEFetch && q == "rq" && uint32(qpn) == p.qa.Num:
					rqOnChip = append(rqOnChip, e.Time)
				case e.Kind == components.TraceWQEFetch && q == "sq" && uint32(qpn) == q2.Num:
					sqParsed = append(sqParsed, e.Time)
				}
			}
			require.Len(t, rqOnChip, 1)
			require.Len(t, sqParsed, 1)
			// The receive, derived: its doorbell, the dma stage, the read,
			// the parse (alone in the stage at its time either way).
			rqDoorbell := ns(cfg.Host.PostNS) + ns(cfg.PCIe.MMIOLatencyNS)
			require.Equal(t, ns(368), rqDoorbell)
			rqRead := NewPCIe(cfg.PCIe).Read(rqDoorbell+ib.PS(cfg.DMA.LatencyCycles)*cyc, 0, p.qa.rqStride)
			assert.Equal(t, rqRead+lat, rqOnChip[0], "the receive WQE on chip")
			// The WRITE's doorbell, derived, and the premise: the receive's
			// parse was booked (at its doorbell) before the WRITE's
			// doorbell, for a slot after the WRITE's parse would start.
			wantDB := 100*ib.Nanosecond + ns(cfg.Host.PostNS) + ns(cfg.PCIe.MMIOLatencyNS) + ib.PS(cfg.Doorbell.LatencyCycles)*cyc
			require.Equal(t, ns(488), wantDB)
			require.Equal(t, wantDB, tl.DoorbellDone)
			require.Less(t, rqDoorbell, tl.Doorbell, "the receive's parse booked first")
			require.Greater(t, rqRead, wantDB+ii, "for a slot after the WRITE's")
			want := wantDB + lat // 498 ns
			t.Logf("receive on chip %d ps; the WRITE's WQE parsed at %d ps (its doorbell done %d)", rqOnChip[0], sqParsed[0], tl.DoorbellDone)
			if tc.mutate == nil {
				assert.Equal(t, want, sqParsed[0], "the WRITE's WQE parsed as it came on chip")
			} else {
				// Offer order: one interval after the receive's slot.
				assert.NotEqual(t, want, sqParsed[0], "the mutant must fail the check")
				assert.Equal(t, rqRead+ii+lat, sqParsed[0], "the mutant: behind the receive's parse")
			}
		})
	}
}
