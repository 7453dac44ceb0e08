package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
	"github.com/hcasim/hcasim/verif"
	"github.com/hcasim/hcasim/workload"
)

// userError is a mistake in flags, config or input files: exit 2.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func userErrorf(format string, a ...any) error { return &userError{fmt.Sprintf(format, a...)} }

// runFlags are the flags of a run.
type runFlags struct {
	config     string
	sets       []string
	format     string
	out        string
	seed       uint64
	seedSet    bool
	check      bool
	trace      string
	tracePaths []string
	traceKinds []string
	vcd        string
	pcap       string
	snaplen    int
	jobs       int
	shard      string
	shardOf    *sweep.Shard // --shard parsed; nil without it
	quiet      bool
	resume     bool
	cpuprofile string
	memprofile string

	args []string     // the arguments as given: the command that continues an interrupted sweep
	stop *stopRequest // the run's stop request (SIGINT, SIGTERM); nil: never stopped
}

// longFlags lists the long names a user may also spell with one dash
// (`-config ndr.yaml`, as most simulators' users type).
var longFlags = []string{"config", "set", "format", "out", "seed", "check", "trace", "trace-path",
	"trace-kind", "vcd", "pcap", "pcap-snaplen", "jobs", "shard", "quiet", "resume", "cpuprofile", "memprofile", "report", "tolerance-ps",
	"fields", "ignore-kinds", "path", "context", "csv", "testbench", "testbench-packets"}

// normalizeArgs rewrites `-config x` and `-config=x` to their `--` form.
func normalizeArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 {
			name, _, _ := strings.Cut(a[1:], "=")
			for _, f := range longFlags {
				if name == f {
					out[i] = "-" + a
				}
			}
		}
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
	}
	return out
}

// runFlagSet defines the run's flags on f (usage and docs/config.md list
// them; TestRunFlagsDocumented).
func runFlagSet(f *runFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("hcasim", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVarP(&f.config, "config", "c", "", "")
	fs.StringArrayVar(&f.sets, "set", nil, "")
	fs.StringVar(&f.format, "format", "table", "")
	fs.StringVar(&f.out, "out", "", "")
	fs.Var((*seedValue)(&f.seed), "seed", "")
	fs.BoolVar(&f.check, "check", false, "")
	fs.StringVar(&f.trace, "trace", "", "")
	fs.StringArrayVar(&f.tracePaths, "trace-path", nil, "")
	fs.StringArrayVar(&f.traceKinds, "trace-kind", nil, "")
	fs.StringVar(&f.vcd, "vcd", "", "")
	fs.StringVar(&f.pcap, "pcap", "", "")
	fs.IntVar(&f.snaplen, "pcap-snaplen", 0, "")
	fs.IntVar(&f.jobs, "jobs", runtime.NumCPU(), "")
	fs.StringVar(&f.shard, "shard", "", "")
	fs.BoolVar(&f.quiet, "quiet", false, "")
	fs.BoolVar(&f.resume, "resume", false, "")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "")
	fs.StringVar(&f.memprofile, "memprofile", "", "")
	return fs
}

func parseRunFlags(args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := runFlagSet(f)
	if err := fs.Parse(normalizeArgs(args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		if ferr := flagValueError("", err); ferr != nil {
			return nil, ferr
		}
		return nil, userErrorf("%s (see hcasim help)", err)
	}
	if fs.NArg() > 0 {
		if a := fs.Arg(0); f.config == "" && isConfigName(a) {
			return nil, userErrorf("unexpected argument %q (to run a config, give -config %s; see hcasim help)", a, a)
		}
		return nil, userErrorf("unexpected argument %q (see hcasim help)", fs.Arg(0))
	}
	f.seedSet = fs.Changed("seed")
	if f.config == "" {
		return nil, userErrorf("-config: no config given (a file, or a shipped name such as ndr.yaml)")
	}
	switch f.format {
	case "table", "csv", "json":
	default:
		return nil, userErrorf("--format: %q is not a format (table, csv, json)", f.format)
	}
	if f.jobs < 1 || f.jobs > 4096 {
		return nil, userErrorf("--jobs: %d is out of range (1 to 4096)", f.jobs)
	}
	// Each of these is off when absent; given empty it would be silently
	// off too, which is never what was meant.
	for _, e := range []struct{ flag, want string }{{"out", "a directory"}, {"trace", "a file"}, {"vcd", "a file"}, {"pcap", "a file"},
		{"shard", "I/N, e.g. 0/4"}, {"cpuprofile", "a file"}, {"memprofile", "a file"}} {
		if fs.Changed(e.flag) && fs.Lookup(e.flag).Value.String() == "" {
			return nil, userErrorf("--%s: an empty value (give %s, or omit --%s)", e.flag, e.want, e.flag)
		}
	}
	if fs.Changed("pcap-snaplen") {
		if f.pcap == "" {
			return nil, userErrorf("--pcap-snaplen: cuts the packets --pcap writes, and --pcap is not given")
		}
		if f.snaplen < 0 || f.snaplen > maxSnaplen {
			return nil, userErrorf("--pcap-snaplen: %d is out of range (0 for whole packets, or 1 to %d bytes kept of each)",
				f.snaplen, maxSnaplen)
		}
	}
	if f.resume && (f.trace != "" || f.vcd != "" || f.pcap != "") {
		return nil, userErrorf("--resume: reuses the points an interrupted sweep finished, which do not run again, so --trace, --vcd and --pcap would miss them; trace a point in a run of its own")
	}
	if err := checkTraceFilter(f, fs); err != nil {
		return nil, err
	}
	if err := checkOutputFiles(f); err != nil {
		return nil, err
	}
	if f.shard != "" {
		sh, err := sweep.ParseShard(f.shard)
		if err != nil {
			return nil, err
		}
		if f.out == "" {
			return nil, userErrorf("--shard %s: needs --out DIR (hcasim merge reads the shards' directories)", f.shard)
		}
		f.shardOf = &sh
	}
	return f, nil
}

// seedValue is --seed: a whole number from 0 to 2^64 − 1, written as the
// config's seed may be (7, or 1e3: a float that is whole and in range), so
// that --seed 1e3 and seed: 1e3 mean the same seed. Its Type is uint64's,
// so a refusal reads as any whole-number flag's (flagValueError).
type seedValue uint64

func (s *seedValue) String() string { return strconv.FormatUint(uint64(*s), 10) }
func (s *seedValue) Type() string   { return "uint64" }

func (s *seedValue) Set(v string) error {
	if u, err := strconv.ParseUint(v, 10, 64); err == nil {
		*s = seedValue(u)
		return nil
	}
	// 2^64 is exact as a float64; a whole float below it converts exactly.
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f >= 1<<64 {
		return fmt.Errorf("not a whole number from 0 to %d", uint64(math.MaxUint64))
	}
	*s = seedValue(f)
	return nil
}

// flagValueError is the one line for a flag given a value of the wrong
// kind (pflag's InvalidValueError, which quotes Go's parser: `invalid
// argument "abc" for "--scale" flag: strconv.Atoi: parsing "abc": invalid
// syntax`): the flag, the value and what it takes; prefix names the
// subcommand ("bench: "). Nil for any other error.
func flagValueError(prefix string, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return nil
	}
	fl := ive.GetFlag()
	want, ok := map[string]string{
		"int":      "a whole number",
		"uint64":   "a whole number from 0 to 18446744073709551615",
		"intSlice": "a comma-separated list of whole numbers",
		"bool":     "true or false",
	}[fl.Value.Type()]
	if !ok {
		want = "a " + fl.Value.Type()
	}
	return userErrorf("%s--%s: %q is not %s", prefix, fl.Name, ive.GetValue(), want)
}

// maxSnaplen is the largest --pcap-snaplen: tcpdump's and Wireshark's
// largest snapshot length, far above any IB packet (4,096 bytes of payload
// and its headers).
const maxSnaplen = 262144

// checkOutputFiles refuses two output flags naming one file: the later
// writer would silently replace the earlier one's output (a trace
// overwritten by the waveform, or by a profile).
func checkOutputFiles(f *runFlags) error {
	type output struct{ flag, path string }
	var outs []output
	for _, o := range []output{{"trace", f.trace}, {"vcd", f.vcd}, {"pcap", f.pcap}, {"cpuprofile", f.cpuprofile}, {"memprofile", f.memprofile}} {
		if o.path == "" {
			continue
		}
		for _, prev := range outs {
			if samePath(prev.path, o.path) {
				return userErrorf("--%s: %s is also --%s's file; give each output its own file", o.flag, o.path, prev.flag)
			}
		}
		outs = append(outs, o)
	}
	return nil
}

// samePath reports whether a and b name one file: the same cleaned
// absolute path, or, for files that exist, the same file (a link).
func samePath(a, b string) bool {
	aa, errA := filepath.Abs(a)
	bb, errB := filepath.Abs(b)
	if errA == nil && errB == nil && aa == bb {
		return true
	}
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// checkTraceFilter checks --trace-path and --trace-kind before the run:
// each pattern can match a component's name (verif.GlobCanMatch), each
// kind is one, and a trace or waveform is written for them to filter.
// --trace-kind filters the trace only: a waveform's signals need every kind
// they come from (busy: tx_start and tx_end; credits: tx_start and
// credit_update), so a VCD cut by kind would show wrong values.
func checkTraceFilter(f *runFlags, fs *pflag.FlagSet) error {
	if fs.Changed("trace-path") && f.trace == "" && f.vcd == "" && f.pcap == "" {
		return userErrorf("--trace-path: filters what --trace, --vcd and --pcap write, and none is given")
	}
	if fs.Changed("trace-kind") && f.trace == "" {
		msg := "--trace-kind: filters what --trace writes, and --trace is not given"
		if f.vcd != "" || f.pcap != "" {
			msg += " (--vcd and --pcap are not filtered by kind)"
		}
		return userErrorf("%s", msg)
	}
	for _, v := range f.tracePaths {
		for _, glob := range strings.Split(v, ",") {
			glob = strings.TrimSpace(glob)
			if glob == "" {
				return userErrorf("--trace-path: %q holds an empty pattern (give a glob such as Fabric.Leaf[2].*)", v)
			}
			if !verif.GlobCanMatch(glob) {
				return userErrorf("--trace-path: %q can match no component (names look like Fabric.Leaf[2].Port[5]: "+
					"capitalised parts joined by '.', each with an optional [index]; '*' matches any run of characters, "+
					"'?' one, anything else itself)", glob)
			}
		}
	}
	for _, v := range f.traceKinds {
		for _, k := range strings.Split(v, ",") {
			if strings.TrimSpace(k) == "" {
				return userErrorf("--trace-kind: %q holds an empty kind (give one such as tx_start)", v)
			}
		}
	}
	if _, err := verif.ParseFilter("", strings.Join(f.traceKinds, ",")); err != nil {
		return userErrorf("--trace-kind: %v", err)
	}
	return nil
}

// loadConfig reads, overrides and decodes the config named by f.
func loadConfig(f *runFlags) (*fabric.Loaded, error) {
	data, err := config.ReadFile(f.config, configs.Lookup)
	if err != nil {
		return nil, userErrorf("%s: %s", f.config, err)
	}
	sets := f.sets
	if f.seedSet {
		sets = append(append([]string{}, sets...), "seed="+strconv.FormatUint(f.seed, 10))
	}
	l, err := fabric.Load(data, sets)
	if err != nil {
		// A sweep's base value of a key the sweep sets at every point is
		// never run: when every point is valid, so is the sweep, whatever
		// that value (a synthetic sweep over workload.size from a base
		// size only perftest takes). Otherwise the base's error stands.
		base, berr := fabric.LoadSweepBase(data, sets)
		if berr != nil || !sweep.Has(base.Node) {
			return nil, userErrorf("%s: %s", f.config, err)
		}
		if _, xerr := sweep.Expand(base.Node, sweep.Options{Pinned: pinnedKeys(f)}); xerr != nil {
			return nil, userErrorf("%s: %s", f.config, err)
		}
		l = base
	}
	if f.check {
		l.Config.Sim.Check = true
	}
	setFileReaders(l, f.config, f.sets)
	return l, nil
}

// The keys that name a file a run reads.
const (
	traceFileKey    = "workload.trace_file"
	topologyFileKey = "topology.file"
)

// setFileReaders gives l how the files its keys name are read
// (workload.trace_file, topology.file; a sweep's points take them from l):
// a path written in the config file, relative to that file's directory
// (besideConfig), so that a config runs from any directory; a path given
// on the command line with --set, relative to the current directory, as
// a shell user means it; an absolute path as it is.
func setFileReaders(l *fabric.Loaded, configName string, sets []string) {
	l.ReadFile = fileReader(configName, sets, traceFileKey)
	l.Config.Topology.ReadFile = fileReader(configName, sets, topologyFileKey)
}

// fileReader reads the files key names: beside the config, or when --set
// gives the key's value (or its section's, or its sweep's) from the
// current directory first, then, for a name not there, beside the config
// (as -config takes a file before a shipped config's name: a sweep of the
// shipped traces set on the command line still finds them).
func fileReader(configName string, sets []string, key string) func(string) ([]byte, error) {
	beside := besideConfig(configName)
	if !setOnCommandLine(sets, key) || configName == config.Stdin {
		return beside
	}
	here := fromCurrentDir("")
	return func(name string) ([]byte, error) {
		b, err := here(name)
		if err == nil || filepath.IsAbs(name) || !errors.Is(err, os.ErrNotExist) {
			return b, err
		}
		if b, err := beside(name); err == nil {
			return b, nil
		}
		return nil, fmt.Errorf("%s: no such file in the current directory, nor beside the config %s (a relative path given with --set is from the current directory, else the config's)", name, configName)
	}
}

// setOnCommandLine reports whether sets give key's value: key=…,
// sweep.key=…, a section holding it (topology={kind: file, file: …}) or a
// sweep holding it (sweep={topology.file: […]}).
func setOnCommandLine(sets []string, key string) bool {
	for _, s := range sets {
		k, v, _ := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		switch {
		case k == key || k == "sweep."+key:
			return true
		case strings.HasPrefix(key, k+"."):
			var m map[string]any
			if yaml.Unmarshal([]byte(v), &m) == nil {
				if _, ok := m[strings.TrimPrefix(key, k+".")]; ok {
					return true
				}
			}
		case k == "sweep":
			var m map[string]any
			if yaml.Unmarshal([]byte(v), &m) == nil {
				if _, ok := m[key]; ok {
					return true
				}
			}
		}
	}
	return false
}

// fromCurrentDir reads a file by its path as given, relative to the
// current directory; rule says why in the error of a missing one (which
// wraps os.ErrNotExist).
func fromCurrentDir(rule string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) && rule == "" {
			return nil, fmt.Errorf("%s: no such file%w", name, errNotExist{})
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file (%s)%w", name, rule, errNotExist{})
		}
		if err != nil {
			return nil, fmt.Errorf("%s: cannot read: %s", name, strings.TrimPrefix(err.Error(), "open "+name+": "))
		}
		return b, nil
	}
}

// errNotExist marks a missing file's error (errors.Is os.ErrNotExist) and
// prints nothing.
type errNotExist struct{}

func (errNotExist) Error() string        { return "" }
func (errNotExist) Is(target error) bool { return target == os.ErrNotExist }

// besideConfig returns how the files a config's keys name
// (workload.trace_file, topology.file) are read: a relative path from the
// config's own directory, the one on disk for a config file, the shipped
// configs' for a shipped config (configs/examples/replay-halo.trace beside
// replay-halo.yaml), as config.ReadFile found it, the current directory
// for a config read from stdin (-config -); an absolute path as it is.
func besideConfig(configName string) func(string) ([]byte, error) {
	if configName == config.Stdin {
		return fromCurrentDir("the config is read from stdin: a relative path is from the current directory")
	}
	onDisk := false
	if st, err := os.Stat(configName); err == nil && !st.IsDir() {
		onDisk = true
	}
	dir := filepath.Dir(configName)
	return func(name string) ([]byte, error) {
		if filepath.IsAbs(name) || onDisk {
			p := name
			if !filepath.IsAbs(name) {
				p = filepath.Join(dir, name)
			}
			b, err := os.ReadFile(p)
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s: no such file (%s; a relative path is from the config file's directory)", name, p)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: cannot read: %s", name, strings.TrimPrefix(err.Error(), "open "+p+": "))
			}
			return b, nil
		}
		if b, ok := configs.Beside(configName, name); ok {
			return b, nil
		}
		return nil, fmt.Errorf("%s: no such file beside the shipped config %s (a relative path is from the config's directory)", name, configName)
	}
}

func runMain(args []string, stdout, stderr io.Writer) int {
	f, err := parseRunFlags(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stdout, usage) // --help, -h: what "hcasim help" prints
		return 0
	}
	if err != nil {
		return fail(stderr, err)
	}
	f.args = args
	f.stop = newStopRequest()
	currentStop.Store(f.stop)
	defer currentStop.CompareAndSwap(f.stop, nil)
	defer watchSignals(f.stop, stderr)()
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return fail(stderr, outFileError("--cpuprofile", f.cpuprofile, err))
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fail(stderr, err)
		}
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	// The heap profile is written after the run, but its file is made now:
	// an unwritable path is refused before the run, not silently after it.
	var mf *os.File
	if f.memprofile != "" {
		var err error
		if mf, err = os.Create(f.memprofile); err != nil {
			return fail(stderr, outFileError("--memprofile", f.memprofile, err))
		}
		defer mf.Close()
	}
	l, err := loadConfig(f)
	if err != nil {
		return fail(stderr, err)
	}
	if f.out != "" {
		if err := prepareOut(f.out); err != nil {
			return fail(stderr, outError("--out", f.out, err))
		}
	}
	res, runErr := execute(l, f, stderr)
	code := 0
	var intr *interruptedError
	if errors.As(runErr, &intr) {
		// What finished is written, then the one line that says so.
		if res != nil {
			if err := present(res, f, stdout, false); err != nil {
				fail(stderr, err)
			}
		}
		fmt.Fprintf(stderr, "hcasim: %s\n", intr.msg)
		return signalExitCode(intr.sig)
	}
	if runErr != nil {
		var own *userError
		if isUserError(runErr) && !errors.As(runErr, &own) {
			// A mistake the model found while expanding, building or
			// running the config (a sweep key, a combination of keys, a
			// deadlock, the time limit) names the config like a mistake
			// found while loading it. The CLI's own errors name their
			// source already: a flag, a file, the sweep's summary.
			runErr = userErrorf("%s: %s", f.config, runErr)
		}
		code = fail(stderr, runErr)
	}
	// A single design point that failed computed nothing: the one line on
	// stderr is the whole answer on the terminal. --out still gets its
	// results, the error in them, in place of an earlier run's.
	show := !(res != nil && len(res.Points) == 1 && res.Points[0].Error != "" && len(res.Points[0].Metrics) == 0)
	if res != nil {
		if err := present(res, f, stdout, show); err != nil && code == 0 {
			code = fail(stderr, err)
		}
	}
	if mf != nil {
		runtime.GC()
		if err := pprof.WriteHeapProfile(mf); err != nil && code == 0 {
			code = fail(stderr, fmt.Errorf("--memprofile: %v", err))
		}
	}
	return code
}

// present writes the --out files and, when show is set, prints the result
// in the chosen format. The result is printed even when the files cannot be
// written (the run's time is spent; its answer is not lost): the files'
// error is returned after it.
func present(res *report.Result, f *runFlags, stdout io.Writer, show bool) error {
	ex := takeExtras(res)
	var werr error
	if f.out != "" {
		write := func() error { return report.WriteFiles(f.out, res) }
		if ex.cells != nil {
			// A resumed sweep: the points read back keep their cells.
			write = func() error { return report.WriteMerged(f.out, res, ex.cells) }
		}
		if err := write(); err != nil {
			werr = outError("--out", f.out, err)
			// The run's time is spent: its results go where they can.
			if dir, rerr := rescueResults(res, ex); rerr == nil {
				werr = userErrorf("%v; the results are in %s instead", werr, dir)
			}
		} else if err := writePlots(f.out, res, ex); err != nil {
			// The results are where they were asked for; what failed
			// is what is drawn or summarised from them.
			werr = userErrorf("%v; %s and %s are written there, the files drawn from them are not", outError("--out", f.out, err), resultsJSON, resultsCSV)
		}
	}
	var perr error
	switch {
	case !show:
	case f.format == "table" && len(res.Points) == 0:
		// A shard of more shards than designs ran none: a table of no
		// rows would be a header of no columns (stderr says why).
	case f.format == "json":
		perr = report.WriteJSON(stdout, res)
	case f.format == "csv" && ex.cells != nil:
		perr = report.WriteCSVCells(stdout, res.Points, ex.cells)
	case f.format == "csv":
		perr = report.WriteCSV(stdout, res)
	case ex.summary != nil:
		// A replicated sweep's table is its designs, mean ± CI; the csv
		// and json formats stay the points (summary.* has the designs).
		perr = report.WriteSummaryTable(stdout, ex.summary, tableColumns(res))
	default:
		perr = report.WriteTable(stdout, res, tableColumns(res))
	}
	if werr != nil {
		return werr
	}
	return perr
}

// prepareOut makes the --out directory and checks a file can be made in
// it, so that an unusable --out is refused before a run rather than after
// it, when the run's time is spent. Its errors are the files' own
// (outError says them).
func prepareOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A directory named as any file hcasim may write there (the results,
	// a plot, the summary, knee.csv, shard.json) stops that write after
	// the run: refuse it now. Only the results were checked, and a
	// directory named latency-vs-offered-load.svg failed a finished
	// sweep at its plots.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && isOutputFile(e.Name()) {
			return &fs.PathError{Op: "write", Path: filepath.Join(dir, e.Name()), Err: errors.New("is a directory")}
		}
	}
	f, err := os.CreateTemp(dir, ".hcasim-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// outError is the one line for an output directory (flag names it: "--out",
// "merge: --out") that cannot be made or written: the directory as given,
// what stands in the way, and what is allowed. err is what making or
// writing it returned.
func outError(flag, dir string, err error) error {
	const allowed = "give a directory that exists or can be made, and that can be written in"
	// A file where a directory must be: dir itself, or the nearest path
	// above it that exists.
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if st, serr := os.Stat(p); serr == nil {
			if !st.IsDir() && p == filepath.Clean(dir) {
				return userErrorf("%s: %s is a file, not a directory (%s)", flag, dir, allowed)
			}
			if !st.IsDir() {
				return userErrorf("%s: %s cannot be made: %s is a file, not a directory (%s)", flag, dir, p, allowed)
			}
			break
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		// Not the file system's answer (a plot that could not be drawn):
		// our bug, exit 1.
		return fmt.Errorf("%s: %s: %v", flag, dir, err)
	}
	why := pe.Err.Error()
	if name := filepath.Base(pe.Path); filepath.Dir(pe.Path) == filepath.Clean(dir) && !strings.HasPrefix(name, ".") {
		// One of the files hcasim writes there.
		if st, serr := os.Stat(pe.Path); serr == nil && st.IsDir() {
			return userErrorf("%s: %s holds a directory named %s, the name of a file hcasim writes there (move it, or give another directory)", flag, dir, name)
		}
		return userErrorf("%s: %s in %s cannot be written: %s (%s)", flag, name, dir, why, allowed)
	}
	return userErrorf("%s: %s cannot be made or written: %s (%s)", flag, dir, why, allowed)
}

// outFileError is the one line for an output file (flag names it:
// "--trace", "topology: -o") that cannot be created: the path as given,
// what stands in the way, and what is allowed. err is what creating it
// returned.
func outFileError(flag, path string, err error) error {
	if st, serr := os.Stat(path); serr == nil && st.IsDir() {
		example := map[string]string{"--trace": "run.trace", "--vcd": "run.vcd", "--pcap": "run.pcapng",
			"--cpuprofile": "cpu.pprof", "--memprofile": "mem.pprof", "topology: -o": "fabric.topo"}[flag]
		if example == "" {
			example = "out"
		}
		return userErrorf("%s: %s is a directory (give a file name, e.g. %s)", flag, path, filepath.Join(path, example))
	}
	dir := filepath.Dir(path)
	for p := dir; ; p = filepath.Dir(p) {
		if st, serr := os.Stat(p); serr == nil {
			if !st.IsDir() {
				return userErrorf("%s: %s cannot be created: %s is a file, not a directory", flag, path, p)
			}
			if p != dir {
				return userErrorf("%s: %s cannot be created: its directory %s does not exist (give a file in a directory that does)", flag, path, dir)
			}
			break
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	why := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		why = pe.Err.Error()
	}
	return userErrorf("%s: %s cannot be created: %s (give a file that can be written)", flag, path, why)
}

// rescueResults writes results.json and results.csv into a new directory
// under the system's temporary directory, for a run whose --out failed
// after the run: its time is spent, and a table on stdout has only the
// headline metrics. It returns the directory.
func rescueResults(res *report.Result, ex *sweepExtras) (string, error) {
	dir, err := os.MkdirTemp("", "hcasim-results-")
	if err != nil {
		return "", err
	}
	if ex.cells != nil {
		err = report.WriteMerged(dir, res, ex.cells)
	} else {
		err = report.WriteFiles(dir, res)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// fail prints err on one line and returns its exit code.
func fail(stderr io.Writer, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	fmt.Fprintf(stderr, "hcasim: %s\n", msg)
	if isUserError(err) {
		return 2
	}
	return 1
}

// isUserError reports whether err is the user's (exit 2): a bad flag,
// config or file, a valid config this model cannot run, or a run that hit
// sim.max_time_ns.
func isUserError(err error) bool {
	var ue *userError
	var ce *config.Error
	var un *fabric.UnsupportedError
	var tl *workload.TimeLimitError
	return errors.As(err, &ue) || errors.As(err, &ce) || errors.As(err, &un) || errors.As(err, &tl)
}
