package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestMTTMissIsAnEntryRead checks cold translations against their parts:
// one PCIe read of the missing pages' MTT entries (a header-only request
// TLP up, the host's read latency, one completion of 8 bytes per entry
// down), a lookup under that read waiting for it, and a hit costing
// nothing.
//
// Gen3 x16 moves a byte in 8000 × 130 / (8 × 16 × 128) = 63.4765625 ps.
// Request: tlp_overhead_bytes 24 → 1523.4 → 1524 ps (each TLP rounded up
// to the picosecond). Completion of one entry: 8 + completion_overhead 20
// = 28 B → 1777.3 → 1778 ps; of two entries: 36 B → 2285.2 → 2286 ps.
func TestMTTMissIsAnEntryRead(t *testing.T) {
	cfg := Defaults()
	cfg.MTTCacheEntries = 64
	p := newPair(t, edrLink(), cfg, 4*4096)
	s := p.s
	readLat := ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS) // 533 ns
	one := 1524 + readLat + 1778
	two := 1524 + readLat + 2286
	page := uint64(cfg.MTTPageBytes)
	base := (p.bufB + page - 1) &^ (page - 1) // a page boundary inside B's buffer

	type probe struct {
		at   ib.PS
		addr uint64
		n    uint64
		done ib.PS
	}
	at := 10 * ib.Microsecond
	probes := []*probe{
		// 1 KiB inside one cold page: one entry read.
		{at: at, addr: base, n: 1024},
		// The same page 100 ns later, while its entry is being read: it
		// waits for that read, no second one.
		{at: at + 100*ib.Nanosecond, addr: base + 2048, n: 64},
		// 1 µs later it is on chip: no wait.
		{at: at + ib.Microsecond, addr: base + 1024, n: 1024},
		// A packet across the boundary of pages 1 and 2, both cold: one
		// read of two entries.
		{at: at + 2*ib.Microsecond, addr: base + 2*page - 512, n: 1024},
		// Pages 2 (cached) and 3 (cold): a read of page 3's entry alone.
		{at: at + 3*ib.Microsecond, addr: base + 3*page - 512, n: 1024},
	}
	for _, pr := range probes {
		s.Schedule(pr.at, &poster{fn: func() { pr.done = p.b.translate(s.Now(), p.mrB.LKey, pr.addr, pr.n) }}, 0)
	}
	s.StopAt(20 * ib.Microsecond)
	require.NoError(t, s.Run())
	assert.Equal(t, at+one, probes[0].done)
	assert.Equal(t, at+one, probes[1].done)
	assert.Equal(t, at+ib.Microsecond, probes[2].done)
	assert.Equal(t, at+2*ib.Microsecond+two, probes[3].done)
	assert.Equal(t, at+3*ib.Microsecond+one, probes[4].done)
	c := p.b.MTTCache()
	// Pages touched: 0, 0, 0, 1 and 2, 2 and 3: misses 0, 1, 2, 3.
	assert.Equal(t, int64(4), c.Misses)
	assert.Equal(t, int64(3), c.Hits)
	assert.Equal(t, int64(3), p.b.PCIe.ReadRequests)
	assert.Equal(t, int64(4*MTTEntryBytes), p.b.PCIe.ReadBytes)
	assert.Equal(t, int64(4), c.EntriesRead)
	// Off (the default), a translation is on chip at once.
	off := newPair(t, edrLink(), Defaults(), 4096)
	assert.Nil(t, off.a.MTTCache())
	assert.Equal(t, at, off.a.translate(at, off.mrA.LKey, off.bufA, 4096))
}

// TestMTTRangeLargerThanCacheReadsEveryMissingEntry: a message whose pages
// outnumber the cache's entries misses on every page each time it is sent
// again (LRU under a cyclic sweep: translating pages 0 … 15 into 8 entries
// leaves 8 … 15, and the next pass's misses on 0 … 7 evict them before
// they are reached). Each pass must then read all 16 entries, 16 × 8 = 128
// bytes, in one read of the span from the first missing page to the last:
// 2 × 128 = 256 bytes over both passes, 32 misses, no hits. A lookup that
// decided which pages miss before the pass's own misses evicted the rest
// read only pages 0 … 7 (64 bytes) the second time, and pages 8 … 15
// waited for a read that never fetched them.
func TestMTTRangeLargerThanCacheReadsEveryMissingEntry(t *testing.T) {
	cfg := Defaults()
	cfg.MTTCacheEntries = 8
	p := newPair(t, edrLink(), cfg, 17*4096)
	s := p.s
	page := uint64(cfg.MTTPageBytes)
	base := (p.bufB + page - 1) &^ (page - 1)
	at := 10 * ib.Microsecond
	for k := range 2 {
		s.Schedule(at+ib.PS(k)*5*ib.Microsecond, &poster{fn: func() { p.b.translate(s.Now(), p.mrB.LKey, base, 16*page) }}, 0)
	}
	s.StopAt(20 * ib.Microsecond)
	require.NoError(t, s.Run())
	c := p.b.MTTCache()
	assert.Equal(t, int64(32), c.Misses)
	assert.Equal(t, int64(0), c.Hits)
	assert.Equal(t, int64(2*16*MTTEntryBytes), p.b.PCIe.ReadBytes)
	assert.Equal(t, int64(32), c.EntriesRead)
}

// TestSendOnlyTranslatesWhatItWrites: a one-packet SEND of 64 bytes into a
// posted receive of 64 KiB, with translation modelled. The receiver writes
// 64 bytes into the first page of the buffer, so its translation reads one
// entry: one miss, not the 16 pages the receive WQE's range covers (the
// whole range was translated before). The sender translates its 64 gather
// bytes: one miss too.
func TestSendOnlyTranslatesWhatItWrites(t *testing.T) {
	cfg := Defaults()
	cfg.MTTCacheEntries = 64
	p := newPair(t, edrLink(), cfg, 1<<16)
	require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 1, Addr: p.bufB, Length: 1 << 16, LKey: p.mrB.LKey}))
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRSend, Signaled: true,
		LocalAddr: p.bufA, Length: 64, LKey: p.mrA.LKey}))
	_, rb := p.pollBoth(t, 1, 1)
	assert.Equal(t, WCSuccess, rb[0].Status)
	// The bytes straddle a page boundary only if they start in the last 63
	// bytes of a page; then two entries.
	pages := int64(1)
	if p.bufB%4096 > 4096-64 {
		pages = 2
	}
	assert.Equal(t, pages, p.b.MTTCache().Misses)
	assert.Equal(t, int64(1), p.a.MTTCache().Misses)
}

// TestSendLongerThanReceiveBufferFails: a SEND of five 4 KiB packets into
// a posted receive of 10,000 bytes. Packets 1 and 2 fit (8,192 bytes);
// packet 3 would end at 12,288 > 10,000: the responder completes the
// receive with LOC_LEN_ERR, answers NAK invalid request (its QP goes to
// ERR, class C) and writes none of packet 3's bytes; the requester
// completes the SEND with REM_INV_REQ_ERR (ib-facts §5). With translation
// modelled the outcome is the same: completions, memory and the bytes
// written (translation changes only when writes happen).
func TestSendLongerThanReceiveBufferFails(t *testing.T) {
	const recvLen, msgLen = 10_000, 5 * 4096
	run := func(t *testing.T, cfg Config) (sa, rb WC, mem []byte, written int64) {
		p := newPair(t, edrLink(), cfg, 8*4096)
		src := make([]byte, msgLen)
		for i := range src {
			src[i] = byte(i*7 + 3)
		}
		p.a.Mem.Write(p.bufA, src)
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 1, Addr: p.bufB, Length: recvLen, LKey: p.mrB.LKey}))
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRSend, Signaled: true,
			LocalAddr: p.bufA, Length: msgLen, LKey: p.mrA.LKey}))
		a, b := p.pollBoth(t, 1, 1)
		mem = make([]byte, msgLen)
		p.b.Mem.Read(p.bufB, mem)
		assert.Equal(t, src[:2*4096], mem[:2*4096], "the two packets that fit are placed")
		assert.Equal(t, make([]byte, msgLen-2*4096), mem[2*4096:], "nothing of packet 3 on")
		assert.Equal(t, QPErr, p.qb.State)
		return a[0], b[0], mem, p.b.Counters.PayloadRx
	}
	sa, rb, mem, written := run(t, Defaults())
	assert.Equal(t, WCRemInvReqErr, sa.Status)
	assert.Equal(t, uint64(2), sa.WRID)
	assert.Equal(t, WCLocLenErr, rb.Status)
	assert.Equal(t, uint64(1), rb.WRID)
	assert.Equal(t, int64(2*4096), written)
	cfg := Defaults()
	cfg.MTTCacheEntries = 64
	saX, rbX, memX, writtenX := run(t, cfg)
	assert.Equal(t, sa, saX)
	assert.Equal(t, rb, rbX)
	assert.Equal(t, mem, memX)
	assert.Equal(t, written, writtenX)
}

// TestMultiPacketSendTranslatesWhatEachPacketWrites: a SEND of six 4 KiB
// packets (MTU 4096) into a posted receive of 1 MiB that starts 3,072
// bytes into a page, translation on (64 entries, 4 KiB pages). Each packet
// translates the bytes it writes, when it arrives: packet k (0-based)
// writes [3072 + 4096k, 3072 + 4096(k+1)), pages k and k+1 of the buffer.
// Packet 0 misses on pages 0 and 1 (one read of two entries); packets 1 … 5
// each hit the page the packet before read and miss on the next (one read
// of one entry each). The message's bytes [3072, 3072 + 24576) span pages
// ⌊3072 / 4096⌋ = 0 to ⌊27647 / 4096⌋ = 6: 7 entries read, 7 misses,
// 5 hits. Before, the first packet translated the whole receive buffer:
// [3072, 3072 + 2^20) spans pages 0 … 256, 257 pages, more than the 64
// entries, so every page missed and all 257 entries were read (257
// misses, 0 hits, 2,056 bytes), 250 of them for pages no byte goes to.
func TestMultiPacketSendTranslatesWhatEachPacketWrites(t *testing.T) {
	const off, recvLen, pkts = 3072, 1 << 20, 6
	cfg := Defaults()
	cfg.MTTCacheEntries = 64
	p := newPair(t, edrLink(), cfg, recvLen+4096)
	require.Zero(t, p.bufB%4096, "buffers are page aligned")
	src := make([]byte, pkts*4096)
	for i := range src {
		src[i] = byte(i*11 + 5)
	}
	p.a.Mem.Write(p.bufA, src)
	require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 1, Addr: p.bufB + off, Length: recvLen, LKey: p.mrB.LKey}))
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRSend, Signaled: true,
		LocalAddr: p.bufA, Length: uint32(len(src)), LKey: p.mrA.LKey}))
	sa, rb := p.pollBoth(t, 1, 1)
	require.Equal(t, WCSuccess, sa[0].Status)
	require.Equal(t, WCSuccess, rb[0].Status)
	got := make([]byte, len(src))
	p.b.Mem.Read(p.bufB+off, got)
	require.Equal(t, src, got)
	c := p.b.MTTCache()
	assert.Equal(t, int64(7), c.EntriesRead)
	assert.Equal(t, int64(7), c.Misses)
	assert.Equal(t, int64(5), c.Hits)
}

// TestSendFirstPacketNotHeldForLaterPages: a SEND of four 4 KiB packets
// into a page-aligned posted receive of 1 MiB (256 pages), translation on,
// on an idle EDR pair with the cx5 defaults (Gen3 x16). The first packet
// writes page 0 only, so its DMA waits for one entry's read and not for
// the pages later packets (or none) write.
//
// From the first packet's transport-rx done (Timeline.RxDone):
//   - L_Key check, a cold key-cache miss: 549.857 ns
//     (TestColdKeyMissIsAContextRead: lookup 10 + request 1.524 + 533 +
//     84-byte completion 5.333);
//   - translation of page 0: one read of MTTEntryBytes 8, the request a
//     header-only TLP of tlp_overhead_bytes 24, SerPS(24) = 1,524 ps
//     (63.4765625 ps a byte, rounded up), read latency 533,000 ps, one
//     completion of 8 + 20 bytes, SerPS(28) = 1,778 ps: 536,302 ps.
//     Timeline.RespKey − RxDone = 549,857 + 536,302 = 1,086,159 ps.
//     Before, the whole buffer's 256 entries (2,048 bytes) were read: four
//     MRRS reads of 512 bytes, requests 1,524 ps apart, each answered by
//     eight 64-byte completions of SerPS(84) = 5,333 ps back to back on
//     the downstream link, the last done at 1,524 + 533,000 + 32 × 5,333
//     = 705,180 ps: RespKey − RxDone was 1,255,037 ps, 168.878 ns later;
//   - then the DMA stage (10 cycles, 10 ns), 16 posted-write TLPs of MPS
//     256 + 24 bytes, SerPS(280) = 17,774 ps each, and the posted-write
//     latency 200 ns: the first packet's 4,096 bytes are visible 494,384
//     ps after RespKey.
func TestSendFirstPacketNotHeldForLaterPages(t *testing.T) {
	const recvLen, pkts = 1 << 20, 4
	cfg := Defaults()
	cfg.MTTCacheEntries = 512
	p := newPair(t, edrLink(), cfg, recvLen)
	pc := p.b.PCIe
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	readLat := ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS)
	req := pc.SerPS(cfg.PCIe.TLPOverheadBytes)
	require.Equal(t, ib.PS(1524), req)
	entryRead := req + readLat + pc.SerPS(MTTEntryBytes+cfg.PCIe.CompletionOverheadBytes)
	require.Equal(t, ib.PS(536_302), entryRead)
	const keyMiss ib.PS = 549_857
	tlp := pc.SerPS(cfg.PCIe.MPSBytes + cfg.PCIe.TLPOverheadBytes)
	require.Equal(t, ib.PS(17_774), tlp)
	write := ib.PS(cfg.DMA.LatencyCycles)*cyc + 16*tlp + ib.FromNanoseconds(cfg.PCIe.WriteLatencyNS)
	require.Equal(t, ib.PS(494_384), write)

	var tl Timeline
	p.a.Timeline, p.b.Timeline = &tl, &tl
	var firstVisible ib.PS
	p.b.OnMemWrite = func(addr uint64, n int, now ib.PS) {
		if addr == p.bufB && firstVisible == 0 {
			firstVisible = now
		}
	}
	require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 1, Addr: p.bufB, Length: recvLen, LKey: p.mrB.LKey}))
	// Post at 10 µs, after the receive WQE's prefetch.
	p.s.Schedule(10*ib.Microsecond, &poster{fn: func() {
		tl.Trace(p.qa, p.qa.NextWQEIndex())
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRSend, Signaled: true,
			LocalAddr: p.bufA, Length: pkts * 4096, LKey: p.mrA.LKey}))
	}}, 1)
	sa, rb := p.pollBoth(t, 1, 1)
	require.Equal(t, WCSuccess, sa[0].Status)
	require.Equal(t, WCSuccess, rb[0].Status)
	require.NotZero(t, tl.RxDone)
	assert.Equal(t, keyMiss+entryRead, tl.RespKey-tl.RxDone)
	assert.Equal(t, tl.RespKey+write, firstVisible)
	assert.Equal(t, int64(pkts), p.b.MTTCache().EntriesRead, "one entry per page written")
}

// TestMTTReadSplitsAtTheRegionsMRRSBoundary: a region's MTT entries lie
// in page order from its first page at a 4 KiB-aligned address (MTTBase),
// 8 bytes each, so at MRRS 512 a request holds the entries of 64 pages
// from a multiple of 64 pages into the region. Pages 0 … 7 of the region
// are one request of 64 bytes; pages 60 … 67 are entries 480 … 543 bytes
// into its MTT, across 512: two requests (32 + 32 bytes), where the count
// split (⌈64 / 512⌉) made one.
func TestMTTReadSplitsAtTheRegionsMRRSBoundary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first uint64 // the region's page the translation starts at
		reqs  int64
	}{
		{"pages 0 … 7", 0, 1},
		{"pages 60 … 67", 60, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.MTTCacheEntries = 64
			require.Equal(t, 512, cfg.PCIe.MRRSBytes)
			page := uint64(cfg.MTTPageBytes)
			p := newPair(t, edrLink(), cfg, 128*int(page))
			require.Zero(t, p.bufB%page, "the region starts on a page")
			s := p.s
			s.Schedule(10*ib.Microsecond, &poster{fn: func() {
				p.b.translate(s.Now(), p.mrB.LKey, p.bufB+tc.first*page, 8*page)
			}}, 0)
			s.StopAt(20 * ib.Microsecond)
			require.NoError(t, s.Run())
			assert.Equal(t, int64(8), p.b.MTTCache().EntriesRead)
			assert.Equal(t, int64(8*MTTEntryBytes), p.b.PCIe.ReadBytes)
			assert.Equal(t, tc.reqs, p.b.PCIe.ReadRequests)
		})
	}
}
