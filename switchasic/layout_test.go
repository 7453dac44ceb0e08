package switchasic

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestInputUnitLayout: what a round and a grant read of an input outside
// its queues (VL 0's queue pointer, the queued-VL mask and the VL round
// robin) is 16 bytes, so a radix-16 switch's units fill four cache lines;
// its crossbar times are inFreeBy's, side by side (speedup 1). At 1,024 hosts a 192-byte unit
// per input, whose first line a hop read, was a miss per hop. Performance
// only (docs/performance-data.md).
func TestInputUnitLayout(t *testing.T) {
	assert.Equal(t, uintptr(16), unsafe.Sizeof(inputUnit{}))
	n := newTestNet(t, smallConfig(16, 1), netOpts{timing: ndr(21352)})
	sw := n.sw
	for i := 0; i < 16; i++ {
		assert.Same(t, sw.inVLs[i], sw.inputVL(i, 0), "VL 0's queues of input %d", i)
		assert.Same(t, sw.inVLs[i], sw.in[i].q0)
		assert.NotNil(t, sw.inputVL(i, 0))
		assert.NotNil(t, sw.inputVL(i, 15), "VL 15 is always there")
		assert.Nil(t, sw.inputVL(i, 1), "one data VL")
	}
	assert.Nil(t, sw.xbarBusy, "speedup 1: inFreeBy is the one connection's time")
	cfg := smallConfig(16, 1)
	cfg.Speedup = 2
	assert.Len(t, newTestNet(t, cfg, netOpts{timing: ndr(21352)}).sw.xbarBusy, 2*16)
}

// TestOutputUnitLayout: what every grant and send of a single-VL fabric
// touches (the stage's ends, the wire, crossbar and data-busy times, VL 0's
// pending and queued counts) lies in the unit's first 64 bytes, and the
// unit is a whole number of lines, so every unit in the switch's slice has
// the same offset in its lines (8 bytes at radix 16, past Go's malloc
// header). The stage itself is a list through the packets' first lines
// (TestOutputStageInWireOrder).
func TestOutputUnitLayout(t *testing.T) {
	var u outputUnit
	assert.Zero(t, unsafe.Sizeof(u)%64, "size %d", unsafe.Sizeof(u))
	for name, end := range map[string]uintptr{
		"stageHead":   unsafe.Offsetof(u.stageHead) + 8,
		"stageTail":   unsafe.Offsetof(u.stageTail) + 8,
		"stalled":     unsafe.Offsetof(u.stalled) + 2,
		"wireFreeEst": unsafe.Offsetof(u.wireFreeEst) + 8,
		"xbarFree":    unsafe.Offsetof(u.xbarFree) + 8,
		"dataBusy":    unsafe.Offsetof(u.dataBusy) + 8,
		"vl[0]":       unsafe.Offsetof(u.vl) + unsafe.Sizeof(u.vl[0]),
	} {
		assert.LessOrEqual(t, end, uintptr(64), name)
	}
}

// TestInputVLLayout: a fifo VL's hop reads its first line (ends, slots,
// free, and the fifo's ends, which ends points to) and the occupancy
// accumulator, which starts the second line and whose scalars and first
// two histogram buckets fill it; a voq's ends share lines in pairs; it is
// a whole number of lines.
func TestInputVLLayout(t *testing.T) {
	var q inputVL
	for name, end := range map[string]uintptr{
		"ends":  unsafe.Offsetof(q.ends) + 24,
		"slots": unsafe.Offsetof(q.slots) + 24,
		"free":  unsafe.Offsetof(q.free) + 4,
		"fifo":  unsafe.Offsetof(q.fifo) + unsafe.Sizeof(q.fifo),
	} {
		assert.LessOrEqual(t, end, uintptr(64), name)
	}
	assert.Equal(t, uintptr(64), unsafe.Offsetof(q.occ))
	// Occupancy's scalars and buckets[0..1] are its own first line
	// (components.TestOccupancyLayout).
	assert.Equal(t, uintptr(8), unsafe.Sizeof(qEnds{}))
	assert.Zero(t, unsafe.Offsetof(q.inline)%8)
	assert.Zero(t, unsafe.Sizeof(q)%64, "size %d", unsafe.Sizeof(q))
}

// TestSwitchLayout: what a unicast hop and the allocation rounds read of
// the switch (from the hook list to the packet counters) comes first and
// fills 11 cache lines: 704 bytes of fields (req and cand are PortRows,
// a slice and a width; the inputs' queue pointers and crossbar times are
// two slices of their own; a wavefront allocator's clocked interface is
// cold, isClocked says to read it), the counters last; the
// configuration, names and the rarer features' state come after it.
func TestSwitchLayout(t *testing.T) {
	var sw Switch
	hotEnd := unsafe.Offsetof(sw.counters) + unsafe.Offsetof(sw.counters.AllocRound) + 8
	assert.LessOrEqual(t, hotEnd, uintptr(11*64))
	for name, off := range map[string]uintptr{
		"name": unsafe.Offsetof(sw.name), "cfg": unsafe.Offsetof(sw.cfg), "window": unsafe.Offsetof(sw.window),
		"mcast": unsafe.Offsetof(sw.mcast), "cc": unsafe.Offsetof(sw.cc), "fields": unsafe.Offsetof(sw.fields),
	} {
		assert.GreaterOrEqual(t, off, hotEnd, name)
	}
}

// TestRoundSetsWidth: a round's candidate and request sets take a 64-bit
// word per 64 ports, ⌈radix/64⌉ (components.PortRows): a radix-16 switch's
// req is 16 words (128 bytes, where 32-byte PortSets took 512) and its VL 0
// candidates the first 16 of cand's 16 VLs × 16 outputs; radix 65 takes two
// words a set, radix 256 four. Performance only: at 1,024 hosts the round
// state of 320 switches is part of a hot set past the last-level cache
// (docs/performance-data.md, twenty-first session).
func TestRoundSetsWidth(t *testing.T) {
	for _, tc := range []struct{ radix, words int }{{16, 1}, {64, 1}, {65, 2}, {256, 4}} {
		n := newTestNet(t, smallConfig(tc.radix, 1), netOpts{timing: ndr(21352)})
		assert.Equal(t, tc.words, n.sw.req.Words(), "radix %d", tc.radix)
		assert.Equal(t, tc.radix, n.sw.req.Rows(), "radix %d", tc.radix)
		assert.Equal(t, tc.words, n.sw.cand.Words(), "radix %d", tc.radix)
		assert.Equal(t, 16*tc.radix, n.sw.cand.Rows(), "radix %d", tc.radix)
	}
}
