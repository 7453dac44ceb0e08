package components

// prefetch asks the CPU to bring the cache line holding addr into its
// caches without waiting for it (PREFETCHT0): a hint that never faults and
// changes no result.
//
//go:noescape
func prefetch(addr uintptr)

// prefetch2 prefetches the two cache lines from addr on (what a link
// port's packet, flow-control and wire-idle events read, from
// TargetHotOffset on: link.TestPortLayout).
//
//go:noescape
func prefetch2(addr uintptr)
