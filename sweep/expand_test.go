package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/fabric"
)

// streamBase is an NDR 4x back-to-back stream, measured over 2 µs so that
// each point runs in about a millisecond.
const streamBase = `
seed: 7
link: {generation: NDR, width: 4x, length_m: 2, medium: copper, mtu: 4096}
hca: {vl_buffer_bytes: 65536}
switch: {vls: 1}
topology: {kind: back-to-back}
workload: {kind: stream, size: 4096, saturate: true, warmup_ns: 500, measure_ns: 2000}
`

// streamSweep sweeps packet size and receive buffer (2 × 3 points).
const streamSweep = streamBase + `
sweep:
  workload.size: [1024, 4096]
  hca.vl_buffer_bytes: [8192, 16384, 65536]
`

func expand(t *testing.T, text string, sets ...string) *Sweep {
	t.Helper()
	root, err := config.Parse([]byte(text))
	require.NoError(t, err)
	for _, s := range sets {
		require.NoError(t, config.Set(root, s))
	}
	s, err := Expand(root, Options{Pinned: PinnedKeys(sets)})
	require.NoError(t, err)
	return s
}

func designParams(t *testing.T, s *Sweep) []string {
	var out []string
	for _, d := range s.Designs {
		p, err := s.Point(d, 0)
		require.NoError(t, err)
		b, err := json.Marshal(p.Params)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

func TestExpandOrder(t *testing.T) {
	// Keys sorted: hca.vl_buffer_bytes varies slowest, workload.size
	// fastest, whatever order the YAML lists them in.
	s := expand(t, streamSweep)
	assert.Equal(t, []string{
		`{"hca.vl_buffer_bytes":8192,"workload.size":1024}`,
		`{"hca.vl_buffer_bytes":8192,"workload.size":4096}`,
		`{"hca.vl_buffer_bytes":16384,"workload.size":1024}`,
		`{"hca.vl_buffer_bytes":16384,"workload.size":4096}`,
		`{"hca.vl_buffer_bytes":65536,"workload.size":1024}`,
		`{"hca.vl_buffer_bytes":65536,"workload.size":4096}`,
	}, designParams(t, s))
	// Each point's config holds its values.
	p, err := s.Point(s.Designs[3], 0)
	require.NoError(t, err)
	assert.Equal(t, 16384, p.Loaded.Config.HCA.VLBufferBytes)
	assert.Equal(t, 4096, p.Loaded.Config.Workload.Size)
}

func TestExpandPinned(t *testing.T) {
	// --set pins workload.size: 3 designs instead of 6, each reporting
	// the pinned size.
	s := expand(t, streamSweep, "workload.size=2048")
	assert.Equal(t, []string{
		`{"hca.vl_buffer_bytes":8192,"workload.size":2048}`,
		`{"hca.vl_buffer_bytes":16384,"workload.size":2048}`,
		`{"hca.vl_buffer_bytes":65536,"workload.size":2048}`,
	}, designParams(t, s))
	// Pinning everything leaves one design.
	s = expand(t, streamSweep, "workload.size=4096", "hca.vl_buffer_bytes=16384")
	assert.Len(t, s.Designs, 1)
}

func TestExpandErrors(t *testing.T) {
	tests := []struct{ sweep, want string }{
		{"hca.vl_bufer_bytes: [8192]", "sweep.hca.vl_bufer_bytes: not a config key (did you mean hca.vl_buffer_bytes?)"},
		{"nothing.like.a.key: [1]", "sweep.nothing.like.a.key: not a config key"},
		{"link.width: [4x, 3x]", `sweep.link.width: "3x" is not a width`},
		{"hca.vl_buffer_bytes: [8192, 100]", "sweep.hca.vl_buffer_bytes: 100"},
		// Each value is valid alone; together one point is not: a 4096-byte
		// packet does not fit an MTU of 1024.
		{"link.mtu: [1024, 4096]\n  workload.size: [512, 4096]", "sweep.workload.size: 4096 bytes is more than link.mtu 1024 (a stream packet carries at most one MTU) (at the point link.mtu=1024, workload.size=4096)"},
		{"sweep.x: [1]", "sweep.sweep.x: a sweep cannot sweep itself"},
		// A list value written in block style names its point in flow form,
		// on the error's one line, as the results print it.
		{"workload.size: [512, 1024]\n  switch.sl2vl:\n    -" + strings.Repeat("\n      - 0", 15) + "\n      - 1",
			"at the point switch.sl2vl=[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], workload.size=512"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			root, err := config.Parse([]byte(streamBase + "sweep:\n  " + tt.sweep + "\n"))
			require.NoError(t, err)
			_, err = Expand(root, Options{})
			require.Error(t, err)
			var ce *config.Error
			assert.True(t, errors.As(err, &ce), "a user's error: %T", err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestSweptAcronymsCanonical: a swept value accepted in any case
// (fabric.Config.Normalize) is reported in its canonical spelling, and the
// point's seed does not depend on the case it was typed in.
func TestSweptAcronymsCanonical(t *testing.T) {
	lower := expand(t, streamBase+"sweep:\n  link.generation: [ndr, hdr]\n  link.width: [4X]\n")
	upper := expand(t, streamBase+"sweep:\n  link.generation: [NDR, HDR]\n  link.width: [4x]\n")
	assert.Equal(t, []string{
		`{"link.generation":"NDR","link.width":"4x"}`,
		`{"link.generation":"HDR","link.width":"4x"}`,
	}, designParams(t, lower))
	assert.Equal(t, designParams(t, upper), designParams(t, lower))
	for i := range lower.Designs {
		pl, err := lower.Point(lower.Designs[i], 0)
		require.NoError(t, err)
		pu, err := upper.Point(upper.Designs[i], 0)
		require.NoError(t, err)
		assert.Equal(t, pu.Seed, pl.Seed)
	}
}

func TestDeriveSeed(t *testing.T) {
	a := map[string]any{"hca.vl_buffer_bytes": 8192, "workload.size": 1024}
	b := map[string]any{"workload.size": 1024, "hca.vl_buffer_bytes": 8192}
	assert.Equal(t, DeriveSeed(7, a), DeriveSeed(7, b), "map order must not matter")
	assert.NotEqual(t, DeriveSeed(7, a), DeriveSeed(8, a), "the base seed must matter")
	c := map[string]any{"hca.vl_buffer_bytes": 8192, "workload.size": 4096}
	assert.NotEqual(t, DeriveSeed(7, a), DeriveSeed(7, c), "the point must matter")
	// 100 written as an int or produced as a whole float is one point.
	assert.Equal(t, DeriveSeed(1, map[string]any{"link.length_m": 100}), DeriveSeed(1, map[string]any{"link.length_m": 100.0}))
	// sim.* keys say how a point runs, not what it models: the same traffic
	// at every value.
	for _, k := range []string{"sim.partitions", "sim.threads", "sim.engine", "sim.per_cycle"} {
		with := map[string]any{"hca.vl_buffer_bytes": 8192, "workload.size": 1024, k: 2}
		assert.Equal(t, DeriveSeed(7, a), DeriveSeed(7, with), k)
	}
	// Model keys all count, adaptive routing too: a paired comparison is
	// what common random numbers (seed: {…, common: true}) are for.
	with := map[string]any{"hca.vl_buffer_bytes": 8192, "workload.size": 1024, "topology.adaptive_routing": true}
	assert.NotEqual(t, DeriveSeed(7, a), DeriveSeed(7, with))
}

// TestSweepPartitionsSameTraffic: a sweep over sim.partitions runs the same
// traffic at every point, so its points agree on every metric but the event
// count (fabric.TestPartitionedMatchesSerial holds single runs to that).
func TestSweepPartitionsSameTraffic(t *testing.T) {
	s := expand(t, `
topology: {kind: fat-tree-2, hosts: 64}
switch: {radix: 16}
workload: {kind: uniform, size: 1024, offered_load: 0.3, warmup_ns: 1000, measure_ns: 3000}
sweep:
  sim.partitions: [1, 2, 4]
`)
	outs := s.Run(context.Background(), allDesigns(s), 2, streamRunner, nil)
	require.Len(t, outs, 3)
	var first map[string]any
	for _, o := range outs {
		require.NoError(t, o.Err)
		m := o.Metrics
		delete(m, "events")
		if first == nil {
			first = m
			continue
		}
		assert.Equal(t, first, m, "sim.partitions=%v", o.Params["sim.partitions"])
	}
}

// streamRunner runs a point on the real engine; wall_s is wall-clock and
// dropped, as the CLI drops it from sweeps.
func streamRunner(p *Point) (map[string]any, error) {
	m, err := fabric.Run(p.Loaded, fabric.RunOptions{})
	delete(m, "wall_s")
	return m, err
}

func metricsJSON(t *testing.T, m map[string]any) string {
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

func allDesigns(s *Sweep) []int {
	ds := make([]int, len(s.Designs))
	for i := range ds {
		ds[i] = i
	}
	return ds
}

func TestSweepPointsEqualPointsRunAlone(t *testing.T) {
	s := expand(t, streamSweep)
	outs := s.Run(context.Background(), allDesigns(s), 2, streamRunner, nil)
	require.Len(t, outs, 6)
	for _, o := range outs {
		require.NoError(t, o.Err)
		// Alone, as the CLI would: the same config, every swept key pinned
		// with --set; one design, the same derived seed.
		var sets []string
		for k, v := range o.Params {
			sets = append(sets, fmt.Sprintf("%s=%v", k, v))
		}
		alone := expand(t, streamSweep, sets...)
		require.Len(t, alone.Designs, 1)
		a := alone.Run(context.Background(), []int{0}, 1, streamRunner, nil)
		require.NoError(t, a[0].Err)
		assert.Equal(t, o.Seed, a[0].Seed)
		assert.Equal(t, metricsJSON(t, o.Metrics), metricsJSON(t, a[0].Metrics), "point %v", o.Params)

		// Alone as a plain design point: the sweep: section ignored by
		// fabric.Load, the derived seed given with seed=.
		l, err := fabric.Load([]byte(streamSweep), append(sets, "seed="+strconv.FormatUint(o.Seed, 10)))
		require.NoError(t, err)
		m, err := streamRunner(&Point{Loaded: l})
		require.NoError(t, err)
		assert.Equal(t, metricsJSON(t, o.Metrics), metricsJSON(t, m), "point %v", o.Params)
	}
	// The sweep did sweep: the 8 KiB buffer limits the 4 KiB stream (fewer
	// packets delivered than with 64 KiB), so equal metrics above are not
	// equal because every point is the same.
	assert.NotEqual(t, outs[1].Metrics["packets_delivered"], outs[5].Metrics["packets_delivered"])
}

func TestResultsDoNotDependOnJobs(t *testing.T) {
	s := expand(t, streamSweep)
	var runs []string
	for _, jobs := range []int{1, 3, 8} {
		var b strings.Builder
		for _, o := range s.Run(context.Background(), allDesigns(s), jobs, streamRunner, nil) {
			require.NoError(t, o.Err)
			fmt.Fprintf(&b, "%d %v %d %s\n", o.Design, o.Params, o.Seed, metricsJSON(t, o.Metrics))
		}
		runs = append(runs, b.String())
	}
	assert.Equal(t, runs[0], runs[1])
	assert.Equal(t, runs[0], runs[2])
}

func TestFailingPointsDoNotStopTheOthers(t *testing.T) {
	s := expand(t, streamSweep)
	calls := 0
	run := func(p *Point) (map[string]any, error) {
		switch p.Loaded.Config.HCA.VLBufferBytes {
		case 8192:
			return nil, &fabric.UnsupportedError{Msg: "not in this build"}
		case 16384:
			if p.Loaded.Config.Workload.Size == 4096 {
				var m map[string]int
				m["boom"]++ // a bug: panics
			}
		}
		return streamRunner(p)
	}
	done := 0
	outs := s.Run(context.Background(), allDesigns(s), 2, run, func(Outcome) { done++; calls++ })
	require.Len(t, outs, 6)
	assert.Equal(t, 6, done, "progress counts every point")
	for i, o := range outs {
		assert.Equal(t, i, o.Design, "outcomes in design order")
		switch {
		case i < 2:
			var un *fabric.UnsupportedError
			assert.True(t, errors.As(o.Err, &un), "point %d: %v", i, o.Err)
		case i == 3:
			var pe *PanicError
			require.True(t, errors.As(o.Err, &pe), "point %d: %v", i, o.Err)
			assert.Contains(t, o.Err.Error(), "internal error")
			assert.Empty(t, o.Metrics)
		default:
			require.NoError(t, o.Err, "point %d", i)
			assert.NotEmpty(t, o.Metrics["goodput_gbps"])
		}
		assert.NotEmpty(t, o.Params, "a failed point still says which it is")
	}
}

func TestExpandValidInCombinationOnly(t *testing.T) {
	// link.mtu 1024 cannot carry the base's 4096-byte packets, but every
	// point of this sweep pairs it with 512-byte ones: valid.
	s := expand(t, streamBase+`
sweep:
  link.mtu: [1024, 4096]
  workload.size: [512]
`)
	assert.Len(t, s.Designs, 2)
}
