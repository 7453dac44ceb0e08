package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
	"github.com/hcasim/hcasim/verif"
)

// headlineParams are the keys every point reports in params, so a single
// run's table says what was run.
var headlineParams = []string{"link.generation", "link.width", "topology.kind", "workload.kind", "workload.size"}

// execute runs the config: the sweep its sweep: section describes (see
// sweep.go), or else its single design point. It returns what it computed;
// an error still returns the points that finished.
func execute(l *fabric.Loaded, f *runFlags, stderr io.Writer) (*report.Result, error) {
	if sweep.Has(l.Node) {
		return executeSweep(l, f, stderr)
	}
	if f.shard != "" {
		return nil, userErrorf("--shard %s: %s has no sweep: section to shard", f.shard, f.config)
	}
	if f.resume {
		return nil, userErrorf("--resume: continues an interrupted sweep, and %s has no sweep: section (a single run starts over)", f.config)
	}
	res := &report.Result{Tool: "hcasim", Version: Version(), Config: f.config, Seed: l.Config.Seed}
	params := map[string]any{}
	for _, k := range headlineParams {
		params[k] = paramValue(l, k)
	}
	// What the command line changed is part of what was run: results.json
	// says "config": "edr.yaml" only, so without these a run with --set
	// hca.vl_buffer_bytes=4160 wrote the same params as the file's own.
	for _, k := range sweep.PinnedKeys(f.sets) {
		if v, ok := fabric.Value(&l.Config, k); ok && isParamValue(v) {
			params[k] = v
		}
	}
	if f.seedSet {
		params["seed"] = l.Config.Seed
	}
	obs, finish, err := observers(l, f)
	if err != nil {
		return nil, err
	}
	opts := fabric.RunOptions{Observe: obs}
	var prog *runProgress
	if showProgress(stderr, f.quiet) {
		prog = newRunProgress(stderr, &l.Config, 200*time.Millisecond)
		opts.Started = prog.start
	}
	m, stopped, err := runStoppable(l, opts, f.stop, obs != nil)
	if prog != nil {
		if stopped {
			prog.abandon()
		} else {
			prog.stop()
		}
	}
	if stopped {
		return interruptedRun(res, params, f, finish)
	}
	err = runOutcome(err, finish(m))
	if err != nil {
		res.Points = append(res.Points, report.Point{Params: params, Metrics: map[string]any{}, Error: err.Error()})
		return res, err
	}
	res.Points = append(res.Points, report.Point{Params: params, Metrics: m})
	if !f.quiet {
		// After the run: a run that fails says one line, its error.
		printNotes(stderr, fabric.HostNote(l))
	}
	return res, nil
}

// runStoppable runs the design point, watching req. Asked to stop, an
// observed run (--trace, --vcd, --pcap, --check) is stopped by a stopHook
// at its next trace event and waited for, so that finish closes its files
// whole; any other run is abandoned
// on its goroutine (the process exits soon after). stopped reports
// whether the run was stopped or abandoned; a run that finished before
// the request took hold returns its results as usual. A panic in the run
// is raised again here, where Main reports it.
func runStoppable(l *fabric.Loaded, opts fabric.RunOptions, req *stopRequest, observed bool) (m map[string]any, stopped bool, err error) {
	if req == nil {
		m, err := fabricRun(l, opts)
		return m, false, err
	}
	var hook *stopHook
	if observed {
		observe := opts.Observe
		opts.Observe = func(s *fabric.Simulation) {
			observe(s)
			hook = &stopHook{req: req, view: s}
			verif.AttachHook(hook, s.Blocks...)
		}
	}
	type outcome struct {
		m     map[string]any
		err   error
		panic *forwardedPanic
	}
	ch := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- outcome{panic: &forwardedPanic{value: r, stack: debug.Stack()}}
			}
		}()
		m, err := fabricRun(l, opts)
		ch <- outcome{m: m, err: err}
	}()
	var o outcome
	select {
	case o = <-ch:
	case <-req.ctx.Done():
		if !observed {
			return nil, true, nil
		}
		o = <-ch // the hook stops the engine at its next event
	}
	if o.panic != nil {
		panic(o.panic)
	}
	return o.m, hook != nil && hook.stopped, o.err
}

// forwardedPanic is a panic of a run's goroutine, raised again on Main's
// with the stack where it happened (HCASIM_DEBUG prints it).
type forwardedPanic struct {
	value any
	stack []byte
}

func (p *forwardedPanic) String() string { return fmt.Sprint(p.value) }

// interruptedRun ends a single run a signal stopped: its --trace, --vcd
// and --pcap are closed whole up to where it stopped (finish), --out gets
// the point with the error "interrupted: not finished", and the returned
// error is the one line that says so.
func interruptedRun(res *report.Result, params map[string]any, f *runFlags, finish func(map[string]any) error) (*report.Result, error) {
	sig := f.stop.signal()
	msg := fmt.Sprintf("interrupted (%s): the run did not finish, no metrics", signalName(sig))
	files := observedFiles(f)
	if len(files) > 0 {
		if err := finish(nil); err != nil && !errors.As(err, new(violationError)) {
			msg += fmt.Sprintf("; closing the files: %v", err)
		} else {
			msg += "; " + holdText(files)
		}
	}
	res.Points = append(res.Points, report.Point{Params: params, Metrics: map[string]any{}, Error: "interrupted: not finished"})
	return res, &interruptedError{sig: sig, msg: msg}
}

// observedFiles names the files a run writes as it goes, each as its flag
// and path ("--trace run.trace").
func observedFiles(f *runFlags) []string {
	var files []string
	for _, o := range []struct{ flag, path string }{{"--trace", f.trace}, {"--vcd", f.vcd}, {"--pcap", f.pcap}} {
		if o.path != "" {
			files = append(files, o.flag+" "+o.path)
		}
	}
	return files
}

// holdText says that files hold a stopped run: "--trace t holds the run
// up to where it stopped".
func holdText(files []string) string {
	verb := " hold"
	if len(files) == 1 {
		verb = " holds"
	}
	return strings.Join(files, ", ") + verb + " the run up to where it stopped"
}

// isParamValue reports whether v, a config value, is one key's value
// (a number, string, bool or list) rather than a whole section (--set
// link={…}), whose keys are params of their own.
func isParamValue(v any) bool {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Struct, reflect.Map, reflect.Pointer, reflect.Invalid:
		return false
	}
	return true
}

// paramValue renders the effective value of a dotted key.
func paramValue(l *fabric.Loaded, key string) any {
	v, ok := fabric.Value(&l.Config, key)
	if !ok {
		return ""
	}
	return v
}

// observers returns the hook that attaches tracing and checking to a built
// simulation, and a function that closes their files (observe.go).
func observers(l *fabric.Loaded, f *runFlags) (func(*fabric.Simulation), func(map[string]any) error, error) {
	return observersImpl(l, f)
}

// sweepColumns are the metrics a sweep's table shows, those the points have,
// in this order (results.csv and results.json hold them all).
var sweepColumns = []string{"accepted_load", "goodput_gbps", "throughput_gbps", "makespan_ns", "wire_utilization",
	"latency_ns_p50", "latency_ns_p99", "credit_stall_ns", "rx_buffer_peak_bytes", "packets_dropped",
	"bw_gbps", "msg_rate_mpps", "lat_us_typical", "lat_us_p99", "aggregate_bw_gbps", "pair_bw_gbps_min", "fairness_jain",
	"hotspot_accepted_load", "victim_accepted_load", "cc_ccti_mean", "cc_ccti_mean_hotspot",
	"time_us", "algbw_gbps", "busbw_gbps", "data_verified",
	"receiver_messages_min", "receiver_bw_gbps_min", "receiver_drops",
	"member_accepted_load", "latency_last_ns_p50", "latency_last_ns_p99", "switch_mcast_rounds_per_packet", "switch_mcast_hold_mean_ns",
	"background_accepted_load", "background_latency_ns_p50", "background_latency_ns_p99"}

func tableColumns(res *report.Result) []string {
	if len(res.Points) <= 1 {
		return nil
	}
	if !latencyTestsOnly(res) {
		return sweepColumns
	}
	// perftest's latency tests print no bandwidth or message rate: a
	// ping-pong of 2 bytes "runs at" 0.006 Gb/s, a number that reads as a
	// fault in a table beside the background's goodput. results.csv and
	// results.json keep them.
	cols := make([]string, 0, len(sweepColumns))
	for _, c := range sweepColumns {
		if c != "bw_gbps" && c != "msg_rate_mpps" {
			cols = append(cols, c)
		}
	}
	return cols
}

// latencyTestsOnly says whether every point that ran is a perftest latency
// test (its metrics have lat_us, whose typical value the table shows).
func latencyTestsOnly(res *report.Result) bool {
	ran := false
	for _, p := range res.Points {
		if p.Error != "" {
			continue
		}
		if _, ok := p.Metrics["lat_us"]; !ok {
			return false
		}
		ran = true
	}
	return ran
}

// sweepOutputs are the extra files a sweep's --out gets after its results
// files, keyed by the result they belong to (present calls writePlots with
// the result only).
var sweepOutputs sync.Map // *report.Result → *sweepExtras

// sweepExtras says what to write besides results.json and results.csv.
type sweepExtras struct {
	manifest *sweep.Manifest     // a shard's shard.json (a shard draws no plots: merge does)
	knee     *sweep.KneeManifest // a knee search: write knee.csv
	summary  *report.Summary     // a replicated sweep: summary.csv, summary.json, plots of the means
	cells    []map[string]string // a merged or resumed result: its points' results.csv cells (those read back kept as written)
	// interrupted: the results hold points not run; nothing is drawn or
	// summarised from them (--resume writes those files once complete).
	interrupted bool
}

// takeExtras returns (and forgets) what besides its results files res's
// --out gets; nothing for a single run.
func takeExtras(res *report.Result) *sweepExtras {
	if v, ok := sweepOutputs.LoadAndDelete(res); ok {
		return v.(*sweepExtras)
	}
	return &sweepExtras{}
}

// writePlots writes a result's plots into dir, and a sweep's extra files
// (its errors are the files' own: the caller says which flag named dir,
// outError):
// knee.csv for a knee search, shard.json for a shard, summary.csv and
// summary.json for a replicated sweep (whose plots draw the designs' means).
// Then it removes the files of hcasim's own naming this run did not write
// (removeStale), so that dir holds this run's outputs and no earlier run's.
func writePlots(dir string, res *report.Result, ex *sweepExtras) error {
	written := map[string]bool{resultsJSON: true, resultsCSV: true}
	if ex.interrupted {
		return removeStale(dir, written)
	}
	if ex.manifest != nil {
		// A shard draws no plots and finds no knees: merge does.
		if err := sweep.WriteManifest(dir, ex.manifest); err != nil {
			return err
		}
		written[sweep.ManifestFile] = true
	} else {
		plot := func() ([]string, error) { return report.WritePlots(dir, res) }
		if ex.cells != nil {
			plot = func() ([]string, error) { return report.WriteMergedPlots(dir, res, ex.cells) }
		}
		if ex.summary != nil {
			if err := report.WriteSummaryFiles(dir, ex.summary); err != nil {
				return err
			}
			written[report.SummaryJSON], written[report.SummaryCSV] = true, true
			plot = func() ([]string, error) { return report.WriteSummaryPlots(dir, ex.summary) }
		}
		plots, err := plot()
		if err != nil {
			return err
		}
		for _, p := range plots {
			written[p] = true
		}
		if ex.knee != nil {
			if err := writeKnees(dir, res, ex.knee); err != nil {
				return err
			}
			written[KneeFile] = true
		}
	}
	return removeStale(dir, written)
}

// The results files every run with --out writes (report.WriteFiles,
// report.WriteMerged).
const (
	resultsJSON = "results.json"
	resultsCSV  = "results.csv"
)

// isOutputFile reports whether name is a file hcasim writes into --out:
// the results, the summary, knee.csv, shard.json or a plot of
// report.WritePlots' naming, a key's own plot only for a KEY that is a
// config key (a user's copy, throughput-vs-link.ber.old.svg, follows the
// scheme but no run writes it). No other file in --out is ever removed.
func isOutputFile(name string) bool {
	switch name {
	case resultsJSON, resultsCSV, report.SummaryJSON, report.SummaryCSV, KneeFile, sweep.ManifestFile:
		return true
	}
	if key, ok := report.PlotKey(name); ok {
		return slices.Contains(configKeys(), key)
	}
	return report.IsPlotFile(name)
}

// configKeys are the config's keys, the only keys a sweep may plot against.
var configKeys = sync.OnceValue(func() []string { return config.Keys(reflect.TypeOf(fabric.Config{})) })

// removeStale removes from dir the regular files isOutputFile names that
// are not in written: an earlier run's knee.csv, plots or shard.json would
// otherwise sit beside this run's results and read as this run's (a
// summary.csv of an earlier replicated run beside unreplicated results, a
// shard.json would even make merge take the directory for a shard).
func removeStale(dir string, written map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if written[e.Name()] || !isOutputFile(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// printNotes writes each distinct non-empty note once, as
// "hcasim: note: …" lines on stderr: advice about a config that runs but
// probably does not measure what its author meant (fabric.HostNote).
func printNotes(stderr io.Writer, notes ...string) {
	seen := map[string]bool{}
	for _, n := range notes {
		if n != "" && !seen[n] {
			seen[n] = true
			fmt.Fprintf(stderr, "hcasim: %s\n", n)
		}
	}
}
