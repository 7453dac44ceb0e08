package fabric

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/hca"
)

// runEDR runs configs/edr.yaml (EDR 4x, cx5 hosts: PCIe Gen3 x16, 64 KiB
// messages) with sets on top.
func runEDR(t *testing.T, sets ...string) map[string]any {
	t.Helper()
	return runShipped(t, "edr.yaml", sets...)
}

// runShipped runs the shipped config name with sets on top.
func runShipped(t *testing.T, name string, sets ...string) map[string]any {
	t.Helper()
	yaml, ok := configs.Lookup(name)
	require.True(t, ok, name)
	l, err := Load(yaml, sets)
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	return m
}

// Bounds of EDR 4x with cx5 hosts, derived:
//   - link: 4 × 25.78125 Gb/s × 64/66 = 100 Gb/s of data; a 64 KiB WRITE is
//     16 packets of 4096 B, each with LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26
//     B, and one RETH of 16: payload rate 100 × 65536 / 65968 = 99.345 Gb/s.
//   - PCIe Gen3: 8 GT/s × lanes × 128/130 = 126.031 Gb/s at x16, 63.015 at
//     x8. Posted writes go in MPS 256 B TLPs with 24 B of overhead: write
//     bound raw × 256/280 (115.22 at x16, 57.61 at x8). Reads come back in
//     64 B completions with 20 B of overhead: read bound raw × 64/84
//     (96.02 at x16, 48.01 at x8).
const (
	edrLinkPayloadGbps = 100 * 65536.0 / 65968
	gen3x16Gbps        = 8 * 16 * 128.0 / 130
	gen3x8Gbps         = 8 * 8 * 128.0 / 130
)

// TestIncastWriteBWReachesTheServerBound: N write_bw clients on one switch
// into one server. Every client's data crosses the switch's one output to
// the server and the server's one PCIe link, so the aggregate is the
// smaller of the server's link payload rate and its PCIe write bound; the
// clients' own bound (PCIe read, 96.02 or 48.01 Gb/s each) is far above
// their 1/N share. The switch's output serves its inputs round robin
// (iSLIP), one packet each, all packets the same size, so each client gets
// 1/N of the aggregate; the pairs then end within one round of packets
// (N × 0.33 µs) of one another over a run of milliseconds, and their
// bandwidths agree to better than 0.1 %.
func TestIncastWriteBWReachesTheServerBound(t *testing.T) {
	const clients = 4
	for _, tc := range []struct {
		name  string
		lanes string
		bound float64 // Gb/s
	}{
		// x16: the link binds, 99.345 < 115.22.
		{"x16 link-bound", "16", min(edrLinkPayloadGbps, gen3x16Gbps*256/280)},
		// x8: the server's PCIe write binds, 57.61 < 99.345; each client
		// reads 57.61 / 4 = 14.4 Gb/s, under its 48.01 read bound.
		{"x8 PCIe-write-bound", "8", min(edrLinkPayloadGbps, gen3x8Gbps*256/280)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := runEDR(t, "topology.kind=single-switch", "topology.hosts=5", "workload.pattern=incast",
				"workload.clients=4", "workload.iterations=300", "hca.pcie.lanes="+tc.lanes)
			assert.Equal(t, true, m["data_verified"])
			assert.Equal(t, clients, m["pairs"])
			agg := m["aggregate_bw_gbps"].(float64)
			// The run ends at the last ACK, which the server sends when
			// the data has entered its posted-write queue, not PCIe: up
			// to hca.pcie.posted_write_queue_bytes are still queued then, so the
			// ceiling is the bound plus that over the run's span.
			spanNs := clients * 300 * 65536 * 8 / agg
			assert.LessOrEqual(t, agg, tc.bound+float64(hca.Defaults().PCIe.PostedWriteQueueBytes)*8/spanNs)
			assert.GreaterOrEqual(t, agg, 0.99*tc.bound, "within 1 %% of min(link %.2f, PCIe write) = %.2f", edrLinkPayloadGbps, tc.bound)
			pb := m["pair_bw_gbps"].(map[string]any)
			for _, k := range []string{"min", "max"} {
				assert.InEpsilon(t, agg/clients, pb[k].(float64), 1e-3, "pair %s against 1/%d of the aggregate", k, clients)
			}
			assert.Greater(t, m["fairness_jain"].(float64), 0.9999)
			// The per-pair sum is at least the aggregate: every pair's own
			// time is at most the run's.
			assert.GreaterOrEqual(t, m["pair_bw_sum_gbps"].(float64), agg)
			// pair 0's single-pair names keep their meaning: its own bandwidth.
			assert.InEpsilon(t, agg/clients, m["bw_gbps"].(float64), 1e-3)
		})
	}
}

// TestPostedWriteQueueSetsWhenCreditsReturn: the x8 incast above, PCIe
// write-bound at B = 57.61 Gb/s, with the server's posted-write queue Q
// at 0 and at 1 MiB. The server's receive buffer frees a packet (and the
// ACK goes) once the packet's TLPs fit in the queue, so from the moment
// the queue fills the clients run at B and the run ends when the last
// data has entered the queue, Q bytes before PCIe has written them. Of
// the D = 4 × 300 × 64 KiB bytes, D − Q went at B in the run's span, so
// the aggregate is D / ((D − Q) / B) = B × D / (D − Q): B with no queue,
// B × 1.01352 with 1 MiB (start-up, a few µs of a ≈ 11 ms run, is under
// 0.1 %).
func TestPostedWriteQueueSetsWhenCreditsReturn(t *testing.T) {
	const d = 4 * 300 * 65536.0
	bound := gen3x8Gbps * 256 / 280
	for _, q := range []int{0, 1 << 20} {
		m := runEDR(t, "topology.kind=single-switch", "topology.hosts=5", "workload.pattern=incast",
			"workload.clients=4", "workload.iterations=300", "hca.pcie.lanes=8",
			fmt.Sprintf("hca.pcie.posted_write_queue_bytes=%d", q))
		want := bound * d / (d - float64(q))
		assert.InEpsilon(t, want, m["aggregate_bw_gbps"].(float64), 2e-3, "queue %d B", q)
	}
}

// TestIncastReadLatIsTheServersPCIeRead: N read_lat clients into one
// server. Each iteration every client READs 64 KiB from the server, whose
// HCA reads them from host memory over one PCIe link at its read bound
// (96.02 Gb/s, cx5): one READ alone takes 64 KiB × 8 / 96.02 = 5.46 µs
// of it, plus ≈ 2.2 µs of fixed costs (post, doorbell, wire, CQE, poll;
// 7.7 µs in all). With four clients the server's reads queue; a client's
// next READ arrives while the others' are still being read, so the PCIe
// read direction never idles and each client's iteration takes the
// server's read time for all four, 4 × 5.46 = 21.84 µs (the fixed costs,
// 3 × 5.46 µs under the other reads, are hidden).
func TestIncastReadLatIsTheServersPCIeRead(t *testing.T) {
	m := runEDR(t, "topology.kind=single-switch", "topology.hosts=5", "workload.pattern=incast",
		"workload.test=read_lat", "workload.iterations=100")
	assert.Equal(t, true, m["data_verified"])
	want := 4 * 65536 * 8 / (gen3x16Gbps * 64 / 84) / 1000 // µs
	lat := m["pair_lat_typical_us"].(map[string]any)
	for _, k := range []string{"min", "max", "mean"} {
		assert.InEpsilon(t, want, lat[k].(float64), 0.01, "pair median %s against %.3f µs", k, want)
	}
}

// TestShiftPairsReachTheSinglePairRate: on a non-blocking two-level fat
// tree (radix 8, 32 hosts, D-mod-K, which routes every shift with no
// channel shared: fabric.md) every host is the client of one pair and the
// server of another, and each pair should move data at the rate of a pair
// alone: no link carries two flows' data, and each HCA's PCIe carries its
// client's reads down (at most 96.02 Gb/s, the single pair's bound) and
// its server's writes up (99.3 × 280/256 = 108.7 Gb/s with TLP overhead,
// under the 126.03 of Gen3 x16). The switches run at speedup 2: a
// combined input-output queued switch with speedup 2 emulates an output-
// queued one (Chuang, Goel, McKeown, Prabhakar, IEEE JSAC 17(6), 1999),
// so the switch itself blocks nothing. (At speedup 1 the model's VOQ
// leaves hold the pairs whose client also serves a pair from another leaf
// to 70 Gb/s: their ACKs wait at a leaf input whose free rounds never meet
// their output's, the streams being in fixed phase; fabric.md, "Perftest
// pairs", and switchasic's TestPhaseLockedVOQ.)
func TestShiftPairsReachTheSinglePairRate(t *testing.T) {
	fab := []string{"topology.kind=fat-tree-2", "switch.radix=8", "topology.routing=dmodk", "switch.speedup=2",
		"workload.iterations=200"}
	single := runEDR(t, fab...)["bw_gbps"].(float64)
	// The single pair itself is under min(link 99.35, PCIe read 96.02).
	require.LessOrEqual(t, single, min(edrLinkPayloadGbps, gen3x16Gbps*64/84))
	require.Greater(t, single, 0.98*gen3x16Gbps*64/84)
	m := runEDR(t, append(fab, "workload.pattern=shift")...)
	assert.Equal(t, true, m["data_verified"])
	assert.Equal(t, 32, m["pairs"])
	pb := m["pair_bw_gbps"].(map[string]any)
	assert.GreaterOrEqual(t, pb["min"].(float64), 0.99*single, "the slowest pair against the single pair's %.2f Gb/s", single)
	assert.LessOrEqual(t, pb["max"].(float64), single*1.001)
	assert.GreaterOrEqual(t, m["aggregate_bw_gbps"].(float64), 0.99*32*single)
}

// TestPerftestPairsWithEverything: an incast with background traffic on
// the hosts in no pair, lossy links, the test on its own SL, under the
// checkers: it finishes, every pair's data checks, the hosts split as the
// pattern says, and the same run twice gives the same metrics.
func TestPerftestPairsWithEverything(t *testing.T) {
	sets := []string{"topology.kind=single-switch", "topology.hosts=8", "workload.pattern=incast",
		"workload.clients=3", "workload.background=true", "workload.offered_load=0.3", "link.ber=1e-7",
		"hca.retry_timeout=2", "switch.vls=2", "workload.sl=1", "workload.iterations=100", "sim.check=true"}
	m := runEDR(t, sets...)
	assert.Equal(t, true, m["data_verified"])
	assert.Equal(t, 3, m["pairs"])
	// Hosts 0, 1, 2 are clients, 7 the server: 8 − 4 = 4 background hosts.
	assert.Equal(t, 4, m["background_hosts"])
	assert.Equal(t, 8, m["hosts"])
	for _, r := range m["pair_results"].([]any) {
		assert.Equal(t, 7, r.(map[string]any)["server"])
	}
	delete(m, "wall_s")
	again := runEDR(t, sets...)
	delete(again, "wall_s")
	assert.Equal(t, m, again, "deterministic")
}

// TestPerftestPatternErrors: a pattern the fabric cannot hold is one line
// naming the key, the value and what is allowed, and a user's error.
func TestPerftestPatternErrors(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"workload.pattern=incast", "workload.clients=5"},
			"workload.clients: 5 is more than the fabric's 4 hosts besides the incast server (1 to 4, or 0 for all)"},
		{[]string{"workload.pattern=shift", "workload.clients=6"},
			"workload.clients: 6 is out of range for workload.pattern shift on 5 hosts (2 to 5, or 0 for all)"},
		{[]string{"workload.pattern=shift", "workload.shift=5"},
			"workload.shift: 5 is a multiple of the 5 perftest hosts, so every client would be its own server"},
		{[]string{"workload.clients=2"},
			"workload.clients: 2, but workload.pattern pair runs one client (use incast, shift or permutation for more)"},
		{[]string{"workload.pattern=shift", "workload.background=true"},
			"workload.background: true, but every one of the fabric's 5 hosts is in a perftest pair (workload.pattern shift); background traffic needs hosts in none (fewer workload.clients, or more topology.hosts)"},
		{[]string{"workload.pattern=incast", "workload.clients=2", "workload.background=true", "workload.background_pattern=shift", "workload.shift=2"},
			"workload.shift: 2 is a multiple of the 2 background hosts, so every host would send to itself"},
		{[]string{"workload.pattern=incast", "workload.clients=3", "workload.background=true"},
			"workload.background_pattern: uniform needs at least 2 background hosts, the fabric has 1 besides the 4 perftest hosts"},
	} {
		yaml, ok := configs.Lookup("edr.yaml")
		require.True(t, ok)
		l, err := Load(yaml, append([]string{"topology.kind=single-switch", "topology.hosts=5"}, tc.set...))
		require.NoError(t, err)
		_, err = Run(l, RunOptions{})
		assert.EqualError(t, err, tc.want)
		var un *UnsupportedError
		assert.ErrorAs(t, err, &un, "a user's mistake, exit 2")
	}
	// Keys refused on their own, and back to back at load.
	for set, want := range map[string]string{
		"workload.pattern=ring": `workload.pattern: "ring" is not a perftest pattern (pair, incast, shift, permutation)`,
		"workload.clients=-1":   "workload.clients: -1 is out of range (0 for every host the pattern can take, 1 to 4096)",
		"workload.clients=3":    "workload.clients: 3, but workload.pattern pair runs one client (use incast, shift or permutation for more)",
	} {
		yaml, _ := configs.Lookup("edr.yaml")
		_, err := Load(yaml, []string{set})
		assert.ErrorContains(t, err, want, set)
	}
}

// TestBackToBackShiftRunsBothWays: back to back, shift pairs host 0 → 1
// and 1 → 0: write_bw both ways at once on a full-duplex cable, each
// direction carrying one pair's data and the other's ACKs, each pair at
// the single pair's rate (PCIe: each host reads its data down and writes
// the other's up, two directions).
func TestBackToBackShiftRunsBothWays(t *testing.T) {
	single := runEDR(t, "workload.iterations=200")["bw_gbps"].(float64)
	m := runEDR(t, "workload.iterations=200", "workload.pattern=shift")
	assert.Equal(t, 2, m["pairs"])
	assert.Equal(t, true, m["data_verified"])
	pb := m["pair_bw_gbps"].(map[string]any)
	assert.GreaterOrEqual(t, pb["min"].(float64), 0.99*single)
}
