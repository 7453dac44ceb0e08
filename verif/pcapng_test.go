package verif

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// fakeWire stands in for ib.AppendWire: six bytes that name the packet, so
// the test can say which packet a block holds.
func fakeWire(dst []byte, p *ib.Packet) []byte {
	return append(dst, 0xA0, byte(p.Seq), 2, 3, 4, 5)
}

func pcapEvent(r *PcapRecorder, t ib.PS, path string, kind components.TraceKind, pkt *ib.Packet) {
	ev := &components.TraceEvent{Time: t, Path: path, Kind: kind, Pkt: pkt}
	r.Func(sim.HookCtx{Pos: components.HookPosTrace, Item: ev})
}

// pcapBlock is one block as the test's own reader splits a file.
type pcapBlock struct {
	typ  uint32
	body []byte
}

// readPcapBlocks splits a little-endian pcapng file into blocks, checking
// that each block's trailing length repeats its leading one.
func readPcapBlocks(t *testing.T, b []byte) []pcapBlock {
	t.Helper()
	var out []pcapBlock
	for len(b) > 0 {
		require.GreaterOrEqual(t, len(b), 12)
		typ := binary.LittleEndian.Uint32(b)
		n := int(binary.LittleEndian.Uint32(b[4:]))
		require.Zero(t, n%4, "block length %d", n)
		require.LessOrEqual(t, n, len(b))
		require.Equal(t, uint32(n), binary.LittleEndian.Uint32(b[n-4:]), "trailing length")
		out = append(out, pcapBlock{typ: typ, body: b[8 : n-4]})
		b = b[n:]
	}
	return out
}

// pcapOptions parses an options list into code → value.
func pcapOptions(t *testing.T, b []byte) map[uint16][]byte {
	t.Helper()
	m := map[uint16][]byte{}
	for {
		require.GreaterOrEqual(t, len(b), 4)
		code, n := binary.LittleEndian.Uint16(b), int(binary.LittleEndian.Uint16(b[2:]))
		if code == 0 {
			return m
		}
		m[code] = b[4 : 4+n]
		b = b[4+(n+3)/4*4:]
	}
}

// TestPcapngLayout: the section header, one interface per port in the
// order given, and the packets of those ports' tx_start events only, each
// Enhanced Packet Block byte for byte as the pcapng draft lays it out.
func TestPcapngLayout(t *testing.T) {
	var buf bytes.Buffer
	r := NewPcapRecorder(&buf, "run X", []PcapPort{
		{Name: "Fabric.Leaf[0].Port[1]", Description: "to Fabric.Host[3].Port", SpeedBps: 400_000_000_000},
		{Name: "Fabric.Host[3].Port"},
	}, 0, fakeWire)
	pcapEvent(r, 1_234_567, "Fabric.Host[3].Port", components.TraceTxStart, &ib.Packet{Seq: 7})
	// Not captured: another kind, a port not listed, a flow-control packet, no packet.
	pcapEvent(r, 1_300_000, "Fabric.Host[3].Port", components.TraceRxHead, &ib.Packet{Seq: 8})
	pcapEvent(r, 1_300_000, "Fabric.Leaf[0].Port[2]", components.TraceTxStart, &ib.Packet{Seq: 9})
	pcapEvent(r, 1_300_000, "Fabric.Leaf[0].Port[1]", components.TraceTxStart, &ib.Packet{Kind: ib.FlowControl, Seq: 10})
	pcapEvent(r, 1_300_000, "Fabric.Leaf[0].Port[1]", components.TraceTxStart, nil)
	// 2^32 ps + 5: the timestamp's high word is 1.
	pcapEvent(r, 1<<32+5, "Fabric.Leaf[0].Port[1]", components.TraceTxStart, &ib.Packet{Seq: 0x11})
	require.NoError(t, r.Flush())
	assert.Equal(t, uint64(2), r.Packets())

	blocks := readPcapBlocks(t, buf.Bytes())
	require.Len(t, blocks, 5) // SHB, 2 IDBs, 2 EPBs
	shb := blocks[0]
	assert.Equal(t, uint32(0x0A0D0D0A), shb.typ)
	assert.Equal(t, []byte{0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0}, shb.body[:8], "byte-order magic, version 1.0")
	so := pcapOptions(t, shb.body[16:])
	assert.Equal(t, "run X", string(so[1]))
	assert.Equal(t, "hcasim", string(so[4]))

	for i, want := range []string{"Fabric.Leaf[0].Port[1]", "Fabric.Host[3].Port"} {
		idb := blocks[1+i]
		assert.Equal(t, uint32(1), idb.typ)
		assert.Equal(t, uint16(197), binary.LittleEndian.Uint16(idb.body), "LINKTYPE_ERF")
		assert.Equal(t, uint32(0), binary.LittleEndian.Uint32(idb.body[4:]), "snaplen 0: whole packets")
		o := pcapOptions(t, idb.body[8:])
		assert.Equal(t, want, string(o[2]))
		assert.Equal(t, []byte{12}, o[9], "if_tsresol 10^-12: picoseconds")
		if i == 0 {
			assert.Equal(t, "to Fabric.Host[3].Port", string(o[3]))
			assert.Equal(t, uint64(400e9), binary.LittleEndian.Uint64(o[8]))
		} else {
			assert.NotContains(t, o, uint16(3))
			assert.NotContains(t, o, uint16(8))
		}
	}

	// The first packet's block, derived field by field: type 6; body =
	// interface 1 (the second port), timestamp 1,234,567 ps = 0x0012D687
	// (high word 0), captured and original length 16 + 6 = 22 (the ERF
	// header and the packet), the ERF record: timestamp 0 s and
	// ⌊1,234,567 × 2^32 / 10^12⌋ = ⌊5302.36⌋ = 5302 = 0x14B6 of a second
	// (little-endian), type 21 (INFINIBAND), flags 0, rlen 22, loss 0,
	// wlen 6 (big-endian), the six bytes and two of padding; epb_flags
	// (code 2, length 4) = 2 (outbound), epb_packetid (code 5, length 8) =
	// seq 7, end of options: 4+8+4+4+24+8+12+4 = 68 bytes, so the block is
	// 68 + 12 = 80 bytes.
	want := []byte{
		0x06, 0, 0, 0, 80, 0, 0, 0,
		1, 0, 0, 0,
		0, 0, 0, 0, 0x87, 0xD6, 0x12, 0x00,
		22, 0, 0, 0, 22, 0, 0, 0,
		0xB6, 0x14, 0, 0, 0, 0, 0, 0, 21, 0, 0, 22, 0, 0, 0, 6,
		0xA0, 7, 2, 3, 4, 5, 0, 0,
		2, 0, 4, 0, 2, 0, 0, 0,
		5, 0, 8, 0, 7, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0,
		80, 0, 0, 0,
	}
	all := buf.Bytes()
	second := blocks[4].body
	assert.Equal(t, want, all[len(all)-12-len(second)-80:len(all)-12-len(second)])
	assert.Equal(t, uint32(0), binary.LittleEndian.Uint32(second), "interface 0")
	assert.Equal(t, uint32(1), binary.LittleEndian.Uint32(second[4:]), "2^32 ps: high word 1")
	assert.Equal(t, uint32(5), binary.LittleEndian.Uint32(second[8:]), "low word 5")
	// ERF: 2^32 + 5 ps is 0 s and (2^32 + 5) × 2^32 / 10^12 of a second,
	// computed here with big integers.
	frac := new(big.Int).Lsh(big.NewInt(1<<32+5), 32)
	frac.Div(frac, big.NewInt(1e12))
	assert.Equal(t, frac.Uint64(), binary.LittleEndian.Uint64(second[20:]))
	assert.Equal(t, byte(0x11), second[37], "the packet's own bytes")
}

// TestPcapngSnaplen: a snaplen cuts each packet's captured bytes and keeps
// its original length, and the interfaces say so.
func TestPcapngSnaplen(t *testing.T) {
	var buf bytes.Buffer
	r := NewPcapRecorder(&buf, "", []PcapPort{{Name: "P"}}, 4, fakeWire)
	pcapEvent(r, 10, "P", components.TraceTxStart, &ib.Packet{Seq: 1})
	require.NoError(t, r.Flush())
	blocks := readPcapBlocks(t, buf.Bytes())
	require.Len(t, blocks, 3)
	assert.Equal(t, uint32(20), binary.LittleEndian.Uint32(blocks[1].body[4:]), "IDB snaplen: 16 of ERF header + 4")
	epb := blocks[2].body
	assert.Equal(t, uint32(20), binary.LittleEndian.Uint32(epb[12:]), "captured: ERF header + 4")
	assert.Equal(t, uint32(22), binary.LittleEndian.Uint32(epb[16:]), "original: ERF header + 6")
	assert.Equal(t, []byte{0, 20, 0, 0, 0, 6}, epb[20+10:20+16], "ERF rlen 20, loss 0, wlen 6")
	assert.Equal(t, []byte{0xA0, 1, 2, 3}, epb[36:40])
	assert.Equal(t, uint16(2), binary.LittleEndian.Uint16(epb[40:]), "options follow the 20 bytes, no padding")
}

// TestPcapngWriteError: a write that fails is reported by Flush, and the
// recorder stops writing.
func TestPcapngWriteError(t *testing.T) {
	r := NewPcapRecorder(failingWriter{}, "", []PcapPort{{Name: "P"}}, 0, fakeWire)
	for i := range 5000 { // more than the 64 KiB buffer holds
		pcapEvent(r, ib.PS(i), "P", components.TraceTxStart, &ib.Packet{Seq: uint64(i)})
	}
	assert.EqualError(t, r.Flush(), "disk full")
}

// TestPcapngCorruptComment: a packet the wire corrupts carries a packet
// comment saying so after its flags and ID; a good one carries none.
func TestPcapngCorruptComment(t *testing.T) {
	var buf bytes.Buffer
	r := NewPcapRecorder(&buf, "", []PcapPort{{Name: "P"}}, 0, fakeWire)
	r.Func(sim.HookCtx{Pos: components.HookPosTrace, Item: &components.TraceEvent{Time: 1, Path: "P",
		Kind: components.TraceTxStart, Pkt: &ib.Packet{Seq: 1}, Corrupt: true}})
	pcapEvent(r, 2, "P", components.TraceTxStart, &ib.Packet{Seq: 2})
	require.NoError(t, r.Flush())
	blocks := readPcapBlocks(t, buf.Bytes())
	require.Len(t, blocks, 4)
	// Options start after the 20-byte fixed part and the 16 + 6 bytes of
	// the ERF record padded to 24.
	bad, good := pcapOptions(t, blocks[2].body[44:]), pcapOptions(t, blocks[3].body[44:])
	assert.Equal(t, "corrupted on the wire (link.ber): the receiver discards it at its tail", string(bad[1]))
	assert.NotContains(t, good, uint16(1))
	assert.Equal(t, []byte{2, 0, 0, 0}, good[2], "outbound")
}
