package link

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestPortLayout: what packet, flow-control and wire-idle events touch,
// VL 0's state included, lies in the port's first three cache lines (a
// Port's size class is a multiple of 64 bytes, so lines are the struct's
// own), and the hook list, which an event no longer reads (traced), lies
// after them. Performance only (docs/performance-data.md measures the
// misses).
func TestPortLayout(t *testing.T) {
	var p Port
	end := func(off, size uintptr) uintptr { return off + size }
	st := unsafe.Offsetof(p.Stats)
	for name, e := range map[string]uintptr{
		"busyUntil":       end(unsafe.Offsetof(p.busyUntil), 8),
		"latency":         end(unsafe.Offsetof(p.latency), 8),
		"Index":           end(unsafe.Offsetof(p.Index), 4),
		"lendChunk":       end(unsafe.Offsetof(p.lendChunk), 4),
		"traced":          end(unsafe.Offsetof(p.traced), 1),
		"fcMinInterval":   end(unsafe.Offsetof(p.fcMinInterval), 8),
		"Stats.RxPackets": end(st+unsafe.Offsetof(p.Stats.RxPackets), 8),
		"vl[0]":           end(unsafe.Offsetof(p.vl), unsafe.Sizeof(p.vl[0])),
	} {
		assert.LessOrEqual(t, e, uintptr(3*64), name)
	}
	assert.GreaterOrEqual(t, unsafe.Offsetof(p.HookableBase), uintptr(3*64), "the hook list is cold")
	// Owners read Index on every callback and Idle (which a callback's send
	// attempt calls) reads fcPending: both are in the three lines above.
	assert.Equal(t, uintptr(32), unsafe.Sizeof(p.vl[0]))
}
