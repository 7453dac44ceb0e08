package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/verif"
)

func perftestLink(gen string) link.Config {
	lc := link.Defaults()
	lc.Generation, lc.Width, lc.LengthM, lc.MTU = gen, "4x", 0.5, 4096
	return lc
}

func edrRun(test string, size, iters int) PerftestRun {
	return PerftestRun{Link: perftestLink("EDR"), HCA: hca.Defaults(), Test: test, Size: size,
		Iterations: iters, TxDepth: 128, QPs: 1, InlineSize: -1, Seed: 1}
}

func TestPerftestEveryTestMovesData(t *testing.T) {
	tests := []struct {
		test  string
		size  int
		iters int
	}{
		{"write_lat", 2, 200}, {"write_lat", 4096, 50}, {"write_lat", 9000, 20},
		{"send_lat", 32, 200}, {"send_lat", 5000, 20},
		{"read_lat", 2, 100}, {"read_lat", 20000, 10},
		{"atomic_lat", 8, 100},
		{"write_bw", 2, 500}, {"write_bw", 65536, 200}, {"write_bw", 8 << 20, 3},
		{"send_bw", 0, 300}, {"send_bw", 4096, 300},
		{"read_bw", 65536, 200},
		{"atomic_bw", 8, 300},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d", tc.test, tc.size), func(t *testing.T) {
			m, err := RunPerftest(edrRun(tc.test, tc.size, tc.iters))
			require.NoError(t, err)
			assert.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
			assert.Equal(t, int64(0), m["retries"])
			if tc.test == "write_lat" || tc.test == "send_lat" || tc.test == "read_lat" || tc.test == "atomic_lat" {
				lat := m["lat_us"].(map[string]any)
				// The breakdown is a median iteration's: its total is the
				// median and its segments add up to it.
				bd := m["latency_breakdown"].([]any)
				total := bd[len(bd)-1].(map[string]any)
				require.Equal(t, "total", total["segment"])
				assert.InDelta(t, lat["typical"].(float64)*1000, total["ns"].(float64), 1e-6)
				sum := 0.0
				for _, s := range bd[:len(bd)-1] {
					sum += s.(map[string]any)["ns"].(float64)
				}
				assert.InDelta(t, total["ns"].(float64), sum, 1e-6, "segments add up to the total")
			}
		})
	}
}

// linkPayloadGbps is the payload rate of back-to-back WRITEs of size bytes
// on a link: each message's MTU packets carry 26 bytes of headers
// (LRH 8 + BTH 12 + ICRC 4 + VCRC 2) and the first a 16-byte RETH.
func linkPayloadGbps(lc link.Config, size int) float64 {
	pkts := (size + lc.MTU - 1) / lc.MTU
	wire := size + pkts*26 + 16
	return lc.Timing(0).DataRateBps() / 1e9 * float64(size) / float64(wire)
}

func TestWriteBWFollowsTheBottleneck(t *testing.T) {
	tests := []struct {
		gen, profile string
	}{
		{"EDR", "cx5"}, {"HDR", "cx6"}, {"NDR", "cx7"}, {"XDR", "cx8"},
	}
	for _, tc := range tests {
		t.Run(tc.gen, func(t *testing.T) {
			cfg, err := hca.Profile(tc.profile)
			require.NoError(t, err)
			run := PerftestRun{Link: perftestLink(tc.gen), HCA: cfg, Test: "write_bw", Size: 65536,
				Iterations: 400, TxDepth: 128, QPs: 1, InlineSize: -1, Seed: 3}
			m, err := RunPerftest(run)
			require.NoError(t, err)
			bw := m["bw_gbps"].(float64)
			bound := min(linkPayloadGbps(run.Link, 65536), hca.NewPCIe(cfg.PCIe).ReadBoundGbps())
			t.Logf("%s: %.2f Gb/s, link %.2f, PCIe %.2f", tc.gen, bw, linkPayloadGbps(run.Link, 65536), hca.NewPCIe(cfg.PCIe).ReadBoundGbps())
			assert.LessOrEqual(t, bw, bound, "never above the bottleneck")
			// The run includes the pipeline's fill and drain (one message
			// of 400 at each end), so it reaches within 2 % of the bound.
			assert.GreaterOrEqual(t, bw, 0.98*bound)
		})
	}
}

// TestKeyCacheThrashKeepsTheBottleneck: write_bw of 4 KiB messages on 8
// QPs, each QP writing into its own region of the server, whose key cache
// holds 4 keys: the server's R_Key lookups miss on most messages, each a
// PCIe read of the key's context (docs/hca.md, Key check) before the
// message's payload writes. Those reads and writes share the server's PCIe
// link, which has room for them: per message 16 write TLPs of 256 + 24 B
// and a 24-byte read request upstream, 4504 B at 126.03 Gb/s = 286 ns, and
// one 84-byte completion downstream, against 341 ns per message at the
// client's PCIe read bound, 126.03 × 64/84 = 96.02 Gb/s (EDR's link
// carries 99.35 for 4 KiB messages). So the run must still reach the
// bottleneck, within 2 % (start-up and drain). When the PCIe link served
// TLPs in the order they were booked, the server's writes, booked for after
// a miss's context read, held the next QP's context read behind them: 39.6
// Gb/s.
func TestKeyCacheThrashKeepsTheBottleneck(t *testing.T) {
	run := edrRun("write_bw", 4096, 2000)
	run.QPs = 8
	run.HCA.KeyCacheEntries = 4
	m, err := RunPerftest(run)
	require.NoError(t, err)
	bw := m["bw_gbps"].(float64)
	bound := min(linkPayloadGbps(run.Link, 4096), hca.NewPCIe(run.HCA.PCIe).ReadBoundGbps())
	require.InDelta(t, 96.02, bound, 0.01)
	t.Logf("%.2f Gb/s, bound %.2f, server miss rate %.3f", bw, bound, m["host1_key_cache_miss_rate"])
	// The premise: the server's cache thrashes.
	assert.Greater(t, m["host1_key_cache_miss_rate"].(float64), 0.25)
	assert.LessOrEqual(t, bw, bound)
	assert.GreaterOrEqual(t, bw, 0.98*bound)
	assert.Equal(t, true, m["data_verified"])
}

// TestLinkUtilizationFollowsTheData: link_utilization is the busy fraction
// of the wire that carries the test's data: host 0's sending side for WRITE
// and SEND, host 1's (the read responses) for READ. Over the same window as
// bw_gbps, that wire carries every message's packets, so
//
//	utilization = bw × (wire bytes / payload bytes) / data rate
//
// plus the few flow-control packets (6 B) the port sends meanwhile. A 64 KiB
// message at MTU 4096 is 16 packets of 26 bytes of headers each (LRH 8 + BTH
// 12 + ICRC 4 + VCRC 2); the WRITE's first packet adds a RETH (16), a READ's
// first and last responses an AETH (4 each), a SEND nothing.
func TestLinkUtilizationFollowsTheData(t *testing.T) {
	const size = 65536
	for _, tc := range []struct {
		test string
		wire int
	}{
		{"write_bw", size + 16*26 + 16},
		{"send_bw", size + 16*26},
		{"read_bw", size + 16*26 + 2*4},
	} {
		t.Run(tc.test, func(t *testing.T) {
			run := edrRun(tc.test, size, 200)
			m, err := RunPerftest(run)
			require.NoError(t, err)
			rate := run.Link.Timing(0).DataRateBps() / 1e9
			want := m["bw_gbps"].(float64) * float64(tc.wire) / size / rate
			got := m["link_utilization"].(float64)
			t.Logf("%s: %.2f Gb/s, utilization %.5f, data packets alone %.5f", tc.test, m["bw_gbps"], got, want)
			assert.GreaterOrEqual(t, got, want*(1-1e-9))
			assert.Less(t, got, want+0.002, "flow-control packets add little")
		})
	}
}

// TestWriteBWWithFewerTagsThanAPacketNeeds: a 4096-byte packet's payload
// is 8 reads of MRRS 512 bytes; with fewer read tags than that (1 or 4),
// the scheduler once waited for 8 free tags that never exist and the run
// spun forever at one picosecond. Now the packet starts when every tag is
// free and its reads issue as tags return, so write_bw follows the tag
// bound of Little's law, tags × MRRS / round trip (ReadBoundGbps), as
// TestWriteBWFollowsTheBottleneck requires of the other bounds.
func TestWriteBWWithFewerTagsThanAPacketNeeds(t *testing.T) {
	for _, tags := range []int{1, 4} {
		t.Run(fmt.Sprintf("tags%d", tags), func(t *testing.T) {
			run := edrRun("write_bw", 65536, 100)
			run.HCA.PCIe.OutstandingReads = tags
			require.Greater(t, run.Link.MTU/run.HCA.PCIe.MRRSBytes, tags, "a packet needs more reads than there are tags")
			m, err := RunPerftest(run)
			require.NoError(t, err)
			bw := m["bw_gbps"].(float64)
			bound := min(linkPayloadGbps(run.Link, 65536), hca.NewPCIe(run.HCA.PCIe).ReadBoundGbps())
			assert.LessOrEqual(t, bw, bound)
			assert.GreaterOrEqual(t, bw, 0.98*bound)
		})
	}
}

func TestSmallMessagesBoundByPerMessageCost(t *testing.T) {
	// 2-byte WRITEs, one WQEBB each. Two per-message costs bound the rate:
	// the application posts one WR per host.post_ns (60 ns: 16.7 M/s), and,
	// when the WQEs are fetched, the WQE fetch keeps at most
	// wqe_prefetch_depth WQEBBs in flight, each fetch taking DMA stage 10
	// ns + read request (24 B) + read latency 533 ns + one 64-byte completion (+20 B) +
	// parse 10 ns before the next may go. They are fetched when libmlx5
	// does not prefer BlueFlame (MLX5_POST_SEND_PREFER_BF=0); by default
	// each post of one WR carries its WQE and only the CPU binds.
	run := edrRun("write_bw", 2, 2000)
	run.HCA.PreferBlueFlame = false
	cfg := run.HCA
	pcie := hca.NewPCIe(cfg.PCIe)
	fetchPS := float64(10_000 + pcie.SerPS(24) + ib.FromNanoseconds(cfg.PCIe.ReadLatencyNS) + pcie.SerPS(84) + 10_000)
	prefetchBound := func(depth int) float64 { return float64(depth) / fetchPS * 1e6 } // M/s
	cpuBound := 1e3 / cfg.Host.PostNS
	for _, tc := range []struct {
		depth int
		bound float64
	}{
		{8, prefetchBound(8)}, // 8 / 559.86 ns = 14.29 M/s < 16.7: the fetch binds
		{64, cpuBound},        // 64 / 559.86 ns = 114 M/s: now the CPU binds
	} {
		run.HCA.WQEPrefetchDepth = tc.depth
		m, err := RunPerftest(run)
		require.NoError(t, err)
		rate := m["msg_rate_mpps"].(float64)
		t.Logf("prefetch depth %d: %.2f M msg/s, bound %.2f", tc.depth, rate, tc.bound)
		assert.LessOrEqual(t, rate, min(tc.bound, prefetchBound(tc.depth), cpuBound))
		// Below the bound by the pipeline's start (~2 µs of 2000 × 60 ns)
		// and by waits at the tx depth (128 outstanding, a CQE every 100).
		assert.Greater(t, rate, 0.9*tc.bound)
	}
	// By BlueFlame no WQE is fetched: depth 8 runs at the CPU's bound.
	run.HCA.WQEPrefetchDepth = 8
	run.HCA.PreferBlueFlame = true
	m, err := RunPerftest(run)
	require.NoError(t, err)
	rate := m["msg_rate_mpps"].(float64)
	t.Logf("prefer_blueflame, depth 8: %.2f M msg/s, CPU bound %.2f", rate, cpuBound)
	assert.LessOrEqual(t, rate, cpuBound)
	assert.Greater(t, rate, 0.9*cpuBound)
	assert.Greater(t, rate, prefetchBound(8), "above the fetch bound: nothing is fetched")
}

func TestPerftestRetryAfterDroppedAck(t *testing.T) {
	run := edrRun("write_bw", 65536, 50)
	run.HCA.RetryTimeout = 2 // 16.4 µs
	run.FaultDropAcks = 1
	m, err := RunPerftest(run)
	require.NoError(t, err)
	assert.Equal(t, true, m["data_verified"])
	assert.Equal(t, int64(1), m["acks_dropped"])
	// The next ACK covers the dropped one (ACKs are cumulative), so no
	// retry is needed while more ACKs follow.
	assert.Equal(t, int64(0), m["timeouts"])

	// With one message only, nothing else acknowledges it: the timer fires.
	run.Iterations = 2
	run.FaultDropAcks = 2
	m, err = RunPerftest(run)
	require.NoError(t, err)
	assert.Equal(t, true, m["data_verified"])
	assert.Equal(t, int64(1), m["timeouts"])
	assert.Equal(t, int64(1), m["retries"])
	assert.Greater(t, m["sim_time_ns"].(float64), float64(hca.RetryTimeoutPS(2))/1000)
}

func TestAckCoalescingCutsAcks(t *testing.T) {
	// 4 KiB WRITEs are one packet each, each with AckReq: without
	// coalescing the responder sends one ACK per message; with 4 per ACK
	// about a quarter as many (the pending one is flushed whenever the
	// receive pipeline drains, so at least that).
	run := edrRun("write_bw", 4096, 1000)
	m1, err := RunPerftest(run)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), m1["host1_acks_sent"])
	run.HCA.AckCoalesce = 4
	m4, err := RunPerftest(run)
	require.NoError(t, err)
	acks := m4["host1_acks_sent"].(int64)
	assert.GreaterOrEqual(t, acks, int64(250))
	assert.Less(t, acks, int64(1000))
	assert.Equal(t, true, m4["data_verified"])
}

func TestManyQPsShareFairly(t *testing.T) {
	// Four QPs, round-robin scheduling: the aggregate follows the same
	// bottleneck as one QP.
	run := edrRun("write_bw", 65536, 100)
	run.QPs = 4
	m, err := RunPerftest(run)
	require.NoError(t, err)
	assert.Equal(t, true, m["data_verified"])
	bound := hca.NewPCIe(run.HCA.PCIe).ReadBoundGbps()
	assert.LessOrEqual(t, m["bw_gbps"].(float64), bound)
	assert.Greater(t, m["bw_gbps"].(float64), 0.97*bound)
}

func TestPerftestDeterministic(t *testing.T) {
	run := edrRun("send_bw", 3000, 200)
	a, err := RunPerftest(run)
	require.NoError(t, err)
	b, err := RunPerftest(run)
	require.NoError(t, err)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	assert.Equal(t, string(ja), string(jb))
}

func TestPerftestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *PerftestRun)
		want   string
	}{
		{"test", func(r *PerftestRun) { r.Test = "ping" }, `workload.test: "ping" is not a perftest test (write_lat, write_bw, read_lat, read_bw, send_lat, send_bw, atomic_lat, atomic_bw)`},
		{"size", func(r *PerftestRun) { r.Size = 9 << 20 }, "workload.size: 9437184 is out of range (0 to 8388608 bytes)"},
		{"write_lat 0", func(r *PerftestRun) { r.Test, r.Size = "write_lat", 0 }, "workload.size: write_lat needs at least 1 byte (the receiver polls the last byte), got 0"},
		{"iters", func(r *PerftestRun) { r.Iterations = 1 }, "workload.iterations: 1 is out of range (2 to 1e8)"},
		{"lat qps", func(r *PerftestRun) { r.Test, r.QPs = "send_lat", 2 }, "workload.qps: 2, but the latency tests run on one QP (as perftest's do)"},
		{"inline", func(r *PerftestRun) { r.InlineSize = 300 }, "workload.inline_size: 300 is out of range (-1 for perftest's default, 0 to hca.max_inline_bytes 236)"},
		{"hca", func(r *PerftestRun) { r.HCA.RetryCnt = 9 }, "hca.retry_cnt: 9 is out of range (0 to 7)"},
		// A WQE is at most 63 16-byte segments (1008 B): an RDMA WRITE's
		// ctrl 16 + raddr 16 + inline header 4 leave 972 bytes of data.
		{"inline too big for a WRITE WQE", func(r *PerftestRun) { r.HCA.MaxInlineBytes, r.InlineSize = 988, 973 },
			"workload.inline_size: 973 is more than a RDMA_WRITE WQE holds inline (972 bytes: a WQE is at most 63 16-byte segments)"},
		// A UD SEND: ctrl 16 + datagram 48 + inline header 4 leave 940.
		{"inline too big for a UD SEND WQE", func(r *PerftestRun) {
			r.Test, r.Connection, r.HCA.MaxInlineBytes, r.InlineSize = "send_bw", "UD", 988, 941
		}, "workload.inline_size: 941 is more than a UD SEND WQE holds inline (940 bytes: a WQE is at most 63 16-byte segments)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := edrRun("write_bw", 64, 10)
			tc.mutate(&r)
			_, err := RunPerftest(r)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func benchPerftest(b *testing.B, run PerftestRun) {
	msgs := 0
	for i := 0; i < b.N; i++ {
		if _, err := RunPerftest(run); err != nil {
			b.Fatal(err)
		}
		msgs += run.Iterations * run.QPs
	}
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkWriteBW64K reports simulated 64 KiB WRITEs per wall-second (EDR).
func BenchmarkWriteBW64K(b *testing.B) { benchPerftest(b, edrRun("write_bw", 65536, 1000)) }

// BenchmarkWriteLat2B reports simulated 2-byte ping-pong messages per
// wall-second (EDR).
func BenchmarkWriteLat2B(b *testing.B) { benchPerftest(b, edrRun("write_lat", 2, 5000)) }

func TestPerftestRunFromConfig(t *testing.T) {
	w := Defaults()
	w.Kind, w.Test, w.Size, w.Iterations, w.InlineSize = "perftest", "send_lat", 32, 100, -1
	run := PerftestRunFrom(w, perftestLink("EDR"), hca.Defaults(), 5, 0)
	assert.Equal(t, PerftestRun{Link: perftestLink("EDR"), HCA: hca.Defaults(), Test: "send_lat", Size: 32,
		Iterations: 100, TxDepth: 128, QPs: 1, InlineSize: -1, SGEs: 1, Seed: 5}, run)
	m, err := RunPerftest(run)
	require.NoError(t, err)
	assert.Equal(t, true, m["inline"], "perftest's default inline size for send_lat is 236")
}

func TestPerftestPassesTheCheckers(t *testing.T) {
	// The verif scoreboards watch every HCA and port: request PSNs in order
	// at each responder (retries may go back), CQEs in WQE order per queue,
	// every DMA write inside a passed key check, credits and buffers in
	// range.
	for _, tc := range []struct {
		test string
		size int
		drop int
	}{{"write_bw", 65536, 0}, {"send_bw", 5000, 0}, {"read_bw", 9000, 0}, {"send_lat", 32, 0},
		{"atomic_lat", 8, 0}, {"atomic_bw", 8, 0}, {"write_bw", 4096, 3}} {
		t.Run(fmt.Sprintf("%s/%d/drop%d", tc.test, tc.size, tc.drop), func(t *testing.T) {
			run := edrRun(tc.test, tc.size, 100)
			run.HCA.RetryTimeout = 2
			run.FaultDropAcks = tc.drop
			p, err := BuildPerftest(run)
			require.NoError(t, err)
			devs := p.Devices()
			chk := verif.AttachCheckers(verif.CheckConfig{}, devs[0], devs[1], devs[0].Port, devs[1].Port)
			var seen kindCounter
			verif.AttachHook(&seen, devs[0], devs[1])
			m, err := p.Run()
			require.NoError(t, err)
			chk.Finish(p.Sim().Now(), false)
			assert.NoError(t, chk.Err())
			// The checkers had something to check.
			for _, k := range []components.TraceKind{components.TraceDeliver, components.TraceKeyCheck,
				components.TraceCQE, components.TraceDMAWrite} {
				assert.Positive(t, seen[k], "%v events", k)
			}
			assert.Equal(t, true, m["data_verified"])
		})
	}
}

// kindCounter counts trace events by kind.
type kindCounter map[components.TraceKind]int

func (k *kindCounter) Func(ctx sim.HookCtx) {
	if *k == nil {
		*k = kindCounter{}
	}
	if ev, ok := ctx.Item.(*components.TraceEvent); ok && ctx.Pos == components.HookPosTrace {
		(*k)[ev.Kind]++
	}
}

// TestPingPongLatencyIsHalfTheRoundTrip: write_lat and send_lat report
// half the time between successive posts, as perftest does in floating
// point. Round trips of 1001, 1003 and 1005 ps are latencies of 500.5,
// 501.5 and 502.5 ps; halving whole picoseconds would drop the half.
func TestPingPongLatencyIsHalfTheRoundTrip(t *testing.T) {
	p := &perftest{op: hca.WRSend, stamps: []ib.PS{0, 1001, 2004, 3009}}
	v, div := p.latSamples()
	l := Latencies{v: v}
	got := latSummaryUs(&l, div)
	assert.InDelta(t, 500.5e-6, got["min"], 1e-12)
	assert.InDelta(t, 501.5e-6, got["typical"], 1e-12)
	assert.InDelta(t, 501.5e-6, got["avg"], 1e-12)
	assert.InDelta(t, 502.5e-6, got["max"], 1e-12)
	// Population stdev of {500.5, 501.5, 502.5} ps: √(2/3) ps.
	assert.InDelta(t, math.Sqrt(2.0/3)*1e-6, got["stdev"], 1e-12)
}

// TestMedianIter: the breakdown's iteration is one whose sample is the
// nearest-rank median (rank ⌈n/2⌉ of the sorted samples), the preferred
// (already traced) one when it qualifies.
func TestMedianIter(t *testing.T) {
	v := []int64{9, 5, 1, 5, 7} // sorted 1 5 5 7 9: rank 3 is 5
	assert.Equal(t, 3, medianIter(v, 3), "the traced iteration is a median one")
	assert.Equal(t, 1, medianIter(v, 2), "else the first median iteration")
	assert.Equal(t, 0, medianIter([]int64{4, 8}, 1), "rank ⌈2/2⌉ = 1: the smaller")
}

// breakdownNs returns a run's latency_breakdown as segment names in order
// and nanoseconds by name.
func breakdownNs(t *testing.T, m map[string]any) ([]string, map[string]float64) {
	var names []string
	ns := map[string]float64{}
	for _, s := range m["latency_breakdown"].([]any) {
		seg := s.(map[string]any)
		name := seg["segment"].(string)
		names = append(names, name)
		ns[name] = seg["ns"].(float64)
	}
	require.NotEmpty(t, names, "no breakdown")
	return names, ns
}

// TestPerftestBWBreakdownPostedAtZero: a bandwidth test's breakdown is its
// middle message's (docs/hca.md, "Latency breakdown") also when that
// message is posted at simulated time 0, as every message up to the send
// queue's depth is: 100 iterations on a queue of 128 post 0 … 99 in the
// first fill, so the traced one, iteration 50, is posted at t = 0. The
// timeline took a post time of 0 for "not posted", and such a run
// (examples/congestion-control-hca.yaml, 100 iterations) reported a null
// breakdown. The application posts back to back, host.post_ns of CPU
// each, so the traced WR's doorbell store leaves after 51 posts:
// cpu_post = 51 × post_ns.
func TestPerftestBWBreakdownPostedAtZero(t *testing.T) {
	run := edrRun("write_bw", 65536, 100)
	require.Less(t, run.Iterations/2, run.TxDepth, "the traced WR is in the first fill, posted at t = 0")
	m, err := RunPerftest(run)
	require.NoError(t, err)
	names, ns := breakdownNs(t, m)
	require.Equal(t, "cpu_post", names[0])
	assert.InDelta(t, 51*run.HCA.Host.PostNS, ns["cpu_post"], 1e-9)
	sum := 0.0
	for _, n := range names[:len(names)-1] {
		sum += ns[n]
	}
	assert.InDelta(t, ns["total"], sum, 1e-6, "segments add up to the total")
}

// TestPerftestUDBreakdownComplete: a UD SEND passes the same pipeline
// points as an RC one (grant, transport, wire, responder, CQE), so its
// breakdown has the same segments and they add up to the median, as
// docs/hca.md promises for every latency test.
func TestPerftestUDBreakdownComplete(t *testing.T) {
	run := edrRun("send_lat", 32, 200)
	run.Connection = "UD"
	ud, err := RunPerftest(run)
	require.NoError(t, err)
	run.Connection = "RC"
	rc, err := RunPerftest(run)
	require.NoError(t, err)
	rcNames, _ := breakdownNs(t, rc)
	names, ns := breakdownNs(t, ud)
	assert.Equal(t, rcNames, names)
	sum := 0.0
	for _, n := range names[:len(names)-1] {
		sum += ns[n]
	}
	assert.InDelta(t, ns["total"], sum, 1e-6, "segments add up to the total")
	assert.InDelta(t, ud["lat_us"].(map[string]any)["typical"].(float64)*1000, ns["total"], 1e-6)
	// The wire segment is the UD SEND_ONLY's serialization plus the cable:
	// LRH 8 + BTH 12 + DETH 8 + 32 payload + ICRC 4 + VCRC 2 = 66 B, at
	// EDR 4x's 100 Gb/s 5.28 ns, plus 0.5 m × 4.276 ns/m = 7.418 ns.
	pkt := ib.Packet{Opcode: ib.UDSendOnly, PayloadLen: 32}
	require.Equal(t, 66, pkt.WireBytes())
	tm := run.Link.Timing(run.Link.LengthM)
	assert.InDelta(t, float64(tm.Latency()+tm.Serialization(66))/1000, ns["wire"], 1e-9)
}

func TestPerftestUD(t *testing.T) {
	for _, tc := range []struct {
		test string
		size int
	}{{"send_lat", 32}, {"send_lat", 4096}, {"send_bw", 4096}, {"send_bw", 2}} {
		t.Run(fmt.Sprintf("%s/%d", tc.test, tc.size), func(t *testing.T) {
			run := edrRun(tc.test, tc.size, 300)
			run.Connection = "UD"
			ud, err := RunPerftest(run)
			require.NoError(t, err)
			assert.Equal(t, true, ud["data_verified"], "%v", ud["data_errors"])
			assert.Equal(t, int64(0), ud["host1_acks_sent"], "UD has no ACKs")
			// The server pre-posts 512 receives and re-posts each one as it
			// completes, so every datagram finds a WQE: none dropped.
			assert.Equal(t, int64(0), ud["host1_ud_drops"])
			run.Connection = "RC"
			rc, err := RunPerftest(run)
			require.NoError(t, err)
			assert.NotContains(t, rc, "host1_ud_drops", "RC reports no UD counter")
			if tc.test == "send_bw" {
				// Large messages are bound by PCIe alike. Small ones by
				// BlueFlame (each post of one WR carries its WQE, UD's
				// 2-WQEBB one too) are bound by the CPU's posts alike.
				ratio := ud["bw_gbps"].(float64) / rc["bw_gbps"].(float64)
				t.Logf("send_bw %d B: UD/RC = %.3f", tc.size, ratio)
				assert.InDelta(t, 1, ratio, 0.02)
				if tc.size <= 64 {
					// Fetched (MLX5_POST_SEND_PREFER_BF=0), a UD send WQE
					// is 2 WQEBBs (ctrl 16 + datagram 48 + data 16 = 80 B)
					// against RC's 1, so with the prefetch depth in WQEBBs
					// small messages run at half RC's rate.
					run.HCA.PreferBlueFlame = false
					rc, err := RunPerftest(run)
					require.NoError(t, err)
					run.Connection = "UD"
					ud, err := RunPerftest(run)
					require.NoError(t, err)
					ratio := ud["bw_gbps"].(float64) / rc["bw_gbps"].(float64)
					t.Logf("send_bw %d B, fetched WQEs: UD/RC = %.3f", tc.size, ratio)
					assert.InDelta(t, 0.5, ratio, 0.05)
				}
			} else {
				// UD's inline WQE is one WQEBB longer (the 48-byte datagram
				// segment: one more 10-cycle parse) and its packet 8 B longer
				// (DETH): about 10.6 ns more than RC.
				t.Logf("send_lat %d B: UD %.4f µs, RC %.4f µs", tc.size,
					ud["lat_us"].(map[string]any)["typical"], rc["lat_us"].(map[string]any)["typical"])
			}
		})
	}
	run := edrRun("send_bw", 5000, 10)
	run.Connection = "UD"
	_, err := RunPerftest(run)
	assert.EqualError(t, err, "workload.size: 5000 is more than link.mtu 4096 (a UD message is one packet)")
	run = edrRun("write_bw", 64, 10)
	run.Connection = "UD"
	_, err = RunPerftest(run)
	assert.EqualError(t, err, "workload.connection: UD runs send_lat and send_bw, not write_bw")
}

// TestOnEndKeepsTheMetrics: a perftest or collective whose OnEnd lets the
// simulation run on (as a checked run settles) reports exactly the metrics
// of the run stopped at its end, simulated time and events included, though
// the simulation went on past it.
func TestOnEndKeepsTheMetrics(t *testing.T) {
	const settle = 20 * ib.Microsecond
	onEnd := func(s *components.Sim, endAt *ib.PS) func() {
		return func() {
			*endAt = s.Now()
			s.StopAt(s.Now() + settle)
		}
	}
	for _, tc := range []struct {
		test string
		size int
	}{{"write_bw", 65536}, {"read_bw", 9000}, {"send_bw", 5000}, {"write_lat", 2}, {"send_lat", 32}, {"read_lat", 2}, {"atomic_lat", 8}, {"atomic_bw", 8}} {
		t.Run(tc.test, func(t *testing.T) {
			run := edrRun(tc.test, tc.size, 20)
			want, err := RunPerftest(run)
			require.NoError(t, err)
			p, err := BuildPerftest(run)
			require.NoError(t, err)
			var endAt ib.PS
			p.OnEnd = onEnd(p.Sim(), &endAt)
			got, err := p.Run()
			require.NoError(t, err)
			assert.Equal(t, want, got)
			require.Positive(t, endAt, "OnEnd was called")
			assert.Greater(t, p.Sim().Now(), endAt, "the simulation went on")
		})
	}
	for _, op := range []string{CollAllReduce, CollAllToAll} {
		t.Run(op, func(t *testing.T) {
			run := CollectiveRun{Op: op, Bytes: 100000, MTU: 4096, Seed: 1}
			s, devs := collSwitch(t, 4, perftestLink("EDR"), hca.Defaults())
			want, err := RunCollectiveOn(s, devs, run)
			require.NoError(t, err)
			s, devs = collSwitch(t, 4, perftestLink("EDR"), hca.Defaults())
			c, err := BuildCollectiveOn(s, devs, run)
			require.NoError(t, err)
			var endAt ib.PS
			c.OnEnd = onEnd(s, &endAt)
			got, err := c.Run()
			require.NoError(t, err)
			assert.Equal(t, want, got)
			require.Positive(t, endAt, "OnEnd was called")
			assert.Greater(t, s.Now(), endAt, "the simulation went on")
		})
	}
}

// TestLargeInlineWQEsFitTheSendQueue: the send queue holds tx_depth WQEs of
// the size the test posts, as mlx5 sizes it from max_send_wr and
// max_inline_data. An inline WRITE of 221 bytes is a 16-byte control
// segment, a 16-byte remote-address segment and 4 + 221 = 225 inline bytes
// padded to 240: 272 bytes, five 64-byte WQEBBs. With tx_depth 128 (and
// perftest's CQ moderation of 100, so 128 outstanding) that is 640 WQEBBs,
// more than the 4 × 128 = 512 a four-WQEBB allowance gives: the run used to
// stop with "send queue full". UD inline SENDs add the 48-byte address
// vector: 16 + 48 + 240 = 304 bytes, five WQEBBs as well.
func TestLargeInlineWQEsFitTheSendQueue(t *testing.T) {
	for _, tc := range []struct {
		test, conn string
		size       int
	}{{"write_bw", "RC", 221}, {"write_bw", "RC", 236}, {"send_bw", "RC", 236}, {"send_bw", "UD", 236}} {
		t.Run(fmt.Sprintf("%s/%s/%d", tc.test, tc.conn, tc.size), func(t *testing.T) {
			run := edrRun(tc.test, tc.size, 300)
			run.InlineSize, run.Connection = 236, tc.conn
			require.Equal(t, 5, hca.WQEBBs(&hca.SendWR{Opcode: hca.WRRDMAWrite, Inline: true, Length: 221}))
			m, err := RunPerftest(run)
			require.NoError(t, err)
			assert.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
			assert.Equal(t, 300, m["iterations"])
		})
	}
}

// TestReadRetriedInsideTheRoundTripFinishes: a READ whose requester timer
// is shorter than the cable's round trip is retried before any response
// can come back, again and again. The responder must answer a duplicate
// READ by re-pointing the READ's one reply (rxe duplicate_request), not by
// queueing another copy of it: with a copy per duplicate the response
// queue grew without bound, read_lat 64 KiB did not finish 8 READs in
// 100 ms and read_bw finished none of 64.
func TestReadRetriedInsideTheRoundTripFinishes(t *testing.T) {
	// NDR 4x, 3 km of fibre: a round trip takes 2 × 3000 m × 4.897 ns/m =
	// 29.382 µs, the local ACK timeout 4.096 µs × 2^1 = 8.192 µs. Timers
	// run from the request's grant, and no response can arrive before a
	// round trip, so every READ times out at least ⌊29.382 / 8.192⌋ = 3
	// times before its first response.
	const length, timeout = 3000.0, 1
	rtt := 2 * length * link.FibrePsPerM // ps
	to := float64(hca.RetryTimeoutPS(timeout))
	minRetriesPerRead := int(rtt / to)
	require.Equal(t, 3, minRetriesPerRead)
	// A 64 KiB READ at MTU 4096 is 16 responses.
	const size, mtu = 65536, 4096
	const respPerRead = size / mtu

	for _, tc := range []struct {
		test  string
		iters int
	}{{"read_lat", 8}, {"read_bw", 64}} {
		t.Run(tc.test, func(t *testing.T) {
			build := func(retryTimeout int) PerftestRun {
				lc := perftestLink("NDR")
				lc.LengthM, lc.Medium = length, "fibre"
				cfg, err := hca.Profile("cx7")
				require.NoError(t, err)
				cfg.RetryTimeout = retryTimeout
				return PerftestRun{Link: lc, HCA: cfg, Test: tc.test, Size: size, Iterations: tc.iters,
					TxDepth: 128, QPs: 1, InlineSize: -1, Seed: 1, MaxTimeNs: 1e8}
			}
			p, err := BuildPerftest(build(timeout))
			require.NoError(t, err)
			devs := p.Devices()
			chk := verif.AttachCheckers(verif.CheckConfig{}, devs[0], devs[1], devs[0].Port, devs[1].Port)
			m, err := p.Run()
			require.NoError(t, err, "the READs finish within 100 ms")
			chk.Finish(p.Sim().Now(), false)
			assert.NoError(t, chk.Err())
			assert.Equal(t, true, m["data_verified"])

			// The setting does what it is meant to: retries, at least 3
			// per READ for the ping-pong read_lat.
			retries := m["retries"].(int64)
			if tc.test == "read_lat" {
				assert.GreaterOrEqual(t, retries, int64(minRetriesPerRead*tc.iters))
			} else {
				assert.Positive(t, retries)
			}
			// One reply per READ request received, original or duplicate,
			// each at most the READ's 16 responses: a duplicate replaces
			// the reply under way. (host0 sends only READ requests.)
			assert.LessOrEqual(t, devs[1].Counters.RespPackets, respPerRead*devs[0].Counters.ReqPackets)

			// Retries only resend: no faster than with the timer off.
			q, err := RunPerftest(build(0))
			require.NoError(t, err)
			assert.Zero(t, q["retries"])
			if tc.test == "read_lat" {
				assert.GreaterOrEqual(t, m["lat_us"].(map[string]any)["typical"].(float64),
					q["lat_us"].(map[string]any)["typical"].(float64))
			} else {
				assert.LessOrEqual(t, m["bw_gbps"].(float64), q["bw_gbps"].(float64))
			}
		})
	}
}

// TestTimeLimitSaysHowCompletionsCount: write_bw signals one WRITE in
// perftestCQMod (100), so a run stopped by its time limit after 24 WRITEs
// were acknowledged still says 0 completed; the message says why the count
// moves in steps of 100. A latency test signals every message and keeps the
// plain wording. 2000 ns is too short for either to finish: one 64 KiB
// WRITE alone is 5.2 µs on the EDR wire.
func TestTimeLimitSaysHowCompletionsCount(t *testing.T) {
	run := edrRun("write_bw", 65536, 200)
	run.MaxTimeNs = 2000
	_, err := RunPerftest(run)
	var tl *TimeLimitError
	require.ErrorAs(t, err, &tl)
	assert.Contains(t, err.Error(), "(0 of 200 messages completed, as the client sees them: one signaled completion every 100)")
	run = edrRun("write_lat", 65536, 200)
	run.MaxTimeNs = 2000
	_, err = RunPerftest(run)
	require.ErrorAs(t, err, &tl)
	assert.Contains(t, err.Error(), "(0 of 200 messages completed)")
}

// TestAtomicBWOneReadModifyWriteAtATime derives ib_atomic_bw's steady
// message rate: every FETCH_ADD targets the server's one word per QP, and
// the responder executes an atomic as a PCIe read of the word followed by
// a posted write of the new value, so the next atomic's read request goes
// upstream only after that write (a read does not pass a posted write).
// One atomic therefore costs, on hca.Defaults (PCIe Gen3 x16, 128b/130b:
// 8000 × 130 / (8 × 16 × 128) = 63.4765625 ps per byte, rounded up per TLP):
//
//	read request TLP, 24 B header        1,524 ps
//	read completion latency            533,000 ps
//	completion TLP, 8 B + 20 B header    1,778 ps
//	posted write TLP, 8 B + 24 B header  2,032 ps
//	                                   538,334 ps
//
// Two runs that differ only in iterations differ in measured span by that
// period per extra atomic, start-up and drain cancelling.
func TestAtomicBWOneReadModifyWriteAtATime(t *testing.T) {
	h := hca.Defaults()
	pcie := hca.NewPCIe(h.PCIe)
	period := pcie.SerPS(h.PCIe.TLPOverheadBytes) + ib.FromNanoseconds(h.PCIe.ReadLatencyNS) +
		pcie.SerPS(8+h.PCIe.CompletionOverheadBytes) + pcie.SerPS(8+h.PCIe.TLPOverheadBytes)
	require.Equal(t, ib.PS(538334), period, "the derivation above")
	span := func(iters int) float64 {
		m, err := RunPerftest(edrRun("atomic_bw", 8, iters))
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		return m["sim_time_ns"].(float64)
	}
	const n1, n2 = 200, 600
	got := span(n2) - span(n1)
	assert.InDelta(t, float64(period)*(n2-n1)/1000, got, 0.001, "ns for %d more atomics", n2-n1)

	// With two QPs each has its own word (perftest gives every QP its own
	// buffer), so the two read-modify-write chains overlap: each QP's n
	// atomics still take n periods, and the pair moves twice the atomics
	// in the same time. The PCIe link is far from full (56 bytes upstream
	// per atomic per period), so nothing else paces them.
	spanQPs := func(iters int) float64 {
		run := edrRun("atomic_bw", 8, iters)
		run.QPs = 2
		m, err := RunPerftest(run)
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		return m["sim_time_ns"].(float64)
	}
	got2 := spanQPs(n2) - spanQPs(n1)
	assert.InDelta(t, float64(period)*(n2-n1)/1000, got2, 0.01, "two words: ns for %d more atomics per QP", n2-n1)
}
