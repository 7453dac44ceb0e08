package ib

import (
	"hash/crc32"
)

// ComputeICRC computes the end-to-end CRC a source stamps on a packet:
// CRC-32 over the invariant header fields (SL, LIDs, opcode, QP, PSN, payload
// length) and the payload bytes when present. Per-hop fields (VL) are left out
// as the IBA ICRC leaves them out, so a checker at the destination can tell a
// corrupted packet from a forwarded one.
func ComputeICRC(p *Packet) uint32 {
	var b [20]byte
	b[0] = p.SL
	b[1] = byte(p.DLID >> 8)
	b[2] = byte(p.DLID)
	b[3] = byte(p.SLID >> 8)
	b[4] = byte(p.SLID)
	b[5] = byte(p.Opcode)
	b[6] = byte(p.DestQP >> 16)
	b[7] = byte(p.DestQP >> 8)
	b[8] = byte(p.DestQP)
	b[9] = byte(p.PSN >> 16)
	b[10] = byte(p.PSN >> 8)
	b[11] = byte(p.PSN)
	n := uint32(p.PayloadLen)
	b[12], b[13], b[14], b[15] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	s := p.Seq
	b[16], b[17], b[18], b[19] = byte(s>>24), byte(s>>16), byte(s>>8), byte(s)
	// CRC-32 (IEEE, reflected, as crc32.ChecksumIEEE computes it) over b,
	// byte by byte from the table: passing b[:] to the crc32 package would
	// make b escape, one heap allocation per packet.
	c := ^uint32(0)
	for _, x := range b {
		c = crc32.IEEETable[byte(c)^x] ^ c>>8
	}
	c = ^c
	if len(p.Payload) > 0 {
		c = crc32.Update(c, crc32.IEEETable, p.Payload)
	}
	return c
}
