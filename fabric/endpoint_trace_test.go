package fabric

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// TestEndpointTraces: a traced packet endpoint announces every packet it
// injects and every packet delivered to it (the endpoint tests a traced
// flag that AcceptHook sets rather than reading its hook list). In a run
// that drains, every injected packet is delivered once, so the two counts
// are equal, and uniform traffic at 30 % for 2 µs injects some.
func TestEndpointTraces(t *testing.T) {
	l, err := Load(nil, []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=4",
		"workload.kind=uniform", "workload.offered_load=0.3", "workload.warmup_ns=0", "workload.measure_ns=2000"})
	require.NoError(t, err)
	var c kindCount
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		for _, b := range s.Blocks {
			b.AcceptHook(&c)
		}
	}})
	require.NoError(t, err)
	require.Equal(t, true, m["drain_complete"])
	assert.Positive(t, c.inject)
	assert.Equal(t, c.inject, c.deliver)
}

type kindCount struct{ inject, deliver int }

func (c *kindCount) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	switch ctx.Item.(*components.TraceEvent).Kind {
	case components.TraceInject:
		c.inject++
	case components.TraceDeliver:
		c.deliver++
	}
}
