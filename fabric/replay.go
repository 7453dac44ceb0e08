package fabric

import (
	"bytes"
	"os"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/workload"
)

// runReplay runs workload.kind replay: every host of the topology gets an
// HCA, and the messages of workload.trace_file go between them over RC QPs
// (workload.BuildReplayOn), each posted at its start_ns once the messages
// it depends on have completed.
func runReplay(l *Loaded, opts RunOptions) (map[string]any, error) {
	cfg := &l.Config
	s := newSim(cfg)
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return nil, err
	}
	tr, err := l.replayTrace(len(topo.Hosts()))
	if err != nil {
		return nil, err
	}
	return runOnHCAs(cfg, opts, s, topo, sub, func(devs []*hca.Device) (hcaDriver, error) {
		rp, err := workload.BuildReplayOn(s, devs, tr, workload.ReplayRun{MTU: cfg.Link.MTU, Seed: cfg.Seed,
			MaxTimeNs: cfg.Sim.MaxTimeNs, SL: cfg.Workload.SL})
		if err != nil {
			return hcaDriver{}, err
		}
		return hcaDriver{run: rp.Run, onEnd: &rp.OnEnd}, nil
	})
}

// replayTrace reads and parses workload.trace_file for a fabric of hosts
// hosts. An error is an *UnsupportedError naming the key (a user's).
func (l *Loaded) replayTrace(hosts int) (*workload.Trace, error) {
	name := l.Config.Workload.TraceFile
	read := l.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	data, err := read(name)
	if err != nil {
		return nil, &UnsupportedError{Msg: "workload.trace_file: " + err.Error()}
	}
	tr, err := workload.ParseTrace(bytes.NewReader(data), name, hosts)
	if err != nil {
		return nil, &UnsupportedError{Msg: "workload.trace_file: " + err.Error()}
	}
	return tr, nil
}
