package switchasic

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TestMulticastHoldZeroLoad: on an idle switch the hold policy changes
// nothing: every output is free in the packet's first round, so there is
// no split to avoid, and the timing is TestMulticastZeroLoad's (three
// copies in the round at 53000, each head at its host at 146000, the
// buffer held 113000 ps).
func TestMulticastHoldZeroLoad(t *testing.T) {
	n := mcastNetPolicy(t, McastHold, 0, 3, 5, 9)
	log := &grantLog{}
	n.sw.AcceptHook(log)
	n.eps[0].send(n.mcastPacket(0, 2048))
	n.s.StopAt(2_000_000)
	require.NoError(t, n.s.Run())
	for _, h := range []int{3, 5, 9} {
		require.Len(t, n.eps[h].got, 1, "host %d", h)
		assert.Equal(t, ib.PS(146000), n.eps[h].got[0].head, "host %d head", h)
	}
	require.Len(t, log.grants, 3)
	for _, g := range log.grants {
		assert.Equal(t, ib.PS(53000), g.at)
	}
	c := n.sw.Counters()
	assert.Equal(t, uint64(1), c.McastRounds)
	assert.Equal(t, uint64(0), c.McastHeld)
	assert.Equal(t, ib.PS(113000), c.McastHold)
	assert.Equal(t, float64(0), n.sw.Metrics()["mcast_held_packets"])
	assert.Equal(t, n.sw.Port(0).BufferCapacity(0), n.eps[0].port.CreditsAvailable(0))
}

// TestMulticastHoldAlignsFanout: a multicast packet whose second output
// frees within its input's crossbar hold waits for it, and its copies go
// in one round; under split the same packet takes two rounds and frees
// its input later.
//
// As in TestMulticastFanoutSplit, host 1's 4122-byte unicast packet holds
// output 3's wire from 133000 to 215440, so output 3 can next be granted
// at the first edge t > 215440 − (40 + 40 + 1)·1000 = 134440: 135000.
// Host 0 sends a 2074-byte multicast packet to {0, 3, 5} at 70000: head
// in at 83000, ready at 83000 + 40000 = 123000, tail in at 83000 + 2074 ×
// 20 = 124480. In the round at 123000 output 5 is free and output 3 is
// not. A grant now would hold the input D = max(⌈2074/64⌉ = 33 cycles,
// tail) = 33000 ps, from 163000 to 196000.
//
//   - split: the copy to 5 goes at 123000 (on its wire at 123000 + 80000
//     = 203000, at host 5 at 216000); the copy to 3 waits for the input,
//     the round at 196000 − 40000 = 156000 (through the crossbar 196000 to
//     229000, on the wire at 236000, at host 3 at 249000); the buffer is
//     released at 229000, held 229000 − 83000 = 146000 ps.
//   - hold: output 3 frees at 135000 <= 123000 + D = 156000, so the head
//     asks for nothing until 135000 and takes both outputs then: through
//     the crossbar 175000 to 208000, the copy to 5 on its wire at 215000
//     (at host 5 at 228000), the copy to 3 at max(215000, 215440) =
//     215440 (at host 3 at 228440); the buffer is released at 208000, held
//     125000 ps. Host 5's copy is 12 ns later than under split, host 3's
//     20.56 ns earlier, and the input is free 21 ns earlier.
func TestMulticastHoldAlignsFanout(t *testing.T) {
	for _, c := range []struct {
		policy       string
		rounds, held uint64
		grants       []ib.PS // the copies' rounds: to 5, then to 3
		head5, head3 ib.PS
		buffer       ib.PS // McastHold: head in to the last crossbar tail
	}{
		{McastSplit, 2, 0, []ib.PS{123000, 156000}, 216000, 249000, 146000},
		{McastHold, 1, 1, []ib.PS{135000, 135000}, 228000, 228440, 125000},
	} {
		t.Run(c.policy, func(t *testing.T) {
			n := mcastNetPolicy(t, c.policy, 0, 3, 5)
			log := &grantLog{}
			n.sw.AcceptHook(log)
			n.eps[1].send(n.packet(1, 3, 0, 4096))
			n.at(70000, func() { n.eps[0].send(n.mcastPacket(0, 2048)) })
			n.s.StopAt(2_000_000)
			require.NoError(t, n.s.Run())
			require.Len(t, log.grants, 3)
			assert.Equal(t, ib.PS(53000), log.grants[0].at) // the unicast packet
			got := map[int64]ib.PS{}
			for _, g := range log.grants[1:] {
				got[g.out] = g.at
			}
			assert.Equal(t, map[int64]ib.PS{5: c.grants[0], 3: c.grants[1]}, got)
			require.Len(t, n.eps[5].got, 1)
			require.Len(t, n.eps[3].got, 2)
			assert.Equal(t, c.head5, n.eps[5].got[0].head)
			assert.Equal(t, int32(0), n.eps[3].got[1].src)
			assert.Equal(t, c.head3, n.eps[3].got[1].head)
			cn := n.sw.Counters()
			assert.Equal(t, c.rounds, cn.McastRounds)
			assert.Equal(t, c.held, cn.McastHeld)
			assert.Equal(t, uint64(2), cn.McastCopies)
			assert.Equal(t, c.buffer, cn.McastHold)
			assert.Equal(t, n.sw.Port(0).BufferCapacity(0), n.eps[0].port.CreditsAvailable(0))
		})
	}
}

// grantIn is one arb_grant: round, input, output.
type grantIn struct {
	at      ib.PS
	in, out int64
}

// inGrantLog records every arb_grant with its input.
type inGrantLog struct{ grants []grantIn }

func (g *inGrantLog) Func(ctx sim.HookCtx) {
	ev, ok := ctx.Item.(*components.TraceEvent)
	if !ok || ev.Kind != components.TraceArbGrant {
		return
	}
	in, _ := ev.Int("in")
	out, _ := ev.Int("out")
	g.grants = append(g.grants, grantIn{ev.Time, in, out})
}

// TestMulticastHoldProgressUnderContention: the hold policy's guarantee. A
// head holds back at most once, for at most D (its round's input hold),
// and from then on asks as under split, so unicast streams that keep its
// outputs busy in turn cannot keep it waiting for all of them at once.
//
// Two saturating unicast streams of 4122-byte packets (4096 payload + 26),
// host 1 → 3 from 0 and host 2 → 5 from 41000, keep outputs 3 and 5 busy
// in alternation: host h's packet k arrives at 13000 + s_h + 82440k
// (back to back at 20 ps a byte, s_1 = 0, s_2 = 41000) and is granted
// when ready, ⌈arrival⌉ + 40000 (its output, granted g the packet before,
// is on the wire g + 80000 to g + 162440 and can take a packet from the
// first edge after g + 81440, before that): output 3 at 53000, 136000,
// 218000, 301000, 383000, 466000, 548000, ...; output 5 at 94000, 177000,
// 259000, 342000, 424000, 507000, .... Each output is busy 82 ns after its
// grant and the two are granted 41-42 ns apart, so they are never free in
// the same round: a head that waited until all its outputs were free at
// once would wait as long as the streams run.
//
// Host 0 sends a 4122-byte packet to {0, 3, 5} at 320000: head in at
// 333000, ready at 373000, tail in at 415440. A round holds its input
// D = max(⌈4122/64⌉ = 65 cycles, tail) = 65000 ps.
//
//   - hold: at 373000 both outputs are busy; at 383000 output 3 is free
//     and output 5 frees at 424000 <= 383000 + D, so the head holds back
//     (output 3 goes to host 1's stream); at 424000 it takes output 5 (it
//     won't hold again; iSLIP's pointer at output 5 is past input 2, so
//     input 0 wins). Its input is busy until the round at 424000 + D =
//     489000, and output 3, granted at 466000, is next free at 548000,
//     where input 0 wins it. Copy to 5 on the wire at max(464000 + 40000,
//     the stream's wire end 504440) = 504440, at host 5 at 517440; copy
//     to 3 at max(628000, 628440) = 628440, at host 3 at 641440. The last
//     crossbar tail is at 548000 + 40000 + 65000 = 653000: buffer held
//     653000 − 333000 = 320000 ps.
//   - split: at 383000 the head takes output 3 (on the wire at 463440,
//     at host 3 at 476440); output 5 frees at 424000 while the input is
//     busy until the round at 448000, so host 2's stream takes it; the
//     head takes output 5 at its next free round, 506000 (on the wire at
//     586880, at host 5 at 599880); buffer held 506000 + 105000 − 333000
//     = 278000 ps.
//
// The bound: from the first round at which one of its outputs is free
// (383000), the head holds at most D, its first copy round holds the input
// D more, and the other output is then free within one stream packet (83
// ns, 82.44 rounded to the clock), so its last copy goes by 383000 + 2D +
// 83000 = 596000; it went at 548000, 42 ns after split's last copy (the
// price of the one hold here).
func TestMulticastHoldProgressUnderContention(t *testing.T) {
	for _, c := range []struct {
		policy       string
		held         uint64
		copyAt       map[int64]ib.PS // output → the head's copy round
		head3, head5 ib.PS
		buffer       ib.PS
	}{
		{McastSplit, 0, map[int64]ib.PS{3: 383000, 5: 506000}, 476440, 599880, 278000},
		{McastHold, 1, map[int64]ib.PS{5: 424000, 3: 548000}, 641440, 517440, 320000},
	} {
		t.Run(c.policy, func(t *testing.T) {
			n := mcastNetPolicy(t, c.policy, 0, 3, 5)
			log := &inGrantLog{}
			n.sw.AcceptHook(log)
			n.eps[1].backlog = func(e *endpoint) *ib.Packet { return n.packet(1, 3, 0, 4096) }
			n.eps[2].backlog = func(e *endpoint) *ib.Packet { return n.packet(2, 5, 0, 4096) }
			n.eps[1].trySend()
			n.at(41000, func() { n.eps[2].trySend() })
			n.at(320000, func() { n.eps[0].send(n.mcastPacket(0, 4096)) })
			n.s.StopAt(800_000)
			require.NoError(t, n.s.Run())

			// The streams' grants up to the head's ready time, as derived.
			var streams []grantIn
			head := map[int64]ib.PS{}
			for _, g := range log.grants {
				if g.in == 0 {
					head[g.out] = g.at
				} else if g.at <= 383000 {
					streams = append(streams, g)
				}
			}
			require.GreaterOrEqual(t, len(streams), 8)
			assert.Equal(t, []grantIn{{53000, 1, 3}, {94000, 2, 5}, {136000, 1, 3}, {177000, 2, 5}, {218000, 1, 3},
				{259000, 2, 5}, {301000, 1, 3}, {342000, 2, 5}}, streams[:8])
			assert.Equal(t, c.copyAt, head)
			last := max(head[3], head[5])
			assert.LessOrEqual(t, last, ib.PS(596000), "the progress bound")

			cn := n.sw.Counters()
			assert.Equal(t, uint64(1), cn.McastDone)
			assert.Equal(t, uint64(2), cn.McastRounds, "the streams never leave both outputs free in one round")
			assert.Equal(t, c.held, cn.McastHeld)
			assert.Equal(t, c.buffer, cn.McastHold)
			for _, h := range []int{3, 5} {
				var got []ib.PS
				for _, a := range n.eps[h].got {
					if a.src == 0 {
						got = append(got, a.head)
					}
				}
				want := map[int]ib.PS{3: c.head3, 5: c.head5}[h]
				assert.Equal(t, []ib.PS{want}, got, "host %d", h)
			}
		})
	}
}
