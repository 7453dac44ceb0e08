package rtl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// sl2vlSingleSwitch is a single radix-4 switch with 4 hosts and 2 VLs:
// uniform traffic on SL 1, sent on VL 0 (switch.sl2vl all VL 0), which the
// switch moves to VL 1 for the packets arriving on ports 1 and 2, so its
// outputs carry both VLs.
var sl2vlSingleSwitch = []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=4", "switch.vls=2",
	"switch.queueing=fifo", "link.mtu=256", "switch.vl_buffer_bytes=1024", "hca.vl_buffer_bytes=1024",
	"switch.sl2vl=" + sl2vlTable(nil),
	"switch.sl2vl_pairs=[{in: '1,2', out: any, sl2vl: " + sl2vlTable(map[int]int{1: 1}) + "}]",
	"workload.kind=uniform", "workload.sl=1", "workload.size=128", "workload.offered_load=0.4",
	"workload.warmup_ns=0", "workload.measure_ns=400"}

// fabricTB builds the fabric testbench of a config given as --set lines.
func fabricTB(t *testing.T, sets []string, packets int) ([]File, FabricTestbench) {
	t.Helper()
	l, err := fabric.Load(nil, sets)
	require.NoError(t, err)
	d, err := designOf(&l.Config)
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	tb, err := BuildFabricTestbench(l, d, packets, testVersion)
	require.NoError(t, err)
	tree, err := Emit(d, testVersion)
	require.NoError(t, err)
	return tree, tb
}

// runFabricTB runs the testbench on tree under Icarus, as tb/run.sh does,
// and returns vvp's output and whether it exited 0.
func runFabricTB(t *testing.T, tree []File, tb FabricTestbench) (string, bool) {
	t.Helper()
	needTool(t, "iverilog", "vvp")
	dir := t.TempDir()
	require.NoError(t, WriteTree(dir, tree))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "tb"), 0o755))
	require.NoError(t, WriteTree(dir, tb.Files))
	ctx := context.Background()
	_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-s", TestbenchTop, "-o", "tb.vvp", "tb/fabric_tb.v"}, FileNames(tree)...)...)
	require.NoError(t, err)
	out, err := runTool(ctx, dir, "vvp", "-n", "tb.vvp")
	return out, err == nil
}

// expectedVLs counts the testbench's expected switch sends per VL (its
// exp[] entries, 36'h{vl}{seq}).
func expectedVLs(t *testing.T, tb FabricTestbench) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, m := range regexp.MustCompile(`exp\[\d+\] = 36'h([0-9a-f])[0-9a-f]{8};`).FindAllStringSubmatch(tb.Files[0].Text, -1) {
		n[m[1]]++
	}
	return n
}

// TestSwitchSL2VLCosim runs sl2vlFabric in the simulator and the same
// design in the emitted RTL through the production testbench (hcasim rtl
// --testbench, BuildFabricTestbench): six switch_top instances cabled as
// the fat tree, each with its own SL2VL_SET and the subnet manager's
// forwarding tables, hosts that inject the packets the model's hosts sent.
// The testbench checks in Verilog that every switch port sends the model's
// packets on the model's VLs, in the same order per source, with LRH.VL
// the VL sent on, and prints PASS; the RTL with the table ignored (the
// input unit forwarding on the arrival VL, the old behaviour) must fail it
// at a switch port with the packet the model sent there on another VL.
// A single switch with 2 VLs (sl2vlSingleSwitch) must pass too.
func TestSwitchSL2VLCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	emitted, tb := fabricTB(t, sl2vlFabric, DefaultTestbenchPackets)
	// First principles: enough packets, each leaving 2 switch ports (within
	// a leaf) or 4 (across the spines); both VLs carry many.
	require.Greater(t, tb.Packets, 100, "enough packets to compare")
	require.GreaterOrEqual(t, tb.Sends, 2*tb.Packets)
	require.LessOrEqual(t, tb.Sends, 4*tb.Packets)
	vls := expectedVLs(t, tb)
	require.Equal(t, tb.Sends, vls["0"]+vls["1"])
	require.Greater(t, vls["1"], 50, "enough packets remapped to VL 1")
	require.Greater(t, vls["0"], 50, "enough packets on VL 0")

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
	t.Run("rtl", func(t *testing.T) {
		t.Parallel()
		out, ok := runFabricTB(t, emitted, tb)
		assert.True(t, ok, out)
		assert.Contains(t, out, fmt.Sprintf("PASS: %d packets, %d switch sends checked\n", tb.Packets, tb.Sends))
	})
	t.Run("table ignored", func(t *testing.T) {
		t.Parallel()
		out, ok := runFabricTB(t, mutant, tb)
		assert.False(t, ok, "vvp exits 1")
		assert.NotContains(t, out, "PASS")
		// The first divergence: the packet the model sent at that port,
		// on another VL.
		m := regexp.MustCompile(`(?m)^FAIL: cycle \d+: (Fabric\.\w+\[\d+\]\.Port\[\d+\] \(sw\d+\.g_port\[\d+\], IB port \d+\)) source LID \d+: got packet (\d+) on VL (\d) \(LRH.VL (\d)\), want packet (\d+) on VL (\d)$`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		t.Log(m[0])
		assert.Equal(t, m[2], m[5], "the same packet")
		assert.NotEqual(t, m[3], m[6], "on another VL")
		assert.Equal(t, 1, strings.Count(out, "FAIL"), "one line")
	})
	t.Run("single switch", func(t *testing.T) {
		t.Parallel()
		tree, tb := fabricTB(t, sl2vlSingleSwitch, DefaultTestbenchPackets)
		vls := expectedVLs(t, tb)
		require.Equal(t, tb.Packets, tb.Sends, "one switch: one send per packet")
		require.Greater(t, vls["0"], 20)
		require.Greater(t, vls["1"], 20)
		t.Run("rtl", func(t *testing.T) {
			t.Parallel()
			out, ok := runFabricTB(t, tree, tb)
			assert.True(t, ok, out)
			assert.Contains(t, out, fmt.Sprintf("PASS: %d packets, %d switch sends checked\n", tb.Packets, tb.Sends))
		})
		// A forwarding table that finds no route: every packet is dropped,
		// nothing leaves, and the testbench times out naming what it waits
		// for (the first 10 of the switch's 12 (port, source) lists: 4
		// hosts, each sending to the 3 others).
		t.Run("no route", func(t *testing.T) {
			t.Parallel()
			mutant := slices.Clone(tree)
			for i, f := range mutant {
				if f.Name == "sw_route_lookup.v" {
					text := strings.Replace(f.Text, "assign out_valid = !clearing && rd_in && entry[PORT_W];", "assign out_valid = 1'b0;", 1)
					require.NotEqual(t, f.Text, text, "the mutation applies")
					mutant[i].Text = text
				}
			}
			out, ok := runFabricTB(t, mutant, tb)
			assert.False(t, ok, "vvp exits 1")
			assert.Regexp(t, fmt.Sprintf(`(?m)^TIMEOUT: cycle \d+: no switch port sent a packet for %d cycles; 0 of %d switch sends checked, 12 \(port, source\) lists pending$`,
				testbenchTimeoutCycles, tb.Sends), out)
			assert.Len(t, regexp.MustCompile(`(?m)^  pending: Fabric\.Switch\[0\]\.Port\[\d\] \(sw0\.g_port\[\d\], IB port \d\) source LID \d: packet \d+ on VL \d next, \d+ left$`).FindAllString(out, -1), 10)
		})
	})
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
