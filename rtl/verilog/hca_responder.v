// hca_responder: the receive side of an RC QP for RDMA WRITE (with and without immediate), RDMA READ
// and SEND requests (IBA ch. 9 responder; rxe_resp.c).
// Go model: hca.Responder.Receive and FlushAck (hca/responder.go) as hca.Device.respond carries them
// out (hca/rx.go: the payload written at RespAction.WriteAddr, the ACK or NAK, then the coalesced ACK
// owed when no further packet waits); rtl/cosim_resp_test.go drives the same request packets into both
// and requires the host bytes written, the ACK/NAK sequence and the counters to be the model's.
//
// Contexts: 2^QPN_W in flops, indexed by a QPN's low QPN_W bits. cfg_* (the modify to RTR) writes one:
// its QPN, the expected PSN (the requester's first), the QP's protection domain, path MTU (cfg_mtu: a
// WRITE's packet lengths, a READ's PSNs) and min_rnr_timer (cfg_rnr); the message sequence number, the sequence-NAK flag, the coalescing count, the ERR state
// and the SEND-under-way flag are cleared (hca.NewResponder). cfg_ready: only between packets.
//
// Requests: one at a time. A packet's header on rq_* (valid/ready): QPN (BTH.DestQP), PSN, BTH.OpCode,
// AckReq, the RETH's VA, R_Key and DMA length (looked at on a FIRST or ONLY), and its payload's bytes
// (PktLen less headers and pad: 0..8191); its payload on pd_* (valid/ready), ceil(bytes / 64) blocks,
// byte 0 of the payload in lane 0 of the first (hca_rx_ack's realigned payload FIFO), the blocks of
// the next packet behind them. Each packet's blocks are all taken, written or dropped. Per packet, as
// the model (Receive):
//   no context holds the QPN: dropped (no_qp);
//   the QP is in ERR (a class C error before, or its requester's failure on req_err): dropped
//     (err_drop), as the model's Receive in ERR;
//   PSN ahead of the expected one (modulo 2^24, within half the space: psnDiff > 0): one NAK PSN
//     sequence error (syndrome 0x60) with the expected PSN per gap, then dropped (seq_drop) until the
//     expected PSN arrives;
//   PSN behind (a duplicate): a SEND or WRITE packet re-ACKed with the expected PSN - 1 (C9-105, rxe
//     duplicate_request), nothing written (dup); a duplicate READ (dup): replayed from the responder
//     resource whose PSNs hold its PSN (the lowest, findRes) when it lies inside that READ (R_Key
//     equal, VA range inside, last PSN not past the READ's), its region checked again for
//     REMOTE_READ unless of length 0 (failure: NAK remote access error, ERR), with the current MSN,
//     as MIDDLE ... LAST when its PSN is not the READ's first; else dropped; a duplicate atomic
//     (dup): answered from the resource holding its PSN when that is an atomic's (its saved original
//     value, the current MSN, nothing executed again: hca LastAtomic), else dropped;
//   in sequence: the sequence-NAK flag clears; a FIRST or ONLY inside a message, a MIDDLE or LAST
//     outside one, or a SEND inside the WRITE: NAK invalid request (0x61) at the packet's PSN, the
//     context to ERR (class C); so too an RDMA WRITE FIRST/MIDDLE/LAST/ONLY (no immediate) whose
//     payload breaks IBA's length rules (a length error, rxe RESPST_ERR_LENGTH; the model's
//     packetLengthOK, before the R_Key check): a FIRST or MIDDLE not exactly the context's path MTU
//     (cfg_mtu), a LAST of 0 or more than the MTU, an ONLY of more than the MTU, or bytes passing
//     the RETH's DMA length or, at the LAST or ONLY, ending short of it (the same rules hold for a
//     WRITE with immediate, the MTU rule for a SEND: below); an RDMA WRITE FIRST/ONLY with a DMA length > 0 checks its R_Key
//     through kc_* (hca_key_check's contract: REMOTE_WRITE, the context's PD, [VA, VA + DMA length));
//     a failure: NAK remote access error (0x62) at the packet's PSN, nothing written, the context to
//     ERR; else the packet's payload is written at the WRITE's next byte (the RETH's VA at FIRST/ONLY,
//     moved by each packet's bytes: the model checks the RETH range once and places MIDDLE and LAST
//     bytes without a bound, as here), the expected PSN moves by one, the MSN by one at LAST/ONLY;
//     an AckReq packet counts towards an ACK (syndrome 0x1F, "no credit limit", with the MSN after
//     the packet) that leaves when ACK_COALESCE of them are counted (hca.ack_coalesce);
//   an RDMA READ in sequence: its R_Key through kc_* for REMOTE_READ (4) over [VA, VA + length)
//     unless of length 0 (failure: NAK remote access error, ERR); accepted, it takes the context's
//     next responder resource (RD_RES of them, a ring, emptied by a context write: hca claimRes,
//     saveRes), the expected PSN moves by ceil(length / MTU) (at least 1; the MTU from cfg_mtu) and
//     the MSN by one, and its reply leaves on ack_* (ack_read: the first PSN, VA, length, the MSN
//     after it, its resource ack_res and last PSN ack_last; hca_ack_tx sends the responses and
//     gives the last response's pick by the port back on fin_*, which frees the resource when it
//     still holds that READ: res_last = fin_psn, so a replay reaching the READ's end frees it too,
//     as the model's ReadResponseSent); a READ (or atomic) whose resource still holds a READ with
//     a response never picked (claimRes's inUse: more than max_rd_atomic outstanding) is NAKed
//     invalid request at its PSN with the current MSN, the context to ERR, nothing else done;
//   a SEND (FIRST/MIDDLE/LAST/ONLY, LAST and ONLY with immediate) or an RDMA WRITE with immediate
//     (LAST/ONLY) in sequence: a SEND FIRST or ONLY and a WRITE with immediate first take the QP's
//     next receive WQE through rw_* (rw_req_* asks with the QPN, rw_rsp_* answers: none posted, or
//     the WQE's index and its one scatter element: address, length, L_Key); none posted: NAK RNR
//     (0x20 | the context's min_rnr_timer) at the packet's PSN with the current MSN, nothing written,
//     the context unchanged (the requester resends after its RNR timer). Then, as the model's
//     Receive: a packet that breaks IBA's length rules (the model's packetLengthOK: a SEND's FIRST or
//     MIDDLE not exactly the MTU, its LAST 0 or more than the MTU, its ONLY more than the MTU; a
//     WRITE with immediate's as a WRITE's, its DMA length included) gets NAK invalid request, ERR,
//     nothing written, and the WQE the message holds (taken at this packet, or at the SEND's
//     FIRST; a WRITE's FIRST or MIDDLE holds none) completes with REM_INV_REQ_ERR (9), byte_len 0
//     (rxe RESPST_ERR_LENGTH: do_class_ac_error, do_complete), checked after the WQE is taken
//     (so an empty queue's RNR NAK comes first) and before the buffer's length and the keys; a
//     WRITE ONLY with immediate checks its R_Key as a WRITE does (a failure: NAK remote
//     access error, ERR, and the WQE completes with REM_ACCESS_ERR); a SEND whose bytes so far
//     pass the buffer's length (recvOff + bytes > length, at any packet; at the first one before the
//     key check) gets NAK invalid request, ERR, and the WQE completes with LOC_LEN_ERR; a SEND's
//     first packet checks the WQE's L_Key through kc_* for LOCAL_WRITE (1) over the whole element in
//     the context's PD (hca.QP.CheckLKey; a failure: NAK remote operational error 0x63, ERR,
//     LOC_PROT_ERR); each accepted SEND packet's bytes go to the buffer's next byte (address +
//     recvOff), a WRITE's where its RETH says; at a LAST or ONLY the receive completion goes out on
//     rc_* (its QPN, CQE opcode 2 RESP_SEND or 3 RESP_SEND_IMM with the bytes placed, 1
//     RESP_WR_IMM with the WRITE's RETH DMA length from its FIRST or ONLY; the immediate when the
//     opcode has one, else 0; the WQE's index; status 0), an error's with status 1, 4, 9 or 10, opcode
//     2 (1 for a WRITE), byte_len and immediate 0. ACKs, MSN, PSN as for a WRITE;
//   an atomic (CMP_SWAP 0x13, FETCH_ADD 0x14) in sequence: the AtomicETH's VA, R_Key (rq_va, rq_rkey),
//     swap/add and compare data (rq_swap, rq_cmp); its R_Key through kc_* for REMOTE_ATOMIC (8) over
//     [VA, VA + 8) (failure: NAK remote access error, ERR); a VA not 8-byte aligned: NAK invalid
//     request, ERR; else it takes the next responder resource (as a READ), the expected PSN and
//     the MSN move by one, its 64-byte block is read on rd_* (DMA client rd1's contract), the 8
//     bytes at the VA (least significant first, as the model's ReadU64) give the original value,
//     the result (original + add; swap if original == compare, else the original) is written back
//     on wr0 (one beat, those 8 byte enables), the original value kept in the resource, and the
//     ATOMIC ACKNOWLEDGE leaves on ack_* after the write (ack_atomic, ack_orig, the MSN after it;
//     hca.Device.atomic); its resource in use (claimRes: a READ's, a response never picked) is NAK
//     invalid request as the misaligned VA. Not here (TODO): the model's serialization of atomics
//     to one address across QPs (d.atomics: one at a time here);
//   other opcodes in sequence (SEND with invalidate): TODO, dropped (todo), the context unchanged.
// After a packet, when no next header waits (rq_valid low) and the context owes a coalesced ACK, it
// goes (FlushAck: the model's device flushes when its receive pipeline holds no further packet).
//
// Payload writes: DMA client wr0 (hca_dma_engine's contract: whole 64-byte blocks, the address and
// length on the first beat and held, byte enables per beat): a packet of n bytes at address a is one
// write of ceil((a mod 64 + n) / 64) beats, its bytes realigned to the host's lanes (payload byte p in
// lane (a + p) mod 64: a 6-stage byte rotator and the previous block's lanes below a mod 64), byte
// enables from lane a mod 64 on the first beat and up to lane (a + n - 1) mod 64 on the last. A
// packet's ACK or NAK leaves after its write's last beat is taken (ack_*, an output register), and
// with it its receive completion (rc_*, an output register; both wait for their register free).
// Counters: 16 bits, saturating (an RNR NAK counts on cnt_naks).
// Flush (hca.Device.flushRecvs): qp_err says which contexts are in ERR (hca_rq's rq_err: it stops
// reading their WQEs): the responder's own (ctx_err) and those req_err names (hca_requester's
// qp_err: the requester's context went to ERR and its failure's CQEs are out,
// hca.Device.requesterErr: IBA's Error state is the whole QP's, so its posted receives flush after
// the send side's error CQE; a context write clears both). Whenever the engine is idle and a
// context in ERR has receive WQEs announced and not taken (rw_flush, hca_rq's), it takes the oldest with a flush take (rw_req_flush: answered
// at once) and completes it on rc_* with WR_FLUSH_ERR (status 5), opcode 2 (RESP_SEND), its index,
// byte_len and immediate 0 (the model's hca.FlushRecvCQE), one WQE a turn, lowest context first,
// before the next packet or context write is taken (rq_ready, cfg_ready low): so the error's own
// completion (out on rc_* in S_ACK) goes first, then the WQEs posted and not consumed in posting
// order, and a WQE posted while the context is in ERR is flushed before the next packet, as the
// model flushes at the error and at each doorbell of a QP in ERR.
// TODO: SEND with invalidate, a receive WQE of several scatter
// elements (the model's RecvSGL), SRQs (docs/rtl.md). In
// hca_transport: behind hca_rx_ack (rq_swap and rq_cmp its AtomicETH's data), its kc_*, wr_* and
// rd_* (client c of rd1) through hca_share_arb, its ack_* into hca_ack_tx (ack_atomic: an ATOMIC
// ACKNOWLEDGE), rw_* to hca_top's hca_rq, rc_* through hca_cpl_arb to hca_cqe_writer.
module hca_responder #(
    parameter integer QPN_W        = 3,  // 2^QPN_W contexts
    parameter integer ACK_COALESCE = 1,  // hca.ack_coalesce: AckReq packets one ACK may cover (1..1024)
    parameter integer RD_RES       = 16  // hca.max_rd_atomic: responder resources (READs kept) per context
) (
    input  wire         clk,
    input  wire         rst_n,
    input  wire         cfg_valid,
    output wire         cfg_ready,
    input  wire [23:0]  cfg_qpn,
    input  wire [23:0]  cfg_psn,
    input  wire [31:0]  cfg_pd,
    input  wire [2:0]   cfg_mtu,   // the path MTU, IBA's code 1..5 (256 << (code - 1) bytes)
    input  wire [4:0]   cfg_rnr,   // the QP's min_rnr_timer: the 5-bit code an RNR NAK carries
    input  wire         rq_valid,
    output wire         rq_ready,
    input  wire [23:0]  rq_qpn,
    input  wire [23:0]  rq_psn,
    input  wire [7:0]   rq_op,
    input  wire         rq_ackreq,
    input  wire [63:0]  rq_va,
    input  wire [31:0]  rq_rkey,
    input  wire [31:0]  rq_dlen,
    input  wire [12:0]  rq_len,
    input  wire [31:0]  rq_imm,    // ImmDt (a SEND or WRITE with immediate)
    input  wire [63:0]  rq_swap,   // AtomicETH: swap (CMP_SWAP) or add (FETCH_ADD) data
    input  wire [63:0]  rq_cmp,    // AtomicETH: compare data (CMP_SWAP)
    input  wire         pd_valid,
    input  wire [511:0] pd_data,
    output wire         pd_ready,
    output wire         kc_req_valid,
    input  wire         kc_req_ready,
    output wire [31:0]  kc_req_key,
    output wire [31:0]  kc_req_pd,
    output wire [3:0]   kc_req_need,
    output wire [63:0]  kc_req_addr,
    output wire [63:0]  kc_req_len,
    input  wire         kc_rsp_valid,
    output wire         kc_rsp_ready,
    input  wire [2:0]   kc_rsp_result,
    output wire         rw_req_valid,  // take the next receive WQE of QP rw_req_qpn's receive queue
    input  wire         rw_req_ready,
    output wire [23:0]  rw_req_qpn,
    input  wire         rw_rsp_valid,
    output wire         rw_rsp_ready,
    input  wire         rw_rsp_ok,     // 0: the receive queue is empty (nothing taken)
    input  wire [15:0]  rw_rsp_index,  // the WQE's index in its queue (the CQE's wqe_counter)
    input  wire [63:0]  rw_rsp_addr,   // its one scatter element: address, length, L_Key
    input  wire [31:0]  rw_rsp_len,
    input  wire [31:0]  rw_rsp_lkey,
    input  wire [5:0]   rw_rsp_nsge,   // its elements (hca_rq's hca.DecodeRecvWQE): 0 none, 2.. a list
    // A list's elements (hca_rq's store, combinationally; never while a take is pending): element
    // rw_sge_k of WQE rw_sge_index of context rw_sge_q
    output wire         rw_sge_valid,
    output wire [QPN_W-1:0] rw_sge_q,
    output wire [15:0]  rw_sge_index,
    output wire [4:0]   rw_sge_k,
    input  wire [63:0]  rw_sge_addr,
    input  wire [31:0]  rw_sge_len,
    input  wire [31:0]  rw_sge_lkey,
    output wire         rw_req_flush,  // a flush take: the oldest WQE not taken, answered at once
    input  wire [(1<<QPN_W)-1:0] rw_flush, // contexts with WQEs announced and not taken (hca_rq's)
    output wire [(1<<QPN_W)-1:0] qp_err,   // contexts in ERR (hca_rq's rq_err)
    input  wire [(1<<QPN_W)-1:0] req_err,  // contexts whose requester went to ERR (hca_requester's qp_err)
    // DMA client rd1's contract (hca_ack_tx's rd_*): an atomic's 8 bytes read as their 64-byte block
    output wire         rd_req_valid,
    input  wire         rd_req_ready,
    output wire [63:0]  rd_req_addr,
    output wire [15:0]  rd_req_len,
    input  wire         rd_rsp_valid,  // no back-pressure: one block answers the request
    input  wire [511:0] rd_rsp_data,
    output wire         wr_valid,
    output wire [63:0]  wr_addr,
    output wire [15:0]  wr_len,
    output wire [511:0] wr_data,
    output wire [63:0]  wr_be,     // bit 63 - k for the byte at wr_data[511-8k -: 8]
    input  wire         wr_ready,
    output reg          ack_valid,
    input  wire         ack_ready,
    output reg  [23:0]  ack_qpn,
    output reg  [23:0]  ack_psn,
    output reg  [7:0]   ack_syn,
    output reg  [23:0]  ack_msn,
    output reg          ack_read,  // a READ reply, not an ACK: responses from ack_psn, ack_len bytes at ack_va
    output reg  [63:0]  ack_va,
    output reg  [31:0]  ack_len,
    output reg  [2:0]   ack_mtu,   // the context's path MTU code
    output reg          ack_mid,   // a replay from inside the READ: MIDDLE ... LAST, no FIRST
    output reg          ack_atomic, // an ATOMIC ACKNOWLEDGE (AETH + AtomicAckETH ack_orig), not an ACK
    output reg  [63:0]  ack_orig,  // the atomic's original value (AtomicAckETH)
    output reg  [7:0]   ack_res,   // a READ reply's responder resource (its index in the context)
    output reg  [23:0]  ack_last,  // and its last response's PSN
    // A READ reply's last response gone to the port (hca_ack_tx): its QP, resource and PSN
    // (hca.Responder.ReadResponseSent of the resource's last response frees it for claimRes)
    input  wire         fin_valid,
    input  wire [23:0]  fin_qpn,
    input  wire [7:0]   fin_res,
    input  wire [23:0]  fin_psn,
    output reg          rc_valid,  // a receive completion (hca_cqe_writer's cpl_* fields)
    input  wire         rc_ready,
    output reg  [23:0]  rc_qpn,
    output reg  [3:0]   rc_opcode, // 1 RESP_WR_IMM, 2 RESP_SEND, 3 RESP_SEND_IMM (hca.CQEResp*)
    output reg  [7:0]   rc_status, // ibv_wc_status: 0, 1 LOC_LEN_ERR, 4 LOC_PROT_ERR, 9 REM_INV_REQ_ERR, 10 REM_ACCESS_ERR
    output reg  [15:0]  rc_index,  // the receive WQE's index
    output reg  [31:0]  rc_len,    // byte_len
    output reg  [31:0]  rc_imm,
    output reg  [15:0]  cnt_acks,     // ACKs sent (hca Counters.Acks)
    output reg  [15:0]  cnt_naks,     // NAKs sent (Counters.Naks)
    output reg  [15:0]  cnt_dup,      // duplicates re-ACKed
    output reg  [15:0]  cnt_seq_drop, // packets ahead dropped after their gap's NAK
    output reg  [15:0]  cnt_err_drop, // packets for a context in ERR
    output reg  [15:0]  cnt_no_qp,    // packets for a QPN no context holds
    output reg  [15:0]  cnt_todo      // packets of a kind not handled yet, dropped
);
    localparam integer NQ = 1 << QPN_W;
    localparam [10:0] COAL = ACK_COALESCE[10:0];
    localparam [3:0] S_IDLE = 4'd0, S_DEC = 4'd1, S_KREQ = 4'd2, S_KRSP = 4'd3, S_XFER = 4'd4,
                     S_ACK = 4'd5, S_FLUSH = 4'd6, S_FACK = 4'd7, S_DUP = 4'd8, S_RREQ = 4'd9, S_RRSP = 4'd10,
                     S_ARD = 4'd11, S_ARSP = 4'd12, S_AWR = 4'd13, S_FREQ = 4'd14, S_FRSP = 4'd15;
    localparam [7:0] SYN_ACK = 8'h1F, SYN_SEQ = 8'h60, SYN_INV = 8'h61, SYN_ACC = 8'h62, SYN_OPE = 8'h63,
                     SYN_RNR = 8'h20;

    // ---- contexts ----
    reg  [NQ-1:0] ctx_valid, ctx_err, ctx_inmsg, ctx_naks;
    reg  [NQ-1:0] ctx_insend;          // the message under way is a SEND (else a WRITE)
    reg  [4:0]    ctx_rnr  [0:NQ-1];   // min_rnr_timer
    reg  [31:0]   ctx_wlen [0:NQ-1];   // the WRITE's RETH DMA length (a WRITE with immediate's byte_len)
    // The receive WQE the SEND under way (or the last one taken) scatters into: one element.
    reg  [63:0]   ctx_raddr [0:NQ-1];
    reg  [31:0]   ctx_rlen  [0:NQ-1];
    reg  [31:0]   ctx_rlkey [0:NQ-1];
    reg  [15:0]   ctx_ridx  [0:NQ-1];
    reg  [31:0]   ctx_roff  [0:NQ-1];  // the message's bytes placed so far (a SEND's, or a WRITE's)
    // A WQE of several elements (ctx_rlist; its length ctx_rlen their sum): read on rw_sge_*, a SEND
    // scattered over them in order (hca sglSlice), from element ctx_rk, ctx_reo bytes into it.
    reg  [NQ-1:0] ctx_rlist;
    reg  [4:0]    ctx_rk    [0:NQ-1];
    reg  [31:0]   ctx_reo   [0:NQ-1];
    reg  [23:0]   ctx_qpn  [0:NQ-1];
    reg  [23:0]   ctx_epsn [0:NQ-1];
    reg  [23:0]   ctx_msn  [0:NQ-1];
    reg  [31:0]   ctx_pd   [0:NQ-1];
    reg  [63:0]   ctx_wva  [0:NQ-1];   // the WRITE's next byte
    reg  [10:0]   ctx_pend [0:NQ-1];   // AckReq packets not yet acknowledged
    reg  [23:0]   ctx_ppsn [0:NQ-1];   // the PSN a coalesced ACK carries
    reg  [2:0]    ctx_mtu  [0:NQ-1];   // the path MTU code
    localparam integer RW = RD_RES > 1 ? $clog2(RD_RES) : 1;
    localparam integer NR = NQ * RD_RES;
    localparam integer RLASTI = RD_RES - 1;
    localparam [RW-1:0] RLAST = RLASTI[RW-1:0];
    reg  [RW-1:0] ctx_rnext [0:NQ-1];  // the resource the next READ takes (the oldest)
    // Responder resources (hca rdAtomicRes): per context RD_RES READs as first executed, a ring.
    reg  [NR-1:0] res_used;
    reg  [23:0]   res_first [0:NR-1];  // the READ's PSN
    reg  [23:0]   res_last  [0:NR-1];  // its last response's PSN
    reg  [63:0]   res_va    [0:NR-1];  // the RETH's VA, R_Key, DMA length
    reg  [31:0]   res_len   [0:NR-1];
    reg  [31:0]   res_rkey  [0:NR-1];
    reg  [NR-1:0] res_atom;            // an atomic's resource (its PSN only), not a READ's
    reg  [63:0]   res_orig  [0:NR-1];  // the atomic's original value, for a duplicate (hca SaveAtomic)
    // A READ's last response has gone to the port (fin_*: hca_ack_tx): the resource is free for the
    // next READ or atomic (hca rdAtomicRes.inUse: a READ some of whose responses never went out).
    reg  [NR-1:0] res_sent;

    // ---- the packet in hand ----
    reg  [3:0]   state;
    reg  [23:0]  h_qpn, h_psn;
    reg  [7:0]   h_op;
    reg          h_ackreq;
    reg  [63:0]  h_va;
    reg  [31:0]  h_rkey, h_dlen;
    reg  [12:0]  h_len;
    reg  [31:0]  h_imm;
    reg  [5:0]   h_nsge;   // the WQE this packet took: its elements
    reg  [4:0]   h_kk;     // the element whose L_Key is being checked (a list)
    reg  [63:0]  h_swap, h_cmp;
    wire [QPN_W-1:0] ix = h_qpn[QPN_W-1:0];

    wire         hit    = ctx_valid[ix] && ctx_qpn[ix] == h_qpn;
    wire [23:0]  d      = h_psn - ctx_epsn[ix];
    wire         ahead  = d != 24'd0 && !d[23];
    wire         behind = d[23];
    wire         rc_req = h_op[7:5] == 3'd0 && (h_op <= 8'h0C || h_op == 8'h13 || h_op == 8'h14 ||
                                                h_op == 8'h16 || h_op == 8'h17);
    wire         first  = h_op == 8'h00 || h_op == 8'h04 || h_op == 8'h05 || h_op == 8'h17 || h_op == 8'h06 ||
                          h_op == 8'h0A || h_op == 8'h0B || h_op == 8'h0C || h_op == 8'h13 || h_op == 8'h14;
    wire         is_send = h_op <= 8'h05 || h_op == 8'h16 || h_op == 8'h17;
    wire         rd_atom = h_op == 8'h0C || h_op == 8'h13 || h_op == 8'h14;
    wire         is_wr  = h_op >= 8'h06 && h_op <= 8'h0B;                 // RDMA WRITE, with immediate or not
    wire         wimm   = h_op == 8'h09 || h_op == 8'h0B;                  // LAST / ONLY with immediate
    wire         has_reth = h_op == 8'h06 || h_op == 8'h0A || h_op == 8'h0B;
    wire         sendp  = h_op <= 8'h05;                                   // a SEND this block places (not _INV)
    wire         s_imm  = h_op == 8'h03 || h_op == 8'h05;
    wire         last   = h_op == 8'h08 || h_op == 8'h0A || wimm || h_op == 8'h02 || s_imm || h_op == 8'h04;
    wire         bad_seq = first == ctx_inmsg[ix] || (ctx_inmsg[ix] && ctx_insend[ix] != is_send);
    // A receive WQE is taken by a SEND's first packet and by a WRITE with immediate (hca Receive's
    // needRecv), before the R_Key check (rxe check_resource, then check_rkey).
    wire         need_rw = (sendp && first) || wimm;
    // A SEND MIDDLE or LAST past its receive buffer (recvOff + bytes > the WQE's length).
    wire [32:0]  r_end   = {1'b0, first ? 32'd0 : ctx_roff[ix]} + {20'd0, h_len};
    wire         s_over  = sendp && !first && r_end > {1'b0, ctx_rlen[ix]};
    wire         l_chk   = sendp;                                          // a key check of the WQE's L_Key
    wire         is_rd  = h_op == 8'h0C;
    wire         is_atm = h_op == 8'h13 || h_op == 8'h14;               // CMP_SWAP, FETCH_ADD

    // ---- READ: its PSNs (hca.PacketCount: ceil(len / MTU), at least 1) and resources ----
    wire [3:0]   mtu_sh  = {1'b0, ctx_mtu[ix]} + 4'd7;                  // MTU = 2^mtu_sh bytes
    wire [32:0]  dl_up   = {1'b0, h_dlen} + ((33'd1 << mtu_sh) - 33'd1);
    wire [32:0]  dl_pk   = dl_up >> mtu_sh;
    wire [23:0]  n_pk    = h_dlen == 32'd0 ? 24'd1 : dl_pk[23:0];
    wire [23:0]  rd_last = h_psn + n_pk - 24'd1;

    // ---- RDMA WRITE lengths (hca packetLengthOK): a FIRST or MIDDLE carries exactly the
    // path MTU, a LAST 1..MTU bytes, an ONLY 0..MTU; the WRITE's packets exactly its RETH's DMA length
    // (ctx_wlen, saved at the FIRST; ctx_roff its bytes placed so far): none passes it, the LAST or
    // ONLY ends it ----
    wire         is_pw    = h_op == 8'h06 || h_op == 8'h07 || h_op == 8'h08 || h_op == 8'h0A;
    wire [13:0]  mtu_b    = 14'd1 << mtu_sh;
    wire [13:0]  len14    = {1'b0, h_len};
    wire         pmtu_bad = (first && last) ? len14 > mtu_b :
                            !last ? len14 != mtu_b : (h_len == 13'd0 || len14 > mtu_b);
    wire [32:0]  w_tot    = {1'b0, has_reth ? h_dlen : ctx_wlen[ix]};
    wire [32:0]  w_done   = (first ? 33'd0 : {1'b0, ctx_roff[ix]}) + {20'd0, h_len};
    wire         dlen_bad = w_done > w_tot || (last && w_done != w_tot);
    // A SEND (not _INV: todo here) keeps the same packet lengths, a WRITE with immediate both rules
    // (hca packetLengthOK). A packet that takes a receive WQE (need_rw) is judged once the WQE is
    // taken (S_RRSP: an empty queue's RNR NAK first, rxe check_resource before check_length); a
    // SEND MIDDLE or LAST completes the WQE its FIRST took (REM_INV_REQ_ERR, byte_len 0).
    wire         bad_len  = (is_wr && (pmtu_bad || dlen_bad)) || (sendp && pmtu_bad);
    // findRes: the lowest resource of the context whose PSNs hold the duplicate's PSN, found by a
    // scan (S_DUP), one resource a cycle from the first (so one read port on the resources; a
    // duplicate READ waits up to RD_RES cycles, a rare case).
    reg  [RW-1:0] s_j;                                       // the resource the scan looks at
    reg  [23:0]  d_first;                                    // the found one's first PSN
    wire [31:0]  f_e     = ix * RD_RES + {{(32-RW){1'b0}}, s_j};
    wire [23:0]  f_lo    = h_psn - res_first[f_e];           // psnDiff(psn, first) >= 0: bit 23 clear
    wire [23:0]  f_hi    = h_psn - res_last[f_e];            // psnDiff(psn, last) <= 0
    wire         f_hit   = state == S_DUP && res_used[f_e] && !f_lo[23] && (f_hi == 24'd0 || f_hi[23]);
    wire         f_end   = s_j == RLAST;
    wire [63:0]  f_va    = res_va[f_e];
    wire [31:0]  f_len   = res_len[f_e];
    wire [23:0]  f_dl    = rd_last - res_last[f_e];
    // The duplicate must lie within the original: its VA range, R_Key, and its last PSN.
    wire         dup_ok  = h_va >= f_va && h_dlen <= f_len &&
                           {1'b0, h_va} + {33'd0, h_dlen} <= {1'b0, f_va} + {33'd0, f_len} &&
                           h_rkey == res_rkey[f_e] && (f_dl == 24'd0 || f_dl[23]) && !res_atom[f_e];
    wire         rd_dup  = f_hit && dup_ok && is_rd;
    // A duplicate atomic whose resource holds it: answered with the saved original value.
    wire         at_dup  = f_hit && is_atm && res_atom[f_e];

    // ---- the flush of a context in ERR: the lowest with WQEs to flush ----
    // The QP is in ERR when its responder failed (ctx_err) or its requester did (req_err: IBA's Error
    // state is the whole QP's, hca.Device.requesterErr): packets dropped, receive WQEs flushed.
    wire [NQ-1:0] q_err  = ctx_err | req_err;
    wire [NQ-1:0] fl_req = rw_flush & q_err & ctx_valid;
    wire          fl_any = |fl_req;
    reg  [QPN_W-1:0] fl_q;
    integer      fi;
    always @* begin
        fl_q = {QPN_W{1'b0}};
        for (fi = NQ - 1; fi >= 0; fi = fi - 1)
            if (fl_req[fi]) fl_q = fi[QPN_W-1:0];
    end
    assign qp_err       = q_err & ctx_valid;
    assign rw_req_flush = state == S_FREQ;

    // The decision in S_DEC (one cycle after the header is taken).
    wire         in_seq  = hit && !q_err[ix] && rc_req && !ahead && !behind;
    wire         rd_seq  = in_seq && !bad_seq && is_rd;
    wire         go_kc   = (in_seq && !bad_seq && is_wr && has_reth && h_dlen != 32'd0) ||
                           (rd_seq && h_dlen != 32'd0) || (in_seq && !bad_seq && is_atm);
    // The receive WQE's answer (S_RRSP): none posted (an RNR NAK), a first SEND packet longer than
    // its buffer (LOC_LEN_ERR), or on to the key check (a SEND's L_Key; a WRITE ONLY with
    // immediate's R_Key unless of length 0), or taken at once (a WRITE with immediate otherwise).
    wire         rw_in   = state == S_RRSP && rw_rsp_valid;
    wire         rw_rnr  = rw_in && !rw_rsp_ok;
    // mlx5's empty scatter list (one data segment of 0 bytes with MLX5_INVALID_LKEY 0x100, what
    // libmlx5 writes for a receive WR of no element): no element (hca.DecodeRecvWQE), so no key
    // check; a SEND of 0 bytes completes into it, a longer one is LOC_LEN_ERR (hca Receive).
    wire         rw_empty = rw_rsp_nsge == 6'd0;
    wire         rw_kc   = wimm ? has_reth && h_dlen != 32'd0 : {19'd0, h_len} <= rw_rsp_len && !rw_empty;
    wire         rw_nil  = rw_in && rw_rsp_ok && !wimm && rw_empty && h_len == 13'd0 && !bad_len; // taken, nothing checked
    wire         rw_over = rw_in && rw_rsp_ok && !wimm && !rw_kc && !bad_len && !rw_nil;
    wire         rw_blen = rw_in && rw_rsp_ok && bad_len;             // a length error: REM_INV_REQ_ERR
    // A list's L_Keys: the next element after one that passed, until the last (h_nsge of them).
    wire         k_more  = l_chk && ctx_rlist[ix] && {1'b0, h_kk} + 6'd1 < h_nsge;
    wire         k_next  = state == S_KRSP && kc_rsp_valid && kc_rsp_result == 3'd0 && k_more;
    wire         commit  = (state == S_DEC && in_seq && !bad_seq && !bad_len && ((is_wr && !need_rw && !go_kc) ||
                                                                     (sendp && !first && !s_over))) ||
                           (rw_in && rw_rsp_ok && wimm && !rw_kc && !bad_len) || rw_nil ||
                           (state == S_KRSP && kc_rsp_valid && kc_rsp_result == 3'd0 && !is_rd && !is_atm) && !k_next;
    // claimRes: a new READ or atomic takes the context's oldest resource (ctx_rnext), unless that
    // still holds a READ one of whose responses has never gone to the port (r_busy: the requester
    // has more than max_rd_atomic outstanding): NAK invalid request at its PSN, the context to ERR
    // (hca Receive: claimRes's !ok, nak SynNAKInvReq, fatal), nothing else done.
    wire [31:0]  r_e     = ix * RD_RES + {{(32-RW){1'b0}}, ctx_rnext[ix]};
    wire         r_busy  = res_used[r_e] && !res_atom[r_e] && !res_sent[r_e];
    wire         r_new   = (state == S_DEC && rd_seq && h_dlen == 32'd0) ||
                           (state == S_KRSP && kc_rsp_valid && kc_rsp_result == 3'd0 && is_rd && !behind);
    wire         r_full  = r_new && r_busy;
    // A READ accepted (a new one: !behind) or a duplicate's replay: its reply goes on ack_*.
    wire         rcommit = (r_new && !r_busy) || (rd_dup && h_dlen == 32'd0) ||
                           (state == S_KRSP && kc_rsp_valid && kc_rsp_result == 3'd0 && is_rd && behind);
    // A reply's last response out (fin_*): the resource it names, if it still holds that READ.
    wire [31:0]  fin_e   = {{(32-QPN_W){1'b0}}, fin_qpn[QPN_W-1:0]} * RD_RES + {24'd0, fin_res};
    wire         fin_hit = fin_valid && res_used[fin_e] && !res_atom[fin_e] && res_last[fin_e] == fin_psn;
    reg  [RW-1:0] d_res;                                     // the found one's index (a replay's resource)
    // The resource after it (a READ or an atomic taking one), and the MSN after an atomic.
    wire [RW-1:0] rnext_n = ctx_rnext[ix] == RLAST ? {RW{1'b0}} : ctx_rnext[ix] + {{(RW-1){1'b0}}, 1'b1};
    wire [23:0]  msn_1   = ctx_msn[ix] + 24'd1;
    wire         k_fail  = state == S_KRSP && kc_rsp_valid && kc_rsp_result != 3'd0;
    // An atomic past its R_Key check: a VA not 8-byte aligned, or its resource in use (claimRes), is
    // NAK invalid request (class C, as the model's Receive after the key check); else it takes its
    // resource (acommit) and runs: its block read (S_ARD, S_ARSP), the result written back (S_AWR),
    // the ATOMIC ACKNOWLEDGE.
    wire         a_ok    = state == S_KRSP && kc_rsp_valid && kc_rsp_result == 3'd0 && is_atm;
    wire         a_mis   = a_ok && (h_va[2:0] != 3'd0 || r_busy);
    wire         acommit = a_ok && !a_mis;
    reg  [31:0]  a_slot;                                     // the atomic's resource
    reg  [63:0]  a_new;                                      // the value written back
    wire [5:0]   a_o     = h_va[5:0];                        // its first lane
    wire [511:0] a_sh    = rd_rsp_data << {a_o, 3'd0};       // lane a_o to lane 0
    reg  [63:0]  a_orig;                                     // little-endian: byte i in lane a_o + i
    reg  [511:0] a_wdat;
    integer      ai;
    always @* begin
        a_wdat = 512'd0;
        for (ai = 0; ai < 8; ai = ai + 1) begin
            a_orig[8*ai +: 8] = a_sh[511-8*ai -: 8];
            a_wdat[511-8*ai -: 8] = a_new[8*ai +: 8];
        end
    end
    wire [63:0]  a_res   = h_op == 8'h14 ? a_orig + h_swap : (a_orig == h_cmp ? h_swap : a_orig);
    wire         a_wr    = state == S_AWR;
    assign rd_req_valid = state == S_ARD;
    assign rd_req_addr  = h_va;      // the atomic's 8 bytes, as the model reads them (rd1 returns
    assign rd_req_len   = 16'd8;     // the block they lie in: 8-byte aligned, never across one)
    wire [63:0]  wva     = sendp ? ctx_raddr[ix] + {32'd0, ctx_roff[ix]} : has_reth ? h_va : ctx_wva[ix];
    wire [15:0]  r_idx   = state == S_RRSP ? rw_rsp_index : ctx_ridx[ix];
    wire [23:0]  msn_n   = ctx_msn[ix] + {23'd0, last};
    wire         ack_now = h_ackreq && ctx_pend[ix] + 11'd1 >= COAL;

    // ---- the payload: written (x_wr) or dropped ----
    reg          x_wr, x_first;
    reg  [63:0]  x_addr;
    reg  [7:0]   x_bt;     // beats left to write
    reg  [7:0]   x_src;    // payload blocks left to take
    reg  [5:0]   x_e;      // the last beat's last lane
    // A list's parts (one write per element part, hca sglSlice): the rotation (the part's address -
    // its first payload byte, mod 64), the payload blocks its beats read (x_psrc), its last one
    // kept for the next part (x_keep), a first block read before its first beat (x_prime: its
    // address's lane below its first byte's), the packet's bytes placed with it (x_pdone), the
    // packet scattered over a list (x_list) and the next part being looked for (x_nx).
    reg  [5:0]   x_rot;
    reg  [7:0]   x_psrc;
    reg          x_keep, x_prime, x_list, x_nx;
    reg  [12:0]  x_pdone;
    reg  [15:0]  x_len;    // the write's bytes, whole blocks
    reg  [511:0] x_prev;   // the previous block, rotated
    wire [5:0]   s       = x_rot;
    wire [511:0] r0 = s[0] ? {pd_data[7:0],   pd_data[511:8]}   : pd_data;  // lane k <- lane k - 1
    wire [511:0] r1 = s[1] ? {r0[15:0],  r0[511:16]}  : r0;
    wire [511:0] r2 = s[2] ? {r1[31:0],  r1[511:32]}  : r1;
    wire [511:0] r3 = s[3] ? {r2[63:0],  r2[511:64]}  : r2;
    wire [511:0] r4 = s[4] ? {r3[127:0], r3[511:128]} : r3;
    wire [511:0] rot = s[5] ? {r4[255:0], r4[511:256]} : r4;
    wire [63:0]  ge_s    = {64{1'b1}} >> s;                  // bit 63 - k: lane k >= s
    wire [63:0]  ge_a    = {64{1'b1}} >> x_addr[5:0];        // the first beat's lanes (>= s unless a list's part)
    reg  [511:0] x_out;
    integer      k;
    always @* begin
        for (k = 0; k < 64; k = k + 1)
            x_out[511-8*k -: 8] = ge_s[63-k] ? rot[511-8*k -: 8] : x_prev[511-8*k -: 8];
    end
    wire         x_src_on = x_src != 8'd0;
    wire         x_busy   = state == S_XFER;
    wire         x_rd     = x_psrc != 8'd0;                  // this beat reads a payload block
    assign wr_valid = a_wr || (x_busy && x_wr && !x_nx && !x_prime && x_bt != 8'd0 && (!x_rd || pd_valid));
    wire         w_take   = wr_valid && wr_ready && !a_wr;
    assign wr_addr  = a_wr ? {h_va[63:6], 6'd0} : x_addr;
    assign wr_len   = a_wr ? 16'd64 : x_len;
    assign wr_data  = a_wr ? a_wdat >> {a_o, 3'd0} : x_out;
    assign wr_be    = a_wr ? {8'hFF, 56'd0} >> a_o :
                      (x_first ? ge_a : {64{1'b1}}) &
                      (x_bt == 8'd1 ? ~({64{1'b1}} >> ({1'b0, x_e} + 7'd1)) : {64{1'b1}});
    // A block read by a beat (or a part's priming) is popped unless the next part starts in it.
    wire         x_use    = x_busy && x_wr && !x_nx && x_rd && (x_prime ? pd_valid : w_take);
    wire         x_hold   = x_keep && x_psrc == 8'd1;
    assign pd_ready = x_wr ? x_use && !x_hold : x_busy && x_src_on;
    // Done when the cycle leaves no beat to write and no block to take (and, for a list, no byte of
    // the packet without its part).
    wire         x_pop    = pd_ready && pd_valid;
    wire [7:0]   bt_n     = x_bt - {7'd0, w_take};
    wire [7:0]   src_n    = x_src - {7'd0, x_pop};
    wire         x_pend   = x_busy && !x_nx && !x_prime && bt_n == 8'd0;  // the part's beats done
    wire         x_more   = x_list && x_pdone != h_len;
    wire         x_done   = x_pend && src_n == 8'd0 && !x_more;
    // The next part (x_nx, a cycle per element looked at): the element at the cursor, what is left
    // of it and of the packet; an element with nothing left is passed over (hca sglSlice).
    wire [31:0]  e_left   = rw_sge_len - ctx_reo[ix];
    wire [12:0]  k_left   = h_len - x_pdone;
    wire         e_skip   = e_left == 32'd0;
    wire [12:0]  k_take   = e_left < {19'd0, k_left} ? e_left[12:0] : k_left;
    wire [63:0]  k_a      = rw_sge_addr + {32'd0, ctx_reo[ix]};
    wire [13:0]  k_sa     = {8'd0, k_a[5:0]} + {1'b0, k_take};           // the part's beats: ceil(/ 64)
    wire [13:0]  k_ss     = {8'd0, x_pdone[5:0]} + {1'b0, k_take};       // its blocks: ceil(/ 64)
    wire [7:0]   k_bt     = k_sa[13:6] + {7'd0, k_sa[5:0] != 6'd0};
    wire         k_wrap   = k_a[5:0] < x_pdone[5:0];
    wire [7:0]   k_src    = k_ss[13:6] + {7'd0, k_ss[5:0] != 6'd0};   // read by the priming and the beats
    wire [12:0]  k_end    = x_pdone + k_take;
    wire         k_on     = x_busy && x_nx && !e_skip;

    // ---- the ACK or NAK the packet owes ----
    reg          p_ack;
    reg  [7:0]   p_syn;
    reg  [23:0]  p_psn, p_msn;
    reg          p_read, p_mid;
    reg          p_atom;       // an ATOMIC ACKNOWLEDGE with p_orig
    reg  [63:0]  p_orig;
    reg          p_cqe;        // a receive completion owed
    reg  [3:0]   p_cop;
    reg  [7:0]   p_cst;
    reg  [15:0]  p_cidx;
    reg  [31:0]  p_clen, p_cimm;
    wire         cq_free  = !rc_valid || rc_ready;
    wire         s_go     = (!p_ack || out_free) && (!p_cqe || cq_free);
    reg  [63:0]  p_va;
    reg  [RW-1:0] p_res;       // a reply's resource and last response's PSN (ack_res, ack_last)
    reg  [23:0]  p_last;
    wire [31:0]  p_res32 = {{(32-RW){1'b0}}, p_res};
    reg  [31:0]  p_len;
    wire         out_free = !ack_valid || ack_ready;

    assign cfg_ready    = state == S_IDLE && !fl_any;
    assign rq_ready     = state == S_IDLE && !cfg_valid && !fl_any;
    assign kc_req_valid = state == S_KREQ;
    // A SEND's first packet checks its receive WQE's L_Key over the whole buffer for LOCAL_WRITE (1)
    // (hca.QP.CheckLKey); a WRITE's or READ's RETH its R_Key.
    // A list: element h_kk's (rw_sge_*), each over its whole length, in order (hca recvKeyLookups).
    wire         k_list = l_chk && ctx_rlist[ix];
    assign rw_sge_valid = (state == S_KREQ && k_list) || (x_busy && x_nx);
    assign rw_sge_q     = ix;
    assign rw_sge_index = ctx_ridx[ix];
    assign rw_sge_k     = state == S_KREQ ? h_kk : ctx_rk[ix];
    assign kc_req_key   = k_list ? rw_sge_lkey : l_chk ? ctx_rlkey[ix] : h_rkey;
    assign kc_req_pd    = ctx_pd[ix];
    assign kc_req_need  = l_chk ? 4'd1 : is_rd ? 4'd4 : is_atm ? 4'd8 : 4'd2; // LOCAL_WRITE, REMOTE_READ, REMOTE_ATOMIC, REMOTE_WRITE (hca.Access*)
    assign kc_req_addr  = k_list ? rw_sge_addr : l_chk ? ctx_raddr[ix] : h_va;
    assign kc_req_len   = k_list ? {32'd0, rw_sge_len} : l_chk ? {32'd0, ctx_rlen[ix]} : is_atm ? 64'd8 : {32'd0, h_dlen};
    assign kc_rsp_ready = state == S_KRSP;
    assign rw_req_valid = state == S_RREQ || state == S_FREQ;
    assign rw_req_qpn   = h_qpn;
    // A flush's answer is taken with its completion, so only when the output register is free.
    assign rw_rsp_ready = state == S_RRSP || (state == S_FRSP && cq_free);

    wire [7:0]   n_blk  = {1'b0, h_len[12:6]} + {7'd0, h_len[5:0] != 6'd0};   // ceil(n / 64)
    wire [13:0]  n_sum  = {8'd0, wva[5:0]} + {1'b0, h_len};                  // s + n
    wire [7:0]   n_beat = n_sum[13:6] + {7'd0, n_sum[5:0] != 6'd0};           // ceil((s + n) / 64)

    function [15:0] sat;
        input [15:0] v;
        sat = (v == 16'hFFFF) ? v : v + 16'd1;
    endfunction

    // The control state (the engine, the contexts' flags, the owed ACK's flag, the transfer's counts,
    // the counters) resets, asynchronously as every other block of hca_top; a context's other fields
    // are written by cfg_* before they are read (every use needs ctx_valid), and the packet's fields
    // before the engine leaves S_IDLE, so those have no reset (the second block).
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            state <= S_IDLE;
            ctx_valid <= {NQ{1'b0}};
            ctx_err <= {NQ{1'b0}};
            ctx_inmsg <= {NQ{1'b0}};
            ctx_naks <= {NQ{1'b0}};
            ctx_insend <= {NQ{1'b0}};
            res_used <= {NR{1'b0}};
            res_sent <= {NR{1'b0}};
            ack_valid <= 1'b0;
            rc_valid <= 1'b0;
            p_ack <= 1'b0;
            p_cqe <= 1'b0;
            x_wr <= 1'b0;
            x_bt <= 8'd0;
            x_src <= 8'd0;
            x_psrc <= 8'd0;
            x_keep <= 1'b0;
            x_prime <= 1'b0;
            x_list <= 1'b0;
            x_nx <= 1'b0;
            x_rot <= 6'd0;
            x_pdone <= 13'd0;
            cnt_acks <= 16'd0; cnt_naks <= 16'd0; cnt_dup <= 16'd0; cnt_seq_drop <= 16'd0;
            cnt_err_drop <= 16'd0; cnt_no_qp <= 16'd0; cnt_todo <= 16'd0;
        end else begin
            if (ack_valid && ack_ready) ack_valid <= 1'b0;
            if (rc_valid && rc_ready) rc_valid <= 1'b0;
            case (state)
            S_IDLE: begin
                if (fl_any) begin
                    state <= S_FREQ;
                end else if (cfg_valid) begin
                    ctx_valid[cfg_qpn[QPN_W-1:0]] <= 1'b1;
                    ctx_err[cfg_qpn[QPN_W-1:0]]   <= 1'b0;
                    ctx_inmsg[cfg_qpn[QPN_W-1:0]] <= 1'b0;
                    ctx_naks[cfg_qpn[QPN_W-1:0]]  <= 1'b0;
                    ctx_insend[cfg_qpn[QPN_W-1:0]] <= 1'b0;
                    res_used[cfg_qpn[QPN_W-1:0]*RD_RES +: RD_RES] <= {RD_RES{1'b0}};
                end else if (rq_valid) begin
                    state <= S_DEC;
                end
            end
            S_DEC: begin
                // Unless committed below, the payload is dropped and nothing is owed.
                x_wr <= 1'b0;
                x_src <= n_blk;
                x_bt <= 8'd0;
                x_list <= 1'b0;
                x_nx <= 1'b0;
                x_prime <= 1'b0;
                x_keep <= 1'b0;
                p_ack <= 1'b0;
                p_cqe <= 1'b0;
                state <= S_XFER;
                if (!hit) begin
                    cnt_no_qp <= sat(cnt_no_qp);
                end else if (q_err[ix]) begin
                    cnt_err_drop <= sat(cnt_err_drop);
                end else if (!rc_req) begin
                    cnt_todo <= sat(cnt_todo);
                end else if (ahead) begin
                    if (ctx_naks[ix]) begin
                        cnt_seq_drop <= sat(cnt_seq_drop);
                    end else begin
                        ctx_naks[ix] <= 1'b1;
                        p_ack <= 1'b1;
                    end
                end else if (behind) begin
                    if (is_rd || is_atm) begin
                        // A duplicate READ: its resource looked for (S_DUP), then replayed from it
                        // (through the key check unless of length 0), else dropped (class D); a
                        // duplicate atomic answered from its resource's saved value, else dropped.
                        cnt_dup <= sat(cnt_dup);
                        state <= S_DUP;
                    end else begin
                        cnt_dup <= sat(cnt_dup);
                        p_ack <= 1'b1;
                    end
                end else begin
                    ctx_naks[ix] <= 1'b0;
                    if (bad_seq || (bad_len && !need_rw)) begin
                        ctx_err[ix] <= 1'b1;
                        p_ack <= 1'b1;
                        p_cqe <= !bad_seq && sendp;
                    end else if (!is_wr && !is_rd && !sendp && !is_atm) begin
                        cnt_todo <= sat(cnt_todo);
                    end else if (need_rw) begin
                        state <= S_RREQ;
                    end else if (s_over) begin
                        // Past the receive buffer: LOC_LEN_ERR, NAK invalid request, ERR.
                        ctx_err[ix] <= 1'b1;
                        p_ack <= 1'b1;
                        p_cqe <= 1'b1;
                    end else if (go_kc) begin
                        state <= S_KREQ;
                    end
                end
            end
            S_RREQ: if (rw_req_ready) state <= S_RRSP;
            S_FREQ: if (rw_req_ready) state <= S_FRSP;
            // The flushed WQE's completion waits for the output register; none left: idle again.
            S_FRSP: if (rw_rsp_valid && (!rw_rsp_ok || cq_free)) begin
                if (rw_rsp_ok) rc_valid <= 1'b1;
                state <= S_IDLE;
            end
            S_RRSP: if (rw_rsp_valid) begin
                state <= (rw_rsp_ok && rw_kc && !bad_len) ? S_KREQ : S_XFER;
                if (rw_rnr) p_ack <= 1'b1;
                if (rw_over || rw_blen) begin
                    ctx_err[ix] <= 1'b1;
                    p_ack <= 1'b1;
                    p_cqe <= 1'b1;
                end
            end
            S_DUP: if (f_hit) begin
                       state <= (rd_dup && h_dlen != 32'd0) ? S_KREQ : S_XFER;
                       if (at_dup) p_ack <= 1'b1;
                   end
                   else if (f_end) state <= S_XFER;
            S_KREQ: if (kc_req_ready) state <= S_KRSP;
            S_KRSP: if (kc_rsp_valid) state <= acommit ? S_ARD : S_XFER;
            S_ARD: if (rd_req_ready) state <= S_ARSP;
            S_ARSP: if (rd_rsp_valid) state <= S_AWR;
            S_AWR: if (wr_ready) begin
                p_ack <= 1'b1;
                state <= S_XFER;
            end
            S_XFER: begin
                if (w_take) x_bt <= x_bt - 8'd1;
                if (x_pop) x_src <= x_src - 8'd1;
                if (x_use) begin
                    x_psrc <= x_psrc - 8'd1;
                    x_prime <= 1'b0;
                end
                if (x_pend && x_more) x_nx <= 1'b1;
                if (k_on) begin
                    // The part: [x_pdone, k_end) of the packet at the element's next byte.
                    x_nx <= 1'b0;
                    x_bt <= k_bt;
                    x_psrc <= k_src;
                    x_prime <= k_wrap;
                    x_keep <= k_end[5:0] != 6'd0 && k_end != h_len;
                    x_pdone <= k_end;
                    x_rot <= k_a[5:0] - x_pdone[5:0];
                end
                if (x_done) state <= S_ACK;
            end
            S_ACK: if (!p_ack && !p_cqe) begin
                state <= S_FLUSH;
            end else if (s_go) begin
                if (p_cqe) rc_valid <= 1'b1;
                if (p_ack) begin
                    ack_valid <= 1'b1;
                    if (p_read || p_atom) ;
                    else if (p_syn == SYN_ACK) cnt_acks <= sat(cnt_acks);
                    else cnt_naks <= sat(cnt_naks);
                end
                state <= S_FLUSH;
            end
            S_FLUSH: state <= (hit && !rq_valid && ctx_pend[ix] != 11'd0) ? S_FACK : S_IDLE;
            S_FACK: if (out_free) begin
                ack_valid <= 1'b1;
                cnt_acks <= sat(cnt_acks);
                state <= S_IDLE;
            end
            default: state <= S_IDLE;
            endcase
            if (k_next) state <= S_KREQ;   // a list's next L_Key
            if (k_fail) begin
                ctx_err[ix] <= 1'b1;
                p_ack <= 1'b1;
                // A receive WQE taken completes with the error (LOC_PROT_ERR; a WRITE ONLY with
                // immediate's REM_ACCESS_ERR), as the model's Receive.
                p_cqe <= sendp || wimm;
            end
            if (commit) begin
                x_wr <= h_len != 13'd0;
                x_bt <= h_len != 13'd0 ? n_beat : 8'd0;
                // One write at wva, or a SEND into a list: its parts from the context's cursor.
                x_rot <= wva[5:0];
                x_psrc <= n_blk;
                x_keep <= 1'b0;
                x_prime <= 1'b0;
                x_pdone <= 13'd0;
                x_list <= sendp && ctx_rlist[ix] && h_len != 13'd0;
                x_nx <= sendp && ctx_rlist[ix] && h_len != 13'd0;
                ctx_inmsg[ix] <= !last;
                ctx_insend[ix] <= sendp;
                if (ack_now) p_ack <= 1'b1;
                if (last && (sendp || wimm)) p_cqe <= 1'b1;
            end
            if (fin_hit) res_sent[fin_e] <= 1'b1;
            if (rcommit) begin
                p_ack <= 1'b1;
                if (!behind) begin
                    res_used[r_e] <= 1'b1;
                    res_sent[r_e] <= 1'b0;   // after fin_hit: a stale reply's fin for it loses
                end
            end
            if (a_mis || r_full) begin
                ctx_err[ix] <= 1'b1;
                p_ack <= 1'b1;
            end
            if (acommit) res_used[r_e] <= 1'b1;
        end
    end

    always @(posedge clk) begin
        case (state)
        S_IDLE: begin
            if (fl_any) begin
                h_qpn <= ctx_qpn[fl_q];
            end else if (cfg_valid) begin
                ctx_qpn[cfg_qpn[QPN_W-1:0]]   <= cfg_qpn;
                ctx_epsn[cfg_qpn[QPN_W-1:0]]  <= cfg_psn;
                ctx_msn[cfg_qpn[QPN_W-1:0]]   <= 24'd0;
                ctx_pd[cfg_qpn[QPN_W-1:0]]    <= cfg_pd;
                ctx_wva[cfg_qpn[QPN_W-1:0]]   <= 64'd0;
                ctx_pend[cfg_qpn[QPN_W-1:0]]  <= 11'd0;
                ctx_ppsn[cfg_qpn[QPN_W-1:0]]  <= 24'd0;
                ctx_mtu[cfg_qpn[QPN_W-1:0]]   <= cfg_mtu;
                ctx_rnext[cfg_qpn[QPN_W-1:0]] <= {RW{1'b0}};
                ctx_rnr[cfg_qpn[QPN_W-1:0]]   <= cfg_rnr;
            end else if (rq_valid) begin
                h_qpn <= rq_qpn; h_psn <= rq_psn; h_op <= rq_op; h_ackreq <= rq_ackreq;
                h_va <= rq_va; h_rkey <= rq_rkey; h_dlen <= rq_dlen; h_len <= rq_len; h_imm <= rq_imm;
                h_swap <= rq_swap; h_cmp <= rq_cmp;
            end
        end
        S_DEC: begin
            s_j <= {RW{1'b0}};
            p_psn <= h_psn;
            p_msn <= ctx_msn[ix];
            p_read <= 1'b0;
            p_mid <= 1'b0;
            p_atom <= 1'b0;
            if (hit && !q_err[ix] && rc_req) begin
                if (ahead) begin
                    if (!ctx_naks[ix]) begin
                        p_syn <= SYN_SEQ; p_psn <= ctx_epsn[ix];
                    end
                end else if (behind) begin
                    if (!rd_atom) begin
                        p_syn <= SYN_ACK; p_psn <= ctx_epsn[ix] - 24'd1;
                    end
                end else if (bad_seq) begin
                    p_syn <= SYN_INV;
                end else if (bad_len && !need_rw) begin
                    // A SEND MIDDLE or LAST completes its WQE (a WRITE's packet: no CQE owed).
                    p_syn <= SYN_INV;
                    p_cop <= 4'd2; p_cst <= 8'd9; p_cidx <= ctx_ridx[ix]; p_clen <= 32'd0; p_cimm <= 32'd0;
                end else if (s_over) begin
                    p_syn <= SYN_INV;
                    p_cop <= 4'd2; p_cst <= 8'd1; p_cidx <= ctx_ridx[ix]; p_clen <= 32'd0; p_cimm <= 32'd0;
                end
            end
        end
        S_RRSP: if (rw_rsp_valid) begin
            if (!rw_rsp_ok) begin
                p_syn <= SYN_RNR | {3'd0, ctx_rnr[ix]};
            end else begin
                ctx_raddr[ix] <= rw_rsp_addr;
                ctx_rlen[ix]  <= rw_rsp_len;
                ctx_rlkey[ix] <= rw_rsp_lkey;
                ctx_ridx[ix]  <= rw_rsp_index;
                ctx_rlist[ix] <= rw_rsp_nsge > 6'd1;
                ctx_rk[ix]    <= 5'd0;
                ctx_reo[ix]   <= 32'd0;
                h_nsge        <= rw_rsp_nsge;
                h_kk          <= 5'd0;
                if (!wimm) ctx_roff[ix] <= 32'd0;
                if (rw_over) begin
                    p_syn <= SYN_INV;
                    p_cop <= 4'd2; p_cst <= 8'd1; p_cidx <= rw_rsp_index; p_clen <= 32'd0; p_cimm <= 32'd0;
                end
                if (rw_blen) begin
                    p_syn <= SYN_INV;
                    p_cop <= wimm ? 4'd1 : 4'd2; p_cst <= 8'd9; p_cidx <= rw_rsp_index;
                    p_clen <= 32'd0; p_cimm <= 32'd0;
                end
            end
        end
        S_FRSP: if (rw_rsp_valid && rw_rsp_ok && cq_free) begin
            // WR_FLUSH_ERR (hca.FlushRecvCQE): RESP_SEND, the WQE's index, byte_len and immediate 0.
            rc_qpn <= h_qpn; rc_opcode <= 4'd2; rc_status <= 8'd5; rc_index <= rw_rsp_index;
            rc_len <= 32'd0; rc_imm <= 32'd0;
        end
        S_DUP: begin
            s_j <= f_end ? s_j : s_j + {{(RW-1){1'b0}}, 1'b1};
            if (f_hit) begin
                d_first <= res_first[f_e];
                d_res <= s_j;
            end
            if (at_dup) begin
                // A duplicate atomic: the saved original value, the current MSN (hca duplicate,
                // Device.atomic's replay), nothing executed again.
                p_atom <= 1'b1; p_syn <= SYN_ACK; p_psn <= h_psn; p_msn <= ctx_msn[ix]; p_orig <= res_orig[f_e];
            end
        end
        S_ARSP: if (rd_rsp_valid) begin
            a_new <= a_res;
            p_orig <= a_orig;
            res_orig[a_slot] <= a_orig;
        end
        S_XFER: begin
            if (w_take) x_first <= 1'b0;
            if (x_pop || x_use) x_prev <= rot;
            if (x_nx && e_skip) begin
                ctx_rk[ix]  <= ctx_rk[ix] + 5'd1;
                ctx_reo[ix] <= 32'd0;
            end
            if (k_on) begin
                ctx_reo[ix] <= ctx_reo[ix] + {19'd0, k_take};
                x_first <= 1'b1;
                x_addr <= k_a;
                x_e <= k_sa[5:0] - 6'd1;
                x_len <= {2'd0, k_bt, 6'd0};
            end
        end
        S_ACK: if (s_go) begin
            if (p_ack) begin
                ack_qpn <= h_qpn; ack_psn <= p_psn; ack_syn <= p_syn; ack_msn <= p_msn;
                ack_atomic <= p_atom; ack_orig <= p_orig;
                ack_read <= p_read; ack_va <= p_va; ack_len <= p_len; ack_mtu <= ctx_mtu[ix]; ack_mid <= p_mid;
                ack_res <= p_res32[7:0]; ack_last <= p_last;
            end
            if (p_cqe) begin
                rc_qpn <= h_qpn; rc_opcode <= p_cop; rc_status <= p_cst; rc_index <= p_cidx;
                rc_len <= p_clen; rc_imm <= p_cimm;
            end
        end
        S_FACK: if (out_free) begin
            ack_qpn <= h_qpn; ack_psn <= ctx_ppsn[ix]; ack_syn <= SYN_ACK; ack_msn <= ctx_msn[ix];
            ack_read <= 1'b0;
            ack_mid <= 1'b0;
            ack_atomic <= 1'b0;
            ctx_pend[ix] <= 11'd0;
        end
        default: ;
        endcase
        if (a_mis || r_full) p_syn <= SYN_INV;   // at the packet's PSN, the current MSN (S_DEC's p_psn, p_msn)
        if (acommit) begin
            // The atomic accepted (hca Receive: claimRes, saveRes): one PSN, one message; the ACK
            // carries the MSN after it.
            a_slot <= r_e;
            p_atom <= 1'b1;
            p_syn <= SYN_ACK; p_psn <= h_psn; p_msn <= msn_1;
            ctx_msn[ix] <= msn_1;
            ctx_epsn[ix] <= ctx_epsn[ix] + 24'd1;
            ctx_rnext[ix] <= rnext_n;
            res_first[r_e] <= h_psn;
            res_last[r_e]  <= h_psn;
            res_atom[r_e]  <= 1'b1;
        end
        if (k_fail) begin
            p_syn <= l_chk ? SYN_OPE : SYN_ACC;
            p_cop <= l_chk ? 4'd2 : 4'd1; p_cst <= l_chk ? 8'd4 : 8'd10;
            p_cidx <= ctx_ridx[ix]; p_clen <= 32'd0; p_cimm <= 32'd0;
        end
        if (k_next) h_kk <= h_kk + 5'd1;
        if (commit) begin
            x_first <= 1'b1;
            x_addr <= wva;
            x_e <= n_sum[5:0] - 6'd1;
            x_len <= {2'd0, n_beat, 6'd0};
            if (!sendp) ctx_wva[ix] <= wva + {51'd0, h_len};
            if (has_reth) ctx_wlen[ix] <= h_dlen;
            if (sendp) ctx_roff[ix] <= r_end[31:0];
            else if (is_pw) ctx_roff[ix] <= w_done[31:0];
            // The receive completion (at LAST/ONLY): a SEND's bytes placed, a WRITE with immediate's
            // RETH DMA length (its FIRST's or this ONLY's), the immediate when the opcode has one.
            p_cop <= wimm ? 4'd1 : s_imm ? 4'd3 : 4'd2;
            p_cst <= 8'd0;
            p_cidx <= r_idx;
            p_clen <= wimm ? (has_reth ? h_dlen : ctx_wlen[ix]) : r_end[31:0];
            p_cimm <= (wimm || s_imm) ? h_imm : 32'd0;
            ctx_epsn[ix] <= ctx_epsn[ix] + 24'd1;
            ctx_msn[ix] <= msn_n;
            if (h_ackreq) begin
                ctx_ppsn[ix] <= h_psn;
                ctx_pend[ix] <= ack_now ? 11'd0 : ctx_pend[ix] + 11'd1;
            end
            if (ack_now) begin
                p_syn <= SYN_ACK; p_psn <= h_psn; p_msn <= msn_n;
            end
        end
        if (rcommit) begin
            // The reply (hca.Responder.startReply): from the request's PSN, its VA and length, the
            // MSN after the READ (a new one counts a message) or the current one (a replay).
            p_read <= 1'b1;
            p_syn <= SYN_ACK; p_psn <= h_psn; p_va <= h_va; p_len <= h_dlen;
            p_last <= rd_last;   // its last response's PSN: the resource's own when it frees it (fin_*)
            p_res <= !behind ? ctx_rnext[ix] : state == S_DUP ? s_j : d_res;
            if (!behind) begin
                p_msn <= ctx_msn[ix] + 24'd1;
                p_mid <= 1'b0;
                ctx_msn[ix] <= ctx_msn[ix] + 24'd1;
                ctx_epsn[ix] <= ctx_epsn[ix] + n_pk;
                ctx_rnext[ix] <= rnext_n;
                res_first[r_e] <= h_psn;
                res_last[r_e]  <= rd_last;
                res_va[r_e]    <= h_va;
                res_len[r_e]   <= h_dlen;
                res_rkey[r_e]  <= h_rkey;
                res_atom[r_e]  <= 1'b0;
            end else begin
                p_msn <= ctx_msn[ix];
                p_mid <= h_psn != (state == S_DUP ? res_first[f_e] : d_first);
            end
        end
    end
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, dl_pk[32:24], f_lo[22:0], f_e, r_e, r_end[32], a_slot, p_res32[31:8], fin_qpn[23:QPN_W], fin_e, 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule
