// Package sweep runs design-space sweeps: it expands a config's `sweep:`
// section into design points, runs them in parallel, searches an
// offered-load axis for its saturation knee, and splits a sweep into shards
// that merge back into exactly the unsharded result.
//
// A sweep is the Cartesian product of its axes. Axes are ordered by key
// (sorted), the first key varying slowest and the last fastest, so a point's
// index depends only on the config, never on how the YAML is written or on
// --jobs. Each point is the base config with the point's keys set through
// config.SetNode — the path --set takes — and decoded by fabric.Decode, so a
// bad sweep value fails exactly as the same --set would.
//
// Each point runs with a seed derived from the base seed and the point's
// parameters (see DeriveSeed), and with its own engine: nothing in a run is
// shared with another, so results do not depend on --jobs or order.
//
// The seed axis also takes {replicas: N} (the base seed and the N − 1
// after it) and common: true, under which a point's seed derives from its
// seed value alone, so that every design at one replica draws the same
// traffic (common random numbers); report.Summarise reduces the replicas
// of each design to mean and confidence interval.
//
// The unit of work and of sharding is a design: one combination of the grid
// axes' values. In a grid sweep a design is one point; with a knee search a
// design is the whole bisection along the searched key.
package sweep
