package fabric

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopologyFileRing(t *testing.T) {
	topo, err := LoadTopologyFile("testdata/ring5.topo", CableSpec{LengthM: 3, Medium: Copper})
	require.NoError(t, err)
	assert.Len(t, topo.Hosts(), 5)
	assert.Len(t, topo.Switches(), 5)
	assert.Len(t, topo.Cables, 10)
	// Host cables say 1m and no medium: the default medium (copper).
	assert.Equal(t, Cable{A: PortRef{5, 1}, B: PortRef{0, 1}, LengthM: 1, Medium: Copper}, topo.Cables[0])
	assert.Equal(t, Cable{A: PortRef{0, 2}, B: PortRef{1, 3}, LengthM: 10, Medium: Fibre}, topo.Cables[5])
}

func TestTopologyFileDefaultsAndRoots(t *testing.T) {
	src := `
switch Fabric.Spine[0] 2   # a root, named
switch Fabric.Leaf[0] 3
switch Fabric.Leaf[1] 3
root Fabric.Spine[0]
host Fabric.Host[0]
host Fabric.Host[1]
cable Fabric.Host[0].Port[1] Fabric.Leaf[0].Port[1]
cable Fabric.Host[1].Port[1] Fabric.Leaf[1].Port[1] fibre 7.5m
cable Fabric.Leaf[0].Port[2] Fabric.Spine[0].Port[1]
cable Fabric.Leaf[1].Port[2] Fabric.Spine[0].Port[2]
`
	topo, err := ParseTopology(strings.NewReader(src), "tree.topo", CableSpec{LengthM: 3, Medium: Copper})
	require.NoError(t, err)
	assert.True(t, topo.Nodes[0].Root)
	assert.False(t, topo.Nodes[1].Root)
	assert.Equal(t, 3.0, topo.Cables[0].LengthM)
	assert.Equal(t, Copper, topo.Cables[0].Medium)
	assert.Equal(t, 7.5, topo.Cables[1].LengthM)
	assert.Equal(t, Fibre, topo.Cables[1].Medium)
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingDModK, VLs: 1})
	require.NoError(t, err)
	_, err = sn.Path(3, 4)
	assert.NoError(t, err)
}

func TestTopologyFileErrors(t *testing.T) {
	head := "switch Fabric.Switch[0] 4\nhost Fabric.Host[0]\nhost Fabric.Host[1]\n"
	cables := "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]\ncable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2]\n"
	cases := []struct {
		name, src, want string
	}{
		{"unknown statement", head + "link a b\n", `t.topo:4: "link" is not a statement (host, switch, root, cable)`},
		{"switch fields", "switch Fabric.Switch[0]\n", "t.topo:1: switch takes a name, a port count and an optional tier (switch NAME PORTS [tier=N]), got 1 fields"},
		{"switch tier", "switch Fabric.Switch[0] 8 tier=4\n", `t.topo:1: switch Fabric.Switch[0]: "tier=4" is not a tier (tier=1 for a leaf, 2 and 3 above it)`},
		{"switch tier word", "switch Fabric.Switch[0] 8 level=1\n", `t.topo:1: switch Fabric.Switch[0]: "level=1" is not a tier (tier=1 for a leaf, 2 and 3 above it)`},
		// Tiers on some switches only: the line of the first without.
		{"tiers partial", "switch Fabric.Leaf[0] 4 tier=1\nswitch Fabric.Spine[0] 4\nhost Fabric.Host[0]\n" +
			"cable Fabric.Host[0].Port[1] Fabric.Leaf[0].Port[1]\ncable Fabric.Leaf[0].Port[2] Fabric.Spine[0].Port[1]\n",
			"t.topo:2: switch Fabric.Spine[0] has no tier, but Fabric.Leaf[0] has one (tier=1): give every switch a tier, or none"},
		// A host on a spine: D-mod-K would route it as a spine's.
		{"tier host", "switch Fabric.Leaf[0] 4 tier=1\nswitch Fabric.Spine[0] 4 tier=2\nhost Fabric.Host[0]\n" +
			"cable Fabric.Host[0].Port[1] Fabric.Spine[0].Port[1]\ncable Fabric.Leaf[0].Port[2] Fabric.Spine[0].Port[2]\n",
			"t.topo:2: switch Fabric.Spine[0] has tier=2, but host Fabric.Host[0] is cabled to it: hosts attach to tier-1 switches (leaves)"},
		{"switch ports", "\n# c\nswitch Fabric.Switch[0] many\n", `t.topo:3: switch Fabric.Switch[0]: port count "many" is not a whole number`},
		{"radix", "switch Fabric.Switch[0] 300\n", "t.topo:1: switch Fabric.Switch[0]: radix 300 is out of range (1..256)"},
		{"bad name", "host fabric_host0\n", `t.topo:1: host name "fabric_host0" is not in Akita form (capitalised parts, e.g. Fabric.Host[3])`},
		{"duplicate", head + "host Fabric.Host[1]\n", "t.topo:4: host name Fabric.Host[1] is used twice"},
		{"undeclared node", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[9].Port[1]\n", "t.topo:4: Fabric.Switch[9].Port[1]: node Fabric.Switch[9] is not declared above"},
		{"not a port", head + "cable Fabric.Host[0] Fabric.Switch[0].Port[1]\n", `t.topo:4: "Fabric.Host[0]" is not a port (NODE.Port[N])`},
		{"port range", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[5]\n", "t.topo:4: Fabric.Switch[0].Port[5]: Fabric.Switch[0] has ports 1..4"},
		{"length unit", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] 5\n", `t.topo:4: cable Fabric.Host[0].Port[1]: "5" is neither a length in metres (e.g. 2.5m, 0..100000), a medium (copper, fibre) nor an option (ber=1e-7, width=1x, gen=NDR, fec=rs544, fec_ns=100)`},
		{"NaN length", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] NaNm\n", `t.topo:4: cable Fabric.Host[0].Port[1]: "NaNm" is neither a length in metres (e.g. 2.5m, 0..100000), a medium (copper, fibre) nor an option (ber=1e-7, width=1x, gen=NDR, fec=rs544, fec_ns=100)`},
		{"infinite length", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] +Infm\n", `t.topo:4: cable Fabric.Host[0].Port[1]: "+Infm" is neither a length in metres (e.g. 2.5m, 0..100000), a medium (copper, fibre) nor an option (ber=1e-7, width=1x, gen=NDR, fec=rs544, fec_ns=100)`},
		{"medium", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] 5m glass\n", `t.topo:4: cable Fabric.Host[0].Port[1]: "glass" is neither a length in metres (e.g. 2.5m, 0..100000), a medium (copper, fibre) nor an option (ber=1e-7, width=1x, gen=NDR, fec=rs544, fec_ns=100)`},
		{"ber value", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] ber=2e-4\n", "t.topo:4: cable Fabric.Host[0].Port[1]: ber=2e-4 is not a post-FEC bit error rate (0 for an error-free cable, up to 0.0001)"},
		{"ber NaN", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] 2m ber=NaN\n", "t.topo:4: cable Fabric.Host[0].Port[1]: ber=NaN is not a post-FEC bit error rate (0 for an error-free cable, up to 0.0001)"},
		{"ber empty", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] ber=\n", "t.topo:4: cable Fabric.Host[0].Port[1]: ber= is not a post-FEC bit error rate (0 for an error-free cable, up to 0.0001)"},
		{"too many fields", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] 2m copper ber=0 width=1x gen=NDR fec=rs544 fec_ns=1 x\n", "t.topo:4: cable takes two ports, then an optional length, medium, bit error rate, width, generation, FEC and FEC latency (cable NODE.Port[N] NODE.Port[N] [2.5m] [copper|fibre] [ber=1e-7] [width=1x] [gen=NDR] [fec=rs544] [fec_ns=100]), got 10 fields"},
		{"fec_ns range", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] fec_ns=-1\n", "t.topo:4: cable Fabric.Host[0].Port[1]: fec_ns=-1 is not a FEC latency (0 to 100000 ns; without it the cable takes link.fec_latency_ns, or its own FEC mode's derived latency)"},
		{"fec_ns NaN", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] fec_ns=NaN\n", "t.topo:4: cable Fabric.Host[0].Port[1]: fec_ns=NaN is not a FEC latency (0 to 100000 ns; without it the cable takes link.fec_latency_ns, or its own FEC mode's derived latency)"},
		{"fec_ns unit", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] fec_ns=12ns\n", "t.topo:4: cable Fabric.Host[0].Port[1]: fec_ns=12ns is not a FEC latency (0 to 100000 ns; without it the cable takes link.fec_latency_ns, or its own FEC mode's derived latency)"},
		{"fec_ns twice", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] fec_ns=1 fec_ns=2\n", "t.topo:4: cable Fabric.Host[0].Port[1]: fec_ns= is given twice"},
		// Per-cable speed (the link section here is link.Defaults(): 4x NDR, FEC default).
		{"width", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] width=3x\n", "t.topo:4: width=3x: not a link width (1x, 2x, 4x, 8x, 12x)"},
		{"width empty", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] width=\n", "t.topo:4: width=: not a link width (1x, 2x, 4x, 8x, 12x)"},
		{"gen", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] gen=ZDR\n", "t.topo:4: gen=ZDR: not a link generation (SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR)"},
		{"fec", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] fec=rs999\n", "t.topo:4: fec=rs999: not a FEC mode (default, none, rs528, rs544, llrs271)"},
		{"2x before HDR", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] gen=EDR width=2x\n", "t.topo:4: width=2x: not a width of EDR links (2x exists from HDR on: 1x, 4x, 8x, 12x)"},
		{"fec of another gen", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] fec=rs528\n", "t.topo:4: fec=rs528: not a FEC mode of NDR links (default, rs544)"},
		{"fec of the cable's gen", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] fec=rs544 gen=EDR\n", "t.topo:4: fec=rs544: not a FEC mode of EDR links (default, none, rs528, llrs271)"},
		{"option twice", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] width=1x width=4x\n", "t.topo:4: cable Fabric.Host[0].Port[1]: width= is given twice"},
		{"unknown option", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] speed=1x\n", "t.topo:4: cable Fabric.Host[0].Port[1]: speed= is not a cable option (ber=, width=, gen=, fec=, fec_ns=)"},
		{"double cable", head + cables + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[3]\n", "t.topo:6: cable: Fabric.Host[0].Port[1] is already cabled to Fabric.Switch[0].Port[1]"},
		{"loopback cable", head + "cable Fabric.Switch[0].Port[3] Fabric.Switch[0].Port[4]\n",
			"t.topo:4: cable: Fabric.Switch[0].Port[3] to Fabric.Switch[0].Port[4] loops back into Fabric.Switch[0]; a cable must join two different nodes"},
		{"cabled to itself", head + "cable Fabric.Switch[0].Port[3] Fabric.Switch[0].Port[3]\n",
			"t.topo:4: cable: Fabric.Switch[0].Port[3] is cabled to itself"},
		{"root not switch", head + "root Fabric.Host[0]\n", "t.topo:4: root Fabric.Host[0]: is a host (line 2); a root is a switch"},
		{"root undeclared", head + "root Fabric.Switch[7]\n", "t.topo:4: root Fabric.Switch[7]: no switch of that name is declared above"},
		{"unconnected", head + "cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]\n", "t.topo:3: Fabric.Host[1].Port[1] has no cable"},
		{"one host", "host Fabric.Host[0]\n", "t.topo: topology has 1 host; at least 2 are needed"},
		// An island of a switch and a host, declared at lines 6 and 7.
		{"unreachable", head + cables + "switch Fabric.Switch[1] 4\nhost Fabric.Host[2]\ncable Fabric.Host[2].Port[1] Fabric.Switch[1].Port[1]\n",
			"t.topo:6: Fabric.Switch[1] cannot be reached from Fabric.Host[0]"},
		{"host to host", head + "host Fabric.Host[2]\ncable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]\ncable Fabric.Host[1].Port[1] Fabric.Host[2].Port[1]\n",
			"t.topo:6: cable Fabric.Host[1].Port[1] to Fabric.Host[2].Port[1] joins two hosts in a fabric of 3 hosts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopology(strings.NewReader(tc.src), "t.topo", testCable)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// TestTopologyFileRoundTrip writes a builder's fat tree as a file, reads it
// back, and checks the same nodes, cables and routes come out.
func TestTopologyFileRoundTrip(t *testing.T) {
	built, err := FatTree2(FatTree2Spec{Radix: 8, Oversubscription: 1, Spines: 2}, CableSpec{LengthM: 0.5, Medium: Fibre})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, FormatTopology(&buf, built))
	read, err := ParseTopology(&buf, "roundtrip", testCable)
	require.NoError(t, err)
	require.Len(t, read.Nodes, len(built.Nodes))
	for i := range built.Nodes {
		assert.Equal(t, built.Nodes[i], read.Nodes[i]) // the tiers too
	}
	assert.Equal(t, built.Cables, read.Cables)

	a, err := NewSubnet(built, SubnetOptions{Routing: RoutingDModK, VLs: 1})
	require.NoError(t, err)
	b, err := NewSubnet(read, SubnetOptions{Routing: RoutingDModK, VLs: 1})
	require.NoError(t, err)
	for _, s := range built.Switches() {
		assert.Equal(t, a.LFT(s), b.LFT(s), built.Nodes[s].Name)
	}
}
