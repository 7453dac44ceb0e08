package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTQuantile: t(0.975, df) against the tables every statistics text
// prints (e.g. NIST/SEMATECH e-Handbook, Table 1.3.6.7.2): 12.706 for 1
// degree of freedom, 2.776 for 4, 2.262 for 9, and toward the normal
// quantile 1.960 as df grows. For df = 1 the t distribution is Cauchy, whose
// quantile is tan(π(p − ½)) exactly: tan(0.475π) = 12.7062047…; for df = 2 it
// is (2p − 1)·√(2 / (1 − (2p − 1)²)) = 0.95·√(2 / 0.0975) = 4.30265272…
func TestTQuantile(t *testing.T) {
	assert.InDelta(t, math.Tan(0.475*math.Pi), TQuantile(1), 1e-9)
	assert.InDelta(t, 0.95*math.Sqrt(2/(1-0.95*0.95)), TQuantile(2), 1e-9)
	assert.InDelta(t, 2.7764451051977987, TQuantile(4), 1e-9)
	assert.InDelta(t, 2.2621571627409915, TQuantile(9), 1e-9)
	assert.InDelta(t, 1.9623414611334487, TQuantile(999), 1e-9)
}

// replicaResult is two designs (offered load 0.2 and 0.4) of five replicas
// each (seed 1 … 5); design 0.2 reports goodput {1, 2, 3, 4, 5}, design 0.4
// has a failed replica and one success with a metric another lacks.
func replicaResult() *Result {
	r := &Result{Tool: "hcasim", Version: "test", Config: "rep.yaml", Seed: 1}
	for _, load := range []float64{0.2, 0.4} {
		for seed := 1; seed <= 5; seed++ {
			p := Point{Params: map[string]any{"seed": seed, "workload.offered_load": load}, Metrics: map[string]any{}}
			switch {
			case load == 0.2:
				p.Metrics["goodput_gbps"] = float64(seed)
				p.Metrics["latency_ns"] = map[string]any{"p50": 500.0, "count": 10}
				p.Metrics["drain_complete"] = true
			case seed == 1:
				p.Metrics["goodput_gbps"] = 7.5
			default:
				p.Error = "a failed replica"
			}
			r.Points = append(r.Points, p)
		}
	}
	return r
}

// TestSummariseFromFirstPrinciples: values {1, 2, 3, 4, 5} have mean 3,
// sample variance ((−2)² + (−1)² + 0 + 1² + 2²) / (5 − 1) = 10/4 = 2.5, so
// sd √2.5, and the 95 % half-width t(0.975, 4) · √2.5 / √5 =
// 2.7764451 × 0.70710678 = 1.96324316 (sd √2.5 = 1.58113883) A design with one success has its
// mean and no sd or interval; its failures are counted, not averaged.
func TestSummariseFromFirstPrinciples(t *testing.T) {
	s := Summarise(replicaResult(), nil)
	require.NotNil(t, s)
	require.Len(t, s.Designs, 2)
	d := s.Designs[0]
	assert.Equal(t, map[string]any{"workload.offered_load": 0.2}, d.Params)
	assert.Equal(t, []any{1, 2, 3, 4, 5}, d.Seeds)
	assert.Equal(t, 5, d.N)
	assert.Equal(t, 0, d.Failures)
	g := d.Metrics["goodput_gbps"]
	assert.Equal(t, 3.0, g.Mean)
	require.NotNil(t, g.SD)
	require.NotNil(t, g.CI95)
	assert.InDelta(t, math.Sqrt(2.5), *g.SD, 1e-8)
	assert.InDelta(t, 2.7764451051977987*math.Sqrt(2.5)/math.Sqrt(5), *g.CI95, 1e-8)
	// Equal values: the mean is the value, the spread exactly 0.
	p50 := d.Metrics["latency_ns_p50"]
	assert.Equal(t, 500.0, p50.Mean)
	assert.Equal(t, 0.0, *p50.SD)
	assert.Equal(t, 0.0, *p50.CI95)
	assert.Equal(t, 10.0, d.Metrics["latency_ns_count"].Mean, "an integer metric is a number too")
	assert.NotContains(t, d.Metrics, "drain_complete", "a bool has no mean")

	d = s.Designs[1]
	assert.Equal(t, 1, d.N)
	assert.Equal(t, 4, d.Failures)
	assert.Equal(t, 7.5, d.Metrics["goodput_gbps"].Mean)
	assert.Nil(t, d.Metrics["goodput_gbps"].SD)
	assert.Nil(t, d.Metrics["goodput_gbps"].CI95)

	// One seed value: no replicas, no summary.
	one := &Result{Points: []Point{{Params: map[string]any{"seed": 1, "x": 1}}, {Params: map[string]any{"seed": 1, "x": 2}}}}
	assert.Nil(t, Summarise(one, nil))
}

// TestSummaryFiles: summary.csv has one row per design, the one-success
// design's sd and ci95 empty (not 0); summary.json has them null.
func TestSummaryFiles(t *testing.T) {
	dir := t.TempDir()
	s := Summarise(replicaResult(), nil)
	require.NoError(t, WriteSummaryFiles(dir, s))
	csv, err := os.ReadFile(filepath.Join(dir, SummaryCSV))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "workload.offered_load,n,failures,goodput_gbps_mean,goodput_gbps_sd,goodput_gbps_ci95,"+
		"latency_ns_count_mean,latency_ns_count_sd,latency_ns_count_ci95,latency_ns_p50_mean,latency_ns_p50_sd,latency_ns_p50_ci95", lines[0])
	assert.Equal(t, "0.2,5,0,3,1.58113883,1.96324316,10,0,0,500,0,0", lines[1])
	assert.Equal(t, "0.4,1,4,7.5,,,,,,,,", lines[2])

	b, err := os.ReadFile(filepath.Join(dir, SummaryJSON))
	require.NoError(t, err)
	var back struct {
		Confidence float64 `json:"confidence"`
		Designs    []struct {
			Metrics map[string]map[string]any `json:"metrics"`
		} `json:"designs"`
	}
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, 0.95, back.Confidence)
	assert.Nil(t, back.Designs[1].Metrics["goodput_gbps"]["ci95"])
	assert.Contains(t, back.Designs[1].Metrics["goodput_gbps"], "ci95", "null, not left out")
}

// TestSummaryFromResultsJSON: a summary computed from a result read back
// from its results.json (numbers as json.Number, as merge reads shards) is
// the summary of the result itself, byte for byte.
func TestSummaryFromResultsJSON(t *testing.T) {
	r := replicaResult()
	// Floats results.json would round: the summary must round them too.
	r.Points[0].Metrics["goodput_gbps"] = 1.0000000000123
	var want bytes.Buffer
	require.NoError(t, WriteSummaryCSV(&want, Summarise(r, nil)))

	dir := t.TempDir()
	require.NoError(t, WriteFiles(dir, r))
	part, err := ReadPart(dir)
	require.NoError(t, err)
	var got bytes.Buffer
	require.NoError(t, WriteSummaryCSV(&got, Summarise(part.Result, part.Rows)))
	assert.Equal(t, want.String(), got.String())
}

// TestPlusMinus: the half-width to two significant digits, the mean to
// its decimal place.
func TestPlusMinus(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		st   Stat
		want string
	}{
		{Stat{Mean: 3, SD: f(1.58), CI95: f(1.96324316)}, "3.0 ± 2.0"},
		{Stat{Mean: 391.683647, CI95: f(0.1234)}, "391.68 ± 0.12"},
		{Stat{Mean: 4952.80718, CI95: f(43.7427739)}, "4953 ± 44"},
		{Stat{Mean: 123456, CI95: f(1234)}, "123500 ± 1200"},
		{Stat{Mean: 500, CI95: f(0)}, "500 ± 0"},
		{Stat{Mean: 7.5}, "7.5"},
		// A half-width that rounds up to the next power of ten gains a
		// digit: 0.998 to two significant digits is 1.0 (one decimal),
		// not 1.00, and the mean goes to that place, 531.0; 99.6 is
		// 100, 1.0e2: tens, so the mean 1234.5 is 1230.
		{Stat{Mean: 530.98, CI95: f(0.998)}, "531.0 ± 1.0"},
		{Stat{Mean: 1234.5, CI95: f(99.6)}, "1230 ± 100"},
		{Stat{Mean: 0.5, CI95: f(0.0996)}, "0.50 ± 0.10"},
	} {
		assert.Equal(t, c.want, PlusMinus(c.st))
	}
}

// TestSummaryPlotsDrawErrorBars: a replicated sweep's plots draw one line
// per design (not per seed) with error bars; the seed is in no legend.
func TestSummaryPlotsDrawErrorBars(t *testing.T) {
	r := &Result{}
	for _, buf := range []int{8192, 65536} {
		for _, load := range []float64{0.2, 0.6} {
			for seed := 1; seed <= 3; seed++ {
				r.Points = append(r.Points, Point{Params: map[string]any{"seed": seed, "hca.vl_buffer_bytes": buf, "workload.offered_load": load},
					Metrics: map[string]any{"accepted_load": load - 0.01*float64(seed), "latency_ns": map[string]any{"p50": 100 + float64(seed), "p99": 200 + 10*float64(seed)}}})
			}
		}
	}
	dir := t.TempDir()
	files, err := WriteSummaryPlots(dir, Summarise(r, nil))
	require.NoError(t, err)
	// The buffer is swept too: its latency plot (no throughput plot: the
	// points report no throughput metric).
	assert.Equal(t, []string{"latency-vs-hca.vl_buffer_bytes.svg", LatencyPlot, AcceptedPlot}, files)
	text := svgText(t, filepath.Join(dir, LatencyPlot), "mean ± 95 % CI over seeds", "hca.vl_buffer_bytes=8192 p50", "hca.vl_buffer_bytes=65536 p99")
	assert.NotContains(t, text, "seed=")

	// The plain plots of the same points split designs by seed too.
	plain := t.TempDir()
	_, err = WritePlots(plain, r)
	require.NoError(t, err)
	assert.Contains(t, svgText(t, filepath.Join(plain, LatencyPlot)), "seed=1")

	// The bars are drawn: they reach the axis range. p99 is 210, 220, 230
	// at every design, so the mean is 220, sd 10 and the half-width
	// t(0.975, 2) × 10 / √3 = 4.30265272 × 5.77350269 = 24.8413; the top of
	// the y axis is the top of the bar, 244.84, where the means alone end
	// at 220.
	sp := Summarise(r, nil).points()
	p, _ := linePlot(sp, "workload.offered_load", sweptKeys(sp), []series{{metric: "latency_ns.p99"}})
	require.NotNil(t, p)
	assert.InDelta(t, 220+0.95*math.Sqrt(2/(1-0.95*0.95))*10/math.Sqrt(3), p.Y.Max, 1e-6)
	assert.InDelta(t, 220-0.95*math.Sqrt(2/(1-0.95*0.95))*10/math.Sqrt(3), p.Y.Min, 1e-6)
}
