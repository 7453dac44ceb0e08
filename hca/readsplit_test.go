package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestReadRequests: each case's requests are derived by hand from the
// rule "at most mrrs bytes, never across an mrrs-aligned address".
func TestReadRequests(t *testing.T) {
	top := ^uint64(0) &^ 63 // the last 64-byte block of the 64-bit space
	for _, tc := range []struct {
		name string
		addr uint64
		n    int
		mrrs int
		want []ReadChunk
	}{
		{"aligned, one request", 0x1000, 512, 512, []ReadChunk{{0x1000, 512}}},
		// 0x1000 + 1300 = 0x1514: two full 512-byte requests and 276.
		{"aligned, count split", 0x1000, 1300, 512, []ReadChunk{{0x1000, 512}, {0x1200, 512}, {0x1400, 276}}},
		// 0x10c0 is 192 into a 512-byte unit: 320 to 0x1200, then 512, then
		// 1000 - 832 = 168. A split by count would give 512 + 488 and cross
		// 0x1200 in its first request.
		{"unaligned", 0x10c0, 1000, 512, []ReadChunk{{0x10c0, 320}, {0x1200, 512}, {0x1400, 168}}},
		// MRRS 4096: 0x1fc0 is 64 bytes short of 0x2000, a 4 KiB boundary.
		{"across 4 KiB", 0x1fc0, 128, 4096, []ReadChunk{{0x1fc0, 64}, {0x2000, 64}}},
		// The top of the space: 64 bytes to 2^64, then from 0 (wrapped).
		{"wraps at 2^64", top, 192, 128, []ReadChunk{{top, 64}, {0, 128}}},
		{"smaller than the unit's rest", 0x1040, 64, 128, []ReadChunk{{0x1040, 64}}},
		{"nothing", 0x1000, 0, 512, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadRequests(nil, tc.addr, tc.n, tc.mrrs)
			assert.Equal(t, tc.want, got)
			sum := 0
			for _, c := range got {
				sum += c.N
				assert.LessOrEqual(t, c.N, tc.mrrs)
				assert.Equal(t, c.Addr/uint64(tc.mrrs), (c.Addr+uint64(c.N)-1)/uint64(tc.mrrs), "request %+v crosses an MRRS unit", c)
			}
			assert.Equal(t, tc.n, sum)
		})
	}
}
