package workload

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// ndrGbps is a 4x NDR port's data rate, 400 Gb/s (ib-facts.md §1), so one
// byte takes 8000/400 = 20 ps.
const ndrGbps = 400.0

// wire4096 is a 4096-byte RC middle packet on the wire: 26 bytes of
// LRH+BTH+ICRC+VCRC plus the payload (ib-facts.md §2).
const wire4096 = 26 + 4096

func TestBernoulliGaps(t *testing.T) {
	// One slot: 4122 bytes × 20 ps = 82440 ps.
	const slot = wire4096 * 20
	for _, load := range []float64{0.1, 0.25, 0.5, 0.9} {
		b := NewBernoulli(load, ndrGbps)
		r := pcg(4)
		const n = 200000
		var sum float64
		bad := 0
		for range n {
			g := b.Next(r, wire4096)
			if int64(g)%slot != 0 || g < slot { // a gap is whole slots, at least one
				bad++
			}
			sum += float64(g)
		}
		require.Zero(t, bad)
		// Gaps are slot × Geometric(load): mean slot/load, and the mean of
		// n has relative standard deviation sqrt(1−load)/sqrt(n); allow 5.
		mean := sum / n
		want := slot / load
		assert.InEpsilon(t, want, mean, 5*math.Sqrt(1-load)/math.Sqrt(n)+1e-9, "load %v", load)
	}
	// Full load: back to back, every gap one slot.
	b := NewBernoulli(1, ndrGbps)
	r := pcg(4)
	for range 100 {
		assert.Equal(t, ib.PS(wire4096*20), b.Next(r, wire4096))
	}
}

func TestOnOffGaps(t *testing.T) {
	const slot = wire4096 * 20
	const load, burst = 0.25, 8.0
	o := NewOnOff(load, burst, ndrGbps)
	r := pcg(5)
	const n = 400000
	var sum float64
	oneSlot := 0
	bad := 0
	for range n {
		g := o.Next(r, wire4096)
		if int64(g)%slot != 0 || g < slot {
			bad++
		}
		sum += float64(g)
		if g == slot {
			oneSlot++
		}
	}
	// Mean gap slot/load as for Bernoulli. The estimate is noisier: per
	// burst cycle, idle slots are geometric with mean m = B(1−L)/L = 24
	// (sd ≈ 24.5) and the burst has sd sqrt(B(B−1)) ≈ 7.5, over ~n/B = 50000
	// cycles: relative sd ≈ sqrt(24.5² + (4·7.5)²) / (32 · sqrt(50000)) ≈
	// 0.54 %. Allow 3 %.
	require.Zero(t, bad)
	assert.InEpsilon(t, slot/load, sum/n, 0.03)
	// Burstiness: inside a burst the gap is one slot. A packet is followed
	// by another of its burst with probability 1 − 1/B = 7/8, so at least
	// 7/8 of gaps are one slot; Bernoulli at 0.25 gives one slot only with
	// probability 0.25.
	assert.Greater(t, float64(oneSlot)/n, 0.85)

	full := NewOnOff(1, burst, ndrGbps)
	for range 100 {
		assert.Equal(t, ib.PS(slot), full.Next(r, wire4096), "load 1: never idle")
	}
	single := NewOnOff(0.5, 1, ndrGbps) // bursts of exactly one packet
	assert.Zero(t, single.cont)
}

func TestSizeDist(t *testing.T) {
	d, err := ParseSizes("256:3, 4096:1", "workload.sizes")
	require.NoError(t, err)
	// Mean = (256·3 + 4096·1)/4 = 1216.
	assert.Equal(t, 1216.0, d.Mean())
	assert.Equal(t, 4096, d.Max())
	r := pcg(6)
	const n = 100000
	small := 0
	for range n {
		switch d.Sample(r) {
		case 256:
			small++
		case 4096:
		default:
			t.Fatal("a size not in the list")
		}
	}
	assert.InDelta(t, 0.75*n, small, binomialTol(n, 0.75))

	fixed := FixedSize(512)
	before := *pcg(7)
	r2 := pcg(7)
	assert.Equal(t, 512, fixed.Sample(r2))
	assert.Equal(t, before.Uint64(), r2.Uint64(), "a fixed size draws nothing")

	for _, tc := range []struct{ in, want string }{
		{"256", `workload.sizes: "256" is not size:weight (e.g. 256:0.5,4096:0.5)`},
		{"0:1", `workload.sizes: size "0" in "0:1" is not a payload size (1 to 4096 bytes)`},
		{"8192:1", `workload.sizes: size "8192" in "8192:1" is not a payload size (1 to 4096 bytes)`},
		{"256:0", `workload.sizes: weight "0" in "256:0" is not a positive number`},
		{"256:x", `workload.sizes: weight "x" in "256:x" is not a positive number`},
		{"256:1,,", `workload.sizes: "" is not size:weight (e.g. 256:0.5,4096:0.5)`},
	} {
		_, err := ParseSizes(tc.in, "workload.sizes")
		assert.EqualError(t, err, tc.want, tc.in)
	}
}

func wireRC(payload int) int {
	p := ib.Packet{Opcode: ib.RDMAWriteMiddle, PayloadLen: payload}
	return p.WireBytes()
}

// TestSourcesOfferedLoad: with a size mix, what a host offers on the wire
// over time is load × the link's data rate: Σ wire bytes / Σ gaps ≈ L × 50
// bytes per ns at 400 Gb/s.
func TestSourcesOfferedLoad(t *testing.T) {
	c := DefaultTraffic()
	c.Sizes = "64:1,1024:1,4096:2"
	c.OfferedLoad = 0.4
	for _, inj := range []string{InjectBernoulli, InjectOnOff} {
		c.Injection = inj
		srcs, err := NewSources(c, 8, ndrGbps, 11)
		require.NoError(t, err)
		var bytes, ps float64
		for range 100000 {
			p := srcs[3].Next(wireRC)
			if p.Dst == 3 {
				t.Fatal("host 3 sent to itself")
			}
			bytes += float64(wireRC(p.Payload))
			ps += float64(p.Gap)
		}
		// 0.4 × 400 Gb/s = 160 Gb/s = 0.02 bytes/ps.
		assert.InEpsilon(t, 0.02, bytes/ps, 0.03, inj)
	}
}

func TestSourcesDeterministic(t *testing.T) {
	c := DefaultTraffic()
	c.Pattern = PatternPermutation
	run := func(seed uint64, hosts int) []Packet {
		srcs, err := NewSources(c, hosts, ndrGbps, seed)
		require.NoError(t, err)
		var out []Packet
		for range 50 {
			for _, s := range srcs[:4] {
				out = append(out, s.Next(wireRC))
			}
		}
		return out
	}
	assert.Equal(t, run(1, 8), run(1, 8))
	assert.NotEqual(t, run(1, 8), run(2, 8))
	// Each host has its own stream: host 0..3's gaps do not depend on how
	// many hosts there are (their destinations do: the permutation differs).
	a, b := run(1, 8), run(1, 16)
	for i := range a {
		assert.Equal(t, a[i].Gap, b[i].Gap)
	}
}

func TestSourcesIncastIdle(t *testing.T) {
	c := DefaultTraffic()
	c.Pattern = PatternIncast
	srcs, err := NewSources(c, 4, ndrGbps, 1)
	require.NoError(t, err)
	assert.True(t, srcs[0].Idle())
	for _, s := range srcs[1:] {
		assert.False(t, s.Idle())
		assert.Equal(t, 0, s.Next(wireRC).Dst)
	}
	assert.Panics(t, func() { srcs[0].Next(wireRC) })
}
