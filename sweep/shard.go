package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hcasim/hcasim/report"
)

// Shard is one slice of a sweep: every Count-th design starting at Index.
type Shard struct {
	Index int // 0-based
	Count int
}

// ParseShard reads "I/N" (0 ≤ I < N).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, errorf("--shard: %q is not I/N (e.g. 0/4: the first of 4 shards)", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, errorf("--shard: %q is out of range (N at least 1, I from 0 to N−1)", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// Designs returns the indices of the designs this shard runs out of total:
// i, i+N, i+2N, … Round-robin rather than blocks, so that each shard gets a
// share of the slow corners of the design space.
func (sh Shard) Designs(total int) []int {
	var out []int
	for d := sh.Index; d < total; d += sh.Count {
		out = append(out, d)
	}
	return out
}

// ManifestFile is the name of a shard's manifest in its output directory.
const ManifestFile = "shard.json"

// Manifest describes one shard's output, for hcasim merge: which sweep it
// belongs to and which design each of its points comes from.
type Manifest struct {
	// Shard and Shards are I and N of --shard I/N.
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// Designs is the number of designs in the whole sweep.
	Designs int `json:"designs"`
	// ConfigHash identifies the swept config (after --set): shards of
	// different sweeps must not merge.
	ConfigHash string `json:"config_hash"`
	// Ran lists the designs this shard ran.
	Ran []int `json:"ran"`
	// PointDesigns is, for each point in the shard's results.json in order,
	// the global index of its design (on a grid, the point's index in the
	// unsharded result).
	PointDesigns []int `json:"point_designs"`
	// Knee is the search settings when the sweep searches a knee.
	Knee *KneeManifest `json:"knee,omitempty"`
}

// KneeManifest names a sweep's knee search, so merge can summarise it.
type KneeManifest struct {
	Key string `json:"key"`
	KneeSpec
}

// WriteManifest writes m as dir/shard.json.
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("sweep: marshal manifest: %v", err))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// ReadManifest reads dir/shard.json.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			// A mistyped directory is no shard for a plainer reason.
			what := "no such directory"
			if serr == nil {
				what = "a file, not a directory"
			}
			return nil, errorf("%s: %s (give the --out directories of the hcasim --shard runs)", dir, what)
		}
		if os.IsNotExist(err) {
			return nil, errorf("%s: no %s: not the output of an hcasim --shard run", dir, ManifestFile)
		}
		return nil, errorf("%s: %v", path, err)
	}
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, errorf("%s: not a shard manifest: %s", path, report.JSONError(err))
	}
	if err := m.Validate(); err != nil {
		return nil, errorf("%s: %v", path, err)
	}
	return &m, nil
}

// Validate checks a manifest on its own, before merge sizes or indexes
// anything by it: every field in range, ran the designs --shard I/N runs
// (Shard.Designs), and point_designs those designs in order, one point
// each (a knee search's design: one or more, its probes). The error names
// the field, the bad value and what is allowed.
func (m *Manifest) Validate() error {
	if m.Shards < 1 {
		return errorf("shards: %d is out of range (at least 1)", m.Shards)
	}
	if m.Shard < 0 || m.Shard >= m.Shards {
		return errorf("shard: %d is out of range (0 to shards − 1 = %d)", m.Shard, m.Shards-1)
	}
	if m.Designs < 1 {
		return errorf("designs: %d is out of range (at least 1)", m.Designs)
	}
	if m.ConfigHash == "" {
		return errorf("config_hash: missing (the swept config's hash)")
	}
	// Counted, not listed: designs may be any size here, ran must not be
	// trusted to be.
	want := 0
	if m.Shard < m.Designs {
		want = (m.Designs-1-m.Shard)/m.Shards + 1
	}
	if len(m.Ran) != want {
		return errorf("ran: %d designs, want %d (shard %d/%d runs every %d-th of the %d designs from %d)",
			len(m.Ran), want, m.Shard, m.Shards, m.Shards, m.Designs, m.Shard)
	}
	for k, d := range m.Ran {
		if w := m.Shard + k*m.Shards; d != w {
			return errorf("ran[%d]: %d, want %d (shard %d/%d runs every %d-th design from %d)", k, d, w, m.Shard, m.Shards, m.Shards, m.Shard)
		}
	}
	r := -1 // index in Ran of the current point's design
	for j, d := range m.PointDesigns {
		switch {
		case m.Knee != nil && r >= 0 && d == m.Ran[r]:
			// another probe of the design's knee search
		case r+1 < len(m.Ran) && d == m.Ran[r+1]:
			r++
		case r+1 < len(m.Ran):
			return errorf("point_designs[%d]: %d, want %d (the designs of ran in order)", j, d, m.Ran[r+1])
		default:
			return errorf("point_designs[%d]: %d is past the last design of ran (%d)", j, d, m.Ran[len(m.Ran)-1])
		}
	}
	if r+1 < len(m.Ran) {
		return errorf("point_designs: no point of design %d (every design of ran has one)", m.Ran[r+1])
	}
	if k := m.Knee; k != nil {
		switch {
		case k.Key == "":
			return errorf("knee.key: missing (the searched offered-load key)")
		case !(k.From > 0) || !(k.To > k.From) || k.To > 1:
			return errorf("knee: from %v, to %v are out of range (0 < from < to ≤ 1)", k.From, k.To)
		case !(k.Tolerance > 0):
			return errorf("knee.tolerance: %v is out of range (above 0)", k.Tolerance)
		case !(k.Epsilon > 0) || k.Epsilon >= 1:
			return errorf("knee.epsilon: %v is out of range (above 0, below 1)", k.Epsilon)
		}
	}
	return nil
}

// Check verifies a set of manifests are the shards of one sweep, each once
// and all present, and that together they ran every design exactly once.
// It sizes nothing by the manifests' counts: a corrupt count costs an error,
// not memory.
func Check(dirs []string, ms []*Manifest) error {
	if len(ms) == 0 {
		return errorf("merge: no shard directories given")
	}
	first := ms[0]
	seen := map[int]string{} // shard → its directory
	ran := map[int]string{}  // design → the directory of the shard that ran it
	for i, m := range ms {
		if m.Shards != first.Shards || m.Designs != first.Designs || m.ConfigHash != first.ConfigHash {
			return errorf("merge: %s is from a different sweep than %s (shards %d vs %d, designs %d vs %d, config %s vs %s)",
				dirs[i], dirs[0], m.Shards, first.Shards, m.Designs, first.Designs, m.ConfigHash, first.ConfigHash)
		}
		if !sameKnee(m.Knee, first.Knee) {
			return errorf("merge: %s searches a knee differently from %s: not shards of one sweep", dirs[i], dirs[0])
		}
		if m.Shard < 0 || m.Shard >= m.Shards {
			return errorf("merge: %s: shard %d is out of range (0 to %d)", dirs[i], m.Shard, m.Shards-1)
		}
		if d, ok := seen[m.Shard]; ok {
			return errorf("merge: shard %d/%d is in both %s and %s", m.Shard, m.Shards, d, dirs[i])
		}
		seen[m.Shard] = dirs[i]
		for _, d := range m.Ran {
			if d < 0 || d >= m.Designs {
				return errorf("merge: %s: design %d is out of range (0 to %d)", dirs[i], d, m.Designs-1)
			}
			if dir, ok := ran[d]; ok {
				return errorf("merge: design %d ran in both %s and %s", d, dir, dirs[i])
			}
			ran[d] = dirs[i]
		}
	}
	if len(seen) < first.Shards {
		// At most len(seen) shards are present, so this stops after a few.
		var missing []string
		for s := 0; s < first.Shards && len(missing) < 5; s++ {
			if _, ok := seen[s]; !ok {
				missing = append(missing, fmt.Sprintf("%d/%d", s, first.Shards))
			}
		}
		if n := first.Shards - len(seen); n > len(missing) {
			missing = append(missing, fmt.Sprintf("… (%d in all)", n))
		}
		return errorf("merge: missing shards %s (each of the %d shards must be given once)", strings.Join(missing, ", "), first.Shards)
	}
	if len(ran) < first.Designs {
		for d := 0; ; d++ {
			if _, ok := ran[d]; !ok {
				return errorf("merge: no shard ran design %d", d)
			}
		}
	}
	return nil
}

// sameKnee reports whether two manifests search the same knee (or none).
func sameKnee(a, b *KneeManifest) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
