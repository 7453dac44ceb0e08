package rtl

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_responder's SEND and WRITE with immediate <-> hca.Responder ----
//
// A respsend run is a respRun with SENDs (FIRST/MIDDLE/LAST/ONLY, with and
// without immediate) and RDMA WRITEs with immediate among the WRITEs, and
// receive WQEs posted to the QPs' receive queues before them (the stream's
// post entries; now and then none, so the responder answers RNR NAK, or one
// whose buffer is too small or whose L_Key fails a rule). The model's
// hca.Responder takes them through respEnv.PopRecv and CheckLKey (as
// hca.QP's); its receive completions (RespAction.RecvDone) must be the
// ones hca_responder gives on rc_*, in order, each after the writes
// before it, beside the ACKs, NAKs, host bytes and counters respRun.check
// compares.

// newRespRunSends is newRespRun with SENDs and WRITEs with immediate
// (their random draws only in such runs, so newRespRun's are unchanged),
// and one region per PD with LOCAL_WRITE only (a receive buffer's L_Key
// passes there, an R_Key for REMOTE_WRITE would not).
func newRespRunSends(seed uint64, coalesce int) *respRun {
	run := newRespRun(seed, coalesce)
	run.sends = true
	for i := range 3 {
		base := uint64(0x5_0000_0000) + uint64(i)<<28 + uint64(run.r.IntN(1<<12))<<12
		run.localRegions = append(run.localRegions, run.table.Register(run.pds[i], base, uint64(16384+run.r.IntN(1<<14)), hca.AccessLocalWrite))
	}
	return run
}

// msgBytes is the payload of q's message under way.
func (q *respQP) msgBytes() uint32 {
	n := 0
	for _, p := range q.msg {
		n += len(p.pay)
	}
	return uint32(n)
}

// postRecv posts a receive WQE to q for a message of n bytes: one scatter
// element in a region of q's PD with LOCAL_WRITE, n to n + 299 bytes long,
// or (1 in 12) shorter than n (the responder's LOC_LEN_ERR); 1 in 30 each
// an L_Key that fails a rule (a stale variant, another PD's region, a
// region without LOCAL_WRITE, one byte past the end, a deregistered
// region); 1 in 5 in the PD's region with LOCAL_WRITE only.
func (run *respRun) postRecv(q *respQP, n uint32) {
	r := run.r
	if run.lists && r.IntN(2) == 0 {
		run.postRecvList(q, n)
		return
	}
	if len(q.rq) >= 48 {
		return // the testbench's queue holds 64
	}
	mr := run.region(q.pd)
	if r.IntN(5) == 0 {
		mr = run.localRegions[pdIndex(run.pds, q.pd)]
	}
	blen := n + uint32(r.IntN(300))
	if n > 0 && r.IntN(12) == 0 {
		blen = uint32(r.IntN(int(n)))
	}
	blen = min(blen, uint32(mr.Length))
	addr, lkey := mr.Addr+uint64(r.IntN(int(mr.Length)-int(blen)+1)), mr.LKey
	switch r.IntN(30) {
	case 0:
		lkey ^= uint32(1 + r.IntN(255))
	case 1:
		o := run.region(run.pds[(r.IntN(2)+1+pdIndex(run.pds, q.pd))%3])
		addr, lkey = o.Addr, o.LKey
	case 2:
		addr, lkey = run.regions[8].Addr, run.regions[8].LKey
	case 3:
		blen = max(blen, 1)
		addr = mr.Addr + mr.Length - uint64(blen) + 1
	case 4:
		addr, lkey = run.regions[9].Addr, run.regions[9].LKey
	}
	run.post(q, hca.RecvWQE{Index: q.rqIdx, Length: blen, LKey: lkey, Addr: addr})
}

// post appends w to q's receive queue and a post entry to the stream. The
// testbench takes a post only with the responder idle, so the packet
// before it closes with a gap (its coalesced ACK flushed, as the
// responder then flushes it).
func (run *respRun) post(q *respQP, w hca.RecvWQE) {
	run.postAs(q, w, hca.RecvWR{Addr: w.Addr, Length: w.Length, LKey: w.LKey})
}

// postWR posts the receive WR a driver writes as wr (one data segment,
// hca.EncodeRecvWQE): the stream carries the segment's fields, the
// model's queue the WQE hca.DecodeRecvWQE reads from them (for mlx5's
// empty list, 0 bytes and MLX5_INVALID_LKEY, no element).
func (run *respRun) postWR(q *respQP, wr hca.RecvWR) {
	var b [hca.RecvWQEBytes]byte
	hca.EncodeRecvWQE(b[:], &wr)
	w := hca.DecodeRecvWQE(b[:])
	w.Index = q.rqIdx
	run.postAs(q, w, wr)
}

// postAs is post with seg the data segment the stream carries for w.
func (run *respRun) postAs(q *respQP, w hca.RecvWQE, seg hca.RecvWR) {
	if prev := run.stream[len(run.stream)-1]; !prev.cfg && !prev.post && !prev.elem && !prev.gap {
		prev.gap = true
		for _, o := range run.qps {
			if o != nil && o.qpn == prev.qpn {
				if psn, msn, ok := o.resp.FlushAck(); ok {
					run.byKind["flushed ACK"]++
					run.ack(o, hca.SynACKNoLimit, psn, msn)
				}
			}
		}
	}
	q.rqIdx++
	if q.resp.State == hca.QPErr {
		// Posted to a QP in ERR: flushed at its doorbell
		// (hca.Device.recvDoorbell, flushRecvs).
		run.flushRecv(q, w, "posted in ERR")
	} else {
		q.rq = append(q.rq, w)
	}
	nsge := 1
	if w.SGL != nil {
		nsge = len(w.SGL)
	}
	run.stream = append(run.stream, &respPkt{post: true, qpn: q.qpn, idx: w.Index & 0xffff, va: seg.Addr, dlen: seg.Length, rkey: seg.LKey, nsge: nsge})
	if nsge >= 2 {
		// The list's elements, as hca_rq's store holds them (rw_sge_*).
		for k, e := range w.SGL {
			run.stream = append(run.stream, &respPkt{elem: true, qpn: q.qpn, idx: w.Index & 0xffff, k: k, va: e.Addr, dlen: e.Length, rkey: e.LKey})
		}
	}
}

// flushRecv completes w, a receive WQE of q's queue not consumed, with
// WR_FLUSH_ERR: the CQE hca.Device.flushRecvs writes (hca.FlushRecvCQE).
func (run *respRun) flushRecv(q *respQP, w hca.RecvWQE, when string) {
	c := hca.FlushRecvCQE(q.qpn, w.Index)
	run.cqes = append(run.cqes, respCQE{c.QPN, uint32(c.Opcode), uint32(c.Status), uint32(c.Counter), c.ByteCnt, c.Imm})
	run.cqeAfter = append(run.cqeAfter, run.writes)
	run.byKind["receive WQE flushed, "+when]++
}

// sendOps are the SEND opcodes of a message of one packet and of several,
// without and with immediate data.
var sendOps = [2][4]ib.Opcode{
	{ib.SendOnly, ib.SendFirst, ib.SendMiddle, ib.SendLast},
	{ib.SendOnlyImm, ib.SendFirst, ib.SendMiddle, ib.SendLastImm},
}

// sendOp is packet i's opcode in an n-packet SEND, with immediate data
// (imm 1) or without (0).
func sendOp(imm, i, n int) ib.Opcode {
	switch {
	case n == 1:
		return sendOps[imm][0]
	case i == 0:
		return sendOps[imm][1]
	case i == n-1:
		return sendOps[imm][3]
	}
	return sendOps[imm][2]
}

// rqStandInDecl declares the receive queues' stand-in the responder
// testbenches (respTB, respWireTB) answer rw_* from: 4 contexts of 64
// WQEs, {index, address, length, L_Key} each in rqm and its elements in
// rqn (hca_rq's rw_rsp_nsge: the elements hca.DecodeRecvWQE finds), a
// list's elements {length, L_Key, address} in rqe by {context, index mod
// 64, element} (read on rw_sge_*, as hca_rq's store, combinationally), and
// the receive completion wires rc_*; rqStandInStep is its clocked part,
// in the bench's always block (a request taken while idle, answered after
// 0..3 cycles, the WQE taken with the answer when one is posted).
const rqStandInDecl = `    reg [143:0] rqm [0:255];
    reg [5:0] rqn [0:255];
    reg [127:0] rqe [0:8191];
    wire rw_sge_valid;
    wire [1:0] rw_sge_q;
    wire [15:0] rw_sge_index;
    wire [4:0] rw_sge_k;
    wire [127:0] rw_e = rqe[{rw_sge_q, rw_sge_index[5:0], rw_sge_k}];
    reg [6:0] rq_head [0:3];
    reg [6:0] rq_tail [0:3];
    reg rw_busy, rnd_rc;
    reg [1:0] rw_slot;
    integer rw_lat;
    wire rw_req_valid, rw_rsp_ready;
    wire [23:0] rw_req_qpn;
    wire rw_rsp_valid = rw_busy && rw_lat == 0;
    wire rw_ok = rq_head[rw_slot] != rq_tail[rw_slot];
    wire [143:0] rw_w = rqm[{rw_slot, rq_head[rw_slot][5:0]}];
    wire [5:0] rw_n = rqn[{rw_slot, rq_head[rw_slot][5:0]}];
    wire rc_valid;
    wire [23:0] rc_qpn;
    wire [3:0] rc_opcode;
    wire [7:0] rc_status;
    wire [15:0] rc_index;
    wire [31:0] rc_len, rc_imm;
    // The flush (hca_rq's rw_flush): a context in ERR with WQEs not taken; a flush take pops one.
    wire rw_req_flush;
    wire [3:0] qp_err;
    wire [3:0] rw_flush = {qp_err[3] && rq_head[3] != rq_tail[3], qp_err[2] && rq_head[2] != rq_tail[2],
                           qp_err[1] && rq_head[1] != rq_tail[1], qp_err[0] && rq_head[0] != rq_tail[0]};
`

const rqStandInStep = `        if (rw_req_valid && !rw_busy) begin
            rw_busy <= 1'b1; rw_slot <= rw_req_qpn[1:0]; rw_lat <= ($random(seed) & 32'h7fffffff) % 4;
        end else if (rw_rsp_valid && rw_rsp_ready) begin
            rw_busy <= 1'b0;
            if (rw_ok) rq_head[rw_slot] <= rq_head[rw_slot] + 7'd1;
        end else if (rw_busy && rw_lat != 0) rw_lat <= rw_lat - 1;
`

// newSend starts a SEND of 0..3 MTUs on q (as message builds a WRITE's
// packets), with immediate data half the time, a receive WQE posted for it
// 7 times in 8 (and a second one now and then, so the queue holds more).
func (run *respRun) newSend(q *respQP) {
	r := run.r
	n := uint32(r.IntN(3*q.mtu + 1))
	if r.IntN(6) == 0 {
		n = uint32(r.IntN(200))
	}
	if r.IntN(8) != 0 {
		run.postRecv(q, n)
		if r.IntN(6) == 0 {
			run.postRecv(q, uint32(r.IntN(3*q.mtu+1)))
		}
	}
	run.message(q, 0, 0, n)
	imm := r.IntN(2)
	for i, p := range q.msg {
		p.va, p.rkey, p.dlen = 0, 0, 0
		p.op = sendOp(imm, i, len(q.msg))
		// ImmDt only with an opcode that has one; the others carry
		// bytes there too (the RTL's rq_imm is a field, always driven),
		// which the model ignores and the CQE must not show.
		p.imm = r.Uint32()
	}
}

// withImm turns q's WRITE into a WRITE with immediate (its LAST or ONLY),
// a receive WQE posted for it 7 times in 8.
func (run *respRun) withImm(q *respQP) {
	r := run.r
	l := q.msg[len(q.msg)-1]
	l.op = ib.RDMAWriteLastImm
	if len(q.msg) == 1 {
		l.op = ib.RDMAWriteOnlyImm
	}
	l.imm = r.Uint32()
	if r.IntN(8) != 0 {
		run.postRecv(q, 0)
	}
}

// recvKind counts the model's decisions about receive WQEs.
func (run *respRun) recvKind(a hca.RespAction) {
	switch {
	case a.Ack && a.AckSyn&0xE0 == hca.SynRNRNAK:
		run.byKind["RNR NAK"]++
	case a.Ack && a.AckSyn == hca.SynNAKOpErr:
		run.byKind["L_Key "+a.KeyResult.String()]++
	}
	if a.RecvDone {
		run.byKind[fmt.Sprintf("receive CQE opcode %d %s", a.RecvOpcode, a.RecvStatus)]++
	}
}

// respSendDirected is the directed SEND run on context 0 (MTU 256, from
// case 9 on 512 and 1024: the length rules; PD 0's region 0, min_rnr_timer
// 14, ACK_COALESCE 1), each case's completions, ACKs and bytes derived by
// hand in TestResponderSendDirectedCosim.
func respSendDirected(seed uint64) (run *respRun, qpn, p0 uint32, q12 []uint32) {
	run = newRespRunSends(seed, 1)
	const rnr = 14
	q := run.directedStart(256, rnr)
	qpn, p0 = q.qpn, q.next
	mr := run.regions[0] // PD 0's, LOCAL_WRITE and REMOTE_WRITE
	sendAll := func() {
		for _, p := range q.msg {
			run.send(q, p)
		}
	}
	post := func(off uint64, n, lkey uint32) {
		run.post(q, hca.RecvWQE{Index: q.rqIdx, Length: n, LKey: lkey, Addr: mr.Addr + off})
	}
	// send builds a SEND of n bytes (AckReq on its last packet only).
	send := func(n uint32, imm bool, immDt uint32) {
		run.message(q, 0, 0, n)
		k := 0
		if imm {
			k = 1
		}
		for i, p := range q.msg {
			p.va, p.rkey, p.dlen, p.ackReq, p.imm = 0, 0, 0, i == len(q.msg)-1, immDt
			p.op = sendOp(k, i, len(q.msg))
		}
	}
	reconfig := func(mtu int) {
		q = run.directedReconfig(mtu, rnr)
		q12 = append(q12, q.next)
	}
	// 1: WQE 0 (1000 bytes at +0x100); a SEND ONLY with immediate of 100 bytes.
	post(0x100, 1000, mr.LKey)
	send(100, true, 0xdeadbeef)
	sendAll()
	// 2: a SEND of 600 bytes (FIRST 256, MIDDLE 256, LAST 88) with no WQE
	// posted; then WQE 1 (exactly 600 bytes at +0x1000+13) and the resend.
	send(600, false, 0x1234)
	sendAll()
	post(0x1000+13, 600, mr.LKey)
	sendAll()
	// 3: a WRITE ONLY with immediate of 64 bytes at +0x2000, no WQE; then
	// WQE 2 and the resend.
	run.message(q, mr.Addr+0x2000, mr.RKey, 64)
	q.msg[0].op, q.msg[0].imm, q.msg[0].ackReq = ib.RDMAWriteOnlyImm, 7, true
	sendAll()
	post(0, 0, mr.LKey)
	sendAll()
	// 4: WQE 3; a WRITE of 300 bytes at +0x3000, FIRST 256 then LAST with
	// immediate 44.
	post(0, 0, mr.LKey)
	run.message(q, mr.Addr+0x3000, mr.RKey, 300)
	q.msg[0].ackReq = false
	q.msg[1].op, q.msg[1].imm = ib.RDMAWriteLastImm, 9
	sendAll()
	// 5: WQE 4 of 200 bytes; a SEND of 300 (FIRST 256, LAST 44): the
	// FIRST is past the buffer; the LAST dropped in ERR.
	post(0x3400, 200, mr.LKey)
	send(300, false, 0)
	q.msg[0].ackReq = false
	sendAll()
	// 6: a new QP at Q1; WQE 0 with a stale L_Key variant; a SEND ONLY of 10.
	reconfig(256)
	post(0x3600, 100, mr.LKey^0x80)
	send(10, false, 0)
	sendAll()
	// 7: a new QP at Q2; WQE 0 of 300 bytes; a SEND of 356 (FIRST 256,
	// LAST 100): the LAST is past the buffer.
	reconfig(256)
	post(0x3800, 300, mr.LKey)
	send(356, false, 0)
	q.msg[0].ackReq = false
	sendAll()
	// 8: a new QP at Q3; WQE 0; a WRITE ONLY with immediate of 64 bytes
	// with a stale R_Key variant.
	reconfig(256)
	post(0, 0, mr.LKey)
	run.message(q, mr.Addr+0x2000, mr.RKey^0x80, 64)
	q.msg[0].op, q.msg[0].imm, q.msg[0].ackReq = ib.RDMAWriteOnlyImm, 5, true
	sendAll()
	// The length rules (hca packetLengthOK), each region offset below
	// 0x4000, the region's least length, and apart from the others'.
	// 9: a new QP at Q4 with path MTU 512; WQE 0 of 1100 bytes at +0x400;
	// a SEND of 1024: FIRST 512, LAST 512 (a SEND has no DMA length that
	// a LAST of a whole MTU could end short).
	reconfig(512)
	post(0x400, 1100, mr.LKey)
	send(1024, false, 0)
	sendAll()
	// 10: a SEND of 600 cut at 256 (FIRST 256, MIDDLE 256, LAST 88) with
	// no WQE posted; then WQE 1 (1000 bytes at +0x900) and the resend.
	q.mtu = 256
	send(600, false, 0)
	q.mtu = 512
	sendAll()
	post(0x900, 1000, mr.LKey)
	sendAll()
	// 11: a new QP at Q5, MTU 512; WQE 0 of 2000 bytes at +0x1300; a
	// SEND with immediate of 1100 (FIRST 512, MIDDLE 512, LAST 76 with
	// immediate) whose MIDDLE carries 256.
	reconfig(512)
	post(0x1300, 2000, mr.LKey)
	send(1100, true, 0x5151)
	q.msg[1].pay = q.msg[1].pay[:256]
	sendAll()
	// 12: a new QP at Q6, MTU 1024; WQE 0 of 100 bytes at +0x1C00; a SEND
	// ONLY with immediate of 1025 bytes: past the MTU and the buffer.
	reconfig(1024)
	post(0x1C00, 100, mr.LKey)
	q.mtu = 2048
	send(1025, true, 0x6262)
	q.mtu = 1024
	sendAll()
	// 13: a new QP at Q7, MTU 512; WQEs 0 and 1; a WRITE of 1124 at
	// +0x2100, FIRST 512, MIDDLE 512, LAST with immediate 100; then a
	// WRITE of 600 at +0x2600, FIRST 512, LAST with immediate 50 (not 88).
	reconfig(512)
	post(0, 0, mr.LKey)
	post(0, 0, mr.LKey)
	run.message(q, mr.Addr+0x2100, mr.RKey, 1124)
	q.msg[0].ackReq, q.msg[1].ackReq = false, false
	q.msg[2].op, q.msg[2].imm = ib.RDMAWriteLastImm, 11
	sendAll()
	run.message(q, mr.Addr+0x2600, mr.RKey, 600)
	q.msg[0].ackReq = false
	q.msg[1].op, q.msg[1].imm, q.msg[1].pay = ib.RDMAWriteLastImm, 12, q.msg[1].pay[:50]
	sendAll()
	// 14: a new QP at Q8, MTU 512; WQE 0; a WRITE ONLY with immediate of
	// 513 bytes at +0x3200 (RETH 513).
	reconfig(512)
	post(0, 0, mr.LKey)
	q.mtu = 1024
	run.message(q, mr.Addr+0x3200, mr.RKey, 513)
	q.mtu = 512
	q.msg[0].op, q.msg[0].imm, q.msg[0].ackReq = ib.RDMAWriteOnlyImm, 13, true
	sendAll()
	run.stream[len(run.stream)-1].gap = true
	return run, qpn, p0, q12
}

// TestResponderSendDirectedCosim: the directed SEND cases through the
// model and hca_responder; the model's ACKs, completions, counters and
// bytes are first checked against values derived by hand from the
// responder rules (hca.Responder.Receive: the WQE taken at a SEND's first
// packet and at a WRITE with immediate, RNR NAK when none is posted, the
// length and L_Key checks), then the RTL's against the model's.
func TestResponderSendDirectedCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	run, a, p, q := respSendDirected(cosimSeeds[0])
	at := func(k uint32) uint32 { return (p + k) & 0xffffff }
	const rnrNAK = 0x20 | 14 // RNR NAK with min_rnr_timer 14
	assert.Equal(t, []respAck{
		{a, at(0), 0x1F, 1, 0, 0, 0},                 // 1: ONLY at P: ACK P, MSN 1
		{a, at(1), rnrNAK, 1, 0, 0, 0},               // 2: FIRST at P+1 finds no WQE: RNR NAK P+1
		{a, at(1), 0x60, 1, 0, 0, 0},                 //    MIDDLE P+2 ahead: sequence NAK for P+1 (the LAST dropped)
		{a, at(3), 0x1F, 2, 0, 0, 0},                 //    the resend with WQE 1: ACK P+3, MSN 2
		{a, at(4), rnrNAK, 2, 0, 0, 0},               // 3: WRITE ONLY with immediate at P+4, no WQE: RNR NAK
		{a, at(4), 0x1F, 3, 0, 0, 0},                 //    the resend with WQE 2: ACK P+4, MSN 3
		{a, at(6), 0x1F, 4, 0, 0, 0},                 // 4: FIRST P+5, LAST with immediate P+6: ACK P+6, MSN 4
		{a, at(7), 0x61, 4, 0, 0, 0},                 // 5: FIRST of 256 into 200 bytes: NAK invalid request P+7
		{a, q[0], 0x63, 0, 0, 0, 0},                  // 6: the stale L_Key: NAK remote operational error at Q1
		{a, (q[1] + 1) & 0xffffff, 0x61, 0, 0, 0, 0}, // 7: the LAST takes 256 + 100 > 300: NAK invalid request at Q2+1
		{a, q[2], 0x62, 0, 0, 0, 0},                  // 8: the stale R_Key: NAK remote access error at Q3
		// MTU 512 from here: a FIRST or MIDDLE of 512 exactly, a LAST of
		// 1..512, an ONLY of 0..512 (1024 at Q6); else NAK invalid request
		// at its PSN, the context to ERR.
		{a, (q[3] + 1) & 0xffffff, 0x1F, 1, 0, 0, 0},   // 9: FIRST Q4, LAST Q4+1 (512 + 512): ACK, MSN 1
		{a, (q[3] + 2) & 0xffffff, rnrNAK, 1, 0, 0, 0}, // 10: the FIRST of 256 at Q4+2, no WQE: RNR NAK before the length
		{a, (q[3] + 2) & 0xffffff, 0x60, 1, 0, 0, 0},   //     MIDDLE Q4+3 ahead: sequence NAK for Q4+2 (the LAST dropped)
		{a, (q[3] + 2) & 0xffffff, 0x61, 1, 0, 0, 0},   //     the resend with WQE 1: 256 ≠ 512, invalid request
		{a, (q[4] + 1) & 0xffffff, 0x61, 0, 0, 0, 0},   // 11: the MIDDLE of 256 at Q5+1
		{a, q[5], 0x61, 0, 0, 0, 0},                    // 12: the ONLY of 1025 > 1024 at Q6
		{a, (q[6] + 2) & 0xffffff, 0x1F, 1, 0, 0, 0},   // 13: 512 + 512 + 100 = 1124: ACK Q7+2, MSN 1
		{a, (q[6] + 4) & 0xffffff, 0x61, 1, 0, 0, 0},   //     512 + 50 = 562 ≠ 600 at the LAST Q7+4
		{a, q[7], 0x61, 0, 0, 0, 0},                    // 14: the ONLY of 513 > 512 at Q8
	}, run.acks, "the model's ACKs and NAKs")
	assert.Equal(t, []respCQE{
		{a, hca.CQERespSendImm, 0, 0, 100, 0xdeadbeef},             // 1: WQE 0, 100 bytes, the immediate
		{a, hca.CQERespSend, 0, 1, 600, 0},                         // 2: WQE 1, 256 + 256 + 88
		{a, hca.CQERespWrImm, 0, 2, 64, 7},                         // 3: WQE 2, the RETH's 64
		{a, hca.CQERespWrImm, 0, 3, 300, 9},                        // 4: WQE 3, the FIRST's RETH length, not the LAST's 44
		{a, hca.CQERespSend, uint32(hca.WCLocLenErr), 4, 0, 0},     // 5: WQE 4, LOC_LEN_ERR
		{a, hca.CQERespSend, uint32(hca.WCLocProtErr), 0, 0, 0},    // 6: the new QP's WQE 0, LOC_PROT_ERR
		{a, hca.CQERespSend, uint32(hca.WCLocLenErr), 0, 0, 0},     // 7: WQE 0, LOC_LEN_ERR at the LAST
		{a, hca.CQERespWrImm, uint32(hca.WCRemAccessErr), 0, 0, 0}, // 8: the WQE it took, REM_ACCESS_ERR, no byte_len or immediate
		// A length error completes the WQE the message holds with
		// REM_INV_REQ_ERR (9), byte_len and immediate 0 (rxe do_complete).
		{a, hca.CQERespSend, 0, 0, 1024, 0},                        // 9: WQE 0, 512 + 512
		{a, hca.CQERespSend, uint32(hca.WCRemInvReqErr), 1, 0, 0},  // 10: WQE 1, taken by the FIRST it fails
		{a, hca.CQERespSend, uint32(hca.WCRemInvReqErr), 0, 0, 0},  // 11: WQE 0, taken by the FIRST
		{a, hca.CQERespSend, uint32(hca.WCRemInvReqErr), 0, 0, 0},  // 12: WQE 0: the length rule before the buffer's LOC_LEN_ERR
		{a, hca.CQERespWrImm, 0, 0, 1124, 11},                      // 13: WQE 0, the RETH's 1124
		{a, hca.CQERespWrImm, uint32(hca.WCRemInvReqErr), 1, 0, 0}, //     WQE 1, taken by the LAST it fails
		{a, hca.CQERespWrImm, uint32(hca.WCRemInvReqErr), 0, 0, 0}, // 14: WQE 0
	}, run.cqes, "the model's receive completions")
	// Dropped: the LAST of 2 and of 10 (ahead, after their NAK), the LAST
	// of 5, the MIDDLE and LAST of 10's resend, the LAST of 11 (ERR).
	assert.Equal(t, respCounts{acks: 6, naks: 14, seqDrop: 2, errDrop: 4}, run.want, "the model's counts")
	assert.Len(t, run.mem, 100+600+64+300+256+1024+512+1124+512,
		"bytes written: cases 1, 2, 3, 4, 7's FIRST, 9, 11's FIRST, 13's first WRITE and its second's FIRST")
	res := runResp(t, context.Background(), t.TempDir(), run, 1, nil)
	assert.Empty(t, run.check(res), "hca_responder against the model")
	t.Logf("%d entries, %d cycles, %d wr0 writes (%d beats), %d ACKs/NAKs, %d completions", len(run.stream), res.cycles, res.writes, res.beats, len(res.acks), len(res.cqes))
	assert.Equal(t, 1+3+1+2+1+2+1+3+1, res.writes, "one wr0 write per packet written")
	// 100 bytes at lane 0: 2 beats; 256 at lane 13: ceil(269/64) = 5,
	// twice, 88 at lane 13: ceil(101/64) = 2; 64 at lane 0: 1; 256 at
	// lane 0: 4, 44 at lane 0: 1; 256 at lane 0: 4; from case 9 every
	// write starts at lane 0 (offsets 0x400, 0x800, 0x1300, 0x2100,
	// 0x2300, 0x2500, 0x2600; the region 4 KiB aligned): 512 bytes are 8
	// beats (cases 9 twice, 11, 13 three times with the 100 of 2).
	assert.Equal(t, 2+5+5+2+1+4+1+4+8+8+8+8+8+2+8, res.beats, "wr0 beats")
}

// TestResponderSendCosim: random streams with SENDs and WRITEs with
// immediate among the WRITEs (newRespRunSends) through the model and
// hca_responder, ACK_COALESCE 3 and 1: the receive completions, ACKs and
// NAKs, host bytes and counters equal the model's; every kind of receive
// decision happens.
func TestResponderSendCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	respRandomRuns(t, newRespRunSends, func(seed uint64, res *respResult) {
		require.NotEmpty(t, res.cqes, "seed %d: no receive completion", seed)
	}, "RNR NAK", "receive CQE opcode 2 SUCCESS", "receive CQE opcode 3 SUCCESS", "receive CQE opcode 1 SUCCESS",
		"receive CQE opcode 2 LOC_LEN_ERR", "receive CQE opcode 2 LOC_PROT_ERR", "L_Key invalid_key", "duplicate", "ahead, NAK",
		"written (VA mod 64 > 0)", "flushed ACK", "receive CQE opcode 1 REM_ACCESS_ERR", "L_Key out_of_bounds", "L_Key pd_mismatch",
		"L_Key access_denied", "receive WQE flushed, at the error", "receive WQE flushed, posted in ERR")
}

// TestResponderSendMutantsFail: each slip in hca_responder's SEND and
// WRITE-with-immediate paths fails the co-simulation of a random send run
// (ACK_COALESCE 3, respMutantSteps steps) or of the directed SEND run.
func TestResponderSendMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const f = "hca_responder.v"
	for _, m := range []cosimMutant{
		{"unmutated", "", "", ""},
		{"the RNR NAK without the QP's timer", f, "p_syn <= SYN_RNR | {3'd0, ctx_rnr[ix]};", "p_syn <= SYN_RNR;"},
		{"an empty receive queue not NAKed", f, "wire         rw_rnr  = rw_in && !rw_rsp_ok;", "wire         rw_rnr  = 1'b0;"},
		{"the L_Key checked for REMOTE_WRITE", f, "l_chk ? 4'd1 :", "l_chk ? 4'd2 :"},
		{"the L_Key checked over the packet's bytes", f, "l_chk ? {32'd0, ctx_rlen[ix]}", "l_chk ? {51'd0, h_len}"},
		{"an L_Key failure NAKed as a remote access error", f, "p_syn <= l_chk ? SYN_OPE : SYN_ACC;", "p_syn <= SYN_ACC;"},
		{"an L_Key failure without its completion", f, "p_cqe <= sendp || wimm;", "p_cqe <= wimm;"},
		{"an R_Key failure of a WRITE with immediate without its completion", f, "p_cqe <= sendp || wimm;", "p_cqe <= sendp;"},
		{"an R_Key failure completed as LOC_PROT_ERR", f, "p_cst <= l_chk ? 8'd4 : 8'd10;", "p_cst <= 8'd4;"},
		{"a buffer exactly full refused", f, "r_end > {1'b0, ctx_rlen[ix]};", "r_end >= {1'b0, ctx_rlen[ix]};"},
		{"a length error leaves the context out of ERR", f,
			"                        ctx_err[ix] <= 1'b1;\n                        p_ack <= 1'b1;\n                        p_cqe <= 1'b1;\n                    end else if (go_kc)",
			"                        p_ack <= 1'b1;\n                        p_cqe <= 1'b1;\n                    end else if (go_kc)"},
		{"the receive offset not moved", f, "if (sendp) ctx_roff[ix] <= r_end[31:0];", ""},
		{"a SEND message not marked as one", f, "ctx_insend[ix] <= sendp;", ""},
		{"a WRITE with immediate's byte_len from its packet", f, "(has_reth ? h_dlen : ctx_wlen[ix])", "{19'd0, h_len}"},
		{"the immediate in every completion", f, "(wimm || s_imm) ? h_imm : 32'd0", "h_imm"},
		{"every SEND completed as SEND with immediate", f, "p_cop <= wimm ? 4'd1 : s_imm ? 4'd3 : 4'd2;", "p_cop <= wimm ? 4'd1 : 4'd3;"},
		{"a WQE taken this cycle completed with the last one's index", f,
			"wire [15:0]  r_idx   = state == S_RRSP ? rw_rsp_index : ctx_ridx[ix];", "wire [15:0]  r_idx   = ctx_ridx[ix];"},
		// The length rules for SENDs and WRITEs with immediate (the
		// directed run's cases 9..14).
		{"a SEND's packets not checked against the MTU", f, " || (sendp && pmtu_bad);", ";"},
		{"a WRITE with immediate's lengths not checked", f, "(is_wr && (pmtu_bad || dlen_bad))", "(is_pw && (pmtu_bad || dlen_bad))"},
		{"a first packet's length judged before its WQE", f, "if (bad_seq || (bad_len && !need_rw)) begin", "if (bad_seq || bad_len) begin"},
		{"a SEND MIDDLE's length error without its completion", f, "p_cqe <= !bad_seq && sendp;", "p_cqe <= 1'b0;"},
		{"a SEND MIDDLE's length error completed LOC_LEN_ERR", f,
			"p_cop <= 4'd2; p_cst <= 8'd9; p_cidx <= ctx_ridx[ix];", "p_cop <= 4'd2; p_cst <= 8'd1; p_cidx <= ctx_ridx[ix];"},
		{"a first packet's length error completed LOC_LEN_ERR", f,
			"p_cst <= 8'd9; p_cidx <= rw_rsp_index;", "p_cst <= 8'd1; p_cidx <= rw_rsp_index;"},
		{"a WRITE with immediate's length error completed as a SEND", f,
			"p_cop <= wimm ? 4'd1 : 4'd2; p_cst <= 8'd9;", "p_cop <= 4'd2; p_cst <= 8'd9;"},
		{"a length error completed with the WQE held before", f,
			"p_cst <= 8'd9; p_cidx <= rw_rsp_index;", "p_cst <= 8'd9; p_cidx <= ctx_ridx[ix];"},
		{"a LAST with immediate's length error written anyway", f,
			"(rw_in && rw_rsp_ok && wimm && !rw_kc && !bad_len)", "(rw_in && rw_rsp_ok && wimm && !rw_kc)"},
		{"a SEND FIRST's length error sent on to its key check", f,
			"(rw_rsp_ok && rw_kc && !bad_len) ? S_KREQ", "(rw_rsp_ok && rw_kc) ? S_KREQ"},
		// The flush of a context in ERR (hca.Device.flushRecvs).
		{"no flush", f, "wire [NQ-1:0] fl_req = rw_flush & q_err & ctx_valid;", "wire [NQ-1:0] fl_req = {NQ{1'b0}};"},
		{"a flushed WQE completed with its status as a success", f, "rc_opcode <= 4'd2; rc_status <= 8'd5;", "rc_opcode <= 4'd2; rc_status <= 8'd0;"},
		{"a flushed WQE skipped (taken, no completion)", f, "                if (rw_rsp_ok) rc_valid <= 1'b1;\n", "                if (rw_rsp_ok && !rw_rsp_index[1]) rc_valid <= 1'b1;\n"},
		{"the flush's completion with the last packet's index", f, "rc_status <= 8'd5; rc_index <= rw_rsp_index;", "rc_status <= 8'd5; rc_index <= p_cidx;"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			// The directed run first (cheaper than the random one): a
			// mutant stops at its first failing run (respFirstFailing).
			respFirstFailing(t, m, []func() *respRun{
				func() *respRun { r, _, _, _ := respSendDirected(cosimSeeds[0]); return r },
				func() *respRun { r := newRespRunSends(cosimSeeds[0], 3); r.fill(respMutantSteps); return r },
			}, "the co-simulation passes a responder with %s")
		})
	}
}

// TestResponderEmptyListCosim: mlx5's empty scatter list (a receive WR of
// no element: libmlx5 writes one data segment of 0 bytes with
// MLX5_INVALID_LKEY 0x100, which hca.DecodeRecvWQE reads as no element)
// through the model and hca_responder (respTB, MTU 256, min_rnr_timer
// 14): a SEND of 0 bytes completes into it with no key check, a WRITE
// with immediate takes it, a SEND of 1 byte is LOC_LEN_ERR; then a WQE
// posted to the QP in ERR is flushed. Two slips fail it.
func TestResponderEmptyListCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	build := func() (*respRun, uint32, uint32) {
		run := newRespRunSends(cosimSeeds[0], 1)
		q := run.directedStart(256, 14)
		a, p := q.qpn, q.next
		mr := run.regions[0] // PD 0's, LOCAL_WRITE and REMOTE_WRITE
		empty := hca.RecvWR{LKey: 0x100}
		sendOnly := func(n uint32) {
			run.message(q, 0, 0, n)
			m := q.msg[0]
			m.va, m.rkey, m.dlen, m.ackReq, m.op = 0, 0, 0, true, ib.SendOnly
			run.send(q, m)
		}
		run.postWR(q, empty) // WQE 0
		sendOnly(0)
		run.postWR(q, empty) // WQE 1
		run.message(q, mr.Addr+0x2000, mr.RKey, 64)
		q.msg[0].op, q.msg[0].imm, q.msg[0].ackReq = ib.RDMAWriteOnlyImm, 5, true
		run.send(q, q.msg[0])
		run.postWR(q, empty) // WQE 2
		sendOnly(1)
		run.postWR(q, hca.RecvWR{Addr: mr.Addr, Length: 100, LKey: mr.LKey}) // WQE 3, posted in ERR
		return run, a, p
	}
	run, a, p := build()
	at := func(k uint32) uint32 { return (p + k) & 0xffffff }
	assert.Equal(t, []respAck{
		{a, at(0), 0x1F, 1, 0, 0, 0}, // the SEND ONLY of 0 at P: ACK, MSN 1
		{a, at(1), 0x1F, 2, 0, 0, 0}, // the WRITE ONLY with immediate at P+1: ACK, MSN 2
		{a, at(2), 0x61, 2, 0, 0, 0}, // the SEND of 1 byte into 0 bytes at P+2: NAK invalid request
	}, run.acks, "the model's ACKs and NAKs")
	assert.Equal(t, []respCQE{
		{a, hca.CQERespSend, 0, 0, 0, 0},                        // WQE 0: RESP_SEND of 0 bytes, no key checked
		{a, hca.CQERespWrImm, 0, 1, 64, 5},                      // WQE 1: the RETH's 64, the immediate
		{a, hca.CQERespSend, uint32(hca.WCLocLenErr), 2, 0, 0},  // WQE 2: 1 > 0 bytes
		{a, hca.CQERespSend, uint32(hca.WCWRFlushErr), 3, 0, 0}, // WQE 3: posted in ERR, flushed
	}, run.cqes, "the model's receive completions")
	ctx := context.Background()
	res := runResp(t, ctx, t.TempDir(), run, 1, nil)
	assert.Empty(t, run.check(res))
	// The WRITE's 64 bytes at a page-aligned address: one write of one beat.
	assert.Equal(t, 1, res.writes)
	assert.Equal(t, 1, res.beats)
	const f = "hca_responder.v"
	for _, m := range []cosimMutant{
		{"the empty list's L_Key checked", f, "wire         rw_empty = rw_rsp_nsge == 6'd0;", "wire         rw_empty = 1'b0;"},
		{"an empty list taking a SEND of any length", f, "!wimm && rw_empty && h_len == 13'd0 && !bad_len;", "!wimm && rw_empty && !bad_len;"},
		// Not here: the 0-byte SEND's byte_len from the bytes placed before
		// (r_end without "first ? 32'd0 :"): in this run the context's
		// ctx_roff was never written, so its x reaches rc_len and the
		// bench's log cannot be parsed, a failure but not a difference.
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			run, _, _ := build()
			require.NotEmpty(t, run.check(runResp(t, ctx, t.TempDir(), run, 1, respMutated(t, m))), "the co-simulation passes a responder with %s", m.name)
		})
	}
}
