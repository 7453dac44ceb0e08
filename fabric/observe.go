package fabric

import (
	"math"
	"slices"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// partitionedObservers lets tracers and checkers, which expect one thread
// and events in time order, observe a partitioned run. The observer
// attaches its hooks to stand-ins for the blocks; each real block gets a
// hook that copies its trace events into its partition's buffer (one
// goroutine writes each buffer); between windows, replay hands every
// buffered event to the stand-in's hooks, all partitions' events merged by
// time (same-picosecond events of different partitions in partition order,
// so a trace's order can differ from the serial run's only among events of
// the same picosecond).
type partitionedObservers struct {
	standIns []*standIn
	buffers  []traceBuffer // per partition
	merged   []bufferedEvent
}

// standIn takes an observer's hooks for one block.
type standIn struct {
	sim.HookableBase
	of sim.Hookable // the block it stands in for
}

// StandsFor returns the block whose events the stand-in replays: an
// observer names the stand-in by it (a --trace-path glob is checked
// against the blocks' names).
func (s *standIn) StandsFor() sim.Hookable { return s.of }

// traceBuffer is one partition's trace events of the current window.
type traceBuffer struct{ evs []bufferedEvent }

type bufferedEvent struct {
	block int // index of the block's stand-in
	ev    components.TraceEvent
}

// bufferHook copies a block's trace events into its partition's buffer.
type bufferHook struct {
	buf   *traceBuffer
	block int
}

// Func implements sim.Hook.
func (h *bufferHook) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev := *ctx.Item.(*components.TraceEvent)
	ev.Fields = slices.Clone(ev.Fields) // the block reuses its field buffer
	if ev.Pkt != nil {
		// The packet goes back to its pool, or on to the next hop, long
		// before the window's end replays the event.
		pkt := *ev.Pkt
		pkt.Payload = slices.Clone(pkt.Payload)
		ev.Pkt = &pkt
	}
	h.buf.evs = append(h.buf.evs, bufferedEvent{block: h.block, ev: ev})
}

// newPartitionedObservers puts a buffering hook on every block (part[i]
// is block i's partition) and returns the stand-ins observers attach to.
func newPartitionedObservers(blocks []sim.Hookable, part []int, parts int) (*partitionedObservers, []sim.Hookable) {
	o := &partitionedObservers{buffers: make([]traceBuffer, parts)}
	standIns := make([]sim.Hookable, len(blocks))
	for i, b := range blocks {
		s := &standIn{of: b}
		o.standIns = append(o.standIns, s)
		standIns[i] = s
		b.AcceptHook(&bufferHook{buf: &o.buffers[part[i]], block: i})
	}
	return o, standIns
}

// replay hands the window's buffered events to the observers' hooks, in
// time order (a stable merge: partition order among equal times).
func (o *partitionedObservers) replay() { o.replayUntil(math.MaxInt64) }

// replayUntil is replay for the events up to end; later ones, which the
// serial run would never have run, are dropped.
func (o *partitionedObservers) replayUntil(end ib.PS) {
	o.merged = o.merged[:0]
	for k := range o.buffers {
		o.merged = append(o.merged, o.buffers[k].evs...)
		clear(o.buffers[k].evs)
		o.buffers[k].evs = o.buffers[k].evs[:0]
	}
	slices.SortStableFunc(o.merged, func(a, b bufferedEvent) int {
		switch {
		case a.ev.Time < b.ev.Time:
			return -1
		case a.ev.Time > b.ev.Time:
			return 1
		}
		return 0
	})
	for i := range o.merged {
		b := &o.merged[i]
		if b.ev.Time > end {
			break // sorted by time: the rest is later too
		}
		s := o.standIns[b.block]
		if s.NumHooks() > 0 {
			s.InvokeHook(sim.HookCtx{Domain: s, Pos: components.HookPosTrace, Item: &b.ev})
		}
	}
	clear(o.merged)
}
