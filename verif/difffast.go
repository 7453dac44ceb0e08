package verif

import (
	"bufio"
	"bytes"
	"io"
	"sort"

	"github.com/hcasim/hcasim/components"
)

// identical is the diff's fast path: when the two files' event lines are
// the same byte for byte (headers may differ: config and seed are only
// notes), the traces are equivalent under any options, and the result — each
// stream's events all matched — is built while reading, line by line, in
// memory that does not grow with the files. A verification flow mostly
// diffs a run against its golden trace and finds them identical. ok is
// false as soon as a line differs, fails to parse or lacks its newline, or
// one file is longer: the caller then reads both whole (readDiffTrace,
// about their size in memory), which reports the divergence or the bad
// line.
func identical(a, b io.Reader, opt DiffOptions) (res *DiffResult, ga, gb Header, ok bool) {
	sa, cutA := newLineScanner(a)
	sb, cutB := newLineScanner(b)
	var err error
	for i, s := range []*bufio.Scanner{sa, sb} {
		if !s.Scan() || cutA.unterminated || cutB.unterminated {
			return nil, ga, gb, false
		}
		h, herr := parseHeader(s.Text())
		if herr != nil {
			return nil, ga, gb, false
		}
		if i == 0 {
			ga = h
		} else {
			gb = h
		}
	}
	ignore := map[components.TraceKind]bool{}
	for _, k := range opt.IgnoreKinds {
		ignore[k] = true
	}
	counts := map[string]int{}
	for {
		moreA, moreB := sa.Scan(), sb.Scan()
		if moreA != moreB {
			return nil, ga, gb, false // one file is longer
		}
		if !moreA {
			break
		}
		if cutA.unterminated || cutB.unterminated {
			return nil, ga, gb, false // a truncated line: ReadTrace reports it
		}
		la, lb := sa.Bytes(), sb.Bytes()
		if !bytes.Equal(la, lb) {
			return nil, ga, gb, false
		}
		if len(la) == 0 || la[0] == '#' {
			continue
		}
		var ev components.TraceEvent
		if ev, err = ParseEventLine(string(la)); err != nil {
			return nil, ga, gb, false
		}
		if !ignore[ev.Kind] && selected(opt.Paths, ev.Path) {
			counts[ev.StreamKey()]++
		}
	}
	if sa.Err() != nil || sb.Err() != nil {
		return nil, ga, gb, false
	}
	res = &DiffResult{Paths: opt.Paths}
	for k, n := range counts {
		res.Streams = append(res.Streams, StreamCounts{Stream: k, Matched: n})
		res.Total.Matched += n
	}
	sort.Slice(res.Streams, func(i, j int) bool { return res.Streams[i].Stream < res.Streams[j].Stream })
	return res, ga, gb, true
}
