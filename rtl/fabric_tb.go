package rtl

import (
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/ib"
)

// DefaultTestbenchPackets is --testbench-packets' default: enough packets
// for every host of a small fabric to send several on every path class,
// few enough that Icarus runs a fat tree's testbench in seconds.
const DefaultTestbenchPackets = 400

// MaxTestbenchPackets bounds --testbench-packets: each packet is a line of
// the testbench and a few hundred simulated cycles per switch it crosses.
const MaxTestbenchPackets = 20000

// MaxTestbenchPorts bounds the fabric a testbench cables, in switch_top
// ports (switches × switch.radix): every switch is a switch_top instance
// with its VL buffers, allocator and crossbar, and Icarus's compile and
// its time per simulated cycle grow with them. Measured on the 2-core VM
// (Icarus 11): sl2vlFabric, 6 radix-4 switches (24 ports), about 10 s of
// CPU; examples/replay-halo.yaml, 8 radix-8 switches (64 ports), 36 s to
// compile and 61 s to run 400 packets; 128 ports, about 4 minutes.
const MaxTestbenchPorts = 128

// FabricTestbench is a self-checking testbench of a config's fabric: its
// switches as cabled switch_top instances, hosts (tb_host) injecting the
// packets the simulator's hosts sent, and, per switch port and source LID,
// the packets the simulator's port sent, in order, which the testbench
// compares as they leave.
type FabricTestbench struct {
	// Files are tb/fabric_tb.v and tb/run.sh, names relative to the tree's
	// directory.
	Files []File
	// Packets is the number of packets the hosts inject.
	Packets int
	// Sends is the number of packet heads the switches' ports must send
	// (each packet once per switch it crosses).
	Sends int
}

// TestbenchTop is the testbench module's name.
const TestbenchTop = "fabric_tb"

// fabricSend is one data packet a port put on its wire, in the model.
type fabricSend struct {
	path string // the port's path, e.g. "Fabric.Leaf[0].Port[3]"
	seq  int64
	vl   int64
}

// fabricPacket is a data packet as its host sent it: the LRH fields the
// testbench host writes.
type fabricPacket struct {
	vl, sl, dlid, slid, bytes int64
}

// txRecorder keeps every data packet's tx_start in the order the ports
// announced them, and each packet's fields at its first (the host's) send.
type txRecorder struct {
	mu   sync.Mutex
	txs  []fabricSend
	pkt  map[int64]fabricPacket
	vl15 int // data packets sent on VL 15 (management)
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
	r.txs = append(r.txs, fabricSend{ev.Path, seq, vl})
	if vl == ib.ManagementVL {
		r.vl15++
	}
	if _, seen := r.pkt[seq]; !seen {
		sl, _ := ev.Int("sl")
		dlid, _ := ev.Int("dlid")
		slid, _ := ev.Int("slid")
		bytes, _ := ev.Int("bytes")
		r.pkt[seq] = fabricPacket{vl, sl, dlid, slid, bytes}
	}
}

// checkTestbenchConfig refuses, naming the key, a config whose run the
// testbench cannot replay. Its errors are the user's.
func checkTestbenchConfig(c *fabric.Config) error {
	if c.Topology.Kind == "back-to-back" {
		return fmt.Errorf("topology.kind: back-to-back has no switch, and the testbench checks the switches' RTL (single-switch, fat-tree-2, fat-tree-3, dragonfly-plus or file)")
	}
	if c.Link.BER > 0 {
		return fmt.Errorf("link.ber: %g: the model's ports discard corrupted packets, which the testbench does not replay (its hosts send no VCRC and drive ib_link's rx_* past the receive check); give link.ber=0 for a testbench", c.Link.BER)
	}
	if c.Link.PreFECBER > 0 {
		return fmt.Errorf("link.pre_fec_ber: %g: the model's ports discard packets in failed FEC codewords, which the testbench does not replay (its hosts send no VCRC and drive ib_link's rx_* past the receive check); give link.pre_fec_ber=0 for a testbench", c.Link.PreFECBER)
	}
	return nil
}

// BuildFabricTestbench runs l's simulation (its own seed, serially, with a
// hook recording every data packet's tx_start), keeps the first maxPackets
// packets the hosts injected (by seq, the simulation's own packet
// numbering, so in injection order) and writes the testbench of d's RTL
// replaying them. version goes into the files' headers. Its errors are
// the user's (a config the testbench cannot replay), except a run that
// fails, which is reported as the run would report it.
func BuildFabricTestbench(l *fabric.Loaded, d Design, maxPackets int, version string) (FabricTestbench, error) {
	cfg := &l.Config
	if err := checkTestbenchConfig(cfg); err != nil {
		return FabricTestbench{}, err
	}
	topo, sub, err := fabric.ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return FabricTestbench{}, err
	}
	switches := topo.Switches()
	if len(switches) == 0 {
		return FabricTestbench{}, fmt.Errorf("topology.kind: %q: the fabric has no switch, and the testbench checks the switches' RTL", cfg.Topology.Kind)
	}
	if n := len(switches) * d.Radix; n > MaxTestbenchPorts {
		return FabricTestbench{}, fmt.Errorf("topology: %s of switch.radix %d are %d switch_top ports, more than the testbench's %d (Icarus's time grows with them: 64 take about 100 s of CPU); export a smaller fabric",
			plural(len(switches), "switch", "switches"), d.Radix, n, MaxTestbenchPorts)
	}
	for _, n := range switches {
		if p := topo.Nodes[n].Ports; p > d.Radix {
			return FabricTestbench{}, fmt.Errorf("switch.radix: %d is below the %d ports of %s, which a switch_top of that radix cannot cable", d.Radix, p, topo.Nodes[n].Name)
		}
	}
	for _, n := range topo.Hosts() {
		if topo.Nodes[n].Ports != 1 {
			return FabricTestbench{}, fmt.Errorf("topology: host %s has %d ports; the testbench's hosts have one", topo.Nodes[n].Name, topo.Nodes[n].Ports)
		}
	}

	// The run, serial: hooks of a partitioned run are called from several
	// threads, so the recorder's order would depend on scheduling; the
	// results do not depend on partitions (docs/performance.md).
	run := *l
	run.Config.Sim.Partitions = 1
	rec := &txRecorder{pkt: map[int64]fabricPacket{}}
	if _, err := fabric.Run(&run, fabric.RunOptions{Observe: func(s *fabric.Simulation) {
		for _, b := range s.Blocks {
			b.AcceptHook(rec)
		}
	}}); err != nil {
		return FabricTestbench{}, err
	}
	if rec.vl15 > 0 {
		return FabricTestbench{}, fmt.Errorf("workload: the run sent %d data packets on VL 15, which the RTL's receive buffers drop (management packets are not routed: docs/rtl.md)", rec.vl15)
	}
	return fabricTestbench(cfg, d, topo, sub, rec, maxPackets, version)
}

// tbHost is a host port in the fabric testbench: it sends its packets
// (pkt, by idx: {vl, sl, dlid, slid, pktlen, seq}) back to back as far as
// the switch's credits allow (FCCL from the switch's flow-control packets,
// DEPTH blocks before the first), one 64-byte block per cycle, with the
// model's packet seq as a tag in the first payload word (bytes 20..23,
// after LRH and BTH); it takes every block the switch sends and returns
// flow-control packets (FCTBS: blocks sent before this cycle's beat, FCCL:
// blocks received + its DEPTH-block buffer, consumed at once) every 4
// cycles, VLs in turn.
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

// testbenchTimeoutCycles: the testbench fails when no switch port has
// sent a packet head for this many cycles before every expected send was
// seen. A credit stall waits at most for the hosts' flow-control packets
// (every 4 cycles) or a switch's refresh (FC_REFRESH_CYCLES); a packet
// crosses a fabric of a few switches in well under a thousand cycles.
const testbenchTimeoutCycles = 20000

// vlarbBits packs the first n VL arbitration entries as switch_top's table
// ports take them: entry k = {weight[7:0], vl[3:0]} at bits [12k+11:12k]
// (a one-VL design's port has one entry: VLARB_ENTRIES).
func vlarbBits(entries []components.VLArbEntry, n int) string {
	v := new(big.Int)
	for k, e := range entries[:min(len(entries), n)] {
		x := big.NewInt(int64(e.Weight)<<4 | int64(e.VL&15))
		v.Or(v, x.Lsh(x, uint(12*k)))
	}
	return fmt.Sprintf("%d'h%x", 12*n, v)
}

// fabricTestbench writes the testbench: every switch of topo a switch_top
// with the SL2VL_SET of its name, switch-to-switch cables wired both ways
// (data, and flow-control packets, which wait for the end of a data packet
// on the wire: the sender charged FCTBS for all of a packet's blocks at its
// head), host cables to tb_host instances loaded with the packets the
// model's hosts sent, in order. Each switch's LFT_TOP is the subnet's
// highest LID (every LFT has MaxLID + 1 entries); once its tables have
// cleared, the subnet management agent's writes (one a cycle) give it the
// subnet manager's routes, as fabric gives the model's switches theirs: an
// entry for every LID the SM routes to an external port (IB ports 1-based,
// the RTL's 0-based), none for port 0 (the switch itself) or no route. The
// hosts are held in reset until every switch is programmed.
//
// The check: packets of one source reach a switch port through one input
// VL's FIFO at every switch, so their order there is fixed; packets of
// different sources interleave by timing, which the RTL (one block per
// cycle, no modelled link or stage latencies) does not share with the
// model. So each (switch port, source LID) has its expected list of
// (seq, VL), and every packet head a switch port sends must be the next
// entry of its list, with LRH.VL the VL it is sent on.
func fabricTestbench(cfg *fabric.Config, d Design, topo *fabric.Topology, sub *fabric.Subnet, rec *txRecorder,
	maxPackets int, version string) (FabricTestbench, error) {
	p := d.Params()
	setOf := map[string]int{}
	for k, s := range d.SL2VL {
		for _, n := range s.Switches {
			setOf[n] = k
		}
	}
	switches := topo.Switches()
	hosts := topo.Hosts()
	swIdx := map[int]int{} // node → testbench switch index
	for i, n := range switches {
		swIdx[n] = i
	}
	// Global port index i*radix + q for switch i's 0-based port q.
	radix := p.Ports
	portOf := map[string]int{}
	for i, n := range switches {
		for q := 0; q < topo.Nodes[n].Ports; q++ {
			// The model's switch ports are numbered from 0 (switchasic),
			// as the RTL's: IB port q+1.
			portOf[fmt.Sprintf("%s.Port[%d]", topo.Nodes[n].Name, q)] = i*radix + q
		}
	}
	hostOf := map[string]int{}
	for hi, n := range hosts {
		hostOf[topo.Nodes[n].Name+".Port[1]"] = hi
	}

	// The packets kept: the first maxPackets the hosts injected.
	var injected []int64
	for _, x := range rec.txs {
		if _, ok := hostOf[x.path]; ok {
			injected = append(injected, x.seq)
		}
	}
	slices.Sort(injected)
	if len(injected) == 0 {
		return FabricTestbench{}, fmt.Errorf("workload: the run's hosts sent no data packet, so the testbench would check nothing; give the workload more time or load")
	}
	if len(injected) > maxPackets {
		injected = injected[:maxPackets]
	}
	kept := map[int64]bool{}
	for _, s := range injected {
		kept[s] = true
	}
	hostPkts := make([][]int64, len(hosts))
	type stream struct {
		port int   // global port index
		slid int64 // source LID
		exp  []string
	}
	streams := map[[2]int64]*stream{}
	sends := 0
	for _, x := range rec.txs {
		if !kept[x.seq] {
			continue
		}
		if hi, ok := hostOf[x.path]; ok {
			hostPkts[hi] = append(hostPkts[hi], x.seq)
			continue
		}
		g, ok := portOf[x.path]
		if !ok {
			panic(fmt.Sprintf("rtl: fabric testbench: packet %d sent by %s, which is neither a host's port nor a switch's", x.seq, x.path))
		}
		slid := rec.pkt[x.seq].slid
		k := [2]int64{int64(g), slid}
		if streams[k] == nil {
			streams[k] = &stream{port: g, slid: slid}
		}
		streams[k].exp = append(streams[k].exp, fmt.Sprintf("36'h%01x%08x", x.vl, x.seq))
		sends++
	}
	keys := make([][2]int64, 0, len(streams))
	for k := range streams {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a][0] != keys[b][0] {
			return keys[a][0] < keys[b][0]
		}
		return keys[a][1] < keys[b][1]
	})
	maxLID := int(sub.MaxLID())

	high, low := cfg.Switch.VLArbTables()
	var b strings.Builder
	fmt.Fprintf(&b, "// Code generated by hcasim rtl --testbench from config %q (hcasim %s). DO NOT EDIT.\n", d.Name, version)
	fmt.Fprintf(&b, "// Regenerate: %s; edit the config, not this file.\n", regenerateCommand(d, maxPackets))
	fmt.Fprintf(&b, "// The config's fabric (%s, %s) as cabled switch_top instances; the hosts inject the\n",
		plural(len(switches), "switch", "switches"), plural(len(hosts), "host", "hosts"))
	fmt.Fprintf(&b, "// first %d packets the simulator's hosts sent (seed %d), and every packet head a switch port sends is\n", len(injected), cfg.Seed)
	b.WriteString("// checked against the simulator's, per (switch port, source LID): seq, VL and LRH.VL, in order.\n")
	b.WriteString("// Prints PASS or the first divergence (FAIL) or what is pending (TIMEOUT); run.sh runs it (docs/rtl.md).\n")
	b.WriteString("`timescale 1ns/1ps\n" + tbHost + "\nmodule " + TestbenchTop + ";\n")
	b.WriteString("    reg clk = 1'b0;\n    reg rst_n = 1'b0;\n    always #5 clk = ~clk;\n    integer cyc = 0;\n    always @(posedge clk) cyc <= cyc + 1;\n")
	fmt.Fprintf(&b, "    localparam [%d:0] HIGH = %s;\n    localparam [%d:0] LOW = %s;\n",
		12*p.VLArbEntries-1, vlarbBits(high, p.VLArbEntries), 12*p.VLArbEntries-1, vlarbBits(low, p.VLArbEntries))

	// Expected lists: exp[] holds every stream's entries {vl, seq}, stream
	// s from base[s] to last[s] (exclusive); next[s] is the entry due.
	nStreams := max(len(keys), 1)
	fmt.Fprintf(&b, "    localparam integer NSTREAMS = %d;\n    localparam integer NPORTS = %d;\n    localparam integer MAXLID = %d;\n",
		len(keys), len(switches)*radix, maxLID)
	fmt.Fprintf(&b, "    reg [35:0] exp [0:%d];\n    integer base [0:%d];\n    integer last [0:%d];\n    integer next [0:%d];\n"+
		"    integer sport [0:%d];\n    integer sslid [0:%d];\n",
		max(sends, 1)-1, nStreams-1, nStreams-1, nStreams-1, nStreams-1, nStreams-1)
	fmt.Fprintf(&b, "    integer sid [0:%d]; // (port * (MAXLID + 1) + SLID) → stream, -1: none\n", len(switches)*radix*(maxLID+1)-1)
	b.WriteString("    integer s, k;\n    initial begin\n")
	b.WriteString("        for (k = 0; k < NPORTS * (MAXLID + 1); k = k + 1) sid[k] = -1;\n")
	at := 0
	for si, k := range keys {
		st := streams[k]
		fmt.Fprintf(&b, "        // %s, source LID %d\n", portName(topo, switches, radix, st.port), st.slid)
		fmt.Fprintf(&b, "        sid[%d] = %d; base[%d] = %d; last[%d] = %d; next[%d] = %d; sport[%d] = %d; sslid[%d] = %d;\n",
			st.port*(maxLID+1)+int(st.slid), si, si, at, si, at+len(st.exp), si, at, si, st.port, si, st.slid)
		for _, e := range st.exp {
			fmt.Fprintf(&b, "        exp[%d] = %s;\n", at, e)
			at++
		}
	}
	b.WriteString("    end\n")
	// Port names for the messages.
	b.WriteString("    function [8*64-1:0] port_name(input integer g);\n        case (g)\n")
	for i, n := range switches {
		for q := 0; q < topo.Nodes[n].Ports; q++ {
			fmt.Fprintf(&b, "            %d: port_name = %q;\n", i*radix+q, portName(topo, switches, radix, i*radix+q))
		}
	}
	b.WriteString("            default: port_name = \"?\";\n        endcase\n    endfunction\n")
	// The check of one packet head.
	fmt.Fprintf(&b, `    integer checked = 0;
    integer last_send = 0;
    reg failed = 1'b0;
    // automatic: the ports' always blocks call it in the same time step.
    task automatic check(input integer g, input [3:0] vl, input [31:0] seq, input [3:0] lrh_vl, input [15:0] slid);
        integer st;
        begin
            st = slid <= MAXLID ? sid[g * (MAXLID + 1) + slid] : -1;
            if (failed) begin
                // The first divergence is reported; $fatal ends the run.
            end else if (st < 0) begin
                $display("FAIL: cycle %%0d: %%0s sent packet %%0d from source LID %%0d on VL %%0d; want no packet from that source there",
                         cyc, port_name(g), seq, slid, vl);
                failed = 1'b1;
                $fatal(1, "fabric testbench failed");
            end else if (next[st] >= last[st]) begin
                $display("FAIL: cycle %%0d: %%0s sent packet %%0d from source LID %%0d on VL %%0d; want no more from that source (all %%0d seen)",
                         cyc, port_name(g), seq, slid, vl, last[st] - base[st]);
                failed = 1'b1;
                $fatal(1, "fabric testbench failed");
            end else if (exp[next[st]] != {vl, seq} || lrh_vl != vl) begin
                $display("FAIL: cycle %%0d: %%0s source LID %%0d: got packet %%0d on VL %%0d (LRH.VL %%0d), want packet %%0d on VL %%0d",
                         cyc, port_name(g), slid, seq, vl, lrh_vl, exp[next[st]][31:0], exp[next[st]][35:32]);
                failed = 1'b1;
                $fatal(1, "fabric testbench failed");
            end else begin
                next[st] = next[st] + 1;
                checked = checked + 1;
                last_send = cyc;
            end
        end
    endtask
`)

	for i, n := range switches {
		name := topo.Nodes[n].Name
		fmt.Fprintf(&b, "    // %s\n    reg lft_we%d = 1'b0;\n    reg [15:0] lft_dlid%d = 16'd0;\n    reg [%d:0] lft_port%d = 0;\n"+
			"    wire lft_ready%d;\n    reg lft_done%d = 1'b0;\n", name, i, i, p.PortW-1, i, i, i)
		fmt.Fprintf(&b, "    switch_top #(.SL2VL_SET(%d), .LFT_TOP(%d)) sw%d (\n", setOf[name], maxLID, i)
		fmt.Fprintf(&b, "        .clk(clk), .rst_n(rst_n), .serdes_rx(%d'd0), .serdes_tx(), .link_up(),\n", radix*p.Lanes*p.LaneW)
		fmt.Fprintf(&b, "        .vlarb_high(HIGH), .vlarb_low(LOW), .vlarb_limit(8'd%d),\n", cfg.Switch.VLHighLimit)
		fmt.Fprintf(&b, "        .lft_we(lft_we%d), .lft_dlid(lft_dlid%d), .lft_valid(1'b1), .lft_port(lft_port%d), .lft_ready(lft_ready%d));\n",
			i, i, i, i)
		// The subnet manager's routes, written once the tables have cleared.
		fmt.Fprintf(&b, "    initial begin\n        @(posedge rst_n);\n        wait (lft_ready%d);\n", i)
		for lid, port := range sub.LFT(n) {
			if lid > 0 && port != fabric.NoPort && port > 0 {
				fmt.Fprintf(&b, "        @(negedge clk); lft_we%d = 1'b1; lft_dlid%d = 16'd%d; lft_port%d = %d'd%d;\n", i, i, lid, i, p.PortW, port-1)
			}
		}
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
			// LRH bytes 6..7 (SLID) and byte 0's VL; the tag at bytes 20..23.
			fmt.Fprintf(&b, "    always @(posedge clk)\n        if (%s.tx_valid && %s.tx_ready && %s.tx_sop)\n"+
				"            check(%d, %s.tx_vl, %s.tx_data[351 -: 32], %s.tx_data[511 -: 4], %s.tx_data[463 -: 16]);\n",
				g, g, g, i*radix+q, g, g, g, g)
		}
	}
	// Packets: {vl, sl, dlid, slid, pktlen, seq}; PktLen counts the 4-byte
	// words from LRH to ICRC, the wire adds the 2-byte VCRC.
	var pkts []string
	base := make([]int, len(hosts))
	for hi := range hosts {
		base[hi] = len(pkts)
		for _, seq := range hostPkts[hi] {
			f := rec.pkt[seq]
			pkts = append(pkts, fmt.Sprintf("88'h%01x%01x%04x%04x%04x%08x", f.vl, f.sl, f.dlid, f.slid, (f.bytes-2)/4, seq))
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
	for hi, n := range hosts {
		peer, ok := topo.Peer(fabric.PortRef{Node: n, Port: 1})
		if !ok || topo.Nodes[peer.Node].Kind != fabric.Switch {
			return FabricTestbench{}, fmt.Errorf("topology: host %s is not cabled to a switch; the testbench's hosts are", topo.Nodes[n].Name)
		}
		g := fmt.Sprintf("sw%d.g_port[%d]", swIdx[peer.Node], peer.Port-1)
		fmt.Fprintf(&b, "    // %s\n    wire [31:0] h%d_idx;\n    wire h%d_done;\n", topo.Nodes[n].Name, hi, hi)
		fmt.Fprintf(&b, "    tb_host #(.NPKT(%d), .DEPTH(%d), .VLS(%d)) h%d (\n", len(hostPkts[hi]), p.BufDepth, p.VLs, hi)
		fmt.Fprintf(&b, "        .clk(clk), .rst_n(hosts_rst_n), .idx(h%d_idx), .pkt(pkts[%d + h%d_idx]),\n", hi, base[hi], hi)
		b.WriteString("        .tx_valid(), .tx_sop(), .tx_eop(), .tx_vl(), .tx_data(), .fc_valid(), .fc_vl(), .fc_fctbs(), .fc_fccl(),\n")
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
		a := fmt.Sprintf("sw%d.g_port[%d]", swIdx[c.A.Node], c.A.Port-1)
		z := fmt.Sprintf("sw%d.g_port[%d]", swIdx[c.B.Node], c.B.Port-1)
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
	// The end: every host has sent and every expected send was seen (then
	// 200 quiet cycles, in which a send nobody expects still fails), or a
	// timeout.
	fmt.Fprintf(&b, `    wire all_sent = %s;
    localparam integer NPKTS = %d;
    localparam integer NSENDS = %d;
    localparam integer TIMEOUT = %d;
    integer pending, shown;
    initial begin
        @(negedge clk); @(negedge clk); rst_n = 1;
        wait (hosts_rst_n);
        last_send = cyc;
        while (!(all_sent && checked == NSENDS) && cyc - last_send < TIMEOUT) @(negedge clk);
        if (checked != NSENDS) begin
            pending = 0;
            for (s = 0; s < NSTREAMS; s = s + 1) if (next[s] < last[s]) pending = pending + 1;
            $display("TIMEOUT: cycle %%0d: no switch port sent a packet for %%0d cycles; %%0d of %%0d switch sends checked, %%0d (port, source) lists pending",
                     cyc, TIMEOUT, checked, NSENDS, pending);
            shown = 0;
            for (s = 0; s < NSTREAMS; s = s + 1)
                if (next[s] < last[s] && shown < 10) begin
                    $display("  pending: %%0s source LID %%0d: packet %%0d on VL %%0d next, %%0d left",
                             port_name(sport[s]), sslid[s], exp[next[s]][31:0], exp[next[s]][35:32], last[s] - next[s]);
                    shown = shown + 1;
                end
            $fatal(1, "fabric testbench failed");
        end
        repeat (200) @(negedge clk);
        $display("PASS: %%0d packets, %%0d switch sends checked", NPKTS, checked);
        $finish;
    end
endmodule
`, strings.Join(dones, " && "), len(pkts), sends, testbenchTimeoutCycles)

	return FabricTestbench{
		Files: []File{
			{Name: "tb/fabric_tb.v", Text: b.String()},
			{Name: "tb/run.sh", Text: runScript(d, version)},
		},
		Packets: len(pkts),
		Sends:   sends,
	}, nil
}

// regenerateCommand is the command that writes the testbench again.
func regenerateCommand(d Design, maxPackets int) string {
	var sets strings.Builder
	for _, o := range d.Overrides {
		sets.WriteString(" --set " + shellQuote(o))
	}
	return fmt.Sprintf("hcasim rtl -config <that config>%s -o <dir> --testbench --testbench-packets %d", sets.String(), maxPackets)
}

// portName names global testbench port g as the model's trace does (its
// switch ports count from 0), with the testbench instance and the IB port.
func portName(topo *fabric.Topology, switches []int, radix, g int) string {
	return fmt.Sprintf("%s.Port[%d] (sw%d.g_port[%d], IB port %d)", topo.Nodes[switches[g/radix]].Name, g%radix, g/radix, g%radix, g%radix+1)
}

// runScript is tb/run.sh: Icarus compiles the tree with the testbench
// (from the tree's directory, the script's parent) and runs it; the exit
// code is vvp's, 0 only after PASS.
func runScript(d Design, version string) string {
	return fmt.Sprintf(`#!/bin/sh
# Code generated by hcasim rtl --testbench from config %q (hcasim %s). DO NOT EDIT.
# Runs tb/fabric_tb.v on the tree it was emitted with: exit 0 and a PASS line, or the first
# divergence (FAIL) or the pending expectations (TIMEOUT) and exit 1. Needs Icarus Verilog.
set -eu
cd "$(dirname "$0")/.."
iverilog -g2005 -s %s -o tb/%s.vvp *.v tb/%s.v
vvp -n tb/%s.vvp
`, d.Name, version, TestbenchTop, TestbenchTop, TestbenchTop, TestbenchTop)
}

// plural is "1 switch" or "n switches".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
