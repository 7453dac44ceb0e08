package sweep

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// interruptingRunner runs nothing: a point's metric is its buffer size, so
// that an outcome shows which point made it. The (n+1)-th call cancels the
// sweep and then blocks until release is closed — the point Run abandons —
// so the test decides exactly what finished, whatever the scheduling.
func interruptingRunner(n int, cancel func(), release <-chan struct{}) (Runner, *int) {
	var mu sync.Mutex
	calls := 0
	return func(p *Point) (map[string]any, error) {
		mu.Lock()
		calls++
		c := calls
		mu.Unlock()
		if c == n+1 {
			cancel()
			<-release
		}
		return map[string]any{"buffer": p.Loaded.Config.HCA.VLBufferBytes}, nil
	}, &calls
}

// TestRunCancelledKeepsFinishedPoints: with one worker the designs run in
// point order (keys sorted, the first, hca.vl_buffer_bytes, slowest), so cancelling during
// the (N+1)-th point leaves exactly the first N finished, in order, and
// every later point "interrupted: not run" with its params.
func TestRunCancelledKeepsFinishedPoints(t *testing.T) {
	s := expand(t, streamSweep) // 2 sizes × 3 buffers
	// Point order: buffer 8192 with sizes 1024 and 4096, then 16384 with
	// both, then 65536.
	wantBuf := []int{8192, 8192, 16384, 16384, 65536, 65536}
	for _, n := range []int{0, 2, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			release := make(chan struct{})
			defer close(release)
			run, _ := interruptingRunner(n, cancel, release)
			done := 0
			outs := s.Run(ctx, allDesigns(s), 1, run, func(Outcome) { done++ })
			require.Len(t, outs, 6, "every point has its row, run or not")
			assert.Equal(t, n, done, "done is told of the finished points only")
			for i, o := range outs {
				assert.Equal(t, i, o.Design)
				assert.Equal(t, wantBuf[i], o.Params["hca.vl_buffer_bytes"], "point %d's params", i)
				if i < n {
					require.NoError(t, o.Err, "point %d finished before the interrupt", i)
					assert.Equal(t, wantBuf[i], o.Metrics["buffer"])
					continue
				}
				assert.ErrorIs(t, o.Err, ErrNotRun, "point %d", i)
				assert.Empty(t, o.Metrics)
				assert.NotZero(t, o.Seed, "a not-run point keeps its seed")
			}
		})
	}
}

// TestRunCancelledKneeSearch: a knee search interrupted during its third
// probe keeps the two finished ones (both ends) and marks the probe it was
// running as not run, in ascending load order; the other design, which
// never started, gets its first probe (from) as not run.
func TestRunCancelledKneeSearch(t *testing.T) {
	s := expand(t, streamBase+`
sweep:
  hca.vl_buffer_bytes: [8192, 65536]
  workload.offered_load: {search: knee, from: 0.1, to: 1.0, tolerance: 0.05}
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	var mu sync.Mutex
	calls := 0
	run := func(p *Point) (map[string]any, error) {
		mu.Lock()
		calls++
		c := calls
		mu.Unlock()
		if c == 3 {
			cancel()
			<-release
		}
		// Capacity 0.4: 0.1 unsaturated, 1.0 saturated, so the third
		// probe is the bracket's middle, round12((0.1 + 1.0) / 2) = 0.55.
		return capped(0.4)(p.Loaded.Config.Workload.OfferedLoad), nil
	}
	outs := s.Run(ctx, []int{0, 1}, 1, run, nil)
	type row struct {
		design int
		load   any
		notRun bool
	}
	var got []row
	for _, o := range outs {
		got = append(got, row{o.Design, o.Params["workload.offered_load"], o.Err == ErrNotRun})
	}
	// The expanded params keep the config value's type: to = 1.0 is the int 1.
	assert.Equal(t, []row{{0, 0.1, false}, {0, 0.55, true}, {0, 1, false}, {1, 0.1, true}}, got)
}

// TestRunUncancelledUnchanged: a context never cancelled gives what Run
// gave before it took one — every point, none marked not run.
func TestRunUncancelledUnchanged(t *testing.T) {
	s := expand(t, streamSweep)
	run, calls := interruptingRunner(-2, nil, nil)
	outs := s.Run(context.Background(), allDesigns(s), 2, run, nil)
	require.Len(t, outs, 6)
	assert.Equal(t, 6, *calls)
	for _, o := range outs {
		assert.NoError(t, o.Err)
	}
}

// TestRunCancelledBetweenProbes: cancelled from done after the search's
// second probe — between probes, not during one — the search starts no
// third probe, and the probe it would have run next (0.55, the middle of
// [0.1, 1.0]) is the one marked not run, however far the worker got
// before Run took its snapshot (Run replays the bisection on the finished
// probes to find it).
func TestRunCancelledBetweenProbes(t *testing.T) {
	s := expand(t, streamBase+`
sweep:
  workload.offered_load: {search: knee, from: 0.1, to: 1.0, tolerance: 0.05}
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls, done := 0, 0
	run := func(p *Point) (map[string]any, error) {
		calls++
		return capped(0.4)(p.Loaded.Config.Workload.OfferedLoad), nil
	}
	outs := s.Run(ctx, []int{0}, 1, run, func(Outcome) {
		if done++; done == 2 {
			cancel()
		}
	})
	assert.Equal(t, 2, calls, "no probe starts after the cancel")
	var loads []any
	for _, o := range outs {
		loads = append(loads, o.Params["workload.offered_load"])
	}
	assert.Equal(t, []any{0.1, 0.55, 1}, loads)
	require.Len(t, outs, 3)
	assert.ErrorIs(t, outs[1].Err, ErrNotRun)
}
