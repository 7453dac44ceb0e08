package switchasic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestFlowletKeepsPortUntilIdleGap: AR on SL 1 only, a flowlet gap of
// 500 ns. Host 0 sends two trains of 20 packets (256-byte payload, 5.64 ns
// on the wire) to LID 4 on SL 1, one every 100 ns: the first from 0 to
// 1.9 µs, the second from 2.9 µs, after 1 µs of idle. At 0.5 µs host 1
// starts sending 2 KiB packets back to back to LID 4 on SL 0, which does
// not adapt, so every one of them leaves by the LFT's port 2 and keeps a
// backlog there from then on.
//
// Host 0's first packet finds the switch idle: a tie, which goes to the
// LFT's port 2. Its packets reach the switch 100 ns apart, less than the
// gap, so with flowlets the whole first train keeps port 2, host 1's
// backlog or not: 20 packets on port 2, one flowlet and 19 kept. The
// second train's first packet comes 1 µs after the first train's last, an
// idle gap longer than 500 ns: a new flowlet, chosen then, and port 2,
// holding host 1's backlog, loses to the idle port 3; the train keeps it:
// 20 packets on port 3. Per packet, each of host 0's packets goes where
// the load is lower (its own earlier packets' credits, not yet returned,
// already count against port 2, and host 1's backlog from 0.5 µs): the
// first train splits between the ports.
func TestFlowletKeepsPortUntilIdleGap(t *testing.T) {
	const train, spacing, idle = 20, 100 * ib.Nanosecond, 1 * ib.Microsecond
	second := ib.PS(train-1)*spacing + idle // the second train's first send
	// run returns host 0's packets per (train, output port).
	run := func(gap ib.PS) (ports [2][4]int, st FlowletStats) {
		n := arNet(t, 2, true)
		n.sw.ar.SetStaticSLs(^uint16(1 << 1))
		if gap > 0 {
			n.sw.flowlets = newFlowletTable(gap, FlowletEntries)
		}
		for k := 0; k < train; k++ {
			for _, start := range []ib.PS{0, second} {
				n.at(start+ib.PS(k)*spacing, func() {
					p := n.packet(0, 3, 0, 256)
					p.SL = 1 // on VL 0: one data VL
					n.eps[0].send(p)
				})
			}
		}
		n.at(500*ib.Nanosecond, func() {
			n.eps[1].backlog = func(e *endpoint) *ib.Packet { return n.packet(1, 3, 0, 2048) } // SL 0
			n.eps[1].trySend()
		})
		for p := 2; p <= 3; p++ {
			n.eps[p].onGet = func(a arrival) {
				if a.src == 0 {
					tr := 0
					if a.injectAt >= second {
						tr = 1
					}
					ports[tr][p]++
				}
			}
		}
		n.s.StopAt(10 * ib.Microsecond)
		require.NoError(t, n.s.Run())
		return ports, n.sw.FlowletStats()
	}
	fl, st := run(500 * ib.Nanosecond)
	assert.Equal(t, [4]int{0, 0, train, 0}, fl[0], "the first train keeps port 2")
	assert.Equal(t, [4]int{0, 0, 0, train}, fl[1], "after the idle gap the second train moves to port 3, and keeps it")
	assert.Equal(t, FlowletStats{Flowlets: 2, Kept: 2*train - 2}, st)

	pp, st := run(0)
	t.Logf("per packet: first train %d on port 2, %d on port 3; second %d, %d", pp[0][2], pp[0][3], pp[1][2], pp[1][3])
	assert.Equal(t, train, pp[0][2]+pp[0][3])
	assert.Greater(t, pp[0][2], 0, "per packet, the first train splits")
	assert.Greater(t, pp[0][3], 0, "per packet, the first train splits")
	assert.Zero(t, st, "no flowlet table")
}

// TestFlowletTable: one entry, gap 100 ns, on an idle switch (every choice
// is the LFT's port 2). Flow A (SLID 1) takes the entry; flow B (SLID 2),
// whose entry it is too, is routed on its own while A's flowlet is live
// (a collision) and takes the entry once A has been idle for the gap. A's
// next packet then starts a new flowlet (B's is live: a collision). An
// entry whose SL-to-VL now drops the SL is chosen again.
func TestFlowletTable(t *testing.T) {
	n := arNet(t, 2, true)
	sw := n.sw
	sw.flowlets = newFlowletTable(100*ib.Nanosecond, 1)
	require.Len(t, sw.flowlets.entries, 1)
	g := sw.ar.Group(4)
	a, b := n.packet(0, 3, 0, 256), n.packet(1, 3, 0, 256)
	at := func(pkt *ib.Packet, ns ib.PS) int { return sw.flowlet(0, pkt, ns*ib.Nanosecond, 2, g, len(g)) }
	assert.Equal(t, 2, at(a, 0))
	assert.Equal(t, FlowletStats{Flowlets: 1}, sw.FlowletStats())
	assert.Equal(t, 2, at(b, 10))
	assert.Equal(t, FlowletStats{Flowlets: 1, Collisions: 1}, sw.FlowletStats())
	assert.Equal(t, 2, at(a, 99))
	assert.Equal(t, FlowletStats{Flowlets: 1, Kept: 1, Collisions: 1}, sw.FlowletStats())
	assert.Equal(t, 2, at(b, 199)) // A's last packet at 99: idle for exactly the gap
	assert.Equal(t, FlowletStats{Flowlets: 2, Kept: 1, Collisions: 1}, sw.FlowletStats())
	assert.Equal(t, 2, at(a, 250))
	assert.Equal(t, FlowletStats{Flowlets: 2, Kept: 1, Collisions: 2}, sw.FlowletStats())

	// B's flowlet holds port 2; a table that now drops SL 0 from input 1
	// to port 2 sends B's next packet to port 3, a new flowlet, kept after.
	drop := sw.cfg.SL2VLTable()
	drop[0] = ib.ManagementVL
	sw.sl2vl = NewSL2VL(4, sw.cfg.SL2VLTable())
	sw.sl2vl.SetPair(1, 2, drop)
	b2 := func(ns ib.PS) int { return sw.flowlet(1, b, ns*ib.Nanosecond, 2, g, len(g)) }
	assert.Equal(t, 3, b2(260))
	assert.Equal(t, 3, b2(270))
	assert.Equal(t, FlowletStats{Flowlets: 3, Kept: 2, Collisions: 2}, sw.FlowletStats())
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = b2(280) }))
}
