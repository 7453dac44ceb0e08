package components

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runVLArb sends packets of the given size (blocks, per VL) for n picks with
// the ready mask fixed, and counts packets per VL.
func runVLArb(a *VLArbiter, ready uint16, blocks func(vl int) int, n int) (pkts [16]int, order []int) {
	for i := 0; i < n; i++ {
		vl := a.Pick(ready)
		if vl < 0 {
			break
		}
		order = append(order, vl)
		pkts[vl]++
		a.Commit(vl, blocks(vl))
	}
	return pkts, order
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func TestVLArbiterWeightedShares(t *testing.T) {
	tests := []struct {
		name    string
		low     []VLArbEntry
		blocks  [15]int // packet size per VL, blocks
		rounds  int     // full table rotations to run
		readyVL []int
	}{
		{"1-block packets, weights 4:8", []VLArbEntry{{0, 4}, {1, 8}}, [15]int{1, 1}, 5, []int{0, 1}},
		{"3-block packets, weights 4:8", []VLArbEntry{{0, 4}, {1, 8}}, [15]int{3, 3}, 5, []int{0, 1}},
		{"mixed sizes, weight 0 skipped", []VLArbEntry{{0, 10}, {2, 0}, {1, 10}}, [15]int{4, 5, 1}, 7, []int{0, 1, 2}},
		{"repeated VL", []VLArbEntry{{0, 2}, {1, 2}, {0, 2}}, [15]int{1, 1}, 4, []int{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ready uint16
			for _, v := range tc.readyVL {
				ready |= 1 << v
			}
			// Each entry with weight w > 0 and packet size b sends ceil(w/b)
			// packets per turn (the packet that uses up the weight completes).
			var want [16]int
			perRound := 0
			for _, e := range tc.low {
				if e.Weight > 0 && ready&(1<<e.VL) != 0 {
					k := ceilDiv(int(e.Weight), tc.blocks[e.VL])
					want[e.VL] += k * tc.rounds
					perRound += k
				}
			}
			a := NewVLArbiter(nil, tc.low, 0)
			got, _ := runVLArb(a, ready, func(vl int) int { return tc.blocks[vl] }, perRound*tc.rounds)
			assert.Equal(t, want, got)
		})
	}
}

func TestVLArbiterHighLimit(t *testing.T) {
	high := []VLArbEntry{{0, 255}}
	low := []VLArbEntry{{1, 255}}
	const pkt = 16 // blocks per packet (1 KiB)
	tests := []struct {
		name  string
		limit uint8
		// highRun is how many high packets go before each low one:
		// a high packet may start while the count < limit*64 blocks, so
		// ceil(limit*64/pkt) packets, and at least one (limit 0).
		highRun int
	}{
		{"limit 0: one high packet", 0, 1},
		{"limit 1: 4 KiB", 1, ceilDiv(1*HighLimitBlocks, pkt)},
		{"limit 3: 12 KiB", 3, ceilDiv(3*HighLimitBlocks, pkt)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewVLArbiter(high, low, tc.limit)
			_, order := runVLArb(a, 0b11, func(int) int { return pkt }, 3*(tc.highRun+1))
			var want []int
			for r := 0; r < 3; r++ {
				for i := 0; i < tc.highRun; i++ {
					want = append(want, 0)
				}
				want = append(want, 1)
			}
			assert.Equal(t, want, order)
		})
	}
	t.Run("limit 255 starves low", func(t *testing.T) {
		a := NewVLArbiter(high, low, HighLimitUnbounded)
		pkts, _ := runVLArb(a, 0b11, func(int) int { return pkt }, 100)
		assert.Equal(t, 100, pkts[0])
		assert.Zero(t, pkts[1])
	})
	t.Run("count only while low waits", func(t *testing.T) {
		a := NewVLArbiter(high, low, 1)
		// 10 high packets with low idle: no debt builds up.
		runVLArb(a, 0b01, func(int) int { return pkt }, 10)
		assert.Zero(t, a.HighCount())
		// Low becomes ready: high still gets its full 4 KiB (4 packets) first.
		_, order := runVLArb(a, 0b11, func(int) int { return pkt }, 5)
		assert.Equal(t, []int{0, 0, 0, 0, 1}, order)
	})
}

func TestVLArbiterPriorities(t *testing.T) {
	a := NewVLArbiter([]VLArbEntry{{2, 1}}, []VLArbEntry{{0, 1}, {1, 1}}, 255)
	assert.Equal(t, 15, a.Pick(1<<15|0b111), "VL15 first")
	assert.Equal(t, 2, a.Pick(0b111), "high before low")
	assert.Equal(t, 0, a.Pick(0b011), "low when high has nothing")
	assert.Equal(t, 1, a.Pick(0b010))
	assert.Equal(t, -1, a.Pick(1<<5), "VL not in any table is never picked")
	assert.Equal(t, -1, a.Pick(0))
	// Pick changes no arbitration state.
	assert.Equal(t, 0, a.Pick(0b011))
	a.Commit(15, 4) // management charges nothing
	assert.Equal(t, 0, a.Pick(0b011))
	a.Commit(0, 1)
	assert.Equal(t, 1, a.Pick(0b011), "weight 1 used up, walk moves on")
	require.Panics(t, func() { a.Commit(0, 0) })
}

func TestValidateVLArbTable(t *testing.T) {
	assert.NoError(t, ValidateVLArbTable("t", make([]VLArbEntry, 64)))
	assert.EqualError(t, ValidateVLArbTable("switch.vlarb_low", make([]VLArbEntry, 65)),
		"switch.vlarb_low: 65 entries, at most 64 allowed")
	assert.EqualError(t, ValidateVLArbTable("switch.vlarb_high", []VLArbEntry{{1, 1}, {15, 1}}),
		"switch.vlarb_high[1]: vl 15 is not a data VL (0..14)")
	assert.Panics(t, func() { NewVLArbiter([]VLArbEntry{{15, 1}}, nil, 0) })
}

func BenchmarkVLArbiterPick(b *testing.B) {
	low := make([]VLArbEntry, 0, 14)
	for vl := 1; vl <= 14; vl++ {
		low = append(low, VLArbEntry{VL: uint8(vl), Weight: 4})
	}
	a := NewVLArbiter([]VLArbEntry{{0, 4}}, low, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		vl := a.Pick(uint16(i) | 1)
		if vl >= 0 {
			a.Commit(vl, 1+i%66)
		}
	}
}
