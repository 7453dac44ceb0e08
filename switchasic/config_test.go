package switchasic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/hcasim/hcasim/components"
)

func TestDefaultsValid(t *testing.T) {
	c := Defaults()
	require.NoError(t, c.Validate())
	// 40+40+40 cycles at 1000 MHz (1000 ps per cycle) = 120 ns.
	assert.Equal(t, int64(120_000), int64(c.PipelinePS()))
	// OpenSM default SL2VL with 15 VLs is the table itself: SL15 → VL7.
	tab := c.SL2VLTable()
	assert.Equal(t, uint8(14), tab[14])
	assert.Equal(t, uint8(7), tab[15])
	// With 4 VLs each VL is masked with 3 (the same as modulo 4): SL5 → 1,
	// SL15 → 7 & 3 = 3.
	c.VLs = 4
	tab = c.SL2VLTable()
	assert.Equal(t, uint8(1), tab[5])
	assert.Equal(t, uint8(3), tab[15])
	// VLArb entries fold to vl & (vls − 1), as OpenSM programs them: with 2
	// VLs a table of VLs 2 and 3 serves VLs 0 and 1, so it is valid.
	c.VLs = 2
	c.VLArbHigh = nil
	c.VLArbLow = []VLArbConfig{{VL: 2, Weight: 4}, {VL: 3, Weight: 8}}
	require.NoError(t, c.Validate())
	_, low := c.VLArbTables()
	assert.Equal(t, []components.VLArbEntry{{VL: 0, Weight: 4}, {VL: 1, Weight: 8}}, low)
	c = Defaults()
	// A 4122-byte packet (4 KiB MTU) needs 65 credits = 4160 bytes; 12800 fits.
	assert.NoError(t, c.CheckPacketFits(4122))
	c.VLBufferBytes = 4096
	assert.EqualError(t, c.CheckPacketFits(4122),
		"switch.vl_buffer_bytes: 4096 cannot hold one 4122-byte packet of the link MTU (at least 4160 bytes needed)")
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Config)
		want   string
	}{
		{"radix", func(c *Config) { c.Radix = 300 }, "switch.radix: 300 is out of range (2 to 256)"},
		{"vls", func(c *Config) { c.VLs = 3 }, "switch.vls: 3 is not a VL count an IB port supports (1, 2, 4, 8, 15)"},
		{"buffer", func(c *Config) { c.VLBufferBytes = 100 }, "switch.vl_buffer_bytes: 100 is not a positive multiple of 64 (one credit is 64 bytes)"},
		{"shared", func(c *Config) { c.SharedBufferBytes = -64 }, "switch.shared_buffer_bytes: -64 is not a multiple of 64 at least 0"},
		{"credit window", func(c *Config) { c.VLBufferBytes = 2049 * 64 },
			"switch.vl_buffer_bytes: 131136 plus shared_buffer_bytes 0 is 2049 credits, more than one VL's 12-bit credit window addresses (at most 2048 credits, 131072 bytes)"},
		{"queueing", func(c *Config) { c.Queueing = "oq" }, `switch.queueing: "oq" is not a queueing discipline (fifo, voq)`},
		{"mcast replication", func(c *Config) { c.McastReplication = "wait" }, `switch.mcast_replication: "wait" is not a multicast replication policy (split, hold)`},
		{"mcast replication empty", func(c *Config) { c.McastReplication = "" }, `switch.mcast_replication: "" is not a multicast replication policy (split, hold)`},
		{"allocator", func(c *Config) { c.Allocator = "pim" }, `switch.allocator: "pim" is not an allocator (separable, islip, wavefront)`},
		{"iterations", func(c *Config) { c.ISLIPIterations = 0 }, "switch.islip_iterations: 0 is out of range (1 to radix 64)"},
		{"speedup", func(c *Config) { c.Speedup = 0 }, "switch.speedup: 0 is out of range (1 to 8)"},
		{"datapath", func(c *Config) { c.DatapathBytes = 0 }, "switch.datapath_bytes: 0 is out of range (1 to 4096)"},
		{"clock", func(c *Config) { c.CoreClockMHz = 0 }, "switch.core_clock_mhz: 0 is out of range (1 to 10000)"},
		{"route", func(c *Config) { c.RouteCycles = -1 }, "switch.route_cycles: -1 is out of range (0 to 100000)"},
		{"vlarb vl", func(c *Config) { c.VLArbLow[2].VL = 15 }, "switch.vlarb_low[2].vl: 15 is not a data VL (0 to 14)"},
		{"vlarb weight", func(c *Config) { c.VLArbHigh[0].Weight = 256 }, "switch.vlarb_high[0].weight: 256 is out of range (0 to 255, in 64-byte units)"},
		{"vlarb size", func(c *Config) { c.VLArbLow = make([]VLArbConfig, 65) }, "switch.vlarb_low: 65 entries, at most 64 allowed"},
		{"vlarb coverage", func(c *Config) { c.VLArbHigh = nil },
			"switch.vlarb_high/vlarb_low: VL 0 (a data VL below vls 15) has no entry with weight > 0 (an entry's vl counts as vl & 15, as OpenSM masks it for 15 VLs), so its packets could never leave"},
		{"high limit", func(c *Config) { c.VLHighLimit = 256 }, "switch.vl_high_limit: 256 is out of range (0 to 255; 255 = unbounded)"},
		{"vlarb folded coverage", func(c *Config) {
			// With 4 VLs the entries fold to 0, 1, 1, 1 (vl & 3): VL 2 is unserved.
			c.VLs = 4
			c.VLArbHigh = nil
			c.VLArbLow = []VLArbConfig{{VL: 4, Weight: 4}, {VL: 1, Weight: 4}, {VL: 5, Weight: 4}, {VL: 13, Weight: 4}}
		}, "switch.vlarb_high/vlarb_low: VL 2 (a data VL below vls 4) has no entry with weight > 0 (an entry's vl counts as vl & 3, as OpenSM masks it for 4 VLs), so its packets could never leave"},
		{"sl2vl len", func(c *Config) { c.SL2VL = []int{0} }, "switch.sl2vl: 1 entries, want 16 (one per SL) or none for the default"},
		{"sl2vl vl", func(c *Config) {
			c.VLs = 2
			c.SL2VL = []int{0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15}
		}, "switch.sl2vl[2]: vl 2 is not a data VL of this port (0 to 1) or 15 (drop)"},
		{"pair table len", func(c *Config) {
			c.SL2VLPairs = []SL2VLPairConfig{{In: "host", Out: "up", SL2VL: []int{0, 1}}}
		}, "switch.sl2vl_pairs[0].sl2vl: 2 entries, want 16 (one VL per SL)"},
		{"pair table vl", func(c *Config) {
			c.VLs = 2
			c.SL2VLPairs = []SL2VLPairConfig{{}, {In: "host", SL2VL: []int{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0}}}
			c.SL2VLPairs[0].SL2VL = make([]int, 16)
		}, "switch.sl2vl_pairs[1].sl2vl[14]: vl 3 is not a data VL of this port (0 to 1) or 15 (drop)"},
		{"pair class", func(c *Config) {
			c.SL2VLPairs = []SL2VLPairConfig{{In: "uplink", SL2VL: make([]int, 16)}}
		}, `switch.sl2vl_pairs[0].in: "uplink" is not a port class or a list of port numbers (allowed: any, host, switch, up, down, or IB port numbers 1 to 256 such as "1-4,7")`},
		{"pair port 0", func(c *Config) {
			c.SL2VLPairs = []SL2VLPairConfig{{Out: "0-3", SL2VL: make([]int, 16)}}
		}, `switch.sl2vl_pairs[0].out: "0-3" names port 0, which is not an external port (allowed: any, host, switch, up, down, or IB port numbers 1 to 256 such as "1-4,7")`},
		{"pair port 257", func(c *Config) {
			c.SL2VLPairs = []SL2VLPairConfig{{Out: "1,257", SL2VL: make([]int, 16)}}
		}, `switch.sl2vl_pairs[0].out: "1,257" names port 257, which is not an external port (allowed: any, host, switch, up, down, or IB port numbers 1 to 256 such as "1-4,7")`},
		{"pair backwards", func(c *Config) {
			c.SL2VLPairs = []SL2VLPairConfig{{In: "5-3", SL2VL: make([]int, 16)}}
		}, `switch.sl2vl_pairs[0].in: "5-3" has the range 5-3, which runs backwards (allowed: any, host, switch, up, down, or IB port numbers 1 to 256 such as "1-4,7")`},
		{"pair empty item", func(c *Config) {
			c.SL2VLPairs = []SL2VLPairConfig{{In: "1,,2", SL2VL: make([]int, 16)}}
		}, `switch.sl2vl_pairs[0].in: "1,,2" is not a port class or a list of port numbers (allowed: any, host, switch, up, down, or IB port numbers 1 to 256 such as "1-4,7")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.modify(&c)
			assert.EqualError(t, c.Validate(), tc.want)
		})
	}
}

// TestConfigYAML: the keys scripts use are spelled as the issue says, and a
// partial YAML section overrides only what it names.
func TestConfigYAML(t *testing.T) {
	c := Defaults()
	src := `
radix: 16
vls: 2
vl_buffer_bytes: 8192
queueing: fifo
allocator: wavefront
cut_through: false
vlarb_high: [{vl: 1, weight: 8}]
vlarb_low: [{vl: 0, weight: 2}, {vl: 1, weight: 2}]
vl_high_limit: 4
mcast_replication: hold
`
	require.NoError(t, yaml.Unmarshal([]byte(src), &c))
	require.NoError(t, c.Validate())
	assert.Equal(t, 16, c.Radix)
	assert.Equal(t, 2, c.VLs)
	assert.Equal(t, 8192, c.VLBufferBytes)
	assert.Equal(t, QueueFIFO, c.Queueing)
	assert.Equal(t, "wavefront", c.Allocator)
	assert.False(t, c.CutThrough)
	assert.Equal(t, []VLArbConfig{{VL: 1, Weight: 8}}, c.VLArbHigh)
	assert.Equal(t, 4, c.VLHighLimit)
	assert.Equal(t, 40, c.RouteCycles) // untouched default
	assert.Equal(t, McastHold, c.McastReplication)
	assert.Equal(t, McastSplit, Defaults().McastReplication)
}

// TestParsePortSelector: classes by name, empty as any, port lists as
// sorted sets of IB port numbers (ranges inclusive, repeats merged).
func TestParsePortSelector(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want PortSelector
	}{
		{"", PortSelector{Class: PortsAny}},
		{"up", PortSelector{Class: PortsUp}},
		{"host", PortSelector{Class: PortsHost}},
		{"7", PortSelector{Ports: []int{7}}},
		{"5-7, 1,6", PortSelector{Ports: []int{1, 5, 6, 7}}},
		{"256", PortSelector{Ports: []int{256}}},
	} {
		got, err := ParsePortSelector("k", tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	sel, err := ParsePortSelector("k", "3-4,1")
	require.NoError(t, err)
	assert.Equal(t, "1,3,4", sel.String())
}
