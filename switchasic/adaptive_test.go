package switchasic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

func TestARTable(t *testing.T) {
	ar := NewARTable()
	assert.Nil(t, ar.Group(3))
	ar.Set(3, []int{2, 3})
	ar.Set(9, []int{2, 3}) // an equal group is stored once
	ar.Set(5, []int{1, 2, 3})
	assert.Equal(t, []int16{2, 3}, ar.Group(3))
	assert.Equal(t, []int16{2, 3}, ar.Group(9))
	assert.Equal(t, []int16{1, 2, 3}, ar.Group(5))
	assert.Len(t, ar.group, 2)
	assert.Nil(t, ar.Group(4))
	assert.Nil(t, ar.Group(1000)) // beyond the table
	assert.Panics(t, func() { ar.Set(1, []int{2}) }, "a group of one is no choice")
	assert.Panics(t, func() { ar.Set(1, []int{2, 256}) })
	for sl := range uint8(16) {
		assert.True(t, ar.Adaptive(sl), "the zero mask is AR on every SL")
	}
	ar.SetStaticSLs(^uint16(1 << 1)) // AR on SL 1 only
	assert.True(t, ar.Adaptive(1))
	assert.False(t, ar.Adaptive(0))
	assert.False(t, ar.Adaptive(15))
}

// arNet is a 4-port switch whose ports 2 and 3 both lead toward LID 4 (as a
// leaf's two up-links lead to any host under another leaf): the LFT says
// port lftPort, the AR group {2, 3}. Hosts 0 and 1 send to LID 4.
func arNet(t *testing.T, lftPort int, ar bool) *testNet {
	cfg := Defaults()
	cfg.Radix = 4
	cfg.VLs = 1
	o := netOpts{timing: ndr(21352)}
	if ar {
		o.ar = NewARTable()
		o.ar.Set(4, []int{2, 3})
	}
	n := newTestNet(t, cfg, o)
	n.sw.lft.Set(4, lftPort)
	return n
}

// TestAdaptiveIdleTakesLFTPort: on an idle switch every port of the group
// has load −credits of an empty downstream buffer, a tie, which goes to the
// LFT's port: AR routes a lone packet as the static table does, whichever
// port that is.
func TestAdaptiveIdleTakesLFTPort(t *testing.T) {
	for _, lftPort := range []int{2, 3} {
		n := arNet(t, lftPort, true)
		n.eps[0].send(n.packet(0, 3, 0, 256))
		n.s.StopAt(10 * ib.Microsecond)
		require.NoError(t, n.s.Run())
		assert.Len(t, n.eps[lftPort].got, 1, "LFT port %d", lftPort)
		assert.Len(t, n.eps[5-lftPort].got, 0, "LFT port %d", lftPort)
		for o := range n.sw.out {
			for v := range n.sw.out[o].vl {
				assert.Zero(t, n.sw.out[o].vl[v].queued, "output %d VL %d: every packet routed was granted", o, v)
			}
		}
	}
}

// TestAdaptiveAvoidsDropPort: a port whose SL-to-VL entry drops the
// packet's SL is never chosen, even when it is the LFT's port and idle.
func TestAdaptiveAvoidsDropPort(t *testing.T) {
	n := arNet(t, 2, true)
	drop := n.sw.cfg.SL2VLTable()
	drop[0] = ib.ManagementVL
	n.sw.sl2vl = NewSL2VL(4, n.sw.cfg.SL2VLTable())
	n.sw.sl2vl.SetPair(0, 2, drop)
	n.eps[0].send(n.packet(0, 3, 0, 256))
	n.s.StopAt(10 * ib.Microsecond)
	require.NoError(t, n.s.Run())
	assert.Len(t, n.eps[3].got, 1)
	assert.Zero(t, n.sw.Counters().DropSL2VL)
}

// TestAdaptiveSplitsTwoFlows: hosts 0 and 1 each send 2074-byte packets
// back to back to LID 4. Statically both go out of port 2, whose wire then
// carries both flows: over the window it delivers at most the line rate,
// 1 byte per 20 ps, so the two flows together get 1 link (0.5 each). With
// AR the second flow's first packet finds port 2 loaded (the first flow's
// packet pending or on its wire, its credits taken) and port 3 idle, and
// from then on each packet takes the port with less backlog: the two flows
// run on two wires, together at (nearly) 2 links, a flow's worth each.
func TestAdaptiveSplitsTwoFlows(t *testing.T) {
	const warm, end = 10 * ib.Microsecond, 60 * ib.Microsecond
	run := func(ar bool) (links float64, perPort [4]int64) {
		n := arNet(t, 2, ar)
		for src := 0; src < 2; src++ {
			n.eps[src].backlog = func(e *endpoint) *ib.Packet { return n.packet(e.idx, 3, 0, 2048) }
			n.eps[src].trySend()
		}
		var bytes int64
		for p := 2; p <= 3; p++ {
			n.eps[p].onGet = func(a arrival) {
				if a.head >= warm && a.head < end {
					bytes += int64(a.bytes)
					perPort[p] += int64(a.bytes)
				}
			}
		}
		n.s.StopAt(end)
		require.NoError(t, n.s.Run())
		c := n.sw.Counters()
		assert.Zero(t, c.DropRoute+c.DropSL2VL)
		if ar {
			for o := range n.sw.out {
				assert.GreaterOrEqual(t, n.sw.out[o].vl[0].queued, int32(0), "output %d", o)
			}
		}
		return float64(bytes) / (float64(end-warm) / 20), perPort
	}
	static, sp := run(false)
	ar, ap := run(true)
	t.Logf("links' worth delivered: static %.3f (port 2 %d B, port 3 %d B), AR %.3f (port 2 %d B, port 3 %d B)", static, sp[2], sp[3], ar, ap[2], ap[3])
	assert.LessOrEqual(t, static, 1.0+1e-9)
	assert.Greater(t, static, 0.97)
	assert.Zero(t, sp[3], "static: nothing on port 3")
	assert.Greater(t, ar, 1.94, "AR: two flows on two wires")
	assert.InEpsilon(t, ap[2], ap[3], 0.05, "AR: the ports carry a flow's worth each")
}

// TestAdaptivePerSL: adaptive routing on SL 1 only (NVIDIA's ar_sl_mask
// 0x0002). Hosts 0 and 1 each send 2074-byte packets back to back to LID 4,
// whose LFT port is 2 and AR group {2, 3}; one VL, so both SLs share VL 0
// and its buffers.
//
//   - Both flows on SL 0: neither may adapt. Every packet leaves by port 2:
//     0 bytes on port 3, and the two flows share port 2's wire, at most 1
//     link's worth together (1 byte per 20 ps over the window), as a static
//     switch gives them.
//   - Both on SL 1: both adapt, as in TestAdaptiveSplitsTwoFlows: about 2
//     links' worth, each port a flow's worth.
//   - Host 0 on SL 1, host 1 on SL 0: every packet of host 1 leaves by
//     port 2 (0 bytes of host 1 on port 3), so host 0's packets, which see
//     port 2's backlog of host 1's packets, go to port 3: each input
//     delivers at most its own link's rate, so at most 2 links' worth in
//     all, and port 2 at most 1, so the total above 1.94 means host 0
//     carried more than 0.94 of a link on port 3: the AR flow spread away
//     from the static one.
func TestAdaptivePerSL(t *testing.T) {
	const warm, end = 10 * ib.Microsecond, 60 * ib.Microsecond
	window := float64(end-warm) / 20 // bytes a link carries in the window
	// run returns the bytes delivered in the window per (port, source).
	run := func(sl0, sl1 uint8) (bytes [4][2]int64) {
		n := arNet(t, 2, true)
		n.sw.ar.SetStaticSLs(^uint16(1 << 1))
		sls := [2]uint8{sl0, sl1}
		for src := 0; src < 2; src++ {
			n.eps[src].backlog = func(e *endpoint) *ib.Packet {
				p := n.packet(e.idx, 3, 0, 2048)
				p.SL = sls[e.idx] // on VL 0: one data VL
				return p
			}
			n.eps[src].trySend()
		}
		for p := 2; p <= 3; p++ {
			n.eps[p].onGet = func(a arrival) {
				require.Equal(t, sls[a.src], a.sl)
				if a.head >= warm && a.head < end {
					bytes[p][a.src] += int64(a.bytes)
				}
			}
		}
		n.s.StopAt(end)
		require.NoError(t, n.s.Run())
		c := n.sw.Counters()
		assert.Zero(t, c.DropRoute+c.DropSL2VL)
		return bytes
	}
	links := func(b [4][2]int64) float64 {
		return float64(b[2][0]+b[2][1]+b[3][0]+b[3][1]) / window
	}

	static := run(0, 0)
	assert.Zero(t, static[3][0]+static[3][1], "SL 0 never adapts: nothing on port 3")
	assert.LessOrEqual(t, links(static), 1.0+1e-9)
	assert.Greater(t, links(static), 0.97)

	both := run(1, 1)
	assert.Greater(t, links(both), 1.94, "SL 1 adapts: two flows on two wires")
	assert.InEpsilon(t, both[2][0]+both[2][1], both[3][0]+both[3][1], 0.05)

	mixed := run(1, 0)
	t.Logf("host 0 on SL 1 (AR), host 1 on SL 0 (static): port 2 %d B from host 0, %d B from host 1; port 3 %d B from host 0, %d B from host 1; %.3f links",
		mixed[2][0], mixed[2][1], mixed[3][0], mixed[3][1], links(mixed))
	assert.Zero(t, mixed[3][1], "the static SL's packets all leave by the LFT's port")
	assert.Greater(t, mixed[2][1], int64(0))
	assert.Greater(t, links(mixed), 1.94)
	assert.Greater(t, float64(mixed[3][0])/window, 0.94, "the AR SL's packets spread to the other port")
}

// TestAdaptiveNoAllocation: choosing a port allocates nothing (it runs once
// per packet per AR switch).
func TestAdaptiveNoAllocation(t *testing.T) {
	n := arNet(t, 2, true)
	pkt := n.packet(0, 3, 0, 256)
	g := n.sw.ar.Group(4)
	require.Len(t, g, 2)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = n.sw.adaptive(0, pkt, 2, g) }))
}

// TestARTableSplit: a group's minimal part is part of its identity (the
// same ports all minimal are another group), and Split returns it.
func TestARTableSplit(t *testing.T) {
	ar := NewARTable()
	ar.Set(3, []int{2, 3})
	ar.SetSplit(4, []int{2, 3}, 1)
	ar.SetSplit(5, []int{2, 3}, 1)
	g, k := ar.Split(3)
	assert.Equal(t, []int16{2, 3}, g)
	assert.Equal(t, 2, k, "Set: every port minimal")
	g, k = ar.Split(4)
	assert.Equal(t, []int16{2, 3}, g)
	assert.Equal(t, 1, k)
	assert.Len(t, ar.group, 2, "4 and 5 share a group, 3 has its own")
	_, k = ar.Split(9)
	assert.Zero(t, k)
	assert.Panics(t, func() { ar.SetSplit(6, []int{2, 3}, 0) }, "a group needs a minimal port")
	assert.False(t, ar.DetourFrom(0), "no detour inputs set")
	ar.SetDetourInputs([]bool{true, false})
	assert.True(t, ar.DetourFrom(0))
	assert.False(t, ar.DetourFrom(1))
	assert.False(t, ar.DetourFrom(7), "beyond the ports")
}

// TestAdaptiveDetourBias: the UGAL rule of Switch.arChoose on a 4-port
// switch whose group for LID 4 is port 2 (minimal, the LFT's) then port 3
// (a detour), with a bias of 10 blocks; input 0 may detour, input 1 may
// not. Idle, both ports have load −credits of the same empty downstream
// buffer, a difference of 0: minimal. Queue q blocks on port 2 (as routed,
// not yet granted packets count) and d on port 3: the difference is q − d,
// and the packet detours iff q − d > 10, from input 0 only.
func TestAdaptiveDetourBias(t *testing.T) {
	cfg := Defaults()
	cfg.Radix = 4
	cfg.VLs = 1
	ar := NewARTable()
	ar.SetSplit(4, []int{2, 3}, 1)
	ar.SetDetourInputs([]bool{true, false, false, false})
	ar.SetDetourBias(10)
	n := newTestNet(t, cfg, netOpts{timing: ndr(21352), ar: ar})
	n.sw.lft.Set(4, 2)
	g := ar.Group(4)
	pkt := n.packet(0, 3, 0, 256)
	for _, tc := range []struct {
		q, d     int32 // blocks queued for port 2 and port 3
		in0, in1 int   // the port chosen for input 0 and input 1
	}{
		{0, 0, 2, 2},
		{10, 0, 2, 2},  // 10 − 0 is not above the bias
		{11, 0, 3, 2},  // 11 − 0 is
		{15, 5, 2, 2},  // 10 again
		{16, 5, 3, 2},  // 11
		{40, 50, 2, 2}, // the detour is the more loaded
	} {
		n.sw.out[2].vl[0].queued, n.sw.out[3].vl[0].queued = tc.q, tc.d
		assert.Equal(t, tc.in0, n.sw.arChoose(0, pkt, 2, g, 1), "q %d d %d, input 0", tc.q, tc.d)
		assert.Equal(t, tc.in1, n.sw.arChoose(1, pkt, 2, g, 1), "q %d d %d, input 1", tc.q, tc.d)
	}
	n.sw.out[2].vl[0].queued, n.sw.out[3].vl[0].queued = 0, 0
}
