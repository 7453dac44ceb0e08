package rtl

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cosimMutant is a deliberate slip in a block's Verilog: the text to
// replace in its source file and what to put there.
type cosimMutant struct {
	name     string
	file     string
	old, new string
}

// runMutants co-simulates newDUT's block once per mutant under Icarus,
// with the mutant's source in place of the block's, on the first seed's
// trace, and requires the testbench to report a mismatch (each mutant's
// run stops at its first: +first_mismatch): a co-simulation
// that a slip like it passes checks less than it claims. The unmutated
// block must pass the same trace, so the failures are the mutants'.
// It makes t parallel, so a test calls it once, as its whole body.
func runMutants(t *testing.T, newDUT func() cosimDUT, mutants []cosimMutant) {
	runMutantsFor(t, 0, newDUT, mutants)
}

// runMutantsFor is runMutants on the first cycles cycles of the trace
// (0: the case's whole length, cosimCyclesOf). A trace's first n cycles are
// the same whatever its length, so a shorter one catches every mutant that
// fails within n cycles; it cannot make a mutant pass unseen (the test
// would say the mutant survived). A test that shortens its trace says in a
// comment where each mutant first mismatched: at least 4 times that and
// 1000 cycles. The unmutated block passes its case's whole seeds in the
// co-simulation tests.
func runMutantsFor(t *testing.T, cycles int, newDUT func() cosimDUT, mutants []cosimMutant) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	ctx := context.Background()
	dir := t.TempDir()
	seed := cosimSeeds[0]
	r := rand.New(rand.NewPCG(seed, 0x7e57))
	dut := newDUT()
	trace := filepath.Join(dir, "trace.hex")
	if cycles == 0 {
		cycles = cosimCyclesOf(dut)
	}
	cycles = writeCosimTraceN(t, trace, dut, r, cycles)
	run := func(t *testing.T, sub string, replace map[string]string, plusargs ...string) (checked, errors int) {
		t.Helper()
		d := filepath.Join(dir, sub)
		require.NoError(t, os.MkdirAll(d, 0o755))
		files := writeCosimBench(t, d, dut)
		for f, text := range replace {
			require.NoError(t, os.WriteFile(filepath.Join(d, f), []byte(text), 0o644))
		}
		_, err := runTool(ctx, d, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
		require.NoError(t, err)
		out, err := runTool(ctx, d, "vvp", append([]string{"-n", "sim.vvp", "+trace=" + trace}, plusargs...)...)
		require.NoError(t, err)
		m := cosimResult.FindStringSubmatch(out)
		require.NotNil(t, m, "testbench printed no COSIM line:\n%s", tail(out, 30))
		checked, _ = strconv.Atoi(m[1])
		errors, _ = strconv.Atoi(m[2])
		return checked, errors
	}
	checked, errors := run(t, "orig", nil)
	require.Equal(t, cycles, checked)
	require.Zero(t, errors, "the unmutated block must pass the trace")
	for i, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			// Each mutant compiles and runs in its own directory on the
			// shared trace, so two run at once (one vvp per core).
			t.Parallel()
			// The mutant's run stops at its first mismatching cycle
			// (Testbench's +first_mismatch): a mutant the trace cannot
			// catch still runs it whole, and fails the test below.
			checked, errors := run(t, "m"+strconv.Itoa(i), mutatedSource(t, m.file, m.old, m.new), "+first_mismatch")
			require.Positive(t, errors, "the co-simulation passes a block with %s", m.name)
			require.LessOrEqual(t, checked, cycles)
			t.Logf("first mismatch at trace cycle %d of %d", checked-1, cycles)
		})
	}
}

// requesterMutant makes the run directory dir/name (spaces as
// underscores) of one case of a requester mutant table and returns it with
// hca_requester.v's text with old replaced by new (nothing replaced for
// the unmutated case, old empty).
func requesterMutant(t *testing.T, dir, name, old, new string) (string, map[string]string) {
	t.Helper()
	d := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
	require.NoError(t, os.MkdirAll(d, 0o755))
	file := ""
	if old != "" {
		file = "hca_requester.v"
	}
	return d, mutatedSource(t, file, old, new)
}

// mutatedSource returns the replacement map a testbench writer takes for
// one mutant: file's source with old, which must occur exactly once,
// replaced by new. An empty file is the unmutated run: an empty map.
func mutatedSource(t *testing.T, file, old, new string) map[string]string {
	t.Helper()
	if file == "" {
		return map[string]string{}
	}
	src := PrimitiveSource(file)
	require.Equal(t, 1, strings.Count(src, old), "the mutation's text occurs once in %s", file)
	return map[string]string{file: strings.Replace(src, old, new, 1)}
}

var firstMismatchLine = regexp.MustCompile(`(?m)^MISMATCH cycle=(\d+) `)

// TestFirstMismatchStops: Testbench's +first_mismatch ends a failing run at
// the cycle of its first mismatch, which the whole run (without it) names
// in its first MISMATCH line: checked is that cycle + 1 (cycles 0..C
// compared), errors the mismatches of that one cycle. A run that passes
// goes to the trace's end either way.
func TestFirstMismatchStops(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	ctx := context.Background()
	dut := func() cosimDUT { return newFIFODUT(8, 1) }
	run := func(replace map[string]string, plusargs ...string) (out string, checked, errors, n int) {
		dir := t.TempDir()
		d := dut()
		files := writeCosimBench(t, dir, d)
		for f, text := range replace {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644))
		}
		_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
		require.NoError(t, err)
		trace := filepath.Join(dir, "trace.hex")
		n = writeCosimTraceN(t, trace, d, rand.New(rand.NewPCG(cosimSeeds[0], 0x7e57)), 1000)
		out, err = runTool(ctx, dir, "vvp", append([]string{"-n", "sim.vvp", "+trace=" + trace}, plusargs...)...)
		require.NoError(t, err)
		m := cosimResult.FindStringSubmatch(out)
		require.NotNil(t, m, "testbench printed no COSIM line:\n%s", tail(out, 30))
		checked, _ = strconv.Atoi(m[1])
		errors, _ = strconv.Atoi(m[2])
		return out, checked, errors, n
	}
	_, checked, errors, n := run(nil, "+first_mismatch")
	assert.Equal(t, n, checked, "a passing run compares every cycle")
	assert.Zero(t, errors)
	// A one-entry FIFO that never reports full: the first push onto a
	// full FIFO shows push_ready 1 against the model's 0.
	mut := mutatedSource(t, "sync_fifo.v", "assign push_ready = (cnt != FULL);", "assign push_ready = 1'b1;")
	whole, checkedAll, errorsAll, n := run(mut)
	require.Equal(t, n, checkedAll, "without +first_mismatch the run goes on")
	m := firstMismatchLine.FindStringSubmatch(whole)
	require.NotNil(t, m, "the mutant mismatches:\n%s", tail(whole, 30))
	first, _ := strconv.Atoi(m[1])
	stopped, checked, errors, _ := run(mut, "+first_mismatch")
	assert.Equal(t, first+1, checked, "cycles 0..%d compared", first)
	assert.Equal(t, strings.Count(stopped, "MISMATCH cycle="+m[1]+" "), errors, "the errors are the first cycle's")
	assert.Positive(t, errors)
	assert.Less(t, errors, errorsAll, "the whole run finds more")
}
