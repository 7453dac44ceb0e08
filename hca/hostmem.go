package hca

import "encoding/binary"

// pageBytes is the alignment of host memory allocations (Device.Malloc).
const pageBytes = 4096

// chunkBytes is the unit of the sparse store for a page written piecemeal:
// a QP's send queue, receive queue and doorbell record each start on a page
// of their own and use a few dozen bytes of it at first, so an all-to-all,
// with two QPs per pair of ranks, kept whole pages that were almost empty
// (and took a page fault to write each one's first bytes). A page first
// written whole (a buffer's set-up, a payload of a page) is stored whole,
// so bulk transfers copy a page at a time as before.
const chunkBytes = pageBytes / chunksPerPage

const chunksPerPage = 8

// hostPage is one page of host memory: the page whole, or its chunks, each
// made on first write.
type hostPage struct {
	full   *[pageBytes]byte
	chunks [chunksPerPage]*[chunkBytes]byte
}

// regionPages is how many pages one entry of the page map covers (2 MiB):
// a DMA or a buffer's set-up walks consecutive pages, so it looks the map
// up once per region (or not at all: the last region is kept) instead of
// once per page.
const regionPages = 512

// hostRegion is regionPages consecutive pages, each made on first write.
type hostRegion [regionPages]*hostPage

// HostMemory is a host's DRAM: sparse and byte-addressable. Pages and their
// chunks come into being on first write and read as zero before; the region
// map is only looked up, never iterated, so runs are deterministic.
type HostMemory struct {
	regions map[uint64]*hostRegion // by address / (regionPages × pageBytes)
	// last and lastKey are the region looked up last (nil none).
	last    *hostRegion
	lastKey uint64
	// slab holds whole pages made ahead, taken by pages first written
	// whole: a bulk transfer into fresh memory (a collective's landing
	// area) allocates a slab per several packets, not a page per packet.
	// Slabs double from one page to slabPages, so a host that writes few
	// whole pages keeps few spare ones.
	slab     [][pageBytes]byte
	slabSize int // pages of the last slab made
	// pageSlab holds page records made ahead, doubling to pageSlabPages,
	// for the same reason.
	pageSlab     []hostPage
	pageSlabSize int
	// free holds the storage of whole pages that Discard released, taken
	// before the slab by the next pages first written whole: memory that
	// is written, read once and discarded (a collective's landing area)
	// keeps reusing a few pages instead of touching fresh ones, each a
	// page fault of the host process and a page of its resident set.
	free []*[pageBytes]byte
	// BytesWritten counts every byte stored, by the CPU or by DMA.
	BytesWritten int64
}

// slabPages caps a slab of whole pages (64 KiB); pageSlabPages one of
// page records (64 × 72 bytes).
const slabPages, pageSlabPages = 16, 64

// NewHostMemory returns an empty host memory.
func NewHostMemory() *HostMemory {
	return &HostMemory{regions: make(map[uint64]*hostRegion)}
}

func (m *HostMemory) page(addr uint64, create bool) *hostPage {
	key := addr / (regionPages * pageBytes)
	r := m.last
	if r == nil || key != m.lastKey {
		r = m.regions[key]
		if r == nil {
			if !create {
				return nil
			}
			r = new(hostRegion)
			m.regions[key] = r
		}
		m.last, m.lastKey = r, key
	}
	i := addr / pageBytes % regionPages
	p := r[i]
	if p == nil && create {
		if len(m.pageSlab) == 0 {
			m.pageSlabSize = min(max(2*m.pageSlabSize, 1), pageSlabPages)
			m.pageSlab = make([]hostPage, m.pageSlabSize)
		}
		p, m.pageSlab = &m.pageSlab[0], m.pageSlab[1:]
		r[i] = p
	}
	return p
}

// wholePage returns storage for a page about to be written whole: a page
// Discard released (its old bytes, all overwritten at once), or a fresh
// one from the slab.
func (m *HostMemory) wholePage() *[pageBytes]byte {
	if k := len(m.free); k > 0 {
		p := m.free[k-1]
		m.free = m.free[:k-1]
		return p
	}
	if len(m.slab) == 0 {
		m.slabSize = min(max(2*m.slabSize, 1), slabPages)
		m.slab = make([][pageBytes]byte, m.slabSize)
	}
	p := &m.slab[0]
	m.slab = m.slab[1:]
	return p
}

// Read copies len(dst) bytes from addr into dst.
func (m *HostMemory) Read(addr uint64, dst []byte) {
	for len(dst) > 0 {
		off := addr % pageBytes
		n := min(uint64(len(dst)), pageBytes-off)
		switch p := m.page(addr, false); {
		case p == nil:
			clear(dst[:n])
		case p.full != nil:
			copy(dst[:n], p.full[off:])
		default:
			for seg := dst[:n]; len(seg) > 0; {
				c := off / chunkBytes
				k := min(uint64(len(seg)), (c+1)*chunkBytes-off)
				if p.chunks[c] != nil {
					copy(seg[:k], p.chunks[c][off%chunkBytes:])
				} else {
					clear(seg[:k])
				}
				seg, off = seg[k:], off+k
			}
		}
		dst = dst[n:]
		addr += n
	}
}

// Write copies src into memory at addr.
func (m *HostMemory) Write(addr uint64, src []byte) {
	m.BytesWritten += int64(len(src))
	for len(src) > 0 {
		off := addr % pageBytes
		n := min(uint64(len(src)), pageBytes-off)
		p := m.page(addr, true)
		if p.full == nil && n == pageBytes && p.chunks == [chunksPerPage]*[chunkBytes]byte{} {
			p.full = m.wholePage()
		}
		if p.full != nil {
			copy(p.full[off:], src[:n])
		} else {
			for seg := src[:n]; len(seg) > 0; {
				c := off / chunkBytes
				k := min(uint64(len(seg)), (c+1)*chunkBytes-off)
				if p.chunks[c] == nil {
					p.chunks[c] = new([chunkBytes]byte)
				}
				copy(p.chunks[c][off%chunkBytes:], seg[:k])
				seg, off = seg[k:], off+k
			}
		}
		src = src[n:]
		addr += n
	}
}

// Update hands the n bytes at addr to f in place, a stored piece at a
// time in address order: f gets the piece (to read and change) and its
// offset from addr. A page or chunk never written is made first (zero),
// as Write would make it. It counts as writing the n bytes
// (BytesWritten). For a read-modify-write of a large range (a
// collective's reduction) without copying it out and back.
func (m *HostMemory) Update(addr uint64, n int, f func(b []byte, at int)) {
	m.BytesWritten += int64(n)
	for at := 0; at < n; {
		off := addr % pageBytes
		k := min(uint64(n-at), pageBytes-off)
		p := m.page(addr, true)
		if p.full == nil && k == pageBytes && p.chunks == [chunksPerPage]*[chunkBytes]byte{} {
			p.full = m.wholePage()
			clear(p.full[:]) // a reused page holds old bytes; f reads before it writes
		}
		if p.full != nil {
			f(p.full[off:off+k], at)
		} else {
			for done := uint64(0); done < k; {
				c := (off + done) / chunkBytes
				o := (off + done) % chunkBytes
				j := min(k-done, chunkBytes-o)
				if p.chunks[c] == nil {
					p.chunks[c] = new([chunkBytes]byte)
				}
				f(p.chunks[c][o:o+j], at+int(done))
				done += j
			}
		}
		at += int(k)
		addr += k
	}
}

// Discard makes the n bytes at addr read as zero again, as memory never
// written: a page the range covers whole gives its storage back for the
// next page written whole; the bytes of a page it covers in part are
// cleared. For memory whose contents no one reads again (a collective's
// landed slice once it is added in), so that later writes reuse its pages
// instead of fresh ones; what reads it next sees zeros, as before it was
// written. BytesWritten is unchanged.
func (m *HostMemory) Discard(addr uint64, n int) {
	for n > 0 {
		off := addr % pageBytes
		k := min(uint64(n), pageBytes-off)
		switch p := m.page(addr, false); {
		case p == nil:
		case p.full != nil && k == pageBytes:
			m.free = append(m.free, p.full)
			p.full = nil
		case p.full != nil:
			clear(p.full[off : off+k])
		default:
			for end := off + k; off < end; {
				c := off / chunkBytes
				j := min(end, (c+1)*chunkBytes) - off
				switch {
				case p.chunks[c] == nil:
				case j == chunkBytes:
					p.chunks[c] = nil
				default:
					clear(p.chunks[c][off%chunkBytes : off%chunkBytes+j])
				}
				off += j
			}
		}
		n -= int(k)
		addr += k
	}
}

// ReadU64 reads a little-endian 64-bit word (the host CPU's byte order, as an
// atomic operates on it).
func (m *HostMemory) ReadU64(addr uint64) uint64 {
	var b [8]byte
	m.Read(addr, b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// WriteU64 writes a little-endian 64-bit word.
func (m *HostMemory) WriteU64(addr uint64, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	m.Write(addr, b[:])
}

// ReadU32 reads a little-endian 32-bit word (a doorbell record).
func (m *HostMemory) ReadU32(addr uint64) uint32 {
	var b [4]byte
	m.Read(addr, b[:])
	return binary.LittleEndian.Uint32(b[:])
}

// WriteU32 writes a little-endian 32-bit word.
func (m *HostMemory) WriteU32(addr uint64, v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	m.Write(addr, b[:])
}

// Allocator hands out host virtual addresses, aligned, bump-pointer style.
type Allocator struct {
	next uint64
}

// NewAllocator starts allocating at base.
func NewAllocator(base uint64) *Allocator { return &Allocator{next: base} }

// Alloc returns the address of n fresh bytes aligned to align (a power of two).
func (a *Allocator) Alloc(n int, align uint64) uint64 {
	addr := (a.next + align - 1) &^ (align - 1)
	a.next = addr + uint64(n)
	return addr
}
