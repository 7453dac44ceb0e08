package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// TestPerftestSRQAmpleDepthSameRate: send_bw on 8 QPs (RC, and UD) with
// their receives on one SRQ of perftest's rx_depth 512 (64 per QP
// posted, reposted as each completes) runs at the rate of the same run
// with 512 receives per QP, to the bit. Why: the client's rate is bound
// on its own side (64 B: its CPU posting one WR per 60 ns; 64 KiB and UD
// 2 KiB: the link), and the server keeps up either way: every SEND's
// first packet finds a receive WQE already prefetched on chip (the SRQ's
// 512 cover the few messages in flight between a WQE's take and its
// repost), so no WQE read ever sits on a packet's path, the receive
// path's timing per packet is the RQ's, and the ACKs that complete the
// client's WRs leave when they would (UD: its sends complete as they
// leave, and none is dropped).
// What differs (32-byte SRQ WQEs read instead of 16-byte RQ WQEs, the
// SRQ's reads ordered in the dma stage on their own rather than with a
// QP's payload writes) is off the packets' path here. It need not be
// everywhere: NDR (cx7) with one QP and 64 KiB runs 0.1 ppm slower on the
// SRQ (docs/hca.md, "Shared receive queues"; which write moved was not
// traced).
func TestPerftestSRQAmpleDepthSameRate(t *testing.T) {
	for _, tc := range []struct {
		size, iters int
		conn        string
	}{{64, 2000, "RC"}, {65536, 100, "RC"}, {2048, 1000, "UD"}} {
		size := tc.size
		run := edrRun("send_bw", size, tc.iters)
		run.QPs, run.Connection = 8, tc.conn
		plain, err := RunPerftest(run)
		require.NoError(t, err)
		run.UseSRQ = true
		shared, err := RunPerftest(run)
		require.NoError(t, err)
		assert.Equal(t, true, shared["data_verified"], "%v", shared["data_errors"])
		assert.Zero(t, shared["host1_rnr_naks_sent"])
		assert.Zero(t, plain["host1_rnr_naks_sent"])
		assert.Zero(t, shared["host1_ud_drops"], "UD: no datagram finds the SRQ empty")
		assert.Equal(t, plain["bw_gbps"], shared["bw_gbps"], "size %d", size)
		assert.Equal(t, plain["msg_rate_mpps"], shared["msg_rate_mpps"], "size %d", size)
	}
}

// TestPerftestShallowSRQDrawsRNR: the same 64-byte send_bw on 8 QPs with
// an SRQ of rx_depth 16 (2 per QP). The server's one thread reposts a
// receive per completion, 60 ns of CPU each plus its polls, no faster
// than the client posts (one per 60 ns): it cannot gain on the client, so
// the 16 run out and a SEND finds the SRQ empty: RNR NAK, and its QP
// waits hca.min_rnr_timer (code 12, 0.64 ms) before resending from that
// SEND; the SENDs behind it are dropped (sequence NAK). During the wait
// the server reposts every receive, so a QP resending finds all 16 posted
// and, if no other QP's burst overlaps its own, moves 16 messages before
// its next RNR NAK. Then each QP moves 16 messages per 0.64 ms: the rate
// is 8 × 16 / 0.64 ms = 0.2 M msg/s and there is one RNR NAK per 16
// messages (2000 × 8 / 16 = 1000); bursts that overlapped would share the
// 16 and go slower. The messages all arrive, in place.
func TestPerftestShallowSRQDrawsRNR(t *testing.T) {
	run := edrRun("send_bw", 64, 2000)
	run.QPs, run.UseSRQ = 8, true
	ample, err := RunPerftest(run)
	require.NoError(t, err)
	run.RxDepth = 16
	shallow, err := RunPerftest(run)
	require.NoError(t, err)
	assert.Equal(t, true, shallow["data_verified"], "%v", shallow["data_errors"])
	wait := float64(hca.RNRTimerPS(run.HCA.MinRNRTimer)) / 1e12 // s
	want := float64(run.QPs*run.RxDepth) / wait / 1e6           // M msg/s
	assert.InEpsilon(t, want, shallow["msg_rate_mpps"], 0.05, "8 QPs × 16 messages per RNR wait")
	naks := float64(run.QPs * run.Iterations / run.RxDepth)
	assert.InEpsilon(t, naks, float64(shallow["host1_rnr_naks_sent"].(int64)), 0.05, "one RNR NAK per 16 messages")
	t.Logf("64 B send_bw, 8 QPs, SRQ rx_depth 512: %.3f M msg/s; 16: %.3f M msg/s (derived %.3f), %v RNR NAKs (derived %.0f)",
		ample["msg_rate_mpps"], shallow["msg_rate_mpps"], want, shallow["host1_rnr_naks_sent"], naks)
}

// TestPerftestSRQRefused: use_srq where perftest refuses it or the model
// does not build it, and rx_depth out of range.
func TestPerftestSRQRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*PerftestRun)
		want string
	}{
		{"write_bw", func(r *PerftestRun) { r.Test, r.UseSRQ = "write_bw", true }, "workload.use_srq: true with workload.test write_bw: perftest's --use_srq is for the SEND tests (send_bw, send_lat)"},
		{"read_bw", func(r *PerftestRun) { r.Test, r.UseSRQ = "read_bw", true }, "workload.use_srq: true with workload.test read_bw"},
		{"qps above rx_depth", func(r *PerftestRun) { r.QPs, r.RxDepth, r.UseSRQ = 8, 4, true }, "workload.use_srq: true with workload.qps 8 above workload.rx_depth 4"},
		{"rx_depth range", func(r *PerftestRun) { r.RxDepth = MaxPerftestRxDepth + 1 }, "workload.rx_depth: 8193 is out of range (0 for perftest's 512, 1 to 8192)"},
		{"rx_depth on write_bw", func(r *PerftestRun) { r.Test, r.RxDepth = "write_bw", 16 }, "workload.rx_depth: 16 is set, but workload.test write_bw posts no receives"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := edrRun("send_bw", 64, 10)
			tc.edit(&run)
			err := run.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
