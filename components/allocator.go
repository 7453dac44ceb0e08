package components

import (
	"fmt"
	"math/bits"
)

// Allocator is a crossbar (switch) allocator: in one allocation round it
// matches inputs to outputs so that no input and no output is used twice. It
// is the Go model of the separable, iSLIP and wavefront allocators of BookSim2
// (src/allocators/) and Dally & Towles, "Principles and Practices of
// Interconnection Networks", ch. 19.
//
// Allocate reads req[i], the outputs input i requests, and writes grant[i],
// the output granted to input i or -1. len(req) and len(grant) must equal
// Inputs(). AllocateRows is the same round on requests kept as PortRows
// (row i = input i, as wide as Outputs() needs): what a switch keeps, in a
// word per input up to 64 outputs. An allocator keeps priority state
// (round-robin pointers, the wavefront's priority diagonal) that advances
// only as its algorithm says, so a sequence of rounds is deterministic.
//
// A caller may skip the clock cycles in which nothing is requested (the
// switch's event-driven rounds do). For the separable and iSLIP allocators
// that changes nothing: by their definitions their pointers move only past a
// grant, and a cycle without requests makes none. The wavefront's diagonal
// moves every cycle in hardware, requests or not, so it is a
// ClockedAllocator, told the cycle before each round.
type Allocator interface {
	// Allocate computes one round's matching; see the type comment.
	Allocate(req []PortSet, grant []int)
	// AllocateRows computes one round's matching on req.Rows() == Inputs()
	// rows of (Outputs()+63)/64 words; it is Allocate without the copy.
	AllocateRows(req PortRows, grant []int)
	// Name returns the name that selects the allocator ("islip").
	Name() string
	// Inputs returns the number of inputs.
	Inputs() int
	// Outputs returns the number of outputs.
	Outputs() int
}

// ClockedAllocator is an Allocator whose priority state follows the clock
// rather than the rounds it is asked for.
type ClockedAllocator interface {
	Allocator
	// SetCycle says that the next Allocate runs on clock cycle c (c ≥ 0,
	// cycles counted from 0 at time 0).
	SetCycle(c int64)
}

// Allocator names, as spelled in switch.allocator.
const (
	AllocSeparable = "separable"
	AllocISLIP     = "islip"
	AllocWavefront = "wavefront"
)

// AllocatorNames lists the allocators NewAllocator accepts, in the order the
// docs list them.
func AllocatorNames() []string {
	return []string{AllocSeparable, AllocISLIP, AllocWavefront}
}

// NewAllocator returns the allocator called name for inputs × outputs.
// iterations is the number of iSLIP iterations (ignored by the others). An
// unknown name or a bad size is a user error and returns an error.
func NewAllocator(name string, inputs, outputs, iterations int) (Allocator, error) {
	if inputs < 1 || inputs > MaxPorts || outputs < 1 || outputs > MaxPorts {
		return nil, fmt.Errorf("allocator: size %d×%d outside 1..%d", inputs, outputs, MaxPorts)
	}
	switch name {
	case AllocSeparable:
		return NewSeparableAllocator(inputs, outputs), nil
	case AllocISLIP:
		if iterations < 1 {
			return nil, fmt.Errorf("allocator: islip iterations %d, want >= 1", iterations)
		}
		return NewISLIPAllocator(inputs, outputs, iterations), nil
	case AllocWavefront:
		return NewWavefrontAllocator(inputs, outputs), nil
	}
	return nil, fmt.Errorf("allocator: %q is not an allocator (separable, islip, wavefront)", name)
}

// checkAllocArgs panics unless req has a row of (outputs+63)/64 words per
// input and grant an element per input. It is small enough to inline into
// each AllocateRows; the message is built only if it fires.
func checkAllocArgs(name string, inputs, outputs int, req PortRows, grant []int) {
	if len(req.w) != inputs*req.words || len(grant) != inputs || req.words != (outputs+63)>>6 {
		panic(allocArgsError{name, inputs, outputs, req.Rows(), req.words, len(grant)})
	}
}

// allocArgsError is checkAllocArgs' panic.
type allocArgsError struct {
	name                                 string
	inputs, outputs, rows, words, grants int
}

func (e allocArgsError) Error() string {
	return fmt.Sprintf("components.%s allocator: %d request rows of %d words, len(grant) %d, want %d rows of %d",
		e.name, e.rows, e.words, e.grants, e.inputs, (e.outputs+63)>>6)
}

// setsAsRows copies req into *rows (made on first use, as wide as outputs
// needs) for Allocate: the PortSet form for tests and tools, the rows for
// the switch.
func setsAsRows(rows *PortRows, req []PortSet, outputs int) PortRows {
	if rows.Rows() != len(req) {
		*rows = NewPortRows(len(req), outputs)
	}
	for i := range req {
		rows.SetRow(i, req[i])
	}
	return *rows
}

// SeparableAllocator is a separable input-first allocator with round-robin
// arbiters: each input first picks one of the outputs it requests (input
// arbiter), then each output picks one of the inputs that picked it (output
// arbiter). One iteration, so it may leave an input and an output unmatched
// that could have been matched (it finds a maximal match only by luck). Both
// pointers move only for a pair that won both stages, as in BookSim2's
// separable_input_first.cpp with round-robin arbiters.
type SeparableAllocator struct {
	inArb  []*RoundRobin // per input, over outputs
	outArb []*RoundRobin // per output, over inputs
	pick   []int         // per input: the output its arbiter proposed, or -1
	bids   PortRows      // per output: the inputs that proposed it
	sets   PortRows      // Allocate's copy of its requests
}

// NewSeparableAllocator returns a separable input-first allocator.
func NewSeparableAllocator(inputs, outputs int) *SeparableAllocator {
	a := &SeparableAllocator{
		inArb:  make([]*RoundRobin, inputs),
		outArb: make([]*RoundRobin, outputs),
		pick:   make([]int, inputs),
		bids:   NewPortRows(outputs, inputs),
	}
	for i := range a.inArb {
		a.inArb[i] = NewRoundRobin(outputs)
	}
	for o := range a.outArb {
		a.outArb[o] = NewRoundRobin(inputs)
	}
	return a
}

// Name returns "separable".
func (a *SeparableAllocator) Name() string { return AllocSeparable }

// Inputs returns the number of inputs.
func (a *SeparableAllocator) Inputs() int { return len(a.inArb) }

// Outputs returns the number of outputs.
func (a *SeparableAllocator) Outputs() int { return len(a.outArb) }

// Allocate computes one round; see Allocator.
func (a *SeparableAllocator) Allocate(req []PortSet, grant []int) {
	a.AllocateRows(setsAsRows(&a.sets, req, a.Outputs()), grant)
}

// AllocateRows computes one round; see Allocator.
func (a *SeparableAllocator) AllocateRows(req PortRows, grant []int) {
	checkAllocArgs(AllocSeparable, len(a.inArb), len(a.outArb), req, grant)
	clear(a.bids.w)
	for i := range grant {
		grant[i] = -1
		a.pick[i] = a.inArb[i].Pick(req.Row(i))
		if a.pick[i] >= 0 {
			a.bids.Set(a.pick[i], i)
		}
	}
	for o := range a.outArb {
		if !a.bids.Any(o) {
			continue
		}
		i := a.outArb[o].Pick(a.bids.Row(o))
		grant[i] = o
		a.outArb[o].Commit(i)
		a.inArb[i].Commit(o)
	}
}

// ISLIPAllocator is iSLIP (McKeown, "The iSLIP scheduling algorithm for
// input-queued switches", IEEE/ACM ToN 1999): each iteration, every unmatched
// output grants one requesting unmatched input (round robin from its grant
// pointer), and every unmatched input accepts one grant (round robin from its
// accept pointer). Pointers move one past the matched partner, and only for
// matches made in the first iteration, which desynchronises the output
// pointers and gives 100 % throughput under uniform Bernoulli traffic with
// VOQs. With iterations ≥ min(inputs, outputs) the match is maximal.
type ISLIPAllocator struct {
	// The round-robin arbiters (RoundRobin), each kept as its priority
	// pointer alone, a byte (0..MaxPorts-1; an arbiter's size is the
	// allocator's): grantPtr[o] is output o's over the inputs, acceptPtr[i]
	// input i's over the outputs. A radix-16 switch's 32 pointers share
	// one line, where 32 RoundRobins behind pointers took 768 bytes.
	grantPtr   []uint8
	acceptPtr  []uint8
	iterations int
	// oneWord: at most 64 inputs and 64 outputs, so every row is one word
	// and a round runs on words (allocateWords), reading the struct's
	// first two lines (to reqBy) and not outMatched.
	oneWord    bool
	grants     PortRows // per input: outputs that granted it this iteration
	reqBy      PortRows // per output: inputs requesting it this round
	outMatched PortSet
	sets       PortRows // Allocate's copy of its requests
}

// NewISLIPAllocator returns an iSLIP allocator running iterations iterations
// per round. It panics if iterations < 1.
func NewISLIPAllocator(inputs, outputs, iterations int) *ISLIPAllocator {
	if iterations < 1 {
		panic(fmt.Sprintf("components.NewISLIPAllocator: iterations %d, want >= 1", iterations))
	}
	if inputs < 1 || inputs > MaxPorts || outputs < 1 || outputs > MaxPorts {
		panic(fmt.Sprintf("components.NewISLIPAllocator: size %d×%d outside 1..%d", inputs, outputs, MaxPorts))
	}
	ptrs := make([]uint8, outputs+inputs) // every pointer at 0, as NewRoundRobin's
	return &ISLIPAllocator{
		grantPtr:   ptrs[:outputs:outputs],
		acceptPtr:  ptrs[outputs:],
		iterations: iterations,
		grants:     NewPortRows(inputs, outputs),
		reqBy:      NewPortRows(outputs, inputs),
		oneWord:    inputs <= 64 && outputs <= 64,
	}
}

// Name returns "islip".
func (a *ISLIPAllocator) Name() string { return AllocISLIP }

// Inputs returns the number of inputs.
func (a *ISLIPAllocator) Inputs() int { return len(a.acceptPtr) }

// Outputs returns the number of outputs.
func (a *ISLIPAllocator) Outputs() int { return len(a.grantPtr) }

// Iterations returns the request-grant-accept iterations per round.
func (a *ISLIPAllocator) Iterations() int { return a.iterations }

// Allocate computes one round; see Allocator.
func (a *ISLIPAllocator) Allocate(req []PortSet, grant []int) {
	a.AllocateRows(setsAsRows(&a.sets, req, a.Outputs()), grant)
}

// AllocateRows computes one round; see Allocator.
func (a *ISLIPAllocator) AllocateRows(req PortRows, grant []int) {
	checkAllocArgs(AllocISLIP, len(a.acceptPtr), len(a.grantPtr), req, grant)
	if a.oneWord {
		a.allocateWords(req.w, grant)
		return
	}
	for i := range grant {
		grant[i] = -1
	}
	// Transpose the requests once: reqBy[o] = inputs requesting o. Most
	// inputs request nothing in a round: a zero word costs one test.
	var outs PortSet
	nIn, nOut := len(a.acceptPtr), len(a.grantPtr)
	words := req.words
	for k, word := range req.w {
		if word == 0 {
			continue
		}
		i, w := k, 0 // word k is word w of input i's row
		if words > 1 {
			i, w = k/words, k%words
		}
		for ; word != 0; word &= word - 1 {
			o := w<<6 | bits.TrailingZeros64(word)
			if o >= nOut {
				break // members past the outputs are ignored
			}
			a.reqBy.Set(o, i)
			outs.Set(o)
		}
	}
	a.outMatched = PortSet{}
	var inMatched PortSet
	for it := 0; it < a.iterations; it++ {
		var granted PortSet // inputs that received a grant this iteration
		// Grant: each unmatched output picks among unmatched inputs requesting it.
		for o := range outs.All() {
			if a.outMatched.Has(o) {
				continue
			}
			requesters := a.reqBy.Row(o)
			for w := range requesters {
				requesters[w] &^= inMatched[w]
			}
			if i := rrPick(requesters, int(a.grantPtr[o]), nIn); i >= 0 {
				a.grants.Set(i, o)
				granted.Set(i)
			}
		}
		if !granted.Any() {
			break
		}
		// Accept: each input with grants accepts one.
		for i := range granted.All() {
			o := rrPick(a.grants.Row(i), int(a.acceptPtr[i]), nOut)
			a.grants.ClearRow(i)
			grant[i] = o
			inMatched.Set(i)
			a.outMatched.Set(o)
			if it == 0 {
				a.acceptPtr[i] = uint8(rrAfter(o, nOut))
				a.grantPtr[o] = uint8(rrAfter(i, nIn))
			}
		}
	}
	for o := range outs.All() {
		a.reqBy.ClearRow(o)
	}
}

// allocateWords is AllocateRows when every row is one word (a switch of
// radix 64 or less): the same iterations, with each set a uint64 and each
// arbiter's pick a shift and a count of trailing zeros (rrPickWord), where
// the rows' form walked four-word PortSets. TestISLIPMatchesReference holds
// both forms to the paper's statement.
func (a *ISLIPAllocator) allocateWords(req []uint64, grant []int) {
	nIn, nOut := len(a.acceptPtr), len(a.grantPtr)
	reqBy, grants := a.reqBy.w[:nOut], a.grants.w[:nIn]
	outMask := ^uint64(0) >> (64 - nOut) // members past the outputs are ignored
	var outs uint64
	for i, word := range req[:len(grant)] {
		grant[i] = -1
		for word &= outMask; word != 0; word &= word - 1 {
			o := bits.TrailingZeros64(word)
			reqBy[o] |= 1 << i
			outs |= 1 << o
		}
	}
	var inMatched, outMatched uint64
	for it := 0; it < a.iterations; it++ {
		var granted uint64 // inputs that received a grant this iteration
		// Grant: each unmatched output picks among unmatched inputs requesting it.
		for m := outs &^ outMatched; m != 0; m &= m - 1 {
			o := bits.TrailingZeros64(m)
			if r := reqBy[o] &^ inMatched; r != 0 {
				i := rrPickWord(r, a.grantPtr[o])
				grants[i] |= 1 << o
				granted |= 1 << i
			}
		}
		if granted == 0 {
			break
		}
		// Accept: each input with grants accepts one.
		for m := granted; m != 0; m &= m - 1 {
			i := bits.TrailingZeros64(m)
			o := rrPickWord(grants[i], a.acceptPtr[i])
			grants[i] = 0
			grant[i] = o
			inMatched |= 1 << i
			outMatched |= 1 << o
			if it == 0 {
				a.acceptPtr[i] = uint8(rrAfter(o, nOut))
				a.grantPtr[o] = uint8(rrAfter(i, nIn))
			}
		}
	}
	for m := outs; m != 0; m &= m - 1 {
		reqBy[bits.TrailingZeros64(m)] = 0
	}
}

// rrPickWord is rrPick on a one-word set r (not empty, every member below
// the arbiter's size): the first member at or after ptr, else the first.
func rrPickWord(r uint64, ptr uint8) int {
	if h := r >> ptr << ptr; h != 0 {
		return bits.TrailingZeros64(h)
	}
	return bits.TrailingZeros64(r)
}

// WavefrontAllocator is the wavefront allocator (Tamir & Chi, "Symmetric
// crossbar arbiters for VLSI communication switches", IEEE TPDS 1993): the
// n×n request matrix (n = max(inputs, outputs)) is swept diagonal by
// diagonal, starting from a priority diagonal; the cells of one wrapped
// diagonal share no row and no column, so each is granted if it requests and
// its row and column are still free. The result is always a maximal match.
// The priority diagonal advances by one every clock cycle, which makes it
// fair over n cycles: in hardware it is a counter clocked every cycle,
// whether or not anything requests. Allocate models one cycle and advances it
// (as BookSim2's wavefront.cpp, whose routers allocate every cycle); a caller
// that skips idle cycles sets it from the clock with SetCycle. Advancing it
// only per call lets it lock in phase with the rounds that have requests:
// with two outputs whose rounds alternate on a 4-port switch, each output's
// rounds see only every other diagonal, and an input whose only requests lie
// on the diagonals an output never sees first is starved outright
// (switchasic TestWavefrontNoStarvation).
type WavefrontAllocator struct {
	sets            PortRows // Allocate's copy of its requests
	inputs, outputs int
	n               int // max(inputs, outputs)
	priority        int // the diagonal swept first, 0..n-1
}

// SetCycle puts the priority diagonal where a per-cycle counter from reset
// would be on cycle c: c mod n.
func (a *WavefrontAllocator) SetCycle(c int64) {
	if c < 0 {
		panic(fmt.Sprintf("components.WavefrontAllocator.SetCycle: cycle %d < 0", c))
	}
	a.priority = int(c % int64(a.n))
}

// NewWavefrontAllocator returns a wavefront allocator.
func NewWavefrontAllocator(inputs, outputs int) *WavefrontAllocator {
	return &WavefrontAllocator{inputs: inputs, outputs: outputs, n: max(inputs, outputs)}
}

// Name returns "wavefront".
func (a *WavefrontAllocator) Name() string { return AllocWavefront }

// Inputs returns the number of inputs.
func (a *WavefrontAllocator) Inputs() int { return a.inputs }

// Outputs returns the number of outputs.
func (a *WavefrontAllocator) Outputs() int { return a.outputs }

// Allocate computes one round; see Allocator.
func (a *WavefrontAllocator) Allocate(req []PortSet, grant []int) {
	a.AllocateRows(setsAsRows(&a.sets, req, a.Outputs()), grant)
}

// AllocateRows computes one round; see Allocator. Cell (i, o) lies on
// diagonal (o − i) mod n.
func (a *WavefrontAllocator) AllocateRows(req PortRows, grant []int) {
	checkAllocArgs(AllocWavefront, a.inputs, a.outputs, req, grant)
	var inUsed, outUsed PortSet
	any := false
	for i := range grant {
		grant[i] = -1
		any = any || req.Any(i)
	}
	if any {
		for d := 0; d < a.n; d++ {
			diag := (a.priority + d) % a.n
			for i := 0; i < a.inputs; i++ {
				o := (i + diag) % a.n
				if o >= a.outputs || inUsed.Has(i) || outUsed.Has(o) || !req.Has(i, o) {
					continue
				}
				grant[i] = o
				inUsed.Set(i)
				outUsed.Set(o)
			}
		}
	}
	a.priority++
	if a.priority == a.n {
		a.priority = 0
	}
}
