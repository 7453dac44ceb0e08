package workload

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

func TestParseTrace(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader(`# a comment line
0     0 1 write_imm 65536 id=1   # trailing comment

2.5   1 0 send      4096  id=4 after=1
1000  1 2 read      1     after=1,4
7     0 3 write     8388608 id=9
3     0 2 write     8 after=9 delay_ns=20000
0     1 2 fetch_add 8 id=10 after=1 compute_ns=1500 delay_ns=2
`), "h.trace", 4)
	require.NoError(t, err)
	require.Len(t, tr.Msgs, 6)
	assert.Equal(t, ReplayMsg{Start: 0, Src: 0, Dst: 1, Op: ReplayWriteImm, Bytes: 65536, ID: 1, Line: 2}, tr.Msgs[0])
	// 2.5 ns is 2500 ps exactly; message 4's dependency is the write_imm it
	// received (index 0); the read waits for the write_imm host 1 received
	// and the send it made.
	assert.Equal(t, ReplayMsg{Start: 2500, Src: 1, Dst: 0, Op: ReplaySend, Bytes: 4096, ID: 4, After: []int32{0}, Line: 4}, tr.Msgs[1])
	assert.Equal(t, ReplayMsg{Start: 1000 * ib.Nanosecond, Src: 1, Dst: 2, Op: ReplayRead, Bytes: 1, ID: -1, After: []int32{0, 1}, Line: 5}, tr.Msgs[2])
	assert.Equal(t, int64(8388608), tr.Msgs[3].Bytes)
	// delay_ns=20000 is 20 µs, 2e7 ps, after the write host 0 sent
	// itself (id=9, index 3).
	assert.Equal(t, ReplayMsg{Start: 3 * ib.Nanosecond, Src: 0, Dst: 2, Op: ReplayWrite, Bytes: 8, ID: -1, After: []int32{3}, Delay: 20 * ib.Microsecond, Line: 7}, tr.Msgs[4])
	for _, m := range tr.Msgs[:4] {
		assert.Zero(t, m.Delay, "line %d has no delay_ns", m.Line)
	}
	for _, m := range tr.Msgs[:5] {
		assert.Zero(t, m.Compute, "line %d has no compute_ns", m.Line)
	}
	// An atomic after the write_imm host 1 received (index 0), with both
	// a delay (2 ns = 2000 ps) and compute (1500 ns = 1.5e6 ps).
	assert.Equal(t, ReplayMsg{Start: 0, Src: 1, Dst: 2, Op: ReplayFetchAdd, Bytes: 8, ID: 10, After: []int32{0},
		Delay: 2 * ib.Nanosecond, Compute: 1500 * ib.Nanosecond, Line: 8}, tr.Msgs[5])
}

// TestParseTraceEditorsFiles: a trace saved by an editor or made on
// Windows (a UTF-8 byte-order mark before the first line, CRLF line
// ends, tabs between fields, spaces at a line's end, comments) reads as
// the plain one: the same messages, on the same lines.
func TestParseTraceEditorsFiles(t *testing.T) {
	plain := "# halo\n0 0 1 write_imm 4096 id=1\n\n5 1 0 send 8 after=1 # reply\n"
	want, err := ParseTrace(strings.NewReader(plain), "h.trace", 4)
	require.NoError(t, err)
	require.Len(t, want.Msgs, 2)
	for name, text := range map[string]string{
		"byte-order mark":  "\ufeff" + plain,
		"mark and CRLF":    "\ufeff" + strings.ReplaceAll(plain, "\n", "\r\n"),
		"tabs":             strings.ReplaceAll(plain, " ", "\t"),
		"trailing spaces":  strings.ReplaceAll(plain, "\n", "  \t\n"),
		"no final newline": strings.TrimSuffix(plain, "\n"),
	} {
		got, err := ParseTrace(strings.NewReader(text), "h.trace", 4)
		if assert.NoError(t, err, name) {
			assert.Equal(t, want.Msgs, got.Msgs, name)
		}
	}
	// A mark alone, or before comments only, is an empty trace.
	_, err = ParseTrace(strings.NewReader("\ufeff# nothing\n"), "h.trace", 4)
	assert.EqualError(t, err, "h.trace: no messages (one a line: start_ns src dst op bytes)")
}

// TestParseTraceRefuses: every mistake a trace can hold is one line naming
// the file and line, the field, the bad value and what is allowed.
func TestParseTraceRefuses(t *testing.T) {
	for _, tc := range []struct{ name, trace, want string }{
		{"unknown op", "0 0 1 put 8\n",
			`h.trace:1: op: "put" is not an op (write, write_imm, send, read, fetch_add, cmp_swap)`},
		{"atomic of 16 bytes", "0 0 1 fetch_add 16\n",
			`h.trace:1: bytes: "16" is not 8 (a fetch_add moves one 8-byte word)`},
		{"atomic of 4 bytes", "0 0 1 cmp_swap 4\n",
			`h.trace:1: bytes: "4" is not 8 (a cmp_swap moves one 8-byte word)`},
		{"dependency on an atomic received", "0 1 0 fetch_add 8 id=1\n0 0 1 write 8 after=1\n",
			`h.trace:2: after: 1 is a fetch_add to host 0, which sees no completion of it (only send and write_imm complete at their destination)`},
		{"src out of range", "0 4 1 write 8\n",
			`h.trace:1: src: "4" is not a host of the topology (0 to 3)`},
		{"dst negative", "\n0 0 -1 write 8\n",
			`h.trace:2: dst: "-1" is not a host of the topology (0 to 3)`},
		{"src not a number", "0 a 1 write 8\n",
			`h.trace:1: src: "a" is not a host of the topology (0 to 3)`},
		{"src == dst", "0 2 2 write 8\n",
			`h.trace:1: dst: 2 is the source host too (a message goes to another host)`},
		{"zero bytes", "0 0 1 write 0\n",
			`h.trace:1: bytes: "0" is out of range (1 to 1073741824)`},
		{"negative bytes", "0 0 1 send -5\n",
			`h.trace:1: bytes: "-5" is out of range (1 to 1073741824)`},
		{"bytes too large", "0 0 1 send 1073741825\n",
			`h.trace:1: bytes: "1073741825" is out of range (1 to 1073741824)`},
		{"negative start", "-1 0 1 write 8\n",
			`h.trace:1: start_ns: "-1" is out of range (0 to 1e12 ns)`},
		{"start not a number", "soon 0 1 write 8\n",
			`h.trace:1: start_ns: "soon" is not a number (ns in decimal, e.g. 1500 or 12.5; 0 to 1e12)`},
		// ParseFloat alone took these as 16, +Inf and 1000 ns; a trace
		// generator means none of them (the audit, 2026-12-04).
		{"start a hex float", "0x1p4 0 1 write 8\n",
			`h.trace:1: start_ns: "0x1p4" is not a number (ns in decimal, e.g. 1500 or 12.5; 0 to 1e12)`},
		{"start infinite", "Inf 0 1 write 8\n",
			`h.trace:1: start_ns: "Inf" is not a number (ns in decimal, e.g. 1500 or 12.5; 0 to 1e12)`},
		{"start too large in exponent form", "1e13 0 1 write 8\n",
			`h.trace:1: start_ns: "1e13" is out of range (0 to 1e12 ns)`},
		{"bytes in hex", "0 0 1 send 0x10\n",
			`h.trace:1: bytes: "0x10" is not a whole number (a byte count in decimal, 1 to 1073741824)`},
		{"bytes past int64", "0 0 1 send 99999999999999999999\n",
			`h.trace:1: bytes: "99999999999999999999" is out of range (1 to 1073741824)`},
		{"too few fields", "0 0 1 write\n",
			`h.trace:1: 4 fields, want 5: start_ns src dst op bytes (then optional id=N after=N,N delay_ns=N compute_ns=N)`},
		{"unknown option", "0 0 1 write 8 tag=x\n",
			`h.trace:1: tag=x: not a field (the optional fields are id=, after=, delay_ns= and compute_ns=)`},
		{"bad id", "0 0 1 write 8 id=x\n",
			`h.trace:1: id: "x" is not an id (an integer, 0 or more)`},
		{"two ids", "0 0 1 write 8 id=1 id=2\n",
			`h.trace:1: id: given twice on the line (one id a message)`},
		{"duplicate id", "0 0 1 write 8 id=3\n0 1 0 write 8 id=3\n",
			`h.trace:2: id: 3 is already the id of line 1 (each id once)`},
		{"unsorted ids", "0 0 1 write 8 id=5\n# x\n0 1 0 write 8 id=4\n",
			`h.trace:3: id: 4 is not above 5, the id of line 1 (ids increase down the file)`},
		{"bad after", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1,x\n",
			`h.trace:2: after: "x" is not an id (a list of ids, after=3,7)`},
		{"after twice", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 after=1\n",
			`h.trace:2: after: 1 is listed twice (each dependency once)`},
		{"unknown dependency", "0 0 1 write 8 id=1\n0 0 1 write 8 after=2\n",
			`h.trace:2: after: 2 is no message's id (a dependency names the id= of an earlier line)`},
		{"later dependency", "0 0 1 write 8 id=1 after=2\n0 0 1 write 8 id=2\n",
			`h.trace:1: after: 2 is the id of line 2, below this one (a message depends on messages above it, so there is no cycle)`},
		{"cycle on itself", "0 0 1 write 8 id=1 after=1\n",
			`h.trace:1: after: 1 is the message's own id (a dependency cycle)`},
		{"dependency the source does not see", "0 2 3 write_imm 8 id=1\n0 0 1 write 8 after=1\n",
			`h.trace:2: after: 1 goes from host 2 to host 3, and host 0, this message's source, sees neither end (a dependency is a message the source sent or received)`},
		{"dependency on a write received", "0 1 0 write 8 id=1\n0 0 1 write 8 after=1\n",
			`h.trace:2: after: 1 is a write to host 0, which sees no completion of it (only send and write_imm complete at their destination)`},
		{"negative delay", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 delay_ns=-5\n",
			`h.trace:2: delay_ns: "-5" is out of range (a whole number of ns, 0 to 1e12)`},
		{"fractional delay", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 delay_ns=2.5\n",
			`h.trace:2: delay_ns: "2.5" is not a whole number of ns (in decimal, 0 to 1e12)`},
		{"delay not a number", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 delay_ns=long\n",
			`h.trace:2: delay_ns: "long" is not a whole number of ns (in decimal, 0 to 1e12)`},
		{"delay too long", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 delay_ns=1000000000001\n",
			`h.trace:2: delay_ns: "1000000000001" is out of range (a whole number of ns, 0 to 1e12)`},
		{"delay twice", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 delay_ns=5 delay_ns=5\n",
			`h.trace:2: delay_ns: given twice on the line (one delay a message)`},
		{"delay without dependencies", "0 0 1 write 8 delay_ns=20000\n",
			`h.trace:1: delay_ns: 20000 is given without after= (a delay counts from the message's dependencies; without any, start_ns says when it is posted)`},
		{"negative compute", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 compute_ns=-5\n",
			`h.trace:2: compute_ns: "-5" is out of range (a whole number of ns, 0 to 1e12)`},
		{"fractional compute", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 compute_ns=0.5\n",
			`h.trace:2: compute_ns: "0.5" is not a whole number of ns (in decimal, 0 to 1e12)`},
		{"compute too long", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 compute_ns=1000000000001\n",
			`h.trace:2: compute_ns: "1000000000001" is out of range (a whole number of ns, 0 to 1e12)`},
		{"compute twice", "0 0 1 write 8 id=1\n0 0 1 write 8 after=1 compute_ns=5 compute_ns=5\n",
			`h.trace:2: compute_ns: given twice on the line (one compute a message)`},
		{"compute without dependencies", "0 0 1 write 8 compute_ns=5000\n",
			`h.trace:1: compute_ns: 5000 is given without after= (compute follows the message's dependencies; without any, start_ns says when it is posted)`},
		{"no messages", "# nothing\n\n",
			`h.trace: no messages (one a line: start_ns src dst op bytes)`},
		{"empty file", "",
			`h.trace: no messages (one a line: start_ns src dst op bytes)`},
		// Windows PowerShell's > writes UTF-16LE with its mark.
		{"UTF-16", "\xff\xfe0\x00 \x000\x00\n", `h.trace:1: the file is UTF-16 (its byte-order mark "\xff\xfe"); save the trace as UTF-8 or ASCII`},
		// A byte-order mark is taken only where editors write it: before
		// the first byte.
		{"mark inside", "0 0 1 write 8\n\ufeff0 1 0 write 8\n", `h.trace:2: start_ns: "\ufeff0" is not a number (ns in decimal, e.g. 1500 or 12.5; 0 to 1e12)`},
		// bufio.Scanner's own "token too long" named no limit.
		{"line too long", "0 0 1 write 8\n0 0 1 write 8 " + strings.Repeat(" ", 1<<20) + "\n",
			`h.trace:2: longer than 1048576 bytes (one message a line: start_ns src dst op bytes and the optional fields)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTrace(strings.NewReader(tc.trace), "h.trace", 4)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// FuzzParseTrace: whatever a trace holds, ParseTrace does not panic; a
// refusal is one line naming the file; an accepted trace keeps the rules
// the run relies on (dependencies on earlier lines only, a delay only with
// dependencies, hosts in range and distinct).
func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{
		"0 0 1 write_imm 65536 id=1\n0 1 0 send 8 id=2 after=1 delay_ns=20000\n",
		"0 0 1 write 8 delay_ns=5\n",
		"1e3 2 3 read 1 id=0\n5 3 2 write 9 after=0,0\n",
		"0 0 1 write 8 id=1\n0 0 1 write 8 after=1 delay_ns=-1 delay_ns=2\n",
		"0 0 1 fetch_add 8 id=1\n0 0 1 cmp_swap 8 after=1\n1 2 cmp_swap 16\n",
		"0 0 1 write 8 id=1\n0 1 0 send 8 after=1 compute_ns=5000 delay_ns=7\n0 0 1 read 8 compute_ns=3\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := ParseTrace(strings.NewReader(s), "h.trace", 4)
		if err != nil {
			assert.True(t, strings.HasPrefix(err.Error(), "h.trace"), err.Error())
			assert.NotContains(t, err.Error(), "\n")
			return
		}
		for i, m := range tr.Msgs {
			assert.GreaterOrEqual(t, m.Delay, ib.PS(0))
			if m.Delay > 0 {
				assert.NotEmpty(t, m.After, "line %d: a delay without dependencies", m.Line)
			}
			assert.GreaterOrEqual(t, m.Compute, ib.PS(0))
			if m.Compute > 0 {
				assert.NotEmpty(t, m.After, "line %d: compute without dependencies", m.Line)
			}
			assert.NotEqual(t, m.Src, m.Dst)
			if m.Op.isAtomic() {
				assert.Equal(t, int64(8), m.Bytes, "line %d: an atomic moves 8 bytes", m.Line)
			}
			assert.True(t, m.Src >= 0 && m.Src < 4 && m.Dst >= 0 && m.Dst < 4)
			for _, d := range m.After {
				assert.Less(t, int(d), i, "line %d depends on a later line", m.Line)
			}
		}
	})
}
