package switchasic

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLFT(t *testing.T) {
	lft := NewLFT(3)
	assert.Equal(t, 4, lft.Len())
	assert.Equal(t, NoPort, lft.Lookup(1))
	assert.Equal(t, NoPort, lft.MaxPort())
	lft.Set(1, 5)
	lft.Set(3, 0)
	assert.Equal(t, 5, lft.Lookup(1))
	assert.Equal(t, 0, lft.Lookup(3))
	assert.Equal(t, NoPort, lft.Lookup(100)) // beyond the table
	lft.Set(100, 255)                        // grows the table
	assert.Equal(t, 101, lft.Len())
	assert.Equal(t, 255, lft.Lookup(100))
	assert.Equal(t, 255, lft.MaxPort())
	lft.Set(1, NoPort)
	assert.Equal(t, NoPort, lft.Lookup(1))
	assert.Panics(t, func() { lft.Set(2, 256) })
}

func TestSL2VL(t *testing.T) {
	var def [16]uint8
	for sl := range def {
		def[sl] = uint8(sl % 4)
	}
	m := NewSL2VL(8, def)
	assert.Equal(t, uint8(1), m.VL(0, 7, 5))
	pair := def
	pair[5] = 15 // drop SL5 from port 2 to port 3
	m.SetPair(2, 3, pair)
	assert.Equal(t, uint8(15), m.VL(2, 3, 5))
	assert.Equal(t, uint8(1), m.VL(3, 2, 5)) // the reverse pair keeps the default
	assert.Equal(t, uint8(1), m.VL(2, 4, 5))
	assert.Panics(t, func() { m.SetPair(8, 0, def) })
}
