package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// TestPerftestSGEsMoveTheBytes: every test with its buffers cut into
// scatter/gather elements moves the bytes it moves with one (the gather
// of WRITEs and SENDs, the scatter of SENDs into receive lists, READ
// responses and atomic results into the requester's list), and posts
// WQEs one data segment per element.
func TestPerftestSGEsMoveTheBytes(t *testing.T) {
	for _, tc := range []struct {
		test             string
		size, iters, sge int
	}{
		{"write_lat", 4096, 20, 3}, {"send_lat", 5000, 20, 3}, {"send_lat", 32, 50, 2}, // inline: the CPU copies each element
		{"read_lat", 20000, 10, 5}, {"atomic_lat", 8, 50, 2},
		{"write_bw", 65536, 50, 7}, {"send_bw", 9000, 100, 4}, {"read_bw", 65536, 50, 3}, {"atomic_bw", 8, 100, 8},
	} {
		t.Run(fmt.Sprintf("%s/%d/%d", tc.test, tc.size, tc.sge), func(t *testing.T) {
			run := edrRun(tc.test, tc.size, tc.iters)
			run.SGEs = tc.sge
			m, err := RunPerftest(run)
			require.NoError(t, err)
			assert.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		})
	}
}

// TestPerftestSGEsBlueFlameCliffAndTags: write_bw of 64-byte messages
// (EDR, cx5 defaults) posts one WR at a time, so a WQE of at most
// hca.blueflame_bytes (256) goes with its doorbell. A WRITE WQE is ctrl 16
// + raddr 16 + 16 per SGE: 14 SGEs make 256 bytes, 15 make 272, five
// WQEBBs that must be fetched. Each element is a PCIe read of its own
// (13 of 4 bytes and one of 12), holding a tag for its request, the read
// latency and its completion.
//
//   - With tags enough (pcie.outstanding_reads 1024) the CPU's post
//     (host.post_ns, 60 ns: 16.7 M/s) bounds 14 SGEs, and the fetch bounds
//     15: it keeps wqe_prefetch_depth (8) WQEBBs in flight, each read
//     taking the DMA stage's latency, a request, the read latency, five
//     84-byte completions and five WQEBBs parsed: 8 / 5 WQEs per cycle.
//   - With cx5's 64 tags, 14 reads per message bound 14 SGEs at 64 tags
//     over the tag time the 14 reads hold. The scheduler grants a packet
//     only when all its 14 tags are free at once, so tags idle while they
//     gather: the rate is under that bound, by less than 20 %.
func TestPerftestSGEsBlueFlameCliffAndTags(t *testing.T) {
	run := edrRun("write_bw", 64, 2000)
	cfg := run.HCA
	require.Equal(t, 4, hca.WQEBBs(&hca.SendWR{Opcode: hca.WRRDMAWrite, SGL: make([]hca.SGE, 14)}))
	require.Equal(t, 5, hca.WQEBBs(&hca.SendWR{Opcode: hca.WRRDMAWrite, SGL: make([]hca.SGE, 15)}))
	require.Equal(t, 256, cfg.BlueFlameBytes)
	cyc := float64(ib.CyclePS(cfg.CoreClockMHz))
	pcie := hca.NewPCIe(cfg.PCIe)
	req, lat := float64(pcie.SerPS(cfg.PCIe.TLPOverheadBytes)), float64(ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS))
	cyclePS := float64(cfg.DMA.LatencyCycles)*cyc + req + lat + 5*float64(pcie.SerPS(64+cfg.PCIe.CompletionOverheadBytes)) +
		5*float64(cfg.WQEFetch.LatencyCycles)*cyc
	fetchBound := float64(cfg.WQEPrefetchDepth) / 5 / cyclePS * 1e6 // M WQE/s: 8 / 5 per 621 ns = 2.58
	cpuBound := 1e3 / cfg.Host.PostNS                               // 16.7 M/s
	tagPS := 13*(req+lat+float64(pcie.SerPS(4+cfg.PCIe.CompletionOverheadBytes))) + req + lat + float64(pcie.SerPS(12+cfg.PCIe.CompletionOverheadBytes))
	tagBound := float64(cfg.PCIe.OutstandingReads) / tagPS * 1e6 // 64 / 14 × 536 ns = 8.5 M/s
	rate := func(sges, tags int) float64 {
		run.SGEs, run.HCA.PCIe.OutstandingReads = sges, tags
		m, err := RunPerftest(run)
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"])
		return m["msg_rate_mpps"].(float64)
	}
	r14, r15, r14tags := rate(14, 1024), rate(15, 1024), rate(14, 64)
	t.Logf("1024 tags: 14 SGEs %.3f M msg/s (CPU bound %.3f), 15 SGEs %.3f (fetch bound %.3f); 64 tags: 14 SGEs %.3f (tag bound %.3f)",
		r14, cpuBound, r15, fetchBound, r14tags, tagBound)
	assert.LessOrEqual(t, r14, cpuBound)
	assert.Greater(t, r14, 0.9*cpuBound, "14 SGEs go by BlueFlame")
	assert.LessOrEqual(t, r15, fetchBound)
	assert.Greater(t, r15, 0.9*fetchBound, "15 SGEs are fetched, five WQEBBs each")
	assert.LessOrEqual(t, r14tags, tagBound)
	assert.Greater(t, r14tags, 0.8*tagBound)
}

// TestPerftestRecvListsKeepUp: send_bw of 64-byte messages into receive
// lists of 1, 2, 3 and 8 elements. A QP for receive lists of n elements
// has a stride of 16 × the power of two at or above n bytes (16, 32, 64,
// 128), and the prefetch window is hca.wqe_prefetch_depth (8) 64-byte
// blocks of them: 32, 16, 8 and 4 WQEs. Packets come a dozen or so 7.2
// ns apart on the EDR wire at the start, then one per 60 ns (the
// client's CPU, host.post_ns). A window of w WQEs asks for a WQE w
// packets ahead; when w packets take less than a read (≈ 560 ns: 4 × 60
// ns with 8 elements, every packet; with 2 the opening burst) a packet
// arrives before its WQE's read is back, and waits for that read in
// flight (host1_recv_wqe_waited); with one element (32 × 60 ns) none
// does. Every WQE is read once, by the prefetch: no on-demand read.
//
// The bounds: the CPU posts at host.post_ns (60 ns: 16.7 M/s), and a
// receiver that read each WQE on demand, in the QP's order of DMA behind
// the packets before it, would take at least one PCIe read round trip per
// message (the request TLP, the read latency and the completion of one
// WQE: ≈ 540 ns, under 1.9 M/s). That is what happened before the
// responder waited for reads in flight (a WQE taken before its read came
// back was read again, and each burst began the same way: 1.8 M/s with 2
// to 8 elements); the rate must now be well above it.
//
// The prefetch reads are the prefetcher's own DMA requests, not in the
// QP's order behind payload writes: there, a read would wait for the
// writes of packets that wait for earlier reads, so reads would go one
// window at a time, a window plus one messages per read time (the read
// for WQE j issues once WQE j − window − 1 is taken): with 8 elements
// (a window of 4) 5 messages per ≈ 564-ns read, 8.9 M/s at most (it
// gave 8.3); it must beat that by a fifth. (With 3 elements, a window of
// 8, that bound is the CPU's.)
func TestPerftestRecvListsKeepUp(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		stride := hca.RecvWQEBytes // 16 × the power of two at or above n
		for stride < n*hca.RecvWQEBytes {
			stride *= 2
		}
		run, m, srv := keepUpRun(t, n, false, stride)
		assert.Equal(t, srv.Counters.RecvWQEWaits, m["host1_recv_wqe_waited"])
		switch n {
		case 1:
			assert.Zero(t, srv.Counters.RecvWQEWaits, "one element: the window stays ahead")
		case 8:
			assert.Greater(t, srv.Counters.RecvWQEWaits, int64(run.Iterations/2), "eight elements: most packets wait for their WQE")
		}
		// The read's time to on chip: dma stage, request, latency,
		// completion, wqe_fetch stage.
		cfg := run.HCA
		cyc := float64(ib.CyclePS(cfg.CoreClockMHz))
		readPS := float64(cfg.DMA.LatencyCycles)*cyc + readRTT(cfg, stride) + float64(cfg.WQEFetch.LatencyCycles)*cyc
		window := hca.RecvWindow(cfg.WQEPrefetchDepth, stride)
		inOrderBound := float64(window+1) / readPS * 1e6
		rate := m["msg_rate_mpps"].(float64)
		if 1.2*inOrderBound < 1e3/cfg.Host.PostNS { // else the CPU bounds both alike
			assert.Greater(t, rate, 1.2*inOrderBound, "%d elements: the prefetch reads wait in the QP's order", n)
		}
	}
}

// readRTT is one read round trip of a WQE of stride bytes, ps: the
// request TLP, the read latency and its completion.
func readRTT(cfg hca.Config, stride int) float64 {
	pcie := hca.NewPCIe(cfg.PCIe)
	return float64(pcie.SerPS(cfg.PCIe.TLPOverheadBytes)) + float64(ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS)) +
		float64(pcie.SerPS(stride+cfg.PCIe.CompletionOverheadBytes))
}

// keepUpRun runs send_bw of 3000 64-byte messages into receive lists of n
// elements (on an SRQ with srq), WQEs of stride bytes, and checks what
// both keep-up tests check: the data (a WQE taken neither on chip nor
// being read would stop the run: hca's receive queue invariant), the rate
// under the CPU's post rate and above four times one read round trip a
// message.
func keepUpRun(t *testing.T, n int, srq bool, stride int) (PerftestRun, map[string]any, *hca.Device) {
	t.Helper()
	run := edrRun("send_bw", 64, 3000)
	run.SGEs, run.UseSRQ = n, srq
	onDemandBound := 1e6 / readRTT(run.HCA, stride) // M/s
	cpuBound := 1e3 / run.HCA.Host.PostNS
	p, err := BuildPerftest(run)
	require.NoError(t, err)
	m, err := p.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"])
	srv := p.Devices()[1]
	rate := m["msg_rate_mpps"].(float64)
	t.Logf("%d elements (srq %v, stride %d): %.3f M msg/s (CPU bound %.3f, one read a message %.3f)", n, srq, stride, rate, cpuBound, onDemandBound)
	assert.LessOrEqual(t, rate, cpuBound, "%d elements", n)
	assert.Greater(t, rate, 4*onDemandBound, "%d elements: the receiver reads its WQEs one round trip at a time", n)
	return run, m, srv
}

// TestPerftestSRQListsKeepUp is TestPerftestRecvListsKeepUp on a shared
// receive queue (use_srq): send_bw of 64-byte messages into SRQ WQEs of
// 1, 2, 3 and 8 elements. An SRQ WQE is a 16-byte next segment and 16
// bytes per element, its stride the power of two at or above max(32, 16
// + 16 n) bytes (32, 64, 64, 256), and the prefetch window
// hca.wqe_prefetch_depth (8) 64-byte blocks of them: 16, 8, 8 and 2 WQEs.
// Where a window is shorter than a read (the opening dozen packets 7.2
// ns apart on the EDR wire, then one per 60 ns of the CPU's posts), a
// packet arrives before its WQE's read is back and waits for that read
// in flight, and the prefetch moves on after each take: every WQE is
// read once, by the prefetch, no on-demand read.
//
// The bounds, as there: under the CPU's post rate (host.post_ns, 60 ns:
// 16.7 M/s), and well above one PCIe read round trip per message (the
// request TLP, the read latency, the completion of one WQE: ≈ 540 ns,
// under 1.9 M/s), which is what a receiver that read each WQE again on
// demand came to (1.9 M/s with 2 elements before the SRQ waited for its
// reads in flight). The SRQ's prefetcher was always a DMA requester of
// its own, so TestPerftestRecvListsKeepUp's in-order bound does not
// apply.
func TestPerftestSRQListsKeepUp(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		stride := 32 // the power of two at or above max(32, 16 + 16 n)
		for stride < 16+n*16 {
			stride *= 2
		}
		keepUpRun(t, n, true, stride)
	}
}
