package link

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TestBitErrorThreshold: a packet of b bits is corrupted with probability
// 1 − (1 − BER)^b, here from the closed form −expm1(b·log1p(−BER)) in
// float64, against the model's fixed-point power. The model's BER is
// rounded to a multiple of 2^-64 (relative error ≤ 2^-64 / 1e-12 ≈ 5e-8 at
// the smallest rate here) and each of its ≤ 32 fixed-point products is off
// by ≤ 2^-64, so 1e-6 relative is a loose bound.
func TestBitErrorThreshold(t *testing.T) {
	for _, ber := range []float64{1e-12, 1e-9, 1e-6, MaxBER} {
		for _, bytes := range []int{ib.FlowControlBytes, 30, 1000, 4142} {
			t.Run(fmt.Sprintf("%g-%d", ber, bytes), func(t *testing.T) {
				e := newBitErrors(ber, 1, "Test.Port[1]")
				got := float64(e.threshold(bytes)) / 0x1p64
				want := -math.Expm1(float64(8*bytes) * math.Log1p(-ber))
				assert.InEpsilon(t, want, got, 1e-6)
			})
		}
	}
	// A flow-control packet's threshold is the one for its 6 bytes.
	e := newBitErrors(1e-6, 1, "Test.Port[1]")
	assert.Equal(t, e.threshold(ib.FlowControlBytes), e.fcThr)
}

// TestBitErrorStreams: a port's draws depend on the seed and its name only:
// the same pair gives the same decisions, another name or seed others.
func TestBitErrorStreams(t *testing.T) {
	draws := func(seed uint64, name string) []bool {
		e := newBitErrors(1e-5, seed, name) // 4142 bytes: p = 1 − (1 − 1e-5)^33136 ≈ 28 %
		out := make([]bool, 256)
		for i := range out {
			out[i] = e.corrupt(4142)
		}
		return out
	}
	a := draws(7, "Fabric.Leaf[0].Port[3]")
	assert.Equal(t, a, draws(7, "Fabric.Leaf[0].Port[3]"))
	assert.NotEqual(t, a, draws(7, "Fabric.Leaf[0].Port[4]"))
	assert.NotEqual(t, a, draws(8, "Fabric.Leaf[0].Port[3]"))
}

// TestBitErrorFrequency: N draws at per-packet probability p give a
// binomial count, mean Np and σ = √(Np(1−p)). At BER 1e-6 a 4,142-byte
// packet (33,136 bits) has p = 1 − (1 − 1e-6)^33136 = 3.259 %; N = 200,000
// gives mean 6,518 and σ = 79.4: the count must lie within 5σ (a false
// failure once in 1.7 million seeds).
func TestBitErrorFrequency(t *testing.T) {
	const n = 200000
	p := -math.Expm1(33136 * math.Log1p(-1e-6))
	e := newBitErrors(1e-6, 42, "Test.Port[1]")
	k := 0
	for range n {
		if e.corrupt(4142) {
			k++
		}
	}
	mean, sigma := n*p, math.Sqrt(n*p*(1-p))
	assert.InDelta(t, mean, float64(k), 5*sigma, "corrupted %d of %d, expected %.0f ± %.1f", k, n, mean, sigma)
	// The draw allocates nothing (the hot path of a lossy link).
	assert.Zero(t, testing.AllocsPerRun(100, func() { e.corrupt(4142); e.corruptFC() }))
}

// fnProbe runs a function at a scheduled time.
type fnProbe func()

func (f fnProbe) HandleEvent(*components.Event) { f() }

// TestDiscardRecoversCredits: the first data packet on a link is corrupted.
// The receiver discards it at its tail (nothing reaches its owner, no block
// of its buffer is used) and the sender's credits for those blocks stay
// spent, until the sender's next flow-control packet (its periodic refresh
// at R, nothing else being sent) carries FCTBS to the receiver: ABR jumps to
// it, the receiver's limit rises by the lost blocks, and it sends that limit
// back at once (no later than fc_min_interval M after its own previous FC
// packet, its refresh at R). With L = FEC + propagation and S the 120 ps a
// 6-byte FC packet takes at 4x NDR (6 × 8 / 400 Gb/s):
//
//	R + L + S              the receiver's refresh lands: credits still short
//	R + L + S              the sender's refresh lands at the receiver: ABR resync
//	R + max(L+S, M) + L + S  the receiver's new limit lands: credits full
//
// A packet sent after that arrives as usual.
func TestDiscardRecoversCredits(t *testing.T) {
	for _, m := range []ib.PS{0, 1000 * ib.Nanosecond} {
		t.Run(fmt.Sprintf("min-interval-%dps", m), func(t *testing.T) {
			const bufBlocks = 200
			r := 10 * ib.Microsecond
			s := components.NewSim()
			pc := PortConfig{VLs: 1, BufferBlocks: bufBlocks, FCRefresh: r, FCMinInterval: m}
			sink := &holdSink{}
			a := NewPort(s, idleOwner{}, "Test.Src.Port[1]", 1, pc)
			b := NewPort(s, sink, "Test.Sink.Port[1]", 1, pc)
			cfg := Defaults()
			timing := cfg.Timing(2)
			Connect(a, b, timing)
			// Only a's data packets are corrupted, every one of them
			// (threshold 2^64 − 1); its FC packets and b's wire are clean.
			a.SetBitErrorRate(MaxBER, 1)
			pkt := s.NewPacket()
			pkt.Opcode, pkt.PayloadLen = ib.SendOnly, 4096
			bytes, blocks := pkt.WireBytes(), pkt.Credits() // 4,122 bytes: 65 blocks
			a.errs.lastBytes, a.errs.lastThr, a.errs.fcThr = bytes, ^uint64(0), 0
			recA, recB := &traceRecorder{}, &traceRecorder{}
			a.AcceptHook(recA)
			b.AcceptHook(recB)
			seq := pkt.Seq
			s.Schedule(0, fnProbe(func() { a.Send(pkt) }), 0)
			L, S := timing.Latency(), timing.Serialization(ib.FlowControlBytes)
			require.Equal(t, ib.PS(120), S)
			full := r + max(L+S, m) + L + S
			// After full, a clean packet goes through.
			s.Schedule(full+1, fnProbe(func() {
				assert.Equal(t, bufBlocks, a.CreditsAvailable(0), "credits back to the whole buffer")
				a.errs.lastThr = 0
				p2 := s.NewPacket()
				p2.Opcode, p2.PayloadLen = ib.SendOnly, 4096
				a.Send(p2)
			}), 0)
			s.StopAt(full + ib.Microsecond)
			require.NoError(t, s.Run())

			tail := L + timing.Serialization(bytes)
			assert.Equal(t, uint64(1), b.Errors.Packets)
			assert.Zero(t, b.Errors.FCPackets)
			assert.Equal(t, 1, sink.got, "only the second packet reached the owner")
			assert.Equal(t, uint64(1), b.Stats().RxPackets)
			// The discard is announced at the tail, as a drop with the packet.
			var drops []components.TraceEvent
			for _, e := range recB.evs {
				if e.Kind == components.TraceDrop {
					drops = append(drops, e)
				}
			}
			require.Len(t, drops, 1)
			assert.Equal(t, tail, drops[0].Time)
			got, _ := drops[0].Int("seq")
			assert.Equal(t, int64(seq), got)
			reason, _ := drops[0].Str("reason")
			assert.Equal(t, components.DropVCRC, reason)
			// The sender's credit updates: short by the lost blocks until
			// the resynchronised limit lands at full, whole from then on.
			var updates []components.TraceEvent
			for _, e := range recA.evs {
				if e.Kind == components.TraceCreditUpdate {
					updates = append(updates, e)
				}
			}
			require.GreaterOrEqual(t, len(updates), 2)
			avail := func(e components.TraceEvent) int64 { v, _ := e.Int("avail"); return v }
			assert.Equal(t, r+L+S, updates[0].Time)
			assert.Equal(t, int64(bufBlocks-blocks), avail(updates[0]), "the receiver's refresh, before its resync")
			assert.Equal(t, full, updates[1].Time)
			assert.Equal(t, int64(bufBlocks), avail(updates[1]), "the resynchronised limit")
		})
	}
}

// TestLostFCPacketRecoveredByRefresh: every flow-control packet from the
// receiver is lost for a while; the sender's credits for a packet the sink
// freed stay short until the first FC packet that gets through, the next
// refresh after the losses stop.
func TestLostFCPacketRecoveredByRefresh(t *testing.T) {
	const bufBlocks = 200
	r := 10 * ib.Microsecond
	s := components.NewSim()
	pc := PortConfig{VLs: 1, BufferBlocks: bufBlocks, FCRefresh: r}
	src := NewPort(s, idleOwner{}, "Test.Src.Port[1]", 1, pc)
	sink := &freeSink{s: s}
	b := NewPort(s, sink, "Test.Sink.Port[1]", 1, pc)
	sink.p = b
	cfg := Defaults()
	timing := cfg.Timing(2)
	Connect(src, b, timing)
	b.SetBitErrorRate(MaxBER, 1)
	b.errs.fcThr = ^uint64(0) // every FC packet b sends is lost
	s.Schedule(0, fnProbe(func() {
		pkt := s.NewPacket()
		pkt.Opcode, pkt.PayloadLen = ib.SendOnly, 4096
		src.Send(pkt)
	}), 0)
	// Losses stop after b's first refresh (at R); its next, at 2R, lands at
	// 2R + L + S.
	s.Schedule(r+1, fnProbe(func() { b.errs.fcThr = 0 }), 0)
	L, S := timing.Latency(), timing.Serialization(ib.FlowControlBytes)
	var before, after int
	s.Schedule(2*r+L+S-1, fnProbe(func() { before = src.CreditsAvailable(0) }), 0)
	s.Schedule(2*r+L+S+1, fnProbe(func() { after = src.CreditsAvailable(0) }), 0)
	s.StopAt(2*r + ib.Microsecond)
	require.NoError(t, s.Run())
	// The release's FC packet (at the tail) and the refresh at R were lost.
	assert.Equal(t, uint64(2), src.Errors.FCPackets)
	assert.Equal(t, bufBlocks-65, before, "4,122 bytes: 65 blocks still spent")
	assert.Equal(t, bufBlocks, after)
}

// freeSink frees each packet's blocks as its tail arrives.
type freeSink struct {
	s *components.Sim
	p *Port
}

func (f *freeSink) PacketArrived(p *Port, pkt *ib.Packet, head, tail ib.PS) {
	ev := f.s.Schedule(tail, f, 0)
	ev.Pkt = pkt
}

func (f *freeSink) HandleEvent(ev *components.Event) { f.p.Release(int(ev.Pkt.VL), ev.Pkt.Credits()) }

func (f *freeSink) PortReady(*Port) {}

// TestSetBitErrorRateZeroIsLossless: rate 0 leaves the wire error-free.
func TestSetBitErrorRateZeroIsLossless(t *testing.T) {
	s := components.NewSim()
	a := NewPort(s, idleOwner{}, "A.Port[1]", 1, PortConfig{VLs: 1, BufferBlocks: 100, FCRefresh: ib.Microsecond})
	a.SetBitErrorRate(0, 1)
	assert.False(t, a.flags.has(lossy))
	assert.Panics(t, func() { a.SetBitErrorRate(2*MaxBER, 1) })
}
