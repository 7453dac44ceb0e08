package sweep

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/config"
)

// TestReplicasAreTheBaseSeedAndTheNext: seed: {replicas: N} runs the seeds
// base, base + 1, …, base + N − 1 (base: the config's seed), as a list of
// them would, and is the slowest or fastest axis by its key like any other.
func TestReplicasAreTheBaseSeedAndTheNext(t *testing.T) {
	s := expand(t, streamBase+"sweep:\n  seed: {replicas: 3}\n  workload.size: [1024, 4096]\n")
	assert.Equal(t, []string{
		`{"seed":7,"workload.size":1024}`, `{"seed":7,"workload.size":4096}`,
		`{"seed":8,"workload.size":1024}`, `{"seed":8,"workload.size":4096}`,
		`{"seed":9,"workload.size":1024}`, `{"seed":9,"workload.size":4096}`,
	}, designParams(t, s))
	list := expand(t, streamBase+"sweep:\n  seed: [7, 8, 9]\n  workload.size: [1024, 4096]\n")
	for i := range s.Designs {
		a, err := s.Point(s.Designs[i], 0)
		require.NoError(t, err)
		b, err := list.Point(list.Designs[i], 0)
		require.NoError(t, err)
		assert.Equal(t, b.Seed, a.Seed, "replicas are the list of their seeds")
	}
	// A config without seed: counts from the default seed, 1.
	noSeed := expand(t, "topology: {kind: back-to-back}\nworkload: {kind: stream, size: 4096, saturate: true, warmup_ns: 500, measure_ns: 2000}\nsweep: {seed: {replicas: 2}}\n")
	assert.Equal(t, []string{`{"seed":1}`, `{"seed":2}`}, designParams(t, noSeed))
	// --seed (a --set seed=…) pins the axis to that one replica.
	pinned := expand(t, streamBase+"sweep:\n  seed: {replicas: 3}\n  workload.size: [1024, 4096]\n", "seed=8")
	assert.Equal(t, []string{`{"seed":8,"workload.size":1024}`, `{"seed":8,"workload.size":4096}`}, designParams(t, pinned))
}

// TestCommonRandomNumbers: with common: true a point's seed is the one
// DeriveSeed gives its seed value alone, the same at every design of one
// replica; without, every point has its own. Pinned to one point the seed
// is the same as in the sweep.
func TestCommonRandomNumbers(t *testing.T) {
	const axes = "sweep:\n  seed: {replicas: 2%s}\n  hca.vl_buffer_bytes: [16384, 65536]\n"
	seeds := func(s *Sweep) []uint64 {
		var out []uint64
		for _, d := range s.Designs {
			p, err := s.Point(d, 0)
			require.NoError(t, err)
			out = append(out, p.Seed)
		}
		return out
	}
	// Keys sorted: hca.vl_buffer_bytes slowest, seed fastest.
	common := seeds(expand(t, streamBase+fmt.Sprintf(axes, ", common: true")))
	want7, want8 := DeriveSeed(7, map[string]any{"seed": 7}), DeriveSeed(8, map[string]any{"seed": 8})
	assert.Equal(t, []uint64{want7, want8, want7, want8}, common)
	indep := seeds(expand(t, streamBase+fmt.Sprintf(axes, "")))
	assert.Equal(t, DeriveSeed(7, map[string]any{"seed": 7, "hca.vl_buffer_bytes": 16384}), indep[0])
	assert.NotEqual(t, indep[0], indep[2], "without common, the designs of one replica draw apart")
	// The list form with common: the same seeds.
	listed := seeds(expand(t, streamBase+"sweep:\n  seed: {values: [7, 8], common: true}\n  hca.vl_buffer_bytes: [16384, 65536]\n"))
	assert.Equal(t, common, listed)
	// One point alone, every key pinned: its seed in the sweep.
	alone := seeds(expand(t, streamBase+fmt.Sprintf(axes, ", common: true"), "seed=8", "hca.vl_buffer_bytes=65536"))
	assert.Equal(t, []uint64{want8}, alone)
}

// TestSeedFormErrors: every bad form of sweep.seed is one line naming
// sweep.seed and what it takes.
func TestSeedFormErrors(t *testing.T) {
	tests := []struct{ sweep, want string }{
		{"link.length_m: {replicas: 3}", "sweep.link.length_m: replicas and common are forms of sweep.seed only"},
		{"seed: {replicas: 0}", "sweep.seed.replicas: 0 is out of range (2 to 1000"},
		{"seed: {replicas: 1}", "sweep.seed.replicas: 1 is out of range (2 to 1000: one replica has no spread to measure)"},
		{"seed: {replicas: -4}", "sweep.seed.replicas: -4 is out of range"},
		{"seed: {replicas: 1001}", "sweep.seed.replicas: 1001 is out of range (2 to 1000"},
		{"seed: {replicas: 2.5}", `sweep.seed.replicas: "2.5" is not a whole number`},
		// A whole number written as a float, or past 64 bits, is out of
		// range or in it, as for any key (1e30 said "not a whole number").
		{"seed: {replicas: 1e30}", "sweep.seed.replicas: 1e30 is out of range (2 to 1000: one replica has no spread to measure)"},
		{"seed: {replicas: 1e4}", "sweep.seed.replicas: 1e4 is out of range (2 to 1000"},
		{"seed: {replicas: true}", `sweep.seed.replicas: "true" is not a whole number`},
		{"seed: {replicas: five}", `sweep.seed.replicas: "five" is not a whole number`},
		{"seed: {replicas: 3, values: [1, 2]}", "sweep.seed: give replicas or values, not both"},
		{"seed: {replicas: 3, common: maybe}", `sweep.seed.common: "maybe" is not true or false`},
		{"seed: {replicas: 3, from: 1}", "sweep.seed.from: unknown key (sweep.seed takes a list of seeds, {replicas: N}"},
		{"seed: {common: true}", "sweep.seed: common alone sweeps nothing"},
		{"seed: {values: 3, common: true}", `sweep.seed.values: "3" is not a list of seeds`},
		{"seed: {values: [1, 1], common: true}", "sweep.seed.values[1]: 1 is listed twice"},
		// Seed 1.0 is seed 1: the same replica twice, which the summary
		// counted as two and narrowed the interval with.
		{"seed: {values: [1, 1.0, 2]}", "sweep.seed.values[1]: 1.0 is listed twice (also [0])"},
		{"seed: [3, 3.0]", "sweep.seed[1]: 3.0 is listed twice (also [0])"},
		{"seed: {replicas: 3}\n  workload.offered_load: {search: knee, from: 0.1, to: 1}", "sweep.seed: replicas and common do not go with the knee search of sweep.workload.offered_load"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			root, err := config.Parse([]byte("seed: 7\ntopology: {kind: single-switch, hosts: 4}\nworkload: {kind: uniform, size: 1024, warmup_ns: 500, measure_ns: 2000}\nsweep:\n  " + tt.sweep + "\n"))
			require.NoError(t, err)
			_, err = Expand(root, Options{})
			require.Error(t, err)
			var ce *config.Error
			assert.True(t, errors.As(err, &ce), "a user's error: %T", err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	// The replicas would pass the last seed.
	root, err := config.Parse([]byte("seed: 18446744073709551614\nsweep: {seed: {replicas: 3}}\n"))
	require.NoError(t, err)
	_, err = Expand(root, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sweep.seed.replicas: 3 replicas from seed 18446744073709551614 pass 2^64−1")
	// A plain list of seeds still searches a knee per seed.
	root, err = config.Parse([]byte("seed: 7\ntopology: {kind: single-switch, hosts: 4}\nworkload: {kind: uniform, size: 1024, warmup_ns: 500, measure_ns: 2000}\nsweep: {seed: [1, 2], workload.offered_load: {search: knee, from: 0.1, to: 1}}\n"))
	require.NoError(t, err)
	_, err = Expand(root, Options{})
	assert.NoError(t, err)
}

// TestCommonTakesConfigBooleans: common reads a boolean as every config
// boolean does (yaml.v3 into a bool: YAML 1.1's yes/no/on/off too), so
// `common: yes` is common random numbers, as `topology.adaptive_routing:
// yes` is adaptive routing.
func TestCommonTakesConfigBooleans(t *testing.T) {
	for word, want := range map[string]bool{"true": true, "yes": true, "on": true, "false": false, "no": false, "off": false} {
		root, err := config.Parse([]byte("seed: 7\ntopology: {kind: single-switch, hosts: 4}\nworkload: {kind: uniform, size: 1024, warmup_ns: 500, measure_ns: 2000}\nsweep:\n  seed: {replicas: 2, common: " + word + "}\n"))
		require.NoError(t, err)
		s, err := Expand(root, Options{})
		require.NoError(t, err, word)
		assert.Equal(t, want, s.Common, word)
	}
}
