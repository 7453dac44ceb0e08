package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/ib"
)

// showProgress reports whether progress bars go to stderr: a terminal, and
// no --quiet (a log file or a Slurm output gets the results only).
func showProgress(stderr io.Writer, quiet bool) bool {
	fh, ok := stderr.(*os.File)
	return !quiet && ok && term.IsTerminal(int(fh.Fd()))
}

// progress is the sweep's progress bar on stderr, or nothing when --quiet
// or when stderr is not a terminal (a log file or a Slurm output gets the
// one-line summary instead).
type progress struct{ bar *progressbar.ProgressBar }

func newProgress(stderr io.Writer, quiet bool, total int) *progress {
	if !showProgress(stderr, quiet) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("sweep"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func (p *progress) add() {
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

// abandon leaves the bar where it stopped (an interrupted sweep): it
// draws no more, and its line is cleared for the summary after it.
func (p *progress) abandon() {
	if p.bar != nil {
		_ = p.bar.Exit()
		_ = p.bar.Clear()
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// runProgress shows one design point's simulated time on stderr while it
// runs: a bar to the end of the measurement window when the workload runs
// to a time, else a spinner. It reads the run's published time
// (fabric.Simulation.Progress) from its own goroutine, so it changes no
// result.
type runProgress struct {
	w     io.Writer
	end   ib.PS // the measurement window's end, 0 = unknown
	every time.Duration

	view *fabric.Simulation
	bar  *progressbar.ProgressBar
	done chan struct{}
	wg   sync.WaitGroup

	// mu orders start, on the run's goroutine, with abandon, on Main's:
	// a run abandoned on a signal may still be starting.
	mu        sync.Mutex
	abandoned bool
}

func newRunProgress(w io.Writer, cfg *fabric.Config, every time.Duration) *runProgress {
	p := &runProgress{w: w, every: every}
	if end, ok := cfg.MeasureEnd(); ok && end > 0 {
		p.end = end
	}
	return p
}

// start begins the display once the simulation is built
// (fabric.RunOptions.Started).
func (p *runProgress) start(v *fabric.Simulation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.abandoned {
		return
	}
	total := int64(-1) // a spinner
	if p.end > 0 {
		total = int64(p.end / 1000) // ns
	}
	p.view = v
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetPredictTime(p.end > 0),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)
	p.done = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.update()
			}
		}
	}()
}

// update moves the display to the run's published time.
func (p *runProgress) update() {
	now := p.view.Progress()
	// Describe draws the bar: set its value first.
	if p.end > 0 {
		_ = p.bar.Set64(min(int64(now/1000), int64(p.end/1000)))
		p.bar.Describe(fmt.Sprintf("simulated %.1f of %.1f µs", float64(now)/1e6, float64(p.end)/1e6))
		return
	}
	_ = p.bar.Set64(int64(now / 1000))
	p.bar.Describe(fmt.Sprintf("simulated %.1f µs", float64(now)/1e6))
}

// abandon ends the display of a run that was stopped: the bar is cleared,
// not filled.
func (p *runProgress) abandon() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.abandoned = true
	if p.bar == nil {
		return
	}
	close(p.done)
	p.wg.Wait()
	_ = p.bar.Exit()
	_ = p.bar.Clear()
}

// stop ends the display after the run (a no-op if it never started: the
// build failed).
func (p *runProgress) stop() {
	if p.bar == nil {
		return
	}
	close(p.done)
	p.wg.Wait()
	p.update()
	_ = p.bar.Finish()
}
