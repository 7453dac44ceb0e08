package components

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// groupNode is one block of a test model: every event it handles spawns one
// more, for itself or, one time in four, for another node, possibly in
// another partition (a fixed population of tokens moving between nodes). Times are made unique (coarse steps of 2^20 ps plus a
// tag naming the event), so the order of events at each node is fixed by
// the model alone: a serial run and a partitioned one must agree exactly.
type groupNode struct {
	id    int
	s     *Sim
	nodes []*groupNode
	rng   xorshift
	count int
	seen  []ib.PS
}

const groupStep = ib.PS(1 << 20) // the lookahead: a cross-node event lands at least one step ahead

func (n *groupNode) tag() ib.PS {
	n.count++
	return ib.PS(n.id*4096 + n.count%4096)
}

func (n *groupNode) HandleEvent(ev *Event) {
	n.seen = append(n.seen, ev.At())
	coarse := ev.At() / groupStep
	r := n.rng.next()
	if r>>8%4 != 0 {
		n.s.Schedule((coarse+1+ib.PS(r%3))*groupStep+n.tag(), n, 1)
		return
	}
	dst := n.nodes[int(r>>16)%len(n.nodes)]
	// At least two coarse steps on: at least one step (the lookahead) after
	// now whatever the tags.
	n.s.Post(dst.s, (coarse+2+ib.PS(r>>24%3))*groupStep+n.tag(), dst, 1, Class(r>>30%3))
}

// runGroupModel runs 12 nodes, node i in partition i%parts (parts 0: one
// serial Sim) on threads goroutines (0: the default), until 1,000 steps,
// and returns each node's event times.
func runGroupModel(t *testing.T, parts, threads int) [][]ib.PS {
	const nodes = 12
	var sims []*Sim
	var g *Group
	if parts == 0 {
		sims = []*Sim{NewSim()}
	} else {
		g = NewGroup(parts, groupStep)
		if threads > 0 {
			g.SetThreads(threads)
		}
		sims = g.Sims()
	}
	ns := make([]*groupNode, nodes)
	for i := range ns {
		ns[i] = &groupNode{id: i + 1, s: sims[i%len(sims)], rng: xorshift(1000 + i)}
	}
	for i, n := range ns {
		n.nodes = ns
		n.s.Schedule(ib.PS(i)*groupStep+n.tag(), n, 1)
	}
	limit := 1000 * groupStep
	if g == nil {
		sims[0].StopAt(limit)
		require.NoError(t, sims[0].Run())
	} else {
		g.StopAt(limit)
		require.NoError(t, g.Run())
		assert.Positive(t, g.Windows())
	}
	out := make([][]ib.PS, nodes)
	for i, n := range ns {
		out[i] = n.seen
		require.NotEmpty(t, n.seen)
		assert.LessOrEqual(t, n.seen[len(n.seen)-1], limit, "node %d ran past the time limit", i)
	}
	return out
}

// TestGroupMatchesSerial: with no same-time ties, a partitioned run handles
// exactly the events of the serial run, at each node in the same order, for
// any number of partitions, however many goroutines run them (SetThreads)
// and however many OS threads Go gives those.
func TestGroupMatchesSerial(t *testing.T) {
	want := runGroupModel(t, 0, 0)
	total := 0
	for _, w := range want {
		total += len(w)
	}
	require.Greater(t, total, 2000, "the model must do some work")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		for _, parts := range []int{1, 2, 3, 5} {
			for threads := 0; threads <= min(parts, 3); threads++ {
				assert.Equal(t, want, runGroupModel(t, parts, threads), "%d partitions on %d threads, GOMAXPROCS %d", parts, threads, procs)
			}
		}
	}
}

// TestGroupLookaheadViolation: an event posted across partitions inside the
// current window is a model bug and panics, naming the partition, on the
// coordinator's goroutine even when a worker thread's partition posted it.
func TestGroupLookaheadViolation(t *testing.T) {
	const msg = "sim: event kind 1 posted across partitions at 109 ps, inside the window ending 110 ps"
	for from, want := range []string{"partition 0: " + msg, "partition 1: " + msg} {
		g := NewGroup(2, 100)
		g.SetThreads(2)
		s := g.Sims()
		sink := handlerFunc(func(*Event) {})
		s[from].Schedule(10, handlerFunc(func(ev *Event) { s[from].Post(s[1-from], ev.At()+99, sink, 1, ClassPrimary) }), 1)
		assert.PanicsWithValue(t, want, func() { _ = g.Run() }, "posted from partition %d", from)
	}
}

// TestGroupPacketSeq: packet numbers stay unique across partitions, and a
// lone partition numbers as a serial Sim does.
func TestGroupPacketSeq(t *testing.T) {
	g := NewGroup(3, 1)
	seen := map[uint64]bool{}
	for i := 0; i < 10; i++ {
		for _, s := range g.Sims() {
			p := s.NewPacket()
			assert.False(t, seen[p.Seq], "seq %d twice", p.Seq)
			seen[p.Seq] = true
		}
	}
	one := NewGroup(1, 1).Sims()[0]
	serial := NewSim()
	for i := 0; i < 5; i++ {
		assert.Equal(t, serial.NewPacket().Seq, one.NewPacket().Seq)
	}
}

// BenchmarkGroupWindow measures what a window costs beyond its events: two
// partitions on two threads, each with one event per window that posts one
// event to the other (the smallest window that exchanges anything). ns/op
// is one window: barrier, hand-over and the two events.
func BenchmarkGroupWindow(b *testing.B) {
	g := NewGroup(2, groupStep)
	s := g.Sims()
	var hops [2]handlerFunc
	for k := range hops {
		k := k
		hops[k] = handlerFunc(func(ev *Event) {
			if ev.Arg > 0 {
				s[k].Post(s[1-k], ev.At()+groupStep, hops[1-k], 1, ClassPrimary).Arg = ev.Arg - 1
			}
		})
	}
	s[0].Schedule(0, hops[0], 1).Arg = int64(b.N)
	b.ResetTimer()
	require.NoError(b, g.Run())
	b.ReportMetric(float64(g.Windows())/float64(b.N), "windows/op")
}
