// credit_receiver: receive side of one VL's link-level flow control (IBA 7.9;
// ib-facts.md §3). Go model: credit.Receiver (credit/counter.go);
// co-simulated cycle by cycle by rtl/cosim_test.go.
//
// ABR counts adjusted blocks received (mod 4096); free counts buffer blocks
// not holding data. fccl = (ABR + free) mod 4096 is the limit to advertise.
// At a rising edge, in this order: sync loads ABR from the FCTBS of an arriving
// flow-control packet (Receiver.SyncFCTBS), receive accounts recv_blocks
// arriving (Receiver.Receive: ABR += n, free -= n), release frees rel_blocks
// (Receiver.Release). The caller never receives more than is free nor
// releases more than is held (the Go model panics on either). All counts are
// 12 bits: a buffer holds at most 2048 blocks, the credit window.
module credit_receiver #(
    parameter integer CAPACITY = 64 // buffer blocks, 0..2048
) (
    input  wire        clk,
    input  wire        rst_n,
    input  wire        sync,
    input  wire [11:0] sync_fctbs,
    input  wire        receive,
    input  wire [11:0] recv_blocks,
    input  wire        release_blocks,
    input  wire [11:0] rel_blocks,
    output reg  [11:0] abr,
    output reg  [11:0] free,
    output wire [11:0] fccl
);
    localparam [11:0] CAP = CAPACITY[11:0];

    wire [11:0] abr_base = sync ? sync_fctbs : abr;
    wire [11:0] recv_n   = receive ? recv_blocks : 12'd0;
    wire [11:0] rel_n    = release_blocks ? rel_blocks : 12'd0;

    assign fccl = abr + free;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            abr  <= 12'd0;
            free <= CAP;
        end else begin
            abr  <= abr_base + recv_n;
            free <= free - recv_n + rel_n;
        end
    end
endmodule
