package fabric

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/verif"
)

// recordedRun is a run with a trace recorder and checkers attached
// (runRecorded).
type recordedRun struct {
	M       map[string]any // the metrics, less wall_s
	Trace   string         // the recorded trace
	Settled bool           // the run drained and settled
	Err     error          // the checkers' verdict
}

// runRecorded loads sets (sim.check on), records every block's trace and
// attaches the checkers cfg gives for the built fabric (a violation stops
// the run), mutate (when not nil) changing the fabric first.
func runRecorded(t *testing.T, sets []string, cfg func(*Simulation) verif.CheckConfig, mutate func(*Simulation)) recordedRun {
	t.Helper()
	l, err := Load(nil, append([]string{"sim.check=true"}, sets...))
	require.NoError(t, err)
	var buf bytes.Buffer
	rec := verif.NewRecorder(&buf, verif.Header{Version: verif.TraceVersion, Config: strings.Repeat("0", 64)}, verif.Filter{})
	var chk *verif.Checkers
	var view *Simulation
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		view = s
		verif.AttachHook(rec, s.Blocks...)
		cc := cfg(s)
		cc.OnViolation = func(*verif.Violation) { s.Stop() }
		chk = verif.AttachCheckers(cc, s.Blocks...)
		if mutate != nil {
			mutate(s)
		}
	}})
	require.NoError(t, err)
	require.NoError(t, rec.Flush())
	chk.Finish(view.Now(), view.Settled)
	delete(m, "wall_s")
	return recordedRun{M: m, Trace: buf.String(), Settled: view.Settled, Err: chk.Err()}
}
