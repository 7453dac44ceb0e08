package switchasic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestSL2VLInDevice: the output VL comes from the (input, output) pair's
// SL-to-VL table, not from the VL the packet arrived on; VL 15 in the table
// drops the packet (and frees its buffer, so the sender's credits come back);
// a VL15 management packet stays on VL15 and needs no credits.
func TestSL2VLInDevice(t *testing.T) {
	cfg := smallConfig(4, 2)
	cfg.VLArbHigh = nil
	cfg.VLArbLow = []VLArbConfig{{VL: 0, Weight: 4}, {VL: 1, Weight: 4}}
	n := newTestNet(t, cfg, netOpts{timing: ndr(13000)})
	// Default table: SL s → VL s mod 2. From port 0 to port 2: SL0 → VL1,
	// SL1 → drop.
	def := cfg.SL2VLTable()
	pair := def
	pair[0], pair[1] = 1, 15
	n.sw.sl2vl.SetPair(0, 2, pair)

	n.eps[0].send(n.packet(0, 1, 0, 100)) // default pair: SL0 → VL0
	n.eps[0].send(n.packet(0, 2, 0, 100)) // remapped: SL0 → VL1
	drop := n.packet(0, 2, 1, 100)        // SL1 on VL1 → dropped
	n.eps[0].send(drop)
	smp := n.packet(0, 3, ib.ManagementVL, 100)
	smp.SL = 0
	n.eps[0].send(smp)
	n.s.StopAt(2 * ib.Microsecond)
	require.NoError(t, n.s.Run())

	require.Len(t, n.eps[1].got, 1)
	assert.Equal(t, uint8(0), n.eps[1].got[0].vl)
	require.Len(t, n.eps[2].got, 1)
	assert.Equal(t, uint8(1), n.eps[2].got[0].vl)
	require.Len(t, n.eps[3].got, 1)
	assert.Equal(t, uint8(ib.ManagementVL), n.eps[3].got[0].vl)
	c := n.sw.Counters()
	assert.Equal(t, uint64(1), c.DropSL2VL)
	assert.Equal(t, uint64(3), c.Forwarded)
	// Every buffer block at the switch input came free again.
	assert.Zero(t, n.sw.Port(0).BufferUsed(0))
	assert.Zero(t, n.sw.Port(0).BufferUsed(1))
}

// TestAllocatorsInDevice: every allocator, with voq, under saturated
// uniform traffic on 8 ports delivers well above the fifo's HOL limit and
// never grants an output twice (the link port would panic on a busy wire).
func TestAllocatorsInDevice(t *testing.T) {
	for _, name := range []string{"separable", "islip", "wavefront"} {
		cfg := smallConfig(8, 1)
		cfg.Queueing = QueueVOQ
		cfg.Allocator = name
		cfg.VLBufferBytes = 64 * 1024
		acc := saturate(t, cfg, 2048, 10*ib.Microsecond, 50*ib.Microsecond)
		t.Logf("%s: %.3f", name, acc)
		assert.Greater(t, acc, 0.8, name)
	}
}

// TestSpeedup: with fifo queueing, speedup 2 lets an input start its next
// packet to another output while the first is still crossing, which
// relieves head-of-line blocking: saturation throughput rises.
func TestSpeedup(t *testing.T) {
	cfg := smallConfig(8, 1)
	cfg.Queueing = QueueFIFO
	cfg.VLBufferBytes = 64 * 1024
	s1 := saturate(t, cfg, 2048, 10*ib.Microsecond, 50*ib.Microsecond)
	cfg.Speedup = 2
	s2 := saturate(t, cfg, 2048, 10*ib.Microsecond, 50*ib.Microsecond)
	t.Logf("fifo speedup 1: %.3f, speedup 2: %.3f", s1, s2)
	assert.Greater(t, s2, s1+0.05)
}
