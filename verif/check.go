package verif

import (
	"fmt"
	"math"
	"slices"
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
	InvRoute      = "route"          // a switch grants a packet only to an output its DLID's route allows (LFT port or AR group)
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
	// Routes, when set, holds every arb_grant to the routes the subnet
	// manager programmed: the output must be the DLID's LFT port or, for
	// a packet on an SL adaptive routing applies to, a port of its AR
	// group (the "route" invariant).
	Routes Routes
	// ReorderSLs relaxes the ordering invariant's PSN gap check for the
	// packets of these service levels (bit i for SL i): with adaptive
	// routing a packet on an AR SL may overtake an earlier one of its
	// flow. Packets on the other SLs are held to order. Lossless still
	// holds every packet to exactly one delivery.
	ReorderSLs uint16
	// Multicast, when set, holds every multicast group by MLID: the block
	// paths of its member hosts. A packet to one of its MLIDs must then be
	// delivered exactly once to every member but its sender and to no
	// other block (multicast.go); without it a multicast packet is held to
	// one delivery, as a unicast one.
	Multicast map[uint16][]string
	// OnViolation is called at each violation. The lead wires it to stop the
	// run (components.Sim.Stop) so the report is about the first failure.
	// nil: violations are only collected.
	OnViolation func(*Violation)
}

// Routes tells the route check where a switch may send a DLID's packets.
// fabric.Network implements it from the subnet manager's tables.
type Routes interface {
	// RouteSwitch returns an id for the switch whose output port announced
	// an arb_grant at path, or -1 when path is no switch port it knows.
	RouteSwitch(path string) int
	// RouteAllowed reports whether switch id may send a packet on service
	// level sl for dlid out of its output out (0-based, as arb_grant's out
	// field).
	RouteAllowed(id int, dlid uint16, sl uint8, out int) bool
}

// RoutesFrom is a Routes whose allowed ports also depend on the input a
// packet entered on (a Dragonfly+ spine's detours, taken only by packets
// from its own group's leaves). The route check uses it for a grant that
// names its input (arb_grant's in field).
type RoutesFrom interface {
	// RouteAllowedFrom is RouteAllowed for a packet that entered switch
	// id on input in (0-based, as arb_grant's in field).
	RouteAllowedFrom(id, in int, dlid uint16, sl uint8, out int) bool
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
//     A drop is a violation unless AllowDrops, or it is a link discard
//     (reason vcrc: a port discarded a corrupted data packet, link.ber > 0):
//     that packet, in flight with its injected identity, is lost and may
//     never be delivered; a flow-control packet's loss (reason lpcrc) loses
//     no data. At Finish, any packet injected and neither delivered nor
//     discarded by a link is lost. A unicast packet is delivered at its
//     destination: a block that injected packets takes only those for the
//     SLID of its first one, and every packet for one DLID is delivered at
//     the same block (LMC 0); else it was misrouted. With Multicast, a
//     packet to a group's MLID is delivered once at every member but its
//     sender and at no other block (multicast.go); the route check holds
//     its copies to the group's MFT entries (MulticastRoutes).
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
//     A gap is allowed while the expected PSN's request was discarded by a
//     link and has not arrived since (the responder NAKs, the requester
//     resends it). Packets on an SL in ReorderSLs (adaptive routing)
//     are not held to order.
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

	// Per-path state is found once per event (pathOf: a map lookup, or
	// none when the event has the previous event's path); what is kept per
	// packet, QP or buffer is keyed by the path's index, never its name.
	paths    []*pathState
	pathIdx  map[string]*pathState
	lastPath *pathState // the previous event's
	queues   []string   // queue names seen, by qpKey.queue; "" is 0

	injected   map[int64]pktIdentity // in flight, by seq
	delivered  bitset                // by seq
	discarded  bitset                // by seq: packets a link discarded (drop reason=vcrc)
	lostReq    map[rcPSN]bool        // requests a link discarded whose PSN has not arrived since
	otherVLs   map[vlKey]*vlState    // (path, vl) with vl outside 0..maxVLIndex-2 (not a real VL)
	inBuf      map[bufSlot]int64     // packets in a buffer: blocks, by (path, seq)
	psnNext    map[rcKey]int64       // next expected request PSN at a responder QP, by connection
	lidAt      map[int64]int32       // by DLID: the path index of the block that took the first packet delivered to it
	wqeLast    map[qpKey]int64       // last completed WQE index per (path, qpn, queue)
	keyWins    map[qpKey][]window
	mcast      map[int64]*mcFlight // multicast packets in flight, by seq
	mcGroups   map[int64]*mcGroup  // by MLID, made on the first packet
	violations []*Violation
}

// pathState is what the checkers keep about one component path.
type pathState struct {
	name   string
	idx    int32
	hasLID bool  // the block injected a packet
	srcLID int64 // the SLID of the first packet it injected (its LID)
	wire   wireState
	vls    []vlState // by vl+1 (vl -1: events without a vl), grown on use
	// routeSw is the route check's switch id for an arb_grant at this
	// path: -2 until asked, -1 for none.
	routeSw int
}

// vlState is one (path, vl)'s credit and buffer state.
type vlState struct {
	credit    creditState
	hasCredit bool  // an event with avail came
	bufOcc    int64 // blocks in the buffer, by the checker's own count
}

// maxVLIndex bounds pathState.vls: IB has VLs 0 to 15.
const maxVLIndex = 17

type pktIdentity struct {
	slid, dlid, qpn, psn, icrc int64
	op                         string
	at                         ib.PS
	path                       int32
}

type creditState struct {
	avail, cap int64
	hasCap     bool
	at         ib.PS
}

type window struct{ lo, hi int64 } // [lo, hi)

// vlKey names a (path, vl) in a report.
type vlKey struct {
	path int32
	vl   int64 // -1 when the event has no vl
}

// qpKey is a map key without strings, so the checkers stay cheap enough to
// leave on: the path's index, the QP, and the queue name's index in
// Checkers.queues.
type qpKey struct {
	path  int32
	queue int32
	qpn   int64
}

// rcKey is one connection's request stream: the requester's and the
// responder's LIDs and the responder's QP (LMC 0: one LID per port).
type rcKey struct{ slid, dlid, qpn int64 }

// rcPSN is one request PSN of a connection.
type rcPSN struct {
	rcKey
	psn int64
}

// firstMulticastLID is where the IB multicast LIDs (and the permissive
// LID) start; a packet to one of them is delivered at several ports.
const firstMulticastLID = 0xC000

type bufSlot struct {
	path int32
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
		pathIdx:  map[string]*pathState{},
		queues:   []string{""},
		injected: map[int64]pktIdentity{},
		otherVLs: map[vlKey]*vlState{},
		inBuf:    map[bufSlot]int64{},
		psnNext:  map[rcKey]int64{},
		lostReq:  map[rcPSN]bool{},
		lidAt:    map[int64]int32{},
		wqeLast:  map[qpKey]int64{},
		keyWins:  map[qpKey][]window{},
		mcast:    map[int64]*mcFlight{},
		mcGroups: map[int64]*mcGroup{},
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

// evFields holds the fields of one event the checkers read, found in one
// pass over the event's fields (an event has a dozen; looking each up by
// name scanned them all again). As TraceEvent.Int and Str do, a key counts
// at its first occurrence only, and only with its type: an integer field
// read as a string (or the converse) is absent.
type evFields struct {
	has                                                       uint32 // bit (1 << f*) per integer field present
	seen                                                      uint32 // bit per key present, whatever its type
	seq, vl, sl, slid, dlid, qpn, psn, psns, icrc, avail, occ int64
	capBlocks, credits, bytes, addr, length, wqe, out, in     int64
	op, queue, result, reason                                 string
	hasOp, hasQueue, hasResult, hasReason                     bool
}

// The evFields bits.
const (
	fSeq = iota
	fVL
	fSLID
	fDLID
	fQPN
	fPSN
	fPSNs
	fICRC
	fAvail
	fOcc
	fCap
	fCredits
	fBytes
	fAddr
	fLen
	fWQE
	fOut
	fOp
	fQueue
	fResult
	fReason
	fSL
	fIn
)

func (f *evFields) parse(ev *components.TraceEvent) {
	*f = evFields{}
	for i := range ev.Fields {
		fl := &ev.Fields[i]
		var bit int
		var dst *int64
		switch fl.Key {
		case "seq":
			bit, dst = fSeq, &f.seq
		case "vl":
			bit, dst = fVL, &f.vl
		case "sl":
			bit, dst = fSL, &f.sl
		case "slid":
			bit, dst = fSLID, &f.slid
		case "dlid":
			bit, dst = fDLID, &f.dlid
		case "qpn":
			bit, dst = fQPN, &f.qpn
		case "psn":
			bit, dst = fPSN, &f.psn
		case "psns":
			bit, dst = fPSNs, &f.psns
		case "icrc":
			bit, dst = fICRC, &f.icrc
		case "avail":
			bit, dst = fAvail, &f.avail
		case "occ":
			bit, dst = fOcc, &f.occ
		case "cap":
			bit, dst = fCap, &f.capBlocks
		case "credits":
			bit, dst = fCredits, &f.credits
		case "bytes":
			bit, dst = fBytes, &f.bytes
		case "addr":
			bit, dst = fAddr, &f.addr
		case "len":
			bit, dst = fLen, &f.length
		case "wqe":
			bit, dst = fWQE, &f.wqe
		case "out":
			bit, dst = fOut, &f.out
		case "in":
			bit, dst = fIn, &f.in
		case "op":
			bit = fOp
		case "queue":
			bit = fQueue
		case "result":
			bit = fResult
		case "reason":
			bit = fReason
		default:
			continue
		}
		if f.seen&(1<<bit) != 0 {
			continue
		}
		f.seen |= 1 << bit
		if dst != nil {
			if !fl.IsStr {
				*dst = fl.Int
				f.has |= 1 << bit
			}
			continue
		}
		if !fl.IsStr {
			continue
		}
		switch bit {
		case fOp:
			f.op, f.hasOp = fl.Str, true
		case fQueue:
			f.queue, f.hasQueue = fl.Str, true
		case fResult:
			f.result, f.hasResult = fl.Str, true
		case fReason:
			f.reason, f.hasReason = fl.Str, true
		}
	}
}

// ok reports whether the integer field bit is present.
func (f *evFields) ok(bit int) bool { return f.has&(1<<bit) != 0 }

// or returns the integer field bit, or none when it is absent.
func (f *evFields) or(bit int, v, none int64) int64 {
	if f.ok(bit) {
		return v
	}
	return none
}

// Observe checks one event.
func (c *Checkers) Observe(ev *components.TraceEvent) {
	c.remember(ev)
	var f evFields
	f.parse(ev)
	if f.ok(fAvail) {
		c.checkCredit(ev, &f)
	}
	if f.ok(fOcc) {
		if occ, capBlocks, hasCap := f.occ, f.capBlocks, f.ok(fCap); occ < 0 || hasCap && occ > capBlocks {
			c.fail(InvBuffer, ev, fmt.Sprintf("buffer occupancy %d outside 0..%d", occ, capBlocks))
		}
	}
	switch ev.Kind {
	case components.TraceInject:
		c.inject(ev, &f)
	case components.TraceDeliver:
		c.deliver(ev, &f)
		c.checkPSN(ev, &f)
	case components.TraceDrop:
		switch {
		case f.hasReason && f.reason == components.DropVCRC:
			c.linkDiscard(ev, &f)
		case f.hasReason && f.reason == components.DropLPCRC:
			// A flow-control packet lost: the next one carries the same
			// counters, no data is lost.
		case !c.cfg.AllowDrops:
			c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d dropped (reason %q) in a lossless fabric", f.or(fSeq, f.seq, 0), f.reason))
		}
	case components.TraceArbGrant:
		if c.cfg.Routes != nil {
			c.checkRoute(ev, &f)
		}
	case components.TraceBufEnq:
		c.bufEnq(ev, &f)
	case components.TraceBufDeq:
		c.bufDeq(ev, &f)
	case components.TraceCQE:
		c.checkCQE(ev, &f)
	case components.TraceKeyCheck:
		c.keyCheck(ev, &f)
	case components.TraceDMAWrite:
		c.dmaWrite(ev, &f)
	case components.TraceTxStart:
		c.txStart(ev, &f)
	case components.TraceTxEnd:
		c.txEnd(ev, &f)
	case components.TraceFCSend:
		c.fcSend(ev, &f)
	}
}

// pathOf returns ev.Path's state, made on first use. Blocks announce runs
// of events on one path, so the previous event's path is tried first (its
// string is usually the very same, compared by pointer).
func (c *Checkers) pathOf(ev *components.TraceEvent) *pathState {
	if p := c.lastPath; p != nil && p.name == ev.Path {
		return p
	}
	p := c.pathIdx[ev.Path]
	if p == nil {
		p = &pathState{name: ev.Path, idx: int32(len(c.paths)), wire: wireState{seq: -1}, routeSw: -2}
		c.paths = append(c.paths, p)
		c.pathIdx[ev.Path] = p
	}
	c.lastPath = p
	return p
}

// vlOf returns the state of (p, vl); vl is -1 for an event without one.
func (c *Checkers) vlOf(p *pathState, vl int64) *vlState {
	i := vl + 1
	if i < 0 || i >= maxVLIndex {
		k := vlKey{p.idx, vl}
		s := c.otherVLs[k]
		if s == nil {
			s = &vlState{}
			c.otherVLs[k] = s
		}
		return s
	}
	for int64(len(p.vls)) <= i {
		p.vls = append(p.vls, vlState{})
	}
	return &p.vls[i]
}

// qpOf returns the key of (ev's path, qpn, queue).
func (c *Checkers) qpOf(ev *components.TraceEvent, qpn int64, queue string) qpKey {
	q := -1
	for i, name := range c.queues {
		if name == queue {
			q = i
			break
		}
	}
	if q < 0 {
		q = len(c.queues)
		c.queues = append(c.queues, queue)
	}
	return qpKey{path: c.pathOf(ev).idx, queue: int32(q), qpn: qpn}
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

func (c *Checkers) checkCredit(ev *components.TraceEvent, f *evFields) {
	avail, capBlocks, hasCap := f.avail, f.or(fCap, f.capBlocks, 0), f.ok(fCap)
	switch {
	case avail < 0:
		c.fail(InvCredit, ev, fmt.Sprintf("credit count %d is negative", avail))
	case hasCap && avail > capBlocks:
		c.fail(InvCredit, ev, fmt.Sprintf("credit count %d above the peer's buffer of %d blocks (a credit returned twice?)", avail, capBlocks))
	}
	s := c.vlOf(c.pathOf(ev), f.or(fVL, f.vl, -1))
	s.credit, s.hasCredit = creditState{avail: avail, cap: capBlocks, hasCap: hasCap, at: ev.Time}, true
}

// bufEnq and bufDeq keep the checker's own account of each buffer, by
// packet: a packet leaves a buffer (and its credits go back) exactly once.
// Counting by packet rather than trusting the model's occ catches a credit
// returned twice even while the buffer is not empty.
func (c *Checkers) bufEnq(ev *components.TraceEvent, f *evFields) {
	if !f.ok(fSeq) {
		return
	}
	seq, blocks := f.seq, f.or(fCredits, f.credits, 0)
	p := c.pathOf(ev)
	slot := bufSlot{p.idx, seq}
	if _, dup := c.inBuf[slot]; dup {
		c.fail(InvBuffer, ev, fmt.Sprintf("packet seq %d enqueued twice", seq))
		return
	}
	c.inBuf[slot] = blocks
	s := c.vlOf(p, f.or(fVL, f.vl, -1))
	s.bufOcc += blocks
	if f.ok(fCap) && s.bufOcc > f.capBlocks {
		c.fail(InvBuffer, ev, fmt.Sprintf("buffer holds %d blocks of packets, above its %d", s.bufOcc, f.capBlocks))
	}
	if f.ok(fOcc) && f.occ != s.bufOcc {
		c.fail(InvBuffer, ev, fmt.Sprintf("buffer accounting: model says %d blocks used, its packets hold %d", f.occ, s.bufOcc))
	}
}

func (c *Checkers) bufDeq(ev *components.TraceEvent, f *evFields) {
	if !f.ok(fSeq) {
		return
	}
	seq := f.seq
	p := c.pathOf(ev)
	slot := bufSlot{p.idx, seq}
	blocks, in := c.inBuf[slot]
	if !in {
		c.fail(InvCredit, ev, fmt.Sprintf("packet seq %d left a buffer it is not in: its credits returned twice (or never taken)", seq))
		return
	}
	delete(c.inBuf, slot)
	s := c.vlOf(p, f.or(fVL, f.vl, -1))
	s.bufOcc -= blocks
	if f.ok(fOcc) && f.occ != s.bufOcc {
		c.fail(InvBuffer, ev, fmt.Sprintf("buffer accounting: model says %d blocks used, its packets hold %d", f.occ, s.bufOcc))
	}
}

func (c *Checkers) identity(ev *components.TraceEvent, f *evFields) pktIdentity {
	return pktIdentity{slid: f.or(fSLID, f.slid, 0), dlid: f.or(fDLID, f.dlid, 0), qpn: f.or(fQPN, f.qpn, 0),
		psn: f.or(fPSN, f.psn, 0), icrc: f.or(fICRC, f.icrc, 0), op: f.op, at: ev.Time, path: c.pathOf(ev).idx}
}

func (c *Checkers) inject(ev *components.TraceEvent, f *evFields) {
	seq := f.seq
	if !f.ok(fSeq) || seq < 0 {
		c.fail(InvLossless, ev, "inject without a non-negative seq field")
		return
	}
	if c.isMulticast(f.or(fDLID, f.dlid, 0)) {
		c.mcInject(ev, f, seq)
		return
	}
	if _, dup := c.injected[seq]; dup || c.delivered.has(seq) || c.discarded.has(seq) {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d injected twice", seq))
		return
	}
	id := c.identity(ev, f)
	c.injected[seq] = id
	if p := c.pathOf(ev); !p.hasLID {
		p.hasLID, p.srcLID = true, id.slid
	}
	if requestOps[id.op] {
		// The connection's first request starts the responder's expected
		// PSN, so packets reordered from the very first are a gap too.
		if k := (rcKey{id.slid, id.dlid, id.qpn}); !c.hasPSN(k) {
			c.psnNext[k] = id.psn
		}
	}
}

// routeSwitch is the switch index the route tables know ev's path by
// (looked up once per path), or a negative number for a path that is no
// switch port.
func (c *Checkers) routeSwitch(ev *components.TraceEvent) int {
	p := c.pathOf(ev)
	if p.routeSw == -2 {
		p.routeSw = c.cfg.Routes.RouteSwitch(p.name)
	}
	return p.routeSw
}

// checkRoute holds a grant to its DLID's route: a switch that sends a
// packet out of a port its subnet manager did not route the DLID to has
// misrouted it, whether or not it still reaches its destination.
func (c *Checkers) checkRoute(ev *components.TraceEvent, f *evFields) {
	if f.ok(fDLID) && f.ok(fOut) && c.isMulticast(f.dlid) {
		c.checkMulticastRoute(ev, f)
		return
	}
	if !f.ok(fDLID) || !f.ok(fOut) || f.dlid >= firstMulticastLID || f.dlid <= 0 {
		return
	}
	sw := c.routeSwitch(ev)
	if sw < 0 {
		return
	}
	// A packet's LRH always carries its SL; an event without one is taken
	// as SL 0, IB's default.
	sl := uint8(f.or(fSL, f.sl, 0) & 15)
	if !c.cfg.Routes.RouteAllowed(sw, uint16(f.dlid), sl, int(f.out)) {
		c.fail(InvRoute, ev, fmt.Sprintf("packet seq %d for dlid %d on SL %d granted to output %d, which is neither the dlid's LFT port nor, on an SL adaptive routing applies to, in its adaptive routing group (misrouted)",
			f.or(fSeq, f.seq, -1), f.dlid, sl, f.out))
		return
	}
	// A port of the group may still be closed to the packet's input (a
	// Dragonfly+ spine's detours, for a packet that crossed a global cable).
	if rf, ok := c.cfg.Routes.(RoutesFrom); ok && f.ok(fIn) && !rf.RouteAllowedFrom(sw, int(f.in), uint16(f.dlid), sl, int(f.out)) {
		c.fail(InvRoute, ev, fmt.Sprintf("packet seq %d for dlid %d on SL %d from input %d granted to output %d, a detour of its adaptive routing group that a packet from that input may not take (misrouted)",
			f.or(fSeq, f.seq, -1), f.dlid, sl, f.in, f.out))
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
	p := c.pathOf(ev)
	if p.hasLID && p.srcLID != dlid {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d for dlid %d delivered at %s, whose LID is %d (misrouted)", seq, dlid, ev.Path, p.srcLID))
		return false
	}
	if at, ok := c.lidAt[dlid]; ok && at != p.idx {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d for dlid %d delivered at %s, but dlid %d's packets were delivered at %s (misrouted)", seq, dlid, ev.Path, dlid, c.paths[at].name))
		return false
	}
	c.lidAt[dlid] = p.idx
	return true
}

// leaveFlight takes the packet of a deliver or a link discard out of
// flight: it must carry a seq, have been injected, and be neither
// delivered nor discarded yet; it is then marked as the event says (done).
// It returns the packet's injected identity, or false after failing with
// the message of the rule it broke (msgs: no seq; then, for seq, already
// delivered, already discarded, never injected).
func (c *Checkers) leaveFlight(ev *components.TraceEvent, f *evFields, done *bitset, msgs *[4]string) (pktIdentity, bool) {
	seq := f.seq
	var broke string
	in, injected := c.injected[seq]
	switch {
	case !f.ok(fSeq) || seq < 0:
		c.fail(InvLossless, ev, msgs[0])
		return pktIdentity{}, false
	case c.delivered.has(seq):
		broke = msgs[1]
	case c.discarded.has(seq):
		broke = msgs[2]
	case !injected:
		broke = msgs[3]
	}
	if broke != "" {
		c.fail(InvLossless, ev, fmt.Sprintf(broke, seq))
		return pktIdentity{}, false
	}
	delete(c.injected, seq)
	done.set(seq)
	return in, true
}

var deliverMsgs = [4]string{"deliver without a non-negative seq field", "packet seq %d delivered twice",
	"packet seq %d delivered after a link discarded it", "packet seq %d delivered but never injected"}

var discardMsgs = [4]string{"link discard without a non-negative seq field", "packet seq %d discarded by a link after it was delivered",
	"packet seq %d discarded by a link twice", "packet seq %d discarded by a link but never injected"}

func (c *Checkers) deliver(ev *components.TraceEvent, f *evFields) {
	seq := f.seq
	if f.ok(fSeq) && seq >= 0 && c.isMulticast(f.or(fDLID, f.dlid, 0)) {
		c.mcDeliver(ev, f, seq)
		return
	}
	in, ok := c.leaveFlight(ev, f, &c.delivered, &deliverMsgs)
	if !ok {
		return
	}
	got := c.identity(ev, f)
	if got.dlid == in.dlid && !c.checkDest(ev, seq, got.dlid) {
		return
	}
	if name, want, had, bad := headerDiff(in, got); bad {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d corrupted: %s injected %d, delivered %d", seq, name, want, had))
		return
	}
	if in.op != got.op {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d corrupted: op injected %s, delivered %s", seq, in.op, got.op))
	}
}

// headerDiff returns the first header field (slid, dlid, qpn, psn, icrc)
// in which got differs from the injected in, with both values.
func headerDiff(in, got pktIdentity) (name string, want, had int64, differs bool) {
	for _, d := range [...]struct {
		name      string
		want, got int64
	}{{"slid", in.slid, got.slid}, {"dlid", in.dlid, got.dlid}, {"qpn", in.qpn, got.qpn}, {"psn", in.psn, got.psn}, {"icrc", in.icrc, got.icrc}} {
		if d.want != d.got {
			return d.name, d.want, d.got, true
		}
	}
	return "", 0, 0, false
}

// linkDiscard takes a packet a link discarded as corrupted (drop reason
// vcrc) out of flight: it must be in flight, carry its injected identity,
// and is never delivered after. A discarded request lets its connection's
// responder see a gap at its PSN until the PSN arrives again.
func (c *Checkers) linkDiscard(ev *components.TraceEvent, f *evFields) {
	seq := f.seq
	in, ok := c.leaveFlight(ev, f, &c.discarded, &discardMsgs)
	if !ok {
		return
	}
	got := c.identity(ev, f)
	if name, want, had, bad := headerDiff(in, got); bad {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d changed before a link discarded it: %s injected %d, discarded %d", seq, name, want, had))
		return
	}
	if requestOps[in.op] {
		c.lostReq[rcPSN{rcKey{in.slid, in.dlid, in.qpn}, in.psn}] = true
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

func (c *Checkers) checkPSN(ev *components.TraceEvent, f *evFields) {
	if !requestOps[f.op] || c.cfg.ReorderSLs&(1<<(f.or(fSL, f.sl, 0)&15)) != 0 {
		return
	}
	if c.isMulticast(f.or(fDLID, f.dlid, 0)) {
		// Unreliable datagrams: no responder PSN to hold them to (the
		// connection key would be shared by every member).
		return
	}
	if !f.ok(fQPN) || !f.ok(fPSN) {
		return
	}
	qpn, psn := f.qpn, f.psn
	n := f.psns
	if !f.ok(fPSNs) || n < 1 {
		n = 1
	}
	key := rcKey{f.or(fSLID, f.slid, 0), f.or(fDLID, f.dlid, 0), qpn}
	want, seen := c.psnNext[key]
	if !seen {
		c.psnNext[key] = (psn + n) % psnMod
		return
	}
	ahead := ((psn-want)%psnMod + psnMod) % psnMod
	switch {
	case ahead == 0:
		c.psnNext[key] = (psn + n) % psnMod
		delete(c.lostReq, rcPSN{key, psn})
	case ahead < psnMod/2 && c.lostReq[rcPSN{key, want}]:
		// The expected request was discarded by a link: the responder
		// sees the gap and NAKs it; its resend closes it.
	case ahead < psnMod/2:
		c.fail(InvOrdering, ev, fmt.Sprintf("QP %d request PSN %d arrived, expected %d (a gap of %d)", qpn, psn, want, ahead))
	default:
		// Behind the expected PSN: a duplicate from a retry, allowed.
	}
}

// wqeMod is the range of a CQE's WQE counter (mlx5 wqe_counter, 16 bit).
const wqeMod = 1 << 16

func (c *Checkers) checkCQE(ev *components.TraceEvent, f *evFields) {
	if !f.ok(fQPN) || !f.ok(fWQE) || !f.hasQueue {
		// Without the queue a send and a receive completion on one QP
		// cannot be told apart (their counters are independent).
		return
	}
	qpn, wqe, queue := f.qpn, f.wqe, f.queue
	key := c.qpOf(ev, qpn, queue)
	if last, seen := c.wqeLast[key]; seen {
		// Serial-number order on the 16-bit counter: "after" means ahead
		// by less than half the range, so the counter may wrap.
		if ahead := ((wqe-last)%wqeMod + wqeMod) % wqeMod; ahead == 0 || ahead >= wqeMod/2 {
			c.fail(InvOrdering, ev, fmt.Sprintf("QP %d %s completion for WQE %d after WQE %d", qpn, queue, wqe, last))
		}
	}
	c.wqeLast[key] = wqe
}

func (c *Checkers) keyCheck(ev *components.TraceEvent, f *evFields) {
	key := c.qpOf(ev, f.or(fQPN, f.qpn, 0), "")
	if f.result != "pass" {
		delete(c.keyWins, key)
		return
	}
	addr, n := f.or(fAddr, f.addr, 0), f.or(fLen, f.length, 0)
	w := window{addr, addr + n}
	if !f.ok(fAddr) || !f.ok(fLen) {
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

func (c *Checkers) dmaWrite(ev *components.TraceEvent, f *evFields) {
	if !f.ok(fQPN) {
		c.fail(InvProtection, ev, "dma_write without a qpn: no key can cover it")
		return
	}
	qpn := f.qpn
	addr, n := f.or(fAddr, f.addr, 0), f.or(fLen, f.length, 0)
	for _, w := range c.keyWins[c.qpOf(ev, qpn, "")] {
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

// txStart opens the wire for a packet. The port writes the tx_end a packet
// owes before the next packet's tx_start even when both fall in one
// picosecond, so a packet still open here lost its tx_end.
func (c *Checkers) txStart(ev *components.TraceEvent, f *evFields) {
	w := &c.pathOf(ev).wire
	seq := f.or(fSeq, f.seq, -1)
	c.wireFree(w, ev, false, seq)
	w.open, w.seq, w.start = true, seq, ev.Time
	w.vl, w.bytes = f.or(fVL, f.vl, -1), f.or(fBytes, f.bytes, -1)
}

func (c *Checkers) txEnd(ev *components.TraceEvent, f *evFields) {
	w := &c.pathOf(ev).wire
	seq := f.or(fSeq, f.seq, -1)
	if !w.open {
		if seq == w.seq {
			c.fail(InvWire, ev, fmt.Sprintf("packet seq %d ended twice", seq))
		} else {
			c.fail(InvWire, ev, fmt.Sprintf("tx_end of packet seq %d with no packet on the wire", seq))
		}
		return
	}
	w.open, w.freeAt = false, ev.Time
	vl, bytes := f.or(fVL, f.vl, -1), f.or(fBytes, f.bytes, -1)
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
func (c *Checkers) fcSend(ev *components.TraceEvent, f *evFields) {
	c.wireFree(&c.pathOf(ev).wire, ev, true, f.or(fVL, f.vl, -1))
}

// wireFree fails ev, the start of a packet on w, if a data packet still
// holds the wire: one with no tx_end yet, or one whose tx_end is later. The
// packet is a flow-control packet for VL n when fc, else data packet seq n
// (named only in a report, so that a passing check formats nothing).
func (c *Checkers) wireFree(w *wireState, ev *components.TraceEvent, fc bool, n int64) {
	if !w.open && ev.Time >= w.freeAt {
		return
	}
	what := fmt.Sprintf("packet seq %d", n)
	if fc {
		what = fmt.Sprintf("flow-control packet for VL %d", n)
	}
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
	c.mcFinish(now)
	if len(c.injected) > 0 {
		seqs := make([]int64, 0, len(c.injected))
		for s := range c.injected {
			seqs = append(seqs, s)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		first := c.injected[seqs[0]]
		c.report(&Violation{Invariant: InvLossless, Path: c.paths[first.path].name, Time: now,
			Detail: fmt.Sprintf("%d packets injected and never delivered; first seq %d (qpn %d psn %d), injected at %d ps",
				len(seqs), seqs[0], first.qpn, first.psn, first.at)})
	}
	if len(c.inBuf) > 0 {
		slots := make([]bufSlot, 0, len(c.inBuf))
		for sl := range c.inBuf {
			slots = append(slots, sl)
		}
		sort.Slice(slots, func(i, j int) bool {
			if pi, pj := c.paths[slots[i].path].name, c.paths[slots[j].path].name; pi != pj {
				return pi < pj
			}
			return slots[i].seq < slots[j].seq
		})
		c.report(&Violation{Invariant: InvBuffer, Path: c.paths[slots[0].path].name, Time: now,
			Detail: fmt.Sprintf("idle fabric: %d packets still in buffers; first seq %d", len(slots), slots[0].seq)})
	}
	var onWire []*pathState
	for _, p := range c.paths {
		if p.wire.open {
			onWire = append(onWire, p)
		}
	}
	if len(onWire) > 0 {
		first := slices.MinFunc(onWire, func(a, b *pathState) int { return strings.Compare(a.name, b.name) })
		c.report(&Violation{Invariant: InvWire, Path: first.name, Time: now,
			Detail: fmt.Sprintf("idle fabric: %d packets still on a wire; first seq %d, tx_start at %d ps and no tx_end", len(onWire), first.wire.seq, first.wire.start)})
	}
	var keys []vlKey
	for _, p := range c.paths {
		for i := range p.vls {
			if p.vls[i].hasCredit {
				keys = append(keys, vlKey{p.idx, int64(i) - 1})
			}
		}
	}
	for k, s := range c.otherVLs {
		if s.hasCredit {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if pi, pj := c.paths[keys[i].path].name, c.paths[keys[j].path].name; pi != pj {
			return pi < pj
		}
		return keys[i].vl < keys[j].vl
	})
	for _, k := range keys {
		s := c.vlOf(c.paths[k.path], k.vl).credit
		if !s.hasCap || s.avail == s.cap {
			continue
		}
		what := "leaked (never returned)"
		if s.avail > s.cap {
			what = "returned twice"
		}
		c.report(&Violation{Invariant: InvCredit, Path: fmt.Sprintf("%s vl=%d", c.paths[k.path].name, k.vl), Time: now,
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
