package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
)

// replicaConfig: uniform 1 KiB traffic among 4 hosts on one NDR switch at
// two loads, 3 replicas each, link.ber 0 and 1e-6 (6 designs, 18 points of
// a 3 µs window: a few milliseconds each). link.ber draws its bit errors
// from streams of its own, so at 20 % load, where nothing backs up, it
// does not change what the hosts inject.
const replicaConfig = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, mtu: 4096}
switch: {vls: 1}
topology: {kind: single-switch, hosts: 4}
workload: {kind: uniform, size: 1024, offered_load: 0.2, warmup_ns: 500, measure_ns: 3000}
sweep:
  seed: {replicas: 3%s}
  link.ber: [0, 1e-6]
  workload.offered_load: [0.2, 0.3]
`

// csvRows reads a CSV file into maps by column.
func csvRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	var out []map[string]string
	for _, r := range recs[1:] {
		row := map[string]string{}
		for j, c := range recs[0] {
			row[c] = r[j]
		}
		out = append(out, row)
	}
	return out
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, s)
	return f
}

// TestReplicatedSweepEndToEnd: a sweep with seed: {replicas: 3} writes its
// points as any sweep does, plus summary.csv and summary.json with one row
// per design whose statistics are those of the design's three points in
// results.csv, recomputed here from their definitions; the table shows one
// row per design, mean ± half-width; the plots draw the means.
func TestReplicatedSweepEndToEnd(t *testing.T) {
	cfg := writeFile(t, "rep.yaml", fmt.Sprintf(replicaConfig, ""))
	out := t.TempDir()
	code, stdout, stderr := run("-config", cfg, "--out", out, "--jobs", "2")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "sweep: 12 points")
	assert.Contains(t, stderr, "4 designs, replicated over seed")

	points := csvRows(t, filepath.Join(out, "results.csv"))
	require.Len(t, points, 12)
	designs := csvRows(t, filepath.Join(out, report.SummaryCSV))
	require.Len(t, designs, 4)
	// Keys sorted: link.ber, seed, workload.offered_load; the designs in
	// the order of their first point.
	assert.Equal(t, []string{"0/0.2", "0/0.3", "1e-06/0.2", "1e-06/0.3"}, func() []string {
		var ids []string
		for _, d := range designs {
			ids = append(ids, d["link.ber"]+"/"+d["workload.offered_load"])
			assert.NotContains(t, d, "seed")
			assert.Equal(t, "3", d["n"])
			assert.Equal(t, "0", d["failures"])
		}
		return ids
	}())
	for _, d := range designs {
		var vs []float64
		for _, p := range points {
			if p["link.ber"] == d["link.ber"] && p["workload.offered_load"] == d["workload.offered_load"] {
				vs = append(vs, num(t, p["goodput_gbps"]))
			}
		}
		require.Len(t, vs, 3)
		mean := (vs[0] + vs[1] + vs[2]) / 3
		sd := math.Sqrt(((vs[0]-mean)*(vs[0]-mean) + (vs[1]-mean)*(vs[1]-mean) + (vs[2]-mean)*(vs[2]-mean)) / 2)
		// t(0.975, 2) = 0.95 × √(2 / (1 − 0.95²)) = 4.30265 (Student's t
		// with 2 degrees of freedom has a closed-form quantile).
		hw := 0.95 * math.Sqrt(2/(1-0.95*0.95)) * sd / math.Sqrt(3)
		assert.InDelta(t, mean, num(t, d["goodput_gbps_mean"]), 1e-6*mean)
		assert.InDelta(t, sd, num(t, d["goodput_gbps_sd"]), 1e-6*sd)
		assert.InDelta(t, hw, num(t, d["goodput_gbps_ci95"]), 1e-6*hw)
		assert.Greater(t, sd, 0.0, "replicas differ: their seeds draw different traffic")
	}
	assert.FileExists(t, filepath.Join(out, report.SummaryJSON))

	// The table: one row per design, no seed column.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	assert.Len(t, lines, 4+4, "header, its rules and 4 designs:\n%s", stdout)
	assert.NotContains(t, lines[1], "seed")
	assert.Contains(t, stdout, " ± ")

	assertSVG(t, filepath.Join(out, report.LatencyPlot), "mean ± 95 % CI over seeds", "link.ber=1e-06 p99")
	b, err := os.ReadFile(filepath.Join(out, report.LatencyPlot))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "seed=", "seed splits no design in the plot")

	// --format csv and json stay the points.
	code, stdout, stderr = run("-config", cfg, "--out", t.TempDir(), "--format", "csv", "--quiet")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, readFile(t, filepath.Join(out, "results.csv")), stdout)

	// --seed pins the axis: one replica, run exactly as the replicated
	// sweep ran it, and no summary; the stale summary of the replicated
	// run in --out is removed.
	var replica2 []map[string]string
	for _, p := range points {
		if p["seed"] == "2" {
			replica2 = append(replica2, p)
		}
	}
	require.Len(t, replica2, 4)
	code, _, stderr = run("-config", cfg, "--out", out, "--seed", "2", "--quiet")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, replica2, csvRows(t, filepath.Join(out, "results.csv")))
	assert.NoFileExists(t, filepath.Join(out, report.SummaryCSV))
	assert.NoFileExists(t, filepath.Join(out, report.SummaryJSON))
}

// TestReplicatedSweepDoesNotDependOnJobs: results and summary files are
// byte-identical with --jobs 1 and 3, and identical when the sweep is run
// as 3 shards and merged — the merge writes the summary the unsharded run
// writes, byte for byte (the link.ber values, 1e-06, read back from
// results.json as 0.000001, still print as the run printed them).
func TestReplicatedSweepDoesNotDependOnJobs(t *testing.T) {
	cfg := writeFile(t, "rep.yaml", fmt.Sprintf(replicaConfig, ""))
	files := []string{"results.json", "results.csv", report.SummaryCSV, report.SummaryJSON, report.LatencyPlot, report.AcceptedPlot}
	var outs []string
	for _, jobs := range []string{"1", "3"} {
		out := t.TempDir()
		code, _, stderr := run("-config", cfg, "--out", out, "--jobs", jobs, "--quiet")
		require.Equal(t, 0, code, stderr)
		outs = append(outs, out)
	}
	for _, f := range files {
		assert.Equal(t, readFile(t, filepath.Join(outs[0], f)), readFile(t, filepath.Join(outs[1], f)), f)
	}

	var dirs []string
	for i := 0; i < 3; i++ {
		d := t.TempDir()
		code, stdout, stderr := run("-config", cfg, "--shard", fmt.Sprintf("%d/3", i), "--out", d, "--quiet", "--jobs", "2")
		require.Equal(t, 0, code, stderr)
		assert.NoFileExists(t, filepath.Join(d, report.SummaryCSV), "a shard holds part of each design's replicas: merge summarises")
		assert.NotContains(t, stdout, " ± ")
		dirs = append(dirs, d)
	}
	merged := t.TempDir()
	code, stdout, stderr := run("merge", dirs[1], dirs[2], dirs[0], "--out", merged)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, " ± ", "merge prints the designs' table")
	for _, f := range files {
		assert.Equal(t, readFile(t, filepath.Join(outs[0], f)), readFile(t, filepath.Join(merged, f)), f)
	}
}

// TestCommonRandomNumbers: with common: true, the designs at one replica
// draw the same traffic: link.ber 0 and 1e-6 inject the same number of
// packets (packets_sent) at each seed, though the lossy design loses some
// (link_packet_errors). Without common each point's seed derives from all
// its params, so the two designs draw apart.
func TestCommonRandomNumbers(t *testing.T) {
	sent := func(common string) (map[string][]string, int) {
		cfg := writeFile(t, "rep.yaml", fmt.Sprintf(replicaConfig, common))
		out := t.TempDir()
		code, _, stderr := run("-config", cfg, "--out", out, "--quiet", "--set", "workload.offered_load=0.2")
		require.Equal(t, 0, code, stderr)
		bySeed := map[string][]string{}
		lost := 0
		for _, p := range csvRows(t, filepath.Join(out, "results.csv")) {
			bySeed[p["seed"]] = append(bySeed[p["seed"]], p["packets_sent"])
			if p["link.ber"] != "0" {
				lost += int(num(t, p["link_packet_errors"]))
			}
		}
		require.Len(t, bySeed, 3)
		return bySeed, lost
	}
	same, lost := sent(", common: true")
	for seed, s := range same {
		require.Len(t, s, 2)
		assert.Equal(t, s[0], s[1], "seed %s: both designs inject the same packets", seed)
	}
	assert.Positive(t, lost, "the lossy design did lose packets: the designs differ")
	apart, _ := sent("")
	differ := 0
	for _, s := range apart {
		if s[0] != s[1] {
			differ++
		}
	}
	assert.Positive(t, differ, "without common, the designs' traffic differs: %v", apart)
}

// TestReplicaFailuresCounted: a failed replica is counted in failures and
// left out of n and the statistics; the others are summarised.
func TestReplicaFailuresCounted(t *testing.T) {
	saved := fabricRun
	defer func() { fabricRun = saved }()
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		if l.Config.Link.BER > 0 && l.Config.Workload.OfferedLoad == 0.3 {
			return nil, &fabric.UnsupportedError{Msg: "workload.kind: not here"}
		}
		return saved(l, o)
	}
	cfg := writeFile(t, "rep.yaml", fmt.Sprintf(replicaConfig, ""))
	out := t.TempDir()
	code, stdout, stderr := run("-config", cfg, "--out", out)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "3 of 12 points failed")
	designs := csvRows(t, filepath.Join(out, report.SummaryCSV))
	require.Len(t, designs, 4)
	assert.Equal(t, "0", designs[3]["n"])
	assert.Equal(t, "3", designs[3]["failures"])
	assert.Empty(t, designs[3]["goodput_gbps_mean"])
	assert.Equal(t, "3", designs[2]["n"])
	assert.Contains(t, stdout, " ± ", "the table is still printed")
}

// TestReplicaFormRefused: a bad form of sweep.seed exits 2 with one line
// naming sweep.seed.
func TestReplicaFormRefused(t *testing.T) {
	for _, c := range []struct{ sweep, want string }{
		{"seed: {replicas: 1}", "sweep.seed.replicas: 1 is out of range (2 to 1000"},
		{"seed: {replicas: 2.5}", `sweep.seed.replicas: "2.5" is not a whole number`},
		{"seed: {replicas: 3, values: [1, 2]}", "sweep.seed: give replicas or values, not both"},
		{"link.ber: {replicas: 3}", "sweep.link.ber: replicas and common are forms of sweep.seed only"},
	} {
		cfg := writeFile(t, "rep.yaml", "topology: {kind: single-switch, hosts: 4}\nworkload: {kind: uniform, size: 1024}\nsweep:\n  "+c.sweep+"\n")
		code, stdout, stderr := run("-config", cfg, "--out", t.TempDir())
		assert.Equal(t, 2, code, c.sweep)
		assert.Empty(t, stdout)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
		assert.Contains(t, stderr, c.want)
	}
}

// TestMergedPlotsLabelAsTheRun: merged shards of a link.ber sweep draw the
// unsharded run's plots byte for byte. The params come back from
// results.json, which writes 1e-06 as 0.000001; the legends used to read
// link.ber=0.000001 in the merged plots and link.ber=1e-06 in the run's.
// (--seed 1 pins the replicas: this is a plain sweep.)
func TestMergedPlotsLabelAsTheRun(t *testing.T) {
	cfg := writeFile(t, "ber.yaml", fmt.Sprintf(replicaConfig, ""))
	whole := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", whole, "--quiet", "--seed", "1")
	require.Equal(t, 0, code, stderr)
	var dirs []string
	for i := 0; i < 2; i++ {
		d := t.TempDir()
		code, _, stderr := run("-config", cfg, "--shard", fmt.Sprintf("%d/2", i), "--out", d, "--quiet", "--seed", "1")
		require.Equal(t, 0, code, stderr)
		dirs = append(dirs, d)
	}
	merged := t.TempDir()
	code, _, stderr = run("merge", dirs[0], dirs[1], "--out", merged, "--quiet")
	require.Equal(t, 0, code, stderr)
	assert.NoFileExists(t, filepath.Join(merged, report.SummaryCSV))
	for _, f := range []string{report.LatencyPlot, report.AcceptedPlot} {
		text := readFile(t, filepath.Join(whole, f))
		assert.Contains(t, text, "link.ber=1e-06")
		assert.Equal(t, text, readFile(t, filepath.Join(merged, f)), f)
	}
}
