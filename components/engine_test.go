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

// BenchmarkEngine: a self-sustaining population of pending events with
// delays spread over 1–64 ns, like a fabric's in-flight packets, credits and
// refresh timers; reports ns per event (schedule + pop + dispatch).
func BenchmarkEngine(b *testing.B) {
	for _, pending := range []int{1000, 30000} {
		b.Run(map[int]string{1000: "pending=1k", 30000: "pending=30k"}[pending], func(b *testing.B) {
			s := NewSim()
			h := &spreader{s: s, rng: 1}
			for i := 0; i < pending; i++ {
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

// spreader reschedules each event it handles 1–64 ns later while budget is
// left, so the queue length stays constant.
type spreader struct {
	s    *Sim
	rng  uint64
	left int
}

func (h *spreader) next() uint64 {
	h.rng ^= h.rng << 13
	h.rng ^= h.rng >> 7
	h.rng ^= h.rng << 17
	return h.rng
}

func (h *spreader) HandleEvent(ev *Event) {
	if h.left <= 0 {
		h.s.Stop()
		return
	}
	h.left--
	h.s.Schedule(h.s.Now()+1000+ib.PS(h.next()%63000), h, 1)
}
