// hca_wqe_fetch: reads send WQEs (64-byte WQEBBs, up to 16 per WQE; ib-facts.md §7) from their
// QP's send queue ring in host memory as doorbells announce them, parses each (hca_wqe_parse)
// and hands hca_transport the parsed WQE (dec_*), its data segments (dec_sge_*, the gather
// list, one a beat) and its blocks (wqe_*, one per beat, for the inline data). Go model: hca.WQERead (hca/wqefetch.go), the chunking rule Device.fetchWQEs
// uses; rtl/cosim_fetch_test.go compares the two cycle by cycle.
//
// Send queue contexts: 2^QPN_W, in flops, indexed by a QPN's low QPN_W bits. sq_cfg_valid
// creates one (CREATE_QP/INIT of the send queue): its full QPN, the ring's base (64-byte
// aligned: bits 5:0 are ignored), log2 of its size in WQEBBs (0..15) and whether it is UD; its
// producer, fetched and in-flight counts start at 0. A QP is created only while it has no read
// in flight and no block buffered (the driver's reset of the QP), as in the model.
//
// Doorbells (db_*, db_ready = 1: one a cycle): the QPN and the new 16-bit producer count (the
// WQEBBs posted, mod 2^16). One whose QPN is not that of a created context is dropped; one
// whose producer is not ahead of the context's ((producer - prod) mod 2^16 in 1..2^15 - 1, the
// model's cntDiff(pi, sqDB) > 0) changes nothing.
//
// Fetch: one read per turn. Each cycle the read request register is empty or taken, a
// round-robin arbiter (rr_arbiter, u_pick) picks among the created QPs that can read (WQEBBs
// posted and not fetched, and room in their window) and a read of n WQEBBs is loaded from the
// picked QP's state at the start of the cycle, by hca.WQERead:
//   n = min(prod - fetched, WQE_PREFETCH_DEPTH - in_flight, ring - fetched mod ring)
// at rd_req_addr = base + (fetched mod ring) * 64, rd_req_len = n * 64 bytes; fetched and
// in_flight grow by n, and the arbiter's pointer moves past the QP. So the fetcher is handed
// over after every read, and a QP that can read waits at most 2^QPN_W - 1 reads of others,
// however much another keeps posting (the model fetches for every QP at once). A read never
// crosses the ring's end.
// Responses (rd_rsp_*, DMA client rd0: in request order, one 64-byte block a beat, no
// back-pressure) are routed by a FIFO of the reads in flight ({QP, n}, in request order) into
// the QP's own WQE_PREFETCH_DEPTH-block buffer (sync_fifo, one per QP), which cannot overflow:
// its blocks are that QP's in flight, at most WQE_PREFETCH_DEPTH. A read's last block carries
// the read's n; the n WQEBBs leave in_flight together, in the cycle that block goes to the
// parser (the model's window drops by n when a read's blocks are parsed,
// hca.Device.wqeFetched).
// The parser takes whole WQEs: a second round-robin arbiter (u_src) picks a QP whose buffer
// has a block, the first block's DS count gives the WQE's blocks (hca.WQEBBsOfCtrl), and the
// parser stays with that QP until the WQE's last block has gone, waiting for it if a read of
// the QP ended inside the WQE. So each QP's WQEs reach the parser whole and in ring order,
// however its reads interleave with other QPs'.
// The fence (docs/rtl.md, "Requester"): a QP whose next WQE is fenced (mode 2 or 4, RC) while
// fence_busy (hca_requester: its context has a READ or atomic unanswered) has its context, or a
// READ or atomic of it is offered on dec_*, is not offered to the parser; the WQE and those behind it wait in the QP's buffer, the other QPs' WQEs
// pass it (the model holds only that QP's queue: hca.Device.wqeReady, releaseFence).
// The fork gives each block to the parser and to the transport in the same cycle (a block
// moves when both can take it).
// rd0 is shared with hca_rq's receive WQE reads in hca_top (hca_rd_merge), which never holds a
// read of this block back.
// TODO: BlueFlame (a WQE written with its doorbell, parsed without a read; hca_doorbell does
// not decode it yet), QP contexts in host memory behind a cache.
module hca_wqe_fetch #(
    parameter integer DATA_W             = 512,
    parameter integer QPN_W              = 3, // 2^QPN_W send queue contexts (QPN_W >= 1)
    parameter integer WQE_PREFETCH_DEPTH = 8, // WQEBBs in flight per QP (hca.wqe_prefetch_depth, 1..256)
    parameter integer FLT_W              = $clog2(WQE_PREFETCH_DEPTH + 1)
) (
    input  wire              clk,
    input  wire              rst_n,
    // send queue creation
    input  wire              sq_cfg_valid,
    input  wire [23:0]       sq_cfg_qpn,
    input  wire [63:0]       sq_cfg_base,
    input  wire [3:0]        sq_cfg_log_size,
    input  wire              sq_cfg_ud,
    // doorbells
    input  wire              db_valid,
    input  wire [23:0]       db_qpn,
    input  wire [15:0]       db_producer,
    output wire              db_ready,
    // per context: its fenced WQEs wait (hca_requester's fence_busy: a READ or atomic unanswered)
    input  wire [(1<<QPN_W)-1:0] fence_busy,
    // host read requests (DMA client rd0)
    output reg               rd_req_valid,
    output reg  [63:0]       rd_req_addr,
    output reg  [15:0]       rd_req_len,
    input  wire              rd_req_ready,
    input  wire              rd_rsp_valid,
    input  wire [DATA_W-1:0] rd_rsp_data,
    // fetched WQE blocks, to the transport
    output wire              wqe_valid,
    output wire [23:0]       wqe_qpn,
    output wire [DATA_W-1:0] wqe_data,
    input  wire              wqe_ready,
    // parsed WQEs (hca_wqe_parse's out_* ports)
    output wire              dec_valid,
    input  wire              dec_ready,
    output wire [1:0]        dec_err,
    output wire [2:0]        dec_opcode,
    output wire [15:0]       dec_index,
    output wire [23:0]       dec_qpn,
    output wire [4:0]        dec_bbs,
    output wire              dec_signaled,
    output wire [2:0]        dec_fm,        // the fence mode (fm_ce_se bits 7:5)
    output wire [31:0]       dec_imm,
    output wire [63:0]       dec_raddr,
    output wire [31:0]       dec_rkey,
    output wire [63:0]       dec_swap_add,
    output wire [63:0]       dec_compare,
    output wire              dec_inline,
    output wire [30:0]       dec_inline_len,
    output wire [6:0]        dec_inline_off,
    output wire [31:0]       dec_length,
    output wire [31:0]       dec_lkey,
    output wire [63:0]       dec_laddr,
    output wire [5:0]        dec_sges,      // the WQE's data segments on dec_sge_* (hca_wqe_parse's sge_*)
    output wire              dec_sge_valid,
    input  wire              dec_sge_ready,
    output wire [31:0]       dec_sge_len,
    output wire [31:0]       dec_sge_lkey,
    output wire [63:0]       dec_sge_addr,
    output wire              dec_sge_last,
    output wire [15:0]       dec_dlid,
    output wire [23:0]       dec_rqpn,
    output wire [31:0]       dec_qkey
);
    localparam integer     QPS   = 1 << QPN_W;
    localparam [FLT_W-1:0] DEPTH = WQE_PREFETCH_DEPTH[FLT_W-1:0];
    localparam [FLT_W-1:0] ONE   = 1;

    // ---- send queue contexts ----
    reg             sq_on    [0:QPS-1]; // created
    reg [23:0]      sq_qpn   [0:QPS-1];
    reg [57:0]      sq_base  [0:QPS-1]; // ring base / 64
    reg [3:0]       sq_logs  [0:QPS-1]; // log2 ring WQEBBs
    reg             sq_ud    [0:QPS-1];
    reg [15:0]      sq_prod  [0:QPS-1]; // producer count from doorbells
    reg [15:0]      sq_fetch [0:QPS-1]; // WQEBBs whose read was issued
    reg [FLT_W-1:0] sq_infl  [0:QPS-1]; // read, not yet given to the parser

    // ---- doorbells ----
    assign db_ready = 1'b1;
    wire [QPN_W-1:0] db_idx   = db_qpn[QPN_W-1:0];
    wire [15:0]      db_ahead = db_producer - sq_prod[db_idx];
    wire             db_hit   = db_valid && sq_on[db_idx] && sq_qpn[db_idx] == db_qpn &&
                                db_ahead != 16'd0 && !db_ahead[15];

    // ---- which QP reads: one read per turn, round robin ----
    wire [QPS-1:0]   can_read;
    genvar g;
    generate
        for (g = 0; g < QPS; g = g + 1) begin : g_can_read
            assign can_read[g] = sq_on[g] && (sq_prod[g] != sq_fetch[g]) && (sq_infl[g] < DEPTH);
        end
    endgenerate
    wire             rq_valid;
    wire [QPN_W-1:0] rq;
    wire             issue = rq_valid && (!rd_req_valid || rd_req_ready);
    rr_arbiter #(.N(QPS), .IDX_W(QPN_W)) u_pick (
        .clk(clk), .rst_n(rst_n), .req(can_read), .grant_valid(rq_valid), .grant_idx(rq),
        .commit(issue), .commit_idx(rq)
    );

    // ---- the read of rq (hca.WQERead) ----
    wire [15:0]      prod      = sq_prod[rq];
    wire [15:0]      fetched   = sq_fetch[rq];
    wire [FLT_W-1:0] infl      = sq_infl[rq];
    wire [15:0]      ring_mask = (16'd1 << sq_logs[rq]) - 16'd1;
    wire [15:0]      slot      = fetched & ring_mask;
    wire [16:0]      to_end    = {1'b0, ring_mask} + 17'd1 - {1'b0, slot}; // 1 .. 2^15
    wire [16:0]      unfetched = {1'b0, prod - fetched};
    wire [16:0]      room      = {{(17-FLT_W){1'b0}}, DEPTH - infl};
    wire [16:0]      n_ring    = (unfetched < to_end) ? unfetched : to_end;
    wire [16:0]      n         = (n_ring < room) ? n_ring : room; // 1 .. WQE_PREFETCH_DEPTH when rq_valid

    // ---- the reads in flight, oldest first: whose QP each returned block is ----
    wire [QPN_W-1:0] rt_q;     // the QP of the oldest read host memory is returning
    wire [FLT_W-1:0] rt_n;     // its blocks
    reg  [FLT_W-1:0] rt_got;   // of them returned
    wire             rt_last = rt_got + ONE == rt_n;
    wire             rt_done = rd_rsp_valid && rt_last;
    /* verilator lint_off UNUSEDSIGNAL */
    wire             rt_valid;      // 1 whenever a block returns: host memory returns what was read
    wire             rt_push_ready; // always 1: a read has >= 1 block, each QP <= WQE_PREFETCH_DEPTH in flight
    wire [$clog2(QPS * WQE_PREFETCH_DEPTH + 1)-1:0] rt_count;
    wire [5:0]       base_low = sq_cfg_base[5:0]; // a ring is 64-byte aligned
    wire             n_top    = n[16];             // n <= WQE_PREFETCH_DEPTH <= 256
    /* verilator lint_on UNUSEDSIGNAL */
    sync_fifo #(.WIDTH(QPN_W + FLT_W), .DEPTH(QPS * WQE_PREFETCH_DEPTH)) u_reads (
        .clk(clk), .rst_n(rst_n),
        .push_valid(issue), .push_ready(rt_push_ready), .push_data({rq, n[FLT_W-1:0]}),
        .pop_valid(rt_valid), .pop_ready(rt_done), .pop_data({rt_q, rt_n}), .count(rt_count),
        .drop_valid(1'b0), .drop_count({($clog2(QPS * WQE_PREFETCH_DEPTH + 1)){1'b0}})
    );

    // ---- one block buffer per QP: {n of the read if its last block, else 0; block} ----
    localparam integer ENT_W = FLT_W + DATA_W;
    wire [QPS-1:0]       bq_valid;
    wire [QPS-1:0]       bq_pop;
    wire [QPS*ENT_W-1:0] bq_data;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [QPS-1:0]       bq_push_ready; // always 1: a QP's buffer holds its blocks in flight only
    wire [QPS*FLT_W-1:0] bq_count;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [FLT_W-1:0]     rsp_tag = rt_last ? rt_n : {FLT_W{1'b0}};
    wire [QPS-1:0]       rsp_hot = rd_rsp_valid ? ({{(QPS-1){1'b0}}, 1'b1} << rt_q) : {QPS{1'b0}};
    generate
        for (g = 0; g < QPS; g = g + 1) begin : g_blocks
            sync_fifo #(.WIDTH(ENT_W), .DEPTH(WQE_PREFETCH_DEPTH)) u_blocks (
                .clk(clk), .rst_n(rst_n),
                .push_valid(rsp_hot[g]), .push_ready(bq_push_ready[g]),
                .push_data({rsp_tag, rd_rsp_data}),
                .pop_valid(bq_valid[g]), .pop_ready(bq_pop[g]),
                .pop_data(bq_data[g*ENT_W +: ENT_W]), .count(bq_count[g*FLT_W +: FLT_W]),
                .drop_valid(1'b0), .drop_count({FLT_W{1'b0}})
            );
        end
    endgenerate

    // ---- which QP's blocks go to the parser: whole WQEs, round robin ----
    reg              plock;  // a WQE of ps is part way through the parser
    reg [QPN_W-1:0]  ps;
    reg [4:0]        pleft;  // its blocks still to go
    wire             sv;
    wire [QPN_W-1:0] sg;
    wire [QPN_W-1:0] src      = plock ? ps : sg;
    wire             bb_valid = plock ? bq_valid[ps] : sv;
    // src's head entry through an AND-OR mux (a variable part-select of bq_data would be a
    // barrel shifter 2^QPN_W * ENT_W bits wide).
    wire [QPS-1:0]   src_hot  = {{(QPS-1){1'b0}}, 1'b1} << src;
    reg  [ENT_W-1:0] bb_ent;
    integer k;
    always @* begin
        bb_ent = {ENT_W{1'b0}};
        for (k = 0; k < QPS; k = k + 1)
            bb_ent = bb_ent | (bq_data[k*ENT_W +: ENT_W] & {ENT_W{src_hot[k]}});
    end
    wire [DATA_W-1:0] bb_data = bb_ent[DATA_W-1:0];
    wire [FLT_W-1:0] bb_tag   = bb_ent[ENT_W-1:DATA_W]; // the read's n on its last block
    wire             bb_ready;
    wire [23:0]      bb_qpn   = sq_qpn[src];
    wire             bb_ud    = sq_ud[src];
    wire             drain    = bb_valid && bb_ready;
    wire [5:0]       bb_ds    = bb_data[DATA_W-59 -: 6]; // byte 7 bits 5:0 of a WQE's first block
    wire [4:0]       bb_bbs   = (bb_ds == 6'd0) ? 5'd1 : ({1'b0, bb_ds[5:2]} + {4'd0, bb_ds[1:0] != 2'd0});
    wire             first    = drain && !plock;
    // The fence: a QP whose next WQE (its buffer's head, a WQE's first block whenever the parser is
    // not part way through one of the QP's) is fenced (fm_ce_se bits 7:5, byte 11, 2 or 4:
    // hca.SendWQE.Fenced; not on a UD QP, which the model never fences) while fence_busy has its
    // context is not offered to the parser: the WQE and those behind it wait in the QP's buffer
    // (whose window then stops the QP's reads) while other QPs' WQEs go on.
    // A READ or atomic on dec_* (offered, not yet in hca_requester's ring: the parser takes the next
    // WQE's first block in the cycle its header is taken) holds its QP's fenced WQE as fence_busy
    // does. From the parser's output register: no path from dec_ready to the arbiter.
    wire [QPS-1:0]   dec_rdat = (dec_valid && dec_err != 2'd1 && dec_opcode[2]) ?
                                {{(QPS-1){1'b0}}, 1'b1} << dec_qpn[QPN_W-1:0] : {QPS{1'b0}};
    wire [QPS-1:0]   fence_held;
    generate
        for (g = 0; g < QPS; g = g + 1) begin : g_fence
            wire [2:0] hfm = bq_data[g*ENT_W + DATA_W - 89 -: 3];
            assign fence_held[g] = (hfm == 3'd2 || hfm == 3'd4) && !sq_ud[g] && (fence_busy[g] || dec_rdat[g]);
        end
    endgenerate
    rr_arbiter #(.N(QPS), .IDX_W(QPN_W)) u_src (
        .clk(clk), .rst_n(rst_n), .req(bq_valid & ~fence_held), .grant_valid(sv), .grant_idx(sg),
        .commit(first), .commit_idx(sg)
    );
    assign bq_pop = drain ? src_hot : {QPS{1'b0}};
    wire [QPS-1:0] rq_hot = issue ? ({{(QPS-1){1'b0}}, 1'b1} << rq) : {QPS{1'b0}};

    integer i;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            rt_got       <= {FLT_W{1'b0}};
            plock        <= 1'b0;
            ps           <= {QPN_W{1'b0}};
            pleft        <= 5'd0;
            rd_req_valid <= 1'b0;
            rd_req_addr  <= 64'd0;
            rd_req_len   <= 16'd0;
            for (i = 0; i < QPS; i = i + 1) begin
                sq_on[i]    <= 1'b0;
                sq_qpn[i]   <= 24'd0;
                sq_base[i]  <= 58'd0;
                sq_logs[i]  <= 4'd0;
                sq_ud[i]    <= 1'b0;
                sq_prod[i]  <= 16'd0;
                sq_fetch[i] <= 16'd0;
                sq_infl[i]  <= {FLT_W{1'b0}};
            end
        end else begin
            if (rd_req_valid && rd_req_ready) rd_req_valid <= 1'b0;
            if (issue) begin
                rd_req_valid <= 1'b1;
                rd_req_addr  <= {sq_base[rq] + {42'd0, slot}, 6'd0};
                rd_req_len   <= {n[9:0], 6'd0};
                sq_fetch[rq] <= fetched + n[15:0];
            end
            if (rd_rsp_valid) rt_got <= rt_last ? {FLT_W{1'b0}} : rt_got + ONE;
            if (first && bb_bbs != 5'd1) begin
                plock <= 1'b1;
                ps    <= sg;
                pleft <= bb_bbs - 5'd1;
            end
            if (drain && plock) begin
                pleft <= pleft - 5'd1;
                if (pleft == 5'd1) plock <= 1'b0;
            end
            for (i = 0; i < QPS; i = i + 1)
                if (rq_hot[i] || bq_pop[i])
                    sq_infl[i] <= sq_infl[i] + (rq_hot[i] ? n[FLT_W-1:0] : {FLT_W{1'b0}}) - (bq_pop[i] ? bb_tag : {FLT_W{1'b0}});
            if (db_hit) sq_prod[db_idx] <= db_producer;
            // Creation last: it wins over a doorbell in the same cycle.
            if (sq_cfg_valid) begin
                sq_on[sq_cfg_qpn[QPN_W-1:0]]    <= 1'b1;
                sq_qpn[sq_cfg_qpn[QPN_W-1:0]]   <= sq_cfg_qpn;
                sq_base[sq_cfg_qpn[QPN_W-1:0]]  <= sq_cfg_base[63:6];
                sq_logs[sq_cfg_qpn[QPN_W-1:0]]  <= sq_cfg_log_size;
                sq_ud[sq_cfg_qpn[QPN_W-1:0]]    <= sq_cfg_ud;
                sq_prod[sq_cfg_qpn[QPN_W-1:0]]  <= 16'd0;
                sq_fetch[sq_cfg_qpn[QPN_W-1:0]] <= 16'd0;
                sq_infl[sq_cfg_qpn[QPN_W-1:0]]  <= {FLT_W{1'b0}};
            end
        end
    end

    // ---- the fork: a block goes to the parser and the transport together ----
    wire parse_in_ready;
    assign bb_ready  = parse_in_ready && wqe_ready;
    assign wqe_valid = bb_valid && parse_in_ready;
    assign wqe_qpn   = bb_qpn;
    assign wqe_data  = bb_data;

    hca_wqe_parse u_parse (
        .clk(clk), .rst_n(rst_n),
        .in_valid(bb_valid && wqe_ready), .in_ready(parse_in_ready), .in_data(bb_data), .in_ud(bb_ud),
        .out_valid(dec_valid), .out_ready(dec_ready), .out_err(dec_err), .out_opcode(dec_opcode),
        .out_index(dec_index), .out_qpn(dec_qpn), .out_bbs(dec_bbs),
        .out_signaled(dec_signaled), .out_fm(dec_fm), .out_imm(dec_imm), .out_raddr(dec_raddr), .out_rkey(dec_rkey),
        .out_swap_add(dec_swap_add), .out_compare(dec_compare), .out_inline(dec_inline),
        .out_inline_len(dec_inline_len), .out_inline_off(dec_inline_off), .out_length(dec_length),
        .out_lkey(dec_lkey), .out_laddr(dec_laddr), .out_dlid(dec_dlid), .out_rqpn(dec_rqpn),
        .out_qkey(dec_qkey), .out_sges(dec_sges),
        .sge_valid(dec_sge_valid), .sge_ready(dec_sge_ready), .sge_len(dec_sge_len), .sge_lkey(dec_sge_lkey),
        .sge_addr(dec_sge_addr), .sge_last(dec_sge_last)
    );
endmodule
