package components

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// Occupancy accumulates a piecewise-constant level over simulated time (a
// buffer's occupied blocks, a queue's length): its time-weighted mean, its
// peak and a histogram of the time spent at each level. Set is called at
// every change; the level holds until the next Set.
//
// The histogram has fixed-width buckets: bucket k holds the time spent at
// levels [k·width, (k+1)·width); the last bucket also holds every level above.
type Occupancy struct {
	level    int64   // current level, in the caller's unit (blocks)
	since    ib.PS   // when level was set
	start    ib.PS   // start of the accumulation window
	area     int64   // ∫ level dt over [start, since), unit·ps
	peak     int64   // largest level seen since start
	width    int64   // histogram bucket width, in level units
	buckets  []ib.PS // time spent per bucket over [start, since)
	overflow bool    // area overflowed int64 (reported by Mean as a panic)
}

// NewOccupancy returns an accumulator at level 0 from time 0 with nBuckets
// histogram buckets of width levels each. It panics if nBuckets < 1 or
// width < 1.
func NewOccupancy(nBuckets int, width int64) *Occupancy {
	if nBuckets < 1 || width < 1 {
		panic(fmt.Sprintf("components.NewOccupancy: nBuckets %d, width %d, want both >= 1", nBuckets, width))
	}
	o := OccupancyOver(make([]ib.PS, nBuckets), width)
	return &o
}

// OccupancyOver returns an accumulator like NewOccupancy's whose histogram
// lives in buckets (len(buckets) buckets, zeroed), so that a block can keep
// the accumulator and its buckets inside its own struct, in the cache lines
// its events already touch. It panics if buckets is empty or width < 1.
func OccupancyOver(buckets []ib.PS, width int64) Occupancy {
	if len(buckets) < 1 || width < 1 {
		panic(fmt.Sprintf("components.OccupancyOver: %d buckets, width %d, want both >= 1", len(buckets), width))
	}
	clear(buckets)
	return Occupancy{width: width, buckets: buckets}
}

// advance accounts the current level up to now.
func (o *Occupancy) advance(now ib.PS) {
	if now < o.since {
		panic(fmt.Sprintf("components.Occupancy: time went back from %d to %d ps", o.since, now))
	}
	dt := now - o.since
	if dt == 0 {
		return
	}
	prev := o.area
	o.area += o.level * int64(dt)
	if o.level > 0 && o.area < prev {
		o.overflow = true
	}
	k := o.level / o.width
	if k >= int64(len(o.buckets)) {
		k = int64(len(o.buckets)) - 1
	}
	o.buckets[k] += dt
	o.since = now
}

// Set records that the level becomes level at now. now must not be before
// the previous Set.
func (o *Occupancy) Set(now ib.PS, level int64) {
	o.advance(now)
	o.level = level
	if level > o.peak {
		o.peak = level
	}
}

// Add changes the level by delta at now.
func (o *Occupancy) Add(now ib.PS, delta int64) { o.Set(now, o.level+delta) }

// Level returns the current level.
func (o *Occupancy) Level() int64 { return o.level }

// Peak returns the largest level since the window started.
func (o *Occupancy) Peak() int64 { return o.peak }

// Mean returns the time-weighted mean level over [start, now]; 0 for an empty
// window.
func (o *Occupancy) Mean(now ib.PS) float64 {
	o.advance(now)
	if o.overflow {
		panic("components.Occupancy: accumulated area overflowed int64")
	}
	span := now - o.start
	if span <= 0 {
		return float64(o.level)
	}
	return float64(o.area) / float64(span)
}

// Histogram returns the time in ps spent in each bucket over [start, now].
// The slice is a copy.
func (o *Occupancy) Histogram(now ib.PS) []ib.PS {
	o.advance(now)
	return append([]ib.PS(nil), o.buckets...)
}

// BucketWidth returns the histogram bucket width in level units.
func (o *Occupancy) BucketWidth() int64 { return o.width }

// ResetWindow starts a new accumulation window at now (end of warm-up): the
// mean, peak and histogram then cover only [now, ...); the level is kept.
func (o *Occupancy) ResetWindow(now ib.PS) {
	o.advance(now)
	o.start = now
	o.area = 0
	o.peak = o.level
	o.overflow = false
	for i := range o.buckets {
		o.buckets[i] = 0
	}
}

// StallTimer accumulates the time a condition holds (a VL with packets
// waiting and no credits: credit-stall time). Start and Stop may be called
// repeatedly; only the transitions count.
type StallTimer struct {
	on    bool
	since ib.PS // when the current stall began
	total ib.PS // closed stall time
	count int64 // number of stalls begun
}

// Start marks the condition true at now; a no-op if it already holds.
func (s *StallTimer) Start(now ib.PS) {
	if s.on {
		return
	}
	s.on = true
	s.since = now
	s.count++
}

// Stop marks the condition false at now; a no-op if it does not hold.
func (s *StallTimer) Stop(now ib.PS) {
	if !s.on {
		return
	}
	s.on = false
	s.total += now - s.since
}

// SetStalled calls Start or Stop as stalled says.
func (s *StallTimer) SetStalled(now ib.PS, stalled bool) {
	if stalled {
		s.Start(now)
	} else {
		s.Stop(now)
	}
}

// Stalled reports whether the condition holds now.
func (s *StallTimer) Stalled() bool { return s.on }

// Total returns the stall time up to now, including an open stall.
func (s *StallTimer) Total(now ib.PS) ib.PS {
	if s.on {
		return s.total + now - s.since
	}
	return s.total
}

// Count returns the number of stalls begun.
func (s *StallTimer) Count() int64 { return s.count }

// ResetWindow forgets the stall time before now, keeping an open stall open
// from now.
func (s *StallTimer) ResetWindow(now ib.PS) {
	s.total = 0
	s.count = 0
	if s.on {
		s.since = now
		s.count = 1
	}
}
