// hca_tx_packetizer: the requester's packet headers. Given one message to send (an RC send
// WQE's fields and its QP's context), it emits, one per packet of the message, the packet's
// header bytes (LRH, BTH and the extension headers) with the packet's payload length and its
// offset in the message. Go model: the model's requester, hca.Requester.Next (hca/transport.go:
// segmentation into path-MTU packets, the BTH opcode of each, PSNs, AckReq, RETH and ImmDt
// placement) with the addressing hca.Device.address gives a request packet (SLID, DLID, SL, VL,
// DestQP), encoded with ib.AppendWire; rtl/cosim_pktz_test.go compares the two cycle by cycle.
// It is the first slice of hca_transport; the payload (DMA through hca_dma_engine), the ICRC
// and the VCRC (ib_vcrc, in ib_link) are other blocks' work.
//
// Message (msg_* valid/ready, taken at an edge with msg_valid && msg_ready):
//   msg_opcode     ibv_wr_opcode, as hca_wqe_parse gives it (hca.WROpcode): 0 RDMA WRITE,
//                  1 RDMA WRITE with immediate, 2 SEND, 3 SEND with immediate, 4 RDMA READ,
//                  5 compare and swap, 6 fetch and add; 7 is never given (the parser refuses
//                  it, dec_err) and is sent as a fetch and add.
//   msg_length     the message's bytes (hca.SendWQE.Length), 0..2^31 (IBA's largest message).
//   msg_raddr, msg_rkey, msg_imm, msg_swap_add, msg_compare: the WQE's remote address
//                  segment, immediate and atomic operands.
//   msg_dlid, msg_slid, msg_sl, msg_vl, msg_dest_qpn: the QP's path (LRH VL is the QP's VL,
//                  after the HCA's SL-to-VL table) and the remote QPN.
//   msg_psn        the message's first PSN (the QP's next PSN when the WQE was queued).
//   msg_mtu        the QP's path MTU as IBA codes it: 1 256, 2 512, 3 1024, 4 2048, 5 4096.
//   msg_ack_every  hca.ack_req_every, 1..65536: AckReq on every Nth packet of a message.
//   msg_skip       the message's leading packets not to send: 0 for a message's first send, k for
//                  a go-back-N resend from its packet k (hca.Requester.rewind: sent = k), k below
//                  its packet count. The skipped packets are stepped through, one a cycle, without
//                  leaving (their PSNs, offsets and the AckReq count move as if sent), so packet k
//                  is the model's: MIDDLE or LAST, no RETH, PSN msg_psn + k, AckReq by its index.
// Packets: a SEND or WRITE of L bytes is max(1, ceil(L / MTU)) packets (hca.PacketCount), the
// first through the last; a READ request and an atomic are one packet.
//   opcode         SEND/RDMA WRITE FIRST, MIDDLE, LAST or ONLY, LAST and ONLY _WITH_IMMEDIATE
//                  for the immediate variants; RDMA READ REQUEST, COMPARE_SWAP, FETCH_ADD.
//   PSN            msg_psn + packet index, mod 2^24.
//   AckReq         the last packet, and packet i when (i + 1) mod msg_ack_every = 0; always
//                  on a READ request and an atomic (hca.Requester.Next).
//   extension      RETH {raddr, rkey, length} on the first packet of a WRITE and on the READ
//                  request; ImmDt on the last packet of an immediate variant (after the RETH
//                  of a WRITE ONLY WITH IMMEDIATE); AtomicETH {raddr, rkey, swap_add, compare}.
//   PadCnt         (4 - payload mod 4) mod 4; PktLen the packet's LRH through ICRC in 4-byte
//                  words: (20 + extension bytes + payload + PadCnt + 4 ICRC) / 4
//                  (ib.Packet.PktLen: the ICRC counts, the VCRC does not).
//   constants      LVer 0, LNH 2 (BTH next: no GRH), SE 0, M 0, TVer 0, P_Key 0xFFFF, FECN and
//                  BECN 0 (the requester sets none; switches set FECN on the way).
// Out (out_* valid/ready, one packet per beat):
//   out_hdr        the header bytes, byte k in out_hdr[511-8k -: 8] (the byte lanes of ib_vcrc,
//                  hca_wqe_parse and hca_cqe_writer: LRH byte 0 in [511:504]), zero past them.
//   out_hdr_bytes  20 + extension bytes: 20, 24, 36, 40 or 48; the payload follows there.
//   out_pay_len    payload bytes of the packet: 0..MTU (0 for a READ request and an atomic).
//   out_pay_off    the payload's offset in the message: packet index x MTU (0 for one packet).
//   out_last       the message's last packet.
// Timing: a message taken at an edge has its first packet on out_* from the next edge (with
// msg_skip = k, k edges later); each
// packet moves into the output register when it is empty or taken (out_ready), so one packet a
// cycle while out_ready is 1; msg_ready is 1 when no packet of a message waits, and in the
// cycle the last one moves into the register (combinationally from out_ready), so back-to-back
// messages leave no bubble.
// A READ retried after part of its responses asks for the rest (hca.Requester.Next): hca_requester
// gives it as a message whose PSN, remote address and length are already moved. Not here: UD (SEND_ONLY
// with a DETH per message, hca.Device.grantUD), the GRH, SE, the next message's PSN (the PSNs
// a message uses: its packets, a READ's response packets, 1 for an atomic), and the payload.
module hca_tx_packetizer (
    input  wire         clk,
    input  wire         rst_n,
    input  wire         msg_valid,
    output wire         msg_ready,
    input  wire [2:0]   msg_opcode,
    input  wire [31:0]  msg_length,
    input  wire [63:0]  msg_raddr,
    input  wire [31:0]  msg_rkey,
    input  wire [31:0]  msg_imm,
    input  wire [63:0]  msg_swap_add,
    input  wire [63:0]  msg_compare,
    input  wire [15:0]  msg_dlid,
    input  wire [15:0]  msg_slid,
    input  wire [3:0]   msg_sl,
    input  wire [3:0]   msg_vl,
    input  wire [23:0]  msg_dest_qpn,
    input  wire [23:0]  msg_psn,
    input  wire [2:0]   msg_mtu,
    input  wire [16:0]  msg_ack_every,
    input  wire [23:0]  msg_skip,
    output reg          out_valid,
    input  wire         out_ready,
    output reg  [511:0] out_hdr,
    output reg  [5:0]   out_hdr_bytes,
    output reg  [12:0]  out_pay_len,
    output reg  [31:0]  out_pay_off,
    output reg          out_last
);
    localparam [2:0] OP_WRITE = 3'd0, OP_WRITE_IMM = 3'd1, OP_SEND = 3'd2, OP_SEND_IMM = 3'd3,
                     OP_READ = 3'd4, OP_CMP_SWAP = 3'd5;

    // The message being cut into packets, latched when it is taken.
    reg         busy;     // packets of it still to move into the output register
    reg  [2:0]  st_op;
    reg  [31:0] st_len;   // the message's length (the RETH's DMA length)
    reg  [63:0] st_raddr;
    reg  [31:0] st_rkey, st_imm;
    reg  [63:0] st_swap, st_cmp;
    reg  [15:0] st_dlid, st_slid;
    reg  [3:0]  st_sl, st_vl;
    reg  [23:0] st_dqpn;
    reg  [12:0] st_mtu;   // path MTU in bytes, 256..4096
    reg  [16:0] st_every; // AckReq every st_every packets
    // The next packet's place in the message.
    reg         st_first; // packet 0
    reg  [31:0] st_rem;   // bytes from its offset to the message's end
    reg  [31:0] st_off;   // its offset: index x MTU
    reg  [23:0] st_psn;   // its PSN
    reg  [16:0] st_ack;   // its index mod st_every
    reg  [23:0] st_skip;  // packets still to step through unsent (a resend from packet k)

    // The next packet, from the state.
    wire is_write = st_op == OP_WRITE || st_op == OP_WRITE_IMM;
    wire is_imm   = st_op == OP_WRITE_IMM || st_op == OP_SEND_IMM;
    wire one_req  = st_op[2]; // READ request or atomic: one packet whatever the length
    wire last     = one_req || st_rem <= {19'd0, st_mtu};
    wire opc_last = last;
    wire [12:0] pay = one_req ? 13'd0 : (last ? st_rem[12:0] : st_mtu);
    wire [1:0]  pad = 2'd0 - pay[1:0];
    wire has_reth   = st_op == OP_READ || (is_write && st_first);
    wire has_imm    = is_imm && last;
    wire has_atomic = one_req && st_op != OP_READ;
    // Extension headers in 4-byte words: RETH 4, ImmDt 1, AtomicETH 7.
    wire [3:0]  ext_words = (has_reth ? 4'd4 : 4'd0) + (has_imm ? 4'd1 : 4'd0) + (has_atomic ? 4'd7 : 4'd0);
    // LRH 2 + BTH 3 + ICRC 1 words, the extension headers, the payload with its pad.
    wire [10:0] pktlen = 11'd6 + {7'd0, ext_words} + pay[12:2] + {10'd0, pay[1:0] != 2'd0};
    wire ackreq = one_req || last || st_ack == st_every - 17'd1;
    reg  [7:0] bth_op;
    always @* begin
        case (st_op)
            OP_WRITE, OP_WRITE_IMM:
                if (st_first && opc_last) bth_op = is_imm ? 8'h0B : 8'h0A;
                else if (st_first)        bth_op = 8'h06;
                else if (opc_last)        bth_op = is_imm ? 8'h09 : 8'h08;
                else                      bth_op = 8'h07;
            OP_SEND, OP_SEND_IMM:
                if (st_first && opc_last) bth_op = is_imm ? 8'h05 : 8'h04;
                else if (st_first)        bth_op = 8'h00;
                else if (opc_last)        bth_op = is_imm ? 8'h03 : 8'h02;
                else                      bth_op = 8'h01;
            OP_READ:     bth_op = 8'h0C;
            OP_CMP_SWAP: bth_op = 8'h13;
            default:     bth_op = 8'h14; // fetch and add (and 7, never given)
        endcase
    end
    // LRH: VL 4 | LVer 4 | SL 4 | rsv 2 | LNH 2 | DLID 16 | rsv 5 | PktLen 11 | SLID 16.
    wire [63:0]  lrh = {st_vl, 4'h0, st_sl, 2'b00, 2'b10, st_dlid, 5'd0, pktlen, st_slid};
    // BTH: OpCode 8 | SE M PadCnt TVer | P_Key 16 | FECN BECN resv6 | DestQP 24 | AckReq resv7 | PSN 24.
    wire [95:0]  bth = {bth_op, 2'b00, pad, 4'h0, 16'hFFFF, 8'h00, st_dqpn, ackreq, 7'd0, st_psn};
    wire [31:0]  immdt = has_imm ? st_imm : 32'd0;
    wire [223:0] ext = has_atomic ? {st_raddr, st_rkey, st_swap, st_cmp}
                     : has_reth   ? {st_raddr, st_rkey, st_len, immdt, 64'd0}
                     :              {immdt, 192'd0};
    wire [5:0]   hdr_bytes = 6'd20 + {ext_words, 2'b00};
    wire [511:0] hdr = {lrh, bth, ext, 128'd0}; // zero past the headers: ext's unused tail is 0

    // A skipped packet steps the state as a sent one does, without touching out_*.
    wire skip = busy && st_skip != 24'd0;
    wire load = busy && !skip && (!out_valid || out_ready);
    assign msg_ready = !busy || (load && last);
    wire take = msg_valid && msg_ready;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            busy      <= 1'b0;
            out_valid <= 1'b0;
        end else begin
            if (load) begin
                out_valid <= 1'b1;
                busy      <= !last;
            end else if (out_ready) begin
                out_valid <= 1'b0;
            end
            if (take)
                busy <= 1'b1;
        end
    end

    always @(posedge clk) begin
        if (load) begin
            out_hdr       <= hdr;
            out_hdr_bytes <= hdr_bytes;
            out_pay_len   <= pay;
            out_pay_off   <= st_off;
            out_last      <= last;
        end
        if (skip) st_skip <= st_skip - 24'd1;
        if (load || skip) begin
            st_first      <= 1'b0;
            st_rem        <= st_rem - {19'd0, pay};
            st_off        <= st_off + {19'd0, st_mtu};
            st_psn        <= st_psn + 24'd1;
            st_ack        <= (st_ack == st_every - 17'd1) ? 17'd0 : st_ack + 17'd1;
        end
        if (take) begin
            st_op    <= msg_opcode;
            st_len   <= msg_length;
            st_raddr <= msg_raddr;
            st_rkey  <= msg_rkey;
            st_imm   <= msg_imm;
            st_swap  <= msg_swap_add;
            st_cmp   <= msg_compare;
            st_dlid  <= msg_dlid;
            st_slid  <= msg_slid;
            st_sl    <= msg_sl;
            st_vl    <= msg_vl;
            st_dqpn  <= msg_dest_qpn;
            st_mtu   <= 13'd128 << msg_mtu;
            st_every <= msg_ack_every;
            st_first <= 1'b1;
            st_rem   <= msg_length;
            st_off   <= 32'd0;
            st_psn   <= msg_psn;
            st_ack   <= 17'd0;
            st_skip  <= msg_skip;
        end
    end
endmodule
