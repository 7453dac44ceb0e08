package rtl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	cosimCycles = 3000 // cycles per seed
	cosimMax    = 4096 // testbench trace memory, > cosimCycles
)

// cosimSeeds are the random seeds every case runs with.
var cosimSeeds = []uint64{1, 2, 3, 4, 5}

// cosimTable is the one table that drives both the Go models and their
// Verilog: for every case and seed, the Go model produces the stimulus and the
// expected outputs (a trace), and the generated testbench replays the trace
// into the RTL and compares every output every cycle. verilator marks the
// cases also built with Verilator: its C++ build costs ~3 s of CPU (with
// Verilator's runtime compiled once per process, buildVerilator), so one
// case per block with the most state (the VL arbiter, the key check, the
// forwarding table, the CQE writer, the WQE parser, the VCRC) runs under both
// simulators.
var cosimTable = []struct {
	name      string
	dut       func(r *rand.Rand) cosimDUT
	verilator bool
}{
	{"fifo_w8_d1", func(*rand.Rand) cosimDUT { return newFIFODUT(8, 1) }, false},
	{"fifo_w16_d5", func(*rand.Rand) cosimDUT { return newFIFODUT(16, 5) }, false},
	{"fifo_w64_d16", func(*rand.Rand) cosimDUT { return newFIFODUT(64, 16) }, false},
	{"rr_n1", func(*rand.Rand) cosimDUT { return newRRDUT(1) }, false},
	{"rr_n7", func(*rand.Rand) cosimDUT { return newRRDUT(7) }, false},
	{"rr_n36", func(*rand.Rand) cosimDUT { return newRRDUT(36) }, false},
	{"rr_n256", func(*rand.Rand) cosimDUT { return newRRDUT(256) }, false},
	{"vlarb_h1_l1_vl2", func(r *rand.Rand) cosimDUT { return newVLArbDUT(r, 1, 1, 2) }, false},
	{"vlarb_h5_l9_vl4", func(r *rand.Rand) cosimDUT { return newVLArbDUT(r, 5, 9, 4) }, true},
	{"vlarb_h64_l64_vl15", func(r *rand.Rand) cosimDUT { return newVLArbDUT(r, 64, 64, 15) }, false},
	{"vlarb_h8_l8_vl4_unbounded", func(r *rand.Rand) cosimDUT { return newSaturatedVLArbDUT(r, 8, 8, 4) }, false},
	{"credit_sender_0", func(*rand.Rand) cosimDUT { return newCreditSenderDUT(0) }, false},
	{"credit_sender_130", func(*rand.Rand) cosimDUT { return newCreditSenderDUT(130) }, false},
	{"credit_sender_2048", func(*rand.Rand) cosimDUT { return newCreditSenderDUT(2048) }, false},
	{"credit_receiver_1", func(*rand.Rand) cosimDUT { return newCreditReceiverDUT(1) }, false},
	{"credit_receiver_200", func(*rand.Rand) cosimDUT { return newCreditReceiverDUT(200) }, false},
	{"credit_receiver_2048", func(*rand.Rand) cosimDUT { return newCreditReceiverDUT(2048) }, false},
	// A refresh every cycle (every VL owes at every edge); 4 VLs with a
	// prime refresh period and a minimum interval; 15 VLs, a long interval.
	{"fc_sched_vl1_r1_m0", func(*rand.Rand) cosimDUT { return newFCSchedDUT(1, 1, 0) }, false},
	{"fc_sched_vl4_r97_m5", func(*rand.Rand) cosimDUT { return newFCSchedDUT(4, 97, 5) }, true},
	{"fc_sched_vl15_r300_m40", func(*rand.Rand) cosimDUT { return newFCSchedDUT(15, 300, 40) }, false},
	{"key_check_lat0", func(r *rand.Rand) cosimDUT { return newKeyCheckDUT(r, 0) }, false},
	{"key_check_lat6", func(r *rand.Rand) cosimDUT { return newKeyCheckDUT(r, 6) }, true},
	// The MPT cache: one entry (every change of index evicts), 4 and 16
	// entries under 12 regions and ~100 other indices (hits and evictions).
	{"key_cache_e1_lat2", func(r *rand.Rand) cosimDUT { return newKeyCacheDUT(r, 2, 1) }, false},
	{"key_cache_e4_lat0", func(r *rand.Rand) cosimDUT { return newKeyCacheDUT(r, 0, 4) }, false},
	{"key_cache_e16_lat6", func(r *rand.Rand) cosimDUT { return newKeyCacheDUT(r, 6, 16) }, true},
	// LFT_TOP 1: a two-entry table; 15 and 1023: 2^n - 1, every address
	// bit used; 64: one past a power of two, where an address one bit short
	// aliases DLID 64 onto 0; radix 7 and 36 leave ports outside the radix,
	// 4 and 256 do not.
	{"lft_p2_top1", func(*rand.Rand) cosimDUT { return newLFTDUT(2, 1) }, false},
	{"lft_p4_top15", func(*rand.Rand) cosimDUT { return newLFTDUT(4, 15) }, false},
	{"lft_p7_top64", func(*rand.Rand) cosimDUT { return newLFTDUT(7, 64) }, true},
	{"lft_p36_top1023", func(*rand.Rand) cosimDUT { return newLFTDUT(36, 1023) }, false},
	{"lft_p256_top200", func(*rand.Rand) cosimDUT { return newLFTDUT(256, 200) }, false},
	// The emitter's default: every unicast LID, a 16-bit address.
	{"lft_p36_top49151", func(*rand.Rand) cosimDUT { return newLFTDUT(36, lftTop) }, false},
	// 4 CQs (more completions per ring: more wraps and overruns) and the
	// emitter's 16.
	{"cqe_writer_cqn2", func(*rand.Rand) cosimDUT { return newCQEWriterDUT(2) }, true},
	{"cqe_writer_cqn4", func(*rand.Rand) cosimDUT { return newCQEWriterDUT(cqnW) }, false},
	{"wqe_parse", func(*rand.Rand) cosimDUT { return newWQEParseDUT() }, true},
	// Two QPs with a one-block window (every read one block); 4 QPs with
	// windows of 3 and 16; the emitter's 8 QPs and default window of 8.
	{"doorbell", func(*rand.Rand) cosimDUT { return &doorbellDUT{} }, false},
	{"wqe_fetch_q1_d1", func(*rand.Rand) cosimDUT { return newWQEFetchDUT(1, 1) }, false},
	{"wqe_fetch_q2_d3", func(*rand.Rand) cosimDUT { return newWQEFetchDUT(2, 3) }, false},
	{"wqe_fetch_q2_d16", func(*rand.Rand) cosimDUT { return newWQEFetchDUT(2, 16) }, false},
	{"wqe_fetch_q3_d8", func(*rand.Rand) cosimDUT { return newWQEFetchDUT(qpnW, 8) }, true},
	// The receive queues (rqCases): 2 QPs with a one-block window, 4 with
	// three blocks (12 WQEs: 16 slots on chip), the emitter's 8 with 8.
	{"rq_q1_d1", func(*rand.Rand) cosimDUT { return newRQDUT(1, 1) }, false},
	{"rq_q2_d3", func(*rand.Rand) cosimDUT { return newRQDUT(2, 3) }, false},
	{"rq_q3_d8", func(*rand.Rand) cosimDUT { return newRQDUT(qpnW, 8) }, false},
	// The DMA engine's cases (dmaCases): its scoreboard runs on the same
	// seeds in TestDMAScoreboard.
	{"dma_t4_m128", func(*rand.Rand) cosimDUT { return dmaCaseNamed("dma_t4_m128").dut() }, false},
	{"dma_t5_m256_rcb128", func(*rand.Rand) cosimDUT { return dmaCaseNamed("dma_t5_m256_rcb128").dut() }, false},
	{"dma_t8_m512", func(*rand.Rand) cosimDUT { return dmaCaseNamed("dma_t8_m512").dut() }, true},
	{"dma_t64_m4096", func(*rand.Rand) cosimDUT { return dmaCaseNamed("dma_t64_m4096").dut() }, false},
	{"dma_t260_m128", func(*rand.Rand) cosimDUT { return dmaCaseNamed("dma_t260_m128").dut() }, false},
	// cx8's 512 tags through the clear after reset and on every tag (TestDMAClear)
	{"dma_t512_m512_fill", func(*rand.Rand) cosimDUT { return dmaFillCase.dut() }, true},
	// The link's CRCs: the VCRC (transmit and receive packets, out_ready
	// stalling in phases) and the flow-control codec.
	{"vcrc", func(r *rand.Rand) cosimDUT { return newVCRCDUT(r) }, true},
	{"fc_codec", func(*rand.Rand) cosimDUT { return newFCCodecDUT() }, false},
	// The requester's packet headers: every WR opcode, MTU and length edge,
	// PSNs across the wrap, out_ready stalling in phases.
	{"tx_packetizer", func(r *rand.Rand) cosimDUT { return newPktzDUT(r) }, true},
	// The requester's packet assembly: headers and payload blocks at every
	// start offset, back-pressure on both sides.
	{"tx_assemble", func(*rand.Rand) cosimDUT { return newAsmDUT() }, true},
	// The ICRC: transmit and receive packets of every header shape, with
	// and without the VCRC room, gaps and out_ready stalling in phases.
	{"icrc", func(r *rand.Rand) cosimDUT { return newICRCDUT(r) }, true},
}

// cosimLong is a cosimDUT whose case needs more cycles than cosimCycles:
// the forwarding table clears for LFT_TOP + 1 cycles after reset (49152 at
// the emitter's default) before its first lookup can hit a route.
type cosimLong interface {
	cycles() int // cycles per seed
}

// cosimCyclesOf returns the cycles per seed of dut's case.
func cosimCyclesOf(dut cosimDUT) int {
	if l, ok := dut.(cosimLong); ok {
		return l.cycles()
	}
	return cosimCycles
}

// writeCosimTrace runs the Go model for one seed and writes its trace.
func writeCosimTrace(t *testing.T, path string, dut cosimDUT, r *rand.Rand) int {
	t.Helper()
	return writeCosimTraceN(t, path, dut, r, cosimCyclesOf(dut))
}

// writeCosimTraceN is writeCosimTrace for the first n cycles.
func writeCosimTraceN(t *testing.T, path string, dut cosimDUT, r *rand.Rand, n int) int {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	tw := NewTraceWriter(f, dut.inputs(), dut.outputs())
	in := make([]Value, len(dut.inputs()))
	out := make([]Value, len(dut.outputs()))
	for c := 0; c < n; c++ {
		dut.cycle(r, in, out)
		tw.Cycle(in, out)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, f.Close())
	return tw.Cycles()
}

// writeCosimBench writes the primitive sources and the testbench into dir and
// returns the file names, testbench first.
func writeCosimBench(t *testing.T, dir string, dut cosimDUT) []string {
	t.Helper()
	tb := Testbench(dut.module(), dut.params(), dut.inputs(), dut.outputs(), max(cosimMax, cosimCyclesOf(dut)+1))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tb.v"), []byte(tb), 0o644))
	files := []string{"tb.v"}
	for _, f := range dut.files() {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(PrimitiveSource(f)), 0o644))
		files = append(files, f)
	}
	return files
}

var cosimResult = regexp.MustCompile(`(?m)^COSIM checked=(\d+) errors=(\d+)$`)

// checkCosimOutput requires the testbench to have compared every traced
// cycle and found no mismatch.
func checkCosimOutput(t *testing.T, out string, cycles int) {
	t.Helper()
	m := cosimResult.FindStringSubmatch(out)
	require.NotNil(t, m, "testbench printed no COSIM line:\n%s", tail(out, 30))
	checked, _ := strconv.Atoi(m[1])
	errors, _ := strconv.Atoi(m[2])
	// Zero compared cycles would be a vacuous pass: every written cycle must
	// have been checked.
	assert.Equal(t, cycles, checked, "cycles compared")
	assert.Zero(t, errors, "mismatches:\n%s", tail(out, 30))
}

func TestCosimIcarus(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	for _, tc := range cosimTable {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			files := writeCosimBench(t, dir, tc.dut(rand.New(rand.NewPCG(0, 0))))
			_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
			require.NoError(t, err)
			for _, seed := range cosimSeeds {
				r := rand.New(rand.NewPCG(seed, 0x7e57))
				dut := tc.dut(r)
				trace := filepath.Join(dir, fmt.Sprintf("trace_%d.hex", seed))
				cycles := writeCosimTrace(t, trace, dut, r)
				out, err := runTool(ctx, dir, "vvp", "-n", "sim.vvp", "+trace="+trace)
				require.NoError(t, err)
				t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { checkCosimOutput(t, out, cycles) })
			}
		})
	}
}

func TestCosimVerilator(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: Verilator co-simulation builds C++; Icarus covers every case")
	}
	// verilator --binary builds C++ with make and g++.
	needTool(t, "verilator", "make", "g++")
	// Build the shared runtime here, in one slot, rather than in two
	// cases' slots at once while one of them waits for it.
	_, err := verilatorRuntimeDir(context.Background())
	require.NoError(t, err)
	for _, tc := range cosimTable {
		if !tc.verilator {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			files := writeCosimBench(t, dir, tc.dut(rand.New(rand.NewPCG(0, 0))))
			vtb := buildVerilator(t, ctx, dir, files)
			seed := cosimSeeds[0]
			r := rand.New(rand.NewPCG(seed, 0x7e57))
			dut := tc.dut(r)
			trace := filepath.Join(dir, "trace.hex")
			cycles := writeCosimTrace(t, trace, dut, r)
			out, err := runTool(ctx, dir, vtb, "+trace="+trace)
			require.NoError(t, err)
			checkCosimOutput(t, out, cycles)
		})
	}
}
