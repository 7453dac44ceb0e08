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

// TestLFTEveryPort: every port -1..255 reads back as set, whether the table
// holds it in a byte (port+1, -1..254) or, once port 255 is routed, in 16
// bits; the switch to 16 bits keeps the routes set before it, and the zero
// value and DLIDs grown into route nothing.
func TestLFTEveryPort(t *testing.T) {
	var zero LFT
	assert.Equal(t, NoPort, zero.Lookup(0))
	lft := NewLFT(300)
	check := func(upTo int) {
		for p := NoPort; p <= upTo; p++ {
			assert.Equal(t, p, lft.Lookup(uint16(p+1)), "dlid %d", p+1)
		}
	}
	for p := NoPort; p <= 254; p++ {
		lft.Set(uint16(p+1), p) // dlid p+1 routes to p
	}
	check(254)
	assert.Equal(t, 254, lft.MaxPort())
	lft.Set(400, 7) // grows the byte table; 301..399 have no route
	assert.Equal(t, NoPort, lft.Lookup(350))
	assert.Equal(t, 7, lft.Lookup(400))
	lft.Set(256, 255) // to 16 bits
	check(255)
	assert.Equal(t, NoPort, lft.Lookup(350))
	assert.Equal(t, 7, lft.Lookup(400))
	assert.Equal(t, 401, lft.Len())
	assert.Equal(t, 255, lft.MaxPort())
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
