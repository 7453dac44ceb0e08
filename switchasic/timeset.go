package switchasic

import "github.com/hcasim/hcasim/ib"

// timeSet holds the distinct times at which an allocation round is wanted.
// It lets the switch keep at most one round per clock edge without
// scheduling an engine event for every request.
//
// The times are kept sorted, latest first, so the earliest is the last
// element: asking again for a time already held (most asks are: a busy
// output is seen by round after round) changes nothing, and the rounds a
// switch asks for are mostly a few cycles ahead, near the end, so an
// insertion moves few elements. The binary heap it replaced kept repeats:
// on the benchmarks two asks in three were, and it grew to 76 entries.
type timeSet struct {
	t []ib.PS // distinct, in decreasing order
}

// push adds at and reports whether at became the new earliest time, in which
// case the caller schedules a round for it. A time already held is not
// added twice.
func (h *timeSet) push(at ib.PS) bool {
	n := len(h.t)
	// i: the elements after i are the ones earlier than at.
	i := n - 1
	for i >= 0 && h.t[i] < at {
		i--
	}
	if i >= 0 && h.t[i] == at {
		return false
	}
	h.t = append(h.t, 0)
	copy(h.t[i+2:], h.t[i+1:n])
	h.t[i+1] = at
	return i+1 == n
}

// popThrough removes every time at or before now.
func (h *timeSet) popThrough(now ib.PS) {
	n := len(h.t)
	for n > 0 && h.t[n-1] <= now {
		n--
	}
	h.t = h.t[:n]
}

// min returns the earliest time, if any.
func (h *timeSet) min() (ib.PS, bool) {
	if len(h.t) == 0 {
		return 0, false
	}
	return h.t[len(h.t)-1], true
}
