package switchasic

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
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

// TestCCVictimMask: a port marks as the root of congestion whatever its
// Victim_Mask bit, and as a victim only with the bit set.
//
// One 4-port switch (1 VL, input buffers of k = 6 packets), MTU packets of
// 4096 bytes of payload + 26 of headers = 4122 bytes, 65 blocks (P), wire
// time S = 4122 × 20 ps = 82.44 ns; threshold T = 65 blocks, marking rate 0
// (every eligible packet marked), so a packet is eligible when more than
// one packet waits, ungranted, for its output VL as it is routed.
//
// Victim: host 0 sends to host 3 without end. Host 3 never frees its
// buffer (2048 blocks: D = ⌊2048/65⌋ = 31 packets fit), as a next switch
// whose buffer its own congestion filled. Packets 1 … D get credits and
// leave at line rate: each is granted before the packet two behind it
// arrives (route stage 40 ns < 2S), so at most one waits as one arrives,
// never more than T: none is eligible. Packet D+1 finds no credits and
// waits; packet D+2 finds it alone waiting (65 blocks, not over T); from
// D+3 on every arrival finds two or more waiting and no credits for itself:
// eligible, and the output VL a victim. Host 0 sends D + k packets in all
// (host 3's D, and the k its switch input then holds), so k − 2 = 4 are
// eligible as victims: marked with every bit set, not marked and counted in
// VictimUnmarked with port 3's bit clear.
//
// Root: hosts 1 and 2 send to host 0 without end, two links into one;
// host 0 frees each packet at its tail, and its 2048 blocks outlast the
// credit round trip, so output 0 always has credits: its backlog is its own
// link's, it is the root, and it marks the same packets whatever the mask
// (the flows share no input and no output, and a mark changes no timing).
func TestCCVictimMask(t *testing.T) {
	const payload, P, T, k, D = 4096, 65, 65, 6, 2048 / 65
	cfg := smallConfig(4, 1)
	cfg.VLBufferBytes = k * P * 64
	run := func(marks []bool) (marked, unmarked uint64, checked bool, atHost3 int) {
		n := newTestNet(t, cfg, netOpts{timing: ndr(0), cc: &CCMarking{ThresholdBlocks: T, VictimMarks: marks}})
		n.eps[3].held = 1
		n.eps[0].backlog = func(e *endpoint) *ib.Packet { return n.packet(0, 3, 0, payload) }
		for _, src := range []int{1, 2} {
			n.eps[src].backlog = func(e *endpoint) *ib.Packet { return n.packet(src, 0, 0, payload) }
		}
		for _, e := range n.eps[:3] {
			e.trySend()
		}
		require.Equal(t, P, n.packet(0, 3, 0, payload).Credits())
		n.s.StopAt(20 * ib.Microsecond)
		require.NoError(t, n.s.Run())
		unmarked, checked = n.sw.VictimUnmarked()
		return n.sw.FECNMarked(), unmarked, checked, len(n.eps[3].got)
	}
	allMarked, allUnmarked, allChecked, got := run(nil)
	t.Logf("every bit: %d marks", allMarked)
	require.Equal(t, D, got, "host 3 took D packets and holds them")
	assert.False(t, allChecked, "every bit set: no victim check")
	assert.Zero(t, allUnmarked)

	noneMarked, noneUnmarked, noneChecked, got := run(make([]bool, 4))
	require.Equal(t, D, got)
	assert.True(t, noneChecked)
	assert.Equal(t, uint64(k-2), noneUnmarked, "the victim arrivals D+3 … D+k")
	assert.Greater(t, noneMarked, uint64(100), "the root marks (20 µs of two links into one)")
	assert.Equal(t, allMarked-uint64(k-2), noneMarked, "the root marks are the same; the victim's k-2 are gone")

	// Port 3's bit alone set: the victim marks as with every bit.
	marks := make([]bool, 4)
	marks[3] = true
	m3, u3, _, _ := run(marks)
	assert.Equal(t, allMarked, m3)
	assert.Zero(t, u3)
}
