package main

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
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
	res := &report.Result{Tool: "hcasim", Version: Version(), Config: f.config, Seed: l.Config.Seed}
	params := map[string]any{}
	for _, k := range headlineParams {
		params[k] = paramValue(l, k)
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
	m, err := fabric.Run(l, opts)
	if prog != nil {
		prog.stop()
	}
	if ferr := finish(); err == nil {
		err = ferr
	}
	if err != nil {
		res.Points = append(res.Points, report.Point{Params: params, Metrics: map[string]any{}, Error: err.Error()})
		return res, err
	}
	res.Points = append(res.Points, report.Point{Params: params, Metrics: m})
	return res, nil
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
func observers(l *fabric.Loaded, f *runFlags) (func(*fabric.Simulation), func() error, error) {
	return observersImpl(l, f)
}

// sweepColumns are the metrics a sweep's table shows, those the points have,
// in this order (results.csv and results.json hold them all).
var sweepColumns = []string{"accepted_load", "goodput_gbps", "throughput_gbps", "wire_utilization",
	"latency_ns_p50", "latency_ns_p99", "credit_stall_ns", "rx_buffer_peak_bytes", "packets_dropped",
	"bw_gbps", "lat_us_typical", "time_us", "algbw_gbps", "busbw_gbps", "data_verified"}

func tableColumns(res *report.Result) []string {
	if len(res.Points) <= 1 {
		return nil
	}
	return sweepColumns
}

// sweepOutputs are the extra files a sweep's --out gets after its results
// files, keyed by the result they belong to (present calls writePlots with
// the result only).
var sweepOutputs sync.Map // *report.Result → *sweepExtras

// sweepExtras says what to write besides results.json and results.csv.
type sweepExtras struct {
	manifest *sweep.Manifest     // a shard's shard.json (a shard draws no plots: merge does)
	knee     *sweep.KneeManifest // a knee search: write knee.csv
}

// writePlots writes a result's plots into dir, and a sweep's extra files:
// knee.csv for a knee search, shard.json for a shard.
func writePlots(dir string, res *report.Result) error {
	var ex sweepExtras
	if v, ok := sweepOutputs.LoadAndDelete(res); ok {
		ex = *v.(*sweepExtras)
	}
	if ex.manifest != nil {
		if err := sweep.WriteManifest(dir, ex.manifest); err != nil {
			return userErrorf("--out: %v", err)
		}
		return nil
	}
	// A shard's manifest left from an earlier run would make merge take
	// these results for a shard.
	if err := os.Remove(filepath.Join(dir, sweep.ManifestFile)); err != nil && !os.IsNotExist(err) {
		return userErrorf("--out: %v", err)
	}
	if _, err := report.WritePlots(dir, res); err != nil {
		return err
	}
	if ex.knee != nil {
		if err := writeKnees(dir, res, ex.knee); err != nil {
			return userErrorf("--out: %v", err)
		}
	}
	return nil
}
