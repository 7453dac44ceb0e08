package fabric

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// sl2vlList is a 16-entry SL-to-VL list mapping every SL to VL 0, with SL
// sl on vl instead when sl >= 0 (for --set values).
func sl2vlList(sl, vl int) string {
	t := make([]string, 16)
	for i := range t {
		t[i] = "0"
		if i == sl {
			t[i] = fmt.Sprint(vl)
		}
	}
	return "[" + strings.Join(t, ", ") + "]"
}

// txCounter counts the data packets each port puts on the wire, per VL.
type txCounter struct {
	perVL map[string][2]int // port path → packets on VL 0, VL 1
	sent  []sentPacket      // host ports' packets
}

type sentPacket struct{ slid, dlid int64 }

func (c *txCounter) Func(ctx sim.HookCtx) {
	ev, ok := ctx.Item.(*components.TraceEvent)
	if !ok || ev.Kind != components.TraceTxStart {
		return
	}
	if _, isData := ev.Int("seq"); !isData {
		return // a flow-control packet
	}
	vl, _ := ev.Int("vl")
	n := c.perVL[ev.Path]
	n[vl]++
	c.perVL[ev.Path] = n
	if strings.HasPrefix(ev.Path, "Fabric.Host[") {
		slid, _ := ev.Int("slid")
		dlid, _ := ev.Int("dlid")
		c.sent = append(c.sent, sentPacket{slid, dlid})
	}
}

// TestSL2VLPairHostToUp: a two-level fat tree of radix-4 switches (4
// leaves with 2 hosts each on ports 1-2 and up-ports 3-4 to 2 spines; host
// i has LID i+1 and sits on leaf i/2), 2 VLs, switch.sl2vl mapping every SL
// to VL 0 and one sl2vl_pairs entry giving the pairs host port → up port
// SL 1 → VL 1. Uniform traffic on SL 1. Hop by hop:
//
//   - a host sends SL 1 on the default table's VL: 0;
//   - its leaf forwards it up (host → up pair) on VL 1, or to the other
//     host of the leaf (host → host) on VL 0;
//   - a spine forwards it down (down → down) on VL 0;
//   - the destination leaf forwards it to the host (up → host) on VL 0.
//
// So VL 1 carries exactly the packets that change leaves, once each, on a
// leaf's up-port (0-based switch port 2 or 3), and no other channel carries
// VL 1. The test counts every data packet put on a wire, per port and VL,
// and checks both; the run is lossless under --check (credits per VL, every
// packet delivered).
func TestSL2VLPairHostToUp(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=2",
		"switch.sl2vl=" + sl2vlList(-1, 0),
		"switch.sl2vl_pairs=[{in: host, out: up, sl2vl: " + sl2vlList(1, 1) + "}]",
		"workload.kind=uniform", "workload.sl=1", "workload.size=1024", "workload.offered_load=0.4",
		"workload.measure_ns=5000", "sim.check=true"})
	require.NoError(t, err)
	c := &txCounter{perVL: map[string][2]int{}}
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		for _, b := range s.Blocks {
			b.AcceptHook(c)
		}
	}})
	require.NoError(t, err)
	assert.EqualValues(t, 0, m["packets_dropped"])

	interLeaf := 0
	for _, p := range c.sent {
		if (p.slid-1)/2 != (p.dlid-1)/2 {
			interLeaf++
		}
	}
	require.Greater(t, interLeaf, 100, "enough traffic crosses the spines to count")
	upVL1, otherVL1, vl0 := 0, 0, 0
	for path, n := range c.perVL {
		up := strings.HasPrefix(path, "Fabric.Leaf[") && (strings.HasSuffix(path, ".Port[2]") || strings.HasSuffix(path, ".Port[3]"))
		if up {
			upVL1 += n[1]
			assert.Zero(t, n[0], "%s: a leaf's up-port sends only host → up traffic, all on VL 1", path)
		} else {
			otherVL1 += n[1]
		}
		vl0 += n[0]
	}
	assert.Equal(t, interLeaf, upVL1, "every packet that changes leaves goes up once, on VL 1")
	assert.Zero(t, otherVL1, "no other channel carries VL 1")
	// Every packet is sent by its host on VL 0; one that changes leaves
	// then goes down from a spine and from a leaf on VL 0 (3 VL 0 hops),
	// one that stays goes down from its leaf (2).
	assert.Equal(t, 3*interLeaf+2*(len(c.sent)-interLeaf), vl0)
}

// TestSL2VLPairsLaterEntryWins: entries apply in order, so where two select
// the same pair the later table is the one programmed; the classes select
// by what the cable reaches and by updown's direction; switches narrows an
// entry to the switches its glob names; the switches forward by what the
// subnet manager programmed.
func TestSL2VLPairsLaterEntryWins(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=4",
		"switch.sl2vl_pairs=[" +
			"{out: up, sl2vl: " + sl2vlList(0, 1) + "}," + // every leaf: any → up, SL0 → VL1
			"{switches: 'Fabric.Leaf[0]', in: 1, out: up, sl2vl: " + sl2vlList(0, 2) + "}," + // leaf 0 port 1 → up: VL2
			"{switches: 'Fabric.Spine[*]', in: down, out: '3', sl2vl: " + sl2vlList(0, 3) + "}]", // spines: down → port 3: VL3
		"workload.kind=uniform"})
	require.NoError(t, err)
	topo, sn, err := ConfigureFabric(&l.Config, 1)
	require.NoError(t, err)
	leaf0, _ := topo.Lookup("Fabric.Leaf[0]")
	leaf1, _ := topo.Lookup("Fabric.Leaf[1]")
	spine0, _ := topo.Lookup("Fabric.Spine[0]")
	assert.Equal(t, uint8(2), sn.VL(leaf0, 1, 3, 0), "the later entry wins on leaf 0 port 1 → 3")
	assert.Equal(t, uint8(1), sn.VL(leaf0, 2, 3, 0), "port 2 only matches the first entry")
	assert.Equal(t, uint8(1), sn.VL(leaf1, 1, 4, 0), "another leaf: the first entry")
	assert.Equal(t, uint8(0), sn.VL(leaf1, 3, 1, 0), "up → host: no entry, the default")
	assert.Equal(t, uint8(0), sn.VL(leaf1, 3, 4, 1), "the first entry maps SL 1 to VL 0 too")
	assert.Equal(t, uint8(1), sn.VL(leaf1, 3, 1, 1), "SL 1 keeps the default's VL 1 & 3 = 1 where no entry applies")
	assert.Equal(t, uint8(3), sn.VL(spine0, 1, 3, 0), "a spine's ports are all down")
	assert.Equal(t, uint8(0), sn.VL(spine0, 1, 2, 0))
	assert.True(t, sn.HasPairTables(leaf0))

	// The switch built for leaf 0 programs the same tables (0-based ports).
	m := pairTables(sn, leaf0)
	require.NotNil(t, m)
	assert.Equal(t, uint8(2), m.VL(0, 2, 0))
	assert.Equal(t, uint8(1), m.VL(1, 3, 0))
	assert.Equal(t, uint8(0), m.VL(2, 0, 0))
}

// TestSL2VLPairsDateline: the ring of five switches (testdata/ring5.topo)
// under minhop routing has a credit cycle on VL 0, and the run is refused.
// A dateline given in the config — at Switch[0], a packet going round the
// ring (in on port 2 or 3, out on the other) moves to VL 1 — breaks it, as
// TestDeadlockRingDateline derives: the deadlock check follows the
// sl2vl_pairs tables, and the run is lossless with those tables in the
// switches.
func TestSL2VLPairsDateline(t *testing.T) {
	sets := []string{"topology.kind=file", "topology.file=testdata/ring5.topo", "topology.routing=minhop",
		"switch.vls=2", "workload.kind=uniform", "workload.size=1024", "workload.measure_ns=3000", "sim.check=true"}
	l, err := Load(nil, sets)
	require.NoError(t, err)
	_, err = Run(l, RunOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "topology.routing: deadlock: minhop routing has a cycle")

	l, err = Load(nil, append(sets,
		"switch.sl2vl_pairs=[{switches: 'Fabric.Switch[0]', in: '2,3', out: '2,3', sl2vl: "+sl2vlList(0, 1)+"}]"))
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 0, m["packets_dropped"])
	assert.Greater(t, m["packets_delivered"], uint64(0))
}

// TestSL2VLPairsHCAsReceiveOnAnotherVL: HCAs send on the default table's
// VL for SL 0 (VL 0) and must take what the last switch sends them on
// another: an entry moving SL 0 to VL 1 on the pairs into hosts (up → host
// and host → host) makes every packet reach its HCA on VL 1, and a
// perftest write_bw across the tree still completes.
func TestSL2VLPairsHCAsReceiveOnAnotherVL(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=2",
		"switch.sl2vl_pairs=[{out: host, sl2vl: " + sl2vlList(0, 1) + "}]",
		"workload.kind=perftest", "workload.test=write_bw", "workload.size=65536", "workload.iterations=20", "sim.check=true"})
	require.NoError(t, err)
	c := &txCounter{perVL: map[string][2]int{}}
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		for _, b := range s.Blocks {
			b.AcceptHook(c)
		}
	}})
	require.NoError(t, err)
	assert.Greater(t, m["bw_gbps"], 0.0)
	toHosts := 0
	for path, n := range c.perVL {
		if strings.HasPrefix(path, "Fabric.Leaf[") && (strings.HasSuffix(path, ".Port[0]") || strings.HasSuffix(path, ".Port[1]")) {
			assert.Zero(t, n[0], "%s sends to a host only on VL 1", path)
			toHosts += n[1]
		}
	}
	assert.Greater(t, toHosts, 0)
}

// TestSL2VLPairsErrors: every mistake in switch.sl2vl_pairs is refused on
// one line naming the entry and field, the value and what is allowed, as a
// config error (Load) or, where the fabric decides, before the run starts
// (Run, a user error).
func TestSL2VLPairsErrors(t *testing.T) {
	ft := []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=2", "workload.kind=uniform", "workload.sl=1"}
	pairs := func(s string) string { return "switch.sl2vl_pairs=[" + s + "]" }
	tests := []struct {
		name string
		sets []string
		want string
		load bool // refused by Load (config validation), not by Run
	}{
		{"class", []string{pairs("{in: uplink, sl2vl: " + sl2vlList(-1, 0) + "}")},
			`switch.sl2vl_pairs[0].in: "uplink" is not a port class or a list of port numbers (allowed: any, host, switch, up, down, or IB port numbers 1 to 256 such as "1-4,7")`, true},
		{"vl", []string{pairs("{in: host, sl2vl: " + sl2vlList(3, 2) + "}")},
			"switch.sl2vl_pairs[0].sl2vl[3]: vl 2 is not a data VL of this port (0 to 1) or 15 (drop)", true},
		{"length", []string{pairs("{in: host, sl2vl: [0, 1]}")},
			"switch.sl2vl_pairs[0].sl2vl: 2 entries, want 16 (one VL per SL)", true},
		{"empty list", []string{pairs("{in: [], sl2vl: " + sl2vlList(-1, 0) + "}")},
			"switch.sl2vl_pairs[0].in: an empty list; give at least one item, or leave the key out", true},
		{"unknown key", []string{pairs("{from: host, sl2vl: " + sl2vlList(-1, 0) + "}")},
			`switch.sl2vl_pairs[0].from: unknown key (valid here: in, out, sl2vl, switches)`, true},
		{"back to back", []string{"topology.kind=back-to-back", "workload.kind=stream", pairs("{sl2vl: " + sl2vlList(-1, 0) + "}")},
			"switch.sl2vl_pairs: 1 entries, but topology.kind back-to-back has no switches to program; remove them or use a switched topology", true},
		{"glob", []string{pairs("{switches: 'Fabric.Leaf[9]', sl2vl: " + sl2vlList(-1, 0) + "}")},
			`switch.sl2vl_pairs[0].switches: "Fabric.Leaf[9]" matches no switch of this fabric (its 6 switches: Fabric.Leaf[0], Fabric.Leaf[1], Fabric.Leaf[2], Fabric.Leaf[3], Fabric.Spine[0], Fabric.Spine[1]; '*' is any run of characters, '?' one)`, false},
		{"port beyond", []string{pairs("{in: '1,5', sl2vl: " + sl2vlList(-1, 0) + "}")},
			"switch.sl2vl_pairs[0].in: port 5 is beyond Fabric.Leaf[0]'s 4 ports", false},
		{"no pair", []string{"topology.kind=single-switch", "topology.hosts=4", pairs("{in: host, out: up, sl2vl: " + sl2vlList(-1, 0) + "}")},
			`switch.sl2vl_pairs[0]: in "host", out "up" selects no port pair on the 1 switch(es) "*" names, so the entry would change nothing (up and down ports need switch-to-switch cables; a single switch has only host ports)`, false},
		// Leaf 1 port 1 (Host[2]) → port 3 (up) is the first such pair a
		// route takes in the walk: destinations in LID order, Host[0]
		// first, whose route from Host[2] climbs leaf 1's port 3 (minhop
		// balances destination LIDs over the up-ports).
		{"drop on a used pair", []string{pairs("{in: host, out: up, sl2vl: " + sl2vlList(1, 15) + "}")},
			"switch.sl2vl_pairs[0].sl2vl[1]: SL 1 maps to VL 15 (drop) on Fabric.Leaf[1] from port 1 to port 3, which the route from Fabric.Host[2] to Fabric.Host[0] takes on SL 1 (workload.sl 1), so the switch would drop those packets; map SL 1 to a data VL (below switch.vls 2) on that pair, or leave the pair out of the entry", false},
		// A perftest's HCAs are the first and last host; the walk takes
		// Host[0] as destination first: from Host[7] the route climbs to
		// Spine[0] (LID 1's up-port, as above) and enters Leaf[0] on its
		// port 3, which faces Spine[0], bound for port 1.
		{"HCAs' SL 0", []string{"workload.kind=perftest", "workload.sl=0", pairs("{in: up, out: host, sl2vl: " + sl2vlList(0, 15) + "}")},
			"switch.sl2vl_pairs[0].sl2vl[0]: SL 0 maps to VL 15 (drop) on Fabric.Leaf[0] from port 3 to port 1, which the route from Fabric.Host[7] to Fabric.Host[0] takes on SL 0 (the HCAs of workload.kind perftest send on SL 0), so the switch would drop those packets; map SL 0 to a data VL (below switch.vls 2) on that pair, or leave the pair out of the entry", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(nil, append(append([]string{}, ft...), tc.sets...))
			if tc.load {
				require.Error(t, err)
				assert.Equal(t, tc.want, err.Error())
				return
			}
			require.NoError(t, err)
			_, err = Run(l, RunOptions{})
			require.Error(t, err)
			var un *UnsupportedError
			assert.ErrorAs(t, err, &un, "a user error (exit 2)")
			assert.Equal(t, tc.want, err.Error())
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestSL2VLPairDropOnUnusedPairAccepted: the drop check follows the routes
// the run's traffic takes: a leaf never forwards from one spine to another,
// so an entry dropping SL 1 on a leaf's up → up pairs drops nothing and is
// accepted.
func TestSL2VLPairDropOnUnusedPairAccepted(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=2",
		"switch.sl2vl_pairs=[{switches: 'Fabric.Leaf[*]', in: up, out: up, sl2vl: " + sl2vlList(1, 15) + "}]",
		"workload.kind=uniform", "workload.sl=1", "workload.measure_ns=2000"})
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 0, m["packets_dropped"])
}

// TestSL2VLPairDropFollowsTheRunsFlows: a perftest sends SL 0 only between
// its two HCAs, the first and last host (Host[0] on Leaf[0] port 1, Host[7]
// on Leaf[3] port 2). An entry dropping SL 0 from Leaf[1]'s hosts upward
// touches no route between them, so it is accepted; on Leaf[0] it is not:
// Host[0]'s packets to Host[7] (LID 8) climb port 4 (minhop spreads the
// remote destination LIDs over the two up-ports in turn: 3, 4, 3, ...).
func TestSL2VLPairDropFollowsTheRunsFlows(t *testing.T) {
	base := []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=2",
		"workload.kind=perftest", "workload.test=write_lat", "workload.iterations=5"}
	entry := func(sw string) string {
		return "switch.sl2vl_pairs=[{switches: '" + sw + "', in: host, out: up, sl2vl: " + sl2vlList(0, 15) + "}]"
	}
	l, err := Load(nil, append(append([]string{}, base...), entry("Fabric.Leaf[1]")))
	require.NoError(t, err)
	_, err = Run(l, RunOptions{})
	assert.NoError(t, err)

	l, err = Load(nil, append(append([]string{}, base...), entry("Fabric.Leaf[0]")))
	require.NoError(t, err)
	_, err = Run(l, RunOptions{})
	assert.ErrorContains(t, err, "switch.sl2vl_pairs[0].sl2vl[0]: SL 0 maps to VL 15 (drop) on Fabric.Leaf[0] from port 1 to port 4, which the route from Fabric.Host[0] to Fabric.Host[7] takes")
}

// TestSL2VLPairsPortList: in and out take the port numbers as a YAML list
// too; [1, 2] is "1,2", so the two configs run the same simulation (the
// same metrics, events included).
func TestSL2VLPairsPortList(t *testing.T) {
	run := func(in string) map[string]any {
		l, err := Load(nil, []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=2",
			"switch.sl2vl_pairs=[{in: " + in + ", out: up, sl2vl: " + sl2vlList(1, 1) + "}]",
			"workload.kind=uniform", "workload.sl=1", "workload.measure_ns=2000"})
		require.NoError(t, err)
		m, err := Run(l, RunOptions{})
		require.NoError(t, err)
		delete(m, "wall_s") // the only metric that is not the model's
		return m
	}
	assert.Equal(t, run(`"1,2"`), run("[1, 2]"))
}
