package sweep

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/fabric"
)

// Axis is one key under `sweep:`: a list of values, a range that expands to
// one, or a knee search.
type Axis struct {
	// Key is the dotted config key, e.g. "hca.vl_buffer_bytes".
	Key string
	// Values are the grid values, as YAML nodes set into the config tree;
	// nil for a search axis.
	Values []*yaml.Node
	// Search is the knee search along this key, or nil for a grid axis.
	Search *KneeSpec
	// Pinned is true when --set fixes the key: the axis then contributes its
	// pinned value only.
	Pinned bool
	// Replicas is N of `seed: {replicas: N}`: Values are then the base seed
	// and the N − 1 seeds after it, filled in by Expand (the base seed is
	// the config's). 0 for any other form.
	Replicas int
	// Common is `common: true` on the seed axis: common random numbers,
	// every point's derived seed depends only on its seed value (DeriveSeed).
	Common bool
}

// SeedKey is the config key whose sweep forms include replicas.
const SeedKey = "seed"

// MaxReplicas bounds `seed: {replicas: N}`. The confidence interval of a
// mean narrows as 1/√N: 1000 replicas give an interval 14 times narrower
// than 5 do, and t(0.975, 999) = 1.962 is within 0.1 % of the normal
// quantile, so more replicas buy little a longer measurement window would
// not buy more cheaply — while a slip of the finger (10000) would multiply
// every design's cost by it.
const MaxReplicas = 1000

// seedKeys are the keys of the mapping forms of sweep.seed.
var seedKeys = []string{"replicas", "values", "common"}

// KneeSpec is a bisection for the saturation knee along an offered-load key:
// a point is saturated when accepted_load < offered × (1 − Epsilon).
type KneeSpec struct {
	From      float64 `json:"from"`      // lowest offered load probed (fraction of link rate)
	To        float64 `json:"to"`        // highest offered load probed
	Tolerance float64 `json:"tolerance"` // the search stops when the bracket is this narrow
	Epsilon   float64 `json:"epsilon"`   // relative shortfall of accepted load that counts as saturated
}

// Default knee-search settings.
const (
	// DefaultKneeTolerance locates the knee to 1 % of link rate.
	DefaultKneeTolerance = 0.01
	// DefaultKneeEpsilon calls a point saturated when it delivers 2 % less
	// than it offers: measurement windows are finite, so a point below the
	// knee still differs from its offered load by a little sampling noise.
	DefaultKneeEpsilon = 0.02
	// maxAxisValues guards against a range that expands to millions of points.
	maxAxisValues = 100000
)

// rangeKeys are the keys of a range or search mapping; a mapping under
// sweep: holding none of them is a nested key path instead
// (`sweep: {hca: {vl_buffer_bytes: [...]}}`, which --set sweep.hca.… makes).
var rangeKeys = []string{"from", "to", "step", "points", "log", "search", "tolerance", "epsilon"}

// parseAxes reads the sweep: mapping into axes sorted by key.
func parseAxes(n *yaml.Node) ([]Axis, error) {
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil, nil
	}
	var axes []Axis
	if err := collect(n, "", &axes); err != nil {
		return nil, err
	}
	// A key given twice — `hca.vl_buffer_bytes: […]` in the file and
	// --set sweep.hca.vl_buffer_bytes=[…], which arrives as the nested
	// mapping hca: {vl_buffer_bytes: …} after it — takes the later one, so
	// --set overrides a sweep axis as it overrides any key.
	last := map[string]int{}
	for i, a := range axes {
		last[a.Key] = i
	}
	kept := axes[:0]
	for i, a := range axes {
		if last[a.Key] == i {
			kept = append(kept, a)
		}
	}
	axes = kept
	sort.Slice(axes, func(i, j int) bool { return axes[i].Key < axes[j].Key })
	searches := 0
	for _, a := range axes {
		if a.Search != nil {
			searches++
		}
	}
	if searches > 1 {
		return nil, errorf("sweep: %d knee searches; a sweep searches one key at most", searches)
	}
	return axes, nil
}

func collect(n *yaml.Node, prefix string, axes *[]Axis) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	where := "sweep"
	if prefix != "" {
		where = "sweep." + prefix
	}
	if n.Kind != yaml.MappingNode {
		return errorf("%s: want a mapping of dotted keys to values, got %s", where, describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		if prefix != "" {
			key = prefix + "." + key
		}
		v := n.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch {
		case v.Kind == yaml.SequenceNode:
			if err := checkList(key, v); err != nil {
				return err
			}
			*axes = append(*axes, Axis{Key: key, Values: v.Content})
		case v.Kind == yaml.MappingNode && key == SeedKey && hasAny(v, seedKeys):
			a, err := parseSeed(v)
			if err != nil {
				return err
			}
			*axes = append(*axes, a)
		case v.Kind == yaml.MappingNode && hasAny(v, []string{"replicas", "common"}):
			return errorf("sweep.%s: replicas and common are forms of sweep.seed only (seed: {replicas: N[, common: true]}); give %s a list of values or a range", key, key)
		case v.Kind == yaml.MappingNode && len(v.Content) == 0:
			return errorf("sweep.%s: an empty mapping sweeps nothing; give a list of values or a range {from, to, step}", key)
		case v.Kind == yaml.MappingNode && isRange(v):
			a, err := parseRange(key, v)
			if err != nil {
				return err
			}
			*axes = append(*axes, a)
		case v.Kind == yaml.MappingNode:
			if err := collect(v, key, axes); err != nil {
				return err
			}
		default:
			return errorf("sweep.%s: %s is not a list of values, a range {from, to, step} or {from, to, points}, or a search {search: knee, from, to}", key, describe(v))
		}
	}
	return nil
}

// checkList refuses an empty list, an empty value in it and a value
// listed twice (it would run twice: two identical rows, and two points at
// one x in the plots).
func checkList(key string, v *yaml.Node) error {
	if len(v.Content) == 0 {
		return errorf("sweep.%s: an empty list sweeps nothing", key)
	}
	for j, c := range v.Content {
		if c.Kind == yaml.ScalarNode && c.ShortTag() == "!!null" {
			return errorf("sweep.%s[%d]: an empty value (null) sweeps nothing; give a value", key, j)
		}
		for i := range j {
			prev := v.Content[i]
			if sameValue(nodeValue(prev), nodeValue(c)) || (fabric.AnyCase(key) && prev.Kind == yaml.ScalarNode &&
				c.Kind == yaml.ScalarNode && strings.EqualFold(prev.Value, c.Value)) {
				return errorf("sweep.%s[%d]: %s is listed twice (also [%d]); give each value once", key, j, config.ScalarString(c), i)
			}
		}
	}
	return nil
}

// sameValue reports whether two decoded sweep values are one value: equal,
// or numbers of the same value whatever YAML made of them (2 is an int,
// 2.0 and 2e0 floats; each sets a float key, or a seed, to the same value
// and derives the same point seed). Numbers compare exactly, so seeds near
// 2^64, which float64 cannot tell apart, stay distinct.
func sameValue(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	x, okA := exactNumber(a)
	y, okB := exactNumber(b)
	return okA && okB && x.Cmp(y) == 0
}

// exactNumber is a decoded YAML number as an exact rational.
func exactNumber(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	case uint64:
		return new(big.Rat).SetUint64(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(x), true
	}
	return nil, false
}

func isRange(n *yaml.Node) bool {
	return hasAny(n, rangeKeys)
}

// hasAny reports whether mapping n has one of keys.
func hasAny(n *yaml.Node, keys []string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		for _, k := range keys {
			if n.Content[i].Value == k {
				return true
			}
		}
	}
	return false
}

// seedForms says what sweep.seed takes, for its errors.
const seedForms = "a list of seeds, {replicas: N} with N from 2 to 1000, or {values: [seeds]}; either mapping may add common: true"

// parseSeed reads the mapping forms of sweep.seed: {replicas: N} (the base
// seed and the N − 1 after it; Expand fills them in) or {values: [...]}
// (a list, as the plain list form), each with an optional common: true.
func parseSeed(n *yaml.Node) (Axis, error) {
	a := Axis{Key: SeedKey}
	var replicas, values *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch k {
		case "replicas":
			replicas = v
		case "values":
			values = v
		case "common":
			// Decoded as a config boolean is (yaml.v3 into a bool: true,
			// false and YAML 1.1's yes, no, on, off), so that common: yes
			// means what topology.adaptive_routing: yes does.
			if v.Kind != yaml.ScalarNode || v.Decode(&a.Common) != nil {
				return Axis{}, errorf("sweep.seed.common: %s is not true or false", describe(v))
			}
		default:
			return Axis{}, errorf("sweep.seed.%s: unknown key (sweep.seed takes %s)", k, seedForms)
		}
	}
	switch {
	case replicas != nil && values != nil:
		return Axis{}, errorf("sweep.seed: give replicas or values, not both (%s)", seedForms)
	case replicas != nil:
		// A whole number written as a float (1e3) or past 64 bits (1e30)
		// is a count out of range, as any key's is, not "not a whole
		// number".
		var f float64
		if replicas.Kind != yaml.ScalarNode || replicas.ShortTag() == "!!bool" || replicas.Decode(&f) != nil ||
			math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
			return Axis{}, errorf("sweep.seed.replicas: %s is not a whole number (replicas: N runs N replicas, N from 2 to %d)", describe(replicas), MaxReplicas)
		}
		if f < 2 || f > MaxReplicas {
			return Axis{}, errorf("sweep.seed.replicas: %s is out of range (2 to %d: one replica has no spread to measure)", replicas.Value, MaxReplicas)
		}
		r := int64(f)
		a.Replicas = int(r)
	case values != nil:
		if values.Kind != yaml.SequenceNode {
			return Axis{}, errorf("sweep.seed.values: %s is not a list of seeds", describe(values))
		}
		if err := checkList("seed.values", values); err != nil {
			return Axis{}, err
		}
		a.Values = values.Content
	default:
		return Axis{}, errorf("sweep.seed: common alone sweeps nothing (%s)", seedForms)
	}
	return a, nil
}

// rangeSpec is a range or search mapping as written.
type rangeSpec struct {
	fields map[string]*yaml.Node
}

func (r rangeSpec) number(key, name string) (float64, bool, error) {
	n, ok := r.fields[name]
	if !ok {
		return 0, false, nil
	}
	var f float64
	if n.Kind != yaml.ScalarNode || n.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, errorf("sweep.%s.%s: %s is not a number", key, name, describe(n))
	}
	return f, true, nil
}

func (r rangeSpec) isInt(name string) bool {
	n, ok := r.fields[name]
	return ok && n.Tag == "!!int"
}

func parseRange(key string, n *yaml.Node) (Axis, error) {
	r := rangeSpec{fields: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		known := false
		for _, rk := range rangeKeys {
			known = known || rk == k
		}
		if !known {
			return Axis{}, errorf("sweep.%s.%s: unknown range key (valid: %s)", key, k, strings.Join(rangeKeys, ", "))
		}
		r.fields[k] = n.Content[i+1]
	}
	from, hasFrom, err := r.number(key, "from")
	if err != nil {
		return Axis{}, err
	}
	to, hasTo, err := r.number(key, "to")
	if err != nil {
		return Axis{}, err
	}
	if !hasFrom || !hasTo {
		return Axis{}, errorf("sweep.%s: a range needs both from and to", key)
	}
	if to < from {
		return Axis{}, errorf("sweep.%s: from %v is above to %v", key, from, to)
	}
	if s, ok := r.fields["search"]; ok {
		return parseSearch(key, r, s, from, to)
	}
	for _, k := range []string{"tolerance", "epsilon"} {
		if _, ok := r.fields[k]; ok {
			return Axis{}, errorf("sweep.%s.%s: only a search {search: knee, …} takes %s", key, k, k)
		}
	}
	step, hasStep, err := r.number(key, "step")
	if err != nil {
		return Axis{}, err
	}
	points, hasPoints, err := r.number(key, "points")
	if err != nil {
		return Axis{}, err
	}
	logScale := false
	if ln, ok := r.fields["log"]; ok {
		if ln.Decode(&logScale) != nil {
			return Axis{}, errorf("sweep.%s.log: %s is not true or false", key, describe(ln))
		}
	}
	var vals []float64
	ints := r.isInt("from") && r.isInt("to")
	switch {
	case hasStep && hasPoints:
		return Axis{}, errorf("sweep.%s: give step or points, not both", key)
	case hasStep:
		if logScale {
			return Axis{}, errorf("sweep.%s: log: true goes with points, not step", key)
		}
		if !(step > 0) {
			return Axis{}, errorf("sweep.%s.step: %v must be above 0", key, step)
		}
		count := math.Floor((to-from)/step+1e-9) + 1
		if count > maxAxisValues {
			return Axis{}, errorf("sweep.%s: the range makes %.0f values (at most %d)", key, count, maxAxisValues)
		}
		for i := 0; i < int(count); i++ {
			vals = append(vals, from+float64(i)*step)
		}
		ints = ints && r.isInt("step")
	case hasPoints:
		if points != math.Trunc(points) {
			return Axis{}, errorf("sweep.%s.points: %v is not a whole number from 1 to %d", key, points, maxAxisValues)
		}
		if points < 1 || points > maxAxisValues {
			return Axis{}, errorf("sweep.%s.points: %v is out of range (1 to %d)", key, points, maxAxisValues)
		}
		np := int(points)
		if logScale && !(from > 0) {
			return Axis{}, errorf("sweep.%s.from: %v must be above 0 on a log range", key, from)
		}
		for i := 0; i < np; i++ {
			if np == 1 {
				vals = append(vals, from)
				break
			}
			t := float64(i) / float64(np-1)
			if logScale {
				vals = append(vals, from*math.Pow(to/from, t))
			} else {
				vals = append(vals, from+t*(to-from))
			}
		}
		// Pin the ends exactly: from·(to/from)^1 need not round to to.
		if np > 1 {
			vals[len(vals)-1] = to
		}
	default:
		return Axis{}, errorf("sweep.%s: a range needs step (from, to, step) or points (from, to, points[, log])", key)
	}
	return Axis{Key: key, Values: numberNodes(vals, ints)}, nil
}

func parseSearch(key string, r rangeSpec, s *yaml.Node, from, to float64) (Axis, error) {
	if s.Value != "knee" {
		return Axis{}, errorf("sweep.%s.search: %s is not a search (knee)", key, describe(s))
	}
	for _, k := range []string{"step", "points", "log"} {
		if _, ok := r.fields[k]; ok {
			return Axis{}, errorf("sweep.%s.%s: a knee search takes from, to, tolerance and epsilon, not %s", key, k, k)
		}
	}
	if !strings.HasSuffix(key, "offered_load") {
		return Axis{}, errorf("sweep.%s: search: knee bisects an offered load (a key ending in offered_load), not %s", key, key)
	}
	k := KneeSpec{From: from, To: to, Tolerance: DefaultKneeTolerance, Epsilon: DefaultKneeEpsilon}
	if v, ok, err := r.number(key, "tolerance"); err != nil {
		return Axis{}, err
	} else if ok {
		k.Tolerance = v
	}
	if v, ok, err := r.number(key, "epsilon"); err != nil {
		return Axis{}, err
	} else if ok {
		k.Epsilon = v
	}
	if !(from > 0) || to > 1 {
		return Axis{}, errorf("sweep.%s: a knee search runs within offered loads above 0 and at most 1, not from %v to %v", key, from, to)
	}
	if !(to > from) {
		return Axis{}, errorf("sweep.%s: a knee search needs to %v above from %v", key, to, from)
	}
	if !(k.Tolerance > 0) || k.Tolerance >= to-from {
		return Axis{}, errorf("sweep.%s.tolerance: %v is out of range (above 0, below to − from = %v)", key, k.Tolerance, round12(to-from))
	}
	if !(k.Epsilon > 0) || k.Epsilon >= 1 {
		return Axis{}, errorf("sweep.%s.epsilon: %v is out of range (above 0, below 1)", key, k.Epsilon)
	}
	return Axis{Key: key, Search: &k}, nil
}

// numberNodes renders values as YAML scalars: integers when the range was
// written in integers (rounded, repeats dropped), else floats rounded to 12
// significant digits so that 0.1 + 2×0.1 reads 0.3, not 0.30000000000000004.
func numberNodes(vals []float64, ints bool) []*yaml.Node {
	var out []*yaml.Node
	seen := map[string]bool{}
	for _, v := range vals {
		var s, tag string
		if ints {
			s, tag = strconv.FormatInt(int64(math.Round(v)), 10), "!!int"
		} else {
			// No tag: YAML resolves "100" to an int and "0.3" to a float,
			// as it would the same text after --set.
			s, tag = FormatFloat(v), ""
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s})
	}
	return out
}

// FormatFloat renders a swept float the way params report it: 12
// significant digits, shortest form.
func FormatFloat(v float64) string {
	return strconv.FormatFloat(round12(v), 'g', -1, 64)
}

func round12(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return f
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "an empty value"
}

func errorf(format string, a ...any) error {
	return &config.Error{Msg: fmt.Sprintf(format, a...)}
}
