package workload

import (
	"fmt"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// TreeWarmBuild builds a collective run on a fabric for the warm-iteration
// tests (the fat tree of configs/examples/allreduce-tree-cts.yaml, built
// by the external test package, which may import fabric).
type TreeWarmBuild func(t *testing.T, run CollectiveRun) (*Collective, []*hca.Device)

// twWrite names one data write: its sender, its index in the sender's
// sends, and the iteration.
type twWrite struct{ src, i, iter int }

// twEvents is what the hooks saw of one data write.
type twEvents struct {
	dst   int
	turn  ib.PS // the sender's turn that posted it
	entry ib.PS // its clear-to-send became visible at the sender (cts)
	apply ib.PS // its receiver took it in
	sent  ib.PS // its sender polled its completion
}

// twLog is what the hooks saw of one run.
type twLog struct {
	c      *collective
	writes map[twWrite]*twEvents
	ends   [][]ib.PS // rank → iteration → the rank's end (its CPU free)
	m      map[string]any
	devs   []*hca.Device
	// rqOnChip is, at the traced write's sender (twRun's tl), when each receive WQE
	// its HCA prefetched was on chip (wqe_fetch queue=rq), in order.
	rqOnChip []ib.PS
	tl       hca.Timeline
}

// twTrace is a hook on one HCA that keeps its receive-WQE prefetches.
type twTrace struct{ lg *twLog }

func (h *twTrace) Func(ctx sim.HookCtx) {
	ev, ok := ctx.Item.(*components.TraceEvent)
	if !ok || ev.Kind != components.TraceWQEFetch {
		return
	}
	for _, f := range ev.Fields {
		if f.Key == "queue" && f.Str == "rq" {
			h.lg.rqOnChip = append(h.lg.rqOnChip, ev.Time)
		}
	}
}

// twRun runs run under the driver's hooks (collHook) and, at each sender,
// watches its clear-to-send FIFO (as watchCTS does). With tl set, the
// write tl names (its sender's send index i, iteration iter) is followed
// through both HCAs (hca.Timeline) and the sender's receive-WQE
// prefetches are kept.
func twRun(t *testing.T, build TreeWarmBuild, run CollectiveRun, tl *twWrite) *twLog {
	t.Helper()
	cl, devs := build(t, run)
	c := cl.c
	lg := &twLog{c: c, devs: devs, writes: map[twWrite]*twEvents{}, ends: make([][]ib.PS, len(c.ranks))}
	iterOf := func(r int) int {
		if c.b2b {
			return c.ranks[r].cts.iter
		}
		return c.iter
	}
	get := func(w twWrite) *twEvents {
		e := lg.writes[w]
		if e == nil {
			e = &twEvents{}
			lg.writes[w] = e
		}
		return e
	}
	entryVis := map[[3]int64]ib.PS{} // (sender, send connection, write number) → visible
	if c.cts {
		for r, d := range devs {
			r, d, inner := r, d, d.OnMemWrite
			d.OnMemWrite = func(addr uint64, n int, now ib.PS) {
				ct := c.ranks[r].cts
				if addr >= ct.fifo && addr < ct.local {
					e := int(addr-ct.fifo) / ctsEntryBytes
					idx := d.Mem.ReadU64(ct.fifo + uint64(e*ctsEntryBytes) + ctsIdxOffset)
					entryVis[[3]int64{int64(r), int64(e / NCCLSteps), int64(idx) - 1}] = now
				}
				inner(addr, n, now)
			}
		}
	}
	collHook = &collHooks{
		post: func(r, i int) {
			w := twWrite{r, i, iterOf(r)}
			e := get(w)
			e.turn, e.dst = c.s.Now(), c.ranks[r].sends[i].xfer.Dst
		},
		apply: func(r int, imm uint32) {
			x := c.recvOf[int(imm)/c.maxSlices][r]
			a := c.ranks[x.Src]
			for i := range a.sends {
				if a.sends[i].xfer == x && a.sends[i].slice == int(imm)%c.maxSlices {
					get(twWrite{x.Src, i, iterOf(r)}).apply = c.s.Now()
				}
			}
		},
		sent: func(r, i int) { get(twWrite{r, i, iterOf(r)}).sent = c.s.Now() },
		done: func(r int) { lg.ends[r] = append(lg.ends[r], c.ranks[r].dev.CPUFreeAt()) },
	}
	defer func() { collHook = nil }()
	if tl != nil {
		a := c.ranks[tl.src]
		s := &a.sends[tl.i]
		// One data write a connection an iteration (8 bytes: one slice a
		// tree edge), each one WQE building block: write iter is WQE iter.
		lg.tl.Trace(a.sendQP[s.conn], uint16(tl.iter))
		devs[tl.src].Timeline, devs[s.xfer.Dst].Timeline = &lg.tl, &lg.tl
		devs[tl.src].AcceptHook(&twTrace{lg})
	}
	m, err := cl.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	lg.m = m
	if c.cts {
		for w, e := range lg.writes {
			a := c.ranks[w.src]
			cn := a.sends[w.i].conn
			e.entry = entryVis[[3]int64{int64(w.src), int64(cn), int64(w.iter)*a.cts.sendK[cn] + int64(a.cts.sendPos[w.i])}]
		}
	}
	return lg
}

// twLink is one link of a critical path: write w, bound at its receiver's
// take-in (apply) or at its sender's completion (sent).
type twLink struct {
	w    twWrite
	sent bool
}

// at returns when the link's event happened.
func (lg *twLog) at(l twLink) ib.PS {
	if l.sent {
		return lg.writes[l.w].sent
	}
	return lg.writes[l.w].apply
}

// walk follows rank q's end of iteration it back along what bound each
// event — the latest take-in at q or completion of q's (its end); a
// write's post, the latest of its inputs' take-ins or its sender's start
// of the iteration — to the start of a rank's iteration: it returns the
// links from that rank's first write to q's end, and that rank. Back to
// back, a rank starts iteration it at its end of it − 1; barriered every
// rank starts at the common start, which binds only when no input does.
func (lg *twLog) walk(q, it int) (path []twLink, from int) {
	c := lg.c
	// The latest take-in at q or completion of q's; ties (one turn)
	// to the lower sender and send, so that map order does not choose.
	var cur twLink
	best := ib.PS(-1)
	later := func(at ib.PS, l twLink) {
		if at > best || at == best && (l.w.src < cur.w.src || l.w.src == cur.w.src && l.w.i < cur.w.i) {
			best, cur = at, l
		}
	}
	for w, e := range lg.writes {
		if w.iter != it {
			continue
		}
		if e.dst == q {
			later(e.apply, twLink{w, false})
		}
		if w.src == q {
			later(e.sent, twLink{w, true})
		}
	}
	for {
		path = append([]twLink{cur}, path...)
		a := c.ranks[cur.w.src]
		s := &a.sends[cur.w.i]
		best = -1
		var next twWrite
		for _, k := range a.waits[s.w0:s.w1] {
			x := c.recvOf[int(k)/c.maxSlices][cur.w.src]
			for i := range c.ranks[x.Src].sends {
				if c.ranks[x.Src].sends[i].xfer == x && c.ranks[x.Src].sends[i].slice == int(k)%c.maxSlices {
					if e := lg.writes[twWrite{x.Src, i, it}]; e.apply > best {
						best, next = e.apply, twWrite{x.Src, i, it}
					}
				}
			}
		}
		if best < 0 || c.b2b && lg.ends[cur.w.src][it-1] > best {
			return path, cur.w.src
		}
		cur = twLink{next, false}
	}
}

// twFindings is where a warm back-to-back iteration's time goes against
// the barriered run's (TreeCTSWarmIteration).
type twFindings struct {
	period, barTime ib.PS // warm iteration back to back; barriered
	rank            int   // the rank whose own loop is the critical cycle
	cycle           ib.PS // its end of iteration twIter − 1 to its end of twIter
	back            int   // the rank the walk from its end of twIter reached
	startGap        ib.PS // its end to its turn that posts its first write
	endGap          ib.PS // its last take-in to its end
	hops, barHops   []ib.PS
	innerGaps       []ib.PS // a take-in to the turn that posts the write it binds
	barPath         ib.PS   // the barriered run along the cycle's writes
	barLast         int     // the barriered run's last rank
	entryWaits      int     // warm writes posted after their input but waiting on their entry
	minSlack        ib.PS   // the least time an entry was there before its write was ready
	wqe, barWQE     ib.PS   // the cycle's first write: doorbell done to WQE ready
	rqNext          ib.PS   // the first receive WQE on chip at the sender after that WQE was ready
	wqeReady        ib.PS
	path            []twLink
	// The sender's HCA: its poll and post times, its core cycle, its
	// wqe_fetch stage's latency and issue interval.
	poll, post, cyclePS, fetchLat, fetchII, keyLat ib.PS
	readLat                                        ib.PS // hca.pcie.read_completion_latency_ns
}

// twIter is the warm iteration the walk starts from: the third timed one
// (iteration 0 is the warm-up; 1, the first timed, starts after the
// barrier with a cold round trip; 4, the last, posts no clear-to-send
// for a next).
const twIter = 3

// treeWarmFindings runs the 8-byte tree of build's fabric back to back
// with the clear-to-send and barriered without it, as
// configs/examples/allreduce-tree-cts.yaml does (one warm-up, four timed
// iterations), walks the warm iteration's critical path and lays it
// beside the barriered run's same writes.
func treeWarmFindings(t *testing.T, build TreeWarmBuild) twFindings {
	run := CollectiveRun{Op: CollAllReduce, Algorithm: AlgTree, Bytes: 8, Warmup: 1, Iterations: 4}
	bar := run
	run.FlowControl = FlowCTS
	b2b, none := twRun(t, build, run, nil), twRun(t, build, bar, nil)
	var f twFindings
	n := len(b2b.ends)
	last := func(lg *twLog, it int) (q int) {
		for r := range n {
			if lg.ends[r][it] > lg.ends[q][it] {
				q = r
			}
		}
		return q
	}
	f.period = b2b.ends[last(b2b, twIter)][twIter] - b2b.ends[last(b2b, twIter-1)][twIter-1]
	f.barLast = last(none, twIter)
	f.barTime = ib.FromNanoseconds(none.m["iteration_time_us"].([]float64)[twIter] * 1000)
	_, f.rank = b2b.walk(last(b2b, twIter), twIter)
	f.path, f.back = b2b.walk(f.rank, twIter)
	f.cycle = b2b.ends[f.rank][twIter] - b2b.ends[f.rank][twIter-1]
	first := b2b.writes[f.path[0].w]
	f.startGap = first.turn - b2b.ends[f.rank][twIter-1]
	f.endGap = b2b.ends[f.rank][twIter] - b2b.at(f.path[len(f.path)-1])
	for k, l := range f.path {
		e, eb := b2b.writes[l.w], none.writes[l.w]
		f.hops = append(f.hops, b2b.at(l)-e.turn)
		f.barHops = append(f.barHops, none.at(l)-eb.turn)
		f.barPath += none.at(l) - eb.turn
		if k > 0 {
			f.innerGaps = append(f.innerGaps, e.turn-b2b.at(f.path[k-1]))
			f.barPath += eb.turn - none.at(f.path[k-1])
		}
	}
	f.minSlack = -1
	for w, e := range b2b.writes {
		if w.iter < 2 {
			continue
		}
		a := b2b.c.ranks[w.src]
		s := &a.sends[w.i]
		ready := b2b.ends[w.src][w.iter-1]
		for _, k := range a.waits[s.w0:s.w1] {
			x := b2b.c.recvOf[int(k)/b2b.c.maxSlices][w.src]
			for i := range b2b.c.ranks[x.Src].sends {
				if b2b.c.ranks[x.Src].sends[i].xfer == x {
					ready = max(ready, b2b.writes[twWrite{x.Src, i, w.iter}].apply)
				}
			}
		}
		if e.entry >= ready {
			f.entryWaits++
		}
		if slack := ready - e.entry; f.minSlack < 0 || slack < f.minSlack {
			f.minSlack = slack
		}
	}
	// The cycle's first write again, followed through both HCAs.
	w0 := f.path[0].w
	b2bTL, noneTL := twRun(t, build, run, &w0), twRun(t, build, bar, &w0)
	// The timeline followed the write named (its post is the turn seen).
	require.Equal(t, b2b.writes[w0].turn, b2bTL.tl.Posted)
	require.Equal(t, none.writes[w0].turn, noneTL.tl.Posted)
	f.wqe = b2bTL.tl.WQEReady - b2bTL.tl.DoorbellDone
	f.barWQE = noneTL.tl.WQEReady - noneTL.tl.DoorbellDone
	f.wqeReady = b2bTL.tl.WQEReady
	for _, at := range b2bTL.rqOnChip {
		if at > b2bTL.tl.WQEReady {
			f.rqNext = at
			break
		}
	}
	d := b2b.devs[w0.src]
	f.poll, f.post = ib.FromNanoseconds(d.Cfg.Host.PollNS), ib.FromNanoseconds(d.Cfg.Host.PostNS)
	f.cyclePS = d.CyclePS()
	f.fetchLat, f.fetchII = ib.PS(d.Cfg.WQEFetch.LatencyCycles)*f.cyclePS, ib.PS(d.Cfg.WQEFetch.IntervalCycles)*f.cyclePS
	f.keyLat = ib.PS(d.Cfg.KeyCheck.LatencyCycles) * f.cyclePS
	f.readLat = ib.FromNanoseconds(d.Cfg.PCIe.ReadLatencyNS)
	return f
}

// problems returns each check of TreeCTSWarmIteration that f fails, by
// name (the HCA's numbers are the cycle's first sender's; cx7:
// hca.host.poll_ns 40, post_ns 60, a core cycle of 1.334 ns, wqe_fetch 10
// cycles' latency and 2 between issues).
func (f twFindings) problems() map[string]string {
	poll, post, cycle := f.poll, f.post, f.cyclePS
	p := map[string]string{}
	if f.entryWaits > 0 {
		p["entry"] = fmt.Sprintf("%d warm writes waited on their clear-to-send", f.entryWaits)
	}
	if f.back != f.rank || f.cycle != f.period {
		p["cycle"] = fmt.Sprintf("the walk from rank %d's end reached rank %d; its loop %d ps, the period %d", f.rank, f.back, f.cycle, f.period)
	}
	if f.startGap != poll {
		p["start"] = fmt.Sprintf("first post %d ps after the rank's end, want one poll %d", f.startGap, poll)
	}
	if f.endGap != 2*post {
		p["end"] = fmt.Sprintf("end %d ps after the last take-in, want two posts %d", f.endGap, 2*post)
	}
	// The loop adds up: the barriered path along the same writes plus
	// the start's poll, the end's two posts and each hop's excess (the
	// writes posted in the turns that took their inputs in, as
	// barriered).
	sum := f.barPath + f.startGap + f.endGap
	for k := range f.hops {
		sum += f.hops[k] - f.barHops[k]
	}
	for _, g := range f.innerGaps {
		sum += g
	}
	if sum != f.period {
		p["sum"] = fmt.Sprintf("barriered path %d + poll %d + posts %d + excess = %d, the period %d", f.barPath, f.startGap, f.endGap, sum, f.period)
	}
	for k := range f.hops {
		// Within a core cycle: where two packets meet at a stage, one
		// moves by its issue slot's remainder. The first hop too, its WQE
		// no longer waiting in wqe_fetch (−340 ps: the receiver's poll
		// phase and the entry's packet ahead of it).
		if d := f.hops[k] - f.barHops[k]; d < -cycle || d > cycle {
			p["hops"] = fmt.Sprintf("hop %d takes %d ps, barriered %d", k, f.hops[k], f.barHops[k])
		}
	}
	// The first write's WQE (BlueFlame: it came with its doorbell) is
	// parsed and key-checked at once, back to back as barriered: the
	// fetch stage's latency and the key check's. Back to back the receive
	// WQE prefetched for the clear-to-send its rank posted at its end is
	// still on the way: it comes on chip after this WQE is ready, and its
	// read (at least the host's read latency) was issued before this
	// WQE's doorbell was decoded, so its parse was booked first, for a
	// later time. The wqe_fetch stage serves in time order (hca/stage.go),
	// so this WQE no longer waits behind it (in offer order it did: two
	// issue slots after it, 369.951 ns more than barriered).
	want := f.fetchLat + f.keyLat
	if f.barWQE != want || f.wqe != want || f.rqNext == 0 || f.rqNext-f.readLat >= f.wqeReady-f.wqe {
		p["wqe"] = fmt.Sprintf("the first write's WQE ready %d ps after its doorbell (barriered %d), want %d; the receive WQE prefetched before it on chip %d ps after it was ready, its read at least %d", f.wqe, f.barWQE, want, f.rqNext-f.wqeReady, f.readLat)
	}
	return p
}

// TreeCTSWarmIteration is TestTreeCTSWarmIteration's body (the external
// test package runs it on the fat tree it builds): where a warm 8-byte
// tree iteration's time against the barriered run goes. Back to back,
// each rank starts its next iteration at its end of the last, so the
// warm period is the longest loop from a rank's end back to its own
// (or around several ranks): walked back from the last rank's end along
// what bound each event, the loop is rank 4's own (the tree-1 leaf whose
// write climbs 4 → 5 → 3 → 7 → 15, the root, and comes back down to
// it), and its length is the period, to the picosecond. Against the
// barriered run's same writes it is longer by exactly: one poll at its
// start (the barriered start posts at once; back to back the rank's
// thread is woken a poll after its end); two posts at its end (the turn
// that takes its last write in posts the next iteration's receive and
// clear-to-send on that connection before the rank is done). Its first
// write's WQE does not wait behind the receive WQE those posts prefetch
// (above, "wqe": the HCA's wqe_fetch stage serves in time order; in offer
// order it waited 369.951 ns and the loop took 13.815 µs). Every hop is
// the barriered one's within a core cycle; no warm write waits on its
// clear-to-send (each comes at least 9 µs early). The barriered iteration
// is not this loop's: its last rank (5) ends when its last write's ACK is
// back, from another leaf's start, a path that closes no loop back to
// back, 217.66 ns longer than rank 4's (13.51 against 13.29234 µs), so
// the warm loop (13.452 µs) is shorter than the barriered iteration.
func TreeCTSWarmIteration(t *testing.T, build TreeWarmBuild) {
	f := treeWarmFindings(t, build)
	t.Logf("warm period %d ps, barriered %d; rank %d's loop %d: poll %d + hops %v (barriered %v) + inner %v + end %d; its first WQE %d ps after the doorbell (barriered %d); barriered along it %d; entries at least %d ps early",
		f.period, f.barTime, f.rank, f.cycle, f.startGap, f.hops, f.barHops, f.innerGaps, f.endGap, f.wqe, f.barWQE, f.barPath, f.minSlack)
	assert.Empty(t, f.problems())
	// The first hop's excess beyond its WQE's wait (none): the receiver's
	// poll phase and the entry's packet ahead of it (not checked: logged).
	t.Logf("first hop: %d ps longer than barriered, %d of them its WQE's wait; the receive WQE prefetched before it on chip %d ps after its doorbell was decoded", f.hops[0]-f.barHops[0], f.wqe-f.barWQE, f.rqNext-(f.wqeReady-f.wqe))
}

// TreeCTSWarmIterationMutants breaks one rule at a time (ctsMutant) and
// requires the checks written for it to fail: receivers that clear a
// write of their next iteration only once they have begun it make warm
// writes wait on their entries ("entry"), so the loop's first write is
// posted long after its rank's end ("start") and its receive WQE has
// long been read ("wqe"); a rank that posts its next clear-to-sends
// after its next first writes, not in the turn that ends its iteration,
// has no posts in that turn ("end"), and the loop is no longer the
// period ("cycle", "sum": 13.43 µs, faster than barriered); both move
// the last hop ("hops").
func TreeCTSWarmIterationMutants(t *testing.T, build TreeWarmBuild) {
	for _, tc := range []struct {
		name   string
		mutant int
		fails  []string
	}{
		{"grant-on-begin", mutGrantOnBegin, []string{"entry", "start", "wqe", "hops"}},
		{"grant-after-end", mutGrantAfterEnd, []string{"end", "cycle", "sum", "hops"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctsMutant = tc.mutant
			defer func() { ctsMutant = 0 }()
			p := treeWarmFindings(t, build).problems()
			t.Logf("%s: %v", tc.name, p)
			for _, k := range tc.fails {
				assert.Contains(t, p, k)
			}
		})
	}
}
