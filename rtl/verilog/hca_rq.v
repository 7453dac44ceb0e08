// hca_rq: the receive queues. Prefetches posted receive WQEs (each a stride of 2^ls 16-byte data
// segments, mlx5_wqe_data_seg, one per scatter element: the QP's receive stride, hca.QP.RecvStride)
// from their QP's receive queue ring in host memory as RQ doorbells announce them, keeps them on
// chip per QP, and hands the responder (hca_responder's rw_* port) the next one of a QP, and any
// element of the WQE it holds (rw_sge_*). Go model: hca.RecvReadStride (hca/wqefetch.go), the
// chunking rule hca.Device.recvFetch uses, hca.DecodeRecvWQE and hca.QP.PopRecv;
// rtl/cosim_rq_test.go compares the two cycle by cycle (rtl/cosim_rqsgl_test.go: strides and lists).
//
// Receive queue contexts: 2^QPN_W, in flops, indexed by a QPN's low QPN_W bits. rq_cfg_valid
// creates one (CREATE_QP of the receive queue): its full QPN, the ring's base (64-byte aligned:
// bits 5:0 are ignored; mlx5 allocates the queue buffer page aligned), log2 of its size in WQEs
// (0..15), log2 of its stride in 16-byte segments (rq_cfg_log_stride, 0..log2 RSTRIDE: the QP's
// max_recv_sge rounded up to a power of two; a larger one is refused, the write ignored); its
// producer, fetched, arrived and taken counts start at 0. A QP is created only while it has no read
// in flight and no answer pending on rw_* (the driver's reset of the QP).
//
// Doorbells (rq_db_*, rq_db_ready = 1: one a cycle): the QPN and the new 16-bit producer count (the
// WQEs posted, mod 2^16: the doorbell record's wqe_counter). One whose QPN is not that of a created
// context is dropped; one whose producer is not ahead ((producer - prod) mod 2^16 in 1..2^15 - 1,
// the model's cntDiff(pi, rqDB) > 0) changes nothing.
//
// Fetch: one read per turn. Each cycle the read request register is empty or taken, and the FIFO
// of reads in flight has room, a round-robin arbiter (u_pick) picks among the created QPs that can
// read (WQEs posted and not fetched, and fewer than W held: read or being read, not taken; W the
// QP's window, hca.RecvWindow: WIN = 4 * WQE_PREFETCH_DEPTH segments, W = max(1, WIN >> ls) WQEs)
// and a read of n WQEs is loaded from its counts, by hca.RecvReadStride:
//   n = min(prod - fetched, W - (fetched - taken), ring - fetched mod ring)
// from ring slot s = fetched mod ring. The read is the model's bytes (hca.Device.recvFetch's
// PCIe.Read of n WQEs at the slot; hca_dma_engine's reads are byte-granular):
//   rd_req_addr = base + s * 16 * 2^ls, rd_req_len = n * 16 * 2^ls
// and rd0 returns the 64-byte blocks they lie in, each segment at its address's lane ((s << ls)
// mod 4 in the first block); the lanes before it and past the read's last segment carry nothing
// meant and are dropped here. fetched grows by n.
// Responses (rd_rsp_*, in request order, a block a beat, no back-pressure) are routed by a FIFO of
// the reads in flight ({QP, first lane, segments}) and written, up to four segments a block, into
// the QP's on-chip store: 2^SLOT_W segment slots per QP, segment j of WQE i at slot
// (i * 2^ls + j) mod 2^SLOT_W, in four banks by slot mod 4 (one write port each: a block's segments
// have consecutive slots). The QP's arrived count (segments) grows by the block's (a QP's reads
// return in its order); its WQEs arrived are that >> ls. 2^SLOT_W holds the window and, with
// RSTRIDE > 1, one WQE more: the last one taken (index taken - 1), whose elements the responder
// reads while it scatters a SEND into them (rw_sge_*), so no read lands on it: (W + 1) * 2^ls
// <= WIN + RSTRIDE for a stride up to WIN, 2 * 2^ls <= 2 * RSTRIDE above.
//
// Takes (rw_*): rw_req_* (rw_req_ready = no answer pending) names a QP; from the next cycle the
// answer is offered as soon as it is known: rw_rsp_ok 0 when the QP has taken every WQE its
// doorbells announced (taken = prod; or no context has the QPN): none posted, nothing taken; ok 1
// with the WQE of index taken once it has arrived (arrived != taken) and its segments are decoded
// as hca.DecodeRecvWQE decodes them: its index mod 2^16, rw_rsp_nsge its elements (the segments
// before the first of L_Key MLX5_INVALID_LKEY 0x100, or all of the stride; in a stride of one
// segment, one element unless it is mlx5's empty list, length 0 and L_Key 0x100), rw_rsp_len the
// elements' lengths summed mod 2^32 (RecvWQE.Length), and its first segment's address and L_Key
// (the element of a list of one). The segments are read four a cycle (one bank row), so a stride
// of 2^ls > 4 segments answers 2^ls / 4 - 1 cycles later (the sums of the rows before in
// registers). A WQE announced but still being read (or not yet read: the fetcher's turn comes)
// is waited for, as PopRecv waits for a read in flight (rqWait). Taking the answer with ok 1 takes
// the WQE: taken grows by 1 and its slots are free for the window once the next WQE is taken.
// Elements (rw_sge_*): with rw_sge_valid the store's read port reads segment rw_sge_k of WQE
// rw_sge_index of context rw_sge_q, combinationally: its address, length and L_Key. Meant for the
// WQE last taken (and any arrived, not taken), and only while no take is pending (the port is the
// take's read port: the responder reads elements between takes).
//
// ERR (hca.Device.flushRecvs): rq_err[q] is 1 while QP q is in ERR (its responder's class C error or
// its requester's failure, hca.Device.requesterErr; hca_responder's qp_err). Such a QP reads no more WQEs (the model's flushRecvs leaves none
// to read: a QP in ERR flushes at its doorbells, recvDoorbell, and never fetches), and rw_flush[q]
// says it has WQEs announced and not taken: posted before the error and not consumed, or posted
// since. The responder flushes them one at a time through rw_* with rw_req_flush 1: the answer is
// offered at once, ok 1 with the index of the oldest not taken (taken, mod 2^16; address, length
// and L_Key are not looked at) or ok 0 when none is left, and taking it moves taken, so they go in
// posting order. A flush may take a WQE not yet read: fetched and arrived move with it when
// nothing of the QP is in flight (taken = fetched = arrived); one whose read is in flight waits for
// it (taken = fetched, arrived behind), so taken never passes fetched and a returning block lands
// where its read said; a normal take after the QP leaves ERR waits until arrived passes taken
// again. The responder completes each with WR_FLUSH_ERR (hca_responder).
// TODO: shared receive queues, QP contexts in host memory.
module hca_rq #(
    parameter integer DATA_W             = 512,
    parameter integer QPN_W              = 3, // 2^QPN_W receive queue contexts (QPN_W >= 1)
    parameter integer WQE_PREFETCH_DEPTH = 8, // blocks of WQEs held per QP (hca.wqe_prefetch_depth, 1..256)
    parameter integer MAX_RSGE           = 1, // elements a receive WQE may carry (hca.MaxRecvSGE 32), 1..32
    parameter integer WIN                = 4 * WQE_PREFETCH_DEPTH, // WQEs held per QP (hca.RecvWindow)
    parameter integer RSTRIDE            = 1 << $clog2(MAX_RSGE), // the largest stride, segments
    parameter integer WIN_W              = $clog2((WIN > RSTRIDE ? WIN : RSTRIDE) + 1), // a read's segments
    // A QP's on-chip segment slots: the window, and with strides above one the WQE last taken too.
    parameter integer SLOT_W             = $clog2(RSTRIDE > 1 ? (WIN > RSTRIDE ? WIN : RSTRIDE) + RSTRIDE : WIN)
) (
    input  wire              clk,
    input  wire              rst_n,
    // receive queue creation
    input  wire              rq_cfg_valid,
    input  wire [23:0]       rq_cfg_qpn,
    input  wire [63:0]       rq_cfg_base,
    input  wire [3:0]        rq_cfg_log_size,
    input  wire [2:0]        rq_cfg_log_stride, // log2 of the stride in 16-byte segments
    // RQ doorbells
    input  wire              rq_db_valid,
    input  wire [23:0]       rq_db_qpn,
    input  wire [15:0]       rq_db_producer,
    output wire              rq_db_ready,
    // host read requests (a DMA read client)
    output reg               rd_req_valid,
    output reg  [63:0]       rd_req_addr,
    output reg  [15:0]       rd_req_len,
    input  wire              rd_req_ready,
    input  wire              rd_rsp_valid,
    input  wire [DATA_W-1:0] rd_rsp_data,
    // the responder's takes (hca_responder's rw_*)
    input  wire              rw_req_valid,
    output wire              rw_req_ready,
    input  wire [23:0]       rw_req_qpn,
    output wire              rw_rsp_valid,
    input  wire              rw_rsp_ready,
    output wire              rw_rsp_ok,
    output wire [15:0]       rw_rsp_index,
    output wire [63:0]       rw_rsp_addr,
    output wire [31:0]       rw_rsp_len,
    output wire [31:0]       rw_rsp_lkey,
    output wire [5:0]        rw_rsp_nsge,  // its elements, 0..2^ls
    // the responder's element reads (between takes)
    input  wire              rw_sge_valid,
    input  wire [QPN_W-1:0]  rw_sge_q,
    input  wire [15:0]       rw_sge_index,
    input  wire [4:0]        rw_sge_k,
    output wire [63:0]       rw_sge_addr,
    output wire [31:0]       rw_sge_len,
    output wire [31:0]       rw_sge_lkey,
    // ERR (above): the responder's contexts in ERR; a flush take; the QPs with WQEs to flush
    input  wire [(1<<QPN_W)-1:0] rq_err,
    input  wire              rw_req_flush,
    output wire [(1<<QPN_W)-1:0] rw_flush
);
    localparam integer     QPS    = 1 << QPN_W;
    localparam integer     READS  = QPS * WQE_PREFETCH_DEPTH; // reads in flight at most
    localparam integer     RD_W   = $clog2(READS + 1);
    localparam integer     BANK_N = QPS << (SLOT_W - 2);       // entries of one bank
    localparam [16:0]      WIN17  = WIN[16:0];
    localparam integer     LS_W   = $clog2(RSTRIDE);            // log2 of the largest stride, 0..5
    localparam [2:0]       LS_MAX = LS_W[2:0];
    localparam integer     AS_W   = 16 + LS_W;                  // arrived segments: WQEs mod 2^16, << ls

    // ---- receive queue contexts ----
    reg             rq_on    [0:QPS-1]; // created
    reg [23:0]      rq_qpn   [0:QPS-1];
    reg [57:0]      rq_base  [0:QPS-1]; // ring base / 64
    reg [3:0]       rq_logs  [0:QPS-1]; // log2 ring WQEs
    reg [2:0]       rq_logst [0:QPS-1]; // log2 stride, 16-byte segments
    reg [15:0]      rq_prod  [0:QPS-1]; // producer count from doorbells
    reg [15:0]      rq_fetch [0:QPS-1]; // WQEs whose read was issued
    reg [AS_W-1:0]  rq_arr   [0:QPS-1]; // segments whose block came back (on chip or taken)
    reg [15:0]      rq_take  [0:QPS-1]; // WQEs taken by the responder

    // A QP's window in WQEs (hca.RecvWindow): WIN segments' worth, at least one.
    function [16:0] win_of(input [2:0] l);
        win_of = (WIN17 >> l) == 17'd0 ? 17'd1 : WIN17 >> l;
    endfunction
    // Its WQEs arrived: the segments >> ls, mod 2^16.
    function [15:0] arr_wqes(input [AS_W-1:0] a, input [2:0] l);
        /* verilator lint_off UNUSEDSIGNAL */
        reg [AS_W-1:0] t;
        /* verilator lint_on UNUSEDSIGNAL */
        begin
            t        = a >> l;
            arr_wqes = t[15:0];
        end
    endfunction

    // ---- doorbells ----
    assign rq_db_ready = 1'b1;
    wire [QPN_W-1:0] db_idx   = rq_db_qpn[QPN_W-1:0];
    wire [15:0]      db_ahead = rq_db_producer - rq_prod[db_idx];
    wire             db_hit   = rq_db_valid && rq_on[db_idx] && rq_qpn[db_idx] == rq_db_qpn &&
                                db_ahead != 16'd0 && !db_ahead[15];

    // ---- which QP reads: one read per turn, round robin ----
    wire [QPS-1:0] can_read;
    genvar g;
    generate
        for (g = 0; g < QPS; g = g + 1) begin : g_can_read
            wire [15:0] held_g = rq_fetch[g] - rq_take[g];
            assign can_read[g] = rq_on[g] && !rq_err[g] && (rq_prod[g] != rq_fetch[g]) && ({1'b0, held_g} < win_of(rq_logst[g]));
            assign rw_flush[g] = rq_on[g] && rq_err[g] && rq_take[g] != rq_prod[g];
        end
    endgenerate
    wire             pk_valid;
    wire [QPN_W-1:0] pk;
    wire             rt_push_ready;
    wire             issue = pk_valid && rt_push_ready && (!rd_req_valid || rd_req_ready);
    rr_arbiter #(.N(QPS), .IDX_W(QPN_W)) u_pick (
        .clk(clk), .rst_n(rst_n), .req(can_read), .grant_valid(pk_valid), .grant_idx(pk),
        .commit(issue), .commit_idx(pk)
    );

    // ---- the read of pk (hca.RecvReadStride) ----
    wire [2:0]  ls        = rq_logst[pk];
    wire [15:0] fetched   = rq_fetch[pk];
    wire [15:0] ring_mask = (16'd1 << rq_logs[pk]) - 16'd1;
    wire [15:0] slot      = fetched & ring_mask;
    wire [16:0] to_end    = {1'b0, ring_mask} + 17'd1 - {1'b0, slot}; // 1 .. 2^15
    wire [16:0] unfetched = {1'b0, rq_prod[pk] - fetched};
    wire [16:0] room      = win_of(ls) - {1'b0, fetched - rq_take[pk]};
    wire [16:0] n_ring    = (unfetched < to_end) ? unfetched : to_end;
    wire [16:0] n         = (n_ring < room) ? n_ring : room; // 1 .. W when pk_valid
    wire [20:0] sslot     = {5'd0, slot} << ls;               // the slot's first segment in the ring
    wire [21:0] nseg      = {5'd0, n} << ls;                  // the read's segments, <= max(WIN, RSTRIDE)

    // ---- the reads in flight, oldest first ----
    wire [QPN_W-1:0] rt_q;     // the QP of the oldest read host memory is returning
    wire [1:0]       rt_lane;  // its first segment's lane in its first block
    wire [WIN_W-1:0] rt_n;     // its segments
    reg  [WIN_W-1:0] rt_off;   // of them, in the blocks already returned
    wire             rt_last;  // the block returning is the read's last
    /* verilator lint_off UNUSEDSIGNAL */
    wire             rt_valid; // 1 whenever a block returns: host memory returns what was read
    wire [RD_W-1:0]  rt_count;
    wire [5:0]       base_low = rq_cfg_base[5:0]; // a ring is 64-byte aligned
    wire [16:0]      n_hi     = n;                // n <= WIN <= 1024
    wire [21:0]      nseg_hi  = nseg;
    wire [20:0]      sslot_hi = sslot;
    /* verilator lint_on UNUSEDSIGNAL */
    sync_fifo #(.WIDTH(QPN_W + 2 + WIN_W), .DEPTH(READS)) u_reads (
        .clk(clk), .rst_n(rst_n),
        .push_valid(issue), .push_ready(rt_push_ready), .push_data({pk, sslot[1:0], nseg[WIN_W-1:0]}),
        .pop_valid(rt_valid), .pop_ready(rd_rsp_valid && rt_last), .pop_data({rt_q, rt_lane, rt_n}),
        .count(rt_count), .drop_valid(1'b0), .drop_count({RD_W{1'b0}})
    );
    // This block's segments: lanes lo .. lo + cnt - 1.
    wire [2:0]       lo      = (rt_off == {WIN_W{1'b0}}) ? {1'b0, rt_lane} : 3'd0;
    wire [WIN_W-1:0] rest    = rt_n - rt_off;
    wire [WIN_W:0]   lane_rm = {{(WIN_W - 2){1'b0}}, 3'd4 - lo};
    wire [2:0]       cnt     = ({1'b0, rest} < lane_rm) ? rest[2:0] : 3'd4 - lo;
    assign           rt_last = {1'b0, rest} <= lane_rm;
    wire [AS_W-1:0]  arr     = rq_arr[rt_q];

    // ---- the on-chip segments: four banks by slot mod 4 ----
    reg [127:0] bank0 [0:BANK_N-1];
    reg [127:0] bank1 [0:BANK_N-1];
    reg [127:0] bank2 [0:BANK_N-1];
    reg [127:0] bank3 [0:BANK_N-1];
    // The segment of slot arr + k (k = (b - arr) mod 4) goes to bank b, from lane lo + k, if k < cnt.
    wire [1:0]   k0 = 2'd0 - arr[1:0];
    wire [1:0]   k1 = 2'd1 - arr[1:0];
    wire [1:0]   k2 = 2'd2 - arr[1:0];
    wire [1:0]   k3 = 2'd3 - arr[1:0];
    function [127:0] lane_of(input [DATA_W-1:0] blk, input [2:0] l);
        lane_of = blk[DATA_W-1-128*l -: 128];
    endfunction
    function [QPN_W+SLOT_W-3:0] waddr(input [QPN_W-1:0] q, input [SLOT_W-1:0] i);
        /* verilator lint_off UNUSEDSIGNAL */
        reg [QPN_W+SLOT_W-1:0] qi; // bits 1:0 (the bank) are not the address
        /* verilator lint_on UNUSEDSIGNAL */
        begin
            qi    = {q, i};
            waddr = qi[QPN_W+SLOT_W-1:2];
        end
    endfunction
    /* verilator lint_off UNUSEDSIGNAL */
    wire [AS_W-1:0] i0 = arr + {{(AS_W-2){1'b0}}, k0}; // segments mod 2^SLOT_W: their slots
    wire [AS_W-1:0] i1 = arr + {{(AS_W-2){1'b0}}, k1};
    wire [AS_W-1:0] i2 = arr + {{(AS_W-2){1'b0}}, k2};
    wire [AS_W-1:0] i3 = arr + {{(AS_W-2){1'b0}}, k3};
    /* verilator lint_on UNUSEDSIGNAL */
    always @(posedge clk) begin
        if (rd_rsp_valid && {1'b0, k0} < cnt) bank0[waddr(rt_q, i0[SLOT_W-1:0])] <= lane_of(rd_rsp_data, lo + {1'b0, k0});
        if (rd_rsp_valid && {1'b0, k1} < cnt) bank1[waddr(rt_q, i1[SLOT_W-1:0])] <= lane_of(rd_rsp_data, lo + {1'b0, k1});
        if (rd_rsp_valid && {1'b0, k2} < cnt) bank2[waddr(rt_q, i2[SLOT_W-1:0])] <= lane_of(rd_rsp_data, lo + {1'b0, k2});
        if (rd_rsp_valid && {1'b0, k3} < cnt) bank3[waddr(rt_q, i3[SLOT_W-1:0])] <= lane_of(rd_rsp_data, lo + {1'b0, k3});
    end

    // ---- takes ----
    reg              pend;   // a take asked, not yet answered
    reg              pflush; // it is a flush take
    reg [QPN_W-1:0]  pq;
    reg [23:0]       pqpn;
    wire             p_hit   = rq_on[pq] && rq_qpn[pq] == pqpn;
    wire [15:0]      p_take  = rq_take[pq];
    wire             p_empty = !p_hit || p_take == rq_prod[pq];
    wire [2:0]       p_ls    = rq_logst[pq];
    wire [15:0]      p_arw   = arr_wqes(rq_arr[pq], p_ls); // the QP's WQEs arrived
    // A flush: the oldest WQE announced and not taken, at once unless its read is in flight.
    wire [15:0]      p_fetch = rq_fetch[pq];
    wire             p_idle  = p_arw == p_fetch;    // nothing of the QP in flight
    // A take: the next WQE once arrived. After flushes taken may be ahead of arrived (reads in
    // flight for WQEs flushed meanwhile), so arrived - taken is read as signed: positive, arrived.
    wire [15:0]      p_arr   = p_arw - p_take;
    wire             p_avail = p_hit && (pflush ? !p_empty && (p_take != p_fetch || p_idle)
                                                : p_arr != 16'd0 && !p_arr[15]);
    // The WQE's segments, a bank row a cycle (hca.DecodeRecvWQE): w_g rows read, their elements
    // counted and summed up to a terminator (w_n, w_sum, w_t), its first segment kept (w_a0, w_k0).
    reg  [2:0]       w_g;
    reg  [5:0]       w_n;
    reg  [31:0]      w_sum;
    reg              w_t;
    reg  [63:0]      w_a0;
    reg  [31:0]      w_k0;
    wire [2:0]       w_last  = p_ls > 3'd2 ? (3'd1 << (p_ls - 3'd2)) - 3'd1 : 3'd0; // rows - 1
    wire [20:0]      p_seg0  = {5'd0, p_take} << p_ls;
    wire [20:0]      t_seg   = p_seg0 + {16'd0, w_g, 2'b00};
    // The element port: segment k of WQE index of context q.
    wire [2:0]       e_ls    = rq_logst[rw_sge_q];
    wire [20:0]      e_seg   = ({5'd0, rw_sge_index} << e_ls) + {16'd0, rw_sge_k};
    // One read port a bank, one row for all four: the element port's, else the take's.
    wire [QPN_W+SLOT_W-3:0] raddr = rw_sge_valid ? waddr(rw_sge_q, e_seg[SLOT_W-1:0])
                                                 : waddr(pq, t_seg[SLOT_W-1:0]);
    wire [127:0]     row0 = bank0[raddr];
    wire [127:0]     row1 = bank1[raddr];
    wire [127:0]     row2 = bank2[raddr];
    wire [127:0]     row3 = bank3[raddr];
    function [127:0] seg_of(input [1:0] l, input [127:0] a, input [127:0] b, input [127:0] c, input [127:0] d);
        case (l)
            2'd0:    seg_of = a;
            2'd1:    seg_of = b;
            2'd2:    seg_of = c;
            default: seg_of = d;
        endcase
    endfunction
    wire [127:0]     e_wqe = seg_of(e_seg[1:0], row0, row1, row2, row3);
    assign rw_sge_len  = e_wqe[127:96];
    assign rw_sge_lkey = e_wqe[95:64];
    assign rw_sge_addr = e_wqe[63:0];
    // This row's segments of the WQE: from lane t_seg mod 4, one (stride 1), two (stride 2) or four.
    wire [1:0]       t_lo  = t_seg[1:0];
    wire [127:0]     p_wqe = seg_of(t_lo, row0, row1, row2, row3);
    reg  [5:0]       c_n;
    reg  [31:0]      c_sum;
    reg              c_t;
    /* verilator lint_off UNUSEDSIGNAL */
    reg  [127:0]     c_seg;   // a segment of the row (its address is not summed)
    /* verilator lint_on UNUSEDSIGNAL */
    integer          j;
    always @* begin
        c_n = w_n; c_sum = w_sum; c_t = w_t;
        for (j = 0; j < 4; j = j + 1) begin
            c_seg = seg_of(t_lo + j[1:0], row0, row1, row2, row3);
            if ((p_ls >= 3'd2 || (p_ls == 3'd1 && j < 2) || j == 0) && !c_t) begin
                if (c_seg[95:64] == 32'h100) c_t = 1'b1;
                else begin
                    c_n = c_n + 6'd1;
                    c_sum = c_sum + c_seg[127:96];
                end
            end
        end
        if (p_ls == 3'd0) begin
            // One segment: one element unless it is mlx5's empty list (0 bytes, MLX5_INVALID_LKEY).
            c_n   = (p_wqe[95:64] == 32'h100 && p_wqe[127:96] == 32'd0) ? 6'd0 : 6'd1;
            c_sum = p_wqe[127:96];
        end
    end
    wire             w_done = w_g == w_last;
    assign rw_req_ready = !pend;
    assign rw_rsp_valid = pend && (p_empty || (p_avail && (pflush || w_done)));
    assign rw_rsp_ok    = p_avail;
    assign rw_rsp_index = p_take;
    assign rw_rsp_nsge  = c_n;
    assign rw_rsp_len   = c_sum;
    assign rw_rsp_lkey  = w_g == 3'd0 ? p_wqe[95:64] : w_k0;
    assign rw_rsp_addr  = w_g == 3'd0 ? p_wqe[63:0] : w_a0;
    // (Only strides of more than four segments have rows past the first: none below RSTRIDE 8.)
    wire             w_step  = RSTRIDE > 4 && pend && !pflush && p_avail && !w_done && !rw_sge_valid;
    wire             took    = rw_rsp_valid && rw_rsp_ready && p_avail;
    wire             f_bump  = took && pflush && p_take == p_fetch; // flushed before its read
    /* verilator lint_off UNUSEDSIGNAL */
    wire [AS_W+15:0] bump_x  = {{AS_W{1'b0}}, p_take + 16'd1} << p_ls; // its segments, arrived
    wire [20:0]      seg_hi  = t_seg ^ e_seg;
    /* verilator lint_on UNUSEDSIGNAL */

    wire [QPS-1:0] pk_hot = issue ? ({{(QPS-1){1'b0}}, 1'b1} << pk) : {QPS{1'b0}};
    integer i;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            rt_off       <= {WIN_W{1'b0}};
            pend         <= 1'b0;
            pflush       <= 1'b0;
            pq           <= {QPN_W{1'b0}};
            pqpn         <= 24'd0;
            w_g          <= 3'd0;
            w_n          <= 6'd0;
            w_sum        <= 32'd0;
            w_t          <= 1'b0;
            w_a0         <= 64'd0;
            w_k0         <= 32'd0;
            rd_req_valid <= 1'b0;
            rd_req_addr  <= 64'd0;
            rd_req_len   <= 16'd0;
            for (i = 0; i < QPS; i = i + 1) begin
                rq_on[i]    <= 1'b0;
                rq_qpn[i]   <= 24'd0;
                rq_base[i]  <= 58'd0;
                rq_logs[i]  <= 4'd0;
                rq_logst[i] <= 3'd0;
                rq_prod[i]  <= 16'd0;
                rq_fetch[i] <= 16'd0;
                rq_arr[i]   <= {AS_W{1'b0}};
                rq_take[i]  <= 16'd0;
            end
        end else begin
            if (rd_req_valid && rd_req_ready) rd_req_valid <= 1'b0;
            if (issue) begin
                rd_req_valid <= 1'b1;
                rd_req_addr  <= {rq_base[pk], 6'd0} + {39'd0, sslot, 4'd0};
                rd_req_len   <= {nseg[11:0], 4'd0};   // n * 2^ls * 16 <= 16384
            end
            for (i = 0; i < QPS; i = i + 1)
                if (pk_hot[i]) rq_fetch[i] <= fetched + n[15:0];
            if (rd_rsp_valid) begin
                rt_off       <= rt_last ? {WIN_W{1'b0}} : rt_off + {{(WIN_W-3){1'b0}}, cnt};
                rq_arr[rt_q] <= arr + {{(AS_W-3){1'b0}}, cnt};
            end
            if (w_step) begin
                w_g   <= w_g + 3'd1;
                w_n   <= c_n;
                w_sum <= c_sum;
                w_t   <= c_t;
                if (w_g == 3'd0) begin
                    w_a0 <= p_wqe[63:0];
                    w_k0 <= p_wqe[95:64];
                end
            end
            if (rw_req_valid && !pend) begin
                pend <= 1'b1;
                pflush <= rw_req_flush;
                pq   <= rw_req_qpn[QPN_W-1:0];
                pqpn <= rw_req_qpn;
                w_g  <= 3'd0;
                w_n  <= 6'd0;
                w_sum <= 32'd0;
                w_t  <= 1'b0;
            end
            if (rw_rsp_valid && rw_rsp_ready) pend <= 1'b0;
            if (took) rq_take[pq] <= p_take + 16'd1;
            if (f_bump) begin
                rq_fetch[pq] <= p_take + 16'd1;
                rq_arr[pq]   <= bump_x[AS_W-1:0];
            end
            if (db_hit) rq_prod[db_idx] <= rq_db_producer;
            // Creation last: it wins over a doorbell in the same cycle. A stride past RSTRIDE is
            // refused (the write ignored).
            if (rq_cfg_valid && rq_cfg_log_stride <= LS_MAX) begin
                rq_on[rq_cfg_qpn[QPN_W-1:0]]    <= 1'b1;
                rq_qpn[rq_cfg_qpn[QPN_W-1:0]]   <= rq_cfg_qpn;
                rq_base[rq_cfg_qpn[QPN_W-1:0]]  <= rq_cfg_base[63:6];
                rq_logs[rq_cfg_qpn[QPN_W-1:0]]  <= rq_cfg_log_size;
                rq_logst[rq_cfg_qpn[QPN_W-1:0]] <= LS_W == 0 ? 3'd0 : rq_cfg_log_stride;
                rq_prod[rq_cfg_qpn[QPN_W-1:0]]  <= 16'd0;
                rq_fetch[rq_cfg_qpn[QPN_W-1:0]] <= 16'd0;
                rq_arr[rq_cfg_qpn[QPN_W-1:0]]   <= {AS_W{1'b0}};
                rq_take[rq_cfg_qpn[QPN_W-1:0]]  <= 16'd0;
            end
        end
    end
endmodule
