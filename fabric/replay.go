package fabric

import (
	"bytes"
	"os"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/workload"
)

// runReplay runs workload.kind replay: every host of the topology gets an
// HCA, and the messages of workload.trace_file go between them over RC QPs
// (workload.BuildReplayOn), each posted at its start_ns once the messages
// it depends on have completed.
func runReplay(l *Loaded, opts RunOptions) (map[string]any, error) {
	cfg := &l.Config
	s := components.NewSimOn(cfg.Sim.Engine)
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return nil, err
	}
	name := cfg.Workload.TraceFile
	read := l.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	data, err := read(name)
	if err != nil {
		return nil, &UnsupportedError{Msg: "workload.trace_file: " + err.Error()}
	}
	tr, err := workload.ParseTrace(bytes.NewReader(data), name, len(topo.Hosts()))
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
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
	rp, err := workload.BuildReplayOn(s, devs, tr, workload.ReplayRun{MTU: cfg.Link.MTU, Seed: cfg.Seed,
		MaxTimeNs: cfg.Sim.MaxTimeNs, SL: cfg.Workload.SL})
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	view := &Simulation{Sim: s, Ports: net.Ports, Blocks: net.Blocks(), Net: net}
	if opts.Observe != nil {
		opts.Observe(view)
	}
	if cfg.Sim.Check {
		// As a collective: the checkers' idle-fabric invariants apply once
		// the ACKs and flow-control packets still on the wire have landed.
		rp.OnEnd = func() { view.finish(true) }
	}
	if opts.Started != nil {
		opts.Started(&Simulation{Sim: s})
	}
	m, err := rp.Run()
	if err != nil {
		return nil, view.explainTimeLimit(cfg, err)
	}
	m["hosts"] = len(devs)
	m["switches"] = len(net.Switches)
	m["link_data_rate_gbps"] = cfg.Link.Timing(cfg.Link.LengthM).DataRateBps() / 1e9
	if cfg.CC.Enable {
		hcaCCMetrics(m, view, s.Now())
	}
	view.addLinkErrors(m)
	return m, nil
}
