// credit_sender: transmit side of one VL's link-level flow control (IBA 7.9;
// ib-facts.md §3). Go model: credit.Sender (credit/counter.go); co-simulated
// cycle by cycle by rtl/cosim_test.go.
//
// FCTBS counts 64-byte blocks sent, FCCL is the limit the receiver last
// advertised; both 12 bits, mod 4096, like the fields of the flow-control
// packet. can_send (combinational) answers Sender.CanSend(check_blocks):
// (FCCL - (FCTBS + check_blocks)) mod 4096 <= 2048. available is
// Sender.Available(). At a rising edge, send adds send_blocks to FCTBS (the
// caller checked can_send first) and update loads FCCL from an arriving
// flow-control packet; both may happen in one cycle. Block counts are 12 bits
// because the arithmetic is mod 4096 anyway.
module credit_sender #(
    parameter integer INIT_CREDITS = 0 // blocks the receiver's buffer holds at link-up, 0..2048
) (
    input  wire        clk,
    input  wire        rst_n,
    input  wire [11:0] check_blocks,
    output wire        can_send,
    output wire [11:0] available,
    input  wire        send,
    input  wire [11:0] send_blocks,
    input  wire        update,
    input  wire [11:0] update_fccl,
    output reg  [11:0] fctbs,
    output reg  [11:0] fccl
);
    localparam [11:0] INIT_FCCL = INIT_CREDITS[11:0];

    wire [11:0] room = fccl - (fctbs + check_blocks);
    wire [11:0] lead = fccl - fctbs;

    assign can_send  = room <= 12'd2048;
    assign available = (lead > 12'd2048) ? 12'd0 : lead;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            fctbs <= 12'd0;
            fccl  <= INIT_FCCL;
        end else begin
            if (send)   fctbs <= fctbs + send_blocks;
            if (update) fccl  <= update_fccl;
        end
    end
endmodule
