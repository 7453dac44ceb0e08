package sweep

import (
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
