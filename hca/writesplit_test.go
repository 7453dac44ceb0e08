package hca

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteTLPs: each case's TLPs are derived by hand from the rule "at
// most mps bytes, never across a 4 KiB boundary".
func TestWriteTLPs(t *testing.T) {
	top := ^uint64(0) &^ 63 // the last 64-byte block of the 64-bit space
	for _, tc := range []struct {
		name string
		addr uint64
		n    int
		mps  int
		want []ReadChunk
	}{
		// 4 KiB at a page at MPS 256: 16 TLPs of 256.
		{"a page at MPS 256", 0x3000, 4096, 256, func() []ReadChunk {
			var c []ReadChunk
			for k := range 16 {
				c = append(c, ReadChunk{0x3000 + uint64(256*k), 256})
			}
			return c
		}()},
		// 0x1000 + 1300: two of 512 and 276, the count split.
		{"aligned, count split", 0x1000, 1300, 512, []ReadChunk{{0x1000, 512}, {0x1200, 512}, {0x1400, 276}}},
		// 0x10c0 + 1000 = 0x14a8 stays in the page: 512 from 0x10c0 (across
		// the 512-aligned 0x1200, which a write may cross), then 488.
		{"unaligned inside a page", 0x10c0, 1000, 512, []ReadChunk{{0x10c0, 512}, {0x12c0, 488}}},
		// 0x1f40 is 192 short of 0x2000: 192, then 256 and 64 from the page.
		{"across 4 KiB", 0x1f40, 512, 256, []ReadChunk{{0x1f40, 192}, {0x2000, 256}, {0x2100, 64}}},
		// A UD receive's payload behind its 40-byte GRH: 4096 bytes at
		// 0x5028 run 3 × 1024 to 0x5c28, 984 to 0x6000, then the 40 left.
		{"a UD payload past its page", 0x5028, 4096, 1024, []ReadChunk{{0x5028, 1024}, {0x5428, 1024}, {0x5828, 1024}, {0x5c28, 984}, {0x6000, 40}}},
		// The top of the space: 64 bytes to 2^64, then from 0 (wrapped).
		{"wraps at 2^64", top, 192, 128, []ReadChunk{{top, 64}, {0, 128}}},
		{"MPS 4096, a page boundary only", 0x1fc0, 128, 4096, []ReadChunk{{0x1fc0, 64}, {0x2000, 64}}},
		{"nothing", 0x1000, 0, 512, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := WriteTLPs(nil, tc.addr, tc.n, tc.mps)
			assert.Equal(t, tc.want, got)
			sum := 0
			for _, c := range got {
				sum += c.N
				assert.LessOrEqual(t, c.N, tc.mps)
				assert.Equal(t, c.Addr/4096, (c.Addr+uint64(c.N)-1)/4096, "TLP %+v crosses 4 KiB", c)
			}
			assert.Equal(t, tc.n, sum)
		})
	}
}

// TestWriteTLPsAreTheModelsSplit: the model books a posted write of n
// bytes as ⌊n / MPS⌋ TLPs of MPS and one of the rest (PCIe.write, by
// count, whatever the address). WriteTLPs gives that split exactly when no
// TLP of it crosses a 4 KiB boundary, and otherwise legal TLPs (cut at
// the boundary: TestWriteTLPs checks every one) where the count split has
// an illegal one; on an idle link Write's end is each
// of the count split's TLPs back to back, which is WriteTLPs' time where
// they agree. So the RTL, split by WriteTLPs, sends the TLPs the model
// times wherever the model's TLPs are legal.
func TestWriteTLPsAreTheModelsSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	agree, cut := 0, 0
	for _, mps := range []int{128, 256, 512, 1024, 2048, 4096} {
		cfg := Defaults().PCIe
		cfg.MPSBytes = mps
		for range 500 {
			addr := r.Uint64() & (1<<20 - 1)
			if r.IntN(3) == 0 {
				addr &^= 63 // whole blocks, as the RTL writes
			}
			n := 1 + r.IntN(3*mps)
			if r.IntN(4) == 0 {
				n = 64 * (1 + r.IntN(128))
			}
			// the model's split
			var count []ReadChunk
			a := addr
			for rest := n; rest > 0; {
				k := min(rest, mps)
				count = append(count, ReadChunk{a, k})
				a, rest = a+uint64(k), rest-k
			}
			legal := true
			for _, c := range count {
				legal = legal && c.Addr/4096 == (c.Addr+uint64(c.N)-1)/4096
			}
			got := WriteTLPs(nil, addr, n, mps)
			if legal {
				agree++
				require.Equal(t, count, got, "addr %#x n %d mps %d", addr, n, mps)
			} else {
				cut++
				require.NotEqual(t, count, got, "addr %#x n %d mps %d", addr, n, mps)
				sum := 0
				for _, c := range got {
					sum += c.N
					require.Equal(t, c.Addr/4096, (c.Addr+uint64(c.N)-1)/4096, "TLP %+v crosses 4 KiB", c)
				}
				require.Equal(t, n, sum)
			}
			p := NewPCIe(cfg)
			var want int64
			for _, c := range count {
				want += int64(p.SerPS(c.N + cfg.TLPOverheadBytes))
			}
			assert.Equal(t, want, int64(p.Write(0, n)-p.writeLat), "addr %#x n %d mps %d", addr, n, mps)
		}
	}
	// both kinds drawn, many times
	assert.Greater(t, agree, 1000)
	assert.Greater(t, cut, 100)
}
