package switchasic

import (
	"flag"
	"fmt"
	"image/color"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

var printCurves = flag.Bool("curves", false, "print the accepted-vs-offered tables of docs/switch.md")

// uniformResult is one Bernoulli uniform-traffic run.
type uniformResult struct {
	accepted  float64 // delivered bytes / (radix × window × line rate)
	latencyNs float64 // mean injection-to-tail latency of packets delivered in the window, ns
	blockHops uint64  // 64-byte blocks the switch forwarded
	events    uint64
	rounds    uint64 // allocation rounds the switch ran
	packets   uint64 // packets the switch forwarded
}

// runUniform drives every host with Bernoulli injection at offered load
// (fraction of the 4x NDR line rate; one chance per packet time) to
// uniformly random other hosts, with packets of payload bytes on VL0.
func runUniform(t testing.TB, cfg Config, load float64, payload int, warm, end ib.PS) uniformResult {
	n := newTestNet(t, cfg, netOpts{timing: ndr(21352)})
	radix := cfg.Radix
	slot := ib.PS((26 + payload) * 20) // one packet time at 20 ps per byte
	for src := 0; src < radix; src++ {
		src := src
		e := n.eps[src]
		e.load, e.slot, e.injecting = load, slot, true
		e.makePkt = func(e *endpoint) *ib.Packet {
			dst := e.rng.IntN(radix - 1)
			if dst >= src {
				dst++
			}
			return n.packet(src, dst, 0, payload)
		}
		// Stagger the first slot so the sources are not in lock step.
		n.s.Schedule(ib.PS(e.rng.Int64N(int64(slot))), e, epInject)
	}
	var bytes, count int64
	var lat ib.PS
	for _, e := range n.eps {
		e.onGet = func(a arrival) {
			if a.head >= warm && a.head < end {
				bytes += int64(a.bytes)
				count++
				lat += a.tail - a.injectAt
			}
		}
	}
	n.s.StopAt(end)
	require.NoError(t, n.s.Run())
	r := uniformResult{
		accepted:  float64(bytes) / (float64(radix) * float64(end-warm) / 20),
		blockHops: n.sw.Counters().BlockHops,
		rounds:    n.sw.Counters().AllocRound,
		packets:   n.sw.Counters().Forwarded,
		events:    n.s.Events(),
	}
	if count > 0 {
		r.latencyNs = float64(lat) / float64(count) / 1000
	}
	return r
}

// TestAcceptedVsOffered prints the accepted-vs-offered tables of
// docs/switch.md with -curves (go test ./switchasic -run AcceptedVsOffered
// -curves -v); without the flag it checks one point of each curve so the
// code path stays tested: at 30 % offered load both disciplines deliver what
// is offered (below every saturation point).
func TestAcceptedVsOffered(t *testing.T) {
	const payload = 2048
	if !*printCurves {
		for _, q := range []string{QueueFIFO, QueueVOQ} {
			cfg := smallConfig(8, 1)
			cfg.Queueing = q
			r := runUniform(t, cfg, 0.3, payload, 10*ib.Microsecond, 40*ib.Microsecond)
			// Bernoulli noise over 30 µs × 8 ports at 30 % load ≈ 1750
			// packets: ±3σ ≈ ±0.02.
			require.InDelta(t, 0.3, r.accepted, 0.03, q)
		}
		return
	}
	loads := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}
	var sb strings.Builder
	curves := map[string]plotter.XYs{}
	var names []string
	for _, radix := range []int{4, 8, 16, 32} {
		fmt.Fprintf(&sb, "\nradix %d (accepted / line rate; mean latency in ns)\n\n", radix)
		fmt.Fprintf(&sb, "| offered | fifo accepted | fifo latency | voq+islip accepted | voq+islip latency |\n|---|---|---|---|---|\n")
		for _, load := range loads {
			var res [2]uniformResult
			for k, q := range []string{QueueFIFO, QueueVOQ} {
				cfg := smallConfig(radix, 1)
				cfg.Queueing = q
				cfg.VLBufferBytes = 64 * 1024
				res[k] = runUniform(t, cfg, load, payload, 20*ib.Microsecond, 100*ib.Microsecond)
			}
			fmt.Fprintf(&sb, "| %.1f | %.3f | %.0f | %.3f | %.0f |\n", load,
				res[0].accepted, res[0].latencyNs, res[1].accepted, res[1].latencyNs)
			for k, q := range []string{"fifo", "voq+islip"} {
				name := fmt.Sprintf("radix %d %s", radix, q)
				if _, ok := curves[name]; !ok {
					names = append(names, name)
				}
				curves[name] = append(curves[name], plotter.XY{X: load, Y: res[k].accepted})
			}
		}
	}
	fmt.Print(sb.String())
	require.NoError(t, plotCurves(filepath.Join("..", "docs", "switch-accepted-vs-offered.svg"), names, curves))
}

// plotCurves draws accepted vs offered load, one colour per radix, fifo
// dashed, with the accepted = offered diagonal.
func plotCurves(path string, names []string, curves map[string]plotter.XYs) error {
	p := plot.New()
	p.Title.Text = "Switch: accepted vs offered load, uniform traffic (2 KiB packets, 4x NDR)"
	p.X.Label.Text = "offered load (fraction of line rate)"
	p.Y.Label.Text = "accepted load"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return err
	}
	diag.Color = color.Gray{Y: 170}
	p.Add(diag)
	p.Legend.Add("accepted = offered", diag)
	p.Legend.Top, p.Legend.Left = true, true
	for k, name := range names { // insertion order: deterministic
		l, err := plotter.NewLine(curves[name])
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(k / 2)
		l.Width = vg.Points(1.5)
		if strings.HasSuffix(name, "fifo") {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
	}
	return p.Save(7*vg.Inch, 5*vg.Inch, path)
}

// BenchmarkSwitch16 measures simulated 64-byte block-hops (blocks forwarded
// by the switch) per wall-clock second on a 16-port voq + iSLIP switch under
// uniform Bernoulli traffic with 2 KiB packets, at 50 % and 90 % load.
func BenchmarkSwitch16(b *testing.B) {
	for _, load := range []float64{0.5, 0.9} {
		b.Run(fmt.Sprintf("load%.0f", load*100), func(b *testing.B) {
			cfg := smallConfig(16, 1)
			var hops, events uint64
			start := time.Now()
			for i := 0; i < b.N; i++ {
				r := runUniform(b, cfg, load, 2048, 0, 50*ib.Microsecond)
				hops += r.blockHops
				events += r.events
			}
			sec := time.Since(start).Seconds()
			b.ReportMetric(float64(hops)/sec, "blockhops/s")
			b.ReportMetric(float64(events)/sec, "events/s")
		})
	}
}
