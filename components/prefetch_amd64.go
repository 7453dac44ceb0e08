package components

// prefetch asks the CPU to bring the cache line holding addr into its
// caches without waiting for it (PREFETCHT0): a hint that never faults and
// changes no result.
//
//go:noescape
func prefetch(addr uintptr)
