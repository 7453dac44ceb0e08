package components

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestEngineOrder: events run by (time, class, scheduling order), except
// that last events of a picosecond run by rank. The expected order is
// derived independently of the heap: a stable sort of the scheduling
// sequence by (time, class, rank of a last event), which keeps scheduling
// order among equals. Ranks fall as events are scheduled, so a last event
// scheduled later runs earlier.
func TestEngineOrder(t *testing.T) {
	type sched struct {
		at    ib.PS
		class Class
		arg   int64
	}
	var got []int64
	h := handlerFunc(func(ev *Event) {
		if ev.class == ClassLast {
			got = append(got, 5000-ev.Arg) // its rank
			return
		}
		got = append(got, ev.Arg)
	})
	s := NewSim()
	var want []sched
	rng := xorshift(88172645463325252)
	for i := 0; i < 5000; i++ {
		// A fixed sequence; 50 distinct times, so many ties.
		r := rng.next()
		w := sched{at: ib.PS(r % 50), class: Class((r >> 20) % 3), arg: int64(i)}
		if ev := scheduleClass(s, w.at, h, w.class, 5000-int64(i)); w.class != ClassLast {
			ev.Arg = w.arg
		}
		want = append(want, w)
	}
	sort.SliceStable(want, func(i, j int) bool {
		a, b := want[i], want[j]
		return a.at < b.at || (a.at == b.at && (a.class < b.class || a.class == ClassLast && b.class == ClassLast && a.arg > b.arg))
	})
	require.NoError(t, s.Run())
	require.Len(t, got, len(want))
	for i := range want {
		if !assert.Equal(t, want[i].arg, got[i], "event %d", i) {
			break
		}
	}
}

// scheduleClass schedules through the Sim call of the class; rank is used
// by a last event only.
func scheduleClass(s *Sim, at ib.PS, h EventHandler, class Class, rank int64) *Event {
	switch class {
	case ClassLate:
		return s.ScheduleLate(at, h, 1)
	case ClassLast:
		return s.ScheduleLast(at, h, 1, rank)
	}
	return s.Schedule(at, h, 1)
}

// xorshift is a xorshift64 generator: a fixed sequence for each seed.
type xorshift uint64

func (x *xorshift) next() uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return uint64(*x)
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
	rng   xorshift
	left  int
	fixed bool
}

func (h *spreader) next() uint64 { return h.rng.next() }

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

// TestEngineOrderDynamic: events scheduled from handlers as time advances,
// with 200 distinct delays (more than the engine has lanes, so lanes fill,
// drain and change hands) and random classes, run in (time, class,
// scheduling order), last events by rank (falling as they are scheduled).
// The check is independent of the queue: each event records its time,
// class and a global scheduling number, and the dispatch sequence must be
// sorted by them and hold every event once.
func TestEngineOrderDynamic(t *testing.T) {
	type rec struct {
		at    ib.PS
		class Class
		seq   int64
	}
	var got []rec
	s := NewSim()
	var scheduled int64
	rng := xorshift(88172645463325252)
	rnd := rng.next
	var h handlerFunc
	schedule := func() {
		// Frequent delays (a fabric's constants) and a long tail of rare
		// ones; never zero, so nothing is scheduled into the instant being
		// dispatched and the whole dispatch sequence must be sorted.
		d := ib.PS(1+rnd()%200) * 1000
		if rnd()%4 != 0 {
			d = ib.PS(1+rnd()%8) * 1000
		}
		class := Class(rnd() % 3)
		ev := scheduleClass(s, s.Now()+d, h, class, 1<<40-scheduled)
		ev.Port = int32(scheduled)
		ev.Tail = s.Now() + d
		ev.VL = int8(class)
		scheduled++
	}
	h = func(ev *Event) {
		got = append(got, rec{at: ev.Tail, class: Class(ev.VL), seq: int64(ev.Port)})
		if scheduled < 200000 {
			for n := rnd() % 3; n > 0; n-- { // 0, 1 or 2 children: the population drifts
				schedule()
			}
		}
	}
	for i := 0; i < 3000; i++ {
		schedule()
	}
	require.NoError(t, s.Run())
	require.Len(t, got, int(scheduled))
	seen := make([]bool, scheduled)
	for i, g := range got {
		require.False(t, seen[g.seq], "event %d dispatched twice", g.seq)
		seen[g.seq] = true
		if i == 0 {
			continue
		}
		p := got[i-1]
		inOrder := p.at < g.at || p.at == g.at && (p.class < g.class ||
			p.class == g.class && (p.class != ClassLast && p.seq < g.seq || p.class == ClassLast && p.seq > g.seq))
		require.True(t, inOrder, "dispatch %d: %+v after %+v", i, g, p)
	}
}

// TestEngineLaneTree: the lanes' tournament tree must find the least head
// whichever lanes are in use. Ten delays claim lanes 0–9 in turn; lane 9's
// head (50 ps) is later than lane 0's (1 ps) but earlier than lanes 1–8's
// (100–107 ps), so once lane 0 drains, lane 9 must come next.
func TestEngineLaneTree(t *testing.T) {
	var got []ib.PS
	h := handlerFunc(func(ev *Event) { got = append(got, ev.At()) })
	s := NewSim()
	s.Schedule(1, h, 1)
	for d := ib.PS(100); d < 108; d++ {
		s.Schedule(d, h, 1)
	}
	s.Schedule(50, h, 1)
	require.NoError(t, s.Run())
	assert.Equal(t, []ib.PS{1, 50, 100, 101, 102, 103, 104, 105, 106, 107}, got)
}

// TestZeroTimeLoopStops: a block that keeps scheduling itself for the same
// picosecond is stopped with a panic that names the instant, instead of
// spinning forever; events at one picosecond below the bound run.
func TestZeroTimeLoopStops(t *testing.T) {
	s := NewSim()
	n := 0
	var h handlerFunc
	h = func(ev *Event) {
		n++
		s.Schedule(s.Now(), h, 7)
	}
	s.Schedule(5, h, 7)
	assert.PanicsWithValue(t, fmt.Sprintf("sim: more than %d events at 5 ps without time advancing (the last for components.handlerFunc, kind 7): a zero-time loop in the model",
		MaxEventsPerPicosecond), func() { _ = s.Run() })
	assert.Equal(t, MaxEventsPerPicosecond, n, "every event up to the bound ran")
}

// TestProgress: a Sim publishes its time when it advances and at least
// progressEvery events ran since the last time it did. Events here are one
// per picosecond at 1, 2, 3, … ps, so the event at t is the t-th, with t−1
// run before it: times 1, 1+progressEvery, 1+2·progressEvery, … are
// published, and a handler at t sees the greatest of them not above t;
// after Run the published time is the final one.
func TestProgress(t *testing.T) {
	s := NewSim()
	const last = 3*progressEvery + 5
	var h handlerFunc
	h = func(ev *Event) {
		now := s.Now()
		assert.Equal(t, now-(now-1)%progressEvery, s.Progress(), "at %d ps", now)
		if now < last {
			s.Schedule(now+1, h, 1)
		}
	}
	s.Schedule(1, h, 1)
	assert.Equal(t, ib.PS(0), s.Progress())
	require.NoError(t, s.Run())
	assert.Equal(t, ib.PS(last), s.Progress())
}

// TestAtLimit: the time limit's function runs when the first event past the
// limit comes up, seeing the run as one stopped at the limit ends (the last
// event run and its count); a later limit it sets lets the run go on to
// that limit, and it runs once. Without a new limit the run stops as
// StopAt alone stops it. Both engines.
func TestAtLimit(t *testing.T) {
	for _, engine := range []string{EngineHcasim, EngineAkita} {
		t.Run(engine, func(t *testing.T) {
			// Events at 10, 20, ..., 100 ps; limit 35 ps.
			run := func(extend ib.PS) (ran []ib.PS, seenNow ib.PS, seenEvents uint64, calls int) {
				s := NewSimOn(engine)
				h := handlerFunc(func(ev *Event) { ran = append(ran, ev.At()) })
				for at := ib.PS(10); at <= 100; at += 10 {
					s.Schedule(at, h, 1)
				}
				s.StopAt(35)
				s.AtLimit(func() {
					calls++
					seenNow, seenEvents = s.Now(), s.Events()
					if extend > 0 {
						s.StopAt(s.Now() + extend)
					}
				})
				require.NoError(t, s.Run())
				return
			}
			ran, now, events, calls := run(0)
			assert.Equal(t, []ib.PS{10, 20, 30}, ran)
			assert.Equal(t, ib.PS(30), now, "the last event before the limit")
			assert.Equal(t, uint64(3), events)
			assert.Equal(t, 1, calls)

			// 30 + 45 = 75: the run goes on to 70; the function does not
			// run again when the new limit passes.
			ran, now, events, calls = run(45)
			assert.Equal(t, []ib.PS{10, 20, 30, 40, 50, 60, 70}, ran)
			assert.Equal(t, ib.PS(30), now)
			assert.Equal(t, uint64(3), events)
			assert.Equal(t, 1, calls)
		})
	}
}
