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
