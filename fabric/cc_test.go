package fabric

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/verif"
)

// victimConfig: one 8-port NDR switch (VOQ, one VL of 200 blocks), 8 hosts,
// 4 KiB packets. Every host offers a full link (offered_load 1); hosts 1 … 7
// send half of their packets to host 0 (the hotspot) and half uniformly to
// the six others (the victim traffic); host 0 sends uniformly.
const victimConfig = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, mtu: 4096}
switch: {radix: 8, vls: 1}
topology: {kind: single-switch, hosts: 8}
workload: {kind: hotspot, hotspot_fraction: 0.5, size: 4096, offered_load: 1.0, warmup_ns: 50000, measure_ns: 40000}
cc: {report: true}
`

func runCC(t *testing.T, cfg string, sets ...string) map[string]any {
	t.Helper()
	l, err := Load([]byte(cfg), sets)
	require.NoError(t, err)
	m, err := Run(l, RunOptions{})
	require.NoError(t, err)
	return m
}

// TestCCVictimFlow: tree saturation at one switch and what congestion
// control gives back.
//
// Without CC. Host 0's link takes at most one link of data, so the seven
// senders' hotspot packets together leave at most 1 link's worth per unit
// time. A sender's packets leave its source FIFO in creation order, and
// each is a hotspot packet with probability f = 1/2: once the hotspot
// packets back up to the sender (the switch's input buffer for it full of
// packets waiting for host 0, so a credit comes back only when one of them
// leaves), the sender sends (1 − f)/f victim packets per hotspot packet.
// Summed over the senders, victim load ≤ (1 − f)/f × 1 link, and per
// sender ≤ (1 − f)/(f · 7) = 1/7 = 0.143 of a link, against 0.5 offered:
// the victims, whose destinations are idle most of the time, are held to
// what head-of-line blocking at the sources leaves them. (15 % of slack for
// the binomial draws of ~500 hotspot packets in the window.)
//
// With CC. Host 0's output queue is over the threshold, so the packets the
// switch forwards to it carry FECN; host 0 returns a CNP for each; each
// sender raises its index for host 0 and spaces its hotspot packets, which
// wait in their own per-destination queue. The hotspot packets stop
// filling the switch's input buffers, the senders have credits, and the
// victim packets go at the rate they are made: victim load recovers to
// most of its 0.5 (asserted: over 0.8 × 0.5 = 0.4, far above the no-CC
// bound). The price is hotspot throughput: the throttled senders leave
// host 0's link idle at times (asserted: below the no-CC run's).
func TestCCVictimFlow(t *testing.T) {
	off := runCC(t, victimConfig)
	on := runCC(t, victimConfig, "cc.enable=true")
	const f, senders = 0.5, 7.0
	bound := (1 - f) / (f * senders)
	assert.Equal(t, 0.5, off["victim_offered_load"])
	assert.LessOrEqual(t, off["victim_accepted_load"].(float64), 1.15*bound, "no CC: held to the HOL bound")
	assert.Greater(t, off["hotspot_accepted_load"].(float64), 0.99, "no CC: the hotspot's link is full")
	assert.Greater(t, on["victim_accepted_load"].(float64), 0.8*0.5, "CC: the victims recover")
	assert.Less(t, on["hotspot_accepted_load"], off["hotspot_accepted_load"], "CC: the hotspot pays")
	// Every FECN the switch set came back as a BECN to the source.
	assert.Greater(t, on["cc_fecn_marked"], uint64(0))
	assert.Equal(t, on["cc_fecn_marked"], on["cc_fecn_received"])
	assert.Equal(t, on["cc_becn_sent"], on["cc_becn_received"])
	assert.Equal(t, on["cc_fecn_received"], on["cc_becn_sent"])
	assert.Equal(t, uint64(0), on["cc_cnp_skipped"])
	assert.Greater(t, on["cc_ccti_max"], 0)
	assert.Equal(t, true, on["drain_complete"])
	assert.Equal(t, uint64(0), on["packets_dropped"])
	_, has := off["cc_fecn_marked"]
	assert.False(t, has, "CC counters only with CC on")
}

// TestCCLowLoadChangesNothing: at 10 % uniform load on one switch no
// output has more than the threshold (two 4 KiB packets) waiting at once in
// this run (asserted: nothing marked; at 20 % one packet of the window
// was, seed 3, and the run then differs by that packet's CNP), so no index
// moves, and a source with CC sends its packets in the order its single
// FIFO would (oldest first, no delay at index 0): every metric but the
// cc_ ones is identical.
func TestCCLowLoadChangesNothing(t *testing.T) {
	const cfg = `
seed: 3
link: {generation: NDR, width: 4x, length_m: 2, mtu: 4096}
switch: {radix: 8, vls: 1}
topology: {kind: single-switch, hosts: 8}
workload: {kind: uniform, size: 4096, offered_load: 0.1, warmup_ns: 2000, measure_ns: 20000}
`
	off := runCC(t, cfg)
	on := runCC(t, cfg, "cc.enable=true")
	assertCCChangedNothing(t, off, on)
}

// assertCCChangedNothing: the run with CC on marked nothing, throttled no
// flow, and reported every metric of the run with CC off (but wall_s)
// alike, adding only cc_ ones (and a perftest's background_cc_ ones).
func assertCCChangedNothing(t *testing.T, off, on map[string]any) {
	t.Helper()
	assert.Equal(t, uint64(0), on["cc_fecn_marked"])
	assert.Equal(t, 0, on["cc_flows_throttled"])
	compared := 0
	for k, v := range off {
		if k == "wall_s" {
			continue
		}
		assert.Equal(t, v, on[k], k)
		compared++
	}
	for k := range on {
		if _, ok := off[k]; !ok {
			assert.True(t, strings.HasPrefix(k, "cc_") || strings.HasPrefix(k, "background_cc_"), k)
		}
	}
	assert.Greater(t, compared, 20)
}

// TestCCPartitionedAndChecked: with CC on, a hotspot on a two-level fat
// tree gives the same metrics serial and in two partitions (but events,
// which the partitioned run counts a little past the end), with the
// countdown marking, the random one and cc.victim_mask none, and the
// checkers (lossless, buffers, credits, ordering, wire) pass with the CNPs
// on the fabric.
func TestCCPartitionedAndChecked(t *testing.T) {
	const cfg = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, mtu: 4096}
switch: {radix: 8, vls: 1}
topology: {kind: fat-tree-2, radix: 8}
workload: {kind: hotspot, hotspot_fraction: 0.3, size: 4096, offered_load: 0.8, warmup_ns: 3000, measure_ns: 10000}
cc: {enable: true, ccti_increase: 4}
`
	run := func(sets ...string) map[string]any {
		m, _ := runPassing(t, []byte(cfg), sets...)
		return m
	}
	for _, variant := range []string{"deterministic", "random", "none"} {
		// Random marking draws from each switch's own stream, in the
		// order of the eligible packets at that switch, which a
		// partitioned run keeps (cc.marking_rate 3: one draw in four
		// marks). With cc.victim_mask none a port's victim state is its
		// own downstream credits, which a partitioned run delivers at the
		// same instants; the run must meet victims (a leaf's uplink whose
		// spine is backed up by the hotspot) for the check to mean
		// anything.
		sets := []string{"cc.marking=" + variant, "cc.marking_rate=3"}
		if variant == "none" {
			sets = []string{"cc.victim_mask=none"}
		}
		serial := run(sets...)
		parted := run(append(sets, "sim.partitions=2")...)
		assert.Greater(t, serial["cc_becn_received"], uint64(0), variant)
		if variant == "none" {
			assert.Greater(t, serial["cc_victim_unmarked"], uint64(0))
		}
		for k, v := range serial {
			if k == "events" || k == "wall_s" {
				continue
			}
			assert.Equal(t, v, parted[k], "%s: %s", variant, k)
		}
	}
}

// TestCCConfigRefused: one line naming the key for what CC cannot run on.
func TestCCConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"cc.enable=true", "workload.kind=stream"}, "cc.enable: true needs switches"},
		{[]string{"cc.enable=true", "workload.kind=uniform"}, "cc.enable: true needs switches"},
		{[]string{"cc.enable=true", "workload.kind=perftest"}, "cc.enable: true needs switches"},
		{[]string{"cc.ccti_increase=0"}, "cc.ccti_increase: 0 is out of range"},
		{[]string{"cc.marking=sometimes"}, `cc.marking: "sometimes" is not a marking mode (deterministic, random)`},
		{[]string{"cc.cct_ns=[0, 5, 1]"}, "cc.cct_ns: entry 2"},
		{[]string{"cc.victim_mask=spine"}, `cc.victim_mask: "spine" is not a victim mask (all, none, host_ports, switch_ports)`},
		{[]string{"cc.report=true", "workload.kind=uniform", "topology.kind=single-switch"}, "cc.report: true splits the accepted load of workload.kind hotspot"},
	} {
		_, err := Load(nil, tc.sets)
		if assert.Error(t, err, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		}
	}
}

// TestCCTrace: a trace records the congestion bits where they are set: a
// packet's fecn=1 from the switch's buf_enq on (its grant, wire and
// deliver) but not on its inject, and each CNP (op=CNP, becn=1) from its
// inject to its deliver; as many CNP injects as delivers as FECN delivers.
func TestCCTrace(t *testing.T) {
	l, err := Load([]byte(victimConfig), []string{"cc.enable=true", "workload.warmup_ns=2000", "workload.measure_ns=3000"})
	require.NoError(t, err)
	var buf bytes.Buffer
	rec := verif.NewRecorder(&buf, verif.Header{Version: verif.TraceVersion, Config: strings.Repeat("0", 64)}, verif.Filter{})
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) { verif.AttachHook(rec, s.Blocks...) }})
	require.NoError(t, err)
	require.NoError(t, rec.Flush())
	count := map[string]int{}
	for _, ln := range strings.Split(buf.String(), "\n") {
		f := strings.Fields(ln)
		if len(f) < 3 {
			continue
		}
		kind := f[2]
		switch {
		case strings.Contains(ln, " op=CNP "):
			assert.Contains(t, ln, "becn=1", ln)
			assert.NotContains(t, ln, "fecn=1", ln)
			count["cnp "+kind]++
		case strings.Contains(ln, " fecn=1"):
			count["fecn "+kind]++
		}
	}
	marked := int(m["cc_fecn_marked"].(uint64))
	require.Greater(t, marked, 0)
	assert.Equal(t, marked, count["fecn arb_grant"], "one grant line per marked packet")
	assert.Equal(t, marked, count["fecn deliver"])
	assert.Zero(t, count["fecn inject"], "a source never sets FECN")
	assert.Equal(t, marked, count["cnp inject"])
	assert.Equal(t, marked, count["cnp deliver"])
}
