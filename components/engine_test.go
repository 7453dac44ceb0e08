package components

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestEngineOrder: events run by (time, late, scheduling order). The
// expected order is derived independently of the heap: a stable sort of the
// scheduling sequence by (time, late), which keeps scheduling order among
// equals.
func TestEngineOrder(t *testing.T) {
	type sched struct {
		at   ib.PS
		late bool
		arg  int64
	}
	var got []int64
	h := handlerFunc(func(ev *Event) { got = append(got, ev.Arg) })
	s := NewSim()
	var want []sched
	r := uint64(88172645463325252)
	for i := 0; i < 5000; i++ {
		// xorshift64: a fixed sequence; 50 distinct times, so many ties.
		r ^= r << 13
		r ^= r >> 7
		r ^= r << 17
		w := sched{at: ib.PS(r % 50), late: (r>>20)%2 == 0, arg: int64(i)}
		if w.late {
			s.ScheduleLate(w.at, h, 1).Arg = w.arg
		} else {
			s.Schedule(w.at, h, 1).Arg = w.arg
		}
		want = append(want, w)
	}
	sort.SliceStable(want, func(i, j int) bool {
		a, b := want[i], want[j]
		return a.at < b.at || (a.at == b.at && !a.late && b.late)
	})
	require.NoError(t, s.Run())
	require.Len(t, got, len(want))
	for i := range want {
		if !assert.Equal(t, want[i].arg, got[i], "event %d", i) {
			break
		}
	}
}

type handlerFunc func(ev *Event)

func (f handlerFunc) HandleEvent(ev *Event) { f(ev) }

// BenchmarkEngine: a self-sustaining population of pending events; reports
// the cost per event (schedule + next + dispatch). "random" draws every
// delay from 1–64 ns (the worst case for the fixed-delay lanes); "fabric"
// draws nine in ten delays from six constants (cable latency, packet and
// flow-control serialization, credit return, refresh), as a fabric does.
func BenchmarkEngine(b *testing.B) {
	for _, bc := range []struct {
		name    string
		pending int
		fixed   bool
	}{
		{"random/pending=1k", 1000, false}, {"random/pending=30k", 30000, false},
		{"fabric/pending=1k", 1000, true}, {"fabric/pending=30k", 30000, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := NewSim()
			h := &spreader{s: s, rng: 1, fixed: bc.fixed}
			for i := 0; i < bc.pending; i++ {
				s.Schedule(ib.PS(h.next()%64000), h, 1)
			}
			h.left = b.N
			b.ReportAllocs()
			b.ResetTimer()
			if err := s.Run(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// spreader reschedules each event it handles while budget is left, so the
// queue length stays constant.
type spreader struct {
	s     *Sim
	rng   uint64
	left  int
	fixed bool
}

func (h *spreader) next() uint64 {
	h.rng ^= h.rng << 13
	h.rng ^= h.rng >> 7
	h.rng ^= h.rng << 17
	return h.rng
}

// fabricDelays are typical constant delays of a 2 m NDR link, in ps: cable
// latency, 1 KiB and 6-byte serialization, latency plus FC packet, a
// 4-cycle pipeline step, and a refresh period.
var fabricDelays = [6]ib.PS{10_000, 21_160, 120, 10_120, 3_200, 1_000_000}

func (h *spreader) HandleEvent(ev *Event) {
	if h.left <= 0 {
		h.s.Stop()
		return
	}
	h.left--
	r := h.next()
	d := 1000 + ib.PS(r%63000)
	if h.fixed && r>>32%10 != 0 {
		d = fabricDelays[r>>40%6]
	}
	h.s.Schedule(h.s.Now()+d, h, 1)
}
