package fabric

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/verif"
)

// checkBenchArgs is a small all-to-all collective (32 ranks of 64 KiB on a
// radix-8 fat tree): every kind of event the checkers read, over many QPs
// and ports, the shape of the CLI's large --check campaigns.
var checkBenchArgs = []string{"topology.kind=fat-tree-2", "switch.radix=8", "topology.hosts=32",
	"topology.routing=dmodk", "switch.vls=1", "hca.profile=cx7", "workload.kind=alltoall", "workload.size=65536"}

// eventTape keeps a copy of every trace event the blocks announce.
type eventTape struct{ evs []components.TraceEvent }

func (t *eventTape) Func(ctx sim.HookCtx) {
	if ctx.Pos == components.HookPosTrace {
		t.evs = append(t.evs, ctx.Item.(*components.TraceEvent).Clone())
	}
}

// BenchmarkCheckersAllToAll is the checkers' hot path alone: the trace
// events of checkBenchArgs's run, recorded once, fed to fresh checkers.
// Reports the cost per event.
func BenchmarkCheckersAllToAll(b *testing.B) {
	l, err := Load(nil, checkBenchArgs)
	if err != nil {
		b.Fatal(err)
	}
	tape := &eventTape{}
	if _, err := Run(l, RunOptions{Observe: func(s *Simulation) { verif.AttachHook(tape, s.Blocks...) }}); err != nil {
		b.Fatal(err)
	}
	end := tape.evs[len(tape.evs)-1].Time
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		chk := verif.NewCheckers(verif.CheckConfig{})
		for k := range tape.evs {
			chk.Observe(&tape.evs[k])
		}
		chk.Finish(end, false)
		if err := chk.Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tape.evs)), "ns/event")
	b.ReportMetric(float64(len(tape.evs)), "events")
}

// BenchmarkAllToAllChecked is checkBenchArgs's whole run with the checkers
// attached (sim.check): the model, the blocks announcing their events and
// the checkers. Against BenchmarkAllToAll it gives what checking costs.
func BenchmarkAllToAllChecked(b *testing.B) { benchAllToAll(b, true) }

// BenchmarkAllToAll is checkBenchArgs's run unobserved.
func BenchmarkAllToAll(b *testing.B) { benchAllToAll(b, false) }

func benchAllToAll(b *testing.B, check bool) {
	l, err := Load(nil, checkBenchArgs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var chk *verif.Checkers
		opts := RunOptions{}
		if check {
			opts.Observe = func(s *Simulation) { chk = verif.AttachCheckers(verif.CheckConfig{}, s.Blocks...) }
		}
		if _, err := Run(l, opts); err != nil {
			b.Fatal(err)
		}
		if chk != nil && chk.Err() != nil {
			b.Fatal(chk.Err())
		}
	}
}
