package hca

import "github.com/hcasim/hcasim/ib"

// Stage names, in pipeline order; StageStats and docs/hca.md use them.
const (
	StageDoorbell = iota
	StageWQEFetch
	StageKeyCheck
	StageDMA
	StageTransportTx
	StageTransportRx
	StageCQE
	NumStages
)

// StageNames are the snake_case names of the stages, indexed by Stage*.
var StageNames = [NumStages]string{"doorbell", "wqe_fetch", "key_check", "dma", "transport_tx", "transport_rx", "cqe"}

// stage is one clocked pipeline block as a server: an item offered at t
// starts when the block can accept again, occupies its issue slot for the
// initiation interval, and leaves latency after its start. Pure arithmetic:
// the device turns the returned times into events, so a stage costs no
// event per cycle.
//
// Items take the issue slots in the order they are offered, each at or
// after its own time (freeAt), which keeps one QP's steps in order: a
// packet's DMA write after the previous packet's key check. transport_tx
// is shared by flows that offer for future times: the requester offers a
// packet when it grants it, for the time its payload read will complete
// (about 1 µs later), while ACKs and responses are offered as they are
// built. There (gapFill) an item takes the first slot at or after its own
// time that no item holds, as a server taking items as they arrive would:
// an ACK no longer waits behind the slots of packets whose payloads are
// still on the way, nor, after a rewind, behind the discarded packets'
// slots. Offers in time order get the same slots either way; each flow's
// items keep their order, their slots being offered in time order; a slot
// once given is never moved, so where two flows' slots would overlap the
// item offered second waits at most one interval longer than it would in
// arrival order.
//
// dma and key_check serve in time order too, but through acceptQP and
// issueQP: an item also starts after the slot of its QP's previous item in
// the stage, so each QP's items keep their offer order (a packet's payload
// write after the previous packet's, whose key check may have missed)
// while other QPs' items fill the gaps. Time order alone let a WRITE's
// second and third packets be written, and the message acknowledged,
// before its first packet's R_Key miss was resolved.
//
// wqe_fetch serves the same way, with a previous slot per queue (a QP's
// send queue, its receive queue, an SRQ): a WQE read is offered for its
// parse when the read is issued, for the time it completes (about 0.5 µs
// later), while a BlueFlame WQE is offered as its doorbell is decoded. A
// parser takes WQEs as they come on chip, so another queue's WQE already
// there no longer waits behind a receive prefetch still on the way (it did
// in offer order: 370 ns on the warm tree all-reduce's first write,
// docs/fabric.md), while each queue's WQEs are parsed in the order read
// (a BlueFlame WQE after the same queue's fetch still in flight).
type stage struct {
	dev     *Device // announces valid/ready edges when a hook listens
	idx     int
	lat, ii ib.PS
	freeAt  ib.PS // the next cycle the block accepts an item (FIFO)
	gapFill bool  // serve in time order (slots) rather than offer order
	// slots are the start times of the issue slots given (gapFill),
	// ascending; slots[:slotHead] ended by now.
	slots     []ib.PS
	slotHead  int
	busy      ib.PS // Σ initiation intervals: time the issue slot was taken
	residency ib.PS // Σ (leave − offer): occupancy × time, by Little's law
	items     int64
}

func newStage(sc StageConfig, cycle ib.PS) stage {
	return stage{lat: ib.PS(sc.LatencyCycles) * cycle, ii: ib.PS(sc.IntervalCycles) * cycle}
}

// accept offers an item at t with extra latency and returns when it leaves
// the stage. It is issue then leave written out: it runs at several stages
// of every packet, and the compiler inlines neither into it (a call each
// cost 0.8 % more instructions on bench/b2b-ndr-write-bw).
func (s *stage) accept(t, extra ib.PS) ib.PS {
	var start ib.PS
	if s.gapFill {
		start = s.book(t)
	} else {
		start = max(t, s.freeAt)
		s.freeAt = start + s.ii
	}
	s.busy += s.ii
	done := start + s.lat + extra
	s.residency += done - t
	s.items++
	if s.dev != nil && s.dev.stageTrace && s.dev.NumHooks() > 0 {
		s.dev.stageEdges(s.idx, t, start, start+s.ii, done)
	}
	return done
}

// issue gives the item offered at t its issue slot and returns the slot's
// start, for an item whose end is known only after that (a key check that
// misses waits for a PCIe read issued after the lookup); leave then says
// when it leaves. Together they do what accept does.
func (s *stage) issue(t ib.PS) ib.PS {
	var start ib.PS
	if s.gapFill {
		start = s.book(t)
	} else {
		start = max(t, s.freeAt)
		s.freeAt = start + s.ii
	}
	s.busy += s.ii
	return start
}

// acceptQP is accept for an item of one QP. In a stage that serves in
// time order (gapFill) the item takes the first slot at or after its own
// time that starts after the slot of the QP's previous item in the stage
// (*prev, which it then sets): each QP's items keep their offer order,
// and other QPs' items fill the gaps. In offer order it is accept.
// Like accept it is written out (issueQP then leave).
func (s *stage) acceptQP(t ib.PS, prev *ib.PS, extra ib.PS) ib.PS {
	var start ib.PS
	if s.gapFill {
		start = s.book(max(t, *prev))
		*prev = start
	} else {
		start = max(t, s.freeAt)
		s.freeAt = start + s.ii
	}
	s.busy += s.ii
	done := start + s.lat + extra
	s.residency += done - t
	s.items++
	if s.dev != nil && s.dev.stageTrace && s.dev.NumHooks() > 0 {
		s.dev.stageEdges(s.idx, t, start, start+s.ii, done)
	}
	return done
}

// issueQP is issue for an item of one QP (acceptQP).
func (s *stage) issueQP(t ib.PS, prev *ib.PS) ib.PS {
	var start ib.PS
	if s.gapFill {
		// The previous item's slot, if not yet forgotten (it ends after
		// now, so after t unless t is later), holds [*prev, *prev + ii):
		// booking from *prev puts this one after it.
		start = s.book(max(t, *prev))
		*prev = start
	} else {
		start = max(t, s.freeAt)
		s.freeAt = start + s.ii
	}
	s.busy += s.ii
	return start
}

// leave records an item offered at t, issued at start, leaving at done
// (occupancy counts it until then), and returns done.
func (s *stage) leave(t, start, done ib.PS) ib.PS {
	s.residency += done - t
	s.items++
	if s.dev != nil && s.dev.stageTrace && s.dev.NumHooks() > 0 {
		s.dev.stageEdges(s.idx, t, start, start+s.ii, done)
	}
	return done
}

// StageStats is one stage's activity over a run.
type StageStats struct {
	Items int64
	// Busy is the fraction of time the stage's issue slot was taken.
	Busy float64
	// Occupancy is the mean number of items inside the stage (waiting or
	// in flight).
	Occupancy float64
}

func (s *stage) stats(span ib.PS) StageStats {
	if span <= 0 {
		return StageStats{Items: s.items}
	}
	return StageStats{Items: s.items, Busy: float64(s.busy) / float64(span), Occupancy: float64(s.residency) / float64(span)}
}

// book gives the item offered at t the first issue slot at or after t that
// overlaps no slot given before (gapFill), and returns its start.
func (s *stage) book(t ib.PS) ib.PS {
	// Slots that ended by now hold back no offer (offers are for now or
	// later): forget them.
	now := s.dev.s.Now()
	for s.slotHead < len(s.slots) && s.slots[s.slotHead]+s.ii <= now {
		s.slotHead++
	}
	if s.slotHead > 64 && 2*s.slotHead > len(s.slots) {
		n := copy(s.slots, s.slots[s.slotHead:])
		s.slots, s.slotHead = s.slots[:n], 0
	}
	live := s.slots[s.slotHead:]
	// From the first slot that ends after t (slots are disjoint, so their
	// ends ascend with their starts; offers in time order land at the end,
	// so look from there), move past every slot the item's would overlap.
	i := len(live)
	for i > 0 && live[i-1]+s.ii > t {
		i--
	}
	start := t
	for i < len(live) && live[i] < start+s.ii {
		start = max(start, live[i]+s.ii)
		i++
	}
	if i == len(live) {
		// Offers in time order land at the end.
		s.slots = append(s.slots, start)
		return start
	}
	s.slots = append(s.slots, 0)
	live = s.slots[s.slotHead:]
	copy(live[i+1:], live[i:])
	live[i] = start
	return start
}
