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

// lnBinomial is ln C(n, j) from Lgamma.
func lnBinomial(n, j int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(j + 1))
	d, _ := math.Lgamma(float64(n - j + 1))
	return a - b - d
}

// logSpaceFailure is P_cw evaluated independently of the model, in float64
// log space: ps = −expm1(m·log1p(−ber)), each term
// exp(lnC(n,j) + j·ln ps + (n−j)·log1p(−ps)), so no power under- or
// overflows and 1 − ps keeps its precision.
func logSpaceFailure(c rsCode, ber float64) float64 {
	ps := -math.Expm1(float64(c.m) * math.Log1p(-ber))
	sum := 0.0
	for j := c.correctable() + 1; j <= c.n; j++ {
		sum += math.Exp(lnBinomial(c.n, j) + float64(j)*math.Log(ps) + float64(c.n-j)*math.Log1p(-ps))
	}
	return sum
}

// TestCodewordFailure: P_cw = Σ_{j>t} C(n,j) ps^j (1 − ps)^(n−j),
// ps = 1 − (1 − BER)^m.
//
// By hand, a toy code n = 3, k = 1 (t = 1), m = 2 at BER 0.1:
// ps = 1 − 0.9² = 0.19, P = C(3,2)·0.19²·0.81 + 0.19³
// = 3 × 0.0361 × 0.81 + 0.006859 = 0.087723 + 0.006859 = 0.094582.
//
// RS(544,514) (t = 15) at pre-FEC BER 2.4e-4: ps = 1 − (1 − 2.4e-4)^10
// = 2.3974e-3, n·ps = 1.30 wrong symbols a codeword on average; the first
// term, C(544,16) ps^16 (1 − ps)^528 = 2.2503e30 × (2.3974e-3)^16 × 0.2817
// = 7.546e-13, is 93 % of the sum 8.1516e-13. The reference values below
// were summed in 40-digit arithmetic (mpmath) from the same float64 BER;
// the model's big.Float sum must match them to their 12 digits, and the
// float64 log-space sum (its rounding grows with the terms, about 1e-13
// relative each) to 1e-9.
func TestCodewordFailure(t *testing.T) {
	toy, _ := codewordFailure(rsCode{n: 3, k: 1, m: 2}, 0.1).Float64()
	assert.InEpsilon(t, 0.094582, toy, 1e-12)

	for _, tc := range []struct {
		fec  FEC
		ber  float64
		want float64 // 40-digit reference, 12 significant
	}{
		{FECRS544, 2.4e-4, 8.15157339933e-13},
		{FECRS528, 2.4e-4, 5.15376010204e-5},
		{FECLLRS271, 1e-3, 6.29559339301e-3},
		{FECRS544, 1.5e-3, 8.72157810072e-3},
	} {
		t.Run(fmt.Sprintf("%s-%g", tc.fec, tc.ber), func(t *testing.T) {
			got := CodewordFailure(tc.fec, tc.ber)
			assert.InEpsilon(t, tc.want, got, 1e-11)
			assert.InEpsilon(t, logSpaceFailure(rsCodes[tc.fec], tc.ber), got, 1e-9)
		})
	}
	// The first term's share, as the comment derives it.
	c := rsCodes[FECRS544]
	ps := -math.Expm1(10 * math.Log1p(-2.4e-4))
	first := math.Exp(lnBinomial(544, 16) + 16*math.Log(ps) + 528*math.Log1p(-ps))
	assert.InEpsilon(t, 7.546e-13, first, 1e-3)
	assert.InDelta(t, 0.93, first/CodewordFailure(FECRS544, 2.4e-4), 0.005)
	assert.Equal(t, 15, c.correctable())
	// Nearly every codeword fails at the cap, for every code.
	for fec := range rsCodes {
		assert.Greater(t, CodewordFailure(fec, MaxPreFECBER), 0.9999, fec)
	}
}

// TestCodewordDataBytes: a codeword covers k·m × 256/257 data bits of the
// stream: 5,120 bits (640 bytes) for RS(544,514) and RS(528,514), 2,560
// (320 bytes) for RS(271,257). At 4x NDR (20 ps a byte) 640 bytes take
// 12.8 ns and at 4x EDR (80 ps) 51.2 ns: one codeword's accumulation time
// at the signalling rate, as DefaultFECLatency derives it (5,440 bits /
// 425 Gb/s; 5,280 bits / 103.125 Gb/s), the same time two ways.
func TestCodewordDataBytes(t *testing.T) {
	assert.Equal(t, int64(640), rsCodes[FECRS544].dataBytes())
	assert.Equal(t, int64(640), rsCodes[FECRS528].dataBytes())
	assert.Equal(t, int64(320), rsCodes[FECLLRS271].dataBytes())
	for _, tc := range []struct {
		gen Generation
		fec FEC
	}{{NDR, FECRS544}, {HDR, FECRS544}, {XDR, FECRS544}, {EDR, FECRS528}} {
		tm := NewTiming(tc.gen, 4, 0, 0, CopperPsPerM)
		period := rsCodes[tc.fec].dataBytes() * tm.psNum // 1/psDen ps
		assert.Zero(t, period%int64(tm.psDen))
		assert.Equal(t, DefaultFECLatency(tc.gen, 4, tc.fec), ib.PS(period/int64(tm.psDen)), tc.gen)
	}
}

// TestCodewordGaps: the gap G between failed codewords is geometric,
// P(G = g) = (1 − P)^g P, drawn digit by digit with P(digit j) =
// q^(2^j)/(1 + q^(2^j)), q = 1 − P. The thresholds match that in float64
// (to 1e-12 absolute), and N draws at P = 8.72e-3 (RS(544,514) at 1.5e-3)
// have P(G = 0) = P and mean (1 − P)/P = 113.66: N = 200,000 gives
// 1,744 ± 41.6 zeros (binomial σ = √(NP(1−P))) and a sample mean within
// 5 × sd/√N of it, sd = √(1 − P)/P = 114.2, so ± 1.28.
func TestCodewordGaps(t *testing.T) {
	m := CodewordModelFor(FECRS544, 1.5e-3)
	p := m.Failure
	q := 1 - p
	x := q
	for j := range m.digits {
		assert.InDelta(t, x/(1+x), float64(m.thr[j])/0x1p64, 1e-12, "digit %d", j)
		x *= x
	}
	assert.Less(t, x/(1+x), 0x1p-64, "digits past the last have threshold 0")

	e := newCodewordErrors(m, NewTiming(NDR, 4, 0, 0, CopperPsPerM), 9, "Test.Port[1]")
	const n = 200000
	zeros, sum := 0, 0.0
	for range n {
		g := e.gap()
		if g == 0 {
			zeros++
		}
		sum += float64(g)
	}
	sigma := math.Sqrt(n * p * q)
	assert.InDelta(t, n*p, float64(zeros), 5*sigma)
	assert.InDelta(t, q/p, sum/n, 5*math.Sqrt(q)/p/math.Sqrt(n))
	// A draw allocates nothing.
	assert.Zero(t, testing.AllocsPerRun(100, func() { e.gap() }))
}

// TestCodewordStreams: a port's draws depend on the seed and its name only.
func TestCodewordStreams(t *testing.T) {
	m := CodewordModelFor(FECRS544, 1.5e-3)
	tm := NewTiming(NDR, 4, 0, 0, CopperPsPerM)
	draws := func(seed uint64, name string) []int64 {
		e := newCodewordErrors(m, tm, seed, name)
		out := make([]int64, 64)
		for i := range out {
			out[i] = e.gap()
		}
		return out
	}
	a := draws(7, "Fabric.Leaf[0].Port[3]")
	assert.Equal(t, a, draws(7, "Fabric.Leaf[0].Port[3]"))
	assert.NotEqual(t, a, draws(7, "Fabric.Leaf[0].Port[4]"))
	assert.NotEqual(t, a, draws(8, "Fabric.Leaf[0].Port[3]"))
}

// countingFreeSink frees each packet's blocks as its tail arrives
// (freeSink) and counts the packets.
type countingFreeSink struct {
	freeSink
	got int
}

func (f *countingFreeSink) PacketArrived(p *Port, pkt *ib.Packet, head, tail ib.PS) {
	f.got++
	f.freeSink.PacketArrived(p, pkt, head, tail)
}

// TestCodewordPacketFraction: a long run on one 4x NDR wire at pre-FEC BER
// 1.5e-3 under RS(544,514), P_cw = 8.7216e-3 (TestCodewordFailure). A
// codeword carries 640 bytes, 12.8 ns of the wire. A 4,122-byte packet
// (SEND ONLY, 4 KiB) starts every 8 codewords (102.4 ns), one codeword
// after the boundary: it spans codewords 8i+1 … 8i+7 (4,122 < 7 × 640 =
// 4,480 bytes; its 82.44 ns end before the next boundary but one), so it
// is corrupted with p = 1 − (1 − P_cw)^7 = 5.9477 %, and no two packets
// share a codeword: the fates are independent. The sender's flow-control
// refreshes (every 16 slots, 1,638.4 ns) fall on codewords 8i, which no
// data packet touches. Of N packets sent, the discards are binomial, mean
// N·p, σ = √(N·p(1 − p)): within 5σ (about 53 at N = 50,000). A slot
// whose credits a discard still holds is skipped; whether a packet is sent
// depends only on earlier packets' fates, not on its own codewords, so
// what is sent is still an independent sample.
func TestCodewordPacketFraction(t *testing.T) {
	const slots = 50000
	period := 8 * 12800 * ib.PS(1) // 8 codewords, ps
	s := components.NewSim()
	pc := PortConfig{VLs: 1, BufferBlocks: 1000, FCRefresh: 16 * period}
	src := NewPort(s, idleOwner{}, "Test.Src.Port[1]", 1, pc)
	sink := &countingFreeSink{freeSink: freeSink{s: s}}
	dst := NewPort(s, sink, "Test.Sink.Port[1]", 1, pc)
	sink.p = dst
	cfg := Defaults()
	Connect(src, dst, cfg.Timing(2))
	m := CodewordModelFor(FECRS544, 1.5e-3)
	src.SetPreFECErrorRate(m, 1)
	require.Equal(t, int64(12800), src.cw.period, "one codeword is 12.8 ns at 4x NDR")
	for i := range slots {
		s.Schedule(ib.PS(i)*period+12800, fnProbe(func() {
			pkt := s.NewPacket()
			pkt.Opcode, pkt.PayloadLen = ib.SendOnly, 4096
			if !src.CanSend(pkt) {
				s.FreePacket(pkt)
				return
			}
			src.Send(pkt)
		}), 0)
	}
	s.StopAt(ib.PS(slots)*period + 10*ib.Microsecond)
	require.NoError(t, s.Run())

	n := float64(src.Stats().DataPackets)
	k := float64(dst.Errors.Packets)
	require.Greater(t, n, 0.99*slots, "few slots skipped for credits")
	require.Equal(t, src.Stats().DataPackets, dst.Errors.Packets+uint64(sink.got), "every packet arrived or was discarded")
	p := 1 - math.Pow(1-m.Failure, 7)
	sigma := math.Sqrt(n * p * (1 - p))
	assert.InDelta(t, n*p, k, 5*sigma, "%v of %v packets corrupted, expected %.0f ± %.1f", k, n, n*p, sigma)
	// Each failed codeword under a packet is counted once, as it began;
	// a packet is corrupted by at least one.
	failed := src.FailedCodewordsBefore(s.Now())
	assert.GreaterOrEqual(t, failed, dst.Errors.Packets+dst.Errors.FCPackets)
	// The failed codewords counted are those packets touched: 7 per data
	// packet, 1 per flow-control packet, each failing with P_cw.
	touched := 7*n + float64(src.Stats().FCPackets)
	assert.InDelta(t, touched*m.Failure, float64(failed), 5*math.Sqrt(touched*m.Failure*(1-m.Failure)))
	t.Logf("P_cw %.4e, p %.4f: %v of %v packets corrupted (expected %.0f ± %.1f); %d failed codewords; %d of %d FC packets lost",
		m.Failure, p, k, n, n*p, sigma, failed, dst.Errors.FCPackets, src.Stats().FCPackets)
}

// TestCodewordBurst: one failed codeword corrupts every packet with a bit
// in it. At 4x NDR a codeword is 640 bytes, 12,800 ps; a SEND ONLY with no
// payload is 26 wire bytes (LRH 8 + BTH 12 + ICRC 4 + VCRC 2), 520 ps.
// Codewords 0 and 2 are made to fail (the model's rate, 1e-5, fails none
// else: P_cw ≈ 2e-34).
//
//	A at 0        bytes    0 …   25: codeword 0  → corrupted
//	B at 520      bytes   26 …   51: codeword 0  → corrupted with A
//	C at 12,800   bytes  640 …  665: codeword 1  → intact
//	D at 25,340   bytes 1267 … 1292: codewords 1–2 → corrupted
//	E at 25,860   bytes 1293 … 1318: codeword 2  → corrupted with D
//	F at 38,400   bytes 1920 … 1945: codeword 3  → intact
//
// B and E start as A and D end (back to back); under independent bit
// errors their fates would be independent, here they are one.
func TestCodewordBurst(t *testing.T) {
	s := components.NewSim()
	pc := PortConfig{VLs: 1, BufferBlocks: 100, FCRefresh: ib.PS(1) << 40}
	src := NewPort(s, idleOwner{}, "Test.Src.Port[1]", 1, pc)
	sink := &holdSink{}
	dst := NewPort(s, sink, "Test.Sink.Port[1]", 1, pc)
	cfg := Defaults()
	Connect(src, dst, cfg.Timing(2))
	src.SetPreFECErrorRate(CodewordModelFor(FECRS544, 1e-5), 1)
	src.cw.nextBad = 0 // codeword 0 fails
	rec := &traceRecorder{}
	dst.AcceptHook(rec)
	var seqs []uint64
	send := func(at ib.PS, name string, before func()) {
		s.Schedule(at, fnProbe(func() {
			if before != nil {
				before()
			}
			pkt := s.NewPacket()
			pkt.Opcode = ib.SendOnly
			require.Equal(t, 26, pkt.WireBytes())
			seqs = append(seqs, pkt.Seq)
			require.True(t, src.CanSend(pkt), name)
			src.Send(pkt)
		}), 0)
	}
	send(0, "A", nil)
	send(520, "B", nil)
	send(12800, "C", nil)
	send(25340, "D", func() { src.cw.nextBad = 2 }) // codeword 2 fails
	send(25860, "E", nil)
	send(38400, "F", nil)
	s.StopAt(ib.Microsecond)
	require.NoError(t, s.Run())

	var dropped []uint64
	for _, e := range rec.evs {
		if e.Kind == components.TraceDrop {
			v, _ := e.Int("seq")
			dropped = append(dropped, uint64(v))
		}
	}
	assert.Equal(t, []uint64{seqs[0], seqs[1], seqs[3], seqs[4]}, dropped, "A, B, D, E")
	assert.Equal(t, 2, sink.got, "C and F")
	// Two failed codewords, counted once each, at their start times.
	assert.Equal(t, uint64(2), src.FailedCodewordsBefore(ib.Microsecond))
	assert.Equal(t, uint64(1), src.FailedCodewordsBefore(2*12800))
	assert.Equal(t, uint64(2), src.FailedCodewordsBefore(2*12800+1))
}
