package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

func gen3() PCIeConfig {
	return PCIeConfig{Gen: 3, Lanes: 16, MPSBytes: 256, MRRSBytes: 512, ReadCompletionBytes: 64,
		ReadLatencyNS: 500, WriteLatencyNS: 200, TLPOverheadBytes: 24, CompletionOverheadBytes: 20,
		OutstandingReads: 4, MMIOLatencyNS: 250}
}

func TestPCIeRates(t *testing.T) {
	tests := []struct {
		gen  int
		want float64 // Gb/s per direction at x16
	}{
		// 8 GT/s × 16 × 128/130 = 126.03 Gb/s = 15.75 GB/s (ib-facts §8).
		{3, 8 * 16 * 128.0 / 130},
		{4, 16 * 16 * 128.0 / 130},
		{5, 32 * 16 * 128.0 / 130},
		// 64 GT/s × 16 × 236/256 FLIT efficiency = 944 Gb/s = 118 GB/s.
		{6, 64 * 16 * 236.0 / 256},
	}
	for _, tc := range tests {
		c := gen3()
		c.Gen = tc.gen
		p := NewPCIe(c)
		assert.InDelta(t, tc.want, p.PayloadGbps(), 1e-9, "gen %d", tc.gen)
	}
	// Gen3 x16: 1 byte = 8 / 126.03 ns = 63.48 ps; 280 bytes = 17773.4 → 17774 ps (rounded up).
	assert.Equal(t, ib.PS(17774), NewPCIe(gen3()).SerPS(280))
}

func TestPCIeWriteAndRead(t *testing.T) {
	p := NewPCIe(gen3())
	// A 600-byte posted write at MPS 256: TLPs of 256, 256, 88 payload,
	// each + 24 overhead, back to back upstream, then the write latency.
	want := p.SerPS(280) + p.SerPS(280) + p.SerPS(112) + 200*ib.Nanosecond
	assert.Equal(t, want, p.Write(0, 600))

	q := NewPCIe(gen3())
	// A 100-byte read: one request (24 B upstream), 500 ns, then two
	// completions of 64 and 36 bytes (+20 each) downstream.
	want = q.SerPS(24) + 500*ib.Nanosecond + q.SerPS(84) + q.SerPS(56)
	assert.Equal(t, want, q.Read(0, 100))
	assert.Equal(t, int64(1), q.ReadRequests)
}

func TestPCIeOutstandingReadCap(t *testing.T) {
	// 4 tags, 5 requests of 512 B: the fifth waits for the first tag.
	p := NewPCIe(gen3())
	done := p.Read(0, 5*512)
	req := p.SerPS(24)
	cpl := p.SerPS(64 + 20)
	// Request k (k=0..3) leaves at (k+1)·req; its completions start at
	// (k+1)·req + 500 ns, but the downstream is FIFO: request 0's 8
	// completions end at req + 500 ns + 8·cpl; each later request's start
	// is earlier than the previous end, so they follow back to back.
	firstTagFree := req + 500*ib.Nanosecond + 8*cpl
	// The fifth request leaves at firstTagFree + req; its completions find
	// the downstream idle again only if the four first ones are done:
	// 4 × 8 completions end at req + 500 ns + 32·cpl < firstTagFree + req + 500 ns.
	want := firstTagFree + req + 500*ib.Nanosecond + 8*cpl
	assert.Equal(t, want, done)
	// It was ready at 0 and waited for the first tag.
	assert.Equal(t, firstTagFree, p.TagStallPS)
}

func TestPCIeReadBound(t *testing.T) {
	c := gen3()
	c.OutstandingReads = 256
	p := NewPCIe(c)
	// With enough tags the bound is completion efficiency: 126.03 × 64/84 = 96.02.
	assert.InDelta(t, 8*16*128.0/130*64/84, p.ReadBoundGbps(), 1e-9)
	// Streaming 1 MiB of reads approaches that bound.
	n := 1 << 20
	done := p.Read(0, n)
	gbps := float64(n) * 8 / float64(done) * 1000
	assert.InDelta(t, p.ReadBoundGbps(), gbps, 0.02*p.ReadBoundGbps())
	assert.LessOrEqual(t, gbps, p.ReadBoundGbps())
}

// TestPCIeGen6FlitModeFraming: at 64 GT/s PCIe runs in Flit Mode, where
// TLPs are packed back to back into the 236 TLP bytes of 256-byte flits
// whose own DLP (6 B, with the sequence number), CRC (8 B) and FEC (6 B)
// protect the link; there is no STP framing token and no LCRC per TLP.
// The line rate already pays for those (236/256), so a TLP costs only its
// header: 4DW = 16 B for a 64-bit memory request, 3DW = 12 B for a
// completion. The cx8 profile (Gen6) must not charge Gen3's 24 / 20.
func TestPCIeGen6FlitModeFraming(t *testing.T) {
	cfg, err := Profile("cx8")
	if !assert.NoError(t, err) {
		return
	}
	c := cfg.PCIe
	assert.Equal(t, 6, c.Gen)
	p := NewPCIe(c)
	// A 64-byte read: a 16-byte request upstream, the completion latency,
	// one 64-byte completion with its 12-byte header downstream.
	want := p.SerPS(16) + ib.FromNanoseconds(c.ReadLatencyNS) + p.SerPS(64+12)
	assert.Equal(t, want, p.Read(0, 64))
	// A 64-byte posted write: one TLP of 64 + 16 bytes, then visibility.
	q := NewPCIe(c)
	assert.Equal(t, q.SerPS(64+16)+ib.FromNanoseconds(c.WriteLatencyNS), q.Write(0, 64))
	// The large-read bound: 943.9 Gb/s × 128 / (128 + 12) = 863.0 Gb/s
	// (RCB 128 B, cx7's), tags permitting.
	assert.InDelta(t, 64*16*236.0/256*128/140, p.ReadBoundGbps(), 1e-9)
}

// TestReadLatencyFromPCIeBench holds pcie.read_completion_latency_ns to its
// source. pcie-bench (Neugebauer et al., SIGCOMM 2018; github.com/pcie-bench/
// data, nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0/
// lat_dma_sizes.txt) measured 64-byte DMA reads from an NFP-6000 on PCIe
// Gen3 x8 into a Broadwell Xeon E5-2630 v4, warm cache: median 656 cycles of
// the NFP's 1.2 GHz clock, 546.67 ns, from the device issuing the read to
// its data being in. The model's Read over the same window on the same link
// (Gen3 x8: a 24-byte request, one 64 + 20-byte completion) must give that
// median to within the knob's rounding to a whole nanosecond.
func TestReadLatencyFromPCIeBench(t *testing.T) {
	cfg := Defaults().PCIe
	cfg.Lanes = 8 // the NFP-6000's link
	p := NewPCIe(cfg)
	// x8 Gen3: 8 GT/s × 8 lanes × 128/130 = 63.0 Gb/s, 126.95 ps per byte:
	// request 24 B 3.047 ns, completion 84 B 10.665 ns.
	require.Equal(t, ib.PS(3047), p.SerPS(24))
	require.Equal(t, ib.PS(10665), p.SerPS(84)) // 10664.06, rounded up
	measured := ib.PS(656 * 1_000_000 / 1200)   // 656 cycles at 1.2 GHz, ps
	assert.InDelta(t, float64(measured), float64(p.Read(0, 64)), 500, "546.67 ns measured")
}
