package rtl

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- the fence per context: hca_wqe_fetch + hca_transport <-> hca.Device's fence ----
//
// Two QPs, A (context 0) and B (context 1), through the whole send path
// from the rings in host memory: hca_wqe_fetch reads and parses the
// WQEs, the emitted hca_transport (hca_requester) sends them, ib_vcrc
// seals them; READ responses and ACKs come back on rx_* through
// hca_rx_ack. A posts R1 (a READ of 700 B: 3 response packets at MTU
// 256), W2 (a WRITE of 100 B with IBV_SEND_FENCE, mode 4) and S3 (a SEND
// of 20 B, unfenced). B's doorbell rings only once R1's request has been
// committed to the port, so B's WQEs (X1 a WRITE of 64 B, X2 an inline
// SEND of 236 B, send_lat's: ctrl 16 + byte count 4 + 236 = 256 bytes, 4
// WQEBBs, its bytes from the WQE through wqe_*, no read; X3 a WRITE of
// 300 B: 2 packets) come after W2 in the fetch's stream.
// The responder answers R1 only after B's 4 packets have left (the
// responses' gate).
//
// The model (hca.Device.wqeReady, releaseFence) holds W2, and S3 behind
// it, on A's queue only, until R1 has its answer; B's queue is not held,
// so B's packets go. The order of commits is therefore forced: R1's
// request (B is not rung before it), B's 4 packets in B's order (the
// responses wait for them; W2 waits for the responses), then W2 and S3
// (A's order). Each packet is the model's for its QP (hca.Requester.Next,
// ib.AppendWire), byte for byte, and the completions are the model's in
// the rx stream's order: R1 at its LAST response, X1..X3 at B's ACK, W2
// and S3 at A's ACK. A design that holds every context behind W2 (one
// fence on the one dec_* stream, as before hca_requester exported
// fence_busy) never sends B's packets, so the responses never come and
// the run stalls: it fails.

const (
	fctxRingBlk = 0x1000 // the rings' first 64-byte block: A's 16 WQEBBs from it, B's 16 after
	fctxRingLog = 4      // log2 WQEBBs per ring
	fctxStall   = 600    // cycles with nothing moving that end a run
)

// fctxPlan is the run: the WQEs in the rings, the rx stream with its
// gates, and what the model does.
type fctxPlan struct {
	cfgs   [2]*reqItem
	ring   [2 << fctxRingLog][]byte // the rings' blocks (A's, then B's)
	prod   [2]int                   // WQEBBs posted per QP (the doorbell's producer count)
	acks   []reqAck                 // the rx stream: responses and ACKs, each with its gate (packets committed)
	wires  [][]byte                 // the packets in the forced commit order
	ctxOf  []int                    // each one's context
	cpls   [][4]uint64              // the model's completions in order: QPN, wqe_counter, status, byte count
	r1Last int                      // R1's LAST response's index in acks
}

// newFctxPlan builds the run and runs the model on it.
func newFctxPlan() *fctxPlan {
	p := &fctxPlan{}
	p.cfgs[0] = &reqItem{cfg: true, qix: 0, qpn: 0x4570, dlid: 0x71, slid: 0x81, sl: 1, vl: 1, rqpn: 0xD0000, psn: 0x000010, mtuCode: 1, cqn: 3}
	p.cfgs[1] = &reqItem{cfg: true, qix: 1, qpn: 0x4571, dlid: 0x72, slid: 0x82, sl: 5, vl: 3, rqpn: 0xD0001, psn: 0x000200, mtuCode: 1, cqn: 4}
	for i := range p.ring {
		p.ring[i] = make([]byte, hca.WQEBBBytes)
	}
	qps := [2]*retryQP{newRetryQP(p.cfgs[0]), newRetryQP(p.cfgs[1])}
	// post writes the WQE into QP q's ring (hca.EncodeSendWQE) and returns
	// the model's decode of it.
	post := func(q int, wr hca.SendWR, inl []byte) hca.SendWQE {
		var buf [16 * hca.WQEBBBytes]byte
		idx := uint16(p.prod[q])
		n := hca.EncodeSendWQE(buf[:], &wr, idx, p.cfgs[q].qpn, inl) / hca.WQEBBBytes
		for b := range n {
			copy(p.ring[q<<fctxRingLog+(p.prod[q]+b)%(1<<fctxRingLog)], buf[b*hca.WQEBBBytes:])
		}
		p.prod[q] += n
		w, err := hca.DecodeSendWQE(buf[:])
		if err != nil {
			panic(err)
		}
		return w
	}
	send := func(q int) {
		for qps[q].req.HasWork() {
			_, w := qps[q].send()
			p.wires, p.ctxOf = append(p.wires, w), append(p.ctxOf, q)
		}
	}
	cqe := func(q int, comps []hca.Completion) {
		for _, c := range comps {
			p.cpls = append(p.cpls, [4]uint64{uint64(p.cfgs[q].qpn), uint64(c.WQE.Index), uint64(c.Status), uint64(c.WQE.Length)})
		}
	}
	deliver := func(q int, a reqAck) {
		a.gate, a.qpn, a.msn = len(p.wires), p.cfgs[q].qpn, 1
		p.acks = append(p.acks, a)
		res, _, _ := modelRx(qps[q].req, a)
		cqe(q, res.Completions)
	}
	rd := hca.SendWR{Opcode: hca.WRRDMARead, Signaled: true, LocalAddr: 0x10_0000, Length: 700, LKey: 0x11, RemoteAddr: 0x5000_0000, RKey: 0x66}
	w2 := hca.SendWR{Opcode: hca.WRRDMAWrite, Signaled: true, Fence: true, LocalAddr: 0x11_0003, Length: 100, LKey: 0x12, RemoteAddr: 0x5000_1000, RKey: 0x67}
	s3 := hca.SendWR{Opcode: hca.WRSend, Signaled: true, LocalAddr: 0x12_0007, Length: 20, LKey: 0x13}
	wR1, wW2, wS3 := post(0, rd, nil), post(0, w2, nil), post(0, s3, nil)
	if !wW2.Fenced() || wR1.Fenced() || wS3.Fenced() {
		panic("fctxPlan: W2 alone is fenced")
	}
	// A: R1's request (the model holds W2 and S3: R1 is unfinished).
	cqe(0, qps[0].enqueue(wR1))
	send(0)
	// B: X1, X2 (inline), X3 (2 packets at MTU 256), unfenced.
	x2 := make([]byte, 236)
	for i := range x2 {
		x2[i] = byte(0xA5 ^ i*7)
	}
	for _, x := range []struct {
		wr  hca.SendWR
		inl []byte
	}{
		{hca.SendWR{Opcode: hca.WRRDMAWrite, Signaled: true, LocalAddr: 0x20_0000, Length: 64, LKey: 0x21, RemoteAddr: 0x6000_0000, RKey: 0x76}, nil},
		{hca.SendWR{Opcode: hca.WRSend, Signaled: true, Inline: true, Length: uint32(len(x2))}, x2},
		{hca.SendWR{Opcode: hca.WRRDMAWrite, Signaled: true, LocalAddr: 0x22_0011, Length: 300, LKey: 0x23, RemoteAddr: 0x6000_2000, RKey: 0x77}, nil},
	} {
		cqe(1, qps[1].enqueueInline(post(1, x.wr, x.inl), x.inl))
	}
	send(1)
	// R1's FIRST (256 B), MIDDLE (256), LAST (188): R1 completes, and the
	// model's releaseFence hands on W2 and S3.
	a0 := p.cfgs[0].psn
	deliver(0, readRsp(0, 3, a0, 256, false))
	deliver(0, readRsp(1, 3, a0+1, 256, false))
	deliver(0, readRsp(2, 3, a0+2, 188, false))
	p.r1Last = len(p.acks) - 1
	cqe(0, qps[0].enqueue(wW2))
	cqe(0, qps[0].enqueue(wS3))
	send(0)
	// ACKs: B's through X3's last PSN, A's through S3's.
	deliver(1, reqAck{psn: p.cfgs[1].psn + 3, syn: hca.SynACK})
	deliver(0, reqAck{psn: a0 + 4, syn: hca.SynACK})
	return p
}

// TestFctxPlan: the model does in the run what the plan's comment derives.
func TestFctxPlan(t *testing.T) {
	p := newFctxPlan()
	assert.Equal(t, []int{0, 1, 1, 1, 1, 0, 0}, p.ctxOf, "commit order by context: R1; X1, X2, X3 (2); W2, S3")
	assert.Equal(t, []int{3, 6}, p.prod[:], "WQEBBs posted per QP (one each, X2's 4)")
	require.Len(t, p.cpls, 6)
	for k, want := range [][2]uint64{{0x4570, 0}, {0x4571, 0}, {0x4571, 1}, {0x4571, 5}, {0x4570, 1}, {0x4570, 2}} {
		assert.Equal(t, want, [2]uint64{p.cpls[k][0], p.cpls[k][1]}, "completion %d: QPN and index", k)
		assert.Equal(t, uint64(hca.WCSuccess), p.cpls[k][2], "completion %d's status", k)
	}
	assert.Equal(t, 5, p.acks[p.r1Last].gate, "R1's responses wait for R1's request and B's 4 packets")
}

// stalls draws the per-cycle control (fctxTB's ctrl bits) and B's extra
// doorbell delay: seed 0, every handshake ready and no delay; else each
// handshake ready with a probability drawn per 64-cycle phase.
func (p *fctxPlan) stalls(seed uint64, n int) (ctrl []uint64, dbDelay int) {
	if seed == 0 {
		for range n {
			ctrl = append(ctrl, 0x3ff)
		}
		return ctrl, 0
	}
	r := rand.New(rand.NewPCG(seed, 0xfe7c))
	var prob [10]float64
	for c := range n {
		if c%64 == 0 {
			for b := range prob {
				prob[b] = []float64{0.2, 0.6, 1}[r.IntN(3)]
			}
		}
		var w uint64
		for b, pb := range prob {
			if r.Float64() < pb {
				w |= 1 << b
			}
		}
		ctrl = append(ctrl, w)
	}
	return ctrl, r.IntN(40)
}

// fctxResult is what the run's log and beats show.
type fctxResult struct {
	stalled  bool
	errs     []string
	ctxOf    []int             // the committed packets' contexts, in order (from their beats)
	cpls     [][4]uint64       // the completions on cpl_*
	commitAt []int             // each commit's cycle
	ackAt    []int             // each rx packet's take by hca_requester
	takeAt   map[[2]uint64]int // each WQE's take on dec_*, by {QPN, index}
	parseAt  map[[2]uint64]int // its first block's into the parser
	checked  int               // packets compared
}

// write puts the bench and its data files into dir.
func (p *fctxPlan) write(t *testing.T, dir string, seed uint64) {
	t.Helper()
	hex := func(name string, lines []string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	var ring []string
	for _, b := range p.ring {
		ring = append(ring, fmt.Sprintf("%x", b))
	}
	hex("ring.hex", ring)
	run := &reqRun{acks: p.acks}
	var rx []string
	for _, b := range run.rxBeats() {
		rx = append(rx, fmt.Sprintf("%04x%01x%x", b.gate, b.flags, b.data))
	}
	hex("rx.hex", rx)
	const n = 4000
	ctrl, dbDelay := p.stalls(seed, n)
	var cl []string
	for _, w := range ctrl {
		cl = append(cl, fmt.Sprintf("%03x", w))
	}
	hex("ctrl.hex", cl)
	var cfg []string
	for _, c := range p.cfgs {
		// {QPN 24, DLID 16, SLID 16, SL 4, VL 4, remote QPN 24, PSN 24, MTU 4, CQN 4}
		cfg = append(cfg, fmt.Sprintf("%06x%04x%04x%x%x%06x%06x%x%x00", c.qpn, c.dlid, c.slid, c.sl, c.vl, c.rqpn, c.psn, c.mtuCode, c.cqn))
	}
	hex("cfg.hex", cfg)
	tb := strings.NewReplacer("{{NRX}}", strconv.Itoa(len(rx)), "{{NCYC}}", strconv.Itoa(n), "{{PROD_A}}", strconv.Itoa(p.prod[0]),
		"{{PROD_B}}", strconv.Itoa(p.prod[1]), "{{DB_DELAY}}", strconv.Itoa(dbDelay), "{{PORT_LID}}", strconv.Itoa(reqPortLID),
		"{{RING_A}}", strconv.Itoa(fctxRingBlk), "{{RING_LOG}}", strconv.Itoa(fctxRingLog),
		"{{RING_B}}", strconv.Itoa(fctxRingBlk+1<<fctxRingLog), "{{RINGS}}", strconv.Itoa(2<<fctxRingLog),
		"{{EVERY}}", strconv.Itoa(retryEvery), "{{STALL}}", strconv.Itoa(fctxStall)).Replace(fctxTB)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tb.v"), []byte(tb), 0o644))
}

// run compiles and runs the bench (replace: a mutated source) and reads
// its log and beats.
func (p *fctxPlan) run(t *testing.T, ctx context.Context, dir string, seed uint64, replace map[string]string) *fctxResult {
	t.Helper()
	p.write(t, dir, seed)
	files := []string{"tb.v", "hca_transport.v"}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hca_transport.v"), []byte(reqTransport(t)), 0o644))
	for _, f := range append([]string{"hca_wqe_fetch.v", "hca_wqe_parse.v", "rr_arbiter.v", "onehot_encode.v"}, reqFiles...) {
		text, ok := replace[f]
		if !ok {
			text = PrimitiveSource(f)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644))
		files = append(files, f)
	}
	_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
	require.NoError(t, err)
	out, err := runTool(ctx, dir, "vvp", "-n", "sim.vvp")
	require.NoError(t, err)
	res := &fctxResult{takeAt: map[[2]uint64]int{}, parseAt: map[[2]uint64]int{}}
	if !strings.Contains(out, "FCTX done") {
		t.Fatalf("no summary from the bench: %s", out)
	}
	res.stalled = strings.Contains(out, "stalled=1")
	f, err := os.Open(filepath.Join(dir, "log.txt"))
	require.NoError(t, err)
	defer f.Close()
	var pkt []byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		num := func(i int) uint64 { v, _ := strconv.ParseUint(fs[i], 16, 64); return v } // a hex field
		cyc := func(i int) int { v, _ := strconv.Atoi(fs[i]); return v }                 // a cycle (decimal)
		switch fs[0] {
		case "C":
			res.commitAt = append(res.commitAt, cyc(2))
		case "A":
			res.ackAt = append(res.ackAt, cyc(1))
		case "T":
			res.takeAt[[2]uint64{num(1), num(2)}] = cyc(3)
		case "F":
			res.parseAt[[2]uint64{num(1), num(2)}] = cyc(3)
		case "P":
			res.cpls = append(res.cpls, [4]uint64{num(1), num(2), num(3), num(4)})
		case "B":
			if fs[1] == "1" {
				pkt = pkt[:0]
			}
			if fs[3] != "0" {
				res.errs = append(res.errs, "a beat with ib_vcrc's length error")
			}
			data := make([]byte, BlockBytes)
			for i := range data {
				v, _ := strconv.ParseUint(fs[4][2*i:2*i+2], 16, 8)
				data[i] = byte(v)
			}
			pkt = append(pkt, data...)
			if fs[2] == "1" {
				p.match(res, pkt)
			}
		}
	}
	require.NoError(t, sc.Err())
	return res
}

// match checks the next committed packet against the forced order.
func (p *fctxPlan) match(res *fctxResult, pkt []byte) {
	k := res.checked
	res.checked++
	// Its context: BTH.DestQP is the context's remote QPN.
	dqp := uint32(pkt[13])<<16 | uint32(pkt[14])<<8 | uint32(pkt[15])
	q := -1
	for i, c := range p.cfgs {
		if c.rqpn == dqp {
			q = i
		}
	}
	res.ctxOf = append(res.ctxOf, q)
	switch {
	case k >= len(p.wires):
		res.errs = append(res.errs, fmt.Sprintf("packet %d (context %d) past the model's %d", k, q, len(p.wires)))
	case len(pkt) != len(p.wires[k]) || string(pkt[:wireLen(pkt)]) != string(p.wires[k][:wireLen(p.wires[k])]):
		res.errs = append(res.errs, fmt.Sprintf("packet %d: context %d PSN %06x, the model's context %d PSN %06x", k, q,
			psnAt(pkt), p.ctxOf[k], psnAt(p.wires[k])))
	}
}

// wireLen is a packet's bytes on the wire: LRH.PktLen 4-byte words and
// the 2-byte VCRC (the rest of its last beat is padding).
func wireLen(w []byte) int { return ((int(w[4])<<8|int(w[5]))&0x7ff)*4 + 2 }

// fctxTB: hca_wqe_fetch -> hca_transport -> ib_vcrc. After reset the
// send queue contexts (sq_cfg_*: A's ring at block RING_A, B's at RING_B,
// 2^RING_LOG WQEBBs each) and the QP contexts (qp_cfg_*, cfg.hex) are
// written; A's doorbell rings (producer PROD_A), B's (producer PROD_B) once
// a packet has been committed and DB_DELAY cycles more (the {{...}}
// placeholders, fctxPlan.write). rd0 (the WQE reads)
// is answered from ring.hex, rd1 (payload) with host_block, each a block
// a beat when the cycle's control allows; L_Key checks pass; the rx
// stream's packets are offered once their gate's packets have left tx_*.
// The control (ctrl.hex) per cycle: bit 0 rd0 ready, 1 an rd0 block, 2 rd1
// ready, 3 an rd1 block, 4 vcrc's out_ready, 5 the port picks, 6
// cpl_ready, 7 wr_ready, 8 kc ready, 9 an rx beat.
const fctxTB = "`timescale 1ns/1ps\n" + `
module tb;
    localparam NRX = {{NRX}}, NCYC = {{NCYC}}, STALL = {{STALL}}, RING0 = {{RING_A}}, RINGS = {{RINGS}};
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    reg [511:0] ring [0:RINGS-1];
    reg [531:0] rxs [0:NRX-1];
    reg [9:0] ctrl [0:NCYC-1];
    reg [127:0] cfgs [0:1];
` + tbHostBlock + `
    reg sq_cfg_valid, db_valid, qp_cfg_valid;
    reg [23:0] sq_cfg_qpn, db_qpn;
    reg [63:0] sq_cfg_base;
    reg [15:0] db_producer;
    reg [127:0] cf;
    wire db_ready, qp_cfg_ready;
    wire rd0_valid, rd1_valid;
    reg rd0_ready, rd1_ready, rd0_rsp, rd1_rsp;
    wire [63:0] rd0_addr, rd1_addr;
    wire [15:0] rd0_len, rd1_len;
    reg [511:0] rd0_data, rd1_data;
    reg [57:0] q0 [0:255];
    reg [57:0] q1 [0:4095];
    integer h0, t0, h1, t1, bi;
    wire wqe_valid, wqe_ready;
    wire [23:0] wqe_qpn;
    wire [511:0] wqe_data;
    wire dec_valid, dec_ready, dec_signaled, dec_inline, dec_sge_valid, dec_sge_ready, dec_sge_last;
    wire [1:0] dec_err;
    wire [2:0] dec_opcode, dec_fm;
    wire [15:0] dec_index, dec_dlid;
    wire [23:0] dec_qpn, dec_rqpn;
    wire [4:0] dec_bbs;
    wire [31:0] dec_imm, dec_rkey, dec_length, dec_lkey, dec_qkey, dec_sge_len, dec_sge_lkey;
    wire [63:0] dec_raddr, dec_swap_add, dec_compare, dec_laddr, dec_sge_addr;
    wire [30:0] dec_inline_len;
    wire [6:0] dec_inline_off;
    wire [5:0] dec_sges;
    wire [7:0] fence_busy;
    wire kc_req_valid, kc_rsp_ready;
    reg kc_pend, kc_rdy, kc_rv;
    reg [23:0] kc_tag;
    wire [23:0] kc_req_tag;
    wire [31:0] kc_req_key, kc_req_pd;
    wire [3:0] kc_req_need;
    wire [63:0] kc_req_addr, kc_req_len;
    wire wr_valid;
    wire [63:0] wr_addr, wr_be;
    wire [15:0] wr_len;
    wire [511:0] wr_data;
    reg wr_ready, out_ready, pick_valid, rx_valid, cpl_ready;
    reg [1:0] pick_vl;
    wire [3:0] waiting;
    wire pick_taken, tx_valid, tx_sop, tx_eop, tx_ready;
    wire [511:0] tx_data;
    wire [1:0] tx_vl;
    wire v_valid, v_sop, v_eop, v_vcrc_err, v_len_err;
    wire [511:0] v_data;
    wire rx_ready, cpl_valid, cpl_receiver;
    wire [15:0] rx_nak_retry, rx_rsp_todo, rx_not_req, rx_icrc_err, rx_hdr_err, rx_pkey_viol, rx_mcast_drop, rx_no_qp;
    wire [3:0] cpl_cqn, cpl_opcode;
    wire [7:0] cpl_status;
    wire [2:0] cpl_wr_op;
    wire [23:0] cpl_qpn, cpl_src_qp;
    wire [15:0] cpl_wqe_counter;
    wire [31:0] cpl_byte_count, cpl_imm;
    reg [531:0] rk;

    hca_wqe_fetch #(.QPN_W(3)) fetch (
        .clk(clk), .rst_n(rst_n),
        .sq_cfg_valid(sq_cfg_valid), .sq_cfg_qpn(sq_cfg_qpn), .sq_cfg_base(sq_cfg_base), .sq_cfg_log_size(4'd{{RING_LOG}}), .sq_cfg_ud(1'b0),
        .db_valid(db_valid), .db_qpn(db_qpn), .db_producer(db_producer), .db_ready(db_ready), .fence_busy(fence_busy),
        .rd_req_valid(rd0_valid), .rd_req_addr(rd0_addr), .rd_req_len(rd0_len), .rd_req_ready(rd0_ready),
        .rd_rsp_valid(rd0_rsp), .rd_rsp_data(rd0_data),
        .wqe_valid(wqe_valid), .wqe_qpn(wqe_qpn), .wqe_data(wqe_data), .wqe_ready(wqe_ready),
        .dec_valid(dec_valid), .dec_ready(dec_ready), .dec_err(dec_err), .dec_opcode(dec_opcode),
        .dec_index(dec_index), .dec_qpn(dec_qpn), .dec_bbs(dec_bbs),
        .dec_signaled(dec_signaled), .dec_fm(dec_fm), .dec_imm(dec_imm), .dec_raddr(dec_raddr), .dec_rkey(dec_rkey),
        .dec_swap_add(dec_swap_add), .dec_compare(dec_compare), .dec_inline(dec_inline),
        .dec_inline_len(dec_inline_len), .dec_inline_off(dec_inline_off), .dec_length(dec_length),
        .dec_lkey(dec_lkey), .dec_laddr(dec_laddr), .dec_dlid(dec_dlid), .dec_rqpn(dec_rqpn),
        .dec_qkey(dec_qkey), .dec_sges(dec_sges), .dec_sge_valid(dec_sge_valid), .dec_sge_ready(dec_sge_ready),
        .dec_sge_len(dec_sge_len), .dec_sge_lkey(dec_sge_lkey), .dec_sge_addr(dec_sge_addr),
        .dec_sge_last(dec_sge_last));
    hca_transport dut (
        .clk(clk), .rst_n(rst_n),
        .qp_cfg_valid(qp_cfg_valid), .qp_cfg_ready(qp_cfg_ready), .qp_cfg_qpn(cf[127:104]), .qp_cfg_dlid(cf[103:88]),
        .qp_cfg_slid(cf[87:72]), .qp_cfg_sl(cf[71:68]), .qp_cfg_vl(cf[65:64]), .qp_cfg_rqpn(cf[63:40]), .qp_cfg_psn(cf[39:16]),
        .qp_cfg_rnr(5'd0),
        .qp_cfg_mtu(cf[14:12]), .qp_cfg_cqn(cf[11:8]), .qp_cfg_rcqn(cf[11:8]), .qp_cfg_pd(32'd0), .ack_req_every(17'd{{EVERY}}),
        .wqe_valid(wqe_valid), .wqe_qpn(wqe_qpn), .wqe_data(wqe_data), .wqe_ready(wqe_ready),
        .dec_valid(dec_valid), .dec_ready(dec_ready), .dec_err(dec_err), .dec_opcode(dec_opcode),
        .dec_index(dec_index), .dec_qpn(dec_qpn), .dec_bbs(dec_bbs), .dec_signaled(dec_signaled), .dec_fm(dec_fm), .dec_imm(dec_imm),
        .dec_raddr(dec_raddr), .dec_rkey(dec_rkey), .dec_swap_add(dec_swap_add), .dec_compare(dec_compare),
        .dec_inline(dec_inline), .dec_inline_len(dec_inline_len), .dec_inline_off(dec_inline_off), .dec_length(dec_length),
        .dec_lkey(dec_lkey), .dec_laddr(dec_laddr), .dec_dlid(dec_dlid), .dec_rqpn(dec_rqpn), .dec_qkey(dec_qkey),
        .dec_sges(dec_sges), .dec_sge_valid(dec_sge_valid), .dec_sge_ready(dec_sge_ready), .dec_sge_len(dec_sge_len),
        .dec_sge_lkey(dec_sge_lkey), .dec_sge_addr(dec_sge_addr), .dec_sge_last(dec_sge_last), .fence_busy(fence_busy),
        .kc_req_valid(kc_req_valid), .kc_req_ready(kc_rdy), .kc_req_key(kc_req_key), .kc_req_pd(kc_req_pd),
        .kc_req_need(kc_req_need), .kc_req_addr(kc_req_addr), .kc_req_len(kc_req_len), .kc_req_tag(kc_req_tag),
        .kc_rsp_valid(kc_rv), .kc_rsp_ready(kc_rsp_ready), .kc_rsp_result(3'd0), .kc_rsp_tag(kc_tag),
        .pay_rd_valid(rd1_valid), .pay_rd_addr(rd1_addr), .pay_rd_len(rd1_len), .pay_rd_ready(rd1_ready),
        .pay_rsp_valid(rd1_rsp), .pay_rsp_data(rd1_data),
        .pay_wr_valid(wr_valid), .pay_wr_addr(wr_addr), .pay_wr_len(wr_len), .pay_wr_data(wr_data), .pay_wr_be(wr_be), .pay_wr_ready(wr_ready),
        .tx_vl_waiting(waiting), .tx_vl_credit({4{12'd2048}}), .tx_pick_valid(pick_valid), .tx_pick_vl(pick_vl),
        .tx_pick_taken(pick_taken),
        .tx_valid(tx_valid), .tx_data(tx_data), .tx_sop(tx_sop), .tx_eop(tx_eop), .tx_vl(tx_vl), .tx_ready(tx_ready),
        .port_lid(16'd{{PORT_LID}}), .port_lmc(3'd0), .pkey_cfg_valid(1'b0), .pkey_cfg_index(16'd0), .pkey_cfg_key(16'd0),
        .rx_valid(rx_valid), .rx_data(rk[511:0]), .rx_sop(rk[513]), .rx_eop(rk[512]), .rx_vl(2'd0), .rx_ready(rx_ready),
        .rx_nak_retry(rx_nak_retry), .rx_rsp_todo(rx_rsp_todo), .rx_not_req(rx_not_req),
        .rx_icrc_err(rx_icrc_err), .rx_hdr_err(rx_hdr_err), .rx_pkey_viol(rx_pkey_viol),
        .rx_mcast_drop(rx_mcast_drop), .rx_no_qp(rx_no_qp),
        .rw_flush(8'd0), // no receive queue here: nothing to flush when a context goes to ERR
        .cpl_valid(cpl_valid), .cpl_ready(cpl_ready), .cpl_cqn(cpl_cqn), .cpl_opcode(cpl_opcode),
        .cpl_status(cpl_status), .cpl_receiver(cpl_receiver), .cpl_wr_op(cpl_wr_op), .cpl_qpn(cpl_qpn),
        .cpl_wqe_counter(cpl_wqe_counter), .cpl_byte_count(cpl_byte_count), .cpl_imm(cpl_imm), .cpl_src_qp(cpl_src_qp));
    ib_vcrc vcrc (
        .clk(clk), .rst_n(rst_n),
        .in_valid(tx_valid), .in_ready(tx_ready), .in_data(tx_data), .in_sop(tx_sop), .in_eop(tx_eop),
        .out_valid(v_valid), .out_ready(out_ready), .out_data(v_data), .out_sop(v_sop), .out_eop(v_eop),
        .out_vcrc_err(v_vcrc_err), .out_len_err(v_len_err));

    integer fl, c, k, v, ri, eops, commits, idle, stalled, dbb_at, cpls, got;
    reg [9:0] cw;
    reg rx_held, db_b_done, tb_sending;
    initial begin
        $readmemh("ring.hex", ring);
        $readmemh("rx.hex", rxs);
        $readmemh("ctrl.hex", ctrl);
        $readmemh("cfg.hex", cfgs);
        fl = $fopen("log.txt", "w");
        sq_cfg_valid = 1'b0; db_valid = 1'b0; qp_cfg_valid = 1'b0; sq_cfg_qpn = 24'd0; sq_cfg_base = 64'd0;
        db_qpn = 24'd0; db_producer = 16'd0; cf = 128'd0;
        rd0_ready = 1'b0; rd1_ready = 1'b0; rd0_rsp = 1'b0; rd1_rsp = 1'b0; rd0_data = 512'd0; rd1_data = 512'd0;
        kc_pend = 1'b0; kc_rdy = 1'b0; kc_rv = 1'b0; kc_tag = 24'd0; wr_ready = 1'b0; out_ready = 1'b0; pick_valid = 1'b0; pick_vl = 2'd0;
        rx_valid = 1'b0; cpl_ready = 1'b0; rk = 532'd0; rx_held = 1'b0; db_b_done = 1'b0; tb_sending = 1'b0;
        h0 = 0; t0 = 0; h1 = 0; t1 = 0; ri = 0; eops = 0; commits = 0; idle = 0; stalled = 0; dbb_at = -1; cpls = 0; got = 0;
        repeat (3) @(posedge clk);
        @(negedge clk) rst_n = 1'b1;
        // The send queues, then the QP contexts (each held until taken).
        for (v = 0; v < 2; v = v + 1) begin
            sq_cfg_valid = 1'b1; sq_cfg_qpn = cfgs[v][127:104]; sq_cfg_base = (RING0 + (v << {{RING_LOG}})) * 64;
            @(negedge clk);
        end
        sq_cfg_valid = 1'b0;
        for (v = 0; v < 2; v = v + 1) begin
            qp_cfg_valid = 1'b1; cf = cfgs[v];
            #1;
            while (!qp_cfg_ready) begin
                @(negedge clk);
                #1;
            end
            @(negedge clk);
        end
        qp_cfg_valid = 1'b0;
        // A's doorbell.
        db_valid = 1'b1; db_qpn = cfgs[0][127:104]; db_producer = {{PROD_A}};
        c = 0;
        k = 0;
        while (k < 48) begin
            if (c >= NCYC - 1 || idle >= STALL || (ri >= NRX && cpls >= 6 && idle > 8)) k = k + 1;
            if (idle >= STALL) stalled = 1;
            @(negedge clk);
            cw = k > 0 ? 10'h3ff : ctrl[c];
            // B's doorbell: once a packet is committed, and the delay after.
            db_valid = 1'b0;
            if (dbb_at < 0 && commits > 0) dbb_at = c + {{DB_DELAY}};
            if (!db_b_done && dbb_at >= 0 && c >= dbb_at) begin
                db_valid = 1'b1; db_qpn = cfgs[1][127:104]; db_producer = {{PROD_B}}; db_b_done = 1'b1;
            end
            rd0_ready = cw[0];
            rd0_rsp = h0 < t0 && cw[1];
            rd0_data = rd0_rsp ? ring[q0[h0 % 256] - RING0] : 512'd0;
            if (rd0_rsp) h0 = h0 + 1;
            rd1_ready = cw[2];
            rd1_rsp = h1 < t1 && cw[3];
            rd1_data = rd1_rsp ? host_block(q1[h1 % 4096]) : 512'd0;
            if (rd1_rsp) h1 = h1 + 1;
            out_ready = cw[4];
            cpl_ready = cw[6];
            wr_ready = cw[7];
            kc_rv = kc_pend;
            kc_rdy = !kc_pend && cw[8];
            rk = ri < NRX ? rxs[ri] : 532'd0;
            rx_valid = ri < NRX && (rx_held || (eops >= rk[531:516] && cw[9]));
            pick_valid = 1'b0;
            #1;
            if (cw[5]) begin
                for (v = 0; v < 4; v = v + 1)
                    if (!pick_valid && waiting[v]) begin
                        pick_valid = 1'b1;
                        pick_vl = v;
                    end
            end
            #1;
            if (kc_rv && kc_rsp_ready) kc_pend = 1'b0;
            if (kc_req_valid && kc_rdy) begin
                kc_pend = 1'b1;
                kc_tag = kc_req_tag;
            end
            if (rd0_valid && rd0_ready) begin
                for (bi = 0; bi < rd0_len / 64; bi = bi + 1) begin
                    q0[t0 % 256] = rd0_addr[63:6] + bi;
                    t0 = t0 + 1;
                end
            end
            if (rd1_valid && rd1_ready) begin
                // The blocks its bytes lie in (hca_dma_engine's rd1 contract).
                for (bi = 0; bi < (rd1_addr[5:0] + rd1_len + 63) / 64; bi = bi + 1) begin
                    q1[t1 % 4096] = rd1_addr[63:6] + bi;
                    t1 = t1 + 1;
                end
            end
            rx_held = rx_valid && !rx_ready;
            if (rx_valid && rx_ready) ri = ri + 1;
            if (dut.ack_valid && dut.ack_ready) $fdisplay(fl, "A %0d", c);
            if (pick_taken) begin
                $fdisplay(fl, "C %0d %0d", dut.u_requester.head_ctx, c);
                commits = commits + 1;
                tb_sending = 1'b1;
            end
            if (tx_valid && tx_ready && tx_eop) begin
                eops = eops + 1;
                tb_sending = 1'b0;
            end
            if (dec_valid && dec_ready) $fdisplay(fl, "T %h %h %0d", dec_qpn, dec_index, c);
            // A WQE's first block into the parser (its QPN and index, bytes 1..2 of the ctrl segment).
            if (fetch.first) $fdisplay(fl, "F %h %h %0d", fetch.bb_qpn, fetch.bb_data[503:488], c);
            if (cpl_valid && cpl_ready) begin
                $fdisplay(fl, "P %h %h %h %h", cpl_qpn, cpl_wqe_counter, cpl_status, cpl_byte_count);
                cpls = cpls + 1;
            end
            if (v_valid && out_ready) begin
                $fdisplay(fl, "B %b %b %b %h", v_sop, v_eop, v_len_err, v_data);
                got = got + 1;
            end
            if ((rd0_valid && rd0_ready) || rd0_rsp || (rd1_valid && rd1_ready) || rd1_rsp || (dec_valid && dec_ready) ||
                (tx_valid && tx_ready) || (cpl_valid && cpl_ready) || (rx_valid && rx_ready) || (wr_valid && wr_ready) ||
                (v_valid && out_ready) || db_valid)
                idle = 0;
            else
                idle = idle + 1;
            c = c + 1;
        end
        $fclose(fl);
        $display("FCTX done cycles=%0d beats=%0d commits=%0d rx=%0d cpls=%0d stalled=%0d", c, got, commits, ri, cpls, stalled);
        $finish;
    end
endmodule
`

// fctxCase is a run: a mutant (file's old text replaced by new; none when
// file is "") and the seed of its stalls (0: every handshake ready).
type fctxCase struct {
	name           string
	seed           uint64
	file, old, new string
}

// TestRequesterFenceContextCosim: a fenced WQE holds its own QP's queue
// only: the other QP's WQEs pass it (the forced order above), each packet
// is the model's, and the completions are; with random stalls too. Each
// mutant fails the run.
func TestRequesterFenceContextCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const fe, rq = "hca_wqe_fetch.v", "hca_requester.v"
	cases := []fctxCase{
		{name: "unmutated"},
		{name: "unmutated, stalled 1", seed: 1},
		{name: "unmutated, stalled 2", seed: 2},
		// main's behaviour before this change: the fetch never holds a
		// fenced WQE, so it waits on dec_* (hca_requester's own check) and
		// every context's WQEs wait behind it.
		{"every context held behind the fenced WQE (one hold on dec_*)", 1, fe, ".req(bq_valid & ~fence_held)", ".req(bq_valid)"},
		{"the READ on dec_* not holding (the fenced WQE reaches dec_* and holds it)", 0, fe,
			"&& (fence_busy[g] || dec_rdat[g]);", "&& fence_busy[g];"},
		{"released at the READ's first response", 1, rq, "!oq_done[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}])",
			"!oq_done[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}] && !oq_gv[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}])"},
		{"released with no fence at all (neither hold)", 0, rq, "rdun[fc] = 1'b1;", "rdun[fc] = 1'b0;"},
		{"the held WQE dropped from its buffer (its QP's later WQEs go first)", 0, fe,
			"assign bq_pop = drain ? src_hot : {QPS{1'b0}};", "assign bq_pop = (drain ? src_hot : {QPS{1'b0}}) | (bq_valid & fence_held);"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newFctxPlan()
			dir := t.TempDir()
			if d := os.Getenv("FCTX_DIR"); d != "" && tc.file == "" && tc.seed == 0 {
				dir = d
			}
			res := p.run(t, t.Context(), dir, tc.seed, mutatedSource(t, tc.file, tc.old, tc.new))
			got := fctxJudge(p, res)
			if tc.file != "" {
				assert.NotEmpty(t, got, "the mutant passes the run")
				t.Logf("fails: %s", strings.Join(got, "; "))
				return
			}
			if !assert.Empty(t, got) {
				return
			}
			w2 := [2]uint64{uint64(p.cfgs[0].qpn), 1}
			t.Logf("R1's request committed at cycle %d, B's 4 packets at %v, R1's LAST taken at %d, W2 into the parser at %d, taken at %d and committed at %d, S3 committed at %d",
				res.commitAt[0], res.commitAt[1:5], res.ackAt[p.r1Last], res.parseAt[w2], res.takeAt[w2], res.commitAt[5], res.commitAt[6])
		})
	}
}

// fctxJudge lists what the run got wrong: a stall, a packet not the
// model's or out of the forced order, a completion not the model's, W2
// taken before R1's LAST response.
func fctxJudge(p *fctxPlan, res *fctxResult) []string {
	errs := append([]string(nil), res.errs...)
	if res.stalled {
		errs = append(errs, fmt.Sprintf("stalled after %d of %d packets (contexts %v)", res.checked, len(p.wires), res.ctxOf))
	}
	if res.checked != len(p.wires) {
		errs = append(errs, fmt.Sprintf("%d packets, the model's %d", res.checked, len(p.wires)))
	}
	if fmt.Sprint(res.ctxOf) != fmt.Sprint(p.ctxOf) {
		errs = append(errs, fmt.Sprintf("commit order by context %v, the forced order %v", res.ctxOf, p.ctxOf))
	}
	if fmt.Sprint(res.cpls) != fmt.Sprint(p.cpls) {
		errs = append(errs, fmt.Sprintf("completions %x, the model's %x", res.cpls, p.cpls))
	}
	// W2 leaves its QP's buffer for the parser only after R1's LAST is
	// taken (its walk then retires R1, and fence_busy drops).
	w2, ok := res.parseAt[[2]uint64{uint64(p.cfgs[0].qpn), 1}]
	switch {
	case len(res.ackAt) <= p.r1Last:
		errs = append(errs, "R1's LAST response never taken")
	case !ok:
		errs = append(errs, "W2 never parsed")
	case w2 <= res.ackAt[p.r1Last]:
		errs = append(errs, fmt.Sprintf("W2 into the parser at cycle %d, R1's LAST taken at %d", w2, res.ackAt[p.r1Last]))
	}
	return errs
}
