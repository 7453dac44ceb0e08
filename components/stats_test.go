package components

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/ib"
)

// TestOccupancy: level 0 for 100 ps, 4 for 50 ps, 10 for 50 ps, 2 for 100 ps.
// Mean = (0·100 + 4·50 + 10·50 + 2·100) / 300 = 900/300 = 3. Peak 10.
// Buckets of width 4 (3 buckets, last catches >= 8): level 0 and 2 → bucket 0
// (100+100 ps), level 4 → bucket 1 (50 ps), level 10 → bucket 2 (50 ps).
func TestOccupancy(t *testing.T) {
	o := NewOccupancy(3, 4)
	o.Set(100, 4)
	o.Add(150, 6)
	o.Set(200, 2)
	assert.InDelta(t, 3.0, o.Mean(300), 1e-12)
	assert.Equal(t, int64(10), o.Peak())
	assert.Equal(t, int64(2), o.Level())
	assert.Equal(t, []ib.PS{200, 50, 50}, o.Histogram(300))

	// A new window from 300: level 2 for 100 ps, then 0 for 100 ps → mean 1,
	// peak 2 (the level at the window start).
	o.ResetWindow(300)
	o.Set(400, 0)
	assert.InDelta(t, 1.0, o.Mean(500), 1e-12)
	assert.Equal(t, int64(2), o.Peak())
	assert.Equal(t, []ib.PS{200, 0, 0}, o.Histogram(500))
}

// TestOccupancyCarries: a bucket keeps the low 32 bits of its time beside
// the scalars and the multiples of 2^32 ps in its carries; the histogram is
// their exact sum. Level 0 (bucket 0, width 1, 3 buckets) for 2^32 − 1 ps,
// then 1 ps more (the low part wraps to 0: 2^32 in all), then 5·2^32 + 7 ps
// in one step (a step's own high bits): bucket 0 holds 6·2^32 + 7 ps. Level
// 1 (bucket 1) for 2^32 − 3 ps twice: 2^33 − 6. Level 9 (past the last
// bucket, so bucket 2) for 3 ps. Then 200,000 random steps at random
// levels, each up to 2^40 ps, against 64-bit sums kept here; and a new
// window clears the carries too.
func TestOccupancyCarries(t *testing.T) {
	const two32 = ib.PS(1) << 32
	o := NewOccupancy(3, 1)
	at := ib.PS(0)
	step := func(d ib.PS, level int64) { at += d; o.Set(at, level) }
	step(two32-1, 0)
	step(1, 0)
	step(5*two32+7, 1)
	step(two32-3, 1)
	step(two32-3, 9)
	step(3, 0)
	assert.Equal(t, []ib.PS{6*two32 + 7, 2*two32 - 6, 3}, o.Histogram(at))
	// The mean weighs each level by its time: (1·(2^33 − 6) + 9·3) / at.
	assert.InDelta(t, float64(2*two32-6+27)/float64(at), o.Mean(at), 1e-12)

	o.ResetWindow(at)
	start := at
	want := make([]ib.PS, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	level := int64(0)
	for range 200000 {
		d := ib.PS(rng.Uint64N(1 << 40))
		want[min(level, 2)] += d
		level = rng.Int64N(4)
		step(d, level)
	}
	assert.Equal(t, want, o.Histogram(at))
	var sum ib.PS
	for _, w := range want {
		sum += w
	}
	assert.Equal(t, at-start, sum)
	o.ResetWindow(at)
	assert.Equal(t, []ib.PS{0, 0, 0}, o.Histogram(at))
}

func TestOccupancyPanics(t *testing.T) {
	assert.Panics(t, func() { NewOccupancy(0, 1) })
	assert.Panics(t, func() { NewOccupancy(MaxOccupancyBuckets+1, 1) })
	o := NewOccupancy(1, 1)
	o.Set(10, 1)
	assert.Panics(t, func() { o.Set(5, 0) })
	// The level and width are 32-bit: one past either end is a caller's bug.
	assert.Panics(t, func() { o.Set(20, 1<<31) })
	assert.Panics(t, func() { o.Set(20, -1<<31-1) })
	assert.NotPanics(t, func() { o.Set(20, 1<<31-1) })
	assert.NotPanics(t, func() { o.Set(30, -1<<31) })
	assert.Panics(t, func() { NewOccupancy(1, 1<<31) })
}

// TestStallTimer: stalled over [10, 30) and [50, 60) and open from 90: at 100
// the total is 20 + 10 + 10 = 40 in 3 stalls; repeated Start/Stop are no-ops.
func TestStallTimer(t *testing.T) {
	var s StallTimer
	s.Stop(5)
	s.Start(10)
	s.Start(20)
	s.Stop(30)
	s.Stop(40)
	s.SetStalled(50, true)
	s.SetStalled(60, false)
	s.Start(90)
	assert.True(t, s.Stalled())
	assert.Equal(t, ib.PS(40), s.Total(100))
	assert.Equal(t, int64(3), s.Count())
	s.ResetWindow(100)
	assert.Equal(t, ib.PS(5), s.Total(105))
	assert.Equal(t, int64(1), s.Count())
}
