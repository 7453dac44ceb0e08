// hca_cpl_arb: the one completion port of hca_transport (cpl_*, into
// hca_cqe_writer) shared by the requester's completions (a_*: hca_requester's
// cpl_*, send-queue CQEs) and the responder's receive completions (b_*:
// hca_responder's rc_*, receive-queue CQEs). Go model: hca.RequesterCQE for
// a's CQEs, hca.ResponderCQE for b's (rtl/cosim_cplarb_test.go).
//
// Receive CQ: a responder completion names its QP, not a CQ. The QP's
// receive CQ (hca.QP.RecvCQ, set at CreateQP) is a QP context field kept
// here, 2^QPN_W entries indexed by a QPN's low QPN_W bits as every QP
// context in hca_transport: written on cfg_* (hca_transport's taken
// qp_cfg_* write, the field qp_cfg_rcqn), zero after reset, seen from the
// cycle after the write. The send CQ travels with the requester's own
// context (a_cqn).
//
// Fair: round robin between the two. When both offer, the one not taken
// last goes; a pick that waits (cpl_valid && !cpl_ready) is held until
// taken, so the fields on cpl_* never change under a waiting valid. So a
// side with a completion waits at most one completion of the other.
// cpl_ready (hca_cqe_writer's: !wr_valid || wr_ready) does not depend on
// cpl_valid, so a_ready and b_ready depend on the offers without a loop.
//
// The CQE writer's fields (its header): a's are REQ (opcode 0; REQ_ERR by
// the writer on an error status), not a receive, no immediate (the model's
// send completion sets none) and no source QP; b's are its CQE opcode (1
// RESP_WR_IMM, 2 RESP_SEND, 3 RESP_SEND_IMM), a receive, the receive WQE's
// index as the WQE counter, byte_len, the immediate, WR opcode 0 (the
// writer puts 0 in a responder CQE's sop byte whatever it carries) and no
// source QP (RC).
module hca_cpl_arb #(
    parameter integer QPN_W = 4, // QP context index bits
    parameter integer CQN_W = 4  // CQ number bits
) (
    input  wire               clk,
    input  wire               rst_n,
    input  wire               cfg_valid,     // a QP context write taken
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [23:0]        cfg_qpn,       // its low QPN_W bits index the context
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [CQN_W-1:0]   cfg_rcqn,      // the QP's receive CQ
    input  wire               a_valid,       // requester (send CQ)
    output wire               a_ready,
    input  wire [CQN_W-1:0]   a_cqn,
    input  wire [7:0]         a_status,
    input  wire [2:0]         a_wr_op,
    input  wire [23:0]        a_qpn,
    input  wire [15:0]        a_wqe_counter,
    input  wire [31:0]        a_byte_count,
    input  wire               b_valid,       // responder (receive CQ)
    output wire               b_ready,
    input  wire [23:0]        b_qpn,
    input  wire [3:0]         b_opcode,
    input  wire [7:0]         b_status,
    input  wire [15:0]        b_index,
    input  wire [31:0]        b_len,
    input  wire [31:0]        b_imm,
    output wire               cpl_valid,
    input  wire               cpl_ready,
    output wire [CQN_W-1:0]   cpl_cqn,
    output wire [3:0]         cpl_opcode,
    output wire [7:0]         cpl_status,
    output wire               cpl_receiver,
    output wire [2:0]         cpl_wr_op,
    output wire [23:0]        cpl_qpn,
    output wire [15:0]        cpl_wqe_counter,
    output wire [31:0]        cpl_byte_count,
    output wire [31:0]        cpl_imm,
    output wire [23:0]        cpl_src_qp
);
    localparam integer QPS = 1 << QPN_W;

    reg [CQN_W-1:0] rcq [0:QPS-1]; // per QP context: its receive CQ

    reg r_last; // 1: b was taken last
    reg r_hold; // a pick waits on cpl_ready
    reg r_sel;  // the held pick (1: b)
    wire pick_b = r_hold ? r_sel : (b_valid && (!a_valid || !r_last));

    assign cpl_valid = pick_b ? b_valid : a_valid;
    assign a_ready   = cpl_ready && !pick_b;
    assign b_ready   = cpl_ready && pick_b;

    wire [QPN_W-1:0] b_ix = b_qpn[QPN_W-1:0];
    assign cpl_cqn         = pick_b ? rcq[b_ix] : a_cqn;
    assign cpl_opcode      = pick_b ? b_opcode : 4'd0;
    assign cpl_status      = pick_b ? b_status : a_status;
    assign cpl_receiver    = pick_b;
    assign cpl_wr_op       = pick_b ? 3'd0 : a_wr_op;
    assign cpl_qpn         = pick_b ? b_qpn : a_qpn;
    assign cpl_wqe_counter = pick_b ? b_index : a_wqe_counter;
    assign cpl_byte_count  = pick_b ? b_len : a_byte_count;
    assign cpl_imm         = pick_b ? b_imm : 32'd0;
    assign cpl_src_qp      = 24'd0;

    integer i;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            r_last <= 1'b0;
            r_hold <= 1'b0;
            r_sel  <= 1'b0;
            for (i = 0; i < QPS; i = i + 1) rcq[i] <= {CQN_W{1'b0}};
        end else begin
            if (cpl_valid) begin
                r_hold <= !cpl_ready;
                r_sel  <= pick_b;
                if (cpl_ready) r_last <= pick_b;
            end
            if (cfg_valid) rcq[cfg_qpn[QPN_W-1:0]] <= cfg_rcqn;
        end
    end
endmodule
