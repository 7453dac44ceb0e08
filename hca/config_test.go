package hca

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultsAndProfilesValidate(t *testing.T) {
	for _, name := range ProfileNames() {
		c, err := Profile(name)
		require.NoError(t, err, name)
		assert.NoError(t, c.Validate(), name)
	}
	d := Defaults()
	assert.NoError(t, d.Validate())
	// Profiles select the PCIe generation the issue names for each class.
	for name, gen := range map[string]int{"cx5": 3, "cx6-hdr": 4, "cx7": 5, "CX8": 6} {
		c, err := Profile(name)
		require.NoError(t, err)
		assert.Equal(t, gen, c.PCIe.Gen, name)
		assert.Equal(t, 16, c.PCIe.Lanes, name)
	}
	_, err := Profile("cx9")
	assert.EqualError(t, err, `hca.profile: "cx9" is not a profile (cx5, cx5-edr, cx6, cx6-hdr, cx7, cx7-ndr, cx8, cx8-xdr)`)
}

func TestValidateNamesKey(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"clock", func(c *Config) { c.CoreClockMHz = 0 }, "hca.core_clock_mhz: 0 is out of range (1 to 10000)"},
		{"stage interval", func(c *Config) { c.KeyCheck.IntervalCycles = 0 }, "hca.key_check.interval_cycles: 0 is out of range (1 to 1000000)"},
		{"stage latency", func(c *Config) { c.CQE.LatencyCycles = -1 }, "hca.cqe.latency_cycles: -1 is out of range (0 to 1000000)"},
		{"retry_cnt", func(c *Config) { c.RetryCnt = 8 }, "hca.retry_cnt: 8 is out of range (0 to 7)"},
		{"key miss extra NaN", func(c *Config) { c.KeyMissExtraNS = math.NaN() }, "hca.key_miss_extra_ns: NaN is out of range (0 to 1e6 ns)"},
		{"key miss extra huge", func(c *Config) { c.KeyMissExtraNS = 1e300 }, "hca.key_miss_extra_ns: 1e+300 is out of range (0 to 1e6 ns)"},
		{"retired key_cache_miss_ns", func(c *Config) { v := 500.0; c.KeyCacheMissNS = &v },
			"hca.key_cache_miss_ns: 500 is no longer accepted: a key-cache miss is a PCIe read of the key's 64-byte MKey context, timed by hca.pcie.*; remove the key (hca.key_miss_extra_ns, default 0, adds on-chip time on top of the read)"},
		{"qp cache negative", func(c *Config) { c.QPCacheEntries = -1 }, "hca.qp_cache_entries: -1 is out of range (0 to 1048576)"},
		{"qp cache huge", func(c *Config) { c.QPCacheEntries = 1<<20 + 1 }, "hca.qp_cache_entries: 1048577 is out of range (0 to 1048576)"},
		{"qp context small", func(c *Config) { c.QPContextBytes = 32 }, "hca.qp_context_bytes: 32 is not a power of two from 64 to 4096"},
		{"qp context odd", func(c *Config) { c.QPContextBytes = 232 }, "hca.qp_context_bytes: 232 is not a power of two from 64 to 4096"},
		{"qp context large", func(c *Config) { c.QPContextBytes = 8192 }, "hca.qp_context_bytes: 8192 is not a power of two from 64 to 4096"},
		{"cq cache negative", func(c *Config) { c.CQCacheEntries = -1 }, "hca.cq_cache_entries: -1 is out of range (0 to 1048576)"},
		{"cq cache huge", func(c *Config) { c.CQCacheEntries = 1<<20 + 1 }, "hca.cq_cache_entries: 1048577 is out of range (0 to 1048576)"},
		{"cq context odd", func(c *Config) { c.CQContextBytes = 96 }, "hca.cq_context_bytes: 96 is not a power of two from 64 to 4096"},
		{"cq context small", func(c *Config) { c.CQContextBytes = 32 }, "hca.cq_context_bytes: 32 is not a power of two from 64 to 4096"},
		{"srq cache negative", func(c *Config) { c.SRQCacheEntries = -3 }, "hca.srq_cache_entries: -3 is out of range (0 to 1048576)"},
		{"eq cache negative", func(c *Config) { c.EQCacheEntries = -1 }, "hca.eq_cache_entries: -1 is out of range (0 to 1048576)"},
		{"eq context odd", func(c *Config) { c.EQContextBytes = 100 }, "hca.eq_context_bytes: 100 is not a power of two from 64 to 4096"},
		{"srq context large", func(c *Config) { c.SRQContextBytes = 8192 }, "hca.srq_context_bytes: 8192 is not a power of two from 64 to 4096"},
		{"timeout", func(c *Config) { c.RetryTimeout = 32 }, "hca.retry_timeout: 32 is out of range (0 to 31)"},
		{"vl buffer", func(c *Config) { c.VLBufferBytes = 100 }, "hca.vl_buffer_bytes: 100 is not a multiple of 64 (one credit is 64 bytes)"},
		{"cq depth", func(c *Config) { c.CQDepth = 1000 }, "hca.cq_depth: 1000 is not a power of two"},
		{"gen", func(c *Config) { c.PCIe.Gen = 2 }, "hca.pcie.gen: 2 is not a modelled generation (3, 4, 5, 6)"},
		{"lanes", func(c *Config) { c.PCIe.Lanes = 3 }, "hca.pcie.lanes: 3 is not a width (1, 2, 4, 8, 16)"},
		{"mps", func(c *Config) { c.PCIe.MPSBytes = 300 }, "hca.pcie.mps_bytes: 300 is not 128, 256, 512, 1024, 2048 or 4096"},
		{"rcb", func(c *Config) { c.PCIe.ReadCompletionBytes = 512 }, "hca.pcie.read_completion_bytes: 512 exceeds hca.pcie.mps_bytes 256"},
		{"latency", func(c *Config) { c.PCIe.ReadLatencyNS = -1 }, "hca.pcie.read_completion_latency_ns: -1 is out of range (0 to 1e9)"},
		{"inline", func(c *Config) { c.MaxInlineBytes = 2000 }, "hca.max_inline_bytes: 2000 is out of range (0 to 988)"},
		{"profile", func(c *Config) { c.Profile = "x" }, `hca.profile: "x" is not a profile (cx5, cx5-edr, cx6, cx6-hdr, cx7, cx7-ndr, cx8, cx8-xdr)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.mutate(&c)
			assert.EqualError(t, c.Validate(), tc.want)
		})
	}
}

// TestProfilePCIeCarriesItsPort checks each profile's PCIe link against the
// port it is for, from gen × lanes × line code, as the vendor manuals state
// it: a ConnectX-6 x16 card carries 100 Gb/s in a Gen3 slot and 200 Gb/s
// only in a Gen4 one (NVIDIA ConnectX-6 user manual, Introduction), so the
// PCIe payload rate of a profile must exceed its 4x port's data rate, and
// one generation less must not for cx6 and cx7 (Gen3 x16 126 Gb/s < HDR
// 200; Gen4 x16 252 < NDR 400). cx8's Gen5 x16 (504 Gb/s) is below XDR's
// 800 too: ConnectX-8 reaches 800 Gb/s on Gen6 x16 or two Gen5 x16 (Socket
// Direct, DOCA 2.9.0 CX8 release notes).
func TestProfilePCIeCarriesItsPort(t *testing.T) {
	tests := []struct {
		profile  string
		portGbps float64 // 4x data rate: 25, 50, 100, 200 Gb/s per lane (ib-facts §1)
	}{
		{"cx5", 100},
		{"cx6", 200},
		{"cx7", 400},
		{"cx8", 800},
	}
	eff := map[int]float64{3: 128.0 / 130, 4: 128.0 / 130, 5: 128.0 / 130, 6: 236.0 / 256}
	gts := map[int]float64{3: 8, 4: 16, 5: 32, 6: 64}
	for _, tc := range tests {
		t.Run(tc.profile, func(t *testing.T) {
			c, err := Profile(tc.profile)
			require.NoError(t, err)
			g := c.PCIe.Gen
			want := gts[g] * float64(c.PCIe.Lanes) * eff[g] // Gb/s per direction
			got := NewPCIe(c.PCIe).PayloadGbps()
			assert.InDelta(t, want, got, 1e-9)
			assert.Greater(t, got, tc.portGbps, "PCIe Gen%d x%d below the port", g, c.PCIe.Lanes)
			if tc.profile != "cx5" {
				lower := gts[g-1] * float64(c.PCIe.Lanes) * eff[g-1]
				assert.Less(t, lower, tc.portGbps, "one generation less would carry the port too")
			}
		})
	}
}
