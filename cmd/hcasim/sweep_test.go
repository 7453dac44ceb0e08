package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
)

// sweepConfig is the buffer-sizing question of docs/sweeps.md, shrunk: an
// NDR 4x stream over 2 m copper and 100 m fibre, three receive buffers,
// measured for 2 µs (6 points, a few milliseconds each).
const sweepConfig = `
seed: 3
link: {generation: NDR, width: 4x, length_m: 2, medium: fibre, mtu: 4096}
hca: {vl_buffer_bytes: 65536}
switch: {vls: 1}
topology: {kind: back-to-back}
workload: {kind: stream, size: 4096, saturate: true, warmup_ns: 500, measure_ns: 2000}
sweep:
  hca.vl_buffer_bytes: [16384, 32768, 65536]
  link.length_m: [2, 100]
`

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestSweepWritesResultsInPointOrder(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	out := t.TempDir()
	code, stdout, stderr := run("-config", cfg, "--out", out, "--jobs", "2", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var res report.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Points, 6)
	// Keys sorted, the last fastest: buffer slowest, length fastest.
	var got []string
	for _, p := range res.Points {
		got = append(got, fmt.Sprintf("%v/%v", p.Params["hca.vl_buffer_bytes"], p.Params["link.length_m"]))
		assert.NotContains(t, p.Metrics, "wall_s", "wall-clock time stays out of sweep results")
	}
	assert.Equal(t, []string{"16384/2", "16384/100", "32768/2", "32768/100", "65536/2", "65536/100"}, got)
	assert.Equal(t, uint64(3), res.Seed, "the result reports the base seed")
	assert.Equal(t, stdout, readFile(t, filepath.Join(out, "results.json")))
	assert.FileExists(t, filepath.Join(out, "results.csv"))
	assert.NoFileExists(t, filepath.Join(out, sweep.ManifestFile), "an unsharded run is no shard")
	assert.Contains(t, stderr, "sweep: 6 points")
}

func TestSweepDoesNotDependOnJobs(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	var outs []string
	for _, jobs := range []string{"1", "4"} {
		out := t.TempDir()
		code, _, stderr := run("-config", cfg, "--out", out, "--jobs", jobs, "--quiet")
		require.Equal(t, 0, code, stderr)
		outs = append(outs, readFile(t, filepath.Join(out, "results.json"))+readFile(t, filepath.Join(out, "results.csv")))
	}
	assert.Equal(t, outs[0], outs[1])
}

func TestSweepPointEqualsPointRunAlone(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	t.Chdir(t.TempDir()) // the sweep writes hcasim-out/default here
	code, stdout, stderr := run("-config", cfg, "--format", "json", "--quiet")
	require.Equal(t, 0, code, stderr)
	var whole report.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &whole))
	// Point 3 (32768 bytes, 100 m), alone: both swept keys pinned.
	code, stdout, stderr = run("-config", cfg, "--format", "json", "--quiet",
		"--set", "hca.vl_buffer_bytes=32768", "--set", "link.length_m=100")
	require.Equal(t, 0, code, stderr)
	var alone report.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &alone))
	require.Len(t, alone.Points, 1)
	a, err := json.Marshal(alone.Points[0])
	require.NoError(t, err)
	w, err := json.Marshal(whole.Points[3])
	require.NoError(t, err)
	assert.Equal(t, string(w), string(a))

	// Pinned to one point, the sweep can be traced.
	trace := filepath.Join(t.TempDir(), "point.trace")
	code, _, stderr = run("-config", cfg, "--quiet", "--trace", trace,
		"--set", "hca.vl_buffer_bytes=32768", "--set", "link.length_m=100")
	require.Equal(t, 0, code, stderr)
	assert.NotEmpty(t, readFile(t, trace))
}

// TestStaleOutputsRemoved: a run into an --out that holds an earlier run's
// outputs removes the files of hcasim's naming it does not write itself
// (a knee.csv, a summary.csv or summary.json, plots, a shard.json), so
// nothing there reads as this run's that is not; every other file stays,
// among them a user's copy of a plot renamed to keep it
// (throughput-vs-link.ber.old.svg: "link.ber.old" is no config key, so no
// run draws that file).
func TestStaleOutputsRemoved(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	earlier := []string{KneeFile, report.SummaryCSV, report.SummaryJSON, report.LatencyPlot, report.AcceptedPlot, "throughput-vs-switch.vl_buffer_bytes.svg", sweep.ManifestFile}
	mine := []string{"notes.txt", "throughput-vs-mine.svg", "knee.csv.bak", "results.txt",
		"throughput-vs-link.ber.old.svg", "latency-vs-hca.vl_buffer_bytes.v1.svg", "throughput-vs-run.2.svg"}
	fill := func(dir string) {
		for _, f := range append(append([]string{}, earlier...), mine...) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("earlier\n"), 0o644))
		}
		require.NoError(t, os.Mkdir(filepath.Join(dir, "latency-vs-offered-load.svg.d"), 0o755))
	}
	kept := func(t *testing.T, dir string) {
		for _, f := range mine {
			assert.FileExists(t, filepath.Join(dir, f), "not a file hcasim writes")
		}
		assert.DirExists(t, filepath.Join(dir, "latency-vs-offered-load.svg.d"))
	}

	t.Run("sweep", func(t *testing.T) {
		out := t.TempDir()
		fill(out)
		code, _, stderr := run("-config", cfg, "--out", out, "--quiet")
		require.Equal(t, 0, code, stderr)
		for _, f := range earlier {
			assert.NoFileExists(t, filepath.Join(out, f), "left from the earlier run")
		}
		kept(t, out)
		for _, f := range []string{"results.json", "results.csv", "throughput-vs-hca.vl_buffer_bytes.svg"} {
			assert.FileExists(t, filepath.Join(out, f), "written by this run")
		}
	})
	t.Run("shard", func(t *testing.T) {
		out := t.TempDir()
		fill(out)
		code, _, stderr := run("-config", cfg, "--out", out, "--quiet", "--shard", "0/2")
		require.Equal(t, 0, code, stderr)
		for _, f := range earlier[:4] {
			assert.NoFileExists(t, filepath.Join(out, f), "a shard draws no plots and finds no knee")
		}
		assert.NotEqual(t, "earlier\n", readFile(t, filepath.Join(out, sweep.ManifestFile)))
		kept(t, out)
	})
	t.Run("merge", func(t *testing.T) {
		var shards []string
		for i := range 2 {
			d := t.TempDir()
			code, _, stderr := run("-config", cfg, "--out", d, "--quiet", "--shard", fmt.Sprintf("%d/2", i))
			require.Equal(t, 0, code, stderr)
			shards = append(shards, d)
		}
		out := t.TempDir()
		fill(out)
		code, _, stderr := run("merge", shards[0], shards[1], "--out", out, "--quiet")
		require.Equal(t, 0, code, stderr)
		for _, f := range earlier {
			assert.NoFileExists(t, filepath.Join(out, f), "left from the earlier run")
		}
		assert.FileExists(t, filepath.Join(out, "throughput-vs-hca.vl_buffer_bytes.svg"))
		kept(t, out)
	})
	t.Run("a single point that fails", func(t *testing.T) {
		// Its results.json says so, in place of the earlier run's results.
		out := t.TempDir()
		fill(out)
		require.NoError(t, os.WriteFile(filepath.Join(out, "results.json"), []byte("earlier\n"), 0o644))
		code, stdout, stderr := run("-config", "edr.yaml", "--set", "sim.max_time_ns=1000", "--out", out)
		assert.Equal(t, 2, code, stderr)
		assert.Empty(t, stdout, "the one line on stderr is the answer")
		res, err := report.ReadJSON(filepath.Join(out, "results.json"))
		require.NoError(t, err)
		require.Len(t, res.Points, 1)
		assert.Contains(t, res.Points[0].Error, "sim.max_time_ns")
		for _, f := range earlier {
			assert.NoFileExists(t, filepath.Join(out, f))
		}
		kept(t, out)
	})
}

func TestShardsMergeIntoTheWholeRun(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	whole := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", whole, "--quiet")
	require.Equal(t, 0, code, stderr)

	// Four shards of six points: 0/4 runs points 0 and 4, 1/4 runs 1 and
	// 5, 2/4 and 3/4 one each. Given to merge out of order.
	var dirs []string
	for i := 0; i < 4; i++ {
		d := t.TempDir()
		code, _, stderr := run("-config", cfg, "--shard", fmt.Sprintf("%d/4", i), "--out", d, "--quiet", "--jobs", "1")
		require.Equal(t, 0, code, stderr)
		assert.FileExists(t, filepath.Join(d, sweep.ManifestFile))
		assert.NoFileExists(t, filepath.Join(d, "throughput-vs-hca.vl_buffer_bytes.svg"), "merge draws the plots")
		dirs = append(dirs, d)
	}
	m, err := sweep.ReadManifest(dirs[1])
	require.NoError(t, err)
	assert.Equal(t, []int{1, 5}, m.PointDesigns)

	merged := t.TempDir()
	code, stdout, stderr := run("merge", dirs[2], dirs[0], dirs[3], dirs[1], "--out", merged)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "16384")
	for _, f := range []string{"results.json", "results.csv"} {
		assert.Equal(t, readFile(t, filepath.Join(whole, f)), readFile(t, filepath.Join(merged, f)), f)
	}
	assert.Equal(t, readFile(t, filepath.Join(whole, "throughput-vs-hca.vl_buffer_bytes.svg")),
		readFile(t, filepath.Join(merged, "throughput-vs-hca.vl_buffer_bytes.svg")))

	// An incomplete set of shards is refused, naming what is missing.
	code, _, stderr = run("merge", dirs[0], dirs[1], dirs[2])
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "missing shards 3/4")
	// So is a directory that is no shard.
	code, _, stderr = run("merge", whole)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "not the output of an hcasim --shard run")
	// A mistyped directory, or a file, says so (it said "no shard.json").
	code, _, stderr = run("merge", filepath.Join(whole, "nope"))
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim: merge: "+filepath.Join(whole, "nope")+": no such directory (give the --out directories of the hcasim --shard runs)\n", stderr)
	code, _, stderr = run("merge", filepath.Join(whole, "results.json"))
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim: merge: "+filepath.Join(whole, "results.json")+": a file, not a directory (give the --out directories of the hcasim --shard runs)\n", stderr)
	// And shards of a different sweep.
	other := t.TempDir()
	code, _, stderr = run("-config", cfg, "--shard", "3/4", "--out", other, "--quiet", "--set", "workload.size=2048")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = run("merge", dirs[0], dirs[1], dirs[2], other)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "from a different sweep")
}

// TestEmptyShards: with more shards than designs (8 of a 6-point sweep),
// shards 6/8 and 7/8 run nothing. They print no table (it was a header of
// one "error" column), say on stderr why they are empty, and still write
// shard.json, so merge takes all eight and gives the unsharded results.
func TestEmptyShards(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	whole := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", whole, "--quiet")
	require.Equal(t, 0, code, stderr)
	var dirs []string
	for i := 0; i < 8; i++ {
		d := t.TempDir()
		code, stdout, stderr := run("-config", cfg, "--shard", fmt.Sprintf("%d/8", i), "--out", d, "--jobs", "1")
		require.Equal(t, 0, code, stderr)
		dirs = append(dirs, d)
		if i < 6 {
			assert.Contains(t, stdout, "│", "shard %d/8 ran design %d: a table", i, i)
			assert.NotContains(t, stderr, "holds no design")
			continue
		}
		assert.Empty(t, stdout, "shard %d/8 ran nothing: no table", i)
		assert.Contains(t, stderr, fmt.Sprintf("hcasim: sweep: shard %d/8 holds no design: the sweep has 6, one each in shards 0…5; merge takes this empty shard too\n", i))
	}
	merged := t.TempDir()
	code, _, stderr = run(append(append([]string{"merge"}, dirs...), "--out", merged, "--quiet")...)
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"results.json", "results.csv"} {
		assert.Equal(t, readFile(t, filepath.Join(whole, f)), readFile(t, filepath.Join(merged, f)), f)
	}
}

func TestFailingPointIsWrittenAndTheOthersRun(t *testing.T) {
	saved := fabricRun
	defer func() { fabricRun = saved }()
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		if l.Config.HCA.VLBufferBytes == 32768 && l.Config.Link.LengthM == 100 {
			return nil, fmt.Errorf("engine exploded")
		}
		return saved(l, o)
	}
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	t.Chdir(t.TempDir()) // the last run, without --out, writes hcasim-out/default here
	out := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", out, "--quiet")
	assert.Equal(t, 1, code, "an internal failure exits 1")
	assert.Contains(t, stderr, "sweep: 1 of 6 points failed")
	assert.Contains(t, stderr, "engine exploded")
	res, err := report.ReadJSON(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.Len(t, res.Points, 6)
	for i, p := range res.Points {
		if i == 3 {
			assert.Equal(t, "engine exploded", p.Error)
			assert.Empty(t, p.Metrics)
			continue
		}
		assert.Empty(t, p.Error, "point %d", i)
		assert.NotNil(t, p.Metrics["goodput_gbps"], "point %d", i)
	}

	// Sharded, the failure is in its shard; merged, it is where the whole
	// run put it, and merge exits 1.
	var dirs []string
	for i := 0; i < 2; i++ {
		d := t.TempDir()
		code, _, _ := run("-config", cfg, "--shard", fmt.Sprintf("%d/2", i), "--out", d, "--quiet")
		// Shard 1/2 runs points 1, 3, 5: it has the failure and exits 1.
		assert.Equal(t, i, code, "shard %d/2", i)
		dirs = append(dirs, d)
	}
	merged := t.TempDir()
	code, _, stderr = run("merge", dirs[0], dirs[1], "--out", merged, "--quiet")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "merge: 1 of 6 points failed")
	for _, f := range []string{"results.json", "results.csv"} {
		assert.Equal(t, readFile(t, filepath.Join(out, f)), readFile(t, filepath.Join(merged, f)), f)
	}

	// A user's failure (a valid config this build cannot run) exits 2.
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		if l.Config.HCA.VLBufferBytes == 16384 {
			return nil, &fabric.UnsupportedError{Msg: "workload.kind: not here"}
		}
		return saved(l, o)
	}
	code, _, stderr = run("-config", cfg, "--quiet", "--format", "csv")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "2 of 6 points failed")
}

func TestSweepUserErrors(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	single := writeFile(t, "single.yaml", strings.Split(sweepConfig, "sweep:")[0])
	bad := writeFile(t, "bad.yaml", sweepConfig+"  link.widht: [4x]\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-config", bad}, "sweep.link.widht: not a config key (did you mean link.width?)"},
		{[]string{"-config", cfg, "--set", "sweep.link.width=[4x, 5x]"}, `sweep.link.width: "5x" is not a width`},
		{[]string{"-config", cfg, "--shard", "2/2", "--out", t.TempDir()}, `--shard: "2/2" is out of range`},
		{[]string{"-config", cfg, "--shard", "0/2"}, "--shard 0/2: needs --out DIR"},
		{[]string{"-config", single, "--shard", "0/2", "--out", t.TempDir()}, "has no sweep: section to shard"},
		{[]string{"-config", cfg, "--trace", filepath.Join(t.TempDir(), "t")}, "pin the sweep's keys with --set"},
		{[]string{"merge"}, "merge: no directories given"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			code, _, stderr := run(tt.args...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tt.want)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		})
	}
}

func TestSweepPlotsAreSVG(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	out := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", out, "--quiet")
	require.Equal(t, 0, code, stderr)
	// Buffer (3 depths) and length (2) swept, no offered load: throughput
	// and latency against the buffer (one line per length), and against
	// the length (one line per depth).
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	var svgs []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".svg") {
			svgs = append(svgs, e.Name())
		}
	}
	assert.Equal(t, []string{"latency-vs-hca.vl_buffer_bytes.svg", "latency-vs-link.length_m.svg", "throughput-vs-hca.vl_buffer_bytes.svg", "throughput-vs-link.length_m.svg"}, svgs)
	assertSVG(t, filepath.Join(out, "latency-vs-hca.vl_buffer_bytes.svg"), "Latency vs hca.vl_buffer_bytes", "link.length_m=100 p99")
	assertSVG(t, filepath.Join(out, "throughput-vs-hca.vl_buffer_bytes.svg"), "Throughput vs buffer depth", "link.length_m=100")
	assertSVG(t, filepath.Join(out, "throughput-vs-link.length_m.svg"), "Throughput vs link.length_m", "hca.vl_buffer_bytes=65536")
	assertSVG(t, filepath.Join(out, "latency-vs-link.length_m.svg"), "Latency vs link.length_m", "hca.vl_buffer_bytes=16384 p99")
}

// assertSVG parses the file as XML, checks its root is <svg> and that its
// text holds each of want.
func assertSVG(t *testing.T, path string, want ...string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec := xml.NewDecoder(f)
	var root string
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
			}
		case xml.CharData:
			text.Write(x)
		}
	}
	assert.Equal(t, "svg", root)
	for _, w := range want {
		assert.Contains(t, text.String(), w)
	}
}

// kneeConfig is hotspot traffic on one switch with 4 hosts: each of hosts
// 1..3 sends a fraction h of its packets to host 0, so host 0's link
// carries 3·h·L and saturates at L = 1/(3h): 2/3 for h = 0.5, 4/9 for
// h = 0.75.
const kneeConfig = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, mtu: 4096}
switch: {vls: 1}
topology: {kind: single-switch, hosts: 4}
workload: {kind: hotspot, hotspot_fraction: 0.5, size: 1024, warmup_ns: 2000, measure_ns: 10000, drain_ns: 20000}
sweep:
  workload.hotspot_fraction: [0.5, 0.75]
  workload.offered_load: {search: knee, from: 0.1, to: 1.0, tolerance: 0.02}
`

func TestKneeSearchEndToEnd(t *testing.T) {
	cfg := writeFile(t, "knee.yaml", kneeConfig)
	whole := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", whole)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 2, strings.Count(stderr, "knee between"), stderr)
	knees := readFile(t, filepath.Join(whole, KneeFile))
	lines := strings.Split(strings.TrimSpace(knees), "\n")
	require.Len(t, lines, 3, knees)
	assert.Equal(t, "workload.hotspot_fraction,search_key,epsilon,knee_below,knee_above", lines[0])
	for i, h := range []float64{0.5, 0.75} {
		var frac, eps, below, above float64
		var key string
		_, err := fmt.Sscanf(strings.ReplaceAll(lines[i+1], ",", " "), "%g %s %g %g %g", &frac, &key, &eps, &below, &above)
		require.NoError(t, err, lines[i+1])
		assert.Equal(t, h, frac)
		assert.LessOrEqual(t, above-below, 0.02, "bisected to the tolerance")
		// The hot link saturates at L = 1/(3h); ε and the finite window
		// put the measured knee a little above it, never below: under it
		// every link has headroom.
		sat := 1 / (3 * h)
		assert.Greater(t, above, sat, "h=%v", h)
		assert.Less(t, below, sat+0.1, "h=%v", h)
	}
	for _, f := range []string{report.LatencyPlot, report.AcceptedPlot} {
		assert.FileExists(t, filepath.Join(whole, f))
	}

	// Sharded by design (each shard runs whole searches), merged: the same
	// files.
	var dirs []string
	for i := 0; i < 2; i++ {
		d := t.TempDir()
		code, _, stderr := run("-config", cfg, "--shard", fmt.Sprintf("%d/2", i), "--out", d, "--quiet")
		require.Equal(t, 0, code, stderr)
		dirs = append(dirs, d)
	}
	merged := t.TempDir()
	code, _, stderr = run("merge", dirs[1], dirs[0], "--out", merged, "--quiet")
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"results.json", "results.csv", KneeFile} {
		assert.Equal(t, readFile(t, filepath.Join(whole, f)), readFile(t, filepath.Join(merged, f)), f)
	}
}

// TestDocsSizingAnswer runs the config docs/sweeps.md walks through and
// checks its answer: the smallest receive buffer that keeps a 4 KiB stream
// at line rate over 100 m of NDR fibre.
func TestDocsSizingAnswer(t *testing.T) {
	doc := readFile(t, filepath.Join("..", "..", "docs", "sweeps.md"))
	_, rest, ok := strings.Cut(doc, "```yaml\n")
	require.True(t, ok, "docs/sweeps.md has a yaml block")
	text, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	cfg := writeFile(t, "buffer-sizing.yaml", text)
	t.Chdir(t.TempDir()) // the sweep writes hcasim-out/ndr-buffer-sizing here

	// The credit loop from the doc, derived from the link model: a packet
	// leaves in t_pkt, its head lands after FEC + flight, the receiver frees
	// it at its tail and the 6-byte flow-control packet comes back over the
	// same latency. The sender needs credits for every packet it can start
	// in that round trip, each ⌈wire/64⌉ credits.
	l, err := fabric.Load([]byte(text), []string{"link.length_m=100"})
	require.NoError(t, err)
	timing := l.Config.Link.Timing(100)
	wire := (&ib.Packet{Opcode: ib.SendOnly, PayloadLen: l.Config.Workload.Size}).WireBytes()
	tPkt := timing.Serialization(wire)
	rtt := tPkt + 2*timing.Latency() + timing.Serialization(ib.FlowControlBytes)
	inFlight := int((rtt + tPkt - 1) / tPkt)
	need := inFlight * ib.Credits(wire) * ib.CreditBytes
	assert.Equal(t, 58240, need, "the doc's answer: %d packets of %d bytes in a %d ps round trip", inFlight, wire, rtt)

	// One credit short stalls the sender; the answer does not.
	code, stdout, stderr := run("-config", cfg, "--format", "json", "--quiet", "--set", "link.length_m=100",
		"--set", fmt.Sprintf("sweep.hca.vl_buffer_bytes=[%d, %d]", need-ib.CreditBytes, need))
	require.Equal(t, 0, code, stderr)
	var res report.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Points, 2)
	assert.Greater(t, res.Points[0].Metrics["credit_stall_ns"], 0.0)
	assert.Equal(t, 0.0, res.Points[1].Metrics["credit_stall_ns"])
	assert.Less(t, res.Points[0].Metrics["goodput_gbps"], res.Points[1].Metrics["goodput_gbps"])
}

// shardRuns runs sweepConfig in n shards and returns their directories.
func shardRuns(t *testing.T, n int) []string {
	t.Helper()
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	var dirs []string
	for i := 0; i < n; i++ {
		d := t.TempDir()
		code, _, stderr := run("-config", cfg, "--shard", fmt.Sprintf("%d/%d", i, n), "--out", d, "--quiet")
		require.Equal(t, 0, code, stderr)
		dirs = append(dirs, d)
	}
	return dirs
}

// TestMergeCorruptManifest: a shard.json edited by hand or damaged is the
// user's input: merge refuses it with one line naming the file and the
// field (it used to panic on a negative or huge count, and to reorder the
// results silently on bad point_designs), and writes nothing.
func TestMergeCorruptManifest(t *testing.T) {
	dirs := shardRuns(t, 3)
	// Shard 0/3 of the 6 designs ran 0 and 3, one point each.
	orig := readFile(t, filepath.Join(dirs[0], sweep.ManifestFile))
	require.Contains(t, orig, `"shards": 3`)
	require.Contains(t, orig, `"designs": 6`)
	pd := "\"point_designs\": [\n    0,\n    3\n  ]"
	require.Contains(t, orig, pd)
	tests := []struct{ old, new, want string }{
		{`"shards": 3`, `"shards": -1`, "shards: -1 is out of range"},
		{`"designs": 6`, `"designs": -6`, "designs: -6 is out of range"},
		{`"shards": 3`, `"shards": 1000000000000000`, "ran: 2 designs, want 1"},
		{pd, `"point_designs": [99, -5]`, "point_designs[0]: 99, want 0"},
		{pd, `"point_designs": [3, 0]`, "point_designs[0]: 3, want 0"},
	}
	for _, tc := range tests {
		t.Run(tc.new, func(t *testing.T) {
			require.NoError(t, os.WriteFile(filepath.Join(dirs[0], sweep.ManifestFile), []byte(strings.Replace(orig, tc.old, tc.new, 1)), 0o644))
			merged := filepath.Join(t.TempDir(), "merged")
			code, stdout, stderr := run("merge", dirs[0], dirs[1], dirs[2], "--out", merged)
			assert.Equal(t, 2, code, stderr)
			assert.Empty(t, stdout)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.Contains(t, stderr, filepath.Join(dirs[0], sweep.ManifestFile)+": "+tc.want)
			assert.NotContains(t, stderr, "internal error")
			assert.NoDirExists(t, merged)
		})
	}
}

// TestMergeOut: --out may not be one of the shards being merged (that
// replaced the shard's results and removed its shard.json, so it could
// not be merged again), however it is spelt; an empty --out is refused;
// and an --out that cannot be written still prints the merged table.
func TestMergeOut(t *testing.T) {
	dirs := shardRuns(t, 2)
	before := readFile(t, filepath.Join(dirs[0], "results.json"))
	for _, out := range []string{dirs[0], dirs[0] + string(filepath.Separator) + "."} {
		code, stdout, stderr := run("merge", dirs[0], dirs[1], "--out", out)
		assert.Equal(t, 2, code, stderr)
		assert.Empty(t, stdout)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		assert.Contains(t, stderr, "--out "+out+" is the shard directory "+dirs[0])
		assert.FileExists(t, filepath.Join(dirs[0], sweep.ManifestFile))
		assert.Equal(t, before, readFile(t, filepath.Join(dirs[0], "results.json")))
	}
	code, _, stderr := run("merge", dirs[0], dirs[1], "--out", "")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "--out: an empty path")

	// An --out that cannot be written: one line naming the flag, the
	// directory as given, what stands in the way and what is allowed,
	// exit 2; the merged points are still printed (and the shards are
	// untouched, so nothing computed is lost).
	afile := writeFile(t, "afile", "")
	inDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(inDir, "results.json"), 0o755))
	plotDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(plotDir, "throughput-vs-hca.vl_buffer_bytes.svg"), 0o755))
	const allowed = " (give a directory that exists or can be made, and that can be written in)\n"
	for _, tc := range []struct{ out, want string }{
		{afile, "hcasim: merge: --out: " + afile + " is a file, not a directory" + allowed},
		{filepath.Join(afile, "sub"), "hcasim: merge: --out: " + filepath.Join(afile, "sub") + " cannot be made: " + afile + " is a file, not a directory" + allowed},
		{inDir, "hcasim: merge: --out: " + inDir + " holds a directory named results.json, the name of a file hcasim writes there (move it, or give another directory)\n"},
		{plotDir, "hcasim: merge: --out: " + plotDir + " holds a directory named throughput-vs-hca.vl_buffer_bytes.svg, the name of a file hcasim writes there (move it, or give another directory)\n"},
	} {
		code, stdout, stderr := run("merge", dirs[0], dirs[1], "--out", tc.out, "--format", "csv", "--quiet")
		assert.Equal(t, 2, code, stderr)
		assert.Equal(t, tc.want, stderr)
		assert.Equal(t, 7, strings.Count(stdout, "\n"), "the header and the 6 points still printed:\n%s", stdout)
		assert.Equal(t, before, readFile(t, filepath.Join(dirs[0], "results.json")), "the shard is untouched")
	}

	code, _, stderr = run("merge", dirs[0], dirs[1], "--out", t.TempDir(), "--quiet")
	assert.Equal(t, 0, code, "the shards still merge: %s", stderr)
}

// TestOutCheckedBeforeTheRun: an --out that cannot be a directory is
// refused before any point runs (it used to be found after the whole
// sweep); and when writing fails after the run all the same, the results
// are still printed.
func TestOutCheckedBeforeTheRun(t *testing.T) {
	saved := fabricRun
	defer func() { fabricRun = saved }()
	runs := 0
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		runs++
		return saved(l, o)
	}
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	afile := writeFile(t, "afile", "")
	holder := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(holder, "results.csv"), 0o755))
	// A directory named as one of the sweep's plots (it sweeps
	// hca.vl_buffer_bytes) stopped the write of a finished sweep.
	plotHolder := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(plotHolder, "latency-vs-hca.vl_buffer_bytes.svg"), 0o755))
	for _, tc := range []struct{ out, want string }{
		{afile, "hcasim: --out: " + afile + " is a file, not a directory (give a directory that exists or can be made, and that can be written in)\n"},
		{holder, "hcasim: --out: " + holder + " holds a directory named results.csv, the name of a file hcasim writes there (move it, or give another directory)\n"},
		{plotHolder, "hcasim: --out: " + plotHolder + " holds a directory named latency-vs-hca.vl_buffer_bytes.svg, the name of a file hcasim writes there (move it, or give another directory)\n"},
	} {
		code, stdout, stderr := run("-config", cfg, "--out", tc.out, "--jobs", "1")
		assert.Equal(t, 2, code, stderr)
		assert.Equal(t, tc.want, stderr)
		assert.Empty(t, stdout)
		assert.Equal(t, 0, runs, "no point ran")
	}

	// The directory is usable when checked, and replaced by a file while
	// the first point runs: the six points are printed, then the error.
	out := filepath.Join(t.TempDir(), "out")
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		if runs++; runs == 1 {
			require.NoError(t, os.RemoveAll(out))
			require.NoError(t, os.WriteFile(out, nil, 0o644))
		}
		return saved(l, o)
	}
	runs = 0
	t.Setenv("TMPDIR", t.TempDir()) // where the results are rescued
	code, stdout, stderr := run("-config", cfg, "--out", out, "--jobs", "1", "--quiet", "--format", "csv")
	assert.Equal(t, 2, code, stderr)
	assert.Equal(t, 6, runs)
	assert.Equal(t, 7, strings.Count(stdout, "\n"), "the header and the 6 points:\n%s", stdout)
	// One line, and the results, every metric of every point, are not
	// lost: they are written where they can be, and the line says where.
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	prefix := "hcasim: --out: " + out + " is a file, not a directory (give a directory that exists or can be made, and that can be written in); the results are in "
	require.True(t, strings.HasPrefix(stderr, prefix), stderr)
	rescued := strings.TrimSuffix(strings.TrimPrefix(stderr, prefix), " instead\n")
	assert.Equal(t, os.Getenv("TMPDIR"), filepath.Dir(rescued))
	assert.Equal(t, stdout, readFile(t, filepath.Join(rescued, "results.csv")), "the csv printed is the csv rescued")
	res, err := report.ReadJSON(filepath.Join(rescued, "results.json"))
	require.NoError(t, err)
	assert.Len(t, res.Points, 6)

	// A directory named as a plot made in --out while the points run: the
	// results are written there, only the plot is not, and the line says
	// so (it said the results were in a rescue directory "instead").
	out = filepath.Join(t.TempDir(), "out")
	plot := filepath.Join(out, "throughput-vs-hca.vl_buffer_bytes.svg")
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		if runs++; runs == 1 {
			require.NoError(t, os.MkdirAll(filepath.Join(plot, "x"), 0o755))
		}
		return saved(l, o)
	}
	runs = 0
	code, stdout, stderr = run("-config", cfg, "--out", out, "--jobs", "1", "--quiet", "--format", "csv")
	assert.Equal(t, 2, code, stderr)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	assert.True(t, strings.HasPrefix(stderr, "hcasim: --out: "+out), stderr)
	assert.True(t, strings.HasSuffix(stderr, "; results.json and results.csv are written there, the files drawn from them are not\n"), stderr)
	assert.NotContains(t, stderr, "instead")
	assert.Equal(t, stdout, readFile(t, filepath.Join(out, "results.csv")), "the results are in --out")
}

// TestErrorsNameTheirSourceOnce: a mistake in the config names the config
// once (executeSweep and runMain both added it), and a mistake in a flag
// names the flag, not the config.
func TestErrorsNameTheirSourceOnce(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	single := writeFile(t, "single.yaml", strings.Split(sweepConfig, "sweep:")[0])
	tests := []struct {
		args []string
		want string // the whole of stderr
	}{
		{[]string{"-config", cfg, "--set", "sweep.workload.offered_load=[]"},
			"hcasim: " + cfg + ": sweep.workload.offered_load: an empty list sweeps nothing\n"},
		{[]string{"-config", cfg, "--shard", "3/3", "--out", t.TempDir()},
			"hcasim: --shard: \"3/3\" is out of range (N at least 1, I from 0 to N−1)\n"},
		{[]string{"-config", cfg, "--shard", "0/2"},
			"hcasim: --shard 0/2: needs --out DIR (hcasim merge reads the shards' directories)\n"},
		{[]string{"-config", single, "--shard", "0/2", "--out", t.TempDir()},
			"hcasim: --shard 0/2: " + single + " has no sweep: section to shard\n"},
		{[]string{"-config", cfg, "--trace", filepath.Join(t.TempDir(), "t")},
			"hcasim: --trace/--vcd/--pcap: a trace follows one design point; pin the sweep's keys with --set to trace one of its points\n"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			code, stdout, stderr := run(tt.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tt.want, stderr)
		})
	}

	// A sweep's default output directory is no --out the user gave; it is
	// checked before the run all the same. sweepConfig has no name: its
	// directory is named after its file, hcasim-out/sizing.
	t.Chdir(t.TempDir())
	require.NoError(t, os.Mkdir("hcasim-out", 0o755))
	require.NoError(t, os.WriteFile(filepath.Join("hcasim-out", "sizing"), nil, 0o644))
	code, stdout, stderr := run("-config", cfg)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "hcasim: sweep: the default --out: hcasim-out/sizing is a file, not a directory (give a directory that exists or can be made, and that can be written in); or --out DIR to choose another\n", stderr)
}

// TestUnnamedConfigsGetTheirOwnDirectories: two sweeps whose configs set no
// name wrote to one hcasim-out/default, and the second cleared the first's
// results and plots; each now writes under its file's name, and a config
// with a name keeps it.
func TestUnnamedConfigsGetTheirOwnDirectories(t *testing.T) {
	assert.Equal(t, "a", outName("default", "x/a.yaml"))
	assert.Equal(t, "b.v2", outName("default", "/y/b.v2.yml"))
	assert.Equal(t, "ndr-fattree-buffers", outName("ndr-fattree-buffers", "ndr.yaml"))
	a := writeFile(t, "a.yaml", sweepConfig)
	b := writeFile(t, "b.yaml", sweepConfig)
	t.Chdir(t.TempDir())
	for _, cfg := range []string{a, b} {
		code, _, stderr := run("-config", cfg, "--quiet")
		require.Equal(t, 0, code, stderr)
	}
	for _, dir := range []string{"a", "b"} {
		_, err := os.Stat(filepath.Join("hcasim-out", dir, "results.csv"))
		assert.NoError(t, err, "hcasim-out/%s/results.csv", dir)
	}
}

// TestCollectiveSweepTable: a sweep of collectives shows their headline
// metrics in the table (it showed only the parameters and an empty error
// column, the metrics being in results.json alone).
func TestCollectiveSweepTable(t *testing.T) {
	cfg := writeFile(t, "ar.yaml", `name: ar
link: {generation: NDR, width: 4x}
switch: {radix: 4, vls: 1}
topology: {kind: single-switch, hosts: 4}
workload: {kind: allreduce, size: 4096}
sweep: {workload.size: [4096, 8192]}
`)
	t.Chdir(t.TempDir()) // the sweep writes hcasim-out/ar here
	code, out, stderr := run("-config", cfg, "--quiet")
	require.Equal(t, 0, code, stderr)
	header := strings.SplitN(out, "\n", 3)[1]
	for _, col := range []string{"time_us", "algbw_gbps", "busbw_gbps", "data_verified"} {
		assert.Contains(t, header, col)
	}
}

// TestSweepBaseValueNeverRun: a sweep over workload.size from a base size
// no synthetic workload takes (65536, above the 4096-byte MTU) runs every
// point, since each sets its own size; the base's value was refused before
// any point was looked at. A sweep that leaves the bad value in every point
// is refused with the base's own message.
func TestSweepBaseValueNeverRun(t *testing.T) {
	base := `name: t
topology: {kind: single-switch, hosts: 4}
switch: {radix: 4, vls: 1}
workload: {kind: uniform, size: 65536, measure_ns: 2000}
`
	swept := writeFile(t, "swept.yaml", base+"sweep: {workload.size: [1024, 2048]}\n")
	code, stdout, stderr := run("-config", swept, "--quiet", "--format", "csv", "--out", t.TempDir())
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 3, strings.Count(stdout, "\n"), "the header and 2 points:\n%s", stdout)
	kept := writeFile(t, "kept.yaml", base+"sweep: {workload.offered_load: [0.2, 0.4]}\n")
	code, _, stderr = run("-config", kept, "--quiet", "--out", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim: "+kept+": workload.size: 65536 is not a packet payload (1 to 4096 bytes)\n", stderr)
	// Pinning the swept key leaves the base's value in every point.
	code, _, stderr = run("-config", swept, "--quiet", "--out", t.TempDir(), "--set", "workload.offered_load=0.3", "--set", "sweep.workload.size=[1024]", "--set", "workload.size=65536")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "workload.size: 65536 is not a packet payload")
}

// TestSweepTableOfLatencyTests: a sweep of perftest latency tests shows
// lat_us_typical and lat_us_p99 and not bw_gbps or msg_rate_mpps
// (perftest's latency tests print no bandwidth; a 2-byte ping-pong's
// 0.006 Gb/s read as a fault in ndr.yaml's table), while results.csv
// keeps every metric; a bandwidth test's table shows bw_gbps and
// msg_rate_mpps. The p99 is where a rare cost shows:
// examples/cq-context-cache.yaml's one CQ-context miss in 100 messages
// leaves the typical latency at 0.8393 µs at every point and moves the
// p99 alone (hca.md, "CQ and SRQ context caches").
func TestSweepTableOfLatencyTests(t *testing.T) {
	const cfg = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2}
topology: {kind: back-to-back}
workload: {kind: perftest, test: %s, size: 2, iterations: 20}
sweep:
  link.length_m: [2, 20]
`
	header := func(test string, args ...string) (string, string) {
		out := t.TempDir()
		code, stdout, stderr := run(append([]string{"-config", writeFile(t, test+".yaml", fmt.Sprintf(cfg, test)), "--out", out}, args...)...)
		require.Equal(t, 0, code, stderr)
		head, _, _ := strings.Cut(readFile(t, filepath.Join(out, "results.csv")), "\n")
		return stdout, head
	}
	table, csvHead := header("write_lat")
	assert.Contains(t, table, "lat_us_typical")
	assert.Contains(t, table, "lat_us_p99")
	assert.NotContains(t, table, "bw_gbps")
	assert.NotContains(t, table, "msg_rate_mpps")
	assert.Contains(t, csvHead, "bw_gbps", "results.csv keeps the bandwidth")
	table, _ = header("write_bw")
	assert.Contains(t, table, "bw_gbps")
	// perftest's bandwidth tests print the message rate beside the
	// bandwidth, the figure of small messages (docs/hca.md's qp-scaling
	// table is in msg_rate_mpps).
	assert.Contains(t, table, "msg_rate_mpps")
	assert.NotContains(t, table, "lat_us_typical")
	assert.NotContains(t, table, "lat_us_p99")
	// A replicated sweep's table (one row per design, mean ± CI) follows
	// the same rule: it showed bw_gbps of the latency tests.
	table, _ = header("write_lat", "--set", "sweep.seed={replicas: 2}")
	assert.Contains(t, table, "± ")
	assert.Contains(t, table, "lat_us_typical")
	assert.NotContains(t, table, "bw_gbps")
	table, _ = header("write_bw", "--set", "sweep.seed={replicas: 2}")
	assert.Contains(t, table, "bw_gbps")
}

// TestEveryPointFailedIsOneLine: a sweep none of whose points ran says so
// on one line: how many, where the results are, and the error (once when
// every point has the same one, else the first's); no timing, knees or
// notes of points that computed nothing, quiet or not. A sweep only some
// of whose points failed keeps its summary, its notes and the failure
// line after them. The results hold every point's error either way.
func TestEveryPointFailedIsOneLine(t *testing.T) {
	saved := fabricRun
	defer func() { fabricRun = saved }()
	// Perftest on NDR links with the default cx5 host draws the host note
	// (fabric.HostNote) when a point runs.
	cfg := writeFile(t, "pt.yaml", `
link: {generation: NDR}
topology: {kind: back-to-back}
workload: {kind: perftest, test: write_bw, iterations: 20}
sweep:
  workload.size: [4096, 8192, 16384]
`)
	unsupported := func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		return nil, &fabric.UnsupportedError{Msg: "workload.kind: not here"}
	}
	perSize := func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		return nil, &fabric.UnsupportedError{Msg: fmt.Sprintf("workload.size: %d not here", l.Config.Workload.Size)}
	}
	for _, tc := range []struct {
		name string
		run  func(*fabric.Loaded, fabric.RunOptions) (map[string]any, error)
		sets []string
		code int
		want string // after "hcasim: sweep: ", before the newline; OUT the --out
	}{
		{"same error", unsupported, nil, 2,
			"all 3 points failed, each with the same error (in the results, written to OUT): workload.kind: not here"},
		{"errors differ", perSize, nil, 2,
			"all 3 points failed (each has its error in the results, written to OUT); first: point {workload.size=4096}: workload.size: 4096 not here"},
		{"one point", unsupported, []string{"--set", "sweep.workload.size=[4096]"}, 2,
			"its one point failed (its error is in the results, written to OUT): point {workload.size=4096}: workload.kind: not here"},
		{"internal", func(*fabric.Loaded, fabric.RunOptions) (map[string]any, error) {
			return nil, errors.New("engine exploded")
		}, nil, 1,
			"all 3 points failed, each with the same error (in the results, written to OUT): engine exploded"},
	} {
		fabricRun = tc.run
		for _, quiet := range []bool{false, true} {
			out := t.TempDir()
			args := append([]string{"-config", cfg, "--out", out, "--format", "csv"}, tc.sets...)
			if quiet {
				args = append(args, "--quiet")
			}
			code, stdout, stderr := run(args...)
			assert.Equal(t, tc.code, code, "%s: %s", tc.name, stderr)
			assert.Equal(t, "hcasim: sweep: "+strings.ReplaceAll(tc.want, "OUT", out)+"\n", stderr, "%s, quiet %v", tc.name, quiet)
			res, err := report.ReadJSON(filepath.Join(out, "results.json"))
			require.NoError(t, err)
			for _, p := range res.Points {
				assert.NotEmpty(t, p.Error, tc.name)
			}
			if len(res.Points) == 1 {
				// As a single run's: the line is the whole answer.
				assert.Empty(t, stdout)
				continue
			}
			assert.Equal(t, len(res.Points)+1, strings.Count(stdout, "\n"), "stdout still has each point and its error")
		}
	}

	// Merged, shards none of whose points ran say so on one line too
	// (merge exits 1 on any failed point: a shard does not record whose
	// failure it was).
	fabricRun = unsupported
	var dirs []string
	for i := 0; i < 2; i++ {
		d := t.TempDir()
		code, _, _ := run("-config", cfg, "--shard", fmt.Sprintf("%d/2", i), "--out", d, "--quiet")
		require.Equal(t, 2, code)
		dirs = append(dirs, d)
	}
	code, _, stderr := run("merge", dirs[0], dirs[1], "--out", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Equal(t, "hcasim: merge: all 3 points of the 2 shards failed (each has its error in the results)\n", stderr)

	// Only some failed: the summary, the note of the points that ran, then
	// the failure line.
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		if l.Config.Workload.Size == 8192 {
			return nil, &fabric.UnsupportedError{Msg: "workload.kind: not here"}
		}
		return saved(l, o)
	}
	out := t.TempDir()
	code, _, stderr = run("-config", cfg, "--out", out, "--jobs", "1")
	assert.Equal(t, 2, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	require.Len(t, lines, 3, stderr)
	assert.True(t, strings.HasPrefix(lines[0], "hcasim: sweep: 3 points in "), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "hcasim: note: hca.profile is not set"), lines[1])
	assert.Equal(t, "hcasim: sweep: 1 of 3 points failed (each has its error in the results); first: point {workload.size=8192}: workload.kind: not here", lines[2])
}
