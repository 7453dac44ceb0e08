package ib

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestPacketLayout: the fields a hop reads (kind, VL, DLID, opcode, payload
// length, sequence, hop count, and a switch output's stage link) lie in the
// first 64 bytes, and the size is a multiple of 64, so the allocator's size
// class keeps every packet on a cache-line boundary and a hop touches one
// line of it; the size stays 192 bytes (three lines to clear when a packet
// is reused). Performance only (docs/performance-data.md measures the
// misses).
func TestPacketLayout(t *testing.T) {
	var p Packet
	for name, off := range map[string]uintptr{
		"Kind": unsafe.Offsetof(p.Kind), "VL": unsafe.Offsetof(p.VL), "DLID": unsafe.Offsetof(p.DLID),
		"Opcode": unsafe.Offsetof(p.Opcode), "PayloadLen": unsafe.Offsetof(p.PayloadLen),
		"Seq": unsafe.Offsetof(p.Seq), "Hops": unsafe.Offsetof(p.Hops), "Measure": unsafe.Offsetof(p.Measure),
		"InjectAt": unsafe.Offsetof(p.InjectAt), "StageNext": unsafe.Offsetof(p.StageNext),
		"StageAt": unsafe.Offsetof(p.StageAt) + 7,
	} {
		assert.Less(t, off, uintptr(64), name)
	}
	assert.Equal(t, uintptr(192), unsafe.Sizeof(p))
}
