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

// bucketMates returns the first n delays after 0 (other than not) whose
// primary events' hints fall in the same bucket of the lane table as
// delay not's, in increasing order.
func bucketMates(not ib.PS, n int) []ib.PS {
	want := laneBucket(uint64(not) << 2)
	var got []ib.PS
	for d := ib.PS(1); len(got) < n; d++ {
		if d != not && laneBucket(uint64(d)<<2) == want {
			got = append(got, d)
		}
	}
	return got
}

// TestLaneTableKeepsBusyHints: the delay → lane table never drops the hint
// of a busy lane. Two events of laneDelay take lane 0 (the lowest idle
// lane); one event each of three delays c0 < c1 < c2 sharing its bucket
// take lanes 1, 2, 3 and the bucket's other three ways: all four hints now
// point at busy lanes. An event of a fourth such delay, c3, may drop none
// of them, so it goes to the heap (one entry) rather than a lane; a third
// event of laneDelay still finds lane 0 (three events there). Were c3 to
// evict laneDelay's hint (way 0, the first a round-robin replaces),
// laneDelay's third event would claim a fifth lane and lane 0 keep two.
func TestLaneTableKeepsBusyHints(t *testing.T) {
	c := bucketMates(laneDelay, 4)
	h := handlerFunc(func(*Event) {})
	s := NewSim()
	e := s.fast
	s.Schedule(laneDelay, h, 1)
	s.Schedule(laneDelay, h, 1)
	for _, d := range c[:3] {
		s.Schedule(d, h, 1)
	}
	require.Equal(t, uint64(0b1111), e.laneBusy, "laneDelay and c0..c2 each in a lane of their own")
	require.Empty(t, e.heap)
	s.Schedule(c[3], h, 1)
	assert.Len(t, e.heap, 1, "c3's event on the heap")
	assert.Equal(t, uint64(0b1111), e.laneBusy, "c3 claimed no lane")
	s.Schedule(laneDelay, h, 1)
	assert.Equal(t, 3, e.lanes[0].n, "laneDelay's events all in lane 0")
	require.NoError(t, s.Run())
	assert.Zero(t, e.Pending())
}

// TestLaneTableDropsIdleHint: a hint whose lane is idle may be dropped. At
// time 0, one event of c0 takes lane 0, then two of laneDelay lane 1 and
// one each of c1 and c2 lanes 2 and 3: the bucket's four ways are taken,
// and c0 < laneDelay, c1, c2 (bucketMates searches upward from 1, and one
// delay in 64 or so shares a bucket), so c0's event runs first and leaves
// lane 0 idle. Its handler schedules an event c3 ahead: c0's hint points
// at an idle lane, so c3 takes its way and the lowest idle lane, lane 0
// (one event, none on the heap), and a third event of laneDelay still
// joins its two in lane 1.
func TestLaneTableDropsIdleHint(t *testing.T) {
	c := bucketMates(laneDelay, 4)
	require.Less(t, c[0], laneDelay)
	s := NewSim()
	e := s.fast
	nop := handlerFunc(func(*Event) {})
	ran := false
	first := handlerFunc(func(*Event) {
		ran = true
		require.Equal(t, uint64(0b1110), e.laneBusy, "lane 0 idle while c0's event runs")
		s.Schedule(s.Now()+c[3], nop, 1)
		assert.Empty(t, e.heap, "c3's event in a lane")
		assert.Equal(t, 1, e.lanes[0].n, "c3's event in lane 0")
		assert.Equal(t, uint64(c[3])<<2, e.laneDelay[0])
		s.Schedule(s.Now()+laneDelay, nop, 1)
		assert.Equal(t, 3, e.lanes[1].n, "laneDelay's third event in lane 1, beside its two")
	})
	s.Schedule(c[0], first, 1)
	s.Schedule(laneDelay, nop, 1)
	s.Schedule(laneDelay, nop, 1)
	s.Schedule(c[1], nop, 1)
	s.Schedule(c[2], nop, 1)
	require.NoError(t, s.Run())
	assert.True(t, ran)
}
