package verif

// The diff as it was before it kept traces compactly (difftrace.go): whole
// parsed traces, every comparison through reason. TestDiffMatchesReference
// checks that the diff gives exactly its results.

import (
	"sort"

	"github.com/hcasim/hcasim/components"
)

func (c *comparer) refEqual(a, b *Event) bool { return c.reason(a, b) == "" }

func diffReference(golden, neu *Trace, opt DiffOptions) *DiffResult {
	ignore := map[components.TraceKind]bool{}
	for _, k := range opt.IgnoreKinds {
		ignore[k] = true
	}
	gs := refSplitStreams(golden, ignore)
	ns := refSplitStreams(neu, ignore)
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
	res := &DiffResult{}
	var first *Divergence
	var firstTime int64
	for _, key := range keys {
		g, n := gs[key], ns[key]
		c := StreamCounts{Stream: key}
		gNext, nNext := 0, 0 // stream positions after the ops so far
		eq := func(i, j int) bool { return cmp.refEqual(&golden.Events[g[i]], &neu.Events[n[j]]) }
		ops := pairTies(refAlign(len(g), len(n), eq), eq,
			func(i int) tieKey { return tieKey{golden.Events[g[i]].Time, golden.Events[g[i]].Kind} },
			func(j int) tieKey { return tieKey{neu.Events[n[j]].Time, neu.Events[n[j]].Kind} })
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
			var d *Divergence
			switch op.what {
			case opMatch:
				c.Matched++
				continue
			case opMissing:
				c.Missing++
				d = &Divergence{What: DivMissing, Golden: &golden.Events[g[op.i]]}
			case opExtra:
				c.Extra++
				d = &Divergence{What: DivExtra, New: &neu.Events[n[op.j]]}
			case opDiffer:
				c.Differing++
				ge, ne := &golden.Events[g[op.i]], &neu.Events[n[op.j]]
				d = &Divergence{What: DivDiffering, Golden: ge, New: ne, Reason: cmp.reason(ge, ne)}
			}
			t := d.refTime()
			if first == nil || t < firstTime {
				d.Stream = key
				// Anchor each side at the event itself or, for the side
				// that lacks it, where it would have been in that file.
				d.GoldenContext = refContext(golden, refAnchor(g, gi, len(golden.Events)), opt.Context)
				d.NewContext = refContext(neu, refAnchor(n, nj, len(neu.Events)), opt.Context)
				first, firstTime = d, t
			}
		}
		res.Streams = append(res.Streams, c)
		res.Total.Matched += c.Matched
		res.Total.Missing += c.Missing
		res.Total.Extra += c.Extra
		res.Total.Differing += c.Differing
	}
	res.First = first
	return res
}

func (d *Divergence) refTime() int64 {
	if d.Golden != nil {
		return int64(d.Golden.Time)
	}
	return int64(d.New.Time)
}

// refSplitStreams returns, per stream key, the indices of its events in file order.
func refSplitStreams(t *Trace, ignore map[components.TraceKind]bool) map[string][]int {
	m := map[string][]int{}
	for i := range t.Events {
		e := &t.Events[i]
		if ignore[e.Kind] {
			continue
		}
		k := e.StreamKey()
		m[k] = append(m[k], i)
	}
	for _, idx := range m {
		refCanonicalTies(t, idx)
	}
	return m
}

// refCanonicalTies orders each run of same-picosecond events of a stream by
// their text. Two events at the same picosecond are simultaneous in the
// model; which one the engine ran first is its tie order, not the model's
// behaviour, so a diff must not depend on it.
func refCanonicalTies(t *Trace, idx []int) {
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && t.Events[idx[hi]].Time == t.Events[idx[lo]].Time {
			hi++
		}
		if hi-lo > 1 {
			run := idx[lo:hi]
			keys := make(map[int]string, len(run))
			for _, i := range run {
				keys[i] = FormatEvent(&t.Events[i].TraceEvent)
			}
			sort.SliceStable(run, func(a, b int) bool { return keys[run[a]] < keys[run[b]] })
		}
		lo = hi
	}
}

// anchor returns the file index of stream position pos, or where position
// pos would be (just after the previous stream event) when the stream has
// fewer events.
func refAnchor(stream []int, pos, fileLen int) int {
	switch {
	case pos < len(stream):
		return stream[pos]
	case len(stream) == 0:
		return fileLen
	default:
		return stream[len(stream)-1] + 1
	}
}

// context returns up to n events before file index at, and the event at it.
func refContext(t *Trace, at, n int) []Event {
	lo := at - n
	if lo < 0 {
		lo = 0
	}
	hi := at + 1
	if hi > len(t.Events) {
		hi = len(t.Events)
	}
	return t.Events[lo:hi]
}

// align returns the operations that turn sequence a (len n) into b (len m),
// with eq(i, j) telling whether a[i] matches b[j].
func refAlign(n, m int, eq func(i, j int) bool) []alignOp {
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
	mid := refMyers(n-pre-suf, m-pre-suf, func(i, j int) bool { return eq(pre+i, pre+j) })
	if mid == nil {
		mid = refPositional(n-pre-suf, m-pre-suf, func(i, j int) bool { return eq(pre+i, pre+j) })
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

// positional pairs a[k] with b[k]; the longer tail is missing or extra.
func refPositional(n, m int, eq func(i, j int) bool) []alignOp {
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
func refMyers(n, m int, eq func(i, j int) bool) []alignOp {
	if n == 0 && m == 0 {
		return []alignOp{}
	}
	maxD := n + m
	if maxD > maxEditDistance {
		maxD = maxEditDistance
	}
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	// trace[d] keeps V before round d, only diagonals -d-1..d+1 (the ones
	// round d reads), so memory is O(D²) in the edit distance D.
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
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
		vd, base := trace[d], d+1 // vd[base+k] is V[k] before round d
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
