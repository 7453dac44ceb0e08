// hca_tx_assemble: the requester's packet assembly. It joins each packet's header beat from
// hca_tx_packetizer with the packet's payload bytes, taken from the message's host blocks as
// the DMA engine's read client rd1 returns them, and sends the packet as 64-byte beats in
// ib_vcrc's stream format with its PadCnt bytes and the ICRC's 4 bytes zero (ib_icrc fills
// them in the stream; ib_vcrc then writes the VCRC at byte PktLen x 4). Go model: the model's
// requester, hca.Requester.Next, with the payload the device's scheduler reads from host memory
// (hca.Device.schedule: LocalAddr + index x MTU, the packet's payload length), encoded with
// ib.AppendWire; rtl/cosim_asm_test.go compares every byte of every beat with those bytes, the
// ICRC and VCRC zeroed.
//
// Packets (pkt_* valid/ready): hca_tx_packetizer's out_* port, connected as it is.
//   pkt_hdr        the header bytes, byte k in pkt_hdr[511-8k -: 8], zero past pkt_hdr_bytes
//                  (the packetizer's contract: this block ORs the beat in, it does not mask it).
//   pkt_hdr_bytes  H, 20..48: the payload follows at byte H.
//   pkt_pay_len    P, 0..4096: the packet's payload bytes.
//   pkt_pay_off    the payload's offset in the message: not used (the block follows the stream,
//                  below); a port so the packetizer's out_* connects whole.
//   pkt_last       the message's last packet.
// Payload (pay_* valid/ready): the message's bytes as rd1 delivers a read of them, whole 64-byte
// host blocks in address order, each block once: a message of L > 0 bytes whose first byte is
// at host address A is the ceil((A mod 64 + L) / 64) blocks from A rounded down to 64, its byte
// i at byte (A mod 64 + i) of that run; a message without payload (L = 0, a READ request, an
// atomic) has no block. Messages follow each other in packet order, each from a fresh block.
//   pay_start      with a message's first block, A mod 64; ignored with the others.
// The caller issues the reads and buffers their blocks (rd1 answers without back-pressure, so
// whoever reads must own room for what it asked): hca_transport, whose transmit buffer
// (hca.tx_buffer_bytes) and scheduler decide when a message's payload is read, as the model's
// Device.schedule reads it at the packet's grant. The same port takes a WQE's inline data as
// WQE blocks (pay_start the inline data's byte in its first block); that is not tested.
// Out (out_* valid/ready, ib_vcrc's in_* format): one 64-byte beat a cycle, byte k of the
// packet's beat b in out_data[511-8k -: 8] at packet byte 64 b + k, out_sop on beat 0, out_eop
// on beat floor(4 PktLen / 64), the VCRC's beat (its 2 bytes never straddle a beat: 4 PktLen is
// a multiple of 4). Packet bytes: the header (0..H-1), the payload (H..H+P-1), PadCnt zeros,
// the ICRC's 4 zeros (ending at 4 PktLen = H + P + PadCnt + 4), then zeros to the beat's end
// (the VCRC's 2 bytes among them).
// How: a window of two blocks (q0 the older) holds the stream; beat b of a packet whose payload
// starts at byte s of its first block (s = pay_start for a message's first packet, else where
// the previous packet ended) takes packet byte 64 b + k from stream byte 64 b + k - H + s, so
// the beat is the window {q0, q1} shifted right by (H - s) mod 64 bytes, masked to the payload,
// ORed with the header beat on beat 0. A beat waits until the window holds every block its
// payload bytes lie in (none past the payload: the pad, ICRC and VCRC beats need none); after
// it the window drops the blocks before the next beat's first payload byte, and after a
// packet's last beat every block of the packet but one it shares with the next packet of its
// message (its payload ends inside the block). pay_ready is 1 while the window, after this
// cycle's drops, has room (combinationally from out_ready). Timing: a packet on pkt_* is taken
// at the edge its beat 0 moves into the output register (pkt_ready is that move,
// combinationally from pkt_valid, pkt_hdr_bytes, pkt_pay_len, pkt_last, the window and
// out_ready), so its header beat is read where it is, not copied, and its beat 0 can go in
// the cycle after the previous packet's last (the window's blocks taken at an edge count from
// that edge); beats go one a cycle while out_ready is 1 and the stream keeps up: packets of one
// message follow each other without a bubble; a message's first beat waits a cycle when it
// needs two blocks and the previous packet's last beat used two (the window refills one block a
// cycle).
// Not here: the ICRC and VCRC (ib_icrc, ib_vcrc), the GRH and UD's DETH (the packetizer sends
// neither; a header of 20..48 bytes is all the shifter takes: past 63 it would need a second
// header beat), payload reads (hca_transport, above), inline data (the port could take it, above).
module hca_tx_assemble (
    input  wire         clk,
    input  wire         rst_n,
    input  wire         pkt_valid,
    output wire         pkt_ready,
    input  wire [511:0] pkt_hdr,
    input  wire [5:0]   pkt_hdr_bytes,
    input  wire [12:0]  pkt_pay_len,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [31:0]  pkt_pay_off, // not used: the stream says where the payload is
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire         pkt_last,
    input  wire         pay_valid,
    output wire         pay_ready,
    input  wire [511:0] pay_data,
    input  wire [5:0]   pay_start,
    output reg          out_valid,
    input  wire         out_ready,
    output reg  [511:0] out_data,
    output reg          out_sop,
    output reg          out_eop
);
    // The packet being sent: the one on pkt_* until its beat 0 goes (the packet is taken with
    // it, so the header beat is not copied), then its fields latched for the rest.
    reg         busy;     // beats 1.. of a packet still to send
    reg [5:0]   r_h;
    reg [12:0]  r_p;
    reg         r_last;
    reg [6:0]   r_beat;
    wire [5:0]  st_h    = busy ? r_h : pkt_hdr_bytes;  // header bytes
    wire [12:0] st_p    = busy ? r_p : pkt_pay_len;    // payload bytes
    wire        st_last = busy ? r_last : pkt_last;    // its message's last packet
    wire [6:0]  st_beat = busy ? r_beat : 7'd0;        // the beat's index, 0..64
    // Where the payload starts: a message's first packet takes pay_start with its first block
    // (msg_new until its beat 0 goes); a later packet starts where the previous one ended.
    reg         msg_new;
    reg [5:0]   st_pos;   // byte of the packet's first block where its payload starts
    // The window: up to two blocks of the stream, q0 the older.
    reg [511:0] q0, q1;
    reg [5:0]   q0_start, q1_start;
    reg [1:0]   qn;       // blocks held

    wire [5:0]  pos = (st_beat == 7'd0 && msg_new) ? q0_start : st_pos;
    // Blocks are numbered from the packet's first (0). Packet byte j is stream byte
    // j - H + pos, in block (j - H + pos) / 64. With D = (H - pos) mod 64 and c = pos > H,
    // j - H + pos = 64 (j/64 + c) + (j mod 64) - D: beat b's bytes lie in blocks m - 1 and m,
    // m = b + c, and byte k of it is byte 64 + k - D of {block m-1, block m}.
    wire        c    = pos > st_h;
    wire [5:0]  dsh  = st_h - pos;                          // D
    wire [7:0]  m    = {1'b0, st_beat} + {7'd0, c};
    // The beat's first payload byte (byte H of beat 0, byte 0 of a later one) is in block m - 1
    // when it is not at D (beat 0: c; later: D != 0), else in block m.
    wire        lo_used = (st_beat == 7'd0) ? c : (dsh != 6'd0);
    wire [7:0]  first   = lo_used ? m - 8'd1 : m;
    wire [7:0]  first_n = (dsh != 6'd0) ? m : m + 8'd1;     // the next beat's first
    wire [13:0] pend  = {8'd0, pos} + {1'b0, st_p};         // stream bytes to the payload's end
    wire [7:0]  nblk  = (st_p == 13'd0) ? 8'd0 : pend[13:6] + {7'd0, pend[5:0] != 6'd0};
    // A packet's last block stays for the next packet of its message when it ends inside it.
    wire        shared = !st_last && st_p != 13'd0 && pend[5:0] != 6'd0;
    wire [7:0]  npop   = nblk - {7'd0, shared};
    // PktLen x 4: header, payload, PadCnt, ICRC; the VCRC is at that byte, in beat tlen / 64.
    // (Wider than the bits read: the low bits of tlen, pad4, lastb and drop8 and win's upper
    // half are the arithmetic's, not used.)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [12:0] pad4   = st_p + 13'd3;
    wire [12:0] tlen   = {7'd0, st_h} + {pad4[12:2], 2'b00} + 13'd4;
    wire        final_beat = st_beat == tlen[12:6];
    wire [7:0]  lastb  = (m < nblk) ? m : nblk - 8'd1;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [1:0]  need   = (first >= nblk) ? 2'd0 : lastb[1:0] - first[1:0] + 2'd1;

    wire emit = (busy || pkt_valid) && qn >= need && (!out_valid || out_ready);
    wire done = emit && final_beat;
    assign pkt_ready = !busy && emit;                   // taken with its beat 0

    wire [7:0]  cap_a = (first < npop) ? first : npop;      // blocks dropped before this beat
    wire [7:0]  cap_b = (first_n < npop) ? first_n : npop;  // before the next
    /* verilator lint_off UNUSEDSIGNAL */
    wire [7:0]  drop8 = done ? npop - cap_a : cap_b - cap_a;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [1:0]  drop  = emit ? drop8[1:0] : 2'd0;
    wire [1:0]  left  = qn - drop;
    assign pay_ready = left != 2'd2;
    wire push = pay_valid && pay_ready;

    // The beat: the window shifted into place, masked to the payload, the header ORed in.
    wire [511:0]  hi_blk  = lo_used ? q1 : q0;
    // {q0, hi_blk} >> 8 D as six mux stages of 2^i bytes (a variable $shr of 1024 bits costs
    // Yosys's techmap several times the time); the upper bits fold away.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [1023:0] sh0 = {q0, hi_blk};
    wire [1023:0] sh1 = dsh[0] ? {8'd0,   sh0[1023:8]}   : sh0;
    wire [1023:0] sh2 = dsh[1] ? {16'd0,  sh1[1023:16]}  : sh1;
    wire [1023:0] sh3 = dsh[2] ? {32'd0,  sh2[1023:32]}  : sh2;
    wire [1023:0] sh4 = dsh[3] ? {64'd0,  sh3[1023:64]}  : sh3;
    wire [1023:0] sh5 = dsh[4] ? {128'd0, sh4[1023:128]} : sh4;
    wire [1023:0] win = dsh[5] ? {256'd0, sh5[1023:256]} : sh5;
    /* verilator lint_on UNUSEDSIGNAL */
    // Payload bytes of the beat: k in [lb, ub), from packet bytes [H, H + P).
    wire [12:0]   base    = {st_beat, 6'd0};                // packet byte of the beat's byte 0
    wire [12:0]   pay_end = {7'd0, st_h} + st_p;
    wire [12:0]   rest    = pay_end - base;
    wire [6:0]    ub      = (pay_end <= base) ? 7'd0 : (rest >= 13'd64) ? 7'd64 : rest[6:0];
    wire [6:0]    lb      = (st_beat == 7'd0) ? {1'b0, st_h} : 7'd0;
    reg  [511:0]  paymask;
    integer k;
    always @* begin
        for (k = 0; k < 64; k = k + 1)
            paymask[511-8*k -: 8] = {8{k[6:0] >= lb && k[6:0] < ub}};
    end
    wire [511:0] beat = (win[511:0] & paymask) | (busy ? 512'd0 : pkt_hdr);

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            busy      <= 1'b0;
            out_valid <= 1'b0;
            msg_new   <= 1'b1;
            qn        <= 2'd0;
            q0_start  <= 6'd0;
            q1_start  <= 6'd0;
        end else begin
            if (emit)
                out_valid <= 1'b1;
            else if (out_ready)
                out_valid <= 1'b0;
            if (emit)
                busy <= !final_beat;
            if (emit && st_beat == 7'd0)
                msg_new <= 1'b0;
            if (done)
                msg_new <= st_last;
            qn <= left + {1'b0, push};
            if (drop == 2'd1)
                q0_start <= q1_start;
            if (push && left == 2'd0)
                q0_start <= pay_start;
            if (push && left == 2'd1)
                q1_start <= pay_start;
        end
    end

    always @(posedge clk) begin
        if (emit) begin
            out_data <= beat;
            out_sop  <= st_beat == 7'd0;
            out_eop  <= final_beat;
            r_beat   <= st_beat + 7'd1;
            r_h      <= st_h;
            r_p      <= st_p;
            r_last   <= st_last;
            if (st_beat == 7'd0)
                st_pos <= pos;
            if (final_beat)
                st_pos <= pend[5:0];
        end
        if (drop == 2'd1)
            q0 <= q1;
        if (push && left == 2'd0)
            q0 <= pay_data;
        if (push && left == 2'd1)
            q1 <= pay_data;
    end
endmodule
