package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	"golang.org/x/term"
)

// Error is a user's mistake in a config or an override: one line, naming the
// key path, the bad value and what is allowed.
type Error struct {
	Msg string
}

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Parse parses YAML text into a node tree; an empty document is an empty mapping.
func Parse(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, errorf("%s", cleanYAMLError(err))
	}
	// A second document would be silently ignored: refuse one with content
	// (a trailing "---" alone is harmless).
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errorf("%s", cleanYAMLError(err))
		}
		if next.Kind != 0 && !(next.Kind == yaml.DocumentNode && (len(next.Content) == 0 || next.Content[0].ShortTag() == "!!null")) {
			return nil, errorf("line %d: a second YAML document (after ---); a config is one document", next.Line)
		}
	}
	if doc.Kind == 0 || (doc.Kind == yaml.DocumentNode && len(doc.Content) == 0) {
		return nil, errorf("the config is empty: give at least one key (docs/config.md), or name a shipped config such as ndr.yaml")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, errorf("line %d: the config must be a mapping of keys, not %s", root.Line, kindName(root))
	}
	return root, nil
}

func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: ")
	s = strings.ReplaceAll(s, "\n", "; ")
	return "broken YAML: " + s
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "empty"
}

// Set applies one `key=value` override to the node tree. The value is read
// as a YAML scalar or flow collection ("4x", "400", "[1, 2]", "{a: 1}").
func Set(root *yaml.Node, assignment string) error {
	eq := strings.IndexByte(assignment, '=')
	if eq <= 0 {
		return errorf("--set %q: want key=value, e.g. link.width=4x", assignment)
	}
	key, val := strings.TrimSpace(assignment[:eq]), assignment[eq+1:]
	parts := strings.Split(key, ".")
	for j, p := range parts {
		if p == "" {
			return errorf("--set %q: %q is not a dotted key path", assignment, key)
		}
		if i := strings.IndexByte(p, '['); i > 0 && strings.HasSuffix(p, "]") {
			list := strings.Join(append(parts[:j:j], p[:i]), ".")
			return errorf("--set %s: a list is set whole, not by index: --set '%s=[...]' with every entry", key, list)
		}
	}
	var vdoc yaml.Node
	if err := yaml.Unmarshal([]byte(val), &vdoc); err != nil {
		return errorf("--set %s: %q is not a YAML value", key, val)
	}
	var vnode *yaml.Node
	if vdoc.Kind == yaml.DocumentNode && len(vdoc.Content) == 1 {
		vnode = vdoc.Content[0]
	} else {
		vnode = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val}
	}
	unplace(vnode)
	return SetNode(root, parts, vnode)
}

// unplace marks a --set value's nodes as from no file line (atLine).
func unplace(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		unplace(c)
	}
}

// SetNode places value at the key path under root, creating mappings as needed.
func SetNode(root *yaml.Node, path []string, value *yaml.Node) error {
	n := root
	for i, p := range path {
		if n.Kind != yaml.MappingNode {
			return errorf("%s: is %s, not a mapping", strings.Join(path[:i], "."), kindName(n))
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == p {
				next = n.Content[j+1]
				if i == len(path)-1 {
					n.Content[j+1] = value
					return nil
				}
				break
			}
		}
		if next == nil {
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}
			if i == len(path)-1 {
				n.Content = append(n.Content, k, value)
				return nil
			}
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			n.Content = append(n.Content, k, next)
		}
		n = next
	}
	return nil
}

// Lookup returns the node at a dotted path, or nil.
func Lookup(root *yaml.Node, path string) *yaml.Node {
	n := root
	for _, p := range strings.Split(path, ".") {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == p {
				next = n.Content[j+1]
			}
		}
		n = next
	}
	return n
}

// Decode fills out (a pointer to a struct holding its defaults) from root,
// strictly.
func Decode(root *yaml.Node, out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic("config: Decode wants a pointer to a struct")
	}
	return decode(root, v.Elem(), "")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields maps yaml keys of a struct type to field index paths, following
// `,inline` embedding.
func fields(t reflect.Type) map[string][]int {
	m := map[string][]int{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("yaml")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int{}, prefix...), i)
			if strings.Contains(opts, "inline") {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			m[name] = idx
		}
	}
	walk(t, nil)
	return m
}

func decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	// A key with no value (`key:`) keeps its default.
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return errorf("%s: %swant a mapping of keys, got %s", orRoot(path), atLine(n), kindName(n))
		}
		fs := fields(v.Type())
		seen := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if line, dup := seen[k]; dup {
				return errorf("%s: given twice (lines %d and %d); keep one", join(path, k), line, n.Content[i].Line)
			}
			seen[k] = n.Content[i].Line
			idx, ok := fs[k]
			if !ok {
				return unknownKey(join(path, k), k, fs)
			}
			if err := decode(n.Content[i+1], v.FieldByIndex(idx), join(path, k)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decode(n, v.Elem(), path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return errorf("%s: %swant a list, got %s", path, atLine(n), kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if c.Kind == yaml.ScalarNode && c.ShortTag() == "!!null" {
				// A key left empty keeps its default; an empty list
				// entry has none to keep.
				return errorf("%s[%d]: %san empty value (null); give one", path, i, atLine(c))
			}
			if err := decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map, reflect.Interface:
		if v.Kind() == reflect.Map && n.Kind != yaml.MappingNode {
			return errorf("%s: %swant a mapping of keys, got %s", path, atLine(n), kindName(n))
		}
		ptr := reflect.New(v.Type())
		if err := n.Decode(ptr.Interface()); err != nil {
			return errorf("%s: %s%s", path, atLine(n), strings.TrimPrefix(err.Error(), "yaml: "))
		}
		v.Set(ptr.Elem())
		return nil
	}
	if v.Type() == itemsType && n.Kind == yaml.SequenceNode {
		return decodeItems(n, v, path)
	}
	if n.Kind != yaml.ScalarNode {
		return errorf("%s: %swant %s, got %s", path, atLine(n), typeName(v.Type()), kindName(n))
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return decodeWhole(n, v, path)
	}
	ptr := reflect.New(v.Type())
	if err := n.Decode(ptr.Interface()); err != nil {
		return errorf("%s: %q is not %s%s", path, n.Value, typeName(v.Type()), quotedHint(n, v))
	}
	if f := ptr.Elem(); f.CanFloat() && (math.IsNaN(f.Float()) || math.IsInf(f.Float(), 0)) {
		return errorf("%s: %q is not a finite number", path, n.Value)
	}
	v.Set(ptr.Elem())
	return nil
}

// decodeWhole decodes an integer key. YAML's own decoding would truncate a
// fraction (4096.7 → 4096) and wrap a value beyond the type; here a value
// must be a whole number that fits (1e6 is one, 2.5 is not).
func decodeWhole(n *yaml.Node, v reflect.Value, path string) error {
	bad := func() error { return errorf("%s: %q is not %s%s", path, n.Value, typeName(v.Type()), quotedHint(n, v)) }
	var f float64
	if err := n.Decode(&f); err != nil || n.ShortTag() == "!!bool" {
		return bad()
	}
	if n.ShortTag() == "!!int" {
		// Exact: a float64 cannot hold every 64-bit integer.
		if v.CanInt() {
			var i int64
			if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
				return outOfRange(n, v, path, bad())
			}
			v.SetInt(i)
			return nil
		}
		var u uint64
		if err := n.Decode(&u); err != nil || v.OverflowUint(u) {
			return outOfRange(n, v, path, bad())
		}
		v.SetUint(u)
		return nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return bad()
	}
	// A whole float (1e6): in range of the type before converting.
	if v.CanInt() {
		if f < -(1<<63) || f >= 1<<63 || v.OverflowInt(int64(f)) {
			return outOfRange(n, v, path, bad())
		}
		v.SetInt(int64(f))
		return nil
	}
	if f < 0 || f >= 1<<64 || v.OverflowUint(uint64(f)) {
		return outOfRange(n, v, path, bad())
	}
	v.SetUint(uint64(f))
	return nil
}

// quotedHint explains the refusal of a quoted number or boolean
// (`length_m: "5"`, `--set 'workload.background="true"'`, as a templating
// tool writes them): YAML reads a quoted scalar as a string, which no
// number or true/false key takes, and '"5" is not a number' alone reads
// as nonsense. It is empty when the value would not decode unquoted
// either.
func quotedHint(n *yaml.Node, v reflect.Value) string {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		return ""
	}
	plain := &yaml.Node{Kind: yaml.ScalarNode, Value: n.Value} // its tag resolved from the text, as if unquoted
	if plain.ShortTag() == "!!str" {
		return ""
	}
	// Unquoted, would it pass the checks decode makes? (A whole-number
	// key refuses 4096.5, which YAML would truncate.)
	probe := reflect.New(v.Type()).Elem()
	switch probe.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if decodeWhole(plain, probe, "") != nil {
			return ""
		}
	default:
		if plain.Decode(probe.Addr().Interface()) != nil {
			return ""
		}
		if probe.CanFloat() && (math.IsNaN(probe.Float()) || math.IsInf(probe.Float(), 0)) {
			return ""
		}
	}
	return " (it is quoted, so YAML reads it as a string: write it without quotes)"
}

// outOfRange names the range of v's type when a whole number does not fit
// it, and keeps err for anything that is not a number. The error is an
// *OverflowError, so that a caller who knows the key's own range (its
// Validate) can name that instead.
func outOfRange(n *yaml.Node, v reflect.Value, path string, err error) error {
	var f float64
	if n.Decode(&f) != nil || math.IsNaN(f) {
		return err
	}
	shift := 64 - v.Type().Bits()
	o := &OverflowError{Key: path, Value: n.Value, Node: n}
	if v.CanInt() {
		lo, hi := int64(math.MinInt64)>>shift, int64(math.MaxInt64)>>shift
		o.Msg = fmt.Sprintf("%s: %s is out of range (%d to %d)", path, n.Value, lo, hi)
		o.Bound = strconv.FormatInt(hi, 10)
		if f < 0 {
			o.Bound = strconv.FormatInt(lo, 10)
		}
		return o
	}
	hi := uint64(math.MaxUint64) >> shift
	o.Msg = fmt.Sprintf("%s: %s is out of range (0 to %d)", path, n.Value, hi)
	o.Bound = strconv.FormatUint(hi, 10)
	if f < 0 {
		o.Bound = "0"
	}
	return o
}

// OverflowError is an integer key given a whole number beyond its Go type
// (1e30 for an int64). Its message names the type's range, which is rarely
// the key's own: the decoder does not know the key's range, its Validate
// does. fabric.Decode asks Validate about Bound, the type's limit on the
// value's side, and names the range Validate gives.
type OverflowError struct {
	Msg   string     // "KEY: VALUE is out of range (the type's range)"
	Key   string     // the dotted key
	Value string     // the value as written
	Bound string     // the type's nearest limit to Value, in decimal
	Node  *yaml.Node // the value's node in the tree being decoded
}

func (e *OverflowError) Error() string { return e.Msg }

// Unwrap makes an OverflowError a user's *Error too.
func (e *OverflowError) Unwrap() error { return &Error{Msg: e.Msg} }

// atLine names a node's line in the config file, or nothing for a value
// given with --set (Set marks those line 0: "line 1" would mislead).
func atLine(n *yaml.Node) string {
	if n.Line <= 0 {
		return ""
	}
	return fmt.Sprintf("line %d: ", n.Line)
}

func orRoot(p string) string {
	if p == "" {
		return "config"
	}
	return p
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return t.String()
}

func unknownKey(full, key string, fs map[string][]int) error {
	if key == "<<" {
		// A YAML merge key reads as a key named "<<" here: the decoder
		// walks the tree itself, for its line numbers and strictness.
		return errorf("%s: YAML merge keys (<<) are not supported; write the keys out", full)
	}
	names := make([]string, 0, len(fs))
	for k := range fs {
		names = append(names, k)
	}
	sort.Strings(names)
	best, bestD := "", 1<<30
	for _, k := range names {
		if d := EditDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	parent := strings.TrimSuffix(full, key)
	if best != "" && bestD <= max(2, len(key)/3) {
		return errorf("%s: unknown key (did you mean %s%s?)", full, parent, best)
	}
	return errorf("%s: unknown key (valid here: %s)", full, strings.Join(names, ", "))
}

// EditDistance is the Levenshtein distance between a and b, for "did you
// mean" suggestions.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Stdin is the config name that reads the config from standard input
// (`generate-config | hcasim -config -`), as most Unix tools take "-".
const Stdin = "-"

// stdinConfig is standard input read whole, once per os.Stdin: a command
// that loads its config twice (hcasim rtl --testbench: the design, then
// the run) reads the same text both times.
var stdinConfig struct {
	sync.Mutex
	from *os.File
	data []byte
	err  error
}

func readStdin() ([]byte, error) {
	stdinConfig.Lock()
	defer stdinConfig.Unlock()
	if stdinConfig.from == nil || stdinConfig.from != os.Stdin {
		stdinConfig.from = os.Stdin
		if term.IsTerminal(int(os.Stdin.Fd())) {
			// Reading would wait for the user to type a config.
			stdinConfig.data, stdinConfig.err = nil, errorf("standard input is a terminal; pipe a config into it (make-config | hcasim -config -), or name a file")
		} else if b, err := io.ReadAll(os.Stdin); err != nil {
			stdinConfig.data, stdinConfig.err = nil, errorf("cannot read standard input: %v", err)
		} else {
			stdinConfig.data, stdinConfig.err = b, nil
		}
	}
	return stdinConfig.data, stdinConfig.err
}

// ReadFile reads a config by path, or else by the name of a shipped config
// (a file path wins); Stdin ("-") reads standard input. embedded looks a
// name up among shipped configs.
func ReadFile(name string, embedded func(string) ([]byte, bool)) ([]byte, error) {
	if name == Stdin {
		return readStdin()
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		// Reading one fails with "read DIR: is a directory", said twice.
		return nil, errorf("is a directory, not a config file (a YAML file, or the name of a shipped config such as ndr.yaml)")
	}
	data, err := os.ReadFile(name)
	if err == nil {
		return data, nil
	}
	if errors.Is(err, os.ErrNotExist) && embedded != nil {
		if d, ok := embedded(name); ok {
			return d, nil
		}
		// The examples and benchmarks are shipped in their directories:
		// "hol-blocking.yaml" for examples/hol-blocking.yaml is the
		// likeliest slip (the README's tour names them with it).
		if !strings.ContainsRune(name, '/') {
			for _, dir := range []string{"examples/", "bench/"} {
				if _, ok := embedded(dir + name); ok {
					return nil, errorf("no such file, nor a shipped config of that name; did you mean %s%s?", dir, name)
				}
			}
		}
		return nil, errorf("no such file, nor a shipped config of that name")
	}
	return nil, errorf("cannot read: %s", strings.TrimPrefix(err.Error(), "open "+name+": "))
}

// Keys lists every dotted key a struct type accepts, sorted (for docs and
// for checking sweep keys).
func Keys(t reflect.Type) []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for k, idx := range fields(t) {
			ft := t.FieldByIndex(idx).Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(ft, join(path, k))
			} else {
				out = append(out, join(path, k))
			}
		}
	}
	walk(t, "")
	sort.Strings(out)
	return out
}

// ScalarString renders a scalar node's value for reports.
func ScalarString(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	b, _ := yaml.Marshal(n)
	return strings.TrimSpace(string(b))
}

// Items is a string of comma-separated items ("1-4,7") that a config may
// also give as a YAML list of them ([1-4, 7], [1, 2]): the list reads as
// its items joined by commas, so both spellings mean one thing and the
// effective config writes the string.
type Items string

var itemsType = reflect.TypeFor[Items]()

// decodeItems reads a list given for an Items key.
func decodeItems(n *yaml.Node, v reflect.Value, path string) error {
	if len(n.Content) == 0 {
		return errorf("%s: %san empty list; give at least one item, or leave the key out", path, atLine(n))
	}
	parts := make([]string, len(n.Content))
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode {
			c = c.Alias
		}
		if c.Kind != yaml.ScalarNode || c.ShortTag() == "!!null" || c.Value == "" {
			return errorf("%s[%d]: %swant one item (a number or a word), got %s", path, i, atLine(c), kindName(c))
		}
		if strings.Contains(c.Value, ",") {
			return errorf("%s[%d]: %q holds a comma; in a list give each item as its own entry", path, i, c.Value)
		}
		parts[i] = c.Value
	}
	v.SetString(strings.Join(parts, ","))
	return nil
}
