package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	return os.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644)
}

// ReadManifest reads dir/shard.json.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, errorf("%s: no %s: not the output of an hcasim --shard run", dir, ManifestFile)
		}
		return nil, errorf("%s: %v", path, err)
	}
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, errorf("%s: not a shard manifest: %v", path, err)
	}
	return &m, nil
}

// Check verifies a set of manifests are the shards of one sweep, each once
// and all present, and that together they ran every design exactly once.
func Check(dirs []string, ms []*Manifest) error {
	if len(ms) == 0 {
		return errorf("merge: no shard directories given")
	}
	first := ms[0]
	seen := make([]string, first.Shards)
	ran := make([]string, first.Designs)
	for i, m := range ms {
		if m.Shards != first.Shards || m.Designs != first.Designs || m.ConfigHash != first.ConfigHash {
			return errorf("merge: %s is from a different sweep than %s (shards %d vs %d, designs %d vs %d, config %s vs %s)",
				dirs[i], dirs[0], m.Shards, first.Shards, m.Designs, first.Designs, m.ConfigHash, first.ConfigHash)
		}
		if m.Shard < 0 || m.Shard >= m.Shards {
			return errorf("merge: %s: shard %d is out of range (0 to %d)", dirs[i], m.Shard, m.Shards-1)
		}
		if seen[m.Shard] != "" {
			return errorf("merge: shard %d/%d is in both %s and %s", m.Shard, m.Shards, seen[m.Shard], dirs[i])
		}
		seen[m.Shard] = dirs[i]
		for _, d := range m.Ran {
			if d < 0 || d >= m.Designs {
				return errorf("merge: %s: design %d is out of range (0 to %d)", dirs[i], d, m.Designs-1)
			}
			if ran[d] != "" {
				return errorf("merge: design %d ran in both %s and %s", d, ran[d], dirs[i])
			}
			ran[d] = dirs[i]
		}
	}
	var missing []string
	for s, d := range seen {
		if d == "" {
			missing = append(missing, fmt.Sprintf("%d/%d", s, first.Shards))
		}
	}
	if len(missing) > 0 {
		return errorf("merge: missing shards %s (each of the %d shards must be given once)", strings.Join(missing, ", "), first.Shards)
	}
	for d, dir := range ran {
		if dir == "" {
			return errorf("merge: no shard ran design %d", d)
		}
	}
	return nil
}
