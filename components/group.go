package components

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hcasim/hcasim/ib"
)

// Group runs one model split into partitions, each a Sim on its own
// hcasim engine, in parallel: conservative, window-synchronous parallel
// discrete-event simulation.
//
// Partitions interact only by events posted across them (Sim.Post), and
// every such event lies at least the lookahead after the moment it was
// posted: in a fabric, a packet or flow-control packet takes at least the
// cable's latency to reach the other end. A window runs every partition
// from the earliest queued event T up to, not including, T + lookahead; no
// event of the window can be caused by another partition's event of the
// same window, so the partitions run it independently, on up to one
// goroutine each (SetThreads).
// At the window's end the posted events are delivered, destination by
// destination and source by source in partition order, then the barrier
// functions run (alone), then the next window starts.
//
// The run is deterministic: each partition handles its own events in its
// engine's order, and what it receives, and when, does not depend on how
// the goroutines were scheduled. It does depend on the partitioning: an
// event received from another partition takes its place among same-time
// events when it is delivered, not when it was posted, so ties between
// same-picosecond events can resolve differently from a serial run (as
// they do between the hcasim and Akita engines); docs/performance.md.
type Group struct {
	sims      []*Sim
	engines   []*Engine
	lookahead ib.PS
	windowEnd ib.PS
	windows   uint64
	barrier   []func()
	threads   int // goroutines that run the partitions (SetThreads); 0 = default

	// The window barrier: the coordinator bumps epoch to start a window,
	// each worker counts pending down when its partition has run it. Both
	// sides spin (yielding now and then) rather than sleep: a window is a
	// few microseconds of work, and waking a sleeping thread costs tens of
	// microseconds on a virtual machine.
	epoch   atomic.Uint64
	pending atomic.Int64
	quit    atomic.Bool
	errs    []error
}

// NewGroup returns n partitions on hcasim engines; events posted across
// partitions must lie at least lookahead ahead.
func NewGroup(n int, lookahead ib.PS) *Group {
	if n < 1 {
		panic(fmt.Sprintf("sim: group of %d partitions", n))
	}
	if lookahead <= 0 {
		panic(fmt.Sprintf("sim: group lookahead %d ps must be positive", lookahead))
	}
	g := &Group{lookahead: lookahead, errs: make([]error, n)}
	for k := 0; k < n; k++ {
		e := NewEngine()
		s := &Sim{Engine: e, fast: e, part: k, parts: n, group: g, outbox: make([][]*Event, n), lastAt: -1}
		g.sims = append(g.sims, s)
		g.engines = append(g.engines, e)
	}
	return g
}

// SetThreads sets how many goroutines run the partitions, 1 to the
// partition count; thread j runs partitions j, j+t, j+2t, ... one after
// another in each window. The default is one per partition up to
// GOMAXPROCS. Results do not depend on it.
func (g *Group) SetThreads(t int) {
	if t < 1 || t > len(g.sims) {
		panic(fmt.Sprintf("sim: %d threads for %d partitions", t, len(g.sims)))
	}
	g.threads = t
}

// Threads returns how many goroutines Run uses.
func (g *Group) Threads() int {
	if g.threads > 0 {
		return g.threads
	}
	return min(len(g.sims), runtime.GOMAXPROCS(0))
}

// Sims returns the partitions' Sims, in partition order.
func (g *Group) Sims() []*Sim { return g.sims }

// Lookahead returns the window length.
func (g *Group) Lookahead() ib.PS { return g.lookahead }

// Windows returns the number of windows run.
func (g *Group) Windows() uint64 { return g.windows }

// OnBarrier registers f to run between windows, when no partition runs and
// every posted event has been delivered.
func (g *Group) OnBarrier(f func()) { g.barrier = append(g.barrier, f) }

// Now returns the latest time any partition reached.
func (g *Group) Now() ib.PS {
	var t ib.PS
	for _, s := range g.sims {
		t = max(t, s.now)
	}
	return t
}

// Progress returns the simulated time the partitions had reached a moment
// ago (the latest of them); safe to call from another goroutine while the
// group runs (Sim.Progress).
func (g *Group) Progress() ib.PS {
	var t ib.PS
	for _, s := range g.sims {
		t = max(t, s.Progress())
	}
	return t
}

// Events returns the events handled by every partition.
func (g *Group) Events() uint64 {
	var n uint64
	for _, s := range g.sims {
		n += s.events
	}
	return n
}

// Stop ends every partition. Call it between windows (from a barrier
// function) or before Run: a partition's event must not stop the others
// while they run the window (Sim.Stop ends its own partition).
func (g *Group) Stop() {
	for _, s := range g.sims {
		s.Stop()
	}
}

// StopAt sets every partition's time limit.
func (g *Group) StopAt(t ib.PS) {
	for _, s := range g.sims {
		s.StopAt(t)
	}
}

// Run runs windows until no partition has an event left to run, then calls
// each partition's end functions (Sim.OnEnd) in partition order.
func (g *Group) Run() error {
	threads := g.Threads()
	var wg sync.WaitGroup
	g.quit.Store(false)
	start := g.epoch.Load()
	for j := 1; j < threads; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.worker(j, threads, start)
		}()
	}
	defer func() {
		g.quit.Store(true)
		g.epoch.Add(1)
		wg.Wait()
	}()
	for {
		g.deliver()
		for _, f := range g.barrier {
			f()
		}
		t, ok := g.earliest()
		if !ok {
			break
		}
		g.windowEnd = t + g.lookahead
		if t > math.MaxInt64-g.lookahead {
			g.windowEnd = math.MaxInt64
		}
		g.windows++
		g.pending.Store(int64(threads - 1))
		g.epoch.Add(1) // publishes windowEnd and the delivered events
		g.runShare(0, threads)
		for spin := 0; g.pending.Load() != 0; spin++ {
			if spin&1023 == 1023 {
				runtime.Gosched()
			}
		}
		for _, err := range g.errs {
			if p, ok := err.(partitionPanic); ok {
				panic(p.Error())
			}
			if err != nil {
				return err
			}
		}
	}
	for _, s := range g.sims {
		s.published.Store(int64(s.now))
		for _, f := range s.endHooks {
			f(s.now)
		}
	}
	return nil
}

// worker runs thread j's partitions in every window after epoch seen.
func (g *Group) worker(j, threads int, seen uint64) {
	for {
		for spin := 0; g.epoch.Load() == seen; spin++ {
			if spin&1023 == 1023 {
				runtime.Gosched()
			}
		}
		seen = g.epoch.Load()
		if g.quit.Load() {
			return
		}
		g.runShare(j, threads)
		g.pending.Add(-1)
	}
}

// runShare runs thread j's partitions (j, j+threads, ...) through the
// window, one after the other: with more partitions than threads, each
// partition's part of the fabric is touched while it is in the caches.
func (g *Group) runShare(j, threads int) {
	for k := j; k < len(g.sims); k += threads {
		g.errs[k] = g.runWindow(k)
	}
}

// runWindow runs partition k up to the window's end. A panic (a model bug)
// becomes the window's error here and is raised again, naming the
// partition, on the coordinator's goroutine, where the caller's recover can
// see it.
func (g *Group) runWindow(k int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = partitionPanic{k, r}
		}
	}()
	return g.engines[k].RunBefore(g.windowEnd)
}

// partitionPanic carries a panic out of a worker partition.
type partitionPanic struct {
	part  int
	value any
}

func (p partitionPanic) Error() string { return fmt.Sprintf("partition %d: %v", p.part, p.value) }

// earliest returns the earliest event any running partition holds. A
// stopped partition, or one whose next event lies past its time limit,
// runs no more: its queue is dropped.
func (g *Group) earliest() (ib.PS, bool) {
	var t ib.PS = math.MaxInt64
	found := false
	for k, s := range g.sims {
		if s.stopped {
			continue
		}
		at, ok := g.engines[k].NextAt()
		if !ok {
			continue
		}
		if s.stopAt > 0 && at > s.stopAt {
			s.stopped = true
			continue
		}
		found = true
		t = min(t, at)
	}
	return t, found
}

// deliver hands each partition the events posted to it, in source order.
func (g *Group) deliver() {
	for dst := range g.sims {
		for _, src := range g.sims {
			box := src.outbox[dst]
			for i, ev := range box {
				g.engines[dst].Deliver(ev)
				box[i] = nil
			}
			src.outbox[dst] = box[:0]
		}
	}
}
