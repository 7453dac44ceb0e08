package fabric

import (
	"fmt"
	"maps"
	"strings"

	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/workload"
)

// runPerftest runs a perftest-style RDMA test between hosts with HCAs:
// back to back, or on any fabric between its first and last host (the pair
// farthest apart in a fat tree) or the pairs workload.pattern names,
// optionally while the other hosts load the fabric with synthetic
// background traffic (workload.background).
func runPerftest(cfg *Config, opts RunOptions) (map[string]any, error) {
	if cfg.Workload.Mcg {
		return runMcastPerftest(cfg, opts)
	}
	run := perftestRun(cfg)
	if err := run.Validate(); err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	var (
		pt  *workload.Perftest
		bg  *synthRun
		s   *components.Sim
		err error
		// rates are the test's hosts' own cable timings, nil when they
		// run at the link section's speed (back to back: always)
		rates []link.Timing
	)
	view := &Simulation{}
	if cfg.Topology.Kind == KindBackToBack {
		if run.Pairs, err = perftestPairs(cfg, 2); err != nil {
			return nil, &UnsupportedError{Msg: err.Error()}
		}
		pt, err = workload.BuildPerftest(run)
		if err != nil {
			return nil, &UnsupportedError{Msg: err.Error()}
		}
		s = pt.Sim()
		if cfg.Sim.AllPortEvents {
			s.AllEvents()
		}
		for _, d := range pt.Devices() {
			view.Ports = append(view.Ports, d.Port)
			view.Blocks = append(view.Blocks, d, d.Port)
		}
	} else {
		s = newSim(cfg)
		pt, bg, rates, err = buildFabricPerftest(cfg, s, run, view)
		if err != nil {
			return nil, err
		}
	}
	view.Sim = s
	if opts.Observe != nil {
		opts.Observe(view)
	}
	if opts.Started != nil {
		opts.Started(view)
	}
	if bg != nil {
		for _, e := range bg.eps {
			e.Start(bg.t0, bg.t1)
		}
	}
	// The fabric's metrics are taken when the test ends, with the test's
	// own: a checked run then settles, and reports the same numbers.
	var fm map[string]any
	if cfg.Sim.Check {
		pt.OnEnd = func() {
			fm = perftestFabricMetrics(cfg, s, bg, rates, view)
			settlePerftest(cfg, view, bg)
		}
	}
	m, err := pt.Run()
	if err != nil {
		return nil, view.explainTimeLimit(cfg, err)
	}
	if fm == nil {
		fm = perftestFabricMetrics(cfg, s, bg, rates, view)
	}
	maps.Copy(m, fm)
	return m, nil
}

// perftestFabricMetrics returns what a perftest run reports beside the
// test's own metrics: the background's, the fabric's counters, the
// simulated time and events, and with rates (the timings of the cables of
// the hosts in the test, pairs and background) their {min, max}.
func perftestFabricMetrics(cfg *Config, s *components.Sim, bg *synthRun, rates []link.Timing, view *Simulation) map[string]any {
	m := map[string]any{}
	if bg != nil {
		if now := s.Now(); now <= bg.t0 {
			// The test ended before the background's warm-up did: its
			// window [warmup_ns, end of the test] is empty. Its
			// statistics then cover that empty window (no stall, no
			// switch activity), not the warm-up that ran from time 0
			// with no window started; metrics leaves out the rates.
			part := bg.parts[0]
			part.stall0, part.stall1 = 0, 0
			part.statsStart()
			part.statsEnd()
			bg.t1 = bg.t0
		} else {
			bg.t1 = min(bg.t1, now)
		}
		for k, v := range bg.metrics(cfg, cfg.Link.Timing(cfg.Link.LengthM).DataRateBps()) {
			switch {
			case k == "sim_time_ns", k == "events", k == "hosts", k == "switches", k == "link_data_rate_gbps", k == "block_hops":
			case k == "host_link_rate_gbps":
				// The background hosts' alone; rates covers the pairs'
				// hosts too (below).
			case k == "packets_dropped", k == "drain_complete":
				// The background stops with the test, mid-flight: loss
				// is for the checkers (--check) to judge, not a count.
			case k == "cc_fecn_marked", k == "cc_victim_unmarked":
				// The switches' counts, which hcaCCMetrics reports.
			case strings.HasPrefix(k, "cc_"):
				// The background endpoints' reaction, beside the HCAs'
				// (hcaCCMetrics: cc_ keys).
				m["background_"+k] = v
			default:
				m[k] = v
			}
		}
		m["background_hosts"] = len(bg.eps)
		m["hosts"] = len(bg.net.Hosts)
		m["switches"] = len(bg.net.Switches)
		var blocks uint64
		for _, p := range bg.net.Ports {
			blocks += p.Stats().DataBlocks
		}
		m["block_hops"] = blocks
	} else {
		// The fabric's own counters: blocks × links and packets the hosts
		// received (data, responses and ACKs alike), for benchmarks.
		var blocks, rx uint64
		for _, p := range view.Ports {
			blocks += p.Stats().DataBlocks
			if _, ok := p.Owner.(HCAHost); ok || len(view.Ports) == 2 {
				rx += p.Stats().RxPackets
			}
		}
		m["block_hops"] = blocks
		m["packets_delivered"] = rx
	}
	if rates != nil {
		m["host_link_rate_gbps"] = hostLinkRates(rates)
	}
	if cfg.CC.Enable && view.Net != nil {
		hcaCCMetrics(m, view, s.Now())
	}
	m["sim_time_ns"] = s.Now().Nanoseconds()
	m["events"] = s.Events()
	view.addLinkErrors(m)
	return m
}

// ccParams returns congestion control's parameters for cfg's fabric, nil
// with cc.enable off. The default CCT's unit is an MTU-sized synthetic
// packet (SEND ONLY) on the host link, for the endpoints and the HCAs
// alike.
func ccParams(cfg *Config) *cc.Params {
	if !cfg.CC.Enable {
		return nil
	}
	mtu := ib.Packet{Opcode: ib.SendOnly, PayloadLen: cfg.Link.MTU}
	p := cfg.CC.Resolve(cfg.Link.Timing(cfg.Link.LengthM).Serialization(mtu.WireBytes()))
	return &p
}

// ccParamsAt returns def, congestion control's parameters for the link
// section's host link, for a host whose own link has timing t: the same
// parameters when an MTU packet takes as long on it, else ones whose
// default CCT counts in t's MTU packet times, so an index throttles a
// host on a slower cable to the same fraction of its own link (cc.cct_ns,
// when given, is every host's table as written).
func ccParamsAt(cfg *Config, def *cc.Params, t link.Timing) *cc.Params {
	mtu := ib.Packet{Opcode: ib.SendOnly, PayloadLen: cfg.Link.MTU}
	ser := t.Serialization(mtu.WireBytes())
	if def == nil || ser == cfg.Link.Timing(cfg.Link.LengthM).Serialization(mtu.WireBytes()) {
		return def
	}
	p := cfg.CC.Resolve(ser)
	return &p
}

// enableHCACC turns on the HCAs' reaction point (hca/cc.go) with
// cc.enable; nil devices are skipped.
func enableHCACC(cfg *Config, devs []*hca.Device) {
	p := ccParams(cfg)
	if p == nil {
		return
	}
	for _, d := range devs {
		if d != nil {
			d.EnableCC(ccParamsAt(cfg, p, d.Port.Timing()))
		}
	}
}

// hcaCCMetrics adds congestion control's counters for the HCAs
// (docs/metrics.md, "Congestion control"): the switches' marks, and the
// HCAs' FECNs, CNPs and per-QP indexes summed in port order. A flow is a
// QP here; its index is averaged over the whole test. Perftest and the
// collectives alike.
func hcaCCMetrics(m map[string]any, view *Simulation, now ib.PS) {
	var marked uint64
	for _, sw := range view.Net.Switches {
		marked += sw.FECNMarked()
	}
	victimMetrics(m, view.Net.Switches)
	var t hca.CCStats
	maxIndex := -1
	var indexSum float64
	throttled := 0
	for _, p := range view.Ports {
		h, ok := p.Owner.(HCAHost)
		if !ok {
			continue
		}
		st, ok := h.CC(now)
		if !ok {
			continue
		}
		t.FECNReceived += st.FECNReceived
		t.FECNResponses += st.FECNResponses
		t.FECNIgnored += st.FECNIgnored
		t.CNPsSent += st.CNPsSent
		t.CNPsSkipped += st.CNPsSkipped
		t.BECNs += st.BECNs
		throttled += st.Throttle.Throttled
		indexSum += st.Throttle.IndexSum
		maxIndex = max(maxIndex, st.Throttle.Max)
	}
	m["cc_fecn_marked"] = marked
	m["cc_fecn_received"] = t.FECNReceived
	m["cc_fecn_responses"] = t.FECNResponses
	m["cc_fecn_ignored"] = t.FECNIgnored
	m["cc_becn_sent"] = t.CNPsSent
	m["cc_becn_received"] = t.BECNs
	m["cc_cnp_skipped"] = t.CNPsSkipped
	m["cc_flows_throttled"] = throttled
	if maxIndex >= 0 {
		m["cc_ccti_max"] = maxIndex
	}
	if throttled > 0 {
		m["cc_ccti_mean"] = indexSum / float64(throttled)
	}
}

// settlePerftest lets a checked perftest run on after its last completion
// until the fabric is idle, so the checkers' end-of-run invariants (every
// packet delivered, every credit back) apply: background traffic stops
// and drains (for at most workload.drain_ns, as a synthetic run's does;
// the run then ends unsettled), then the fabric settles (settleTime).
func settlePerftest(cfg *Config, view *Simulation, bg *synthRun) {
	view.markEnd()
	if bg == nil {
		view.settle()
		return
	}
	bg.view, bg.check, bg.stopped = view, true, true
	for _, e := range bg.eps {
		e.StopInjecting()
	}
	if bg.settled() {
		bg.finish()
		return
	}
	// synthPart.deliver finishes the run at the delivery that drains it.
	view.Sim.StopAt(view.Sim.Now() + ib.FromNanoseconds(cfg.Workload.DrainNs))
}

// perftestRun is the perftest a config describes.
func perftestRun(cfg *Config) workload.PerftestRun {
	w := cfg.Workload
	run := workload.PerftestRun{
		Link: cfg.Link, HCA: cfg.HCA, Test: w.Test, Size: w.Size, Iterations: w.Iterations,
		TxDepth: w.TxDepth, QPs: w.QPs, InlineSize: w.InlineSize, SGEs: w.SGECount(), Seed: cfg.Seed, MaxTimeNs: cfg.Sim.MaxTimeNs,
		Connection: w.Connection, SL: w.SL, PairMetrics: w.Pattern != "" && w.Pattern != workload.PatternPair,
		UseSRQ: w.UseSRQ, RxDepth: w.RxDepth, UseEvent: w.UseEvent,
		CQModCount: w.CQModCount, CQModPeriodUS: w.CQModPeriodUS,
	}
	if cfg.Topology.Kind == KindBackToBack && w.SL != 0 {
		// Back to back on SL 0 the two ports keep one data VL, as they
		// always had (so such runs are unchanged); on another SL they get
		// the fabric's VLs, SL-to-VL table and VL arbitration.
		run.VLs, run.QoS = cfg.Switch.VLs, PortQoS(&cfg.Switch)
	}
	return run
}

// perftestPairs returns the perftest's pairs on a fabric of hosts hosts
// (workload.pattern, workload.clients, workload.shift).
func perftestPairs(cfg *Config, hosts int) ([]workload.PerftestPair, error) {
	w := &cfg.Workload
	return workload.PerftestPairs(w.Pattern, w.Clients, w.Shift, hosts, cfg.Seed)
}

// perftestHosts returns which of hosts hosts are in a pair (have an HCA)
// and the others, the background hosts, in host order.
func perftestHosts(pairs []workload.PerftestPair, hosts int) (inPair []bool, background []int) {
	inPair = make([]bool, hosts)
	for _, pr := range pairs {
		inPair[pr.Client], inPair[pr.Server] = true, true
	}
	for h, in := range inPair {
		if !in {
			background = append(background, h)
		}
	}
	return inPair, background
}

// buildFabricPerftest builds the configured fabric with HCAs on the hosts
// of the test's pairs (the first and last host, or workload.pattern's) and,
// with workload.background, packet endpoints on the others. It returns the
// timings of the cables of the hosts in the test (pairs and background)
// when some run at their own speed (hostTimings), else nil.
func buildFabricPerftest(cfg *Config, s *components.Sim, run workload.PerftestRun, view *Simulation) (*workload.Perftest, *synthRun, []link.Timing, error) {
	w := cfg.Workload
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return nil, nil, nil, err
	}
	n := len(topo.Hosts())
	if run.Pairs, err = perftestPairs(cfg, n); err != nil {
		return nil, nil, nil, &UnsupportedError{Msg: err.Error()}
	}
	inPair, bgHosts := perftestHosts(run.Pairs, n)
	var inTest []int // host nodes with an HCA or a background endpoint
	for h, node := range topo.Hosts() {
		if inPair[h] || w.Background {
			inTest = append(inTest, node)
		}
	}
	rates := hostTimings(cfg, topo, inTest)
	bgIndex := make([]int, n) // a background host's index among them
	for j, h := range bgHosts {
		bgIndex[h] = j
	}
	var sources []*workload.Source
	bg := &synthRun{s: s, timing: cfg.Link.Timing(cfg.Link.LengthM), cc: ccParams(cfg)}
	bg.parts = []*synthPart{{r: bg, s: s}}
	if w.Background && len(bgHosts) == 0 {
		if len(run.Pairs) == 1 {
			return nil, nil, nil, &UnsupportedError{Msg: fmt.Sprintf("workload.background: true, but the fabric's %d hosts are the two perftest hosts; background traffic needs more (topology.hosts)", n)}
		}
		return nil, nil, nil, &UnsupportedError{Msg: fmt.Sprintf("workload.background: true, but every one of the fabric's %d hosts is in a perftest pair (workload.pattern %s); background traffic needs hosts in none (fewer workload.clients, or more topology.hosts)", n, w.Pattern)}
	}
	if w.Background {
		tc := w.Traffic()
		tc.PerftestHosts = n - len(bgHosts)
		if sources, err = bg.backgroundSources(cfg, topo, bgHosts, tc, cfg.Seed); err != nil {
			return nil, nil, nil, &UnsupportedError{Msg: err.Error()}
		}
	}
	devs := make([]*hca.Device, n) // by host; nil off the pairs
	net, err := BuildNetworkOn(cfg, s, topo, sub, func(i int, lid uint16, name string) HostDevice {
		if inPair[i] {
			h := NewHCAHost(s, cfg, lid, name)
			devs[i] = h.Device
			return h
		}
		if sources == nil {
			return workload.NewIdleHost(s, name)
		}
		j := bgIndex[i]
		e := workload.NewEndpoint(s, name, j, lid, sources[j])
		bg.eps = append(bg.eps, e)
		if bg.cc != nil {
			// The synthetic workloads' reaction, one flow per
			// background destination (endpoint_cc.go).
			p := bg.cc
			if bg.hostTiming != nil {
				p = ccParamsAt(cfg, p, bg.hostTiming[j])
			}
			return e.EnableCC(p, len(bgHosts))
		}
		return e
	})
	if err != nil {
		return nil, nil, nil, err
	}
	enableHCACC(cfg, devs)
	// A latency test may run a second time to trace its median iteration:
	// the same fabric and background on a new simulation, unobserved.
	rebuild := func() (*workload.Perftest, error) {
		pt, bg, _, err := buildFabricPerftest(cfg, newSim(cfg), run, &Simulation{})
		if err != nil {
			return nil, err
		}
		if bg != nil {
			for _, e := range bg.eps {
				e.Start(bg.t0, bg.t1)
			}
		}
		return pt, nil
	}
	pt, err := workload.BuildPerftestPairsOn(s, devs, run, rebuild)
	if err != nil {
		return nil, nil, nil, &UnsupportedError{Msg: err.Error()}
	}
	view.Ports = net.Ports
	view.Blocks = net.Blocks()
	view.Net = net
	if len(bg.eps) == 0 {
		return pt, nil, rates, nil
	}
	bg.net = net
	bg.t0 = ib.FromNanoseconds(w.WarmupNs)
	bg.t1 = bg.t0 + ib.FromNanoseconds(w.MeasureNs)
	// The background's statistics (its credit stall, the switches') cover
	// its window, as a synthetic run's do; a test that ends first ends them.
	part := bg.parts[0]
	part.eps, part.switches = bg.eps, net.Switches
	s.Schedule(bg.t0, part, evSynthMeasureStart)
	s.Schedule(bg.t1, part, evSynthStatsEnd)
	bg.indexHosts()
	if sub.AdaptiveRouting() {
		// packets_reordered for the background, as for a synthetic run.
		bg.psnHi = make([]uint32, len(bg.eps)*len(bg.eps))
	}
	bg.wireBackground(cfg, net, bgHosts)
	if anyLossy(net.Ports) {
		// The background counts its own packets lost (the HCAs' are the
		// test's to recover): those from an endpoint's LID, found by an
		// index of the HCAs' LIDs.
		var hcaLID []bool
		for h, in := range inPair {
			if in {
				lid := int(net.HostLID(h))
				hcaLID = append(hcaLID, make([]bool, max(0, lid+1-len(hcaLID)))...)
				hcaLID[lid] = true
			}
		}
		for _, p := range net.Ports {
			p.OnDiscard = func(p *link.Port, pkt *ib.Packet) {
				if int(pkt.SLID) >= len(hcaLID) || !hcaLID[pkt.SLID] {
					part.discard(p, pkt)
				}
			}
		}
	}
	return pt, bg, rates, nil
}

// backgroundSources makes the sources of a background beside another
// workload (a perftest's, a multicast run's) on bgHosts (host indices of
// topo): tc's synthetic knobs with workload.background_pattern, packets of
// link.mtu unless workload.sizes says otherwise (workload.size is the
// other workload's), each host at its own cable's rate (bg.hostTiming).
func (bg *synthRun) backgroundSources(cfg *Config, topo *Topology, bgHosts []int, tc workload.TrafficConfig, seed uint64) ([]*workload.Source, error) {
	tc.Pattern, tc.Background = cfg.Workload.BackgroundPattern, true
	tc.Size = cfg.Link.MTU
	hostNodes, nodes := topo.Hosts(), make([]int, len(bgHosts))
	for j, h := range bgHosts {
		nodes[j] = hostNodes[h]
	}
	bg.hostTiming = hostTimings(cfg, topo, nodes)
	return workload.NewSourcesAt(tc, hostGbps(bg.hostTiming, len(bgHosts), bg.timing), seed)
}

// wireBackground gives the background's endpoints (bg.eps, on bgHosts)
// their destinations' LIDs, workload.background_sl and its VL, and the
// run's callbacks (bg.parts[0]).
func (bg *synthRun) wireBackground(cfg *Config, net *Network, bgHosts []int) {
	sl2vl := cfg.Switch.SL2VLTable()
	part := bg.parts[0]
	for _, e := range bg.eps {
		e.LIDOf = func(h int) uint16 { return net.HostLID(bgHosts[h]) }
		bgSL := cfg.Workload.BackgroundServiceLevel()
		e.SL = uint8(bgSL)
		e.VL = sl2vl[bgSL]
		// CNPs count toward the drain only, as in a synthetic run.
		part.wireEndpoint(e, bg.psnHi != nil, bg.cc != nil, bg.cc != nil)
	}
}
