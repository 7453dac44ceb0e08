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
