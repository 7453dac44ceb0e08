package components

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/ib"
)

// Engine is a serial discrete-event engine that implements Akita's
// sim.Engine interface for hcasim's own events. It differs from Akita's
// SerialEngine in what the model needs on its hot path:
//
//   - the queue is a typed 4-ary heap ordered by (picoseconds, late, sequence
//     number): no float comparison, no interface call per comparison, no
//     mutex per push and pop;
//   - events of the same picosecond run in the order they were scheduled
//     (FIFO), after which "late" events (Sim.ScheduleLate) run, so ties never
//     depend on heap layout;
//   - engine hooks are invoked only when some hook is attached.
//
// The order is a strict total order (sequence numbers are unique), so the
// sequence of events handled does not depend on how the queue is built: any
// correct priority queue yields the same run.
//
// Most events of a fabric are scheduled a fixed delay ahead: a head arrives
// one cable latency after it left, a wire goes idle one serialization time
// (of a fixed packet size) after it started, flow-control packets and
// refresh timers recur with constant delays. Events with the same delay and
// the same late flag are scheduled at non-decreasing times (now never goes
// back) with increasing sequence numbers, so a FIFO of them is already in
// queue order. The engine keeps up to numLanes such FIFOs ("lanes", each for
// one delay) beside the heap; an event goes to its delay's lane if there is
// one, or claims an empty lane, else to the heap. The next event is the least
// of the heap's top and the lanes' heads: O(1) per event for lane events
// instead of O(log n) heap work.
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

	laneDelay [numLanes]uint64   // per lane: delay<<1 | late flag of its events
	laneHead  [numLanes]laneHead // per non-empty lane: its first event's order key
	laneBusy  uint32             // lanes holding events
	lanes     [numLanes]lane
}

// numLanes is the number of fixed-delay FIFOs (see Engine).
const numLanes = 16

// laneHead is the order key of a lane's first event, kept densely so that
// finding the next event reads one array.
type laneHead struct {
	at  ib.PS
	key uint64
}

// lane is a FIFO ring of events that share one delay and late flag.
type lane struct {
	buf  []heapEntry // ring, len a power of two
	head int         // index of the first event
	n    int         // events held
}

func (l *lane) push(x heapEntry) {
	if l.n == len(l.buf) {
		bigger := make([]heapEntry, max(64, 2*len(l.buf)))
		for i := 0; i < l.n; i++ {
			bigger[i] = l.buf[(l.head+i)&(len(l.buf)-1)]
		}
		l.buf, l.head = bigger, 0
	}
	l.buf[(l.head+l.n)&(len(l.buf)-1)] = x
	l.n++
}

// heapEntry is one queued event: 32 bytes, so that a node's four children
// span two cache lines. key packs the tie-breaks into one integer: the late
// flag in the top bit (late events of a picosecond after the others), then
// the scheduling sequence number (FIFO among equals).
type heapEntry struct {
	at  ib.PS
	key uint64
	ev  sim.Event
}

// lateBit marks a late (secondary) event in heapEntry.key.
const lateBit = 1 << 63

func (a *heapEntry) less(b *heapEntry) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

// heapArity is the heap's branching factor. A 4-ary heap has half the depth
// of a binary one, and the children compared in one sift-down step are
// adjacent in memory.
const heapArity = 4

// NewEngine returns an empty engine.
func NewEngine() *Engine { return &Engine{heap: make([]heapEntry, 0, 1024)} }

// CurrentTime implements sim.TimeTeller.
func (e *Engine) CurrentTime() sim.VTimeInSec { return sim.VTimeInSec(e.now.Seconds()) }

// Schedule implements sim.EventScheduler.
func (e *Engine) Schedule(evt sim.Event) {
	var at ib.PS
	if ke, ok := evt.(*Event); ok {
		at = ke.at
	} else {
		at = ib.FromSeconds(float64(evt.Time()))
	}
	if at < e.now {
		panic(fmt.Sprintf("engine: event at %d ps scheduled at %d ps", at, e.now))
	}
	e.seq++
	if e.seq >= lateBit {
		panic(fmt.Sprintf("engine: sequence number %d overflows the heap key", e.seq))
	}
	key := e.seq
	late := evt.IsSecondary()
	if late {
		key |= lateBit
	}
	x := heapEntry{at: at, key: key, ev: evt}
	// The delay's lane, or an empty lane to claim for it. A delay too large
	// for the lane key (never in practice) goes to the heap.
	if d := uint64(at - e.now); d < 1<<62 {
		dk := d << 1
		if late {
			dk |= 1
		}
		l := -1
		for i := range e.laneDelay {
			if e.laneDelay[i] == dk {
				l = i
				break
			}
		}
		if l < 0 {
			if free := ^e.laneBusy & (1<<numLanes - 1); free != 0 {
				l = bits.TrailingZeros32(free)
				e.laneDelay[l] = dk
			}
		}
		if l >= 0 {
			if e.laneBusy&(1<<l) == 0 {
				e.laneBusy |= 1 << l
				e.laneHead[l] = laneHead{at: at, key: key}
			}
			e.lanes[l].push(x)
			return
		}
	}
	e.heap = append(e.heap, heapEntry{})
	h := e.heap
	// Sift the hole up from the new leaf, then drop x into it.
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / heapArity
		if !x.less(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// next removes and returns the least event of the heap and the lanes; the
// caller ensures there is one.
func (e *Engine) next() heapEntry {
	best := -1 // lane of the least event, or -1 for the heap top
	var bat ib.PS
	var bkey uint64
	if len(e.heap) > 0 {
		bat, bkey = e.heap[0].at, e.heap[0].key
	} else {
		best = bits.TrailingZeros32(e.laneBusy)
		bat, bkey = e.laneHead[best].at, e.laneHead[best].key
	}
	for m := e.laneBusy; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		h := &e.laneHead[i]
		if h.at < bat || (h.at == bat && h.key < bkey) {
			best, bat, bkey = i, h.at, h.key
		}
	}
	if best < 0 {
		return e.pop()
	}
	l := &e.lanes[best]
	x := l.buf[l.head]
	l.buf[l.head] = heapEntry{}
	l.head = (l.head + 1) & (len(l.buf) - 1)
	l.n--
	if l.n == 0 {
		e.laneBusy &^= 1 << best
	} else {
		y := &l.buf[l.head]
		e.laneHead[best] = laneHead{at: y.at, key: y.key}
	}
	return x
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
			if h[j].less(&h[m]) {
				m = j
			}
		}
		if !h[m].less(&x) {
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
func (e *Engine) Run() error {
	for (len(e.heap) > 0 || e.laneBusy != 0) && !e.paused.Load() {
		ent := e.next()
		e.now = ent.at
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
		n += e.lanes[i].n
	}
	return n
}
