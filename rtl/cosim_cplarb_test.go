package rtl

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/hcasim/hcasim/hca"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---- hca_cpl_arb: the requester's and the responder's completions into one cpl_* ----
//
// The Go side draws requester completions (hca.Completion of a random send
// WQE, the CQE hca.RequesterCQE writes: signaled successes and errors) and
// responder actions that complete a receive WQE (hca.RespAction with
// RecvDone, the CQE hca.ResponderCQE writes: RESP_SEND, RESP_SEND_IMM,
// RESP_WR_IMM and the responder's error statuses), offers each on its side
// until taken, writes receive CQs into QP contexts through cfg_* now and
// then, and checks every cycle who is ready and, while cpl_valid, every
// field on cpl_* against the model's CQE of the side the round robin picks
// (hca_cpl_arb's header): the CQ a's own, b's the receive CQ its QP's
// context held at the start of the cycle.

const cplArbQPNW = 3 // 8 QP contexts: the QPNs below hit every one and alias

type cplArbDUT struct {
	rcq          [1 << cplArbQPNW]int // the model's QP contexts: receive CQ
	aV, bV       bool
	aCQN         int
	aCQE, bCQE   hca.CQE
	last         int // 1: b taken last
	hold         bool
	sel          int
	c            int
	pA, pB, pRdy float64

	both, toA, toB, held, cfgs, rcqs int // coverage
}

func (d *cplArbDUT) module() string  { return "hca_cpl_arb" }
func (d *cplArbDUT) files() []string { return []string{"hca_cpl_arb.v"} }
func (d *cplArbDUT) params() []Param {
	return []Param{{"QPN_W", cplArbQPNW}, {"CQN_W", 4}}
}
func (d *cplArbDUT) inputs() []Signal {
	return []Signal{
		{Name: "cfg_valid", Width: 1}, {Name: "cfg_qpn", Width: 24}, {Name: "cfg_rcqn", Width: 4},
		{Name: "a_valid", Width: 1}, {Name: "a_cqn", Width: 4}, {Name: "a_status", Width: 8}, {Name: "a_wr_op", Width: 3},
		{Name: "a_qpn", Width: 24}, {Name: "a_wqe_counter", Width: 16}, {Name: "a_byte_count", Width: 32},
		{Name: "b_valid", Width: 1}, {Name: "b_qpn", Width: 24}, {Name: "b_opcode", Width: 4}, {Name: "b_status", Width: 8},
		{Name: "b_index", Width: 16}, {Name: "b_len", Width: 32}, {Name: "b_imm", Width: 32},
		{Name: "cpl_ready", Width: 1},
	}
}
func (d *cplArbDUT) outputs() []Signal {
	v := func(n string, w int) Signal { return Signal{Name: n, Width: w, ValidWhen: "cpl_valid"} }
	return []Signal{
		{Name: "a_ready", Width: 1}, {Name: "b_ready", Width: 1}, {Name: "cpl_valid", Width: 1},
		v("cpl_cqn", 4), v("cpl_opcode", 4), v("cpl_status", 8), v("cpl_receiver", 1), v("cpl_wr_op", 3),
		v("cpl_qpn", 24), v("cpl_wqe_counter", 16), v("cpl_byte_count", 32), v("cpl_imm", 32), v("cpl_src_qp", 24),
	}
}

// cplArbQPN draws a QPN whose low bits pick any of the 8 contexts.
func cplArbQPN(r *rand.Rand) uint32 { return 0x100 + uint32(r.IntN(64)) }

// newReqCQE: a signaled send WQE's completion, success or one of the
// requester's error statuses, as hca.RequesterCQE writes it.
func newReqCQE(r *rand.Rand) hca.CQE {
	st := hca.WCSuccess
	if r.IntN(4) == 0 {
		st = []hca.WCStatus{hca.WCLocLenErr, hca.WCLocProtErr, hca.WCWRFlushErr, hca.WCRemAccessErr, hca.WCRetryExcErr}[r.IntN(5)]
	}
	w := hca.SendWQE{Opcode: hca.WROpcode(r.IntN(7)), Index: uint16(r.Uint32()), Signaled: true, Length: r.Uint32()}
	c, ok := hca.RequesterCQE(cplArbQPN(r), hca.Completion{WQE: w, Status: st})
	if !ok {
		panic("cplArb: a signaled WQE writes a CQE")
	}
	return c
}

// newRespCQE: a receive WQE completed by the responder (a SEND's last or
// only packet, a WRITE with immediate; or one of the responder's errors),
// as hca.ResponderCQE writes it.
func newRespCQE(r *rand.Rand) hca.CQE {
	a := hca.RespAction{RecvDone: true, Recv: hca.RecvWQE{Index: r.Uint32()}, RecvLen: r.Uint32(), Imm: r.Uint32()}
	a.RecvOpcode = []uint8{hca.CQERespWrImm, hca.CQERespSend, hca.CQERespSendImm}[r.IntN(3)]
	if r.IntN(4) == 0 {
		a.RecvStatus = []hca.WCStatus{hca.WCLocLenErr, hca.WCLocProtErr, hca.WCRemAccessErr}[r.IntN(3)]
	}
	return hca.ResponderCQE(cplArbQPN(r), &a, r.IntN(2) == 0)
}

func (d *cplArbDUT) cycle(r *rand.Rand, in, out []Value) {
	if d.c%200 == 0 {
		d.pA = []float64{0.05, 0.5, 1}[r.IntN(3)]
		d.pB = []float64{0.05, 0.5, 1}[r.IntN(3)]
		d.pRdy = []float64{0.2, 0.7, 1}[r.IntN(3)]
	}
	d.c++
	if !d.aV && r.Float64() < d.pA {
		d.aV, d.aCQE, d.aCQN = true, newReqCQE(r), r.IntN(16)
	}
	if !d.bV && r.Float64() < d.pB {
		d.bV, d.bCQE = true, newRespCQE(r)
	}
	cfg := r.IntN(8) == 0
	cfgQPN, cfgCQ := cplArbQPN(r), r.IntN(16)
	ready := r.Float64() < d.pRdy
	a, b := d.aCQE, d.bCQE
	in[0], in[1], in[2] = b2v(cfg), U(uint64(cfgQPN)), U(uint64(cfgCQ))
	in[3], in[4], in[5], in[6] = b2v(d.aV), U(uint64(d.aCQN)), U(uint64(a.Status)), U(uint64(a.WROp))
	in[7], in[8], in[9] = U(uint64(a.QPN)), U(uint64(a.Counter)), U(uint64(a.ByteCnt))
	in[10], in[11], in[12], in[13] = b2v(d.bV), U(uint64(b.QPN)), U(uint64(b.Opcode)), U(uint64(b.Status))
	in[14], in[15], in[16] = U(uint64(b.Counter)), U(uint64(b.ByteCnt)), U(uint64(b.Imm))
	in[17] = b2v(ready)

	// This cycle's outputs: the pick held, else round robin.
	pick := d.sel
	if !d.hold {
		pick = 0
		if d.bV && (!d.aV || d.last == 0) {
			pick = 1
		}
	}
	valid := pick == 0 && d.aV || pick == 1 && d.bV
	out[0], out[1], out[2] = b2v(ready && pick == 0), b2v(ready && pick == 1), b2v(valid)
	for i := 3; i < 13; i++ {
		out[i] = U(0)
	}
	if valid {
		c, cq := a, d.aCQN
		if pick == 1 {
			c, cq = b, d.rcq[b.QPN%(1<<cplArbQPNW)]
		}
		// The writer's fields of the model's CQE: its opcode (the writer
		// turns an error into REQ_ERR/RESP_ERR), status, receiver flag, WR
		// opcode (a receive's is 0), QPN, counter, byte count, immediate
		// and source QP.
		out[3], out[4], out[5], out[6] = U(uint64(cq)), U(uint64(c.Opcode)), U(uint64(c.Status)), b2v(c.Receiver)
		out[7], out[8], out[9], out[10] = U(uint64(c.WROp)), U(uint64(c.QPN)), U(uint64(c.Counter)), U(uint64(c.ByteCnt))
		out[11], out[12] = U(uint64(c.Imm)), U(uint64(c.SrcQP))
		if d.aV && d.bV {
			d.both++
		}
		if pick == 1 && cq != 0 {
			d.rcqs++
		}
	}

	// The rising edge.
	if valid {
		d.hold, d.sel = !ready, pick
		if !ready {
			d.held++
		} else {
			d.last = pick
			if pick == 0 {
				d.aV = false
				d.toA++
			} else {
				d.bV = false
				d.toB++
			}
		}
	}
	if cfg {
		d.rcq[cfgQPN%(1<<cplArbQPNW)] = cfgCQ
		d.cfgs++
	}
}

// TestCplArbCosim: hca_cpl_arb on every seed. Coverage, per seed over 3000
// cycles: both sides offer at once (phases of 0.5 and 1 each make it
// common), picks wait on cpl_ready, both sides are taken, and responder
// completions go to receive CQs other than 0 (cfg_* writes one cycle in 8).
func TestCplArbCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := &cplArbDUT{}
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		for range cosimCycles {
			d.cycle(r, in, out)
		}
		msg := []any{"seed %d", seed}
		assert.GreaterOrEqual(t, d.both, 100, msg...)
		assert.GreaterOrEqual(t, d.held, 50, msg...)
		assert.GreaterOrEqual(t, d.toA, 200, msg...)
		assert.GreaterOrEqual(t, d.toB, 200, msg...)
		assert.GreaterOrEqual(t, d.rcqs, 100, msg...)
	}
	ctx := context.Background()
	dir := t.TempDir()
	files := writeCosimBench(t, dir, &cplArbDUT{})
	_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
	require.NoError(t, err)
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		trace := filepath.Join(dir, "trace.hex")
		cycles := writeCosimTrace(t, trace, &cplArbDUT{}, r)
		out, err := runTool(ctx, dir, "vvp", "-n", "sim.vvp", "+trace="+trace)
		require.NoError(t, err)
		checkCosimOutput(t, out, cycles)
	}
}

// TestCplArbMutantsFail: each slip fails the first seed.
func TestCplArbMutantsFail(t *testing.T) {
	const f = "hca_cpl_arb.v"
	runMutants(t, func() cosimDUT { return &cplArbDUT{} }, []cosimMutant{
		{"the responder's side dropped", f, "assign cpl_valid = pick_b ? b_valid : a_valid;", "assign cpl_valid = pick_b ? 1'b0 : a_valid;"},
		{"the requester's side dropped", f, "assign cpl_valid = pick_b ? b_valid : a_valid;", "assign cpl_valid = pick_b ? b_valid : 1'b0;"},
		{"the responder never yields (no round robin)", f, "(b_valid && (!a_valid || !r_last))", "b_valid"},
		{"the pick not held while it waits", f, "wire pick_b = r_hold ? r_sel :", "wire pick_b = 1'b0 ? r_sel :"},
		{"a receive completion into the send CQ", f, "assign cpl_cqn         = pick_b ? rcq[b_ix] : a_cqn;", "assign cpl_cqn         = a_cqn;"},
		{"the receive CQ table not written", f, "if (cfg_valid) rcq[cfg_qpn[QPN_W-1:0]] <= cfg_rcqn;", "if (1'b0) rcq[cfg_qpn[QPN_W-1:0]] <= cfg_rcqn;"},
		{"a receive completion's opcode as REQ", f, "assign cpl_opcode      = pick_b ? b_opcode : 4'd0;", "assign cpl_opcode      = 4'd0;"},
		{"SEND_IMM's opcode as SEND", f, "assign cpl_opcode      = pick_b ? b_opcode : 4'd0;", "assign cpl_opcode      = pick_b ? (b_opcode == 4'd3 ? 4'd2 : b_opcode) : 4'd0;"},
		{"the immediate lost", f, "assign cpl_imm         = pick_b ? b_imm : 32'd0;", "assign cpl_imm         = 32'd0;"},
		{"not flagged a receive", f, "assign cpl_receiver    = pick_b;", "assign cpl_receiver    = 1'b0;"},
	})
}
