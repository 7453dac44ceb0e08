package sweep

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/report"
)

// capped is a synthetic network that delivers what is offered up to a
// capacity: accepted = min(offered, capacity).
func capped(capacity float64) func(x float64) map[string]any {
	return func(x float64) map[string]any {
		return map[string]any{AcceptedMetric: math.Min(x, capacity)}
	}
}

func TestBisectSynthetic(t *testing.T) {
	const capacity, eps = 0.63, 0.02
	// Saturated when min(x, 0.63) < x(1 − 0.02), i.e. x > 0.63/0.98: the
	// knee the search must bracket.
	knee := capacity / (1 - eps)
	k := KneeSpec{From: 0.1, To: 1.0, Tolerance: 0.02, Epsilon: eps}
	var probes []float64
	got, err := k.Bisect(func(x float64) (bool, error) {
		probes = append(probes, x)
		return Saturated(capped(capacity)(x), x, eps)
	})
	require.NoError(t, err)
	assert.LessOrEqual(t, got.Below, knee)
	assert.Greater(t, got.Above, knee)
	assert.LessOrEqual(t, got.Above-got.Below, k.Tolerance)
	// Both ends, then halvings of 0.9 until ≤ 0.02: 0.45, 0.225, 0.1125,
	// 0.05625, 0.028125, 0.0140625 — six.
	assert.Equal(t, []float64{0.1, 1.0}, probes[:2])
	assert.Len(t, probes, 2+6)
	s := &Sweep{Search: &Axis{Key: "workload.offered_load", Search: &k}}
	assert.Equal(t, len(probes), s.PointsPerDesign())
}

func TestBisectOutsideTheRange(t *testing.T) {
	k := KneeSpec{From: 0.2, To: 0.8, Tolerance: 0.01, Epsilon: 0.02}
	probe := func(capacity float64) (Knee, int) {
		n := 0
		got, err := k.Bisect(func(x float64) (bool, error) {
			n++
			return Saturated(capped(capacity)(x), x, k.Epsilon)
		})
		require.NoError(t, err)
		return got, n
	}
	// Capacity 0.1: saturated at from already; one probe.
	got, n := probe(0.1)
	assert.Equal(t, 1, n)
	assert.True(t, math.IsNaN(got.Below))
	assert.Equal(t, 0.2, got.Above)
	// Capacity 0.95: unsaturated at to; two probes.
	got, n = probe(0.95)
	assert.Equal(t, 2, n)
	assert.Equal(t, 0.8, got.Below)
	assert.True(t, math.IsNaN(got.Above))
}

// A tolerance that divides the range into a power of two is met exactly:
// from 0.1 to 0.9 with tolerance 0.1 halves 0.8 to 0.4, 0.2, 0.1 — three
// probes after the two ends, 2 + log₂(0.8 / 0.1) = 5 in all, wherever the
// knee lies. The bracket's width is a difference of decimals, though:
// 0.35 − 0.3 is 0.04999999999999999 in float64 and 0.4 − 0.3 is
// 0.10000000000000003, so comparing the raw difference with 0.1 asked for
// one more halving (and a sixth simulation per design) for some knees.
func TestBisectStopsAtAnExactTolerance(t *testing.T) {
	for _, tc := range []struct{ from, to, tol float64 }{
		{0.1, 0.9, 0.1},   // 8 = 2³: 5 probes
		{0.2, 1.0, 0.1},   // 8: 5
		{0.1, 0.5, 0.05},  // 8: 5
		{0.3, 0.7, 0.05},  // 8: 5
		{0.1, 0.9, 0.025}, // 32 = 2⁵: 7
		{0.3, 0.9, 0.15},  // 4 = 2²: 4 (the ratio is 4.000000000000001 in float64)
	} {
		k := KneeSpec{From: tc.from, To: tc.to, Tolerance: tc.tol, Epsilon: 0.02}
		want := 2 + int(math.Round(math.Log2((tc.to-tc.from)/tc.tol)))
		s := &Sweep{Search: &Axis{Key: "workload.offered_load", Search: &k}}
		assert.Equal(t, want, s.PointsPerDesign(), "%+v", tc)
		// Knees all over the range, each off the bisection's grid.
		for knee := tc.from + 0.0001; knee < tc.to; knee += 0.0037 {
			n := 0
			got, err := k.Bisect(func(x float64) (bool, error) {
				n++
				return x >= knee, nil
			})
			require.NoError(t, err)
			assert.Equal(t, want, n, "%+v, knee %v: probes", tc, knee)
			assert.Less(t, got.Below, knee)
			assert.GreaterOrEqual(t, got.Above, knee)
			assert.InDelta(t, tc.tol, got.Above-got.Below, 1e-12, "%+v, knee %v: bracket %v", tc, knee, got)
		}
	}
}

func TestSaturatedNeedsAcceptedLoad(t *testing.T) {
	_, err := Saturated(map[string]any{"goodput_gbps": 1.0}, 0.5, 0.02)
	assert.ErrorContains(t, err, "no accepted_load metric")
}

func TestKneeSweepRunAndSummary(t *testing.T) {
	// Two designs (a grid axis, the buffer) each searched; a synthetic
	// runner whose capacity grows with the buffer: 8192 → 0.4, 65536 → 0.8.
	s := expand(t, streamBase+`
sweep:
  hca.vl_buffer_bytes: [8192, 65536]
  workload.offered_load: {search: knee, from: 0.1, to: 1.0, tolerance: 0.05}
`)
	require.NotNil(t, s.Search)
	require.Len(t, s.Designs, 2)
	capacity := map[int]float64{8192: 0.4, 65536: 0.8}
	run := func(p *Point) (map[string]any, error) {
		c := p.Loaded.Config
		return capped(capacity[c.HCA.VLBufferBytes])(c.Workload.OfferedLoad), nil
	}
	outs := s.Run(context.Background(), []int{0, 1}, 2, run, nil)
	var points []report.Point
	for i, o := range outs {
		require.NoError(t, o.Err)
		if i > 0 && outs[i-1].Design == o.Design {
			prev, _ := report.Number(outs[i-1].Params["workload.offered_load"])
			x, _ := report.Number(o.Params["workload.offered_load"])
			assert.Less(t, prev, x, "a design's probes ascend")
		}
		points = append(points, report.Point{Params: o.Params, Metrics: o.Metrics})
	}
	knees := Knees(points, "workload.offered_load", DefaultKneeEpsilon)
	require.Len(t, knees, 2)
	for i, buf := range []int{8192, 65536} {
		assert.Equal(t, buf, knees[i].Design["hca.vl_buffer_bytes"])
		want := capacity[buf] / (1 - DefaultKneeEpsilon)
		assert.LessOrEqual(t, knees[i].Below, want)
		assert.Greater(t, knees[i].Above, want)
		assert.LessOrEqual(t, knees[i].Above-knees[i].Below, 0.05)
	}
}

func TestKneeSearchOnAStreamFailsClearly(t *testing.T) {
	// The stream has no offered load and reports no accepted_load: the
	// search stops at its first point with a user's error saying so.
	s := expand(t, streamBase+`
sweep:
  workload.offered_load: {search: knee, from: 0.1, to: 1.0}
`)
	outs := s.Run(context.Background(), []int{0}, 1, streamRunner, nil)
	require.Len(t, outs, 1)
	assert.ErrorContains(t, outs[0].Err, "sweep.workload.offered_load: search: knee: the point reports no accepted_load")
}

// TestKneesListsEveryDesign: a design whose every probe failed (here its
// first, at from = 0.1, which stops the search) has no bracket, but it is a
// design of the sweep all the same: Knees lists it, in order, with neither
// end ("no point measured"), so knee.csv has a row for it (empty knee
// columns) and stderr a line. It used to be dropped. The other design's
// bracket is unchanged: capacity 0.5, so 0.5 / 0.98 ≈ 0.51 lies between
// its unsaturated 0.325 and saturated 0.55 (both ends, then 0.55, 0.325).
func TestKneesListsEveryDesign(t *testing.T) {
	const key = "workload.offered_load"
	pt := func(frac, x float64, errText string) report.Point {
		p := report.Point{Params: map[string]any{"workload.hotspot_fraction": frac, key: x}, Error: errText}
		if errText == "" {
			p.Metrics = capped(0.5)(x)
		} else {
			p.Metrics = map[string]any{}
		}
		return p
	}
	points := []report.Point{
		pt(0.25, 0.1, "workload.kind: bitcomp needs a power-of-two number of hosts"),
		pt(0.5, 0.1, ""), pt(0.5, 0.325, ""), pt(0.5, 0.55, ""), pt(0.5, 1.0, ""),
	}
	knees := Knees(points, key, DefaultKneeEpsilon)
	require.Len(t, knees, 2)
	assert.Equal(t, 0.25, knees[0].Design["workload.hotspot_fraction"])
	assert.True(t, math.IsNaN(knees[0].Below))
	assert.True(t, math.IsNaN(knees[0].Above))
	assert.Equal(t, "no point measured", knees[0].Describe(key))
	assert.Equal(t, Knee{Below: 0.325, Above: 0.55}, knees[1].Knee)
}

// TestSaturationSure: 9 digits keep a relative error of at most 5e-9, so a
// threshold 1e-6 away is sure and one 1e-10 away is not; the threshold is
// offered × (1 − epsilon) = 0.5 × 0.98 = 0.49.
func TestSaturationSure(t *testing.T) {
	for _, c := range []struct {
		acc  float64
		sure bool
	}{{0.49 + 1e-6, true}, {0.49 - 1e-6, true}, {0.49 + 1e-10, false}, {0.49, false}, {0.3, true}} {
		assert.Equal(t, c.sure, SaturationSure(map[string]any{AcceptedMetric: c.acc}, 0.5, 0.02), "accepted %v", c.acc)
	}
	assert.False(t, SaturationSure(map[string]any{}, 0.5, 0.02), "no accepted_load: not sure")
}
