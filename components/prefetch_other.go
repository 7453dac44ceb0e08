//go:build !amd64

package components

// prefetch is a no-op where no prefetch instruction is wired up.
func prefetch(addr uintptr) {}

// prefetch4 is a no-op where no prefetch instruction is wired up.
func prefetch4(addr uintptr) {}
