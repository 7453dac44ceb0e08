package fabric

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/verif"
)

// flood follows group g's MFT entries from sender host h as the switches
// forward (every port of the entry but the arrival port) and counts the
// copies each host receives; more than maxHops forwardings is a loop.
func flood(t *testing.T, sub *Subnet, g *MulticastGroup, h int) []int {
	t.Helper()
	topo := sub.Topo
	got := make([]int, len(sub.Hosts()))
	hostIdx := map[int]int{}
	for i, n := range sub.Hosts() {
		hostIdx[n] = i
	}
	type at struct{ node, in int }
	first, ok := topo.Peer(PortRef{sub.Hosts()[h], 1})
	require.True(t, ok)
	queue := []at{{first.Node, first.Port}}
	hops := 0
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		mlids, ports := sub.MFT(x.node)
		for k, id := range mlids {
			if id != g.MLID {
				continue
			}
			for _, p := range ports[k] {
				if p == x.in {
					continue
				}
				hops++
				require.Less(t, hops, 10000, "a loop")
				q, ok := topo.Peer(PortRef{x.node, p})
				require.True(t, ok)
				if topo.Nodes[q.Node].Kind == Host {
					got[hostIdx[q.Node]]++
				} else {
					queue = append(queue, at{q.Node, q.Port})
				}
			}
		}
	}
	return got
}

// TestMulticastTrees: the subnet manager's trees on fat trees, their shape
// derived from the builders' wiring (FatTree2, FatTree3), and every member
// reached exactly once from every member, no other host ever.
//
// fat-tree-2, radix 8, 16 hosts: 4 leaves of 4 hosts (host h on leaf h/4),
// 4 spines, the roots; the first group's root is Spine[0]. A group of all
// 16 hosts spans 4 leaves and one spine: 5 switches, the spine's entry its
// 4 leaf ports, each leaf's its 4 host ports and its up-port to Spine[0].
// Hosts 0 and 5 (leaves 0 and 1): 3 switches. Hosts 0 and 1 (leaf 0): the
// leaf alone, no root.
//
// fat-tree-3, radix 4, 16 hosts: half = 2, 4 pods of 2 leaves (2 hosts
// each) and 2 spines, 4 cores (the roots, Core[0] first). Core[0] links to
// spine 0 of every pod. Hosts {0, 2, 8} (leaves 0 and 1 of pod 0, leaf 4 of
// pod 2): Core[0], Spine[0], Spine[4], Leaf[0], Leaf[1], Leaf[4]: 6
// switches. Hosts {0, 2}: Core[0] leads to one branch and is cut off, the
// root is Spine[0]: 3 switches. All 16 hosts: Core[0], the 4 pods' spine
// 0 and the 8 leaves, 13 switches (the other cores and spines unused).
func TestMulticastTrees(t *testing.T) {
	tests := []struct {
		name     string
		sets     []string
		members  []int
		switches int
		root     string
	}{
		{"ft2 all", []string{"topology.kind=fat-tree-2", "topology.hosts=16", "switch.radix=8"}, seq(0, 16), 5, "Fabric.Spine[0]"},
		{"ft2 two leaves", []string{"topology.kind=fat-tree-2", "topology.hosts=16", "switch.radix=8"}, []int{0, 5}, 3, "Fabric.Spine[0]"},
		{"ft2 one leaf", []string{"topology.kind=fat-tree-2", "topology.hosts=16", "switch.radix=8"}, []int{0, 1}, 1, ""},
		{"ft3 two pods", []string{"topology.kind=fat-tree-3", "topology.hosts=16", "switch.radix=4"}, []int{0, 2, 8}, 6, "Fabric.Core[0]"},
		{"ft3 one pod", []string{"topology.kind=fat-tree-3", "topology.hosts=16", "switch.radix=4"}, []int{0, 2}, 3, "Fabric.Spine[0]"},
		{"ft3 all", []string{"topology.kind=fat-tree-3", "topology.hosts=16", "switch.radix=4"}, seq(0, 16), 1 + 4 + 8, "Fabric.Core[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(nil, append([]string{"workload.kind=multicast", "switch.queueing=fifo"}, tc.sets...))
			require.NoError(t, err)
			_, sub, err := ConfigureFabric(&l.Config, 1)
			require.NoError(t, err)
			g, err := sub.AddMulticastGroup(tc.members)
			require.NoError(t, err)
			assert.Equal(t, uint16(0xC000), g.MLID)
			assert.Len(t, g.Switches, tc.switches)
			if tc.root == "" {
				assert.Equal(t, -1, g.Root)
			} else {
				require.GreaterOrEqual(t, g.Root, 0)
				assert.Equal(t, tc.root, sub.Topo.Nodes[g.Root].Name)
			}
			member := map[int]bool{}
			for _, h := range tc.members {
				member[h] = true
			}
			for _, src := range tc.members {
				got := flood(t, sub, g, src)
				for h, n := range got {
					switch {
					case h == src:
						assert.Zero(t, n, "sender %d gets its own packet back", src)
					case member[h]:
						assert.Equal(t, 1, n, "member %d from %d", h, src)
					default:
						assert.Zero(t, n, "non-member %d from %d", h, src)
					}
				}
			}
		})
	}
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

// mcastSets is a two-level NDR fat tree (4 leaves × 4 hosts, 4 spines,
// radix 8, 2 m cables) with FIFO switches and 1024-byte buffers' worth of
// room: a multicast run's base.
var mcastSets = []string{"topology.kind=fat-tree-2", "topology.hosts=16", "switch.radix=8", "switch.vls=1",
	"switch.queueing=fifo", "link.generation=NDR", "link.width=4x", "link.length_m=2",
	"workload.kind=multicast", "workload.warmup_ns=2000", "workload.measure_ns=20000"}

// runMcastChecked runs a multicast config with the checkers (lossless with
// the groups; the route check when routes) and a trace recorder, mutate
// changing the built fabric first; it returns the metrics, the trace and
// the first violation.
func runMcastChecked(t *testing.T, routes bool, mutate func(*Simulation), sets ...string) (map[string]any, string, error) {
	t.Helper()
	return runMcastCheckedOn(t, routes, mutate, append(append([]string{}, mcastSets...), sets...)...)
}

// runMcastCheckedOn is runMcastChecked on the sets alone, without mcastSets.
func runMcastCheckedOn(t *testing.T, routes bool, mutate func(*Simulation), sets ...string) (map[string]any, string, error) {
	t.Helper()
	r := runRecorded(t, sets, func(s *Simulation) verif.CheckConfig {
		cc := verif.CheckConfig{Multicast: s.Net.MulticastMembers()}
		if routes {
			cc.Routes = s.Net
		}
		return cc
	}, mutate)
	return r.M, r.Trace, r.Err
}

// TestMulticastRunFatTree: every member but the sender receives every
// packet once (the checkers, with the route check, find nothing), the
// counts add up, and the same config and seed give the same trace byte for
// byte. Host 0 sends 4096-byte payloads (4170 bytes on the wire) at the
// line rate (offered load 1: a packet every slot) to all 16 hosts; every
// output on the tree carries this one flow only, so each member receives
// at the sender's rate, the line rate: member_accepted_load 1 (the window
// counts bytes pro rata, so its edges cost nothing). The switches' buffers
// (65536 bytes per VL) cover the credit loop (switch.md). Two senders on
// different leaves (hosts 0 and 5) at 0.3 each share the tree both ways.
func TestMulticastRunFatTree(t *testing.T) {
	m, tr1, err := runMcastChecked(t, true, nil, "workload.size=4096", "workload.offered_load=1",
		"switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536")
	require.NoError(t, err)
	assert.Equal(t, true, m["drain_complete"])
	sent := m["packets_sent"].(uint64)
	require.Greater(t, sent, uint64(200))
	assert.Equal(t, sent*15, m["copies_expected"])
	assert.Equal(t, sent*15, m["copies_delivered"])
	assert.Equal(t, map[string]any{"min": sent, "max": sent}, m["member_copies"])
	assert.InDelta(t, 1.0, m["member_accepted_load"], 0.002)
	assert.Equal(t, 5, m["mcast_tree_switches"])
	// Per packet 19 copies in the tree: Leaf[0] 3 hosts + 1 up, Spine[0]
	// 3 leaves, 3 leaves × 4 hosts.
	assert.InDelta(t, 19.0/5, m["switch_mcast_fanout_per_packet"], 1e-9)
	assert.InDelta(t, 1.0, m["switch_mcast_rounds_per_packet"], 1e-9, "free outputs: no fanout split")

	m2, tr2, err := runMcastChecked(t, true, nil, "workload.size=4096", "workload.offered_load=1",
		"switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536")
	require.NoError(t, err)
	assert.Equal(t, m, m2)
	require.Greater(t, strings.Count(tr1, "\n"), 10000)
	assert.True(t, tr1 == tr2, "the same config and seed give the same trace, byte for byte")

	m, _, err = runMcastChecked(t, true, nil, "workload.senders=0,5", "workload.offered_load=0.3", "workload.size=1024")
	require.NoError(t, err)
	assert.Equal(t, true, m["drain_complete"])
	assert.Equal(t, m["copies_expected"], m["copies_delivered"])
	assert.Equal(t, m["packets_sent"].(uint64)*15, m["copies_delivered"])
}

// TestMulticastCheckerCatchesBrokenMFT: the checkers catch a broken MFT.
// Host 0 sends to all 16 hosts; Leaf[1] holds hosts 4..7 on ports 1..4.
//   - a missing port: Leaf[1]'s entry loses port 2 (host 5), so host 5
//     never gets a packet; the run does not drain and, settled, the
//     lossless check names host 5;
//   - a loop: Leaf[1]'s entry gains up-port 6 (to Spine[1], not on the
//     tree) and Spine[1]'s (empty) entry all its leaf ports, so copies come
//     back down to every leaf and up again to Spine[0]: the sender gets its
//     packet back and members get packets twice. The route check sees the first copy leave Leaf[1] by a
//     port its programmed entry does not hold; without it, the lossless
//     check sees a duplicate.
func TestMulticastCheckerCatchesBrokenMFT(t *testing.T) {
	swNamed := func(s *Simulation, name string) int {
		for k, sw := range s.Net.Switches {
			if sw.Name() == name {
				return k
			}
		}
		t.Fatalf("no switch %s", name)
		return -1
	}
	edit := func(s *Simulation, name string, f func(*components.PortSet)) {
		sw := s.Net.Switches[swNamed(s, name)]
		if sw.MFT() == nil {
			t.Fatalf("%s has no MFT", name)
		}
		mask := sw.MFT().Lookup(0xC000)
		f(&mask)
		sw.MFT().Set(0xC000, mask)
	}
	sets := []string{"workload.offered_load=0.2", "workload.size=256", "workload.measure_ns=5000", "workload.drain_ns=20000"}

	_, _, err := runMcastChecked(t, true, func(s *Simulation) {
		edit(s, "Fabric.Leaf[1]", func(m *components.PortSet) { m.Clear(1) })
	}, sets...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant lossless")
	assert.Contains(t, err.Error(), "never reached Fabric.Host[5]")

	loop := func(s *Simulation) {
		edit(s, "Fabric.Leaf[1]", func(m *components.PortSet) { m.Set(5) })
		edit(s, "Fabric.Spine[1]", func(m *components.PortSet) {
			for p := 0; p < 4; p++ {
				m.Set(p)
			}
		})
	}
	_, _, err = runMcastChecked(t, true, loop, sets...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant route")
	assert.Contains(t, err.Error(), "which the group's MFT entry does not hold")

	_, _, err = runMcastChecked(t, false, loop, sets...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant lossless")
	assert.Regexp(t, `delivered twice to|delivered back to its sender|\(a duplicate\)`, err.Error())
}

// TestMulticastCopyToAnIdleHost: only a wrong MFT entry can send a copy to
// a host in no group (an idle host: no background runs), and the run must
// say so rather than stop. Group 0-5 on the 16-host tree: Leaf[1] (hosts 4
// to 7 on its ports 0 to 3) is in the tree for members 4 and 5; its entry
// given port 2 as well sends every packet's copy to Host[6], in no group.
// The idle host takes each at its tail as an endpoint does (its blocks
// released, so Leaf[1]'s output to it keeps its credits and the copies to
// the members are not held up), counts it misrouted, and announces it, so
// the lossless checker names Host[6]. Every packet the sender (host 0, on
// Leaf[0]) sends crosses Leaf[1] once, so packets_misrouted is
// packets_sent, and every member still gets every packet.
func TestMulticastCopyToAnIdleHost(t *testing.T) {
	toHost6 := func(s *Simulation) {
		for _, sw := range s.Net.Switches {
			if sw.Name() == "Fabric.Leaf[1]" {
				mask := sw.MFT().Lookup(0xC000)
				require.True(t, mask.Has(0) && mask.Has(1) && !mask.Has(2), "Leaf[1]'s entry holds the members' ports only")
				mask.Set(2)
				sw.MFT().Set(0xC000, mask)
				return
			}
		}
		t.Fatal("no Fabric.Leaf[1]")
	}
	sets := append(append([]string{}, mcastSets...), "workload.group=0-5", "workload.offered_load=0.2",
		"workload.size=256", "workload.measure_ns=5000", "workload.drain_ns=20000")

	_, _, err := runMcastCheckedOn(t, false, toHost6, sets...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant lossless")
	assert.Contains(t, err.Error(), "delivered at Fabric.Host[6], which is not a member of the group (misrouted)")

	l, err := Load(nil, sets)
	require.NoError(t, err)
	m, err := Run(l, RunOptions{Observe: toHost6})
	require.NoError(t, err)
	sent := m["packets_sent"]
	require.Positive(t, sent)
	assert.Equal(t, sent, m["packets_misrouted"])
	assert.Equal(t, m["copies_expected"], m["copies_delivered"])

	l, err = Load(nil, sets)
	require.NoError(t, err)
	clean, err := Run(l, RunOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 0, clean["packets_misrouted"])
}

// TestMulticastRefusals: what a multicast run cannot do is refused on one
// line naming the key, the value and what is allowed, when the config is
// read or, for what needs the fabric's host count, when the run is built.
func TestMulticastRefusals(t *testing.T) {
	tests := []struct {
		sets []string
		want string
	}{
		{[]string{"switch.queueing=voq"}, `switch.queueing: "voq" with workload.kind multicast: replication is modelled for fifo input queueing only (set switch.queueing: fifo)`},
		{[]string{"topology.adaptive_routing=true"}, "topology.adaptive_routing: true with workload.kind multicast is not modelled (the MFT is static); set it to false"},
		{[]string{"cc.enable=true"}, "cc.enable: true with workload.kind multicast is not modelled; set it to false"},
		{[]string{"link.pre_fec_ber=1e-3"}, "link.pre_fec_ber: 0.001 with workload.kind multicast is not modelled (a datagram lost to a failed codeword is not resent, and the checker has no rule for it); use link.pre_fec_ber: 0"},
		{[]string{"workload.sizes=256:1"}, `workload.sizes: "256:1" with workload.kind multicast is not supported; give one payload in workload.size`},
		{[]string{"workload.size=4096", "switch.vl_buffer_bytes=4160"}, "switch.vl_buffer_bytes: 4160 cannot hold one 4170-byte multicast packet (a 4096-byte payload with a GRH); give at least 4224"},
		{[]string{"workload.group=0,3-x"}, `workload.group: "3-x" in "0,3-x" is not a host index or range (e.g. 0-7,12)`},
		{[]string{"workload.group=0-16"}, `workload.group: host 16 in "0-16" is beyond the fabric's 16 hosts (0 to 15)`},
		{[]string{"workload.group=0-3,3"}, `workload.group: host 3 appears twice in "0-3,3"`},
		{[]string{"workload.group=4"}, `workload.group: "4" has 1 member; a group needs at least two (a sender and a receiver)`},
		{[]string{"workload.group=0-7", "workload.senders=9"}, `workload.senders: host 9 is not a member of workload.group "0-7" (a port sends to a group it has joined)`},
		// Several groups (workload.groups).
		{[]string{`workload.groups=["0-3","3-5"]`, "workload.senders=3"}, `workload.senders: host 3 is in workload.groups[0] "0-3" and workload.groups[1] "3-5"; say which it sends to in workload.group_senders (one host list per group) instead`},
		{[]string{`workload.groups=["0-3","0,8"]`}, `workload.groups[1]: its first member, host 0, is the first of workload.groups[0] "0-3" too, and a host sends to one group; name each group's senders in workload.group_senders`},
		// Senders per group (workload.group_senders).
		{[]string{`workload.groups=["0-3","0,8"]`, `workload.group_senders=["1"]`}, "workload.group_senders: 1 lists for the 2 of workload.groups; give one host list per group, in its order"},
		{[]string{`workload.group_senders=["1"]`}, "workload.group_senders: 1 lists are set without workload.groups; they name each group's senders, so give the groups too (or use workload.senders)"},
		{[]string{`workload.groups=["0-3","0,8"]`, `workload.group_senders=["1","8"]`, "workload.senders=1"}, `workload.senders: "1" is set beside workload.group_senders; name the senders in one of the two`},
		{[]string{`workload.groups=["0-3","0,8"]`, `workload.group_senders=["1","9"]`}, `workload.group_senders[1]: host 9 is not a member of workload.groups[1] "0,8" (a port sends to a group it has joined)`},
		{[]string{`workload.groups=["0-3","0,8"]`, `workload.group_senders=["0","0"]`}, `workload.group_senders[1]: host 0 already sends to workload.groups[0] "0-3"; a host sends to one group (one stream a host is modelled)`},
		{[]string{`workload.groups=["0-3","0,8"]`, `workload.group_senders=["1","y"]`}, `workload.group_senders[1]: "y" in "y" is not a host index or range (e.g. 0-7,12)`},
		{[]string{`workload.groups=["0-3","0,8"]`, `workload.group_senders=["1","16"]`}, `workload.group_senders[1]: host 16 in "16" is beyond the fabric's 16 hosts (0 to 15)`},
		{[]string{`workload.groups=["0-3","8-11"]`, "workload.senders=0,5"}, "workload.senders: host 5 is in none of workload.groups (a port sends to a group it has joined)"},
		{[]string{`workload.groups=["0-3","8-11"]`, "workload.senders=0,1"}, `workload.senders: "0,1" names no host of workload.groups[1] "8-11"; give each group a sender`},
		{[]string{`workload.groups=["0-3","x"]`}, `workload.groups[1]: "x" in "x" is not a host index or range (e.g. 0-7,12)`},
		{[]string{`workload.groups=["0-3","8-16"]`}, `workload.groups[1]: host 16 in "8-16" is beyond the fabric's 16 hosts (0 to 15)`},
		{[]string{`workload.groups=["0-3","5"]`}, `workload.groups[1]: "5" has 1 member; a group needs at least two (a sender and a receiver)`},
		{[]string{`workload.groups=["0-3"]`, "workload.group=4-7"}, `workload.group: "4-7" is set beside workload.groups; give the one group in groups, or use group alone`},
		{[]string{"workload.groups=[" + strings.Repeat(`"0-1",`, 16383) + `"0-1"]`}, "workload.groups: 16384 groups is more than the 16383 multicast LIDs 0xC000 to 0xFFFE"},
		// Per-group loads and sizes (workload.group_loads, group_sizes).
		{[]string{`workload.groups=["0-3","8-11"]`, "workload.group_loads=[0.5]"}, "workload.group_loads: 1 entries for the 2 of workload.groups; give one per group, in its order"},
		{[]string{"workload.group_loads=[0.5]"}, "workload.group_loads: 1 entries are set without workload.groups; they are per group, so give the groups too (or use workload.offered_load)"},
		{[]string{`workload.groups=["0-3","8-11"]`, "workload.group_loads=[0.5,1.5]"}, "workload.group_loads[1]: 1.5 is out of range (0.001 to 1, a fraction of the link)"},
		{[]string{`workload.groups=["0-3","8-11"]`, "workload.group_loads=[0,0.5]"}, "workload.group_loads[0]: 0 is out of range (0.001 to 1, a fraction of the link)"},
		{[]string{`workload.groups=["0-3","8-11"]`, "workload.group_sizes=[256,512,1024]"}, "workload.group_sizes: 3 entries for the 2 of workload.groups; give one per group, in its order"},
		{[]string{"workload.group_sizes=[256]"}, "workload.group_sizes: 1 entries are set without workload.groups; they are per group, so give the groups too (or use workload.size)"},
		{[]string{`workload.groups=["0-3","8-11"]`, "workload.group_sizes=[256,0]"}, "workload.group_sizes[1]: 0 is out of range for a multicast packet (1 to link.mtu 4096)"},
		{[]string{`workload.groups=["0-3","8-11"]`, "workload.group_sizes=[256,4096]", "switch.vl_buffer_bytes=4160"}, "switch.vl_buffer_bytes: 4160 cannot hold one 4170-byte multicast packet (a 4096-byte payload with a GRH); give at least 4224"},
		// A unicast background (workload.background).
		{[]string{"workload.background=true"}, "workload.background: true, but every one of the fabric's 16 hosts is in a multicast group; background traffic needs hosts in none (smaller groups, more topology.hosts), or workload.background_hosts: all"},
		{[]string{"workload.background=true", "workload.background_hosts=some"}, `workload.background_hosts: "some" is not a choice (others: the hosts in no multicast group; all: every host)`},
		{[]string{"workload.background=true", "workload.group=0-8", "workload.background_pattern=bitcomp"}, "workload.background_pattern: bitcomp needs a power-of-two number of background hosts, the fabric has 7 besides the 9 multicast group members"},
		{[]string{"workload.group=0-14", "workload.background=true"}, "workload.background_pattern: uniform needs at least 2 background hosts, the fabric has 1 besides the 15 multicast group members"},
		{[]string{"workload.background_load=1.5", "workload.background=true"}, "workload.background_load: 1.5 is out of range (0 for workload.offered_load, or above 0 up to 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.want[:20], func(t *testing.T) {
			l, err := Load(nil, append(append([]string{}, mcastSets...), tc.sets...))
			if err == nil {
				_, err = Run(l, RunOptions{})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestMulticastPerCycleRoundsAgree: the event-driven rounds give a
// multicast run the results and trace lines of a round on every core clock
// edge (TestPerCycleRoundsAgree's rule), with fanouts split by four
// senders, and on a three-level tree with two VLs, speedup 2, zero-cycle
// pipelines and store-and-forward.
func TestMulticastPerCycleRoundsAgree(t *testing.T) {
	points := [][]string{
		append(append([]string{}, mcastSets...), "workload.senders=0,4,8,12", "workload.offered_load=0.3",
			"workload.size=2048", "workload.measure_ns=10000"),
		{"topology.kind=fat-tree-3", "topology.hosts=16", "switch.radix=4", "switch.vls=2", "switch.queueing=fifo",
			"switch.speedup=2", "switch.route_cycles=0", "switch.alloc_cycles=0", "switch.xbar_cycles=0",
			"switch.cut_through=false", "link.generation=QDR", "link.length_m=0", "workload.kind=multicast",
			"workload.group=0,2,5,8,9,15", "workload.senders=0,9,15", "workload.sl=1", "workload.size=700",
			"workload.offered_load=0.4", "workload.warmup_ns=500", "workload.measure_ns=5000"},
	}
	for i, sets := range points {
		var got [2]map[string]any
		for k, perCycle := range []string{"false", "true"} {
			l, err := Load(nil, append(append([]string{}, sets...), "sim.per_cycle="+perCycle))
			require.NoError(t, err)
			d := blockDigest{}
			m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
				for _, b := range s.Blocks {
					b.AcceptHook(d)
				}
			}})
			require.NoError(t, err, "point %d, per_cycle %s", i, perCycle)
			delete(m, "events")
			delete(m, "wall_s")
			require.NotEmpty(t, d, "point %d: a trace comparison with no events matches nothing", i)
			require.Greater(t, m["switch_mcast_copies"], 100.0, "point %d", i)
			m["trace"] = d.sums()
			report.Normalize(m)
			got[k] = m
		}
		assert.Equal(t, got[0], got[1], "point %d", i)
	}
}

// TestMulticastRefusesALossyCable: a topology file's cable with its own
// bit error rate is refused when the run is built, as link.ber is when the
// config is read (a datagram lost to it is not resent, and the checker
// has no rule for it); ber=0 on a cable runs.
func TestMulticastRefusesALossyCable(t *testing.T) {
	topo := func(ber string) string {
		return "switch Fabric.Switch[0] 4\n" +
			"host Fabric.Host[0]\nhost Fabric.Host[1]\nhost Fabric.Host[2]\n" +
			"cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]\n" +
			"cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2] " + ber + "\n" +
			"cable Fabric.Host[2].Port[1] Fabric.Switch[0].Port[3]\n"
	}
	for _, c := range []struct{ ber, want string }{
		{"ber=1e-6", "topology: a cable's ber=1e-06 with workload.kind multicast is not modelled"},
		{"ber=0", ""},
	} {
		path := filepath.Join(t.TempDir(), "t.topo")
		require.NoError(t, os.WriteFile(path, []byte(topo(c.ber)), 0o644))
		l, err := Load(nil, []string{"topology.kind=file", "topology.file=" + path, "switch.radix=4",
			"switch.queueing=fifo", "workload.kind=multicast", "workload.warmup_ns=1000", "workload.measure_ns=2000"})
		require.NoError(t, err)
		_, err = Run(l, RunOptions{})
		if c.want == "" {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
}
