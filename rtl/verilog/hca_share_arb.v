// hca_share_arb: the three arbiters hca_transport puts between its requester and its responder and the
// three units they share, hca_key_check (kc_*), DMA client wr0 (wr_*) and DMA client rd1 (rd_*).
// Client a is hca_requester (its gather and scatter L_Key checks; its READ responses' payloads and
// atomics' original values; its payload reads), client b the responder (hca_responder's R_Key checks,
// RDMA WRITE payloads and atomics' results; hca_ack_tx's reads of READ response payloads), and on rd1
// a client c, hca_responder's reads of an atomic's block.
// Go model: none of its own. The model's device has one key-check stage and one DMA stage that every
// lookup and write of a QP takes in the order they are issued (hca.Device.keyCheck, writePayload);
// the order two clients' requests meet in here is the RTL's, so the co-simulation
// (rtl/cosim_respwire_test.go) checks what each client gets (its own response, its own bytes at
// their addresses, whole writes), not an interleaving.
//
// Key checks: a request is held until its response. The arbiter picks a client when none is
// granted, round robin (the one not served last first, when both ask), keeps the pick while its
// request waits for kc_req_ready (so req_* never change under a valid request), and routes the
// response, kc_rsp_*, to the granted client only; the next request is looked at after that
// response is taken. hca_key_check takes one request at a time (req_ready only when idle), so
// holding the grant to the response costs no overlap.
//
// wr0 writes: whole writes, never two writes' beats interleaved: a client is picked (round robin
// as above) when no write is under way, kept while its first beat waits for wr_ready, and kept
// through its last beat: wr_len / 64 beats (hca_dma_engine's contract: whole blocks, the length on
// the first beat and held). A client whose write waits on its data (wr_valid low inside a write)
// keeps the grant.
module hca_share_arb (
    input  wire         clk,
    input  wire         rst_n,
    // key checks: client a
    input  wire         a_kc_req_valid,
    output wire         a_kc_req_ready,
    input  wire [31:0]  a_kc_req_key,
    input  wire [31:0]  a_kc_req_pd,
    input  wire [3:0]   a_kc_req_need,
    input  wire [63:0]  a_kc_req_addr,
    input  wire [63:0]  a_kc_req_len,
    output wire         a_kc_rsp_valid,
    input  wire         a_kc_rsp_ready,
    // key checks: client b
    input  wire         b_kc_req_valid,
    output wire         b_kc_req_ready,
    input  wire [31:0]  b_kc_req_key,
    input  wire [31:0]  b_kc_req_pd,
    input  wire [3:0]   b_kc_req_need,
    input  wire [63:0]  b_kc_req_addr,
    input  wire [63:0]  b_kc_req_len,
    output wire         b_kc_rsp_valid,
    input  wire         b_kc_rsp_ready,
    // key checks: hca_key_check (kc_rsp_result goes to both clients; only the granted one sees valid)
    output wire         kc_req_valid,
    input  wire         kc_req_ready,
    output wire [31:0]  kc_req_key,
    output wire [31:0]  kc_req_pd,
    output wire [3:0]   kc_req_need,
    output wire [63:0]  kc_req_addr,
    output wire [63:0]  kc_req_len,
    input  wire         kc_rsp_valid,
    output wire         kc_rsp_ready,
    // wr0: client a
    input  wire         a_wr_valid,
    output wire         a_wr_ready,
    input  wire [63:0]  a_wr_addr,
    input  wire [15:0]  a_wr_len,
    input  wire [511:0] a_wr_data,
    input  wire [63:0]  a_wr_be,
    // wr0: client b
    input  wire         b_wr_valid,
    output wire         b_wr_ready,
    input  wire [63:0]  b_wr_addr,
    input  wire [15:0]  b_wr_len,
    input  wire [511:0] b_wr_data,
    input  wire [63:0]  b_wr_be,
    // wr0: the DMA engine's client
    output wire         wr_valid,
    input  wire         wr_ready,
    output wire [63:0]  wr_addr,
    output wire [15:0]  wr_len,
    output wire [511:0] wr_data,
    output wire [63:0]  wr_be,
    // rd1: client a (hca_requester's payload reads), client b (hca_ack_tx's READ response payloads)
    input  wire         a_rd_req_valid,
    output wire         a_rd_req_ready,
    input  wire [63:0]  a_rd_req_addr,
    input  wire [15:0]  a_rd_req_len,
    output wire         a_rd_rsp_valid,
    input  wire         b_rd_req_valid,
    output wire         b_rd_req_ready,
    input  wire [63:0]  b_rd_req_addr,
    input  wire [15:0]  b_rd_req_len,
    output wire         b_rd_rsp_valid,
    input  wire         c_rd_req_valid, // rd1: client c (hca_responder's atomic reads)
    output wire         c_rd_req_ready,
    input  wire [63:0]  c_rd_req_addr,
    input  wire [15:0]  c_rd_req_len,
    output wire         c_rd_rsp_valid,
    // rd1: the DMA engine's client (rd_rsp_data goes to both clients; only the owner sees valid)
    output wire         rd_req_valid,
    input  wire         rd_req_ready,
    output wire [63:0]  rd_req_addr,
    output wire [15:0]  rd_req_len,
    input  wire         rd_rsp_valid
);
    // ---- key checks ----
    reg          k_hold;   // a request presented, not yet taken: keep the pick
    reg          k_busy;   // a request taken, its response not yet
    reg          k_sel;    // 1: client b
    reg          k_last;   // the client served last (1: b)
    wire         k_pick = (k_hold || k_busy) ? k_sel : (b_kc_req_valid && (!a_kc_req_valid || !k_last));
    assign kc_req_valid   = !k_busy && (k_pick ? b_kc_req_valid : a_kc_req_valid);
    assign kc_req_key     = k_pick ? b_kc_req_key  : a_kc_req_key;
    assign kc_req_pd      = k_pick ? b_kc_req_pd   : a_kc_req_pd;
    assign kc_req_need    = k_pick ? b_kc_req_need : a_kc_req_need;
    assign kc_req_addr    = k_pick ? b_kc_req_addr : a_kc_req_addr;
    assign kc_req_len     = k_pick ? b_kc_req_len  : a_kc_req_len;
    assign a_kc_req_ready = !k_busy && !k_pick && kc_req_ready;
    assign b_kc_req_ready = !k_busy && k_pick && kc_req_ready;
    assign a_kc_rsp_valid = k_busy && !k_sel && kc_rsp_valid;
    assign b_kc_rsp_valid = k_busy && k_sel && kc_rsp_valid;
    assign kc_rsp_ready   = k_busy && (k_sel ? b_kc_rsp_ready : a_kc_rsp_ready);
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            k_hold <= 1'b0; k_busy <= 1'b0; k_sel <= 1'b0; k_last <= 1'b0;
        end else begin
            if (kc_req_valid) begin
                k_sel  <= k_pick;
                k_hold <= !kc_req_ready;
                if (kc_req_ready) begin
                    k_busy <= 1'b1;
                    k_last <= k_pick;
                end
            end
            if (kc_rsp_valid && kc_rsp_ready) k_busy <= 1'b0;
        end
    end

    // ---- wr0 ----
    reg          w_hold;   // a first beat presented, not yet taken
    reg          w_busy;   // a write under way: beats left in w_left
    reg          w_sel, w_last;
    reg  [9:0]   w_left;   // beats after the one taken (a write is at most 1023 blocks)
    wire         w_pick = (w_hold || w_busy) ? w_sel : (b_wr_valid && (!a_wr_valid || !w_last));
    assign wr_valid   = w_pick ? b_wr_valid : a_wr_valid;
    assign wr_addr    = w_pick ? b_wr_addr : a_wr_addr;
    assign wr_len     = w_pick ? b_wr_len  : a_wr_len;
    assign wr_data    = w_pick ? b_wr_data : a_wr_data;
    assign wr_be      = w_pick ? b_wr_be   : a_wr_be;
    assign a_wr_ready = !w_pick && wr_ready;
    assign b_wr_ready = w_pick && wr_ready;
    wire         w_take = wr_valid && wr_ready;
    wire [9:0]   w_beats = wr_len[15:6];                       // the write's beats
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            w_hold <= 1'b0; w_busy <= 1'b0; w_sel <= 1'b0; w_last <= 1'b0; w_left <= 10'd0;
        end else if (!w_busy) begin
            if (wr_valid) begin
                w_sel  <= w_pick;
                w_hold <= !wr_ready;
                if (wr_ready) begin
                    w_last <= w_pick;
                    w_left <= w_beats - 10'd1;
                    w_busy <= w_beats > 10'd1;
                end
            end
        end else if (w_take) begin
            w_left <= w_left - 10'd1;
            if (w_left == 10'd1) w_busy <= 1'b0;
        end
    end

    // ---- rd1 ----
    // Two hca_rd_merge: round robin per request, the pick held while it waits; each request taken
    // pushes its owner and block count into an order queue of 16 reads (a request waits while it
    // is full), and each response beat goes to the head entry's owner (hca_dma_engine answers a
    // client's reads in request order, ceil(len / 64) blocks each, without back-pressure). The
    // responder's two readers (b: hca_ack_tx's READ response payloads, c: hca_responder's atomic
    // blocks) first meet in u_rd1_resp, whose output is u_rd1's client b: a request of b or c is
    // taken by both merges in the same cycle (u_rd1_resp's req_ready is u_rd1's b_req_ready), so
    // both queues hold it, and a block u_rd1 routes to b is routed on by u_rd1_resp's head. When
    // all three ask, a gets every other request and b and c one in four each.
    wire         bc_req_valid, bc_req_ready, bc_rsp_valid;
    wire [63:0]  bc_req_addr;
    wire [15:0]  bc_req_len;
    hca_rd_merge #(.DEPTH(16)) u_rd1_resp (
        .clk(clk), .rst_n(rst_n),
        .a_req_valid(b_rd_req_valid), .a_req_ready(b_rd_req_ready), .a_req_addr(b_rd_req_addr),
        .a_req_len(b_rd_req_len), .a_rsp_valid(b_rd_rsp_valid),
        .b_req_valid(c_rd_req_valid), .b_req_ready(c_rd_req_ready), .b_req_addr(c_rd_req_addr),
        .b_req_len(c_rd_req_len), .b_rsp_valid(c_rd_rsp_valid),
        .req_valid(bc_req_valid), .req_ready(bc_req_ready), .req_addr(bc_req_addr),
        .req_len(bc_req_len), .rsp_valid(bc_rsp_valid)
    );
    hca_rd_merge #(.DEPTH(16)) u_rd1 (
        .clk(clk), .rst_n(rst_n),
        .a_req_valid(a_rd_req_valid), .a_req_ready(a_rd_req_ready), .a_req_addr(a_rd_req_addr),
        .a_req_len(a_rd_req_len), .a_rsp_valid(a_rd_rsp_valid),
        .b_req_valid(bc_req_valid), .b_req_ready(bc_req_ready), .b_req_addr(bc_req_addr),
        .b_req_len(bc_req_len), .b_rsp_valid(bc_rsp_valid),
        .req_valid(rd_req_valid), .req_ready(rd_req_ready), .req_addr(rd_req_addr),
        .req_len(rd_req_len), .rsp_valid(rd_rsp_valid)
    );
endmodule
