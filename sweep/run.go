package sweep

import (
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

// Run runs the given designs (indices into s.Designs, ascending) on jobs
// workers and returns their outcomes in design order; a knee search's
// points come in ascending order of the searched key. A failed point is an
// Outcome with Err; the others still run. done, if set, is called after
// each point, from one goroutine at a time.
func (s *Sweep) Run(designs []int, jobs int, run Runner, done func(Outcome)) []Outcome {
	if jobs < 1 {
		panic(fmt.Sprintf("sweep: Run with jobs %d", jobs))
	}
	results := make([][]Outcome, len(designs))
	var mu sync.Mutex
	notify := func(o Outcome) {
		if done != nil {
			mu.Lock()
			done(o)
			mu.Unlock()
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, len(designs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = s.runDesign(s.Designs[designs[i]], run, notify)
			}
		}()
	}
	for i := range designs {
		work <- i
	}
	close(work)
	wg.Wait()
	var out []Outcome
	for _, r := range results {
		out = append(out, r...)
	}
	return out
}

func (s *Sweep) runDesign(d Design, run Runner, notify func(Outcome)) []Outcome {
	if s.Search == nil {
		o := s.runPoint(d, 0, run)
		notify(o)
		return []Outcome{o}
	}
	var outs []Outcome
	key := s.Search.Key
	_, _ = s.Search.Search.Bisect(func(x float64) (bool, error) {
		o := s.runPoint(d, x, run)
		if o.Err == nil {
			if _, err := Saturated(o.Metrics, x, s.Search.Search.Epsilon); err != nil {
				o.Err = errorf("sweep.%s: search: knee: %s", key, err)
				o.Metrics = map[string]any{}
			}
		}
		outs = append(outs, o)
		notify(o)
		if o.Err != nil {
			return false, o.Err
		}
		sat, _ := Saturated(o.Metrics, x, s.Search.Search.Epsilon)
		return sat, nil
	})
	sort.SliceStable(outs, func(i, j int) bool {
		xi, _ := report.Number(outs[i].Params[key])
		xj, _ := report.Number(outs[j].Params[key])
		return xi < xj
	})
	return outs
}

// runPoint builds and runs one point, turning a panic into its error.
func (s *Sweep) runPoint(d Design, x float64, run Runner) (o Outcome) {
	o.Design = d.Index
	p, err := s.Point(d, x)
	o.Params = p.Params
	o.Metrics = map[string]any{}
	if err != nil {
		o.Err = err
		return o
	}
	o.Seed = p.Seed
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
