package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWQERead: each limit of the chunking rule binds in turn; the
// expected n is the smallest of the three terms, worked out per row.
func TestWQERead(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		posted, fetched       uint32
		inFlight, depth, ring int
		wantN, wantSlot       int
	}{
		// 5 posted, none fetched, window 8 empty, ring 16: min(5, 8, 16) = 5.
		{"the posted blocks bind", 5, 0, 0, 8, 16, 5, 0},
		// 20 posted, window 8 with 3 in flight: min(20, 5, 16) = 5.
		{"the window binds", 20, 0, 3, 8, 16, 5, 0},
		// fetched 13 of a 16-block ring: slot 13, 3 to the end: min(7, 8, 3) = 3.
		{"the ring's end binds", 20, 13, 0, 8, 16, 3, 13},
		// after the split above the next read starts at slot 0: min(4, 5, 16) = 4.
		{"after the wrap", 20, 16, 3, 8, 16, 4, 0},
		{"nothing posted", 7, 7, 0, 8, 16, 0, 7},
		{"the window full", 20, 8, 8, 8, 16, 0, 8},
		// a window overdrawn (never by the rule itself) is still full.
		{"the window over", 20, 8, 9, 8, 16, 0, 8},
		// counters across 2^32: posted − fetched = 6, slot = (2^32 − 2) mod 8 = 6,
		// 2 to the end: min(6, 8, 2) = 2.
		{"counters wrap", 4, 0xfffffffe, 0, 8, 8, 2, 6},
		// a one-block ring: every read is one block at slot 0.
		{"a one-block ring", 9, 8, 0, 8, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, slot := WQERead(tc.posted, tc.fetched, tc.inFlight, tc.depth, tc.ring)
			assert.Equal(t, tc.wantN, n, "n")
			assert.Equal(t, tc.wantSlot, slot, "slot")
		})
	}
}
