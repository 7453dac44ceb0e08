package hca

// pcieBoundary is the address boundary no PCIe request may cross (PCIe Base
// Specification, Memory Write and Read requests: "must not specify an
// Address/Length combination which causes a Memory Space access to cross a
// 4-KB boundary").
const pcieBoundary = 4096

// WriteTLP returns the bytes of the first posted-write TLP of a write of n
// bytes at host address addr when TLPs carry at most mps bytes
// (hca.pcie.mps_bytes, a power of two from 128 to 4096):
//
//	min(n, mps, 4096 − addr mod 4096)
//
// The rest of the write follows from addr + that many bytes by the same
// rule; WriteTLPs lists them. n ≤ 0 gives 0. Addresses wrap modulo 2^64,
// which is 4 KiB-aligned, so no TLP straddles the wrap.
//
// This is the model's split made a legal TLP sequence. PCIe.write books a
// write of n bytes by count, whatever its address: ⌊n / mps⌋ TLPs of mps
// bytes and one of n mod mps (if any). Those are WriteTLPs' TLPs exactly
// when none of them would cross a 4 KiB boundary: always when addr is
// mps-aligned (4096 is a multiple of mps) or the write stays inside one
// 4 KiB page. Otherwise the count split is no TLP sequence a device may
// send (one TLP would cross 4 KiB); WriteTLP cuts there, which costs at
// most one TLP more than the model books, the rest starting page-aligned
// (the model's writes that do this: a UD receive's payload behind its
// 40-byte GRH, when it reaches the next page; docs/hca.md, "PCIe"). PCIe
// requires nothing more of a write TLP (it need not start at an
// mps-aligned address), so a write at an unaligned address goes on in
// mps-sized TLPs, as the model counts it, until a 4 KiB boundary.
//
// The RTL's DMA engine (hca_dma_engine, whose co-simulation takes this
// function as its reference) splits its writes by it.
func WriteTLP(addr uint64, n, mps int) int {
	if n <= 0 {
		return 0
	}
	return min(n, mps, pcieBoundary-int(addr%pcieBoundary))
}

// WriteTLPs appends to dst the posted-write TLPs of a write of n bytes at
// addr, in address order, each WriteTLP's (dst lets a caller reuse one
// slice). A TLP is a ReadChunk: its address and bytes.
func WriteTLPs(dst []ReadChunk, addr uint64, n, mps int) []ReadChunk {
	for n > 0 {
		k := WriteTLP(addr, n, mps)
		dst = append(dst, ReadChunk{addr, k})
		addr += uint64(k)
		n -= k
	}
	return dst
}
