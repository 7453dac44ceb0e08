// rr_arbiter: N-input round-robin arbiter with separate pick and commit.
// Go model: components.RoundRobin (components/rrarbiter.go); co-simulated
// cycle by cycle by rtl/cosim_test.go.
//
// grant_valid/grant_idx are combinational: the first requester at or after
// the priority pointer, wrapping (RoundRobin.Pick). The pointer moves only on
// commit: at the rising edge with commit=1 it becomes commit_idx+1 mod N
// (RoundRobin.Commit), which lets an iSLIP allocator advance a grant pointer
// only when its grant was accepted. commit_idx must be < N. grant_idx is 0
// when grant_valid is 0.
//
// The search is loop-free: mask off requests below the pointer, fall back to
// all requests if none is left, isolate the lowest set bit with x & -x, and
// encode it with an OR tree per index bit.
module rr_arbiter #(
    parameter integer N     = 4,
    parameter integer IDX_W = (N > 1) ? $clog2(N) : 1
) (
    input  wire             clk,
    input  wire             rst_n,
    input  wire [N-1:0]     req,
    output wire             grant_valid,
    output wire [IDX_W-1:0] grant_idx,
    input  wire             commit,
    input  wire [IDX_W-1:0] commit_idx
);
    localparam integer     LAST_I = N - 1;
    localparam [IDX_W-1:0] LAST   = LAST_I[IDX_W-1:0];

    reg  [IDX_W-1:0] ptr; // the input with the highest priority

    wire [N-1:0] at_or_after = req & ({N{1'b1}} << ptr);
    wire [N-1:0] cand        = (at_or_after != {N{1'b0}}) ? at_or_after : req;
    wire [N-1:0] lowest      = cand & (~cand + 1'b1);

    assign grant_valid = (req != {N{1'b0}});

    onehot_encode #(.N(N), .IDX_W(IDX_W)) u_enc (.onehot(lowest), .idx(grant_idx));

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) ptr <= {IDX_W{1'b0}};
        else if (commit) ptr <= (commit_idx == LAST) ? {IDX_W{1'b0}} : commit_idx + 1'b1;
    end
endmodule
