// vl_arb_table: one weighted VL arbitration table and its round-robin walk
// (the vlTable type in components/vlarbiter.go). The current entry keeps the
// turn while it has weight left and its VL is ready; otherwise the next entry
// after it (wrapping, ending at itself) with weight > 0 and a ready VL goes,
// starting with its full weight. The packet that uses up the weight completes.
//
// Entry k of entries is [12k+3:12k] VL, [12k+11:12k+4] weight in 64-byte
// blocks. choice_* are combinational; charge at a rising edge charges blocks
// to the chosen entry.
module vl_arb_table #(
    parameter integer ENTRIES = 64,
    parameter integer IDX_W   = (ENTRIES > 1) ? $clog2(ENTRIES) : 1
) (
    input  wire                  clk,
    input  wire                  rst_n,
    input  wire [ENTRIES*12-1:0] entries,
    input  wire [14:0]           ready,
    input  wire                  charge,
    input  wire [7:0]            blocks,
    output wire                  choice_valid,
    output wire [3:0]            choice_vl
);
    localparam integer     LAST_I = ENTRIES - 1;
    localparam [IDX_W-1:0] LAST   = LAST_I[IDX_W-1:0];

    reg  [IDX_W-1:0] idx;    // current entry
    reg  [7:0]       remain; // blocks the current entry may still start a packet with

    wire [15:0] rdy = {1'b0, ready};

    // eligible[k]: entry k has weight and its VL is ready (VL15 never is):
    // a 16:1 select per entry.
    reg [ENTRIES-1:0] eligible;
    integer k;
    always @* begin
        for (k = 0; k < ENTRIES; k = k + 1)
            eligible[k] = (entries[12*k+4 +: 8] != 8'd0) && rdy[entries[12*k +: 4]];
    end

    // Lowest eligible entry after idx, else the lowest eligible overall
    // (which is then at or before idx).
    wire [ENTRIES-1:0] after_cur = eligible & (({ENTRIES{1'b1}} << idx) << 1);
    wire [ENTRIES-1:0] cand      = (after_cur != {ENTRIES{1'b0}}) ? after_cur : eligible;
    wire [ENTRIES-1:0] lowest    = cand & (~cand + 1'b1);
    wire [IDX_W-1:0]   scan_idx;
    onehot_encode #(.N(ENTRIES), .IDX_W(IDX_W)) u_enc (.onehot(lowest), .idx(scan_idx));

    wire             cur_ok        = (remain != 8'd0) && rdy[entries[12*idx +: 4]];
    wire [IDX_W-1:0] choice_idx    = cur_ok ? idx : scan_idx;
    wire [7:0]       choice_weight = entries[12*choice_idx+4 +: 8];
    wire [7:0]       base          = (choice_idx != idx || remain == 8'd0) ? choice_weight : remain;

    assign choice_valid = cur_ok || (eligible != {ENTRIES{1'b0}});
    assign choice_vl    = entries[12*choice_idx +: 4];

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            // Park on the last entry with nothing left, so the first choice
            // scans from entry 0.
            idx    <= LAST;
            remain <= 8'd0;
        end else if (charge && choice_valid) begin
            idx    <= choice_idx;
            remain <= (base > blocks) ? base - blocks : 8'd0;
        end
    end
endmodule
