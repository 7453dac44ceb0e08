package fabric

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// lineRate are the sets of a multicast at the line rate on mcastSets' fat
// tree (NDR 4x, 400 Gb/s = 50 bytes/ns): 4096-byte payloads, 4170 bytes on
// the wire with the GRH, so one packet every 4170 / 50 = 83.4 ns; 65536-byte
// VL buffers cover the credit loop (TestMulticastRunFatTree).
var lineRate = []string{"workload.size=4096", "workload.offered_load=1", "switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536"}

// TestMulticastGroupsDisjoint: two groups whose trees share no link run
// exactly as each would alone. On the 16-host fat tree (4 leaves of 4
// hosts, 4 spines), group 0 = hosts 0-7 (leaves 0 and 1, root Spine[0])
// and group 1 = hosts 8-15 (leaves 2 and 3, root Spine[1]): no switch
// output carries both. Each first member sends at offered load 1: a packet
// every 83.4 ns slot from the first slot, so by the window's end (2000 +
// 20000 ns) ⌊22000 / 83.4⌋ = 263 packets, of which those created in
// [2000, 22000), slots 24 (2001.6 ns) to 263, are measured: 240. Each of a
// group's 7 receivers gets all 263 (copies 7 × 263 = 1841) at the line
// rate (member_accepted_load 1, the window counted pro rata). A group's
// breakdown equals the whole of a run with that group alone, to the last
// latency digit; the run's whole adds them up.
func TestMulticastGroupsDisjoint(t *testing.T) {
	alone, _, err := runMcastChecked(t, true, nil, append([]string{"workload.group=0-7"}, lineRate...)...)
	require.NoError(t, err)
	both, _, err := runMcastChecked(t, true, nil, append([]string{`workload.groups=["0-7","8-15"]`}, lineRate...)...)
	require.NoError(t, err)
	assert.Equal(t, uint64(263), alone["packets_sent"])
	assert.Equal(t, uint64(240), alone["packets_complete"])
	assert.Equal(t, uint64(7*263), alone["copies_delivered"])
	assert.InDelta(t, 1.0, alone["member_accepted_load"], 0.002)
	for _, g := range []string{"group0_", "group1_"} {
		for _, k := range []string{"packets_sent", "packets_complete", "copies_expected", "copies_delivered",
			"member_accepted_load", "latency_ns", "latency_last_ns"} {
			assert.Equal(t, alone[k], both[g+k], "%s%s", g, k)
		}
		assert.Equal(t, 8, both[g+"members"])
		assert.Equal(t, 1, both[g+"senders"])
		assert.Equal(t, alone["mcast_tree_switches"], both[g+"tree_switches"])
	}
	assert.Equal(t, 0xC000, both["group0_mlid"])
	assert.Equal(t, 0xC001, both["group1_mlid"])
	assert.Equal(t, 2, both["mcast_groups"])
	assert.Equal(t, uint64(2*263), both["packets_sent"])
	assert.Equal(t, uint64(2*7*263), both["copies_delivered"])
	assert.Equal(t, both["copies_expected"], both["copies_delivered"])
	assert.Equal(t, 6, both["mcast_tree_switches"], "two trees of a spine and two leaves each")
	assert.Equal(t, true, both["drain_complete"])
}

// TestMulticastGroupsShareASpineLink: groups k and k + 4 take the same
// root (k mod the 4 spines), so groups 0 = {0, 4} and 4 = {1, 5} both go
// Leaf[0] → Spine[0] → Leaf[1]: their senders (hosts 0 and 1, at the line
// rate each) share those two links, which carry at most the line rate:
// the two members' accepted loads add up to at most 1, and the leaf's
// round-robin allocator alternates the two inputs, so each gets 1/2.
// Groups 1-3 ({8, 12}, {9, 13}, {10, 14}: Leaf[2] → Spine[1..3] →
// Leaf[3]) share nothing and run at the line rate, at their unloaded
// latency. A shared group's packet n (created at n × 83.4 ns) leaves the
// leaf after 2n packets' time, so it waits about n × 83.4 ns in its source
// queue: the last one, n = 263, reaches its member about 263 × 83.4 =
// 21934.2 ns after the unloaded latency (one slot less for the group the
// alternation serves first).
func TestMulticastGroupsShareASpineLink(t *testing.T) {
	m, _, err := runMcastChecked(t, true, nil, append([]string{`workload.groups=["0,4","8,12","9,13","10,14","1,5"]`}, lineRate...)...)
	require.NoError(t, err)
	a, b := m["group0_member_accepted_load"].(float64), m["group4_member_accepted_load"].(float64)
	assert.LessOrEqual(t, a+b, 1.0+1e-3, "two groups through one link")
	assert.InDelta(t, 1.0, a+b, 0.002, "the shared link is never idle")
	assert.InDelta(t, 0.5, a, 0.002)
	assert.InDelta(t, 0.5, b, 0.002)
	unloaded := m["group1_latency_last_ns"].(map[string]float64)["min"]
	for _, g := range []string{"group1_", "group2_", "group3_"} {
		assert.InDelta(t, 1.0, m[g+"member_accepted_load"], 0.002, g)
		assert.Equal(t, m["group1_latency_last_ns"], m[g+"latency_last_ns"], g)
	}
	wait := 263 * 83.4
	last0 := m["group0_latency_last_ns"].(map[string]float64)["max"]
	last4 := m["group4_latency_last_ns"].(map[string]float64)["max"]
	assert.InDelta(t, unloaded+wait, max(last0, last4), 1)
	assert.InDelta(t, unloaded+wait-83.4, min(last0, last4), 1)
}

// twoSwitches is a topology file of two switches joined by one cable,
// hosts 0 and 1 on Switch[0], hosts 2 and 3 on Switch[1].
const twoSwitches = "switch Fabric.Switch[0] 3\nswitch Fabric.Switch[1] 3\n" +
	"host Fabric.Host[0]\nhost Fabric.Host[1]\nhost Fabric.Host[2]\nhost Fabric.Host[3]\n" +
	"cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]\n" +
	"cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2]\n" +
	"cable Fabric.Host[2].Port[1] Fabric.Switch[1].Port[1]\n" +
	"cable Fabric.Host[3].Port[1] Fabric.Switch[1].Port[2]\n" +
	"cable Fabric.Switch[0].Port[3] Fabric.Switch[1].Port[3]\n"

// TestMulticastBesideBackgroundVLArbitration: a group {0, 2} (host 0 sends
// at the line rate) and a unicast background on the hosts in no group, 1
// and 3 (uniform between two hosts: each sends to the other, at load 1,
// link.mtu packets), on VL 0 and VL 1 of two switches joined by one cable.
// Switch[0]'s port to Switch[1] carries both, 2 × the line rate offered;
// everything else one flow. Its VL arbiter's low table gives VL 0 weight
// 198 and VL 1 weight 65 (64-byte units), so it sends runs of ⌈weight /
// blocks⌉ packets (switch.md): multicast packets are 4170 bytes, 66
// blocks, ⌈198/66⌉ = 3 a run; background ones 4096 + 26 = 4122 bytes, 65
// blocks, ⌈65/65⌉ = 1. Of the link the group gets 3 × 4170 / (3 × 4170 +
// 4122) = 0.75217 and host 1's background 4122 / 16632 = 0.24783; host 3
// sends back over an otherwise idle link at 1, so the background's
// accepted load (the mean over its senders) is (0.24783 + 1) / 2 =
// 0.62392. A window that cuts a run of the arbiter counts at most one run
// more or less: 12510 bytes of the group's in the window's 20000 ns × 50
// bytes/ns (0.0125), 4122 of host 1's (0.0041, half that in the mean).
// The flow-control packets host 3 returns for what it receives (6 bytes
// per packet, a quarter of its line) take 0.0004 of its sending, inside
// that. The checkers, with the route check, hold both kinds of packet.
func TestMulticastBesideBackgroundVLArbitration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.topo")
	require.NoError(t, os.WriteFile(path, []byte(twoSwitches), 0o644))
	m, _, err := runMcastCheckedOn(t, true, nil, "topology.kind=file", "topology.file="+path, "switch.radix=3", "switch.vls=2",
		"switch.queueing=fifo", "link.generation=NDR", "link.width=4x", "link.length_m=2",
		"switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536",
		"switch.vlarb_high=[{vl: 0, weight: 0}]", "switch.vlarb_low=[{vl: 0, weight: 198}, {vl: 1, weight: 65}]",
		"workload.kind=multicast", "workload.group=0,2", "workload.size=4096", "workload.offered_load=1",
		"workload.background=true", "workload.background_sl=1", "workload.background_load=1",
		"workload.warmup_ns=2000", "workload.measure_ns=20000")
	require.NoError(t, err)
	assert.Equal(t, true, m["drain_complete"])
	assert.Equal(t, 2, m["background_hosts"])
	assert.Equal(t, m["background_packets_sent"], m["background_packets_delivered"])
	assert.InDelta(t, 3*4170.0/(3*4170+4122), m["member_accepted_load"], 0.0125)
	assert.InDelta(t, (4122.0/(3*4170+4122)+1)/2, m["background_accepted_load"], 0.0021)
}

// TestMulticastGroupsCheckersCatchBrokenMFT: the checkers hold the second
// group to its own MFT entries, beside the first group and a unicast
// background. Groups 0-5 (Spine[0]) and 8-13 (MLID 0xC001, root Spine[1],
// leaves 2 and 3); hosts 6, 7, 14 and 15 send uniform unicast background.
// Leaf[2] holds hosts 8..11 on ports 1..4 and Spine[j] on port 5 + j.
//   - Leaf[2]'s 0xC001 entry loses host 9's port: the lossless check names
//     the host that never got a packet;
//   - Leaf[2]'s entry gains the port to Spine[0] (not on the tree) and
//     Spine[0]'s 0xC001 entry every leaf: copies leave Leaf[2] where its
//     programmed entry does not go (the route check); without the route
//     check, Spine[0] sends copies down to Leaf[0] and Leaf[1], whose MFTs
//     have no entry for 0xC001 (group 0's leaves), and they drop them
//     (no_route): the lossless check catches the drop.
//
// The same run unbroken passes both, and twice gives the same trace byte
// for byte.
func TestMulticastGroupsCheckersCatchBrokenMFT(t *testing.T) {
	edit := func(s *Simulation, name string, f func(*components.PortSet)) {
		for _, sw := range s.Net.Switches {
			if sw.Name() == name {
				mask := sw.MFT().Lookup(0xC001)
				f(&mask)
				sw.MFT().Set(0xC001, mask)
				return
			}
		}
		t.Fatalf("no switch %s", name)
	}
	sets := []string{`workload.groups=["0-5","8-13"]`, "workload.senders=0,8", "workload.background=true",
		"workload.background_load=0.3", "workload.offered_load=0.2", "workload.size=256", "workload.measure_ns=5000", "workload.drain_ns=20000"}

	m, tr1, err := runMcastChecked(t, true, nil, sets...)
	require.NoError(t, err)
	assert.Equal(t, true, m["drain_complete"])
	assert.Equal(t, 4, m["background_hosts"])
	assert.Greater(t, m["background_packets_delivered"], uint64(100))
	m2, tr2, err := runMcastChecked(t, true, nil, sets...)
	require.NoError(t, err)
	assert.Equal(t, m, m2)
	require.Greater(t, strings.Count(tr1, "\n"), 10000)
	assert.True(t, tr1 == tr2, "the same config and seed give the same trace, byte for byte")

	_, _, err = runMcastChecked(t, true, func(s *Simulation) {
		edit(s, "Fabric.Leaf[2]", func(m *components.PortSet) { m.Clear(1) })
	}, sets...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant lossless")
	assert.Contains(t, err.Error(), "never reached Fabric.Host[9]")

	loop := func(s *Simulation) {
		edit(s, "Fabric.Leaf[2]", func(m *components.PortSet) { m.Set(4) })
		edit(s, "Fabric.Spine[0]", func(m *components.PortSet) {
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
	assert.Contains(t, err.Error(), `dropped (reason "no_route")`)
}

// TestMulticastBesideBackgroundOnOtherSpines: a background that shares no
// link with the trees leaves the multicast exactly as it was. On the
// 16-host fat tree D-mod-K brings host d's packets up to and down from
// Spine[d mod 4] (its position on its leaf), so the background among the
// hosts at positions 2 and 3 uses Spines 2 and 3 and the host links of
// those hosts only; groups 0 = {0, 4, 8, 12} and 1 = {1, 5, 9, 13} are
// rooted at Spines 0 and 1. The background (at 0.4, on the multicast's own
// VL) then changes no multicast metric, to the last latency digit.
func TestMulticastBesideBackgroundOnOtherSpines(t *testing.T) {
	sets := []string{`workload.groups=["0,4,8,12","1,5,9,13"]`, "workload.offered_load=0.6", "workload.size=2048"}
	quiet, _, err := runMcastChecked(t, true, nil, sets...)
	require.NoError(t, err)
	loud, _, err := runMcastChecked(t, true, nil, append(sets, "workload.background=true", "workload.background_load=0.4")...)
	require.NoError(t, err)
	assert.Equal(t, 8, loud["background_hosts"])
	assert.InDelta(t, 0.4, loud["background_accepted_load"], 0.05, "the background runs (below FIFO uniform saturation, about 0.59)")
	compared := 0
	for k, v := range quiet {
		if strings.HasPrefix(k, "group") || strings.HasPrefix(k, "member_") || strings.HasPrefix(k, "latency") ||
			strings.HasPrefix(k, "copies_") || strings.HasPrefix(k, "packets_") || strings.HasPrefix(k, "switch_mcast_") {
			assert.Equal(t, v, loud[k], k)
			compared++
		}
	}
	assert.Greater(t, compared, 30, "the multicast's metrics were compared")
}

// TestMulticastBackgroundOnEveryHost: with workload.background_hosts all a
// member's port carries its multicast and its unicast, offered to the
// wire in turn. On one switch with two hosts, group {0, 1}: host 0 sends
// the group at the line rate and unicast to host 1 at the line rate, host
// 1 unicast to host 0 at the line rate, all on one VL (50 bytes/ns). Host
// 0's port alternates a 4170-byte multicast packet and a 4122-byte
// unicast one (4096 + 26). Each host also returns one 6-byte flow-control
// packet (ib.FlowControlBytes) per packet it receives, ahead of its data.
// Per cycle of host 0's pair (T ns) host 1 receives 2 packets and sends n:
// host 0's wire 4170 + 4122 + 6n = 50T, host 1's 4122n + 2 × 6 = 50T, so
// n = 8280 / 4116 = 2.01166 and 50T = 8304.07 bytes. Host 1, the member,
// receives 4170 / 8304.07 = 0.50216 of its link in copies; host 0's
// unicast gets 4122 / 8304.07 = 0.49638, host 1's 4122n / 8304.07 =
// 0.99855; background_accepted_load, their mean, 0.74747. A window edge
// cuts at most one packet of a turn: 4170 bytes of the 20000 ns × 50
// bytes/ns (0.0042) for host 0's flows; host 1 sends without turns. The
// checkers hold both kinds.
func TestMulticastBackgroundOnEveryHost(t *testing.T) {
	m, _, err := runMcastCheckedOn(t, true, nil, "topology.kind=single-switch", "topology.hosts=2", "switch.vls=1",
		"switch.queueing=fifo", "link.generation=NDR", "link.width=4x", "link.length_m=2",
		"switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536",
		"workload.kind=multicast", "workload.size=4096", "workload.offered_load=1",
		"workload.background=true", "workload.background_hosts=all", "workload.background_load=1",
		"workload.warmup_ns=2000", "workload.measure_ns=20000")
	require.NoError(t, err)
	assert.Equal(t, true, m["drain_complete"])
	assert.Equal(t, 2, m["background_hosts"])
	assert.Equal(t, m["background_packets_sent"], m["background_packets_delivered"])
	assert.Equal(t, m["copies_expected"], m["copies_delivered"])
	n := 8280.0 / 4116
	cycle := 4170 + 4122 + 6*n
	host0, host1 := 4122/cycle, 4122*n/cycle
	assert.InDelta(t, 4170/cycle, m["member_accepted_load"], 0.0042)
	loads := m["background_host_accepted_load"].(map[string]any)
	assert.InDelta(t, host0, loads["min"], 0.0042)
	assert.InDelta(t, host1, loads["max"], 0.0005)
	assert.InDelta(t, (host0+host1)/2, m["background_accepted_load"], 0.0021+0.00025)
}

// twoGroupsOneHost are the sets of groups 0 = {0, 4} and 1 = {0, 8} on
// mcastSets' 16-host fat tree: host 0 (Leaf[0]) is in both; host 4
// (Leaf[1]) sends to group 0 and host 8 (Leaf[2]) to group 1
// (workload.group_senders). Group 0's tree is Leaf[1] → Spine[0] →
// Leaf[0], group 1's Leaf[2] → Spine[1] → Leaf[0] (root k mod 4 spines):
// the two streams meet only at Leaf[0]'s port to host 0.
var twoGroupsOneHost = []string{`workload.groups=["0,4","0,8"]`, `workload.group_senders=["4","8"]`,
	"workload.size=4096", "switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536"}

// TestMulticastHostInTwoGroupsBelowLineRate: host 0 receives both groups'
// streams, each whole, at the sum of their loads. Each sender offers 0.4
// of NDR 4x (50 bytes/ns): Bernoulli slots of 4170 / 50 = 83.4 ns, a packet
// in a slot with probability 0.4. Host 0's link is offered 0.8 < 1, so
// nothing is lost or held back for long:
//   - each group sends exactly the packets its sender sends with the group
//     alone (its injections are drawn from its host's own stream, and no
//     source queue fills): copies_delivered = packets_sent (one receiver);
//   - host 0, the run's only receiving member (hosts 4 and 8 are their one
//     group's lone senders), gets every packet of both: member_copies =
//     packets_sent(0) + packets_sent(1);
//   - its accepted load is the sum of the groups' shares, and the two
//     senders' packets in the 100 µs window are Binomial(N, 0.4) each with
//     N = 100000 / 83.4 = 1199 slots: mean load 0.8, standard deviation
//     √(2 · 1199 · 0.4 · 0.6) / 1199 = 0.020 of the line rate; 4 σ = 0.08.
func TestMulticastHostInTwoGroupsBelowLineRate(t *testing.T) {
	sets := append([]string{"workload.offered_load=0.4", "workload.measure_ns=100000"}, twoGroupsOneHost...)
	both, _, err := runMcastChecked(t, true, nil, sets...)
	require.NoError(t, err)
	alone := make([]map[string]any, 2)
	for k, g := range []string{"4", "8"} {
		alone[k], _, err = runMcastChecked(t, true, nil, "workload.group=0,"+g, "workload.senders="+g, "workload.offered_load=0.4",
			"workload.measure_ns=100000", "workload.size=4096", "switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536")
		require.NoError(t, err)
	}
	sent0, sent1 := both["group0_packets_sent"].(uint64), both["group1_packets_sent"].(uint64)
	assert.Equal(t, alone[0]["packets_sent"], sent0)
	assert.Equal(t, alone[1]["packets_sent"], sent1)
	assert.Equal(t, sent0, both["group0_copies_delivered"])
	assert.Equal(t, sent1, both["group1_copies_delivered"])
	assert.Equal(t, map[string]any{"min": sent0 + sent1, "max": sent0 + sent1}, both["member_copies"])
	assert.Equal(t, both["copies_expected"], both["copies_delivered"])
	assert.Equal(t, 3, both["mcast_members"])
	assert.Equal(t, true, both["drain_complete"])
	got := both["member_accepted_load"].(float64)
	g0, g1 := both["group0_member_accepted_load"].(float64), both["group1_member_accepted_load"].(float64)
	assert.InDelta(t, g0+g1, got, 1e-12, "host 0's load is its two groups' shares")
	assert.InDelta(t, 0.8, got, 0.08)
}

// TestMulticastHostInTwoGroupsAboveLineRate: each sender offers 0.7, so
// host 0's link is offered 1.4 and carries at most 1: its accepted load,
// the window's wire bytes counted pro rata, is at most 20000 ns × 50
// bytes/ns a window. Leaf[0]'s port to host 0 is wanted by two inputs
// (from Spine[0] and Spine[1]), each a FIFO with group k's copies; once
// both hold a packet (each gets 0.5 and is offered 0.7, so they fill in
// the warm-up and stay full) the round-robin allocator alternates them
// and the port never idles: 1/2 each, and 1 in all, short only by what
// the window cuts of one packet at each edge (4170 / (20000 × 50) =
// 0.0042) and the moments a FIFO is empty. Every copy still arrives: the
// sources' queues (4096 packets) hold the excess, about 0.2 × 22 µs /
// 83.4 ns = 53 packets each, and drain after the window.
func TestMulticastHostInTwoGroupsAboveLineRate(t *testing.T) {
	m, _, err := runMcastChecked(t, true, nil, append([]string{"workload.offered_load=0.7"}, twoGroupsOneHost...)...)
	require.NoError(t, err)
	got := m["member_accepted_load"].(float64)
	g0, g1 := m["group0_member_accepted_load"].(float64), m["group1_member_accepted_load"].(float64)
	assert.LessOrEqual(t, got, 1.0+1e-12, "one link's worth")
	assert.InDelta(t, g0+g1, got, 1e-12)
	assert.InDelta(t, 1.0, got, 2*0.0042)
	assert.InDelta(t, 0.5, g0, 2*0.0042)
	assert.InDelta(t, 0.5, g1, 2*0.0042)
	assert.Equal(t, uint64(0), m["packets_skipped"])
	assert.Equal(t, m["copies_expected"], m["copies_delivered"])
	assert.Equal(t, true, m["drain_complete"])
}

// TestMulticastHostInTwoGroupsCheckersCatchBrokenMFT: the checkers hold
// each copy to its own group, by its MLID, at hosts in both. Groups 0 =
// {0, 1, 4} and 1 = {0, 2, 8} (host 4 sends to 0, host 8 to 1): on
// Leaf[0] host 0 (port 0) is in both, host 1 (port 1) in group 0 only,
// host 2 (port 2) in group 1 only. Leaf[0]'s entry for group 1 (0xC001)
// loses host 0's port: group 0's copies still reach host 0, and group 1's
// host 2, but the lossless check names host 0 as never getting a group-1
// packet. The entry given host 1's port: the route check refuses the copy
// out of it, and without the route check the lossless check finds a
// group-1 copy at host 1, a member of group 0 only: misrouted (whether
// the group's members all had the packet by then or not). Unbroken, the
// run passes both and gives the same trace twice.
func TestMulticastHostInTwoGroupsCheckersCatchBrokenMFT(t *testing.T) {
	edit := func(f func(*components.PortSet)) func(*Simulation) {
		return func(s *Simulation) {
			for _, sw := range s.Net.Switches {
				if sw.Name() == "Fabric.Leaf[0]" {
					mask := sw.MFT().Lookup(0xC001)
					require.True(t, mask.Has(0), "host 0's port is in group 1's entry")
					f(&mask)
					sw.MFT().Set(0xC001, mask)
					return
				}
			}
			t.Fatal("no Fabric.Leaf[0]")
		}
	}
	sets := append([]string{"workload.offered_load=0.2", "workload.measure_ns=5000", "workload.drain_ns=20000"}, twoGroupsOneHost...)
	sets[3] = `workload.groups=["0,1,4","0,2,8"]`
	m, tr1, err := runMcastChecked(t, true, nil, sets...)
	require.NoError(t, err)
	assert.Greater(t, m["group1_packets_sent"], uint64(0))
	_, tr2, err := runMcastChecked(t, true, nil, sets...)
	require.NoError(t, err)
	require.Greater(t, strings.Count(tr1, "\n"), 1000)
	assert.True(t, tr1 == tr2, "the same config and seed give the same trace, byte for byte")

	_, _, err = runMcastChecked(t, true, edit(func(m *components.PortSet) { m.Clear(0) }), sets...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant lossless")
	assert.Contains(t, err.Error(), "(MLID 0xc001 psn 0")
	assert.Contains(t, err.Error(), "never reached Fabric.Host[0]")

	extra := edit(func(m *components.PortSet) { m.Set(1) })
	_, _, err = runMcastChecked(t, true, extra, sets...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant route")
	assert.Contains(t, err.Error(), "which the group's MFT entry does not hold")
	_, _, err = runMcastChecked(t, false, extra, sets...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant lossless")
	assert.Contains(t, err.Error(), "for MLID 0xc001 delivered at Fabric.Host[1], which is not a member of the group (misrouted)")
}

// TestMulticastHostInTwoGroupsGroupLoads: per-group loads
// (workload.group_loads) on twoGroupsOneHost: group 0's sender offers 0.3
// and group 1's 0.5. Each sends exactly the packets it sends with its
// group alone at that load, host 0 receives all of both, and its accepted
// load is 0.3 + 0.5 = 0.8 within 4 σ of the Bernoulli counts over the
// 100 µs window: N = 100000 / 83.4 = 1199 slots, σ = √(1199 · (0.3 · 0.7 +
// 0.5 · 0.5)) / 1199 = 0.0196, 4 σ = 0.078; each group's share within 4 of
// its own σ (√(1199 · 0.21) / 1199 = 0.0132 and √(1199 · 0.25) / 1199 =
// 0.0144) of its load.
func TestMulticastHostInTwoGroupsGroupLoads(t *testing.T) {
	sets := append([]string{"workload.group_loads=[0.3,0.5]", "workload.measure_ns=100000"}, twoGroupsOneHost...)
	m, _, err := runMcastChecked(t, true, nil, sets...)
	require.NoError(t, err)
	for k, c := range []struct {
		sender string
		load   float64
		sigma  float64
	}{{"4", 0.3, 0.0132}, {"8", 0.5, 0.0144}} {
		p := []string{"group0_", "group1_"}[k]
		alone, _, err := runMcastChecked(t, true, nil, "workload.group=0,"+c.sender, "workload.senders="+c.sender,
			fmt.Sprintf("workload.offered_load=%v", c.load), "workload.measure_ns=100000",
			"workload.size=4096", "switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536")
		require.NoError(t, err)
		assert.Equal(t, alone["packets_sent"], m[p+"packets_sent"], p)
		assert.Equal(t, m[p+"packets_sent"], m[p+"copies_delivered"], p)
		assert.Equal(t, c.load, m[p+"offered_load"], p)
		assert.InDelta(t, c.load, m[p+"member_accepted_load"], 4*c.sigma, p)
	}
	sent := m["group0_packets_sent"].(uint64) + m["group1_packets_sent"].(uint64)
	assert.Equal(t, map[string]any{"min": sent, "max": sent}, m["member_copies"])
	assert.InDelta(t, 0.8, m["member_accepted_load"], 0.078)
	assert.Equal(t, true, m["drain_complete"])
}

// TestMulticastGroupSizes: per-group payloads (workload.group_sizes) on
// TestMulticastGroupsDisjoint's two groups (0-7 and 8-15, trees sharing
// no link), both at the line rate: group 0 sends 4096-byte payloads, 4170
// bytes on the wire with the GRH (83.4 ns at 50 bytes/ns), group 1
// 1024-byte ones, 1098 bytes (21.96 ns). By the window's end (22000 ns)
// group 0's sender has made ⌊22000 / 83.4⌋ = 263 packets and group 1's
// ⌊22000 / 21.96⌋ = 1001; each of a group's 7 receivers takes every one,
// so the trace holds 7 × 263 = 1841 deliveries of 4170 bytes to MLID
// 0xC000 (49152) and 7 × 1001 = 7007 of 1098 bytes to 0xC001 (49153), and
// no other. Each group runs as it would alone with that size: its
// metrics equal a lone group's of that payload to the last digit.
func TestMulticastGroupSizes(t *testing.T) {
	buf := []string{"workload.offered_load=1", "switch.vl_buffer_bytes=65536", "hca.vl_buffer_bytes=65536"}
	m, tr, err := runMcastChecked(t, true, nil, append([]string{`workload.groups=["0-7","8-15"]`, "workload.group_sizes=[4096,1024]"}, buf...)...)
	require.NoError(t, err)
	assert.Equal(t, uint64(263), m["group0_packets_sent"])
	assert.Equal(t, uint64(1001), m["group1_packets_sent"])
	assert.Equal(t, 4096, m["group0_payload_bytes"])
	assert.Equal(t, 1024, m["group1_payload_bytes"])
	deliveries := map[string]int{}
	for _, line := range strings.Split(tr, "\n") {
		if !strings.Contains(line, " deliver ") {
			continue
		}
		var dlid, bytes string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "dlid="); ok {
				dlid = v
			}
			if v, ok := strings.CutPrefix(f, "bytes="); ok {
				bytes = v
			}
		}
		deliveries[dlid+" "+bytes]++
	}
	assert.Equal(t, map[string]int{"49152 4170": 7 * 263, "49153 1098": 7 * 1001}, deliveries)
	for k, size := range []string{"4096", "1024"} {
		alone, _, err := runMcastChecked(t, true, nil, append([]string{"workload.group=0-7", "workload.size=" + size}, buf...)...)
		require.NoError(t, err)
		p := fmt.Sprintf("group%d_", k)
		for _, key := range []string{"packets_sent", "packets_complete", "copies_expected", "copies_delivered",
			"member_accepted_load", "latency_ns", "latency_last_ns"} {
			assert.Equal(t, alone[key], m[p+key], "%s%s", p, key)
		}
	}
}
