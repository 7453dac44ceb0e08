package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

func gen3() PCIeConfig {
	return PCIeConfig{Gen: 3, Lanes: 16, MPSBytes: 256, MRRSBytes: 512, ReadCompletionBytes: 64,
		ReadLatencyNS: 500, WriteLatencyNS: 200, TLPOverheadBytes: 24, CompletionOverheadBytes: 20,
		OutstandingReads: 4, MMIOLatencyNS: 250}
}

func TestPCIeRates(t *testing.T) {
	tests := []struct {
		gen  int
		want float64 // Gb/s per direction at x16
	}{
		// 8 GT/s × 16 × 128/130 = 126.03 Gb/s = 15.75 GB/s (ib-facts §8).
		{3, 8 * 16 * 128.0 / 130},
		{4, 16 * 16 * 128.0 / 130},
		{5, 32 * 16 * 128.0 / 130},
		// 64 GT/s × 16 × 236/256 FLIT efficiency = 944 Gb/s = 118 GB/s.
		{6, 64 * 16 * 236.0 / 256},
	}
	for _, tc := range tests {
		c := gen3()
		c.Gen = tc.gen
		p := NewPCIe(c)
		assert.InDelta(t, tc.want, p.PayloadGbps(), 1e-9, "gen %d", tc.gen)
	}
	// Gen3 x16: 1 byte = 8 / 126.03 ns = 63.48 ps; 280 bytes = 17773.4 → 17774 ps (rounded up).
	assert.Equal(t, ib.PS(17774), NewPCIe(gen3()).SerPS(280))
}

func TestPCIeWriteAndRead(t *testing.T) {
	p := NewPCIe(gen3())
	// A 600-byte posted write at MPS 256: TLPs of 256, 256, 88 payload,
	// each + 24 overhead, back to back upstream, then the write latency.
	want := p.SerPS(280) + p.SerPS(280) + p.SerPS(112) + 200*ib.Nanosecond
	assert.Equal(t, want, p.Write(0, 600))

	q := NewPCIe(gen3())
	// A 100-byte read: one request (24 B upstream), 500 ns, then two
	// completions of 64 and 36 bytes (+20 each) downstream.
	want = q.SerPS(24) + 500*ib.Nanosecond + q.SerPS(84) + q.SerPS(56)
	assert.Equal(t, want, q.Read(0, 0, 100))
	assert.Equal(t, int64(1), q.ReadRequests)
}

func TestPCIeOutstandingReadCap(t *testing.T) {
	// 4 tags, 5 requests of 512 B: the fifth waits for the first tag.
	p := NewPCIe(gen3())
	done := p.Read(0, 0, 5*512)
	req := p.SerPS(24)
	cpl := p.SerPS(64 + 20)
	// Request k (k=0..3) leaves at (k+1)·req; its completions start at
	// (k+1)·req + 500 ns, but the downstream is FIFO: request 0's 8
	// completions end at req + 500 ns + 8·cpl; each later request's start
	// is earlier than the previous end, so they follow back to back.
	firstTagFree := req + 500*ib.Nanosecond + 8*cpl
	// The fifth request leaves at firstTagFree + req; its completions find
	// the downstream idle again only if the four first ones are done:
	// 4 × 8 completions end at req + 500 ns + 32·cpl < firstTagFree + req + 500 ns.
	want := firstTagFree + req + 500*ib.Nanosecond + 8*cpl
	assert.Equal(t, want, done)
	// It was ready at 0 and waited for the first tag.
	assert.Equal(t, firstTagFree, p.TagStallPS)
}

// TestPCIeReadBookedAheadHoldsNoEarlierRead: a read booked for a later
// time (as a key-cache miss books its context read after the lookup)
// holds the link only while its own TLPs are on it. With gen3(): a
// request of 24 B takes 1524 ps, a completion of 64 + 20 B 5333 ps, the
// read latency is 500 ns; A is a 64-byte read booked first, for X = 1 µs.
func TestPCIeReadBookedAheadHoldsNoEarlierRead(t *testing.T) {
	const req, cpl, lat, X ib.PS = 1524, 5333, 500 * ib.Nanosecond, ib.Microsecond
	c := NewPCIe(gen3())
	require.Equal(t, req, c.SerPS(24))
	require.Equal(t, cpl, c.SerPS(84))
	// A alone: request [X, X + req], completion [X + req + lat, + cpl].
	aDone := X + req + lat + cpl
	tests := []struct {
		name string
		at   ib.PS // the second read's time, booked after A
		want ib.PS
	}{
		// Wholly before A: an idle link. In call order (FIFO) it waited
		// for A: request [X + req, X + 2 req], completion after A's, done
		// at X + lat + req + 2 cpl.
		{"before A", 0, req + lat + cpl},
		// Its request [X − 1000, X + 524] would overlap A's, which is not
		// moved: it goes at X + req, and its completion, due at X + 2 req
		// + lat, waits for A's, which ends at X + req + lat + cpl.
		{"overlapping A", X - 1000, X + req + lat + 2*cpl},
		// Its request fits just before A's, [X − req, X]; its completion,
		// due at X + lat, does not fit in the req before A's: after it.
		{"in the gap before A", X - req, X + req + lat + 2*cpl},
		// Wholly after A: idle again.
		{"after A", 2 * X, 2*X + req + lat + cpl},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPCIe(gen3())
			assert.Equal(t, aDone, p.Read(X, 0, 64))
			assert.Equal(t, tc.want, p.Read(tc.at, 0, 64))
			assert.Zero(t, p.TagStallPS)
		})
	}
}

// TestPCIeOrderingRules: what PCIe transaction ordering (relaxed ordering
// off) requires of the TLPs the model books out of time order. With
// gen3(): request 1524 ps, posted-write TLPs of 256 + 24 B 17774 ps, 88 +
// 24 B 7110 ps, 64 + 24 B 5586 ps; completions 64 + 20 B 5333 ps, 36 + 20
// B 3555 ps; read latency 500 ns, write latency 200 ns.
func TestPCIeOrderingRules(t *testing.T) {
	const req, lat, wlat ib.PS = 1524, 500 * ib.Nanosecond, 200 * ib.Nanosecond
	c := NewPCIe(gen3())
	require.Equal(t, ib.PS(17774), c.SerPS(280))
	require.Equal(t, ib.PS(7110), c.SerPS(112))
	require.Equal(t, ib.PS(5586), c.SerPS(88))
	require.Equal(t, ib.PS(5333), c.SerPS(84))
	require.Equal(t, ib.PS(3555), c.SerPS(56))

	t.Run("a read request does not pass posted writes issued before it", func(t *testing.T) {
		p := NewPCIe(gen3())
		// A read booked first for 5 ns holds [5000, 6524] upstream.
		p.Read(5000, 0, 64)
		// A 600-byte write at 0.1 ns: its first TLP (17774) does not fit
		// in [100, 5000]: TLPs [6524, 24298], [24298, 42072], [42072,
		// 49182].
		assert.Equal(t, ib.PS(49182)+wlat, p.Write(100, 600))
		// A 64-byte write at 1 ns would fit in [1000, 5000], but a posted
		// write does not pass one issued before it: [49182, 54768].
		assert.Equal(t, ib.PS(54768)+wlat, p.Write(1000, 64))
		// A read at 1 ns: its request would fit in the same gap, but goes
		// after both writes: [54768, 56292], then its completion.
		assert.Equal(t, 54768+req+lat+5333, p.Read(1000, 0, 64))
		// A read at 0, issued before the writes, passes none: its request
		// takes [0, 1524]. Its completion, due at 501524, does not fit in
		// the 5000 ps before the first read's, [506524, 511857]: after it.
		assert.Equal(t, 5000+req+lat+2*5333, p.Read(0, 0, 64))
	})

	t.Run("a write issued later holds back no earlier read", func(t *testing.T) {
		p := NewPCIe(gen3())
		// A write booked first for 1 µs; a read at 0 is not behind it.
		assert.Equal(t, ib.Microsecond+17774+17774+7110+wlat, p.Write(ib.Microsecond, 600))
		assert.Equal(t, req+lat+5333, p.Read(0, 0, 64))
	})

	t.Run("a read's completions return in order", func(t *testing.T) {
		p := NewPCIe(gen3())
		// A 100-byte read at 0: request [0, 1524], completions of 64 and
		// 36 bytes due from 501524. Another read's completion already
		// holds [505524, 511524], leaving 4000 ps before it: room for the
		// 36-byte completion (3555), not the 64-byte one (5333). The first
		// goes after that span, [511524, 516857]; the second follows it,
		// [516857, 520412], not into the gap before it.
		due := req + lat
		p.down.book(due+4000, 6000)
		assert.Equal(t, due+10000+5333+3555, p.Read(0, 0, 100))
	})
}

// TestPCIeTagsOutOfTimeOrder: with 2 tags, a read booked ahead takes a tag
// until its completion, and reads booked afterwards for earlier times take
// the tag that frees first, whenever it was booked. A 64-byte read on an
// idle gen3() link takes r = 1524 + 500 ns + 5333 = 506857 ps from issue
// to its completion.
func TestPCIeTagsOutOfTimeOrder(t *testing.T) {
	const r = ib.PS(506857)
	cfg := gen3()
	cfg.OutstandingReads = 2
	p := NewPCIe(cfg)
	X := 2 * ib.Microsecond
	assert.Equal(t, X+r, p.Read(X, 0, 64)) // A: a tag until X + r
	assert.Equal(t, r, p.Read(0, 0, 64))   // B: the other tag, until r
	// At 0 both tags are in use; B's frees first (a ring in call order
	// said A's, X + r).
	assert.Equal(t, 0, p.TagsFree(0))
	assert.Equal(t, r, p.NextTagFree(0))
	// C at 1 µs: B's tag is free by then: no wait.
	assert.Equal(t, ib.Microsecond+r, p.Read(ib.Microsecond, 0, 64))
	assert.Zero(t, p.TagStallPS)
	// D at 1 µs: the tags are C's (until 1 µs + r) and A's (X + r): D
	// waits for C's, r, and its read then takes r.
	assert.Equal(t, ib.Microsecond+2*r, p.Read(ib.Microsecond, 0, 64))
	assert.Equal(t, r, p.TagStallPS)
	// D's tag frees at 1 µs + 2r, before A's.
	assert.Equal(t, 1, p.TagsFree(X+r-1))
	assert.Equal(t, X+r, p.NextTagFree(ib.Microsecond+2*r))
	assert.Equal(t, 2, p.TagsFree(X+r))
}

// fakeClock is a simulation time a test sets.
type fakeClock struct{ now ib.PS }

func (c *fakeClock) Now() ib.PS { return c.now }

// TestPCIeForgetsItsPast: a link that forgets the spans, posted-write marks
// and tags of the past (it is told the time) books every TLP where one
// that remembers everything does, and holds a bounded amount of state
// however many TLPs it has carried: per microsecond a 4 KiB read, a 4 KiB
// write and a 64-byte read booked 600 ns ahead, each ending within about
// 1.2 µs, so at most two microseconds' bookings (a few dozen spans,
// marks and tags) are live; each slice is compacted once more than 64 of
// its entries are past and they are most of it.
func TestPCIeForgetsItsPast(t *testing.T) {
	cfg := gen3()
	cfg.OutstandingReads = 64
	clk := &fakeClock{}
	forgets, keeps := NewPCIe(cfg), NewPCIe(cfg)
	forgets.clock = clk
	const n = 5000
	for i := range n {
		clk.now = ib.PS(i) * ib.Microsecond
		require.Equal(t, keeps.Read(clk.now, 0, 4096), forgets.Read(clk.now, 0, 4096))
		require.Equal(t, keeps.Write(clk.now+10, 4096), forgets.Write(clk.now+10, 4096))
		require.Equal(t, keeps.Read(clk.now+600*ib.Nanosecond, 0, 64), forgets.Read(clk.now+600*ib.Nanosecond, 0, 64))
	}
	assert.Greater(t, len(keeps.up.spans), n, "the check would see a leak")
	for name, l := range map[string]int{"up": cap(forgets.up.spans), "down": cap(forgets.down.spans),
		"posted": cap(forgets.posted), "tags": cap(forgets.tagBusy)} {
		assert.LessOrEqual(t, l, 512, name)
	}
	assert.Equal(t, keeps.up.busy, forgets.up.busy)
	assert.Equal(t, keeps.TagStallPS, forgets.TagStallPS)
}

func TestPCIeReadBound(t *testing.T) {
	c := gen3()
	c.OutstandingReads = 256
	p := NewPCIe(c)
	// With enough tags the bound is completion efficiency: 126.03 × 64/84 = 96.02.
	assert.InDelta(t, 8*16*128.0/130*64/84, p.ReadBoundGbps(), 1e-9)
	// Streaming 1 MiB of reads approaches that bound.
	n := 1 << 20
	done := p.Read(0, 0, n)
	gbps := float64(n) * 8 / float64(done) * 1000
	assert.InDelta(t, p.ReadBoundGbps(), gbps, 0.02*p.ReadBoundGbps())
	assert.LessOrEqual(t, gbps, p.ReadBoundGbps())
}

// TestPCIeGen6FlitModeFraming: at 64 GT/s PCIe runs in Flit Mode, where
// TLPs are packed back to back into the 236 TLP bytes of 256-byte flits
// whose own DLP (6 B, with the sequence number), CRC (8 B) and FEC (6 B)
// protect the link; there is no STP framing token and no LCRC per TLP.
// The line rate already pays for those (236/256), so a TLP costs only its
// header: 4DW = 16 B for a 64-bit memory request, 3DW = 12 B for a
// completion. The cx8 profile (Gen6) must not charge Gen3's 24 / 20.
func TestPCIeGen6FlitModeFraming(t *testing.T) {
	cfg, err := Profile("cx8")
	if !assert.NoError(t, err) {
		return
	}
	c := cfg.PCIe
	assert.Equal(t, 6, c.Gen)
	p := NewPCIe(c)
	// A 64-byte read: a 16-byte request upstream, the completion latency,
	// one 64-byte completion with its 12-byte header downstream.
	want := p.SerPS(16) + ib.FromNanoseconds(c.ReadLatencyNS) + p.SerPS(64+12)
	assert.Equal(t, want, p.Read(0, 0, 64))
	// A 64-byte posted write: one TLP of 64 + 16 bytes, then visibility.
	q := NewPCIe(c)
	assert.Equal(t, q.SerPS(64+16)+ib.FromNanoseconds(c.WriteLatencyNS), q.Write(0, 64))
	// The large-read bound: 943.9 Gb/s × 128 / (128 + 12) = 863.0 Gb/s
	// (RCB 128 B, cx7's), tags permitting.
	assert.InDelta(t, 64*16*236.0/256*128/140, p.ReadBoundGbps(), 1e-9)
}

// TestReadLatencyFromPCIeBench holds pcie.read_completion_latency_ns to its
// source. pcie-bench (Neugebauer et al., SIGCOMM 2018; github.com/pcie-bench/
// data, nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0/
// lat_dma_sizes.txt) measured 64-byte DMA reads from an NFP-6000 on PCIe
// Gen3 x8 into a Broadwell Xeon E5-2630 v4, warm cache: median 656 cycles of
// the NFP's 1.2 GHz clock, 546.67 ns, from the device issuing the read to
// its data being in. The model's Read over the same window on the same link
// (Gen3 x8: a 24-byte request, one 64 + 20-byte completion) must give that
// median to within the knob's rounding to a whole nanosecond.
func TestReadLatencyFromPCIeBench(t *testing.T) {
	cfg := Defaults().PCIe
	cfg.Lanes = 8 // the NFP-6000's link
	p := NewPCIe(cfg)
	// x8 Gen3: 8 GT/s × 8 lanes × 128/130 = 63.0 Gb/s, 126.95 ps per byte:
	// request 24 B 3.047 ns, completion 84 B 10.665 ns.
	require.Equal(t, ib.PS(3047), p.SerPS(24))
	require.Equal(t, ib.PS(10665), p.SerPS(84)) // 10664.06, rounded up
	measured := ib.PS(656 * 1_000_000 / 1200)   // 656 cycles at 1.2 GHz, ps
	assert.InDelta(t, float64(measured), float64(p.Read(0, 0, 64)), 500, "546.67 ns measured")
}

// TestReadNotHeldBehindReadBookedAhead: the defect this PCIe model's
// time-ordered booking removes, at device level. Host A has two QPs to B
// and translates addresses (hca.mtt_cache_entries 64). QP 1 posts a WRITE
// from a region A has never used: its L_Key check misses (the MKey context
// read, 549.857 ns after the decode) and only then translates the gather
// element, whose MTT entry misses too, so A books that entry's read
// 549.857 ns ahead of now. QP 2 posts a WRITE 100 ns later from a region
// whose key and page an earlier message warmed: its payload read issues
// 120 ns after QP 1's decode and has the link to itself then. It
// must take what an idle link gives, stage by stage (profile cx5 at 1 GHz,
// Gen3 x16: 63.4765625 ps per byte, each TLP rounded up):
//
//	post 60 + MMIO 308 (BlueFlame: the WQE comes with the doorbell)
//	+ doorbell stage 20 + parse one WQEBB 10 + L_Key lookup (hit) 10
//	+ grant, DMA stage 10 + read request 24 B 1.524 + read latency 533
//	+ one completion of 64 + 20 B 5.333 = 957.857 ns from the post.
//
// Booked in call order (before this model), QP 2's request waited behind
// QP 1's MTT read request, booked first for later: QP 1 decodes at D =
// post + 398 ns, its MKey read ends at D + 549.857, the MTT request holds
// [D + 549.857, D + 551.381]; QP 2's request, ready at D + 120, went
// after it, and its completion then also waited 0.254 ns behind the MTT
// entry's (8 + 20 B, 1.778 ns): done at D + 1091.492, 1389.492 ns from
// QP 2's post (D − 298), held 431.635 ns. The test failed so.
func TestReadNotHeldBehindReadBookedAhead(t *testing.T) {
	cfg := Defaults()
	cfg.MTTCacheEntries = 64
	p := newPair(t, edrLink(), cfg, 1<<16)
	pd := p.qa.PD
	q2 := p.a.CreateQP(pd, p.a.CreateCQ(64), p.a.CreateCQ(64), 64, 64)
	q2b := p.b.CreateQP(p.qb.PD, p.b.CreateCQ(64), p.b.CreateCQ(64), 64, 64)
	require.NoError(t, ConnectRC(q2, q2b, 4096, 0x30, 0x40))
	// Two regions on different pages of A's buffer: QP 1's cold, QP 2's
	// warmed by a first message.
	cold := p.a.RegMR(pd, p.bufA, 4096, AccessLocalWrite)
	warm := p.a.RegMR(pd, p.bufA+8*4096, 4096, AccessLocalWrite)
	write := func(qp *QP, mr MR, id uint64) *poster {
		return &poster{fn: func() {
			require.NoError(t, p.a.PostSend(qp, &SendWR{ID: id, Opcode: WRRDMAWrite, Signaled: true,
				LocalAddr: mr.Addr, Length: 64, LKey: mr.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
		}}
	}
	var tl Timeline
	p.a.Timeline, p.b.Timeline = &tl, &tl
	p.runColdWarm(t, q2, &tl, write, cold, warm, ib.Millisecond)
	// The premise: QP 1's key and page missed (one each; QP 2's warm-up
	// missed one each before), QP 2's second message hit both.
	require.Equal(t, int64(2), p.a.KeyCache().Misses)
	require.Equal(t, int64(2), p.a.MTTCache().Misses)

	cyc := ib.CyclePS(cfg.CoreClockMHz)
	pcie := NewPCIe(cfg.PCIe)
	require.Equal(t, ib.PS(1524), pcie.SerPS(24))
	require.Equal(t, ib.PS(5333), pcie.SerPS(64+20))
	want := ib.FromNanoseconds(cfg.Host.PostNS) + ib.FromNanoseconds(cfg.PCIe.MMIOLatencyNS) +
		ib.PS(cfg.Doorbell.LatencyCycles+cfg.WQEFetch.LatencyCycles+cfg.KeyCheck.LatencyCycles+cfg.DMA.LatencyCycles)*cyc +
		pcie.SerPS(cfg.PCIe.TLPOverheadBytes) + ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS) +
		pcie.SerPS(64+cfg.PCIe.CompletionOverheadBytes)
	require.Equal(t, ib.PS(957_857), want)
	assert.Equal(t, want, tl.DMAReadDone-tl.Posted)
}

// TestPCIePostedWritesInIssueOrder: posted writes go on the link in the
// order of their issue times, whatever the order the device decides on
// them (PCIe.Post). The link is told no write is posted for an issue
// before now + 10 ns (the horizon: the device's shortest stage latency
// before a write) and keeps a write issued later until then. With gen3():
// a TLP of 256 + 24 B takes 17774 ps, 88 + 24 B 7110, 64 + 24 B 5586; a
// read request 1524; a completion of 64 + 20 B 5333; read latency 500 ns,
// write latency 200 ns. W2, 64 bytes issued at 30 ns, is posted first;
// W1, 344 bytes (TLPs of 256 and 88) issued at 12 ns, after it. Booked in
// call order (Write, before), W2 held [30000, 35586] and W1 took the gap
// before it for its first TLP, [12000, 29774], and went after it with its
// second, [35586, 42696]: W2 passed W1, and a read issued at 25 ns, which
// may not pass W1, waited for its end, 42696.
func TestPCIePostedWritesInIssueOrder(t *testing.T) {
	const H, wlat, lat ib.PS = 10 * ib.Nanosecond, 200 * ib.Nanosecond, 500 * ib.Nanosecond
	const t1, t2 ib.PS = 12000, 30000
	c := NewPCIe(gen3())
	require.Equal(t, ib.PS(17774), c.SerPS(280))
	require.Equal(t, ib.PS(7110), c.SerPS(112))
	require.Equal(t, ib.PS(5586), c.SerPS(88))
	require.Equal(t, ib.PS(1524), c.SerPS(24))
	require.Equal(t, ib.PS(5333), c.SerPS(84))
	type booked struct {
		issue, vis ib.PS
	}
	link := func() (*PCIe, *fakeClock, *[]booked) {
		p := NewPCIe(gen3())
		clk := &fakeClock{}
		var got []booked
		p.clock, p.horizon = clk, H
		p.onBooked = func(w *PostedWrite, vis ib.PS) { got = append(got, booked{w.Issue, vis}) }
		return p, clk, &got
	}
	post := func(p *PCIe, issue ib.PS, n int) {
		_, ok := p.Post(issue, n, WriteNote{})
		require.False(t, ok, "issued after now + horizon: kept")
	}

	t.Run("the write issued first goes first", func(t *testing.T) {
		p, clk, got := link()
		post(p, t2, 64)
		post(p, t1, 344)
		assert.Empty(t, *got)
		// At t1 − H nothing issued before t1 can come: W1 is booked,
		// [12000, 29774] and [29774, 36884].
		clk.now = t1 - H
		p.Flush()
		// At t2 − H, W2 behind it: [36884, 42470].
		clk.now = t2 - H
		p.Flush()
		assert.Equal(t, []booked{{t1, 36884 + wlat}, {t2, 42470 + wlat}}, *got)
		assert.Zero(t, p.WritesBookedLate)
		// A write issued by now + H is booked at once: W3 at 30 ns, 64
		// bytes, behind W2 (issued at the same time, posted before it):
		// [42470, 48056].
		vis, ok := p.Post(t2, 64, WriteNote{})
		assert.True(t, ok)
		assert.Equal(t, 48056+wlat, vis)
	})

	t.Run("a read waits only for the writes issued before it", func(t *testing.T) {
		p, clk, got := link()
		post(p, t2, 64)
		post(p, t1, 344)
		// A 64-byte read issued at 25 ns, decided on now: it may not pass
		// W1, which is booked first ([12000, 36884]); W2, issued after
		// it, is not. Its request [36884, 38408], its completion [538408,
		// 543741].
		assert.Equal(t, ib.PS(543741), p.Read(25000, 0, 64))
		assert.Equal(t, []booked{{t1, 36884 + wlat}}, *got)
		// W2, booked at t2 − H, goes after the read's request, issued
		// before it: [38408, 43994].
		clk.now = t2 - H
		p.Flush()
		assert.Equal(t, []booked{{t1, 36884 + wlat}, {t2, 43994 + wlat}}, *got)
		assert.Zero(t, p.WritesBookedLate)
	})

	t.Run("a read issued after a kept write books it early", func(t *testing.T) {
		p, clk, got := link()
		post(p, t2, 64)
		// A read issued at 35 ns may not pass W2: W2 is booked now,
		// [30000, 35586], before its time, and the request follows it,
		// [35586, 37110], completion [537110, 542443].
		assert.Equal(t, ib.PS(542443), p.Read(35000, 0, 64))
		assert.Equal(t, []booked{{t2, 35586 + wlat}}, *got)
		// W1, posted after that, is booked late: its first TLP takes the
		// gap before W2, [12000, 29774], its second goes after the
		// request, [37110, 44220]. The case the link counts.
		post(p, t1, 344)
		clk.now = t1 - H
		p.Flush()
		assert.Equal(t, []booked{{t2, 35586 + wlat}, {t1, 44220 + wlat}}, *got)
		assert.Equal(t, int64(1), p.WritesBookedLate)
	})
}

// TestPostedWritesOfTwoQPsInIssueOrder: the device side of
// TestPCIePostedWritesInIssueOrder (defaults: cx5 at 1 GHz, Gen3 x16,
// EDR). Host A has two QPs to B. QP 1 WRITEs 64 bytes into a region of
// B's never checked: B's R_Key lookup misses, and the payload write
// issues when the MKey context is in, 549.857 ns after QP 1's packet is
// delivered (lookup 10 + request 1.524 + 533 + completion 5.333,
// TestColdKeyMissIsAContextRead), plus the dma stage's 10 ns: B decides
// on it at that delivery. QP 2, posted 1 ns after QP 1, WRITEs 2560 bytes
// (one packet) into a warm region; B delivers it later and decides on its
// write then, but issues it sooner: 10 ns (lookup, hit) + 10 ns (dma
// stage) after that delivery. Its 10 TLPs of 256 + 24 B take 17.774 ns
// each, 177.740 ns. QP 1's write, issued later, must not pass it: its one
// TLP (64 + 24 B, 5.586 ns) goes after QP 2's last, each payload visible
// 200 ns after its last TLP. Booked in call order, QP 1's TLP went at its
// issue, 72.190 ns after QP 2's, which took the link before it with four
// TLPs and after it with six: QP 1's payload was visible 105.550 ns
// sooner and QP 2's 6.680 ns later (the test failed so).
func TestPostedWritesOfTwoQPsInIssueOrder(t *testing.T) {
	cfg := Defaults()
	c := newColdWarm(t, cfg)
	p, s, q2, q2b, cold, warm := c.pair, c.s, c.q2, c.q2b, c.cold, c.warm
	write := func(qp *QP, mr MR, n uint32, id uint64) *poster { return c.write(t, qp, mr, n, id) }
	var coldVisible, warmVisible ib.PS
	p.b.OnMemWrite = func(addr uint64, n int, now ib.PS) {
		switch {
		case addr == cold.Addr:
			coldVisible = now
		case addr == warm.Addr && n == 2560:
			warmVisible = now
		}
	}
	// B's deliveries: each QP's packet leaving its transport-rx stage.
	var rb traceRecorder
	p.b.AcceptHook(&rb)
	s.Schedule(0, write(q2, warm, 64, 1), 0) // warms QP 2's R_Key
	at := 20 * ib.Microsecond
	s.Schedule(at, write(p.qa, cold, 64, 2), 0)
	s.Schedule(at+ib.Nanosecond, write(q2, warm, 2560, 3), 0)
	done := p.countSuccesses(t)
	s.StopAt(ib.Millisecond)
	require.NoError(t, s.Run())
	require.Equal(t, 3, *done)
	var deliver1, deliver2 ib.PS
	for _, e := range rb.events {
		if e.Kind != components.TraceDeliver || e.Time < at {
			continue
		}
		switch qpn, _ := e.Int("qpn"); uint32(qpn) {
		case p.qb.Num:
			deliver1 = e.Time
		case q2b.Num:
			deliver2 = e.Time
		}
	}
	pcie := NewPCIe(cfg.PCIe)
	require.Equal(t, ib.PS(17774), pcie.SerPS(256+24))
	require.Equal(t, ib.PS(5586), pcie.SerPS(64+24))
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	lookup, dma := ib.PS(cfg.KeyCheck.LatencyCycles)*cyc, ib.PS(cfg.DMA.LatencyCycles)*cyc
	require.Equal(t, ib.PS(549_857), lookup+pcie.SerPS(24)+ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS)+pcie.SerPS(64+20))
	issue1 := deliver1 + 549_857 + dma
	issue2 := deliver2 + lookup + dma
	const train2, tlp1, wlat = 10 * 17774, 5586, 200 * ib.Nanosecond
	// The premise: B decided on QP 1's write first, QP 2's was issued
	// first, and QP 1's issue falls within QP 2's train.
	require.Less(t, deliver1, deliver2)
	require.Less(t, issue2, issue1)
	require.Less(t, issue1, issue2+train2)
	assert.Zero(t, p.b.PCIe.WritesBookedLate)
	assert.Equal(t, issue2+train2+wlat, warmVisible, "QP 2's write, issued first, at once")
	assert.Equal(t, issue2+train2+tlp1+wlat, coldVisible, "QP 1's after it")
}

// TestPCIeReadSplitsAtAlignedAddresses: Read splits a read where
// hca.ReadRequest does, at MRRS-aligned addresses, not into n / MRRS full
// requests and the rest. gen3(): a request of 24 B takes req = 1524 ps, a
// completion of 64 + 20 B cpl = 5333 ps, the read latency is 500 ns. One
// tag, so a read's second request waits for its first to complete and the
// split shows in the time as well as in the count.
func TestPCIeReadSplitsAtAlignedAddresses(t *testing.T) {
	lat := 500 * ib.Nanosecond
	for _, tc := range []struct {
		name  string
		mrrs  int
		addr  uint64
		n     int
		split []int // the requests' bytes, in address order; by count ⌈n / MRRS⌉
	}{
		// 512 bytes at 256 (a send WQE of 8 WQEBBs at ring slot 4):
		// 512 − 256 mod 512 = 256 to the boundary at 512, then 256. By
		// count: one request of 512.
		{"512 B at 256, MRRS 512", 512, 256, 512, []int{256, 256}},
		// 4 KiB at 0x1F00, MRRS 4096: 4096 − 0xF00 = 256 bytes to the 4 KiB
		// boundary at 0x2000, then 3840. By count: one request of 4096,
		// across the boundary, which PCIe forbids.
		{"4 KiB at 0x1F00, MRRS 4096", 4096, 0x1F00, 4096, []int{256, 3840}},
		// At MRRS 512: 0x1F00 mod 512 = 256, so 256, seven of 512 (3584),
		// and the last 256 from 0x2E00: 9 requests, 8 by count.
		{"4 KiB at 0x1F00, MRRS 512", 512, 0x1F00, 4096, []int{256, 512, 512, 512, 512, 512, 512, 512, 256}},
		// Aligned: the same requests as by count.
		{"1 KiB at 0x2000, MRRS 512", 512, 0x2000, 1024, []int{512, 512}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := gen3()
			c.MRRSBytes = tc.mrrs
			c.OutstandingReads = 1
			p := NewPCIe(c)
			req, cpl := p.SerPS(24), p.SerPS(64+20)
			// Each request, in turn, when the one tag is free: its request
			// TLP, the latency, its r / 64 completions back to back.
			var want ib.PS
			sum := 0
			for _, r := range tc.split {
				require.Zero(t, r%64, "whole 64-byte completions")
				want += req + lat + ib.PS(r/64)*cpl
				sum += r
			}
			require.Equal(t, tc.n, sum)
			assert.Equal(t, want, p.Read(0, tc.addr, tc.n))
			assert.Equal(t, int64(len(tc.split)), p.ReadRequests)
			assert.Equal(t, len(tc.split), p.ReadRequestsAt(tc.addr, tc.n))
			assert.Equal(t, ib.PS(len(tc.split))*req, p.up.busy)
			// With one tag each request's completions are a train of their
			// own, a request and the latency after the previous: the trains
			// downstream are the requests' sizes, in address order.
			trains := append(p.down.spans[p.down.head:], tlpSpan{p.down.tailStart, p.down.last})
			if assert.Len(t, trains, len(tc.split)) {
				for k, r := range tc.split {
					assert.Equal(t, ib.PS(r/64)*cpl, trains[k].end-trains[k].start, "request %d", k)
				}
			}
			// No request crosses a 4 KiB boundary.
			addr := tc.addr
			for _, r := range tc.split {
				assert.Equal(t, addr/4096, (addr+uint64(r)-1)/4096, "request at %#x of %d", addr, r)
				addr += uint64(r)
			}
		})
	}
}

// TestPCIeReadRequestsAreReadRequestChunks: over addresses at and around
// MRRS and 4 KiB boundaries, odd lengths and every MRRS, Read makes
// exactly hca.ReadRequests' chunks (the rule the RTL's DMA engine is
// co-simulated against): as many requests, and with one tag each
// request's completions a train of its own (a request and the read
// latency apart), each as long as its chunk's completions back to back.
// ReadRequestsAt, which the scheduler's tag check uses, counts them.
func TestPCIeReadRequestsAreReadRequestChunks(t *testing.T) {
	var chunks []ReadChunk
	for _, mrrs := range []int{128, 256, 512, 1024, 2048, 4096} {
		for _, addr := range []uint64{0, 1, 63, 64, 255, 256, 0xF00, 0xFC0, 0xFFF, 0x1000, 0x1F00, 0x12345, ^uint64(0) - 100} {
			for _, n := range []int{1, 8, 64, 100, 511, 512, 513, 4096, 5000, 65536} {
				c := gen3()
				c.MRRSBytes = mrrs
				c.OutstandingReads = 1
				p := NewPCIe(c)
				p.Read(0, addr, n)
				chunks = ReadRequests(chunks[:0], addr, n, mrrs)
				require.Equal(t, int64(len(chunks)), p.ReadRequests, "MRRS %d, %d bytes at %#x", mrrs, n, addr)
				require.Equal(t, len(chunks), p.ReadRequestsAt(addr, n))
				trains := append(p.down.spans[p.down.head:], tlpSpan{p.down.tailStart, p.down.last})
				require.Len(t, trains, len(chunks))
				for k, ch := range chunks {
					require.Equal(t, p.trainPS(ch.N), trains[k].end-trains[k].start, "MRRS %d, %d bytes at %#x: request %d", mrrs, n, addr, k)
				}
			}
		}
	}
}
