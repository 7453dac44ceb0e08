package switchasic

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markSpacings feeds eligible packets to a marker until it has marked n
// times (output o, VL 0) and returns the spacings: the number of eligible
// packets from one mark to the next, the marked one included (the first
// counts from the first packet).
func markSpacings(m *ccMarker, o, n int) []int {
	var sp []int
	k := 0
	for len(sp) < n {
		k++
		if m.mark(o, 0) {
			sp = append(sp, k)
			k = 0
		}
	}
	return sp
}

// TestCCMarkingDeterministic: the countdown marks the first eligible
// packet of an output VL and then every (rate+1)-th, exactly, each output
// VL on its own.
func TestCCMarkingDeterministic(t *testing.T) {
	for _, rate := range []int{0, 1, 15} {
		m := newCCMarker(CCMarking{MarkingRate: rate}, 8, "Fabric.Switch[0]")
		sp := markSpacings(m, 3, 50)
		assert.Equal(t, 1, sp[0], "rate %d: the countdown starts at 0", rate)
		for _, s := range sp[1:] {
			assert.Equal(t, rate+1, s, "rate %d", rate)
		}
		assert.Equal(t, 1, markSpacings(m, 4, 1)[0], "rate %d: another output's countdown", rate)
	}
}

// TestCCMarkingRandom: with cc.marking random each eligible packet is
// marked with probability p = 1/(r+1), independently, so the spacing S
// between marks is geometric on {1, 2, …}: mean 1/p = r + 1, variance
// (1 − p)/p², and P(S = 1) = p. Over n = 20000 marks at r = 15 (p = 1/16)
// the sample mean's standard deviation is √((1 − p)/p² / n) = √(240/n) =
// 0.110; the count of spacings of 1 is binomial, n·p = 1250 with standard
// deviation √(n p (1 − p)) = 34.2. Both are asserted within 5 standard
// deviations (a chance below 10⁻⁶ each of failing for a correct stream,
// though the draws are fixed by the seed). The countdown, by contrast,
// never spaces two marks by 1 at r = 15. Same seed and switch name, same
// marks; another switch's name, another stream. Rate 0 marks every
// eligible packet in both modes, drawing nothing.
func TestCCMarkingRandom(t *testing.T) {
	const r, n = 15, 20000
	p := 1.0 / (r + 1)
	m := newCCMarker(CCMarking{MarkingRate: r, Random: true, Seed: 7}, 8, "Fabric.Switch[0]")
	sp := markSpacings(m, 2, n)
	sum, ones := 0, 0
	for _, s := range sp {
		sum += s
		if s == 1 {
			ones++
		}
	}
	mean := float64(sum) / n
	sdMean := math.Sqrt((1 - p) / (p * p) / n)
	sdOnes := math.Sqrt(n * p * (1 - p))
	t.Logf("mean spacing %.3f (want %d ± %.3f), spacings of 1: %d (want %.0f ± %.1f)", mean, r+1, 5*sdMean, ones, n*p, 5*sdOnes)
	assert.InDelta(t, float64(r+1), mean, 5*sdMean)
	assert.InDelta(t, n*p, float64(ones), 5*sdOnes)

	again := markSpacings(newCCMarker(CCMarking{MarkingRate: r, Random: true, Seed: 7}, 8, "Fabric.Switch[0]"), 2, n)
	assert.Equal(t, sp, again, "same seed and switch: same marks")
	other := markSpacings(newCCMarker(CCMarking{MarkingRate: r, Random: true, Seed: 7}, 8, "Fabric.Switch[1]"), 2, 100)
	assert.NotEqual(t, sp[:100], other, "another switch draws its own stream")

	zero := newCCMarker(CCMarking{MarkingRate: 0, Random: true, Seed: 7}, 8, "Fabric.Switch[0]")
	require.False(t, zero.random)
	for _, s := range markSpacings(zero, 0, 50) {
		assert.Equal(t, 1, s)
	}
}
