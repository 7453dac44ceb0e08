package verif

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TraceVersion is the format version this package writes and reads.
const TraceVersion = "v1"

// traceMagic starts the header line.
const traceMagic = "# hcasim-trace"

// maxLineBytes bounds one trace line; longer input is a format error, not an
// out-of-memory.
const maxLineBytes = 1 << 20

// Header is a trace's first line: the format version, the SHA-256 of the
// effective configuration (hex) and the seed. Two traces from the same
// config and seed must be byte-identical.
type Header struct {
	Version string // TraceVersion
	Config  string // lower-case hex SHA-256 of the effective config, 64 digits
	Seed    uint64 // the run's seed; the config allows all of 0..2^64-1
}

// ConfigHash returns the hex SHA-256 of the effective configuration bytes
// (the YAML the run actually used, defaults filled in), for Header.Config.
func ConfigHash(effective []byte) string {
	sum := sha256.Sum256(effective)
	return hex.EncodeToString(sum[:])
}

// String formats h as the header line, without newline.
func (h Header) String() string {
	return fmt.Sprintf("%s %s config=%s seed=%d", traceMagic, h.Version, h.Config, h.Seed)
}

// Event is one parsed trace line: the event and the line it came from.
type Event struct {
	components.TraceEvent
	Line int // 1-based line number in its file
}

// Trace is a parsed trace file.
type Trace struct {
	Header Header
	Events []Event
}

// ReadTrace parses a whole trace. An error names the line and what is wrong
// with it; the first error stops the read.
func ReadTrace(r io.Reader) (*Trace, error) {
	t := &Trace{}
	err := scanTrace(r, func(h Header) { t.Header = h }, func(line int, text []byte) error {
		ev, err := ParseEventLine(string(text))
		if err != nil {
			return err
		}
		t.Events = append(t.Events, Event{TraceEvent: ev, Line: line})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// scanTrace reads a trace line by line: the header to header, each event
// line (not blank, not a comment) to event with its 1-based line number.
// text is valid only during the call. An error names the line: event's
// error is returned as "line N: err".
func scanTrace(r io.Reader, header func(Header), event func(line int, text []byte) error) error {
	sc, cut := newLineScanner(r)
	line := 0
	sawHeader := false
	for sc.Scan() {
		line++
		text := sc.Bytes()
		// A first line that is not a header is no trace at all, and
		// saying so helps more than that it lacks a newline.
		if cut.unterminated && (sawHeader || bytes.HasPrefix(text, []byte(traceMagic))) {
			return fmt.Errorf("line %d: %s", line, errTruncated)
		}
		if !sawHeader {
			h, err := parseHeader(string(text))
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			header(h)
			sawHeader = true
			continue
		}
		if len(text) == 0 || text[0] == '#' {
			continue // blank lines and comments are allowed after the header
		}
		if err := event(line, text); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return fmt.Errorf("line %d: longer than %d bytes", line+1, maxLineBytes)
		}
		return err
	}
	if !sawHeader {
		return fmt.Errorf("line 1: empty file, want header %q", headerForm)
	}
	return nil
}

// errTruncated is the error of a last line without its newline: a writer
// ends every line with one, so a file without it was cut short (a full
// disk, a copy or head -c), and its last line may be cut mid-token into
// something that still parses ("stage=key" for "stage=key_check").
const errTruncated = "truncated: no newline at the end (every line of a trace, the last too, ends with \\n)"

// lineEnds watches a bufio.ScanLines scanner for a line that ends at the end
// of the input instead of at a newline.
type lineEnds struct {
	unterminated bool // the last line returned had no newline
	r            io.Reader
	readErr      error // the reader's error other than io.EOF
}

// Read passes r's bytes on and keeps its error: a scanner whose reader
// fails ends its input as at EOF, so a cut gzip stream's last,
// half-decompressed line would otherwise read as an unterminated one.
func (e *lineEnds) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.readErr = err
	}
	return n, err
}

func (e *lineEnds) split(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && e.readErr != nil {
		// The input ended by the reader's failure, not at its end: say
		// that, not that the line it cut has no newline.
		return 0, nil, e.readErr
	}
	adv, tok, err := bufio.ScanLines(data, atEOF)
	if tok != nil && data[adv-1] != '\n' {
		e.unterminated = true
	}
	return adv, tok, err
}

// newLineScanner returns a scanner of r's lines, at most maxLineBytes each,
// and the watch that says whether the line it last returned had no newline.
func newLineScanner(r io.Reader) (*bufio.Scanner, *lineEnds) {
	e := &lineEnds{r: r}
	sc := bufio.NewScanner(e)
	sc.Buffer(make([]byte, 0, 64*1024), maxLineBytes)
	sc.Split(e.split)
	return sc, e
}

// headerForm is the header line's form, for error messages.
const headerForm = traceMagic + " " + TraceVersion + " config=<sha256> seed=<n>"

func parseHeader(text string) (Header, error) {
	// The other files a run writes, named: hcasim diff given a --vcd or a
	// --pcap file said only that its header does not start with the
	// magic (a pcapng block starts with a newline byte: header "").
	switch {
	case text == "":
		return Header{}, fmt.Errorf("not an hcasim trace: the first line is empty, where the header %q belongs (a pcapng capture, as --pcap writes, starts so; hcasim diff compares --trace files)", headerForm)
	case strings.HasPrefix(text, "$"):
		return Header{}, fmt.Errorf("not an hcasim trace: header %q starts as a VCD waveform does (--vcd writes those; hcasim diff compares --trace files, whose header is %q)", clip(text), headerForm)
	}
	if !strings.HasPrefix(text, traceMagic) {
		return Header{}, fmt.Errorf("not an hcasim trace: header %q does not start with %q", clip(text), traceMagic)
	}
	if len(text) > len(traceMagic) && text[len(traceMagic)] != ' ' {
		return Header{}, fmt.Errorf("not an hcasim trace: header %q does not start with %q and a space", clip(text), traceMagic)
	}
	parts := strings.Fields(text[len(traceMagic):])
	if len(parts) == 0 {
		return Header{}, fmt.Errorf("header %q ends after the magic: the version, config and seed are missing (want %q)", clip(text), headerForm)
	}
	h := Header{Version: parts[0]}
	if h.Version != TraceVersion {
		return Header{}, fmt.Errorf("unknown trace version %q (this reader knows %s)", clip(h.Version), TraceVersion)
	}
	var sawConfig, sawSeed bool
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case !ok:
			return Header{}, fmt.Errorf("header item %q is not key=value", clip(p))
		case k == "config":
			if len(v) != 64 || strings.Trim(v, "0123456789abcdef") != "" {
				return Header{}, fmt.Errorf("header config %q is not a 64-digit lower-case hex sha256", clip(v))
			}
			h.Config, sawConfig = v, true
		case k == "seed":
			n, err := parseSeed(v)
			if err != nil {
				return Header{}, err
			}
			h.Seed, sawSeed = n, true
		default:
			return Header{}, fmt.Errorf("header key %q is unknown (allowed: config, seed)", clip(k))
		}
	}
	if !sawConfig || !sawSeed {
		return Header{}, fmt.Errorf("header needs config=<sha256> and seed=<n> (want %q)", headerForm)
	}
	return h, nil
}

// parseSeed reads a header's seed, a decimal 0..2^64-1. Writers before
// seeds were uint64 wrote a seed of 2^63 and above as the negative int64 of
// the same 64 bits (2^64-1 as -1); such a v1 trace reads as the seed it was
// run with.
func parseSeed(v string) (uint64, error) {
	if canonicalDecimal(v) {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			return n, nil
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n < 0 {
			return uint64(n), nil
		}
	}
	return 0, fmt.Errorf("header seed %q is not a decimal integer 0..%d (no '+', no leading zero)", clip(v), uint64(math.MaxUint64))
}

// ParseEventLine parses one event line: "<ps> <path> <kind> k=v ...", the
// grammar of docs/trace-format.md exactly: one space between tokens and none
// at either end; integers spelled as strconv.AppendInt spells them (no '+',
// no leading zero, no -0), so a number has one spelling; a bare string of
// printable ASCII without '=' or '"'. Everything the writer (AppendEventLine)
// writes reads back.
func ParseEventLine(text string) (components.TraceEvent, error) {
	return parseEvent(text, nil)
}

// parseEvent is ParseEventLine with the fields put in scratch (its contents
// overwritten, grown if short) when scratch is not nil, so that a reader
// that only checks a line or looks at it briefly does not allocate.
func parseEvent(text string, scratch []components.TraceField) (components.TraceEvent, error) {
	var ev components.TraceEvent
	if strings.HasPrefix(text, " ") {
		return ev, fmt.Errorf("a space before the time (a line starts with its time, and tokens are separated by exactly one space)")
	}
	tok, rest, err := nextToken(text)
	if err != nil {
		return ev, err
	}
	ps, ok := parseInt(tok)
	if !ok || ps < 0 {
		return ev, fmt.Errorf("time %q is not a non-negative integer of picoseconds (decimal, no sign, no leading zero)", clip(tok))
	}
	ev.Time = ib.PS(ps)
	if ev.Path, rest, err = nextToken(rest); err != nil {
		return ev, err
	}
	if ev.Path == "" {
		return ev, fmt.Errorf("missing component path after time")
	}
	var kindName string
	if kindName, rest, err = nextToken(rest); err != nil {
		return ev, err
	}
	k, ok := components.ParseTraceKind(kindName)
	if !ok {
		return ev, fmt.Errorf("unknown event kind %q", clip(kindName))
	}
	ev.Kind = k
	// One allocation of the right size (a '=' inside a quoted value only
	// makes it larger): appending from nil grows by doubling, and a diff
	// keeps every event of two traces.
	if scratch != nil {
		ev.Fields = scratch[:0]
	} else {
		ev.Fields = make([]components.TraceField, 0, strings.Count(rest, "="))
	}
	for rest != "" {
		var f components.TraceField
		f, rest, err = parseField(rest)
		if err != nil {
			return ev, err
		}
		if _, dup := ev.Field(f.Key); dup {
			return ev, fmt.Errorf("field %q appears twice", f.Key)
		}
		ev.Fields = append(ev.Fields, f)
	}
	return ev, nil
}

// nextToken splits off the text up to the next space, and that space.
func nextToken(s string) (tok, rest string, err error) {
	i := strings.IndexByte(s, ' ')
	if i < 0 {
		return s, "", nil
	}
	rest, err = afterSpace(s[:i], s[i+1:])
	return s[:i], rest, err
}

// afterSpace checks the text after the space that ends tok: tokens are
// separated by exactly one space, and none ends the line.
func afterSpace(tok, rest string) (string, error) {
	switch {
	case rest == "":
		return "", fmt.Errorf("a space at the end of the line, after %q (tokens are separated by exactly one space, none after the last)", clip(tok))
	case rest[0] == ' ':
		return "", fmt.Errorf("two spaces after %q (tokens are separated by exactly one space)", clip(tok))
	}
	return rest, nil
}

func parseField(s string) (components.TraceField, string, error) {
	eq := strings.IndexByte(s, '=')
	sp := strings.IndexByte(s, ' ')
	if eq < 0 || (sp >= 0 && sp < eq) {
		tok, _, _ := nextToken(s)
		return components.TraceField{}, "", fmt.Errorf("field %q is not key=value", clip(tok))
	}
	key := s[:eq]
	if !validKey(key) {
		return components.TraceField{}, "", fmt.Errorf("field key %q is not a lower-case identifier", clip(key))
	}
	line := s // "key=value ...", to name the whole field in an error
	s = s[eq+1:]
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return components.TraceField{}, "", fmt.Errorf("field %s: bad quoted string", key)
		}
		v, _ := strconv.Unquote(q)
		rest := s[len(q):]
		if rest != "" {
			if rest[0] != ' ' {
				return components.TraceField{}, "", fmt.Errorf("field %s: text after closing quote", key)
			}
			if rest, err = afterSpace(line[:eq+1+len(q)], rest[1:]); err != nil {
				return components.TraceField{}, "", err
			}
		}
		return components.StrField(key, v), rest, nil
	}
	val, rest := s, ""
	if i := strings.IndexByte(s, ' '); i >= 0 {
		var err error
		val = s[:i]
		if rest, err = afterSpace(line[:eq+1+i], s[i+1:]); err != nil {
			return components.TraceField{}, "", err
		}
	}
	if val == "" {
		return components.TraceField{}, "", fmt.Errorf("field %s has an empty value", key)
	}
	if looksNumeric(val) {
		n, ok := parseInt(val)
		if !ok {
			return components.TraceField{}, "", fmt.Errorf("field %s: %q is not an int64 (decimal, optional '-', no '+', no leading zero, no -0)", key, clip(val))
		}
		return components.IntField(key, n), rest, nil
	}
	for i := 0; i < len(val); i++ {
		if !bareByte(val[i]) {
			return components.TraceField{}, "", fmt.Errorf("field %s: bare string %+q has %s (allowed: printable ASCII other than '=' and '\"'; any other string is Go-quoted)", key, clip(val), quoteByte(val[i]))
		}
	}
	return components.StrField(key, val), rest, nil
}

// canonicalDecimal reports whether s follows the spelling rules of an
// integer as strconv writes it, beyond what strconv.Parse* checks (digits,
// range): no '+', no leading zero, no "-0". One number, one spelling.
func canonicalDecimal(s string) bool {
	d := strings.TrimPrefix(s, "-")
	return d != "" && d[0] != '+' && (d[0] != '0' || s == "0")
}

// parseInt parses a decimal int64 spelled as strconv.AppendInt spells it.
func parseInt(s string) (int64, bool) {
	if !canonicalDecimal(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func validKey(k string) bool {
	if k == "" || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// looksNumeric reports whether a bare value starts like a number; such a value
// must parse as int64 (a string that looks like a number is written quoted).
func looksNumeric(v string) bool {
	c := v[0]
	return c >= '0' && c <= '9' || c == '-' || c == '+'
}

// bareByte reports whether c may appear in a bare (unquoted) string value:
// printable ASCII but '=' (it would read as a key) and '"' (it opens a
// quoted value).
func bareByte(c byte) bool {
	return c > ' ' && c < 0x7f && c != '=' && c != '"'
}

// quoteByte names a byte in an error: an ASCII one Go-quoted ('"', '\t'),
// any other by its value (a byte of UTF-8 is no character on its own).
func quoteByte(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRuneToASCII(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// needsQuote reports whether a string value must be quoted to read back as
// the same string.
func needsQuote(v string) bool {
	if v == "" || looksNumeric(v) {
		return true
	}
	for i := 0; i < len(v); i++ {
		if !bareByte(v[i]) {
			return true
		}
	}
	return false
}

// clip shortens user input quoted in an error message.
func clip(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// AppendEventLine appends ev's trace line (no newline) to dst, with the fields
// in the fixed order: standard keys in components.FieldRank order, then the
// others by name. scratch is reused for sorting and returned.
func AppendEventLine(dst []byte, ev *components.TraceEvent, scratch []components.TraceField) ([]byte, []components.TraceField) {
	if strings.IndexByte(ev.Path, ' ') >= 0 || ev.Path == "" {
		panic(fmt.Sprintf("verif: trace path %q is empty or has a space (event %s at %d ps)", ev.Path, ev.Kind, ev.Time))
	}
	if !ev.Kind.Valid() {
		panic(fmt.Sprintf("verif: invalid trace kind %d at %s, %d ps", ev.Kind, ev.Path, ev.Time))
	}
	dst = strconv.AppendInt(dst, int64(ev.Time), 10)
	dst = append(dst, ' ')
	dst = append(dst, ev.Path...)
	dst = append(dst, ' ')
	dst = append(dst, ev.Kind.String()...)
	scratch = append(scratch[:0], ev.Fields...)
	sortFields(scratch)
	for i := range scratch {
		f := &scratch[i]
		if !validKey(f.Key) {
			panic(fmt.Sprintf("verif: trace field key %q of %s at %s is not a lower-case identifier", f.Key, ev.Kind, ev.Path))
		}
		dst = append(dst, ' ')
		dst = append(dst, f.Key...)
		dst = append(dst, '=')
		switch {
		case !f.IsStr:
			dst = strconv.AppendInt(dst, f.Int, 10)
		case needsQuote(f.Str):
			dst = strconv.AppendQuoteToASCII(dst, f.Str)
		default:
			dst = append(dst, f.Str...)
		}
	}
	return dst, scratch
}

// FormatEvent returns ev's trace line without newline.
func FormatEvent(ev *components.TraceEvent) string {
	b, _ := AppendEventLine(nil, ev, nil)
	return string(b)
}

// sortFields puts fields in the written order. Insertion sort on ranks
// looked up once per field: events carry about ten fields, and it does not
// allocate for up to 32 fields.
func sortFields(fs []components.TraceField) {
	var buf [32]int
	ranks := buf[:0]
	for i := range fs {
		ranks = append(ranks, components.FieldRank(fs[i].Key))
	}
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fieldLess(ranks[j], ranks[j-1], &fs[j], &fs[j-1]); j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
			ranks[j], ranks[j-1] = ranks[j-1], ranks[j]
		}
	}
}

func fieldLess(ra, rb int, a, b *components.TraceField) bool {
	if ra != rb {
		return ra < rb
	}
	return a.Key < b.Key
}
