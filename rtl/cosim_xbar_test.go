package rtl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// xbarAllocDUT co-simulates the emitted sw_xbar_alloc against rtlXbarAlloc
// (its Go description, which TestAllocatorsTheRTLTakes holds equal to the
// model's iSLIP round) plus the connection state the module registers:
// which inputs are granted and on which input VL, which outputs are busy
// and from which input. Each cycle draws a request per input VL (a random
// output, some outside the radix; a random output VL; a random length),
// each output VL's credit (mostly plenty, now and then a few blocks or any
// 12-bit value, so heads fit and do not), the done pulses of granted
// inputs, and each output's VL arbiter pick (a waiting VL, now and then
// another one or none), and expects every output the description gives.
type xbarAllocDUT struct {
	ports, vls, portW, vlW int
	alloc                  *rtlXbarAlloc
	granted, busy          []bool
	grantedVL, src         []int
	pReq, pDone, pTight    float64 // phase probabilities (phaseProb)
	c                      int
	// What the stimulus covered, for TestXbarAllocStimulusCovers.
	multiOffers, ties, grants, refusedFit, creditEdge int
}

func newXbarAllocDUT(ports, vls int) *xbarAllocDUT {
	return &xbarAllocDUT{
		ports: ports, vls: vls, portW: idxWidth(ports), vlW: idxWidth(vls),
		alloc:   newRTLXbarAlloc(ports, vls),
		granted: make([]bool, ports), busy: make([]bool, ports),
		grantedVL: make([]int, ports), src: make([]int, ports),
	}
}

// module, files and params make it a cosimDUT (for writeCosimTrace); its
// source is emitted, not a primitive, so runXbarCosim writes the bench.
func (d *xbarAllocDUT) module() string  { return "sw_xbar_alloc" }
func (d *xbarAllocDUT) files() []string { return []string{"rr_arbiter.v", "onehot_encode.v"} }
func (d *xbarAllocDUT) params() []Param { return nil }

// xbarCosimCycles is the allocator case's cycles per seed: fewer than
// cosimCycles, to keep the package's test time, and enough for the
// coverage TestXbarAllocStimulusCovers requires.
const xbarCosimCycles = 800

func (d *xbarAllocDUT) cycles() int { return xbarCosimCycles }

func (d *xbarAllocDUT) inputs() []Signal {
	pv := d.ports * d.vls
	return []Signal{
		{Name: "req_valid", Width: pv}, {Name: "req_port", Width: pv * d.portW},
		{Name: "req_vl", Width: pv * d.vlW}, {Name: "req_blocks", Width: pv * 8},
		{Name: "out_vl_credit", Width: pv * 12}, {Name: "in_done", Width: d.ports},
		{Name: "out_pick_valid", Width: d.ports}, {Name: "out_pick_vl", Width: d.ports * d.vlW},
	}
}

func (d *xbarAllocDUT) outputs() []Signal {
	return []Signal{
		{Name: "in_grant", Width: d.ports}, {Name: "in_grant_vl", Width: d.ports * d.vlW},
		{Name: "out_vl_waiting", Width: d.ports * d.vls}, {Name: "out_pick_taken", Width: d.ports},
		{Name: "out_busy", Width: d.ports}, {Name: "out_src", Width: d.ports * d.portW},
	}
}

// packFields packs vals, each width bits, field k at bits [k*width +: width].
func packFields(vals []int, width int) Value {
	v := make(Value, (len(vals)*width+63)/64)
	for k, x := range vals {
		for b := range width {
			if x>>b&1 != 0 {
				i := k*width + b
				v[i/64] |= 1 << (uint(i) % 64)
			}
		}
	}
	return v
}

func boolFields(bs []bool) Value {
	vals := make([]int, len(bs))
	for i, b := range bs {
		vals[i] = b2i(b)
	}
	return packFields(vals, 1)
}

func (d *xbarAllocDUT) cycle(r *rand.Rand, in, out []Value) {
	P, V := d.ports, d.vls
	pReq := phaseProb(r, d.c, &d.pReq)
	pDone := phaseProb(r, d.c+85, &d.pDone)
	pTight := phaseProb(r, d.c+170, &d.pTight)
	d.c++
	reqValid := make([]bool, P*V)
	reqPort, reqVL, reqBlocks := make([]int, P*V), make([]int, P*V), make([]int, P*V)
	credit := make([]int, P*V)
	for k := range reqValid {
		reqValid[k] = r.Float64() < pReq
		reqPort[k] = r.IntN(P)
		if r.IntN(16) == 0 {
			reqPort[k] = r.IntN(1 << d.portW) // outside the radix when it leaves room
		}
		reqVL[k] = r.IntN(V)
		if k%V > 0 && r.IntN(4) == 0 {
			// The same output and output VL as the input's VL 0 head
			// (per-pair SL-to-VL tables merging VLs): the in.rr rule.
			reqPort[k], reqVL[k] = reqPort[k-k%V], reqVL[k-k%V]
		}
		reqBlocks[k] = 1 + r.IntN(128)
		if r.IntN(32) == 0 {
			reqBlocks[k] = r.IntN(256)
		}
		switch {
		case r.IntN(16) == 0:
			credit[k] = r.IntN(4096)
		case r.Float64() < pTight:
			credit[k] = r.IntN(8)
		default:
			credit[k] = 128 + r.IntN(2048-128)
		}
	}
	// The credit rule's edge: (credit - blocks) mod 4096 of 2047..2050 for
	// some heads (2048 fits, 2049 does not).
	for k := range reqValid {
		if o := reqPort[k]; o < P && r.IntN(8) == 0 {
			credit[o*V+reqVL[k]] = (reqBlocks[k] + 2047 + r.IntN(4)) % 4096
		}
	}
	done := make([]bool, P)
	for i := range done {
		done[i] = d.granted[i] && r.Float64() < max(pDone, 0.4)
	}
	// The heads as the allocator counts them, and what waits per output.
	heads := make([][]allocHead, P)
	waiting := make([]bool, P*V)
	for i := range heads {
		heads[i] = make([]allocHead, V)
		for v := range heads[i] {
			k := i*V + v
			o, w := reqPort[k], reqVL[k]
			room := 0
			if o < P {
				room = (credit[o*V+w] - reqBlocks[k] + 4096) % 4096
			}
			fits := o < P && room <= 2048
			if reqValid[k] && !d.granted[i] && o < P && (room == 2048 || room == 2049) {
				d.creditEdge++
			}
			if reqValid[k] && !d.granted[i] && o < P && !fits {
				d.refusedFit++
			}
			if reqValid[k] && !d.granted[i] && fits {
				heads[i][v] = allocHead{ok: true, out: o, vl: w}
				waiting[o*V+w] = true
			}
		}
	}
	pickValid, pickVL := make([]bool, P), make([]int, P)
	pick := make([]int, P)
	for o := range pick {
		pickValid[o] = r.IntN(8) > 0
		var ws []int
		for w := range V {
			if waiting[o*V+w] {
				ws = append(ws, w)
			}
		}
		pickVL[o] = r.IntN(V)
		if len(ws) > 0 && r.IntN(8) > 0 {
			pickVL[o] = ws[r.IntN(len(ws))]
		}
		pick[o] = -1
		if pickValid[o] && !d.busy[o] {
			pick[o] = pickVL[o]
		}
	}
	in[0], in[1], in[2], in[3] = boolFields(reqValid), packFields(reqPort, d.portW), packFields(reqVL, d.vlW), packFields(reqBlocks, 8)
	in[4], in[5], in[6], in[7] = packFields(credit, 12), boolFields(done), boolFields(pickValid), packFields(pickVL, d.vlW)

	gOut, gVL := make([]int, P), make([]int, P)
	mo, ties := d.alloc.round(heads, pick, gOut, gVL)
	d.multiOffers += mo
	d.ties += ties
	taken := make([]bool, P)
	for _, o := range gOut {
		if o >= 0 {
			taken[o] = true
			d.grants++
		}
	}
	out[0], out[1], out[2] = boolFields(d.granted), packFields(d.grantedVL, d.vlW), boolFields(waiting)
	out[3], out[4], out[5] = boolFields(taken), boolFields(d.busy), packFields(d.src, d.portW)

	// The edge: a finished packet frees its input and output, then the
	// accepted grants connect.
	next := make([]bool, P)
	for o := range d.busy {
		next[o] = d.busy[o] && !done[d.src[o]]
	}
	for i := range d.granted {
		d.granted[i] = d.granted[i] && !done[i]
	}
	for i, o := range gOut {
		if o >= 0 {
			next[o] = true
			d.src[o] = i
			d.granted[i] = true
			d.grantedVL[i] = gVL[i]
		}
	}
	d.busy = next
}

// xbarCosimCases: radix 3 × 2 VLs (the per-VL heads test's switch), an odd
// radix with 4 VLs (ports outside the radix fit PORT_W), and one VL.
var xbarCosimCases = []struct{ ports, vls int }{{3, 2}, {7, 4}, {5, 1}}

// runXbarCosim emits sw_xbar_alloc for ports × vls (mutate, if not nil,
// edits its text), runs every seed's trace under Icarus and returns the
// testbench outputs and traced cycle counts. With untilMismatch it stops
// after the first seed whose run reports a mismatch, at its first
// mismatching cycle (a mutant's test asks only whether one seed fails: the
// cycles and seeds after it would not change that).
func runXbarCosim(t *testing.T, ports, vls int, seeds []uint64, mutate func(string) string, untilMismatch bool) (outs []string, cycles []int) {
	t.Helper()
	needTool(t, "iverilog", "vvp")
	d := Design{Name: "xbar", Radix: ports, VLs: vls, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	var alloc string
	for _, f := range files {
		if f.Name == "sw_xbar_alloc.v" {
			alloc = f.Text
		}
	}
	require.NotEmpty(t, alloc)
	if mutate != nil {
		m := mutate(alloc)
		require.NotEqual(t, alloc, m, "the mutation applies")
		alloc = m
	}
	dir := t.TempDir()
	dut := newXbarAllocDUT(ports, vls)
	tb := Testbench("sw_xbar_alloc", nil, dut.inputs(), dut.outputs(), cosimMax)
	srcs := map[string]string{"tb.v": tb, "sw_xbar_alloc.v": alloc,
		"rr_arbiter.v": PrimitiveSource("rr_arbiter.v"), "onehot_encode.v": PrimitiveSource("onehot_encode.v")}
	names := []string{"tb.v", "sw_xbar_alloc.v", "rr_arbiter.v", "onehot_encode.v"}
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(srcs[n]), 0o644))
	}
	ctx := context.Background()
	_, err = runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, names...)...)
	require.NoError(t, err)
	for _, seed := range seeds {
		r := rand.New(rand.NewPCG(seed, 0xa110c))
		dut := newXbarAllocDUT(ports, vls)
		trace := filepath.Join(dir, fmt.Sprintf("trace_%d.hex", seed))
		cycles = append(cycles, writeCosimTrace(t, trace, dut, r))
		args := []string{"-n", "sim.vvp", "+trace=" + trace}
		if untilMismatch {
			args = append(args, "+first_mismatch") // its first mismatching cycle ends the seed too
		}
		out, err := runTool(ctx, dir, "vvp", args...)
		require.NoError(t, err)
		outs = append(outs, out)
		if m := cosimResult.FindStringSubmatch(out); untilMismatch && m != nil && m[2] != "0" {
			break
		}
	}
	return outs, cycles
}

// TestXbarAllocCosim: the emitted allocator grants, cycle by cycle, what
// its Go description grants (see xbarAllocDUT).
func TestXbarAllocCosim(t *testing.T) {
	t.Parallel()
	for _, tc := range xbarCosimCases {
		t.Run(fmt.Sprintf("r%dv%d", tc.ports, tc.vls), func(t *testing.T) {
			t.Parallel()
			outs, cycles := runXbarCosim(t, tc.ports, tc.vls, cosimSeeds, nil, false)
			for k, out := range outs {
				checkCosimOutput(t, out, cycles[k])
			}
		})
	}
}

// TestXbarAllocStimulusCovers: per seed (800 cycles) the stimulus makes the
// cases that decide between allocators: 150 grants, 5 cycles with an input
// offered two outputs or more (with VLs > 1: the accept stage chooses), 10
// grants with two input VLs wanting the accepted output on its VL (the
// in.rr rule), 100 heads refused for credits and 20 requests whose credit
// left 2048 or 2049 blocks of room (the CanSend rule's edge).
func TestXbarAllocStimulusCovers(t *testing.T) {
	for _, tc := range xbarCosimCases {
		for _, seed := range cosimSeeds {
			r := rand.New(rand.NewPCG(seed, 0xa110c))
			d := newXbarAllocDUT(tc.ports, tc.vls)
			in, out := make([]Value, len(d.inputs())), make([]Value, len(d.outputs()))
			for range xbarCosimCycles {
				d.cycle(r, in, out)
			}
			t.Logf("r%dv%d seed %d: grants %d refused %d edge %d multi %d ties %d", tc.ports, tc.vls, seed, d.grants, d.refusedFit, d.creditEdge, d.multiOffers, d.ties)
			name := fmt.Sprintf("r%dv%d seed %d", tc.ports, tc.vls, seed)
			assert.GreaterOrEqual(t, d.grants, 150, name)
			assert.GreaterOrEqual(t, d.refusedFit, 100, name)
			assert.GreaterOrEqual(t, d.creditEdge, 20, name)
			if tc.vls > 1 {
				assert.GreaterOrEqual(t, d.multiOffers, 5, name)
				assert.GreaterOrEqual(t, d.ties, 10, name)
			}
		}
	}
}

// TestXbarAllocMutantsFail: each slip in sw_xbar_alloc fails the
// co-simulation (radix 7, 4 VLs) on at least one seed (the seeds run in
// order until one fails).
func TestXbarAllocMutantsFail(t *testing.T) {
	t.Parallel()
	for _, m := range []struct{ name, from, to string }{
		{"grant pointer moved on every grant", ".commit(accepted[o]), .commit_idx(gnt_idx[o*PORT_W +: PORT_W])",
			".commit(gnt_valid[o]), .commit_idx(gnt_idx[o*PORT_W +: PORT_W])"},
		{"input VL pointer never moved", ".commit(acc_valid[i]), .commit_idx(acc_vl[i*VL_W +: VL_W])",
			".commit(1'b0), .commit_idx(acc_vl[i*VL_W +: VL_W])"},
		{"credit check one block short", "room_r <= 12'd2048", "room_r <= 12'd2049"},
		{"a busy output still matched", "!busy[port_r] && out_pick_valid[port_r] &&", "out_pick_valid[port_r] &&"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			outs, _ := runXbarCosim(t, 7, 4, cosimSeeds, func(s string) string { return strings.Replace(s, m.from, m.to, 1) }, true)
			errs := 0
			for _, out := range outs {
				mm := cosimResult.FindStringSubmatch(out)
				require.NotNil(t, mm, out)
				if mm[2] != "0" {
					errs++
				}
			}
			assert.NotZero(t, errs, "seeds with mismatches")
		})
	}
}
