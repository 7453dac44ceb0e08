package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// idealTime runs a schedule on an ideal fabric: every rank's link moves
// psPerByte per byte, a rank sends one transfer at a time in step order,
// starting it once its previous send is done and its WaitStep receive has
// landed; links never collide (each rank sends to one rank and receives from
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
	assert.Panics(t, func() { BusBWFactor("broadcast", 4) })
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
