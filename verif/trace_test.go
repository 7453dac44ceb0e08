package verif

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

var testHeader = Header{Version: TraceVersion, Config: ConfigHash([]byte("links: 1\n")), Seed: 7}

func TestRecorderWritesFixedFieldOrder(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf, testHeader, Filter{})
	// Fields given out of order: the writer puts standard keys in
	// FieldRank order (vl before psn before bytes), then others by name.
	ev := components.TraceEvent{Time: 1500, Path: "Fabric.Hca[0].Port[1]", Kind: components.TraceTxStart,
		Fields: []components.TraceField{
			components.StrField("zeta", "x y"),
			components.IntField("bytes", 90),
			components.StrField("alpha", "12"),
			components.IntField("psn", 3),
			components.IntField("vl", 0),
		}}
	r.Func(sim.HookCtx{Pos: components.HookPosTrace, Item: &ev})
	r.Func(sim.HookCtx{Pos: sim.HookPosBeforeEvent, Item: "ignored"})
	require.NoError(t, r.Flush())
	want := testHeader.String() + "\n" +
		`1500 Fabric.Hca[0].Port[1] tx_start vl=0 psn=3 bytes=90 alpha="12" zeta="x y"` + "\n"
	assert.Equal(t, want, buf.String())
	assert.Equal(t, 1, r.Count())

	// Reading back gives the same event: "12" stays a string because it was quoted.
	tr, err := ReadTrace(&buf)
	require.NoError(t, err)
	require.Len(t, tr.Events, 1)
	assert.Equal(t, testHeader, tr.Header)
	got := tr.Events[0]
	assert.Equal(t, 2, got.Line)
	assert.Equal(t, ib.PS(1500), got.Time)
	s, ok := got.Str("alpha")
	assert.True(t, ok)
	assert.Equal(t, "12", s)
	s, _ = got.Str("zeta")
	assert.Equal(t, "x y", s)
	n, _ := got.Int("bytes")
	assert.Equal(t, int64(90), n)
}

func TestRecorderDeterministicAndPacketFields(t *testing.T) {
	p := &ib.Packet{Kind: ib.Data, VL: 1, SL: 2, SLID: 1, DLID: 2, Opcode: ib.RDMAWriteOnly, DestQP: 17, PSN: 100,
		PayloadLen: 64, ICRC: 0xdead, Seq: 5}
	run := func() string {
		var buf bytes.Buffer
		r := NewRecorder(&buf, testHeader, Filter{})
		ev := components.TraceEvent{Time: 10, Path: "A.Port[0]", Kind: components.TraceTxStart}
		ev.Fields = ev.AppendPacket(nil, p)
		r.Record(&ev)
		require.NoError(t, r.Flush())
		return buf.String()
	}
	a, b := run(), run()
	assert.Equal(t, a, b)
	// Wire bytes of an RDMA WRITE ONLY with 64 B payload, no GRH:
	// LRH 8 + BTH 12 + RETH 16 + payload 64 + ICRC 4 + VCRC 2 = 106 B; credits ceil(106/64) = 2.
	assert.Contains(t, a, "10 A.Port[0] tx_start seq=5 vl=1 sl=2 slid=1 dlid=2 op=RDMA_WRITE_ONLY qpn=17 psn=100 bytes=106 credits=2 icrc=57005\n")
}

func TestRecorderFilter(t *testing.T) {
	f, err := ParseFilter("Fabric.Leaf[2].*, Fabric.Hca[?].Port[0]", "tx_start,rx_tail")
	require.NoError(t, err)
	var buf bytes.Buffer
	r := NewRecorder(&buf, testHeader, f)
	cases := []struct {
		path string
		kind components.TraceKind
		kept bool
	}{
		{"Fabric.Leaf[2].Port[5]", components.TraceTxStart, true},
		{"Fabric.Leaf[2].Port[5]", components.TraceCreditUpdate, false}, // kind not selected
		{"Fabric.Leaf[1].Port[5]", components.TraceTxStart, false},      // path not selected
		{"Fabric.Hca[3].Port[0]", components.TraceRxTail, true},
		{"Fabric.Hca[33].Port[0]", components.TraceRxTail, false}, // '?' is one character
		{"Fabric.Leaf2.Port5", components.TraceTxStart, false},    // '[' is literal, unlike path.Match
	}
	want := 0
	for _, c := range cases {
		r.Record(&components.TraceEvent{Time: 1, Path: c.path, Kind: c.kind})
		if c.kept {
			want++
		}
	}
	require.NoError(t, r.Flush())
	assert.Equal(t, want, r.Count())
	assert.Equal(t, want+1, strings.Count(buf.String(), "\n"))

	_, err = ParseFilter("", "tx_start,bogus")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"bogus"`)
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"*", "anything", true},
		{"A.*.C", "A.B[1].C", true},
		{"A.*.C", "A.C", false},
		{"*Port[0]", "X.Port[0]", true},
		{"*Port[0]", "X.Port[0].Rx", false},
		{"a*b*c", "aXbYbZc", true},
		{"", "", true},
		{"", "a", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, components.GlobMatch(c.pat, c.name), "%q vs %q", c.pat, c.name)
	}
}

// TestGlobCanMatch: a glob can match an Akita-form name (capitalised parts
// joined by '.', each with an optional [index]) or it cannot, whatever
// its wildcards stand for.
func TestGlobCanMatch(t *testing.T) {
	for _, c := range []struct {
		glob string
		want bool
	}{
		{"Fabric.Leaf[2].Port[5]", true},
		{"Fabric.Host[0].HCA", true},
		{"Fabric.Leaf[2].*", true},
		{"*", true},
		{"?", true},
		{"*Port[1]", true},
		{"Fabric.Leaf[*", true},   // '*' can be "2]"
		{"Fabric.Host[1?]", true}, // "Fabric.Host[10]"
		{"*.HCA", true},
		{"[", false},
		{"", false},
		{"fabric.host*", false}, // parts are capitalised
		{"Fabric.Leaf[2", false},
		{"Fabric.Leaf[]", false},
		{"Fabric.Leaf[x]", false},
		{"Fabric..Host", false},
		{"Fabric.Host[0]X", false},
		{"Fabric.Host_0", false},
		{"Fabric.*.", false}, // a name does not end in '.'
	} {
		assert.Equal(t, c.want, GlobCanMatch(c.glob), "%q", c.glob)
		if c.want {
			continue
		}
		// What the recorder's matcher does: no name in Akita form matches.
		for _, name := range []string{"Fabric.Leaf[2].Port[5]", "Fabric.Host[0].HCA", "Fabric.Host[10]", "A"} {
			assert.False(t, components.GlobMatch(c.glob, name), "%q matches %q", c.glob, name)
		}
	}
}

func TestReadTraceErrors(t *testing.T) {
	hdr := testHeader.String() + "\n"
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", "line 1: empty file"},
		{"not a trace", "hello\n", "line 1: not an hcasim trace"},
		// The magic alone: say what is missing after it, not that the magic is.
		{"magic only", "# hcasim-trace\n", `line 1: header "# hcasim-trace" ends after the magic: the version, config and seed are missing (want "# hcasim-trace v1 config=<sha256> seed=<n>")`},
		{"magic and spaces", "# hcasim-trace  \n", `line 1: header "# hcasim-trace  " ends after the magic: the version, config and seed are missing`},
		{"magic run on", "# hcasim-tracev1\n", `line 1: not an hcasim trace: header "# hcasim-tracev1" does not start with "# hcasim-trace" and a space`},
		{"unknown version", "# hcasim-trace v2 config=" + testHeader.Config + " seed=1\n", `line 1: unknown trace version "v2"`},
		{"bad config", "# hcasim-trace v1 config=abc seed=1\n", "line 1: header config"},
		{"no seed", "# hcasim-trace v1 config=" + testHeader.Config + "\n", "line 1: header needs"},
		{"bad time", hdr + "x A tx_start\n", `line 2: time "x"`},
		{"negative time", hdr + "-5 A tx_start\n", `line 2: time "-5"`},
		{"unknown kind", hdr + "\n# comment\n5 A teleport\n", `line 4: unknown event kind "teleport"`},
		{"no path", hdr + "5\n", "line 2: missing component path"},
		{"bad field", hdr + "5 A tx_start vl\n", `line 2: field "vl" is not key=value`},
		{"dup field", hdr + "5 A tx_start vl=1 vl=2\n", `line 2: field "vl" appears twice`},
		{"bad key", hdr + "5 A tx_start VL=1\n", `line 2: field key "VL"`},
		{"bad int", hdr + "5 A tx_start vl=1x\n", `line 2: field vl: "1x" is not an int64`},
		{"bad quote", hdr + "5 A tx_start s=\"abc\n", "line 2: field s: bad quoted string"},
		{"double space", hdr + "5 A tx_start vl=1  psn=2\n", `line 2: two spaces after "vl=1"`},
		// A file cut short (head -c, a full disk) can end in a line that
		// parses: "stage=key" of "stage=key_check valid=1 ready=0".
		{"truncated event", hdr + "5 A tx_start vl=1\n6 A stage stage=key", "line 3: truncated: no newline at the end"},
		{"truncated comment", hdr + "5 A tx_start vl=1\n# the en", "line 3: truncated: no newline at the end"},
		{"truncated header", testHeader.String(), "line 1: truncated: no newline at the end"},
		{"not a trace, no newline", "hello", "line 1: not an hcasim trace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadTrace(strings.NewReader(c.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one-line error")
		})
	}
}

// TestReadErrorIsNotTruncation: a reader that fails part-way through a
// line (a cut .trace.gz: the decompressor hands over the bytes it has,
// then "unexpected EOF") ends the scanner's input as EOF does, so the
// half line it cut looked like a line without its newline and the report
// said "truncated: no newline" instead of the decompressor's error.
func TestReadErrorIsNotTruncation(t *testing.T) {
	hdr := testHeader.String() + "\n"
	broken := errors.New("gzip-compressed, and decompressing it failed: unexpected EOF")
	in := io.MultiReader(strings.NewReader(hdr+"5 A tx_start vl=1\n6 A stage stage=key"), iotest.ErrReader(broken))
	_, err := ReadTrace(in)
	require.ErrorIs(t, err, broken)
	assert.NotContains(t, err.Error(), "truncated")
	// The diff's streaming comparison reads the same way.
	a := strings.NewReader(hdr + "5 A tx_start vl=1\n6 A stage stage=key_check\n")
	b := io.MultiReader(strings.NewReader(hdr+"5 A tx_start vl=1\n6 A stage stage=key"), iotest.ErrReader(broken))
	var out, errb bytes.Buffer
	code := diffWhole(a, b, "a.trace", "b.trace.gz", [2]int{}, DiffOptions{}, &out, &errb)
	assert.Equal(t, ExitError, code)
	assert.Contains(t, errb.String(), "unexpected EOF")
	assert.NotContains(t, errb.String(), "truncated")
}

// TestHeaderSeedFullRange: a run's seed is any of 0..2^64-1 (fabric.Config.Seed
// is a uint64), and the header carries it unchanged; a seed of 2^63 and above
// must not turn negative.
func TestHeaderSeedFullRange(t *testing.T) {
	for _, seed := range []uint64{0, 1, math.MaxInt64, 1 << 63, math.MaxUint64} {
		h := testHeader
		h.Seed = seed
		line := h.String()
		assert.True(t, strings.HasSuffix(line, " seed="+strconv.FormatUint(seed, 10)), line)
		tr, err := ReadTrace(strings.NewReader(line + "\n"))
		require.NoError(t, err)
		assert.Equal(t, seed, tr.Header.Seed)
	}
	// Writers before uint64 seeds wrote the int64 of the same bits: such a
	// v1 trace reads as the seed it was run with.
	for in, want := range map[string]uint64{"-1": math.MaxUint64, "-9223372036854775808": 1 << 63} {
		tr, err := ReadTrace(strings.NewReader("# hcasim-trace v1 config=" + testHeader.Config + " seed=" + in + "\n"))
		require.NoError(t, err, in)
		assert.Equal(t, want, tr.Header.Seed, in)
	}
	for _, bad := range []string{"18446744073709551616", "-9223372036854775809", "x", ""} {
		_, err := ReadTrace(strings.NewReader("# hcasim-trace v1 config=" + testHeader.Config + " seed=" + bad + "\n"))
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), `line 1: header seed "`+bad+`" is not a decimal integer 0..18446744073709551615`)
	}
}

// TestParseEventLineGrammar: the reader takes exactly the grammar of
// docs/trace-format.md: one space between tokens, none at either end;
// integers spelled as strconv writes them (one spelling per number); bare
// strings of printable ASCII without '=' or '"'. What the writer can write —
// negative integers, Go-quoted strings with escapes — reads.
func TestParseEventLineGrammar(t *testing.T) {
	good := []struct {
		line string
		want components.TraceField
	}{
		{"1 A tx_end seq=5", components.IntField("seq", 5)},
		{"1 A tx_end seq=0", components.IntField("seq", 0)},
		{"1 A tx_end seq=-3", components.IntField("seq", -3)},
		{"1 A tx_end seq=-9223372036854775808", components.IntField("seq", math.MinInt64)},
		{"1 A tx_end seq=9223372036854775807", components.IntField("seq", math.MaxInt64)},
		{"1 A tx_end x=a_b.c[1]", components.StrField("x", "a_b.c[1]")},
		{"1 A tx_end x=~", components.StrField("x", "~")},
		{`1 A tx_end x="a\"b"`, components.StrField("x", `a"b`)},
		{`1 A tx_end x="a  b" y=1`, components.StrField("x", "a  b")},
		{`1 A tx_end x="\t\u00e9\x00"`, components.StrField("x", "\t\u00e9\x00")},
		{`1 A tx_end x="007"`, components.StrField("x", "007")},
		{`1 A tx_end x=""`, components.StrField("x", "")},
	}
	for _, c := range good {
		ev, err := ParseEventLine(c.line)
		require.NoError(t, err, c.line)
		f, ok := ev.Field(c.want.Key)
		require.True(t, ok, c.line)
		assert.Equal(t, c.want, f, c.line)
	}
	ev, err := ParseEventLine("0 A tx_end")
	require.NoError(t, err)
	assert.Equal(t, ib.PS(0), ev.Time)

	bad := []struct{ line, want string }{
		{"1 A tx_end vl=0 ", `a space at the end of the line, after "vl=0"`},
		{"1 A tx_end ", `a space at the end of the line, after "tx_end"`},
		{`1 A tx_end x="a" `, `a space at the end of the line, after "x=\"a\""`},
		{"1 A tx_end vl=0  seq=1", `two spaces after "vl=0"`},
		{`1 A tx_end x="a"  seq=1`, `two spaces after "x=\"a\""`},
		{"1 A  tx_end", `two spaces after "A"`},
		{"1  A tx_end", `two spaces after "1"`},
		{" 1 A tx_end", "a space before the time"},
		{`1 A tx_end x=a"b`, `field x: bare string "a\"b" has '"'`},
		{"1 A tx_end x=a=b", `field x: bare string "a=b" has '='`},
		{"1 A tx_end x=a\tb", `field x: bare string "a\tb" has '\t'`},
		{"1 A tx_end x=\u00e9", `field x: bare string "\u00e9" has byte 0xc3`},
		{"1 A tx_end seq=+5", `field seq: "+5" is not an int64`},
		{"1 A tx_end seq=-0", `field seq: "-0" is not an int64`},
		{"1 A tx_end seq=007", `field seq: "007" is not an int64`},
		{"1 A tx_end seq=-07", `field seq: "-07" is not an int64`},
		{"1 A tx_end seq=00", `field seq: "00" is not an int64`},
		{"1 A tx_end seq=-", `field seq: "-" is not an int64`},
		{"1 A tx_end seq=9223372036854775808", `field seq: "9223372036854775808" is not an int64`},
		{"0100 A tx_end", `time "0100" is not a non-negative integer`},
		{"+1 A tx_end", `time "+1" is not a non-negative integer`},
		{"-0 A tx_end", `time "-0" is not a non-negative integer`},
		{"00 A tx_end", `time "00" is not a non-negative integer`},
	}
	for _, c := range bad {
		_, err := ParseEventLine(c.line)
		require.Error(t, err, c.line)
		assert.Contains(t, err.Error(), c.want, c.line)
	}
}

// TestWriterOutputReadsBack: every string and integer the writer is given
// is written so that the reader, with its exact grammar, gives it back: a
// string that a bare value cannot hold ('"' or '=' anywhere, a space, a
// control or non-ASCII byte, a leading digit or sign, empty) is quoted.
func TestWriterOutputReadsBack(t *testing.T) {
	strs := []string{"ok", "a_b", `a"b`, `"`, "a=b", "a b", "a\tb", "\u00e9", "\x7f", "\x00", "", "12", "-x", "+x", "0x1", "`", "'", "\\", "#"}
	ints := []int64{0, 1, -1, 7, math.MaxInt64, math.MinInt64}
	ev := components.TraceEvent{Time: 0, Path: "A.Port[0]", Kind: components.TraceDrop}
	for i, v := range strs {
		ev.Fields = append(ev.Fields, components.StrField(fmt.Sprintf("s%02d", i), v))
	}
	for i, v := range ints {
		ev.Fields = append(ev.Fields, components.IntField(fmt.Sprintf("n%02d", i), v))
	}
	line := FormatEvent(&ev)
	got, err := ParseEventLine(line)
	require.NoError(t, err, line)
	sortFields(ev.Fields)
	assert.Equal(t, ev, got)
	assert.Contains(t, line, ` s02="a\"b" `, "a '\"' inside a string is quoted")
}

func FuzzReadTrace(f *testing.F) {
	f.Add(testHeader.String() + "\n1 A tx_start vl=0 s=\"a b\"\n")
	f.Add("# hcasim-trace v1 config=" + testHeader.Config + " seed=-1\n\n# c\n0 A.B[1] cqe qpn=3 status=ok\n")
	f.Add("# hcasim-trace v9\n")
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ReadTrace(strings.NewReader(in))
		if err != nil {
			return
		}
		// What reads, writes back and reads again to the same events.
		var buf bytes.Buffer
		r := NewRecorder(&buf, tr.Header, Filter{})
		for i := range tr.Events {
			r.Record(&tr.Events[i].TraceEvent)
		}
		require.NoError(t, r.Flush())
		tr2, err := ReadTrace(&buf)
		require.NoError(t, err, "rewritten trace:\n%s", buf.String())
		require.Equal(t, len(tr.Events), len(tr2.Events))
		for i := range tr.Events {
			a, b := tr.Events[i].TraceEvent, tr2.Events[i].TraceEvent
			sortFields(a.Fields)
			assert.Equal(t, a, b)
		}
	})
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRecorderReportsWriteError(t *testing.T) {
	r := NewRecorder(failingWriter{}, testHeader, Filter{})
	r.Record(&components.TraceEvent{Time: 1, Path: "A", Kind: components.TraceTxStart})
	err := r.Flush()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "disk full")
}

func TestRecorderPanicsOnModelBugs(t *testing.T) {
	r := NewRecorder(io.Discard, testHeader, Filter{})
	assert.Panics(t, func() { r.Record(&components.TraceEvent{Time: 1, Path: "has space", Kind: components.TraceTxStart}) })
	assert.Panics(t, func() { r.Record(&components.TraceEvent{Time: 1, Path: "A", Kind: components.TraceInvalid}) })
	assert.Panics(t, func() {
		r.Record(&components.TraceEvent{Time: 1, Path: "A", Kind: components.TraceTxStart, Fields: []components.TraceField{components.IntField("Bad", 1)}})
	})
	assert.Panics(t, func() { r.Func(sim.HookCtx{Pos: components.HookPosTrace, Item: "not an event"}) })
}

// TestReadTraceNamesTheOtherOutputs: hcasim diff given a run's other
// outputs by mistake says which they look like, where it said only that
// the header "" (a pcapng capture: its first block starts with a newline
// byte) or "$comment …" (a VCD) does not start with the magic.
func TestReadTraceNamesTheOtherOutputs(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"pcapng", "\n\r\r\n\x1c\x00\x00\x00M<+\x1a", `line 1: not an hcasim trace: the first line is empty, where the header "# hcasim-trace v1 config=<sha256> seed=<n>" belongs (a pcapng capture, as --pcap writes, starts so; hcasim diff compares --trace files)`},
		{"vcd", "$comment hcasim 0.1.0 edr.yaml $end\n$timescale 1ps $end\n", `line 1: not an hcasim trace: header "$comment hcasim 0.1.0 edr.yaml $end" starts as a VCD waveform does (--vcd writes those; hcasim diff compares --trace files, whose header is "# hcasim-trace v1 config=<sha256> seed=<n>")`},
	} {
		_, err := ReadTrace(strings.NewReader(c.text))
		assert.EqualError(t, err, c.want, c.name)
	}
}
