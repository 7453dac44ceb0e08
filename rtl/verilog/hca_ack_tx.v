// hca_ack_tx: the responder's ACKs and NAKs as ACKNOWLEDGE packets, its RDMA READ replies as READ
// RESPONSE packets and its atomics' answers as ATOMIC ACKNOWLEDGE packets, on hca_transport's transmit
// port, ahead of the requester's packets on their VL.
// Go model: hca.Device.sendAck, atomic and nextReadResponse (hca/rx.go) with hca.Responder.NextReadResponse:
// each packet addressed to the QP's peer (Device.address: SLID the port's, DLID the remote LID, SL
// and VL the QP's, DestQP the remote QPN), queued on the QP's VL in the response queue, which the VL
// offers ahead of its request queue (txVL.head), a READ reply staying at the queue's head until its
// last response is sent (trySend); rtl/cosim_respwire_test.go requires the packets on tx_* to be
// ib.AppendWire's of the model's, in the model's order.
//
// Contexts: 2^QPN_W in flops, indexed by a QPN's low bits, written on cfg_valid (hca_transport's
// qp_cfg_* write, taken with the requester's and the responder's): the path the requester's packets
// take, DLID, SLID, SL, VL, remote QPN (hca_requester's fields of the same write). hca_transport
// takes a context write only while no entry waits in hca_responder's output register and no reply
// is under way here (busy), so a packet is built with the context of the QP that made it.
//
// Entries on ack_* (valid/ready), taken one at a time, in order:
// - an ACK or NAK becomes one 64-byte beat: LRH (VL, LVer 0, SL, LNH 2 local, DLID, PktLen 7 words:
//   LRH 8 + BTH 12 + AETH 4 + ICRC 4, SLID), BTH (OpCode 0x11, SE 0, M 0, PadCnt 0, TVer 0, P_Key
//   0xFFFF, DestQP the remote QPN, A 0, PSN), AETH (syndrome, MSN), then zeros;
// - an atomic's answer (ack_atomic) becomes one beat too, an ATOMIC ACKNOWLEDGE: as an ACK but
//   PktLen 9 words (the AtomicAckETH's 8 bytes more) and OpCode 0x12, the AtomicAckETH (ack_orig,
//   the original value, big-endian as ib.AppendWire puts it) after the AETH (hca.Device.atomic:
//   syndrome 0x1F, the MSN after the atomic, or the current one for a replayed duplicate);
// - a READ reply (ack_read: first PSN, VA, length, MTU code, MSN, ack_mid a replay from inside the
//   READ) becomes ceil(length / MTU) responses (one for 0 bytes), response i of min(MTU, rest) bytes
//   from VA + i x MTU: OpCode ONLY (0x10) alone, else FIRST (0x0D), MIDDLE (0x0E) ..., LAST (0x0F),
//   or MIDDLE ... LAST for a replay from inside; PadCnt = -bytes mod 4; PSN first + i; the AETH (0x1F,
//   the reply's MSN) on all but a MIDDLE; PktLen (24 or 20 + bytes + PadCnt + 4) / 4. Each
//   response's payload is read through rd_* (DMA client rd1, shared in hca_share_arb): its bytes,
//   the model's PCIe.Read of min(MTU, rest) at VA_i (hca_dma_engine's reads are bytes), which rd1
//   answers with the blocks they lie in, ceil((VA_i mod 64 + bytes) / 64) from VA_i rounded down,
//   each byte at its lane; a read issued when the PB-block payload buffer has room for all of them
//   (rd1 answers without back-pressure), ahead
//   of the headers; an hca_tx_assemble joins each header with its payload (each response its own
//   message, pay_start VA_i mod 64). The next entry is taken after the reply's last response has
//   left the assembler, so ACKs and responses leave in the order the responder gave them.
// Every packet's ICRC is written by an ib_icrc of its own (the VCRC by ib_link's ib_vcrc), and the
// packet goes into a response queue of SQ beats, store and forward (ib/wire.go AppendWire's layout
// and conventions: P_Key 0xFFFF, no GRH).
//
// Transmit (ib_tx_vl_port's contract, as hca_requester's tx_*): the queue's head packet, once its
// last beat is in, is offered on its VL (LRH.VL) in tx_vl_waiting when it fits the VL's credits
// ((credit - blocks) mod 4096 <= 2048, blocks = (PktLen + 16) >> 4) and neither it nor a
// requester's packet is under way; the requester's r_vl_waiting is passed on. When the port picks a
// VL the head offers, the head takes the pick (tx_pick_taken) and goes, its beats back to back from
// the pick cycle as tx_ready takes them; the requester sees no pick then (r_pick_valid 0), so on one
// VL the responder's packet goes ahead of the requester's, as the model's response queue goes ahead
// of its request queue. A pick of another VL goes to the requester; a requester's packet once
// committed (r_pick_taken) goes whole, its beats back to back on tx_*, before the responder's is
// offered again. Packets of the two never interleave.
// A READ reply's last response picked by the port (its a_commit) is fin_valid for one cycle, with
// the reply's QPN, its responder resource and last PSN (ack_qpn, ack_res, ack_last as taken):
// hca.Device.trySend's ReadResponseSent, at which the model's resource stops being in use
// (hca_responder's claimRes). One such response is tracked at a time: from its last beat leaving
// the assembler (the next packet to end in the queue is it: f_arm) through its place in the queue
// (f_pos, f_pend) to its pick; the next READ reply is not taken before (an ACK is), and busy holds
// context writes meanwhile.
// TODO: the model's DropReply (a duplicate READ taking a queued reply out: here every reply goes
// whole), reusing payloads already read for a replaced reply (FetchLo/FetchHi: here re-read).
module hca_ack_tx #(
    parameter integer QPN_W = 3,
    parameter integer VLS   = 1,
    parameter integer VL_W  = 1
) (
    input  wire              clk,
    input  wire              rst_n,
    input  wire              cfg_valid,      // a context write taken (no ready: always taken)
    input  wire [23:0]       cfg_qpn,
    input  wire [15:0]       cfg_dlid,
    input  wire [15:0]       cfg_slid,
    input  wire [3:0]        cfg_sl,
    input  wire [VL_W-1:0]   cfg_vl,
    input  wire [23:0]       cfg_rqpn,
    output wire              busy,           // a READ reply under way (hca_transport holds context writes)
    input  wire              ack_valid,      // hca_responder's ACKs, NAKs and READ replies
    output wire              ack_ready,
    input  wire [23:0]       ack_qpn,
    input  wire [23:0]       ack_psn,
    input  wire [7:0]        ack_syn,
    input  wire [23:0]       ack_msn,
    input  wire              ack_read,       // a READ reply: ack_len bytes from ack_va, PSNs from ack_psn
    input  wire [63:0]       ack_va,
    input  wire [31:0]       ack_len,
    input  wire [2:0]        ack_mtu,        // the path MTU, IBA code 1..5
    input  wire              ack_mid,        // a replay from inside the READ: MIDDLE ... LAST
    input  wire              ack_atomic,     // an ATOMIC ACKNOWLEDGE: ack_orig its AtomicAckETH
    input  wire [63:0]       ack_orig,
    input  wire [7:0]        ack_res,        // a READ reply's responder resource and last PSN, given back on fin_*
    input  wire [23:0]       ack_last,
    // A READ reply's last response picked by the port (hca.Device.trySend's ReadResponseSent of it):
    // one cycle, with the reply's QPN, resource and last PSN (hca_responder frees the resource)
    output wire              fin_valid,
    output wire [23:0]       fin_qpn,
    output wire [7:0]        fin_res,
    output wire [23:0]       fin_psn,
    // DMA client rd1 (through hca_share_arb): the responses' payloads
    output wire              rd_req_valid,
    input  wire              rd_req_ready,
    output wire [63:0]       rd_req_addr,
    output wire [15:0]       rd_req_len,
    input  wire              rd_rsp_valid,
    input  wire [511:0]      rd_rsp_data,
    // The requester's transmit port (hca_requester's tx_*).
    input  wire [VLS-1:0]    r_vl_waiting,
    output wire              r_pick_valid,
    input  wire              r_pick_taken,
    input  wire              r_tx_valid,
    input  wire [511:0]      r_tx_data,
    input  wire              r_tx_sop,
    input  wire              r_tx_eop,
    input  wire [VL_W-1:0]   r_tx_vl,
    output wire              r_tx_ready,
    // hca_transport's transmit port (ib_tx_vl_port's source side).
    output wire [VLS-1:0]    tx_vl_waiting,
    input  wire [VLS*12-1:0] tx_vl_credit,
    input  wire              tx_pick_valid,
    input  wire [VL_W-1:0]   tx_pick_vl,
    output wire              tx_pick_taken,
    output wire              tx_valid,
    output wire [511:0]      tx_data,
    output wire              tx_sop,
    output wire              tx_eop,
    output wire [VL_W-1:0]   tx_vl,
    input  wire              tx_ready
);
    localparam integer NQ = 1 << QPN_W;
    reg  [15:0]     c_dlid [0:NQ-1];
    reg  [15:0]     c_slid [0:NQ-1];
    reg  [3:0]      c_sl   [0:NQ-1];
    reg  [VL_W-1:0] c_vl   [0:NQ-1];
    reg  [23:0]     c_rqpn [0:NQ-1];
    always @(posedge clk) begin
        if (cfg_valid) begin
            c_dlid[cfg_qpn[QPN_W-1:0]] <= cfg_dlid;
            c_slid[cfg_qpn[QPN_W-1:0]] <= cfg_slid;
            c_sl[cfg_qpn[QPN_W-1:0]]   <= cfg_sl;
            c_vl[cfg_qpn[QPN_W-1:0]]   <= cfg_vl;
            c_rqpn[cfg_qpn[QPN_W-1:0]] <= cfg_rqpn;
        end
    end

    // ---- an ACK or an atomic ACK: one beat ----
    wire [QPN_W-1:0] ai   = ack_qpn[QPN_W-1:0];
    wire [31:0]      vl32 = {{(32-VL_W){1'b0}}, c_vl[ai]};
    wire [10:0]      a_plen = ack_atomic ? 11'd9 : 11'd7;                     // LRH 2 + BTH 3 + AETH 1 (+ AtomicAckETH 2) + ICRC 1
    wire [7:0]       a_op   = ack_atomic ? 8'h12 : 8'h11;
    wire [255:0]     hdr  = {vl32[3:0], 4'd0, c_sl[ai], 2'd0, 2'd2, c_dlid[ai], 5'd0, a_plen, c_slid[ai],  // LRH
                             a_op, 8'd0, 16'hFFFF, 8'd0, c_rqpn[ai], 8'd0, ack_psn,                       // BTH
                             ack_syn, ack_msn,                                                            // AETH
                             ack_atomic ? ack_orig : 64'd0};                                              // AtomicAckETH

    // ---- a READ reply (hca.Responder.NextReadResponse as hca.Device.trySend takes them) ----
    reg              e_busy;     // a reply taken, its last response not yet out of the assembler
    reg  [QPN_W-1:0] e_ix;
    reg  [3:0]       e_sh;       // log2 MTU
    reg              e_mid;
    reg  [23:0]      e_msn;
    reg  [23:0]      e_out;      // responses not yet out of the assembler
    // The read sequencer: the next response's payload to read.
    reg  [63:0]      rs_va;
    reg  [31:0]      rs_resid;
    reg  [23:0]      rs_left;
    // The header sequencer: the next response's header.
    reg  [23:0]      hs_psn;
    reg  [31:0]      hs_resid;
    reg  [23:0]      hs_left;
    reg              hs_first;
    wire [12:0]      mtu_b    = 13'd1 << e_sh;
    wire [12:0]      rs_p     = rs_resid < {19'd0, mtu_b} ? rs_resid[12:0] : mtu_b;    // min(MTU, resid)
    wire [13:0]      rs_sum   = {8'd0, rs_va[5:0]} + {1'b0, rs_p};
    wire [7:0]       rs_blks  = rs_sum[13:6] + {7'd0, rs_sum[5:0] != 6'd0};           // ceil((a mod 64 + n) / 64)
    // The payload buffer: PB blocks, each read's blocks reserved at its request (rd1 answers without
    // back-pressure), filled in order as they come. A read's first slot is tagged at the request
    // with its start (the VA mod 64) and block count; as the blocks come, each is tagged with its
    // read's start (pb_sf): hca_tx_assemble's pay_start, which it keeps per block in its window.
    localparam integer PB = 128;
    reg  [511:0]     pb_data [0:PB-1];
    reg  [5:0]       pb_st   [0:PB-1];
    reg  [6:0]       pb_nb   [0:PB-1];
    reg  [5:0]       pb_sf   [0:PB-1];
    reg  [6:0]       f_left;                   // blocks of the read being filled still to come
    reg  [5:0]       f_st;                     // its start
    wire             f_new = f_left == 7'd0;   // the next block is a read's first
    reg  [6:0]       pb_res, pb_fill, pb_rd;   // reserve, fill and read pointers
    reg  [7:0]       pb_nres, pb_nfill;        // blocks reserved (not yet popped), filled (not yet popped)
    wire             rs_on    = e_busy && rs_left != 24'd0;
    wire             rs_room  = {1'b0, pb_nres} + {1'b0, rs_blks} <= 9'd128;
    assign rd_req_valid = rs_on && rs_p != 13'd0 && rs_room;
    assign rd_req_addr  = rs_va;
    assign rd_req_len   = {3'd0, rs_p};   // 1..4096 bytes
    wire             rs_take  = rs_on && (rs_p == 13'd0 || (rd_req_valid && rd_req_ready));
    wire             pay_valid = pb_nfill != 8'd0;
    wire             pay_ready;
    wire             pay_pop   = pay_valid && pay_ready;

    // The response's header: LRH (VL, SL, LNH 2, DLID, PktLen, SLID), BTH (OpCode, PadCnt, P_Key
    // 0xFFFF, DestQP the remote QPN, PSN), AETH (0x1F, the reply's MSN) but on a MIDDLE.
    wire [12:0]      hs_p     = hs_resid < {19'd0, mtu_b} ? hs_resid[12:0] : mtu_b;
    wire             hs_last  = hs_left == 24'd1;
    wire [7:0]       hs_op    = e_mid ? (hs_last ? 8'h0F : 8'h0E) :
                                (hs_first && hs_last) ? 8'h10 : hs_first ? 8'h0D : hs_last ? 8'h0F : 8'h0E;
    wire             hs_aeth  = hs_op != 8'h0E;
    wire [1:0]       hs_pad   = 2'd0 - hs_p[1:0];
    wire [13:0]      hs_bytes = {1'b0, hs_p} + {12'd0, hs_pad} + (hs_aeth ? 14'd28 : 14'd24);  // + headers + ICRC
    wire [10:0]      hs_plen  = hs_bytes[12:2];
    wire [31:0]      evl32    = {{(32-VL_W){1'b0}}, c_vl[e_ix]};
    wire [191:0]     hs_hdr   = {evl32[3:0], 4'd0, c_sl[e_ix], 2'd0, 2'd2, c_dlid[e_ix], 5'd0, hs_plen, c_slid[e_ix],
                                 hs_op, 2'd0, hs_pad, 4'd0, 16'hFFFF, 8'd0, c_rqpn[e_ix], 8'd0, hs_psn,
                                 hs_aeth ? {8'h1F, e_msn} : 32'd0};
    wire             pkt_valid = e_busy && hs_left != 24'd0;
    wire             pkt_ready;
    wire             pkt_take  = pkt_valid && pkt_ready;
    wire             m_valid, m_sop, m_eop;
    wire [511:0]     m_data;
    wire             c_in_ready;
    hca_tx_assemble u_asm (
        .clk(clk), .rst_n(rst_n),
        .pkt_valid(pkt_valid), .pkt_ready(pkt_ready), .pkt_hdr({hs_hdr, 320'd0}),
        .pkt_hdr_bytes(hs_aeth ? 6'd24 : 6'd20), .pkt_pay_len(hs_p), .pkt_pay_off(32'd0), .pkt_last(1'b1),
        .pay_valid(pay_valid), .pay_ready(pay_ready), .pay_data(pb_data[pb_rd]), .pay_start(pb_sf[pb_rd]),
        .out_valid(m_valid), .out_ready(e_busy && c_in_ready), .out_data(m_data), .out_sop(m_sop), .out_eop(m_eop)
    );
    wire             m_last = e_busy && m_valid && c_in_ready && m_eop && e_out == 24'd1;

    // A READ reply is taken from ack_* when no reply is under way and the last one's last response
    // has been picked by the port (f_arm, f_pend: one such response tracked at a time); an ACK goes
    // into ib_icrc when no reply is under way.
    reg              f_arm, f_pend;
    wire             ack_is = ack_valid && !ack_read && !e_busy;
    wire             e_take = ack_valid && ack_read && !e_busy && !f_arm && !f_pend;
    assign ack_ready = !e_busy && (ack_read ? !f_arm && !f_pend : c_in_ready);
    assign busy      = e_busy || f_arm || f_pend;
    wire [32:0]      e_up    = {1'b0, ack_len} + ((33'd1 << ({1'b0, ack_mtu} + 4'd7)) - 33'd1);
    wire [32:0]      e_nd    = e_up >> ({1'b0, ack_mtu} + 4'd7);
    wire [23:0]      e_pkts  = ack_len == 32'd0 ? 24'd1 : e_nd[23:0];   // hca.PacketCount
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            e_busy <= 1'b0;
            rs_left <= 24'd0;
            hs_left <= 24'd0;
            pb_res <= 7'd0; pb_fill <= 7'd0; pb_rd <= 7'd0;
            pb_nres <= 8'd0; pb_nfill <= 8'd0;
            f_left <= 7'd0;
        end else begin
            if (rd_rsp_valid) f_left <= (f_new ? pb_nb[pb_fill] : f_left) - 7'd1;
            if (e_take) begin
                e_busy  <= 1'b1;
                rs_left <= e_pkts;
                hs_left <= e_pkts;
            end else begin
                if (rs_take) rs_left <= rs_left - 24'd1;
                if (pkt_take) hs_left <= hs_left - 24'd1;
                if (m_last) e_busy <= 1'b0;
            end
            if (rd_req_valid && rd_req_ready) pb_res <= pb_res + rs_blks[6:0];
            if (rd_rsp_valid) pb_fill <= pb_fill + 7'd1;
            if (pay_pop) pb_rd <= pb_rd + 7'd1;
            pb_nres  <= pb_nres + ((rd_req_valid && rd_req_ready) ? rs_blks : 8'd0) - {7'd0, pay_pop};
            pb_nfill <= pb_nfill + {7'd0, rd_rsp_valid} - {7'd0, pay_pop};
        end
    end
    always @(posedge clk) begin
        if (e_take) begin
            e_ix     <= ai;
            e_sh     <= {1'b0, ack_mtu} + 4'd7;
            e_mid    <= ack_mid;
            e_msn    <= ack_msn;
            e_out    <= e_pkts;
            rs_va    <= ack_va;
            rs_resid <= ack_len;
            hs_psn   <= ack_psn;
            hs_resid <= ack_len;
            hs_first <= 1'b1;
        end else begin
            if (rs_take) begin
                rs_va    <= rs_va + {51'd0, rs_p};
                rs_resid <= rs_resid - {19'd0, rs_p};
            end
            if (pkt_take) begin
                hs_psn   <= hs_psn + 24'd1;
                hs_resid <= hs_resid - {19'd0, hs_p};
                hs_first <= 1'b0;
            end
            if (e_busy && m_valid && c_in_ready && m_eop) e_out <= e_out - 24'd1;
        end
        if (rd_req_valid && rd_req_ready) begin
            pb_st[pb_res] <= rs_va[5:0];
            pb_nb[pb_res] <= rs_blks[6:0];
        end
        if (rd_rsp_valid) begin
            pb_data[pb_fill] <= rd_rsp_data;
            pb_sf[pb_fill] <= f_new ? pb_st[pb_fill] : f_st;
            if (f_new) f_st <= pb_st[pb_fill];
        end
    end

    // ---- the ICRC, then the packet queue (store and forward: a packet is offered whole) ----
    wire             c_valid, c_sop, c_eop, c_icrc_err, c_len_err;
    wire [511:0]     c_data;
    wire             q_push_ready;
    ib_icrc u_icrc (
        .clk(clk), .rst_n(rst_n),
        .in_valid(e_busy ? m_valid : ack_is), .in_ready(c_in_ready),
        .in_data(e_busy ? m_data : {hdr, 256'd0}), .in_sop(e_busy ? m_sop : 1'b1), .in_eop(e_busy ? m_eop : 1'b1),
        .out_valid(c_valid), .out_ready(q_push_ready), .out_data(c_data), .out_sop(c_sop), .out_eop(c_eop),
        .out_icrc_err(c_icrc_err), .out_len_err(c_len_err)
    );
    localparam integer SQ = 130;   // two largest responses (65 beats at MTU 4096)
    wire             q_valid;
    wire [513:0]     q_head;
    wire [7:0]       q_count;
    wire             q_pop;
    sync_fifo #(.WIDTH(514), .DEPTH(SQ)) u_queue (
        .clk(clk), .rst_n(rst_n),
        .push_valid(c_valid), .push_ready(q_push_ready), .push_data({c_sop, c_eop, c_data}),
        .pop_valid(q_valid), .pop_ready(q_pop), .pop_data(q_head),
        .count(q_count),
        .drop_valid(1'b0), .drop_count(8'd0)
    );
    reg  [7:0]       q_pkts;     // whole packets in the queue
    wire             q_in_eop  = c_valid && q_push_ready && c_eop;
    wire             q_out_eop = q_pop && q_head[512];
    wire [3:0]       head_vl4  = q_head[511:508];
    wire [VL_W-1:0]  head_vl   = head_vl4[VL_W-1:0];
    wire [10:0]      head_len  = q_head[474:464];
    wire [11:0]      blk_sum   = {1'b0, head_len} + 12'd16;
    wire [11:0]      head_blks = {4'd0, blk_sum[11:4]};
    wire [31:0]      head_vl32 = {28'd0, head_vl4};
    wire [11:0]      a_cred    = tx_vl_credit[head_vl32*12 +: 12];
    wire             a_fits    = a_cred - head_blks <= 12'd2048;

    // ---- the transmit port, shared ----
    reg              r_act;      // a requester's packet committed, its last beat not yet taken
    reg              a_act;      // a responder's packet committed, its last beat not yet taken
    wire             a_offer  = q_pkts != 8'd0 && a_fits && !r_act && !a_act;
    wire             a_commit = a_offer && tx_pick_valid && tx_pick_vl == head_vl;
    wire             a_on     = a_commit || a_act;
    assign q_pop = a_on && tx_ready;
    genvar v;
    generate
        for (v = 0; v < VLS; v = v + 1) begin : g_wait
            localparam integer VI = v;
            assign tx_vl_waiting[v] = r_vl_waiting[v] || (a_offer && head_vl == VI[VL_W-1:0]);
        end
    endgenerate
    reg  [VL_W-1:0]  a_vl;       // the VL of the responder's packet under way
    assign r_pick_valid  = tx_pick_valid && !a_on;
    assign tx_pick_taken = r_pick_taken || a_commit;
    assign tx_valid      = a_on ? q_valid        : r_tx_valid;
    assign tx_data       = a_on ? q_head[511:0]  : r_tx_data;
    assign tx_sop        = a_on ? q_head[513]    : r_tx_sop;
    assign tx_eop        = a_on ? q_head[512]    : r_tx_eop;
    assign tx_vl         = a_on ? (a_act ? a_vl : head_vl) : r_tx_vl;
    assign r_tx_ready    = tx_ready && !a_on;
    wire             r_last  = r_tx_valid && r_tx_ready && r_tx_eop;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            r_act <= 1'b0;
            a_act <= 1'b0;
            q_pkts <= 8'd0;
        end else begin
            if (r_pick_taken && !r_last) r_act <= 1'b1;
            else if (r_last) r_act <= 1'b0;
            if (a_commit && !q_out_eop) a_act <= 1'b1;
            else if (q_out_eop) a_act <= 1'b0;
            q_pkts <= q_pkts + {7'd0, q_in_eop} - {7'd0, q_out_eop};
        end
    end
    always @(posedge clk) if (a_commit) a_vl <= head_vl;

    // ---- the reply's last response to the port: fin_* ----
    // Its last beat leaves the assembler (m_last: f_arm); the next packet whose last beat enters the
    // queue is it (ib_icrc keeps the order; nothing entered after m_last ends before it), f_pos
    // packets from the queue's head (f_pend); it is the head at f_pos 1, and its commit to the port
    // (a_commit: the port picked its VL) is fin_valid, the model's ReadResponseSent at the pick.
    reg  [7:0]       f_pos;
    reg  [23:0]      f_qpn, f_psn;
    reg  [7:0]       f_res;
    assign fin_valid = f_pend && f_pos == 8'd1 && a_commit;
    assign fin_qpn   = f_qpn;
    assign fin_res   = f_res;
    assign fin_psn   = f_psn;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            f_arm <= 1'b0;
            f_pend <= 1'b0;
            f_pos <= 8'd0;
        end else begin
            if (m_last) f_arm <= 1'b1;
            if (f_arm && q_in_eop) begin
                f_arm  <= 1'b0;
                f_pend <= 1'b1;
                f_pos  <= q_pkts + 8'd1 - {7'd0, q_out_eop};
            end else if (f_pend) begin
                if (fin_valid) f_pend <= 1'b0;
                if (q_out_eop) f_pos <= f_pos - 8'd1;
            end
        end
    end
    always @(posedge clk) if (e_take) begin
        f_qpn <= ack_qpn;
        f_res <= ack_res;
        f_psn <= ack_last;
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, c_icrc_err, c_len_err, q_count, head_vl32, vl32[31:4], evl32[31:4], cfg_qpn, ack_qpn,
                       blk_sum[3:0], e_nd[32:24], rs_sum[5:0], hs_bytes[13], hs_bytes[1:0], 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule
