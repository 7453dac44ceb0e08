package workload

import (
	"fmt"
	"math"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// StreamSource sends a stream of packets on one port, back to back as fast as
// the wire and the peer's credits allow, on one or more VLs served round robin.
type StreamSource struct {
	tracer
	Name string
	s    *components.Sim
	port *link.Port

	size     int // payload bytes per packet
	sl       int
	vls      []int // VLs with a stream
	next     int   // round-robin pointer into vls
	limit    int   // packets per VL to send; 0 = until stopped
	sent     []int // per stream
	stopped  bool  // no more injection
	slid     uint16
	dlid     uint16
	onInject func(pkt *ib.Packet)

	stall []components.StallTimer // per stream: waiting on credits with the wire idle
}

// StreamSink receives packets on one port, drains them at a limited rate and
// releases their buffer space, which returns credits to the source.
type StreamSink struct {
	tracer
	Name string
	s    *components.Sim
	port *link.Port

	drainPSPerByte float64 // 0 = released at tail arrival
	drainFreeAt    ib.PS   // when the drain engine is next free

	OnDeliver func(pkt *ib.Packet, tail ib.PS)
}

// NewStreamSource makes a source; the port is attached with Attach.
func NewStreamSource(s *components.Sim, name string, c Config, slid, dlid uint16) *StreamSource {
	src := &StreamSource{tracer: tracer{path: name}, Name: name, s: s, size: c.Size, sl: c.SL, slid: slid, dlid: dlid}
	for i := 0; i < c.Streams; i++ {
		src.vls = append(src.vls, c.VL+i)
	}
	if !c.Saturate {
		src.limit = c.Packets
	}
	src.sent = make([]int, len(src.vls))
	src.stall = make([]components.StallTimer, len(src.vls))
	return src
}

// Attach gives the source its port.
func (src *StreamSource) Attach(p *link.Port) { src.port = p }

// OnInject registers a callback for each packet put on the wire.
func (src *StreamSource) OnInject(f func(pkt *ib.Packet)) { src.onInject = f }

// Start begins sending.
func (src *StreamSource) Start() { src.trySend() }

// StopInjecting ends injection; packets in flight still land.
func (src *StreamSource) StopInjecting() {
	src.stopped = true
	now := src.s.Now()
	for i := range src.stall {
		src.stall[i].Stop(now)
	}
}

// Sent returns the packets sent over all streams.
func (src *StreamSource) Sent() int {
	n := 0
	for _, x := range src.sent {
		n += x
	}
	return n
}

// CreditStallAt returns the time streams have waited for credits while
// the wire was free up to now, stalls still going on included: sampled at a
// window's two ends, the stall inside it.
func (src *StreamSource) CreditStallAt(now ib.PS) ib.PS {
	var t ib.PS
	for i := range src.stall {
		t += src.stall[i].Total(now)
	}
	return t
}

// Done reports whether every stream has sent its packets (never for a
// saturating stream until StopInjecting).
func (src *StreamSource) Done() bool {
	if src.stopped {
		return true
	}
	if src.limit == 0 {
		return false
	}
	for _, n := range src.sent {
		if n < src.limit {
			return false
		}
	}
	return true
}

func (src *StreamSource) trySend() {
	if src.stopped || !src.port.Idle() {
		return
	}
	now := src.s.Now()
	blocks := ib.Credits(src.wireBytes())
	for k := 0; k < len(src.vls); k++ {
		i := (src.next + k) % len(src.vls)
		if src.limit > 0 && src.sent[i] >= src.limit {
			continue
		}
		vl := src.vls[i]
		if !src.port.HasCredits(vl, blocks) {
			src.stall[i].Start(now)
			continue
		}
		src.stall[i].Stop(now)
		pkt := src.s.NewPacket()
		pkt.Opcode = ib.SendOnly
		pkt.VL = uint8(vl)
		pkt.SL = uint8(src.sl)
		pkt.SLID, pkt.DLID = src.slid, src.dlid
		pkt.PSN = uint32(src.sent[i]) & 0xFFFFFF
		pkt.PayloadLen = src.size
		pkt.InjectAt = now
		pkt.ICRC = ib.ComputeICRC(pkt)
		src.sent[i]++
		src.next = (i + 1) % len(src.vls)
		if src.onInject != nil {
			src.onInject(pkt)
		}
		src.tracePacket(now, components.TraceInject, pkt)
		src.port.Send(pkt)
		return
	}
}

func (src *StreamSource) wireBytes() int {
	p := ib.Packet{Opcode: ib.SendOnly, PayloadLen: src.size}
	return p.WireBytes()
}

// PacketArrived implements link.Owner; a source receives nothing but
// flow-control packets.
func (src *StreamSource) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	panic(fmt.Sprintf("workload: stream source %s received packet %d", src.Name, pkt.Seq))
}

// PortReady implements link.Owner.
func (src *StreamSource) PortReady(p *link.Port) { src.trySend() }

// NewStreamSink makes a sink that drains at drainGbps (0 = at once).
func NewStreamSink(s *components.Sim, name string, drainGbps float64) *StreamSink {
	k := &StreamSink{tracer: tracer{path: name}, Name: name, s: s}
	if drainGbps > 0 {
		k.drainPSPerByte = 8 * 1000 / drainGbps // 8 bits per byte / (Gb/s) → ps per byte
	}
	return k
}

// Attach gives the sink its port.
func (k *StreamSink) Attach(p *link.Port) { k.port = p }

const evSinkDrained uint8 = 1

// PacketArrived implements link.Owner: the packet is consumed when its tail
// is in and the drain engine has moved its bytes out; then its blocks free.
func (k *StreamSink) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	start := tail
	if k.drainFreeAt > start {
		start = k.drainFreeAt
	}
	end := start
	if k.drainPSPerByte > 0 {
		end = start + ib.PS(math.Round(float64(pkt.WireBytes())*k.drainPSPerByte))
	}
	k.drainFreeAt = end
	ev := k.s.Schedule(end, k, evSinkDrained)
	ev.Pkt = pkt
	ev.Tail = tail
}

// HandleEvent implements components.EventHandler.
func (k *StreamSink) HandleEvent(ev *components.Event) {
	pkt := ev.Pkt
	k.port.Release(int(pkt.VL), pkt.Credits())
	k.tracePacket(ev.At(), components.TraceDeliver, pkt)
	if k.OnDeliver != nil {
		k.OnDeliver(pkt, ev.Tail)
	}
	k.s.FreePacket(pkt)
}

// PortReady implements link.Owner; a sink sends nothing.
func (k *StreamSink) PortReady(p *link.Port) {}
