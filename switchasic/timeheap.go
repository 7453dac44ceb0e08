package switchasic

import "github.com/hcasim/hcasim/ib"

// timeHeap is a min-heap of times at which an allocation round is wanted.
// It lets the switch keep at most one round per clock edge without
// scheduling an engine event for every request.
type timeHeap struct {
	t []ib.PS
}

// push adds at and reports whether at became the new earliest time, in which
// case the caller schedules a round for it. A time equal to the current
// earliest is not added twice.
func (h *timeHeap) push(at ib.PS) bool {
	if len(h.t) > 0 && h.t[0] == at {
		return false
	}
	earliest := len(h.t) == 0 || at < h.t[0]
	h.t = append(h.t, at)
	for k := len(h.t) - 1; k > 0; {
		p := (k - 1) / 2
		if h.t[p] <= h.t[k] {
			break
		}
		h.t[p], h.t[k] = h.t[k], h.t[p]
		k = p
	}
	return earliest
}

// popThrough removes every time <= now.
func (h *timeHeap) popThrough(now ib.PS) {
	for len(h.t) > 0 && h.t[0] <= now {
		n := len(h.t) - 1
		h.t[0] = h.t[n]
		h.t = h.t[:n]
		for k := 0; ; {
			l, r, m := 2*k+1, 2*k+2, k
			if l < n && h.t[l] < h.t[m] {
				m = l
			}
			if r < n && h.t[r] < h.t[m] {
				m = r
			}
			if m == k {
				break
			}
			h.t[k], h.t[m] = h.t[m], h.t[k]
			k = m
		}
	}
}

// min returns the earliest time and whether there is one.
func (h *timeHeap) min() (ib.PS, bool) {
	if len(h.t) == 0 {
		return 0, false
	}
	return h.t[0], true
}
