// Package ib holds the InfiniBand wire format that every hcasim block shares:
// the packet with its headers (LRH, GRH, BTH and the extension headers), the
// link-level flow-control packet, header sizes, opcodes, credit arithmetic and
// the simulator's time unit (integer picoseconds).
//
// Sizes follow ../shared/reference/ib-facts.md §2 (kernel include/rdma/ib_pack.h,
// ib_hdrs.h, rxe_opcode.c); every number here names its source.
package ib
