package hca

import "encoding/binary"

// pageBytes is the host memory allocation unit of the sparse model.
const pageBytes = 4096

// HostMemory is a host's DRAM: sparse and byte-addressable. Pages come into
// being on first write and read as zero before; the page map is only looked
// up, never iterated, so runs are deterministic.
type HostMemory struct {
	pages map[uint64]*[pageBytes]byte
	// BytesWritten counts every byte stored, by the CPU or by DMA.
	BytesWritten int64
}

// NewHostMemory returns an empty host memory.
func NewHostMemory() *HostMemory {
	return &HostMemory{pages: make(map[uint64]*[pageBytes]byte)}
}

func (m *HostMemory) page(addr uint64, create bool) *[pageBytes]byte {
	p := m.pages[addr/pageBytes]
	if p == nil && create {
		p = new([pageBytes]byte)
		m.pages[addr/pageBytes] = p
	}
	return p
}

// Read copies len(dst) bytes from addr into dst.
func (m *HostMemory) Read(addr uint64, dst []byte) {
	for len(dst) > 0 {
		off := addr % pageBytes
		n := min(uint64(len(dst)), pageBytes-off)
		if p := m.page(addr, false); p != nil {
			copy(dst[:n], p[off:off+n])
		} else {
			clear(dst[:n])
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
		copy(m.page(addr, true)[off:off+n], src[:n])
		src = src[n:]
		addr += n
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
