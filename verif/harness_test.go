package verif

import (
	"fmt"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// This file is a test bench: two endpoints joined by a real link.Port pair.
// The ports announce the link's events (tx_start, tx_end, rx_head, fc_send,
// credit_update); the endpoints announce what an owner of a port does
// (inject at the source; buf_enq, rx_tail, deliver, buf_deq at the sink), so
// the trace, diff and checkers are exercised on the real kernel and credit
// flow control. Bugs are injected through its test hooks (doubleRelease,
// dropSeq).

const (
	benchRxTail uint8 = iota + 1
	benchRelease
	benchStart
)

// benchConfig is one bench run.
type benchConfig struct {
	Timing       link.Timing
	BufferBlocks int   // sink receive buffer per VL, 64-byte blocks
	HoldPS       ib.PS // how long the sink keeps a packet after its tail before releasing it
	Packets      []ib.Packet
	// Test hooks: the broken models.
	doubleRelease int64 // seq whose credits the sink returns twice (0: none)
	dropSeq       int64 // seq the sink discards without a trace (0: none)
}

func (c benchConfig) String() string {
	return fmt.Sprintf("bench lanes=%d rate=%v latency=%d buffer=%d hold=%d packets=%d",
		c.Timing.Lanes, c.Timing.DataRateBps(), c.Timing.Latency(), c.BufferBlocks, c.HoldPS, len(c.Packets))
}

type benchEndpoint struct {
	sim.HookableBase
	name  string
	s     *components.Sim
	port  *link.Port
	cfg   *benchConfig
	queue []*ib.Packet // source: packets not yet sent
	fbuf  []components.TraceField
	held  map[int64]*ib.Packet // sink: packets waiting for release, by seq
}

func (e *benchEndpoint) emit(t ib.PS, kind components.TraceKind, pkt *ib.Packet, extra ...components.TraceField) {
	if e.NumHooks() == 0 {
		return
	}
	ev := components.TraceEvent{Time: t, Path: e.name, Kind: kind}
	e.fbuf = e.fbuf[:0]
	if pkt != nil {
		e.fbuf = ev.AppendPacket(e.fbuf, pkt)
	}
	ev.Fields = append(e.fbuf, extra...)
	e.InvokeHook(sim.HookCtx{Domain: e, Pos: components.HookPosTrace, Item: &ev})
}

func (e *benchEndpoint) trySend() {
	for len(e.queue) > 0 && e.port.CanSend(e.queue[0]) {
		pkt := e.queue[0]
		e.queue = e.queue[1:]
		e.emit(e.s.Now(), components.TraceInject, pkt)
		e.port.Send(pkt)
	}
}

// PacketArrived implements link.Owner (sink side).
func (e *benchEndpoint) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	vl := int(pkt.VL)
	e.emit(head, components.TraceBufEnq, pkt,
		components.IntField("occ", int64(p.BufferUsed(vl))), components.IntField("cap", int64(p.BufferCapacity(vl))))
	ev := e.s.Schedule(tail, e, benchRxTail)
	ev.Pkt = pkt
}

// PortReady implements link.Owner.
func (e *benchEndpoint) PortReady(p *link.Port) { e.trySend() }

// HandleEvent implements components.EventHandler.
func (e *benchEndpoint) HandleEvent(ev *components.Event) {
	now := e.s.Now()
	switch ev.Kind {
	case benchStart:
		e.trySend()
	case benchRxTail:
		pkt := ev.Pkt
		e.emit(now, components.TraceRxTail, pkt)
		if int64(pkt.Seq) != e.cfg.dropSeq {
			e.emit(now, components.TraceDeliver, pkt)
		}
		e.held[int64(pkt.Seq)] = pkt
		r := e.s.Schedule(now+e.cfg.HoldPS, e, benchRelease)
		r.Arg = int64(pkt.Seq)
	case benchRelease:
		pkt := e.held[ev.Arg]
		delete(e.held, ev.Arg)
		e.release(pkt)
		if ev.Arg == e.cfg.doubleRelease {
			e.release(pkt) // the injected bug: the credits go back twice
		}
	}
}

func (e *benchEndpoint) release(pkt *ib.Packet) {
	vl := int(pkt.VL)
	e.port.Release(vl, pkt.Credits())
	e.emit(e.s.Now(), components.TraceBufDeq, pkt,
		components.IntField("occ", int64(e.port.BufferUsed(vl))), components.IntField("cap", int64(e.port.BufferCapacity(vl))))
}

// bench is a built source → sink link.
type bench struct {
	s        *components.Sim
	src, dst *benchEndpoint
}

func newBench(cfg *benchConfig) *bench {
	s := components.NewSim()
	src := &benchEndpoint{name: "Bench.Src.Port[0]", s: s, cfg: cfg}
	dst := &benchEndpoint{name: "Bench.Dst.Port[0]", s: s, cfg: cfg, held: map[int64]*ib.Packet{}}
	pc := link.PortConfig{VLs: 1, BufferBlocks: cfg.BufferBlocks} // FC refresh off: the queue drains and Run ends
	src.port = link.NewPort(s, src, src.name, 0, pc)
	dst.port = link.NewPort(s, dst, dst.name, 0, pc)
	link.Connect(src.port, dst.port, cfg.Timing)
	for i := range cfg.Packets {
		pkt := s.NewPacket()
		seq := pkt.Seq
		*pkt = cfg.Packets[i]
		pkt.Seq = seq
		// Stamped as a source does, over the fields and the seq: the
		// deliver event carries the ICRC recomputed over what arrived.
		pkt.ICRC = ib.ComputeICRC(pkt)
		src.queue = append(src.queue, pkt)
	}
	s.Schedule(0, src, benchStart)
	return &bench{s: s, src: src, dst: dst}
}

func (b *bench) hookables() []sim.Hookable {
	return []sim.Hookable{b.src.port, b.src, b.dst.port, b.dst}
}

// writePacket returns an RDMA WRITE ONLY of payload bytes on VL 0 with the
// given PSN: LRH 8 + BTH 12 + RETH 16 + payload + ICRC 4 + VCRC 2 bytes.
func writePacket(psn uint32, payload int) ib.Packet {
	return ib.Packet{Kind: ib.Data, VL: 0, SL: 0, SLID: 1, DLID: 2, Opcode: ib.RDMAWriteOnly,
		DestQP: 17, PSN: psn, PayloadLen: payload}
}
