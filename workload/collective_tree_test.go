package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// TestBtreeShape: NCCL's pictures (src/graph/trees.cc) of the binary tree
// over 14 ranks (0 → 8; 8 → 4, 12; 12 → 10, 13 since 14 is no rank; odd
// ranks leaves) and of the second trees: over 12 ranks the mirror, rooted
// at 11 with the one child 3, whose children are 7 and 1; over 13 the shift, rooted at 1 with the one
// child 9, whose children are 5 and 0 (the first tree's 12 → 0 shifted).
func TestBtreeShape(t *testing.T) {
	type nd struct {
		up   int
		down [2]int
	}
	for _, tc := range []struct {
		n, tree int
		want    map[int]nd
	}{
		{14, 0, map[int]nd{0: {-1, [2]int{-1, 8}}, 8: {0, [2]int{4, 12}}, 12: {8, [2]int{10, 13}}, 13: {12, [2]int{-1, -1}},
			10: {12, [2]int{9, 11}}, 4: {8, [2]int{2, 6}}, 1: {2, [2]int{-1, -1}}}},
		{12, 1, map[int]nd{11: {-1, [2]int{-1, 3}}, 3: {11, [2]int{7, 1}}, 7: {3, [2]int{9, 5}}, 0: {1, [2]int{-1, -1}}, 1: {3, [2]int{2, 0}}}},
		{13, 1, map[int]nd{1: {-1, [2]int{-1, 9}}, 9: {1, [2]int{5, 0}}, 0: {9, [2]int{11, -1}}, 2: {3, [2]int{-1, -1}}}},
	} {
		for r, w := range tc.want {
			up, down := dtree(tc.n, tc.tree, r)
			assert.Equal(t, w, nd{up, down}, "n %d tree %d rank %d", tc.n, tc.tree, r)
		}
	}
}

// TestDoubleTreeSpans: for 2..64 ranks each tree has one root, every
// other rank's parent names it as a child (and nothing else does), and
// the depth is ⌈log2 n⌉ in both trees (the root's one child heads a full
// binary tree of the rest). Every rank but the roots (and one more when n
// is odd, rank 0 under the shift) is a leaf in at least one tree, so no
// rank's link carries two trees' reductions from children.
func TestDoubleTreeSpans(t *testing.T) {
	for n := 2; n <= 64; n++ {
		trees := doubleTree(n)
		logn := 0
		for 1<<logn < n {
			logn++
		}
		var inner [2][]bool
		for tr, nodes := range trees {
			roots, maxDepth := 0, 0
			inner[tr] = make([]bool, n)
			for r, nd := range nodes {
				maxDepth = max(maxDepth, nd.depth)
				if nd.up < 0 {
					roots++
					continue
				}
				assert.Equal(t, r, trees[tr][nd.up].down[nd.side], "n %d tree %d rank %d", n, tr, r)
				inner[tr][nd.up] = true
			}
			children := 0
			for _, nd := range nodes {
				for _, d := range nd.down {
					if d >= 0 {
						children++
						assert.Equal(t, nodes[d].up, slicesIndexOf(nodes, nd), "n %d tree %d: child %d's parent", n, tr, d)
					}
				}
			}
			assert.Equal(t, 1, roots, "n %d tree %d", n, tr)
			assert.Equal(t, n-1, children, "n %d tree %d: every rank but the root a child once", n, tr)
			assert.Equal(t, logn, maxDepth, "n %d tree %d", n, tr)
		}
		both := 0
		for r := range n {
			if inner[0][r] && inner[1][r] {
				both++
			}
		}
		assert.LessOrEqual(t, both, n%2, "n %d: ranks inner in both trees", n)
	}
}

// slicesIndexOf is the rank of nd in nodes (nodes are compared whole).
func slicesIndexOf(nodes []treeNode, nd treeNode) int {
	for r := range nodes {
		if nodes[r] == nd {
			return r
		}
	}
	return -1
}

// TestTreeAllReduceReduces follows every byte of the double binary tree on
// 2..17 ranks (powers of two and not, mirrored and shifted second trees),
// with uneven halves and with fewer bytes than halves (1 byte: tree 1
// carries none), and checks the driver's waits and lanes whole and sliced.
// Steps: each tree's D = ⌈log2 n⌉ levels take a step per side a level,
// up and down, where a level has ranks on that side.
func TestTreeAllReduceReduces(t *testing.T) {
	for n := 2; n <= 17; n++ {
		for _, size := range []int64{1000, 3, 1} {
			s, err := TreeAllReduce(n, size)
			require.NoError(t, err)
			assert.Equal(t, AlgTree, s.Algorithm)
			followData(t, s)
			assertAsyncSafe(t, s, 0)
			assertAsyncSafe(t, s, 37)
		}
	}
}

func TestTreeHazardsCanFail(t *testing.T) {
	// The checker must see a broken tree schedule: a rank that sends its
	// sum up waiting for one child only (its other child's slice may not
	// have been added in), a rank that forwards the result down without
	// waiting for it, and two children landing in one place.
	s, err := TreeAllReduce(8, 1000)
	require.NoError(t, err)
	require.Empty(t, asyncHazards(s, 37))
	broken := func(mod func(x *Transfer) bool) Schedule {
		b, err := TreeAllReduce(8, 1000)
		require.NoError(t, err)
		for k := range b.Steps {
			for i := range b.Steps[k] {
				if mod(&b.Steps[k][i]) {
					return b
				}
			}
		}
		t.Fatal("nothing to break")
		return b
	}
	oneChild := broken(func(x *Transfer) bool {
		if x.Reduce && len(x.WaitAlso) > 0 {
			x.WaitAlso = nil
			return true
		}
		return false
	})
	assert.NotEmpty(t, asyncHazards(oneChild, 0), "an up-send waiting for one child")
	noWait := broken(func(x *Transfer) bool {
		if !x.Reduce && x.WaitStep != NoWait && len(x.WaitAlso) == 0 && x.Step == len(s.Steps)-1 {
			x.WaitStep = NoWait
			return true
		}
		return false
	})
	assert.NotEmpty(t, asyncHazards(noWait, 37), "a down-send that does not wait for the result")
	oneLand := broken(func(x *Transfer) bool {
		if x.Reduce && x.Land > 0 {
			x.Land = 0
			return true
		}
		return false
	})
	assert.NotEmpty(t, asyncHazards(oneLand, 0), "two children landing in one place")
	// The lanes matter too: with every transfer of a rank in one lane the
	// schedule stays safe (posting in order only adds waits), so the hb
	// graph must not depend on them for safety; the driver's run shows
	// they matter for time (TestTreeLanesPipeline).
	one, err := TreeAllReduce(8, 1000)
	require.NoError(t, err)
	for k := range one.Steps {
		for i := range one.Steps[k] {
			one.Steps[k][i].Lane = 0
		}
	}
	assert.Empty(t, asyncHazards(one, 37))
}

// TestTreeLanesPipeline runs the double binary tree on 8 EDR ranks of one
// switch, 2 MiB in 64 KiB slices (16 a half), twice: as built, each of a
// rank's transfers posting from its own lane, and with every transfer in
// lane 0, as the ring posts. In one lane a rank posts its transfers in
// step order, all of its reduction's before any of its broadcast's, so no
// rank passes a slice of the result down before the last slice of its own
// reduction is posted (the broadcast no longer overlaps the reduction),
// and a parent sends its slices to one child, then all of them to the
// other. Both must sum right; the lanes must be faster, with the same
// writes.
func TestTreeLanesPipeline(t *testing.T) {
	const n = 8
	run := CollectiveRun{Op: CollAllReduce, Algorithm: AlgTree, Bytes: 2 << 20, MTU: 4096, SliceBytes: 64 << 10, Seed: 3}
	res := map[bool]map[string]any{}
	for _, lanes := range []bool{true, false} {
		sched, err := TreeAllReduce(n, run.Bytes)
		require.NoError(t, err)
		if !lanes {
			for k := range sched.Steps {
				for i := range sched.Steps[k] {
					sched.Steps[k][i].Lane = 0
				}
			}
		}
		s, devs := collSwitch(t, n, perftestLink("EDR"), hca.Defaults())
		c := newCollective(run, sched)
		c.s = s
		c.setup(devs)
		m, err := (&Collective{c: c}).Run()
		require.NoError(t, err)
		assert.Equal(t, true, m["data_verified"], "lanes %v: %v", lanes, m["data_errors"])
		res[lanes] = m
	}
	t.Logf("lanes %.1f µs, one lane %.1f µs", res[true]["time_us"], res[false]["time_us"])
	assert.Equal(t, res[true]["rdma_writes"], res[false]["rdma_writes"])
	assert.Less(t, res[true]["time_us"].(float64), res[false]["time_us"].(float64))
}

// TestTreeSliceBytes: NCCL's chunk halving for the tree, worked by hand
// (a channel: S/2; depth ⌊log2 n⌋). 8 MiB over 8 ranks (depth 3): 4 MiB
// is 8 chunks of 512 KiB, under 24, so 256 KiB (16) and 128 KiB (32, not
// under 24); the later rules ask fewer. 1 MiB over 16 (depth 4): 512 KiB
// is 1 chunk, 128 KiB 4 (the first rule stops there), 64 KiB 8 (under 16,
// the second stops at 64 KiB), not under 4. 16 MiB over 16: 16 chunks,
// under 32, so 256 KiB (32, not under). 8 bytes: the floor, 32 KiB. 1 GiB:
// 1024 chunks, none halved.
func TestTreeSliceBytes(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		n     int
		want  int64
	}{{8 << 20, 8, 128 << 10}, {1 << 20, 16, 64 << 10}, {8, 16, 32 << 10}, {1 << 30, 16, 512 << 10}, {16 << 20, 16, 256 << 10}} {
		assert.Equal(t, tc.want, treeSliceBytes(tc.bytes, tc.n), "%d bytes over %d", tc.bytes, tc.n)
	}
	// In force when workload.slice_bytes is 0, and only then.
	s, err := TreeAllReduce(8, 8<<20)
	require.NoError(t, err)
	assert.Equal(t, int64(128<<10), newCollective(CollectiveRun{Op: CollAllReduce}, s).slice)
	assert.Equal(t, int64(1000), newCollective(CollectiveRun{Op: CollAllReduce, SliceBytes: 1000}, s).slice)
}

// TestTreeRunsOnTheHCAs runs the tree on one EDR switch, mirrored (even n)
// and shifted (odd n) second trees, with a byte (tree 1 carries none: a
// zero-byte write still signals), 3 bytes, and 100 kB whole (NCCL's chunk:
// 32 KiB, TestTreeSliceBytes) and in 8 KiB slices: every rank must end
// with the sum, and every write posted is one of the schedule's slices
// (each tree's n−1 edges, up and down, in as many slices as a half
// needs).
func TestTreeRunsOnTheHCAs(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		for _, tc := range []struct{ bytes, slice int64 }{{1, 0}, {3, 0}, {100000, 0}, {100000, 8192}} {
			s, devs := collSwitch(t, n, perftestLink("EDR"), hca.Defaults())
			m, err := RunCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Algorithm: AlgTree, Bytes: tc.bytes, MTU: 4096, SliceBytes: tc.slice, Seed: 9})
			require.NoError(t, err)
			assert.Equal(t, true, m["data_verified"], "n %d %+v: %v", n, tc, m["data_errors"])
			slice := tc.slice
			if slice == 0 {
				slice = treeSliceBytes(tc.bytes, n)
			}
			writes := 0
			for h := range 2 {
				_, half := chunk(tc.bytes, 2, h)
				writes += 2 * (n - 1) * int(max(1, (half+slice-1)/slice))
			}
			assert.Equal(t, writes, m["rdma_writes"], "n %d %+v", n, tc)
		}
	}
}

// TestTreeTreesHaveConnectionsOfTheirOwn: over 8 ranks, ranks 1 and 2 are
// joined by an edge of each tree (tree 0: 2 is 1's parent; tree 1, the
// mirror: 1 is 2's parent), so rank 1 sends rank 2 both its tree-0
// reduction, a leaf's, every slice ready at the start, and its tree-1
// broadcast, each slice ready once it has come down from tree 1's root.
// NCCL sends them on two connections (one a channel), each with its own
// QPs; on one QP, a FIFO, every broadcast slice would queue behind the
// whole reduction and the first would land after the last reduction slice.
// On two, the first broadcast slice leaves rank 1 as soon as it has come
// back down from tree 1's root, while rank 1 is still sending the 16
// slices of its tree-0 half at a share of its link. The test fails if the
// two trees share a send queue (tried: every broadcast slice then lands
// after the last reduction slice).
func TestTreeTreesHaveConnectionsOfTheirOwn(t *testing.T) {
	const n = 8
	run := CollectiveRun{Op: CollAllReduce, Algorithm: AlgTree, Bytes: 2 << 20, MTU: 4096, SliceBytes: 64 << 10, Seed: 3}
	s, devs := collSwitch(t, n, perftestLink("EDR"), hca.Defaults())
	cl, err := BuildCollectiveOn(s, devs, run)
	require.NoError(t, err)
	m, err := cl.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	c := cl.c
	to2 := 0
	for _, cn := range c.ranks[1].conns {
		if cn.dst == 2 {
			to2++
		}
	}
	assert.Equal(t, 2, to2, "rank 1 connects to rank 2 once for each tree")
	// Rank 2's receives from rank 1: its tree-0 child's reduction (lane 0)
	// and its tree-1 parent's broadcast (lanes 4, 5).
	var firstDown, lastUp ib.PS = -1, -1
	for step, recv := range c.recvOf {
		x := recv[2]
		if x == nil || x.Src != 1 {
			continue
		}
		for sl := range c.sliceCount(x.Bytes) {
			at := c.ranks[2].gotAt[c.slot(step, sl)]
			require.Positive(t, at)
			if x.Lane/3 == 1 && (firstDown < 0 || at < firstDown) {
				firstDown = at
			}
			if x.Lane/3 == 0 {
				lastUp = max(lastUp, at)
			}
		}
	}
	require.Positive(t, firstDown)
	require.Positive(t, lastUp)
	t.Logf("rank 2 from rank 1: first tree-1 broadcast slice %.1f µs, last tree-0 reduction slice %.1f µs after the start",
		(firstDown-c.start).Nanoseconds()/1000, (lastUp-c.start).Nanoseconds()/1000)
	assert.Less(t, firstDown, lastUp, "the broadcast does not wait for the other tree's reduction")
}
