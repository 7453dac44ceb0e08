// onehot_encode: index of the set bit of a one-hot (or all-zero) vector.
// Index bit b is the OR of the input bits whose position has bit b set, so
// an all-zero input encodes to 0. The position masks are constants computed
// at elaboration, which keeps both simulation and elaboration cheap for
// N up to 256. Used by rr_arbiter and vl_arb_table.
module onehot_encode #(
    parameter integer N     = 4,
    parameter integer IDX_W = (N > 1) ? $clog2(N) : 1
) (
    input  wire [N-1:0]     onehot,
    output wire [IDX_W-1:0] idx
);
    // position_mask(b): bit i set when position i has index bit b set.
    function [N-1:0] position_mask;
        input integer b;
        integer i;
        begin
            for (i = 0; i < N; i = i + 1)
                position_mask[i] = ((i / (1 << b)) % 2) == 1;
        end
    endfunction

    genvar b;
    generate
        for (b = 0; b < IDX_W; b = b + 1) begin : g_bit
            localparam [N-1:0] MASK = position_mask(b);
            assign idx[b] = |(onehot & MASK);
        end
    endgenerate
endmodule
