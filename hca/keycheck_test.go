package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
