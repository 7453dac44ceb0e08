package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// typicalPS is a latency test's typical (median) latency in ps.
func typicalPS(t *testing.T, m map[string]any) ib.PS {
	t.Helper()
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	return ib.FromNanoseconds(m["lat_us"].(map[string]any)["typical"].(float64) * 1000)
}

// eventPathPS is what an event adds after its CQE is visible: the EQE's
// and the MSI-X message's TLPs, which follow the CQE's on the otherwise
// idle upstream link (64 + 24 and 4 + 24 bytes; Gen3 x16 moves a byte in
// 63.4765625 ps: 5586 and 1777.3 → 1778 ps), and the interrupt-to-wake-up
// time. The MSI-X write's posted-write latency is the CQE's own, so it
// adds nothing.
func eventPathPS(cfg hca.Config) ib.PS {
	pcie := hca.NewPCIe(cfg.PCIe)
	return pcie.SerPS(hca.EQEBytes+cfg.PCIe.TLPOverheadBytes) + pcie.SerPS(hca.MSIXBytes+cfg.PCIe.TLPOverheadBytes) +
		ib.FromNanoseconds(cfg.Host.InterruptToWakeupNS)
}

// TestEventModeLatencyDerived: perftest -e against polling, EDR, cx5
// defaults.
//
// send_lat 32 B: each side sleeps on its receive CQ. A ping's CQE lands
// as it did when polling; the thread then acts eventPathPS later than a
// spinning one would (then the same host.poll_ns), so each half round
// trip grows by eventPathPS: 5586 + 1778 ps + W. The re-arm before the
// poll carries the consumer index from before it, so it fires at once on
// the CQE being polled: a second event per wake-up, which arrives
// host.poll_ns + mmio 308 + cqe stage 10 + 7.364 + 200 ns + W after the
// wake-up, before the next ping's CQE (a round trip of the peer, which
// waits W itself, away) and finds nothing; its re-arm, with nothing
// unconsumed, waits for the next ping. So both sides take two events per
// iteration (the first side's first wake-up is its first pong's), and
// the latency moves by eventPathPS exactly.
//
// atomic_lat: the client sleeps on its send CQ. The round trip (1.40 µs)
// is shorter than the arm's path, so the event that wakes the client for
// the next completion is the one its stale re-arm fired: the re-arm is
// stored at the wake-up A, when the client also posts the next atomic;
// it reaches the HCA mmio 308 ns later, fires (written > consumer
// index), the EQE passes the cqe stage (10 cycles = 10 ns), its TLPs
// take 7.364 ns and the posted-write latency 200 ns, the thread wakes W
// later and acts host.poll_ns after that, finding the atomic's CQE, long
// visible: 40 + 308 + 10 + 7.364 + 200 + W... measured from the post at
// A: 308 + 10 + 5.586 + 1.778 + 200 + W + 40 ns. The atomic's own CQE
// fires nothing (the arm was spent), so one event per iteration.
func TestEventModeLatencyDerived(t *testing.T) {
	for _, w := range []float64{5000, 2500} {
		t.Run(fmt.Sprintf("W=%v", w), func(t *testing.T) {
			cfg := hca.Defaults()
			cfg.Host.InterruptToWakeupNS = w
			iters := 200
			run := edrRun("send_lat", 32, iters)
			run.HCA = cfg
			poll, err := RunPerftest(run)
			require.NoError(t, err)
			run.UseEvent = true
			ev, err := RunPerftest(run)
			require.NoError(t, err)
			assert.Equal(t, typicalPS(t, poll)+eventPathPS(cfg), typicalPS(t, ev))
			// Two events a wake-up; the client's first wake-up is for its
			// first pong, the server's for the first ping, and the last
			// pong's stale re-arm fires after the run ended.
			assert.Equal(t, int64(2*iters-1), ev["host0_cq_events"])
			assert.Equal(t, int64(2*iters), ev["host1_cq_events"])
			assert.Equal(t, ev["host0_cq_events"], ev["host0_interrupts"])
			assert.Nil(t, poll["host0_cq_events"], "no event keys without use_event")

			run = edrRun("atomic_lat", 8, iters)
			run.HCA, run.UseEvent = cfg, true
			ev, err = RunPerftest(run)
			require.NoError(t, err)
			ns := func(f float64) ib.PS { return ib.FromNanoseconds(f) }
			cyc := ib.CyclePS(cfg.CoreClockMHz)
			want := ns(cfg.PCIe.MMIOLatencyNS) + ib.PS(cfg.CQE.LatencyCycles)*cyc + eventPathPS(cfg) +
				ns(cfg.PCIe.WriteLatencyNS) + ns(cfg.Host.PollNS)
			assert.Equal(t, ns(308+10+5.586+1.778+200+40)+ns(w), want)
			assert.Equal(t, want, typicalPS(t, ev))
			assert.Equal(t, int64(iters), ev["host0_cq_events"])
			assert.Equal(t, int64(0), ev["host1_cq_events"], "the server only answers")
		})
	}
}

// TestEventModeBandwidthTests: the bandwidth tests run with events, move
// their data, and wake on events (each wake-up's stale re-arm fires one
// more; a signaled completion every 100 messages).
func TestEventModeBandwidthTests(t *testing.T) {
	for _, tc := range []struct {
		test string
		size int
	}{{"write_bw", 4096}, {"send_bw", 4096}, {"read_bw", 4096}, {"atomic_bw", 8}} {
		t.Run(tc.test, func(t *testing.T) {
			run := edrRun(tc.test, tc.size, 1000)
			run.UseEvent = true
			m, err := RunPerftest(run)
			require.NoError(t, err)
			assert.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
			assert.Greater(t, m["host0_cq_events"], int64(0))
			if tc.test == "send_bw" {
				assert.Greater(t, m["host1_cq_events"], int64(0), "send_bw's server sleeps on its receive CQ")
			}
		})
	}
}

// TestUseEventRefusedOnWriteLat: write_lat polls memory, not a CQ.
func TestUseEventRefusedOnWriteLat(t *testing.T) {
	run := edrRun("write_lat", 2, 10)
	run.UseEvent = true
	_, err := RunPerftest(run)
	require.Error(t, err)
	assert.Equal(t, "workload.use_event: true with workload.test write_lat: its loop polls the receive buffer's last byte, not a CQ, so it has no completion to sleep on (send_lat, read_lat, atomic_lat and the bandwidth tests do)", err.Error())
}
