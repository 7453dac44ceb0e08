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

// switchVLArbTB is a testbench for an emitted radix-3, 2-VL switch_top: the
// (TODO) links of ports 1 and 2 deliver %[1]d packets each, back to back,
// port 1 all SL0 on VL0 and port 2 all SL1 on VL1, every packet 2 blocks (PktLen 20
// words: (4*20 + 2) B = 82 B), all for DLID 1, which the testbench routes
// to port 0 (whose link always accepts) through the forwarding-table write
// port before the packets come. It prints the VL of each packet port 0
// starts, in order.
const switchVLArbTB = "`timescale 1ns/1ps\n" + `
module vlarb_tb;
    localparam integer DATA_W = 512;
    localparam integer NPKT = %[1]d;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [3*4*64-1:0] serdes_tx;
    wire [2:0] link_up;
    reg [64*12-1:0] high, low;
    reg        lft_we = 1'b0;
    wire       lft_ready;
    switch_top #(.LFT_TOP(1)) dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(3*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(high), .vlarb_low(low), .vlarb_limit(8'd%[2]d),
        .lft_we(lft_we), .lft_dlid(16'd1), .lft_valid(1'b1), .lft_port(2'd0), .lft_ready(lft_ready)
    );
    reg valid, sop, eop;
    reg [DATA_W-1:0] data, data1;
    initial begin
        force dut.g_port[1].u_link.rx_valid = valid;
        force dut.g_port[1].u_link.rx_sop = sop;
        force dut.g_port[1].u_link.rx_eop = eop;
        force dut.g_port[1].u_link.rx_data = data;
        force dut.g_port[1].u_link.rx_vl = 4'd0;
        force dut.g_port[2].u_link.rx_valid = valid;
        force dut.g_port[2].u_link.rx_sop = sop;
        force dut.g_port[2].u_link.rx_eop = eop;
        force dut.g_port[2].u_link.rx_data = data1;
        force dut.g_port[2].u_link.rx_vl = 4'd1;
        force dut.g_port[0].u_link.tx_ready = 1'b1;
        force dut.g_port[0].u_link.fc_tx_ready = 1'b1;
    end
    integer pk, b;
    always @(posedge clk) begin
        if (dut.g_port[0].tx_valid && dut.g_port[0].tx_ready && dut.g_port[0].tx_sop)
            $display("VLARB sop vl=%%0d", dut.g_port[0].tx_vl);
    end
    initial begin
        high = 0; low = 0;
%[3]s
        valid = 0; sop = 0; eop = 0;
        data = 0; data[DATA_W-38 -: 11] = 11'd20; data[DATA_W-17 -: 16] = 16'd1;
        // Port 2's packets: LRH.VL 1 and LRH.SL 1, which the default table
        // (SL i -> VL i & 1) keeps on VL 1; port 1's are SL 0 on VL 0.
        data1 = data; data1[DATA_W-1 -: 4] = 4'd1; data1[DATA_W-9 -: 4] = 4'd1;
        @(negedge clk); @(negedge clk); rst_n = 1;
        wait (lft_ready);
        @(negedge clk); lft_we = 1;
        @(negedge clk); lft_we = 0;
        for (pk = 0; pk < NPKT; pk = pk + 1) begin
            for (b = 0; b < 2; b = b + 1) begin
                @(negedge clk);
                valid = 1; sop = (b == 0); eop = (b == 1);
            end
        end
        @(negedge clk); valid = 0;
        repeat (8 * NPKT + 40) @(negedge clk);
        $display("VLARB done");
        $finish;
    end
endmodule
`

// TestSwitchVLArbitration checks the emitted switch's output VL arbitration
// against the Go model on one table of cases. Two inputs keep a backlog on
// VL0 and VL1 towards one output, so every arbitration sees both VLs ready
// until one runs dry; the model (components.VLArbiter, picked and charged
// 2 blocks per packet, as the switch model charges at its grant) gives the
// order in which the output must start them.
//
// The sw_xbar_alloc grant is registered, so the packet's head reaches the
// output one cycle after the VL arbiter picked it, when the granted input no
// longer waits. The RTL used to charge the arbiter with its pick of that
// later cycle (the other VL), so weights were charged to the wrong table
// entry: the low table {VL0 w4, VL1 w4} alternated 0,1,0,1 instead of
// giving each entry its two packets.
func TestSwitchVLArbitration(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const npkt = 4 // per input; 2 blocks each
	type entry = components.VLArbEntry
	tests := []struct {
		name      string
		high, low []entry
		limit     uint8
		want      string // from first principles, as a check on the model
	}{
		// Each entry's 4 blocks are two 2-block packets, then the walk
		// moves on: 0,0,1,1 twice.
		{"low weights", nil, []entry{{VL: 0, Weight: 4}, {VL: 1, Weight: 4}}, 0, "0 0 1 1 0 0 1 1"},
		// Limit 0: one high packet, then a low one, which restarts the
		// count; once VL1 (high) runs dry, VL0 drains.
		{"high limit 0", []entry{{VL: 1, Weight: 2}}, []entry{{VL: 0, Weight: 8}}, 0, "1 0 1 0 1 0 1 0"},
		// Limit 255 is unbounded: the high table's VL0 drains first.
		{"high unbounded", []entry{{VL: 0, Weight: 2}}, []entry{{VL: 1, Weight: 2}}, components.HighLimitUnbounded, "0 0 0 0 1 1 1 1"},
		// Weights 6 and 2 blocks: VL0 three packets per turn, VL1 one.
		{"uneven low weights", nil, []entry{{VL: 0, Weight: 6}, {VL: 1, Weight: 2}}, 0, "0 0 0 1 0 1 1 1"},
	}
	d := Design{Name: "vlarb", Radix: 3, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The Go model's order: ready holds the VLs with packets left.
			arb := components.NewVLArbiter(tc.high, tc.low, tc.limit)
			left := [2]int{npkt, npkt}
			var model []string
			for left[0]+left[1] > 0 {
				var ready uint16
				for v, n := range left {
					if n > 0 {
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

			var init strings.Builder
			for k, e := range tc.high {
				fmt.Fprintf(&init, "        high[%d +: 12] = {8'd%d, 4'd%d};\n", 12*k, e.Weight, e.VL)
			}
			for k, e := range tc.low {
				fmt.Fprintf(&init, "        low[%d +: 12] = {8'd%d, 4'd%d};\n", 12*k, e.Weight, e.VL)
			}
			tb := File{Name: "vlarb_tb.v", Text: fmt.Sprintf(switchVLArbTB, npkt, tc.limit, init.String())}
			out := runIcarus(t, append(slices.Clip(files), tb), "vlarb_tb")
			require.Contains(t, out, "VLARB done")
			var got []string
			for _, m := range regexp.MustCompile(`VLARB sop vl=(\d+)`).FindAllStringSubmatch(out, -1) {
				got = append(got, m[1])
			}
			require.Len(t, got, 2*npkt, "packets out of port 0:\n%s", out)
			assert.Equal(t, tc.want, strings.Join(got, " "), "VL order out of port 0")
		})
	}
}
