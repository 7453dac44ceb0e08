package switchasic

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestInputUnitLayout: a round's look at an input (nonEmpty, rr, VL 0's
// queue) reads the unit's first cache line, and units in the switch's slice
// start on line boundaries. Performance only (docs/performance-data.md).
func TestInputUnitLayout(t *testing.T) {
	var u inputUnit
	assert.Zero(t, unsafe.Sizeof(u)%64, "size %d", unsafe.Sizeof(u))
	assert.Less(t, unsafe.Offsetof(u.vls)+8, uintptr(64))
}

// TestOutputUnitLayout: what every grant and send touches lies in the
// unit's first cache line, the pending counts in the second, and units in
// the switch's slice start on line boundaries.
func TestOutputUnitLayout(t *testing.T) {
	var u outputUnit
	assert.Zero(t, unsafe.Sizeof(u)%64, "size %d", unsafe.Sizeof(u))
	assert.LessOrEqual(t, unsafe.Offsetof(u.txBlocks)+8, uintptr(64))
	assert.Equal(t, uintptr(64), unsafe.Offsetof(u.pending))
}
