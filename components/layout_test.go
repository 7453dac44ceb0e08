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
