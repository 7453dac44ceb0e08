package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/report"
)

// partlyTracedPoints add to quietPortPoints what flow-control packets and
// their arrivals touch: VLs stalled on credits (buffers of one largest
// packet at full load), a short flow-control refresh and a minimum
// interval (flow-control packets that are not the result of a release), a
// shared buffer pool that lends, and adaptive routing (which reads other
// outputs' credits).
var partlyTracedPoints = [][]string{
	{"topology.kind=fat-tree-2", "switch.radix=8", "topology.routing=dmodk", "workload.kind=uniform",
		"workload.size=2048", "workload.offered_load=1", "switch.vl_buffer_bytes=4160", "workload.measure_ns=8000"},
	{"topology.kind=single-switch", "switch.radix=8", "workload.kind=uniform", "workload.size=1024",
		"workload.offered_load=0.7", "link.fc_refresh_ns=100", "link.fc_min_interval_ns=50", "workload.measure_ns=8000"},
	{"topology.kind=single-switch", "switch.radix=8", "switch.vls=2", "workload.kind=uniform",
		"workload.sizes=256:0.5,4096:0.5", "workload.offered_load=0.9", "switch.vl_buffer_bytes=4160",
		"switch.shared_buffer_bytes=32768", "workload.measure_ns=8000"},
	{"topology.kind=fat-tree-2", "switch.radix=8", "topology.adaptive_routing=true", "workload.kind=uniform",
		"workload.size=1024", "workload.offered_load=0.8", "workload.measure_ns=8000"},
}

// TestQuietPortsPartlyTraced: TestQuietPortsAgree traces every port
// (the checkers need them), but a port's quiet paths depend on whether it
// is traced (a traced data packet's tx_end is an observer's event; a
// quiet-credits change that keeps arrivals out of the queue would have to
// keep traced ports' arrivals events, docs/performance-data.md, "twenty-
// seventh session"), and most runs trace nothing. Here only the blocks
// that are not ports, and the ports of Fabric.Host[1], are traced: the
// switches' and endpoints' lines show every decision credits and wires
// feed (allocation, stalls, sends), and the other ports run untraced.
// Quiet and all_port_events runs must agree on every metric but the event
// and round counts, and on those blocks' lines.
func TestQuietPortsPartlyTraced(t *testing.T) {
	points := append(append(append([][]string{}, quietPortPoints...), allocationPoints...), partlyTracedPoints...)
	for i, sets := range points {
		var got [2]map[string]any
		for k, every := range []string{"false", "true"} {
			l, err := Load(nil, append(append([]string{}, sets...), "sim.all_port_events="+every))
			require.NoError(t, err, "point %d", i)
			got[k] = runPartlyTraced(l)
			require.NotContains(t, got[k], "error", "point %d, all_port_events %s: %v", i, every, sets)
			require.NotEmpty(t, got[k]["trace"], "point %d: nothing traced", i)
		}
		assert.Equal(t, got[0], got[1], "point %d: %v", i, sets)
	}
}

// runPartlyTraced runs l with the blocks that are not ports traced, and
// the ports named Fabric.Host[1]...: the metrics but the event and round
// counts, with the trace digest under "trace".
func runPartlyTraced(l *Loaded) map[string]any {
	d := blockDigest{}
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		for _, b := range s.Blocks {
			if p, ok := b.(*link.Port); ok && !hostOnePort(p.Name) {
				continue
			}
			b.AcceptHook(d)
		}
	}})
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	delete(m, "events")
	delete(m, "wall_s")
	if sw, ok := m["switch"].(map[string]any); ok {
		delete(sw, "alloc_rounds")
	}
	m["trace"] = d.sums()
	report.Normalize(m)
	return m
}

func hostOnePort(name string) bool {
	const h = "Fabric.Host[1]."
	return len(name) > len(h) && name[:len(h)] == h
}
