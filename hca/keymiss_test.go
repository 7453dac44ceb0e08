package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestColdKeyMissIsAContextRead checks one cold key-cache miss against its
// parts: the key-check stage's lookup, then a PCIe read of the key's MKey
// context (request TLP up, the host's read latency, one completion down),
// and that the read is on the link (a read request and its bytes).
func TestColdKeyMissIsAContextRead(t *testing.T) {
	cfg := Defaults()
	p := newPair(t, edrLink(), cfg, 4096)
	s := p.s
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	// Gen3 x16: 8 GT/s × 16 lanes × 128/130 = 126.03 Gb/s, one byte in
	// 8000 × 130 / (8 × 16 × 128) = 63.4765625 ps. The request is a
	// header-only TLP of tlp_overhead_bytes 24: 1523.4 → 1524 ps (the model
	// rounds each TLP up to the picosecond). The completion carries the
	// 64-byte context (mlx5_ifc_mkc_bits, 0x200 bits) with
	// completion_overhead_bytes 20: 84 B, 5332.03 → 5333 ps.
	const reqPS, cplPS ib.PS = 1524, 5333
	lookup := ib.PS(cfg.KeyCheck.LatencyCycles) * cyc // 10 cycles at 1 GHz
	readLat := ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS)
	require.Equal(t, ib.PS(533_000), readLat)
	wantMiss := lookup + reqPS + readLat + cplPS // 10 + 1.524 + 533 + 5.333 = 549.857 ns
	require.Equal(t, ib.PS(549_857), wantMiss)

	// B checks an R_Key it has never seen, at a time when its PCIe link is
	// idle: the check is done wantMiss later. A check of the same key 100
	// ns later, while the context is being read, hits the entry the miss
	// allocated and waits for that read (no second read); one after the
	// fill is a hit: the lookup alone.
	at := 10 * ib.Microsecond
	missDone, underMissDone, hitDone := missUnderMissHit(t, p, at, func() ib.PS { return p.b.keyCheck(p.qb, s.Now(), p.mrB.RKey) })
	assert.Equal(t, at+wantMiss, missDone)
	assert.Equal(t, at+wantMiss, underMissDone)
	assert.Equal(t, at+ib.Microsecond+lookup, hitDone)
	assert.Equal(t, int64(1), p.b.KeyCache().Misses)
	assert.Equal(t, int64(2), p.b.KeyCache().Hits)
	// The miss was one read request for MKeyContextBytes over B's link.
	assert.Equal(t, int64(1), p.b.PCIe.ReadRequests)
	assert.Equal(t, int64(MKeyContextBytes), p.b.PCIe.ReadBytes)
}

// missUnderMissHit runs use on B three times from at: cold (a miss), 100
// ns later while the miss's context read is out (a miss under the miss:
// it waits for that read, no second one), and 1 µs later (a hit). It
// returns the time each use's answer is ready.
func missUnderMissHit(t *testing.T, p *pair, at ib.PS, use func() ib.PS) (miss, underMiss, hit ib.PS) {
	t.Helper()
	done := []*ib.PS{&miss, &underMiss, &hit}
	for i, when := range []ib.PS{at, at + 100*ib.Nanosecond, at + ib.Microsecond} {
		d := done[i]
		p.s.Schedule(when, &poster{fn: func() { *d = use() }}, 0)
	}
	p.s.StopAt(20 * ib.Microsecond)
	require.NoError(t, p.s.Run())
	return miss, underMiss, hit
}

// TestKeyMissesTakePCIeBandwidth runs 1 KiB RDMA WRITEs whose gather
// elements cycle through registered regions, on a host whose PCIe link is
// the bottleneck, once through as many regions as the key cache holds
// (every L_Key check hits once warm) and once through one more (LRU then
// misses on every check), and compares the rate at which messages complete.
//
// Derivation. PCIe Gen3 x8 moves a byte in 8000 × 130 / (8 × 8 × 128) =
// 126.953125 ps: its downstream direction carries 63.0 Gb/s of TLPs, and
// 64-byte read completions (84 B on the link) carry payload at 63.0 × 64 /
// 84 = 48.0 Gb/s, under EDR's 100 Gb/s, so A's downstream is the
// bottleneck. Each completion takes 84 × 126.953125 = 10664.06 → 10665 ps.
// A 1 KiB message's payload comes in 1024 / 64 = 16 completions: 170.640
// ns per message. A miss adds the MKey context's completion, one more of
// 64 B: 17 × 10665 = 181.305 ns per message. The other per-message costs
// are smaller (the post 60 ns, the wire 1066 B × 80 ps = 85.3 ns, the
// upstream read requests and CQE write under 30 ns), so the rate of
// completions falls by 16/17: 5.9 % less payload throughput.
func TestKeyMissesTakePCIeBandwidth(t *testing.T) {
	const (
		entries  = 4    // hca.key_cache_entries
		msgBytes = 1024 // per RDMA WRITE
		msgs     = 1200
		depth    = 64 // WRs outstanding, as perftest's tx depth
		// The rate is taken between the first and last of these
		// completions: past the start-up, and while depth WRs are still
		// outstanding (the last depth have no successors), so the two ends
		// see the same pipeline and its contents cancel out.
		first, last = 200, msgs - depth - 100
	)
	const cplPS ib.PS = 10665 // one 64-byte completion at Gen3 x8, above
	run := func(t *testing.T, regions int) (period float64, misses int64, downBusy float64) {
		cfg := Defaults()
		cfg.PCIe.Lanes = 8
		cfg.KeyCacheEntries = entries
		p := newPair(t, edrLink(), cfg, 1<<16)
		mrs := make([]MR, regions)
		for i := range mrs {
			mrs[i] = p.a.RegMR(p.qa.PD, p.bufA+uint64(i*msgBytes), msgBytes, AccessLocalWrite)
		}
		posted, done := 0, 0
		doneAt := make([]ib.PS, 0, msgs)
		post := func() {
			mr := mrs[posted%regions]
			require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: uint64(posted), Opcode: WRRDMAWrite, Signaled: true,
				LocalAddr: mr.Addr, Length: msgBytes, LKey: mr.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
			posted++
		}
		poster := &poster{fn: post}
		var wcs [16]WC
		p.a.OnCQE = func(cq *CQ, now ib.PS) {
			n := p.a.PollCQ(cq, wcs[:])
			for i := 0; i < n; i++ {
				require.Equal(t, WCSuccess, wcs[i].Status)
				doneAt = append(doneAt, now)
				done++
				switch done {
				case first:
					p.a.ResetStats()
				case last:
					_, downBusy = p.a.PCIeUtilization()
				}
				if posted < msgs {
					p.s.Schedule(now, poster, 0)
				}
			}
			if done == msgs {
				p.s.Stop()
			}
		}
		for i := 0; i < depth; i++ {
			p.s.Schedule(0, poster, 0)
		}
		p.s.StopAt(10 * ib.Millisecond)
		require.NoError(t, p.s.Run())
		require.Equal(t, msgs, done)
		period = float64(doneAt[last-1]-doneAt[first-1]) / float64(last-first)
		return period, p.a.KeyCache().Misses, downBusy
	}
	hitPeriod, hitMisses, hitBusy := run(t, entries)
	missPeriod, missMisses, missBusy := run(t, entries+1)

	// The premise: one miss per region's first use when the regions fit,
	// a miss on every message when they do not; A's downstream saturated
	// after the start-up in both runs.
	assert.Equal(t, int64(entries), hitMisses)
	assert.Equal(t, int64(msgs), missMisses)
	assert.Greater(t, hitBusy, 0.999)
	assert.Greater(t, missBusy, 0.999)
	// Per message, 16 completions of a hit, 17 with a miss: the mean
	// period over the window, to within the one-completion jitter of
	// where its two ends fall (10665 ps over 900 messages, 7e-5).
	assert.InEpsilon(t, float64(16*cplPS), hitPeriod, 1e-4)
	assert.InEpsilon(t, float64(17*cplPS), missPeriod, 1e-4)
	assert.InEpsilon(t, 16.0/17.0, hitPeriod/missPeriod, 2e-4, "throughput with misses / without")
}
