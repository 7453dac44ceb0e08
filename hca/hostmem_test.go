package hca

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostMemorySparseAcrossPages(t *testing.T) {
	m := NewHostMemory()
	buf := make([]byte, 10)
	m.Read(1<<40, buf)
	assert.Equal(t, make([]byte, 10), buf, "unwritten memory reads as zero")
	src := make([]byte, 3*pageBytes+17)
	for i := range src {
		src[i] = byte(i * 7)
	}
	addr := uint64(5*pageBytes - 5) // straddles four pages
	m.Write(addr, src)
	got := make([]byte, len(src))
	m.Read(addr, got)
	assert.Equal(t, src, got)
	assert.Equal(t, int64(len(src)), m.BytesWritten)
	m.WriteU64(8, 0x0102030405060708)
	assert.Equal(t, uint64(0x0102030405060708), m.ReadU64(8))
	m.WriteU32(100, 0xdeadbeef)
	assert.Equal(t, uint32(0xdeadbeef), m.ReadU32(100))
}

func TestAllocatorAligns(t *testing.T) {
	a := NewAllocator(0x1001)
	assert.Equal(t, uint64(0x1040), a.Alloc(10, 64))
	assert.Equal(t, uint64(0x2000), a.Alloc(1, 4096))
	assert.Equal(t, uint64(0x2001), a.Alloc(1, 1))
}

// TestHostMemoryMatchesFlat writes and reads random ranges — within a
// chunk, across chunks and pages, whole pages, onto pages stored whole and
// pages stored in chunks — and requires the sparse store to read back what
// a flat byte array holds.
//
// The span lies across a region boundary (the page map's unit), and every
// tenth write goes to a far region first, so that the kept region changes
// between accesses.
func TestHostMemoryMatchesFlat(t *testing.T) {
	const span = 6 * pageBytes
	base := uint64(3*regionPages*pageBytes - 3*pageBytes - 100) // the boundary at 3 pages and 100 bytes in
	rng := rand.New(rand.NewPCG(1, 2))
	m := NewHostMemory()
	flat := make([]byte, span)
	far := make([]byte, 10)
	for i := 0; i < 2000; i++ {
		if i%10 == 0 {
			m.Write(1<<40+uint64(i), far)
			m.Read(1<<41, far) // an unwritten region
		}
		addr := rng.Uint64N(span)
		n := rng.Uint64N(min(span-addr, 3*chunkBytes)) + 1
		switch rng.IntN(4) {
		case 0: // a whole page
			addr, n = rng.Uint64N(span/pageBytes)*pageBytes, pageBytes
		case 1: // a few bytes
			n = min(n, 8)
		}
		src := make([]byte, n)
		for k := range src {
			src[k] = byte(rng.Uint32())
		}
		m.Write(base+addr, src)
		copy(flat[addr:], src)
		lo := rng.Uint64N(span)
		got := make([]byte, rng.Uint64N(span-lo)+1)
		m.Read(base+lo, got)
		require.Equal(t, flat[lo:lo+uint64(len(got))], got, "read %d bytes at %d after write %d", len(got), lo, i)
	}
	got := make([]byte, span)
	m.Read(base, got)
	require.Equal(t, flat, got)
}

// BenchmarkHostMemoryDMA: a 64 KiB DMA write and read of host memory in
// 4 KiB packets, over a 1 MiB buffer already written (the steady state of
// a perftest or a collective's later steps).
func BenchmarkHostMemoryDMA(b *testing.B) {
	m := NewHostMemory()
	const buf = 1 << 20
	m.Write(0x10000, make([]byte, buf))
	pkt := make([]byte, 4096)
	b.SetBytes(2 * 64 << 10)
	off := uint64(0)
	for b.Loop() {
		for k := uint64(0); k < 16; k++ {
			m.Write(0x10000+off+k*4096, pkt)
			m.Read(0x10000+off+k*4096, pkt)
		}
		off = (off + 64<<10) % buf
	}
}

// BenchmarkHostMemoryFreshWrite: 64 KiB written in 4 KiB packets into
// memory never written before (a collective's landing area on its first
// use): the allocations per packet are the figure to watch.
func BenchmarkHostMemoryFreshWrite(b *testing.B) {
	m := NewHostMemory()
	pkt := make([]byte, 4096)
	b.SetBytes(64 << 10)
	addr := uint64(0x10000)
	for b.Loop() {
		for k := 0; k < 16; k++ {
			m.Write(addr, pkt)
			addr += 4096
		}
		if addr > 1<<30 {
			b.StopTimer()
			m, addr = NewHostMemory(), 0x10000
			b.StartTimer()
		}
	}
}

// TestHostMemoryDiscardMatchesFlat mixes Discard into random writes
// (whole pages, parts of pages and of chunks, ranges across pages and
// across the region boundary): what Discard covered must read as zero,
// as a flat array cleared there does, and everything else as written.
func TestHostMemoryDiscardMatchesFlat(t *testing.T) {
	const span = 6 * pageBytes
	base := uint64(3*regionPages*pageBytes - 3*pageBytes - 100)
	rng := rand.New(rand.NewPCG(3, 4))
	m := NewHostMemory()
	flat := make([]byte, span)
	discarded := 0
	for i := 0; i < 3000; i++ {
		addr := rng.Uint64N(span)
		n := rng.Uint64N(min(span-addr, 3*chunkBytes)) + 1
		switch rng.IntN(4) {
		case 0, 1: // whole pages, where Discard gives storage back
			addr = rng.Uint64N(span/pageBytes) * pageBytes
			n = min(span-addr, (rng.Uint64N(3)+1)*pageBytes)
		case 2:
			n = min(n, 8)
		}
		if rng.IntN(3) == 0 {
			m.Discard(base+addr, int(n))
			clear(flat[addr : addr+n])
			discarded++
		} else {
			src := make([]byte, n)
			for k := range src {
				src[k] = byte(rng.Uint32()) | 1 // never zero: a discard shows
			}
			m.Write(base+addr, src)
			copy(flat[addr:], src)
		}
		lo := rng.Uint64N(span)
		got := make([]byte, rng.Uint64N(span-lo)+1)
		m.Read(base+lo, got)
		require.Equal(t, flat[lo:lo+uint64(len(got))], got, "read %d bytes at %d after operation %d", len(got), lo, i)
	}
	require.Greater(t, discarded, 500)
	got := make([]byte, span)
	m.Read(base, got)
	require.Equal(t, flat, got)
}

// TestHostMemoryDiscardReusesPages: 16 pages written whole, discarded,
// then 16 pages elsewhere written whole: the second 16 take the first
// ones' storage (the same arrays), not fresh memory, and read back what
// was written last.
func TestHostMemoryDiscardReusesPages(t *testing.T) {
	m := NewHostMemory()
	page := make([]byte, pageBytes)
	for i := range page {
		page[i] = byte(i%251) + 1
	}
	first := map[*[pageBytes]byte]bool{}
	for k := uint64(0); k < 16; k++ {
		m.Write(0x100000+k*pageBytes, page)
		first[m.page(0x100000+k*pageBytes, false).full] = true
	}
	require.Len(t, first, 16)
	m.Discard(0x100000, 16*pageBytes)
	require.Len(t, m.free, 16)
	got := make([]byte, pageBytes)
	m.Read(0x100000+5*pageBytes, got)
	assert.Equal(t, make([]byte, pageBytes), got, "a discarded page reads as zero")
	page[0] = 0xee
	for k := uint64(0); k < 16; k++ {
		a := 0x40000000 + k*pageBytes // another region
		m.Write(a, page)
		assert.True(t, first[m.page(a, false).full], "page %d: fresh storage, not a discarded page's", k)
	}
	assert.Empty(t, m.free)
	m.Read(0x40000000+7*pageBytes, got)
	assert.Equal(t, page, got)
}

// TestHostMemoryUpdateMatchesFlat: Update adding a byte to every byte of
// random ranges (whole pages, parts of chunks, pages never written,
// pages stored in chunks, discarded pages reused), mixed with writes and
// discards, must leave what a flat array changed alike holds, hand f
// every byte of the range once, in order, and count the range as
// written.
func TestHostMemoryUpdateMatchesFlat(t *testing.T) {
	const span = 6 * pageBytes
	base := uint64(3*regionPages*pageBytes - 3*pageBytes - 100)
	rng := rand.New(rand.NewPCG(5, 6))
	m := NewHostMemory()
	flat := make([]byte, span)
	for i := 0; i < 3000; i++ {
		addr := rng.Uint64N(span)
		n := rng.Uint64N(min(span-addr, 3*chunkBytes)) + 1
		if rng.IntN(3) == 0 {
			addr = rng.Uint64N(span/pageBytes) * pageBytes
			n = min(span-addr, (rng.Uint64N(3)+1)*pageBytes)
		}
		switch op := rng.IntN(4); op {
		case 0:
			m.Discard(base+addr, int(n))
			clear(flat[addr : addr+n])
		case 1:
			src := make([]byte, n)
			for k := range src {
				src[k] = byte(rng.Uint32())
			}
			m.Write(base+addr, src)
			copy(flat[addr:], src)
		default:
			d := byte(rng.Uint32())
			written := m.BytesWritten
			next := 0
			m.Update(base+addr, int(n), func(b []byte, at int) {
				require.Equal(t, next, at, "pieces in order, each once")
				for k := range b {
					b[k] += d
				}
				next += len(b)
			})
			require.Equal(t, int(n), next)
			require.Equal(t, written+int64(n), m.BytesWritten)
			for k := addr; k < addr+n; k++ {
				flat[k] += d
			}
		}
		lo := rng.Uint64N(span)
		got := make([]byte, rng.Uint64N(span-lo)+1)
		m.Read(base+lo, got)
		require.Equal(t, flat[lo:lo+uint64(len(got))], got, "read %d bytes at %d after operation %d", len(got), lo, i)
	}
	got := make([]byte, span)
	m.Read(base, got)
	require.Equal(t, flat, got)
}
