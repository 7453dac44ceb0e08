package fabric

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// speedGoldenPoints are short runs of the benchmark shapes (configs/bench):
// the fat trees at 30 % (1 KiB) and 80 % (4 KiB) load, the 16-port switch at
// 90 % with iSLIP, and variants that reach other switch paths (FIFO input
// queues with two VLs; store-and-forward with speedup 2).
var speedGoldenPoints = []struct {
	name string
	sets []string
}{
	{"fattree64-uniform-30", []string{"topology.kind=fat-tree-2", "topology.hosts=64", "switch.radix=16", "topology.routing=dmodk",
		"workload.kind=uniform", "workload.size=1024", "workload.offered_load=0.3", "workload.warmup_ns=1000", "workload.measure_ns=4000"}},
	{"fattree64-uniform-80", []string{"topology.kind=fat-tree-2", "topology.hosts=64", "switch.radix=16", "topology.routing=dmodk",
		"workload.kind=uniform", "workload.size=4096", "workload.offered_load=0.8", "workload.warmup_ns=1000", "workload.measure_ns=4000"}},
	{"switch16-uniform-90", []string{"topology.kind=single-switch", "topology.hosts=16", "switch.radix=16", "switch.queueing=voq",
		"switch.allocator=islip", "workload.kind=uniform", "workload.size=1024", "workload.offered_load=0.9",
		"workload.warmup_ns=1000", "workload.measure_ns=4000"}},
	{"fattree64-fifo-vl2", []string{"topology.kind=fat-tree-2", "topology.hosts=64", "switch.radix=16", "topology.routing=dmodk",
		"switch.queueing=fifo", "switch.vls=2", "workload.kind=uniform", "workload.size=1024", "workload.offered_load=0.6",
		"workload.warmup_ns=1000", "workload.measure_ns=3000"}},
	{"switch16-saf-speedup2", []string{"topology.kind=single-switch", "topology.hosts=16", "switch.radix=16", "switch.speedup=2",
		"switch.cut_through=false", "workload.kind=uniform", "workload.size=2048", "workload.offered_load=0.9",
		"workload.warmup_ns=1000", "workload.measure_ns=4000"}},
}

// traceDigest hashes every trace event a run announces, in order, as
// "time path kind key=value...", so a golden file can pin a long trace.
type traceDigest struct {
	h      hash.Hash
	events int
}

func (d *traceDigest) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev := ctx.Item.(*components.TraceEvent)
	d.events++
	fmt.Fprintf(d.h, "%d %s %s", ev.Time, ev.Path, ev.Kind)
	for _, f := range ev.Fields {
		if f.IsStr {
			fmt.Fprintf(d.h, " %s=%s", f.Key, f.Str)
		} else {
			fmt.Fprintf(d.h, " %s=%d", f.Key, f.Int)
		}
	}
	d.h.Write([]byte{'\n'})
}

// TestSpeedGolden pins the metrics (every key but wall_s, floats exact) and a
// digest of the full event trace of short benchmark-shaped runs. The
// optimisations of issue 8 (engine queue, switch allocation, ports) must not
// change any result: a difference here is a behaviour change, not noise,
// because each run is deterministic (TestDeterministic). Rewrite with
// -update only for an intended model change.
func TestSpeedGolden(t *testing.T) {
	for _, pt := range speedGoldenPoints {
		t.Run(pt.name, func(t *testing.T) {
			l, err := Load(nil, append([]string{"switch.vls=1"}, pt.sets...))
			require.NoError(t, err)
			d := &traceDigest{h: sha256.New()}
			m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
				for _, b := range s.Blocks {
					b.AcceptHook(d)
				}
			}})
			require.NoError(t, err)
			delete(m, "wall_s")
			require.NotZero(t, m["packets_delivered"], "a run that delivers nothing pins nothing")
			require.NotZero(t, d.events, "a trace comparison with no events matches nothing")
			m["trace_events"] = d.events
			m["trace_sha256"] = fmt.Sprintf("%x", d.h.Sum(nil))
			got, err := json.MarshalIndent(m, "", " ")
			require.NoError(t, err)
			golden(t, "speed-"+pt.name+".golden.json", append(got, '\n'))
		})
	}
}
