// ib_vcrc: the link layer's variant CRC (VCRC) over a packet stream of 64-byte beats: it
// writes each packet's VCRC (transmit: ib_link regenerates it, since a switch may have
// rewritten LRH.VL) and says whether the VCRC the packet came with was right (receive: IBA
// discards a packet with a bad VCRC and counts it in PortRcvErrors). Go model: ib.VCRC, the CRC
// ib.AppendWire writes and ib.ParseWire checks (ib/wire.go); rtl/cosim_vcrc_test.go compares
// the two cycle by cycle on packets from ib.AppendWire.
//
// The CRC (ib/wire.go, "VCRC and LPCRC"): CRC-16, polynomial 0x100B, the register seeded with
// ones, bits fed least significant first (the reflected form: POLY_R = 0xD008, the
// polynomial's bits reversed), the result inverted, over the packet's first LRH.PktLen x 4
// bytes (LRH through ICRC), written at byte PktLen x 4, least significant byte first.
// Unconfirmed (as ib/wire.go says): no published VCRC value was found, so the reflection, the
// inversion and the byte order are our Go definition's, which this block equals.
//
// Stream (in_* valid/ready, out_* valid/ready): one beat per cycle, a packet's beats from
// in_sop to in_eop, byte k of a beat in data[511-8k -: 8] (byte 0 of the packet, LRH byte 0,
// in the first beat's [511:504]: the byte lanes of hca_wqe_parse, hca_cqe_writer and
// sw_input_unit, whose LRH.DLID is bytes 2..3), the packet LRH..VCRC zero padded to the beat.
// PktLen is read from the first beat (bytes 4..5, bits 10:0); the VCRC lies in beat
// PktLen / 16 at byte 4 x (PktLen mod 16) of it (a multiple of 4, so its 2 bytes never
// straddle two beats; PktLen mod 16 = 0 puts it alone at the start of its beat).
//   out_data      the beat with the VCRC of the bytes before it written in place; every other
//                 byte as it came (transmit: the VL nibble the switch rewrote is covered).
//   out_vcrc_err  with out_eop: the 2 bytes the packet carried at the VCRC's place differ from
//                 it, or the packet ended before that beat (a VCRC never received is wrong).
//   out_len_err   with out_eop: the packet's last beat is not the VCRC's beat (PktLen
//                 disagrees with the packet's length, a packet IBA discards as well).
// A packet that ends early (out_len_err, the VCRC's beat never came) gets no VCRC written. A
// beat with in_sop starts a packet whatever came before; beats between an eop and the next
// sop are taken as more of the last packet (the stream never has them).
// Latency 1: a beat taken at an edge is on out_* from that edge. in_ready = out_ready (the
// output register moves whenever the consumer takes, so there is no bubble: one beat a
// cycle while out_ready is 1); receive, which has no back-pressure, ties out_ready to 1.
//
// How a beat's CRC is computed: the covered bytes of a beat are a prefix of it (all 16 of its
// 4-byte words before the VCRC's beat, PktLen mod 16 words in it, none after), so the words
// past the prefix are zeroed and the CRC runs over the whole masked beat; the z zero words at
// its end multiplied the register by x^(32 z) (mod the polynomial), which UNSHIFT_M(z) undoes
// (below). One 512-bit XOR network and two small choices of 16x16 linear maps, instead of 17
// networks of every length.
module ib_vcrc (
    input  wire         clk,
    input  wire         rst_n,
    input  wire         in_valid,
    output wire         in_ready,
    input  wire [511:0] in_data,
    input  wire         in_sop,
    input  wire         in_eop,
    output reg          out_valid,
    input  wire         out_ready,
    output reg  [511:0] out_data,
    output reg          out_sop,
    output reg          out_eop,
    output reg          out_vcrc_err,
    output reg          out_len_err
);
    localparam [15:0] POLY_R = 16'hD008; // 0x100B reflected
    localparam [15:0] SEED   = 16'hFFFF;

    // The CRC is linear in the register and in the data, and the register only ever meets the
    // data: fed bit p (byte p/8, bit p%8) is XORed into register bit p for the first 16 bits,
    // so a register c before the beat is the beat with c[7:0] XORed into byte 0 and c[15:8]
    // into byte 1, from a zero register. A beat's update is then constant matrices (computed at
    // elaboration, below) applied with AND and XOR reductions:
    //   full     = DATA_M (d ^ {c[7:0], c[15:8], 0})  the register after the (masked) beat
    //   crc_next = UNSHIFT_M(z) full                   the register before its last z zero words
    // with UNSHIFT_M(z) = UNSHIFT_M(4 (z / 4)) UNSHIFT_M(z mod 4), two small choices of 16x16
    // maps instead of one among 17.
    // One step of the register on data bit x: r' = (r >> 1) ^ ((r[0] ^ x) ? POLY_R : 0).

    // The rows, as ib_icrc computes its own (its header has the derivation, for 32 bits): U_k,
    // the register k zero steps after a 1 was fed into a zero register, is U_0 = POLY_R and
    // U_(k+1) = F(U_k), F(r) = (r >> 1) ^ (r[0] ? POLY_R : 0); a data bit fed at step p of the
    // beat's 512 flips the register by U_(511-p). Row i over k, X_i[k] = U_k[i], follows from
    // F bit by bit: X_i = ((X_(i+1) ^ (POLY_R[i] ? X_0 : 0)) << 1) | POLY_R[i], X_16 = 0, every
    // row from X_0 (the register's bit 0 over 512 steps). Byte k of the beat is d[511-8k -: 8],
    // fed least significant bit first, so lane 8a + b is fed at step 511 - (8a + 7 - b): row i
    // in lane order is X_i with each byte's bits reversed (three swap stages). 512 steps and
    // about 70 vector operations at elaboration, once per instance, where a walk per row took
    // 16 x 512 and the old unshift_matrix 16 x 32 z per z (Icarus spent 0.2 s elaborating each
    // ib_vcrc, 30 s of a 64-port fabric testbench's compile). data_rows_of returns row i in
    // bits [512 i +: 512], bit j set when beat bit j (lane j), fed into a zero register, flips
    // register bit i after the beat.
    localparam [511:0] NIBBLES = {64{8'hF0}}, PAIRS = {64{8'hCC}}, ODDS = {64{8'hAA}};
    function [16*512-1:0] data_rows_of(input [15:0] poly);
        integer k, i;
        reg [15:0]  e;
        reg [511:0] x0, xi, l;
        begin
            e = poly;
            for (k = 0; k < 512; k = k + 1) begin
                x0[k] = e[0];
                e = {1'b0, e[15:1]} ^ (e[0] ? poly : 16'h0);
            end
            xi = 512'd0;
            for (i = 15; i >= 0; i = i - 1) begin
                xi = ((xi ^ (poly[i] ? x0 : 512'd0)) << 1) | {511'd0, poly[i]};
                l = ((xi & NIBBLES) >> 4) | ((xi & ~NIBBLES) << 4);
                l = ((l & PAIRS) >> 2) | ((l & ~PAIRS) << 2);
                l = ((l & ODDS) >> 1) | ((l & ~ODDS) << 1);
                data_rows_of[512*i +: 512] = l;
            end
        end
    endfunction
    localparam [16*512-1:0] DATA_ROWS = data_rows_of(POLY_R);

    // unshift_cols(z): UNSHIFT_M(z), the register taken back z zero words (32 zero bits each),
    // as its 16 columns (column m, bits [16 m +: 16]: where register bit m goes). Undoing one
    // zero step: POLY_R[15] = 1 and (r >> 1)[15] = 0, so r'[15] = r[0] and
    // r = {(r' ^ (r'[15] ? POLY_R : 0))[14:0], r'[15]} (x is invertible mod a polynomial with a
    // constant term). Bit m < 15 taken back a step is bit m + 1 (its r'[15] is 0), so column m
    // is bit 0 taken back 32 z + m steps: one walk of 32 z + 16 steps gives all 16.
    function [255:0] unshift_cols(input integer z);
        integer j;
        reg [15:0] e;
        reg [14:0] t;
        begin
            unshift_cols = 256'd0;
            e = 16'd1;
            for (j = 0; j < 32*z + 16; j = j + 1) begin
                if (j >= 32*z) unshift_cols[16*(j - 32*z) +: 16] = e;
                t = e[14:0] ^ (e[15] ? POLY_R[14:0] : 15'h0000);
                e = {t, e[15]};
            end
        end
    endfunction

    reg  [10:0] pktlen;   // LRH.PktLen of the current packet, 4-byte words
    reg  [7:0]  beat;     // beats of the current packet taken, saturating at 255
    reg  [15:0] crc;      // the register after the packet's beats taken so far
    reg         vcrc_seen; // the VCRC's beat has been taken
    reg         vcrc_bad;  // ... and the VCRC the packet carried differed

    assign in_ready = out_ready;
    wire take = in_valid && in_ready;

    wire [10:0] len_now  = in_sop ? in_data[474:464] : pktlen; // bytes 4..5, PktLen bits 10:0
    wire [7:0]  beat_now = in_sop ? 8'd0 : beat;
    wire [15:0] crc_now  = in_sop ? SEED : crc;
    wire [7:0]  vbeat    = {1'b0, len_now[10:4]};
    wire [3:0]  vword    = len_now[3:0];
    wire        at_v     = beat_now == vbeat;
    wire [4:0]  words    = (beat_now < vbeat) ? 5'd16 : (at_v ? {1'b0, vword} : 5'd0);
    wire [4:0]  zwords   = 5'd16 - words; // zero words at the beat's end

    // The beat's first `words` 4-byte words, the rest zero.
    wire [511:0] masked = in_data & ~({512{1'b1}} >> {words, 5'd0});
    wire [511:0] fed = masked ^ {crc_now[7:0], crc_now[15:8], 496'd0};
    // The constant rows as nets, and each product computed in one block, so that a beat's
    // register settles in one evaluation in an event-driven simulator.
    wire [511:0] data_rows [0:15];
    wire [255:0] unshift_lo_m [0:3]; // UNSHIFT_M(b), b = 0..3
    wire [255:0] unshift_hi_m [0:4]; // UNSHIFT_M(4a), a = 0..4
    genvar g;
    generate
        for (g = 0; g < 16; g = g + 1) begin : g_data
            assign data_rows[g] = DATA_ROWS[512*g +: 512];
        end
        for (g = 0; g < 5; g = g + 1) begin : g_unshift
            localparam [255:0] UNSHIFT_HI = unshift_cols(4*g);
            assign unshift_hi_m[g] = UNSHIFT_HI;
            if (g < 4) begin : g_lo
                localparam [255:0] UNSHIFT_LO = unshift_cols(g);
                assign unshift_lo_m[g] = UNSHIFT_LO;
            end
        end
    endgenerate
    reg [15:0]  full, lo, crc_next;
    reg [255:0] mlo, mhi;
    integer r, m;
    always @* begin
        mlo = unshift_lo_m[zwords[1:0]];
        mhi = unshift_hi_m[zwords[4:2]];
        for (r = 0; r < 16; r = r + 1) full[r] = ^(fed & data_rows[r]);
        lo = 16'd0;
        for (m = 0; m < 16; m = m + 1) lo = lo ^ ({16{full[m]}} & mlo[16*m +: 16]);
        crc_next = 16'd0;
        for (m = 0; m < 16; m = m + 1) crc_next = crc_next ^ ({16{lo[m]}} & mhi[16*m +: 16]);
    end
    wire [15:0]  vcrc = ~crc_next;
    // The VCRC at bytes 4 vword (least significant) and 4 vword + 1 (most), in its beat.
    wire [511:0] vcrc_lanes = {{vcrc[7:0], vcrc[15:8]}, 496'd0} >> {vword, 5'd0};
    wire [511:0] vcrc_mask  = {16'hFFFF, 496'd0} >> {vword, 5'd0};
    wire [511:0] with_vcrc  = at_v ? (in_data & ~vcrc_mask | vcrc_lanes) : in_data;
    // The VCRC as received, in the same bytes.
    wire [15:0]  vword_data = in_data[511 - 32*vword -: 16];
    wire [15:0]  carried    = {vword_data[7:0], vword_data[15:8]};
    // The previous packet's flags do not reach a packet's first beat.
    wire seen_now = !in_sop && vcrc_seen;
    wire bad_now  = at_v ? (carried != vcrc) : (seen_now ? vcrc_bad : 1'b1);

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            out_valid    <= 1'b0;
            out_data     <= 512'd0;
            out_sop      <= 1'b0;
            out_eop      <= 1'b0;
            out_vcrc_err <= 1'b0;
            out_len_err  <= 1'b0;
            pktlen       <= 11'd0;
            beat         <= 8'd0;
            crc          <= SEED;
            vcrc_seen    <= 1'b0;
            vcrc_bad     <= 1'b0;
        end else begin
            if (out_ready) out_valid <= in_valid;
            if (take) begin
                out_data     <= with_vcrc;
                out_sop      <= in_sop;
                out_eop      <= in_eop;
                out_vcrc_err <= in_eop && bad_now;
                out_len_err  <= in_eop && !at_v;
                pktlen       <= len_now;
                beat         <= (beat_now == 8'd255) ? beat_now : beat_now + 8'd1;
                crc          <= crc_next;
                vcrc_seen    <= at_v || seen_now;
                vcrc_bad     <= bad_now;
            end
        end
    end
endmodule
