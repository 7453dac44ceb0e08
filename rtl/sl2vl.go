package rtl

import (
	"fmt"
	"strings"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/switchasic"
)

// SL2VLSet is the SL-to-VL programming that a group of the fabric's switches
// shares: one 16-entry table per (input port, output port) pair (IBA 7.6.6,
// ib-facts.md §3), as the subnet manager writes switch.sl2vl and
// switch.sl2vl_pairs. A fabric's switches differ where sl2vl_pairs selects
// ports by class or names switches (a leaf's host → up pairs are not a
// spine's), so the tree holds one set per distinct programming and each
// switch_top instance picks its own (SL2VL_SET).
type SL2VLSet struct {
	// Switches names the switches programmed so, in fabric order; empty
	// means every switch.
	Switches []string
	// Default is the table of every pair not in Pairs: the most common
	// one of the set, so the emitted case lists the fewest pairs.
	Default [16]uint8
	// Pairs are the pairs whose table differs from Default, by input port
	// then output port.
	Pairs []SL2VLPair
}

// SL2VLPair is one port pair's SL-to-VL table. Ports are 0-based, as the
// RTL's port indices (the config's and the fabric's IB port numbers are
// these plus one).
type SL2VLPair struct {
	In, Out int
	Table   [16]uint8 // VL of SL 0..15; 15 = drop
}

// sl2vlSets returns d.SL2VL, or the table a switch has when switch.sl2vl
// and switch.sl2vl_pairs are both empty (OpenSM's default, each VL masked to
// the port's VLs: switchasic.Config.SL2VLTable) for a Design made without
// one.
func (d Design) sl2vlSets() []SL2VLSet {
	if len(d.SL2VL) > 0 {
		return d.SL2VL
	}
	c := switchasic.Config{VLs: d.VLs}
	return []SL2VLSet{{Default: c.SL2VLTable()}}
}

// validateSL2VL checks the tables against the design's VLs and radix.
func (d Design) validateSL2VL() error {
	check := func(key string, t [16]uint8) error {
		for sl, vl := range t {
			if int(vl) >= d.VLs && vl != ib.ManagementVL {
				return fmt.Errorf("%s: SL %d maps to VL %d, which is neither a data VL of switch.vls %d (0 to %d) nor 15 (drop)",
					key, sl, vl, d.VLs, d.VLs-1)
			}
		}
		return nil
	}
	for _, s := range d.SL2VL {
		if err := check("switch.sl2vl", s.Default); err != nil {
			return err
		}
		for _, p := range s.Pairs {
			if p.In < 0 || p.In >= d.Radix || p.Out < 0 || p.Out >= d.Radix {
				return fmt.Errorf("switch.sl2vl_pairs: port pair (%d, %d) is outside switch.radix %d (ports 1 to %d)",
					p.In+1, p.Out+1, d.Radix, d.Radix)
			}
			if err := check(fmt.Sprintf("switch.sl2vl_pairs (port %d to port %d)", p.In+1, p.Out+1), p.Table); err != nil {
				return err
			}
		}
	}
	return nil
}

// groupSL2VL groups the switches by their whole programming: tables[k] is
// switch names[k]'s radix × radix tables, [in*radix + out]. Sets are in the
// order of their first switch.
func groupSL2VL(names []string, tables [][][16]uint8, radix int) []SL2VLSet {
	var sets []SL2VLSet
	var programs [][][16]uint8
	for k, t := range tables {
		found := -1
		for j, p := range programs {
			if equalTables(p, t) {
				found = j
				break
			}
		}
		if found >= 0 {
			sets[found].Switches = append(sets[found].Switches, names[k])
			continue
		}
		programs = append(programs, t)
		sets = append(sets, makeSL2VLSet(names[k], t, radix))
	}
	return sets
}

func equalTables(a, b [][16]uint8) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// makeSL2VLSet makes the set of one switch's tables: the most common table
// as the default (ties to the smallest as packed by tableHex), the other
// pairs listed.
func makeSL2VLSet(name string, t [][16]uint8, radix int) SL2VLSet {
	count := map[[16]uint8]int{}
	for _, x := range t {
		count[x]++
	}
	var def [16]uint8
	best := -1
	for _, x := range t {
		if n := count[x]; n > best || n == best && tableHex(x) < tableHex(def) {
			def, best = x, n
		}
	}
	s := SL2VLSet{Switches: []string{name}, Default: def}
	for i, x := range t {
		if x != def {
			s.Pairs = append(s.Pairs, SL2VLPair{In: i / radix, Out: i % radix, Table: x})
		}
	}
	return s
}

// tableHex packs a table as the Verilog constant sw_sl2vl holds: 64 bits,
// SL s at bits [4s+3:4s], so the hex digits read right to left are the VLs
// of SL 0, 1, ..., 15.
func tableHex(t [16]uint8) string {
	var b strings.Builder
	b.WriteString("64'h")
	for sl := 15; sl >= 0; sl-- {
		fmt.Fprintf(&b, "%x", t[sl]&15)
	}
	return b.String()
}

// renderSL2VL returns the sw_sl2vl module: the design's SL-to-VL tables as
// constants, looked up combinationally by (IN_PORT, out_port, sl).
func renderSL2VL(d Design, p Params) string {
	sets := d.sl2vlSets()
	var b strings.Builder
	b.WriteString(`// sw_sl2vl: the switch's SL-to-VL mapping (IBA 7.6.6 SLtoVLMappingTable; ib-facts.md §3): the VL a
// packet of service level sl leaves output out_port on when it entered on input IN_PORT, one
// 16-entry table per (input, output) port pair, as the subnet manager programs switch.sl2vl and
// switch.sl2vl_pairs (the simulator's own resolution, fabric.Subnet.SL2VL). VL 15 means drop.
// Combinational; the tables are constants of the design (the SMA writing them at run time is TODO).
// A table is 64 bits, SL s at bits [4s+3:4s]: its hex digits read right to left are the VLs of
// SL 0, 1, ..., 15. A pair is {IN_PORT, out_port} (0-based ports, PORT_W bits each).
//
// SET selects the programming of one group of the fabric's switches (switch_top's SL2VL_SET):
`)
	for k, s := range sets {
		who := "every switch"
		if len(s.Switches) > 0 {
			who = strings.Join(s.Switches, ", ")
		}
		fmt.Fprintf(&b, "//   %d: %s\n", k, who)
	}
	if len(sets) > 1 {
		b.WriteString("// Any other SET is set 0.\n")
	}
	anyPairs := false
	for _, s := range sets {
		anyPairs = anyPairs || len(s.Pairs) > 0
	}
	// SET is unread with one set, IN_PORT (and out_port) without per-pair
	// tables: every instance has the same ports, so lint is told.
	params := fmt.Sprintf("    parameter integer PORT_W  = %d,\n    parameter integer SET     = 0,\n    parameter integer IN_PORT = 0\n", p.PortW)
	if len(sets) == 1 || !anyPairs {
		params = fmt.Sprintf("    parameter integer PORT_W  = %d,\n    /* verilator lint_off UNUSEDPARAM */\n"+
			"    parameter integer SET     = 0,\n    parameter integer IN_PORT = 0\n    /* verilator lint_on UNUSEDPARAM */\n", p.PortW)
	}
	fmt.Fprintf(&b, `module sw_sl2vl #(
%s) (
    input  wire [PORT_W-1:0] out_port,
    input  wire [3:0]        sl,
    output wire [3:0]        vl
);
`, params)
	if anyPairs {
		b.WriteString(`    localparam integer  IN_I = IN_PORT;
    localparam [PORT_W-1:0] IN = IN_I[PORT_W-1:0];
    wire [2*PORT_W-1:0] pair = {IN, out_port};
`)
	}
	b.WriteString("    wire [63:0] tbl;\n")
	// body writes one set's lookup into tbl, indented by ind.
	body := func(s SL2VLSet, ind string) {
		if len(s.Pairs) == 0 {
			fmt.Fprintf(&b, "%sassign tbl = %s;\n", ind, tableHex(s.Default))
			return
		}
		fmt.Fprintf(&b, "%sreg [63:0] t;\n%salways @* begin\n%s    case (pair)\n", ind, ind, ind)
		for _, pr := range s.Pairs {
			fmt.Fprintf(&b, "%s        %d'd%d: t = %s; // port %d -> port %d\n",
				ind, 2*p.PortW, pr.In<<p.PortW|pr.Out, tableHex(pr.Table), pr.In, pr.Out)
		}
		fmt.Fprintf(&b, "%s        default: t = %s;\n%s    endcase\n%send\n%sassign tbl = t;\n",
			ind, tableHex(s.Default), ind, ind, ind)
	}
	if len(sets) == 1 {
		body(sets[0], "    ")
	} else {
		// Set 0 last, as the else of the chain.
		b.WriteString("    generate\n")
		for k := 1; k < len(sets); k++ {
			els := "else "
			if k == 1 {
				els = ""
			}
			fmt.Fprintf(&b, "        %sif (SET == %d) begin : g_set%d\n", els, k, k)
			body(sets[k], "            ")
			b.WriteString("        end\n")
		}
		b.WriteString("        else begin : g_set0\n")
		body(sets[0], "            ")
		b.WriteString("        end\n    endgenerate\n")
	}
	if !anyPairs {
		b.WriteString(`
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, out_port, 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
`)
	}
	b.WriteString("    assign vl = tbl[{sl, 2'b00} +: 4];\nendmodule\n")
	return b.String()
}
