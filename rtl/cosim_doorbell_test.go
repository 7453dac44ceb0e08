package rtl

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_doorbell <-> hca.EncodeSendWQE, hca.WQEBBsOfCtrl ----

// doorbellDUT writes, as a driver's post_send_db does, the first 8 bytes
// of a send WQE's control segment (hca.EncodeSendWQE of a random work
// request, any index and QPN) to a UAR page's BlueFlame register, and
// expects the doorbell the next cycle: the QPN and the producer count
// after the WQE, index + hca.WQEBBsOfCtrl mod 2^16. It also writes to
// other offsets (the rest of a BlueFlame WQE, the CQ doorbell, the
// neighbours of the two halves), which must be ignored, and stalls
// db_ready now and then, so a doorbell waits and a newer one replaces it.
type doorbellDUT struct {
	valid    bool // the block's output register
	qpn      uint32
	producer uint16

	c                  int
	pWrite, pReady     float64
	rung, ignored, ds0 int
	wrapped, replaced  int
	bbs                [17]int // doorbells by the WQE's block count
}

func (d *doorbellDUT) module() string  { return "hca_doorbell" }
func (d *doorbellDUT) files() []string { return []string{"hca_doorbell.v"} }
func (d *doorbellDUT) params() []Param { return nil }
func (d *doorbellDUT) inputs() []Signal {
	return []Signal{{Name: "mmio_valid", Width: 1}, {Name: "mmio_addr", Width: 32}, {Name: "mmio_data", Width: 64}, {Name: "db_ready", Width: 1}}
}
func (d *doorbellDUT) outputs() []Signal {
	return []Signal{
		{Name: "db_valid", Width: 1}, {Name: "db_qpn", Width: 24, ValidWhen: "db_valid"},
		{Name: "db_producer", Width: 16, ValidWhen: "db_valid"},
	}
}

// otherOffsets are UAR offsets that are not a send doorbell: the CQ
// doorbell (0x20), the rest of a BlueFlame WQE in either half, the words
// just outside the halves and a third half that does not exist.
var otherOffsets = []uint32{0x0, 0x20, 0x7f8, 0x808, 0x838, 0x8f8, 0x908, 0x9f8, 0xa00, 0xb00, 0xff8}

func (d *doorbellDUT) cycle(r *rand.Rand, in, out []Value) {
	if d.c%256 == 0 {
		d.pWrite = []float64{0.1, 0.5, 1}[r.IntN(3)]
		d.pReady = []float64{0.3, 0.9, 1}[r.IntN(3)]
	}
	d.c++
	write := r.Float64() < d.pWrite
	page := r.Uint32() & 0xfffff
	doorbell := write && r.IntN(4) > 0
	offset := []uint32{0x800, 0x900}[r.IntN(2)]
	if !doorbell {
		offset = otherOffsets[r.IntN(len(otherOffsets))]
	}
	c := randomWQECase(r)
	if r.IntN(4) == 0 {
		c.index = 0xffff - uint16(r.IntN(16)) // the producer count wraps past 2^16
	}
	if r.IntN(16) == 0 {
		// The largest WQE: 16 blocks.
		c.wr, c.mutate = hca.SendWR{Opcode: hca.WRSend, Inline: true, Length: hca.MaxInlineLimit}, nil
	}
	var buf [16 * hca.WQEBBBytes]byte
	var inline []byte
	if c.wr.Inline {
		inline = make([]byte, c.wr.Length)
	}
	hca.EncodeSendWQE(buf[:], &c.wr, c.index, c.qpn, inline)
	if c.mutate != nil {
		c.mutate(buf[:]) // DS 0 or too small, an unknown opcode, the ignored ctrl bits
	}
	ready := r.Float64() < d.pReady
	in[0], in[1], in[2], in[3] = b2v(write), U(uint64(page<<12|offset)), U(binary.BigEndian.Uint64(buf[:8])), b2v(ready)

	out[0], out[1], out[2] = b2v(d.valid), U(0), U(0)
	if d.valid {
		out[1], out[2] = U(uint64(d.qpn)), U(uint64(d.producer))
	}

	if d.valid && ready {
		d.valid = false
	}
	if write && doorbell {
		if d.valid {
			d.replaced++
		}
		bbs := hca.WQEBBsOfCtrl(buf[:])
		d.valid, d.qpn, d.producer = true, c.qpn, c.index+uint16(bbs)
		d.rung++
		d.bbs[bbs]++
		if buf[7]&0x3f == 0 {
			d.ds0++
		}
		if d.producer < c.index {
			d.wrapped++
		}
	} else if write {
		d.ignored++
	}
}

// TestDoorbellStimulusCovers: every seed rings hundreds of doorbells, of
// WQEs of every block count 1 to 16 and of DS 0, with producer counts
// that wrap past 2^16, writes to other offsets, and doorbells replaced
// while waiting.
func TestDoorbellStimulusCovers(t *testing.T) {
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := &doorbellDUT{}
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		for range cosimCycles {
			d.cycle(r, in, out)
		}
		assert.GreaterOrEqual(t, d.rung, 500, "seed %d", seed)
		assert.GreaterOrEqual(t, d.ignored, 150, "seed %d", seed)
		for b := 1; b <= 16; b++ {
			assert.GreaterOrEqual(t, d.bbs[b], 3, "seed %d: WQEs of %d blocks", seed, b)
		}
		assert.GreaterOrEqual(t, d.ds0, 5, "seed %d: DS 0", seed)
		assert.GreaterOrEqual(t, d.wrapped, 20, "seed %d: producer past 2^16", seed)
		assert.GreaterOrEqual(t, d.replaced, 20, "seed %d: replaced", seed)
	}
}

// TestDoorbellMutantsFail: each slip below fails the co-simulation of the
// first seed.
//
// 1000 cycles of the 3000: each mutant first mismatched by cycle 22
// (Icarus, 2026-12-02).
func TestDoorbellMutantsFail(t *testing.T) {
	const f = "hca_doorbell.v"
	runMutantsFor(t, 1000, func() cosimDUT { return &doorbellDUT{} }, []cosimMutant{
		{"the second BlueFlame half missed", f, "mmio_addr[11:0] == BF0 || mmio_addr[11:0] == BF1", "mmio_addr[11:0] == BF0"},
		{"the whole UAR offset not decoded", f, "mmio_addr[11:0] == BF0 || mmio_addr[11:0] == BF1", "mmio_addr[11] == 1'b1"},
		{"the block count rounded down", f, "{1'b0, ds[5:2]} + {4'd0, ds[1:0] != 2'd0}", "{1'b0, ds[5:2]}"},
		{"DS 0 taking no block", f, "(ds == 6'd0) ? 5'd1 :", "(ds == 6'd0) ? 5'd0 :"},
		{"the index little-endian", f, "wire [15:0] index  = mmio_data[55:40];", "wire [15:0] index  = {mmio_data[47:40], mmio_data[55:48]};"},
		{"the DS count with the two bits above it", f, "wire [5:0]  ds     = mmio_data[5:0];", "wire [5:0]  ds     = mmio_data[5:0] | {mmio_data[7:6], 4'd0};"},
		{"the producer the WQE's own index", f, "db_producer <= index + {11'd0, bbs};", "db_producer <= index;"},
		{"the QPN one byte early", f, "db_qpn      <= mmio_data[31:8];", "db_qpn      <= mmio_data[39:16];"},
		{"a waiting doorbell never replaced", f, "if (mmio_valid && at_bf) begin", "if (mmio_valid && at_bf && !db_valid) begin"},
	})
}
