package workload

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pcg(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

// binomialTol is 5 standard deviations of a count with n trials of
// probability p: 5·sqrt(n·p·(1−p)).
func binomialTol(n int, p float64) float64 { return 5 * math.Sqrt(float64(n)*p*(1-p)) }

func TestUniform(t *testing.T) {
	const n, draws = 8, 70000
	r := pcg(1)
	for _, src := range []int{0, 3, 7} {
		count := make([]int, n)
		for range draws {
			count[Uniform{N: n}.Dest(src, r)]++
		}
		assert.Zero(t, count[src], "never self")
		// Each of the 7 others: draws/7 = 10000 expected.
		for d := range n {
			if d != src {
				assert.InDelta(t, draws/7, count[d], binomialTol(draws, 1.0/7), "src %d dst %d", src, d)
			}
		}
	}
	assert.Equal(t, 1, Uniform{N: 2}.Dest(0, r))
	assert.Equal(t, 0, Uniform{N: 2}.Dest(1, r))
}

func TestPermutationIsDerangement(t *testing.T) {
	for n := 2; n <= 33; n++ {
		for seed := uint64(0); seed < 5; seed++ {
			p := NewPermutation(n, pcg(seed))
			seen := make([]bool, n)
			for src := range n {
				d := p.Dest(src, nil)
				require.NotEqual(t, src, d, "n %d seed %d: fixed point", n, seed)
				require.False(t, seen[d], "n %d seed %d: %d hit twice", n, seed, d)
				seen[d] = true
			}
		}
	}
	// Fixed per seed; another seed gives another derangement (of 16 hosts
	// there are about 7.7e12, so a clash would be a bug).
	assert.Equal(t, NewPermutation(16, pcg(9)).Map(), NewPermutation(16, pcg(9)).Map())
	assert.NotEqual(t, NewPermutation(16, pcg(9)).Map(), NewPermutation(16, pcg(10)).Map())
	// The only derangement of 2 is the swap.
	assert.Equal(t, []int{1, 0}, NewPermutation(2, pcg(3)).Map())
}

func TestShiftAndBitComplement(t *testing.T) {
	cases := []struct {
		name    string
		p       Pattern
		src, to int
	}{
		{"shift 1", Shift{N: 8, K: 1}, 7, 0},
		{"shift 3", Shift{N: 8, K: 3}, 6, 1},
		{"shift -1", Shift{N: 8, K: -1}, 0, 7},
		{"shift 11 ≡ 3", Shift{N: 8, K: 11}, 2, 5},
		// 3 bits: 000 → 111, 101 → 010.
		{"bitcomp 0", BitComplement{N: 8}, 0, 7},
		{"bitcomp 5", BitComplement{N: 8}, 5, 2},
		{"bitcomp 16 hosts", BitComplement{N: 16}, 1, 14},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.to, tc.p.Dest(tc.src, nil), tc.name)
	}
}

func TestHotspot(t *testing.T) {
	const n, draws, frac = 8, 100000, 0.3
	h := Hotspot{N: n, Hot: 0, Fraction: frac}
	r := pcg(2)
	count := make([]int, n)
	for range draws {
		count[h.Dest(2, r)]++
	}
	assert.Zero(t, count[2])
	// Exactly frac of host 2's packets to host 0; the rest spread over the
	// 6 hosts that are neither 2 nor 0: (1 − 0.3)/6 each.
	assert.InDelta(t, frac*draws, count[0], binomialTol(draws, frac))
	for _, d := range []int{1, 3, 4, 5, 6, 7} {
		assert.InDelta(t, (1-frac)/6*draws, count[d], binomialTol(draws, (1-frac)/6), "dst %d", d)
	}
	// The hot host itself sends uniformly, never to itself.
	for range 1000 {
		assert.NotEqual(t, 0, h.Dest(0, r))
	}
	assert.Equal(t, 0, Hotspot{N: 2, Hot: 0, Fraction: 0}.Dest(1, r), "two hosts: the other is the hotspot")
}

func TestIncast(t *testing.T) {
	c := Incast{N: 4, Target: 0}
	assert.Equal(t, NoDest, c.Dest(0, nil))
	for src := 1; src < 4; src++ {
		assert.Equal(t, 0, c.Dest(src, nil))
	}
}

func TestNewPatternErrors(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		shift int
		frac  float64
		want  string
	}{
		{"bitcomp", 12, 1, 0, "workload.kind: bitcomp needs a power-of-two number of hosts, the topology has 12"},
		{"shift", 8, 16, 0, "workload.shift: 16 is a multiple of the 8 hosts, so every host would send to itself"},
		{"shift", 8, 0, 0, "workload.shift: 0 is a multiple of the 8 hosts, so every host would send to itself"},
		{"hotspot", 8, 1, 1.5, "workload.hotspot_fraction: 1.5 is out of range (0 to 1)"},
		{"uniform", 1, 1, 0, "workload.kind: uniform needs at least 2 hosts, the topology has 1"},
		{"tornado", 8, 1, 0, `workload.kind: "tornado" is not a synthetic pattern (uniform, permutation, shift, bitcomp, hotspot, incast)`},
	}
	for _, tc := range cases {
		_, err := NewPattern(tc.name, tc.n, tc.shift, tc.frac, pcg(1))
		assert.EqualError(t, err, tc.want)
	}
	for _, name := range Patterns {
		p, err := NewPattern(name, 16, 5, 0.2, pcg(1))
		require.NoError(t, err, name)
		assert.NotNil(t, p)
	}
}
