package link

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/components"
)

// TestPortLayout: what packet, flow-control and wire-idle events touch,
// VL 0's state included, lies in the 128 bytes from Owner on, two cache
// lines (TestPortAlignment), and the counters' carries and the hook list,
// which an event does not read (traced), lie after them. Performance only
// (docs/performance-data.md measures the misses).
func TestPortLayout(t *testing.T) {
	var p Port
	hot := unsafe.Offsetof(p.Owner)
	end := func(off, size uintptr) uintptr { return off + size - hot }
	for name, e := range map[string]uintptr{
		"busyUntil":     end(unsafe.Offsetof(p.busyUntil), 8),
		"latency":       end(unsafe.Offsetof(p.latency), 8),
		"fcMinInterval": end(unsafe.Offsetof(p.fcMinInterval), 8),
		"Index":         end(unsafe.Offsetof(p.Index), 4),
		"count":         end(unsafe.Offsetof(p.count), unsafe.Sizeof(p.count)),
		"lendChunk":     end(unsafe.Offsetof(p.lendChunk), 2),
		"flags":         end(unsafe.Offsetof(p.flags), 1),
		"vl[0]":         end(unsafe.Offsetof(p.vl), unsafe.Sizeof(p.vl[0])),
	} {
		assert.LessOrEqual(t, e, uintptr(2*64), name)
	}
	assert.GreaterOrEqual(t, unsafe.Offsetof(p.HookableBase), hot+2*64, "the hook list is cold")
	assert.GreaterOrEqual(t, unsafe.Offsetof(p.carried), hot+2*64, "the counters' carries are cold")
	// Owners read Index on every callback and Idle (which a callback's send
	// attempt calls) reads fcPending: both are in the two lines above.
	assert.Equal(t, uintptr(32), unsafe.Sizeof(p.vl[0]))
	// Four 16-bit and two 32-bit counters.
	assert.Equal(t, uintptr(4*2+2*4), unsafe.Sizeof(p.count))
}

// TestPortAlignment: on the heap, where NewPort puts it, a Port's hot lines
// start on a line. Go allocates an object of more than 512 bytes that holds
// pointers in a slot that starts on a line (its size classes from 512 bytes
// up are multiples of 64) and puts an 8-byte header ahead of the object,
// so the object starts 8 bytes in; the 56 cold bytes ahead of Owner fill
// the rest of that line. Performance only: a runtime that drops or widens
// the header fails here and leaves the hot state straddling three lines.
func TestPortAlignment(t *testing.T) {
	s := components.NewSim()
	for i := range 16 {
		p := NewPort(s, idleOwner{}, "Test.Port[1]", i, PortConfig{VLs: 1, BufferBlocks: 64})
		assert.Zero(t, uintptr(unsafe.Pointer(&p.Owner))%64, "port %d: Owner at %#x", i, uintptr(unsafe.Pointer(&p.Owner)))
	}
	var p Port
	assert.Greater(t, unsafe.Sizeof(p), uintptr(512), "past 512 bytes, where the header starts")
	assert.Equal(t, uintptr(56), unsafe.Offsetof(p.Owner))
	// The engine prefetches an event target's two lines from there.
	assert.Equal(t, uintptr(components.TargetHotOffset), unsafe.Offsetof(p.Owner))
}
