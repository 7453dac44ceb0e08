// hca_wqe_parse: parses a send WQE (mlx5 layout; ib-facts.md §7) from its
// 64-byte WQEBBs into the fields of a work request and its gather list.
// Go model: hca.DecodeSendWQE / hca.DecodeUDSendWQE for the fields and
// the data segments (hca.SendWQE.SGL), hca.WQEBBsOfCtrl for the blocks a
// WQE takes (the WQE fetch stage's wqeFetched, hca/verbs.go);
// rtl/cosim_wqe_test.go compares the two cycle by cycle on WQEs written by
// hca.EncodeSendWQE.
//
// WQEBBs arrive on in_* (valid/ready, byte k of a block in
// in_data[511-8k -: 8]), a WQE's blocks back to back. The first block of a
// WQE carries its ctrl segment, whose DS count (byte 7, bits 5:0) says how
// many blocks it takes: max(1, ceil(DS * 16 / 64)); in_ud (the QP is UD:
// a 48-byte datagram segment follows the ctrl segment) is sampled with it.
// The block keeps the first 112 bytes (every header segment and the first
// data segment lie in them; bytes past the WQE's last block read as 0) and
// every block in a 16-block memory (the data segments past the first).
// From the cycle after a WQE's last block is taken it offers the WQE on
// out_* until out_ready, and, from the same cycle, its data segments on
// sge_* (valid/ready, one a cycle, the first first, sge_last with the
// last): out_sges of them, every segment from the first data segment to
// the DS count (the model's (DS x 16 - offset) / 16), none for an inline
// WQE or one with an error. in_ready = the header is taken or being taken
// and so is the last segment: a one-block WQE of one data segment a cycle
// goes through when both are taken at once. Segments, in 16-byte units
// from the start:
//   ctrl       0: opmod | wqe_index (16) | opcode (8); qpn (24) | ds (6);
//                 byte 11 (fm_ce_se) bits 7:5 the fence mode, bit 3
//                 CQ_UPDATE (signaled); imm (32)
//   datagram   1-3 (UD only): qkey [16:19], remote QPN [24:27] low 24
//                 bits, DLID [30:31]
//   raddr      next, when the opcode has one (all but SEND, SEND_IMM):
//                 remote address (64), R_Key (32)
//   atomic     next (CMP_SWAP, FETCH_ADD): swap_add (64), compare (64)
//   data       next, through DS - 1: each byte_count (32), L_Key (32),
//                 address (64), big-endian (mlx5_wqe_data_seg); or, if
//                 the first's byte_count bit 31, inline: length =
//                 byte_count[30:0], data from the byte after the 4-byte
//                 header (inline_off)
// out_opcode is ibv_wr_opcode (mlx5 0x08 0x09 0x0a 0x0b 0x10 0x11 0x12 ->
// 0..6). out_length is the sum of the data segments' byte counts mod 2^32
// (the model's Length: one segment's byte count, or the list's total), the
// inline length, or 8 for an atomic; out_lkey and out_laddr are the data
// segment's when there is exactly one, else 0 (the model's SendWQE: LKey
// and LocalAddr 0 when SGL holds the list). sge_len is a segment's
// byte_count as written (for an atomic too, whose one segment's byte count
// the model's decode drops). A field the WQE does not have is 0 (the
// model's zero value).
// out_err: 0 parsed; 1 the opcode is none of those seven; 2 the DS count
// leaves no room for the data segment (DS <= its index); the model's
// decoder returns an error for both (the transport would complete the WQE
// with LOC_QP_OP_ERR). With out_err = 2 the fields before the data
// segment are still those of the model's decode (opcode, index, qpn, bbs,
// signaled, imm, the datagram, raddr and atomic fields); with 1 none is.
// out_fm is the fence mode as written, 0..7 (hca.SendWQE.FenceMode,
// MLX5_FENCE_MODE_*: 0 none, 1 initiator small fence, 2 fence, 3 strong
// ordering, 4 fence and small fence, what IBV_SEND_FENCE writes); the
// requester waits on modes 2 and 4 (SendWQE.Fenced). Not parsed, as the
// model does not: the solicited bit and reserved bits of fm_ce_se, opmod.
module hca_wqe_parse (
    input  wire         clk,
    input  wire         rst_n,
    input  wire         in_valid,
    output wire         in_ready,
    input  wire [511:0] in_data,
    input  wire         in_ud,
    output reg          out_valid,
    input  wire         out_ready,
    output wire [1:0]   out_err,
    output wire [2:0]   out_opcode,     // ibv_wr_opcode
    output wire [15:0]  out_index,      // wqe_index
    output wire [23:0]  out_qpn,
    output wire [4:0]   out_bbs,        // WQEBBs: ceil(ds * 16 / 64)
    output wire         out_signaled,
    output wire [2:0]   out_fm,         // fence mode: fm_ce_se bits 7:5
    output wire [31:0]  out_imm,
    output wire [63:0]  out_raddr,
    output wire [31:0]  out_rkey,
    output wire [63:0]  out_swap_add,
    output wire [63:0]  out_compare,
    output wire         out_inline,
    output wire [30:0]  out_inline_len,
    output wire [6:0]   out_inline_off, // byte offset of the inline data in the WQE
    output wire [31:0]  out_length,
    output wire [31:0]  out_lkey,
    output wire [63:0]  out_laddr,
    output wire [5:0]   out_sges,       // data segments on sge_*: 0 inline or an error, else DS - their index
    output wire         sge_valid,      // the data segments, one a cycle (the gather list)
    input  wire         sge_ready,
    output wire [31:0]  sge_len,        // byte_count
    output wire [31:0]  sge_lkey,
    output wire [63:0]  sge_addr,
    output wire         sge_last,
    output wire [15:0]  out_dlid,
    output wire [23:0]  out_rqpn,
    output wire [31:0]  out_qkey
);
    reg [895:0] head;  // the WQE's bytes 0..111, byte k at [895-8k -: 8]
    reg [511:0] blk [0:15]; // the WQE's blocks (its data segments past the first 112 bytes)
    reg         ud;
    reg [3:0]   beat;  // blocks of the WQE taken so far, mod 16
    reg [4:0]   blocks; // blocks the WQE takes (from its first block)
    reg         held;  // a parsed WQE is offered: its header on out_* or segments on sge_* not yet taken
    reg [5:0]   sge_k; // its segments already taken on sge_*
    reg [31:0]  len_sum; // the sum of its data segments' byte counts, mod 2^32

    // The 16-byte index of the first data segment: datagram 1..3 on UD,
    // then raddr (every opcode but SEND, SEND_IMM; an unknown one is parsed
    // as RDMA_WRITE, below), atomic (CMP_SWAP, FETCH_ADD).
    function [2:0] seg_of(input [7:0] op, input is_ud);
        seg_of = (is_ud ? 3'd4 : 3'd1) + {2'd0, !(op == 8'h0a || op == 8'h0b)} + {2'd0, op == 8'h11 || op == 8'h12};
    endfunction

    wire       first     = beat == 4'd0;
    // The blocks of a WQE whose first block is on in_data: max(1, ceil(DS / 4)).
    wire [5:0] in_ds     = in_data[453:448]; // byte 7 bits 5:0
    wire [4:0] in_blocks = (in_ds == 6'd0) ? 5'd1 : ({1'b0, in_ds[5:2]} + {4'd0, in_ds[1:0] != 2'd0});
    wire [4:0] need      = first ? in_blocks : blocks;
    wire       last      = {1'b0, beat} + 5'd1 == need;

    // The data segments of the block on in_data: its segments 4 x beat + q
    // from the first data segment's index through DS - 1 (the DS count and
    // the index from the ctrl segment: on in_data with the first block).
    wire [5:0] cur_ds  = first ? in_ds : head[837:832];
    wire [2:0] cur_seg = first ? seg_of(in_data[487:480], in_ud) : seg_of(head[871:864], ud);
    reg  [31:0] blk_sum;
    integer     q;
    always @(*) begin
        blk_sum = 32'd0;
        for (q = 0; q < 4; q = q + 1)
            if ({beat, q[1:0]} >= {3'd0, cur_seg} && {beat, q[1:0]} < cur_ds)
                blk_sum = blk_sum + in_data[511-128*q -: 32];
    end

    // Release: the header is taken (or being taken) and so is the last segment.
    wire [5:0] sges     = out_sges;
    wire       sge_take = sge_valid && sge_ready;
    wire       hdr_done = !out_valid || out_ready;
    wire       sge_done = sge_k == sges || (sge_take && sge_last);
    wire       leave  = held && hdr_done && sge_done;
    assign in_ready = !held || leave;
    wire take = in_valid && in_ready;

    always @(posedge clk) begin
        if (take) blk[beat] <= in_data;
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            out_valid <= 1'b0;
            head      <= 896'd0;
            ud        <= 1'b0;
            beat      <= 4'd0;
            blocks    <= 5'd0;
            held      <= 1'b0;
            sge_k     <= 6'd0;
            len_sum   <= 32'd0;
        end else begin
            if (out_valid && out_ready) out_valid <= 1'b0;
            if (leave) begin
                held  <= 1'b0;
                sge_k <= 6'd0;
            end else if (sge_take) begin
                sge_k <= sge_k + 6'd1;
            end
            if (take) begin
                if (first) begin
                    head[895:384] <= in_data;
                    head[383:0]   <= 384'd0; // a one-block WQE has no bytes 64..111
                    ud            <= in_ud;
                    blocks        <= in_blocks;
                end
                if (beat == 4'd1) head[383:0] <= in_data[511:128];
                len_sum <= (first ? 32'd0 : len_sum) + blk_sum;
                if (last) begin
                    out_valid <= 1'b1;
                    held      <= 1'b1;
                    beat      <= 4'd0;
                end else begin
                    beat <= beat + 4'd1;
                end
            end
        end
    end

    // ---- the fields, from the kept bytes ----
    wire [7:0] op_byte = head[871:864]; // byte 3
    reg        op_ok;
    reg [2:0]  opcode;
    always @(*) begin
        op_ok = 1'b1;
        case (op_byte)
            8'h08:   opcode = 3'd0; // RDMA_WRITE
            8'h09:   opcode = 3'd1; // RDMA_WRITE_WITH_IMM
            8'h0a:   opcode = 3'd2; // SEND
            8'h0b:   opcode = 3'd3; // SEND_WITH_IMM
            8'h10:   opcode = 3'd4; // RDMA_READ
            8'h11:   opcode = 3'd5; // ATOMIC_CMP_AND_SWP
            8'h12:   opcode = 3'd6; // ATOMIC_FETCH_AND_ADD
            default: begin
                opcode = 3'd0;
                op_ok  = 1'b0;
            end
        endcase
    end
    wire has_remote = opcode != 3'd2 && opcode != 3'd3;
    wire atomic     = opcode == 3'd5 || opcode == 3'd6;

    // Segment indices (16-byte units): datagram 1..3 on UD, then raddr,
    // atomic, data. An atomic always has a raddr segment before it.
    wire [2:0] seg_data = seg_of(op_byte, ud);
    reg [127:0] data_seg; // 16-byte segment seg_data of the kept bytes
    always @(*) begin
        case (seg_data)
            3'd1:    data_seg = head[767:640];
            3'd2:    data_seg = head[639:512];
            3'd3:    data_seg = head[511:384];
            3'd4:    data_seg = head[383:256];
            3'd5:    data_seg = head[255:128];
            3'd6:    data_seg = head[127:0];
            default: data_seg = 128'd0; // 0 and 7: no data segment is there
        endcase
    end
    wire [95:0]  raddr_seg  = ud ? head[383:288] : head[767:672];  // segment 4 or 1 (its last 4 bytes are reserved)
    wire [127:0] atomic_seg = ud ? head[255:128] : head[639:512];  // segment 5 or 2
    // The ctrl bits the model does not read: opmod, byte 7 bits 7:6,
    // signature, dci_stream_id, fm_ce_se but the fence mode and CQ_UPDATE.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [37:0] ignored = {head[895:888], head[839:838], head[831:808], head[804], head[802:800]};
    /* verilator lint_on UNUSEDSIGNAL */
    wire [5:0]  ds       = head[837:832];   // byte 7 bits 5:0
    wire [31:0] bc       = data_seg[127:96];
    wire        inl      = bc[31];

    assign out_err        = !op_ok ? 2'd1 : (ds <= {3'd0, seg_data}) ? 2'd2 : 2'd0;
    assign out_opcode     = opcode;
    assign out_index      = head[887:872];   // bytes 1..2
    assign out_qpn        = head[863:840];   // bytes 4..6
    assign out_bbs        = {1'b0, ds[5:2]} + {4'd0, ds[1:0] != 2'd0};
    assign out_signaled   = head[803];       // byte 11 bit 3
    assign out_fm         = head[807:805];   // byte 11 bits 7:5
    assign out_imm        = head[799:768];   // bytes 12..15
    assign out_raddr      = has_remote ? raddr_seg[95:32] : 64'd0;
    assign out_rkey       = has_remote ? raddr_seg[31:0] : 32'd0;
    assign out_swap_add   = atomic ? atomic_seg[127:64] : 64'd0;
    assign out_compare    = atomic ? atomic_seg[63:0] : 64'd0;
    assign out_inline     = inl;
    assign out_inline_len = inl ? bc[30:0] : 31'd0;
    assign out_inline_off = inl ? {seg_data, 4'd4} : 7'd0;
    assign out_length     = atomic ? 32'd8 : inl ? {1'b0, bc[30:0]} : len_sum;
    assign out_sges       = (out_err != 2'd0 || inl) ? 6'd0 : ds - {3'd0, seg_data};
    wire   one_seg        = !inl && out_sges == 6'd1;
    assign out_lkey       = one_seg ? data_seg[95:64] : 32'd0;
    assign out_laddr      = one_seg ? data_seg[63:0] : 64'd0;

    // ---- the gather list: data segment seg_data + sge_k, from the block memory ----
    wire [5:0]   sge_ix  = {3'd0, seg_data} + sge_k;
    wire [511:0] sge_blk = blk[sge_ix[5:2]];
    reg  [127:0] sge_seg;
    always @(*) begin
        case (sge_ix[1:0])
            2'd0:    sge_seg = sge_blk[511:384];
            2'd1:    sge_seg = sge_blk[383:256];
            2'd2:    sge_seg = sge_blk[255:128];
            default: sge_seg = sge_blk[127:0];
        endcase
    end
    assign sge_valid = held && sge_k != sges;
    assign sge_last  = sge_k + 6'd1 == sges;
    assign sge_len   = sge_seg[127:96];
    assign sge_lkey  = sge_seg[95:64];
    assign sge_addr  = sge_seg[63:0];
    assign out_qkey       = ud ? head[767:736] : 32'd0;          // bytes 16..19
    assign out_rqpn       = ud ? head[695:672] : 24'd0;          // bytes 25..27
    assign out_dlid       = ud ? head[655:640] : 16'd0;          // bytes 30..31
endmodule
