package sweep

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/report"
)

// Sweep is an expanded, validated sweep: its axes and its designs.
type Sweep struct {
	// Axes are every key under sweep:, sorted by key (pinned ones included,
	// marked Pinned).
	Axes []Axis
	// Designs are the combinations of the unpinned grid axes' values, in
	// order (first axis slowest). Each is one unit of work and of sharding.
	Designs []Design
	// Search is the unpinned knee-search axis, or nil.
	Search *Axis
	// Common is true when the seed axis asks for common random numbers:
	// a point's seed derives from its seed value alone (DeriveSeed).
	Common bool

	base *yaml.Node // the config tree after --set, sweep: still in it
	fix  func(*fabric.Loaded)
}

// Design is one combination of the grid axes' values.
type Design struct {
	// Index is the design's place in Sweep.Designs.
	Index int
	set   []assignment
}

// assignment is one key set to one value.
type assignment struct {
	key   string
	value *yaml.Node
}

// Point is one design point ready to run.
type Point struct {
	// Params holds every swept key (pinned ones too) and its value as
	// written, decoded from YAML: what identifies the point in results.
	Params map[string]any
	// Loaded is the decoded design point; its Config.Seed is Seed.
	Loaded *fabric.Loaded
	// Seed is the point's derived seed (DeriveSeed).
	Seed uint64
}

// Has reports whether root holds a sweep: section with at least one key.
func Has(root *yaml.Node) bool {
	n := config.Lookup(root, "sweep")
	return n != nil && n.Kind == yaml.MappingNode && len(n.Content) > 0
}

// Options tune Expand.
type Options struct {
	// Pinned are the keys --set (and --seed) fixed; a swept key among them,
	// or under one of them, keeps its pinned value.
	Pinned []string
	// Fix, if set, adjusts every decoded point (the CLI's --check, which is
	// not part of the config tree).
	Fix func(*fabric.Loaded)
	// Check, if set, is run on every point Expand validates (after Fix):
	// the CLI's check of the files a point's keys name (Loaded.CheckFiles),
	// which only a point given its ReadFile can read.
	Check func(*fabric.Loaded) error
}

// Expand reads root's sweep: section (root is the config tree with --set
// already applied), expands it into designs and builds and validates every
// point before anything runs. A search axis is validated at both ends. Every
// error is a *config.Error naming sweep.<key>.
func Expand(root *yaml.Node, opts Options) (*Sweep, error) {
	axes, err := parseAxes(config.Lookup(root, "sweep"))
	if err != nil {
		return nil, err
	}
	s := &Sweep{base: root, fix: opts.Fix}
	known := config.Keys(reflect.TypeOf(fabric.Config{}))
	for i := range axes {
		a := &axes[i]
		if err := checkKey(a.Key, known); err != nil {
			return nil, err
		}
		a.Pinned = pinned(a.Key, opts.Pinned)
	}
	s.Axes = axes
	if err := s.fillReplicas(root); err != nil {
		return nil, err
	}
	var grid []*Axis
	for i := range s.Axes {
		a := &s.Axes[i]
		switch {
		case a.Pinned:
		case a.Search != nil:
			s.Search = a
		default:
			grid = append(grid, a)
		}
	}
	// The Cartesian product, last axis fastest.
	idx := make([]int, len(grid))
	for {
		d := Design{Index: len(s.Designs)}
		for i, a := range grid {
			d.set = append(d.set, assignment{a.Key, a.Values[idx[i]]})
		}
		s.Designs = append(s.Designs, d)
		if len(s.Designs) > maxAxisValues {
			return nil, errorf("sweep: more than %d designs; split the sweep into several configs", maxAxisValues)
		}
		i := len(grid) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(grid[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			break
		}
	}
	// Validate every point (a search at both ends) before running any.
	for _, d := range s.Designs {
		probes := [][]assignment{d.set}
		if s.Search != nil {
			probes = nil
			for _, v := range []float64{s.Search.Search.From, s.Search.Search.To} {
				probes = append(probes, s.withSearch(d, v))
			}
		}
		for _, set := range probes {
			l, err := s.decode(set)
			if err == nil && opts.Check != nil {
				if s.fix != nil {
					s.fix(l)
				}
				err = opts.Check(l)
			}
			if err != nil {
				return nil, pointError(set, err)
			}
		}
	}
	return s, nil
}

// Point builds design d's point (with the search key at searchValue when
// the sweep has a search axis). An error still returns the point's Params.
func (s *Sweep) Point(d Design, searchValue float64) (*Point, error) {
	set := d.set
	if s.Search != nil {
		set = s.withSearch(d, searchValue)
	}
	p := &Point{Params: s.params(set)}
	l, err := s.decode(set)
	if err != nil {
		return p, err
	}
	canonicalParams(p.Params, l)
	if s.Common {
		// Common random numbers: the point's seed is the one a sweep of
		// seed alone gives its seed value, whatever the other keys are, so
		// the designs at one replica draw the same traffic.
		p.Seed = DeriveSeed(l.Config.Seed, map[string]any{SeedKey: p.Params[SeedKey]})
	} else {
		p.Seed = DeriveSeed(l.Config.Seed, p.Params)
	}
	l.Config.Seed = p.Seed
	if s.fix != nil {
		s.fix(l)
	}
	p.Loaded = l
	return p, nil
}

// fillReplicas gives a `seed: {replicas: N}` axis its values — the base
// seed (the config's seed: after --set) and the N − 1 seeds after it — and
// checks the seed axis's mapping forms against the rest of the sweep.
func (s *Sweep) fillReplicas(root *yaml.Node) error {
	for i := range s.Axes {
		a := &s.Axes[i]
		if a.Key != SeedKey {
			continue
		}
		s.Common = a.Common
		if a.Replicas > 0 {
			base := fabric.Defaults().Seed
			if n := config.Lookup(root, SeedKey); n != nil {
				if n.Kind != yaml.ScalarNode || n.Decode(&base) != nil {
					return errorf("seed: %s is not a seed (0 … 2^64−1), so sweep.seed.replicas has no base to count from", describe(n))
				}
			}
			if base > math.MaxUint64-uint64(a.Replicas-1) {
				return errorf("sweep.seed.replicas: %d replicas from seed %d pass 2^64−1; give a lower seed", a.Replicas, base)
			}
			vals := make([]*yaml.Node, a.Replicas)
			for k := range vals {
				vals[k] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(base+uint64(k), 10)}
			}
			a.Values = vals
		}
		if a.Replicas == 0 && !a.Common {
			continue
		}
		for _, b := range s.Axes {
			if b.Search != nil && !b.Pinned {
				return errorf("sweep.seed: replicas and common do not go with the knee search of sweep.%s (each replica's bisection probes loads of its own, so no two replicas share a point to average); give seed a list to search each replica's knee", b.Key)
			}
		}
	}
	return nil
}

func (s *Sweep) withSearch(d Design, v float64) []assignment {
	set := append([]assignment{}, d.set...)
	return append(set, assignment{s.Search.Key, numberNodes([]float64{v}, false)[0]})
}

// decode copies the base tree, sets the assignments and decodes it.
func (s *Sweep) decode(set []assignment) (*fabric.Loaded, error) {
	root := copyNode(s.base)
	for _, a := range set {
		if err := config.SetNode(root, strings.Split(a.key, "."), copyNode(a.value)); err != nil {
			return nil, err
		}
	}
	return fabric.Decode(root)
}

// params are the swept keys' values: the assignment for unpinned axes, the
// base tree's value for pinned ones.
func (s *Sweep) params(set []assignment) map[string]any {
	p := map[string]any{}
	for _, a := range s.Axes {
		if a.Pinned {
			p[a.Key] = nodeValue(config.Lookup(s.base, a.Key))
		}
	}
	for _, a := range set {
		p[a.key] = nodeValue(a.value)
	}
	return p
}

// canonicalParams replaces a string param the decoded config spells
// differently only in case (fabric.Config.Normalize: ndr → NDR) with that
// spelling, so that params show what the model ran, and a point's seed does
// not depend on the case a value was typed in.
func canonicalParams(params map[string]any, l *fabric.Loaded) {
	for k, v := range params {
		written, ok := v.(string)
		if !ok {
			continue
		}
		if c, ok := fabric.Value(&l.Config, k); ok {
			if cs, ok := c.(string); ok && cs != written && strings.EqualFold(cs, written) {
				params[k] = cs
			}
		}
	}
}

// DeriveSeed returns the seed of a sweep point: the first 8 bytes of
// SHA-256 over the base seed and the point's params in key order, each
// value in its JSON form. It depends on nothing but the config and the
// point, so results do not depend on --jobs, on sharding or on the order
// points run in; a point run alone (every swept key pinned with --set)
// derives the same seed. A seed param itself is part of params, so
// sweeping seed gives independent replicas. sim.* keys choose how a point
// runs, not what it models (partitions, threads, engine, per-cycle rounds,
// checkers, time limit): they are left out, so a sweep over them runs the
// same traffic at every point and compares like with like. Under common
// random numbers (seed: {…, common: true}) Point passes the seed param
// alone, so the other swept keys change no draw.
func DeriveSeed(base uint64, params map[string]any) uint64 {
	keys := make([]string, 0, len(params))
	for k := range params {
		if strings.HasPrefix(k, "sim.") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	h.Write([]byte("hcasim sweep seed\x00" + strconv.FormatUint(base, 10) + "\x00"))
	for _, k := range keys {
		b, err := json.Marshal(params[k])
		if err != nil {
			panic("sweep: param " + k + " has no JSON form: " + err.Error())
		}
		h.Write([]byte(k + "=" + string(b) + "\x00"))
	}
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}

// pointError names the swept key a bad point's error is about, when it is
// one: "sweep.link.width: "3x" is not a width (…)", followed by the point
// when the sweep has more than one key.
func pointError(set []assignment, err error) error {
	msg := err.Error()
	for _, a := range set {
		if rest, ok := strings.CutPrefix(msg, a.key+": "); ok {
			if len(set) == 1 {
				return errorf("sweep.%s: %s", a.key, rest)
			}
			return errorf("sweep.%s: %s (at the point %s)", a.key, rest, paramText(set))
		}
	}
	if len(set) == 0 {
		return err
	}
	return errorf("sweep: at the point %s: %s", paramText(set), msg)
}

func checkKey(key string, known []string) error {
	if key == "sweep" || strings.HasPrefix(key, "sweep.") {
		return errorf("sweep.%s: a sweep cannot sweep itself", key)
	}
	for _, k := range known {
		if k == key || strings.HasPrefix(k, key+".") {
			return nil
		}
	}
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := config.EditDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= max(2, len(key)/4) {
		return errorf("sweep.%s: not a config key (did you mean %s?)", key, best)
	}
	return errorf("sweep.%s: not a config key (docs/config.md lists them)", key)
}

func pinned(key string, pins []string) bool {
	for _, p := range pins {
		if p == key || strings.HasPrefix(key, p+".") {
			return true
		}
	}
	return false
}

// PinnedKeys returns the keys of `key=value` overrides.
func PinnedKeys(sets []string) []string {
	var out []string
	for _, s := range sets {
		k, _, _ := strings.Cut(s, "=")
		out = append(out, strings.TrimSpace(k))
	}
	return out
}

// nodeValue decodes a value node as YAML would into an interface: ints,
// floats, strings, bools, lists and maps.
func nodeValue(n *yaml.Node) any {
	if n == nil {
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return scalarText(n)
	}
	return v
}

func scalarText(n *yaml.Node) string {
	return config.ScalarString(n)
}

// paramText names a point in an error: each scalar as written, a list or
// mapping in the flow form the results print (a block-style list in the
// file would otherwise come out as "- 0; - 1" on the error's one line).
func paramText(set []assignment) string {
	parts := make([]string, len(set))
	for i, a := range set {
		v := scalarText(a.value)
		if a.value != nil && a.value.Kind != yaml.ScalarNode {
			v = report.FormatValue(nodeValue(a.value))
		}
		parts[i] = a.key + "=" + v
	}
	return strings.Join(parts, ", ")
}

func copyNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			c.Content[i] = copyNode(k)
		}
	}
	return &c
}
