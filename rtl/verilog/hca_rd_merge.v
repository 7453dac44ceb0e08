// hca_rd_merge: two DMA read clients on one (hca_top: rd0, shared by hca_wqe_fetch, client a, and
// hca_rq, client b: the send and the receive WQE reads; hca_share_arb: rd1, the requester's and the
// responder's payload reads, DEPTH 16). Go model: none of its own; the model reads
// every WQE through one DMA stage in the order the reads are issued (hca.Device.fetchWQEs,
// recvFetch), and the order the two clients' requests meet in here is the RTL's.
//
// Round robin per request (a request is one valid/ready handshake: the pick is held while it
// waits, r_hold): when both ask, the one not served last goes.
// hca_dma_engine answers a client's reads in request order, each with the ceil((addr mod 64 + len) / 64)
// blocks its bytes lie in (len 0: 65536 bytes; up to 1025 blocks), one a beat, without back-pressure; so each request taken pushes its owner and block count into an
// order queue (DEPTH entries; a request waits while it is full), and each response beat goes to the
// head entry's owner (rsp_data goes to both; only the owner sees valid), the entry popped with its
// last block. hca_top sets DEPTH to the reads both clients can have in flight (2^QPN_W x
// WQE_PREFETCH_DEPTH each: a read is one block at least and each QP's window bounds its blocks), so
// the queue never holds a request back and a client alone on the port sees it as its own.
module hca_rd_merge #(
    parameter integer DEPTH = 16, // reads in flight at most
    parameter integer CNT_W = $clog2(DEPTH + 1)
) (
    input  wire        clk,
    input  wire        rst_n,
    input  wire        a_req_valid,
    output wire        a_req_ready,
    input  wire [63:0] a_req_addr,
    input  wire [15:0] a_req_len,
    output wire        a_rsp_valid,
    input  wire        b_req_valid,
    output wire        b_req_ready,
    input  wire [63:0] b_req_addr,
    input  wire [15:0] b_req_len,
    output wire        b_rsp_valid,
    output wire        req_valid,
    input  wire        req_ready,
    output wire [63:0] req_addr,
    output wire [15:0] req_len,
    input  wire        rsp_valid
);
    reg          r_hold, r_sel, r_last;
    wire         r_room;
    wire         r_pick = r_hold ? r_sel : (b_req_valid && (!a_req_valid || !r_last));
    assign req_valid   = r_room && (r_pick ? b_req_valid : a_req_valid);
    assign req_addr    = r_pick ? b_req_addr : a_req_addr;
    assign req_len     = r_pick ? b_req_len  : a_req_len;
    assign a_req_ready = r_room && !r_pick && req_ready;
    assign b_req_ready = r_room && r_pick && req_ready;
    wire         r_take = req_valid && req_ready;
    // the blocks the read's bytes lie in: (addr mod 64 + len + 63) / 64, len 0 = 65536
    wire [17:0]  r_up   = {1'b0, req_len == 16'd0, req_len} + {12'd0, req_addr[5:0]} + 18'd63;
    wire [10:0]  r_blks = r_up[16:6];

    wire         h_own;
    wire [10:0]  h_blk;
    reg  [10:0]  h_done; // blocks of the head entry already delivered
    wire         h_end = h_done + 11'd1 == h_blk;
    /* verilator lint_off UNUSEDSIGNAL */
    wire             h_valid; // 1 whenever a block returns: host memory returns what was read
    wire [CNT_W-1:0] q_count;
    wire [5:0]       r_low = r_up[5:0];
    wire             r_top = r_up[17];      // (65536 + 63 + 63) / 64 = 1025 < 2^11
    /* verilator lint_on UNUSEDSIGNAL */
    sync_fifo #(.WIDTH(12), .DEPTH(DEPTH)) u_order (
        .clk(clk), .rst_n(rst_n),
        .push_valid(r_take), .push_ready(r_room), .push_data({r_pick, r_blks}),
        .pop_valid(h_valid), .pop_ready(rsp_valid && h_end), .pop_data({h_own, h_blk}),
        .count(q_count), .drop_valid(1'b0), .drop_count({CNT_W{1'b0}})
    );
    assign a_rsp_valid = rsp_valid && !h_own;
    assign b_rsp_valid = rsp_valid && h_own;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            r_hold <= 1'b0; r_sel <= 1'b0; r_last <= 1'b0; h_done <= 11'd0;
        end else begin
            if (req_valid) begin
                r_sel  <= r_pick;
                r_hold <= !req_ready;
                if (req_ready) r_last <= r_pick;
            end
            if (rsp_valid) h_done <= h_end ? 11'd0 : h_done + 11'd1;
        end
    end
endmodule
