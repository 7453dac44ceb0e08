package report

import (
	"fmt"
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
