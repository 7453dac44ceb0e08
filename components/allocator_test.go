package components

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newAlloc(t *testing.T, name string, in, out, iters int) Allocator {
	t.Helper()
	a, err := NewAllocator(name, in, out, iters)
	require.NoError(t, err)
	return a
}

func fullMatrix(in, out int) []PortSet {
	req := make([]PortSet, in)
	for i := range req {
		for o := 0; o < out; o++ {
			req[i].Set(o)
		}
	}
	return req
}

// checkMatching asserts the matching rules: a grant only where requested, no
// output granted twice (an input gets at most one output by construction).
// It returns the number of matched pairs.
func checkMatching(t *testing.T, req []PortSet, grant []int) int {
	t.Helper()
	var outs PortSet
	n := 0
	for i, o := range grant {
		if o < 0 {
			continue
		}
		n++
		assert.True(t, req[i].Has(o), "input %d granted output %d it did not request", i, o)
		assert.False(t, outs.Has(o), "output %d granted twice", o)
		outs.Set(o)
	}
	return n
}

// isMaximal reports whether no requested (input, output) pair has both ends
// unmatched.
func isMaximal(req []PortSet, grant []int, outputs int) bool {
	var outs PortSet
	for _, o := range grant {
		if o >= 0 {
			outs.Set(o)
		}
	}
	for i := range req {
		if grant[i] >= 0 {
			continue
		}
		for o := 0; o < outputs; o++ {
			if req[i].Has(o) && !outs.Has(o) {
				return false
			}
		}
	}
	return true
}

func TestNewAllocatorErrors(t *testing.T) {
	_, err := NewAllocator("pim", 4, 4, 1)
	assert.EqualError(t, err, `allocator: "pim" is not an allocator (separable, islip, wavefront)`)
	_, err = NewAllocator(AllocISLIP, 4, 4, 0)
	assert.EqualError(t, err, "allocator: islip iterations 0, want >= 1")
	_, err = NewAllocator(AllocWavefront, 0, 4, 1)
	assert.Error(t, err)
	for _, name := range AllocatorNames() {
		a := newAlloc(t, name, 3, 5, 2)
		assert.Equal(t, name, a.Name())
		assert.Equal(t, 3, a.Inputs())
		assert.Equal(t, 5, a.Outputs())
	}
}

// TestAllocatorRandomMatrices checks the matching rules on random request
// matrices for every allocator and size, and maximality where the algorithm
// promises it (wavefront always; iSLIP with iterations >= min(in, out)).
func TestAllocatorRandomMatrices(t *testing.T) {
	// 64 outputs fill one word of a request row, 65 take two, 256 four
	// (PortRows): the sizes either side of the width steps.
	sizes := [][2]int{{1, 1}, {4, 4}, {8, 8}, {5, 3}, {3, 7}, {32, 32}, {64, 64}, {65, 65}, {70, 130}, {256, 256}}
	for _, name := range AllocatorNames() {
		for _, sz := range sizes {
			in, out := sz[0], sz[1]
			a := newAlloc(t, name, in, out, min(in, out))
			rng := rand.New(rand.NewPCG(uint64(in), uint64(out)))
			req := make([]PortSet, in)
			grant := make([]int, in)
			for round := 0; round < 200; round++ {
				for i := range req {
					req[i] = PortSet{}
					for o := 0; o < out; o++ {
						if rng.IntN(3) == 0 {
							req[i].Set(o)
						}
					}
				}
				a.Allocate(req, grant)
				checkMatching(t, req, grant)
				if name != AllocSeparable {
					require.True(t, isMaximal(req, grant, out), "%s %dx%d round %d: not maximal", name, in, out, round)
				}
			}
		}
	}
}

// TestISLIPFullMatrix: with every input requesting every output, one iSLIP
// iteration from reset matches one pair (all grant pointers are at input 0,
// so every output grants input 0, which accepts output 0); n iterations
// reach the maximal (here perfect) match of n pairs at once; and with one
// iteration the pointers desynchronise so that from round n on every round
// is a perfect match (McKeown 1999, §III).
func TestISLIPFullMatrix(t *testing.T) {
	const n = 8
	req := fullMatrix(n, n)
	grant := make([]int, n)

	one := NewISLIPAllocator(n, n, 1)
	one.Allocate(req, grant)
	assert.Equal(t, 1, checkMatching(t, req, grant))
	assert.Equal(t, 0, grant[0])

	full := NewISLIPAllocator(n, n, n)
	full.Allocate(req, grant)
	assert.Equal(t, n, checkMatching(t, req, grant))

	for round := 1; round < n; round++ {
		one.Allocate(req, grant)
	}
	for round := 0; round < 3*n; round++ {
		one.Allocate(req, grant)
		assert.Equal(t, n, checkMatching(t, req, grant), "round %d after desync", round)
	}
}

// TestAllocatorFairness: under a persistent full request matrix each
// allocator serves every (input, output) pair equally often. iSLIP (after
// its n-round desynchronisation) and the wavefront (whose priority diagonal
// rotates once per round) serve each pair exactly once every n rounds, so
// over k·n rounds each pair is served k times. The separable allocator is
// checked for per-input fairness in TestAllocatorTwoInputsOneOutput.
func TestAllocatorFairness(t *testing.T) {
	const n, k = 6, 10
	for _, name := range []string{AllocISLIP, AllocWavefront} {
		t.Run(name, func(t *testing.T) {
			a := newAlloc(t, name, n, n, 1)
			req := fullMatrix(n, n)
			grant := make([]int, n)
			for round := 0; round < n; round++ {
				a.Allocate(req, grant) // warm-up (iSLIP desynchronisation)
			}
			var served [n][n]int
			for round := 0; round < k*n; round++ {
				a.Allocate(req, grant)
				for i, o := range grant {
					if o >= 0 {
						served[i][o]++
					}
				}
			}
			for i := 0; i < n; i++ {
				for o := 0; o < n; o++ {
					assert.Equal(t, k, served[i][o], "pair (%d,%d)", i, o)
				}
			}
		})
	}
}

// TestWavefrontSetCycle: SetCycle(c) puts the diagonal where c calls of
// Allocate from reset (one per cycle) leave it, for any c.
func TestWavefrontSetCycle(t *testing.T) {
	const n = 5
	req := fullMatrix(n, n)
	stepped := NewWavefrontAllocator(n, n)
	clocked := NewWavefrontAllocator(n, n)
	want, got := make([]int, n), make([]int, n)
	for c := int64(0); c < 3*n; c++ {
		stepped.Allocate(req, want)
		clocked.SetCycle(1000*n + c) // any multiple of n is cycle 0's phase
		clocked.Allocate(req, got)
		assert.Equal(t, want, got, "cycle %d", c)
	}
}

// TestWavefrontRoundsOutOfPhase: the rounds with requests need not come
// every cycle. Here output 3's rounds come every 83 cycles (cycle 83j, input
// 2 requesting it) and output 2's 26 cycles after each (inputs 0 and 1
// requesting it), as on a 4-port switch whose two outputs each free once per
// 83-cycle packet. Cell (i, o) is on diagonal (o − i) mod 4, so input 0
// (diagonal 2) beats input 1 (diagonal 1) for output 2 only when the sweep
// starts at diagonal 2.
//
// Advanced once per call, the diagonal is 2j+1 mod 4 at output 2's rounds
// (1, 3, 1, ...): input 0 never wins. Set from the clock it is
// (83j + 26) mod 4 = (3j + 2) mod 4, which is 2 when j ≡ 0 (mod 4): input 0
// wins one round in four.
func TestWavefrontRoundsOutOfPhase(t *testing.T) {
	const rounds = 400
	req3 := make([]PortSet, 4) // output 3's rounds
	req3[2].Set(3)
	req2 := make([]PortSet, 4) // output 2's rounds
	req2[0].Set(2)
	req2[1].Set(2)
	grant := make([]int, 4)
	for _, clocked := range []bool{false, true} {
		a := NewWavefrontAllocator(4, 4)
		wins := 0
		for j := int64(0); j < rounds; j++ {
			if clocked {
				a.SetCycle(83 * j)
			}
			a.Allocate(req3, grant)
			if clocked {
				a.SetCycle(83*j + 26)
			}
			a.Allocate(req2, grant)
			require.Equal(t, 1, checkMatching(t, req2, grant))
			if grant[0] == 2 {
				wins++
			}
		}
		want := 0
		if clocked {
			want = rounds / 4
		}
		assert.Equal(t, want, wins, "clocked %v", clocked)
	}
}

// TestAllocatorTwoInputsOneOutput: two inputs always requesting the same
// output alternate, so over 2k rounds each wins k times, for every allocator.
func TestAllocatorTwoInputsOneOutput(t *testing.T) {
	const k = 50
	for _, name := range AllocatorNames() {
		t.Run(name, func(t *testing.T) {
			a := newAlloc(t, name, 2, 2, 1)
			req := make([]PortSet, 2)
			req[0].Set(1)
			req[1].Set(1)
			grant := make([]int, 2)
			wins := [2]int{}
			for round := 0; round < 2*k; round++ {
				a.Allocate(req, grant)
				require.Equal(t, 1, checkMatching(t, req, grant))
				for i, o := range grant {
					if o >= 0 {
						wins[i]++
					}
				}
			}
			assert.Equal(t, [2]int{k, k}, wins)
		})
	}
}

// TestSeparableSingleIteration: the separable allocator makes one pass, so on
// a full matrix from reset every input arbiter proposes output 0 and only one
// pair matches; it is not maximal, unlike iSLIP with enough iterations.
func TestSeparableSingleIteration(t *testing.T) {
	const n = 4
	req := fullMatrix(n, n)
	grant := make([]int, n)
	a := NewSeparableAllocator(n, n)
	a.Allocate(req, grant)
	assert.Equal(t, []int{0, -1, -1, -1}, grant)
	assert.False(t, isMaximal(req, grant, n))
}

func TestAllocatorEmpty(t *testing.T) {
	for _, name := range AllocatorNames() {
		a := newAlloc(t, name, 4, 4, 2)
		req := make([]PortSet, 4)
		grant := []int{7, 7, 7, 7}
		a.Allocate(req, grant)
		assert.Equal(t, []int{-1, -1, -1, -1}, grant, name)
	}
}

// TestAllocateRowsWidth: AllocateRows takes one request row per input, as
// wide as the outputs need (70 outputs: two words), and refuses rows of
// another width, whose members it would misread; a request past the
// outputs (member 5 of a 3-output allocator, inside the row's word) is
// ignored, as Allocate ignores it.
func TestAllocateRowsWidth(t *testing.T) {
	for _, name := range AllocatorNames() {
		a := newAlloc(t, name, 4, 70, 1)
		grant := make([]int, 4)
		req := NewPortRows(4, 70)
		req.Set(2, 69)
		a.AllocateRows(req, grant)
		assert.Equal(t, []int{-1, -1, 69, -1}, grant, name)
		assert.Panics(t, func() { a.AllocateRows(NewPortRows(4, 64), grant) }, name)
		assert.Panics(t, func() { a.AllocateRows(NewPortRows(3, 70), grant) }, name)

		b := newAlloc(t, name, 2, 3, 1)
		past := NewPortRows(2, 3)
		past.Set(0, 5)
		b.AllocateRows(past, grant[:2])
		assert.Equal(t, []int{-1, -1}, grant[:2], name)
	}
}

// refISLIP is iSLIP as McKeown (1999) states it, written plainly over
// RoundRobin arbiters and PortSets (the model's form before its sets
// became rows and its arbiters bytes): each iteration, every unmatched
// output grants the first unmatched requesting input from its pointer,
// every input with grants accepts the first from its pointer, and both
// pointers move one past the partner for first-iteration matches only.
type refISLIP struct {
	grantArb, acceptArb []*RoundRobin
	iterations          int
}

func newRefISLIP(inputs, outputs, iterations int) *refISLIP {
	r := &refISLIP{iterations: iterations}
	for range outputs {
		r.grantArb = append(r.grantArb, NewRoundRobin(inputs))
	}
	for range inputs {
		r.acceptArb = append(r.acceptArb, NewRoundRobin(outputs))
	}
	return r
}

func (r *refISLIP) allocate(req []PortSet, grant []int) {
	var inMatched, outMatched PortSet
	for i := range grant {
		grant[i] = -1
	}
	for it := 0; it < r.iterations; it++ {
		grants := make([]PortSet, len(r.acceptArb))
		for o := range r.grantArb {
			if outMatched.Has(o) {
				continue
			}
			var requesters PortSet
			for i := range req {
				if req[i].Has(o) && !inMatched.Has(i) {
					requesters.Set(i)
				}
			}
			if i := r.grantArb[o].Pick(requesters); i >= 0 {
				grants[i].Set(o)
			}
		}
		for i := range grants {
			if !grants[i].Any() {
				continue
			}
			o := r.acceptArb[i].Pick(grants[i])
			grant[i] = o
			inMatched.Set(i)
			outMatched.Set(o)
			if it == 0 {
				r.acceptArb[i].Commit(o)
				r.grantArb[o].Commit(i)
			}
		}
	}
}

// TestISLIPMatchesReference: the allocator (request rows, arbiters kept
// as byte pointers) grants exactly what the plain statement of iSLIP
// grants, round after round on random requests, so its pointers move as
// the paper's do: one past the partner, first iteration only. Sizes on
// both sides of the one-word rows (64, 65) and the largest switch (256).
func TestISLIPMatchesReference(t *testing.T) {
	for _, sz := range [][3]int{{16, 16, 1}, {16, 16, 2}, {5, 9, 3}, {64, 64, 1}, {65, 65, 2}, {256, 256, 1}, {256, 256, 4}} {
		in, out, iters := sz[0], sz[1], sz[2]
		a := NewISLIPAllocator(in, out, iters)
		ref := newRefISLIP(in, out, iters)
		rng := rand.New(rand.NewPCG(uint64(in*1000+out), uint64(iters)))
		req := make([]PortSet, in)
		got, want := make([]int, in), make([]int, in)
		for round := 0; round < 300; round++ {
			density := 1 + rng.IntN(8) // sparse to dense rounds
			for i := range req {
				req[i] = PortSet{}
				for o := 0; o < out; o++ {
					if rng.IntN(density*4) == 0 {
						req[i].Set(o)
					}
				}
			}
			a.Allocate(req, got)
			ref.allocate(req, want)
			require.Equal(t, want, got, "%dx%d, %d iterations, round %d", in, out, iters, round)
		}
	}
}
