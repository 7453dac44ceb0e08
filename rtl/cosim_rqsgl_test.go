package rtl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---- hca_rq with receive strides of several segments ----

// rqStrideCases are hca_rq's configurations with strides: 4 QPs with a
// 3-block window (12 segments: strides of 1, 2, 4 and 8 segments hold 12,
// 6, 3 and 1 WQEs, 16 and 32 one, hca.RecvWindow's floor at one) and
// MAX_RSGE 32 (hca.MaxRecvSGE: a store of 64 segments a QP, 44 rounded
// up), the emitter's 8 QPs with 8 blocks (32 segments: windows of 32 to
// 1 WQEs) and 2 QPs with one block and MAX_RSGE 4 (strides 1, 2, 4: a
// store of 4 + 4 = 8 segments).
var rqStrideCases = []struct{ qpnW, depth, maxSGE int }{{2, 3, 32}, {qpnW, 8, 32}, {1, 1, 4}}

func newRQStrideDUT(qpnW, depth, maxSGE int) *rqDUT {
	d := newRQDUT(qpnW, depth)
	d.maxSGE = maxSGE
	return d
}

// TestRQStrideStimulusCovers: over the seeds of each case, every stride up
// to the case's largest has WQEs taken, and every stride of two segments
// or more has lists of several elements, empty lists (a terminator first),
// lists filling the stride (no terminator), element reads of the WQE last
// taken and of one not yet taken; every stride has a first segment of
// L_Key MLX5_INVALID_LKEY and non-zero length (hca.DecodeRecvWQE: a
// terminator, no element, in a stride of two or more; one element in a
// stride of one) and the empty list (in a stride of one: 0 bytes and
// MLX5_INVALID_LKEY); strides of 8 segments or more have
// takes that wait for the walk over their rows; and the stride-free
// coverage of TestRQStimulusCovers holds for reads (window, ring's end).
func TestRQStrideStimulusCovers(t *testing.T) {
	for _, tc := range rqStrideCases {
		var taken, list, empty, full, termLen, walk, held, ahead [6]int
		var windowBound, ringEnd, ok0 int
		for _, seed := range cosimSeeds {
			r := rand.New(rand.NewPCG(seed, 0x7e57))
			d := newRQStrideDUT(tc.qpnW, tc.depth, tc.maxSGE)
			in := make([]Value, len(d.inputs()))
			out := make([]Value, len(d.outputs()))
			for range cosimCycles {
				d.cycle(r, in, out)
			}
			for l := range 6 {
				taken[l] += d.sTaken[l]
				list[l] += d.sList[l]
				empty[l] += d.sEmpty[l]
				full[l] += d.sFull[l]
				termLen[l] += d.sTermLen[l]
				walk[l] += d.sWalkWait[l]
				held[l] += d.sHeld[l]
				ahead[l] += d.sAhead[l]
			}
			windowBound += d.windowBound
			ringEnd += d.ringEnd
			ok0 += d.ok0
		}
		d := newRQStrideDUT(tc.qpnW, tc.depth, tc.maxSGE)
		for l := 0; l <= d.maxLogStride(); l++ {
			msg := []any{"qpn_w %d depth %d max_rsge %d: stride %d", tc.qpnW, tc.depth, tc.maxSGE, 1 << l}
			assert.GreaterOrEqual(t, taken[l], 10, msg...)
			assert.Positive(t, empty[l], msg...)
			assert.Positive(t, ahead[l], msg...)
			assert.Positive(t, termLen[l], msg...)
			if l > 0 {
				assert.Positive(t, list[l], msg...)
				assert.Positive(t, full[l], msg...)
				assert.Positive(t, held[l], msg...)
			}
			if l >= 3 {
				assert.Positive(t, walk[l], msg...)
			}
		}
		msg := []any{"qpn_w %d depth %d max_rsge %d", tc.qpnW, tc.depth, tc.maxSGE}
		assert.GreaterOrEqual(t, windowBound, 10, msg...)
		assert.GreaterOrEqual(t, ringEnd, 10, msg...)
		assert.Positive(t, ok0, msg...)
		t.Logf("qpn_w %d depth %d max_rsge %d: by stride 1..32: taken %v, lists %v, empty %v, full %v, terminator of non-zero length %v, walk waits %v, held reads %v, reads ahead %v",
			tc.qpnW, tc.depth, tc.maxSGE, taken, list, empty, full, termLen, walk, held, ahead)
	}
}

// TestRQStrideCosim: hca_rq with strides co-simulated against the model on
// every seed of every case: each read is hca.RecvReadStride's n WQEs at
// its slot, n x stride bytes at base + slot x stride; each answer
// hca.DecodeRecvWQE's of the WQE as posted (its elements, their bytes
// summed, its first segment's address and L_Key), a stride of more than
// four segments answering a cycle later per bank row past the first; each
// element read (rw_sge_*) the segment as posted, for the WQE last taken
// and for WQEs arrived and not taken.
func TestRQStrideCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	ctx := context.Background()
	for _, tc := range rqStrideCases {
		t.Run(fmt.Sprintf("q%d_d%d_s%d", tc.qpnW, tc.depth, tc.maxSGE), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := writeCosimBench(t, dir, newRQStrideDUT(tc.qpnW, tc.depth, tc.maxSGE))
			_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
			require.NoError(t, err)
			for _, seed := range cosimSeeds {
				r := rand.New(rand.NewPCG(seed, 0x7e57))
				trace := filepath.Join(dir, fmt.Sprintf("trace_%d.hex", seed))
				cycles := writeCosimTrace(t, trace, newRQStrideDUT(tc.qpnW, tc.depth, tc.maxSGE), r)
				out, err := runTool(ctx, dir, "vvp", "-n", "sim.vvp", "+trace="+trace)
				require.NoError(t, err)
				t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { checkCosimOutput(t, out, cycles) })
			}
		})
	}
}

// TestRQStrideMutantsFail: each slip below in hca_rq's strides, lists and
// element port (eighteen) fails the first seed of the 8-QP case (seven queues, each
// stride from 1 to 32 segments among them).
func TestRQStrideMutantsFail(t *testing.T) {
	const f = "hca_rq.v"
	runMutants(t, func() cosimDUT { return newRQStrideDUT(qpnW, 8, 32) }, []cosimMutant{
		// The prefetch at the QP's stride (hca.RecvReadStride).
		{"the window in WQEs of one segment whatever the stride", f, "({1'b0, held_g} < win_of(rq_logst[g]))", "({1'b0, held_g} < WIN17)"},
		{"the read's room in WQEs of one segment", f, "wire [16:0] room      = win_of(ls) -", "wire [16:0] room      = WIN17 -"},
		{"the read's slot not scaled by the stride", f, "wire [20:0] sslot     = {5'd0, slot} << ls;", "wire [20:0] sslot     = {5'd0, slot};"},
		{"the read's length not scaled by the stride", f, "wire [21:0] nseg      = {5'd0, n} << ls;", "wire [21:0] nseg      = {5'd0, n};"},
		{"the first block's lane from the WQE slot, not its segment", f, ".push_data({pk, sslot[1:0], nseg[WIN_W-1:0]})", ".push_data({pk, slot[1:0], nseg[WIN_W-1:0]})"},
		{"arrived counted in segments as WQEs", f, "            t        = a >> l;", "            t        = a;"},
		{"the store without room for the WQE last taken", f, "(WIN > RSTRIDE ? WIN : RSTRIDE) + RSTRIDE : WIN)", "(WIN > RSTRIDE ? WIN : RSTRIDE) : WIN)"},
		// The list (hca.DecodeRecvWQE).
		{"no terminator: every segment an element", f, "if (c_seg[95:64] == 32'h100) c_t = 1'b1;", "if (1'b0) c_t = 1'b1;"},
		{"a terminator only with length 0 (the one-segment rule in every stride)", f, "if (c_seg[95:64] == 32'h100) c_t = 1'b1;", "if (c_seg[95:64] == 32'h100 && c_seg[127:96] == 32'd0) c_t = 1'b1;"},
		{"one segment with MLX5_INVALID_LKEY empty whatever its length", f, "(p_wqe[95:64] == 32'h100 && p_wqe[127:96] == 32'd0) ? 6'd0 : 6'd1", "(p_wqe[95:64] == 32'h100) ? 6'd0 : 6'd1"},
		{"a stride of two read as one segment", f, "(p_ls == 3'd1 && j < 2)", "(p_ls == 3'd1 && j < 1)"},
		{"the sum: the last element's length only", f, "c_sum = c_sum + c_seg[127:96];", "c_sum = c_seg[127:96];"},
		{"the length: the first element's only", f, "c_sum = c_sum + c_seg[127:96];", "c_sum = c_sum + (c_n == 6'd1 ? c_seg[127:96] : 32'd0);"},
		{"one row fewer walked", f, "(3'd1 << (p_ls - 3'd2)) - 3'd1 : 3'd0;", "(3'd1 << (p_ls - 3'd2)) - 3'd2 : 3'd0;"},
		{"the rows before not kept (count)", f, "w_n   <= c_n;", "w_n   <= w_n;"},
		{"the first segment's address from the last row", f, "assign rw_rsp_addr  = w_g == 3'd0 ? p_wqe[63:0] : w_a0;", "assign rw_rsp_addr  = p_wqe[63:0];"},
		// The element port.
		{"an element's WQE not scaled by the stride", f, "({5'd0, rw_sge_index} << e_ls)", "{5'd0, rw_sge_index}"},
		{"an element from the take's row", f, "wire [QPN_W+SLOT_W-3:0] raddr = rw_sge_valid ?", "wire [QPN_W+SLOT_W-3:0] raddr = 1'b0 ?"},
	})
}

// TestRQStrideLint: `verilator --lint-only -Wall` passes hca_rq with
// strides at MAX_RSGE 32 (hca.MaxRecvSGE) with the smallest and the
// largest window (1 and 256 blocks), at MAX_RSGE 5 (strides up to 8), and
// at 2 with QPN_W 6.
func TestRQStrideLint(t *testing.T) {
	t.Parallel()
	lintRQ(t, [][]string{{"-GQPN_W=2", "-GWQE_PREFETCH_DEPTH=1", "-GMAX_RSGE=32"}, {"-GQPN_W=3", "-GWQE_PREFETCH_DEPTH=256", "-GMAX_RSGE=32"},
		{"-GQPN_W=2", "-GWQE_PREFETCH_DEPTH=3", "-GMAX_RSGE=5"}, {"-GQPN_W=6", "-GWQE_PREFETCH_DEPTH=8", "-GMAX_RSGE=2"}})
}
