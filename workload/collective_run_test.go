package workload

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
)

// collSwitch builds n hosts (LIDs 1..n) with HCAs on one switch over lc.
func collSwitch(t testing.TB, n int, lc link.Config, h hca.Config) (*components.Sim, []*hca.Device) {
	s, devs, _ := collSwitchSw(t, n, lc, h)
	return s, devs
}

// collSwitchSw is collSwitch that also returns the switch.
func collSwitchSw(t testing.TB, n int, lc link.Config, h hca.Config) (*components.Sim, []*hca.Device, *switchasic.Switch) {
	s := components.NewSim()
	lft := switchasic.NewLFT(n + 1)
	for i := 0; i < n; i++ {
		lft.Set(uint16(i+1), i)
	}
	scfg := switchasic.Defaults()
	scfg.Radix = max(n, 2)
	sw, err := switchasic.MakeBuilder().WithSim(s).WithConfig(scfg).WithLFT(lft).WithFlowControl(lc).Build("Fabric.Switch[0]")
	require.NoError(t, err)
	tm := lc.Timing(lc.LengthM)
	var devs []*hca.Device
	for i := 0; i < n; i++ {
		d := hca.NewDevice(s, fmt.Sprintf("Fabric.Host[%d].HCA", i), uint16(i+1), h)
		link.Connect(sw.Port(i), d.AttachPortVLs(&lc, scfg.VLs), tm)
		devs = append(devs, d)
	}
	return s, devs, sw
}

func TestCollectiveSmoke(t *testing.T) {
	for _, tc := range []struct {
		op    string
		n     int
		bytes int64
		slice int64
	}{
		{CollAllReduce, 4, 100000, 0}, {CollAllReduce, 4, 100000, 8192}, {CollAllReduce, 8, 3, 0},
		{CollAllReduce, 2, 5000, 0}, {CollAllToAll, 4, 100000, 0}, {CollAllToAll, 5, 5000, 1000},
	} {
		t.Run(fmt.Sprintf("%s/%d/%d/%d", tc.op, tc.n, tc.bytes, tc.slice), func(t *testing.T) {
			s, devs := collSwitch(t, tc.n, perftestLink("EDR"), hca.Defaults())
			m, err := RunCollectiveOn(s, devs, CollectiveRun{Op: tc.op, Bytes: tc.bytes, MTU: 4096, SliceBytes: tc.slice, Seed: 1})
			require.NoError(t, err)
			t.Logf("%v", m)
			assert.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		})
	}
}

func TestCollectiveVerifierCatchesCorruption(t *testing.T) {
	// A byte of rank 2's data changed after setup (behind the driver's
	// back): the sum every rank ends with is then off by the change, and
	// the run must say so.
	s, devs := collSwitch(t, 4, perftestLink("EDR"), hca.Defaults())
	c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 4096, MTU: 4096, Seed: 7})
	require.NoError(t, err)
	rk := c.c.ranks[2]
	var b [1]byte
	rk.dev.Mem.Read(rk.src+100, b[:])
	b[0]++
	rk.dev.Mem.Write(rk.src+100, b[:])
	m, err := c.Run()
	require.NoError(t, err)
	assert.Equal(t, false, m["data_verified"])
	assert.Len(t, m["data_errors"], 4, "every rank holds the wrong sum at byte 100")
}

func TestCollectiveVerifierCatchesCorruptionOfTheHalves(t *testing.T) {
	// 4 ranks, 4096 bytes: blocks of 1024. A byte of rank 2's block 1
	// changed after setup: in an all-gather rank 2's block 1 is
	// overwritten by rank 1's (block 2 is rank 2's own, and a change there
	// reaches every rank); in a reduce-scatter it adds into block 1, which
	// rank 1 ends with. A broadcast overwrites rank 2's buffer with the
	// root's: its change is gone, unless rank 2 is the root, when every
	// rank holds it. A reduce adds it into the root's sum, whichever rank
	// the root is.
	for _, tc := range []struct {
		op   string
		at   uint64
		want int
		root int
	}{{CollAllGather, 1024 + 100, 0, 0}, {CollAllGather, 2*1024 + 100, 4, 0}, {CollReduceScatter, 1024 + 100, 1, 0}, {CollReduceScatter, 100, 1, 0},
		{CollBroadcast, 100, 0, 0}, {CollReduce, 100, 1, 0}, {CollBroadcast, 100, 4, 2}, {CollBroadcast, 100, 0, 3},
		{CollReduce, 100, 1, 3}, {CollReduce, 100, 1, 2}} {
		s, devs := collSwitch(t, 4, perftestLink("EDR"), hca.Defaults())
		c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: tc.op, Bytes: 4096, MTU: 4096, Seed: 7, Root: tc.root})
		require.NoError(t, err)
		rk := c.c.ranks[2]
		var b [1]byte
		rk.dev.Mem.Read(rk.src+tc.at, b[:])
		b[0]++
		rk.dev.Mem.Write(rk.src+tc.at, b[:])
		m, err := c.Run()
		require.NoError(t, err)
		assert.Equal(t, tc.want == 0, m["data_verified"], "%s at %d root %d", tc.op, tc.at, tc.root)
		if tc.want > 0 {
			assert.Len(t, m["data_errors"], tc.want, "%s at %d root %d: %v", tc.op, tc.at, tc.root, m["data_errors"])
		}
		if tc.root != 0 {
			assert.Equal(t, tc.root, m["root"])
		} else {
			assert.NotContains(t, m, "root", "root 0 reports as before workload.root")
		}
	}
}

// flipFirstPayload flips bit 6 of byte at of the first packet with a
// payload that leaves the port it hooks: a corruption in flight that no
// CRC catches (the model's receivers trust the wire's own verdict), which
// only the end-to-end data check can see. Packets of minLen payload bytes
// or fewer are passed (a clear-to-send entry's 32).
type flipFirstPayload struct {
	at, minLen int
	done       bool
}

func (f *flipFirstPayload) Func(ctx sim.HookCtx) {
	e, ok := ctx.Item.(*components.TraceEvent)
	if !ok || f.done || e.Kind != components.TraceTxStart || e.Pkt == nil || len(e.Pkt.Payload) <= max(f.at, f.minLen) {
		return
	}
	e.Pkt.Payload[f.at] ^= 0x40
	f.done = true
}

func TestCollectiveVerifierCatchesInFlightCorruption(t *testing.T) {
	// Ring all-reduce over 4 ranks of 32768 bytes: chunks of 8192, one
	// slice each, two 4 KiB packets a transfer. The first payload the
	// switch sends to rank 1 is step 0's: rank 0's chunk 0, bytes 0–4095.
	// Its byte 5 flipped in flight (v → v XOR 0x40) is added into chunk
	// 0's sum in the reduce-scatter and passed to every rank by the
	// all-gather: every rank must end with sum − v + (v XOR 0x40) at byte
	// 5 and the check must name each, with the sum of the four streams'
	// byte 5 as the value it wanted.
	_, m, sum, bad := flippedRingAllReduce(t, 0)
	var want []string
	for r := range 4 {
		want = append(want, fmt.Sprintf("rank %d: byte 5 is %d after all-reduce, want the sum %d", r, bad, sum))
	}
	assert.Equal(t, false, m["data_verified"])
	assert.Equal(t, want, m["data_errors"])
}

// flippedRingAllReduce runs TestCollectiveVerifierCatchesInFlightCorruption's
// ring all-reduce (4 ranks, 32768 bytes, seed 5; iterations as
// CollectiveRun.Iterations) with byte 5 of the first payload the switch
// sends rank 1 flipped (v → v XOR 0x40), and returns the run, its metrics,
// the sum of the four streams' byte 5 and the value every rank must then
// hold there, sum − v + (v XOR 0x40) (that test derives both).
func flippedRingAllReduce(t *testing.T, iterations int) (c *Collective, m map[string]any, sum, bad byte) {
	t.Helper()
	return flippedRingAllReduceRun(t, CollectiveRun{Iterations: iterations})
}

// flippedRingAllReduceRun is flippedRingAllReduce with run's loop and flow
// control.
func flippedRingAllReduceRun(t *testing.T, run CollectiveRun) (c *Collective, m map[string]any, sum, bad byte) {
	t.Helper()
	s, devs, sw := collSwitchSw(t, 4, perftestLink("EDR"), hca.Defaults())
	run.Op, run.Bytes, run.MTU, run.Seed = CollAllReduce, 32768, 4096, 5
	c, err := BuildCollectiveOn(s, devs, run)
	require.NoError(t, err)
	var v byte
	for r := range 4 {
		g := c.c.rankStream(r)
		b := g.next(make([]byte, 8))
		sum += b[5]
		if r == 0 {
			v = b[5]
		}
	}
	flip := &flipFirstPayload{at: 5}
	if run.FlowControl == FlowCTS {
		flip.minLen = ctsEntryBytes // the first data write's, not a clear-to-send's
	}
	sw.Port(1).AcceptHook(flip)
	m, err = c.Run()
	require.NoError(t, err)
	require.True(t, flip.done, "no payload left the switch for rank 1")
	return c, m, sum, sum - v + (v ^ 0x40)
}

func TestCollectiveVerifierCatchesLostAndDuplicatedSlices(t *testing.T) {
	// After a correct ring all-reduce over 4 ranks of 32768 bytes (chunks
	// of 8192, one slice each), rank 1's step-0 slice (rank 0's chunk 0
	// as set up: the first 8192 bytes of its stream) is added into rank
	// 1's data once more (a duplicated delivery) or taken out of it (a
	// lost one): the check must name rank 1 alone, at the first byte of
	// the chunk where the landed byte is not zero (where adding or
	// removing it changes the sum), with the sum it wanted.
	for _, sign := range []int{+1, -1} {
		s, devs := collSwitch(t, 4, perftestLink("EDR"), hca.Defaults())
		c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 32768, MTU: 4096, Seed: 5})
		require.NoError(t, err)
		m, err := c.Run()
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		rk := c.c.ranks[1]
		x := c.c.recvOf[0][1]
		require.Equal(t, int64(0), x.Offset)
		require.Equal(t, 0, x.Src)
		g := c.c.rankStream(0)
		landed, data := g.next(make([]byte, x.Bytes)), make([]byte, x.Bytes)
		rk.dev.Mem.Read(rk.src+uint64(x.Offset), data)
		k := 0
		for landed[k] == 0 {
			k++
		}
		sum := data[k]
		for i := range data {
			data[i] += byte(sign) * landed[i]
		}
		rk.dev.Mem.Write(rk.src+uint64(x.Offset), data)
		c.c.errs = nil
		c.c.verify()
		assert.Equal(t, []string{fmt.Sprintf("rank 1: byte %d is %d after all-reduce, want the sum %d", k, data[k], sum)}, c.c.errs, "sign %d", sign)
	}
}

func TestRankStreamChunksJoin(t *testing.T) {
	// The buffers are generated a chunk at a time; the chunks must join into
	// the one stream the definition gives: Uint64s of PCG (seed,
	// 0xc011ec7+r), little-endian, cut to S bytes. Sizes around the chunk
	// and off the 8-byte grid.
	for _, size := range []int64{1, 7, 8, 9, streamChunk - 1, streamChunk, streamChunk + 3, 3*streamChunk + 5} {
		c := &collective{run: CollectiveRun{Seed: 11}, sched: Schedule{Bytes: size}}
		rng := rand.New(rand.NewPCG(11, 0xc011ec7+2))
		want := make([]byte, (size+7)/8*8)
		for i := 0; i < len(want); i += 8 {
			binary.LittleEndian.PutUint64(want[i:], rng.Uint64())
		}
		g := c.rankStream(2)
		var got []byte
		for b := g.next(make([]byte, streamChunk)); len(b) > 0; b = g.next(make([]byte, streamChunk)) {
			got = append(got, b...)
		}
		assert.Equal(t, want[:size], got, "size %d", size)
	}
}

func TestCollectiveVerifierNamesEachBadBlock(t *testing.T) {
	// After a correct run, bytes of the receive halves changed behind the
	// driver's back: the check must name each (receiver, sender) block once,
	// at its first bad byte, receivers first. Blocks of 70001 bytes span two
	// 64 KiB chunks and start off the 8-byte grid.
	const n, block = 5, 70001
	s, devs := collSwitch(t, n, perftestLink("EDR"), hca.Defaults())
	c, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllToAll, Bytes: n * block, MTU: 4096, Seed: 3})
	require.NoError(t, err)
	m, err := c.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	flip := func(rank int, at uint64) {
		rk := c.c.ranks[rank]
		var b [1]byte
		rk.dev.Mem.Read(rk.dst+at, b[:])
		b[0] ^= 0x40
		rk.dev.Mem.Write(rk.dst+at, b[:])
	}
	flip(3, 1*block+70000) // rank 3's block from rank 1, its last byte
	flip(3, 1*block+69000) // the same block, later found: not named again
	flip(0, 4*block+5)     // rank 0's block from rank 4, byte 5
	c.c.errs = nil
	c.c.verify()
	assert.Equal(t, []string{
		"rank 0: block from rank 4 differs at byte 5 after all-to-all",
		"rank 3: block from rank 1 differs at byte 69000 after all-to-all",
	}, c.c.errs)

	// All-reduce over 3 ranks of 200003 bytes (four chunks): rank 1 wrong at
	// byte 150000, rank 0 at 70000; named in rank order, each with the sum
	// it should hold.
	s, devs = collSwitch(t, 3, perftestLink("EDR"), hca.Defaults())
	c, err = BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 200003, MTU: 4096, Seed: 3})
	require.NoError(t, err)
	m, err = c.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
	var want [2]byte
	c.c.ranks[0].dev.Mem.Read(c.c.ranks[0].src+70000, want[:1])
	c.c.ranks[1].dev.Mem.Read(c.c.ranks[1].src+150000, want[1:])
	bump := func(rank int, at uint64) {
		rk := c.c.ranks[rank]
		var b [1]byte
		rk.dev.Mem.Read(rk.src+at, b[:])
		b[0]++
		rk.dev.Mem.Write(rk.src+at, b[:])
	}
	bump(1, 150000)
	bump(0, 70000)
	c.c.errs = nil
	c.c.verify()
	assert.Equal(t, []string{
		fmt.Sprintf("rank 0: byte 70000 is %d after all-reduce, want the sum %d", want[0]+1, want[0]),
		fmt.Sprintf("rank 1: byte 150000 is %d after all-reduce, want the sum %d", want[1]+1, want[1]),
	}, c.c.errs)
}

func TestCollectiveReduceCostIsCharged(t *testing.T) {
	// 4 ranks, 1 MiB = 4 chunks of 262144 bytes. Each rank receives n−1 = 3
	// chunks in the reduce-scatter and adds each into its buffer: at
	// 1 GB/s that is 3 × 262144 bytes / 1 GB/s = 786432 ns of reduction per
	// rank, all of it before the rank's last forward, so the collective
	// takes at least that long (the wire alone needs 1.5 MiB / 12 GB/s ≈
	// 131 µs).
	const n, size = 4, 1 << 20
	s, devs := collSwitch(t, n, perftestLink("EDR"), hca.Defaults())
	m, err := RunCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: size, MTU: 4096, ReduceGBps: 1, Seed: 1})
	require.NoError(t, err)
	assert.Equal(t, true, m["data_verified"])
	wantNs := float64((n - 1) * size / n) // bytes at 1 byte/ns
	assert.InDelta(t, wantNs, m["reduce_ns_max"].(float64), 1e-6)
	assert.GreaterOrEqual(t, m["time_us"].(float64)*1000, wantNs)
}

func TestCollectiveSlicesPipelineTheRing(t *testing.T) {
	// 8 ranks, 2 MiB: chunks of 256 KiB. Posted whole (one slice per
	// chunk), a rank cannot forward a chunk before all of it arrived, so
	// each of the 14 steps pays the post → doorbell → WQE fetch → payload
	// read → wire → CQE → poll gap (a few µs) on top of the chunk's wire
	// time. Cut into 32 KiB slices, a rank forwards the first slice while
	// the rest still arrive and the gaps hide behind the transfer: the
	// collective is faster, with the same bytes on the wire.
	lc := perftestLink("EDR")
	run := CollectiveRun{Op: CollAllReduce, Bytes: 2 << 20, MTU: 4096, SliceBytes: 256 << 10, Seed: 1}
	s, devs := collSwitch(t, 8, lc, hca.Defaults())
	whole, err := RunCollectiveOn(s, devs, run)
	require.NoError(t, err)
	run.SliceBytes = 32 << 10
	s, devs = collSwitch(t, 8, lc, hca.Defaults())
	sliced, err := RunCollectiveOn(s, devs, run)
	require.NoError(t, err)
	assert.Equal(t, true, whole["data_verified"])
	assert.Equal(t, true, sliced["data_verified"])
	assert.Equal(t, 8*14, whole["rdma_writes"], "one write per rank per step")
	assert.Equal(t, 8*14*8, sliced["rdma_writes"], "eight 32 KiB slices per 256 KiB chunk")
	t.Logf("busbw whole %.2f Gb/s, sliced %.2f Gb/s", whole["busbw_gbps"], sliced["busbw_gbps"])
	assert.Greater(t, sliced["busbw_gbps"].(float64), whole["busbw_gbps"].(float64))
}

func TestCollectiveRunValidate(t *testing.T) {
	for _, tc := range []struct {
		run  CollectiveRun
		want string
	}{
		{CollectiveRun{Op: "bcast", Bytes: 8, MTU: 4096}, `workload.kind: "bcast" is not a collective (allreduce, alltoall, allgather, reducescatter, broadcast, reduce)`},
		{CollectiveRun{Op: CollAllReduce, Bytes: 0, MTU: 4096}, "workload.size: 0 is out of range for a collective (1 to 1073741824 bytes)"},
		{CollectiveRun{Op: CollAllReduce, Bytes: 8, MTU: 3000}, "link.mtu: 3000 is not an IB MTU (256, 512, 1024, 2048, 4096)"},
		{CollectiveRun{Op: CollAllReduce, Bytes: 8, MTU: 4096, SliceBytes: -1}, "workload.slice_bytes: -1 is out of range (0 for 524288, up to 1073741824)"},
		{CollectiveRun{Op: CollAllReduce, Bytes: 8, MTU: 4096, ReduceGBps: -2}, "workload.reduce_gbps: -2 is out of range (0 for free, up to 1e6 GB/s)"},
		{CollectiveRun{Op: CollAllReduce, Bytes: 8, MTU: 4096, Root: 1}, "workload.root: 1 is set, but workload.kind allreduce has no root (a broadcast's or reduce's; set workload.kind: broadcast or reduce, or remove the key)"},
		{CollectiveRun{Op: CollBroadcast, Bytes: 8, MTU: 4096, Root: -1}, "workload.root: -1 is not a rank (0 to the topology's hosts − 1)"},
	} {
		assert.EqualError(t, tc.run.Validate(), tc.want)
	}
	// An all-to-all needs a byte per rank.
	s, devs := collSwitch(t, 4, perftestLink("EDR"), hca.Defaults())
	_, err := RunCollectiveOn(s, devs, CollectiveRun{Op: CollAllToAll, Bytes: 3, MTU: 4096})
	assert.EqualError(t, err, "workload.size: 3 bytes is less than one byte per rank for an all-to-all over 4 ranks")
	// A root past the ranks is refused once they are known.
	s, devs = collSwitch(t, 4, perftestLink("EDR"), hca.Defaults())
	_, err = RunCollectiveOn(s, devs, CollectiveRun{Op: CollReduce, Bytes: 8, MTU: 4096, Root: 4})
	assert.EqualError(t, err, "workload.root: 4 is not a rank of the reduce over 4 ranks (0 to 3)")
}

// BenchmarkRingAllReduce8x1MiB reports simulated all-reduce payload bytes
// (2(n−1)/n · S per rank, all ranks) per wall-second: 8 EDR ranks on one
// switch, 1 MiB.
func BenchmarkRingAllReduce8x1MiB(b *testing.B) {
	const n, size = 8, 1 << 20
	for i := 0; i < b.N; i++ {
		s, devs := collSwitch(b, n, perftestLink("EDR"), hca.Defaults())
		if _, err := RunCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: size, MTU: 4096, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*n*2*(n-1)/n*size/b.Elapsed().Seconds(), "bytes/s")
}

func TestCollectiveHostMemoryLimit(t *testing.T) {
	// Each rank registers 2·S bytes. 8 ranks of 1 GiB need 8 × 2 × 2^30 =
	// 2^34 bytes, over the 2^33 limit; the largest size that fits is
	// 2^33 / (2 × 8) = 2^29 = 536870912. Refused before any buffer exists.
	s, devs := collSwitch(t, 8, perftestLink("EDR"), hca.Defaults())
	_, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 1 << 30, MTU: 4096, Seed: 1})
	assert.EqualError(t, err, "workload.size: 1073741824 bytes over 8 ranks needs 17179869184 bytes of simulated host memory "+
		"(2 × size per rank), more than the 8589934592 one run may hold (a model limit: every byte is stored and checked); 536870912 bytes or less fits")
	// Exactly at the limit: 4 ranks of 1 GiB are 2^33 bytes. Only the check
	// is run here (building would allocate the 8 GiB).
	sched, err := RingAllReduce(4, 1<<30)
	require.NoError(t, err)
	assert.NoError(t, checkHostBytes(sched))
	sched, err = AllToAll(4, 1<<30+4)
	require.NoError(t, err)
	assert.Error(t, checkHostBytes(sched), "2 × (2^30 + 4) × 4 bytes is over")
	// An all-gather lands in the data itself: S per rank. 16 ranks of
	// 1 GiB need 2^34 bytes; 2^33 / 16 = 2^29 fits.
	sched, err = RingAllGather(16, 1<<30)
	require.NoError(t, err)
	assert.EqualError(t, checkHostBytes(sched), "workload.size: 1073741824 bytes over 16 ranks needs 17179869184 bytes of simulated host memory "+
		"(size per rank), more than the 8589934592 one run may hold (a model limit: every byte is stored and checked); 536870912 bytes or less fits")
	sched, err = RingAllGather(8, 1<<30)
	require.NoError(t, err)
	assert.NoError(t, checkHostBytes(sched), "8 ranks of 1 GiB: exactly 2^33")
}

func TestCollectiveWriteLimit(t *testing.T) {
	// A 1 MiB ring all-reduce over 4 ranks has 2(4−1) = 6 steps in which
	// each of the 4 ranks sends one 1 MiB / 4 = 262144-byte chunk: 24
	// transfers. One-byte slices make 24 × 262144 = 6291456 writes, over
	// the 2^21 = 2097152 limit. The smallest slice that fits needs
	// ceil(262144 / s) ≤ 2097152 / 24 = 87381.33: s = 3 gives 87382, one
	// too many; s = 4 gives 65536.
	s, devs := collSwitch(t, 4, perftestLink("EDR"), hca.Defaults())
	_, err := BuildCollectiveOn(s, devs, CollectiveRun{Op: CollAllReduce, Bytes: 1 << 20, MTU: 4096, SliceBytes: 1, Seed: 1})
	assert.EqualError(t, err, "workload.slice_bytes: 1 cuts the 1048576-byte allreduce over 4 ranks into 6291456 RDMA writes, "+
		"more than the 2097152 one run may post (a model limit on memory and run time); 4 bytes or more fits")

	// 4-byte slices, 24 × 65536 = 1572864 writes, fit.
	sched, err := RingAllReduce(4, 1<<20)
	require.NoError(t, err)
	assert.EqualValues(t, 6291456, sched.Writes(1))
	assert.NoError(t, checkWrites(sched, 4, 1))

	// A ring over 1025 ranks posts 2·1025·1024 = 2099200 writes even with
	// whole chunks (one per rank per step): no slice size helps.
	sched, err = RingAllReduce(1025, 8)
	require.NoError(t, err)
	assert.EqualError(t, checkWrites(sched, DefaultSliceBytes, 1), "workload.kind: allreduce over 1025 ranks posts 2099200 RDMA writes "+
		"even with every transfer whole, more than the 2097152 one run may post (a model limit on memory and run time)")
	// 1024 ranks, 2·1024·1023 = 2095104 writes, fit.
	sched, err = RingAllReduce(1024, 8)
	require.NoError(t, err)
	assert.NoError(t, checkWrites(sched, DefaultSliceBytes, 1))
}

// TestCollectiveReportsTranslationMisses: with address translation on, a
// collective reports its HCAs' pooled MTT miss rate, as a perftest reports
// each host's. With 1 GiB pages each rank's registered buffer (2 × size
// bytes from about 1 MiB, far below 1 GiB) is one page, so each of the n
// HCAs misses once, on its first translation, and every later one hits.
// Every WRITE is translated twice, its gather element at the sender's WQE
// decode and its RETH range at the receiver's first packet (the receive
// WQE a WRITE WITH IMMEDIATE takes has no buffer), so the rate is
// n / (2 × rdma_writes). Off, there is no rate to report.
func TestCollectiveReportsTranslationMisses(t *testing.T) {
	for _, op := range []string{CollAllToAll, CollAllReduce} {
		const n = 4
		cfg := hca.Defaults()
		cfg.MTTCacheEntries, cfg.MTTPageBytes = 16, 1<<30
		s, devs := collSwitch(t, n, perftestLink("EDR"), cfg)
		m, err := RunCollectiveOn(s, devs, CollectiveRun{Op: op, Bytes: 100000, MTU: 4096, Seed: 1})
		require.NoError(t, err)
		require.Equal(t, true, m["data_verified"])
		writes := float64(m["rdma_writes"].(int))
		assert.InDelta(t, n/(2*writes), m["mtt_cache_miss_rate"], 1e-12, op)

		s, devs = collSwitch(t, n, perftestLink("EDR"), hca.Defaults())
		m, err = RunCollectiveOn(s, devs, CollectiveRun{Op: op, Bytes: 100000, MTU: 4096, Seed: 1})
		require.NoError(t, err)
		assert.NotContains(t, m, "mtt_cache_miss_rate", op)
	}
}

// TestAddBytes: the eight-at-a-time sum equals the byte-by-byte uint8 sum
// (wrapping) on random data, on lengths around the eight-byte word, and on
// the carry cases (0x80 + 0x80, 0xff + 0x01, 0x7f + 0x01 in every byte).
func TestAddBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 4096 + 3} {
		a, b := make([]byte, n), make([]byte, n+5) // b may be longer
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		want := make([]byte, n)
		for i := range want {
			want[i] = a[i] + b[i]
		}
		addBytes(a, b)
		assert.Equal(t, want, a, "n=%d", n)
	}
	for _, c := range [][2]byte{{0x80, 0x80}, {0xff, 0x01}, {0x7f, 0x01}, {0xff, 0xff}, {0, 0}} {
		a, b := make([]byte, 16), make([]byte, 16)
		for i := range a {
			a[i], b[i] = c[0], c[1]
		}
		addBytes(a, b)
		for i := range a {
			assert.Equal(t, c[0]+c[1], a[i], "%#x + %#x, byte %d", c[0], c[1], i)
		}
	}
}

func TestFirstDiff(t *testing.T) {
	a := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
	assert.Equal(t, -1, firstDiff(a, a))
	for k := range a {
		b := append([]byte(nil), a...)
		b[k]++
		assert.Equal(t, k, firstDiff(a, b))
	}
}

// BenchmarkReduceData: the data side of a reduce, the uint8 sum of a 64 KiB
// landed slice into the rank's buffer.
func BenchmarkReduceData(b *testing.B) {
	x, y := make([]byte, 64<<10), make([]byte, 64<<10)
	b.SetBytes(int64(len(x)))
	for b.Loop() {
		addBytes(x, y)
	}
}
