package ib

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMulticastLIDsAndMGID(t *testing.T) {
	for _, c := range []struct {
		lid  uint16
		want bool
	}{{0x0001, false}, {0xBFFF, false}, {0xC000, true}, {0xFFFE, true}, {0xFFFF, false}} {
		assert.Equal(t, c.want, IsMulticastLID(c.lid), "0x%x", c.lid)
	}
	g := MGID(0xC0A5)
	assert.Equal(t, [16]byte{0xFF, 0x12, 14: 0xC0, 15: 0xA5}, g)

	// A packet to an MLID carries the MGID as its DGID; its SGID stays the
	// source's unicast GID (fe80::LID).
	p := Packet{Opcode: UDSendOnly, GRH: true, SLID: 0x0007, DLID: 0xC0A5, DestQP: MulticastQPN, PayloadLen: 4}
	w := AppendWire(nil, &p)
	assert.Equal(t, g[:], w[LRHBytes+24:LRHBytes+40])
	assert.Equal(t, []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}, w[LRHBytes+8:LRHBytes+24])
}
