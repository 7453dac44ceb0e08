package components

import (
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
