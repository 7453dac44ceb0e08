// vl_arbiter: InfiniBand output-port VL arbiter (IBA 7.6.9): VL15 first, then
// a high- and a low-priority weighted table with LimitOfHighPriority.
// Go model: components.VLArbiter (components/vlarbiter.go, whose doc comment
// states the reading of the spec this module implements); co-simulated cycle
// by cycle by rtl/cosim_test.go.
//
// Table entry k of high_table / low_table is 12 bits at [12k+11:12k]:
// [12k+3:12k] the VL (0..14), [12k+11:12k+4] the weight in 64-byte blocks
// (0 = skipped). The tables are inputs because the subnet manager writes them
// at run time (VLArbitrationTable attribute); a register file outside holds them.
//
// pick_valid/pick_vl are combinational (VLArbiter.Pick). At a rising edge with
// commit=1 the packet of commit_blocks blocks on pick_vl is charged
// (VLArbiter.Commit(pick_vl, commit_blocks)); commit without pick_valid does
// nothing.
module vl_arbiter #(
    parameter integer HIGH_ENTRIES = 64,
    parameter integer LOW_ENTRIES  = 64
) (
    input  wire                       clk,
    input  wire                       rst_n,
    input  wire [15:0]                ready,
    input  wire [HIGH_ENTRIES*12-1:0] high_table,
    input  wire [LOW_ENTRIES*12-1:0]  low_table,
    input  wire [7:0]                 limit,
    output reg                        pick_valid,
    output reg  [3:0]                 pick_vl,
    input  wire                       commit,
    input  wire [7:0]                 commit_blocks
);
    // High-priority blocks sent since the last low packet while the low table
    // could send; 15 bits hold 254 x 64 = 16256 and saturate at 32767.
    reg  [14:0] high_count;

    wire        high_valid;
    wire [3:0]  high_vl;
    wire        low_valid;
    wire [3:0]  low_vl;

    wire        mgmt          = ready[15];
    wire        limit_reached = (limit != 8'hFF) && (high_count != 15'd0) &&
                                (high_count >= {1'b0, limit, 6'b0});
    wire        use_low       = low_valid && (!high_valid || limit_reached);
    wire        charge_high   = commit && !mgmt && !use_low && high_valid;
    wire        charge_low    = commit && !mgmt && use_low;
    wire [15:0] high_sum      = {1'b0, high_count} + {8'b0, commit_blocks};

    always @* begin
        pick_valid = 1'b1;
        pick_vl    = 4'd15;
        if (!mgmt) begin
            if (use_low)         pick_vl = low_vl;
            else if (high_valid) pick_vl = high_vl;
            else begin
                pick_valid = 1'b0;
                pick_vl    = 4'd0;
            end
        end
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) high_count <= 15'd0;
        else if (charge_low) high_count <= 15'd0;
        else if (charge_high) begin
            if (!low_valid)        high_count <= 15'd0;
            else if (high_sum[15]) high_count <= 15'h7FFF;
            else                   high_count <= high_sum[14:0];
        end
    end

    vl_arb_table #(.ENTRIES(HIGH_ENTRIES)) u_high (
        .clk(clk), .rst_n(rst_n), .entries(high_table), .ready(ready[14:0]),
        .charge(charge_high), .blocks(commit_blocks),
        .choice_valid(high_valid), .choice_vl(high_vl)
    );
    vl_arb_table #(.ENTRIES(LOW_ENTRIES)) u_low (
        .clk(clk), .rst_n(rst_n), .entries(low_table), .ready(ready[14:0]),
        .charge(charge_low), .blocks(commit_blocks),
        .choice_valid(low_valid), .choice_vl(low_vl)
    );
endmodule
