package verif

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// mutate returns text (a trace) with a few random edits of the kinds a
// regression makes or a hand-edited golden has: a line dropped, doubled,
// moved; a time shifted; a value changed; fields written in another order;
// a bare string quoted.
func mutate(r *rand.Rand, text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for range 1 + r.IntN(6) {
		if len(lines) < 3 {
			break
		}
		i := 1 + r.IntN(len(lines)-1) // never the header
		toks := strings.Split(lines[i], " ")
		switch r.IntN(7) {
		case 0:
			lines = append(lines[:i], lines[i+1:]...)
		case 1:
			lines = append(lines[:i+1], lines[i:]...)
		case 2:
			j := 1 + r.IntN(len(lines)-1)
			lines[i], lines[j] = lines[j], lines[i]
		case 3:
			ps, _ := strconv.ParseInt(toks[0], 10, 64)
			toks[0] = strconv.FormatInt(ps+int64(r.IntN(3))*500, 10)
		case 4:
			if len(toks) > 3 {
				k := 3 + r.IntN(len(toks)-3)
				key, val, _ := strings.Cut(toks[k], "=")
				if n, err := strconv.ParseInt(val, 10, 64); err == nil {
					toks[k] = key + "=" + strconv.FormatInt(n+1, 10)
				}
			}
		case 5:
			if len(toks) > 4 {
				r.Shuffle(len(toks)-3, func(a, b int) { toks[3+a], toks[3+b] = toks[3+b], toks[3+a] })
			}
		case 6:
			for k := 3; k < len(toks); k++ {
				key, val, _ := strings.Cut(toks[k], "=")
				if _, err := strconv.ParseInt(val, 10, 64); err != nil && !strings.HasPrefix(val, `"`) {
					toks[k] = key + "=" + strconv.Quote(val)
					break
				}
			}
		}
		if i < len(lines) && r.IntN(7) >= 3 {
			lines[i] = strings.Join(toks, " ")
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestDiffMatchesReference: the diff that keeps traces as text (from files,
// diffWhole; and from parsed traces, Diff) gives exactly the report and
// result of the diff that held both traces parsed and compared every pair
// through reason (diffReference, the implementation before), on random
// edits of every golden trace under several option sets.
func TestDiffMatchesReference(t *testing.T) {
	files, err := filepath.Glob("testdata/*.trace")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	kinds, err := parseKinds("credit_update,stage")
	require.NoError(t, err)
	opts := []DiffOptions{
		{Context: 5},
		{Context: 0, TolerancePS: 500},
		{Context: 3, Fields: []string{"psn", "vl"}},
		{Context: 2, IgnoreKinds: kinds},
		{Context: 1, IgnoreKinds: []components.TraceKind{components.TraceTxStart}, TolerancePS: 1000},
	}
	r := rand.New(rand.NewPCG(1, 2))
	differing := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		text := string(raw)
		for trial := range 40 {
			a, b := text, mutate(r, text)
			if trial%4 == 3 {
				a = mutate(r, text)
			}
			ga, errA := ReadTrace(strings.NewReader(a))
			gb, errB := ReadTrace(strings.NewReader(b))
			require.NoError(t, errA)
			require.NoError(t, errB)
			for _, opt := range opts {
				want := diffReference(ga, gb, opt)
				got := Diff(ga, gb, opt)
				require.Equal(t, want, got, "%s trial %d %+v", f, trial, opt)

				var wantOut bytes.Buffer
				wantCode := ExitDifferent
				if want.Equivalent() {
					wantCode = ExitEquivalent
				} else {
					differing++
				}
				WriteDiffReport(&wantOut, ga, gb, want)
				var out, errOut bytes.Buffer
				code := diffWhole(strings.NewReader(a), strings.NewReader(b), "a", "b", [2]int{len(a), 0}, opt, &out, &errOut)
				if absentField(opt.Fields, parsedDiffTrace(ga), parsedDiffTrace(gb)) != "" {
					assert.Equal(t, ExitError, code)
					continue
				}
				require.Equal(t, wantCode, code, "%s trial %d %+v: %s", f, trial, opt, errOut.String())
				require.Equal(t, wantOut.String(), out.String(), "%s trial %d %+v", f, trial, opt)
			}
		}
	}
	// The edits must have produced differences for the test to mean much.
	assert.Greater(t, differing, len(files)*40)
}

// TestDiffTraceErrorsMatchReadTrace: the compact reader refuses exactly what
// ReadTrace refuses, with the same message.
func TestDiffTraceErrorsMatchReadTrace(t *testing.T) {
	good := traceText(baseTrace)
	for _, in := range []string{
		"",
		"garbage\n",
		good[:len(good)-1],                       // no final newline
		good + "5 A tx_start vl=x y\n",           // not key=value
		good + "5  A tx_start\n",                 // two spaces
		good + "-5 A tx_start\n",                 // negative time
		good + "5 A tx_start vl=01\n",            // leading zero
		good + "5 A bogus_kind\n",                // unknown kind
		good + "5 A tx_start vl=1 vl=2\n",        // duplicate field
		good + "5 A tx_start s=\"unterminated\n", // bad quote
		good + "5 A tx_start x=" + strings.Repeat("a", maxLineBytes) + "\n", // too long
	} {
		_, want := ReadTrace(strings.NewReader(in))
		_, got := readDiffTrace(strings.NewReader(in), len(in))
		require.Error(t, want, "%.60q", in)
		require.Error(t, got, "%.60q", in)
		assert.Equal(t, want.Error(), got.Error())
	}
}

// TestDiffParseDoesNotAllocate: comparing two events whose lines differ
// (fields in another order, so their texts differ but they match) parses
// both into the comparer's scratch, without allocating.
func TestDiffParseDoesNotAllocate(t *testing.T) {
	a := traceText("5 A tx_start vl=0 psn=1 bytes=106\n")
	b := traceText("5 A tx_start bytes=106 psn=1 vl=0\n")
	ga, err := readDiffTrace(strings.NewReader(a), 0)
	require.NoError(t, err)
	gb, err := readDiffTrace(strings.NewReader(b), 0)
	require.NoError(t, err)
	var c comparer
	require.True(t, c.same(ga, 0, gb, 0))
	allocs := testing.AllocsPerRun(100, func() { c.same(ga, 0, gb, 0) })
	assert.Zero(t, allocs)
}
