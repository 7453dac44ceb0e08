package workload

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/components"
)

// TestEndpointLayout: what a packet's creation, send and delivery touch of
// an endpoint (its first line; the source queue's ends and the next
// packet; the PSN table, window and counters; the stall timer) fills its
// first four cache lines, the name and the tracer come after, and the
// struct is 448 bytes, seven lines and a Go size class, so the allocator
// starts every endpoint on a line (checked on endpoints as NewEndpoint
// makes them). Performance only: at 1,024 hosts each line a host touches
// is a cache miss (docs/performance-data.md, twenty-second session).
func TestEndpointLayout(t *testing.T) {
	var e Endpoint
	assert.Equal(t, uintptr(448), unsafe.Sizeof(e))
	for name, r := range map[string][2]uintptr{
		"s":         {unsafe.Offsetof(e.s), 8},
		"OnInject":  {unsafe.Offsetof(e.OnInject), 8},
		"queue":     {unsafe.Offsetof(e.queue), unsafe.Sizeof(e.queue)},
		"pending":   {unsafe.Offsetof(e.pending), unsafe.Sizeof(e.pending)},
		"psnTo":     {unsafe.Offsetof(e.psnTo), 24},
		"Received":  {unsafe.Offsetof(e.Received), 8},
		"stall":     {unsafe.Offsetof(e.stall), unsafe.Sizeof(e.stall)},
		"WrongDest": {unsafe.Offsetof(e.WrongDest), 8},
	} {
		off, size := r[0], r[1]
		assert.LessOrEqual(t, off+size, uintptr(4*64), name)
		assert.Equal(t, off/64, (off+size-1)/64, "%s straddles a line", name)
	}
	assert.GreaterOrEqual(t, unsafe.Offsetof(e.tracer), uintptr(4*64))
	s := components.NewSim()
	for i := 0; i < 8; i++ {
		ep := NewEndpoint(s, "H", i, uint16(i+1), nil)
		assert.Zero(t, uintptr(unsafe.Pointer(ep))%64, "endpoint %d at %p", i, ep)
	}
}
