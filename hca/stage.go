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
type stage struct {
	dev       *Device // announces valid/ready edges when a hook listens
	idx       int
	lat, ii   ib.PS
	freeAt    ib.PS // the next cycle the block accepts an item
	busy      ib.PS // Σ initiation intervals: time the issue slot was taken
	residency ib.PS // Σ (leave − offer): occupancy × time, by Little's law
	items     int64
}

func newStage(sc StageConfig, cycle ib.PS) stage {
	return stage{lat: ib.PS(sc.LatencyCycles) * cycle, ii: ib.PS(sc.IntervalCycles) * cycle}
}

// accept offers an item at t with extra latency (a cache miss) and returns
// when it leaves the stage.
func (s *stage) accept(t, extra ib.PS) ib.PS {
	start := max(t, s.freeAt)
	s.freeAt = start + s.ii
	s.busy += s.ii
	done := start + s.lat + extra
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
