package verif

import (
	"io"
	"sort"
	"strings"
	"unsafe"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// diffTrace is a trace as the diff keeps it: every event line's text, back
// to back in one string, and per event where its line is and what the
// alignment needs (time, kind, stream). Events are parsed again only when
// two lines' texts differ, and whole only for the report. Read whole into
// Events, a trace takes ten or more times its size (two different traces of
// 167 MB took 4 GB); kept this way, about its size and 40 bytes per event.
type diffTrace struct {
	Header Header
	text   string
	ev     []diffEvent
	// events, when the trace came parsed (Diff): its events, which the
	// report shows as they are. nil when read from a file.
	events  []Event
	keys    []string  // stream id → StreamKey
	streams [][]int32 // stream id → its events, in file order
	fields  []string  // the field keys any event carries, sorted
}

// diffEvent is one event of a diffTrace.
type diffEvent struct {
	off    int   // its line is text[off : off+n]
	n      int32 // line length
	fo     int32 // where its fields start in the line (the space before the first), or n
	line   int   // 1-based line number in its file
	time   ib.PS
	stream int32
	kind   components.TraceKind
	// odd: the line is not as the writer writes it (fields in another
	// order, a string quoted that need not be), so its canonical text is
	// not the line's.
	odd bool
}

// diffBuilder collects a diffTrace's lines and events.
type diffBuilder struct {
	t       *diffTrace
	buf     []byte
	ids     map[string]int32
	fields  map[string]bool
	key     []byte
	scratch []components.TraceField
	canon   []byte                  // the writer's text of the line being read
	sorted  []components.TraceField // AppendEventLine's scratch
}

func newDiffBuilder(sizeHint int) *diffBuilder {
	return &diffBuilder{
		t:       &diffTrace{},
		buf:     make([]byte, 0, max(sizeHint, 0)),
		ids:     map[string]int32{},
		fields:  map[string]bool{},
		scratch: make([]components.TraceField, 0, 32),
	}
}

// add records the event ev, whose line (in b.buf) starts at off; odd says
// the line is not as the writer writes it.
func (b *diffBuilder) add(off, lineNo int, ev *components.TraceEvent, odd bool) {
	line := b.buf[off:]
	fo := len(line)
	for i, sp := 0, 0; i < len(line); i++ {
		if line[i] == ' ' {
			if sp++; sp == 3 {
				fo = i
				break
			}
		}
	}
	b.key = ev.AppendStreamKey(b.key[:0])
	id, ok := b.ids[string(b.key)]
	if !ok {
		id = int32(len(b.t.keys))
		k := string(b.key)
		b.ids[k] = id
		b.t.keys = append(b.t.keys, k)
		b.t.streams = append(b.t.streams, nil)
	}
	b.t.streams[id] = append(b.t.streams[id], int32(len(b.t.ev)))
	for i := range ev.Fields {
		if k := ev.Fields[i].Key; !b.fields[k] {
			b.fields[strings.Clone(k)] = true
		}
	}
	b.t.ev = append(b.t.ev, diffEvent{
		off: off, n: int32(len(line)), fo: int32(fo), line: lineNo,
		time: ev.Time, stream: id, kind: ev.Kind, odd: odd,
	})
}

// done returns the trace. The text is the builder's buffer seen as a
// string without a copy; nothing writes the buffer afterwards.
func (b *diffBuilder) done() *diffTrace {
	if len(b.buf) > 0 {
		b.t.text = unsafe.String(unsafe.SliceData(b.buf), len(b.buf))
	}
	for k := range b.fields {
		b.t.fields = append(b.t.fields, k)
	}
	sort.Strings(b.t.fields)
	return b.t
}

// readDiffTrace reads a trace for the diff, checking every line as
// ReadTrace does (the same errors). sizeHint, the file's size when known,
// sizes the text buffer at once.
func readDiffTrace(r io.Reader, sizeHint int) (*diffTrace, error) {
	b := newDiffBuilder(sizeHint)
	err := scanTrace(r, func(h Header) { b.t.Header = h }, func(line int, text []byte) error {
		off := len(b.buf)
		b.buf = append(b.buf, text...)
		// Parsed in place: the strings it holds point into the buffer and
		// are dropped before the next line (a buffer that grows moves to a
		// new array; the old one stays valid while referenced).
		view := unsafe.String(unsafe.SliceData(b.buf[off:]), len(text))
		ev, err := parseEvent(view, b.scratch)
		if err != nil {
			b.buf = b.buf[:off]
			return err
		}
		// The writer's text of the event: the same as the line for a
		// trace hcasim wrote (AppendEventLine sorts a copy of the fields).
		b.canon, b.sorted = AppendEventLine(b.canon[:0], &ev, b.sorted)
		odd := string(b.canon) != view
		b.scratch = ev.Fields
		b.add(off, line, &ev, odd)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b.done(), nil
}

// parsedDiffTrace is t as a diffTrace: each event's line as the writer
// would write it, and t's events for the report.
func parsedDiffTrace(t *Trace) *diffTrace {
	b := newDiffBuilder(0)
	b.t.Header = t.Header
	for i := range t.Events {
		off := len(b.buf)
		b.buf, b.scratch = AppendEventLine(b.buf, &t.Events[i].TraceEvent, b.scratch)
		b.add(off, t.Events[i].Line, &t.Events[i].TraceEvent, false)
	}
	d := b.done()
	d.events = t.Events
	return d
}

// lineText returns event i's line.
func (t *diffTrace) lineText(i int32) string {
	e := &t.ev[i]
	return t.text[e.off : e.off+int(e.n)]
}

// fieldsText returns the fields part of event i's line ("" or " k=v ...").
func (t *diffTrace) fieldsText(i int32) string {
	e := &t.ev[i]
	return t.text[e.off+int(e.fo) : e.off+int(e.n)]
}

// event returns event i whole, for the report.
func (t *diffTrace) event(i int) Event {
	if t.events != nil {
		return t.events[i]
	}
	ev, err := ParseEventLine(t.lineText(int32(i)))
	if err != nil {
		// readDiffTrace parsed the same text without error.
		panic("verif: diff: a checked trace line no longer parses: " + err.Error())
	}
	return Event{TraceEvent: ev, Line: t.ev[i].line}
}

// parse returns event i, parsed into dst (its Fields reused as scratch),
// or t.events' own when t came parsed.
func (t *diffTrace) parse(i int32, dst *components.TraceEvent) *components.TraceEvent {
	if t.events != nil {
		return &t.events[i].TraceEvent
	}
	ev, _ := parseEvent(t.lineText(i), dst.Fields[:0])
	*dst = ev
	return dst
}

// canonicalTies orders each run of same-picosecond events of a stream by
// their text as the writer writes them. Two events at the same picosecond
// are simultaneous in the model; which one the engine ran first is its tie
// order, not the model's behaviour, so a diff must not depend on it.
func (t *diffTrace) canonicalTies(idx []int32) {
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && t.ev[idx[hi]].time == t.ev[idx[lo]].time {
			hi++
		}
		if hi-lo > 1 {
			run := idx[lo:hi]
			keys := make([]string, len(run))
			for k, i := range run {
				if t.ev[i].odd {
					ev := t.event(int(i))
					keys[k] = FormatEvent(&ev.TraceEvent)
				} else {
					keys[k] = t.lineText(i)
				}
			}
			sort.Stable(tieRun{run, keys})
		}
		lo = hi
	}
}

// tieRun sorts a run of events by their canonical texts.
type tieRun struct {
	idx  []int32
	keys []string
}

func (r tieRun) Len() int           { return len(r.idx) }
func (r tieRun) Less(a, b int) bool { return r.keys[a] < r.keys[b] }
func (r tieRun) Swap(a, b int) {
	r.idx[a], r.idx[b] = r.idx[b], r.idx[a]
	r.keys[a], r.keys[b] = r.keys[b], r.keys[a]
}

// split returns, per stream key of a component paths selects (all when
// empty), its events not of an ignored kind, in file order with
// same-picosecond runs in canonical order.
func (t *diffTrace) split(ignore map[components.TraceKind]bool, paths []string) map[string][]int32 {
	m := make(map[string][]int32, len(t.keys))
	for id, key := range t.keys {
		if !selected(paths, streamPath(key)) {
			continue
		}
		var idx []int32
		for _, i := range t.streams[id] {
			if !ignore[t.ev[i].kind] {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		t.canonicalTies(idx)
		m[key] = idx
	}
	return m
}
