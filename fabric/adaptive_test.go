package fabric

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/verif"
)

// TestAdaptiveRoutingGroups: on a radix-4 two-level tree (4 leaves of 2
// hosts, 2 spines) a leaf's group for a host on another leaf is both its
// up-ports (3 and 4), the LFT's port among them; a host on the leaf itself
// and every spine-to-leaf route have one candidate and no group; switch
// LIDs keep the LFT alone; without the option there are no groups.
func TestAdaptiveRoutingGroups(t *testing.T) {
	for _, routing := range RoutingEngines {
		t.Run(routing, func(t *testing.T) {
			tc := TopologyConfig{Kind: KindFatTree2, Radix: 4, Oversubscription: 1, Routing: routing, AdaptiveRouting: true}
			_, sub, err := tc.BuildFabric(4, CableSpec{LengthM: 2}, SubnetOptions{Seed: 1, VLs: 1}, nil)
			require.NoError(t, err)
			require.True(t, sub.AdaptiveRouting())
			topo := sub.Topo
			leaf0, spine0 := topo.Switches()[0], -1
			for _, n := range topo.Switches() {
				if strings.HasPrefix(topo.Nodes[n].Name, "Fabric.Spine") && spine0 < 0 {
					spine0 = n
				}
			}
			require.Equal(t, "Fabric.Leaf[0]", topo.Nodes[leaf0].Name)
			for h := range sub.Hosts() {
				lid := sub.HostLID(h)
				g := sub.ARGroup(leaf0, lid)
				if h < 2 { // on Leaf[0]: one down port
					assert.Nil(t, g, "host %d", h)
				} else {
					assert.Equal(t, []uint16{3, 4}, g, "host %d", h)
					assert.Contains(t, g, sub.Egress(leaf0, lid))
				}
				assert.Nil(t, sub.ARGroup(spine0, lid), "a spine has one down link to host %d", h)
			}
			for _, n := range topo.Switches() {
				assert.Nil(t, sub.ARGroup(leaf0, sub.LID(n)), "switch LID of %s", topo.Nodes[n].Name)
			}
			tc.AdaptiveRouting = false
			_, static, err := tc.BuildFabric(4, CableSpec{LengthM: 2}, SubnetOptions{Seed: 1, VLs: 1}, nil)
			require.NoError(t, err)
			assert.False(t, static.AdaptiveRouting())
			assert.Nil(t, static.ARGroup(leaf0, static.HostLID(4)))
			// The static tables do not change with the option.
			var a, b bytes.Buffer
			require.NoError(t, sub.WriteLFTs(&a))
			require.NoError(t, static.WriteLFTs(&b))
			assert.Equal(t, b.String(), a.String())
		})
	}
}

// TestAdaptiveRoutingRefusals: a value that is not a boolean, an HCA
// workload (whose RC transport needs in-order delivery) with AR on every
// SL, its own among them, and a fabric with no switches are refused, each
// with one line naming the key.
func TestAdaptiveRoutingRefusals(t *testing.T) {
	ft := []string{"topology.kind=fat-tree-2", "switch.radix=4", "topology.hosts=8"}
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{append([]string{"topology.adaptive_routing=maybe", "workload.kind=uniform"}, ft...),
			`topology.adaptive_routing: "maybe" is not true or false`},
		{append([]string{"topology.adaptive_routing=true", "workload.kind=perftest"}, ft...),
			"topology.adaptive_routing: true reorders the packets of a flow on every SL (topology.adaptive_routing_sls is unset), but workload.kind perftest runs the hca model's transport on SL 0 (workload.sl), which needs them in order"},
		{append([]string{"topology.adaptive_routing=true", "workload.kind=allreduce"}, ft...),
			"topology.adaptive_routing: true reorders the packets of a flow on every SL (topology.adaptive_routing_sls is unset), but workload.kind allreduce runs the hca model's transport"},
		{append([]string{"topology.adaptive_routing=true", "workload.kind=alltoall"}, ft...),
			"workload.kind alltoall runs the hca model's transport"},
		{[]string{"topology.adaptive_routing=true", "workload.kind=stream"},
			"topology.adaptive_routing: true is set, but topology.kind back-to-back does not use it (no switches; remove the key)"},
	} {
		_, err := Load(nil, tc.sets)
		require.Error(t, err, "%v", tc.sets)
		assert.Contains(t, err.Error(), tc.want)
		assert.NotContains(t, err.Error(), "\n")
	}
	// Synthetic workloads take it.
	for _, kind := range []string{"uniform", "permutation", "shift", "bitcomp", "hotspot", "incast"} {
		_, err := Load(nil, append([]string{"topology.adaptive_routing=true", "workload.kind=" + kind}, ft...))
		assert.NoError(t, err, kind)
	}
}

// interleavedSets is the demonstration of docs/fabric.md, "Adaptive
// routing": testdata/ar-interleaved.topo (two radix-4 leaves, two spines,
// even hosts on Leaf[0], odd on Leaf[1]) under D-mod-K and a shift by one,
// 4 KiB packets at 90 % of the link, VL buffers of 16 packets (enough for
// the credit loop, so only routing limits the rate).
func interleavedSets(ar bool, extra ...string) []string {
	return append([]string{"topology.kind=file", "topology.file=testdata/ar-interleaved.topo", "switch.radix=4",
		"switch.vls=1", "topology.routing=dmodk", fmt.Sprintf("topology.adaptive_routing=%v", ar),
		"workload.kind=shift", "workload.shift=1", "workload.size=4096", "workload.offered_load=0.9",
		"switch.vl_buffer_bytes=66560", "workload.warmup_ns=2000", "workload.measure_ns=30000"}, extra...)
}

// runARChecked runs sets with the checkers attached as --check attaches them
// (the route check on the subnet's routes, reordering allowed with AR) and
// returns the metrics and the first violation, if any.
func runARChecked(t *testing.T, mutate func(*Simulation), sets ...string) (map[string]any, error) {
	t.Helper()
	l, err := Load(nil, append([]string{"sim.check=true"}, sets...))
	require.NoError(t, err)
	var chk *verif.Checkers
	var view *Simulation
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		view = s
		require.NotNil(t, s.Net)
		chk = verif.AttachCheckers(verif.CheckConfig{Routes: s.Net, ReorderSLs: s.Net.Subnet.ARSLs(),
			OnViolation: func(*verif.Violation) { s.Stop() }}, s.Blocks...)
		if mutate != nil {
			mutate(s)
		}
	}})
	require.NoError(t, err)
	chk.Finish(view.Now(), view.Settled)
	return m, chk.Err()
}

// TestAdaptiveRoutingSplitsSharedUplink: the two flows of each leaf
// (Host[0] → Host[1] and Host[2] → Host[3] on Leaf[0]; Host[1] → Host[2]
// and Host[3] → Host[0] on Leaf[1]) go to destinations of one parity, and
// D-mod-K climbs toward host d on up-port d mod 2, so statically both climb
// one up-link and descend one spine link. Two flows on one link share its
// rate R: the wire bytes they deliver in the window add up to at most R ×
// window, so each leaf's pair accepts at most 1 link's worth, and the four
// hosts' mean accepted load is at most 2/4 = 0.5 of the link, whatever the
// offered load above it (a packet straddling the window's edges counts in
// proportion, so the bound holds to a fraction of one packet per flow).
//
// With adaptive routing both up-ports of the leaf are in each remote
// destination's group. The first flow's packets in flight take credits
// from its up-link, so when the other flow's next packet arrives the idle
// up-link has the lower load (queued + pending − credits) and takes it;
// from then on each packet leaves on the up-link with less backlog, the
// two flows' 2 × 0.9 of a link spread over two links, each spine link down
// carries what its up-link did, and every flow runs at its offered load.
func TestAdaptiveRoutingSplitsSharedUplink(t *testing.T) {
	const offered = 0.9
	static, err := runARChecked(t, nil, interleavedSets(false)...)
	require.NoError(t, err)
	ar, err := runARChecked(t, nil, interleavedSets(true)...)
	require.NoError(t, err, "the checkers (lossless, route, buffers, credits) hold under AR")
	for _, m := range []map[string]any{static, ar} {
		assert.Equal(t, true, m["drain_complete"])
		assert.EqualValues(t, 0, m["packets_dropped"])
		assert.EqualValues(t, 0, m["packets_misrouted"])
	}
	assert.NotContains(t, static, "packets_reordered", "static results keep their keys")
	require.Contains(t, ar, "packets_reordered")
	t.Logf("AR: %v of %v measured packets arrived behind a later one of their flow", ar["packets_reordered"], ar["latency_ns"].(map[string]float64)["count"])
	s, a := static["accepted_load"].(float64), ar["accepted_load"].(float64)
	t.Logf("accepted load at %.2f offered: static %.4f, AR %.4f", offered, s, a)
	assert.LessOrEqual(t, s, 0.5+0.005, "static: two flows share each up-link")
	assert.Greater(t, s, 0.49, "static: the shared link runs full")
	assert.InEpsilon(t, offered, a, 0.01, "AR: every flow at its offered load (static %.3f, AR %.3f)", s, a)
}

// TestAdaptiveRoutingUniformLowLoad: at 10 % uniform load a packet rarely
// finds a queue, ties go to the LFT's port, so AR routes almost every
// packet as the static tables do: the same accepted load (the offered
// one) and a mean latency within 2 % of static.
func TestAdaptiveRoutingUniformLowLoad(t *testing.T) {
	sets := func(ar bool) []string {
		return []string{"topology.kind=fat-tree-2", "switch.radix=8", "topology.hosts=32", "switch.vls=1",
			"topology.routing=dmodk", fmt.Sprintf("topology.adaptive_routing=%v", ar), "workload.kind=uniform",
			"workload.size=4096", "workload.offered_load=0.1", "workload.measure_ns=30000"}
	}
	static, err := runARChecked(t, nil, sets(false)...)
	require.NoError(t, err)
	ar, err := runARChecked(t, nil, sets(true)...)
	require.NoError(t, err)
	s, a := static["accepted_load"].(float64), ar["accepted_load"].(float64)
	assert.InEpsilon(t, s, a, 0.01)
	assert.InEpsilon(t, 0.1, a, 0.05)
	sl := static["latency_ns"].(map[string]float64)["mean"]
	al := ar["latency_ns"].(map[string]float64)["mean"]
	t.Logf("accepted static %.4f AR %.4f; mean latency static %.1f ns, AR %.1f ns", s, a, sl, al)
	assert.InEpsilon(t, sl, al, 0.02, "mean latency static %.1f ns, AR %.1f ns", sl, al)
}

// TestRouteCheckCatchesPortOutsideGroup: the route check accepts every port
// of a group (the AR run above passes it) and fails a packet sent out of a
// port that is neither the LFT's nor in the group: Leaf[0]'s group for
// Host[1] (its up-ports) is replaced with its two host ports, so the first
// packet Host[0] sends to Host[1] is granted toward a host.
func TestRouteCheckCatchesPortOutsideGroup(t *testing.T) {
	_, err := runARChecked(t, func(s *Simulation) {
		leaf0 := s.Net.switchOf[s.Net.Topo.Switches()[0]]
		require.Equal(t, "Fabric.Leaf[0]", leaf0.Name())
		dlid := s.Net.Subnet.HostLID(1)
		require.NotNil(t, leaf0.AR().Group(dlid))
		leaf0.AR().Set(dlid, []int{0, 1}) // switchasic ports 0 and 1: Host[0], Host[2]
	}, interleavedSets(true)...)
	require.Error(t, err)
	var v *verif.Violation
	require.ErrorAs(t, err, &v)
	assert.Equal(t, verif.InvRoute, v.Invariant)
	assert.Contains(t, v.Detail, "for dlid 2 on SL 0 granted to output")
	assert.Contains(t, v.Detail, "neither the dlid's LFT port nor, on an SL adaptive routing applies to, in its adaptive routing group")
}

// TestAdaptiveRoutingDeterministic: an AR run is the same run every time
// (results and trace byte for byte), passes every checker, and in two
// partitions gives the serial run's results (but the event count) and
// trace lines (but packet numbers and the ICRCs over them, and the order
// within a picosecond), as TestPartitionedTraceAndChecks holds static runs
// to.
func TestAdaptiveRoutingDeterministic(t *testing.T) {
	sets := []string{"topology.kind=fat-tree-2", "topology.hosts=32", "switch.radix=8", "switch.vls=2",
		"topology.routing=dmodk", "topology.adaptive_routing=true", "workload.kind=permutation", "workload.size=2048",
		"workload.offered_load=0.9", "workload.warmup_ns=1000", "workload.measure_ns=4000"}
	run := func(sets ...string) (map[string]any, string) {
		r := runRecorded(t, sets, func(s *Simulation) verif.CheckConfig {
			return verif.CheckConfig{Routes: s.Net, ReorderSLs: AllSLs}
		}, nil)
		require.True(t, r.Settled)
		require.NoError(t, r.Err, "every checker, the route check included, serial and partitioned")
		return r.M, r.Trace
	}
	m1, tr1 := run(sets...)
	m2, tr2 := run(sets...)
	assert.Equal(t, m1, m2)
	require.Greater(t, strings.Count(tr1, "\n"), 10000)
	assert.True(t, tr1 == tr2, "the same config and seed give the same trace, byte for byte")

	mp, trp := run(append([]string{"sim.partitions=2"}, sets...)...)
	assert.GreaterOrEqual(t, mp["events"], m1["events"])
	delete(mp, "events")
	delete(m1, "events")
	assert.Equal(t, m1, mp)
	norm := func(tr string) []string {
		seqField := regexp.MustCompile(` (seq|icrc)=\d+`)
		lines := strings.Split(strings.TrimSpace(tr), "\n")[1:]
		for i, ln := range lines {
			lines[i] = seqField.ReplaceAllString(ln, "")
		}
		sort.Strings(lines)
		return lines
	}
	assert.Equal(t, norm(tr1), norm(trp))
}

// TestAdaptiveRoutingDeadlock: the deadlock check walks every AR
// alternative. Groups of up*/down* candidates, and of min-hop candidates
// on a tree, stay acyclic (every engine on a three-level tree). On a ring
// of four switches (one host each) host i reaches host i+2 by two shortest
// routes, through switch i+1 or i−1. Static min-hop takes one per switch
// and its routes are acyclic; with min-hop AR groups a packet may take
// either, so the two-hop routes clockwise from all four switches make each
// clockwise channel wait for the next: a cycle of four channels, which the
// check reports as it reports the static routes of the five-switch ring.
// updown's groups never turn down→up and pass.
func TestAdaptiveRoutingDeadlock(t *testing.T) {
	for _, routing := range RoutingEngines {
		tc := TopologyConfig{Kind: KindFatTree3, Radix: 4, Oversubscription: 1, Routing: routing, AdaptiveRouting: true}
		_, sub, err := tc.BuildFabric(4, CableSpec{LengthM: 2}, SubnetOptions{Seed: 1, VLs: 1}, nil)
		require.NoError(t, err, routing)
		require.True(t, sub.AdaptiveRouting())
	}
	ring, err := Ring(4, 1, CableSpec{LengthM: 2})
	require.NoError(t, err)
	static, err := NewSubnet(ring, SubnetOptions{Routing: RoutingMinHop, VLs: 1})
	require.NoError(t, err)
	require.NoError(t, static.CheckDeadlock(nil), "static min-hop on the four-switch ring")
	ar, err := NewSubnet(ring, SubnetOptions{Routing: RoutingMinHop, VLs: 1, AdaptiveRouting: true})
	require.NoError(t, err)
	for _, x := range ring.Switches() {
		assert.Len(t, ar.ARGroup(x, ar.LID(ring.Switches()[(x-ring.Switches()[0]+2)%4])), 0, "switch LIDs have no group")
	}
	assert.Len(t, ar.ARGroup(ring.Switches()[0], ar.HostLID(2)), 2, "two shortest routes to the opposite host")
	assert.EqualError(t, ar.CheckDeadlock(nil), "deadlock: minhop routing with adaptive routing has a cycle of 4 channels in its channel dependency graph: "+
		"Fabric.Switch[0].Port[2] -> Fabric.Switch[1].Port[2] -> Fabric.Switch[2].Port[2] -> Fabric.Switch[3].Port[2] -> Fabric.Switch[0].Port[2]")
	ud, err := NewSubnet(ring, SubnetOptions{Routing: RoutingUpDown, VLs: 1, AdaptiveRouting: true})
	require.NoError(t, err)
	assert.NoError(t, ud.CheckDeadlock(nil))
}

// TestPSNBefore: packets_reordered compares PSNs in the 24-bit serial
// order, across the wrap.
func TestPSNBefore(t *testing.T) {
	assert.True(t, psnBefore(4, 5))
	assert.False(t, psnBefore(5, 5))
	assert.False(t, psnBefore(6, 5))
	assert.True(t, psnBefore(0xFFFFFF, 0), "0 follows 0xFFFFFF")
	assert.False(t, psnBefore(0, 0xFFFFFF))
}

// TestAdaptiveRoutingDeadlockNamesAR: on a ring of four switches, static
// min-hop routing is deadlock-free (each switch reaches the opposite host
// one way round) and adaptive routing, which adds the other way to each
// AR group, has the cycle of the four clockwise channels
// (TestAdaptiveRoutingDeadlock). The refusal blamed topology.routing, which
// works without AR; it names topology.adaptive_routing, says the cycle
// includes the AR alternatives and that the static routes have none.
func TestAdaptiveRoutingDeadlockNamesAR(t *testing.T) {
	tc := TopologyConfig{Kind: KindFile, File: ring4File(t), Routing: RoutingMinHop, Oversubscription: 1}
	_, _, err := tc.Fabric(3, CableSpec{LengthM: 2}, 1, 1, nil)
	require.NoError(t, err, "static min-hop on the ring of four")
	tc.AdaptiveRouting = true
	_, _, err = tc.Fabric(3, CableSpec{LengthM: 2}, 1, 1, nil)
	require.Error(t, err)
	assert.Equal(t, "topology.adaptive_routing: deadlock: minhop routing with adaptive routing has a cycle of 4 channels in its channel dependency graph: "+
		"Fabric.Switch[0].Port[2] -> Fabric.Switch[1].Port[2] -> Fabric.Switch[2].Port[2] -> Fabric.Switch[3].Port[2] -> Fabric.Switch[0].Port[2]"+
		" (the static minhop routes have none: set adaptive_routing false, or routing updown, whose AR groups keep to up*/down* routes)", err.Error())

	// On the ring of five the static min-hop routes have a cycle of their
	// own (ring5Cycle): that is the routing's, named as without AR.
	ring5 := TopologyConfig{Kind: KindFile, File: "testdata/ring5.topo", Routing: RoutingMinHop, Oversubscription: 1, AdaptiveRouting: true}
	_, _, err = ring5.Fabric(3, CableSpec{LengthM: 2}, 1, 1, nil)
	assert.ErrorContains(t, err, "topology.routing: deadlock: minhop routing with adaptive routing has a cycle of 5 channels")
}

// ring4File writes a topology file of four switches in a ring, one host
// each (port 1 the host, 2 clockwise, 3 counter-clockwise), and returns
// its path.
func ring4File(t *testing.T) string {
	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, "switch Fabric.Switch[%d] 3\nhost Fabric.Host[%d]\ncable Fabric.Host[%d].Port[1] Fabric.Switch[%d].Port[1] 1m\n", i, i, i, i)
	}
	for i := range 4 {
		fmt.Fprintf(&b, "cable Fabric.Switch[%d].Port[2] Fabric.Switch[%d].Port[3] 10m\n", i, (i+1)%4)
	}
	file := filepath.Join(t.TempDir(), "ring4.topo")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644))
	return file
}
