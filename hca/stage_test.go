package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/ib"
)

func TestStageServer(t *testing.T) {
	// 1 GHz: 1 cycle = 1000 ps. Latency 10 cycles, interval 4 cycles.
	s := newStage(StageConfig{LatencyCycles: 10, IntervalCycles: 4}, ib.CyclePS(1000))
	tests := []struct {
		offer, extra, want ib.PS
	}{
		{0, 0, 10000},       // idle: leaves after the latency
		{1000, 0, 14000},    // waits for the interval: starts at 4000
		{2000, 500, 18500},  // starts at 8000, + 500 ps miss
		{100000, 0, 110000}, // idle again
		{100000, 0, 114000}, // same cycle as the previous: one interval later
	}
	for i, tc := range tests {
		assert.Equal(t, tc.want, s.accept(tc.offer, tc.extra), "item %d", i)
	}
	st := s.stats(200000)
	assert.Equal(t, int64(5), st.Items)
	// Busy 5 × 4000 ps over 200 ns = 0.1.
	assert.InDelta(t, 0.1, st.Busy, 1e-12)
	// Residency: 10000 + 13000 + 16500 + 10000 + 14000 = 63500 ps → 0.3175 items.
	assert.InDelta(t, 0.3175, st.Occupancy, 1e-12)
}

// TestStageIssueLeaveIsAccept: accept is issue then leave written out
// (for speed); offering the same items both ways gives the same times and
// statistics.
func TestStageIssueLeaveIsAccept(t *testing.T) {
	cfg := StageConfig{LatencyCycles: 10, IntervalCycles: 4}
	a := newStage(cfg, ib.CyclePS(1000))
	b := newStage(cfg, ib.CyclePS(1000))
	for i, o := range []struct{ offer, extra ib.PS }{{0, 0}, {1000, 0}, {2000, 500}, {100000, 0}, {100000, 7}} {
		start := b.issue(o.offer)
		assert.Equal(t, a.accept(o.offer, o.extra), b.leave(o.offer, start, start+b.lat+o.extra), "item %d", i)
	}
	assert.Equal(t, a.stats(200000), b.stats(200000))
	assert.Equal(t, int64(5), b.stats(200000).Items)
}
