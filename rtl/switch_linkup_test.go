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
// with 128 credits. It checks room for a largest packet (65 blocks at MTU
// 4096) before each 2-block packet, so packet k (from 0) starts while
// 2k + 65 <= 128, k <= 31: 32 packets, 64 blocks, then it waits. It used to
// start with the switch's 200 blocks: 2k + 65 <= 200, 68 packets, 136 blocks,
// 8 more than an HCA peer holds: lost packets on a lossless link. (An HCA
// back to back faces an HCA: the same case.)
func TestSwitchLinkUpCredits(t *testing.T) {
	// 100 packets, 200 blocks: the 200-block VL buffer holds them even if
	// nothing drains. The low VLArb table gives VL0 weight 255.
	d := Design{Name: "linkup", Radix: 2, VLs: 2, VLBufferBytes: 12800, HCAVLBufferBytes: 8192, MTU: 4096, LinkGeneration: "NDR", LinkWidth: 4}
	blocks := runLinkUpTB(t, d, 100, "{(64*12){1'b0}}), .vlarb_low({{(63*12){1'b0}}, 8'd255, 4'd0}")
	assert.Equal(t, 2*32, blocks, "blocks sent before any flow-control packet")
	assert.LessOrEqual(t, blocks, 8192/64, "blocks sent beyond an HCA peer's buffer")
	assert.Equal(t, 8192/64, d.Params().PeerDepth)
}

// TestSwitchOneVLNeedsNoVLArbTable: a subnet manager writes no VLArb table
// for a port with one data VL (OpenSM skips it, ib-facts.md §3), so an
// emitted one-VL switch must forward with its table ports at 0, as the
// switch model picks VL 0 whenever it is ready (oneVLPick). It used to run
// the one-entry tables anyway, found no entry with weight and sent nothing:
// every shipped config is one VL. 3 packets of 2 blocks: 6 blocks out
// (credits: 200-block buffers, 6 + 65 <= 200).
func TestSwitchOneVLNeedsNoVLArbTable(t *testing.T) {
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
