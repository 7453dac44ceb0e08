package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/ib"
)

// hcaVictimConfig: testdata/cc-victim.topo, two NDR switches A and B joined
// by one cable. Four perftest write_bw clients (hosts 0, 1 on A; 2, 3 on B;
// 64 KiB messages, cx7 HCAs) write into the server, host 6 on B (the
// incast pattern: clients 0 … 3 into the last host). Hosts 4 (V, on A) and
// 5 (W, on B) are the background: uniform among themselves, so V sends
// only to W, at 0.6 of a link of 4 KiB packets. The victim flow V → W
// shares the cable A → B with clients 0 and 1, and nothing else with the
// incast. The background's window, [20 µs, 220 µs], ends before any client
// finishes (the first to finish, a B-side client at 1/3 of the server's
// drain, needs about 450 µs for its 100 × 64 KiB), so the incast is whole
// throughout it.
const hcaVictimConfig = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, medium: copper, mtu: 4096}
hca: {profile: cx7}
switch: {radix: 8, vls: 1, vl_buffer_bytes: 16640}
topology: {kind: file, file: testdata/cc-victim.topo, routing: minhop}
workload: {kind: perftest, test: write_bw, size: 65536, iterations: 100, pattern: incast, clients: 4,
  background: true, background_pattern: uniform, offered_load: 0.6, warmup_ns: 20000, measure_ns: 200000}
`

// victimLoad is V's accepted load: the background's two hosts are V and W,
// and W's traffic (B → A, against the incast) is not held back, so V's is
// the smaller.
func victimLoad(m map[string]any) float64 {
	return m["host_accepted_load"].(map[string]any)["min"].(float64)
}

// TestCCHCAVictimFlow: tree saturation behind an HCA incast, and what the
// HCAs' and the background endpoints' congestion control do about it.
//
// Without CC, derived. The server S drains at some rate D ≤ 1 link. B's
// output to S serves its three inputs (the cable from A, clients 2 and 3)
// round robin, one 4 KiB packet each, all backlogged: the cable's input
// buffer at B gets D/3. That buffer (4 packets) is full of packets for S,
// since V's packets for W leave it at once (W's output is idle, the switch
// has a queue per output); so the cable A → B moves only when a packet
// leaves that buffer: at D/3 (for S) + r_V (for W). A's output to the
// cable serves its three inputs (clients 0, 1 and V), each backlogged, one
// packet each in turn: V gets a third, r_V = (D/3 + r_V)/3, r_V = D/6 ≤
// 1/6 of a link, against the 0.6 it offers to an idle destination. The
// assertion allows 10 % over 1/6.
//
// With CC. B's output to S has more than 130 blocks waiting, marks the
// clients' packets, S answers each FECN with a CNP to the client's QP, and
// the client raises its QP's CCT index and spaces its grants: the backlog
// for S in the cable's buffer at B shrinks, and V gains (asserted: above
// the CC-off run). But V's packets wait at A's output to the cable with
// the clients' backlog, more than 130 blocks, so they are marked there
// too (every port marks, as a victim as well), W answers them, and V
// throttles its own flow: asserted as V's flow among the background's
// throttled ones. V gets back only part of what it offers (docs/
// congestion.md, "The HCA victim scenario"). The incast pays (its
// aggregate falls: the clients' indexes overshoot their 1/4 share),
// asserted as a direction only.
func TestCCHCAVictimFlow(t *testing.T) {
	off := runCC(t, hcaVictimConfig)
	on := runCC(t, hcaVictimConfig, "cc.enable=true")
	t.Logf("victim off %.3f on %.3f, incast %.1f → %.1f Gb/s, background index %.1f", victimLoad(off), victimLoad(on),
		off["aggregate_bw_gbps"], on["aggregate_bw_gbps"], on["background_cc_ccti_mean"])
	assert.LessOrEqual(t, victimLoad(off), 1.1/6, "the HOL bound D/6")
	assert.NotContains(t, off, "cc_fecn_marked")
	assert.NotContains(t, off, "background_cc_fecn_received")
	assert.Greater(t, victimLoad(on), victimLoad(off))
	assert.Less(t, on["aggregate_bw_gbps"].(float64), off["aggregate_bw_gbps"].(float64))
	assert.Equal(t, true, on["data_verified"])
	// Every request that arrived marked was answered, and every CNP came
	// back to its client's QP; the four clients' QPs were throttled.
	assert.Positive(t, on["cc_fecn_received"])
	assert.Equal(t, on["cc_fecn_received"], on["cc_becn_sent"])
	assert.Equal(t, on["cc_becn_sent"], on["cc_becn_received"])
	assert.Equal(t, uint64(0), on["cc_cnp_skipped"])
	assert.Equal(t, 4, on["cc_flows_throttled"])
	// The background's V was marked at A and throttled.
	assert.Positive(t, on["background_cc_becn_received"])
	assert.GreaterOrEqual(t, on["background_cc_flows_throttled"], 1)
	assertMarksAccounted(t, on)
}

// assertMarksAccounted: every packet the switches marked that has landed
// was counted once at an HCA (answered or ignored) or at a background
// endpoint; the test may end with marked packets still in flight, so the
// marks are at least that sum.
func assertMarksAccounted(t *testing.T, m map[string]any) {
	t.Helper()
	landed := m["cc_fecn_received"].(uint64) + m["cc_fecn_ignored"].(uint64)
	if v, ok := m["background_cc_fecn_received"]; ok {
		landed += v.(uint64)
	}
	assert.Positive(t, landed)
	assert.GreaterOrEqual(t, m["cc_fecn_marked"].(uint64), landed)
}

// bgVictimConfig: testdata/cc-bg-victim.topo, two NDR switches A and B
// joined by one cable. The perftest pair, one write_bw client C (host 0,
// on A) into its server S (host 6, on B), 64 KiB messages, is the victim;
// the background is the congestion: an incast of its hosts 2, 3 (on A)
// and 4, 5 (on B) into its first host T (host 1, on B), each offering 0.6
// of a link. C → S shares the cable A → B with hosts 2 and 3, and nothing
// else with the incast.
const bgVictimConfig = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, medium: copper, mtu: 4096}
hca: {profile: cx7}
switch: {radix: 8, vls: 1, vl_buffer_bytes: 16640}
topology: {kind: file, file: testdata/cc-bg-victim.topo, routing: minhop}
workload: {kind: perftest, test: write_bw, size: 65536, iterations: 100,
  background: true, background_pattern: incast, offered_load: 0.6, warmup_ns: 20000, measure_ns: 200000}
`

// TestCCBackgroundReacts: a perftest's background endpoints answer FECN
// with CNPs and throttle on BECN as the synthetic workloads' endpoints do,
// and the perftest pair, the victim of their congestion, gains.
//
// Without CC, derived as TestCCHCAVictimFlow with the roles swapped. T's
// output at B serves three backlogged inputs (the cable, hosts 4 and 5)
// one packet each: T's link never idles, so the background's accepted
// load (per sending host) is 1/4 (asserted within 0.005); the cable's
// input buffer at B is full of packets for T and drains at 1/3 of a link
// for T; A's output to the cable serves C, 2 and 3 in turn, and C gets
// r_C = (1/3 + r_C)/3 = 1/6 of its link (link_utilization; asserted at
// most 1.05/6: C runs at full rate for the first microseconds, before
// the backlog reaches it).
//
// With CC. The packets for T are marked at T's output, T answers each
// with a CNP, and the four senders' flows to T (and only those: the
// incast has no other) are throttled: background_cc_flows_throttled = 4.
// Four flows fit into T's one link at a quarter each, index 48 of the
// default table; at an index at or below 16 each could send half a link,
// two links into one, T's backlog would stay over the threshold and every
// packet to it would be marked and raise the indexes, so their time
// average must lie above 16 (asserted). A throttled flow leaves T's link
// idle while its index comes down one step per timer period, so the
// background's accepted load falls below the CC-off run's 1/4. The
// cable's buffer at B stops filling with packets for T, and C is no longer
// held to 1/6 (asserted: its link_utilization above 1.1/6 and its bw_gbps
// above the CC-off run's); C's own packets, waiting at A's output to the
// cable with hosts 2 and 3's, are marked too, so its QP is throttled and
// it does not get the whole of what the background leaves.
func TestCCBackgroundReacts(t *testing.T) {
	off := runCC(t, bgVictimConfig)
	on := runCC(t, bgVictimConfig, "cc.enable=true")
	t.Logf("pair off %.1f Gb/s (%.3f of its link) on %.1f (%.3f); background load %.4f → %.4f, index %.1f, %v marks",
		off["bw_gbps"], off["link_utilization"], on["bw_gbps"], on["link_utilization"],
		off["accepted_load"], on["accepted_load"], on["background_cc_ccti_mean"], on["cc_fecn_marked"])
	assert.InDelta(t, 0.25, off["accepted_load"], 0.005, "T's link always busy: 1/4 per sender")
	assert.LessOrEqual(t, off["link_utilization"], 1.05/6, "the HOL bound 1/6")
	assert.NotContains(t, off, "background_cc_flows_throttled")

	assert.Equal(t, 4, on["background_cc_flows_throttled"])
	assert.Greater(t, on["background_cc_ccti_mean"], 16.0)
	assert.Greater(t, on["background_cc_ccti_max"], 16)
	assert.Less(t, on["accepted_load"].(float64), off["accepted_load"].(float64))
	assert.Greater(t, on["link_utilization"], 1.1/6)
	assert.Greater(t, on["bw_gbps"].(float64), off["bw_gbps"].(float64))
	assert.Equal(t, true, on["data_verified"])
	// The background's CNPs: one per FECN that landed at an endpoint (none
	// skipped), each back at its sender by the end unless in flight.
	assert.Positive(t, on["background_cc_becn_received"])
	assert.GreaterOrEqual(t, on["background_cc_fecn_received"], on["background_cc_becn_sent"])
	assert.GreaterOrEqual(t, on["background_cc_becn_sent"], on["background_cc_becn_received"])
	assert.Equal(t, uint64(0), on["background_cc_cnp_skipped"])
	assertMarksAccounted(t, on)
}

// TestCCHCADeterministicAndChecked: the CC run twice gives the same
// metrics, and with the checkers on (lossless, buffers, credits, ordering,
// integrity, wire) the CNPs between HCAs pass as the endpoints' do and the
// run settles.
func TestCCHCADeterministicAndChecked(t *testing.T) {
	a := runCC(t, hcaVictimConfig, "cc.enable=true")
	b := runCC(t, hcaVictimConfig, "cc.enable=true")
	for k, v := range a {
		if k != "wall_s" {
			assert.Equal(t, v, b[k], k)
		}
	}
	m, _ := runPassing(t, []byte(hcaVictimConfig), "cc.enable=true", "workload.iterations=20")
	assert.Positive(t, m["cc_becn_received"])
}

// TestCCHCALowLoadChangesNothing: one write_bw pair across ndr.yaml's fat
// tree (host 0 to host 15, three switches), alone:
// at each switch every packet goes from one input to one output at the
// rate it arrives,
// so at most the packet in flight waits for the output (65 blocks, below
// the 130 threshold) and nothing is marked; with CC on, no QP ever has a
// delay above zero, nothing is gated, and every metric but the cc_ ones
// is the CC-off run's.
func TestCCHCALowLoadChangesNothing(t *testing.T) {
	sets := []string{"sweep={}", "workload.background=false",
		"workload.test=write_bw", "workload.size=65536", "workload.iterations=50"}
	off := runShipped(t, "ndr.yaml", sets...)
	on := runShipped(t, "ndr.yaml", append(sets, "cc.enable=true")...)
	assertCCChangedNothing(t, off, on)
}

// TestCCBackgroundLowLoadChangesNothing: ndr.yaml's write_lat pair with its
// uniform background at 10 % of a link: no output ever has more than two
// packets waiting, nothing is marked, no background flow's delay leaves
// zero, and a background endpoint with CC sends, oldest first, what the
// one source FIFO without CC sends (endpoint_cc.go): every metric but the
// cc_ and background_cc_ ones is the CC-off run's.
func TestCCBackgroundLowLoadChangesNothing(t *testing.T) {
	sets := []string{"sweep={}", "workload.offered_load=0.1", "workload.iterations=100"}
	off := runShipped(t, "ndr.yaml", sets...)
	on := runShipped(t, "ndr.yaml", append(sets, "cc.enable=true")...)
	assert.Equal(t, 0, on["background_cc_flows_throttled"])
	assert.Equal(t, uint64(0), on["background_cc_fecn_received"])
	assertCCChangedNothing(t, off, on)
}

// TestCCHCACollectives: the collectives' HCAs react as perftest's do. An
// all-to-all on one switch sends seven ranks' writes into every output at
// once, each at 1/7 of its link: balanced, so little waits at an output,
// and the test marks at any wait (threshold 0); every marked request is answered
// and every CNP reaches its QP, the data arrive intact, the checkers pass
// with the CNPs on the fabric, and the run is deterministic. A ring
// all-reduce sends each rank's data to one neighbour only: one input per
// output, nothing is marked, and its results are the CC-off run's.
func TestCCHCACollectives(t *testing.T) {
	base := []string{"topology.kind=single-switch", "switch.radix=8", "topology.hosts=8", "switch.vls=1",
		"link.generation=NDR", "hca.profile=cx7", "workload.size=1048576"}
	run := func(sets ...string) map[string]any {
		m, _ := runPassing(t, nil, append(append([]string{}, base...), sets...)...)
		assert.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		return m
	}
	a := run("workload.kind=alltoall", "cc.enable=true", "cc.threshold_blocks=0", "sim.check=true")
	b := run("workload.kind=alltoall", "cc.enable=true", "cc.threshold_blocks=0", "sim.check=true")
	t.Logf("alltoall with CC: %v marked, %v CNPs, busbw %.1f Gb/s", a["cc_fecn_marked"], a["cc_becn_sent"], a["busbw_gbps"])
	assert.Positive(t, a["cc_fecn_received"])
	assert.Equal(t, a["cc_fecn_received"], a["cc_becn_sent"])
	assert.Equal(t, a["cc_becn_sent"], a["cc_becn_received"])
	for k, v := range a {
		if k != "wall_s" {
			assert.Equal(t, v, b[k], k)
		}
	}
	off := run("workload.kind=allreduce", "sim.check=true")
	on := run("workload.kind=allreduce", "sim.check=true", "cc.enable=true")
	assert.Equal(t, uint64(0), on["cc_fecn_marked"])
	for k, v := range off {
		if k != "wall_s" {
			assert.Equal(t, v, on[k], k)
		}
	}
}

// readVictimConfig: testdata/cc-read-victim.topo, two NDR switches A and B
// joined by one cable. Four read_bw clients (64 KiB READs, 100
// iterations; the incast pattern) read from one server S (host 6, on B):
// clients 0, 1, 2 on A, client 3 on B. The background's V (on A) and W
// (on B) send to each other at 0.6 of a link. S's READ responses to
// clients 0 … 2 and W's packets to V share the cable B → A; S's responses
// to client 3 stay on B.
const readVictimConfig = `
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, medium: copper, mtu: 4096}
hca: {profile: cx7}
switch: {radix: 8, vls: 1, vl_buffer_bytes: 16640}
topology: {kind: file, file: testdata/cc-read-victim.topo, routing: minhop}
workload: {kind: perftest, test: read_bw, size: 65536, iterations: 100, pattern: incast, clients: 4,
  background: true, background_pattern: uniform, offered_load: 0.6, warmup_ns: 20000, measure_ns: 200000}
`

// pairBW returns pair i's bandwidth (pair_results, in client order).
func pairBW(m map[string]any, i int) float64 {
	return m["pair_results"].([]any)[i].(map[string]any)["bw_gbps"].(float64)
}

// TestCCHCAReadResponses: READ responses through a congested port are
// marked, the requester answers each with a CNP to the responder's QP,
// and the responder spaces that QP's responses; its other QP's responses
// (client 3's), held back without CC, get through.
//
// Without CC, derived. S's response engine serves one 64 KiB reply (16
// MTU responses) at a time, in the order the READs arrive, which take
// turns among the four clients. B's output to the cable serves its two
// backlogged inputs, S's and W's (W offers 0.6 and gets at most half),
// one packet each in turn: S's responses to clients 0 … 2 leave B at half
// a link, and S's input buffer at B (4 packets) is full of them, so S
// sends them as they leave. A reply to a client on A takes 32 MTU packet
// times S, one to client 3 (which no switch output holds back) 16 S: per
// round of four replies 3 × 32 + 16 = 112 S for 4 × 16 responses, and
// every client, client 3 too, gets 16/112 = 1/7 of a link of READ
// responses: (data rate / 7) × payload / wire bytes of a READ response.
// Asserted within 10 % for each client (the rounds are not exact: the
// buffer at B holds a few A-bound responses into client 3's reply, and
// the replies' order is the READs' arrival order).
//
// With CC. B's output to the cable has more than 130 blocks waiting and
// marks the responses to clients 0 … 2 (cc_fecn_responses); each client
// returns a CNP to S's QP for it, whose CCT index rises and spaces its
// responses (and W's flow is throttled too). A reply whose QP is held
// gives way in S's response queue to client 3's (hca/cc.go), and S's
// buffer at B holds fewer responses for the cable. Were the four flows
// into the cable (S's three QPs and W) held to equal shares, a quarter
// each, S's QPs for A would take 3/4 of S's link and client 3 get at
// least the other 1/4, 7/4 of its CC-off 1/7: asserted above 1.5 times
// its CC-off bandwidth (the shares oscillate). The aggregate rises, since
// S's link no longer idles behind the cable.
func TestCCHCAReadResponses(t *testing.T) {
	l, err := Load([]byte(readVictimConfig), nil)
	require.NoError(t, err)
	lc := l.Config.Link
	resp := ib.Packet{Opcode: ib.RDMAReadResponseMiddle, PayloadLen: lc.MTU}
	share := lc.Timing(lc.LengthM).DataRateBps() / 1e9 / 7 * float64(lc.MTU) / float64(resp.WireBytes())

	off := runCC(t, readVictimConfig)
	on := runCC(t, readVictimConfig, "cc.enable=true")
	t.Logf("1/7 share %.1f Gb/s; off %.1f %.1f %.1f %.1f (aggregate %.1f); on %.1f %.1f %.1f %.1f (%.1f); %v responses marked, index %.1f",
		share, pairBW(off, 0), pairBW(off, 1), pairBW(off, 2), pairBW(off, 3), off["aggregate_bw_gbps"],
		pairBW(on, 0), pairBW(on, 1), pairBW(on, 2), pairBW(on, 3), on["aggregate_bw_gbps"],
		on["cc_fecn_responses"], on["cc_ccti_mean"])
	for i := range 4 {
		assert.InEpsilon(t, share, pairBW(off, i), 0.1, "client %d", i)
	}
	assert.Positive(t, on["cc_fecn_responses"])
	assert.Equal(t, on["cc_fecn_received"], on["cc_becn_sent"])
	assert.Equal(t, on["cc_becn_sent"], on["cc_becn_received"])
	assert.Equal(t, uint64(0), on["cc_cnp_skipped"])
	assert.GreaterOrEqual(t, on["cc_flows_throttled"], 3, "S's QPs for clients 0 … 2")
	assert.Greater(t, pairBW(on, 3), 1.5*pairBW(off, 3))
	assert.Greater(t, on["aggregate_bw_gbps"].(float64), off["aggregate_bw_gbps"].(float64))
	assert.Equal(t, true, on["data_verified"])
	assertMarksAccounted(t, on)

	// The checkers (lossless, ordering per flow, credits, integrity) hold
	// with the responses spaced and a held reply giving way.
	m, _ := runPassing(t, []byte(readVictimConfig), "cc.enable=true", "workload.iterations=20")
	assert.Positive(t, m["cc_fecn_responses"])
}

// TestCCVictimMaskPorts: cc.victim_mask as per-port Victim_Mask bits on
// testdata/cc-victim.topo, whose Switch[0] has hosts on ports 1 … 3, the
// other switch on port 8 and nothing on 4 … 7 (a port without a cable
// keeps its bit clear: it carries nothing).
func TestCCVictimMaskPorts(t *testing.T) {
	topo, err := LoadTopologyFile("testdata/cc-victim.topo", testCable)
	require.NoError(t, err)
	a, ok := topo.Lookup("Fabric.Switch[0]")
	require.True(t, ok)
	const T, F = true, false
	assert.Equal(t, []bool{T, T, T, F, F, F, F, F}, victimMarks(topo, a, cc.VictimHostPorts))
	assert.Equal(t, []bool{F, F, F, F, F, F, F, T}, victimMarks(topo, a, cc.VictimSwitchPorts))
	assert.Equal(t, []bool{F, F, F, F, F, F, F, F}, victimMarks(topo, a, cc.VictimNone))
}

// TestCCHCAVictimMask: the HCA victim scenario (TestCCHCAVictimFlow) with
// cc.victim_mask none against the default all.
//
// Where each switch marks. A's host ports are each fed by one input (the
// cable from B) at no more than a link, so at most one packet waits for
// them, 65 blocks, never over the threshold (130): every mark A sets is at
// its cable port. That port is a victim while the cable's buffer at B is
// full of packets for the server (the HOL derivation in
// TestCCHCAVictimFlow: it moves only as a packet leaves that buffer), so
// with none it withholds marks there (cc_victim_unmarked > 0, all of A's
// but what the server's port at B withholds as a victim of the server's
// own buffer); and it is a root at the instants B has room and its three
// inputs (clients 0, 1 and V) still hold more than 130 blocks for it, so it
// still marks (asserted positive). V's flow is then marked only at those
// root instants, so it is throttled less and gets more of the cable than
// with all (asserted as a direction, with the incast's aggregate at least
// the all run's: the clients on A, no longer marked as victims at A, are
// still marked at B's server port, their root). With all, no switch checks
// and the metric is absent, so results are those of the model before the
// key.
func TestCCHCAVictimMask(t *testing.T) {
	run := func(mask string) (map[string]any, []uint64, []uint64) {
		l, err := Load([]byte(hcaVictimConfig), []string{"cc.enable=true", "cc.victim_mask=" + mask})
		require.NoError(t, err)
		var view *Simulation
		m, err := Run(l, RunOptions{Observe: func(s *Simulation) { view = s }})
		require.NoError(t, err)
		var marked, unmarked []uint64
		for _, sw := range view.Net.Switches {
			u, checked := sw.VictimUnmarked()
			assert.Equal(t, mask != "all", checked, "%s: %s checks victims", mask, sw.Name())
			marked, unmarked = append(marked, sw.FECNMarked()), append(unmarked, u)
		}
		return m, marked, unmarked
	}
	all, allMarked, _ := run("all")
	none, noneMarked, noneUnmarked := run("none")
	t.Logf("all: victim %.3f, incast %.1f Gb/s, marks A %d B %d", victimLoad(all), all["aggregate_bw_gbps"], allMarked[0], allMarked[1])
	t.Logf("none: victim %.3f, incast %.1f Gb/s, marks A %d B %d, unmarked A %d B %d", victimLoad(none), none["aggregate_bw_gbps"],
		noneMarked[0], noneMarked[1], noneUnmarked[0], noneUnmarked[1])
	assert.NotContains(t, all, "cc_victim_unmarked")
	assert.Equal(t, noneUnmarked[0]+noneUnmarked[1], none["cc_victim_unmarked"])
	assert.Positive(t, noneUnmarked[0], "A's cable port withholds its victim marks")
	assert.Greater(t, noneUnmarked[0], noneUnmarked[1], "A's cable port is the victim here")
	assert.Positive(t, noneMarked[0], "A's cable port still marks as a root")
	assert.Less(t, noneMarked[0], allMarked[0])
	assert.Greater(t, victimLoad(none), victimLoad(all))
	assert.GreaterOrEqual(t, none["aggregate_bw_gbps"].(float64), all["aggregate_bw_gbps"].(float64))
	assert.Equal(t, true, none["data_verified"])
	assertMarksAccounted(t, none)
}
