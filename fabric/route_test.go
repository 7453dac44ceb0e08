package fabric

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testCable = CableSpec{LengthM: 2, Medium: Copper}

// fatTreeCase is one fat tree the routing tests run on.
type fatTreeCase struct {
	name string
	topo func() (*Topology, error)
}

func fatTreeCases() []fatTreeCase {
	ft2 := func(s FatTree2Spec) func() (*Topology, error) {
		return func() (*Topology, error) { return FatTree2(s, testCable) }
	}
	ft3 := func(radix, hosts int) func() (*Topology, error) {
		return func() (*Topology, error) { return FatTree3(radix, hosts, testCable) }
	}
	return []fatTreeCase{
		{"ft2 radix 4", ft2(FatTree2Spec{Radix: 4, Oversubscription: 1})},
		{"ft2 radix 8", ft2(FatTree2Spec{Radix: 8, Oversubscription: 1})},
		{"ft2 radix 12 2:1", ft2(FatTree2Spec{Radix: 12, Oversubscription: 2})},
		{"ft2 radix 16", ft2(FatTree2Spec{Radix: 16, Oversubscription: 1})},
		{"ft2 radix 8 2 spines x2 cables", ft2(FatTree2Spec{Radix: 8, Oversubscription: 1, Spines: 2})},
		{"ft2 radix 8 3 leaves 10 hosts", ft2(FatTree2Spec{Radix: 8, Oversubscription: 1, Leaves: 3, Hosts: 10})},
		{"ft3 radix 4", ft3(4, 0)},
		{"ft3 radix 6", ft3(6, 0)},
		{"ft3 radix 8", ft3(8, 0)},
		{"ft3 radix 8 two pods", ft3(8, 20)},
	}
}

// bfsHops is the test's own shortest-path length between hosts, in links,
// through switches only (hosts do not forward).
func bfsHops(t *Topology, src int) []int {
	dist := make([]int, len(t.Nodes))
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	queue := []int{src}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if x != src && t.Nodes[x].Kind == Host {
			continue
		}
		for p := 1; p <= t.Nodes[x].Ports; p++ {
			if q, ok := t.Peer(PortRef{x, p}); ok && dist[q.Node] < 0 {
				dist[q.Node] = dist[x] + 1
				queue = append(queue, q.Node)
			}
		}
	}
	return dist
}

// TestFatTreeRoutesMinHopLoopFree routes every fat tree with every engine and
// follows every host-to-host route: each must reach its destination, visit no
// node twice, and be exactly as long as the breadth-first distance (on a fat
// tree every engine, up/down included, is min-hop).
func TestFatTreeRoutesMinHopLoopFree(t *testing.T) {
	for _, tc := range fatTreeCases() {
		topo, err := tc.topo()
		require.NoError(t, err, tc.name)
		for _, engine := range RoutingEngines {
			t.Run(tc.name+"/"+engine, func(t *testing.T) {
				sn, err := NewSubnet(topo, SubnetOptions{Routing: engine, Seed: 7, VLs: 1})
				require.NoError(t, err)
				hosts := sn.Hosts()
				checked := 0
				for _, src := range hosts {
					dist := bfsHops(topo, src)
					for _, dst := range hosts {
						if src == dst {
							continue
						}
						path, err := sn.Path(src, dst)
						require.NoError(t, err)
						visited := map[int]bool{src: true}
						for _, hop := range path[1:] {
							require.False(t, visited[hop.Node], "route %s to %s revisits %s", topo.Nodes[src].Name, topo.Nodes[dst].Name, topo.Nodes[hop.Node].Name)
							visited[hop.Node] = true
						}
						// len(path) egress ports = links crossed.
						require.Equal(t, dist[dst], len(path), "route %s to %s: %s", topo.Nodes[src].Name, topo.Nodes[dst].Name, sn.pathString(path))
						checked++
					}
				}
				assert.Equal(t, len(hosts)*(len(hosts)-1), checked)
			})
		}
	}
}

// TestSwitchLIDsRouted checks every switch can reach every other switch's LID
// (management traffic) and sends its own LID to port 0.
func TestSwitchLIDsRouted(t *testing.T) {
	topo, err := FatTree3(4, 0, testCable)
	require.NoError(t, err)
	for _, engine := range RoutingEngines {
		sn, err := NewSubnet(topo, SubnetOptions{Routing: engine, VLs: 1})
		require.NoError(t, err)
		for _, x := range topo.Switches() {
			for _, y := range topo.Switches() {
				p := sn.Egress(x, sn.LID(y))
				if x == y {
					assert.Equal(t, uint16(0), p, engine)
				} else {
					assert.NotEqual(t, NoPort, p, "%s: %s to %s", engine, topo.Nodes[x].Name, topo.Nodes[y].Name)
				}
			}
		}
	}
}

// TestDModKEqualUpLinkShare counts, at every switch below the top, how many
// host destinations each up-port carries. D-mod-K sends destination d up
// port (d / W) mod U, and on a full tree every residue class mod U has the
// same number of destinations that are not below the switch, so each up-port
// gets (hosts not below) / U.
func TestDModKEqualUpLinkShare(t *testing.T) {
	cases := []struct {
		name string
		topo func() (*Topology, error)
	}{
		{"ft2 radix 8", func() (*Topology, error) { return FatTree2(FatTree2Spec{Radix: 8, Oversubscription: 1}, testCable) }},
		{"ft2 radix 12 2:1", func() (*Topology, error) { return FatTree2(FatTree2Spec{Radix: 12, Oversubscription: 2}, testCable) }},
		{"ft2 radix 8 2 spines", func() (*Topology, error) {
			return FatTree2(FatTree2Spec{Radix: 8, Oversubscription: 1, Spines: 2}, testCable)
		}},
		{"ft3 radix 4", func() (*Topology, error) { return FatTree3(4, 0, testCable) }},
		{"ft3 radix 8", func() (*Topology, error) { return FatTree3(8, 0, testCable) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.topo()
			require.NoError(t, err)
			sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingDModK, VLs: 1})
			require.NoError(t, err)
			hosts := sn.Hosts()
			checkedPorts := 0
			for _, x := range topo.Switches() {
				var up []int
				for p := 1; p <= topo.Nodes[x].Ports; p++ {
					if q, ok := topo.Peer(PortRef{x, p}); ok && topo.Nodes[q.Node].Kind == Switch && topo.Nodes[q.Node].Level > topo.Nodes[x].Level {
						up = append(up, p)
					}
				}
				if len(up) == 0 {
					continue // the top tier has no up-links
				}
				// Hosts below x: those whose route from x leaves on a down port.
				share := map[int]int{}
				below := 0
				for i := range hosts {
					p := int(sn.Egress(x, sn.HostLID(i)))
					q, _ := topo.Peer(PortRef{x, p})
					if topo.Nodes[q.Node].Kind == Host || topo.Nodes[q.Node].Level < topo.Nodes[x].Level {
						below++
					} else {
						share[p]++
					}
				}
				want := (len(hosts) - below) / len(up)
				require.Equal(t, 0, (len(hosts)-below)%len(up), "a full tree divides evenly")
				for _, p := range up {
					assert.Equal(t, want, share[p], "%s up-port %d", topo.Nodes[x].Name, p)
					checkedPorts++
				}
			}
			assert.Positive(t, checkedPorts)
		})
	}
}

// maxShiftLoad returns, over all shift permutations i → i+k mod N (k = 1..N-1),
// the largest number of flows that share one channel, and the number of
// shifts in which some channel carries more than one flow.
func maxShiftLoad(t *testing.T, sn *Subnet) (worst, blocked int) {
	n := len(sn.Hosts())
	for k := 1; k < n; k++ {
		flows := make([][2]int, n)
		for i := range flows {
			flows[i] = [2]int{i, (i + k) % n}
		}
		shiftWorst, err := sn.MaxChannelLoad(flows)
		require.NoError(t, err)
		worst = max(worst, shiftWorst)
		if shiftWorst > 1 {
			blocked++
		}
	}
	return worst, blocked
}

// TestMaxChannelLoad: on one switch of 4 hosts, the flows 0→3, 1→3, 2→3 all
// leave through host 3's switch port: 3 flows on one channel; 0→1, 2→3 share
// nothing: 1.
func TestMaxChannelLoad(t *testing.T) {
	topo, err := SingleSwitch(4, 4, testCable)
	require.NoError(t, err)
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 1})
	require.NoError(t, err)
	got, err := sn.MaxChannelLoad([][2]int{{0, 3}, {1, 3}, {2, 3}})
	require.NoError(t, err)
	assert.Equal(t, 3, got)
	got, err = sn.MaxChannelLoad([][2]int{{0, 1}, {2, 3}, {1, 1}})
	require.NoError(t, err)
	assert.Equal(t, 1, got)
}

// TestDModKShiftNonBlocking: on a full non-blocking fat tree D-mod-K gives
// every shift permutation disjoint channels (Zahavi 2010), so no channel ever
// carries two flows. Random min-hop routing on the same tree does not: with
// U up-ports per leaf and U sources per leaf, the chance that a random choice
// is collision-free for every shift is negligible, and the test pins the seed.
func TestDModKShiftNonBlocking(t *testing.T) {
	cases := []struct {
		name string
		topo func() (*Topology, error)
	}{
		{"ft2 radix 8", func() (*Topology, error) { return FatTree2(FatTree2Spec{Radix: 8, Oversubscription: 1}, testCable) }},
		{"ft2 radix 8 2 spines", func() (*Topology, error) {
			return FatTree2(FatTree2Spec{Radix: 8, Oversubscription: 1, Spines: 2}, testCable)
		}},
		{"ft3 radix 4", func() (*Topology, error) { return FatTree3(4, 0, testCable) }},
		{"ft3 radix 6", func() (*Topology, error) { return FatTree3(6, 0, testCable) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.topo()
			require.NoError(t, err)
			dmodk, err := NewSubnet(topo, SubnetOptions{Routing: RoutingDModK, VLs: 1})
			require.NoError(t, err)
			worst, blocked := maxShiftLoad(t, dmodk)
			assert.Equal(t, 1, worst, "D-mod-K: one flow per channel in every shift")
			assert.Zero(t, blocked)

			random, err := NewSubnet(topo, SubnetOptions{Routing: RoutingRandom, Seed: 1, VLs: 1})
			require.NoError(t, err)
			worst, blocked = maxShiftLoad(t, random)
			assert.Greater(t, worst, 1, "random routing shares a channel in some shift")
			assert.Positive(t, blocked)
		})
	}
}

// TestRandomRoutingSeeded: the same seed gives the same tables; another seed
// gives different ones.
func TestRandomRoutingSeeded(t *testing.T) {
	topo, err := FatTree2(FatTree2Spec{Radix: 8, Oversubscription: 1}, testCable)
	require.NoError(t, err)
	tables := func(seed uint64) string {
		sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingRandom, Seed: seed, VLs: 1})
		require.NoError(t, err)
		return fmt.Sprint(sn.LFT(0), sn.LFT(1), sn.LFT(2))
	}
	assert.Equal(t, tables(3), tables(3))
	assert.NotEqual(t, tables(3), tables(4))
}

// TestMinHopBalancesPorts: at a leaf of a radix-8 two-level tree (4 down, 4
// up), OpenSM's minhop gives each of the 4 up-ports an equal share of the
// 28 remote hosts: 7 each.
func TestMinHopBalancesPorts(t *testing.T) {
	topo, err := FatTree2(FatTree2Spec{Radix: 8, Oversubscription: 1}, testCable)
	require.NoError(t, err)
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 1})
	require.NoError(t, err)
	leaf, ok := topo.Lookup("Fabric.Leaf[0]")
	require.True(t, ok)
	count := map[uint16]int{}
	for i := range sn.Hosts() {
		count[sn.Egress(leaf, sn.HostLID(i))]++
	}
	// Ports 1..4 each own one local host; ports 5..8 share 32 − 4 = 28.
	for p := uint16(1); p <= 4; p++ {
		assert.Equal(t, 1, count[p], "port %d", p)
	}
	for p := uint16(5); p <= 8; p++ {
		assert.Equal(t, 7, count[p], "port %d", p)
	}
}

func TestRoutingErrors(t *testing.T) {
	ring, err := Ring(4, 1, testCable)
	require.NoError(t, err)
	_, err = NewSubnet(ring, SubnetOptions{Routing: RoutingDModK, VLs: 1})
	assert.ErrorContains(t, err, "dmodk needs a fat tree")
	_, err = NewSubnet(ring, SubnetOptions{Routing: "ftree", VLs: 1})
	assert.EqualError(t, err, `topology.routing: "ftree" is not a routing engine (minhop, dmodk, updown, random)`)
	_, err = NewSubnet(ring, SubnetOptions{Routing: RoutingMinHop, VLs: 3})
	assert.ErrorContains(t, err, "3 is not a VL count")
}

// TestUpDownAutoRootsStubSwitches routes a fabric whose automatically chosen
// roots cannot serve it. Two switches, each with one host, are cabled
// together, and each carries a spare switch with no hosts:
//
//	Stub[0] — Switch[0] — Switch[1] — Stub[1]
//	             |            |
//	          Host[0]      Host[1]
//
// The stubs are the switches farthest from any host (2 hops), so both would
// be roots (rank 0) and both Switch[0] and Switch[1] rank 1; the hop between
// them goes up toward the lower node index. Stub[1]'s only hop is down, to
// Switch[1], which reaches Host[0] only by going up to Switch[0]: down then
// up, illegal, so Stub[1] would have no route. With one root every switch
// climbs its breadth-first parents to it and descends the same tree, so
// every pair has a route; marking two roots by hand keeps the error, which
// then names the roots.
func TestUpDownAutoRootsStubSwitches(t *testing.T) {
	const src = `
switch Fabric.Switch[0] 3
switch Fabric.Switch[1] 3
switch Fabric.Stub[0] 1
switch Fabric.Stub[1] 1
host Fabric.Host[0]
host Fabric.Host[1]
cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]
cable Fabric.Host[1].Port[1] Fabric.Switch[1].Port[1]
cable Fabric.Switch[0].Port[2] Fabric.Switch[1].Port[2]
cable Fabric.Switch[0].Port[3] Fabric.Stub[0].Port[1]
cable Fabric.Switch[1].Port[3] Fabric.Stub[1].Port[1]
`
	topo, err := ParseTopology(strings.NewReader(src), "stubs.topo", testCable)
	require.NoError(t, err)
	stub0, _ := topo.Lookup("Fabric.Stub[0]")
	stub1, _ := topo.Lookup("Fabric.Stub[1]")
	sw0, _ := topo.Lookup("Fabric.Switch[0]")
	sw1, _ := topo.Lookup("Fabric.Switch[1]")
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingUpDown, VLs: 1})
	require.NoError(t, err)
	// One root, Stub[0] (the first of the two in node order), then breadth
	// first: Switch[0] 1, Switch[1] 2, Stub[1] 3.
	assert.Equal(t, 0, sn.Rank(stub0))
	assert.Equal(t, 1, sn.Rank(sw0))
	assert.Equal(t, 2, sn.Rank(sw1))
	assert.Equal(t, 3, sn.Rank(stub1))
	for _, a := range sn.Hosts() {
		for _, b := range sn.Hosts() {
			if a != b {
				_, err := sn.Path(a, b)
				assert.NoError(t, err)
			}
		}
	}
	// Every switch routes every host LID (its table is complete).
	for _, x := range topo.Switches() {
		for i := range sn.Hosts() {
			assert.NotEqual(t, NoPort, sn.Egress(x, sn.HostLID(i)), "%s to host %d", topo.Nodes[x].Name, i)
		}
	}
	assert.NoError(t, sn.CheckDeadlock(nil))

	topo.Nodes[stub0].Root = true
	topo.Nodes[stub1].Root = true
	_, err = NewSubnet(topo, SubnetOptions{Routing: RoutingUpDown, VLs: 1})
	assert.EqualError(t, err, "subnet: updown routing: Fabric.Stub[1] has no up*/down* route to Fabric.Host[0] from the root switches Fabric.Stub[0], Fabric.Stub[1] (a route climbs toward them, then descends; mark one root, e.g. a root line in the topology file)")
}
