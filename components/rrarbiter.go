package components

import "fmt"

// RoundRobin is an n-input round-robin arbiter: the Go model of
// rtl/verilog/rr_arbiter.v, used by the switch allocator (iSLIP grant and
// accept stages) and anywhere else several requesters share one resource.
//
// Arbitration is split in two, as in iSLIP (McKeown 1999): Pick looks at the
// requests and proposes a winner without changing state; Commit moves the
// priority pointer only when the proposal was actually used (for iSLIP,
// only when the grant was accepted). A pointer that moves only on acceptance
// is what gives iSLIP its desynchronised pointers and 100 % throughput under
// uniform traffic.
type RoundRobin struct {
	n   int // number of inputs, 1..MaxPorts
	ptr int // priority pointer: the input with highest priority, 0..n-1
}

// NewRoundRobin returns an arbiter over inputs 0..n-1 with the pointer at 0.
// It panics if n is outside [1, MaxPorts].
func NewRoundRobin(n int) *RoundRobin {
	if n < 1 || n > MaxPorts {
		panic(fmt.Sprintf("components.NewRoundRobin: n %d outside [1, %d]", n, MaxPorts))
	}
	return &RoundRobin{n: n}
}

// N returns the number of inputs.
func (a *RoundRobin) N() int { return a.n }

// Pointer returns the priority pointer: the input that wins if it requests.
func (a *RoundRobin) Pointer() int { return a.ptr }

// Pick returns the first requesting input at or after the priority pointer,
// wrapping around, or -1 if no input in 0..n-1 requests. Requests at indices
// >= n are ignored. Pick changes no state.
func (a *RoundRobin) Pick(req PortSet) int {
	if i := req.NextAtOrAfter(a.ptr); i >= 0 && i < a.n {
		return i
	}
	if i := req.NextAtOrAfter(0); i >= 0 && i < a.ptr {
		return i
	}
	return -1
}

// Commit records that granted was served: the pointer moves to granted+1
// (mod n), so granted has the lowest priority next time. It panics if granted
// is outside [0, n).
func (a *RoundRobin) Commit(granted int) {
	if granted < 0 || granted >= a.n {
		panic(fmt.Sprintf("components.RoundRobin.Commit: granted %d outside [0, %d)", granted, a.n))
	}
	a.ptr = granted + 1
	if a.ptr == a.n {
		a.ptr = 0
	}
}
