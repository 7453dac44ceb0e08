package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
)

// mcastStar builds hosts 0 … n−1 (LIDs 1 … n) on one FIFO switch (port i
// to host i) whose MFT sends MLID 0xC000 to every port (but those of
// left, a broken entry) and, for send_lat, 0xC001 to ports 0 and 1, and
// the multicast test from host 0 to the others.
func mcastStar(t *testing.T, run PerftestRun, n int, left ...int) *McastPerftest {
	s := components.NewSim()
	lft := switchasic.NewLFT(8)
	mft := switchasic.NewMFT()
	var all, pong components.PortSet
	for i := range n {
		lft.Set(uint16(i+1), i)
		all.Set(i)
	}
	for _, p := range left {
		all.Clear(p)
	}
	pong.Set(0)
	pong.Set(1)
	mft.Set(0xC000, all)
	mft.Set(0xC001, pong)
	scfg := switchasic.Defaults()
	scfg.Queueing = switchasic.QueueFIFO
	sw, err := switchasic.MakeBuilder().WithSim(s).WithConfig(scfg).WithLFT(lft).WithMFT(mft).WithFlowControl(run.Link).Build("Fabric.Leaf[0]")
	require.NoError(t, err)
	tm := run.Link.Timing(run.Link.LengthM)
	var devs []*hca.Device
	for i := range n {
		d := hca.NewDevice(s, "Fabric.Host["+string(rune('0'+i))+"].HCA", uint16(i+1), run.HCA)
		link.Connect(sw.Port(i), d.AttachPortVLs(&run.Link, scfg.VLs), tm)
		devs = append(devs, d)
	}
	run.Connection = "UD"
	p, err := BuildMcastPerftestOn(s, devs[0], devs[1:], 0xC000, 0xC001, run)
	require.NoError(t, err)
	return p
}

// TestMcastPerftestSendBW: host 0 sends 300 1024-byte messages to the
// group of hosts 1, 2 and 3; host 2 posts no receive. Hosts 1 and 3
// receive all 300 each (300 receive completions, their buffers hold the
// sender's bytes); host 2's HCA drops every copy for want of a receive
// WQE: 300 drops, 0 messages, and nothing lost. The sender sent 300
// packets, once each: the switch, not the sender, makes the copies.
func TestMcastPerftestSendBW(t *testing.T) {
	run := edrRun("send_bw", 1024, 300)
	p := mcastStar(t, run, 4)
	p.SetRecvDepth(1, 0)
	m, err := p.Run()
	require.NoError(t, err)
	assert.Equal(t, true, m["data_verified"], m["data_errors"])
	assert.Equal(t, int64(300), m["sender_packets"])
	rs := m["receivers"].([]any)
	require.Len(t, rs, 3)
	for k, want := range []struct{ msgs, drops int }{{300, 0}, {0, 300}, {300, 0}} {
		r := rs[k].(map[string]any)
		assert.Equal(t, want.msgs, r["messages"], "receiver %d", k)
		assert.Equal(t, int64(want.drops), r["drops"], "receiver %d", k)
		assert.Equal(t, int64(0), r["lost"], "receiver %d", k)
	}
	assert.Equal(t, 0, m["receiver_messages_min"])
	assert.Equal(t, int64(300), m["receiver_drops"])
	assert.Greater(t, m["bw_gbps"].(float64), 0.0)
}

// TestMcastPerftestLostCopies: the switch's entry leaves out host 3's
// port, so receiver 2 gets no copy at all: 300 lost (neither received nor
// dropped at its HCA), the others all 300, and the run still ends once
// the receivers make no progress for 20 timed checks 1 µs apart
// (mcastStaleChecks × mcastCheckPS). The chain starts at the sender's
// last completion; the first check a microsecond later still sees
// progress (the last copies are polled then: they reach the receivers a
// switch hop after the sender's last packet leaves, the sender's own
// completion being polled about when theirs are), so the run ends 1 +
// 20 = 21 µs after the sender.
func TestMcastPerftestLostCopies(t *testing.T) {
	p := mcastStar(t, edrRun("send_bw", 1024, 300), 4, 3)
	m, err := p.Run()
	require.NoError(t, err)
	rs := m["receivers"].([]any)
	for k, want := range []int{300, 300, 0} {
		r := rs[k].(map[string]any)
		assert.Equal(t, want, r["messages"], "receiver %d", k)
		assert.Equal(t, int64(300-want), r["lost"], "receiver %d", k)
	}
	assert.Equal(t, int64(300), m["receiver_lost"])
	assert.Equal(t, 0.0, m["receiver_bw_gbps_min"])
	assert.Equal(t, ib.FromNanoseconds(21000), p.end-p.senderEnd)
}

// TestMcastPerftestSendLat: every ping reaches the three receivers and
// receiver 0 answers each one to the sender's group: the sender completes
// all 50 round trips, every receiver holds 50 messages, and the latency is
// above the unicast UD send_lat's through the same switch with no other
// receivers by less than a microsecond (the GRH's 40 bytes each way at EDR
// 4x are 3.2 ns; the copies to the other receivers leave the switch on
// other ports).
func TestMcastPerftestSendLat(t *testing.T) {
	run := edrRun("send_lat", 32, 50)
	m, err := mcastStar(t, run, 4).Run()
	require.NoError(t, err)
	assert.Equal(t, true, m["data_verified"], m["data_errors"])
	for k, r := range m["receivers"].([]any) {
		assert.Equal(t, 50, r.(map[string]any)["messages"], "receiver %d", k)
	}
	lat := m["lat_us"].(map[string]any)
	assert.Equal(t, 50, lat["count"])
	run.Connection = "UD"
	uni, err := throughSwitch(t, run).Run()
	require.NoError(t, err)
	u := uni["lat_us"].(map[string]any)["typical"].(float64)
	assert.Greater(t, lat["typical"].(float64), u)
	assert.Less(t, lat["typical"].(float64), u+1)
}

func TestMcastPerftestRefusals(t *testing.T) {
	for _, c := range []struct {
		test, conn string
		qps        int
		want       string
	}{
		{"write_bw", "UD", 1, "workload.mcg: true runs send_bw and send_lat (perftest: multicast only on the SEND verb), not write_bw"},
		{"send_bw", "RC", 1, "workload.mcg: true needs workload.connection UD (multicast is unreliable datagram), not RC"},
		{"send_bw", "UD", 2, "workload.qps: 2, but a multicast test sends on one QP (perftest -g attaches 1 QP to the group)"},
	} {
		assert.EqualError(t, CheckMcastRun(c.test, c.conn, c.qps, "workload"), c.want)
	}
}
