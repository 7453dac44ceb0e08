package link

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestPortLayout: what packet, flow-control and wire-idle events touch lies
// in the port's first three cache lines and VL 0's state is the fourth (a
// Port's size class is a multiple of 64 bytes, so lines are the struct's
// own). Performance only (docs/performance-data.md measures the misses).
func TestPortLayout(t *testing.T) {
	var p Port
	end := func(off, size uintptr) uintptr { return off + size }
	st := unsafe.Offsetof(p.Stats)
	for name, e := range map[string]uintptr{
		"busyUntil":       end(unsafe.Offsetof(p.busyUntil), 8),
		"Index":           end(unsafe.Offsetof(p.Index), 4),
		"lendChunk":       end(unsafe.Offsetof(p.lendChunk), 8),
		"fcMinInterval":   end(unsafe.Offsetof(p.fcMinInterval), 8),
		"Stats.RxPackets": end(st+unsafe.Offsetof(p.Stats.RxPackets), 8),
	} {
		assert.LessOrEqual(t, e, uintptr(3*64), name)
	}
	assert.Equal(t, uintptr(3*64), unsafe.Offsetof(p.vl), "vl[0] is the fourth line")
	// Owners read Index on every callback; Idle (which a callback's send
	// attempt calls) reads fcPending: keep the two on one line.
	assert.Equal(t, unsafe.Offsetof(p.fcPending)/64, unsafe.Offsetof(p.Index)/64)
	assert.LessOrEqual(t, unsafe.Sizeof(p.vl[0]), uintptr(64))
}
