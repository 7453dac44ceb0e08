package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mergeFixture is a result whose values exercise the formats: a whole
// float (CSV prints 1.234567e+06, JSON 1234567), an integer, a uint64, a
// nested latency object, a string needing JSON escapes, a metric only some
// points have, and a failed point with no metrics.
func mergeFixture() *Result {
	pt := func(buf int, load float64, extra bool) Point {
		m := map[string]any{
			"goodput_gbps":    396.4928 * load,
			"credit_stall_ns": 1234567.0,
			"packets_sent":    buf / 64,
			"events":          uint64(9007199254740993), // 2^53 + 1: exact in JSON, not in a float64
			"latency_ns":      map[string]float64{"p50": 584.94, "p99": 600.125 + load},
			"note":            "a<b & c>d",
		}
		if extra {
			m["only_some"] = 0.1 + 0.2
		}
		return Point{Params: map[string]any{"hca.vl_buffer_bytes": buf, "workload.offered_load": load}, Metrics: m}
	}
	failed := Point{Params: map[string]any{"hca.vl_buffer_bytes": 4096, "workload.offered_load": 0.9}, Metrics: map[string]any{}, Error: "engine exploded"}
	return &Result{Tool: "hcasim", Version: "0.1.0", Config: "x.yaml", Seed: 18446744073709551615, Points: []Point{
		pt(8192, 0.25, false), pt(16384, 0.5, true), failed, pt(65536, 1, false), pt(131072, 0.75, true),
	}}
}

func TestMergedPartsEqualTheWhole(t *testing.T) {
	whole := t.TempDir()
	require.NoError(t, WriteFiles(whole, mergeFixture()))

	// Two parts, points 0, 2, 4 and 1, 3, each written by itself (so each
	// has its own CSV columns: part B lacks nothing, part A's failed point
	// has no metrics).
	all := mergeFixture().Points
	dirs := []string{t.TempDir(), t.TempDir()}
	for part, idx := range [][]int{{0, 2, 4}, {1, 3}} {
		r := mergeFixture()
		r.Points = nil
		for _, i := range idx {
			r.Points = append(r.Points, all[i])
		}
		require.NoError(t, WriteFiles(dirs[part], r))
	}
	a, err := ReadPart(dirs[0])
	require.NoError(t, err)
	b, err := ReadPart(dirs[1])
	require.NoError(t, err)
	merged := *a.Result
	merged.Points = []Point{a.Result.Points[0], b.Result.Points[0], a.Result.Points[1], b.Result.Points[1], a.Result.Points[2]}
	rows := []map[string]string{a.Rows[0], b.Rows[0], a.Rows[1], b.Rows[1], a.Rows[2]}
	out := t.TempDir()
	require.NoError(t, WriteMerged(out, &merged, rows))

	for _, f := range []string{"results.json", "results.csv"} {
		w, err := os.ReadFile(filepath.Join(whole, f))
		require.NoError(t, err)
		m, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
		assert.Equal(t, string(w), string(m), f)
	}
	// The fixture is what the comparison relies on: the CSV does hold the
	// float in exponent form and the JSON the uint64 exactly.
	c, _ := os.ReadFile(filepath.Join(out, "results.csv"))
	assert.Contains(t, string(c), "1.234567e+06")
	j, _ := os.ReadFile(filepath.Join(out, "results.json"))
	assert.Contains(t, string(j), "9007199254740993")
}

func TestReadPartRefusesMismatchedFiles(t *testing.T) {
	dir := t.TempDir()
	r := mergeFixture()
	require.NoError(t, WriteFiles(dir, r))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "results.csv"), []byte("a,b\n1,2\n"), 0o644))
	_, err := ReadPart(dir)
	assert.ErrorContains(t, err, "1 rows for the 5 points of results.json")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"tool": 3}`), 0o644))
	_, err = ReadPart(dir)
	assert.ErrorContains(t, err, "not a results.json")
}

// TestCellsAreWriteCSVs: the cells Cells computes from typed points,
// written by WriteCSVCells, are WriteCSV's bytes — a resumed sweep writes
// its fresh points' rows this way beside the rows it read back.
func TestCellsAreWriteCSVs(t *testing.T) {
	r := mergeFixture()
	var want, got strings.Builder
	require.NoError(t, WriteCSV(&want, r))
	rows := make([]map[string]string, len(r.Points))
	for i, p := range r.Points {
		rows[i] = Cells(p)
	}
	require.NoError(t, WriteCSVCells(&got, r.Points, rows))
	assert.Equal(t, want.String(), got.String())
	assert.Contains(t, got.String(), "engine exploded", "the error column is filled")
}

// TestInterruptionOnlyWhenSet: a finished run's results.json has no
// "interrupted" key (its bytes are what they were before the field
// existed); an interrupted one's has it, after the points.
func TestInterruptionOnlyWhenSet(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteJSON(&b, mergeFixture()))
	assert.NotContains(t, b.String(), "interrupted")
	r := mergeFixture()
	r.Interrupted = &Interruption{Signal: "SIGINT", NotRun: 2, Build: "0.1.0 sha256:x", ConfigHash: "abc"}
	b.Reset()
	require.NoError(t, WriteJSON(&b, r))
	s := b.String()
	assert.Greater(t, strings.Index(s, `"interrupted"`), strings.Index(s, `"points"`))
	assert.Contains(t, s, `"not_run": 2`)
}
