package verif

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/hcasim/hcasim/components"
)

// Exit codes of DiffMain.
const (
	ExitEquivalent = 0 // traces match, at least one event matched
	ExitDifferent  = 1 // some event missing, extra or differing, or none matched
	ExitError      = 2 // bad flags, unreadable file, unknown version, bad line
)

// DiffMain implements "hcasim diff GOLDEN NEW [flags]". args are the
// arguments after "diff". It prints the verdict, the first divergence with
// context from both files, and per stream the counts of matched, missing,
// extra and differing events; it returns ExitEquivalent, ExitDifferent or
// ExitError. It never panics on any file content.
func DiffMain(args []string, stdout, stderr io.Writer) int {
	return diffMain(args, os.Stdin, stdout, stderr)
}

// diffMain is DiffMain with standard input given: the file a GOLDEN or
// NEW of "-" reads.
func diffMain(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("diff", pflag.ContinueOnError)
	// Help goes to stdout, like every other --help; a bad flag is one line
	// on stderr, without the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	tol := fs.Int64("tolerance-ps", 0, "largest time difference, in picoseconds, at which two events still match")
	fields := fs.StringSlice("fields", nil, "compare only these fields (default: all); kind and time are always compared")
	// A slice, as --fields and --path are: a plain string kept only the
	// last of two --ignore-kinds, and compared the first one's events.
	ignore := fs.StringSlice("ignore-kinds", nil, "event kinds to leave out of the comparison; repeatable or comma-separated")
	paths := fs.StringSlice("path", nil, "compare only components whose path matches this glob ('*' any run, '?' one character), e.g. 'Fabric.Leaf[2].*'; repeatable or comma-separated")
	ctxN := fs.Int("context", 5, "events shown before the first divergence, per file")
	format := fs.String("format", "text", "report format: text, or json (for a CI job to read)")
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			fmt.Fprintln(stdout, "usage: hcasim diff GOLDEN NEW [--tolerance-ps N] [--fields a,b] [--ignore-kinds x,y] [--path GLOB] [--context N] [--format text|json]")
			fmt.Fprintln(stdout, "GOLDEN and NEW are traces --trace wrote, plain or gzip-compressed, a pipe, or - for standard input (one of them); exit 0 equivalent, 1 different, 2 error (docs/trace-format.md)")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return ExitEquivalent // asked for help, got it
		}
		fmt.Fprintf(stderr, "hcasim diff: %v\n", err)
		return ExitError
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "hcasim diff: want 2 files (GOLDEN NEW), got %d\n", fs.NArg())
		return ExitError
	}
	if *tol < 0 {
		fmt.Fprintf(stderr, "hcasim diff: --tolerance-ps: %d is negative (allowed: 0 or more)\n", *tol)
		return ExitError
	}
	if *ctxN < 0 {
		fmt.Fprintf(stderr, "hcasim diff: --context: %d is negative (allowed: 0 or more)\n", *ctxN)
		return ExitError
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "hcasim diff: --format: %q is not a report format (text, json)\n", *format)
		return ExitError
	}
	kinds, err := parseKinds(strings.Join(*ignore, ","))
	if err != nil {
		fmt.Fprintf(stderr, "hcasim diff: --ignore-kinds: %v\n", err)
		return ExitError
	}
	for _, f := range *fields {
		if !validKey(f) {
			fmt.Fprintf(stderr, "hcasim diff: --fields: %q is not a field key (lower-case identifier)\n", f)
			return ExitError
		}
	}
	if fs.Changed("path") && len(*paths) == 0 {
		*paths = []string{""}
	}
	for _, g := range *paths {
		if g == "" {
			fmt.Fprintf(stderr, "hcasim diff: --path: an empty glob (allowed: a component path glob, e.g. 'Fabric.Leaf[2].*')\n")
			return ExitError
		}
	}
	opt := DiffOptions{TolerancePS: *tol, Fields: *fields, IgnoreKinds: kinds, Paths: *paths, Context: *ctxN, JSON: *format == "json"}
	var files [2]*os.File
	var readers [2]io.Reader
	seekable := true
	if fs.Arg(0) == "-" && fs.Arg(1) == "-" {
		fmt.Fprintf(stderr, "hcasim diff: GOLDEN and NEW are both - (standard input holds one trace; give the other as a file)\n")
		return ExitError
	}
	for i := range files {
		var f *os.File
		if fs.Arg(i) == "-" {
			// A trace piped in (xzcat golden.trace.xz | hcasim diff -
			// run.trace), read once, whole, as a pipe is. A terminal is
			// refused rather than waited on, as -config - refuses one.
			f = stdin
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				fmt.Fprintf(stderr, "hcasim diff: -: standard input is a terminal (pipe a trace into it: xzcat golden.trace.xz | hcasim diff - run.trace)\n")
				return ExitError
			}
		} else {
			var err error
			if f, err = os.Open(fs.Arg(i)); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					fmt.Fprintf(stderr, "hcasim diff: %s: no such file (want a trace file, as --trace writes, or - for standard input)\n", fs.Arg(i))
				} else {
					fmt.Fprintf(stderr, "hcasim diff: %v\n", err)
				}
				return ExitError
			}
			defer f.Close()
		}
		st, err := f.Stat()
		if err != nil {
			fmt.Fprintf(stderr, "hcasim diff: %v\n", err)
			return ExitError
		}
		if st.IsDir() {
			// A directory opens, and then reads as nothing a trace reader
			// can tell apart from a broken file.
			fmt.Fprintf(stderr, "hcasim diff: %s: is a directory (want a trace file, as --trace writes)\n", fs.Arg(i))
			return ExitError
		}
		// A pipe (hcasim diff golden.trace <(zcat run.trace.gz)) cannot be
		// read twice, as the fast path's fallback does; nor can a
		// gzip-compressed trace, read through its decompressor.
		seekable = seekable && st.Mode().IsRegular()
		files[i] = f
		r, gz, err := maybeGzip(f, st.Mode().IsRegular())
		if err != nil {
			fmt.Fprintf(stderr, "hcasim diff: %s: %v\n", fs.Arg(i), err)
			return ExitError
		}
		seekable = seekable && !gz
		readers[i] = r
	}
	if !seekable {
		return diffWhole(readers[0], readers[1], fs.Arg(0), fs.Arg(1), [2]int{}, opt, stdout, stderr)
	}
	return diffReaders(files[0], files[1], fs.Arg(0), fs.Arg(1), opt, stdout, stderr)
}

// maybeGzip returns what to read of f: its gzip stream decompressed when
// it starts with gzip's magic bytes (a golden trace kept compressed), else
// f itself. A regular file is peeked at without moving its offset; any
// other is read through a buffer. gz reports a compressed file.
func maybeGzip(f *os.File, regular bool) (r io.Reader, gz bool, err error) {
	var magic []byte
	if regular {
		var b [2]byte
		n, _ := f.ReadAt(b[:], 0)
		magic, r = b[:n], f
	} else {
		br := bufio.NewReader(f)
		magic, _ = br.Peek(2)
		r = br
	}
	if !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return r, false, nil
	}
	z, err := gzip.NewReader(r)
	if err != nil {
		return nil, true, fmt.Errorf("gzip-compressed, but %v", err)
	}
	return gzipErrors{z}, true, nil
}

// gzipErrors says that a read error of a compressed trace is the
// compression's ("unexpected EOF" of a cut .gz file, a bad checksum).
type gzipErrors struct{ z *gzip.Reader }

func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.z.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gzip-compressed, and decompressing it failed: %v", err)
	}
	return n, err
}

// diffReaders is DiffMain after the files are open: read both traces,
// compare, report, and return the exit code. Identical event lines are
// recognised while streaming (identical); otherwise both files are read
// again from the start, kept compactly (readDiffTrace).
func diffReaders(a, b io.ReadSeeker, nameA, nameB string, opt DiffOptions, stdout, stderr io.Writer) int {
	// With --fields the whole read checks each field is one the traces
	// have (absentField): identical files took the fast path, which does
	// not look at fields, and a mistyped --fields passed (exit 0) until
	// the traces first differed.
	// A --path that selects nothing goes on to the whole read too, whose
	// error names the components there are: the fast path's result holds
	// the selected streams only, and its error named none, where the docs
	// promise them.
	if res, ga, gb, ok := identical(a, b, opt); len(opt.Fields) == 0 && ok && unusedPath(opt.Paths, res) == "" {
		writeReport(stdout, &Trace{Header: ga}, &Trace{Header: gb}, res, opt)
		if res.Equivalent() {
			return ExitEquivalent
		}
		return ExitDifferent
	}
	var sizes [2]int
	for i, r := range []io.Seeker{a, b} {
		n, err := r.Seek(0, io.SeekEnd)
		if err == nil {
			sizes[i] = int(n)
			_, err = r.Seek(0, io.SeekStart)
		}
		if err != nil {
			fmt.Fprintf(stderr, "hcasim diff: %v\n", err)
			return ExitError
		}
	}
	return diffWhole(a, b, nameA, nameB, sizes, opt, stdout, stderr)
}

// diffWhole reads both traces whole, compares them, reports, and returns
// the exit code. sizes are the inputs' sizes in bytes when known, else 0.
func diffWhole(a, b io.Reader, nameA, nameB string, sizes [2]int, opt DiffOptions, stdout, stderr io.Writer) int {
	golden, err := readDiffTrace(a, sizes[0])
	if err != nil {
		fmt.Fprintf(stderr, "hcasim diff: %s: %v\n", nameA, err)
		return ExitError
	}
	neu, err := readDiffTrace(b, sizes[1])
	if err != nil {
		fmt.Fprintf(stderr, "hcasim diff: %s: %v\n", nameB, err)
		return ExitError
	}
	if f := absentField(opt.Fields, golden, neu); f != "" {
		// Comparing only a field no event has would compare nothing but
		// kinds and times, and call different traces equivalent.
		fmt.Fprintf(stderr, "hcasim diff: --fields: %q is in no event of either trace (fields present: %s)\n",
			f, strings.Join(presentFields(golden, neu), ", "))
		return ExitError
	}
	res := diffTraces(golden, neu, opt)
	if g := unusedPath(opt.Paths, res); g != "" {
		// A glob that selects nothing is a typo more often than not, and
		// with no other glob it would compare nothing.
		fmt.Fprintf(stderr, "hcasim diff: --path: %q selects no event to compare in either trace (components: %s)\n",
			g, strings.Join(pathsOf(golden, neu), ", "))
		return ExitError
	}
	writeReport(stdout, &Trace{Header: golden.Header}, &Trace{Header: neu.Header}, res, opt)
	if res.Equivalent() {
		return ExitEquivalent
	}
	return ExitDifferent
}

// unusedPath returns the first of paths that selects no compared stream of
// res (none of its events kept after --ignore-kinds, in either trace), or
// "".
func unusedPath(paths []string, res *DiffResult) string {
	for _, g := range paths {
		used := false
		for _, st := range res.Streams {
			if components.GlobMatch(g, streamPath(st.Stream)) {
				used = true
				break
			}
		}
		if !used {
			return g
		}
	}
	return ""
}

// pathsOf lists the component paths of both traces' streams, sorted, at
// most 8 and then how many more.
func pathsOf(a, b *diffTrace) []string {
	set := map[string]bool{}
	for _, t := range []*diffTrace{a, b} {
		for _, k := range t.keys {
			set[streamPath(k)] = true
		}
	}
	all := slices.Sorted(maps.Keys(set))
	if len(all) > 8 {
		all = append(all[:8], fmt.Sprintf("and %d more", len(all)-8))
	}
	return all
}

// writeReport writes res as text or, with opt.JSON, as JSON.
func writeReport(w io.Writer, golden, neu *Trace, res *DiffResult, opt DiffOptions) {
	if opt.JSON {
		_ = WriteDiffJSON(w, golden, neu, res)
		return
	}
	WriteDiffReport(w, golden, neu, res)
}

// WriteDiffReport prints res: verdict, header notes, first divergence with
// context, and the per-stream table (streams sorted by key).
func WriteDiffReport(w io.Writer, golden, neu *Trace, res *DiffResult) {
	t := res.Total
	verdict := "EQUIVALENT"
	if !res.Equivalent() {
		verdict = "DIFFERENT"
	}
	fmt.Fprintf(w, "%s: %d matched, %d missing, %d extra, %d differing in %d streams\n",
		verdict, t.Matched, t.Missing, t.Extra, t.Differing, len(res.Streams))
	for _, n := range diffNotes(golden, neu, res) {
		fmt.Fprintln(w, n)
	}
	if d := res.First; d != nil {
		fmt.Fprintf(w, "\nfirst divergence: stream %q: %s", d.Stream, d.What)
		switch d.What {
		case DivMissing:
			fmt.Fprintf(w, " (golden line %d)\n", d.Golden.Line)
		case DivExtra:
			fmt.Fprintf(w, " (new line %d)\n", d.New.Line)
		default:
			fmt.Fprintf(w, " (golden line %d, new line %d): %s\n", d.Golden.Line, d.New.Line, d.Reason)
		}
		writeContext(w, "golden", d.GoldenContext, d.Golden)
		writeContext(w, "new", d.NewContext, d.New)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tMATCHED\tMISSING\tEXTRA\tDIFFERING\t")
	for _, s := range res.Streams {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", s.Stream, s.Matched, s.Missing, s.Extra, s.Differing)
	}
	fmt.Fprintf(tw, "TOTAL\t%d\t%d\t%d\t%d\t\n", t.Matched, t.Missing, t.Extra, t.Differing)
	tw.Flush()
}

// diffNotes are the report's remarks beside the verdict: a comparison
// that matched nothing, one restricted to some components, configs or
// seeds that differ.
func diffNotes(golden, neu *Trace, res *DiffResult) []string {
	notes := []string{}
	if res.Total.Matched == 0 {
		notes = append(notes, "no event matched: a comparison that matches nothing is never equivalent")
	}
	if len(res.Paths) > 0 {
		q := make([]string, len(res.Paths))
		for i, g := range res.Paths {
			q[i] = strconv.Quote(g)
		}
		notes = append(notes, "note: compared only components matching "+strings.Join(q, ", "))
	}
	if golden.Header.Config != neu.Header.Config {
		notes = append(notes, fmt.Sprintf("note: config differs: golden %s, new %s", golden.Header.Config, neu.Header.Config))
	}
	if golden.Header.Seed != neu.Header.Seed {
		notes = append(notes, fmt.Sprintf("note: seed differs: golden %d, new %d", golden.Header.Seed, neu.Header.Seed))
	}
	return notes
}

// writeContext prints the context events of one side; the divergent event
// itself, when this side has it, is marked with '>'.
func writeContext(w io.Writer, side string, ctx []Event, at *Event) {
	fmt.Fprintf(w, "  %s:\n", side)
	if len(ctx) == 0 {
		fmt.Fprintln(w, "      (no events)")
	}
	for i := range ctx {
		mark := " "
		if at != nil && ctx[i].Line == at.Line {
			mark = ">"
		}
		fmt.Fprintf(w, "  %s %5d: %s\n", mark, ctx[i].Line, FormatEvent(&ctx[i].TraceEvent))
	}
}

// absentField returns the first of fields that no event of either trace
// carries, or "".
func absentField(fields []string, traces ...*diffTrace) string {
	if len(fields) == 0 {
		return ""
	}
	present := map[string]bool{}
	for _, k := range presentFields(traces...) {
		present[k] = true
	}
	for _, f := range fields {
		if !present[f] {
			return f
		}
	}
	return ""
}

// presentFields returns the field keys the traces' events carry, sorted.
func presentFields(traces ...*diffTrace) []string {
	seen := map[string]bool{}
	for _, t := range traces {
		for _, k := range t.fields {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
