package fabric

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quietPortPoints are design points whose hosts and switches send in the
// ways SendQuiet is used (switch outputs, packet endpoints with and without
// congestion control, HCAs, streams) or next to them (flow-control
// packets, lossy links, partitions), beyond allocationPoints.
var quietPortPoints = [][]string{
	{"topology.kind=single-switch", "switch.radix=8", "workload.kind=uniform", "workload.size=4096",
		"workload.offered_load=0.9", "cc.enable=true", "workload.measure_ns=10000"},
	{"topology.kind=single-switch", "switch.radix=8", "workload.kind=uniform", "workload.size=1024",
		"workload.offered_load=0.6", "link.ber=1e-6", "workload.measure_ns=10000"},
	{"topology.kind=fat-tree-2", "switch.radix=4", "topology.routing=dmodk", "workload.kind=uniform",
		"workload.size=1024", "workload.offered_load=0.7", "sim.partitions=2", "workload.warmup_ns=500",
		"workload.measure_ns=2000"},
	{"topology.kind=back-to-back", "workload.kind=perftest", "workload.test=write_bw", "workload.size=65536",
		"workload.iterations=20"},
	{"topology.kind=fat-tree-2", "switch.radix=8", "topology.routing=dmodk", "workload.kind=perftest",
		"workload.test=write_lat", "workload.size=2", "workload.iterations=5", "workload.background=true",
		"workload.offered_load=0.6", "workload.warmup_ns=1000", "workload.measure_ns=5000"},
	{"topology.kind=back-to-back", "workload.kind=stream", "workload.size=4096", "switch.vls=2",
		"workload.measure_ns=5000"},
}

// TestQuietPortsAgree: a port queues the event for its wire going idle
// only when a block waits for the wire (link.Port.SendQuiet, WaitIdle),
// in the place among its picosecond's events it would have had if queued
// at the send; sim.all_port_events: true queues one for every packet's end,
// the definition. Both must give the same results and the same trace, with
// the checkers finding nothing: every metric but the event count (and the
// allocation rounds, which a switch also ran for wires going idle while a
// VL waited for credits, and which change nothing: TestPerCycleRoundsAgree),
// and each block's trace lines. The quiet runs must save events.
func TestQuietPortsAgree(t *testing.T) {
	points := append(append([][]string{}, allocationPoints...), quietPortPoints...)
	for i, sets := range points {
		var got [2]map[string]any
		for k, every := range []string{"false", "true"} {
			l, err := Load(nil, append(append([]string{}, sets...), "sim.all_port_events="+every))
			require.NoError(t, err, "point %d", i)
			got[k] = runChecked(l, nil, true)
			requireClean(t, got[k], fmt.Sprintf("point %d, all_port_events %s", i, every))
		}
		assert.Equal(t, got[0], got[1], "point %d: %v", i, sets)
	}
	// The saving, on the first point (a radix-8 switch at 0.8 load): a
	// switch output's wire end is an event only when a packet waited for
	// it, an endpoint's only when its source queue was not empty.
	var events [2]uint64
	for k, every := range []string{"false", "true"} {
		l, err := Load(nil, append(append([]string{}, allocationPoints[0]...), "sim.all_port_events="+every))
		require.NoError(t, err)
		m, err := Run(l, RunOptions{})
		require.NoError(t, err)
		ev, ok := m["events"].(uint64)
		require.True(t, ok, "events %T", m["events"])
		events[k] = ev
	}
	assert.Less(t, events[0], events[1], "the quiet run saves events")
}

// TestQuietPortsRandomPoints: TestQuietPortsAgree on random small
// design points (TestPerCycleRandomPoints's), with the checkers on.
// HCASIM_RANDOM_POINTS and HCASIM_RANDOM_SEED as there.
func TestQuietPortsRandomPoints(t *testing.T) {
	n, seed := randomCampaign(t, 8)
	rng := rand.New(rand.NewPCG(seed, 0x91e7))
	compareRandomPoints(t, n, nil, true, func() ([]string, [2]string) {
		return append(randomPoint(rng, false), "sim.check=true"), [2]string{"sim.all_port_events=false", "sim.all_port_events=true"}
	})
}

// TestQuietPortsMulticast: the same on a multicast run whose hosts are
// also background sources (workload.background_hosts: all): a member and
// a packet endpoint share each host's port and take turns at its
// PortReady, so each asks for the end of every packet it sends.
func TestQuietPortsMulticast(t *testing.T) {
	sets := []string{"topology.kind=single-switch", "topology.hosts=4", "switch.vls=1", "switch.queueing=fifo",
		"link.generation=NDR", "link.width=4x", "link.length_m=2", "workload.kind=multicast", "workload.size=4096",
		"workload.offered_load=0.5", "workload.background=true", "workload.background_hosts=all",
		"workload.background_load=0.5", "workload.warmup_ns=2000", "workload.measure_ns=10000"}
	var got [2]map[string]any
	var traces [2]string
	for k, every := range []string{"false", "true"} {
		m, trace, err := runMcastCheckedOn(t, true, nil, append(append([]string{}, sets...), "sim.all_port_events="+every)...)
		require.NoError(t, err)
		delete(m, "events")
		delete(m, "wall_s")
		got[k], traces[k] = m, trace
	}
	assert.Equal(t, got[0], got[1])
	assert.Equal(t, traces[0], traces[1])
	assert.NotEmpty(t, traces[0])
}
