package switchasic

import (
	"fmt"
	"math/bits"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// allocationRound is one crossbar allocation on the clock edge t:
//
//  1. every ready packet at the head of a queue (fifo: of its input VL; voq:
//     of its input VL and output) whose input has a free crossbar connection,
//     whose output can take a packet, and whose output VL has downstream
//     credits for all its blocks becomes a candidate (input, output, VL);
//  2. each output's VL arbiter picks one VL among its candidates (IBA
//     VLArbitration, components.VLArbiter);
//  3. the allocator matches inputs to outputs over those requests, Speedup
//     passes per round;
//  4. each grant starts the packet through the crossbar.
//
// Because credits are reserved when a packet is granted (not when it reaches
// the wire), the packet is sure to find them AllocCycles+XbarCycles later.
func (sw *Switch) allocationRound(t ib.PS) {
	if t <= sw.lastRound {
		return // a second event for a round already run
	}
	sw.wakeups.popThrough(t)
	sw.dropOutstanding(t)
	sw.lastRound = t
	sw.counters.AllocRound++

	sw.collectCandidates(t)
	if sw.touched.Any() {
		sw.match(t)
	}
	sw.updateStalls(t)

	if m, ok := sw.wakeups.min(); ok && !sw.isOutstanding(m) {
		sw.scheduleRound(m)
	}
	if sw.everyCycle && !sw.s.Stopped() {
		if next := t + sw.cycle; !sw.isOutstanding(next) {
			sw.scheduleRound(next)
		}
	}
}

// collectCandidates fills cand, candVLs, candInVLs, touched and blocked.
//
// Only queue heads that could be granted are looked at: those at a free
// input whose output is free. Heads for outputs that already have a VL in
// credit stall are looked at from every input, so a stall lasts exactly as
// long as some ready packet lacks credits. A stall therefore begins when
// credits are the only thing a packet is missing, and ends when its VL has
// credits again or no ready packet is left.
func (sw *Switch) collectCandidates(t ib.PS) {
	tXbar := t + sw.allocPS
	// Which outputs are free is asked lazily, once per output and round:
	// testing all of them read every output's port (a cache miss each in a
	// large fabric) although a round usually wants one or two.
	of := outputsFree{sw: sw, t: t}
	stalled := sw.stallOuts
	anyStalled := stalled.Any()
	nw := sw.cand.Words() // words of a set of ports (a PortSet's others are 0)
	for wi := range nw {
		for am := sw.active[wi]; am != 0; am &= am - 1 {
			i := wi<<6 | bits.TrailingZeros64(am)
			inFree := sw.inputFree(i, tXbar)
			// The outputs whose heads are looked at: free or stalled ones
			// from a free input, only stalled ones from a busy input (whose
			// heads the round that frees the input looks at).
			if !inFree && !anyStalled {
				continue
			}
			in := &sw.in[i]
			// The non-empty input VLs in the order in.rr, in.rr+1, ... (mod
			// 16): rotating the mask right by in.rr puts VL in.rr at bit 0.
			// The order decides which input VL is an output VL's candidate
			// when two of them hold heads for the same output and output VL
			// (per-pair SL-to-VL tables can merge VLs): the first one looked
			// at.
			for m := bits.RotateLeft16(in.nonEmpty, -int(in.rr)); m != 0; m &= m - 1 {
				vl := (int(in.rr) + bits.TrailingZeros16(m)) & 15
				q := in.q0
				if vl != 0 {
					q = sw.inVLs[vl*sw.radix+i]
				}
				if len(q.ends) == 1 {
					k := q.ends[0].head
					if o := int(q.slots[k].out); o != mcastOut {
						sw.lookHead(i, vl, q, k, o, t, inFree, &of, stalled)
					} else {
						// A multicast head asks for every output it still
						// has to be copied to.
						sw.lookCopies(i, vl, q, k, t, inFree, &of, stalled)
					}
					continue
				}
				// Every non-empty queue of a voq VL, a word of outputs at
				// a time: which are free is one AND with what the round
				// knows, and a busy output's freeing time is asked for
				// once per round (askFree of an output already asked this
				// round changes nothing: nothing in a round's look moves
				// an output's freeing time), in the order lookHead would
				// ask, so the rounds scheduled are the same.
				for w := range nw {
					queued := q.voqNonEmpty[w]
					var free uint64
					if inFree {
						for u := queued &^ of.known[w]; u != 0; u &= u - 1 {
							if b := bits.TrailingZeros64(u); sw.outputFree(w<<6|b, t) {
								of.free[w] |= 1 << b
							}
						}
						of.known[w] |= queued
						free = queued & of.free[w]
					}
					for c := queued&stalled[w] | free; c != 0; c &= c - 1 {
						b := bits.TrailingZeros64(c)
						if e := &q.slots[q.ends[w<<6|b].head]; e.ready <= t {
							sw.consider(i, vl, e, free&(1<<b) != 0)
						}
					}
					if inFree {
						busy := queued &^ free &^ of.asked[w]
						of.asked[w] |= busy
						for ; busy != 0; busy &= busy - 1 {
							// askFree, in line: most asks find the time
							// already asked.
							o := w<<6 | bits.TrailingZeros64(busy)
							if f := sw.outputFreeAt(o); f != sw.freeAsked[o] {
								sw.freeAsked[o] = f
								sw.wake(f)
							}
						}
					}
				}
			}
		}
	}
}

// lookHead looks at the head in slot k of input i's fifo VL vl, bound for
// output o: it is considered if its output is stalled, or free and its
// input free. A head at a free input whose output is busy cannot be
// granted, so the round when its output frees is asked for: nothing else
// may ask for it (the output's wire may have been delayed by flow-control
// packets since its last grant, and a credit stall the head ends now asks
// for no round when the wire frees).
func (sw *Switch) lookHead(i, vl int, q *inputVL, k int32, o int, t ib.PS, inFree bool, of *outputsFree, stalled components.PortSet) {
	free := inFree && of.has(o)
	if e := &q.slots[k]; (stalled.Has(o) || free) && e.ready <= t {
		sw.consider(i, vl, e, free)
	}
	if inFree && !free {
		sw.askFree(o)
	}
}

// askFree asks for the round when busy output o frees, once per freeing
// time: a busy output is seen by round after round, and each ask is a push
// on wakeups.
func (sw *Switch) askFree(o int) {
	if f := sw.outputFreeAt(o); f != sw.freeAsked[o] {
		sw.freeAsked[o] = f
		sw.wake(f)
	}
}

// outputsFree answers outputFree for one round, evaluating each output at
// most once and only when asked.
type outputsFree struct {
	sw          *Switch
	t           ib.PS
	known, free components.PortSet
	// asked: the busy outputs of voq queues whose freeing time
	// collectCandidates asked for this round.
	asked components.PortSet
}

// has reports whether output o can take a packet granted this round.
func (f *outputsFree) has(o int) bool {
	if !f.known.Has(o) {
		f.eval(o)
	}
	return f.free.Has(o)
}

// eval evaluates output o, not yet known this round.
func (f *outputsFree) eval(o int) {
	f.known.Set(o)
	if f.sw.outputFree(o, f.t) {
		f.free.Set(o)
	}
}

// consider makes e, the ready head of a queue of input i, VL inVL, a
// candidate if its output VL has credits and canGrant (its input and
// output are free); a ready packet lacking credits marks its output VL as
// credit-blocked. The caller tests readiness (e.ready <= t), which most
// heads not yet ready fail, before the call.
func (sw *Switch) consider(i, inVL int, e *entry, canGrant bool) {
	o, v := int(e.out), int(e.outVL)
	if v != ib.ManagementVL && !sw.hasCredits(o, v, int(e.blocks)) {
		sw.blocked[o] |= 1 << v
		sw.stallOuts.Set(o)
		return
	}
	c := v*sw.radix + o
	if !canGrant || sw.cand.Has(c, i) {
		return
	}
	sw.cand.Set(c, i)
	if sw.sameVL {
		if inVL != v {
			panic(fmt.Sprintf("switchasic %s: input %d VL %d holds a candidate for output VL %d with one data VL", sw.name, i, inVL, v))
		}
	} else {
		sw.candInVLs[c*sw.radix+i] = int8(inVL)
	}
	sw.candVLs[o] |= 1 << v
	sw.touched.Set(o)
}

// candInVL returns the input VL holding input i's candidate c (on output
// VL v): v itself with one data VL and no MFT (sameVL), else the VL consider
// noted.
func (sw *Switch) candInVL(c, i, v int) int {
	if sw.sameVL {
		return v
	}
	return int(sw.candInVLs[c*sw.radix+i])
}

// hasCredits reports whether output o may still start a packet of blocks on
// VL v: the credits the downstream port advertised, less those already
// promised to granted packets that have not reached the wire.
func (sw *Switch) hasCredits(o, v, blocks int) bool {
	return sw.ports[o].CreditsAvailable(v)-int(sw.out[o].vl[v].pending) >= blocks
}

// inputFree reports whether input i has a crossbar connection free by tXbar
// (when a packet granted now would enter the crossbar).
func (sw *Switch) inputFree(i int, tXbar ib.PS) bool {
	// Some connection is free by tXbar iff the earliest-freeing one is.
	return sw.inFreeBy[i] <= tXbar
}

// outputFree reports whether output o can take a packet granted at t: its
// crossbar connection is free when the packet enters the crossbar, and the
// wire frees less than one cycle after the packet's head reaches it (the
// output stage holds a granted packet for at most that long, so back-to-back
// packets leave with no gap).
//
// With X = t+allocPS+xbarPS+cycle the condition is xbarFree <= t+allocPS,
// wireFreeEst < X and the port's BusyUntil < X (the wire may also be busy
// with a flow-control packet, which the switch does not see). The first two
// are t >= outFreeFrom[o] (refreshOutput), tested first from a dense array so
// that a busy output costs no look at its port.
func (sw *Switch) outputFree(o int, t ib.PS) bool {
	return t >= sw.outFreeFrom[o] && sw.ports[o].BusyUntil() < t+sw.allocPS+sw.xbarPS+sw.cycle
}

// outputFreeAt returns the first time outputFree(o, t) holds as far as is
// known now: t >= outFreeFrom[o] and the port's wire (data or flow-control
// packets) frees before t+allocPS+xbarPS+cycle.
func (sw *Switch) outputFreeAt(o int) ib.PS {
	return max(sw.outFreeFrom[o], sw.ports[o].BusyUntil()-sw.allocPS-sw.xbarPS-sw.cycle+1)
}

// refreshOutput recomputes outFreeFrom[o] after output o's wireFreeEst or
// xbarFree changed: the least t with xbarFree <= t+allocPS and
// wireFreeEst < t+allocPS+xbarPS+cycle (integer picoseconds, so the strict
// bound is wireFreeEst-allocPS-xbarPS-cycle+1).
func (sw *Switch) refreshOutput(o int) {
	out := &sw.out[o]
	sw.outFreeFrom[o] = max(out.xbarFree-sw.allocPS, out.wireFreeEst-sw.allocPS-sw.xbarPS-sw.cycle+1)
}

// match runs the VL arbiters and the allocator and grants the winners.
//
// Its sets are walked a word at a time over the words the radix needs
// (sw.cand.Words()), not a PortSet's four.
func (sw *Switch) match(t ib.PS) {
	var chosen [components.MaxPorts]int8 // per touched output: the VL its arbiter chose
	// winner[o] is the input output o was granted to, read only where
	// matchedOut has o (so it needs no setting up).
	var winner [components.MaxPorts]uint8
	var requesting, matchedOut components.PortSet
	nw := sw.cand.Words()
	for ow := range nw {
		for tm := sw.touched[ow]; tm != 0; tm &= tm - 1 {
			o := ow<<6 | bits.TrailingZeros64(tm)
			var v int
			if sw.oneVL {
				v = oneVLPick(sw.candVLs[o])
			} else {
				v = sw.out[o].vlarb.Pick(sw.candVLs[o])
			}
			chosen[o] = int8(v)
			c := v*sw.radix + o
			if sw.cand.Count(c) >= 2 {
				sw.out[o].conflicts++
			}
			for w := range nw {
				row := sw.cand.Word(c, w)
				requesting[w] |= row
				for ; row != 0; row &= row - 1 {
					sw.req.Set(w<<6|bits.TrailingZeros64(row), o)
				}
			}
		}
	}
	tXbar := t + sw.allocPS
	for pass := 0; pass < int(sw.speedup); pass++ {
		if sw.isClocked {
			// The diagonal of this edge's cycle (t is on an edge), however
			// many edges passed without a round; the speedup passes of a
			// round run in one cycle and share it.
			sw.clocked.SetCycle(int64(t / sw.cycle))
		}
		sw.alloc.AllocateRows(sw.req, sw.grant)
		// An allocator grants only inputs that request, so the grants
		// are read at the requesting inputs alone, in input order.
		granted := false
		for w := range nw {
			for rm := requesting[w]; rm != 0; rm &= rm - 1 {
				i := w<<6 | bits.TrailingZeros64(rm)
				o := sw.grant[i]
				if o < 0 || sw.mft != nil && sw.grantMulticast(i, o, int(chosen[o]), t, &matchedOut, &winner, &chosen) {
					continue
				}
				granted = true
				winner[o] = uint8(i)
				matchedOut.Set(o)
				sw.doGrant(i, o, int(chosen[o]), t)
			}
		}
		if !granted || pass == int(sw.speedup)-1 {
			break
		}
		for w := range nw {
			for rm := requesting[w]; rm != 0; rm &= rm - 1 {
				i := w<<6 | bits.TrailingZeros64(rm)
				sw.req.AndNot(i, matchedOut)
				if !sw.inputFree(i, tXbar) {
					sw.req.ClearRow(i)
				}
			}
		}
	}
	// Losers and clean-up. An output left unmatched with candidates (its VL
	// arbiter chose a VL whose inputs went elsewhere, or a separable
	// allocator missed it) tries again next cycle.
	retry := false
	for ow := range nw {
		retry = retry || sw.touched[ow]&^matchedOut[ow] != 0
		for tm := sw.touched[ow]; tm != 0; tm &= tm - 1 {
			o := ow<<6 | bits.TrailingZeros64(tm)
			won := -1 // the input granted o, if any
			if matchedOut.Has(o) {
				won = int(winner[o])
			}
			for m := sw.candVLs[o]; m != 0; m &= m - 1 {
				v := trailingZeros16(m)
				c := v*sw.radix + o
				for w := range nw {
					for row := sw.cand.Word(c, w); row != 0; row &= row - 1 {
						if i := w<<6 | bits.TrailingZeros64(row); won != i || int(chosen[o]) != v {
							sw.inputVL(i, sw.candInVL(c, i, v)).arbLosses++
						}
					}
				}
				sw.cand.ClearRow(c)
			}
			sw.candVLs[o] = 0
		}
	}
	sw.touched = components.PortSet{}
	for w := range nw {
		for rm := requesting[w]; rm != 0; rm &= rm - 1 {
			sw.req.ClearRow(w<<6 | bits.TrailingZeros64(rm))
		}
	}
	if retry {
		sw.wake(t + sw.cycle)
	}
}

// doGrant starts the packet input i won for output o on VL v at round t.
//
// Timing: the packet's head enters the crossbar AllocCycles after the round
// and reaches the output wire XbarCycles later. The crossbar moves
// DatapathBytes per cycle but cannot move bytes that have not arrived, so
// its tail is through at max(entry + ⌈bytes/DatapathBytes⌉ cycles, the
// tail's arrival at the input). The wire start is the latest of: the head at
// the wire; the point that lets the tail leave no earlier than it comes
// through the crossbar (cut-through never lets the output outrun the input);
// the wire being free. The input buffer is released when the tail has left
// it, which returns the credits upstream.
func (sw *Switch) doGrant(i, o, v int, t ib.PS) {
	inVL := sw.candInVL(v*sw.radix+o, i, v)
	in := &sw.in[i]
	q := sw.inputVL(i, inVL)
	qi := 0
	if len(q.ends) > 1 {
		qi = o
	}
	e := sw.dequeue(i, inVL, qi)
	// A round-robin pointer moved past the VL granted, as the allocators'
	// pointers move only past a grant: input VLs competing for one output
	// VL take turns, and the order does not depend on which clock edges
	// ran a round (TestInputVLsShareAnOutputVL).
	in.rr = uint8((inVL + 1) & 15)
	pkt := e.pkt
	if sw.agg != nil && pkt.SLID == sw.agg.cfg.LID {
		sw.aggGranted() // the aggregation node's own packet
	}
	pkt.VL = uint8(v) // the VL on the output link (SL2VL)
	bytes := pkt.WireBytes()
	blocks := int(e.blocks)
	out := &sw.out[o]
	port := sw.ports[o]
	ser := port.Serialization(bytes)

	xbarIn := t + sw.allocPS
	xfer := ib.PS((bytes+int(sw.datapathBytes)-1)/int(sw.datapathBytes)) * sw.cycle
	xbarTail := max(xbarIn+xfer, sw.ceilCycle(e.tail))
	start := max(xbarIn+sw.xbarPS, xbarTail+sw.xbarPS-ser, out.wireFreeEst, port.BusyUntil())

	out.wireFreeEst = start + ser
	out.xbarFree = xbarTail
	sw.refreshOutput(o)
	sw.takeXbar(i, xbarIn, xbarTail)
	if v != ib.ManagementVL {
		out.vl[v].pending += int32(blocks)
		out.vl[v].queued -= int32(blocks)
	}
	if !sw.oneVL {
		out.vlarb.Commit(v, blocks)
	}
	out.stage(pkt, start)

	ev := sw.s.Schedule(start, sw, evWireStart)
	ev.Port = int32(o)
	sw.staged(port, start)
	ev = sw.s.Schedule(xbarTail, sw, evRelease)
	ev.Port, ev.VL, ev.Arg = int32(i), int8(inVL), int64(blocks)

	if sw.NumHooks() > 0 {
		sw.trace(t, port.Name, components.TraceArbGrant, pkt, i, o, "")
		// The packet leaves the buffer of the VL it arrived on: buf_deq
		// names that VL and its size, as buf_enq did, not the output VL
		// SL-to-VL gave it (the checkers count blocks per input VL).
		pkt.VL = uint8(inVL)
		sw.trace(t, sw.ports[i].Name, components.TraceBufDeq, pkt, i, o, "")
		pkt.VL = uint8(v)
	}
	// The input and the output can take part again when their crossbar
	// connection (and, for the output, the wire) frees: for the output that
	// is outFreeFrom, which refreshOutput set above.
	if in.nonEmpty != 0 {
		sw.wake(sw.inFreeBy[i] - sw.allocPS)
	}
	sw.wake(sw.outFreeFrom[o])
}

// updateStalls moves each output VL's credit-stall timer to what this round
// saw: stalled while a ready packet waits for it without credits.
func (sw *Switch) updateStalls(t ib.PS) {
	for w := range sw.cand.Words() {
		for sm := sw.stallOuts[w]; sm != 0; sm &= sm - 1 {
			sw.updateStall(w<<6|bits.TrailingZeros64(sm), t)
		}
	}
}

// updateStall is updateStalls for output o.
func (sw *Switch) updateStall(o int, t ib.PS) {
	out := &sw.out[o]
	now := sw.blocked[o]
	for m := now &^ out.stalled; m != 0; m &= m - 1 {
		out.stall[trailingZeros16(m)].Start(t)
	}
	for m := out.stalled &^ now; m != 0; m &= m - 1 {
		out.stall[trailingZeros16(m)].Stop(t)
	}
	out.stalled = now
	sw.settle(o)
	sw.blocked[o] = 0
	if now == 0 {
		sw.stallOuts.Clear(o)
	}
}

// oneVLPick is VL arbitration with one data VL: a ready VL15 goes first,
// else VL 0. It is what components.VLArbiter picks whatever its tables and
// state, because the config requires an entry of weight > 0
// (Config.Validate), with one VL every entry's VL folds to 0
// (Config.VLArbTables), and no other data VL is ever ready; so with one VL
// the arbiter's state never matters and is not kept (TestOneVLPick).
func oneVLPick(ready uint16) int {
	if ready&(1<<ib.ManagementVL) != 0 {
		return ib.ManagementVL
	}
	return 0
}

func minPS(ts []ib.PS) ib.PS {
	m := ts[0]
	for _, x := range ts[1:] {
		m = min(m, x)
	}
	return m
}

func trailingZeros16(m uint16) int { return bits.TrailingZeros16(m) }

// scheduleRound schedules an allocation event at t and remembers it. The
// round runs after every other event of its picosecond, in switch order
// (Sim.ScheduleLast): it sees every change of that instant, such as credits
// arriving exactly on the clock edge, whether it was asked for a cycle ahead
// (per-cycle rounds) or by that very change (the event-driven rounds).
func (sw *Switch) scheduleRound(t ib.PS) {
	sw.s.ScheduleLast(t, sw, evAlloc, sw.rank)
	sw.outstanding = append(sw.outstanding, t)
}

// isOutstanding reports whether an allocation event is already scheduled at t.
func (sw *Switch) isOutstanding(t ib.PS) bool {
	for _, x := range sw.outstanding {
		if x == t {
			return true
		}
	}
	return false
}

// dropOutstanding forgets scheduled allocation events at or before t.
func (sw *Switch) dropOutstanding(t ib.PS) {
	k := 0
	for _, x := range sw.outstanding {
		if x > t {
			sw.outstanding[k] = x
			k++
		}
	}
	sw.outstanding = sw.outstanding[:k]
}
