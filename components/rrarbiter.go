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
func (a *RoundRobin) Pick(req PortSet) int { return rrPick(req, a.ptr, a.n) }

// rrPick is Pick for an arbiter over n inputs with its pointer at ptr
// (ISLIPAllocator keeps its arbiters as their pointers alone).
func rrPick(req PortSet, ptr, n int) int {
	if i := req.NextAtOrAfter(ptr); i >= 0 && i < n {
		return i
	}
	if i := req.NextAtOrAfter(0); i >= 0 && i < ptr {
		return i
	}
	return -1
}

// rrAfter is where Commit(granted) moves the pointer of an arbiter over n
// inputs: granted+1, mod n.
func rrAfter(granted, n int) int {
	if granted++; granted == n {
		return 0
	}
	return granted
}

// Commit records that granted was served: the pointer moves to granted+1
// (mod n), so granted has the lowest priority next time. It panics if granted
// is outside [0, n).
func (a *RoundRobin) Commit(granted int) {
	if granted < 0 || granted >= a.n {
		panic(fmt.Sprintf("components.RoundRobin.Commit: granted %d outside [0, %d)", granted, a.n))
	}
	a.ptr = rrAfter(granted, a.n)
}
