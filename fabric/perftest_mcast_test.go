package fabric

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/verif"
)

// mcgStar is ib_send_bw -c UD -g on one FIFO switch of 4 hosts at EDR 1x
// (25 Gb/s: the wire, not PCIe, bounds the sender): host 0 sends to the
// group of hosts 1, 2 and 3.
var mcgStar = []string{"topology.kind=single-switch", "topology.hosts=4", "switch.queueing=fifo",
	"link.generation=EDR", "link.width=1x", "workload.kind=perftest", "workload.test=send_bw",
	"workload.connection=UD", "workload.mcg=true", "workload.size=1024", "workload.iterations=2000"}

// runMcg runs a multicast perftest with the checkers (lossless holding
// each copy to its group, the route check on the MFTs) and a trace.
func runMcg(t *testing.T, mutate func(*Simulation), sets ...string) recordedRun {
	t.Helper()
	return runRecorded(t, sets, func(s *Simulation) verif.CheckConfig {
		return verif.CheckConfig{Multicast: s.Net.MulticastMembers(), Routes: s.Net}
	}, mutate)
}

// TestMcgSendBWBound: every receiver gets every message, and the sender's
// rate is the wire's for a packet with a GRH.
//
// EDR 1x carries 25.78125 Gbaud × 64/66 = 25 Gb/s. A 1024-byte UD SEND to
// a multicast LID is LRH 8 + GRH 40 + BTH 12 + DETH 8 + 1024 + ICRC 4 +
// VCRC 2 = 1098 bytes: 1098 × 8 / 25 Gb/s = 351.36 ns a packet, so the
// sender moves at most 1024 × 8 / 351.36 ns = 23.3151 Gb/s of payload.
// perftest's rate is 2000 messages over first post → last completion:
// 1999 packets back to back on the wire (702.4 µs) plus the first
// packet's fetch and DMA read and the last completion's CQE write and
// poll, a few µs, so it lies within 1 % under the bound. The same run to
// one host's QP (unicast, no GRH: 1058 bytes, 338.56 ns) is bounded by
// 24.1966 Gb/s and reaches within 1 % of it: above the multicast bound,
// by the GRH's 40 bytes in 1098.
//
// Each receiver gets 2000 messages (receive completions), drops none; the
// sender sends 2000 packets once each, and the HCAs take 3 × 2000 copies
// from the switch (packets_delivered). The run is checked: no copy lost,
// duplicated or sent off the group's tree. The same config and seed give
// the same metrics and trace byte for byte.
func TestMcgSendBWBound(t *testing.T) {
	r := runMcg(t, nil, mcgStar...)
	require.NoError(t, r.Err)
	require.True(t, r.Settled)
	m := r.M
	assert.Equal(t, true, m["data_verified"], m["data_errors"])
	assert.Equal(t, int64(2000), m["sender_packets"])
	assert.Equal(t, uint64(3*2000), m["packets_delivered"])
	for k, x := range m["receivers"].([]any) {
		rc := x.(map[string]any)
		assert.Equal(t, 2000, rc["messages"], "receiver %d", k)
		assert.Equal(t, int64(0), rc["drops"], "receiver %d", k)
		assert.Equal(t, int64(0), rc["mcast_drops"], "receiver %d", k)
	}
	const rate = 25e9
	mcastBound := 1024 * 8 / (1098 * 8 / rate) / 1e9
	uniBound := 1024 * 8 / (1058 * 8 / rate) / 1e9
	bw := m["bw_gbps"].(float64)
	assert.LessOrEqual(t, bw, mcastBound)
	assert.Greater(t, bw, 0.99*mcastBound)
	assert.Greater(t, m["link_utilization"].(float64), 0.99)

	u := runMcg(t, nil, append(mcgStar, "workload.mcg=false")...)
	require.NoError(t, u.Err)
	ubw := u.M["bw_gbps"].(float64)
	assert.LessOrEqual(t, ubw, uniBound)
	assert.Greater(t, ubw, 0.99*uniBound)
	assert.Greater(t, ubw, mcastBound, "the GRH costs the multicast sender 40 bytes a packet")

	again := runMcg(t, nil, mcgStar...)
	assert.Equal(t, m, again.M)
	require.Greater(t, strings.Count(r.Trace, "\n"), 10000)
	assert.True(t, r.Trace == again.Trace, "the same config and seed give the same trace, byte for byte")
}

// mcgTree is the multicast perftest on the 16-host NDR fat tree (4 leaves
// × 4 hosts, 4 spines): host 0 (Leaf[0]) sends to all 15 others.
var mcgTree = append(append([]string{}, mcastSets[:7]...), "workload.kind=perftest", "workload.test=send_bw",
	"workload.connection=UD", "workload.mcg=true", "workload.size=512", "workload.iterations=300")

// TestMcgFatTree: every one of the 15 receivers gets all 300 messages
// through the group's tree (Leaf[0] up to one spine and down to the other
// three leaves: 5 switches), checked.
func TestMcgFatTree(t *testing.T) {
	r := runMcg(t, nil, mcgTree...)
	require.NoError(t, r.Err)
	require.True(t, r.Settled)
	assert.Equal(t, 5, r.M["mcast_tree_switches"])
	assert.Equal(t, 15, r.M["mcg_receivers"])
	assert.Equal(t, 300, r.M["receiver_messages_min"])
	assert.Equal(t, uint64(15*300), r.M["packets_delivered"])
	assert.Equal(t, true, r.M["data_verified"])
}

// TestMcgCheckerCatchesALostOrDuplicatedCopy: the checkers see the
// multicast copies the HCAs receive. Two broken MFTs (the mutants of
// TestMulticastCheckerCatchesBrokenMFT): Leaf[1] (hosts 4 … 7 on ports
// 1 … 4) losing port 2 never gives host 5 a copy, and the run, once the
// copies stop coming, ends with the lossless check naming host 5's HCA;
// Leaf[1] gaining up-port 6 and Spine[1] every leaf port loops the copies
// back down, so receivers get a packet twice (and the sender its own):
// without the route check, the lossless check calls it a duplicate.
func TestMcgCheckerCatchesALostOrDuplicatedCopy(t *testing.T) {
	edit := func(s *Simulation, name string, f func(*components.PortSet)) {
		for _, sw := range s.Net.Switches {
			if sw.Name() == name {
				mask := sw.MFT().Lookup(0xC000)
				f(&mask)
				sw.MFT().Set(0xC000, mask)
				return
			}
		}
		t.Fatalf("no switch %s", name)
	}
	r := runMcg(t, func(s *Simulation) {
		edit(s, "Fabric.Leaf[1]", func(m *components.PortSet) { m.Clear(1) })
	}, mcgTree...)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "invariant lossless")
	assert.Contains(t, r.Err.Error(), "never reached Fabric.Host[5].HCA")

	loop := func(s *Simulation) {
		edit(s, "Fabric.Leaf[1]", func(m *components.PortSet) { m.Set(5) })
		edit(s, "Fabric.Spine[1]", func(m *components.PortSet) {
			for p := 0; p < 4; p++ {
				m.Set(p)
			}
		})
	}
	r = runRecorded(t, mcgTree, func(s *Simulation) verif.CheckConfig {
		return verif.CheckConfig{Multicast: s.Net.MulticastMembers()}
	}, loop)
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "invariant lossless")
	assert.Regexp(t, `delivered twice to|delivered back to its sender|\(a duplicate\)`, r.Err.Error())
}

// TestMcgRefusals: what a multicast perftest cannot run is refused on one
// line naming the key.
func TestMcgRefusals(t *testing.T) {
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"workload.connection=RC"}, "workload.mcg: true needs workload.connection UD (multicast is unreliable datagram), not RC"},
		{[]string{"workload.test=write_bw"}, "workload.mcg: true runs send_bw and send_lat (perftest: multicast only on the SEND verb), not write_bw"},
		{[]string{"workload.qps=2"}, "workload.qps: 2, but a multicast test sends on one QP (perftest -g attaches 1 QP to the group)"},
		{[]string{"workload.mcg=false", "workload.mcg_receivers=2"}, "workload.mcg_receivers: 2 is set, but workload.mcg is false"},
		{[]string{"workload.mcg_receivers=-1"}, "workload.mcg_receivers: -1 is out of range (0 for every host but the sender, 1 to 49150)"},
		{[]string{"workload.pattern=incast"}, "workload.pattern: \"incast\" with workload.mcg: true: a multicast perftest has one sender (host 0) and its receivers (workload.mcg_receivers); remove the pattern"},
		{[]string{"workload.clients=2"}, "workload.clients: 2 with workload.mcg: true: a multicast perftest has one sender (host 0) and its receivers (workload.mcg_receivers); set workload.clients to 1 or remove it"},
		{[]string{"workload.background=true"}, "workload.mcg: true with workload.background: true is not modelled"},
		{[]string{"topology.kind=back-to-back", "topology.hosts=0"}, "workload.mcg: true needs switches to replicate the group's packets; topology.kind back-to-back has none"},
		{[]string{"switch.queueing=voq"}, "switch.queueing: \"voq\" with workload.mcg: replication is modelled for fifo input queueing only"},
		{[]string{"link.ber=1e-9"}, "link.ber: 1e-09 with workload.mcg is not modelled"},
		{[]string{"hca.vl_buffer_bytes=1088", "link.mtu=1024"}, "hca.vl_buffer_bytes: 1088 cannot hold one 1098-byte multicast packet (a 1024-byte payload with a GRH); give at least 1152"},
	} {
		_, err := Load(nil, append(append([]string{}, mcgStar...), c.sets...))
		require.Error(t, err, "%v", c.sets)
		assert.Contains(t, err.Error(), c.want, "%v", c.sets)
		assert.NotContains(t, err.Error(), "\n")
	}
	// The receivers are checked against the fabric's hosts when it is built.
	l, err := Load(nil, append(append([]string{}, mcgStar...), "workload.mcg_receivers=4"))
	require.NoError(t, err)
	_, err = Run(l, RunOptions{})
	require.Error(t, err)
	assert.EqualError(t, err, "workload.mcg_receivers: 4 is more than the fabric's 4 hosts less the sender (0 for all of them, 1 to 3)")
}
