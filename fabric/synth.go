package fabric

import (
	"fmt"
	"strings"

	"github.com/hcasim/hcasim/cc"
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
	group    *components.Group // a partitioned run (sim.partitions > 1), else nil
	net      *Network
	eps      []*workload.Endpoint
	parts    []*synthPart
	t0, t1   ib.PS
	drainCap ib.PS

	timing link.Timing
	// hostTiming is each host's own cable timing (by host index) when some
	// host cable runs at another speed than the link section's; nil when
	// every host's is timing. A host injects at its offered load of its
	// own link, and a delivery's wire time is the destination's cable's.
	hostTiming []link.Timing
	// hostOf maps a host's LID to its index in eps: deliveries count their
	// window bytes per source.
	hostOf  []int32
	drained bool
	stopped bool
	view    *Simulation
	check   bool
	// settleErrs: the link errors when a partitioned run started to settle.
	settleErrs uint64
	// psnHi is, with adaptive routing, per flow (destination × hosts +
	// source) 1 + the highest PSN delivered so far (0: none yet), for
	// packets_reordered; nil under static routing. A destination's row is
	// written only by its own partition.
	psnHi []uint32
	// cc is congestion control's parameters (cc.enable), nil when off.
	cc *cc.Params
	// split: the hotspot/victim split of the accepted load is measured
	// (a hotspot run with cc.enable or cc.report; host 0 is the hotspot).
	split bool
}

// synthPart is one partition's share of a synthetic run (the whole run when
// serial): its endpoints and switches, its phase events, and the counters
// its deliveries and injections add to, summed in partition order at the
// end.
type synthPart struct {
	r        *synthRun
	s        *components.Sim
	eps      []*workload.Endpoint
	switches []*switchasic.Switch

	injected, delivered     uint64
	discarded               uint64    // endpoint packets links discarded as corrupted
	measuredOut, measuredIn uint64    // measured packets injected / delivered
	windowWireBytes         windowSum // wire bytes received in the window (pro rata)
	windowPayload           windowSum
	srcWireBytes            []windowSum // windowWireBytes by source host (index in r.eps)
	hops                    int64
	lat                     workload.Latencies
	stopped                 bool   // the measurement window ended here
	lastDeliver             ib.PS  // when the latest packet landed here
	stall0, stall1          ib.PS  // its endpoints' credit stall at the window's start and end
	statsEnded              bool   // the window's statistics were taken (statsEnd)
	reordered               uint64 // measured packets delivered after a later packet of their flow (adaptive routing)

	// Congestion control: CNPs put on the wire and landed here (not data:
	// they count toward the drain only), and, for the split, the wire
	// bytes delivered in the window to the hotspot and from non-hotspot
	// hosts to non-hotspot hosts.
	cnpOut, cnpIn     uint64
	hotWire, victWire windowSum
	// nextDeliver is the delivery deliverCC hands data packets to.
	nextDeliver func(*ib.Packet, ib.PS)
}

// statsStart starts the measurement window's statistics: the switches'
// and the endpoints' credit stall.
func (p *synthPart) statsStart() {
	for _, sw := range p.switches {
		sw.ResetStats()
	}
	for _, e := range p.eps {
		p.stall0 += e.CreditStallAt(p.s.Now())
	}
}

// statsEnd takes them as the window ends, not after a drain (whose falling
// load would dilute them and leave them over another span than
// accepted_load).
func (p *synthPart) statsEnd() {
	for _, sw := range p.switches {
		sw.FreezeStats()
	}
	for _, e := range p.eps {
		p.stall1 += e.CreditStallAt(p.s.Now())
	}
	p.statsEnded = true
}

// finish ends a drained run.
func (r *synthRun) finish() {
	r.drained = true
	if r.group == nil {
		r.view.finish(r.check)
		return
	}
	// The workload ended when the last packet landed (or at the window's
	// end if nothing was left in flight); partitions may have run up to a
	// lookahead past it.
	end := r.t1
	for _, p := range r.parts {
		end = max(end, p.lastDeliver)
	}
	r.view.endAt, r.view.endEvents, r.view.ended = end, r.group.Events(), true
	// Every packet has landed: no link discards a data packet after end.
	r.view.endDiscards = discards(r.view.Ports)
	if !r.check {
		r.group.Stop()
		return
	}
	// Checkers want every credit back: run on until the fabric settles.
	// One window, which on lossy links must pass without a link error
	// (runSynthetic checks; Simulation.settle says why).
	r.view.Settled = true
	r.settleErrs = linkErrors(r.view.Ports)
	r.group.StopAt(end + lossyWindow(r.view.Ports, settleTime(r.view.Ports)))
}

const (
	evSynthMeasureEnd uint8 = iota + 1
	evSynthDrainCap
	evSynthMeasureStart
	// A perftest's background window ends: its statistics only (the
	// traffic runs on until the test ends).
	evSynthStatsEnd
)

func runSynthetic(cfg *Config, opts RunOptions) (map[string]any, error) {
	w := cfg.Workload
	r := &synthRun{timing: cfg.Link.Timing(cfg.Link.LengthM)}
	seed := cfg.Seed
	topo, sub, err := ConfigureFabric(cfg, seed)
	if err != nil {
		return nil, err
	}
	timing := cfg.Link.Timing(cfg.Link.LengthM)
	r.hostTiming = hostTimings(cfg, topo, topo.Hosts())
	sources, err := workload.NewSourcesAt(w.Traffic(), hostGbps(r.hostTiming, len(topo.Hosts()), timing), seed)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	r.cc = ccParams(cfg)
	sims, part, err := partitionRun(cfg, opts, topo)
	if err != nil {
		return nil, err
	}
	if len(sims) > 1 {
		r.group = sims[0].Group()
	}
	r.s = sims[0]
	for _, s := range sims {
		r.parts = append(r.parts, &synthPart{r: r, s: s})
	}
	net, err := buildNetwork(cfg, sims, part, topo, sub, func(i int, lid uint16, name string, s *components.Sim) HostDevice {
		e := workload.NewEndpoint(s, name, i, lid, sources[i])
		r.eps = append(r.eps, e)
		if r.cc != nil {
			p := r.cc
			if r.hostTiming != nil {
				p = ccParamsAt(cfg, p, r.hostTiming[i])
			}
			return e.EnableCC(p, len(sources))
		}
		return e
	})
	if err != nil {
		return nil, err
	}
	r.net = net
	if sub.AdaptiveRouting() {
		r.psnHi = make([]uint32, len(r.eps)*len(r.eps))
	}
	for i, node := range topo.Switches() {
		p := r.parts[part[node]]
		p.switches = append(p.switches, net.Switches[i])
	}
	sl2vl := cfg.Switch.SL2VLTable()
	hosts := topo.Hosts()
	r.indexHosts()
	r.split = w.Kind == workload.PatternHotspot && (cfg.CC.Enable || cfg.CC.Report)
	for i, e := range r.eps {
		p := r.parts[part[hosts[i]]]
		p.eps = append(p.eps, e)
		e.LIDOf = net.HostLID
		e.SL = uint8(w.SL)
		e.VL = sl2vl[w.SL]
		p.wireEndpoint(e, r.psnHi != nil, r.cc != nil, r.cc != nil || r.split)
	}
	if anyLossy(net.Ports) {
		for i, port := range net.Ports {
			port.OnDiscard = r.parts[part[net.portNode[i]]].discard
		}
	}
	r.t0 = ib.FromNanoseconds(w.WarmupNs)
	r.t1, _ = cfg.MeasureEnd()
	r.drainCap = ib.FromNanoseconds(w.DrainNs)
	maxT := ib.FromNanoseconds(cfg.Sim.MaxTimeNs)
	r.view = &Simulation{Sim: r.s, Ports: net.Ports, group: r.group, Net: net}
	var po *partitionedObservers
	if r.group != nil && opts.Observe != nil {
		blocks, parts := net.blocks(part)
		po, r.view.Blocks = newPartitionedObservers(blocks, parts, len(sims))
	} else {
		r.view.Blocks = net.Blocks()
	}
	r.check = cfg.Sim.Check
	if opts.Observe != nil {
		opts.Observe(r.view)
	}
	if opts.Started != nil {
		opts.Started(r.view)
	}
	for _, e := range r.eps {
		e.Start(r.t0, r.t1)
	}
	for _, p := range r.parts {
		p.s.Schedule(r.t0, p, evSynthMeasureStart)
		p.s.Schedule(r.t1, p, evSynthMeasureEnd)
	}
	if r.group == nil {
		r.s.StopAt(maxT)
		if err := r.s.Run(); err != nil {
			return nil, err
		}
	} else {
		r.group.StopAt(maxT)
		switch {
		case po != nil && r.check:
			// Checkers see a window's events before the run decides
			// whether it has drained (a violation stops it); the run
			// then settles to a time limit, as the serial run does.
			r.group.OnBarrier(po.replay)
			r.group.OnBarrier(r.barrier)
		case po != nil:
			// The serial run stops at the delivery that drains it; the
			// partitions ran on to their window's end. Observers see
			// the window after the drain decision, and nothing later
			// than the run's end.
			r.group.OnBarrier(r.barrier)
			r.group.OnBarrier(func() {
				if r.view.ended {
					po.replayUntil(r.view.endAt)
					return
				}
				po.replay()
			})
		default:
			r.group.OnBarrier(r.barrier)
		}
		if err := r.group.Run(); err != nil {
			return nil, err
		}
		if r.view.Settled && linkErrors(r.view.Ports) != r.settleErrs {
			// A link error in the settle window: credits may still be
			// coming back, so the idle-fabric checks do not apply.
			r.view.Settled = false
		}
	}
	return r.metrics(cfg, timing.DataRateBps()), nil
}

// partitionRun returns the Sims of a run and each node's partition: one
// serial Sim, or with sim.partitions > 1 a Group's partitions (the fabric
// cut by Partition) with the lookahead of the cables between them and the
// thread count the config or the caller (a sweep's share) asks for.
func partitionRun(cfg *Config, opts RunOptions, topo *Topology) ([]*components.Sim, []int, error) {
	n := cfg.Sim.Partitions
	if n <= 1 {
		return []*components.Sim{newSim(cfg)}, make([]int, len(topo.Nodes)), nil
	}
	if sw := len(topo.Switches()); n > sw {
		return nil, nil, &UnsupportedError{Msg: fmt.Sprintf("sim.partitions: %d is more than the fabric's switches (%d); give at most %d", n, sw, sw)}
	}
	part := Partition(topo, n)
	look, err := lookahead(cfg, topo, part)
	if err != nil {
		return nil, nil, err
	}
	g := components.NewGroup(n, look)
	switch {
	case cfg.Sim.Threads > 0:
		g.SetThreads(cfg.Sim.Threads)
	case opts.Threads > 0:
		g.SetThreads(min(n, opts.Threads, g.Threads()))
	}
	if cfg.Sim.AllPortEvents {
		for _, s := range g.Sims() {
			s.AllEvents()
		}
	}
	return g.Sims(), part, nil
}

// newSim returns a serial Sim on the config's engine, with its run-control
// knobs applied.
func newSim(cfg *Config) *components.Sim {
	s := components.NewSimOn(cfg.Sim.Engine)
	if cfg.Sim.AllPortEvents {
		s.AllEvents()
	}
	return s
}

// lookahead returns the shortest latency of a cable between partitions:
// nothing one partition does reaches another sooner.
func lookahead(cfg *Config, topo *Topology, part []int) (ib.PS, error) {
	var look ib.PS = -1
	for _, c := range topo.Cables {
		if part[c.A.Node] == part[c.B.Node] {
			continue
		}
		if l := cableTiming(cfg, c).Latency(); look < 0 || l < look {
			look = l
		}
	}
	if look < 0 {
		// No cable crosses: the partitions never interact.
		return ib.Microsecond, nil
	}
	if look == 0 {
		return 0, &UnsupportedError{Msg: fmt.Sprintf("sim.partitions: %d needs cables with latency between partitions (length or FEC latency above 0) as lookahead", cfg.Sim.Partitions)}
	}
	return look, nil
}

// barrier checks, between the windows of a partitioned run, whether every
// partition's measurement window has ended and every packet has landed.
func (r *synthRun) barrier() {
	if r.drained {
		return
	}
	if !r.stopped {
		for _, p := range r.parts {
			if !p.stopped {
				return
			}
		}
		r.stopped = true
	}
	if r.settled() {
		r.finish()
	}
}

// settled reports whether every packet injected has been delivered and no
// measured packet waits in a source.
func (r *synthRun) settled() bool {
	var in, out uint64
	for _, p := range r.parts {
		in += p.injected
		out += p.delivered
	}
	for _, p := range r.parts {
		out += p.discarded
		in += p.cnpOut
		out += p.cnpIn
	}
	return in == out && r.queuedMeasured() == 0
}

// injectCC is inject with congestion control: a CNP is not data, and
// counts only toward the drain.
func (p *synthPart) injectCC(pkt *ib.Packet) {
	if pkt.Opcode == ib.CNP {
		p.cnpOut++
		return
	}
	p.inject(pkt)
}

// wireEndpoint sets e's callbacks into the part: deliverAR when reordering
// is counted (adaptive routing), injectCC when the endpoint sends CNPs
// (congestion control), and deliverCC in front of the delivery when CNPs
// or the hotspot split must be told apart from data (byCNP).
func (p *synthPart) wireEndpoint(e *workload.Endpoint, ar, cc, byCNP bool) {
	e.OnDeliver = p.deliver
	if ar {
		e.OnDeliver = p.deliverAR
	}
	e.OnInject = p.inject
	if cc {
		e.OnInject = p.injectCC
	}
	if byCNP {
		p.nextDeliver = e.OnDeliver
		e.OnDeliver = p.deliverCC
	}
}

// deliverCC takes a CNP's landing (the endpoint has already raised its
// flow's index) for the drain, and measures the hotspot/victim split of a
// data packet before handing it to the run's delivery.
func (p *synthPart) deliverCC(pkt *ib.Packet, tail ib.PS) {
	r := p.r
	if pkt.Opcode == ib.CNP {
		p.cnpIn++
		p.lastDeliver = tail
		if r.group == nil && r.stopped && !r.drained && r.settled() {
			r.finish()
		}
		return
	}
	if r.split {
		if ser := r.ser(pkt); tail > r.t0 && tail-ser < r.t1 {
			switch {
			case pkt.Dst == hotspotHost:
				p.hotWire.add(int64(pkt.WireBytes()), tail, ser, r.t0, r.t1)
			case pkt.Src != hotspotHost:
				p.victWire.add(int64(pkt.WireBytes()), tail, ser, r.t0, r.t1)
			}
		}
	}
	p.nextDeliver(pkt, tail)
}

// ser returns the wire time of pkt on its destination's cable.
func (r *synthRun) ser(pkt *ib.Packet) ib.PS {
	if r.hostTiming != nil {
		return r.hostTiming[pkt.Dst].Serialization(pkt.WireBytes())
	}
	return r.timing.Serialization(pkt.WireBytes())
}

// hostTimings returns the timing of each of hosts' cables (host nodes of
// topo, in the order given), or nil when every one runs at the link
// section's speed.
func hostTimings(cfg *Config, topo *Topology, hosts []int) []link.Timing {
	mixed := false
	for _, h := range hosts {
		if c, ok := topo.CableAt(PortRef{h, 1}); ok && c.Mixed() {
			mixed = true
		}
	}
	if !mixed {
		return nil
	}
	out := make([]link.Timing, len(hosts))
	for i, h := range hosts {
		c, _ := topo.CableAt(PortRef{h, 1})
		out[i] = cableTiming(cfg, c)
	}
	return out
}

// hostLinkRates returns the host_link_rate_gbps metric (docs/metrics.md):
// {min, max} in Gb/s of the data rates of hosts' own cables, timings as
// hostTimings returns them (not nil).
func hostLinkRates(timings []link.Timing) map[string]any {
	lo, hi := timings[0].DataRateBps(), timings[0].DataRateBps()
	for _, t := range timings {
		lo, hi = min(lo, t.DataRateBps()), max(hi, t.DataRateBps())
	}
	return map[string]any{"min": lo / 1e9, "max": hi / 1e9}
}

// hostGbps returns each of n hosts' link data rate in Gb/s: its own
// cable's (hostTiming), or def's for all when hostTiming is nil.
func hostGbps(hostTiming []link.Timing, n int, def link.Timing) []float64 {
	out := make([]float64, n)
	for i := range out {
		t := def
		if hostTiming != nil {
			t = hostTiming[i]
		}
		out[i] = t.DataRateBps() / 1e9
	}
	return out
}

// hotspotHost is the hotspot pattern's hot host (workload.Hotspot.Hot).
const hotspotHost = 0

func (p *synthPart) inject(pkt *ib.Packet) {
	p.injected++
	if pkt.Measure {
		p.measuredOut++
	}
}

func (p *synthPart) deliver(pkt *ib.Packet, tail ib.PS) {
	r := p.r
	p.delivered++
	p.lastDeliver = tail
	if ser := r.ser(pkt); tail > r.t0 && tail-ser < r.t1 {
		p.windowWireBytes.add(int64(pkt.WireBytes()), tail, ser, r.t0, r.t1)
		p.srcWireBytes[r.hostOf[pkt.SLID]].add(int64(pkt.WireBytes()), tail, ser, r.t0, r.t1)
		p.windowPayload.add(int64(pkt.PayloadLen), tail, ser, r.t0, r.t1)
	}
	if pkt.Measure {
		p.measuredIn++
		p.lat.Add(tail - pkt.InjectAt)
		p.hops += int64(pkt.Hops)
	}
	// Serial: the run ends at the delivery that drains it. Partitioned: at
	// the next barrier (synthRun.barrier).
	if r.group == nil && r.stopped && !r.drained && r.settled() {
		r.finish()
	}
}

// deliverAR is deliver under adaptive routing: it first counts a packet
// that arrives after a later one of its flow (a PSN behind the highest
// delivered, in 24-bit serial order), which an in-order transport would
// take as a sequence error. Static runs deliver through deliver alone.
func (p *synthPart) deliverAR(pkt *ib.Packet, tail ib.PS) {
	r := p.r
	k := int(pkt.Dst)*len(r.eps) + int(pkt.Src)
	if hi := r.psnHi[k]; hi != 0 && psnBefore(pkt.PSN, hi-1) {
		if pkt.Measure {
			p.reordered++
		}
	} else {
		r.psnHi[k] = pkt.PSN + 1
	}
	p.deliver(pkt, tail)
}

// psnBefore reports whether PSN a comes before b in the 24-bit PSN space
// (serial-number order: less than half the space behind).
func psnBefore(a, b uint32) bool {
	d := (b - a) & 0xFFFFFF
	return d != 0 && d < 0x800000
}

// discard counts a packet a link discarded as corrupted: it landed, for the
// drain, and is lost (packets_dropped counts the measured ones).
func (p *synthPart) discard(_ *link.Port, _ *ib.Packet) {
	r := p.r
	p.discarded++
	p.lastDeliver = p.s.Now()
	if r.group == nil && r.stopped && !r.drained && r.settled() {
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
	if r.cc != nil {
		for _, e := range r.eps {
			q += e.CCQueued()
		}
	}
	return q
}

// HandleEvent implements components.EventHandler for the phase controller.
func (p *synthPart) HandleEvent(ev *components.Event) {
	r := p.r
	switch ev.Kind {
	case evSynthMeasureStart:
		// Switch statistics cover the measurement window only.
		p.statsStart()
	case evSynthStatsEnd:
		p.statsEnd()
	case evSynthMeasureEnd:
		p.statsEnd()
		p.stopped = true
		for _, e := range p.eps {
			e.StopInjecting()
		}
		if r.group == nil {
			r.stopped = true
			if r.settled() {
				r.finish()
				return
			}
		}
		p.s.Schedule(p.s.Now()+r.drainCap, p, evSynthDrainCap)
	case evSynthDrainCap:
		// The drain's limit. A run that drained before it is settling for
		// the checkers (finish), and the settle decides when it ends:
		// stopping it here skipped the idle-fabric checks of any run
		// whose settle reached past the cap (a drain that ended within a
		// settle window of it, or a lossy settle of several windows).
		if !p.r.drained {
			p.s.Stop()
		}
	}
}

func (r *synthRun) metrics(cfg *Config, rateBps float64) map[string]any {
	window := float64(r.t1 - r.t0)
	// accepted_load is per sending host, as offered_load is: incast's sink
	// sends nothing, and counting it read every incast point below its
	// offered load (saturated, to a knee search) by (n−1)/n.
	n := 0.0
	for _, e := range r.eps {
		if !e.Traffic.Idle() {
			n++
		}
	}
	n = max(n, 1)
	endAt, endEvents := r.s.Now(), r.s.Events()
	if r.group != nil {
		endAt, endEvents = r.group.Now(), r.group.Events()
		if r.view.ended {
			endAt, endEvents = r.view.endAt, r.view.endEvents
		}
	} else if r.view != nil {
		endAt, endEvents = r.view.end()
	}
	if r.view != nil {
		// A run that never reached the window's end (the time limit):
		// its switch statistics end with it, not after the settling a
		// checker asks for, nor a lookahead past it (a partitioned run),
		// nor behind the latest partition.
		for _, sw := range r.net.Switches {
			sw.EndStatsAt(endAt)
		}
	}
	// The partitions' counters, summed in partition order (one part when
	// serial, so its sums are the serial run's own).
	var injected, delivered, measuredOut, measuredIn, reordered uint64
	var wire, payload windowSum
	var hops int64
	var lat workload.Latencies
	for _, p := range r.parts {
		injected += p.injected
		delivered += p.delivered
		measuredOut += p.measuredOut
		measuredIn += p.measuredIn
		reordered += p.reordered
		wire.merge(&p.windowWireBytes)
		payload.merge(&p.windowPayload)
		hops += p.hops
		lat.Merge(&p.lat)
	}
	windowWireBytes, windowPayload := wire.value(), payload.value()
	var created, skipped, wrong uint64
	var stall ib.PS
	for _, e := range r.eps {
		created += e.Created
		skipped += e.Skipped
		wrong += e.WrongDest
	}
	for _, p := range r.parts {
		if p.statsEnded {
			stall += p.stall1 - p.stall0
			continue
		}
		// The window did not end (the time limit, or a perftest that
		// ended before its background's window): up to the end.
		for _, e := range p.eps {
			stall += e.CreditStallAt(endAt)
		}
		stall -= p.stall0
	}
	m := map[string]any{
		"offered_load":        cfg.Workload.OfferedLoad,
		"latency_ns":          lat.SummaryNs(),
		"packets_created":     created,
		"packets_skipped":     skipped,
		"packets_sent":        injected,
		"packets_delivered":   delivered,
		"packets_misrouted":   wrong,
		"drain_complete":      r.drained,
		"credit_stall_ns":     stall.Nanoseconds(),
		"hosts":               len(r.eps),
		"switches":            len(r.net.Switches),
		"sim_time_ns":         endAt.Nanoseconds(),
		"events":              endEvents,
		"link_data_rate_gbps": rateBps / 1e9,
	}
	if r.hostTiming != nil {
		m["host_link_rate_gbps"] = hostLinkRates(r.hostTiming)
	}
	if r.psnHi != nil {
		m["packets_reordered"] = reordered
	}
	if cfg.Topology.ARFlowletGapNs > 0 {
		// Packets whose flowlet entry another flow's live flowlet held
		// (routed on their own), over the whole run.
		var collisions uint64
		for _, sw := range r.net.Switches {
			collisions += sw.FlowletStats().Collisions
		}
		m["ar_flowlet_collisions"] = collisions
	}
	if window > 0 {
		// A rate over the window; a perftest's background whose test
		// ended inside its warm-up has none (0/0, or -0 for a window
		// ending before it starts, which a knee search read as
		// saturated).
		if r.hostTiming == nil {
			m["accepted_load"] = windowWireBytes * 8 / (rateBps * window * 1e-12) / n
		} else {
			// Host links of several speeds: each sender's fraction of
			// its own link (as offered_load is), averaged; with one
			// speed this is the line above.
			m["accepted_load"] = r.meanHostLoad(window)
		}
		r.hostLoads(m, rateBps, window, m["accepted_load"].(float64))
		m["goodput_gbps"] = windowPayload * 8 / window * 1000
	}
	if r.drained {
		// Every measured packet landed; anything injected and not
		// delivered now was lost in the fabric.
		m["packets_dropped"] = measuredOut - measuredIn
	} else {
		m["packets_dropped"] = 0
		m["packets_in_flight_at_end"] = injected - delivered
	}
	if measuredIn > 0 {
		m["hops_mean"] = float64(hops) / float64(measuredIn)
	}
	var blockHops int64
	for _, p := range r.net.Ports {
		blockHops += int64(p.Stats().DataBlocks)
	}
	m["block_hops"] = blockHops
	r.switchMetrics(m)
	if r.cc != nil {
		r.ccMetrics(m, endAt)
	}
	if r.split && window > 0 {
		r.splitMetrics(m, cfg, rateBps, window)
	}
	if r.view != nil {
		r.view.addLinkErrors(m)
	}
	return m
}

// indexHosts maps the endpoints' LIDs to their indexes and gives every
// partition a window sum per source, once the endpoints are built.
func (r *synthRun) indexHosts() {
	maxLID := uint16(0)
	for _, e := range r.eps {
		maxLID = max(maxLID, e.LID)
	}
	r.hostOf = make([]int32, int(maxLID)+1)
	for i, e := range r.eps {
		r.hostOf[e.LID] = int32(i)
	}
	for _, p := range r.parts {
		p.srcWireBytes = make([]windowSum, len(r.eps))
	}
}

// hostLoads adds how the accepted load splits over the sending hosts: each
// one's wire bytes delivered in the window (to any destination) over its
// link's capacity in the window, as {min, mean, max} (the mean is
// accepted, the same quantity as accepted_load, given as that one value
// rather than a second rounding of it), and Jain's fairness index over
// them, (Σx)² / (n Σx²): 1 when every sender gets the same, 1/n when one
// gets everything.
func (r *synthRun) hostLoads(m map[string]any, rateBps, window, accepted float64) {
	loads := r.senderLoads(rateBps, window)
	if len(loads) == 0 {
		return
	}
	lo, hi, sum, sq := loads[0], loads[0], 0.0, 0.0
	for _, x := range loads {
		lo, hi, sum, sq = min(lo, x), max(hi, x), sum+x, sq+x*x
	}
	m["host_accepted_load"] = map[string]any{"min": lo, "mean": accepted, "max": hi}
	if sq > 0 {
		m["fairness_jain"] = sum * sum / (float64(len(loads)) * sq)
	}
}

// senderLoads returns, per sending host in host order, the wire bytes it
// delivered in the window (to any destination) over its own link's
// capacity in the window (rateBps when host links are alike).
func (r *synthRun) senderLoads(rateBps, window float64) []float64 {
	var loads []float64
	for i, e := range r.eps {
		if e.Traffic.Idle() {
			continue
		}
		var w windowSum
		for _, p := range r.parts {
			w.merge(&p.srcWireBytes[i])
		}
		rate := rateBps
		if r.hostTiming != nil {
			rate = r.hostTiming[i].DataRateBps()
		}
		loads = append(loads, w.value()*8/(rate*window*1e-12))
	}
	return loads
}

// meanHostLoad returns the mean over the sending hosts of the wire bytes
// each delivered in the window over its own link's capacity in it (host
// links of several speeds).
func (r *synthRun) meanHostLoad(window float64) float64 {
	loads := r.senderLoads(0, window)
	sum := 0.0
	for _, x := range loads {
		sum += x
	}
	return sum / float64(max(len(loads), 1))
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
				// Only port-VLs that held packets: a VL is also listed
				// for an output-side credit stall or arbitration loss
				// alone, with an empty input buffer, and its zero would
				// dilute the mean.
				if sm[strings.TrimSuffix(k, "mean_blocks")+"peak_blocks"] > 0 {
					meanSum += v
					meanN++
				}
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

// victimMetrics adds cc_victim_unmarked, the packets the switches did not
// consider for marking because their output VL was only a victim of
// congestion at a port whose Victim_Mask bit is clear, summed in switch
// order; only when some switch checks (cc.victim_mask other than all), so
// the metrics of runs with the default are what they were before the key.
func victimMetrics(m map[string]any, switches []*switchasic.Switch) {
	var unmarked uint64
	checked := false
	for _, sw := range switches {
		n, ok := sw.VictimUnmarked()
		unmarked += n
		checked = checked || ok
	}
	if checked {
		m["cc_victim_unmarked"] = unmarked
	}
}

// ccMetrics adds congestion control's counters (docs/metrics.md,
// "Congestion control"), summed over switches and endpoints in index order.
func (r *synthRun) ccMetrics(m map[string]any, endAt ib.PS) {
	var marked, fecn, sent, skipped, becns uint64
	for _, sw := range r.net.Switches {
		marked += sw.FECNMarked()
	}
	victimMetrics(m, r.net.Switches)
	var throttled int
	var indexSum float64
	maxIndex := r.cc.Min
	for _, e := range r.eps {
		f, s, k, b, st, _ := e.CC(endAt)
		fecn, sent, skipped, becns = fecn+f, sent+s, skipped+k, becns+b
		throttled += st.Throttled
		indexSum += st.IndexSum
		maxIndex = max(maxIndex, st.Max)
	}
	m["cc_fecn_marked"] = marked
	m["cc_fecn_received"] = fecn
	m["cc_becn_sent"] = sent
	m["cc_becn_received"] = becns
	m["cc_cnp_skipped"] = skipped
	m["cc_flows_throttled"] = throttled
	m["cc_ccti_max"] = maxIndex
	if throttled > 0 {
		m["cc_ccti_mean"] = indexSum / float64(throttled)
	}
	if r.split && len(r.eps) > 1 {
		// The hotspot flows alone: every other host's flow to host 0.
		sum := 0.0
		for i, e := range r.eps {
			if i != hotspotHost {
				sum += e.CCFlowMean(hotspotHost, endAt)
			}
		}
		m["cc_ccti_mean_hotspot"] = sum / float64(len(r.eps)-1)
	}
}

// splitMetrics adds the hotspot/victim split of a hotspot run's accepted
// load: what the hotspot's link received, and what the other hosts sent
// each other (the victim traffic, which never goes to the hotspot) per
// sending host, beside what they offered of it.
func (r *synthRun) splitMetrics(m map[string]any, cfg *Config, rateBps, window float64) {
	var hot, vict windowSum
	for _, p := range r.parts {
		hot.merge(&p.hotWire)
		vict.merge(&p.victWire)
	}
	capBytes := rateBps * window * 1e-12 / 8
	senders := len(r.eps) - 1
	if r.hostTiming == nil {
		m["hotspot_accepted_load"] = hot.value() / capBytes
		if senders > 0 {
			m["victim_accepted_load"] = vict.value() / capBytes / float64(senders)
		}
	} else {
		// Host links of several speeds: the hotspot's over its own link,
		// the victims' over their links summed.
		var victCap float64
		for i, t := range r.hostTiming {
			if i != hotspotHost {
				victCap += t.DataRateBps() * window * 1e-12 / 8
			}
		}
		m["hotspot_accepted_load"] = hot.value() / (r.hostTiming[hotspotHost].DataRateBps() * window * 1e-12 / 8)
		if senders > 0 {
			m["victim_accepted_load"] = vict.value() / victCap
		}
	}
	if senders > 0 {
		victShare := 1 - cfg.Workload.HotspotFraction
		if len(r.eps) == 2 {
			victShare = 0 // two hosts: every packet goes to the hotspot
		}
		m["victim_offered_load"] = cfg.Workload.OfferedLoad * victShare
	}
}
