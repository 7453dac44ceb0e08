package components

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPortSet(t *testing.T) {
	var s PortSet
	assert.False(t, s.Any())
	for _, i := range []int{0, 63, 64, 200, 255} {
		s.Set(i)
	}
	assert.True(t, s.Any())
	assert.Equal(t, 5, s.Count())
	assert.True(t, s.Has(64))
	assert.False(t, s.Has(65))
	assert.False(t, s.Has(-1))
	assert.False(t, s.Has(256))
	s.Clear(64)
	assert.False(t, s.Has(64))
	assert.Equal(t, 4, s.Count())
	// NextAtOrAfter walks members in order across word boundaries.
	assert.Equal(t, 0, s.NextAtOrAfter(0))
	assert.Equal(t, 63, s.NextAtOrAfter(1))
	assert.Equal(t, 200, s.NextAtOrAfter(64))
	assert.Equal(t, 255, s.NextAtOrAfter(201))
	assert.Equal(t, -1, PortSet{}.NextAtOrAfter(0))
	// Bits prints [n-1:0]: members 0 and 3 of 4 -> "1001".
	var b PortSet
	b.Set(0)
	b.Set(3)
	assert.Equal(t, "1001", b.Bits(4))
	assert.Panics(t, func() { s.Set(256) })
	assert.Panics(t, func() { s.Clear(-1) })
}

// TestPortSetAll: All yields exactly the members NextAtOrAfter walks, in the
// same increasing order, on random sets of every density, and stops when
// the loop breaks.
func TestPortSetAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for k := 0; k < 500; k++ {
		var s PortSet
		for n := rng.IntN(MaxPorts + 1); n > 0; n-- {
			s.Set(rng.IntN(MaxPorts))
		}
		var want, got []int
		for i := s.NextAtOrAfter(0); i >= 0; i = s.NextAtOrAfter(i + 1) {
			want = append(want, i)
		}
		for i := range s.All() {
			got = append(got, i)
		}
		assert.Equal(t, want, got)
		if len(want) > 2 {
			got = got[:0]
			for i := range s.All() {
				if got = append(got, i); len(got) == 2 {
					break
				}
			}
			assert.Equal(t, want[:2], got)
		}
	}
	for range (PortSet{}).All() {
		t.Fatal("the empty set has no members")
	}
}
