package verif

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// baseTrace has two streams on one port (vl=0, vl=1) and one QP stream.
// Times: a 106-byte packet at 25 Gb/s (EDR 1x data rate, ib-facts §1) takes
// 106*8/25 = 33.92 ns = 33920 ps on the wire, hence tx_end = tx_start + 33920.
const baseTrace = `1000 H.Port[0] tx_start vl=0 psn=1 bytes=106
1000 H.Port[0] credit_update vl=1 avail=10 cap=10
34920 H.Port[0] tx_end vl=0 psn=1 bytes=106
34920 H.Port[0] tx_start vl=1 psn=7 bytes=106
68840 H.Port[0] tx_end vl=1 psn=7 bytes=106
70000 H.Qp cqe qpn=5 wqe=0 status=success
`

func traceText(body string) string { return testHeader.String() + "\n" + body }

func mustTrace(t *testing.T, body string) *Trace {
	t.Helper()
	tr, err := ReadTrace(strings.NewReader(traceText(body)))
	require.NoError(t, err)
	return tr
}

func TestDiffCases(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(baseTrace, "\n"), "\n")
	join := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	cases := []struct {
		name        string
		neu         string
		opt         DiffOptions
		equivalent  bool
		total       StreamCounts
		firstWhat   string
		firstReason string
		firstStream string
	}{
		{
			name: "identical", neu: baseTrace, equivalent: true,
			total: StreamCounts{Matched: 6},
		},
		{
			// One field changed: psn 7 -> 8 on the vl=1 tx_start. Only that
			// event differs; its tx_end still matches.
			name:  "changed field",
			neu:   strings.Replace(baseTrace, "tx_start vl=1 psn=7", "tx_start vl=1 psn=8", 1),
			total: StreamCounts{Matched: 5, Differing: 1}, firstWhat: DivDiffering,
			firstReason: "field psn: golden 7, new 8", firstStream: "H.Port[0] vl=1",
		},
		{
			name:  "missing event",
			neu:   join(lines[0], lines[1], lines[3], lines[4], lines[5]), // tx_end vl=0 gone
			total: StreamCounts{Matched: 5, Missing: 1}, firstWhat: DivMissing, firstStream: "H.Port[0] vl=0",
		},
		{
			name:  "extra event",
			neu:   baseTrace + "80000 H.Qp cqe qpn=5 wqe=1 status=success\n",
			total: StreamCounts{Matched: 6, Extra: 1}, firstWhat: DivExtra, firstStream: "H.Qp qpn=5",
		},
		{
			// The cqe moves by 3 ps; with tolerance 2 that is a difference.
			name:  "timing shift beyond tolerance",
			neu:   strings.Replace(baseTrace, "70000 H.Qp", "70003 H.Qp", 1),
			opt:   DiffOptions{TolerancePS: 2},
			total: StreamCounts{Matched: 5, Differing: 1}, firstWhat: DivDiffering,
			firstReason: "time: golden 70000 ps, new 70003 ps (shift +3 ps, tolerance 2 ps)", firstStream: "H.Qp qpn=5",
		},
		{
			name: "timing shift within tolerance", equivalent: true,
			neu:   strings.Replace(baseTrace, "70000 H.Qp", "70003 H.Qp", 1),
			opt:   DiffOptions{TolerancePS: 3},
			total: StreamCounts{Matched: 6},
		},
		{
			// The vl=1 credit_update moves after vl=0's tx_end: another
			// stream, so not a mismatch.
			name: "inter-stream reordering accepted", equivalent: true,
			neu:   join(lines[0], lines[2], lines[1], lines[3], lines[4], lines[5]),
			total: StreamCounts{Matched: 6},
		},
		{
			// The same swap inside one stream (tx_end before tx_start on
			// vl=0) is a difference.
			name:  "intra-stream reordering caught",
			neu:   join(lines[2], lines[1], lines[0], lines[3], lines[4], lines[5]),
			total: StreamCounts{Matched: 5, Missing: 1, Extra: 1}, firstWhat: DivMissing, firstStream: "H.Port[0] vl=0",
		},
		{
			name: "ignored kind", equivalent: true,
			neu:   join(lines[0], lines[2], lines[3], lines[4], lines[5]), // credit_update gone
			opt:   DiffOptions{IgnoreKinds: []components.TraceKind{components.TraceCreditUpdate}},
			total: StreamCounts{Matched: 5},
		},
		{
			name: "compared fields only", equivalent: true,
			neu:   strings.Replace(baseTrace, "status=success", "status=rem_access_err", 1),
			opt:   DiffOptions{Fields: []string{"qpn", "wqe"}},
			total: StreamCounts{Matched: 6},
		},
		{
			name:  "zero matches is different",
			neu:   "",
			total: StreamCounts{Missing: 6}, firstWhat: DivMissing, firstStream: "H.Port[0] vl=0",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Diff(mustTrace(t, baseTrace), mustTrace(t, c.neu), c.opt)
			assert.Equal(t, c.equivalent, res.Equivalent())
			got := res.Total
			got.Stream = ""
			assert.Equal(t, c.total, got)
			if c.firstWhat == "" {
				assert.Nil(t, res.First)
				return
			}
			require.NotNil(t, res.First)
			assert.Equal(t, c.firstWhat, res.First.What)
			assert.Equal(t, c.firstStream, res.First.Stream)
			assert.Equal(t, c.firstReason, res.First.Reason)
		})
	}
}

func TestDiffEmptyTracesAreDifferent(t *testing.T) {
	res := Diff(mustTrace(t, ""), mustTrace(t, ""), DiffOptions{})
	assert.False(t, res.Equivalent(), "nothing matched is never equal")
}

func TestDiffMissingInLongStreamIsOneEvent(t *testing.T) {
	// 200 events in one stream; NEW lacks the 100th. Alignment must report
	// exactly one missing event and 199 matched, not a cascade of 100
	// differing events.
	var g, n strings.Builder
	for i := 0; i < 200; i++ {
		line := "H.P rx_tail vl=0 psn=" + strconv.Itoa(i) + "\n"
		g.WriteString(strconv.Itoa(i*10) + " " + line)
		if i != 99 {
			n.WriteString(strconv.Itoa(i*10) + " " + line)
		}
	}
	res := Diff(mustTrace(t, g.String()), mustTrace(t, n.String()), DiffOptions{Context: 2})
	assert.Equal(t, StreamCounts{Matched: 199, Missing: 1}, res.Total)
	require.NotNil(t, res.First)
	assert.Equal(t, 2+99, res.First.Golden.Line) // header is line 1, event i is line i+2
	// Context: 2 events before, plus the event itself, on each side.
	require.Len(t, res.First.GoldenContext, 3)
	assert.Equal(t, res.First.Golden.Line, res.First.GoldenContext[2].Line)
	require.Len(t, res.First.NewContext, 3)
}

func TestAlignPositionalFallback(t *testing.T) {
	// Two streams of 1500 events that never match exceed maxEditDistance
	// (1000): every pair is reported differing, none lost.
	var c comparer
	ops := c.align(1500, 1500, func(i, j int) bool { return false })
	require.Len(t, ops, 1500)
	for _, op := range ops {
		assert.Equal(t, opDiffer, op.what)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestDiffMainExitCodes(t *testing.T) {
	dir := t.TempDir()
	golden := writeFile(t, dir, "golden.trace", traceText(baseTrace))
	same := writeFile(t, dir, "same.trace", traceText(baseTrace))
	changed := writeFile(t, dir, "changed.trace", traceText(strings.Replace(baseTrace, "psn=7", "psn=8", 2)))
	v2 := writeFile(t, dir, "v2.trace", strings.Replace(traceText(baseTrace), " v1 ", " v2 ", 1))
	badLine := writeFile(t, dir, "bad.trace", traceText(baseTrace+"oops\n"))
	// Cut mid-line, as head -c cuts: the last line still parses as an event.
	truncated := writeFile(t, dir, "cut.trace", traceText(baseTrace+"70500 H.Qp cqe qpn=5 wqe=1 status=succ"))
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"equivalent", []string{golden, same}, ExitEquivalent, "EQUIVALENT: 6 matched", ""},
		{"different", []string{golden, changed, "--context", "1"}, ExitDifferent, "first divergence: stream \"H.Port[0] vl=1\": differing (golden line 5, new line 5): field psn: golden 7, new 8", ""},
		{"unreadable", []string{golden, filepath.Join(dir, "nope.trace")}, ExitError, "", "nope.trace"},
		{"unknown version", []string{golden, v2}, ExitError, "", `line 1: unknown trace version "v2"`},
		{"bad line", []string{golden, badLine}, ExitError, "", "bad.trace: line 8:"},
		{"truncated new", []string{golden, truncated}, ExitError, "", "cut.trace: line 8: truncated: no newline at the end"},
		{"truncated golden", []string{truncated, golden}, ExitError, "", "cut.trace: line 8: truncated: no newline at the end"},
		// Byte-identical files take the streaming fast path, which must not
		// take a cut file for a whole one either.
		{"truncated both", []string{truncated, truncated}, ExitError, "", "cut.trace: line 8: truncated: no newline at the end"},
		{"one file", []string{golden}, ExitError, "", "want 2 files"},
		// A directory opens; reading it as a trace once ended in a
		// makeslice panic caught as an internal error (exit 1).
		{"directory golden", []string{dir, golden}, ExitError, "", dir + ": is a directory (want a trace file"},
		{"directory new", []string{golden, dir}, ExitError, "", dir + ": is a directory (want a trace file"},
		{"bad kind", []string{golden, same, "--ignore-kinds", "nope"}, ExitError, "", `"nope" is not an event kind`},
		{"bad kind, repeated", []string{golden, same, "--ignore-kinds", "tx_end", "--ignore-kinds", "nope"}, ExitError, "", `"nope" is not an event kind`},
		// changed differs from golden in the psn of one tx_start and one
		// tx_end (psn=7 → 8); leaving out both kinds leaves the
		// credit_update and the cqe, 2 events, equal. Given twice, the
		// first --ignore-kinds counts too: kept alone, the second
		// (tx_end) left the tx_start differing.
		{"ignore two kinds, repeated", []string{golden, changed, "--ignore-kinds", "tx_start", "--ignore-kinds", "tx_end"}, ExitEquivalent, "EQUIVALENT: 2 matched", ""},
		{"ignore two kinds, comma-separated", []string{golden, changed, "--ignore-kinds", "tx_start,tx_end"}, ExitEquivalent, "EQUIVALENT: 2 matched", ""},
		{"ignore one of the two", []string{golden, changed, "--ignore-kinds", "tx_end"}, ExitDifferent, "field psn: golden 7, new 8", ""},
		{"negative tolerance", []string{golden, same, "--tolerance-ps", "-1"}, ExitError, "", "--tolerance-ps: -1 is negative"},
		// Comparing only a field no event has would compare nothing.
		{"absent field", []string{golden, changed, "--fields", "bogus"}, ExitError, "", `--fields: "bogus" is in no event of either trace (fields present: avail, bytes, cap, psn, qpn, status, vl, wqe)`},
		// Byte-identical files too, which the streaming fast path compares.
		{"absent field, identical files", []string{golden, same, "--fields", "bogus"}, ExitError, "", `--fields: "bogus" is in no event of either trace (fields present: avail, bytes, cap, psn, qpn, status, vl, wqe)`},
		{"present field", []string{golden, changed, "--fields", "bytes"}, ExitEquivalent, "EQUIVALENT: 6 matched", ""},
		{"present field, identical files", []string{golden, same, "--fields", "bytes"}, ExitEquivalent, "EQUIVALENT: 6 matched", ""},
		{"bad flag", []string{golden, same, "--frobnicate"}, ExitError, "", "frobnicate"},
		{"bad format", []string{golden, same, "--format", "xml"}, ExitError, "", `--format: "xml" is not a report format (text, json)`},
		{"json equivalent", []string{golden, same, "--format", "json"}, ExitEquivalent, `"verdict": "EQUIVALENT"`, ""},
		{"json different", []string{golden, changed, "--format", "json"}, ExitDifferent, `"verdict": "DIFFERENT"`, ""},
		{"help", []string{"--help"}, 0, "usage: hcasim diff GOLDEN NEW", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := DiffMain(c.args, &out, &errb)
			assert.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			assert.Contains(t, out.String(), c.stdout)
			assert.Contains(t, errb.String(), c.stderr)
			if code == ExitError {
				// A user's error is one line on stderr, nothing on stdout.
				assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q", errb.String())
				assert.Empty(t, out.String())
			}
			if c.name == "help" {
				// Help goes to stdout, as every other --help does.
				assert.Contains(t, out.String(), "--tolerance-ps")
				// What GOLDEN and NEW may be, - among them.
				assert.Contains(t, out.String(), "gzip-compressed, a pipe, or - for standard input")
				assert.Empty(t, errb.String())
			}
		})
	}
}

// TestDiffMainPipe: a trace given as a pipe (hcasim diff golden.trace
// <(zcat run.trace.gz)) is read once: the fast path's fallback, which reads
// a file again from its start, cannot seek a pipe and once failed with
// "illegal seek" whenever the traces differed. The report is the one the
// same traces give as files: "changed" has psn=7 made 8 on both vl=1
// events, so 4 events match and 2 differ (TestDiffMainExitCodes'
// "different" case).
func TestDiffMainPipe(t *testing.T) {
	dir := t.TempDir()
	golden := writeFile(t, dir, "golden.trace", traceText(baseTrace))
	changedText := traceText(strings.Replace(baseTrace, "psn=7", "psn=8", 2))
	changed := writeFile(t, dir, "changed.trace", changedText)
	for _, c := range []struct {
		name    string
		content string
		code    int
	}{
		{"different", changedText, ExitDifferent},
		{"equivalent", traceText(baseTrace), ExitEquivalent},
	} {
		t.Run(c.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "new.trace")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			go func() {
				// Opening a FIFO's write end waits for its reader.
				if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					_, _ = f.WriteString(c.content)
					_ = f.Close()
				}
			}()
			var out, errb bytes.Buffer
			code := DiffMain([]string{golden, fifo}, &out, &errb)
			require.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			assert.Empty(t, errb.String())
			// The same report as for the regular file, bar its name.
			var want, wantErr bytes.Buffer
			other := golden
			if c.code == ExitDifferent {
				other = changed
			}
			require.Equal(t, c.code, DiffMain([]string{golden, other}, &want, &wantErr))
			assert.Equal(t, want.String(), out.String())
		})
	}
}

// TestDiffMainStdin: GOLDEN or NEW given as - is read from standard input
// (xzcat golden.trace.xz | hcasim diff - run.trace), a pipe or a file
// redirected there, with the report the files give; both - is refused,
// and a file that does not exist is one line saying what is wanted. "-"
// was opened as a file named "-" ("open -: no such file or directory").
func TestDiffMainStdin(t *testing.T) {
	dir := t.TempDir()
	golden := writeFile(t, dir, "golden.trace", traceText(baseTrace))
	changedText := traceText(strings.Replace(baseTrace, "psn=7", "psn=8", 2))
	changed := writeFile(t, dir, "changed.trace", changedText)
	var want, wantErr bytes.Buffer
	require.Equal(t, ExitDifferent, DiffMain([]string{golden, changed}, &want, &wantErr))

	// A pipe, as NEW.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	go func() {
		_, _ = w.WriteString(changedText)
		_ = w.Close()
	}()
	var out, errb bytes.Buffer
	code := diffMain([]string{golden, "-"}, r, &out, &errb)
	_ = r.Close()
	require.Equal(t, ExitDifferent, code, errb.String())
	assert.Empty(t, errb.String())
	assert.Equal(t, want.String(), out.String())

	// A file redirected to standard input, as GOLDEN (the report names
	// the files as given, so only the verdict line is compared).
	f, err := os.Open(golden)
	require.NoError(t, err)
	defer f.Close()
	out.Reset()
	code = diffMain([]string{"-", golden}, f, &out, &errb)
	require.Equal(t, ExitEquivalent, code, errb.String())
	assert.True(t, strings.HasPrefix(out.String(), "EQUIVALENT: 6 matched"), out.String())

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-", "-"}, "hcasim diff: GOLDEN and NEW are both - (standard input holds one trace; give the other as a file)\n"},
		{[]string{golden, filepath.Join(dir, "nope.trace")}, "hcasim diff: " + filepath.Join(dir, "nope.trace") + ": no such file (want a trace file, as --trace writes, or - for standard input)\n"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, ExitError, diffMain(c.args, f, &out, &errb), c.args)
		assert.Equal(t, c.want, errb.String())
	}
}

// TestDiffMainGzip: a gzip-compressed trace (a golden kept as
// golden.trace.gz) is read through its decompressor, as a file or a pipe,
// and gives the report its plain text gives; a cut or broken one is one
// line, exit 2. It was "not an hcasim trace: header "\x1f\x8b…"".
func TestDiffMainGzip(t *testing.T) {
	dir := t.TempDir()
	golden := writeFile(t, dir, "golden.trace", traceText(baseTrace))
	changedText := traceText(strings.Replace(baseTrace, "psn=7", "psn=8", 2))
	changed := writeFile(t, dir, "changed.trace", changedText)
	gz := func(name, text string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, err := w.Write([]byte(text))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return writeFile(t, dir, name, b.String())
	}
	goldenGz := gz("golden.trace.gz", traceText(baseTrace))
	changedGz := gz("changed.trace.gz", changedText)
	report := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := DiffMain(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, c := range []struct {
		name          string
		args, asPlain []string
		code          int
	}{
		{"golden compressed", []string{goldenGz, changed}, []string{golden, changed}, ExitDifferent},
		{"new compressed", []string{golden, changedGz}, []string{golden, changed}, ExitDifferent},
		{"both compressed, equal", []string{goldenGz, goldenGz}, []string{golden, golden}, ExitEquivalent},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := report(c.args...)
			require.Equal(t, c.code, code, errs)
			assert.Empty(t, errs)
			_, want, _ := report(c.asPlain...)
			assert.Equal(t, want, out)
		})
	}
	whole, err := os.ReadFile(goldenGz)
	require.NoError(t, err)
	cut := writeFile(t, dir, "cut.trace.gz", string(whole[:len(whole)-12])) // no trailer, part of the stream
	notGz := writeFile(t, dir, "fake.trace.gz", "\x1f\x8bxx")
	for _, c := range []struct{ name, file, want string }{
		{"cut", cut, "cut.trace.gz: "},
		{"bad header", notGz, "fake.trace.gz: gzip-compressed, but unexpected EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := report(c.file, golden)
			assert.Equal(t, ExitError, code)
			assert.Empty(t, out)
			assert.Equal(t, 1, strings.Count(errs, "\n"), errs)
			assert.Contains(t, errs, c.want)
		})
	}
}

// TestDiffJSON: --format json carries what the text report says, for a
// program: the verdict and counts, the first divergence with both events
// (their lines, times, fields typed as the trace has them, and text) and
// the context before them, the per-stream counts, and the notes. Both
// files' psn=7 became 8 on two lines (the tx_start and tx_end of vl=1),
// so stream "H.Port[0] vl=1" has 2 differing events and the others match
// (4 events).
func TestDiffJSON(t *testing.T) {
	g := mustTrace(t, baseTrace)
	n := mustTrace(t, strings.Replace(baseTrace, "psn=7", "psn=8", 2))
	n.Header.Seed = g.Header.Seed + 1
	var out bytes.Buffer
	require.NoError(t, WriteDiffJSON(&out, g, n, Diff(g, n, DiffOptions{Context: 1})))
	var r struct {
		Verdict                            string
		Matched, Missing, Extra, Differing int
		Notes                              []string
		First                              struct {
			Stream, What, Reason string
			Golden, New          struct {
				Line   int
				TimePS int64 `json:"time_ps"`
				Path   string
				Kind   string
				Fields map[string]any
				Text   string
			}
			GoldenContext []struct{ Line int } `json:"golden_context"`
		} `json:"first_divergence"`
		Streams []struct {
			Stream    string
			Matched   int
			Differing int
		}
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &r), out.String())
	assert.Equal(t, "DIFFERENT", r.Verdict)
	assert.Equal(t, []int{4, 0, 0, 2}, []int{r.Matched, r.Missing, r.Extra, r.Differing})
	assert.Equal(t, "H.Port[0] vl=1", r.First.Stream)
	assert.Equal(t, DivDiffering, r.First.What)
	assert.Equal(t, "field psn: golden 7, new 8", r.First.Reason)
	assert.Equal(t, 5, r.First.Golden.Line)
	assert.Equal(t, int64(34920), r.First.Golden.TimePS)
	assert.Equal(t, "H.Port[0]", r.First.Golden.Path)
	assert.Equal(t, "tx_start", r.First.Golden.Kind)
	assert.Equal(t, map[string]any{"vl": 1.0, "psn": 7.0, "bytes": 106.0}, r.First.Golden.Fields)
	assert.Equal(t, 8.0, r.First.New.Fields["psn"])
	assert.Equal(t, "34920 H.Port[0] tx_start vl=1 psn=8 bytes=106", r.First.New.Text)
	require.Len(t, r.First.GoldenContext, 2, "one event of context, and the divergent one")
	assert.Equal(t, 4, r.First.GoldenContext[0].Line)
	var differing int
	for _, s := range r.Streams {
		differing += s.Differing
		if s.Stream == "H.Port[0] vl=1" {
			assert.Equal(t, 2, s.Differing)
		}
	}
	assert.Equal(t, 2, differing)
	assert.Contains(t, r.Notes, fmt.Sprintf("note: seed differs: golden %d, new %d", g.Header.Seed, n.Header.Seed))

	// Equivalent traces: no divergence (null), every event matched.
	out.Reset()
	require.NoError(t, WriteDiffJSON(&out, g, g, Diff(g, g, DiffOptions{})))
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, "EQUIVALENT", r.Verdict)
	assert.Contains(t, out.String(), `"first_divergence": null`)
}

func TestDiffReportShowsContextAndTable(t *testing.T) {
	g := mustTrace(t, baseTrace)
	n := mustTrace(t, strings.Replace(baseTrace, "psn=7", "psn=8", 2))
	var out bytes.Buffer
	WriteDiffReport(&out, g, n, Diff(g, n, DiffOptions{Context: 1}))
	s := out.String()
	// The divergent line on each side is marked '>'; one event of context before it.
	assert.Contains(t, s, "      4: 34920 H.Port[0] tx_end vl=0 psn=1 bytes=106\n  >     5: 34920 H.Port[0] tx_start vl=1 psn=7 bytes=106")
	assert.Contains(t, s, ">     5: 34920 H.Port[0] tx_start vl=1 psn=8 bytes=106")
	assert.Contains(t, s, "STREAM")
	assert.Contains(t, s, "H.Port[0] vl=1")
	assert.Contains(t, s, "TOTAL")
}

// TestDiffReportSeedNote: the seed note shows both seeds as the runs had
// them, 2^63 and above included.
func TestDiffReportSeedNote(t *testing.T) {
	g, n := mustTrace(t, baseTrace), mustTrace(t, baseTrace)
	g.Header.Seed, n.Header.Seed = 1<<63, math.MaxUint64
	var out bytes.Buffer
	WriteDiffReport(&out, g, n, Diff(g, n, DiffOptions{}))
	assert.Contains(t, out.String(), "note: seed differs: golden 9223372036854775808, new 18446744073709551615\n")
}

// FuzzDiff feeds arbitrary pairs of files to the diff: it never panics,
// broken input exits 2, readable input 0 or 1. (DiffMain's file handling is
// covered by TestDiffMainExitCodes; this calls what it runs once the files
// are open, so the fuzzer is not slowed by file I/O.)
func FuzzDiff(f *testing.F) {
	f.Add(traceText(baseTrace), traceText(strings.Replace(baseTrace, "psn=7", "psn=8", 1)), int64(0), 3)
	f.Add(traceText(baseTrace), "garbage", int64(5), 0)
	f.Add(traceText(""), traceText("5 A tx_start\n"), int64(-1), 100)
	f.Fuzz(func(t *testing.T, a, b string, tol int64, ctxN int) {
		if tol < 0 {
			tol = -tol
		}
		if ctxN < 0 || ctxN > 1000 {
			ctxN = 5
		}
		var out, errb bytes.Buffer
		code := diffReaders(strings.NewReader(a), strings.NewReader(b), "a", "b",
			DiffOptions{TolerancePS: tol, Context: ctxN}, &out, &errb)
		_, errA := ReadTrace(strings.NewReader(a))
		_, errB := ReadTrace(strings.NewReader(b))
		if errA != nil || errB != nil {
			assert.Equal(t, ExitError, code, "broken input exits 2")
			assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "one-line error: %q", errb.String())
		} else {
			assert.Contains(t, []int{ExitEquivalent, ExitDifferent}, code)
		}
	})
}

func TestDiffSamePicosecondOrderIgnored(t *testing.T) {
	// tx_end of one packet and tx_start of the next at the same picosecond,
	// in either order: simultaneous, so equivalent. At different times the
	// same swap is a difference (TestDiffCases, intra-stream reordering).
	a := "100 P tx_end vl=0 psn=1\n100 P tx_start vl=0 psn=2\n200 P tx_end vl=0 psn=2\n"
	b := "100 P tx_start vl=0 psn=2\n100 P tx_end vl=0 psn=1\n200 P tx_end vl=0 psn=2\n"
	res := Diff(mustTrace(t, a), mustTrace(t, b), DiffOptions{})
	assert.True(t, res.Equivalent())
	assert.Equal(t, 3, res.Total.Matched)
}

// TestDiffFieldChangedInATieRun: events at one picosecond are compared in
// their text's order (TestDiffSamePicosecondOrderIgnored), so a field
// changed on one of several same-kind events of that picosecond (an HCA's
// burst of dma_read lines, each its own psn) sorts it elsewhere in the
// run: golden psn 10 11 12, new psn 10 12 99 aligns as 10=10, 11 deleted,
// 12=12, 99 inserted, a missing and an extra event with a matched one
// between, which the report gave as "missing" with no reason. The two are
// one event with one field changed: one differing event, and the first
// divergence names the field and both values, as for a lone event.
func TestDiffFieldChangedInATieRun(t *testing.T) {
	golden := "500 P dma_read qpn=1 psn=10\n500 P dma_read qpn=1 psn=11\n500 P dma_read qpn=1 psn=12\n900 P cqe qpn=1 wqe=0\n"
	neu := strings.Replace(golden, "psn=11", "psn=99", 1)
	res := Diff(mustTrace(t, golden), mustTrace(t, neu), DiffOptions{})
	assert.Equal(t, StreamCounts{Matched: 3, Differing: 1}, res.Total)
	require.NotNil(t, res.First)
	assert.Equal(t, DivDiffering, res.First.What)
	assert.Equal(t, "field psn: golden 11, new 99", res.First.Reason)
	require.NotNil(t, res.First.Golden)
	require.NotNil(t, res.First.New)
	assert.Equal(t, 3, res.First.Golden.Line, "the header is line 1")
	assert.Equal(t, 3, res.First.New.Line)
	assert.Equal(t, ib.PS(500), res.First.Golden.Time)

	// Not paired: the extra event at another picosecond (600) is no
	// event of the missing one's run, and stays extra; nor one of
	// another kind in the run (a cqe where a dma_read went missing).
	moved := "500 P dma_read qpn=1 psn=10\n500 P dma_read qpn=1 psn=12\n600 P dma_read qpn=1 psn=11\n900 P cqe qpn=1 wqe=0\n"
	res = Diff(mustTrace(t, golden), mustTrace(t, moved), DiffOptions{})
	assert.Equal(t, StreamCounts{Matched: 3, Missing: 1, Extra: 1}, res.Total)
	require.NotNil(t, res.First)
	assert.Equal(t, DivMissing, res.First.What)
	otherKind := "500 P dma_read qpn=1 psn=10\n500 P dma_read qpn=1 psn=12\n500 P key_check qpn=1 key=1 result=pass\n900 P cqe qpn=1 wqe=0\n"
	res = Diff(mustTrace(t, golden), mustTrace(t, otherKind), DiffOptions{})
	assert.Equal(t, StreamCounts{Matched: 3, Missing: 1, Extra: 1}, res.Total)

	// The CLI's text and JSON say the same.
	dir := t.TempDir()
	gp, np := filepath.Join(dir, "golden.trace"), filepath.Join(dir, "new.trace")
	require.NoError(t, os.WriteFile(gp, []byte(traceText(golden)), 0o644))
	require.NoError(t, os.WriteFile(np, []byte(traceText(neu)), 0o644))
	var out, errb bytes.Buffer
	assert.Equal(t, ExitDifferent, DiffMain([]string{gp, np}, &out, &errb))
	assert.Contains(t, out.String(), `first divergence: stream "P qpn=1": differing (golden line 3, new line 3): field psn: golden 11, new 99`)
	out.Reset()
	assert.Equal(t, ExitDifferent, DiffMain([]string{gp, np, "--format", "json"}, &out, &errb))
	var j struct {
		Differing int `json:"differing"`
		First     struct {
			What   string `json:"what"`
			Reason string `json:"reason"`
		} `json:"first_divergence"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &j))
	assert.Equal(t, 1, j.Differing)
	assert.Equal(t, "differing", j.First.What)
	assert.Equal(t, "field psn: golden 11, new 99", j.First.Reason)
}

// TestDiffIdenticalFastPath: identical event lines are recognised while
// streaming, and the report (verdict, notes, per-stream table) and exit
// code are exactly what reading both files whole gives, with and without
// options, and when only the headers differ.
func TestDiffIdenticalFastPath(t *testing.T) {
	files, err := filepath.Glob("testdata/*.trace")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	kinds, err := parseKinds("stage,credit_update")
	require.NoError(t, err)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		text := string(raw)
		// Same events, another config hash and seed in the header.
		nl := strings.IndexByte(text, '\n')
		other := traceMagic + " " + TraceVersion + " config=" + strings.Repeat("ab", 32) + " seed=99" + text[nl:]
		for _, opt := range []DiffOptions{{Context: 5}, {TolerancePS: 10, Fields: []string{"psn"}, IgnoreKinds: kinds}, {Paths: []string{"*Port*"}}} {
			for _, pair := range [][2]string{{text, text}, {text, other}} {
				res, _, _, ok := identical(strings.NewReader(pair[0]), strings.NewReader(pair[1]), opt)
				require.True(t, ok, f)
				require.NotNil(t, res)
				var fast, whole, errFast, errWhole bytes.Buffer
				codeFast := diffReaders(strings.NewReader(pair[0]), strings.NewReader(pair[1]), "a", "b", opt, &fast, &errFast)
				codeWhole := diffWhole(strings.NewReader(pair[0]), strings.NewReader(pair[1]), "a", "b", [2]int{}, opt, &whole, &errWhole)
				assert.Equal(t, codeWhole, codeFast, f)
				assert.Equal(t, whole.String(), fast.String(), f)
				assert.Empty(t, errFast.String())
			}
		}
	}
	// Not identical: a changed field, a missing last line, a bad line in
	// both. The fast path declines and the whole read reports.
	base := traceText(baseTrace)
	for _, b := range []string{
		strings.Replace(base, "psn=7", "psn=8", 1),
		base[:strings.LastIndexByte(strings.TrimSuffix(base, "\n"), '\n')+1],
		base + "oops\n",
	} {
		a := b
		if b != base+"oops\n" {
			a = base
		}
		_, _, _, ok := identical(strings.NewReader(a), strings.NewReader(b), DiffOptions{})
		assert.False(t, ok)
	}
	var out, errb bytes.Buffer
	code := diffReaders(strings.NewReader(base+"oops\n"), strings.NewReader(base+"oops\n"), "a", "b", DiffOptions{}, &out, &errb)
	assert.Equal(t, ExitError, code)
	assert.Contains(t, errb.String(), "a: line 8:")
}

// TestDiffMainPath: --path restricts the comparison to components whose
// path matches a glob, as --trace-path restricts a recording. baseTrace has
// two components: H.Port[0] (streams vl=0: tx_start, tx_end; vl=1:
// credit_update, tx_start, tx_end; 5 events) and H.Qp (one cqe). "changed"
// has psn 7 → 8 on vl=1's tx_start and tx_end, so:
//   - H.Qp alone: its 1 event matches, equivalent;
//   - H.Port[*: 3 matched, 2 differing;
//   - both globs (comma-separated): 4 matched, 2 differing, as without;
//   - a glob that selects nothing, in either file, is an error naming it and
//     the components there are (even when the files are identical, on the
//     streaming path), and so is an empty glob.
func TestDiffMainPath(t *testing.T) {
	dir := t.TempDir()
	golden := writeFile(t, dir, "golden.trace", traceText(baseTrace))
	same := writeFile(t, dir, "same.trace", traceText(baseTrace))
	changed := writeFile(t, dir, "changed.trace", traceText(strings.Replace(baseTrace, "psn=7", "psn=8", 2)))
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"qp only", []string{golden, changed, "--path", "H.Qp"}, ExitEquivalent,
			[]string{"EQUIVALENT: 1 matched", `note: compared only components matching "H.Qp"`}, ""},
		{"port only", []string{golden, changed, "--path", "H.Port[*"}, ExitDifferent,
			[]string{"DIFFERENT: 3 matched, 0 missing, 0 extra, 2 differing", `first divergence: stream "H.Port[0] vl=1"`}, ""},
		{"both", []string{golden, changed, "--path", "H.Qp,H.Port[0]"}, ExitDifferent,
			[]string{"DIFFERENT: 4 matched, 0 missing, 0 extra, 2 differing", `note: compared only components matching "H.Qp", "H.Port[0]"`}, ""},
		{"repeated", []string{golden, changed, "--path", "H.Qp", "--path", "H.Port[0]"}, ExitDifferent,
			[]string{"DIFFERENT: 4 matched, 0 missing, 0 extra, 2 differing"}, ""},
		{"json note", []string{golden, changed, "--path", "H.Qp", "--format", "json"}, ExitEquivalent,
			[]string{`"matched": 1`, `note: compared only components matching \"H.Qp\"`}, ""},
		{"selects nothing", []string{golden, changed, "--path", "H.Qp", "--path", "Fabric.*"}, ExitError, nil,
			`--path: "Fabric.*" selects no event to compare in either trace (components: H.Port[0], H.Qp)`},
		// Identical files take the fast path; the error still names the
		// components there are (it named none).
		{"selects nothing, identical files", []string{golden, same, "--path", "Fabric.*"}, ExitError, nil,
			`--path: "Fabric.*" selects no event to compare in either trace (components: H.Port[0], H.Qp)`},
		{"only ignored kinds", []string{golden, changed, "--path", "H.Qp", "--ignore-kinds", "cqe"}, ExitError, nil,
			`--path: "H.Qp" selects no event to compare in either trace`},
		{"empty glob", []string{golden, same, "--path", ""}, ExitError, nil, "--path: an empty glob"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := DiffMain(c.args, &out, &errb)
			assert.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			for _, want := range c.stdout {
				assert.Contains(t, out.String(), want)
			}
			assert.Contains(t, errb.String(), c.stderr)
			if code == ExitError {
				assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q", errb.String())
				assert.Empty(t, out.String())
			}
		})
	}
}
