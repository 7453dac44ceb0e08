package sweep

import (
	"testing"

	"github.com/hcasim/hcasim/config"
)

// FuzzExpand: no sweep section, however broken, makes expansion panic; it
// either expands or returns an error.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{
		"sweep: {hca.vl_buffer_bytes: [8192, 16384]}",
		"sweep: {hca.vl_buffer_bytes: {from: 8192, to: 65536, points: 4, log: true}}",
		"sweep: {workload.offered_load: {search: knee, from: 0.1, to: 1, tolerance: 1e-300}}",
		"sweep: {link.length_m: {from: -1e308, to: 1e308, step: 1e-308}}",
		"sweep: {workload.size: {from: 1, to: 4096, points: 1e9}}",
		"sweep: {hca: {vl_buffer_bytes: {x: [1]}}}",
		"sweep: [1, 2]",
		"sweep: {a: &x [1], b: *x}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		root, err := config.Parse([]byte(streamBase + "\n" + text))
		if err != nil {
			return
		}
		s, err := Expand(root, Options{})
		if err != nil {
			return
		}
		if len(s.Designs) > 0 {
			_, _ = s.Point(s.Designs[0], 0.5)
		}
	})
}
