// sw_route_lookup: the linear forwarding table (LFT) of one switch input:
// DLID -> output port (ib-facts.md §4). Go model: switchasic.LFT
// (switchasic/forwarding.go), with the switch's rule that a port outside the
// radix is no route (switchasic.Switch.PacketArrived); rtl/cosim_lft_test.go
// compares the two cycle by cycle.
//
// The table holds DLIDs 0..LFT_TOP, one entry of PORT_W + 1 bits each
// ({route valid, port}), in one array with one write port and one read
// port. LFT_TOP is the LinearFDBTop the table can hold: the emitter's
// default is 0xBFFF (49151: every unicast LID, 48K entries); tests and small
// fabrics set it to their highest LID, so a simulation does not build and
// clear 48K entries per input.
//
// Contract, per clock cycle:
//   Reset, then a clear: after rst_n rises the table clears one entry per
//   cycle, DLID 0 up to LFT_TOP (LFT_TOP + 1 cycles); lft_ready is 0 until
//   the last is cleared. During the clear every lookup is no route and a
//   write is not taken; the subnet management agent waits for lft_ready.
//   Write: when lft_we && lft_ready, entry lft_dlid becomes {lft_valid &&
//   lft_port < PORTS, lft_port} at the rising edge: lft_valid = 0 removes
//   the route (OpenSM writes 0xFF, OSM_NO_PATH, there), and a port outside
//   the radix is no route, as the model's switch drops such a packet. A
//   write to a DLID above LFT_TOP is not stored (the SM reads the table's
//   size, LinearFDBCap, from SwitchInfo and writes no further).
//   Read: out_valid/out_port are combinational from dlid and the table at
//   the start of the cycle (a distributed RAM or flops): a write and a read
//   of the same entry in one cycle read the old value, the new one from the
//   next cycle. out_valid = 0 (no route: the input unit drops the packet, as
//   the model's no_route drop) for a DLID never written since reset, one
//   whose route was removed, a DLID above LFT_TOP (multicast 0xC000..0xFFFE
//   and the permissive LID 0xFFFF among them), and during the clear;
//   out_port is 0 then.
// TODO: multicast (MFT) and LMC path bits; a 48K-entry table is a
// synchronous SRAM in a real switch, whose registered read would have the
// input unit wait a cycle for the port (the combinational read keeps the
// input unit's timing of the skeleton).
module sw_route_lookup #(
    parameter integer PORTS   = 4,
    parameter integer PORT_W  = 2,
    parameter integer LFT_TOP = 49151, // highest DLID held, 1..0xBFFF
    parameter integer ADDR_W  = $clog2(LFT_TOP + 1)
) (
    input  wire              clk,
    input  wire              rst_n,
    // LRH.DLID of the head packet, and its route
    input  wire [15:0]       dlid,
    output wire              out_valid,
    output wire [PORT_W-1:0] out_port,
    // LFT write from the subnet management agent
    input  wire              lft_we,
    input  wire [15:0]       lft_dlid,
    input  wire              lft_valid,
    input  wire [PORT_W-1:0] lft_port,
    output wire              lft_ready
);
    localparam [ADDR_W-1:0] TOP = LFT_TOP[ADDR_W-1:0];

    reg [PORT_W:0]   mem [0:LFT_TOP]; // {route valid, port}
    reg              clearing;        // the clear after reset is under way
    reg [ADDR_W-1:0] clr_addr;        // the next entry it clears

    // A port outside the radix is no route; with PORTS = 2^PORT_W every
    // port is inside (and a compare would be constant).
    wire port_ok;
    generate
        if (PORTS < (1 << PORT_W)) begin : g_port_check
            assign port_ok = {1'b0, lft_port} < PORTS[PORT_W:0];
        end else begin : g_port_all
            assign port_ok = 1'b1;
        end
    endgenerate

    wire             rd_in  = dlid <= LFT_TOP[15:0];
    wire             wr_in  = lft_dlid <= LFT_TOP[15:0];
    wire             do_wr  = lft_we && !clearing && wr_in;
    wire [PORT_W:0]  entry  = mem[dlid[ADDR_W-1:0]];

    assign lft_ready = !clearing;
    assign out_valid = !clearing && rd_in && entry[PORT_W];
    assign out_port  = out_valid ? entry[PORT_W-1:0] : {PORT_W{1'b0}};

    always @(posedge clk) begin
        if (clearing) mem[clr_addr] <= {(PORT_W + 1){1'b0}};
        else if (do_wr) mem[lft_dlid[ADDR_W-1:0]] <= {lft_valid && port_ok, lft_port};
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            clearing <= 1'b1;
            clr_addr <= {ADDR_W{1'b0}};
        end else if (clearing) begin
            if (clr_addr == TOP) clearing <= 1'b0;
            else clr_addr <= clr_addr + 1'b1;
        end
    end
endmodule
