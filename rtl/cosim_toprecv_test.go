package rtl

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_top receiving SENDs and WRITEs with immediate: hca_rq, hca_responder, hca_cpl_arb ----
//
// TestTopRecvCosim runs cosim_top_test.go's bench (topTB, topPlan) on a
// scenario of two QPs whose far ends send requests to the HCA's
// responder: software posts receive WQEs into the QPs' receive queue rings
// (hca.EncodeRecvWQE, in host memory), sets the queues through rq_cfg_*
// and announces them through rq_db_*; the far end (a model hca.Requester)
// sends SENDs, ONLY and multi-packet, with and without immediate, and an
// RDMA WRITE with immediate. Checked, as for every topPlan: the payload
// bytes at the receive buffers (and the WRITE's at its RETH address), and
// nothing else in host memory changed but the CQ rings; every CQE written,
// in each CQ's order, equal to the model's: the responder's receive CQEs
// (hca.ResponderCQE) into the QP's receive CQ (CQ NQ + q: qp_cfg_rcqn), the
// requester's into its send CQ, so hca_cpl_arb shares the CQE writer
// between them; the responder's ACKs and the RNR NAK of a SEND with no
// receive WQE posted, with the QP's min_rnr_timer (qp_cfg_rnr), byte for
// byte.

// topRecvScenario: QP 0 at MTU 256 posts four receive WQEs and receives
// a SEND of 100 bytes (ONLY), a SEND with immediate of 600 (FIRST, MIDDLE,
// LAST with immediate) into a buffer at an odd address, an RDMA WRITE with
// immediate of 300 (FIRST, LAST with immediate: a receive WQE taken, its
// buffer untouched) and a SEND with immediate of 1 byte; QP 1 at MTU 512
// posts none and receives one SEND (RNR NAK, timer 14). Each QP also sends
// two messages of its own, so requester and responder completions meet at
// the CQE writer.
func topRecvScenario() []*topQP {
	w := topWRs(0x7000_0000_0000, 3, 0xA0B0C000)
	return []*topQP{
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000A10, dlid: 0x21, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xD0000, psn: 0x10, mtuCode: 1, cqn: 0},
			msgs:  []topMsg{{wr: w(hca.WRSend, 0, 0x40, 300)}, {wr: w(hca.WRRDMAWrite, 0, 0x400, 100)}},
			batch: 1,
			recv:  []topIn{{off: 0x1000, n: 1024}, {off: 0x1405, n: 700}, {off: 0x1800, n: 512}, {off: 0x1C3F, n: 64}},
			in: []topIn{{off: 0x10, n: 100, op: hca.WRSend}, {off: 0x200, n: 600, op: hca.WRSendImm, imm: 0x1234_5678},
				{off: 0x333, n: 300, op: hca.WRRDMAWriteImm, imm: 0x9ABC_DEF0}, {off: 0x700, n: 1, op: hca.WRSendImm, imm: 0x0BAD_F00D}}},
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001B01, dlid: 0x22, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xD0001, psn: 0x200, mtuCode: 2, cqn: 1},
			msgs:  []topMsg{{wr: w(hca.WRRDMAWrite, 1, 0x11, 1000)}, {wr: w(hca.WRSend, 1, 0x800, 64)}},
			batch: 1, rnr: 14,
			in: []topIn{{off: 0x40, n: 50, op: hca.WRSend}}},
	}
}

func newTopRecvPlan(seed uint64) *topPlan { return newTopPlanOf(seed, topRecvScenario(), 0, false) }

// TestTopRecvPlan: the model does in the scenario what its comment says.
func TestTopRecvPlan(t *testing.T) {
	p := newTopRecvPlan(1)
	q0, q1 := p.qps[0], p.qps[1]
	// Receive CQEs, QP 0, one per message in order, its receive WQEs 0..3:
	// SEND 100 -> RESP_SEND (2), byte_len 100; SEND_IMM 600 -> RESP_SEND_IMM
	// (3), 600, its immediate; WRITE_IMM 300 -> RESP_WR_IMM (1), byte_len
	// the RETH's 300, its immediate; SEND_IMM 1 -> RESP_SEND_IMM, 1. QP 1's
	// SEND finds no receive WQE: no CQE.
	want := []hca.CQE{
		{Opcode: hca.CQERespSend, ByteCnt: 100, Counter: 0},
		{Opcode: hca.CQERespSendImm, ByteCnt: 600, Counter: 1, Imm: 0x1234_5678},
		{Opcode: hca.CQERespWrImm, ByteCnt: 300, Counter: 2, Imm: 0x9ABC_DEF0},
		{Opcode: hca.CQERespSendImm, ByteCnt: 1, Counter: 3, Imm: 0x0BAD_F00D},
	}
	require.Len(t, q0.rcqes, len(want))
	for k, c := range want {
		got := hca.DecodeCQE(q0.rcqes[k])
		assert.Equal(t, c.Opcode, got.Opcode, "CQE %d", k)
		assert.Equal(t, c.ByteCnt, got.ByteCnt, "CQE %d", k)
		assert.Equal(t, c.Counter, got.Counter, "CQE %d", k)
		assert.Equal(t, uint32(0x000A10), got.QPN, "CQE %d", k)
		if c.Imm != 0 {
			assert.Equal(t, c.Imm, got.Imm, "CQE %d", k)
		}
		assert.Equal(t, k, q0.rslots[k], "slot")
	}
	assert.Empty(t, q1.rcqes)
	// CQEs: 4 receive + 2 + 2 send (all signaled).
	assert.Equal(t, 4+2+2, p.ncqe)
	// The far ends' packets: QP 0 at MTU 256, 1 + ceil(600/256) = 3 +
	// ceil(300/256) = 2 + 1 = 7; QP 1 one. The HCA's ACKs, ack_coalesce 1:
	// for each AckReq packet (a message's last, and packet i of n with (i+1)
	// mod 3 = 0 inside, ack_req_every 3): QP 0 1 + 1 + 1 + 1 = 4 (the 3-packet
	// SEND's third is its last); QP 1 none but the RNR NAK: syndrome
	// 0x20 | 14, PSN 0 (its expected PSN).
	require.Len(t, p.rx, 3) // the two QPs' responses, then the requests arriving
	assert.Len(t, p.rx[2], 7+1)
	assert.Len(t, q0.acks, 4)
	require.Len(t, q1.acks, 1)
	assert.Equal(t, byte(0x20|14), q1.acks[0][8+12], "AETH syndrome (after LRH 8, BTH 12)")
	assert.Equal(t, []byte{0, 0, 0}, q1.acks[0][8+9:8+12], "BTH.PSN")
	assert.Equal(t, 1, p.rnaks)
	// Host blocks the run must change: the 8 CQEs' slots; the SEND of 100
	// at 0x15000 (2 blocks), of 600 at 0x15405 (bytes 5..604 of 10
	// blocks), the WRITE's 300 at 0x14333 (0x14333..0x1445E: the 6 blocks
	// 0x14300..0x14440), the SEND of 1 byte at 0x15C3F (one block); QP 1's
	// SEND lands nowhere; and the sent WRITEs change only the far end.
	changed := 0
	for b := range p.mem {
		if string(p.mem[b]) != string(p.want[b]) {
			changed++
		}
	}
	assert.Equal(t, 8+2+10+6+1, changed)
	// Each receive CQE's message bytes, which its CQE must land after
	// (judge): 100, 600 (256 + 256 + 88), the WRITE's 300 (256 + 44) and 1.
	require.Len(t, q0.rpay, 4)
	for k, n := range []int{100, 600, 300, 1} {
		sum := 0
		for _, s := range q0.rpay[k] {
			sum += s.n
		}
		assert.Equal(t, n, sum, "receive CQE %d's message bytes", k)
	}
	// The receive WQEs are in QP 0's ring as the host wrote them.
	a := topRQBase + 16
	assert.Equal(t, uint32(700), binary.BigEndian.Uint32(p.mem[a/BlockBytes][a%BlockBytes:]))
}

// TestTopRecvCosim: the bench on the receive scenario, seeds 1 and 2.
func TestTopRecvCosim(t *testing.T) {
	topSeeds(t, hcaTopTree, newTopRecvPlan, func(t *testing.T, p *topPlan, res *topResult) {
		assert.Equal(t, 8, res.counters["cqes"])
		assert.Equal(t, 1, res.counters["rsp_naks"], "the RNR NAK")
		t.Logf("%s", res.summary)
	})
}
