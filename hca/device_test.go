package hca

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// edrLink is EDR 4x over 0.5 m of copper with a 4096-byte MTU.
func edrLink() link.Config {
	lc := link.Defaults()
	lc.Generation, lc.Width, lc.LengthM, lc.MTU = "EDR", "4x", 0.5, 4096
	return lc
}

// pair is two connected hosts with one RC QP each and registered buffers.
type pair struct {
	s          *components.Sim
	a, b       *Device
	qa, qb     *QP
	bufA, bufB uint64
	mrA, mrB   MR
}

func newPair(t *testing.T, lc link.Config, cfg Config, bufBytes int) *pair {
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	p := &pair{s: s, a: a, b: b}
	pdA, pdB := a.AllocPD(), b.AllocPD()
	p.qa = a.CreateQP(pdA, a.CreateCQ(1024), a.CreateCQ(1024), 512, 512)
	p.qb = b.CreateQP(pdB, b.CreateCQ(1024), b.CreateCQ(1024), 512, 512)
	require.NoError(t, ConnectRC(p.qa, p.qb, lc.MTU, 0x10, 0x20))
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic
	p.bufA, p.bufB = a.Malloc(bufBytes), b.Malloc(bufBytes)
	p.mrA = a.RegMR(pdA, p.bufA, bufBytes, acc)
	p.mrB = b.RegMR(pdB, p.bufB, bufBytes, acc)
	return p
}

// run runs until both CPUs have nothing left and stops the link timers.
func (p *pair) runUntil(t *testing.T, done func() bool) {
	var check func(now ib.PS)
	check = func(now ib.PS) {
		if done() {
			p.s.Stop()
		}
	}
	p.a.OnCQE = func(_ *CQ, now ib.PS) { check(now) }
	p.b.OnCQE = func(_ *CQ, now ib.PS) { check(now) }
	p.s.StopAt(10 * ib.Millisecond)
	require.NoError(t, p.s.Run())
}

// pollBoth runs until A's send queue has completed sends and B's receive
// queue recvs work requests, and returns those completions.
func (p *pair) pollBoth(t *testing.T, sends, recvs int) (sa, rb [8]WC) {
	na, nb := 0, 0
	p.runUntil(t, func() bool {
		na += p.a.PollCQ(p.qa.SendCQ, sa[na:])
		nb += p.b.PollCQ(p.qb.RecvCQ, rb[nb:])
		return na == sends && nb == recvs
	})
	require.Equal(t, sends, na)
	require.Equal(t, recvs, nb)
	return sa, rb
}

func TestOneWriteMovesData(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	src := make([]byte, 10000)
	for i := range src {
		src[i] = byte(i*13 + 7)
	}
	p.a.Mem.Write(p.bufA, src)
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 42, Opcode: WRRDMAWrite, Signaled: true,
		LocalAddr: p.bufA, Length: uint32(len(src)), LKey: p.mrA.LKey, RemoteAddr: p.bufB + 8, RKey: p.mrB.RKey}))
	var wcs [4]WC
	n := 0
	p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[n:]); return n > 0 })
	require.Equal(t, 1, n)
	assert.Equal(t, WC{WRID: 42, Status: WCSuccess, Opcode: WCRDMAWrite, ByteLen: 10000, QPN: p.qa.Num}, wcs[0])
	got := make([]byte, len(src))
	p.b.Mem.Read(p.bufB+8, got)
	assert.Equal(t, src, got)
}

func TestOneMessageLatencyDerivedStageByStage(t *testing.T) {
	cfg := Defaults()
	lc := edrLink()
	p := newPair(t, lc, cfg, 4096)
	p.a.Mem.Write(p.bufA, []byte{0xAB, 0xCD})
	var visible ib.PS
	p.b.OnMemWrite = func(addr uint64, n int, now ib.PS) {
		visible = now
		p.s.Stop()
	}
	// An inline 2-byte RDMA WRITE: BlueFlame carries the WQE with the
	// doorbell, so there is no WQE fetch and no payload DMA read.
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{Opcode: WRRDMAWrite, Inline: true, LocalAddr: p.bufA,
		Length: 2, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	p.s.StopAt(ib.Millisecond)
	require.NoError(t, p.s.Run())

	ns := func(f float64) ib.PS { return ib.PS(f * 1000) }
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	timing := lc.Timing(lc.LengthM)
	// RDMA_WRITE_ONLY: LRH 8 + BTH 12 + RETH 16 + 2 payload + 2 pad + ICRC 4 + VCRC 2 = 46 B.
	pkt := ib.Packet{Opcode: ib.RDMAWriteOnly, PayloadLen: 2}
	require.Equal(t, 46, pkt.WireBytes())
	pcie := NewPCIe(cfg.PCIe)
	want := ns(cfg.Host.PostNS) + // CPU builds the WQE and stores the doorbell
		ns(cfg.PCIe.MMIOLatencyNS) + // BlueFlame write reaches the HCA
		ib.PS(cfg.Doorbell.LatencyCycles)*cyc + // doorbell stage
		ib.PS(cfg.WQEFetch.LatencyCycles)*cyc + // parse the one WQEBB
		ib.PS(cfg.TransportTx.LatencyCycles)*cyc + // build the packet
		timing.Latency() + timing.Serialization(46) + // FEC + cable, then the tail
		ib.PS(cfg.TransportRx.LatencyCycles)*cyc + // parse at the responder
		ib.PS(cfg.KeyCheck.LatencyCycles)*cyc + // R_Key lookup: a miss, the cache is cold
		pcie.SerPS(cfg.PCIe.TLPOverheadBytes) + // ...so B reads the MKey context: request TLP up,
		ns(cfg.PCIe.ReadLatencyNS) + // the host's read latency,
		pcie.SerPS(MKeyContextBytes+cfg.PCIe.CompletionOverheadBytes) + // one 64-B completion down
		ib.PS(cfg.DMA.LatencyCycles)*cyc + // DMA engine issues the write
		pcie.SerPS(2+cfg.PCIe.TLPOverheadBytes) + ns(cfg.PCIe.WriteLatencyNS) // posted write lands
	// With the defaults: 60 + 308 + 20 + 10 + 40 + (2.138 + 3.68) + 40 + 10
	// + (1.524 + 533 + 5.333) + 10 + 1.651 + 200 ns. Gen3 x16 moves a byte
	// in 8000 × 130 / (8 × 16 × 128) = 63.4765625 ps, so the 24-byte request
	// takes 1523.4 → 1524 ps and the 84-byte completion 5332.03 → 5333 ps
	// (rounded up): the miss costs 539.857 ns, 39.857 more than the fixed
	// 500 ns it replaced (1205.469 ns then).
	assert.Equal(t, ib.PS(1_245_326), want)
	assert.Equal(t, want, visible)
	got := make([]byte, 2)
	p.b.Mem.Read(p.bufB, got)
	assert.Equal(t, []byte{0xAB, 0xCD}, got)
}

func TestRetryAfterDroppedAck(t *testing.T) {
	cfg := Defaults()
	cfg.RetryTimeout = 1 // 8.192 µs
	p := newPair(t, edrLink(), cfg, 1<<16)
	src := make([]byte, 9000) // three packets
	for i := range src {
		src[i] = byte(i)
	}
	p.a.Mem.Write(p.bufA, src)
	p.a.DropAcks = 1 // the test's fault: the first ACK is lost
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 7, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA,
		Length: 9000, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	var wcs [2]WC
	n := 0
	var doneAt ib.PS
	p.runUntil(t, func() bool {
		n += p.a.PollCQ(p.qa.SendCQ, wcs[n:])
		doneAt = p.s.Now()
		return n > 0
	})
	require.Equal(t, 1, n)
	assert.Equal(t, WCSuccess, wcs[0].Status)
	assert.Equal(t, int64(1), p.a.Counters.AcksDropped)
	assert.Equal(t, int64(1), p.a.Counters.Timeouts)
	assert.Equal(t, int64(1), p.qa.Requester().Retries)
	// The only AckReq was on the last packet, whose ACK was lost: nothing
	// of the message is acknowledged, so the timeout resends all three
	// packets, 6 request packets in all.
	assert.Equal(t, int64(6), p.a.Counters.ReqPackets)
	// The duplicates are acknowledged, not written again. Each draws an
	// ACK of the last PSN; the first of them completes the WRITE, so at
	// completion B has sent two ACKs: the lost one and that one.
	assert.Equal(t, int64(9000), p.b.Counters.PayloadRx)
	assert.Equal(t, int64(2), p.b.Counters.Acks)
	// The completion comes after the timeout: 4.096 µs × 2^1.
	assert.Greater(t, doneAt, RetryTimeoutPS(1))
	got := make([]byte, len(src))
	p.b.Mem.Read(p.bufB, got)
	assert.Equal(t, src, got)
}

// TestTimeoutResendsOnlyUnacknowledged: with ack_req_every 4, a 12-packet
// WRITE (48 KiB at a 4096-byte MTU, PSNs 0x10–0x1B) asks for ACKs on
// packets 3, 7 and 11. Packets 9–11 are lost the first time. The responder
// has 0–8: it ACKs 3 and 7 and, with no later packet to show it a gap,
// sends no NAK. The ACK of 7 acknowledges packets 0–7, so the timeout
// resends 8–11, four packets (16 request packets in all, where resending
// the whole message made 24). 8 is a duplicate: it draws an ACK of 8 and is
// not written again; 11 draws the last ACK. B sends 4 ACKs and writes each
// of the 12 × 4096 bytes once.
func TestTimeoutResendsOnlyUnacknowledged(t *testing.T) {
	cfg := Defaults()
	cfg.AckReqEvery = 4
	cfg.RetryTimeout = 4 // 65.536 µs: far above the 0.5 m round trip
	p := newPair(t, edrLink(), cfg, 1<<16)
	const n, mtu, first = 12, 4096, 0x10
	src := make([]byte, n*mtu)
	for i := range src {
		src[i] = byte(i*5 + 3)
	}
	p.a.Mem.Write(p.bufA, src)
	lost := map[uint32]bool{}
	var acksFromB []uint32
	tapB := tapPort(p.b)
	tapB.drop = func(pkt *ib.Packet) bool {
		i := pkt.PSN - first
		if i >= 9 && !lost[i] {
			lost[i] = true
			return true
		}
		return false
	}
	tapA := tapPort(p.a)
	tapA.drop = func(pkt *ib.Packet) bool {
		if pkt.Opcode == ib.Acknowledge {
			acksFromB = append(acksFromB, pkt.PSN-first)
		}
		return false
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 9, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA,
		Length: n * mtu, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	var wcs [2]WC
	k := 0
	p.runUntil(t, func() bool { k += p.a.PollCQ(p.qa.SendCQ, wcs[k:]); return k > 0 })
	require.Equal(t, 1, k)
	assert.Equal(t, WCSuccess, wcs[0].Status)
	assert.Equal(t, 3, tapB.dropped)
	assert.Equal(t, int64(1), p.a.Counters.Timeouts)
	assert.Equal(t, int64(1), p.qa.Requester().Retries)
	assert.Equal(t, int64(n+4), p.a.Counters.ReqPackets, "12, then 8–11 again")
	assert.Equal(t, []uint32{3, 7, 8, 11}, acksFromB)
	assert.Equal(t, int64(4), p.b.Counters.Acks)
	assert.Equal(t, int64(n*mtu), p.b.Counters.PayloadRx, "every byte written once")
	got := make([]byte, len(src))
	p.b.Mem.Read(p.bufB, got)
	assert.Equal(t, src, got)
}

// TestShortTimerLongCableCompletes: the local ACK timeout is shorter than
// the time a credit-limited message takes to send. Over 3 km of copper
// (3,000 × 4.276 ns ≈ 12.8 µs each way, a credit round trip R ≈ 26 µs) the
// 32 KiB receive buffer (512 credits) holds 7 of a 64 KiB message's 16
// packets (4138 wire bytes, 65 credits each: 7 × 65 = 455 ≤ 512 < 8 × 65),
// and the timer, 4.096 µs × 2¹ = 8.192 µs,
// fires before any ACK can come back. Resending the whole message at each
// timeout never got past packet 6: the run livelocked. Now each window of 7
// packets goes out (time t), goes again when its credits return (t + R:
// the timeouts in between rewound to its start), and those duplicates draw
// ACKs of its last packet, which arrive at t + 2R with the credits of the
// duplicates, just after the window went a third time; the next timeout
// resends from the next window, when credits return at t + 3R. Packets
// 0–6 and 7–13 take 3R each; 14–15 end with the LAST's AckReq, answered
// one R later: the WRITE or SEND, posted at time 0, completes a little
// after 7R, well before 8R.
func TestShortTimerLongCableCompletes(t *testing.T) {
	for _, op := range []WROpcode{WRRDMAWrite, WRSend} {
		t.Run(op.String(), func(t *testing.T) {
			cfg := Defaults()
			cfg.RetryTimeout = 1
			lc := edrLink()
			lc.LengthM = 3000
			p := newPair(t, lc, cfg, 1<<17)
			const size = 1 << 16
			src := make([]byte, size)
			for i := range src {
				src[i] = byte(i*11 + 5)
			}
			p.a.Mem.Write(p.bufA, src)
			if op == WRSend {
				require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 3, Addr: p.bufB, Length: size, LKey: p.mrB.LKey}))
			}
			require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 4, Opcode: op, Signaled: true, LocalAddr: p.bufA,
				Length: size, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
			var wcs [2]WC
			k := 0
			var doneAt ib.PS
			p.runUntil(t, func() bool {
				k += p.a.PollCQ(p.qa.SendCQ, wcs[k:])
				doneAt = p.s.Now()
				return k > 0
			})
			require.Equal(t, 1, k, "the message completes")
			assert.Equal(t, WCSuccess, wcs[0].Status)
			assert.Positive(t, p.a.Counters.Timeouts)
			assert.Equal(t, int64(size), p.b.Counters.PayloadRx, "every byte written once")
			got := make([]byte, size)
			p.b.Mem.Read(p.bufB, got)
			assert.Equal(t, src, got)
			// R is at least the cable's two flights, 2 × 12.828 µs.
			rtt := 2 * lc.Timing(lc.LengthM).Propagation
			assert.Greater(t, doneAt, 7*rtt)
			assert.Less(t, doneAt, 8*rtt)
		})
	}
}

// TestLostReadResponseRetriedAtOnce: a READ's middle response packet is
// lost while 20 WRITEs follow it. The ACK of the first WRITE, past the
// READ's PSNs, is an implied NAK: the READ is retried at once rather than
// after the local ACK timeout (67 ms with the default retry_timeout 14),
// and the WRITEs complete behind it.
func TestLostReadResponseRetriedAtOnce(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	data := make([]byte, 3*4096) // three response packets: FIRST, MIDDLE, LAST
	for i := range data {
		data[i] = byte(i*7 + 3)
	}
	p.b.Mem.Write(p.bufB, data)
	lose := tapPort(p.a)
	lose.drop = func(pkt *ib.Packet) bool {
		return pkt.Opcode == ib.RDMAReadResponseMiddle && lose.dropped == 0
	}
	reads := 0
	tapPort(p.b).drop = func(pkt *ib.Packet) bool {
		if pkt.Opcode == ib.RDMAReadRequest {
			reads++
		}
		return false
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA,
		Length: uint32(len(data)), LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	const writes = 20
	for i := 0; i < writes; i++ {
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: uint64(10 + i), Opcode: WRRDMAWrite, Signaled: true,
			LocalAddr: p.bufA + 0x8000, Length: 64, LKey: p.mrA.LKey, RemoteAddr: p.bufB + 0x8000, RKey: p.mrB.RKey}))
	}
	var wcs [writes + 1]WC
	n := 0
	p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[n:]); return n == len(wcs) })
	require.Equal(t, len(wcs), n)
	for i, wc := range wcs {
		assert.Equal(t, WCSuccess, wc.Status, "completion %d", i)
	}
	assert.Equal(t, uint64(1), wcs[0].WRID, "the READ first, in order")
	got := make([]byte, len(data))
	p.a.Mem.Read(p.bufA, got)
	assert.Equal(t, data, got)
	assert.Equal(t, 1, lose.dropped)
	assert.Equal(t, int64(0), p.a.Counters.Timeouts)
	assert.Equal(t, int64(1), p.qa.Requester().Retries)
	assert.Equal(t, 2, reads, "the READ request went twice")
	assert.Less(t, p.s.Now(), RetryTimeoutPS(Defaults().RetryTimeout))
}

// TestTimerNotRestartedBehindUnansweredRead: when the retried READ's
// response is lost too, only the timer can recover it, and ACKs of the
// WRITEs streaming behind it must not restart the timer: they acknowledge
// nothing the requester can complete. A 64-byte READ is followed by 400
// 4 KiB WRITEs (about 140 µs of wire time at EDR). Its response is lost;
// the ACK of the first WRITE retries it at once (implied NAK) and starts
// the timer, 4.096 µs × 2^4 = 65.536 µs; the retried response is lost
// too. The timeout then fires exactly 65.536 µs after that retry, while
// the WRITEs still stream, not 65.536 µs after the stream's last ACK.
func TestTimerNotRestartedBehindUnansweredRead(t *testing.T) {
	cfg := Defaults()
	cfg.RetryTimeout = 4
	timeout := RetryTimeoutPS(cfg.RetryTimeout)
	require.Equal(t, 65_536*ib.Nanosecond, timeout)
	p := newPair(t, edrLink(), cfg, 1<<22)
	lose := tapPort(p.a)
	var retryAt, lastWrite ib.PS
	var beforeDeadline, afterDeadline int64 = -1, -1
	lose.drop = func(pkt *ib.Packet) bool {
		return pkt.Opcode == ib.RDMAReadResponseOnly && lose.dropped < 2
	}
	// The first ACK after the lost response is the implied NAK: the
	// requester acts on it when its tail has passed the transport-rx stage
	// (40 cycles), and arms the timer then.
	tap := &ackWatch{Owner: lose, onAck: func(tail ib.PS) {
		if retryAt != 0 || lose.dropped != 1 {
			return
		}
		retryAt = tail + ib.PS(cfg.TransportRx.LatencyCycles)*p.a.CyclePS()
		deadline := retryAt + timeout
		p.s.Schedule(deadline-1, &poster{fn: func() { beforeDeadline = p.a.Counters.Timeouts }}, 1)
		p.s.Schedule(deadline+1, &poster{fn: func() { afterDeadline = p.a.Counters.Timeouts }}, 1)
	}}
	p.a.Port.Owner = tap
	tapPort(p.b).drop = func(pkt *ib.Packet) bool {
		lastWrite = p.s.Now()
		return false
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA,
		Length: 64, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	const writes = 400
	for i := 0; i < writes; i++ {
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: uint64(10 + i), Opcode: WRRDMAWrite, Signaled: true,
			LocalAddr: p.bufA + 0x10000, Length: 4096, LKey: p.mrA.LKey, RemoteAddr: p.bufB + 0x10000, RKey: p.mrB.RKey}))
	}
	var wcs [writes + 1]WC
	n := 0
	var readDone ib.PS
	p.runUntil(t, func() bool {
		k := p.a.PollCQ(p.qa.SendCQ, wcs[n:])
		if n == 0 && k > 0 {
			readDone = p.s.Now()
		}
		n += k
		return n == len(wcs)
	})
	require.Equal(t, len(wcs), n)
	assert.Equal(t, 2, lose.dropped)
	require.NotZero(t, retryAt)
	assert.Equal(t, int64(0), beforeDeadline, "no timeout before retry + 65.536 µs")
	assert.Equal(t, int64(1), afterDeadline, "the timeout at retry + 65.536 µs")
	assert.Equal(t, int64(1), p.a.Counters.Timeouts)
	assert.Equal(t, int64(2), p.qa.Requester().Retries, "the implied NAK and the timeout")
	assert.Less(t, readDone, lastWrite, "the READ recovered while the WRITEs still streamed")
}

// ackWatch passes packets on to Owner and reports each ACK's tail time.
type ackWatch struct {
	link.Owner
	onAck func(tail ib.PS)
}

func (w *ackWatch) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	if pkt.Opcode == ib.Acknowledge {
		w.onAck(tail)
	}
	w.Owner.PacketArrived(p, pkt, head, tail)
}

func TestRKeyViolationOnDevice(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	before := make([]byte, 1<<16)
	p.b.Mem.Read(p.bufB, before)
	// A region at B without REMOTE_WRITE.
	ro := p.b.RegMR(p.qb.PD, p.bufB, 4096, AccessRemoteRead)
	wrs := []SendWR{
		{ID: 1, Opcode: WRRDMAWrite, Signaled: false, LocalAddr: p.bufA, Length: 5000, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: ro.RKey},
		{ID: 2, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 10, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey},
		{ID: 3, Opcode: WRSend, Signaled: true, LocalAddr: p.bufA, Length: 10, LKey: p.mrA.LKey},
	}
	for i := range wrs {
		require.NoError(t, p.a.PostSend(p.qa, &wrs[i]))
	}
	var wcs [8]WC
	n := 0
	posted4 := false
	p.runUntil(t, func() bool {
		n += p.a.PollCQ(p.qa.SendCQ, wcs[n:])
		if n >= 3 && !posted4 {
			// A WR posted to the QP in ERR is flushed too.
			posted4 = true
			require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 4, Opcode: WRSend, LocalAddr: p.bufA, Length: 1, LKey: p.mrA.LKey}))
		}
		return n >= 4
	})
	require.Equal(t, 4, n)
	// The failed WR completes though unsignaled (errors always complete).
	assert.Equal(t, WC{WRID: 1, Status: WCRemAccessErr, Opcode: WCRDMAWrite, ByteLen: 5000, QPN: p.qa.Num}, wcs[0])
	assert.Equal(t, WCWRFlushErr, wcs[1].Status)
	assert.Equal(t, uint64(2), wcs[1].WRID)
	assert.Equal(t, WCWRFlushErr, wcs[2].Status)
	assert.Equal(t, QPErr, p.qa.Requester().State)
	assert.Equal(t, QPErr, p.qb.Responder().State)
	assert.Equal(t, int64(0), p.b.Counters.PayloadRx, "not one byte written at the responder")
	after := make([]byte, 1<<16)
	p.b.Mem.Read(p.bufB, after)
	assert.Equal(t, before, after)
	assert.Equal(t, int64(1), p.b.Counters.Naks)
	assert.Equal(t, WC{WRID: 4, Status: WCWRFlushErr, Opcode: WCSend, ByteLen: 1, QPN: p.qa.Num}, wcs[3])
	// The responder's QP is in ERR too.
	assert.Equal(t, QPErr, p.qb.State)
}

func TestResponderErrorFlushesReceives(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	// Two receives posted at B, then a WRITE with a bad R_Key: B's QP goes
	// to ERR and both receives complete with WR_FLUSH_ERR.
	for i := 0; i < 2; i++ {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: uint64(50 + i), Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	}
	post := &poster{fn: func() {
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 8,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey ^ 0x80}))
	}}
	p.s.Schedule(5*ib.Microsecond, post, 1)
	var wb [4]WC
	n := 0
	p.runUntil(t, func() bool { n += p.b.PollCQ(p.qb.RecvCQ, wb[n:]); return n >= 2 })
	require.Equal(t, 2, n)
	for i := 0; i < 2; i++ {
		assert.Equal(t, WC{WRID: uint64(50 + i), Status: WCWRFlushErr, Opcode: WCRecv, QPN: p.qb.Num}, wb[i])
	}
	assert.Equal(t, QPErr, p.qb.State)
}

// TestRequesterErrorFlushesReceives: IBA's Error state is the whole QP's.
// A's WRITE with a bad R_Key comes back NAK remote access error: A's send
// side completes it REM_ACCESS_ERR, and the two receives A had posted
// (IDs 60, 61) complete WR_FLUSH_ERR in posting order on A's receive CQ,
// byte_len 0, with no RQ doorbell after the error (the model used to wait
// for the next one). A's responder is in ERR too: B's SEND posted after
// the error is not taken by A (A's counters see no request after the
// WRITE's NAK: 0 payload bytes received), so B's SEND never completes
// successfully.
func TestRequesterErrorFlushesReceives(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	for i := 0; i < 2; i++ {
		require.NoError(t, p.a.PostRecv(p.qa, &RecvWR{ID: uint64(60 + i), Addr: p.bufA + 4096, Length: 64, LKey: p.mrA.LKey}))
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 8,
		LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey ^ 0x80}))
	var sa, ra [4]WC
	na, nra := 0, 0
	sentB := false
	p.runUntil(t, func() bool {
		na += p.a.PollCQ(p.qa.SendCQ, sa[na:])
		nra += p.a.PollCQ(p.qa.RecvCQ, ra[nra:])
		if na >= 1 && !sentB {
			sentB = true
			require.NoError(t, p.b.PostSend(p.qb, &SendWR{ID: 9, Opcode: WRSend, Signaled: true, LocalAddr: p.bufB, Length: 4, LKey: p.mrB.LKey}))
		}
		return na >= 1 && nra >= 2
	})
	p.s.StopAt(p.s.Now() + 50*ib.Microsecond)
	require.NoError(t, p.s.Run())
	nra += p.a.PollCQ(p.qa.RecvCQ, ra[nra:])
	require.Equal(t, 1, na)
	assert.Equal(t, WC{WRID: 1, Status: WCRemAccessErr, Opcode: WCRDMAWrite, ByteLen: 8, QPN: p.qa.Num}, sa[0])
	require.Equal(t, 2, nra, "each receive posted at A completes once, flushed")
	for i := 0; i < 2; i++ {
		assert.Equal(t, WC{WRID: uint64(60 + i), Status: WCWRFlushErr, Opcode: WCRecv, QPN: p.qa.Num}, ra[i])
	}
	assert.Equal(t, QPErr, p.qa.State)
	assert.Equal(t, QPErr, p.qa.Responder().State, "A's responder is in ERR with its QP")
	assert.Equal(t, int64(0), p.a.Counters.PayloadRx, "A took nothing of B's SEND")
	var sb [4]WC
	for _, w := range sb[:p.b.PollCQ(p.qb.SendCQ, sb[:])] {
		assert.NotEqual(t, WCSuccess, w.Status, "B's SEND was not received")
	}
}

// TestBadRKeyWriteImmCompletesEveryReceive: a WRITE_WITH_IMM with a bad
// R_Key must not lose a receive WQE. Every receive posted at the responder
// completes exactly once. A single-packet RDMA_WRITE_ONLY_WITH_IMM has taken
// the first receive (for its immediate) when the R_Key check fails, so that
// receive completes with REM_ACCESS_ERR and the next is flushed (rxe
// rxe_resp.c: check_resource peeks the WQE, the R_Key violation is a class C
// error whose do_complete posts it with IB_WC_REM_ACCESS_ERR). A two-packet
// message fails on RDMA_WRITE_FIRST, which takes no receive: both are flushed.
func TestBadRKeyWriteImmCompletesEveryReceive(t *testing.T) {
	tests := []struct {
		name   string
		length uint32
		want   [2]WCStatus // receives 100 and 101
	}{
		// 100 B ≤ MTU 4096: one RDMA_WRITE_ONLY_WITH_IMM packet.
		{"one packet", 100, [2]WCStatus{WCRemAccessErr, WCWRFlushErr}},
		// ⌈5000 / 4096⌉ = 2 packets: FIRST (RETH, checked) then LAST_WITH_IMM.
		{"two packets", 5000, [2]WCStatus{WCWRFlushErr, WCWRFlushErr}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const region = 1 << 16
			p := newPair(t, edrLink(), Defaults(), region)
			before := make([]byte, region)
			p.b.Mem.Read(p.bufB, before)
			for i := 0; i < 2; i++ {
				require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: uint64(100 + i), Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
			}
			require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMAWriteImm, Signaled: true, LocalAddr: p.bufA,
				Length: tc.length, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey ^ 0x80, Imm: 7}))
			// Run well past the NAK's round trip (a few µs) so that a late or
			// duplicate completion would be seen too.
			p.s.StopAt(100 * ib.Microsecond)
			require.NoError(t, p.s.Run())
			var sa, rb [8]WC
			na := p.a.PollCQ(p.qa.SendCQ, sa[:])
			nb := p.b.PollCQ(p.qb.RecvCQ, rb[:])
			require.Equal(t, 1, na)
			assert.Equal(t, WC{WRID: 1, Status: WCRemAccessErr, Opcode: WCRDMAWrite, ByteLen: tc.length, QPN: p.qa.Num}, sa[0])
			require.Equal(t, 2, nb, "each posted receive completes exactly once")
			for i := 0; i < 2; i++ {
				assert.Equal(t, WC{WRID: uint64(100 + i), Status: tc.want[i], Opcode: WCRecv, QPN: p.qb.Num}, rb[i])
			}
			assert.Equal(t, int64(1), p.b.Counters.Naks)
			assert.Equal(t, int64(0), p.b.Counters.PayloadRx, "not one byte written at the responder")
			after := make([]byte, region)
			p.b.Mem.Read(p.bufB, after)
			assert.Equal(t, before, after)
			assert.Equal(t, QPErr, p.qb.State)
		})
	}
}

func TestRNROnDevice(t *testing.T) {
	cfg := Defaults()
	cfg.MinRNRTimer = 1 // 10 µs
	p := newPair(t, edrLink(), cfg, 1<<16)
	p.a.Mem.Write(p.bufA, []byte("hello"))
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 9, Opcode: WRSend, Signaled: true, LocalAddr: p.bufA, Length: 5, LKey: p.mrA.LKey}))
	// B posts its receive only at 5 µs: the SEND finds the queue empty.
	post := &poster{fn: func() {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 77, Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	}}
	p.s.Schedule(5*ib.Microsecond, post, 1)
	var wa, wb [2]WC
	na, nb := 0, 0
	var doneAt ib.PS
	p.runUntil(t, func() bool {
		na += p.a.PollCQ(p.qa.SendCQ, wa[na:])
		nb += p.b.PollCQ(p.qb.RecvCQ, wb[nb:])
		doneAt = p.s.Now()
		return na > 0 && nb > 0
	})
	require.Equal(t, 1, na)
	require.Equal(t, 1, nb)
	assert.Equal(t, WCSuccess, wa[0].Status)
	assert.Equal(t, WC{WRID: 77, Status: WCSuccess, Opcode: WCRecv, ByteLen: 5, QPN: p.qb.Num}, wb[0])
	assert.Equal(t, int64(1), p.b.Counters.RNRNaks)
	// The retry waited the RNR timer (10 µs) after the NAK.
	assert.Greater(t, doneAt, RNRTimerPS(1))
	got := make([]byte, 5)
	p.b.Mem.Read(p.bufB, got)
	assert.Equal(t, []byte("hello"), got)
}

// poster runs a function as a simulation event.
type poster struct{ fn func() }

func (p *poster) HandleEvent(*components.Event) { p.fn() }

func TestCQOverrunAndLocalKeyError(t *testing.T) {
	cfg := Defaults()
	s := components.NewSim()
	a, b := BackToBack(s, edrLink(), cfg, cfg)
	pa, pb := a.AllocPD(), b.AllocPD()
	cq := a.CreateCQ(2)
	qa := a.CreateQP(pa, cq, cq, 64, 64)
	qb := b.CreateQP(pb, b.CreateCQ(16), b.CreateCQ(16), 64, 64)
	require.NoError(t, ConnectRC(qa, qb, 4096, 1, 2))
	bufA, bufB := a.Malloc(4096), b.Malloc(4096)
	mrA := a.RegMR(pa, bufA, 4096, AccessLocalWrite)
	mrB := b.RegMR(pb, bufB, 4096, AccessRemoteWrite)
	for i := 0; i < 4; i++ {
		require.NoError(t, a.PostSend(qa, &SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Signaled: true, LocalAddr: bufA,
			Length: 64, LKey: mrA.LKey, RemoteAddr: bufB, RKey: mrB.RKey}))
	}
	s.StopAt(100 * ib.Microsecond)
	require.NoError(t, s.Run())
	// Four CQEs into a 2-deep CQ nobody polls: the third and fourth overrun.
	assert.True(t, cq.Overrun)
	assert.Equal(t, int64(2), a.Counters.CQOverruns)
	assert.Equal(t, int64(2), a.Counters.CQEs)

	// A gather element outside its region: local protection error.
	s2 := components.NewSim()
	a2, b2 := BackToBack(s2, edrLink(), cfg, cfg)
	pa2, pb2 := a2.AllocPD(), b2.AllocPD()
	cq2 := a2.CreateCQ(16)
	qa2 := a2.CreateQP(pa2, cq2, cq2, 64, 64)
	qb2 := b2.CreateQP(pb2, b2.CreateCQ(16), b2.CreateCQ(16), 64, 64)
	require.NoError(t, ConnectRC(qa2, qb2, 4096, 1, 2))
	buf2 := a2.Malloc(4096)
	mr2 := a2.RegMR(pa2, buf2, 4096, AccessLocalWrite)
	require.NoError(t, a2.PostSend(qa2, &SendWR{ID: 5, Opcode: WRSend, LocalAddr: buf2 + 4000, Length: 200, LKey: mr2.LKey}))
	s2.StopAt(100 * ib.Microsecond)
	require.NoError(t, s2.Run())
	var wcs [2]WC
	require.Equal(t, 1, a2.PollCQ(cq2, wcs[:]))
	assert.Equal(t, WCLocProtErr, wcs[0].Status)
	assert.Equal(t, int64(0), a2.Counters.ReqPackets, "nothing went on the wire")
}

// TestDataIntegrityOverSeeds posts a random mix of WRITE, SEND, READ,
// FETCH_ADD and CMP_SWAP of random sizes (0 to 3 MTUs at MTU 1024) from A
// and checks every byte that should have moved did, for several seeds.
func TestDataIntegrityOverSeeds(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			lc := edrLink()
			lc.MTU = 1024
			cfg := Defaults()
			const region = 1 << 18
			p := newPair(t, lc, cfg, region)
			fill := func(d *Device, addr uint64, n int) {
				b := make([]byte, n)
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				d.Mem.Write(addr, b)
			}
			fill(p.a, p.bufA, region)
			fill(p.b, p.bufB, region)
			// A's lower half is the source area, its upper half the READ/atomic
			// landing area; B's lower half is written, its upper half read.
			type exp struct {
				op        WROpcode
				local     uint64
				remote    uint64
				n         int
				want      []byte // bytes expected at the target after the run
				atTarget  *Device
				targetOff uint64
			}
			var exps []exp
			shadowB := make([]byte, region)
			p.b.Mem.Read(p.bufB, shadowB)
			const nwr = 60
			slot := uint64(0)
			recvOff := uint64(0)
			for i := 0; i < nwr; i++ {
				n := rng.IntN(3*1024 + 1)
				w := SendWR{ID: uint64(i), Signaled: true, LKey: p.mrA.LKey, RKey: p.mrB.RKey, Length: uint32(n)}
				srcOff := uint64(rng.IntN(region/2 - n))
				switch k := rng.IntN(5); k {
				case 0: // WRITE into B's lower half
					dst := uint64(rng.IntN(region/4 - n))
					w.Opcode, w.LocalAddr, w.RemoteAddr = WRRDMAWrite, p.bufA+srcOff, p.bufB+dst
					src := make([]byte, n)
					p.a.Mem.Read(w.LocalAddr, src)
					copy(shadowB[dst:], src)
				case 1: // SEND into consecutive receive buffers in B's second quarter
					w.Opcode, w.LocalAddr = WRSend, p.bufA+srcOff
					dst := region/4 + recvOff
					require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: uint64(i), Addr: p.bufB + dst, Length: uint32(n), LKey: p.mrB.LKey}))
					src := make([]byte, n)
					p.a.Mem.Read(w.LocalAddr, src)
					copy(shadowB[dst:], src)
					recvOff += uint64(n)
				case 2: // READ from B's upper half (never written) into A's upper half
					from := region/2 + uint64(rng.IntN(region/2-n))
					w.Opcode, w.RemoteAddr, w.LocalAddr = WRRDMARead, p.bufB+from, p.bufA+region/2+slot
					exps = append(exps, exp{op: WRRDMARead, n: n, want: append([]byte(nil), shadowB[from:from+uint64(n)]...), atTarget: p.a, targetOff: region/2 + slot})
					slot += 3*1024 + 8
				default: // atomics on 8-aligned words in B's upper half
					off := region/2 + uint64(rng.IntN(region/16))*8
					w.RemoteAddr, w.LocalAddr = p.bufB+off, p.bufA+region/2+slot
					old := leU64(shadowB[off:])
					if k == 3 {
						w.Opcode, w.CompareAdd = WRFetchAdd, uint64(rng.IntN(1000))
						putLeU64(shadowB[off:], old+w.CompareAdd)
					} else {
						w.Opcode, w.CompareAdd, w.Swap = WRCompSwap, old, rng.Uint64()
						if rng.IntN(2) == 0 {
							w.CompareAdd++ // a compare that fails
						} else {
							putLeU64(shadowB[off:], w.Swap)
						}
					}
					var ob [8]byte
					putLeU64(ob[:], old)
					exps = append(exps, exp{op: w.Opcode, n: 8, want: ob[:], atTarget: p.a, targetOff: region/2 + slot})
					slot += 3*1024 + 8
				}
				require.NoError(t, p.a.PostSend(p.qa, &w))
			}
			var wcs [64]WC
			n := 0
			p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[:]); return n >= nwr })
			require.Equal(t, nwr, n)
			finalB := make([]byte, region)
			p.b.Mem.Read(p.bufB, finalB)
			assert.Equal(t, shadowB, finalB, "B after writes, sends and atomics")
			for _, e := range exps {
				got := make([]byte, e.n)
				e.atTarget.Mem.Read(p.bufA+e.targetOff, got)
				assert.Equal(t, e.want, got, "%v", e.op)
			}
		})
	}
}

func TestImmediateDataAndZeroLength(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	p.a.Mem.Write(p.bufA, []byte("0123456789"))
	for i := 0; i < 3; i++ {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: uint64(100 + i), Addr: p.bufB + 4096*uint64(i), Length: 4096, LKey: p.mrB.LKey}))
	}
	wrs := []SendWR{
		// SEND with immediate: data into the receive buffer, imm into the CQE.
		{ID: 1, Opcode: WRSendImm, Signaled: true, LocalAddr: p.bufA, Length: 10, LKey: p.mrA.LKey, Imm: 0xCAFE},
		// WRITE with immediate: data at the remote address, and a receive
		// WQE consumed for the immediate (RESP_WR_IMM). Its byte_len is the
		// WRITE's length, 4: rxe_resp.c do_complete reports qp->resp.length
		// (the RETH DMA length) for a WRITE with immediate, and the mlx5
		// provider the CQE's byte_cnt, which the HCA fills the same way.
		{ID: 2, Opcode: WRRDMAWriteImm, Signaled: true, LocalAddr: p.bufA, Length: 4, LKey: p.mrA.LKey,
			RemoteAddr: p.bufB + 50000, RKey: p.mrB.RKey, Imm: 0xBEEF},
		// A zero-length SEND: one SEND_ONLY packet, a receive completion of 0 bytes.
		{ID: 3, Opcode: WRSend, Signaled: true},
		// A zero-length READ: one request, one empty response.
		{ID: 4, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey},
	}
	for i := range wrs {
		require.NoError(t, p.a.PostSend(p.qa, &wrs[i]))
	}
	sa, rb := p.pollBoth(t, 4, 3)
	for i, op := range []WCOpcode{WCSend, WCRDMAWrite, WCSend, WCRDMARead} {
		assert.Equal(t, WCSuccess, sa[i].Status)
		assert.Equal(t, uint64(i+1), sa[i].WRID)
		assert.Equal(t, op, sa[i].Opcode)
		// The sender's completion of SEND_WITH_IMM and WRITE_WITH_IMM has
		// IB_WC_WITH_IMM too (rxe make_send_cqe, mlx5 handle_good_req),
		// with no immediate value in it.
		assert.Equal(t, i < 2, sa[i].HasImm, "WR %d", i+1)
		assert.Equal(t, uint32(0), sa[i].Imm)
	}
	assert.Equal(t, WC{WRID: 100, Opcode: WCRecv, ByteLen: 10, Imm: 0xCAFE, HasImm: true, QPN: p.qb.Num}, rb[0])
	assert.Equal(t, WC{WRID: 101, Opcode: WCRecvRDMAImm, ByteLen: 4, Imm: 0xBEEF, HasImm: true, QPN: p.qb.Num}, rb[1])
	assert.Equal(t, WC{WRID: 102, Opcode: WCRecv, ByteLen: 0, QPN: p.qb.Num}, rb[2])
	got := make([]byte, 10)
	p.b.Mem.Read(p.bufB, got)
	assert.Equal(t, []byte("0123456789"), got)
	p.b.Mem.Read(p.bufB+50000, got[:4])
	assert.Equal(t, []byte("0123"), got[:4])
}

// TestZeroLengthSkipsRKeyCheck: a zero-length RDMA WRITE, WRITE_WITH_IMM or
// READ touches no remote memory, so the responder does not check its R_Key
// or VA (rxe_resp.c check_rkey returns early when the RETH DMA length is 0).
// With R_Key 0 and VA 0, never valid here (Register never makes a zero key),
// all three succeed; the WRITE_WITH_IMM still consumes a receive.
func TestZeroLengthSkipsRKeyCheck(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 4096)
	require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 100, Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	wrs := []SendWR{
		{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, LKey: p.mrA.LKey},
		{ID: 2, Opcode: WRRDMAWriteImm, Signaled: true, LocalAddr: p.bufA, LKey: p.mrA.LKey, Imm: 0xBEEF},
		{ID: 3, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA, LKey: p.mrA.LKey},
	}
	for i := range wrs {
		require.NoError(t, p.a.PostSend(p.qa, &wrs[i]))
	}
	sa, rb := p.pollBoth(t, 3, 1)
	for i, op := range []WCOpcode{WCRDMAWrite, WCRDMAWrite, WCRDMARead} {
		// WR 2, the WRITE_WITH_IMM, completes with IB_WC_WITH_IMM.
		assert.Equal(t, WC{WRID: uint64(i + 1), Status: WCSuccess, Opcode: op, HasImm: i == 1, QPN: p.qa.Num}, sa[i])
	}
	assert.Equal(t, WC{WRID: 100, Opcode: WCRecvRDMAImm, Imm: 0xBEEF, HasImm: true, QPN: p.qb.Num}, rb[0])
	assert.Equal(t, int64(0), p.b.Counters.Naks)
	// B checked no key at all: the translation cache saw no lookup.
	assert.Equal(t, int64(0), p.b.KeyCache().Hits+p.b.KeyCache().Misses)
}

func TestZeroLatencyStagesStillSend(t *testing.T) {
	// With every stage at 0 cycles a packet is ready the instant it is
	// granted; it must still go out.
	cfg := Defaults()
	for _, sc := range []*StageConfig{&cfg.Doorbell, &cfg.WQEFetch, &cfg.KeyCheck, &cfg.DMA, &cfg.TransportTx, &cfg.TransportRx, &cfg.CQE} {
		sc.LatencyCycles = 0
	}
	require.NoError(t, cfg.Validate())
	p := newPair(t, edrLink(), cfg, 4096)
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{Opcode: WRRDMAWrite, Inline: true, Signaled: true, LocalAddr: p.bufA,
		Length: 8, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	var wcs [1]WC
	p.runUntil(t, func() bool { return p.a.PollCQ(p.qa.SendCQ, wcs[:]) > 0 })
	assert.Equal(t, WCSuccess, wcs[0].Status)
}

// TestErrorNAKPastUnansweredRead: a READ's response is lost, and the WRITE
// after it has a bad R_Key, so its NAK (remote access error) is the first
// answer past the READ. Only a READ's response completes it; the NAK
// acknowledges the requests before it but cannot vouch for data that never
// arrived, and the QP goes to error: the READ is flushed (WR_FLUSH_ERR),
// its buffer untouched, and the WRITE fails with REM_ACCESS_ERR. It used to
// complete the READ as successful with its buffer never written. (Retrying
// the READ, as rxe's completer would, finds the responder QP in error after
// its NAK: nothing answers, and with retry_cnt 7 the QP waits forever.)
func TestErrorNAKPastUnansweredRead(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	data := []byte("the READ's bytes, which never reach A")
	p.b.Mem.Write(p.bufB, data)
	lose := tapPort(p.a)
	lose.drop = func(pkt *ib.Packet) bool {
		return pkt.Opcode == ib.RDMAReadResponseOnly && lose.dropped == 0
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA,
		Length: uint32(len(data)), LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA + 0x8000,
		Length: 64, LKey: p.mrA.LKey, RemoteAddr: p.bufB + 0x8000, RKey: p.mrB.RKey + 1}))
	var wcs [2]WC
	n := 0
	p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[n:]); return n == len(wcs) })
	require.Equal(t, 2, n)
	require.Equal(t, 1, lose.dropped, "the READ's response was lost once")
	assert.Equal(t, uint64(1), wcs[0].WRID)
	assert.Equal(t, WCWRFlushErr, wcs[0].Status, "the READ, whose data never came, is not reported successful")
	assert.Equal(t, uint64(2), wcs[1].WRID)
	assert.Equal(t, WCRemAccessErr, wcs[1].Status)
	got := make([]byte, len(data))
	p.a.Mem.Read(p.bufA, got)
	assert.Equal(t, make([]byte, len(data)), got, "nothing was placed")
}

// ackTimes records, at one device, when each ACK is built (TraceAck) and
// when it goes on the wire (inject).
type ackTimes struct{ built, wire []ib.PS }

func (r *ackTimes) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	e := ctx.Item.(*components.TraceEvent)
	if _, rx := e.Str("result"); e.Kind == components.TraceAck && !rx {
		r.built = append(r.built, e.Time)
	}
	if op, _ := e.Str("op"); e.Kind == components.TraceInject && op == "ACKNOWLEDGE" {
		r.wire = append(r.wire, e.Time)
	}
}

// TestAckNotHeldBehindPayloadReads: host A answers B's 200 WRITEs of 4 KiB
// with ACKs, first while idle otherwise, then while writing 200 of its own
// to B. The transport_tx stage serves items as they arrive; A's request
// packets used to book their slots when granted, for the time their payload
// reads would complete (about 1 µs later), so an ACK built meanwhile waited
// behind every one of them: 2.7 µs on average. An ACK's way to the wire is
// the same both ways but for what it shares with A's requests: the wire,
// which may be carrying one request packet when the ACK is ready (its
// serialization, 4096 + 30 header and CRC bytes at EDR's 80 ps per byte:
// about 330 ns), and the stage, where a request may hold the slot the ACK
// wants (one interval). So with traffic both ways no ACK may take longer
// than the one-way maximum plus those two.
func TestAckNotHeldBehindPayloadReads(t *testing.T) {
	maxDelay := func(bidir bool) ib.PS {
		p := newPair(t, edrLink(), Defaults(), 1<<22)
		var rec ackTimes
		p.a.AcceptHook(&rec)
		for i := 0; i < 200; i++ {
			require.NoError(t, p.b.PostSend(p.qb, &SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Signaled: true,
				LocalAddr: p.bufB, Length: 4096, LKey: p.mrB.LKey, RemoteAddr: p.bufA + 0x200000, RKey: p.mrA.RKey}))
			if bidir {
				require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Signaled: true,
					LocalAddr: p.bufA, Length: 4096, LKey: p.mrA.LKey, RemoteAddr: p.bufB + 0x200000, RKey: p.mrB.RKey}))
			}
		}
		var wcs [256]WC
		n := 0
		p.runUntil(t, func() bool { n += p.b.PollCQ(p.qb.SendCQ, wcs[:]); return n >= 200 })
		require.Equal(t, len(rec.built), len(rec.wire))
		require.NotEmpty(t, rec.built)
		var mx ib.PS
		for i := range rec.built {
			mx = max(mx, rec.wire[i]-rec.built[i])
		}
		return mx
	}
	oneWay, both := maxDelay(false), maxDelay(true)
	req := ib.Packet{Opcode: ib.RDMAWriteMiddle, PayloadLen: 4096}
	lc := edrLink()
	ser := lc.Timing(lc.LengthM).Serialization(req.WireBytes())
	slot := ib.PS(Defaults().TransportTx.IntervalCycles) * ib.CyclePS(Defaults().CoreClockMHz)
	t.Logf("ACK build to wire, max: one way %d ps, both ways %d ps (bound %d)", oneWay, both, oneWay+ser+slot)
	assert.LessOrEqual(t, both, oneWay+ser+slot)
}

// TestBlueFlameNeedsNoFetch posts inline WRITEs that fit
// hca.blueflame_bytes one at a time (each posted when the previous one's CQE
// is polled, so each is the only WQE the HCA has not seen): BlueFlame
// carries every WQE with its doorbell (mlx5 post_send_db copies the whole
// WQE, wrapping at the ring's end, into the BlueFlame register), and inline
// data need no payload read, so the HCA issues no PCIe read at all.
func TestBlueFlameNeedsNoFetch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inline   uint32 // bytes
		sqBBs    int    // send queue size in WQEBBs
		prefetch int    // hca.wqe_prefetch_depth
	}{
		// ctrl 16 + raddr 16 + inline header 4 + 100 = 136 → 144 B = 3
		// WQEBBs: in an 8-WQEBB ring the third WQE takes slots 6, 7 and 0.
		{"wrapping 3-WQEBB WQE", 100, 8, 8},
		// 16 + 16 + 4 + 220 = 256 B = 4 WQEBBs = blueflame_bytes, larger
		// than a 2-WQEBB prefetch window: the window limits reads, and a
		// BlueFlame WQE is not read.
		{"WQE larger than the prefetch window", 220, 16, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.WQEPrefetchDepth = tc.prefetch
			s := components.NewSim()
			a, b := BackToBack(s, edrLink(), cfg, cfg)
			pa, pb := a.AllocPD(), b.AllocPD()
			cq := a.CreateCQ(16)
			qa := a.CreateQP(pa, cq, cq, tc.sqBBs, 16)
			qb := b.CreateQP(pb, b.CreateCQ(16), b.CreateCQ(16), 16, 16)
			require.NoError(t, ConnectRC(qa, qb, 4096, 1, 2))
			bufA, bufB := a.Malloc(4096), b.Malloc(4096)
			mrB := b.RegMR(pb, bufB, 4096, AccessRemoteWrite)
			wr := SendWR{Opcode: WRRDMAWrite, Signaled: true, Inline: true, LocalAddr: bufA,
				Length: tc.inline, RemoteAddr: bufB, RKey: mrB.RKey}
			require.LessOrEqual(t, WQEBBs(&wr)*WQEBBBytes, cfg.BlueFlameBytes)
			const msgs = 5
			posted, done := 0, 0
			post := &poster{fn: func() {
				wr.ID = uint64(posted)
				require.NoError(t, a.PostSend(qa, &wr))
				posted++
			}}
			a.OnCQE = func(cq *CQ, now ib.PS) {
				var wcs [1]WC
				done += a.PollCQ(cq, wcs[:])
				require.Equal(t, WCSuccess, wcs[0].Status)
				if posted < msgs {
					s.Schedule(now, post, 0)
				}
			}
			s.Schedule(0, post, 0)
			s.StopAt(ib.Millisecond)
			require.NoError(t, s.Run())
			require.Equal(t, msgs, done)
			assert.Zero(t, a.PCIe.ReadRequests, "no WQE fetch and no payload read")
			assert.Zero(t, a.PCIe.ReadBytes)
		})
	}
}

// TestNonInlinePostGoesByBlueFlame posts one non-inline 1 KiB SEND on an
// idle QP. libmlx5 writes a single WR's WQE through BlueFlame when it is
// inline or the provider prefers BlueFlame, which it does unless
// MLX5_POST_SEND_PREFER_BF=0 (rdma-core providers/mlx5 qp.c post_send_db,
// mlx5.c get_always_bf). A SEND with one gather element is ctrl 16 + data
// segment 16 = 32 B, one WQEBB, well under blueflame_bytes: with
// prefer_blueflame the HCA parses it from the doorbell and reads the
// payload, 1024 B in 1024 / MRRS 512 = 2 read requests, and, the key cache
// being cold, the L_Key's MKey context (one more request, 64 bytes);
// without it, it first reads the WQEBB (one more request, 64 more bytes, a
// round trip).
func TestNonInlinePostGoesByBlueFlame(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prefer    bool
		reads     int64 // read request TLPs
		readBytes int64
	}{
		{"prefer_blueflame (libmlx5 default)", true, 2 + 1, 1024 + MKeyContextBytes},
		{"MLX5_POST_SEND_PREFER_BF=0", false, 3 + 1, 1024 + WQEBBBytes + MKeyContextBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.PreferBlueFlame = tc.prefer
			p := newPair(t, edrLink(), cfg, 4096)
			var rec traceRecorder
			p.a.AcceptHook(&rec)
			require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 1, Addr: p.bufB, Length: 4096, LKey: p.mrB.LKey}))
			wr := SendWR{ID: 9, Opcode: WRSend, Signaled: true, LocalAddr: p.bufA, Length: 1024, LKey: p.mrA.LKey}
			require.Equal(t, 1, WQEBBs(&wr))
			require.NoError(t, p.a.PostSend(p.qa, &wr))
			var wcs [1]WC
			p.runUntil(t, func() bool { return p.a.PollCQ(p.qa.SendCQ, wcs[:]) == 1 })
			require.Equal(t, WCSuccess, wcs[0].Status)
			assert.Equal(t, tc.reads, p.a.PCIe.ReadRequests)
			assert.Equal(t, tc.readBytes, p.a.PCIe.ReadBytes)

			// When the HCA has the WQE: A's post (the receive was B's),
			// the doorbell store across PCIe, the doorbell stage, then
			// either the parse at once or a DMA-stage issue, the read of
			// one WQEBB and then the parse. With the defaults 60 + 308 + 20
			// + 10 = 398 ns by BlueFlame; fetched, 10 + 1.524 (request) +
			// 533 + 5.333 (64 + 20 B completion) ns more.
			ns := func(f float64) ib.PS { return ib.PS(f*1000 + 0.5) }
			cyc := ib.CyclePS(cfg.CoreClockMHz)
			onChip := ns(cfg.Host.PostNS) + ns(cfg.PCIe.MMIOLatencyNS) + ib.PS(cfg.Doorbell.LatencyCycles)*cyc
			if !tc.prefer {
				onChip = NewPCIe(cfg.PCIe).Read(onChip+ib.PS(cfg.DMA.LatencyCycles)*cyc, p.qa.sqBuf, WQEBBBytes)
			}
			decoded := onChip + ib.PS(cfg.WQEFetch.LatencyCycles)*cyc
			var got []ib.PS
			for _, e := range rec.events {
				if q, _ := e.Str("queue"); e.Kind == components.TraceWQEFetch && q == "sq" {
					got = append(got, e.Time)
				}
			}
			require.Len(t, got, 1)
			assert.Equal(t, decoded, got[0])
		})
	}
}

// TestBlueFlameWaitsForEarlierFetch posts a WRITE whose WQE must be fetched
// and, right behind it, an inline WRITE that goes by BlueFlame. The second
// doorbell arrives while the first WQE's read is in flight: the first WQE
// is decoded when its read has come back and been parsed, not when the
// BlueFlame WQE behind it is, and the two are decoded in posting order.
func TestBlueFlameWaitsForEarlierFetch(t *testing.T) {
	cfg := Defaults()
	// The first WRITE is not inline: without prefer_blueflame its WQE is
	// fetched (MLX5_POST_SEND_PREFER_BF=0), the inline one still is not.
	cfg.PreferBlueFlame = false
	p := newPair(t, edrLink(), cfg, 4096)
	var rec traceRecorder
	p.a.AcceptHook(&rec)
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA,
		Length: 64, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRRDMAWrite, Signaled: true, Inline: true,
		LocalAddr: p.bufA, Length: 8, RemoteAddr: p.bufB + 64, RKey: p.mrB.RKey}))
	var wcs [2]WC
	n := 0
	p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[n:]); return n == 2 })
	require.Equal(t, 2, n)

	ns := func(f float64) ib.PS { return ib.PS(f*1000 + 0.5) }
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	// The first WQE: post, doorbell store crosses PCIe, doorbell stage, DMA
	// stage issues a 64-byte read (one WQEBB), the read comes back, the
	// fetch stage parses it.
	issue := ns(cfg.Host.PostNS) + ns(cfg.PCIe.MMIOLatencyNS) +
		ib.PS(cfg.Doorbell.LatencyCycles)*cyc + ib.PS(cfg.DMA.LatencyCycles)*cyc
	firstDecoded := NewPCIe(cfg.PCIe).Read(issue, p.qa.sqBuf, WQEBBBytes) + ib.PS(cfg.WQEFetch.LatencyCycles)*cyc
	// The BlueFlame doorbell arrives one post later and is parsed in 10
	// cycles, long before the first WQE's read returns (~0.5 µs).
	bfParsed := 2*ns(cfg.Host.PostNS) + ns(cfg.PCIe.MMIOLatencyNS) +
		ib.PS(cfg.Doorbell.LatencyCycles+cfg.WQEFetch.LatencyCycles)*cyc
	require.Less(t, bfParsed, firstDecoded)
	var decoded []ib.PS
	var order []int64
	for _, e := range rec.events {
		if q, _ := e.Str("queue"); e.Kind == components.TraceWQEFetch && q == "sq" {
			w, _ := e.Int("wqe")
			decoded, order = append(decoded, e.Time), append(order, w)
		}
	}
	require.Len(t, decoded, 2)
	assert.Equal(t, []int64{0, 1}, order, "WQE indices (WQEBB counts) in posting order")
	assert.Equal(t, firstDecoded, decoded[0], "the fetched WQE is decoded when its read is back")
	// The fetch stage parses in order: the BlueFlame WQE's parse starts one
	// initiation interval after the first WQE's.
	assert.Equal(t, firstDecoded+ib.PS(cfg.WQEFetch.IntervalCycles)*cyc, decoded[1],
		"the BlueFlame WQE behind it is decoded after it, not before")
}

// TestBadKeyOnAnErrQPIsFlushed: after a local protection error the QP is in
// ERR, and every later WR completes WR_FLUSH_ERR whatever its keys (IBA's
// rule as rxe_comp.c applies it: after an error the rest is flushed), so a
// second WR with a bad gather element is flushed, not failed again.
// Expected, in posting order: LOC_PROT_ERR, WR_FLUSH_ERR, WR_FLUSH_ERR, and
// nothing on the wire.
func TestBadKeyOnAnErrQPIsFlushed(t *testing.T) {
	s := components.NewSim()
	cfg := Defaults()
	a, b := BackToBack(s, edrLink(), cfg, cfg)
	pa, pb := a.AllocPD(), b.AllocPD()
	cq := a.CreateCQ(16)
	qa := a.CreateQP(pa, cq, cq, 64, 64)
	qb := b.CreateQP(pb, b.CreateCQ(16), b.CreateCQ(16), 64, 64)
	require.NoError(t, ConnectRC(qa, qb, 4096, 1, 2))
	buf := a.Malloc(4096)
	mr := a.RegMR(pa, buf, 4096, AccessLocalWrite)
	// Elements 4000 … 4199 of a 4096-byte region: outside it.
	bad := func(id uint64) *SendWR {
		return &SendWR{ID: id, Opcode: WRSend, Signaled: true, LocalAddr: buf + 4000, Length: 200, LKey: mr.LKey}
	}
	require.NoError(t, a.PostSend(qa, bad(1)))
	require.NoError(t, a.PostSend(qa, bad(2)))
	require.NoError(t, a.PostSend(qa, &SendWR{ID: 3, Opcode: WRSend, Signaled: true, LocalAddr: buf, Length: 64, LKey: mr.LKey}))
	s.StopAt(100 * ib.Microsecond)
	require.NoError(t, s.Run())
	var wcs [4]WC
	require.Equal(t, 3, a.PollCQ(cq, wcs[:]))
	want := []WCStatus{WCLocProtErr, WCWRFlushErr, WCWRFlushErr}
	for i, st := range want {
		assert.Equal(t, uint64(i+1), wcs[i].WRID, "completion %d", i)
		assert.Equal(t, st, wcs[i].Status, "WR %d", i+1)
	}
	assert.Equal(t, int64(0), a.Counters.ReqPackets, "nothing went on the wire")
}
