package workload

import (
	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// tracer lets a host announce inject and deliver events; it costs nothing
// when no hook listens.
type tracer struct {
	sim.HookableBase
	path string
	buf  []components.TraceField
	ev   components.TraceEvent // announced, and reused (one made here would escape: an allocation per event)
}

func (t *tracer) tracePacket(at ib.PS, kind components.TraceKind, pkt *ib.Packet) {
	if t.NumHooks() == 0 {
		return
	}
	t.ev = components.TraceEvent{Time: at, Path: t.path, Kind: kind}
	ev := &t.ev
	ev.Fields = ev.AppendPacket(t.buf[:0], pkt)
	t.InvokeHook(sim.HookCtx{Domain: t, Pos: components.HookPosTrace, Item: ev})
	t.buf = ev.Fields[:0]
}
