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
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/credit"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_transport's requester (hca_requester) + ib_vcrc <-> hca.Requester, host memory, ib.AppendWire ----
//
// End to end: QP contexts written through qp_cfg_*, parsed WQEs offered on
// dec_* (several QPs, some to drop), the payload read through rd1 from a
// host that answers in order with gaps, the packets offered on tx_* under
// credits and picks, and through ib_vcrc. Every packet must be
// ib.AppendWire's bytes of the model's: per QP a hca.Requester (made at the
// context's path MTU and PSN when the context is written, Enqueue per WQE,
// Next while HasWork) with hca.Device.address's addressing from the
// context and the payload hca.Device.schedule reads (host memory at
// LocalAddr + index x MTU). The block sends a message whole and messages in
// dec_* order, so the expected stream is each sent message's packets in the
// order the WQEs were offered; the model's scheduler interleaves QPs per
// packet, which is its timing, not the packets' bytes.
//
// The testbench (reqTB) checks the tx_* contract itself every cycle: a VL
// is waiting only for a head packet (sop) of that LRH VL that fits the VL's
// credit by credit.Sender.CanSend's rule; a commit (tx_pick_taken) only for
// the picked VL while it waits; tx_valid only from a commit to that
// packet's eop, with no cycle in between where tx_ready is 1 and tx_valid 0,
// tx_vl the committed VL. It logs each read request taken and each commit
// (VL and credit), which the Go side checks: the reads cover each sent
// message's blocks in address order, each read inside one message, at most
// reqReadBlocks blocks; the k-th commit is the k-th packet's VL and fits.

const (
	reqMsgs        = 64 // items (WQEs and context writes) per seed
	reqMutantItems = 20
	reqVLs         = 4  // the design's VLs (tb.v drives 4 credits)
	reqQPs         = 8  // 2^QPN_W contexts, QPN_W = 3 (Params.QPNW)
	reqReadBlocks  = 64 // hca_requester's READ_BLOCKS default
	reqPayBlocks   = 128
)

// reqItem is one line of items.hex: a context write or a WQE on dec_*.
type reqItem struct {
	cfg bool
	qix int // context index: the QPN's low 3 bits
	qpn uint32
	// cfg
	dlid, slid uint16
	sl, vl     uint8
	rqpn, psn  uint32
	mtuCode    int
	// WQE
	wqe    hca.SendWQE
	err    int
	every  int
	start  int      // LocalAddr mod 64
	blocks [][]byte // the payload's host blocks, address order (sent SEND/WRITE with L > 0)
	addrs  []uint64 // their addresses
	sent   bool     // the RTL must send it (the drop rule in hca_requester's header)
	drop   string   // why not: "err", "inline", "opcode7", "nocontext", "qpn"
	npkts  int
}

// reqRun is one seed's stimulus and the expected packets.
type reqRun struct {
	items []*reqItem
	wires [][]byte // every sent message's packets, in order, whole beats
	beats int
	pays  [][]byte // the blocks rd1 returns, in order
	addrs []uint64 // and their addresses
	msgOf []int    // the item index of each block
	ctrl  [][5]uint64
	// coverage
	psnWraps, bigMsgs, cfgLater int
}

// reqCtx is a written context, as the model's QP and requester see it.
type reqCtx struct {
	item *reqItem
	req  *hca.Requester
}

func newReqRun(seed uint64, n int) *reqRun {
	r := rand.New(rand.NewPCG(seed, 0x4e9c))
	run := &reqRun{}
	ctxs := make([]*reqCtx, reqQPs)
	newCfg := func(qix int) *reqItem {
		it := &reqItem{cfg: true, qix: qix, qpn: uint32(r.IntN(1<<21))<<3 | uint32(qix),
			dlid: uint16(r.Uint32()), slid: uint16(r.Uint32()), sl: uint8(r.IntN(16)), vl: uint8(r.IntN(reqVLs)),
			rqpn: r.Uint32() & 0xFFFFFF, psn: r.Uint32() & 0xFFFFFF, mtuCode: 1 + r.IntN(5)}
		if r.IntN(3) == 0 {
			it.psn = 0xFFFFFF - uint32(r.IntN(8))
		}
		return it
	}
	addCfg := func(it *reqItem) {
		cfg := hca.Defaults()
		cfg.MaxRdAtomic = 1 << 30 // the RTL has no max_rd_atomic (TODO in its header), nor ACKs to release one
		ctxs[it.qix] = &reqCtx{item: it, req: hca.NewRequester(&cfg, pktzMTU(it.mtuCode), it.psn)}
		run.items = append(run.items, it)
	}
	// Six contexts at first, 0..4 at the five MTUs (a permutation), 0
	// and 1 just below the PSN wrap; 6 and 7 only by a later write.
	codes := r.Perm(5)
	for q := range 6 {
		it := newCfg(q)
		if q < 5 {
			it.mtuCode = 1 + codes[q]
		}
		if q < 2 {
			it.psn = 0xFFFFFF - uint32(r.IntN(3))
		}
		addCfg(it)
	}
	// Directed first: each SEND and WRITE variant of three MTUs and a
	// byte with AckReq every 2..4, then three at 0, MTU - 1 and MTU + 1,
	// on contexts 0..4 in turn (each MTU); a READ of 2^30 bytes or more,
	// both atomics; a WQE dropped for each reason.
	type directed struct {
		qix    int // context, or -1: the next in turn
		op     hca.WROpcode
		mtus   int // length in MTUs (+1 byte), or -1: the length below
		length int
		every  int
		drop   string
	}
	// First a SEND of more blocks than the payload buffer and the packet
	// queue hold together, read while the port has no credit (below); an
	// atomic of more bytes than an MTU (the parser gives 8, but one PSN
	// whatever the length is the model's rule) with a SEND after it on its
	// context; a WQE dropped for each reason (so the mutants' shorter run
	// has them all). Then each SEND and WRITE variant of three MTUs and a
	// byte with AckReq every 2..4 on contexts 0..3 and context 4's MTU on
	// three packets (every MTU), three at 0, MTU - 1 and MTU + 1 on the
	// contexts in turn, a READ of 2^30 bytes or more, a fetch and add.
	dir := []directed{{qix: 0, op: hca.WRSend, mtus: -1, length: 20000},
		{qix: 2, op: hca.WRCompSwap, mtus: 5}, {qix: 2, op: hca.WRSend, mtus: -1, length: 1}}
	for _, d := range []string{"err", "inline", "opcode7", "nocontext", "qpn"} {
		dir = append(dir, directed{qix: -1, op: hca.WRSend, mtus: -1, length: 100, drop: d})
	}
	for op := hca.WRRDMAWrite; op <= hca.WRSendImm; op++ {
		dir = append(dir, directed{qix: int(op), op: op, mtus: 3, every: 2 + int(op)%3})
		dir = append(dir, directed{qix: -1, op: op, mtus: -1, length: 0}, directed{qix: -1, op: op, mtus: 1, length: -1},
			directed{qix: -1, op: op, mtus: 1, length: 1})
	}
	dir = append(dir, directed{qix: 4, op: hca.WRSend, mtus: 3},
		directed{qix: -1, op: hca.WRRDMARead, mtus: -1, length: 1<<30 + r.IntN(1<<30)},
		directed{qix: -1, op: hca.WRFetchAdd, mtus: -1, length: 8})
	nextDir := 0
	var starts []int
	for len(run.items) < n {
		if nextDir == len(dir) && run.cfgLater == 0 {
			// After the directed WQEs, context 6 written and context 1
			// written again (a new path, PSN and MTU).
			addCfg(newCfg(6))
			addCfg(newCfg(1))
			run.cfgLater = 2
			continue
		}
		if nextDir >= len(dir) && r.IntN(14) == 0 {
			addCfg(newCfg(r.IntN(reqQPs)))
			run.cfgLater++
			continue
		}
		if len(starts) == 0 {
			starts = r.Perm(BlockBytes)
		}
		it := &reqItem{qix: r.IntN(6), every: pktzEvery[r.IntN(len(pktzEvery))]}
		if r.IntN(8) == 0 {
			it.every = 2 + r.IntN(3)
		}
		op := hca.WROpcode(r.IntN(int(hca.WRSendImm) + 1))
		if r.IntN(8) == 0 {
			op = hca.WRRDMARead + hca.WROpcode(r.IntN(3))
		}
		var d *directed
		k := r.IntN(24)
		if nextDir < len(dir) {
			d = &dir[nextDir]
			it.qix, op, k = nextDir%5, d.op, 99
			if d.qix >= 0 {
				it.qix = d.qix
			}
			if d.every > 0 {
				it.every = d.every
			}
			switch d.drop {
			case "err":
				k = 0
			case "inline":
				k = 1
			case "opcode7":
				k = 2
			case "nocontext":
				it.qix, k = 6, 99
			case "qpn":
				k = 4
			}
			nextDir++
		}
		switch {
		case k == 0:
			it.err, it.drop = 1+r.IntN(2), "err"
		case k == 1:
			it.wqe.Inline, it.drop = true, "inline"
		case k == 2:
			op, it.drop = 7, "opcode7"
		case k == 3:
			it.qix = 6 + r.IntN(2) // written only by a later context write, if at all
		case k == 4:
			it.drop = "qpn"
		}
		c := ctxs[it.qix]
		it.qpn = uint32(r.IntN(1<<21))<<3 | uint32(it.qix)
		switch {
		case c == nil:
			it.drop = "nocontext"
		case it.drop == "qpn":
			for it.qpn == c.item.qpn {
				it.qpn = uint32(r.IntN(1<<21))<<3 | uint32(it.qix)
			}
		default:
			it.qpn = c.item.qpn
		}
		if c != nil && it.drop == "" && it.qpn != c.item.qpn {
			panic("rtl: reqRun: a WQE meant to be sent names another QPN")
		}
		mtu := 4096
		if c != nil {
			mtu = pktzMTU(c.item.mtuCode)
		}
		var length int
		switch k := r.IntN(20); {
		case k == 0:
			length = 0
		case k < 5:
			length = 1 + r.IntN(64)
		case k < 10:
			length = 1 + r.IntN(4096)
		case k < 13:
			length = mtu - 1 + r.IntN(3)
		case k < 18:
			length = (2+r.IntN(3))*mtu - 3 + r.IntN(7)
		default:
			length = 12288 + r.IntN(4096) // more blocks than the payload buffer holds
		}
		if op >= hca.WRRDMARead && r.IntN(3) == 0 {
			length = r.IntN(1<<31 + 1) // a READ's PSNs up to IBA's 2^31 bytes
		}
		if (op == hca.WRCompSwap || op == hca.WRFetchAdd) && r.IntN(2) == 0 {
			length = 8 // as hca_wqe_parse gives it; else any length, which must not move the PSNs
		}
		switch {
		case d == nil:
		case d.mtus >= 0 && d.length == -1:
			length = d.mtus*mtu - 1
		case d.mtus >= 0:
			length = d.mtus*mtu + 1
		default:
			length = d.length
		}
		start := starts[0]
		base := r.Uint64() &^ 63
		if r.IntN(8) == 0 {
			base = -uint64(BlockBytes * (1 + r.IntN(4))) // the blocks wrap past 2^64
		}
		it.wqe = hca.SendWQE{Opcode: op, Length: uint32(length), RemoteAddr: r.Uint64(), RKey: r.Uint32(),
			Imm: r.Uint32(), SwapAdd: r.Uint64(), Compare: r.Uint64(), LocalAddr: base + uint64(start),
			Inline: it.wqe.Inline, QPN: it.qpn}
		it.start = start
		it.sent = it.drop == "" && c != nil
		if it.sent && op <= hca.WRSendImm && length > 0 {
			starts = starts[1:]
			nb := (start + length + BlockBytes - 1) / BlockBytes
			host := make([]byte, nb*BlockBytes)
			for i := range host {
				host[i] = byte(r.Uint32())
			}
			for i := range nb {
				it.blocks = append(it.blocks, host[i*BlockBytes:(i+1)*BlockBytes])
				it.addrs = append(it.addrs, base+uint64(i*BlockBytes))
				run.pays = append(run.pays, it.blocks[i])
				run.addrs = append(run.addrs, it.addrs[i])
				run.msgOf = append(run.msgOf, len(run.items))
			}
			if nb > reqPayBlocks {
				run.bigMsgs++
			}
		}
		if it.sent {
			run.addWires(it, c)
		}
		run.items = append(run.items, it)
	}
	// The control trace: offers, rd1's ready and answers, out_ready and
	// picks in 256-cycle phases; per VL a credit that is plenty, scarce
	// (0..80 blocks), none for the phase, or around the modular rule's
	// edge (2040..2100), moving every 16 cycles.
	var pOffer, pRd, pRsp, pOut, pPick float64
	var credKind [reqVLs]int
	var cred [reqVLs]uint64
	for c := range 12*run.beats + 4000 {
		po := max(phaseProb(r, c, &pOffer), 0.2)
		prd := max(phaseProb(r, c, &pRd), 0.3)
		prs := max(phaseProb(r, c, &pRsp), 0.4)
		pout := max(phaseProb(r, c, &pOut), 0.3)
		ppk := max(phaseProb(r, c, &pPick), 0.3)
		if c%256 == 0 {
			for v := range credKind {
				credKind[v] = r.IntN(8)
				switch c {
				case 0:
					credKind[v] = 0 // plenty (below)
				case 768:
					credKind[v] = 7 // every VL at the modular rule's edge
				}
			}
		}
		if c < 256 {
			// The directed messages' phase: a slow host and a fast port,
			// so the packet queue runs dry inside a packet unless it
			// holds each one whole before offering it.
			prs, pout, ppk = 0.15, 0.9, 0.9
		}
		if c >= 256 && c < 768 {
			// Then a fast host and no credit: the packet queue and the
			// payload buffer fill, and rd1 must stop asking at the
			// buffer's room (its answers cannot wait).
			prd, prs = 0.9, 0.9
		}
		if c%16 == 0 {
			for v := range cred {
				switch credKind[v] {
				case 0, 1, 4, 5, 6:
					cred[v] = 2048
				case 2:
					cred[v] = uint64(r.IntN(81))
				case 3:
					cred[v] = 0 // the head waits the phase out, and the queues fill
				default:
					cred[v] = uint64(2040 + r.IntN(61))
				}
			}
		}
		if c >= 256 && c < 768 {
			cred = [reqVLs]uint64{}
		}
		var w [5]uint64
		bit := func(i int, p float64) {
			if r.Float64() < p {
				w[0] |= 1 << i
			}
		}
		bit(0, po)
		bit(1, prd)
		bit(2, prs)
		bit(3, pout)
		bit(4, ppk)
		w[0] |= uint64(r.IntN(4)) << 5 // the VL the pick search starts at
		if r.IntN(16) == 0 {
			w[0] |= 1 << 7 // pick a VL whether it waits or not
		}
		for v := range cred {
			w[1+v] = cred[v]
		}
		run.ctrl = append(run.ctrl, w)
	}
	return run
}

// addWires appends the model's packets of the sent WQE it to the run.
func (run *reqRun) addWires(it *reqItem, c *reqCtx) {
	q := c.item
	req := c.req
	req.AckReqEvery = it.every
	before := len(run.wires)
	mtu := pktzMTU(q.mtuCode)
	req.Enqueue(it.wqe, 0)
	host := bytes.Join(it.blocks, nil)
	for req.HasWork() {
		pkt := ib.Packet{SLID: q.slid, DLID: q.dlid, SL: q.sl, VL: q.vl, DestQP: q.rqpn} // hca.Device.address
		tx := req.Next(&pkt)
		if pkt.PayloadLen > 0 {
			off := it.start + tx.Index*mtu // hca.Device.schedule's read, LocalAddr + index x MTU
			pkt.Payload = host[off : off+pkt.PayloadLen]
		}
		if tx.Index > 0 && pkt.PSN == 0 {
			run.psnWraps++
		}
		wire := ib.AppendWire(nil, &pkt)
		beats := make([]byte, (len(wire)+BlockBytes-1)/BlockBytes*BlockBytes)
		copy(beats, wire)
		run.wires = append(run.wires, beats)
		run.beats += len(beats) / BlockBytes
	}
	it.npkts = len(run.wires) - before
	if it.npkts != hca.PacketCount(it.wqe.Length, mtu) && it.wqe.Opcode <= hca.WRSendImm {
		panic(fmt.Sprintf("rtl: reqRun: %d packets for a %s of %d bytes", it.npkts, it.wqe.Opcode, it.wqe.Length))
	}
}

// write writes items.hex, pays.hex and ctrl.hex into dir.
func (run *reqRun) write(t *testing.T, dir string) {
	t.Helper()
	var items, pays, ctrl strings.Builder
	for _, it := range run.items {
		if it.cfg {
			fmt.Fprintf(&items, "1%06x%04x%04x%01x%01x%06x%06x%01x%s\n", it.qpn, it.dlid, it.slid, it.sl, it.vl,
				it.rqpn, it.psn, it.mtuCode, strings.Repeat("0", 73))
			continue
		}
		w := &it.wqe
		inl := 0
		if w.Inline {
			inl = 1
		}
		fmt.Fprintf(&items, "0%01x%01x%01x%06x%08x%016x%016x%08x%08x%016x%016x%05x\n", it.err, uint8(w.Opcode), inl,
			it.qpn, w.Length, w.LocalAddr, w.RemoteAddr, w.RKey, w.Imm, w.SwapAdd, w.Compare, it.every)
	}
	for _, b := range run.pays {
		fmt.Fprintf(&pays, "%s\n", hex.EncodeToString(b))
	}
	for _, w := range run.ctrl {
		fmt.Fprintf(&ctrl, "%03x%03x%03x%03x%02x\n", w[4], w[3], w[2], w[1], w[0])
	}
	for name, text := range map[string]string{"items.hex": items.String(), "pays.hex": pays.String(), "ctrl.hex": ctrl.String()} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
}

func (run *reqRun) args(dir, tag string) []string {
	return []string{
		"+items=" + filepath.Join(dir, "items.hex"), "+pays=" + filepath.Join(dir, "pays.hex"),
		"+ctrl=" + filepath.Join(dir, "ctrl.hex"), "+out=" + filepath.Join(dir, "beats_"+tag+".txt"),
		"+log=" + filepath.Join(dir, "log_"+tag+".txt"),
		"+nit=" + strconv.Itoa(len(run.items)), "+npay=" + strconv.Itoa(len(run.pays)),
		"+ncyc=" + strconv.Itoa(len(run.ctrl)), "+nbeat=" + strconv.Itoa(run.beats),
	}
}

// reqTB drives the emitted hca_transport (4 VLs, QPN_W 3) and ib_vcrc
// after its tx_*. After each falling edge it applies the cycle before's
// handshakes, drives this cycle's item (a context write for a cycle, or a
// WQE held on dec_* until taken), rd1's ready, an answer block (of a read
// taken in an earlier cycle), the credits and out_ready; 1 ns later it
// picks a waiting VL (or, now and then, any VL), and 1 ns after that
// checks the tx_* contract and logs. When every expected beat came or the
// trace ends it runs 64 cycles with nothing offered, everything ready and
// plenty of credit, so a beat past the model's packets is written too.
const reqTB = "`timescale 1ns/1ps\n" + `
module tb;
    localparam MAXIT = 4096, MAXPAY = 65536, MAXCYC = 1048576;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    reg [411:0] items [0:MAXIT-1];
    reg [511:0] pays [0:MAXPAY-1];
    reg [55:0]  ctrl [0:MAXCYC-1];
    reg [8*1024-1:0] path;
    integer nit, npay, ncyc, nbeat, fo, fl, c, k, v, ii, pi, got, rq_blocks;
    integer werr, cerr, gaps, verr, offers, commits, held_tx;
    reg [411:0] it;
    reg [55:0] cw;
    reg held, take_dec, take_rd, tb_sending, drain;
    reg [1:0] tb_vl;
    reg [10:0] plen;
    reg [11:0] blks, left;

    reg qp_cfg_valid, dec_valid, rd_req_ready, rsp_valid, out_ready, pick_valid;
    reg [1:0] pick_vl;
    reg [47:0] credit;
    reg [511:0] rsp_data;
    wire dec_ready, rd_req_valid, pick_taken, tx_valid, tx_sop, tx_eop, tx_ready;
    wire [63:0] rd_req_addr;
    wire [15:0] rd_req_len;
    wire [3:0] waiting;
    wire [511:0] tx_data;
    wire [1:0] tx_vl;
    wire v_valid, v_sop, v_eop, v_vcrc_err, v_len_err;
    wire [511:0] v_data;

    hca_transport dut (
        .clk(clk), .rst_n(rst_n),
        .qp_cfg_valid(qp_cfg_valid), .qp_cfg_qpn(it[407:384]), .qp_cfg_dlid(it[383:368]), .qp_cfg_slid(it[367:352]),
        .qp_cfg_sl(it[351:348]), .qp_cfg_vl(it[345:344]), .qp_cfg_rqpn(it[343:320]), .qp_cfg_psn(it[319:296]),
        .qp_cfg_mtu(it[294:292]), .ack_req_every(it[16:0]),
        .wqe_valid(1'b0), .wqe_qpn(24'd0), .wqe_data(512'd0), .wqe_ready(),
        .dec_valid(dec_valid), .dec_ready(dec_ready), .dec_err(it[405:404]), .dec_opcode(it[402:400]),
        .dec_index(16'd0), .dec_qpn(it[395:372]), .dec_bbs(5'd0), .dec_signaled(1'b0), .dec_imm(it[179:148]),
        .dec_raddr(it[275:212]), .dec_rkey(it[211:180]), .dec_swap_add(it[147:84]), .dec_compare(it[83:20]),
        .dec_inline(it[396]), .dec_inline_len(31'd0), .dec_inline_off(7'd0), .dec_length(it[371:340]),
        .dec_lkey(32'd0), .dec_laddr(it[339:276]), .dec_dlid(16'd0), .dec_rqpn(24'd0), .dec_qkey(32'd0),
        .kc_req_valid(), .kc_req_ready(1'b0), .kc_req_key(), .kc_req_pd(), .kc_req_need(), .kc_req_addr(),
        .kc_req_len(), .kc_req_tag(), .kc_rsp_valid(1'b0), .kc_rsp_ready(), .kc_rsp_result(3'd0), .kc_rsp_tag(24'd0),
        .pay_rd_valid(rd_req_valid), .pay_rd_addr(rd_req_addr), .pay_rd_len(rd_req_len), .pay_rd_ready(rd_req_ready),
        .pay_rsp_valid(rsp_valid), .pay_rsp_data(rsp_data),
        .pay_wr_valid(), .pay_wr_addr(), .pay_wr_len(), .pay_wr_data(), .pay_wr_ready(1'b0),
        .tx_vl_waiting(waiting), .tx_vl_credit(credit), .tx_pick_valid(pick_valid), .tx_pick_vl(pick_vl),
        .tx_pick_taken(pick_taken),
        .tx_valid(tx_valid), .tx_data(tx_data), .tx_sop(tx_sop), .tx_eop(tx_eop), .tx_vl(tx_vl), .tx_ready(tx_ready),
        .rx_valid(1'b0), .rx_data(512'd0), .rx_sop(1'b0), .rx_eop(1'b0), .rx_vl(2'd0), .rx_ready(),
        .cpl_valid(), .cpl_ready(1'b0), .cpl_cqn(), .cpl_opcode(), .cpl_status(), .cpl_receiver(), .cpl_wr_op(),
        .cpl_qpn(), .cpl_wqe_counter(), .cpl_byte_count(), .cpl_imm(), .cpl_src_qp());
    ib_vcrc vcrc (
        .clk(clk), .rst_n(rst_n),
        .in_valid(tx_valid), .in_ready(tx_ready), .in_data(tx_data), .in_sop(tx_sop), .in_eop(tx_eop),
        .out_valid(v_valid), .out_ready(out_ready), .out_data(v_data), .out_sop(v_sop), .out_eop(v_eop),
        .out_vcrc_err(v_vcrc_err), .out_len_err(v_len_err));

    always #5 clk = ~clk;

    initial begin
        if (!$value$plusargs("nit=%d", nit) || !$value$plusargs("npay=%d", npay) ||
            !$value$plusargs("ncyc=%d", ncyc) || !$value$plusargs("nbeat=%d", nbeat)) begin
            $display("REQ missing plusargs");
            $finish;
        end
        if ($value$plusargs("items=%s", path)) $readmemh(path, items, 0, nit - 1);
        if (npay > 0 && $value$plusargs("pays=%s", path)) $readmemh(path, pays, 0, npay - 1);
        if ($value$plusargs("ctrl=%s", path)) $readmemh(path, ctrl, 0, ncyc - 1);
        if (!$value$plusargs("out=%s", path)) path = "beats.txt";
        fo = $fopen(path, "w");
        if (!$value$plusargs("log=%s", path)) path = "log.txt";
        fl = $fopen(path, "w");
        qp_cfg_valid = 1'b0; dec_valid = 1'b0; rd_req_ready = 1'b0; rsp_valid = 1'b0; out_ready = 1'b0;
        pick_valid = 1'b0; pick_vl = 2'd0; credit = 48'd0; rsp_data = 512'd0; it = 412'd0;
        held = 1'b0; take_dec = 1'b0; take_rd = 1'b0; tb_sending = 1'b0; tb_vl = 2'd0; drain = 1'b0;
        ii = 0; pi = 0; got = 0; rq_blocks = 0;
        werr = 0; cerr = 0; gaps = 0; verr = 0; offers = 0; commits = 0; held_tx = 0;
        repeat (3) @(posedge clk);
        @(negedge clk) rst_n = 1'b1;
        c = 0;
        k = 0;
        while (k < 64) begin
            if (c >= ncyc || got >= nbeat) drain = 1'b1;
            if (drain) k = k + 1;
            @(negedge clk);
            if (take_dec || qp_cfg_valid) ii = ii + 1;
            cw = drain ? 56'h800_800_800_800_1e : ctrl[c];
            it = ii < nit ? items[ii] : 412'd0;
            qp_cfg_valid = !drain && ii < nit && it[411:408] == 4'd1 && cw[0];
            dec_valid = !drain && ii < nit && it[411:408] == 4'd0 && (held || cw[0]);
            rd_req_ready = cw[1];
            rsp_valid = rq_blocks > 0 && pi < npay && cw[2];
            rsp_data = rsp_valid ? pays[pi] : 512'd0;
            if (rsp_valid) begin
                pi = pi + 1;
                rq_blocks = rq_blocks - 1;
            end
            out_ready = cw[3];
            credit = cw[55:8];
            pick_valid = 1'b0;
            #1;
            // The pick: the first waiting VL at or after cw[6:5]; with cw[7], that VL whatever waits.
            if (cw[4]) begin
                if (cw[7]) begin
                    pick_valid = 1'b1;
                    pick_vl = cw[6:5];
                end else begin
                    for (v = 0; v < 4; v = v + 1)
                        if (!pick_valid && waiting[(cw[6:5] + v) % 4]) begin
                            pick_valid = 1'b1;
                            pick_vl = (cw[6:5] + v) % 4;
                        end
                end
            end
            #1;
            take_dec = dec_valid && dec_ready;
            held = dec_valid && !dec_ready;
            take_rd = rd_req_valid && rd_req_ready;
            if (take_rd) begin
                $fdisplay(fl, "R %h %h", rd_req_addr, rd_req_len);
                rq_blocks = rq_blocks + (rd_req_len + 63) / 64;
            end
            // The tx_* contract.
            plen = tx_data[474:464];
            blks = ({1'b0, plen} + 12'd16) >> 4;
            for (v = 0; v < 4; v = v + 1) begin
                if (waiting[v]) begin
                    offers = offers + 1;
                    left = credit[v*12 +: 12] - blks;
                    if (!tx_sop || tx_data[511:508] != v || left > 12'd2048 || tb_sending) werr = werr + 1;
                end
            end
            if (pick_taken) begin
                if (!pick_valid || !waiting[pick_vl] || tb_sending) cerr = cerr + 1;
                $fdisplay(fl, "C %0d %0d", pick_vl, credit[pick_vl*12 +: 12]);
                commits = commits + 1;
                tb_sending = 1'b1;
                tb_vl = pick_vl;
            end
            if (tx_valid && !tb_sending) verr = verr + 1;
            if (tx_valid && tx_vl != tb_vl) verr = verr + 1;
            if (tb_sending && tx_ready && !tx_valid) gaps = gaps + 1;
            if (tb_sending && !tx_ready) held_tx = held_tx + 1;
            if (tx_valid && tx_ready && tx_eop) tb_sending = 1'b0;
            if (v_valid && out_ready) begin
                $fdisplay(fo, "%b %b %b %h", v_sop, v_eop, v_len_err, v_data);
                got = got + 1;
            end
            c = c + 1;
        end
        $fclose(fo);
        $fclose(fl);
        $display("REQ beats=%0d cycles=%0d items=%0d blocks=%0d werr=%0d cerr=%0d verr=%0d gaps=%0d offers=%0d commits=%0d held=%0d",
                 got, c, ii, pi, werr, cerr, verr, gaps, offers, commits, held_tx);
        $finish;
    end
endmodule
`

var reqResult = regexp.MustCompile(`(?m)^REQ beats=(\d+) cycles=(\d+) items=(\d+) blocks=(\d+) werr=(\d+) cerr=(\d+) verr=(\d+) gaps=(\d+) offers=(\d+) commits=(\d+) held=(\d+)$`)

// reqFiles are the sources besides tb.v and the emitted hca_transport.v.
var reqFiles = []string{"hca_requester.v", "sync_fifo.v", "hca_tx_path.v", "hca_tx_packetizer.v", "hca_tx_assemble.v",
	"ib_icrc.v", "ib_vcrc.v"}

// reqTransport is the emitted hca_transport of a 4-VL design (QPN_W 3).
func reqTransport(t *testing.T) string {
	t.Helper()
	d := Design{Name: "req", Radix: 4, VLs: reqVLs, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 4096,
		LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, "test")
	require.NoError(t, err)
	for _, f := range files {
		if f.Name == "hca_transport.v" {
			require.Equal(t, reqQPs, 1<<d.Params().QPNW, "the testbench's contexts")
			return f.Text
		}
	}
	t.Fatal("no hca_transport.v in the tree")
	return ""
}

func writeReqBench(t *testing.T, dir string, replace map[string]string) []string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tb.v"), []byte(reqTB), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hca_transport.v"), []byte(reqTransport(t)), 0o644))
	files := []string{"tb.v", "hca_transport.v"}
	for _, f := range reqFiles {
		text, ok := replace[f]
		if !ok {
			text = PrimitiveSource(f)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644))
		files = append(files, f)
	}
	return files
}

// reqResultOf is the testbench's summary and the Go side's checks.
type reqResultOf struct {
	checked, errors              int
	first                        []string
	werr, cerr, verr, gaps       int
	offers, commits, heldTx, cyc int
}

func (res *reqResultOf) fail(format string, args ...any) {
	res.errors++
	if len(res.first) < 6 {
		res.first = append(res.first, fmt.Sprintf(format, args...))
	}
}

// reqCheck compares the beats with the run's packets (txPathCheck's
// rules) and checks the log: reads and commits.
func reqCheck(t *testing.T, run *reqRun, out, beatsFile, logFile string) *reqResultOf {
	t.Helper()
	m := reqResult.FindStringSubmatch(out)
	require.NotNil(t, m, "testbench printed no REQ line:\n%s", tail(out, 30))
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	res := &reqResultOf{cyc: n(2), werr: n(5), cerr: n(6), verr: n(7), gaps: n(8), offers: n(9), commits: n(10), heldTx: n(11)}
	var first []string
	res.checked, res.errors, first = txPathCheck(t, &txPathRun{wires: run.wires}, beatsFile)
	res.first = append(res.first, first...)

	f, err := os.Open(logFile)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	blk, pkt := 0, 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch fields[0] {
		case "R":
			addr, _ := strconv.ParseUint(fields[1], 16, 64)
			length, _ := strconv.ParseUint(fields[2], 16, 16)
			nb := int(length / BlockBytes)
			if length%BlockBytes != 0 || nb == 0 || nb > reqReadBlocks {
				res.fail("read %#x of %d bytes: not 1..%d whole blocks", addr, length, reqReadBlocks)
			}
			for i := range nb {
				switch {
				case blk >= len(run.addrs):
					res.fail("read %#x: block %d past the %d the messages have", addr, i, len(run.addrs))
				case addr+uint64(i*BlockBytes) != run.addrs[blk]:
					res.fail("read %#x: block %d at %#x, want %#x (block %d of the stream)", addr, i,
						addr+uint64(i*BlockBytes), run.addrs[blk], blk)
				case i > 0 && run.msgOf[blk] != run.msgOf[blk-1]:
					res.fail("read %#x: crosses from one message's blocks into the next's", addr)
				}
				blk++
			}
		case "C":
			vl, _ := strconv.Atoi(fields[1])
			cr, _ := strconv.Atoi(fields[2])
			if pkt >= len(run.wires) {
				res.fail("commit %d: more than the %d packets", pkt, len(run.wires))
				break
			}
			w := run.wires[pkt]
			blocks := (int(binary.BigEndian.Uint16(w[4:6])&0x7FF) + 16) >> 4 // (PktLen words + VCRC) in 64-byte blocks
			s := credit.NewSender(0)
			s.Update(uint16(cr))
			if int(w[0]>>4) != vl || !s.CanSend(blocks) {
				res.fail("commit %d: VL %d with credit %d for a packet of VL %d and %d blocks", pkt, vl, cr, w[0]>>4, blocks)
			}
			pkt++
		}
	}
	require.NoError(t, sc.Err())
	if blk != len(run.addrs) {
		res.fail("reads asked for %d blocks, the messages have %d", blk, len(run.addrs))
	}
	if pkt != len(run.wires) {
		res.fail("%d commits for %d packets", pkt, len(run.wires))
	}
	return res
}

func runReq(t *testing.T, ctx context.Context, dir, tag string, run *reqRun, cmd string, args ...string) *reqResultOf {
	t.Helper()
	out, err := runTool(ctx, dir, cmd, append(args, run.args(dir, tag)...)...)
	require.NoError(t, err)
	return reqCheck(t, run, out, filepath.Join(dir, "beats_"+tag+".txt"), filepath.Join(dir, "log_"+tag+".txt"))
}

func (res *reqResultOf) passes(t *testing.T, run *reqRun, name string) {
	t.Helper()
	assert.Equal(t, run.beats, res.checked, "%s: beats received (of %d packets)", name, len(run.wires))
	assert.Zero(t, res.errors, "%s: mismatches: %s", name, strings.Join(res.first, "; "))
	assert.Zero(t, res.werr, "%s: cycles a VL waited without a fitting head of its own", name)
	assert.Zero(t, res.cerr, "%s: commits of a VL not picked or not waiting", name)
	assert.Zero(t, res.verr, "%s: beats outside a committed packet or on another VL", name)
	assert.Zero(t, res.gaps, "%s: cycles a committed packet left tx_ready unused", name)
}

// TestRequesterCosim: hca_transport's requester sends, through ib_vcrc,
// exactly the model's packets of every WQE it should send, byte for byte,
// ICRC and VCRC included, in dec_* order; ib.ParseWire takes each; the
// reads cover the payload blocks; the tx_* contract holds every cycle.
// Icarus on two seeds, Verilator on a third (-short skips it).
func TestRequesterCosim(t *testing.T) {
	t.Parallel()
	cases := []struct {
		sim   string
		seeds []uint64
	}{{"icarus", cosimSeeds[:2]}, {"verilator", cosimSeeds[2:3]}}
	for _, tc := range cases {
		t.Run(tc.sim, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			files := writeReqBench(t, dir, nil)
			cmd, args := buildSim(t, ctx, dir, tc.sim, files)
			for _, seed := range tc.seeds {
				run := newReqRun(seed, reqMsgs)
				run.write(t, dir)
				res := runReq(t, ctx, dir, strconv.FormatUint(seed, 10), run, cmd, args...)
				res.passes(t, run, fmt.Sprintf("seed %d", seed))
				t.Logf("seed %d: %d packets, %d beats in %d cycles, %d payload blocks read, %d VL-cycles offered, %d cycles held by tx_ready",
					seed, len(run.wires), res.checked, res.cyc, len(run.addrs), res.offers, res.heldTx)
				// The contract's checks saw something: offers, commits of
				// every packet, packets held by tx_ready.
				assert.Equal(t, len(run.wires), res.commits, "seed %d: commits", seed)
				assert.GreaterOrEqual(t, res.offers, len(run.wires), "seed %d: VL-cycles offered", seed)
				assert.GreaterOrEqual(t, res.heldTx, 100, "seed %d: cycles a committed packet waited for tx_ready", seed)
			}
		})
	}
}

// TestRequesterStimulusCovers: per seed simulated, every request opcode,
// every drop reason, context writes after the start, PSN wraps inside a
// message, messages with more blocks than the payload buffer, 30 payload
// start offsets, every MTU on a message of three packets or more, READs
// of 2^30 bytes or more, ack_req_every of 2..4, and credits that do not fit.
func TestRequesterStimulusCovers(t *testing.T) {
	for _, seed := range cosimSeeds[:3] {
		run := newReqRun(seed, reqMsgs)
		name := fmt.Sprintf("seed %d", seed)
		ops, drops, starts, mtus := map[ib.Opcode]bool{}, map[string]int{}, map[int]bool{}, map[int]bool{}
		bigRead, every, longAtomic := 0, 0, false
		ctxs := map[int]*reqItem{}
		for _, it := range run.items {
			if it.cfg {
				ctxs[it.qix] = it
				continue
			}
			if it.drop != "" || !it.sent {
				drops[it.drop]++
				continue
			}
			if len(it.blocks) > 0 {
				starts[it.start] = true
			}
			if it.npkts >= 3 {
				mtus[ctxs[it.qix].mtuCode] = true
			}
			if it.wqe.Opcode >= hca.WRCompSwap && int(it.wqe.Length) > pktzMTU(ctxs[it.qix].mtuCode) {
				longAtomic = true
			}
			if it.wqe.Opcode == hca.WRRDMARead && it.wqe.Length >= 1<<30 {
				bigRead++
			}
			if it.every >= 2 && it.every <= 4 && it.npkts > it.every {
				every++
			}
		}
		for _, w := range run.wires {
			ops[ib.Opcode(w[8])] = true // BTH byte 0
		}
		assert.Len(t, ops, 15, "%s: request opcodes", name)
		for _, d := range []string{"err", "inline", "opcode7", "nocontext", "qpn"} {
			assert.GreaterOrEqual(t, drops[d], 1, "%s: WQEs dropped for %s", name, d)
		}
		assert.GreaterOrEqual(t, run.cfgLater, 2, "%s: context writes after the first WQE", name)
		assert.GreaterOrEqual(t, run.psnWraps, 1, "%s: PSN wraps inside a message", name)
		assert.GreaterOrEqual(t, run.bigMsgs, 2, "%s: messages of more than %d blocks", name, reqPayBlocks)
		assert.GreaterOrEqual(t, len(starts), 30, "%s: payload start offsets", name)
		assert.Len(t, mtus, 5, "%s: MTUs on messages of three packets or more", name)
		assert.True(t, longAtomic, "%s: an atomic of more bytes than its MTU", name)
		assert.GreaterOrEqual(t, bigRead, 1, "%s: READs of 2^30 bytes or more", name)
		assert.GreaterOrEqual(t, every, 3, "%s: AckReq every 2..4 packets inside a message", name)
		scarce := 0
		for _, w := range run.ctrl {
			for v := 1; v <= reqVLs; v++ {
				if w[v] < 65 || w[v] > 2048 {
					scarce++
				}
			}
		}
		assert.GreaterOrEqual(t, scarce, 2000, "%s: VL-cycles with a credit some packets do not fit", name)
	}
}

// TestRequesterMutantsFail: each slip fails the end-to-end test (Icarus,
// a shorter run whose unmutated block passes).
func TestRequesterMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	run := newReqRun(cosimSeeds[0], reqMutantItems)
	dir := t.TempDir()
	const f = "hca_requester.v"
	for _, m := range []cosimMutant{
		{"unmutated", "", "", ""},
		{"the PSN moved by one per message", f, "if (send) ctx_psn[dix] <= ctx_psn[dix] + npsn;", "if (send) ctx_psn[dix] <= ctx_psn[dix] + 24'd1;"},
		{"an atomic taking its length's PSNs", f, "(is_atom || npk == 33'd0)", "(npk == 33'd0)"},
		{"reads past the payload buffer's room", f, "res32 + n32 <= PAY_BLOCKS;", "1'b1;"},
		{"the blocks counted without the start offset", f, "{27'd0, dec_laddr[5:0]} + {1'b0, dec_length}", "{1'b0, dec_length}"},
		{"pay_start 0", f, ".pay_start(sq_head[5:0])", ".pay_start(6'd0)"},
		{"the VL's high bits for LRH.VL", f, "head_vl4[VL_W-1:0];", "head_vl4[3 -: VL_W];"},
		{"credits compared without the modular rule", f, "cred_left <= 12'd2048", "head_cred >= head_blks"},
		{"a packet offered before its last beat is in", f, "wire            offer      = pkts != {PQ_CW{1'b0}}", "wire            offer      = pq_valid"},
		{"the QPN not compared", f, "ctx_valid[dix] && ctx_qpn[dix] == dec_qpn;", "ctx_valid[dix];"},
		{"a parser error sent", f, "dec_err == 2'd0 && dec_opcode", "dec_opcode"},
		{"the context index from the QPN's high bits", f, "wire [QPN_W-1:0] dix      = dec_qpn[QPN_W-1:0];",
			"wire [QPN_W-1:0] dix      = dec_qpn[23 -: QPN_W];"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := filepath.Join(dir, strings.ReplaceAll(m.name, " ", "_"))
			require.NoError(t, os.MkdirAll(d, 0o755))
			replace := map[string]string{}
			if m.file != "" {
				src := PrimitiveSource(m.file)
				require.Equal(t, 1, strings.Count(src, m.old), "the mutation's text occurs once in %s", m.file)
				replace[m.file] = strings.Replace(src, m.old, m.new, 1)
			}
			files := writeReqBench(t, d, replace)
			run.write(t, d)
			_, err := runTool(ctx, d, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
			require.NoError(t, err)
			res := runReq(t, ctx, d, "m", run, "vvp", "-n", filepath.Join(d, "sim.vvp"))
			if m.file == "" {
				res.passes(t, run, "unmutated")
				return
			}
			bad := res.errors + res.werr + res.cerr + res.verr + res.gaps
			assert.True(t, bad > 0 || res.checked != run.beats, "the end-to-end test passes a requester with %s", m.name)
			t.Logf("%d of %d beats, %d mismatches, werr %d cerr %d verr %d gaps %d: %s", res.checked, run.beats,
				res.errors, res.werr, res.cerr, res.verr, res.gaps, strings.Join(res.first, "; "))
		})
	}
}
