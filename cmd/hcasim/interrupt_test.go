package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
	"github.com/hcasim/hcasim/verif"
)

// interruptAt replaces fabricRun for one test: its (n+1)-th call asks the
// run to stop as SIGINT (or sig) would, then waits until the test is done
// with the run, so that the point is abandoned while it runs and exactly
// the first n calls finished. With --jobs 1 the calls are the points in
// order (or, resuming, the points not reused). The returned count is the
// calls made.
func interruptAt(t *testing.T, n int, sig os.Signal) *int {
	saved := fabricRun
	release := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		mu.Lock()
		calls++
		c := calls
		mu.Unlock()
		if c == n+1 {
			currentStop.Load().request(sig)
			<-release
			return nil, errors.New("abandoned")
		}
		return saved(l, o)
	}
	t.Cleanup(func() {
		close(release)
		fabricRun = saved
	})
	return &calls
}

// dirFiles reads every file of dir by name.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string]string{}
	for _, e := range entries {
		files[e.Name()] = readFile(t, filepath.Join(dir, e.Name()))
	}
	return files
}

func fileNames(files map[string]string) []string {
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestInterruptedSweepWritesFinishedPoints: sweepConfig's 6 points run in
// order with --jobs 1 (buffer slowest, length fastest), so a stop during
// the third point's run leaves points 0 and 1 finished — with the metrics
// the whole run gives them — and 2 to 5 "interrupted: not run" with their
// params and no metrics; the exit code is 128 + the signal's number, and
// no plot is drawn from the part (an earlier run's plots are removed).
func TestInterruptedSweepWritesFinishedPoints(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	whole := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", whole, "--quiet")
	require.Equal(t, 0, code, stderr)
	want, err := report.ReadJSON(filepath.Join(whole, "results.json"))
	require.NoError(t, err)

	for _, c := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, 130, "SIGINT"}, {syscall.SIGTERM, 143, "SIGTERM"}} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			// An earlier whole run's plots in --out must not stay beside
			// the partial results.
			code, _, stderr := run("-config", cfg, "--out", out, "--quiet")
			require.Equal(t, 0, code, stderr)
			require.FileExists(t, filepath.Join(out, "throughput-vs-hca.vl_buffer_bytes.svg"))

			interruptAt(t, 2, c.sig)
			code, stdout, stderr := run("-config", cfg, "--out", out, "--jobs", "1", "--quiet")
			assert.Equal(t, c.code, code, stderr)
			assert.Empty(t, stdout, "an interrupted sweep prints no table: its files hold it")
			assert.Equal(t, fmt.Sprintf("hcasim: sweep: interrupted (%s): 2 of 6 points done, 4 not run, written to %s; to continue: hcasim -config %s --out %s --jobs 1 --quiet --resume\n",
				c.name, out, cfg, out), stderr)
			assert.Equal(t, []string{"results.csv", "results.json"}, fileNames(dirFiles(t, out)))

			got, err := report.ReadJSON(filepath.Join(out, "results.json"))
			require.NoError(t, err)
			require.Len(t, got.Points, 6)
			for i, p := range got.Points {
				assert.Equal(t, want.Points[i].Params, p.Params, "point %d", i)
				if i < 2 {
					assert.Empty(t, p.Error, "point %d", i)
					assert.Equal(t, want.Points[i].Metrics, p.Metrics, "point %d: the whole run's metrics", i)
					continue
				}
				assert.Equal(t, sweep.NotRunText, p.Error, "point %d", i)
				assert.Empty(t, p.Metrics, "point %d", i)
			}
			require.NotNil(t, got.Interrupted)
			assert.Equal(t, c.name, got.Interrupted.Signal)
			assert.Equal(t, 4, got.Interrupted.NotRun)
			csv := readFile(t, filepath.Join(out, "results.csv"))
			assert.Equal(t, 4, strings.Count(csv, sweep.NotRunText))
		})
	}
}

// kneeSweep searches the saturation knee of 3 hosts sending hotspot
// traffic to host 0 on a 4-host switch, for two hotspot fractions; short
// windows keep each probe to milliseconds (10 µs: a shorter one finds
// even 0.1 saturated, and the search would end at its first probe).
const kneeSweep = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, mtu: 4096}
switch: {vls: 1}
topology: {kind: single-switch, hosts: 4}
workload: {kind: hotspot, size: 1024, warmup_ns: 500, measure_ns: 10000, drain_ns: 5000}
sweep:
  workload.hotspot_fraction: [0.5, 0.75]
  workload.offered_load: {search: knee, from: 0.1, to: 1.0, tolerance: 0.1}
`

// replicatedSweep is sweepConfig's stream with three replicas of two buffers:
// a replicated sweep, which writes summary.csv and summary.json.
const replicatedSweep = `
seed: 3
link: {generation: NDR, width: 4x, length_m: 2, medium: fibre, mtu: 4096}
switch: {vls: 1}
topology: {kind: single-switch, hosts: 2}
workload: {kind: uniform, size: 1024, offered_load: 0.5, warmup_ns: 500, measure_ns: 2000}
sweep:
  seed: {replicas: 3}
  switch.vl_buffer_bytes: [8320, 16640]
`

// TestResumeReproducesTheWholeRun: a sweep interrupted after some points
// and resumed writes the very files — results, plots, summaries, knee.csv
// — and prints the very table the uninterrupted run does, byte for byte,
// also when the resumed run is itself interrupted and resumed again. The
// second interruption counts only the points the resume runs: the reused
// ones do not call fabricRun.
func TestResumeReproducesTheWholeRun(t *testing.T) {
	for _, c := range []struct {
		name, config string
		first, again int // fabricRun calls that finish before each interruption
	}{
		{"grid", sweepConfig, 2, 1},
		{"replicas", replicatedSweep, 3, 1},
		// The first design's search probes 0.1 and 1.0, then 0.55: the
		// stop comes during a search, and again during the next probe.
		{"knee", kneeSweep, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeFile(t, c.name+".yaml", c.config)
			whole := t.TempDir()
			code, wholeOut, stderr := run("-config", cfg, "--out", whole, "--jobs", "2", "--quiet")
			require.Equal(t, 0, code, stderr)

			out := t.TempDir()
			stop := func(n int, args ...string) {
				t.Helper()
				calls := interruptAt(t, n, syscall.SIGINT)
				code, _, stderr := run(append([]string{"-config", cfg, "--out", out, "--jobs", "1", "--quiet"}, args...)...)
				require.Equal(t, 130, code, stderr)
				require.Equal(t, n+1, *calls, "the stop came during call %d", n+1)
			}
			stop(c.first)
			first, err := report.ReadJSON(filepath.Join(out, "results.json"))
			require.NoError(t, err)
			stop(c.again, "--resume")
			again, err := report.ReadJSON(filepath.Join(out, "results.json"))
			require.NoError(t, err)
			finished := func(r *report.Result) int { return len(r.Points) - r.Interrupted.NotRun }
			assert.Equal(t, finished(first)+c.again, finished(again), "the second part added its points and lost none")

			code, resumedOut, stderr := run("-config", cfg, "--out", out, "--jobs", "2", "--resume")
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stderr, "resumed from "+filepath.Join(out, "results.json"))
			assert.Equal(t, wholeOut, resumedOut, "the table")
			w, r := dirFiles(t, whole), dirFiles(t, out)
			require.Equal(t, fileNames(w), fileNames(r))
			for name := range w {
				assert.Equal(t, w[name], r[name], name)
			}
			assert.NotContains(t, r["results.json"], `"interrupted"`)
		})
	}
}

// TestResumeRefusals: --resume reuses nothing it cannot vouch for; each
// refusal is one line naming the file (or flag) and exits 2.
func TestResumeRefusals(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	single := writeFile(t, "single.yaml", strings.Split(sweepConfig, "sweep:")[0])
	finished := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", finished, "--quiet")
	require.Equal(t, 0, code, stderr)
	part := t.TempDir()
	interruptAt(t, 2, syscall.SIGINT)
	code, _, stderr = run("-config", cfg, "--out", part, "--jobs", "1", "--quiet")
	require.Equal(t, 130, code, stderr)
	results := filepath.Join(part, "results.json")
	interrupted := readFile(t, results)
	otherBuild := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(otherBuild, "results.json"),
		[]byte(regexp.MustCompile(`"build": "[^"]*"`).ReplaceAllString(interrupted, `"build": "0.0.1 sha256:000000000000"`)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(otherBuild, "results.csv"), []byte(readFile(t, filepath.Join(part, "results.csv"))), 0o644))
	damaged := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(damaged, "results.json"), []byte(interrupted[:100]), 0o644))

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"finished run", []string{"-config", cfg, "--out", finished},
			"hcasim: --resume: " + filepath.Join(finished, "results.json") + " is a finished run's (it records no interruption): nothing to resume; run without --resume to run the sweep again"},
		// The first stored point not in the sweep of lengths 2 and 30 is
		// point 1, 16384 bytes at 100 m.
		{"other points", []string{"-config", cfg, "--out", part, "--set", "sweep.link.length_m=[2, 30]"},
			"hcasim: --resume: " + results + " holds the point {hca.vl_buffer_bytes=16384, link.length_m=100}, which is no point of this sweep (another config, --set, --seed or --shard): run without --resume, or give another --out"},
		{"unswept key", []string{"-config", cfg, "--out", part, "--set", "workload.measure_ns=3000"},
			"hcasim: --resume: " + results + " was written for another config (config hash "},
		{"check", []string{"-config", cfg, "--out", part, "--check"},
			"hcasim: --resume: " + results + " was written without --check, this run is with --check: give the interrupted run's flags"},
		{"shard", []string{"-config", cfg, "--out", part, "--shard", "0/1"},
			"hcasim: --resume: " + results + ` is of --shard "", this run is of --shard "0/1": give the interrupted run's flags`},
		{"build", []string{"-config", cfg, "--out", otherBuild},
			"hcasim: --resume: " + filepath.Join(otherBuild, "results.json") + " was written by hcasim 0.0.1 sha256:000000000000, this is "},
		{"damaged", []string{"-config", cfg, "--out", damaged},
			"hcasim: --resume: " + filepath.Join(damaged, "results.json") + ": not a results.json: "},
		{"single run", []string{"-config", single, "--out", part},
			"hcasim: --resume: continues an interrupted sweep, and " + single + " has no sweep: section (a single run starts over)"},
		{"trace", []string{"-config", cfg, "--out", part, "--trace", filepath.Join(t.TempDir(), "t.trace")},
			"hcasim: --resume: reuses the points an interrupted sweep finished"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(append(c.args, "--resume", "--quiet")...)
			assert.Equal(t, 2, code, stderr)
			assert.True(t, strings.HasPrefix(stderr, c.want), "got %q\nwant %q…", stderr, c.want)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line")
		})
	}
	assert.Equal(t, interrupted, readFile(t, results), "a refusal leaves the results as they were")

	// No results.json in --out: nothing to reuse, every point runs.
	fresh := t.TempDir()
	code, _, stderr = run("-config", cfg, "--out", fresh, "--resume")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "hcasim: sweep: --resume: no results.json in "+fresh+": nothing to reuse, every point runs")
	assert.Equal(t, readFile(t, filepath.Join(finished, "results.json")), readFile(t, filepath.Join(fresh, "results.json")))
}

// TestMergeRefusesInterruptedShard: a shard stopped part-way has no
// shard.json; merge names it and says how to finish it; finished with
// --resume, it merges into the unsharded run's files.
func TestMergeRefusesInterruptedShard(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	dirs := []string{t.TempDir(), t.TempDir()}
	code, _, stderr := run("-config", cfg, "--shard", "0/2", "--out", dirs[0], "--quiet")
	require.Equal(t, 0, code, stderr)
	// Shard 1/2 runs points 1, 3 and 5; the stop comes during the second.
	interruptAt(t, 1, syscall.SIGTERM)
	code, _, stderr = run("-config", cfg, "--shard", "1/2", "--out", dirs[1], "--jobs", "1", "--quiet")
	require.Equal(t, 143, code, stderr)
	assert.Contains(t, stderr, "1 of 3 points done, 2 not run")
	code, _, stderr = run("merge", dirs[0], dirs[1])
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim: merge: "+dirs[1]+" was interrupted (SIGTERM) with 2 of its 3 points not run: finish it first, with its command and --resume\n", stderr)

	// Resumed, the shard merges into what the unsharded run writes.
	code, _, stderr = run("-config", cfg, "--shard", "1/2", "--out", dirs[1], "--quiet", "--resume")
	require.Equal(t, 0, code, stderr)
	merged, whole := t.TempDir(), t.TempDir()
	code, _, stderr = run("merge", dirs[0], dirs[1], "--out", merged, "--quiet")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = run("-config", cfg, "--out", whole, "--quiet")
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"results.json", "results.csv"} {
		assert.Equal(t, readFile(t, filepath.Join(whole, f)), readFile(t, filepath.Join(merged, f)), f)
	}
}

// TestInterruptedSingleRunClosesItsFiles: a single run stopped part-way
// (here after 100 trace events) closes --trace, --vcd and --pcap whole:
// the trace reads back, with more than 2000 events, all before the whole
// run's end; the VCD's last timestamp is where it stopped; --out gets the
// point with its error. Exit 130.
func TestInterruptedSingleRunClosesItsFiles(t *testing.T) {
	cfg := writeFile(t, "single.yaml", strings.Split(sweepConfig, "sweep:")[0])
	dir := t.TempDir()
	trace, vcd, pcap := filepath.Join(dir, "t.trace"), filepath.Join(dir, "w.vcd"), filepath.Join(dir, "c.pcapng")
	end := wholeRunNs(t, "-config", cfg, "--format", "json", "--quiet")
	const after = 100
	stopAfterEvents(t, after, 0)
	out := t.TempDir()
	code, stdout, stderr := run("-config", cfg, "--trace", trace, "--vcd", vcd, "--pcap", pcap, "--out", out, "--quiet")
	assert.Equal(t, 130, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "hcasim: interrupted (SIGINT): the run did not finish, no metrics; --trace "+trace+", --vcd "+vcd+", --pcap "+pcap+" hold the run up to where it stopped\n", stderr)

	last := requireStoppedTrace(t, trace, after, end)

	data := readFile(t, vcd)
	assert.Contains(t, data, "$enddefinitions $end")
	stamps := regexp.MustCompile(`(?m)^#(\d+)$`).FindAllStringSubmatch(data, -1)
	require.NotEmpty(t, stamps)
	vcdEnd, err := strconv.ParseInt(stamps[len(stamps)-1][1], 10, 64)
	require.NoError(t, err)
	assert.Equal(t, int64(last), vcdEnd, "the waveform ends at the last event run")

	ifaces, pkts := readCapture(t, pcap)
	assert.NotEmpty(t, ifaces)
	assert.NotEmpty(t, pkts, "the capture reads back with the packets sent before the stop")

	res, err := report.ReadJSON(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.Len(t, res.Points, 1)
	assert.Equal(t, "interrupted: not finished", res.Points[0].Error)
}

// TestInterruptedPinnedSweepClosesItsTrace: a sweep whose keys --set pins
// to one point may write --trace; stopped part-way, its point stops at
// the next event and the trace is closed whole (before, the point was
// abandoned as an untraced one is, and the process exited with the trace
// cut mid-line), the results say the point was not run, and the line
// names the trace instead of offering --resume, which refuses --trace.
func TestInterruptedPinnedSweepClosesItsTrace(t *testing.T) {
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	pin := []string{"--set", "hca.vl_buffer_bytes=16384", "--set", "link.length_m=2"}
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.trace")
	end := wholeRunNs(t, append([]string{"-config", cfg, "--format", "json", "--quiet", "--out", t.TempDir()}, pin...)...)
	const after = 100
	// Slow to return once stopped, as a large trace's last buffer would be
	// to write: the sweep must wait for the point's files (without the
	// wait, the run ended before the trace was closed).
	stopAfterEvents(t, after, 100*time.Millisecond)
	out := t.TempDir()
	code, stdout, stderr := run(append([]string{"-config", cfg, "--trace", trace, "--out", out, "--quiet"}, pin...)...)
	assert.Equal(t, 130, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "hcasim: sweep: interrupted (SIGINT): 0 of 1 points done, 1 not run, written to "+out+
		"; --trace "+trace+" holds the run up to where it stopped; the point starts over when run again\n", stderr)

	requireStoppedTrace(t, trace, after, end)

	res, err := report.ReadJSON(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.Len(t, res.Points, 1)
	assert.Equal(t, sweep.NotRunText, res.Points[0].Error)
}

// requireStoppedTrace checks that the trace at path reads back whole,
// with more than after events, the last before end (ns); it returns the
// last event's time.
func requireStoppedTrace(t *testing.T, path string, after int, end float64) ib.PS {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr, err := verif.ReadTrace(f)
	require.NoError(t, err, "the trace reads back whole")
	require.Greater(t, len(tr.Events), after, "the events up to the stop are there")
	last := tr.Events[len(tr.Events)-1].Time
	assert.Less(t, float64(last)/1000, end, "the run stopped before its end")
	return last
}

// wholeRunNs runs hcasim with args (which must ask for JSON) and returns
// the run's simulated time in ns.
func wholeRunNs(t *testing.T, args ...string) float64 {
	t.Helper()
	code, stdout, stderr := run(args...)
	require.Equal(t, 0, code, stderr)
	wholeNs := regexp.MustCompile(`"sim_time_ns": ([0-9.e+]+)`).FindStringSubmatch(stdout)
	require.NotNil(t, wholeNs)
	end, err := strconv.ParseFloat(wholeNs[1], 64)
	require.NoError(t, err)
	return end
}

// stopAfterEvents makes this test's runs ask to stop at their n-th trace
// event (countingHook), and return delay after the engine stopped.
func stopAfterEvents(t *testing.T, n int, delay time.Duration) {
	saved := fabricRun
	t.Cleanup(func() { fabricRun = saved })
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		observe := o.Observe
		o.Observe = func(s *fabric.Simulation) {
			observe(s)
			verif.AttachHook(&countingHook{n: n}, s.Blocks...)
		}
		m, err := saved(l, o)
		time.Sleep(delay)
		return m, err
	}
}

// countingHook asks the run to stop at its n-th trace event, as a signal
// arriving then would.
type countingHook struct{ n int }

func (h *countingHook) Func(sim.HookCtx) {
	if h.n--; h.n == 0 {
		currentStop.Load().request(syscall.SIGINT)
	}
}

// childPointHooks runs in the test binary standing in for hcasim (TestMain,
// HCASIM_TEST_AS_CLI): with HCASIM_TEST_POINT_LOG set, each point that
// finishes appends a line to that file, and every point after the first
// waits (up to a minute) for the file HCASIM_TEST_RELEASE to appear, so
// that the sweep is still running when the test's signal comes.
func childPointHooks() {
	log := os.Getenv("HCASIM_TEST_POINT_LOG")
	if log == "" {
		return
	}
	saved := fabricRun
	var mu sync.Mutex
	calls := 0
	fabricRun = func(l *fabric.Loaded, o fabric.RunOptions) (map[string]any, error) {
		mu.Lock()
		calls++
		c := calls
		mu.Unlock()
		if c > 1 {
			for i := 0; i < 600; i++ {
				if _, err := os.Stat(os.Getenv("HCASIM_TEST_RELEASE")); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		m, err := saved(l, o)
		if f, ferr := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); ferr == nil {
			fmt.Fprintln(f, "done")
			f.Close()
		}
		return m, err
	}
}

// TestRealSignalEndToEnd sends real signals to hcasim in a child process
// (the test binary as the CLI): once the first point has finished (its
// line in the log) and the second is running (held until released), SIGINT
// ends the sweep with exit 130 and results.json holds point 0 finished and
// points 1 to 5 not run; SIGTERM gives 143. The continue command it prints
// then finishes the sweep (released) as the whole run writes it.
func TestRealSignalEndToEnd(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cfg := writeFile(t, "sizing.yaml", sweepConfig)
	whole := t.TempDir()
	code, _, stderr := run("-config", cfg, "--out", whole, "--quiet")
	require.Equal(t, 0, code, stderr)

	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			log, release := filepath.Join(dir, "points.log"), filepath.Join(dir, "release")
			env := append(os.Environ(), "HCASIM_TEST_AS_CLI=1", "HCASIM_TEST_POINT_LOG="+log, "HCASIM_TEST_RELEASE="+release)
			cmd := exec.Command(exe, "-config", cfg, "--out", out, "--jobs", "1", "--quiet")
			cmd.Env = env
			var errBuf bytes.Buffer
			cmd.Stderr = &errBuf
			require.NoError(t, cmd.Start())
			deadline := time.Now().Add(60 * time.Second)
			for {
				if b, _ := os.ReadFile(log); len(b) > 0 {
					break
				}
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("no point finished in a minute; stderr: %s", errBuf.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			require.NoError(t, cmd.Process.Signal(c.sig))
			err := cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, errBuf.String())
			assert.Equal(t, c.code, ee.ExitCode(), errBuf.String())
			assert.Contains(t, errBuf.String(), "1 of 6 points done, 5 not run")
			assert.NotContains(t, errBuf.String(), "goroutine", "no stack trace")

			res, err := report.ReadJSON(filepath.Join(out, "results.json"))
			require.NoError(t, err)
			require.Len(t, res.Points, 6)
			assert.Empty(t, res.Points[0].Error)
			assert.NotEmpty(t, res.Points[0].Metrics)
			for _, p := range res.Points[1:] {
				assert.Equal(t, sweep.NotRunText, p.Error)
			}

			// Continue as the message says, released.
			require.NoError(t, os.WriteFile(release, nil, 0o644))
			cont := exec.Command(exe, "-config", cfg, "--out", out, "--jobs", "1", "--quiet", "--resume")
			cont.Env = env
			b, err := cont.CombinedOutput()
			require.NoError(t, err, string(b))
			for _, f := range []string{"results.json", "results.csv"} {
				assert.Equal(t, readFile(t, filepath.Join(whole, f)), readFile(t, filepath.Join(out, f)), f)
			}
		})
	}
}

// TestResumeCommand: the continue line is the command as given plus
// --resume, each argument quoted for a POSIX shell when it needs it (a
// --set whose value holds spaces, brackets or a quote), and --resume is
// not added twice.
func TestResumeCommand(t *testing.T) {
	assert.Equal(t, `hcasim -config s.yaml --set 'sweep.link.length_m=[2, 30]' --set 'workload.name=it'\''s' --resume`,
		resumeCommand([]string{"-config", "s.yaml", "--set", "sweep.link.length_m=[2, 30]", "--set", "workload.name=it's"}))
	assert.Equal(t, "hcasim -config s.yaml --resume --out o", resumeCommand([]string{"-config", "s.yaml", "--resume", "--out", "o"}))
	assert.Equal(t, "hcasim -config ''", resumeCommand([]string{"-config", ""})[:len("hcasim -config ''")])
}
