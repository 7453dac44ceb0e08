package link

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// testSource sends random-size packets on random VLs whenever the wire and
// credits allow, up to a count.
type testSource struct {
	s     *components.Sim
	p     *Port
	r     *rand.Rand
	vls   int
	mtu   int
	left  int
	sent  map[uint64]bool
	next  *ib.Packet
	check func()
}

func (src *testSource) PacketArrived(p *Port, pkt *ib.Packet, head, tail ib.PS) {
	panic("source got a packet")
}

func (src *testSource) PortReady(p *Port) {
	src.check()
	if src.left == 0 || !p.Idle() {
		return
	}
	if src.next == nil {
		pkt := src.s.NewPacket()
		pkt.Opcode = ib.SendOnly
		pkt.VL = uint8(src.r.IntN(src.vls))
		pkt.PayloadLen = src.r.IntN(src.mtu + 1)
		src.next = pkt
	}
	if !p.CanSend(src.next) {
		return // wait for credits: a PortReady follows each FC arrival
	}
	src.sent[src.next.Seq] = true
	p.Send(src.next)
	src.next = nil
	src.left--
}

// testSink holds each packet for a random time after its tail, then frees it.
type testSink struct {
	s        *components.Sim
	p        *Port
	r        *rand.Rand
	got      map[uint64]int
	maxHold  ib.PS
	check    func()
	received int
}

func (k *testSink) PacketArrived(p *Port, pkt *ib.Packet, head, tail ib.PS) {
	k.check()
	k.got[pkt.Seq]++
	ev := k.s.Schedule(tail+ib.PS(k.r.Int64N(int64(k.maxHold)+1)), k, 1)
	ev.Pkt = pkt
}

func (k *testSink) HandleEvent(ev *components.Event) {
	k.p.Release(int(ev.Pkt.VL), ev.Pkt.Credits())
	k.received++
	k.check()
}

func (k *testSink) PortReady(p *Port) {}

// TestRandomizedLossless checks (issue 2, d): over randomized seeds, buffer
// sizes, VL counts, packet sizes, cable lengths and drain delays, no VL's
// credits go negative or above its buffer, no buffer overflows, and every
// packet arrives exactly once.
func TestRandomizedLossless(t *testing.T) {
	cfg := Defaults()
	for seed := uint64(1); seed <= 25; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		s := components.NewSim()
		vls := []int{1, 2, 4, 8, 15}[r.IntN(5)]
		mtu := []int{256, 1024, 4096}[r.IntN(3)]
		maxBlocks := ib.Credits(mtu + 26)
		bufBlocks := maxBlocks + r.IntN(3*maxBlocks)
		pc := PortConfig{VLs: vls, BufferBlocks: bufBlocks, FCRefresh: ib.PS(1+r.IntN(5)) * ib.Microsecond,
			FCMinInterval: ib.PS(r.IntN(200)) * ib.Nanosecond}
		if seed%2 == 0 {
			// Half the seeds add a shared pool lent a largest packet at a time.
			pc.SharedBlocks, pc.LendBlocks = r.IntN(4*maxBlocks), maxBlocks
		}
		src := &testSource{s: s, r: r, vls: vls, mtu: mtu, left: 400 + r.IntN(400), sent: map[uint64]bool{}}
		sink := &testSink{s: s, r: r, got: map[uint64]int{}, maxHold: ib.PS(r.IntN(500)) * ib.Nanosecond}
		a := NewPort(s, src, "Test.Src.Port[1]", 1, pc)
		b := NewPort(s, sink, "Test.Sink.Port[1]", 1, pc)
		src.p, sink.p = a, b
		check := func() {
			for vl := 0; vl < vls; vl++ {
				avail := a.CreditsAvailable(vl)
				capacity := b.BufferCapacity(vl) // static + lent from the pool
				require.GreaterOrEqual(t, avail, 0, "seed %d vl %d credits", seed, vl)
				require.LessOrEqual(t, avail, capacity, "seed %d vl %d credits above buffer", seed, vl)
				require.LessOrEqual(t, b.BufferUsed(vl), capacity, "seed %d vl %d buffer", seed, vl)
				// Credits the sender believes it has plus blocks in the
				// buffer never exceed the buffer (blocks on the wire only
				// tighten this).
				require.LessOrEqual(t, avail+b.BufferUsed(vl), capacity, "seed %d vl %d", seed, vl)
			}
		}
		src.check, sink.check = check, check
		Connect(a, b, cfg.Timing(float64(r.IntN(200))))
		total := src.left
		src.PortReady(a)
		s.StopAt(50 * ib.Millisecond)
		// Stop once everything has drained.
		done := &stopWhen{s: s, cond: func() bool { return sink.received == total }}
		s.Schedule(0, done, 0)
		require.NoError(t, s.Run())
		require.Equal(t, total, sink.received, "seed %d: all packets delivered", seed)
		for seq := range src.sent {
			assert.Equal(t, 1, sink.got[seq], "seed %d packet %d delivered once", seed, seq)
		}
		assert.Len(t, sink.got, total)
		lent := 0
		for vl := 0; vl < vls; vl++ {
			assert.Equal(t, 0, b.BufferUsed(vl))
			lent += b.BufferCapacity(vl) - bufBlocks
		}
		// Pool blocks are conserved: free in the pool or lent to a VL. (A
		// lent block the sender has credit for stays lent until a packet
		// uses it and leaves: advertised credit is never taken back.)
		assert.Equal(t, pc.SharedBlocks, b.SharedFree()+lent, "seed %d pool", seed)
	}
}

// stopWhen polls a condition every microsecond and stops the simulation.
type stopWhen struct {
	s    *components.Sim
	cond func() bool
}

func (w *stopWhen) HandleEvent(ev *components.Event) {
	if w.cond() {
		w.s.Stop()
		return
	}
	w.s.Schedule(w.s.Now()+ib.Microsecond, w, 0)
}

// TestSerializationRounds checks the rational data rate: 6 bytes at NDR 4x
// (400 Gb/s exactly) take 120 ps; 4122 bytes at FDR 4x (54.5454… Gb/s) take
// 4122 × 8 / 54.5454e9 = 604.56 ns → 604560 ps.
func TestSerializationRounds(t *testing.T) {
	ndr := NewTiming(NDR, 4, 0, 0, 0)
	assert.Equal(t, ib.PS(120), ndr.Serialization(6))
	fdr := NewTiming(FDR, 4, 0, 0, 0)
	assert.Equal(t, ib.PS(604560), fdr.Serialization(4122))
	// RS(528,514) on 4x EDR: 5280 bits / 103.125 Gb/s = 51.2 ns (ib-facts §1).
	assert.Equal(t, ib.PS(51200), DefaultFECLatency(EDR, 4, FECRS528))
	// RS(544,514) on 4x NDR: 5440 / 425 Gb/s = 12.8 ns.
	assert.Equal(t, ib.PS(12800), DefaultFECLatency(NDR, 4, FECRS544))
}

// TestSharedPoolWidensWindow: one stream over a 100 m NDR fibre whose VL has a
// static buffer of one packet. Without a pool the window is one packet per
// credit round trip; a shared pool of seven packets lets the VL borrow, so
// throughput rises above the one-packet window and stays within the
// eight-packet window the static buffer plus the whole pool allow.
func TestSharedPoolWidensWindow(t *testing.T) {
	cfg := Defaults()
	cfg.Medium = "fibre"
	timing := cfg.Timing(100)
	pkt := ib.Packet{Opcode: ib.SendOnly, PayloadLen: 4096}
	blocks := pkt.Credits() // 65
	S := timing.Serialization(pkt.WireBytes())
	R := S + 2*timing.Latency() + timing.Serialization(ib.FlowControlBytes) // credit round trip
	run := func(pool int) float64 {
		s := components.NewSim()
		r := rand.New(rand.NewPCG(1, 2))
		src := &testSource{s: s, r: r, vls: 1, mtu: 4096, left: 400, sent: map[uint64]bool{}, check: func() {}}
		sink := &testSink{s: s, r: r, got: map[uint64]int{}, maxHold: 0, check: func() {}}
		pc := PortConfig{VLs: 1, BufferBlocks: blocks, FCRefresh: 100 * ib.Microsecond, SharedBlocks: pool, LendBlocks: blocks}
		a := NewPort(s, src, "Test.Src.Port[1]", 1, pc)
		b := NewPort(s, sink, "Test.Sink.Port[1]", 1, pc)
		src.p, sink.p = a, b
		fixed := &fixedSize{src}
		a.Owner = fixed
		Connect(a, b, timing)
		fixed.PortReady(a)
		done := &stopWhen{s: s, cond: func() bool { return sink.received == 400 }}
		s.Schedule(0, done, 0)
		require.NoError(t, s.Run())
		require.Equal(t, 400, sink.received)
		return 400 / float64(s.Now()) // packets per ps
	}
	one := 1 / float64(R)
	eight := 8 / float64(R)
	noPool := run(0)
	assert.InEpsilon(t, one, noPool, 0.02, "no pool: one packet per round trip")
	withPool := run(7 * blocks)
	assert.Greater(t, withPool, 7*one, "the pool widens the window to nearly static + pool")
	assert.LessOrEqual(t, withPool, eight*1.01, "at most static + pool in flight")
	t.Logf("packets per round trip: no pool %.2f, pool of 7 %.2f (at most 8)", noPool*float64(R), withPool*float64(R))
}

// fixedSize makes a testSource send 4096-byte packets only.
type fixedSize struct{ *testSource }

func (f *fixedSize) PortReady(p *Port) {
	if f.next == nil && f.left > 0 {
		pkt := f.s.NewPacket()
		pkt.Opcode = ib.SendOnly
		pkt.PayloadLen = 4096
		f.next = pkt
	}
	f.testSource.PortReady(p)
}

// TestVL15NotFlowControlled: VL15 (subnet management) has no credits (IBA
// C7-18): with VL0's credits used up by a sink that never frees them,
// management packets still start at once, arrive, and take no buffer.
func TestVL15NotFlowControlled(t *testing.T) {
	s := components.NewSim()
	held := &holdSink{}
	src := &idleOwner{}
	pc := PortConfig{VLs: 1, BufferBlocks: 2, FCRefresh: 10 * ib.Microsecond}
	a := NewPort(s, src, "Test.Src.Port[1]", 1, pc)
	b := NewPort(s, held, "Test.Sink.Port[1]", 1, pc)
	cfg := Defaults()
	Connect(a, b, cfg.Timing(2))
	data := s.NewPacket()
	data.Opcode, data.PayloadLen = ib.SendOnly, 64 // 90 bytes: 2 blocks, all of VL0's credit
	require.True(t, a.CanSend(data))
	a.Send(data)
	s.StopAt(20 * ib.Microsecond)
	mgmt := &sendLater{s: s, p: a}
	s.Schedule(ib.Microsecond, mgmt, 0)
	require.NoError(t, s.Run())
	assert.False(t, a.HasCredits(0, 1), "VL0 has no credit left: the sink holds its packet")
	assert.Equal(t, 3, mgmt.sent, "VL15 packets go regardless")
	assert.Equal(t, 4, held.got, "the data packet and three management packets arrived")
	assert.Equal(t, 2, b.BufferUsed(0), "management packets take no VL0 buffer")
}

type idleOwner struct{}

func (idleOwner) PacketArrived(*Port, *ib.Packet, ib.PS, ib.PS) {}
func (idleOwner) PortReady(*Port)                               {}

// holdSink keeps every packet (never releases a block).
type holdSink struct{ got int }

func (h *holdSink) PacketArrived(*Port, *ib.Packet, ib.PS, ib.PS) { h.got++ }
func (h *holdSink) PortReady(*Port)                               {}

// sendLater sends three VL15 packets, one per event, when the wire is idle.
type sendLater struct {
	s    *components.Sim
	p    *Port
	sent int
}

func (m *sendLater) HandleEvent(*components.Event) {
	pkt := m.s.NewPacket()
	pkt.Opcode, pkt.VL, pkt.PayloadLen = ib.UDSendOnly, ib.ManagementVL, 256
	if m.p.CanSend(pkt) {
		m.p.Send(pkt)
		m.sent++
	}
	if m.sent < 3 {
		m.s.Schedule(m.s.Now()+ib.Microsecond, m, 0)
	}
}

// traceRecorder keeps the trace lines a port announces.
type traceRecorder struct {
	evs  []components.TraceEvent
	s    *components.Sim // when set, said notes when each line was announced
	said []ib.PS
}

func (r *traceRecorder) Func(ctx sim.HookCtx) {
	if ev, ok := ctx.Item.(*components.TraceEvent); ok && ctx.Pos == components.HookPosTrace {
		e := *ev
		e.Fields = append([]components.TraceField(nil), ev.Fields...)
		r.evs = append(r.evs, e)
		if r.s != nil {
			r.said = append(r.said, r.s.Now())
		}
	}
}

// backToBack sends a packet, and its next one at the picosecond the wire
// frees, from an event it schedules before the send: that event runs ahead
// of the port's own wire-idle event of the same picosecond (FIFO among
// equals), so the next packet starts before the port has seen its wire go
// idle. Then a flow-control packet (a release the sink owes) may start at
// such an instant too.
type backToBack struct {
	s     *components.Sim
	p     *Port
	left  int
	quiet bool // SendQuiet: the tx_end lines come from the observer's events
}

func (b *backToBack) HandleEvent(*components.Event) {
	if b.left == 0 {
		return
	}
	pkt := b.s.NewPacket()
	pkt.Opcode, pkt.PayloadLen = ib.SendOnly, 64
	b.s.Schedule(b.s.Now()+b.p.timing.Serialization(pkt.WireBytes()), b, 0)
	if b.quiet {
		b.p.SendQuiet(pkt)
	} else {
		b.p.Send(pkt)
	}
	b.left--
}

// TestEveryTxStartHasTxEnd: a packet that starts at the instant the
// previous one's tail leaves used to overwrite the port's note of that
// packet before its wire-idle event ran, which then found the wire busy and
// wrote no tx_end (511 of 10,402 packets on a 90 % loaded fifo switch). Each
// tx_start must be followed by its own tx_end at start + serialization.
func TestEveryTxStartHasTxEnd(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) { everyTxStartHasTxEnd(t, quiet) })
	}
}

func everyTxStartHasTxEnd(t *testing.T, quiet bool) {
	s := components.NewSim()
	pc := PortConfig{VLs: 1, BufferBlocks: 64, FCRefresh: 10 * ib.Microsecond}
	src := &backToBack{s: s, left: 5, quiet: quiet}
	a := NewPort(s, idleOwner{}, "Test.Src.Port[1]", 1, pc)
	b := NewPort(s, &holdSink{}, "Test.Sink.Port[1]", 1, pc)
	cfg := Defaults()
	Connect(a, b, cfg.Timing(2))
	src.p = a
	rec := &traceRecorder{s: s}
	a.AcceptHook(rec)
	s.Schedule(0, src, 0)
	s.StopAt(ib.Microsecond)
	require.NoError(t, s.Run())

	// 64 B payload + 26 B of headers = 90 wire bytes; 4x NDR moves 50 bytes
	// per ns (400 Gb/s), so each packet holds the wire for 1.8 ns.
	ser := ib.PS(1800)
	require.Equal(t, ser, a.timing.Serialization(90))
	var starts, ends []ib.PS
	for i, e := range rec.evs {
		switch e.Kind {
		case components.TraceTxStart:
			starts = append(starts, e.Time)
		case components.TraceTxEnd:
			ends = append(ends, e.Time)
			// Written as the tail leaves, among that picosecond's lines,
			// not ahead of it.
			assert.Equal(t, e.Time, rec.said[i], "tx_end %d announced", len(ends)-1)
		}
	}
	require.Len(t, starts, 5)
	require.Len(t, ends, 5, "one tx_end per tx_start")
	for i := range starts {
		assert.Equal(t, ib.PS(i)*ser, starts[i], "packet %d starts as the previous one ends", i)
		assert.Equal(t, starts[i]+ser, ends[i], "packet %d's tx_end", i)
	}
}

// TestDeferredFCNotRepeated: with a minimum interval M, a credit change
// within M of a VL's last flow-control packet is deferred to M after it. A
// refresh that goes out meanwhile carries the change; the deferred packet
// then used to go anyway, a copy of the refresh's (749 repeats in 3,322
// packets with a 1 µs refresh, some 120 ps apart). A repeat is now sent only
// by a refresh, which every period sends changed or not: so an FC packet of
// a VL whose FCTBS and FCCL equal the previous one's must start within a
// refresh instant k × R plus the wait for the wire (at most one 4,122-byte
// packet, 82.44 ns at NDR 4x, and the FC packets of lower VLs ahead of it).
func TestDeferredFCNotRepeated(t *testing.T) {
	const refresh, minInterval = ib.Microsecond, 300 * ib.Nanosecond
	s := components.NewSim()
	r := rand.New(rand.NewPCG(9, 9))
	pc := PortConfig{VLs: 2, BufferBlocks: 130, FCRefresh: refresh, FCMinInterval: minInterval}
	src := &testSource{s: s, r: r, vls: 2, mtu: 4096, left: 3000, sent: map[uint64]bool{}, check: func() {}}
	sink := &testSink{s: s, r: r, got: map[uint64]int{}, maxHold: 40 * ib.Nanosecond, check: func() {}}
	a := NewPort(s, src, "Test.Src.Port[1]", 1, pc)
	b := NewPort(s, sink, "Test.Sink.Port[1]", 1, pc)
	src.p, sink.p = a, b
	cfg := Defaults()
	Connect(a, b, cfg.Timing(30))
	rec := &traceRecorder{}
	b.AcceptHook(rec)
	src.PortReady(a)
	s.Schedule(0, &stopWhen{s: s, cond: func() bool { return sink.received == 3000 }}, 0)
	require.NoError(t, s.Run())
	require.Equal(t, 3000, sink.received)

	wait := ib.PS(82440 + 2*120) // a data packet, then up to two FC packets
	type content struct{ fctbs, fccl int64 }
	last := map[int64]content{}
	fcs, repeats := 0, 0
	for _, e := range rec.evs {
		if e.Kind != components.TraceFCSend {
			continue
		}
		fcs++
		vl, _ := e.Int("vl")
		c := content{}
		c.fctbs, _ = e.Int("fctbs")
		c.fccl, _ = e.Int("fccl")
		if prev, ok := last[vl]; ok && prev == c {
			repeats++
			assert.LessOrEqual(t, e.Time%refresh, wait, "VL %d FC at %d ps repeats the previous one away from a refresh", vl, e.Time)
		}
		last[vl] = c
	}
	require.Greater(t, fcs, 1000, "enough flow-control traffic to test")
	require.Greater(t, repeats, 0, "refreshes repeat unchanged state")
}

// greedy sends a packet of payload bytes whenever the wire and credits
// allow, left times, and notes each one's tail.
type greedy struct {
	s       *components.Sim
	p       *Port
	payload int
	left    int
	tails   []ib.PS
}

func (g *greedy) PacketArrived(*Port, *ib.Packet, ib.PS, ib.PS) {}

func (g *greedy) PortReady(p *Port) {
	for g.left > 0 {
		pkt := g.s.NewPacket()
		pkt.Opcode, pkt.PayloadLen = ib.SendOnly, g.payload
		if !p.CanSend(pkt) {
			return
		}
		g.tails = append(g.tails, p.Send(pkt))
		g.left--
	}
}

// releaser frees every packet as its head arrives.
type releaser struct{}

func (releaser) PacketArrived(p *Port, pkt *ib.Packet, head, tail ib.PS) {
	p.Release(int(pkt.VL), pkt.Credits())
}
func (releaser) PortReady(*Port) {}

// TestBackToBackWireTimeIsExact: packets sent back to back take exactly
// their bytes × 8 / rate in total, not the sum of each packet's rounded
// time. 12x XDR moves 12 × 212.5 Gb/s × 16/17 = 2400 Gb/s, so a byte takes
// 8 / 2400e9 s = 10/3 ps; a SEND_ONLY of 6 payload bytes is 26 + 6 + 2 pad =
// 34 bytes, 113.33 ps. 3000 of them end at 3000 × 34 × 10/3 = 340,000 ps;
// rounded one by one (113 ps each) they ended at 339,000 ps, 0.3 % faster
// than the link can carry. 4x FDR: 4 × 14.0625 Gb/s × 64/66 = 600/11 Gb/s,
// a byte 440/3 ps; a 2-byte payload is 26 + 2 + 2 = 30 bytes = 4400 ps
// exactly, a 1-byte one 26 + 1 + 3 = 30 as well, so use 5 bytes: 26 + 5 + 3
// = 34 bytes = 14960/3 = 4986.67 ps, and 3000 end at 14,960,000 ps.
func TestBackToBackWireTimeIsExact(t *testing.T) {
	for _, tc := range []struct {
		gen     Generation
		lanes   int
		payload int
		perPkt  [2]ib.PS // the exact time lies between
		end     ib.PS
	}{
		{XDR, 12, 6, [2]ib.PS{113, 114}, 340_000},
		{FDR, 4, 5, [2]ib.PS{4986, 4987}, 14_960_000},
	} {
		t.Run(fmt.Sprintf("%s-%dx", tc.gen, tc.lanes), func(t *testing.T) {
			const n = 3000
			s := components.NewSim()
			src := &greedy{s: s, payload: tc.payload, left: n}
			pc := PortConfig{VLs: 1, BufferBlocks: 2048, FCRefresh: ib.Second}
			a := NewPort(s, src, "Test.Src.Port[1]", 1, pc)
			b := NewPort(s, releaser{}, "Test.Sink.Port[1]", 1, pc)
			src.p = a
			Connect(a, b, NewTiming(tc.gen, tc.lanes, 0, 2, CopperPsPerM))
			src.PortReady(a)
			s.StopAt(100 * ib.Microsecond)
			require.NoError(t, s.Run())
			require.Len(t, src.tails, n)
			assert.Equal(t, tc.end, src.tails[n-1], "the last tail leaves at exactly n × bytes × 8 / rate")
			assert.Equal(t, tc.end, a.Stats().BusyPS, "the wire was busy all along")
			prev := ib.PS(0)
			for i, tail := range src.tails {
				d := tail - prev
				assert.True(t, d == tc.perPkt[0] || d == tc.perPkt[1], "packet %d took %d ps", i, d)
				prev = tail
			}
		})
	}
}
