package switchasic

import (
	"fmt"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// Event kinds the switch schedules for itself.
const (
	evAlloc     uint8 = iota + 1 // an allocation round on a core clock edge
	evWireStart                  // a granted packet reaches its output wire (Port = output)
	evRelease                    // a packet's tail left an input buffer (Port = input, VL = input VL, Arg = blocks)
)

// Switch is one switch ASIC: Radix link ports, an input unit and an output
// unit per port, and the crossbar allocator between them. Build it with
// MakeBuilder.
type Switch struct {
	sim.HookableBase

	s     *components.Sim
	radix int

	cycle   ib.PS // core clock period
	routePS ib.PS // route stage
	allocPS ib.PS // allocation stage
	xbarPS  ib.PS // crossbar traversal to the output wire
	// Copies of cfg.Speedup, cfg.DatapathBytes and cfg.CutThrough, which
	// rounds and packets read (cfg lies in the struct's cold part).
	speedup       int32
	datapathBytes int32
	cutThrough    bool

	lft   *LFT
	sl2vl *SL2VL
	// mft is the multicast forwarding table (WithMFT), nil when the switch
	// forwards no multicast; a FIFO switch only (Builder.Build).
	mft *MFT
	// ar holds the adaptive routing groups (WithAR), nil when static; an
	// AR switch's ports are owned by arOwner, whose route stage chooses
	// among them (adaptive.go).
	ar    *ARTable
	ports []*link.Port
	in    []inputUnit // per input: VL 0's queues, the queued-VL mask, the VL round robin
	// inVLs are the input VLs' queues, [vl*radix + input], nil for a VL not
	// in use (VL 0's also in the units, in.q0); xbarBusy is each input's
	// crossbar connections, [input*speedup + k]: when connection k's tail
	// has left (speedup > 1; with one, inFreeBy is its time: takeXbar).
	// Dense per switch, not in a struct per input: what a hop reads of an
	// input is 19 bytes (with inFreeBy), and a line of its own per input
	// was, at 1,024 hosts, a miss per hop (docs/performance-data.md).
	inVLs    []*inputVL
	xbarBusy []ib.PS
	out      []outputUnit

	alloc components.Allocator
	req   components.PortRows // per input: outputs requested this pass
	grant []int               // per input: output granted this pass, or -1

	// Candidate scratch for one allocation round, VL-major so that a
	// fabric using few VLs keeps it in a few cache lines per switch; its
	// sets, and req's, are a word each up to radix 64 (PortRows).
	cand      components.PortRows // [outVL*radix + out]: inputs with a sendable packet
	candVLs   []uint16            // per output: VLs with a candidate
	candInVLs []int8              // [(outVL*radix + out)*radix + in]: the input VL holding the candidate (candInVL)
	touched   components.PortSet  // outputs with candidates this round
	blocked   []uint16            // per output: VLs whose candidate lacked credits this round
	active    components.PortSet  // inputs holding queued packets
	// everyCycle: a round on every core clock edge (the per-cycle reference).
	everyCycle bool
	// isClocked: alloc's priority follows the core clock (wavefront), and
	// match sets its cycle (clocked), since rounds run only on some edges.
	isClocked bool
	// oneVL: a single data VL, so VL arbitration is VL15 first, else VL 0
	// (oneVLPick), and the output units' arbiters are neither read nor kept.
	oneVL bool
	// sameVL: oneVL and no MFT, so a unicast candidate's input VL is its
	// output VL (a data packet arrives on VL 0 and leaves on VL 0, SL-to-VL
	// giving VL 15 drops it; VL15 stays VL15): candInVLs is neither written
	// nor read (candInVL), one array fewer in the round's lines.
	sameVL bool
	rank   int64 // orders this switch's rounds among other switches' rounds of a picosecond

	// Per-port copies of the crossbar and wire times an allocation round
	// reads for every port, kept in two dense arrays (a round touches one
	// or two cache lines rather than each port's unit): they always equal
	// what the units' fields give (refreshOutput, doGrant).
	outFreeFrom []ib.PS // per output: first round time its crossbar connection and granted wire time allow a grant
	freeAsked   []ib.PS // per output: the freeing time (outputFreeAt) a round was last asked for
	inFreeBy    []ib.PS // per input: when its first crossbar connection frees (min of xbarBusy)

	// Allocation rounds: at most one per core cycle, run only when something
	// may have changed (a packet became eligible, an input or output frees,
	// credits came back).
	wakeups     timeSet
	outstanding []ib.PS            // times at which an allocation event is scheduled
	lastRound   ib.PS              // time of the last round, -1 before the first
	stallOuts   components.PortSet // outputs whose credit-stall state may change

	counters Counters

	// What set-up, statistics, traces and the rarer features read: the
	// fields above are what a unicast packet's hop and the rounds touch, so
	// that they fill as few cache lines as they can (at 1,024 hosts every
	// line a hop touches is a miss; docs/performance-data.md).
	name string
	cfg  Config
	// clocked is alloc when isClocked.
	clocked  components.ClockedAllocator
	window   ib.PS // start of the statistics window
	statsEnd ib.PS // end of the statistics window when set (EndStatsAt), else now
	// mcast holds the multicast packets queued at the inputs (entry.mc
	// indexes it), mcFree its free slots: a pool that grows to the most
	// multicast packets ever queued at once, so a packet allocates nothing.
	mcast  []mcState
	mcFree []int32
	// mcHold: switch.mcast_replication is hold, so a multicast head may
	// withhold a request that would split its fanout (holdBack).
	mcHold bool
	// flowlets is the AR flowlet table (WithARFlowlet), nil when every
	// packet is routed on its own.
	flowlets *flowletTable
	// cc marks FECN (WithCC), nil when congestion control is off; a
	// static CC switch's ports are owned by ccOwner, which counts the
	// queued blocks the marking reads (marking.go).
	cc *ccMarker
	// agg is the SHARP aggregation node (SetAggNode), nil on a switch
	// that forwards only.
	agg *aggNode

	frozen map[string]float64      // the window's Metrics, once FreezeStats ended it
	fields []components.TraceField // reused trace field buffer
}

// Counters are the switch-wide packet counts.
type Counters struct {
	Received   uint64 // data packets whose head arrived
	Forwarded  uint64 // packets put on an output wire
	DropRoute  uint64 // dropped: no LFT entry, or an entry beyond the radix
	DropSL2VL  uint64 // dropped: SL-to-VL gave VL15 for a data packet
	BlockHops  uint64 // 64-byte blocks forwarded (for the block-hop benchmark)
	AllocRound uint64 // allocation rounds run

	// Multicast (MFT) replication.
	McastReceived uint64 // multicast packets whose head arrived and found an MFT entry
	McastCopies   uint64 // copies granted (one per output per packet)
	McastRounds   uint64 // allocation rounds in which a multicast packet got copies: McastReceived when no fanout was split
	McastDone     uint64 // multicast packets whose last copy was granted
	McastHold     ib.PS  // summed over the McastDone packets: head arrival to the last copy's tail through the crossbar (buffer held)
	McastHeld     uint64 // hold policy: multicast packets that withheld a request that would have split their fanout (at most once each)
}

// entry is a packet waiting in an input unit.
type entry struct {
	pkt    *ib.Packet
	tail   ib.PS // when its tail arrives (or arrived) at the input
	ready  ib.PS // when it may first take part in allocation
	out    int16 // output port from the LFT, or mcastOut for a multicast packet
	outVL  uint8 // VL on the output link, from SL2VL (unicast)
	blocks int32 // 64-byte blocks (credits) it occupies
	next   int32 // next entry in its queue, or -1
	mc     int32 // a multicast packet's mcState (Switch.mcast), when out is mcastOut
}

// inputVL is one input VL's queues. Entries live in a slot pool; queues are
// linked lists through entry.next: one list in fifo mode, one per output in
// voq mode.
//
// An inputVL is one allocation: its queue ends (fifo, or voq up to radix
// 16; each queue's head and tail side by side) and its occupancy
// accumulator and histogram sit inside the struct, so a packet's arrival,
// release and allocation rounds touch a few cache lines of one object
// rather than five scattered allocations (at 1,024 hosts the model outgrows
// the caches and every scattered line is a miss). A fifo VL's hop touches
// two of its lines: the first (the ends slice, the slot pool, and the
// fifo's own ends at its end) and the second, where the accumulator's
// scalars and first histogram buckets lie. A voq VL also reads voqNonEmpty
// and its queues' ends, after the accumulator (TestInputVLLayout).
type inputVL struct {
	ends  []qEnds // per queue (1 for fifo, radix for voq): first and last entry
	slots []entry
	free  int32                // free slot list, -1 = none
	fifo  [1]qEnds             // a fifo's ends (ends is fifo[:])
	_     [4]byte              // to the end of the first line
	occ   components.Occupancy // buffer blocks held (from head arrival to release); starts the second line

	voqNonEmpty components.PortSet // voq: outputs whose queue is non-empty
	arbLosses   uint64             // rounds in which a sendable head lost arbitration
	inline      [16]qEnds          // a voq's ends when they fit (radix up to 16)
	_           [24]byte
}

// qEnds are one queue's first and last entries (slot indexes), -1 when the
// queue is empty; a queue's two ends share a cache line.
type qEnds struct{ head, tail int32 }

// inputUnit is one port's receive side, less its crossbar connections
// (Switch.xbarBusy) and the queues of VLs other than 0 (Switch.inVLs): 16
// bytes, four units a line (TestInputUnitLayout).
type inputUnit struct {
	q0       *inputVL // VL 0's queues (every port has data VL 0), as inVLs[i]
	nonEmpty uint16   // input VLs with queued packets
	rr       uint8    // input VL to look at first: the one after the last VL granted
}

// outputUnit is one port's transmit side. Everything a grant and a send
// touch on a single-VL fabric fills the first cache line: the stage's ends,
// the wire and crossbar times, the data wire time, and VL 0's pending and
// queued counts (vl[0] ends the line; the other VLs' counts follow it). The
// stage itself is a list through the packets (ib.Packet.StageNext), whose
// first line a grant and a send read anyway: a slice of its own was a
// line per hop more.
// The packets and blocks sent are the port's own counters (every data
// packet on a switch port goes out through trySend) less their values at
// the window's start, so a send writes no second line for them. The
// conflict count (touched only when two inputs ask for the output), the
// VL arbiter and the per-VL stall timers (touched only when a VL stalls)
// come after. At 1,024 hosts the model outgrows the caches and each line a
// hop touches is a miss (TestOutputUnitLayout; docs/performance-data.md).
// The struct is a multiple of 64 bytes, so every unit in the switch's
// slice lies at the same offset in its lines: 0 where the slice has no
// header (radix 40 and up), 8 where Go's malloc header precedes it (a
// radix-16 switch's 13 KiB), the hot line then straddling two. Aligning it
// there did not pay (docs/performance-data.md, twenty-second session).
type outputUnit struct {
	// stageHead and stageTail are the first and last of the granted
	// packets not yet on the wire, in wire order, linked through their
	// StageNext. stageHead is nil when none is; stageTail is then stale
	// and not read (stage).
	stageHead, stageTail *ib.Packet
	stalled              uint16 // VLs in credit stall since the last round
	wireFreeEst          ib.PS  // when the wire will be free after every granted packet
	xbarFree             ib.PS  // when the crossbar output connection frees
	dataBusy             ib.PS  // wire time of data packets sent in the window

	vl [link.MaxVLs]outVLCounts

	conflicts uint64 // rounds in which two or more inputs requested this output
	// txPackets0 and txBlocks0 are the port's Stats().DataPackets and
	// DataBlocks at the window's start (PortStats).
	txPackets0, txBlocks0 uint64
	vlarb                 components.VLArbiter
	stall                 [link.MaxVLs]components.StallTimer
	_                     [16]byte // to 832 bytes
}

// outVLCounts are one output VL's block counts.
type outVLCounts struct {
	pending int32 // blocks granted but not yet sent
	// queued is the blocks of packets at the inputs routed to this output
	// and VL and not yet granted: adaptive routing's load (adaptive.go).
	// An AR switch's route stage adds each packet; every grant subtracts
	// it, so on a static switch, which never reads it, it only counts down
	// (and wraps, harmlessly): the grant then needs no branch on the
	// routing mode, and static runs execute what they did before AR.
	queued int32
}

func newSwitch(name string, s *components.Sim, cfg Config, lft *LFT, mft *MFT, sl2vl *SL2VL, ar *ARTable, mark *CCMarking,
	alloc components.Allocator, fcRefresh, fcMinInterval ib.PS) *Switch {
	n := cfg.Radix
	sw := &Switch{
		name: name, s: s, cfg: cfg, radix: n,
		cycle: cfg.CyclePS(), lft: lft,
		speedup: int32(cfg.Speedup), datapathBytes: int32(cfg.DatapathBytes), cutThrough: cfg.CutThrough, mft: mft, sl2vl: sl2vl, ar: ar, alloc: alloc,
		ports:     make([]*link.Port, n),
		in:        make([]inputUnit, n),
		inVLs:     make([]*inputVL, link.MaxVLs*n),
		out:       make([]outputUnit, n),
		req:       components.NewPortRows(n, n),
		grant:     make([]int, n),
		cand:      components.NewPortRows(16*n, n),
		candVLs:   make([]uint16, n),
		candInVLs: make([]int8, n*n*16),
		blocked:   make([]uint16, n),

		outFreeFrom: make([]ib.PS, n),
		freeAsked:   make([]ib.PS, n),
		inFreeBy:    make([]ib.PS, n),
		lastRound:   -1,
		rank:        s.NewRank(),
		oneVL:       cfg.VLs == 1,
		sameVL:      cfg.VLs == 1 && mft == nil,
		mcHold:      mft != nil && cfg.McastReplication == McastHold,
	}
	sw.clocked, sw.isClocked = alloc.(components.ClockedAllocator)
	if cfg.Speedup > 1 {
		sw.xbarBusy = make([]ib.PS, cfg.Speedup*n)
	}
	sw.routePS = ib.PS(cfg.RouteCycles) * sw.cycle
	sw.allocPS = ib.PS(cfg.AllocCycles) * sw.cycle
	sw.xbarPS = ib.PS(cfg.XbarCycles) * sw.cycle
	high, low := cfg.VLArbTables()
	vlarb := components.NewVLArbiter(high, low, uint8(cfg.VLHighLimit))
	blocks := cfg.VLBufferBytes / ib.CreditBytes
	queues := 1
	if cfg.Queueing == QueueVOQ {
		queues = n
	}
	// An adaptive routing switch's ports deliver to arOwner, whose route
	// stage picks the port; a static switch's to the switch itself.
	var owner link.Owner = sw
	if ar != nil {
		owner = arOwner{sw}
	}
	if mark != nil {
		sw.cc = newCCMarker(*mark, n, name)
		if ar == nil {
			// arOwner already counts every packet in queued.
			owner = ccOwner{sw}
		}
	}
	if mft != nil {
		// A switch with an MFT (never with AR or CC: Build) takes a
		// multicast packet aside before the unicast route stage, which a
		// switch without one runs exactly as before.
		owner = mcOwner{sw}
	}
	for i := 0; i < n; i++ {
		sw.ports[i] = link.NewPort(s, owner, fmt.Sprintf("%s.Port[%d]", name, i), i, link.PortConfig{
			VLs: cfg.VLs, BufferBlocks: blocks, FCRefresh: fcRefresh, FCMinInterval: fcMinInterval,
			// The shared pool is lent to busy VLs a static buffer's worth
			// at a time (link.Port.lend).
			SharedBlocks: cfg.SharedBufferBytes / ib.CreditBytes,
		})
		for vl := 0; vl < link.MaxVLs; vl++ {
			if vl >= cfg.VLs && vl != ib.ManagementVL {
				continue
			}
			q := &inputVL{free: -1}
			switch {
			case queues == 1:
				q.ends = q.fifo[:]
			case queues <= len(q.inline):
				q.ends = q.inline[:queues]
			default:
				q.ends = make([]qEnds, queues)
			}
			q.occ = components.MakeOccupancy(16, int64(max(1, (blocks+15)/16)))
			for k := range q.ends {
				q.ends[k] = qEnds{-1, -1}
			}
			sw.inVLs[vl*n+i] = q
		}
		sw.in[i].q0 = sw.inVLs[i]
		// Copies of one arbiter: each output has its own walk state and
		// all share the read-only tables (one cache line per switch).
		sw.out[i].vlarb = *vlarb
		sw.refreshOutput(i)
	}
	return sw
}

// inputVL returns input i's queues of VL vl, nil for a VL not in use.
func (sw *Switch) inputVL(i, vl int) *inputVL {
	if vl == 0 {
		return sw.in[i].q0
	}
	return sw.inVLs[vl*sw.radix+i]
}

// takeXbar gives a packet granted to input i at xbarIn a crossbar
// connection free by then, busy until xbarTail, and updates inFreeBy[i].
// With one connection (speedup 1) inFreeBy[i] is its time, and xbarBusy is
// neither kept nor read.
func (sw *Switch) takeXbar(i int, xbarIn, xbarTail ib.PS) {
	if sw.speedup == 1 {
		if sw.inFreeBy[i] <= xbarIn {
			sw.inFreeBy[i] = xbarTail
		}
		return
	}
	s := int(sw.speedup)
	xbar := sw.xbarBusy[i*s : i*s+s]
	for k, b := range xbar {
		if b <= xbarIn {
			xbar[k] = xbarTail
			break
		}
	}
	sw.inFreeBy[i] = minPS(xbar)
}

// Name returns the switch's name.
func (sw *Switch) Name() string { return sw.name }

// Config returns the switch's configuration.
func (sw *Switch) Config() Config { return sw.cfg }

// Radix returns the number of ports.
func (sw *Switch) Radix() int { return sw.radix }

// Port returns port i, to be connected with link.Connect.
func (sw *Switch) Port(i int) *link.Port { return sw.ports[i] }

// Counters returns the switch-wide packet counts.
func (sw *Switch) Counters() Counters { return sw.counters }

// AR returns the adaptive routing groups the switch forwards by (WithAR), or
// nil under static routing. The table is the switch's own: a change takes
// effect at the next packet (the route check's mutation test forces a
// wrong port this way).
func (sw *Switch) AR() *ARTable { return sw.ar }

// ceilCycle returns the first core clock edge at or after t (edges at
// multiples of the period from time 0).
func (sw *Switch) ceilCycle(t ib.PS) ib.PS {
	return (t + sw.cycle - 1) / sw.cycle * sw.cycle
}

// PacketArrived implements link.Owner: the head of pkt is at input port p
// (its blocks already count in p's buffer). The route stage starts on the
// next clock edge (cut-through) or on the edge after the tail
// (store-and-forward), and the packet may take part in allocation RouteCycles
// later.
func (sw *Switch) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	i := int(p.Index)
	inVL := int(pkt.VL)
	blocks := pkt.Credits()
	sw.counters.Received++
	o := sw.lft.Lookup(pkt.DLID)
	var outVL uint8
	drop := ""
	switch {
	case o == NoPort || o >= sw.radix:
		drop = "no_route"
		sw.counters.DropRoute++
	case inVL == ib.ManagementVL:
		outVL = ib.ManagementVL // SMPs stay on VL15
	default:
		outVL = sw.sl2vl.VL(i, o, pkt.SL)
		if outVL == ib.ManagementVL {
			drop = "sl2vl"
			sw.counters.DropSL2VL++
		}
	}
	q := sw.inputVL(i, inVL)
	if q == nil {
		panic(fmt.Sprintf("switchasic %s: packet %d arrived on port %d VL %d of %d", sw.name, pkt.Seq, i, inVL, sw.cfg.VLs))
	}
	q.occ.Add(head, int64(blocks))
	if drop != "" {
		// The tail must be in before its blocks can be freed.
		ev := sw.s.Schedule(tail, sw, evRelease)
		ev.Port, ev.VL, ev.Arg, ev.Pkt = int32(i), int8(inVL), int64(blocks), pkt
		sw.trace(head, p.Name, components.TraceDrop, pkt, -1, -1, drop)
		return
	}
	ready := sw.ceilCycle(head) + sw.routePS
	if !sw.cutThrough {
		ready = sw.ceilCycle(tail) + sw.routePS
	}
	sw.enqueue(i, inVL, entry{pkt: pkt, tail: tail, ready: ready, out: int16(o), outVL: outVL, blocks: int32(blocks)})
	if sw.NumHooks() > 0 { // before the arguments: p.Name is in the port's cold lines
		sw.trace(head, p.Name, components.TraceBufEnq, pkt, i, o, "")
	}
	// The first round that can take it: ready, and its input has a crossbar
	// connection free (a grant skips waking a now-empty input, so this is
	// the input's wake-up too).
	sw.wake(max(ready, sw.inFreeBy[i]-sw.allocPS))
}

// enqueue appends e to its queue at input i, VL inVL.
func (sw *Switch) enqueue(i, inVL int, e entry) {
	in := &sw.in[i]
	q := sw.inputVL(i, inVL)
	e.next = -1
	var k int32
	if q.free >= 0 {
		k = q.free
		q.free = q.slots[k].next
		q.slots[k] = e
	} else {
		k = int32(len(q.slots))
		q.slots = append(q.slots, e)
	}
	qi := 0
	if len(q.ends) > 1 {
		qi = int(e.out)
		q.voqNonEmpty.Set(qi)
	}
	qe := &q.ends[qi]
	if qe.tail < 0 {
		qe.head = k
	} else {
		q.slots[qe.tail].next = k
	}
	qe.tail = k
	in.nonEmpty |= 1 << inVL
	sw.active.Set(i)
}

// dequeue removes and returns the head of queue qi at input i, VL inVL.
func (sw *Switch) dequeue(i, inVL, qi int) entry {
	in := &sw.in[i]
	q := sw.inputVL(i, inVL)
	qe := &q.ends[qi]
	k := qe.head
	e := q.slots[k]
	qe.head = e.next
	if e.next < 0 {
		qe.tail = -1
		if len(q.ends) > 1 {
			q.voqNonEmpty.Clear(qi)
		}
	}
	q.slots[k] = entry{next: q.free}
	q.free = k
	if len(q.ends) == 1 && qe.head < 0 || len(q.ends) > 1 && !q.voqNonEmpty.Any() {
		in.nonEmpty &^= 1 << inVL
		if in.nonEmpty == 0 {
			sw.active.Clear(i)
		}
	}
	return e
}

// PortReady implements link.Owner: the wire of port p went idle or credits
// arrived. A staged packet may go now, and a VL stalled on credits may now
// win an allocation.
func (sw *Switch) PortReady(p *link.Port) {
	o := int(p.Index)
	sw.trySend(o)
	// Credits arrived (or the wire freed): a VL stalled on credits may go.
	// A flow-control packet that delayed the wire already moved the
	// output's next round (trySend), so no broader wake-up is needed:
	// TestPerCycleRoundsAgree holds the rounds to the per-cycle definition.
	if sw.out[o].stalled != 0 {
		sw.wake(sw.s.Now())
	}
}

// HandleEvent implements components.EventHandler.
func (sw *Switch) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case evAlloc:
		sw.allocationRound(ev.At())
	case evWireStart:
		sw.trySend(int(ev.Port))
	case evRelease:
		i, vl, blocks := int(ev.Port), int(ev.VL), int(ev.Arg)
		sw.ports[i].Release(vl, blocks)
		sw.inputVL(i, vl).occ.Add(ev.At(), -int64(blocks))
		if ev.Pkt != nil { // a dropped packet: its tail is in, it is gone
			sw.s.FreePacket(ev.Pkt)
		}
	default:
		panic(fmt.Sprintf("switchasic %s: event kind %d", sw.name, ev.Kind))
	}
}

// wake asks for an allocation round at the first clock edge at or after at
// that is later than the last round.
func (sw *Switch) wake(at ib.PS) {
	if now := sw.s.Now(); at < now {
		at = now
	}
	at = sw.ceilCycle(at)
	if at <= sw.lastRound {
		at = sw.lastRound + sw.cycle
	}
	if at == sw.s.Now() && sw.s.LastPassed(sw.rank) {
		// This edge's round would already have run (after it, a switch
		// ranked later granted a packet that reached this one within the
		// same picosecond: zero-cycle pipeline, zero-latency cable): the
		// next edge, as with a round on every edge.
		at += sw.cycle
	}
	if sw.wakeups.push(at) && !sw.isOutstanding(at) {
		sw.scheduleRound(at)
	}
}

// staged tells an output's port that a packet was staged for it to start at
// start (link.Port.Pending). A packet granted to start at the instant the
// port's wire frees goes at the wire's end event if that comes first among
// the picosecond's events (it holds the place of the packet now on the
// wire's send, earlier than this grant's wire-start event), so the port
// must queue it (the ports' wire ends are events only when waited for:
// link.Port.SendQuiet).
func (sw *Switch) staged(port *link.Port, start ib.PS) {
	port.Pending(true)
	if start == port.BusyUntil() {
		port.WaitIdle()
	}
}

// settle tells output o's port whether the switch has anything for it: a
// staged packet, or a VL stalled on credits (link.Port.Pending). With
// neither, PortReady would do nothing with arriving credits.
func (sw *Switch) settle(o int) {
	out := &sw.out[o]
	sw.ports[o].Pending(out.stageHead != nil || out.stalled != 0)
}

// trySend puts staged packets of output o on the wire while their start time
// has come and the wire can take them. Credits were reserved at allocation,
// so the only thing that can hold a due packet is the wire (a flow-control
// packet going ahead of data).
func (sw *Switch) trySend(o int) {
	out := &sw.out[o]
	p := sw.ports[o]
	now := sw.s.Now()
	for pkt := out.stageHead; pkt != nil; pkt = out.stageHead {
		if pkt.StageAt > now || !p.Idle() {
			return
		}
		vl := int(pkt.VL)
		blocks := pkt.Credits()
		if !p.HasCredits(vl, blocks) {
			panic(fmt.Sprintf("switchasic %s: packet %d granted to port %d VL %d without credits (%d available, %d blocks)",
				sw.name, pkt.Seq, o, vl, p.CreditsAvailable(vl), blocks))
		}
		out.stageHead = pkt.StageNext
		pkt.StageNext, pkt.StageAt = nil, 0
		// Quiet: the next staged packet has its own wire-start event, and
		// one due while the wire is busy finds it so (Idle) and waits.
		tailOut := p.SendQuiet(pkt)
		if vl != ib.ManagementVL {
			out.vl[vl].pending -= int32(blocks)
		}
		if tailOut > out.wireFreeEst {
			// A flow-control packet went ahead of this one, so the wire
			// frees later than the grant foresaw: the round that can next
			// use this output moves too.
			out.wireFreeEst = tailOut
			sw.refreshOutput(o)
			if sw.active.Any() {
				sw.wake(sw.outFreeFrom[o])
			}
		}
		out.dataBusy += tailOut - now
		sw.counters.Forwarded++
		sw.counters.BlockHops += uint64(blocks)
		if out.stageHead == nil && out.stalled == 0 {
			p.Pending(false)
		}
	}
}

// stage appends pkt, granted to wire start at start, to the output's
// stage: the packets granted and not yet on the wire, in wire order (their
// starts increase, as each grant starts after the last one's tail).
func (out *outputUnit) stage(pkt *ib.Packet, start ib.PS) {
	pkt.StageNext, pkt.StageAt = nil, start
	if out.stageHead == nil {
		out.stageHead = pkt
	} else {
		out.stageTail.StageNext = pkt
	}
	out.stageTail = pkt
}

// trace emits a trace event when a hook listens.
func (sw *Switch) trace(at ib.PS, path string, kind components.TraceKind, pkt *ib.Packet, in, out int, reason string) {
	if sw.NumHooks() == 0 {
		return
	}
	ev := sw.s.TraceEvent(at, path, kind)
	f := sw.fields[:0]
	if pkt != nil {
		f = ev.AppendPacket(f, pkt)
	}
	if in >= 0 {
		f = append(f, components.IntField("in", int64(in)))
	}
	if out >= 0 {
		f = append(f, components.IntField("out", int64(out)))
	}
	if reason != "" {
		f = append(f, components.StrField("reason", reason))
	}
	if (kind == components.TraceBufEnq || kind == components.TraceBufDeq) && pkt != nil && in >= 0 {
		// The input VL buffer's size, so the checkers hold the blocks
		// queued in it (their own count from enq/deq) to it.
		if vl := int(pkt.VL); vl != ib.ManagementVL {
			f = append(f, components.IntField("cap", int64(sw.ports[in].BufferCapacity(vl))))
		}
	}
	ev.Fields = f
	sw.InvokeHook(sim.HookCtx{Domain: sw, Pos: components.HookPosTrace, Item: ev})
	sw.fields = f
}
