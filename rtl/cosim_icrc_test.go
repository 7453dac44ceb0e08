package rtl

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// ---- ib_icrc <-> ib.AppendWire, ib.ParseWire, ib.ICRC ----

// icrcField is some bits of one byte of a packet: in[byte] & mask.
type icrcField struct {
	byte int
	mask byte
}

// The variant fields, from IBA's definition of the ICRC as ib/wire.go
// records it (Shanley ch. 25; rxe_icrc.c): the bits a switch or router may
// rewrite in flight, which the ICRC reads as ones. Written here from the
// field layout (ib/wire.go's file comment), not copied from its masks;
// TestICRCVariantBits holds the two to each other.
var (
	// Local packet (LRH, BTH at byte 8): LRH.VL, the high nibble of byte 0
	// (a switch's SL-to-VL table moves it); BTH byte 4 (resv8a: FECN,
	// BECN, resv6: a congested switch sets FECN).
	icrcLocalVariant = []icrcField{{0, 0xF0}, {8 + 4, 0xFF}}
	// Global packet (LRH, GRH at 8, BTH at 48): the whole LRH (a router
	// rewrites it for the next subnet), GRH TClass (byte 0 low nibble,
	// byte 1 high nibble) and FlowLabel (byte 1 low nibble, bytes 2..3),
	// HopLmt (byte 7), BTH byte 4. Two LRH fields of the global packet are
	// variant but read by the block to find the packet's shape, LNH (byte 1
	// bits 1:0: whether the GRH is there) and PktLen (byte 4 bits 2:0, byte
	// 5: where the ICRC is); a flip there moves the CRC's coverage or place
	// and is flagged, as it should be (ib_vcrc would refuse the packet
	// first), so icrcGlobalVariant leaves them out and icrcGlobalShape
	// names them.
	icrcGlobalVariant = []icrcField{
		{0, 0xFF}, {1, 0xFC}, {2, 0xFF}, {3, 0xFF}, {4, 0xF8}, {6, 0xFF}, {7, 0xFF},
		{8 + 0, 0x0F}, {8 + 1, 0xFF}, {8 + 2, 0xFF}, {8 + 3, 0xFF}, {8 + 7, 0xFF},
		{48 + 4, 0xFF},
	}
	icrcGlobalShape = []icrcField{{1, 0x03}, {4, 0x07}, {5, 0xFF}}
)

// icrcBits lists the (byte, bit) pairs of fields, bit 0 the least significant.
func icrcBits(fields []icrcField) [][2]int {
	var bits [][2]int
	for _, f := range fields {
		for b := range 8 {
			if f.mask>>b&1 != 0 {
				bits = append(bits, [2]int{f.byte, b})
			}
		}
	}
	return bits
}

// TestICRCVariantBits: flipping a bit of a packet's headers leaves the
// model's ICRC (ib.ICRC, what AppendWire writes) unchanged exactly when the
// bit is one of the variant fields above, for every header bit of a local
// and a global packet: the test's IBA-derived fields are the model's masks.
// (A global packet's LNH is variant too, but a flip of it makes the packet
// local, so ib.ICRC reads it with the other mask: it is left out.)
func TestICRCVariantBits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, grh := range []bool{false, true} {
		p := vcrcRandomPacket(r, ib.SendOnly, grh, 40)
		wire := ib.AppendWire(nil, &p)
		off := len(wire) - ib.VCRCBytes - ib.ICRCBytes
		variant := map[[2]int]bool{}
		fields, hdr := icrcLocalVariant, ib.LRHBytes+ib.BTHBytes
		if grh {
			fields, hdr = append(slices.Clone(icrcGlobalVariant), icrcField{4, 0x07}, icrcField{5, 0xFF}), ib.LRHBytes+ib.GRHBytes+ib.BTHBytes
		}
		for _, b := range icrcBits(fields) {
			variant[b] = true
		}
		want := ib.ICRC(wire[:off])
		unchanged := 0
		for i := range hdr {
			for b := range 8 {
				if grh && i == 1 && b < 2 {
					continue // LNH: see above
				}
				flipped := slices.Clone(wire[:off])
				flipped[i] ^= 1 << b
				same := ib.ICRC(flipped) == want
				assert.Equal(t, variant[[2]int{i, b}], same, "grh %v byte %d bit %d: variant", grh, i, b)
				if same {
					unchanged++
				}
			}
		}
		assert.Equal(t, len(variant), unchanged, "grh %v: variant bits", grh)
	}
}

// icrcPacket is one packet on ib_icrc's stream: the beats that go in and
// what must come out, by the block's rule with the CRC from ib.ICRC
// (icrcExpect).
type icrcPacket struct {
	in, want          []byte // whole beats, 64 bytes each
	icrcErr, lenErr   bool
	kind              string    // the stimulus's kind, for the coverage test
	op                ib.Opcode // the BTH opcode of the packet AppendWire wrote
	grh               bool
	room              bool // the 2 bytes of VCRC room follow the ICRC
	iword, pad        int  // (PktLen - 1) mod 16: the ICRC's word in its beat; BTH.PadCnt
	vcrcBeat, beats   int  // the beat the VCRC room starts in (PktLen / 16); beats sent
	vcrcAlone         bool // PktLen mod 16 = 0: the VCRC room is a beat of its own
	flipByte, flipBit int
}

// icrcExpect is what ib_icrc's header says it does with the beats of one
// packet: the ICRC of the first PktLen × 4 − 4 bytes (ib.ICRC, the mask
// picked by LRH.LNH) written at byte PktLen × 4 − 4, least significant
// byte first, if the packet reaches that beat; icrc_err when the 4 bytes
// there differ or the beat never came; len_err when PktLen is 0 or the
// packet's last beat is neither that beat nor the VCRC room's (byte
// PktLen × 4).
func icrcExpect(in []byte) (want []byte, icrcErr, lenErr bool) {
	beats := len(in) / BlockBytes
	pktLen := int(binary.BigEndian.Uint16(in[4:6]) & 0x7FF)
	want = slices.Clone(in)
	if pktLen == 0 {
		return want, true, true
	}
	off := 4*pktLen - ib.ICRCBytes
	last := beats - 1
	lenErr = last != off/BlockBytes && last != 4*pktLen/BlockBytes
	if off/BlockBytes >= beats {
		return want, true, lenErr
	}
	c := ib.ICRC(in[:off])
	binary.LittleEndian.PutUint32(want[off:], c)
	return want, binary.LittleEndian.Uint32(in[off:]) != c, lenErr
}

// newICRCPacket makes one stream packet of kind from p, AppendWire's bytes
// LRH .. ICRC, and the VCRC after them when room:
//   - "tx": the ICRC zeroed going in (the assembler's empty slot);
//     AppendWire's bytes must come out, byte for byte;
//   - "good": AppendWire's bytes, unchanged, no error;
//   - "flip": one bit flipped from the LRH through the ICRC, not a
//     variant one (a quarter of them in the headers, some in LRH.PktLen);
//     ParseWire must refuse the packet (its VCRC resealed) and an error
//     must be flagged;
//   - "variant": one bit of a variant field flipped; ParseWire takes the
//     packet (VCRC resealed) and no error may be flagged;
//   - "short": the packet ends one beat or more before the ICRC's beat;
//   - "long": a beat of zeros after the last.
//
// It panics when the block's rule (icrcExpect) disagrees with AppendWire or
// ParseWire on what it must give: that would be a bug of this test.
func newICRCPacket(r *rand.Rand, p ib.Packet, kind string, room bool) icrcPacket {
	wire := ib.AppendWire(nil, &p)
	n := len(wire) - ib.VCRCBytes // LRH .. ICRC
	icrcOff := n - ib.ICRCBytes
	sent := wire[:n]
	if room {
		sent = wire
	}
	in := padBeats(sent)
	pk := icrcPacket{kind: kind, op: p.Opcode, grh: p.GRH, room: room, iword: (p.PktLen() - 1) % 16,
		pad: p.PadCnt(), vcrcBeat: p.PktLen() / 16, vcrcAlone: p.PktLen()%16 == 0, flipByte: -1}
	// reparse is ParseWire of the sent bytes with the VCRC resealed, as a
	// switch that rewrote a variant field would send them.
	reparse := func() error {
		b := binary.LittleEndian.AppendUint16(slices.Clone(in[:n]), ib.VCRC(in[:n]))
		_, err := ib.ParseWire(b)
		return err
	}
	switch kind {
	case "tx":
		clear(in[icrcOff:n])
		pk.want = padBeats(sent)
	case "good":
		pk.want = slices.Clone(in)
	case "flip":
		variant := icrcLocalVariant
		if p.GRH {
			variant = icrcGlobalVariant
		}
		isVariant := map[[2]int]bool{}
		for _, b := range icrcBits(variant) {
			isVariant[b] = true
		}
		for {
			switch x := r.IntN(10); {
			case x < 2: // the headers
				pk.flipByte = r.IntN(p.HeaderBytes() - ib.ICRCBytes - ib.VCRCBytes)
			case x == 2: // LRH.PktLen, which moves the ICRC's place
				pk.flipByte = []int{4, 5, 5, 5}[r.IntN(4)]
			case x == 3: // the ICRC
				pk.flipByte = icrcOff + r.IntN(ib.ICRCBytes)
			default: // anywhere up to the ICRC's last byte
				pk.flipByte = r.IntN(n)
			}
			pk.flipBit = r.IntN(8)
			if !isVariant[[2]int{pk.flipByte, pk.flipBit}] {
				break
			}
		}
		in[pk.flipByte] ^= 1 << pk.flipBit
		if pk.flipByte == 4 || pk.flipByte == 5 {
			pk.kind = "flip pktlen"
		} else if pk.flipByte >= icrcOff {
			pk.kind = "flip icrc"
		}
		if reparse() == nil {
			panic(fmt.Sprintf("rtl: ParseWire takes %s (grh %v) with byte %d bit %d flipped", p.Opcode, p.GRH, pk.flipByte, pk.flipBit))
		}
	case "variant":
		fields := icrcLocalVariant
		if p.GRH {
			fields = icrcGlobalVariant
		}
		bits := icrcBits(fields)
		b := bits[r.IntN(len(bits))]
		pk.flipByte, pk.flipBit = b[0], b[1]
		in[b[0]] ^= 1 << b[1]
		if err := reparse(); err != nil {
			panic(fmt.Sprintf("rtl: ParseWire refuses %s (grh %v) with variant byte %d bit %d flipped: %v", p.Opcode, p.GRH, b[0], b[1], err))
		}
	case "short":
		in = in[:r.IntN(len(in)/BlockBytes-1)*BlockBytes+BlockBytes]
	case "long":
		in = append(in, make([]byte, BlockBytes)...)
	}
	want, icrcErr, lenErr := icrcExpect(in)
	switch kind {
	case "tx", "good":
		if !bytes.Equal(want, pk.want) || lenErr || (kind == "good" && icrcErr) {
			panic(fmt.Sprintf("rtl: the ICRC rule gives other bytes than AppendWire for %s (%s)", p.Opcode, kind))
		}
	case "flip":
		if !icrcErr && !lenErr {
			panic(fmt.Sprintf("rtl: a flipped bit the ICRC rule does not see in %s", p.Opcode))
		}
	case "variant":
		if icrcErr || lenErr || !bytes.Equal(want, in) {
			panic(fmt.Sprintf("rtl: the ICRC rule sees a variant bit of %s", p.Opcode))
		}
	}
	pk.in, pk.want, pk.icrcErr, pk.lenErr = in, want, icrcErr, lenErr
	pk.beats = len(in) / BlockBytes
	return pk
}

// icrcDirected are the packets every seed sends first, as the transmit
// side gets them (ICRC zeroed): every opcode the model knows with and
// without a GRH (the requester's and the responder's header shapes: SEND
// and WRITE FIRST/MIDDLE/LAST/ONLY with and without immediate, the READ
// request and its responses, atomics and their ACK, ACK/NAK, UD SEND with
// a DETH); a local SEND_ONLY (headers 20 bytes) and a global UD_SEND_ONLY
// (68 bytes) with every payload of 0..67 bytes: PktLen = 6 + ⌈L/4⌉ resp.
// 18 + ⌈L/4⌉ takes 18 consecutive values, so the ICRC lies at each of the
// 16 words of its beat, each PadCnt 0..3 (L mod 4), across the beat
// boundaries; the VCRC room after it half the time; and the 4096-byte
// MTU's payload, 65 beats, and one of 4093 bytes with a GRH.
func icrcDirected(r *rand.Rand) []icrcPacket {
	var ps []icrcPacket
	for _, op := range vcrcOpcodes {
		for _, grh := range []bool{false, true} {
			ps = append(ps, newICRCPacket(r, vcrcRandomPacket(r, op, grh, r.IntN(200)), "tx", r.IntN(2) == 0))
		}
	}
	for l := range 68 {
		ps = append(ps,
			newICRCPacket(r, vcrcRandomPacket(r, ib.SendOnly, false, l), "tx", l%8 < 4),
			newICRCPacket(r, vcrcRandomPacket(r, ib.UDSendOnly, true, l), "tx", l%8 >= 4))
	}
	return append(ps,
		newICRCPacket(r, vcrcRandomPacket(r, ib.SendOnly, false, 4096), "tx", true),
		newICRCPacket(r, vcrcRandomPacket(r, ib.RDMAWriteOnly, true, 4093), "good", false))
}

// icrcDUT streams packets (icrcDirected, then random ones of every opcode
// and kind) into ib_icrc and expects each beat, a cycle after it is taken,
// with the ICRC icrcExpect writes, and the errors with the last beat.
// in_valid has gaps and out_ready stalls, each in phases.
type icrcDUT struct{ crcStream[icrcPacket] }

func newICRCDUT(r *rand.Rand) *icrcDUT {
	return &icrcDUT{newCRCStream("ib_icrc", "out_icrc_err", icrcDirected(r), func(p *icrcPacket) ([]byte, []byte, int, bool, bool) {
		return p.in, p.want, p.beats, p.icrcErr, p.lenErr
	}, randomICRCPacket)}
}

// randomICRCPacket draws the next packet: any opcode, a GRH half the time,
// the VCRC room half the time, a transmit packet (ICRC zeroed) or a
// received one, good, with an invariant or a variant bit flipped, now and
// then one beat short or long.
func randomICRCPacket(r *rand.Rand) icrcPacket {
	p := vcrcRandomPacket(r, vcrcOpcodes[r.IntN(len(vcrcOpcodes))], r.IntN(2) == 0, -1)
	kind := "tx"
	switch x := r.IntN(20); {
	case x < 2:
		kind = "good"
	case x < 11:
		kind = "flip"
	case x < 16:
		kind = "variant"
	case x < 17 && p.Credits() > 1:
		kind = "short"
	case x < 18:
		kind = "long"
	}
	return newICRCPacket(r, p, kind, r.IntN(2) == 0)
}

// TestICRCStimulusCovers: per seed, every directed packet went through;
// every opcode with and without a GRH as the transmit side sends it; the
// ICRC at each of the 16 words of its beat with and without the VCRC room,
// and with the room a beat of its own; each PadCnt with and without a GRH;
// packets of 1 and 66 beats; 25 flipped invariant bits (5 in the headers,
// 2 in PktLen, 2 in the ICRC, 10 in local and 10 in global packets) and 5
// variant ones of each shape, 1 short and 2 long packets, 100 beats held by
// out_ready and 50 gaps inside packets. Every flip was one the ICRC rule
// (ib.ICRC) catches and ParseWire refuses, every variant flip one it does
// not see and ParseWire takes (newICRCPacket panics otherwise).
func TestICRCStimulusCovers(t *testing.T) {
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := newICRCDUT(r)
		directed := len(d.queue)
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		for range cosimCycles {
			d.cycle(r, in, out)
		}
		name := fmt.Sprintf("seed %d", seed)
		require.Greater(t, len(d.done), directed, "%s: directed packets left", name)
		kinds := map[string]int{}
		txOps := map[[2]any]bool{}
		words := map[[2]any]bool{}
		pads := map[[2]any]bool{}
		var alone, headerFlips, grhFlips, localFlips int
		variants := map[bool]int{}
		minBeats, maxBeats := 1000, 0
		for _, pk := range d.done {
			kinds[pk.kind]++
			switch pk.kind {
			case "tx":
				txOps[[2]any{pk.op, pk.grh}] = true
			case "flip", "flip pktlen", "flip icrc":
				assert.True(t, pk.icrcErr || pk.lenErr, "%s: a flip no error flags", name)
				if pk.flipByte < 20 {
					headerFlips++
				}
				if pk.grh {
					grhFlips++
				} else {
					localFlips++
				}
			case "variant":
				assert.False(t, pk.icrcErr || pk.lenErr, "%s: a variant flip flagged", name)
				variants[pk.grh]++
			case "good":
				assert.False(t, pk.icrcErr || pk.lenErr, "%s: a good packet flagged", name)
			}
			if pk.kind == "tx" || pk.kind == "good" {
				words[[2]any{pk.iword, pk.room}] = true
				pads[[2]any{pk.pad, pk.grh}] = true
				if pk.vcrcAlone && pk.room {
					alone++
				}
				minBeats, maxBeats = min(minBeats, pk.beats), max(maxBeats, pk.beats)
			}
		}
		assert.Len(t, txOps, 2*len(vcrcOpcodes), "%s: opcodes with and without a GRH sent with the ICRC zeroed", name)
		assert.Len(t, words, 32, "%s: ICRC word offsets with and without the VCRC room", name)
		assert.Len(t, pads, 8, "%s: PadCnt values with and without a GRH", name)
		assert.GreaterOrEqual(t, alone, 2, "%s: the VCRC room a beat of its own", name)
		assert.Equal(t, 1, minBeats, "%s: shortest packet", name)
		// The global RDMA_WRITE_ONLY of 4093 bytes: 8 + 40 + 12 + 16 + 4093 + 3
		// (pad) + 4 (ICRC) = 4176 bytes, 65.25 beats.
		assert.Equal(t, 66, maxBeats, "%s: longest packet (MTU 4096)", name)
		assert.GreaterOrEqual(t, kinds["flip"]+kinds["flip pktlen"]+kinds["flip icrc"], 25, "%s: flips", name)
		assert.GreaterOrEqual(t, headerFlips, 5, "%s: flips in the headers", name)
		assert.GreaterOrEqual(t, kinds["flip pktlen"], 2, "%s: flips in PktLen", name)
		assert.GreaterOrEqual(t, kinds["flip icrc"], 2, "%s: flips in the ICRC", name)
		assert.GreaterOrEqual(t, grhFlips, 10, "%s: flips in global packets", name)
		assert.GreaterOrEqual(t, localFlips, 10, "%s: flips in local packets", name)
		assert.GreaterOrEqual(t, variants[false], 5, "%s: variant flips, local", name)
		assert.GreaterOrEqual(t, variants[true], 5, "%s: variant flips, global", name)
		assert.GreaterOrEqual(t, kinds["short"], 1, "%s: short packets", name)
		assert.GreaterOrEqual(t, kinds["long"], 2, "%s: long packets", name)
		assert.GreaterOrEqual(t, d.stalledBeats, 100, "%s: beats held by out_ready", name)
		assert.GreaterOrEqual(t, d.gaps, 50, "%s: gaps inside packets", name)
	}
}

// TestICRCMutantsFail: each slip of the CRC's definition, of its masks or
// of where it goes fails the co-simulation (nine, not every slip one could
// think of: each costs an Icarus run of about 0.7 s of CPU on 1000 cycles).
//
// 1000 cycles of the 3000: each mutant first mismatched at cycle 11, 21
// or 43 (Icarus, 2026-12-02), and the cycles are about 0.7 ms of CPU each.
func TestICRCMutantsFail(t *testing.T) {
	runMutantsFor(t, 1000, func() cosimDUT { return newICRCDUT(rand.New(rand.NewPCG(cosimSeeds[0], 0x7e57))) }, []cosimMutant{
		{"a wrong polynomial tap", "ib_icrc.v",
			"localparam [31:0] POLY_R = 32'hEDB88320;", "localparam [31:0] POLY_R = 32'hEDB88321;"},
		{"the ICRC's bytes most significant first", "ib_icrc.v",
			"icrc_lanes = {icrc[7:0], icrc[15:8], icrc[23:16], icrc[31:24]};", "icrc_lanes = icrc;"},
		{"the bits of each byte fed most significant first", "ib_icrc.v",
			"data_rows_of[512*i +: 512] = l;", "data_rows_of[512*i +: 512] = xi;"},
		{"GRH TClass's low nibble not masked", "ib_icrc.v", "32'h0FFF_FFFF, 24'd0, 8'hFF", "32'h0F0F_FFFF, 24'd0, 8'hFF"},
		{"BTH resv8a not masked in a local packet", "ib_icrc.v",
			"{8'hF0, 88'd0, 8'hFF, 408'd0}", "{8'hF0, 88'd0, 8'h00, 408'd0}"},
		{"a packet with LNH bit 1 taken as global", "ib_icrc.v",
			"in_data[497:496] == 2'b11;", "in_data[497];"},
		{"the ICRC over one word more (PktLen words)", "ib_icrc.v",
			"wire [10:0] iw       = len_now - 11'd1;", "wire [10:0] iw       = len_now;"},
		{"the received ICRC not compared", "ib_icrc.v",
			"at_i ? (carried != icrc)", "at_i ? 1'b0"},
		{"a packet with the VCRC room in a beat of its own a length error", "ib_icrc.v",
			"(beat_now == ibeat || beat_now == vbeat)", "(beat_now == ibeat)"},
	})
}
