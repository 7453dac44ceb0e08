package fabric

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/verif"
)

// ackSwallower is the fault: a port owner in front of an HCA that keeps the
// first ACK arriving and never hands it on, so the HCA never frees its
// receive buffer blocks and the peer's credit for them never comes back.
// The run completes anyway: a later ACK acknowledges the same requests (or,
// where none comes, as in an all-to-all's one message per QP, the request
// is sent again after the retry timeout and acknowledged again).
type ackSwallower struct {
	link.Owner
	kept *ib.Packet
}

// PacketArrived implements link.Owner.
func (a *ackSwallower) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	if a.kept == nil && pkt.Opcode == ib.Acknowledge {
		a.kept = pkt
		return
	}
	a.Owner.PacketArrived(p, pkt, head, tail)
}

// settlePoints are HCA runs with checkers: a perftest back to back, one on
// a fat tree with background traffic (configs/ndr.yaml), an all-reduce and
// an all-to-all on that fat tree.
var settlePoints = []struct {
	name, config string
	sets         []string
}{
	{"perftest-b2b", "edr.yaml", []string{"workload.iterations=20"}},
	{"perftest-background", "ndr.yaml", []string{"sweep={}", "workload.test=write_bw", "workload.size=65536",
		"workload.iterations=20", "workload.offered_load=0.8"}},
	{"allreduce", "ndr.yaml", []string{"sweep={}", "workload.kind=allreduce", "workload.size=65536"}},
	{"alltoall", "ndr.yaml", []string{"sweep={}", "workload.kind=alltoall", "workload.size=65536"}},
}

// runSettled runs a settle point with the checkers on (collecting every
// violation) and, with fault, host 0's HCA behind an ackSwallower.
func runSettled(t *testing.T, config string, sets []string, fault bool) (*Simulation, *verif.Checkers, *ackSwallower) {
	t.Helper()
	yaml, ok := configs.Lookup(config)
	require.True(t, ok)
	l, err := Load(yaml, append(sets, "sim.check=true"))
	require.NoError(t, err)
	var (
		view *Simulation
		chk  *verif.Checkers
		sw   *ackSwallower
	)
	_, err = Run(l, RunOptions{Observe: func(s *Simulation) {
		view = s
		chk = verif.AttachCheckers(verif.CheckConfig{}, s.Blocks...)
		if !fault {
			return
		}
		for _, p := range s.Ports {
			switch p.Owner.(type) {
			case *hca.Device, HCAHost:
				if strings.Contains(p.Name, "Host[0].") {
					sw = &ackSwallower{Owner: p.Owner}
					p.Owner = sw
				}
			}
		}
		require.NotNil(t, sw, "host 0's HCA port")
	}})
	require.NoError(t, err)
	chk.Finish(view.Now(), view.Settled)
	return view, chk, sw
}

// TestHCARunsSettleForTheCheckers: a checked perftest or collective runs on
// after its last completion until the fabric is idle, so the checkers' end
// checks apply. Run clean, they find nothing; with an HCA that loses one
// ACK without freeing its buffer, they find the credit that never came
// back. Before HCA runs settled, they ended with Settled false and the
// leak passed --check.
func TestHCARunsSettleForTheCheckers(t *testing.T) {
	for _, pt := range settlePoints {
		t.Run(pt.name, func(t *testing.T) {
			view, chk, _ := runSettled(t, pt.config, pt.sets, false)
			require.True(t, view.Settled, "the run settled")
			assert.NoError(t, chk.Err())

			view, chk, sw := runSettled(t, pt.config, pt.sets, true)
			require.True(t, view.Settled, "the run settled")
			require.NotNil(t, sw.kept, "an ACK was kept")
			var leaks []string
			for _, v := range chk.Violations() {
				if v.Invariant == verif.InvCredit && strings.Contains(v.Detail, "leaked") {
					leaks = append(leaks, v.Path)
				}
			}
			// The kept ACK's blocks are the credit its sender never gets
			// back: one leak, on the link into host 0.
			require.Len(t, leaks, 1, "violations: %v", chk.Violations())
			assert.Contains(t, leaks[0], "vl=0")
		})
	}
}

// TestSettleWaitsForRetransmissions: a workload can end with data still
// moving. Over 3 km of copper (3,000 × 4.276 ns = 12.8 µs each way, a
// 25.7 µs round trip) a retry timer of 4.096 µs × 2² = 16.4 µs fires before
// an ACK can come back, so the HCA resends requests that arrive anyway; at
// the last completion some of those needless copies, and the duplicate ACKs
// they draw, are still on the wires, holding credits a single settle
// window (one FC refresh, 6 µs, plus a round trip) did not wait for — the
// checkers reported credits leaked. The run now settles until a whole
// window passes with no data packet sent, and nothing leaks.
func TestSettleWaitsForRetransmissions(t *testing.T) {
	sets := []string{"workload.iterations=20", "link.length_m=3000", "hca.retry_timeout=2",
		"workload.test=write_bw", "workload.size=4096"}
	view, chk, _ := runSettled(t, "edr.yaml", sets, false)
	require.True(t, view.Settled, "the run settled")
	assert.NoError(t, chk.Err())
}

// TestSettleWaitsForPostedWrites: UD send_bw of 1-byte messages on two QPs
// over 3 km of copper, with a one-entry MTT cache at the server: the two
// QPs' receive buffers evict each other's page, so every datagram's
// translation read misses and waits behind the previous datagram's posted
// write (a read does not pass posted writes), about 0.57 µs each, 100 in
// a row. The client's test ends when its last send completes, with the
// datagrams still on the 12.8 µs cable; the server writes them for about
// 17 µs after they land, and returns their credits as they go. One settle
// window (an FC refresh plus a round trip, ≈30 µs) with no data packet
// sent passed while the server was still writing, and the checkers found
// 14 to 16 credits "leaked" on a cable they were still crossing (found by
// the CLI explorer). A window in which an HCA had posted writes booked is
// not quiet now (Simulation.hostsBusyAfter).
func TestSettleWaitsForPostedWrites(t *testing.T) {
	sets := []string{"workload.test=send_bw", "workload.connection=UD", "workload.qps=2", "workload.size=1",
		"workload.iterations=50", "link.length_m=3000", "hca.mtt_cache_entries=1"}
	view, chk, _ := runSettled(t, "edr.yaml", sets, false)
	require.True(t, view.Settled, "the run settled")
	assert.NoError(t, chk.Err())
}

// TestMessageLongerThanRetryTimeoutCompletes: perftest's 64 KiB write_bw,
// send_bw and read_bw over 3 km of copper with retry_timeout 1 (4.096 µs ×
// 2¹ = 8.192 µs, under the 25.7 µs round trip and under the time the
// credit-limited link takes to carry one message). The requester used to
// resend the oldest message whole at every timeout (a READ: ask for all of
// it again), never got past its first 7 packets (responses), and the run
// ended at sim.max_time_ns with 0 of 4 messages completed. Now the
// duplicates draw ACKs of the last PSN the responder has, each timeout
// resends a WRITE or SEND from its first unacknowledged PSN and asks a
// READ only for the responses it lacks, and the run completes: data
// verified, checkers clean. A WRITE takes about 7 round trips (hca
// TestShortTimerLongCableCompletes derives them), so 4 messages take well
// under 1 ms.
func TestMessageLongerThanRetryTimeoutCompletes(t *testing.T) {
	for _, test := range []string{"write_bw", "send_bw", "read_bw"} {
		t.Run(test, func(t *testing.T) {
			yaml, ok := configs.Lookup("edr.yaml")
			require.True(t, ok)
			l, err := Load(yaml, []string{"workload.test=" + test, "workload.size=65536", "workload.iterations=4",
				"link.length_m=3000", "hca.retry_timeout=1", "sim.check=true"})
			require.NoError(t, err)
			var (
				view *Simulation
				chk  *verif.Checkers
			)
			m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
				view = s
				chk = verif.AttachCheckers(verif.CheckConfig{}, s.Blocks...)
			}})
			require.NoError(t, err)
			chk.Finish(view.Now(), view.Settled)
			assert.NoError(t, chk.Err())
			assert.Equal(t, true, m["data_verified"])
			assert.Positive(t, m["timeouts"])
			assert.Less(t, m["sim_time_ns"], 1e6)
		})
	}
}

// TestDrainCapDoesNotCutTheSettle: a checked synthetic or stream run that
// drains before workload.drain_ns is up settles for the checkers, and the
// settle — not the drain's limit — ends it. The settle window is at least
// one refresh period, fc_refresh_ns 6 µs (settleTime: R + 2(L + S) + 1 µs;
// on lossy links one R more, and as many windows as it takes), while the
// drain limit here is 2 µs after the window: light traffic (10 % load)
// lands within a packet time or two of the window's end, so the settle
// starts well inside the limit and, with the limit still armed, was
// stopped by it — the run ended unsettled and the idle-fabric checks
// (nothing lost, every credit back) were skipped without a word.
func TestDrainCapDoesNotCutTheSettle(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"synthetic", []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=4", "workload.kind=uniform",
			"workload.offered_load=0.1", "workload.warmup_ns=1000", "workload.measure_ns=5000", "workload.drain_ns=2000"}},
		{"synthetic partitioned", []string{"topology.kind=fat-tree-2", "topology.hosts=16", "switch.radix=8", "workload.kind=uniform",
			"workload.offered_load=0.1", "workload.warmup_ns=1000", "workload.measure_ns=5000", "workload.drain_ns=2000", "sim.partitions=2"}},
		{"synthetic lossy", []string{"topology.kind=single-switch", "topology.hosts=4", "switch.radix=4", "workload.kind=uniform",
			"workload.offered_load=0.1", "workload.warmup_ns=1000", "workload.measure_ns=5000", "workload.drain_ns=2000", "link.ber=1e-6"}},
		{"stream", []string{"workload.kind=stream", "workload.saturate=true", "workload.warmup_ns=1000", "workload.measure_ns=5000",
			"workload.drain_ns=2000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(nil, append(tc.sets, "sim.check=true"))
			require.NoError(t, err)
			var view *Simulation
			var chk *verif.Checkers
			m, err := Run(l, RunOptions{Observe: func(s *Simulation) {
				view = s
				chk = verif.AttachCheckers(verif.CheckConfig{OnViolation: func(*verif.Violation) { s.Stop() }}, s.Blocks...)
			}})
			require.NoError(t, err)
			require.Equal(t, true, m["drain_complete"], "the run drained inside its limit")
			window := settleTime(view.Ports)
			require.Greater(t, window, ib.FromNanoseconds(2000), "a settle window outlasts the drain limit")
			assert.True(t, view.Settled, "the run settled, so the idle-fabric checks ran")
			chk.Finish(view.Now(), view.Settled)
			require.NoError(t, chk.Err())
		})
	}
}
