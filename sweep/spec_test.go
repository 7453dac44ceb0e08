package sweep

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/config"
)

// axisValues parses a sweep: section and returns each axis's values as text.
func axisValues(t *testing.T, yamlText string) map[string][]string {
	t.Helper()
	root, err := config.Parse([]byte(yamlText))
	require.NoError(t, err)
	axes, err := parseAxes(config.Lookup(root, "sweep"))
	require.NoError(t, err)
	out := map[string][]string{}
	for _, a := range axes {
		var vs []string
		for _, v := range a.Values {
			vs = append(vs, v.Value)
		}
		out[a.Key] = vs
	}
	return out
}

func TestAxisForms(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want map[string][]string
	}{
		{"list", "sweep: {link.width: [4x, 8x]}", map[string][]string{"link.width": {"4x", "8x"}}},
		// 4096, 4096+4096, … up to 16384 inclusive.
		{"integer step", "sweep: {hca.vl_buffer_bytes: {from: 4096, to: 16384, step: 4096}}",
			map[string][]string{"hca.vl_buffer_bytes": {"4096", "8192", "12288", "16384"}}},
		// 0.1 + 2×0.1 is 0.30000000000000004 in binary; rounding to 12
		// digits gives the 0.3 the user wrote.
		{"float step", "sweep: {workload.offered_load: {from: 0.1, to: 0.3, step: 0.1}}",
			map[string][]string{"workload.offered_load": {"0.1", "0.2", "0.3"}}},
		// The last value is inside the range only up to to: 0.25 + 0.5 > 0.7.
		{"step not reaching to", "sweep: {workload.offered_load: {from: 0.25, to: 0.7, step: 0.25}}",
			map[string][]string{"workload.offered_load": {"0.25", "0.5"}}},
		// Linear points: from + i(to − from)/(points − 1) = 0, 2.5, 5, 7.5, 10.
		{"linear points", "sweep: {link.length_m: {from: 0, to: 10.0, points: 5}}",
			map[string][]string{"link.length_m": {"0", "2.5", "5", "7.5", "10"}}},
		// Log points: 4096·(65536/4096)^(i/4) = 4096·2^i.
		{"log points", "sweep: {hca.vl_buffer_bytes: {from: 4096, to: 65536, points: 5, log: true}}",
			map[string][]string{"hca.vl_buffer_bytes": {"4096", "8192", "16384", "32768", "65536"}}},
		// Integers rounded: 1, 2.5→3 (round half away from zero), 4; no repeats.
		{"integer points rounded", "sweep: {workload.size: {from: 1, to: 4, points: 3}}",
			map[string][]string{"workload.size": {"1", "3", "4"}}},
		{"a key given twice takes the later (--set sweep.a.b after a.b)", "sweep: {hca.vl_buffer_bytes: [4096], hca: {vl_buffer_bytes: [8192]}}",
			map[string][]string{"hca.vl_buffer_bytes": {"8192"}}},
		{"nested keys, as --set sweep.hca.x makes", "sweep: {hca: {vl_buffer_bytes: [8192]}, link: {width: [4x]}}",
			map[string][]string{"hca.vl_buffer_bytes": {"8192"}, "link.width": {"4x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, axisValues(t, tt.yaml))
		})
	}
}

func TestAxisSearch(t *testing.T) {
	root, err := config.Parse([]byte("sweep: {workload.offered_load: {search: knee, from: 0.1, to: 1.0, tolerance: 0.02}}"))
	require.NoError(t, err)
	axes, err := parseAxes(config.Lookup(root, "sweep"))
	require.NoError(t, err)
	require.Len(t, axes, 1)
	require.NotNil(t, axes[0].Search)
	assert.Equal(t, KneeSpec{From: 0.1, To: 1.0, Tolerance: 0.02, Epsilon: DefaultKneeEpsilon}, *axes[0].Search)
}

func TestAxisErrors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"sweep: {link.width: []}", "sweep.link.width: an empty list sweeps nothing"},
		{"sweep: {workload.offered_load: {}}", "sweep.workload.offered_load: an empty mapping sweeps nothing"},
		{"sweep: {workload: {offered_load: {}}}", "sweep.workload.offered_load: an empty mapping sweeps nothing"},
		{"sweep: {workload.offered_load: [0.3, null]}", "sweep.workload.offered_load[1]: an empty value (null) sweeps nothing"},
		{"sweep: {workload.offered_load: [0.3, ~]}", "sweep.workload.offered_load[1]: an empty value (null) sweeps nothing"},
		// A repeated value ran its point twice; 0.50 is the number 0.5.
		{"sweep: {workload.offered_load: [0.5, 0.3, 0.50]}", "sweep.workload.offered_load[2]: 0.50 is listed twice (also [0]); give each value once"},
		// 2 and 2.0 (an int and a float to YAML) are one length: two
		// identical points, with one derived seed.
		{"sweep: {link.length_m: [2, 2.0]}", "sweep.link.length_m[1]: 2.0 is listed twice (also [0])"},
		{"sweep: {link.length_m: [1, 2e0, 2]}", "sweep.link.length_m[2]: 2 is listed twice (also [1])"},
		{"sweep: {switch.sl2vl: [[0, 1], [0, 1]]}", "sweep.switch.sl2vl[1]: "},
		{"sweep: {link.width: 4x}", `sweep.link.width: "4x" is not a list of values`},
		// 4x and 4X are one width (accepted in any case): listed both,
		// one design point ran twice.
		{"sweep: {link.width: [4x, 1x, 4X]}", "sweep.link.width[2]: 4X is listed twice (also [0]); give each value once"},
		{"sweep: {link.generation: [ndr, NDR]}", "sweep.link.generation[1]: NDR is listed twice (also [0])"},
		{"sweep: {workload.size: {from: 8, to: 4, step: 1}}", "sweep.workload.size: from 8 is above to 4"},
		{"sweep: {workload.size: {from: 4, to: 8, step: 0}}", "sweep.workload.size.step: 0 must be above 0"},
		{"sweep: {workload.size: {from: 4, to: 8}}", "sweep.workload.size: a range needs step"},
		{"sweep: {workload.size: {from: 4, to: 8, step: 1, points: 3}}", "give step or points, not both"},
		{"sweep: {workload.size: {from: 4, to: 8, stride: 1}}", "sweep.workload.size.stride: unknown range key"},
		{"sweep: {workload.size: {from: x, to: 8, step: 1}}", `sweep.workload.size.from: "x" is not a number`},
		{"sweep: {workload.size: {from: 0, to: 8, points: 3, log: true}}", "sweep.workload.size.from: 0 must be above 0 on a log range"},
		// A whole count past the limit is out of range (it said "not a
		// whole number"); a fraction is not a count.
		{"sweep: {workload.size: {from: 1, to: 8, points: 1e9}}", "sweep.workload.size.points: 1e+09 is out of range (1 to 100000)"},
		{"sweep: {workload.size: {from: 1, to: 8, points: 2.5}}", "sweep.workload.size.points: 2.5 is not a whole number from 1 to 100000"},
		{"sweep: {workload.size: {search: knee, from: 0.1, to: 1}}", "search: knee bisects an offered load"},
		{"sweep: {workload.offered_load: {search: peak, from: 0.1, to: 1}}", `"peak" is not a search (knee)`},
		{"sweep: {workload.offered_load: {search: knee, from: 0.1, to: 0.2, tolerance: 0.5}}", "sweep.workload.offered_load.tolerance: 0.5 is out of range"},
		{"sweep: {workload.offered_load: {search: knee, from: 0, to: 1}}", "a knee search runs within offered loads above 0"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			root, err := config.Parse([]byte(tt.yaml))
			require.NoError(t, err)
			_, err = parseAxes(config.Lookup(root, "sweep"))
			require.Error(t, err)
			assert.IsType(t, &config.Error{}, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
