package components

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func set(idx ...int) PortSet {
	var s PortSet
	for _, i := range idx {
		s.Set(i)
	}
	return s
}

func TestRoundRobinPick(t *testing.T) {
	tests := []struct {
		name string
		n    int
		ptr  int // set by committing ptr-1
		req  PortSet
		want int
	}{
		{"none", 4, 0, set(), -1},
		{"at pointer", 4, 2, set(0, 2), 2},
		{"after pointer", 4, 1, set(0, 3), 3},
		{"wraps", 4, 3, set(1, 2), 1},
		{"ignores beyond n", 4, 0, set(4, 200), -1},
		{"256 inputs, high word", 256, 130, set(5, 255), 255},
		{"256 inputs, wrap", 256, 255, set(5, 254), 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewRoundRobin(tc.n)
			a.Commit((tc.ptr - 1 + tc.n) % tc.n)
			assert.Equal(t, tc.ptr, a.Pointer())
			assert.Equal(t, tc.want, a.Pick(tc.req))
			assert.Equal(t, tc.want, a.Pick(tc.req), "Pick changes no state")
		})
	}
}

// TestRoundRobinFairness: with every input always requesting and every pick
// committed, n consecutive grants serve each input exactly once, in order.
func TestRoundRobinFairness(t *testing.T) {
	for _, n := range []int{1, 7, 36, 64} {
		a := NewRoundRobin(n)
		var all PortSet
		for i := 0; i < n; i++ {
			all.Set(i)
		}
		for round := 0; round < 3; round++ {
			for i := 0; i < n; i++ {
				g := a.Pick(all)
				assert.Equal(t, i, g)
				a.Commit(g)
			}
		}
	}
	assert.Panics(t, func() { NewRoundRobin(0) })
	assert.Panics(t, func() { NewRoundRobin(257) })
	assert.Panics(t, func() { NewRoundRobin(4).Commit(4) })
}

func BenchmarkRoundRobinPick64(b *testing.B) {
	a := NewRoundRobin(64)
	var req PortSet
	for i := 0; i < 64; i += 5 {
		req.Set(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g := a.Pick(req)
		a.Commit(g)
	}
}
