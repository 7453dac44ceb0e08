package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
)

// TestMain lets the test binary stand in for hcasim when hcasim bench runs
// itself as a child process (os.Executable is the test binary here). It
// also fails the package when a test left a sweep's default output
// directory (hcasim-out, relative to the working directory) in the source
// tree: a test that runs a sweep without --out must t.Chdir(t.TempDir())
// first.
func TestMain(m *testing.M) {
	if os.Getenv("HCASIM_TEST_AS_CLI") == "1" {
		childPointHooks()
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	_, err := os.Stat("hcasim-out")
	existed := err == nil
	code := m.Run()
	if _, err := os.Stat("hcasim-out"); err == nil && !existed {
		fmt.Fprintln(os.Stderr, "FAIL: a test wrote hcasim-out/ into cmd/hcasim (run sweeps without --out under t.Chdir(t.TempDir()))")
		_ = os.RemoveAll("hcasim-out")
		code = 1
	}
	os.Exit(code)
}

// TestBench: hcasim bench runs a benchmark in a child process, prints its
// row and appends it to the CSV under one header; a second run appends a
// second row. The figures come from the child: events and block-hops are
// the run's own (positive), CPU time is the child's rusage, and
// block_hops_per_s is block_hops over the run's wall time, so it is
// positive and finite.
func TestBench(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	csvPath := filepath.Join(t.TempDir(), "bench.csv")
	args := []string{"bench", "switch16-uniform-50", "--set", "workload.warmup_ns=1000",
		"--set", "workload.measure_ns=2000", "--csv", csvPath}
	for i := 0; i < 2; i++ {
		code, out, errOut := run(args...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "switch16-uniform-50")
		// cpu_vs_last: nothing to compare with the first time; the second
		// run did the same work (same simulated time and events, the model
		// being deterministic), so its CPU time is compared.
		cells := strings.Split(strings.Split(strings.TrimSpace(out), "\n")[3], "│")
		vs := strings.TrimSpace(cells[len(cells)-2])
		if i == 0 {
			assert.Equal(t, "-", vs)
		} else {
			assert.Regexp(t, `^[+-]\d+\.\d %$`, vs)
		}
	}
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 3, "header and two rows")
	assert.Equal(t, benchCSVHeader, rows[0])
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		assert.Equal(t, "switch16-uniform-50", r[col["benchmark"]])
		for _, k := range []string{"wall_s", "cpu_s", "events", "block_hops_per_s", "packets_per_s", "peak_mem_mib"} {
			v, err := strconv.ParseFloat(r[col[k]], 64)
			require.NoError(t, err, k)
			assert.Greater(t, v, 0.0, k)
		}
	}
}

// TestBenchCSVHeaderMismatch: appending to a CSV another version wrote
// (a different header) is a user error, exit 2, one line naming the file.
// TestBenchCSVHeaderMismatch: a --csv bench cannot append to is refused
// before anything runs, exit 2, on one line that says what it is: a
// directory, a file that is no bench CSV at all, or a bench CSV of another
// layout (an earlier hcasim's: only then the version hint).
func TestBenchCSVHeaderMismatch(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, csv string
		want      []string
		not       string
	}{
		{"older bench CSV", writeFile(t, "old.csv", "date,commit,benchmark,wall_s,sim_time_ns\n"),
			[]string{"old.csv: its header is not", "written by another hcasim version?"}, ""},
		{"first bench layout", writeFile(t, "v1.csv", "date,version,benchmark,wall_s,sim_time_ns,events,block_hops_per_s,packets_per_s,peak_mem_mib\n"),
			[]string{"v1.csv: its header is not", "written by another hcasim version?"}, ""},
		{"directory", dir,
			[]string{"--csv " + dir + ": is a directory; name a CSV file to append to", filepath.Join(dir, "bench-results.csv")}, "version"},
		{"not a CSV", writeFile(t, "go.mod", "module example.com/x\n\ngo 1.26\n"),
			[]string{"go.mod: not a CSV hcasim bench wrote", "name a new file"}, "version"},
		{"another CSV", writeFile(t, "prices.csv", "date,price\n2024-01-01,3\n"),
			[]string{"prices.csv: not a CSV hcasim bench wrote"}, "version"},
		{"broken CSV", writeFile(t, "quote.csv", "a,b\"c\n"),
			[]string{"quote.csv: not a CSV hcasim bench wrote"}, "version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run("bench", "switch16-uniform-50", "--csv", c.csv)
			assert.Equal(t, 2, code, errOut)
			assert.Empty(t, out, "nothing ran")
			for _, w := range c.want {
				assert.Contains(t, errOut, w)
			}
			if c.not != "" {
				assert.NotContains(t, errOut, c.not)
			}
			assert.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		})
	}
}

// TestBenchBadInput: a name that is neither a shipped benchmark nor a file,
// a bad --set (once, not once per benchmark) and a config with a sweep (a
// child would print every point) are refused before anything runs; all
// exit 2 with one line and write no CSV (nothing was measured).
func TestBenchBadInput(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	t.Chdir(t.TempDir()) // a sweep writes hcasim-out here
	csvPath := filepath.Join(t.TempDir(), "bench.csv")
	swept := writeFile(t, "swept.yaml", sweepConfig)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"bench", "switch16-uniform-50", "nosuch"}, []string{`"nosuch" is neither a benchmark`, "switch16-uniform-50"}},
		{[]string{"bench", "switch16-uniform-50", "--set", "workload.measure_ns=-5"}, []string{"workload.measure_ns", "-5"}},
		{[]string{"bench", "--set", "link.mtu=99"}, []string{"bench: --set link.mtu=99: link.mtu: 99 is not an IB MTU"}},
		{[]string{"bench", "--set", "link.mtu"}, []string{`bench: --set "link.mtu": want key=value`}},
		{[]string{"bench", swept}, []string{"bench: " + swept + ": has a sweep: section", "single design points"}},
	} {
		code, out, errOut := run(append(c.args, "--csv", csvPath)...)
		assert.Equal(t, 2, code, errOut)
		assert.Empty(t, out)
		for _, w := range c.want {
			assert.Contains(t, errOut, w)
		}
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, errOut)
		assert.NotContains(t, errOut, "exit status")
		_, err := os.Stat(csvPath)
		assert.True(t, os.IsNotExist(err), "no CSV when nothing was measured")
	}
}

// TestBenchCSVBadRow: a row that does not fit the header is refused before
// anything runs, exit 2, naming the file and the line.
func TestBenchCSVBadRow(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bench.csv")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(benchCSVHeader, ",")+"\nx,y\n"), 0o644))
	code, out, errOut := run("bench", "switch16-uniform-50", "--csv", p)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, p)
	assert.Contains(t, errOut, "line 2")
}

// TestBenchReadable: the printed table keeps the CSV's units, rounded:
// seconds to the millisecond, nanoseconds and events as grouped integers,
// rates to three significant digits with k/M/G, MiB to one decimal.
func TestBenchReadable(t *testing.T) {
	got := readable([]string{"fattree64-uniform-30", "1.07470677", "1.073707", "305472.352", "7030566",
		"1.70710429e+07", "265834.347", "29.8867188"})
	assert.Equal(t, []string{"fattree64-uniform-30", "1.075", "1.074", "305,472", "7,030,566", "17.1 M", "266 k", "29.9"}, got)
	assert.Equal(t, "999", groupDigits(999))
	assert.Equal(t, "1,000", groupDigits(1000))
	assert.Equal(t, "-12,345,678", groupDigits(-12345678))
	assert.Equal(t, "1.5 G", siRate(1.5e9))
	assert.Equal(t, "950", siRate(950))
}

// TestCPUVsLast: the change is against the last row's CPU time, (1.5 − 2.0)
// / 2.0 = −25.0 %, and only when that row did the same work: a different
// simulated time or event count, or no row, gives "-".
func TestCPUVsLast(t *testing.T) {
	row := func(cpu, simNs, events string) []string {
		return []string{"date", "commit", "b", "1", cpu, simNs, events, "1", "1", "1"}
	}
	assert.Equal(t, "-25.0 %", cpuVsLast(row("1.5", "100", "7"), row("2.0", "100", "7")))
	assert.Equal(t, "+10.0 %", cpuVsLast(row("2.2", "100", "7"), row("2.0", "100", "7")))
	assert.Equal(t, "-", cpuVsLast(row("1.5", "100", "7"), row("2.0", "100", "8")), "other events")
	assert.Equal(t, "-", cpuVsLast(row("1.5", "100", "7"), row("2.0", "200", "7")), "other simulated time")
	assert.Equal(t, "-", cpuVsLast(row("1.5", "100", "7"), nil), "no earlier row")
}

// TestBenchCSVCheckedFirst: a --csv that cannot be written is refused
// before any benchmark runs (it used to be found after all of them), and
// an empty one is refused.
func TestBenchCSVCheckedFirst(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	nodir := filepath.Join(t.TempDir(), "nodir", "x.csv")
	for _, c := range []struct{ csv, want string }{
		{nodir, "--csv: open " + nodir + ": no such file or directory"},
		{"", "--csv: an empty path"},
	} {
		code, out, errOut := run("bench", "switch16-uniform-50", "--set", "workload.warmup_ns=1000",
			"--set", "workload.measure_ns=2000", "--csv", c.csv)
		assert.Equal(t, 2, code, errOut)
		assert.Empty(t, out, "nothing ran")
		assert.Contains(t, errOut, c.want)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	}
}

// TestBenchNames: a config file in the current directory is run by its
// name (base.yaml was taken for bench/base.yaml and refused), while a
// shipped benchmark's name without .yaml keeps its meaning beside a file
// of that name.
func TestBenchNames(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	t.Chdir(t.TempDir())
	base, ok := configs.Lookup("bench/switch16-uniform-50.yaml")
	require.True(t, ok)
	require.NoError(t, os.WriteFile("base.yaml", base, 0o644))
	require.NoError(t, os.WriteFile("switch16-uniform-50", []byte("not: a config\n"), 0o644))
	csvPath := filepath.Join(t.TempDir(), "bench.csv")
	code, out, errOut := run("bench", "base.yaml", "switch16-uniform-50", "--set", "workload.warmup_ns=1000",
		"--set", "workload.measure_ns=2000", "--csv", csvPath)
	require.Equal(t, 0, code, errOut)
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 3, "header and two rows:\n%s", out)
	assert.Equal(t, "base", rows[1][2])
	assert.Equal(t, "switch16-uniform-50", rows[2][2])
	// The same config and overrides: the same work.
	assert.Equal(t, rows[1][5:7], rows[2][5:7], "sim_time_ns and events")

	p, ok := benchPath("base.yaml")
	assert.Equal(t, "base.yaml", p)
	assert.True(t, ok)
	p, ok = benchPath("switch16-uniform-50")
	assert.Equal(t, "bench/switch16-uniform-50", p)
	assert.True(t, ok)
	p, ok = benchPath("switch16-uniform-50.yaml")
	assert.Equal(t, "bench/switch16-uniform-50.yaml", p, "no such file here: the shipped one")
	assert.True(t, ok)
	_, ok = benchPath("nosuch.yaml")
	assert.False(t, ok)
	// A shipped design point that is no benchmark, by the name -config
	// takes.
	p, ok = benchPath("edr.yaml")
	assert.Equal(t, "edr.yaml", p)
	assert.True(t, ok)
}

// TestBenchInterrupted: a SIGINT (here the stop request a signal makes,
// after the first child's run) starts no more benchmarks; the one measured
// is printed and appended (header and one row), stderr says so on one line,
// and the exit code is 130 (128 + SIGINT's 2). The same with --scale,
// stopped after three of four runs: the first size's two windows are a
// table row and CSV rows, the second size's first window a CSV row only.
func TestBenchInterrupted(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	var runs int
	interruptAfter := func(n int) {
		runs = 0
		benchAfterRun = func() {
			if runs++; runs == n {
				currentStop.Load().request(syscall.SIGINT)
			}
		}
	}
	t.Cleanup(func() { benchAfterRun = nil })
	readRows := func(p string) [][]string {
		f, err := os.Open(p)
		require.NoError(t, err)
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		require.NoError(t, err)
		return rows
	}

	csvPath := filepath.Join(t.TempDir(), "bench.csv")
	interruptAfter(1)
	code, out, errOut := run("bench", "switch16-uniform-50", "switch16-uniform-90", "--set", "workload.warmup_ns=1000",
		"--set", "workload.measure_ns=2000", "--csv", csvPath)
	assert.Equal(t, 130, code)
	assert.Equal(t, 1, runs, "no second benchmark started")
	assert.Contains(t, out, "switch16-uniform-50")
	assert.NotContains(t, out, "switch16-uniform-90")
	assert.Equal(t, "hcasim: bench: SIGINT: 1 of 2 benchmarks measured and appended to "+csvPath+"; the rest not run\n", errOut)
	rows := readRows(csvPath)
	require.Len(t, rows, 2, "header and the one row measured")
	assert.Equal(t, benchCSVHeader, rows[0])

	csvPath = filepath.Join(t.TempDir(), "scale.csv")
	interruptAfter(3)
	code, out, errOut = run("bench", "switch16-uniform-50", "--scale", "4,8", "--windows", "10000,30000",
		"--set", "workload.warmup_ns=1000", "--csv", csvPath)
	assert.Equal(t, 130, code)
	assert.Equal(t, 3, runs)
	assert.Regexp(t, `│ 4\s+│`, out)
	assert.NotRegexp(t, `│ 8\s+│`, out)
	assert.Equal(t, "hcasim: bench: SIGINT: 3 of 4 runs measured and appended to "+csvPath+"; the rest not run\n", errOut)
	assert.Len(t, readRows(csvPath), 4, "header and three rows")
}
