package rtl

import (
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routeDouble stands in for the TODO sw_route_lookup in switch-level
// testbenches: the output port is the DLID's low PORT_W bits.
const routeDouble = `// Test double for sw_route_lookup (TODO): out_port = DLID mod 2^PORT_W.
module sw_route_lookup #(parameter integer PORT_W = 2) (
    input wire clk, input wire rst_n, input wire [15:0] dlid, output wire [PORT_W-1:0] out_port,
    input wire lft_we, input wire [15:0] lft_dlid, input wire [PORT_W-1:0] lft_port
);
    assign out_port = dlid[PORT_W-1:0];
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, clk, rst_n, dlid, lft_we, lft_dlid, lft_port, 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule
`

// switchRouteTB drives input 1 of an emitted radix-4, 2-VL switch_top with
// two 1-block packets on consecutive cycles (PktLen 5 words: LRH 8 + BTH 12
// + ICRC 4 = 24 bytes, an ACK; 26 bytes with the VCRC, one block): SL1 on
// VL1 to DLID 2, then SL0 on VL0 to DLID 4 (the default table, SL i -> VL
// i & 1 with 2 VLs, as a host sends them). It prints every packet head each output sends.
const switchRouteTB = "`timescale 1ns/1ps\n" + `
module route_tb;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [4*4*64-1:0] serdes_tx;
    wire [3:0] link_up;
    reg [64*12-1:0] high, low;
    switch_top dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(4*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(high), .vlarb_low(low), .vlarb_limit(8'd0),
        .lft_we(1'b0), .lft_dlid(16'd0), .lft_port(2'd0)
    );
    reg v, s, e;
    reg [3:0] vl;
    reg [DATA_W-1:0] d;
    genvar o;
    generate
        for (o = 0; o < 4; o = o + 1) begin : g_mon
            initial begin
                force dut.g_port[o].u_link.tx_ready = 1'b1;
                force dut.g_port[o].u_link.fc_tx_ready = 1'b1;
            end
            always @(posedge clk)
                if (dut.g_port[o].tx_valid && dut.g_port[o].tx_ready && dut.g_port[o].tx_sop)
                    $display("ROUTE port=%0d vl=%0d dlid=%0d", o, dut.g_port[o].tx_vl, dut.g_port[o].tx_data[DATA_W-17 -: 16]);
        end
    endgenerate
    initial begin
        force dut.g_port[1].u_link.rx_valid = v;
        force dut.g_port[1].u_link.rx_sop = s;
        force dut.g_port[1].u_link.rx_eop = e;
        force dut.g_port[1].u_link.rx_data = d;
        force dut.g_port[1].u_link.rx_vl = vl;
    end
    initial begin
        high = 0; low = 0;
        low[11:0] = {8'd4, 4'd0};
        low[23:12] = {8'd4, 4'd1};
        v = 0; s = 0; e = 0; d = 0; vl = 0;
        @(negedge clk); @(negedge clk); rst_n = 1;
        @(negedge clk); v = 1; s = 1; e = 1; vl = 1; d = 0; d[DATA_W-38 -: 11] = 11'd5; d[DATA_W-17 -: 16] = 16'd2;
        d[DATA_W-1 -: 4] = 4'd1; d[DATA_W-9 -: 4] = 4'd1;
        @(negedge clk); v = 1; s = 1; e = 1; vl = 0; d = 0; d[DATA_W-38 -: 11] = 11'd5; d[DATA_W-17 -: 16] = 16'd4;
        @(negedge clk); v = 0;
        repeat (20) @(negedge clk);
        $display("ROUTE done");
        $finish;
    end
endmodule
`

// TestSwitchHeadStaysGranted checks that a switch input sends the packet it
// was granted for. The VL1 packet's head requests output 2 and is granted
// in the cycle the VL0 packet's head lands in its buffer; the grant is
// registered, so the input moves its head a cycle later. The input's VL
// select used to re-pick in that cycle (VL0 comes first round robin) and
// sent the VL0 packet, for DLID 4, out of output 2. Each packet must leave
// the output its DLID names (DLID mod 4: 2 -> port 2, 4 -> port 0) on the VL
// its SL maps to: every pair has the default table (SL i -> VL i & 1), so
// the VL it came on.
func TestSwitchHeadStaysGranted(t *testing.T) {
	d := Design{Name: "route", Radix: 4, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	files = slices.DeleteFunc(files, func(f File) bool { return f.Name == "sw_route_lookup.v" })
	files = append(files, File{Name: "route_double.v", Text: routeDouble}, File{Name: "route_tb.v", Text: switchRouteTB})
	out := runIcarus(t, files, "route_tb")
	require.Contains(t, out, "ROUTE done")
	var got []string
	for _, m := range regexp.MustCompile(`ROUTE port=\d+ vl=\d+ dlid=\d+`).FindAllString(out, -1) {
		got = append(got, m)
	}
	slices.Sort(got)
	assert.Equal(t, []string{"ROUTE port=0 vl=0 dlid=4", "ROUTE port=2 vl=1 dlid=2"}, got, "packets out, sorted:\n%s", out)
}

// switchDropTB drives input 1 of an emitted radix-4, 2-VL switch_top, whose
// table drops SL 2, with a 3-block SL 2 packet (PktLen 40 words: (4*40 + 2)
// B = 162 B, 3 blocks) then a 1-block SL 0 packet (PktLen 5), both on VL 0
// to DLID 2, back to back. It prints every packet head output 2 sends and,
// at the end, input 1's free VL 0 blocks.
const switchDropTB = "`timescale 1ns/1ps\n" + `
module drop_tb;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [4*4*64-1:0] serdes_tx;
    wire [3:0] link_up;
    reg [64*12-1:0] high, low;
    switch_top dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(4*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(high), .vlarb_low(low), .vlarb_limit(8'd0),
        .lft_we(1'b0), .lft_dlid(16'd0), .lft_port(2'd0)
    );
    reg v, s, e;
    reg [DATA_W-1:0] d;
    integer k;
    initial begin
        force dut.g_port[1].u_link.rx_valid = v;
        force dut.g_port[1].u_link.rx_sop = s;
        force dut.g_port[1].u_link.rx_eop = e;
        force dut.g_port[1].u_link.rx_data = d;
        force dut.g_port[1].u_link.rx_vl = 4'd0;
        force dut.g_port[2].u_link.tx_ready = 1'b1;
        force dut.g_port[2].u_link.fc_tx_ready = 1'b1;
    end
    always @(posedge clk)
        if (dut.g_port[2].tx_valid && dut.g_port[2].tx_sop)
            $display("DROP out sl=%0d", dut.g_port[2].tx_data[DATA_W-9 -: 4]);
    initial begin
        high = 0; low = 0;
        low[11:0] = {8'd4, 4'd0};
        low[23:12] = {8'd4, 4'd1};
        v = 0; s = 0; e = 0; d = 0;
        @(negedge clk); @(negedge clk); rst_n = 1;
        for (k = 0; k < 3; k = k + 1) begin
            @(negedge clk); v = 1; s = (k == 0); e = (k == 2); d = 0;
            if (k == 0) begin
                d[DATA_W-9 -: 4] = 4'd2; d[DATA_W-17 -: 16] = 16'd2; d[DATA_W-38 -: 11] = 11'd40;
            end
        end
        @(negedge clk); v = 1; s = 1; e = 1; d = 0; d[DATA_W-17 -: 16] = 16'd2; d[DATA_W-38 -: 11] = 11'd5;
        @(negedge clk); v = 0;
        repeat (20) @(negedge clk);
        $display("DROP free=%0d", dut.g_port[1].u_in.u_buffers.g_vl[0].u_credit.free);
        $finish;
    end
endmodule
`

// TestSwitchDropsSLOnVL15: VL 15 in an SL-to-VL table means drop. The SL 2
// packet must not leave (only the SL 0 packet behind it reaches output 2),
// and its 3 blocks must be freed from input 1's VL 0 buffer, so its credits
// go back upstream: after both packets every one of the 8192 / 64 = 128
// blocks is free again.
func TestSwitchDropsSLOnVL15(t *testing.T) {
	drop := [16]uint8{0, 1, 15, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}
	d := Design{Name: "drop", Radix: 4, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4,
		SL2VL: []SL2VLSet{{Default: drop}}}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	files = slices.DeleteFunc(files, func(f File) bool { return f.Name == "sw_route_lookup.v" })
	files = append(files, File{Name: "route_double.v", Text: routeDouble}, File{Name: "drop_tb.v", Text: switchDropTB})
	out := runIcarus(t, files, "drop_tb")
	assert.Equal(t, []string{"DROP out sl=0"}, regexp.MustCompile(`DROP out sl=\d+`).FindAllString(out, -1), out)
	assert.Contains(t, out, "DROP free=128", out)
}
