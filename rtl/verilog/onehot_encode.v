// onehot_encode: index of the set bit of a one-hot (or all-zero) vector.
// Index bit b is the OR of the input bits whose position has bit b set; an
// all-zero input encodes to 0. Used by rr_arbiter and vl_arb_table.
module onehot_encode #(
    parameter integer N     = 4,
    parameter integer IDX_W = (N > 1) ? $clog2(N) : 1
) (
    input  wire [N-1:0]     onehot,
    output wire [IDX_W-1:0] idx
);
    genvar b, i;
    generate
        for (b = 0; b < IDX_W; b = b + 1) begin : g_bit
            wire [N-1:0] has_bit; // constant: position i has index bit b set
            for (i = 0; i < N; i = i + 1) begin : g_pos
                assign has_bit[i] = ((i / (1 << b)) % 2) == 1;
            end
            assign idx[b] = |(onehot & has_bit);
        end
    endgenerate
endmodule
