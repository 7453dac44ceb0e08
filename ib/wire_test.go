package ib

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vcrcBitSerial is the VCRC written from its definition, independently of
// the table in wire.go: the LFSR of IBA 7.8.2 with the polynomial 0x100B
// (x^16+x^12+x^3+x+1) in its usual most-significant-first register, all ones
// at the start, data bits fed least significant bit of each byte first; the
// result is the register inverted and its bits reversed, so that its x^15
// coefficient lands in bit 0 (the reflected form the table computes).
func vcrcBitSerial(b []byte) uint16 {
	r := uint16(0xFFFF)
	for _, x := range b {
		for i := range 8 {
			in := uint16(x>>i) & 1
			out := r >> 15
			r <<= 1
			if in^out != 0 {
				r ^= 0x100B
			}
		}
	}
	return bits.Reverse16(^r)
}

// icrcByHand is the ICRC computed from a copy of pkt (first LRH byte through
// the last pad byte) whose variant fields are set to ones here, field by field
// from the IBA rules (MindShare ch. 25; rxe_icrc.c), not from wire.go's masks:
//
//	local:  LRH byte 0 bits 7:4 (VL); BTH byte 4 (FECN, BECN, resv6) = LRH 8 + 4 = byte 12
//	global: LRH bytes 0-7 (all); GRH byte 0 bits 3:0 and bytes 1-3 (TClass,
//	        FlowLabel) = bytes 8-11; GRH byte 7 (HopLmt) = byte 15; BTH byte 4 =
//	        8 + 40 + 4 = byte 52
//
// and hash/crc32's CRC-32 of it (reflected, all-ones seed, inverted result).
func icrcByHand(pkt []byte, grh bool) uint32 {
	m := append([]byte(nil), pkt...)
	if grh {
		for i := 0; i < 8; i++ {
			m[i] = 0xFF
		}
		m[8] |= 0x0F
		m[9], m[10], m[11] = 0xFF, 0xFF, 0xFF
		m[15] = 0xFF
		m[52] = 0xFF
	} else {
		m[0] |= 0xF0
		m[12] = 0xFF
	}
	return crc32.ChecksumIEEE(m)
}

// le32 and le16 are the CRC fields' wire bytes, least significant byte first
// (IBA 7.8.1; the ConnectX-4 capture below).
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

// cat joins byte slices.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// TestAppendWireHeaders: for each packet the bytes from the first LRH byte to
// the last pad byte are written out field by field from the layout (each line
// says which bits hold what), the ICRC and VCRC are the independent
// computations above, and the length is WireBytes.
func TestAppendWireHeaders(t *testing.T) {
	tests := []struct {
		name string
		pkt  Packet
		grh  bool
		want []byte // LRH through pad
	}{
		{
			// WireBytes = LRH 8 + BTH 12 + payload 5 + pad 3 + ICRC 4 + VCRC 2 = 34;
			// PktLen = (34 - 2) / 4 = 8 words.
			name: "RC SEND_ONLY 5-byte payload, PadCnt 3",
			pkt: Packet{VL: 2, SL: 5, DLID: 0x0012, SLID: 0x0034, Opcode: SendOnly, SE: true, AckReq: true,
				DestQP: 0x000102, PSN: 0x000A0B, PayloadLen: 5, Payload: []byte("hello")},
			want: cat(
				[]byte{0x20},       // VL 2 (bits 7:4), LVer 0
				[]byte{0x52},       // SL 5 (7:4), rsv 0 (3:2), LNH 2 = BTH next (1:0)
				[]byte{0x00, 0x12}, // DLID
				[]byte{0x00, 0x08}, // rsv5 0, PktLen 8
				[]byte{0x00, 0x34}, // SLID
				[]byte{0x04},       // OpCode SEND_ONLY
				[]byte{0xB0},       // SE 1 (bit 7), M 0 (6), PadCnt 3 (5:4), TVer 0 (3:0)
				[]byte{0xFF, 0xFF}, // P_Key
				[]byte{0x00},       // FECN 0, BECN 0, resv6 0
				[]byte{0x00, 0x01, 0x02},
				[]byte{0x80},             // AckReq 1 (bit 7), resv7 0
				[]byte{0x00, 0x0A, 0x0B}, // PSN
				[]byte("hello"),
				[]byte{0, 0, 0}, // pad
			),
		},
		{
			// 8 + 12 + RETH 16 + payload 8 (synthetic: zeros) + 4 + 2 = 50; PktLen 12.
			name: "RDMA_WRITE_FIRST with RETH, no payload bytes carried",
			pkt: Packet{DLID: 1, SLID: 2, Opcode: RDMAWriteFirst, FECN: true, DestQP: 0xABCDEF, PSN: 0xFFFFFF,
				RETH: RETH{VA: 0x0102030405060708, RKey: 0x11223344, Length: 0x00010000}, PayloadLen: 8},
			want: cat(
				[]byte{0x00, 0x02},                                     // VL 0 LVer 0; SL 0, LNH 2
				[]byte{0x00, 0x01, 0x00, 0x0C},                         // DLID 1; PktLen 12
				[]byte{0x00, 0x02},                                     // SLID 2
				[]byte{0x06, 0x00, 0xFF, 0xFF},                         // RDMA_WRITE_FIRST; SE 0 PadCnt 0; P_Key
				[]byte{0x80, 0xAB, 0xCD, 0xEF},                         // FECN 1 (bit 7); DestQP
				[]byte{0x00, 0xFF, 0xFF, 0xFF},                         // AckReq 0; PSN
				[]byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}, // RETH VA
				[]byte{0x11, 0x22, 0x33, 0x44},                         // R_Key
				[]byte{0x00, 0x01, 0x00, 0x00},                         // DMA length 65536
				make([]byte, 8),                                        // payload: the model carries none
			),
		},
		{
			// 8 + 12 + RETH 16 + ImmDt 4 + payload 4 + 4 + 2 = 50; PktLen 12.
			name: "RDMA_WRITE_ONLY_WITH_IMMEDIATE: RETH then ImmDt",
			pkt: Packet{VL: 7, SL: 15, DLID: 0xBFFF, SLID: 0x0100, Opcode: RDMAWriteOnlyImm, BECN: true,
				DestQP: 1, PSN: 0x800000, RETH: RETH{VA: 0xFFFF000000001000, RKey: 0xCAFEBABE, Length: 4},
				Imm: 0x12345678, PayloadLen: 4, Payload: []byte{0xDE, 0xAD, 0xBE, 0xEF}},
			want: cat(
				[]byte{0x70, 0xF2},                                     // VL 7; SL 15, LNH 2
				[]byte{0xBF, 0xFF, 0x00, 0x0C},                         // DLID; PktLen 12
				[]byte{0x01, 0x00},                                     // SLID
				[]byte{0x0B, 0x00, 0xFF, 0xFF},                         // RDMA_WRITE_ONLY_WITH_IMMEDIATE; PadCnt 0; P_Key
				[]byte{0x40, 0x00, 0x00, 0x01},                         // BECN 1 (bit 6); DestQP 1
				[]byte{0x00, 0x80, 0x00, 0x00},                         // PSN 0x800000
				[]byte{0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00}, // RETH VA
				[]byte{0xCA, 0xFE, 0xBA, 0xBE, 0x00, 0x00, 0x00, 0x04}, // R_Key, DMA length 4
				[]byte{0x12, 0x34, 0x56, 0x78},                         // ImmDt
				[]byte{0xDE, 0xAD, 0xBE, 0xEF},
			),
		},
		{
			// 8 + 12 + AETH 4 + 4 + 2 = 30; PktLen 7.
			name: "ACKNOWLEDGE with AETH",
			pkt: Packet{VL: 1, SL: 1, DLID: 2, SLID: 1, Opcode: Acknowledge, DestQP: 0x10, PSN: 5,
				AETH: AETH{Syndrome: 0x1F, MSN: 0x00ABCD}},
			want: cat(
				[]byte{0x10, 0x12, 0x00, 0x02, 0x00, 0x07, 0x00, 0x01}, // VL 1; SL 1 LNH 2; DLID 2; PktLen 7; SLID 1
				[]byte{0x11, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x05},
				[]byte{0x1F, 0x00, 0xAB, 0xCD}, // AETH: syndrome 0x1F (ACK, unlimited credits), MSN
			),
		},
		{
			// 8 + 12 + AtomicETH 28 + 4 + 2 = 54; PktLen 13.
			name: "FETCH_ADD with AtomicETH",
			pkt: Packet{DLID: 3, SLID: 4, Opcode: FetchAdd, AckReq: true, DestQP: 0x123456, PSN: 0x654321,
				Atomic: AtomicETH{VA: 0x00007F0000000008, RKey: 0x100, SwapAdd: 1, Compare: 0x0A0B0C0D0E0F1011}},
			want: cat(
				[]byte{0x00, 0x02, 0x00, 0x03, 0x00, 0x0D, 0x00, 0x04},
				[]byte{0x14, 0x00, 0xFF, 0xFF, 0x00, 0x12, 0x34, 0x56, 0x80, 0x65, 0x43, 0x21}, // AckReq bit 7 of byte 8
				[]byte{0x00, 0x00, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x08},                         // VA
				[]byte{0x00, 0x00, 0x01, 0x00},                                                 // R_Key
				[]byte{0, 0, 0, 0, 0, 0, 0, 0x01},                                              // SwapAdd
				[]byte{0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11},                         // Compare
			),
		},
		{
			// 8 + 12 + AETH 4 + AtomicAckETH 8 + 4 + 2 = 38; PktLen 9.
			name: "ATOMIC_ACKNOWLEDGE: AETH then AtomicAckETH",
			pkt: Packet{DLID: 4, SLID: 3, Opcode: AtomicAcknowledge, DestQP: 7, PSN: 9,
				AETH: AETH{Syndrome: 0x00, MSN: 1}, AtomicAck: 0x8877665544332211},
			want: cat(
				[]byte{0x00, 0x02, 0x00, 0x04, 0x00, 0x09, 0x00, 0x03},
				[]byte{0x12, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x09},
				[]byte{0x00, 0x00, 0x00, 0x01},                         // AETH
				[]byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}, // original remote value
			),
		},
		{
			// 8 + 12 + DETH 8 + payload 3 + pad 1 + 4 + 2 = 38; PktLen 9.
			name: "UD SEND_ONLY with DETH, PadCnt 1",
			pkt: Packet{DLID: 5, SLID: 6, Opcode: UDSendOnly, DestQP: 1, PSN: 0,
				DETH: DETH{QKey: 0x80000000, SrcQP: 2}, PayloadLen: 3, Payload: []byte("abc")},
			want: cat(
				[]byte{0x00, 0x02, 0x00, 0x05, 0x00, 0x09, 0x00, 0x06},
				[]byte{0x64, 0x10, 0xFF, 0xFF}, // UD_SEND_ONLY; PadCnt 1 (bits 5:4)
				[]byte{0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00},
				[]byte{0x80, 0x00, 0x00, 0x00}, // Q_Key
				[]byte{0x00, 0x00, 0x00, 0x02}, // rsv 8, SrcQP 2
				[]byte("abc"), []byte{0},
			),
		},
		{
			// 8 + GRH 40 + 12 + payload 4 + 4 + 2 = 70; PktLen 17;
			// GRH PayLen = BTH 12 + payload 4 + ICRC 4 = 20.
			name: "SEND_ONLY with GRH",
			grh:  true,
			pkt: Packet{VL: 3, SL: 4, GRH: true, DLID: 0x10, SLID: 0x20, Opcode: SendOnly, DestQP: 0x100, PSN: 1,
				PayloadLen: 4, Payload: []byte{1, 2, 3, 4}},
			want: cat(
				[]byte{0x30, 0x43},             // VL 3; SL 4, LNH 3 = GRH next
				[]byte{0x00, 0x10, 0x00, 0x11}, // DLID; PktLen 17
				[]byte{0x00, 0x20},             // SLID
				[]byte{0x60, 0x00, 0x00, 0x00}, // IPVer 6, TClass 0, FlowLabel 0
				[]byte{0x00, 0x14, 0x1B, 0xFF}, // PayLen 20, NxtHdr 0x1B, HopLmt 0xFF
				[]byte{0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x20}, // SGID fe80::SLID
				[]byte{0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x10}, // DGID fe80::DLID
				[]byte{0x04, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01},
				[]byte{1, 2, 3, 4},
			),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := append(tc.want, le32(icrcByHand(tc.want, tc.grh))...)
			want = append(want, le16(vcrcBitSerial(want))...)
			got := AppendWire(nil, &tc.pkt)
			assert.Equal(t, want, got)
			assert.Len(t, got, tc.pkt.WireBytes())
			assert.Equal(t, tc.pkt.PktLen(), (len(got)-VCRCBytes)/4)

			// Appending keeps what dst held.
			prefix := []byte{0xAA, 0xBB}
			got = AppendWire(append([]byte(nil), prefix...), &tc.pkt)
			assert.Equal(t, append(prefix, want...), got)
		})
	}
}

// TestAppendWireFlowControl: FCTBS 0xABC, VL 5, FCCL 0x123 is
// Op 0 | FCTBS = 0x0ABC, VL 5 | FCCL = 0x5123, then the LPCRC of those 4 bytes.
func TestAppendWireFlowControl(t *testing.T) {
	p := Packet{Kind: FlowControl, VL: 5, FCTBS: 0xABC, FCCL: 0x123}
	head := []byte{0x0A, 0xBC, 0x51, 0x23}
	got := AppendWire(nil, &p)
	assert.Equal(t, append(head, le16(vcrcBitSerial(head))...), got)
	assert.Len(t, got, FlowControlBytes)

	back, err := ParseWire(got)
	require.NoError(t, err)
	assert.Equal(t, Packet{Kind: FlowControl, VL: 5, FCTBS: 0xABC, FCCL: 0x123, VCRC: vcrcBitSerial(head)}, back)
}

// TestVCRCTableMatchesBitSerial: the table-driven VCRC equals the bit-serial
// division for every single byte and for random messages.
func TestVCRCTableMatchesBitSerial(t *testing.T) {
	for x := range 256 {
		assert.Equal(t, vcrcBitSerial([]byte{byte(x)}), variantCRC([]byte{byte(x)}), "byte 0x%02x", x)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 200 {
		b := make([]byte, rng.IntN(300))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		assert.Equal(t, vcrcBitSerial(b), variantCRC(b))
	}
}

// TestCRCResidues: no published VCRC value exists (see wire.go), so this
// checks the property every CRC of this form has: the CRC of a packet followed
// by its own CRC, in wire byte order, is one constant whatever the packet.
// Feeding the 2 bytes of ^r, least significant first, into a register holding r
// leaves the same register as feeding FF FF into a zero register; the VCRC
// residue is that register, inverted and reflected as vcrcBitSerial returns
// it, computed bit by bit here. For the CRC-32 the constant is published: the
// register holds 0xDEBB20E3 (RFC 1662 PPPGOODFCS32, the "good final FCS
// value"), so crc32.ChecksumIEEE, which inverts it, returns ^0xDEBB20E3. Both
// hold only if the CRC bytes go least significant byte first.
func TestCRCResidues(t *testing.T) {
	r := uint16(0)
	for range 16 { // 16 one bits into a zero register
		out := r >> 15
		r <<= 1
		if 1^out != 0 {
			r ^= 0x100B
		}
	}
	vcrcResidue := bits.Reverse16(^r)

	rng := rand.New(rand.NewPCG(11, 13))
	for _, op := range []Opcode{SendOnly, RDMAWriteOnlyImm, Acknowledge, UDSendOnly} {
		for _, grh := range []bool{false, true} {
			p := randomPacket(rng, op)
			p.GRH = grh
			b := AppendWire(nil, &p)
			assert.Equal(t, vcrcResidue, variantCRC(b), "%s grh=%v: VCRC residue", op, grh)
			assert.Equal(t, vcrcResidue, vcrcBitSerial(b), "%s grh=%v: VCRC residue, bit-serial", op, grh)

			// The ICRC residue over the packet through the ICRC, variant
			// fields as ones (the offsets of icrcByHand).
			m := append([]byte(nil), b[:len(b)-VCRCBytes]...)
			if grh {
				copy(m, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
				m[8] |= 0x0F
				m[9], m[10], m[11], m[15], m[52] = 0xFF, 0xFF, 0xFF, 0xFF, 0xFF
			} else {
				m[0] |= 0xF0
				m[12] = 0xFF
			}
			assert.Equal(t, ^uint32(0xDEBB20E3), crc32.ChecksumIEEE(m), "%s grh=%v: ICRC residue", op, grh)
		}
	}
}

// TestICRCMaskedLRHSeed: rxe_icrc.c starts the RoCE ICRC from 0xdebb20e3,
// "the result of computing a CRC with a seed of 0xffffffff and 8 bytes of 0xff
// representing a masked LRH". A global packet's LRH, whatever it holds, must
// leave that register (invariantCRC returns it inverted).
func TestICRCMaskedLRHSeed(t *testing.T) {
	for _, lrh := range [][]byte{make([]byte, 8), {0x30, 0x43, 0x00, 0x10, 0x00, 0x11, 0x00, 0x20}} {
		assert.Equal(t, uint32(0xdebb20e3), ^invariantCRC(lrh, icrcGlobalMask[:LRHBytes]))
	}
}

// TestICRCConnectX4Capture: a RoCEv2 CNP captured on a ConnectX-4 Lx, from
// scapy test/contrib/roce.uts ("RoCE CNP captured on ConnectX-4 Lx"), without
// its 14-byte Ethernet header:
//
//	IPv4 45 c2 003c 718c 4000 40 11 9161 0a001101 0a001201
//	UDP  0000 12b7 0028 0000
//	BTH  81 00 ffff 40 000118 00 000000, then 16 reserved zero bytes
//	ICRC 82 fd 00 2a
//
// RoCEv2 computes the IBA ICRC of a global packet with the IPv4 and UDP headers
// in the place of the GRH (IBA Annex A17; rxe_icrc.c): the LRH that is not
// there as 8 bytes of ones (our global LRH mask), IPv4 TOS (byte 1), TTL (8)
// and checksum (10-11) as ones, UDP checksum (6-7) as ones, BTH resv8a as ones.
// The hardware's bytes confirm the CRC-32, the masked LRH, the inverted result
// and the least-significant-byte-first order of the ICRC field.
func TestICRCConnectX4Capture(t *testing.T) {
	pkt := cat(
		make([]byte, 8), // the LRH RoCE does not carry; masked to ones
		[]byte{0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61,
			0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01},
		[]byte{0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00},
		[]byte{0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00},
		make([]byte, 16),
	)
	mask := make([]byte, 8+20+8+12)
	copy(mask, icrcGlobalMask[:LRHBytes])
	ip, udp, bth := mask[8:28], mask[28:36], mask[36:48]
	ip[1], ip[8], ip[10], ip[11] = 0xFF, 0xFF, 0xFF, 0xFF
	udp[6], udp[7] = 0xFF, 0xFF
	bth[4] = 0xFF

	var wire [4]byte
	putICRC(wire[:], invariantCRC(pkt, mask))
	assert.Equal(t, [4]byte{0x82, 0xfd, 0x00, 0x2a}, wire)
}

// randomPacket returns a data packet with opcode op and every field random
// (those op does not carry too), a payload the opcode allows, and a Payload
// slice that is nil, short, exact or long.
func randomPacket(rng *rand.Rand, op Opcode) Packet {
	p := Packet{
		Kind: Data, VL: uint8(rng.IntN(16)), SL: uint8(rng.IntN(16)), GRH: rng.IntN(2) == 0,
		DLID: uint16(rng.Uint32()), SLID: uint16(rng.Uint32()), Opcode: op,
		SE: rng.IntN(2) == 0, AckReq: rng.IntN(2) == 0, FECN: rng.IntN(2) == 0, BECN: rng.IntN(2) == 0,
		DestQP: rng.Uint32() & 0xFFFFFF, PSN: rng.Uint32() & 0xFFFFFF,
		RETH:      RETH{VA: rng.Uint64(), RKey: rng.Uint32(), Length: rng.Uint32()},
		AETH:      AETH{Syndrome: uint8(rng.Uint32()), MSN: rng.Uint32() & 0xFFFFFF},
		Atomic:    AtomicETH{VA: rng.Uint64(), RKey: rng.Uint32(), SwapAdd: rng.Uint64(), Compare: rng.Uint64()},
		AtomicAck: rng.Uint64(), Imm: rng.Uint32(), IETH: rng.Uint32(),
		DETH: DETH{QKey: rng.Uint32(), SrcQP: rng.Uint32() & 0xFFFFFF},
		Seq:  rng.Uint64(), ICRC: rng.Uint32(), VCRC: uint16(rng.Uint32()), // model fields: not on the wire
	}
	if op.Headers()&HasPayload != 0 {
		p.PayloadLen = rng.IntN(4097)
		n := 0
		switch rng.IntN(4) {
		case 0: // nil: synthetic traffic
			return p
		case 1:
			n = rng.IntN(p.PayloadLen + 1)
		case 2:
			n = p.PayloadLen
		case 3:
			n = p.PayloadLen + 1 + rng.IntN(8)
		}
		p.Payload = make([]byte, n)
		for i := range p.Payload {
			p.Payload[i] = byte(rng.Uint32())
		}
	}
	return p
}

// wireFields is what ParseWire gives back for p: the wire fields, the
// extension headers op does not carry zero, and no payload, ICRC or VCRC
// (checked apart).
func wireFields(p Packet) Packet {
	w := Packet{Kind: p.Kind, VL: p.VL, SL: p.SL, GRH: p.GRH, DLID: p.DLID, SLID: p.SLID, Opcode: p.Opcode,
		SE: p.SE, AckReq: p.AckReq, FECN: p.FECN, BECN: p.BECN, DestQP: p.DestQP, PSN: p.PSN, PayloadLen: p.PayloadLen}
	hs := p.Opcode.Headers()
	if hs&HasRETH != 0 {
		w.RETH = p.RETH
	}
	if hs&HasAETH != 0 {
		w.AETH = p.AETH
	}
	if hs&HasAtomicETH != 0 {
		w.Atomic = p.Atomic
	}
	if hs&HasAtomicAckETH != 0 {
		w.AtomicAck = p.AtomicAck
	}
	if hs&HasImmDt != 0 {
		w.Imm = p.Imm
	}
	if hs&HasIETH != 0 {
		w.IETH = p.IETH
	}
	if hs&HasDETH != 0 {
		w.DETH = p.DETH
	}
	return w
}

// TestWireRoundTrip: ParseWire(AppendWire(p)) gives back p's wire fields for
// every opcode the model knows, with random field values from a fixed seed;
// the payload is p.Payload's first PayloadLen bytes and zeros after them; the
// ICRC and VCRC read back are the independent computations of the bytes.
func TestWireRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := 0
	var buf []byte
	for op := range 256 {
		if !Opcode(op).Valid() {
			continue
		}
		ops++
		for range 40 {
			p := randomPacket(rng, Opcode(op))
			buf = AppendWire(buf[:0], &p)
			require.Len(t, buf, p.WireBytes())
			got, err := ParseWire(buf)
			require.NoError(t, err, "%s", Opcode(op))

			payload := got.Payload
			icrc, vcrc := got.ICRC, got.VCRC
			got.Payload, got.ICRC, got.VCRC = nil, 0, 0
			require.Equal(t, wireFields(p), got, "%s", Opcode(op))

			want := make([]byte, p.PayloadLen)
			copy(want, p.Payload)
			require.Equal(t, want, []byte(payload), "%s payload", Opcode(op))
			end := len(buf) - VCRCBytes - ICRCBytes
			require.Equal(t, icrcByHand(buf[:end], p.GRH), icrc, "%s ICRC", Opcode(op))
			require.Equal(t, vcrcBitSerial(buf[:end+ICRCBytes]), vcrc, "%s VCRC", Opcode(op))
		}
	}
	assert.Equal(t, 26, ops, "opcodes in opTable") // 23 RC, 2 UD, CNP

	for range 200 {
		p := Packet{Kind: FlowControl, VL: uint8(rng.IntN(16)), FCTBS: uint16(rng.IntN(4096)), FCCL: uint16(rng.IntN(4096))}
		got, err := ParseWire(AppendWire(nil, &p))
		require.NoError(t, err)
		got.VCRC = 0
		require.Equal(t, p, got)
	}
}

// resealVCRC rewrites b's VCRC (its last 2 bytes) for its other bytes, as a
// switch does after it changes a variant field, with the test's own VCRC.
func resealVCRC(b []byte) {
	copy(b[len(b)-2:], le16(vcrcBitSerial(b[:len(b)-2])))
}

// TestParseWireVariantFieldsOutsideICRC: a switch rewrites the VL and may set
// FECN and recompute only the VCRC; the ICRC still holds and ParseWire reads
// the new values. The same for a GRH packet's TClass, FlowLabel and HopLmt.
func TestParseWireVariantFieldsOutsideICRC(t *testing.T) {
	p := Packet{VL: 2, SL: 5, DLID: 0x12, SLID: 0x34, Opcode: SendOnly, DestQP: 0x102, PSN: 0xA0B,
		PayloadLen: 5, Payload: []byte("hello")}
	b := AppendWire(nil, &p)
	b[0] = 0x90 | b[0]&0x0F // VL 2 -> 9
	b[12] |= 0x80           // FECN (BTH byte 4)
	resealVCRC(b)
	got, err := ParseWire(b)
	require.NoError(t, err)
	assert.Equal(t, uint8(9), got.VL)
	assert.True(t, got.FECN)

	p.GRH = true
	b = AppendWire(nil, &p)
	b[1] = 0xE0 | b[1]&0x0F                           // a router's new SL 14 (the whole LRH is variant)
	b[8], b[9], b[10], b[11] = 0x6A, 0xBC, 0xDE, 0xF1 // TClass 0xAB, FlowLabel 0xCDEF1
	b[15] = 0x3F                                      // HopLmt
	resealVCRC(b)
	got, err = ParseWire(b)
	require.NoError(t, err)
	assert.Equal(t, uint8(14), got.SL)
}

// TestParseWireRejects: each damaged packet is refused with an error naming the
// offset. The base packet is the 34-byte SEND_ONLY of TestAppendWireHeaders:
// LRH 0-7, BTH 8-19 (opcode at 8), payload 20-24, pad 25-27, ICRC 28-31,
// VCRC 32-33.
func TestParseWireRejects(t *testing.T) {
	base := Packet{VL: 2, SL: 5, DLID: 0x12, SLID: 0x34, Opcode: SendOnly, DestQP: 0x102, PSN: 0xA0B,
		PayloadLen: 5, Payload: []byte("hello")}
	grh := base
	grh.GRH = true // 74 bytes: LRH 0-7, GRH 8-47 (PayLen at 12), BTH 48-59, ...
	tests := []struct {
		name   string
		pkt    *Packet
		damage func([]byte) []byte
		want   string
	}{
		{"flipped payload bit", &base, func(b []byte) []byte { b[20] ^= 1; return b },
			"offset 32: bad VCRC"},
		{"flipped LRH bit", &base, func(b []byte) []byte { b[3] ^= 0x40; return b },
			"offset 32: bad VCRC"},
		{"payload bit flipped before the VCRC was computed", &base,
			func(b []byte) []byte { b[21] ^= 0x80; resealVCRC(b); return b },
			"offset 28: bad ICRC"},
		{"SLID changed before the VCRC", &base,
			func(b []byte) []byte { b[7] ^= 1; resealVCRC(b); return b },
			"offset 28: bad ICRC"},
		{"truncated by 4 bytes", &base, func(b []byte) []byte { return b[:30] },
			"offset 30: short buffer"},
		{"truncated inside the LRH", &base, func(b []byte) []byte { return b[:5] },
			"offset 5: short buffer"},
		{"2 bytes too many", &base, func(b []byte) []byte { return append(b, 0, 0) },
			"offset 4: LRH PktLen 8 words (34 bytes with the VCRC) disagrees with the 36-byte buffer"},
		{"PktLen 7 for 8 words", &base, func(b []byte) []byte { b[5] = 7; return b },
			"offset 4: LRH PktLen 7 words (30 bytes with the VCRC) disagrees with the 34-byte buffer"},
		{"PktLen 9 for 8 words", &base, func(b []byte) []byte { b[5] = 9; return b },
			"offset 34: short buffer: LRH PktLen 9 words makes 38 bytes"},
		{"LNH 0 (raw)", &base, func(b []byte) []byte { b[1] &^= 3; return b },
			"offset 1: LRH LNH 0 is not BTH next (2) or GRH next (3)"},
		{"unknown opcode 0x1F", &base, func(b []byte) []byte { b[8] = 0x1F; resealVCRC(b); return b },
			"offset 8: BTH opcode 0x1f is not one the model knows"},
		// PayLen = BTH 12 + payload 5 + pad 3 + ICRC 4 = 24; damaged to 28.
		{"GRH PayLen off by 4", &grh, func(b []byte) []byte { b[13] += 4; resealVCRC(b); return b },
			"offset 12: GRH PayLen 28 disagrees with the 24 bytes from the BTH through the ICRC"},
		{"flow control, flipped FCCL bit", &Packet{Kind: FlowControl, VL: 1, FCTBS: 5, FCCL: 9},
			func(b []byte) []byte { b[3] ^= 2; return b }, "offset 4: bad LPCRC"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := AppendWire(nil, tc.pkt)
			_, err := ParseWire(b)
			require.NoError(t, err, "undamaged")
			_, err = ParseWire(tc.damage(b))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestAppendWirePanicsPastPktLen: a 9,000-byte payload needs more than the
// 2,047 words the 11-bit PktLen holds.
func TestAppendWirePanicsPastPktLen(t *testing.T) {
	p := Packet{Opcode: SendOnly, PayloadLen: 9000}
	assert.Panics(t, func() { AppendWire(nil, &p) })
}

// TestAppendWireAllocs: with a dst that has room, AppendWire does not allocate
// (the pcap writer reuses one buffer), with and without a GRH and payload bytes.
func TestAppendWireAllocs(t *testing.T) {
	buf := make([]byte, 0, 8192)
	pkts := []Packet{
		{Opcode: RDMAWriteOnlyImm, GRH: true, PayloadLen: 4096, Payload: make([]byte, 4096)},
		{Opcode: RDMAWriteMiddle, PayloadLen: 4096},
		{Opcode: Acknowledge},
		{Kind: FlowControl, FCTBS: 1, FCCL: 2},
	}
	for i := range pkts {
		assert.Zero(t, testing.AllocsPerRun(100, func() { buf = AppendWire(buf[:0], &pkts[i]) }), "packet %d", i)
	}
	b := AppendWire(nil, &pkts[0])
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = ParseWire(b) }), "ParseWire")
}

// BenchmarkAppendWire: a 4 KiB RDMA WRITE MIDDLE with its bytes, into a reused
// buffer (the ICRC and VCRC over 4,122 bytes dominate).
func BenchmarkAppendWire(b *testing.B) {
	p := Packet{VL: 1, SL: 1, DLID: 2, SLID: 3, Opcode: RDMAWriteMiddle, PayloadLen: 4096, Payload: make([]byte, 4096)}
	buf := make([]byte, 0, p.WireBytes())
	b.ReportAllocs()
	b.SetBytes(int64(p.WireBytes()))
	for b.Loop() {
		buf = AppendWire(buf[:0], &p)
	}
}

// FuzzParseWire: ParseWire never panics, whatever the bytes, and a packet it
// accepts re-encodes to the same length (its fields account for every byte).
// The seeds are AppendWire's bytes for every opcode, with and without a GRH,
// and a flow-control packet; go test runs them, go test -fuzz explores.
func FuzzParseWire(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for op := range 256 {
		if Opcode(op).Valid() {
			p := randomPacket(rng, Opcode(op))
			p.PayloadLen = min(p.PayloadLen, 64) // small seeds
			f.Add(AppendWire(nil, &p))
		}
	}
	f.Add(AppendWire(nil, &Packet{Kind: FlowControl, VL: 3, FCTBS: 100, FCCL: 200}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseWire(b)
		if err != nil {
			return
		}
		if len(p.Payload) != p.PayloadLen {
			t.Fatalf("Payload has %d bytes, PayloadLen %d", len(p.Payload), p.PayloadLen)
		}
		if n := len(AppendWire(nil, &p)); n != len(b) {
			t.Fatalf("accepted %d bytes, re-encodes to %d", len(b), n)
		}
	})
}

// TestVCRCExported: VCRC (the helper the RTL co-simulation uses) gives the 2
// bytes AppendWire writes after the bytes it covers, for data packets of every
// opcode and for flow-control packets, and the bit-serial division's value.
func TestVCRCExported(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for op := range 256 {
		if !Opcode(op).Valid() {
			continue
		}
		p := randomPacket(rng, Opcode(op))
		b := AppendWire(nil, &p)
		n := len(b) - VCRCBytes
		assert.Equal(t, le16(VCRC(b[:n])), b[n:], "%s", Opcode(op))
		assert.Equal(t, vcrcBitSerial(b[:n]), VCRC(b[:n]), "%s", Opcode(op))
	}
	fc := Packet{Kind: FlowControl, VL: 3, FCTBS: 0x5A5, FCCL: 0xFFF}
	b := AppendWire(nil, &fc)
	assert.Equal(t, le16(VCRC(b[:4])), b[4:])
}

// TestICRCExported: ICRC (the helper the RTL co-simulation uses) gives the 4
// bytes AppendWire writes before the VCRC, for local and global packets of
// every opcode; a prefix shorter than the mask is masked as far as it goes
// (the masked bytes read as ones, the rest of the mask unused).
func TestICRCExported(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	for op := range 256 {
		if !Opcode(op).Valid() {
			continue
		}
		for _, grh := range []bool{false, true} {
			p := randomPacket(rng, Opcode(op))
			p.GRH = grh
			b := AppendWire(nil, &p)
			n := len(b) - VCRCBytes - ICRCBytes
			assert.Equal(t, b[n:n+ICRCBytes], binary.LittleEndian.AppendUint32(nil, ICRC(b[:n])), "%s grh %v", Opcode(op), grh)
		}
	}
	p := Packet{Opcode: SendOnly, GRH: true, PayloadLen: 40}
	b := AppendWire(nil, &p)
	short := slices.Clone(b[:24]) // LRH and the GRH's first 16 bytes
	for i, m := range icrcGlobalMask[:24] {
		short[i] |= m
	}
	assert.Equal(t, crc32.ChecksumIEEE(short), ICRC(b[:24]))
	assert.Equal(t, uint32(0), ICRC(nil)) // nothing covered: the seed inverted back
}
