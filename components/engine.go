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
//   - the queue is a typed binary heap ordered by (picoseconds, late, sequence
//     number): no float comparison, no interface call per comparison, no
//     mutex per push and pop;
//   - events of the same picosecond run in the order they were scheduled
//     (FIFO), after which "late" events (Sim.ScheduleLate) run, so ties never
//     depend on heap layout;
//   - engine hooks are invoked only when some hook is attached.
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

type heapEntry struct {
	at   ib.PS
	late bool
	seq  uint64
	ev   sim.Event
}

func (a *heapEntry) less(b *heapEntry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.late != b.late {
		return !a.late
	}
	return a.seq < b.seq
}

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
	e.heap = append(e.heap, heapEntry{at: at, late: evt.IsSecondary(), seq: e.seq, ev: evt})
	// sift up
	h := e.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (e *Engine) pop() heapEntry {
	h := e.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = heapEntry{}
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	e.heap = h
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
