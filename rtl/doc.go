// Package rtl exports Verilog from an hcasim design: skeletons of the HCA and
// switch ASIC (module hierarchy, valid/ready ports, widths and depths from the
// config) and the leaf primitives that are implemented in full — synchronous
// FIFO, round-robin arbiter, IB VL arbiter and the per-VL credit counters.
//
// Every implemented primitive has a Go model that the simulator itself uses
// (components.FIFO, components.RoundRobin, components.VLArbiter,
// credit.Sender, credit.Receiver). The co-simulation tests drive each model
// and its Verilog from one shared table: the Go model writes a trace of
// stimulus and expected outputs, a generated testbench replays the trace into
// the Verilog under Icarus (and Verilator) and compares every output every
// cycle.
//
// The Verilog is a Verilog-2005 subset that both Verilator (lint -Wall clean)
// and Icarus (-g2005) accept. Emit writes a tree for a Design; Report sizes
// its buffers and synthesises the primitives with Yosys; Main is the
// `hcasim rtl` command. docs/rtl.md describes the output.
package rtl
