package rtl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- the whole emitted hca_top <-> hca.Requester, hca.RequesterCQE, ib.AppendWire ----
//
// Every other co-simulation of the HCA drives one block, or hca_transport,
// with stand-ins for its neighbours. This one drives the emitted hca_top of
// a small design (2 VLs, QPN_W 3 as hcasim rtl writes it, 8 read tags, MRRS
// and MPS 128) only through what software and the wire see:
//
//   - host memory (topMemBlocks 64-byte blocks): the send queue rings with
//     the WQEs (hca.EncodeSendWQE), the payloads, the CQ rings; it answers
//     hca_dma_engine's tagged read requests with completion beats after a
//     random latency, one beat a cycle from a random request among those due
//     (so the tags' completions interleave and come out of order), and takes
//     its posted writes with their byte enables; host_rd_ready and
//     host_wr_ready drop at random;
//   - the MPT (hca.KeyTable.Entry's entries) that hca_key_check reads, with
//     a random latency;
//   - the QP, send queue and CQ context writes (qp_cfg_*, sq_cfg_*,
//     cq_cfg_*) after reset, then the send doorbells by MMIO (hca_doorbell:
//     the first 8 bytes of the last WQE's control segment, the two
//     BlueFlame halves in turn), each QP rung twice;
//   - the link, forced inside ib_link since its PCS is TODO: the transmit
//     side's PCS ready (pcs_tx_ready, random) so every packet goes through
//     ib_link's transmit ib_vcrc; received packets as ib.AppendWire's bytes
//     (VCRC included) on its PCS receive stream (pcs_rx_*), so they pass its
//     receive ib_vcrc, ib_rx_vl_buffers and hca_rx_ack's checks, each sent
//     only when the HCA's advertised FCCL (fccl_adv) has room for it;
//     flow-control packets (fc_rx_*) giving the HCA 256 blocks beyond what
//     the testbench has received on each VL, and the testbench's FCTBS.
//
// The far end is the model's: per QP a hca.Responder takes the QP's
// packets in order; its ACKs, READ responses and ATOMIC ACKNOWLEDGE go
// back on the link, each once the QP has sent the packet that caused it,
// and into the model's requester in the same order (modelRx).
//
// Expected values, per QP, from the model: a hca.Requester made at the
// context's MTU and PSN, Enqueue for each WQE as hca.DecodeSendWQE reads it
// from the ring, Next until it has no work, each packet's payload read from
// the memory image at LocalAddr + index x MTU, encoded by ib.AppendWire.
// Checked: every packet on the link byte for byte (through its VCRC) and in
// its QP's order; the packets of different QPs interleave as the RTL's
// arbitration and the host's latencies make them (hca_requester sends a
// message whole, and the WQE fetch serves QPs in the order their reads
// complete), where the model's scheduler interleaves QPs packet by packet:
// that order is timing, not bytes, so it is not compared. Host memory at the
// end must be the image with each completion's CQE (hca.RequesterCQE,
// hca.EncodeCQE with hca.CQESlot's owner bit, each QP its own CQ) at its slot
// and each READ's payload where the model places it (hca.Placement), and
// nothing else changed; no receive counter of hca_top may move (no packet
// dropped or refused).
//
// Every CQE write is checked too, in its CQ's order (the model's CQE at
// the model's slot, all 64 bytes enabled), so a CQE a wrapping ring later
// overwrites shows.
//
// TestTopRetryCosim (cosim_topretry_test.go) runs the same bench on the
// recovery and error paths: a packet the wire loses, recovered by the far
// end's NAK and by the requester's timer, a refused R_Key, a CQ that
// wraps, inline WQEs and gather lists, RDMA WRITEs arriving for the
// responder (topQP.in: their ACKs, BTH opcode ACKNOWLEDGE, are checked
// apart from the QP's requests). TestTopRecvCosim (cosim_toprecv_test.go)
// runs it with receive WQEs posted (topQP.recv, rq_cfg_*, rq_db_*) and
// SENDs and WRITEs with immediate arriving: their receive CQEs
// (hca.ResponderCQE) in each QP's receive CQ, CQ NQ + q, and an RNR NAK.
// TestTopReadCosim (cosim_topread_test.go) runs it with RDMA READs
// arriving (topIn op hca.WRRDMARead, duplicates topIn.dup): the
// responder's READ responses, read from host memory, on the link with its
// ACKs and NAKs (every BTH opcode 0x0D..0x12 is the responder's).
// Not checked here: timing, the PCS.

const (
	topMemBlocks = 2048 // host memory: 128 KiB from address 0
	topRingBlk   = 0    // SQ rings: context q's at block q x 16
	topRingLog   = 4    // 16 WQEBBs per ring
	topCQBase    = 0x1000
	topCQLog     = 3 // 8 CQEs per CQ ring, at topCQBase + q x 0x200: 8 CQs (4 QPs' send and receive CQs) below topPayBase
	topPayBase   = 0x2000
	topPayStep   = 0x4000 // each QP's registered region: topPayBase + q x topPayStep, 16 KiB
	topEvery     = 3      // ack_req_every (hca.ack_req_every)
	topInBase    = 0x14000
	topInStep    = 0x2000 // each QP's inbound region (RDMA WRITEs from the far end): topInBase + q x topInStep, 8 KiB
	topPortLID   = reqPortLID
	topStall     = 3000    // cycles with nothing moving that end a run
	topRQBase    = 0x1C000 // receive queue rings: QP q's at topRQBase + q x topRQStep
	topRQStep    = 0x100   // 16 receive WQEs of 16 bytes
	topRQLog     = 4
	topCycles    = 40000
)

// topMsg is one WQE of the scenario.
type topMsg struct {
	wr hca.SendWR
	// inl, when not nil, is an inline WQE's data (wr.Inline, wr.Length
	// its length): the WQE carries it, no host read.
	inl []byte
}

// topQP is one QP of the scenario, as software posts it and the model
// runs it.
type topQP struct {
	it    *reqItem
	pd    uint32
	msgs  []topMsg
	batch int // the WQEs the first doorbell covers; the second covers the rest
	// ringLog is log2 of its send queue's WQEBBs (0: topRingLog). A ring
	// smaller than its WQEs wraps: the second batch is written into it by
	// software (the testbench) once the first batch's CQEs are all in
	// (their slots are free again), just before its doorbell.
	ringLog int
	later   []topWrite // the second batch's WQEBBs when the ring wraps
	need    int        // CQEs the second doorbell waits for (the first batch's signaled WQEs)
	// lose are the QP's packets the wire loses, by their place in its
	// order on the link (resends counted): the far end never sees them.
	// rxLose are the far end's packets to the QP (its ACKs, NAKs and
	// responses, by their place in the order it sends them) the wire
	// loses: the HCA never sees them.
	lose, rxLose []int
	// refuse is an R_Key the far end's responder refuses (NAK remote
	// access error); 0 none.
	refuse uint32
	// farRNR: the far end's receive queue is empty for the QP's first
	// farRNR SENDs (-1: all of them; counted as the far end's responder
	// takes them, resends included), each RNR-NAKed with timer code
	// farRNRCode (the far end's min_rnr_timer).
	farRNR     int
	farRNRCode uint8
	// late: software posts the second batch (writes its WQEs, rings its
	// doorbell) only once the first batch's CQEs are all in its CQ, so
	// the model enqueues it after the first batch's exchange is over (a
	// QP gone to ERR by then flushes it).
	late bool
	// cqLog is log2 of its CQ's entries (0: topCQLog); consume: software
	// consumes each CQE as it lands, advancing the CQ's consumer index
	// (cq_ci) to the CQEs written, so a CQ with fewer entries than the
	// QP's CQEs wraps.
	cqLog   int
	consume bool
	// overrun: the QP's CQ may overrun (software consumes nothing and it
	// has fewer entries than the QP's CQEs): the CQEs that find it full
	// are dropped and its cq_overrun flag set, as the model does.
	overrun bool
	// in are the requests the far end sends the QP's responder (its
	// expected PSN 0: the contexts' qp_cfg_rqpsn): RDMA WRITEs, each n
	// bytes at off in the QP's inbound region (topInBase + q x topInStep,
	// remote write), with immediate, and SENDs.
	in []topIn
	// inAccess is the remote access of the QP's inbound region (0: remote
	// write and remote read; hca.Access* flags, local write always).
	inAccess int
	// recv are the receive WQEs software posts (one element each, at off
	// in the inbound region, n bytes) before any traffic: written into the
	// QP's receive queue ring (topRQBase + q x topRQStep), set through
	// rq_cfg_*, announced by one rq_db_* doorbell. rnr is the QP's
	// min_rnr_timer (qp_cfg_rnr), in its RNR NAKs.
	recv []topIn
	rnr  uint8
	// rls is log2 of the receive queue's stride in 16-byte segments
	// (rq_cfg_log_stride; hca.QP.RecvStride is 16 << rls): each posted
	// WQE is hca.EncodeRecvWQE's bytes in that stride (its elements, the
	// terminator after fewer than 2^rls), the ring 2^topRQLog WQEs of it.
	rls int
	// lateRecv are receive WQEs software posts later, into the ring's
	// next slots (already in the image: the HCA reads a slot only once a
	// doorbell announces it), announced by a second rq_db_* doorbell once
	// the QP's receive CQ holds lateNeed CQEs; to a QP in ERR they are
	// flushed (hca.Device.recvDoorbell).
	lateRecv []topIn
	lateNeed int
	// model
	req   *hca.Requester
	wqes  []hca.SendWQE
	first []uint32 // each WQE's first PSN
	npsn  []int    // the PSNs it takes
	next  uint32
	wires [][]byte // its packets, whole beats
	psns  []uint32
	ends  []int    // per WQE, the QP's packets sent through its request
	db    []uint64 // per WQE, its control segment's first 8 bytes (the doorbell)
	cqes  [][]byte // its CQEs in the order they are written, each 64 bytes
	slots []int    // each CQE's slot in its CQ
	// acks are the ACKs and NAKs its responder sends for in, in order,
	// whole beats (hca.Responder's, addressed as hca.Device.sendAck does).
	acks [][]byte
	// rnrResend: the far end's packets to the QP (by their place in its
	// list) that are RNR NAKs the model resends after (not the one that
	// fails the WQE).
	rnrResend map[int]bool
	// prompt: the far end's packets to the QP that make the model resend
	// at once (a sequence error NAK, an implied NAK), by their place.
	prompt map[int]bool
	// rcqes are the receive CQEs its responder writes (hca.ResponderCQE)
	// into its receive CQ, in order, and rslots their slots.
	rcqes  [][]byte
	rslots []int
	// rpay are, per receive CQE, the host bytes its message wrote (each
	// packet's WriteAddr and length since the QP's previous receive CQE):
	// the CQE's write must land after all of them (judge).
	rpay [][]topSpan
	// preads are the model's payload reads of the packets send made, in
	// order (packetPayReads), and resent whether a packet went twice
	// (judgePayReads: the order of the RTL's reads is then timing).
	preads []payRead
	resent bool
	sentTo []int // per WQE, the highest packet index sent plus one
}

// topSpan is n bytes of host memory from a.
type topSpan struct {
	a uint64
	n int
}

// topIn is a request the far end sends to a QP's responder: an RDMA
// WRITE (op 0), WRITE with immediate, SEND (with or without immediate) or
// RDMA READ of n bytes, a WRITE's or READ's at off in the QP's inbound
// region; or a receive buffer (topQP.recv).
type topIn struct {
	off uint64
	n   uint32
	op  hca.WROpcode
	imm uint32
	// dup, for a READ: this request is the far end's READ qp.in[dup-1]
	// sent again (a duplicate, as a requester resends after a timeout),
	// from its response from on: its PSN, VA and length advanced by from
	// responses (from MTUs), as hca.Requester.Next asks for the rest.
	dup, from int
	// sgl, for a receive buffer (topQP.recv): non-nil, the WQE is a list
	// of these elements (each its off and n; empty: mlx5's empty list),
	// each with the inbound region's L_Key (one past the region's end
	// fails its key check); nil, the single element off, n.
	sgl []topIn
	// An atomic (op WRCompSwap or WRFetchAdd, n 8, off 8-byte aligned or
	// not): its swap/add and compare data; hit: the compare is the word at
	// off as the image holds it before any request arrives (a CMP_SWAP
	// that swaps).
	swap, cmp uint64
	hit       bool
	// afterErr: the request arrives once the QP's requester has gone to
	// ERR and its receive WQEs are flushed (the far end's list waits for
	// the QP's receive CQ to hold every CQE the model writes before it:
	// topGateCQ); the model's QP drops it. Every request without it
	// arrives before that ERR (gate 0, at the run's start: a scenario
	// whose requester fails by its timers, thousands of cycles later).
	afterErr bool
}

// topGateCQ is a receive packet's gate that waits for CQ cq (its place
// in the CQ area, < 16) to hold n CQEs (< 256), not for packets sent:
// bit 15 set (topTB).
func topGateCQ(cq, n int) int {
	if cq >= 16 || n >= 256 {
		panic(fmt.Sprintf("topGateCQ: CQ %d, %d CQEs", cq, n))
	}
	return 1<<15 | cq<<8 | n
}

// isAtomic reports whether the request is an atomic.
func (w topIn) isAtomic() bool { return w.op == hca.WRCompSwap || w.op == hca.WRFetchAdd }

// topLocal is the QP's responder's environment, as hca.QP's: R_Keys
// checked in the MPT (hca.KeyTable.CheckRemote) in its PD, receive
// buffers' L_Keys for a local write (hca.KeyTable.Check), the posted
// receive WQEs taken in order.
type topLocal struct {
	keys    *hca.KeyTable
	pd, qpn uint32
	rq      *[]hca.RecvWQE
}

func (e topLocal) CheckRKey(key uint32, need int, addr, n uint64) hca.KeyResult {
	return e.keys.CheckRemote(key, e.pd, e.qpn, need, addr, n)
}
func (e topLocal) RKeyBase(key uint32) uint64 { return e.keys.ZeroBase(key) }
func (e topLocal) CheckLKey(key uint32, addr, n uint64) hca.KeyResult {
	return e.keys.Check(key, e.pd, hca.AccessLocalWrite, addr, n)
}
func (e topLocal) PopRecv() (hca.RecvWQE, bool) {
	if len(*e.rq) == 0 {
		return hca.RecvWQE{}, false
	}
	w := (*e.rq)[0]
	*e.rq = (*e.rq)[1:]
	return w, true
}

// lost reports whether the wire loses the QP's packet i.
func (qp *topQP) lost(i int) bool { return slices.Contains(qp.lose, i) }

// cqDepthLog is log2 of qp's CQ's entries.
func (qp *topQP) cqDepthLog() int {
	if qp.cqLog == 0 {
		return topCQLog
	}
	return qp.cqLog
}

// topWrite is a software write of one host block before a doorbell.
type topWrite struct {
	blk  int
	data []byte
}

// topDoorbell is an MMIO doorbell write at cycle at (or later: once its
// QP's CQ holds need CQEs), after the software writes of its WQEs.
type topDoorbell struct {
	at      int
	addr    uint64
	data    uint64
	q, need int
	writes  []topWrite
}

// topPlan is a run: the memory image, the QPs, the responder's packets,
// and what the model expects.
type topPlan struct {
	mem   [][]byte // the image the host starts with, by block
	want  [][]byte // the image it must end with
	keys  hca.KeyTable
	qps   []*topQP
	rx    [][]reqAck // per QP, the responder's packets in order, each with its gate (the QP's packets sent)
	dbs   []topDoorbell
	ncqe  int
	nread int // READ payload bytes the host must take
	// naks are the sequence error NAKs the far end sends (hca_top counts
	// them on rx_nak_retry); timeouts the model's local ACK timeouts
	// (Requester.OnTimeout), taken only when timer is set (the design has
	// the timer: topRetryDesign).
	naks, timeouts int
	timer          bool
	// rnrTick, when not 0, is the design's RNR_TICK: each resend after an
	// RNR NAK must leave no earlier than the NAK's timer after the NAK.
	rnrTick int
	// promptWithin, when not 0, is the cycles within which a QP's next
	// request must leave after a packet that makes the model resend at
	// once (topQP.prompt): fewer than the local ACK timeout, so a resend
	// its timer makes instead fails it.
	promptWithin int
	// overruns are the CQs (bit q: QP q's send CQ) that overran: hca_top's
	// cq_overrun flags at the end.
	overruns int
	// rnaks are the NAKs the HCA's responders send (rsp_naks); rdups the
	// duplicates they see (rsp_dup: requests behind the expected PSN, the
	// context not in ERR), rerrs the requests for a context in ERR
	// (rsp_errdrop).
	rnaks, rdups, rerrs int
	// wrStall: the host holds the last beat of every TLP of two or more
	// beats 6 cycles before taking it (+wrstall), so the next TLP's pick
	// waits in the DMA engine and a CQE that does not wait for its payload
	// can overtake the payload's next TLP there (receive CQE order,
	// judge). Off, the bench is as before (no extra random number).
	wrStall bool
}

// topScenario is the run's WQEs: four QPs at MTU 256, 512, 1024 and 4096,
// on both VLs, one QP's PSNs wrapping; RDMA WRITEs, SENDs, with and
// without immediate, of 1 byte to 5000 (one to five packets), at any
// lane; a READ on three of them (one to three responses); a FETCH_ADD; an
// unsignaled SEND; and a SEND with immediate arriving for QP 2's
// responder (a receive completion in its receive CQ).
func topScenario() []*topQP {
	w := topWRs(0x7000_0000_0000, 3, 0xA0B0C000)
	unsig := w(hca.WRSend, 1, 0x3000, 10)
	unsig.Signaled = false
	fadd := w(hca.WRFetchAdd, 2, 0x2100, 8)
	fadd.CompareAdd = 0x0123_4567_89AB_CDEF
	return []*topQP{
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000A10 | 0, dlid: 0x21, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xD0000, psn: 0x10, mtuCode: 1, cqn: 0},
			msgs: []topMsg{{wr: w(hca.WRRDMAWrite, 0, 3, 700)}, {wr: w(hca.WRSend, 0, 0x400, 64)},
				{wr: w(hca.WRRDMARead, 0, 0x1000, 600)}, {wr: w(hca.WRSendImm, 0, 0x805, 300)}}, batch: 2},
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001B01, dlid: 0x22, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xD0001, psn: 0xFFFFFE, mtuCode: 2, cqn: 1},
			msgs: []topMsg{{wr: w(hca.WRSend, 1, 0x11, 1000)}, {wr: w(hca.WRRDMAWrite, 1, 0x7FF, 1)},
				{wr: w(hca.WRRDMAWriteImm, 1, 0x1234, 2000)}, {wr: unsig}, {wr: w(hca.WRRDMAWrite, 1, 0x3100, 129)}}, batch: 3, ringLog: 2},
		{it: &reqItem{cfg: true, qix: 2, qpn: 0x002C02, dlid: 0x23, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xD0002, psn: 0x5000, mtuCode: 3, cqn: 2},
			msgs: []topMsg{{wr: w(hca.WRRDMAWrite, 2, 0x20, 4000)}, {wr: w(hca.WRRDMARead, 2, 0x2007, 100)}, {wr: fadd},
				{wr: w(hca.WRSend, 2, 0x3001, 1)}}, batch: 1,
			// A SEND with immediate arriving, into a receive WQE posted:
			// its receive CQE in QP 2's receive CQ (CQ 6).
			in: []topIn{{off: 0x100, n: 700, op: hca.WRSendImm, imm: 0x7E57_0002}}, recv: []topIn{{off: 0x100, n: 1024}}},
		{it: &reqItem{cfg: true, qix: 3, qpn: 0x003D03, dlid: 0x24, slid: topPortLID, sl: 5, vl: 1, rqpn: 0xD0003, psn: 0x777777, mtuCode: 5, cqn: 3},
			msgs: []topMsg{{wr: w(hca.WRSend, 3, 0x40, 5000)}, {wr: w(hca.WRRDMARead, 3, 0x2000, 4500)}}, batch: 1},
	}
}

// newTopPlan builds the memory image, posts the WQEs and runs the model.
func newTopPlan(seed uint64) *topPlan { return newTopPlanOf(seed, topScenario(), 0, false) }

// newTopPlanOf builds the run of qps: the memory image, the WQEs posted,
// the model run with retryCnt (hca.retry_cnt: the design's RETRY_CNT) and,
// when timer is set, its local ACK timeouts.
func newTopPlanOf(seed uint64, qps []*topQP, retryCnt int, timer bool) *topPlan {
	return newTopPlanRetries(seed, qps, retryCnt, -1, timer)
}

// newTopPlanRetries is newTopPlanOf with rnrRetry (hca.rnr_retry: the
// design's RNR_RETRY; -1 the device's default) too.
func newTopPlanRetries(seed uint64, qps []*topQP, retryCnt, rnrRetry int, timer bool) *topPlan {
	r := rand.New(rand.NewPCG(seed, 0x70b))
	p := &topPlan{qps: qps, timer: timer}
	p.mem = make([][]byte, topMemBlocks)
	for i := range p.mem {
		p.mem[i] = make([]byte, BlockBytes)
		for k := range p.mem[i] {
			p.mem[i][k] = byte(r.Uint32())
		}
	}
	cfg := hca.Defaults()
	cfg.MaxRdAtomic = 1 << 30 // hca_top's RD_RES 16 (hca_requester's MAX_RD_ATOMIC) is more than a ring of 8 holds: it never binds
	cfg.AckReqEvery = topEvery
	if retryCnt != 0 {
		cfg.RetryCnt = retryCnt
	}
	if rnrRetry >= 0 {
		cfg.RNRRetry = rnrRetry
	}
	for q, qp := range p.qps {
		qp.pd = 0x100 + uint32(q)*0x11
		mr := p.keys.Register(qp.pd, topPayBase+uint64(q)*topPayStep, topPayStep, hca.AccessLocalWrite)
		qp.it.pd = qp.pd
		qp.req = hca.NewRequester(&cfg, pktzMTU(qp.it.mtuCode), qp.it.psn)
		qp.next = qp.it.psn
		total := 0 // the QP's WQEBBs
		for k := range qp.msgs {
			total += hca.WQEBBs(&qp.msgs[k].wr)
		}
		pos := 0 // WQE k's first WQEBB in the queue (its wqe_index), from 0
		for k := range qp.msgs {
			wr := &qp.msgs[k].wr
			wr.LKey = mr.LKey
			for e := range wr.SGL {
				wr.SGL[e].LKey = mr.LKey
			}
			if qp.msgs[k].inl != nil {
				wr.Inline, wr.Length = true, uint32(len(qp.msgs[k].inl))
			}
			var buf [16 * hca.WQEBBBytes]byte
			n := hca.EncodeSendWQE(buf[:], wr, uint16(pos), qp.it.qpn, qp.msgs[k].inl) / hca.WQEBBBytes
			for b := range n {
				// Each WQEBB at its slot of the ring, across its end.
				blk := topRingBlk + q<<topRingLog + (pos+b)%(1<<qp.ring())
				bb := buf[b*hca.WQEBBBytes : (b+1)*hca.WQEBBBytes]
				switch {
				case k < qp.batch:
					copy(p.mem[blk], bb)
				case total > 1<<qp.ring():
					qp.later = append(qp.later, topWrite{blk: blk, data: append([]byte(nil), bb...)})
				default:
					copy(p.mem[blk], bb)
				}
			}
			if k < qp.batch && qp.msgs[k].wr.Signaled {
				qp.need++
			}
			pos += n
			qp.db = append(qp.db, binary.BigEndian.Uint64(buf[:8]))
			wqe, err := hca.DecodeSendWQE(buf[:])
			if err != nil {
				panic(err)
			}
			if k < qp.batch || !qp.late {
				if p.keyBad(qp, wqe) {
					// Its failure would flush what is outstanding then:
					// a matter of timing (a late batch's is not).
					panic(fmt.Sprintf("topPlan: QP %d WQE %d fails its L_Key check outside a late batch (not built)", q, k))
				}
				if comps := qp.req.Enqueue(wqe, 0); len(comps) != 0 {
					panic(fmt.Sprintf("topPlan: QP %d WQE %d completes at once: %+v", q, k, comps))
				}
			}
			np := hca.PacketCount(wqe.Length, pktzMTU(qp.it.mtuCode))
			qp.wqes, qp.first, qp.npsn = append(qp.wqes, wqe), append(qp.first, qp.next), append(qp.npsn, np)
			qp.next = (qp.next + uint32(np)) & 0xFFFFFF
		}
	}
	p.want = make([][]byte, topMemBlocks)
	for i := range p.mem {
		p.want[i] = append([]byte(nil), p.mem[i]...)
	}
	for _, qp := range p.qps {
		for _, w := range qp.later {
			copy(p.want[w.blk], w.data)
		}
	}
	// The far end: per QP a hca.Responder (the device's defaults:
	// ack_coalesce 1) takes the QP's packets in order, as ib.ParseWire reads
	// them, but those the wire loses; each ACK or NAK it decides, each
	// READ's responses (their payload the remote memory's, topRemoteBytes)
	// and the coalesced ACK FlushAck owes at the end go back to the HCA,
	// each once the QP has sent the packet that made it (a NAK: once it has
	// sent every packet the model has, since its go-back-N or failure acts
	// on all of them), and into the model's requester in that order
	// (modelRx, hca.Device.complete's calls). What that makes the requester
	// send (a go-back-N resend) goes to the far end in turn, until neither
	// side has more to say; then, with the timer, a QP still waiting for an
	// ACK times out (OnTimeout: the far end lost its request) and resends.
	placed := map[uint64]byte{}
	rcfg := hca.Defaults()
	for q, qp := range p.qps {
		var rx []reqAck
		var cpls []hca.Completion
		resp := hca.NewResponder(&rcfg, pktzMTU(qp.it.mtuCode), qp.it.psn)
		farSent := 0 // the far end's packets to the QP so far, those the wire loses among them
		deliver := func(a reqAck) {
			farSent++
			if slices.Contains(qp.rxLose, farSent-1) {
				return // lost on the wire: neither the HCA nor the model's requester sees it
			}
			a.qpn = qp.it.qpn
			rx = append(rx, a)
			if a.retry() {
				p.naks++
			}
			res, pl, ok := modelRx(qp.req, a)
			if a.rsp == nil && a.syn&0xE0 == hca.SynRNRNAK && res.RNRWait {
				if qp.rnrResend == nil {
					qp.rnrResend = map[int]bool{}
				}
				qp.rnrResend[len(rx)-1] = true
			} else if res.Rewound {
				if qp.prompt == nil {
					qp.prompt = map[int]bool{}
				}
				qp.prompt[len(rx)-1] = true
			}
			if ok {
				data := a.rsp.Payload
				if a.rsp.Opcode == ib.AtomicAcknowledge {
					// The original value, little-endian (hca.Device.complete).
					data = binary.LittleEndian.AppendUint64(nil, a.rsp.AtomicAck)
				}
				reqScatter(placed, pl, data)
				p.nread += len(data)
			}
			cpls = append(cpls, res.Completions...)
		}
		rnrLeft := qp.farRNR
		env := topRemote{refuse: qp.refuse, rnr: &rnrLeft}
		if qp.farRNR != 0 {
			resp.MinRNRTimer = int(qp.farRNRCode)
		}
		seen, late := 0, qp.late
		for {
			p.send(qp)
			if seen < len(qp.wires) {
				for ; seen < len(qp.wires); seen++ {
					i, w := seen, qp.wires[seen]
					if qp.lost(i) {
						continue
					}
					pkt, err := ib.ParseWire(w[:wireLen(w)])
					if err != nil {
						panic(fmt.Sprintf("topPlan: QP %d packet %d: %v", q, i, err))
					}
					act := resp.Receive(&pkt, env)
					if act.Drop && !act.Ack && qp.lose == nil && qp.refuse == 0 {
						panic(fmt.Sprintf("topPlan: QP %d packet %d dropped by the responder", q, i))
					}
					if act.Ack {
						gate := i + 1
						if act.AckSyn&0x60 != 0 { // a NAK (RNR: 0x20, the others 0x60)
							gate = len(qp.wires)
						}
						deliver(reqAck{gate: gate, psn: act.AckPSN, syn: act.AckSyn, msn: act.MSN})
					}
					if act.Atomic {
						// The original value at the address, as hca.Device.atomic
						// returns it (the far end's memory is not kept: one atomic).
						orig := binary.BigEndian.Uint64(topRemoteBytes(act.XlateAddr, 8))
						resp.SaveAtomic(pkt.PSN, orig)
						a := atomicAck(pkt.PSN, orig, false)
						a.gate, a.rsp.AETH.MSN = i+1, resp.MSN()
						deliver(a)
					}
					if act.Read {
						va := act.ReadVA
						for more := true; more; {
							rp := &ib.Packet{}
							_, more = resp.NextReadResponse(act.ReadRes, rp)
							rp.Payload = topRemoteBytes(va, rp.PayloadLen)
							va += uint64(rp.PayloadLen)
							resp.ReadResponseSent(act.ReadRes, rp.PSN)
							deliver(reqAck{gate: i + 1, psn: rp.PSN, rsp: rp})
						}
					}
				}
				continue
			}
			if psn, msn, ok := resp.FlushAck(); ok {
				deliver(reqAck{gate: len(qp.wires), psn: psn, syn: hca.SynACK, msn: msn})
				continue
			}
			if p.timer && qp.req.Outstanding() {
				p.timeouts++
				cpls = append(cpls, qp.req.OnTimeout().Completions...)
				continue
			}
			if late {
				// The first batch's exchange is over (its timeouts
				// too): software sees its CQEs, then posts the rest
				// (Enqueue: in ERR, flushed).
				late = false
				qp.need = 0
				for _, c := range cpls {
					if _, ok := hca.RequesterCQE(qp.it.qpn, c); ok {
						qp.need++
					}
				}
				for _, w := range qp.wqes[qp.batch:] {
					if qp.req.State != hca.QPErr && p.keyBad(qp, w) {
						// A local protection error (hca.Device.wqeReady,
						// failWQE): what is outstanding flushed (nothing,
						// here), the WQE fails unsent, the QP to ERR.
						cpls = append(cpls, qp.req.FlushAll()...)
						cpls = append(cpls, hca.Completion{WQE: w, Status: hca.WCLocProtErr})
						continue
					}
					cpls = append(cpls, qp.req.Enqueue(w, 0)...)
				}
				continue
			}
			break
		}
		p.rx = append(p.rx, rx)
		// Each completion's CQE at its slot of the QP's CQ: nothing consumed
		// (ci 0), or, when software consumes each CQE as it lands, ci = the
		// CQEs written before it (so there is always room).
		pi := uint32(0)
		for _, c := range cpls {
			cqe, ok := hca.RequesterCQE(qp.it.qpn, c)
			if !ok {
				continue
			}
			ci := uint32(0)
			if qp.consume {
				ci = pi
			}
			slot, owner, room := hca.CQESlot(1<<qp.cqDepthLog(), pi, ci)
			if !room {
				if !qp.overrun {
					panic("topPlan: a CQ overruns")
				}
				// The consumer has not freed a slot: the CQE is dropped,
				// pi stays and the CQ's overrun flag is set
				// (hca.Device.cqeVisible: CQ.Overrun).
				p.overruns |= 1 << q
				continue
			}
			cqe.Owner = owner
			var buf [hca.CQEBytes]byte
			hca.EncodeCQE(buf[:], &cqe)
			copy(p.want[topCQBlock(q)+int(slot)], buf[:])
			qp.cqes, qp.slots = append(qp.cqes, append([]byte(nil), buf[:]...)), append(qp.slots, int(slot))
			pi++
			p.ncqe++
		}
	}
	// Requests arriving: the far end's RDMA WRITEs to each QP's responder,
	// as a far-end hca.Requester makes them (their payload topRemoteBytes
	// of the remote address), in one list of their own, sent at any time
	// (gate 0). The QP's responder is the model's (hca.Responder, expected
	// PSN 0, ack_coalesce 1, the R_Key checked in the MPT): each packet's
	// payload lands at its WriteAddr, each ACK it decides goes on the link
	// from the QP's context (DLID, SLID, SL, VL, remote QPN).
	//
	// SENDs and WRITEs with immediate take the QP's posted receive WQEs
	// (topQP.recv: written into its receive queue ring in the image, in
	// order, as hca.EncodeRecvWQE writes them; L_Key the inbound region's);
	// each receive completion's CQE (hca.ResponderCQE, at hca.CQESlot's
	// slot of the QP's receive CQ, nothing consumed) is expected there, and
	// a SEND with none left is RNR-NAKed with the QP's min_rnr_timer.
	//
	// A READ (R_Key checked for remote read) is answered by its responses
	// (hca.Responder.NextReadResponse, taken whole before the next request
	// as hca_ack_tx sends every reply whole), addressed as the ACKs, their
	// payload the host's bytes (the image's: no WRITE of the run lands
	// there) at the READ's VA plus the bytes before them, on the link in
	// order with the QP's ACKs and NAKs. A duplicate READ (topIn.dup) is
	// the original request sent again, from inside when from > 0; the
	// responder replays it from its resource.
	var in []reqAck
	for q, qp := range p.qps {
		if qp.in == nil && qp.recv == nil && qp.lateRecv == nil {
			continue
		}
		acc := qp.inAccess
		if acc == 0 {
			acc = hca.AccessRemoteWrite | hca.AccessRemoteRead
		}
		if slices.ContainsFunc(qp.in, topIn.isAtomic) {
			acc |= hca.AccessRemoteAtomic // the region takes the far end's atomics too
		}
		mr := p.keys.Register(qp.pd, topInBase+uint64(q)*topInStep, topInStep, hca.AccessLocalWrite|acc)
		var rq, late []hca.RecvWQE
		for k, b := range append(slices.Clone(qp.recv), qp.lateRecv...) {
			wr := hca.RecvWR{Addr: mr.Addr + b.off, Length: b.n, LKey: mr.LKey}
			if b.sgl != nil {
				wr = hca.RecvWR{SGL: []hca.SGE{}}
				for _, e := range b.sgl {
					wr.SGL = append(wr.SGL, hca.SGE{Addr: mr.Addr + e.off, Length: e.n, LKey: mr.LKey})
				}
			}
			buf := make([]byte, hca.RecvWQEBytes<<qp.rls)
			hca.EncodeRecvWQE(buf, &wr)
			a := int(p.rqBase(q)) + k*len(buf)
			for j := 0; j < len(buf); j += BlockBytes {
				// A stride of 64 bytes or more: whole blocks; else the WQE lies in one.
				copy(p.mem[(a+j)/BlockBytes][(a+j)%BlockBytes:], buf[j:])
				copy(p.want[(a+j)/BlockBytes][(a+j)%BlockBytes:], buf[j:])
			}
			w := hca.DecodeRecvWQE(buf)
			w.Index = uint32(k)
			if k < len(qp.recv) {
				rq = append(rq, w)
			} else {
				late = append(late, w)
			}
		}
		mtu := pktzMTU(qp.it.mtuCode)
		far := hca.NewRequester(&cfg, mtu, 0)
		firsts := make([]uint32, len(qp.in)) // each request's first PSN (a duplicate's: its original's)
		next := uint32(0)
		for k, w := range qp.in {
			if w.dup != 0 {
				firsts[k] = firsts[w.dup-1]
				continue
			}
			if w.hit {
				w.cmp = topImageWord(p.mem, mr.Addr+w.off)
			}
			far.Enqueue(hca.SendWQE{Opcode: w.op, RemoteAddr: mr.Addr + w.off, RKey: mr.RKey, Length: w.n, Imm: w.imm, Signaled: true,
				SwapAdd: w.swap, Compare: w.cmp}, 0)
			firsts[k] = next
			next += uint32(hca.PacketCount(w.n, mtu))
		}
		// The far end's packets in the order it sends them: each request's
		// from its requester (no wrap: PSNs from 0), a duplicate's made
		// from its original's at its place.
		sent := make([][]ib.Packet, len(qp.in))
		for far.HasWork() {
			pkt := ib.Packet{SLID: qp.it.dlid, DLID: topPortLID, DestQP: qp.it.qpn}
			tx := far.Next(&pkt)
			k := -1 // the request holding the PSN
			for i, w := range qp.in {
				if w.dup == 0 && pkt.PSN >= firsts[i] {
					k = i
				}
			}
			pkt.Payload = topRemoteBytes(mr.Addr+qp.in[k].off+uint64(tx.Index*mtu), pkt.PayloadLen)
			sent[k] = append(sent[k], pkt)
		}
		var stream []ib.Packet
		var of []int // each packet's request (its place in qp.in)
		for k, w := range qp.in {
			if w.dup != 0 {
				o := qp.in[w.dup-1]
				skip := uint32(w.from * mtu)
				stream = append(stream, ib.Packet{Opcode: ib.RDMAReadRequest, SLID: qp.it.dlid, DLID: topPortLID, DestQP: qp.it.qpn,
					PSN: firsts[k] + uint32(w.from), AckReq: true, RETH: ib.RETH{VA: mr.Addr + o.off + uint64(skip), RKey: mr.RKey, Length: o.n - skip}})
			} else {
				stream = append(stream, sent[k]...)
			}
			for len(of) < len(stream) {
				of = append(of, k)
			}
		}
		ours := hca.NewResponder(&rcfg, pktzMTU(qp.it.mtuCode), 0)
		ours.MinRNRTimer = int(qp.rnr)
		env := topLocal{keys: &p.keys, pd: qp.pd, qpn: qp.it.qpn, rq: &rq}
		rpi := uint32(0)     // receive CQEs written
		var msgPay []topSpan // the bytes written since the last receive CQE
		rcqe := func(cqe hca.CQE, pay []topSpan) {
			slot, owner, room := hca.CQESlot(1<<topCQLog, rpi, 0)
			if !room {
				panic("topPlan: a receive CQ overruns")
			}
			cqe.Owner = owner
			var buf [hca.CQEBytes]byte
			hca.EncodeCQE(buf[:], &cqe)
			copy(p.want[topCQBlock(len(p.qps)+q)+int(slot)], buf[:])
			qp.rcqes, qp.rslots = append(qp.rcqes, append([]byte(nil), buf[:]...)), append(qp.rslots, int(slot))
			qp.rpay = append(qp.rpay, pay)
			rpi++
			p.ncqe++
		}
		addResp := func(pk *ib.Packet) {
			pk.DLID, pk.SLID, pk.SL, pk.VL, pk.DestQP = qp.it.dlid, qp.it.slid, qp.it.sl, qp.it.vl, qp.it.rqpn
			b := ib.AppendWire(nil, pk)
			w := make([]byte, (len(b)+BlockBytes-1)/BlockBytes*BlockBytes)
			copy(w, b)
			qp.acks = append(qp.acks, w)
		}
		// The requester's ERR (hca.Device.requesterErr, a QP whose
		// exchange above ended in ERR): its responder to ERR, its receive
		// WQEs posted and not consumed flushed in order; it comes after
		// the requests that arrive before it and before those marked
		// afterErr (topIn), which wait for the flushes' CQEs.
		reqErr := qp.req.State == hca.QPErr
		requesterErr := func() {
			if !reqErr {
				return
			}
			reqErr = false
			for _, w := range rq {
				rcqe(hca.FlushRecvCQE(qp.it.qpn, w.Index), nil)
			}
			rq = rq[:0]
			ours.State = hca.QPErr
		}
		for i := range stream {
			pkt := &stream[i]
			gate := 0
			if qp.in[of[i]].afterErr {
				if qp.req.State != hca.QPErr {
					panic(fmt.Sprintf("topPlan: QP %d's request %d arrives after an ERR its requester never reaches", q, of[i]))
				}
				requesterErr()
				gate = topGateCQ(len(p.qps)+q, len(qp.rcqes))
			}
			in = append(in, reqAck{gate: gate, qpn: qp.it.qpn, psn: pkt.PSN, rsp: pkt})
			inErr := ours.State == hca.QPErr
			switch {
			case ours.State == hca.QPErr:
				p.rerrs++ // dropped (rsp_errdrop)
			case (pkt.PSN-ours.ExpectedPSN())&0xFFFFFF >= 0x800000:
				p.rdups++ // behind the expected PSN: a duplicate (rsp_dup)
			}
			act := ours.Receive(pkt, env)
			if act.Write && act.RecvSGL != nil {
				// A SEND into a list: its bytes from ScatterOff on, over the
				// elements (hca.Device.scatter: one write per element part,
				// the elements of no byte in the range passed over).
				skip, i := act.ScatterOff, 0 // the message's bytes before the element part; the packet's placed
				for _, e := range act.RecvSGL {
					if i == len(pkt.Payload) {
						break
					}
					if skip >= uint64(e.Length) {
						skip -= uint64(e.Length)
						continue
					}
					take := int(min(uint64(e.Length)-skip, uint64(len(pkt.Payload)-i)))
					for j := range take {
						placed[e.Addr+skip+uint64(j)] = pkt.Payload[i+j]
					}
					msgPay = append(msgPay, topSpan{e.Addr + skip, take})
					i, skip = i+take, 0
				}
				if i != len(pkt.Payload) {
					panic(fmt.Sprintf("topPlan: QP %d: a SEND's %d bytes scatter %d into the list", q, len(pkt.Payload), i))
				}
			} else if act.Write {
				for i, v := range pkt.Payload {
					placed[act.WriteAddr+uint64(i)] = v
				}
				msgPay = append(msgPay, topSpan{act.WriteAddr, len(pkt.Payload)})
			}
			if act.RecvDone {
				rcqe(hca.ResponderCQE(qp.it.qpn, &act, pkt.SE), msgPay)
				msgPay = nil
			}
			if !inErr && ours.State == hca.QPErr {
				// A class C error: the QP goes to ERR, its receive WQEs
				// posted and not consumed are flushed in order after the
				// error's own completion (hca.Device.respond, flushRecvs).
				for _, w := range rq {
					rcqe(hca.FlushRecvCQE(qp.it.qpn, w.Index), nil)
				}
				rq = rq[:0]
			}
			if act.Ack && act.AckSyn&0x60 != 0 {
				p.rnaks++ // a NAK (RNR or other): hca_responder's rsp_naks
			}
			if act.Ack {
				addResp(&ib.Packet{Opcode: ib.Acknowledge, PSN: act.AckPSN, AETH: ib.AETH{Syndrome: act.AckSyn, MSN: act.MSN}})
			}
			if act.Read {
				va := act.ReadVA
				for more := true; more; {
					var rp ib.Packet
					_, more = ours.NextReadResponse(act.ReadRes, &rp)
					rp.Payload = make([]byte, rp.PayloadLen)
					for j := range rp.Payload {
						a := va + uint64(j)
						if _, ok := placed[a]; ok {
							panic(fmt.Sprintf("topPlan: QP %d's READ reads %#x, which the run writes", q, a))
						}
						rp.Payload[j] = p.mem[a/BlockBytes][a%BlockBytes]
					}
					va += uint64(rp.PayloadLen)
					ours.ReadResponseSent(act.ReadRes, rp.PSN)
					addResp(&rp)
				}
			}
			if act.Atomic || act.AtomicReplay {
				qp.acks = append(qp.acks, topAtomic(qp, pkt, &act, ours, p.mem, placed))
			}
		}
		requesterErr()
		// The late receive WQEs, announced once the receive CQ holds
		// lateNeed CQEs (the scenario: every request's and the flushes'):
		// flushed when the QP is in ERR (hca.Device.recvDoorbell), else
		// posted (no request follows to take them).
		for _, w := range late {
			if ours.State == hca.QPErr {
				rcqe(hca.FlushRecvCQE(qp.it.qpn, w.Index), nil)
			}
		}
	}
	if in != nil {
		p.rx = append(p.rx, in)
	}
	for a, v := range placed {
		p.want[a/BlockBytes][a%BlockBytes] = v
	}
	// Doorbells: per QP, after its first batch of WQEs and after the rest,
	// at a cycle drawn from the seed; halves 0x800, 0x900 in turn.
	for q, qp := range p.qps {
		at := []int{5 + r.IntN(60), 200 + r.IntN(600)}
		last := []int{qp.batch - 1, len(qp.msgs) - 1}
		for i := range 2 {
			d := topDoorbell{at: at[i], addr: uint64(q)<<12 | 0x800 + uint64(i)*0x100, data: qp.db[last[i]], q: q}
			if i == 1 && (qp.later != nil || qp.late) {
				d.need, d.writes = qp.need, qp.later
			}
			p.dbs = append(p.dbs, d)
		}
	}
	// In cycle order (the testbench rings one a cycle, in order).
	for i := range p.dbs {
		for j := i + 1; j < len(p.dbs); j++ {
			if p.dbs[j].at < p.dbs[i].at {
				p.dbs[i], p.dbs[j] = p.dbs[j], p.dbs[i]
			}
		}
	}
	return p
}

// topRemote is the far end's QP for hca.Responder: every key passes but
// refuse (0: none), which is no key it holds, and a receive WQE of 64 KiB
// is posted for every SEND but the first *rnr (-1: all of them), which
// find the receive queue empty (RNR NAK).
type topRemote struct {
	refuse uint32
	rnr    *int
}

func (e topRemote) CheckRKey(key uint32, _ int, _, _ uint64) hca.KeyResult {
	if e.refuse != 0 && key == e.refuse {
		return hca.KeyInvalid
	}
	return hca.KeyOK
}
func (topRemote) RKeyBase(uint32) uint64                         { return 0 }
func (topRemote) CheckLKey(uint32, uint64, uint64) hca.KeyResult { return hca.KeyOK }
func (e topRemote) PopRecv() (hca.RecvWQE, bool) {
	if e.rnr != nil && *e.rnr != 0 {
		if *e.rnr > 0 {
			*e.rnr--
		}
		return hca.RecvWQE{}, false
	}
	return hca.RecvWQE{Addr: 0x5000_0000, Length: 1 << 16, LKey: 0x77}, true
}

// topRemoteBytes are the far end's n bytes at va (a READ's payload): a
// function of the address, so every response's bytes differ.
func topRemoteBytes(va uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		a := va + uint64(i)
		b[i] = byte(a*131 + a>>8*7 + a>>16)
	}
	return b
}

// ring is log2 of qp's send queue's WQEBBs.
func (qp *topQP) ring() int {
	if qp.ringLog == 0 {
		return topRingLog
	}
	return qp.ringLog
}

// topCQBlock is CQ q's first block.
func topCQBlock(q int) int { return (topCQBase + q<<(topCQLog+6)) / BlockBytes }

// send runs qp's model until it has nothing to send: its packets, and for
// each WQE the QP's packets sent through its request.
func (p *topPlan) send(qp *topQP) {
	it := qp.it
	mtu := pktzMTU(it.mtuCode)
	if qp.ends == nil {
		qp.ends = make([]int, len(qp.wqes))
	}
	for qp.req.HasWork() {
		pkt := ib.Packet{SLID: it.slid, DLID: it.dlid, SL: it.sl, VL: it.vl, DestQP: it.rqpn}
		tx := qp.req.Next(&pkt)
		k := -1 // the WQE holding the PSN
		for i, f := range qp.first {
			if (pkt.PSN-f)&0xFFFFFF < uint32(qp.npsn[i]) {
				k = i
			}
		}
		if k < 0 {
			panic(fmt.Sprintf("topPlan: PSN %06x of no WQE", pkt.PSN))
		}
		if pkt.PayloadLen > 0 {
			pkt.Payload = p.payload(qp, k, tx.Index*mtu, pkt.PayloadLen)
			if qp.msgs[k].inl == nil {
				qp.preads = packetPayReads(qp.preads, qp.wqes[k], mtu, tx.Index)
			}
		}
		for len(qp.sentTo) <= k {
			qp.sentTo = append(qp.sentTo, 0)
		}
		if tx.Index < qp.sentTo[k] {
			qp.resent = true
		}
		qp.sentTo[k] = max(qp.sentTo[k], tx.Index+1)
		b := ib.AppendWire(nil, &pkt)
		w := make([]byte, (len(b)+BlockBytes-1)/BlockBytes*BlockBytes)
		copy(w, b)
		qp.wires, qp.psns = append(qp.wires, w), append(qp.psns, pkt.PSN)
		qp.ends[k] = len(qp.wires)
	}
}

// keyBad reports whether an element of w's local buffer fails its L_Key
// check (hca.Device.checkSGL: each element of more than 0 bytes in the
// QP's PD, local read for a gather, LOCAL_WRITE for a READ's or atomic's
// scatter); an inline WQE has none.
func (p *topPlan) keyBad(qp *topQP, w hca.SendWQE) bool {
	if w.Inline {
		return false
	}
	need := 0
	if w.Opcode == hca.WRRDMARead || w.Opcode == hca.WRCompSwap || w.Opcode == hca.WRFetchAdd {
		need = hca.AccessLocalWrite
	}
	sgl := w.SGL
	if sgl == nil {
		sgl = []hca.SGE{{Addr: w.LocalAddr, Length: w.Length, LKey: w.LKey}}
	}
	for _, e := range sgl {
		if e.Length > 0 && p.keys.Check(e.LKey, qp.pd, need, e.Addr, uint64(e.Length)) != hca.KeyOK {
			return true
		}
	}
	return false
}

// payload is n bytes of WQE k's message from byte off, as
// hca.Device.schedule takes them: an inline WQE's from the WQE, else the
// host's (the image the run starts with) at LocalAddr + off, or from byte
// off of its gather list's elements' concatenation, each part at its
// element's address (hca's sglSlice).
func (p *topPlan) payload(qp *topQP, k, off, n int) []byte {
	if inl := qp.msgs[k].inl; inl != nil {
		return append([]byte(nil), inl[off:off+n]...)
	}
	host := func(a uint64) byte { return p.mem[a/BlockBytes][a%BlockBytes] }
	out := make([]byte, 0, n)
	w := qp.wqes[k]
	if w.SGL == nil {
		for i := range n {
			out = append(out, host(w.LocalAddr+uint64(off+i)))
		}
		return out
	}
	start := 0 // the element's first byte in the message
	for _, e := range w.SGL {
		for i := max(off, start); i < start+int(e.Length) && len(out) < n; i++ {
			out = append(out, host(e.Addr+uint64(i-start)))
		}
		start += int(e.Length)
	}
	return out
}

// write puts the bench and its data files into dir.
func (p *topPlan) write(t *testing.T, dir string, d Design) {
	t.Helper()
	put := func(name string, lines []string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	var mem []string
	for _, b := range p.mem {
		mem = append(mem, hex.EncodeToString(b))
	}
	put("mem.hex", mem)
	var rxb, rxp, rxq []string
	ntx := 0 // packets the HCA sends: its requests and its responder's ACKs
	for _, qp := range p.qps {
		ntx += len(qp.wires) + len(qp.acks)
	}
	for _, list := range p.rx {
		rxq = append(rxq, fmt.Sprintf("%04x%04x", len(rxp), len(list)))
		for _, a := range list {
			w := a.wire()
			n := (len(w) + BlockBytes - 1) / BlockBytes
			buf := make([]byte, n*BlockBytes)
			copy(buf, w)
			rxp = append(rxp, fmt.Sprintf("%04x%04x%04x", a.gate, len(rxb), n))
			for i := range n {
				fl := 0
				if i == 0 {
					fl |= 2
				}
				if i == n-1 {
					fl |= 1
				}
				rxb = append(rxb, fmt.Sprintf("%02x%x", fl, buf[i*BlockBytes:(i+1)*BlockBytes]))
			}
		}
	}
	put("rxb.hex", rxb)
	put("rxp.hex", rxp)
	put("rxq.hex", rxq)
	var qc []string
	for q, qp := range p.qps {
		it := qp.it
		consume := 0 // bit 31: software consumes the CQ's CQEs (cq_ci)
		if qp.consume {
			consume = 8
		}
		qc = append(qc, fmt.Sprintf("%06x%04x%04x%x%x%06x%06x%x%x%08x%08x%08x%x%x%x%07x", it.qpn, it.dlid, it.slid, it.sl, it.vl, it.rqpn,
			it.psn, it.mtuCode, it.cqn, qp.pd, (topRingBlk+q<<topRingLog)*BlockBytes, topCQBlock(q)*BlockBytes, qp.ring(),
			qp.cqDepthLog(), consume, 0))
	}
	put("qcfg.hex", qc)
	// Per QP its responder's side: {receive CQ base 32, its number 4, log2
	// entries 4, min_rnr_timer 8, receive queue base 32, log2 WQEs 4,
	// flags 4 (bit 0: a receive CQ to create, when the QPs' send and
	// receive CQs fit the CQ area; bits 3:1 the stride's log2, rq_cfg_log_stride), receive WQEs posted 16, the producer
	// count of the late doorbell 16 (0: none), the receive CQEs it waits
	// for 16}. The receive CQ is CQ NQ + q.
	var rqc []string
	for q, qp := range p.qps {
		rcq := len(p.qps) + q
		fl := 0
		if topCQBlock(2*len(p.qps)) <= topPayBase/BlockBytes {
			fl = 1
		}
		late := 0
		if qp.lateRecv != nil {
			late = len(qp.recv) + len(qp.lateRecv)
		}
		rqc = append(rqc, fmt.Sprintf("%08x%x%x%02x%08x%x%x%04x%04x%04x", topCQBlock(rcq)*BlockBytes, rcq&15, topCQLog, qp.rnr,
			p.rqBase(q), topRQLog, fl|qp.rls<<1, len(qp.recv), late, qp.lateNeed))
	}
	put("rqcfg.hex", rqc)
	var dbs, sw []string
	for _, db := range p.dbs {
		// {cycle 32, address 32, data 64, QP 8, CQEs 8, first write 16, writes 8}
		dbs = append(dbs, fmt.Sprintf("%08x%08x%016x%02x%02x%04x%02x", db.at, db.addr, db.data, db.q, db.need, len(sw), len(db.writes)))
		for _, w := range db.writes {
			sw = append(sw, fmt.Sprintf("%04x%x", w.blk, w.data))
		}
	}
	if len(sw) == 0 {
		sw = append(sw, fmt.Sprintf("%0132x", 0))
	}
	put("dbs.hex", dbs)
	put("sw.hex", sw)
	var mpt []string
	for i := range 16 {
		e, ok := p.keys.Entry(uint32(i))
		if !ok {
			mpt = append(mpt, fmt.Sprintf("%064x", 0))
			continue
		}
		mpt = append(mpt, fmt.Sprintf("%016x%016x%016x%016x", uint64(e.Access)|1<<63, uint64(e.PD)|uint64(e.LKey)<<32, e.Length, e.Addr))
	}
	put("mpt.hex", mpt)
	pr := d.Params()
	tb := strings.NewReplacer("{{MEMB}}", strconv.Itoa(topMemBlocks), "{{NQ}}", strconv.Itoa(len(p.qps)),
		"{{NRXB}}", strconv.Itoa(len(rxb)), "{{NRQ}}", strconv.Itoa(len(rxq)), "{{NRXP}}", strconv.Itoa(len(rxp)), "{{NDB}}", strconv.Itoa(len(dbs)), "{{NSW}}", strconv.Itoa(len(sw)),
		"{{NTX}}", strconv.Itoa(ntx), "{{NCQE}}", strconv.Itoa(p.ncqe), "{{NCYC}}", strconv.Itoa(topCycles),
		"{{STALL}}", strconv.Itoa(topStall), "{{VLS}}", strconv.Itoa(d.VLs), "{{TAGW}}", strconv.Itoa(pr.TagW),
		"{{CQ_LOG}}", strconv.Itoa(topCQLog), "{{CQ_LO}}", strconv.Itoa(topCQBase/BlockBytes),
		"{{CQ_HI}}", strconv.Itoa(topPayBase/BlockBytes), "{{EVERY}}", strconv.Itoa(topEvery),
		"{{PORT_LID}}", strconv.Itoa(topPortLID)).Replace(topTB)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "top_tb.v"), []byte(tb), 0o644))
}

// topDesign is the small design the test emits: 2 VLs, 8 KiB VL buffers,
// 8 read tags, MRRS and MPS 128 (so reads and writes split into many
// requests and TLPs), a 4-entry MPT cache.
func topDesign() Design {
	return Design{Name: "top", Radix: 4, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 4096,
		LinkGeneration: "HDR", LinkWidth: 4, PCIeMRRSBytes: 128, PCIeMPSBytes: 128, PCIeOutstandingReads: 8, KeyCacheEntries: 4}
}

// topResult is what the run's log and memory dump show.
type topResult struct {
	summary  string
	stalled  bool
	counters map[string]int
	pkts     [][]byte    // the packets on the link, in order
	pktAt    []int       // the cycle of each one's first beat
	rxAt     map[int]int // the cycle each receive packet (by its place in p.rx, flattened) had its last beat in
	cqw      []topCQWrite
	wlog     []topCQWrite    // every host write beat, in the order the host took them (data not kept)
	hreads   []hca.ReadChunk // every host read request (byte address, bytes), in the order the host took them
	payReads int             // of those, the payload reads judgePayReads compared with the model's
	mem      [][]byte        // host memory at the end
	unknown  int             // link beats and memory blocks with x or z bits
}

// topCQWrite is a host write beat into the CQ rings' area: its block,
// byte enables and data.
type topCQWrite struct {
	blk      int
	be, data []byte
	seq      int // its place among all host write beats (topResult.wlog)
}

var topSummary = regexp.MustCompile(`(?m)^TOP done (.*)$`)

// run compiles and runs the bench on the emitted tree with replace's files
// (a mutant) in place, and reads back its log and memory.
func (p *topPlan) run(t *testing.T, ctx context.Context, dir string, seed uint64, files []File, replace map[string]string) *topResult {
	t.Helper()
	p.write(t, dir, topDesign())
	var names []string
	for _, f := range files {
		text := f.Text
		if r, ok := replace[f.Name]; ok {
			text = r
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Name), []byte(text), 0o644))
		names = append(names, f.Name)
	}
	_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-s", "top_tb", "-o", "sim.vvp", "top_tb.v"}, names...)...)
	require.NoError(t, err)
	args := []string{"-n", "sim.vvp", "+seed=" + strconv.FormatUint(seed, 10)}
	if p.wrStall {
		args = append(args, "+wrstall")
	}
	out, err := runTool(ctx, dir, "vvp", args...)
	require.NoError(t, err)
	m := topSummary.FindStringSubmatch(out)
	require.NotNil(t, m, "no summary from the bench:\n%s", tail(out, 30))
	res := &topResult{summary: m[1], counters: map[string]int{}, rxAt: map[int]int{}}
	for _, kv := range strings.Fields(m[1]) {
		k, v, _ := strings.Cut(kv, "=")
		res.counters[k], _ = strconv.Atoi(v)
	}
	res.stalled = res.counters["stalled"] != 0
	f, err := os.Open(filepath.Join(dir, "log.txt"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var pkt []byte
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 5 && fs[0] == "W" {
			blk, err := strconv.ParseInt(fs[2], 16, 64)
			if be, e := hex.DecodeString(fs[3]); err == nil && e == nil {
				res.wlog = append(res.wlog, topCQWrite{blk: int(blk), be: be})
			} else {
				res.wlog = append(res.wlog, topCQWrite{blk: -1}) // x or z bits: counted below or as a bad write
			}
			if err == nil && blk >= topCQBase/BlockBytes && blk < topPayBase/BlockBytes {
				w := topCQWrite{blk: int(blk), seq: len(res.wlog) - 1}
				var e1, e2 error
				w.be, e1 = hex.DecodeString(fs[3])
				w.data, e2 = hex.DecodeString(fs[4])
				if e1 != nil || e2 != nil { // x or z bits
					res.unknown++
				}
				res.cqw = append(res.cqw, w)
			}
			continue
		}
		if len(fs) == 4 && fs[0] == "H" {
			a, e1 := strconv.ParseUint(fs[2], 16, 64)
			n, e2 := strconv.Atoi(fs[3])
			if e1 != nil || e2 != nil { // x or z bits
				res.unknown++
			}
			res.hreads = append(res.hreads, hca.ReadChunk{Addr: a, N: n})
			continue
		}
		if len(fs) == 3 && fs[0] == "R" {
			c, e1 := strconv.Atoi(fs[1])
			n, e2 := strconv.Atoi(fs[2])
			if e1 == nil && e2 == nil {
				res.rxAt[n] = c
			}
			continue
		}
		if len(fs) < 5 || fs[0] != "B" {
			continue
		}
		if fs[2] == "1" {
			pkt = nil
			c, _ := strconv.Atoi(fs[1])
			res.pktAt = append(res.pktAt, c)
		}
		b, err := hex.DecodeString(fs[4])
		if err != nil { // x or z bits on the link
			res.unknown++
			b = make([]byte, BlockBytes)
		}
		pkt = append(pkt, b...)
		if fs[3] == "1" {
			res.pkts = append(res.pkts, pkt)
		}
	}
	require.NoError(t, sc.Err())
	mf, err := os.ReadFile(filepath.Join(dir, "mem.out"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(mf), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil { // x or z bits written to host memory: differs from any image
			res.unknown++
			b = nil
		}
		res.mem = append(res.mem, b)
	}
	return res
}

// rqBase is QP q's receive queue ring: from topRQBase, the rings of the
// QPs before it, 2^topRQLog WQEs of their stride each (q x topRQStep when
// all are of one segment), below the end of host memory.
func (p *topPlan) rqBase(q int) int {
	a := topRQBase
	for _, o := range p.qps[:q] {
		a += (1 << topRQLog) * hca.RecvWQEBytes << o.rls
	}
	if a+(1<<topRQLog)*hca.RecvWQEBytes<<p.qps[q].rls > topMemBlocks*BlockBytes {
		panic(fmt.Sprintf("topPlan: QP %d's receive queue ring at %#x passes the host memory's end", q, a))
	}
	return a
}

// judgeRQReads checks the host reads of the receive queue rings against
// the model's bytes (hca.Device.recvFetch: n WQEs of the stride, 16 x
// 2^rls bytes, at the ring's base + slot x stride, split by
// hca.ReadRequest): each QP's reads, in
// the order the host took them, start at slot 0 and each at the byte after
// the last (modulo the ring), are whole WQEs of the stride, and read none that
// software has not posted (recv, lateRecv); a QP that posts any has its
// first read (a WQE longer than MRRS read in several requests, as
// hca.ReadRequest splits it). Which reads there are is timing (what was posted and taken
// when the fetcher's turn came); that they tile the posted WQEs byte for
// byte, once each, is not: a read of the whole 64-byte blocks the WQEs lie
// in (hca_rq before its reads were bytes) reads bytes no WQE was posted
// in, or a WQE twice.
func (p *topPlan) judgeRQReads(hreads []hca.ReadChunk) []string {
	var errs []string
	for q, qp := range p.qps {
		posted := len(qp.recv) + len(qp.lateRecv)
		base, stride := uint64(p.rqBase(q)), hca.RecvWQEBytes<<qp.rls
		ringBytes := (1 << topRQLog) * stride
		next, read := 0, 0 // the next ring byte expected, the bytes read
		for _, h := range hreads {
			if h.Addr+uint64(h.N) <= base || h.Addr >= base+uint64(ringBytes) {
				continue
			}
			off := int(h.Addr - base)
			// A request ends at a WQE's end or, inside a WQE of more than
			// MRRS bytes, where hca.ReadRequest splits the read: at a
			// multiple of MRRS, so of 128 (the smallest MRRS, which divides
			// every other); the next request goes on from there.
			split := (off+h.N)%stride != 0 && (h.Addr+uint64(h.N))%128 == 0
			switch {
			case off != next || ((off+h.N)%stride != 0 && !split) || off+h.N > ringBytes:
				errs = append(errs, fmt.Sprintf("QP %d: a host read of %d bytes at ring byte %d; the model reads whole %d-byte WQEs from byte %d on", q, h.N, off, stride, next))
			case read+h.N > posted*stride:
				errs = append(errs, fmt.Sprintf("QP %d: host reads of %d bytes of its receive queue ring, past the %d WQEs posted", q, read+h.N, posted))
			}
			next, read = (off+h.N)%ringBytes, read+h.N
		}
		if read%stride != 0 {
			errs = append(errs, fmt.Sprintf("QP %d: host reads of %d bytes of its receive queue ring, not whole %d-byte WQEs", q, read, stride))
		}
		if posted > 0 && read == 0 {
			errs = append(errs, fmt.Sprintf("QP %d: no host read of its %d receive WQEs", q, posted))
		}
	}
	return errs
}

// judge lists what the run got wrong.
func (p *topPlan) judge(res *topResult) []string {
	var errs []string
	if res.stalled {
		errs = append(errs, "stalled: "+res.summary)
	}
	if res.unknown != 0 {
		errs = append(errs, fmt.Sprintf("%d link beats or memory blocks with x or z bits", res.unknown))
	}
	for _, k := range []string{"bad", "rcv_errors", "icrc", "hdr", "pkey", "mcast", "noqp", "rsptodo", "notreq", "rspnoqp",
		"rsp_seqdrop", "rsp_todo"} {
		if res.counters[k] != 0 {
			errs = append(errs, fmt.Sprintf("%s=%d", k, res.counters[k]))
		}
	}
	errs = append(errs, p.judgeRQReads(res.hreads)...)
	errs = append(errs, p.judgePayReads(res)...)
	// cq_overrun: the CQs that found their ring full, each a bit.
	if res.counters["overrun"] != p.overruns {
		errs = append(errs, fmt.Sprintf("cq_overrun=%#x, the model's CQs that overran %#x", res.counters["overrun"], p.overruns))
	}
	// rsp_acks counts the ACKs the responder sent (requests arriving),
	// its NAKs apart (rsp_naks, below).
	nacks := -p.rnaks
	for _, qp := range p.qps {
		for _, a := range qp.acks {
			// hca_responder's cnt_acks, as the model's Counters.Acks,
			// counts ACKNOWLEDGEs, not an atomic's answer.
			if a[8] == byte(ib.Acknowledge) {
				nacks++
			}
		}
	}
	if res.counters["rsp_acks"] != nacks {
		errs = append(errs, fmt.Sprintf("rsp_acks=%d, the model's responders sent %d", res.counters["rsp_acks"], nacks))
	}
	if res.counters["rsp_errdrop"] != p.rerrs {
		errs = append(errs, fmt.Sprintf("rsp_errdrop=%d, the model's responders dropped %d requests in ERR", res.counters["rsp_errdrop"], p.rerrs))
	}
	// rsp_dup counts the requests behind a responder's expected PSN.
	if res.counters["rsp_dup"] != p.rdups {
		errs = append(errs, fmt.Sprintf("rsp_dup=%d, the model's responders saw %d duplicates", res.counters["rsp_dup"], p.rdups))
	}
	// rsp_naks counts the NAKs the responders sent (an RNR NAK among them).
	if res.counters["rsp_naks"] != p.rnaks {
		errs = append(errs, fmt.Sprintf("rsp_naks=%d, the model's responders sent %d NAKs", res.counters["rsp_naks"], p.rnaks))
	}
	// rx_nak_retry counts the sequence error NAKs the far end sent.
	if res.counters["nak"] != p.naks {
		errs = append(errs, fmt.Sprintf("nak=%d, the far end sent %d sequence error and RNR NAKs", res.counters["nak"], p.naks))
	}
	// Every CQE write, per CQ in the order written: the model's CQE
	// (its owner bit that pass's) at the model's slot, all 64 bytes
	// enabled. The end image shows only each slot's last CQE; this shows
	// those a wrapping ring overwrote.
	// CQ q < NQ is QP q's send CQ, CQ NQ + q its receive CQ.
	nq := len(p.qps)
	cqOf := func(q int) (cqes [][]byte, slots []int) {
		if q < nq {
			return p.qps[q].cqes, p.qps[q].slots
		}
		return p.qps[q-nq].rcqes, p.qps[q-nq].rslots
	}
	// The first host write beat of each byte (by its byte enables), for
	// the receive CQEs' order: a CQE lands after every byte its message
	// wrote (the scenarios write each payload byte once).
	firstW := map[uint64]int{}
	for i, w := range res.wlog {
		for l := range BlockBytes {
			if w.blk >= 0 && w.be[l/8]&(0x80>>(l%8)) != 0 {
				a := uint64(w.blk)*BlockBytes + uint64(l)
				if _, ok := firstW[a]; !ok {
					firstW[a] = i
				}
			}
		}
	}
	ncq := make([]int, 2*nq)
	for i, w := range res.cqw {
		off := w.blk - topCQBase/BlockBytes
		q, slot := off>>topCQLog, off&(1<<topCQLog-1)
		if q >= 2*nq {
			errs = append(errs, fmt.Sprintf("CQE write %d at block %#x, no QP's CQ", i, w.blk*BlockBytes))
			continue
		}
		cqes, slots := cqOf(q)
		k := ncq[q]
		ncq[q]++
		if q >= nq && k < len(p.qps[q-nq].rpay) {
			for _, s := range p.qps[q-nq].rpay[k] {
				for a := s.a; a < s.a+uint64(s.n); a++ {
					if at, ok := firstW[a]; !ok || at > w.seq {
						errs = append(errs, fmt.Sprintf("CQ %d: CQE %d written (host write %d) before its message's byte %#x (host write %d, %v)",
							q, k, w.seq, a, at, ok))
						break
					}
				}
			}
		}
		switch {
		case k >= len(cqes):
			errs = append(errs, fmt.Sprintf("CQ %d: CQE %d written (slot %d), past the model's %d", q, k, slot, len(cqes)))
		case slot != slots[k]:
			errs = append(errs, fmt.Sprintf("CQ %d: CQE %d written at slot %d, the model's at %d", q, k, slot, slots[k]))
		case string(w.be) != string(bytes.Repeat([]byte{0xff}, BlockBytes/8)) || string(w.data) != string(cqes[k]):
			errs = append(errs, fmt.Sprintf("CQ %d: CQE %d (slot %d) written as %x (byte enables %x), the model's %x", q, k, slot,
				w.data, w.be, cqes[k]))
		}
	}
	for q := range 2 * nq {
		if cqes, _ := cqOf(q); ncq[q] < len(cqes) {
			errs = append(errs, fmt.Sprintf("CQ %d: %d CQEs written, the model's %d", q, ncq[q], len(cqes)))
		}
	}
	// Per QP, in order, byte for byte through the VCRC (BTH.DestQP names
	// the QP: the context's remote QPN).
	got := make([]int, len(p.qps))
	gotAck := make([]int, len(p.qps))
	for i, pk := range res.pkts {
		dqp := uint32(pk[13])<<16 | uint32(pk[14])<<8 | uint32(pk[15])
		q := -1
		for k, qp := range p.qps {
			if qp.it.rqpn == dqp {
				q = k
			}
		}
		if q < 0 {
			errs = append(errs, fmt.Sprintf("packet %d on the link for DestQP %06x, no QP's", i, dqp))
			continue
		}
		qp := p.qps[q]
		if topResponderOp(pk[8]) { // BTH.OpCode: the QP's responder's ACK, NAK or READ response
			k := gotAck[q]
			gotAck[q]++
			if k >= len(qp.acks) || string(pk) != string(qp.acks[k]) {
				errs = append(errs, fmt.Sprintf("packet %d: QP %d's responder's packet %d (opcode %#x, PSN %06x), not the model's (of %d)",
					i, q, k, pk[8], psnAt(pk), len(qp.acks)))
			}
			continue
		}
		k := got[q]
		got[q]++
		if k >= len(qp.wires) {
			errs = append(errs, fmt.Sprintf("packet %d: QP %d's packet %d, past the model's %d", i, q, k, len(qp.wires)))
			continue
		}
		want := qp.wires[k]
		if len(pk) != len(want) || string(pk[:wireLen(pk)]) != string(want[:wireLen(want)]) {
			errs = append(errs, fmt.Sprintf("packet %d: QP %d's packet %d (PSN %06x), not the model's (PSN %06x): first bytes differ at %d",
				i, q, k, psnAt(pk), qp.psns[k], firstDiff(pk, want)))
		}
	}
	for q, qp := range p.qps {
		if got[q] != len(qp.wires) {
			errs = append(errs, fmt.Sprintf("QP %d: %d packets on the link, the model's %d", q, got[q], len(qp.wires)))
		}
		if gotAck[q] != len(qp.acks) {
			errs = append(errs, fmt.Sprintf("QP %d: its responder sent %d packets, the model's %d", q, gotAck[q], len(qp.acks)))
		}
	}
	if p.rnrTick != 0 || p.promptWithin != 0 {
		e, _ := p.judgeRNRWaits(res)
		errs = append(errs, e...)
	}
	if len(res.mem) != len(p.want) {
		return append(errs, fmt.Sprintf("memory dump of %d blocks, want %d", len(res.mem), len(p.want)))
	}
	bad := 0
	for b := range p.want {
		if string(res.mem[b]) == string(p.want[b]) {
			continue
		}
		if bad++; bad <= 6 {
			errs = append(errs, fmt.Sprintf("host memory block %#x (%s) at byte %d: %x, want %x", b*BlockBytes, topRegion(b),
				firstDiff(res.mem[b], p.want[b]), res.mem[b], p.want[b]))
		}
	}
	if bad > 6 {
		errs = append(errs, fmt.Sprintf("and %d blocks more differ", bad-6))
	}
	return errs
}

// judgeRNRWaits checks the RNR timer: after each RNR NAK the far end
// sends QP q that makes the model resend (topQP.rnrResend; the last,
// which spends the retries, fails the WQE instead), its last beat into
// ib_link at cycle c, the QP's next
// packet at the NAK's PSN (the resend) starts on the link no earlier than
// c + the timer code's delay, hca.RNRTimerPS(code) / hca.RNRTimerPS(1)
// units of RNR_TICK cycles (the requester starts waiting only once the
// NAK has passed hca_rx_ack, later than c). With promptWithin, after each
// packet that makes the model resend at once (topQP.prompt) the QP's next
// request leaves within promptWithin cycles. gaps are the cycles from each
// such NAK or packet to its resend.
func (p *topPlan) judgeRNRWaits(res *topResult) (errs []string, gaps []int) {
	n := 0 // the receive packet's place in the flattened lists (topPlan.write's rxp.hex)
	for l, list := range p.rx {
		for k, a := range list {
			pn := n
			n++
			if l >= len(p.qps) {
				continue
			}
			qp := p.qps[l]
			c, ok := res.rxAt[pn]
			if qp.prompt[k] && p.promptWithin != 0 {
				// The QP's next request packet after it, within promptWithin.
				next := -1
				for i, pk := range res.pkts {
					dqp := uint32(pk[13])<<16 | uint32(pk[14])<<8 | uint32(pk[15])
					if i < len(res.pktAt) && ok && res.pktAt[i] > c && dqp == qp.it.rqpn && !topResponderOp(pk[8]) {
						next = res.pktAt[i]
						break
					}
				}
				gaps = append(gaps, next-c)
				if next < 0 || next > c+p.promptWithin {
					errs = append(errs, fmt.Sprintf("QP %d: no resend within %d cycles of its packet %d (PSN %06x) at cycle %d (next at %d)",
						l, p.promptWithin, k, a.psn, c, next))
				}
				continue
			}
			if !qp.rnrResend[k] || p.rnrTick == 0 {
				continue
			}
			if !ok {
				errs = append(errs, fmt.Sprintf("QP %d's RNR NAK (PSN %06x) never went in", l, a.psn))
				continue
			}
			wait := int(hca.RNRTimerPS(int(a.syn&0x1F)) / hca.RNRTimerPS(1) * ib.PS(p.rnrTick))
			found := false
			for i, pk := range res.pkts {
				dqp := uint32(pk[13])<<16 | uint32(pk[14])<<8 | uint32(pk[15])
				if i >= len(res.pktAt) || res.pktAt[i] <= c || dqp != qp.it.rqpn || topResponderOp(pk[8]) || psnAt(pk) != a.psn {
					continue
				}
				found = true
				gaps = append(gaps, res.pktAt[i]-c)
				if res.pktAt[i] < c+wait {
					errs = append(errs, fmt.Sprintf("QP %d resent PSN %06x at cycle %d, %d cycles after the RNR NAK (code %d: %d cycles)",
						l, a.psn, res.pktAt[i], res.pktAt[i]-c, a.syn&0x1F, wait))
				}
				break
			}
			if !found {
				errs = append(errs, fmt.Sprintf("QP %d: no resend of PSN %06x after the RNR NAK at cycle %d", l, a.psn, c))
			}
		}
	}
	return errs, gaps
}

// topResponderOp reports whether BTH opcode op is a responder's packet
// (RC RDMA READ response FIRST 0x0D to ATOMIC ACKNOWLEDGE 0x12): the
// requester sends none of them.
func topResponderOp(op byte) bool {
	return op >= byte(ib.RDMAReadResponseFirst) && op <= byte(ib.AtomicAcknowledge)
}

// topRegion names what host block b holds.
func topRegion(b int) string {
	a := b * BlockBytes
	switch {
	case a < topCQBase:
		return fmt.Sprintf("QP %d's send queue", a>>(topRingLog+6))
	case a < topPayBase:
		return fmt.Sprintf("CQ %d slot %d", (a-topCQBase)>>(topCQLog+6), (a-topCQBase)>>6&(1<<topCQLog-1))
	}
	return fmt.Sprintf("QP %d's region", (a-topPayBase)/topPayStep)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// hcaTopTree is the emitted tree of topDesign.
func hcaTopTree(t *testing.T) []File {
	t.Helper()
	files, err := Emit(topDesign(), testVersion)
	require.NoError(t, err)
	return files
}

// topMutated is files with file's text (old, which must occur once) replaced.
func topMutated(t *testing.T, files []File, file, old, new string) map[string]string {
	t.Helper()
	if file == "" {
		return nil
	}
	for _, f := range files {
		if f.Name == file {
			require.Equal(t, 1, strings.Count(f.Text, old), "the mutation's text occurs once in %s", file)
			return map[string]string{file: strings.Replace(f.Text, old, new, 1)}
		}
	}
	t.Fatalf("no %s in the tree", file)
	return nil
}

// TestTopPlan: the model does in the scenario what its comment says.
func TestTopPlan(t *testing.T) {
	p := newTopPlan(1)
	// Packets per QP: QP 0 at MTU 256: WRITE 700 (3), SEND 64 (1), READ (1
	// request), SEND 300 (2) = 7; QP 1 at 512: SEND 1000 (2), WRITE 1 (1),
	// WRITE 2000 (4), SEND 10 (1), WRITE 129 (1) = 9; QP 2 at 1024: WRITE
	// 4000 (4), READ (1), FETCH_ADD (1), SEND 1 (1) = 7; QP 3 at 4096:
	// SEND 5000 (2), READ (1) = 3.
	var n []int
	for _, qp := range p.qps {
		n = append(n, len(qp.wires))
	}
	assert.Equal(t, []int{7, 9, 7, 3}, n)
	// CQEs: every WQE but QP 1's unsignaled SEND: 4 + 4 + 4 + 2; and the
	// SEND with immediate arriving for QP 2: RESP_SEND_IMM of 700 bytes,
	// its immediate, receive WQE 0, in QP 2's receive CQ (NQ + 2 = 6),
	// slot 0; its ACK (PSN 0, MSN 1) on the link.
	assert.Equal(t, 14+1, p.ncqe)
	require.Len(t, p.qps[2].rcqes, 1)
	rc := hca.DecodeCQE(p.qps[2].rcqes[0])
	assert.Equal(t, []any{uint8(hca.CQERespSendImm), uint32(700), uint32(0x7E57_0002), uint16(0)}, []any{rc.Opcode, rc.ByteCnt, rc.Imm, rc.Counter})
	assert.Len(t, p.qps[2].acks, 1)
	// READ payloads: 600 + 100 + 4500 bytes, in ceil(600 / 256) = 3,
	// ceil(100 / 1024) = 1 and ceil(4500 / 4096) = 2 responses, and the
	// FETCH_ADD's 8 in its ATOMIC ACKNOWLEDGE (7 responses); and, with
	// ack_coalesce 1, an ACK for each AckReq packet of the other messages:
	// a message's last, and each 3rd inside (hca.Requester.Next: packet i
	// of n asks when i = n-1 or (i+1) mod 3 = 0), 1 + floor((n-1)/3) for a
	// message of n packets: QP 0 1+1+1, QP 1 1+1+2+1+1, QP 2 2+1, QP 3 1 =
	// 13.
	assert.Equal(t, 5208, p.nread)
	rsps, acks := 0, 0
	require.Len(t, p.rx, len(p.qps)+1, "the far end's SEND in a list of its own")
	for _, rx := range p.rx[:len(p.qps)] {
		for _, a := range rx {
			if a.isRsp() {
				rsps++
			} else {
				acks++
				assert.Equal(t, uint8(hca.SynACK), a.syn&0xE0, "an ACK (its credit field aside)")
			}
		}
	}
	assert.Equal(t, 7, rsps)
	assert.Equal(t, 13, acks)
	// QP 1's ring is 4 WQEBBs for its 5 WQEs: the second batch (WQEs 3
	// and 4, slots 3 and 0) is written once its first 3 (all signaled)
	// have their CQEs, WQE 4 over WQE 0.
	require.Len(t, p.qps[1].later, 2)
	assert.Equal(t, []int{topRingBlk + 1<<topRingLog + 3, topRingBlk + 1<<topRingLog}, []int{p.qps[1].later[0].blk, p.qps[1].later[1].blk})
	assert.Equal(t, 3, p.qps[1].need)
	// QP 1's PSNs wrap: 0xFFFFFE, 0xFFFFFF, then 0.
	assert.Equal(t, []uint32{0xFFFFFE, 0xFFFFFF, 0}, p.qps[1].psns[:3])
	// Host blocks the run must change: the 14 CQEs' slots, the READs'
	// buffers: 600 bytes at 0x3000 (10 blocks), 100 at 0xC007 (bytes 7..106
	// of two blocks), 4500 at 0x10000 (71 blocks); the FETCH_ADD's 8 bytes
	// at 0xC100 (one); and QP 1's ring slots 3 and 0, written by software
	// during the run; the receive CQE's slot and the SEND's 700 bytes at
	// 0x18100 (0x18100..0x183BB: 11 blocks).
	changed := 0
	for b := range p.mem {
		if string(p.mem[b]) != string(p.want[b]) {
			changed++
		}
	}
	assert.Equal(t, 14+10+2+71+1+2+1+11, changed)
}

// topPay is QP q's payload address off bytes into its region.
func topPay(q int, off uint64) uint64 { return topPayBase + uint64(q)*topPayStep + off }

// topWRs makes a scenario's signaled work requests: QP q's n bytes at off
// in its payload region, to remote + q<<32 + off × mul with R_Key
// 0x4400 + q and immediate imm | q<<8 | off's low byte (each scenario its
// own remote base and immediate pattern).
func topWRs(remote, mul uint64, imm uint32) func(op hca.WROpcode, q int, off uint64, n uint32) hca.SendWR {
	return func(op hca.WROpcode, q int, off uint64, n uint32) hca.SendWR {
		return hca.SendWR{Opcode: op, Signaled: true, LocalAddr: topPay(q, off), Length: n, RemoteAddr: remote + uint64(q)<<32 + off*mul,
			RKey: 0x4400 + uint32(q), Imm: imm | uint32(q)<<8 | uint32(off&0xff)}
	}
}

// topSeeds runs a top-level scenario on the emitted tree (tree) for seeds
// 1 and 2, each its own parallel subtest: the plan for the seed, the
// bench (into $TOP_DIR for seed 1 when set, to keep its files), the
// judge, then check with what the scenario must also show (and log).
func topSeeds(t *testing.T, tree func(*testing.T) []File, plan func(seed uint64) *topPlan, check func(t *testing.T, p *topPlan, res *topResult)) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	files := tree(t)
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			p := plan(seed)
			dir := t.TempDir()
			if d := os.Getenv("TOP_DIR"); d != "" && seed == 1 {
				dir = d
			}
			res := p.run(t, t.Context(), dir, seed, files, nil)
			assert.Empty(t, p.judge(res))
			check(t, p, res)
		})
	}
}

// topMutantsFail runs plan(1) on the emitted tree (files) with each
// mutant in a parallel subtest; each must fail the judge (the first
// three complaints are logged).
func topMutantsFail(t *testing.T, files []File, plan func(seed uint64) *topPlan, mutants []cosimMutant) {
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			p := plan(1)
			res := p.run(t, t.Context(), t.TempDir(), 1, files, topMutated(t, files, m.file, m.old, m.new))
			errs := p.judge(res)
			require.NotEmpty(t, errs, "the top-level co-simulation passes hca_top with %s", m.name)
			t.Logf("fails: %s", strings.Join(errs[:min(3, len(errs))], "; "))
		})
	}
}

// topQPOrder is the QPs of the link's packets in the order sent, a digit
// each (LRH byte 15's low bits: the bench's DestQP).
func topQPOrder(res *topResult) string {
	var order []string
	for _, pk := range res.pkts {
		order = append(order, strconv.Itoa(int(pk[15]&7)))
	}
	return strings.Join(order, "")
}

// TestTopCosim: the emitted hca_top, driven only through host memory, the
// MPT, its context ports, doorbells and the link, sends the model's
// packets and writes the model's CQEs and READ payloads (Icarus; two seeds
// of the host's and link's randomness).
func TestTopCosim(t *testing.T) {
	topSeeds(t, hcaTopTree, newTopPlan, func(t *testing.T, p *topPlan, res *topResult) {
		// The run must exercise what it claims: completions out of
		// order, MPT reads (each QP's L_Key misses the cache once at
		// least) and flow-control packets to the HCA.
		assert.Positive(t, res.counters["ooo"], "completion beats out of request order")
		assert.GreaterOrEqual(t, res.counters["mpt"], len(p.qps), "MPT reads")
		assert.Positive(t, res.counters["fc"], "flow-control packets")
		// Payload host reads compared with the model's (judgePayReads):
		// every QP's here (no resend, no loss).
		assert.Positive(t, res.payReads, "payload host reads compared with the model's")
		t.Logf("%s; %d payload host reads compared; the link's packets by QP: %s", res.summary, res.payReads, topQPOrder(res))
	})
}

// topTB drives hca_top (the {{...}} placeholders: topPlan.write). After
// reset: each QP's send queue (sq_cfg_*) and CQ (cq_cfg_*, consumer index 0)
// one a cycle, its receive queue (rq_cfg_*) and receive CQ (when rqcfg.hex
// says) one a cycle, then its QP context (qp_cfg_*, with rqcfg.hex's
// receive CQ and min_rnr_timer, held until taken), then the RQ doorbells
// of the QPs with receive WQEs posted (rq_db_*, held until taken); then,
// cycle by cycle from 0: the doorbells in order (dbs.hex: {cycle, MMIO
// address, data, QP, CQEs, first software write, writes}: rung at the
// cycle or later, once the QP's CQ has had that many CQEs written, after
// the software writes sw.hex {block, data} it names); the host (mem.hex) and the MPT (mpt.hex) as the
// test's comment says; the link's PCS forced. Each receive packet
// (rxb.hex beats {flags: 2 sop, 1 eop; data}; rxp.hex {gate, first beat,
// beats}, grouped per QP as rxq.hex {first packet, packets}) goes once its
// QP has sent gate packets (a gate with bit 15 set: once CQ gate[11:8]
// holds gate[7:0] CQEs, topGateCQ) and the advertised FCCL of VL 0 has
// room, QPs in turn. The log: B lines (a beat out of ib_link's transmit ib_vcrc:
// cycle, sop, eop, data) and W lines (a host write beat: block, byte
// enables). The end: every packet out, every receive packet in, every CQE
// written and 300 quiet cycles; or STALL cycles with nothing moving; or
// NCYC cycles. Then mem.out is host memory.
const topTB = "`timescale 1ns/1ps\n" + `
module top_tb;
    localparam integer MEMB = {{MEMB}}, NQ = {{NQ}}, NRXB = {{NRXB}}, NRXP = {{NRXP}}, NDB = {{NDB}}, NRQ = {{NRQ}};
    localparam integer NTX = {{NTX}}, NCQE = {{NCQE}}, NCYC = {{NCYC}}, STALL = {{STALL}}, VLS = {{VLS}};
    localparam integer OT = 32; // the host's table of read requests in flight
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    integer seed;
    reg [511:0] mem [0:MEMB-1];
    reg [519:0] rxb [0:NRXB-1];
    reg [47:0]  rxp [0:NRXP-1];
    reg [31:0]  rxq [0:NRQ-1];
    reg [255:0] qcfg [0:NQ-1];
    reg [135:0] rqcfg [0:NQ-1];
    reg [167:0] dbs [0:NDB-1];
    reg [527:0] sw [0:{{NSW}}-1];
    reg [255:0] mpt [0:15];

    reg         mmio_valid;
    reg [31:0]  mmio_addr;
    reg [63:0]  mmio_data;
    reg         host_rd_ready, host_cpl_valid, host_wr_ready;
    reg [{{TAGW}}-1:0] host_cpl_tag;
    reg [511:0] host_cpl_data;
    reg         mpt_req_ready, mpt_rsp_valid;
    reg [255:0] mpt_rsp_entry;
    reg         cq_cfg_valid, cq_ci_valid, sq_cfg_valid, qp_cfg_valid;
    reg [3:0]   cq_cfg_cqn, ci_cqn;
    reg [4:0]   cq_logd;
    reg [31:0]  ci_val;
    reg [63:0]  cq_cfg_base, sq_cfg_base;
    reg [23:0]  sq_cfg_qpn;
    reg [3:0]   sq_cfg_log;
    reg [255:0] qc;
    reg [135:0] rqc;
    reg         rq_cfg_valid, rq_db_valid;
    wire        rq_db_ready;
    reg [64*12-1:0] vl_low;
    wire [255:0] serdes_tx;
    wire link_up, host_rd_valid, host_wr_valid, host_wr_sop, host_wr_last, mpt_req_valid, qp_cfg_ready;
    wire [63:0] host_rd_addr, host_wr_addr, host_wr_be;
    wire [15:0] host_rd_len, host_wr_len;
    wire [{{TAGW}}-1:0] host_rd_tag;
    wire [511:0] host_wr_data;
    wire [23:0] mpt_req_index;
    wire [15:0] cq_overrun;
    wire [15:0] rcv_errors, fc_rcv_errors, rx_nak_retry, rx_rsp_todo, rx_not_req, rx_icrc_err, rx_hdr_err,
                rx_pkey_viol, rx_mcast_drop, rx_no_qp, rsp_acks, rsp_naks, rsp_dup, rsp_seq_drop, rsp_err_drop,
                rsp_no_qp, rsp_todo;

    hca_top dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx(256'd0), .serdes_tx(serdes_tx), .link_up(link_up),
        .mmio_valid(mmio_valid), .mmio_addr(mmio_addr), .mmio_data(mmio_data),
        .host_rd_valid(host_rd_valid), .host_rd_addr(host_rd_addr), .host_rd_len(host_rd_len), .host_rd_tag(host_rd_tag),
        .host_rd_ready(host_rd_ready), .host_cpl_valid(host_cpl_valid), .host_cpl_tag(host_cpl_tag), .host_cpl_data(host_cpl_data),
        .host_wr_valid(host_wr_valid), .host_wr_sop(host_wr_sop), .host_wr_last(host_wr_last), .host_wr_addr(host_wr_addr),
        .host_wr_len(host_wr_len), .host_wr_data(host_wr_data), .host_wr_be(host_wr_be), .host_wr_ready(host_wr_ready),
        .mpt_req_valid(mpt_req_valid), .mpt_req_ready(mpt_req_ready), .mpt_req_index(mpt_req_index),
        .mpt_rsp_valid(mpt_rsp_valid), .mpt_rsp_entry(mpt_rsp_entry),
        .vlarb_high({(64*12){1'b0}}), .vlarb_low(vl_low), .vlarb_limit(8'd0),
        .cq_cfg_valid(cq_cfg_valid), .cq_cfg_cqn(cq_cfg_cqn), .cq_cfg_base(cq_cfg_base), .cq_cfg_log_depth(cq_logd),
        .cq_ci_valid(cq_ci_valid), .cq_ci_cqn(ci_cqn), .cq_ci(ci_val), .cq_overrun(cq_overrun),
        .sq_cfg_valid(sq_cfg_valid), .sq_cfg_qpn(sq_cfg_qpn), .sq_cfg_base(sq_cfg_base), .sq_cfg_log_size(sq_cfg_log),
        .sq_cfg_ud(1'b0),
        .rq_cfg_valid(rq_cfg_valid), .rq_cfg_qpn(qc[255:232]), .rq_cfg_base({32'd0, rqc[87:56]}), .rq_cfg_log_size(rqc[55:52]),
        .rq_cfg_log_stride(rqc[51:49]),
        .rq_db_valid(rq_db_valid), .rq_db_qpn(qc[255:232]), .rq_db_producer(rqc[47:32]), .rq_db_ready(rq_db_ready),
        .qp_cfg_valid(qp_cfg_valid), .qp_cfg_ready(qp_cfg_ready), .qp_cfg_qpn(qc[255:232]), .qp_cfg_dlid(qc[231:216]),
        .qp_cfg_slid(qc[215:200]), .qp_cfg_sl(qc[199:196]), .qp_cfg_vl(qc[192]), .qp_cfg_rqpn(qc[191:168]),
        .qp_cfg_psn(qc[167:144]), .qp_cfg_rqpsn(24'd0), .qp_cfg_mtu(qc[142:140]), .qp_cfg_cqn(qc[139:136]), .qp_cfg_rcqn(rqc[103:100]),
        .qp_cfg_rnr(rqc[92:88]),
        .qp_cfg_pd(qc[135:104]), .ack_req_every(17'd{{EVERY}}),
        .port_lid(16'd{{PORT_LID}}), .port_lmc(3'd0), .pkey_cfg_valid(1'b0), .pkey_cfg_index(16'd0), .pkey_cfg_key(16'd0),
        .rcv_errors(rcv_errors), .fc_rcv_errors(fc_rcv_errors), .rx_nak_retry(rx_nak_retry), .rx_rsp_todo(rx_rsp_todo),
        .rx_not_req(rx_not_req), .rx_icrc_err(rx_icrc_err), .rx_hdr_err(rx_hdr_err), .rx_pkey_viol(rx_pkey_viol),
        .rx_mcast_drop(rx_mcast_drop), .rx_no_qp(rx_no_qp), .rsp_acks(rsp_acks), .rsp_naks(rsp_naks), .rsp_dup(rsp_dup),
        .rsp_seq_drop(rsp_seq_drop), .rsp_err_drop(rsp_err_drop), .rsp_no_qp(rsp_no_qp), .rsp_todo(rsp_todo)
    );

    // The link: the PCS is TODO, so its ready, its receive stream and the
    // decoded flow-control packets are forced (regs: Icarus follows them).
    reg         txr, pv, psop, peop, fcv;
    reg [511:0] pdata;
    reg [3:0]   fvl;
    reg [11:0]  fctbs, fccl;
    initial begin
        force dut.u_link.pcs_tx_ready = txr;
        force dut.u_link.pcs_fc_ready = 1'b1;
        force dut.u_link.pcs_rx_valid = pv;
        force dut.u_link.pcs_rx_sop = psop;
        force dut.u_link.pcs_rx_eop = peop;
        force dut.u_link.pcs_rx_data = pdata;
        force dut.u_link.fc_rx_valid = fcv;
        force dut.u_link.fc_rx_vl = fvl;
        force dut.u_link.fc_rx_fctbs = fctbs;
        force dut.u_link.fc_rx_fccl = fccl;
    end

    // The host's read requests in flight: tag, next block, blocks left, due cycle.
    reg         ot_v [0:OT-1];
    reg [{{TAGW}}-1:0] ot_tag [0:OT-1];
    reg [57:0]  ot_blk [0:OT-1];
    integer     ot_n [0:OT-1];
    integer     ot_at [0:OT-1];
    integer     ot_seq [0:OT-1]; // issue order
    integer     txq [0:7];   // request packets sent per QP (by BTH.DestQP's low bits; its responder's ACKs not counted)
    reg         tack;        // the packet going out is the responder's (a READ response, an ACKNOWLEDGE)
    integer     rxn [0:7];   // receive packets sent per QP
    integer     txgot [0:15]; // blocks received from the HCA per VL
    integer     cqn [0:15];   // CQEs written per CQ
    reg         rql [0:7];    // the QP's late RQ doorbell rung
    reg         cip [0:15];   // a CQE landed in CQ q's area that software has not consumed yet
    integer wst, wrstall; // +wrstall: the host's write stalls (topPlan.wrStall), cycles left of one
    integer fl, c, q, k, j, i, s0, cj, found, di, idle, stalled, bad, cqes, ntx, nrx, rcur, rx_mid, rrq, last_rx, wk, tq, tvl,
            mpt_busy, mlat, fvn, done, quiet, pnum, n, seq, ooo, mptrd, fcs, older;
    reg [23:0]  mpt_ix;
    reg [11:0]  rxsent, avail;
    reg [57:0]  wb;
    initial begin
        if (!$value$plusargs("seed=%d", seed)) seed = 1;
        wrstall = $test$plusargs("wrstall");
        wst = 0;
        $readmemh("mem.hex", mem);
        $readmemh("rxb.hex", rxb);
        $readmemh("rxp.hex", rxp);
        $readmemh("rxq.hex", rxq);
        $readmemh("qcfg.hex", qcfg);
        $readmemh("rqcfg.hex", rqcfg);
        $readmemh("dbs.hex", dbs);
        $readmemh("sw.hex", sw);
        $readmemh("mpt.hex", mpt);
        fl = $fopen("log.txt", "w");
        vl_low = {(64*12){1'b0}};
        vl_low[11:0] = {8'd4, 4'd0};
        vl_low[23:12] = {8'd4, 4'd1};
        mmio_valid = 1'b0; mmio_addr = 32'd0; mmio_data = 64'd0;
        host_rd_ready = 1'b0; host_cpl_valid = 1'b0; host_cpl_tag = 0; host_cpl_data = 512'd0; host_wr_ready = 1'b0;
        mpt_req_ready = 1'b0; mpt_rsp_valid = 1'b0; mpt_rsp_entry = 256'd0;
        cq_cfg_valid = 1'b0; cq_ci_valid = 1'b0; sq_cfg_valid = 1'b0; qp_cfg_valid = 1'b0;
        cq_cfg_cqn = 4'd0; ci_cqn = 4'd0; ci_val = 32'd0; cq_logd = 5'd0; cq_cfg_base = 64'd0; sq_cfg_base = 64'd0; sq_cfg_qpn = 24'd0; sq_cfg_log = 4'd0; qc = 256'd0;
        rqc = 136'd0; rq_cfg_valid = 1'b0; rq_db_valid = 1'b0;
        txr = 1'b0; tack = 1'b0; pv = 1'b0; psop = 1'b0; peop = 1'b0; pdata = 512'd0; fcv = 1'b0; fvl = 4'd0; fctbs = 12'd0; fccl = 12'd0;
        for (k = 0; k < OT; k = k + 1) ot_v[k] = 1'b0;
        for (k = 0; k < 8; k = k + 1) begin txq[k] = 0; rxn[k] = 0; end
        for (k = 0; k < 16; k = k + 1) begin txgot[k] = 0; cqn[k] = 0; cip[k] = 1'b0; end
        for (k = 0; k < 8; k = k + 1) rql[k] = 1'b0;
        c = 0; di = 0; idle = 0; stalled = 0; bad = 0; cqes = 0; ntx = 0; nrx = 0; rcur = 0; rx_mid = 0; rrq = 0;
        last_rx = -100; wk = 0; tq = 0; tvl = 0; mpt_busy = 0; mlat = 0; mpt_ix = 24'd0; fvn = 0; done = 0; quiet = 0;
        rxsent = 12'd0; seq = 0; ooo = 0; mptrd = 0; fcs = 0;
        repeat (3) @(posedge clk);
        @(negedge clk) rst_n = 1'b1;
        // The contexts: send queues and CQs one a cycle, then the QPs.
        for (q = 0; q < NQ; q = q + 1) begin
            sq_cfg_valid = 1'b1; sq_cfg_qpn = qcfg[q][255:232]; sq_cfg_base = {32'd0, qcfg[q][103:72]};
            sq_cfg_log = qcfg[q][39:36];
            cq_cfg_valid = 1'b1; cq_cfg_cqn = qcfg[q][139:136]; cq_cfg_base = {32'd0, qcfg[q][71:40]};
            cq_logd = {1'b0, qcfg[q][35:32]}; ci_cqn = qcfg[q][139:136]; ci_val = 32'd0;
            cq_ci_valid = 1'b0;
            @(negedge clk);
            cq_cfg_valid = 1'b0; sq_cfg_valid = 1'b0; cq_ci_valid = 1'b1;
            @(negedge clk);
        end
        cq_ci_valid = 1'b0;
        // Each QP's receive queue (rq_cfg_*) and, when the CQ area holds
        // it, its receive CQ (cq_cfg_*), one QP a cycle.
        for (q = 0; q < NQ; q = q + 1) begin
            qc = qcfg[q]; rqc = rqcfg[q];
            rq_cfg_valid = 1'b1;
            cq_cfg_valid = rqc[48]; cq_cfg_cqn = rqc[103:100]; cq_cfg_base = {32'd0, rqc[135:104]}; cq_logd = {1'b0, rqc[99:96]};
            @(negedge clk);
            rq_cfg_valid = 1'b0; cq_cfg_valid = 1'b0;
        end
        for (q = 0; q < NQ; q = q + 1) begin
            qp_cfg_valid = 1'b1; qc = qcfg[q]; rqc = rqcfg[q];
            #1;
            while (!qp_cfg_ready) begin
                @(negedge clk);
                #1;
            end
            @(negedge clk);
        end
        qp_cfg_valid = 1'b0;
        // The receive WQEs software posted (in mem.hex): one RQ doorbell
        // per QP that has any, held until taken.
        for (q = 0; q < NQ; q = q + 1) begin
            qc = qcfg[q]; rqc = rqcfg[q];
            if (rqc[47:32] != 16'd0) begin
                rq_db_valid = 1'b1;
                #1;
                while (!rq_db_ready) begin
                    @(negedge clk);
                    #1;
                end
                @(negedge clk);
                rq_db_valid = 1'b0;
            end
        end
        while (!done) begin
            // Inputs for this cycle.
            mmio_valid = 1'b0;
            // Software consumes a CQE the cycle after it lands, in a CQ
            // whose QP says so (qcfg bit 31): the CQ doorbell record's
            // consumer index, all the CQEs written so far (one CQ a cycle).
            cq_ci_valid = 1'b0;
            found = 0;
            for (k = 0; k < NQ; k = k + 1)
                if (found == 0 && cip[k]) begin
                    found = 1;
                    cip[k] = 1'b0;
                    cq_ci_valid = 1'b1; ci_cqn = qcfg[k][139:136]; ci_val = cqn[k];
                end
            // A late RQ doorbell (rqcfg's): once the QP's receive CQ (NQ +
            // q) holds its CQEs, one a cycle (rq_db_ready is 1).
            rq_db_valid = 1'b0;
            found = 0;
            for (k = 0; k < NQ; k = k + 1)
                if (found == 0 && !rql[k] && rqcfg[k][31:16] != 16'd0 && cqn[NQ + k] >= rqcfg[k][15:0]) begin
                    found = 1;
                    rql[k] = 1'b1;
                    qc = qcfg[k]; rqc = rqcfg[k]; rqc[47:32] = rqcfg[k][31:16];
                    rq_db_valid = 1'b1;
                end
            // A doorbell: at its cycle, once its QP's CQ holds its CQEs;
            // software writes its WQEs into the ring first.
            if (di < NDB && c >= dbs[di][167:136] && cqn[dbs[di][39:32]] >= dbs[di][31:24]) begin
                for (k = 0; k < dbs[di][7:0]; k = k + 1)
                    mem[sw[dbs[di][23:8] + k][527:512]] = sw[dbs[di][23:8] + k][511:0];
                mmio_valid = 1'b1; mmio_addr = dbs[di][135:104]; mmio_data = dbs[di][103:40];
                di = di + 1;
            end
            host_rd_ready = ($random(seed) & 3) != 0;
            host_cpl_valid = 1'b0;
            if (($random(seed) & 3) != 0) begin
                s0 = ($random(seed) & 32'h7fffffff) % OT;
                found = 0;
                for (k = 0; k < OT; k = k + 1) begin
                    j = (s0 + k) % OT;
                    if (found == 0 && ot_v[j] && ot_at[j] <= c) begin
                        found = 1;
                        cj = j;
                    end
                end
                if (found) begin
                    // Out of order: a request issued before this one still waits.
                    older = 0;
                    for (k = 0; k < OT; k = k + 1)
                        if (ot_v[k] && ot_seq[k] < ot_seq[cj]) older = 1;
                    ooo = ooo + older;
                    host_cpl_valid = 1'b1;
                    host_cpl_tag = ot_tag[cj];
                    if (ot_blk[cj] < MEMB) host_cpl_data = mem[ot_blk[cj]];
                    else begin
                        host_cpl_data = 512'd0;
                        bad = bad + 1;
                        $display("BAD read of block %h", ot_blk[cj]);
                    end
                    ot_blk[cj] = ot_blk[cj] + 1;
                    ot_n[cj] = ot_n[cj] - 1;
                    if (ot_n[cj] == 0) ot_v[cj] = 1'b0;
                end
            end
            if (wst > 0) begin
                wst = wst - 1;
                host_wr_ready = wst == 0; // then the beat held goes
            end else begin
                host_wr_ready = ($random(seed) & 7) != 0;
                if (wrstall && host_wr_valid && host_wr_last && !host_wr_sop) begin
                    host_wr_ready = 1'b0;
                    wst = 6;
                end
            end
            mpt_rsp_valid = mpt_busy && mlat == 0;
            mpt_rsp_entry = (mpt_rsp_valid && mpt_ix < 16) ? mpt[mpt_ix[3:0]] : 256'd0;
            mpt_req_ready = !mpt_busy && ($random(seed) & 1);
            txr = ($random(seed) & 7) != 0;
            // A receive packet: its QP's next, once the QP has sent its
            // gate's packets and VL 0's advertised FCCL has room.
            pv = 1'b0; psop = 1'b0; peop = 1'b0; pdata = 512'd0;
            if (!rx_mid && ($random(seed) & 3) != 0) begin
                found = 0;
                for (k = 0; k < NRQ; k = k + 1) begin
                    j = (rrq + k) % NRQ;
                    if (found == 0 && rxn[j] < rxq[j][15:0]) begin
                        pnum = rxq[j][31:16] + rxn[j];
                        n = rxp[pnum][15:0];
                        avail = dut.fccl_adv[11:0] - rxsent;
                        if ((rxp[pnum][47] ? cqn[rxp[pnum][43:40]] >= rxp[pnum][39:32] : rxp[pnum][47:32] <= txq[j]) &&
                            avail >= n && avail < 12'd2048) begin
                            found = 1;
                            rxn[j] = rxn[j] + 1;
                            rcur = rxp[pnum][31:16];
                            rx_mid = 1;
                            rrq = (j + 1) % NRQ;
                        end
                    end
                end
            end
            if (rx_mid) begin
                pv = 1'b1; psop = rxb[rcur][513]; peop = rxb[rcur][512]; pdata = rxb[rcur][511:0];
                rcur = rcur + 1;
                rxsent = rxsent + 12'd1;
                last_rx = c;
                if (peop) begin
                    rx_mid = 0;
                    nrx = nrx + 1;
                    $fdisplay(fl, "R %0d %0d", c, pnum);
                end
            end
            // Flow control to the HCA every 16 cycles, never while a
            // receive packet is in ib_link's receive ib_vcrc.
            fcv = 1'b0;
            if (!rx_mid && c - last_rx > 3 && c % 16 == 0) begin
                fcv = 1'b1;
                fcs = fcs + 1;
                fvl = fvn;
                fctbs = (fvn == 0) ? rxsent : 12'd0;
                fccl = txgot[fvn] + 256;
                fvn = (fvn + 1) % VLS;
            end
            #1;
            // What the coming edge takes.
            if (host_rd_valid && host_rd_ready) begin
                $fdisplay(fl, "H %0d %h %0d", c, host_rd_addr, host_rd_len);
                found = 0;
                for (k = 0; k < OT; k = k + 1)
                    if (found == 0 && !ot_v[k]) begin
                        found = 1;
                        ot_v[k] = 1'b1;
                        ot_tag[k] = host_rd_tag;
                        ot_blk[k] = host_rd_addr[63:6];
                        // the blocks the request's bytes lie in (hca_dma_engine's reads are bytes)
                        ot_n[k] = (host_rd_addr[5:0] + host_rd_len + 63) / 64;
                        ot_at[k] = c + 2 + (($random(seed) & 32'h7fffffff) % 40);
                        ot_seq[k] = seq;
                        seq = seq + 1;
                    end
                if (found == 0) begin
                    bad = bad + 1;
                    $display("BAD more reads in flight than the host's table");
                end
            end
            if (host_wr_valid && host_wr_ready) begin
                if (host_wr_sop) wk = 0;
                wb = host_wr_addr[63:6] + wk;
                wk = wk + 1;
                $fdisplay(fl, "W %0d %h %h %h", c, wb, host_wr_be, host_wr_data);
                if (wb >= MEMB) begin
                    bad = bad + 1;
                    $display("BAD write of block %h", wb);
                end else begin
                    for (i = 0; i < 64; i = i + 1)
                        if (host_wr_be[63 - i]) mem[wb][511 - 8*i -: 8] = host_wr_data[511 - 8*i -: 8];
                    if (wb >= {{CQ_LO}} && wb < {{CQ_HI}}) begin
                        cqes = cqes + 1;
                        cqn[(wb - {{CQ_LO}}) >> {{CQ_LOG}}] = cqn[(wb - {{CQ_LO}}) >> {{CQ_LOG}}] + 1;
                        if (qcfg[(wb - {{CQ_LO}}) >> {{CQ_LOG}}][31]) cip[(wb - {{CQ_LO}}) >> {{CQ_LOG}}] = 1'b1;
                    end
                end
            end
            if (mpt_rsp_valid) mpt_busy = 0;
            else if (mpt_busy) mlat = mlat - 1;
            if (mpt_req_valid && mpt_req_ready) begin
                mpt_busy = 1;
                mptrd = mptrd + 1;
                mpt_ix = mpt_req_index;
                mlat = ($random(seed) & 32'h7fffffff) % 5;
            end
            if (dut.u_link.pcs_tx_valid && txr) begin
                $fdisplay(fl, "B %0d %b %b %h", c, dut.u_link.pcs_tx_sop, dut.u_link.pcs_tx_eop, dut.u_link.pcs_tx_data);
                if (dut.u_link.pcs_tx_sop) begin
                    tq = dut.u_link.pcs_tx_data[511 - 8*15 - 5 -: 3]; // DestQP's low bits: the context
                    tvl = dut.u_link.pcs_tx_data[511 -: 4];
                    // BTH.OpCode 0x0D..0x12: a READ response, ACKNOWLEDGE or ATOMIC ACKNOWLEDGE (the responder's)
                    tack = dut.u_link.pcs_tx_data[511 - 8*8 -: 8] >= 8'h0D && dut.u_link.pcs_tx_data[511 - 8*8 -: 8] <= 8'h12;
                end
                txgot[tvl] = txgot[tvl] + 1;
                if (dut.u_link.pcs_tx_eop) begin
                    if (!tack) txq[tq] = txq[tq] + 1;
                    ntx = ntx + 1;
                end
            end
            if (mmio_valid || (host_rd_valid && host_rd_ready) || host_cpl_valid || (host_wr_valid && host_wr_ready) ||
                (mpt_req_valid && mpt_req_ready) || (dut.u_link.pcs_tx_valid && txr) || pv)
                idle = 0;
            else
                idle = idle + 1;
            if (ntx >= NTX && nrx >= NRXP && cqes >= NCQE && di >= NDB) quiet = quiet + 1;
            else quiet = 0;
            if (quiet >= 300 || idle >= STALL || c >= NCYC) done = 1;
            if (idle >= STALL || c >= NCYC) stalled = 1;
            c = c + 1;
            @(negedge clk);
        end
        $fclose(fl);
        $writememh("mem.out", mem);
        $display("TOP done cycles=%0d tx=%0d rx=%0d cqes=%0d doorbells=%0d stalled=%0d bad=%0d rcv_errors=%0d icrc=%0d hdr=%0d pkey=%0d mcast=%0d noqp=%0d nak=%0d rsptodo=%0d notreq=%0d overrun=%0d rspnoqp=%0d rsp_acks=%0d rsp_naks=%0d rsp_dup=%0d rsp_seqdrop=%0d rsp_errdrop=%0d rsp_todo=%0d reads=%0d ooo=%0d mpt=%0d fc=%0d",
            c, ntx, nrx, cqes, di, stalled, bad, rcv_errors, rx_icrc_err, rx_hdr_err, rx_pkey_viol, rx_mcast_drop, rx_no_qp,
            rx_nak_retry, rx_rsp_todo, rx_not_req, cq_overrun, rsp_no_qp, rsp_acks, rsp_naks, rsp_dup, rsp_seq_drop, rsp_err_drop, rsp_todo,
            seq, ooo, mptrd, fcs);
        $finish;
    end
endmodule
`

// TestTopMutantsFail: each slip below, in a block or in hca_top's own
// wiring, fails the top-level run (seed 1): a wrong CQE field, a dropped
// doorbell, a WQE read past its ring's end, the payload read a block off, a READ's payload written a block
// off, the DMA's reorder ring handing the payload client a slot before
// its completion came, an atomic's original value mis-ordered, a CQE's
// last byte (op_own) not written, receive WQEs read as their whole 64-byte
// blocks (not the model's 16 bytes each).
func TestTopMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	files := hcaTopTree(t)
	const cw, db, rq, dma = "hca_cqe_writer.v", "hca_doorbell.v", "hca_requester.v", "hca_dma_engine.v"
	mutants := []cosimMutant{
		{"the CQE's byte_cnt little-endian", cw, "        cpl_byte_count,                          // [44:47]",
			"        cpl_byte_count[7:0], cpl_byte_count[15:8], cpl_byte_count[23:16], cpl_byte_count[31:24],"},
		{"the second BlueFlame half ignored (its doorbells dropped)", db,
			"wire        at_bf  = mmio_addr[11:0] == BF0 || mmio_addr[11:0] == BF1;", "wire        at_bf  = mmio_addr[11:0] == BF0;"},
		{"a WQE read not split at its ring's end (it reads past the ring)", "hca_wqe_fetch.v",
			"wire [16:0]      n_ring    = (unfetched < to_end) ? unfetched : to_end;", "wire [16:0]      n_ring    = unfetched;"},
		{"the payload read one block off", rq, "rd_req_addr  <= rd_a;", "rd_req_addr  <= rd_a + 64'd64;"},
		{"a READ's payload written one block off", rq, "d_addr  <= sc_a;", "d_addr  <= sc_a + 64'd64;"},
		{"the payload ring delivers a slot before its completion", dma,
			"wire deliver1 = !clearing && hw1[hd1[LAP_LW-1:0]] == rb_head[1][ROB_AW];", "wire deliver1 = !clearing && rb_tail[1] != rb_head[1];"},
		{"an atomic's original value with its first two bytes swapped", rq, "d_atm ? {e_orig[7:0], e_orig[15:8],", "d_atm ? {e_orig[15:8], e_orig[7:0],"},
		{"hca_top: a CQE's last byte (op_own) not enabled", "hca_top.v", "assign wr1_be  = {64{1'b1}};", "assign wr1_be  = {{63{1'b1}}, 1'b0};"},
		// hca_rq's reads as they were before they were the model's bytes:
		// the whole 64-byte blocks the WQEs lie in (judgeRQReads: QP 2's
		// one WQE read as 64 bytes, past the WQEs posted).
		{"hca_rq: receive WQEs read as their whole 64-byte blocks", "hca_rq.v",
			"rd_req_addr  <= {rq_base[pk], 6'd0} + {39'd0, sslot, 4'd0};\n                rd_req_len   <= {nseg[11:0], 4'd0};",
			"rd_req_addr  <= {rq_base[pk] + {39'd0, sslot[20:2]}, 6'd0};\n                rd_req_len   <= {10'd0, ({4'd0, sslot[1:0]} + nseg[5:0] + 6'd3) >> 2, 6'd0};"},
	}
	// On the recovery and error paths (TestTopRetryCosim's run, seed 1):
	// a go-back-N resend one packet late (QP 0's resend differs), no local
	// ACK timer (QP 1 never resends its lost packet: the run stalls), a
	// remote access NAK completing as REM_OP_ERR (QP 2's error CQE), a
	// failed context left out of ERR (QP 2's WQEs posted after the error
	// are sent, not flushed), the owner bit not flipped on the ring's
	// second pass (QP 3's CQEs 4..6), the CQ doorbell's consumer index not
	// wired in hca_top (QP 3's CQ of 4 overruns at its 5th CQE), sequence
	// error NAKs not counted on rx_nak_retry, a go-back-N resend inside a
	// gather list from its first element (QP 0's resent packet 11), an
	// inline SEND's bytes read from the host (QP 0's and QP 3's inline
	// messages), a failed L_Key check ignored (QP 1's list SEND is sent),
	// requests arriving: the responder's R_Key checked in
	// context 0's PD (QP 3's inbound region is in its own: NAKed), a WRITE
	// MIDDLE not routed to it (hca_rx_ack: QP 0's WRITE never completes),
	// hca_cpl_arb looking the receive CQ up by the QP context's low bit
	// (QP 3's receive CQE into CQ 5, not 7: only a bench of more than two
	// QPs shows it), and in hca_top's wiring the WQE blocks (which carry
	// the inline bytes) given to hca_transport as zeros.
	retryFiles := topRetryTree(t)
	retryMutants := []cosimMutant{
		{"a go-back-N resend from the PSN after the NAK's", rq, "(h_rdat || r_impl) ? 24'd0 : n_from;", "(h_rdat || r_impl) ? 24'd0 : n_from + 24'd1;"},
		{"the local ACK timer never armed", rq, "RETRY_TIMEOUT != 0 && commit && head_ctx == q[QPN_W-1:0] && !to_on[q]", "1'b0"},
		{"a remote access NAK as REM_OP_ERR", rq, "ack_syn[4:0] == 5'd2 ? 8'd10 : 8'd11;", "ack_syn[4:0] == 5'd2 ? 8'd11 : 8'd11;"},
		{"a failed context not put in ERR", rq, "if (any_fail && e_ctx == q[QPN_W-1:0]) ctx_err[q] <= 1'b1;", ""},
		{"the owner bit not flipped", cw, "opcode, 3'd0, owner ", "opcode, 3'd0, 1'b0 "},
		{"hca_top: the CQ doorbell's consumer index not wired", "hca_top.v", ".cq_ci_valid(cq_ci_valid), .cq_ci_cqn(cq_ci_cqn)", ".cq_ci_valid(1'b0), .cq_ci_cqn(cq_ci_cqn)"},
		{"sequence error NAKs not counted", "hca_rx_ack.v", "if (d_ok && k_ack && k_retry && nak_retry != 16'hFFFF)", "if (1'b0)"},
		{"a resend's skip not carried past a gather element", rq, "g_skip <= g_past ? g_skip - g_len :", "g_skip <= g_past ? 32'd0 :"},
		{"an inline message read through rd1", rq, "if (g_step && !g_past && !g_il) begin", "if (g_step && !g_past) begin"},
		{"a failed L_Key check ignored", rq, "if (kc_rsp_result != 3'd0) s_bad <= 1'b1;", "s_bad <= 1'b0;"},
		{"the responder's R_Key checked in context 0's PD", "hca_responder.v", "assign kc_req_pd    = ctx_pd[ix];", "assign kc_req_pd    = ctx_pd[0];"},
		{"a WRITE MIDDLE not routed to the responder", "hca_rx_ack.v", "opcode == 8'h06 || opcode == 8'h07 || opcode == 8'h08", "opcode == 8'h06 || opcode == 8'h08"},
		{"hca_cpl_arb: the receive CQ looked up by the QP context's low bit", "hca_cpl_arb.v", "assign cpl_cqn         = pick_b ? rcq[b_ix] : a_cqn;",
			"assign cpl_cqn         = pick_b ? rcq[{{(QPN_W-1){1'b0}}, b_ix[0]}] : a_cqn;"},
		{"hca_top: the WQE blocks reach the transport as zeros", "hca_top.v",
			".ack_req_every(ack_req_every),\n        .wqe_valid(wqe_valid), .wqe_qpn(wqe_qpn), .wqe_data(wqe_data),",
			".ack_req_every(ack_req_every),\n        .wqe_valid(wqe_valid), .wqe_qpn(wqe_qpn), .wqe_data({DATA_W{1'b0}}),"},
	}
	// Answering READs (TestTopReadCosim's run, seed 1): a READ's R_Key
	// checked for REMOTE_WRITE (QP 1's region allows remote reads only:
	// its READs NAKed), every response's payload read at the READ's VA
	// (QP 0's MIDDLE and LAST carry its first bytes), a replay from inside
	// sent from FIRST (QP 0's duplicate from PSN 1), the responder's
	// resource ring not advanced (QP 1's duplicate of its first READ finds
	// the second's resource: dropped), rd1's blocks given to the client
	// picked last (hca_rd_merge, which hca_share_arb instantiates: a
	// responder's blocks to the requester or the reverse), and in hca_transport's wiring the responses' VL not
	// the context's (QP 1's on VL 0); and QP 1's CQ overrun: a CQE
	// written into a full CQ, a CQ full only past its depth (its third
	// CQE over its first), the overrun flag not set (hca_cqe_writer).
	atx := "hca_ack_tx.v"
	readMutants := []cosimMutant{
		{"a READ's R_Key checked for REMOTE_WRITE", "hca_responder.v", "is_rd ? 4'd4 : is_atm ? 4'd8 : 4'd2", "is_atm ? 4'd8 : 4'd2"},
		{"every response read at the READ's VA", atx, "rs_va    <= rs_va + {51'd0, rs_p};", "rs_va    <= rs_va;"},
		{"a replay from inside sent from FIRST", "hca_responder.v", "p_mid <= h_psn != (state == S_DUP ? res_first[f_e] : d_first);", "p_mid <= 1'b0;"},
		{"the resource ring not advanced", "hca_responder.v", "ctx_rnext[ix] <= rnext_n;\n                res_first", "ctx_rnext[ix] <= ctx_rnext[ix];\n                res_first"},
		{"rd1's blocks routed to the client picked last", "hca_rd_merge.v", "assign b_rsp_valid = rsp_valid && h_own;\n", "assign b_rsp_valid = rsp_valid && r_last;\n"},
		{"hca_transport: the responses' VL not the context's", "hca_transport.v", ".cfg_sl(qp_cfg_sl), .cfg_vl(qp_cfg_vl), .cfg_rqpn(qp_cfg_rqpn), .busy(at_busy),",
			".cfg_sl(qp_cfg_sl), .cfg_vl({VL_W{1'b0}}), .cfg_rqpn(qp_cfg_rqpn), .busy(at_busy),"},
		{"hca_cqe_writer: a CQE written into a full CQ", cw, "wire        room    = (pi - cq_ci_r[cpl_cqn]) < depth;", "wire        room    = 1'b1;"},
		{"hca_cqe_writer: a CQ full only past its depth", cw, "wire        room    = (pi - cq_ci_r[cpl_cqn]) < depth;", "wire        room    = (pi - cq_ci_r[cpl_cqn]) <= depth;"},
		{"hca_cqe_writer: the overrun flag not set", cw, "cq_overrun[cpl_cqn] <= 1'b1;", "cq_overrun[cpl_cqn] <= 1'b0;"},
	}
	// Retrying end to end (TestTopRNRCosim's run, seed 1): the RNR wait
	// not kept, or kept for timer code 1 whatever the NAK's (QP 0's and
	// QP 1's resends come too early: judgeRNRWaits), RNR_RETRY_EXC_ERR and
	// RETRY_EXC_ERR swapped (QP 1's and QP 2's error CQEs), the local ACK
	// timeout failing with one retry left (QP 2's last resend missing),
	// and hca_top passing RNR_RETRY 0 down (QP 0's first RNR NAK fails it).
	rnrFiles := topRNRTree(t)
	rnrMutants := []cosimMutant{
		{"the RNR wait not kept", rq, "rs_wait[q*WAIT_W +: WAIT_W] <= r_rnr ? rnr_cycles : {WAIT_W{1'b0}};", "rs_wait[q*WAIT_W +: WAIT_W] <= {WAIT_W{1'b0}};"},
		{"an RNR NAK's timer code read as 1", rq, "e_code  <= ack_syn[4:0];", "e_code  <= 5'd1;"},
		{"RNR_RETRY_EXC_ERR and RETRY_EXC_ERR swapped", rq, "e_nst   <= r_exc ? 8'd12 : 8'd13;", "e_nst   <= r_exc ? 8'd13 : 8'd12;"},
		{"RETRY_EXC_ERR with a retry left", rq, "RETRY_CNT != 7 && r_rl == 3'd0;", "RETRY_CNT != 7 && r_rl <= 3'd1;"},
		{"hca_top: RNR_RETRY 0 passed down", "hca_top.v", ".RNR_RETRY(RNR_RETRY), .RNR_TICK(RNR_TICK),", ".RNR_RETRY(0), .RNR_TICK(RNR_TICK),"},
	}
	// Retrying READs (TestTopReadRetryCosim's run, seed 1): a READ resent
	// whole whatever it had (QP 0's and QP 1's requests for the rest), its
	// VA not moved by the bytes it had (the same two), a response out of
	// order inside its READ taken (QP 0's third and fourth, QP 2's LAST,
	// placed and the READ done early), the implied NAK not taken (QP 1
	// waits for its timer: its resend too late).
	readRetryMutants := []cosimMutant{
		{"a READ resent whole whatever it had", rq, "oq_gv[rp_ix]) ? oq_got[rp_ix] : 32'd0;", "oq_gv[rp_ix]) ? 32'd0 : 32'd0;"},
		{"a READ resent with its VA not moved", rq, "m_raddr     <= rp_wqe[319:256] + {32'd0, rp_got};", "m_raddr     <= rp_wqe[319:256];"},
		{"a response out of order inside its READ taken", rq, "d_off[31:0] == h_got && ", ""},
		{"the implied NAK not taken", rq, "wire             r_impl   = e_any && h_rdat && e_lim != {IF_W{1'b0}} && h_d[23];",
			"wire             r_impl   = 1'b0;"},
	}
	// Receiving (TestTopRecvCosim's run, seed 1): the responder's
	// completions dropped by hca_cpl_arb (QP 0's receive CQ stays empty),
	// a receive completion into the send CQ (QP 0's 4 receive CQEs in CQ
	// 0), a SEND with immediate's CQE as a plain SEND's (CQEs 1 and 3),
	// the receive CQ field not wired in hca_top (every receive CQE into CQ
	// 0) or hca_transport giving hca_cpl_arb the send CQ for it, the
	// responder's min_rnr_timer not wired (QP 1's RNR NAK with timer 0),
	// the RQ doorbell not wired in hca_top (every SEND to QP 0 RNR-NAKed).
	arb, tr := "hca_cpl_arb.v", "hca_transport.v"
	recvMutants := []cosimMutant{
		{"hca_cpl_arb: the responder's completions dropped", arb, "assign cpl_valid = pick_b ? b_valid : a_valid;", "assign cpl_valid = pick_b ? 1'b0 : a_valid;"},
		{"hca_cpl_arb: a receive completion into the send CQ", arb, "assign cpl_cqn         = pick_b ? rcq[b_ix] : a_cqn;", "assign cpl_cqn         = a_cqn;"},
		{"hca_cpl_arb: SEND_IMM's opcode as SEND", arb, "assign cpl_opcode      = pick_b ? b_opcode : 4'd0;",
			"assign cpl_opcode      = pick_b ? (b_opcode == 4'd3 ? 4'd2 : b_opcode) : 4'd0;"},
		{"hca_top: the receive CQ not wired", "hca_top.v", ".qp_cfg_rcqn(qp_cfg_rcqn),", ".qp_cfg_rcqn({CQN_W{1'b0}}),"},
		{"hca_transport: the send CQ as the receive CQ", tr, ".cfg_rcqn(qp_cfg_rcqn),", ".cfg_rcqn(qp_cfg_cqn),"},
		{"hca_transport: min_rnr_timer not wired", tr, ".cfg_rnr(qp_cfg_rnr),", ".cfg_rnr(5'd0),"},
		{"hca_top: the RQ doorbell not wired", "hca_top.v", ".rq_db_valid(rq_db_valid)", ".rq_db_valid(1'b0)"},
	}
	// Receive WQEs of several elements (TestTopRecvListCosim's run, seed
	// 1): the stride tied to one segment again in hca_top (every ring read
	// as 16-byte WQEs: judgeRQReads, and lists decoded as their first
	// segment), an element's address a block off at hca_rq's element port
	// (the scattered bytes land 64 bytes off), and a list's length taken
	// as its first element's (a SEND longer than that fails LOC_LEN_ERR).
	listMutants := []cosimMutant{
		{"hca_top: the receive stride tied to one segment", "hca_top.v", ".rq_cfg_log_stride(rq_cfg_log_stride)", ".rq_cfg_log_stride(3'd0)"},
		{"hca_rq: an element's address a block off", "hca_rq.v", "assign rw_sge_addr = e_wqe[63:0];", "assign rw_sge_addr = e_wqe[63:0] + 64'd64;"},
		{"hca_rq: a list's length its first element's", "hca_rq.v", "c_sum = c_sum + c_seg[127:96];", "c_sum = c_sum + (c_n == 6'd1 ? c_seg[127:96] : 32'd0);"},
	}
	for _, set := range []struct {
		plan    func(uint64) *topPlan
		files   []File
		mutants []cosimMutant
	}{{newTopPlan, files, mutants}, {newTopRetryPlan, retryFiles, retryMutants}, {newTopRecvPlan, files, recvMutants},
		{newTopReadPlan, files, readMutants}, {newTopRNRPlan, rnrFiles, rnrMutants}, {newTopReadRetryPlan, retryFiles, readRetryMutants},
		{newTopRecvListPlan, files, listMutants}} {
		for _, m := range set.mutants {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				p := set.plan(1)
				res := p.run(t, t.Context(), t.TempDir(), 1, set.files, topMutated(t, set.files, m.file, m.old, m.new))
				errs := p.judge(res)
				require.NotEmpty(t, errs, "the top-level co-simulation passes hca_top with %s", m.name)
				t.Logf("fails: %s", strings.Join(errs[:min(3, len(errs))], "; "))
			})
		}
	}
}
