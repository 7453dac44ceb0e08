package fabric

import (
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/workload"
)

// RunOptions are per-run settings that are not part of the design point.
type RunOptions struct {
	// Observe, if set, is called with the simulation after it is built and
	// before it runs: tracers and checkers attach here.
	Observe func(s *Simulation)
	// Started, if set, is called with the simulation after it is built
	// and observed, just before it runs. Unlike Observe it attaches
	// nothing, so a partitioned run stays unobserved: for a progress
	// display, which may only call Simulation.Progress, from any goroutine.
	Started func(s *Simulation)
	// Threads bounds the threads of a partitioned run whose sim.threads
	// is 0 (0: one per partition up to GOMAXPROCS); a sweep running
	// points side by side gives each its share. Results do not depend on it.
	Threads int
}

// Simulation is a built model: the engine and the named parts an observer
// may attach to.
type Simulation struct {
	Sim   *components.Sim
	Ports []*link.Port // every port, in build order
	// Blocks is every block that announces trace events: ports, switches,
	// hosts. Tracers and checkers attach to all of them.
	Blocks []sim.Hookable
	// Net is the switched fabric the run built (nil back to back): the
	// checkers' route check reads its routes (Network.RouteAllowed).
	Net *Network
	// Settled is set when the workload finished and the fabric went idle:
	// every packet delivered and every credit returned, so the checkers may
	// run their end-of-run invariants.
	Settled bool

	// endAt and endEvents mark where the workload finished; a run that then
	// settles for the checkers reports these, so --check changes no result.
	endAt     ib.PS
	endEvents uint64
	ended     bool
	// endDiscards is the data packets links had discarded when the
	// workload finished (link_packet_errors).
	endDiscards uint64

	group *components.Group // a partitioned run's partitions (Sim is partition 0's), else nil
}

// Now returns the simulated time reached: the latest of every partition's
// in a partitioned run.
func (v *Simulation) Now() ib.PS {
	if v.group != nil {
		return v.group.Now()
	}
	return v.Sim.Now()
}

// Progress returns the simulated time the run had reached a moment ago:
// the one method safe to call from another goroutine while it runs (a
// progress display), and reading it changes no result.
func (v *Simulation) Progress() ib.PS {
	if v.group != nil {
		return v.group.Progress()
	}
	return v.Sim.Progress()
}

// Stop ends the run (every partition of a partitioned one): a checker that
// found a violation calls it.
func (v *Simulation) Stop() {
	if v.group != nil {
		v.group.Stop()
		return
	}
	v.Sim.Stop()
}

// end returns when the workload finished and how many events that took:
// the time and count finish recorded, or the engine's own at the end.
// End returns when the workload finished: the time sim_time_ns reports.
// In a partitioned run Now may be later (a partition's window end).
func (v *Simulation) End() ib.PS {
	t, _ := v.end()
	return t
}

func (v *Simulation) end() (ib.PS, uint64) {
	if v.ended {
		return v.endAt, v.endEvents
	}
	return v.Sim.Now(), v.Sim.Events()
}

// finish ends a run whose workload is done: at once, or, when checkers want
// to see every credit back, after the fabric settles. The run reports the
// end markEnd recorded, if it was called before (a perftest whose
// background traffic drained after the test), else now.
func (v *Simulation) finish(check bool) {
	v.markEnd()
	if !check {
		v.Sim.Stop()
		return
	}
	v.settle()
}

// markEnd records that the workload finished now, unless an earlier end
// was recorded: the time and event count the run reports.
func (v *Simulation) markEnd() {
	if !v.ended {
		v.endAt, v.endEvents, v.ended = v.Sim.Now(), v.Sim.Events(), true
		v.endDiscards = discards(v.Ports)
	}
}

// discards returns the data packets the ports have discarded as corrupted.
func discards(ports []*link.Port) uint64 {
	var n uint64
	for _, p := range ports {
		n += p.Errors.Packets
	}
	return n
}

// addLinkErrors adds the link-error totals of a run on lossy links
// (link.ber or link.pre_fec_ber > 0; a lossless run's results keep their
// keys): data packets discarded up to where the workload finished, and
// flow-control packets lost before then; with link.pre_fec_ber also the
// uncorrectable codewords that began before then and carried packet bits. Call it at the end, or after the run: a run that
// settles for the checkers reports the same numbers.
func (v *Simulation) addLinkErrors(m map[string]any) {
	if !anyLossy(v.Ports) {
		return
	}
	end := v.End()
	data := discards(v.Ports)
	if v.ended {
		data = v.endDiscards
	}
	var fc uint64
	for _, p := range v.Ports {
		fc += p.FCErrorsBefore(end)
	}
	m["link_packet_errors"] = data
	m["link_fc_errors"] = fc
	if anyCodewordErrors(v.Ports) {
		var cw uint64
		for _, p := range v.Ports {
			cw += p.FailedCodewordsBefore(end)
		}
		m["link_fec_uncorrectable"] = cw
	}
}

// anyCodewordErrors reports whether some port's wire draws failed FEC
// codewords (link.pre_fec_ber).
func anyCodewordErrors(ports []*link.Port) bool {
	for _, p := range ports {
		if p.CodewordErrors() {
			return true
		}
	}
	return false
}

// explainTimeLimit adds to a run on lossy links that stopped at
// sim.max_time_ns what the links lost and how the transport recovers from
// a loss, the likeliest reason it did not finish: "did not finish (0 of
// 2000 messages completed)" alone reads as a model that hung. A UD
// datagram lost is never resent, so a test that waits for it (send_lat's
// ping-pong) cannot end; RC resends a loss no sequence NAK reveals only
// when its retry timer fires, and a discard's credits come back only with
// the sender's next flow-control packet. Other errors, and runs on links
// that lost nothing, are returned as they are.
func (v *Simulation) explainTimeLimit(cfg *Config, err error) error {
	var tl *workload.TimeLimitError
	if !errors.As(err, &tl) {
		return err
	}
	data := discards(v.Ports)
	fc := linkErrors(v.Ports) - data
	if data+fc == 0 {
		return err
	}
	how := fmt.Sprintf("RC resends a packet no sequence NAK reports lost only when its retry timer fires (hca.retry_timeout %d: %v), and the credits a discard took come back with the sender's next flow-control packet (within link.fc_refresh_ns, %g ns)",
		cfg.HCA.RetryTimeout, time.Duration(hca.RetryTimeoutPS(cfg.HCA.RetryTimeout)/ib.Nanosecond), cfg.Link.FCRefreshNs)
	if cfg.Workload.Kind == "perftest" && cfg.Workload.Connection == "UD" {
		how = "UD never resends a lost datagram, so a test that waits for one cannot finish"
	}
	rate := fmt.Sprintf("link.ber %g", cfg.Link.BER)
	if cfg.Link.PreFECBER > 0 {
		rate = fmt.Sprintf("link.pre_fec_ber %g", cfg.Link.PreFECBER)
	} else if cfg.Link.BER == 0 {
		rate = "the topology file's cable ber=" // only some cables are lossy
	}
	tl.Msg += fmt.Sprintf("; the links discarded %d data and %d flow-control packets (%s): %s", data, fc, rate, how)
	return err
}

// linkErrors returns every error the ports have counted so far.
func linkErrors(ports []*link.Port) uint64 {
	var n uint64
	for _, p := range ports {
		n += p.Errors.Packets + p.Errors.FCPackets
	}
	return n
}

// settle lets the run go on until the fabric is idle (Settled), then ends
// it: settleTime at a time, until a whole such window passes with no data
// packet sent. A workload can end with data still moving — an HCA's
// retransmission that proved needless, its duplicate ACKs or READ
// responses, on a link whose round trip is longer than the retry timer —
// and the credits those packets hold come back only after them. A fabric
// still sending data after maxSettleWindows windows is not idle, and the
// run ends unsettled (the checkers' idle-fabric checks do not apply).
//
// On lossy links (link.ber > 0) a quiet window must also pass without a
// link error, and is one refresh period longer (lossyWindow). A window in
// which a host had posted writes booked is not quiet either
// (hostsBusyAfter).
func (v *Simulation) settle() {
	window := lossyWindow(v.Ports, settleTime(v.Ports))
	sent, errs := v.dataPackets(), linkErrors(v.Ports)
	start := v.Now()
	windows := 1
	var again func()
	again = func() {
		n, e := v.dataPackets(), linkErrors(v.Ports)
		if n == sent && e == errs && !v.hostsBusyAfter(start) {
			v.Settled = true // a quiet window: idle
			return
		}
		if windows == maxSettleWindows {
			return // still busy: ends unsettled
		}
		sent, errs, windows, start = n, e, windows+1, v.Now()
		v.Sim.StopAt(v.Sim.Now() + window)
		v.Sim.AtLimit(again)
	}
	v.Sim.StopAt(v.Sim.Now() + window)
	v.Sim.AtLimit(again)
}

// busyHost is a host with work booked that holds receive buffer space: an
// HCA whose PCIe link still has posted writes to carry (a received
// packet's credits go back only when its payload fits in the posted-write
// queue). A slow link, or translation reads that posted writes serialise,
// can stretch that past a settle window, and the credits then come back
// after it.
type busyHost interface{ PostedWritesUntil() ib.PS }

// hostsBusyAfter reports whether some host had such work booked past t:
// a window starting at t in which a host was busy is not quiet, since the
// credits it returned late can still be on a cable when the window ends.
// (A link's reservations only grow, so asking at the window's end sees
// every booking made in it.)
func (v *Simulation) hostsBusyAfter(t ib.PS) bool {
	for _, b := range v.Blocks {
		if h, ok := b.(busyHost); ok && h.PostedWritesUntil() > t {
			return true
		}
	}
	return false
}

// maxSettleWindows bounds how long a finished run keeps going for the
// checkers while data packets still move.
const maxSettleWindows = 1000

// dataPackets returns the data packets every port has sent so far.
func (v *Simulation) dataPackets() uint64 {
	var n uint64
	for _, p := range v.Ports {
		n += p.Stats().DataPackets
	}
	return n
}

// settleTime is how long a finished run keeps going when checkers are on, so
// that the last flow-control packets land and credit counts return to full:
// one refresh period plus a round trip over the longest cable.
func settleTime(ports []*link.Port) ib.PS {
	var lat ib.PS
	for _, p := range ports {
		if p.Peer() == nil {
			continue // a switch port with no cable
		}
		lat = max(lat, p.Timing().Latency()+p.Timing().Serialization(ib.FlowControlBytes))
	}
	refresh := ib.PS(0)
	for _, p := range ports {
		refresh = max(refresh, p.FCRefresh())
	}
	return refresh + 2*lat + ib.Microsecond
}

// setBitErrors gives each cable's two wires their errors: the topology
// file's ber=… for that cable (the independent post-FEC bit model, 0 for
// none), else link.pre_fec_ber (failed codewords of the cable's own RS FEC;
// checkCablePreFEC made sure it has one), else link.ber. Each port draws
// from its own stream (link.Port.SetBitErrorRate, SetPreFECErrorRate),
// seeded from the run's seed and the port's name.
func setBitErrors(cfg *Config, topo *Topology, ports [][]*link.Port) {
	for _, c := range topo.Cables {
		a, b := ports[c.A.Node][c.A.Port], ports[c.B.Node][c.B.Port]
		if !c.HasBER && cfg.Link.PreFECBER > 0 {
			lc := cableLink(cfg.Link, c)
			m := link.CodewordModelFor(lc.FECMode(), cfg.Link.PreFECBER)
			a.SetPreFECErrorRate(m, cfg.Seed)
			b.SetPreFECErrorRate(m, cfg.Seed)
			continue
		}
		ber := cfg.Link.BER
		if c.HasBER {
			ber = c.BER
		}
		if ber == 0 {
			continue
		}
		a.SetBitErrorRate(ber, cfg.Seed)
		b.SetBitErrorRate(ber, cfg.Seed)
	}
}

// anyLossy reports whether some port's wire may corrupt packets.
func anyLossy(ports []*link.Port) bool {
	for _, p := range ports {
		if p.Lossy() {
			return true
		}
	}
	return false
}

// lossyWindow returns the settle window of a fabric whose links may lose
// packets: window (settleTime: refresh R + 2 × (L + S), L the longest
// cable's latency, S a flow-control packet's wire time, + 1 µs) plus one
// more R. Credits a discard took (before the window: no link error falls
// in a quiet one) come back when the sender's next FC packet lands (its
// refresh within R; nothing else is on a quiet wire but other VLs' FC
// packets, 15 × S at most) and the receiver's answer lands, sent within
// fc_min_interval ≤ R of its previous FC packet (or by its own refresh,
// R apart): by 2R + 2(L + S) + 30 S, inside the window while 30 S < 1 µs
// (S ≤ 24 ns, 6 bytes at SDR 1x: 720 ns). An FC packet lost before the
// window is made good by the next refresh. A lossless fabric keeps window.
func lossyWindow(ports []*link.Port, window ib.PS) ib.PS {
	var refresh ib.PS
	for _, p := range ports {
		if p.Lossy() {
			refresh = max(refresh, p.FCRefresh())
		}
	}
	return window + refresh
}

// Run builds the design point's simulation, runs it and returns its metrics.
func Run(l *Loaded, opts RunOptions) (map[string]any, error) {
	cfg := &l.Config
	wall := time.Now()
	var (
		m   map[string]any
		err error
	)
	switch cfg.Workload.Kind {
	case "stream":
		m, err = runStream(cfg, opts)
	case "uniform", "permutation", "shift", "bitcomp", "hotspot", "incast":
		m, err = runSynthetic(cfg, opts)
	case "perftest":
		m, err = runPerftest(cfg, opts)
	case "allreduce", "alltoall", "allgather", "reducescatter", "broadcast", "reduce":
		m, err = runCollective(cfg, opts)
	case "replay":
		m, err = runReplay(l, opts)
	case workload.KindMulticast:
		m, err = runMulticast(cfg, opts)
	default:
		return nil, &UnsupportedError{Msg: fmt.Sprintf("workload.kind: %q is not runnable on topology.kind %q in this build", cfg.Workload.Kind, cfg.Topology.Kind)}
	}
	if err != nil {
		return nil, err
	}
	m["wall_s"] = time.Since(wall).Seconds()
	return m, nil
}

// windowOverlap returns the share of a packet's reception, the ser
// picoseconds before its tail, that falls inside the window [t0, t1], as the
// fraction in/of: a packet straddling an edge counts in proportion, so a
// window's throughput never gains or loses a whole packet to where its edges
// fall (an instantaneous packet, ser ≤ 0, is 1/1 inside and 0/1 outside).
func windowOverlap(tail, ser, t0, t1 ib.PS) (in, of ib.PS) {
	if ser <= 0 {
		if tail >= t0 && tail <= t1 {
			return 1, 1
		}
		return 0, 1
	}
	lo, hi := max(tail-ser, t0), min(tail, t1)
	if hi <= lo {
		return 0, ser
	}
	return hi - lo, ser
}

// windowSum adds packets' pro-rata shares of a window (windowOverlap) exactly:
// whole packets as an integer, packets straddling an edge as exact
// fractions. The total is then the same whatever the order of the additions,
// so the partitions of a parallel run can each sum their own deliveries and
// merge the sums, and the result is rounded to a float once.
type windowSum struct {
	whole int64
	part  big.Rat
}

// add counts bytes of a packet whose reception is the ser picoseconds
// before tail, by the share of them inside [t0, t1].
func (w *windowSum) add(bytes int64, tail, ser, t0, t1 ib.PS) {
	switch in, of := windowOverlap(tail, ser, t0, t1); {
	case in == 0:
	case in == of:
		w.whole += bytes
	default:
		f := new(big.Rat).SetFrac(big.NewInt(bytes*int64(in)), big.NewInt(int64(of)))
		w.part.Add(&w.part, f)
	}
}

// merge adds o's sum.
func (w *windowSum) merge(o *windowSum) {
	w.whole += o.whole
	w.part.Add(&w.part, &o.part)
}

// value returns the sum, rounded to the nearest float64.
func (w *windowSum) value() float64 {
	t := new(big.Rat).SetInt64(w.whole)
	f, _ := t.Add(t, &w.part).Float64()
	return f
}

// UnsupportedError is a valid config this build cannot run (a user-facing
// error: exit 2).
type UnsupportedError struct{ Msg string }

func (e *UnsupportedError) Error() string { return e.Msg }

// PortConfig returns the link-port sizing of a host port under cfg.
func PortConfig(cfg *Config, bufferBytes int) link.PortConfig {
	return link.PortConfig{
		VLs:           cfg.Switch.VLs,
		BufferBlocks:  bufferBytes / ib.CreditBytes,
		FCRefresh:     cfg.Link.FCRefresh(),
		FCMinInterval: cfg.Link.FCMinInterval(),
	}
}

const (
	evMeasureStart uint8 = iota + 1
	evMeasureEnd
	evDrainLimit
)

// streamRun is the back-to-back stream: host 0 sends, host 1 receives.
type streamRun struct {
	s      *components.Sim
	src    *workload.StreamSource
	sink   *workload.StreamSink
	tx, rx *link.Port

	saturate  bool
	measuring bool
	t0, t1    ib.PS // measurement window
	busy0     ib.PS // tx wire busy time at t0
	busy1     ib.PS
	fc0, fc1  uint64
	stall0    ib.PS // the source's credit stall at t0
	stall1    ib.PS

	delivered   int
	discarded   int       // packets the link discarded as corrupted
	windowBytes windowSum // payload bytes received in the window (pro rata, see windowOverlap)
	timing      link.Timing
	lat         workload.Latencies
	drained     bool
	drainCap    ib.PS // longest drain phase after the window
	view        *Simulation
	check       bool
	fcAtEnd     uint64 // flow-control packets when the workload finished
}

// finish ends a drained run. A run of N packets measures up to its last
// delivery, not the settling the checkers may add.
func (r *streamRun) finish() {
	r.drained = true
	r.fcAtEnd = r.tx.Stats().FCPackets + r.rx.Stats().FCPackets
	if !r.saturate {
		r.t1 = r.s.Now()
		r.busy1 = r.tx.BusyThrough()
		r.fc1 = r.tx.Stats().FCPackets
	}
	r.view.finish(r.check)
}

func runStream(cfg *Config, opts RunOptions) (map[string]any, error) {
	s := newSim(cfg)
	w := cfg.Workload
	r := &streamRun{s: s, saturate: w.Saturate, drainCap: ib.FromNanoseconds(w.DrainNs)}
	r.src = workload.NewStreamSource(s, "Fabric.Host[0]", w, 1, 2)
	r.sink = workload.NewStreamSink(s, "Fabric.Host[1]", w.DrainGbps)
	pc := PortConfig(cfg, cfg.HCA.VLBufferBytes)
	r.tx = link.NewPort(s, r.src, "Fabric.Host[0].Port[1]", 1, pc)
	r.rx = link.NewPort(s, r.sink, "Fabric.Host[1].Port[1]", 1, pc)
	r.timing = cfg.Link.Timing(cfg.Link.LengthM)
	r.src.Attach(r.tx)
	r.sink.Attach(r.rx)
	timing := cfg.Link.Timing(cfg.Link.LengthM)
	link.Connect(r.tx, r.rx, timing)
	cfg.Link.SetErrors(r.tx, cfg.Seed) // one cable, no topology file
	cfg.Link.SetErrors(r.rx, cfg.Seed)
	r.sink.OnDeliver = r.deliver
	r.rx.OnDiscard = r.discard
	s.StopAt(ib.FromNanoseconds(cfg.Sim.MaxTimeNs))

	r.view = &Simulation{Sim: s, Ports: []*link.Port{r.tx, r.rx}, Blocks: []sim.Hookable{r.tx, r.rx, r.src, r.sink}}
	r.check = cfg.Sim.Check
	if opts.Observe != nil {
		opts.Observe(r.view)
	}
	if opts.Started != nil {
		opts.Started(r.view)
	}
	if r.saturate {
		warm := ib.FromNanoseconds(w.WarmupNs)
		r.t0, r.t1 = warm, warm+ib.FromNanoseconds(w.MeasureNs)
		s.Schedule(r.t0, r, evMeasureStart)
		s.Schedule(r.t1, r, evMeasureEnd)
	} else {
		r.measuring = true
	}
	r.src.Start()
	if err := s.Run(); err != nil {
		return nil, err
	}
	if !r.saturate && !r.drained {
		// Stopped by the time limit: the window ends now.
		r.t1 = s.Now()
		r.busy1 = r.tx.BusyThrough()
		r.fc1 = r.tx.Stats().FCPackets
	}
	// A stream of a packet count is measured over the whole run; a
	// saturating one over its window (stopped early by the time limit, up
	// to then).
	stall := r.src.CreditStallAt(s.Now())
	if r.saturate {
		if s.Now() < r.t1 {
			r.stall1 = stall
		}
		stall = r.stall1 - r.stall0
	}
	window := r.t1 - r.t0
	sent := r.src.Sent()
	endAt, endEvents := r.view.end()
	fcPackets := r.tx.Stats().FCPackets + r.rx.Stats().FCPackets
	if r.drained {
		fcPackets = r.fcAtEnd
	}
	m := map[string]any{
		"packets_sent":         sent,
		"packets_delivered":    r.delivered,
		"packets_dropped":      sent - r.delivered,
		"drain_complete":       r.drained || (!r.saturate && r.delivered+r.discarded == sent),
		"credit_stall_ns":      stall.Nanoseconds(),
		"rx_buffer_peak_bytes": peakBytes(r.rx),
		"sim_time_ns":          endAt.Nanoseconds(),
		"events":               endEvents,
		"link_data_rate_gbps":  timing.DataRateBps() / 1e9,
		"fc_packets":           fcPackets,
		"latency_ns":           r.lat.SummaryNs(),
		"block_hops":           r.tx.Stats().DataBlocks,
	}
	if window > 0 {
		m["goodput_gbps"] = r.windowBytes.value() * 8 / float64(window) * 1000
		m["wire_utilization"] = float64(r.busy1-r.busy0) / float64(window)
	} else {
		m["goodput_gbps"] = 0.0
		m["wire_utilization"] = 0.0
	}
	r.view.addLinkErrors(m)
	return m, nil
}

func peakBytes(p *link.Port) int {
	peak := 0
	for vl := range link.MaxVLs {
		peak = max(peak, p.RxPeakBlocks(vl))
	}
	return peak * ib.CreditBytes
}

func (r *streamRun) deliver(pkt *ib.Packet, tail ib.PS) {
	r.delivered++
	if !r.saturate {
		r.windowBytes.whole += int64(pkt.PayloadLen)
		r.lat.Add(tail - pkt.InjectAt)
	} else {
		r.windowBytes.add(int64(pkt.PayloadLen), tail, r.timing.Serialization(pkt.WireBytes()), r.t0, r.t1)
		if tail >= r.t0 && tail <= r.t1 {
			r.lat.Add(tail - pkt.InjectAt)
		}
	}
	r.landed()
}

// discard counts a packet the link lost: it landed, as far as the drain is
// concerned.
func (r *streamRun) discard(_ *link.Port, _ *ib.Packet) {
	r.discarded++
	r.landed()
}

// landed finishes a run of N packets when the last one has landed.
func (r *streamRun) landed() {
	if r.src.Done() && r.delivered+r.discarded == r.src.Sent() && !r.drained {
		r.finish()
	}
}

// HandleEvent implements components.EventHandler for the phase controller.
func (r *streamRun) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case evMeasureStart:
		r.measuring = true
		r.busy0 = r.tx.BusyThrough()
		r.fc0 = r.tx.Stats().FCPackets
		r.stall0 = r.src.CreditStallAt(r.s.Now())
	case evMeasureEnd:
		r.measuring = false
		r.busy1 = r.tx.BusyThrough()
		r.fc1 = r.tx.Stats().FCPackets
		r.stall1 = r.src.CreditStallAt(r.s.Now())
		r.src.StopInjecting()
		if r.delivered+r.discarded == r.src.Sent() {
			r.finish()
			return
		}
		r.s.Schedule(r.s.Now()+r.drainCap, r, evDrainLimit)
	case evDrainLimit:
		// A stream that drained before its limit is settling for the
		// checkers, as a synthetic run's drain cap says.
		if !r.drained {
			r.s.Stop()
		}
	}
}
