package components

import (
	"fmt"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// laneDelay is the one delay the lane tests use: all their events share a
// lane, so its ring fills (laneFirstSlots slots, one kept free).
const laneDelay = ib.PS(1000)

// TestLaneSetUpSpill: events scheduled before the run stay where Schedule
// put them until the run starts, however many come for one lane, so a
// caller may fill them in after scheduling others. 200 events of one delay
// at time 0: the ring takes laneFirstSlots − 1 = 63 (one slot stays free),
// the other 137 wait in the spill and move into the ring, grown to hold
// them (63 + 137 + 1 and an eighth more), when the run starts. All run at
// laneDelay, in the order they were scheduled (FIFO among equal times), so
// the handler sees Arg 0, 1, ..., 199.
func TestLaneSetUpSpill(t *testing.T) {
	const n = 200
	var got []int64
	h := handlerFunc(func(ev *Event) { got = append(got, ev.Arg) })
	s := NewSim()
	evs := make([]*Event, n)
	for i := range evs {
		evs[i] = s.Schedule(laneDelay, h, 1)
	}
	for i, ev := range evs {
		ev.Arg = int64(i) // filled in after every event was scheduled
	}
	require.Equal(t, n, s.fast.Pending(), "the spill's events are pending too")
	require.NoError(t, s.Run())
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i)
	}
	assert.Equal(t, want, got)
	assert.Zero(t, s.fast.Pending())
}

// TestLaneHandledSlot: the event being handled stays as it was while its
// handler schedules events into its own lane, and events scheduled in a
// handler may be filled in after others were scheduled. 63 events
// (laneFirstSlots − 1, a full ring) at laneDelay carry Arg 100 + i. The
// first one's handler, with 62 events left in the ring, schedules three
// more for 2·laneDelay: the first fills the ring (63), the second would
// take the slot just before the head, the handled event's, so it and the
// third wait in the spill. The handler fills all three in only after
// scheduling them (Arg 163, 164, 165) and then checks its own event. Order:
// the 63 at laneDelay in scheduling order, then the three.
func TestLaneHandledSlot(t *testing.T) {
	const first = laneFirstSlots - 1
	var got []int64
	s := NewSim()
	var h handlerFunc
	h = func(ev *Event) {
		own := eventFields(ev)
		got = append(got, ev.Arg)
		if ev.Arg == 100 {
			a := s.Schedule(s.Now()+laneDelay, h, 1)
			b := s.Schedule(s.Now()+laneDelay, h, 1)
			c := s.Schedule(s.Now()+laneDelay, h, 1)
			a.Arg, b.Arg, c.Arg = 100+first, 101+first, 102+first
		}
		assert.Equal(t, own, eventFields(ev), "the handled event changed while its handler ran")
	}
	for i := 0; i < first; i++ {
		s.Schedule(laneDelay, h, 1).Arg = int64(100 + i)
	}
	require.NoError(t, s.Run())
	want := make([]int64, first+3)
	for i := range want {
		want[i] = int64(100 + i)
	}
	assert.Equal(t, want, got)
}

// eventFields is what TestLaneHandledSlot compares of an event (its
// target, a func, compares unequal to itself).
func eventFields(ev *Event) [5]int64 {
	return [5]int64{int64(ev.at), int64(ev.Kind), ev.Arg, int64(ev.class), int64(ev.Tail)}
}

// TestEngineHooksSeeEveryEvent: an engine hook is told before and after
// each event, whether it ran from a lane (fixed delay) or from the heap (a
// last event, ordered by rank), with the event itself as the item (after
// the event, a pooled one may already be cleared for reuse: the hook sees
// the same item, not its fields). Three events: Arg 1 from a lane at
// laneDelay, Arg 2 a last event at the same picosecond (after every other
// event of it), Arg 3 from a lane at 2·laneDelay: the hook sees before and
// after of 1, 2, 3 in that order.
func TestEngineHooksSeeEveryEvent(t *testing.T) {
	var ran []int64
	h := handlerFunc(func(ev *Event) { ran = append(ran, ev.Arg) })
	s := NewSim()
	hook := &recordingHook{}
	s.fast.AcceptHook(hook)
	s.Schedule(laneDelay, h, 1).Arg = 1
	s.ScheduleLast(laneDelay, h, 1, 2)
	s.Schedule(2*laneDelay, h, 1).Arg = 3
	require.NoError(t, s.Run())
	assert.Equal(t, []int64{1, 2, 3}, ran)
	assert.Equal(t, []string{"before 1", "after 1", "before 2", "after 2", "before 3", "after 3"}, hook.seen)
}

// recordingHook notes each event's Arg before it runs, and after it runs
// the same Arg if the item is the same event.
type recordingHook struct {
	seen   []string
	before sim.Event
	arg    int64
}

func (r *recordingHook) Func(ctx sim.HookCtx) {
	switch ctx.Pos {
	case sim.HookPosBeforeEvent:
		r.before, r.arg = ctx.Item.(sim.Event), ctx.Item.(*Event).Arg
		r.seen = append(r.seen, fmt.Sprintf("before %d", r.arg))
	case sim.HookPosAfterEvent:
		if ctx.Item != r.before {
			r.seen = append(r.seen, "after another item")
			return
		}
		r.seen = append(r.seen, fmt.Sprintf("after %d", r.arg))
	}
}
