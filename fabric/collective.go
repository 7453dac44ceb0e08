package fabric

import (
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/workload"
)

// runCollective runs workload.kind allreduce or alltoall: every host of the
// topology gets an HCA and is one rank (rank i = host i), the collective
// runs over RDMA WRITEs with immediate (workload.RunCollectiveOn), and the
// metrics carry nccl-tests' algbw and busbw.
func runCollective(cfg *Config, opts RunOptions) (map[string]any, error) {
	run := workload.CollectiveRun{Op: cfg.Workload.Kind, Bytes: int64(cfg.Workload.Size), MTU: cfg.Link.MTU,
		Seed: cfg.Seed, MaxTimeNs: cfg.Sim.MaxTimeNs, SliceBytes: cfg.Workload.SliceBytes, ReduceGBps: cfg.Workload.ReduceGBps,
		SL: cfg.Workload.SL, Algorithm: cfg.Workload.Algorithm, Root: cfg.Workload.Root,
		Iterations: cfg.Workload.CollectiveIterations, Warmup: cfg.Workload.CollectiveWarmup, Channels: cfg.Workload.Channels,
		FlowControl: cfg.Workload.FlowControl, Average: cfg.Workload.CollectiveAverage, Protocol: cfg.Workload.Protocol}
	if err := run.Validate(); err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	if run.Algorithm == workload.AlgSharp {
		return runSharp(cfg, opts, run)
	}
	s := newSim(cfg)
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return nil, err
	}
	return runOnHCAs(cfg, opts, s, topo, sub, func(devs []*hca.Device) (hcaDriver, error) {
		coll, err := workload.BuildCollectiveOn(s, devs, run)
		if err != nil {
			return hcaDriver{}, err
		}
		return hcaDriver{run: coll.Run, onEnd: &coll.OnEnd}, nil
	})
}

// hcaDriver is a workload built on one HCA per host (a collective, a
// replay): run runs it to its end and returns its metrics; onEnd is its
// hook for the moment the last completion is polled, which runOnHCAs sets
// when the checkers must see the fabric settle.
type hcaDriver struct {
	run   func() (map[string]any, error)
	onEnd *func()
}

// runOnHCAs builds cfg's fabric on s with an HCA on every host, has build
// make the workload on those HCAs (an error is the config's, exit 2), runs
// it with the run's observers and checkers, and adds the metrics every
// HCA-driven fabric run reports: hosts, switches, the link rate (and the
// hosts' own, when their cables differ), CC and link errors.
func runOnHCAs(cfg *Config, opts RunOptions, s *components.Sim, topo *Topology, sub *Subnet,
	build func(devs []*hca.Device) (hcaDriver, error), built ...func(*Network) error) (map[string]any, error) {
	var devs []*hca.Device
	net, err := BuildNetworkOn(cfg, s, topo, sub, func(_ int, lid uint16, name string) HostDevice {
		h := NewHCAHost(s, cfg, lid, name)
		devs = append(devs, h.Device)
		return h
	})
	if err != nil {
		return nil, err
	}
	enableHCACC(cfg, devs)
	for _, f := range built {
		if err := f(net); err != nil {
			return nil, err
		}
	}
	drv, err := build(devs)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	view := &Simulation{Sim: s, Ports: net.Ports, Blocks: net.Blocks(), Net: net}
	if opts.Observe != nil {
		opts.Observe(view)
	}
	if cfg.Sim.Check {
		// The workload ends when the last host has polled its last
		// completion, with ACKs and flow-control packets possibly still
		// on the wire: the checkers' idle-fabric invariants apply once
		// the fabric settles. The metrics are taken at the end.
		*drv.onEnd = func() { view.finish(true) }
	}
	if opts.Started != nil {
		opts.Started(&Simulation{Sim: s})
	}
	m, err := drv.run()
	if err != nil {
		return nil, view.explainTimeLimit(cfg, err)
	}
	m["hosts"] = len(devs)
	m["switches"] = len(net.Switches)
	m["link_data_rate_gbps"] = cfg.Link.Timing(cfg.Link.LengthM).DataRateBps() / 1e9
	if ht := hostTimings(cfg, topo, topo.Hosts()); ht != nil {
		// Host cables of their own speeds: every host runs the workload,
		// so the link section's rate is not what they send at.
		m["host_link_rate_gbps"] = hostLinkRates(ht)
	}
	if cfg.CC.Enable {
		hcaCCMetrics(m, view, s.Now())
	}
	view.addLinkErrors(m)
	return m, nil
}
