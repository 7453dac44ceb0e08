package hca

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

func TestKeyFormatAndCheck(t *testing.T) {
	var kt KeyTable
	a := kt.Register(1, 0x1000, 0x100, AccessLocalWrite|AccessRemoteWrite)
	b := kt.Register(2, 0x8000, 0x40, AccessRemoteRead|AccessRemoteAtomic)
	// key = 24-bit index << 8 | 8-bit variant (ib-facts §6).
	assert.Equal(t, uint32(0), a.LKey>>8)
	assert.Equal(t, uint32(1), b.LKey>>8)
	assert.NotZero(t, a.LKey&0xff)
	assert.Equal(t, a.LKey, a.RKey)

	tests := []struct {
		name   string
		key    uint32
		pd     uint32
		need   int
		addr   uint64
		length uint64
		want   KeyResult
	}{
		{"write ok", a.RKey, 1, AccessRemoteWrite, 0x1000, 0x100, KeyOK},
		{"local read needs no flag", a.LKey, 1, 0, 0x10ff, 1, KeyOK},
		{"wrong variant", a.RKey ^ 0x01, 1, AccessRemoteWrite, 0x1000, 1, KeyInvalid},
		{"index past table", 7 << 8, 1, 0, 0, 1, KeyInvalid},
		{"pd", a.RKey, 2, AccessRemoteWrite, 0x1000, 1, KeyPDMismatch},
		{"read on write-only", a.RKey, 1, AccessRemoteRead, 0x1000, 1, KeyAccessDenied},
		{"one past end", a.RKey, 1, AccessRemoteWrite, 0x1000, 0x101, KeyOutOfBounds},
		{"before start", a.RKey, 1, AccessRemoteWrite, 0xfff, 1, KeyOutOfBounds},
		{"atomic ok", b.RKey, 2, AccessRemoteAtomic, 0x8038, 8, KeyOK},
		{"atomic wrapping length", b.RKey, 2, AccessRemoteAtomic, 0x8038, ^uint64(0), KeyOutOfBounds},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, kt.Check(tc.key, tc.pd, tc.need, tc.addr, tc.length))
		})
	}
	kt.Deregister(a.LKey)
	assert.Equal(t, KeyInvalid, kt.Check(a.LKey, 1, 0, 0x1000, 1))
}

func TestKeyCacheLRU(t *testing.T) {
	c := NewKeyCache(2)
	k := func(i uint32) uint32 { return i<<8 | 1 }
	steps := []struct {
		key uint32
		hit bool
	}{
		{k(1), false}, {k(2), false}, {k(1), true}, // 2 is now LRU
		{k(3), false},               // evicts 2
		{k(1), true}, {k(2), false}, // evicts 3
		{k(3), false},
	}
	for i, s := range steps {
		assert.Equal(t, s.hit, c.Access(s.key), "step %d", i)
	}
	assert.Equal(t, int64(2), c.Hits)
	assert.Equal(t, int64(5), c.Misses)
}

// refKeyCache is the cache's definition: entries stamped at each use, the
// least recently stamped one evicted (the scan the linked list replaces).
type refKeyCache struct {
	capacity int
	clock    uint64
	used     map[uint32]uint64
	ready    map[uint32]ib.PS
}

func (c *refKeyCache) lookup(key uint32) (bool, ib.PS) {
	idx := key >> 8
	c.clock++
	if _, ok := c.used[idx]; ok {
		c.used[idx] = c.clock
		return true, c.ready[idx]
	}
	if len(c.used) >= c.capacity {
		var victim uint32
		oldest := ^uint64(0)
		for k, u := range c.used {
			if u < oldest {
				oldest, victim = u, k
			}
		}
		delete(c.used, victim)
		delete(c.ready, victim)
	}
	c.used[idx], c.ready[idx] = c.clock, 0
	return false, 0
}

// TestKeyCacheMatchesDefinition runs random lookups and fills over a few
// more keys than the cache holds, for several capacities, and checks every
// answer (hit, ready time) against the stamp-and-scan definition.
func TestKeyCacheMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, capacity := range []int{1, 2, 3, 8, 64} {
		c := NewKeyCache(capacity)
		ref := &refKeyCache{capacity: capacity, used: map[uint32]uint64{}, ready: map[uint32]ib.PS{}}
		for step := 0; step < 20000; step++ {
			key := uint32(rng.IntN(capacity+capacity/2+2))<<8 | 1
			hit, at := c.Lookup(key)
			wantHit, wantAt := ref.lookup(key)
			require.Equal(t, wantHit, hit, "capacity %d step %d", capacity, step)
			require.Equal(t, wantAt, at, "capacity %d step %d", capacity, step)
			if !hit && rng.IntN(2) == 0 {
				ready := ib.PS(step)
				c.Fill(key, ready)
				ref.ready[key>>8] = ready
			}
		}
	}
}
