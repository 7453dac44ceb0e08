package verif

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// Invariant names, as a Violation reports them.
const (
	InvLossless   = "lossless"       // every injected packet delivered exactly once, uncorrupted
	InvBuffer     = "buffer"         // no buffer above its size, none below empty
	InvCredit     = "credit"         // no credit count negative or above the peer's buffer
	InvOrdering   = "ordering"       // per QP: request PSNs in order at the responder, completions in order
	InvIntegrity  = "data-integrity" // RDMA destination bytes equal the source
	InvProtection = "protection"     // no byte lands in host memory without a valid key
	InvWire       = "wire"           // per port: one packet on the wire at a time, each tx_start closed by its tx_end
)

// Violation is a failed invariant: which one, where, when, what, and the
// last trace events the checkers saw before it.
type Violation struct {
	Invariant string // one of the Inv* names
	Path      string // component that announced the offending event
	Time      ib.PS
	Detail    string
	Recent    []components.TraceEvent // oldest first; the offending event last when there is one
}

// Error formats the report: one summary line, then the recent events in
// trace-line form.
func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invariant %s violated at %d ps in %s: %s", v.Invariant, v.Time, v.Path, v.Detail)
	if len(v.Recent) > 0 {
		fmt.Fprintf(&b, "\nlast %d events:", len(v.Recent))
		for i := range v.Recent {
			b.WriteString("\n  ")
			b.WriteString(FormatEvent(&v.Recent[i]))
		}
	}
	return b.String()
}

// CheckConfig tunes the checkers.
type CheckConfig struct {
	// Recent is how many events a report shows; 0 means 16.
	Recent int
	// AllowDrops accepts drop events (a fabric configured to discard, e.g.
	// SL-to-VL 15); by default a drop breaks "lossless".
	AllowDrops bool
	// OnViolation is called at each violation. The lead wires it to stop the
	// run (components.Sim.Stop) so the report is about the first failure.
	// nil: violations are only collected.
	OnViolation func(*Violation)
}

// Checkers are the scoreboards. They observe the trace events blocks
// announce (they are a sim.Hook at components.HookPosTrace, like the
// Recorder) plus two calls the simulation makes itself: CompareData when an
// RDMA transfer completes, and Finish when the run ends.
//
// Attach them to a whole simulation with one call, and finish at the end:
//
//	chk := verif.AttachCheckers(verif.CheckConfig{OnViolation: func(*verif.Violation) { s.Stop() }}, blocks...)
//	s.OnEnd(func(now ib.PS) { chk.Finish(now, true) })
//	...
//	if err := chk.Err(); err != nil { ... print err, exit 1 ... }
//
// What each invariant reads from the events (docs/trace-format.md):
//
//   - lossless: inject and deliver, keyed by seq; the delivered copy must
//     carry the injected slid, dlid, qpn, psn, op and icrc; each seq once.
//     A drop is a violation unless AllowDrops. At Finish, any packet injected
//     and not delivered is lost. A unicast packet is delivered at its
//     destination: a block that injected packets takes only those for the
//     SLID of its first one, and every packet for one DLID is delivered at
//     the same block (LMC 0); else it was misrouted.
//   - buffer: any event with occ: 0 ≤ occ ≤ cap. buf_enq / buf_deq with seq
//     and credits keep the checker's own count per (path, vl): a packet
//     enters a buffer once and leaves it once, the blocks it holds never
//     exceed cap, and an occ the model reports must equal that count. A
//     buf_deq of a packet not in the buffer is a credit returned twice. At
//     Finish on an idle fabric every buffer is empty.
//   - credit: any event with avail: avail ≥ 0, and avail ≤ cap when cap is
//     given. At Finish on an idle fabric, every (path, vl) whose last event
//     had avail and cap must have avail == cap: less is a leaked credit, more
//     a credit returned twice.
//   - ordering: deliver of a request opcode per connection (slid, dlid,
//     qpn), starting from the PSN of the connection's first injected
//     request: psn must be the expected one or behind it (a retry); ahead
//     is a gap (a lost or reordered packet). A
//     request consumes psns PSNs (default 1; an RDMA READ request ⌈len/PMTU⌉).
//     cqe with a queue field, per (path, qpn, queue): wqe strictly after the
//     previous one on the 16-bit WQE counter (it may wrap).
//   - protection: key_check result=pass opens the window [addr, addr+len)
//     for (path, qpn) — without addr and len, the whole address space;
//     result=fail closes all of that QP's windows (the QP goes to the error
//     state). A dma_write must lie inside an open window.
//   - data integrity: CompareData(src, dst).
//   - wire: tx_start, tx_end and fc_send per port (path). A tx_start opens
//     the wire for its seq; the next wire event must be that seq's tx_end,
//     at or after the tx_start, with its vl and bytes. A tx_start or fc_send
//     while a packet is open is a missing tx_end; one earlier than the last
//     tx_end is two packets on the wire at once; a tx_end with no packet
//     open is a second (or stray) tx_end. At Finish on an idle fabric no
//     packet is open.
type Checkers struct {
	cfg CheckConfig

	recent []components.TraceEvent // ring; fields slices reused
	next   int
	filled bool

	injected  map[int64]pktIdentity // in flight, by seq
	delivered bitset                // by seq
	credits   map[vlKey]creditState
	inBuf     map[bufSlot]int64 // packets in a buffer: blocks, by (path, seq)
	bufOcc    map[vlKey]int64   // blocks in each (path, vl) buffer, by the checker's own count
	psnNext   map[rcKey]int64   // next expected request PSN at a responder QP, by connection
	srcLID    map[string]int64  // by path: the SLID of the first packet the block injected (its LID)
	lidAt     map[int64]string  // by DLID: the block that took the first packet delivered to it
	wqeLast   map[qpKey]int64   // last completed WQE index per (path, qpn, queue)
	keyWins   map[qpKey][]window
	wires     map[string]*wireState // by port path

	violations []*Violation
}

type pktIdentity struct {
	slid, dlid, qpn, psn, icrc int64
	op                         string
	at                         ib.PS
	path                       string
}

type creditState struct {
	avail, cap int64
	hasCap     bool
	at         ib.PS
}

type window struct{ lo, hi int64 } // [lo, hi)

// vlKey and qpKey are map keys built without formatting strings, so the
// checkers stay cheap enough to leave on.
type vlKey struct {
	path string
	vl   int64 // -1 when the event has no vl
}

// String formats the key as a stream key ("path vl=N").
func (k vlKey) String() string { return fmt.Sprintf("%s vl=%d", k.path, k.vl) }

type qpKey struct {
	path  string
	qpn   int64
	queue string
}

func keyVL(ev *components.TraceEvent) vlKey {
	vl, ok := ev.Int("vl")
	if !ok {
		vl = -1
	}
	return vlKey{ev.Path, vl}
}

func keyQP(ev *components.TraceEvent, qpn int64) qpKey { return qpKey{path: ev.Path, qpn: qpn} }

// rcKey is one connection's request stream: the requester's and the
// responder's LIDs and the responder's QP (LMC 0: one LID per port).
type rcKey struct{ slid, dlid, qpn int64 }

// firstMulticastLID is where the IB multicast LIDs (and the permissive
// LID) start; a packet to one of them is delivered at several ports.
const firstMulticastLID = 0xC000

type bufSlot struct {
	path string
	seq  int64
}

// maxKeyWindows is how many passed key checks per QP stay open; older ones
// close (an HCA checks the key once per message, so a handful covers the
// messages in flight on one QP).
const maxKeyWindows = 16

// NewCheckers returns checkers with empty state.
func NewCheckers(cfg CheckConfig) *Checkers {
	if cfg.Recent <= 0 {
		cfg.Recent = 16
	}
	return &Checkers{
		cfg:      cfg,
		recent:   make([]components.TraceEvent, cfg.Recent),
		injected: map[int64]pktIdentity{},
		credits:  map[vlKey]creditState{},
		inBuf:    map[bufSlot]int64{},
		bufOcc:   map[vlKey]int64{},
		psnNext:  map[rcKey]int64{},
		srcLID:   map[string]int64{},
		lidAt:    map[int64]string{},
		wqeLast:  map[qpKey]int64{},
		keyWins:  map[qpKey][]window{},
		wires:    map[string]*wireState{},
	}
}

// AttachCheckers makes checkers and attaches them to every block that
// announces trace events; see Checkers for the end-of-run call.
func AttachCheckers(cfg CheckConfig, targets ...sim.Hookable) *Checkers {
	c := NewCheckers(cfg)
	AttachHook(c, targets...)
	return c
}

// Func implements sim.Hook.
func (c *Checkers) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev, ok := ctx.Item.(*components.TraceEvent)
	if !ok {
		panic(fmt.Sprintf("verif: HookPosTrace item is %T, want *components.TraceEvent", ctx.Item))
	}
	c.Observe(ev)
}

// Observe checks one event.
func (c *Checkers) Observe(ev *components.TraceEvent) {
	c.remember(ev)
	if avail, ok := ev.Int("avail"); ok {
		c.checkCredit(ev, avail)
	}
	if occ, ok := ev.Int("occ"); ok {
		if capBlocks, hasCap := ev.Int("cap"); occ < 0 || hasCap && occ > capBlocks {
			c.fail(InvBuffer, ev, fmt.Sprintf("buffer occupancy %d outside 0..%d", occ, capBlocks))
		}
	}
	switch ev.Kind {
	case components.TraceInject:
		c.inject(ev)
	case components.TraceDeliver:
		c.deliver(ev)
		c.checkPSN(ev)
	case components.TraceDrop:
		if !c.cfg.AllowDrops {
			seq, _ := ev.Int("seq")
			reason, _ := ev.Str("reason")
			c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d dropped (reason %q) in a lossless fabric", seq, reason))
		}
	case components.TraceBufEnq:
		c.bufEnq(ev)
	case components.TraceBufDeq:
		c.bufDeq(ev)
	case components.TraceCQE:
		c.checkCQE(ev)
	case components.TraceKeyCheck:
		c.keyCheck(ev)
	case components.TraceDMAWrite:
		c.dmaWrite(ev)
	case components.TraceTxStart:
		c.txStart(ev)
	case components.TraceTxEnd:
		c.txEnd(ev)
	case components.TraceFCSend:
		c.fcSend(ev)
	}
}

func (c *Checkers) remember(ev *components.TraceEvent) {
	slot := &c.recent[c.next]
	fields := append(slot.Fields[:0], ev.Fields...)
	*slot = *ev
	slot.Fields = fields
	c.next++
	if c.next == len(c.recent) {
		c.next, c.filled = 0, true
	}
}

// recentCopy returns the remembered events, oldest first, deep-copied.
func (c *Checkers) recentCopy() []components.TraceEvent {
	var out []components.TraceEvent
	if c.filled {
		for i := c.next; i < len(c.recent); i++ {
			out = append(out, c.recent[i].Clone())
		}
	}
	for i := 0; i < c.next; i++ {
		out = append(out, c.recent[i].Clone())
	}
	return out
}

func (c *Checkers) fail(inv string, ev *components.TraceEvent, detail string) {
	c.report(&Violation{Invariant: inv, Path: ev.Path, Time: ev.Time, Detail: detail})
}

func (c *Checkers) report(v *Violation) {
	v.Recent = c.recentCopy()
	c.violations = append(c.violations, v)
	if c.cfg.OnViolation != nil {
		c.cfg.OnViolation(v)
	}
}

func (c *Checkers) checkCredit(ev *components.TraceEvent, avail int64) {
	key := keyVL(ev)
	capBlocks, hasCap := ev.Int("cap")
	switch {
	case avail < 0:
		c.fail(InvCredit, ev, fmt.Sprintf("credit count %d is negative", avail))
	case hasCap && avail > capBlocks:
		c.fail(InvCredit, ev, fmt.Sprintf("credit count %d above the peer's buffer of %d blocks (a credit returned twice?)", avail, capBlocks))
	}
	c.credits[key] = creditState{avail: avail, cap: capBlocks, hasCap: hasCap, at: ev.Time}
}

// bufEnq and bufDeq keep the checker's own account of each buffer, by
// packet: a packet leaves a buffer (and its credits go back) exactly once.
// Counting by packet rather than trusting the model's occ catches a credit
// returned twice even while the buffer is not empty.
func (c *Checkers) bufEnq(ev *components.TraceEvent) {
	seq, ok := ev.Int("seq")
	if !ok {
		return
	}
	blocks, _ := ev.Int("credits")
	slot := bufSlot{ev.Path, seq}
	if _, dup := c.inBuf[slot]; dup {
		c.fail(InvBuffer, ev, fmt.Sprintf("packet seq %d enqueued twice", seq))
		return
	}
	c.inBuf[slot] = blocks
	key := keyVL(ev)
	c.bufOcc[key] += blocks
	if capBlocks, ok := ev.Int("cap"); ok && c.bufOcc[key] > capBlocks {
		c.fail(InvBuffer, ev, fmt.Sprintf("buffer holds %d blocks of packets, above its %d", c.bufOcc[key], capBlocks))
	}
	if occ, ok := ev.Int("occ"); ok && occ != c.bufOcc[key] {
		c.fail(InvBuffer, ev, fmt.Sprintf("buffer accounting: model says %d blocks used, its packets hold %d", occ, c.bufOcc[key]))
	}
}

func (c *Checkers) bufDeq(ev *components.TraceEvent) {
	seq, ok := ev.Int("seq")
	if !ok {
		return
	}
	slot := bufSlot{ev.Path, seq}
	blocks, in := c.inBuf[slot]
	if !in {
		c.fail(InvCredit, ev, fmt.Sprintf("packet seq %d left a buffer it is not in: its credits returned twice (or never taken)", seq))
		return
	}
	delete(c.inBuf, slot)
	key := keyVL(ev)
	c.bufOcc[key] -= blocks
	if occ, ok := ev.Int("occ"); ok && occ != c.bufOcc[key] {
		c.fail(InvBuffer, ev, fmt.Sprintf("buffer accounting: model says %d blocks used, its packets hold %d", occ, c.bufOcc[key]))
	}
}

func identity(ev *components.TraceEvent) pktIdentity {
	var id pktIdentity
	id.slid, _ = ev.Int("slid")
	id.dlid, _ = ev.Int("dlid")
	id.qpn, _ = ev.Int("qpn")
	id.psn, _ = ev.Int("psn")
	id.icrc, _ = ev.Int("icrc")
	id.op, _ = ev.Str("op")
	id.at, id.path = ev.Time, ev.Path
	return id
}

func (c *Checkers) inject(ev *components.TraceEvent) {
	seq, ok := ev.Int("seq")
	if !ok || seq < 0 {
		c.fail(InvLossless, ev, "inject without a non-negative seq field")
		return
	}
	if _, dup := c.injected[seq]; dup || c.delivered.has(seq) {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d injected twice", seq))
		return
	}
	id := identity(ev)
	c.injected[seq] = id
	if _, ok := c.srcLID[ev.Path]; !ok {
		c.srcLID[ev.Path] = id.slid
	}
	if requestOps[id.op] {
		// The connection's first request starts the responder's expected
		// PSN, so packets reordered from the very first are a gap too.
		if k := (rcKey{id.slid, id.dlid, id.qpn}); !c.hasPSN(k) {
			c.psnNext[k] = id.psn
		}
	}
}

func (c *Checkers) hasPSN(k rcKey) bool { _, ok := c.psnNext[k]; return ok }

// checkDest fails a delivery at a block that is not the packet's
// destination: a block that injected packets with one SLID takes only
// packets for that LID, and packets for one LID all arrive at one block.
func (c *Checkers) checkDest(ev *components.TraceEvent, seq, dlid int64) bool {
	if dlid >= firstMulticastLID {
		return true
	}
	if own, ok := c.srcLID[ev.Path]; ok && own != dlid {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d for dlid %d delivered at %s, whose LID is %d (misrouted)", seq, dlid, ev.Path, own))
		return false
	}
	if at, ok := c.lidAt[dlid]; ok && at != ev.Path {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d for dlid %d delivered at %s, but dlid %d's packets were delivered at %s (misrouted)", seq, dlid, ev.Path, dlid, at))
		return false
	}
	c.lidAt[dlid] = ev.Path
	return true
}

func (c *Checkers) deliver(ev *components.TraceEvent) {
	seq, ok := ev.Int("seq")
	if !ok || seq < 0 {
		c.fail(InvLossless, ev, "deliver without a non-negative seq field")
		return
	}
	if c.delivered.has(seq) {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d delivered twice", seq))
		return
	}
	in, ok := c.injected[seq]
	if !ok {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d delivered but never injected", seq))
		return
	}
	delete(c.injected, seq)
	c.delivered.set(seq)
	got := identity(ev)
	if got.dlid == in.dlid && !c.checkDest(ev, seq, got.dlid) {
		return
	}
	for _, d := range []struct {
		name      string
		want, got int64
	}{{"slid", in.slid, got.slid}, {"dlid", in.dlid, got.dlid}, {"qpn", in.qpn, got.qpn}, {"psn", in.psn, got.psn}, {"icrc", in.icrc, got.icrc}} {
		if d.want != d.got {
			c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d corrupted: %s injected %d, delivered %d", seq, d.name, d.want, d.got))
			return
		}
	}
	if in.op != got.op {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d corrupted: op injected %s, delivered %s", seq, in.op, got.op))
	}
}

// requestOps are the opcode names a responder receives as requests.
var requestOps = func() map[string]bool {
	m := map[string]bool{}
	for op := 0; op < 256; op++ {
		o := ib.Opcode(op)
		if o.Valid() && o.IsRequest() {
			m[o.String()] = true
		}
	}
	return m
}()

// psnMod is the 24-bit PSN space.
const psnMod = 1 << 24

func (c *Checkers) checkPSN(ev *components.TraceEvent) {
	op, _ := ev.Str("op")
	if !requestOps[op] {
		return
	}
	qpn, ok1 := ev.Int("qpn")
	psn, ok2 := ev.Int("psn")
	if !ok1 || !ok2 {
		return
	}
	n, ok := ev.Int("psns")
	if !ok || n < 1 {
		n = 1
	}
	slid, _ := ev.Int("slid")
	dlid, _ := ev.Int("dlid")
	key := rcKey{slid, dlid, qpn}
	want, seen := c.psnNext[key]
	if !seen {
		c.psnNext[key] = (psn + n) % psnMod
		return
	}
	ahead := ((psn-want)%psnMod + psnMod) % psnMod
	switch {
	case ahead == 0:
		c.psnNext[key] = (psn + n) % psnMod
	case ahead < psnMod/2:
		c.fail(InvOrdering, ev, fmt.Sprintf("QP %d request PSN %d arrived, expected %d (a gap of %d)", qpn, psn, want, ahead))
	default:
		// Behind the expected PSN: a duplicate from a retry, allowed.
	}
}

// wqeMod is the range of a CQE's WQE counter (mlx5 wqe_counter, 16 bit).
const wqeMod = 1 << 16

func (c *Checkers) checkCQE(ev *components.TraceEvent) {
	qpn, ok1 := ev.Int("qpn")
	wqe, ok2 := ev.Int("wqe")
	queue, ok3 := ev.Str("queue")
	if !ok1 || !ok2 || !ok3 {
		// Without the queue a send and a receive completion on one QP
		// cannot be told apart (their counters are independent).
		return
	}
	key := qpKey{ev.Path, qpn, queue}
	if last, seen := c.wqeLast[key]; seen {
		// Serial-number order on the 16-bit counter: "after" means ahead
		// by less than half the range, so the counter may wrap.
		if ahead := ((wqe-last)%wqeMod + wqeMod) % wqeMod; ahead == 0 || ahead >= wqeMod/2 {
			c.fail(InvOrdering, ev, fmt.Sprintf("QP %d %s completion for WQE %d after WQE %d", qpn, queue, wqe, last))
		}
	}
	c.wqeLast[key] = wqe
}

func (c *Checkers) keyCheck(ev *components.TraceEvent) {
	qpn, _ := ev.Int("qpn")
	key := keyQP(ev, qpn)
	result, _ := ev.Str("result")
	if result != "pass" {
		delete(c.keyWins, key)
		return
	}
	addr, hasAddr := ev.Int("addr")
	n, hasLen := ev.Int("len")
	w := window{addr, addr + n}
	if !hasAddr || !hasLen {
		// A check that does not say its range vouches for the key only:
		// the QP may write anywhere until a check fails (weaker; emitters
		// should give addr and len).
		w = window{math.MinInt64, math.MaxInt64}
	}
	ws := append(c.keyWins[key], w)
	if len(ws) > maxKeyWindows {
		ws = ws[len(ws)-maxKeyWindows:]
	}
	c.keyWins[key] = ws
}

func (c *Checkers) dmaWrite(ev *components.TraceEvent) {
	qpn, ok := ev.Int("qpn")
	if !ok {
		c.fail(InvProtection, ev, "dma_write without a qpn: no key can cover it")
		return
	}
	addr, _ := ev.Int("addr")
	n, _ := ev.Int("len")
	for _, w := range c.keyWins[keyQP(ev, qpn)] {
		if addr >= w.lo && addr+n <= w.hi {
			return
		}
	}
	c.fail(InvProtection, ev, fmt.Sprintf("QP %d wrote %d bytes at 0x%x with no passed key check covering them", qpn, n, addr))
}

// wireState is one port's outgoing wire as its tx_start, tx_end and fc_send
// events show it.
type wireState struct {
	open   bool  // a tx_start whose tx_end has not come
	seq    int64 // the open (or, when closed, the last) packet's seq; -1 without one
	start  ib.PS // the open packet's tx_start
	vl     int64 // the open packet's vl and wire bytes, -1 when its tx_start had none
	bytes  int64
	freeAt ib.PS // the last tx_end: the wire carried a packet until then
}

func (c *Checkers) wire(path string) *wireState {
	w := c.wires[path]
	if w == nil {
		w = &wireState{seq: -1}
		c.wires[path] = w
	}
	return w
}

func intOr(ev *components.TraceEvent, key string, none int64) int64 {
	if v, ok := ev.Int(key); ok {
		return v
	}
	return none
}

// txStart opens the wire for a packet. The port writes the tx_end a packet
// owes before the next packet's tx_start even when both fall in one
// picosecond, so a packet still open here lost its tx_end.
func (c *Checkers) txStart(ev *components.TraceEvent) {
	w := c.wire(ev.Path)
	seq := intOr(ev, "seq", -1)
	c.wireFree(w, ev, fmt.Sprintf("packet seq %d", seq))
	w.open, w.seq, w.start = true, seq, ev.Time
	w.vl, w.bytes = intOr(ev, "vl", -1), intOr(ev, "bytes", -1)
}

func (c *Checkers) txEnd(ev *components.TraceEvent) {
	w := c.wire(ev.Path)
	seq := intOr(ev, "seq", -1)
	if !w.open {
		if seq == w.seq {
			c.fail(InvWire, ev, fmt.Sprintf("packet seq %d ended twice", seq))
		} else {
			c.fail(InvWire, ev, fmt.Sprintf("tx_end of packet seq %d with no packet on the wire", seq))
		}
		return
	}
	w.open, w.freeAt = false, ev.Time
	vl, bytes := intOr(ev, "vl", -1), intOr(ev, "bytes", -1)
	switch {
	case seq != w.seq:
		c.fail(InvWire, ev, fmt.Sprintf("tx_end of packet seq %d while packet seq %d is on the wire", seq, w.seq))
	case ev.Time < w.start:
		c.fail(InvWire, ev, fmt.Sprintf("packet seq %d ended at %d ps, before it started at %d ps", seq, ev.Time, w.start))
	case vl != w.vl || bytes != w.bytes:
		c.fail(InvWire, ev, fmt.Sprintf("packet seq %d started as vl %d of %d bytes, ended as vl %d of %d bytes", seq, w.vl, w.bytes, vl, bytes))
	}
	w.seq = seq
}

// fcSend checks that a flow-control packet starts on a wire no data packet
// occupies. The converse, a data packet starting while a flow-control
// packet is on the wire, is not checked: fc_send gives neither the packet's
// length nor the link's rate, so its tail's time is not in the trace, and a
// data packet's tx_end − tx_start is its serialization rounded to the
// picosecond, so the rate cannot be recovered from it exactly.
func (c *Checkers) fcSend(ev *components.TraceEvent) {
	c.wireFree(c.wire(ev.Path), ev, fmt.Sprintf("flow-control packet for VL %d", intOr(ev, "vl", -1)))
}

// wireFree fails ev, the start of the packet what on w, if a data packet
// still holds the wire: one with no tx_end yet, or one whose tx_end is later.
func (c *Checkers) wireFree(w *wireState, ev *components.TraceEvent, what string) {
	switch {
	case w.open:
		c.fail(InvWire, ev, fmt.Sprintf("%s started while packet seq %d (tx_start at %d ps) has no tx_end", what, w.seq, w.start))
	case ev.Time < w.freeAt:
		c.fail(InvWire, ev, fmt.Sprintf("%s started at %d ps while packet seq %d was on the wire until %d ps: two packets at once", what, ev.Time, w.seq, w.freeAt))
	}
}

// CompareData checks an RDMA transfer: dst (the bytes now in destination
// memory) must equal src. what names the transfer in the report.
func (c *Checkers) CompareData(t ib.PS, path, what string, src, dst []byte) {
	if len(src) != len(dst) {
		c.report(&Violation{Invariant: InvIntegrity, Path: path, Time: t,
			Detail: fmt.Sprintf("%s: source has %d bytes, destination %d", what, len(src), len(dst))})
		return
	}
	for i := range src {
		if src[i] != dst[i] {
			c.report(&Violation{Invariant: InvIntegrity, Path: path, Time: t,
				Detail: fmt.Sprintf("%s: byte %d is 0x%02x at the destination, 0x%02x at the source", what, i, dst[i], src[i])})
			return
		}
	}
}

// Finish runs the end-of-run checks at time now. idle says the fabric has
// drained (no packet in flight by design: the workload finished); only then
// are lost packets and unreturned credits violations.
func (c *Checkers) Finish(now ib.PS, idle bool) {
	if !idle {
		return
	}
	if len(c.injected) > 0 {
		seqs := make([]int64, 0, len(c.injected))
		for s := range c.injected {
			seqs = append(seqs, s)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		first := c.injected[seqs[0]]
		c.report(&Violation{Invariant: InvLossless, Path: first.path, Time: now,
			Detail: fmt.Sprintf("%d packets injected and never delivered; first seq %d (qpn %d psn %d), injected at %d ps",
				len(seqs), seqs[0], first.qpn, first.psn, first.at)})
	}
	if len(c.inBuf) > 0 {
		slots := make([]bufSlot, 0, len(c.inBuf))
		for sl := range c.inBuf {
			slots = append(slots, sl)
		}
		sort.Slice(slots, func(i, j int) bool {
			if slots[i].path != slots[j].path {
				return slots[i].path < slots[j].path
			}
			return slots[i].seq < slots[j].seq
		})
		c.report(&Violation{Invariant: InvBuffer, Path: slots[0].path, Time: now,
			Detail: fmt.Sprintf("idle fabric: %d packets still in buffers; first seq %d", len(slots), slots[0].seq)})
	}
	var onWire []string
	for path, w := range c.wires {
		if w.open {
			onWire = append(onWire, path)
		}
	}
	if len(onWire) > 0 {
		sort.Strings(onWire)
		w := c.wires[onWire[0]]
		c.report(&Violation{Invariant: InvWire, Path: onWire[0], Time: now,
			Detail: fmt.Sprintf("idle fabric: %d packets still on a wire; first seq %d, tx_start at %d ps and no tx_end", len(onWire), w.seq, w.start)})
	}
	keys := make([]vlKey, 0, len(c.credits))
	for k := range c.credits {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].path != keys[j].path {
			return keys[i].path < keys[j].path
		}
		return keys[i].vl < keys[j].vl
	})
	for _, k := range keys {
		s := c.credits[k]
		if !s.hasCap || s.avail == s.cap {
			continue
		}
		what := "leaked (never returned)"
		if s.avail > s.cap {
			what = "returned twice"
		}
		c.report(&Violation{Invariant: InvCredit, Path: k.String(), Time: now,
			Detail: fmt.Sprintf("idle fabric: %d credits available of %d (last change at %d ps): credits %s", s.avail, s.cap, s.at, what)})
	}
}

// Violations returns every violation so far, in order.
func (c *Checkers) Violations() []*Violation { return c.violations }

// Err returns the first violation, or nil.
func (c *Checkers) Err() error {
	if len(c.violations) == 0 {
		return nil
	}
	return c.violations[0]
}

// bitset is a growable set of non-negative integers (packet seqs are dense
// from 1, so this is a few bits per packet).
type bitset []uint64

func (b bitset) has(i int64) bool {
	w := i >> 6
	return w < int64(len(b)) && b[w]&(1<<(i&63)) != 0
}

func (b *bitset) set(i int64) {
	w := int(i >> 6)
	for w >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[w] |= 1 << (i & 63)
}
