package ib

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVLMask: OpenSM's vl_mask = (1 << (OperationalVLs − 1)) − 1 with
// OperationalVLs 1..5 for 1, 2, 4, 8, 15 data VLs (osm_qos.c), so every VL
// 0..14 masks onto a data VL of the port.
func TestVLMask(t *testing.T) {
	for code, vls := range []int{1, 2, 4, 8, 15} {
		opVLs := code + 1
		mask := uint8(1<<(opVLs-1) - 1)
		assert.Equal(t, mask, VLMask(vls), "vls %d", vls)
		for vl := uint8(0); vl < 15; vl++ {
			assert.Less(t, int(vl&mask), vls, "vls %d vl %d", vls, vl)
		}
	}
	assert.Panics(t, func() { VLMask(3) })
}
