package components

import (
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

func TestOccupancyPanics(t *testing.T) {
	assert.Panics(t, func() { NewOccupancy(0, 1) })
	assert.Panics(t, func() { NewOccupancy(MaxOccupancyBuckets+1, 1) })
	o := NewOccupancy(1, 1)
	o.Set(10, 1)
	assert.Panics(t, func() { o.Set(5, 0) })
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
