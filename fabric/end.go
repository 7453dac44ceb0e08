package fabric

import "github.com/hcasim/hcasim/ib"

// End returns when the workload finished: the time sim_time_ns reports.
// In a partitioned run Now may be later (a partition's window end).
func (v *Simulation) End() ib.PS {
	t, _ := v.end()
	return t
}
