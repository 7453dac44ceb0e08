package link

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestPortLayout: what packet, flow-control and wire-idle events touch,
// VL 0's state included, lies in the port's first two cache lines (a
// Port's size class is a multiple of 64 bytes, so lines are the struct's
// own), and the counters' carries and the hook list, which an event does
// not read (traced), lie after them. Performance only
// (docs/performance-data.md measures the misses).
func TestPortLayout(t *testing.T) {
	var p Port
	end := func(off, size uintptr) uintptr { return off + size }
	for name, e := range map[string]uintptr{
		"busyUntil":     end(unsafe.Offsetof(p.busyUntil), 8),
		"latency":       end(unsafe.Offsetof(p.latency), 8),
		"fcMinInterval": end(unsafe.Offsetof(p.fcMinInterval), 8),
		"Index":         end(unsafe.Offsetof(p.Index), 4),
		"count":         end(unsafe.Offsetof(p.count), unsafe.Sizeof(p.count)),
		"lendChunk":     end(unsafe.Offsetof(p.lendChunk), 2),
		"traced":        end(unsafe.Offsetof(p.traced), 1),
		"vl[0]":         end(unsafe.Offsetof(p.vl), unsafe.Sizeof(p.vl[0])),
	} {
		assert.LessOrEqual(t, e, uintptr(2*64), name)
	}
	assert.GreaterOrEqual(t, unsafe.Offsetof(p.HookableBase), uintptr(2*64), "the hook list is cold")
	assert.GreaterOrEqual(t, unsafe.Offsetof(p.carried), uintptr(2*64), "the counters' carries are cold")
	// Owners read Index on every callback and Idle (which a callback's send
	// attempt calls) reads fcPending: both are in the two lines above.
	assert.Equal(t, uintptr(32), unsafe.Sizeof(p.vl[0]))
	// Four 16-bit and two 32-bit counters.
	assert.Equal(t, uintptr(4*2+2*4), unsafe.Sizeof(p.count))
	// Go's size classes from 512 bytes up are multiples of 64, so a Port
	// starts on a line.
	assert.GreaterOrEqual(t, unsafe.Sizeof(p), uintptr(512))
}
