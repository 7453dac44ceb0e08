// hca_cqe_writer: turns completions into 64-byte CQEs (struct mlx5_cqe64;
// ib-facts.md §7) and writes each to its CQ's ring in host memory as one
// 512-bit beat. Go model: hca.EncodeCQE (hca/cqe.go) for the bytes and
// hca.CQESlot for the slot and owner bit (the CQE stage's cqeVisible,
// hca/device.go); rtl/cosim_cqe_test.go compares the two cycle by cycle.
//
// A completion {cqn, opcode, status, receiver, wr_op, qpn, wqe_counter,
// byte_count, imm, src_qp} is taken when cpl_valid && cpl_ready, and
// cpl_ready = !wr_valid || wr_ready: one completion per cycle while the
// host-write port keeps up. In the cycle it is taken the block reads CQ
// cqn's context {base, log2 depth, pi, ci}, as the model does when the CQE
// lands (hca.CQESlot):
//   - pi - ci >= depth (32-bit counts): an overrun. Nothing is written, pi
//     stays, and the CQ's cq_overrun flag is set (the model's CQ.Overrun
//     and Counters.CQOverruns); later completions are written again once
//     the consumer has freed a slot, as in the model.
//   - otherwise the CQE goes out from the next cycle on wr_* until
//     wr_ready, at wr_addr = base + (pi mod depth) * 64, with owner bit
//     (pi / depth) mod 2, and pi moves on by one.
// CQE bytes (byte k of the CQE in wr_data[511-8k -: 8], the block order
// of every 512-bit datapath here: byte 0 first, most significant),
// big-endian fields as EncodeCQE writes them, every other byte 0:
//   [28:31] flags_rqpn   {8'd0, src_qp}   (UD receive: the sender's QP)
//   [36:39] imm_inval_pkey  imm           (written whatever the opcode)
//   [44:47] byte_cnt        byte_count
//   [55]    syndrome (status != 0 only; vendor_err_synd [54] stays 0)
//   [56:59] sop_drop_qpn {mlx5 opcode of wr_op, qpn}
//   [60:61] wqe_counter
//   [63]    op_own {opcode, 3'd0, owner}; opcode = cpl_opcode on success,
//           13 (REQ_ERR) or 14 (RESP_ERR, receiver) on an error status
// status is ibv_wc_status; its mlx5 syndrome: 1->0x01, 2->0x02, 4->0x04,
// 5->0x05, 7->0x10, 8->0x11, 9->0x12, 10->0x13, 11->0x14, 12->0x15,
// 13->0x16, any other nonzero status -> 0x00 (the model's table has no
// entry for it). wr_op is ibv_wr_opcode 0..6 -> mlx5 0x08 0x09 0x0a 0x0b
// 0x10 0x11 0x12 (7 -> 0x00; the model has no WR opcode 7); a receive
// completion carries wr_op 0 and so 0x08, as the model writes it.
// CQ contexts: 2^CQN_W of them in registers, all zero after reset. cq_cfg
// (CREATE_CQ) sets a CQ's base (64-byte aligned) and log2 depth (1..31)
// and clears its pi, ci and overrun flag; cq_ci (the consumer index the
// CQ doorbell record publishes, the model's CQ.ci) sets its ci. Both are
// seen by completions from the next cycle; a cq_cfg in the cycle a
// completion of the same CQ is taken wins over that completion's pi step.
// TODO: CQ contexts in host memory behind a cache (a real HCA has
// thousands), the CQ going to error on overrun (the model goes on, and so
// does this block), event queue entries (EQE), CQ arming and solicited
// events, CQE compression, 128-byte CQEs.
module hca_cqe_writer #(
    parameter integer CQN_W = 4 // CQ number bits: 2^CQN_W CQ contexts
) (
    input  wire               clk,
    input  wire               rst_n,
    input  wire               cpl_valid,
    output wire               cpl_ready,
    input  wire [CQN_W-1:0]   cpl_cqn,
    input  wire [3:0]         cpl_opcode,      // CQE opcode on success: 0 REQ, 1 RESP_WR_IMM, 2 RESP_SEND, 3 RESP_SEND_IMM
    input  wire [7:0]         cpl_status,      // ibv_wc_status, 0 = success
    input  wire               cpl_receiver,    // a receive-side completion
    input  wire [2:0]         cpl_wr_op,       // ibv_wr_opcode of the send WQE (0 for a receive)
    input  wire [23:0]        cpl_qpn,
    input  wire [15:0]        cpl_wqe_counter,
    input  wire [31:0]        cpl_byte_count,
    input  wire [31:0]        cpl_imm,
    input  wire [23:0]        cpl_src_qp,
    input  wire               cq_cfg_valid,
    input  wire [CQN_W-1:0]   cq_cfg_cqn,
    input  wire [63:0]        cq_cfg_base,
    input  wire [4:0]         cq_cfg_log_depth,
    input  wire               cq_ci_valid,
    input  wire [CQN_W-1:0]   cq_ci_cqn,
    input  wire [31:0]        cq_ci,
    output reg                wr_valid,
    input  wire               wr_ready,
    output reg  [63:0]        wr_addr,
    output reg  [511:0]       wr_data,
    output reg  [(1<<CQN_W)-1:0] cq_overrun
);
    localparam integer CQS = 1 << CQN_W;

    reg [63:0] cq_base [0:CQS-1];
    reg [4:0]  cq_logd [0:CQS-1];
    reg [31:0] cq_pi   [0:CQS-1];
    reg [31:0] cq_ci_r [0:CQS-1];

    assign cpl_ready = !wr_valid || wr_ready;
    wire take = cpl_valid && cpl_ready;

    // The completion's CQ, as the model's CQESlot sees it.
    wire [31:0] pi      = cq_pi[cpl_cqn];
    wire [4:0]  logd    = cq_logd[cpl_cqn];
    wire [31:0] depth   = 32'd1 << logd;
    wire        room    = (pi - cq_ci_r[cpl_cqn]) < depth;
    wire [31:0] slot    = pi & (depth - 32'd1);
    wire        owner   = pi[logd];

    reg [7:0] syndrome;
    always @(*) begin
        case (cpl_status)
            8'd1:    syndrome = 8'h01; // LOC_LEN_ERR
            8'd2:    syndrome = 8'h02; // LOC_QP_OP_ERR
            8'd4:    syndrome = 8'h04; // LOC_PROT_ERR
            8'd5:    syndrome = 8'h05; // WR_FLUSH_ERR
            8'd6:    syndrome = 8'h06; // MW_BIND_ERR (a refused BIND_MW)
            8'd7:    syndrome = 8'h10; // BAD_RESP_ERR
            8'd8:    syndrome = 8'h11; // LOC_ACCESS_ERR
            8'd9:    syndrome = 8'h12; // REM_INV_REQ_ERR
            8'd10:   syndrome = 8'h13; // REM_ACCESS_ERR
            8'd11:   syndrome = 8'h14; // REM_OP_ERR
            8'd12:   syndrome = 8'h15; // RETRY_EXC_ERR
            8'd13:   syndrome = 8'h16; // RNR_RETRY_EXC_ERR
            default: syndrome = 8'h00;
        endcase
    end
    reg [7:0] mlx5_op;
    always @(*) begin
        case (cpl_wr_op)
            3'd0:    mlx5_op = 8'h08; // RDMA_WRITE
            3'd1:    mlx5_op = 8'h09; // RDMA_WRITE_WITH_IMM
            3'd2:    mlx5_op = 8'h0a; // SEND
            3'd3:    mlx5_op = 8'h0b; // SEND_WITH_IMM
            3'd4:    mlx5_op = 8'h10; // RDMA_READ
            3'd5:    mlx5_op = 8'h11; // ATOMIC_CS
            3'd6:    mlx5_op = 8'h12; // ATOMIC_FA
            default: mlx5_op = 8'h00;
        endcase
    end
    // A responder CQE carries no WQE opcode: the byte is 0 (hca.EncodeCQE).
    wire [7:0] sop = cpl_receiver ? 8'd0 : mlx5_op;
    wire       failed = cpl_status != 8'd0;
    wire [3:0] opcode = !failed ? cpl_opcode : cpl_receiver ? 4'd14 : 4'd13;

    // The 64 bytes, byte 0 first.
    wire [511:0] cqe = {
        224'd0,                                  // [0:27]
        8'd0, cpl_src_qp,                        // [28:31] flags_rqpn
        32'd0,                                   // [32:35]
        cpl_imm,                                 // [36:39]
        32'd0,                                   // [40:43]
        cpl_byte_count,                          // [44:47]
        56'd0,                                   // [48:54] (vendor_err_synd [54] 0)
        failed ? syndrome : 8'd0,                // [55]
        sop, cpl_qpn,                            // [56:59] sop_drop_qpn
        cpl_wqe_counter,                         // [60:61]
        8'd0,                                    // [62]
        opcode, 3'd0, owner                      // [63] op_own
    };

    integer i;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            wr_valid   <= 1'b0;
            wr_addr    <= 64'd0;
            wr_data    <= 512'd0;
            cq_overrun <= {CQS{1'b0}};
            for (i = 0; i < CQS; i = i + 1) begin
                cq_base[i] <= 64'd0;
                cq_logd[i] <= 5'd0;
                cq_pi[i]   <= 32'd0;
                cq_ci_r[i] <= 32'd0;
            end
        end else begin
            if (wr_valid && wr_ready) wr_valid <= 1'b0;
            if (take) begin
                if (room) begin
                    wr_valid        <= 1'b1;
                    wr_addr         <= cq_base[cpl_cqn] + {26'd0, slot, 6'd0};
                    wr_data         <= cqe;
                    cq_pi[cpl_cqn]  <= pi + 32'd1;
                end else begin
                    cq_overrun[cpl_cqn] <= 1'b1;
                end
            end
            if (cq_ci_valid) cq_ci_r[cq_ci_cqn] <= cq_ci;
            if (cq_cfg_valid) begin
                cq_base[cq_cfg_cqn]    <= cq_cfg_base;
                cq_logd[cq_cfg_cqn]    <= cq_cfg_log_depth;
                cq_pi[cq_cfg_cqn]      <= 32'd0;
                cq_ci_r[cq_cfg_cqn]    <= 32'd0;
                cq_overrun[cq_cfg_cqn] <= 1'b0;
            end
        end
    end
endmodule
