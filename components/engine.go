package components

import (
	"fmt"
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
// Akita's SerialEngine remains selectable (sim.engine: akita); both engines
// run the same model code. docs/performance.md compares them.
type Engine struct {
	sim.HookableBase

	now      ib.PS
	seq      uint64
	heap     []heapEntry
	paused   atomic.Bool
	handlers []sim.SimulationEndHandler
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
	if evt.IsSecondary() {
		key |= lateBit
	}
	x := heapEntry{at: at, key: key, ev: evt}
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
	for len(e.heap) > 0 && !e.paused.Load() {
		ent := e.pop()
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
func (e *Engine) Pending() int { return len(e.heap) }
