// hca_rq: the receive queues. Prefetches posted receive WQEs (16 bytes each, four to a 64-byte
// block: mlx5_wqe_data_seg, one scatter element) from their QP's receive queue ring in host memory
// as RQ doorbells announce them, keeps them on chip per QP, and hands the responder
// (hca_responder's rw_* port) the next one of a QP. Go model: hca.RecvRead (hca/wqefetch.go), the
// chunking rule hca.Device.recvFetch uses, and hca.QP.PopRecv; rtl/cosim_rq_test.go compares the
// two cycle by cycle.
//
// Receive queue contexts: 2^QPN_W, in flops, indexed by a QPN's low QPN_W bits. rq_cfg_valid
// creates one (CREATE_QP of the receive queue): its full QPN, the ring's base (64-byte aligned:
// bits 5:0 are ignored; mlx5 allocates the queue buffer page aligned), log2 of its size in WQEs
// (0..15); its producer, fetched, arrived and taken counts start at 0. A QP is created only while
// it has no read in flight and no answer pending on rw_* (the driver's reset of the QP).
//
// Doorbells (rq_db_*, rq_db_ready = 1: one a cycle): the QPN and the new 16-bit producer count (the
// WQEs posted, mod 2^16: the doorbell record's wqe_counter). One whose QPN is not that of a created
// context is dropped; one whose producer is not ahead ((producer - prod) mod 2^16 in 1..2^15 - 1,
// the model's cntDiff(pi, rqDB) > 0) changes nothing.
//
// Fetch: one read per turn. Each cycle the read request register is empty or taken, and the FIFO
// of reads in flight has room, a round-robin arbiter (u_pick) picks among the created QPs that can
// read (WQEs posted and not fetched, and fewer than WIN = 4 * WQE_PREFETCH_DEPTH held: read or
// being read, not taken) and a read of n WQEs is loaded from its counts, by hca.RecvRead:
//   n = min(prod - fetched, WIN - (fetched - taken), ring - fetched mod ring)
// from ring slot s = fetched mod ring. The read is the model's bytes (hca.Device.recvFetch's
// PCIe.Read of n WQEs at the slot; hca_dma_engine's reads are byte-granular):
//   rd_req_addr = base + s * 16, rd_req_len = n * 16
// and rd0 returns the ceil((s mod 4 + n) / 4) 64-byte blocks they lie in, each WQE at its
// address's lane (s mod 4 in the first block); the lanes before it and past the n-th WQE carry
// nothing meant and are dropped here. fetched grows by n.
// Responses (rd_rsp_*, in request order, a block a beat, no back-pressure) are routed by a FIFO of
// the reads in flight ({QP, s mod 4, n}) and written, up to four WQEs a block, into the QP's
// on-chip store: WIN2 = 2^ceil(log2 WIN) slots per QP, WQE index i at slot i mod WIN2, in four
// banks by i mod 4 (one write port each: a block's WQEs have consecutive indices). The QP's
// arrived count grows by the block's WQEs (a QP's reads return in its order).
//
// Takes (rw_*): rw_req_* (rw_req_ready = no answer pending) names a QP; from the next cycle the
// answer is offered as soon as it is known: rw_rsp_ok 0 when the QP has taken every WQE its
// doorbells announced (taken = prod; or no context has the QPN): none posted, nothing taken; ok 1
// with the WQE of index taken (its index mod 2^16, address, length, L_Key) once it has arrived
// (arrived != taken). A WQE announced but still being read (or not yet read: the fetcher's turn
// comes) is waited for, as PopRecv waits for a read in flight (rqWait). Taking the answer with
// ok 1 takes the WQE: taken grows by 1 and its slot is free for the window.
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
// mlx5's empty scatter list (0 bytes, L_Key MLX5_INVALID_LKEY 0x100) is passed on as it is:
// hca_responder reads it as no element (hca.DecodeRecvWQE).
// TODO: shared receive queues, receive WQEs of several scatter elements
// (a stride above 16 bytes: hca.RecvReadStride, RecvSGL), QP contexts in host memory.
module hca_rq #(
    parameter integer DATA_W             = 512,
    parameter integer QPN_W              = 3, // 2^QPN_W receive queue contexts (QPN_W >= 1)
    parameter integer WQE_PREFETCH_DEPTH = 8, // blocks of WQEs held per QP (hca.wqe_prefetch_depth, 1..256)
    parameter integer WIN                = 4 * WQE_PREFETCH_DEPTH, // WQEs held per QP (hca.RecvWindow)
    parameter integer WIN_W              = $clog2(WIN + 1),
    parameter integer SLOT_W             = $clog2(WIN) // a QP's on-chip slots: 2^SLOT_W >= WIN
) (
    input  wire              clk,
    input  wire              rst_n,
    // receive queue creation
    input  wire              rq_cfg_valid,
    input  wire [23:0]       rq_cfg_qpn,
    input  wire [63:0]       rq_cfg_base,
    input  wire [3:0]        rq_cfg_log_size,
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

    // ---- receive queue contexts ----
    reg             rq_on    [0:QPS-1]; // created
    reg [23:0]      rq_qpn   [0:QPS-1];
    reg [57:0]      rq_base  [0:QPS-1]; // ring base / 64
    reg [3:0]       rq_logs  [0:QPS-1]; // log2 ring WQEs
    reg [15:0]      rq_prod  [0:QPS-1]; // producer count from doorbells
    reg [15:0]      rq_fetch [0:QPS-1]; // WQEs whose read was issued
    reg [15:0]      rq_arr   [0:QPS-1]; // WQEs whose block came back (on chip or taken)
    reg [15:0]      rq_take  [0:QPS-1]; // WQEs taken by the responder

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
            assign can_read[g] = rq_on[g] && !rq_err[g] && (rq_prod[g] != rq_fetch[g]) && ({1'b0, held_g} < WIN17);
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

    // ---- the read of pk (hca.RecvRead) ----
    wire [15:0] fetched   = rq_fetch[pk];
    wire [15:0] ring_mask = (16'd1 << rq_logs[pk]) - 16'd1;
    wire [15:0] slot      = fetched & ring_mask;
    wire [16:0] to_end    = {1'b0, ring_mask} + 17'd1 - {1'b0, slot}; // 1 .. 2^15
    wire [16:0] unfetched = {1'b0, rq_prod[pk] - fetched};
    wire [16:0] room      = WIN17 - {1'b0, fetched - rq_take[pk]};
    wire [16:0] n_ring    = (unfetched < to_end) ? unfetched : to_end;
    wire [16:0] n         = (n_ring < room) ? n_ring : room; // 1 .. WIN when pk_valid

    // ---- the reads in flight, oldest first ----
    wire [QPN_W-1:0] rt_q;     // the QP of the oldest read host memory is returning
    wire [1:0]       rt_lane;  // its first WQE's lane in its first block
    wire [WIN_W-1:0] rt_n;     // its WQEs
    reg  [WIN_W-1:0] rt_off;   // of them, in the blocks already returned
    wire             rt_last;  // the block returning is the read's last
    /* verilator lint_off UNUSEDSIGNAL */
    wire             rt_valid; // 1 whenever a block returns: host memory returns what was read
    wire [RD_W-1:0]  rt_count;
    wire [5:0]       base_low = rq_cfg_base[5:0]; // a ring is 64-byte aligned
    wire [16:0]      n_hi     = n;                // n <= WIN <= 1024
    /* verilator lint_on UNUSEDSIGNAL */
    sync_fifo #(.WIDTH(QPN_W + 2 + WIN_W), .DEPTH(READS)) u_reads (
        .clk(clk), .rst_n(rst_n),
        .push_valid(issue), .push_ready(rt_push_ready), .push_data({pk, slot[1:0], n[WIN_W-1:0]}),
        .pop_valid(rt_valid), .pop_ready(rd_rsp_valid && rt_last), .pop_data({rt_q, rt_lane, rt_n}),
        .count(rt_count), .drop_valid(1'b0), .drop_count({RD_W{1'b0}})
    );
    // This block's WQEs: lanes lo .. lo + cnt - 1.
    wire [2:0]       lo      = (rt_off == {WIN_W{1'b0}}) ? {1'b0, rt_lane} : 3'd0;
    wire [WIN_W-1:0] rest    = rt_n - rt_off;
    wire [WIN_W:0]   lane_rm = {{(WIN_W - 2){1'b0}}, 3'd4 - lo};
    wire [2:0]       cnt     = ({1'b0, rest} < lane_rm) ? rest[2:0] : 3'd4 - lo;
    assign           rt_last = {1'b0, rest} <= lane_rm;
    wire [15:0]      arr     = rq_arr[rt_q];

    // ---- the on-chip WQEs: four banks by index mod 4 ----
    reg [127:0] bank0 [0:BANK_N-1];
    reg [127:0] bank1 [0:BANK_N-1];
    reg [127:0] bank2 [0:BANK_N-1];
    reg [127:0] bank3 [0:BANK_N-1];
    // The WQE of index arr + k (k = (b - arr) mod 4) goes to bank b, from lane lo + k, if k < cnt.
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
    wire [15:0]  i0 = arr + {14'd0, k0}; // indices mod 2^SLOT_W: their slots
    wire [15:0]  i1 = arr + {14'd0, k1};
    wire [15:0]  i2 = arr + {14'd0, k2};
    wire [15:0]  i3 = arr + {14'd0, k3};
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
    // A flush: the oldest WQE announced and not taken, at once unless its read is in flight.
    wire [15:0]      p_fetch = rq_fetch[pq];
    wire             p_idle  = rq_arr[pq] == p_fetch;    // nothing of the QP in flight
    // A take: the next WQE once arrived. After flushes taken may be ahead of arrived (reads in
    // flight for WQEs flushed meanwhile), so arrived - taken is read as signed: positive, arrived.
    wire [15:0]      p_arr   = rq_arr[pq] - p_take;
    wire             p_avail = p_hit && (pflush ? !p_empty && (p_take != p_fetch || p_idle)
                                                : p_arr != 16'd0 && !p_arr[15]);
    wire [QPN_W+SLOT_W-3:0] raddr = waddr(pq, p_take[SLOT_W-1:0]);
    reg  [127:0]     p_wqe;
    always @* begin
        case (p_take[1:0])
            2'd0:    p_wqe = bank0[raddr];
            2'd1:    p_wqe = bank1[raddr];
            2'd2:    p_wqe = bank2[raddr];
            default: p_wqe = bank3[raddr];
        endcase
    end
    assign rw_req_ready = !pend;
    assign rw_rsp_valid = pend && (p_empty || p_avail);
    assign rw_rsp_ok    = p_avail;
    assign rw_rsp_index = p_take;
    assign rw_rsp_len   = p_wqe[127:96];
    assign rw_rsp_lkey  = p_wqe[95:64];
    assign rw_rsp_addr  = p_wqe[63:0];
    wire             took    = rw_rsp_valid && rw_rsp_ready && p_avail;
    wire             f_bump  = took && pflush && p_take == p_fetch; // flushed before its read

    wire [QPS-1:0] pk_hot = issue ? ({{(QPS-1){1'b0}}, 1'b1} << pk) : {QPS{1'b0}};
    integer i;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            rt_off       <= {WIN_W{1'b0}};
            pend         <= 1'b0;
            pflush       <= 1'b0;
            pq           <= {QPN_W{1'b0}};
            pqpn         <= 24'd0;
            rd_req_valid <= 1'b0;
            rd_req_addr  <= 64'd0;
            rd_req_len   <= 16'd0;
            for (i = 0; i < QPS; i = i + 1) begin
                rq_on[i]    <= 1'b0;
                rq_qpn[i]   <= 24'd0;
                rq_base[i]  <= 58'd0;
                rq_logs[i]  <= 4'd0;
                rq_prod[i]  <= 16'd0;
                rq_fetch[i] <= 16'd0;
                rq_arr[i]   <= 16'd0;
                rq_take[i]  <= 16'd0;
            end
        end else begin
            if (rd_req_valid && rd_req_ready) rd_req_valid <= 1'b0;
            if (issue) begin
                rd_req_valid <= 1'b1;
                rd_req_addr  <= {rq_base[pk], 6'd0} + {44'd0, slot, 4'd0};
                rd_req_len   <= {n[11:0], 4'd0};   // n * 16 <= 16384
            end
            for (i = 0; i < QPS; i = i + 1)
                if (pk_hot[i]) rq_fetch[i] <= fetched + n[15:0];
            if (rd_rsp_valid) begin
                rt_off       <= rt_last ? {WIN_W{1'b0}} : rt_off + {{(WIN_W-3){1'b0}}, cnt};
                rq_arr[rt_q] <= arr + {13'd0, cnt};
            end
            if (rw_req_valid && !pend) begin
                pend <= 1'b1;
                pflush <= rw_req_flush;
                pq   <= rw_req_qpn[QPN_W-1:0];
                pqpn <= rw_req_qpn;
            end
            if (rw_rsp_valid && rw_rsp_ready) pend <= 1'b0;
            if (took) rq_take[pq] <= p_take + 16'd1;
            if (f_bump) begin
                rq_fetch[pq] <= p_take + 16'd1;
                rq_arr[pq]   <= p_take + 16'd1;
            end
            if (db_hit) rq_prod[db_idx] <= rq_db_producer;
            // Creation last: it wins over a doorbell in the same cycle.
            if (rq_cfg_valid) begin
                rq_on[rq_cfg_qpn[QPN_W-1:0]]    <= 1'b1;
                rq_qpn[rq_cfg_qpn[QPN_W-1:0]]   <= rq_cfg_qpn;
                rq_base[rq_cfg_qpn[QPN_W-1:0]]  <= rq_cfg_base[63:6];
                rq_logs[rq_cfg_qpn[QPN_W-1:0]]  <= rq_cfg_log_size;
                rq_prod[rq_cfg_qpn[QPN_W-1:0]]  <= 16'd0;
                rq_fetch[rq_cfg_qpn[QPN_W-1:0]] <= 16'd0;
                rq_arr[rq_cfg_qpn[QPN_W-1:0]]   <= 16'd0;
                rq_take[rq_cfg_qpn[QPN_W-1:0]]  <= 16'd0;
            end
        end
    end
endmodule
