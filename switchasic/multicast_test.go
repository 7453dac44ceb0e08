package switchasic

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

const testMLID = 0xC000

// mcastNet is a 16-port FIFO switch (defaults: 40/40/40 cycles at 1 GHz,
// cut-through, 64-byte datapath) on 4x NDR links of 13 ns head latency,
// with the MFT entry testMLID → ports.
func mcastNet(t *testing.T, ports ...int) *testNet {
	return mcastNetPolicy(t, McastSplit, ports...)
}

// mcastNetPolicy is mcastNet with switch.mcast_replication policy.
func mcastNetPolicy(t *testing.T, policy string, ports ...int) *testNet {
	cfg := smallConfig(16, 1)
	cfg.Queueing = QueueFIFO
	cfg.McastReplication = policy
	cfg.VLBufferBytes = 65536
	mft := NewMFT()
	var m components.PortSet
	for _, p := range ports {
		m.Set(p)
	}
	mft.Set(testMLID, m)
	return newTestNet(t, cfg, netOpts{timing: ndr(13000), mft: mft})
}

func (n *testNet) mcastPacket(src int, payload int) *ib.Packet {
	p := n.packet(src, 0, 0, payload)
	p.DLID = testMLID
	p.Dst = -1
	return p
}

// grantLog records the switch's arb_grant (time, out) and buf_deq times.
type grantLog struct {
	grants []struct {
		at  ib.PS
		out int64
	}
	deqs []ib.PS
}

func (g *grantLog) Func(ctx sim.HookCtx) {
	ev, ok := ctx.Item.(*components.TraceEvent)
	if !ok {
		return
	}
	switch ev.Kind {
	case components.TraceArbGrant:
		out, _ := ev.Int("out")
		g.grants = append(g.grants, struct {
			at  ib.PS
			out int64
		}{ev.Time, out})
	case components.TraceBufDeq:
		g.deqs = append(g.deqs, ev.Time)
	}
}

// TestMulticastZeroLoad: one packet from host 0 to a group of ports
// {0, 3, 5, 9} on an idle switch. The arrival port 0 is left out (a switch
// never sends a multicast packet back where it came from), so hosts 3, 5
// and 9 get one copy each and no other host gets any. All three outputs are
// free, so the one allocation round grants all three copies: each head
// leaves as a unicast packet's would, at ⌈head in⌉ + (route + alloc +
// xbar)·P = ⌈13000⌉ + 120 × 1000 = 133000 ps, and reaches its host one link
// latency later, 146000 ps (a 2074-byte packet: its 41.48 ns on the wire
// exceed its ⌈2074/64⌉ = 33 crossbar cycles, so the output never waits for
// the input). The input buffer is released when the tail is through the
// crossbar: max(entry + 33 cycles, ⌈tail in⌉) with entry = 53000 + 40000 =
// 93000 and the tail in at 13000 + 2074 × 20 = 54480, so at 126000; the
// switch's hold figure is that less the head arrival, 113000 ps.
func TestMulticastZeroLoad(t *testing.T) {
	n := mcastNet(t, 0, 3, 5, 9)
	log := &grantLog{}
	n.sw.AcceptHook(log)
	n.eps[0].send(n.mcastPacket(0, 2048))
	n.s.StopAt(2_000_000)
	require.NoError(t, n.s.Run())
	for h, e := range n.eps {
		switch h {
		case 3, 5, 9:
			require.Len(t, e.got, 1, "host %d", h)
			assert.Equal(t, ib.PS(146000), e.got[0].head, "host %d head", h)
			assert.Equal(t, uint64(1), e.got[0].seq)
		default:
			assert.Empty(t, e.got, "host %d is not a member (or is the sender)", h)
		}
	}
	require.Len(t, log.grants, 3)
	for _, g := range log.grants {
		assert.Equal(t, ib.PS(53000), g.at, "one round grants every copy")
	}
	c := n.sw.Counters()
	assert.Equal(t, uint64(1), c.McastReceived)
	assert.Equal(t, uint64(3), c.McastCopies)
	assert.Equal(t, uint64(1), c.McastRounds, "no fanout split")
	assert.Equal(t, uint64(3), c.Forwarded)
	assert.Equal(t, ib.PS(126000-13000), c.McastHold)
	// Every credit is back at the sender: the buffer was released once.
	assert.Equal(t, n.sw.Port(0).BufferCapacity(0), n.eps[0].port.CreditsAvailable(0))
}

// TestMulticastFanoutSplit: output 3 is busy when the multicast packet is
// ready, so the packet's copy to 5 goes in its first round and its copy to
// 3 in a later one; the packet holds its input's blocks until that last
// copy's tail is through the crossbar.
//
// Host 1 sends a 4122-byte unicast packet (4096 payload + 26) to host 3 at
// 0: head in at 13000, ready at 53000, granted then, on output 3's wire
// from 53000 + (40 + 40)·1000 = 133000 to 133000 + 4122 × 20 = 215440.
// Host 0 sends a 2074-byte multicast packet to {0, 3, 5} at 5000: head in
// at 18000, ready at 58000. The round at 58000 finds output 5 free and
// output 3 busy: the copy to 5 goes. Output 3 can take a packet at the
// first edge t with its wire free before t + (40 + 40 + 1)·1000, that is
// t > 134440: t = 135000. That copy's tail is through the crossbar at
// t + 40000 + ⌈2074/64⌉·1000 = 208000 (the tail came in at
// 18000 + 41480), when the input's blocks are released: the hold is
// 208000 − 18000 = 190000 ps, against 113000 for a packet whose copies all
// go at once (TestMulticastZeroLoad).
func TestMulticastFanoutSplit(t *testing.T) {
	n := mcastNet(t, 0, 3, 5)
	log := &grantLog{}
	n.sw.AcceptHook(log)
	n.eps[1].send(n.packet(1, 3, 0, 4096))
	n.at(5000, func() { n.eps[0].send(n.mcastPacket(0, 2048)) })
	n.s.StopAt(2_000_000)
	require.NoError(t, n.s.Run())
	require.Len(t, n.eps[5].got, 1)
	require.Len(t, n.eps[3].got, 2)
	assert.Equal(t, int32(1), n.eps[3].got[0].src)
	assert.Equal(t, int32(0), n.eps[3].got[1].src)
	c := n.sw.Counters()
	assert.Equal(t, uint64(2), c.McastCopies)
	assert.Equal(t, uint64(2), c.McastRounds, "the fanout split over two rounds")
	require.Len(t, log.grants, 3)
	assert.Equal(t, ib.PS(53000), log.grants[0].at)
	assert.Equal(t, int64(3), log.grants[0].out)
	assert.Equal(t, ib.PS(58000), log.grants[1].at)
	assert.Equal(t, int64(5), log.grants[1].out)
	assert.Equal(t, ib.PS(135000), log.grants[2].at)
	assert.Equal(t, int64(3), log.grants[2].out)
	// buf_deq: the unicast packet at its grant, the multicast packet at its
	// last copy's grant (the trace names the round; the blocks go back at
	// the tail through the crossbar, which the hold measures).
	assert.Equal(t, []ib.PS{53000, 135000}, log.deqs)
	assert.Equal(t, ib.PS(190000), c.McastHold)
	// The copy to 3 leaves at 135000 + 80000 = 215000, before the wire
	// frees: it starts at 215440 and reaches host 3 13000 later.
	assert.Equal(t, ib.PS(228440), n.eps[3].got[1].head)
	assert.Equal(t, n.sw.Port(0).BufferCapacity(0), n.eps[0].port.CreditsAvailable(0))
}

// TestMulticastLineRate: host 0 sends back-to-back multicast packets to a
// group of k = 2, 7 and 15 ports besides itself; the outputs carry nothing
// else, so every round grants every copy and each member receives at the
// sender's rate, the line rate: 4x NDR takes 4122 × 20 = 82440 ps per
// 4096-byte packet, so in [200 µs, 1 ms) each member gets
// 800 000 000 / 82 440 = 9704.0 packets (± 1 for where the window cuts).
// The input buffer (65536 bytes, 1024 blocks) is far above the credit loop
// (TestCreditLoop), so the sender itself is never short of credits.
func TestMulticastLineRate(t *testing.T) {
	for _, k := range []int{2, 7, 15} {
		ports := []int{0}
		for p := 1; p <= k; p++ {
			ports = append(ports, p)
		}
		n := mcastNet(t, ports...)
		n.eps[0].backlog = func(e *endpoint) *ib.Packet { return n.mcastPacket(0, 4096) }
		const t0, t1 = ib.PS(200_000_000), ib.PS(1_000_000_000)
		counts := make([]int, 16)
		for p := 1; p <= k; p++ {
			e := n.eps[p]
			e.onGet = func(a arrival) {
				if a.tail >= t0 && a.tail < t1 {
					counts[e.idx]++
				}
			}
		}
		n.eps[0].trySend()
		n.s.StopAt(t1)
		require.NoError(t, n.s.Run())
		want := float64(t1-t0) / 82440
		for p := 1; p <= 15; p++ {
			if p <= k {
				assert.InDelta(t, want, float64(counts[p]), 1, "k=%d member %d", k, p)
			} else {
				assert.Empty(t, n.eps[p].got, "k=%d non-member %d", k, p)
			}
		}
		assert.Empty(t, n.eps[0].got, "the sender gets no copy back")
		c := n.sw.Counters()
		assert.Equal(t, c.McastReceived, c.McastRounds, "k=%d: never a split fanout", k)
	}
}

// TestMulticastRefusedWithVOQ: replication is modelled for FIFO inputs only.
func TestMulticastRefusedWithVOQ(t *testing.T) {
	cfg := smallConfig(4, 1)
	cfg.Queueing = QueueVOQ
	_, err := MakeBuilder().WithSim(components.NewSim()).WithConfig(cfg).WithLFT(NewLFT(4)).WithMFT(NewMFT()).Build("Fabric.Switch[0]")
	require.Error(t, err)
	assert.Equal(t, `switch.queueing: "voq" with multicast traffic: replication is modelled for fifo input queueing only (a multicast packet at a VOQ input is not)`, err.Error())
}

// TestMFT: lookups inside and outside the multicast range.
func TestMFT(t *testing.T) {
	m := NewMFT()
	var s components.PortSet
	s.Set(2)
	s.Set(7)
	m.Set(0xC002, s)
	assert.Equal(t, s, m.Lookup(0xC002))
	assert.False(t, m.Lookup(0xC001).Any())
	assert.False(t, m.Lookup(0xC003).Any())
	assert.False(t, m.Lookup(0x0002).Any())
	assert.False(t, m.Lookup(0xFFFF).Any())
	assert.Panics(t, func() { m.Set(0xFFFF, s) })
	ids, masks := m.Entries()
	assert.Equal(t, []uint16{0xC002}, ids)
	assert.Equal(t, []components.PortSet{s}, masks)
}
