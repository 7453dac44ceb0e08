package workload

import (
	"fmt"
	"math"
	"slices"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// perftestGroup runs a perftest's pairs together: one common start after
// every pair's setup, and the end at the last pair's last completion. It
// owns the devices' completion and memory hooks, which it hands to the
// pair (and side) that owns the CQ or buffer, so one HCA can serve several
// pairs, as one host runs several perftest processes.
type perftestGroup struct {
	s     *components.Sim
	run   PerftestRun
	pairs []*perftest
	hosts []*hca.Device // indexed by host, as run.Pairs names them (nil: not in a pair)
	devs  []*hca.Device // the devices the pairs use, each once, in host order
	left  int           // pairs not done

	start, end ib.PS
	// result is the run-wide metrics (multi-pair runs) at the end.
	result map[string]any
	// onEnd is called when the last pair ends, instead of stopping.
	onEnd func()
}

// appRef names an application thread: a pair and its side (0 client, 1 server).
type appRef struct {
	p    *perftest
	side int
}

func newPerftestGroup(run PerftestRun, s *components.Sim, hosts []*hca.Device, rebuild func() (*Perftest, error)) (*Perftest, error) {
	g := &perftestGroup{s: s, run: run, hosts: hosts}
	pairs := run.pairs()
	used := make([]bool, len(hosts))
	for i, pr := range pairs {
		p := newPerftest(run, s, hosts[pr.Client], hosts[pr.Server], i == 0)
		p.g = g
		g.pairs = append(g.pairs, p)
		used[pr.Client], used[pr.Server] = true, true
	}
	for h, u := range used {
		if u {
			g.devs = append(g.devs, hosts[h])
		}
	}
	g.left = len(g.pairs)
	g.hook()
	return &Perftest{p: g.pairs[0], g: g, rebuild: rebuild}, nil
}

// hook installs each device's OnCQE, which wakes the thread whose CQ it
// is (found by the CQ's number, an index), and for write_lat OnMemWrite,
// which lets every thread of the device look at its own last byte.
func (g *perftestGroup) hook() {
	for _, d := range g.devs {
		var byCQ []appRef // indexed by CQ.Num
		var apps []appRef
		for _, p := range g.pairs {
			for side := range 2 {
				if p.dev[side] != d {
					continue
				}
				apps = append(apps, appRef{p, side})
				for _, qp := range p.qp[side] {
					for _, cq := range []*hca.CQ{qp.SendCQ, qp.RecvCQ} {
						for int(cq.Num) >= len(byCQ) {
							byCQ = append(byCQ, appRef{})
						}
						byCQ[cq.Num] = appRef{p, side}
					}
				}
			}
		}
		if g.run.UseEvent {
			// The threads sleep on their completion channels
			// (armEvents): a CQE wakes none.
			continue
		}
		d.OnCQE = func(cq *hca.CQ, now ib.PS) {
			if int(cq.Num) < len(byCQ) {
				if r := byCQ[cq.Num]; r.p != nil {
					r.p.wakeApp(r.side, now)
				}
			}
		}
		if p := g.pairs[0]; p.op == hca.WRRDMAWrite && p.isLat {
			d.OnMemWrite = func(addr uint64, n int, now ib.PS) {
				for _, r := range apps {
					r.p.memWritten(r.side, addr, n, now)
				}
			}
		}
	}
}

// kick posts every pair's setup work and schedules the common start: once
// the last setup post (pre-posted receives and their prefetch) is over, as
// perftest posts its receives before timing, and every pair at once.
func (g *perftestGroup) kick() {
	for _, p := range g.pairs {
		p.postSetup()
	}
	var startAt ib.PS
	for _, p := range g.pairs {
		for _, t := range p.thread {
			startAt = max(startAt, t.FreeAt(g.s.Now()))
		}
	}
	if startAt > 0 {
		startAt += setupSettle
	}
	g.s.Schedule(startAt, g, evStart)
}

// HandleEvent implements components.EventHandler: the timed part starts.
func (g *perftestGroup) HandleEvent(ev *components.Event) {
	if ev.Kind != evStart {
		panic(fmt.Sprintf("workload: perftest group: event kind %d", ev.Kind))
	}
	g.start = g.s.Now()
	for _, d := range g.devs {
		d.ResetStats()
	}
	for _, p := range g.pairs {
		p.begin()
	}
}

// pairDone is called as each pair finishes; the last ends the run.
func (g *perftestGroup) pairDone() {
	g.left--
	if g.left > 0 {
		return
	}
	g.end = g.s.Now()
	if len(g.pairs) > 1 || g.run.PairMetrics {
		g.result = g.metrics()
	}
	if g.onEnd != nil {
		g.onEnd()
		return
	}
	g.s.Stop()
}

// metrics returns the run-wide metrics of a multi-pair run
// (docs/metrics.md, "Perftest pairs"), to be laid over pair 0's.
func (g *perftestGroup) metrics() map[string]any {
	run := g.run
	pairs := run.pairs()
	bytesPerPair := float64(run.Size) * float64(run.Iterations*run.QPs)
	msgsPerPair := float64(run.Iterations * run.QPs)
	span := g.end - g.start
	m := map[string]any{"pairs": len(g.pairs)}
	bws := make([]float64, len(g.pairs))
	var errs []string
	var lats []float64
	results := make([]any, len(g.pairs))
	var retried int64
	for i, p := range g.pairs {
		if d := p.end - g.start; d > 0 {
			bws[i] = bytesPerPair * 8 / float64(d) * 1000
		}
		r := map[string]any{"client": pairs[i].Client, "server": pairs[i].Server, "bw_gbps": bws[i]}
		if p.isLat {
			v, div := p.latSamples()
			l := Latencies{v: slices.Clone(v)}
			l.Sort()
			typ := float64(l.Quantile(0.5)) / div / 1e6
			lats = append(lats, typ)
			r["lat_typical_us"] = typ
		}
		results[i] = r
		for _, e := range p.errs {
			errs = append(errs, fmt.Sprintf("pair %d (host %d → host %d): %s", i, pairs[i].Client, pairs[i].Server, e))
		}
		retried += retries(p.qp[0]) // the client side's retry sequences
	}
	m["pair_results"] = results
	if span > 0 {
		n := float64(len(g.pairs))
		m["aggregate_bw_gbps"] = bytesPerPair * n * 8 / float64(span) * 1000
		m["aggregate_msg_rate_mpps"] = msgsPerPair * n / float64(span) * 1e6
	}
	m["pair_bw_sum_gbps"] = sum(bws)
	m["pair_bw_gbps"] = minMaxMean(bws)
	// Every pair moves the same bytes, so its bandwidth is proportional
	// to its message rate, 1 / its time, and Jain's index, which does not
	// change with scale, is taken on that: defined for 0-byte messages too.
	rates := make([]float64, len(g.pairs))
	for i, p := range g.pairs {
		rates[i] = 1 / math.Max(1, float64(p.end-g.start))
	}
	m["fairness_jain"] = jain(rates)
	if lats != nil {
		m["pair_lat_typical_us"] = minMaxMean(lats)
	}
	// Pair 0's data_errors, if any, are among these.
	m["data_verified"] = len(errs) == 0
	if len(errs) > 0 {
		m["data_errors"] = errs
	}
	var c hca.Counters
	for _, d := range g.devs {
		c.Timeouts += d.Counters.Timeouts
		c.Naks += d.Counters.Naks
		c.RNRNaks += d.Counters.RNRNaks
		c.CQOverruns += d.Counters.CQOverruns
	}
	m["total_retries"] = retried
	m["total_timeouts"] = c.Timeouts
	m["total_naks_sent"] = c.Naks
	m["total_rnr_naks_sent"] = c.RNRNaks
	m["total_cq_overruns"] = c.CQOverruns
	if srv := g.commonServer(); srv != nil {
		up, down := srv.PCIeUtilization()
		m["server_pcie_utilization"] = map[string]any{"up": up, "down": down}
	}
	return m
}

// commonServer returns the server of every pair when the pairs share one
// (an incast), else nil.
func (g *perftestGroup) commonServer() *hca.Device {
	srv := g.pairs[0].dev[1]
	for _, p := range g.pairs[1:] {
		if p.dev[1] != srv {
			return nil
		}
	}
	return srv
}

// minMaxMean is the {min, max, mean} object of v (not empty).
func minMaxMean(v []float64) map[string]any {
	return map[string]any{"min": slices.Min(v), "max": slices.Max(v), "mean": sum(v) / float64(len(v))}
}

// jain is Jain's fairness index of v, (Σx)² / (n Σx²): 1 when every pair
// gets the same, 1/n when one gets everything (R. Jain, D. Chiu, W. Hawe,
// A Quantitative Measure of Fairness and Discrimination for Resource
// Allocation in Shared Computer Systems, DEC-TR-301, 1984).
func jain(v []float64) float64 {
	var s, ss float64
	for _, x := range v {
		s += x
		ss += x * x
	}
	return s * s / (float64(len(v)) * ss)
}
