package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// writeTime runs one RDMA WRITE of n bytes from A to B back to back (EDR,
// cx7: its PCIe Gen5 x16 reads far faster than the 100 Gb/s link, so the
// wire sets the pace) and returns when its send completion arrived. With
// ccMin ≥ 0, A has congestion control with CCTI_Min ccMin: its QP starts
// at that index, with no BECN needed.
func writeTime(t *testing.T, n int, ccMin int) (ib.PS, *pair) {
	cfg, err := Profile("cx7")
	require.NoError(t, err)
	lc := edrLink()
	p := newPair(t, lc, cfg, n)
	if ccMin >= 0 {
		c := cc.Defaults()
		c.CCTIMin = ccMin
		require.NoError(t, c.Validate())
		mtu := ib.Packet{Opcode: ib.SendOnly, PayloadLen: lc.MTU}
		params := c.Resolve(lc.Timing(lc.LengthM).Serialization(mtu.WireBytes()))
		p.a.EnableCC(&params)
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true,
		LocalAddr: p.bufA, Length: uint32(n), LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	var wcs [2]WC
	k := 0
	var at ib.PS
	p.runUntil(t, func() bool {
		k += p.a.PollCQ(p.qa.SendCQ, wcs[k:])
		at = p.s.Now()
		return k > 0
	})
	require.Equal(t, 1, k)
	require.Equal(t, WCSuccess, wcs[0].Status)
	return at, p
}

// TestCCGrantSpacing: a QP at CCT index i has each grant after its first
// wait serialization + CCT[i] after the one before; without the delay the
// wire alone spaces its packets, one serialization apart. So a WRITE of
// N MTU packets completes (N − 1) × CCT[i] later than without CC, with
// everything else (the first packet's way, the last one's ACK) the same.
// Index 16 of the default table is one MTU SEND ONLY's wire time, S
// (cc.DefaultCCT): half the link. At index 0 (delay 0) nothing is gated
// and the completion time is exactly the CC-off one. (Measured: 1.4 ns
// short of (N − 1) × S = 20.775 µs; the grant-to-wire time of a packet
// is not quite constant: the first carries a RETH, PCIe completions
// align differently. The tolerance is 0.1 %.)
func TestCCGrantSpacing(t *testing.T) {
	const n = 64 * 4096 // 64 MTU packets
	base, _ := writeTime(t, n, -1)
	zero, _ := writeTime(t, n, 0)
	assert.Equal(t, base, zero, "delay 0 gates nothing")
	slow, p := writeTime(t, n, 16)
	lc := edrLink()
	mtu := ib.Packet{Opcode: ib.SendOnly, PayloadLen: lc.MTU}
	delay := lc.Timing(lc.LengthM).Serialization(mtu.WireBytes()) // CCT[16] = 16 × S / 16
	want := 63 * delay
	got := slow - base
	t.Logf("base %v, throttled %v: +%v, (N−1) × CCT[16] = %v", base, slow, got, want)
	assert.InEpsilon(t, float64(want), float64(got), 0.001)
	assert.Equal(t, 16, p.a.CCIndex(p.qa), "no BECN: the QP stays at CCTI_Min")
}

// enableCCMin turns congestion control on at d with CCTI_Min ccMin (every
// QP starts at that index) on lc's default table.
func enableCCMin(t *testing.T, d *Device, lc link.Config, ccMin int) {
	c := cc.Defaults()
	c.CCTIMin = ccMin
	require.NoError(t, c.Validate())
	mtu := ib.Packet{Opcode: ib.SendOnly, PayloadLen: lc.MTU}
	params := c.Resolve(lc.Timing(lc.LengthM).Serialization(mtu.WireBytes()))
	d.EnableCC(&params)
}

// readDone runs until A's READs on the given QPs complete and returns, per
// QP, when its completion arrived.
func readDone(t *testing.T, p *pair, qps ...*QP) []ib.PS {
	done := make([]ib.PS, len(qps))
	var wcs [1]WC
	left := len(qps)
	p.runUntil(t, func() bool {
		for i, qp := range qps {
			if done[i] == 0 && p.a.PollCQ(qp.SendCQ, wcs[:]) > 0 {
				require.Equal(t, WCSuccess, wcs[0].Status)
				done[i] = p.s.Now()
				left--
			}
		}
		return left == 0
	})
	require.Zero(t, left)
	return done
}

// readTime runs one RDMA READ of n bytes by A from B back to back (EDR,
// cx7: B's PCIe reads far faster than the link, so the wire paces its
// responses) and returns when A's completion arrived. With ccMin ≥ 0, B
// (the responder) has congestion control with CCTI_Min ccMin.
func readTime(t *testing.T, n int, ccMin int) ib.PS {
	cfg, err := Profile("cx7")
	require.NoError(t, err)
	lc := edrLink()
	p := newPair(t, lc, cfg, n)
	if ccMin >= 0 {
		enableCCMin(t, p.b, lc, ccMin)
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMARead, Signaled: true,
		LocalAddr: p.bufA, Length: uint32(n), LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	return readDone(t, p, p.qa)[0]
}

// TestCCResponseSpacing: the CCT index of the responder's QP spaces its
// READ responses as it spaces a requester's grants. At index i each
// response after the first starts serialization + CCT[i] after the one
// before, instead of one serialization (the wire alone); a READ of N MTU
// responses then completes (N − 1) × CCT[i] later, everything else (the
// request's way, the first response's DMA read) the same. Index 16 of the
// default table is one MTU packet's wire time S: (N − 1) × S. At index 0
// nothing is gated and the completion is exactly the CC-off one. (The
// tolerance, 0.1 %, covers the first response's extra AETH bytes: its
// spacing is its own wire time, 4 bytes longer than a middle's.)
func TestCCResponseSpacing(t *testing.T) {
	const n = 64 * 4096 // 64 MTU responses
	base := readTime(t, n, -1)
	assert.Equal(t, base, readTime(t, n, 0), "delay 0 gates nothing")
	slow := readTime(t, n, 16)
	lc := edrLink()
	mtu := ib.Packet{Opcode: ib.SendOnly, PayloadLen: lc.MTU}
	want := 63 * lc.Timing(lc.LengthM).Serialization(mtu.WireBytes()) // 63 × CCT[16]
	t.Logf("base %v, responder at index 16 %v: +%v, (N−1) × CCT[16] = %v", base, slow, slow-base, want)
	assert.InEpsilon(t, float64(want), float64(slow-base), 0.001)
}

// twoReads: A reads len1 bytes from B on QP 1 at time 0 and n bytes on a
// second QP at post2; B has congestion control, its QP 1 at index1 and
// the second QP at 0. It returns the two completion times, and checks the
// data of both.
func twoReads(t *testing.T, len1, n, index1 int, post2 ib.PS) (done1, done2 ib.PS) {
	cfg, err := Profile("cx7")
	require.NoError(t, err)
	lc := edrLink()
	p := newPair(t, lc, cfg, len1+n)
	qa2 := p.a.CreateQP(p.qa.PD, p.a.CreateCQ(1024), p.a.CreateCQ(1024), 512, 512)
	qb2 := p.b.CreateQP(p.qb.PD, p.b.CreateCQ(1024), p.b.CreateCQ(1024), 512, 512)
	require.NoError(t, ConnectRC(qa2, qb2, lc.MTU, 0x30, 0x40))
	enableCCMin(t, p.b, lc, 0)
	i := int(p.qb.Num - qpBase)
	p.b.cc.throttle.Grow(i + 1)
	for range index1 { // one BECN is one step at CCTI_Increase 1
		p.b.cc.throttle.BECN(i, 0)
	}
	require.Equal(t, index1, p.b.CCIndex(p.qb))
	src := make([]byte, len1+n)
	for k := range src {
		src[k] = byte(k*7 + k>>12)
	}
	p.b.Mem.Write(p.bufB, src)
	read := func(qa *QP, off, length int) {
		require.NoError(t, p.a.PostSend(qa, &SendWR{ID: 1, Opcode: WRRDMARead, Signaled: true,
			LocalAddr: p.bufA + uint64(off), Length: uint32(length), LKey: p.mrA.LKey, RemoteAddr: p.bufB + uint64(off), RKey: p.mrB.RKey}))
	}
	read(p.qa, 0, len1)
	p.s.Schedule(post2, postAt(func() { read(qa2, len1, n) }), 0)
	done := readDone(t, p, p.qa, qa2)
	got := make([]byte, len1+n)
	p.a.Mem.Read(p.bufA, got)
	assert.Equal(t, src, got)
	return done[0], done[1]
}

// postAt runs a function as an event (a test's post at a given time).
type postAt func()

func (f postAt) HandleEvent(*components.Event) { f() }

// TestCCHeldResponsesGiveWay: a responder QP whose responses are held
// does not hold back another QP's behind it in the response queue. A
// reads 64 MTU packets from B on QP 1, and at 15 µs (QP 1's payload read
// from B's memory by then, so the second READ's DMA runs as it would
// alone) 64 on QP 2. B's QP 1 sits at index 112 of the default table (CCT
// = 7 S, S an MTU packet's wire time: one response per 8 S), QP 2 at
// index 0. QP 2's reply joins the response queue behind QP 1's, which has
// most of its responses to go (one per 8 S since time 0: some 6 sent by
// 15 µs); had it to wait for them, it would finish some 58 × 8 S later.
// Instead, at QP 1's next hold, QP 2's reply takes the head, and the
// response engine serves a reply at the head to its end, as it does
// without congestion control (replies of different QPs are not
// interleaved): QP 2 completes as it does on a free wire, behind a
// one-packet READ on QP 1 (done by then: the same caches warm), but for
// at most one of QP 1's responses on the wire when its first is ready
// (S); QP 1's remaining responses follow. The data of both arrive intact
// (each QP's responses keep their order).
func TestCCHeldResponsesGiveWay(t *testing.T) {
	const n = 64 * 4096
	lc := edrLink()
	s := lc.Timing(lc.LengthM).Serialization((&ib.Packet{Opcode: ib.SendOnly, PayloadLen: lc.MTU}).WireBytes())
	post2 := 15 * ib.Microsecond
	_, free := twoReads(t, 4096, n, 0, post2)
	done1, done2 := twoReads(t, n, n, 112, post2)
	t.Logf("QP 2 on a free wire %v, behind the held QP 1 %v (+%v); QP 1 %v",
		free-post2, done2-post2, done2-free, done1)
	assert.GreaterOrEqual(t, done2, free)
	assert.LessOrEqual(t, done2-free, s)
	assert.Greater(t, done1, done2+50*8*s, "QP 1's held responses come after QP 2's")
}

// TestCCAnswersFECN: which marked packets an HCA answers with a CNP, and
// to whom. A's QP is the requester of its connection to B's. A READ
// response or an atomic ACK that reaches A marked came from B's QP, and A
// answers it with a CNP to B's LID and QP (IBA Annex A10 returns the BECN
// to the marked packet's source; hfi1 answers these opcodes too); a
// request that reaches B marked came from A's QP, answered to A's LID and
// QP. An ACK is not answered (hfi1 ignores its FECN too), nor a packet for
// no QP. Each answered FECN queues one CNP, BECN set, on the data's SL.
func TestCCAnswersFECN(t *testing.T) {
	for _, tc := range []struct {
		name     string
		op       ib.Opcode
		atB      bool // the packet arrives at B (a request) rather than A
		noQP     bool
		answered bool
		response bool
	}{
		{"write request", ib.RDMAWriteOnly, true, false, true, false},
		{"read request", ib.RDMAReadRequest, true, false, true, false},
		{"read response first", ib.RDMAReadResponseFirst, false, false, true, true},
		{"read response middle", ib.RDMAReadResponseMiddle, false, false, true, true},
		{"read response last", ib.RDMAReadResponseLast, false, false, true, true},
		{"read response only", ib.RDMAReadResponseOnly, false, false, true, true},
		{"atomic ack", ib.AtomicAcknowledge, false, false, true, true},
		{"ack", ib.Acknowledge, false, false, false, false},
		{"request for no QP", ib.SendOnly, true, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Profile("cx7")
			require.NoError(t, err)
			lc := edrLink()
			p := newPair(t, lc, cfg, 4096)
			to, from, qp, peer := p.a, p.b, p.qa, p.qb
			if tc.atB {
				to, from, qp, peer = p.b, p.a, p.qb, p.qa
			}
			enableCCMin(t, to, lc, 0)
			pkt := &ib.Packet{Opcode: tc.op, FECN: true, SL: 0, SLID: from.LID, DLID: to.LID, DestQP: qp.Num}
			target := qp
			if tc.noQP {
				target = nil
			}
			to.ccReceive(target, pkt)
			st, ok := to.CC(0)
			require.True(t, ok)
			if !tc.answered {
				assert.Equal(t, uint64(1), st.FECNIgnored)
				assert.Zero(t, st.FECNReceived)
				assert.Zero(t, to.cc.cnp.Len())
				return
			}
			assert.Equal(t, uint64(1), st.FECNReceived)
			assert.Equal(t, tc.response, st.FECNResponses == 1)
			assert.Zero(t, st.FECNIgnored)
			require.Equal(t, 1, to.cc.cnp.Len())
			cnp, _ := to.cc.cnp.Peek()
			assert.Equal(t, ib.CNP, cnp.Opcode)
			assert.True(t, cnp.BECN)
			assert.Equal(t, from.LID, cnp.DLID)
			assert.Equal(t, to.LID, cnp.SLID)
			assert.Equal(t, peer.Num, cnp.DestQP, "the QP that sent the marked packet")
		})
	}
}
