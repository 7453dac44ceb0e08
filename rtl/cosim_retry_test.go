package rtl

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_requester's go-back-N retries <-> hca.Requester.OnAck, Next ----
//
// The emitted hca_transport with RETRY_CNT 3 and RNR_RETRY 2, in reqTB,
// on a directed run of three contexts whose NAKs make the model retry:
// a sequence error NAK inside a message (resent from that packet, the
// messages after it whole), the same NAK again before any progress
// (absorbed: a retry sequence is under way), RNR NAKs until rnr_retry is
// spent (RNR_RETRY_EXC_ERR), a sequence error NAK resending a WRITE from
// its second packet with a payload that does not start on a block, and
// one past a READ no response answered (the implied NAK: the READ and
// what follows go again). The testbench's log is replayed into the model
// in the RTL's order (reqCplReplay's way): every packet the RTL commits
// must be the model's Next for its context then, byte for byte with the
// payload the host holds (reqHostBlock), every completion the model's,
// and the first packet of a context after an RNR NAK must leave no
// earlier than the RNR timer the model holds the QP for
// (hca.RNRTimerPS), scaled to retryTick cycles per 10 us.

const (
	retryCnt = 3 // RETRY_CNT: hca.retry_cnt of the run (not 7, so it counts)
	rnrRetry = 2 // RNR_RETRY
	// retryTick is RNR_TICK in the run: cycles per 10 us. The emitter's
	// is 10000 at 1 GHz; 20 keeps the waits short (code 5, 60 us: 120
	// cycles) with the same table.
	retryTick = 20
	// retryEvery is hca.ack_req_every of every WQE of the run.
	retryEvery = 3
	// retrySlack bounds how long after its RNR wait a context's resend
	// commits: the resend's take, its payload read and the path's
	// latency, with every handshake ready (the run's control) and the
	// queue empty, are a few tens of cycles.
	retrySlack = 64
)

// reqHostBlock is the host's 64-byte block at block address b (address /
// 64), as the testbench's host_block makes it with +hostfn: word w (8
// bytes, big-endian, byte 8w first) is b x 0x9E3779B97F4A7C15 xor w x
// 0xC2B2AE3D27D4EB4F, mod 2^64. Any address's bytes are known, so the
// resends' reads need no list of answers in order.
func reqHostBlock(b uint64) []byte {
	out := make([]byte, BlockBytes)
	m := b * 0x9E3779B97F4A7C15
	for w := range 8 {
		binary.BigEndian.PutUint64(out[8*w:], m^(uint64(w)*0xC2B2AE3D27D4EB4F))
	}
	return out
}

// tbHostBlock is reqHostBlock in Verilog, for the testbenches whose host
// answers any address (host_block(b), b the block address).
const tbHostBlock = `    function [511:0] host_block(input [57:0] b);
        integer w;
        reg [63:0] m;
        begin
            m = {6'd0, b} * 64'h9E3779B97F4A7C15;
            for (w = 0; w < 8; w = w + 1)
                host_block[511 - 64*w -: 64] = m ^ (w * 64'hC2B2AE3D27D4EB4F);
        end
    endfunction
`

// reqHostBytes are n host bytes from addr.
func reqHostBytes(addr uint64, n int) []byte {
	out := make([]byte, 0, n+BlockBytes)
	for b := addr / BlockBytes; len(out) < int(addr%BlockBytes)+n; b++ {
		out = append(out, reqHostBlock(b)...)
	}
	return out[addr%BlockBytes : int(addr%BlockBytes)+n]
}

// reqGather is the n payload bytes from byte off of w's message, as
// hca.Device.schedule reads them: from LocalAddr + off for a single
// element; for a list (SGL), the bytes [off, off+n) of the elements'
// concatenation, cut at the elements' bounds, each part read at its own
// element's address (hca's sglSlice: an element of no byte in the range,
// a zero-byte one among them, reads nothing).
func reqGather(w hca.SendWQE, off, n int) []byte {
	if w.SGL == nil {
		return reqHostBytes(w.LocalAddr+uint64(off), n)
	}
	out := make([]byte, 0, n)
	start := 0 // the element's first byte in the message
	for _, e := range w.SGL {
		end := start + int(e.Length)
		if off < end && len(out) < n {
			skip := off - start
			take := min(int(e.Length)-skip, n-len(out))
			out = append(out, reqHostBytes(e.Addr+uint64(skip), take)...)
			off += take
		}
		start = end
	}
	return out
}

// retryQP is one context of the run as the model sees it: its requester,
// its WQEs in order with their first PSNs (so a packet's PSN finds its
// WQE's local address).
type retryQP struct {
	item  *reqItem
	req   *hca.Requester
	wqes  []hca.SendWQE
	inls  [][]byte // an inline WQE's bytes (the model's sendMsg.inline), beside wqes
	first []uint32
	next  uint32
	// reads are the model's payload reads of the packets send made, in
	// order (packetPayReads: a resent packet reads again).
	reads []payRead
}

func newRetryQP(it *reqItem) *retryQP {
	cfg := hca.Defaults()
	// The runs' hca_transport has RD_RES 16 (hca_requester's MAX_RD_ATOMIC),
	// more than a context's ring of 8 holds, so its limit never binds there
	// and the model's is unlimited; a plan where it binds sets maxRd (the
	// model's and, through retryPlan.rdRes, the RTL's).
	cfg.MaxRdAtomic = 1 << 30
	if it.maxRd > 0 {
		cfg.MaxRdAtomic = it.maxRd
	}
	cfg.RetryCnt, cfg.RNRRetry, cfg.AckReqEvery = retryCnt, rnrRetry, retryEvery
	return &retryQP{item: it, req: hca.NewRequester(&cfg, pktzMTU(it.mtuCode), it.psn), next: it.psn}
}

func (q *retryQP) enqueue(w hca.SendWQE) []hca.Completion { return q.enqueueInline(w, nil) }

// enqueueInline is enqueue for a WQE whose inline bytes are inl.
func (q *retryQP) enqueueInline(w hca.SendWQE, inl []byte) []hca.Completion {
	comps := q.req.Enqueue(w, 0)
	if len(comps) == 0 {
		n := uint32(hca.PacketCount(w.Length, pktzMTU(q.item.mtuCode)))
		if w.Opcode == hca.WRCompSwap || w.Opcode == hca.WRFetchAdd {
			n = 1
		}
		q.wqes, q.first, q.inls = append(q.wqes, w), append(q.first, q.next), append(q.inls, inl)
		q.next = (q.next + n) & 0xFFFFFF
	}
	return comps
}

// send is the model's next packet on q, as ib.AppendWire encodes it in
// whole beats: hca.Device.address's addressing, Next's headers, the
// payload hca.Device.schedule reads (LocalAddr + index x MTU).
func (q *retryQP) send() (psn uint32, wire []byte) {
	it := q.item
	pkt := ib.Packet{SLID: it.slid, DLID: it.dlid, SL: it.sl, VL: it.vl, DestQP: it.rqpn}
	tx := q.req.Next(&pkt)
	if pkt.PayloadLen > 0 {
		// The WQE holding the PSN: the last whose first PSN is at or before it.
		k := -1
		for i, f := range q.first {
			if (pkt.PSN-f)&0xFFFFFF < 1<<23 {
				k = i
			}
		}
		w := q.wqes[k]
		off := tx.Index * pktzMTU(it.mtuCode)
		if w.Inline {
			// hca.Device.schedule: m.inline[off:off+PayloadLen], no read.
			pkt.Payload = q.inls[k][off : off+pkt.PayloadLen]
		} else {
			pkt.Payload = reqGather(w, off, pkt.PayloadLen)
			q.reads = packetPayReads(q.reads, w, pktzMTU(it.mtuCode), tx.Index)
		}
	}
	b := ib.AppendWire(nil, &pkt)
	wire = make([]byte, (len(b)+BlockBytes-1)/BlockBytes*BlockBytes)
	copy(wire, b)
	return pkt.PSN, wire
}

// retryPlan is the run and what the model does in it, run in the order the
// gates force (every packet sent before each NAK is offered).
type retryPlan struct {
	run    *reqRun
	psns   [3][]uint32    // per context, the PSNs the model sends, in order
	status []hca.WCStatus // the completions' statuses, in order
	rnr    int            // RNR waits the model holds a QP for
	// mem is host memory as the model's payload writes leave it (byte
	// address to byte: READ responses' payloads and atomics' original
	// values), and bufs the READs' and atomics' buffers by WQE index: a
	// successful completion of one must find its buffer written. nil: the
	// run writes nothing.
	mem  map[uint64]byte
	bufs map[uint16][][2]uint64
	// toCycles, when not 0, is the local ACK timeout in RTL cycles: the
	// replay runs the model's retry timer (hca.Device.armTimer, timeout,
	// afterAck) on the RTL's events and checks each timeout the RTL takes
	// (its log's O lines) against it.
	toCycles int
	// rdRes, when not 0, is the emitted hca_transport's RD_RES (hca.max_rd_atomic:
	// hca_requester's MAX_RD_ATOMIC and hca_responder's resources) for the run;
	// the contexts' items carry the same value as maxRd for the model.
	rdRes int
}

// addQPs configures a context for each of cfgs (the run's first items)
// and returns each context's model, by context index.
func (p *retryPlan) addQPs(cfgs []*reqItem) (qps [3]*retryQP) {
	for _, it := range cfgs {
		p.run.items = append(p.run.items, it)
		qps[it.qix] = newRetryQP(it)
	}
	return qps
}

// drain sends every packet the models have now, as the gates make the
// RTL do before the next NAK or response is offered.
func (p *retryPlan) drain(qps [3]*retryQP) {
	for q, qp := range qps {
		for qp != nil && qp.req.HasWork() { // nil: a context the run does not use
			psn, w := qp.send()
			p.psns[q] = append(p.psns[q], psn)
			p.run.wires = append(p.run.wires, w)
			p.run.beats += len(w) / BlockBytes
		}
	}
}

// newRetryPlan builds the run (derivation in the comments: MTU m, PSNs
// mod 2^24).
func newRetryPlan() *retryPlan {
	p := &retryPlan{run: &reqRun{}}
	run := p.run
	cfgs := []*reqItem{
		{cfg: true, qix: 0, qpn: 0x1230, dlid: 0x11, slid: 0x21, sl: 3, vl: 1, rqpn: 0xA0000, psn: 0xFFFFFD, mtuCode: 1, cqn: 5},
		{cfg: true, qix: 1, qpn: 0x1231, dlid: 0x12, slid: 0x22, sl: 7, vl: 2, rqpn: 0xA0001, psn: 0x000100, mtuCode: 3, cqn: 6},
		{cfg: true, qix: 2, qpn: 0x1232, dlid: 0x13, slid: 0x23, sl: 0, vl: 0, rqpn: 0xA0002, psn: 0x123456, mtuCode: 2, cqn: 7},
	}
	qps := p.addQPs(cfgs)
	drain := func() { p.drain(qps) }
	index := uint16(0x40)
	wqe := func(q int, op hca.WROpcode, length int, laddr uint64, gate int) {
		it := &reqItem{qix: q, qpn: qps[q].item.qpn, every: retryEvery, gate: gate, sent: true}
		it.wqe = hca.SendWQE{Opcode: op, Length: uint32(length), RemoteAddr: 0x7000_0000 + uint64(index)<<12, RKey: 0x5500 + uint32(index),
			Imm: 0xC0DE0000 + uint32(index), LocalAddr: laddr, QPN: it.qpn, Index: index, Signaled: true}
		index++
		run.items = append(run.items, it)
		for _, c := range qps[q].enqueue(it.wqe) {
			p.status = append(p.status, c.Status)
		}
	}
	ack := func(q int, psn uint32, syn uint8) {
		run.acks = append(run.acks, reqAck{gate: len(run.wires), qpn: qps[q].item.qpn, psn: psn & 0xFFFFFF, syn: syn, msn: 1})
		res := qps[q].req.OnAck(psn&0xFFFFFF, syn)
		for _, c := range res.Completions {
			p.status = append(p.status, c.Status)
		}
		if res.RNRWait {
			p.rnr++
		}
		drain()
	}
	// Context 0, MTU 256, from PSN 0xFFFFFD: M0 a SEND of 300 B (2
	// packets, FFFFFD FFFFFE), M1 a WRITE of 778 B (4: FFFFFF 000000
	// 000001 000002, across the wrap), M2 a SEND of 50 B (000003).
	wqe(0, hca.WRSend, 300, 0x10_0000, 0)
	wqe(0, hca.WRRDMAWrite, 3*256+10, 0x20_0000+5, 0)
	wqe(0, hca.WRSend, 50, 0x30_0000+60, 0)
	drain()
	// a0, a sequence error NAK at M1's packet 2 (000001) once the 7 have
	// left: M0 completes, M1 goes again from packet 2 (000001 000002,
	// no RETH), M2 whole (000003); retry_cnt 3 -> 2.
	ack(0, 0x000001, hca.SynNAKSeq)
	// a1, the same NAK again: no progress since, a retry sequence under
	// way: nothing.
	ack(0, 0x000001, hca.SynNAKSeq)
	// a2, an ACK through M1's last: M1 completes (progress).
	ack(0, 0x000002, hca.SynACK)
	// Context 1, MTU 1024, from 000100, once a2 is taken: W a WRITE of
	// 2148 B from a local address 17 bytes into a block (3 packets: 100
	// 101 102), S a SEND of 1500 B (103 104).
	wqe(1, hca.WRRDMAWrite, 2*1024+100, 0x40_0000+17, 3)
	wqe(1, hca.WRSend, 1500, 0x50_0000+33, 3)
	drain()
	// a3, a sequence error NAK at W's packet 1 (101): W again from packet
	// 1, its payload from 17 + 1024 bytes on (101 102), S whole (103 104).
	ack(1, 0x000101, hca.SynNAKSeq)
	// a4, an ACK through 104: W and S complete.
	ack(1, 0x000104, hca.SynACK)
	// a5, an RNR NAK (timer code 5, 60 us) at M2 (000003): rnr_retry 2 ->
	// 1, M2 again after the wait.
	ack(0, 0x000003, hca.SynRNRNAK|5)
	// Context 2, MTU 512, from 123456, once a5 is taken (during context
	// 0's wait): R a READ of 1000 B (PSNs 123456 123457, one request
	// packet 123456), S2 a SEND of 600 B (123458 123459).
	wqe(2, hca.WRRDMARead, 1000, 0x60_0000, 6)
	wqe(2, hca.WRSend, 600, 0x70_0000+1, 6)
	drain()
	// a6, an RNR NAK (code 3, 30 us) at 000003: rnr_retry 1 -> 0, M2
	// again after the wait.
	ack(0, 0x000003, hca.SynRNRNAK|3)
	// a7, a sequence error NAK at S2's second packet (123459): R's
	// response never came and its PSNs lie before: the implied NAK, a
	// retry from R (123456) and S2 whole (123458 123459).
	ack(2, 0x123459, hca.SynNAKSeq)
	// a8, an RNR NAK (code 1) at 000003: rnr_retry spent (M2 sent 1 +
	// rnr_retry = 3 times), M2 fails with RNR_RETRY_EXC_ERR, context 0
	// to ERR.
	ack(0, 0x000003, hca.SynRNRNAK|1)
	// Control: every handshake ready, every VL's credit plenty, a WQE or
	// ACK offered whenever one is due.
	for range 2500 {
		run.ctrl = append(run.ctrl, [5]uint64{0x31f, 2048, 2048, 2048, 2048})
	}
	return p
}

// retryTransport is the emitted hca_transport with RETRY_CNT, RNR_RETRY
// and RNR_TICK set as the run needs.
func retryTransport(t *testing.T) string {
	t.Helper()
	src := reqTransport(t)
	for _, r := range [][2]string{
		{"parameter integer RETRY_CNT = 0", fmt.Sprintf("parameter integer RETRY_CNT = %d", retryCnt)},
		{"parameter integer RNR_RETRY = 0", fmt.Sprintf("parameter integer RNR_RETRY = %d", rnrRetry)},
		{"parameter integer RNR_TICK = 10000", fmt.Sprintf("parameter integer RNR_TICK = %d", retryTick)},
	} {
		require.Equal(t, 1, strings.Count(src, r[0]), "hca_transport's %q", r[0])
		src = strings.Replace(src, r[0], r[1], 1)
	}
	return src
}

// retryResult is what the replay of one run found.
type retryResult struct {
	failLog
	checked int            // beats compared
	psns    [3][]uint32    // per context, the PSNs the RTL committed
	status  []hca.WCStatus // the completions' statuses on cpl_*
	waits   int            // RNR waits checked
	acks    int
	cplHeld int // cycles a completion waited for cpl_ready
	writes  int // wr0 writes (their first beats) and beats
	wbeats  int
	tmos    [3]int // per context, the timeouts the RTL took and the model agreed with
	// The cycles of the log's events: per context each commit's (with
	// psns), each ACK or response's take by its index in the run's acks,
	// each WQE's take by its item index.
	commitAt [3][]int
	ackAt    map[int]int
	takeAt   map[int]int
}

// rdAtomicOp: a READ or an atomic, what a fence waits for.
func rdAtomicOp(op hca.WROpcode) bool {
	return op == hca.WRRDMARead || op == hca.WRCompSwap || op == hca.WRFetchAdd
}

// retryTimer is the model's local ACK timer per context (hca.Device's
// timerArmed, timerDeadline) run in RTL cycles: it arms at a commit of the
// context's packet when it is not running (the RTL's counterpart of the
// model's grant: hca_requester's header), restarts or stops as
// hca.Device.afterAck does at the cycle the ACK is taken, and expires
// cycles later. The RTL restarts its timer at the walk's end, a few
// cycles after the ACK is taken, and takes an expiry only when its
// completion engine is free, so its timeout comes at the model's deadline
// or up to tmoSlack cycles after, never before.
type retryTimer struct {
	cycles   int
	armed    [reqQPs]bool
	deadline [reqQPs]int
}

// tmoSlack bounds how late the RTL takes a timeout: an ACK's walk (a
// cycle a message of the 8-deep ring, and two more), then the engine
// busy with another context's job of the same kind.
const tmoSlack = 32

func (tm *retryTimer) commit(q, cyc int) {
	if !tm.armed[q] {
		tm.armed[q], tm.deadline[q] = true, cyc+tm.cycles
	}
}

// after is hca.Device.afterAck's timer rule.
func (tm *retryTimer) after(qix int, q *retryQP, r hca.AckResult, cyc int) {
	if r.Progress || r.Rewound || len(r.Completions) > 0 {
		tm.armed[qix] = false
		if q.req.Outstanding() && q.req.State != hca.QPErr {
			tm.armed[qix], tm.deadline[qix] = true, cyc+tm.cycles
		}
	}
}

// missed fails every running timer whose expiry the RTL should have
// taken by cycle cyc.
func (tm *retryTimer) missed(res *retryResult, cyc int) {
	for q := range tm.armed {
		if tm.armed[q] && cyc > tm.deadline[q]+tmoSlack {
			res.fail("context %d: the model's local ACK timer expired at cycle %d, the RTL took no timeout by %d", q, tm.deadline[q], cyc)
			tm.armed[q] = false
		}
	}
}

// retryCheck replays the log into the model and compares.
func retryCheck(t *testing.T, p *retryPlan, out, beatsFile, logFile string) *retryResult {
	t.Helper()
	m := reqResult.FindStringSubmatch(out)
	require.NotNil(t, m, "testbench printed no REQ line:\n%s", tail(out, 30))
	res := &retryResult{ackAt: map[int]int{}, takeAt: map[int]int{}}
	if i := strings.Index(out, "KCHK-ERR"); i >= 0 {
		res.fail("%s", strings.SplitN(out[i:], "\n", 2)[0])
	}
	res.acks, _ = strconv.Atoi(m[12])
	res.cplHeld, _ = strconv.Atoi(m[14])
	if m[22] != "0" {
		res.fail("nothing moved for 4000 cycles")
	}
	for i, k := range []int{5, 6, 7, 8} { // werr cerr verr gaps: the tx_* contract
		if m[k] != "0" {
			res.fail("tx_* contract: %s = %s", []string{"werr", "cerr", "verr", "gaps"}[i], m[k])
		}
	}
	f, err := os.Open(logFile)
	require.NoError(t, err)
	defer f.Close()
	var qps [reqQPs]*retryQP
	var want []reqWantCQE
	var wires [][]byte
	next := 0
	// waitUntil: per context, the first cycle its next packet may commit
	// after an RNR NAK (-1: none pending).
	waitUntil := [reqQPs]int{}
	for i := range waitUntil {
		waitUntil[i] = -1
	}
	// rdun: per context, the READs and atomics taken and not yet completed
	// (success or error, CQE or not): the model's
	// Requester.rdAtomicUnfinished is rdun > 0. (A READ or atomic whose
	// answer came while an earlier one waits is done but not yet completed;
	// the earlier one keeps rdun > 0 then, as the model's test.)
	var rdun [reqQPs]int
	complete := func(q *retryQP, comps []hca.Completion) {
		for _, c := range comps {
			if rdAtomicOp(c.WQE.Opcode) {
				rdun[q.item.qix]--
			}
			if cqe, ok := hca.RequesterCQE(q.item.qpn, c); ok {
				want = append(want, reqWantCQE{cqn: q.item.cqn, cqe: cqe})
			}
		}
	}
	var tm *retryTimer
	if p.toCycles > 0 {
		tm = &retryTimer{cycles: p.toCycles}
	}
	// The RTL's wr0 writes into host memory: a write's address and length
	// on its first beat, its beats 64 bytes apart from the address's block
	// (hca_dma_engine ignores its low bits), only the bytes each beat's
	// byte enables name (bit 63 - k: byte k of the beat), as the host
	// does.
	mem := map[uint64]byte{}
	var wAddr uint64
	wLeft, wBytes := 0, 0 // beats left of the write under way; bytes it enabled so far
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		num := func(i int) int { v, _ := strconv.Atoi(fields[i]); return v }
		if tm != nil {
			// Every line but P carries its cycle last.
			if fields[0] != "P" && fields[0] != "R" {
				tm.missed(res, num(len(fields)-1))
			}
		}
		switch fields[0] {
		case "Q":
			it := p.run.items[num(1)]
			qps[it.qix] = newRetryQP(it)
			rdun[it.qix] = 0 // a context write empties the ring, no completions
		case "T":
			it := p.run.items[num(1)]
			res.takeAt[num(1)] = num(2)
			// The fence (hca.Device.wqeReady): a fenced WQE is handed to the
			// requester only when no READ or atomic before it is unanswered.
			if it.wqe.Fenced() && rdun[it.qix] > 0 {
				res.fail("fenced WQE %d (index %#x, mode %d) taken at cycle %d with %d READs or atomics of context %d unanswered",
					num(1), it.wqe.Index, it.wqe.FenceMode, num(2), rdun[it.qix], it.qix)
			}
			if rdAtomicOp(it.wqe.Opcode) {
				rdun[it.qix]++
			}
			if it.keyBad() {
				// hca.Device.wqeReady's key error: the outstanding
				// messages flushed, the WQE LOC_PROT_ERR, the QP to ERR.
				complete(qps[it.qix], qps[it.qix].req.FlushAll())
				complete(qps[it.qix], []hca.Completion{{WQE: it.wqe, Status: hca.WCLocProtErr}})
				break
			}
			complete(qps[it.qix], qps[it.qix].enqueueInline(it.wqe, it.inl))
		case "A":
			// Not late: the requester takes an ACK or response only with
			// its completion engine idle, so every completion of the jobs
			// before has left the engine: given (a P line before), or the
			// one in cpl_*'s output register (num(2): cpl_valid then). The
			// model has made them all by this point of the log.
			if late := len(want) - next - num(2); late > 0 {
				res.fail("ACK or response %d taken at cycle %d with %d of the model's completions before it not given", num(1), num(3), late)
			}
			a := p.run.acks[num(1)]
			res.ackAt[num(1)] = num(3)
			q := qps[a.qpn&(reqQPs-1)]
			r, _, _ := modelRx(q.req, a)
			complete(q, r.Completions)
			if tm != nil {
				tm.after(int(a.qpn&(reqQPs-1)), q, r, num(3))
			}
			if r.RNRWait {
				// The model holds the QP for RNRTimerPS(code); the RTL
				// counts the code's 10 us units in retryTick cycles.
				units := int(hca.RNRTimerPS(q.req.RNRWaitCode) / hca.RNRTimerPS(1))
				waitUntil[a.qpn&(reqQPs-1)] = num(3) + units*retryTick
			}
		case "C":
			qix, cyc := num(3), num(4)
			q := qps[qix]
			if q == nil || !q.req.HasWork() {
				res.fail("commit at cycle %d on context %d: the model has no packet to send", cyc, qix)
				continue
			}
			if w := waitUntil[qix]; w >= 0 {
				if cyc < w || cyc > w+retrySlack {
					res.fail("context %d: first packet after an RNR NAK at cycle %d, the wait ends at %d (up to %d after)", qix, cyc, w, retrySlack)
				}
				res.waits++
				waitUntil[qix] = -1
			}
			psn, w := q.send()
			res.psns[qix] = append(res.psns[qix], psn)
			res.commitAt[qix] = append(res.commitAt[qix], cyc)
			wires = append(wires, w)
			if tm != nil {
				tm.commit(qix, cyc)
			}
		case "O":
			// The RTL took a local ACK timeout: the model's timer must have
			// expired (hca.Device.timeout), then OnTimeout, the purge (the
			// replay's packets are built at commit, so nothing to purge)
			// and afterAck.
			qix, cyc := num(1), num(2)
			q := qps[qix]
			switch {
			case tm == nil:
				res.fail("timeout on context %d at cycle %d: the run has no timer", qix, cyc)
				continue
			case q == nil || !tm.armed[qix]:
				res.fail("timeout on context %d at cycle %d: the model's timer is not running", qix, cyc)
				continue
			case cyc < tm.deadline[qix] || cyc > tm.deadline[qix]+tmoSlack:
				res.fail("timeout on context %d at cycle %d: the model's expires at %d (up to %d after)", qix, cyc, tm.deadline[qix], tmoSlack)
			}
			tm.armed[qix] = false
			r := q.req.OnTimeout()
			complete(q, r.Completions)
			tm.after(qix, q, r, cyc)
			res.tmos[qix]++
		case "W":
			if p.mem == nil {
				res.fail("a payload write on wr0 at %s: the run writes nothing", fields[1])
				continue
			}
			if wLeft == 0 {
				wAddr, _ = strconv.ParseUint(fields[1], 16, 64)
				wAddr &^= BlockBytes - 1
				n, _ := strconv.ParseUint(fields[2], 16, 16)
				wLeft = int(n / BlockBytes)
				if n%BlockBytes != 0 || n == 0 {
					res.fail("a wr0 write at %#x of %d bytes: not whole blocks", wAddr, n)
					wLeft = max(1, wLeft)
				}
				res.writes++
				wBytes = 0
			}
			data, _ := hex.DecodeString(fields[3])
			be, _ := strconv.ParseUint(fields[4], 16, 64)
			for i, b := range data {
				if be>>(63-i)&1 != 0 {
					mem[wAddr+uint64(i)] = b
					wBytes++
				}
			}
			wAddr += BlockBytes
			wLeft--
			if wLeft == 0 && wBytes == 0 {
				// The model writes only parts of at least a byte
				// (hca.Device.place; sglSlice steps over an empty element).
				res.fail("a wr0 write at %#x enabling no byte", wAddr-BlockBytes)
			}
			res.wbeats++
		case "P":
			var got [10]uint64
			for k := range got {
				got[k], _ = strconv.ParseUint(fields[1+k], 16, 64)
			}
			// A READ's or atomic's completion: its buffer holds the model's
			// bytes by now (the data before the CQE).
			if bufs, ok := p.bufs[uint16(got[6])]; ok && got[2] == 0 {
			bufs:
				for _, buf := range bufs {
					for a := buf[0]; a < buf[0]+buf[1]; a++ {
						if mem[a] != p.mem[a] {
							res.fail("READ or atomic %#x completed before its buffer held the model's byte at %#x", got[6], a)
							break bufs
						}
					}
				}
			}
			if next >= len(want) {
				res.fail("completion %d on cpl_*: the model had made %d", next, len(want))
				next++
				continue
			}
			w := want[next]
			res.status = append(res.status, hca.WCStatus(got[2]))
			exp := [10]uint64{uint64(w.cqn), uint64(w.cqe.Opcode), uint64(w.cqe.Status), 0, uint64(w.cqe.WROp),
				uint64(w.cqe.QPN), uint64(w.cqe.Counter), uint64(w.cqe.ByteCnt), uint64(w.cqe.Imm), uint64(w.cqe.SrcQP)}
			if got != exp {
				res.fail("completion %d: cpl_* = %x, the model's %x", next, got, exp)
			}
			next++
		}
	}
	require.NoError(t, sc.Err())
	if tm != nil {
		end, _ := strconv.Atoi(m[2]) // the cycles the testbench ran
		tm.missed(res, end)
	}
	if next != len(want) {
		res.fail("%d completions on cpl_*, the model made %d", next, len(want))
	}
	// Host memory: what the RTL wrote is what the model's writes leave,
	// byte for byte, nothing more.
	if wLeft != 0 {
		res.fail("a wr0 write with %d beats missing", wLeft)
	}
	if p.mem != nil && len(mem) != len(p.mem) {
		res.fail("wr0 wrote %d bytes, the model's READs %d", len(mem), len(p.mem))
	}
	for a, b := range mem {
		if w, ok := p.mem[a]; !ok || w != b {
			res.fail("wr0 wrote %#02x at %#x, the model %#02x (written: %v)", b, a, w, ok)
			break
		}
	}
	for i, q := range qps {
		if q != nil && q.req.HasWork() {
			res.fail("context %d: the model still has packets to send", i)
		}
	}
	checked, errs, first := txPathCheck(t, &txPathRun{wires: wires}, beatsFile)
	res.checked, res.errors = checked, res.errors+errs
	res.first = append(res.first, first...)
	return res
}

// runRetryCase runs plan p's co-simulation in dir with file's old text
// replaced by new (none when file is ""). A mutant must fail it — a
// mismatch, or fewer beats or ACKs and responses than the plan's (failing
// says what the mutant is otherwise) — and gives nil; the unmutated run
// must match beat for beat and take every ACK and response, and its
// result is returned for the caller's own checks.
func runRetryCase(t *testing.T, ctx context.Context, dir string, p *retryPlan, file, old, new, failing string) *retryResult {
	t.Helper()
	writeRetryBench(t, ctx, dir, p, mutatedSource(t, file, old, new))
	res := runRetry(t, ctx, dir, "r", p, "vvp", "-n", filepath.Join(dir, "sim.vvp"))
	if file != "" {
		bad := res.errors > 0 || res.checked != p.run.beats || res.acks != len(p.run.acks)
		assert.True(t, bad, failing)
		t.Logf("%d mismatches, %d of %d beats: %s", res.errors, res.checked, p.run.beats, strings.Join(res.first, "; "))
		return nil
	}
	assert.Zero(t, res.errors, "mismatches: %s", strings.Join(res.first, "; "))
	assert.Equal(t, p.run.beats, res.checked, "beats compared")
	assert.Equal(t, len(p.run.acks), res.acks, "ACKs, NAKs and responses taken")
	return res
}

// runRetryMutant builds the requester with the named mutant (unmutated
// for an empty old) in a directory of its own under dir, runs plan p in
// Icarus under tag and returns the directory, Icarus's output and the
// replay's result.
func runRetryMutant(t *testing.T, ctx context.Context, dir string, p *retryPlan, tag, name, old, new string) (string, string, *retryResult) {
	t.Helper()
	d, replace := requesterMutant(t, dir, name, old, new)
	writeRetryBench(t, ctx, d, p, replace)
	out, err := runTool(ctx, d, "vvp", append([]string{"-n", filepath.Join(d, "sim.vvp")}, append(p.run.args(d, tag), "+hostfn")...)...)
	require.NoError(t, err)
	return d, out, retryCheck(t, p, out, filepath.Join(d, "beats_"+tag+".txt"), filepath.Join(d, "log_"+tag+".txt"))
}

func runRetry(t *testing.T, ctx context.Context, dir, tag string, p *retryPlan, cmd string, args ...string) *retryResult {
	t.Helper()
	out, err := runTool(ctx, dir, cmd, append(args, append(p.run.args(dir, tag), "+hostfn")...)...)
	require.NoError(t, err)
	return retryCheck(t, p, out, filepath.Join(dir, "beats_"+tag+".txt"), filepath.Join(dir, "log_"+tag+".txt"))
}

// writeRetryBench writes the testbench, the run and the sources (replace:
// a mutated file's text) into dir and compiles them with Icarus.
func writeRetryBench(t *testing.T, ctx context.Context, dir string, p *retryPlan, replace map[string]string) {
	t.Helper()
	files := writeReqBench(t, dir, replace)
	src := retryTransport(t)
	if p.rdRes > 0 {
		const def = "parameter integer RD_RES = 16"
		require.Equal(t, 1, strings.Count(src, def), "hca_transport's %q", def)
		src = strings.Replace(src, def, fmt.Sprintf("parameter integer RD_RES = %d", p.rdRes), 1)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hca_transport.v"), []byte(src), 0o644))
	p.run.write(t, dir)
	_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
	require.NoError(t, err)
}

// TestRetryPlan: the model does in the run what the plan's comments
// derive, so the co-simulation's comparison is against those numbers.
func TestRetryPlan(t *testing.T) {
	p := newRetryPlan()
	// Context 0: the 7 first sends, the resend from M1's packet 2, M2
	// twice more after its RNR waits.
	assert.Equal(t, []uint32{0xFFFFFD, 0xFFFFFE, 0xFFFFFF, 0, 1, 2, 3, 1, 2, 3, 3, 3}, p.psns[0], "context 0")
	// Context 1: W and S, then W from packet 1 and S.
	assert.Equal(t, []uint32{0x100, 0x101, 0x102, 0x103, 0x104, 0x101, 0x102, 0x103, 0x104}, p.psns[1], "context 1")
	// Context 2: R's request and S2, then both again (the implied NAK).
	assert.Equal(t, []uint32{0x123456, 0x123458, 0x123459, 0x123456, 0x123458, 0x123459}, p.psns[2], "context 2")
	// M0 on a0, M1 on a2, W and S on a4, M2 failed on a8 after 1 +
	// rnr_retry sends.
	assert.Equal(t, []hca.WCStatus{hca.WCSuccess, hca.WCSuccess, hca.WCSuccess, hca.WCSuccess, hca.WCRNRRetryExcErr}, p.status)
	assert.Equal(t, 2, p.rnr, "RNR waits")
	assert.Equal(t, 27, len(p.run.wires), "packets")
}

// TestRequesterRetryCosim: hca_requester's resends are the model's,
// packet for packet and byte for byte, its completions the model's, its
// RNR waits at least the model's; each mutant of the retry logic fails.
func TestRequesterRetryCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	p := newRetryPlan()
	dir := t.TempDir()
	f := "hca_requester.v"
	for _, m := range []struct{ name, file, old, new string }{
		{name: "unmutated"},
		{"a resend from the PSN after the NAK's", f, "(h_rdat || r_impl) ? 24'd0 : n_from;", "(h_rdat || r_impl) ? 24'd0 : n_from + 24'd1;"},
		{"no RNR wait", f, "r_rnr ? rnr_cycles : {WAIT_W{1'b0}};", "{WAIT_W{1'b0}};"},
		{"a retry sequence under way not absorbing a NAK", f, "wire             r_start  = started[e_ctx] && !e_prog && !e_tmo;", "wire             r_start  = 1'b0;"},
		{"rnr_retry not counted", f, "rnr_left[q*3 +: 3] <= r_nl - {2'd0, RNR_RETRY != 7};", "rnr_left[q*3 +: 3] <= r_nl;"},
		{"RETRY_EXC_ERR for exhausted RNR retries", f, "e_nst   <= r_exc ? 8'd12 : 8'd13;", "e_nst   <= 8'd12;"},
		{"no implied NAK", f, "wire             r_impl   = e_any && h_rdat && e_lim != {IF_W{1'b0}} && h_d[23];", "wire             r_impl   = 1'b0;"},
		{"a resend's payload from the message's start", f, "g_skip <= rp_off;", "g_skip <= 32'd0;"},
	} {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := filepath.Join(dir, strings.ReplaceAll(m.name, " ", "_"))
			require.NoError(t, os.MkdirAll(d, 0o755))
			res := runRetryCase(t, ctx, d, p, m.file, m.old, m.new, "the retry co-simulation passes a requester with "+m.name)
			if res == nil {
				return
			}
			// The RTL's order per context and its statuses are the plan's
			// (TestRetryPlan derives them).
			for q := range p.psns {
				assert.Equal(t, p.psns[q], res.psns[q], "context %d's PSNs", q)
			}
			assert.Equal(t, p.status, res.status, "completion statuses")
			assert.Equal(t, p.rnr, res.waits, "RNR waits checked")
		})
	}
}

// newRetryPurgePlan is a run whose sequence error NAK comes while most of
// its QP's packets are still in the requester's packet queue: on context
// 0 (MTU 256) a WRITE of 2048 bytes (8 packets) and a SEND of 1000 (4);
// the port has credit for 60 cycles, none from 60 to 399, plenty after,
// and the NAK, at the WRITE's packet 1, is due once 2 packets have left.
// The queued packets must be purged (hca.Device.purge after a rewind)
// and the WRITE resent from packet 1, the SEND whole. Which packets had
// left when the NAK was taken is the RTL's timing, so the expected
// packets are only the replay's (no static counts; the testbench runs the
// control's 900 cycles out), and there is no ACK after it: an ACK
// through the SEND before its resend left would name a message the
// model never sent (and the RTL counts as sent once purged: docs/rtl.md,
// "Retries").
func newRetryPurgePlan() *retryPlan {
	p := &retryPlan{run: &reqRun{}}
	run := p.run
	cfg := &reqItem{cfg: true, qix: 0, qpn: 0x2340, dlid: 0x31, slid: 0x41, sl: 2, vl: 3, rqpn: 0xB0000, psn: 0x10, mtuCode: 1, cqn: 2}
	run.items = append(run.items, cfg)
	for i, w := range []hca.SendWQE{
		{Opcode: hca.WRRDMAWrite, Length: 2048, RemoteAddr: 0x9000_0000, RKey: 0x77, LocalAddr: 0x80_0000 + 3},
		{Opcode: hca.WRSend, Length: 1000, LocalAddr: 0x90_0000 + 40},
	} {
		w.QPN, w.Index, w.Signaled = cfg.qpn, uint16(i), true
		run.items = append(run.items, &reqItem{qix: 0, qpn: cfg.qpn, every: retryEvery, wqe: w, sent: true})
	}
	run.acks = append(run.acks, reqAck{gate: 2, qpn: cfg.qpn, psn: 0x11, syn: hca.SynNAKSeq, msn: 1})
	run.beats = 1 << 20 // never reached: the control's cycles end the run
	for c := range 900 {
		cred := uint64(2048)
		if c >= 60 && c < 400 {
			cred = 0
		}
		run.ctrl = append(run.ctrl, [5]uint64{0x31f, cred, cred, cred, cred})
	}
	return p
}

// TestRequesterRetryPurgeCosim: a rewind purges the QP's packets still
// queued, and the resend is the model's; without the purge it fails.
func TestRequesterRetryPurgeCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	p := newRetryPurgePlan()
	dir := t.TempDir()
	for _, m := range []struct{ name, old, new string }{
		{name: "unmutated"},
		{"no purge at a rewind", "((any_fail || rewind) && e_ctx == q[QPN_W-1:0]))", "(any_fail && e_ctx == q[QPN_W-1:0]))"},
	} {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, out, res := runRetryMutant(t, ctx, dir, p, "r", m.name, m.old, m.new)
			m2 := reqResult.FindStringSubmatch(out)
			drops, _ := strconv.Atoi(m2[15])
			if m.old != "" {
				assert.True(t, res.errors > 0, "the purge co-simulation passes a requester with %s", m.name)
				t.Logf("%d mismatches: %s", res.errors, strings.Join(res.first, "; "))
				return
			}
			assert.Zero(t, res.errors, "mismatches: %s", strings.Join(res.first, "; "))
			assert.Equal(t, 1, res.acks, "the NAK taken")
			// The purge did something: packets of the QP were in the
			// queue when the NAK came (the credit stop holds them).
			assert.Positive(t, drops, "packets the rewind purged")
			// The first 2 packets, then the resend: the WRITE's packets
			// 1..7 and the SEND's 4, at least (more if some had left).
			assert.GreaterOrEqual(t, len(res.psns[0]), 2+7+4, "packets sent")
			t.Logf("%d packets sent, %d purged, PSNs %x", len(res.psns[0]), drops, res.psns[0])
		})
	}
}
