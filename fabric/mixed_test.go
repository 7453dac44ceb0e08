package fabric

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/verif"
)

// mixedTopo is one radix-4 switch with host 0 on a 1x cable (an NDR port
// whose cable trained down to one lane) and host 1 on a 4x cable (the link
// section's width); both 2 m copper, NDR.
const mixedTopo = `
switch Fabric.Switch[0] 4
host Fabric.Host[0]
host Fabric.Host[1]
cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] width=1x
cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2]
`

// mixedConfig is mixedTopo under the NDR link defaults (4x, 2 m copper,
// RS(544,514) with its derived latency), one VL.
func mixedConfig(extra string) string {
	return `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, medium: copper, mtu: 4096}
hca: {profile: cx7}
switch: {radix: 4, vls: 1, vl_buffer_bytes: 66560}
topology:
  kind: file
  text: |` + strings.ReplaceAll(mixedTopo, "\n", "\n    ") + `
` + extra
}

// TestTopologyFileCableSpeeds: width=, gen= and fec= land on the cable,
// round-trip through FormatTopology, and set the cable's timing; a cable
// of another generation takes its default FEC, one of the link section's
// keeps link.fec.
func TestTopologyFileCableSpeeds(t *testing.T) {
	src := `
switch Fabric.Switch[0] 4
host Fabric.Host[0]
host Fabric.Host[1]
host Fabric.Host[2]
cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] width=1X
cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2] gen=ndr width=2x
cable Fabric.Host[2].Port[1] Fabric.Switch[0].Port[3] 0m gen=EDR fec=llrs271
`
	lc := link.Defaults()
	lc.Generation, lc.FEC = "EDR", "rs528" // an EDR link section with RS(528,514)
	def := CableSpec{LengthM: 0, Medium: Copper, Link: lc}
	topo, err := ParseTopology(strings.NewReader(src), "s.topo", def)
	require.NoError(t, err)
	c := topo.Cables
	assert.Equal(t, [3]string{"1x", "", ""}, [3]string{c[0].Width, c[0].Gen, c[0].FEC})
	assert.Equal(t, [3]string{"2x", "NDR", ""}, [3]string{c[1].Width, c[1].Gen, c[1].FEC})
	assert.Equal(t, [3]string{"", "EDR", "llrs271"}, [3]string{c[2].Width, c[2].Gen, c[2].FEC})

	var buf bytes.Buffer
	require.NoError(t, FormatTopology(&buf, topo))
	back, err := ParseTopology(&buf, "back", def)
	require.NoError(t, err)
	assert.Equal(t, topo.Cables, back.Cables)

	cfg := &Config{Link: lc}
	// 1x EDR keeps link.fec rs528: a 5280-bit codeword at one 25.78125
	// Gb/s lane is 204.8 ns (4 × the 51.2 ns of 4x, ib-facts §1); data
	// 25 Gb/s = 320 ps per byte.
	t0 := cableTiming(cfg, c[0])
	assert.Equal(t, ib.PS(204800), t0.FEC)
	assert.Equal(t, ib.PS(320*100), t0.Serialization(100))
	// 2x NDR, another generation: its default FEC RS(544,514), 5440 bits
	// at 2 × 106.25 Gb/s = 25.6 ns; data 2 × 106.25 × 16/17 = 200 Gb/s =
	// 40 ps per byte.
	t1 := cableTiming(cfg, c[1])
	assert.Equal(t, ib.PS(25600), t1.FEC)
	assert.Equal(t, ib.PS(4000), t1.Serialization(100))
	// 4x EDR with LL RS(271,257): 2710 bits at 4 × 25.78125 Gb/s = 26.28 ns.
	t2 := cableTiming(cfg, c[2])
	assert.Equal(t, ib.PS(26279), t2.FEC)
	assert.Equal(t, ib.PS(8000), t2.Serialization(100))
}

// TestCableFECLatency: a cable's fec_ns= is its FEC latency, both
// directions, in place of link.fec_latency_ns or the derived one; it
// round-trips through FormatTopology, leaves the data rate alone (the
// cable is not "mixed"), and the partition lookahead takes it. Under the
// NDR defaults (4x RS(544,514): a 5440-bit codeword at 4 × 106.25 Gb/s =
// 12.8 ns derived) with link.fec_latency_ns: 60: the plain cable 60 ns,
// the one with fec_ns=5 5 ns, the 1x one with fec_ns=250.5 250.5 ns.
func TestCableFECLatency(t *testing.T) {
	src := `
switch Fabric.Switch[0] 4
switch Fabric.Switch[1] 4
host Fabric.Host[0]
host Fabric.Host[1]
cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] width=1x fec_ns=250.5
cable Fabric.Host[1].Port[1] Fabric.Switch[1].Port[1]
cable Fabric.Switch[0].Port[2] Fabric.Switch[1].Port[2] 2m fec_ns=5
`
	lc := link.Defaults()
	lc.FECLatencyNs = 60
	cfg := &Config{Link: lc}
	topo, err := ParseTopology(strings.NewReader(src), "f.topo", hostCable(cfg))
	require.NoError(t, err)
	c := topo.Cables
	assert.Equal(t, [3]bool{true, false, true}, [3]bool{c[0].HasFECNs, c[1].HasFECNs, c[2].HasFECNs})
	assert.False(t, c[2].Mixed(), "a FEC latency alone does not change the cable's speed")

	var buf bytes.Buffer
	require.NoError(t, FormatTopology(&buf, topo))
	assert.Contains(t, buf.String(), " width=1x fec_ns=250.5\n")
	back, err := ParseTopology(&buf, "back", hostCable(cfg))
	require.NoError(t, err)
	assert.Equal(t, topo.Cables, back.Cables)

	assert.Equal(t, ib.PS(250500), cableTiming(cfg, c[0]).FEC)
	assert.Equal(t, ib.PS(60000), cableTiming(cfg, c[1]).FEC)
	assert.Equal(t, ib.PS(5000), cableTiming(cfg, c[2]).FEC)
	// Only the switch-to-switch cable crosses two partitions: its 5 ns and
	// its 2 m of copper (the same cable's latency less its FEC).
	part := Partition(topo, 2)
	require.NotEqual(t, part[0], part[1])
	look, err := lookahead(cfg, topo, part)
	require.NoError(t, err)
	assert.Equal(t, cableTiming(cfg, c[2]).Latency(), look)
	assert.Equal(t, ib.PS(5000)+cableTiming(cfg, c[2]).Propagation, look)
}

// TestTopologyFileGenUnder2xLink: under a 2x link section a cable that
// names only an older generation would be 2x of it, which does not exist.
func TestTopologyFileGenUnder2xLink(t *testing.T) {
	lc := link.Defaults()
	lc.Width = "2x"
	src := "switch Fabric.Switch[0] 4\nhost Fabric.Host[0]\nhost Fabric.Host[1]\ncable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] gen=QDR\n"
	_, err := ParseTopology(strings.NewReader(src), "t.topo", CableSpec{Link: lc})
	assert.EqualError(t, err, "t.topo:4: gen=QDR: not a generation of 2x links (link.width 2x exists from HDR on: HDR, NDR, XDR); give the cable a width too")
	// With a width of its own it is fine.
	_, err = ParseTopology(strings.NewReader(strings.Replace(src, "gen=QDR", "gen=QDR width=4x", 1)+"cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2]\n"), "t.topo", CableSpec{Link: lc})
	assert.NoError(t, err)
}

// probeHost records the packets its port receives (releasing each at its
// tail) and sends what the test hands it.
type probeHost struct {
	s    *components.Sim
	port *link.Port
	got  []probeArrival
}

type probeArrival struct{ head, tail ib.PS }

func (h *probeHost) Attach(p *link.Port)    { h.port = p }
func (h *probeHost) PortReady(p *link.Port) {}
func (h *probeHost) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	h.got = append(h.got, probeArrival{head, tail})
	p.Release(int(pkt.VL), pkt.Credits())
}

// TestSlowToFastCutThrough: a packet from the 1x host through the switch
// to the 4x host, built from the topology file as any run is. Cut-through
// may not let the 4x output outrun the 1x input: the output starts at
// max(head bound, tail bound), the tail bound being the input tail's
// clock edge + crossbar − the output's serialization, so the packet
// arrives at the 4x host compact, head to tail one 4x serialization.
//
// Derivation (ib-facts §1; switch defaults 1 GHz, route = alloc = xbar =
// 40 cycles). 1x NDR: one 106.25 Gb/s lane × 16/17 = 100 Gb/s data, 80
// ps per byte; FEC RS(544,514) one codeword 5440 b / 106.25 Gb/s = 51.2
// ns. 4x NDR: 400 Gb/s, 20 ps per byte, FEC 12.8 ns. 2 m copper: 2 ×
// 4276 = 8552 ps. An RDMA WRITE middle packet of 2024 bytes payload is
// 2050 wire bytes (26 of headers, ib-facts §2).
//
//	head at the switch      51200 + 8552            =  59752
//	tail at the switch      59752 + 2050 × 80       = 223752 (edge 224000)
//	head bound              edge(59752) + 120 cycles = 60000 + 120000 = 180000
//	tail bound              224000 + 40000 − 2050 × 20 = 223000
//	output start            223000 (the tail bound binds)
//	head at host 1          223000 + 12800 + 8552   = 244352
//	tail at host 1          244352 + 41000          = 285352
func TestSlowToFastCutThrough(t *testing.T) {
	l, err := Load([]byte(mixedConfig("workload: {kind: uniform}\n")), nil)
	require.NoError(t, err)
	cfg := &l.Config
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	require.NoError(t, err)
	s := components.NewSimOn(cfg.Sim.Engine)
	var hosts []*probeHost
	_, err = BuildNetworkOn(cfg, s, topo, sub, func(i int, lid uint16, name string) HostDevice {
		h := &probeHost{s: s}
		hosts = append(hosts, h)
		return h
	})
	require.NoError(t, err)
	require.Equal(t, int32(1), hosts[0].port.Timing().Lanes)
	require.Equal(t, int32(4), hosts[1].port.Timing().Lanes)

	pkt := s.NewPacket()
	pkt.Opcode, pkt.PayloadLen = ib.RDMAWriteMiddle, 2024
	pkt.SLID, pkt.DLID = sub.HostLID(0), sub.HostLID(1)
	require.Equal(t, 2050, pkt.WireBytes())
	require.True(t, hosts[0].port.CanSend(pkt))
	hosts[0].port.Send(pkt)
	s.StopAt(ib.Microsecond)
	require.NoError(t, s.Run())

	require.Len(t, hosts[1].got, 1)
	assert.Equal(t, probeArrival{head: 244352, tail: 285352}, hosts[1].got[0])
}

// TestFastToSlowLossless: the 4x host sends to the 1x host at its whole
// link rate, four times what the 1x cable carries, and the 1x host sends
// back at its own (offered_load is a fraction of the sender's own link).
// The switch's output to the 1x host backpressures through credits:
// under the checkers (credit conservation, buffer bounds, every packet
// delivered once) nothing is dropped, and the 4x host's share of its own
// link is at most the 1x cable's 100/400 = 0.25. Below it only by what
// else the 1x wire carries to host 1: the flow-control packets that return
// host 1's credits (6 bytes per 4122-byte packet it sends, 0.15 %) and
// refreshes: above 0.24 (host 0 starts at 4x until the switch's 64-block
// input buffer fills, which only adds).
func TestFastToSlowLossless(t *testing.T) {
	l, err := Load([]byte(mixedConfig(`workload: {kind: permutation, size: 4096, offered_load: 1.0, warmup_ns: 5000, measure_ns: 40000}
sim: {check: true}
`)), nil)
	require.NoError(t, err)
	var chk *verif.Checkers
	var view *Simulation
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		view = s
		chk = verif.AttachCheckers(verif.CheckConfig{Routes: s.Net, OnViolation: func(*verif.Violation) { s.Stop() }}, s.Blocks...)
	}})
	require.NoError(t, err)
	chk.Finish(view.Now(), view.Settled)
	require.NoError(t, chk.Err())
	assert.True(t, view.Settled)
	assert.Equal(t, true, m["drain_complete"])
	assert.EqualValues(t, 0, m["packets_dropped"])
	hl := m["host_accepted_load"].(map[string]any)
	t.Logf("host loads %v, accepted %v, rates %v", hl, m["accepted_load"], m["host_link_rate_gbps"])
	assert.Equal(t, map[string]any{"min": 100.0, "max": 400.0}, m["host_link_rate_gbps"])
	// Host 1 (1x) fills its own link; host 0 (4x) gets a quarter of its.
	assert.LessOrEqual(t, hl["min"], 0.25)
	assert.Greater(t, hl["min"], 0.24)
	// Host 1's bytes are counted where they land, at 4x, so the window
	// can hold up to one 4122-byte packet more than its 1x link carried in
	// it: 4122 / (100 Gb/s × 40 µs = 500,000 bytes) = 0.0082.
	assert.Greater(t, hl["max"], 0.98)
	assert.LessOrEqual(t, hl["max"], 1+4122.0/500000)
	assert.InDelta(t, (hl["min"].(float64)+hl["max"].(float64))/2, m["accepted_load"], 1e-12, "the mean of the two")
	// The switch's input buffer for host 0 held no more than its VL's.
	assert.LessOrEqual(t, m["switch_buf_peak_bytes"], 66560.0)
}

// TestWriteBWBoundedBySlowCable: ib_write_bw from the host on the 1x cable
// to the host on the 4x cable through one switch. The 1x NDR data rate is
// 1 lane × 106.25 Gb/s × 16/17 (256b/257b + RS(544,514), ib-facts §1) =
// 100 Gb/s; a 4096-byte payload travels in a 4122-byte packet (RDMA
// WRITE middle, 26 bytes of headers; first packets carry a RETH too), so
// the payload rate is at most 100 × 4096 / 4122 = 99.37 Gb/s, far below
// the cx7's PCIe Gen5 x16 and the 4x link. Above 0.97 of it: the
// flow-control packets returning the server's ACK credits, the RETH and
// the pipeline's fill take a percent or two of 64 KiB messages.
func TestWriteBWBoundedBySlowCable(t *testing.T) {
	l, err := Load([]byte(mixedConfig(`workload: {kind: perftest, test: write_bw, size: 65536, iterations: 200, tx_depth: 128, pattern: pair, clients: 1}
`)), nil)
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	bound := 100.0 * 4096 / 4122
	t.Logf("write_bw 1x → 4x: %.3f Gb/s (bound %.3f)", m["bw_gbps"], bound)
	assert.Equal(t, true, m["data_verified"])
	assert.LessOrEqual(t, m["bw_gbps"], bound)
	assert.Greater(t, m["bw_gbps"], 0.97*bound)
}

// TestCableSpeedKeyErrors: every new config error, one line naming the
// key, the bad value and what is allowed. The keys alone fail at Load;
// against the link section and the built fabric's ports, at
// ConfigureFabric (before any simulation).
func TestCableSpeedKeyErrors(t *testing.T) {
	tree := []string{"topology.kind=fat-tree-2", "switch.radix=4", "workload.kind=uniform"}
	cases := []struct {
		name string
		sets []string
		want string
	}{
		{"host width", []string{"topology.host_link_width=3x"}, `topology.host_link_width: "3x" is not a link width (1x, 2x, 4x, 8x, 12x)`},
		{"host generation", []string{"topology.host_link_generation=ZDR"}, `topology.host_link_generation: "ZDR" is not a link generation (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR)`},
		{"host 2x EDR", []string{"topology.host_link_width=2x", "topology.host_link_generation=EDR"}, "topology.host_link_width: 2x is not a width of EDR links (2x exists from HDR on: 1x, 4x, 8x, 12x)"},
		{"host EDR under 2x link", []string{"link.width=2x", "topology.host_link_generation=EDR"}, "topology.host_link_generation: EDR is not a generation of 2x links (link.width 2x exists from HDR on: HDR, NDR, XDR); give the cable a width too"},
		{"empty list", []string{"topology.degraded_links=[]"}, "topology.degraded_links: [] names no cable; leave the key out, or list {cable: \"Fabric.Leaf[0].Port[9]\", width: 1x}"},
		{"no cable", []string{"topology.degraded_links=[{width: 1x}]"}, "topology.degraded_links[0].cable: is empty (the port at either end of the cable, e.g. Fabric.Leaf[0].Port[9])"},
		{"nothing degraded", []string{"topology.degraded_links=[{cable: \"Fabric.Leaf[0].Port[3]\"}]"}, "topology.degraded_links[0]: Fabric.Leaf[0].Port[3] names neither a width nor a generation (width: 1x, generation: HDR)"},
		{"bad width", []string{"topology.degraded_links=[{cable: \"Fabric.Leaf[0].Port[3]\", width: 3x}]"}, `topology.degraded_links[0].width: "3x" is not a link width (1x, 2x, 4x, 8x, 12x)`},
		{"bad generation", []string{"topology.degraded_links=[{cable: \"Fabric.Leaf[0].Port[3]\", generation: GDR}]"}, `topology.degraded_links[0].generation: "GDR" is not a link generation (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR)`},
		{"not a port", []string{"topology.degraded_links=[{cable: \"Fabric.Leaf[0]\", width: 1x}]"}, `topology.degraded_links[0].cable: "Fabric.Leaf[0]" is not a port (NODE.Port[N], e.g. Fabric.Leaf[0].Port[9])`},
		{"no such node", []string{"topology.degraded_links=[{cable: \"Fabric.Leaf[9].Port[3]\", width: 1x}]"}, "topology.degraded_links[0].cable: Fabric.Leaf[9].Port[3]: the fabric has no node Fabric.Leaf[9]"},
		{"no such port", []string{"topology.degraded_links=[{cable: \"Fabric.Leaf[0].Port[5]\", width: 1x}]"}, "topology.degraded_links[0].cable: Fabric.Leaf[0].Port[5]: Fabric.Leaf[0] has ports 1..4"},
		// 6 hosts on radix-4 leaves of 2 host ports: Leaf[2] holds hosts
		// 4 and 5; with hosts: 5 its port 2 is empty.
		{"uncabled port", []string{"topology.hosts=5", "topology.degraded_links=[{cable: \"Fabric.Leaf[2].Port[2]\", width: 1x}]"}, "topology.degraded_links[0].cable: Fabric.Leaf[2].Port[2] has no cable"},
		{"same cable twice", []string{"topology.degraded_links=[{cable: \"Fabric.Leaf[0].Port[3]\", width: 1x}, {cable: \"Fabric.Spine[0].Port[1]\", width: 2x}]"},
			"topology.degraded_links[1].cable: Fabric.Spine[0].Port[1] is the cable degraded_links[0] names (Fabric.Leaf[0].Port[3]); give each cable once"},
		{"2x of EDR", []string{"topology.degraded_links=[{cable: \"Fabric.Leaf[0].Port[3]\", width: 2x, generation: EDR}]"}, "topology.degraded_links[0].width: 2x is not a width of EDR links (2x exists from HDR on: 1x, 4x, 8x, 12x)"},
		{"back to back", []string{"topology.kind=back-to-back", "topology.host_link_width=1x"}, "topology.host_link_width: 1x is set, but topology.kind back-to-back does not use it (no switches; the one cable takes link.width and link.generation; remove the key)"},
		{"file", []string{"topology.kind=file", "topology.file=testdata/ring5.topo", "topology.degraded_links=[{cable: \"Fabric.Switch[0].Port[2]\", width: 1x}]"},
			"topology.degraded_links: 1 entry is set, but topology.kind file does not use it (give each slower cable its own width= or gen= on its line in the file; remove the key, or replace the whole section: --set 'topology={kind: file, file: testdata/ring5.topo}')"},
		// A 1x SDR cable: a 6-byte FC packet takes 6 × 8 / 2 Gb/s = 24 ns;
		// with 8 VLs a refresh is 192 ns of its wire, and 300 ns is less
		// than twice that (4x NDR: 8 × 120 ps = 0.96 ns, fine).
		{"refresh on a slow cable", []string{"switch.vls=8", "link.fc_refresh_ns=300", "topology.degraded_links=[{cable: \"Fabric.Leaf[0].Port[3]\", width: 1x, generation: SDR}]"},
			"link.fc_refresh_ns: 300 is too short for the cable Fabric.Leaf[0].Port[3] to Fabric.Spine[0].Port[1] (1x SDR): each refresh puts a flow-control packet per data VL ahead of data, 192.000 ns of its wire for switch.vls 8; give at least 384.000 ns (refreshes at most half the wire)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(nil, append(append([]string{}, tree...), tc.sets...))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.NotContains(t, err.Error(), "\n")
		})
	}
	// A topology file is read when the run builds it: its cables' refresh
	// check comes from ConfigureFabric, before any simulation, as a user
	// error (exit 2). 1x SDR as above.
	l, err := Load([]byte(mixedConfig("workload: {kind: uniform}\n")), []string{"switch.vls=8", "link.fc_refresh_ns=300"})
	require.NoError(t, err)
	l.Config.Topology.Text = strings.Replace(l.Config.Topology.Text, "width=1x", "width=1x gen=SDR", 1)
	_, _, err = ConfigureFabric(&l.Config, 1)
	var un *UnsupportedError
	require.ErrorAs(t, err, &un)
	assert.Equal(t, "link.fc_refresh_ns: 300 is too short for the cable Fabric.Host[0].Port[1] to Fabric.Switch[0].Port[1] (1x SDR): each refresh puts a flow-control packet per data VL ahead of data, 192.000 ns of its wire for switch.vls 8; give at least 384.000 ns (refreshes at most half the wire)", err.Error())
}

// TestCableSpeedKeys: host_link_width/generation reach every cable with a
// host end and no other; degraded_links the one cable named, whichever
// end names it. Radix-4 two-level tree: 4 leaves of 2 hosts, 2 spines.
func TestCableSpeedKeys(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=fat-tree-2", "switch.radix=4", "workload.kind=uniform",
		"topology.host_link_width=2x", "topology.host_link_generation=ndr",
		`topology.degraded_links=[{cable: "Fabric.Spine[1].Port[1]", width: 1x}]`})
	require.NoError(t, err)
	topo, _, err := ConfigureFabric(&l.Config, 1)
	require.NoError(t, err)
	degraded := 0
	for _, c := range topo.Cables {
		host := topo.Nodes[c.A.Node].Kind == Host || topo.Nodes[c.B.Node].Kind == Host
		name := topo.PortName(c.A) + " " + topo.PortName(c.B)
		switch {
		case host:
			assert.Equal(t, [2]string{"2x", "NDR"}, [2]string{c.Width, c.Gen}, name)
		case topo.PortName(c.B) == "Fabric.Spine[1].Port[1]":
			// Leaf[0]'s up-port u = 1 (port 4) goes to spine 1, port 1.
			assert.Equal(t, "Fabric.Leaf[0].Port[4]", topo.PortName(c.A))
			assert.Equal(t, [2]string{"1x", ""}, [2]string{c.Width, c.Gen}, name)
			// 1x NDR: 100 Gb/s, 80 ps per byte.
			assert.Equal(t, ib.PS(80), cableTiming(&l.Config, c).Serialization(1))
			degraded++
		default:
			assert.False(t, c.Mixed(), name)
		}
	}
	assert.Equal(t, 1, degraded)
}

// TestLookaheadTakesEachCablesFEC: two switches joined by one 1x NDR
// cable, each in its own partition: nothing crosses sooner than that
// cable's latency, its own RS(544,514) codeword at one 106.25 Gb/s lane
// (5440 b → 51,200 ps, four times the 4x link section's 12,800) plus 2 m
// of copper (8,552 ps).
func TestLookaheadTakesEachCablesFEC(t *testing.T) {
	src := `
switch Fabric.Switch[0] 4
switch Fabric.Switch[1] 4
host Fabric.Host[0]
host Fabric.Host[1]
cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]
cable Fabric.Host[1].Port[1] Fabric.Switch[1].Port[1]
cable Fabric.Switch[0].Port[2] Fabric.Switch[1].Port[2] width=1x
`
	cfg := &Config{Link: link.Defaults()}
	topo, err := ParseTopology(strings.NewReader(src), "t.topo", hostCable(cfg))
	require.NoError(t, err)
	part := Partition(topo, 2)
	require.NotEqual(t, part[0], part[1], "the switches in different partitions")
	look, err := lookahead(cfg, topo, part)
	require.NoError(t, err)
	assert.Equal(t, ib.PS(51200+8552), look)
}

// TestOfferedLoadIsOfTheSendersOwnLink: three hosts on one switch, host 0
// on a 1x cable (100 Gb/s), hosts 1 and 2 on 4x (400 Gb/s), uniform
// traffic at 0.2: each host offers 0.2 of its own link (20 and 80 Gb/s;
// nothing near a link's capacity, so all of it is accepted). Were the rate
// the link section's for everyone, host 0 would offer 80 Gb/s, 0.8 of its
// link. Bernoulli injection over a 2 ms window: host 0 sends about
// 0.2 × 100 Gb/s × 2 ms / (8 × 4122 bytes) ≈ 1213 packets, a relative
// spread of about 1/√1213 ≈ 2.9 % (0.006 of load), so each host's share
// is checked at 0.2 ± 0.02 (over three standard deviations of the
// slowest host; host 0 at 0.8 would be far outside).
func TestOfferedLoadIsOfTheSendersOwnLink(t *testing.T) {
	topo := mixedTopo + "host Fabric.Host[2]\ncable Fabric.Host[2].Port[1] Fabric.Switch[0].Port[3]\n"
	cfg := strings.Replace(mixedConfig(`workload: {kind: uniform, size: 4096, offered_load: 0.2, warmup_ns: 5000, measure_ns: 2000000}
`), strings.ReplaceAll(mixedTopo, "\n", "\n    "), strings.ReplaceAll(topo, "\n", "\n    "), 1)
	l, err := Load([]byte(cfg), nil)
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, m["hosts"])
	hl := m["host_accepted_load"].(map[string]any)
	t.Logf("host loads %v", hl)
	assert.InDelta(t, 0.2, hl["min"], 0.02)
	assert.InDelta(t, 0.2, hl["max"], 0.02)
}

// TestCCTablePerHostLink: the default CCT counts in MTU packet times on
// the host's own link (cc.DefaultCCT: entry i = i × mtuSer / 16, index 16
// one packet time idle after each packet: half the link). An MTU SEND
// ONLY packet is 4096 + LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 4122 bytes:
// 82,440 ps at 4x NDR (20 ps a byte), 329,760 ps at 1x (80). A host on
// the link section's speed shares its parameters.
func TestCCTablePerHostLink(t *testing.T) {
	l, err := Load([]byte(mixedConfig("workload: {kind: uniform}\ncc: {enable: true}\n")), nil)
	require.NoError(t, err)
	cfg := &l.Config
	def := ccParams(cfg)
	require.NotNil(t, def)
	assert.Equal(t, ib.PS(82440), def.CCT[16])
	four := link.NewTiming(link.NDR, 4, 0, 2, link.CopperPsPerM)
	one := link.NewTiming(link.NDR, 1, 0, 2, link.CopperPsPerM)
	assert.Same(t, def, ccParamsAt(cfg, def, four))
	slow := ccParamsAt(cfg, def, one)
	assert.Equal(t, ib.PS(329760), slow.CCT[16])
	assert.Equal(t, len(def.CCT), len(slow.CCT))
	assert.Equal(t, def.Timer, slow.Timer)
}

// ratesTopo is mixedTopo's switch with four hosts whose cables differ in
// width and generation: host 0 on 1x EDR with RS(528,514), hosts 1 and 2
// on the link section's 4x NDR, host 3 on 2x HDR. Their data rates, lanes
// × lane rate × encoding and FEC (ib-facts.md §1; link.Generations): 1x
// EDR is 25.78125 Gb/s × 64/66 = 25 Gb/s (RS(528,514) carries the 64b/66b
// blocks as they are, so it costs no rate); 4x NDR is 4 × 106.25 Gb/s ×
// 16/17 = 400 Gb/s (256b/257b transcoding with RS(544,514): 64/66 × 33/34
// = 16/17); 2x HDR is 2 × 53.125 Gb/s × 16/17 = 100 Gb/s. Each is a whole
// number of picoseconds a byte (320, 20, 80), so the Gb/s are exact.
const ratesTopo = `
switch Fabric.Switch[0] 4
host Fabric.Host[0]
host Fabric.Host[1]
host Fabric.Host[2]
host Fabric.Host[3]
cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] width=1x gen=EDR fec=rs528
cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2]
cable Fabric.Host[2].Port[1] Fabric.Switch[0].Port[3]
cable Fabric.Host[3].Port[1] Fabric.Switch[0].Port[4] width=2x gen=HDR
`

// TestHCARunsReportHostLinkRates: the collectives, the replay and a
// perftest on ratesTopo report host_link_rate_gbps, {min, max} of the data
// rates of the cables of the hosts that run the workload (derived at
// ratesTopo): every host for a collective and a replay, 25 and 400 Gb/s;
// a perftest's pair, host 0 to the last host (hosts 1 and 2 are idle), 25
// and 100; with hosts 1 and 2 as background traffic, 25 and 400 again. The link
// section's rate stays link_data_rate_gbps (400). The same fabric with
// every cable at the link section's speed reports no host_link_rate_gbps.
func TestHCARunsReportHostLinkRates(t *testing.T) {
	config := func(topo, workload string) []byte {
		return []byte(strings.Replace(mixedConfig(workload), strings.ReplaceAll(mixedTopo, "\n", "\n    "), strings.ReplaceAll(topo, "\n", "\n    "), 1))
	}
	trace := filepath.Join(t.TempDir(), "r.trace")
	require.NoError(t, os.WriteFile(trace, []byte("0 0 1 write 4096\n0 1 2 write 4096 id=1\n0 1 0 write 4096 after=1 delay_ns=1000\n"), 0o644))
	wide := map[string]any{"min": 25.0, "max": 400.0}
	for _, tc := range []struct {
		name, workload string
		want           map[string]any
	}{
		{"allreduce", "workload: {kind: allreduce, size: 4096}\n", wide},
		{"alltoall", "workload: {kind: alltoall, size: 4096}\n", wide},
		{"replay", "workload: {kind: replay, trace_file: " + trace + "}\n", wide},
		{"perftest pair", "workload: {kind: perftest, test: write_bw, size: 4096, iterations: 20}\n", map[string]any{"min": 25.0, "max": 100.0}},
		{"perftest with background", "workload: {kind: perftest, test: write_bw, size: 4096, iterations: 20, background: true, offered_load: 0.1, warmup_ns: 1000, measure_ns: 5000}\n", wide},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(config(ratesTopo, tc.workload), nil)
			require.NoError(t, err)
			m, err := Run(l, RunOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, m["host_link_rate_gbps"])
			if _, ok := m["link_data_rate_gbps"]; ok {
				assert.Equal(t, 400.0, m["link_data_rate_gbps"])
			}

			alike := strings.NewReplacer(" width=1x gen=EDR fec=rs528", "", " width=2x gen=HDR", "").Replace(ratesTopo)
			l, err = Load(config(alike, tc.workload), nil)
			require.NoError(t, err)
			m, err = Run(l, RunOptions{})
			require.NoError(t, err)
			assert.NotContains(t, m, "host_link_rate_gbps")
		})
	}
}
