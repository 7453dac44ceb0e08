package workload

import (
	"encoding/binary"
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// The tree runs of these tests: 4 cx7 ranks on one NDR switch, 256 KiB a
// rank in 4 KiB slices (one packet a write), one warm-up and two timed
// iterations back to back; rank 0 polls slowly (400 ns) and rank 3
// posts slowly (300 ns a post), so the ranks drift apart, one child of a
// parent sends later than the other (tree 0: 0 → 2 → {1, 3}), and
// rank 3's clear-to-sends leave late: its parent's writes to it are
// posted and complete late, so the send slot to it binds where the one to
// its sibling does not.
//
// The writes, from the tree's edges, slices and iterations: each tree is
// over the 4 ranks, so it has 3 edges (tree 0: 0–2, 2–1, 2–3; tree 1, its
// mirror, 3–1, 1–2, 1–0), and each edge two connections, one a direction
// (the child's sum up, the parent's result down), each carrying the
// tree's half, 128 KiB, in 128 KiB / 4 KiB = 32 writes an iteration. So
// 2 trees × 3 edges × 2 directions = 12 connections of 32 writes: 384
// data writes an iteration, and as many clear-to-sends (one a write).
const (
	treeCTSRanks    = 4
	treeCTSBytes    = 256 << 10
	treeCTSSlice    = 4 << 10
	treeCTSPerConn  = treeCTSBytes / 2 / treeCTSSlice // 32
	treeCTSConns    = 2 * (treeCTSRanks - 1) * 2      // 12
	treeCTSPerIter  = treeCTSConns * treeCTSPerConn   // 384
	treeCTSWarmup   = 1
	treeCTSTimed    = 2
	treeCTSAllIters = treeCTSWarmup + treeCTSTimed
)

// ctsTree builds the tree run above, with the clear-to-send.
func ctsTree(t *testing.T) *Collective {
	t.Helper()
	s, devs := collSwitch(t, treeCTSRanks, perftestLink("NDR"), cx7(t))
	devs[0].Cfg.Host.PollNS = 400
	devs[3].Cfg.Host.PostNS = 300
	c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Algorithm: AlgTree, MTU: 4096, Seed: 1,
		Bytes: treeCTSBytes, SliceBytes: treeCTSSlice, FlowControl: FlowCTS, Warmup: treeCTSWarmup, Iterations: treeCTSTimed})
	require.NoError(t, err)
	return c
}

// TestTreeCTSEachWriteWaitsForItsSlot watches the tree run from outside
// the driver, as TestCTSNoWriteLandsBeforeItsClearToSend watches the ring:
// at each sender, when each clear-to-send entry becomes visible in its
// FIFO (the entry's idx names the write it clears); at each receiver,
// when each write's data becomes visible in its FIFO slot (the n-th write
// into slot q of a connection is write 8n + q). Every write must become
// visible at its receiver only after its clear-to-send was visible at its
// sender; and the entry of write g ≥ 8 of a connection only after write
// g − 8's data landed in the same slot (NCCL_STEPS = 8 slots: the
// receiver clears a slot once it consumed the write before in it). With
// 32 writes a connection an iteration the window binds: a leaf's 32 up
// writes wait on no data, so all are ready when its iteration starts,
// and writes 8 … 31 of each wait for their slot. Counts, derived above:
// 384 writes an iteration over 12 connections, 3 iterations seen (1,152
// landings, as many entries); the timed part's cts_writes 2 × 384 = 768
// and rdma_writes (one iteration's) 384. A connection's writes are
// numbered over the run (3 × 32 = 96), so all but its first 8 follow a
// write in their slot: 12 × 88 = 1,056 (an iteration's first 8 wait for
// the iteration before's last 8). Of them, writes 8 … 31 of an iteration
// on the 4 leaf connections (tree 0's leaves 1 and 3, tree 1's 2 and 0),
// 4 × 24 × 3 iterations = 288, are held by the window alone. Mutants: a
// sender that skips the wait (ctsCleared true at once, ctsTake the
// address the entry would carry) fails the first check; a receiver that
// clears 9 writes ahead (ctsGrant's g < consumed + NCCLSteps + 1) fails
// the second (and its own check of each landing: data_verified).
func TestTreeCTSEachWriteWaitsForItsSlot(t *testing.T) {
	c := ctsTree(t)
	devs := make([]*hca.Device, len(c.c.ranks))
	for r, rk := range c.c.ranks {
		devs[r] = rk.dev
	}
	cleared, landed := watchCTS(c, devs)
	m, err := c.Run()
	require.NoError(t, err)
	assert.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	assert.Equal(t, int64(treeCTSTimed*treeCTSPerIter), m["cts_writes"])
	assert.Equal(t, treeCTSPerIter, m["rdma_writes"])
	conns := 0
	for _, rk := range c.c.ranks {
		conns += len(rk.sendQP)
	}
	assert.Equal(t, treeCTSConns, conns)
	require.Len(t, landed, treeCTSAllIters*treeCTSPerIter)
	assert.Len(t, cleared, treeCTSAllIters*treeCTSPerIter)
	window, leafHeld := 0, 0
	for w, at := range landed {
		cts, ok := cleared[w]
		if !assert.True(t, ok, "write %+v landed uncleared", w) {
			continue
		}
		assert.Less(t, cts, at, "write %+v landed before its clear-to-send was visible", w)
		if w.g < NCCLSteps {
			continue
		}
		before, ok := landed[ctsWrite{w.src, w.conn, w.g - NCCLSteps}]
		require.True(t, ok)
		assert.Greater(t, cts, before, "write %+v cleared before write %d in its slot landed", w, w.g-NCCLSteps)
		window++
		// A leaf's up connection: its sends wait on no slot.
		a := c.c.ranks[w.src]
		if i := slicesIndexFunc(a.sends, func(s sliceSend) bool { return int(s.conn) == w.conn }); a.sends[i].w0 == a.sends[i].w1 && w.g%treeCTSPerConn >= NCCLSteps {
			leafHeld++
		}
	}
	t.Logf("%d writes behind their slot's previous write, %d of them a leaf's; %v µs an iteration", window, leafHeld, m["time_us"])
	assert.Equal(t, treeCTSConns*(treeCTSAllIters*treeCTSPerConn-NCCLSteps), window)
	assert.Equal(t, treeCTSAllIters*4*(treeCTSPerConn-NCCLSteps), leafHeld)
}

// slicesIndexFunc is slices.IndexFunc for the sends (the first match).
func slicesIndexFunc(sends []sliceSend, f func(sliceSend) bool) int {
	for i := range sends {
		if f(sends[i]) {
			return i
		}
	}
	return -1
}

// TestTreeCTSFreesASlotOnceItsStepIsWhole checks when a tree rank frees
// a receive slot. NCCL's GPU runs a tree step as one primitive over all
// its peers (prims_simple.h genericOp: every peer's waitPeer, then one
// reduceCopy, then postPeer for all): a parent's reduce step adds both
// children's slots into its send slot to its parent (recvReduceSend; the
// root's directRecvReduceCopySend into both children's send slots), and a
// broadcast step copies its parent's slot into both children's send
// slots (directRecvCopySend). So a receive slot is consumed — and its
// next clear-to-send posted — only once every slot its step reads has
// landed and every send slot it writes is free (the write NCCLSteps
// before it on that connection completed). At every CQE of the tree run
// (before the driver sees it), every write consumed in a rank's running
// iteration must satisfy that; and some check must find a slice landed
// and taken in whose step still waits for its sibling's (the case the
// rule is for: rank 0's slow poll and rank 1's slow posts hold one child
// of a parent behind the other), and some slot read by two sends, landed
// and held because the send slot to its second child is busy while the
// first's is free (rank 3's late ACKs). Mutants: one that frees a slot
// once its own data is in and its send slots are free (ctsAdvance
// without ctsStepWhole) fails the first; one that looks only at the
// first send's slot (ctsSendSlotFree without readByAlso) fails it too.
func TestTreeCTSFreesASlotOnceItsStepIsWhole(t *testing.T) {
	early, held, twoReaders, secondBusy, checks := 0, 0, 0, 0, 0
	c := ctsTree(t)
	check := func() {
		for _, rk := range c.c.ranks {
			ct := rk.cts
			for j := range ct.recv {
				cr := &ct.recv[j]
				for g := int64(ct.iter) * cr.k; g < cr.consumed; g++ {
					checks++
					k := cr.slots[g%cr.k]
					for _, i := range [2]int32{ct.readBy[k], ct.readByAlso[k]} {
						if i < 0 {
							continue
						}
						s := &rk.sends[i]
						whole := true
						for _, w := range rk.waits[s.w0:s.w1] {
							whole = whole && rk.arrived[w]
						}
						free := ct.completed[s.conn] > int64(ct.iter)*ct.sendK[s.conn]+int64(ct.sendPos[i])-NCCLSteps
						if !whole || !free {
							early++
						}
					}
				}
			}
			busy := func(i int32) bool {
				cn := rk.sends[i].conn
				return ct.completed[cn] <= int64(ct.iter)*ct.sendK[cn]+int64(ct.sendPos[i])-NCCLSteps
			}
			for k, i := range ct.readBy {
				if i >= 0 && rk.got[k] && !rk.arrived[k] && ct.readByAlso[k] >= 0 && !busy(i) && busy(ct.readByAlso[k]) {
					secondBusy++
				}
				if i < 0 || !rk.arrived[k] {
					continue
				}
				if ct.readByAlso[k] >= 0 {
					twoReaders++
				}
				for _, w := range rk.waits[rk.sends[i].w0:rk.sends[i].w1] {
					if !rk.arrived[w] {
						held++
						break
					}
				}
			}
		}
	}
	for _, rk := range c.c.ranks {
		d, inner := rk.dev, rk.dev.OnCQE
		d.OnCQE = func(cq *hca.CQ, now ib.PS) {
			check()
			inner(cq, now)
		}
	}
	m, err := c.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	t.Logf("%d consumed writes checked; %d slots taken in while their step waited for a sibling; %d checks of a slot two sends read, %d of one held by its second send's slot alone", checks, held, twoReaders, secondBusy)
	require.Positive(t, checks)
	assert.Zero(t, early, "writes consumed before their step was whole or its send slots free")
	assert.Positive(t, held, "no slice ever waited for its sibling: the case does not test the rule")
	assert.Positive(t, twoReaders, "no slot was read by two sends: the broadcast's case is not tested")
	assert.Positive(t, secondBusy, "no slot waited for its second send's slot alone: that case is not tested")
}

// TestTreeCTSDeterministic runs the tree run twice: the metrics and every
// memory write on every HCA (rank, address, length, time, in order) must
// be the same.
func TestTreeCTSDeterministic(t *testing.T) {
	var sums [2]uint64
	var ms [2]map[string]any
	for i := range 2 {
		c := ctsTree(t)
		h := fnv.New64a()
		for r, rk := range c.c.ranks {
			r, inner := r, rk.dev.OnMemWrite
			rk.dev.OnMemWrite = func(addr uint64, n int, now ib.PS) {
				var b [32]byte
				binary.LittleEndian.PutUint64(b[0:], uint64(r))
				binary.LittleEndian.PutUint64(b[8:], addr)
				binary.LittleEndian.PutUint64(b[16:], uint64(n))
				binary.LittleEndian.PutUint64(b[24:], uint64(now))
				h.Write(b[:])
				inner(addr, n, now)
			}
		}
		m, err := c.Run()
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		sums[i], ms[i] = h.Sum64(), m
	}
	assert.Equal(t, sums[0], sums[1], "memory writes differ between two runs")
	assert.Equal(t, ms[0], ms[1])
}

// TestTreeCTSCountsEveryReceiveFIFO: with the clear-to-send a rank
// registers its S bytes of data and no landing area, and the host-memory
// limit counts its receive FIFOs instead: NCCLSteps slots of the slice on
// each connection it receives on. In the tree over 4 ranks (tree 0:
// 0 → 2 → {1, 3}; tree 1, its mirror: 3 → 1 → {2, 0}) rank 2 receives
// from its children 1 and 3 and its parent 0 in tree 0 and from its
// parent 1 in tree 1, 4 connections; rank 1 likewise (a leaf of tree 0
// under 2, inside tree 1 under 3 with children 2 and 0); ranks 0 and 3
// 2 each (one tree's root with one child, the other's leaf). So the
// landing counted is 8 × 4 KiB × 4 = 128 KiB a rank, the most any has.
// A count of one connection a channel, the ring's, gives 32 KiB and
// fails it.
func TestTreeCTSCountsEveryReceiveFIFO(t *testing.T) {
	c := ctsTree(t)
	assert.Equal(t, []int{2, 4, 4, 2}, recvConnections(c.c.sched))
	assert.Equal(t, int64(NCCLSteps*treeCTSSlice*4), c.c.hostSched().Landing)
	for r, rk := range c.c.ranks {
		assert.Equal(t, uint64(treeCTSBytes), rk.mr.Length, "rank %d's data region", r)
		assert.Len(t, rk.recvQP, []int{2, 4, 4, 2}[r], "rank %d's receive connections", r)
	}
}
