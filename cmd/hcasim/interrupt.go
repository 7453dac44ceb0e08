package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/fabric"
)

// stopRequest is a run's request to stop: the first SIGINT or SIGTERM
// (or a test, through currentStop). A sweep starts no more points and
// writes what it finished; a single run stops its engine when it writes
// a trace, waveform or capture (stopHook), so that the files are closed
// whole, and otherwise abandons the run.
type stopRequest struct {
	ctx    context.Context
	cancel context.CancelFunc
	sig    atomic.Pointer[os.Signal]
}

func newStopRequest() *stopRequest {
	r := &stopRequest{}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// request records sig and cancels ctx; it reports whether this was the
// first request.
func (r *stopRequest) request(sig os.Signal) bool {
	if !r.sig.CompareAndSwap(nil, &sig) {
		return false
	}
	r.cancel()
	return true
}

// signal returns the signal that asked the run to stop, nil while none has.
func (r *stopRequest) signal() os.Signal {
	if p := r.sig.Load(); p != nil {
		return *p
	}
	return nil
}

// currentStop is the stop request of the run in progress: tests ask it to
// stop as a signal would.
var currentStop atomic.Pointer[stopRequest]

// signalExitCode is what a shell expects of a process a signal ended:
// 128 + its number (130 for SIGINT, 143 for SIGTERM).
func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// signalName is SIGINT or SIGTERM.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// watchSignals relays SIGINT and SIGTERM to r until the returned function
// is called. The first asks the run to stop; a second ends the process at
// once (exit 130 or 143, one line on stderr, no stack trace), writing
// nothing more.
func watchSignals(r *stopRequest, stderr io.Writer) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-quit:
				return
			case sig := <-ch:
				if r.request(sig) {
					continue
				}
				clear := ""
				if showProgress(stderr, false) {
					clear = "\r\x1b[K" // a progress bar's line, on a terminal
				}
				fmt.Fprintf(stderr, "%shcasim: %s again: exiting at once, writing nothing more\n", clear, signalName(sig))
				os.Exit(signalExitCode(sig))
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(quit)
		wg.Wait()
	}
}

// interruptedError is a run a signal stopped: runMain prints msg after
// the files are written and exits with the signal's code.
type interruptedError struct {
	sig os.Signal
	msg string
}

func (e *interruptedError) Error() string { return e.msg }

// stopHook stops a single run's engine at the first trace event after a
// stop was requested. It runs on the engine's goroutine (a partitioned
// run's: between windows, where the checkers stop it too), the only place
// Simulation.Stop may be called, so the run returns normally and its
// trace, waveform and capture are closed whole, up to where it stopped.
type stopHook struct {
	req     *stopRequest
	view    *fabric.Simulation
	stopped bool
}

// Func implements sim.Hook.
func (h *stopHook) Func(sim.HookCtx) {
	if !h.stopped && h.req.signal() != nil {
		h.stopped = true
		h.view.Stop()
	}
}

// buildID identifies this executable: the version and the start of the
// SHA-256 of its file. An interrupted sweep's results record it, and
// --resume refuses results another build wrote: two builds may compute a
// point differently, and a resumed run must write what one build's
// uninterrupted run writes.
var buildID = sync.OnceValue(func() string {
	sum := "unknown"
	if exe, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(exe); err == nil {
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:6])
		}
	}
	return Version() + " sha256:" + sum
})

// shellQuote quotes an argument for a POSIX shell when it needs it.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// resumeCommand is the command that continues an interrupted sweep: this
// one's arguments with --resume (once).
func resumeCommand(args []string) string {
	parts := []string{"hcasim"}
	has := false
	for _, a := range args {
		if a == "--resume" || a == "-resume" {
			has = true
		}
		parts = append(parts, shellQuote(a))
	}
	if !has {
		parts = append(parts, "--resume")
	}
	return strings.Join(parts, " ")
}
