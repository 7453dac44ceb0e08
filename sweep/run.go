package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/hcasim/hcasim/report"
)

// Runner runs one design point on its own engine and returns its metrics.
type Runner func(p *Point) (map[string]any, error)

// Outcome is what one point produced.
type Outcome struct {
	// Design is the index of the design the point belongs to.
	Design int
	// Params are the point's swept keys and values.
	Params map[string]any
	// Seed is the point's derived seed (0 when the point did not build).
	Seed uint64
	// Metrics are the runner's metrics; empty when Err is set.
	Metrics map[string]any
	// Err is the point's failure: a *config.Error or
	// *fabric.UnsupportedError is the user's, anything else (a
	// *PanicError) is a bug.
	Err error
}

// PanicError is a point whose run panicked: a bug, reported as the point's
// error so that every other point still runs.
type PanicError struct {
	Value any
	Stack string
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error (a bug, please report it): %v", e.Value)
}

// PointsPerDesign returns how many points a design runs: 1 on a grid; on a
// knee search, the bisection's probes (both ends, then one per halving of
// the bracket down to the tolerance) — an upper bound, as a search that
// finds no knee inside the range stops after its ends.
func (s *Sweep) PointsPerDesign() int {
	if s.Search == nil {
		return 1
	}
	k := s.Search.Search
	// round12, as Bisect compares widths: (0.9 − 0.3) / 0.15 is
	// 4.000000000000001 in float64, whose ⌈log₂⌉ would be 3, not 2.
	return 2 + int(math.Ceil(math.Log2(round12((k.To-k.From)/k.Tolerance))))
}

// ErrNotRun is the error of a point an interrupted sweep did not finish:
// never started, or abandoned while it ran (a point cannot be stopped
// part-way and still mean anything). Its row in the results says
// NotRunText.
var ErrNotRun = errors.New(NotRunText)

// NotRunText is the error an interrupted sweep writes in the rows of the
// points it did not finish; --resume runs them.
const NotRunText = "interrupted: not run"

// Run runs the given designs (indices into s.Designs, ascending) on jobs
// workers and returns their outcomes in design order; a knee search's
// points come in ascending order of the searched key. A failed point is an
// Outcome with Err; the others still run. done, if set, is called after
// each point, from one goroutine at a time.
//
// When ctx is cancelled, Run starts no more points and returns at once,
// without waiting for the points running (each runs to its end on its own
// goroutine, and what it returns is dropped): every finished point is
// returned as it would have been, and a design not finished adds one
// Outcome with Err ErrNotRun — a grid design its point, a knee search the
// probe it was running or would have run next, after its finished probes.
// done is not called after Run returns.
func (s *Sweep) Run(ctx context.Context, designs []int, jobs int, run Runner, done func(Outcome)) []Outcome {
	if jobs < 1 {
		panic(fmt.Sprintf("sweep: Run with jobs %d", jobs))
	}
	st := &runState{
		outs:     make([][]Outcome, len(designs)),
		pending:  make([]*Outcome, len(designs)),
		complete: make([]bool, len(designs)),
		done:     done,
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, len(designs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				s.runDesign(ctx, st, i, s.Designs[designs[i]], run)
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
dispatch:
	for i := range designs {
		select {
		case work <- i:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	select {
	case <-finished:
	case <-ctx.Done():
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	var out []Outcome
	for i, got := range st.outs {
		if !st.complete[i] {
			// Interrupted: the probe it was running, or the point it
			// would have run first.
			nr := st.pending[i]
			if nr == nil {
				// Between two points (or before the first): the one it
				// would have run next, if any.
				if x, more := s.nextProbe(got); more {
					o := s.notRunAt(s.Designs[designs[i]], x)
					nr = &o
				}
			}
			got = append([]Outcome{}, got...)
			if nr != nil {
				got = append(got, *nr)
			}
			s.sortProbes(got)
		}
		out = append(out, got...)
	}
	return out
}

// runState is what Run's workers share: each design's finished points,
// the point it is running, whether it is done. Once closed (Run returned)
// an abandoned point's outcome is dropped.
type runState struct {
	mu       sync.Mutex
	outs     [][]Outcome
	pending  []*Outcome // the point a design is running, as a not-run Outcome
	complete []bool
	closed   bool
	done     func(Outcome)
}

// started records that design i is running the point with these params.
func (st *runState) started(i int, o Outcome) {
	st.mu.Lock()
	defer st.mu.Unlock()
	o.Metrics, o.Err = map[string]any{}, ErrNotRun
	st.pending[i] = &o
}

// finished records a point of design i, then tells done.
func (st *runState) finished(i int, o Outcome) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	st.outs[i] = append(st.outs[i], o)
	st.pending[i] = nil
	if st.done != nil {
		st.done(o)
	}
}

// designDone marks design i complete, its points in their final order.
func (st *runState) designDone(i int, sorted []Outcome) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	st.outs[i] = sorted
	st.complete[i] = true
}

// notRunAt is the Outcome of design d's point at searchValue (a knee
// search's load; 0 on a grid), not run.
func (s *Sweep) notRunAt(d Design, searchValue float64) Outcome {
	p, _ := s.Point(d, searchValue)
	return Outcome{Design: d.Index, Params: p.Params, Seed: p.Seed, Metrics: map[string]any{}, Err: ErrNotRun}
}

// nextProbe returns the point a design whose finished points are outs
// runs next — on a grid its one point, if not yet run; in a knee search
// the probe the bisection takes after them, found by replaying it on
// their outcomes — and whether there is one (a search that outs already
// ends has none).
func (s *Sweep) nextProbe(outs []Outcome) (float64, bool) {
	if s.Search == nil {
		return 0, len(outs) == 0
	}
	k := s.Search.Search
	byLoad := map[float64]Outcome{}
	for _, o := range outs {
		x, _ := report.Number(o.Params[s.Search.Key])
		byLoad[x] = o
	}
	var next float64
	more := false
	_, _ = k.Bisect(func(x float64) (bool, error) {
		o, ok := byLoad[x]
		if !ok {
			next, more = x, true
			return false, ErrNotRun
		}
		if o.Err != nil {
			return false, o.Err
		}
		return Saturated(o.Metrics, x, k.Epsilon)
	})
	return next, more
}

// sortProbes puts a knee search's probes in ascending order of the
// searched key (stable: a grid design's one point stays).
func (s *Sweep) sortProbes(outs []Outcome) {
	if s.Search == nil {
		return
	}
	key := s.Search.Key
	sort.SliceStable(outs, func(i, j int) bool {
		xi, _ := report.Number(outs[i].Params[key])
		xj, _ := report.Number(outs[j].Params[key])
		return xi < xj
	})
}

// runDesign runs design d (slot i of Run's designs), recording each point
// in st as it finishes; it starts no point once ctx is cancelled.
func (s *Sweep) runDesign(ctx context.Context, st *runState, i int, d Design, run Runner) {
	if s.Search == nil {
		if ctx.Err() != nil {
			return
		}
		o := s.runPoint(d, 0, run, func(o Outcome) { st.started(i, o) })
		st.finished(i, o)
		st.designDone(i, []Outcome{o})
		return
	}
	var outs []Outcome
	key := s.Search.Key
	_, err := s.Search.Search.Bisect(func(x float64) (bool, error) {
		if ctx.Err() != nil {
			st.started(i, s.notRunAt(d, x))
			return false, ErrNotRun
		}
		o := s.runPoint(d, x, run, func(o Outcome) { st.started(i, o) })
		if o.Err == nil {
			if _, err := Saturated(o.Metrics, x, s.Search.Search.Epsilon); err != nil {
				o.Err = errorf("sweep.%s: search: knee: %s", key, err)
				o.Metrics = map[string]any{}
			}
		}
		outs = append(outs, o)
		st.finished(i, o)
		if o.Err != nil {
			return false, o.Err
		}
		sat, _ := Saturated(o.Metrics, x, s.Search.Search.Epsilon)
		return sat, nil
	})
	if errors.Is(err, ErrNotRun) {
		return
	}
	s.sortProbes(outs)
	st.designDone(i, outs)
}

// runPoint builds and runs one point, turning a panic into its error.
// started, if set, is told the point's params and seed before it runs.
func (s *Sweep) runPoint(d Design, x float64, run Runner, started func(Outcome)) (o Outcome) {
	o.Design = d.Index
	p, err := s.Point(d, x)
	o.Params = p.Params
	o.Metrics = map[string]any{}
	if err != nil {
		o.Err = err
		return o
	}
	o.Seed = p.Seed
	if started != nil {
		started(o)
	}
	defer func() {
		if r := recover(); r != nil {
			o.Metrics = map[string]any{}
			o.Err = &PanicError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	m, err := run(p)
	if err != nil {
		o.Err = err
		return o
	}
	if m == nil {
		m = map[string]any{}
	}
	o.Metrics = m
	return o
}
