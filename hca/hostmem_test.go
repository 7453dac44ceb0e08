package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
