package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Point is one design point's parameters and metrics, or its error.
type Point struct {
	Params  map[string]any `json:"params"`
	Metrics map[string]any `json:"metrics"`
	Error   string         `json:"error,omitempty"`

	// ci holds, for a summary's design mean (Summary.points), the 95 %
	// half-width of each metric's mean by flattened name; the plots draw
	// it as an error bar. Nil for a point of the results.
	ci map[string]float64
	// labels are the params as a summary's design prints them in
	// summary.csv (its cells); the plots' legends use them, so that a
	// merged run, whose params come back from results.json as 0.000001,
	// labels its designs 1e-06 as the unsharded run does. Nil for a point
	// of the results.
	labels map[string]string
}

// Result is everything one invocation produced.
type Result struct {
	Tool    string  `json:"tool"`
	Version string  `json:"version"`
	Config  string  `json:"config"`
	Seed    uint64  `json:"seed"`
	Points  []Point `json:"points"`
	// Interrupted is set in an interrupted sweep's results only (a
	// finished run's results.json has no such key): what --resume checks
	// before it reuses the finished points.
	Interrupted *Interruption `json:"interrupted,omitempty"`
}

// Interruption records a sweep stopped by a signal: which, how many of its
// points did not run, and what the points that did ran with — the build,
// the config (its hash) and the flags that change results — so that
// --resume reuses them only in a run that would have computed the same.
type Interruption struct {
	// Signal is the signal that stopped the run: SIGINT or SIGTERM.
	Signal string `json:"signal"`
	// NotRun counts the points whose error is "interrupted: not run".
	NotRun int `json:"not_run"`
	// Build is the hcasim version and a hash of its executable.
	Build string `json:"build"`
	// ConfigHash is the sweep's config hash, as shard.json records it.
	ConfigHash string `json:"config_hash"`
	// Check is set when --check ran the invariant checkers.
	Check bool `json:"check,omitempty"`
	// Shard is --shard's I/N, when the run was one shard.
	Shard string `json:"shard,omitempty"`
}

// Round returns v rounded to 9 significant digits.
func Round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 9, 64), 64)
	return f
}

// Normalize rounds every float in a metrics tree in place.
func Normalize(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case float64:
			m[k] = Round(x)
		case map[string]float64:
			for kk, vv := range x {
				x[kk] = Round(vv)
			}
		case map[string]any:
			Normalize(x)
		case []any:
			for _, e := range x {
				if rec, ok := e.(map[string]any); ok {
					Normalize(rec)
				}
			}
		}
	}
}

// WriteJSON writes r as indented JSON (map keys sorted, so deterministic).
func WriteJSON(w io.Writer, r *Result) error {
	for i := range r.Points {
		Normalize(r.Points[i].Metrics)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Flatten turns nested metrics into dotted-free column names:
// latency_ns.p50 → latency_ns_p50.
func Flatten(prefix string, v any, out map[string]string) {
	walkLeaves(prefix, v, func(key string, v any) { out[key] = FormatValue(v) })
}

// walkLeaves calls leaf with every scalar in v and its column name, as
// Flatten names columns.
func walkLeaves(prefix string, v any, leaf func(key string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			walkLeaves(join(prefix, k), vv, leaf)
		}
	case map[string]float64:
		for k, vv := range x {
			leaf(join(prefix, k), vv)
		}
	case []any:
		// A list of named records ({"segment": "wire", "ns": 447.9}) becomes
		// one column per record and field: latency_breakdown_wire_ns.
		for i, e := range x {
			rec, ok := e.(map[string]any)
			if !ok {
				walkLeaves(join(prefix, strconv.Itoa(i)), e, leaf)
				continue
			}
			name := strconv.Itoa(i)
			for _, key := range []string{"segment", "name", "stage"} {
				if s, ok := rec[key].(string); ok {
					name = s
				}
			}
			for k, vv := range rec {
				if k == "segment" || k == "name" || k == "stage" {
					continue
				}
				walkLeaves(join(join(prefix, name), k), vv, leaf)
			}
		}
	default:
		leaf(prefix, x)
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "_" + b
}

// Columns returns the param columns then the metric columns of all points,
// each group sorted by name.
func Columns(points []Point) (params, metrics []string) {
	ps, ms := map[string]bool{}, map[string]bool{}
	for _, p := range points {
		for k := range p.Params {
			ps[k] = true
		}
		flat := map[string]string{}
		Flatten("", p.Metrics, flat)
		for k := range flat {
			ms[k] = true
		}
	}
	return slices.Sorted(maps.Keys(ps)), slices.Sorted(maps.Keys(ms))
}

// WriteFiles writes results.json and results.csv into dir.
func WriteFiles(dir string, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var jb, cb bytes.Buffer
	if err := WriteJSON(&jb, r); err != nil {
		return err
	}
	if err := WriteCSV(&cb, r); err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, "results.json"), jb.Bytes()); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, "results.csv"), cb.Bytes())
}

// ReadJSON reads a results.json.
func ReadJSON(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a results.json: %s", path, JSONError(err))
	}
	return &r, nil
}

// Number returns v as a float64 when it is a number (including a
// json.Number read back from results.json).
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// JSONError says what is wrong with a JSON file hcasim reads back
// (results.json, shard.json) in the file's own terms: the field, what it
// holds and what belongs there, or where the text breaks off. encoding/json
// names Go's types ("cannot unmarshal string into Go struct field
// Result.points of type []report.Point"), which tell a user nothing.
func JSONError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		where := "the file"
		if te.Field != "" {
			where = "field " + te.Field
		}
		return fmt.Sprintf("%s holds a JSON %s, where %s belongs", where, te.Value, jsonKind(te.Type))
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &se) && se.Error() == "unexpected end of JSON input":
		// json.Decoder says the first, json.Unmarshal the second.
		return "cut short: the JSON ends inside a value (a write that did not finish?)"
	case errors.As(err, &se):
		return fmt.Sprintf("broken JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another value"
}
