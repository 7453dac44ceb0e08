package verif

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
)

// Filter selects which events a Recorder writes. An empty list selects all.
type Filter struct {
	// Paths are component-path globs: '*' matches any run of characters
	// (dots included), '?' one character, everything else itself — so
	// "Fabric.Leaf[2].Port[5]" is a literal name, and "Fabric.Leaf[2].*"
	// selects every block under that switch.
	Paths []string
	// Kinds are the event kinds to keep.
	Kinds []components.TraceKind
}

// ParseFilter builds a Filter from comma-separated lists, as the CLI's
// --trace-path and --trace-kind flags give them. An error names the bad
// kind; the caller adds the flag's name.
func ParseFilter(paths, kinds string) (Filter, error) {
	f := Filter{Paths: splitList(paths)}
	ks, err := parseKinds(kinds)
	if err != nil {
		return Filter{}, err
	}
	f.Kinds = ks
	return f, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseKinds parses a comma-separated kind list. The error names the bad
// kind and the allowed ones; the caller prefixes the flag or key.
func parseKinds(s string) ([]components.TraceKind, error) {
	var ks []components.TraceKind
	for _, name := range splitList(s) {
		k, ok := components.ParseTraceKind(name)
		if !ok {
			var all []string
			for _, k := range components.TraceKinds() {
				all = append(all, k.String())
			}
			return nil, fmt.Errorf("%q is not an event kind (allowed: %s)", name, strings.Join(all, ", "))
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// GlobCanMatch reports whether a --trace-path glob can match some
// component name. Names are in Akita form (STYLE.md; fabric.ValidName
// enforces it): dot-separated parts, each a capital letter then letters or
// digits, with an optional [index]. A glob no such name matches ("[",
// "fabric.host*", "Fabric.Leaf[2") is a mistake to refuse before a run,
// not an empty trace to find after it.
func GlobCanMatch(glob string) bool {
	// The states of a name being read: at a part's start, in its
	// letters, after '[', in the index's digits, after ']'.
	const (
		partStart = iota
		letters
		open
		digits
		closed
		nStates
	)
	step := func(st int, c byte) (int, bool) {
		upper, digit := c >= 'A' && c <= 'Z', c >= '0' && c <= '9'
		alnum := upper || digit || c >= 'a' && c <= 'z'
		switch {
		case st == partStart && upper, st == letters && alnum:
			return letters, true
		case (st == letters || st == closed) && c == '.':
			return partStart, true
		case st == letters && c == '[':
			return open, true
		case (st == open || st == digits) && digit:
			return digits, true
		case st == digits && c == ']':
			return closed, true
		}
		return 0, false
	}
	// advance is the states a name can be in after one more character,
	// any of chars.
	advance := func(from [nStates]bool, chars ...byte) (to [nStates]bool) {
		for st, on := range from {
			for _, c := range chars {
				if n, ok := step(st, c); on && ok {
					to[n] = true
				}
			}
		}
		return to
	}
	// One character of each class stands for all of it under '*' and '?'.
	anyChar := []byte{'A', 'a', '0', '.', '[', ']'}
	var cur [nStates]bool // the states the glob so far can leave a name in
	cur[partStart] = true
	for i := 0; i < len(glob); i++ {
		switch glob[i] {
		case '*': // any run of characters, the empty one too
			for {
				next := cur
				for st, on := range advance(cur, anyChar...) {
					next[st] = next[st] || on
				}
				if next == cur {
					break
				}
				cur = next
			}
		case '?':
			cur = advance(cur, anyChar...)
		default:
			cur = advance(cur, glob[i])
		}
	}
	return cur[letters] || cur[closed]
}

// Recorder is a sim.Hook that writes the trace of the events announced at
// components.HookPosTrace. Attach it to every component to trace (see
// AttachHook), and Flush it when the run ends. Output is deterministic: the
// same events in the same order give the same bytes.
type Recorder struct {
	w       *bufio.Writer
	filter  Filter
	kindOn  [32]bool // by TraceKind; all true when the filter has no kinds
	paths   pathSelector
	line    []byte
	scratch []components.TraceField
	count   int
	err     error
}

// NewRecorder returns a recorder that writes h and then one line per
// selected event to w.
func NewRecorder(w io.Writer, h Header, f Filter) *Recorder {
	r := &Recorder{w: bufio.NewWriterSize(w, 256*1024), filter: f, paths: newPathSelector(f.Paths)}
	for i := range r.kindOn {
		r.kindOn[i] = len(f.Kinds) == 0
	}
	for _, k := range f.Kinds {
		r.kindOn[k] = true
	}
	if h.Version == "" {
		h.Version = TraceVersion
	}
	_, r.err = r.w.WriteString(h.String() + "\n")
	return r
}

// Func implements sim.Hook: it records the *components.TraceEvent of a
// HookPosTrace call and ignores every other hook position.
func (r *Recorder) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev, ok := ctx.Item.(*components.TraceEvent)
	if !ok {
		panic(fmt.Sprintf("verif: HookPosTrace item is %T, want *components.TraceEvent", ctx.Item))
	}
	r.Record(ev)
}

// Record writes ev if the filter selects it.
func (r *Recorder) Record(ev *components.TraceEvent) {
	if r.err != nil || int(ev.Kind) >= len(r.kindOn) || !r.kindOn[ev.Kind] || !r.paths.selected(ev.Path) {
		return
	}
	r.line, r.scratch = AppendEventLine(r.line[:0], ev, r.scratch)
	r.line = append(r.line, '\n')
	_, r.err = r.w.Write(r.line)
	r.count++
}

// pathSelector answers whether a component path matches any of a list of
// globs, remembering the answer per path (paths are few and fixed).
type pathSelector struct {
	globs []string
	cache map[string]bool
}

func newPathSelector(globs []string) pathSelector {
	return pathSelector{globs: globs, cache: map[string]bool{}}
}

func (p *pathSelector) selected(path string) bool {
	on, ok := p.cache[path]
	if !ok {
		on = Filter{Paths: p.globs}.SelectsPath(path)
		p.cache[path] = on
	}
	return on
}

// SelectsPath reports whether the filter's path globs select a component
// of that name (every name when there are none).
func (f Filter) SelectsPath(path string) bool {
	if len(f.Paths) == 0 {
		return true
	}
	for _, g := range f.Paths {
		if components.GlobMatch(g, path) {
			return true
		}
	}
	return false
}

// Count returns how many events were written.
func (r *Recorder) Count() int { return r.count }

// Flush writes buffered lines and returns the first write error, if any.
func (r *Recorder) Flush() error {
	if r.err != nil {
		return r.err
	}
	return r.w.Flush()
}

// AttachHook attaches h to every target (each component that announces
// trace events). The lead's simulation builder passes its component list.
func AttachHook(h sim.Hook, targets ...sim.Hookable) {
	for _, t := range targets {
		t.AcceptHook(h)
	}
}
