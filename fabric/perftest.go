package fabric

import (
	"github.com/hcasim/hcasim/workload"
)

// runPerftest runs a perftest-style RDMA test between two hosts with HCAs,
// back to back (the only topology a two-host perftest needs; through a
// switch, see docs/hca.md).
func runPerftest(cfg *Config, opts RunOptions) (map[string]any, error) {
	w := cfg.Workload
	run := workload.PerftestRun{
		Link: cfg.Link, HCA: cfg.HCA, Test: w.Test, Size: w.Size, Iterations: w.Iterations,
		TxDepth: w.TxDepth, QPs: w.QPs, InlineSize: w.InlineSize, Seed: cfg.Seed, MaxTimeNs: cfg.Sim.MaxTimeNs,
	}
	if err := run.Validate(); err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	pt, err := workload.BuildPerftest(run)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	if opts.Observe != nil {
		devs := pt.Devices()
		view := &Simulation{Sim: pt.Sim()}
		for _, d := range devs {
			view.Ports = append(view.Ports, d.Port)
			view.Blocks = append(view.Blocks, d, d.Port)
		}
		// Settled stays false: a perftest ends when its last completion is
		// polled, with ACKs and flow-control packets possibly still on the
		// wire, so the checkers' idle-fabric invariants do not apply.
		opts.Observe(view)
	}
	m, err := pt.Run()
	if err != nil {
		return nil, err
	}
	m["sim_time_ns"] = pt.Sim().Now().Nanoseconds()
	m["events"] = pt.Sim().Events()
	return m, nil
}
