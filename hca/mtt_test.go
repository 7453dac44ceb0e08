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
		s.Schedule(pr.at, &poster{fn: func() { pr.done = p.b.translate(s.Now(), pr.addr, pr.n) }}, 0)
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
	// Off (the default), a translation is on chip at once.
	off := newPair(t, edrLink(), Defaults(), 4096)
	assert.Nil(t, off.a.MTTCache())
	assert.Equal(t, at, off.a.translate(at, off.bufA, 4096))
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
		s.Schedule(at+ib.PS(k)*5*ib.Microsecond, &poster{fn: func() { p.b.translate(s.Now(), base, 16*page) }}, 0)
	}
	s.StopAt(20 * ib.Microsecond)
	require.NoError(t, s.Run())
	c := p.b.MTTCache()
	assert.Equal(t, int64(32), c.Misses)
	assert.Equal(t, int64(0), c.Hits)
	assert.Equal(t, int64(2*16*MTTEntryBytes), p.b.PCIe.ReadBytes)
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
