package verif

import (
	"encoding/json"
	"io"
)

// diffJSON is the machine-readable form of a diff report (hcasim diff
// --format json), for CI jobs that gate on a golden trace: the verdict, the
// counts, the first divergence with each side's event and context, and the
// per-stream counts. Times are integer picoseconds, as in the traces.
type diffJSON struct {
	Verdict   string             `json:"verdict"` // EQUIVALENT or DIFFERENT
	Matched   int                `json:"matched"`
	Missing   int                `json:"missing"`
	Extra     int                `json:"extra"`
	Differing int                `json:"differing"`
	Notes     []string           `json:"notes"`
	First     *divergenceJSON    `json:"first_divergence"` // null when none
	Streams   []streamCountsJSON `json:"streams"`
}

type divergenceJSON struct {
	Stream        string       `json:"stream"`
	What          string       `json:"what"`             // missing, extra or differing
	Reason        string       `json:"reason,omitempty"` // for differing: the first difference
	Golden        *eventJSON   `json:"golden"`           // null for an extra event
	New           *eventJSON   `json:"new"`              // null for a missing event
	GoldenContext []*eventJSON `json:"golden_context"`
	NewContext    []*eventJSON `json:"new_context"`
}

// eventJSON is one trace event: its line in its file, its fields (integers
// as numbers, strings as strings) and the line's text as the trace has it.
type eventJSON struct {
	Line   int            `json:"line"`
	TimePS int64          `json:"time_ps"`
	Path   string         `json:"path"`
	Kind   string         `json:"kind"`
	Fields map[string]any `json:"fields"`
	Text   string         `json:"text"`
}

type streamCountsJSON struct {
	Stream    string `json:"stream"`
	Matched   int    `json:"matched"`
	Missing   int    `json:"missing"`
	Extra     int    `json:"extra"`
	Differing int    `json:"differing"`
}

func toEventJSON(e *Event) *eventJSON {
	if e == nil {
		return nil
	}
	f := make(map[string]any, len(e.Fields))
	for _, x := range e.Fields {
		if x.IsStr {
			f[x.Key] = x.Str
		} else {
			f[x.Key] = x.Int
		}
	}
	return &eventJSON{Line: e.Line, TimePS: int64(e.Time), Path: e.Path, Kind: e.Kind.String(),
		Fields: f, Text: FormatEvent(&e.TraceEvent)}
}

func toEventsJSON(es []Event) []*eventJSON {
	out := make([]*eventJSON, len(es))
	for i := range es {
		out[i] = toEventJSON(&es[i])
	}
	return out
}

// WriteDiffJSON writes res as JSON (diffJSON): what WriteDiffReport prints,
// for a program to read.
func WriteDiffJSON(w io.Writer, golden, neu *Trace, res *DiffResult) error {
	t := res.Total
	out := diffJSON{Verdict: "EQUIVALENT", Matched: t.Matched, Missing: t.Missing, Extra: t.Extra,
		Differing: t.Differing, Notes: diffNotes(golden, neu, res), Streams: []streamCountsJSON{}}
	if !res.Equivalent() {
		out.Verdict = "DIFFERENT"
	}
	if d := res.First; d != nil {
		out.First = &divergenceJSON{Stream: d.Stream, What: d.What, Reason: d.Reason,
			Golden: toEventJSON(d.Golden), New: toEventJSON(d.New),
			GoldenContext: toEventsJSON(d.GoldenContext), NewContext: toEventsJSON(d.NewContext)}
	}
	for _, s := range res.Streams {
		out.Streams = append(out.Streams, streamCountsJSON(s))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
