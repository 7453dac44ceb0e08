package components

import (
	"fmt"
	"math"

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
// keeps one per input VL; at 1,024 hosts each further line is a cache
// miss). To fit eight buckets in that line beside the scalars, the level,
// peak and width are 32-bit (a level past 2^31 − 1 is a caller's bug: Set
// panics) and each bucket keeps the low 32 bits of its time there, the
// multiples of 2^32 ps (4.3 ms) going to a cold carry (TestOccupancyLayout,
// TestOccupancyCarries).
type Occupancy struct {
	since    ib.PS // when level was set
	area     int64 // ∫ level dt over [start, since), unit·ps
	level    int32 // current level, in the caller's unit (blocks)
	peak     int32 // largest level seen since start
	width    int32 // histogram bucket width, in level units
	n        uint8 // histogram buckets in use
	overflow bool  // area overflowed int64 (reported by Mean as a panic)
	// buckets[k] + carries[k]·2^32 is the time spent in bucket k over
	// [start, since), in ps.
	buckets [MaxOccupancyBuckets]uint32
	start   ib.PS // start of the accumulation window
	carries [MaxOccupancyBuckets]uint32
}

// MaxOccupancyBuckets is the most histogram buckets an Occupancy keeps.
const MaxOccupancyBuckets = 16

// NewOccupancy returns an accumulator at level 0 from time 0 with nBuckets
// histogram buckets of width levels each. It panics if nBuckets is not in
// [1, MaxOccupancyBuckets] or width is not in [1, 2^31 − 1].
func NewOccupancy(nBuckets int, width int64) *Occupancy {
	o := MakeOccupancy(nBuckets, width)
	return &o
}

// MakeOccupancy is NewOccupancy as a value, for a block that keeps the
// accumulator inside its own struct.
func MakeOccupancy(nBuckets int, width int64) Occupancy {
	if nBuckets < 1 || nBuckets > MaxOccupancyBuckets || width < 1 || width > math.MaxInt32 {
		panic(fmt.Sprintf("components.MakeOccupancy: nBuckets %d, width %d, want 1..%d buckets and width 1..%d",
			nBuckets, width, MaxOccupancyBuckets, math.MaxInt32))
	}
	return Occupancy{width: int32(width), n: uint8(nBuckets)}
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
	o.area += int64(o.level) * int64(dt)
	if o.level > 0 && o.area < prev {
		o.overflow = true
	}
	k := o.level / o.width
	if k >= int32(o.n) {
		k = int32(o.n) - 1
	}
	o.addTime(int(k), uint64(dt))
	o.since = now
}

// addTime adds d ps to bucket k: its low 32 bits to the bucket, with the
// carry out of them and d's high bits to the bucket's carries.
func (o *Occupancy) addTime(k int, d uint64) {
	lo := o.buckets[k] + uint32(d)
	if hi := uint32(d >> 32); hi != 0 || lo < uint32(d) {
		if lo < uint32(d) {
			hi++
		}
		o.carries[k] += hi
	}
	o.buckets[k] = lo
}

// Set records that the level becomes level at now. now must not be before
// the previous Set, and level must be in [-2^31, 2^31 − 1].
func (o *Occupancy) Set(now ib.PS, level int64) {
	if level != int64(int32(level)) {
		panic(fmt.Sprintf("components.Occupancy: level %d outside 32 bits", level))
	}
	o.advance(now)
	o.level = int32(level)
	if o.level > o.peak {
		o.peak = o.level
	}
}

// Add changes the level by delta at now.
func (o *Occupancy) Add(now ib.PS, delta int64) { o.Set(now, int64(o.level)+delta) }

// Level returns the current level.
func (o *Occupancy) Level() int64 { return int64(o.level) }

// Peak returns the largest level since the window started.
func (o *Occupancy) Peak() int64 { return int64(o.peak) }

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
	var h []ib.PS
	for k := range int(o.n) {
		h = append(h, ib.PS(uint64(o.carries[k])<<32|uint64(o.buckets[k])))
	}
	return h
}

// BucketWidth returns the histogram bucket width in level units.
func (o *Occupancy) BucketWidth() int64 { return int64(o.width) }

// ResetWindow starts a new accumulation window at now (end of warm-up): the
// mean, peak and histogram then cover only [now, ...); the level is kept.
func (o *Occupancy) ResetWindow(now ib.PS) {
	o.advance(now)
	o.start = now
	o.area = 0
	o.peak = o.level
	o.overflow = false
	o.buckets = [MaxOccupancyBuckets]uint32{}
	o.carries = [MaxOccupancyBuckets]uint32{}
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
