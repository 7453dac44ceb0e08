package switchasic

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// Endpoint event kinds.
const (
	epRelease uint8 = iota + 1 // a received packet's tail is in: free its blocks
	epInject                   // Bernoulli injection slot
)

// arrival is what a sink saw of one packet.
type arrival struct {
	seq        uint64
	src        int32
	sl, vl     uint8
	bytes      int
	head, tail ib.PS
	injectAt   ib.PS
}

// endpoint is a test packet source and sink on one link port: per-VL send
// queues served round robin among VLs with credits (like an HCA's VL
// arbitration at its simplest), and a sink that frees a packet's blocks when
// its tail is in unless its VL is held.
type endpoint struct {
	idx   int
	s     *components.Sim
	port  *link.Port
	q     [16][]*ib.Packet
	rr    int
	held  uint16 // VLs whose received packets are never released (credit starvation)
	got   []arrival
	onGet func(a arrival)
	// staged counts arrivals still carrying a switch output's stage link
	// (ib.Packet.StageNext or StageAt), which the output clears when it
	// sends the packet.
	staged int

	// Generators.
	backlog   func(e *endpoint) *ib.Packet // called to keep the queue non-empty (saturation)
	slot      ib.PS                        // Bernoulli: one injection chance per slot
	load      float64                      // Bernoulli: probability per slot
	rng       *rand.Rand
	makePkt   func(e *endpoint) *ib.Packet
	injecting bool
}

func (e *endpoint) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	a := arrival{seq: pkt.Seq, src: pkt.Src, sl: pkt.SL, vl: pkt.VL, bytes: pkt.WireBytes(), head: head, tail: tail, injectAt: pkt.InjectAt}
	e.got = append(e.got, a)
	if pkt.StageNext != nil || pkt.StageAt != 0 {
		e.staged++
	}
	if e.onGet != nil {
		e.onGet(a)
	}
	if e.held&(1<<pkt.VL) != 0 {
		return
	}
	ev := e.s.Schedule(tail, e, epRelease)
	ev.Pkt = pkt
}

func (e *endpoint) PortReady(p *link.Port) { e.trySend() }

func (e *endpoint) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case epRelease:
		e.port.Release(int(ev.Pkt.VL), ev.Pkt.Credits())
		e.s.FreePacket(ev.Pkt)
	case epInject:
		if e.rng.Float64() < e.load {
			e.send(e.makePkt(e))
		}
		if e.injecting {
			e.s.Schedule(ev.At()+e.slot, e, epInject)
		}
	}
}

// send queues pkt on its VL and tries to start it.
func (e *endpoint) send(pkt *ib.Packet) {
	pkt.InjectAt = e.s.Now()
	pkt.Src = int32(e.idx)
	e.q[pkt.VL] = append(e.q[pkt.VL], pkt)
	e.trySend()
}

func (e *endpoint) trySend() {
	if e.backlog != nil {
		n := 0
		for vl := range e.q {
			n += len(e.q[vl])
		}
		if n == 0 {
			pkt := e.backlog(e)
			pkt.InjectAt = e.s.Now()
			pkt.Src = int32(e.idx)
			e.q[pkt.VL] = append(e.q[pkt.VL], pkt)
		}
	}
	if !e.port.Idle() {
		return
	}
	for k := 0; k < 16; k++ {
		vl := (e.rr + k) & 15
		if len(e.q[vl]) == 0 || !e.port.CanSend(e.q[vl][0]) {
			continue
		}
		pkt := e.q[vl][0]
		e.q[vl][0] = nil
		e.q[vl] = e.q[vl][1:]
		e.port.Send(pkt)
		e.rr = vl + 1
		if e.backlog != nil {
			e.trySend() // refill the queue (the wire is busy now)
		}
		return
	}
}

// testNet is one switch with an endpoint on every port; host i has LID i+1
// and sits on port i.
type testNet struct {
	s   *components.Sim
	sw  *Switch
	eps []*endpoint
}

// netOpts are a test network's parameters.
type netOpts struct {
	timing    link.Timing   // every link, unless perPort sets one
	perPort   []link.Timing // optional per-port link timing
	epBlocks  int           // endpoint receive buffer per VL, blocks
	fcRefresh ib.PS         // 0 = link default
	mtu       int           // link MTU for the switch's buffer check; 0 = 4096
	perCycle  bool          // an allocation round on every core clock edge (WithRoundsEveryCycle)
	ar        *ARTable      // adaptive routing groups (WithAR); nil = static
	cc        *CCMarking    // FECN marking (WithCC); nil = congestion control off
	mft       *MFT          // multicast forwarding table (WithMFT); nil = no multicast
}

func newTestNet(t testing.TB, cfg Config, o netOpts) *testNet {
	s := components.NewSim()
	lft := NewLFT(cfg.Radix)
	for i := 0; i < cfg.Radix; i++ {
		lft.Set(uint16(i+1), i)
	}
	lc := link.Defaults()
	if o.mtu > 0 {
		lc.MTU = o.mtu
	}
	if o.fcRefresh > 0 {
		lc.FCRefreshNs = float64(o.fcRefresh) / 1000
	}
	b := MakeBuilder().WithSim(s).WithConfig(cfg).WithLFT(lft).WithFlowControl(lc)
	if o.perCycle {
		b = b.WithRoundsEveryCycle()
	}
	if o.ar != nil {
		b = b.WithAR(o.ar)
	}
	if o.cc != nil {
		b = b.WithCC(o.cc)
	}
	if o.mft != nil {
		b = b.WithMFT(o.mft)
	}
	sw, err := b.Build("Fabric.Switch[0]")
	require.NoError(t, err)
	n := &testNet{s: s, sw: sw}
	if o.epBlocks == 0 {
		o.epBlocks = 2048
	}
	for i := 0; i < cfg.Radix; i++ {
		e := &endpoint{idx: i, s: s, rng: rand.New(rand.NewPCG(uint64(i), 7))}
		e.port = link.NewPort(s, e, fmt.Sprintf("Fabric.Host[%d].Port[0]", i), 0, link.PortConfig{
			VLs: cfg.VLs, BufferBlocks: o.epBlocks,
			FCRefresh: ib.PS(lc.FCRefreshNs * 1000), FCMinInterval: ib.PS(lc.FCMinIntervalNs * 1000),
		})
		tm := o.timing
		if o.perPort != nil {
			tm = o.perPort[i]
		}
		link.Connect(e.port, sw.Port(i), tm)
		n.eps = append(n.eps, e)
	}
	return n
}

// packet makes a data packet from host src to host dst on sl/vl with
// payload bytes of payload (RDMA WRITE middle: 26 bytes of headers).
func (n *testNet) packet(src, dst int, vl uint8, payload int) *ib.Packet {
	p := n.s.NewPacket()
	p.Opcode = ib.RDMAWriteMiddle
	p.PayloadLen = payload
	p.SLID = uint16(src + 1)
	p.DLID = uint16(dst + 1)
	p.SL = vl
	p.VL = vl
	p.Src = int32(src)
	p.Dst = int32(dst)
	return p
}

// ndr is a 4x NDR link (400 Gb/s: 20 ps per byte) with the given head
// latency (FEC + propagation) in ps.
func ndr(latency ib.PS) link.Timing {
	return link.NewTiming(link.NDR, 4, latency, 0, link.CopperPsPerM)
}

// callback runs f when its event fires (a test's mid-run action: reset the
// statistics window at the end of warm-up).
type callback struct{ f func() }

func (c *callback) HandleEvent(*components.Event) { c.f() }

// at schedules f at time t.
func (n *testNet) at(t ib.PS, f func()) { n.s.Schedule(t, &callback{f}, 1) }
