// hca_doorbell: decodes CPU MMIO writes to the UAR pages into send queue doorbells for
// hca_wqe_fetch. Go model: the doorbell's fields are those hca.EncodeSendWQE writes in a WQE's
// control segment, the producer count hca.WQEBBsOfCtrl gives; rtl/cosim_fetch_test.go compares
// the block with them cycle by cycle.
//
// mlx5 rings a send doorbell by writing the first 8 bytes of the last posted WQE's control
// segment to the UAR page's BlueFlame register, at offset 0x800 or at 0x800 + BF_HALF (two
// halves used in turn; ib-facts.md §7: providers/mlx5 post_send_db, MLX5_BF_OFFSET). The
// write (mmio_valid, one a cycle, no back-pressure: posted) carries byte k of those 8 bytes in
// mmio_data[63-8k -: 8] (byte 0 most significant, as every datapath here):
//   [0] opmod  [1:2] wqe_index (big-endian)  [3] opcode  [4:6] QPN  [7] DS count (bits 5:0)
// The QP's producer count after that WQE is wqe_index + its WQEBBs, ceil(DS / 4) with DS 0 taking
// one (hca.WQEBBsOfCtrl), mod 2^16: what the driver wrote to the doorbell record
// (sq.cur_post & 0xffff). A write at one of the two offsets of any UAR page (mmio_addr[11:0];
// the page, mmio_addr[31:12], is not checked against the QP: hca_wqe_fetch drops a doorbell of
// a QPN it has no context for) is offered from the next cycle on db_* until db_ready; any other
// write is ignored. hca_wqe_fetch's db_ready is always 1; a doorbell still waiting when the
// next arrives would be replaced by it.
// TODO: BlueFlame (the rest of the WQE in the following writes at +8 .. +0x3f of the same half:
// a WQE parsed without a read, hca.Device.fetchWQEs's bfBBs), CQ doorbells (UAR offset 0x20:
// hca_top's cq_ci_* ports are driven from outside), UAR pages bound to their QPs.
module hca_doorbell #(
    parameter integer BF_HALF = 256 // bytes of one BlueFlame half (bf_reg_size / 2; unconfirmed)
) (
    input  wire        clk,
    input  wire        rst_n,
    input  wire        mmio_valid,
    input  wire [31:0] mmio_addr,
    input  wire [63:0] mmio_data,
    output reg         db_valid,
    output reg  [23:0] db_qpn,
    output reg  [15:0] db_producer,
    input  wire        db_ready
);
    localparam [11:0] BF0 = 12'h800;
    localparam [11:0] BF1 = BF0 + BF_HALF[11:0];

    wire        at_bf  = mmio_addr[11:0] == BF0 || mmio_addr[11:0] == BF1;
    wire [15:0] index  = mmio_data[55:40];
    wire [5:0]  ds     = mmio_data[5:0];
    wire [4:0]  bbs    = (ds == 6'd0) ? 5'd1 : {1'b0, ds[5:2]} + {4'd0, ds[1:0] != 2'd0};
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, mmio_addr[31:12], mmio_data[63:56], mmio_data[39:32], mmio_data[7:6], 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            db_valid    <= 1'b0;
            db_qpn      <= 24'd0;
            db_producer <= 16'd0;
        end else begin
            if (db_valid && db_ready) db_valid <= 1'b0;
            if (mmio_valid && at_bf) begin
                db_valid    <= 1'b1;
                db_qpn      <= mmio_data[31:8];
                db_producer <= index + {11'd0, bbs};
            end
        end
    end
endmodule
