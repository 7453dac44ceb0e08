package components

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestReservedPlace: an event scheduled with a place reserved earlier runs
// where an event scheduled at the reservation would have: among the events
// of its picosecond, after those queued before the reservation and before
// those queued after it, whichever went to a lane (fixed delays) and
// whichever to the heap.
func TestReservedPlace(t *testing.T) {
	s := NewSim()
	var order []string
	note := func(name string) EventHandler {
		return handlerFunc(func(*Event) { order = append(order, name) })
	}
	const at = ib.PS(1000)
	s.Schedule(0, handlerFunc(func(*Event) {
		s.Schedule(at, note("before"), 0)
		seq := s.Reserve()
		require.NotZero(t, seq)
		s.Schedule(at, note("after"), 0)
		s.Schedule(10, handlerFunc(func(*Event) {
			s.Schedule(at, note("later"), 0)
			s.ScheduleReserved(at, note("reserved"), 0, seq)
		}), 0)
	}), 0)
	require.NoError(t, s.Run())
	assert.Equal(t, []string{"before", "reserved", "after", "later"}, order)
}

// TestReserveLowAcrossWrap: a reservation kept as its low 32 bits is
// restored while fewer than 2^32 numbers were handed out since, across a
// wrap of the low bits: reserved 2^32 − 1 (low bits 0xFFFFFFFF), then three
// more numbers (2^32, 2^32 + 1, 2^32 + 2), so the last has low bits 2 and
// 2 − 0xFFFFFFFF ≡ 3 (mod 2^32) numbers lie between: 2^32 + 2 − 3 = 2^32 − 1.
// A number with low bits 0 is never handed out (0 means none): ReserveLow
// passes over it.
func TestReserveLowAcrossWrap(t *testing.T) {
	s := NewSim()
	s.fast.seq = 1<<32 - 2
	low := s.ReserveLow()
	require.Equal(t, uint32(0xFFFFFFFF), low)
	require.Equal(t, uint32(1), s.ReserveLow(), "2^32's low bits are 0: passed over")
	s.Reserve()
	require.Equal(t, uint64(1<<32+2), s.fast.LastReserved())
	var got uint64
	ev := s.ScheduleReservedLow(5, handlerFunc(func(*Event) {}), 0, low)
	for _, x := range s.fast.heap {
		if x.ev == ev {
			got = x.key &^ (3 << classShift)
		}
	}
	assert.Equal(t, uint64(1<<32-1), got)
}

// TestAllEvents: under AllEvents (and on Akita's engine) Reserve hands out
// nothing, so blocks queue their events at once, and blocks are told the
// run is not quiet.
func TestAllEvents(t *testing.T) {
	s := NewSim()
	assert.True(t, s.Quiet())
	assert.NotZero(t, s.Reserve())
	s.AllEvents()
	assert.False(t, s.Quiet())
	assert.Zero(t, s.Reserve())
	assert.Zero(t, s.ReserveLow())
	assert.Zero(t, NewSimOn(EngineAkita).ReserveLow())
}
