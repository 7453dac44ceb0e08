package hca

// ReadRequest returns the bytes of the first PCIe read request of a read
// of n bytes at host address addr when read requests carry at most mrrs
// bytes (hca.pcie.mrrs_bytes, a power of two from 128 to 4096):
//
//	min(n, mrrs − addr mod mrrs)
//
// so a request never crosses an mrrs-aligned address, hence never a 4 KiB
// boundary, which PCIe forbids a read request to cross (PCIe Base
// Specification, Memory Read requests: "must not specify an Address/Length
// combination which causes a Memory Space access to cross a 4-KB boundary").
// The rest of the read follows from addr + that many bytes by the same rule;
// ReadRequests lists them. Addresses wrap modulo 2^64, and 2^64 is
// mrrs-aligned, so no request straddles the wrap. n ≤ 0 gives 0.
//
// The RTL's DMA engine (hca_dma_engine, whose co-simulation takes this
// function as its reference) and the model's PCIe.Read split by it.
func ReadRequest(addr uint64, n, mrrs int) int {
	if n <= 0 {
		return 0
	}
	return min(n, mrrs-int(addr%uint64(mrrs)))
}

// ReadChunk is one read request of a split read: its address and bytes.
type ReadChunk struct {
	Addr uint64
	N    int
}

// ReadRequests appends to dst the read requests of a read of n bytes at
// addr, in address order, each ReadRequest's (dst lets a caller reuse one
// slice).
func ReadRequests(dst []ReadChunk, addr uint64, n, mrrs int) []ReadChunk {
	for n > 0 {
		k := ReadRequest(addr, n, mrrs)
		dst = append(dst, ReadChunk{addr, k})
		addr += uint64(k)
		n -= k
	}
	return dst
}
