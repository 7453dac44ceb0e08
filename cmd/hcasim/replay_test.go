package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runReplayExampleTwice runs a shipped replay config's sweep with the
// checkers twice, requires byte-identical JSON, points points, each with
// its end checks run, every completion successful and messages messages,
// and returns the results.
func runReplayExampleTwice(t *testing.T, config string, points, messages int) replayResults {
	t.Helper()
	res := runExampleTwice(t, config, points)
	for _, p := range res.Points {
		assert.Equal(t, true, p.Metrics["end_checks_run"], "%v", p.Params)
		assert.Equal(t, true, p.Metrics["completions_ok"], "%v", p.Params)
		assert.Equal(t, float64(messages), p.Metrics["messages"])
	}
	return res
}

// TestReplayExampleDeterministicSweepChecked: the shipped replay example
// (a sweep over link.generation, its trace found beside the shipped
// config from any directory) passes the checkers, and two runs print
// byte-identical JSON (a sweep's points carry no wall time). NDR's faster
// links finish the same trace sooner than HDR's.
func TestReplayExampleDeterministicSweepChecked(t *testing.T) {
	res := runReplayExampleTwice(t, "examples/replay-halo.yaml", 2, 128)
	assert.Equal(t, "HDR", res.Points[0].Params["link.generation"])
	assert.Less(t, res.Points[1].Metrics["makespan_ns"].(float64), res.Points[0].Metrics["makespan_ns"].(float64))
}

// TestReplayBcastExampleComputeHoldsTheThread: the shipped
// examples/replay-bcast.yaml runs one pipelined broadcast (8 chunks down 8
// ranks, each rank processing each chunk for C = 10 µs) with the
// processing as delay_ns and as compute_ns; both pass the checkers and
// print byte-identical JSON twice. With compute_ns, rank 1's one thread
// does, per chunk, the forward's post, the compute and the report's post:
// 8 × (C + 2 × host.post_ns) = 8 × 10.12 µs = 80.96 µs of work in series
// (a lower bound on the makespan). With delay_ns the processing leaves
// the thread free and the eight 10 µs overlap: under 8 × C = 80 µs. And a
// forward's latency (post → the poll that sees its completion) is exactly
// 2 × post + C + poll = 10.16 µs when its ACK arrives during the compute
// that follows its post (the thread posts the forward, computes, posts
// the report, then polls): so are the 48 forwards of ranks 1 … 6, more
// than the 112 messages' half with the 15 shorter ones (rank 0's chunks,
// each rank's last report) below them, so the median is that value.
func TestReplayBcastExampleComputeHoldsTheThread(t *testing.T) {
	res := runReplayExampleTwice(t, "examples/replay-bcast.yaml", 2, 112)
	require.Equal(t, "replay-bcast-delay.trace", res.Points[0].Params["workload.trace_file"])
	delay, compute := res.Points[0].Metrics, res.Points[1].Metrics
	assert.Less(t, delay["makespan_ns"].(float64), 80000.0)
	assert.Greater(t, compute["makespan_ns"].(float64), 80960.0)
	// cx7's host.post_ns 60, host.poll_ns 40 (hca.Defaults' host).
	assert.Equal(t, 10000.0+2*60+40, compute["latency_ns"].(map[string]any)["p50"])
}

// TestReplayAtomicsOnAFatTreePassTheCheckers: many atomics at once on a
// radix-8 fat tree, with RDMA WRITEs beside them: every host aims three
// fetch_adds at its neighbour, one at the host five on and a cmp_swap at
// host 0 (fifteen sources on one swap word), all at time 0. The
// invariant checkers (--check: nothing lost, duplicated or corrupted on
// the links) pass, every completion succeeds, and the run exits 0, which
// it does only when every host's words hold what the atomics aimed at it
// must leave (an internal error, exit 1, otherwise).
func TestReplayAtomicsOnAFatTreePassTheCheckers(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for h := range 16 {
		for range 3 {
			fmt.Fprintf(&b, "0 %d %d fetch_add 8\n", h, (h+1)%16)
		}
		fmt.Fprintf(&b, "0 %d %d fetch_add 8\n0 %d %d write 65536\n", h, (h+5)%16, h, (h+5)%16)
		if h != 0 {
			fmt.Fprintf(&b, "0 %d 0 cmp_swap 8\n", h)
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.trace"), []byte(b.String()), 0o644))
	cfg := filepath.Join(dir, "a.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("topology: {kind: fat-tree-2, hosts: 16}\nswitch: {radix: 8}\nworkload: {kind: replay, trace_file: a.trace}\n"), 0o644))
	code, out, errs := run("-config", cfg, "--check", "--quiet", "--format", "json", "--out", t.TempDir())
	require.Equal(t, 0, code, errs)
	res := decodeResults(t, out)
	require.Len(t, res.Points, 1)
	m := res.Points[0].Metrics
	assert.Equal(t, true, m["end_checks_run"])
	assert.Equal(t, true, m["completions_ok"], "%v", m["completion_errors"])
	assert.Equal(t, float64(16*6-1), m["messages"])
}

// TestReplayBadTraceIsOneLine: a trace's mistake, found through a config
// file on disk that names it relative to its own directory, is one line
// naming the file and line, exit code 2, no stack.
func TestReplayBadTraceIsOneLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.trace"), []byte("0 0 1 write 64\n0 0 1 put 64\n"), 0o644))
	cfg := filepath.Join(dir, "r.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("topology: {kind: back-to-back}\nworkload: {kind: replay, trace_file: bad.trace}\n"), 0o644))
	code, _, errs := run("-config", cfg, "--quiet")
	assert.Equal(t, 2, code)
	// The key is named, as for a file that cannot be read (below).
	assert.Equal(t, "hcasim: "+cfg+`: workload.trace_file: bad.trace:2: op: "put" is not an op (write, write_imm, send, read, fetch_add, cmp_swap)`+"\n", errs)

	require.NoError(t, os.WriteFile(cfg, []byte("topology: {kind: back-to-back}\nworkload: {kind: replay, trace_file: none.trace}\n"), 0o644))
	code, _, errs = run("-config", cfg, "--quiet")
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim: "+cfg+": workload.trace_file: none.trace: no such file ("+filepath.Join(dir, "none.trace")+
		"; a relative path is from the config file's directory)\n", errs)
	assert.Equal(t, 1, strings.Count(errs, "\n"))
}

// TestReplayTraceFileKey: workload.trace_file is required with replay
// and refused with any other kind.
func TestReplayTraceFileKey(t *testing.T) {
	code, _, errs := run("-config", "edr.yaml", "--quiet", "--set", "workload.kind=replay")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "workload.trace_file: is empty, but workload.kind replay needs a message trace")
	code, _, errs = run("-config", "edr.yaml", "--quiet", "--set", "workload.trace_file=h.trace")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `workload.trace_file: "h.trace" is set, but workload.kind perftest does not use it`)
}

type replayResults struct {
	Points []struct {
		Params  map[string]any `json:"params"`
		Metrics map[string]any `json:"metrics"`
	} `json:"points"`
}

func decodeResults(t *testing.T, out string) replayResults {
	t.Helper()
	var res replayResults
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	return res
}
