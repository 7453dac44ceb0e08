// hca_rx_ack: the receive side of hca_transport's requester: it decodes each received packet's
// headers and hands every RC ACKNOWLEDGE (BTH opcode 0x11: an ACK or a NAK) to hca_requester's
// ack_* port; everything else it consumes and drops, counted. Go model: hca.Device.complete's
// ACKNOWLEDGE case, hca.Requester.OnAck(BTH.PSN, AETH.Syndrome) on the QP BTH.DestQP names;
// rtl/cosim_req_test.go sends the responder's ACKs and NAKs as ib.AppendWire's bytes on rx_* and
// requires the completions on cpl_* to be the model's.
//
// rx_*: the packets ib_rx_vl_buffers gives out (store and forward: a packet whose VCRC or length
// failed never comes), a 64-byte beat a cycle, byte 0 in bits 511:504, valid/ready. Every header
// this block reads is in a packet's first beat: LRH (8 bytes), then with LRH.LNH = 2 (IBA local)
// the BTH at byte 8 and the AETH at byte 20, with LNH = 3 (IBA global) a GRH of 40 bytes first,
// so the BTH at byte 48 and the AETH at byte 60, its last 4 bytes (ib/wire.go; ib-facts.md §2).
// The fields, big-endian: BTH.OpCode (BTH byte 0), DestQP (bytes 5..7), PSN (bytes 9..11),
// AETH.Syndrome (AETH byte 0). A packet with another LNH (raw) is no transport packet: dropped.
// Decisions:
// - A packet is decided at its first beat (sop); its other beats are consumed and dropped. An
//   ACKNOWLEDGE is one beat local (8 + 12 + 4 + ICRC 4 + VCRC 2 = 30 bytes), two global (70
//   bytes: the second beat holds only the CRCs).
// - An ACKNOWLEDGE goes out on ack_* (an output register, valid/ready: ack_qpn = DestQP, ack_psn =
//   PSN, ack_syn = the syndrome, whatever it says: hca_requester decides what a syndrome does, as
//   OnAck does). rx_ready is 0 while the register holds an ACK ack_ready has not taken, for every
//   beat: the packet stream waits (ib_rx_vl_buffers holds the credits meanwhile).
// - A sequence error NAK (syndrome 0x60) or an RNR NAK (0x20..0x3F) also counts on nak_retry:
//   hca_requester completes what it implicitly acknowledges and retries go-back-N (after the RNR
//   wait), or fails the QP when its retry counters are spent (its header).
// - Packets for the requester it does not act on yet count on rsp_todo and are dropped: RDMA READ
//   responses (0x0D..0x10), ATOMIC ACKNOWLEDGE (0x12), CNPs (0x80, congestion control's; ours).
//   Their completions and data placement are TODO.
// - Every other packet counts on not_req and is dropped: requests for a responder (the responder
//   is not built in RTL), UD and other transports, a raw LNH.
// The counters are 16 bits and saturate at 65535, as ib_link's rcv_errors.
// Not checked here (TODO): the ICRC (a corrupted ACK whose VCRC was rewritten would be acted on;
// IBA drops a packet whose ICRC fails), BTH.TVer and P_Key, LRH.DLID (the fabric delivers only
// this port's packets), the GRH's fields, PktLen against the headers.
module hca_rx_ack (
    input  wire         clk,
    input  wire         rst_n,
    input  wire         rx_valid,
    output wire         rx_ready,
    input  wire [511:0] rx_data,
    input  wire         rx_sop,
    input  wire         rx_eop,
    output reg          ack_valid,
    input  wire         ack_ready,
    output reg  [23:0]  ack_qpn,
    output reg  [23:0]  ack_psn,
    output reg  [7:0]   ack_syn,
    output reg  [15:0]  nak_retry,  // sequence error and RNR NAKs passed on (hca_requester retries)
    output reg  [15:0]  rsp_todo,   // READ responses, atomic ACKs, CNPs: dropped (TODO)
    output reg  [15:0]  not_req     // packets not for the requester: dropped
);
    // Byte i of the beat is rx_data[511 - 8i -: 8].
    wire [1:0]   lnh    = rx_data[497:496];                  // LRH byte 1, bits 1:0
    wire         global = lnh == 2'd3;
    wire         is_ib  = lnh[1];                            // LNH 2 or 3
    // The BTH and AETH: local at bytes 8 and 20, global 40 bytes later (bytes 48 and 60).
    wire [95:0]  bth    = global ? rx_data[511-8*48 -: 96] : rx_data[511-8*8 -: 96];
    wire [7:0]   syn    = global ? rx_data[511-8*60 -: 8]  : rx_data[511-8*20 -: 8];
    wire [7:0]   opcode = bth[95:88];                        // BTH byte 0
    wire [23:0]  dqpn   = bth[55:32];                        // BTH bytes 5..7
    wire [23:0]  psn    = bth[23:0];                         // BTH bytes 9..11
    wire         is_ack = is_ib && opcode == 8'h11;
    wire         is_rsp = is_ib && ((opcode >= 8'h0D && opcode <= 8'h10) || opcode == 8'h12 || opcode == 8'h80);
    wire         retry  = syn == 8'h60 || syn[7:5] == 3'b001;

    assign rx_ready = !ack_valid || ack_ready;
    wire head = rx_valid && rx_ready && rx_sop;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            ack_valid <= 1'b0;
            nak_retry <= 16'd0;
            rsp_todo  <= 16'd0;
            not_req   <= 16'd0;
        end else begin
            if (head && is_ack) ack_valid <= 1'b1;
            else if (ack_ready) ack_valid <= 1'b0;
            if (head && is_ack && retry && nak_retry != 16'hFFFF) nak_retry <= nak_retry + 16'd1;
            if (head && is_rsp && rsp_todo != 16'hFFFF) rsp_todo <= rsp_todo + 16'd1;
            if (head && !is_ack && !is_rsp && not_req != 16'hFFFF) not_req <= not_req + 16'd1;
        end
    end

    always @(posedge clk) begin
        if (head && is_ack) begin
            ack_qpn <= dqpn;
            ack_psn <= psn;
            ack_syn <= syn;
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, rx_eop, rx_data, bth[87:56], bth[31:24], 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule
