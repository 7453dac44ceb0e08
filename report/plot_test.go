package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// loadSweep is a synthetic offered-load × buffer sweep: accepted load is
// min(offered, capacity) with capacity growing with the buffer, latency
// grows with load.
func loadSweep(withLatency bool) *Result {
	r := &Result{Tool: "hcasim"}
	for _, buf := range []int{8192, 65536} {
		capacity := 0.5
		if buf == 65536 {
			capacity = 0.9
		}
		for _, load := range []float64{0.2, 0.4, 0.6, 0.8, 1.0} {
			m := map[string]any{"accepted_load": min(load, capacity), "goodput_gbps": 400 * min(load, capacity)}
			if withLatency {
				m["latency_ns"] = map[string]any{"p50": 100 + 500*load, "p99": 200 + 900*load}
			}
			r.Points = append(r.Points, Point{Params: map[string]any{"hca.vl_buffer_bytes": buf, "workload.offered_load": load, "link.width": "4x"}, Metrics: m})
		}
	}
	r.Points = append(r.Points, Point{Params: map[string]any{"hca.vl_buffer_bytes": 4096, "workload.offered_load": 0.5}, Metrics: map[string]any{}, Error: "a failed point is left out"})
	return r
}

func TestWritePlots(t *testing.T) {
	dir := t.TempDir()
	files, err := WritePlots(dir, loadSweep(true))
	require.NoError(t, err)
	// Both keys swept; link.width has one value, so it is no design.
	// The buffer's latency plot too: the failed point (a buffer the other
	// points lack) leaves a gap, not a hole in the grid.
	assert.Equal(t, []string{"throughput-vs-hca.vl_buffer_bytes.svg", "latency-vs-hca.vl_buffer_bytes.svg", LatencyPlot, AcceptedPlot}, files)
	svgText(t, filepath.Join(dir, files[1]), "Latency vs hca.vl_buffer_bytes", "workload.offered_load=0.6 p99")
	svgText(t, filepath.Join(dir, LatencyPlot), "Latency vs offered load", "hca.vl_buffer_bytes=8192 p50", "hca.vl_buffer_bytes=65536 p99")
	svgText(t, filepath.Join(dir, AcceptedPlot), "Accepted vs offered load", "accepted = offered")
	// Each axis names its unit: bytes of buffer, Gb/s of goodput.
	svgText(t, filepath.Join(dir, files[0]), "Throughput vs buffer depth", "workload.offered_load=0.6",
		"hca.vl_buffer_bytes (bytes)", "goodput (Gb/s) — goodput_gbps")
}

// TestIsPlotFile: every plot WritePlots writes is one IsPlotFile names (the
// CLI removes an earlier run's by that name), and a name outside the scheme
// is not.
func TestIsPlotFile(t *testing.T) {
	files, err := WritePlots(t.TempDir(), loadSweep(true))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		assert.True(t, IsPlotFile(f), f)
	}
	for _, name := range []string{"throughput-vs-mine.svg", "throughput-vs-hca.vl_buffer_bytes.png", "latency.svg",
		"results.json", "notes-latency-vs-offered-load.svg"} {
		assert.False(t, IsPlotFile(name), name)
	}
}

// TestKeyPlots: a numeric swept key no named plot covers gets throughput
// and latency against it, one line per design; a categorical key, the
// seed and sim.* keys get none of their own (they still split designs).
func TestKeyPlots(t *testing.T) {
	r := &Result{}
	for _, entries := range []int{0, 8, 16, 256} {
		for _, alloc := range []string{"islip", "wavefront"} {
			for _, parts := range []int{1, 2} {
				r.Points = append(r.Points, Point{
					Params: map[string]any{"hca.mtt_cache_entries": entries, "switch.allocator": alloc, "sim.partitions": parts},
					// A latency test beside background traffic
					// (examples/adaptive-routing-perftest.yaml): the
					// background's goodput, the pair's latency.
					Metrics: map[string]any{"goodput_gbps": 300 + float64(entries)/4,
						"lat_us": map[string]any{"typical": 2 - float64(entries)/1000, "p99": 3 - float64(entries)/1000}},
				})
			}
		}
	}
	dir := t.TempDir()
	files, err := WritePlots(dir, r)
	require.NoError(t, err)
	assert.Equal(t, []string{"throughput-vs-hca.mtt_cache_entries.svg", "latency-vs-hca.mtt_cache_entries.svg"}, files)
	svgText(t, filepath.Join(dir, files[0]), "Throughput vs hca.mtt_cache_entries", "goodput (Gb/s) — goodput_gbps",
		"sim.partitions=1, switch.allocator=islip", "sim.partitions=2, switch.allocator=wavefront")
	svgText(t, filepath.Join(dir, files[1]), "Latency vs hca.mtt_cache_entries", "latency (µs) — lat_us.typical, lat_us.p99",
		"switch.allocator=wavefront typical", "switch.allocator=islip p99")
	for _, f := range files {
		assert.True(t, IsPlotFile(f), f)
	}

	// Nine key-cache sizes are nine designs against mtt_cache_entries,
	// more lines than maxKeyPlotDesigns: no plot of its own. Against
	// key_cache_entries the two MTT sizes are two: drawn.
	var wide Result
	for _, entries := range []int{0, 8} {
		for d := range maxKeyPlotDesigns + 1 {
			wide.Points = append(wide.Points, Point{
				Params:  map[string]any{"hca.mtt_cache_entries": entries, "hca.key_cache_entries": 16 << d},
				Metrics: map[string]any{"bw_gbps": 300.0},
			})
		}
	}
	files, err = WritePlots(t.TempDir(), &wide)
	require.NoError(t, err)
	assert.Equal(t, []string{"throughput-vs-hca.key_cache_entries.svg"}, files, "2 designs against key_cache_entries; 9 against mtt_cache_entries")

	// Not a grid: a knee search probes other loads per hotspot fraction,
	// so against the fraction each probed load is a "design" of one or
	// two points. No plot of the fraction's own.
	knee := &Result{Points: []Point{
		{Params: map[string]any{"workload.hotspot_fraction": 0.5, "workload.offered_load": 0.1}, Metrics: map[string]any{"goodput_gbps": 100.0}},
		{Params: map[string]any{"workload.hotspot_fraction": 0.5, "workload.offered_load": 0.55}, Metrics: map[string]any{"goodput_gbps": 500.0}},
		{Params: map[string]any{"workload.hotspot_fraction": 0.75, "workload.offered_load": 0.1}, Metrics: map[string]any{"goodput_gbps": 100.0}},
		{Params: map[string]any{"workload.hotspot_fraction": 0.75, "workload.offered_load": 0.325}, Metrics: map[string]any{"goodput_gbps": 300.0}},
	}}
	files, err = WritePlots(t.TempDir(), knee)
	require.NoError(t, err)
	assert.NotContains(t, files, "throughput-vs-workload.hotspot_fraction.svg")
}

func TestWritePlotsSkipsWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	files, err := WritePlots(dir, loadSweep(false))
	require.NoError(t, err)
	assert.NotContains(t, files, LatencyPlot, "no latency metric, no latency plot")
	assert.NoFileExists(t, filepath.Join(dir, LatencyPlot))
	assert.Contains(t, files, AcceptedPlot)

	// One point: nothing swept, nothing drawn.
	one := &Result{Points: []Point{{Params: map[string]any{"workload.offered_load": 0.5}, Metrics: map[string]any{"accepted_load": 0.5}}}}
	files, err = WritePlots(dir, one)
	require.NoError(t, err)
	assert.Empty(t, files)

	// Swept, but every point failed: no plot.
	failed := &Result{Points: []Point{
		{Params: map[string]any{"hca.vl_buffer_bytes": 8192}, Error: "x"},
		{Params: map[string]any{"hca.vl_buffer_bytes": 16384}, Error: "y"},
	}}
	files, err = WritePlots(t.TempDir(), failed)
	require.NoError(t, err)
	assert.Empty(t, files)
}

// svgText parses an SVG file, checks its root element and returns its text
// after checking it holds each of want.
func svgText(t *testing.T, path string, want ...string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec := xml.NewDecoder(f)
	root := ""
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, path)
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
			}
		case xml.CharData:
			text.Write(x)
		}
	}
	assert.Equal(t, "svg", root, path)
	for _, w := range want {
		assert.Contains(t, text.String(), w, path)
	}
	return text.String()
}

// TestDesignStylesDiffer: each design's line is told apart from every
// other's. The palette has 7 colours (plotutil.DefaultColors), so a sweep
// with 8 designs (8 buffer depths, say) drew its 8th line exactly as its
// 1st when colour alone varied; 7 colours × 8 shapes give 56 distinct
// styles, and the first 7 keep the circles earlier plots had.
func TestDesignStylesDiffer(t *testing.T) {
	type style struct {
		colour string
		shape  string
	}
	seen := map[style]int{}
	for ci := 0; ci < 56; ci++ {
		c, g := designStyle(ci)
		s := style{fmt.Sprint(c), fmt.Sprintf("%T", g)}
		if prev, ok := seen[s]; ok {
			t.Errorf("designs %d and %d are both drawn %v", prev, ci, s)
		}
		seen[s] = ci
	}
	_, g := designStyle(0)
	assert.IsType(t, draw.CircleGlyph{}, g)
}

// berSweep is a synthetic link.ber × offered-load sweep: each 4 KiB packet
// (33,104 wire bits) is lost with p = 1 − (1 − ber)^33104, so goodput is
// 400 × load × (1 − p) Gb/s; ber 0 is the error-free level.
func berSweep() *Result {
	r := &Result{Tool: "hcasim"}
	for _, load := range []float64{0.3, 0.6} {
		for _, ber := range []float64{0, 1e-8, 1e-7, 1e-6, 1e-5} {
			lost := 1 - math.Pow(1-ber, 33104)
			r.Points = append(r.Points, Point{Params: map[string]any{"link.ber": ber, "workload.offered_load": load},
				Metrics: map[string]any{"goodput_gbps": 400 * load * (1 - lost), "accepted_load": load * (1 - lost)}})
		}
	}
	return r
}

// TestBERPlot: a sweep over link.ber draws throughput against it on a log
// axis (the rates span decades; on a linear one every point below 1e-6
// would sit on the y axis), one line per design, with each design's
// error-free point — which no log axis can place — as a dashed level in
// the legend. Before, a link.ber sweep drew no plot at all.
func TestBERPlot(t *testing.T) {
	dir := t.TempDir()
	files, err := WritePlots(dir, berSweep())
	require.NoError(t, err)
	assert.Contains(t, files, BERPlot)
	assert.True(t, IsPlotFile(BERPlot))
	svgText(t, filepath.Join(dir, BERPlot), "Throughput vs link bit error rate", "log scale — link.ber",
		"goodput (Gb/s) — goodput_gbps", "workload.offered_load=0.3", "workload.offered_load=0.6 link.ber = 0")

	// The axis is logarithmic, and the lossy points are drawn at their rates.
	p, err := berPlot(berSweep().Points, []string{"link.ber", "workload.offered_load"})
	require.NoError(t, err)
	require.NotNil(t, p)
	assert.IsType(t, plot.LogScale{}, p.X.Scale)
	assert.Equal(t, 1e-8, p.X.Min)
	assert.Equal(t, 1e-5, p.X.Max)
	assert.Equal(t, 0.0, p.Y.Min)
	// The top leaves room over the highest level, 400 × 0.6 = 240 Gb/s.
	assert.GreaterOrEqual(t, p.Y.Max, 240.0)

	// A perftest sweep has no goodput: its bandwidth is drawn.
	r := &Result{}
	for _, ber := range []float64{1e-7, 1e-6} {
		r.Points = append(r.Points, Point{Params: map[string]any{"link.ber": ber}, Metrics: map[string]any{"bw_gbps": 90.0}})
	}
	files, err = WritePlots(t.TempDir(), r)
	require.NoError(t, err)
	assert.Equal(t, []string{BERPlot}, files)
}

// TestDecadeTicks: a log axis of error rates is labelled at each power of
// ten as a config writes it, with minor ticks at 2 … 9 times it.
func TestDecadeTicks(t *testing.T) {
	ticks := decadeTicks{}.Ticks(1e-8, 3e-5)
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"1e-08", "1e-07", "1e-06", "1e-05"}, labels)
	// 1e-8 … 9e-6 is 3 decades of 9 ticks, then 1e-5, 2e-5, 3e-5: 30.
	assert.Len(t, ticks, 30)
	assert.Equal(t, 3e-5, ticks[len(ticks)-1].Value)
}

// TestBufferPlotOfPerftestAndCollectives: a buffer-depth sweep of a
// perftest reports bw_gbps and a collective's busbw_gbps, neither goodput
// nor throughput: the buffer plot draws the first of the throughput
// metrics the points report, as a key's own plot does, where it drew none
// (sweeping hca.vl_buffer_bytes under write_bw wrote no plot at all, while
// any other numeric key got one).
func TestBufferPlotOfPerftestAndCollectives(t *testing.T) {
	for _, metric := range []string{"bw_gbps", "busbw_gbps"} {
		r := &Result{}
		for _, buf := range []int{8192, 32768, 131072} {
			r.Points = append(r.Points, Point{Params: map[string]any{"hca.vl_buffer_bytes": buf},
				Metrics: map[string]any{metric: 100 + float64(buf)/1024}})
		}
		dir := t.TempDir()
		files, err := WritePlots(dir, r)
		require.NoError(t, err)
		require.Equal(t, []string{"throughput-vs-hca.vl_buffer_bytes.svg"}, files, metric)
		svgText(t, filepath.Join(dir, files[0]), "Throughput vs buffer depth", "hca.vl_buffer_bytes (bytes)",
			strings.TrimSuffix(metric, "_gbps")+" (Gb/s) — "+metric)
	}
}

// TestBufferLatencyPlotWithoutThroughput: a buffer sweep whose points
// report latency and no throughput metric (a multicast run:
// latency_ns, member_accepted_load, no goodput_gbps; the shipped
// examples/multicast-overlap.yaml) still gets its latency-vs-KEY.svg, as
// docs/sweeps.md's table promises for a key ending in buffer_bytes; only
// the throughput plot, which has nothing to draw, is left out.
func TestBufferLatencyPlotWithoutThroughput(t *testing.T) {
	r := &Result{}
	for i, buf := range []int{4224, 8448, 16896} {
		r.Points = append(r.Points, Point{Params: map[string]any{"switch.vl_buffer_bytes": buf},
			Metrics: map[string]any{"member_accepted_load": 0.5,
				"latency_ns": map[string]any{"p50": 500.0, "p99": 3000.0 / float64(i+1)}}})
	}
	dir := t.TempDir()
	files, err := WritePlots(dir, r)
	require.NoError(t, err)
	require.Equal(t, []string{"latency-vs-switch.vl_buffer_bytes.svg"}, files)
	svgText(t, filepath.Join(dir, files[0]), "Latency vs switch.vl_buffer_bytes", "latency (ns) — latency_ns.p50, latency_ns.p99")
	assert.NoFileExists(t, filepath.Join(dir, "throughput-vs-switch.vl_buffer_bytes.svg"))
}

// TestLatencyTestSweepDrawsNoThroughput: a sweep of perftest latency tests
// alone (every point reports lat_us; examples/cq-context-cache.yaml,
// examples/cq-events.yaml) draws its latency against the key and no
// throughput-vs-KEY.svg of bw_gbps, the number perftest does not print
// for a latency test and the CLI's table leaves out; against a buffer key
// likewise. A bandwidth test's point among them (no lat_us) brings the
// throughput plot back: bw_gbps is then a bandwidth.
func TestLatencyTestSweepDrawsNoThroughput(t *testing.T) {
	sweep := func(key string, values []int, withBW bool) *Result {
		r := &Result{}
		for _, v := range values {
			r.Points = append(r.Points, Point{Params: map[string]any{key: v, "workload.test": "send_lat"},
				Metrics: map[string]any{"bw_gbps": 0.3, "lat_us": map[string]any{"typical": 0.84, "p99": 0.84 + 0.01*float64(v)}}})
			if withBW {
				r.Points = append(r.Points, Point{Params: map[string]any{key: v, "workload.test": "send_bw"},
					Metrics: map[string]any{"bw_gbps": 90.0}})
			}
		}
		return r
	}
	for _, c := range []struct {
		key    string
		values []int
	}{{"hca.cq_cache_entries", []int{0, 1, 2}}, {"hca.vl_buffer_bytes", []int{8192, 16384}}} {
		files, err := WritePlots(t.TempDir(), sweep(c.key, c.values, false))
		require.NoError(t, err)
		assert.Equal(t, []string{"latency-vs-" + c.key + ".svg"}, files, c.key)
		// A replicated sweep's plots draw the designs' means, whose
		// metrics are flat (lat_us_typical): no throughput plot either.
		var seeds Result
		for seed := 1; seed <= 3; seed++ {
			for _, pt := range sweep(c.key, c.values, false).Points {
				pt.Params["seed"] = seed
				seeds.Points = append(seeds.Points, pt)
			}
		}
		files, err = WriteSummaryPlots(t.TempDir(), Summarise(&seeds, nil))
		require.NoError(t, err)
		assert.Equal(t, []string{"latency-vs-" + c.key + ".svg"}, files, "replicated, %s", c.key)
		dir := t.TempDir()
		files, err = WritePlots(dir, sweep(c.key, c.values, true))
		require.NoError(t, err)
		require.Contains(t, files, "throughput-vs-"+c.key+".svg", c.key)
		svgText(t, filepath.Join(dir, "throughput-vs-"+c.key+".svg"), "bw (Gb/s) — bw_gbps", "workload.test=send_bw")
	}
}

// TestSizeSweepPlots: a message-size sweep (an all-reduce's algorithms from
// 1 KiB to 16 MiB) labels its sizes in binary units and, when the latency
// spans 100× or more (the rule the offered-load plot follows), draws it on
// a log axis; a narrower span stays linear.
func TestSizeSweepPlots(t *testing.T) {
	sweep := func(span float64) *Result {
		r := &Result{}
		for i, size := range []int{1024, 16384, 1 << 20, 16 << 20} {
			for _, alg := range []string{"ring", "rabenseifner"} {
				r.Points = append(r.Points, Point{
					Params:  map[string]any{"workload.size": size, "workload.algorithm": alg},
					Metrics: map[string]any{"busbw_gbps": 10.0 * float64(i+1), "time_us": 10 * math.Pow(span, float64(i)/3)},
				})
			}
		}
		return r
	}
	dir := t.TempDir()
	files, err := WritePlots(dir, sweep(150))
	require.NoError(t, err)
	require.Equal(t, []string{"throughput-vs-workload.size.svg", "latency-vs-workload.size.svg"}, files)
	svgText(t, filepath.Join(dir, files[0]), "1 KiB", "16 KiB", "1 MiB", "16 MiB", "workload.algorithm=rabenseifner")
	svgText(t, filepath.Join(dir, files[1]), "latency (µs, log scale) — time_us")
	dir = t.TempDir()
	files, err = WritePlots(dir, sweep(50))
	require.NoError(t, err)
	svgText(t, filepath.Join(dir, files[1]), "latency (µs) — time_us")
}

func TestByteLabel(t *testing.T) {
	for v, want := range map[float64]string{
		512: "512", 1024: "1 KiB", 1536: "1536", 4160: "4160", 65536: "64 KiB",
		3 << 20: "3 MiB", 1 << 30: "1 GiB", 0: "0",
	} {
		assert.Equal(t, want, byteLabel(v), "%v", v)
	}
}

// TestBackgroundLatencyPlotsSayWhose: a perftest latency test beside
// workload.background traffic (configs/ndr.yaml: ib_write_lat across a
// spine, uniform background, buffer × offered load) reports the pair's
// lat_us and the background's packet latency under the synthetic name
// latency_ns; the plots draw latency_ns, so their titles and axes say it
// is the background's, where they used to read as the test's own
// ("Latency vs offered load", "latency (ns)"). Synthetic points (no
// lat_us) keep the plain wording. Labels only: the points, and so
// results.json and results.csv, are not touched.
func TestBackgroundLatencyPlotsSayWhose(t *testing.T) {
	perftest := &Result{}
	for _, buf := range []int{4160, 16640} {
		for _, load := range []float64{0.2, 0.5, 0.8} {
			perftest.Points = append(perftest.Points, Point{
				Params: map[string]any{"switch.vl_buffer_bytes": buf, "workload.offered_load": load},
				Metrics: map[string]any{"background_hosts": 14, "accepted_load": load, "goodput_gbps": 1000 * load,
					"lat_us":     map[string]any{"typical": 1.17, "p99": 1.3},
					"latency_ns": map[string]any{"p50": 500 + 100*load, "p99": 700 + 300*load}}})
		}
	}
	dir := t.TempDir()
	files, err := WritePlots(dir, perftest)
	require.NoError(t, err)
	require.Contains(t, files, LatencyPlot)
	require.Contains(t, files, "latency-vs-switch.vl_buffer_bytes.svg")
	svgText(t, filepath.Join(dir, LatencyPlot), "Background latency vs offered load",
		"background latency (ns) — latency_ns.p50, latency_ns.p99")
	svgText(t, filepath.Join(dir, "latency-vs-switch.vl_buffer_bytes.svg"), "Background latency vs switch.vl_buffer_bytes",
		"background latency (ns) — latency_ns.p50, latency_ns.p99")

	// The synthetic sweep: latency_ns is the traffic's own.
	dir = t.TempDir()
	_, err = WritePlots(dir, loadSweep(true))
	require.NoError(t, err)
	svgText(t, filepath.Join(dir, LatencyPlot), "Latency vs offered load", "latency (ns) — latency_ns.p50, latency_ns.p99")
	b, err := os.ReadFile(filepath.Join(dir, LatencyPlot))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "ackground", "a synthetic run's latency is no background's")
}
