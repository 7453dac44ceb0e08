package rtl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- the whole emitted hca_top on its recovery and error paths ----
//
// TestTopCosim's bench and far end (topTB, newTopPlanOf) on a second
// scenario, in a design whose requester retries (RETRY_CNT 3) and has its
// local ACK timer: the wire loses a packet and the far end's sequence
// error NAK brings it back (go-back-N over two messages); the wire loses a
// message's last packet and the requester's timer brings it back; the far
// end refuses an R_Key (NAK remote access error): an error CQE, the QP's
// messages behind it flushed, and the WQEs software posts after the error
// CQE flushed unsent; a CQ of 4 entries that takes 7 CQEs while software
// consumes them (cq_ci), so its ring wraps and its owner bit flips; inline
// WQEs and gather lists, one of them resent from inside; and requests
// arriving: the far end's RDMA WRITEs to two QPs' responders (R_Key
// checked in the MPT, payload written to host memory, ACKs on the link).
// Expected values are the model's (hca.Requester, hca.Responder,
// hca.RequesterCQE, hca.CQESlot) run as newTopPlanOf says; TestTopRetryPlan
// derives what the model does by hand.

const (
	// topRetryCnt is hca.retry_cnt of the run (RETRY_CNT).
	topRetryCnt = 3
	// topRetryExp is hca.retry_timeout of the run: 4.096 us x 2^4.
	topRetryExp = 4
	// topAckTick is ACK_TICK of the run, cycles in 4.096 us: the emitter
	// derives 4096 from the 1 GHz clock; 64 (a 64 ns clock) keeps the
	// timeout (ACK_TICK x 2^4 = 1024 cycles) short, yet longer than any
	// wait for an ACK the far end does send (a few hundred cycles).
	topAckTick = 64
	// topBadKey is the R_Key the far end refuses.
	topBadKey = 0x4466
)

// topRetryDesign is topDesign with a requester that retries and times
// out (its ACK_TICK: topRetryTree).
func topRetryDesign() Design {
	d := topDesign()
	d.RetryCnt, d.RetryTimeout = topRetryCnt, topRetryExp
	d.MaxInline = hca.Defaults().MaxInlineBytes // 236: the inline WQEs' 200 and 64 bytes fit
	return d
}

// topRetryTree is topRetryDesign's emitted tree with hca_top's ACK_TICK
// topAckTick.
func topRetryTree(t *testing.T) []File {
	t.Helper()
	files, err := Emit(topRetryDesign(), testVersion)
	require.NoError(t, err)
	old := "parameter integer ACK_TICK       = 4096,"
	for i, f := range files {
		if f.Name == "hca_top.v" {
			require.Equal(t, 1, strings.Count(f.Text, old), "hca_top.v's %q", old)
			files[i].Text = strings.Replace(f.Text, old, fmt.Sprintf("parameter integer ACK_TICK       = %d,", topAckTick), 1)
		}
	}
	return files
}

// topRetryScenario is the run's QPs (each its own CQ, as topScenario's).
func topRetryScenario() []*topQP {
	w := topWRs(0x7100_0000_0000, 5, 0xB0C0D000)
	bad := w(hca.WRRDMAWrite, 2, 0x900, 100)
	bad.RKey = topBadKey
	// A gather list: its elements in QP q's region at offs, of lens bytes
	// (the L_Keys: newTopPlanOf's region's).
	list := func(op hca.WROpcode, q int, offs []uint64, lens []uint32) hca.SendWR {
		wr := w(op, q, 0, 0)
		wr.LocalAddr = 0
		for i := range offs {
			wr.SGL = append(wr.SGL, hca.SGE{Addr: topPay(q, offs[i]), Length: lens[i]})
			wr.Length += lens[i]
		}
		return wr
	}
	// Inline data: n bytes, a function of their index.
	inline := func(n int, salt byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7) ^ salt
		}
		return b
	}
	return []*topQP{
		// The NAK: a WRITE from a gather list of three elements (100 +
		// 650 + 250 bytes), an inline SEND of 200 bytes and a SEND, the
		// WRITE's second packet lost; a SEND posted once all three are
		// complete.
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000E20, dlid: 0x31, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xE0000, psn: 0x10, mtuCode: 1, cqn: 0},
			msgs: []topMsg{{wr: list(hca.WRRDMAWrite, 0, []uint64{3, 0x1000, 0x2777}, []uint32{100, 650, 250})},
				{wr: w(hca.WRSend, 0, 0, 0), inl: inline(200, 0x5A)}, {wr: w(hca.WRSend, 0, 0x805, 300)}, {wr: w(hca.WRSend, 0, 0x1400, 64)}},
			batch: 3, late: true, lose: []int{1}, in: []topIn{{off: 0x40, n: 600}, {off: 0x1001, n: 17}, {off: 0x1800, n: 300, op: hca.WRSend}},
			recv: []topIn{{off: 0x1800, n: 512}}},
		// The timeout: a SEND and a WRITE, the WRITE's last packet lost;
		// once both are complete, a SEND from a list whose second element
		// runs 0x30 bytes past the QP's 16 KiB region (a local protection
		// error) and a SEND. Its PSNs wrap.
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001F21, dlid: 0x32, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xE0001, psn: 0xFFFFFE, mtuCode: 2, cqn: 1},
			msgs: []topMsg{{wr: w(hca.WRSend, 1, 0x11, 100)}, {wr: w(hca.WRRDMAWrite, 1, 0x7FF, 1500)},
				{wr: list(hca.WRSend, 1, []uint64{0x3F00, 0x3FF0}, []uint32{0x80, 0x40})}, {wr: w(hca.WRSendImm, 1, 0x1234, 10)}},
			batch: 2, late: true, lose: []int{3}},
		// The error: a WRITE, a WRITE to an R_Key the far end refuses, a
		// SEND; a WRITE and a SEND posted once their CQEs are in.
		{it: &reqItem{cfg: true, qix: 2, qpn: 0x002A22, dlid: 0x33, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xE0002, psn: 0x5000, mtuCode: 3, cqn: 2},
			msgs: []topMsg{{wr: w(hca.WRRDMAWrite, 2, 0x20, 2000)}, {wr: bad}, {wr: w(hca.WRSend, 2, 0x1001, 50)},
				{wr: w(hca.WRRDMAWrite, 2, 0x2000, 10)}, {wr: w(hca.WRSend, 2, 0x2100, 20)}},
			batch: 3, late: true, refuse: topBadKey},
		// The wrapping CQ: 7 messages into a CQ of 4 entries, software
		// consuming each CQE as it lands.
		{it: &reqItem{cfg: true, qix: 3, qpn: 0x003B23, dlid: 0x34, slid: topPortLID, sl: 5, vl: 1, rqpn: 0xE0003, psn: 0x777000, mtuCode: 5, cqn: 3},
			msgs: []topMsg{{wr: w(hca.WRSend, 3, 0x40, 5000)}, {wr: w(hca.WRRDMAWrite, 3, 0x1801, 7)}, {wr: w(hca.WRSendImm, 3, 0, 0), inl: inline(64, 0xC3)},
				{wr: w(hca.WRRDMAWriteImm, 3, 0x2003, 200)}, {wr: w(hca.WRSend, 3, 0x2400, 1)}, {wr: w(hca.WRRDMAWrite, 3, 0x2500, 4096)},
				{wr: list(hca.WRSend, 3, []uint64{0x2A01, 0x3000}, []uint32{4000, 1000})}},
			batch: 3, cqLog: 2, consume: true, in: []topIn{{off: 0x203, n: 5000}, {off: 0x1800, n: 1},
				{off: 0x1900, n: 100, op: hca.WRRDMAWriteImm, imm: 0x5EED_0003}},
			recv: []topIn{{off: 0x1C00, n: 64}}},
	}
}

// newTopRetryPlan is the run of topRetryScenario.
func newTopRetryPlan(seed uint64) *topPlan {
	return newTopPlanOf(seed, topRetryScenario(), topRetryCnt, true)
}

// TestTopRetryPlan: the model does in the scenario what its comment says.
func TestTopRetryPlan(t *testing.T) {
	p := newTopRetryPlan(1)
	psns := func(q int) []uint32 { return p.qps[q].psns }
	// QP 0 at MTU 256 from 0x10: the WRITE of 100 + 650 + 250 = 1000
	// bytes is 4 packets (10..13), the inline SEND of 200 one (14), the
	// SEND of 300 2 (15, 16). AckReq on a message's last and on each 3rd
	// inside (topEvery): 12, 13, 14, 16. The wire loses 11; the far end
	// takes 10 (no AckReq: no ACK), then 12 out of sequence: a NAK
	// (sequence error) for 11, its expected PSN, and drops 13..16 silently
	// (one NAK per gap). The requester goes back to 11 and sends 11..16
	// again; the far end ACKs 12, 13, 14 and 16: all three complete. Then
	// the last SEND (17), ACKed. 7 + 6 + 1 packets.
	assert.Equal(t, []uint32{0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17}, psns(0))
	// The resent 11 carries bytes 256..511 of the list: element 1 (at
	// 0x1000 of QP 0's region) from its byte 256 - 100 = 156, after the
	// LRH (8 bytes) and BTH (12: a MIDDLE has no RETH).
	var want11 []byte
	for i := range 256 {
		a := topPayBase + 0x1000 + 156 + i
		want11 = append(want11, p.mem[a/BlockBytes][a%BlockBytes])
	}
	assert.Equal(t, want11, p.qps[0].wires[7][20:20+256])
	// QP 1 at MTU 512 from FFFFFE: the SEND of 100 is FFFFFE (ACKed), the
	// WRITE of 1500 is 3 packets FFFFFF, 0, 1 (AckReq on 1, its last and
	// 3rd), 1 lost. Nothing comes back for it: the timer expires and the
	// requester resends from the oldest unacknowledged PSN, FFFFFF. The
	// far end ACKs FFFFFF and 0 as duplicates (each at its expected PSN
	// less one, 0) and 1 in sequence. Then the list SEND fails its L_Key
	// check (its second element, 0x40 bytes at 0x3FF0 of a 0x4000-byte
	// region, ends 0x30 past it): nothing outstanding to flush, the WQE
	// completes with LOC_PROT_ERR unsent, the QP goes to ERR and the SEND
	// after it is flushed unsent. 7 packets.
	assert.Equal(t, []uint32{0xFFFFFE, 0xFFFFFF, 0, 1, 0xFFFFFF, 0, 1}, psns(1))
	assert.Equal(t, 1, p.timeouts)
	// QP 2 at MTU 1024 from 5000: the WRITE of 2000 is 5000, 5001 (ACKed),
	// the refused WRITE 5002, the SEND 5003; the far end NAKs 5002 (remote
	// access error), goes to ERR and drops 5003. The two WQEs posted after
	// are flushed unsent: 4 packets.
	assert.Equal(t, []uint32{0x5000, 0x5001, 0x5002, 0x5003}, psns(2))
	// Sequence error NAKs: QP 0's one.
	assert.Equal(t, 1, p.naks)
	// CQEs: QP 0 4, QP 1 4 (success, success, LOC_PROT_ERR (4: syndrome
	// 0x04), WR_FLUSH_ERR); QP 2: the first WRITE's success, the refused
	// WRITE's REM_ACCESS_ERR (10), then WR_FLUSH_ERR (5) for the SEND and
	// the two posted after; QP 3 7.
	var n []int
	for _, qp := range p.qps {
		n = append(n, len(qp.cqes))
	}
	assert.Equal(t, []int{4, 4, 5, 7}, n)
	status := func(cqe []byte) (op, synd byte) { return cqe[63] >> 4, cqe[55] }
	for k, want := range [][2]byte{{0, 0}, {0, 0}, {13, 0x04}, {13, 0x05}} {
		op, synd := status(p.qps[1].cqes[k])
		assert.Equal(t, want, [2]byte{op, synd}, "QP 1's CQE %d", k)
	}
	for k, want := range [][2]byte{{0, 0}, {13, 0x13}, {13, 0x05}, {13, 0x05}, {13, 0x05}} {
		op, synd := status(p.qps[2].cqes[k])
		// An error CQE's opcode is 13 (MLX5_CQE_REQ_ERR), its syndrome
		// the mlx5 one of the status: REM_ACCESS_ERR (10) 0x13,
		// WR_FLUSH_ERR (5) 0x05; a success's opcode 0 (REQ).
		assert.Equal(t, want, [2]byte{op, synd}, "QP 2's CQE %d", k)
	}
	// The second doorbell of a late batch waits for the first batch's
	// CQEs: QP 0's 3, QP 1's 2, QP 2's 3.
	assert.Equal(t, []int{3, 2, 3}, []int{p.qps[0].need, p.qps[1].need, p.qps[2].need})
	// WQEBBs (hca.WQEBBs: 16-byte segments in 64-byte blocks): QP 0's
	// list WRITE, ctrl + raddr + 3 data segments = 80 bytes, takes 2; the
	// inline SEND, ctrl + 4 + 200 = 220, 4; so the SEND after it has
	// wqe_index 6 and the last 7 (their CQEs' wqe_counter).
	var idx []uint16
	for _, w := range p.qps[0].wqes {
		idx = append(idx, w.Index)
	}
	assert.Equal(t, []uint16{0, 2, 6, 7}, idx)
	// QP 3's CQ of 4: slots 0 1 2 3 0 1 2, the owner bit (op_own bit 0)
	// 0 on the first pass and 1 on the second (hca.CQESlot: pi / depth
	// mod 2).
	assert.Equal(t, []int{0, 1, 2, 3, 0, 1, 2}, p.qps[3].slots)
	var owner []byte
	for _, c := range p.qps[3].cqes {
		owner = append(owner, c[63]&1)
	}
	assert.Equal(t, []byte{0, 0, 0, 0, 1, 1, 1}, owner)
	// Requests arriving: the far end's RDMA WRITEs, from PSN 0. QP 0 at
	// MTU 256: 600 bytes in 3 packets (0, 1, 2; AckReq on 2, the 3rd and
	// last), 17 in one (3), then a SEND of 300 in 2 (4, 5; AckReq on 5);
	// QP 3 at 4096: 5000 in 2 (0, 1; AckReq on 1), 1 in one (2), then a
	// WRITE with immediate of 100 (3). ack_coalesce 1: an ACK per AckReq
	// packet, at its PSN, MSN the messages done: QP 0 {2, 1} {3, 2} {5,
	// 3}, QP 3 {1, 1} {2, 2} {3, 3}.
	require.Len(t, p.rx, 5, "the far end's requests in a list of their own")
	assert.Len(t, p.rx[4], 4+2+3+1)
	for _, c := range []struct {
		q         int
		psn, msns []uint32
	}{{0, []uint32{2, 3, 5}, []uint32{1, 2, 3}}, {3, []uint32{1, 2, 3}, []uint32{1, 2, 3}}} {
		var psn, msn []uint32
		for _, w := range p.qps[c.q].acks {
			pk, err := ib.ParseWire(w[:wireLen(w)])
			require.NoError(t, err)
			assert.Equal(t, uint8(hca.SynACK), pk.AETH.Syndrome&0xE0, "an ACK")
			psn, msn = append(psn, pk.PSN), append(msn, pk.AETH.MSN)
		}
		assert.Equal(t, c.psn, psn, "QP %d's responder's ACKs' PSNs", c.q)
		assert.Equal(t, c.msns, msn, "QP %d's responder's ACKs' MSNs", c.q)
	}
	// Their payload lands in the inbound regions: 600 + 17 + 5000 + 1 +
	// 100 bytes at topInBase + q x topInStep + off, and the SEND's 300 in
	// QP 0's receive buffer at 0x1800 of its region (the far end's bytes
	// of the same address).
	for _, c := range []struct {
		q      int
		off, n uint64
	}{{0, 0x40, 600}, {0, 0x1001, 17}, {0, 0x1800, 300}, {3, 0x203, 5000}, {3, 0x1800, 1}, {3, 0x1900, 100}} {
		base := uint64(topInBase + c.q*topInStep)
		for a := base + c.off; a < base+c.off+c.n; a++ {
			if p.want[a/BlockBytes][a%BlockBytes] != topRemoteBytes(a, 1)[0] {
				t.Errorf("QP %d's inbound byte at %#x: %#x, want the far end's %#x", c.q, a, p.want[a/BlockBytes][a%BlockBytes], topRemoteBytes(a, 1)[0])
				break
			}
		}
	}
	// Receive completions in the 4-QP bench: the SEND's into QP 0's
	// receive CQ (CQ 4 = NQ + 0), RESP_SEND of 300 bytes, receive WQE 0;
	// the WRITE with immediate's into QP 3's (CQ 7), RESP_WR_IMM with the
	// RETH's 100 and its immediate; each at slot 0.
	require.Len(t, p.qps[0].rcqes, 1)
	require.Len(t, p.qps[3].rcqes, 1)
	c0, c3 := hca.DecodeCQE(p.qps[0].rcqes[0]), hca.DecodeCQE(p.qps[3].rcqes[0])
	assert.Equal(t, []any{uint8(hca.CQERespSend), uint32(300), uint16(0)}, []any{c0.Opcode, c0.ByteCnt, c0.Counter})
	assert.Equal(t, []any{uint8(hca.CQERespWrImm), uint32(100), uint32(0x5EED_0003)}, []any{c3.Opcode, c3.ByteCnt, c3.Imm})
	assert.Equal(t, 20+2, p.ncqe)
}

// TestTopRetryCosim: the emitted hca_top (topRetryTree) recovers from a
// lost packet by the far end's NAK and by its own timer, fails and
// flushes on a refused R_Key and wraps a CQ as the model does (Icarus;
// two seeds of the host's and link's randomness).
func TestTopRetryCosim(t *testing.T) {
	topSeeds(t, topRetryTree, newTopRetryPlan, func(t *testing.T, p *topPlan, res *topResult) {
		t.Logf("%s; the link's packets by QP: %s", res.summary, topQPOrder(res))
	})
}
