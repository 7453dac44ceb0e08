package rtl

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// switchLinkUpTB (a format: packet count, VLArb table connections) drives
// input 1 of an emitted radix-2 switch_top with back-to-back 2-block packets
// on VL0 for DLID 1 (PktLen 20 words: (4*20 + 2) B = 82 B), after writing
// the route DLID 1 -> port 0 into its forwarding tables. Output 0's link always
// accepts and delivers no flow-control packet, so output 0 sends on the
// credits it starts with. It prints the blocks sent.
const switchLinkUpTB = "`timescale 1ns/1ps\n" + `
module linkup_tb;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [2*4*64-1:0] serdes_tx;
    wire [1:0] link_up;
    reg        lft_we = 1'b0;
    wire       lft_ready;
    switch_top #(.LFT_TOP(1)) dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(2*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(%[2]s), .vlarb_limit(8'd0),
        .lft_we(lft_we), .lft_dlid(16'd1), .lft_valid(1'b1), .lft_port(1'd0), .lft_ready(lft_ready)
    );
    reg v, s, e;
    reg [DATA_W-1:0] d;
    integer blocks, pk, b;
    initial begin
        force dut.g_port[1].u_link.rx_valid = v;
        force dut.g_port[1].u_link.rx_sop = s;
        force dut.g_port[1].u_link.rx_eop = e;
        force dut.g_port[1].u_link.rx_data = d;
        force dut.g_port[1].u_link.rx_vl = 4'd0;
        force dut.g_port[0].u_link.tx_ready = 1'b1;
        force dut.g_port[0].u_link.fc_tx_ready = 1'b1;
    end
    always @(posedge clk)
        if (dut.g_port[0].tx_valid && dut.g_port[0].tx_ready) blocks = blocks + 1;
    initial begin
        blocks = 0; v = 0; s = 0; e = 0;
        d = 0; d[DATA_W-38 -: 11] = 11'd20; d[DATA_W-17 -: 16] = 16'd1;
        @(negedge clk); @(negedge clk); rst_n = 1;
        wait (lft_ready);
        @(negedge clk); lft_we = 1;
        @(negedge clk); lft_we = 0;
        for (pk = 0; pk < %[1]d; pk = pk + 1)
            for (b = 0; b < 2; b = b + 1) begin
                @(negedge clk);
                v = 1; s = (b == 0); e = (b == 1);
            end
        @(negedge clk); v = 0;
        repeat (400) @(negedge clk);
        $display("LINKUP blocks=%%0d", blocks);
        $finish;
    end
endmodule
`

// TestSwitchLinkUpCredits: before the peer's first flow-control packet a
// transmit port may only use the credits the smallest buffer it could face
// holds. A switch port may face an HCA, so with 200-block switch buffers
// (12800 B / 64) and 128-block HCA buffers (8192 B / 64) output 0 starts
// with 128 credits. Each 2-block packet needs room for itself (the modular
// CanSend rule on its own length), so packet k (from 0) starts while
// 2k + 2 <= 128, k <= 63: 64 packets, 128 blocks — the HCA's whole buffer
// and not one block more — then it waits. (Checking room for a largest
// packet, 65 blocks at MTU 4096, as the RTL once did, stopped at 2k + 65 <=
// 128: 32 packets. Starting with the switch's 200 blocks sent 136 blocks
// into a 128-block HCA buffer: lost packets on a lossless link.)
func TestSwitchLinkUpCredits(t *testing.T) {
	t.Parallel()
	// 100 packets, 200 blocks: the 200-block VL buffer holds them even if
	// nothing drains. The low VLArb table gives VL0 weight 255.
	d := Design{Name: "linkup", Radix: 2, VLs: 2, VLBufferBytes: 12800, HCAVLBufferBytes: 8192, MTU: 4096, LinkGeneration: "NDR", LinkWidth: 4}
	blocks := runLinkUpTB(t, d, 100, "{(64*12){1'b0}}), .vlarb_low({{(63*12){1'b0}}, 8'd255, 4'd0}")
	assert.Equal(t, 2*64, blocks, "blocks sent before any flow-control packet")
	assert.LessOrEqual(t, blocks, 8192/64, "blocks sent beyond an HCA peer's buffer")
	assert.Equal(t, 8192/64, d.Params().PeerDepth)
}

// TestSwitchOneVLNeedsNoVLArbTable: a subnet manager writes no VLArb table
// for a port with one data VL (OpenSM skips it, ib-facts.md §3), so an
// emitted one-VL switch must forward with its table ports at 0, as the
// switch model picks VL 0 whenever it is ready (oneVLPick). It used to run
// the one-entry tables anyway, found no entry with weight and sent nothing:
// every shipped config is one VL. 3 packets of 2 blocks: 6 blocks out
// (credits: 200-block buffers, 6 <= 200).
func TestSwitchOneVLNeedsNoVLArbTable(t *testing.T) {
	t.Parallel()
	d := Design{Name: "onevl", Radix: 2, VLs: 1, VLBufferBytes: 12800, HCAVLBufferBytes: 12800, MTU: 4096, LinkGeneration: "NDR", LinkWidth: 4}
	assert.Equal(t, 3*2, runLinkUpTB(t, d, 3, "12'd0), .vlarb_low(12'd0"))
}

// runLinkUpTB runs switchLinkUpTB on d's switch_top and returns the blocks
// output 0 sent.
func runLinkUpTB(t *testing.T, d Design, packets int, tables string) int {
	t.Helper()
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	files = append(files, File{Name: "linkup_tb.v", Text: fmt.Sprintf(switchLinkUpTB, packets, tables)})
	out := runIcarus(t, files, "linkup_tb")
	m := regexp.MustCompile(`LINKUP blocks=(\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	blocks, _ := strconv.Atoi(m[1])
	return blocks
}

// switchFitTB drives inputs 1 and 2 of an emitted radix-3 switch_top, both
// towards DLID 1 -> port 0 on VL 0: input 1 two 65-block packets (PktLen
// 1024 words: (4*1024 + 2) B = 4098 B), input 2 forty 2-block packets
// (PktLen 20), each input one block a cycle from the same cycle on. Output
// 0's link always accepts and delivers no flow-control packet. It prints the
// blocks output 0 sent and how many of them headed 65-block packets.
const switchFitTB = "`timescale 1ns/1ps\n" + `
module fit_tb;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [3*4*64-1:0] serdes_tx;
    wire [2:0] link_up;
    reg        lft_we = 1'b0;
    wire       lft_ready;
    switch_top #(.LFT_TOP(1)) dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(3*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(12'd0), .vlarb_low(12'd0), .vlarb_limit(8'd0),
        .lft_we(lft_we), .lft_dlid(16'd1), .lft_valid(1'b1), .lft_port(2'd0), .lft_ready(lft_ready)
    );
    reg v1, s1, e1, v2, s2, e2;
    reg [DATA_W-1:0] d1, d2;
    integer blocks, bigs, pk, b, k, j;
    reg go = 1'b0;
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
        force dut.g_port[0].u_link.tx_ready = 1'b1;
        force dut.g_port[0].u_link.fc_tx_ready = 1'b1;
    end
    always @(posedge clk)
        if (dut.g_port[0].tx_valid && dut.g_port[0].tx_ready) begin
            blocks = blocks + 1;
            if (dut.g_port[0].tx_sop && dut.g_port[0].tx_data[DATA_W-38 -: 11] == 11'd1024) bigs = bigs + 1;
        end
    // Input 1: two 65-block packets, one block a cycle from go.
    initial begin
        v1 = 0; s1 = 0; e1 = 0;
        d1 = 0; d1[DATA_W-38 -: 11] = 11'd1024; d1[DATA_W-17 -: 16] = 16'd1;
        wait (go);
        for (pk = 0; pk < 2; pk = pk + 1)
            for (b = 0; b < 65; b = b + 1) begin
                @(negedge clk);
                v1 = 1; s1 = (b == 0); e1 = (b == 64);
            end
        @(negedge clk); v1 = 0;
    end
    // Input 2: forty 2-block packets, from the same cycle.
    initial begin
        v2 = 0; s2 = 0; e2 = 0;
        d2 = 0; d2[DATA_W-38 -: 11] = 11'd20; d2[DATA_W-17 -: 16] = 16'd1;
        wait (go);
        for (k = 0; k < 40; k = k + 1)
            for (j = 0; j < 2; j = j + 1) begin
                @(negedge clk);
                v2 = 1; s2 = (j == 0); e2 = (j == 1);
            end
        @(negedge clk); v2 = 0;
    end
    initial begin
        blocks = 0; bigs = 0;
        @(negedge clk); @(negedge clk); rst_n = 1;
        wait (lft_ready);
        @(negedge clk); lft_we = 1;
        @(negedge clk); lft_we = 0; go = 1;
        repeat (800) @(negedge clk);
        $display("FIT blocks=%0d bigs=%0d", blocks, bigs);
        $finish;
    end
endmodule
`

// TestSwitchCreditsPerPacketLength: the output checks credits for the head
// it would send, so a short packet goes on credits a long one cannot use,
// as in the switch model, whose allocator offers only packets the next hop
// has room for. Output 0 starts with 128 credits (the 8192-byte HCA buffer
// it might face; no flow-control packet arrives). Inputs 1 and 2 request it
// from the same cycle, input 1 with 65-block packets, input 2 with 2-block
// ones, granted round robin. Whichever goes first, the first 65-block packet
// is granted with at least 126 credits left (it waits at most one 2-block
// packet), leaving 128 - 65 = 63 less what went before it; the second needs
// 65 and never fits again; the 2-block packets take the rest two at a time
// until fewer than 2 credits remain: 65 + 2*floor(63/2) = 127 blocks, one of
// them a 65-block head. (Room for a largest packet checked before every
// pick sends 65 or 67 blocks and stops: every packet then needs 65.)
func TestSwitchCreditsPerPacketLength(t *testing.T) {
	t.Parallel()
	d := Design{Name: "fit", Radix: 3, VLs: 1, VLBufferBytes: 12800, HCAVLBufferBytes: 8192, MTU: 4096, LinkGeneration: "NDR", LinkWidth: 4}
	require.Equal(t, 128, d.Params().PeerDepth)
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	files = append(files, File{Name: "fit_tb.v", Text: switchFitTB})
	out := runIcarus(t, files, "fit_tb")
	m := regexp.MustCompile(`FIT blocks=(\d+) bigs=(\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, "127", m[1], "blocks output 0 sent on its 128 credits")
	assert.Equal(t, "1", m[2], "65-block packets output 0 sent")
}
