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
//
// The buckets live inside the struct (at most MaxOccupancyBuckets) and the
// fields a change touches come first, so that a change at a low level reads
// and writes one 64-byte line when the accumulator starts a line (a switch
// keeps one per input VL; at 1,024 hosts each further line is a cache miss).
type Occupancy struct {
	level    int64                      // current level, in the caller's unit (blocks)
	since    ib.PS                      // when level was set
	area     int64                      // ∫ level dt over [start, since), unit·ps
	width    int64                      // histogram bucket width, in level units
	peak     int64                      // largest level seen since start
	n        int64                      // histogram buckets in use
	buckets  [MaxOccupancyBuckets]ib.PS // time spent per bucket over [start, since)
	start    ib.PS                      // start of the accumulation window
	overflow bool                       // area overflowed int64 (reported by Mean as a panic)
}

// MaxOccupancyBuckets is the most histogram buckets an Occupancy keeps.
const MaxOccupancyBuckets = 16

// NewOccupancy returns an accumulator at level 0 from time 0 with nBuckets
// histogram buckets of width levels each. It panics if nBuckets is not in
// [1, MaxOccupancyBuckets] or width < 1.
func NewOccupancy(nBuckets int, width int64) *Occupancy {
	o := MakeOccupancy(nBuckets, width)
	return &o
}

// MakeOccupancy is NewOccupancy as a value, for a block that keeps the
// accumulator inside its own struct.
func MakeOccupancy(nBuckets int, width int64) Occupancy {
	if nBuckets < 1 || nBuckets > MaxOccupancyBuckets || width < 1 {
		panic(fmt.Sprintf("components.MakeOccupancy: nBuckets %d, width %d, want 1..%d buckets and width >= 1",
			nBuckets, width, MaxOccupancyBuckets))
	}
	return Occupancy{width: width, n: int64(nBuckets)}
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
	if k >= o.n {
		k = o.n - 1
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
	return append([]ib.PS(nil), o.buckets[:o.n]...)
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
	o.buckets = [MaxOccupancyBuckets]ib.PS{}
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
