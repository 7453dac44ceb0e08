package components

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestEventLayout: an event is one 64-byte cache line (64 is also its
// allocation size class, so pooled events are line-aligned). Performance
// only (docs/performance-data.md measures the misses).
func TestEventLayout(t *testing.T) {
	assert.Equal(t, uintptr(64), unsafe.Sizeof(Event{}))
}

// TestLaneSlotLayout: a lane holds each event by value beside its order
// key's tie-break, 8 + 64 bytes, so reading a lane in order reads 72 bytes
// an event, in sequence (the hardware prefetcher streams it), where a
// pooled event behind a pointer was a line of its own, cold by the time it
// ran. Performance only.
func TestLaneSlotLayout(t *testing.T) {
	assert.Equal(t, uintptr(72), unsafe.Sizeof(laneSlot{}))
}

// TestOccupancyLayout: a change at a low level (buckets 0 and 1) touches
// only the accumulator's first 64 bytes.
func TestOccupancyLayout(t *testing.T) {
	var o Occupancy
	assert.LessOrEqual(t, unsafe.Offsetof(o.buckets)+2*8, uintptr(64))
}

// TestIfaceWords: touchNext prefetches an event's target through the data
// word of its interface value; if Go ever laid interfaces out differently
// the prefetch would only miss its mark, but this test would say so.
func TestIfaceWords(t *testing.T) {
	target := &spreaderTarget{}
	var h EventHandler = target
	assert.Equal(t, unsafe.Pointer(target), (*ifaceWords)(unsafe.Pointer(&h)).data)
}

type spreaderTarget struct{ n int }

func (s *spreaderTarget) HandleEvent(*Event) { s.n++ }

// TestAllocatorRowsWidth: an allocator's per-port sets are as wide as the
// ports they hold need, ⌈ports/64⌉ words: iSLIP's reqBy (per output, over
// inputs) and grants (per input, over outputs), separable's bids (per
// output, over inputs). A 16 × 16 iSLIP keeps 2 × 16 words (256 bytes),
// where PortSets took 1 KiB, and its arbiters in 32 bytes, where
// RoundRobins behind pointers took 768; 16 inputs × 256 outputs keep reqBy in one
// word a row and grants in four. Performance only.
func TestAllocatorRowsWidth(t *testing.T) {
	a := NewISLIPAllocator(16, 16, 1)
	// Its 32 round-robin arbiters are their pointers, a byte each, in one
	// slice.
	assert.Len(t, a.grantPtr, 16)
	assert.Len(t, a.acceptPtr, 16)
	assert.Equal(t, uintptr(unsafe.Pointer(&a.grantPtr[15]))+1, uintptr(unsafe.Pointer(&a.acceptPtr[0])),
		"the accept pointers follow the grant pointers")
	assert.Equal(t, 1, a.reqBy.Words())
	assert.Equal(t, 1, a.grants.Words())
	assert.Len(t, a.reqBy.w, 16)
	assert.Len(t, a.grants.w, 16)
	w := NewISLIPAllocator(16, 256, 1)
	assert.Equal(t, 1, w.reqBy.Words())
	assert.Equal(t, 256, w.reqBy.Rows())
	assert.Equal(t, 4, w.grants.Words())
	s := NewSeparableAllocator(70, 16)
	assert.Equal(t, 2, s.bids.Words())
	assert.Equal(t, 16, s.bids.Rows())
}
