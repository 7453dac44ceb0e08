package rtl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_requester's fence <-> hca.Device.wqeReady's ----
//
// The response run's machinery (newRspGen, retryCheck) on a directed run
// of fenced and unfenced WQEs behind READs and atomics. The plan's model
// holds a fenced WQE (SendWQE.Fenced: modes 2 and 4) and the WQEs behind
// it until every READ and atomic posted before it on its context has
// completed, as hca.Device.wqeReady and releaseFence do, and posts them to
// its requester then; the responses' gates count the packets the model has
// sent, so the run stalls if the RTL holds a WQE the model does not. The
// replay checks every WQE the RTL takes: a fenced one taken while a READ
// or atomic of its context is unanswered fails it.

// newRspFencePlan builds the run (MTU m, PSNs mod 2^24; every WQE
// signaled).
func newRspFencePlan() *rspPlan {
	p, wqe, deliver, drain := newRspGen([]*reqItem{
		{cfg: true, qix: 0, qpn: 0x4560, dlid: 0x71, slid: 0x81, sl: 1, vl: 1, rqpn: 0xD0000, psn: 0x000010, mtuCode: 1, cqn: 3},
		{cfg: true, qix: 1, qpn: 0x4561, dlid: 0x72, slid: 0x82, sl: 5, vl: 3, rqpn: 0xD0001, psn: 0x000200, mtuCode: 3, cqn: 4},
		{cfg: true, qix: 2, qpn: 0x4562, dlid: 0x73, slid: 0x83, sl: 9, vl: 0, rqpn: 0xD0002, psn: 0x000300, mtuCode: 2, cqn: 9},
	})
	run := p.run
	mark, item, gate := p.markAck, p.markItem, p.gateFrom
	// Context 0, MTU 256, from 000010. Unfenced: R1 a READ of 700 B (3
	// PSNs, 000010..000012, one request), W1 a WRITE of 100 B (000013, no
	// fence) and W1b one with the small fence (mode 1, 000014: it waits for
	// local WQEs only, none here). Both go right behind R1's request: the
	// responses' gate is the three packets.
	wqe(0, hca.WRRDMARead, 700, 0x10_0000, true)
	wqe(0, hca.WRRDMAWrite, 100, 0x11_0000+3, true)
	item("W1")
	p.fm = 1
	wqe(0, hca.WRRDMAWrite, 100, 0x11_1000, true)
	drain()
	// R1's FIRST (256 B), MIDDLE (256), LAST (188): R1 completes; an ACK
	// through 000014: W1 and W1b.
	deliver(0, readRsp(0, 3, 0x000010, 256, false))
	mark("r1first")
	deliver(0, readRsp(1, 3, 0x000011, 256, false))
	deliver(0, readRsp(2, 3, 0x000012, 188, true))
	deliver(0, reqAck{psn: 0x000014, syn: hca.SynACK})
	// Fenced: R2 a READ of 700 B (000015..000017), W2 a WRITE of 100 B
	// with IBV_SEND_FENCE (mode 4) and S2 an unfenced SEND of 20 B behind
	// it: both held until R2's LAST, then W2 at 000018 and S2 at 000019.
	k := len(run.items)
	wqe(0, hca.WRRDMARead, 700, 0x12_0000+64, true)
	p.fm = 4
	wqe(0, hca.WRRDMAWrite, 100, 0x13_0000, true)
	item("W2")
	wqe(0, hca.WRSend, 20, 0x14_0000+7, true)
	item("S2")
	gate(k)
	drain()
	deliver(0, readRsp(0, 3, 0x000015, 256, false))
	deliver(0, readRsp(1, 3, 0x000016, 256, true))
	deliver(0, readRsp(2, 3, 0x000017, 188, false))
	mark("r2last")
	deliver(0, reqAck{psn: 0x000019, syn: hca.SynACK})
	// Context 1, MTU 1024, from 000200: A1 a fetch and add (000200), S1 a
	// SEND of 50 B with fence mode 2 (fence without the small fence): held
	// until A1's atomic ACK, then 000201. Then X1 a WRITE of 64 B (000202)
	// and S3 a SEND of 10 B with IBV_SEND_FENCE (000203): nothing before it
	// unanswered, so it is not held (the ACK's gate counts it).
	k = len(run.items)
	wqe(1, hca.WRFetchAdd, 8, 0x20_0000+16, true)
	p.fm = 2
	wqe(1, hca.WRSend, 50, 0x21_0000, true)
	item("S1")
	gate(k)
	drain()
	deliver(1, atomicAck(0x000200, 0x0102030405060708, false))
	mark("a1")
	k = len(run.items)
	wqe(1, hca.WRRDMAWrite, 64, 0x22_0000, true)
	p.fm = 4
	wqe(1, hca.WRSend, 10, 0x23_0000, true)
	gate(k)
	drain()
	deliver(1, reqAck{psn: 0x000203, syn: hca.SynACK})
	// Context 2, MTU 512, from 000300: R4 a READ of 1024 B (000300,
	// 000301), W4 a WRITE of 10 B with IBV_SEND_FENCE: held. A NAK (remote
	// access error) at 000300 fails R4 (REM_ACCESS_ERR) and sends the QP to
	// ERR; W4 is handed on and flushed (WR_FLUSH_ERR), never sent.
	k = len(run.items)
	wqe(2, hca.WRRDMARead, 1024, 0x30_0000, true)
	p.fm = 4
	wqe(2, hca.WRRDMAWrite, 10, 0x31_0000, true)
	gate(k)
	drain()
	deliver(2, reqAck{psn: 0x000300, syn: hca.SynNAKAccess})
	// Control: every handshake ready (wr0's too, bit 10), every VL's
	// credit plenty, a WQE or ACK offered whenever one is due.
	for range 1500 {
		run.ctrl = append(run.ctrl, [5]uint64{0x71f, 2048, 2048, 2048, 2048})
	}
	return p
}

// TestRspFencePlan: the model does in the run what the plan's comments
// derive.
func TestRspFencePlan(t *testing.T) {
	p := newRspFencePlan()
	assert.Equal(t, []uint32{0x10, 0x13, 0x14, 0x15, 0x18, 0x19}, p.psns[0], "context 0")
	assert.Equal(t, []uint32{0x200, 0x201, 0x202, 0x203}, p.psns[1], "context 1")
	assert.Equal(t, []uint32{0x300}, p.psns[2], "context 2")
	assert.Equal(t, rspFenceStatus(), p.status, "completion statuses")
	assert.Empty(t, p.held, "WQEs still held")
}

// rspFenceStatus: R1, W1, W1b; R2, W2, S2; A1, S1, X1, S3 succeed; R4
// fails with REM_ACCESS_ERR and W4 is flushed.
func rspFenceStatus() []hca.WCStatus {
	return append(make([]hca.WCStatus, 10), hca.WCRemAccessErr, hca.WCWRFlushErr)
}

// TestRequesterFenceCosim: hca_requester holds a fenced WQE (and those
// behind it) until every READ and atomic before it on its context has its
// answer, as the model's device does, and flushes it when the context
// fails; each mutant of the fence fails the run.
func TestRequesterFenceCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	f := "hca_requester.v"
	hold := "wire                fence_hold = (dec_fm == 3'd2 || dec_fm == 3'd4) && has_ctx && d_rdun;"
	runRspCases(t, newRspFencePlan, []rspCase{
		{name: "unmutated"},
		{name: "unmutated, stalled"},
		{"the fence ignored", f, hold, "wire                fence_hold = 1'b0;"},
		{"released at a READ's first response", f, "!oq_done[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}])",
			"!oq_done[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}] && !oq_gv[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}])"},
		{"fence mode 2 not a fence", f, hold, "wire                fence_hold = dec_fm == 3'd4 && has_ctx && d_rdun;"},
		{"the small fence (mode 1) held as a fence", f, hold,
			"wire                fence_hold = (dec_fm == 3'd1 || dec_fm == 3'd2 || dec_fm == 3'd4) && has_ctx && d_rdun;"},
		{"a fence waiting for the ring to empty (SENDs and WRITEs too)", f,
			"if (fj[PW-1:0] < f_tl - f_hd && oq_rd[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}] &&",
			"if (fj[PW-1:0] < f_tl - f_hd &&"},
	}, func(t *testing.T, p *rspPlan, res *retryResult) {
		assert.Equal(t, rspFenceStatus(), res.status, "completion statuses on cpl_*")
		require.Len(t, res.commitAt[0], 6, "context 0's commits")
		require.Len(t, res.commitAt[1], 4, "context 1's commits")
		// Unfenced (and the small fence): W1 and W1b are committed right
		// behind R1's request, before R1's first response is taken.
		assert.Less(t, res.commitAt[0][2], res.ackAt[p.marks["r1first"]], "W1b's commit before R1's FIRST is taken")
		// Fenced: W2 and S2 behind it are taken, and committed, only after
		// R2's LAST is taken; S1 (mode 2) after A1's atomic ACK.
		assert.Greater(t, res.takeAt[p.marks["W2"]], res.ackAt[p.marks["r2last"]], "W2 taken after R2's LAST")
		assert.Greater(t, res.commitAt[0][4], res.ackAt[p.marks["r2last"]], "W2's commit after R2's LAST")
		assert.Greater(t, res.takeAt[p.marks["S2"]], res.ackAt[p.marks["r2last"]], "S2 (behind W2) taken after R2's LAST")
		assert.Greater(t, res.commitAt[1][1], res.ackAt[p.marks["a1"]], "S1's commit after A1's ACK")
		t.Logf("R2's LAST taken at cycle %d, W2 taken at %d and committed at %d; R1's request committed at %d, W1 at %d, W1b at %d",
			res.ackAt[p.marks["r2last"]], res.takeAt[p.marks["W2"]], res.commitAt[0][4], res.commitAt[0][0], res.commitAt[0][1],
			res.commitAt[0][2])
	})
}
