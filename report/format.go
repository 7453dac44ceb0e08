package report

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FormatValue renders a value for CSV and tables: a float rounded as Round
// does, a string as it is, a list or mapping in YAML flow form
// ([0, 0, 1], {a: 1}), which is what --set and a sweep take back. Go's own
// form ([0 0 1], map[a:1]) is neither.
func FormatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(Round(x), 'g', -1, 64)
	case float32:
		return FormatValue(float64(x))
	case string:
		return x
	case nil:
		return ""
	}
	if s, ok := flowCollection(v); ok {
		return s
	}
	return fmt.Sprint(v)
}

// TableValue renders a metric for the terminal table, where a reader
// compares columns by eye: a float with a fractional part to 4 significant
// digits below 1,000 (0.1836, 17.51, 555.8) and to the integer from 1,000 up
// (17507, 8498743), never in exponent form between 0.001 and 1e15, and a
// whole number exactly (a count); anything else as FormatValue. The CSV and
// JSON keep FormatValue's nine digits, for a program or a diff.
func TableValue(v any) string {
	if n, isNum := v.(json.Number); isNum {
		// Read back from results.json (merge, --resume): shown as the
		// value it was written from is, so a merged or resumed table reads
		// like the whole run's.
		if f, err := n.Float64(); err == nil {
			v = f
		}
	}
	x, ok := v.(float64)
	if !ok {
		if f, is := v.(float32); is {
			x, ok = float64(f), true
		}
	}
	a := math.Abs(x)
	if !ok || x == 0 || math.IsNaN(x) || math.IsInf(x, 0) || a >= 1e15 || a < 1e-3 {
		if ok && x != 0 && a < 1e-3 {
			return strconv.FormatFloat(x, 'g', 4, 64)
		}
		return FormatValue(v)
	}
	if a >= 1000 || x == math.Trunc(x) {
		return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	}
	// Decimals for 4 significant digits: 3 below 1 less the leading zeros'
	// count, 3 − ⌊log10 |x|⌋ from 1 up. Rounding can carry into a fifth
	// digit (999.96 → 1000.0): strconv reads the decimals, not the digits,
	// so 'g' with 4 digits would write 1e+03; trailing zeros go.
	d := 3 - int(math.Floor(math.Log10(a)))
	s := strconv.FormatFloat(x, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// flowCollection renders v in YAML flow form when it is a list or a
// mapping; ok is false for anything else.
func flowCollection(v any) (s string, ok bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = flowItem(rv.Index(i).Interface())
		}
		return "[" + strings.Join(parts, ", ") + "]", true
	case reflect.Map:
		type entry struct{ key, value string }
		entries := make([]entry, 0, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			entries = append(entries, entry{flowItem(iter.Key().Interface()), flowItem(iter.Value().Interface())})
		}
		// Sorted, so that a mapping prints the same every run.
		sort.Slice(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
		parts := make([]string, len(entries))
		for i, e := range entries {
			parts[i] = e.key + ": " + e.value
		}
		return "{" + strings.Join(parts, ", ") + "}", true
	}
	return "", false
}

// flowItem renders one entry of a flow collection: a string plain when
// YAML reads it back as that string inside a flow list, else quoted ("a, b",
// "true", "1", "").
func flowItem(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		var back []any
		if err := yaml.Unmarshal([]byte("["+x+"]"), &back); err == nil && len(back) == 1 && back[0] == x {
			return x
		}
		return strconv.Quote(x)
	}
	return FormatValue(v)
}
