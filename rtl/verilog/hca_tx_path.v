// hca_tx_path: the requester's transmit datapath, hca_tx_packetizer -> hca_tx_assemble -> ib_icrc,
// instantiated and wired and nothing else. One message in (msg_*, the packetizer's port), the
// message's payload as host blocks in (pay_*, the assembler's port), the packets out (out_*, the
// ICRC block's stream) with their ICRC written and the VCRC's 2 bytes still zero: the beat format
// ib_vcrc takes, so out_* connects to ib_link's transmit ib_vcrc (through hca_transport's tx_*)
// as it is. Go model: hca.Requester.Next with the payload hca.Device.schedule reads, encoded with
// ib.AppendWire; rtl/cosim_txpath_test.go runs this block followed by ib_vcrc and requires every
// packet's bytes, ICRC and VCRC included, to be ib.AppendWire's and ib.ParseWire to take them.
//
// Ports: msg_* as hca_tx_packetizer's (its header), pay_* as hca_tx_assemble's (its header: whole
// 64-byte host blocks in address order, each once, pay_start = LocalAddr mod 64 with a message's
// first block; the caller issues the reads and owns their buffer), out_* as ib_icrc's out_*
// without its two flags: on transmit the ICRC's slot comes zero from the assembler, so
// out_icrc_err says nothing, and out_len_err cannot rise on the assembler's packets (it is
// ib_vcrc's out_len_err's business downstream); both are left unconnected here.
// Timing: the blocks' own. The packetizer's out_* drive the assembler's pkt_* directly (the
// assembler takes a packet with its beat 0 and reads its header where the packetizer holds it);
// ib_icrc's in_ready is its out_ready, so the assembler's out_ready is out_ready and a beat the
// assembler sends is on out_* one edge later. One beat a cycle inside a message while the payload
// stream and out_ready keep up (hca_tx_assemble's rate); no register is added.
// Not here: the QP context and the requester's state that drive msg_* (PSNs a message takes,
// which message a go-back-N resend starts at and its msg_skip), the payload reads and the
// transmit buffer that drive pay_*, the VCRC (ib_link's ib_vcrc), UD and the GRH (the packetizer
// sends neither). hca_requester (in hca_transport) drives it.
module hca_tx_path (
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
    input  wire         pay_valid,
    output wire         pay_ready,
    input  wire [511:0] pay_data,
    input  wire [5:0]   pay_start,
    output wire         out_valid,
    input  wire         out_ready,
    output wire [511:0] out_data,
    output wire         out_sop,
    output wire         out_eop
);
    // Packetizer -> assembler: one packet's header beat and lengths.
    wire         pkt_valid, pkt_ready, pkt_last;
    wire [511:0] pkt_hdr;
    wire [5:0]   pkt_hdr_bytes;
    wire [12:0]  pkt_pay_len;
    wire [31:0]  pkt_pay_off;
    // Assembler -> ICRC: the packet's beats, PadCnt, ICRC and VCRC bytes zero.
    wire         asm_valid, asm_ready, asm_sop, asm_eop;
    wire [511:0] asm_data;
    // ICRC -> out: the beats with the ICRC written.
    wire         icrc_valid, icrc_sop, icrc_eop;
    wire [511:0] icrc_data;
    /* verilator lint_off UNUSEDSIGNAL */
    wire         icrc_err, icrc_len_err; // transmit: not meaningful (above)
    /* verilator lint_on UNUSEDSIGNAL */

    hca_tx_packetizer u_packetizer (
        .clk           (clk),
        .rst_n         (rst_n),
        .msg_valid     (msg_valid),
        .msg_ready     (msg_ready),
        .msg_opcode    (msg_opcode),
        .msg_length    (msg_length),
        .msg_raddr     (msg_raddr),
        .msg_rkey      (msg_rkey),
        .msg_imm       (msg_imm),
        .msg_swap_add  (msg_swap_add),
        .msg_compare   (msg_compare),
        .msg_dlid      (msg_dlid),
        .msg_slid      (msg_slid),
        .msg_sl        (msg_sl),
        .msg_vl        (msg_vl),
        .msg_dest_qpn  (msg_dest_qpn),
        .msg_psn       (msg_psn),
        .msg_mtu       (msg_mtu),
        .msg_ack_every (msg_ack_every),
        .msg_skip      (msg_skip),
        .out_valid     (pkt_valid),
        .out_ready     (pkt_ready),
        .out_hdr       (pkt_hdr),
        .out_hdr_bytes (pkt_hdr_bytes),
        .out_pay_len   (pkt_pay_len),
        .out_pay_off   (pkt_pay_off),
        .out_last      (pkt_last)
    );

    hca_tx_assemble u_assemble (
        .clk           (clk),
        .rst_n         (rst_n),
        .pkt_valid     (pkt_valid),
        .pkt_ready     (pkt_ready),
        .pkt_hdr       (pkt_hdr),
        .pkt_hdr_bytes (pkt_hdr_bytes),
        .pkt_pay_len   (pkt_pay_len),
        .pkt_pay_off   (pkt_pay_off),
        .pkt_last      (pkt_last),
        .pay_valid     (pay_valid),
        .pay_ready     (pay_ready),
        .pay_data      (pay_data),
        .pay_start     (pay_start),
        .out_valid     (asm_valid),
        .out_ready     (asm_ready),
        .out_data      (asm_data),
        .out_sop       (asm_sop),
        .out_eop       (asm_eop)
    );

    ib_icrc u_icrc (
        .clk          (clk),
        .rst_n        (rst_n),
        .in_valid     (asm_valid),
        .in_ready     (asm_ready),
        .in_data      (asm_data),
        .in_sop       (asm_sop),
        .in_eop       (asm_eop),
        .out_valid    (icrc_valid),
        .out_ready    (out_ready),
        .out_data     (icrc_data),
        .out_sop      (icrc_sop),
        .out_eop      (icrc_eop),
        .out_icrc_err (icrc_err),
        .out_len_err  (icrc_len_err)
    );

    assign {out_valid, out_data, out_sop, out_eop} = {icrc_valid, icrc_data, icrc_sop, icrc_eop};
endmodule
