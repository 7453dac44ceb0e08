package hca

import (
	"testing"

	"github.com/hcasim/hcasim/ib"
	"github.com/stretchr/testify/assert"
)

// TestAtomicUnit: an atomic on a word waits for the write of the word's
// previous atomic, whatever byte of the word it names; another word does
// not wait; a hold that ended by now is dropped and waits no one.
func TestAtomicUnit(t *testing.T) {
	var u atomicUnit
	u.hold(0x1000, 500)
	u.hold(0x2008, 800)
	assert.Equal(t, ib.PS(500), u.wait(0x1000, 100, 100), "same word: after its write")
	assert.Equal(t, ib.PS(500), u.wait(0x1004, 100, 100), "a byte of the same 8-byte word")
	assert.Equal(t, ib.PS(100), u.wait(0x1008, 100, 100), "the next word: no wait")
	assert.Equal(t, ib.PS(600), u.wait(0x1000, 600, 100), "ready after the write: no wait")
	u.hold(0x1000, 400)
	assert.Equal(t, ib.PS(500), u.wait(0x1000, 100, 100), "a hold never moves back")
	assert.Len(t, u.held, 2)
	assert.Equal(t, ib.PS(700), u.wait(0x1000, 700, 600), "the word's hold ended by now")
	assert.Len(t, u.held, 1, "the ended hold is dropped")
	assert.Equal(t, ib.PS(800), u.wait(0x2008, 700, 600))
	assert.Equal(t, ib.PS(900), u.wait(0x2008, 900, 800))
	assert.Empty(t, u.held)
}
