package switchasic

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// phaseLockRun is one run of the phase-lock scenario (TestPhaseLockedVOQ):
// host 0 sends 4 KiB packets to host 2 and host 1 to host 3, both every
// period T, host 1's δ after host 0's; after the tenth of host 0's packets
// host 0 sends one minimal packet (26 bytes of headers, the size of an ACK)
// to host 3. It returns when the small packet was sent and when its head
// reached host 3, and when the head of host 1's last packet did.
func phaseLockRun(t *testing.T, cfg Config, perCycle bool, delta ib.PS) (sent, arrived, flowsEnd ib.PS) {
	const periods, ackAfter = 40, 10
	tm := link.NewTiming(link.EDR, 4, 0, 0, link.CopperPsPerM)
	n := newTestNet(t, cfg, netOpts{timing: tm, perCycle: perCycle})
	start := ib.Microsecond
	sent = start + ackAfter*phaseLockT + phaseLockAckGap
	for k := range ib.PS(periods) {
		n.at(start+k*phaseLockT, func() { n.eps[0].send(n.packet(0, 2, 0, 4096)) })
		n.at(start+delta+k*phaseLockT, func() { n.eps[1].send(n.packet(1, 3, 0, 4096)) })
	}
	n.at(sent, func() { n.eps[0].send(n.packet(0, 3, 0, 0)) })
	arrived = -1
	n.eps[3].onGet = func(a arrival) {
		switch {
		case a.bytes == middleHeaderBytes:
			arrived = a.head
		case a.src == 1:
			flowsEnd = a.head
		}
	}
	n.s.StopAt(start + (periods+10)*phaseLockT)
	require.NoError(t, n.s.Run())
	require.GreaterOrEqual(t, arrived, sent, "the small packet never arrived")
	require.Len(t, n.eps[2].got, periods)
	return sent, arrived, flowsEnd
}

// middleHeaderBytes is an RDMA WRITE middle packet's headers (LRH, BTH,
// ICRC, VCRC): the whole of n.packet with no payload.
const middleHeaderBytes = ib.LRHBytes + ib.BTHBytes + ib.ICRCBytes + ib.VCRCBytes

// The scenario's period and packet timing (TestPhaseLockedVOQ derives them).
const (
	phaseLockT      = 340 * ib.Nanosecond // period of both flows
	phaseLockAckGap = 330 * ib.Nanosecond // the small packet leaves host 0 this long after a data packet's head
)

// TestPhaseLockedVOQ: a VOQ input at speedup 1 can hold a small packet for as
// long as two periodic flows of the same period keep a fixed phase, on
// traffic with no output or input over its capacity. This is the mechanism
// that holds ACKs in a shift on a fat tree (fabric.md, "Perftest pairs").
//
// Derivation (EDR: 80 ps per byte; 1 GHz core, R = A = X = 40 cycles, links
// of zero latency, so every head is on a clock edge): a data packet is 4122
// bytes on the wire, S = 329.76 ns; the flows' period is T = 340 ns. Host 0's
// packet whose head reaches input 0 at h is ready at h + R and granted at
// once (output 2 carries nothing else). It holds input 0's one crossbar
// connection until its tail is in, ⌈h + S⌉ = h + 330 ns (its 65 crossbar
// cycles from h + 80 end sooner). The small packet, a head of input 0's VOQ
// for output 3, can be granted at a round t whose entry t + A finds that
// connection free, t ≥ h + 290 ns, and before host 0's next packet is
// granted at h + T + R = h + 380 ns: rounds [h + 290, h + 380) ns.
//
// Output 3 carries host 1's flow: its packet with head at h + δ is granted
// at h + δ + 40 and on the wire from h + δ + 120 to h + δ + 449.76 ns. An
// output takes a packet only if its wire frees less than a cycle after the
// new head would reach it (t + A + X + 1 cycle > 449.76 + h + δ), so output
// 3 can take the small packet in rounds [h + δ + 369, h + δ + 380) ns, until
// host 1's next packet is granted. The two windows overlap, modulo T, iff
// δ + 369 < 380 and 290 < δ + 380: δ mod T in [0, 10] or [251, 339] ns. For
// δ in [12, 249] ns they are disjoint, so no round ever has the small
// packet's input and output both free, whatever the allocator: it waits
// until the flows stop. At δ = 11 and 250 ns the windows touch in one round
// (h + 380, where input 0 offers the small packet and host 0's next one;
// h + 290 + T, where output 3 is asked for by it and by host 1's next one)
// and the allocator decides.
//
// When they meet, the small packet is ready at most a period after its head
// arrives (at h + 330, ready h + 370) and, granted at t, is on the wire by
// t + 81 ns: its delay is at most 40 + T + 81 ns. FIFO queueing holds host
// 0's next packets behind it, so input 0 stays free until output 3 is, and
// speedup 2 leaves input 0 a second connection: with either, every phase
// meets that bound.
func TestPhaseLockedVOQ(t *testing.T) {
	tm := link.NewTiming(link.EDR, 4, 0, 0, link.CopperPsPerM)
	require.Equal(t, ib.PS(329760), tm.Serialization(4096+middleHeaderBytes), "S")
	cfg := smallConfig(4, 1)
	require.Equal(t, 40, cfg.RouteCycles)
	require.Equal(t, 40, cfg.AllocCycles)
	require.Equal(t, 40, cfg.XbarCycles)
	require.Equal(t, ib.PS(1000), cfg.CyclePS())
	bound := 40*ib.Nanosecond + phaseLockT + 81*ib.Nanosecond
	blocked := func(delta ib.PS) bool {
		d := delta / ib.Nanosecond
		return d >= 12 && d <= 249
	}

	t.Run("voq_islip_every_phase", func(t *testing.T) {
		nBlocked := 0
		for d := ib.PS(0); d < phaseLockT; d += ib.Nanosecond {
			if d == 11*ib.Nanosecond || d == 250*ib.Nanosecond {
				continue // the windows touch; the allocator decides
			}
			sent, arrived, end := phaseLockRun(t, cfg, false, d)
			if blocked(d) {
				nBlocked++
				assert.Greater(t, arrived, end, "δ %d ps: the small packet should wait until host 1's flow ends", d)
			} else {
				assert.LessOrEqual(t, arrived-sent, bound, "δ %d ps: the windows meet", d)
			}
		}
		assert.Equal(t, 249-12+1, nBlocked)
	})

	// Blocked phases stay blocked with every allocator and with a round on
	// every clock edge: no round exists in which the packet could win.
	for _, alloc := range []string{components.AllocISLIP, components.AllocSeparable, components.AllocWavefront} {
		for _, perCycle := range []bool{false, true} {
			for _, d := range []ib.PS{12 * ib.Nanosecond, 34 * ib.Nanosecond, 130 * ib.Nanosecond, 249 * ib.Nanosecond} {
				t.Run(fmt.Sprintf("voq_%s_perCycle%v_delta%d", alloc, perCycle, d), func(t *testing.T) {
					c := cfg
					c.Allocator = alloc
					_, arrived, end := phaseLockRun(t, c, perCycle, d)
					assert.Greater(t, arrived, end)
				})
			}
		}
	}

	for _, v := range []struct {
		name string
		set  func(*Config)
	}{
		{"fifo", func(c *Config) { c.Queueing = QueueFIFO }},
		{"voq_speedup2", func(c *Config) { c.Speedup = 2 }},
	} {
		t.Run(v.name, func(t *testing.T) {
			c := cfg
			v.set(&c)
			for d := ib.PS(0); d < phaseLockT; d += 17 * ib.Nanosecond {
				sent, arrived, _ := phaseLockRun(t, c, false, d)
				assert.LessOrEqual(t, arrived-sent, bound, "δ %d ps", d)
			}
		})
	}
}
