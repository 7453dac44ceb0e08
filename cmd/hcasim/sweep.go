package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
)

// KneeFile is the knee summary a knee search writes into --out.
const KneeFile = "knee.csv"

// executeSweep expands the config's sweep, runs its points (or one shard's)
// in parallel and returns them in point order. Every point runs even when
// some fail; the error then counts the failures and is a user's error (exit
// 2) only when every failure was.
func executeSweep(l *fabric.Loaded, f *runFlags, stderr io.Writer) (*report.Result, error) {
	defaultOut := false
	if f.out == "" && f.shard == "" {
		// A sweep's answer is its files and plots as much as its table: write
		// them by default, under hcasim-out/<config name>.
		f.out = defaultOutDir(outName(l.Config.Name, f.config))
		defaultOut = true
	}
	pins := pinnedKeys(f)
	check := f.check
	sw, err := sweep.Expand(l.Node, sweep.Options{Pinned: pins, Fix: func(p *fabric.Loaded) {
		if check {
			p.Config.Sim.Check = true
		}
		p.ReadFile = l.ReadFile
		p.Config.Topology.ReadFile = l.Config.Topology.ReadFile
	}, Check: (*fabric.Loaded).CheckFiles})
	if err != nil {
		return nil, err // runMain names the config
	}
	if (f.trace != "" || f.vcd != "" || f.pcap != "") && (len(sw.Designs) > 1 || sw.Search != nil) {
		return nil, userErrorf("--trace/--vcd/--pcap: a trace follows one design point; pin the sweep's keys with --set to trace one of its points")
	}
	designs := make([]int, len(sw.Designs))
	for i := range designs {
		designs[i] = i
	}
	var manifest *sweep.Manifest
	if sh := f.shardOf; sh != nil {
		designs = sh.Designs(len(sw.Designs))
		manifest = &sweep.Manifest{Shard: sh.Index, Shards: sh.Count, Designs: len(sw.Designs), ConfigHash: l.Hash(), Ran: designs}
	}
	var knee *sweep.KneeManifest
	if sw.Search != nil {
		knee = &sweep.KneeManifest{Key: sw.Search.Key, KneeSpec: *sw.Search.Search}
	}
	if manifest != nil {
		manifest.Knee = knee
		manifest.PointDesigns = []int{}
		if manifest.Ran == nil {
			manifest.Ran = []int{}
		}
	}
	if defaultOut {
		// A given --out was made before the config was run (runMain).
		if err := prepareOut(f.out); err != nil {
			return nil, userErrorf("%v; or --out DIR to choose another", outError("sweep: the default --out", f.out, err))
		}
	}

	// What an interrupted run records, and --resume checks (the build is
	// hashed only then: it reads the whole executable).
	ident := report.Interruption{ConfigHash: l.Hash(), Check: f.check}
	if sh := f.shardOf; sh != nil {
		ident.Shard = fmt.Sprintf("%d/%d", sh.Index, sh.Count)
	}
	var prev *resumed
	if f.resume {
		want := ident
		want.Build = buildID()
		if prev, err = readResume(f.out, sw, designs, want); err != nil {
			return nil, err
		}
		if prev == nil && !f.quiet {
			fmt.Fprintf(stderr, "hcasim: sweep: --resume: no %s in %s: nothing to reuse, every point runs\n", resultsJSON, f.out)
		}
	}
	ctx := context.Background()
	if f.stop != nil {
		ctx = f.stop.ctx
	}

	start := time.Now()
	bar := newProgress(stderr, f.quiet, len(designs)*sw.PointsPerDesign())
	// Points run side by side share the CPUs: a partitioned point gets its
	// share of threads (its results do not depend on them), not one per
	// partition, whose barrier waits would spin against the other points.
	together := max(1, min(f.jobs, len(designs)*sw.PointsPerDesign()))
	threads := max(1, runtime.GOMAXPROCS(0)/together)
	flight := &observedRuns{}
	outs := sw.Run(ctx, designs, f.jobs, prev.runner(sw, sweepRunner(f, threads, flight)), func(sweep.Outcome) { bar.add() })
	// Points with a trace, waveform, capture or checkers stop at their
	// next event once a stop is asked: wait for them to close their files.
	flight.closeAndWait()
	notRun := countNotRun(outs)
	interrupted := notRun > 0
	if interrupted {
		bar.abandon()
		outs = prev.keepFinished(sw, outs)
		notRun = countNotRun(outs)
	} else {
		bar.finish()
	}

	res := &report.Result{Tool: "hcasim", Version: Version(), Config: f.config, Seed: l.Config.Seed, Points: []report.Point{}}
	failed, internal := 0, 0
	var first string
	for _, o := range outs {
		p := report.Point{Params: o.Params, Metrics: o.Metrics}
		if o.Err != nil {
			p.Error = o.Err.Error()
			failed++
			if !isUserError(o.Err) {
				internal++
				var pe *sweep.PanicError
				if errors.As(o.Err, &pe) && os.Getenv("HCASIM_DEBUG") != "" {
					fmt.Fprintf(stderr, "hcasim: point %s: %s\n%s\n", pointText(o.Params), pe, pe.Stack)
				}
			}
			if first == "" {
				first = fmt.Sprintf("point %s: %s", pointText(o.Params), o.Err)
			}
		}
		res.Points = append(res.Points, p)
		if manifest != nil {
			manifest.PointDesigns = append(manifest.PointDesigns, o.Design)
		}
	}
	var rows []map[string]string
	if prev != nil {
		rows = prev.rows(res.Points)
	}
	if interrupted {
		return interruptedSweep(res, rows, notRun, ident, f, defaultOut, flight.err)
	}
	ex := &sweepExtras{manifest: manifest, knee: knee, cells: rows}
	if manifest == nil && knee == nil {
		// A shard holds part of each design's replicas: merge summarises.
		// A knee search's replicas probe loads of their own: knee.csv
		// holds each replica's knee.
		ex.summary = report.Summarise(res, rows)
	}
	if failed > 0 && failed == len(outs) {
		// Nothing ran: no timing, knees, summary or notes of points that
		// computed nothing; the one line is the whole answer on stderr
		// (the results, and stdout, hold each point's error).
		sweepOutputs.Store(res, ex)
		return res, allFailed(outs, f.out, internal > 0)
	}
	if !f.quiet {
		what := "1 point"
		if len(outs) != 1 {
			what = fmt.Sprintf("%d points", len(outs))
		}
		if manifest != nil {
			what += fmt.Sprintf(" (shard %d/%d: %d of %d designs)", manifest.Shard, manifest.Shards, len(designs), len(sw.Designs))
		}
		if defaultOut {
			what += ", written to " + f.out + " (--out DIR to choose)"
		}
		fmt.Fprintf(stderr, "hcasim: sweep: %s in %.3g s (--jobs %d)\n", what, time.Since(start).Seconds(), f.jobs)
		if manifest != nil && len(designs) == 0 {
			// More shards than designs: this one is empty, and its
			// shard.json still tells merge that it ran.
			fmt.Fprintf(stderr, "hcasim: sweep: shard %d/%d holds no design: the sweep has %d, one each in shards 0…%d; merge takes this empty shard too\n",
				manifest.Shard, manifest.Shards, len(sw.Designs), len(sw.Designs)-1)
		}
		if prev != nil {
			fmt.Fprintf(stderr, "hcasim: sweep: resumed from %s: %s reused, %d run\n", prev.path, plural(prev.count(), "finished point"), len(outs)-prev.count())
		}
		if knee != nil {
			for _, k := range sweep.Knees(res.Points, knee.Key, knee.Epsilon) {
				fmt.Fprintf(stderr, "hcasim: sweep: %s%s\n", designText(k.Design), k.Describe(knee.Key))
			}
		}
		if s := ex.summary; s != nil {
			fmt.Fprintf(stderr, "hcasim: sweep: %s, replicated over seed: the table shows mean ± 95 %% CI; %s and %s hold them\n",
				plural(len(s.Designs), "design"), report.SummaryCSV, report.SummaryJSON)
		}
		printNotes(stderr, sweepNotes(sw, designs)...)
	}
	sweepOutputs.Store(res, ex)
	if failed == 0 {
		return res, nil
	}
	msg := fmt.Sprintf("sweep: %d of %d points failed (each has its error in the results); first: %s", failed, len(outs), first)
	if internal > 0 {
		return res, errors.New(msg)
	}
	return res, userErrorf("%s", msg)
}

// allFailed is the one line of a sweep none of whose points ran: how many,
// where the results are, and the error, once when every point has the
// same one (a mistake of the config's that no point escapes), or else the
// first's, as for a sweep only some of whose points failed. It is the
// user's error (exit 2) unless one failure is internal.
func allFailed(outs []sweep.Outcome, out string, internal bool) error {
	same := true
	for _, o := range outs[1:] {
		same = same && o.Err.Error() == outs[0].Err.Error()
	}
	var msg string
	switch {
	case len(outs) == 1:
		msg = fmt.Sprintf("sweep: its one point failed (its error is in the results, written to %s): point %s: %s",
			out, pointText(outs[0].Params), outs[0].Err)
	case same:
		msg = fmt.Sprintf("sweep: all %d points failed, each with the same error (in the results, written to %s): %s",
			len(outs), out, outs[0].Err)
	default:
		msg = fmt.Sprintf("sweep: all %d points failed (each has its error in the results, written to %s); first: point %s: %s",
			len(outs), out, pointText(outs[0].Params), outs[0].Err)
	}
	if internal {
		return errors.New(msg)
	}
	return userErrorf("%s", msg)
}

// interruptedSweep finishes a sweep a signal stopped before every point
// ran: res holds the finished points and, marked sweep.NotRunText, the
// rest, and records the interruption for --resume. The files are written
// (no plots, summary or knee.csv: they are drawn from a whole sweep, which
// --resume writes), and the returned error is the one line that says how
// many points are done and how to continue.
//
// A sweep that writes --trace, --vcd or --pcap has one point (executeSweep
// refuses more), stopped part-way with its files closed whole: the line
// names them, and says the point starts over, since --resume, which
// reruns it, refuses those flags.
func interruptedSweep(res *report.Result, rows []map[string]string, notRun int, ident report.Interruption, f *runFlags, defaultOut bool, closeErr error) (*report.Result, error) {
	sig := f.stop.signal()
	ident.Signal, ident.NotRun, ident.Build = signalName(sig), notRun, buildID()
	res.Interrupted = &ident
	sweepOutputs.Store(res, &sweepExtras{interrupted: true, cells: rows})
	where := f.out
	if defaultOut {
		where += " (the default --out)"
	}
	msg := fmt.Sprintf("sweep: interrupted (%s): %d of %d points done, %d not run, written to %s",
		signalName(sig), len(res.Points)-notRun, len(res.Points), notRun, where)
	files := observedFiles(f)
	switch {
	case len(files) > 0 && closeErr != nil:
		msg += fmt.Sprintf("; closing the files: %v", closeErr)
	case len(files) > 0:
		msg += "; " + holdText(files) + "; the point starts over when run again"
	default:
		msg += "; to continue: " + resumeCommand(f.args)
	}
	return res, &interruptedError{sig: sig, msg: msg}
}

// countNotRun counts the outcomes an interrupted sweep did not run.
func countNotRun(outs []sweep.Outcome) int {
	n := 0
	for _, o := range outs {
		if errors.Is(o.Err, sweep.ErrNotRun) {
			n++
		}
	}
	return n
}

// fabricRun runs one design point; tests replace it to make points fail.
var fabricRun = fabric.Run

// sweepRunner runs one point on its own engine, with the --check checkers
// when asked (each point gets its own), a partitioned point on at most
// threads threads. wall_s is left out of a sweep's
// metrics: it is wall-clock time, differs from run to run, and would make
// results depend on the machine and on --jobs (the sweep's wall time goes to
// stderr instead).
func sweepRunner(f *runFlags, threads int, flight *observedRuns) sweep.Runner {
	return func(p *sweep.Point) (map[string]any, error) {
		obs, finish, err := observers(p.Loaded, f)
		if err != nil {
			return nil, err
		}
		opts := fabric.RunOptions{Observe: obs, Threads: threads}
		var m map[string]any
		if obs != nil && f.stop != nil {
			// Observed: a stop request stops the engine at its next event
			// and the files are closed whole, as a single run's are; the
			// sweep waits for it (closeAndWait) and records the point as
			// not run, which Run has already done.
			if !flight.begin() {
				return nil, sweep.ErrNotRun
			}
			defer flight.end()
			var stopped bool
			m, stopped, err = runStoppable(p.Loaded, opts, f.stop, true)
			if stopped {
				if err := finish(nil); err != nil && !errors.As(err, new(violationError)) {
					flight.fail(err)
				}
				return nil, sweep.ErrNotRun
			}
		} else {
			m, err = fabricRun(p.Loaded, opts)
		}
		err = runOutcome(err, finish(m))
		if err != nil {
			return nil, err
		}
		delete(m, "wall_s")
		return m, nil
	}
}

// observedRuns tracks a sweep's observed points (--trace, --vcd, --pcap,
// --check) while they run, so that an interrupted sweep returns only once
// they have stopped and closed their files; a point that has not started
// when the sweep returns does not start. Unobserved points are abandoned
// as they run (sweep.Run), since nothing of theirs is written.
type observedRuns struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	err    error // a stopped point's files failed to close
}

func (r *observedRuns) begin() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	return true
}

func (r *observedRuns) end() { r.wg.Done() }

func (r *observedRuns) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// closeAndWait starts no more observed points and waits for the running
// ones.
func (r *observedRuns) closeAndWait() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}

// plural is "1 design", "3 designs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func pointText(params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += k + "=" + report.FormatValue(params[k])
	}
	return "{" + s + "}"
}

func designText(d map[string]any) string {
	if len(d) == 0 {
		return ""
	}
	return pointText(d) + ": "
}

// writeKnees writes knee.csv: each design's params, then the bracket of its
// knee (knee_below: highest offered load unsaturated; knee_above: lowest
// saturated; empty when the range holds none).
func writeKnees(dir string, res *report.Result, k *sweep.KneeManifest) error {
	knees := sweep.Knees(res.Points, k.Key, k.Epsilon)
	var keys []string
	seen := map[string]bool{}
	for _, dk := range knees {
		for key := range dk.Design {
			if !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(append(append([]string{}, keys...), "search_key", "epsilon", "knee_below", "knee_above"))
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return report.FormatValue(v)
	}
	for _, dk := range knees {
		row := make([]string, 0, len(keys)+4)
		for _, key := range keys {
			row = append(row, report.FormatValue(dk.Design[key]))
		}
		row = append(row, k.Key, report.FormatValue(k.Epsilon), num(dk.Below), num(dk.Above))
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, KneeFile), buf.Bytes())
}

// defaultOutDir is a sweep's --out when none is given: hcasim-out/<name>,
// with the name reduced to letters, digits, '-', '_' and '.'.
// outName is what a sweep's default output directory is named after: the
// config's name, or, for a config that sets none (fabric's "default"), its
// file's name without the extension, so that two unnamed configs do not
// write (and clear) one directory.
func outName(name, configPath string) string {
	if name != "default" || configPath == "" {
		return name
	}
	if configPath == config.Stdin {
		return "stdin"
	}
	base := filepath.Base(configPath)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func defaultOutDir(name string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, name)
	if clean == "" || clean == "." || clean == ".." {
		clean = "sweep"
	}
	return filepath.Join("hcasim-out", clean)
}

// pinnedKeys are the keys --set and --seed fix: a sweep does not vary them.
func pinnedKeys(f *runFlags) []string {
	pins := sweep.PinnedKeys(f.sets)
	if f.seedSet {
		pins = append(pins, "seed")
	}
	return pins
}

// sweepNotes returns the notes (fabric.HostNote) of the designs run (a
// shard's), in design order; a point that does not decode has none (its error is reported when
// it runs). A knee search's probes differ in load alone, so its first one
// stands for the design.
func sweepNotes(sw *sweep.Sweep, designs []int) []string {
	var x float64
	if sw.Search != nil {
		x = sw.Search.Search.From
	}
	var notes []string
	for _, d := range designs {
		if p, err := sw.Point(sw.Designs[d], x); err == nil {
			notes = append(notes, fabric.HostNote(p.Loaded))
		}
	}
	return notes
}
