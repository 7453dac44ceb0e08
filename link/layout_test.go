package link

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestPortLayout: what packet, flow-control and wire-idle events touch lies
// in the port's first three cache lines, ahead of the per-VL state.
// Performance only (docs/performance-data.md measures the misses).
func TestPortLayout(t *testing.T) {
	var p Port
	for name, off := range map[string]uintptr{
		"busyUntil":             unsafe.Offsetof(p.busyUntil) + 8,
		"lendChunk":             unsafe.Offsetof(p.lendChunk) + 8,
		"Stats.RxPackets":       unsafe.Offsetof(p.Stats) + unsafe.Offsetof(p.Stats.RxPackets) + 8,
		"Stats.RxPeakBlocks[0]": unsafe.Offsetof(p.Stats) + unsafe.Offsetof(p.Stats.RxPeakBlocks) + 8,
	} {
		assert.LessOrEqual(t, off, uintptr(3*64), name)
	}
	assert.Less(t, unsafe.Offsetof(p.busyUntil), uintptr(64), "busyUntil")
}
