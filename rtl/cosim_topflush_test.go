package rtl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_top flushing a receive queue: a responder error, WR_FLUSH_ERR ----
//
// TestTopFlushCosim runs cosim_top_test.go's bench (topTB, topPlan) on a
// scenario where a QP's responder goes to ERR with receive WQEs posted and
// not consumed, and software posts more afterwards: each completes with
// WR_FLUSH_ERR in the QP's receive CQ, in posting order, after the error's
// own completion, as hca.Device.flushRecvs writes them
// (hca.FlushRecvCQE), through hca_rq's flush takes, hca_responder's rc_*,
// hca_cpl_arb and hca_cqe_writer. Checked as every topPlan run: every CQE
// write in each CQ's order and host memory at the end, the responder's ACK
// and NAK byte for byte, rsp_naks and rsp_err_drop equal to the model's.

// topFlushScenario: QP 0 at MTU 256 posts four receive WQEs (1024, 64,
// 512 and 700 bytes) and receives a SEND of 100 bytes (WQE 0), a SEND of
// 200 into WQE 1's 64 bytes (LOC_LEN_ERR, NAK invalid request, the QP to
// ERR: WQEs 2 and 3 flushed) and a SEND of 10 (dropped in ERR); once its
// receive CQ holds those 4 CQEs, software posts two more WQEs (4 and 5),
// flushed at their doorbell. QP 1 at MTU 512 posts one WQE and receives a
// SEND of 130 into it meanwhile (at a block's start: 3 beats, written as a
// TLP of 2 and one of 1 at MPS 128, so its completion can overtake the
// last: TestTopRecvOrderCosim). Each QP sends two messages of its own.
func topFlushScenario() []*topQP {
	w := topWRs(0x7000_0000_0000, 3, 0xA0B0C000)
	return []*topQP{
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000A10, dlid: 0x21, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xD0000, psn: 0x10, mtuCode: 1, cqn: 0},
			msgs:  []topMsg{{wr: w(hca.WRSend, 0, 0x40, 300)}, {wr: w(hca.WRRDMAWrite, 0, 0x400, 100)}},
			batch: 1,
			recv:  []topIn{{off: 0x1000, n: 1024}, {off: 0x1400, n: 64}, {off: 0x1800, n: 512}, {off: 0x1C00, n: 700}},
			in:    []topIn{{off: 0x10, n: 100, op: hca.WRSend}, {off: 0x200, n: 200, op: hca.WRSend}, {off: 0x300, n: 10, op: hca.WRSend}},
			// The late WQEs wait for the 4 receive CQEs before them: the
			// SEND's, the error's and WQEs 2 and 3's flushes.
			lateRecv: []topIn{{off: 0x1E00, n: 128}, {off: 0x1F00, n: 64}}, lateNeed: 4},
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001B01, dlid: 0x22, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xD0001, psn: 0x200, mtuCode: 2, cqn: 1},
			msgs:  []topMsg{{wr: w(hca.WRRDMAWrite, 1, 0x11, 1000)}, {wr: w(hca.WRSend, 1, 0x800, 64)}},
			batch: 1,
			recv:  []topIn{{off: 0x40, n: 300}},
			in:    []topIn{{off: 0x40, n: 130, op: hca.WRSend}}},
	}
}

func newTopFlushPlan(seed uint64) *topPlan { return newTopPlanOf(seed, topFlushScenario(), 0, false) }

// TestTopFlushPlan: the model does in the scenario what its comment says.
func TestTopFlushPlan(t *testing.T) {
	p := newTopFlushPlan(1)
	q0, q1 := p.qps[0], p.qps[1]
	// QP 0's receive CQ in order: WQE 0 RESP_SEND 100 (a SEND ONLY of 100
	// at MTU 256); WQE 1 LOC_LEN_ERR (200 > its 64 bytes: Receive's buffer
	// check, hca.WCLocLenErr, byte_len 0); the QP is in ERR, so WQEs 2 and
	// 3, posted and not consumed, complete WR_FLUSH_ERR (flushRecvs, after
	// the error's CQE); the SEND of 10 is dropped (no CQE); WQEs 4 and 5,
	// posted after, WR_FLUSH_ERR at their doorbell. A flush CQE is
	// RESP_SEND with status WR_FLUSH_ERR, byte_len 0, the WQE's index.
	type rc struct {
		st  hca.WCStatus
		n   uint32
		idx uint16
	}
	want := []rc{{hca.WCSuccess, 100, 0}, {hca.WCLocLenErr, 0, 1}, {hca.WCWRFlushErr, 0, 2}, {hca.WCWRFlushErr, 0, 3},
		{hca.WCWRFlushErr, 0, 4}, {hca.WCWRFlushErr, 0, 5}}
	require.Len(t, q0.rcqes, len(want))
	for k, c := range want {
		got := hca.DecodeCQE(q0.rcqes[k])
		assert.Equal(t, c.st, got.Status, "CQE %d", k)
		assert.Equal(t, c.n, got.ByteCnt, "CQE %d", k)
		assert.Equal(t, c.idx, got.Counter, "CQE %d", k)
		assert.Equal(t, uint32(0x000A10), got.QPN, "CQE %d", k)
		assert.Equal(t, k, q0.rslots[k], "slot")
	}
	// QP 1 is not in ERR: its SEND of 130 completes in its WQE 0.
	require.Len(t, q1.rcqes, 1)
	c1 := hca.DecodeCQE(q1.rcqes[0])
	assert.Equal(t, hca.WCSuccess, c1.Status)
	assert.Equal(t, uint32(130), c1.ByteCnt)
	assert.Equal(t, []topSpan{{0x16040, 130}}, q1.rpay[0], "the bytes QP 1's CQE must land after")
	// CQEs: 6 + 1 receive, 2 + 2 send.
	assert.Equal(t, 6+1+2+2, p.ncqe)
	// The responders: QP 0 ACKs the SEND of 100 (a message's last packet
	// asks for one) and NAKs the SEND of 200 (invalid request 0x61, its
	// PSN 1); the SEND of 10 (PSN 2) is dropped in ERR; QP 1 ACKs its SEND.
	require.Len(t, q0.acks, 2)
	assert.Equal(t, byte(0x61), q0.acks[1][8+12], "AETH syndrome")
	assert.Equal(t, []byte{0, 0, 1}, q0.acks[1][8+9:8+12], "BTH.PSN")
	assert.Len(t, q1.acks, 1)
	assert.Equal(t, 1, p.rnaks)
	assert.Equal(t, 1, p.rerrs)
	// Host blocks the run changes: the 11 CQEs' slots; the SEND of 100 at
	// 0x15000 (2 blocks) and QP 1's SEND of 130 at 0x16040 (0x16040 ..
	// 0x160C1: 3 blocks); the failed SEND and the dropped one write
	// nothing.
	changed := 0
	for b := range p.mem {
		if string(p.mem[b]) != string(p.want[b]) {
			changed++
		}
	}
	assert.Equal(t, 11+2+3, changed)
}

// TestTopFlushCosim: the bench on the flush scenario, seeds 1 and 2.
func TestTopFlushCosim(t *testing.T) {
	topSeeds(t, hcaTopTree, newTopFlushPlan, func(t *testing.T, p *topPlan, res *topResult) {
		assert.Equal(t, 11, res.counters["cqes"])
		assert.Equal(t, 1, res.counters["rsp_errdrop"], "the SEND after the error")
		t.Logf("%s", res.summary)
	})
}

// TestTopFlushMutantsFail: each slip in the flush path fails the flush
// run (seed 1).
func TestTopFlushMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	files := hcaTopTree(t)
	const rq, rs = "hca_rq.v", "hca_responder.v"
	topMutantsFail(t, files, newTopFlushPlan, []cosimMutant{
		// hca_rq never told of the ERR: nothing flushed (the run stalls
		// without WQEs 2..5's CQEs).
		{"hca_top: the responder's ERR not wired to hca_rq", "hca_top.v", ".rq_err(rsp_qp_err)", ".rq_err({(1<<QPN_W){1'b0}})"},
		// Only WQEs already read flushed: 4 and 5, posted in ERR, never.
		{"hca_rq: only the WQEs read flushed", rq, "rq_err[g] && rq_take[g] != rq_prod[g]", "rq_err[g] && rq_take[g] != rq_fetch[g]"},
		// WQE 3's flush answered with WQE 2's index: 2 flushed twice.
		{"hca_rq: a WQE flushed twice", rq, "assign rw_rsp_index = p_take;", "assign rw_rsp_index = pflush && p_take == 16'd3 ? 16'd2 : p_take;"},
		{"hca_responder: a flushed WQE skipped", rs, "                if (rw_rsp_ok) rc_valid <= 1'b1;\n", "                if (rw_rsp_ok && rw_rsp_index != 16'd3) rc_valid <= 1'b1;\n"},
		{"hca_responder: the flush status LOC_LEN_ERR", rs, "rc_opcode <= 4'd2; rc_status <= 8'd5;", "rc_opcode <= 4'd2; rc_status <= 8'd1;"},
		{"hca_rq: the newest WQE flushed first", rq, "assign rw_rsp_index = p_take;", "assign rw_rsp_index = pflush ? rq_prod[pq] - 16'd1 : p_take;"},
	})
}

// TestTopRecvOrderCosim: a receive CQE never reaches the host before its
// payload. TestTopFlushCosim's run (seed 1) with the host refusing writes
// for 12 cycles now and then (topPlan.wrStall), so writes queue in
// hca_dma_engine: the unmutated hca_top passes judge, whose check
// requires every receive CQE's write to land after every byte its message
// wrote (hca_responder puts the completion on rc_* only after its last
// wr0 beat is taken, and hca_dma_engine keeps the order it takes beats
// in); and a responder that completes on the last beat offered rather
// than taken (the beat still written when taken) fails that check: QP 1's
// SEND of 130 is written as a TLP of 2 beats and one of 1; when the host
// stalls after the first, the completion reaches wr1 while the last beat
// waits on wr0, and the engine's round robin, wr0 served last, takes the
// CQE's TLP first. Every byte still lands and every
// CQE is the model's, so the end image and the CQE contents pass; the
// order check itself must report it.
func TestTopRecvOrderCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	files := hcaTopTree(t)
	p := newTopFlushPlan(1)
	p.wrStall = true
	res := p.run(t, t.Context(), t.TempDir(), 1, files, nil)
	assert.Empty(t, p.judge(res), "the unmutated hca_top with write stalls")
	t.Logf("%s", res.summary)
	var src string
	for _, f := range files {
		if f.Name == "hca_responder.v" {
			src = f.Text
		}
	}
	// The mutant: in S_XFER, once the last beat is offered (wr_valid with
	// one beat left), the completion goes out on rc_* with its fields,
	// and is no longer owed in S_ACK.
	for _, e := range [][2]string{
		{"            S_XFER: begin\n                if (w_take) x_bt <= x_bt - 8'd1;",
			"            S_XFER: begin\n                if (p_cqe && cq_free && x_bt == 8'd1 && wr_valid) begin rc_valid <= 1'b1; p_cqe <= 1'b0; end\n" +
				"                if (w_take) x_bt <= x_bt - 8'd1;"},
		{"        S_XFER: begin\n            if (w_take) x_first <= 1'b0;",
			"        S_XFER: begin\n            if (p_cqe && cq_free && x_bt == 8'd1 && wr_valid) begin rc_qpn <= h_qpn; rc_opcode <= p_cop;\n" +
				"                rc_status <= p_cst; rc_index <= p_cidx; rc_len <= p_clen; rc_imm <= p_cimm; end\n            if (w_take) x_first <= 1'b0;"},
	} {
		require.Equal(t, 1, strings.Count(src, e[0]), "the mutation's text occurs once")
		src = strings.Replace(src, e[0], e[1], 1)
	}
	res = p.run(t, t.Context(), t.TempDir(), 1, files, map[string]string{"hca_responder.v": src})
	errs := p.judge(res)
	order := 0
	for _, e := range errs {
		if strings.Contains(e, "before its message's byte") {
			order++
		}
	}
	require.Positive(t, order, "the receive CQE order check passes a responder completing on the last beat offered: %v", errs[:min(3, len(errs))])
	t.Logf("the mutant fails (%d of %d by the order check): %s", order, len(errs), strings.Join(errs[:min(3, len(errs))], "; "))
}
