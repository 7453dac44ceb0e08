package link

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TestAddCarries: a count kept as a low part and its carries is the exact
// sum, at the wrap boundary and away from it. 65,535 + 1 = 65,536 = 2^16 +
// 0; 65,530 + 66 = 65,596 = 2^16 + 60; 65,470 + 66 = 65,536 exactly;
// 65,469 + 66 = 65,535 does not carry; 2^32 − 1 + 4,138 = 2^32 + 4,137.
func TestAddCarries(t *testing.T) {
	for _, tc := range []struct {
		lo, v, wantLo uint16
		wantHi        uint64
	}{
		{65535, 1, 0, 1 << 16},
		{65530, 66, 60, 1 << 16},
		{65470, 66, 0, 1 << 16},
		{65469, 66, 65535, 0},
		{0, 1, 1, 0},
	} {
		lo, hi := tc.lo, uint64(0)
		add16(&lo, &hi, tc.v)
		assert.Equal(t, tc.wantLo, lo, "%d + %d", tc.lo, tc.v)
		assert.Equal(t, tc.wantHi, hi, "%d + %d", tc.lo, tc.v)
		assert.Equal(t, uint64(tc.lo)+uint64(tc.v), hi+uint64(lo), "%d + %d", tc.lo, tc.v)
	}
	for _, tc := range []struct {
		lo, v, wantLo uint32
		wantHi        uint64
	}{
		{math.MaxUint32, 4138, 4137, 1 << 32},
		{math.MaxUint32 - 4137, 4138, 0, 1 << 32},
		{math.MaxUint32 - 4138, 4138, math.MaxUint32, 0},
	} {
		lo, hi := tc.lo, uint64(0)
		add32(&lo, &hi, tc.v)
		assert.Equal(t, tc.wantLo, lo, "%d + %d", tc.lo, tc.v)
		assert.Equal(t, tc.wantHi, hi, "%d + %d", tc.lo, tc.v)
	}
	// Random adds of up to a packet's worth against plain 64-bit sums:
	// 200,000 adds of up to 66 wrap the 16-bit part about 100 times, of up
	// to 2^31 the 32-bit one about 50,000 times.
	r := rand.New(rand.NewPCG(1, 2))
	var lo16 uint16
	var lo32 uint32
	var hi16, hi32, sum16, sum32 uint64
	for range 200_000 {
		v16, v32 := uint16(r.IntN(67)), uint32(r.Int64N(1<<31))
		add16(&lo16, &hi16, v16)
		add32(&lo32, &hi32, v32)
		sum16 += uint64(v16)
		sum32 += uint64(v32)
	}
	require.Greater(t, sum16, uint64(50<<16), "the 16-bit part wrapped often")
	assert.Equal(t, sum16, hi16+uint64(lo16))
	assert.Equal(t, sum32, hi32+uint64(lo32))
}

// TestPortStatsPastWraps: a port's Stats are exact 64-bit counts after its
// hot 16-bit counts wrap. 70,000 SEND_ONLY packets of 6 payload bytes (26 +
// 6 + 2 pad = 34 wire bytes, one 64-byte block) go back to back on 4x NDR
// (20 ps a byte: 680 ps each); the receiver frees each at its head, and its
// wire, idle but for a 6-byte (120 ps) flow-control packet per release,
// sends exactly one flow-control packet per packet (the refresh is a
// second away). So the sender counts 70,000 packets, 2,380,000 bytes,
// 70,000 blocks and 47,600,000 busy ps, and the receiver 70,000 received
// and 70,000 flow-control packets of 8,400,000 busy ps: each 16-bit count
// past 65,536.
func TestPortStatsPastWraps(t *testing.T) {
	const n = 70_000
	s := components.NewSim()
	src := &greedy{s: s, payload: 6, left: n}
	pc := PortConfig{VLs: 1, BufferBlocks: 2048, FCRefresh: ib.Second}
	a := NewPort(s, src, "Test.Src.Port[1]", 1, pc)
	b := NewPort(s, releaser{}, "Test.Sink.Port[1]", 1, pc)
	src.p = a
	Connect(a, b, NewTiming(NDR, 4, 0, 2, CopperPsPerM))
	src.PortReady(a)
	s.StopAt(100 * ib.Microsecond)
	require.NoError(t, s.Run())
	require.Len(t, src.tails, n)
	assert.Equal(t, PortStats{DataPackets: n, DataBytes: n * 34, DataBlocks: n, BusyPS: n * 680}, a.Stats())
	assert.Equal(t, PortStats{RxPackets: n, FCPackets: n, BusyPS: n * 120}, b.Stats())
	assert.Equal(t, ib.PS(n*680), a.BusyThrough())
}

// TestPortStatsCarryOut: with every hot count just below its wrap, one
// more packet's worth carries each into the cold part exactly. A 4 KiB
// SEND_ONLY is 26 + 4096 = 4,122 wire bytes (no pad), 65 blocks, 82,440 ps
// on 4x NDR (20 ps a byte); the receiver's flow-control packet is 120 ps.
func TestPortStatsCarryOut(t *testing.T) {
	s := components.NewSim()
	src := &greedy{s: s, payload: 4096, left: 1}
	pc := PortConfig{VLs: 1, BufferBlocks: 2048, FCRefresh: ib.Second}
	a := NewPort(s, src, "Test.Src.Port[1]", 1, pc)
	b := NewPort(s, releaser{}, "Test.Sink.Port[1]", 1, pc)
	src.p = a
	Connect(a, b, NewTiming(NDR, 4, 0, 2, CopperPsPerM))
	const below16, below32 = math.MaxUint16 - 10, math.MaxUint32 - 1000
	for _, p := range []*Port{a, b} {
		p.count = portCounts{below16, below16, below16, below16, below32, below32}
	}
	src.PortReady(a)
	s.StopAt(ib.Microsecond)
	require.NoError(t, s.Run())
	require.Len(t, src.tails, 1)
	assert.Equal(t, PortStats{
		DataPackets: below16 + 1, DataBytes: below32 + 4122, DataBlocks: below16 + 65,
		FCPackets: below16, BusyPS: below32 + 82_440, RxPackets: below16,
	}, a.Stats())
	assert.Equal(t, PortStats{
		DataPackets: below16, DataBytes: below32, DataBlocks: below16,
		FCPackets: below16 + 1, BusyPS: below32 + 120, RxPackets: below16 + 1,
	}, b.Stats())
	assert.Equal(t, uint64(1<<32), a.carried.busyPS, "the busy time carried out")
	assert.Equal(t, uint64(1<<16), a.carried.dataBlocks, "the blocks carried out")
}

// TestPortByteTimes: every generation and width gives a byte time the
// port's narrow copy holds, and the port serializes as Timing does. The
// slowest byte is 1x SDR's: 8 bits / (2.5 Gb/s × 8/10) = 4 ns = 4000/1 ps;
// the largest denominator 12x FDR's: 8 bits / (12 × 14.0625 Gb/s × 64/66)
// = 8 × 66 / (12 × 14.0625 × 64) ns = 440/9 ps. A chained carry stays
// within ±psDen/2 ≤ ±4, what serCarry (int8) holds.
func TestPortByteTimes(t *testing.T) {
	maxNum, maxDen := int64(0), int32(0)
	for _, g := range GenerationNames {
		for _, w := range WidthNames {
			if w == "2x" && !Generations[Generation(g)].Min2x {
				continue
			}
			tm := NewTiming(Generation(g), Widths[w], 0, 2, CopperPsPerM)
			maxNum, maxDen = max(maxNum, tm.psNum), max(maxDen, tm.psDen)
			s := components.NewSim()
			a := NewPort(s, idleOwner{}, "Test.A.Port[1]", 1, PortConfig{VLs: 1, BufferBlocks: 64})
			b := NewPort(s, idleOwner{}, "Test.B.Port[1]", 1, PortConfig{VLs: 1, BufferBlocks: 64})
			Connect(a, b, tm)
			carry := int64(0)
			for bytes := 1; bytes <= 4200; bytes++ {
				require.Equal(t, tm.Serialization(bytes), a.Serialization(bytes), "%s %s, %d bytes", g, w, bytes)
				_, carry = tm.serialize(bytes, carry)
				require.LessOrEqual(t, 2*abs(carry), int64(tm.psDen), fmt.Sprintf("%s %s carry", g, w))
			}
		}
	}
	assert.Equal(t, int64(4000), maxNum)
	assert.Equal(t, int32(9), maxDen)
	tm := NewTiming(SDR, 1, 0, 0, 0)
	assert.Equal(t, [2]int64{4000, 1}, [2]int64{tm.psNum, int64(tm.psDen)})
	tm = NewTiming(FDR, 12, 0, 0, 0)
	assert.Equal(t, [2]int64{440, 9}, [2]int64{tm.psNum, int64(tm.psDen)})
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
