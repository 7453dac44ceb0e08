package fabric

import (
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
	"github.com/hcasim/hcasim/workload"
)

// synthRun drives synthetic traffic on packet endpoints over a switched (or
// back-to-back) fabric, with warm-up, measurement and drain phases.
type synthRun struct {
	s        *components.Sim
	net      *Network
	eps      []*workload.Endpoint
	t0, t1   ib.PS
	drainCap ib.PS

	injected, delivered     uint64
	measuredOut, measuredIn uint64  // measured packets injected / delivered
	windowWireBytes         float64 // wire bytes received in the window (pro rata, windowShare)
	windowPayload           float64
	timing                  link.Timing
	hops                    int64
	lat                     workload.Latencies
	drained                 bool
	stopped                 bool
	view                    *Simulation
	check                   bool
}

// finish ends a drained run.
func (r *synthRun) finish() {
	r.drained = true
	r.view.finish(r.check)
}

const (
	evSynthMeasureEnd uint8 = iota + 1
	evSynthDrainCap
	evSynthMeasureStart
)

func runSynthetic(cfg *Config, opts RunOptions) (map[string]any, error) {
	s := components.NewSimOn(cfg.Sim.Engine)
	w := cfg.Workload
	r := &synthRun{s: s, timing: cfg.Link.Timing(cfg.Link.LengthM)}
	seed := cfg.Seed
	topo, sub, err := ConfigureFabric(cfg, seed)
	if err != nil {
		return nil, err
	}
	timing := cfg.Link.Timing(cfg.Link.LengthM)
	sources, err := workload.NewSources(w.Traffic(), len(topo.Hosts()), timing.DataRateBps()/1e9, seed)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	net, err := BuildNetworkOn(cfg, s, topo, sub, func(i int, lid uint16, name string) HostDevice {
		e := workload.NewEndpoint(s, name, i, lid, sources[i])
		r.eps = append(r.eps, e)
		return e
	})
	if err != nil {
		return nil, err
	}
	r.net = net
	sl2vl := cfg.Switch.SL2VLTable()
	for _, e := range r.eps {
		e.LIDOf = net.HostLID
		e.SL = uint8(w.SL)
		e.VL = sl2vl[w.SL]
		e.OnDeliver = r.deliver
		e.OnInject = r.inject
	}
	r.t0 = ib.PS(w.WarmupNs * 1000)
	r.t1 = r.t0 + ib.PS(w.MeasureNs*1000)
	r.drainCap = ib.PS(w.DrainNs * 1000)
	s.StopAt(ib.PS(cfg.Sim.MaxTimeNs * 1000))
	r.view = &Simulation{Sim: s, Ports: net.Ports, Blocks: net.Blocks()}
	r.check = cfg.Sim.Check
	if opts.Observe != nil {
		opts.Observe(r.view)
	}
	for _, e := range r.eps {
		e.Start(r.t0, r.t1)
	}
	s.Schedule(r.t0, r, evSynthMeasureStart)
	s.Schedule(r.t1, r, evSynthMeasureEnd)
	if err := s.Run(); err != nil {
		return nil, err
	}
	return r.metrics(cfg, timing.DataRateBps()), nil
}

func (r *synthRun) inject(pkt *ib.Packet) {
	r.injected++
	if pkt.Measure {
		r.measuredOut++
	}
}

func (r *synthRun) deliver(pkt *ib.Packet, tail ib.PS) {
	r.delivered++
	if tail > r.t0 && tail-r.timing.Serialization(pkt.WireBytes()) < r.t1 {
		share := windowShare(tail, r.timing.Serialization(pkt.WireBytes()), r.t0, r.t1)
		r.windowWireBytes += float64(pkt.WireBytes()) * share
		r.windowPayload += float64(pkt.PayloadLen) * share
	}
	if pkt.Measure {
		r.measuredIn++
		r.lat.Add(tail - pkt.InjectAt)
		r.hops += int64(pkt.Hops)
	}
	if r.stopped && !r.drained && r.delivered == r.injected && r.queuedMeasured() == 0 {
		r.finish()
	}
}

// queuedMeasured reports whether measured packets still wait in sources;
// after injection stops, the run drains until every measured packet landed.
func (r *synthRun) queuedMeasured() int {
	q := 0
	for _, e := range r.eps {
		q += e.Queued()
	}
	return q
}

// HandleEvent implements components.EventHandler for the phase controller.
func (r *synthRun) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case evSynthMeasureStart:
		// Switch statistics cover the measurement window only.
		for _, sw := range r.net.Switches {
			sw.ResetStats()
		}
	case evSynthMeasureEnd:
		r.stopped = true
		for _, e := range r.eps {
			e.StopInjecting()
		}
		if r.delivered == r.injected && r.queuedMeasured() == 0 {
			r.finish()
			return
		}
		r.s.Schedule(r.s.Now()+r.drainCap, r, evSynthDrainCap)
	case evSynthDrainCap:
		r.s.Stop()
	}
}

func (r *synthRun) metrics(cfg *Config, rateBps float64) map[string]any {
	window := float64(r.t1 - r.t0)
	n := float64(len(r.eps))
	endAt, endEvents := r.s.Now(), r.s.Events()
	if r.view != nil {
		endAt, endEvents = r.view.end()
	}
	var created, skipped, wrong uint64
	var stall ib.PS
	for _, e := range r.eps {
		created += e.Created
		skipped += e.Skipped
		wrong += e.WrongDest
		stall += e.CreditStall()
	}
	m := map[string]any{
		"offered_load":        cfg.Workload.OfferedLoad,
		"accepted_load":       r.windowWireBytes * 8 / (rateBps * window * 1e-12) / n,
		"goodput_gbps":        r.windowPayload * 8 / window * 1000,
		"latency_ns":          r.lat.SummaryNs(),
		"packets_created":     created,
		"packets_skipped":     skipped,
		"packets_sent":        r.injected,
		"packets_delivered":   r.delivered,
		"packets_misrouted":   wrong,
		"drain_complete":      r.drained,
		"credit_stall_ns":     stall.Nanoseconds(),
		"hosts":               len(r.eps),
		"switches":            len(r.net.Switches),
		"sim_time_ns":         endAt.Nanoseconds(),
		"events":              endEvents,
		"link_data_rate_gbps": rateBps / 1e9,
	}
	if r.drained {
		// Every measured packet landed; anything injected and not
		// delivered now was lost in the fabric.
		m["packets_dropped"] = r.measuredOut - r.measuredIn
	} else {
		m["packets_dropped"] = 0
		m["packets_in_flight_at_end"] = r.injected - r.delivered
	}
	if r.measuredIn > 0 {
		m["hops_mean"] = float64(r.hops) / float64(r.measuredIn)
	}
	var blockHops int64
	for _, p := range r.net.Ports {
		blockHops += int64(p.Stats.DataBlocks)
	}
	m["block_hops"] = blockHops
	r.switchMetrics(m)
	return m
}

// switchMetrics adds the switches' statistics over the window: a fabric-wide
// summary, and for a single switch its per-port and per-VL figures under
// "switch_".
func (r *synthRun) switchMetrics(m map[string]any) {
	if len(r.net.Switches) == 0 {
		return
	}
	var peak, stall, conflicts, losses, utilMax, meanSum float64
	var meanN int
	for _, sw := range r.net.Switches {
		sm := sw.Metrics()
		for _, k := range switchasic.MetricKeys(sm) {
			v := sm[k]
			switch {
			case strings.HasSuffix(k, "_buf_peak_blocks"):
				peak = max(peak, v)
			case strings.HasSuffix(k, "_buf_mean_blocks"):
				meanSum += v
				meanN++
			case strings.HasSuffix(k, "_credit_stall_ps"):
				stall += v
			case strings.HasSuffix(k, "_xbar_conflicts"):
				conflicts += v
			case strings.HasSuffix(k, "_arb_losses"):
				losses += v
			case strings.HasSuffix(k, "_link_util"):
				utilMax = max(utilMax, v)
			}
		}
		if len(r.net.Switches) == 1 {
			detail := map[string]any{}
			for k, v := range sm {
				detail[k] = v
			}
			m["switch"] = detail
		}
	}
	m["switch_buf_peak_bytes"] = peak * ib.CreditBytes
	if meanN > 0 {
		m["switch_buf_mean_bytes"] = meanSum / float64(meanN) * ib.CreditBytes
	}
	m["switch_credit_stall_ns"] = stall / 1000
	m["switch_xbar_conflicts"] = conflicts
	m["switch_arb_losses"] = losses
	m["switch_link_util_max"] = utilMax
}
