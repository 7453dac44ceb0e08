package rtl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_top's requester retrying end to end: RNR NAKs, retries spent ----
//
// TestTopRNRCosim runs cosim_top_test.go's bench (topTB, newTopPlanRetries)
// on a design whose requester retries RNR NAKs (RNR_RETRY 2) and times
// out (RETRY_CNT 2, the local ACK timer of TestTopRetryCosim), on three
// QPs: the far end finds no receive WQE posted for a SEND twice, answers
// RNR NAK each time, and the requester waits the RNR timer and resends
// until the far end takes it; the far end never posts one for another
// QP's SEND, whose third RNR NAK spends the RNR retries
// (RNR_RETRY_EXC_ERR); the wire loses every copy of a third QP's WRITE,
// whose local ACK timer expires three times (RETRY_EXC_ERR). After each
// error the QP is in ERR and a WQE software posts after the error CQE
// completes with WR_FLUSH_ERR unsent. Expected values: the model's
// (hca.Requester.OnAck's RNR case and OnTimeout, hca.Responder's RNR NAK
// with the far end's min_rnr_timer), as TestTopRNRPlan derives.

const (
	topRNRRetryCnt = 2 // hca.retry_cnt of the run (RETRY_CNT)
	topRNRRetry    = 2 // hca.rnr_retry of the run (RNR_RETRY)
	// topRNRTick is RNR_TICK of the run, cycles in 10 us: the emitter
	// derives 10000 from the 1 GHz clock; 64 makes an RNR NAK of timer
	// code 2 (20 us: 2 units, hca.RNRTimerPS) wait 128 cycles and of code
	// 3 (30 us) 192, short of the local ACK timeout (1024 cycles: the
	// timer restarts at the rewind anyway) and long enough to see.
	topRNRTick = 64
)

// topRNRDesign is topRetryDesign with RETRY_CNT and RNR_RETRY 2.
func topRNRDesign() Design {
	d := topRetryDesign()
	d.RetryCnt, d.RNRRetry = topRNRRetryCnt, topRNRRetry
	return d
}

// topRNRTree is topRNRDesign's emitted tree with hca_top's ACK_TICK
// topAckTick and RNR_TICK topRNRTick.
func topRNRTree(t *testing.T) []File {
	t.Helper()
	files, err := Emit(topRNRDesign(), testVersion)
	require.NoError(t, err)
	for i, f := range files {
		if f.Name != "hca_top.v" {
			continue
		}
		for _, r := range [][2]string{
			{"parameter integer ACK_TICK       = 4096,", fmt.Sprintf("parameter integer ACK_TICK       = %d,", topAckTick)},
			{"parameter integer RNR_TICK       = 10000,", fmt.Sprintf("parameter integer RNR_TICK       = %d,", topRNRTick)},
		} {
			require.Equal(t, 1, strings.Count(files[i].Text, r[0]), "hca_top.v's %q", r[0])
			files[i].Text = strings.Replace(files[i].Text, r[0], r[1], 1)
		}
	}
	return files
}

// topRNRScenario is the run's QPs, each its own CQ.
func topRNRScenario() []*topQP {
	w := topWRs(0x7300_0000_0000, 7, 0xD0E0F000)
	return []*topQP{
		// RNR, recovered: a WRITE of 300 bytes, then a SEND of 200 that
		// the far end RNR-NAKs twice (timer code 2) before it has a
		// receive WQE for it; once both are complete, a SEND.
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000E40, dlid: 0x51, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xA0000, psn: 0x40, mtuCode: 1, cqn: 0},
			msgs:  []topMsg{{wr: w(hca.WRRDMAWrite, 0, 0x105, 300)}, {wr: w(hca.WRSend, 0, 0x800, 200)}, {wr: w(hca.WRSendImm, 0, 0xA00, 100)}},
			batch: 2, late: true, farRNR: 2, farRNRCode: 2},
		// RNR retries spent: a WRITE, then a SEND the far end never has a
		// receive WQE for (timer code 3): its third RNR NAK fails it with
		// RNR_RETRY_EXC_ERR; a WRITE posted after, flushed. PSNs wrap.
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001F41, dlid: 0x52, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xA0001, psn: 0xFFFFFF, mtuCode: 2, cqn: 1},
			msgs:  []topMsg{{wr: w(hca.WRRDMAWrite, 1, 0x33, 50)}, {wr: w(hca.WRSend, 1, 0x400, 100)}, {wr: w(hca.WRRDMAWrite, 1, 0x900, 10)}},
			batch: 2, late: true, farRNR: -1, farRNRCode: 3},
		// Retries spent: a SEND, then a WRITE of 500 bytes the wire loses
		// every time it is sent (its packets 1, 2, 3): three local ACK
		// timeouts, the third with none of RETRY_CNT left:
		// RETRY_EXC_ERR; a SEND posted after, flushed.
		{it: &reqItem{cfg: true, qix: 2, qpn: 0x002A42, dlid: 0x53, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xA0002, psn: 0x9000, mtuCode: 3, cqn: 2},
			msgs:  []topMsg{{wr: w(hca.WRSend, 2, 0x10, 64)}, {wr: w(hca.WRRDMAWrite, 2, 0x200, 500)}, {wr: w(hca.WRSend, 2, 0x1000, 20)}},
			batch: 2, late: true, lose: []int{1, 2, 3}},
	}
}

func newTopRNRPlan(seed uint64) *topPlan {
	p := newTopPlanRetries(seed, topRNRScenario(), topRNRRetryCnt, topRNRRetry, true)
	p.rnrTick = topRNRTick
	return p
}

// TestTopRNRPlan: the model does in the scenario what its comment says.
func TestTopRNRPlan(t *testing.T) {
	p := newTopRNRPlan(1)
	status := func(cqe []byte) [2]byte { return [2]byte{cqe[63] >> 4, cqe[55]} } // CQE opcode, syndrome
	var psns [][]uint32
	for _, qp := range p.qps {
		psns = append(psns, qp.psns)
	}
	// QP 0 at MTU 256 from 0x40: the WRITE of 300 is 40, 41 (AckReq on
	// 41: ACKed), the SEND of 200 is 42: RNR NAK (0x20 | 2) at 42, resent
	// after the RNR timer, RNR NAK again (the far end's counter: 2), sent
	// a third time and taken (rnr_retry 2: two NAKs spent, none left, but
	// the third try is ACKed). Then the late SEND with immediate, 43.
	// QP 1 at MTU 512 from FFFFFF: the WRITE of 50 is FFFFFF (ACKed), the
	// SEND 0, RNR-NAKed three times (timer code 3): two retries spent,
	// the third NAK finds none left: RNR_RETRY_EXC_ERR. The late WRITE is
	// flushed unsent. QP 2 at MTU 1024 from 9000: the SEND of 64 is 9000
	// (ACKed), the WRITE of 500 9001, lost, then resent at each timeout
	// while retries are left (retry_cnt 2): two resends, lost too; the
	// third timeout fails it: RETRY_EXC_ERR. The late SEND flushed.
	assert.Equal(t, [][]uint32{{0x40, 0x41, 0x42, 0x42, 0x42, 0x43}, {0xFFFFFF, 0, 0, 0}, {0x9000, 0x9001, 0x9001, 0x9001}}, psns)
	assert.Equal(t, 3, p.timeouts)
	// NAKs that hca_rx_ack counts on rx_nak_retry (sequence error and
	// RNR): QP 0's 2 and QP 1's 3.
	assert.Equal(t, 2+3, p.naks)
	rnr := map[int][]byte{}
	for q, rx := range p.rx[:3] {
		for _, a := range rx {
			if !a.isRsp() && a.syn&0xE0 == hca.SynRNRNAK {
				rnr[q] = append(rnr[q], a.syn)
			}
		}
	}
	assert.Equal(t, map[int][]byte{0: {0x22, 0x22}, 1: {0x23, 0x23, 0x23}}, rnr)
	// The RNR NAKs the requester resends after (judgeRNRWaits times
	// them): QP 0's two, QP 1's first two (its third fails the SEND).
	assert.Len(t, p.qps[0].rnrResend, 2)
	assert.Len(t, p.qps[1].rnrResend, 2)
	// CQEs: an error CQE's opcode is 13 (MLX5_CQE_REQ_ERR) and its
	// syndrome mlx5's: RNR_RETRY_EXC_ERR 0x16, RETRY_EXC_ERR 0x15,
	// WR_FLUSH_ERR 0x05; a success's opcode 0 (REQ), or 0 with syndrome 0.
	want := [][][2]byte{
		{{0, 0}, {0, 0}, {0, 0}},
		{{0, 0}, {13, 0x16}, {13, 0x05}},
		{{0, 0}, {13, 0x15}, {13, 0x05}},
	}
	for q, qp := range p.qps {
		var got [][2]byte
		for _, c := range qp.cqes {
			got = append(got, status(c))
		}
		assert.Equal(t, want[q], got, "QP %d's CQEs", q)
	}
	// The late batches wait for the first batches' CQEs: 2 each.
	assert.Equal(t, []int{2, 2, 2}, []int{p.qps[0].need, p.qps[1].need, p.qps[2].need})
}

// TestTopRNRCosim: the emitted hca_top (topRNRTree) waits out RNR NAKs and
// resends, spends its RNR retries and its local ACK timeouts, and
// completes with the model's CQEs (Icarus; seeds 1 and 2).
func TestTopRNRCosim(t *testing.T) {
	topSeeds(t, topRNRTree, newTopRNRPlan, func(t *testing.T, p *topPlan, res *topResult) {
		// The RNR waits judge timed: code 2 (QP 0) 128 cycles at
		// least, code 3 (QP 1) 192.
		_, gaps := p.judgeRNRWaits(res)
		assert.Len(t, gaps, 4, "resends after RNR NAKs timed")
		t.Logf("%s; the link's packets by QP: %s; RNR NAK to resend: %v cycles", res.summary, topQPOrder(res), gaps)
	})
}
