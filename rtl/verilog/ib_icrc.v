// ib_icrc: the invariant CRC (ICRC) over a packet stream of 64-byte beats: it writes each
// packet's ICRC (transmit: the requester's packets, after their headers and payload are
// assembled) and says whether the ICRC the packet came with was right (receive: IBA drops a
// packet with a bad ICRC at its destination). Go model: ib.ICRC, the CRC ib.AppendWire writes
// and ib.ParseWire checks (ib/wire.go, "ICRC (confirmed)"); rtl/cosim_icrc_test.go compares the
// two cycle by cycle on packets from ib.AppendWire.
//
// The CRC (ib/wire.go): CRC-32, polynomial 0x04C11DB7, the register seeded with ones, bits fed
// least significant first (the reflected form: POLY_R = 0xEDB88320, the polynomial's bits
// reversed), the result inverted, over the packet's bytes 0 .. LRH.PktLen x 4 - 5 (LRH through
// the last pad byte) with the variant fields read as ones, written at bytes PktLen x 4 - 4 ..
// PktLen x 4 - 1, least significant byte first (ib/wire.go's putICRC). The variant fields are
// ib/wire.go's icrcLocalMask and icrcGlobalMask, here LOCAL_MASK and GLOBAL_MASK:
//   local packet (LRH.LNH = 2, BTH at byte 8): LRH VL (byte 0 bits 7:4), BTH resv8a (byte 12:
//   FECN, BECN, resv6);
//   global packet (LRH.LNH = 3, GRH at byte 8, BTH at byte 48): the whole LRH (bytes 0..7), GRH
//   TClass and FlowLabel (byte 8 bits 3:0, bytes 9..11), GRH HopLmt (byte 15), BTH resv8a
//   (byte 52).
// Every masked byte lies in the first beat. LNH values 0 and 1 (no BTH) are taken as local.
//
// Stream (in_* valid/ready, out_* valid/ready) as ib_vcrc's: one beat per cycle, a packet's
// beats from in_sop to in_eop, byte k of a beat in data[511-8k -: 8] (LRH byte 0 in the first
// beat's [511:504]), the packet LRH .. ICRC (PktLen x 4 bytes), with or without the 2 bytes of
// room for the VCRC after it, zero padded to the beat. PktLen is read from the first beat
// (bytes 4..5, bits 10:0), LNH from byte 1 bits 1:0. The ICRC is word PktLen - 1 of the packet:
// beat (PktLen - 1) / 16, 4-byte word (PktLen - 1) mod 16 of it (it never straddles beats).
//   out_data      the beat with the ICRC of the bytes before it written in place; every other
//                 byte as it came (the variant fields too: they are ib_vcrc's business).
//   out_icrc_err  with out_eop: the 4 bytes the packet carried at the ICRC's place differ from
//                 it, or the packet ended before that beat (an ICRC never received is wrong).
//   out_len_err   with out_eop: the packet's last beat is neither the ICRC's beat nor the
//                 beat of the VCRC room after it (they differ when PktLen mod 16 = 0), or
//                 PktLen is 0: PktLen disagrees with the packet's length.
// Transmit ignores out_icrc_err (its ICRC slot is whatever the assembler left there); receive
// ignores out_data's ICRC. A packet that ends early gets no ICRC written. A beat with in_sop
// starts a packet whatever came before; beats between an eop and the next sop are taken as
// more of the last packet (the stream never has them).
// Latency 1: a beat taken at an edge is on out_* from that edge. in_ready = out_ready (the
// output register moves whenever the consumer takes, so there is no bubble: one beat a cycle
// while out_ready is 1).
//
// How a beat's CRC is computed (the method of ib_vcrc): the covered bytes of a beat are a
// prefix of it (all 16 words before the ICRC's beat, (PktLen - 1) mod 16 words in it, none
// after), so the words past the prefix are zeroed and the CRC runs over the whole masked beat;
// the z zero words at its end moved the register on by 32 z zero steps, which UNSHIFT(z)
// undoes. The constants are computed at elaboration from POLY_R alone, by whole-vector
// recurrences (below): about 2300 steps of the register and 130 vector operations, not one walk
// of 512 steps per matrix row. The datapath is one always block, so an event-driven simulator
// evaluates it once per change of its inputs.
module ib_icrc (
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
    output reg          out_icrc_err,
    output reg          out_len_err
);
    localparam [31:0] POLY_R = 32'hEDB88320; // 0x04C11DB7 reflected
    localparam [31:0] SEED   = 32'hFFFFFFFF;
    // The variant fields, bytes 0..59 of the first beat in its lanes (byte k in [511-8k -: 8]).
    localparam [511:0] LOCAL_MASK  = {8'hF0, 88'd0, 8'hFF, 408'd0};
    localparam [511:0] GLOBAL_MASK = {64'hFFFF_FFFF_FFFF_FFFF,       // LRH, bytes 0..7
                                      32'h0FFF_FFFF, 24'd0, 8'hFF,    // GRH bytes 8..15
                                      256'd0,                         // GIDs, bytes 16..47
                                      32'd0, 8'hFF, 56'd0,            // BTH bytes 48..59
                                      32'd0};                         // bytes 60..63

    // One step of the register on data bit x: r' = (r >> 1) ^ ((r[0] ^ x) ? POLY_R : 0). The CRC
    // is linear in the register and in the data, and the register only ever meets the data:
    // fed bit p (byte p/8, bit p%8) is XORed into register bit p for the first 32 bits, so a
    // register c before the beat is the beat with c's bytes XORed into bytes 0..3 (c[7:0] into
    // byte 0), from a zero register.
    //
    // The data matrix. U_k, k = 0..511, is the register after a 1 and then k zero bits, from a
    // zero register: the 1 gives POLY_R and each zero bit a step, U_(k+1) = F(U_k) with
    // F(r) = (r >> 1) ^ (r[0] ? POLY_R : 0). A data bit fed at step p of the beat's 512 has
    // 511 - p zero bits after it, so it flips the register by U_(511-p). Row i of the matrix as
    // a vector over k, X_i[k] = U_k[i], follows from F bit by bit: U_(k+1)[i] = U_k[i+1] ^
    // (U_k[0] & POLY_R[i]) (U_k[32] = 0) and U_0 = POLY_R, so
    //   X_i = ((X_(i+1) ^ (POLY_R[i] ? X_0 : 0)) << 1) | POLY_R[i],  X_32 = 0:
    // every row from X_0, the register's bit 0 over 512 steps. The beat's lanes are in another
    // order: beat byte 63 - a lies in lanes [8 a +: 8] and is fed at steps 8 (63 - a) + b, b =
    // 0..7 its bit (least significant first), so lane 8 a + b is fed at step 511 - (8 a + 7 - b):
    // row i in lane order is X_i with each byte's bits reversed (three swap stages). 512 steps
    // and about 130 vector operations at elaboration, where a walk per row would be 32 x 512
    // (Yosys evaluates constant functions slowly). data_rows_of returns row i in bits
    // [512 i +: 512], bit j set when beat bit j (lane j), fed into a zero register, flips
    // register bit i after the beat.
    localparam [511:0] NIBBLES = {64{8'hF0}}, PAIRS = {64{8'hCC}}, ODDS = {64{8'hAA}};
    function [32*512-1:0] data_rows_of(input [31:0] poly);
        integer k, i;
        reg [31:0]  e;
        reg [511:0] x0, xi, l;
        begin
            e = poly;
            for (k = 0; k < 512; k = k + 1) begin
                x0[k] = e[0];
                e = {1'b0, e[31:1]} ^ (e[0] ? poly : 32'h0);
            end
            xi = 512'd0;
            for (i = 31; i >= 0; i = i - 1) begin
                xi = ((xi ^ (poly[i] ? x0 : 512'd0)) << 1) | {511'd0, poly[i]};
                l = ((xi & NIBBLES) >> 4) | ((xi & ~NIBBLES) << 4);
                l = ((l & PAIRS) >> 2) | ((l & ~PAIRS) << 2);
                l = ((l & ODDS) >> 1) | ((l & ~ODDS) << 1);
                data_rows_of[512*i +: 512] = l;
            end
        end
    endfunction
    localparam [32*512-1:0] DATA_ROWS = data_rows_of(POLY_R);

    // unshift_cols(z): UNSHIFT(z), the register taken back 32 z zero steps, as its 32 columns
    // (column m, bits [32 m +: 32]: where register bit m goes). Undoing one zero step: POLY_R[31]
    // = 1 and (r >> 1)[31] = 0, so r'[31] = r[0] and r = {(r' ^ (r'[31] ? POLY_R : 0))[30:0],
    // r'[31]} (x is invertible modulo a polynomial with a constant term). Bit m < 31 taken back
    // a step is bit m + 1 (its r'[31] is 0), so column m is bit 0 taken back 32 z + m steps:
    // one walk of 32 z + 32 steps gives all 32.
    function [1023:0] unshift_cols(input integer z);
        integer j;
        reg [31:0] e;
        reg [30:0] t;
        begin
            unshift_cols = 1024'd0;
            e = 32'd1;
            for (j = 0; j < 32*z + 32; j = j + 1) begin
                if (j >= 32*z) unshift_cols[32*(j - 32*z) +: 32] = e;
                t = e[30:0] ^ (e[31] ? POLY_R[30:0] : 31'h0);
                e = {t, e[31]};
            end
        end
    endfunction

    reg  [10:0] pktlen;    // LRH.PktLen of the current packet, 4-byte words
    reg  [7:0]  beat;      // beats of the current packet taken, saturating at 255
    reg  [31:0] crc;       // the register after the packet's beats taken so far
    reg         icrc_seen; // the ICRC's beat has been taken
    reg         icrc_bad;  // ... and the ICRC the packet carried differed

    assign in_ready = out_ready;
    wire take = in_valid && in_ready;

    wire [10:0] len_now  = in_sop ? in_data[474:464] : pktlen; // bytes 4..5, PktLen bits 10:0
    wire        is_global   = in_data[497:496] == 2'b11;          // byte 1 bits 1:0, LNH
    wire [7:0]  beat_now = in_sop ? 8'd0 : beat;
    wire [31:0] crc_now  = in_sop ? SEED : crc;
    wire        len_ok   = len_now != 11'd0;
    wire [10:0] iw       = len_now - 11'd1;        // the ICRC's word in the packet
    wire [7:0]  ibeat    = {1'b0, iw[10:4]};
    wire [3:0]  iword    = iw[3:0];
    wire [7:0]  vbeat    = {1'b0, len_now[10:4]};  // the VCRC room's beat
    wire        at_i     = len_ok && beat_now == ibeat;
    wire        end_ok   = len_ok && (beat_now == ibeat || beat_now == vbeat);
    wire [4:0]  words    = (beat_now < ibeat) ? 5'd16 : (at_i ? {1'b0, iword} : 5'd0);
    wire [4:0]  zwords   = 5'd16 - words; // zero words at the beat's end

    // The constant rows and maps as nets. UNSHIFT(z) = UNSHIFT(4 (z / 4)) UNSHIFT(z mod 4): two
    // small choices of 32 x 32 maps.
    wire [511:0]  data_rows [0:31];
    wire [1023:0] unshift_lo_m [0:3]; // UNSHIFT(b), b = 0..3
    wire [1023:0] unshift_hi_m [0:4]; // UNSHIFT(4a), a = 0..4
    genvar g;
    generate
        for (g = 0; g < 32; g = g + 1) begin : g_row
            assign data_rows[g] = DATA_ROWS[512*g +: 512];
        end
        for (g = 0; g < 5; g = g + 1) begin : g_unshift
            localparam [1023:0] UNSHIFT_HI = unshift_cols(4*g);
            assign unshift_hi_m[g] = UNSHIFT_HI;
            if (g < 4) begin : g_lo
                localparam [1023:0] UNSHIFT_LO = unshift_cols(g);
                assign unshift_lo_m[g] = UNSHIFT_LO;
            end
        end
    endgenerate

    // The beat's datapath in one block, so that it settles in one evaluation in an event-driven
    // simulator. Word w of the beat is bytes 4w..4w+3, lanes [511-32w -: 32]; it is covered by
    // the CRC when w < words and is the ICRC's place when at_i and w = iword. Word by word rather
    // than shifts of the whole beat by a variable amount, which synthesise as 512-bit barrel
    // shifters.
    //   fed    the covered words with the variant fields as ones (first beat only), the rest
    //          zero, the register XORed into bytes 0..3;
    //   full   the register after the whole (zero-extended) beat, DATA_ROWS x fed;
    //   crc_next  the register after the covered words: full taken back zwords zero words.
    wire [511:0] varmask = in_sop ? (is_global ? GLOBAL_MASK : LOCAL_MASK) : 512'd0;
    wire [31:0]  icrc;
    wire [31:0]  icrc_lanes = {icrc[7:0], icrc[15:8], icrc[23:16], icrc[31:24]}; // LSB first
    reg  [511:0] fed, with_icrc;
    reg  [31:0]  full, lo, crc_next;
    reg  [31:0]  iword_data; // the word at the ICRC's place, as received
    reg  [1023:0] mlo, mhi;
    integer w, r, m;
    always @* begin
        fed = 512'd0;
        for (w = 0; w < 16; w = w + 1)
            if (w < words) fed[511-32*w -: 32] = in_data[511-32*w -: 32] | varmask[511-32*w -: 32];
        fed[511 -: 32] = fed[511 -: 32] ^ {crc_now[7:0], crc_now[15:8], crc_now[23:16], crc_now[31:24]};
        for (r = 0; r < 32; r = r + 1) full[r] = ^(fed & data_rows[r]);
        mlo = unshift_lo_m[zwords[1:0]];
        mhi = unshift_hi_m[zwords[4:2]];
        lo = 32'd0;
        for (m = 0; m < 32; m = m + 1) lo = lo ^ ({32{full[m]}} & mlo[32*m +: 32]);
        crc_next = 32'd0;
        for (m = 0; m < 32; m = m + 1) crc_next = crc_next ^ ({32{lo[m]}} & mhi[32*m +: 32]);
    end
    // The beat with the ICRC in place, and the word there as received.
    integer v;
    always @* begin
        with_icrc = in_data;
        iword_data = 32'd0;
        for (v = 0; v < 16; v = v + 1)
            if (iword == v[3:0]) begin
                iword_data = in_data[511-32*v -: 32];
                if (at_i) with_icrc[511-32*v -: 32] = icrc_lanes;
            end
    end
    assign icrc = ~crc_next;
    wire [31:0]  carried    = {iword_data[7:0], iword_data[15:8], iword_data[23:16], iword_data[31:24]};
    // The previous packet's flags do not reach a packet's first beat.
    wire seen_now = !in_sop && icrc_seen;
    wire bad_now  = at_i ? (carried != icrc) : (seen_now ? icrc_bad : 1'b1);

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            out_valid    <= 1'b0;
            out_data     <= 512'd0;
            out_sop      <= 1'b0;
            out_eop      <= 1'b0;
            out_icrc_err <= 1'b0;
            out_len_err  <= 1'b0;
            pktlen       <= 11'd0;
            beat         <= 8'd0;
            crc          <= SEED;
            icrc_seen    <= 1'b0;
            icrc_bad     <= 1'b0;
        end else begin
            if (out_ready) out_valid <= in_valid;
            if (take) begin
                out_data     <= with_icrc;
                out_sop      <= in_sop;
                out_eop      <= in_eop;
                out_icrc_err <= in_eop && bad_now;
                out_len_err  <= in_eop && !end_ok;
                pktlen       <= len_now;
                beat         <= (beat_now == 8'd255) ? beat_now : beat_now + 8'd1;
                crc          <= crc_next;
                icrc_seen    <= at_i || seen_now;
                icrc_bad     <= bad_now;
            end
        end
    end
endmodule
