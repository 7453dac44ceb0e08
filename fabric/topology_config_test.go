package fabric

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var linkCable = CableSpec{LengthM: 2, Medium: Copper}

func TestTopologyConfigDefaults(t *testing.T) {
	c := DefaultTopology()
	require.NoError(t, c.Validate())
	topo, err := c.Build(64, linkCable)
	require.NoError(t, err)
	assert.Len(t, topo.Hosts(), 2)
	assert.Empty(t, topo.Switches())
}

func TestTopologyConfigYAML(t *testing.T) {
	src := `
kind: fat-tree-2
radix: 8
oversubscription: 1
spines: 2
routing: dmodk
cable_length_m: 5
`
	c := DefaultTopology()
	require.NoError(t, yaml.Unmarshal([]byte(src), &c))
	require.NoError(t, c.Validate())
	require.NoError(t, c.CheckShape(64))
	topo, sn, err := c.Fabric(64, linkCable, 1, 1, nil)
	require.NoError(t, err)
	// radix 8 (topology.radix wins over switch.radix 64), 2 spines: 4 leaves × 4 hosts.
	assert.Len(t, topo.Hosts(), 16)
	// Cables 0..15 are host cables (link.length_m, 2 m); the rest join a leaf
	// to a spine and take topology.cable_length_m.
	for i, c := range topo.Cables {
		want := 2.0
		if i >= 16 {
			want = 5.0
		}
		assert.Equal(t, want, c.LengthM, topo.PortName(c.A))
	}
	assert.Equal(t, RoutingDModK, sn.Routing)
}

func TestTopologyConfigBuildKinds(t *testing.T) {
	cases := []struct {
		name            string
		cfg             TopologyConfig
		switchRadix     int
		hosts, switches int
	}{
		{"single switch fills switch.radix", TopologyConfig{Kind: KindSingleSwitch}, 16, 16, 1},
		{"single switch 5 hosts", TopologyConfig{Kind: KindSingleSwitch, Hosts: 5}, 16, 5, 1},
		// radix 4 → k³/4 = 16 hosts, 4·2 + 4·2 + 4 = 20 switches.
		{"fat-tree-3 radix 4", TopologyConfig{Kind: KindFatTree3, Radix: 4}, 64, 16, 20},
		// 2:1 on radix 12: 8 down; 20 hosts → 3 leaves, 4 spines.
		{"fat-tree-2 2:1", TopologyConfig{Kind: KindFatTree2, Oversubscription: 2, Hosts: 20}, 12, 20, 7},
		{"file", TopologyConfig{Kind: KindFile, File: "testdata/ring5.topo", Routing: RoutingUpDown}, 64, 5, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			if c.Oversubscription == 0 {
				c.Oversubscription = 1
			}
			if c.Routing == "" {
				c.Routing = RoutingMinHop
			}
			require.NoError(t, c.CheckShape(tc.switchRadix))
			topo, sn, err := c.Fabric(tc.switchRadix, linkCable, 1, 1, nil)
			require.NoError(t, err)
			assert.Len(t, topo.Hosts(), tc.hosts)
			assert.Len(t, topo.Switches(), tc.switches)
			assert.NotNil(t, sn)
		})
	}
}

func TestTopologyConfigErrors(t *testing.T) {
	base := DefaultTopology()
	with := func(f func(c *TopologyConfig)) TopologyConfig {
		c := base
		f(&c)
		return c
	}
	cases := []struct {
		cfg  TopologyConfig
		want string
	}{
		{with(func(c *TopologyConfig) { c.Kind = "torus" }), `topology.kind: "torus" is not a topology (back-to-back, single-switch, fat-tree-2, fat-tree-3, dragonfly-plus, file)`},
		{with(func(c *TopologyConfig) { c.Routing = "lash" }), `topology.routing: "lash" is not a routing engine (minhop, dmodk, updown, random)`},
		{with(func(c *TopologyConfig) { c.Hosts = 3 }), "topology.hosts: 3 hosts cannot be back to back (0 or 2)"},
		{with(func(c *TopologyConfig) { c.Hosts = -1 }), "topology.hosts: -1 is out of range (0 = every host port, up to 49151)"},
		{with(func(c *TopologyConfig) { c.Radix = 300 }), "topology.radix: 300 is out of range (0 = switch.radix, 2..256)"},
		{with(func(c *TopologyConfig) { c.Oversubscription = 0 }), "topology.oversubscription: 0 is out of range (above 0, up to 255; 1 = non-blocking)"},
		{with(func(c *TopologyConfig) { c.CableLengthM = -2 }), "topology.cable_length_m: -2 is out of range (0 = link.length_m, up to 100000 m)"},
		// Knobs that would change nothing on a shape without switch-to-switch
		// cables, or without switches, were silently ignored.
		{with(func(c *TopologyConfig) { c.CableLengthM = 10 }), "topology.cable_length_m: 10 is set, but topology.kind back-to-back does not use it (no switches; the host cable takes link.length_m; remove the key)"},
		{with(func(c *TopologyConfig) { c.Radix = 8 }), "topology.radix: 8 is set, but topology.kind back-to-back does not use it (no switches; remove the key)"},
		{with(func(c *TopologyConfig) { c.Kind = KindSingleSwitch; c.CableLengthM = 10 }), "topology.cable_length_m: 10 is set, but topology.kind single-switch does not use it (one switch, so no switch-to-switch cables; host cables take link.length_m; remove the key)"},
		{with(func(c *TopologyConfig) { c.Kind = KindSingleSwitch; c.Spines = 2 }), "topology.spines: 2 is set, but topology.kind single-switch does not use it (one switch; remove the key)"},
		{with(func(c *TopologyConfig) { c.Kind = KindFatTree3; c.Oversubscription = 2 }), "topology.oversubscription: 2 is set, but topology.kind fat-tree-3 does not use it (a k-ary three-level tree is 1:1; remove the key)"},
		{with(func(c *TopologyConfig) { c.Kind = KindFatTree2; c.File = "x.topo" }), `topology.file: "x.topo" is set, but topology.kind fat-tree-2 does not use it (set topology.kind: file to use it)`},
		{with(func(c *TopologyConfig) { c.Kind = KindFile }), "topology.file: is empty, but topology.kind file needs a topology file (or its contents in topology.text)"},
		// A builder's key beside a file says where the file gives it and
		// what to do: remove it, or (a file named) set the section whole,
		// which drops the builder's keys a --set of kind and file keeps.
		{with(func(c *TopologyConfig) { c.Kind = KindFile; c.File = "f"; c.Hosts = 4 }), "topology.hosts: 4 is set, but topology.kind file does not use it (the file's host lines are the hosts; remove the key, or replace the whole section: --set 'topology={kind: file, file: f}')"},
		{with(func(c *TopologyConfig) { c.Kind = KindFile; c.File = "f"; c.CableLengthM = 4 }), "topology.cable_length_m: 4 is set, but topology.kind file does not use it (give a cable its length (5m) on its line in the file, link.length_m where it gives none; remove the key, or replace the whole section: --set 'topology={kind: file, file: f}')"},
		{with(func(c *TopologyConfig) { c.Kind = KindFile; c.File = "x.topo"; c.Radix = 8 }), "topology.radix: 8 is set, but topology.kind file does not use it (each switch line in the file gives its ports; remove the key, or replace the whole section: --set 'topology={kind: file, file: x.topo}')"},
		// The whole section keeps the routing the config chose.
		{with(func(c *TopologyConfig) {
			c.Kind = KindFile
			c.File = "x.topo"
			c.Leaves = 4
			c.Routing = RoutingDModK
			c.AdaptiveRouting = true
		}), "topology.leaves: 4 is set, but topology.kind file does not use it (the file's host, switch and cable lines describe the fabric; remove the key, or replace the whole section: --set 'topology={kind: file, file: x.topo, routing: dmodk, adaptive_routing: true}')"},
		{with(func(c *TopologyConfig) { c.Kind = KindFile; c.File = "x.topo"; c.Oversubscription = 2 }), "topology.oversubscription: 2 is set, but topology.kind file does not use it (the file's host, switch and cable lines describe the fabric; remove the key, or replace the whole section: --set 'topology={kind: file, file: x.topo}')"},
		{with(func(c *TopologyConfig) { c.Kind = KindFile; c.File = "x.topo"; c.HostLinkGeneration = "HDR" }), "topology.host_link_generation: HDR is set, but topology.kind file does not use it (give a cable its own gen= (and fec=) on its line in the file; remove the key, or replace the whole section: --set 'topology={kind: file, file: x.topo}')"},
		// The fabric in topology.text: no file to name, so remove the key.
		{with(func(c *TopologyConfig) { c.Kind = KindFile; c.Text = "host H\n"; c.Spines = 2 }), "topology.spines: 2 is set, but topology.kind file does not use it (the file's host, switch and cable lines describe the fabric; remove the key)"},
		{with(func(c *TopologyConfig) { c.Kind = KindFile; c.Text = "host H\n"; c.HostLinkWidth = "1x" }), "topology.host_link_width: 1x is set, but topology.kind file does not use it (give a cable its own width= on its line in the file; remove the key)"},
	}
	for _, tc := range cases {
		assert.EqualError(t, tc.cfg.Validate(), tc.want)
	}

	shape := []struct {
		cfg         TopologyConfig
		switchRadix int
		want        string
	}{
		{with(func(c *TopologyConfig) { c.Kind = KindSingleSwitch; c.Hosts = 40 }), 32, "topology.hosts: 40 does not fit a single switch of radix 32 (2..32)"},
		{with(func(c *TopologyConfig) { c.Kind = KindFatTree2; c.Oversubscription = 2 }), 8, "topology.oversubscription: 2 does not split radix 8 into whole down and up ports (down = radix × o / (1 + o) = 5.333333333333333)"},
		{with(func(c *TopologyConfig) { c.Kind = KindFatTree3 }), 7, "topology.radix: 7 must be even and in 2..256 for a three-level fat tree"},
	}
	for _, tc := range shape {
		require.NoError(t, tc.cfg.Validate())
		assert.EqualError(t, tc.cfg.CheckShape(tc.switchRadix), tc.want)
	}

	missing := with(func(c *TopologyConfig) { c.Kind = KindFile; c.File = "testdata/missing.topo" })
	_, err := missing.Build(8, linkCable)
	assert.ErrorContains(t, err, "topology.file: open testdata/missing.topo")

	// A ring routed by shortest path is refused before the run.
	ring := with(func(c *TopologyConfig) { c.Kind = KindFile; c.File = "testdata/ring5.topo" })
	_, _, err = ring.Fabric(8, linkCable, 1, 1, nil)
	assert.ErrorContains(t, err, "topology.routing: deadlock: minhop routing has a cycle of 5 channels")
}

// TestDataSLToDropVLRefused: a workload SL that switch.sl2vl maps to VL 15
// (drop) would lose every data packet; it is refused before the run (it used
// to reach the deadlock check, which indexed channels by VL 15 and panicked).
// Another SL on VL 15 is allowed: nothing uses it.
func TestDataSLToDropVLRefused(t *testing.T) {
	base := []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=8", "switch.vls=1",
		"workload.kind=uniform", "workload.measure_ns=1000", "switch.sl2vl=[0,15,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"}
	_, err := Load(nil, append(base, "workload.sl=1"))
	assert.EqualError(t, err, "workload.sl: SL 1 maps to VL 15 (drop) in switch.sl2vl, so the switches would "+
		"drop every data packet; map it to a data VL (below switch.vls 1) or use another SL")
	l, err := Load(nil, append(base, "workload.sl=0"))
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, m["packets_created"], m["packets_delivered"])

	// The deadlock check itself ends a route whose source maps the SL to VL 15.
	single := DefaultTopology()
	single.Kind, single.Hosts = KindSingleSwitch, 4
	table := SL2VLTable{}
	table[1] = 15
	_, sn, err := single.BuildFabric(8, linkCable, SubnetOptions{Seed: 1, VLs: 1, SL2VL: &table}, []uint8{1})
	require.NoError(t, err)
	_, adj, err := sn.DependencyGraph([]uint8{1})
	require.NoError(t, err)
	for id, next := range adj {
		assert.Empty(t, next, "channel %d has dependencies although SL 1 enters no VL", id)
	}
}

// TestBackgroundNeedsHosts: perftest background traffic runs on the hosts
// besides the two perftest hosts; with none it was silently left out.
func TestBackgroundNeedsHosts(t *testing.T) {
	base := []string{"workload.kind=perftest", "workload.test=write_lat", "workload.iterations=10", "workload.background=true"}
	_, err := Load(nil, append(base, "topology.kind=back-to-back"))
	assert.EqualError(t, err, "workload.background: true, but topology.kind back-to-back has only the two perftest hosts; background traffic needs a fabric with more")
	l, err := Load(nil, append(base, "topology.kind=single-switch", "topology.hosts=2", "switch.radix=4"))
	require.NoError(t, err)
	_, err = Run(l, RunOptions{})
	assert.EqualError(t, err, "workload.background: true, but the fabric's 2 hosts are the two perftest hosts; background traffic needs more (topology.hosts)")
	var un *UnsupportedError
	assert.ErrorAs(t, err, &un, "a user's error (exit 2)")
}

// TestIncastAcceptedPerSender: incast's hosts but host 0 each offer the
// load; host 0 only receives. At 0.1 its link carries 3 × 0.1 = 0.3 of its
// rate, far from saturation, so each sender's load is accepted: about 0.1
// (≈ 460 packets of 1,050 B per sender in 100 µs at 400 Gb/s, Poisson noise
// ≈ 5 %). Dividing by all four hosts gave 3 × 0.1 / 4 = 0.075, which a knee
// search read as saturated.
func TestIncastAcceptedPerSender(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=4", "switch.vls=1",
		"workload.kind=incast", "workload.size=1024", "workload.offered_load=0.1",
		"workload.warmup_ns=5000", "workload.measure_ns=100000"})
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	assert.InDelta(t, 0.1, m["accepted_load"].(float64), 0.01)
	assert.Equal(t, m["packets_created"], m["packets_delivered"])
}

// TestRefreshMustLeaveTheWire: a refresh puts one flow-control packet per
// data VL ahead of data. On SDR 1x (2 Gb/s of data) a 6-byte FC packet
// takes 6 × 8 / 2 = 24 ns; with 15 VLs a refresh is 360 ns of wire, so a
// period of 360 ns or less is all flow control and no data packet ever
// starts (it ran with packets_sent 0 and no error). Refreshes may take at
// most half the wire: 720 ns here.
func TestRefreshMustLeaveTheWire(t *testing.T) {
	base := []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=4", "switch.vls=15",
		"link.generation=SDR", "link.width=1x", "link.mtu=256", "workload.kind=uniform", "workload.size=256"}
	_, err := Load(nil, append(base, "link.fc_refresh_ns=719"))
	assert.EqualError(t, err, "link.fc_refresh_ns: 719 is too short: each refresh puts a flow-control packet per data VL ahead of data, 360.000 ns of this link's wire for switch.vls 15; give at least 720.000 ns (refreshes at most half the wire)")
	_, err = Load(nil, append(base, "link.fc_refresh_ns=720"))
	assert.NoError(t, err)
}

// TestHCASLToDropVLRefused: HCAs send on workload.sl (perftest --sl,
// NCCL_IB_SL), and a perftest's background on workload.background_sl (or
// workload.sl); an SL the run sends on that switch.sl2vl maps to VL 15 is
// refused on one line naming the key that chose that SL.
func TestHCASLToDropVLRefused(t *testing.T) {
	drop0 := "switch.sl2vl=[15,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]"
	drop1 := "switch.sl2vl=[0,15,1,1,1,1,1,1,1,1,1,1,1,1,1,1]"
	base := []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=4", "switch.vls=2", "hca.profile=cx7"}
	for _, kind := range []string{"perftest", "allreduce", "alltoall"} {
		_, err := Load(nil, append(base, "workload.kind="+kind, drop0))
		assert.EqualError(t, err, "switch.sl2vl: SL 0 maps to VL 15 (drop), but the HCAs of workload.kind "+kind+
			" send on SL 0 (workload.sl), so every packet they send would be dropped; map SL 0 to a data VL (below switch.vls 2)")
		_, err = Load(nil, append(base, "workload.kind="+kind, drop1, "workload.sl=1"))
		assert.EqualError(t, err, "workload.sl: SL 1 maps to VL 15 (drop) in switch.sl2vl, so the switches would drop every data packet; map it to a data VL (below switch.vls 2) or use another SL")
		// On SL 1 the HCAs never use SL 0, which may then drop.
		_, err = Load(nil, append(base, "workload.kind="+kind, drop0, "workload.sl=1"))
		assert.NoError(t, err, kind)
	}
	// Back to back a collective's HCA ports use the table too (it used to
	// run with every packet on VL 15, which is not flow-controlled), and so
	// do a perftest's on an SL other than 0.
	_, err := Load(nil, []string{"topology.kind=back-to-back", "switch.vls=2", drop0, "workload.kind=allreduce"})
	assert.ErrorContains(t, err, "switch.sl2vl: SL 0 maps to VL 15 (drop), but the HCAs of workload.kind allreduce")
	_, err = Load(nil, []string{"topology.kind=back-to-back", "switch.vls=2", drop1, "workload.kind=perftest", "workload.sl=1"})
	assert.EqualError(t, err, "workload.sl: SL 1 maps to VL 15 (drop) in switch.sl2vl, so the HCA ports, which map SL to VL with it, "+
		"could not send a data packet; map it to a data VL (below switch.vls 2) or use another SL", "no switches back to back")
	// A back-to-back perftest on SL 0 keeps its one VL whatever the table.
	_, err = Load(nil, []string{"topology.kind=back-to-back", "switch.vls=2", drop0, "workload.kind=perftest"})
	assert.NoError(t, err)

	// A stream (back to back only) sends on workload.vl whatever its SL:
	// neither end looks switch.sl2vl up and there is no switch to drop
	// anything, so an SL the table drops is no reason to refuse it (it
	// was, wrongly, once HCAs' SLs were checked back to back).
	_, err = Load(nil, []string{"topology.kind=back-to-back", "switch.vls=2", drop1, "workload.kind=stream", "workload.sl=1"})
	assert.NoError(t, err)

	// The background's SL is checked only when there is a background.
	_, err = Load(nil, append(base, "workload.kind=perftest", drop1, "workload.background_sl=1"))
	assert.NoError(t, err)
	_, err = Load(nil, append(base, "workload.kind=perftest", drop1, "workload.background_sl=1", "workload.background=true"))
	assert.EqualError(t, err, "workload.background_sl: SL 1 maps to VL 15 (drop) in switch.sl2vl, so the switches would drop every background packet; map it to a data VL (below switch.vls 2) or use another SL")
	_, err = Load(nil, append(base, "workload.kind=perftest", "workload.background_sl=16"))
	assert.EqualError(t, err, "workload.background_sl: 16 is not a service level (0 to 15; leave it out for workload.sl)")

	// Packet endpoints send on workload.sl, SL 1 here, which the table
	// keeps on VL 1: nothing is dropped.
	_, err = Load(nil, append(base, "workload.kind=uniform", "workload.measure_ns=1000", "workload.sl=1", drop0))
	assert.NoError(t, err)

	five := 5
	for _, tc := range []struct {
		kind       string
		background bool
		bgSL       *int
		want       []uint8
	}{
		{"uniform", false, nil, []uint8{3}},
		{"perftest", false, nil, []uint8{3}},
		{"perftest", true, nil, []uint8{3}},
		{"perftest", false, &five, []uint8{3}},
		{"perftest", true, &five, []uint8{3, 5}},
		{"allreduce", false, nil, []uint8{3}},
	} {
		c := Defaults()
		c.Workload.Kind, c.Workload.SL, c.Workload.Background, c.Workload.BackgroundSL = tc.kind, 3, tc.background, tc.bgSL
		assert.Equal(t, tc.want, c.wireSLs(), "%s background %v", tc.kind, tc.background)
	}
}

// TestTopologyText: a topology file's contents given in topology.text build
// the fabric the file builds (the same nodes, ports and cables, written
// back the same by FormatTopology), its errors name topology.text and the
// line, and text and file together, or text on another kind, are refused.
func TestTopologyText(t *testing.T) {
	data, err := os.ReadFile("testdata/ring5.topo")
	require.NoError(t, err)
	fromFile := TopologyConfig{Kind: KindFile, File: "testdata/ring5.topo", Routing: RoutingUpDown, Oversubscription: 1}
	fromText := TopologyConfig{Kind: KindFile, Text: string(data), Routing: RoutingUpDown, Oversubscription: 1}
	require.NoError(t, fromText.CheckShape(64))
	a, err := fromFile.Build(64, linkCable)
	require.NoError(t, err)
	b, err := fromText.Build(64, linkCable)
	require.NoError(t, err)
	var wa, wb strings.Builder
	require.NoError(t, FormatTopology(&wa, a))
	require.NoError(t, FormatTopology(&wb, b))
	assert.Equal(t, wa.String(), wb.String())
	assert.Len(t, b.Switches(), 5)

	bad := TopologyConfig{Kind: KindFile, Text: "switch A 4\nhost H\ncable H.Port[1]\n", Routing: RoutingMinHop, Oversubscription: 1}
	_, err = bad.Build(64, linkCable)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "topology.text:3: "), err.Error())

	both := fromText
	both.File = "testdata/ring5.topo"
	assert.EqualError(t, both.Validate(), `topology.text: is set, and so is topology.file "testdata/ring5.topo": give the fabric one way`)
	other := TopologyConfig{Kind: KindSingleSwitch, Text: "switch A 4\n", Routing: RoutingMinHop, Oversubscription: 1}
	assert.EqualError(t, other.Validate(), "topology.text: 11 bytes is set, but topology.kind single-switch does not use it (set topology.kind: file to use it)")
}
