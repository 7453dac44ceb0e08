// Package credit is InfiniBand link-level flow control, per virtual lane, in
// 64-byte blocks (IBA §7.9; ib-facts.md §3).
//
// The sender keeps FCTBS, the total blocks sent on the VL, and FCCL, the credit
// limit the receiver last advertised; both are 12-bit counters that wrap at
// 4096. The receiver keeps ABR, the adjusted blocks received (set to the
// sender's FCTBS whenever a flow-control packet arrives, so lost blocks cannot
// leak credits), and advertises FCCL = ABR + free blocks, mod 4096. A sender
// may start a packet of n blocks only if (FCCL − (FCTBS + n)) mod 4096 ≤ 2048:
// the limit is at most half the counter range ahead of what would then have
// been sent, which is how 12-bit counters tell "ahead" from "behind".
//
// These are plain types with no simulator import: the link ports use them, the
// RTL credit counter is checked against them cycle by cycle.
package credit
