package workload

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// idealTime runs a schedule on an ideal fabric: every rank's link moves
// psPerByte per byte, a rank sends one transfer at a time in step order,
// starting it once its previous send is done and its WaitStep (and WaitAlso)
// receives have landed; links never collide (each rank sends to one rank and receives from
// one per step in both schedules). It returns when the last byte lands.
func idealTime(t *testing.T, s Schedule, psPerByte int64) ib.PS {
	sendFree := make([]int64, s.Ranks)
	recvAt := make([][]int64, len(s.Steps)) // step → dst rank → arrival time
	end := int64(0)
	for step, transfers := range s.Steps {
		recvAt[step] = make([]int64, s.Ranks)
		for _, tr := range transfers {
			require.Equal(t, step, tr.Step)
			start := sendFree[tr.Src]
			if tr.WaitStep != NoWait {
				start = max(start, recvAt[tr.WaitStep][tr.Src])
			}
			for _, w := range tr.WaitAlso {
				start = max(start, recvAt[w][tr.Src])
			}
			done := start + tr.Bytes*psPerByte
			sendFree[tr.Src] = done
			recvAt[step][tr.Dst] = done
			end = max(end, done)
		}
	}
	return ib.PS(end)
}

// TestRingAllReduceReduces follows the data: each rank's chunk c starts as
// its own contribution (bit i of a mask); a reduce transfer ORs the sender's
// chunk into the receiver's, a plain one copies it. At the end every rank
// must hold every chunk with every rank's bit.
func TestRingAllReduceReduces(t *testing.T) {
	for n := 2; n <= 9; n++ {
		s, err := RingAllReduce(n, 1000)
		require.NoError(t, err)
		require.Len(t, s.Steps, 2*(n-1))
		state := make([][]uint64, n)
		for i := range state {
			state[i] = make([]uint64, n)
			for c := range state[i] {
				state[i][c] = 1 << i
			}
		}
		chunkOf := func(off int64) int {
			for c := range n {
				if o, _ := chunk(1000, n, c); o == off {
					return c
				}
			}
			t.Fatalf("offset %d is no chunk's", off)
			return -1
		}
		for _, step := range s.Steps {
			sends, recvs := make([]int, n), make([]int, n)
			next := make([][]uint64, n)
			for i := range next {
				next[i] = append([]uint64(nil), state[i]...)
			}
			for _, tr := range step {
				sends[tr.Src]++
				recvs[tr.Dst]++
				c := chunkOf(tr.Offset)
				if tr.Reduce {
					next[tr.Dst][c] |= state[tr.Src][c]
				} else {
					next[tr.Dst][c] = state[tr.Src][c]
				}
			}
			state = next
			for i := range n {
				assert.Equal(t, 1, sends[i])
				assert.Equal(t, 1, recvs[i])
			}
		}
		all := uint64(1)<<n - 1
		for i := range n {
			for c := range n {
				assert.Equal(t, all, state[i][c], "n %d rank %d chunk %d", n, i, c)
			}
		}
	}
}

// TestRingAllReduceBusBW: on the ideal fabric each rank sends 2(n−1) chunks
// of S/n bytes back to back (each forwarded chunk arrives exactly when the
// sender's link frees), so t = 2(n−1)·(S/n)·(ps per byte), and nccl-tests'
// busbw = S/t · 2(n−1)/n = 1/(ps per byte) — the link rate, for every n.
// At 400 Gb/s a byte takes 20 ps: 50 GB/s.
func TestRingAllReduceBusBW(t *testing.T) {
	for _, n := range []int{2, 4, 8, 16} {
		size := int64(n) * 1 << 20
		s, err := RingAllReduce(n, size)
		require.NoError(t, err)
		got := idealTime(t, s, 20)
		want := ib.PS(2 * int64(n-1) * (size / int64(n)) * 20)
		assert.Equal(t, want, got, "n %d", n)
		assert.InDelta(t, 50.0, s.BusBW(got), 1e-9, "n %d", n)
		assert.InDelta(t, 50.0/(2*float64(n-1)/float64(n)), s.AlgBW(got), 1e-9)
	}
}

func TestAllToAll(t *testing.T) {
	for n := 2; n <= 9; n++ {
		s, err := AllToAll(n, int64(n)*4096+int64(n-1)) // n−1 bytes over: truncated to n blocks of 4096
		require.NoError(t, err)
		assert.Equal(t, int64(n)*4096, s.Bytes)
		require.Len(t, s.Steps, n-1)
		pairs := map[[2]int]bool{}
		for _, step := range s.Steps {
			recvs := make([]int, n)
			for i, tr := range step {
				assert.Equal(t, i, tr.Src)
				assert.NotEqual(t, tr.Src, tr.Dst)
				assert.Equal(t, int64(tr.Dst)*4096, tr.Offset, "block j goes to rank j")
				assert.Equal(t, int64(4096), tr.Bytes)
				assert.False(t, tr.Reduce)
				assert.False(t, pairs[[2]int{tr.Src, tr.Dst}], "pair sent twice")
				pairs[[2]int{tr.Src, tr.Dst}] = true
				recvs[tr.Dst]++
			}
			for _, c := range recvs {
				assert.Equal(t, 1, c, "one receive per rank per step: no incast")
			}
		}
		assert.Len(t, pairs, n*(n-1), "every ordered pair once")
		// Ideal fabric: each rank sends (n−1)·S/n bytes, t = (n−1)·(S/n)·20 ps,
		// busbw = S/t · (n−1)/n = 50 GB/s.
		got := idealTime(t, s, 20)
		assert.Equal(t, ib.PS(int64(n-1)*4096*20), got)
		assert.InDelta(t, 50.0, s.BusBW(got), 1e-9)
	}
}

func TestBandwidthDefinitions(t *testing.T) {
	// 1e9 bytes in one second: 1 GB/s.
	assert.InDelta(t, 1.0, AlgBW(1e9, ib.Second), 1e-12)
	// nccl-tests doc/PERFORMANCE.md: 2(n−1)/n and (n−1)/n.
	assert.Equal(t, 1.75, BusBWFactor(CollAllReduce, 8))
	assert.Equal(t, 0.875, BusBWFactor(CollAllToAll, 8))
	assert.Equal(t, 1.0, BusBWFactor(CollAllReduce, 2))
	assert.Panics(t, func() { BusBWFactor("gather", 4) })
	assert.Panics(t, func() { AlgBW(1, 0) })
}

func TestChunk(t *testing.T) {
	// 10 bytes over 4 chunks: 3, 3, 2, 2 at offsets 0, 3, 6, 8.
	want := [][2]int64{{0, 3}, {3, 3}, {6, 2}, {8, 2}}
	for c, w := range want {
		off, n := chunk(10, 4, c)
		assert.Equal(t, w, [2]int64{off, n}, "chunk %d", c)
	}
}

func TestCollectiveErrors(t *testing.T) {
	_, err := RingAllReduce(1, 100)
	assert.EqualError(t, err, "workload.kind: allreduce needs at least 2 ranks (hosts), the topology has 1")
	_, err = RingAllReduce(4, 0)
	assert.EqualError(t, err, "workload.size: 0 bytes is not a collective size (at least 1)")
	_, err = AllToAll(8, 7)
	assert.EqualError(t, err, "workload.size: 7 bytes is less than one byte per rank for an all-to-all over 8 ranks")
}

// followData runs a schedule step by step on every byte: a rank's byte
// holds how many times each rank's contribution is in it (a count per rank,
// so a contribution added twice shows). A reduce adds the sender's counts
// into the receiver's, a plain transfer copies them; the sends of a step
// read the state before it. At the end every rank's every byte must hold
// each contribution exactly once.
func followData(t *testing.T, s Schedule) {
	t.Helper()
	n, size := s.Ranks, int(s.Bytes)
	state := make([][][]int, n)
	for i := range state {
		state[i] = make([][]int, size)
		for b := range state[i] {
			state[i][b] = make([]int, n)
			state[i][b][i] = 1
		}
	}
	for k, step := range s.Steps {
		sends, recvs := make([]int, n), make([]int, n)
		old := make([][][]int, n)
		for i := range old {
			old[i] = make([][]int, size)
			for b := range old[i] {
				old[i][b] = slices.Clone(state[i][b])
			}
		}
		for _, tr := range step {
			require.Equal(t, k, tr.Step)
			sends[tr.Src]++
			recvs[tr.Dst]++
			for b := tr.Offset; b < tr.Offset+tr.Bytes; b++ {
				for r := range n {
					if tr.Reduce {
						state[tr.Dst][b][r] += old[tr.Src][b][r]
					} else {
						state[tr.Dst][b][r] = old[tr.Src][b][r]
					}
				}
			}
		}
		for i := range n {
			assert.LessOrEqual(t, sends[i], 1, "step %d rank %d sends once at most", k, i)
			assert.LessOrEqual(t, recvs[i], 1, "step %d rank %d receives once at most", k, i)
		}
	}
	// What each rank's byte must hold: all-reduce, every contribution once;
	// reduce-scatter, that in the rank's own block (the rest is not
	// checked); all-gather, the block owner's contribution alone;
	// broadcast, the root's alone; reduce, every contribution once at the
	// root (the others hold partial sums).
	block := s.Bytes / int64(n)
	for i := range n {
		if s.Op == CollReduce && i != s.Root {
			continue // a reduce's result is the root's alone
		}
		for b := range size {
			want := make([]int, n)
			switch s.Op {
			case CollAllGather:
				want[int64(b)/block] = 1
			case CollBroadcast:
				want[s.Root] = 1
			case CollReduceScatter:
				if int64(b)/block != int64(i) {
					continue
				}
				fallthrough
			default:
				for r := range want {
					want[r] = 1
				}
			}
			if !assert.Equal(t, want, state[i][b], "%s n %d size %d rank %d byte %d", s.Op, n, size, i, b) {
				return
			}
		}
	}
}

// TestRingHalves: the ring all-gather and reduce-scatter take n−1 steps,
// each rank sending once and receiving once a step, and leave every byte
// as nccl's operations define it (followData), with the driver's waits
// safe whole and sliced; uneven sizes are cut to n whole blocks (as
// nccl-tests' count/nranks), and fewer bytes than ranks is refused.
func TestRingHalves(t *testing.T) {
	for _, tc := range []struct {
		op    string
		build func(int, int64) (Schedule, error)
	}{{CollAllGather, RingAllGather}, {CollReduceScatter, RingReduceScatter}} {
		for n := 2; n <= 9; n++ {
			for _, size := range []int64{int64(n), 1000} {
				s, err := tc.build(n, size)
				require.NoError(t, err)
				assert.Equal(t, tc.op, s.Op)
				assert.Equal(t, size/int64(n)*int64(n), s.Bytes)
				require.Len(t, s.Steps, n-1)
				followData(t, s)
				assertAsyncSafe(t, s, 0)
				assertAsyncSafe(t, s, 37)
			}
		}
		_, err := tc.build(8, 7)
		assert.EqualError(t, err, "workload.size: 7 bytes is less than one byte per rank for a "+tc.op+" over 8 ranks")
		// idealTime's fabric: n−1 blocks of S/n back to back per rank (each
		// forwarded block lands when the sender's link frees), t =
		// (n−1)·(S/n)·20 ps, busbw = S/t · (n−1)/n = 50 GB/s, the link.
		for _, n := range []int{2, 4, 8, 16} {
			size := int64(n) << 20
			s, err := tc.build(n, size)
			require.NoError(t, err)
			got := idealTime(t, s, 20)
			assert.Equal(t, ib.PS(int64(n-1)*(size/int64(n))*20), got, "%s n %d", tc.op, n)
			assert.InDelta(t, 50.0, s.BusBW(got), 1e-9, "%s n %d", tc.op, n)
		}
	}
	assert.Equal(t, 0.875, BusBWFactor(CollAllGather, 8))
	assert.Equal(t, 0.875, BusBWFactor(CollReduceScatter, 8))
}

// TestMPIAllReducesReduce follows every byte of Rabenseifner's and
// recursive doubling's schedules and checks what running them
// asynchronously needs, on 2..17 ranks (powers of two and not), with
// uneven chunks and with fewer bytes than chunks. With p the largest power
// of two ≤ n: Rabenseifner takes log2(p) halving and as many doubling
// steps, recursive doubling log2(p) exchanges, and both a fold before and
// after when p < n.
func TestMPIAllReducesReduce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(int, int64) (Schedule, error)
		steps func(logp int) int
		sizes []int64
	}{
		{AlgRabenseifner, RabenseifnerAllReduce, func(logp int) int { return 2 * logp }, []int64{1000, 3, 64}},
		{AlgRecursiveDoubling, RecursiveDoublingAllReduce, func(logp int) int { return logp }, []int64{100, 3}},
	} {
		for n := 2; n <= 17; n++ {
			for _, size := range tc.sizes {
				s, err := tc.build(n, size)
				require.NoError(t, err)
				p, logp := pow2Below(n)
				want := tc.steps(logp)
				if p < n {
					want += 2
				}
				require.Len(t, s.Steps, want, "%s n %d", tc.name, n)
				followData(t, s)
				assertAsyncSafe(t, s, 0)
				assertAsyncSafe(t, s, 37)
			}
		}
	}
}

// pow2Below returns the largest power of two ≤ n and its log2.
func pow2Below(n int) (p, logp int) {
	p = 1
	for p*2 <= n {
		p, logp = p*2, logp+1
	}
	return p, logp
}

// assertAsyncSafe checks, for slices of slice bytes, what the runner needs
// beyond the step-by-step data flow, since it runs a send as soon as its
// inputs are in, not in lockstep. "a happens before b" is built from the
// runner's own rules (collective.sendsOf): a rank posts each lane's
// slices in order (lanesOf; one lane but for the tree), a slice arrives
// after it is posted, and a slice is posted after the arrival of every
// slot it waits on. Then:
//   - read after write: a slice is posted after the arrival of every
//     earlier receive of its rank that wrote any of its bytes (the
//     reductions into a range and the gathers it forwards);
//   - write after read: a slice that writes bytes of a rank's data which
//     an earlier send of that rank reads is posted after that send arrived
//     (so its bytes were read);
//   - write after write: a gather into bytes another receive wrote is
//     posted after that receive arrived;
//   - landing: a rank's reduce receives land in disjoint places of its
//     landing area, within Schedule.Landing, so none overwrites another's
//     data before it is added, whatever the order of arrival.
func assertAsyncSafe(t *testing.T, s Schedule, slice int64) {
	t.Helper()
	for _, msg := range asyncHazards(s, slice) {
		t.Errorf("n %d size %d slice %d: %s", s.Ranks, s.Bytes, slice, msg)
	}
}

func asyncHazards(s Schedule, slice int64) []string { return asyncHazardsOf(s, slice, true) }

// asyncHazardsOf is asyncHazards; deferring false drops the driver's rule
// that a received slice is added in only after the rank's own sends of
// the step that read its bytes completed (defersOf), to show it matters.
func asyncHazardsOf(s Schedule, slice int64, deferring bool) []string {
	c := newCollective(CollectiveRun{Op: s.Op, SliceBytes: slice}, s)
	type node struct {
		x      *Transfer
		lo, hi int64 // the slice's bytes
		slot   int   // its arrival slot at x.Dst
		waits  []int32
		prev   int // the rank's previous slice, or -1
	}
	var nodes []node
	bySlot := map[[2]int]int{}            // (dst rank, slot) → node
	bySend := map[[2]int]int{}            // (src rank, send index) → node
	defers := make([][3][]int32, s.Ranks) // per rank: defersOf
	for r := range s.Ranks {
		sends, waits := c.sendsOf(r)
		from, to, idx := c.defersOf(r, sends)
		defers[r] = [3][]int32{from, to, idx}
		before := make([]int, len(sends)) // each send's predecessor in its lane, or -1
		for _, lane := range lanesOf(sends) {
			for k, i := range lane {
				before[i] = -1
				if k > 0 {
					before[i] = int(lane[k-1])
				}
			}
		}
		base := len(nodes)
		for k, sd := range sends {
			prev := -1
			if before[k] >= 0 {
				prev = base + before[k]
			}
			nd := node{x: sd.xfer, lo: sd.xfer.Offset + sd.off, hi: sd.xfer.Offset + sd.off + sd.n,
				slot: c.slot(sd.xfer.Step, sd.slice), waits: waits[sd.w0:sd.w1], prev: prev}
			bySlot[[2]int{sd.xfer.Dst, nd.slot}] = len(nodes)
			bySend[[2]int{r, k}] = len(nodes)
			nodes = append(nodes, nd)
		}
	}
	// Graph: node 3i is slice i's posting, 3i+1 its arrival, 3i+2 when the
	// receiver takes it in (adds it, marks it arrived): at its arrival, or
	// once the receiver's own sends it is deferred on have arrived (their
	// completions come later still).
	edges := make([][]int, 3*len(nodes))
	for i, nd := range nodes {
		edges[3*i] = append(edges[3*i], 3*i+1)
		edges[3*i+1] = append(edges[3*i+1], 3*i+2)
		if nd.prev >= 0 {
			edges[3*nd.prev] = append(edges[3*nd.prev], 3*i)
		}
		for _, w := range nd.waits {
			j, ok := bySlot[[2]int{nd.x.Src, int(w)}]
			if !ok {
				return []string{fmt.Sprintf("step %d rank %d waits on slot %d, which no slice fills", nd.x.Step, nd.x.Src, w)}
			}
			edges[3*j+2] = append(edges[3*j+2], 3*i)
		}
		if deferring {
			d := defers[nd.x.Dst]
			for _, k := range d[2][d[0][nd.slot]:d[1][nd.slot]] {
				j := bySend[[2]int{nd.x.Dst, int(k)}]
				edges[3*j+1] = append(edges[3*j+1], 3*i+2)
			}
		}
	}
	reach := map[int][]bool{}
	from := func(v int) []bool {
		if reach[v] == nil {
			seen := make([]bool, len(edges))
			stack := []int{v}
			for len(stack) > 0 {
				u := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, w := range edges[u] {
					if !seen[w] {
						seen[w] = true
						stack = append(stack, w)
					}
				}
			}
			reach[v] = seen
		}
		return reach[v]
	}
	// writes is when slice i's bytes change its receiver's data: a reduce
	// when it is added in, a gather when the HCA places it.
	writes := func(i int) int {
		if nodes[i].x.Reduce {
			return 3*i + 2
		}
		return 3*i + 1
	}
	overlap := func(a, b node) bool { return a.lo < b.hi && b.lo < a.hi }
	var bad []string
	for j, y := range nodes {
		for i, x := range nodes {
			// Same step too: a rank that sends and receives the same bytes
			// in one step (an exchange) sends what it had before the step,
			// and needs its send read before the receive is added in (the
			// second case; the first, read after write, is across steps).
			if i == j || x.x.Step > y.x.Step || !overlap(x, y) {
				continue
			}
			switch {
			case x.x.Dst == y.x.Src && x.x.Step < y.x.Step && !from(writes(i))[3*j]:
				bad = append(bad, fmt.Sprintf("step %d rank %d sends bytes [%d, %d) before step %d's receive, which wrote some, surely came", y.x.Step, y.x.Src, y.lo, y.hi, x.x.Step))
			case x.x.Src == y.x.Dst && !from(3*i + 1)[writes(j)]:
				bad = append(bad, fmt.Sprintf("step %d writes bytes [%d, %d) of rank %d, which its step %d send may not have read yet", y.x.Step, y.lo, y.hi, y.x.Dst, x.x.Step))
			case x.x.Dst == y.x.Dst && !y.x.Reduce && !from(writes(i))[3*j+1]:
				bad = append(bad, fmt.Sprintf("step %d gathers bytes [%d, %d) into rank %d, which step %d may still write", y.x.Step, y.lo, y.hi, y.x.Dst, x.x.Step))
			}
		}
	}
	for r := range s.Ranks {
		var lands [][2]int64
		for k := range s.Steps {
			for _, x := range s.Steps[k] {
				if x.Dst == r && x.Reduce && x.Bytes > 0 {
					lands = append(lands, [2]int64{x.Land, x.Land + x.Bytes})
				}
			}
		}
		slices.SortFunc(lands, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		for k, l := range lands {
			if l[0] < 0 || l[1] > s.Landing || k > 0 && l[0] < lands[k-1][1] {
				bad = append(bad, fmt.Sprintf("rank %d: landing [%d, %d) overlaps another or leaves the %d-byte area", r, l[0], l[1], s.Landing))
			}
		}
	}
	return bad
}

func TestAsyncHazardsCanFail(t *testing.T) {
	// The checker of the runner's rules must see what breaks them. The ring
	// and Rabenseifner are clean, whole or sliced. Without WaitAlso, a
	// sliced halving step sends bytes whose reduction by an earlier step
	// has not surely come (whole, the step before waited on that one: no
	// hazard); with every reduce landing at its data offset (the ring's
	// rule) a folded rank's first halving lands where its fold landed; a
	// ring forward that does not wait sends what has not come.
	for n := 2; n <= 9; n++ {
		r, err := RingAllReduce(n, 1000)
		require.NoError(t, err)
		assert.Empty(t, asyncHazards(r, 0), "ring n %d", n)
		assert.Empty(t, asyncHazards(r, 37), "ring n %d sliced", n)
	}
	s, err := RabenseifnerAllReduce(8, 1000)
	require.NoError(t, err)
	for k := range s.Steps {
		for i := range s.Steps[k] {
			s.Steps[k][i].WaitAlso = nil
		}
	}
	assert.Empty(t, asyncHazards(s, 0), "whole transfers need only the step before")
	assert.NotEmpty(t, asyncHazards(s, 37), "sliced Rabenseifner without WaitAlso")
	s, err = RabenseifnerAllReduce(6, 1000)
	require.NoError(t, err)
	for k := range s.Steps {
		for i := range s.Steps[k] {
			s.Steps[k][i].Land = s.Steps[k][i].Offset
		}
	}
	assert.NotEmpty(t, asyncHazards(s, 0), "Rabenseifner landing at data offsets")
	r, err := RingAllReduce(4, 1000)
	require.NoError(t, err)
	r.Steps[4][1].WaitStep = NoWait
	assert.NotEmpty(t, asyncHazards(r, 0), "a ring forward that does not wait")
	// An exchange of whole vectors (recursive doubling's step): each rank's
	// send reads what its receive adds into, in the same step.
	x := Schedule{Op: CollAllReduce, Ranks: 2, Bytes: 100, Landing: 100, Steps: [][]Transfer{{
		{Step: 0, Src: 0, Dst: 1, Bytes: 100, Reduce: true, WaitStep: NoWait},
		{Step: 0, Src: 1, Dst: 0, Bytes: 100, Reduce: true, WaitStep: NoWait}}}}
	assert.Empty(t, asyncHazards(x, 0), "an exchange: the driver adds after its own send completed")
	assert.NotEmpty(t, asyncHazardsOf(x, 0, false), "an exchange added in on arrival")
	rd, err := RecursiveDoublingAllReduce(8, 1000)
	require.NoError(t, err)
	assert.Empty(t, asyncHazards(rd, 0))
	assert.Empty(t, asyncHazards(rd, 37))
	assert.NotEmpty(t, asyncHazardsOf(rd, 37, false), "recursive doubling without the deferral")
	s, err = RabenseifnerAllReduce(8, 1000)
	require.NoError(t, err)
	assert.Empty(t, asyncHazardsOf(s, 37, false), "Rabenseifner sends and receives disjoint bytes in a step: nothing to defer")
}

// TestRabenseifnerAllReduceBusBW: on the ideal fabric of idealTime, with p
// ranks (a power of two) and S divisible by p, the halving steps move S/2,
// S/4, …, S/p bytes and each must wait for the step before (a rank sends
// half of what it just reduced), so they take (S − S/p)·ps per byte, and the
// doubling steps as long: t = 2(S − S/p)·ps per byte = 2(p−1)/p·S·ps per
// byte, the ring's time, and busbw = 1/(ps per byte), the link rate. With
// n = p + r ranks the fold adds a whole vector before and after: t =
// (2S + 2(S − S/p))·ps per byte, and busbw = 2(n−1)/n · S / t is below the
// link rate.
func TestRabenseifnerAllReduceBusBW(t *testing.T) {
	for _, n := range []int{2, 4, 8, 16, 6, 12} {
		p, _ := pow2Below(n)
		size := int64(16) << 20
		s, err := RabenseifnerAllReduce(n, size)
		require.NoError(t, err)
		got := idealTime(t, s, 20)
		want := 2 * (size - size/int64(p)) * 20
		if p < n {
			want += 2 * size * 20
		}
		assert.Equal(t, ib.PS(want), got, "n %d", n)
		if p == n {
			assert.InDelta(t, 50.0, s.BusBW(got), 1e-9, "n %d", n)
		} else {
			assert.InDelta(t, 50.0*float64(size)*2*float64(n-1)/float64(n)/float64(2*size+2*(size-size/int64(p))), s.BusBW(got), 1e-9, "n %d", n)
			assert.Less(t, s.BusBW(got), 50.0)
		}
		// Each rank of the p sends 2(p−1)/p·S bytes, as in the ring.
		sent := make([]int64, n)
		for _, step := range s.Steps {
			for _, x := range step {
				sent[x.Src] += x.Bytes
			}
		}
		assert.Equal(t, 2*(size-size/int64(p))+map[bool]int64{true: size, false: 0}[p < n], slices.Max(sent), "n %d", n)
	}
}

func TestAllReduceAlgorithms(t *testing.T) {
	s, err := AllReduce("", 4, 100)
	require.NoError(t, err)
	assert.Equal(t, AlgRing, s.Algorithm)
	s, err = AllReduce(AlgRabenseifner, 4, 100)
	require.NoError(t, err)
	assert.Equal(t, AlgRabenseifner, s.Algorithm)
	assert.Len(t, s.Steps, 4)
	s, err = AllReduce(AlgTree, 4, 100)
	require.NoError(t, err)
	assert.Equal(t, AlgTree, s.Algorithm)
	_, err = AllReduce("bruck", 4, 100)
	assert.EqualError(t, err, `workload.algorithm: "bruck" is not an all-reduce algorithm (ring, rabenseifner, recursive-doubling, tree, sharp)`)
	assert.EqualError(t, checkAlgorithm(CollAllToAll, AlgRing, "workload"),
		`workload.algorithm: "ring" is set, but workload.kind alltoall does not use it (an all-reduce's: ring, rabenseifner, recursive-doubling, tree, sharp; set workload.kind: allreduce, or remove the key)`)
	assert.NoError(t, checkAlgorithm(CollAllToAll, "", "workload"))
}

// TestRecursiveDoublingIdealTime: on idealTime's fabric each of the
// log2(p) exchanges moves the whole vector and waits for the one before,
// so t = log2(p)·S·ps per byte (2S more with a fold): the fewest steps, but
// log2(p)·S bytes a rank against the ring's 2(p−1)/p·S, so for p ≥ 4 its
// busbw is below the link rate: 2(p−1)/p / log2(p) of it (p = 8: 7/12).
func TestRecursiveDoublingIdealTime(t *testing.T) {
	for _, n := range []int{2, 4, 8, 16, 6} {
		p, logp := pow2Below(n)
		size := int64(1) << 20
		s, err := RecursiveDoublingAllReduce(n, size)
		require.NoError(t, err)
		got := idealTime(t, s, 20)
		want := int64(logp) * size * 20
		if p < n {
			want += 2 * size * 20
		}
		assert.Equal(t, ib.PS(want), got, "n %d", n)
		if p == n {
			assert.InDelta(t, 50.0*2*float64(n-1)/float64(n)/float64(logp), s.BusBW(got), 1e-9, "n %d", n)
		}
		assert.Equal(t, int64(logp)*size+map[bool]int64{true: size, false: 0}[p < n], s.Landing, "n %d: a landing place a step", n)
	}
}

// TestRingChains: broadcast and reduce take n − 1 steps along the chain
// (down from the root, up to it), one transfer each; every byte ends as
// the operation defines it (followData: the root's everywhere; the sum at
// the root), the driver's waits safe whole and sliced, for every root. On
// idealTime's fabric (whole transfers, each waiting for the one before) t
// = (n−1)·S·20 ps, so busbw = algbw = S/t = 50/(n−1) GB/s: without slices
// a chain is n−1 times the link time (the slices' pipeline is the fabric
// test's). A root outside the ranks is refused.
func TestRingChains(t *testing.T) {
	for _, tc := range []struct {
		op    string
		build func(int, int, int64) (Schedule, error)
	}{{CollBroadcast, RingBroadcast}, {CollReduce, RingReduce}} {
		for n := 2; n <= 9; n++ {
			for root := range n {
				for _, size := range []int64{1, 1000} {
					s, err := tc.build(n, root, size)
					require.NoError(t, err)
					require.Len(t, s.Steps, n-1)
					assert.Equal(t, root, s.Root)
					followData(t, s)
					assertAsyncSafe(t, s, 0)
					assertAsyncSafe(t, s, 37)
				}
			}
			size := int64(1) << 20
			s, err := tc.build(n, n-1, size)
			require.NoError(t, err)
			got := idealTime(t, s, 20)
			assert.Equal(t, ib.PS(int64(n-1)*size*20), got, "%s n %d", tc.op, n)
			assert.InDelta(t, 50.0/float64(n-1), s.BusBW(got), 1e-9, "%s n %d", tc.op, n)
		}
		assert.Equal(t, 1.0, BusBWFactor(tc.op, 8))
		_, err := tc.build(8, 8, 100)
		assert.EqualError(t, err, "workload.root: 8 is not a rank of the "+tc.op+" over 8 ranks (0 to 7)")
		_, err = tc.build(8, -1, 100)
		assert.EqualError(t, err, "workload.root: -1 is not a rank of the "+tc.op+" over 8 ranks (0 to 7)")
	}
	// Root 0 is the chain the operations had before workload.root: rank t
	// to t+1 (broadcast), rank n−1−t to n−2−t (reduce).
	b, err := RingBroadcast(5, 0, 10)
	require.NoError(t, err)
	r, err := RingReduce(5, 0, 10)
	require.NoError(t, err)
	for k := range 4 {
		assert.Equal(t, [2]int{k, k + 1}, [2]int{b.Steps[k][0].Src, b.Steps[k][0].Dst})
		assert.Equal(t, [2]int{4 - k, 3 - k}, [2]int{r.Steps[k][0].Src, r.Steps[k][0].Dst})
	}
	// Root 3 of 5: broadcast 3 → 4 → 0 → 1 → 2; reduce 2 → 1 → 0 → 4 → 3.
	b, err = RingBroadcast(5, 3, 10)
	require.NoError(t, err)
	r, err = RingReduce(5, 3, 10)
	require.NoError(t, err)
	for k, w := range [][2]int{{3, 4}, {4, 0}, {0, 1}, {1, 2}} {
		assert.Equal(t, w, [2]int{b.Steps[k][0].Src, b.Steps[k][0].Dst})
	}
	for k, w := range [][2]int{{2, 1}, {1, 0}, {0, 4}, {4, 3}} {
		assert.Equal(t, w, [2]int{r.Steps[k][0].Src, r.Steps[k][0].Dst})
	}
}
