// hca_ack_tx: the responder's ACKs and NAKs as ACKNOWLEDGE packets on hca_transport's transmit port,
// ahead of the requester's packets on their VL.
// Go model: hca.Device.sendAck (hca/rx.go): an ACKNOWLEDGE addressed to the QP's peer
// (Device.address: SLID the port's, DLID the remote LID, SL and VL the QP's, DestQP the remote QPN),
// its PSN and AETH (syndrome, MSN), queued on the QP's VL in the response queue, which the VL offers
// ahead of its request queue (txVL.head); rtl/cosim_respwire_test.go requires the packets on tx_*
// to be ib.AppendWire's of the model's ACKs, in the model's order.
//
// Contexts: 2^QPN_W in flops, indexed by a QPN's low bits, written on cfg_valid (hca_transport's
// qp_cfg_* write, taken with the requester's and the responder's): the path the requester's packets
// take, DLID, SLID, SL, VL, remote QPN (hca_requester's fields of the same write). hca_transport
// takes a context write only while no ACK waits in hca_responder's output register, so an ACK is
// built with the context of the QP that made it.
//
// Packet: an ACK on ack_* (valid/ready) becomes one 64-byte beat: LRH (VL, LVer 0, SL, LNH 2 local,
// DLID, PktLen 7 words: LRH 8 + BTH 12 + AETH 4 + ICRC 4, SLID), BTH (OpCode 0x11, SE 0, M 0, PadCnt
// 0, TVer 0, P_Key 0xFFFF, DestQP the remote QPN, A 0, PSN), AETH (syndrome, MSN), then zeros: the
// ICRC written by an ib_icrc of its own (latency 1; its output register is the packet waiting to
// go), the VCRC by ib_link's ib_vcrc, as for the requester's packets (ib/wire.go AppendWire's
// layout and conventions: P_Key 0xFFFF, no GRH).
//
// Transmit (ib_tx_vl_port's contract, as hca_requester's tx_*): the waiting ACK is offered on its VL
// in tx_vl_waiting when it fits the VL's credits (one block: (credit - 1) mod 4096 <= 2048) and
// neither it nor a requester's packet is under way; the requester's r_vl_waiting is passed on. When
// the port picks a VL the ACK offers, the ACK takes the pick (tx_pick_taken) and goes, its one beat
// in the pick cycle or when tx_ready takes it; the requester sees no pick then (r_pick_valid 0), so
// on one VL an ACK goes ahead of the requester's packet, as the model's response queue goes ahead of
// its request queue. A pick of another VL goes to the requester; a requester's packet once
// committed (r_pick_taken) goes whole, its beats back to back on tx_*, before an ACK is offered
// again. Packets of the two never interleave.
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
    input  wire              ack_valid,      // hca_responder's ACKs and NAKs
    output wire              ack_ready,
    input  wire [23:0]       ack_qpn,
    input  wire [23:0]       ack_psn,
    input  wire [7:0]        ack_syn,
    input  wire [23:0]       ack_msn,
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

    // ---- the packet ----
    wire [QPN_W-1:0] ai   = ack_qpn[QPN_W-1:0];
    wire [31:0]      vl32 = {{(32-VL_W){1'b0}}, c_vl[ai]};
    wire [191:0]     hdr  = {vl32[3:0], 4'd0, c_sl[ai], 2'd0, 2'd2, c_dlid[ai], 5'd0, 11'd7, c_slid[ai],  // LRH
                             8'h11, 8'd0, 16'hFFFF, 8'd0, c_rqpn[ai], 8'd0, ack_psn,                     // BTH
                             ack_syn, ack_msn};                                                          // AETH
    wire             a_valid, a_sop, a_eop, a_icrc_err, a_len_err;
    wire [511:0]     a_data;
    wire             a_on;       // the ACK owns tx_* this cycle
    wire             a_sent = a_on && tx_ready;
    reg  [VL_W-1:0]  a_vl;       // the VL of the ACK in ib_icrc's output register
    ib_icrc u_icrc (
        .clk(clk), .rst_n(rst_n),
        .in_valid(ack_valid), .in_ready(ack_ready), .in_data({hdr, 320'd0}), .in_sop(1'b1), .in_eop(1'b1),
        .out_valid(a_valid), .out_ready(!a_valid || a_sent), .out_data(a_data), .out_sop(a_sop), .out_eop(a_eop),
        .out_icrc_err(a_icrc_err), .out_len_err(a_len_err)
    );
    always @(posedge clk) if (ack_valid && ack_ready) a_vl <= c_vl[ai];

    // ---- the transmit port, shared ----
    reg              r_act;      // a requester's packet committed, its last beat not yet taken
    reg              a_act;      // the ACK committed, its beat not yet taken
    wire [31:0]      avl32   = {{(32-VL_W){1'b0}}, a_vl};
    wire [11:0]      a_cred  = tx_vl_credit[avl32*12 +: 12];
    wire             a_fits  = a_cred - 12'd1 <= 12'd2048;
    wire             a_offer = a_valid && a_fits && !r_act && !a_act;
    wire             a_commit = a_offer && tx_pick_valid && tx_pick_vl == a_vl;
    assign a_on          = a_commit || a_act;
    genvar v;
    generate
        for (v = 0; v < VLS; v = v + 1) begin : g_wait
            localparam integer VI = v;
            assign tx_vl_waiting[v] = r_vl_waiting[v] || (a_offer && a_vl == VI[VL_W-1:0]);
        end
    endgenerate
    assign r_pick_valid  = tx_pick_valid && !a_on;
    assign tx_pick_taken = r_pick_taken || a_commit;
    assign tx_valid      = a_on ? 1'b1   : r_tx_valid;
    assign tx_data       = a_on ? a_data : r_tx_data;
    assign tx_sop        = a_on ? 1'b1   : r_tx_sop;
    assign tx_eop        = a_on ? 1'b1   : r_tx_eop;
    assign tx_vl         = a_on ? a_vl   : r_tx_vl;
    assign r_tx_ready    = tx_ready && !a_on;
    wire             r_last  = r_tx_valid && r_tx_ready && r_tx_eop;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            r_act <= 1'b0;
            a_act <= 1'b0;
        end else begin
            if (r_pick_taken && !r_last) r_act <= 1'b1;
            else if (r_last) r_act <= 1'b0;
            if (a_commit && !tx_ready) a_act <= 1'b1;
            else if (a_act && tx_ready) a_act <= 1'b0;
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, a_sop, a_eop, a_icrc_err, a_len_err, avl32, vl32[31:4], cfg_qpn, ack_qpn, 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule
