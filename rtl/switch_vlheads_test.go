package rtl

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// switchVLHeadsTB drives input 1 of an emitted radix-3, 2-VL switch_top
// (LFT_TOP 3, so the tables clear in 4 cycles) whose testbench routes DLID
// 1 to port 0 and DLID 2 to port 2. Output 2's peer first advertises FCCL 0
// on VL 0 (a flow-control packet forced on port 2's link), so output 2 has
// no VL 0 credit. Then, back to back on input 1: packet A on VL 0 (SL 0,
// DLID 2, 2 blocks: PktLen 20 words, (4*20 + 2) B = 82 B), packet B on VL 1
// (SL 1, DLID 1, 2 blocks) and packet C on VL 1 (SL 1, DLID 1, 1 block:
// PktLen 5, 26 B). With the default SL-to-VL table (SL i -> VL i & 1) each
// keeps its VL. 40 cycles after C, output 2's peer advertises FCCL 2 on VL
// 0. The bench prints every head an output sends with the cycle (counted
// from reset), the cycle of the credit, and input 1's free blocks per VL
// just before the credit and at the end.
var switchVLHeadsTB = switchRadix3Bench("vlheads_tb", `
    reg        fc_v = 1'b0;
    reg [11:0] fc_fccl = 12'd0;
    initial begin
        force dut.g_port[2].u_link.fc_rx_valid = fc_v;
        force dut.g_port[2].u_link.fc_rx_vl = 4'd0;
        force dut.g_port[2].u_link.fc_rx_fctbs = 12'd0;
        force dut.g_port[2].u_link.fc_rx_fccl = fc_fccl;
    end
    initial begin
        start;
        @(negedge clk); lft_we = 1; lft_dlid = 16'd1; lft_port = 2'd0;
        @(negedge clk); lft_we = 1; lft_dlid = 16'd2; lft_port = 2'd2;
        @(negedge clk); lft_we = 0; fc_v = 1; fc_fccl = 12'd0;
        @(negedge clk); fc_v = 0;
        blk(1, 0, 4'd0, 16'd2, 11'd20); blk(0, 1, 4'd0, 16'd2, 11'd20); // A
        blk(1, 0, 4'd1, 16'd1, 11'd20); blk(0, 1, 4'd1, 16'd1, 11'd20); // B
        blk(1, 1, 4'd1, 16'd1, 11'd5);                                  // C
        @(negedge clk); v = 0;
        repeat (39) @(negedge clk);
        $display("FREE before vl0=%0d vl1=%0d", dut.g_port[1].u_in.u_buffers.g_vl[0].u_credit.free,
                 dut.g_port[1].u_in.u_buffers.g_vl[1].u_credit.free);
        fc_v = 1; fc_fccl = 12'd2;
        $display("CREDIT cycle=%0d", cycle);
        @(negedge clk); fc_v = 0;
        repeat (20) @(negedge clk);
        $display("FREE after vl0=%0d vl1=%0d", dut.g_port[1].u_in.u_buffers.g_vl[0].u_credit.free,
                 dut.g_port[1].u_in.u_buffers.g_vl[1].u_credit.free);
        $display("VLHEADS done");
        $finish;
    end
`)

// switchRadix3Bench is the harness of the benches below: an emitted
// radix-3 switch_top (LFT_TOP 3, so the tables clear in 4 cycles), its
// serial ports idle, input 1's link forced from v, s, e, vl and d, which
// the task blk drives one block at a time (LRH.VL = LRH.SL = the VL,
// DLID, PktLen), every output's link taking a block when its bit of
// out_ready is set (all by default) and its flow-control packets always;
// every head an output sends is printed with the cycle (counted from
// reset). The task start fills the low VL arbitration table (weight 4 for
// VLs 0 and 1), leaves reset and waits for the forwarding tables to
// clear; the lft_* registers write them. body adds the bench's own
// declarations and stimulus.
func switchRadix3Bench(module, body string) string {
	return "`timescale 1ns/1ps\n" + `
module ` + module + `;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [3*4*64-1:0] serdes_tx;
    wire [2:0] link_up;
    reg [64*12-1:0] high, low;
    reg        lft_we = 1'b0;
    reg [15:0] lft_dlid = 16'd0;
    reg [1:0]  lft_port = 2'd0;
    wire       lft_ready;
    switch_top #(.LFT_TOP(3)) dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(3*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(high), .vlarb_low(low), .vlarb_limit(8'd0),
        .lft_we(lft_we), .lft_dlid(lft_dlid), .lft_valid(1'b1), .lft_port(lft_port), .lft_ready(lft_ready)
    );
    reg v = 1'b0, s = 1'b0, e = 1'b0;
    reg [3:0] vl = 4'd0;
    reg [DATA_W-1:0] d = {DATA_W{1'b0}};
    reg [2:0] out_ready = 3'b111;
    integer cycle = 0;
    always @(posedge clk) if (rst_n) cycle <= cycle + 1;
    genvar o;
    generate
        for (o = 0; o < 3; o = o + 1) begin : g_mon
            wire ready = out_ready[o]; // (Icarus does not follow a bit-select in a force)
            initial begin
                force dut.g_port[o].u_link.tx_ready = ready;
                force dut.g_port[o].u_link.fc_tx_ready = 1'b1;
            end
            always @(posedge clk)
                if (dut.g_port[o].tx_valid && dut.g_port[o].tx_ready && dut.g_port[o].tx_sop)
                    $display("HEAD cycle=%0d port=%0d vl=%0d dlid=%0d", cycle, o, dut.g_port[o].tx_vl,
                             dut.g_port[o].tx_data[DATA_W-17 -: 16]);
        end
    endgenerate
    initial begin
        force dut.g_port[1].u_link.rx_valid = v;
        force dut.g_port[1].u_link.rx_sop = s;
        force dut.g_port[1].u_link.rx_eop = e;
        force dut.g_port[1].u_link.rx_data = d;
        force dut.g_port[1].u_link.rx_vl = vl;
    end
    task blk(input sop, input eop, input [3:0] lvl, input [15:0] dlid, input [10:0] len);
        begin
            @(negedge clk);
            v = 1; s = sop; e = eop; vl = lvl; d = 0;
            d[DATA_W-1 -: 4] = lvl; d[DATA_W-9 -: 4] = lvl; // LRH.VL, LRH.SL
            d[DATA_W-17 -: 16] = dlid; d[DATA_W-38 -: 11] = len;
        end
    endtask
    task start;
        begin
            high = 0; low = 0;
            low[11:0] = {8'd4, 4'd0};
            low[23:12] = {8'd4, 4'd1};
            @(negedge clk); @(negedge clk); rst_n = 1;
            wait (lft_ready);
        end
    endtask
` + body + `endmodule
`
}

// TestSwitchVLHeadsIndependent: one input VL's head waiting for credits
// does not hold back the input's other VLs. Packet A (VL 0, for output 2,
// which has no VL 0 credit) reaches input 1 first; B and C (VL 1, for the
// idle output 0) come behind it on the other VL. Every VL's head requests
// its output, so B and C leave output 0, B first (one VL's packets keep
// their order), before output 2 gets any credit, while A waits holding its
// 2 blocks of input 1's VL 0 buffer (free 8192 / 64 − 2 = 126; VL 1 all
// 128 free, B's and C's blocks gone); once the peer advertises FCCL 2 (2
// credits: (2 − 0) mod 4096, A's 2 blocks fit) A leaves output 2, and
// every block is free again (128 and 128). The RTL before this test offered
// the allocator one VL's head at a time, locked on A: B and C waited for
// A's credits, which fails the first check.
func TestSwitchVLHeadsIndependent(t *testing.T) {
	t.Parallel()
	d := Design{Name: "vlheads", Radix: 3, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	out := runIcarus(t, append(files, File{Name: "vlheads_tb.v", Text: switchVLHeadsTB}), "vlheads_tb")
	require.Contains(t, out, "VLHEADS done", out)
	m := regexp.MustCompile(`CREDIT cycle=(\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	credit, _ := strconv.Atoi(m[1])
	type head struct{ cycle, port, vl, dlid int }
	var heads []head
	for _, h := range regexp.MustCompile(`HEAD cycle=(\d+) port=(\d+) vl=(\d+) dlid=(\d+)`).FindAllStringSubmatch(out, -1) {
		n := func(i int) int { x, _ := strconv.Atoi(h[i]); return x }
		heads = append(heads, head{n(1), n(2), n(3), n(4)})
	}
	require.Len(t, heads, 3, "A, B and C each leave once:\n%s", out)
	// B and C out of output 0 on VL 1, in order, before A's credit.
	assert.Equal(t, []int{0, 1, 1}, []int{heads[0].port, heads[0].vl, heads[0].dlid}, "B first")
	assert.Equal(t, []int{0, 1, 1}, []int{heads[1].port, heads[1].vl, heads[1].dlid}, "C second")
	assert.Less(t, heads[1].cycle, credit, "B and C left while A waited for credits:\n%s", out)
	// A out of output 2 on VL 0, after its credit.
	assert.Equal(t, []int{2, 0, 2}, []int{heads[2].port, heads[2].vl, heads[2].dlid}, "A last")
	assert.Greater(t, heads[2].cycle, credit)
	assert.Contains(t, out, "FREE before vl0=126 vl1=128")
	assert.Contains(t, out, "FREE after vl0=128 vl1=128")
}

// switchOneInputVLArbTB is a bench body for switchRadix3Bench (a format:
// the two VL 0 and VL 1 weights): it drives input 1 of the radix-3, 2-VL
// switch_top with 4 packets on VL 0 (SL 0) and 4 on VL 1 (SL 1),
// interleaved, 2 blocks each (PktLen 20), all for DLID 1, routed to port
// 0, whose peer first advertises FCCL 0 on both VLs. Once every packet is
// in, the peer advertises FCCL 100 on VL 1 and, the next cycle, on VL 0.
// The VL arbitration tables are the low table {VL 0 weight %[1]d, VL 1
// weight %[2]d}, written after start's. The harness prints the heads port
// 0 starts, in order.
const switchOneInputVLArbTB = `
    reg        fc_v = 1'b0;
    reg [3:0]  fc_vl = 4'd0;
    reg [11:0] fc_fccl = 12'd0;
    integer pk;
    initial begin
        force dut.g_port[0].u_link.fc_rx_valid = fc_v;
        force dut.g_port[0].u_link.fc_rx_vl = fc_vl;
        force dut.g_port[0].u_link.fc_rx_fctbs = 12'd0;
        force dut.g_port[0].u_link.fc_rx_fccl = fc_fccl;
    end
    initial begin
        start;
        low[11:0] = {8'd%[1]d, 4'd0};
        low[23:12] = {8'd%[2]d, 4'd1};
        @(negedge clk); lft_we = 1; lft_dlid = 16'd1; lft_port = 2'd0;
        @(negedge clk); lft_we = 0; fc_v = 1; fc_vl = 4'd0; fc_fccl = 12'd0;
        @(negedge clk); fc_vl = 4'd1;
        @(negedge clk); fc_v = 0;
        for (pk = 0; pk < 4; pk = pk + 1) begin
            blk(1, 0, 4'd0, 16'd1, 11'd20); blk(0, 1, 4'd0, 16'd1, 11'd20);
            blk(1, 0, 4'd1, 16'd1, 11'd20); blk(0, 1, 4'd1, 16'd1, 11'd20);
        end
        @(negedge clk); v = 0;
        repeat (4) @(negedge clk);
        fc_v = 1; fc_vl = 4'd1; fc_fccl = 12'd100;
        @(negedge clk); fc_vl = 4'd0;
        @(negedge clk); fc_v = 0;
        repeat (40) @(negedge clk);
        $display("ONEIN done");
        $finish;
    end
`

// TestSwitchVLArbitrationOneInput: two VLs of one input share an output by
// its VL arbitration tables, as the model's do. All 8 packets wait in input
// 1's buffers for port 0's credits; VL 1's come a cycle before VL 0's, so
// the first arbitration sees VL 1 alone and every later one both VLs while
// both have packets (the output is busy 2 blocks per packet, by which time
// VL 0 has its credits). components.VLArbiter, picked over that ready mask
// and charged 2 blocks per packet, gives the order port 0 must send. The
// RTL before per-VL requests locked the input on the VL 0 head that came
// first and then took the VLs in turn, round robin, whatever the tables
// said.
func TestSwitchVLArbitrationOneInput(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	d := Design{Name: "onein", Radix: 3, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	for _, tc := range []struct {
		w0, w1 uint8
		want   string // from first principles, as a check on the model
	}{
		// VL 1 alone takes the turn from the VL 0 entry (a skipped entry
		// forfeits its weight) and keeps it for its 4 blocks: 1 1, then
		// each entry's 4 blocks: 0 0, 1 1, and VL 0's last two.
		{4, 4, "1 1 0 0 1 1 0 0"},
		// VL 1's entry (2 blocks) is used up by its first packet; then VL 0
		// three packets (6 blocks), VL 1 one, VL 0 its last, VL 1 the rest.
		{6, 2, "1 0 0 0 1 0 1 1"},
	} {
		// The Go model's order.
		arb := components.NewVLArbiter(nil, []components.VLArbEntry{{VL: 0, Weight: tc.w0}, {VL: 1, Weight: tc.w1}}, 0)
		left := [2]int{4, 4}
		var model []string
		for k := 0; left[0]+left[1] > 0; k++ {
			var ready uint16
			for v, n := range left {
				if n > 0 && (k > 0 || v == 1) {
					ready |= 1 << v
				}
			}
			v := arb.Pick(ready)
			require.GreaterOrEqual(t, v, 0)
			arb.Commit(v, 2)
			left[v]--
			model = append(model, strconv.Itoa(v))
		}
		require.Equal(t, tc.want, strings.Join(model, " "), "the Go model against first principles")

		tb := File{Name: "onein_tb.v", Text: switchRadix3Bench("onein_tb", fmt.Sprintf(switchOneInputVLArbTB, tc.w0, tc.w1))}
		out := runIcarus(t, append(slices.Clip(files), tb), "onein_tb")
		require.Contains(t, out, "ONEIN done")
		var got []string
		for _, m := range regexp.MustCompile(`HEAD cycle=\d+ port=0 vl=(\d+)`).FindAllStringSubmatch(out, -1) {
			got = append(got, m[1])
		}
		assert.Equal(t, tc.want, strings.Join(got, " "), "VL order out of port 0:\n%s", out)
	}
}

// switchDropBesideGrantTB drives input 1 of an emitted radix-3, 2-VL
// switch_top (LFT_TOP 3: DLID 1 routed to port 0, DLID 3 never written, so
// no route). Output 0's link takes nothing (tx_ready 0) until released.
// Back to back on input 1: A on VL 0 (SL 0, DLID 1, 4 blocks: PktLen 60
// words, (4*60 + 2) B = 242 B), B on VL 1 (SL 1, DLID 3, 3 blocks: PktLen
// 40, 162 B) and C on VL 1 (SL 1, DLID 1, 1 block: PktLen 5, 26 B). 30
// cycles after C it prints input 1's free blocks per VL, then releases
// output 0, waits 30 cycles and prints them again. Every head an output
// sends is printed.
var switchDropBesideGrantTB = switchRadix3Bench("dropgrant_tb", `
    initial begin
        out_ready[0] = 1'b0;
        start;
        @(negedge clk); lft_we = 1; lft_dlid = 16'd1; lft_port = 2'd0;
        @(negedge clk); lft_we = 0;
        blk(1, 0, 4'd0, 16'd1, 11'd60); blk(0, 0, 4'd0, 16'd1, 11'd60); blk(0, 0, 4'd0, 16'd1, 11'd60); blk(0, 1, 4'd0, 16'd1, 11'd60); // A
        blk(1, 0, 4'd1, 16'd3, 11'd40); blk(0, 0, 4'd1, 16'd3, 11'd40); blk(0, 1, 4'd1, 16'd3, 11'd40);                                  // B
        blk(1, 1, 4'd1, 16'd1, 11'd5);                                                                                                    // C
        @(negedge clk); v = 0;
        repeat (30) @(negedge clk);
        $display("FREE held vl0=%0d vl1=%0d", dut.g_port[1].u_in.u_buffers.g_vl[0].u_credit.free,
                 dut.g_port[1].u_in.u_buffers.g_vl[1].u_credit.free);
        out_ready[0] = 1'b1;
        repeat (30) @(negedge clk);
        $display("FREE end vl0=%0d vl1=%0d", dut.g_port[1].u_in.u_buffers.g_vl[0].u_credit.free,
                 dut.g_port[1].u_in.u_buffers.g_vl[1].u_credit.free);
        $display("DROPGRANT done");
        $finish;
    end
`)

// TestSwitchDropBesideGrant: a head dropped on one VL (no route) drains
// while another VL of the same input holds a grant, and does not disturb
// it. A (VL 0) is granted output 0, whose link takes nothing, so A's 4
// blocks stay in input 1's VL 0 buffer (8192 / 64 − 4 = 124 free); B (VL
// 1, no route) drains as it arrives, and C (VL 1, for output 0) waits for
// A's output holding its one block, so VL 1 has 128 − 1 = 127 free while
// A still waits (124 had B's 3 blocks stayed behind A's grant). Once
// output 0 takes blocks, A leaves whole, then C; B never leaves; every
// block is free again (128 and 128).
func TestSwitchDropBesideGrant(t *testing.T) {
	t.Parallel()
	d := Design{Name: "dropgrant", Radix: 3, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	out := runIcarus(t, append(files, File{Name: "dropgrant_tb.v", Text: switchDropBesideGrantTB}), "dropgrant_tb")
	require.Contains(t, out, "DROPGRANT done", out)
	assert.Contains(t, out, "FREE held vl0=124 vl1=127", "B drained beside A's grant:\n%s", out)
	heads := regexp.MustCompile(`HEAD cycle=\d+ port=(\d+) vl=(\d+) dlid=(\d+)`).FindAllStringSubmatch(out, -1)
	require.Len(t, heads, 2, "A and C leave, B does not:\n%s", out)
	assert.Equal(t, []string{"0", "0", "1"}, heads[0][1:], "A first, on VL 0")
	assert.Equal(t, []string{"0", "1", "1"}, heads[1][1:], "C second, on VL 1")
	assert.Contains(t, out, "FREE end vl0=128 vl1=128")
}
