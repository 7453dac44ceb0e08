package rtl

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/fabric"
)

// sl2vlTable is a 16-entry switch.sl2vl list with every SL on VL 0 except
// the given SL → VL entries.
func sl2vlTable(remap map[int]int) string {
	t := make([]string, 16)
	for sl := range t {
		t[sl] = strconv.Itoa(remap[sl])
	}
	return "[" + strings.Join(t, ", ") + "]"
}

// sl2vlFabric is the fabric of the SL-to-VL co-simulation: a two-level fat
// tree of radix-4 switches (4 leaves with 2 hosts each on IB ports 1-2 and
// up-ports 3-4 to 2 spines, host i with LID i+1 on leaf i/2), 2 VLs, FIFO
// input units (the RTL's), MTU 256 (largest packet 302 B, 5 blocks) and
// 1024-byte (16-block) VL buffers on switches and hosts. Every SL is on VL 0
// by switch.sl2vl; the pairs remap SL 1 (uniform traffic on SL 1) hop by
// hop:
//
//   - a host sends SL 1 on the default table's VL 0;
//   - a leaf forwards it up (host → up) on VL 1, to its other host on VL 0;
//   - Spine[0] keeps it on VL 1 going down (down → down); Spine[1] has no
//     entry and moves it back to VL 0;
//   - the last leaf forwards it to its host (up → host) on VL 0.
//
// So three programmings (leaves, Spine[0], Spine[1]), and packets change VL
// at a leaf and at Spine[1]: a switch that forwards on the arrival VL sends
// every packet on VL 0 out of the leaves' up-ports.
var sl2vlFabric = []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=2", "switch.queueing=fifo",
	"link.mtu=256", "switch.vl_buffer_bytes=1024", "hca.vl_buffer_bytes=1024",
	"switch.sl2vl=" + sl2vlTable(nil),
	"switch.sl2vl_pairs=[{in: host, out: up, sl2vl: " + sl2vlTable(map[int]int{1: 1}) + "}," +
		"{switches: 'Fabric.Spine[0]', in: down, out: down, sl2vl: " + sl2vlTable(map[int]int{1: 1}) + "}]",
	"workload.kind=uniform", "workload.sl=1", "workload.size=128", "workload.offered_load=0.3",
	"workload.warmup_ns=0", "workload.measure_ns=300", "sim.check=true"}

// TestSL2VLSetsFromConfig: the loader resolves the tables through the
// simulator's subnet manager. On sl2vlFabric the leaves have host → up
// pairs (0-based ports 0, 1 → 2, 3) with SL 1 on VL 1 and every other pair
// on the all-VL-0 default, which is the most common table (12 of 16 pairs);
// Spine[0]'s 16 pairs are all down → down, every one SL 1 → VL 1, so that
// is its default and it lists none; Spine[1] keeps the default everywhere.
func TestSL2VLSetsFromConfig(t *testing.T) {
	l, err := fabric.Load(nil, sl2vlFabric)
	require.NoError(t, err)
	d, err := designOf(&l.Config)
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	var zero, sl1 [16]uint8
	sl1[1] = 1
	var hostUp []SL2VLPair
	for _, in := range []int{0, 1} {
		for _, out := range []int{2, 3} {
			hostUp = append(hostUp, SL2VLPair{In: in, Out: out, Table: sl1})
		}
	}
	assert.Equal(t, []SL2VLSet{
		{Switches: []string{"Fabric.Leaf[0]", "Fabric.Leaf[1]", "Fabric.Leaf[2]", "Fabric.Leaf[3]"}, Default: zero, Pairs: hostUp},
		{Switches: []string{"Fabric.Spine[0]"}, Default: sl1},
		{Switches: []string{"Fabric.Spine[1]"}, Default: zero},
	}, d.SL2VL)
}

// tbHost is a host port in the co-simulation testbench: it sends its
// packets (pkt, by idx: {vl, sl, dlid, slid, pktlen, seq}) back to back as
// far as the switch's credits allow (FCCL from the switch's flow-control
// packets, 16 blocks before the first), one 64-byte block per cycle, with
// the model's packet seq as a tag in the first payload word (bytes 20..23,
// after LRH and BTH); it takes every block the switch sends and returns
// flow-control packets (FCTBS: blocks sent before this cycle's beat, FCCL:
// blocks received + its 16-block buffer, consumed at once) every 4 cycles,
// VLs in turn.
const tbHost = `
module tb_host #(parameter integer NPKT = 0, parameter integer DEPTH = 16, parameter integer VLS = 2) (
    input  wire         clk,
    input  wire         rst_n,
    output reg  [31:0]  idx,
    input  wire [87:0]  pkt,
    output reg          tx_valid,
    output reg          tx_sop,
    output reg          tx_eop,
    output reg  [3:0]   tx_vl,
    output reg  [511:0] tx_data,
    output reg          fc_valid,
    output reg  [3:0]   fc_vl,
    output reg  [11:0]  fc_fctbs,
    output reg  [11:0]  fc_fccl,
    input  wire         rx_valid,
    input  wire [3:0]   rx_vl,
    input  wire         fc_in_valid,
    input  wire [3:0]   fc_in_vl,
    input  wire [11:0]  fc_in_fccl,
    output wire         done
);
    reg [11:0] sent  [0:15];
    reg [11:0] limit [0:15];
    reg [11:0] recv  [0:15];
    reg [11:0] left;
    reg [3:0]  cur_vl, fcv;
    reg [1:0]  tick;
    integer v;
    wire [3:0]  pvl     = pkt[87:84];
    wire [11:0] pblocks = (pkt[43:32] + 12'd16) >> 4;
    wire [11:0] room    = limit[pvl] - (sent[pvl] + pblocks);
    wire        can     = idx < NPKT && left == 0 && room <= 12'd2048;
    assign done = idx >= NPKT && left == 0;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            idx <= 0; left <= 0; cur_vl <= 0; fcv <= 0; tick <= 0;
            tx_valid <= 0; tx_sop <= 0; tx_eop <= 0; tx_vl <= 0; tx_data <= 0;
            fc_valid <= 0; fc_vl <= 0; fc_fctbs <= 0; fc_fccl <= 0;
            for (v = 0; v < 16; v = v + 1) begin
                sent[v] = 0; limit[v] = DEPTH; recv[v] = 0;
            end
        end else begin
            tx_valid <= 1'b0;
            if (left != 0) begin
                tx_valid <= 1'b1; tx_sop <= 1'b0; tx_eop <= (left == 1); tx_data <= 0;
                left <= left - 1; sent[cur_vl] <= sent[cur_vl] + 1;
            end else if (can) begin
                tx_valid <= 1'b1; tx_sop <= 1'b1; tx_eop <= (pblocks == 1); tx_vl <= pvl; cur_vl <= pvl;
                // LRH {VL, LVer}, {SL, rsv, LNH}, DLID, {rsv, PktLen}, SLID;
                // BTH (12 bytes, zero here); the tag; the rest zero.
                tx_data <= {pvl, 4'd0, pkt[83:80], 4'd0, pkt[79:64], 5'd0, pkt[42:32], pkt[63:48],
                            96'd0, pkt[31:0], 320'd0};
                left <= pblocks - 1; sent[pvl] <= sent[pvl] + 1; idx <= idx + 1;
            end
            if (rx_valid) recv[rx_vl] <= recv[rx_vl] + 1;
            if (fc_in_valid) limit[fc_in_vl] <= fc_in_fccl;
            tick <= tick + 1;
            fc_valid <= tick == 0;
            if (tick == 0) begin
                fc_vl <= fcv; fc_fctbs <= sent[fcv]; fc_fccl <= recv[fcv] + DEPTH;
                fcv <= (fcv + 1 == VLS) ? 4'd0 : fcv + 1;
            end
        end
    end
endmodule
`

// simTx is one data packet a port put on its wire.
type simTx struct {
	path string // the port's path
	seq  int64
	vl   int64
}

// txRecorder keeps every data packet's tx_start in order.
type txRecorder struct {
	mu  sync.Mutex
	txs []simTx
	pkt map[int64][6]int64 // seq → vl, sl, dlid, slid, bytes, at the first (host) send
}

func (r *txRecorder) Func(ctx sim.HookCtx) {
	ev, ok := ctx.Item.(*components.TraceEvent)
	if !ok || ev.Kind != components.TraceTxStart {
		return
	}
	seq, isData := ev.Int("seq")
	if !isData {
		return
	}
	vl, _ := ev.Int("vl")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.txs = append(r.txs, simTx{ev.Path, seq, vl})
	if _, seen := r.pkt[seq]; !seen {
		sl, _ := ev.Int("sl")
		dlid, _ := ev.Int("dlid")
		slid, _ := ev.Int("slid")
		bytes, _ := ev.Int("bytes")
		r.pkt[seq] = [6]int64{vl, sl, dlid, slid, bytes}
	}
}

// portSends are, per port path and source LID, the packets (seq:vl) the
// port sent in order. Packets of one source reach a port through one
// input VL's FIFO at every switch, so their order is fixed; packets of
// different sources interleave by timing, which the RTL (one block per
// cycle, no modelled link or stage latencies) does not share with the
// model, so only each source's order is compared.
type portSends map[string]map[int64][]string

// TestSwitchSL2VLCosim runs sl2vlFabric in the simulator and the same
// design in the emitted RTL: six switch_top instances cabled as the fat
// tree, each with its own SL2VL_SET and its forwarding tables written,
// through its lft_* port, with the subnet manager's (fabric.Subnet.LFT, the
// tables the model's switches forward by), hosts that inject the packets
// the model's hosts sent, in the same order per host. Every
// switch port must send the same packets on the same VLs as the model's,
// in the same order per source; and the RTL with the table ignored (the
// input unit forwarding on the arrival VL, the old behaviour) must not.
func TestSwitchSL2VLCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	l, err := fabric.Load(nil, sl2vlFabric)
	require.NoError(t, err)
	rec := &txRecorder{pkt: map[int64][6]int64{}}
	m, err := fabric.Run(l, fabric.RunOptions{Observe: func(s *fabric.Simulation) {
		for _, b := range s.Blocks {
			b.AcceptHook(rec)
		}
	}})
	require.NoError(t, err)
	require.EqualValues(t, 0, m["packets_dropped"])

	d, err := designOf(&l.Config)
	require.NoError(t, err)
	topo, sub, err := fabric.ConfigureFabric(&l.Config, l.Config.Seed)
	require.NoError(t, err)
	tb, hostPaths, switchNames := sl2vlTestbench(t, &l.Config, d, topo, sub, rec)

	// The model's sends, per switch port and source.
	want := portSends{}
	sent := 0
	for _, x := range rec.txs {
		if slices.Contains(hostPaths, x.path) {
			sent++
			continue
		}
		src := rec.pkt[x.seq][3]
		if want[x.path] == nil {
			want[x.path] = map[int64][]string{}
		}
		want[x.path][src] = append(want[x.path][src], fmt.Sprintf("%d:%d", x.seq, x.vl))
	}
	// First principles: every packet is sent by its host once, and leaves
	// a switch port once per switch it crosses (2 within a leaf, 4 across
	// the spines); the run must carry traffic both ways and on both VLs.
	hops, vl1 := 0, 0
	for _, srcs := range want {
		for _, l := range srcs {
			hops += len(l)
			for _, s := range l {
				if strings.HasSuffix(s, ":1") {
					vl1++
				}
			}
		}
	}
	require.Greater(t, sent, 40, "enough packets to compare")
	require.Greater(t, vl1, 20, "enough packets remapped to VL 1")

	emitted, err := Emit(d, testVersion)
	require.NoError(t, err)
	mutant := slices.Clone(emitted)
	for i, f := range mutant {
		if f.Name == "sw_input_unit.v" {
			// The table ignored: the request, the crossbar beats and the
			// LRH on the VL the packet arrived on.
			text := f.Text
			for _, r := range [][2]string{
				{"assign req_vl[v*VL_W +: VL_W] = cur_ovl[v*4 +: VL_W];", "assign req_vl[v*VL_W +: VL_W] = VLIX;"},
				{"assign xb_vl    = g_ovl[VL_W-1:0];", "assign xb_vl    = grant_vl;"},
				{"assign xb_data  = g_sop ? {g_ovl, g_entry[DATA_W-5:0]} : g_entry[DATA_W-1:0];", "assign xb_data  = g_entry[DATA_W-1:0];"},
			} {
				next := strings.Replace(text, r[0], r[1], 1)
				require.NotEqual(t, text, next, "the mutation %q applies", r[0])
				text = next
			}
			mutant[i].Text = text
		}
	}
	run := func(t *testing.T, files []File) (portSends, string) {
		out := runIcarus(t, append(files, File{Name: "sl2vl_tb.v", Text: tb}), "sl2vl_tb")
		got := portSends{}
		re := regexp.MustCompile(`(?m)^TX (\d+) (\d+) (\d+) (\d+) (\d+)$`)
		for _, mm := range re.FindAllStringSubmatch(out, -1) {
			n := func(i int) int64 { v, _ := strconv.ParseInt(mm[i], 10, 64); return v }
			path := fmt.Sprintf("%s.Port[%d]", switchNames[n(1)], n(2))
			seq := n(4)
			assert.Equal(t, n(3), n(5), "%s: LRH.VL of packet %d is not the VL it is sent on", path, seq)
			if got[path] == nil {
				got[path] = map[int64][]string{}
			}
			src := rec.pkt[seq][3]
			got[path][src] = append(got[path][src], fmt.Sprintf("%d:%d", seq, n(3)))
		}
		return got, out
	}
	t.Run("rtl", func(t *testing.T) {
		t.Parallel()
		got, out := run(t, emitted)
		require.Contains(t, out, fmt.Sprintf("DONE sent=%d received=%d", sent, sent), "every packet delivered")
		n := 0
		for _, srcs := range got {
			for _, l := range srcs {
				n += len(l)
			}
		}
		assert.Equal(t, hops, n, "switch sends")
		assert.Equal(t, want, got, "per switch port and source: packets in order, with the VL each left on (seq:vl)")
	})
	t.Run("table ignored", func(t *testing.T) {
		t.Parallel()
		got, out := run(t, mutant)
		require.Contains(t, out, fmt.Sprintf("DONE sent=%d received=%d", sent, sent), "every packet delivered")
		// The same packets take the same ports in the same order; only
		// their VLs differ from the model's.
		seqs := func(ps portSends) map[string]map[int64][]string {
			out := map[string]map[int64][]string{}
			for path, srcs := range ps {
				out[path] = map[int64][]string{}
				for src, l := range srcs {
					for _, s := range l {
						seq, _, _ := strings.Cut(s, ":")
						out[path][src] = append(out[path][src], seq)
					}
				}
			}
			return out
		}
		assert.Equal(t, seqs(want), seqs(got), "packets per switch port and source, VLs aside")
		assert.NotEqual(t, want, got, "a switch forwarding on the arrival VL matches the model's VLs")
	})
}

// vlarbBits packs VL arbitration entries as switch_top's table ports take
// them: entry k = {weight[7:0], vl[3:0]} at bits [12k+11:12k].
func vlarbBits(entries []components.VLArbEntry, n int) string {
	v := new(big.Int)
	for k, e := range entries {
		x := big.NewInt(int64(e.Weight)<<4 | int64(e.VL&15))
		v.Or(v, x.Lsh(x, uint(12*k)))
	}
	return fmt.Sprintf("%d'h%x", 12*n, v)
}

// sl2vlTestbench writes the testbench of TestSwitchSL2VLCosim: every
// switch of topo a switch_top with the SL2VL_SET of its name, switch-to-
// switch cables wired both ways (data, and flow-control packets, which
// wait for the end of a data packet on the wire: the sender charged FCTBS
// for all of a packet's blocks at its head), host cables to tb_host
// instances loaded with the packets the model's hosts sent, in order.
// Each switch's LFT_TOP is the subnet's highest LID (every LFT has
// MaxLID + 1 entries); once its tables have cleared, the subnet
// management agent's writes (one a cycle) give it the subnet manager's
// routes, as fabric gives the model's switches theirs: an entry for every
// LID the SM routes to an external port (IB ports 1-based, the RTL's
// 0-based), none for port 0 (the switch itself) or no route. The hosts
// are held in reset until every switch is programmed. It
// prints "TX switch port vl seq lrh_vl" for every packet head a switch port
// sends, and "DONE sent=N received=M" when the hosts have sent all and
// nothing more arrives. It returns the testbench, the host ports' paths and
// the switch names by testbench index.
func sl2vlTestbench(t *testing.T, cfg *fabric.Config, d Design, topo *fabric.Topology, sub *fabric.Subnet, rec *txRecorder) (string, []string, []string) {
	p := d.Params()
	setOf := map[string]int{}
	for k, s := range d.SL2VL {
		for _, n := range s.Switches {
			setOf[n] = k
		}
	}
	switches := topo.Switches()
	idx := map[int]int{} // node → testbench switch index
	var names []string
	for i, n := range switches {
		idx[n] = i
		names = append(names, topo.Nodes[n].Name)
	}
	// Each host's packets, in the order it sent them.
	hostPkts := map[string][]int64{}
	var hostPaths []string
	for _, n := range topo.Hosts() {
		hostPaths = append(hostPaths, topo.Nodes[n].Name+".Port[1]")
	}
	for _, x := range rec.txs {
		if slices.Contains(hostPaths, x.path) {
			hostPkts[x.path] = append(hostPkts[x.path], x.seq)
		}
	}
	high, low := cfg.Switch.VLArbTables()
	var b strings.Builder
	b.WriteString("`timescale 1ns/1ps\n" + tbHost + "\nmodule sl2vl_tb;\n")
	b.WriteString("    reg clk = 1'b0;\n    reg rst_n = 1'b0;\n    always #5 clk = ~clk;\n")
	fmt.Fprintf(&b, "    localparam [%d:0] HIGH = %s;\n    localparam [%d:0] LOW = %s;\n",
		12*p.VLArbEntries-1, vlarbBits(high, p.VLArbEntries), 12*p.VLArbEntries-1, vlarbBits(low, p.VLArbEntries))
	radix := p.Ports
	for i, n := range switches {
		name := topo.Nodes[n].Name
		fmt.Fprintf(&b, "    // %s\n    reg lft_we%d = 1'b0;\n    reg [15:0] lft_dlid%d = 16'd0;\n    reg [%d:0] lft_port%d = 0;\n"+
			"    wire lft_ready%d;\n    reg lft_done%d = 1'b0;\n", name, i, i, p.PortW-1, i, i, i)
		fmt.Fprintf(&b, "    switch_top #(.SL2VL_SET(%d), .LFT_TOP(%d)) sw%d (\n", setOf[name], sub.MaxLID(), i)
		fmt.Fprintf(&b, "        .clk(clk), .rst_n(rst_n), .serdes_rx(%d'd0), .serdes_tx(), .link_up(),\n", radix*p.Lanes*p.LaneW)
		fmt.Fprintf(&b, "        .vlarb_high(HIGH), .vlarb_low(LOW), .vlarb_limit(8'd%d),\n", cfg.Switch.VLHighLimit)
		fmt.Fprintf(&b, "        .lft_we(lft_we%d), .lft_dlid(lft_dlid%d), .lft_valid(1'b1), .lft_port(lft_port%d), .lft_ready(lft_ready%d));\n",
			i, i, i, i)
		// The subnet manager's routes, written once the tables have cleared.
		fmt.Fprintf(&b, "    initial begin\n        @(posedge rst_n);\n        wait (lft_ready%d);\n", i)
		writes := 0
		for lid, port := range sub.LFT(n) {
			if lid > 0 && port != fabric.NoPort && port > 0 {
				fmt.Fprintf(&b, "        @(negedge clk); lft_we%d = 1'b1; lft_dlid%d = 16'd%d; lft_port%d = %d'd%d;\n", i, i, lid, i, p.PortW, port-1)
				writes++
			}
		}
		require.Positive(t, writes, "%s: the subnet manager routes something", name)
		fmt.Fprintf(&b, "        @(negedge clk); lft_we%d = 1'b0; lft_done%d = 1'b1;\n    end\n", i, i)
		for q := 0; q < radix; q++ {
			g := fmt.Sprintf("sw%d.g_port[%d]", i, q)
			fmt.Fprintf(&b, "    reg mid%d_%d;\n", i, q)
			fmt.Fprintf(&b, "    always @(posedge clk or negedge rst_n)\n        if (!rst_n) mid%d_%d <= 1'b0;\n"+
				"        else if (%s.tx_valid && %s.tx_ready) mid%d_%d <= !%s.tx_eop;\n", i, q, g, g, i, q, g)
			// Forces take nets: Icarus evaluates a force's right-hand
			// side once when it is an expression.
			fmt.Fprintf(&b, "    wire fc_ready%d_%d = !mid%d_%d;\n", i, q, i, q)
			fmt.Fprintf(&b, "    initial begin\n        force %s.u_link.tx_ready = 1'b1;\n        force %s.u_link.fc_tx_ready = fc_ready%d_%d;\n    end\n",
				g, g, i, q)
			fmt.Fprintf(&b, "    always @(posedge clk)\n        if (%s.tx_valid && %s.tx_ready && %s.tx_sop)\n"+
				"            $display(\"TX %d %d %%0d %%0d %%0d\", %s.tx_vl, %s.tx_data[351 -: 32], %s.tx_data[511 -: 4]);\n",
				g, g, g, i, q, g, g, g)
		}
	}
	// Packets: {vl, sl, dlid, slid, pktlen, seq}; PktLen counts the 4-byte
	// words from LRH to ICRC, the wire adds the 2-byte VCRC.
	var pkts []string
	base := map[string]int{}
	for _, h := range hostPaths {
		base[h] = len(pkts)
		for _, seq := range hostPkts[h] {
			f := rec.pkt[seq]
			pkts = append(pkts, fmt.Sprintf("88'h%01x%01x%04x%04x%04x%08x", f[0], f[1], f[2], f[3], (f[4]-2)/4, seq))
		}
	}
	fmt.Fprintf(&b, "    reg [87:0] pkts [0:%d];\n    initial begin\n", max(len(pkts), 1)-1)
	for k, x := range pkts {
		fmt.Fprintf(&b, "        pkts[%d] = %s;\n", k, x)
	}
	b.WriteString("    end\n")
	// The hosts start when every switch has its routes.
	var programmed []string
	for i := range switches {
		programmed = append(programmed, fmt.Sprintf("lft_done%d", i))
	}
	fmt.Fprintf(&b, "    wire hosts_rst_n = rst_n && %s;\n", strings.Join(programmed, " && "))
	var dones []string
	for hi, n := range topo.Hosts() {
		h := hostPaths[hi]
		peer, ok := topo.Peer(fabric.PortRef{Node: n, Port: 1})
		require.True(t, ok, h)
		g := fmt.Sprintf("sw%d.g_port[%d]", idx[peer.Node], peer.Port-1)
		fmt.Fprintf(&b, "    wire [31:0] h%d_idx;\n    wire h%d_done;\n", hi, hi)
		fmt.Fprintf(&b, "    tb_host #(.NPKT(%d), .DEPTH(%d), .VLS(%d)) h%d (\n", len(hostPkts[h]), p.BufDepth, p.VLs, hi)
		fmt.Fprintf(&b, "        .clk(clk), .rst_n(hosts_rst_n), .idx(h%d_idx), .pkt(pkts[%d + h%d_idx]),\n", hi, base[h], hi)
		fmt.Fprintf(&b, "        .tx_valid(), .tx_sop(), .tx_eop(), .tx_vl(), .tx_data(), .fc_valid(), .fc_vl(), .fc_fctbs(), .fc_fccl(),\n")
		fmt.Fprintf(&b, "        .rx_valid(%s.tx_valid), .rx_vl(%s.tx_vl), .fc_in_valid(%s.fc_tx_valid), .fc_in_vl(%s.fc_tx_vl),\n", g, g, g, g)
		fmt.Fprintf(&b, "        .fc_in_fccl(%s.fc_tx_fccl), .done(h%d_done));\n", g, hi)
		b.WriteString("    initial begin\n")
		for _, sig := range [][2]string{{"rx_valid", "tx_valid"}, {"rx_sop", "tx_sop"}, {"rx_eop", "tx_eop"}, {"rx_vl", "tx_vl"},
			{"rx_data", "tx_data"}, {"fc_rx_valid", "fc_valid"}, {"fc_rx_vl", "fc_vl"}, {"fc_rx_fctbs", "fc_fctbs"}, {"fc_rx_fccl", "fc_fccl"}} {
			fmt.Fprintf(&b, "        force %s.u_link.%s = h%d.%s;\n", g, sig[0], hi, sig[1])
		}
		b.WriteString("    end\n")
		dones = append(dones, fmt.Sprintf("h%d_done", hi))
	}
	for _, c := range topo.Cables {
		if topo.Nodes[c.A.Node].Kind != fabric.Switch || topo.Nodes[c.B.Node].Kind != fabric.Switch {
			continue
		}
		a := fmt.Sprintf("sw%d.g_port[%d]", idx[c.A.Node], c.A.Port-1)
		z := fmt.Sprintf("sw%d.g_port[%d]", idx[c.B.Node], c.B.Port-1)
		b.WriteString("    initial begin\n")
		for _, ends := range [][2]string{{a, z}, {z, a}} {
			for _, sig := range [][2]string{{"rx_valid", "tx_valid"}, {"rx_sop", "tx_sop"}, {"rx_eop", "tx_eop"}, {"rx_vl", "tx_vl"},
				{"rx_data", "tx_data"}, {"fc_rx_valid", "fc_tx_valid"}, {"fc_rx_vl", "fc_tx_vl"}, {"fc_rx_fctbs", "fc_tx_fctbs"},
				{"fc_rx_fccl", "fc_tx_fccl"}} {
				fmt.Fprintf(&b, "        force %s.u_link.%s = %s.%s;\n", ends[1], sig[0], ends[0], sig[1])
			}
		}
		b.WriteString("    end\n")
	}
	// Received: data blocks hosts took (eops count packets).
	fmt.Fprintf(&b, "    integer received, quiet, cyc;\n    wire all_done = %s;\n", strings.Join(dones, " && "))
	b.WriteString("    always @(posedge clk) begin\n")
	for hi, n := range topo.Hosts() {
		peer, _ := topo.Peer(fabric.PortRef{Node: n, Port: 1})
		g := fmt.Sprintf("sw%d.g_port[%d]", idx[peer.Node], peer.Port-1)
		fmt.Fprintf(&b, "        if (%s.tx_valid && %s.tx_eop) received = received + 1; // host %d\n", g, g, hi)
	}
	b.WriteString("    end\n")
	fmt.Fprintf(&b, `    initial begin
        received = 0; quiet = 0;
        @(negedge clk); @(negedge clk); rst_n = 1;
        for (cyc = 0; cyc < 200000 && quiet < 200; cyc = cyc + 1) begin
            @(negedge clk);
            if (all_done && received == %d) quiet = quiet + 1;
        end
        $display("DONE sent=%d received=%%0d", received);
        $finish;
    end
endmodule
`, len(pkts), len(pkts))
	return b.String(), hostPaths, names
}

// TestSL2VLValidate: a table VL must be a data VL of the design or 15
// (drop), and a pair's ports within the radix; the error names the key.
func TestSL2VLValidate(t *testing.T) {
	base := Design{Name: "v", Radix: 4, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	var vl2 [16]uint8
	vl2[3] = 2
	d := base
	d.SL2VL = []SL2VLSet{{Default: vl2}}
	assert.EqualError(t, d.Validate(), "switch.sl2vl: SL 3 maps to VL 2, which is neither a data VL of switch.vls 2 (0 to 1) nor 15 (drop)")
	d.SL2VL = []SL2VLSet{{Pairs: []SL2VLPair{{In: 0, Out: 4}}}}
	assert.EqualError(t, d.Validate(), "switch.sl2vl_pairs: port pair (1, 5) is outside switch.radix 4 (ports 1 to 4)")
	var drop [16]uint8
	drop[1] = 15
	d.SL2VL = []SL2VLSet{{Pairs: []SL2VLPair{{In: 0, Out: 3, Table: drop}}}}
	assert.NoError(t, d.Validate(), "VL 15 drops, which the RTL builds")
}
