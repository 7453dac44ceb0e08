package workload

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// NoDest is what Pattern.Dest returns for a host that sends nothing under the
// pattern (the incast target).
const NoDest = -1

// Pattern chooses the destination host of each packet. Dest is a pure
// function of the source, the pattern's fixed state and the draws it takes
// from r, so a seeded r gives the same traffic on every machine. It never
// returns src.
type Pattern interface {
	Dest(src int, r *rand.Rand) int
}

// Synthetic pattern names, as workload.kind spells them.
const (
	PatternUniform     = "uniform"
	PatternPermutation = "permutation"
	PatternShift       = "shift"
	PatternBitComp     = "bitcomp"
	PatternHotspot     = "hotspot"
	PatternIncast      = "incast"
)

// Patterns lists the synthetic pattern names.
var Patterns = []string{PatternUniform, PatternPermutation, PatternShift, PatternBitComp, PatternHotspot, PatternIncast}

// Uniform sends each packet to a host drawn uniformly from the N−1 others.
type Uniform struct{ N int }

// Dest draws one of the other N−1 hosts.
func (u Uniform) Dest(src int, r *rand.Rand) int {
	d := r.IntN(u.N - 1)
	if d >= src {
		d++
	}
	return d
}

// Permutation sends every packet of host i to host perm[i], a random
// derangement (no host sends to itself) drawn once from the seed.
type Permutation struct{ perm []int }

// NewPermutation draws a derangement of n hosts uniformly: Fisher–Yates
// shuffles until one has no fixed point (about e ≈ 2.72 tries on average).
func NewPermutation(n int, r *rand.Rand) *Permutation {
	if n < 2 {
		panic(fmt.Sprintf("workload: NewPermutation(%d): a derangement needs at least 2 hosts", n))
	}
	perm := make([]int, n)
	for {
		for i := range perm {
			perm[i] = i
		}
		for i := n - 1; i > 0; i-- {
			j := r.IntN(i + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
		fixed := false
		for i, p := range perm {
			fixed = fixed || i == p
		}
		if !fixed {
			return &Permutation{perm: perm}
		}
	}
}

// Dest returns src's partner; it draws nothing.
func (p *Permutation) Dest(src int, _ *rand.Rand) int { return p.perm[src] }

// Map returns the permutation (index = source). The slice is the pattern's own.
func (p *Permutation) Map() []int { return p.perm }

// Shift sends host i's packets to host (i + K) mod N. On a full fat tree
// with D-mod-K routing every shift is contention-free (Zahavi 2010; see
// docs/fabric.md), which makes it the pattern for a non-blocking test.
type Shift struct{ N, K int }

// Dest returns (src + K) mod N.
func (s Shift) Dest(src int, _ *rand.Rand) int { return ((src+s.K)%s.N + s.N) % s.N }

// BitComplement sends host i's packets to host ^i (all address bits
// inverted); N must be a power of two (Dally and Towles, Principles and
// Practices of Interconnection Networks, 2004, §3.2).
type BitComplement struct{ N int }

// Dest returns src with every bit of its log2(N)-bit index inverted.
func (b BitComplement) Dest(src int, _ *rand.Rand) int { return (b.N - 1) ^ src }

// Hotspot sends a fraction of every other host's packets to host Hot and the
// rest uniformly to the hosts that are neither itself nor Hot; Hot itself
// sends uniformly. With N = 2 every packet goes to the other host.
type Hotspot struct {
	N, Hot   int
	Fraction float64 // share of a non-hot host's packets that go to Hot, 0..1
}

// Dest draws: with probability Fraction Hot, else a uniform other host.
func (h Hotspot) Dest(src int, r *rand.Rand) int {
	if src == h.Hot {
		return Uniform{h.N}.Dest(src, r)
	}
	if h.N == 2 || r.Float64() < h.Fraction {
		return h.Hot
	}
	// Uniform over the N−2 hosts other than src and Hot.
	lo, hi := min(src, h.Hot), max(src, h.Hot)
	d := r.IntN(h.N - 2)
	if d >= lo {
		d++
	}
	if d >= hi {
		d++
	}
	return d
}

// Incast sends every host's packets to host Target; Target sends nothing.
type Incast struct{ N, Target int }

// Dest returns Target, or NoDest for Target itself.
func (c Incast) Dest(src int, _ *rand.Rand) int {
	if src == c.Target {
		return NoDest
	}
	return c.Target
}

// NewPattern makes the named pattern for n hosts. shift is the shift
// distance, hotspotFraction the hotspot's share; host 0 is the hotspot and
// the incast target. r draws the permutation (and nothing else).
func NewPattern(name string, n, shift int, hotspotFraction float64, r *rand.Rand) (Pattern, error) {
	return newPattern(name, n, shift, hotspotFraction, r, topologyHosts)
}

// patternHosts says, in NewPattern's errors, which key chose the pattern
// and what its n hosts are: the whole topology (workload.kind), or
// perftest's background hosts (workload.background_pattern), which are the
// fabric's hosts less the test pair, so a count the user never wrote.
type patternHosts struct {
	key   string // the config key that names the pattern
	hosts string // the n hosts, with %d for n: "the topology has %d"
	noun  string // "hosts" or "background hosts"
}

var (
	topologyHosts   = patternHosts{key: "workload.kind", hosts: "the topology has %d", noun: "hosts"}
	backgroundHosts = patternHosts{key: "workload.background_pattern",
		hosts: "the fabric has %d besides the two perftest hosts", noun: "background hosts"}
)

func newPattern(name string, n, shift int, hotspotFraction float64, r *rand.Rand, in patternHosts) (Pattern, error) {
	if n < 2 {
		return nil, fmt.Errorf("%s: %s needs at least 2 %s, "+in.hosts, in.key, name, in.noun, n)
	}
	switch name {
	case PatternUniform:
		return Uniform{N: n}, nil
	case PatternPermutation:
		return NewPermutation(n, r), nil
	case PatternShift:
		if shift%n == 0 {
			return nil, fmt.Errorf("workload.shift: %d is a multiple of the %d %s, so every host would send to itself", shift, n, in.noun)
		}
		return Shift{N: n, K: shift}, nil
	case PatternBitComp:
		if bits.OnesCount(uint(n)) != 1 {
			return nil, fmt.Errorf("%s: bitcomp needs a power-of-two number of %s, "+in.hosts, in.key, in.noun, n)
		}
		return BitComplement{N: n}, nil
	case PatternHotspot:
		if !(hotspotFraction >= 0 && hotspotFraction <= 1) {
			return nil, fmt.Errorf("workload.hotspot_fraction: %v is out of range (0 to 1)", hotspotFraction)
		}
		return Hotspot{N: n, Hot: 0, Fraction: hotspotFraction}, nil
	case PatternIncast:
		return Incast{N: n, Target: 0}, nil
	}
	return nil, fmt.Errorf("%s: %q is not a synthetic pattern (uniform, permutation, shift, bitcomp, hotspot, incast)", in.key, name)
}
