package sweep

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseShard(t *testing.T) {
	sh, err := ParseShard("1/3")
	require.NoError(t, err)
	assert.Equal(t, Shard{Index: 1, Count: 3}, sh)
	// Every third design from 1: 1, 4, 7 of 0..9.
	assert.Equal(t, []int{1, 4, 7}, sh.Designs(10))
	assert.Empty(t, Shard{Index: 3, Count: 4}.Designs(3), "more shards than designs leaves some empty")
	for _, bad := range []string{"3/3", "-1/3", "1/0", "1", "a/b", "1/3/4"} {
		_, err := ParseShard(bad)
		assert.ErrorContains(t, err, "--shard", bad)
	}
}

func TestShardsCoverEveryDesignOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 12} {
		seen := map[int]int{}
		for i := 0; i < n; i++ {
			for _, d := range (Shard{Index: i, Count: n}).Designs(10) {
				seen[d]++
			}
		}
		assert.Len(t, seen, 10, "n=%d", n)
		for d, c := range seen {
			assert.Equal(t, 1, c, "n=%d design %d", n, d)
		}
	}
}

func TestCheckManifests(t *testing.T) {
	m := func(i int, ran ...int) *Manifest {
		return &Manifest{Shard: i, Shards: 2, Designs: 3, ConfigHash: "h", Ran: ran}
	}
	dirs := []string{"a", "b"}
	assert.NoError(t, Check(dirs, []*Manifest{m(0, 0, 2), m(1, 1)}))
	assert.ErrorContains(t, Check(dirs[:1], []*Manifest{m(0, 0, 2)}), "missing shards 1/2")
	assert.ErrorContains(t, Check(dirs, []*Manifest{m(0, 0, 2), m(0, 0, 2)}), "shard 0/2 is in both a and b")
	other := m(1, 1)
	other.ConfigHash = "g"
	assert.ErrorContains(t, Check(dirs, []*Manifest{m(0, 0, 2), other}), "b is from a different sweep than a")
	assert.ErrorContains(t, Check(dirs, []*Manifest{m(0, 0), m(1, 1)}), "no shard ran design 2")
	assert.ErrorContains(t, Check(dirs, []*Manifest{m(0, 0, 1), m(1, 1, 2)}), "design 1 ran in both a and b")
}

// TestManifestValidate: a manifest is checked field by field before merge
// sizes or indexes anything by it. The good one is what --shard 1/3 of 7
// designs writes: every third design from 1 below 7, 1 and 4, one point
// each.
func TestManifestValidate(t *testing.T) {
	good := func() *Manifest {
		return &Manifest{Shard: 1, Shards: 3, Designs: 7, ConfigHash: "h", Ran: []int{1, 4}, PointDesigns: []int{1, 4}}
	}
	require.NoError(t, good().Validate())
	empty := &Manifest{Shard: 3, Shards: 4, Designs: 3, ConfigHash: "h", Ran: []int{}, PointDesigns: []int{}}
	assert.NoError(t, empty.Validate(), "more shards than designs leaves some empty")
	knee := good()
	knee.Knee = &KneeManifest{Key: "workload.offered_load", KneeSpec: KneeSpec{From: 0.1, To: 1, Tolerance: 0.02, Epsilon: 0.02}}
	knee.PointDesigns = []int{1, 1, 1, 4, 4}
	assert.NoError(t, knee.Validate(), "a knee search's design has several probes")

	tests := []struct {
		name string
		edit func(m *Manifest)
		want string
	}{
		{"negative shards", func(m *Manifest) { m.Shards = -1 }, "shards: -1 is out of range (at least 1)"},
		{"huge shards", func(m *Manifest) { m.Shards = 1e15 }, "ran: 2 designs, want 1"},
		{"shard past shards", func(m *Manifest) { m.Shard = 3 }, "shard: 3 is out of range (0 to shards − 1 = 2)"},
		{"negative designs", func(m *Manifest) { m.Designs = -6 }, "designs: -6 is out of range (at least 1)"},
		// Every third of 10^15 designs from 1: (10^15 − 2)/3 + 1.
		{"huge designs", func(m *Manifest) { m.Designs = 1e15 }, "ran: 2 designs, want 333333333333333"},
		{"no hash", func(m *Manifest) { m.ConfigHash = "" }, "config_hash: missing"},
		{"ran short", func(m *Manifest) { m.Ran = []int{1} }, "ran: 1 designs, want 2"},
		{"ran wrong design", func(m *Manifest) { m.Ran = []int{1, 5} }, "ran[1]: 5, want 4"},
		{"points out of range", func(m *Manifest) { m.PointDesigns = []int{99, -5} }, "point_designs[0]: 99, want 1"},
		{"points reordered", func(m *Manifest) { m.PointDesigns = []int{4, 1} }, "point_designs[0]: 4, want 1"},
		{"grid point twice", func(m *Manifest) { m.PointDesigns = []int{1, 1, 4} }, "point_designs[1]: 1, want 4"},
		{"point past ran", func(m *Manifest) { m.PointDesigns = []int{1, 4, 7} }, "point_designs[2]: 7 is past the last design of ran (4)"},
		{"design without point", func(m *Manifest) { m.PointDesigns = []int{1} }, "point_designs: no point of design 4"},
		{"knee epsilon", func(m *Manifest) {
			m.Knee = &KneeManifest{Key: "workload.offered_load", KneeSpec: KneeSpec{From: 0.1, To: 1, Tolerance: 0.02, Epsilon: 1}}
		}, "knee.epsilon: 1 is out of range"},
		{"knee without key", func(m *Manifest) {
			m.Knee = &KneeManifest{KneeSpec: KneeSpec{From: 0.1, To: 1, Tolerance: 0.02, Epsilon: 0.02}}
		},
			"knee.key: missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.edit(m)
			assert.ErrorContains(t, m.Validate(), tc.want)
		})
	}
}

// TestCheckHugeCounts: counts that agree across shards but are far larger
// than the shards given are refused without sizing anything by them.
func TestCheckHugeCounts(t *testing.T) {
	ms := []*Manifest{{Shard: 0, Shards: 1e15, Designs: 1e15, ConfigHash: "h", Ran: []int{0}}}
	assert.ErrorContains(t, Check([]string{"a"}, ms), "missing shards 1/1000000000000000, 2/1000000000000000")
	ms[0].Shards = 1
	assert.ErrorContains(t, Check([]string{"a"}, ms), "no shard ran design 1")
	k := &KneeManifest{Key: "workload.offered_load", KneeSpec: KneeSpec{From: 0.1, To: 1, Tolerance: 0.02, Epsilon: 0.02}}
	k2 := *k
	k2.Epsilon = 0.05
	two := []*Manifest{{Shard: 0, Shards: 2, Designs: 2, ConfigHash: "h", Ran: []int{0}, Knee: k},
		{Shard: 1, Shards: 2, Designs: 2, ConfigHash: "h", Ran: []int{1}, Knee: &k2}}
	assert.ErrorContains(t, Check([]string{"a", "b"}, two), "b searches a knee differently from a")
}

// TestReadManifestErrorsNameNoGoType: a shard.json hcasim cannot read is
// refused in the file's terms (report.JSONError), not Go's ("cannot
// unmarshal string into Go struct field Manifest.shard of type int").
func TestReadManifestErrorsNameNoGoType(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"shard": "x"}`, "field shard holds a JSON string, where a whole number belongs"},
		{`[]`, "the file holds a JSON array, where an object belongs"},
		{`{"shard": 0,`, "cut short: the JSON ends inside a value (a write that did not finish?)"},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestFile), []byte(c.text), 0o644))
		_, err := ReadManifest(dir)
		require.Error(t, err, c.text)
		assert.Equal(t, filepath.Join(dir, ManifestFile)+": not a shard manifest: "+c.want, err.Error())
	}
}
