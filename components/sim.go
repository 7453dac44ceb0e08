package components

import (
	"fmt"
	"sync/atomic"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/ib"
)

// EventHandler is a block that receives kernel events.
type EventHandler interface {
	HandleEvent(ev *Event)
}

// Event is one scheduled happening: a packet head arriving on a port, a wire
// going idle, a pipeline stage finishing. The fields a kind does not use stay
// zero. On hcasim's engine most events wait by value in a lane of the engine
// (one FIFO per fixed delay); the others, and every event on Akita's engine,
// come from Sim's pool and return to it after they are handled. Either way
// a handler must not keep the pointer.
//
// An Event is exactly one 64-byte cache line (TestEventLayout): a large
// fabric has tens of thousands queued, long out of the caches by the time
// they run, and each dispatch pays a miss per line.
type Event struct {
	at       ib.PS
	target   EventHandler
	owner    *Sim
	class    Class
	observer bool // scheduled for an observer (waveforms): not counted in Events

	Kind uint8      // meaning chosen by the target
	VL   int8       // virtual lane, by kind
	Port int32      // port or stage index, by kind
	Pkt  *ib.Packet // the packet the event concerns, if any
	Arg  int64      // a second integer argument (a count, a PSN, a time, a QP number and index)
	Tail ib.PS      // for an arriving packet: when its tail arrives
}

// Time implements sim.Event: the picosecond time in seconds, for Akita's
// engine (hcasim's own engine orders by At).
func (e *Event) Time() sim.VTimeInSec { return sim.VTimeInSec(e.at.Seconds()) }

// Handler implements sim.Event: every kernel event goes through the Sim,
// which dispatches it and recycles it.
func (e *Event) Handler() sim.Handler { return e.owner }

// IsSecondary implements sim.Event: Akita runs secondary events after every
// primary event of the same time. Late and last events are both secondary
// to Akita's engine, which has no third class.
func (e *Event) IsSecondary() bool { return e.class != ClassPrimary }

// Class is where an event runs among the events of its picosecond: all
// primary events first, then the late ones, each in the order they were
// scheduled, then the last ones by rank (Sim.ScheduleLast).
type Class uint8

// Event classes.
const (
	ClassPrimary Class = iota // the ordinary event
	ClassLate                 // Sim.ScheduleLate: after the primary events of its picosecond
	ClassLast                 // Sim.ScheduleLast: after every other event of its picosecond, by rank
)

// At returns the event's time in picoseconds.
func (e *Event) At() ib.PS { return e.at }

// Sim is one simulation: an Akita engine, the picosecond clock, the event and
// packet pools and the counters every report needs.
type Sim struct {
	Engine sim.Engine
	// fast is Engine when it is hcasim's own (nil on Akita's): the one that
	// can reserve an event's place in the order (Reserve).
	fast *Engine
	// allEvents: blocks queue and deliver every event the definition has
	// (AllEvents).
	allEvents bool

	now        ib.PS
	stopped    bool
	stopAt     ib.PS  // events after this time are not run; 0 = no limit
	atLimit    func() // AtLimit's function: runs when stopAt passes, once
	events     uint64
	freeEvents []*Event
	freePkts   []*ib.Packet
	packetSeq  uint64
	ranks      int64 // ranks handed out by NewRank
	lastAt     ib.PS // time of the last "last" event run, -1 before any
	lastRank   int64 // its rank
	sameTime   int   // events run since time last advanced
	// nextPublish is the event count from which the next advance of time
	// is published for Progress.
	nextPublish uint64

	endHooks []func(now ib.PS)

	// traceEv is the event blocks fill and announce (TraceEvent).
	traceEv TraceEvent

	// In a partitioned run (Group): this Sim's index, the partition count,
	// and per destination partition the events posted to it this window.
	part, parts int
	group       *Group
	outbox      [][]*Event

	// published is the simulated time, stored when time advances at least
	// progressEvery events after the last store, for another goroutine to
	// read (Progress) while the run goes on.
	published atomic.Int64

	// Partitions' Sims are written on every event by different cores:
	// keep each one's fields off its neighbours' cache lines.
	_ [64]byte
}

// MaxEventsPerPicosecond bounds the events one Sim runs without its time
// advancing. A fabric of thousands of hosts runs at most thousands at one
// picosecond; a model that keeps scheduling work for the same instant would
// otherwise spin forever, and is stopped with a panic naming the instant and
// the block (the CLI reports it as an internal error).
const MaxEventsPerPicosecond = 10_000_000

// Engine names, as the sim.engine key spells them.
const (
	EngineHcasim = "hcasim" // components.Engine: typed heap, FIFO ties
	EngineAkita  = "akita"  // Akita v3's sim.SerialEngine
)

// NewSim returns a simulation on hcasim's serial engine (components.Engine).
func NewSim() *Sim {
	e := NewEngine()
	return &Sim{Engine: e, fast: e, lastAt: -1}
}

// NewSimOn returns a simulation on the named engine: "hcasim" or "akita".
func NewSimOn(engine string) *Sim {
	switch engine {
	case EngineAkita:
		return &Sim{Engine: sim.NewSerialEngine(), lastAt: -1}
	case EngineHcasim, "":
		return NewSim()
	}
	panic(fmt.Sprintf("sim: unknown engine %q", engine))
}

// Now returns the current simulated time.
func (s *Sim) Now() ib.PS { return s.now }

// Events returns the number of events handled so far.
func (s *Sim) Events() uint64 { return s.events }

// Schedule queues an event for target at time at. The returned event may be
// filled in further until the event being handled returns (before a run:
// until Run), whatever else is scheduled meanwhile; it stays where it is
// until it runs.
func (s *Sim) Schedule(at ib.PS, target EventHandler, kind uint8) *Event {
	return s.schedule(at, target, kind, ClassPrimary)
}

// ScheduleLate queues an event that runs after every ordinary event of the
// same picosecond. Link ports use it for a packet's head arrival: a
// flow-control packet that ends on the wire at the instant the next data
// packet's head arrives was sent first, so it must take effect first.
func (s *Sim) ScheduleLate(at ib.PS, target EventHandler, kind uint8) *Event {
	return s.schedule(at, target, kind, ClassLate)
}

// ScheduleLast queues an event that runs after every other event of the
// same picosecond, late ones included; last events of one picosecond run by
// rank (a number from NewRank, unique to the target), not in the order they
// were scheduled, and a target has at most one last event per picosecond.
// The event's Arg holds the rank and must not be changed.
//
// A switch's allocation round on a clock edge is a last event: it sees every
// change of that instant (credits, a freed wire, an arrival), and the rounds
// of several switches on one edge run in the switches' order, whenever and
// however often the rounds were asked for. The event-driven rounds and the
// per-cycle definition (each round asked for one cycle ahead) then decide
// alike and schedule what follows in the same order.
func (s *Sim) ScheduleLast(at ib.PS, target EventHandler, kind uint8, rank int64) *Event {
	s.notPast(at, kind)
	if rank < 0 || rank >= 1<<classShift {
		panic(fmt.Sprintf("sim: last event of kind %d with rank %d", kind, rank))
	}
	ev := s.newEvent(at, target, kind, ClassLast)
	ev.Arg = rank
	s.Engine.Schedule(ev)
	return ev
}

// Reserve returns a place in the order of events for one that may be
// scheduled later (ScheduleReserved), as if it were scheduled now; 0 when
// the engine cannot reserve places (Akita's), and then ScheduleReserved
// schedules as Schedule does.
func (s *Sim) Reserve() uint64 {
	if s.fast == nil || s.allEvents {
		return 0
	}
	return s.fast.Reserve()
}

// AllEvents makes blocks queue and deliver every event the definition
// has: Reserve hands out no places, so a block queues at once what it would
// only have reserved a place for, and blocks that may leave out calls that
// change nothing (a link port telling an owner with nothing to send of
// credits: link.Port.Pending) make them. The run is the same, with more
// events and calls: the definition the quiet ones are checked against
// (sim.all_port_events).
func (s *Sim) AllEvents() { s.allEvents = true }

// Quiet reports whether blocks may leave out the events and calls that
// change nothing (not AllEvents).
func (s *Sim) Quiet() bool { return !s.allEvents }

// ReserveLow is Reserve's low 32 bits, for a block that keeps a reservation
// in a hot line: ScheduleReservedLow restores the rest, which holds while
// fewer than 2^32 events are scheduled between the two.
// It is never 0, so that 0 can mean "none": a number whose low bits are 0
// is passed over for the next.
func (s *Sim) ReserveLow() uint32 {
	if s.fast == nil || s.allEvents {
		return 0
	}
	low := uint32(s.fast.Reserve())
	if low == 0 {
		low = uint32(s.fast.Reserve())
	}
	return low
}

// ScheduleReserved queues an event at time at in the place seq (from
// Reserve) holds among the primary events of its picosecond. Akita's
// engine, which orders ties its own way, takes it as Schedule.
func (s *Sim) ScheduleReserved(at ib.PS, target EventHandler, kind uint8, seq uint64) *Event {
	if s.fast == nil {
		return s.schedule(at, target, kind, ClassPrimary)
	}
	s.notPast(at, kind)
	ev := s.newEvent(at, target, kind, ClassPrimary)
	s.fast.ScheduleReserved(ev, seq)
	return ev
}

// ScheduleReservedLow is ScheduleReserved for a reservation kept as its low
// 32 bits (ReserveLow): the latest number handed out with those low bits.
func (s *Sim) ScheduleReservedLow(at ib.PS, target EventHandler, kind uint8, low uint32) *Event {
	var seq uint64
	if s.fast != nil {
		last := s.fast.LastReserved()
		seq = last - uint64(uint32(last)-low)
	}
	return s.ScheduleReserved(at, target, kind, seq)
}

// LastPassed reports whether a last event of rank greater than rank has
// already run at the current picosecond: a last event of this rank asked for
// now would run out of rank order, after its place had passed. A block whose
// last event comes around every clock edge (a switch's per-cycle rounds)
// would have had it already; asking for the next edge instead keeps an
// event-driven block in step with that definition when a chain of
// zero-delay events reaches it within one picosecond.
func (s *Sim) LastPassed(rank int64) bool { return s.lastAt == s.now && s.lastRank > rank }

// NewRank returns the next rank for ScheduleLast: 0, 1, 2, ... in the order
// blocks ask, which is the order their last events of one picosecond run in.
func (s *Sim) NewRank() int64 {
	s.ranks++
	return s.ranks - 1
}

// ScheduleObserver queues an event that exists only for an observer (a
// waveform edge a block announces while a hook listens). It runs like any
// other event but is not counted in Events, so attaching a tracer changes no
// reported result.
func (s *Sim) ScheduleObserver(at ib.PS, target EventHandler, kind uint8) *Event {
	ev := s.schedule(at, target, kind, ClassPrimary)
	ev.observer = true
	return ev
}

func (s *Sim) schedule(at ib.PS, target EventHandler, kind uint8, class Class) *Event {
	s.notPast(at, kind)
	if s.fast != nil {
		return s.fast.scheduleKernel(s, at, target, kind, class)
	}
	ev := s.newEvent(at, target, kind, class)
	s.Engine.Schedule(ev)
	return ev
}

// notPast panics when an event of kind is scheduled before now: a model bug.
func (s *Sim) notPast(at ib.PS, kind uint8) {
	if at < s.now {
		panic(fmt.Sprintf("sim: event kind %d scheduled at %d ps, before now %d ps", kind, at, s.now))
	}
}

// newEvent takes a cleared event from the pool, or makes one, and fills in
// what every event has; it belongs to s until Post gives it to another
// partition.
func (s *Sim) newEvent(at ib.PS, target EventHandler, kind uint8, class Class) *Event {
	var ev *Event
	if n := len(s.freeEvents); n > 0 {
		ev = s.freeEvents[n-1]
		s.freeEvents = s.freeEvents[:n-1]
	} else {
		ev = &Event{owner: s}
	}
	ev.at = at
	ev.target = target
	ev.Kind = kind
	ev.class = class
	return ev
}

// Group returns the partitioned run this Sim is a partition of, or nil.
func (s *Sim) Group() *Group { return s.group }

// Post queues an event for target, which lives in dst: at once when dst is
// this Sim, else at the end of the current window of the partitioned run,
// when dst's partition receives it. An event posted across partitions must
// lie at or beyond the window's end (the run's lookahead guarantees it for
// the cables between partitions); anything earlier is a model bug.
func (s *Sim) Post(dst *Sim, at ib.PS, target EventHandler, kind uint8, class Class) *Event {
	if dst == s {
		return s.schedule(at, target, kind, class)
	}
	if s.group == nil || dst.group != s.group {
		panic(fmt.Sprintf("sim: event kind %d posted to a Sim outside this run's group", kind))
	}
	if at < s.group.windowEnd {
		panic(fmt.Sprintf("sim: event kind %d posted across partitions at %d ps, inside the window ending %d ps", kind, at, s.group.windowEnd))
	}
	ev := s.newEvent(at, target, kind, class)
	ev.owner = dst
	s.outbox[dst.part] = append(s.outbox[dst.part], ev)
	return ev
}

// Handle implements sim.Handler: it dispatches a pooled kernel event (one
// from Akita's engine or hcasim's heap; a lane's event is dispatched in
// place, never through Handle) to its target and returns it to the pool.
func (s *Sim) Handle(e sim.Event) error {
	s.handle(e.(*Event))
	return nil
}

// handle runs ev (unless the simulation has stopped) and recycles it.
func (s *Sim) handle(ev *Event) {
	s.dispatch(ev)
	*ev = Event{owner: s}
	s.freeEvents = append(s.freeEvents, ev)
}

// dispatch runs ev, unless the simulation has stopped: for an event held
// in an engine lane, whose slot is not pooled, all of handle but the
// recycling.
func (s *Sim) dispatch(ev *Event) {
	if !s.stopped && s.stopAt > 0 && ev.at > s.stopAt {
		s.passLimit(ev.at)
	}
	if !s.stopped {
		if ev.at != s.now {
			s.sameTime = 1
			if s.events >= s.nextPublish {
				s.published.Store(int64(ev.at))
				s.nextPublish = s.events + progressEvery
			}
		} else if s.sameTime++; s.sameTime > MaxEventsPerPicosecond {
			panic(fmt.Sprintf("sim: more than %d events at %d ps without time advancing (the last for %T, kind %d): a zero-time loop in the model",
				MaxEventsPerPicosecond, ev.at, ev.target, ev.Kind))
		}
		s.now = ev.at
		if !ev.observer {
			s.events++
		}
		if ev.class == ClassLast {
			s.lastAt, s.lastRank = ev.at, ev.Arg
		}
		ev.target.HandleEvent(ev)
	}
}

// progressEvery is how often, in events, a Sim publishes its time for
// Progress: a few hundred times a second at this model's speed, at a cost
// of one compare each time the clock advances.
const progressEvery = 1 << 14

// Progress returns the simulated time this Sim had reached a moment ago. It
// is the one method safe to call from another goroutine while the Sim runs
// (a progress display); reading it changes nothing in the run.
func (s *Sim) Progress() ib.PS { return ib.PS(s.published.Load()) }

// Stop ends the simulation: events still queued are drained without running.
// In a partitioned run it ends this partition only (Group.Stop ends all).
func (s *Sim) Stop() { s.stopped = true }

// Stopped reports whether Stop was called or the time limit passed.
func (s *Sim) Stopped() bool { return s.stopped }

// StopAt sets a time limit: no event later than t runs.
func (s *Sim) StopAt(t ib.PS) { s.stopAt = t }

// AtLimit makes the time limit set by StopAt call f when it passes, before
// the simulation stops: f sees the simulation as a run stopped at the limit
// ends it (Now is the last event's time, Events its count), and may set a
// later limit with StopAt to let the run go on (or Stop it). f runs once.
// A partition's limit (Group.StopAt) does not call it.
func (s *Sim) AtLimit(f func()) { s.atLimit = f }

// passLimit handles an event at time at beyond the time limit: AtLimit's
// function runs, and the simulation stops unless it moved the limit past at.
func (s *Sim) passLimit(at ib.PS) {
	if f := s.atLimit; f != nil {
		s.atLimit = nil
		f()
	}
	if s.stopAt > 0 && at > s.stopAt {
		s.stopped = true
	}
}

// OnEnd registers a function Run calls when the simulation ends.
func (s *Sim) OnEnd(f func(now ib.PS)) { s.endHooks = append(s.endHooks, f) }

// Run processes events until none is left or the simulation is stopped.
func (s *Sim) Run() error {
	if s.group != nil {
		panic("sim: a partition runs through its Group, not alone")
	}
	err := s.Engine.Run()
	s.published.Store(int64(s.now))
	if err != nil {
		return err
	}
	for _, f := range s.endHooks {
		f(s.now)
	}
	return nil
}

// NewPacket returns a cleared packet from the pool with the next sequence
// number.
func (s *Sim) NewPacket() *ib.Packet {
	return s.NewPacketNumbered(s.ReserveSeqs(1))
}

// ReserveSeqs takes n packet numbers, the first returned, for packets a
// component numbers now and builds later with NewPacketNumbered: the HCA
// numbers a READ's responses when it reads their payloads and builds each
// when the wire takes it, so a trace numbers them as it always has.
func (s *Sim) ReserveSeqs(n int) uint64 {
	first := s.packetSeq + 1
	s.packetSeq += uint64(n)
	return first
}

// NewPacketNumbered returns a clean packet (from the pool when it can)
// carrying number seq, which ReserveSeqs handed out.
func (s *Sim) NewPacketNumbered(seq uint64) *ib.Packet {
	var p *ib.Packet
	if n := len(s.freePkts); n > 0 {
		p = s.freePkts[n-1]
		s.freePkts = s.freePkts[:n-1]
		p.Reset()
	} else {
		p = new(ib.Packet)
	}
	p.Seq = seq
	if s.parts > 1 {
		// Unique across partitions: partition k numbers k+1, k+1+P, ...
		p.Seq = (seq-1)*uint64(s.parts) + uint64(s.part) + 1
	}
	return p
}

// FreePacket returns a packet to the pool once its last holder is done.
func (s *Sim) FreePacket(p *ib.Packet) { s.freePkts = append(s.freePkts, p) }

// PacketsCreated returns how many packet numbers NewPacket and ReserveSeqs
// handed out.
func (s *Sim) PacketsCreated() uint64 { return s.packetSeq }

// TraceEvent returns the Sim's one reusable trace event, set to time t,
// path and kind with no fields, for a block to fill and announce at
// HookPosTrace. An announced event is valid only during the hook call, and
// hooks announce nothing themselves, so one event serves every block of the
// Sim (a partition's blocks run on its own Sim's goroutine). An event made
// in the block instead escapes through the hook's interface: one heap
// allocation per traced event.
func (s *Sim) TraceEvent(t ib.PS, path string, kind TraceKind) *TraceEvent {
	s.traceEv = TraceEvent{Time: t, Path: path, Kind: kind}
	return &s.traceEv
}
