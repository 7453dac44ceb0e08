//go:build !amd64

package components

// prefetch is a no-op where no prefetch instruction is wired up.
func prefetch(addr uintptr) {}

// prefetch2 is a no-op where no prefetch instruction is wired up.
func prefetch2(addr uintptr) {}
