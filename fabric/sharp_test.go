package fabric

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/verif"
)

// sharpSets is a two-level NDR fat tree of radix 4 (8 hosts on 4 leaves,
// 2 spines), cx7 hosts, FIFO inputs (the result's multicast replication
// needs them), one data VL, the in-network all-reduce.
var sharpSets = []string{"topology.kind=fat-tree-2", "switch.radix=4", "switch.vls=1", "switch.queueing=fifo",
	"switch.vl_buffer_bytes=65536", "link.generation=NDR", "hca.profile=cx7",
	"workload.kind=allreduce", "workload.algorithm=sharp"}

// sharpChecked runs sets with the checkers (lossless, credits, routes,
// multicast replication) and the trace recorded; mutate, if set, may
// change the built fabric first.
func sharpChecked(t *testing.T, sets []string, mutate func(*Simulation)) recordedRun {
	t.Helper()
	return runRecorded(t, append(append([]string{}, sharpSets...), sets...), func(s *Simulation) verif.CheckConfig {
		return verif.CheckConfig{Multicast: s.Net.MulticastMembers(), Routes: s.Net}
	}, mutate)
}

// traceAt returns the time (ps) of the first trace line at path of kind
// whose fields include field, failing when there is none.
func traceAt(t *testing.T, trace, path, kind, field string) ib.PS {
	t.Helper()
	for _, line := range strings.Split(trace, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[1] == path && f[2] == kind && strings.Contains(line, " "+field) {
			v, err := strconv.ParseInt(f[0], 10, 64)
			require.NoError(t, err)
			return ib.PS(v)
		}
	}
	t.Fatalf("no %s %s with %q in the trace", path, kind, field)
	return 0
}

// TestSharpZeroLoadLatencyHopByHop: one 8-byte all-reduce over the 8
// ranks is one fragment each. Every fragment is a UD SEND with immediate
// and a GRH: LRH 8 + GRH 40 + BTH 12 + DETH 8 + ImmDt 4 + payload 8 +
// ICRC 4 + VCRC 2 = 86 bytes, ser = 86 · 8 / 400 Gb/s = 1.72 ns at NDR;
// each cable adds L = link FEC + propagation latency. With the switch
// clock c (1 ns), route, allocation and crossbar stages R, A, X cycles
// and a 64-byte datapath (xfer = ⌈86/64⌉ = 2 cycles), a packet granted at
// round t starts on its output wire at t + A + max(X, xfer + X − ser)
// (switchasic doGrant: the wire start waits for the crossbar's tail less
// one serialization). Hop by hop from t0, the hosts' first bit out (all
// send at once; trace):
//
//	leaf AN takes the fragments:  a1 = ⌈t0 + L + ser⌉ (store and forward into the ALU)
//	leaf sends the reduced one:   s1 = a1 + R + A + max(X, xfer+X−ser)  (ALU 0 ps/byte, 0 ns)
//	spine (root) AN:              a2 = ⌈s1 + L + ser⌉
//	spine multicasts the result:  s2 = a2 + R + A + max(X, xfer+X−ser)
//	leaf copies it (cut-through): s3 = ⌈s2 + L⌉ + R + A + max(X, xfer+X−ser)
//
// and the result's tail is at each host at s3 + L + ser. The hosts' own
// parts are bounded below by their knobs: before t0 a rank posts (post),
// rings the doorbell (MMIO) and the HCA reads the payload (a PCIe read);
// after the tail it writes the payload and the CQE (posted writes) and
// the rank polls (poll).
func TestSharpZeroLoadLatencyHopByHop(t *testing.T) {
	r := sharpChecked(t, []string{"workload.size=8"}, nil)
	require.NoError(t, r.Err)
	assert.Equal(t, true, r.M["data_verified"], "%v", r.M["data_errors"])
	l, err := Load(nil, append(append([]string{}, sharpSets...), "workload.size=8"))
	require.NoError(t, err)
	cfg := &l.Config
	sc := cfg.Switch
	c := ib.PS(1e6 / sc.CoreClockMHz)
	ceil := func(x ib.PS) ib.PS { return (x + c - 1) / c * c }
	tm := cfg.Link.Timing(cfg.Link.LengthM)
	ser := tm.Serialization(86)
	L := tm.Latency()
	xfer := ib.PS((86+sc.DatapathBytes-1)/sc.DatapathBytes) * c
	R, A, X := ib.PS(sc.RouteCycles)*c, ib.PS(sc.AllocCycles)*c, ib.PS(sc.XbarCycles)*c
	out := R + A + max(X, xfer+X-ser)

	t0 := traceAt(t, r.Trace, "Fabric.Host[0].Port[1]", "tx_start", "seq=1")
	for h := 1; h < 8; h++ {
		require.Equal(t, t0, traceAt(t, r.Trace, "Fabric.Host["+strconv.Itoa(h)+"].Port[1]", "tx_start", "dlid="), "host %d sends with host 0", h)
	}
	a1 := ceil(t0 + L + ser)
	s1 := a1 + out
	a2 := ceil(s1 + L + ser)
	s2 := a2 + out
	s3 := ceil(s2+L) + out
	t.Logf("t0 %d  leaf AN %d  leaf out %d  root AN %d  root out %d  leaf down %d  (L %d, ser %d)", t0, a1, s1, a2, s2, s3, L, ser)
	assert.Equal(t, a1, traceAt(t, r.Trace, "Fabric.Leaf[0].AN", "inject", "dlid="))
	assert.Equal(t, s1, traceAt(t, r.Trace, "Fabric.Leaf[0].Port[2]", "tx_start", "dlid="))
	assert.Equal(t, a2, traceAt(t, r.Trace, "Fabric.Spine[0].AN", "inject", "dlid="))
	assert.Equal(t, s2, traceAt(t, r.Trace, "Fabric.Spine[0].Port[0]", "tx_start", "dlid=49152"))
	for h := 0; h < 2; h++ {
		assert.Equal(t, s3, traceAt(t, r.Trace, "Fabric.Leaf[0].Port["+strconv.Itoa(h)+"]", "tx_start", "dlid=49152"))
	}
	fabric := s3 + L + ser - t0
	hc := cfg.HCA
	hostNs := hc.Host.PostNS + hc.PCIe.MMIOLatencyNS + hc.PCIe.ReadLatencyNS + 2*hc.PCIe.WriteLatencyNS + hc.Host.PollNS
	got := r.M["time_us"].(float64) * 1000
	t.Logf("time %.3f ns: fabric %.3f ns, host knobs at least %.1f ns", got, fabric.Nanoseconds(), hostNs)
	assert.Greater(t, got, fabric.Nanoseconds()+hostNs)
	// Against the tree, NCCL's latency algorithm: 2·log2(8) = 6 messages
	// deep on this fabric, each a whole post-to-poll; SHARP is one trip.
	_, tree := runCollectiveSets(t, append(append([]string{}, sharpSets[:len(sharpSets)-1]...), "workload.algorithm=tree", "workload.size=8")...)
	assert.Less(t, got, tree["time_us"].(float64)*1000/2)
}

// TestSharpBusBWBoundedByTheHostLinks: in SHARP each rank sends its S
// bytes once (up to its leaf) and receives S once (the result), so its
// host link carries S each way and nothing else; the tree's links carry
// one reduced stream each, no more. With 4096-byte fragments of 86 − 8 =
// 78 header bytes each (TestSharpZeroLoadLatencyHopByHop), 8 MiB is 2048
// fragments of 4174 wire bytes: t ≥ 2048 · 4174 · 8 / 400 Gb/s =
// 170.967 µs, algbw ≤ 400 · 4096/4174 = 392.5 Gb/s, and busbw = algbw ·
// 2(n−1)/n (nccl-tests' all-reduce factor, kept so the algorithms
// compare) ≤ 686.9 Gb/s: above the link rate, as SHARP moves each byte
// across a host link twice where the ring moves it 2(n−1)/n times per
// direction. The window (64 OSTs of 4 KiB, 262 KiB) covers a fragment's
// round trip (a 4 KiB all-reduce's time, measured here), so the links stay
// busy from the first fragment out to the last result in. Besides the
// fragments, a host's uplink carries the flow-control packets that return
// the credits of the results coming down the other way, at most one a
// received packet (6 bytes, 0.12 ns; ib-facts §2). So t ≤ 170.967 µs +
// 2048 · 0.12 ns + one fragment's all-reduce (pipeline fill and drain).
func TestSharpBusBWBoundedByTheHostLinks(t *testing.T) {
	_, one := runCollectiveSets(t, append(append([]string{}, sharpSets...), "workload.size=4096")...)
	require.Equal(t, true, one["data_verified"], "%v", one["data_errors"])
	cfg, m := runCollectiveSets(t, append(append([]string{}, sharpSets...), "workload.size=8388608")...)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	wire := cfg.Link.Timing(cfg.Link.LengthM).Serialization(4174) * 2048
	got := ib.FromNanoseconds(m["time_us"].(float64) * 1000)
	fill := ib.FromNanoseconds(one["time_us"].(float64) * 1000)
	t.Logf("8 MiB: %.3f µs, links %.3f µs, one fragment %.3f µs; busbw %.1f Gb/s", got.Nanoseconds()/1000, wire.Nanoseconds()/1000, fill.Nanoseconds()/1000, m["busbw_gbps"])
	assert.Equal(t, ib.PS(170_967_040), wire, "2048 · 4174 bytes at 20 ps a byte")
	assert.GreaterOrEqual(t, got, wire)
	fc := cfg.Link.Timing(cfg.Link.LengthM).Serialization(ib.FlowControlBytes) * 2048
	assert.LessOrEqual(t, got, wire+fc+fill)
	assert.LessOrEqual(t, m["busbw_gbps"].(float64), 2*7.0/8*400*4096/4174)
	assert.Equal(t, uint64(0), m["sharp_ost_stalls"], "every AN has a slot for every fragment the window lets out")
}

// TestSharpCatchesABrokenAggregationNode: an AN that flips one byte of a
// child's fragment before adding it, or leaves one child's contribution
// out, gives every rank a wrong sum at that fragment: data_verified, which
// compares every byte of every rank with the sum of the ranks' initial
// data, must say so, naming the byte. The unbroken run on the same fabric
// verifies (the mutation alone makes the difference). The byte flipped is
// byte 5 of fragment 3 from Leaf[1]'s port 0 (rank 2): the sum at byte
// 3·4096 + 5 = 12293 is off by the flip (x ^ 0x40 − x = ±64, never 0).
func TestSharpCatchesABrokenAggregationNode(t *testing.T) {
	sets := []string{"workload.size=65536"}
	clean := sharpChecked(t, sets, nil)
	require.NoError(t, clean.Err)
	require.Equal(t, true, clean.M["data_verified"], "%v", clean.M["data_errors"])
	for _, tc := range []struct {
		name   string
		mutate func(frag uint32, port int, payload []byte) bool
		want   string
	}{
		{"flip", func(frag uint32, port int, p []byte) bool {
			if frag == 3 && port == 0 {
				p[5] ^= 0x40
			}
			return true
		}, "byte 12293 is"},
		{"drop", func(frag uint32, port int, p []byte) bool { return frag != 3 || port != 1 }, "byte 12288 is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sharpChecked(t, sets, func(s *Simulation) {
				s.Net.Switches[1].SetAggMutation(tc.mutate) // Leaf[1]
			})
			assert.Equal(t, false, r.M["data_verified"])
			errs, _ := r.M["data_errors"].([]string)
			require.NotEmpty(t, errs)
			assert.Contains(t, errs[0], tc.want)
		})
	}
}

// TestSharpBackPressureIsLossless: Leaf[0]'s ALU slowed to 10 GB/s (100
// ps a byte, against the 2 × 50 GB/s its two hosts bring) makes its
// reduced fragments reach the root late, while the other leaves' come at
// link rate. With the root's OSTs cut to 2, the fast leaves' fragment f + 2
// finds its slot held by fragment f, still waiting for Leaf[0]'s: it waits
// at the root's input holding its credits (the fast leaves' uplinks
// stall, their ANs and then their hosts' links with them), and nothing is
// lost: the data verifies, the checkers (lossless, credits, buffers) pass,
// and the stalls show in the metrics. With the root's 64 OSTs, the ranks'
// window, nothing ever waits: no AN holds more fragments than the ranks
// let out.
func TestSharpBackPressureIsLossless(t *testing.T) {
	sets := []string{"workload.size=262144"}
	slow := func(rootOSTs int) func(*Simulation) {
		return func(s *Simulation) {
			for _, sw := range s.Net.Switches {
				a, ok := sw.AggConfig()
				switch {
				case !ok:
				case sw.Name() == "Fabric.Leaf[0]":
					a.ALUPSPerByte = 100
					require.NoError(t, sw.SetAggNode(a))
				case a.ParentLID == 0:
					a.OSTs = rootOSTs
					require.NoError(t, sw.SetAggNode(a))
				}
			}
		}
	}
	full := sharpChecked(t, sets, slow(64))
	require.NoError(t, full.Err)
	assert.Equal(t, true, full.M["data_verified"], "%v", full.M["data_errors"])
	assert.Equal(t, uint64(0), full.M["sharp_ost_stalls"])
	r := sharpChecked(t, sets, slow(2))
	require.NoError(t, r.Err)
	assert.True(t, r.Settled)
	assert.Equal(t, true, r.M["data_verified"], "%v", r.M["data_errors"])
	assert.Greater(t, r.M["sharp_ost_stalls"], uint64(0))
	t.Logf("root 2 OSTs: stalls %v (%v ns), time %v µs; root 64 OSTs: %v µs, %v OSTs used at most",
		r.M["sharp_ost_stalls"], r.M["sharp_ost_stall_ns"], r.M["time_us"], full.M["time_us"], full.M["sharp_osts_used_max"])
}

// TestSharpDeterministic: the same config and seed give the same metrics
// and the same trace, byte for byte.
func TestSharpDeterministic(t *testing.T) {
	sets := []string{"workload.size=100000", "seed=7"}
	a := sharpChecked(t, sets, nil)
	b := sharpChecked(t, sets, nil)
	require.NoError(t, a.Err)
	assert.Equal(t, true, a.M["data_verified"])
	assert.Equal(t, a.M, b.M)
	assert.NotEmpty(t, a.Trace)
	assert.True(t, a.Trace == b.Trace, "traces differ")
}

// TestSharpOnOtherTrees: the aggregation tree follows the SM's multicast
// tree on a three-level fat tree (leaf, aggregation and core ANs: three
// levels of reduction) and on one switch (one AN, every host its child):
// the data verifies and the checkers pass. Every AN reduces every
// fragment once: sharp_fragments_reduced = ANs × fragments.
func TestSharpOnOtherTrees(t *testing.T) {
	for _, topo := range []string{"topology.kind=fat-tree-3", "topology.kind=single-switch"} {
		r := sharpChecked(t, []string{topo, "workload.size=20000"}, nil)
		require.NoError(t, r.Err, topo)
		assert.Equal(t, true, r.M["data_verified"], "%s %v", topo, r.M["data_errors"])
		frags := r.M["sharp_fragments"].(int)
		assert.Equal(t, 5, frags, "⌈20000 / 4096⌉")
		assert.Equal(t, uint64(r.M["sharp_aggregation_nodes"].(int)*frags), r.M["sharp_fragments_reduced"], topo)
	}
}

// TestSharpRefusals: what the in-network all-reduce does not model is
// refused when the config is loaded, one line naming the key.
func TestSharpRefusals(t *testing.T) {
	for set, want := range map[string]string{
		"switch.queueing=voq":              `switch.queueing: "voq" with workload.algorithm sharp: the result goes down by multicast replication, modelled for fifo input queueing only (set switch.queueing: fifo)`,
		"topology.kind=back-to-back":       "workload.algorithm: sharp reduces in the switches; topology.kind back-to-back has none",
		"cc.enable=true":                   "cc.enable: true with workload.algorithm sharp is not modelled; set it to false",
		"workload.reduce_gbps=10":          "workload.reduce_gbps: 10 with workload.algorithm sharp: the hosts reduce nothing (the switches' ALUs do: workload.sharp_alu_gbps); remove it",
		"workload.sharp_osts=5000":         "workload.sharp_osts: 5000 is out of range (0 for 64, 1 to 4096)",
		"workload.sharp_fragment_bytes=-1": "workload.sharp_fragment_bytes: -1 is out of range (0 for link.mtu, 1 to link.mtu)",
	} {
		sets := append(append([]string{}, sharpSets...), set)
		_, err := Load(nil, sets)
		require.Error(t, err, set)
		assert.Contains(t, err.Error(), want, set)
		assert.NotContains(t, err.Error(), "\n", set)
	}
}

// TestSharpALUThroughputBoundsTheRoot: with the ANs' ALUs at 20 GB/s (50
// ps a byte) the root spine, which adds 4 leaves' fragments one at a time,
// needs 4 · 4096 · 50 ps = 819.2 ns a fragment, more than a host link's
// 83.5 ns (4174 bytes at 20 ps) or a leaf's 2 · 4096 · 50 = 409.6 ns: 64
// fragments (256 KiB) take at least 64 · 819.2 ns = 52.4288 µs, and at
// most that plus one fragment's all-reduce on the same ALUs (fill and
// drain: the first fragment's way to the root and the last result's way
// down). The slots now hold each sum for its ALU time, so the occupancy
// shows: more than one slot at once, none with a free ALU.
func TestSharpALUThroughputBoundsTheRoot(t *testing.T) {
	alu := []string{"workload.sharp_alu_gbps=20"}
	_, one := runCollectiveSets(t, append(append(append([]string{}, sharpSets...), alu...), "workload.size=4096")...)
	_, m := runCollectiveSets(t, append(append(append([]string{}, sharpSets...), alu...), "workload.size=262144")...)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	got := ib.FromNanoseconds(m["time_us"].(float64) * 1000)
	bound := ib.PS(64 * 4 * 4096 * 50)
	fill := ib.FromNanoseconds(one["time_us"].(float64) * 1000)
	t.Logf("%.3f µs against the root ALU's %.3f µs (+ %.3f µs for one fragment); %v slots at most, %.2f on average",
		got.Nanoseconds()/1000, bound.Nanoseconds()/1000, fill.Nanoseconds()/1000, m["sharp_osts_used_max"], m["sharp_osts_used_mean"])
	assert.GreaterOrEqual(t, got, bound)
	assert.LessOrEqual(t, got, bound+fill)
	assert.Greater(t, m["sharp_osts_used_max"], 1)
	_, free := runCollectiveSets(t, append(append([]string{}, sharpSets...), "workload.size=262144")...)
	assert.Equal(t, 1, free["sharp_osts_used_max"], "a free ALU holds no slot: the children's fragments come together")
}

// TestSharpANSendsOnItsOwnPSNs: an AN's reduced fragment is its own
// packet to its parent (SLID the AN's LID), so it carries the AN's own
// PSN sequence, 0, 1, 2, … in the order the AN sends them. It used to
// keep the PSN of whichever child's packet came last, which is another
// child's stream from fragment to fragment once their timing differs
// (here a small MTT cache and a slow ALU), and the ordering checker saw
// the parent's stream from that AN jump. The run must pass the checkers,
// the trace must show a fragment whose last child differs from the
// previous one's at some AN (or the case tests nothing), and each AN's
// injected PSNs must count up from 0. The same run also has an AN with two
// reduced fragments waiting at different inputs for its busy uplink: the
// AN's send queue (switchasic aggSend) must offer them in PSN order; a
// mutant that offers each at once, leaving the order to the crossbar's
// arbitration between inputs, fails the ordering checker here.
func TestSharpANSendsOnItsOwnPSNs(t *testing.T) {
	r := sharpChecked(t, []string{"switch.radix=8", "topology.hosts=16", "topology.cable_length_m=5",
		"workload.size=1048576", "workload.sharp_alu_gbps=100", "hca.mtt_cache_entries=64"}, nil)
	require.NoError(t, r.Err)
	assert.Equal(t, true, r.M["data_verified"], "%v", r.M["data_errors"])
	lastIn := map[string]string{}   // AN → the last delivery's input port
	prevLast := map[string]string{} // AN → the previous reduced fragment's last input
	nextPSN := map[string]int{}
	varied := false
	for _, line := range strings.Split(r.Trace, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[1], ".AN") {
			continue
		}
		an := f[1]
		switch f[2] {
		case "deliver":
			for _, kv := range f[3:] {
				if strings.HasPrefix(kv, "in=") {
					lastIn[an] = kv
				}
			}
		case "inject":
			if p, ok := prevLast[an]; ok && p != lastIn[an] {
				varied = true
			}
			prevLast[an] = lastIn[an]
			assert.Contains(t, f, "psn="+strconv.Itoa(nextPSN[an]), "%s", line)
			nextPSN[an]++
		}
	}
	assert.True(t, varied, "no AN saw its last child change: the case does not test the PSN")
	assert.NotEmpty(t, nextPSN)
}
