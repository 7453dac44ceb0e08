package workload

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// PerftestTests lists the perftest-style tests RunPerftest runs.
var PerftestTests = []string{"write_lat", "write_bw", "read_lat", "read_bw", "send_lat", "send_bw", "atomic_lat", "atomic_bw"}

// Perftest defaults (linux-rdma/perftest src/perftest_parameters.h).
const (
	perftestCQMod       = 100        // DEF_CQ_MOD
	perftestRxDepth     = 512        // DEF_RX_SEND
	perftestInlineWrite = 220        // DEF_INLINE_WRITE (latency tests)
	perftestInlineSend  = 236        // DEF_INLINE_SEND_RC_UC (latency tests)
	perftestInlineUD    = 188        // DEF_INLINE_SEND_UD (latency tests)
	perftestQKey        = 0x11111111 // DEF_QKEY
)

// MaxPerftestRxDepth is the largest workload.rx_depth (a model limit: the
// receives are posted ahead, each QP's receive queue a power of two at or
// above it).
const MaxPerftestRxDepth = 8192

// PerftestRun is one perftest-style run between two hosts back to back.
type PerftestRun struct {
	Link link.Config // the cable between the hosts (generation, width, length, MTU)
	HCA  hca.Config  // both hosts' HCA and host profile

	Test       string // write_lat, write_bw, read_lat, read_bw, send_lat, send_bw, atomic_lat
	Size       int    // message payload bytes (perftest -s); atomics always move 8
	Iterations int    // messages per QP (perftest -n)
	TxDepth    int    // outstanding WRs per QP in bandwidth tests (perftest -t)
	QPs        int    // queue pairs (perftest -q)
	// InlineSize is the largest message sent inline (perftest -I); -1 takes
	// perftest's default: 220 for write_lat, 236 for send_lat, 0 otherwise.
	InlineSize int
	Seed       uint64  // fills the buffers; the model has no other randomness
	MaxTimeNs  float64 // simulated-time guard; 0 = 1 s

	// SGEs cuts each work request's local buffer (the gather list of a
	// WRITE or SEND, the scatter list of a READ or atomic) and, for the
	// send tests, each receive buffer, into that many elements of one
	// region, equal parts with the last taking the remainder; 0 and 1 are
	// one element in the single-element fields (perftest's WRs).
	SGEs int

	// UseSRQ (perftest --use_srq, send tests only) puts the QPs of each
	// side that receives (send_bw: the server; send_lat: both) on one
	// shared receive queue of max_wr RxDepth, each QP posting RxDepth /
	// QPs receives to it, as perftest's ctx_set_recv_wqes does.
	UseSRQ bool
	// RxDepth is perftest's -r for the send tests: the receives each QP
	// keeps posted, or with UseSRQ the SRQ's max_wr; 0 is 512
	// (DEF_RX_SEND).
	RxDepth int
	// UseEvent (perftest -e, --events) makes each side's measuring loop
	// sleep on a completion channel rather than spin on its CQ: the CQ it
	// waits on is armed at setup, and each wake-up reads the event, acks
	// it, re-arms and then polls, as perftest's ctx_notify_events does.
	// Not for write_lat, whose loop polls the buffer's last byte.
	UseEvent bool
	// CQModCount and CQModPeriodUS moderate, with UseEvent, the events of
	// every CQ created on a channel (hca.Device.ModifyCQ, right after
	// ibv_create_cq); 0 and 0 is none.
	CQModCount, CQModPeriodUS int

	// Connection is the transport (perftest -c): RC (also ""), or UD for
	// send_lat and send_bw with messages up to the MTU.
	Connection string

	// SL is the service level of the test's QPs, both sides (perftest
	// --sl): every packet carries it and goes on the VL the ports' tables
	// give it.
	SL int
	// VLs and QoS are the data VLs and the SL-to-VL and VL arbitration of
	// both HCA ports when BuildPerftest joins them back to back (0 VLs:
	// one, and the zero QoS puts every SL on VL 0). A fabric's ports are
	// the fabric's.
	VLs int
	QoS hca.PortQoS

	// Pairs lists the test's client–server pairs by host index (the
	// devices BuildPerftestPairsOn is given; back to back, 0 and 1). Each
	// pair runs the whole test on its own QPs, CQs and buffers, all
	// starting together; a host in several pairs holds one set per pair on
	// its one HCA. nil is one pair, host 0 → host 1. Pair 0's figures are
	// the single-pair metrics (bw_gbps, lat_us, …; docs/hca.md).
	Pairs []PerftestPair
	// PairMetrics reports the run-wide pair metrics (aggregate_bw_gbps,
	// fairness_jain, …) even for one pair, so that a sweep over the
	// client count has them at every point; runs of several pairs always
	// report them.
	PairMetrics bool

	// FaultDropAcks drops that many ACKs at the requester (retry test hook).
	FaultDropAcks int
}

// pairs returns the run's pairs: Pairs, or the one pair host 0 → host 1.
func (r *PerftestRun) pairs() []PerftestPair {
	if len(r.Pairs) == 0 {
		return []PerftestPair{{0, 1}}
	}
	return r.Pairs
}

// PerftestRunFrom assembles a run from the config sections the CLI loads:
// workload.test, size, iterations, tx_depth, qps, inline_size (-1 =
// perftest's default), the link section and the hca section.
func PerftestRunFrom(w Config, lc link.Config, h hca.Config, seed uint64, maxTimeNs float64) PerftestRun {
	return PerftestRun{Link: lc, HCA: h, Test: w.Test, Size: w.Size, Iterations: w.Iterations,
		TxDepth: w.TxDepth, QPs: w.QPs, InlineSize: w.InlineSize, SGEs: w.SGECount(), Seed: seed, MaxTimeNs: maxTimeNs,
		UseSRQ: w.UseSRQ, RxDepth: w.RxDepth, UseEvent: w.UseEvent, CQModCount: w.CQModCount, CQModPeriodUS: w.CQModPeriodUS}
}

// Validate checks the run's own knobs (the link and HCA configs validate
// themselves).
func (r *PerftestRun) Validate() error {
	ok := false
	for _, t := range PerftestTests {
		ok = ok || t == r.Test
	}
	if !ok {
		return fmt.Errorf("workload.test: %q is not a perftest test (%s)", r.Test, strings.Join(PerftestTests, ", "))
	}
	if r.Size < 0 || r.Size > 8<<20 {
		return fmt.Errorf("workload.size: %d is out of range (0 to 8388608 bytes)", r.Size)
	}
	if r.Iterations < 2 || r.Iterations > 1e8 {
		return fmt.Errorf("workload.iterations: %d is out of range (2 to 1e8)", r.Iterations)
	}
	if r.TxDepth < 1 || r.TxDepth > 8192 {
		return fmt.Errorf("workload.tx_depth: %d is out of range (1 to 8192)", r.TxDepth)
	}
	if r.QPs < 1 || r.QPs > 4096 {
		return fmt.Errorf("workload.qps: %d is out of range (1 to 4096)", r.QPs)
	}
	if r.SL < 0 || r.SL > 15 {
		return fmt.Errorf("workload.sl: %d is not a service level (0 to 15)", r.SL)
	}
	if r.VLs > 1 && !ib.ValidVLCount(r.VLs) || r.VLs < 0 {
		return fmt.Errorf("switch.vls: %d is not a VL count an IB port supports (1, 2, 4, 8, 15)", r.VLs)
	}
	if vl := r.QoS.SL2VL[r.SL]; vl == ib.ManagementVL || int(vl) >= max(r.VLs, 1) {
		return fmt.Errorf("workload.sl: SL %d maps to VL %d, which the HCA ports (%d data VLs) cannot send on; map it to a data VL in switch.sl2vl", r.SL, vl, max(r.VLs, 1))
	}
	switch r.Connection {
	case "", "RC":
	case "UD":
		if r.Test != "send_lat" && r.Test != "send_bw" {
			return fmt.Errorf("workload.connection: UD runs send_lat and send_bw, not %s", r.Test)
		}
		if r.Size > r.Link.MTU {
			return fmt.Errorf("workload.size: %d is more than link.mtu %d (a UD message is one packet)", r.Size, r.Link.MTU)
		}
	default:
		return fmt.Errorf("workload.connection: %q is not a transport (RC, UD)", r.Connection)
	}
	if r.UseEvent && r.Test == "write_lat" {
		return fmt.Errorf("workload.use_event: true with workload.test write_lat: its loop polls the receive buffer's last byte, not a CQ, so it has no completion to sleep on (send_lat, read_lat, atomic_lat and the bandwidth tests do)")
	}
	if strings.HasSuffix(r.Test, "_lat") && r.QPs != 1 {
		return fmt.Errorf("workload.qps: %d, but the latency tests run on one QP (as perftest's do)", r.QPs)
	}
	for i, pr := range r.Pairs {
		if pr.Client < 0 || pr.Server < 0 || pr.Client == pr.Server {
			return fmt.Errorf("workload: perftest pair %d: client %d, server %d: a pair is two different hosts", i, pr.Client, pr.Server)
		}
	}
	if len(r.Pairs) > MaxPerftestClients {
		return fmt.Errorf("workload.clients: %d pairs is more than %d (a model limit: every pair's queues and buffers are set up ahead)", len(r.Pairs), MaxPerftestClients)
	}
	if err := r.checkSGEs(); err != nil {
		return err
	}
	if err := r.checkSRQ(); err != nil {
		return err
	}
	if err := checkCQMod("workload", r.CQModCount, r.CQModPeriodUS, r.UseEvent); err != nil {
		return err
	}
	if r.Test == "write_lat" && r.Size < 1 {
		return fmt.Errorf("workload.size: write_lat needs at least 1 byte (the receiver polls the last byte), got %d", r.Size)
	}
	if r.InlineSize < -1 || r.InlineSize > r.HCA.MaxInlineBytes {
		return fmt.Errorf("workload.inline_size: %d is out of range (-1 for perftest's default, 0 to hca.max_inline_bytes %d)", r.InlineSize, r.HCA.MaxInlineBytes)
	}
	// The WQE that carries the data inline must fit the largest WQE (as
	// ibv_create_qp refuses a max_inline_data the device cannot hold).
	if op, kind := r.inlineOp(); kind != "" {
		if lim := hca.InlineLimit(op, r.Connection == "UD"); r.InlineSize > lim {
			return fmt.Errorf("workload.inline_size: %d is more than a %s WQE holds inline (%d bytes: a WQE is at most 63 16-byte segments)", r.InlineSize, kind, lim)
		}
	}
	return nil
}

// checkSGEs refuses a count of scatter/gather elements the run cannot
// post: outside 1 … hca.MaxSendSGE, or more than the message's bytes (an
// element of no bytes moves nothing; atomics move 8).
func (r *PerftestRun) checkSGEs() error {
	n := max(r.SGEs, 1)
	size := r.Size
	if strings.HasPrefix(r.Test, "atomic") {
		size = 8
	}
	switch {
	case r.SGEs < 0 || r.SGEs > hca.MaxSendSGE:
		return fmt.Errorf("workload.sges: %d is out of range (1 to %d, the HCA's max_send_sge)", r.SGEs, hca.MaxSendSGE)
	case n > 1 && n > size:
		return fmt.Errorf("workload.sges: %d is more than the message's %d bytes (each element must hold at least one byte)", n, size)
	}
	return nil
}

// rxDepth returns the run's rx_depth: RxDepth, or perftest's 512.
func (r *PerftestRun) rxDepth() int {
	if r.RxDepth == 0 {
		return perftestRxDepth
	}
	return r.RxDepth
}

// checkSRQ refuses use_srq where perftest refuses it (a test other than
// send_bw and send_lat: perftest_parameters.c, "Using SRQ only avavilible
// in SEND tests"; more QPs than rx_depth: "Using SRQ depth should be
// greater than number of QPs"), and rx_depth out of range or on a test
// that posts no receives.
func (r *PerftestRun) checkSRQ() error {
	send := r.Test == "send_bw" || r.Test == "send_lat"
	switch {
	case r.RxDepth < 0 || r.RxDepth > MaxPerftestRxDepth:
		return fmt.Errorf("workload.rx_depth: %d is out of range (0 for perftest's %d, 1 to %d)", r.RxDepth, perftestRxDepth, MaxPerftestRxDepth)
	case r.RxDepth != 0 && !send:
		return fmt.Errorf("workload.rx_depth: %d is set, but workload.test %s posts no receives (send_bw, send_lat do)", r.RxDepth, r.Test)
	case !r.UseSRQ:
		return nil
	case !send:
		return fmt.Errorf("workload.use_srq: true with workload.test %s: perftest's --use_srq is for the SEND tests (send_bw, send_lat)", r.Test)
	case r.QPs > r.rxDepth():
		return fmt.Errorf("workload.use_srq: true with workload.qps %d above workload.rx_depth %d: perftest refuses an SRQ shallower than the QP count", r.QPs, r.rxDepth())
	}
	return nil
}

// sgl cuts n bytes at addr (in the region of lkey) into k elements, equal
// parts with the last taking the remainder.
func sgl(addr uint64, n, k int, lkey uint32) []hca.SGE {
	l := make([]hca.SGE, k)
	part := n / k
	for i := range l {
		l[i] = hca.SGE{Addr: addr + uint64(i*part), Length: uint32(part), LKey: lkey}
	}
	l[k-1].Length = uint32(n - (k-1)*part)
	return l
}

// inlineOp returns the opcode of the test's inline WQEs and its name for
// messages ("" for tests that send nothing inline: READ, atomics).
func (r *PerftestRun) inlineOp() (hca.WROpcode, string) {
	switch {
	case strings.HasPrefix(r.Test, "write_"):
		return hca.WRRDMAWrite, hca.WRRDMAWrite.String()
	case strings.HasPrefix(r.Test, "send_") && r.Connection == "UD":
		return hca.WRSend, "UD SEND"
	case strings.HasPrefix(r.Test, "send_"):
		return hca.WRSend, hca.WRSend.String()
	}
	return 0, ""
}

// App event kinds: the application thread on host 0 or 1 wakes up.
const (
	evApp0 uint8 = iota + 1
	evApp1
	evStart
)

// perftest drives one pair of a run: two application threads, one per
// host of the pair.
type perftest struct {
	run PerftestRun
	s   *components.Sim
	g   *perftestGroup // the run's pairs, which start and end together
	// primary is pair 0: it traces its middle (or median) iteration for
	// the latency breakdown and reports the single-pair metrics.
	primary bool
	dev     [2]*hca.Device
	// thread is each side's application thread: this pair's process, on a
	// core of its own even when its host runs other pairs' processes.
	thread [2]*hca.Thread
	qp     [2][]*hca.QP
	srq    [2]*hca.SRQ // with UseSRQ, each receiving side's shared receive queue
	// channel is each side's completion channel with UseEvent (nil
	// otherwise): both its CQs are created on it.
	channel [2]*hca.CompChannel
	buf     [2][]uint64 // per QP: the send buffer (source of WRITE/SEND, of a peer's READ)
	rbuf    [2][]uint64 // per QP: the receive buffer (target of the peer's WRITE/SEND, of own READ)
	mr      [2][]hca.MR
	bufLen  int
	// srcBytes, with UseSRQ, are the bytes every client QP sends.
	srcBytes []byte
	ud       bool
	grh      int // bytes before the payload in a receive buffer: 40 on UD
	inline   bool
	op       hca.WROpcode
	isLat    bool
	pollPS   ib.PS

	// Progress.
	posted    []int // client WRs posted per QP
	completed []int // client WRs completed per QP
	unsig     []int // client WRs posted since the last signaled one, per QP
	recvDone  [2][]int
	pongs     int // lat: pongs the server sent
	pending   [2]bool
	// tl records the traced message: iteration traceIter's ping (or READ,
	// atomic, bandwidth-test message), then in the ping-pong tests its pong,
	// once tlPing has kept the ping's record.
	tl        hca.Timeline
	tlPing    hca.Timeline
	traceIter int
	// stopAfterTrace: a second pass that only traces traceIter stops once
	// that iteration is over.
	stopAfterTrace bool

	// linkBusyAt0 is each host's outgoing wire busy time when the timed
	// part began, so link_utilization covers the same window as bw_gbps.
	linkBusyAt0 [2]ib.PS
	// atomicAt0 is, per QP, the server's target word when atomic_bw's
	// timed part began: verify expects it raised by one per FETCH_ADD.
	atomicAt0 []uint64

	stamps []ib.PS // client post times (lat tests)
	lat    Latencies
	start  ib.PS
	end    ib.PS
	done   bool
	// result is pair 0's metrics (but the latency breakdown) when its test
	// ended.
	result  map[string]any
	errs    []string
	payload [2][]byte // the bytes each side's buffer held when it sent
	scratch []byte
}

// RunPerftest runs one perftest-style test back to back and returns its
// metrics (snake_case keys, units in the names). The error is a user's
// mistake in the run's knobs, or a run that did not finish.
func RunPerftest(run PerftestRun) (map[string]any, error) {
	p, err := BuildPerftest(run)
	if err != nil {
		return nil, err
	}
	return p.Run()
}

// Perftest is a built perftest run: build it, let observers attach to its
// simulation and devices, then Run it.
type Perftest struct {
	p *perftest // pair 0
	g *perftestGroup
	// rebuild builds the identical run afresh, for the second pass that
	// traces the median iteration.
	rebuild func() (*Perftest, error)
	// OnEnd, if set, is called when the test ends (its last completion
	// polled), in place of stopping the simulation: it must stop it or set
	// a time limit (Sim.StopAt), and may let it run on, so that acks and
	// flow-control packets still on the wire land for the checkers. The
	// metrics Run returns are taken before OnEnd, so they are those of a
	// run stopped there. Only this run calls it, not a second pass that
	// traces the median iteration.
	OnEnd func()
}

// BuildPerftest builds two hosts back to back over run.Link and the test.
func BuildPerftest(run PerftestRun) (*Perftest, error) {
	if err := run.Link.Validate("link"); err != nil {
		return nil, err
	}
	if err := run.HCA.Validate(); err != nil {
		return nil, err
	}
	if err := run.Validate(); err != nil {
		return nil, err
	}
	s := components.NewSim()
	a, b := hca.BackToBackQoS(s, run.Link, run.HCA, run.HCA, max(run.VLs, 1), run.QoS)
	run.Link.SetErrors(a.Port, run.Seed)
	run.Link.SetErrors(b.Port, run.Seed)
	return newPerftestGroup(run, s, []*hca.Device{a, b}, func() (*Perftest, error) { return BuildPerftest(run) })
}

// BuildPerftestOn builds the test between two HCAs already attached to a
// fabric (a switch, a tree): client on a, server on b. run.Link.MTU is the
// path MTU; the rest of run.Link is not used. rebuild must build the same
// run afresh, on a new simulation of the same fabric with any background
// traffic started, and return BuildPerftestOn's result for it: a latency
// test whose median iteration is not the one traced runs it a second time,
// up to that iteration, to trace it (the model is deterministic).
func BuildPerftestOn(s *components.Sim, a, b *hca.Device, run PerftestRun, rebuild func() (*Perftest, error)) (*Perftest, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	if !ib.ValidMTU(run.Link.MTU) {
		return nil, fmt.Errorf("link.mtu: %d is not an IB MTU (256, 512, 1024, 2048, 4096)", run.Link.MTU)
	}
	if len(run.Pairs) > 0 {
		return nil, fmt.Errorf("workload: BuildPerftestOn runs one pair; give run.Pairs to BuildPerftestPairsOn")
	}
	return newPerftestGroup(run, s, []*hca.Device{a, b}, rebuild)
}

// BuildPerftestPairsOn builds the test between every pair of run.Pairs
// (nil: one pair, hosts[0] → hosts[1]) on HCAs already attached to a
// fabric: a pair's client and server are hosts[Client] and hosts[Server]
// (an index a pair does not name may be nil). rebuild is as for
// BuildPerftestOn and must build every pair again.
func BuildPerftestPairsOn(s *components.Sim, hosts []*hca.Device, run PerftestRun, rebuild func() (*Perftest, error)) (*Perftest, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	if !ib.ValidMTU(run.Link.MTU) {
		return nil, fmt.Errorf("link.mtu: %d is not an IB MTU (256, 512, 1024, 2048, 4096)", run.Link.MTU)
	}
	for i, pr := range run.pairs() {
		for _, h := range []int{pr.Client, pr.Server} {
			if h >= len(hosts) || hosts[h] == nil {
				return nil, fmt.Errorf("workload: perftest pair %d: host %d has no HCA", i, h)
			}
		}
	}
	return newPerftestGroup(run, s, hosts, rebuild)
}

// Sim returns the simulation.
func (t *Perftest) Sim() *components.Sim { return t.p.s }

// Devices returns pair 0's client's and server's HCA.
func (t *Perftest) Devices() [2]*hca.Device { return t.p.dev }

// Run runs the test to its end and returns the metrics.
func (t *Perftest) Run() (map[string]any, error) {
	p, g := t.p, t.g
	run := p.run
	g.kick()
	maxT := run.MaxTimeNs
	if maxT <= 0 {
		maxT = 1e9
	}
	p.s.StopAt(p.s.Now() + ib.FromNanoseconds(maxT))
	g.onEnd = t.OnEnd
	if err := p.s.Run(); err != nil {
		return nil, err
	}
	if g.left > 0 {
		done := 0
		for _, q := range g.pairs {
			done += sum(q.completed)
		}
		what := "messages completed"
		if run.Test == "write_bw" || run.Test == "send_bw" {
			// Only every perftestCQMod-th WRITE or SEND is signaled, as in
			// perftest: the count moves in steps of that many.
			what = fmt.Sprintf("messages completed, as the client sees them: one signaled completion every %d", perftestCQMod)
		}
		return nil, &TimeLimitError{Msg: fmt.Sprintf("perftest %s: did not finish within %.0f ns of simulated time (%d of %d %s)", run.Test, maxT, done, run.Iterations*run.QPs*len(g.pairs), what)}
	}
	m := p.result
	if g.result != nil {
		maps.Copy(m, g.result)
	}
	traced := p
	if p.isLat {
		v, _ := p.latSamples()
		if k := medianIter(v, p.traceIter); k != p.traceIter {
			var err error
			if traced, err = t.retrace(k, v[k]); err != nil {
				return nil, err
			}
		}
	}
	m["latency_breakdown"] = traced.breakdown()
	return m, nil
}

// medianIter returns an iteration whose sample is the median of v (the
// nearest-rank median Latencies.Quantile(0.5) reports): prefer, when its
// sample is the median too, so a run whose iterations tie needs no second
// pass; else the first such iteration.
func medianIter(v []int64, prefer int) int {
	l := Latencies{v: slices.Clone(v)}
	l.Sort()
	med := int64(l.Quantile(0.5))
	if prefer < len(v) && v[prefer] == med {
		return prefer
	}
	return slices.Index(v, med)
}

// retrace runs the test again from the start, tracing iteration k, and
// stops once k is over. The model is deterministic, so the second pass
// repeats the first; iteration k's sample must come out as want.
func (t *Perftest) retrace(k int, want int64) (*perftest, error) {
	if t.rebuild == nil {
		panic(fmt.Sprintf("workload: perftest %s: no rebuild to trace median iteration %d", t.p.run.Test, k))
	}
	t2, err := t.rebuild()
	if err != nil {
		return nil, err
	}
	p := t2.p
	p.traceIter, p.stopAfterTrace = k, true
	t2.g.kick()
	maxT := p.run.MaxTimeNs
	if maxT <= 0 {
		maxT = 1e9
	}
	p.s.StopAt(p.s.Now() + ib.FromNanoseconds(maxT))
	if err := p.s.Run(); err != nil {
		return nil, err
	}
	v, _ := p.latSamples()
	if len(v) <= k || v[k] != want {
		got := int64(-1)
		if len(v) > k {
			got = v[k]
		}
		panic(fmt.Sprintf("workload: perftest %s: the second pass is not the first: iteration %d took %d ps, then %d ps",
			t.p.run.Test, k, want, got))
	}
	return p, nil
}

func sum[T int | float64](v []T) T {
	var s T
	for _, x := range v {
		s += x
	}
	return s
}

// newPerftest sets up one pair, client a and server b: its QPs, CQs,
// buffers and connections. The group installs the devices' hooks.
func newPerftest(run PerftestRun, s *components.Sim, a, b *hca.Device, primary bool) *perftest {
	p := &perftest{run: run, s: s, dev: [2]*hca.Device{a, b}, primary: primary}
	p.isLat = strings.HasSuffix(run.Test, "_lat")
	switch {
	case strings.HasPrefix(run.Test, "write"):
		p.op = hca.WRRDMAWrite
	case strings.HasPrefix(run.Test, "read"):
		p.op = hca.WRRDMARead
	case strings.HasPrefix(run.Test, "send"):
		p.op = hca.WRSend
	default:
		p.op = hca.WRFetchAdd
		run.Size = 8
		p.run.Size = 8
	}
	p.inline = (p.op == hca.WRRDMAWrite || p.op == hca.WRSend) && run.Size <= perftestInlineLimit(run)
	p.pollPS = ib.FromNanoseconds(run.HCA.Host.PollNS)
	p.bufLen = max(run.Size, 8)
	if run.Connection == "UD" {
		p.ud, p.grh = true, hca.UDGRHBytes
	}
	rng := rand.New(rand.NewPCG(run.Seed, 0x9e7f))
	acc := hca.AccessLocalWrite | hca.AccessRemoteWrite | hca.AccessRemoteRead | hca.AccessRemoteAtomic
	// The send queue holds every outstanding WQE at the size this test
	// posts (mlx5 sizes it from max_send_wr and the WQE that
	// max_inline_data allows), and at least four WQEBBs per WR.
	wr := hca.SendWR{Opcode: p.op, Inline: p.inline, Length: uint32(run.Size), UD: p.ud}
	if run.SGEs > 1 && !p.inline {
		wr.Length, wr.SGL = 0, make([]hca.SGE, run.SGEs)
	}
	sqBBs := 1
	for sqBBs < max(4, hca.WQEBBs(&wr))*max(run.TxDepth, perftestCQMod) {
		sqBBs *= 2
	}
	cqDepth := run.HCA.CQDepth
	for side := 0; side < 2; side++ {
		d := p.dev[side]
		pd := d.AllocPD()
		var scq, rcq *hca.CQ
		if run.UseEvent {
			// perftest -e: the CQs are created on a completion channel.
			p.channel[side] = d.CreateCompChannel()
			scq, rcq = d.CreateCQChannel(cqDepth, p.channel[side]), d.CreateCQChannel(cqDepth, p.channel[side])
			for _, cq := range []*hca.CQ{scq, rcq} {
				if err := d.ModifyCQ(cq, run.CQModCount, run.CQModPeriodUS); err != nil {
					panic(fmt.Sprintf("perftest: modify_cq: %v (run not validated)", err))
				}
			}
		} else {
			scq, rcq = d.CreateCQ(cqDepth), d.CreateCQ(cqDepth)
		}
		p.thread[side] = d.NewThread()
		if run.UseSRQ && p.receives(side) {
			// perftest creates its SRQ with max_wr rx_depth and max_sge 1
			// (perftest_resources.c, ctx_init: "when using sreq, rx_depth
			// sets the max_wr"); the model asks for the run's SGEs.
			srq, err := d.CreateSRQ(pd, run.rxDepth(), max(run.SGEs, 1))
			if err != nil {
				panic(fmt.Sprintf("perftest: create SRQ: %v", err))
			}
			srq.SetThread(p.thread[side])
			p.srq[side] = srq
		}
		rqDepth := 1
		for rqDepth < run.rxDepth() {
			rqDepth *= 2
		}
		for q := 0; q < run.QPs; q++ {
			var qp *hca.QP
			var err error
			switch {
			case p.ud && p.srq[side] != nil:
				qp, err = d.CreateUDQPSRQ(pd, scq, rcq, sqBBs, p.srq[side], perftestQKey)
			case p.ud:
				// As an RC QP below: created for the elements its WRs
				// carry (CreateUDQP's one element when sges is 1).
				n := max(run.SGEs, 1)
				qp, err = d.CreateUDQPCap(pd, scq, rcq, sqBBs, rqDepth, perftestQKey, hca.QPCap{MaxRecvSGE: n, MaxSendSGE: n})
			case p.srq[side] != nil:
				qp, err = d.CreateQPSRQ(pd, scq, rcq, sqBBs, p.srq[side])
			default:
				// The QP is created for the elements its WRs carry, as
				// an application posting N of them must (ibv_qp_cap
				// max_send_sge, max_recv_sge).
				n := max(run.SGEs, 1)
				qp, err = d.CreateQPCap(pd, scq, rcq, sqBBs, rqDepth, hca.QPCap{MaxRecvSGE: n, MaxSendSGE: n})
			}
			if err != nil {
				panic(fmt.Sprintf("perftest: create QP: %v", err))
			}
			// One registration covers the send half and the receive half
			// (with the GRH area on UD).
			area := 2*p.bufLen + p.grh
			buf := d.Malloc(area)
			data := make([]byte, area)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			if run.UseSRQ && side == 0 {
				// On an SRQ any QP's message may land in any QP's
				// buffer, and messages in flight on several QPs into
				// one buffer interleave: every client QP sends the same
				// bytes, so the destination still equals the source.
				if q == 0 {
					p.srcBytes = append([]byte(nil), data[:p.bufLen]...)
				}
				copy(data, p.srcBytes)
			}
			d.Mem.Write(buf, data)
			qp.SetThread(p.thread[side])
			p.qp[side] = append(p.qp[side], qp)
			p.buf[side] = append(p.buf[side], buf)
			p.rbuf[side] = append(p.rbuf[side], buf+uint64(p.bufLen))
			p.mr[side] = append(p.mr[side], d.RegMR(pd, buf, area, acc))
		}
		p.recvDone[side] = make([]int, run.QPs)
	}
	for q := 0; q < run.QPs; q++ {
		// PSNs start from the seed, as perftest draws them at random.
		psnA, psnB := rng.Uint32()&0xFFFFFF, rng.Uint32()&0xFFFFFF
		if p.ud {
			for side, psn := range []uint32{psnA, psnB} {
				d, qp := p.dev[side], p.qp[side][q]
				for _, attr := range []hca.QPAttr{{State: hca.QPInit}, {State: hca.QPRTR, MTU: run.Link.MTU, SL: uint8(run.SL)}, {State: hca.QPRTS, SQPSN: psn}} {
					if err := d.ModifyQP(qp, attr); err != nil {
						panic(fmt.Sprintf("perftest: modify UD QP: %v", err))
					}
				}
			}
			continue
		}
		if err := hca.ConnectRCSL(p.qp[0][q], p.qp[1][q], run.Link.MTU, psnA, psnB, uint8(run.SL)); err != nil {
			panic(fmt.Sprintf("perftest: connect: %v", err))
		}
	}
	p.posted = make([]int, run.QPs)
	p.completed = make([]int, run.QPs)
	p.unsig = make([]int, run.QPs)
	p.traceIter = -1 // never: only pair 0 traces
	if primary {
		// Both devices share the one Timeline; only pair 0 sets it, so a
		// host in other pairs too keeps tracing pair 0's message.
		a.Timeline, b.Timeline = &p.tl, &p.tl
		a.DropAcks = run.FaultDropAcks
		p.traceIter = run.Iterations / 2
	}
	return p
}

// receives reports whether side posts receives: the server of a send
// test, and the client of send_lat (ping-pong).
func (p *perftest) receives(side int) bool {
	return p.op == hca.WRSend && (side == 1 || p.isLat)
}

// perftestInlineLimit returns the largest message the run sends inline:
// workload.inline_size, or perftest's default for the test (220 for
// write_lat, 236 for send_lat, 188 for UD send_lat, else 0) capped at
// hca.max_inline_bytes.
func perftestInlineLimit(run PerftestRun) int {
	if run.InlineSize >= 0 {
		return run.InlineSize
	}
	inl := 0
	if run.Test == "write_lat" {
		inl = perftestInlineWrite
	} else if run.Test == "send_lat" {
		inl = perftestInlineSend
		if run.Connection == "UD" {
			inl = perftestInlineUD
		}
	}
	return min(inl, run.HCA.MaxInlineBytes)
}

// snapshot copies a message's bytes of side's memory at addr.
func (p *perftest) snapshot(side int, addr uint64) []byte {
	return p.snapshotInto(nil, side, addr)
}

// snapshotInto is snapshot reusing dst's storage.
func (p *perftest) snapshotInto(dst []byte, side int, addr uint64) []byte {
	return readMessage(dst, p.dev[side], addr, p.run.Size)
}

// readMessage copies the n bytes at addr of d's host memory into dst's
// storage (grown when short) and returns them: a message's bytes as the
// perftests check them.
func readMessage(dst []byte, d *hca.Device, addr uint64, n int) []byte {
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	d.Mem.Read(addr, dst)
	return dst
}

// wakeApp makes side's application thread poll at now + poll time (once).
func (p *perftest) wakeApp(side int, now ib.PS) {
	if p.pending[side] || p.done {
		return
	}
	p.pending[side] = true
	at := p.thread[side].FreeAt(now) + p.pollPS
	p.s.Schedule(at, p, evApp0+uint8(side))
}

// HandleEvent implements components.EventHandler: an application thread
// runs its poll loop once.
func (p *perftest) HandleEvent(ev *components.Event) {
	side := int(ev.Kind - evApp0)
	p.pending[side] = false
	if p.done {
		return
	}
	if p.channel[side] != nil {
		p.takeEvents(side)
	}
	if p.isLat {
		p.latPoll(side)
	} else {
		p.bwPoll(side)
	}
}

// waitCQ returns the CQ side's measuring loop waits on, nil if it waits
// on none: the receive CQ in send_lat and send_bw's server, the send CQ
// of every other client; read_lat's, atomic_lat's and the one-sided
// bandwidth tests' servers only answer.
func (p *perftest) waitCQ(side int) *hca.CQ {
	switch {
	case p.op == hca.WRSend && (side == 1 || p.isLat):
		return p.qp[side][0].RecvCQ
	case side == 0:
		return p.qp[0][0].SendCQ
	}
	return nil
}

// armEvents arms, with UseEvent, the CQ each side waits on (perftest
// arms its CQs once at setup, ibv_req_notify_cq(cq, 0)); the thread is
// woken by the channel's events (wakeApp) instead of by every CQE.
func (p *perftest) armEvents() {
	for side := range 2 {
		cq := p.waitCQ(side)
		if p.channel[side] == nil || cq == nil {
			continue
		}
		p.channel[side].OnEvent = func(_ *hca.CQ, now ib.PS) { p.wakeApp(side, now) }
		if err := p.dev[side].ReqNotifyCQ(cq, false); err != nil {
			panic(fmt.Sprintf("perftest: req_notify_cq: %v", err))
		}
	}
}

// takeEvents is perftest's ctx_notify_events on a woken thread: read
// each event from the channel (ibv_get_cq_event), acknowledge it and
// re-arm its CQ (ibv_req_notify_cq) before the poll that follows. The
// arm goes before the poll so that a CQE landing after the poll still
// fires an event; the arm carries the consumer index, so a CQE not yet
// polled when it reaches the HCA fires one at once (the one this wake-up
// is about to poll, usually: the next wake-up then finds nothing new and
// the thread sleeps again).
func (p *perftest) takeEvents(side int) {
	d := p.dev[side]
	for {
		cq, ok := d.GetCQEvent(p.channel[side])
		if !ok {
			return
		}
		if err := d.AckCQEvents(cq, 1); err != nil {
			panic(fmt.Sprintf("perftest: ack_cq_events: %v", err))
		}
		if err := d.ReqNotifyCQ(cq, false); err != nil {
			panic(fmt.Sprintf("perftest: req_notify_cq: %v", err))
		}
	}
}

// postSetup posts the receives a SEND test needs before timing starts.
func (p *perftest) postSetup() {
	if p.run.UseEvent {
		p.armEvents()
	}
	if p.op == hca.WRSend {
		for side := 0; side < 2; side++ {
			if side == 0 && !p.isLat {
				continue // send_bw: only the server receives
			}
			// perftest's ctx_set_recv_wqes: rx_depth receives per QP, or
			// with an SRQ rx_depth / QPs per QP, each QP's to its own
			// buffer (wr_id the QP's index), QP after QP.
			n := p.run.rxDepth()
			if p.srq[side] != nil {
				n /= len(p.qp[side])
			}
			for q := range p.qp[side] {
				for i := 0; i < n; i++ {
					p.postRecv(side, q)
				}
			}
		}
	}
}

// setupSettle lets the receive prefetches issued during setup land before
// the timed part begins.
const setupSettle = 5 * ib.Microsecond

// begin starts the pair's timed part (the group has reset the devices'
// statistics).
func (p *perftest) begin() {
	p.start = p.s.Now()
	for side, d := range p.dev {
		p.linkBusyAt0[side] = d.Port.BusyThrough()
	}
	if p.isLat {
		p.postClient(0)
		return
	}
	if p.op == hca.WRFetchAdd {
		p.atomicAt0 = make([]uint64, len(p.qp[0]))
		for q := range p.qp[0] {
			p.atomicAt0[q] = p.dev[1].Mem.ReadU64(p.rbuf[1][q])
		}
	}
	for q := range p.qp[0] {
		p.fillQP(q)
	}
}

func (p *perftest) postRecv(side, q int) {
	d := p.dev[side]
	wr := hca.RecvWR{ID: uint64(q), Addr: p.rbuf[side][q], Length: uint32(p.bufLen + p.grh), LKey: p.mr[side][q].LKey}
	if p.run.SGEs > 1 {
		// On UD the list covers the GRH area and the payload, so the
		// datagram lands where one element puts it (hca receiveUD).
		wr = hca.RecvWR{ID: uint64(q), SGL: sgl(p.rbuf[side][q], p.bufLen+p.grh, p.run.SGEs, p.mr[side][q].LKey)}
	}
	if srq := p.srq[side]; srq != nil {
		if err := d.PostSRQRecv(srq, &wr); err != nil {
			panic(fmt.Sprintf("perftest: post_srq_recv: %v", err))
		}
		return
	}
	if err := d.PostRecv(p.qp[side][q], &wr); err != nil {
		panic(fmt.Sprintf("perftest: post_recv: %v", err))
	}
}

// wr builds the client's (side 0) or server's work request on QP q.
func (p *perftest) wr(side, q int, signaled bool, id uint64) hca.SendWR {
	peer := 1 - side
	w := hca.SendWR{ID: id, Opcode: p.op, Signaled: signaled, Inline: p.inline,
		LocalAddr: p.buf[side][q], Length: uint32(p.run.Size), LKey: p.mr[side][q].LKey,
		RemoteAddr: p.rbuf[peer][q], RKey: p.mr[peer][q].RKey}
	if p.ud {
		w.UD, w.DLID, w.RemoteQPN, w.RemoteQKey = true, p.dev[peer].LID, p.qp[peer][q].Num, perftestQKey
		w.RemoteAddr, w.RKey = 0, 0
	}
	switch p.op {
	case hca.WRRDMARead:
		w.LocalAddr, w.RemoteAddr = p.rbuf[side][q], p.buf[peer][q]
	case hca.WRFetchAdd:
		w.LocalAddr = p.rbuf[side][q]
		w.CompareAdd = 1
	}
	if p.run.SGEs > 1 {
		// The same buffer, cut into the list (an atomic's 8 bytes too).
		w.SGL = sgl(w.LocalAddr, int(w.Length), p.run.SGEs, w.LKey)
		w.LocalAddr, w.Length, w.LKey = 0, 0, 0
	}
	return w
}

func (p *perftest) post(side, q int, w *hca.SendWR) {
	if p.isLat && (p.op == hca.WRRDMAWrite || p.op == hca.WRSend) {
		p.payload[side] = p.snapshotInto(p.payload[side], side, p.buf[side][q]) // what this message carries
	}
	if err := p.dev[side].PostSend(p.qp[side][q], w); err != nil {
		panic(fmt.Sprintf("perftest: post_send: %v", err))
	}
}

// ---- latency tests ----

// postClient posts the client's next ping (or READ / atomic).
func (p *perftest) postClient(q int) {
	k := p.posted[q]
	if k == p.traceIter && q == 0 {
		p.tl.Trace(p.qp[0][0], p.qp[0][0].NextWQEIndex())
	}
	signaled := !(p.op == hca.WRRDMAWrite || p.op == hca.WRSend) || (k+1)%perftestCQMod == 0
	w := p.wr(0, q, signaled, uint64(k))
	if p.op == hca.WRRDMAWrite {
		p.stampLastByte(0, q, k)
	}
	p.stamps = append(p.stamps, p.s.Now())
	p.post(0, q, &w)
	p.posted[q]++
}

// stampLastByte writes the iteration number into the send buffer's last
// byte, which the peer polls in its receive buffer (ib_write_lat).
func (p *perftest) stampLastByte(side, q, k int) {
	d := p.dev[side]
	d.Mem.Write(p.buf[side][q]+uint64(p.run.Size-1), []byte{byte(k + 1)})
}

// lastByte is the address of the message's last byte in side's receive buffer.
func (p *perftest) lastByte(side, q int) uint64 {
	return p.rdata(side, q) + uint64(max(p.run.Size, 1)-1)
}

// rdata is where a received message's payload lands (after the GRH area on UD).
func (p *perftest) rdata(side, q int) uint64 {
	return p.rbuf[side][q] + uint64(p.grh)
}

// memWritten is write_lat's poll on the last byte of the receive buffer.
func (p *perftest) memWritten(side int, addr uint64, n int, now ib.PS) {
	last := p.lastByte(side, 0)
	if addr <= last && last < addr+uint64(n) {
		p.wakeApp(side, now)
	}
}

// latPoll is one turn of a latency test's poll loop on side.
func (p *perftest) latPoll(side int) {
	d := p.dev[side]
	var wcs [16]hca.WC
	switch p.op {
	case hca.WRRDMAWrite:
		// Ping-pong on the buffer's last byte; send CQs drain quietly.
		for d.PollCQ(p.qp[side][0].SendCQ, wcs[:]) > 0 {
		}
		var b [1]byte
		d.Mem.Read(p.lastByte(side, 0), b[:])
		if side == 1 {
			want := byte(p.pongs + 1)
			if b[0] != want {
				return
			}
			p.checkArrived(1, 0)
			p.pongs++
			w := p.wr(1, 0, (p.pongs)%perftestCQMod == 0, uint64(p.pongs))
			p.stampLastByte(1, 0, p.pongs-1)
			p.tracePong()
			p.post(1, 0, &w)
			return
		}
		if b[0] != byte(p.posted[0]) {
			return
		}
		p.checkArrived(0, 0)
		p.clientTurn()
	case hca.WRSend:
		for d.PollCQ(p.qp[side][0].SendCQ, wcs[:]) > 0 {
		}
		n := d.PollCQ(p.qp[side][0].RecvCQ, wcs[:1])
		if n == 0 {
			return
		}
		p.checkWC(wcs[0])
		p.checkArrived(side, 0)
		p.postRecv(side, 0)
		if side == 1 {
			p.pongs++
			w := p.wr(1, 0, p.pongs%perftestCQMod == 0, uint64(p.pongs))
			p.tracePong()
			p.post(1, 0, &w)
			return
		}
		p.clientTurn()
	default: // read_lat, atomic_lat: the client waits for its own CQE
		if side != 0 {
			return
		}
		n := d.PollCQ(p.qp[0][0].SendCQ, wcs[:1])
		if n == 0 {
			return
		}
		p.checkWC(wcs[0])
		k := p.posted[0] - 1
		p.lat.Add(p.s.Now() - p.stamps[k])
		p.completed[0]++
		if p.completed[0] == p.run.Iterations {
			p.finish()
			return
		}
		if p.traceOver() {
			return
		}
		p.postClient(0)
	}
}

// tracePong: the server is about to answer ping pongs−1; if that is the
// traced iteration, keep the ping's record and trace the pong.
func (p *perftest) tracePong() {
	if p.pongs-1 == p.traceIter {
		p.tlPing = p.tl
		p.tl.Trace(p.qp[1][0], p.qp[1][0].NextWQEIndex())
	}
}

// traceOver reports, in a second pass, that the traced iteration is over
// (for ping-pong: the next ping is posted, which ends its round trip), and
// then stops the simulation.
func (p *perftest) traceOver() bool {
	if !p.stopAfterTrace || p.completed[0] <= p.traceIter {
		return false
	}
	p.s.Stop()
	return true
}

// clientTurn: the client saw the pong of its last ping; it records the
// round trip and sends the next ping (perftest: lat = Δpost / 2).
func (p *perftest) clientTurn() {
	p.completed[0]++
	if p.completed[0] == p.run.Iterations {
		p.stamps = append(p.stamps, p.s.Now())
		p.finish()
		return
	}
	if p.traceOver() {
		// The round trip ends with the next ping's post.
		p.stamps = append(p.stamps, p.s.Now())
		return
	}
	p.postClient(0)
}

// checkArrived compares side's receive buffer with what the peer last sent.
func (p *perftest) checkArrived(side, q int) {
	p.scratch = p.snapshotInto(p.scratch, side, p.rdata(side, q))
	if !bytes.Equal(p.scratch, p.payload[1-side]) {
		p.errs = append(p.errs, fmt.Sprintf("host %d qp %d: received bytes differ from the sent ones", side, q))
	}
}

func (p *perftest) checkWC(wc hca.WC) {
	if wc.Status != hca.WCSuccess {
		p.errs = append(p.errs, fmt.Sprintf("completion wr %d: %v", wc.WRID, wc.Status))
	}
}

// ---- bandwidth tests ----

// fillQP posts client WRs on QP q up to the tx depth.
func (p *perftest) fillQP(q int) {
	iters := p.run.Iterations
	cqMod := min(perftestCQMod, p.run.TxDepth)
	for p.posted[q] < iters && p.posted[q]-p.completed[q] < p.run.TxDepth {
		k := p.posted[q]
		if k == p.traceIter && q == 0 {
			p.tl.Trace(p.qp[0][0], p.qp[0][0].NextWQEIndex())
		}
		p.unsig[q]++
		signaled := p.unsig[q] == cqMod || k == iters-1
		if signaled {
			p.unsig[q] = 0
		}
		w := p.wr(0, q, signaled, uint64(k))
		p.post(0, q, &w)
		p.posted[q]++
	}
}

func (p *perftest) bwPoll(side int) {
	d := p.dev[side]
	var wcs [64]hca.WC
	if side == 1 {
		// send_bw's server: count and re-post receives.
		for {
			n := d.PollCQ(p.qp[1][0].RecvCQ, wcs[:])
			if n == 0 {
				break
			}
			for _, wc := range wcs[:n] {
				p.checkWC(wc)
				q := int(wc.WRID)
				p.recvDone[1][q]++
				p.postRecv(1, q)
			}
		}
		return
	}
	for {
		n := d.PollCQ(p.qp[0][0].SendCQ, wcs[:])
		if n == 0 {
			break
		}
		for _, wc := range wcs[:n] {
			p.checkWC(wc)
			q := int(wc.QPN - p.qp[0][0].Num)
			k := int(wc.WRID)
			// A signaled completion covers the unsignaled WRs before it.
			p.completed[q] = k + 1
		}
	}
	total := 0
	for q := range p.qp[0] {
		p.fillQP(q)
		total += p.completed[q]
	}
	if total == p.run.Iterations*p.run.QPs {
		p.finish()
	}
}

// finish ends the pair's test: its data is checked now, and pair 0's
// metrics taken now, whatever the simulation does after; the run ends
// with its last pair.
func (p *perftest) finish() {
	p.done = true
	p.end = p.s.Now()
	p.verify()
	if p.primary {
		p.result = p.metrics()
	}
	p.g.pairDone()
}

// verify checks the bytes at the end of a bandwidth run: every message
// carried the same buffer, so the destination equals the source.
func (p *perftest) verify() {
	if p.isLat {
		return
	}
	if p.op == hca.WRSend && p.srq[1] != nil {
		// Every client QP sent the same bytes (newPerftest); each buffer
		// a completion named (wr_id) holds them.
		used := 0
		for q := range p.qp[1] {
			if p.recvDone[1][q] == 0 {
				continue
			}
			used++
			if !bytes.Equal(p.snapshot(1, p.rdata(1, q)), p.srcBytes[:p.run.Size]) {
				p.errs = append(p.errs, fmt.Sprintf("receive buffer %d differs from the source after %s on an SRQ", q, p.run.Test))
			}
		}
		if used == 0 {
			p.errs = append(p.errs, "no receive buffer of the SRQ was used")
		}
		return
	}
	for q := range p.qp[0] {
		switch p.op {
		case hca.WRRDMAWrite, hca.WRSend:
			if !bytes.Equal(p.snapshot(1, p.rdata(1, q)), p.snapshot(0, p.buf[0][q])) {
				p.errs = append(p.errs, fmt.Sprintf("qp %d: destination differs from source after %s", q, p.run.Test))
			}
		case hca.WRRDMARead:
			if !bytes.Equal(p.snapshot(0, p.rbuf[0][q]), p.snapshot(1, p.buf[1][q])) {
				p.errs = append(p.errs, fmt.Sprintf("qp %d: read buffer differs from the remote source", q))
			}
		case hca.WRFetchAdd:
			// Each FETCH_ADD adds 1 to the server's word and returns the
			// word before it: after n of them the word is its start + n and
			// the client holds the value the last one found, start + n − 1.
			n := uint64(p.run.Iterations)
			start := p.atomicAt0[q]
			if got := p.dev[1].Mem.ReadU64(p.rbuf[1][q]); got != start+n {
				p.errs = append(p.errs, fmt.Sprintf("qp %d: target word %#x after %d FETCH_ADDs of 1 from %#x, want %#x", q, got, n, start, start+n))
			}
			if got := p.dev[0].Mem.ReadU64(p.rbuf[0][q]); got != start+n-1 {
				p.errs = append(p.errs, fmt.Sprintf("qp %d: the last FETCH_ADD returned %#x, want %#x", q, got, start+n-1))
			}
		}
	}
}
