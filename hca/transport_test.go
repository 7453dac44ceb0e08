package hca

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// testEnv is a responder's QP context without timing.
type testEnv struct {
	kt *KeyTable
	pd uint32
	rq []RecvWQE
}

func (e *testEnv) RKeyBase(uint32) uint64 { return 0 }

func (e *testEnv) CheckRKey(k uint32, need int, addr, n uint64) KeyResult {
	return e.kt.Check(k, e.pd, need, addr, n)
}
func (e *testEnv) CheckLKey(k uint32, addr, n uint64) KeyResult {
	return e.kt.Check(k, e.pd, AccessLocalWrite, addr, n)
}
func (e *testEnv) PopRecv() (RecvWQE, bool) {
	if len(e.rq) == 0 {
		return RecvWQE{}, false
	}
	w := e.rq[0]
	e.rq = e.rq[1:]
	return w, true
}

func TestPSNDiffWraps(t *testing.T) {
	tests := []struct {
		a, b uint32
		want int32
	}{
		{5, 3, 2}, {3, 5, -2}, {0, 0xFFFFFF, 1}, {0xFFFFFF, 0, -1}, {1, 0xFFFFFE, 3},
		{0x7FFFFF, 0, 0x7FFFFF}, {0x800000, 0, -0x800000},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, psnDiff(tc.a, tc.b), "%x - %x", tc.a, tc.b)
	}
	assert.Equal(t, uint32(1), psnAdd(0xFFFFFF, 2))
	assert.Equal(t, uint32(0xFFFFFF), psnAdd(0, -1))
}

func TestSegmentation(t *testing.T) {
	const mtu = 1024
	cfg := Defaults()
	sizes := []uint32{0, 1, mtu - 1, mtu, mtu + 1, 10 * mtu}
	for _, op := range []WROpcode{WRSend, WRRDMAWrite, WRSendImm, WRRDMAWriteImm} {
		for _, size := range sizes {
			t.Run(fmt.Sprintf("%v/%d", op, size), func(t *testing.T) {
				r := NewRequester(&cfg, mtu, 100)
				r.Enqueue(SendWQE{Opcode: op, Length: size, RemoteAddr: 0x5000, RKey: 0x101, Imm: 9}, 0)
				// n = max(1, ceil(size / MTU)): 0 → 1, 1 → 1, 1023 → 1, 1024 → 1, 1025 → 2, 10240 → 10.
				n := 1
				if size > mtu {
					n = int((size + mtu - 1) / mtu)
				}
				var pkts []ib.Packet
				for r.HasWork() {
					var p ib.Packet
					r.Next(&p)
					pkts = append(pkts, p)
				}
				require.Len(t, pkts, n)
				total := 0
				for i, p := range pkts {
					assert.Equal(t, RequestOpcode(op, i, n), p.Opcode)
					assert.Equal(t, uint32(100+i), p.PSN)
					assert.Equal(t, i == n-1, p.AckReq, "AckReq on the last packet only (every 64 > 10)")
					want := mtu
					if i == n-1 {
						want = int(size) - (n-1)*mtu
					}
					assert.Equal(t, want, p.PayloadLen)
					total += p.PayloadLen
					hasRETH := p.Opcode.Headers()&ib.HasRETH != 0
					assert.Equal(t, i == 0 && (op == WRRDMAWrite || op == WRRDMAWriteImm), hasRETH)
					if hasRETH {
						assert.Equal(t, ib.RETH{VA: 0x5000, RKey: 0x101, Length: size}, p.RETH)
					}
					hasImm := p.Opcode.Headers()&ib.HasImmDt != 0
					assert.Equal(t, i == n-1 && (op == WRSendImm || op == WRRDMAWriteImm), hasImm)
				}
				assert.Equal(t, int(size), total)
			})
		}
	}
	// The opcode names of a 3-packet SEND and a 1-packet WRITE with immediate.
	assert.Equal(t, []ib.Opcode{ib.SendFirst, ib.SendMiddle, ib.SendLast},
		[]ib.Opcode{RequestOpcode(WRSend, 0, 3), RequestOpcode(WRSend, 1, 3), RequestOpcode(WRSend, 2, 3)})
	assert.Equal(t, ib.RDMAWriteOnlyImm, RequestOpcode(WRRDMAWriteImm, 0, 1))
	assert.Equal(t, []ib.Opcode{ib.RDMAReadResponseFirst, ib.RDMAReadResponseMiddle, ib.RDMAReadResponseLast, ib.RDMAReadResponseOnly},
		[]ib.Opcode{ReadResponseOpcode(0, 3), ReadResponseOpcode(1, 3), ReadResponseOpcode(2, 3), ReadResponseOpcode(0, 1)})
}

func TestAckReqEvery(t *testing.T) {
	cfg := Defaults()
	cfg.AckReqEvery = 64
	r := NewRequester(&cfg, 256, 0)
	r.Enqueue(SendWQE{Opcode: WRRDMAWrite, Length: 130 * 256}, 0)
	var acks []int
	for i := 0; r.HasWork(); i++ {
		var p ib.Packet
		r.Next(&p)
		if p.AckReq {
			acks = append(acks, i)
		}
	}
	// Packets 63 and 127 (every 64th) and the last, 129.
	assert.Equal(t, []int{63, 127, 129}, acks)
}

func TestPSNWrapEndToEnd(t *testing.T) {
	cfg := Defaults()
	start := uint32(0xFFFFFE)
	r := NewRequester(&cfg, 256, start)
	var kt KeyTable
	mr := kt.Register(1, 0, 1<<20, AccessRemoteWrite|AccessLocalWrite)
	resp := NewResponder(&cfg, 256, start)
	env := &testEnv{kt: &kt, pd: 1}
	r.Enqueue(SendWQE{Opcode: WRRDMAWrite, Length: 4 * 256, RemoteAddr: 0, RKey: mr.RKey}, 0)
	var psns []uint32
	var last RespAction
	for r.HasWork() {
		var p ib.Packet
		r.Next(&p)
		psns = append(psns, p.PSN)
		last = resp.Receive(&p, env)
		assert.False(t, last.Drop)
	}
	assert.Equal(t, []uint32{0xFFFFFE, 0xFFFFFF, 0, 1}, psns)
	require.True(t, last.Ack)
	assert.Equal(t, uint32(1), last.AckPSN)
	assert.Equal(t, uint32(2), resp.ExpectedPSN())
	res := r.OnAck(last.AckPSN, last.AckSyn)
	require.Len(t, res.Completions, 1)
	assert.Equal(t, WCSuccess, res.Completions[0].Status)
}

func TestAckCoalescing(t *testing.T) {
	tests := []struct {
		coalesce int
		wantAcks []uint32 // PSNs of ACKs sent while receiving
		flush    bool     // an ACK still owed at the end
	}{
		// 10 one-packet writes, each AckReq. No coalescing: an ACK for each.
		{1, []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, false},
		// 4 per ACK: after packets 3 and 7; 8 and 9 wait for the flush.
		{4, []uint32{3, 7}, true},
		// 5 per ACK: after 4 and 9, nothing owed.
		{5, []uint32{4, 9}, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.coalesce), func(t *testing.T) {
			cfg := Defaults()
			cfg.AckCoalesce = tc.coalesce
			var kt KeyTable
			mr := kt.Register(1, 0, 1<<20, AccessRemoteWrite)
			resp := NewResponder(&cfg, 4096, 0)
			req := NewRequester(&cfg, 4096, 0)
			env := &testEnv{kt: &kt, pd: 1}
			for i := 0; i < 10; i++ {
				req.Enqueue(SendWQE{Opcode: WRRDMAWrite, Length: 8, RKey: mr.RKey, RemoteAddr: uint64(8 * i)}, 0)
			}
			var acks []uint32
			for req.HasWork() {
				var p ib.Packet
				req.Next(&p)
				if a := resp.Receive(&p, env); a.Ack {
					acks = append(acks, a.AckPSN)
				}
			}
			assert.Equal(t, tc.wantAcks, acks)
			psn, _, ok := resp.FlushAck()
			assert.Equal(t, tc.flush, ok)
			if ok {
				assert.Equal(t, uint32(9), psn)
			}
			// One ACK for PSN 9 covers every earlier PSN: all ten complete.
			res := req.OnAck(9, SynACKNoLimit)
			assert.Len(t, res.Completions, 10)
		})
	}
}

func TestRKeyViolation(t *testing.T) {
	cfg := Defaults()
	var kt KeyTable
	mr := kt.Register(1, 0x1000, 4096, AccessRemoteWrite|AccessLocalWrite)
	ro := kt.Register(1, 0x9000, 4096, AccessRemoteRead) // no REMOTE_WRITE
	mem := NewHostMemory()
	resp := NewResponder(&cfg, 1024, 0)
	req := NewRequester(&cfg, 1024, 0)
	env := &testEnv{kt: &kt, pd: 1, rq: []RecvWQE{{Addr: 0x1000, Length: 4096, LKey: mr.LKey}}}
	req.Enqueue(SendWQE{Index: 0, Opcode: WRRDMAWrite, Length: 3000, RemoteAddr: 0x9000, RKey: ro.RKey}, 0)
	req.Enqueue(SendWQE{Index: 1, Opcode: WRRDMAWrite, Length: 10, RemoteAddr: 0x1000, RKey: mr.RKey}, 0)
	req.Enqueue(SendWQE{Index: 2, Opcode: WRSend, Length: 10}, 0)
	var nak *RespAction
	for req.HasWork() {
		var p ib.Packet
		req.Next(&p)
		p.Payload = make([]byte, p.PayloadLen)
		a := resp.Receive(&p, env)
		if a.Write {
			mem.Write(a.WriteAddr, p.Payload)
		}
		if a.Ack && nak == nil {
			nak = &a
		}
	}
	require.NotNil(t, nak)
	assert.Equal(t, uint8(SynNAKAccess), nak.AckSyn)
	assert.Equal(t, uint32(0), nak.AckPSN, "the NAK names the FIRST packet's PSN")
	assert.Equal(t, KeyAccessDenied, nak.KeyResult)
	assert.Equal(t, QPErr, resp.State)
	assert.Equal(t, int64(0), mem.BytesWritten, "not one byte written at the responder")
	assert.Len(t, env.rq, 1, "the SEND after the error consumed no receive WQE")

	res := req.OnAck(nak.AckPSN, nak.AckSyn)
	require.Len(t, res.Completions, 3)
	assert.Equal(t, WCRemAccessErr, res.Completions[0].Status)
	assert.Equal(t, WCWRFlushErr, res.Completions[1].Status)
	assert.Equal(t, WCWRFlushErr, res.Completions[2].Status)
	assert.Equal(t, QPErr, req.State)
	// Work posted after the error is flushed at once.
	c := req.Enqueue(SendWQE{Index: 3, Opcode: WRSend}, 0)
	require.Len(t, c, 1)
	assert.Equal(t, WCWRFlushErr, c[0].Status)
	assert.False(t, req.HasWork())
}

func TestRNRThenRetry(t *testing.T) {
	for _, rnrRetry := range []int{7, 1, 0} {
		t.Run(fmt.Sprint(rnrRetry), func(t *testing.T) {
			cfg := Defaults()
			cfg.RNRRetry = rnrRetry
			cfg.MinRNRTimer = 5 // 0.06 ms
			var kt KeyTable
			mr := kt.Register(1, 0x1000, 4096, AccessLocalWrite)
			resp := NewResponder(&cfg, 1024, 0)
			req := NewRequester(&cfg, 1024, 0)
			env := &testEnv{kt: &kt, pd: 1}
			req.Enqueue(SendWQE{Opcode: WRSend, Length: 100}, 0)
			send := func() RespAction {
				var p ib.Packet
				req.Next(&p)
				return resp.Receive(&p, env)
			}
			// Two RNR NAKs before a receive is posted.
			for round := 0; round < 2; round++ {
				a := send()
				require.True(t, a.Ack)
				assert.Equal(t, uint8(SynRNRNAK|5), a.AckSyn)
				assert.Equal(t, uint32(0), resp.ExpectedPSN(), "RNR does not advance ePSN")
				res := req.OnAck(a.AckPSN, a.AckSyn)
				// rnr_retry 0: the first RNR NAK exhausts it; 1: the second.
				if round >= rnrRetry && rnrRetry != 7 {
					require.Len(t, res.Completions, 1)
					assert.Equal(t, WCRNRRetryExcErr, res.Completions[0].Status)
					assert.Equal(t, QPErr, req.State)
					return
				}
				assert.True(t, res.RNRWait)
				assert.Equal(t, 5, req.RNRWaitCode)
				assert.Equal(t, 60*ib.Microsecond, RNRTimerPS(req.RNRWaitCode))
			}
			env.rq = append(env.rq, RecvWQE{Addr: 0x1000, Length: 4096, LKey: mr.LKey})
			a := send()
			require.True(t, a.RecvDone)
			assert.Equal(t, uint32(100), a.RecvLen)
			res := req.OnAck(a.AckPSN, a.AckSyn)
			require.Len(t, res.Completions, 1)
			assert.Equal(t, WCSuccess, res.Completions[0].Status)
		})
	}
}

func TestSequenceErrorAndDuplicate(t *testing.T) {
	cfg := Defaults()
	var kt KeyTable
	mr := kt.Register(1, 0, 1<<16, AccessRemoteWrite)
	resp := NewResponder(&cfg, 1024, 10)
	env := &testEnv{kt: &kt, pd: 1}
	w := func(psn uint32) *ib.Packet {
		return &ib.Packet{Opcode: ib.RDMAWriteOnly, PSN: psn, AckReq: true, PayloadLen: 4,
			RETH: ib.RETH{RKey: mr.RKey, Length: 4}}
	}
	a := resp.Receive(w(11), env) // 10 lost
	assert.True(t, a.Ack && a.Drop)
	assert.Equal(t, uint8(SynNAKSeq), a.AckSyn)
	assert.Equal(t, uint32(10), a.AckPSN, "a sequence NAK carries the expected PSN")
	a = resp.Receive(w(12), env)
	assert.False(t, a.Ack, "one NAK per gap")
	assert.True(t, a.Drop)
	a = resp.Receive(w(10), env)
	assert.True(t, a.Write && a.Ack)
	a = resp.Receive(w(10), env) // duplicate
	assert.True(t, a.Drop && a.Ack)
	assert.Equal(t, uint32(10), a.AckPSN)
	assert.Equal(t, uint8(SynACKNoLimit), a.AckSyn)
	// A LAST with no FIRST is an invalid request.
	a = resp.Receive(&ib.Packet{Opcode: ib.RDMAWriteLast, PSN: 11, PayloadLen: 4}, env)
	assert.Equal(t, uint8(SynNAKInvReq), a.AckSyn)
	assert.Equal(t, QPErr, resp.State)
}

func TestRetryExhaustion(t *testing.T) {
	cfg := Defaults()
	cfg.RetryCnt = 2
	req := NewRequester(&cfg, 1024, 0)
	req.Enqueue(SendWQE{Opcode: WRSend, Length: 3000}, 0)
	req.Enqueue(SendWQE{Opcode: WRSend, Length: 1}, 0)
	drain := func() int {
		n := 0
		for req.HasWork() {
			var p ib.Packet
			req.Next(&p)
			n++
		}
		return n
	}
	assert.Equal(t, 4, drain()) // 3 + 1 packets
	for i := 0; i < 2; i++ {
		res := req.OnTimeout()
		assert.True(t, res.Rewound)
		assert.Equal(t, 4, drain(), "go-back-N resends everything outstanding")
	}
	res := req.OnTimeout()
	require.Len(t, res.Completions, 2)
	assert.Equal(t, WCRetryExcErr, res.Completions[0].Status)
	assert.Equal(t, WCWRFlushErr, res.Completions[1].Status)
	assert.Equal(t, int64(2), req.Retries)
	// 4.096 µs × 2^14 = 67.108864 ms.
	assert.Equal(t, ib.PS(67_108_864_000), RetryTimeoutPS(14))
	assert.Equal(t, ib.PS(0), RetryTimeoutPS(0))
}

func TestReadAtomicCap(t *testing.T) {
	cfg := Defaults()
	cfg.MaxRdAtomic = 2
	req := NewRequester(&cfg, 1024, 0)
	for i := 0; i < 3; i++ {
		req.Enqueue(SendWQE{Opcode: WRRDMARead, Length: 2048, LocalAddr: uint64(i) << 12}, 0)
	}
	n := 0
	for req.HasWork() {
		var p ib.Packet
		req.Next(&p)
		n++
	}
	assert.Equal(t, 2, n, "the third READ waits for a response")
	// The first READ (PSNs 0–1) answered: its LAST frees a slot.
	for i, op := range []ib.Opcode{ib.RDMAReadResponseFirst, ib.RDMAReadResponseLast} {
		pl, ok, res := req.OnReadResponse(&ib.Packet{Opcode: op, PSN: uint32(i), PayloadLen: 1024})
		require.True(t, ok)
		assert.Equal(t, uint64(i*1024), pl.Addr)
		if i == 1 {
			require.Len(t, res.Completions, 1)
		}
	}
	assert.True(t, req.HasWork())
}

// TestReadSlotHeldUntilRetired: a READ holds its max_rd_atomic slot from
// its first send until it completes in order, as rxe's has_rd_atomic is
// released only by complete_ack. With max_rd_atomic 2, READ A (PSN 0) and
// READ B (PSN 1) go out; B's response alone leaves A unfinished, so C must
// still wait: were it sent, the responder would have executed A, B and C,
// and its two resources could no longer replay A.
func TestReadSlotHeldUntilRetired(t *testing.T) {
	cfg := Defaults()
	cfg.MaxRdAtomic = 2
	req := NewRequester(&cfg, 1024, 0)
	for i := 0; i < 3; i++ {
		req.Enqueue(SendWQE{Index: uint16(i), Opcode: WRRDMARead, Length: 8, LocalAddr: uint64(i) << 12}, 0)
	}
	drain := func() []uint32 { return drainPSNs(req) }
	require.Equal(t, []uint32{0, 1}, drain())
	_, ok, res := req.OnReadResponse(&ib.Packet{Opcode: ib.RDMAReadResponseOnly, PSN: 1, PayloadLen: 8})
	require.True(t, ok, "B's data is placed")
	assert.Empty(t, res.Completions, "B completes only after A")
	assert.NotContains(t, drain(), uint32(2), "C waits for a slot")
	_, ok, res = req.OnReadResponse(&ib.Packet{Opcode: ib.RDMAReadResponseOnly, PSN: 0, PayloadLen: 8})
	require.True(t, ok)
	require.Len(t, res.Completions, 2, "A, then B")
	assert.Equal(t, []uint32{2}, drain(), "A and B retired: C goes")
}

// TestImpliedNAK: responses come back in PSN order, so an ACK, NAK or
// response for a PSN past a READ or atomic still unanswered means its
// response was lost. The requester retries from it at once (rxe_comp.c
// check_psn: COMPST_ERROR_RETRY), spending one retry_cnt, and resends
// only what the responder has not acknowledged: messages already
// acknowledged are skipped. The same trigger again, while that retry is
// under way, starts no second one (rxe comp.started_retry).
func TestImpliedNAK(t *testing.T) {
	const mtu = 1024
	type reply struct {
		op  ib.Opcode
		psn uint32
		syn uint8 // ACKNOWLEDGE only
	}
	tests := []struct {
		name    string
		ops     []WROpcode // 8 bytes each, one PSN each, except a 2048-byte READ at PSNs 0–1
		trigger reply
		placed  bool     // the trigger's own payload is accepted
		resend  []uint32 // PSNs sent again, in order
	}{
		// READ 0–1, WRITE 2, WRITE 3. The ACK of 3 covers both WRITEs.
		{"ACK", []WROpcode{WRRDMARead, WRRDMAWrite, WRRDMAWrite},
			reply{ib.Acknowledge, 3, SynACKNoLimit}, false, []uint32{0}},
		// The NAK says 3 is missing: 2 is acknowledged, 3 is resent.
		{"sequence NAK", []WROpcode{WRRDMARead, WRRDMAWrite, WRRDMAWrite},
			reply{ib.Acknowledge, 3, SynNAKSeq}, false, []uint32{0, 3}},
		// The SEND met an empty receive queue, but after the READ: the READ
		// is retried and the RNR NAK itself is not acted on (no RNR wait).
		{"RNR NAK", []WROpcode{WRRDMARead, WRSend},
			reply{ib.Acknowledge, 2, SynRNRNAK | 1}, false, []uint32{0, 2}},
		// The atomic's result is placed; only the READ goes again.
		{"atomic response", []WROpcode{WRRDMARead, WRFetchAdd},
			reply{ib.AtomicAcknowledge, 2, 0}, true, []uint32{0}},
		// READ 0–1, READ 2: the second READ's data is placed.
		{"read response", []WROpcode{WRRDMARead, WRRDMARead},
			reply{ib.RDMAReadResponseOnly, 2, 0}, true, []uint32{0}},
		// A FETCH_ADD at 0 (one PSN), then a WRITE at 1.
		{"ACK past an atomic", []WROpcode{WRFetchAdd, WRRDMAWrite},
			reply{ib.Acknowledge, 1, SynACKNoLimit}, false, []uint32{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.RetryCnt = 2
			req := NewRequester(&cfg, mtu, 0)
			for i, op := range tc.ops {
				n := uint32(8)
				if i == 0 && op == WRRDMARead {
					n = 2 * mtu
				}
				req.Enqueue(SendWQE{Index: uint16(i), Opcode: op, Length: n}, 0)
			}
			drain := func() []uint32 { return drainPSNs(req) }
			drain()
			deliver := func(rp reply) (bool, AckResult) {
				pkt := &ib.Packet{Opcode: rp.op, PSN: rp.psn, PayloadLen: 8}
				switch rp.op {
				case ib.Acknowledge:
					return false, req.OnAck(rp.psn, rp.syn)
				case ib.AtomicAcknowledge:
					_, ok, res := req.OnAtomicAck(pkt)
					return ok, res
				}
				_, ok, res := req.OnReadResponse(pkt)
				return ok, res
			}
			placed, res := deliver(tc.trigger)
			assert.Equal(t, tc.placed, placed)
			assert.True(t, res.Rewound)
			assert.False(t, res.RNRWait)
			assert.False(t, res.Progress, "nothing before the READ moved: the timer keeps running")
			assert.Empty(t, res.Completions, "all wait for the first message")
			assert.Equal(t, int64(1), req.Retries)
			assert.Equal(t, cfg.RetryCnt-1, req.retryLeft, "one retry_cnt spent")
			assert.Equal(t, tc.resend, drain())

			// The trigger again (a packet still in flight from before the
			// retry): absorbed by the retry under way.
			_, res = deliver(tc.trigger)
			assert.False(t, res.Rewound)
			assert.Equal(t, int64(1), req.Retries)
			assert.Empty(t, drain())
		})
	}
}

// TestImpliedNAKExhaustsRetryCnt: an implied NAK spends retry_cnt like a
// sequence NAK; with none left the unanswered READ fails with
// RETRY_EXC_ERR and the acknowledged WRITE behind it is flushed, as rxe's
// completer, which completes in order, does.
func TestImpliedNAKExhaustsRetryCnt(t *testing.T) {
	cfg := Defaults()
	cfg.RetryCnt = 0
	req := NewRequester(&cfg, 1024, 0)
	req.Enqueue(SendWQE{Index: 0, Opcode: WRRDMARead, Length: 8}, 0)
	req.Enqueue(SendWQE{Index: 1, Opcode: WRRDMAWrite, Length: 8}, 0)
	for req.HasWork() {
		req.Next(&ib.Packet{})
	}
	res := req.OnAck(1, SynACKNoLimit)
	require.Len(t, res.Completions, 2)
	assert.Equal(t, WCRetryExcErr, res.Completions[0].Status)
	assert.Equal(t, WCWRFlushErr, res.Completions[1].Status)
	assert.Equal(t, QPErr, req.State)
}

// TestRNRStallSpendsOneRetry: three pipelined SENDs meet an empty receive
// queue. The first gets an RNR NAK, the second a sequence NAK for the
// first's PSN (the responder expected 0 and got 1), the third is dropped;
// so every round of the RNR wait. As in rxe, the RNR NAK spends rnr_retry
// (7: infinite) and the sequence NAK starts a retry that spends one
// retry_cnt; the sequence NAKs of later rounds find that retry still
// under way (nothing has progressed) and spend nothing (rxe
// comp.started_retry). With retry_cnt 1 the SENDs complete once receives
// are posted; with retry_cnt 0 the first sequence NAK fails the QP.
func TestRNRStallSpendsOneRetry(t *testing.T) {
	for _, retryCnt := range []int{0, 1} {
		t.Run(fmt.Sprint(retryCnt), func(t *testing.T) {
			cfg := Defaults()
			cfg.RetryCnt, cfg.RNRRetry = retryCnt, 7
			req := NewRequester(&cfg, 1024, 0)
			for i := 0; i < 3; i++ {
				req.Enqueue(SendWQE{Index: uint16(i), Opcode: WRSend, Length: 8}, 0)
			}
			for round := 0; round < 3; round++ {
				for req.HasWork() {
					req.Next(&ib.Packet{})
				}
				res := req.OnAck(0, SynRNRNAK|1)
				require.True(t, res.RNRWait)
				res = req.OnAck(0, SynNAKSeq)
				if retryCnt == 0 {
					require.Len(t, res.Completions, 3)
					assert.Equal(t, WCRetryExcErr, res.Completions[0].Status)
					return
				}
				assert.Empty(t, res.Completions, "round %d", round)
				assert.Equal(t, round == 0, res.Rewound, "round %d: only the first starts a retry", round)
			}
			for req.HasWork() {
				req.Next(&ib.Packet{})
			}
			res := req.OnAck(2, SynACKNoLimit)
			require.Len(t, res.Completions, 3)
			for _, c := range res.Completions {
				assert.Equal(t, WCSuccess, c.Status)
			}
			assert.Equal(t, 1, req.retryLeft, "progress restores retry_cnt")
		})
	}
}

// loopback runs a requester against a responder with real memory and a
// lossy wire, without timing: every lost packet is recovered by NAK or
// timeout. It returns the completions.
func loopback(t *testing.T, seed uint64, loss float64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := Defaults()
	const mtu = 256
	var kt KeyTable
	memA, memB := NewHostMemory(), NewHostMemory()
	const size = 1 << 17
	srcA := kt.Register(1, 0x10000, size, AccessLocalWrite)
	dstB := kt.Register(1, 0x80000, size, AccessRemoteWrite|AccessRemoteRead|AccessRemoteAtomic|AccessLocalWrite)
	rxB := kt.Register(1, 0x100000, size, AccessLocalWrite)
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(rng.IntN(256))
	}
	memA.Write(0x10000, buf)
	for i := range buf {
		buf[i] = byte(rng.IntN(256))
	}
	memB.Write(0x80000, buf)
	shadowB := append([]byte(nil), buf...)
	memB.BytesWritten = 0

	env := &testEnv{kt: &kt, pd: 1}
	req := NewRequester(&cfg, mtu, rng.Uint32()&psnMask)
	resp := NewResponder(&cfg, mtu, req.nextPSN)
	type check struct {
		localOff, remoteOff uint64
		n                   int
		op                  WROpcode
		add                 uint64
	}
	var checks []check
	recvOff := uint64(0)
	for i := 0; i < 40; i++ {
		n := rng.IntN(4*mtu + 1)
		off := uint64(rng.IntN(size/2-n)) &^ 7
		loc := uint64(rng.IntN(size/2-n)) &^ 7
		slot := uint64(i) * 1040 // a private upper-half slot for READ and atomic results
		w := SendWQE{Index: uint16(i), Length: uint32(n), LocalAddr: 0x10000 + loc, LKey: srcA.LKey,
			RemoteAddr: 0x80000 + off, RKey: dstB.RKey}
		switch rng.IntN(4) {
		case 0:
			w.Opcode = WRRDMAWrite
			var src = make([]byte, n)
			memA.Read(w.LocalAddr, src)
			copy(shadowB[off:], src)
		case 1:
			w.Opcode = WRSend
			env.rq = append(env.rq, RecvWQE{Addr: 0x100000 + recvOff, Length: uint32(n), LKey: rxB.LKey})
			checks = append(checks, check{localOff: loc, remoteOff: recvOff, n: n, op: WRSend})
			recvOff += uint64(n)
		case 2:
			w.Opcode = WRRDMARead
			w.LocalAddr = 0x10000 + size/2 + slot
			checks = append(checks, check{localOff: size/2 + slot, remoteOff: off, n: n, op: WRRDMARead})
		case 3:
			w.Opcode = WRFetchAdd
			w.Length = 8
			w.SwapAdd = uint64(rng.IntN(1000))
			w.LocalAddr = 0x10000 + size/2 + slot
			prev := leU64(shadowB[off:])
			putLeU64(shadowB[off:], prev+w.SwapAdd)
			checks = append(checks, check{localOff: size/2 + slot, n: 8, op: WRFetchAdd, add: prev})
		}
		require.Nil(t, req.Enqueue(w, 0))
	}
	// A READ returns the responder's memory when it executes (a retried
	// READ re-executes, from the first byte not yet received), so its
	// expected bytes are taken at response time, at their offset in it.
	readWant := map[uint64][]byte{}
	lose := func() bool { return rng.Float64() < loss }
	completed := 0
	for steps := 0; steps < 100000 && req.Pending() > 0; steps++ {
		if !req.HasWork() {
			if psn, _, ok := resp.FlushAck(); ok {
				completed += len(req.OnAck(psn, SynACKNoLimit).Completions)
				continue
			}
			res := req.OnTimeout()
			completed += len(res.Completions)
			continue
		}
		var p ib.Packet
		tx := req.Next(&p)
		w := tx.Msg.wqe
		if p.PayloadLen > 0 {
			p.Payload = make([]byte, p.PayloadLen)
			memA.Read(w.LocalAddr+uint64(tx.Index*mtu), p.Payload)
		}
		if lose() {
			continue
		}
		a := resp.Receive(&p, env)
		if a.Write {
			memB.Write(a.WriteAddr, p.Payload)
		}
		var replies []ib.Packet
		if a.Ack {
			replies = append(replies, ib.Packet{Opcode: ib.Acknowledge, PSN: a.AckPSN, AETH: ib.AETH{Syndrome: a.AckSyn}})
		}
		if a.Read {
			data := make([]byte, a.ReadLen)
			memB.Read(a.ReadVA, data)
			if readWant[w.LocalAddr] == nil {
				readWant[w.LocalAddr] = make([]byte, w.Length)
			}
			copy(readWant[w.LocalAddr][a.ReadVA-w.RemoteAddr:], data)
			sendReply(resp, a)
			np := PacketCount(a.ReadLen, mtu)
			for k := 0; k < np; k++ {
				lo := k * mtu
				hi := min(lo+mtu, int(a.ReadLen))
				replies = append(replies, ib.Packet{Opcode: ReadResponseOpcode(k, np), PSN: psnAdd(a.ReadPSN, k),
					PayloadLen: hi - lo, Payload: data[lo:hi]})
			}
		}
		if a.Atomic || a.AtomicReplay {
			var orig uint64
			if a.AtomicReplay {
				orig, _ = resp.LastAtomic(p.PSN)
			} else {
				orig = memB.ReadU64(p.Atomic.VA)
				memB.WriteU64(p.Atomic.VA, orig+p.Atomic.SwapAdd)
				resp.SaveAtomic(p.PSN, orig)
			}
			replies = append(replies, ib.Packet{Opcode: ib.AtomicAcknowledge, PSN: p.PSN, AtomicAck: orig})
		}
		for _, rp := range replies {
			if lose() {
				continue
			}
			switch rp.Opcode {
			case ib.Acknowledge:
				res := req.OnAck(rp.PSN, rp.AETH.Syndrome)
				completed += len(res.Completions)
				for _, c := range res.Completions {
					require.Equal(t, WCSuccess, c.Status)
				}
			case ib.AtomicAcknowledge:
				pl, ok, res := req.OnAtomicAck(&rp)
				if ok {
					memA.WriteU64(pl.Addr, rp.AtomicAck)
				}
				completed += len(res.Completions)
			default:
				pl, ok, res := req.OnReadResponse(&rp)
				if ok {
					memA.Write(pl.Addr, rp.Payload)
				}
				completed += len(res.Completions)
			}
		}
	}
	require.Equal(t, 40, completed)
	for _, c := range checks {
		got := make([]byte, c.n)
		memA.Read(0x10000+c.localOff, got)
		switch c.op {
		case WRSend:
			want := make([]byte, c.n)
			memB.Read(0x100000+c.remoteOff, want)
			// The receive buffer holds what the local buffer held.
			assert.Equal(t, got, want, "send")
		case WRRDMARead:
			assert.Equal(t, readWant[0x10000+c.localOff], got, "read")
		case WRFetchAdd:
			assert.Equal(t, c.add, leU64(got), "fetch-add original value")
		}
	}
	final := make([]byte, size)
	memB.Read(0x80000, final)
	assert.Equal(t, shadowB, final, "remote buffer after writes and atomics")
}

func leU64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func putLeU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func TestLoopbackIntegrity(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		for _, loss := range []float64{0, 0.05} {
			t.Run(fmt.Sprintf("seed%d/loss%v", seed, loss), func(t *testing.T) { loopback(t, seed, loss) })
		}
	}
}

// drainPSNs takes every packet the requester has to send and returns their
// PSNs in order.
func drainPSNs(req *Requester) []uint32 {
	var psns []uint32
	for req.HasWork() {
		var p ib.Packet
		req.Next(&p)
		psns = append(psns, p.PSN)
	}
	return psns
}

// TestTimeoutResumesAfterMidMessageAck: a timeout resends a message from its
// first unacknowledged PSN, not from its start (rxe req_retry: req.psn =
// comp.psn, and retry_first_write_send skips the acknowledged packets of the
// first WQE). With ack_req_every 4 and a 256-byte MTU, a 2560-byte WRITE or
// SEND is 10 packets, PSNs 100–109, AckReq on packets 3 and 7 (every 4th)
// and 9 (the last). Packets 0–5 arrive and 6–9 are lost: the responder
// ACKs 103 (packet 3's AckReq; packet 5 has none), so packets 0–3 are
// acknowledged and the timeout resends 104–109, six packets, where resending
// the whole message took ten. 104 and 105 are duplicates: each draws an ACK
// of 105, the last PSN received, and is not placed again (rxe
// duplicate_request, C9-105). 106–109 are new: ACKs of 107 and 109, and
// the message completes with every byte placed once.
func TestTimeoutResumesAfterMidMessageAck(t *testing.T) {
	const mtu, n, first = 256, 10, 100
	for _, op := range []WROpcode{WRRDMAWrite, WRSend} {
		t.Run(op.String(), func(t *testing.T) {
			cfg := Defaults()
			cfg.AckReqEvery = 4
			var kt KeyTable
			mr := kt.Register(1, 0x10000, 0x10000, AccessRemoteWrite|AccessLocalWrite)
			env := &testEnv{kt: &kt, pd: 1, rq: []RecvWQE{{Addr: 0x10000, Length: n * mtu, LKey: mr.LKey}}}
			src := make([]byte, n*mtu)
			for i := range src {
				src[i] = byte(i*7 + 1)
			}
			dst := NewHostMemory()
			req := NewRequester(&cfg, mtu, first)
			resp := NewResponder(&cfg, mtu, first)
			req.Enqueue(SendWQE{Opcode: op, Length: n * mtu, RemoteAddr: 0x10000, RKey: mr.RKey}, 0)
			var acks []uint32
			var recvLen uint32
			placed := 0
			// deliver hands one request packet to the responder and the
			// ACK it draws, if any, back to the requester.
			deliver := func(p *ib.Packet, tx TxPacket) AckResult {
				p.Payload = src[tx.Index*mtu : tx.Index*mtu+p.PayloadLen]
				a := resp.Receive(p, env)
				if a.Write {
					dst.Write(a.WriteAddr, p.Payload)
					placed += p.PayloadLen
				}
				if a.RecvDone {
					require.Equal(t, WCSuccess, a.RecvStatus)
					recvLen = a.RecvLen
				}
				if !a.Ack {
					return AckResult{}
				}
				acks = append(acks, a.AckPSN)
				return req.OnAck(a.AckPSN, a.AckSyn)
			}
			var progress []bool
			for k := 0; req.HasWork(); k++ {
				var p ib.Packet
				tx := req.Next(&p)
				if k < 6 {
					res := deliver(&p, tx)
					if len(acks) > len(progress) {
						progress = append(progress, res.Progress)
						assert.Empty(t, res.Completions)
					}
				}
			}
			require.Equal(t, []uint32{first + 3}, acks, "packet 3's AckReq; packet 5 has none")
			assert.Equal(t, []bool{true}, progress, "an ACK inside the oldest message is progress: the timer restarts")

			res := req.OnTimeout()
			require.True(t, res.Rewound)
			var resent []uint32
			var ops []ib.Opcode
			var done []Completion
			for req.HasWork() {
				var p ib.Packet
				tx := req.Next(&p)
				resent = append(resent, p.PSN)
				ops = append(ops, p.Opcode)
				assert.Zero(t, p.RETH, "a resumed packet is a MIDDLE or LAST: no RETH")
				done = append(done, deliver(&p, tx).Completions...)
			}
			assert.Equal(t, []uint32{104, 105, 106, 107, 108, 109}, resent)
			middle, last := RequestOpcode(op, 4, n), RequestOpcode(op, 9, n)
			assert.Equal(t, []ib.Opcode{middle, middle, middle, middle, middle, last}, ops)
			assert.Equal(t, []uint32{103, 105, 105, 107, 109}, acks)
			require.Len(t, done, 1)
			assert.Equal(t, WCSuccess, done[0].Status)
			assert.Equal(t, n*mtu, placed, "every byte placed once")
			got := make([]byte, n*mtu)
			dst.Read(0x10000, got)
			assert.Equal(t, src, got)
			if op == WRSend {
				assert.Equal(t, uint32(n*mtu), recvLen, "the receive completes with the whole message")
			}
			assert.Equal(t, int64(1), req.Retries)
		})
	}
}

// TestMidMessageAckRestoresRetryCnt: an ACK that acknowledges packets of
// the oldest message, though not all of them, is progress as rxe counts it
// (check_ack resets the retry counters on every ACK at or past comp.psn):
// retry_cnt is restored and the retry sequence under way ends. An ACK that
// acknowledges nothing new is not.
func TestMidMessageAckRestoresRetryCnt(t *testing.T) {
	cfg := Defaults()
	cfg.RetryCnt, cfg.AckReqEvery = 2, 4
	req := NewRequester(&cfg, 256, 0)
	req.Enqueue(SendWQE{Opcode: WRRDMAWrite, Length: 10 * 256}, 0)
	require.Len(t, drainPSNs(req), 10)
	res := req.OnTimeout()
	require.True(t, res.Rewound)
	assert.Equal(t, 1, req.retryLeft)
	require.Len(t, drainPSNs(req), 10, "nothing acknowledged yet: all ten again")

	res = req.OnAck(3, SynACKNoLimit) // packets 0–3
	assert.True(t, res.Progress)
	assert.Empty(t, res.Completions)
	assert.Equal(t, 2, req.retryLeft, "progress restores retry_cnt")
	assert.False(t, req.startedRetry, "and ends the retry sequence")

	res = req.OnAck(3, SynACKNoLimit) // the same ACK again
	assert.False(t, res.Progress, "nothing new acknowledged")

	res = req.OnTimeout()
	require.True(t, res.Rewound)
	assert.Equal(t, []uint32{4, 5, 6, 7, 8, 9}, drainPSNs(req))
}

// TestTimeoutResumesRead: a READ retried after some of its responses came
// asks only for the rest, as rxe's req_retry does for the first WQE (the
// request's PSN is comp.psn, its VA is advanced by the packets received,
// its length is what is left). A 2560-byte READ at a 256-byte MTU uses
// PSNs 100–109. Responses 100–103 arrive in order (1024 bytes), 104 is
// lost, and 105–109 are out of order and dropped. The timeout resends the
// READ at PSN 104 for the 1536 bytes from VA + 1024; the responder, whose
// resource holds the READ, replays 104–109 and the READ completes with
// every byte placed at its offset.
func TestTimeoutResumesRead(t *testing.T) {
	const mtu, n, first = 256, 10, 100
	const va, local = 0x20000, 0x50000
	cfg := Defaults()
	var kt KeyTable
	mr := kt.Register(1, va, 0x1000, AccessRemoteRead)
	env := &testEnv{kt: &kt, pd: 1}
	remote := make([]byte, n*mtu)
	for i := range remote {
		remote[i] = byte(i*3 + 11)
	}
	dst := NewHostMemory()
	req := NewRequester(&cfg, mtu, first)
	resp := NewResponder(&cfg, mtu, first)
	req.Enqueue(SendWQE{Opcode: WRRDMARead, Length: n * mtu, LocalAddr: local, RemoteAddr: va, RKey: mr.RKey}, 0)
	// answer hands a READ request to the responder and its responses,
	// those lose does not take, to the requester.
	answer := func(p *ib.Packet, lose func(psn uint32) bool) []Completion {
		a := resp.Receive(p, env)
		require.True(t, a.Read)
		sendReply(resp, a)
		var done []Completion
		np := PacketCount(a.ReadLen, mtu)
		for k := 0; k < np; k++ {
			psn := psnAdd(a.ReadPSN, k)
			lo := int(a.ReadVA-va) + k*mtu
			rp := &ib.Packet{Opcode: ReadResponseOpcode(k, np), PSN: psn, PayloadLen: min(mtu, int(a.ReadLen)-k*mtu)}
			rp.Payload = remote[lo : lo+rp.PayloadLen]
			if lose(psn) {
				continue
			}
			pl, ok, res := req.OnReadResponse(rp)
			if ok {
				dst.Write(pl.Addr, rp.Payload)
			}
			done = append(done, res.Completions...)
		}
		return done
	}
	var p ib.Packet
	req.Next(&p)
	require.False(t, req.HasWork())
	assert.Empty(t, answer(&p, func(psn uint32) bool { return psn == 104 }))

	res := req.OnTimeout()
	require.True(t, res.Rewound)
	var again ib.Packet
	req.Next(&again)
	assert.Equal(t, uint32(104), again.PSN, "the first PSN not answered")
	assert.Equal(t, ib.RETH{VA: va + 4*mtu, RKey: mr.RKey, Length: 6 * mtu}, again.RETH)
	done := answer(&again, func(uint32) bool { return false })
	require.Len(t, done, 1)
	assert.Equal(t, WCSuccess, done[0].Status)
	got := make([]byte, n*mtu)
	dst.Read(local, got)
	assert.Equal(t, remote, got)
}
