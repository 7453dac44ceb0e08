package hca

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// readReq is an RDMA READ request packet.
func readReq(psn uint32, va uint64, rkey, n uint32) *ib.Packet {
	return &ib.Packet{Opcode: ib.RDMAReadRequest, PSN: psn, AckReq: true, RETH: ib.RETH{VA: va, RKey: rkey, Length: n}}
}

// TestDuplicateReadNeedsItsResource: a READ whose PSN is behind the
// responder's expected PSN is answered only from the responder resource of
// the READ first executed at that PSN, as rxe_resp.c duplicate_request does:
// the duplicate's R_Key must equal the original's and its VA range must lie
// within the original's; anything else is a class D error, dropped without
// an ACK, a key check or a byte read. A READ that matches is replayed from
// the duplicate's PSN, after the region is checked again.
func TestDuplicateReadNeedsItsResource(t *testing.T) {
	cfg := Defaults()
	const mtu = 1024
	var kt KeyTable
	mr := kt.Register(1, 0x10000, 0x4000, AccessRemoteRead|AccessRemoteWrite)
	other := kt.Register(1, 0x40000, 0x1000, AccessRemoteRead)
	const secret = 0x80000 // registered by nobody
	const va, n = 0x10100, 3000
	// The original READ at PSN 100 uses ⌈3000 / 1024⌉ = 3 PSNs (100–102);
	// a one-packet WRITE follows at 103, so the responder expects 104.
	setup := func(t *testing.T) (*Responder, *testEnv) {
		resp := NewResponder(&cfg, mtu, 100)
		env := &testEnv{kt: &kt, pd: 1}
		a := resp.Receive(readReq(100, va, mr.RKey, n), env)
		require.True(t, a.Read)
		sendReply(resp, a) // the device has sent the responses
		a = resp.Receive(&ib.Packet{Opcode: ib.RDMAWriteOnly, PSN: 103, AckReq: true, PayloadLen: 8,
			RETH: ib.RETH{VA: 0x10000, RKey: mr.RKey, Length: 8}}, env)
		require.True(t, a.Write)
		require.Equal(t, uint32(104), resp.ExpectedPSN())
		return resp, env
	}
	tests := []struct {
		name   string
		pkt    *ib.Packet
		replay bool
	}{
		{"the same request", readReq(100, va, mr.RKey, n), true},
		// The requester resumes a READ from a later PSN with the rest of it.
		{"its tail from a later PSN", readReq(101, va+mtu, mr.RKey, n-mtu), true},
		{"an unregistered buffer with a bad R_Key", readReq(100, secret, 0xdead0001, 16), false},
		{"another region's valid R_Key", readReq(100, 0x40000, other.RKey, 16), false},
		// Inside the region the R_Key grants, but not inside the original READ.
		{"past the original's end", readReq(100, va+n, mr.RKey, 16), false},
		{"before the original's start", readReq(100, va-1, mr.RKey, 16), false},
		{"longer than the original", readReq(100, va, mr.RKey, n+1), false},
		{"at a WRITE's PSN", readReq(103, va, mr.RKey, 16), false},
		{"older than every resource", readReq(99, va, mr.RKey, 16), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, env := setup(t)
			a := resp.Receive(tc.pkt, env)
			assert.Equal(t, QPRTR, resp.State)
			assert.Equal(t, uint32(104), resp.ExpectedPSN())
			assert.False(t, a.Ack, "no ACK or NAK either way")
			if !tc.replay {
				assert.Equal(t, RespAction{Drop: true}, a, "dropped: no key check, no read")
				return
			}
			assert.True(t, a.Read)
			assert.Equal(t, tc.pkt.RETH.VA, a.ReadVA)
			assert.Equal(t, tc.pkt.RETH.Length, a.ReadLen)
			assert.Equal(t, tc.pkt.PSN, a.ReadPSN, "responses restart at the duplicate's PSN")
			assert.True(t, a.KeyChecked, "the region is checked again")
			assert.Equal(t, KeyOK, a.KeyResult)
			// The original reply has gone whole, so the replay reads every
			// response it sends again: from the duplicate's PSN (index
			// PSN − 100 in the READ) to the READ's end, index 3.
			assert.False(t, a.DropReply, "no reply was under way")
			assert.Equal(t, int(tc.pkt.PSN-100), a.FetchLo)
			assert.Equal(t, 3, a.FetchHi)
		})
	}

	t.Run("region deregistered since", func(t *testing.T) {
		// The replay re-checks the region (rxe read_reply: rxe_recheck_mr
		// fails, RESPST_ERR_RKEY_VIOLATION): NAK remote access error, and the
		// class C error moves the QP to ERR.
		resp, env := setup(t)
		var gone KeyTable
		gone.Register(1, 0x10000, 0x4000, AccessRemoteRead|AccessRemoteWrite)
		gone.Deregister(mr.RKey)
		env.kt = &gone
		a := resp.Receive(readReq(100, va, mr.RKey, n), env)
		assert.False(t, a.Read)
		assert.True(t, a.Ack)
		assert.Equal(t, uint8(SynNAKAccess), a.AckSyn)
		assert.Equal(t, uint32(100), a.AckPSN)
		assert.Equal(t, KeyInvalid, a.KeyResult)
		assert.Equal(t, QPErr, resp.State)
	})

	t.Run("a reply under way is re-pointed, not doubled", func(t *testing.T) {
		// rxe duplicate_request resets the resource's cursor (cur_psn, va,
		// resid) to the duplicate's: one reply per resource, whatever the
		// number of duplicates. Responses already read and not yet sent
		// are kept; only those sent since are read again.
		resp, env := setup(t)
		a := resp.Receive(readReq(100, va, mr.RKey, n), env)
		require.True(t, a.Read)
		var p ib.Packet
		resp.NextReadResponse(a.ReadRes, &p) // PSN 100 leaves
		resp.ReadResponseSent(a.ReadRes, p.PSN)
		require.Equal(t, 1, resp.ReadCursor(a.ReadRes))

		// The requester got PSN 100 and asks for the rest: responses 1
		// and 2 are still held, nothing is read.
		a = resp.Receive(readReq(101, va+mtu, mr.RKey, n-mtu), env)
		assert.True(t, a.Read)
		assert.True(t, a.DropReply, "the reply under way is replaced")
		assert.Equal(t, 1, a.FetchLo)
		assert.Equal(t, 1, a.FetchHi)
		assert.Equal(t, 1, resp.ReadCursor(a.ReadRes))

		// An older duplicate asks again from PSN 100: only response 0,
		// sent already, is read again.
		a = resp.Receive(readReq(100, va, mr.RKey, n), env)
		assert.True(t, a.DropReply)
		assert.Equal(t, 0, a.FetchLo)
		assert.Equal(t, 1, a.FetchHi)
		// The reply runs FIRST, MIDDLE, LAST from PSN 100 with the
		// original's payload lengths: 1024, 1024, 3000 − 2048 = 952.
		var ops []ib.Opcode
		var lens []int
		for resp.Replying(a.ReadRes) {
			resp.NextReadResponse(a.ReadRes, &p)
			ops, lens = append(ops, p.Opcode), append(lens, p.PayloadLen)
		}
		assert.Equal(t, []ib.Opcode{ib.RDMAReadResponseFirst, ib.RDMAReadResponseMiddle, ib.RDMAReadResponseLast}, ops)
		assert.Equal(t, []int{mtu, mtu, n - 2*mtu}, lens)

		// A replay from inside the READ continues its sequence: MIDDLE,
		// LAST from PSN 101 (rxe read_reply in its replay state).
		a = resp.Receive(readReq(101, va+mtu, mr.RKey, n-mtu), env)
		require.True(t, a.Read)
		ops, lens = ops[:0], lens[:0]
		for resp.Replying(a.ReadRes) {
			resp.NextReadResponse(a.ReadRes, &p)
			ops, lens = append(ops, p.Opcode), append(lens, p.PayloadLen)
		}
		assert.Equal(t, []ib.Opcode{ib.RDMAReadResponseMiddle, ib.RDMAReadResponseLast}, ops)
		assert.Equal(t, []int{mtu, n - 2*mtu}, lens)
	})
}

// sendReply takes every response of a's READ reply off the responder's
// cursor, as the device does when the wire takes them.
func sendReply(r *Responder, a RespAction) {
	var p ib.Packet
	for r.Replying(a.ReadRes) {
		r.NextReadResponse(a.ReadRes, &p)
		r.ReadResponseSent(a.ReadRes, p.PSN)
	}
}

// TestResponderResourcesKeepTheLastMaxRdAtomic: READs and atomics share
// one ring of max_rd_atomic resources (rxe resp.resources, recycled
// oldest first), so with max_rd_atomic 2 the third request evicts the
// first, whose duplicate is then dropped; the two kept are replayed.
func TestResponderResourcesKeepTheLastMaxRdAtomic(t *testing.T) {
	cfg := Defaults()
	cfg.MaxRdAtomic = 2
	var kt KeyTable
	mr := kt.Register(1, 0x1000, 0x1000, AccessRemoteRead|AccessRemoteAtomic)
	resp := NewResponder(&cfg, 1024, 0)
	env := &testEnv{kt: &kt, pd: 1}
	fetchAdd := &ib.Packet{Opcode: ib.FetchAdd, PSN: 1, AckReq: true, Atomic: ib.AtomicETH{VA: 0x1008, RKey: mr.RKey, SwapAdd: 1}}
	// PSN 0: READ, 1: FETCH_ADD (original value 41), 2: READ; one PSN each.
	// The device finishes each before the next arrives.
	a := resp.Receive(readReq(0, 0x1000, mr.RKey, 8), env)
	require.True(t, a.Read)
	sendReply(resp, a)
	require.True(t, resp.Receive(fetchAdd, env).Atomic)
	resp.SaveAtomic(1, 41)
	a = resp.Receive(readReq(2, 0x1010, mr.RKey, 8), env)
	require.True(t, a.Read)
	sendReply(resp, a)

	assert.Equal(t, RespAction{Drop: true}, resp.Receive(readReq(0, 0x1000, mr.RKey, 8), env), "evicted")
	a = resp.Receive(fetchAdd, env)
	assert.True(t, a.AtomicReplay)
	orig, ok := resp.LastAtomic(1)
	assert.True(t, ok)
	assert.Equal(t, uint64(41), orig)
	assert.True(t, resp.Receive(readReq(2, 0x1010, mr.RKey, 8), env).Read)
	// A READ at the atomic's PSN matches no READ resource.
	assert.Equal(t, RespAction{Drop: true}, resp.Receive(readReq(1, 0x1008, mr.RKey, 8), env))
}

// TestDuplicateReadLeaksNothingOnDevice: the attack the resource check
// stops, end to end. After one legitimate 16-byte READ at PSN 0x10, a
// crafted READ request reuses that PSN (now a duplicate) with a bad R_Key
// and the VA of an unregistered buffer, then with the good R_Key and the
// same VA. Neither gets a response, a NAK, or moves B's QP to ERR. An
// exact duplicate of the legitimate READ, sent last, is answered: the
// injection path works, so the silence is the responder's doing.
func TestDuplicateReadLeaksNothingOnDevice(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	secret := p.b.Malloc(4096)
	p.b.Mem.Write(secret, []byte("TOP-SECRET-BYTES"))
	p.b.Mem.Write(p.bufB, []byte("public-16-bytes!"))
	tap := tapPort(p.a)
	var responses [][]byte
	tap.drop = func(pkt *ib.Packet) bool {
		if pkt.Opcode == ib.RDMAReadResponseOnly {
			responses = append(responses, append([]byte(nil), pkt.Payload[:pkt.PayloadLen]...))
		}
		return false
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA,
		Length: 16, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	const firstPSN = 0x10 // newPair connects A's send queue at PSN 0x10
	crafted := []ib.RETH{
		{VA: secret, RKey: 0xdead0001, Length: 16},
		{VA: secret, RKey: p.mrB.RKey, Length: 16},
		{VA: p.bufB, RKey: p.mrB.RKey, Length: 16}, // the legitimate READ again
	}
	for i, reth := range crafted {
		// 20 µs apart: long after the legitimate READ completed (~2 µs)
		// and each other's answers.
		p.s.Schedule(ib.PS(20*(i+1))*ib.Microsecond, &poster{fn: func() {
			p.inject(t, &ib.Packet{Opcode: ib.RDMAReadRequest, PSN: firstPSN, AckReq: true, RETH: reth})
		}}, 1)
	}
	p.s.StopAt(100 * ib.Microsecond)
	require.NoError(t, p.s.Run())
	want := []byte("public-16-bytes!")
	assert.Equal(t, [][]byte{want, want}, responses, "the legitimate READ and its exact duplicate only")
	assert.Equal(t, int64(0), p.b.Counters.Naks)
	assert.Equal(t, QPRTS, p.qb.State)
}

// TestWriteImmReportsWriteLength: the receive completion of an RDMA WRITE
// with immediate reports the WRITE's length, from the RETH of its FIRST or
// ONLY packet (rxe_resp.c do_complete: byte_len = qp->resp.length, which
// check_rkey set from reth_len; mlx5: the CQE's byte_cnt). The LAST packet
// carries no RETH, so the length must be kept from the FIRST.
func TestWriteImmReportsWriteLength(t *testing.T) {
	const mtu = 1024
	cfg := Defaults()
	// ⌈n / 1024⌉ packets: 0 and 100 are one ONLY_WITH_IMM packet, 1024 too;
	// 1025 is FIRST + LAST_WITH_IMM, 5000 FIRST + 3 MIDDLE + LAST_WITH_IMM.
	for _, n := range []uint32{0, 100, mtu, mtu + 1, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var kt KeyTable
			mr := kt.Register(1, 0, 1<<16, AccessRemoteWrite|AccessLocalWrite)
			env := &testEnv{kt: &kt, pd: 1, rq: []RecvWQE{{Index: 7, Addr: 0x8000, Length: 64, LKey: mr.LKey}}}
			req := NewRequester(&cfg, mtu, 0)
			resp := NewResponder(&cfg, mtu, 0)
			req.Enqueue(SendWQE{Opcode: WRRDMAWriteImm, Length: n, RemoteAddr: 0x100, RKey: mr.RKey, Imm: 0xBEEF}, 0)
			var done []RespAction
			for req.HasWork() {
				var p ib.Packet
				req.Next(&p)
				if a := resp.Receive(&p, env); a.RecvDone {
					done = append(done, a)
				}
			}
			require.Len(t, done, 1)
			assert.Equal(t, WCSuccess, done[0].RecvStatus)
			assert.Equal(t, uint8(CQERespWrImm), done[0].RecvOpcode)
			assert.Equal(t, n, done[0].RecvLen)
			assert.Equal(t, uint32(0xBEEF), done[0].Imm)
		})
	}
}

// TestDuplicateWriteOrSendIsAlwaysAcked: a duplicate SEND or WRITE packet
// draws an ACK of the last PSN received whether or not it asks for one, as
// rxe_resp.c duplicate_request does ("Ack again", C9-105; the AckReq test
// was dropped there by "RDMA/rxe: Fix missing acks from responder"). After a
// timeout the requester resends from its first unacknowledged PSN, and
// that PSN often lies before the responder's expected PSN in a packet with
// no AckReq: the ACK tells the requester how far the responder got. The
// duplicate itself is not placed again.
func TestDuplicateWriteOrSendIsAlwaysAcked(t *testing.T) {
	cfg := Defaults()
	var kt KeyTable
	mr := kt.Register(1, 0x1000, 0x1000, AccessRemoteWrite|AccessLocalWrite)
	for _, send := range []bool{false, true} {
		t.Run(fmt.Sprint("send=", send), func(t *testing.T) {
			resp := NewResponder(&cfg, 256, 50)
			env := &testEnv{kt: &kt, pd: 1, rq: []RecvWQE{{Addr: 0x1000, Length: 0x1000, LKey: mr.LKey}}}
			ops := []ib.Opcode{ib.RDMAWriteFirst, ib.RDMAWriteMiddle, ib.RDMAWriteMiddle}
			if send {
				ops = []ib.Opcode{ib.SendFirst, ib.SendMiddle, ib.SendMiddle}
			}
			pkt := func(i int) *ib.Packet {
				p := &ib.Packet{Opcode: ops[i], PSN: uint32(50 + i), PayloadLen: 256}
				if i == 0 && !send {
					p.RETH = ib.RETH{VA: 0x1000, RKey: mr.RKey, Length: 4 * 256}
				}
				return p
			}
			for i := range ops {
				a := resp.Receive(pkt(i), env)
				require.True(t, a.Write)
				require.False(t, a.Ack, "no AckReq, no ACK")
			}
			for _, i := range []int{0, 1} {
				a := resp.Receive(pkt(i), env)
				assert.True(t, a.Drop)
				assert.False(t, a.Write, "a duplicate is not placed again")
				assert.False(t, a.RecvDone)
				require.True(t, a.Ack, "duplicate PSN %d", 50+i)
				assert.Equal(t, uint8(SynACKNoLimit), a.AckSyn)
				assert.Equal(t, uint32(52), a.AckPSN, "the last PSN received")
			}
			assert.Equal(t, uint32(53), resp.ExpectedPSN())
		})
	}
}

// TestNewReadBeyondTheResources: a new READ takes the oldest resource.
// With max_rd_atomic 1 a requester keeping within it sends a second READ
// only after the first completed, so after every response of the first
// went to the wire: a replay of the first still queued is useless and is
// dropped. A second READ while the first still has responses never sent
// means more than max_rd_atomic outstanding: NAK invalid request, class C
// (ib-facts.md §5).
func TestNewReadBeyondTheResources(t *testing.T) {
	cfg := Defaults()
	cfg.MaxRdAtomic = 1
	const mtu = 1024
	var kt KeyTable
	mr := kt.Register(1, 0x1000, 0x4000, AccessRemoteRead)
	env := &testEnv{kt: &kt, pd: 1}
	// READ at PSN 0 of 2048 bytes: two responses, PSNs 0 and 1; the next
	// READ's PSN is 2.
	t.Run("replay queued, first READ sent whole", func(t *testing.T) {
		resp := NewResponder(&cfg, mtu, 0)
		a := resp.Receive(readReq(0, 0x1000, mr.RKey, 2*mtu), env)
		require.True(t, a.Read)
		sendReply(resp, a)
		a = resp.Receive(readReq(1, 0x1000+mtu, mr.RKey, mtu), env) // duplicate: replay PSN 1
		require.True(t, a.Read)
		a = resp.Receive(readReq(2, 0x2000, mr.RKey, 8), env)
		assert.True(t, a.Read)
		assert.True(t, a.DropReply, "the replay in the recycled resource is dropped")
		assert.Equal(t, QPRTR, resp.State)
	})
	t.Run("first READ's last response never sent", func(t *testing.T) {
		resp := NewResponder(&cfg, mtu, 0)
		a := resp.Receive(readReq(0, 0x1000, mr.RKey, 2*mtu), env)
		require.True(t, a.Read)
		var p ib.Packet
		resp.NextReadResponse(a.ReadRes, &p)
		resp.ReadResponseSent(a.ReadRes, p.PSN) // PSN 0 only
		a = resp.Receive(readReq(2, 0x2000, mr.RKey, 8), env)
		assert.False(t, a.Read)
		assert.True(t, a.Ack)
		assert.Equal(t, uint8(SynNAKInvReq), a.AckSyn)
		assert.Equal(t, uint32(2), a.AckPSN)
		assert.Equal(t, QPErr, resp.State)
	})
}

// TestResponderTranslationRanges: what each request packet translates
// (RespAction.Xlate). MTU 1024. A SEND of 2,500 bytes (FIRST 1024, MIDDLE
// 1024, LAST 452) into a receive of 0x3000 bytes at 0x10_0000: every packet
// translates the bytes it writes, at 0x10_0000, 0x10_0400 and 0x10_0800,
// while the L_Key check, at the FIRST only, covers the whole 0x3000. A
// WRITE of 2,048 bytes to 0x10_4000 (FIRST, LAST): the FIRST translates the
// RETH's whole range, the LAST nothing of its own (its DMA waits for the
// FIRST's translation).
func TestResponderTranslationRanges(t *testing.T) {
	cfg := Defaults()
	var kt KeyTable
	mr := kt.Register(1, 0x10_0000, 0x10_000, AccessLocalWrite|AccessRemoteWrite)
	env := &testEnv{kt: &kt, pd: 1, rq: []RecvWQE{{Addr: 0x10_0000, Length: 0x3000, LKey: mr.LKey}}}
	resp := NewResponder(&cfg, 1024, 0)
	type want struct {
		keyChecked bool
		keyLen     uint64
		xlate      bool
		addr, n    uint64
	}
	steps := []struct {
		pkt  *ib.Packet
		want want
	}{
		{&ib.Packet{Opcode: ib.SendFirst, PSN: 0, PayloadLen: 1024}, want{true, 0x3000, true, 0x10_0000, 1024}},
		{&ib.Packet{Opcode: ib.SendMiddle, PSN: 1, PayloadLen: 1024}, want{false, 0, true, 0x10_0400, 1024}},
		{&ib.Packet{Opcode: ib.SendLast, PSN: 2, PayloadLen: 452}, want{false, 0, true, 0x10_0800, 452}},
		{&ib.Packet{Opcode: ib.RDMAWriteFirst, PSN: 3, PayloadLen: 1024,
			RETH: ib.RETH{VA: 0x10_4000, RKey: mr.RKey, Length: 2048}}, want{true, 2048, true, 0x10_4000, 2048}},
		{&ib.Packet{Opcode: ib.RDMAWriteLast, PSN: 4, PayloadLen: 1024}, want{false, 0, false, 0, 0}},
	}
	for _, s := range steps {
		a := resp.Receive(s.pkt, env)
		require.False(t, a.Drop, "%v", s.pkt.Opcode)
		got := want{a.KeyChecked, a.KeyLen, a.Xlate, a.XlateAddr, a.XlateLen}
		assert.Equal(t, s.want, got, "%v", s.pkt.Opcode)
	}
}

// TestWriteLengthRules: an RDMA WRITE's packets must carry exactly the path
// MTU (FIRST, MIDDLE), 1..MTU bytes (LAST) or 0..MTU (ONLY), and together
// exactly the RETH's DMA length; a packet that breaks either gets NAK
// invalid request at its PSN and the QP goes to ERR (a length error, class
// C: rxe check_length and check_rkey, RESPST_ERR_LENGTH; ib-facts.md §5),
// nothing of it written. Each case gives its packets' payload bytes and the
// FIRST's DMA length; bad is the packet that breaks a rule (-1: none), so
// the bytes written are the packets' before it, and the packets after it
// are dropped in ERR.
func TestWriteLengthRules(t *testing.T) {
	cfg := Defaults()
	type tc struct {
		name string
		mtu  int
		dlen uint32
		pay  []int
		bad  int
	}
	for _, c := range []tc{
		// ⌈600 / 512⌉ = 2 packets: 512 + 88 = 600.
		{"600 bytes at MTU 512: FIRST 512, LAST 88", 512, 600, []int{512, 88}, -1},
		{"an ONLY of the MTU", 512, 512, []int{512}, -1},
		{"an ONLY of no bytes, DMA length 0", 512, 0, []int{0}, -1},
		// The same 600 bytes cut at MTU 256 (256 + 256 + 88) are whole
		// at MTU 256 and wrong at 512: the FIRST's 256 is not the MTU.
		{"600 bytes cut at 256, MTU 256", 256, 600, []int{256, 256, 88}, -1},
		{"600 bytes cut at 256, MTU 512", 512, 600, []int{256, 256, 88}, 0},
		{"an ONLY of MTU + 1", 512, 513, []int{513}, 0},
		{"a MIDDLE short of the MTU", 512, 1100, []int{512, 256, 332}, 1},
		{"a LAST of no bytes", 512, 512, []int{512, 0}, 1},
		// 512 + 50 = 562 < 600: the LAST ends the WRITE short.
		{"a LAST short of the DMA length", 512, 600, []int{512, 50}, 1},
		// 512 + 512 = 1024 > 700: the MIDDLE passes the DMA length.
		{"a MIDDLE past the DMA length", 512, 700, []int{512, 512, 100}, 1},
		{"an ONLY short of its DMA length", 512, 200, []int{100}, 0},
		{"an ONLY past its DMA length", 512, 50, []int{100}, 0},
		// 512 + 512 = 1024 < 1536: a LAST of a whole MTU that ends the
		// WRITE short (rxe's per-packet test would take it).
		{"a LAST of the MTU short of the DMA length", 512, 1536, []int{512, 512}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var kt KeyTable
			mr := kt.Register(1, 0x10000, 0x4000, AccessRemoteWrite)
			env := &testEnv{kt: &kt, pd: 1}
			resp := NewResponder(&cfg, c.mtu, 100)
			written := 0
			for i, n := range c.pay {
				p := &ib.Packet{PSN: uint32(100 + i), AckReq: i == len(c.pay)-1, PayloadLen: n}
				switch {
				case len(c.pay) == 1:
					p.Opcode = ib.RDMAWriteOnly
				case i == 0:
					p.Opcode = ib.RDMAWriteFirst
				case i == len(c.pay)-1:
					p.Opcode = ib.RDMAWriteLast
				default:
					p.Opcode = ib.RDMAWriteMiddle
				}
				if i == 0 {
					p.RETH = ib.RETH{VA: mr.Addr, RKey: mr.RKey, Length: c.dlen}
				}
				a := resp.Receive(p, env)
				switch {
				case c.bad >= 0 && i > c.bad:
					assert.True(t, a.Drop && !a.Ack && !a.Write, "packet %d after the length error: dropped in ERR", i)
				case i == c.bad:
					require.True(t, a.Ack, "packet %d", i)
					assert.Equal(t, uint8(SynNAKInvReq), a.AckSyn, "packet %d: NAK invalid request", i)
					assert.Equal(t, p.PSN, a.AckPSN)
					assert.False(t, a.Write, "nothing of it written")
					assert.Equal(t, QPErr, resp.State)
				default:
					assert.False(t, a.Ack && a.AckSyn != SynACKNoLimit, "packet %d: no NAK", i)
					assert.Equal(t, n > 0, a.Write, "packet %d", i)
					if a.Write {
						assert.Equal(t, mr.Addr+uint64(written), a.WriteAddr, "packet %d at the WRITE's next byte", i)
					}
					written += n
				}
			}
			if c.bad < 0 {
				assert.Equal(t, int(c.dlen), written, "the DMA length, all of it")
				assert.Equal(t, uint32(1), resp.MSN(), "one message done")
				assert.Equal(t, QPRTR, resp.State)
			}
		})
	}
	// A FIRST of the wrong length with a stale R_Key as well: the length
	// is checked first (rxe check_length before check_rkey): invalid
	// request, no key check.
	var kt KeyTable
	mr := kt.Register(1, 0x10000, 0x4000, AccessRemoteWrite)
	resp := NewResponder(&cfg, 512, 7)
	a := resp.Receive(&ib.Packet{Opcode: ib.RDMAWriteFirst, PSN: 7, PayloadLen: 256,
		RETH: ib.RETH{VA: mr.Addr, RKey: mr.RKey ^ 0x80, Length: 600}}, &testEnv{kt: &kt, pd: 1})
	require.True(t, a.Ack)
	assert.Equal(t, uint8(SynNAKInvReq), a.AckSyn)
	assert.False(t, a.KeyChecked)
}

// TestSendLengthRules: the packet lengths of a SEND (with immediate or
// not) and of an RDMA WRITE with immediate keep the rules
// TestWriteLengthRules checks for a WRITE: a FIRST or MIDDLE carries
// exactly the path MTU, a LAST 1..MTU bytes, an ONLY 0..MTU, and a WRITE's
// packets exactly its RETH's DMA length (rxe check_length, check_rkey;
// RESPST_ERR_LENGTH). A packet that breaks one gets NAK invalid request at
// its PSN and the QP goes to ERR (class C), nothing of it written, and the
// receive WQE the message holds completes with REM_INV_REQ_ERR, byte_len 0
// and no immediate (rxe_responder: do_class_ac_error(AETH_NAK_INVALID_REQ,
// IB_WC_REM_INV_REQ_ERR), then do_complete, which fills byte_len and the
// immediate only on success). A SEND's WQE is taken at its FIRST or ONLY,
// so a MIDDLE's or LAST's error completes it too; a WRITE with immediate
// takes one only at its LAST or ONLY, so its FIRST's or MIDDLE's error
// completes none and leaves the WQE posted. The WQE is taken before the
// length is checked (rxe check_resource before check_length): with none
// posted a bad FIRST gets an RNR NAK. A SEND longer than its buffer, its
// packets the right lengths, is still LOC_LEN_ERR (the buffer check comes
// after the length rules, so a packet that breaks both is
// REM_INV_REQ_ERR).
func TestSendLengthRules(t *testing.T) {
	cfg := Defaults()
	const (
		mtu   = 512
		immDt = 0xC0FFEE
		index = 7 // the receive WQE's index
	)
	type tc struct {
		name  string
		kind  string // "send", "send imm" or "write imm"
		buf   uint32 // the receive buffer's length
		dlen  uint32 // a WRITE's RETH DMA length
		pay   []int
		bad   int      // the packet that breaks a rule (-1: none)
		st    WCStatus // the completion's status at bad
		noWQE bool     // no receive WQE posted
	}
	for _, c := range []tc{
		// ⌈600 / 512⌉ = 2 packets: 512 + 88 = 600.
		{"a SEND of 600: FIRST 512, LAST 88", "send", 1000, 0, []int{512, 88}, -1, 0, false},
		{"a SEND ONLY of the MTU", "send", 1000, 0, []int{512}, -1, 0, false},
		{"an empty SEND ONLY with immediate", "send imm", 1000, 0, []int{0}, -1, 0, false},
		// A SEND has no DMA length: a LAST of a whole MTU ends it, 1024 bytes.
		{"a SEND ending in a LAST of the MTU", "send", 1100, 0, []int{512, 512}, -1, 0, false},
		{"a SEND of 600 cut at 256", "send", 1000, 0, []int{256, 256, 88}, 0, WCRemInvReqErr, false},
		{"a SEND ONLY of MTU + 1", "send", 1000, 0, []int{513}, 0, WCRemInvReqErr, false},
		{"a SEND ONLY with immediate of MTU + 1", "send imm", 1000, 0, []int{513}, 0, WCRemInvReqErr, false},
		{"a SEND MIDDLE short of the MTU", "send", 2000, 0, []int{512, 256, 332}, 1, WCRemInvReqErr, false},
		{"a SEND MIDDLE past the MTU", "send", 2000, 0, []int{512, 513, 75}, 1, WCRemInvReqErr, false},
		{"a SEND LAST of no bytes", "send", 1000, 0, []int{512, 0}, 1, WCRemInvReqErr, false},
		{"a SEND LAST with immediate past the MTU", "send imm", 2000, 0, []int{512, 600}, 1, WCRemInvReqErr, false},
		// 513 > 512 breaks the MTU rule and 513 > 100 the buffer: the
		// length rule is checked first.
		{"a SEND ONLY past the MTU and its buffer", "send", 100, 0, []int{513}, 0, WCRemInvReqErr, false},
		// 512 + 88 = 600 > 590: right lengths, too long for the buffer.
		{"a SEND of 600 into 590 bytes", "send", 590, 0, []int{512, 88}, 1, WCLocLenErr, false},
		// No WQE: RNR NAK, the QP stays RTR; bad -1, and no completion.
		{"a SEND FIRST cut at 256 with no WQE posted", "send", 0, 0, []int{256}, -1, 0, true},
		{"a WRITE with immediate of 600: FIRST 512, LAST 88", "write imm", 64, 600, []int{512, 88}, -1, 0, false},
		{"a WRITE ONLY with immediate of the MTU", "write imm", 64, 512, []int{512}, -1, 0, false},
		{"a WRITE ONLY with immediate of MTU + 1", "write imm", 64, 513, []int{513}, 0, WCRemInvReqErr, false},
		// 512 + 50 = 562 ≠ 600.
		{"a LAST with immediate short of the DMA length", "write imm", 64, 600, []int{512, 50}, 1, WCRemInvReqErr, false},
		// 512 + 588 = 1100, the DMA length, but 588 > 512.
		{"a LAST with immediate past the MTU", "write imm", 64, 1100, []int{512, 588}, 1, WCRemInvReqErr, false},
		// 512 + 512 = 1024 < 1536: a LAST of a whole MTU ending it short.
		{"a LAST with immediate of the MTU short of the DMA length", "write imm", 64, 1536, []int{512, 512}, 1, WCRemInvReqErr, false},
		// The FIRST's error: no WQE taken yet, none completed (st 0).
		{"a WRITE with immediate cut at 256", "write imm", 64, 600, []int{256, 256, 88}, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var kt KeyTable
			mr := kt.Register(1, 0x10000, 0x4000, AccessRemoteWrite|AccessLocalWrite)
			env := &testEnv{kt: &kt, pd: 1}
			if !c.noWQE {
				env.rq = []RecvWQE{{Index: index, Addr: 0x12000, Length: c.buf, LKey: mr.LKey}}
			}
			resp := NewResponder(&cfg, mtu, 100)
			written, last := 0, len(c.pay)-1
			for i, n := range c.pay {
				p := &ib.Packet{PSN: uint32(100 + i), AckReq: i == last, PayloadLen: n, Imm: immDt}
				ops := [4]ib.Opcode{ib.SendOnly, ib.SendFirst, ib.SendMiddle, ib.SendLast}
				switch c.kind {
				case "send imm":
					ops[0], ops[3] = ib.SendOnlyImm, ib.SendLastImm
				case "write imm":
					ops = [4]ib.Opcode{ib.RDMAWriteOnlyImm, ib.RDMAWriteFirst, ib.RDMAWriteMiddle, ib.RDMAWriteLastImm}
					if i == 0 {
						p.RETH = ib.RETH{VA: mr.Addr, RKey: mr.RKey, Length: c.dlen}
					}
				}
				switch {
				case last == 0:
					p.Opcode = ops[0]
				case i == 0:
					p.Opcode = ops[1]
				case i == last:
					p.Opcode = ops[3]
				default:
					p.Opcode = ops[2]
				}
				a := resp.Receive(p, env)
				switch {
				case c.noWQE:
					require.True(t, a.Ack)
					assert.Equal(t, uint8(SynRNRNAK|uint8(cfg.MinRNRTimer)), a.AckSyn, "RNR NAK, before the length")
					assert.False(t, a.RecvDone || a.Write)
					assert.Equal(t, QPRTR, resp.State)
				case c.bad >= 0 && i > c.bad:
					assert.True(t, a.Drop && !a.Ack && !a.Write && !a.RecvDone, "packet %d after the error: dropped in ERR", i)
				case i == c.bad:
					require.True(t, a.Ack, "packet %d", i)
					assert.Equal(t, uint8(SynNAKInvReq), a.AckSyn, "packet %d: NAK invalid request", i)
					assert.Equal(t, p.PSN, a.AckPSN)
					assert.False(t, a.Write, "nothing of it written")
					assert.Equal(t, QPErr, resp.State)
					if c.st == 0 {
						assert.False(t, a.RecvDone, "no WQE held")
						assert.Len(t, env.rq, 1, "the WQE still posted")
						break
					}
					require.True(t, a.RecvDone, "the WQE held completes")
					assert.Equal(t, c.st, a.RecvStatus)
					assert.Equal(t, uint32(index), a.Recv.Index)
					assert.Zero(t, a.RecvLen, "byte_len 0")
					assert.Zero(t, a.Imm, "no immediate")
					wantOp := uint8(CQERespSend)
					if c.kind == "write imm" {
						wantOp = CQERespWrImm
					}
					assert.Equal(t, wantOp, a.RecvOpcode)
				default:
					assert.False(t, a.Ack && a.AckSyn != SynACKNoLimit, "packet %d: no NAK", i)
					assert.Equal(t, n > 0, a.Write, "packet %d", i)
					if c.kind != "write imm" && a.Write {
						assert.Equal(t, uint64(0x12000+written), a.WriteAddr, "packet %d at the buffer's next byte", i)
					}
					written += n
					assert.Equal(t, i == last, a.RecvDone, "packet %d: completes at the LAST or ONLY", i)
				}
				if c.bad < 0 && !c.noWQE && i == last {
					// byte_len: a SEND's bytes placed; a WRITE with
					// immediate's RETH DMA length.
					require.True(t, a.RecvDone)
					assert.Equal(t, WCSuccess, a.RecvStatus)
					want := uint32(written)
					if c.kind == "write imm" {
						want = c.dlen
					}
					assert.Equal(t, want, a.RecvLen)
					assert.Equal(t, c.kind != "send", a.Imm == immDt, "the immediate with an opcode that has one")
				}
			}
			if c.bad < 0 && !c.noWQE {
				assert.Equal(t, uint32(1), resp.MSN(), "one message done")
				assert.Equal(t, QPRTR, resp.State)
			}
		})
	}
}
