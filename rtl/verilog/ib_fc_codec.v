// ib_fc_codec: the link's flow-control packets (ib-facts.md §2, ib/wire.go): the encoder turns
// (FCTBS, VL, FCCL) into the 6-byte packet with its LPCRC, the decoder a received packet into
// its fields and whether its LPCRC holds (IBA: a flow-control packet with a bad LPCRC is
// ignored; the model's link.Port counts it in Errors.FCPackets). Go model: ib.AppendWire and
// ib.ParseWire of a Kind == FlowControl packet, and ib.VCRC; rtl/cosim_vcrc_test.go compares
// the two cycle by cycle.
//
// The packet, byte 0 in pkt[47:40] (most significant first, as every datapath here):
//   Op 4 | FCTBS 12 | VL 4 | FCCL 12 | LPCRC 16
// The encoder writes Op 0 (normal flow control; the only one the model sends). The LPCRC is
// the VCRC's CRC (ib_vcrc: CRC-16 0x100B, seed all ones, reflected, inverted) over bytes 0..3,
// least significant byte first in bytes 4..5. Unconfirmed (ib/wire.go): that the LPCRC is
// this CRC, and its bit and byte order, rest on our Go definition, which this block equals;
// no published flow-control packet with its LPCRC was found.
//
// Encoder: enc_* valid/ready in, enc_out_* valid/ready out, latency 1, enc_ready =
// enc_out_ready (the register moves whenever the consumer takes: one packet a cycle).
// Decoder: dec_valid in, dec_out_* out from the next edge, no back-pressure (the receive side
// of a link has none). dec_out_op, _fctbs, _vl and _fccl are the received bits whatever the
// LPCRC; dec_out_lpcrc_err = 1 when bytes 4..5 are not the LPCRC of bytes 0..3. A packet of
// another Op with a good LPCRC is decoded as it is (ib.ParseWire refuses it: only Op 0 is
// modelled); ib_link passes on only Op 0 with a good LPCRC.
module ib_fc_codec (
    input  wire        clk,
    input  wire        rst_n,
    input  wire        enc_valid,
    output wire        enc_ready,
    input  wire [11:0] enc_fctbs,
    input  wire [3:0]  enc_vl,
    input  wire [11:0] enc_fccl,
    output reg         enc_out_valid,
    input  wire        enc_out_ready,
    output reg  [47:0] enc_out_pkt,
    input  wire        dec_valid,
    input  wire [47:0] dec_pkt,
    output reg         dec_out_valid,
    output reg  [3:0]  dec_out_op,
    output reg  [11:0] dec_out_fctbs,
    output reg  [3:0]  dec_out_vl,
    output reg  [11:0] dec_out_fccl,
    output reg         dec_out_lpcrc_err
);
    localparam [15:0] POLY_R = 16'hD008; // 0x100B reflected
    localparam [15:0] SEED   = 16'hFFFF;

    // The LPCRC of the packet's first 4 bytes (byte k in d[31-8k -: 8], least significant bit
    // of each byte first), inverted, as a 16-bit value.
    function [15:0] lpcrc(input [31:0] d);
        integer k, b;
        reg [15:0] r;
        reg fb;
        begin
            r = SEED;
            for (k = 0; k < 4; k = k + 1)
                for (b = 0; b < 8; b = b + 1) begin
                    fb = r[0] ^ d[24 - 8*k + b];
                    r = {1'b0, r[15:1]} ^ (fb ? POLY_R : 16'h0000);
                end
            lpcrc = ~r;
        end
    endfunction

    wire [31:0] enc_head = {4'd0, enc_fctbs, enc_vl, enc_fccl};
    wire [15:0] enc_crc  = lpcrc(enc_head);
    wire [15:0] dec_crc  = lpcrc(dec_pkt[47:16]);
    wire [15:0] dec_got  = {dec_pkt[7:0], dec_pkt[15:8]}; // byte 4 least significant

    assign enc_ready = enc_out_ready;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            enc_out_valid     <= 1'b0;
            enc_out_pkt       <= 48'd0;
            dec_out_valid     <= 1'b0;
            dec_out_op        <= 4'd0;
            dec_out_fctbs     <= 12'd0;
            dec_out_vl        <= 4'd0;
            dec_out_fccl      <= 12'd0;
            dec_out_lpcrc_err <= 1'b0;
        end else begin
            if (enc_out_ready) enc_out_valid <= enc_valid;
            if (enc_valid && enc_ready)
                enc_out_pkt <= {enc_head, enc_crc[7:0], enc_crc[15:8]};
            dec_out_valid <= dec_valid;
            if (dec_valid) begin
                dec_out_op        <= dec_pkt[47:44];
                dec_out_fctbs     <= dec_pkt[43:32];
                dec_out_vl        <= dec_pkt[31:28];
                dec_out_fccl      <= dec_pkt[27:16];
                dec_out_lpcrc_err <= dec_got != dec_crc;
            end
        end
    end
endmodule
