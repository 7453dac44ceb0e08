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
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_rx_ack -> hca_responder, with hca_share_arb, as hca_transport wires them ----
//
// The responder's run (respRun, ACK_COALESCE 1; with SENDs, WRITEs with
// immediate and receive WQEs posted in newRespWireSends, else no SEND
// inside a WRITE) goes as wire packets
// (ib.AppendWire, a GRH one time in four) into hca_rx_ack's rx_*, whose rq_*
// and request-tagged payload blocks feed hca_responder as in hca_transport;
// between them come RDMA READ responses (for the requester: a stand-in in
// the testbench takes each from ack_*, pops its ack_blk blocks from pd_*
// and writes them through wr0 at an address of its own) and requests the
// responder does not take (UD SEND, SEND with invalidate, atomics:
// dropped on not_req). The stand-in also asks hca_key_check for R_Key checks of its
// own through the key-check arbiter while the responder asks for its own,
// so both arbiters of hca_share_arb see both clients. The checks: the
// responder's ACKs and NAKs, counters and host bytes are the model's
// (hca.Responder, as TestResponderCosim); every READ response reaches the
// stand-in with its opcode, length and ceil(length / 64) blocks, whose bytes
// land at its address; each of the stand-in's key checks gets
// hca.KeyTable.CheckRemote's result; no two writes' beats interleave on
// wr0; not_req counts the other requests; nothing is dropped as malformed.
// ACK_COALESCE 1 only: with 1, no ACK is ever owed, so the flush (which
// depends on whether the next header already waits on rq_*, a matter of
// cycles here) never fires and the ACK sequence is fixed by the packets;
// coalescing and its flush are co-simulated at the block (TestResponderCosim).

const respWireLID = 0x0123 // the port's LID (port_lid)

// respWireRA is where the stand-in writes READ response k: RA + k x 8192.
const respWireRA = uint64(0x7F00_0000_0000)

// respWireKey is one of the stand-in's key checks and the model's result.
type respWireKey struct {
	key, pd uint32
	addr, n uint64
	want    hca.KeyResult
}

// respWire is a wired run: the responder's run and what goes with it.
type respWire struct {
	run    *respRun
	r      *rand.Rand
	ents   []string    // rx.hex: beats and context writes
	rsps   [][]byte    // the READ responses' payloads, in order
	rspOps []ib.Opcode // their opcodes
	notReq int         // requests the responder does not take
	keys   []respWireKey
	grh    int // WRITE packets with a GRH
	bad    int // malformed packets (hca_rx_ack's hdr_err): atomics whose PktLen ParseWire refuses
	// atoms: the atomic requests by opcode and header layout (respWireSendKind).
	atoms map[string]int
	// sends: the SEND and WRITE-with-immediate packets by opcode and
	// header (respWireSendKind), so a run can require each layout.
	sends map[string]int
	sq    [][]byte // the requester's packets on its transmit port, whole beats
	// rdq: the requester's stand-in reads through rd1 (address, length):
	// of the READ regions' pattern, so the testbench checks each block.
	rdq [][2]uint64
}

// respWireSendKind names a SEND's or WRITE with immediate's layout: its
// opcode and whether a GRH comes first (which moves the ImmDt and the
// payload by 40 bytes, into the second beat for a WRITE ONLY with immediate).
func respWireSendKind(op ib.Opcode, grh bool) string {
	if grh {
		return op.String() + " GRH"
	}
	return op.String()
}

// respWirePath is the path hca_ack_tx addresses a QP's ACKs with (the
// context write's DLID, SLID, SL, VL, remote QPN), made from its QPN so
// that a QP written again keeps it: the model's hca.Device.address.
func respWirePath(qpn uint32) (dlid, slid uint16, sl, vl uint8, rqpn uint32) {
	return uint16(qpn>>2)&0x3FFF | 1, respWireLID, uint8(qpn>>3) & 0xF, uint8(qpn>>5) & 1, (qpn ^ 0x5A5A5A) & 0xFFFFFF
}

// ackWire is the ACKNOWLEDGE hca.Device.sendAck sends for a, as
// ib.AppendWire encodes it, its VCRC zero (ib_link writes it) and the beat
// zero past it.
func ackWire(a respAck) []byte {
	dlid, slid, sl, vl, rqpn := respWirePath(a.qpn)
	w := ib.AppendWire(nil, &ib.Packet{Opcode: ib.Acknowledge, DLID: dlid, SLID: slid, SL: sl, VL: vl, DestQP: rqpn,
		PSN: a.psn, AETH: ib.AETH{Syndrome: uint8(a.syn), MSN: a.msn}})
	b := make([]byte, BlockBytes)
	copy(b, w[:len(w)-ib.VCRCBytes])
	return b
}

func newRespWire(seed uint64, steps int) *respWire {
	return newRespWireRun(newRespRun(seed, 1), seed, steps)
}

// newRespWireReads is a wired run with READ requests (newRespRunReads,
// maxRdAtomic resources) and the requester's stand-in reading through rd1.
func newRespWireReads(seed uint64, steps, maxRdAtomic int) *respWire {
	w := newRespWireRun(newRespRunReads(seed, 1, maxRdAtomic), seed, steps)
	for range steps / 2 {
		mr := w.run.readRegions[w.r.IntN(3)]
		n := uint64(1 + w.r.IntN(600))
		w.rdq = append(w.rdq, [2]uint64{mr.Addr + uint64(w.r.IntN(int(mr.Length)-int(n))), n})
	}
	return w
}

// newRespWireSends is a wired run with SENDs and WRITEs with immediate
// (newRespRunSends) and the receive WQEs posted before them, which the
// testbench's receive queue stand-in takes (respWireTB).
func newRespWireSends(seed uint64, steps int) *respWire {
	return newRespWireRun(newRespRunSends(seed, 1), seed, steps)
}

func newRespWireRun(run *respRun, seed uint64, steps int) *respWire {
	run.noSend = !run.sends // a SEND MIDDLE inside a WRITE only in runs with SENDs
	run.fill(steps)
	w := &respWire{run: run, r: rand.New(rand.NewPCG(seed, 0x3172)), sends: map[string]int{}, atoms: map[string]int{}}
	r := w.r
	beat := func(p *ib.Packet, gap bool) { w.raw(ib.AppendWire(nil, p), gap) }
	for _, p := range run.stream {
		if p.cfg {
			dlid, slid, sl, vl, rqpn := respWirePath(p.qpn)
			w.ents = append(w.ents, fmt.Sprintf("10%06x%06x%08x%04x%04x%x%06x%x%x%02x%089x", p.qpn, p.psn, p.pd, dlid, slid, sl, rqpn, vl<<3, mtuCode(p.mtu), p.rnr, 0))
			continue
		}
		if p.post {
			w.ents = append(w.ents, fmt.Sprintf("20%06x%04x%016x%08x%08x%086x", p.qpn, p.idx&0xffff, p.va, p.dlen, p.rkey, 0))
			continue
		}
		if r.IntN(3) == 0 {
			// A READ response for the requester.
			op := []ib.Opcode{ib.RDMAReadResponseFirst, ib.RDMAReadResponseMiddle, ib.RDMAReadResponseLast,
				ib.RDMAReadResponseOnly}[r.IntN(4)]
			n := 1 + r.IntN(600)
			if op == ib.RDMAReadResponseOnly && r.IntN(8) == 0 {
				n = 0
			}
			pay := make([]byte, n)
			for k := range pay {
				pay[k] = byte(r.Uint32())
			}
			w.rsps, w.rspOps = append(w.rsps, pay), append(w.rspOps, op)
			beat(&ib.Packet{Opcode: op, DLID: respWireLID, SLID: uint16(r.Uint32()), GRH: r.IntN(4) == 0,
				DestQP: r.Uint32() & 0xffffff, PSN: r.Uint32() & 0xffffff, AETH: ib.AETH{Syndrome: hca.SynACKNoLimit},
				PayloadLen: n, Payload: pay}, false)
		}
		if r.IntN(12) == 0 {
			// A request the responder does not take yet: dropped on not_req (SEND with invalidate,
			// ONLY or LAST without a payload, a UD SEND, with immediate or not). The last two stand
			// where CompareSwap and FetchAdd stood, with the same random draws, since hca_rx_ack
			// routes atomics to the responder.
			op := []ib.Opcode{ib.UDSendOnly, ib.SendLastInv, ib.SendOnlyInv, ib.UDSendOnlyImm}[r.IntN(4)]
			q := &ib.Packet{Opcode: op, DLID: respWireLID, GRH: r.IntN(4) == 0, DestQP: p.qpn, PSN: p.psn}
			if op == ib.UDSendOnly || op == ib.SendOnlyInv {
				q.PayloadLen = 1 + r.IntN(200)
				q.Payload = make([]byte, q.PayloadLen)
			}
			w.notReq++
			beat(q, false)
		}
		if run.atomics && r.IntN(16) == 0 {
			// An atomic whose PktLen is short of its AtomicETH (by 1..7 words, the ICRC resealed)
			// or leaves no room for its PadCnt's bytes: ib.ParseWire refuses it, hca_rx_ack drops
			// it on hdr_err, and the model never sees it.
			q := &ib.Packet{Opcode: ib.FetchAdd, DLID: respWireLID, GRH: r.IntN(2) == 0, DestQP: p.qpn, PSN: p.psn}
			b := ib.AppendWire(nil, q)
			if r.IntN(3) == 0 {
				bth := 8 // the BTH's offset
				if q.GRH {
					bth += 40
				}
				b[bth+1] |= byte(1+r.IntN(3)) << 4 // PadCnt 1..3, no payload for it
			} else {
				cut := 4 * (1 + r.IntN(7))
				n := len(b) - ib.VCRCBytes - 4 // the ICRC's offset
				b = append(b[:n-cut:n-cut], make([]byte, 4+ib.VCRCBytes)...)
				pl := (len(b) - ib.VCRCBytes) / 4 // PktLen: the words from the LRH through the ICRC
				b[4], b[5] = b[4]&0xF8|byte(pl>>8), byte(pl)
				if q.GRH {
					binary.BigEndian.PutUint16(b[12:], uint16(pl*4-48)) // GRH PayLen: the BTH through the ICRC
				}
			}
			resealWire(b, true)
			_, perr := ib.ParseWire(b)
			if perr == nil {
				panic("respWire: a malformed atomic ib.ParseWire takes")
			}
			w.bad++
			w.raw(b, false)
		}
		g := r.IntN(4) == 0
		if g {
			w.grh++
		}
		if p.op <= ib.SendOnlyImm || p.op == ib.RDMAWriteLastImm || p.op == ib.RDMAWriteOnlyImm {
			w.sends[respWireSendKind(p.op, g)]++
		}
		q := &ib.Packet{Opcode: p.op, DLID: respWireLID, SLID: uint16(r.Uint32()), GRH: g, DestQP: p.qpn, PSN: p.psn,
			AckReq: p.ackReq, RETH: ib.RETH{VA: p.va, RKey: p.rkey, Length: p.dlen}, Imm: p.imm, PayloadLen: len(p.pay), Payload: p.pay}
		if p.op == ib.CompareSwap || p.op == ib.FetchAdd {
			q.Atomic = ib.AtomicETH{VA: p.va, RKey: p.rkey, SwapAdd: p.swap, Compare: p.cmp}
			kind := respWireSendKind(p.op, g)
			if r.IntN(8) == 0 {
				// Bytes past the AtomicETH: ib.ParseWire takes them as a payload, the model's
				// responder ignores them, and so does hca_rx_ack.
				q.PayloadLen = 1 + r.IntN(40)
				q.Payload = make([]byte, q.PayloadLen)
				kind += " with bytes past it"
			}
			w.atoms[kind]++
		}
		beat(q, p.gap)
	}
	// The requester's packets (opaque here: a VL in LRH.VL, BTH opcode 0x04,
	// 1..3 beats of random bytes) for the transmit port hca_ack_tx shares.
	for range steps {
		b := make([]byte, (1+r.IntN(3))*BlockBytes)
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		b[0] = byte(r.IntN(2)) << 4
		b[8] = 0x04
		w.sq = append(w.sq, b)
	}
	// The stand-in's key checks: regions of every PD, in and out of bounds,
	// in the right PD or another, stale keys.
	for range 400 {
		mr := run.regions[r.IntN(len(run.regions))]
		k := respWireKey{key: mr.RKey, pd: run.pds[r.IntN(3)], addr: mr.Addr + uint64(r.IntN(int(mr.Length))), n: uint64(r.IntN(4096))}
		if r.IntN(2) == 0 {
			k.pd = mr.PD
		}
		if r.IntN(8) == 0 {
			k.key ^= uint32(1 + r.IntN(255))
		}
		k.want = run.table.CheckRemote(k.key, k.pd, 0, hca.AccessRemoteWrite, k.addr, k.n)
		w.keys = append(w.keys, k)
	}
	return w
}

// raw appends packet b (its bytes through the VCRC) to the rx stream as
// 64-byte beats; gap: nothing comes after it until the responder is idle.
func (w *respWire) raw(b []byte, gap bool) {
	n := (len(b) + BlockBytes - 1) / BlockBytes
	buf := make([]byte, n*BlockBytes)
	copy(buf, b)
	for i := range n {
		flags := 0
		if i == 0 {
			flags |= 2
		}
		if i == n-1 {
			flags |= 1
			if gap {
				flags |= 4
			}
		}
		w.ents = append(w.ents, fmt.Sprintf("0%x%x", flags, buf[i*BlockBytes:(i+1)*BlockBytes]))
	}
}

// write puts rx.hex, kreq.hex and mpt.hex into dir.
func (w *respWire) write(t *testing.T, dir string) {
	t.Helper()
	var kb strings.Builder
	for _, k := range w.keys {
		fmt.Fprintf(&kb, "%016x%016x%016x%016x\n", uint64(2)<<32|uint64(k.key), uint64(k.pd)<<32, k.addr, k.n)
	}
	var sb strings.Builder
	for _, b := range w.sq {
		for i := 0; i < len(b); i += BlockBytes {
			flags := 0
			if i == 0 {
				flags |= 2
			}
			if i+BlockBytes == len(b) {
				flags |= 1
			}
			fmt.Fprintf(&sb, "%x%x%x\n", b[0]>>4, flags, b[i:i+BlockBytes])
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sq.hex"), []byte(sb.String()), 0o644))
	var qb strings.Builder
	for _, q := range w.rdq {
		fmt.Fprintf(&qb, "%016x%016x\n", q[0], q[1])
	}
	if qb.Len() == 0 {
		qb.WriteString("0\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rdq.hex"), []byte(qb.String()), 0o644))
	w.run.write(t, dir) // mpt.hex (and the block run's files, unused)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rx.hex"), []byte(strings.Join(w.ents, "\n")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kreq.hex"), []byte(kb.String()), 0o644))
}

// respWireTB: hca_rx_ack, hca_responder (QPN_W 2, ACK_COALESCE 1),
// hca_share_arb and hca_key_check (no cache) wired as in hca_transport, the
// requester a stand-in (above). rx.hex entries: [519:516] 0 a beat
// ([514] the last beat of a gap packet, [513] sop, [512] eop, [511:0] its
// bytes), 1 a context write for the responder ([511:488] QPN, [487:464]
// PSN, [463:432] PD, [360:356] min_rnr_timer), 2 a receive WQE posted
// ([511:488] QPN, [487:472] index, [471:408] address, [407:376] length,
// [375:344] L_Key) into the receive queue stand-in (64 WQEs a context,
// emptied by a context write; it answers rw_* after 0..3 cycles), taken
// only when the packets before it are through hca_rx_ack and the responder
// is idle (so after the packet before it took its WQE), as respTB's. After
// a gap packet nothing more comes until the responder is idle with no
// header waiting. rx_valid, wr_ready, the ACK
// ready, the MPT and the stand-in's readies are random. Log: W client addr
// len be data (each wr0 beat), A qpn psn syn msn (the responder's ACKs),
// R op len blk (each READ response the stand-in takes), K index result
// (its key checks), V qpn opcode status index len imm (each receive
// completion taken on rc_*, rc_ready random), C counters, DONE cycles.
const respWireTB = "`timescale 1ns/1ps\n" + `
module tb;
    parameter integer SEED = 1;
    parameter integer RD_RES = 16;
    // Atomics' memory: [ABASE, ABASE + 512), respMemByte's pattern until written on wr0 (by any
    // client); rd1 answers from it there.
    parameter [63:0] ABASE = 64'h0;
    reg [7:0] amem [0:511];
    integer ak;
    reg clk = 1'b0, rst_n = 1'b0;
    always #1 clk = ~clk;
    reg [519:0] ent [0:65535];
    reg [127:0] rdq [0:1023];
    // Host memory in the READ regions (respMemByte): each byte from its address.
    function [511:0] pat;
        input [63:0] a;
        integer k;
        reg [63:0] x;
        begin
            for (k = 0; k < 64; k = k + 1) begin
                x = a + k;
                pat[511-8*k -: 8] = x[7:0] ^ x[15:8] ^ x[23:16] ^ x[31:24] ^ 8'hA5;
            end
        end
    endfunction
    // A block as host memory holds it: the atomic memory where it lies, the pattern elsewhere.
    function [511:0] hostblk;
        input [63:0] a;
        integer k;
        reg [511:0] p;
        begin
            p = pat(a);
            for (k = 0; k < 64; k = k + 1)
                if (a + k >= ABASE && a + k < ABASE + 512) p[511-8*k -: 8] = amem[a + k - ABASE];
            hostblk = p;
        end
    endfunction
    reg [519:0] sq [0:1023];
    reg [255:0] kreq [0:1023];
    reg [255:0] mpt [0:63];
    integer ne, nk, ns, ei, ki, rk, si, cyc, idle, hold, seed, lat, stall, perr;
    reg rnd_rx, rnd_wr, rnd_mpt, rnd_ra, rnd_k, rnd_kr, rnd_pick, rnd_vl, rnd_tx, rnd_c0, rnd_c1, rnd_s, rnd_s16;
    reg rnd_dq, rnd_dr, rnd_q;
    wire at_busy;
    wire [519:0] e = ent[ei];
    wire more = ei < ne;
    wire is_cfg = e[519:516] == 4'd1;
    wire is_post = e[519:516] == 4'd2;
    // ---- hca_rx_ack ----
    wire rx_valid = more && !is_cfg && !is_post && hold == 0 && rnd_rx;
    wire rx_ready;
    wire ack_valid, ack_ready;
    wire [23:0] ack_qpn, ack_psn;
    wire [7:0] ack_syn, ack_op;
    wire [12:0] ack_len;
    wire [63:0] ack_orig;
    wire [6:0] ack_blk;
    wire rq_valid, rq_ready, rq_ackreq, pd_valid, pd_pop, rpd_valid, rpd_pop;
    wire [23:0] rq_qpn, rq_psn;
    wire [7:0] rq_op;
    wire [63:0] rq_va;
    wire [31:0] rq_rkey, rq_dlen, rq_imm;
    wire [63:0] rq_swap, rq_cmp;
    wire [12:0] rq_len;
    wire [511:0] pd_data;
    wire [15:0] x_nak, x_rsp, x_notreq, x_icrc, x_hdr, x_pkey, x_mc;
    hca_rx_ack rx (
        .clk(clk), .rst_n(rst_n), .port_lid(16'h0123), .port_lmc(3'd0),
        .pkey_cfg_valid(1'b0), .pkey_cfg_index(16'd0), .pkey_cfg_key(16'd0),
        .rx_valid(rx_valid), .rx_ready(rx_ready), .rx_data(e[511:0]), .rx_sop(e[513]), .rx_eop(e[512]),
        .ack_valid(ack_valid), .ack_ready(ack_ready), .ack_qpn(ack_qpn), .ack_psn(ack_psn), .ack_syn(ack_syn),
        .ack_op(ack_op), .ack_len(ack_len), .ack_orig(ack_orig), .ack_blk(ack_blk),
        .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_qpn(rq_qpn), .rq_psn(rq_psn), .rq_op(rq_op),
        .rq_ackreq(rq_ackreq), .rq_va(rq_va), .rq_rkey(rq_rkey), .rq_dlen(rq_dlen), .rq_len(rq_len), .rq_imm(rq_imm),
        .rq_swap(rq_swap), .rq_cmp(rq_cmp),
        .pd_valid(pd_valid), .pd_data(pd_data), .pd_pop(pd_pop), .rpd_valid(rpd_valid), .rpd_pop(rpd_pop),
        .nak_retry(x_nak), .rsp_todo(x_rsp), .not_req(x_notreq), .icrc_err(x_icrc), .hdr_err(x_hdr),
        .pkey_viol(x_pkey), .mcast_drop(x_mc));
    // ---- the responder ----
    // A context write waits while an ACK waits in the responder's register (hca_transport's cfg_free).
    wire cfg_valid = more && is_cfg && hold == 0 && !r_ack_valid && !at_busy;
    wire cfg_ready;
    wire b_kc_req_valid, b_kc_req_ready, b_kc_rsp_valid, b_kc_rsp_ready;
    wire [31:0] b_kc_req_key, b_kc_req_pd;
    wire [3:0] b_kc_req_need;
    wire [63:0] b_kc_req_addr, b_kc_req_len;
    wire b_wr_valid, b_wr_ready;
    wire [63:0] b_wr_addr, b_wr_be;
    wire [15:0] b_wr_len;
    wire [511:0] b_wr_data;
    wire r_ack_valid, r_ack_ready;
    wire [23:0] r_ack_qpn, r_ack_psn, r_ack_msn;
    wire [7:0] r_ack_syn;
    wire [15:0] c_acks, c_naks, c_dup, c_seq, c_err, c_noqp, c_todo;
    wire [2:0] kc_rsp_result;
    wire r_ack_read, r_ack_mid, r_ack_atomic;
    wire [63:0] r_ack_va, r_ack_orig;
    wire c_rd_valid, c_rd_ready, c_rd_rsp;
    wire [63:0] c_rd_addr;
    wire [15:0] c_rd_len;
    wire [31:0] r_ack_len;
    wire [2:0] r_ack_mtu;
    // The receive queues' stand-in: {index, address, length, L_Key} per WQE, 64 a context.
    reg p_idle;
    integer rqi;
` + rqStandInDecl + `    // A post waits until the packets before it are through hca_rx_ack and the responder is idle,
    // two cycles running.
    wire post_idle = !rx.c_valid && !rq_valid && rq_ready && !rw_busy;
    wire post_take = more && is_post && hold == 0 && post_idle && p_idle;
    wire [7:0] r_ack_res, f_res;
    wire [23:0] r_ack_last, f_qpn, f_psn;
    wire f_valid;
    hca_responder #(.QPN_W(2), .ACK_COALESCE(1), .RD_RES(RD_RES)) resp (
        .clk(clk), .rst_n(rst_n),
        .cfg_valid(cfg_valid), .cfg_ready(cfg_ready), .cfg_qpn(e[511:488]), .cfg_psn(e[487:464]), .cfg_pd(e[463:432]),
        .cfg_mtu(e[366:364]), .cfg_rnr(e[360:356]),
        .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_qpn(rq_qpn), .rq_psn(rq_psn), .rq_op(rq_op),
        .rq_ackreq(rq_ackreq), .rq_va(rq_va), .rq_rkey(rq_rkey), .rq_dlen(rq_dlen), .rq_len(rq_len),
        .rq_imm(rq_imm), .rq_swap(rq_swap), .rq_cmp(rq_cmp),
        .rd_req_valid(c_rd_valid), .rd_req_ready(c_rd_ready), .rd_req_addr(c_rd_addr), .rd_req_len(c_rd_len),
        .rd_rsp_valid(c_rd_rsp), .rd_rsp_data(rd_data),
        .rw_req_valid(rw_req_valid), .rw_req_ready(!rw_busy), .rw_req_qpn(rw_req_qpn), .rw_rsp_valid(rw_rsp_valid),
        .rw_rsp_ready(rw_rsp_ready), .rw_rsp_ok(rw_ok), .rw_rsp_index(rw_w[143:128]), .rw_rsp_addr(rw_w[127:64]),
        .rw_rsp_len(rw_w[63:32]), .rw_rsp_lkey(rw_w[31:0]), .rw_rsp_nsge(rw_n),
        .rw_sge_valid(rw_sge_valid), .rw_sge_q(rw_sge_q), .rw_sge_index(rw_sge_index), .rw_sge_k(rw_sge_k),
        .rw_sge_addr(rw_e[63:0]), .rw_sge_len(rw_e[127:96]), .rw_sge_lkey(rw_e[95:64]),
        .rw_req_flush(rw_req_flush), .rw_flush(rw_flush), .qp_err(qp_err), .req_err(4'd0),
        .rc_valid(rc_valid), .rc_ready(rnd_rc), .rc_qpn(rc_qpn), .rc_opcode(rc_opcode), .rc_status(rc_status),
        .rc_index(rc_index), .rc_len(rc_len), .rc_imm(rc_imm),
        .pd_valid(rpd_valid), .pd_data(pd_data), .pd_ready(rpd_pop),
        .kc_req_valid(b_kc_req_valid), .kc_req_ready(b_kc_req_ready), .kc_req_key(b_kc_req_key), .kc_req_pd(b_kc_req_pd),
        .kc_req_need(b_kc_req_need), .kc_req_addr(b_kc_req_addr), .kc_req_len(b_kc_req_len),
        .kc_rsp_valid(b_kc_rsp_valid), .kc_rsp_ready(b_kc_rsp_ready), .kc_rsp_result(kc_rsp_result),
        .wr_valid(b_wr_valid), .wr_addr(b_wr_addr), .wr_len(b_wr_len), .wr_data(b_wr_data), .wr_be(b_wr_be), .wr_ready(b_wr_ready),
        .ack_valid(r_ack_valid), .ack_ready(r_ack_ready), .ack_qpn(r_ack_qpn), .ack_psn(r_ack_psn), .ack_syn(r_ack_syn), .ack_msn(r_ack_msn),
        .ack_read(r_ack_read), .ack_va(r_ack_va), .ack_len(r_ack_len), .ack_mtu(r_ack_mtu), .ack_mid(r_ack_mid), .ack_atomic(r_ack_atomic), .ack_orig(r_ack_orig),
        .ack_res(r_ack_res), .ack_last(r_ack_last), .fin_valid(f_valid), .fin_qpn(f_qpn), .fin_res(f_res), .fin_psn(f_psn),
        .cnt_acks(c_acks), .cnt_naks(c_naks), .cnt_dup(c_dup), .cnt_seq_drop(c_seq), .cnt_err_drop(c_err),
        .cnt_no_qp(c_noqp), .cnt_todo(c_todo));
    // ---- the requester's stand-in: READ responses to wr0, key checks ----
    reg r_busy;
    reg [6:0] r_left, r_blk;
    reg [12:0] r_n;
    reg [63:0] r_addr;
    assign ack_ready = !r_busy && rnd_ra;
    wire [12:0] r_lastn = r_n - {r_blk - 7'd1, 6'd0};   // bytes in the last block, 1..64
    wire a_wr_valid = r_busy && pd_valid;
    wire a_wr_ready;
    wire [63:0] a_wr_be = r_left == 7'd1 ? ({64{1'b1}} << (7'd64 - r_lastn[6:0])) : {64{1'b1}};
    assign pd_pop = a_wr_valid && a_wr_ready;
    reg ka_valid, ka_wait;
    wire [255:0] kq = kreq[ki];
    wire a_kc_req_ready, a_kc_rsp_valid;
    wire a_kc_rsp_ready = ka_wait && rnd_kr;
    // ---- the arbiters and the shared units ----
    wire kc_req_valid, kc_req_ready, kc_rsp_valid, kc_rsp_ready;
    wire [31:0] kc_req_key, kc_req_pd;
    wire [3:0] kc_req_need;
    wire [63:0] kc_req_addr, kc_req_len;
    wire wr_valid;
    wire [63:0] wr_addr, wr_be;
    wire [15:0] wr_len;
    wire [511:0] wr_data;
    integer qi, nq, qo_n, qo_w, qo_r, qo_i, qerr, qblk;
    // ---- DMA client rd1: requests queued (random ready), answered in order, one block a beat at
    // random, each block host memory's pattern at its address ----
    wire rd_valid, b_rd_valid, b_rd_ready, b_rd_rsp, qa_ready, qa_rsp;
    wire [63:0] rd_addr, b_rd_addr;
    wire [15:0] rd_len, b_rd_len;
    reg  [63:0] dq_addr [0:31];
    reg  [10:0] dq_blk [0:31];
    integer dq_n, dq_w, dq_r, dq_i;
    wire rd_ready = rnd_dq && dq_n < 32;
    wire rd_rsp = dq_n > 0 && rnd_dr;
    wire [511:0] rd_data = hostblk(dq_addr[dq_r % 32] + 64 * dq_i);
    // The requester's stand-in reads (rdq.hex: [127:64] address, [15:0] length), checked block by block.
    wire [127:0] qe = rdq[qi];
    wire qa_valid = qi < nq && rnd_q && qo_n < 32;
    reg  [63:0] qo_addr [0:31];
    reg  [10:0] qo_blk [0:31];
    hca_share_arb arb (
        .clk(clk), .rst_n(rst_n),
        .a_kc_req_valid(ka_valid), .a_kc_req_ready(a_kc_req_ready), .a_kc_req_key(kq[223:192]),
        .a_kc_req_pd(kq[191:160]), .a_kc_req_need(kq[227:224]), .a_kc_req_addr(kq[127:64]),
        .a_kc_req_len(kq[63:0]), .a_kc_rsp_valid(a_kc_rsp_valid), .a_kc_rsp_ready(a_kc_rsp_ready),
        .b_kc_req_valid(b_kc_req_valid), .b_kc_req_ready(b_kc_req_ready), .b_kc_req_key(b_kc_req_key),
        .b_kc_req_pd(b_kc_req_pd), .b_kc_req_need(b_kc_req_need), .b_kc_req_addr(b_kc_req_addr),
        .b_kc_req_len(b_kc_req_len), .b_kc_rsp_valid(b_kc_rsp_valid), .b_kc_rsp_ready(b_kc_rsp_ready),
        .kc_req_valid(kc_req_valid), .kc_req_ready(kc_req_ready), .kc_req_key(kc_req_key), .kc_req_pd(kc_req_pd),
        .kc_req_need(kc_req_need), .kc_req_addr(kc_req_addr), .kc_req_len(kc_req_len),
        .kc_rsp_valid(kc_rsp_valid), .kc_rsp_ready(kc_rsp_ready),
        .a_wr_valid(a_wr_valid), .a_wr_ready(a_wr_ready), .a_wr_addr(r_addr), .a_wr_len({3'd0, r_blk, 6'd0}),
        .a_wr_data(pd_data), .a_wr_be(a_wr_be),
        .b_wr_valid(b_wr_valid), .b_wr_ready(b_wr_ready), .b_wr_addr(b_wr_addr), .b_wr_len(b_wr_len),
        .b_wr_data(b_wr_data), .b_wr_be(b_wr_be),
        .wr_valid(wr_valid), .wr_ready(rnd_wr), .wr_addr(wr_addr), .wr_len(wr_len), .wr_data(wr_data), .wr_be(wr_be),
        .a_rd_req_valid(qa_valid), .a_rd_req_ready(qa_ready), .a_rd_req_addr(qe[127:64]), .a_rd_req_len(qe[15:0]),
        .a_rd_rsp_valid(qa_rsp),
        .b_rd_req_valid(b_rd_valid), .b_rd_req_ready(b_rd_ready), .b_rd_req_addr(b_rd_addr), .b_rd_req_len(b_rd_len),
        .b_rd_rsp_valid(b_rd_rsp),
        .c_rd_req_valid(c_rd_valid), .c_rd_req_ready(c_rd_ready), .c_rd_req_addr(c_rd_addr), .c_rd_req_len(c_rd_len),
        .c_rd_rsp_valid(c_rd_rsp),
        .rd_req_valid(rd_valid), .rd_req_ready(rd_ready), .rd_req_addr(rd_addr), .rd_req_len(rd_len), .rd_rsp_valid(rd_rsp));
    // ---- the transmit port: hca_ack_tx between the responder's ACKs, the requester's stand-in
    // (sq.hex: [519:516] VL, [513] sop, [512] eop, [511:0] a beat) and the port (random credits,
    // picks and ready) ----
    wire [519:0] sb = sq[si];
    reg  s_send;
    // Its head offered one cycle in two while an ACK waits in hca_ack_tx, one in sixteen else, so
    // that both often offer at once (the stimulus looks at the ACK; the block does not).
    wire [1:0] r_vl_waiting = (si < ns && !s_send && sb[513] && (ack.q_pkts != 8'd0 ? rnd_s : rnd_s16)) ?
                              (sb[516] ? 2'b10 : 2'b01) : 2'b00;
    wire r_pick_valid, r_tx_ready;
    wire r_pick_taken = r_vl_waiting != 2'b00 && r_pick_valid && tx_pick_vl == sb[516];
    wire r_tx_valid = si < ns && (s_send || r_pick_taken);
    wire [1:0] tx_vl_waiting;
    wire [23:0] tx_vl_credit = {rnd_c1 ? 12'd1000 : 12'd0, rnd_c0 ? 12'd1000 : 12'd0};
    wire tx_pick_valid = tx_vl_waiting != 2'b00 && rnd_pick;
    wire tx_pick_vl = tx_vl_waiting[0] ? (tx_vl_waiting[1] && rnd_vl) : 1'b1;
    wire tx_pick_taken, tx_valid, tx_sop, tx_eop, tx_vl;
    wire [511:0] tx_data;
    hca_ack_tx #(.QPN_W(2), .VLS(2), .VL_W(1)) ack (
        .clk(clk), .rst_n(rst_n),
        .cfg_valid(cfg_valid && cfg_ready), .cfg_qpn(e[511:488]), .cfg_dlid(e[431:416]), .cfg_slid(e[415:400]),
        .cfg_sl(e[399:396]), .cfg_vl(e[371]), .cfg_rqpn(e[395:372]), .busy(at_busy),
        .ack_valid(r_ack_valid), .ack_ready(r_ack_ready), .ack_qpn(r_ack_qpn), .ack_psn(r_ack_psn),
        .ack_syn(r_ack_syn), .ack_msn(r_ack_msn), .ack_read(r_ack_read), .ack_va(r_ack_va), .ack_len(r_ack_len),
        .ack_mtu(r_ack_mtu), .ack_mid(r_ack_mid), .ack_atomic(r_ack_atomic), .ack_orig(r_ack_orig),
        .ack_res(r_ack_res), .ack_last(r_ack_last), .fin_valid(f_valid), .fin_qpn(f_qpn), .fin_res(f_res), .fin_psn(f_psn),
        .rd_req_valid(b_rd_valid), .rd_req_ready(b_rd_ready), .rd_req_addr(b_rd_addr), .rd_req_len(b_rd_len),
        .rd_rsp_valid(b_rd_rsp), .rd_rsp_data(rd_data),
        .r_vl_waiting(r_vl_waiting), .r_pick_valid(r_pick_valid), .r_pick_taken(r_pick_taken),
        .r_tx_valid(r_tx_valid), .r_tx_data(sb[511:0]), .r_tx_sop(sb[513]), .r_tx_eop(sb[512]), .r_tx_vl(sb[516]),
        .r_tx_ready(r_tx_ready),
        .tx_vl_waiting(tx_vl_waiting), .tx_vl_credit(tx_vl_credit), .tx_pick_valid(tx_pick_valid),
        .tx_pick_vl(tx_pick_vl), .tx_pick_taken(tx_pick_taken),
        .tx_valid(tx_valid), .tx_data(tx_data), .tx_sop(tx_sop), .tx_eop(tx_eop), .tx_vl(tx_vl), .tx_ready(rnd_tx));
    wire mpt_req_valid;
    wire [23:0] mpt_req_index;
    reg  mpt_busy;
    reg  [23:0] mpt_ix;
    wire mpt_rsp_valid = mpt_busy && lat == 0;
    hca_key_check #(.TAG_W(1), .CACHE_ENTRIES(0)) kc (
        .clk(clk), .rst_n(rst_n), .req_valid(kc_req_valid), .req_ready(kc_req_ready), .req_key(kc_req_key),
        .req_pd(kc_req_pd), .req_need(kc_req_need), .req_addr(kc_req_addr), .req_len(kc_req_len), .req_tag(1'b0),
        .mpt_req_valid(mpt_req_valid), .mpt_req_ready(rnd_mpt && !mpt_busy), .mpt_req_index(mpt_req_index),
        .mpt_rsp_valid(mpt_rsp_valid), .mpt_rsp_entry(mpt_ix < 24'd64 ? mpt[mpt_ix[5:0]] : 256'd0),
        .rsp_valid(kc_rsp_valid), .rsp_ready(kc_rsp_ready), .rsp_result(kc_rsp_result), .rsp_tag());
    initial begin
        if (!$value$plusargs("ne=%d", ne)) ne = 0;
        if (!$value$plusargs("nk=%d", nk)) nk = 0;
        if (!$value$plusargs("ns=%d", ns)) ns = 0;
        if (!$value$plusargs("nq=%d", nq)) nq = 0;
        $readmemh("rdq.hex", rdq);
        dq_n = 0; dq_w = 0; dq_r = 0; dq_i = 0; qi = 0; qo_n = 0; qo_w = 0; qo_r = 0; qo_i = 0; qerr = 0; qblk = 0;
        rnd_dq = 1'b0; rnd_dr = 1'b0; rnd_q = 1'b0;
        seed = SEED;
        $readmemh("rx.hex", ent);
        $readmemh("kreq.hex", kreq);
        $readmemh("sq.hex", sq);
        $readmemh("mpt.hex", mpt);
        for (ak = 0; ak < 512; ak = ak + 1)
            amem[ak] = (ABASE[7:0] + ak[7:0]) ^ ((ABASE[15:0] + ak[15:0]) >> 8) ^ ((ABASE[23:0] + ak[23:0]) >> 16) ^
                       ((ABASE[31:0] + ak[31:0]) >> 24) ^ 8'hA5;
        ei = 0; ki = 0; rk = 0; si = 0; cyc = 0; stall = 0; perr = 0; s_send = 1'b0; idle = 0; hold = 0; lat = 0; mpt_busy = 1'b0;
        rnd_rx = 1'b0; rnd_wr = 1'b0; rnd_mpt = 1'b0; rnd_ra = 1'b0; rnd_k = 1'b0; rnd_kr = 1'b0;
        rnd_pick = 1'b0; rnd_vl = 1'b0; rnd_tx = 1'b0; rnd_c0 = 1'b0; rnd_c1 = 1'b0; rnd_s = 1'b0; rnd_s16 = 1'b0;
        r_busy = 1'b0; ka_valid = 1'b0; ka_wait = 1'b0;
        rnd_rc = 1'b0; rw_busy = 1'b0; rw_lat = 0; rw_slot = 2'd0; p_idle = 1'b0;
        for (rqi = 0; rqi < 4; rqi = rqi + 1) begin rq_head[rqi] = 7'd0; rq_tail[rqi] = 7'd0; end
        repeat (4) @(posedge clk);
        rst_n <= 1'b1;
    end
    always @(posedge clk) if (rst_n) begin
        cyc <= cyc + 1;
        rnd_rx  <= ($random(seed) & 7) != 0;
        rnd_wr  <= ($random(seed) & 3) != 0;
        rnd_pick <= ($random(seed) & 3) == 0;
        rnd_vl  <= ($random(seed) & 1) != 0;
        rnd_tx  <= ($random(seed) & 3) != 0;
        rnd_c0  <= ($random(seed) & 7) != 0;
        rnd_c1  <= ($random(seed) & 7) != 0;
        rnd_s   <= ($random(seed) & 1) != 0;
        rnd_s16 <= ($random(seed) & 15) == 0;
        rnd_dq  <= ($random(seed) & 3) != 0;
        rnd_dr  <= ($random(seed) & 3) != 0;
        rnd_q   <= ($random(seed) & 15) == 0;
        // rd1: each request taken (D client address length), each block answered in order.
        if (rd_valid && rd_ready) begin
            $display("D %0d %h %h", arb.u_rd1.r_pick ? (arb.u_rd1_resp.r_pick ? 2 : 1) : 0, rd_addr, rd_len);
            // the blocks the read's bytes lie in (hca_dma_engine's reads are bytes)
            dq_addr[dq_w % 32] = {rd_addr[63:6], 6'd0};
            dq_blk[dq_w % 32] = ({1'b0, rd_len == 16'd0, rd_len} + {12'd0, rd_addr[5:0]} + 18'd63) >> 6;
            dq_w = dq_w + 1;
        end
        if (rd_rsp) begin
            if (dq_i + 1 == dq_blk[dq_r % 32]) begin dq_i = 0; dq_r = dq_r + 1; end
            else dq_i = dq_i + 1;
        end
        dq_n = dq_w - dq_r;
        // The requester's stand-in: its reads issued, each block it gets compared with the pattern.
        if (qa_valid && qa_ready) begin
            qo_addr[qo_w % 32] = {qe[127:70], 6'd0};
            qo_blk[qo_w % 32] = ({12'd0, qe[69:64]} + {2'd0, qe[15:0]} + 18'd63) >> 6; // the blocks its bytes lie in
            qo_w = qo_w + 1;
            qi <= qi + 1;
        end
        if (qa_rsp) begin
            qblk = qblk + 1;
            if (rd_data != pat(qo_addr[qo_r % 32] + 64 * qo_i)) qerr = qerr + 1;
            if (qo_i + 1 == qo_blk[qo_r % 32]) begin qo_i = 0; qo_r = qo_r + 1; end
            else qo_i = qo_i + 1;
        end
        qo_n = qo_w - qo_r;
        rnd_mpt <= ($random(seed) & 1) != 0;
        rnd_ra  <= ($random(seed) & 3) != 0;
        rnd_k   <= ($random(seed) & 7) == 0;
        rnd_kr  <= ($random(seed) & 1) != 0;
        if (cfg_valid && cfg_ready) begin
            ei <= ei + 1;
            rq_head[e[489:488]] <= rq_tail[e[489:488]];
        end
        rnd_rc <= ($random(seed) & 1) != 0;
        p_idle <= post_idle;
        if (post_take) begin
            ei <= ei + 1;
            rqm[{e[489:488], rq_tail[e[489:488]][5:0]}] <= e[487:344];
            // One element, or mlx5's empty list (0 bytes, MLX5_INVALID_LKEY): hca_rq's decode at a
            // stride of one segment.
            rqn[{e[489:488], rq_tail[e[489:488]][5:0]}] <= (e[407:376] == 32'd0 && e[375:344] == 32'h100) ? 6'd0 : 6'd1;
            rq_tail[e[489:488]] <= rq_tail[e[489:488]] + 7'd1;
        end
` + rqStandInStep + `        if (rc_valid && rnd_rc) $display("V %h %h %h %h %h %h", rc_qpn, rc_opcode, rc_status, rc_index, rc_len, rc_imm);
        if (rx_valid && rx_ready) begin
            ei <= ei + 1;
            if (e[514]) hold <= -1;
        end
        // After a gap packet: its header through hca_rx_ack and taken, the responder idle again.
        if (hold == -1 && !rx.c_valid && !rq_valid && rq_ready) hold <= 1 + (($random(seed) & 32'h7fffffff) % 4);
        else if (hold > 0) hold <= hold - 1;
        if (mpt_req_valid && rnd_mpt && !mpt_busy) begin
            mpt_busy <= 1'b1; mpt_ix <= mpt_req_index; lat <= ($random(seed) & 32'h7fffffff) % 4;
        end else if (mpt_busy && lat == 0) mpt_busy <= 1'b0;
        else if (mpt_busy) lat <= lat - 1;
        // The stand-in: a READ response's blocks as one write at RA + k x 8192.
        if (ack_valid && ack_ready) begin
            $display("R %h %0d %0d", ack_op, ack_len, ack_blk);
            r_addr <= 64'h7F0000000000 + {37'd0, rk[13:0], 13'd0};
            rk <= rk + 1;
            r_blk <= ack_blk; r_left <= ack_blk; r_n <= ack_len;
            r_busy <= ack_blk != 7'd0;
        end
        if (pd_pop) begin
            r_left <= r_left - 7'd1;
            if (r_left == 7'd1) r_busy <= 1'b0;
        end
        // Its key checks: one at a time, held until taken, the response taken at random.
        if (!ka_valid && !ka_wait && ki < nk && rnd_k) ka_valid <= 1'b1;
        if (ka_valid && a_kc_req_ready) begin ka_valid <= 1'b0; ka_wait <= 1'b1; end
        if (a_kc_rsp_valid && a_kc_rsp_ready) begin
            $display("K %0d %0d", ki, kc_rsp_result);
            ki <= ki + 1; ka_wait <= 1'b0;
        end
        if (wr_valid && rnd_wr) $display("W %0d %h %h %h %h", b_wr_ready, wr_addr, wr_len, wr_be, wr_data);
        if (wr_valid && rnd_wr)
            for (ak = 0; ak < 64; ak = ak + 1)
                if (wr_be[63-ak] && {wr_addr[63:6], 6'd0} + ak >= ABASE && {wr_addr[63:6], 6'd0} + ak < ABASE + 512)
                    amem[{wr_addr[63:6], 6'd0} + ak - ABASE] <= wr_data[511-8*ak -: 8];
        if (r_ack_valid && r_ack_ready) $display("A %h %h %h %h %h %h %h", r_ack_qpn, r_ack_psn, r_ack_syn, r_ack_msn,
                                                 {r_ack_atomic, r_ack_mid, r_ack_read}, r_ack_read ? r_ack_va : r_ack_atomic ? r_ack_orig : 64'd0,
                                                 r_ack_read ? r_ack_len : 32'd0);
        // The requester's stand-in: its head offered on its VL, sent whole once committed.
        if (r_tx_valid && r_tx_ready) begin
            si <= si + 1;
            s_send <= !sb[512];
        end else if (r_pick_taken) s_send <= 1'b1;
        // The port: each beat taken, and each pick: its VL, whether the ACK and the requester
        // offered it, and who took it (1: the ACK). An ACK sent on a VL without credits is an error.
        if (tx_valid && rnd_tx) $display("T %0d %0d %0d %h", tx_vl, tx_sop, tx_eop, tx_data);
        if (tx_pick_taken) begin
            $display("P %0d %0d %0d %0d", tx_pick_vl, ack.a_offer && ack.head_vl == tx_pick_vl, r_vl_waiting[tx_pick_vl], ack.a_commit);
            if (ack.a_commit && tx_vl_credit[tx_pick_vl*12 +: 12] < ack.head_blks) perr = perr + 1;
        end
        // hca_ack_tx's fin_* (a READ reply's last response given back to the responder): whether
        // the port took a responder packet in this cycle (the fin is that pick's, logged above), the
        // QPN, the resource, the PSN.
        if (f_valid) $display("F %0d %h %h %h", tx_pick_taken && ack.a_commit, f_qpn, f_res, f_psn);
        idle <= (!more && rq_ready && !rq_valid && !rx.c_valid && !ack_valid && !r_busy && !r_ack_valid && !rc_valid &&
                 ki == nk && !at_busy && ack.q_count == 8'd0 && si == ns && qi == nq && qo_n == 0 && dq_n == 0) ? idle + 1 : 0;
        if (idle == 8) begin
            $display("C %0d %0d %0d %0d %0d %0d %0d %0d %0d %0d %0d", c_acks, c_naks, c_dup, c_seq, c_err, c_noqp, c_todo,
                     x_notreq, x_icrc + x_hdr + x_pkey + x_mc, x_rsp, x_nak);
            $display("PERR %0d", perr);
            $display("Q %0d %0d", qblk, qerr);
            $display("DONE %0d", cyc);
            $finish;
        end
        // A watchdog: 20000 cycles without a beat taken on rx_* or wr0, an ACK or a key check answered.
        stall <= ((rx_valid && rx_ready) || post_take || (wr_valid && rnd_wr) || (tx_valid && rnd_tx) || a_kc_rsp_valid || rd_rsp) ? 0 : stall + 1;
        if (stall > 20000) begin
            $display("TIMEOUT at entry %0d of %0d, key check %0d of %0d", ei, ne, ki, nk);
            $finish;
        end
    end
endmodule
`

// respWireFiles are the sources besides tb.v.
var respWireFiles = []string{"hca_rx_ack.v", "ib_icrc.v", "sync_fifo.v", "hca_responder.v", "hca_share_arb.v", "hca_rd_merge.v", "hca_ack_tx.v", "hca_tx_assemble.v",
	"onehot_encode.v", "hca_key_check.v"}

// respWireResult is the testbench's log, read back.
type respWireResult struct {
	resp     respResult      // the responder's writes, ACKs, counters
	rmem     map[uint64]byte // the stand-in's writes
	rsps     [][3]int        // R: opcode, length, blocks
	keys     []int           // K: results in order
	notReq   int
	bad      int // hca_rx_ack's drops as malformed
	other    int // rsp_todo + nak_retry: none expected
	contract []string
	tx       []respWireBeat // the beats on tx_*
	picks    [][4]int       // P: VL, the ACK offered it, the requester offered it, the ACK took it
	perr     int            // ACKs sent on a VL without credits
	fins     []respWireFin  // F: hca_ack_tx's fin_*, in order
	reads    [][3]uint64    // D: rd1 requests taken: client (1 the responder), address, length
	qblk     int            // blocks the requester's stand-in got through rd1
	qerr     int            // of them, not host memory's bytes at their address
}

// respWireFin is one fin_* of hca_ack_tx: the responder's pick it came
// with (k: the port's k-th pick of a responder packet, from 0; -1 none in
// its cycle), the QPN, the resource and the PSN it names.
type respWireFin struct {
	pick     int
	qpn, psn uint32
	res      int
}

// respWireBeat is one beat taken on tx_*.
type respWireBeat struct {
	vl       int
	sop, eop bool
	data     []byte
}

// sqBeats is the requester's beats in sq.hex.
func (w *respWire) sqBeats() int {
	n := 0
	for _, b := range w.sq {
		n += len(b) / BlockBytes
	}
	return n
}

// runRespWire compiles and runs the bench for w; replace's text stands in
// for a source's. A timeout is returned as a contract line (a mutant may
// hang the path).
func runRespWire(t *testing.T, ctx context.Context, dir string, w *respWire, seed uint64, replace map[string]string) *respWireResult {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tb.v"), []byte(respWireTB), 0o644))
	files := []string{"tb.v"}
	for _, f := range respWireFiles {
		text, ok := replace[f]
		if !ok {
			text = PrimitiveSource(f)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644))
		files = append(files, f)
	}
	w.write(t, dir)
	_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp", fmt.Sprintf("-Ptb.SEED=%d", seed),
		fmt.Sprintf("-Ptb.RD_RES=%d", w.run.cfg.MaxRdAtomic), fmt.Sprintf("-Ptb.ABASE=64'h%x", w.run.abase)}, files...)...)
	require.NoError(t, err)
	out, err := runTool(ctx, dir, "vvp", "-n", "sim.vvp", fmt.Sprintf("+ne=%d", len(w.ents)), fmt.Sprintf("+nk=%d", len(w.keys)),
		fmt.Sprintf("+ns=%d", w.sqBeats()), fmt.Sprintf("+nq=%d", len(w.rdq)))
	require.NoError(t, err)
	return parseRespWire(t, out)
}

func parseRespWire(t *testing.T, out string) *respWireResult {
	t.Helper()
	res := &respWireResult{resp: respResult{mem: map[uint64]byte{}}, rmem: map[uint64]byte{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var wAddr, wLen uint64
	wIdx, wClient := 0, 0
	rpicks := 0 // the port's picks of a responder packet so far
	done := false
	hexU := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 16, 64)
		require.NoError(t, err, "%q", s)
		return v
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "W":
			client, _ := strconv.Atoi(f[1])
			addr, length, be, data := hexU(f[2]), hexU(f[3]), hexU(f[4]), f[5]
			if wIdx == 0 {
				wAddr, wLen, wClient = addr, length, client
				if client == 1 {
					res.resp.writes++
				}
			} else if addr != wAddr || length != wLen || client != wClient {
				res.contract = append(res.contract, fmt.Sprintf("beat %d of a write of client %d at %#x (%d bytes): client %d at %#x (%d bytes)",
					wIdx, wClient, wAddr, wLen, client, addr, length))
			}
			mem := res.rmem
			if client == 1 {
				mem = res.resp.mem
				res.resp.beats++
			}
			base := wAddr&^63 + uint64(64*wIdx)
			for k := range 64 {
				if be>>(63-k)&1 != 0 {
					b, _ := strconv.ParseUint(data[2*k:2*k+2], 16, 8)
					mem[base+uint64(k)] = byte(b)
				}
			}
			wIdx++
			if uint64(64*wIdx) >= wLen {
				wIdx = 0
			}
		case "A":
			res.resp.acks = append(res.resp.acks, respAck{uint32(hexU(f[1])), uint32(hexU(f[2])), uint32(hexU(f[3])), uint32(hexU(f[4])),
				uint32(hexU(f[5])), hexU(f[6]), uint32(hexU(f[7]))})
			d := res.resp.writes
			if wIdx > 0 && wClient == 1 {
				d-- // a write under way
			}
			res.resp.ackAfter = append(res.resp.ackAfter, d)
		case "V":
			res.resp.cqes = append(res.resp.cqes, respCQE{uint32(hexU(f[1])), uint32(hexU(f[2])), uint32(hexU(f[3])), uint32(hexU(f[4])),
				uint32(hexU(f[5])), uint32(hexU(f[6]))})
			d := res.resp.writes
			if wIdx > 0 && wClient == 1 {
				d-- // a write under way
			}
			res.resp.cqeAfter = append(res.resp.cqeAfter, d)
		case "R":
			n, _ := strconv.Atoi(f[2])
			b, _ := strconv.Atoi(f[3])
			res.rsps = append(res.rsps, [3]int{int(hexU(f[1])), n, b})
		case "K":
			v, _ := strconv.Atoi(f[2])
			res.keys = append(res.keys, v)
		case "T":
			vl, _ := strconv.Atoi(f[1])
			d, err := hex.DecodeString(fmt.Sprintf("%0128s", f[4]))
			require.NoError(t, err)
			res.tx = append(res.tx, respWireBeat{vl, f[2] == "1", f[3] == "1", d})
		case "P":
			var p [4]int
			for i := range p {
				p[i], _ = strconv.Atoi(f[1+i])
			}
			res.picks = append(res.picks, p)
			rpicks += p[3]
		case "F":
			pick := -1
			if f[1] == "1" {
				pick = rpicks - 1 // its cycle's P line came first
			}
			res.fins = append(res.fins, respWireFin{pick: pick, qpn: uint32(hexU(f[2])), res: int(hexU(f[3])), psn: uint32(hexU(f[4]))})
		case "PERR":
			res.perr, _ = strconv.Atoi(f[1])
		case "D":
			c, _ := strconv.Atoi(f[1])
			res.reads = append(res.reads, [3]uint64{uint64(c), hexU(f[2]), hexU(f[3])})
		case "Q":
			res.qblk, _ = strconv.Atoi(f[1])
			res.qerr, _ = strconv.Atoi(f[2])
		case "C":
			var c [11]int
			for i := range c {
				c[i], _ = strconv.Atoi(f[i+1])
			}
			res.resp.counts = respCounts{c[0], c[1], c[2], c[3], c[4], c[5], c[6]}
			res.notReq, res.bad, res.other = c[7], c[8], c[9]+c[10]
		case "DONE":
			done = true
			res.resp.cycles, _ = strconv.Atoi(f[1])
		case "TIMEOUT":
			res.contract = append(res.contract, sc.Text())
			done = true
		}
	}
	require.True(t, done, "no DONE line:\n%s", tail(out, 20))
	return res
}

// check returns the first differences between the RTL's log and the model.
func (w *respWire) check(res *respWireResult) []string {
	diffs := append([]string{}, res.contract...)
	diffs = append(diffs, w.run.check(&res.resp)...)
	if len(res.rsps) != len(w.rsps) {
		diffs = append(diffs, fmt.Sprintf("%d READ responses reached the requester, the stream has %d", len(res.rsps), len(w.rsps)))
	}
	for k := range min(len(res.rsps), len(w.rsps)) {
		n := len(w.rsps[k])
		if want := [3]int{int(w.rspOps[k]), n, (n + 63) / 64}; res.rsps[k] != want {
			diffs = append(diffs, fmt.Sprintf("READ response %d: RTL op, length, blocks %v, stream %v", k, res.rsps[k], want))
			break
		}
		for i, b := range w.rsps[k] {
			a := respWireRA + uint64(k)*8192 + uint64(i)
			if g, ok := res.rmem[a]; !ok || g != b {
				diffs = append(diffs, fmt.Sprintf("READ response %d byte %d: RTL %#x (written %v), sent %#x", k, i, g, ok, b))
				break
			}
		}
	}
	want := 0
	for k := range w.rsps {
		want += len(w.rsps[k])
	}
	if len(res.rmem) != want {
		diffs = append(diffs, fmt.Sprintf("the requester's writes cover %d bytes, its responses carry %d", len(res.rmem), want))
	}
	if len(res.keys) != len(w.keys) {
		diffs = append(diffs, fmt.Sprintf("%d of the requester's %d key checks answered", len(res.keys), len(w.keys)))
	}
	for i := range min(len(res.keys), len(w.keys)) {
		if res.keys[i] != int(w.keys[i].want) {
			diffs = append(diffs, fmt.Sprintf("the requester's key check %d (%+v): RTL %d, model %d", i, w.keys[i], res.keys[i], w.keys[i].want))
			break
		}
	}
	diffs = append(diffs, w.checkTx(res)...)
	diffs = append(diffs, w.checkFins(res)...)
	diffs = append(diffs, w.checkReads(res)...)
	if res.notReq != w.notReq || res.bad != w.bad || res.other != 0 {
		diffs = append(diffs, fmt.Sprintf("not_req %d (stream %d), malformed drops %d (stream %d), rsp_todo + nak_retry %d (0)",
			res.notReq, w.notReq, res.bad, w.bad, res.other))
	}
	return diffs
}

// checkTx compares the transmit port's beats with the responder's packets
// in the model's order (run.out: its ACKs and NAKs and its READ replies'
// responses, each ib.AppendWire's bytes of the model's packet addressed
// as hca.Device.address does, ICRC included, the VCRC zero, on its QP's
// VL) and the requester's packets (in order, whole, never interleaved with
// the responder's), and each pick with the rule that the responder's
// packet goes ahead of the requester's on its VL.
func (w *respWire) checkTx(res *respWireResult) []string {
	var diffs []string
	ko, pi, bi := 0, 0, 0 // the responder's next packet; the requester's packet and beat
	var cur []byte        // the responder's packet being taken
	curVL := 0
	for k, b := range res.tx {
		if cur == nil && bi == 0 && b.sop && b.data[8] != 0x04 {
			cur, curVL = []byte{}, b.vl
		}
		if cur != nil {
			switch {
			case b.vl != curVL || (len(cur) > 0 && b.sop):
				diffs = append(diffs, fmt.Sprintf("tx beat %d: the responder's packet %d changed VL or restarted", k, ko))
			case ko >= len(w.run.out):
				diffs = append(diffs, fmt.Sprintf("tx beat %d: a responder packet past the model's %d", k, len(w.run.out)))
			}
			cur = append(cur, b.data...)
			if b.eop {
				o := w.run.out[min(ko, len(w.run.out)-1)]
				want, vl := respOutWire(o)
				if !bytes.Equal(cur, want) || curVL != vl {
					diffs = append(diffs, fmt.Sprintf("tx responder packet %d on VL %d: %x, model's (%+v) on VL %d: %x", ko, curVL, cur[:min(len(cur), 32)], o.ack, vl, want[:min(len(want), 32)]))
				}
				ko++
				cur = nil
			}
		} else {
			switch {
			case pi >= len(w.sq):
				diffs = append(diffs, fmt.Sprintf("tx beat %d: past the requester's %d packets", k, len(w.sq)))
			default:
				p := w.sq[pi]
				if !bytes.Equal(b.data, p[bi*BlockBytes:(bi+1)*BlockBytes]) || b.sop != (bi == 0) ||
					b.eop != ((bi+1)*BlockBytes == len(p)) || b.vl != int(p[0]>>4) {
					diffs = append(diffs, fmt.Sprintf("tx beat %d: not the requester's packet %d beat %d", k, pi, bi))
				}
				if bi++; bi*BlockBytes == len(p) {
					pi, bi = pi+1, 0
				}
			}
		}
		if len(diffs) > 0 {
			return diffs
		}
	}
	if ko != len(w.run.out) || pi != len(w.sq) {
		diffs = append(diffs, fmt.Sprintf("tx: %d responder packets of the model's %d, %d of the requester's %d packets", ko, len(w.run.out), pi, len(w.sq)))
	}
	for _, p := range res.picks {
		if p[1] == 1 && p[3] == 0 {
			diffs = append(diffs, fmt.Sprintf("a pick of VL %d the responder offered went to the requester", p[0]))
			break
		}
	}
	if res.perr != 0 {
		diffs = append(diffs, fmt.Sprintf("%d responder packets sent on a VL without the credits", res.perr))
	}
	return diffs
}

// checkFins: hca_ack_tx's fin_* are, in order, the model's
// ReadResponseSent of each READ reply's last response (run.fins): its
// QPN, resource and PSN, each in the cycle the port picks that response.
// The port's k-th pick of a responder packet sends run.out[k] (the queue
// is in the model's order, which checkTx holds the beats to), so a fin
// must come with pick out. A fin with the reply's first PSN, another
// resource, or at another response's pick differs here, whether or not
// the responder's next claim of the resource would show it.
func (w *respWire) checkFins(res *respWireResult) []string {
	for i := range min(len(res.fins), len(w.run.fins)) {
		g, m := res.fins[i], w.run.fins[i]
		if g.qpn != m.qpn || g.res != m.res || g.psn != m.psn || g.pick != m.out {
			return []string{fmt.Sprintf("fin %d: RTL QPN %#x resource %d PSN %#x at responder pick %d; "+
				"the model's ReadResponseSent QPN %#x resource %d PSN %#x at its packet %d", i, g.qpn, g.res, g.psn, g.pick, m.qpn, m.res, m.psn, m.out)}
		}
	}
	if len(res.fins) != len(w.run.fins) {
		return []string{fmt.Sprintf("%d fins from hca_ack_tx, the model's READ replies %d", len(res.fins), len(w.run.fins))}
	}
	return nil
}

// respOutWire is the responder's packet o on the wire (ackWire's for an
// ACK; a READ response addressed as hca.Device.address does, ib.AppendWire's
// bytes, the VCRC zero, zeros to the beat's end) and its VL.
func respOutWire(o respOutPkt) ([]byte, int) {
	dlid, slid, sl, vl, rqpn := respWirePath(o.ack.qpn)
	if o.rsp == nil && o.ack.rd == 4 {
		// An atomic's answer: the ATOMIC ACKNOWLEDGE hca.Device.atomic sends (the AETH's
		// syndrome and MSN, the AtomicAckETH the original value), one beat.
		w := ib.AppendWire(nil, &ib.Packet{Opcode: ib.AtomicAcknowledge, DLID: dlid, SLID: slid, SL: sl, VL: vl, DestQP: rqpn,
			PSN: o.ack.psn, AETH: ib.AETH{Syndrome: uint8(o.ack.syn), MSN: o.ack.msn}, AtomicAck: o.ack.va})
		b := make([]byte, BlockBytes)
		copy(b, w[:len(w)-ib.VCRCBytes])
		return b, int(vl)
	}
	if o.rsp == nil {
		return ackWire(o.ack), int(vl)
	}
	p := *o.rsp
	p.DLID, p.SLID, p.SL, p.VL, p.DestQP = dlid, slid, sl, vl, rqpn
	wb := ib.AppendWire(nil, &p)
	b := make([]byte, (len(wb)+BlockBytes-1)/BlockBytes*BlockBytes)
	copy(b, wb[:len(wb)-ib.VCRCBytes])
	return b, int(vl)
}

// checkReads: the responder's rd1 reads are, in order, each model
// response's payload bytes (its address and length, as the model's
// PCIe.Read; rd1 returns the blocks they lie in) and each executed
// atomic's 8 bytes, and the requester's stand-in got every block it asked
// for, each host memory's bytes.
func (w *respWire) checkReads(res *respWireResult) []string {
	var diffs []string
	var mine, theirs, atoms int
	for _, d := range res.reads {
		if d[0] == 0 {
			theirs++
			continue
		}
		if d[0] == 2 {
			// The responder's atomic reads: each executed atomic's block, in order.
			if atoms >= len(w.run.atomReads) || d[1] != w.run.atomReads[atoms] || d[2] != 8 {
				diffs = append(diffs, fmt.Sprintf("the responder's atomic read %d: %#x, %d bytes; the model's atomics read %#x",
					atoms, d[1], d[2], w.run.atomReads[min(atoms, max(len(w.run.atomReads)-1, 0)):]))
				break
			}
			atoms++
			continue
		}
		if mine >= len(w.run.readAddrs) {
			diffs = append(diffs, fmt.Sprintf("responder read %d (%#x, %d bytes): the model reads %d", mine, d[1], d[2], len(w.run.readAddrs)))
			break
		}
		a := w.run.readAddrs[mine]
		if d[1] != a[0] || d[2] != a[1] {
			diffs = append(diffs, fmt.Sprintf("responder read %d: %#x, %d bytes; the model's response reads %d bytes at %#x",
				mine, d[1], d[2], a[1], a[0]))
			break
		}
		mine++
	}
	if mine != len(w.run.readAddrs) && len(diffs) == 0 {
		diffs = append(diffs, fmt.Sprintf("the responder made %d reads, the model's responses %d", mine, len(w.run.readAddrs)))
	}
	if atoms != len(w.run.atomReads) && len(diffs) == 0 {
		diffs = append(diffs, fmt.Sprintf("the responder made %d atomic reads, the model executed %d atomics", atoms, len(w.run.atomReads)))
	}
	want := 0
	for _, q := range w.rdq {
		want += dmaSpan(q[0], int(q[1])) // the blocks its bytes lie in
	}
	if theirs != len(w.rdq) || res.qblk != want || res.qerr != 0 {
		diffs = append(diffs, fmt.Sprintf("the requester's rd1 reads: %d of %d, %d blocks of %d, %d wrong", theirs, len(w.rdq), res.qblk, want, res.qerr))
	}
	return diffs
}

// respWireSteps is the wired runs' length (respRun.fill steps).
const respWireSteps = 250

// TestResponderWiredCosim: two seeds through hca_rx_ack -> hca_responder
// with hca_share_arb against the model (respWire's checks). The run must
// exercise what it is for: GRH requests, READ responses interleaved with
// WRITEs, and both arbiters' clients.
func TestResponderWiredCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	for _, seed := range cosimSeeds[:2] {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			w := newRespWire(seed, respWireSteps)
			res := runRespWire(t, context.Background(), t.TempDir(), w, seed, nil)
			assert.Empty(t, w.check(res))
			both := 0
			for _, p := range res.picks {
				if p[1] == 1 && p[2] == 1 {
					both++
				}
			}
			t.Logf("%d rx entries, %d WRITE packets with a GRH, %d READ responses, %d other requests, %d key checks; %d cycles, "+
				"%d responder writes (%d beats), %d ACKs/NAKs; %d tx beats, %d picks (%d of a VL both offered); %v",
				len(w.ents), w.grh, len(w.rsps), w.notReq, len(w.keys), res.resp.cycles, res.resp.writes, res.resp.beats,
				len(res.resp.acks), len(res.tx), len(res.picks), both, w.run.byKind)
			assert.Positive(t, w.grh, "WRITE packets with a GRH")
			assert.Positive(t, res.resp.writes, "responder writes")
			assert.Positive(t, len(res.rmem), "requester writes")
			assert.Positive(t, w.run.byKind["R_Key invalid_key"]+w.run.byKind["R_Key pd_mismatch"]+w.run.byKind["R_Key out_of_bounds"]+
				w.run.byKind["R_Key access_denied"], "responder key checks that fail")
			fails := 0
			for _, k := range w.keys {
				if k.want != hca.KeyOK {
					fails++
				}
			}
			assert.Positive(t, both, "picks of a VL both the ACK and the requester offered")
			assert.Positive(t, fails, "requester key checks that fail")
			assert.Less(t, fails, len(w.keys), "requester key checks that pass")
		})
	}
}

// respWireSendSteps is the wired SEND run's length.
const respWireSendSteps = 250

// TestResponderWiredSendCosim: SENDs (FIRST/MIDDLE/LAST/ONLY, with and
// without immediate) and RDMA WRITEs with immediate among the WRITEs
// (newRespWireSends: respRun's send stream, ACK_COALESCE 1) as wire
// packets, local and behind a GRH, through hca_rx_ack -> hca_responder,
// the receive WQEs posted to the testbench's receive queue stand-in: the
// ACKs and NAKs (RNR NAKs with each QP's min_rnr_timer from its context
// write among them), host bytes, counters and receive completions (QPN,
// opcode, status, index, byte_len, and the immediate hca_rx_ack decoded
// from the packet's ImmDt) are hca.Responder's, each completion after the
// writes before it, as TestResponderSendCosim at the block; the READ
// responses, the stand-in requester and not_req as TestResponderWiredCosim.
// Every layout of the ImmDt and payload (the eight opcodes, local and
// global) must occur.
func TestResponderWiredSendCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	for _, seed := range cosimSeeds[:1] {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			w := newRespWireSends(seed, respWireSendSteps)
			res := runRespWire(t, context.Background(), t.TempDir(), w, seed, nil)
			assert.Empty(t, w.check(res))
			ops := map[uint32]int{}
			rnr := 0
			for _, c := range w.run.cqes {
				ops[c.op]++
			}
			for _, a := range w.run.acks {
				if a.syn>>5 == 1 {
					rnr++
				}
			}
			t.Logf("%d rx entries, %d cycles; %d receive completions %v (by CQE opcode), %d RNR NAKs, %d ACKs/NAKs; packets %v; %v",
				len(w.ents), res.resp.cycles, len(w.run.cqes), ops, rnr, len(w.run.acks), w.sends, w.run.byKind)
			for _, op := range []ib.Opcode{ib.SendFirst, ib.SendMiddle, ib.SendLast, ib.SendLastImm, ib.SendOnly, ib.SendOnlyImm,
				ib.RDMAWriteLastImm, ib.RDMAWriteOnlyImm} {
				for _, g := range []bool{false, true} {
					assert.Positive(t, w.sends[respWireSendKind(op, g)], "packets of layout %q", respWireSendKind(op, g))
				}
			}
			for _, op := range []uint32{hca.CQERespWrImm, hca.CQERespSend, hca.CQERespSendImm} {
				assert.Positive(t, ops[op], "receive completions of CQE opcode %d", op)
			}
			assert.Positive(t, rnr, "RNR NAKs")
		})
	}
}

// TestResponderWiredReadCosim: RDMA READ requests among the WRITEs
// (newRespWireReads: 0 bytes, under, at and over the MTU, unaligned VAs,
// bad R_Keys, PSN gaps, whole and partial duplicates; RD_RES 4) through
// hca_rx_ack (local and behind a GRH) -> hca_responder, the READ replies
// built by hca_ack_tx from host memory read through rd1 (shared through
// hca_share_arb with the requester's stand-in, which reads too), under
// random stalls everywhere: every responder packet on tx_* is
// ib.AppendWire's bytes of the model's (hca.Responder.NextReadResponse's
// responses and its ACKs/NAKs, in the model's order), the responder's
// reads are exactly its responses' blocks, the counters are the model's,
// and the WRITE side and the stand-in as TestResponderWiredCosim.
func TestResponderWiredReadCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	for _, seed := range cosimSeeds[:1] {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			w := newRespWireReads(seed, respWireReadSteps, 4)
			res := runRespWire(t, context.Background(), t.TempDir(), w, seed, nil)
			assert.Empty(t, w.check(res))
			rsps, multi, mine := 0, 0, 0
			for _, o := range w.run.out {
				if o.rsp != nil {
					rsps++
					if o.rsp.Opcode != ib.RDMAReadResponseOnly {
						multi++
					}
				}
			}
			for _, d := range res.reads {
				if d[0] == 1 {
					mine++
				}
			}
			t.Logf("%d rx entries, %d cycles; %d responder packets on tx_* (%d READ responses, %d of multi-packet replies), "+
				"%d responder reads, %d stand-in reads (%d blocks); %v",
				len(w.ents), res.resp.cycles, len(w.run.out), rsps, multi, mine, len(w.rdq), res.qblk, w.run.byKind)
			for _, k := range []string{"READ 0 bytes", "READ < MTU", "READ = MTU", "READ > MTU", "READ VA mod 64 > 0",
				"READ duplicate, partial", "READ duplicate dropped", "ahead, NAK", "written (VA mod 64 > 0)"} {
				assert.Positive(t, w.run.byKind[k], "decisions of kind %q", k)
			}
			assert.Positive(t, multi, "responses of multi-packet replies")
			// The fins checkFins compared: some of replies of several
			// responses (their last PSN not their first), on every
			// resource of the 4, so that a fin's PSN or resource slip
			// shows.
			fmulti, fres := 0, map[int]int{}
			for _, f := range w.run.fins {
				if f.psn != w.run.out[f.out].ack.psn {
					fmulti++
				}
				fres[f.res]++
			}
			t.Logf("%d fins (%d of multi-packet replies), by resource %v", len(res.fins), fmulti, fres)
			assert.Positive(t, fmulti, "fins of multi-packet replies")
			for k := range 4 {
				assert.Positive(t, fres[k], "fins of resource %d", k)
			}
		})
	}
}

// TestResponderWiredMutantsFail: slips in the routing, the arbiters and
// the request decode each fail a wired run, which the unmutated blocks
// pass (respWireFirstFailing: half its length first).
func TestResponderWiredMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const rx, arb, atx = "hca_rx_ack.v", "hca_share_arb.v", "hca_ack_tx.v"
	for _, m := range []cosimMutant{
		{"unmutated", "", "", ""}, // both runs pass: the failures below are the mutants'
		{"WRITE MIDDLE not routed to the responder", rx, "opcode == 8'h06 || opcode == 8'h07 || opcode == 8'h08", "opcode == 8'h06 || opcode == 8'h08"},
		{"the payload's blocks untagged (all the requester's)", rx, ".push_data({p_wrq, blk})", ".push_data({1'b0, blk})"},
		{"AckReq from the wrong BTH bit", rx, "wire         ackreq = bth[31];", "wire         ackreq = bth[30];"},
		{"the RETH with a GRH from the wrong bytes", rx, "{rq_va[31:0], rq_rkey, rq_dlen} <= c_data[511 -: 96];", "{rq_va[31:0], rq_rkey, rq_dlen} <= c_data[479 -: 96];"},
		{"a WRITE FIRST's payload offset 40, not 36", rx, "6'd36:   blk = {prev[223:0], nxt[511:224]};", "6'd36:   blk = {prev[191:0], nxt[511:192]};"},
		{"wr0 released after a write's first beat", arb, "w_busy <= w_beats > 10'd1;", "w_busy <= 1'b0;"},
		{"a key check's grant held one cycle, not to its response", arb, "if (kc_rsp_valid && kc_rsp_ready) k_busy <= 1'b0;", "if (k_busy) k_busy <= 1'b0;"},
		{"the ACK's MSN from its PSN", atx, "ack_syn, ack_msn,", "ack_syn, ack_psn,"},
		{"the ACK's DestQP the local QPN, not the remote one", atx, "c_rqpn[ai], 8'd0, ack_psn,", "ack_qpn, 8'd0, ack_psn,"},
		{"the requester ahead of the ACK on their VL", atx, "a_offer && tx_pick_valid && tx_pick_vl == head_vl;",
			"a_offer && tx_pick_valid && tx_pick_vl == head_vl && !r_vl_waiting[tx_pick_vl];"},
		{"an ACK offered inside the requester's packet", atx, "q_pkts != 8'd0 && a_fits && !r_act && !a_act;", "q_pkts != 8'd0 && a_fits && !a_act;"},
		{"an ACK sent without credits", atx, "wire             a_fits    = a_cred - head_blks <= 12'd2048;", "wire             a_fits    = 1'b1;"},
		{"the requester's response blocks offered to the responder", rx, "assign rpd_valid = f_valid && f_tag;", "assign rpd_valid = f_valid;"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			respWireFirstFailing(t, m, respWireMutantSteps, func(steps int) *respWire { return newRespWire(cosimSeeds[0], steps) },
				"the wired co-simulation passes with %s")
		})
	}
}

// TestResponderWiredSendMutantsFail: slips in hca_rx_ack's SEND and
// WRITE-with-immediate decode each fail a wired SEND run of
// respWireSendMutantSteps steps (newRespWireSends).
func TestResponderWiredSendMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const rx = "hca_rx_ack.v"
	for _, mt := range []struct {
		cosimMutant
		steps int // the run's length: the shorter has no local WRITE ONLY with immediate whose payload is written
	}{
		{cosimMutant{"unmutated", "", "", ""}, respWireSendMutantSteps}, // the short runs pass: the failures below are the mutants'
		{cosimMutant{"SEND MIDDLE not routed to the responder", rx, "(opcode <= 8'h05 || opcode == 8'h09", "((opcode <= 8'h05 && opcode != 8'h01) || opcode == 8'h09"}, respWireSendMutantSteps},
		{cosimMutant{"WRITE LAST with immediate not routed to the responder", rx, "opcode <= 8'h05 || opcode == 8'h09 || opcode == 8'h0B)", "opcode <= 8'h05 || opcode == 8'h0B)"}, respWireSendMutantSteps},
		{cosimMutant{"the ImmDt from the BTH's last word", rx, "(global ? 60 : (wi_reth ? 36 : 20))", "(global ? 60 : (wi_reth ? 36 : 16))"}, respWireSendMutantSteps},
		{cosimMutant{"a WRITE ONLY's ImmDt read before its RETH", rx, "(global ? 60 : (wi_reth ? 36 : 20))", "(global ? 60 : 20)"}, respWireSendMutantSteps},
		{cosimMutant{"the ImmDt behind a GRH at the local offset", rx, "(global ? 60 : (wi_reth ? 36 : 20))", "(global ? 20 : (wi_reth ? 36 : 20))"}, respWireSendMutantSteps},
		{cosimMutant{"a WRITE ONLY's ImmDt behind a GRH from the second beat's first word", rx, "rq_imm <= c_data[511-8*12 -: 32];", "rq_imm <= c_data[511 -: 32];"}, respWireSendMutantSteps},
		{cosimMutant{"the ImmDt's word not among the headers", rx, " + {10'd0, rq_imm_w} +", " +"}, respWireSendMutantSteps},
		{cosimMutant{"the payload not moved past the ImmDt", rx, "{4'd0, rq_imm_w, 2'b00};", "{4'd0, 1'b0, 2'b00};"}, respWireSendMutantSteps},
		{cosimMutant{"a WRITE ONLY with immediate's payload at 36", rx, "6'd40:   blk = {prev[191:0], nxt[511:192]};", "6'd40:   blk = {prev[223:0], nxt[511:224]};"}, respWireSendSteps},
		{cosimMutant{"its payload behind a GRH at 76", rx, "6'd16:   blk = {prev[383:0], nxt[511:384]};", "6'd16:   blk = {prev[415:0], nxt[511:416]};"}, respWireSendMutantSteps},
	} {
		m := mt.cosimMutant
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			respWireFirstFailing(t, m, mt.steps, func(steps int) *respWire { return newRespWireSends(cosimSeeds[0], steps) },
				"the wired SEND co-simulation passes with %s")
		})
	}
}

// respWireFirstFailing runs one case of a wired mutant table through
// firstFailing: mk's run of steps/2 steps, then of steps (the length at
// which each of the table's mutants fails), each with m's edits. Most
// mutants fail the half-length run (a wired run's Icarus time grows with
// its steps), and one that passes it still meets the whole run, so the
// table checks what it did with the whole run alone.
func respWireFirstFailing(t *testing.T, m cosimMutant, steps int, mk func(steps int) *respWire, msg string) {
	t.Helper()
	replace := respMutated(t, m)
	var runs []func() []string
	for _, n := range []int{steps / 2, steps} {
		runs = append(runs, func() []string {
			w := mk(n)
			return w.check(runRespWire(t, context.Background(), t.TempDir(), w, 1, replace))
		})
	}
	firstFailing(t, m.file != "", runs, fmt.Sprintf(msg, m.name))
}

// respWireSendMutantSteps is the SEND mutant runs' length.
const respWireSendMutantSteps = 120

// respWireMutantSteps is the mutant runs' length.
const respWireMutantSteps = 60

// TestResponderReadMutantsFail: slips in the READ path each fail a READ
// run: the responder's (hca_responder.v) a block run of respMutantSteps
// steps (newRespRunReads, RD_RES 4, ACK_COALESCE 3), the rest a wired run
// of respWireReadMutantSteps (newRespWireReads).
func TestResponderReadMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const f, rx, arb, atx = "hca_responder.v", "hca_rx_ack.v", "hca_share_arb.v", "hca_ack_tx.v"
	for _, m := range []cosimMutant{
		{"unmutated", "", "", ""}, // both runs pass: the failures below are the mutants'
		{"a READ takes one PSN, not ceil(len / MTU)", f, "ctx_epsn[ix] <= ctx_epsn[ix] + n_pk;", "ctx_epsn[ix] <= ctx_epsn[ix] + 24'd1;"},
		{"a READ leaves the MSN", f, "ctx_msn[ix] <= ctx_msn[ix] + 24'd1;", "ctx_msn[ix] <= ctx_msn[ix];"},
		{"a READ's R_Key checked for REMOTE_WRITE", f, "is_rd ? 4'd4 : is_atm ? 4'd8 : 4'd2", "is_atm ? 4'd8 : 4'd2"},
		{"a duplicate READ replayed whatever its R_Key", f, "h_rkey == res_rkey[f_e] && ", ""},
		{"a duplicate READ replayed past its READ's last PSN", f, "(f_dl == 24'd0 || f_dl[23])", "1'b1"},
		{"a replay from inside the READ sent from FIRST", f, "p_mid <= h_psn != (state == S_DUP ? res_first[f_e] : d_first);", "p_mid <= 1'b0;"},
		{"a replay with the MSN after it", f, "p_msn <= ctx_msn[ix];\n                p_mid", "p_msn <= ctx_msn[ix] + 24'd1;\n                p_mid"},
		{"the resource ring not advanced", f, "ctx_rnext[ix] <= rnext_n;\n                res_first", "ctx_rnext[ix] <= ctx_rnext[ix];\n                res_first"},
		{"READ requests not routed to the responder", rx, "wire         rq_req = pay_req || rd_req || at_req;", "wire         rq_req = pay_req || at_req;"},
		{"a READ's RETH behind a GRH not from the second beat", rx, "p_grq   <= global && rq_reth;", "p_grq   <= global && wr_req && wr_reth;"},
		{"a MIDDLE response with an AETH", atx, "wire             hs_aeth  = hs_op != 8'h0E;", "wire             hs_aeth  = 1'b1;"},
		{"PadCnt 0", atx, "wire [1:0]       hs_pad   = 2'd0 - hs_p[1:0];", "wire [1:0]       hs_pad   = 2'd0;"},
		{"every response read at the READ's VA", atx, "rs_va    <= rs_va + {51'd0, rs_p};", "rs_va    <= rs_va;"},
		{"a replay from inside sent from FIRST", atx, "hs_op    = e_mid ?", "hs_op    = 1'b0 ?"},
		{"rd1's blocks routed to the client picked last", "hca_rd_merge.v", "assign b_rsp_valid = rsp_valid && h_own;\n", "assign b_rsp_valid = rsp_valid && r_last;\n"},
		{"an ACK taken while a READ reply is under way", atx, "assign ack_ready = !e_busy && (ack_read ? !f_arm && !f_pend : c_in_ready);", "assign ack_ready = ack_read ? !e_busy && !f_arm && !f_pend : c_in_ready;"},
		// As hca_ack_tx read before rd1's reads were bytes: the whole
		// blocks a response's bytes lie in (checkReads: not the model's
		// PCIe.Read of the response's bytes).
		{"a response's payload read as the whole blocks its bytes lie in", atx,
			"assign rd_req_addr  = rs_va;\n    assign rd_req_len   = {3'd0, rs_p};",
			"assign rd_req_addr  = {rs_va[63:6], 6'd0};\n    assign rd_req_len   = {2'd0, rs_blks, 6'd0};"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			replace := respMutated(t, m)
			// The runs, each at half its length first (respWireFirstFailing).
			var runs []func() []string
			if m.file == f || m.file == "" {
				for _, steps := range []int{respMutantSteps / 2, respMutantSteps} {
					runs = append(runs, func() []string {
						run := newRespRunReads(cosimSeeds[0], 3, 4)
						run.fill(steps)
						return run.check(runResp(t, context.Background(), t.TempDir(), run, 1, replace))
					})
				}
			}
			if m.file != f {
				for _, steps := range []int{respWireReadMutantSteps / 2, respWireReadMutantSteps} {
					runs = append(runs, func() []string {
						w := newRespWireReads(cosimSeeds[0], steps, 4)
						return w.check(runRespWire(t, context.Background(), t.TempDir(), w, 1, replace))
					})
				}
			}
			firstFailing(t, m.file != "", runs, "the co-simulation passes with "+m.name)
		})
	}
}

// respWireReadSteps is the wired READ run's length (one seed: the block
// run, TestResponderReadCosim, takes two, at a tenth of the cost).
const respWireReadSteps = 300

// respWireReadMutantSteps is the wired READ mutant runs' length.
const respWireReadMutantSteps = 80
