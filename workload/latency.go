package workload

import (
	"math"
	"slices"

	"github.com/hcasim/hcasim/ib"
)

// Latencies collects per-packet or per-message latencies in picoseconds and
// reports exact order statistics (no binning).
type Latencies struct {
	v []int64
}

// Add records one latency.
func (l *Latencies) Add(d ib.PS) { l.v = append(l.v, int64(d)) }

// Merge adds o's samples.
func (l *Latencies) Merge(o *Latencies) { l.v = append(l.v, o.v...) }

// Len returns the number of samples.
func (l *Latencies) Len() int { return len(l.v) }

// Quantile returns the q-quantile (0 ≤ q ≤ 1) by the nearest-rank method:
// the smallest sample with at least q of the samples at or below it. Call
// Sort first.
func (l *Latencies) Quantile(q float64) ib.PS {
	if len(l.v) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(l.v))))
	if rank < 1 {
		rank = 1
	}
	return ib.PS(l.v[rank-1])
}

// Sort orders the samples; Quantile needs it.
func (l *Latencies) Sort() { slices.Sort(l.v) }

// Mean returns the mean in picoseconds.
func (l *Latencies) Mean() float64 {
	if len(l.v) == 0 {
		return 0
	}
	var s float64
	for _, x := range l.v {
		s += float64(x)
	}
	return s / float64(len(l.v))
}

// SummaryNs returns min, mean, p50, p99, max in nanoseconds as the
// `latency_ns` metric object (docs/metrics.md).
func (l *Latencies) SummaryNs() map[string]float64 {
	l.Sort()
	if len(l.v) == 0 {
		return map[string]float64{"min": 0, "mean": 0, "p50": 0, "p99": 0, "max": 0, "count": 0}
	}
	ns := func(p ib.PS) float64 { return float64(p) / 1000 }
	return map[string]float64{
		"count": float64(len(l.v)),
		"min":   ns(ib.PS(l.v[0])),
		"mean":  l.Mean() / 1000,
		"p50":   ns(l.Quantile(0.50)),
		"p99":   ns(l.Quantile(0.99)),
		"max":   ns(ib.PS(l.v[len(l.v)-1])),
	}
}
