package switchasic

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// TestCreditLoop: one flow from host 0 through the switch to host 1 over
// cables of length len runs at line rate only when the switch's per-VL
// input buffer covers the credit round trip.
//
// Derivation for a packet host 0 starts at t0 (2050 bytes: 2024 payload +
// 26 header, 33 blocks, serialization S = 2050 × 20 ps = 41 ns; link latency
// L = len × 5 ns/m, no FEC, so every time is on a 1 GHz clock edge):
//
//	head at the switch      h = t0 + L
//	route stage done        h + R            (R = 40 cycles)
//	head into the crossbar  h + R + A        (A = 40 cycles)
//	tail through crossbar   max(h + R + A + ⌈2050/64⌉ cycles, h + S) = h + 113 ns
//	buffer released there; the flow-control packet (6 bytes, 120 ps) goes
//	back over the idle reverse wire and arrives L later, and a sender that
//	was waiting for it starts the next packet at once. That packet's head
//	then reaches the switch 120 ps after a clock edge and waits for the next
//	edge, so a credit-limited packet's loop is
//	RTT = L + ⌈120 ps⌉cycle + 113 ns + L = 2L + 114 ns
//
// With a buffer of k packets the sender sends k packets per max(k·S, RTT),
// so the accepted rate is min(1, k·S / RTT): line rate from k = ⌈RTT/S⌉ on.
func TestCreditLoop(t *testing.T) {
	const payload, bytes, blocks = 2024, 2050, 33
	const S = ib.PS(bytes * 20)
	for _, lengthM := range []float64{2.6, 22.6, 102.6} {
		tm := link.NewTiming(link.NDR, 4, 0, lengthM, 5000)
		L := tm.Latency()
		require.Equal(t, ib.PS(lengthM*5000+0.5), L)
		cfg := smallConfig(4, 1)
		P := cfg.CyclePS()
		R, A := ib.PS(cfg.RouteCycles)*P, ib.PS(cfg.AllocCycles)*P
		xfer := ib.PS((bytes+cfg.DatapathBytes-1)/cfg.DatapathBytes) * P
		fc := tm.Serialization(ib.FlowControlBytes)
		require.Equal(t, ib.PS(120), fc)
		rtt := L + (fc+P-1)/P*P + max(R+A+xfer, S) + L
		kMin := int((rtt + S - 1) / S)
		for _, k := range []int{kMin - 1, kMin, kMin + 1} {
			t.Run(fmt.Sprintf("%gm_k%d", lengthM, k), func(t *testing.T) {
				cfg.VLBufferBytes = k * blocks * ib.CreditBytes
				n := newTestNet(t, cfg, netOpts{timing: tm})
				n.eps[0].backlog = func(e *endpoint) *ib.Packet { return n.packet(0, 1, 0, payload) }
				n.eps[0].trySend()
				warm, end := 10*ib.Microsecond, 60*ib.Microsecond
				var got int64
				n.eps[1].onGet = func(a arrival) {
					if a.head >= warm && a.head < end {
						got += int64(a.bytes)
					}
				}
				n.s.StopAt(end)
				require.NoError(t, n.s.Run())
				rate := float64(got) * 20 / float64(end-warm)
				want := min(1, float64(k)*float64(S)/float64(rtt))
				t.Logf("RTT %d ps, k %d (min %d): accepted %.4f, expected %.4f", rtt, k, kMin, rate, want)
				// One packet more or less in the window: 41 ns / 50 µs < 0.1 %.
				assert.InDelta(t, want, rate, 0.002)
				if k >= kMin {
					assert.Greater(t, rate, 0.998, "line rate when the buffer covers the round trip")
				} else {
					assert.Less(t, rate, 0.99, "below line rate when it does not")
				}
			})
		}
	}
}
