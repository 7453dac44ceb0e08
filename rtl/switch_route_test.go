package rtl

import (
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// switchRouteTB drives input 1 of an emitted radix-4, 2-VL switch_top with
// two 1-block packets on consecutive cycles (PktLen 5 words: LRH 8 + BTH 12
// + ICRC 4 = 24 bytes, an ACK; 26 bytes with the VCRC, one block): SL1 on
// VL1 to DLID 2, then SL0 on VL0 to DLID 4 (the default table, SL i -> VL
// i & 1 with 2 VLs, as a host sends them). Before them it writes the
// routes DLID 2 -> port 2 and DLID 4 -> port 0 through the forwarding-table
// write port, once the tables have cleared (LFT_TOP 15: 16 cycles). It
// prints every packet head each output sends.
const switchRouteTB = "`timescale 1ns/1ps\n" + `
module route_tb;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [4*4*64-1:0] serdes_tx;
    wire [3:0] link_up;
    reg [64*12-1:0] high, low;
    reg        lft_we = 1'b0;
    reg [15:0] lft_dlid = 16'd0;
    reg [1:0]  lft_port = 2'd0;
    wire       lft_ready;
    switch_top #(.LFT_TOP(15)) dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(4*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(high), .vlarb_low(low), .vlarb_limit(8'd0),
        .lft_we(lft_we), .lft_dlid(lft_dlid), .lft_valid(1'b1), .lft_port(lft_port), .lft_ready(lft_ready)
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
        wait (lft_ready);
        @(negedge clk); lft_we = 1; lft_dlid = 16'd2; lft_port = 2'd2;
        @(negedge clk); lft_we = 1; lft_dlid = 16'd4; lft_port = 2'd0;
        @(negedge clk); lft_we = 0;
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
// sent the VL0 packet, for DLID 4, out of output 2. Now both heads request
// at once and the grant names the input VL it was made for (in_grant_vl). Each packet must leave
// the output the written table names for its DLID (2 -> port 2, 4 -> port
// 0) on the VL
// its SL maps to: every pair has the default table (SL i -> VL i & 1), so
// the VL it came on.
func TestSwitchHeadStaysGranted(t *testing.T) {
	t.Parallel()
	d := Design{Name: "route", Radix: 4, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	files = append(files, File{Name: "route_tb.v", Text: switchRouteTB})
	out := runIcarus(t, files, "route_tb")
	require.Contains(t, out, "ROUTE done")
	var got []string
	for _, m := range regexp.MustCompile(`ROUTE port=\d+ vl=\d+ dlid=\d+`).FindAllString(out, -1) {
		got = append(got, m)
	}
	slices.Sort(got)
	assert.Equal(t, []string{"ROUTE port=0 vl=0 dlid=4", "ROUTE port=2 vl=1 dlid=2"}, got, "packets out, sorted:\n%s", out)
}

// switchDropTB drives input 1 of an emitted radix-4, 2-VL switch_top
// (LFT_TOP 15), whose SL-to-VL table drops SL 2, with five packets on VL 0,
// back to back: a 3-block SL 2 packet to DLID 2 (PktLen 40 words: (4*40 +
// 2) B = 162 B, 3 blocks); SL 0 packets to DLID 3 (2 blocks, PktLen 20:
// 82 B), never written; to DLID 16, above LFT_TOP (1 block, PktLen 5: 26
// B); to DLID 5, written then removed (1 block); and to DLID 2 (1 block).
// Before them it writes DLID 2 -> port 2, DLID 5 -> port 1, DLID 5 -> no
// route, DLID 16 -> port 0 (above the table: not stored). It prints every
// packet head any output sends and, at the end, input 1's free VL 0 blocks.
const switchDropTB = "`timescale 1ns/1ps\n" + `
module drop_tb;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [4*4*64-1:0] serdes_tx;
    wire [3:0] link_up;
    reg [64*12-1:0] high, low;
    reg        lft_we = 1'b0, lft_valid = 1'b0;
    reg [15:0] lft_dlid = 16'd0;
    reg [1:0]  lft_port = 2'd0;
    wire       lft_ready;
    switch_top #(.LFT_TOP(15)) dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(4*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(high), .vlarb_low(low), .vlarb_limit(8'd0),
        .lft_we(lft_we), .lft_dlid(lft_dlid), .lft_valid(lft_valid), .lft_port(lft_port), .lft_ready(lft_ready)
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
    end
    genvar o;
    generate
        for (o = 0; o < 4; o = o + 1) begin : g_mon
            initial begin
                force dut.g_port[o].u_link.tx_ready = 1'b1;
                force dut.g_port[o].u_link.fc_tx_ready = 1'b1;
            end
            always @(posedge clk)
                if (dut.g_port[o].tx_valid && dut.g_port[o].tx_sop)
                    $display("DROP out port=%0d sl=%0d dlid=%0d", o, dut.g_port[o].tx_data[DATA_W-9 -: 4],
                             dut.g_port[o].tx_data[DATA_W-17 -: 16]);
        end
    endgenerate
    // One packet of n blocks, SL sl, to dlid, PktLen words.
    task pkt(input integer n, input [3:0] sl, input [15:0] dlid, input [10:0] words);
        begin
            for (k = 0; k < n; k = k + 1) begin
                @(negedge clk); v = 1; s = (k == 0); e = (k == n - 1); d = 0;
                if (k == 0) begin
                    d[DATA_W-9 -: 4] = sl; d[DATA_W-17 -: 16] = dlid; d[DATA_W-38 -: 11] = words;
                end
            end
        end
    endtask
    task lft(input [15:0] dlid, input valid, input [1:0] port);
        begin
            @(negedge clk); lft_we = 1; lft_dlid = dlid; lft_valid = valid; lft_port = port;
        end
    endtask
    initial begin
        high = 0; low = 0;
        low[11:0] = {8'd4, 4'd0};
        low[23:12] = {8'd4, 4'd1};
        v = 0; s = 0; e = 0; d = 0;
        @(negedge clk); @(negedge clk); rst_n = 1;
        wait (lft_ready);
        lft(16'd2, 1'b1, 2'd2);
        lft(16'd5, 1'b1, 2'd1);
        lft(16'd5, 1'b0, 2'd1);
        lft(16'd16, 1'b1, 2'd0);
        @(negedge clk); lft_we = 0;
        pkt(3, 4'd2, 16'd2, 11'd40);
        pkt(2, 4'd0, 16'd3, 11'd20);
        pkt(1, 4'd0, 16'd16, 11'd5);
        pkt(1, 4'd0, 16'd5, 11'd5);
        pkt(1, 4'd0, 16'd2, 11'd5);
        @(negedge clk); v = 0;
        repeat (20) @(negedge clk);
        $display("DROP free=%0d", dut.g_port[1].u_in.u_buffers.g_vl[0].u_credit.free);
        $finish;
    end
endmodule
`

// TestSwitchDrops: a packet the switch cannot forward is dropped at its
// input, as the switch model drops it (switchasic: no_route and sl2vl
// drops). The SL 2 packet (VL 15 in the SL-to-VL table means drop) and the
// packets with no route (a DLID never written, one above LFT_TOP, one whose
// route was removed) must not leave any output: only the last packet, SL 0
// to DLID 2, leaves, from output 2. Every dropped packet's blocks must be
// freed from input 1's VL 0 buffer, so its credits go back upstream: after
// all five packets (3 + 2 + 1 + 1 + 1 = 8 blocks) every one of the
// 8192 / 64 = 128 blocks is free again.
func TestSwitchDrops(t *testing.T) {
	t.Parallel()
	drop := [16]uint8{0, 1, 15, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}
	d := Design{Name: "drop", Radix: 4, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4,
		SL2VL: []SL2VLSet{{Default: drop}}}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	files = append(files, File{Name: "drop_tb.v", Text: switchDropTB})
	out := runIcarus(t, files, "drop_tb")
	assert.Equal(t, []string{"DROP out port=2 sl=0 dlid=2"}, regexp.MustCompile(`DROP out port=\d+ sl=\d+ dlid=\d+`).FindAllString(out, -1), out)
	assert.Contains(t, out, "DROP free=128", out)
}

// switchRouteLatchTB drives an emitted radix-4, 2-VL switch_top (LFT_TOP
// 15) with DLID 2 routed to port 2: input 2 sends a 16-block packet to DLID
// 2 (PktLen 255 words: (4*255 + 2) B = 1022 B, 16 blocks), input 1 a 1-block
// packet to DLID 2 a cycle later (PktLen 5), whose head must wait while
// output 2 carries the long packet. Four cycles later the subnet management
// agent moves DLID 2 to port 3; after the long packet has gone, input 1
// sends another 1-block packet to DLID 2. Packets carry their input as
// LRH.SLID and a sequence number in the BTH's PSN bits. It prints every
// packet head any output sends.
const switchRouteLatchTB = "`timescale 1ns/1ps\n" + `
module latch_tb;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [4*4*64-1:0] serdes_tx;
    wire [3:0] link_up;
    reg [64*12-1:0] high, low;
    reg        lft_we = 1'b0;
    reg [1:0]  lft_port = 2'd0;
    wire       lft_ready;
    switch_top #(.LFT_TOP(15)) dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(4*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(high), .vlarb_low(low), .vlarb_limit(8'd0),
        .lft_we(lft_we), .lft_dlid(16'd2), .lft_valid(1'b1), .lft_port(lft_port), .lft_ready(lft_ready)
    );
    reg v1, s1, e1, v2, s2, e2;
    reg [DATA_W-1:0] d1, d2;
    integer k;
    initial begin
        force dut.g_port[1].u_link.rx_valid = v1;
        force dut.g_port[1].u_link.rx_sop = s1;
        force dut.g_port[1].u_link.rx_eop = e1;
        force dut.g_port[1].u_link.rx_data = d1;
        force dut.g_port[1].u_link.rx_vl = 4'd0;
        force dut.g_port[2].u_link.rx_valid = v2;
        force dut.g_port[2].u_link.rx_sop = s2;
        force dut.g_port[2].u_link.rx_eop = e2;
        force dut.g_port[2].u_link.rx_data = d2;
        force dut.g_port[2].u_link.rx_vl = 4'd0;
    end
    genvar o;
    generate
        for (o = 0; o < 4; o = o + 1) begin : g_mon
            initial begin
                force dut.g_port[o].u_link.tx_ready = 1'b1;
                force dut.g_port[o].u_link.fc_tx_ready = 1'b1;
            end
            always @(posedge clk)
                if (dut.g_port[o].tx_valid && dut.g_port[o].tx_sop)
                    $display("LATCH out port=%0d slid=%0d seq=%0d", o, dut.g_port[o].tx_data[DATA_W-49 -: 16],
                             dut.g_port[o].tx_data[DATA_W-65-72 -: 24]);
        end
    endgenerate
    // A head block: SL 0, DLID 2, PktLen words, SLID slid, PSN seq.
    function [DATA_W-1:0] head(input [10:0] words, input [15:0] slid, input [23:0] seq);
        begin
            head = 0;
            head[DATA_W-17 -: 16] = 16'd2; head[DATA_W-38 -: 11] = words; head[DATA_W-49 -: 16] = slid;
            head[DATA_W-65-72 -: 24] = seq;
        end
    endfunction
    initial begin
        high = 0; low = 0;
        low[11:0] = {8'd4, 4'd0};
        low[23:12] = {8'd4, 4'd1};
        v1 = 0; s1 = 0; e1 = 0; d1 = 0; v2 = 0; s2 = 0; e2 = 0; d2 = 0;
        @(negedge clk); @(negedge clk); rst_n = 1;
        wait (lft_ready);
        @(negedge clk); lft_we = 1; lft_port = 2'd2;
        @(negedge clk); lft_we = 0;
        for (k = 0; k < 16; k = k + 1) begin
            @(negedge clk);
            v2 = 1; s2 = (k == 0); e2 = (k == 15); d2 = (k == 0) ? head(11'd255, 16'd2, 24'd0) : 0;
            v1 = (k == 1); s1 = 1; e1 = 1; d1 = head(11'd5, 16'd1, 24'd1);
            if (k == 5) begin lft_we = 1; lft_port = 2'd3; end
            else lft_we = 0;
        end
        @(negedge clk); v2 = 0;
        repeat (20) @(negedge clk);
        v1 = 1; s1 = 1; e1 = 1; d1 = head(11'd5, 16'd1, 24'd2);
        @(negedge clk); v1 = 0;
        repeat (20) @(negedge clk);
        $display("LATCH done");
        $finish;
    end
endmodule
`

// TestSwitchRouteLatchedAtHead: the switch model looks a packet's route up
// when it arrives; the RTL latches it when the head is first presented at
// its input's buffer output. The 1-block packet from input 1 (seq 1) has
// its head presented while output 2 carries input 2's 16-block packet, and
// the write moving DLID 2 to port 3 lands while it waits, so it must still
// leave port 2 (a lookup left live until the grant would move it to port 3);
// the packet sent after the write (seq 2) leaves port 3.
func TestSwitchRouteLatchedAtHead(t *testing.T) {
	t.Parallel()
	d := Design{Name: "latch", Radix: 4, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	out := runIcarus(t, append(files, File{Name: "latch_tb.v", Text: switchRouteLatchTB}), "latch_tb")
	require.Contains(t, out, "LATCH done")
	assert.Equal(t, []string{"LATCH out port=2 slid=2 seq=0", "LATCH out port=2 slid=1 seq=1", "LATCH out port=3 slid=1 seq=2"},
		regexp.MustCompile(`LATCH out port=\d+ slid=\d+ seq=\d+`).FindAllString(out, -1), out)
}
