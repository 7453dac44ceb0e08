package cc

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// Throttle is a channel adapter's congestion control reaction point for
// its flows (for a synthetic endpoint, one flow per destination): each
// flow's CCT index (CCTI), raised by CCTI_Increase on every BECN up to
// CCTI_Limit, lowered by one on every CCTI_Timer expiry down to CCTI_Min,
// and the inter-packet delay CCT[CCTI] it asks for. The Linux hfi1 driver
// reacts the same way (process_becn: raise, capped at the limit, and start
// the timer if it is not running; the timer lowers the index and runs on
// while it is above the minimum). The caller owns the timer: it calls Tick
// every Timer while Active.
//
// Every change is time-stamped so the time-average of each index over a
// window can be read (Stats). Nothing allocates after NewThrottle.
type Throttle struct {
	p      *Params
	flows  []flow
	active []int32 // flows with an index above Min, in the order they rose
	lo, hi ib.PS   // the statistics window
	max    int     // highest index any flow reached
}

type flow struct {
	index  int
	since  ib.PS // when index last changed (or the window opened)
	area   int64 // ∫ index dt over the window so far, index × ps
	becns  uint64
	inList bool
}

// NewThrottle makes the reaction point for n flows, every index at Min.
func NewThrottle(p *Params, n int) *Throttle {
	t := &Throttle{p: p, flows: make([]flow, n), active: make([]int32, 0, n), hi: -1}
	for i := range t.flows {
		t.flows[i].index = p.Min
	}
	t.max = p.Min
	return t
}

// SetWindow sets the window [lo, hi) over which Stats averages the indexes.
func (t *Throttle) SetWindow(lo, hi ib.PS) { t.lo, t.hi = lo, hi }

// Index returns flow f's CCT index.
func (t *Throttle) Index(f int) int { return t.flows[f].index }

// Delay returns the inter-packet delay flow f's index asks for: CCT[index].
func (t *Throttle) Delay(f int) ib.PS { return t.p.CCT[t.flows[f].index] }

// Active reports whether some index is above Min (the timer must run).
func (t *Throttle) Active() bool { return len(t.active) > 0 }

// BECN raises flow f's index by Increase, up to Limit, at time now. It
// reports whether the timer must be started (no index was above Min).
func (t *Throttle) BECN(f int, now ib.PS) (startTimer bool) {
	fl := &t.flows[f]
	fl.becns++
	startTimer = len(t.active) == 0
	if fl.index < t.p.Limit {
		t.set(fl, min(fl.index+t.p.Increase, t.p.Limit), now)
	}
	if fl.index > t.p.Min && !fl.inList {
		fl.inList = true
		t.active = append(t.active, int32(f))
	}
	return startTimer && len(t.active) > 0
}

// Tick is one CCTI_Timer expiry at now: every index above Min drops by one.
// It reports whether the timer runs on (some index is still above Min).
func (t *Throttle) Tick(now ib.PS) bool {
	k := 0
	for _, f := range t.active {
		fl := &t.flows[f]
		t.set(fl, fl.index-1, now)
		if fl.index > t.p.Min {
			t.active[k] = f
			k++
		} else {
			fl.inList = false
		}
	}
	t.active = t.active[:k]
	return k > 0
}

func (t *Throttle) set(fl *flow, index int, now ib.PS) {
	if index < t.p.Min || index > t.p.Limit {
		panic(fmt.Sprintf("cc: index %d outside [%d, %d]", index, t.p.Min, t.p.Limit))
	}
	t.accrue(fl, now)
	fl.index = index
	t.max = max(t.max, index)
}

// accrue adds the index's area from fl.since to now, clipped to the window.
func (t *Throttle) accrue(fl *flow, now ib.PS) {
	from, to := max(fl.since, t.lo), now
	if t.hi >= 0 {
		to = min(to, t.hi)
	}
	if to > from {
		fl.area += int64(fl.index) * int64(to-from)
	}
	fl.since = now
}

// ThrottleStats summarises a Throttle over its window.
type ThrottleStats struct {
	// Throttled counts the flows that received at least one BECN.
	Throttled int
	// BECNs counts the BECNs received.
	BECNs uint64
	// IndexSum is Σ over the throttled flows of each one's time-averaged
	// index over the window; IndexSum / Throttled is their mean.
	IndexSum float64
	// Max is the highest index any flow reached during the whole run.
	Max int
}

// Stats returns the statistics at now (the window's end, or earlier).
func (t *Throttle) Stats(now ib.PS) ThrottleStats {
	s := ThrottleStats{Max: t.max}
	span := now
	if t.hi >= 0 {
		span = min(now, t.hi)
	}
	span -= t.lo
	for i := range t.flows {
		fl := &t.flows[i]
		s.BECNs += fl.becns
		if fl.becns == 0 {
			continue
		}
		s.Throttled++
		t.accrue(fl, now)
		if span > 0 {
			s.IndexSum += float64(fl.area) / float64(span)
		}
	}
	return s
}

// FlowMean returns flow f's index averaged over the window up to now (the
// window's end, or earlier).
func (t *Throttle) FlowMean(f int, now ib.PS) float64 {
	span := now
	if t.hi >= 0 {
		span = min(now, t.hi)
	}
	span -= t.lo
	fl := &t.flows[f]
	t.accrue(fl, now)
	if span <= 0 {
		return float64(fl.index)
	}
	return float64(fl.area) / float64(span)
}

// Grow makes room for flows up to n (new flows start at CCTI_Min): an HCA
// numbers its flows by QP, and QPs are created after the throttle.
func (t *Throttle) Grow(n int) {
	for len(t.flows) < n {
		t.flows = append(t.flows, flow{index: t.p.Min})
	}
}

// Flows returns the number of flows.
func (t *Throttle) Flows() int { return len(t.flows) }
