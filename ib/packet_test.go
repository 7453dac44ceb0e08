package ib

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWireBytes(t *testing.T) {
	tests := []struct {
		name string
		pkt  Packet
		want int
	}{
		// LRH 8 + BTH 12 + payload + ICRC 4 + VCRC 2 = 26 + payload (ib-facts §2, 26 B overhead).
		{"rc middle 4096", Packet{Opcode: RDMAWriteMiddle, PayloadLen: 4096}, 26 + 4096},
		// + RETH 16.
		{"write only 100", Packet{Opcode: RDMAWriteOnly, PayloadLen: 100}, 26 + 16 + 100},
		// payload 1 padded to 4.
		{"send only 1", Packet{Opcode: SendOnly, PayloadLen: 1}, 26 + 4},
		// + RETH 16 + ImmDt 4 + GRH 40.
		{"write only imm grh", Packet{Opcode: RDMAWriteOnlyImm, GRH: true, PayloadLen: 8}, 26 + 16 + 4 + 40 + 8},
		// ACK: AETH 4, no payload. Minimum transport packet LRH+BTH+ICRC = 24 (+VCRC).
		{"ack", Packet{Opcode: Acknowledge}, 26 + 4},
		// atomic: AtomicETH 28; atomic ack: AETH 4 + AtomicAckETH 8.
		{"fetch add", Packet{Opcode: FetchAdd}, 26 + 28},
		{"atomic ack", Packet{Opcode: AtomicAcknowledge}, 26 + 12},
		{"read request", Packet{Opcode: RDMAReadRequest}, 26 + 16},
		{"read resp middle", Packet{Opcode: RDMAReadResponseMiddle, PayloadLen: 256}, 26 + 256},
		{"ud send", Packet{Opcode: UDSendOnly, PayloadLen: 64}, 26 + 8 + 64},
		// Max data packet 8+40+12+16+4+4096+4+2 = 4182 (ib-facts §2).
		{"max", Packet{Opcode: RDMAWriteOnlyImm, GRH: true, PayloadLen: 4096}, 4182},
		{"flow control", Packet{Kind: FlowControl}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.pkt.WireBytes())
			assert.Equal(t, (tc.want+63)/64, tc.pkt.Credits())
		})
	}
}

func TestCreditsAndPktLen(t *testing.T) {
	assert.Equal(t, 0, Credits(0))
	assert.Equal(t, 1, Credits(1))
	assert.Equal(t, 1, Credits(64))
	assert.Equal(t, 2, Credits(65))
	// A 4 KiB payload packet is 4122 bytes: 65 blocks (64 for payload + 1 for headers).
	p := Packet{Opcode: RDMAWriteMiddle, PayloadLen: 4096}
	assert.Equal(t, 65, p.Credits())
	// PktLen counts LRH..ICRC in words: (4122 - 2) / 4 = 1030.
	assert.Equal(t, 1030, p.PktLen())
}

func TestOpcodeNames(t *testing.T) {
	assert.Equal(t, "RDMA_WRITE_FIRST", RDMAWriteFirst.String())
	assert.Equal(t, "UNKNOWN", Opcode(0x1F).String())
	assert.False(t, Opcode(0x1F).Valid())
	assert.True(t, Acknowledge.Valid())
	assert.False(t, Acknowledge.IsRequest())
	assert.True(t, FetchAdd.IsRequest())
}

func TestTimeConversion(t *testing.T) {
	// 1 ns in float seconds is not exact; conversion must round, not truncate.
	assert.Equal(t, PS(1000), FromSeconds(PS(1000).Seconds()))
	for _, ps := range []PS{1, 999, 123456789, 3 * Second} {
		assert.Equal(t, ps, FromSeconds(ps.Seconds()))
	}
	assert.Equal(t, PS(1000), CyclePS(1000))
	assert.Equal(t, PS(3333), CyclePS(300))
}
