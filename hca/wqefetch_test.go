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

// TestRecvRead: the receive-queue prefetch's chunking; the window is depth
// blocks of four 16-byte receive WQEs, and each row works out the smallest
// of the three terms.
func TestRecvRead(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		posted, fetched      uint32
		held, depth, ringWQE int
		wantN, wantSlot      int
	}{
		// 5 posted, window 2 blocks = 8 WQEs, ring 64: min(5, 8, 64) = 5.
		{"the posted WQEs bind", 5, 0, 0, 2, 64, 5, 0},
		// 40 posted, window 8 WQEs with 3 held: min(40, 5, 64) = 5.
		{"the window binds", 40, 0, 3, 2, 64, 5, 0},
		// the window in WQEs, not blocks: depth 8 = 32 WQEs: min(40, 32, 64) = 32.
		{"four WQEs a block", 40, 0, 0, 8, 64, 32, 0},
		// fetched 61 of a 64-WQE ring: slot 61, 3 to the end: min(19, 32, 3) = 3.
		{"the ring's end binds", 80, 61, 0, 8, 64, 3, 61},
		{"nothing posted", 7, 7, 0, 8, 64, 0, 7},
		{"the window full", 90, 50, 32, 8, 64, 0, 50},
		// counters across 2^32: posted − fetched = 6, slot = (2^32 − 2) mod 16 = 14,
		// 2 to the end: min(6, 4, 2) = 2.
		{"counters wrap", 4, 0xfffffffe, 0, 1, 16, 2, 14},
		// a one-WQE ring: every read is one WQE at slot 0.
		{"a one-WQE ring", 9, 8, 0, 8, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, slot := RecvRead(tc.posted, tc.fetched, tc.held, tc.depth, tc.ringWQE)
			assert.Equal(t, tc.wantN, n, "n")
			assert.Equal(t, tc.wantSlot, slot, "slot")
		})
	}
}
