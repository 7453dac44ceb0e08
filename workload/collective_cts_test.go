package workload

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// irecvPair is two back-to-back cx7 HCAs, each with one RC QP to the
// other, a CQ and one registered region: the bare verbs a clear-to-send
// uses, with none of the collective driver.
type irecvPair struct {
	s    *components.Sim
	devs []*hca.Device
	qps  [2]*hca.QP
	mrs  [2]hca.MR
	at   ib.PS    // when both post
	vis  [2]ib.PS // when the first write became visible at each
}

// HandleEvent posts, on both HCAs at once, what a receiver posts for two
// writes (ctsGrant with two writes in its window): twice a receive and a
// 32-byte RDMA WRITE of an entry into the peer's region, the first
// signaled (FIFO slot 0), the second not.
func (p *irecvPair) HandleEvent(*components.Event) {
	for i, d := range p.devs {
		peer := p.mrs[1-i]
		for slot := range 2 {
			require.NoError(nil, d.PostRecv(p.qps[i], &hca.RecvWR{ID: uint64(slot), Addr: p.mrs[i].Addr, LKey: p.mrs[i].LKey}))
			local := p.mrs[i].Addr + 4096 + uint64(slot*ctsEntryBytes)
			d.Mem.WriteU64(local+ctsIdxOffset, uint64(slot+1))
			w := hca.SendWR{ID: uint64(slot), Opcode: hca.WRRDMAWrite, Signaled: slot == 0, LocalAddr: local, Length: ctsEntryBytes,
				LKey: p.mrs[i].LKey, RemoteAddr: peer.Addr + uint64(slot*ctsEntryBytes), RKey: peer.RKey}
			require.NoError(nil, d.PostSend(p.qps[i], &w))
		}
	}
}

// clearToSendLatency measures, on a fresh pair of the HCAs collPair
// builds, how long after two receivers post a receive and a clear-to-send
// each (at once, as both ranks of a two-rank ring do when the timed part
// starts) the first entry is visible in the other's memory.
func clearToSendLatency(t *testing.T) ib.PS {
	s, devs := collPair(t, perftestLink("NDR"), cx7(t))
	p := &irecvPair{s: s, devs: devs}
	for i, d := range devs {
		pd := d.AllocPD()
		cq := d.CreateCQ(64)
		base := d.Malloc(8192)
		p.mrs[i] = d.RegMR(pd, base, 8192, hca.AccessLocalWrite|hca.AccessRemoteWrite)
		p.qps[i] = d.CreateQP(pd, cq, cq, 64, 64)
		i := i
		d.OnMemWrite = func(addr uint64, _ int, now ib.PS) {
			if p.vis[i] == 0 && addr == p.mrs[i].Addr {
				p.vis[i] = now
			}
		}
	}
	require.NoError(t, hca.ConnectRCSL(p.qps[0], p.qps[1], 4096, 1, 2, 0))
	var free ib.PS
	for _, d := range devs {
		free = max(free, d.CPUFreeAt())
	}
	p.at = free + setupSettle
	s.Schedule(p.at, p, 1)
	s.StopAt(p.at + ib.FromNanoseconds(100_000)) // the retry timers would run on
	require.NoError(t, s.Run())
	require.NotZero(t, p.vis[0])
	require.Equal(t, p.vis[0], p.vis[1], "the two directions are alike")
	return p.vis[0] - p.at
}

// TestCTSRoundTripIsAPostedWriteAndAPoll runs the ring all-reduce of 8
// bytes over two back-to-back cx7 ranks (two steps of a 4-byte chunk, one
// write each) with and without the clear-to-send.
//
// Derivation. Without it each rank posts its step-0 write when the timed
// part starts. With it each rank first posts, for the two writes it will
// receive (both within NCCLSteps), a receive and a 32-byte clear-to-send
// each; its own step-0 write waits until its peer's first entry is
// visible in its memory, L after the start, and its thread's poll that
// finds it, PollNS later (the CPU is idle by then: its four posts took
// 240 ns). L is measured on bare verbs with the same posts on a fresh
// pair of the same HCAs (clearToSendLatency), not in the driver. The
// second write's entry arrived with the first, so nothing else waits: the
// whole run is L + PollNS longer, to the picosecond.
func TestCTSRoundTripIsAPostedWriteAndAPoll(t *testing.T) {
	l := clearToSendLatency(t)
	var times [2]ib.PS
	for i, fc := range []string{"", FlowCTS} {
		s, devs := collPair(t, perftestLink("NDR"), cx7(t))
		c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 8, MTU: 4096, Seed: 1, FlowControl: fc})
		require.NoError(t, err)
		m, err := c.Run()
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		times[i] = c.c.end - c.c.start
	}
	poll := ib.FromNanoseconds(cx7(t).Host.PollNS)
	t.Logf("clear-to-send visible %v after the start; run %v without, %v with", l, times[0], times[1])
	assert.Equal(t, l+poll, times[1]-times[0])
}

// ctsRing runs a ring all-reduce with the clear-to-send over n ranks of a
// switch, rank 0's poll slowed (so the ranks finish apart), and returns
// the driver and its metrics.
func ctsRing(t *testing.T, n int, run CollectiveRun) (*Collective, map[string]any) {
	t.Helper()
	s, devs := collSwitch(t, n, perftestLink("NDR"), cx7(t))
	devs[0].Cfg.Host.PollNS = 400
	run.Op, run.MTU, run.Seed = CollAllReduce, 4096, 1
	c, err := BuildCollectiveOn(s, devs, run)
	require.NoError(t, err)
	m, err := c.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	return c, m
}

// ctsWrite names a data write of a clear-to-send run: its sender, the
// sender's send connection, and its number over the run.
type ctsWrite struct{ src, conn, g int }

// watchCTS hooks every rank's memory writes (devs[r] is rank r's device)
// and records, from outside the driver, when each clear-to-send entry
// becomes visible in its sender's FIFO (cleared, keyed by the write its
// idx names) and when each write's data becomes visible in its receiver's
// FIFO slot (landed; the n-th write into slot q of a connection is write
// 8n + q). The hooks call the ones they replace.
func watchCTS(c *Collective, devs []*hca.Device) (cleared, landed map[ctsWrite]ib.PS) {
	cleared, landed = map[ctsWrite]ib.PS{}, map[ctsWrite]ib.PS{}
	for r, d := range devs {
		r, d, inner := r, d, d.OnMemWrite
		count := map[[2]int]int{} // (receive connection, slot) → writes seen
		d.OnMemWrite = func(addr uint64, n int, now ib.PS) {
			ct := c.c.ranks[r].cts
			switch {
			case addr >= ct.fifo && addr < ct.local:
				e := int(addr-ct.fifo) / ctsEntryBytes
				idx := d.Mem.ReadU64(ct.fifo + uint64(e*ctsEntryBytes) + ctsIdxOffset)
				cleared[ctsWrite{r, e / NCCLSteps, int(idx) - 1}] = now
			case addr >= ct.data:
				q := int(addr-ct.data) / int(c.c.slotBytes)
				j, slot := q/NCCLSteps, q%NCCLSteps
				rc := c.c.ranks[r].recvQP[j]
				g := count[[2]int{j, slot}]*NCCLSteps + slot
				count[[2]int{j, slot}]++
				landed[ctsWrite{rc.src, rc.srcConn, g}] = now
			}
			inner(addr, n, now)
		}
	}
	return cleared, landed
}

// TestCTSNoWriteLandsBeforeItsClearToSend watches rings of two and three
// ranks, back to back (a warm-up and two timed iterations; 16 KiB chunks
// in 4 KiB slices, one packet a write; rank 0's poll slowed, rank 1's
// posts (2 µs each, a busy host: its clear-to-sends leave late) and
// the reduction at 1 GB/s, so the ranks drift apart) from outside the
// driver:
// at each sender, when each clear-to-send entry becomes visible in its
// FIFO (the entry's idx names the write it clears); at each receiver, when
// each write's data becomes visible in its FIFO slot (the n-th write into
// slot q of a connection is write 8n + q). Every write must become visible
// at its receiver only after its clear-to-send was visible at its sender,
// and every write of the run must have been cleared (the counts derive
// from the schedule: 2(n−1) steps of 4 slices a connection an iteration).
// A mutant whose senders skip the wait (ctsCleared true at once, ctsTake
// the address the entry would carry) fails it: rank 0's first writes
// land before rank 1's clear-to-sends for them.
func TestCTSNoWriteLandsBeforeItsClearToSend(t *testing.T) {
	for _, n := range []int{2, 3} {
		s, devs := collSwitch(t, n, perftestLink("NDR"), cx7(t))
		devs[0].Cfg.Host.PollNS = 400
		devs[1].Cfg.Host.PostNS = 2000
		c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, MTU: 4096, Seed: 1, Bytes: int64(n) << 14, SliceBytes: 4096,
			ReduceGBps: 1, FlowControl: FlowCTS, Iterations: 2, Warmup: 1})
		require.NoError(t, err)
		cleared, landed := watchCTS(c, devs)
		m, err := c.Run()
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		k := 2 * (n - 1) * 4
		assert.Len(t, landed, n*3*k, "%d ranks: writes seen landing", n)
		for w, at := range landed {
			cts, ok := cleared[w]
			if assert.True(t, ok, "%d ranks: write %+v landed uncleared", n, w) {
				assert.Less(t, cts, at, "%d ranks: write %+v landed before its clear-to-send was visible", n, w)
			}
		}
	}
}

// TestCTSBackToBackNoSlowerThanBarriered runs the same ring, with the
// clear-to-send, back to back and barriered (every iteration starting on
// every rank once the last finished the one before). Barriered, rank r
// starts iteration i+1 when the last rank is done with i; back to back,
// when it is itself, at most barrier_wait_us_max (the last rank's end
// less the first's) earlier, and no rank's iteration can end before the
// ring's slowest rank passes it its data. So the back-to-back time per
// iteration (its span over the ranks, collective_average max, as the
// barriered time is its last rank's) is no longer than the barriered one,
// and shorter by at most barrier_wait_us_max. Sizes: one slice a step
// (8 bytes, 64 KiB) and 16 (1 MiB in 16 KiB slices).
func TestCTSBackToBackNoSlowerThanBarriered(t *testing.T) {
	for _, tc := range []struct{ bytes, slice int64 }{{8, 0}, {65536, 0}, {1 << 20, 16384}} {
		run := CollectiveRun{Bytes: tc.bytes, SliceBytes: tc.slice, FlowControl: FlowCTS, Iterations: 4, Warmup: 1, Average: AvgMax}
		_, b2b := ctsRing(t, 4, run)
		run.Barrier, run.Average = true, ""
		_, bar := ctsRing(t, 4, run)
		wait := bar["barrier_wait_us_max"].(float64)
		gain := bar["time_us"].(float64) - b2b["time_us"].(float64)
		t.Logf("%d bytes: barriered %v µs, back to back %v µs, wait %v µs", tc.bytes, bar["time_us"], b2b["time_us"], wait)
		assert.Positive(t, wait, "%d bytes: the slowed rank makes the others wait", tc.bytes)
		assert.GreaterOrEqual(t, gain, 0.0, "%d bytes", tc.bytes)
		assert.LessOrEqual(t, gain, wait, "%d bytes", tc.bytes)
	}
}

// TestCTSAverageModes runs a back-to-back ring whose ranks end apart (rank
// 0 polls slowly) under each of nccl-tests' -a modes. Each rank's time is
// its own: from the timed loop's start to its end of the last timed
// iteration, over the timed iterations (nccl-tests' deltaSec), taken here
// from the driver's record of when each rank ended each iteration; the run
// reports them as rank_time_us, and time_us is rank 0's, their mean
// (rounded to the picosecond), least or greatest. The modes must not all
// agree (the ranks' times differ), and the run's timing must not depend
// on the mode.
func TestCTSAverageModes(t *testing.T) {
	const iters = 3
	var ranks any
	for _, mode := range AverageModes {
		c, m := ctsRing(t, 3, CollectiveRun{Bytes: 65536, FlowControl: FlowCTS, Iterations: iters, Warmup: 1, Average: mode})
		var per []ib.PS
		for _, rk := range c.c.ranks {
			end := rk.cts.iterEnd[len(rk.cts.iterEnd)-1]
			per = append(per, (end-c.c.start+iters/2)/iters)
		}
		require.NotEqual(t, slices.Min(per), slices.Max(per), "the ranks' times must differ")
		want := map[string]ib.PS{AvgRank0: per[0], AvgMin: slices.Min(per), AvgMax: slices.Max(per),
			AvgMean: (per[0] + per[1] + per[2] + 1) / 3}[mode]
		assert.InDelta(t, want.Nanoseconds()/1000, m["time_us"], 1e-9, mode)
		assert.InDelta(t, c.c.sched.BusBW(want)*8, m["busbw_gbps"], 1e-9, mode)
		assert.Equal(t, mode, m["collective_average"])
		if ranks != nil {
			assert.Equal(t, ranks, m["rank_time_us"], "%s: the mode changed the run", mode)
		}
		ranks = m["rank_time_us"]
	}
}

// TestCTSChecksEachRankEachIteration flips a byte of the first payload the
// switch sends rank 1 (iteration 0, step 0: rank 0's chunk 0, as
// TestCollectiveIterationsCheckEachIteration derives) in a back-to-back
// run of three iterations: every rank's check of iteration 0 must name it
// with that test's values, and iterations 1 and 2 be clean (each rank
// restores its input when it ends an iteration).
func TestCTSChecksEachRankEachIteration(t *testing.T) {
	_, m, sum, bad := flippedRingAllReduceRun(t, CollectiveRun{Iterations: 3, FlowControl: FlowCTS})
	var want []string
	for r := range 4 {
		want = append(want, fmt.Sprintf("iteration 0: rank %d: byte 5 is %d after all-reduce, want the sum %d", r, bad, sum))
	}
	assert.Equal(t, false, m["data_verified"])
	assert.ElementsMatch(t, want, m["data_errors"])
}

// TestCTSConfigErrors checks the keys' bad values: one line naming the
// key, the value and what is allowed.
func TestCTSConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		run  CollectiveRun
		want string
	}{
		{CollectiveRun{Op: CollAllReduce, FlowControl: "credit"}, `workload.flow_control: "credit" is not a flow control (none, cts)`},
		{CollectiveRun{Op: CollAllReduce, FlowControl: FlowCTS, Average: "mean"}, `workload.collective_average: "mean" is not an nccl-tests -a mode (rank0, avg, min, max)`},
		{CollectiveRun{Op: CollAllReduce, Algorithm: AlgRabenseifner, FlowControl: FlowCTS}, "workload.flow_control: cts is set, but workload.algorithm rabenseifner does not use it (the clear-to-send is modelled for NCCL's all-reduces only, ring and tree: set workload.kind: allreduce with workload.algorithm ring or tree, or remove the key)"},
		{CollectiveRun{Op: CollAllReduce, Algorithm: AlgRecursiveDoubling, FlowControl: FlowCTS}, "workload.flow_control: cts is set, but workload.algorithm recursive-doubling does not use it (the clear-to-send is modelled for NCCL's all-reduces only, ring and tree:"},
		{CollectiveRun{Op: CollAllReduce, Algorithm: AlgSharp, FlowControl: FlowCTS}, "workload.flow_control: cts is set, but workload.algorithm sharp does not use it (the clear-to-send is modelled for NCCL's all-reduces only, ring and tree:"},
		{CollectiveRun{Op: CollAllGather, FlowControl: FlowCTS}, "workload.flow_control: cts is set, but workload.kind allgather does not use it"},
		{CollectiveRun{Op: CollAllReduce, Average: AvgMin}, "workload.collective_average: min is set, but without workload.flow_control: cts every iteration starts on every rank at once and its time is its last rank's (set workload.flow_control: cts, or remove the key)"},
	} {
		tc.run.Bytes, tc.run.MTU = 64, 4096
		err := tc.run.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	ok := CollectiveRun{Op: CollAllReduce, Bytes: 64, MTU: 4096, FlowControl: FlowNone}
	assert.NoError(t, ok.Validate())
	ok = CollectiveRun{Op: CollAllReduce, Algorithm: AlgTree, Bytes: 64, MTU: 4096, FlowControl: FlowCTS}
	assert.NoError(t, ok.Validate())
}

// TestCTSAllocatesNoLandingArea: with the clear-to-send every write lands
// in a FIFO slot of its connection, so a rank registers only its S bytes
// of data (without it, S more of landing area: 2S), and the host-memory
// limit counts the FIFOs instead. Sizes: 4 ranks of 64 KiB built, the MR
// S = 65536 bytes with cts and 2S without. The limit, on schedules only
// (no build): 8 ranks of 768 MiB need 2 × 768 MiB × 8 = 12 GiB without,
// over the 8 GiB limit; with it (768 MiB + 8 slots × 512 KiB, the default
// slice) × 8 = 6176 MiB, within.
func TestCTSAllocatesNoLandingArea(t *testing.T) {
	for _, tc := range []struct {
		fc   string
		want uint64
	}{{"", 2 * 65536}, {FlowCTS, 65536}} {
		s, devs := collSwitch(t, 4, perftestLink("NDR"), cx7(t))
		c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 65536, MTU: 4096, Seed: 1, FlowControl: tc.fc})
		require.NoError(t, err)
		for r, rk := range c.c.ranks {
			assert.Equal(t, tc.want, rk.mr.Length, "flow control %q: rank %d's data region", tc.fc, r)
		}
	}
	sched, err := RingAllReduce(8, 768<<20)
	require.NoError(t, err)
	assert.Error(t, checkHostBytes(newCollective(CollectiveRun{Op: CollAllReduce}, sched).hostSched()))
	hs := newCollective(CollectiveRun{Op: CollAllReduce, FlowControl: FlowCTS}, sched).hostSched()
	assert.Equal(t, int64(NCCLSteps*DefaultSliceBytes), hs.Landing)
	assert.NoError(t, checkHostBytes(hs))
}

// ctsSlotRing builds the slot tests' ring: 3 ranks on one NDR switch
// with the clear-to-send, 64 KiB a rank in 4 KiB slices, ACKs coalesced 8
// to a message (so an entry can beat the ACK of the write NCCLSteps
// before it, and a send slot binds), each rank reducing at reduceGBps
// (0: free); check runs at every CQE, before the driver sees it.
func ctsSlotRing(t *testing.T, reduceGBps float64, check func()) *Collective {
	t.Helper()
	const n = 3
	s, devs := collSwitch(t, n, perftestLink("NDR"), cx7(t))
	for _, d := range devs {
		d.Cfg.AckCoalesce = 8
	}
	c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, MTU: 4096, Seed: 1, Bytes: n << 16, SliceBytes: 4096,
		ReduceGBps: reduceGBps, FlowControl: FlowCTS})
	require.NoError(t, err)
	for _, d := range devs {
		inner := d.OnCQE
		d.OnCQE = func(cq *hca.CQ, now ib.PS) {
			check()
			inner(cq, now)
		}
	}
	return c
}

// TestCTSSenderWaitsForItsSendSlot checks the sender's own FIFO: NCCL's
// send proxy posts step g only once g < done + NCCL_STEPS, done counting
// the writes whose completion it has polled (net.cc sendProxyProgress), so
// at any instant a connection has at most NCCLSteps writes posted and not
// polled complete. The clear-to-send does not imply it: write g's entry is
// posted once the receiver consumed write g−8, which needs g−8's data, not
// its ACK. With ACK coalescing (hca.ack_coalesce 8: a responder ACKs every
// 8th AckReq packet, or when its receive pipeline empties) the ACK of
// g−8 can reach the sender after the entry for g, and then only the send
// slot holds g back. A ring of 3 cx7 ranks on a switch, 64 KiB chunks in
// 4 KiB slices (one packet a write, 16 writes a step): at every CQE on any
// HCA (a completion must become visible before a sender can poll it, so a
// write posted early is seen before its slot's completion is polled), no
// connection may have more than NCCLSteps writes posted past those polled
// complete; and some check must find a sender whose next entry is there
// while its eight slots are busy (the case the rule is for). A mutant
// whose ctsCleared ignores the send slot fails the first (63 checks find
// nine or more writes outstanding); without coalescing (ack_coalesce 1) no
// entry beats its slot's ACK and the second fails.
func TestCTSSenderWaitsForItsSendSlot(t *testing.T) {
	checks, over, slotBound := 0, 0, 0
	var c *Collective
	c = ctsSlotRing(t, 0, func() {
		for _, rk := range c.c.ranks {
			ct := rk.cts
			for cn, g := range ct.sendSeq {
				checks++
				switch out := g - ct.completed[cn]; {
				case out > NCCLSteps:
					over++
				case out == NCCLSteps && ct.seen[cn*NCCLSteps+int(g%NCCLSteps)] == uint64(g+1):
					slotBound++
				}
			}
		}
	})
	m, err := c.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	t.Logf("%d checks; %d with a send slot binding", checks, slotBound)
	require.Positive(t, checks)
	assert.Zero(t, over, "checks finding more than NCCLSteps writes outstanding on a connection")
	assert.Positive(t, slotBound, "no sender ever had its entry while its slots were busy: the case does not test the rule")
}

// TestCTSNextIterationClearedOnceTheLastConsumed checks where the
// back-to-back loop's clear-to-send cost comes from. NCCL's receive proxy
// posts a step's receive and entry only for the op it is progressing,
// step < done + NCCL_STEPS and step < nsteps (net.cc recvProxyProgress),
// and takes the connection's next op (the next iteration's all-reduce)
// only once this one is done, every step consumed (proxy.cc: removeOp
// hands over to nextPeer). So iteration i+1's first write on a connection
// (write (i+1)k, k writes an iteration) is cleared by an entry posted only
// after the receiver took in write (i+1)k − 1, the last of iteration i: a
// round trip, receiver to sender, the first step of every iteration pays
// while its data is ready. The two ranks of an 8-byte ring back to back
// (two steps of one write: k = 2; one warm-up and three timed iterations):
// for every iteration after the first of each phase (the timed loop's
// first comes after the barrier), on both connections, the entry for
// write (i+1)k must become visible at its sender after write (i+1)k − 1's
// data became visible at its receiver, and after the sender ended
// iteration i (so the sender waits for it: the round trip is on the
// critical path, exposed by its visibility less the sender's end, logged).
// A mutant whose receivers clear the next iteration's writes as soon as a
// slot is free (ctsGrant without its g − g%k ≤ consumed) fails the first
// (the timed loop's six entries a connection all go at its start).
func TestCTSNextIterationClearedOnceTheLastConsumed(t *testing.T) {
	const k, warmup, iters = 2, 1, 3
	s, devs := collPair(t, perftestLink("NDR"), cx7(t))
	c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 8, MTU: 4096, Seed: 1, FlowControl: FlowCTS, Warmup: warmup, Iterations: iters})
	require.NoError(t, err)
	type key struct{ src, g int } // a write: its sender (one connection each) and number
	cleared := map[key]ib.PS{}
	landed := map[key]ib.PS{}
	for r, d := range devs {
		r, inner := r, d.OnMemWrite
		count := map[int]int{} // slot → writes seen in it
		d.OnMemWrite = func(addr uint64, n int, now ib.PS) {
			ct := c.c.ranks[r].cts
			switch {
			case addr >= ct.fifo && addr < ct.local:
				e := int(addr-ct.fifo) / ctsEntryBytes
				idx := d.Mem.ReadU64(ct.fifo + uint64(e*ctsEntryBytes) + ctsIdxOffset)
				cleared[key{r, int(idx) - 1}] = now
			case addr >= ct.data:
				slot := int(addr-ct.data) / int(c.c.slotBytes)
				landed[key{1 - r, count[slot]*NCCLSteps + slot}] = now
				count[slot]++
			}
			inner(addr, n, now)
		}
	}
	m, err := c.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	require.Len(t, landed, 2*k*(warmup+iters))
	checked := 0
	for src := range 2 {
		ends := c.c.ranks[src].cts.iterEnd
		for i := warmup; i+1 < warmup+iters; i++ {
			g := (i + 1) * k
			cts, last := cleared[key{src, g}], landed[key{src, g - 1}]
			require.NotZero(t, cts)
			require.NotZero(t, last)
			assert.Greater(t, cts, last, "sender %d: iteration %d's first write cleared before the last of iteration %d landed", src, i+1, i)
			assert.Greater(t, cts, ends[i], "sender %d: ready for iteration %d before its clear-to-send", src, i+1)
			t.Logf("sender %d, iteration %d: the entry for its first write came %v after the last write of the one before landed, %v after the sender ended it", src, i+1, cts-last, cts-ends[i])
			checked++
		}
	}
	assert.Equal(t, 2*(iters-1), checked)
}

// TestCTSReducesOnceTheSendSlotIsFree checks when a received slice is
// taken in: NCCL's GPU reduces (or copies) a slice from its receive slot
// into its send FIFO, so it starts only once both are ready, the data
// there and the send slot free (the write NCCLSteps before the forward,
// on its connection, completed); the reduction's time (here
// workload.reduce_gbps, 5 GB/s) runs from then. The send-slot case of
// TestCTSSenderWaitsForItsSendSlot (3 ranks, ACK coalescing 8, 4 KiB
// slices): at every CQE on any HCA, every slot a rank has taken in
// (arrived) whose forwarding send is its g-th on its connection must have
// that connection's write g − NCCLSteps completed (polled); and some
// check must find a slice landed (got) but held because that slot is
// busy, the case the rule is for. A mutant that takes a slice in when it
// lands (landedSlot without the send-slot test) fails the first.
func TestCTSReducesOnceTheSendSlotIsFree(t *testing.T) {
	early, held, taken := 0, 0, 0
	var c *Collective
	c = ctsSlotRing(t, 5, func() {
		for _, rk := range c.c.ranks {
			ct := rk.cts
			for k, i := range ct.readBy {
				if i < 0 || !rk.got[k] {
					continue
				}
				cn := rk.sends[i].conn
				busy := ct.completed[cn] <= int64(ct.sendPos[i])-NCCLSteps
				switch {
				case rk.arrived[k] && busy:
					early++
				case rk.arrived[k]:
					taken++
				case busy:
					held++
				}
			}
		}
	})
	m, err := c.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	t.Logf("%d slot checks taken in, %d held for the send slot; %v µs", taken, held, m["time_us"])
	require.Positive(t, taken)
	assert.Zero(t, early, "slices taken in while their forward's send slot was busy")
	assert.Positive(t, held, "no slice waited for its send slot: the case does not test the rule")
}
