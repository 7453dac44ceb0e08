package verif

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// DiffOptions tune what counts as the same event, and how hcasim diff
// writes its report.
type DiffOptions struct {
	// TolerancePS is how far apart, in picoseconds, two events' times may be
	// and still match. 0 demands the same picosecond.
	TolerancePS int64
	// Fields, when not empty, are the only fields compared; otherwise all are.
	// Kind is always compared; the path is part of the stream key.
	Fields []string
	// IgnoreKinds are dropped from both traces before comparing.
	IgnoreKinds []components.TraceKind
	// Paths, when not empty, are globs (components.GlobMatch): only events
	// of a component whose path matches one are compared, as --trace-path
	// selects what a run records.
	Paths []string
	// Context is how many events before the first divergence to show per side.
	Context int
	// JSON: hcasim diff writes its report as JSON (WriteDiffJSON).
	JSON bool
}

// Mismatch kinds of a Divergence.
const (
	DivMissing   = "missing"   // in GOLDEN, not in NEW
	DivExtra     = "extra"     // in NEW, not in GOLDEN
	DivDiffering = "differing" // the same position in the stream, unequal
)

// StreamCounts are the per-stream results of a diff.
type StreamCounts struct {
	Stream    string // components.TraceEvent.StreamKey
	Matched   int
	Missing   int
	Extra     int
	Differing int
}

// Divergence is one mismatch. Golden or New is nil for an extra or a missing
// event. GoldenContext and NewContext are the events just before it in each
// file (all streams, file order).
type Divergence struct {
	Stream        string
	What          string // DivMissing, DivExtra or DivDiffering
	Reason        string // for DivDiffering, the first difference
	Golden, New   *Event
	GoldenContext []Event
	NewContext    []Event
}

// DiffResult is the outcome of Diff.
type DiffResult struct {
	Streams []StreamCounts // sorted by Stream
	Total   StreamCounts   // sums; Stream is empty
	First   *Divergence    // earliest mismatch in time; nil when none
	// Paths are the globs the comparison was restricted to
	// (DiffOptions.Paths); empty when every component was compared.
	Paths []string
}

// Equivalent reports whether the traces match: no missing, extra or
// differing event, and at least one matched event (nothing matched is never
// "equal").
func (r *DiffResult) Equivalent() bool {
	t := r.Total
	return t.Matched > 0 && t.Missing == 0 && t.Extra == 0 && t.Differing == 0
}

// maxEditDistance bounds the alignment work per stream. Past it the rest of
// the stream is paired position by position (each pair matched or
// differing, the longer tail missing or extra).
const maxEditDistance = 1000

// Diff compares two traces stream by stream. Within a stream, events are
// aligned in file order — except that events at the same picosecond are
// taken in a canonical order (their text), since the engine's tie order is
// not the model's behaviour — by a shortest edit script (Myers), so one
// missing or extra event shows as exactly that and not as a cascade of
// differences; runs of unaligned events are paired position by position as
// differing, and the surplus is missing or extra.
func Diff(golden, neu *Trace, opt DiffOptions) *DiffResult {
	return diffTraces(parsedDiffTrace(golden), parsedDiffTrace(neu), opt)
}

// candidate is a mismatch that may be the first divergence: which events,
// and where each side's context is anchored (file event indexes).
type candidate struct {
	key           string
	what          string
	g, n          int // the events (file indexes), -1 for the side without
	gAnchor, nAnc int
	time          ib.PS
}

// diffTraces is Diff on traces kept as diffTrace.
func diffTraces(golden, neu *diffTrace, opt DiffOptions) *DiffResult {
	ignore := map[components.TraceKind]bool{}
	for _, k := range opt.IgnoreKinds {
		ignore[k] = true
	}
	gs := golden.split(ignore, opt.Paths)
	ns := neu.split(ignore, opt.Paths)
	keys := make([]string, 0, len(gs)+len(ns))
	for k := range gs {
		keys = append(keys, k)
	}
	for k := range ns {
		if _, ok := gs[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)

	cmp := comparer{opt: opt}
	if len(opt.Fields) > 0 {
		cmp.fields = map[string]bool{}
		for _, f := range opt.Fields {
			cmp.fields[f] = true
		}
	}
	res := &DiffResult{Paths: opt.Paths}
	var first *candidate
	for _, key := range keys {
		g, n := gs[key], ns[key]
		c := StreamCounts{Stream: key}
		gNext, nNext := 0, 0 // stream positions after the ops so far
		eq := func(i, j int) bool { return cmp.same(golden, g[i], neu, n[j]) }
		ops := pairTies(cmp.align(len(g), len(n), eq), eq,
			func(i int) tieKey { return tieKey{golden.ev[g[i]].time, golden.ev[g[i]].kind} },
			func(j int) tieKey { return tieKey{neu.ev[n[j]].time, neu.ev[n[j]].kind} })
		for _, op := range ops {
			gi, nj := op.i, op.j
			if gi < 0 {
				gi = gNext
			} else {
				gNext = gi + 1
			}
			if nj < 0 {
				nj = nNext
			} else {
				nNext = nj + 1
			}
			d := candidate{g: -1, n: -1}
			switch op.what {
			case opMatch:
				c.Matched++
				continue
			case opMissing:
				c.Missing++
				d.what, d.g = DivMissing, int(g[op.i])
			case opExtra:
				c.Extra++
				d.what, d.n = DivExtra, int(n[op.j])
			case opDiffer:
				c.Differing++
				d.what, d.g, d.n = DivDiffering, int(g[op.i]), int(n[op.j])
			}
			if d.g >= 0 {
				d.time = golden.ev[d.g].time
			} else {
				d.time = neu.ev[d.n].time
			}
			if first == nil || d.time < first.time {
				d.key = key
				// Anchor each side at the event itself or, for the side
				// that lacks it, where it would have been in that file.
				d.gAnchor = anchor(g, gi, len(golden.ev))
				d.nAnc = anchor(n, nj, len(neu.ev))
				first = &d
			}
		}
		res.Streams = append(res.Streams, c)
		res.Total.Matched += c.Matched
		res.Total.Missing += c.Missing
		res.Total.Extra += c.Extra
		res.Total.Differing += c.Differing
	}
	if first != nil {
		res.First = first.divergence(golden, neu, &cmp, opt.Context)
	}
	return res
}

// selected reports whether events of a component at path are compared:
// paths is empty, or one of its globs matches.
func selected(paths []string, path string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, g := range paths {
		if components.GlobMatch(g, path) {
			return true
		}
	}
	return false
}

// streamPath returns the component path a stream key starts with
// (TraceEvent.StreamKey: the path, then a space and the stream's field,
// if any; a path has no spaces).
func streamPath(key string) string {
	if i := strings.IndexByte(key, ' '); i >= 0 {
		return key[:i]
	}
	return key
}

// divergence reports the candidate: its events and their contexts whole.
func (d *candidate) divergence(golden, neu *diffTrace, cmp *comparer, n int) *Divergence {
	out := &Divergence{Stream: d.key, What: d.what,
		GoldenContext: context(golden, d.gAnchor, n),
		NewContext:    context(neu, d.nAnc, n)}
	if d.g >= 0 {
		e := golden.event(d.g)
		out.Golden = &e
	}
	if d.n >= 0 {
		e := neu.event(d.n)
		out.New = &e
	}
	if d.what == DivDiffering {
		out.Reason = cmp.reason(out.Golden, out.New)
	}
	return out
}

// anchor returns the file index of stream position pos, or where position
// pos would be (just after the previous stream event) when the stream has
// fewer events.
func anchor(stream []int32, pos, fileLen int) int {
	switch {
	case pos < len(stream):
		return int(stream[pos])
	case len(stream) == 0:
		return fileLen
	default:
		return int(stream[len(stream)-1]) + 1
	}
}

// context returns up to n events before file index at, and the event at it.
func context(t *diffTrace, at, n int) []Event {
	lo := at - n
	if lo < 0 {
		lo = 0
	}
	hi := at + 1
	if hi > len(t.ev) {
		hi = len(t.ev)
	}
	out := make([]Event, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, t.event(i))
	}
	return out
}

type comparer struct {
	opt    DiffOptions
	fields map[string]bool // nil: all fields

	ea, eb components.TraceEvent // parse scratch, one per side
	trace  []int                 // myers' saved rounds, reused across streams
}

// same reports whether event i of golden matches event j of neu. Lines
// whose fields are the same text match when kind and time do; others are
// parsed (into scratch) and compared field by field, since the same fields
// may be written in another order or a string quoted where it need not be.
func (c *comparer) same(golden *diffTrace, i int32, neu *diffTrace, j int32) bool {
	a, b := &golden.ev[i], &neu.ev[j]
	if a.kind != b.kind {
		return false
	}
	if dt := int64(b.time - a.time); dt > c.opt.TolerancePS || -dt > c.opt.TolerancePS {
		return false
	}
	if golden.fieldsText(i) == neu.fieldsText(j) {
		return true
	}
	m := c.mismatch(golden.parse(i, &c.ea), neu.parse(j, &c.eb))
	return m.what == mismatchNone
}

// What a mismatch is about.
const (
	mismatchNone = iota
	mismatchKind
	mismatchTime
	mismatchNewAbsent    // a field golden has, new lacks
	mismatchValue        // a field both have, with different values
	mismatchGoldenAbsent // a field new has, golden lacks
)

// mismatch is the first difference between two events: what, and the
// fields concerned (golden's f, new's g).
type mismatch struct {
	what int
	f, g components.TraceField
}

// mismatch returns the first difference between a and b. Fields are
// compared by key, in golden's order then new-only keys, so the first
// difference is deterministic.
func (c *comparer) mismatch(a, b *components.TraceEvent) mismatch {
	if a.Kind != b.Kind {
		return mismatch{what: mismatchKind}
	}
	if dt := int64(b.Time - a.Time); dt > c.opt.TolerancePS || -dt > c.opt.TolerancePS {
		return mismatch{what: mismatchTime}
	}
	for _, f := range a.Fields {
		if c.fields != nil && !c.fields[f.Key] {
			continue
		}
		g, ok := b.Field(f.Key)
		if !ok {
			return mismatch{what: mismatchNewAbsent, f: f}
		}
		if g != f {
			return mismatch{what: mismatchValue, f: f, g: g}
		}
	}
	for _, g := range b.Fields {
		if c.fields != nil && !c.fields[g.Key] {
			continue
		}
		if _, ok := a.Field(g.Key); !ok {
			return mismatch{what: mismatchGoldenAbsent, g: g}
		}
	}
	return mismatch{}
}

// reason returns why a and b differ, or "" when they match.
func (c *comparer) reason(a, b *Event) string {
	m := c.mismatch(&a.TraceEvent, &b.TraceEvent)
	switch m.what {
	case mismatchKind:
		return fmt.Sprintf("kind: golden %s, new %s", a.Kind, b.Kind)
	case mismatchTime:
		dt := int64(b.Time - a.Time)
		return fmt.Sprintf("time: golden %d ps, new %d ps (shift %+d ps, tolerance %d ps)", a.Time, b.Time, dt, c.opt.TolerancePS)
	case mismatchNewAbsent:
		return fmt.Sprintf("field %s: golden %s, new absent", m.f.Key, fieldValue(m.f))
	case mismatchValue:
		return fmt.Sprintf("field %s: golden %s, new %s", m.f.Key, fieldValue(m.f), fieldValue(m.g))
	case mismatchGoldenAbsent:
		return fmt.Sprintf("field %s: golden absent, new %s", m.g.Key, fieldValue(m.g))
	}
	return ""
}

func fieldValue(f components.TraceField) string {
	if f.IsStr {
		if needsQuote(f.Str) {
			return fmt.Sprintf("%q", f.Str)
		}
		return f.Str
	}
	return fmt.Sprint(f.Int)
}

type opKind uint8

const (
	opMatch opKind = iota
	opMissing
	opExtra
	opDiffer
)

type alignOp struct {
	what opKind
	i, j int // positions in golden and new streams (unused side: -1)
}

// align returns the operations that turn sequence a (len n) into b (len m),
// with eq(i, j) telling whether a[i] matches b[j].
func (c *comparer) align(n, m int, eq func(i, j int) bool) []alignOp {
	ops := make([]alignOp, 0, max(n, m))
	// Common prefix and suffix first: the usual case is nearly equal streams.
	pre := 0
	for pre < n && pre < m && eq(pre, pre) {
		ops = append(ops, alignOp{opMatch, pre, pre})
		pre++
	}
	suf := 0
	for suf < n-pre && suf < m-pre && eq(n-1-suf, m-1-suf) {
		suf++
	}
	mid := c.myers(n-pre-suf, m-pre-suf, func(i, j int) bool { return eq(pre+i, pre+j) })
	if mid == nil {
		mid = positional(n-pre-suf, m-pre-suf, func(i, j int) bool { return eq(pre+i, pre+j) })
	}
	for _, op := range mid {
		if op.i >= 0 {
			op.i += pre
		}
		if op.j >= 0 {
			op.j += pre
		}
		ops = append(ops, op)
	}
	for k := suf; k > 0; k-- {
		ops = append(ops, alignOp{opMatch, n - k, m - k})
	}
	return ops
}

// tieKey is what puts two events in one tie run of a stream: the same
// picosecond, and the same kind (a run's canonical order, the events'
// text, sorts by kind first within one path).
type tieKey struct {
	time ib.PS
	kind components.TraceKind
}

// pairTies pairs each missing event with the first extra event of the
// same stream at the same picosecond and of the same kind, as one
// differing event in the missing one's place. A field changed on an event
// among others of its picosecond (a burst of dma_read at one time, each
// its own psn) moves it within the tie run's canonical order, so the
// alignment finds a deletion and an insertion apart rather than side by
// side, and the report said "missing" with no reason where the event
// differs in one field; paired, the first divergence names the field and
// both values. A missing event with no such partner stays missing, and
// so does one whose partner equals it (eq): the same event met at another
// place in its stream is a reordering (a stream whose times go back), not
// a changed field.
func pairTies(ops []alignOp, eq func(i, j int) bool, goldenKey, newKey func(int) tieKey) []alignOp {
	var extras map[tieKey][]int // op indexes of extra events, in order
	for k, op := range ops {
		if op.what == opExtra {
			if extras == nil {
				extras = map[tieKey][]int{}
			}
			key := newKey(op.j)
			extras[key] = append(extras[key], k)
		}
	}
	if extras == nil {
		return ops
	}
	var taken []bool // extra ops paired with a missing one
	for k := range ops {
		if ops[k].what != opMissing {
			continue
		}
		key := goldenKey(ops[k].i)
		q := extras[key]
		at := -1
		for x, e := range q {
			if !eq(ops[k].i, ops[e].j) {
				at = x
				break
			}
		}
		if at < 0 {
			continue
		}
		e := q[at]
		extras[key] = append(q[:at:at], q[at+1:]...)
		ops[k] = alignOp{opDiffer, ops[k].i, ops[e].j}
		if taken == nil {
			taken = make([]bool, len(ops))
		}
		taken[e] = true
	}
	if taken == nil {
		return ops
	}
	out := ops[:0]
	for k, op := range ops {
		if !taken[k] {
			out = append(out, op)
		}
	}
	return out
}

// positional pairs a[k] with b[k]; the longer tail is missing or extra.
func positional(n, m int, eq func(i, j int) bool) []alignOp {
	var ops []alignOp
	for k := 0; k < n || k < m; k++ {
		switch {
		case k < n && k < m && eq(k, k):
			ops = append(ops, alignOp{opMatch, k, k})
		case k < n && k < m:
			ops = append(ops, alignOp{opDiffer, k, k})
		case k < n:
			ops = append(ops, alignOp{opMissing, k, -1})
		default:
			ops = append(ops, alignOp{opExtra, -1, k})
		}
	}
	return ops
}

// myers computes a shortest edit script (E. Myers, "An O(ND) difference
// algorithm", 1986) and turns it into ops, pairing each run of deletions
// with the insertions beside it as differing events. It returns nil when the
// edit distance exceeds maxEditDistance.
func (c *comparer) myers(n, m int, eq func(i, j int) bool) []alignOp {
	if n == 0 && m == 0 {
		return []alignOp{}
	}
	maxD := n + m
	if maxD > maxEditDistance {
		maxD = maxEditDistance
	}
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	// Round d's V before the round, only diagonals -d-1..d+1 (the ones
	// round d reads), is saved at c.trace[d*(d+2):] (2d+3 values after
	// rounds 0..d-1's), so memory is O(D²) in the edit distance D and is
	// reused by the next stream.
	trace := c.trace[:0]
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		trace = append(trace, v[off-d-1:off+d+2]...)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: insertion
			} else {
				x = v[off+k-1] + 1 // right: deletion
			}
			y := x - k
			for x < n && y < m && eq(x, y) {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	c.trace = trace
	if found < 0 {
		return nil
	}
	// Backtrack into a list of edits (reverse order).
	type edit struct {
		what opKind
		i, j int
	}
	var rev []edit
	x, y := n, m
	for d := found; d > 0; d-- {
		vd, base := trace[d*(d+2):], d+1 // vd[base+k] is V[k] before round d
		k := x - y
		var prevK int
		if k == -d || (k != d && vd[base+k-1] < vd[base+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := vd[base+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, edit{opMatch, x, y})
		}
		if x == prevX {
			y--
			rev = append(rev, edit{opExtra, -1, y})
		} else {
			x--
			rev = append(rev, edit{opMissing, x, -1})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{opMatch, x, y})
	}
	// Forward order; pair runs of missing with runs of extra as differing.
	var ops []alignOp
	for k := len(rev) - 1; k >= 0; {
		if rev[k].what == opMatch {
			ops = append(ops, alignOp{opMatch, rev[k].i, rev[k].j})
			k--
			continue
		}
		var miss, extra []int
		for ; k >= 0 && rev[k].what != opMatch; k-- {
			if rev[k].what == opMissing {
				miss = append(miss, rev[k].i)
			} else {
				extra = append(extra, rev[k].j)
			}
		}
		p := min(len(miss), len(extra))
		for q := 0; q < p; q++ {
			ops = append(ops, alignOp{opDiffer, miss[q], extra[q]})
		}
		for _, i := range miss[p:] {
			ops = append(ops, alignOp{opMissing, i, -1})
		}
		for _, j := range extra[p:] {
			ops = append(ops, alignOp{opExtra, -1, j})
		}
	}
	return ops
}
