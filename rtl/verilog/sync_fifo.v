// sync_fifo: synchronous first-in first-out buffer with valid/ready ports.
// Go model: components.FIFO (components/fifo.go); co-simulated cycle by cycle
// by rtl/cosim_test.go.
//
// Contract, per clock cycle:
//   push_ready = !full and pop_valid = !empty, both from the state at the start
//   of the cycle; a push happens when push_valid && push_ready, a pop when
//   pop_valid && pop_ready, both at the rising edge. A full FIFO therefore does
//   not take a push in the cycle it is popped (no bypass), and pop_data is the
//   registered head entry, never the entry being pushed.
//   drop_valid removes the drop_count newest entries at the rising edge (the
//   write pointer and count step back; ib_rx_vl_fifos discards a packet found
//   bad at its end this way). The caller never drops more entries than remain
//   after the cycle's pop, nor pushes in a drop cycle; tie drop_valid to 0
//   where nothing is dropped.
// DEPTH need not be a power of two.
module sync_fifo #(
    parameter integer WIDTH  = 8,
    parameter integer DEPTH  = 4,
    parameter integer ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1,
    parameter integer CNT_W  = $clog2(DEPTH + 1)
) (
    input  wire              clk,
    input  wire              rst_n,
    input  wire              push_valid,
    output wire              push_ready,
    input  wire [WIDTH-1:0]  push_data,
    output wire              pop_valid,
    input  wire              pop_ready,
    output wire [WIDTH-1:0]  pop_data,
    output wire [CNT_W-1:0]  count,
    input  wire              drop_valid,
    input  wire [CNT_W-1:0]  drop_count
);
    localparam integer      LAST_I = DEPTH - 1;
    localparam [ADDR_W-1:0] LAST   = LAST_I[ADDR_W-1:0];
    localparam [CNT_W-1:0]  FULL   = DEPTH[CNT_W-1:0];
    localparam [CNT_W-1:0]  EMPTY  = {CNT_W{1'b0}};

    reg [WIDTH-1:0]  mem [0:DEPTH-1];
    reg [ADDR_W-1:0] rd_ptr;
    reg [ADDR_W-1:0] wr_ptr;
    reg [CNT_W-1:0]  cnt;

    wire do_push = push_valid && (cnt != FULL) && !drop_valid;
    wire do_pop  = pop_ready && (cnt != EMPTY);
    // The write pointer drop_count entries back, modulo DEPTH (both
    // widened to PW bits: CNT_W may be ADDR_W or ADDR_W + 1).
    localparam integer PW = ADDR_W + CNT_W;
    wire [PW-1:0]     wr_wide   = {{CNT_W{1'b0}}, wr_ptr};
    wire [PW-1:0]     drop_wide = {{ADDR_W{1'b0}}, drop_count};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [PW-1:0]     wr_back   = (wr_wide >= drop_wide) ? wr_wide - drop_wide : wr_wide + DEPTH[PW-1:0] - drop_wide;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [ADDR_W-1:0] wr_drop   = wr_back[ADDR_W-1:0];

    assign push_ready = (cnt != FULL);
    assign pop_valid  = (cnt != EMPTY);
    assign pop_data   = mem[rd_ptr];
    assign count      = cnt;

    always @(posedge clk) begin
        if (do_push) mem[wr_ptr] <= push_data;
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            rd_ptr <= {ADDR_W{1'b0}};
            wr_ptr <= {ADDR_W{1'b0}};
            cnt    <= {CNT_W{1'b0}};
        end else begin
            if (drop_valid) wr_ptr <= wr_drop;
            else if (do_push) wr_ptr <= (wr_ptr == LAST) ? {ADDR_W{1'b0}} : wr_ptr + 1'b1;
            if (do_pop)  rd_ptr <= (rd_ptr == LAST) ? {ADDR_W{1'b0}} : rd_ptr + 1'b1;
            if (drop_valid) cnt <= cnt - drop_count - {{(CNT_W-1){1'b0}}, do_pop};
            else if (do_push && !do_pop) cnt <= cnt + 1'b1;
            else if (do_pop && !do_push) cnt <= cnt - 1'b1;
        end
    end
endmodule
