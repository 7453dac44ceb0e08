package workload

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProtocolLines checks the lines a write becomes, from NCCL's
// formats: LL, 16-byte lines of data1, flag1, data2, flag2 (uint32 each),
// so divUp(n, 8) lines (prims_ll.h waitSend); LL128, 128-byte lines of 15
// data words and the flag word, sent in whole warp slices of 16 lines,
// 1920 data bytes (prims_ll128.h waitSend: divUp(nelem, DataEltPerSlice)
// × WireWordPerSlice × 8). Each round-trips, and a line with another flag
// is named.
func TestProtocolLines(t *testing.T) {
	for _, tc := range []struct {
		proto string
		n     int
		wire  int64
	}{
		{ProtoLL, 0, 0}, {ProtoLL, 1, 16}, {ProtoLL, 8, 16}, {ProtoLL, 9, 32}, {ProtoLL, 32768, 65536},
		{ProtoLL128, 1, 2048}, {ProtoLL128, 1920, 2048}, {ProtoLL128, 1921, 4096}, {ProtoLL128, 576000, 614400},
		{ProtoSimple, 5, 5},
	} {
		require.Equal(t, tc.wire, protoWire(tc.proto, int64(tc.n)), "%s %d", tc.proto, tc.n)
		if tc.proto == ProtoSimple || tc.n == 0 {
			continue
		}
		data := make([]byte, tc.n)
		for i := range data {
			data[i] = byte(i*7 + 1)
		}
		wire := make([]byte, tc.wire)
		protoEncode(tc.proto, data, wire, 9)
		got := make([]byte, tc.n)
		bad, _ := protoDecode(tc.proto, wire, got, 9)
		assert.Equal(t, -1, bad, "%s %d", tc.proto, tc.n)
		assert.Equal(t, data, got, "%s %d", tc.proto, tc.n)
		// The flag of the last line, where the format puts it: LL's flag2
		// at byte 12 of the line, LL128's word at byte 120.
		last := len(wire)/16 - 1
		at := last*16 + 12
		if tc.proto == ProtoLL128 {
			last = len(wire)/128 - 1
			at = last*128 + 120
		}
		binary.LittleEndian.PutUint32(wire[at:], 8)
		bad, f := protoDecode(tc.proto, wire, got, 9)
		assert.Equal(t, last, bad, "%s %d", tc.proto, tc.n)
		assert.Equal(t, uint64(8), f, "%s %d", tc.proto, tc.n)
	}
}

// wireCount counts, at a port, the payload bytes of the collective's data
// writes (RDMA WRITE WITH IMMEDIATE: FIRST, MIDDLE, LAST_WITH_IMMEDIATE
// and ONLY_WITH_IMMEDIATE packets), its data writes (a LAST or ONLY with
// immediate each) and its clear-to-sends (RDMA WRITE ONLY of 32 bytes),
// from the packets that leave it.
type wireCount struct{ payload, writes, cts int64 }

func (w *wireCount) Func(ctx sim.HookCtx) {
	e, ok := ctx.Item.(*components.TraceEvent)
	if !ok || e.Kind != components.TraceTxStart || e.Pkt == nil || e.Pkt.Kind != ib.Data {
		return
	}
	switch e.Pkt.Opcode {
	case ib.RDMAWriteFirst, ib.RDMAWriteMiddle:
		w.payload += int64(e.Pkt.PayloadLen)
	case ib.RDMAWriteLastImm, ib.RDMAWriteOnlyImm:
		w.payload += int64(e.Pkt.PayloadLen)
		w.writes++
	case ib.RDMAWriteOnly:
		if e.Pkt.PayloadLen == ctsEntryBytes {
			w.cts++
		}
	}
}

// protoPair runs a ring all-reduce of size bytes over two back-to-back
// cx7 ranks on NDR with the clear-to-send, one warm-up and two timed
// iterations, under proto, and returns what left both ports and the run.
func protoPair(t *testing.T, proto string, size int64) (wireCount, *Collective, map[string]any) {
	t.Helper()
	s := components.NewSim()
	h, lc := cx7(t), perftestLink("NDR")
	a := hca.NewDevice(s, "Fabric.Host[0].HCA", 1, h)
	b := hca.NewDevice(s, "Fabric.Host[1].HCA", 2, h)
	pa, pb := a.AttachPort(&lc), b.AttachPort(&lc)
	link.Connect(pa, pb, lc.Timing(lc.LengthM))
	var w wireCount
	pa.AcceptHook(&w)
	pb.AcceptHook(&w)
	c, err := BuildCollectiveOn(s, []*hca.Device{a, b}, CollectiveRun{Op: CollAllReduce, Bytes: size, MTU: 4096, Seed: 3,
		FlowControl: FlowCTS, Protocol: proto, Iterations: 2, Warmup: 1})
	require.NoError(t, err)
	m, err := c.Run()
	require.NoError(t, err)
	return w, c, m
}

// wireWant derives what protoPair's run must put on the two links: the
// ring over 2 ranks cuts S into chunks of ⌈S/2⌉ and ⌊S/2⌋ bytes and each
// rank sends both (steps 0 and 1: chunk (i − t) mod 2), each cut into
// ⌈c/step⌉ equal slices (the first c mod k one byte longer), step the
// protocol's data bytes a FIFO step (SIMPLE 512 KiB: 4 MiB / 8; LL 32768:
// 8 lines × 512 threads × 8 steps × 16 bytes / 8 / 2; LL128 576000: 120 ×
// 640 × 8 steps × 8 bytes / 8 × 15/16), each slice one write of its lines:
// SIMPLE its bytes, LL 16 per 8 (whole lines), LL128 2048 per 1920 (whole
// warp slices). Three iterations (a warm-up, two timed), two ranks.
func wireWant(proto string, size int64) (payload, writes int64) {
	step := map[string]int64{ProtoSimple: 4 << 20 / 8, ProtoLL: 8 * 512 * 8 * 16 / 8 / 2, ProtoLL128: 120 * 640 * 8 * 8 / 8 * 15 / 16}[proto]
	line := map[string][2]int64{ProtoSimple: {1, 1}, ProtoLL: {8, 16}, ProtoLL128: {1920, 2048}}[proto]
	for _, c := range []int64{(size + 1) / 2, size / 2} {
		k := max(1, (c+step-1)/step)
		for i := int64(0); i < k; i++ {
			n := c / k
			if i < c%k {
				n++
			}
			payload += (n + line[0] - 1) / line[0] * line[1]
			writes++
		}
	}
	return 3 * 2 * payload, 3 * 2 * writes
}

// protoWireProblems runs protoPair for each protocol and size and lists
// where the links disagree with wireWant, or a clear-to-send is missing
// for a write, or the data is wrong.
func protoWireProblems(t *testing.T) []string {
	var out []string
	for _, size := range []int64{1, 8, 76800, 100000} {
		got := map[string]wireCount{}
		for _, proto := range Protocols {
			w, _, m := protoPair(t, proto, size)
			got[proto] = w
			payload, writes := wireWant(proto, size)
			t.Logf("%s %d bytes: %d payload bytes in %d writes on the links (want %d in %d), %d clear-to-sends", proto, size, w.payload, w.writes, payload, writes, w.cts)
			if w.payload != payload || w.writes != writes {
				out = append(out, fmt.Sprintf("%s %d bytes: %d payload bytes in %d writes, want %d in %d", proto, size, w.payload, w.writes, payload, writes))
			}
			if w.cts != w.writes {
				out = append(out, fmt.Sprintf("%s %d bytes: %d clear-to-sends for %d writes", proto, size, w.cts, w.writes))
			}
			if m["data_verified"] != true {
				out = append(out, fmt.Sprintf("%s %d bytes: %v", proto, size, m["data_errors"]))
			}
		}
		// 76800 = 2 × 20 × 1920: every write is whole LL lines and whole
		// LL128 slices, so the links carry exactly 2 and 128/120 times
		// SIMPLE's bytes.
		if size == 76800 {
			if s := got[ProtoSimple].payload; got[ProtoLL].payload != 2*s || got[ProtoLL128].payload*120 != s*128 {
				out = append(out, fmt.Sprintf("76800 bytes: LL %d and LL128 %d payload bytes against SIMPLE's %d, want 2× and 128/120×", got[ProtoLL].payload, got[ProtoLL128].payload, s))
			}
		}
	}
	return out
}

// TestProtocolWireBytes counts, at the links of two back-to-back ranks,
// the bytes a ring all-reduce moves under each protocol (wireWant derives
// them; 1 byte has an empty chunk, a write of no lines; 100000 bytes cuts
// LL's 50000-byte chunks into two steps of 25000), and every write's
// clear-to-send (one 32-byte write each, whatever the protocol: net.cc
// posts an irecv a step for every protocol).
func TestProtocolWireBytes(t *testing.T) {
	assert.Empty(t, protoWireProblems(t))
}

// protoSmallProblems runs the 8-byte ring of protoPair once (cold, one
// iteration) under SIMPLE and LL, and lists what breaks the derivation:
// both runs post the same writes at the same times up to their first
// landing (the clear-to-sends are the same 32 bytes); SIMPLE takes a
// write in when its thread polls the receive completion, which the HCA
// writes after the payload (PCIe keeps posted writes in order), LL when it
// polls the lines, visible with the payload itself. Each rank takes in
// two writes one after the other (step 1 forwards what step 0 brought),
// so LL must be faster, by at most the completion's lag behind the
// payload, summed over a rank's two writes (measured in the SIMPLE run
// from outside the driver), less nothing: its 16-byte lines cost 12 bytes
// more a write on the wire and in the payload read.
func protoSmallProblems(t *testing.T) []string {
	var times [2]ib.PS
	var lag [2]ib.PS // per rank, over its writes: completion − payload visible
	for i, proto := range []string{ProtoSimple, ProtoLL} {
		s, devs := collPair(t, perftestLink("NDR"), cx7(t))
		c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 8, MTU: 4096, Seed: 1, FlowControl: FlowCTS, Protocol: proto})
		require.NoError(t, err)
		if proto == ProtoSimple {
			for r, d := range devs {
				r, inner, innerCQE := r, d.OnMemWrite, d.OnCQE
				var landedAt ib.PS
				d.OnMemWrite = func(addr uint64, n int, now ib.PS) {
					if ct := c.c.ranks[r].cts; addr >= ct.data && addr < ct.data+uint64(len(ct.recv)*NCCLSteps)*uint64(c.c.slotBytes) {
						landedAt = now
					}
					inner(addr, n, now)
				}
				d.OnCQE = func(cq *hca.CQ, now ib.PS) {
					if cq == c.c.ranks[r].recvCQ {
						lag[r] += now - landedAt
					}
					innerCQE(cq, now)
				}
			}
		}
		m, err := c.Run()
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		times[i] = c.c.end - c.c.start
	}
	t.Logf("8 bytes: SIMPLE %v, LL %v; the completions lag the payloads by %v and %v", times[0], times[1], lag[0], lag[1])
	var out []string
	if times[1] >= times[0] {
		out = append(out, fmt.Sprintf("LL %v is not faster than SIMPLE %v", times[1], times[0]))
	}
	if times[0]-times[1] > max(lag[0], lag[1]) {
		out = append(out, fmt.Sprintf("LL saves %v, more than the completions' lag %v", times[0]-times[1], max(lag[0], lag[1])))
	}
	return out
}

// TestProtocolLLFasterForSmallMessages: protoSmallProblems.
func TestProtocolLLFasterForSmallMessages(t *testing.T) {
	assert.Empty(t, protoSmallProblems(t))
}

// protoRunProblems runs each protocol on a 3-rank ring of a switch (4096
// bytes a slice by default steps) and a 4-rank tree, back to back with a
// warm-up and two timed iterations, rank 0 polling slowly, and lists
// every data error (every rank checks every byte each iteration: a line
// lost, duplicated or taken in with a stale flag changes the sum or is
// named) and every clear-to-send count off the writes'.
func protoRunProblems(t *testing.T) []string {
	var out []string
	for _, proto := range []string{ProtoLL, ProtoLL128} {
		for _, tc := range []struct {
			alg   string
			n     int
			bytes int64
		}{{AlgRing, 3, 300000}, {AlgTree, 4, 100000}, {AlgRing, 3, 5}} {
			s, devs := collSwitch(t, tc.n, perftestLink("NDR"), cx7(t))
			devs[0].Cfg.Host.PollNS = 400
			c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, MTU: 4096, Seed: 1, Algorithm: tc.alg, Bytes: tc.bytes,
				FlowControl: FlowCTS, Protocol: proto, Iterations: 2, Warmup: 1})
			require.NoError(t, err)
			m, err := c.Run()
			require.NoError(t, err)
			if m["data_verified"] != true {
				out = append(out, fmt.Sprintf("%s %s %d: %v", proto, tc.alg, tc.bytes, m["data_errors"]))
			}
			// One clear-to-send a write, the timed iterations'.
			if want := int64(2 * m["rdma_writes"].(int)); m["cts_writes"] != want {
				out = append(out, fmt.Sprintf("%s %s %d: %v clear-to-sends for %d writes", proto, tc.alg, tc.bytes, m["cts_writes"], want))
			}
			assert.Equal(t, proto, m["protocol"])
		}
	}
	return out
}

// TestProtocolDataChecked: protoRunProblems.
func TestProtocolDataChecked(t *testing.T) {
	assert.Empty(t, protoRunProblems(t))
}

// TestProtocolFlagsCatchInFlightCorruption flips bit 6 of byte 5 of the
// first data packet the switch sends rank 1 (flippedRingAllReduceRun:
// 4 EDR ranks, 32768 bytes, so rank 0's step-0 write of its 8192-byte
// chunk 0, its connection's write 0) under LL: byte 5 of the lines is
// the second byte of line 0's flag1 (data1 is bytes 0–3, flag1 4–7,
// little-endian), which was write 0's flag 1 and becomes 1 XOR 0x4000 =
// 16385. The receiver must name that line and flag, and nothing else:
// the data bytes came through whole.
func TestProtocolFlagsCatchInFlightCorruption(t *testing.T) {
	_, m, _, _ := flippedRingAllReduceRun(t, CollectiveRun{FlowControl: FlowCTS, Protocol: ProtoLL})
	assert.Equal(t, false, m["data_verified"])
	assert.Equal(t, []string{"rank 1: write 0 from rank 0: line 0 of its ll FIFO slot has flag 16385, want 1"}, m["data_errors"])
}

// TestProtocolDeterministic runs an LL and an LL128 ring twice and
// requires the same memory writes at the same picoseconds and the same
// metrics.
func TestProtocolDeterministic(t *testing.T) {
	for _, proto := range []string{ProtoLL, ProtoLL128} {
		var logs [2][]string
		var ms [2]map[string]any
		for i := range 2 {
			s, devs := collSwitch(t, 3, perftestLink("NDR"), cx7(t))
			c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 200000, MTU: 4096, Seed: 1,
				FlowControl: FlowCTS, Protocol: proto, Iterations: 2, Warmup: 1})
			require.NoError(t, err)
			for r, d := range devs {
				r, inner := r, d.OnMemWrite
				d.OnMemWrite = func(addr uint64, n int, now ib.PS) {
					logs[i] = append(logs[i], fmt.Sprintf("%d %d %d %d", r, addr, n, now))
					inner(addr, n, now)
				}
			}
			ms[i], err = c.Run()
			require.NoError(t, err)
			delete(ms[i], "events") // the engine's count, as every run's
		}
		require.NotEmpty(t, logs[0])
		assert.Equal(t, logs[0], logs[1], proto)
		assert.Equal(t, ms[0], ms[1], proto)
	}
}

// TestProtocolMutantsAreCaught breaks one rule of the protocols at a time
// (protoMutant) and requires the check written for it to fail: stale
// flags (the flag of the write 8 before) are named as data errors; data
// sent without its lines, or in SIMPLE's 512 KiB steps, miscount the
// links' bytes or writes; an LL receiver that waits for the completion is
// no faster than SIMPLE.
func TestProtocolMutantsAreCaught(t *testing.T) {
	for _, tc := range []struct {
		mutant string
		check  func(*testing.T) []string
	}{
		{mutStaleFlag, protoRunProblems},
		{mutRawWire, protoWireProblems},
		{mutSimpleSteps, protoWireProblems},
		{mutLandOnCQE, protoSmallProblems},
	} {
		t.Run(tc.mutant, func(t *testing.T) {
			protoMutant = tc.mutant
			defer func() { protoMutant = "" }()
			p := tc.check(t)
			t.Logf("%s: %d problems, first %q", tc.mutant, len(p), append(p, "")[0])
			assert.NotEmpty(t, p)
		})
	}
}

// TestProtocolConfigErrors checks workload.protocol's bad values and
// combinations: one line naming the key, the value and what is allowed.
func TestProtocolConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		run  CollectiveRun
		want string
	}{
		{CollectiveRun{Op: CollAllReduce, FlowControl: FlowCTS, Protocol: "ll64"}, `workload.protocol: "ll64" is not an NCCL protocol (simple, ll, ll128)`},
		{CollectiveRun{Op: CollAllReduce, Protocol: ProtoLL}, `workload.protocol: ll is set, but workload.flow_control is "none"; NCCL moves ll lines through its clear-to-send FIFO (the slots are the protocol's steps), so set workload.flow_control: cts, or remove the key`},
		{CollectiveRun{Op: CollAllReduce, Algorithm: AlgRabenseifner, Protocol: ProtoLL128}, "workload.protocol: ll128 is set, but workload.algorithm rabenseifner does not use it (NCCL's protocols are modelled for its all-reduces only, ring and tree: set workload.kind: allreduce with workload.algorithm ring or tree, or remove the key)"},
		{CollectiveRun{Op: CollAllGather, Protocol: ProtoLL}, "workload.protocol: ll is set, but workload.kind allgather does not use it"},
		{CollectiveRun{Op: CollAllReduce, FlowControl: FlowCTS, Protocol: ProtoLL, SliceBytes: 65536}, "workload.slice_bytes: 65536 is more than a workload.protocol ll FIFO step carries (32768 data bytes); set it to 32768 or less, or remove it for the step"},
	} {
		tc.run.Bytes, tc.run.MTU = 64, 4096
		err := tc.run.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	for _, p := range []string{"", ProtoSimple} {
		ok := CollectiveRun{Op: CollAllGather, Bytes: 64, MTU: 4096, Protocol: p}
		assert.NoError(t, ok.Validate(), "simple is every collective's")
	}
	ok := CollectiveRun{Op: CollAllReduce, Algorithm: AlgTree, Bytes: 64, MTU: 4096, FlowControl: FlowCTS, Protocol: ProtoLL128}
	assert.NoError(t, ok.Validate())
}
