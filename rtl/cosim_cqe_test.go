package rtl

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_cqe_writer <-> hca.EncodeCQE, hca.CQESlot ----

// bytesValue packs b as a big-endian vector: byte k of n in bits
// [8(n-1-k)+7 : 8(n-1-k)], the block order of the RTL's 512-bit datapaths
// (byte 0 most significant). len(b) is a multiple of 8.
func bytesValue(b []byte) Value {
	n := len(b)
	v := make(Value, n/8)
	for w := range v {
		v[w] = binary.BigEndian.Uint64(b[n-8*(w+1) : n-8*w])
	}
	return v
}

// cqeRing is one CQ as the model's CQE stage keeps it (hca.CQ): ring base
// and depth, CQEs written (pi) and consumed (ci), the overrun flag.
type cqeRing struct {
	base    uint64
	logD    int
	pi, ci  uint32
	overrun bool
}

// cqeWriterDUT drives hca_cqe_writer with completions, first those of
// cqeDirected in order, then random ones, into CQs of 2 to 2^22 entries
// that a consumer drains at varying speed (so rings wrap many times and
// overrun), and expects each written beat to be hca.EncodeCQE's 64 bytes
// of the completion with the owner bit, and its address the slot, that
// hca.CQESlot gives for the ring, as the model's CQE stage writes it
// (hca.Device.cqeVisible). Its bookkeeping mirrors the block's: one CQE
// in the output register, offered until taken.
type cqeWriterDUT struct {
	cqnW  int
	rings []cqeRing

	// The block's output register.
	wrValid bool
	wrAddr  uint64
	wrData  Value

	queue    []hca.CQE // completions still to offer, next first
	queueCQN []int     // their CQs
	directed int       // how many of queue are cqeDirected's
	offered  bool      // the head of queue was offered last cycle and not taken

	cfgPending []int // CQs still to create after reset
	cfgCQN     int   // the last CQ creation's fields (driven again when idle)
	cfgBase    uint64
	cfgLogD    int
	ciCQN      int // the last consumer-index update's
	ciVal      uint32

	c                        int
	pCpl, pWrReady, pConsume float64

	// Coverage, for TestCQEWriterStimulusCovers.
	taken, written, overruns, wraps, reconfigs int
	seenStatus                                 map[hca.WCStatus]int
	seenOpcode                                 map[uint8]int
	seenOwner                                  [2]int
	maxQPN, bc31, immAbsent, immPresent        int
}

// cqeDirected are completions every seed offers first, in order: a
// success of each kind the model writes (requester of every WR opcode,
// the three receive opcodes, a UD receive), an error of every status the
// model produces on either side and three statuses it has no syndrome for
// (EncodeCQE writes syndrome 0 then), immediates present and absent, and
// the edges of every field: a 24-bit QPN and source QP at their maximum,
// byte counts 2^31 and 2^32 - 1, a 16-bit counter at its maximum.
var cqeDirected = func() []hca.CQE {
	var cs []hca.CQE
	for op := hca.WRRDMAWrite; op <= hca.WRFetchAdd; op++ {
		cs = append(cs, hca.CQE{Opcode: hca.CQEReq, WROp: op, QPN: 0x100 + uint32(op), Counter: uint16(op) * 3, ByteCnt: 4096 * uint32(op+1),
			HasImm: op == hca.WRSendImm || op == hca.WRRDMAWriteImm})
	}
	cs = append(cs,
		hca.CQE{Opcode: hca.CQERespSend, QPN: 0x101, Counter: 7, ByteCnt: 100, Receiver: true},
		hca.CQE{Opcode: hca.CQERespSendImm, QPN: 0x101, Counter: 8, ByteCnt: 100, Imm: 0xdeadbeef, HasImm: true, Receiver: true},
		hca.CQE{Opcode: hca.CQERespWrImm, QPN: 0x101, Counter: 9, ByteCnt: 65536, Imm: 0x01020304, HasImm: true, Receiver: true},
		// A UD receive: 40-byte GRH area + payload; the sender's QP.
		hca.CQE{Opcode: hca.CQERespSend, QPN: 0x102, Counter: 0, ByteCnt: 40 + 2048, Receiver: true, SrcQP: 0xfffffe},
		// An immediate with HasImm false (a requester CQE carries no
		// immediate flag; EncodeCQE writes Imm whatever HasImm says).
		hca.CQE{Opcode: hca.CQEReq, WROp: hca.WRSend, QPN: 0x103, Imm: 0xcafef00d},
	)
	statuses := []hca.WCStatus{hca.WCLocLenErr, hca.WCLocQPOpErr, hca.WCLocProtErr, hca.WCWRFlushErr, hca.WCMWBindErr, hca.WCBadRespErr,
		hca.WCLocAccessErr, hca.WCRemInvReqErr, hca.WCRemAccessErr, hca.WCRemOpErr, hca.WCRetryExcErr, hca.WCRNRRetryExcErr,
		3, 14, 21, 255} // LOC_EEC_OP_ERR, LOC_RDD_VIOL_ERR, GENERAL_ERR, none: no syndrome
	for i, st := range statuses {
		cs = append(cs,
			hca.CQE{Opcode: hca.CQEReq, Status: st, WROp: hca.WROpcode(i % 7), QPN: 0x200 + uint32(i), Counter: uint16(i), ByteCnt: uint32(i) << 8},
			hca.CQE{Opcode: hca.CQERespSend, Status: st, QPN: 0x300 + uint32(i), Counter: uint16(i), Receiver: true})
	}
	cs = append(cs,
		hca.CQE{Opcode: hca.CQEReq, WROp: hca.WRRDMARead, QPN: 0xffffff, Counter: 0xffff, ByteCnt: 1 << 31},
		hca.CQE{Opcode: hca.CQERespSendImm, QPN: 0xffffff, Counter: 0xffff, ByteCnt: 0xffffffff, Imm: 0xffffffff, HasImm: true,
			Receiver: true, SrcQP: 0xffffff},
		hca.CQE{Opcode: hca.CQEReq, WROp: hca.WRSend, QPN: 0, Counter: 0, ByteCnt: 0},
		hca.CQE{Opcode: hca.CQEReqErr, Status: hca.WCRetryExcErr, WROp: hca.WRFetchAdd, QPN: 0xffffff, Counter: 0x8000, ByteCnt: 1 << 31},
	)
	return cs
}()

func newCQEWriterDUT(cqnW int) *cqeWriterDUT {
	n := 1 << cqnW
	d := &cqeWriterDUT{cqnW: cqnW, rings: make([]cqeRing, n), seenStatus: map[hca.WCStatus]int{}, seenOpcode: map[uint8]int{}}
	// Every CQ is created in the first cycles, before any completion.
	for k := range n {
		d.cfgPending = append(d.cfgPending, k)
	}
	// The directed completions go to CQ 0, two deep, whose consumer
	// keeps up while they last: every one is written, and they wrap the
	// ring every other CQE.
	for _, c := range cqeDirected {
		d.queue = append(d.queue, c)
		d.queueCQN = append(d.queueCQN, 0)
	}
	d.directed = len(cqeDirected)
	return d
}

func (d *cqeWriterDUT) module() string  { return "hca_cqe_writer" }
func (d *cqeWriterDUT) files() []string { return []string{"hca_cqe_writer.v"} }
func (d *cqeWriterDUT) params() []Param { return []Param{{"CQN_W", d.cqnW}} }
func (d *cqeWriterDUT) inputs() []Signal {
	return []Signal{
		{Name: "cpl_valid", Width: 1}, {Name: "cpl_cqn", Width: d.cqnW}, {Name: "cpl_opcode", Width: 4},
		{Name: "cpl_status", Width: 8}, {Name: "cpl_receiver", Width: 1}, {Name: "cpl_wr_op", Width: 3},
		{Name: "cpl_qpn", Width: 24}, {Name: "cpl_wqe_counter", Width: 16}, {Name: "cpl_byte_count", Width: 32},
		{Name: "cpl_imm", Width: 32}, {Name: "cpl_src_qp", Width: 24},
		{Name: "cq_cfg_valid", Width: 1}, {Name: "cq_cfg_cqn", Width: d.cqnW}, {Name: "cq_cfg_base", Width: 64},
		{Name: "cq_cfg_log_depth", Width: 5},
		{Name: "cq_ci_valid", Width: 1}, {Name: "cq_ci_cqn", Width: d.cqnW}, {Name: "cq_ci", Width: 32},
		{Name: "wr_ready", Width: 1},
	}
}
func (d *cqeWriterDUT) outputs() []Signal {
	return []Signal{
		{Name: "cpl_ready", Width: 1}, {Name: "wr_valid", Width: 1},
		{Name: "wr_addr", Width: 64, ValidWhen: "wr_valid"}, {Name: "wr_data", Width: 512, ValidWhen: "wr_valid"},
		{Name: "cq_overrun", Width: 1 << d.cqnW},
	}
}

// randomCQE draws a completion the model could write, or one with a
// random 4-bit opcode or 8-bit status (the encoder's fields at any value).
func randomCQE(r *rand.Rand) hca.CQE {
	c := hca.CQE{QPN: r.Uint32() & 0xffffff, Counter: uint16(r.Uint32()), ByteCnt: r.Uint32(), WROp: hca.WROpcode(r.IntN(7))}
	switch x := r.IntN(10); {
	case x < 3:
		c.Opcode = hca.CQEReq
	case x < 7:
		c.Opcode, c.Receiver = uint8(1+r.IntN(3)), true
		c.WROp = 0 // a receive completion has no WR opcode
		c.HasImm = c.Opcode != hca.CQERespSend
		if c.HasImm {
			c.Imm = r.Uint32()
		}
		if r.IntN(3) == 0 {
			c.SrcQP = r.Uint32() & 0xffffff
		}
	default:
		c.Opcode, c.Receiver, c.Imm, c.SrcQP = uint8(r.IntN(16)), r.IntN(2) == 0, r.Uint32(), r.Uint32()&0xffffff
	}
	switch x := r.IntN(8); {
	case x == 0:
		c.Status = hca.WCStatus(1 + r.IntN(13))
	case x == 1:
		c.Status = hca.WCStatus(r.IntN(256))
	}
	if r.IntN(16) == 0 {
		c.QPN = 0xffffff
	}
	if r.IntN(16) == 0 {
		c.ByteCnt = 1 << 31
	}
	return c
}

func (d *cqeWriterDUT) cycle(r *rand.Rand, in, out []Value) {
	if d.c%256 == 0 {
		d.pCpl = []float64{0.2, 0.6, 0.95}[r.IntN(3)]
		d.pWrReady = []float64{0.1, 0.5, 1}[r.IntN(3)]
		// A slow consumer lets CQs fill and overrun.
		d.pConsume = []float64{0.02, 0.3, 0.9}[r.IntN(3)]
	}
	d.c++
	n := 1 << d.cqnW

	// Create a CQ (the first cycles, then now and then a new one in place
	// of an old: pi, ci and the overrun flag start again).
	cfg := false
	if len(d.cfgPending) > 0 {
		cfg, d.cfgCQN = true, d.cfgPending[0]
		d.cfgPending = d.cfgPending[1:]
	} else if r.IntN(400) == 0 {
		cfg, d.cfgCQN = true, r.IntN(n)
		d.reconfigs++
	}
	if cfg {
		d.cfgLogD = []int{1, 1, 2, 3, 10, 22}[r.IntN(6)]
		if d.cfgCQN == 0 {
			d.cfgLogD = 1
		}
		d.cfgBase = r.Uint64() &^ 63
		if r.IntN(4) == 0 {
			// A ring at the top of the address space: base + slot * 64
			// wraps in 64 bits, in the model as in the block.
			d.cfgBase = ^uint64(0)&^63 - uint64(r.IntN(4))<<6
		}
	}
	// The consumer polls: ci moves up to pi, now and then to odd values
	// (the counts are free-running 32-bit values the block compares modulo
	// 2^32). While directed completions are left, it drains CQ 0.
	// An update in the cycle its CQ is created is lost to the creation.
	ci := d.directed > 0 || r.Float64() < d.pConsume
	if ci {
		// Mostly a CQ with CQEs to consume, as a poller finds them.
		d.ciCQN = r.IntN(n)
		for try := 0; try < n && d.rings[d.ciCQN].pi == d.rings[d.ciCQN].ci; try++ {
			d.ciCQN = r.IntN(n)
		}
		if d.directed > 0 {
			d.ciCQN = 0
		}
		ring := d.rings[d.ciCQN]
		depth := uint32(1) << ring.logD
		switch {
		case d.directed > 0 || ring.pi-ring.ci > depth:
			d.ciVal = ring.pi // all of it (and out of the odd states below)
		case r.IntN(100) == 0:
			// A consumer index ahead of pi: pi - ci wraps in 32 bits to
			// nearly 2^32, no room, until the consumer catches up.
			d.ciVal = ring.pi + 1 + uint32(r.IntN(4))
		case r.IntN(100) == 0:
			// Behind pi by depth - 1 .. depth + 1: room for one, none, none.
			d.ciVal = ring.pi - depth + 1 - uint32(r.IntN(3))
		default:
			d.ciVal = ring.ci + uint32(r.IntN(int(ring.pi-ring.ci)+1))
		}
	}

	// A completion: the next one, held until taken.
	if len(d.queue) == 0 {
		d.queue = append(d.queue, randomCQE(r))
		d.queueCQN = append(d.queueCQN, r.IntN(n))
	}
	cplValid := d.c > n && (d.offered || r.Float64() < d.pCpl)
	c, cqn := d.queue[0], d.queueCQN[0]
	if !cplValid {
		c, cqn = randomCQE(r), r.IntN(n) // the block must ignore these
	}
	wrReady := r.Float64() < d.pWrReady

	in[0], in[1], in[2] = b2v(cplValid), U(uint64(cqn)), U(uint64(c.Opcode&15))
	in[3], in[4], in[5] = U(uint64(c.Status)), b2v(c.Receiver), U(uint64(c.WROp))
	in[6], in[7], in[8] = U(uint64(c.QPN)), U(uint64(c.Counter)), U(uint64(c.ByteCnt))
	in[9], in[10] = U(uint64(c.Imm)), U(uint64(c.SrcQP))
	in[11], in[12], in[13], in[14] = b2v(cfg), U(uint64(d.cfgCQN)), U(d.cfgBase), U(uint64(d.cfgLogD))
	if !cfg {
		in[12], in[13], in[14] = U(uint64(r.IntN(n))), U(r.Uint64()), U(uint64(r.IntN(32)))
	}
	in[15], in[16], in[17] = b2v(ci), U(uint64(d.ciCQN)), U(uint64(d.ciVal))
	if !ci {
		in[16], in[17] = U(uint64(r.IntN(n))), U(uint64(r.Uint32()))
	}
	in[18] = b2v(wrReady)

	// The outputs of this cycle.
	cplReady := !d.wrValid || wrReady
	out[0], out[1] = b2v(cplReady), b2v(d.wrValid)
	out[2], out[3] = U(0), make(Value, 8)
	if d.wrValid {
		out[2], out[3] = U(d.wrAddr), d.wrData
	}
	flags := make(Value, (n+63)/64)
	for k, ring := range d.rings {
		if ring.overrun {
			flags[k/64] |= 1 << (k % 64)
		}
	}
	out[4] = flags

	// The rising edge, in the block's order: the output register, the
	// completion (against ci and pi from the start of the cycle), the
	// consumer index, the CQ creation last.
	if d.wrValid && wrReady {
		d.wrValid = false
	}
	d.offered = cplValid && !cplReady
	if cplValid && cplReady {
		d.take(c, cqn)
		d.queue, d.queueCQN = d.queue[1:], d.queueCQN[1:]
		d.directed = max(d.directed-1, 0)
	}
	if ci {
		d.rings[d.ciCQN].ci = d.ciVal
	}
	if cfg {
		d.rings[d.cfgCQN] = cqeRing{base: d.cfgBase, logD: d.cfgLogD}
	}
}

// take is the model's CQE stage for one completion (hca.Device.cqeVisible).
func (d *cqeWriterDUT) take(c hca.CQE, cqn int) {
	d.taken++
	ring := &d.rings[cqn]
	slot, owner, room := hca.CQESlot(1<<ring.logD, ring.pi, ring.ci)
	if !room {
		ring.overrun = true
		d.overruns++
		return
	}
	c.Owner = owner
	var buf [hca.CQEBytes]byte
	hca.EncodeCQE(buf[:], &c)
	d.wrValid, d.wrAddr, d.wrData = true, ring.base+uint64(slot)*hca.CQEBytes, bytesValue(buf[:])
	ring.pi++
	d.written++
	d.seenStatus[c.Status]++
	d.seenOpcode[buf[63]>>4]++
	d.seenOwner[b2i(owner)]++
	if slot == 0 && ring.pi > 1 {
		d.wraps++
	}
	if c.QPN == 0xffffff {
		d.maxQPN++
	}
	if c.ByteCnt == 1<<31 {
		d.bc31++
	}
	if c.HasImm {
		d.immPresent++
	} else {
		d.immAbsent++
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCQEWriterStimulusCovers: every seed's completions write every CQE
// opcode (the four successes, REQ_ERR and RESP_ERR), every status the
// model produces and some it has no syndrome for, both owner values, ring
// wraps and overruns, and the field edges, each many times, so a block
// that got one of them wrong could not match the model by luck.
func TestCQEWriterStimulusCovers(t *testing.T) {
	for _, cqnW := range []int{2, cqnW} {
		for _, seed := range cosimSeeds {
			r := rand.New(rand.NewPCG(seed, 0x7e57))
			d := newCQEWriterDUT(cqnW)
			in := make([]Value, len(d.inputs()))
			out := make([]Value, len(d.outputs()))
			for range cosimCycles {
				d.cycle(r, in, out)
			}
			// Every directed completion was offered and taken.
			assert.Greater(t, d.taken, len(cqeDirected), "cqn_w %d seed %d", cqnW, seed)
			for _, op := range []uint8{hca.CQEReq, hca.CQERespWrImm, hca.CQERespSend, hca.CQERespSendImm, hca.CQEReqErr, hca.CQERespErr} {
				assert.GreaterOrEqual(t, d.seenOpcode[op], 10, "cqn_w %d seed %d: CQE opcode %d", cqnW, seed, op)
			}
			for st := hca.WCStatus(1); st <= hca.WCRNRRetryExcErr; st++ {
				assert.GreaterOrEqual(t, d.seenStatus[st], 2, "cqn_w %d seed %d: status %v", cqnW, seed, st)
			}
			unmapped := 0
			for st, k := range d.seenStatus {
				if st > hca.WCRNRRetryExcErr || st == 3 || st == 6 {
					unmapped += k
				}
			}
			assert.GreaterOrEqual(t, unmapped, 10, "cqn_w %d seed %d: statuses without a syndrome", cqnW, seed)
			assert.GreaterOrEqual(t, d.seenOwner[0], 100, "cqn_w %d seed %d: owner 0", cqnW, seed)
			assert.GreaterOrEqual(t, d.seenOwner[1], 100, "cqn_w %d seed %d: owner 1", cqnW, seed)
			assert.GreaterOrEqual(t, d.wraps, 50, "cqn_w %d seed %d: ring wraps", cqnW, seed)
			assert.GreaterOrEqual(t, d.overruns, 20, "cqn_w %d seed %d: overruns", cqnW, seed)
			assert.GreaterOrEqual(t, d.reconfigs, 2, "cqn_w %d seed %d: CQs created again", cqnW, seed)
			assert.GreaterOrEqual(t, d.maxQPN, 10, "cqn_w %d seed %d: QPN 0xffffff", cqnW, seed)
			assert.GreaterOrEqual(t, d.bc31, 10, "cqn_w %d seed %d: byte count 2^31", cqnW, seed)
			assert.GreaterOrEqual(t, d.immPresent, 100, "cqn_w %d seed %d: immediates", cqnW, seed)
			assert.GreaterOrEqual(t, d.immAbsent, 100, "cqn_w %d seed %d: no immediate", cqnW, seed)
		}
	}
}

// TestCQEWriterMutantsFail: each slip below, the kind an RTL engineer
// makes in a CQE writer, fails the co-simulation of the first seed.
//
// 1500 cycles of the 3000: each mutant first mismatched by cycle 369
// (Icarus, 2026-12-02).
func TestCQEWriterMutantsFail(t *testing.T) {
	const f = "hca_cqe_writer.v"
	runMutantsFor(t, 1500, func() cosimDUT { return newCQEWriterDUT(2) }, []cosimMutant{
		{"the owner bit one pass early", f, "wire        owner   = pi[logd];", "wire        owner   = pi[logd - 5'd1];"},
		{"the owner bit not flipped", f, "opcode, 3'd0, owner ", "opcode, 3'd0, 1'b0 "},
		{"byte_cnt little-endian", f, "        cpl_byte_count,                          // [44:47]",
			"        cpl_byte_count[7:0], cpl_byte_count[15:8], cpl_byte_count[23:16], cpl_byte_count[31:24],"},
		{"the QPN one byte late", f, "sop, cpl_qpn,                            // [56:59] sop_drop_qpn",
			"cpl_qpn, sop,                            // [56:59] sop_drop_qpn"},
		{"a responder CQE carries a WQE opcode", f, "cpl_receiver ? 8'd0 : mlx5_op", "mlx5_op"},
		{"room for one CQE more than the ring", f, "< depth;", "<= depth;"},
		{"a slot is a byte, not 64", f, "{26'd0, slot, 6'd0}", "{32'd0, slot}"},
		{"BAD_RESP_ERR's syndrome", f, "8'd7:    syndrome = 8'h10;", "8'd7:    syndrome = 8'h07;"},
		{"an unmapped status's syndrome is the status", f, "default: syndrome = 8'h00;", "default: syndrome = cpl_status;"},
		{"a receive error as a requester's", f, "cpl_receiver ? 4'd14 : 4'd13", "4'd13"},
		{"the consumer index seen in its own cycle", f, "wire        room    = (pi - cq_ci_r[cpl_cqn]) < depth;",
			"wire        room    = (pi - ((cq_ci_valid && cq_ci_cqn == cpl_cqn) ? cq_ci : cq_ci_r[cpl_cqn])) < depth;"},
		{"CQ creation leaves pi", f, "                cq_pi[cq_cfg_cqn]      <= 32'd0;\n", ""},
	})
}
