package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/pflag"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
)

func init() { subcommands["bench"] = benchMain }

// benchMain runs the benchmark design points of configs/bench, each in a
// child process so that its peak memory is its own, prints per benchmark the
// wall time, the child's CPU time (user + sys: on a shared machine wall time
// also counts other tenants), simulated time, events, 64-byte block-hops and
// packets per wall-second and peak memory, and appends one row per benchmark
// to a CSV (usage: benchUsage).
func benchMain(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("hcasim bench", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	csvPath := fs.String("csv", "bench-results.csv", "")
	var sets []string
	fs.StringArrayVar(&sets, "set", nil, "")
	scale := fs.IntSlice("scale", nil, "")
	windowList := fs.IntSlice("windows", []int{10000, 30000}, "")
	if err := fs.Parse(normalizeArgs(args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, benchUsage)
			return 0
		}
		if ferr := flagValueError("bench: ", err); ferr != nil {
			return fail(stderr, ferr)
		}
		return fail(stderr, userErrorf("bench: %v (%s)", err, benchUsageLine))
	}
	windows, err := checkScaleFlags(*scale, *windowList, fs.Changed("windows"), fs.NArg())
	if err != nil {
		return fail(stderr, err)
	}
	if len(*scale) > 0 {
		// --scale sets the hosts at each size; a --set of them too would
		// be checked at one number and run at others.
		for _, s := range sets {
			if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == "topology.hosts" {
				return fail(stderr, userErrorf("bench: --set %s with --scale %s: --scale sets topology.hosts at each size; drop the --set", s, intList(*scale)))
			}
		}
	}
	var shipped []string // the shipped benchmarks' short names
	for _, n := range configs.Names() {
		if strings.HasPrefix(n, "bench/") {
			shipped = append(shipped, strings.TrimSuffix(strings.TrimPrefix(n, "bench/"), ".yaml"))
		}
	}
	names := append([]string(nil), fs.Args()...)
	if len(names) == 0 {
		for _, n := range shipped {
			names = append(names, "bench/"+n)
		}
	}
	// Every name is resolved, and its config loaded with the overrides,
	// before anything runs: a typo in the third name must not cost the
	// first two runs' time and then fail, nor a bad --set fail once per
	// benchmark.
	for k, name := range names {
		path, ok := benchPath(name)
		if !ok {
			return fail(stderr, userErrorf("bench: %q is neither a benchmark (%s) nor a config file", name, strings.Join(shipped, ", ")))
		}
		names[k] = path
		err := checkBenchConfig(name, path, sets)
		if err != nil && len(*scale) > 0 && checkBenchConfig(name, path, append([]string{"topology.hosts=" + strconv.Itoa((*scale)[0])}, sets...)) == nil {
			// --scale sets the hosts: overrides that need its first size
			// (a dragonfly-plus needs two groups' worth) are fine. The
			// size goes first, so that the overrides are still checked
			// one by one after it.
			err = nil
		}
		if err != nil {
			return fail(stderr, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fail(stderr, err)
	}
	// Every row names the code as it was when the command started: read
	// once, so a commit or merge in the checkout while the runs go on (the
	// revision falls back to HEAD when the binary carries none) does not
	// split one invocation's rows between two commits.
	rev := revision()
	// SIGINT or SIGTERM: no more benchmarks start, and the rows measured
	// are still printed and appended (a Ctrl-C on a terminal reaches the
	// child too, whose run is then lost; a kill of this process alone lets
	// the child's run finish and keeps it).
	stop := newStopRequest()
	currentStop.Store(stop)
	defer currentStop.CompareAndSwap(stop, nil)
	defer watchSignals(stop, stderr)()
	var pts []scalePoint
	if len(*scale) > 0 {
		if pts, err = scalePoints(fs.Arg(0), names[0], sets, *scale, windows); err != nil {
			return fail(stderr, err)
		}
	}
	// The CSV is appended to after the runs; an unwritable path is refused
	// now, not once their time is spent.
	if err := checkAppendable(*csvPath); err != nil {
		return fail(stderr, err)
	}
	if pts != nil {
		if _, err := readCSVHistory(*csvPath); err != nil {
			return fail(stderr, err)
		}
		rows, code := benchScale(self, rev, fs.Arg(0), names[0], pts, windows, stop, stdout, stderr)
		if err := appendCSV(*csvPath, rows); err != nil {
			return fail(stderr, userErrorf("--csv: %v", err))
		}
		if sig := stop.signal(); sig != nil {
			fmt.Fprintf(stderr, "hcasim: bench: %s: %d of %d runs measured and appended to %s; the rest not run\n",
				signalName(sig), len(rows), 2*len(pts), *csvPath)
			return signalExitCode(sig)
		}
		return code
	}
	t := tablewriter.NewTable(stdout, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("benchmark", "wall_s", "cpu_s", "sim_time_ns", "events", "block_hops_per_s", "packets_per_s", "peak_mem_mib", "cpu_vs_last")
	last, err := readCSVHistory(*csvPath)
	if err != nil {
		return fail(stderr, err)
	}
	var rows [][]string
	code := 0
	for _, name := range names {
		if stop.signal() != nil {
			break
		}
		row, _, err := runBench(self, rev, name, sets)
		if benchAfterRun != nil {
			benchAfterRun()
		}
		var bad *childUserError
		switch {
		case err != nil && stop.signal() != nil:
			// The child had the signal too: its run is lost, not failed.
			continue
		case errors.As(err, &bad):
			// The child named the bad input in its own one line (a --set
			// key, a config field); the rows already measured are still
			// printed and appended.
			fmt.Fprintln(stderr, bad.line)
			code = 2
			continue
		case err != nil:
			fmt.Fprintf(stderr, "hcasim: bench %s: %v\n", name, err)
			code = max(code, 1)
			continue
		}
		_ = t.Append(append(readable(row[2:]), cpuVsLast(row, last[row[2]])))
		rows = append(rows, row)
	}
	if len(rows) > 0 {
		if err := t.Render(); err != nil {
			return fail(stderr, err)
		}
	}
	if err := appendCSV(*csvPath, rows); err != nil {
		return fail(stderr, userErrorf("--csv: %v", err))
	}
	if sig := stop.signal(); sig != nil {
		fmt.Fprintf(stderr, "hcasim: bench: %s: %d of %d benchmarks measured and appended to %s; the rest not run\n",
			signalName(sig), len(rows), len(names), *csvPath)
		return signalExitCode(sig)
	}
	return code
}

// benchAfterRun, when set (tests), is called after each child run.
var benchAfterRun func()

// benchPath resolves a NAME given to bench to the config the child runs. A
// name with a '/' is a path (or a shipped config's, configs/bench/x.yaml).
// A shipped benchmark's name without .yaml is that benchmark, even beside a
// file of that name; any other name that is a file is that file
// (base.yaml in the current directory); what is left is a shipped
// benchmark's name (switch16-uniform-50.yaml), else a shipped config's
// (edr.yaml, as -config finds it). ok is false when the name is none of
// these.
func benchPath(name string) (path string, ok bool) {
	isFile := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	}
	if strings.Contains(name, "/") {
		_, shipped := configs.Lookup(name)
		return name, shipped || isFile(name)
	}
	bench := "bench/" + name
	_, shipped := configs.Lookup(bench)
	if isFile(name) && !(shipped && !strings.HasSuffix(name, ".yaml")) {
		return name, true
	}
	if !shipped && !isFile(bench) {
		// A shipped design point by the name -config takes (edr.yaml):
		// "hcasim bench edr.yaml" said it was no config file.
		if _, ok := configs.Lookup(name); ok {
			return name, true
		}
	}
	return bench, shipped || isFile(bench)
}

// checkBenchConfig loads a benchmark's config with the --set overrides, as
// its child will, so that bad input is one line before anything runs. A
// bench measures one design point per benchmark: a config with a sweep:
// section is refused (a sweep's child would print every point).
func checkBenchConfig(name, path string, sets []string) error {
	data, err := config.ReadFile(path, configs.Lookup)
	if err != nil {
		return userErrorf("bench: %s: %s", name, err)
	}
	if _, err := fabric.Load(data, nil); err != nil {
		return userErrorf("bench: %s: %s", name, err)
	}
	// The config loads alone: a failure now is an override's, named by
	// the first --set that fails.
	for i := range sets {
		if _, err := fabric.Load(data, sets[:i+1]); err != nil {
			if strings.HasPrefix(err.Error(), "--set") {
				return userErrorf("bench: %s", err)
			}
			return userErrorf("bench: --set %s: %s", sets[i], err)
		}
	}
	l, err := fabric.Load(data, sets)
	if err != nil {
		return userErrorf("bench: %s: %s", name, err)
	}
	if sweep.Has(l.Node) {
		return userErrorf("bench: %s: has a sweep: section, and bench measures single design points "+
			"(run the sweep with hcasim -config %s, or remove it with --set sweep={})", name, path)
	}
	return nil
}

// runBench runs one benchmark in a child process and returns its CSV row
// (date, version, name, wall, CPU, sim time, events, block-hops/s,
// packets/s, MiB) and the run's 64-byte block-hops.
func runBench(self, rev, name string, sets []string) ([]string, float64, error) {
	args := []string{"-config", name, "--format", "json", "--quiet"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(self, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 2 && msg != "" {
			return nil, 0, &childUserError{line: msg}
		}
		return nil, 0, fmt.Errorf("%v: %s", err, msg)
	}
	var res report.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, 0, fmt.Errorf("no result: %v", err)
	}
	if len(res.Points) != 1 {
		// checkBenchConfig refuses sweeps: this is our bug.
		return nil, 0, fmt.Errorf("the run printed %d points, not one", len(res.Points))
	}
	m := res.Points[0].Metrics
	num := func(k string) float64 {
		if v, ok := m[k].(float64); ok {
			return v
		}
		return 0
	}
	var rssKiB int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rssKiB = ru.Maxrss // kilobytes on Linux
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	packets := num("packets_delivered")
	if packets == 0 {
		packets = num("packets")
	}
	f := func(v float64) string { return report.FormatValue(report.Round(v)) }
	simWall := num("wall_s") // the run itself, without process start and config load
	if simWall <= 0 {
		simWall = wall
	}
	return []string{
		time.Now().UTC().Format(time.RFC3339), rev, strings.TrimSuffix(filepath.Base(name), ".yaml"),
		f(wall), f(cpu), f(num("sim_time_ns")), f(num("events")),
		f(num("block_hops") / simWall), f(packets / simWall), f(float64(rssKiB) / 1024),
	}, num("block_hops"), nil
}

// childUserError is a benchmark run that exited 2: bad input, which its
// one line of standard error names.
type childUserError struct{ line string }

func (e *childUserError) Error() string { return e.line }

const benchUsageLine = "usage: hcasim bench [NAME...] [--csv FILE] [--set key=value]... [--scale H,H,... [--windows A,B]]"

const benchUsage = benchUsageLine + `

Runs the benchmarks of configs/bench (all, or the NAMEs given: a shipped
benchmark's name or a config file of one design point, without a sweep),
each in a child process, and prints per benchmark wall and CPU seconds,
simulated time, events, 64-byte block-hops and packets per wall-second,
peak memory, and the CPU time's change against the benchmark's last row in
the CSV when that row did the same work.

      --csv FILE        append one row per benchmark (default bench-results.csv)
      --set key=value   override a config key in every benchmark (repeatable)
      --scale H,H,...   how cost grows with the fabric: run one benchmark at
                        each number of hosts (topology.hosts; a fat-tree-2
                        benchmark takes a third level where two cannot reach
                        them; a dragonfly-plus as many groups as they need),
                        each with two measurement windows, and print
                        the CPU time per 64-byte block-hop between the two
                        (set-up cancels out) and its ratio to the first size
      --windows A,B     the two workload.measure_ns of --scale, in ns
                        (default 10000,30000)

A NAME without '/' is a shipped benchmark when it is one's name without
.yaml (switch16-uniform-50), else a file in the current directory when there
is one (base.yaml), else a shipped benchmark (switch16-uniform-50.yaml),
else a shipped config (edr.yaml).

docs/performance.md explains the figures and how to measure on a shared machine.
`

var benchCSVHeader = []string{"date", "commit", "benchmark", "wall_s", "cpu_s", "sim_time_ns", "events",
	"block_hops_per_s", "packets_per_s", "peak_mem_mib"}

// readCSVHistory reads the CSV bench appends to and returns, per
// benchmark, its last row; a missing or empty file has none. A file whose
// header is not this version's is refused (rows would not line up with
// their columns), as is a row that does not fit the header, named by line.
func readCSVHistory(path string) (map[string][]string, error) {
	last := map[string][]string{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return last, nil
	}
	if err != nil {
		return nil, userErrorf("--csv %s: %v", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, csvIsDir(path)
	}
	r := csv.NewReader(f)
	head, err := r.Read()
	if err == io.EOF {
		return last, nil
	}
	if err != nil || strings.Join(head, ",") != strings.Join(benchCSVHeader, ",") {
		if err == nil && benchLikeHeader(head) {
			return nil, userErrorf("--csv %s: its header is not %q (written by another hcasim version?); name a new file",
				path, strings.Join(benchCSVHeader, ","))
		}
		return nil, userErrorf("--csv %s: not a CSV hcasim bench wrote (its first line is not the header %q); "+
			"name a new file, or one bench wrote", path, strings.Join(benchCSVHeader, ","))
	}
	for {
		row, err := r.Read()
		if err == io.EOF {
			return last, nil
		}
		if err != nil {
			return nil, userErrorf("--csv %s: %v", path, err)
		}
		last[row[2]] = row
	}
}

// benchLikeHeader reports whether head looks like the header of an earlier
// hcasim's bench CSV (columns added, renamed or reordered since): at least
// three of its names are this version's. Every layout bench has written
// shares date, benchmark and wall_s with this one; an unrelated file does
// not.
func benchLikeHeader(head []string) bool {
	shared := 0
	for _, h := range head {
		if slices.Contains(benchCSVHeader, h) {
			shared++
		}
	}
	return shared >= 3
}

// csvIsDir is the error for a --csv that names a directory.
func csvIsDir(path string) error {
	return userErrorf("--csv %s: is a directory; name a CSV file to append to (e.g. %s)", path, filepath.Join(path, "bench-results.csv"))
}

// readable formats a CSV row's figures (benchmark, wall, CPU, simulated
// time, events, block-hops/s, packets/s, MiB) for the printed table: the
// same units as the CSV, rounded, with digit groups and k/M/G for rates.
// The CSV keeps the full figures.
func readable(row []string) []string {
	out := append([]string(nil), row...)
	for i := 1; i < len(out); i++ {
		v, err := strconv.ParseFloat(out[i], 64)
		if err != nil {
			continue
		}
		switch i {
		case 1, 2: // wall_s, cpu_s
			out[i] = strconv.FormatFloat(v, 'f', 3, 64)
		case 3, 4: // sim_time_ns, events
			out[i] = groupDigits(int64(math.Round(v)))
		case 5, 6: // block_hops_per_s, packets_per_s
			out[i] = siRate(v)
		case 7: // peak_mem_mib
			out[i] = strconv.FormatFloat(v, 'f', 1, 64)
		}
	}
	return out
}

// groupDigits writes n with a comma every three digits: 9,332,800.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// siRate writes v with three significant digits and k, M or G: 18.3 M.
func siRate(v float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e9, " G"}, {1e6, " M"}, {1e3, " k"}} {
		if math.Abs(v) >= u.f {
			return strconv.FormatFloat(v/u.f, 'g', 3, 64) + u.s
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// cpuVsLast is the change in CPU time against the benchmark's last row, when
// that row did the same work (the same simulated time and events: the same
// config, overrides and model); otherwise "-". CPU time rather than wall
// time: on a shared machine wall time also counts other tenants.
func cpuVsLast(row, last []string) string {
	const cpu, simTime, events = 4, 5, 6 // columns of benchCSVHeader
	if last == nil || last[simTime] != row[simTime] || last[events] != row[events] {
		return "-"
	}
	was, err1 := strconv.ParseFloat(last[cpu], 64)
	now, err2 := strconv.ParseFloat(row[cpu], 64)
	if err1 != nil || err2 != nil || was <= 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f %%", 100*(now-was)/was)
}

// checkAppendable checks that the --csv file can be opened for appending,
// without leaving a file behind when there was none: a run that measures
// nothing writes no CSV.
func checkAppendable(path string) error {
	if path == "" {
		return userErrorf("--csv: an empty path (name the CSV file to append to)")
	}
	st, statErr := os.Stat(path)
	if statErr == nil && st.IsDir() {
		return csvIsDir(path)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return userErrorf("--csv: %v", err)
	}
	f.Close()
	if os.IsNotExist(statErr) {
		return os.Remove(path)
	}
	return nil
}

// appendCSV appends rows to path, writing the header if the file is new, so
// trends show across commits.
func appendCSV(path string, rows [][]string) error {
	if len(rows) == 0 {
		return nil // nothing measured: no file, not even a header
	}
	st, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if os.IsNotExist(statErr) || statErr == nil && st.Size() == 0 {
		_ = w.Write(benchCSVHeader)
	}
	for _, r := range rows {
		_ = w.Write(r)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// revision names the code a benchmark ran: the VCS revision the binary was
// built from (go build stamps it), else the checkout's HEAD (go run does
// not stamp), else the release version.
func revision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) >= 12 {
			if dirty {
				return rev[:12] + "-dirty"
			}
			return rev[:12]
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return version
}
