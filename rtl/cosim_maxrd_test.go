package rtl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_requester's max_rd_atomic <-> hca.Requester.HasWork's ----
//
// The response run's machinery (newRspGen, retryCheck) on a directed run
// with hca.max_rd_atomic 2: the emitted hca_transport's RD_RES (so
// hca_requester's MAX_RD_ATOMIC) and the model requesters' MaxRdAtomic.
// The model sends a READ or atomic only while fewer than 2 READs and
// atomics sent at least once are not yet retired (HasWork; the count
// falls when retire pops one, in order, and is 0 again after a failure),
// and everything behind a held one waits (its send queue is in order).
// The responses' gates count the packets the model has sent, so the run
// stalls if the RTL holds a WQE the model sends; the replay fails a
// commit the model has no packet for, so an RTL that sends a held READ
// or atomic fails there.

// maxRdPlanLimit is the run's hca.max_rd_atomic.
const maxRdPlanLimit = 2

// newMaxRdPlan builds the run (MTU m, PSNs mod 2^24; every WQE
// signaled).
func newMaxRdPlan() *rspPlan { return newMaxRdPlanOf(maxRdPlanLimit) }

// newMaxRdPlanOf builds it with the model's MaxRdAtomic limit (0:
// unlimited, for TestMaxRdPlan's control).
func newMaxRdPlanOf(limit int) *rspPlan {
	p, wqe, deliver, drain := newRspGen([]*reqItem{
		{cfg: true, qix: 0, qpn: 0x7890, dlid: 0x41, slid: 0x51, sl: 2, vl: 1, rqpn: 0xE0000, psn: 0x000010, mtuCode: 1, cqn: 2, maxRd: limit},
		{cfg: true, qix: 1, qpn: 0x7891, dlid: 0x42, slid: 0x52, sl: 6, vl: 2, rqpn: 0xE0001, psn: 0x000200, mtuCode: 3, cqn: 5, maxRd: limit},
	})
	p.rdRes = limit
	run := p.run
	mark, item, gate := p.markAck, p.markItem, p.gateFrom
	// Phase 1, context 0, MTU 256, from 000010: R1 a READ of 300 B
	// (⌈300/256⌉ = 2 PSNs, 000010..000011; count 1), R2 a READ of 100 B
	// (000012; count 2), S1 a SEND of 20 B (000013: a SEND is not held by
	// the count), A1 a fetch and add (000014: held, 2 >= 2) and W1 a WRITE
	// of 100 B (000015: held behind A1). The model sends R1, R2, S1.
	wqe(0, hca.WRRDMARead, 300, 0x10_0000, true)
	wqe(0, hca.WRRDMARead, 100, 0x11_0000+5, true)
	wqe(0, hca.WRSend, 20, 0x12_0000, true)
	item("S1")
	wqe(0, hca.WRFetchAdd, 8, 0x13_0000+8, true)
	item("A1")
	wqe(0, hca.WRRDMAWrite, 100, 0x14_0000, true)
	item("W1")
	drain()
	// R1's FIRST (256 B) and LAST (300 − 256 = 44 B): R1 completes and
	// retires (count 1), so A1 and W1 go. Then R2's ONLY, ACKs for S1,
	// A1's atomic ACK, an ACK for W1.
	deliver(0, readRsp(0, 2, 0x000010, 256, false))
	mark("r1first")
	deliver(0, readRsp(1, 2, 0x000011, 44, false))
	mark("r1last")
	deliver(0, readRsp(0, 1, 0x000012, 100, false))
	deliver(0, reqAck{psn: 0x000013, syn: hca.SynACK})
	deliver(0, atomicAck(0x000014, 0x0A0B0C0D01020304, false))
	deliver(0, reqAck{psn: 0x000015, syn: hca.SynACK})
	// Phase 2, context 0, from 000016: R3 and R4 READs of 100 B (000016,
	// 000017; count 2) and A2 a compare and swap (000018: held). R4's
	// response comes first (R3's lost): R4 is done but not retired (R3 is
	// ahead of it), so the count stays 2, and the implied NAK resends R3
	// (000016 again; the rewind steps over the done R4 and does not count
	// R3 again). R3's response retires R3 and R4: count 0, A2 goes.
	k := len(run.items)
	wqe(0, hca.WRRDMARead, 100, 0x15_0000, true)
	wqe(0, hca.WRRDMARead, 100, 0x16_0000+3, true)
	wqe(0, hca.WRCompSwap, 8, 0x17_0000, true)
	item("A2")
	gate(k)
	drain()
	deliver(0, readRsp(0, 1, 0x000017, 100, false))
	mark("r4")
	deliver(0, readRsp(0, 1, 0x000016, 100, false))
	mark("r3")
	deliver(0, atomicAck(0x000018, 0x1122334455667788, false))
	// Phase 3, context 1, MTU 1024, from 000200: R5 a READ of 2000 B
	// (⌈2000/1024⌉ = 2 PSNs, 000200..000201; count 1), A3 a fetch and add
	// (000202; count 2), R6 a READ of 10 B (000203: held). A NAK (remote
	// access error) at 000200 fails R5 (REM_ACCESS_ERR): the QP goes to
	// ERR, A3 and the held R6 are flushed (WR_FLUSH_ERR), R6 never sent.
	k = len(run.items)
	wqe(1, hca.WRRDMARead, 2000, 0x20_0000, true)
	wqe(1, hca.WRFetchAdd, 8, 0x21_0000, true)
	wqe(1, hca.WRRDMARead, 10, 0x22_0000, true)
	gate(k)
	drain()
	deliver(1, reqAck{psn: 0x000200, syn: hca.SynNAKAccess})
	// Control: every handshake ready (wr0's too, bit 10), every VL's
	// credit plenty, a WQE or ACK offered whenever one is due.
	for range 1500 {
		run.ctrl = append(run.ctrl, [5]uint64{0x71f, 2048, 2048, 2048, 2048})
	}
	return p
}

// maxRdStatus: phase 1's R1, R2, S1, A1, W1 and phase 2's R3, R4, A2
// succeed; R5 fails with REM_ACCESS_ERR, A3 and R6 are flushed.
func maxRdStatus() []hca.WCStatus {
	return append(make([]hca.WCStatus, 8), hca.WCRemAccessErr, hca.WCWRFlushErr, hca.WCWRFlushErr)
}

// TestMaxRdPlan: the model does in the run what the plan's comments
// derive.
func TestMaxRdPlan(t *testing.T) {
	p := newMaxRdPlan()
	assert.Equal(t, []uint32{0x10, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x16, 0x18}, p.psns[0], "context 0")
	assert.Equal(t, []uint32{0x200, 0x202}, p.psns[1], "context 1")
	assert.Equal(t, maxRdStatus(), p.status, "completion statuses")
	// Control: without the limit the model sends A1 and W1 right behind
	// R1, R2 and S1, A2 right behind R3 and R4 (and again after R3 in the
	// implied NAK's rewind, as A2 has no answer yet), and R6 behind R5 and
	// A3; the statuses are the same. So the run's PSNs show the limit.
	q := newMaxRdPlanOf(0)
	assert.Equal(t, []uint32{0x10, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x16, 0x18}, q.psns[0], "context 0, no limit")
	assert.Equal(t, []uint32{0x200, 0x202, 0x203}, q.psns[1], "context 1, no limit")
	assert.Equal(t, maxRdStatus(), q.status, "completion statuses, no limit")
}

// TestRequesterMaxRdAtomicCosim: hca_requester holds a READ or atomic (and
// what is behind it) while its context has MAX_RD_ATOMIC READs and atomics
// taken and not retired, as the model's requester does; each mutant of the
// rule fails the run.
func TestRequesterMaxRdAtomicCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	f := "hca_requester.v"
	hold := "wire                rda_hold = is_rdat && {{(32-PW){1'b0}}, d_nrd} >= MAX_RD_ATOMIC;"
	count := "if (rj[PW-1:0] < d_tl - d_hd && oq_rd[{dix, d_hd[OQ_W-1:0] + rj[OQ_W-1:0]}])"
	runRspCases(t, newMaxRdPlan, []rspCase{
		{name: "unmutated"},
		{name: "unmutated, stalled, seed 1"},
		{name: "unmutated, stalled, seed 2"},
		{"the limit off by one", f, hold, "wire                rda_hold = is_rdat && {{(32-PW){1'b0}}, d_nrd} > MAX_RD_ATOMIC;"},
		{"no limit", f, hold, "wire                rda_hold = 1'b0;"},
		{"the count never falls (every slot's READ bit, retired ones too)", f, count,
			"if (oq_rd[{dix, rj[OQ_W-1:0]}])"},
		{"the count falls at a READ's answer, not at its retirement", f, count,
			"if (rj[PW-1:0] < d_tl - d_hd && oq_rd[{dix, d_hd[OQ_W-1:0] + rj[OQ_W-1:0]}] && !oq_done[{dix, d_hd[OQ_W-1:0] + rj[OQ_W-1:0]}])"},
		{"a SEND or WRITE held too", f, hold, "wire                rda_hold = {{(32-PW){1'b0}}, d_nrd} >= MAX_RD_ATOMIC;"},
	}, func(t *testing.T, p *rspPlan, res *retryResult) {
		assert.Equal(t, maxRdStatus(), res.status, "completion statuses on cpl_*")
		require.Len(t, res.commitAt[0], 9, "context 0's commits")
		require.Len(t, res.commitAt[1], 2, "context 1's commits")
		// S1 is not held: committed before R1's FIRST is taken. A1 is
		// taken only after R1's LAST (which retires R1), A2 only after
		// R3's response (R4's, which left R4 done behind R3, did not
		// free a slot).
		assert.Less(t, res.commitAt[0][2], res.ackAt[p.marks["r1first"]], "S1's commit before R1's FIRST is taken")
		assert.Greater(t, res.takeAt[p.marks["A1"]], res.ackAt[p.marks["r1last"]], "A1 taken after R1's LAST")
		assert.Greater(t, res.takeAt[p.marks["W1"]], res.ackAt[p.marks["r1last"]], "W1 (behind A1) taken after R1's LAST")
		assert.Greater(t, res.takeAt[p.marks["A2"]], res.ackAt[p.marks["r3"]], "A2 taken after R3's response")
		t.Logf("R1's LAST taken at cycle %d, A1 taken at %d and committed at %d; R4's response at %d, R3's at %d, A2 taken at %d",
			res.ackAt[p.marks["r1last"]], res.takeAt[p.marks["A1"]], res.commitAt[0][3], res.ackAt[p.marks["r4"]],
			res.ackAt[p.marks["r3"]], res.takeAt[p.marks["A2"]])
	})
}

// newMaxRdOnePlan is a second run at hca.max_rd_atomic 1 (one READ or
// atomic out per context; MTU 512, from 000010, every WQE signaled):
// R1 a READ of 600 B (⌈600/512⌉ = 2 PSNs, 000010..000011; count 1), A1 a
// compare and swap (000012: held) and S1 a SEND of 30 B behind it
// (000013: held, in order). R1's FIRST (512 B) and LAST (88 B) retire R1:
// A1 and S1 go. A1's atomic ACK, then an ACK for S1 (after A1's answer:
// an ACK past an unanswered atomic would be the implied NAK). Then W1 a
// WRITE of 50 B (000014), R2 a READ of 64 B (000015; count 1) and R3 a
// READ of 64 B (000016: held until R2's response retires R2).
func newMaxRdOnePlan() *rspPlan {
	p, wqe, deliver, drain := newRspGen([]*reqItem{
		{cfg: true, qix: 0, qpn: 0x2460, dlid: 0x31, slid: 0x61, sl: 4, vl: 3, rqpn: 0xF0000, psn: 0x000010, mtuCode: 2, cqn: 1, maxRd: 1},
	})
	p.rdRes = 1
	run := p.run
	mark, item := p.markAck, p.markItem
	wqe(0, hca.WRRDMARead, 600, 0x40_0000, true)
	wqe(0, hca.WRCompSwap, 8, 0x41_0000, true)
	item("A1")
	wqe(0, hca.WRSend, 30, 0x42_0000+9, true)
	item("S1")
	drain()
	deliver(0, readRsp(0, 2, 0x000010, 512, false))
	deliver(0, readRsp(1, 2, 0x000011, 88, false))
	mark("r1last")
	deliver(0, atomicAck(0x000012, 0x5566778899AABBCC, false))
	deliver(0, reqAck{psn: 0x000013, syn: hca.SynACK})
	k := len(run.items)
	wqe(0, hca.WRRDMAWrite, 50, 0x43_0000, true)
	wqe(0, hca.WRRDMARead, 64, 0x44_0000, true)
	wqe(0, hca.WRRDMARead, 64, 0x45_0000+1, true)
	item("R3")
	for _, it := range run.items[k:] {
		it.gate = len(run.acks)
	}
	drain()
	deliver(0, reqAck{psn: 0x000014, syn: hca.SynACK})
	deliver(0, readRsp(0, 1, 0x000015, 64, false))
	mark("r2")
	deliver(0, readRsp(0, 1, 0x000016, 64, false))
	for range 1000 {
		run.ctrl = append(run.ctrl, [5]uint64{0x71f, 2048, 2048, 2048, 2048})
	}
	return p
}

// TestMaxRdOnePlan: the model does in the second run what its comment
// derives: R1; A1, S1 after R1's answer; W1, R2; R3 after R2's; all
// six succeed.
func TestMaxRdOnePlan(t *testing.T) {
	p := newMaxRdOnePlan()
	assert.Equal(t, []uint32{0x10, 0x12, 0x13, 0x14, 0x15, 0x16}, p.psns[0], "context 0")
	assert.Equal(t, make([]hca.WCStatus, 6), p.status, "completion statuses")
	// The order per context is the same without the limit; the gates
	// show it: R1's LAST is offered once the model has sent 1 packet
	// (R1's request; A1 and S1 held), R2's response once it has sent 5
	// (R3 held), where without the limit they would wait for 3 and 6.
	assert.Equal(t, 1, p.run.acks[p.marks["r1last"]].gate, "packets before R1's LAST")
	assert.Equal(t, 5, p.run.acks[p.marks["r2"]].gate, "packets before R2's response")
}

// TestRequesterMaxRdAtomicOneCosim: the limit at 1 (MAX_RD_ATOMIC 1): a
// READ or atomic and the SEND behind it wait for the one before to retire.
func TestRequesterMaxRdAtomicOneCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	runRspCases(t, newMaxRdOnePlan, []rspCase{
		{name: "unmutated"},
		{"the limit off by one", "hca_requester.v", "wire                rda_hold = is_rdat && {{(32-PW){1'b0}}, d_nrd} >= MAX_RD_ATOMIC;",
			"wire                rda_hold = is_rdat && {{(32-PW){1'b0}}, d_nrd} > MAX_RD_ATOMIC;"},
	}, func(t *testing.T, p *rspPlan, res *retryResult) {
		assert.Equal(t, make([]hca.WCStatus, 6), res.status, "completion statuses on cpl_*")
		assert.Greater(t, res.takeAt[p.marks["A1"]], res.ackAt[p.marks["r1last"]], "A1 taken after R1's LAST")
		assert.Greater(t, res.takeAt[p.marks["S1"]], res.ackAt[p.marks["r1last"]], "S1 (behind A1) taken after R1's LAST")
		assert.Greater(t, res.takeAt[p.marks["R3"]], res.ackAt[p.marks["r2"]], "R3 taken after R2's response")
	})
}
