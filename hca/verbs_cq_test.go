package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCQESlot: slot = pi mod depth, owner = (pi / depth) mod 2, room while
// fewer than depth CQEs are unconsumed, in free-running 32-bit counts.
func TestCQESlot(t *testing.T) {
	for _, tc := range []struct {
		depth       int
		pi, ci      uint32
		slot        uint32
		owner, room bool
	}{
		{2, 0, 0, 0, false, true},
		{2, 1, 0, 1, false, true},
		{2, 2, 0, 0, true, false}, // two unconsumed in a 2-deep ring: overrun
		{2, 2, 1, 0, true, true},  // second pass: owner 1
		{2, 4, 3, 0, false, true}, // third pass: owner 0 again
		{1024, 1023, 0, 1023, false, true},
		{1024, 1024, 0, 0, true, false},
		{1024, 1024, 1, 0, true, true},
		// The counts wrap at 2^32, a multiple of every depth, so slot and
		// owner run on: pi = 2^32 − 1 is the last slot of an odd pass
		// (2^32 / 8 passes, the last of them odd), and pi − ci wraps too.
		{8, 0xffffffff, 0xfffffffa, 7, true, true},
		{8, 0, 0xfffffff8, 0, false, false},
		{8, 0, 0xfffffff9, 0, false, true},
	} {
		slot, owner, room := CQESlot(tc.depth, tc.pi, tc.ci)
		assert.Equal(t, tc.slot, slot, "%+v", tc)
		assert.Equal(t, tc.owner, owner, "%+v", tc)
		assert.Equal(t, tc.room, room, "%+v", tc)
	}
}
