// Package switchasic models an InfiniBand switch ASIC: an input-queued switch
// with radix full-duplex link ports, per-VL input buffers with credit flow
// control, linear forwarding, SL-to-VL mapping, fifo or virtual-output
// queueing, a crossbar allocator on the core clock, and an output unit per
// port with the IBA VL arbiter and a downstream credit check.
//
// In hardware terms, per packet:
//
//	link ─▶ input unit ─▶ route (LFT, SL2VL) ─▶ queue (fifo | voq)
//	          │ per-VL buffer, credits upstream          │
//	          ▼                                          ▼
//	   output unit ◀─ crossbar ◀─ allocator (VL arbiter per output, then
//	   (wire, credits)            separable | islip | wavefront match)
//
// Events are at packet granularity: a packet's head arrival, its
// eligibility after the route stage, an allocation round on a core clock
// edge, its start and end on the output wire; no per-block ticking. See
// docs/switch.md for the block diagram, the knobs and the timing rules.
//
// The pure parts (Config, LFT, SL2VL, InputBuffer) have no simulator import
// and are tested with tables.
package switchasic
