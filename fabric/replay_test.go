package fabric

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runReplayTrace writes trace to a file and runs it as workload.kind
// replay with the overrides sets.
func runReplayTrace(t *testing.T, trace string, sets ...string) map[string]any {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.trace")
	require.NoError(t, os.WriteFile(path, []byte(trace), 0o644))
	l, err := Load(nil, append([]string{"workload.kind=replay", "workload.trace_file=" + path}, sets...))
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	require.Equal(t, true, m["completions_ok"], "%v", m["completion_errors"])
	return m
}

// ps turns a metric in ns (a float of whole picoseconds / 1000) back into
// integer picoseconds.
func ps(v any) int64 { return int64(math.Round(v.(float64) * 1000)) }

// TestReplayReadChainIsPerftestReadLat: a chain of RDMA READs of 2 bytes,
// host 0 from host 1 back to back, each after the one before, is what
// ib_read_lat does: post one READ, poll until its CQE is seen, post the
// next. Both measure post (the application thread starting
// ibv_post_send) → the poll that sees the CQE, on the same HCA model and
// link, both from a cold start (the first READ takes the key-cache and
// WQE misses). So every sample must be perftest's to the picosecond: the
// cold first one (max), the warm ones (min, median).
func TestReplayReadChainIsPerftestReadLat(t *testing.T) {
	const n = 10
	sets := []string{"topology.kind=back-to-back", "link.generation=EDR"}
	m := runReplayTrace(t, chainTrace(n, "read", 2), sets...)
	l, err := Load(nil, append([]string{"workload.kind=perftest", "workload.test=read_lat", "workload.size=2",
		fmt.Sprintf("workload.iterations=%d", n)}, sets...))
	require.NoError(t, err)
	p, err := Run(l, RunOptions{})
	require.NoError(t, err)
	lat, want := m["latency_ns"].(map[string]float64), p["lat_us"].(map[string]any)
	require.Equal(t, float64(n), lat["count"])
	us := func(k string) int64 { return int64(math.Round(want[k].(float64) * 1e6)) }
	assert.Equal(t, us("min"), ps(lat["min"]))
	assert.Equal(t, us("typical"), ps(lat["p50"]))
	assert.Equal(t, us("max"), ps(lat["max"]))
	assert.Greater(t, lat["max"], lat["min"], "the cold first READ is slower")
}

// chainTrace is n messages host 0 → host 1 of op and size, each after
// the one before.
func chainTrace(n int, op string, size int) string {
	var b strings.Builder
	for i := range n {
		after := ""
		if i > 0 {
			after = fmt.Sprintf(" after=%d", i-1)
		}
		fmt.Fprintf(&b, "0 0 1 %s %d id=%d%s\n", op, size, i, after)
	}
	return b.String()
}

// TestReplayWriteIsPerftestWriteBWAtDepthOne: ib_write_bw with -t 1
// (tx_depth 1) signals every WRITE (cq_mod = min(100, tx_depth) = 1) and
// posts the next one when the poll loop has seen the previous one's
// completion: a chain of WRITEs, each after the one before, from the same
// cold start. Its bandwidth is size × n over first post → last completion
// seen, so that time, size × n × 8 / bw_gbps, must be the replay's
// makespan to the picosecond, at one packet (2 B) and at 16 (64 KiB, MTU
// 4096). And a trace of one WRITE is the chain's first message, alone on
// an idle fabric: its latency is the chain's cold first sample (its max).
func TestReplayWriteIsPerftestWriteBWAtDepthOne(t *testing.T) {
	const n = 5
	sets := []string{"topology.kind=back-to-back", "link.generation=EDR"}
	for _, size := range []int{2, 65536} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			m := runReplayTrace(t, chainTrace(n, "write", size), sets...)
			l, err := Load(nil, append([]string{"workload.kind=perftest", "workload.test=write_bw", "workload.tx_depth=1",
				fmt.Sprintf("workload.size=%d", size), fmt.Sprintf("workload.iterations=%d", n)}, sets...))
			require.NoError(t, err)
			p, err := Run(l, RunOptions{})
			require.NoError(t, err)
			perftestPS := int64(math.Round(float64(size*n*8) / p["bw_gbps"].(float64) * 1000))
			assert.Equal(t, perftestPS, ps(m["makespan_ns"]))
			one := runReplayTrace(t, chainTrace(1, "write", size), sets...)
			assert.Equal(t, ps(m["latency_ns"].(map[string]float64)["max"]), ps(one["makespan_ns"]))
			assert.Equal(t, ps(one["makespan_ns"]), ps(one["latency_ns"].(map[string]float64)["max"]))
		})
	}
}

// pingPongTrace is n SENDs of size bytes bouncing between hosts 0 and 1,
// each posted when its source has polled the receive completion of the
// one before.
func pingPongTrace(n, size int) string {
	var b strings.Builder
	for i := range n {
		after := ""
		if i > 0 {
			after = fmt.Sprintf(" after=%d", i-1)
		}
		fmt.Fprintf(&b, "0 %d %d send %d id=%d%s\n", i%2, 1-i%2, size, i, after)
	}
	return b.String()
}

// TestReplayReceiveDependencyIsSendLatLessTheRepost: a dependency on a
// message received releases the next message when the receiving host's
// poll loop takes the receive completion. A ping-pong of SENDs is then
// ib_send_lat, whose reported latency is one hop, from a post on one side
// to the post it provokes on the other: the receive completion travels,
// the poll sees it, the next SEND is posted. One difference: send_lat
// re-posts a receive WQE on the thread before each SEND (hca.md, latency
// breakdown: cpu_post is 2 × host.post_ns), where the replay pre-posted
// every receive at set-up; so a warm replay hop is send_lat's typical −
// host.post_ns (60 ns). Two more hops of the warm ping-pong (12 messages
// against 10) add exactly two such hops to the makespan, whatever the
// cold start and the end. send_lat is run without inline (inline_size 0),
// as the replay posts every message from its registered buffer.
func TestReplayReceiveDependencyIsSendLatLessTheRepost(t *testing.T) {
	sets := []string{"topology.kind=back-to-back", "link.generation=EDR"}
	short := runReplayTrace(t, pingPongTrace(10, 64), sets...)
	long := runReplayTrace(t, pingPongTrace(12, 64), sets...)
	l, err := Load(nil, append([]string{"workload.kind=perftest", "workload.test=send_lat", "workload.size=64",
		"workload.inline_size=0", "workload.iterations=10"}, sets...))
	require.NoError(t, err)
	p, err := Run(l, RunOptions{})
	require.NoError(t, err)
	hop := int64(math.Round(p["lat_us"].(map[string]any)["typical"].(float64)*1e6)) - int64(l.Config.HCA.Host.PostNS*1000)
	assert.Equal(t, 2*hop, ps(long["makespan_ns"])-ps(short["makespan_ns"]))
}

// TestReplayChainMakespanIsTheSumOfItsLatencies: B after A, C after B,
// host 0 to host 1. A is posted at the timed start (the thread is free:
// set-up ended 5 µs before). B's dependency is met in the poll turn that
// sees A's CQE, the instant A's latency ends, and B is posted in that same
// turn (the turn was scheduled for when the thread is free), so its
// latency starts where A's ends; likewise C. The run ends at C's
// completion (a write has no receive completion), so the makespan is
// lat(A) + lat(B) + lat(C) exactly: with three samples min + p50 + max.
// The same three messages open loop (no after=) overlap, so theirs is
// shorter: the dependencies did hold the messages back.
func TestReplayChainMakespanIsTheSumOfItsLatencies(t *testing.T) {
	sets := []string{"topology.kind=single-switch", "topology.hosts=2", "link.generation=NDR"}
	chain := runReplayTrace(t, "0 0 1 write 4096 id=0\n0 0 1 write 65536 id=1 after=0\n0 0 1 write 256 id=2 after=1\n", sets...)
	lat := chain["latency_ns"].(map[string]float64)
	require.Equal(t, 3.0, lat["count"])
	sum := ps(lat["min"]) + ps(lat["p50"]) + ps(lat["max"])
	assert.Equal(t, sum, ps(chain["makespan_ns"]))
	open := runReplayTrace(t, "0 0 1 write 4096\n0 0 1 write 65536\n0 0 1 write 256\n", sets...)
	assert.Less(t, ps(open["makespan_ns"]), ps(chain["makespan_ns"]))
}

// TestReplayDelayAddsToTheMakespan: B after A with delay_ns=D, host 0 to
// host 1, against the same chain without the delay. Without it B is posted
// in the poll turn that sees A's completion
// (TestReplayChainMakespanIsTheSumOfItsLatencies); with it, D later. A's
// completion means its ACK is back, so the fabric and both HCAs are idle
// and their caches warm in both runs; what still runs on an idle fabric is
// periodic: each port's flow-control refresh every link.fc_refresh_ns
// (6000 ns) and the core clocks (1 GHz). D = 24 µs is a whole number of
// both, so B meets every port and clock at the same phase: B's run is the
// no-delay run's shifted by D, the same two latencies, and the makespan is
// exactly the no-delay makespan + D.
//
// A start_ns later than the dependency's completion + D wins: B is posted
// at start_ns, as the same B with no dependency at all is (the first
// write is long done at 90 µs), so the two runs are the same.
func TestReplayDelayAddsToTheMakespan(t *testing.T) {
	sets := []string{"topology.kind=single-switch", "topology.hosts=2", "link.generation=NDR"}
	const d = 24000 // ns, 4 × link.fc_refresh_ns
	plain := runReplayTrace(t, "0 0 1 write 65536 id=0\n0 0 1 write 65536 after=0\n", sets...)
	delayed := runReplayTrace(t, fmt.Sprintf("0 0 1 write 65536 id=0\n0 0 1 write 65536 after=0 delay_ns=%d\n", d), sets...)
	assert.Equal(t, ps(plain["makespan_ns"])+d*1000, ps(delayed["makespan_ns"]))
	assert.Equal(t, plain["latency_ns"], delayed["latency_ns"])

	late := runReplayTrace(t, fmt.Sprintf("0 0 1 write 65536 id=0\n90000 0 1 write 65536 after=0 delay_ns=%d\n", d), sets...)
	free := runReplayTrace(t, "0 0 1 write 65536 id=0\n90000 0 1 write 65536\n", sets...)
	assert.Greater(t, late["makespan_ns"], 90000.0)
	assert.Equal(t, free["makespan_ns"], late["makespan_ns"])
	assert.Equal(t, free["latency_ns"], late["latency_ns"])
}

// TestReplayStartTimes: a message is posted no earlier than its start_ns.
// Two writes 50 µs apart, far longer than one write's latency (a few µs),
// so the second finds an idle fabric and warm caches: the makespan is its
// start plus its latency, the smaller sample.
func TestReplayStartTimes(t *testing.T) {
	m := runReplayTrace(t, "0 0 1 write 4096\n50000 0 1 write 4096\n", "topology.kind=back-to-back")
	lat := m["latency_ns"].(map[string]float64)
	assert.Less(t, lat["min"], 10000.0)
	assert.Equal(t, 50000*1000+ps(lat["min"]), ps(m["makespan_ns"]))
}

// TestReplayThroughput: throughput_gbps is the trace's payload bits over
// the makespan.
func TestReplayThroughput(t *testing.T) {
	m := runReplayTrace(t, "0 0 1 send 100000\n0 1 0 write_imm 50000\n0 1 0 write 1\n", "topology.kind=back-to-back")
	assert.Equal(t, int64(150001), m["bytes"])
	assert.Equal(t, 3, m["messages"])
	assert.InDelta(t, 150001*8/m["makespan_ns"].(float64), m["throughput_gbps"], 1e-9)
}

// TestReplayHashCoversTheTrace: two traces under one config are two design
// points, so their hashes (shard manifests, trace headers) differ; the same
// trace hashes alike.
func TestReplayHashCoversTheTrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.trace")
	hash := func(trace string) string {
		require.NoError(t, os.WriteFile(path, []byte(trace), 0o644))
		l, err := Load(nil, []string{"workload.kind=replay", "workload.trace_file=" + path, "topology.kind=back-to-back"})
		require.NoError(t, err)
		return l.Hash()
	}
	a, b, a2 := hash("0 0 1 write 8\n"), hash("0 0 1 write 9\n"), hash("0 0 1 write 8\n")
	assert.NotEqual(t, a, b)
	assert.Equal(t, a, a2)
}

// TestReplayAtomicChainIsPerftestAtomicLat: a chain of fetch_adds host 0
// → host 1, each after the one before, is ib_atomic_lat (FETCH_ADD): post
// one atomic, poll until its CQE is seen, post the next. Both measure post
// → the poll that sees the CQE (which the HCA writes after the 8-byte
// original value has landed), on the same HCA model and link, both cold at
// the first atomic (key-cache and WQE misses) and warm after it. So every
// sample must be perftest's to the picosecond: the cold first one (max)
// and the warm ones (min, median). cmp_swap takes the same pipeline (one
// 8-byte read-modify-write at the responder; the compare is in the HCA),
// so its chain has the same latencies.
func TestReplayAtomicChainIsPerftestAtomicLat(t *testing.T) {
	const n = 10
	sets := []string{"topology.kind=back-to-back", "link.generation=EDR"}
	l, err := Load(nil, append([]string{"workload.kind=perftest", "workload.test=atomic_lat", "workload.size=8",
		fmt.Sprintf("workload.iterations=%d", n)}, sets...))
	require.NoError(t, err)
	p, err := Run(l, RunOptions{})
	require.NoError(t, err)
	want := p["lat_us"].(map[string]any)
	us := func(k string) int64 { return int64(math.Round(want[k].(float64) * 1e6)) }
	for _, op := range []string{"fetch_add", "cmp_swap"} {
		t.Run(op, func(t *testing.T) {
			m := runReplayTrace(t, chainTrace(n, op, 8), sets...)
			lat := m["latency_ns"].(map[string]float64)
			require.Equal(t, float64(n), lat["count"])
			assert.Equal(t, us("min"), ps(lat["min"]))
			assert.Equal(t, us("typical"), ps(lat["p50"]))
			assert.Equal(t, us("max"), ps(lat["max"]))
			assert.Greater(t, lat["max"], lat["min"], "the cold first atomic is slower")
		})
	}
}
