package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/sweep"
)

// TestShippedConfigsLoad: every embedded config (design points, sweeps,
// benchmarks, examples) decodes strictly and every design point of its
// sweep builds a valid configuration, so a shipped file cannot rot
// unnoticed. Running them is left to the tests that need their results.
func TestShippedConfigsLoad(t *testing.T) {
	names := configs.Names()
	require.NotEmpty(t, names)
	designs := map[string]int{}
	for _, name := range names {
		data, ok := configs.Lookup(name)
		require.True(t, ok, name)
		l, err := fabric.Load(data, nil)
		require.NoError(t, err, name)
		if !sweep.Has(l.Node) {
			designs[name] = 1
			continue
		}
		sw, err := sweep.Expand(l.Node, sweep.Options{})
		require.NoError(t, err, name)
		var probes []float64 // the search axis's two ends, if the sweep searches
		if sw.Search != nil {
			probes = []float64{sw.Search.Search.From, sw.Search.Search.To}
		} else {
			probes = []float64{0}
		}
		for _, d := range sw.Designs {
			for _, x := range probes {
				p, err := sw.Point(d, x)
				require.NoError(t, err, "%s design %d at %g", name, d.Index, x)
				require.NoError(t, p.Loaded.Config.Validate(), "%s design %d at %g", name, d.Index, x)
			}
		}
		designs[name] = len(sw.Designs)
	}
	// The sizes the docs quote.
	assert.Equal(t, 16, designs["ndr.yaml"])
	assert.Equal(t, 100, designs["examples/ndr-sweep-100.yaml"])
	// 5 replicas × 2 buffers × 4 loads: a design of the sweep is one point.
	assert.Equal(t, 40, designs["examples/latency-replicas.yaml"])
}
