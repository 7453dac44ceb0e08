package components

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/ib"
)

// Engine is a serial discrete-event engine that implements Akita's
// sim.Engine interface for hcasim's own events. It differs from Akita's
// SerialEngine in what the model needs on its hot path:
//
//   - the queue is a typed 4-ary heap ordered by (picoseconds, class,
//     sequence number): no float comparison, no interface call per
//     comparison, no mutex per push and pop;
//   - events of the same picosecond run in the order they were scheduled
//     (FIFO), after which "late" events (Sim.ScheduleLate) run, then "last"
//     ones (Sim.ScheduleLast) by rank, so ties never depend on heap layout;
//   - engine hooks are invoked only when some hook is attached.
//
// The order is a strict total order (sequence numbers are unique, and so
// are the (picosecond, rank) pairs of last events), so the
// sequence of events handled does not depend on how the queue is built: any
// correct priority queue yields the same run.
//
// Most events of a fabric are scheduled a fixed delay ahead: a head arrives
// one cable latency after it left, a wire goes idle one serialization time
// (of a fixed packet size) after it started, flow-control packets and
// refresh timers recur with constant delays. Events with the same delay and
// the same class are scheduled at non-decreasing times (now never goes
// back) with increasing sequence numbers, so a FIFO of them is already in
// queue order. The engine keeps up to numLanes such FIFOs ("lanes", each for
// one delay) beside the heap; an event goes to a lane of its delay if the
// lane table knows one, or claims an empty lane (unless the table could
// only make room for its hint by dropping a busy lane's: see laneFor),
// else to the heap. A
// tournament tree over the lanes' heads finds the least of them in
// log2(numLanes) steps, and the next event is the lesser of that and the
// heap's top: O(1) heap work for lane events instead of O(log n).
//
// A lane holds Sim's events by value, in a ring read in order (see lane);
// the heap holds pooled events behind pointers: last events (ordered by
// rank), events with a reserved place (ScheduleReserved), events posted by
// another partition (Deliver), anything scheduled through Akita's
// interface (Schedule), and the rare event whose delay finds no lane.
//
// Which delay owns which lane only affects speed, never order: every lane is
// sorted whatever delays share or split lanes, and the tree and the heap
// always yield the least (time, late, sequence) overall. A fabric of 1,024
// hosts has some twenty frequent delays (cable, serialization of each packet
// size, pipeline steps, allocation wake-ups a few cycles ahead), and its
// lanes rarely drain; with 16 lanes claimed first come, first served, two
// thirds of its events went to a 12,000-entry heap.
//
// Akita's SerialEngine remains selectable (sim.engine: akita); both engines
// run the same model code. docs/performance.md compares them.
type Engine struct {
	sim.HookableBase

	now      ib.PS
	seq      uint64
	heap     []heapEntry
	paused   atomic.Bool
	handlers []sim.SimulationEndHandler

	laneDelay [numLanes]uint64    // per lane: delay<<2 | class of its events
	laneHead  [numLanes]orderKey  // per lane: its first event's order key; idle lanes sort last
	laneBusy  uint64              // lanes holding events
	tree      [numLanes]uint8     // tournament tree: tree[1] is the lane with the least head, tree[k] the least of its two children
	laneTable [laneBuckets]bucket // delay → lane hints
	lanes     [numLanes]lane
	grow      uint64 // lanes with spilled events (see lane): grown before the next event runs

	// The partitions of a Group run engines on different cores: keep each
	// one's lines apart from whatever is allocated next to it.
	_ [64]byte
}

// numLanes is the number of fixed-delay FIFOs (see Engine); a power of two.
const numLanes = 64

// laneBuckets is the number of buckets of the delay → lane table.
const laneBuckets = 64

// bucket holds up to four delay → lane hints. A hint may be stale (its lane
// since taken by another delay); laneFor checks laneDelay before using it.
type bucket struct {
	dk   [4]uint64
	lane [4]uint8
}

// idleHead sorts after every real event.
var idleHead = orderKey{at: math.MaxInt64, key: math.MaxUint64}

// orderKey is where an event sorts: by picosecond, then key. key packs the
// tie-breaks into one integer: the class in the top two bits (late events of
// a picosecond after the primary ones, last events after both), then the
// scheduling sequence number (FIFO among equals), or a last event's rank.
// Lane heads are kept as a dense array of them so that finding the next
// event reads one array.
type orderKey struct {
	at  ib.PS
	key uint64
}

func (a *orderKey) less(b *orderKey) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

// lane is a FIFO ring of events that share one delay and class, held by
// value. A pooled event behind a pointer is a line of its own, cold by the
// time it runs in a large fabric; in the ring, popping a lane's head reads
// the next head's key, beside that event, so the line an event runs from
// was read with its lane's order, and the ring is written and read in
// sequence (grow keeps it tight, so a new event goes to a line read
// shortly before).
//
// A slot's event is what Sim.Schedule returns for its caller to fill in and
// what the handler receives, so slots never move or get overwritten while
// a pointer to them may be live:
//   - a lane never fills its last free slot (room), so a push made while the
//     lane's previous head is being handled cannot land on it (that slot is
//     the one just before the head);
//   - a full lane does not grow at once: the events that come for it wait,
//     in order and from the Sim's pool, in its spill, and the ring grows and
//     takes them by value before the next event runs (Engine.grow), when no
//     handler runs and every pointer to a slot has been given up.
//
// While the spill holds events the ring is full (only a pop makes room, and
// none happens before the spill is emptied), so a push with room never
// overtakes a spilled event.
type lane struct {
	buf   []laneSlot // ring (nil before the lane's first event)
	head  int        // index of the first event
	n     int        // events held in the ring
	spill []spilled  // events after the ring's, while it is full
}

// laneSlot is one event of a lane: its order key's tie-break (the time is
// the event's own) and the event.
type laneSlot struct {
	key uint64
	ev  Event
}

// spilled is an event waiting in a lane's spill: its key, and the pooled
// event its scheduler fills in.
type spilled struct {
	key uint64
	ev  *Event
}

// laneFirstSlots is a lane's ring size at its first event.
const laneFirstSlots = 64

// at returns the ring index of the lane's i-th event, i < len(l.buf).
func (l *lane) at(i int) int {
	if i += l.head; i >= len(l.buf) {
		i -= len(l.buf)
	}
	return i
}

// room reports whether the ring can take one more event (keeping a slot
// free: see lane).
func (l *lane) room() bool { return l.n+1 < len(l.buf) }

// grow makes the ring large enough for its events and the spill's with a
// slot to spare, and an eighth more, and moves the spill's events into it,
// returning them to their Sim's pool; only between events (see lane). A
// ring just longer than its lane's most events so far has its next free
// slot one that was read shortly before, still in the caches; a ring twice
// that long (a power of two) writes each event into a line untouched for
// a whole cycle of the ring.
func (l *lane) grow() {
	if need := l.n + len(l.spill) + 1; need > len(l.buf) {
		bigger := make([]laneSlot, max(laneFirstSlots, need+need/8))
		for i := 0; i < l.n; i++ {
			bigger[i] = l.buf[l.at(i)]
		}
		l.buf, l.head = bigger, 0
	}
	for i, x := range l.spill {
		l.buf[l.at(l.n)] = laneSlot{key: x.key, ev: *x.ev}
		l.n++
		s := x.ev.owner
		*x.ev = Event{owner: s}
		s.freeEvents = append(s.freeEvents, x.ev)
		l.spill[i] = spilled{}
	}
	l.spill = l.spill[:0]
}

// heapEntry is one queued event: 32 bytes, so that a node's four children
// span two cache lines.
type heapEntry struct {
	orderKey
	ev sim.Event
}

// classShift places an event's class in the top two bits of orderKey.key;
// sequence numbers stay below 1<<classShift.
const classShift = 62

// heapArity is the heap's branching factor. A 4-ary heap has half the depth
// of a binary one, and the children compared in one sift-down step are
// adjacent in memory.
const heapArity = 4

// NewEngine returns an empty engine.
func NewEngine() *Engine {
	e := &Engine{heap: make([]heapEntry, 0, 1024)}
	for i := range e.laneHead {
		e.laneHead[i] = idleHead
	}
	for i := range e.laneDelay {
		e.laneDelay[i] = math.MaxUint64
	}
	// Every node starts with a lane of its own subtree (its leftmost leaf):
	// all are idle, so any of them is the least.
	for k := 1; k < numLanes; k++ {
		l := k
		for l < numLanes {
			l <<= 1
		}
		e.tree[k] = uint8(l - numLanes)
	}
	for i := range e.laneTable {
		e.laneTable[i].dk = [4]uint64{math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64}
	}
	return e
}

// laneFor returns a lane for events of delay key dk (delay<<2 | class), or -1
// if every lane is busy with other delays, or if dk's bucket holds no hint
// it may drop.
//
// A new hint takes a way that is empty or stale, else one whose lane is
// idle: it never replaces a busy lane's hint. Were a busy lane's hint
// dropped (rare delays colliding in its bucket), its delay's next event
// would claim a second lane and fill a new ring from laneFirstSlots slots,
// growing in eighths, while the old lane drained: a frequent delay with
// thousands of pending events would regrow its ring again and again. When
// the four hints of dk's bucket all point at busy lanes, dk's event goes to
// the heap instead; only speed depends on where it goes.
func (e *Engine) laneFor(dk uint64) int {
	b := &e.laneTable[laneBucket(dk)]
	for w := range b.dk {
		if b.dk[w] == dk {
			if l := int(b.lane[w]); e.laneDelay[l] == dk {
				return l
			}
			// Stale: its lane went idle and another delay took it.
			b.dk[w] = math.MaxUint64
		}
	}
	free := ^e.laneBusy
	if free == 0 {
		return -1
	}
	// Prefer a way whose hint is empty or stale.
	w := -1
	for i := range b.dk {
		if b.dk[i] == math.MaxUint64 || e.laneDelay[b.lane[i]] != b.dk[i] {
			w = i
			break
		}
	}
	if w < 0 {
		// Every hint is live: drop one whose lane is idle (its delay can
		// claim a lane again when its events come back), never a busy one.
		for i := range b.lane {
			if e.laneBusy&(1<<b.lane[i]) == 0 {
				w = i
				break
			}
		}
		if w < 0 {
			return -1
		}
	}
	l := bits.TrailingZeros64(free)
	e.laneDelay[l] = dk
	b.dk[w], b.lane[w] = dk, uint8(l)
	return l
}

// laneBucket returns the bucket of the lane table that holds delay key
// dk's hint: a Fibonacci hash, whose top six bits spread delays that
// differ in a few low bits (laneBuckets is 1<<6).
func laneBucket(dk uint64) int { return int((dk * 0x9E3779B97F4A7C15) >> (64 - 6)) }

// replay recomputes the tournament path from lane l's leaf to the root after
// its head changed.
func (e *Engine) replay(l int) {
	// Leaves are the virtual nodes numLanes+l; a node k's children are 2k
	// and 2k+1; tree[k] holds the winning lane of node k.
	k := (numLanes + l) >> 1
	a, b := l&^1, l|1 // the two leaves under k
	w := a
	if e.laneHead[b].less(&e.laneHead[a]) {
		w = b
	}
	e.tree[k] = uint8(w)
	for k > 1 {
		s := k ^ 1
		k >>= 1
		o := int(e.tree[s])
		if e.laneHead[o].less(&e.laneHead[w]) {
			w = o
		}
		e.tree[k] = uint8(w)
	}
}

// CurrentTime implements sim.TimeTeller.
func (e *Engine) CurrentTime() sim.VTimeInSec { return sim.VTimeInSec(e.now.Seconds()) }

// Schedule implements sim.EventScheduler: an event scheduled through
// Akita's interface (a kernel event its caller keeps a pointer to, or
// another kind) goes to the heap. Sim's kernel events take the lanes
// (scheduleKernel).
func (e *Engine) Schedule(evt sim.Event) {
	var at ib.PS
	var class Class
	var rank int64
	if ke, ok := evt.(*Event); ok {
		at, class, rank = ke.at, ke.class, ke.Arg
	} else {
		at = ib.FromSeconds(float64(evt.Time()))
		if evt.IsSecondary() {
			class = ClassLate
		}
	}
	e.push(heapEntry{e.order(at, class, rank), evt})
}

// scheduleKernel queues a primary or late event of s for target at time
// at and returns it for the caller to fill in: in the lane of its delay
// when there is one with room, by value, else an event of s's pool on the
// heap. Either stays where it is until it runs (see lane).
func (e *Engine) scheduleKernel(s *Sim, at ib.PS, target EventHandler, kind uint8, class Class) *Event {
	x := e.order(at, class, 0)
	// The delay's lane, or an empty lane to claim for it. A delay too large
	// for the lane key (never in practice) goes to the heap.
	if d := uint64(at - e.now); d < 1<<61 {
		dk := d<<2 | uint64(class)
		if l := e.laneFor(dk); l >= 0 {
			ln := &e.lanes[l]
			if len(ln.buf) == 0 {
				// Its first event: no slot of it can be held yet.
				ln.grow()
			}
			if ln.room() { // and so the spill is empty
				if e.laneBusy&(1<<l) == 0 {
					e.laneBusy |= 1 << l
					e.laneHead[l] = x
					e.replay(l)
				}
				slot := &ln.buf[ln.at(ln.n)]
				*slot = laneSlot{key: x.key, ev: Event{at: at, target: target, owner: s, class: class, Kind: kind}}
				ln.n++
				return &slot.ev
			}
			ev := s.newEvent(at, target, kind, class)
			ln.spill = append(ln.spill, spilled{x.key, ev})
			e.grow |= 1 << l
			return ev
		}
	}
	ev := s.newEvent(at, target, kind, class)
	e.push(heapEntry{x, ev})
	return ev
}

// growLanes grows the lanes that have spilled events and moves those into
// their rings: between events, when no pointer to a slot is held.
func (e *Engine) growLanes() {
	for g := e.grow; g != 0; g &= g - 1 {
		e.lanes[bits.TrailingZeros64(g)].grow()
	}
	e.grow = 0
}

// Reserve returns the sequence number the next primary or late event
// scheduled now would get, and uses it up: an event scheduled later with
// ScheduleReserved sorts among its picosecond's events as if it had been
// scheduled now. A block that may or may not need an event (a wire going
// idle that nobody waits for) reserves its place and schedules it only
// if asked, and the run is the same either way.
func (e *Engine) Reserve() uint64 {
	e.seq++
	if e.seq >= 1<<classShift {
		panic(fmt.Sprintf("engine: sequence number %d overflows the heap key", e.seq))
	}
	return e.seq
}

// LastReserved returns the latest sequence number handed out: what a
// block that kept only a reserved number's low bits needs to restore it.
func (e *Engine) LastReserved() uint64 { return e.seq }

// ScheduleReserved queues a primary or late event with a sequence number
// from Reserve. It goes to the heap: a lane's FIFO holds its delay's
// events in the order they were scheduled, and this one was not.
func (e *Engine) ScheduleReserved(ev *Event, seq uint64) {
	if ev.class == ClassLast || seq == 0 || seq > e.seq {
		panic(fmt.Sprintf("engine: event of class %d scheduled with sequence number %d (last handed out: %d)", ev.class, seq, e.seq))
	}
	if ev.at < e.now {
		panic(fmt.Sprintf("engine: event at %d ps scheduled at %d ps", ev.at, e.now))
	}
	e.push(heapEntry{orderKey{at: ev.at, key: seq | uint64(ev.class)<<classShift}, ev})
}

// Deliver queues an event that another partition posted (Group): on the
// heap, not a lane, since such events arrive in batches whose delays from
// now follow no pattern and would only churn the lanes.
func (e *Engine) Deliver(evt *Event) {
	e.push(heapEntry{e.order(evt.at, evt.class, evt.Arg), evt})
}

// order returns the order key of an event queued now for time at: the class
// on top, then the next sequence number, or for a last event its rank
// (Sim.ScheduleLast).
func (e *Engine) order(at ib.PS, class Class, rank int64) orderKey {
	if at < e.now {
		panic(fmt.Sprintf("engine: event at %d ps scheduled at %d ps", at, e.now))
	}
	if class == ClassLast {
		return orderKey{at: at, key: uint64(rank) | uint64(ClassLast)<<classShift}
	}
	e.seq++
	if e.seq >= 1<<classShift {
		panic(fmt.Sprintf("engine: sequence number %d overflows the heap key", e.seq))
	}
	return orderKey{at: at, key: e.seq | uint64(class)<<classShift}
}

// push adds x to the heap.
func (e *Engine) push(x heapEntry) {
	e.heap = append(e.heap, heapEntry{})
	h := e.heap
	// Sift the hole up from the new leaf, then drop x into it.
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / heapArity
		if !x.less(&h[p].orderKey) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// first returns the lane whose head is the least queued event, or -1 when
// the least is the heap's top or nothing is queued.
func (e *Engine) first() int {
	if e.laneBusy == 0 {
		return -1
	}
	w := int(e.tree[1])
	if len(e.heap) > 0 && e.heap[0].less(&e.laneHead[w]) {
		return -1
	}
	return w
}

// popLane removes lane l's head and returns it. Its slot stays as it is
// while it is handled (see lane).
func (e *Engine) popLane(l int) *Event {
	ln := &e.lanes[l]
	x := &ln.buf[ln.head]
	if ln.head++; ln.head == len(ln.buf) {
		ln.head = 0
	}
	ln.n--
	if ln.n == 0 {
		e.laneBusy &^= 1 << l
		e.laneHead[l] = idleHead
	} else {
		y := &ln.buf[ln.head]
		e.laneHead[l] = orderKey{at: y.ev.at, key: y.key}
	}
	e.replay(l)
	return &x.ev
}

func (e *Engine) pop() heapEntry {
	h := e.heap
	top := h[0]
	n := len(h) - 1
	x := h[n]
	h[n] = heapEntry{}
	h = h[:n]
	e.heap = h
	if n == 0 {
		return top
	}
	// Sift the hole down from the root, moving the least child up, until x
	// (the old last leaf) fits.
	i := 0
	for {
		c := heapArity*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+heapArity, n)
		for j := c + 1; j < end; j++ {
			if h[j].less(&h[m].orderKey) {
				m = j
			}
		}
		if !h[m].less(&x.orderKey) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
	return top
}

// Run implements sim.Engine: it handles events until none is left or the
// engine is paused.
func (e *Engine) Run() error { return e.run(noLimit) }

// RunBefore handles the queued events earlier than limit (and those they
// schedule earlier than limit), then returns: one window of a partitioned
// run (Group).
func (e *Engine) RunBefore(limit ib.PS) error { return e.run(limit) }

// noLimit is Run's window end: no event is that late.
const noLimit = ib.PS(math.MaxInt64)

// NextAt returns the time of the least queued event; ok is false when
// nothing is queued.
func (e *Engine) NextAt() (at ib.PS, ok bool) {
	if l := e.first(); l >= 0 {
		return e.laneHead[l].at, true
	}
	if len(e.heap) > 0 {
		return e.heap[0].at, true
	}
	return 0, false
}

func (e *Engine) run(limit ib.PS) error {
	for (len(e.heap) > 0 || e.laneBusy != 0) && !e.paused.Load() {
		if e.grow != 0 {
			e.growLanes()
		}
		if limit != noLimit {
			if at, _ := e.NextAt(); at >= limit {
				return nil
			}
		}
		if l := e.first(); l >= 0 {
			// A lane's event is always a kernel event, and its slot is
			// reused, not pooled: dispatch only.
			ev := e.popLane(l)
			e.now = ev.at
			e.touchNext()
			if e.NumHooks() > 0 {
				ctx := sim.HookCtx{Domain: e, Pos: sim.HookPosBeforeEvent, Item: ev}
				e.InvokeHook(ctx)
				ev.owner.dispatch(ev)
				ctx.Pos = sim.HookPosAfterEvent
				e.InvokeHook(ctx)
				continue
			}
			ev.owner.dispatch(ev)
			continue
		}
		ent := e.pop()
		e.now = ent.at
		e.touchNext()
		if e.NumHooks() > 0 {
			ctx := sim.HookCtx{Domain: e, Pos: sim.HookPosBeforeEvent, Item: ent.ev}
			e.InvokeHook(ctx)
			if err := ent.ev.Handler().Handle(ent.ev); err != nil {
				return err
			}
			ctx.Pos = sim.HookPosAfterEvent
			e.InvokeHook(ctx)
			continue
		}
		if ke, ok := ent.ev.(*Event); ok {
			// A kernel event: call its Sim directly rather than through
			// two interface calls (Handler, Handle).
			ke.owner.handle(ke)
			continue
		}
		if err := ent.ev.Handler().Handle(ent.ev); err != nil {
			return err
		}
	}
	return nil
}

// touchNext reads the event now first in the queue (usually the next to
// run) and prefetches its packet and its target, so that in a large model,
// where all three have long left the caches, their misses overlap with the
// work of the event being dispatched rather than stalling the next
// dispatch. Prefetches are hints (components/prefetch_*.go): they change no
// result.
func (e *Engine) touchNext() {
	var ke *Event
	if l := e.first(); l >= 0 {
		ke = &e.lanes[l].buf[e.lanes[l].head].ev
	} else if len(e.heap) > 0 {
		ke, _ = e.heap[0].ev.(*Event)
	}
	if ke != nil {
		// Reading the event waits for its line; the lines its handler will
		// read first (its target's and its packet's) are then only
		// requested, so they arrive while the current event runs.
		if ke.Pkt != nil {
			prefetch(uintptr(unsafe.Pointer(ke.Pkt)))
		}
		// Two lines of the target from TargetHotOffset: a link port's hot
		// fields (most events target ports; the lines before and after
		// them are cold, and fetching them would only crowd the cache);
		// for another target they are a hint, harmless if wrong.
		prefetch2(uintptr((*ifaceWords)(unsafe.Pointer(&ke.target)).data) + TargetHotOffset)
	}
}

// TargetHotOffset is where, from the start of the object an event targets,
// the lines its handler reads begin: a link port keeps 56 cold bytes ahead
// of its two hot lines, so that they start a line after Go's 8-byte malloc
// header (link.TestPortLayout and TestPortAlignment hold the port to it).
const TargetHotOffset = 56

// ifaceWords is the two-word layout of a Go interface value; touchNext
// reads its data word only as a prefetch address (a hint that cannot fault
// or change a result).
type ifaceWords struct{ tab, data unsafe.Pointer }

// Pause implements sim.Engine: Run returns after the current event.
func (e *Engine) Pause() { e.paused.Store(true) }

// Continue implements sim.Engine.
func (e *Engine) Continue() { e.paused.Store(false) }

// RegisterSimulationEndHandler implements sim.Engine.
func (e *Engine) RegisterSimulationEndHandler(h sim.SimulationEndHandler) {
	e.handlers = append(e.handlers, h)
}

// Finished implements sim.Engine.
func (e *Engine) Finished() {
	for _, h := range e.handlers {
		h.Handle(e.CurrentTime())
	}
}

// Pending returns the number of queued events.
func (e *Engine) Pending() int {
	n := len(e.heap)
	for i := range e.lanes {
		n += e.lanes[i].n + len(e.lanes[i].spill)
	}
	return n
}
