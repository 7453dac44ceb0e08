package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, []string{"throughput-vs-hca.vl_buffer_bytes.svg", LatencyPlot, AcceptedPlot}, files)
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
