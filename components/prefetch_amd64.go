package components

// prefetch asks the CPU to bring the cache line holding addr into its
// caches without waiting for it (PREFETCHT0): a hint that never faults and
// changes no result.
//
//go:noescape
func prefetch(addr uintptr)

// prefetch4 prefetches the four cache lines from addr on (what a link
// port's packet, flow-control and wire-idle events read: its first three
// lines and VL 0's, TestPortLayout).
//
//go:noescape
func prefetch4(addr uintptr)
