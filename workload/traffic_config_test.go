package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrafficConfigValidate(t *testing.T) {
	require.NoError(t, func() error { c := DefaultTraffic(); return c.Validate() }())
	with := func(f func(c *TrafficConfig)) TrafficConfig {
		c := DefaultTraffic()
		f(&c)
		return c
	}
	cases := []struct {
		cfg  TrafficConfig
		want string
	}{
		{with(func(c *TrafficConfig) { c.Pattern = "stream" }), `workload.kind: "stream" is not a synthetic pattern (uniform, permutation, shift, bitcomp, hotspot, incast)`},
		{with(func(c *TrafficConfig) { c.Size = 0 }), "workload.size: 0 is not a packet payload (1 to 4096 bytes)"},
		{with(func(c *TrafficConfig) { c.OfferedLoad = 1.2 }), "workload.offered_load: 1.2 is out of range (0.001 to 1)"},
		{with(func(c *TrafficConfig) { c.OfferedLoad = 0 }), "workload.offered_load: 0 is out of range (0.001 to 1)"},
		{with(func(c *TrafficConfig) { c.Injection = "poisson" }), `workload.injection: "poisson" is not an injection process (bernoulli, onoff)`},
		{with(func(c *TrafficConfig) { c.BurstPackets = 0.5 }), "workload.burst_packets: 0.5 is out of range (1 to 1e6)"},
		{with(func(c *TrafficConfig) { c.HotspotFraction = -0.1 }), "workload.hotspot_fraction: -0.1 is out of range (0 to 1)"},
		{with(func(c *TrafficConfig) { c.Sizes = "64" }), `workload.sizes: "64" is not size:weight (e.g. 256:0.5,4096:0.5)`},
	}
	for _, tc := range cases {
		assert.EqualError(t, tc.cfg.Validate(), tc.want)
	}
	// With a distribution, workload.size is not used and not checked.
	assert.NoError(t, func() error { c := with(func(c *TrafficConfig) { c.Size = 0; c.Sizes = "64:1" }); return c.Validate() }())
}

func TestTrafficConfigCheckMTU(t *testing.T) {
	c := DefaultTraffic()
	assert.NoError(t, c.CheckMTU(4096))
	assert.EqualError(t, c.CheckMTU(2048), "workload.size: a 4096-byte payload is more than link.mtu 2048 (a synthetic packet carries at most one MTU)")
	c.Sizes = "256:1,4096:1"
	assert.EqualError(t, c.CheckMTU(1024), "workload.sizes: a 4096-byte payload is more than link.mtu 1024 (a synthetic packet carries at most one MTU)")
}

// TestConfigTraffic: the workload section's synthetic keys map one to one.
func TestConfigTraffic(t *testing.T) {
	w := Defaults()
	w.Kind = PatternShift
	w.Size = 1024
	w.OfferedLoad = 0.7
	w.Injection = InjectOnOff
	w.BurstPackets = 4
	w.Sizes = "64:1"
	w.HotspotFraction = 0.1
	w.Shift = 3
	assert.Equal(t, TrafficConfig{Pattern: "shift", Size: 1024, OfferedLoad: 0.7, Injection: "onoff", BurstPackets: 4, Sizes: "64:1", HotspotFraction: 0.1, Shift: 3}, w.Traffic())
	// The defaults agree with the workload section's.
	d := Defaults()
	tr := d.Traffic()
	tr.Pattern = PatternUniform
	assert.Equal(t, DefaultTraffic(), tr)
}

// TestOtherKindsKeysChecked: a key only another kind reads is still checked
// (a stream with workload.test=foo used to run, the typo unseen), while a
// valid value for another kind is left alone so that --set workload.kind=…
// can switch a config's kind.
func TestOtherKindsKeysChecked(t *testing.T) {
	with := func(f func(c *Config)) *Config {
		c := Defaults() // kind stream
		f(&c)
		return &c
	}
	for _, tc := range []struct {
		cfg  *Config
		want string
	}{
		{with(func(c *Config) { c.Test = "foo" }), `workload.test: "foo" is not a perftest test (write_lat, write_bw, read_lat, read_bw, send_lat, send_bw, atomic_lat, atomic_bw)`},
		{with(func(c *Config) { c.Connection = "UC" }), `workload.connection: "UC" is not a transport (RC, UD)`},
		{with(func(c *Config) { c.BackgroundPattern = "alltoall" }), `workload.background_pattern: "alltoall" is not a synthetic pattern (uniform, permutation, shift, bitcomp, hotspot, incast)`},
		{with(func(c *Config) { c.SliceBytes = -1 }), "workload.slice_bytes: -1 is out of range (0 for 524288, up to 1073741824)"},
		{with(func(c *Config) { c.ReduceGBps = -1 }), "workload.reduce_gbps: -1 is out of range (0 for free, up to 1e6 GB/s)"},
		{with(func(c *Config) { c.Sizes = "garbage" }), `workload.sizes: "garbage" is not size:weight (e.g. 256:0.5,4096:0.5)`},
	} {
		assert.EqualError(t, tc.cfg.Validate("workload"), tc.want)
	}
	ok := with(func(c *Config) {
		c.Test, c.Connection, c.BackgroundPattern, c.SliceBytes, c.ReduceGBps, c.Sizes = "send_lat", "UD", "hotspot", 4096, 50, "256:1"
	})
	assert.NoError(t, ok.Validate("workload"), "valid settings of other kinds")
}

// TestIterationsRangeIsOne: the config and the perftest run check
// workload.iterations against one range. The config took 1 (its range said
// "1 to 1e8") and the run then refused it with "2 to 1e8", so 0 and 1 gave
// two different allowed ranges for one key.
func TestIterationsRangeIsOne(t *testing.T) {
	for _, n := range []int{0, 1} {
		c := Defaults()
		c.Kind, c.Iterations = "perftest", n
		want := fmt.Sprintf("workload.iterations: %d is out of range (2 to 1e8)", n)
		assert.EqualError(t, c.Validate("workload"), want)
		run := PerftestRun{Test: "write_bw", Size: 8, Iterations: n, TxDepth: 1, QPs: 1}
		assert.EqualError(t, run.Validate(), want)
	}
}

// TestSizeRangeByKind: collectives take nccl-tests' sizes up to 1 GiB (the
// bound CollectiveRun checks); every other kind keeps 8 MiB, perftest's
// largest message (its MAX_SIZE).
func TestSizeRangeByKind(t *testing.T) {
	for _, tc := range []struct {
		kind string
		size int
		want string
	}{
		{"allreduce", 64 << 20, ""},
		{"alltoall", 1 << 30, ""},
		{"allreduce", 1<<30 + 1, "workload.size: 1073741825 is out of range for a collective (1 to 1073741824 bytes)"},
		{"alltoall", 0, "workload.size: 0 is out of range for a collective (1 to 1073741824 bytes)"},
		{"perftest", 8 << 20, ""},
		{"perftest", 8<<20 + 1, "workload.size: 8388609 is out of range (0 to 8388608 bytes)"},
		{"stream", 9 << 20, "workload.size: 9437184 is out of range (0 to 8388608 bytes)"},
	} {
		c := Defaults()
		c.Kind, c.Size = tc.kind, tc.size
		if tc.want == "" {
			assert.NoError(t, c.Validate("workload"), "%s %d", tc.kind, tc.size)
		} else {
			assert.EqualError(t, c.Validate("workload"), tc.want)
		}
	}
}
