package rtl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_top: the requester's ERR reaches the receive side ----
//
// TestTopReqErrCosim runs cosim_top_test.go's bench (topTB,
// newTopPlanRetries) on QPs whose requester goes to ERR with receive WQEs
// posted: its retries spent (three local ACK timeouts, RETRY_EXC_ERR),
// a NAK that fails a message (the far end refuses an R_Key:
// REM_ACCESS_ERR) and a WQE that fails its L_Key check (LOC_PROT_ERR,
// unsent). IBA's Error state is the whole QP's: the model
// (hca.Device.requesterErr) moves the QP's responder to ERR and flushes
// its posted, not consumed receive WQEs with WR_FLUSH_ERR after the send
// side's error CQE, in posting order; WQEs posted later flush at their
// doorbell, and requests arriving later are dropped. In the RTL
// hca_requester's qp_err tells hca_responder (req_err), whose qp_err tells
// hca_rq; the flushes go through rw_*, rc_*, hca_cpl_arb and
// hca_cqe_writer. Checked as every topPlan run (each CQ's writes in order,
// host memory at the end, the link's packets, rsp_errdrop and rsp_naks
// equal to the model's).

// topReqErrScenario: three QPs at MTU 256, 512 and 1024, each its own
// send CQ (q) and receive CQ (3 + q).
func topReqErrScenario() []*topQP {
	w := topWRs(0x7400_0000_0000, 9, 0xE0F0A000)
	bad := w(hca.WRRDMAWrite, 1, 0x900, 50)
	bad.RKey = topBadKey
	// A SEND from a list whose second element runs 0x30 bytes past QP 2's
	// 16 KiB region: its L_Key check fails (hca.Device.checkSGL).
	past := w(hca.WRSend, 2, 0, 0)
	past.LocalAddr = 0
	past.SGL = []hca.SGE{{Addr: topPay(2, 0x3F00), Length: 0x80}, {Addr: topPay(2, 0x3FF0), Length: 0x40}}
	past.Length = 0xC0
	return []*topQP{
		// Retries spent: a SEND, then a WRITE the wire loses every time
		// (its packets 1, 2, 3): RETRY_EXC_ERR at the third timeout; a
		// SEND posted after flushed unsent. Four receive WQEs posted; the
		// far end's SEND of 100 takes WQE 0 early on; WQEs 1..3 flush at
		// the ERR; two posted after (4, 5) flush at their doorbell; a SEND
		// arriving after the ERR is dropped.
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000C30, dlid: 0x61, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xB0000, psn: 0x300, mtuCode: 1, cqn: 0},
			msgs:  []topMsg{{wr: w(hca.WRSend, 0, 0x10, 64)}, {wr: w(hca.WRRDMAWrite, 0, 0x200, 200)}, {wr: w(hca.WRSend, 0, 0x1000, 20)}},
			batch: 2, late: true, lose: []int{1, 2, 3},
			recv:     []topIn{{off: 0x100, n: 256}, {off: 0x200, n: 512}, {off: 0x400, n: 64}, {off: 0x500, n: 1000}},
			in:       []topIn{{off: 0x100, n: 100, op: hca.WRSend}, {off: 0x900, n: 50, op: hca.WRSend, afterErr: true}},
			lateRecv: []topIn{{off: 0xA00, n: 128}, {off: 0xB00, n: 64}}, lateNeed: 4},
		// A NAK that fails a message: a WRITE, a WRITE to an R_Key the far
		// end refuses (REM_ACCESS_ERR), four small messages behind it
		// (flushed: a walk of five CQEs, which the receive flushes must
		// not overtake); a WRITE posted after, flushed. Two receive WQEs
		// posted, flushed at the ERR.
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001D31, dlid: 0x62, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xB0001, psn: 0xFFFFFF, mtuCode: 2, cqn: 1},
			msgs: []topMsg{{wr: w(hca.WRRDMAWrite, 1, 0x20, 600)}, {wr: bad}, {wr: w(hca.WRSend, 1, 0x1001, 30)},
				{wr: w(hca.WRRDMAWrite, 1, 0x1100, 7)}, {wr: w(hca.WRSend, 1, 0x1200, 1)}, {wr: w(hca.WRRDMAWrite, 1, 0x1300, 2)},
				{wr: w(hca.WRRDMAWrite, 1, 0x2000, 10)}},
			batch: 6, late: true, refuse: topBadKey,
			recv: []topIn{{off: 0x40, n: 300}, {off: 0x400, n: 700}}},
		// A WQE that fails its L_Key check: a WRITE, then (posted after
		// its CQE) the SEND from a list past the region (LOC_PROT_ERR,
		// unsent) and a WRITE (flushed). One receive WQE posted, flushed
		// at the ERR.
		{it: &reqItem{cfg: true, qix: 2, qpn: 0x002E32, dlid: 0x63, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xB0002, psn: 0x7000, mtuCode: 3, cqn: 2},
			msgs:  []topMsg{{wr: w(hca.WRRDMAWrite, 2, 0x30, 1500)}, {wr: past}, {wr: w(hca.WRRDMAWrite, 2, 0x40, 5)}},
			batch: 1, late: true,
			recv: []topIn{{off: 0x80, n: 64}}},
	}
}

// newTopReqErrPlan is the run of topReqErrScenario in topRNRDesign
// (RETRY_CNT 2, the local ACK timer).
func newTopReqErrPlan(seed uint64) *topPlan {
	return newTopPlanRetries(seed, topReqErrScenario(), topRNRRetryCnt, topRNRRetry, true)
}

// TestTopReqErrPlan: the model does in the scenario what its comment says.
func TestTopReqErrPlan(t *testing.T) {
	p := newTopReqErrPlan(1)
	status := func(cqe []byte) [2]byte { return [2]byte{cqe[63] >> 4, cqe[55]} } // CQE opcode, syndrome
	// QP 0 at MTU 256 from 0x300: the SEND of 64 is 300 (ACKed), the
	// WRITE of 200 301, lost, resent at each of two timeouts (retry_cnt
	// 2), lost too; the third timeout fails it. QP 1 at MTU 512 from
	// FFFFFF: the WRITE of 600 is FFFFFF, 0 (ACKed), the refused WRITE 1
	// (NAK remote access error), the SEND of 30, WRITE of 7, SEND of 1
	// and WRITE of 2 one each, 2..5 (dropped by the far end in ERR). QP 2 at MTU 1024 from 7000: the WRITE of 1500 is 7000, 7001;
	// its list SEND never leaves.
	assert.Equal(t, [][]uint32{{0x300, 0x301, 0x301, 0x301}, {0xFFFFFF, 0, 1, 2, 3, 4, 5}, {0x7000, 0x7001}},
		[][]uint32{p.qps[0].psns, p.qps[1].psns, p.qps[2].psns})
	assert.Equal(t, 3, p.timeouts)
	// Send CQEs: an error's opcode 13 (MLX5_CQE_REQ_ERR) with mlx5's
	// syndrome: RETRY_EXC_ERR 0x15, REM_ACCESS_ERR 0x13, LOC_PROT_ERR
	// 0x04, WR_FLUSH_ERR 0x05; a success's opcode 0 (REQ), syndrome 0.
	want := [][][2]byte{
		{{0, 0}, {13, 0x15}, {13, 0x05}},
		{{0, 0}, {13, 0x13}, {13, 0x05}, {13, 0x05}, {13, 0x05}, {13, 0x05}, {13, 0x05}},
		{{0, 0}, {13, 0x04}, {13, 0x05}},
	}
	for q, qp := range p.qps {
		var got [][2]byte
		for _, c := range qp.cqes {
			got = append(got, status(c))
		}
		assert.Equal(t, want[q], got, "QP %d's send CQEs", q)
	}
	// Receive CQEs: QP 0's WQE 0 takes the SEND of 100 (RESP_SEND,
	// success, 100 bytes); at the ERR WQEs 1, 2, 3 flush, then 4 and 5
	// at their doorbell: WR_FLUSH_ERR, RESP_SEND, byte_len 0, the WQE's
	// index (hca.FlushRecvCQE). QP 1's WQEs 0, 1 and QP 2's WQE 0 flush
	// at their ERR.
	type rc struct {
		st  hca.WCStatus
		n   uint32
		idx uint16
	}
	fl := func(i uint16) rc { return rc{hca.WCWRFlushErr, 0, i} }
	wantR := [][]rc{{{hca.WCSuccess, 100, 0}, fl(1), fl(2), fl(3), fl(4), fl(5)}, {fl(0), fl(1)}, {fl(0)}}
	for q, qp := range p.qps {
		var got []rc
		for k, b := range qp.rcqes {
			c := hca.DecodeCQE(b)
			got = append(got, rc{c.Status, c.ByteCnt, c.Counter})
			assert.Equal(t, qp.it.qpn, c.QPN, "QP %d's receive CQE %d", q, k)
			assert.Equal(t, k, qp.rslots[k], "QP %d's receive CQE %d's slot", q, k)
			if c.Status == hca.WCWRFlushErr {
				// A flush is RESP_SEND in error: written RESP_ERR (14).
				assert.Equal(t, uint8(hca.CQERespErr), c.Opcode, "QP %d's receive CQE %d", q, k)
			}
		}
		assert.Equal(t, wantR[q], got, "QP %d's receive CQEs", q)
	}
	// The requests arriving for QP 0: the SEND of 100 (PSN 0, ACKed),
	// the SEND of 50 (PSN 1) after the ERR, dropped (rsp_errdrop): its
	// gate waits for QP 0's receive CQ (3) to hold the SEND's CQE and
	// the three flushes at the ERR. No NAK from the HCA's responders.
	require.Len(t, p.rx, 4, "the far end's requests in a list of their own")
	require.Len(t, p.rx[3], 2)
	assert.Equal(t, []int{0, topGateCQ(3, 4)}, []int{p.rx[3][0].gate, p.rx[3][1].gate})
	assert.Len(t, p.qps[0].acks, 1)
	assert.Equal(t, 1, p.rerrs)
	assert.Equal(t, 0, p.rnaks)
	// CQEs: send 3 + 7 + 3, receive 6 + 2 + 1.
	assert.Equal(t, 13+9, p.ncqe)
}

// TestTopReqErrCosim: the emitted hca_top (topRNRTree) flushes a QP's
// receive WQEs when its requester fails and drops what arrives for it
// after, as the model does (Icarus; seeds 1 and 2).
func TestTopReqErrCosim(t *testing.T) {
	topSeeds(t, topRNRTree, newTopReqErrPlan, func(t *testing.T, p *topPlan, res *topResult) {
		assert.Equal(t, 22, res.counters["cqes"])
		assert.Equal(t, 1, res.counters["rsp_errdrop"], "the SEND after the ERR")
		assert.Empty(t, topReqErrOrder(p, res))
		t.Logf("%s; the link's packets by QP: %s", res.summary, topQPOrder(res))
	})
}

// TestTopReqErrMutantsFail: each slip in the requester's ERR reaching the
// receive side fails the run (seed 1).
func TestTopReqErrMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	files := topRNRTree(t)
	const tr, rq, rs = "hca_transport.v", "hca_rq.v", "hca_responder.v"
	topMutantsFail(t, files, newTopReqErrPlan, []cosimMutant{
		// The signal not raised: no flush (the run stalls short of the
		// flush CQEs), the late SEND taken (an RNR NAK: no WQE left).
		{"hca_transport: the requester's ERR not wired to the responder", tr, ".req_err(req_qp_err)", ".req_err({(1<<QPN_W){1'b0}})"},
		// QP q's ERR taken as QP q+1's: QP 1's WQEs flushed at QP 0's
		// error, QP 0's never.
		{"hca_transport: the flush for the wrong QP", tr, ".req_err(req_qp_err)", ".req_err({req_qp_err[(1<<QPN_W)-2:0], req_qp_err[(1<<QPN_W)-1]})"},
		// WQE 2's flush answered with WQE 1's index: 1 flushed twice.
		{"hca_rq: a WQE flushed twice", rq, "assign rw_rsp_index = p_take;", "assign rw_rsp_index = pflush && p_take == 16'd2 ? 16'd1 : p_take;"},
		{"hca_responder: a flushed WQE skipped", rs, "                if (rw_rsp_ok) rc_valid <= 1'b1;\n", "                if (rw_rsp_ok && rw_rsp_index != 16'd2) rc_valid <= 1'b1;\n"},
		// A packet after the requester's ERR not dropped (the flush
		// done): the SEND of 50 finds no WQE left, an RNR NAK goes out.
		{"hca_responder: arrivals after the requester's ERR not dropped", rs, "end else if (q_err[ix]) begin", "end else if (ctx_err[ix]) begin"},
	})
}

// topReqErrOrder lists the receive CQEs flushed at a requester's ERR that
// reach the host before the send CQEs of that failure: its own (the first
// send CQE in error that is no flush) and the flushes of the messages
// behind it in the first batch (the walk's). hca.Device.requesterErr
// flushes the receive queue after the send side's CQEs; a QP's two CQs
// are apart in the bench, so only the order of the host's writes shows it.
func topReqErrOrder(p *topPlan, res *topResult) []string {
	first := map[int]int{} // a CQ ring block's first write, by its place among the host's writes
	for _, w := range res.cqw {
		if _, ok := first[w.blk]; !ok {
			first[w.blk] = w.seq
		}
	}
	var errs []string
	for q, qp := range p.qps {
		f := -1
		for k, c := range qp.cqes {
			if st := c[55]; c[63]>>4 == hca.CQEReqErr && st != 0x05 && f < 0 {
				f = k
			}
		}
		if f < 0 {
			continue
		}
		last := max(f+1, qp.need) // the failure's CQEs: f .. last-1
		nflush := -len(qp.lateRecv)
		for _, c := range qp.rcqes {
			if hca.DecodeCQE(c).Status == hca.WCWRFlushErr {
				nflush++
			}
		}
		for k := len(qp.rcqes) - len(qp.lateRecv) - nflush; k < len(qp.rcqes)-len(qp.lateRecv); k++ {
			rs, ok := first[topCQBlock(len(p.qps)+q)+qp.rslots[k]]
			if !ok {
				errs = append(errs, fmt.Sprintf("QP %d's receive CQE %d never written", q, k))
				continue
			}
			for s := f; s < last; s++ {
				if ss, ok := first[topCQBlock(q)+qp.slots[s]]; !ok || ss > rs {
					errs = append(errs, fmt.Sprintf("QP %d's receive CQE %d (flushed at the ERR) written before its send CQE %d (the failure's)", q, k, s))
				}
			}
		}
	}
	return errs
}

// TestTopReqErrOrderMutantFails: a requester that tells the responder of
// its ERR as the context goes there, before the failure's completions are
// out, lets a receive flush reach the host first (seed 1): the order
// check (topReqErrOrder) must report it.
func TestTopReqErrOrderMutantFails(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	files := topRNRTree(t)
	p := newTopReqErrPlan(1)
	res := p.run(t, t.Context(), t.TempDir(), 1, files, topMutated(t, files, "hca_requester.v",
		"qp_err[qe] = ctx_err[qe] && !(eng_busy", "qp_err[qe] = ctx_err[qe] || 1'b0 && !(eng_busy"))
	errs := topReqErrOrder(p, res)
	require.NotEmpty(t, errs, "the order check passes a requester whose ERR reaches the responder before its CQEs")
	t.Logf("fails: %s (judge: %d complaints)", strings.Join(errs[:min(3, len(errs))], "; "), len(p.judge(res)))
}
