package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ReplayRun is the run-wide part of a trace replay (workload.kind replay):
// the trace's messages go over RC QPs on HCAs already attached to a fabric.
type ReplayRun struct {
	MTU       int     // path MTU of every connection
	Seed      uint64  // draws the PSNs
	MaxTimeNs float64 // simulated-time guard; 0 = 1 s
	SL        int     // service level of every connection, 0..15
}

// Replay is a built trace replay: build it, let observers attach, Run it.
type Replay struct {
	r *replay
	// OnEnd, as Collective.OnEnd: called when the last completion is
	// polled, in place of stopping the simulation (the metrics are taken
	// before it).
	OnEnd func()
}

// Event kinds of the replay driver: evReplayStart begins the timed run,
// evReplayPoll is one turn of host ev.Arg's poll loop, evReplayTimer wakes
// host ev.Arg when a message's start_ns comes, evReplayComputed ends host
// ev.Arg's compute (compute_ns).
const (
	evReplayStart uint8 = iota + 1
	evReplayPoll
	evReplayTimer
	evReplayComputed
)

// replayMsg is a message's run-time state.
type replayMsg struct {
	waits  int32 // dependencies not yet met
	pair   int32 // index in replay.pairs
	posted bool
	done   bool // the source polled its send completion
	recvd  bool // the destination polled its receive completion
	postAt ib.PS
	doneAt ib.PS
	// seenAt is the poll turn that took the message's receive completion
	// at its destination (send and write_imm only).
	seenAt ib.PS
	// An atomic's result slot at its source (the k-th atomic the source
	// issues lands its original value at the host's results + 8k), and
	// the original value found there when its send completion was polled.
	slot int32
	orig uint64
	// readyAt is when the message is due (posted, or its compute_ns
	// begun, once the thread is free), set when its last dependency
	// completes: the later of its start_ns and that completion + its
	// delay_ns.
	readyAt ib.PS
}

// replayPair is one (source, destination) connection: the RC QP at each
// end, and the messages posted on it that take a receive WQE, in posting
// order, which RC keeps: the destination's receive completions on the QP
// come in that order.
type replayPair struct {
	sqp, rqp *hca.QP
	recvs    []int32 // message indexes, in posting order
	head     int     // receive completions polled
}

// replayHost is one host's application thread and its verbs objects.
type replayHost struct {
	dev            *hca.Device
	sendCQ, recvCQ *hca.CQ
	// src is where its messages' payloads come from (and a read of it
	// reads); dst where payloads land (written to it, read into it). One
	// buffer pair per host, reused by every message: the data is not
	// checked, only the timing.
	src, dst uint64
	// atomics is the host's atomic area (only when the trace has atomics):
	// the counter word every fetch_add aimed at the host adds 1 to, then
	// the word every cmp_swap aimed at it tries to take from 0, then one
	// 8-byte result slot per atomic the host issues.
	atomics uint64
	mr      hca.MR
	// qpBase is the smallest QP number it holds; recvPair[qpn − qpBase]
	// is the pair whose receiving end that QP is (−1 if none).
	qpBase   uint32
	recvPair []int32
	ready    msgHeap // messages whose dependencies are met, by (ready time, start, index)
	pending  bool    // a poll turn is queued
	// computing: the thread is busy with message computeMsg's compute_ns
	// until its evReplayComputed; it posts, polls and computes nothing
	// else meanwhile. woken: a completion arrived meanwhile, so the
	// thread polls once it has posted that message.
	computing  bool
	woken      bool
	computeMsg int32
}

// replay drives every host's application thread.
type replay struct {
	run     ReplayRun
	s       *components.Sim
	tr      *Trace
	msgs    []replayMsg
	deps    [][]int32 // per message, the messages that wait for it
	hosts   []*replayHost
	pairs   []replayPair
	start   ib.PS
	end     ib.PS
	started bool
	left    int // completions (send, and receive where the op has one) not yet polled
	lat     Latencies
	errs    []string
	// atomicErrs are failures of the end-of-run atomics check (a word
	// that does not hold what the atomics aimed at it must leave): the
	// model's bug, so Run fails with them as an internal error.
	atomicErrs []string
	result     map[string]any
	onEnd      func()
	pollWCs    [64]hca.WC
}

// BuildReplayOn sets a replay of tr up on devs (host i on devs[i]): per
// host a protection domain, a send and a receive CQ and one registered
// buffer pair (followed, when the trace has atomics, by the host's atomic
// area); per (source, destination) pair the trace uses an RC QP at
// each end, with a receive WQE pre-posted for each send and write_imm on
// it, all before the timed part starts.
func BuildReplayOn(s *components.Sim, devs []*hca.Device, tr *Trace, run ReplayRun) (*Replay, error) {
	if !ib.ValidMTU(run.MTU) {
		return nil, fmt.Errorf("link.mtu: %d is not an IB MTU (256, 512, 1024, 2048, 4096)", run.MTU)
	}
	if run.SL < 0 || run.SL > 15 {
		return nil, fmt.Errorf("workload.sl: %d is not a service level (0 to 15)", run.SL)
	}
	n := len(devs)
	r := &replay{run: run, s: s, tr: tr, msgs: make([]replayMsg, len(tr.Msgs)), deps: make([][]int32, len(tr.Msgs))}
	// Buffers: every host's halves hold its largest message. Only written
	// pages are stored (hca.HostMemory), so the bound is on what lands:
	// each host's largest incoming payload.
	var maxBytes int64
	landing := make([]int64, n)
	issued := make([]int32, n) // atomics each host issues
	hasAtomics := false
	for i := range tr.Msgs {
		m := &tr.Msgs[i]
		if m.Op.isAtomic() {
			// An atomic lands nothing in the buffer pair: it needs its
			// own area (below), not a larger buffer.
			r.msgs[i].slot = issued[m.Src]
			issued[m.Src]++
			hasAtomics = true
			continue
		}
		maxBytes = max(maxBytes, m.Bytes)
		to := m.Dst
		if m.Op == ReplayRead {
			to = m.Src
		}
		landing[to] = max(landing[to], m.Bytes)
	}
	// The atomic area: two target words, then the result slots.
	areaBytes := make([]int64, n)
	if hasAtomics {
		for h := range areaBytes {
			areaBytes[h] = 16 + 8*int64(issued[h])
		}
	}
	var stored int64
	for h, b := range landing {
		stored += b + areaBytes[h]
	}
	if stored > MaxCollectiveHostBytes {
		return nil, fmt.Errorf("%s: the largest message each host receives adds up to %d bytes of simulated host memory, more than the %d one run may hold (a model limit: every byte landed is stored)",
			tr.Name, stored, int64(MaxCollectiveHostBytes))
	}
	pairOf := map[[2]int]int32{}
	for i := range tr.Msgs {
		m := &tr.Msgs[i]
		key := [2]int{m.Src, m.Dst}
		p, ok := pairOf[key]
		if !ok {
			p = int32(len(r.pairs))
			pairOf[key] = p
			r.pairs = append(r.pairs, replayPair{})
		}
		r.msgs[i].pair = p
		r.msgs[i].waits = int32(len(m.After))
		for _, d := range m.After {
			r.deps[d] = append(r.deps[d], int32(i))
		}
	}
	// Per pair and per host: sends posted and receives taken.
	sends := make([]int, len(r.pairs))
	recvs := make([]int, len(r.pairs))
	hostSends, hostRecvs := make([]int, n), make([]int, n)
	for i := range tr.Msgs {
		m := &tr.Msgs[i]
		p := r.msgs[i].pair
		sends[p]++
		hostSends[m.Src]++
		if m.Op.completesAtDst() {
			recvs[p]++
			hostRecvs[m.Dst]++
		}
	}
	pds := make([]uint32, n)
	for h, d := range devs {
		hs := &replayHost{dev: d}
		pds[h] = d.AllocPD()
		hs.sendCQ = d.CreateCQ(pow2(max(d.Cfg.CQDepth, hostSends[h])))
		hs.recvCQ = d.CreateCQ(pow2(max(d.Cfg.CQDepth, hostRecvs[h])))
		// The atomic area follows the buffer pair, 8-byte aligned (an
		// atomic's target must be: IBA 9.4.5, NAK invalid request else).
		pair := (2*maxBytes + 7) &^ 7
		if areaBytes[h] == 0 {
			pair = 2 * maxBytes // no atomics: the layout as before them
		}
		size := int(pair + areaBytes[h])
		base := d.Malloc(size)
		hs.src, hs.dst = base, base+uint64(maxBytes)
		hs.atomics = base + uint64(pair)
		hs.mr = d.RegMR(pds[h], base, size, replayAccess)
		r.hosts = append(r.hosts, hs)
	}
	rng := rand.New(rand.NewPCG(run.Seed, 0x4e91a7))
	// A send queue holds every message posted on it, so posting never waits
	// for completions to free WQEBBs (as the collectives size theirs).
	bbs := max(hca.WQEBBs(&hca.SendWR{Opcode: hca.WRRDMAWriteImm, Length: 1}),
		hca.WQEBBs(&hca.SendWR{Opcode: hca.WRFetchAdd, Length: 8}))
	for _, p := range sortedPairs(pairOf) {
		src, dst := p.key[0], p.key[1]
		a, b := r.hosts[src], r.hosts[dst]
		qa := a.dev.CreateQP(pds[src], a.sendCQ, a.recvCQ, pow2(sends[p.idx]*bbs), 1)
		qb := b.dev.CreateQP(pds[dst], b.sendCQ, b.recvCQ, 1, pow2(max(recvs[p.idx], 1)))
		if err := hca.ConnectRCSL(qa, qb, run.MTU, rng.Uint32()&0xFFFFFF, rng.Uint32()&0xFFFFFF, uint8(run.SL)); err != nil {
			panic(fmt.Sprintf("workload: replay: connect host %d to %d: %v", src, dst, err))
		}
		pr := &r.pairs[p.idx]
		pr.sqp, pr.rqp = qa, qb
		pr.recvs = make([]int32, 0, recvs[p.idx])
		for k := 0; k < recvs[p.idx]; k++ {
			// A WRITE WITH IMMEDIATE places nothing in the receive
			// buffer; a SEND lands in the destination's landing half.
			if err := b.dev.PostRecv(qb, &hca.RecvWR{ID: uint64(k), Addr: b.dst, Length: uint32(maxBytes), LKey: b.mr.LKey}); err != nil {
				panic(fmt.Sprintf("workload: replay: post_recv on host %d: %v", dst, err))
			}
		}
	}
	for h, hs := range r.hosts {
		hs.qpBase = ^uint32(0)
		for i := range r.pairs {
			if q := r.pairs[i].rqp; q.Device() == hs.dev {
				hs.qpBase = min(hs.qpBase, q.Num)
			}
			if q := r.pairs[i].sqp; q.Device() == hs.dev {
				hs.qpBase = min(hs.qpBase, q.Num)
			}
		}
		for i := range r.pairs {
			if q := r.pairs[i].rqp; q.Device() == hs.dev {
				k := int(q.Num - hs.qpBase)
				for len(hs.recvPair) <= k {
					hs.recvPair = append(hs.recvPair, -1)
				}
				hs.recvPair[k] = int32(i)
			}
		}
		h := h
		hs.dev.OnCQE = func(_ *hca.CQ, now ib.PS) { r.wake(h, now) }
	}
	for i := range tr.Msgs {
		r.left++
		if tr.Msgs[i].Op.completesAtDst() {
			r.left++
		}
	}
	return &Replay{r: r}, nil
}

// replayAccess is every replay buffer's access: local write (receives and
// READ and atomic results land in it), remote write, read and atomic (the
// key check unit refuses an atomic on a region registered without
// IBV_ACCESS_REMOTE_ATOMIC). A variable so a test can take a right away.
var replayAccess = hca.AccessLocalWrite | hca.AccessRemoteWrite | hca.AccessRemoteRead | hca.AccessRemoteAtomic

type pairKey struct {
	key [2]int
	idx int32
}

// sortedPairs returns the pairs in the order they were first used (their
// index), so QP numbers and PSN draws do not follow map order.
func sortedPairs(m map[[2]int]int32) []pairKey {
	out := make([]pairKey, len(m))
	for k, v := range m {
		out[v] = pairKey{k, v}
	}
	return out
}

// Sim returns the simulation.
func (rp *Replay) Sim() *components.Sim { return rp.r.s }

// Run runs the replay to its last completion and returns the metrics.
func (rp *Replay) Run() (map[string]any, error) {
	r := rp.r
	// The timed part starts once set-up (pre-posted receives and their
	// prefetch) is over on every host, as the collectives start.
	var setupDone ib.PS
	for _, h := range r.hosts {
		setupDone = max(setupDone, h.dev.CPUFreeAt())
	}
	maxT := startTimed(r.s, setupDone, r, evReplayStart, r.run.MaxTimeNs)
	r.onEnd = rp.OnEnd
	if err := r.s.Run(); err != nil {
		return nil, err
	}
	if r.left > 0 {
		done := 0
		for i := range r.msgs {
			if r.msgs[i].done {
				done++
			}
		}
		return nil, &TimeLimitError{Msg: fmt.Sprintf("replay of %s: did not finish within %.0f ns of simulated time (%d of %d messages completed at their source)", r.tr.Name, maxT, done, len(r.msgs))}
	}
	if len(r.atomicErrs) > 0 {
		return nil, fmt.Errorf("replay of %s: internal error: the atomics left their words wrong (a model bug): %s",
			r.tr.Name, strings.Join(r.atomicErrs[:min(len(r.atomicErrs), 4)], "; "))
	}
	if r.result == nil {
		r.result = r.metrics()
	}
	return r.result, nil
}

// checkAtomics checks, once every atomic has completed, that each host's
// words hold what the atomics aimed at it must leave, whatever order its
// responder executed them in. The counter word starts at 0 and each
// fetch_add adds 1 and returns the word before it, so after n of them the
// word is n and their returns are 0 … n−1, each once. The swap word starts
// at 0 and each cmp_swap swaps in its tag if the word is 0: the first one
// executed finds 0 and wins, so exactly one returns 0, the word holds its
// tag, and every other returns that tag. A lost, repeated or misexecuted
// atomic, or a result written to the wrong place, breaks one of these.
//
// A failed completion (completions_ok false) already says the run went
// wrong and leaves its atomic unexecuted: the words are checked only when
// every completion succeeded.
func (r *replay) checkAtomics() []string {
	if len(r.errs) > 0 {
		return nil
	}
	var errs []string
	type aimed struct{ fa, cs []int32 }
	at := make([]aimed, len(r.hosts))
	for i := range r.tr.Msgs {
		switch m := &r.tr.Msgs[i]; m.Op {
		case ReplayFetchAdd:
			at[m.Dst].fa = append(at[m.Dst].fa, int32(i))
		case ReplayCmpSwap:
			at[m.Dst].cs = append(at[m.Dst].cs, int32(i))
		}
	}
	for h, a := range at {
		hs := r.hosts[h]
		if n := uint64(len(a.fa)); n > 0 {
			if got := hs.dev.Mem.ReadU64(hs.atomics); got != n {
				errs = append(errs, fmt.Sprintf("host %d: counter word holds %d after %d fetch_adds of 1 from 0", h, got, n))
			}
			seen := make([]bool, n)
			for _, i := range a.fa {
				v := r.msgs[i].orig
				if v >= n || seen[v] {
					errs = append(errs, fmt.Sprintf("host %d: the fetch_add of line %d returned %d, not one of 0 to %d not returned before", h, r.tr.Msgs[i].Line, v, n-1))
					continue
				}
				seen[v] = true
			}
		}
		if len(a.cs) > 0 {
			word := hs.dev.Mem.ReadU64(hs.atomics + 8)
			winners := 0
			for _, i := range a.cs {
				switch v := r.msgs[i].orig; {
				case v == 0:
					winners++
					if word != cmpSwapTag(i) {
						errs = append(errs, fmt.Sprintf("host %d: the cmp_swap of line %d found 0, but the word holds %d, not its tag %d", h, r.tr.Msgs[i].Line, word, cmpSwapTag(i)))
					}
				case v != word:
					errs = append(errs, fmt.Sprintf("host %d: the cmp_swap of line %d returned %d, not the winner's tag %d", h, r.tr.Msgs[i].Line, v, word))
				}
			}
			if winners != 1 {
				errs = append(errs, fmt.Sprintf("host %d: %d of the %d cmp_swaps aimed at it found the word 0, want exactly 1", h, winners, len(a.cs)))
			}
		}
	}
	return errs
}

// HandleEvent implements components.EventHandler.
func (r *replay) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case evReplayStart:
		r.begin()
	case evReplayPoll:
		h := int(ev.Arg)
		r.hosts[h].pending = false
		r.turn(h)
	case evReplayTimer:
		r.postReady(int(ev.Arg))
	case evReplayComputed:
		r.computed(int(ev.Arg))
	}
}

// begin starts the timed part: every message that waits for nothing is
// queued at its source, to be posted at its start_ns.
func (r *replay) begin() {
	r.start = r.s.Now()
	r.started = true
	for _, h := range r.hosts {
		h.dev.ResetStats()
	}
	for i := range r.msgs {
		if r.msgs[i].waits == 0 {
			r.release(int32(i))
		}
	}
	for h := range r.hosts {
		r.postReady(h)
	}
}

// startOf is message i's start_ns in simulated time.
func (r *replay) startOf(i int32) ib.PS { return r.start + r.tr.Msgs[i].Start }

// release queues message i, whose dependencies are met now, at its
// source, ready at the later of its start and now + its delay_ns; a ready
// time still to come sets a timer for it. The delay does not hold the
// application thread (compute on other cores, or a wait): the host posts
// other messages meanwhile as the trace says. Its compute_ns, after it,
// does (postReady).
func (r *replay) release(i int32) {
	h := r.tr.Msgs[i].Src
	now := r.s.Now()
	at := max(r.startOf(i), now+r.tr.Msgs[i].Delay)
	r.msgs[i].readyAt = at
	r.hosts[h].ready.push(i, r)
	if at > now {
		e := r.s.Schedule(at, r, evReplayTimer)
		e.Arg = int64(h)
	}
}

// postReady posts, in (ready time, start, index) order, every queued
// message of host h whose ready time has come. Every postReady follows the
// releases of its instant, so the messages it finds due are all ready now
// and go in (start, index) order, as without delays.
//
// A due message with compute_ns makes the thread busy that long first
// (from when it is free: after the posts before it) and stops the walk:
// the thread does nothing else until the compute ends (computed). Due
// while a poll turn is queued (a completion woke the thread), it waits for
// that turn, which walks the queue again once it has polled: the thread
// finishes the poll it has begun before it computes.
func (r *replay) postReady(h int) {
	hs := r.hosts[h]
	if hs.computing {
		return
	}
	now := r.s.Now()
	for hs.ready.len() > 0 {
		i := hs.ready.top()
		if r.msgs[i].readyAt > now {
			return
		}
		if c := r.tr.Msgs[i].Compute; c > 0 {
			if hs.pending {
				return
			}
			hs.ready.pop(r)
			hs.computing, hs.computeMsg = true, i
			e := r.s.Schedule(hs.dev.ChargeCPU(c), r, evReplayComputed)
			e.Arg = int64(h)
			return
		}
		hs.ready.pop(r)
		r.post(h, i)
	}
}

// computed ends host h's compute: the thread posts the message it
// computed for, then polls if a completion arrived meanwhile (that turn
// walks the ready queue after polling), else goes on with the messages
// due.
func (r *replay) computed(h int) {
	hs := r.hosts[h]
	hs.computing = false
	r.post(h, hs.computeMsg)
	if hs.woken {
		hs.woken = false
		r.wake(h, r.s.Now())
		return
	}
	r.postReady(h)
}

// post issues message i from host h: the application thread starts the
// post when it is free, which is when the message's latency starts.
func (r *replay) post(h int, i int32) {
	hs := r.hosts[h]
	m := &r.tr.Msgs[i]
	rm := &r.msgs[i]
	peer := r.hosts[m.Dst]
	pr := &r.pairs[rm.pair]
	w := hca.SendWR{ID: uint64(i), Signaled: true, LocalAddr: hs.src, Length: uint32(m.Bytes), LKey: hs.mr.LKey,
		RemoteAddr: peer.dst, RKey: peer.mr.RKey}
	switch m.Op {
	case ReplayWrite:
		w.Opcode = hca.WRRDMAWrite
	case ReplayWriteImm:
		w.Opcode, w.Imm = hca.WRRDMAWriteImm, uint32(i)
	case ReplaySend:
		w.Opcode, w.RemoteAddr, w.RKey = hca.WRSend, 0, 0
	case ReplayRead:
		// The source reads the peer's payload half into its landing half.
		w.Opcode, w.LocalAddr, w.RemoteAddr = hca.WRRDMARead, hs.dst, peer.src
	case ReplayFetchAdd:
		// Add 1 to the peer's counter word; the original value lands in
		// the message's own result slot.
		w.Opcode, w.LocalAddr, w.RemoteAddr, w.CompareAdd = hca.WRFetchAdd, hs.resultSlot(rm.slot), peer.atomics, 1
	case ReplayCmpSwap:
		// Take the peer's swap word from 0 to this message's tag (its
		// index + 1, never 0): the first cmp_swap the peer executes wins,
		// every later one finds the winner's tag and fails.
		w.Opcode, w.LocalAddr, w.RemoteAddr = hca.WRCompSwap, hs.resultSlot(rm.slot), peer.atomics+8
		w.CompareAdd, w.Swap = 0, cmpSwapTag(i)
	}
	rm.postAt = hs.dev.CPUFreeAt()
	rm.posted = true
	if m.Op.completesAtDst() {
		pr.recvs = append(pr.recvs, i)
	}
	if err := hs.dev.PostSend(pr.sqp, &w); err != nil {
		panic(fmt.Sprintf("workload: replay host %d: post_send of line %d: %v", h, m.Line, err))
	}
}

// resultSlot is the address of the k-th atomic result slot of host hs.
func (hs *replayHost) resultSlot(k int32) uint64 { return hs.atomics + 16 + 8*uint64(k) }

// cmpSwapTag is what cmp_swap message i swaps into its target word.
func cmpSwapTag(i int32) uint64 { return uint64(i) + 1 }

// wake makes host h's application thread poll at now + poll time (once).
func (r *replay) wake(h int, now ib.PS) {
	hs := r.hosts[h]
	if hs.computing {
		// Busy: the CQE waits in its CQ until the thread polls again.
		hs.woken = true
		return
	}
	if hs.pending || !r.started {
		return
	}
	hs.pending = true
	at := max(now, hs.dev.CPUFreeAt()) + ib.FromNanoseconds(hs.dev.Cfg.Host.PollNS)
	e := r.s.Schedule(at, r, evReplayPoll)
	e.Arg = int64(h)
}

// turn is one pass of host h's poll loop: drain the send CQ (each
// completion ends a message's latency), drain the receive CQ, release the
// messages those completions were holding back, post what is due.
func (r *replay) turn(h int) {
	hs := r.hosts[h]
	d := hs.dev
	now := r.s.Now()
	wcs := r.pollWCs[:]
	for {
		k := d.PollCQ(hs.sendCQ, wcs)
		for _, wc := range wcs[:k] {
			r.checkWC(h, wc)
			i := int32(wc.WRID)
			rm := &r.msgs[i]
			if rm.done || !rm.posted || r.tr.Msgs[i].Src != h {
				r.errs = append(r.errs, fmt.Sprintf("host %d: unexpected send completion of wr %d", h, wc.WRID))
				continue
			}
			rm.done, rm.doneAt = true, now
			r.lat.Add(now - rm.postAt)
			if m := &r.tr.Msgs[i]; m.Op.isAtomic() {
				// The CQE follows the result's write, so the slot holds
				// the original value when the poll sees it.
				rm.orig = d.Mem.ReadU64(hs.resultSlot(rm.slot))
				want := hca.WCFetchAdd
				if m.Op == ReplayCmpSwap {
					want = hca.WCCompSwap
				}
				if wc.Opcode != want {
					r.errs = append(r.errs, fmt.Sprintf("host %d: send completion %v for the %s of line %d", h, wc.Opcode, m.Op, m.Line))
				}
			}
			r.completed(i, h)
		}
		if k < len(wcs) {
			break
		}
	}
	for {
		k := d.PollCQ(hs.recvCQ, wcs)
		for _, wc := range wcs[:k] {
			r.checkWC(h, wc)
			r.received(h, wc)
		}
		if k < len(wcs) {
			break
		}
	}
	r.postReady(h)
	if r.left == 0 {
		r.end = now
		r.stop()
	}
}

// received handles a receive completion at host h: the next message its
// QP was sent, in posting order.
func (r *replay) received(h int, wc hca.WC) {
	hs := r.hosts[h]
	k := int(wc.QPN - hs.qpBase)
	if wc.QPN < hs.qpBase || k >= len(hs.recvPair) || hs.recvPair[k] < 0 {
		r.errs = append(r.errs, fmt.Sprintf("host %d: receive completion on qp 0x%x, which receives nothing", h, wc.QPN))
		return
	}
	pr := &r.pairs[hs.recvPair[k]]
	if pr.head >= len(pr.recvs) {
		r.errs = append(r.errs, fmt.Sprintf("host %d: receive completion on qp 0x%x before its message was posted", h, wc.QPN))
		return
	}
	i := pr.recvs[pr.head]
	pr.head++
	m := &r.tr.Msgs[i]
	want := hca.WCRecv
	if m.Op == ReplayWriteImm {
		want = hca.WCRecvRDMAImm
		if wc.Imm != uint32(i) {
			r.errs = append(r.errs, fmt.Sprintf("host %d: immediate %d, want %d (line %d)", h, wc.Imm, i, m.Line))
		}
	}
	if wc.Opcode != want {
		r.errs = append(r.errs, fmt.Sprintf("host %d: receive completion %v for the %s of line %d", h, wc.Opcode, m.Op, m.Line))
	}
	r.msgs[i].recvd = true
	r.msgs[i].seenAt = r.s.Now()
	r.completed(i, h)
}

// completed counts a completion of message i polled at host h and
// releases the messages of h that waited for it.
func (r *replay) completed(i int32, h int) {
	r.left--
	for _, j := range r.deps[i] {
		if r.tr.Msgs[j].Src != h {
			continue // seen at the other end
		}
		rm := &r.msgs[j]
		rm.waits--
		if rm.waits == 0 {
			r.release(j)
		}
	}
}

func (r *replay) checkWC(h int, wc hca.WC) {
	if wc.Status != hca.WCSuccess {
		r.errs = append(r.errs, fmt.Sprintf("host %d: completion wr %d on qp 0x%x: %v", h, wc.WRID, wc.QPN, wc.Status))
	}
}

// stop ends the run now, at r.end (the turn that polled the last
// completion); with an OnEnd the metrics are taken first and OnEnd lets
// the fabric settle for the checkers.
func (r *replay) stop() {
	r.atomicErrs = r.checkAtomics()
	if r.onEnd == nil {
		r.s.Stop()
		return
	}
	r.result = r.metrics()
	r.onEnd()
}

// metrics returns the run's results: docs/metrics.md, "Trace replay".
func (r *replay) metrics() map[string]any {
	span := r.end - r.start
	var bytes int64
	for i := range r.tr.Msgs {
		bytes += r.tr.Msgs[i].Bytes
	}
	var timeouts, naks, rnr int64
	var mttHits, mttMisses int64
	var ctx ctxTally // QP, CQ, SRQ and EQ contexts, over every HCA
	for _, h := range r.hosts {
		timeouts += h.dev.Counters.Timeouts
		naks += h.dev.Counters.Naks
		rnr += h.dev.Counters.RNRNaks
		if mc := h.dev.MTTCache(); mc != nil {
			mttHits, mttMisses = mttHits+mc.Hits, mttMisses+mc.Misses
		}
		ctx.add(h.dev)
	}
	m := map[string]any{
		"messages":        len(r.tr.Msgs),
		"bytes":           bytes,
		"makespan_ns":     span.Nanoseconds(),
		"latency_ns":      r.lat.SummaryNs(),
		"connections":     len(r.pairs),
		"completions_ok":  len(r.errs) == 0,
		"timeouts":        timeouts,
		"naks":            naks,
		"rnr_naks":        rnr,
		"sim_time_ns":     r.s.Now().Nanoseconds(),
		"events":          r.s.Events(),
		"throughput_gbps": 0.0,
	}
	if span > 0 {
		m["throughput_gbps"] = float64(bytes) * 8 / span.Seconds() / 1e9
	}
	if len(r.errs) > 0 {
		m["completion_errors"] = r.errs[:min(len(r.errs), 10)]
	}
	if mttHits+mttMisses > 0 {
		m["mtt_cache_miss_rate"] = float64(mttMisses) / float64(mttHits+mttMisses)
	}
	ctx.put(m, "")
	return m
}

// msgHeap is a binary min-heap of message indexes by (ready time,
// start_ns, index): a host's released messages, posted in the order they
// become ready, start order among those ready at once, trace order among
// equal starts.
type msgHeap struct{ v []int32 }

func (q *msgHeap) len() int   { return len(q.v) }
func (q *msgHeap) top() int32 { return q.v[0] }
func (r *replay) less(a, b int32) bool {
	if ra, rb := r.msgs[a].readyAt, r.msgs[b].readyAt; ra != rb {
		return ra < rb
	}
	sa, sb := r.tr.Msgs[a].Start, r.tr.Msgs[b].Start
	return sa < sb || sa == sb && a < b
}

func (q *msgHeap) push(i int32, r *replay) {
	q.v = append(q.v, i)
	for k := len(q.v) - 1; k > 0; {
		p := (k - 1) / 2
		if !r.less(q.v[k], q.v[p]) {
			break
		}
		q.v[k], q.v[p] = q.v[p], q.v[k]
		k = p
	}
}

func (q *msgHeap) pop(r *replay) int32 {
	top := q.v[0]
	last := len(q.v) - 1
	q.v[0] = q.v[last]
	q.v = q.v[:last]
	for k := 0; ; {
		l, c := 2*k+1, k
		if l < len(q.v) && r.less(q.v[l], q.v[c]) {
			c = l
		}
		if l+1 < len(q.v) && r.less(q.v[l+1], q.v[c]) {
			c = l + 1
		}
		if c == k {
			break
		}
		q.v[k], q.v[c] = q.v[c], q.v[k]
		k = c
	}
	return top
}
