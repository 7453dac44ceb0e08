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

// ---- ib_vcrc <-> ib.AppendWire, ib.ParseWire, ib.VCRC ----

// vcrcPacket is one packet on ib_vcrc's stream: the beats that go in and
// what must come out, by the block's rule with the CRC from ib.VCRC
// (vcrcExpect).
type vcrcPacket struct {
	in, want        []byte // whole beats, 64 bytes each
	vcrcErr, lenErr bool
	kind            string    // the stimulus's kind, for the coverage test
	op              ib.Opcode // the BTH opcode of the packet AppendWire wrote
	vword           int       // LRH.PktLen mod 16: the VCRC's 4-byte word in its beat
	beats           int
}

// vcrcExpect is what ib_vcrc's header says it does with the beats of one
// packet: the VCRC of the first PktLen × 4 bytes (ib.VCRC) written at byte
// PktLen × 4, least significant byte first, if the packet reaches that
// beat; vcrc_err when the 2 bytes there differ or the beat never came;
// len_err when the packet's last beat is not that beat.
func vcrcExpect(in []byte) (want []byte, vcrcErr, lenErr bool) {
	beats := len(in) / BlockBytes
	off := 4 * int(binary.BigEndian.Uint16(in[4:6])&0x7FF)
	want = slices.Clone(in)
	if off/BlockBytes >= beats {
		return want, true, true
	}
	v := ib.VCRC(in[:off])
	binary.LittleEndian.PutUint16(want[off:], v)
	return want, binary.LittleEndian.Uint16(in[off:]) != v, off/BlockBytes != beats-1
}

// padBeats returns b zero padded to whole 64-byte beats.
func padBeats(b []byte) []byte {
	n := (len(b) + BlockBytes - 1) / BlockBytes * BlockBytes
	return append(slices.Clone(b), make([]byte, n-len(b))...)
}

// vcrcOpcodes are every opcode the model knows (ib.Opcode.Valid).
var vcrcOpcodes = func() []ib.Opcode {
	var ops []ib.Opcode
	for op := range 256 {
		if ib.Opcode(op).Valid() {
			ops = append(ops, ib.Opcode(op))
		}
	}
	return ops
}()

// vcrcRandomPacket returns a data packet of opcode op with random fields;
// payload (for an opcode that carries one) of payloadLen bytes, or a random
// length when payloadLen < 0: mostly short (a few beats, so a seed sees many
// packets), now and then up to the 4096-byte MTU.
func vcrcRandomPacket(r *rand.Rand, op ib.Opcode, grh bool, payloadLen int) ib.Packet {
	p := ib.Packet{
		Kind: ib.Data, VL: uint8(r.IntN(15)), SL: uint8(r.IntN(16)), GRH: grh,
		DLID: uint16(r.Uint32()), SLID: uint16(r.Uint32()), Opcode: op,
		SE: r.IntN(2) == 0, AckReq: r.IntN(2) == 0, FECN: r.IntN(2) == 0, BECN: r.IntN(2) == 0,
		DestQP: r.Uint32() & 0xFFFFFF, PSN: r.Uint32() & 0xFFFFFF,
		RETH:      ib.RETH{VA: r.Uint64(), RKey: r.Uint32(), Length: r.Uint32()},
		AETH:      ib.AETH{Syndrome: uint8(r.Uint32()), MSN: r.Uint32() & 0xFFFFFF},
		Atomic:    ib.AtomicETH{VA: r.Uint64(), RKey: r.Uint32(), SwapAdd: r.Uint64(), Compare: r.Uint64()},
		AtomicAck: r.Uint64(), Imm: r.Uint32(), IETH: r.Uint32(),
		DETH: ib.DETH{QKey: r.Uint32(), SrcQP: r.Uint32() & 0xFFFFFF},
	}
	if op.Headers()&ib.HasPayload != 0 {
		switch {
		case payloadLen >= 0:
			p.PayloadLen = payloadLen
		case r.IntN(16) == 0:
			p.PayloadLen = r.IntN(4097)
		default:
			p.PayloadLen = r.IntN(300)
		}
		p.Payload = make([]byte, p.PayloadLen)
		for i := range p.Payload {
			p.Payload[i] = byte(r.Uint32())
		}
	}
	return p
}

// newVCRCPacket makes one stream packet of kind from p:
//   - "tx": the packet a switch sends after its SL-to-VL table moved it to
//     another VL: AppendWire's bytes with the VL nibble changed and the VCRC
//     zeroed go in, AppendWire of the changed packet must come out;
//   - "good": AppendWire's bytes, unchanged, no error;
//   - "flip": one bit flipped anywhere from the LRH through the VCRC;
//   - "short": the packet ends one beat or more before the VCRC's beat;
//   - "long": a beat of zeros after the VCRC's beat.
//
// It panics when the block's rule (vcrcExpect) disagrees with AppendWire or
// ParseWire on what it must give: that would be a bug of this test.
func newVCRCPacket(r *rand.Rand, p ib.Packet, kind string) vcrcPacket {
	wire := ib.AppendWire(nil, &p)
	n := len(wire)
	in := padBeats(wire)
	pk := vcrcPacket{kind: kind, op: p.Opcode, vword: p.PktLen() % 16}
	switch kind {
	case "tx":
		moved := p
		moved.VL = (p.VL + 1 + uint8(r.IntN(14))) % 15 // another data VL
		in[0] = moved.VL<<4 | in[0]&0x0F
		in[n-2], in[n-1] = 0, 0
		pk.want = padBeats(ib.AppendWire(nil, &moved))
	case "good":
		pk.want = slices.Clone(in)
	case "flip":
		bit := r.IntN(8 * n)
		if r.IntN(4) == 0 {
			// LRH.PktLen (byte 4 bits 2:0, byte 5), which moves the
			// VCRC's place: 11 of the packet's bits, so aimed at.
			bit = []int{32, 33, 34, 40, 41, 42, 43, 44, 45, 46, 47}[r.IntN(11)]
		}
		in[bit/8] ^= 1 << (bit % 8)
		if bit/8 == 4 && bit%8 < 3 || bit/8 == 5 {
			pk.kind = "flip pktlen"
		}
		if _, err := ib.ParseWire(in[:n]); err == nil {
			panic(fmt.Sprintf("rtl: ParseWire takes %s with bit %d flipped", p.Opcode, bit))
		}
	case "short":
		in = in[:r.IntN(len(in)/BlockBytes-1)*BlockBytes+BlockBytes]
	case "long":
		in = append(in, make([]byte, BlockBytes)...)
	}
	want, vcrcErr, lenErr := vcrcExpect(in)
	switch kind {
	case "tx", "good":
		if !bytes.Equal(want, pk.want) || lenErr || (kind == "good" && vcrcErr) {
			panic(fmt.Sprintf("rtl: the VCRC rule gives other bytes than AppendWire for %s (%s)", p.Opcode, kind))
		}
	case "flip":
		if !vcrcErr && !lenErr {
			panic(fmt.Sprintf("rtl: a flipped bit the VCRC rule does not see in %s", p.Opcode))
		}
	}
	pk.in, pk.want, pk.vcrcErr, pk.lenErr = in, want, vcrcErr, lenErr
	pk.beats = len(in) / BlockBytes
	return pk
}

// vcrcDirected are the packets every seed sends first: every opcode as a
// switch sends it (VL moved) with and without a GRH; the VCRC at every word
// of its beat (PktLen mod 16 = 0..15: payloads of a SEND_ONLY, header 26
// bytes, of 2 + 4k bytes), the largest PktLen (2047 words: 8164 bytes of
// payload, 128 beats) and an empty payload.
func vcrcDirected(r *rand.Rand) []vcrcPacket {
	var ps []vcrcPacket
	for _, op := range vcrcOpcodes {
		for _, grh := range []bool{false, true} {
			ps = append(ps, newVCRCPacket(r, vcrcRandomPacket(r, op, grh, r.IntN(200)), "tx"))
		}
	}
	for k := range 16 {
		ps = append(ps, newVCRCPacket(r, vcrcRandomPacket(r, ib.SendOnly, false, 2+4*k+64*r.IntN(3)), "tx"))
	}
	ps = append(ps,
		newVCRCPacket(r, vcrcRandomPacket(r, ib.SendOnly, false, 8164), "tx"),
		newVCRCPacket(r, vcrcRandomPacket(r, ib.SendOnly, false, 0), "good"))
	return ps
}

// vcrcDUT streams packets (vcrcDirected, then random ones of every opcode
// and kind: transmit and receive packets alike) into ib_vcrc and expects
// each beat, a cycle after it is taken, with the VCRC vcrcExpect writes,
// and the errors with the last beat. out_ready stalls in phases (a
// transmit link's PCS) and is 1 for long stretches (receive has no
// back-pressure and ties it to 1).
type vcrcDUT struct{ crcStream[vcrcPacket] }

func newVCRCDUT(r *rand.Rand) *vcrcDUT {
	return &vcrcDUT{newCRCStream("ib_vcrc", "out_vcrc_err", vcrcDirected(r), func(p *vcrcPacket) ([]byte, []byte, int, bool, bool) {
		return p.in, p.want, p.beats, p.vcrcErr, p.lenErr
	}, randomVCRCPacket)}
}

// randomVCRCPacket draws the next packet: any opcode, a GRH half the time,
// a transmit packet (VL moved, VCRC zeroed) or a received one, good or with
// a bit flipped, now and then one beat short or long.
func randomVCRCPacket(r *rand.Rand) vcrcPacket {
	p := vcrcRandomPacket(r, vcrcOpcodes[r.IntN(len(vcrcOpcodes))], r.IntN(2) == 0, -1)
	kind := "tx"
	switch x := r.IntN(20); {
	case x < 5:
		kind = "good"
	case x < 14:
		kind = "flip"
	case x < 16 && p.Credits() > 1:
		kind = "short"
	case x < 18:
		kind = "long"
	}
	return newVCRCPacket(r, p, kind)
}

// TestVCRCStimulusCovers: per seed, every directed packet went
// through, every opcode went through as a switch sends it (VL moved) and
// with a bit flipped, the VCRC lay at every word of its beat, packets of 1
// and of 128 beats, 30 flipped bits (5 of them in PktLen), 3 short and 3
// long packets, and every flip was one the VCRC rule (ib.VCRC over PktLen)
// catches and ib.ParseWire refuses (newVCRCPacket panics otherwise).
func TestVCRCStimulusCovers(t *testing.T) {
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := newVCRCDUT(r)
		directed := len(d.queue)
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		for range cosimCycles {
			d.cycle(r, in, out)
		}
		name := fmt.Sprintf("seed %d", seed)
		require.Greater(t, len(d.done), directed, "%s: directed packets left", name)
		kinds := map[string]int{}
		txOps, flipOps := map[ib.Opcode]bool{}, map[ib.Opcode]bool{}
		words := map[int]bool{}
		minBeats, maxBeats := 1000, 0
		for _, pk := range d.done {
			kinds[pk.kind]++
			switch pk.kind {
			case "tx":
				txOps[pk.op] = true
			case "flip", "flip pktlen":
				flipOps[pk.op] = true
				assert.True(t, pk.vcrcErr || pk.lenErr, "%s: a flip no error flags", name)
			case "good":
				assert.False(t, pk.vcrcErr || pk.lenErr, "%s: a good packet flagged", name)
			}
			if pk.kind == "tx" || pk.kind == "good" {
				words[pk.vword] = true
				minBeats, maxBeats = min(minBeats, pk.beats), max(maxBeats, pk.beats)
			}
		}
		assert.Len(t, txOps, len(vcrcOpcodes), "%s: opcodes sent with a moved VL", name)
		assert.GreaterOrEqual(t, len(flipOps), len(vcrcOpcodes)/2, "%s: opcodes with a flipped bit", name)
		assert.Len(t, words, 16, "%s: VCRC word offsets", name)
		assert.Equal(t, 1, minBeats, "%s: shortest packet", name)
		assert.Equal(t, 128, maxBeats, "%s: longest packet (PktLen 2047)", name)
		assert.GreaterOrEqual(t, kinds["flip"]+kinds["flip pktlen"], 30, "%s: flips", name)
		assert.GreaterOrEqual(t, kinds["flip pktlen"], 10, "%s: flips in PktLen", name)
		assert.GreaterOrEqual(t, kinds["short"], 2, "%s: short packets", name)
		assert.GreaterOrEqual(t, kinds["long"], 2, "%s: long packets", name)
		assert.GreaterOrEqual(t, d.stalledBeats, 100, "%s: beats held by out_ready", name)
	}
}

// TestVCRCMutantsFail: each slip of the CRC's definition or of where it
// goes fails the co-simulation.
func TestVCRCMutantsFail(t *testing.T) {
	runMutants(t, func() cosimDUT { return newVCRCDUT(rand.New(rand.NewPCG(cosimSeeds[0], 0x7e57))) }, []cosimMutant{
		{"a wrong polynomial tap (0x100F)", "ib_vcrc.v",
			"localparam [15:0] POLY_R = 16'hD008;", "localparam [15:0] POLY_R = 16'hF008;"},
		{"the VCRC's bytes most significant first", "ib_vcrc.v",
			"{{vcrc[7:0], vcrc[15:8]}, 496'd0}", "{vcrc, 496'd0}"},
		{"the bits of each byte fed most significant first", "ib_vcrc.v",
			"data_rows_of[512*i +: 512] = l;", "data_rows_of[512*i +: 512] = xi;"},
		{"the register's bytes swapped into the beat", "ib_vcrc.v",
			"{crc_now[7:0], crc_now[15:8], 496'd0}", "{crc_now[15:8], crc_now[7:0], 496'd0}"},
		{"one word more covered than PktLen says", "ib_vcrc.v",
			"(at_v ? {1'b0, vword} : 5'd0)", "(at_v ? {1'b0, vword} + 5'd1 : 5'd0)"},
		{"the beat before the VCRC's not covered", "ib_vcrc.v",
			"(beat_now < vbeat) ? 5'd16", "(beat_now + 8'd1 < vbeat) ? 5'd16"},
		{"the register seeded with zeros", "ib_vcrc.v",
			"localparam [15:0] SEED   = 16'hFFFF;", "localparam [15:0] SEED   = 16'h0000;"},
		{"the result not inverted", "ib_vcrc.v", "wire [15:0]  vcrc = ~crc_next;", "wire [15:0]  vcrc = crc_next;"},
		{"PktLen read without its top bit", "ib_vcrc.v",
			"in_sop ? in_data[474:464] : pktlen;", "in_sop ? {1'b0, in_data[473:464]} : pktlen;"},
		{"the received VCRC not compared", "ib_vcrc.v",
			"wire bad_now  = at_v ? (carried != vcrc)", "wire bad_now  = at_v ? 1'b0"},
		{"a packet ending before its VCRC taken as good", "ib_vcrc.v",
			"(seen_now ? vcrc_bad : 1'b1)", "(seen_now ? vcrc_bad : 1'b0)"},
		{"a long packet's length not checked", "ib_vcrc.v",
			"out_len_err  <= in_eop && !at_v;", "out_len_err  <= in_eop && beat_now < vbeat;"},
	})
}

// ---- ib_fc_codec <-> ib.AppendWire, ib.ParseWire of flow-control packets ----

// fcCodecDUT drives ib_fc_codec's encoder with random (FCTBS, VL, FCCL),
// expecting ib.AppendWire's 6 bytes of the FlowControl packet a cycle
// after each is taken, under an enc_out_ready that stalls in phases; and
// its decoder with AppendWire's packets, a bit flipped in a third of them
// and now and then an Op other than 0 with a good LPCRC, expecting the
// fields ib.ParseWire reads and lpcrc_err when ib.VCRC of the first 4
// bytes is not the last 2 (ParseWire's "bad LPCRC").
type fcCodecDUT struct {
	held           bool // an encode offered last cycle and not taken
	fctbs, fccl    uint16
	vl             uint8
	encValid       bool
	encPkt         []byte
	decValid       bool
	dec            ib.Packet // the fields (FCTBS, VL, FCCL) expected
	decOp          uint8
	decErr         bool
	c              int
	pEnc, pReady   float64
	encoded, flips int            // packets encoded; flipped packets decoded
	seen           map[string]int // decodes by kind
}

func newFCCodecDUT() *fcCodecDUT { return &fcCodecDUT{seen: map[string]int{}} }

func (d *fcCodecDUT) module() string  { return "ib_fc_codec" }
func (d *fcCodecDUT) files() []string { return []string{"ib_fc_codec.v"} }
func (d *fcCodecDUT) params() []Param { return nil }
func (d *fcCodecDUT) inputs() []Signal {
	return []Signal{{Name: "enc_valid", Width: 1}, {Name: "enc_fctbs", Width: 12}, {Name: "enc_vl", Width: 4},
		{Name: "enc_fccl", Width: 12}, {Name: "enc_out_ready", Width: 1}, {Name: "dec_valid", Width: 1}, {Name: "dec_pkt", Width: 48}}
}
func (d *fcCodecDUT) outputs() []Signal {
	return []Signal{
		{Name: "enc_ready", Width: 1}, {Name: "enc_out_valid", Width: 1}, {Name: "enc_out_pkt", Width: 48, ValidWhen: "enc_out_valid"},
		{Name: "dec_out_valid", Width: 1}, {Name: "dec_out_lpcrc_err", Width: 1, ValidWhen: "dec_out_valid"},
		// The fields are compared when the LPCRC holds: ParseWire reads them then.
		{Name: "dec_out_op", Width: 4, ValidWhen: "dec_out_valid && !dec_out_lpcrc_err"},
		{Name: "dec_out_fctbs", Width: 12, ValidWhen: "dec_out_valid && !dec_out_lpcrc_err"},
		{Name: "dec_out_vl", Width: 4, ValidWhen: "dec_out_valid && !dec_out_lpcrc_err"},
		{Name: "dec_out_fccl", Width: 12, ValidWhen: "dec_out_valid && !dec_out_lpcrc_err"},
	}
}

// be48 is 6 bytes as a 48-bit value, byte 0 most significant.
func be48(b []byte) uint64 {
	return uint64(binary.BigEndian.Uint16(b))<<32 | uint64(binary.BigEndian.Uint32(b[2:]))
}

func (d *fcCodecDUT) cycle(r *rand.Rand, in, out []Value) {
	pEnc := phaseProb(r, d.c, &d.pEnc)
	pReady := phaseProb(r, d.c, &d.pReady)
	d.c++
	ready := r.Float64() < pReady
	valid := d.held || r.Float64() < pEnc
	if !d.held {
		// A new request; the edges of the 12-bit fields now and then.
		d.fctbs, d.fccl, d.vl = uint16(r.IntN(4096)), uint16(r.IntN(4096)), uint8(r.IntN(16))
		if r.IntN(8) == 0 {
			d.fctbs, d.fccl = []uint16{0, 0xFFF}[r.IntN(2)], []uint16{0, 0xFFF}[r.IntN(2)]
		}
	}
	in[0], in[1], in[2], in[3], in[4] = b2v(valid), U(uint64(d.fctbs)), U(uint64(d.vl)), U(uint64(d.fccl)), b2v(ready)

	// A received packet: AppendWire's, a bit flipped, or another Op.
	decValid := r.IntN(3) > 0
	p := ib.Packet{Kind: ib.FlowControl, FCTBS: uint16(r.IntN(4096)), VL: uint8(r.IntN(16)), FCCL: uint16(r.IntN(4096))}
	pkt := ib.AppendWire(nil, &p)
	kind := "good"
	switch x := r.IntN(12); {
	case x < 4:
		bit := r.IntN(48)
		pkt[bit/8] ^= 1 << (bit % 8)
		kind = "flip"
	case x == 4:
		pkt[0] |= byte(1+r.IntN(15)) << 4
		binary.LittleEndian.PutUint16(pkt[4:], ib.VCRC(pkt[:4]))
		kind = "op"
	}
	in[5], in[6] = b2v(decValid), U(be48(pkt))

	out[0], out[1], out[2] = b2v(ready), b2v(d.encValid), U(0)
	if d.encValid {
		out[2] = U(be48(d.encPkt))
	}
	out[3] = b2v(d.decValid)
	for i := 4; i < 9; i++ {
		out[i] = U(0)
	}
	if d.decValid {
		out[4] = b2v(d.decErr)
		if !d.decErr {
			out[5], out[6], out[7], out[8] = U(uint64(d.decOp)), U(uint64(d.dec.FCTBS)), U(uint64(d.dec.VL)), U(uint64(d.dec.FCCL))
		}
	}

	// The edge.
	d.held = valid && !ready
	if ready {
		d.encValid = valid
		if valid {
			fc := ib.Packet{Kind: ib.FlowControl, FCTBS: d.fctbs, VL: d.vl, FCCL: d.fccl}
			d.encPkt = ib.AppendWire(nil, &fc)
			d.encoded++
		}
	}
	d.decValid = decValid
	if !decValid {
		return
	}
	d.decErr = binary.LittleEndian.Uint16(pkt[4:]) != ib.VCRC(pkt[:4])
	d.decOp = pkt[0] >> 4
	got, err := ib.ParseWire(pkt)
	switch {
	case kind == "op":
		// ParseWire refuses any Op but 0; the fields are those of the
		// same packet with Op 0 and its LPCRC.
		if err == nil || d.decErr {
			panic("rtl: a flow-control packet of another Op ParseWire takes, or with a bad LPCRC")
		}
		pkt[0] &= 0x0F
		binary.LittleEndian.PutUint16(pkt[4:], ib.VCRC(pkt[:4]))
		got, err = ib.ParseWire(pkt)
	case kind == "flip":
		d.flips++
		if !d.decErr || err == nil {
			panic("rtl: a flipped bit of a flow-control packet not seen")
		}
	}
	if !d.decErr {
		if err != nil {
			panic(fmt.Sprintf("rtl: ParseWire refuses a flow-control packet with a good LPCRC: %v", err))
		}
		d.dec = got
	}
	d.seen[kind]++
}

// TestFCCodecStimulusCovers: per seed 300 packets encoded, and 200 good,
// 100 flipped and 20 other-Op packets decoded (every flip raises
// lpcrc_err and ParseWire refuses it: the stimulus panics otherwise).
func TestFCCodecStimulusCovers(t *testing.T) {
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := newFCCodecDUT()
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		for range cosimCycles {
			d.cycle(r, in, out)
		}
		assert.GreaterOrEqual(t, d.encoded, 300, "seed %d: encoded", seed)
		assert.GreaterOrEqual(t, d.seen["good"], 200, "seed %d: good decoded", seed)
		assert.GreaterOrEqual(t, d.seen["flip"], 100, "seed %d: flips decoded", seed)
		assert.GreaterOrEqual(t, d.seen["op"], 20, "seed %d: other Ops decoded", seed)
	}
}

// TestFCCodecMutantsFail: each slip of the LPCRC or of the fields fails the
// co-simulation.
//
// 1000 cycles of the 3000: each mutant first mismatched at cycle 2 or 4
// (Icarus, 2026-12-02).
func TestFCCodecMutantsFail(t *testing.T) {
	runMutantsFor(t, 1000, func() cosimDUT { return newFCCodecDUT() }, []cosimMutant{
		{"a wrong polynomial tap (0x100F)", "ib_fc_codec.v",
			"localparam [15:0] POLY_R = 16'hD008;", "localparam [15:0] POLY_R = 16'hF008;"},
		{"the LPCRC's bytes most significant first", "ib_fc_codec.v",
			"enc_out_pkt <= {enc_head, enc_crc[7:0], enc_crc[15:8]};", "enc_out_pkt <= {enc_head, enc_crc};"},
		{"the received LPCRC read most significant first", "ib_fc_codec.v",
			"wire [15:0] dec_got  = {dec_pkt[7:0], dec_pkt[15:8]};", "wire [15:0] dec_got  = dec_pkt[15:0];"},
		{"the bits of each byte fed most significant first", "ib_fc_codec.v",
			"fb = r[0] ^ d[24 - 8*k + b];", "fb = r[0] ^ d[31 - 8*k - b];"},
		{"the LPCRC over 3 bytes", "ib_fc_codec.v", "for (k = 0; k < 4; k = k + 1)", "for (k = 0; k < 3; k = k + 1)"},
		{"the register seeded with zeros", "ib_fc_codec.v",
			"localparam [15:0] SEED   = 16'hFFFF;", "localparam [15:0] SEED   = 16'h0000;"},
		{"the result not inverted", "ib_fc_codec.v", "lpcrc = ~r;", "lpcrc = r;"},
		{"VL and FCCL's top nibble swapped", "ib_fc_codec.v",
			"dec_out_vl        <= dec_pkt[31:28];", "dec_out_vl        <= dec_pkt[27:24];"},
	})
}
