package ib

import (
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestComputeICRCHeaderCRC: the header CRC computed byte by byte from the
// table equals hash/crc32's CRC-32 of the same 20 header bytes (SL, DLID,
// SLID, opcode, QPN, PSN, payload length, sequence number, big-endian), with
// and without a payload.
func TestComputeICRCHeaderCRC(t *testing.T) {
	for i, p := range []Packet{
		{SL: 3, DLID: 0x1234, SLID: 0xBEEF, Opcode: SendOnly, DestQP: 0xABCDEF, PSN: 0x123456, PayloadLen: 1024, Seq: 0xDEADBEEF01},
		{SL: 0, DLID: 1, SLID: 2, Opcode: SendOnly, DestQP: 7, PSN: 0, PayloadLen: 0, Seq: 1},
		{SL: 15, DLID: 0xFFFF, SLID: 0xC000, Opcode: SendOnly, DestQP: 0xFFFFFF, PSN: 0xFFFFFF, PayloadLen: 4096, Seq: 1 << 40,
			Payload: []byte("payload bytes")},
	} {
		n, s := uint32(p.PayloadLen), p.Seq
		hdr := []byte{p.SL, byte(p.DLID >> 8), byte(p.DLID), byte(p.SLID >> 8), byte(p.SLID), byte(p.Opcode),
			byte(p.DestQP >> 16), byte(p.DestQP >> 8), byte(p.DestQP), byte(p.PSN >> 16), byte(p.PSN >> 8), byte(p.PSN),
			byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}
		want := crc32.ChecksumIEEE(hdr)
		if len(p.Payload) > 0 {
			want = crc32.Update(want, crc32.IEEETable, p.Payload)
		}
		assert.Equal(t, want, ComputeICRC(&p), "packet %d", i)
	}
}

// BenchmarkComputeICRC: one header-only ICRC; must not allocate.
func BenchmarkComputeICRC(b *testing.B) {
	p := Packet{SL: 3, DLID: 0x1234, SLID: 0xBEEF, Opcode: SendOnly, DestQP: 9, PSN: 5, PayloadLen: 1024, Seq: 77}
	b.ReportAllocs()
	var sink uint32
	for i := 0; i < b.N; i++ {
		p.Seq = uint64(i)
		sink ^= ComputeICRC(&p)
	}
	_ = sink
}

// TestDeferICRC: a deferred ICRC reads as the one ComputeICRC stamps, once
// computed stays (a later change to a covered field does not move it, as a
// stamp would not), and a reset packet carries no deferral.
func TestDeferICRC(t *testing.T) {
	p := &Packet{Kind: Data, SLID: 1, DLID: 2, Opcode: RDMAWriteOnly, DestQP: 0x11, PSN: 7, PayloadLen: 5, Seq: 3, Payload: []byte{1, 2, 3, 4, 5}}
	want := ComputeICRC(p)
	p.DeferICRC()
	assert.Zero(t, p.ICRC, "not computed before it is read")
	assert.Equal(t, want, p.SourceICRC())
	p.Payload[0] = 9
	assert.Equal(t, want, p.SourceICRC(), "computed once")
	p.DeferICRC()
	p.Reset()
	assert.Zero(t, p.SourceICRC(), "Reset clears the deferral")
}
