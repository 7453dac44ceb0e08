package fabric

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/verif"
	"github.com/hcasim/hcasim/workload"
)

// pCorrupt is the chance a packet of bytes wire bytes is corrupted at a
// post-FEC bit error rate ber: 1 − (1 − ber)^(8 bytes).
func pCorrupt(ber float64, bytes int) float64 {
	return -math.Expm1(float64(8*bytes) * math.Log1p(-ber))
}

// runLossy runs a design point with the checkers on and requires them to
// pass (the run settled, every end-of-run check applied); it returns the
// metrics and the simulation.
func runLossy(t *testing.T, sets ...string) (map[string]any, *Simulation) {
	t.Helper()
	return runPassing(t, nil, sets...)
}

// runPassing is runLossy for the config yaml (nil: the defaults) with sets
// on top.
func runPassing(t *testing.T, yaml []byte, sets ...string) (map[string]any, *Simulation) {
	t.Helper()
	l, err := Load(yaml, append([]string{"sim.check=true"}, sets...))
	require.NoError(t, err)
	var chk *verif.Checkers
	var view *Simulation
	m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
		view = s
		chk = verif.AttachCheckers(verif.CheckConfig{OnViolation: func(*verif.Violation) { s.Stop() }}, s.Blocks...)
	}})
	require.NoError(t, err)
	require.True(t, view.Settled, "the run settled, so the idle-fabric checks ran")
	chk.Finish(view.Now(), view.Settled)
	require.NoError(t, chk.Err())
	return m, view
}

func num(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	require.Contains(t, m, key)
	switch v := m[key].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	case uint64:
		return float64(v)
	case int64:
		return float64(v)
	}
	require.FailNow(t, fmt.Sprintf("%s is %T", key, m[key]))
	return 0
}

// latency returns the latency_ns summary's field key.
func latency(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	l, ok := m["latency_ns"].(map[string]float64)
	require.True(t, ok, "latency_ns is %T", m["latency_ns"])
	return l[key]
}

// TestLinkErrorsSynthetic: uniform traffic on a radix-8 two-level fat tree
// (32 hosts, 4 per leaf) with every link at BER 1e-6. A 4096-byte SEND ONLY
// packet is 4,122 wire bytes (LRH 8 + BTH 12 + 4096 + ICRC 4 + VCRC 2), so
// each link corrupts it with p = 1 − (1 − 1e-6)^32976 = 3.24 %. A packet to
// one of the 3 other hosts on its leaf crosses 2 links, to the 28 others 4:
// it is lost with q = 1 − (3/31 (1−p)² + 28/31 (1−p)⁴) = 11.9 %. The N
// measured packets are lost independently (each link's draws are its own),
// so the loss count is a sum of Bernoullis with mean N·q and a variance at
// most N·q(1−q) (equal probabilities maximise it): it must lie within 5σ.
// The same seed without errors injects the same packets (injection is
// open-loop), so accepted load falls by the loss fraction, up to the packets
// whose landing moves across an edge of the window: at most those in
// flight at an edge, hosts × load × latency / slot by Little's law, per
// edge. Nothing is lost silently: the checkers pass, credits all return.
func TestLinkErrorsSynthetic(t *testing.T) {
	sets := []string{"topology.kind=fat-tree-2", "switch.radix=8", "workload.kind=uniform", "workload.size=4096",
		"workload.offered_load=0.3", "workload.warmup_ns=2000", "workload.measure_ns=40000"}
	clean, _ := runLossy(t, sets...)
	lossy, view := runLossy(t, append(sets, "link.ber=1e-6")...)

	wire := ib.Packet{Opcode: ib.SendOnly, PayloadLen: 4096}
	require.Equal(t, 4122, wire.WireBytes())
	p := pCorrupt(1e-6, 4122)
	q := 1 - (3.0/31*math.Pow(1-p, 2) + 28.0/31*math.Pow(1-p, 4))
	lost := num(t, lossy, "packets_dropped")
	measured := lost + latency(t, lossy, "count")
	sigma := math.Sqrt(measured * q * (1 - q))
	assert.InDelta(t, measured*q, lost, 5*sigma, "lost %v of %v, expected %.0f ± %.1f", lost, measured, measured*q, sigma)
	assert.Zero(t, num(t, clean, "packets_dropped"))
	assert.NotContains(t, clean, "link_packet_errors", "a lossless run's results keep their keys")

	// Every discard is counted on some link; a measured packet is one of them.
	var discards, fcLost uint64
	for _, port := range view.Ports {
		discards += port.Errors.Packets
		fcLost += port.Errors.FCPackets
	}
	assert.Equal(t, float64(discards), num(t, lossy, "link_packet_errors"))
	assert.GreaterOrEqual(t, float64(discards), lost)
	assert.LessOrEqual(t, num(t, lossy, "link_fc_errors"), float64(fcLost))

	lc := link.Defaults()
	slot := float64(lc.Timing(2).Serialization(4122)) / 1000 // ns: 82.44 at NDR 4x
	inFlight := 32 * 0.3 * latency(t, clean, "mean") / slot
	edge := 2 * inFlight / measured
	ratio := num(t, lossy, "accepted_load") / num(t, clean, "accepted_load")
	assert.InDelta(t, 1-q, ratio, 5*sigma/measured+edge, "accepted load fell to %.4f of the clean run's", ratio)
	t.Logf("p per link %.4f, q per packet %.4f; lost %v of %v (%.4f); accepted %.4f → %.4f (×%.4f); FC packets lost %v",
		p, q, lost, measured, lost/measured, num(t, clean, "accepted_load"), num(t, lossy, "accepted_load"), ratio, num(t, lossy, "link_fc_errors"))
}

// TestLinkErrorsPartitioned: with lossy links a partitioned run still gives
// the serial run's results (every metric but the event count, as
// TestPartitionedMatchesSerial holds lossless runs to): each port draws its
// errors from its own stream, in the order of its own packets.
func TestLinkErrorsPartitioned(t *testing.T) {
	sets := append([]string{"link.ber=1e-6"}, partitionPoints[0].sets...)
	serial := runPoint(t, sets...)
	require.Greater(t, num(t, serial, "link_packet_errors"), 0.0)
	require.Equal(t, true, serial["drain_complete"])
	delete(serial, "events")
	for _, parts := range []string{"2", "3"} {
		par := runPoint(t, append([]string{"sim.partitions=" + parts}, sets...)...)
		delete(par, "events")
		assert.Equal(t, serial, par, "%s partitions", parts)
	}
	// The checkers pass on a partitioned lossy run.
	runLossy(t, append([]string{"sim.partitions=2"}, sets...)...)
}

// TestLinkErrorsWriteBW: ib_write_bw of 16 KiB messages (4 packets: WRITE
// FIRST 4,138 wire bytes with its RETH, MIDDLE and LAST 4,122), tx_depth 4,
// back to back at NDR, every link at BER 1e-6: a data packet is corrupted
// with p ≈ 3.24 %. RC recovers every loss (sequence NAK or retry timeout,
// go-back-N), so the test completes with its data verified, and the run
// counts its retries.
//
// The loss count: of the n data packets host 0 sent (retransmissions
// included), host 1's port discarded a binomial share, between n·p(4122)
// and n·p(4138) in mean, σ ≤ √(n·p(1−p)).
//
// The goodput: without errors the test is window-bound: tx_depth × 16 KiB
// in flight, so by Little's law each message waits a round trip
// RTT₀ = 4 × 16384 × 8 / bw₀. With errors the test takes T ≥ T₀ (a loss
// never speeds it up) and T ≥ timeouts × T_o (each timeout is T_o without
// progress, and the timer restarts after it), T_o = 4.096 µs × 2^2; and
// each rewind costs the window at most one more round trip, a timeout T_o
// on top: T ≤ T₀ + (retries − timeouts) × RTT₀ + timeouts × (T_o + RTT₀).
// The same test bounds bw = bytes / T on both sides.
func TestLinkErrorsWriteBW(t *testing.T) {
	sets := []string{"topology.kind=back-to-back", "link.generation=NDR", "switch.vls=1", "hca.profile=cx7",
		"workload.kind=perftest", "workload.test=write_bw", "workload.size=16384", "workload.tx_depth=4",
		"workload.iterations=2000", "hca.retry_timeout=2"}
	clean, _ := runLossy(t, sets...)
	lossy, view := runLossy(t, append(sets, "link.ber=1e-6")...)
	assert.Equal(t, true, lossy["data_verified"])
	assert.Zero(t, num(t, clean, "retries"))
	retries, timeouts := num(t, lossy, "retries"), num(t, lossy, "timeouts")
	assert.Greater(t, retries, 0.0)

	var host0, host1 = view.Ports[0], view.Ports[1]
	require.Equal(t, "Fabric.Host[0].HCA.Port[1]", host0.Name)
	n := float64(host0.Stats().DataPackets)
	k := float64(host1.Errors.Packets)
	lo, hi := pCorrupt(1e-6, 4122), pCorrupt(1e-6, 4138)
	sigma := math.Sqrt(n * hi * (1 - lo))
	assert.GreaterOrEqual(t, k, n*lo-5*sigma, "%v of %v data packets lost", k, n)
	assert.LessOrEqual(t, k, n*hi+5*sigma, "%v of %v data packets lost", k, n)
	assert.Equal(t, float64(host0.Errors.Packets+host1.Errors.Packets), num(t, lossy, "link_packet_errors"))

	bw0, bw := num(t, clean, "bw_gbps"), num(t, lossy, "bw_gbps")
	bits := 2000 * 16384 * 8.0
	t0 := bits / bw0 // ns
	rtt0 := 4 * 16384 * 8 / bw0
	to := 4096 * 4.0 // ns
	tMax := t0 + (retries-timeouts)*rtt0 + timeouts*(to+rtt0)
	tMin := max(t0, timeouts*to)
	assert.LessOrEqual(t, bw, bw0, "losses never speed the test up")
	assert.GreaterOrEqual(t, bw, bits/tMax*(1-1e-9), "goodput above its bound")
	assert.LessOrEqual(t, bw, bits/tMin*(1+1e-9))
	t.Logf("p %.4f: %v of %v data packets lost; retries %v, timeouts %v; bw %.1f → %.1f Gb/s (bounds %.1f … %.1f)",
		lo, k, n, retries, timeouts, bw0, bw, bits/tMax, bits/tMin)
}

// TestSilentDropCaughtOnLossyLinks: with link.ber > 0, or link.pre_fec_ber
// (failed codewords corrupt packets in bursts), the checkers accept the
// losses links announce and nothing else: a switch that loses a WRITE
// packet without a drop (TestCheckersCatchInjectedFaults' "drop at a
// switch") is still reported, at host 15, as a gap at that packet's PSN.
func TestSilentDropCaughtOnLossyLinks(t *testing.T) {
	for _, rate := range []string{"link.ber=1e-6", "link.pre_fec_ber=1.3e-3"} {
		t.Run(rate, func(t *testing.T) {
			yaml, ok := configs.Lookup("ndr.yaml")
			require.True(t, ok)
			l, err := Load(yaml, []string{"sweep={}", "workload.test=write_bw", "workload.size=8192",
				"workload.iterations=10", "sim.check=true", rate})
			require.NoError(t, err)
			var chk *verif.Checkers
			var view *Simulation
			var psn uint32
			tap := &faultTap{pick: isWrite, act: func(p *link.Port, pkt *ib.Packet, _, _ ib.PS) bool {
				psn = pkt.PSN
				p.Release(int(pkt.VL), pkt.Credits())
				return true
			}}
			_, err = Run(l, RunOptions{Observe: func(s *Simulation) {
				view = s
				chk = verif.NewCheckers(verif.CheckConfig{OnViolation: func(*verif.Violation) { s.Stop() }})
				verif.AttachHook(chk, s.Blocks...)
				tapPort(t, s, "Fabric.Leaf[0].Port[0]", tap)
			}})
			if chk.Err() == nil {
				require.NoError(t, err)
			}
			chk.Finish(view.Now(), view.Settled)
			require.True(t, tap.fired)
			require.Error(t, chk.Err(), "a silent drop passed --check on lossy links")
			v := chk.Violations()[0]
			assert.Equal(t, verif.InvOrdering, v.Invariant, "%v", v)
			assert.Equal(t, "Fabric.Host[15].HCA", v.Path)
			assert.Contains(t, v.Detail, fmt.Sprintf("expected %d", psn))
		})
	}
}

// TestBERValidated: link.ber outside 0 … 1e-4 is one line naming the key,
// the value and the range.
func TestBERValidated(t *testing.T) {
	for _, v := range []string{"-1e-9", "0.5", "1e-3"} {
		_, err := Load(nil, []string{"link.ber=" + v})
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "link.ber: ")
		assert.Contains(t, err.Error(), " is out of range (0 for error-free links, up to 0.0001: the post-FEC bit error rate)")
		assert.NotContains(t, err.Error(), "\n")
	}
	_, err := Load(nil, []string{"link.ber=1e-4"})
	assert.NoError(t, err)
}

// TestCableBER: a topology file gives one cable its own bit error rate.
// Four hosts on one switch, uniform traffic of 4 KiB packets at 30 % for
// 20 µs: each host sends about 0.3 × 20000 / 82.44 ≈ 73 packets, and at
// BER 1e-5 a 4,122-byte packet is corrupted with p = 1 − (1 − 1e-5)^32976
// ≈ 28 % per wire, so a lossy wire that carries traffic loses some with
// certainty for practical purposes (all 73 survive with 0.72^73 ≈ 4e-11).
// Discards happen only at the receiving ends of the lossy cables: with
// link.ber 0 and ber=1e-5 on Host[2]'s cable, only Host[2].Port[1] and
// the switch's port 3; with link.ber 1e-5 and ber=0 on Host[3]'s cable,
// everywhere but Host[3].Port[1] and the switch's port 4.
func TestCableBER(t *testing.T) {
	src := func(c2, c3 string) string {
		return "switch Fabric.Switch[0] 4\n" +
			"host Fabric.Host[0]\nhost Fabric.Host[1]\nhost Fabric.Host[2]\nhost Fabric.Host[3]\n" +
			"cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1]\n" +
			"cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2]\n" +
			"cable Fabric.Host[2].Port[1] Fabric.Switch[0].Port[3] 2m " + c2 + "\n" +
			"cable Fabric.Host[3].Port[1] Fabric.Switch[0].Port[4] " + c3 + "\n"
	}
	run := func(topo string, sets ...string) map[string]uint64 {
		path := filepath.Join(t.TempDir(), "t.topo")
		require.NoError(t, os.WriteFile(path, []byte(topo), 0o644))
		_, view := runLossy(t, append([]string{"topology.kind=file", "topology.file=" + path, "switch.radix=4",
			"workload.kind=uniform", "workload.size=4096", "workload.offered_load=0.3",
			"workload.warmup_ns=1000", "workload.measure_ns=20000"}, sets...)...)
		got := map[string]uint64{}
		for _, p := range view.Ports {
			got[p.Name] = p.Errors.Packets
		}
		return got
	}
	// switchasic numbers a switch's ports from 0: the file's Port[3] is the
	// model's Fabric.Switch[0].Port[2] (docs/fabric.md).
	bad := map[string]bool{"Fabric.Host[2].Port[1]": true, "Fabric.Switch[0].Port[2]": true}
	for name, n := range run(src("ber=1e-5", "")) {
		if bad[name] {
			assert.Positive(t, n, name)
		} else {
			assert.Zero(t, n, name)
		}
	}
	good := map[string]bool{"Fabric.Host[3].Port[1]": true, "Fabric.Switch[0].Port[3]": true}
	for name, n := range run(src("copper", "ber=0"), "link.ber=1e-5") {
		if good[name] {
			assert.Zero(t, n, name)
		} else {
			assert.Positive(t, n, name)
		}
	}

	// FormatTopology writes the rate back, and the file reads the same.
	topo, err := ParseTopology(strings.NewReader(src("ber=1e-5", "ber=0")), "t.topo", testCable)
	require.NoError(t, err)
	assert.Equal(t, Cable{A: PortRef{3, 1}, B: PortRef{0, 3}, LengthM: 2, Medium: testCable.Medium, BER: 1e-5, HasBER: true}, topo.Cables[2])
	assert.Equal(t, Cable{A: PortRef{4, 1}, B: PortRef{0, 4}, LengthM: testCable.LengthM, Medium: testCable.Medium, HasBER: true}, topo.Cables[3])
	assert.False(t, topo.Cables[0].HasBER)
	var buf bytes.Buffer
	require.NoError(t, FormatTopology(&buf, topo))
	again, err := ParseTopology(&buf, "again.topo", testCable)
	require.NoError(t, err)
	assert.Equal(t, topo.Cables, again.Cables)
}

// TestTimeLimitOnLossyLinksSaysWhy: a run that stops at sim.max_time_ns on
// lossy links says what the links lost and how its transport recovers, on
// the one line the user sees; the bare "did not finish (0 of 2000 messages
// completed)" read as a model that hung.
//
//   - UD send_lat of 4 KiB back to back at BER 1e-5: each
//     4,130-byte packet (4,096 payload + LRH 8, BTH 12, DETH 8, ICRC 4,
//     VCRC 2; no GRH) is lost with p = 1 − (1 − 1e-5)^33040 ≈ 28 %, so the first few of the
//     2,000 ping-pongs lose one and, UD never resending, the pong it waits
//     for never comes.
//   - RC write_bw of 64 KiB at BER 1e-6 with perftest's retry_timeout 14
//     (4.096 µs × 2^14 = 67.108864 ms): a loss during a go-back-N retry
//     waits for the timer (docs/hca.md), and 300 messages of 16 packets
//     (p ≈ 3.3 % each) meet several; a 10 ms limit stops the run first.
func TestTimeLimitOnLossyLinksSaysWhy(t *testing.T) {
	base := []string{"topology.kind=back-to-back", "link.generation=EDR", "hca.profile=cx5", "workload.kind=perftest"}
	for _, tc := range []struct {
		name string
		sets []string
		how  string
	}{
		{"UD send_lat", []string{"link.ber=1e-5", "workload.test=send_lat", "workload.connection=UD", "workload.size=4096", "sim.max_time_ns=1e6"},
			"UD never resends a lost datagram, so a test that waits for one cannot finish"},
		{"RC write_bw", []string{"link.ber=1e-6", "workload.test=write_bw", "workload.size=65536", "workload.iterations=300", "sim.max_time_ns=1e7"},
			"RC resends a packet no sequence NAK reports lost only when its retry timer fires (hca.retry_timeout 14: 67.108864ms), and the credits a discard took come back with the sender's next flow-control packet (within link.fc_refresh_ns, 6000 ns)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(nil, append(base, tc.sets...))
			require.NoError(t, err)
			_, err = Run(l, RunOptions{})
			var tl *workload.TimeLimitError
			require.ErrorAs(t, err, &tl)
			msg := err.Error()
			assert.NotContains(t, msg, "\n")
			m := regexp.MustCompile(`; the links discarded (\d+) data and (\d+) flow-control packets \(link\.ber ([0-9e.-]+)\): (.*) \(the sim\.max_time_ns limit`).FindStringSubmatch(msg)
			require.NotNil(t, m, msg)
			data, _ := strconv.Atoi(m[1])
			assert.Positive(t, data, "a data packet was lost: that is why the run could not finish")
			assert.Equal(t, tc.how, m[4])
		})
	}
	// The same runs on error-free links finish: the clause is about losses.
	l, err := Load(nil, append(base, "workload.test=send_lat", "workload.connection=UD", "workload.size=4096", "sim.max_time_ns=1e7"))
	require.NoError(t, err)
	_, err = Run(l, RunOptions{})
	require.NoError(t, err)
}

// TestUDSendBWOnLossyLinksReportsTheSendersRate: UD send_bw of 4 KiB, EDR
// back to back, 2,000 datagrams, at BER 1e-6 and on clean links. perftest
// prints the client's figure, size × iterations / (first post → last send
// completion) (perftest_parameters.c print_report_bw; run_iter_bw counts
// send completions), and a UD send completes when its packet leaves the
// HCA: what the link loses after that cannot move it, so bw_gbps is the
// clean run's to the bit (while no flow-control packet is lost: a lost one
// holds credits until the next, link_fc_errors 0 here). perftest's server
// reports no rate under loss: run_iter_bw_server waits for every one of
// the iterations, and its check_alive watchdog gives up after two 60 s
// alarms without a message, printing only how many it received
// (perftest_resources.c). That count is the datagrams sent less those the
// link discarded: each 4,130 wire bytes (LRH 8 + BTH 12 + DETH 8 + 4,096 +
// ICRC 4 + VCRC 2) is lost with p = 1 − (1 − 10⁻⁶)^(8·4130) ≈ 0.0325, so
// about 65 ± 5σ of 2,000.
func TestUDSendBWOnLossyLinksReportsTheSendersRate(t *testing.T) {
	const iters = 2000
	sets := []string{"topology.kind=back-to-back", "link.generation=EDR", "switch.vls=1", "hca.profile=cx5",
		"workload.kind=perftest", "workload.test=send_bw", "workload.connection=UD", "workload.size=4096",
		fmt.Sprintf("workload.iterations=%d", iters)}
	clean, _ := runLossy(t, sets...)
	lossy, view := runLossy(t, append(sets, "link.ber=1e-6")...)
	assert.Equal(t, true, lossy["data_verified"])
	assert.Zero(t, num(t, lossy, "link_fc_errors"), "the premise: no credits held by a lost FC packet")
	assert.Equal(t, num(t, clean, "bw_gbps"), num(t, lossy, "bw_gbps"), "the sender's rate, as perftest's client prints it")
	assert.Equal(t, num(t, clean, "msg_rate_mpps"), num(t, lossy, "msg_rate_mpps"))

	host0, host1 := view.Ports[0], view.Ports[1]
	require.Equal(t, "Fabric.Host[0].HCA.Port[1]", host0.Name)
	require.Equal(t, uint64(iters), host0.Stats().DataPackets, "one packet per datagram, nothing else sent")
	require.Zero(t, host1.Stats().DataPackets, "UD: the server sends no ACK")
	lost := float64(host1.Errors.Packets)
	assert.Equal(t, lost, num(t, lossy, "link_packet_errors"))
	p := pCorrupt(1e-6, 4130)
	sigma := math.Sqrt(iters * p * (1 - p))
	assert.InDelta(t, iters*p, lost, 5*sigma, "datagrams lost")
	var server *hca.Device
	for _, b := range view.Blocks {
		if d, ok := b.(*hca.Device); ok && d.Port == host1 {
			server = d
		}
	}
	require.NotNil(t, server)
	// What perftest's server would have counted (its "Total Received"):
	// every datagram the link did not discard, none dropped for want of a
	// receive WQE.
	assert.Equal(t, int64(iters)-int64(lost), server.Counters.RxPackets)
	assert.Zero(t, num(t, lossy, "host1_ud_drops"))
	t.Logf("%v of %d datagrams lost (expected %.1f ± %.1f); bw %.4f Gb/s both", lost, iters, iters*p, sigma, num(t, lossy, "bw_gbps"))
}
