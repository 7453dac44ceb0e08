package workload

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// DefaultSliceBytes is the largest RDMA WRITE a collective posts: a
// transfer of the schedule longer than this is cut into slices, and a rank
// forwards each slice as soon as it has arrived, so the ring pipelines
// within a step. Assumed: NCCL's simple protocol moves data through a FIFO
// of NCCL_STEPS = 8 slots of NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 = 512 KiB
// (nccl src/include/device.h, src/init.cc), so a network send is at most
// one slot; NCCL's own slice (ALLREDUCE_SLICESTEPS = NCCL_STEPS/4 slots) is
// not modelled further.
const DefaultSliceBytes = 512 << 10

// NCCLSteps is the depth of NCCL's FIFO between a sender and a receiver
// on one connection (NCCL_STEPS, nccl src/include/device.h): a sender
// writes step s only once the receiver has freed step s − NCCLSteps
// (prims_simple.h waitPeer: the sender waits while head + NCCL_STEPS <
// step + StepPerSlice), so it runs at most that many slices ahead of what
// its receiver has consumed. The tree's driver keeps that window
// (collective.window); the other schedules post unpaced. With
// workload.flow_control: cts the ring and the tree keep NCCL's FIFOs
// themselves, slots and clear-to-send entries (collective_cts.go).
const NCCLSteps = 8

// CollectiveRun is one collective (Collectives: an all-reduce by one of
// AllReduceAlgorithms, all-to-all, all-gather, reduce-scatter, broadcast or
// reduce) over RDMA WRITEs with immediate on HCAs already attached to a
// fabric.
type CollectiveRun struct {
	Op    string // one of Collectives
	Bytes int64  // the collective's size S per rank, as nccl-tests' size
	MTU   int    // path MTU of every connection
	// SliceBytes is the largest RDMA WRITE; longer transfers are cut into
	// slices that forward independently. 0 takes DefaultSliceBytes.
	SliceBytes int64
	// ReduceGBps is the rate, GB/s (10⁹ bytes/s), at which a rank adds a
	// received slice into its buffer, charged to the application thread
	// before it forwards the slice. 0 makes the reduction free: assumed, as
	// a GPU reduces at memory bandwidth (TB/s), far above any IB link, and
	// NCCL overlaps it with the transfers.
	ReduceGBps float64
	Seed       uint64  // fills the buffers and draws the PSNs
	MaxTimeNs  float64 // simulated-time guard; 0 = 1 s
	// SL is the service level of every connection (NCCL_IB_SL), 0..15.
	SL int
	// Algorithm is the all-reduce's (AllReduceAlgorithms; empty: the
	// ring). All-to-all has one.
	Algorithm string
	// Root is a broadcast's source and a reduce's destination rank
	// (nccl-tests -r), 0 … ranks−1; the other operations have none (0).
	Root int
	// Iterations and Warmup are nccl-tests' -n and -w: Warmup untimed
	// iterations, then Iterations timed ones (0 is 1), back to back on the
	// same connections and buffers (collective_iter.go).
	Iterations, Warmup int
	// Channels is the ring all-reduce's NCCL channels (0 is 1):
	// RingAllReduceChannels.
	Channels int
	// FlowControl is how a sender learns that its receiver has room:
	// FlowNone ("" too), the writes are posted unpaced into the landing
	// buffers; FlowCTS, NCCL's net IB clear-to-send, in which every write
	// waits for its receiver's FIFO entry (collective_cts.go), and a
	// looped run goes back to back as nccl-tests' does.
	FlowControl string
	// Average is how a back-to-back run combines the ranks' times
	// (nccl-tests -a, AverageModes); "" is AvgMean, nccl-tests' default.
	Average string
	// Protocol is NCCL's protocol (Protocols; "" is ProtoSimple): with
	// ProtoLL or ProtoLL128 (FlowCTS only) every write carries the
	// protocol's lines, flags in the data, through FIFO slots of its step,
	// and the receiver takes it in when its flags are visible
	// (collective_proto.go).
	Protocol string
	// Barrier, with FlowCTS, starts every iteration on every rank once the
	// last finished the one before, as without flow control: the barriered
	// loop to compare the back-to-back one with (not a config key).
	Barrier bool
}

// Validate checks the run's own knobs.
func (r *CollectiveRun) Validate() error {
	if !slices.Contains(Collectives, r.Op) {
		return fmt.Errorf("workload.kind: %q is not a collective (%s)", r.Op, strings.Join(Collectives, ", "))
	}
	if r.Bytes < 1 || r.Bytes > 1<<30 {
		return fmt.Errorf("workload.size: %d is out of range for a collective (1 to 1073741824 bytes)", r.Bytes)
	}
	if !ib.ValidMTU(r.MTU) {
		return fmt.Errorf("link.mtu: %d is not an IB MTU (256, 512, 1024, 2048, 4096)", r.MTU)
	}
	if r.SL < 0 || r.SL > 15 {
		return fmt.Errorf("workload.sl: %d is not a service level (0 to 15)", r.SL)
	}
	if r.SliceBytes < 0 || r.SliceBytes > 1<<30 {
		return fmt.Errorf("workload.slice_bytes: %d is out of range (0 for %d, up to 1073741824)", r.SliceBytes, DefaultSliceBytes)
	}
	if math.IsNaN(r.ReduceGBps) || r.ReduceGBps < 0 || r.ReduceGBps > 1e6 {
		return fmt.Errorf("workload.reduce_gbps: %v is out of range (0 for free, up to 1e6 GB/s)", r.ReduceGBps)
	}
	if err := checkAlgorithm(r.Op, r.Algorithm, "workload"); err != nil {
		return err
	}
	if err := checkCollectiveLoop(r.Op, r.Algorithm, r.Iterations, r.Warmup, r.Channels, "workload"); err != nil {
		return err
	}
	if err := checkFlowControl(r.Op, r.Algorithm, r.FlowControl, r.Average, "workload"); err != nil {
		return err
	}
	if err := checkProtocol(r.Op, r.Algorithm, r.Protocol, r.FlowControl, r.SliceBytes, "workload"); err != nil {
		return err
	}
	return checkRootKind(r.Op, r.Root, "workload")
}

// Collective is a built collective: build it, let observers attach, Run it.
type Collective struct {
	c *collective
	// OnEnd, if set, is called when the collective ends (every rank done),
	// at the instant the simulation would stop, in place of stopping it: it
	// must stop it or set a time limit (Sim.StopAt), and may let it run on,
	// so that acks and flow-control packets still on the wire land for the
	// checkers. The metrics Run returns are taken before OnEnd, so they are
	// those of a run stopped there.
	OnEnd func()
}

// Sim returns the simulation.
func (c *Collective) Sim() *components.Sim { return c.c.s }

// Schedule returns the schedule the ranks run.
func (c *Collective) Schedule() Schedule { return c.c.sched }

// Event kinds of the collective driver: evCollApp wakes the application
// thread of rank ev.Arg; evCollCredit is a freed FIFO slot's credit
// reaching sender ev.Arg (collective.window).
const (
	evCollStart uint8 = iota + 1
	evCollApp
	evCollCredit
)

// sliceSend is one RDMA WRITE WITH IMMEDIATE a rank posts.
type sliceSend struct {
	xfer  *Transfer
	slice int   // slice number within the transfer
	off   int64 // byte offset of the slice within the transfer
	n     int64 // bytes
	// waits[w0:w1] of the rank are the arrival slots (step × maxSlices +
	// slice) the slice's bytes need (waitSlots).
	w0, w1 int32
	conn   int32 // the connection it is posted on: an index in collRank.sendQP
}

// connection is one of a rank's send connections: one RC QP to a peer for
// the transfers of one lane (Transfer.Lane). NCCL connects each channel to
// each of its peers on a connection of its own, with QPs of its own
// (transport/net.cc sets up a connector per channel and peer;
// net_ib.cc's ncclIbConnect creates that connection's QPs), so the double
// binary tree's two trees, each one channel here, never share a send
// queue, even where both have an edge between the same two ranks. A rank
// with one lane (every schedule but the tree) has one connection a peer.
type connection struct {
	dst, lane int
	slices    int // slices posted on it over the run
}

// collRank is one rank: its HCA, buffers, connections and progress.
type collRank struct {
	index  int // the rank
	dev    *hca.Device
	sendCQ *hca.CQ
	recvCQ *hca.CQ
	// sendQP[i] is the QP of conns[i]: one per destination and lane, in
	// destination order, then lane order.
	sendQP []*hca.QP
	conns  []connection
	// recvQP lists the QPs peers write to, in the order they were
	// connected, with the receives an iteration takes on each.
	recvQP []recvConn
	// src is the send buffer: all-reduce's data (reduced in place),
	// all-to-all's send blocks. dst is where peers write: all-reduce's
	// scratch for reduce-scatter slices, all-to-all's receive blocks.
	// All-gather slices land in src directly.
	src, dst uint64
	mr       hca.MR

	sends   []sliceSend // step by step, slice by slice: each lane's posting order (lanes)
	waits   []int32     // the sends' arrival slots, each send's a run (sliceSend.w0, w1)
	next    int         // sends posted
	sent    int         // send completions polled
	arrived []bool      // by step × maxSlices + slice: the slice landed (and was reduced)
	got     []bool      // by slot: the slice landed (it may wait to be reduced: deferred)
	gotAt   []ib.PS     // by slot: when its receive completion was polled
	// defer0[k]:defer1[k] of deferIdx are the rank's own sends (indexes in
	// sends) that must complete before slot k's data is added in: the
	// sends of the same step that read the bytes it adds into (an
	// exchange: recursive doubling).
	defer0, defer1 []int32
	deferIdx       []int32
	sendDone       []bool   // by send index: its completion was polled
	deferred       []uint32 // landed slots waiting for their sends (with the clear-to-send: for their forward's send slot), in arrival order
	recvs          int      // receive completions polled
	expect         int      // receive completions due
	pending        bool     // an application wake-up is queued
	done           bool
	doneAt         ib.PS
	reduceNs       float64 // ns of reduction charged
	// lanes[l] lists the indexes in sends of lane l's slices, in posting
	// order (Transfer.Lane; lanes numbered by first appearance);
	// laneNext[l] of them are posted.
	lanes    [][]int32
	laneNext []int
	// With a FIFO window (collective.window > 0), by slot: readers[k] of
	// the rank's own sends that read slot k are still to be posted, and
	// creditAt[k] is when the slot's sender learns it is free (landed,
	// reduced, and every send reading it posted: NCCL's receiver has
	// copied it on), noCredit until then. postedAt is when each send was
	// posted.
	readers  []int32
	creditAt []ib.PS
	postedAt []ib.PS
	// cts is the rank's clear-to-send state (FlowCTS), nil without.
	cts *ctsRank
}

// recvConn is one of a rank's receive connections: its QP and the
// receives one iteration takes on it (a WRITE WITH IMMEDIATE consumes one).
type recvConn struct {
	qp *hca.QP
	n  int
	// src is the sending rank, srcConn the connection's index in its
	// sendQP (FlowCTS: where its clear-to-send FIFO is).
	src, srcConn int
}

// postRecvs posts the receives of rank rk's receive connection i for one
// iteration: at the set-up, and between iterations (nextIteration).
func (c *collective) postRecvs(rk *collRank, i int) {
	rc := rk.recvQP[i]
	for k := 0; k < rc.n; k++ {
		// A WRITE WITH IMMEDIATE places no bytes in the receive buffer;
		// the WQE only carries the completion.
		if err := rk.dev.PostRecv(rc.qp, &hca.RecvWR{ID: uint64(k), Addr: rk.dst, LKey: rk.mr.LKey}); err != nil {
			panic(fmt.Sprintf("workload: collective: post_recv on rank %d: %v", rk.index, err))
		}
	}
}

// collHook, set only by tests (TestTreeCTSWarmIteration), is told of
// the driver's steps that the HCAs' own hooks (OnCQE, OnMemWrite) do not
// show, at the simulated time of the turn that takes them (the
// simulation's Now): rank r's post of data write i (an index in its
// sends), its taking in of arrival slot imm, its polling of write i's
// completion, and its end of an iteration (its CPU free then is the end).
var collHook *collHooks

// collHooks are collHook's calls.
type collHooks struct {
	post  func(r, i int)
	apply func(r int, imm uint32)
	sent  func(r, i int)
	done  func(r int)
}

// noCredit marks a FIFO slot not yet freed.
const noCredit = ib.PS(math.MaxInt64)

// collective drives every rank's application thread.
type collective struct {
	run   CollectiveRun
	s     *components.Sim
	sched Schedule
	ranks []*collRank
	slice int64 // slice bytes in force
	// window is how many slices a sender may post on a connection beyond
	// the last its receiver has freed: NCCLSteps for the tree (NCCL's FIFO
	// of NCCL_STEPS slots), 0 (unbounded) for the other schedules, whose
	// results predate it, and for the tree with the clear-to-send, whose
	// FIFO slots and entries are modelled instead (cts).
	window    int
	maxSlices int
	recvOf    [][]*Transfer // [step][dst] → the transfer dst receives in step
	start     ib.PS
	end       ib.PS
	finished  int
	started   bool
	errs      []string
	result    map[string]any // the metrics, taken at the end
	onEnd     func()         // Collective.OnEnd
	scratch   []byte         // reduction buffer, reused
	// want is what every rank's buffer must hold at the end (fill), S
	// bytes; nil for all-to-all, whose check draws the streams again.
	want []byte
	// sharp drives the in-network all-reduce (AlgSharp) in place of the
	// schedule, nil for every other collective.
	sharp *sharpState
	// iter is the iteration running, 0 … run.iterations()−1 (warm-up
	// ones first); iterTime holds each finished one's time, start to the
	// last rank done.
	iter     int
	iterTime []ib.PS
	// firstDone is when the first rank of the running iteration was done;
	// iterWait holds, per finished iteration, the last rank's end less
	// the first's: how long the first waited for the next iteration.
	firstDone ib.PS
	iterWait  []ib.PS
	// cts is set with FlowCTS, b2b with it unless run.Barrier: each rank
	// starts its next iteration when it is done with its own
	// (collective_cts.go). phaseEnd is, back to back, the iteration the
	// running phase ends before (the warm-up's, then the run's), and
	// slotBytes each receive FIFO slot's size.
	cts, b2b  bool
	phaseEnd  int
	slotBytes int64
	warmStart ib.PS // back to back: when the warm-up began
	// proto is the protocol in force (Protocols); lines is set for LL and
	// LL128, whose writes carry flags in their lines (collective_proto.go).
	proto string
	lines bool
	// wireBuf and lineBuf are reused for a write's lines and its data.
	wireBuf, lineBuf []byte
}

// RunCollectiveOn builds the collective on devs (rank i on devs[i], attached
// to one fabric in s) and runs it.
func RunCollectiveOn(s *components.Sim, devs []*hca.Device, run CollectiveRun) (map[string]any, error) {
	c, err := BuildCollectiveOn(s, devs, run)
	if err != nil {
		return nil, err
	}
	return c.Run()
}

// BuildCollectiveOn sets the collective up on devs: per rank a protection
// domain, a send and a receive CQ, a buffer pair registered and filled; per
// ordered pair of ranks that the schedule connects one RC QP at each end;
// and every receive the run needs pre-posted (each WRITE WITH IMMEDIATE
// consumes one), all before the timed part starts.
func BuildCollectiveOn(s *components.Sim, devs []*hca.Device, run CollectiveRun) (*Collective, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	var sched Schedule
	var err error
	switch run.Op {
	case CollAllReduce:
		if run.Channels > 1 {
			sched, err = RingAllReduceChannels(len(devs), run.Channels, run.Bytes)
			break
		}
		sched, err = AllReduce(run.Algorithm, len(devs), run.Bytes)
	case CollAllGather:
		sched, err = RingAllGather(len(devs), run.Bytes)
	case CollReduceScatter:
		sched, err = RingReduceScatter(len(devs), run.Bytes)
	case CollBroadcast:
		sched, err = RingBroadcast(len(devs), run.Root, run.Bytes)
	case CollReduce:
		sched, err = RingReduce(len(devs), run.Root, run.Bytes)
	default:
		sched, err = AllToAll(len(devs), run.Bytes)
	}
	if err != nil {
		return nil, err
	}
	c := newCollective(run, sched)
	c.s = s
	if err := checkHostBytes(c.hostSched()); err != nil {
		return nil, err
	}
	if err := checkWrites(sched, c.slice, run.iterations()); err != nil {
		return nil, err
	}
	c.setup(devs)
	return &Collective{c: c}, nil
}

// newCollective makes the driver of sched without a simulation: the slice
// size in force and who receives what in each step.
func newCollective(run CollectiveRun, sched Schedule) *collective {
	c := &collective{run: run, sched: sched, slice: run.SliceBytes}
	if c.slice == 0 {
		c.slice = DefaultSliceBytes
		if sched.Algorithm == AlgTree {
			c.slice = treeSliceBytes(sched.Bytes, sched.Ranks)
		}
		if sched.Algorithm == AlgRabenseifner {
			// MPI's halving and doubling sends each step's range as one
			// message (MPICH: one MPI_Sendrecv a step). Sliced, a step
			// forwards only once the previous step's last slices came (a
			// rank sends the half of its range that arrived last), and the
			// HCA interleaves the next step's slices with the current
			// one's on the link, so slicing gains nothing (docs/fabric.md).
			c.slice = 1
			for _, step := range sched.Steps {
				for _, x := range step {
					c.slice = max(c.slice, x.Bytes)
				}
			}
		}
	}
	c.cts = run.FlowControl == FlowCTS
	c.proto = cmpOr(run.Protocol, ProtoSimple)
	c.lines = c.proto != ProtoSimple
	if c.lines && run.SliceBytes == 0 && protoMutant != mutSimpleSteps {
		// NCCL's ring and tree send one FIFO step a chunk under LL and
		// LL128 (all_reduce.h: runRing's chunkSize, calcBytePerStep × 1;
		// runTreeSplit's, LL's step; LL128's, enqueue.cc's chunk).
		c.slice = protoStepData(c.proto)
		if sched.Algorithm == AlgTree && c.proto == ProtoLL128 {
			c.slice = treeLL128SliceBytes(sched.Bytes, sched.Ranks)
		}
	}
	if sched.Algorithm == AlgTree && !c.cts {
		// With the clear-to-send the FIFO is its slots (collective_cts.go).
		c.window = NCCLSteps
	}
	c.b2b = c.cts && !run.Barrier
	c.phaseEnd = run.iterations()
	if c.b2b && run.Warmup > 0 {
		c.phaseEnd = run.Warmup
	}
	n := sched.Ranks
	c.recvOf = make([][]*Transfer, len(sched.Steps))
	for t := range sched.Steps {
		c.recvOf[t] = make([]*Transfer, n)
		for k := range sched.Steps[t] {
			x := &sched.Steps[t][k]
			c.maxSlices = max(c.maxSlices, c.sliceCount(x.Bytes))
			if c.recvOf[t][x.Dst] != nil {
				panic(fmt.Sprintf("workload: collective %s step %d: rank %d receives twice", sched.Op, t, x.Dst))
			}
			c.recvOf[t][x.Dst] = x
		}
	}
	return c
}

// sendsOf returns rank r's slice sends in posting order (step by step,
// slice by slice) and the arrival slots they wait on (sliceSend.w0, w1).
func (c *collective) sendsOf(r int) (sends []sliceSend, waits []int32) {
	for t := range c.sched.Steps {
		for k := range c.sched.Steps[t] {
			x := &c.sched.Steps[t][k]
			if x.Src != r {
				continue
			}
			for sl := 0; sl < c.sliceCount(x.Bytes); sl++ {
				off, ln := c.sliceOf(x.Bytes, sl)
				w0 := int32(len(waits))
				waits = c.waitSlots(waits, x, sl, off, ln)
				sends = append(sends, sliceSend{xfer: x, slice: sl, off: off, n: ln, w0: w0, w1: int32(len(waits))})
			}
		}
	}
	return sends, waits
}

// lanesOf groups sends by their transfers' lanes, numbered in order of
// first appearance: each lane's indexes in sends, in posting order.
func lanesOf(sends []sliceSend) [][]int32 {
	var ids []int
	var lanes [][]int32
	for i := range sends {
		l := slices.Index(ids, sends[i].xfer.Lane)
		if l < 0 {
			l = len(ids)
			ids = append(ids, sends[i].xfer.Lane)
			lanes = append(lanes, nil)
		}
		lanes[l] = append(lanes[l], int32(i))
	}
	return lanes
}

// MaxCollectiveWrites is the most RDMA writes one collective run posts, all
// ranks together: a limit of the model, not of the hardware. Every write is
// set up before the run (a slot in a send queue sized to hold them all, a
// pre-posted receive, a completion), which costs some 700 bytes of memory
// and 30 µs of wall time a write (measured: 1.57 million writes, 1.1 GB,
// 53 s), so 2^21 writes is about 1.5 GB and a minute. It admits a ring
// all-reduce over 1024 ranks (2·1024·1023 writes unsliced); without it a
// slice_bytes of a few bytes on a large collective runs the machine out of
// memory instead of saying what is wrong.
const MaxCollectiveWrites = 1 << 21

// MaxCollectiveHostBytes bounds the simulated host memory of one collective
// run, all ranks together: each rank registers 2·S bytes (its data and its
// landing half; with the clear-to-send, S and its receive FIFOs) and the model stores every byte, since the run checks the
// data it moved. Without it a large size over many ranks runs the machine
// out of memory instead of saying what is wrong. 8 GiB of buffers is about
// 8.5 GB resident at most: a reduction's landed slices give their pages
// back once added in (reduce), so its landing half costs less, and the
// check keeps S bytes more (fill).
const MaxCollectiveHostBytes = 8 << 30

// checkHostBytes refuses a run whose buffers exceed MaxCollectiveHostBytes,
// naming the largest workload.size that fits.
func checkHostBytes(s Schedule) error {
	need := (s.Bytes + s.Landing) * int64(s.Ranks)
	if need <= MaxCollectiveHostBytes {
		return nil
	}
	if s.Landing == s.Bytes {
		return fmt.Errorf("workload.size: %d bytes over %d ranks needs %d bytes of simulated host memory (2 × size per rank), more than the %d one run may hold (a model limit: every byte is stored and checked); %d bytes or less fits",
			s.Bytes, s.Ranks, need, int64(MaxCollectiveHostBytes), MaxCollectiveHostBytes/(2*int64(s.Ranks)))
	}
	if s.Landing == 0 { // all-gather, broadcast: peers write into the data itself
		return fmt.Errorf("workload.size: %d bytes over %d ranks needs %d bytes of simulated host memory (size per rank), more than the %d one run may hold (a model limit: every byte is stored and checked); %d bytes or less fits",
			s.Bytes, s.Ranks, need, int64(MaxCollectiveHostBytes), MaxCollectiveHostBytes/int64(s.Ranks))
	}
	// The MPI all-reduces land a step's receive in a place of its own
	// (Rabenseifner's halves, recursive doubling's whole vectors, a folded
	// rank's vector first): the landing area is not a fixed multiple of the
	// size, so the size that fits is scaled from this one, rounded down.
	fits := int64(float64(MaxCollectiveHostBytes) / float64(need) * float64(s.Bytes))
	return fmt.Errorf("workload.size: %d bytes over %d ranks needs %d bytes of simulated host memory (size + %d bytes of landing area per rank, workload.algorithm %s), more than the %d one run may hold (a model limit: every byte is stored and checked); about %d bytes or less fits",
		s.Bytes, s.Ranks, need, s.Landing, s.Algorithm, int64(MaxCollectiveHostBytes), fits)
}

// Writes returns how many RDMA writes the schedule posts, all ranks
// together, when its transfers are cut into slices of at most slice bytes
// (a zero-byte transfer is still one write).
func (s Schedule) Writes(slice int64) int64 {
	var n int64
	for _, step := range s.Steps {
		for _, x := range step {
			n += max(1, (x.Bytes+slice-1)/slice)
		}
	}
	return n
}

// checkWrites refuses a run that would post more than MaxCollectiveWrites
// writes over its iterations (warm-up and timed), naming the smallest
// workload.slice_bytes that fits, if one does.
func checkWrites(s Schedule, slice int64, iters int) error {
	runs := int64(iters)
	n := s.Writes(slice) * runs
	if n <= MaxCollectiveWrites {
		return nil
	}
	// Said only when the run loops, so the one-iteration messages stay as
	// they were.
	over := ""
	if iters > 1 {
		over = fmt.Sprintf(" in %d iterations (workload.collective_warmup + collective_iterations)", iters)
	}
	var largest int64
	for _, step := range s.Steps {
		for _, x := range step {
			largest = max(largest, x.Bytes)
		}
	}
	if s.Writes(max(largest, 1))*runs > MaxCollectiveWrites {
		return fmt.Errorf("workload.kind: %s over %d ranks posts %d RDMA writes%s even with every transfer whole, more than the %d one run may post (a model limit on memory and run time)",
			s.Op, s.Ranks, s.Writes(max(largest, 1))*runs, over, MaxCollectiveWrites)
	}
	// Writes falls as the slice grows: the smallest slice that fits lies in
	// (slice, largest].
	lo, hi := slice, max(largest, 1)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if s.Writes(mid)*runs <= MaxCollectiveWrites {
			hi = mid
		} else {
			lo = mid
		}
	}
	return fmt.Errorf("workload.slice_bytes: %d cuts the %d-byte %s over %d ranks into %d RDMA writes%s, more than the %d one run may post (a model limit on memory and run time); %d bytes or more fits",
		slice, s.Bytes, s.Op, s.Ranks, n, over, MaxCollectiveWrites, hi)
}

// sliceCount is how many slices a transfer of b bytes is posted as (a
// zero-byte transfer is still one WRITE WITH IMMEDIATE: the signal).
func (c *collective) sliceCount(b int64) int {
	return int(max(1, (b+c.slice-1)/c.slice))
}

// sliceOf returns slice k's offset and length within a transfer of b bytes.
func (c *collective) sliceOf(b int64, k int) (off, n int64) {
	return chunk(b, c.sliceCount(b), k)
}

// pow2 returns the least power of two ≥ max(v, 1).
func pow2(v int) int {
	p := 1
	for p < v {
		p *= 2
	}
	return p
}

// rankStream is rank r's initial buffer as a stream: S bytes from its own
// PCG (seed, r), eight at a time, little-endian. Buffers are generated a
// chunk at a time, never whole: a run holds every rank's 2·S bytes of
// simulated host memory, and the set-up adds a chunk and the S bytes the
// check wants (fill).
// The PCG is called directly, not through a rand.Rand: Rand.Uint64 is the
// source's Uint64 behind an interface call, so the bytes are the same
// (TestRankStreamChunksJoin draws them through a rand.Rand).
type rankStream struct {
	rng  *rand.PCG
	left int64 // bytes of the stream not yet generated
}

func (c *collective) rankStream(r int) rankStream {
	return rankStream{rng: rand.NewPCG(c.run.Seed, 0xc011ec7+uint64(r)), left: c.sched.Bytes}
}

// streamChunk is how many bytes of a rank's stream are generated at once; a
// multiple of 8, so chunks join into the one stream.
const streamChunk = 64 << 10

// next fills buf (len a multiple of 8, or the stream's end) with the
// stream's next bytes and returns them; empty at the end.
func (g *rankStream) next(buf []byte) []byte {
	n := min(int64(len(buf)), g.left)
	g.left -= n
	// Whole words, four a step through a 32-byte window of constant
	// length (no store bounds-checked), then the stream's last few bytes
	// from one more word.
	b := buf[:n]
	for len(b) >= 32 {
		s := b[:32:32]
		binary.LittleEndian.PutUint64(s[0:], g.rng.Uint64())
		binary.LittleEndian.PutUint64(s[8:], g.rng.Uint64())
		binary.LittleEndian.PutUint64(s[16:], g.rng.Uint64())
		binary.LittleEndian.PutUint64(s[24:], g.rng.Uint64())
		b = b[32:]
	}
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, g.rng.Uint64())
		b = b[8:]
	}
	if len(b) > 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], g.rng.Uint64())
		copy(b, w[:])
	}
	return buf[:n]
}

// fill writes every rank's stream into its buffer and keeps what the
// check will want (c.want): the streams are walked side by side, a chunk
// at a time, each drawn once. All-reduce, reduce-scatter and reduce want
// the bytewise uint8 sum of every rank's stream, all-gather block j of
// rank j's stream at block j, broadcast the root's stream; each is S
// bytes, kept from here to the check. Drawing the streams again at the
// check instead cost as much PCG as the set-up (528 M instructions of an
// 8 MiB ring's 3.3 G on 16 ranks); keeping the S bytes costs one rank's
// data more memory, against the 2·S a rank already holds. All-to-all keeps
// nothing: what it wants is every rank's whole send buffer (n·S), so its
// check draws the streams again.
//
// keepWant false only restores the buffers (a looped run's next iteration,
// nextIteration): what the check wants is the same every iteration.
func (c *collective) fill(keepWant bool) {
	op, size, n := c.sched.Op, c.sched.Bytes, len(c.ranks)
	if !keepWant {
		op = "" // no op's want is kept
	} else if op != CollAllToAll {
		c.want = make([]byte, size)
	}
	block := size / int64(n) // all-gather: n whole blocks
	buf := make([]byte, streamChunk)
	streams := make([]rankStream, n)
	for r := range streams {
		streams[r] = c.rankStream(r)
	}
	for off := int64(0); off < size; off += streamChunk {
		ln := min(streamChunk, size-off)
		for r, rk := range c.ranks {
			b := streams[r].next(buf[:ln])
			rk.dev.Mem.Write(rk.src+uint64(off), b)
			switch op {
			case CollAllReduce, CollReduceScatter, CollReduce:
				addBytes(c.want[off:off+ln], b)
			case CollBroadcast:
				if r == c.sched.Root {
					copy(c.want[off:], b)
				}
			case CollAllGather:
				// The part of this chunk in rank r's own block.
				lo, hi := max(off, int64(r)*block), min(off+ln, int64(r+1)*block)
				if lo < hi {
					copy(c.want[lo:hi], b[lo-off:hi-off])
				}
			}
		}
	}
}

func (c *collective) setup(devs []*hca.Device) {
	n := len(devs)
	size := int(c.sched.Bytes)
	// Slices each rank writes to each other rank over the whole run, and
	// each rank's connections (a peer and a lane) with the slices of each.
	// (A map, set-up only: an all-to-all has n − 1 connections a rank.)
	perPair := make([][]int, n)
	conns := make([][]connection, n)
	connOf := map[[3]int]int{} // (src, dst, lane) → index in conns[src]
	for i := range perPair {
		perPair[i] = make([]int, n)
	}
	var recvConns []int
	if c.cts {
		recvConns = recvConnections(c.sched)
	}
	for _, step := range c.sched.Steps {
		for _, x := range step {
			k := c.sliceCount(x.Bytes)
			perPair[x.Src][x.Dst] += k
			key := [3]int{x.Src, x.Dst, x.Lane}
			i, ok := connOf[key]
			if !ok {
				i = len(conns[x.Src])
				connOf[key] = i
				conns[x.Src] = append(conns[x.Src], connection{dst: x.Dst, lane: x.Lane})
			}
			conns[x.Src][i].slices += k
		}
	}
	pds := make([]uint32, n)
	acc := hca.AccessLocalWrite | hca.AccessRemoteWrite
	for r, d := range devs {
		rk := &collRank{index: r, dev: d}
		sends, recvs := 0, 0
		for p := 0; p < n; p++ {
			sends += perPair[r][p]
			recvs += perPair[p][r]
		}
		rk.expect = recvs
		rk.arrived = make([]bool, len(c.sched.Steps)*c.maxSlices)
		pds[r] = d.AllocPD()
		if c.cts {
			// The clear-to-send writes complete on the send CQ, one in
			// NCCLSteps signaled, and a receive CQ may hold the next
			// iteration's first NCCLSteps landings a connection as well
			// (n a channel covers the ring's one; a tree rank may have
			// more connections than ranks).
			sends, recvs = sends+recvs, 2*recvs+NCCLSteps*max(n*max(1, c.run.Channels), recvConns[r])
		}
		rk.sendCQ = d.CreateCQ(pow2(max(d.Cfg.CQDepth, sends)))
		rk.recvCQ = d.CreateCQ(pow2(max(d.Cfg.CQDepth, recvs)))
		// With the clear-to-send every write lands in a FIFO slot
		// (setupCTS): the landing area is not allocated.
		landing := int(c.sched.Landing)
		if c.cts {
			landing = 0
		}
		base := d.Malloc(size + landing)
		rk.src, rk.dst = base, base+uint64(size)
		rk.mr = d.RegMR(pds[r], base, size+landing, acc)
		rk.sends, rk.waits = c.sendsOf(r)
		rk.defer0, rk.defer1, rk.deferIdx = c.defersOf(r, rk.sends)
		if c.cts {
			c.ctsOrder(rk)
		}
		rk.lanes = lanesOf(rk.sends)
		rk.laneNext = make([]int, len(rk.lanes))
		rk.got = make([]bool, len(rk.arrived))
		rk.gotAt = make([]ib.PS, len(rk.arrived))
		rk.sendDone = make([]bool, len(rk.sends))
		if c.window > 0 {
			rk.readers = make([]int32, len(rk.arrived))
			for _, k := range rk.waits {
				rk.readers[k]++
			}
			rk.creditAt = make([]ib.PS, len(rk.arrived))
			for k := range rk.creditAt {
				rk.creditAt[k] = noCredit
			}
			rk.postedAt = make([]ib.PS, len(rk.sends))
		}
		c.ranks = append(c.ranks, rk)
	}
	c.fill(true)
	// PSNs are drawn from the seed, as perftest and NCCL draw them at random.
	rng := rand.New(rand.NewPCG(c.run.Seed, 0x95e9))
	// A send queue holds every write the rank will post on it, so posting
	// never waits for the CQ to free WQEBBs.
	bbs := hca.WQEBBs(&hca.SendWR{Opcode: hca.WRRDMAWriteImm, Length: 1})
	// Connections are made source by source, destination by destination,
	// lane by lane, so a schedule of one lane connects (and draws PSNs) in
	// the order it did before lanes had connections of their own.
	for src := 0; src < n; src++ {
		a := c.ranks[src]
		slices.SortFunc(conns[src], func(x, y connection) int {
			return cmp.Or(cmp.Compare(x.dst, y.dst), cmp.Compare(x.lane, y.lane))
		})
		for _, cn := range conns[src] {
			k, dst := cn.slices, cn.dst
			b := c.ranks[dst]
			qa := a.dev.CreateQP(pds[src], a.sendCQ, a.recvCQ, pow2(k*bbs), 1)
			var qb *hca.QP
			if c.cts {
				// The receiver's end posts the clear-to-send writes, and
				// its receives one with each (ctsGrant), not ahead.
				qb = b.dev.CreateQP(pds[dst], b.sendCQ, b.recvCQ, pow2((k+2*NCCLSteps)*ctsBBs), pow2(k+2*NCCLSteps))
			} else {
				qb = b.dev.CreateQP(pds[dst], b.sendCQ, b.recvCQ, 1, pow2(k))
			}
			if err := hca.ConnectRCSL(qa, qb, c.run.MTU, rng.Uint32()&0xFFFFFF, rng.Uint32()&0xFFFFFF, uint8(c.run.SL)); err != nil {
				panic(fmt.Sprintf("workload: collective: connect rank %d to %d: %v", src, dst, err))
			}
			a.sendQP = append(a.sendQP, qa)
			b.recvQP = append(b.recvQP, recvConn{qp: qb, n: k, src: src, srcConn: len(a.sendQP) - 1})
			if !c.cts {
				c.postRecvs(b, len(b.recvQP)-1)
			}
		}
		a.conns = conns[src]
		for i, cn := range a.conns {
			connOf[[3]int{src, cn.dst, cn.lane}] = i
		}
		for i := range a.sends {
			x := a.sends[i].xfer
			a.sends[i].conn = int32(connOf[[3]int{src, x.Dst, x.Lane}])
		}
	}
	for r, rk := range c.ranks {
		r := r
		rk.dev.OnCQE = func(_ *hca.CQ, now ib.PS) { c.wake(r, now) }
	}
	if c.cts {
		c.setupCTS(pds)
	}
}

// Run runs the collective to its end and returns the metrics.
func (cl *Collective) Run() (map[string]any, error) {
	c := cl.c
	// The timed part starts once setup (pre-posted receives and their
	// prefetch) is over, on every rank at once, as nccl-tests starts its
	// timer after a barrier.
	var setupDone ib.PS
	for _, rk := range c.ranks {
		setupDone = max(setupDone, rk.dev.CPUFreeAt())
	}
	maxT := startTimed(c.s, setupDone, c, evCollStart, c.run.MaxTimeNs)
	c.onEnd = cl.OnEnd
	if err := c.s.Run(); err != nil {
		return nil, err
	}
	if c.finished < len(c.ranks) {
		return nil, &TimeLimitError{Msg: fmt.Sprintf("%s: did not finish within %.0f ns of simulated time (%d of %d ranks done)", c.sched.Op, maxT, c.finished, len(c.ranks))}
	}
	if c.result == nil {
		// Stopped at the end (no OnEnd), or the queue ran dry first.
		c.conclude()
	}
	return c.result, nil
}

// startTimed schedules ev at h once set-up is over on every device
// (setupDone, the latest of their CPUFreeAt, plus setupSettle, so the
// receive prefetches issued during set-up land first) and stops the run
// maxTimeNs from now (1 s when 0); it returns that guard in ns, for the
// time-limit message. The collectives and the replay start so.
func startTimed(s *components.Sim, setupDone ib.PS, h components.EventHandler, ev uint8, maxTimeNs float64) float64 {
	s.Schedule(setupDone+setupSettle, h, ev)
	if maxTimeNs <= 0 {
		maxTimeNs = 1e9
	}
	s.StopAt(s.Now() + ib.FromNanoseconds(maxTimeNs))
	return maxTimeNs
}

// conclude checks the data and takes the metrics: at the end, whatever the
// simulation does after.
func (c *collective) conclude() {
	if c.b2b {
		// Every rank checked each of its iterations (rankIterDone).
		c.result = c.metrics()
		return
	}
	if c.run.looped() {
		c.checkIteration()
	} else {
		c.verify()
	}
	c.result = c.metrics()
}

// HandleEvent implements components.EventHandler: the start, or one turn
// of a rank's poll loop.
func (c *collective) HandleEvent(ev *components.Event) {
	if ev.Kind == evCollStart {
		c.begin()
		return
	}
	r := int(ev.Arg)
	if ev.Kind == evCollCredit {
		c.wake(r, c.s.Now())
		return
	}
	c.ranks[r].pending = false
	if c.sharp != nil {
		c.sharpTurn(r)
		return
	}
	c.turn(r)
}

// wake makes rank r's application thread poll at now + poll time (once).
func (c *collective) wake(r int, now ib.PS) {
	rk := c.ranks[r]
	if rk.pending || rk.done || !c.started {
		return
	}
	rk.pending = true
	at := max(now, rk.dev.CPUFreeAt()) + c.pollPS(r)
	e := c.s.Schedule(at, c, evCollApp)
	e.Arg = int64(r)
}

func (c *collective) pollPS(r int) ib.PS {
	return ib.FromNanoseconds(c.ranks[r].dev.Cfg.Host.PollNS)
}

// begin starts the timed part: every rank posts what waits for nothing.
func (c *collective) begin() {
	c.start = c.s.Now()
	c.end = c.start
	c.started = true
	if c.iter == 0 {
		c.warmStart = c.start
	}
	if c.iter == c.run.Warmup {
		// The timed part starts: the counters are the timed iterations'.
		for _, rk := range c.ranks {
			rk.dev.ResetStats()
			rk.reduceNs = 0
			if rk.cts != nil {
				rk.cts.writes = 0
			}
		}
	}
	if c.sched.Op == CollAllToAll {
		// Each rank's own block is a local copy (not timed: nccl-tests'
		// alltoall does it as a device memcpy beside the sends).
		block := c.sched.Bytes / int64(len(c.ranks))
		buf := make([]byte, block)
		for r, rk := range c.ranks {
			off := uint64(int64(r) * block)
			rk.dev.Mem.Read(rk.src+off, buf)
			rk.dev.Mem.Write(rk.dst+off, buf)
		}
	}
	for r := range c.ranks {
		if c.sharp != nil {
			c.sharpTurn(r)
			continue
		}
		if c.cts {
			c.ranks[r].done = false
			c.ctsGrant(r)
		}
		c.turn(r)
	}
}

// turn is one pass of rank r's poll loop: drain the send CQ, take every
// arrived slice (reducing it into the buffer), post every send whose input
// is there, and notice the end.
func (c *collective) turn(r int) {
	rk := c.ranks[r]
	if rk.done {
		return
	}
	c.drain(r, rk.sendCQ, func(wc hca.WC) {
		if wc.WRID&ctsWRID != 0 {
			return // a clear-to-send write (checkWC saw its status)
		}
		if rk.cts != nil {
			rk.cts.completed[rk.sends[wc.WRID].conn]++
		}
		rk.sent++
		rk.sendDone[wc.WRID] = true
		if collHook != nil {
			collHook.sent(r, int(wc.WRID))
		}
	})
	c.drain(r, rk.recvCQ, func(wc hca.WC) {
		if wc.Opcode != hca.WCRecvRDMAImm {
			c.errs = append(c.errs, fmt.Sprintf("rank %d: receive completion %v, want RDMA write with immediate", r, wc.Opcode))
			return
		}
		c.landed(r, wc.Imm)
	})
	if c.lines {
		c.linePoll(r)
	}
	c.applyDeferred(r)
	// Each lane posts its slices in order while they are ready, the lanes
	// taking turns a slice at a time (one lane: everything in order).
	for progress := true; progress; {
		progress = false
		for l, idx := range rk.lanes {
			k := rk.laneNext[l]
			if k == len(idx) || !c.ready(rk, &rk.sends[idx[k]]) {
				continue
			}
			c.post(r, int(idx[k]))
			rk.laneNext[l]++
			rk.next++
			progress = true
		}
	}
	if c.cts {
		c.ctsAdvance(rk)
		if ctsMutant != mutGrantAfterEnd || rk.next < len(rk.sends) || rk.sent < len(rk.sends) || rk.recvs < rk.expect {
			c.ctsGrant(r)
		}
	}
	if rk.next == len(rk.sends) && rk.sent == len(rk.sends) && rk.recvs == rk.expect {
		c.rankDone(r)
	}
}

// drain polls rank r's CQ cq until it is empty, checking each completion
// (checkWC) and handing it to each.
func (c *collective) drain(r int, cq *hca.CQ, each func(hca.WC)) {
	d := c.ranks[r].dev
	var wcs [64]hca.WC
	for {
		k := d.PollCQ(cq, wcs[:])
		for _, wc := range wcs[:k] {
			c.checkWC(r, wc)
			each(wc)
		}
		if k < len(wcs) {
			return
		}
	}
}

// rankDone marks rank r done when its CPU is next free (its last poll),
// and stops the run when it was the last.
func (c *collective) rankDone(r int) {
	if collHook != nil {
		collHook.done(r)
	}
	if c.b2b {
		c.rankIterDone(r)
		return
	}
	rk := c.ranks[r]
	rk.done = true
	rk.doneAt = rk.dev.CPUFreeAt()
	c.finished++
	if c.finished == 1 || rk.doneAt < c.firstDone {
		c.firstDone = rk.doneAt
	}
	c.end = max(c.end, rk.doneAt)
	if c.finished == len(c.ranks) {
		if c.iter+1 < c.run.iterations() {
			c.nextIteration()
			return
		}
		c.stop()
	}
}

// stop ends the run at c.end, the last rank's CPU free: events up to then
// still run. With an OnEnd, the metrics are taken and OnEnd called at that
// instant (when the time limit passes) instead.
func (c *collective) stop() {
	c.s.StopAt(c.end)
	if c.onEnd == nil {
		if c.end == c.s.Now() {
			c.s.Stop()
		}
		return
	}
	end := func() {
		c.conclude()
		c.onEnd()
	}
	if c.end == c.s.Now() {
		end()
		return
	}
	c.s.AtLimit(end)
}

// slot is a slice's index in a rank's arrival table and its immediate.
func (c *collective) slot(step, slice int) int { return step*c.maxSlices + slice }

// ready reports whether a send's input has arrived (and was reduced).
func (c *collective) ready(rk *collRank, s *sliceSend) bool {
	if rk.cts != nil && !c.ctsCleared(rk, s) {
		return false
	}
	if c.window > 0 && s.slice >= c.window {
		// NCCL's FIFO: slice k needs slot k − window of the receiver
		// freed, and its credit back here. (A tree connection carries one
		// transfer, so its slices are the connection's steps.)
		k := c.slot(s.xfer.Step, s.slice-c.window)
		if c.ranks[s.xfer.Dst].creditAt[k] > c.s.Now() {
			return false
		}
	}
	for _, k := range rk.waits[s.w0:s.w1] {
		if !rk.arrived[k] {
			return false
		}
	}
	return true
}

// waitSlots appends to dst the arrival slots that slice sl (bytes off, n of
// the transfer) of x needs: of each step x waits on (WaitStep, WaitAlso),
// the slices of the transfer x.Src received in it that overlap the slice's
// bytes. A transfer that forwards exactly what it received (the ring) is
// cut alike, so each of its slices waits for the same slice: a zero-byte
// chunk too, whose forward still follows its arrival.
func (c *collective) waitSlots(dst []int32, x *Transfer, sl int, off, n int64) []int32 {
	if x.WaitStep == NoWait {
		return dst
	}
	lo, hi := x.Offset+off, x.Offset+off+n
	for i := -1; i < len(x.WaitAlso); i++ {
		step := x.WaitStep
		if i >= 0 {
			step = x.WaitAlso[i]
		}
		w := c.recvOf[step][x.Src]
		if w == nil {
			panic(fmt.Sprintf("workload: collective %s step %d rank %d waits on step %d, in which it receives nothing", c.sched.Op, x.Step, x.Src, step))
		}
		if w.Offset == x.Offset && w.Bytes == x.Bytes {
			dst = append(dst, int32(c.slot(step, sl)))
			continue
		}
		if n == 0 || hi <= w.Offset || lo >= w.Offset+w.Bytes {
			continue
		}
		k := c.sliceCount(w.Bytes)
		first := sliceAt(w.Bytes, k, max(lo, w.Offset)-w.Offset)
		last := sliceAt(w.Bytes, k, min(hi, w.Offset+w.Bytes)-1-w.Offset)
		for j := first; j <= last; j++ {
			dst = append(dst, int32(c.slot(step, j)))
		}
	}
	return dst
}

// sliceAt returns which of the k chunks of b bytes (chunk) holds byte pos.
func sliceAt(b int64, k int, pos int64) int {
	base, rem := b/int64(k), b%int64(k)
	if pos < rem*(base+1) {
		return int(pos / (base + 1))
	}
	return int(rem + (pos-rem*(base+1))/base)
}

// post writes one slice to its destination: an RDMA WRITE WITH IMMEDIATE
// whose immediate names the step and slice, so the receiver knows what
// landed when its receive completes.
func (c *collective) post(r, i int) {
	rk := c.ranks[r]
	s := &rk.sends[i]
	x := s.xfer
	peer := c.ranks[x.Dst]
	w := hca.SendWR{ID: uint64(i), Opcode: hca.WRRDMAWriteImm, Signaled: true,
		LocalAddr: rk.src + uint64(x.Offset+s.off), Length: uint32(s.n), LKey: rk.mr.LKey,
		RemoteAddr: c.landingAddr(peer, x) + uint64(s.off), RKey: peer.mr.RKey,
		Imm: uint32(c.slot(x.Step, s.slice))}
	if rk.cts != nil {
		if c.lines {
			// The lines go from the send FIFO, flag the write's number + 1.
			addr, n := c.lineStage(rk, s, rk.cts.sendSeq[s.conn])
			w.LocalAddr, w.Length, w.LKey = addr, uint32(n), rk.cts.stageMR.LKey
		}
		// Where the receiver's clear-to-send said (its FIFO slot).
		w.RemoteAddr, w.RKey = c.ctsTake(rk, s)
	}
	if err := rk.dev.PostSend(rk.sendQP[s.conn], &w); err != nil {
		panic(fmt.Sprintf("workload: collective rank %d: post_send: %v", r, err))
	}
	if collHook != nil {
		collHook.post(r, i)
	}
	if c.window > 0 {
		rk.postedAt[i] = c.s.Now()
		for _, k := range rk.waits[s.w0:s.w1] {
			rk.readers[k]--
			c.maybeFree(rk, int(k))
		}
	}
}

// maybeFree frees rank rk's FIFO slot k once the slice landed (and was
// reduced) and every send of rk that reads it is posted, as NCCL's
// receiver frees a slot once it has copied it on (prims_simple.h
// postPeer). The credit reaches the slot's sender creditPS(rk, sender)
// later, when its application thread is woken to post (the window).
func (c *collective) maybeFree(rk *collRank, k int) {
	if rk.creditAt[k] != noCredit || !rk.arrived[k] || rk.readers[k] > 0 {
		return
	}
	x := c.recvOf[k/c.maxSlices][rk.index]
	rk.creditAt[k] = c.s.Now() + c.creditPS(rk.index, x.Src)
	if k%c.maxSlices+c.window < c.sliceCount(x.Bytes) { // a slice waits for it
		e := c.s.Schedule(rk.creditAt[k], c, evCollCredit)
		e.Arg = int64(x.Src)
	}
}

// creditPS is how long a freed slot takes to reach its sender: in NCCL's
// IB transport the receiver's proxy posts the next receive, which writes
// the slot's address into the sender's FIFO by an inline RDMA WRITE
// (net_ib.cc ncclIbPostFifo), polled by the sender's proxy: a post, a
// doorbell and a posted write into the sender's memory here (the poll is
// wake's). The write's wire and switch time is left out and so are its
// bytes (about 100 a slice of 32 KiB or more, under 0.3 %): an
// assumption, measured to move the 8-rank 8 MiB tree by under 1 %
// between 0 and 2 µs.
func (c *collective) creditPS(recv, send int) ib.PS {
	r, s := c.ranks[recv].dev.Cfg, c.ranks[send].dev.Cfg
	return ib.FromNanoseconds(r.Host.PostNS + r.PCIe.MMIOLatencyNS + s.PCIe.WriteLatencyNS)
}

// landingAddr is where transfer x lands in its destination rank: a
// reduce-scatter chunk in the scratch buffer (the receiver adds it into
// its own), an all-gather chunk straight into the data buffer, an
// all-to-all block at the sender's slot of the receive buffer.
func (c *collective) landingAddr(peer *collRank, x *Transfer) uint64 {
	switch {
	case c.sched.Op == CollAllToAll:
		return peer.dst + uint64(int64(x.Src)*(c.sched.Bytes/int64(c.sched.Ranks)))
	case x.Reduce:
		return peer.dst + uint64(x.Land)
	default:
		return peer.src + uint64(x.Offset)
	}
}

// landed handles the receive completion of slice imm at rank r.
func (c *collective) landed(r int, imm uint32) {
	rk := c.ranks[r]
	if c.lines {
		c.lineCQE(rk, imm) // the data was taken in at its flags (linePoll)
		return
	}
	if rk.cts != nil && !c.ctsLanded(rk, imm) {
		return
	}
	c.landedSlot(r, imm)
}

// landedSlot takes slot imm of rank r in once it is the rank's
// iteration's.
func (c *collective) landedSlot(r int, imm uint32) {
	rk := c.ranks[r]
	step, slice := int(imm)/c.maxSlices, int(imm)%c.maxSlices
	if step >= len(c.recvOf) || c.recvOf[step][r] == nil || rk.got[imm] {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: unexpected immediate %d (step %d slice %d)", r, imm, step, slice))
		return
	}
	rk.got[imm] = true
	rk.gotAt[imm] = c.s.Now()
	if !c.sendsDone(rk, imm) || rk.cts != nil && !c.ctsSendSlotFree(rk, int32(imm)) {
		rk.deferred = append(rk.deferred, imm)
		return
	}
	c.apply(rk, imm)
}

// apply takes landed slot imm of rank rk in: adds it into the data (a
// reduce) and marks it arrived, which the sends waiting on it look at.
func (c *collective) apply(rk *collRank, imm uint32) {
	step, slice := int(imm)/c.maxSlices, int(imm)%c.maxSlices
	x := c.recvOf[step][rk.index]
	off, n := c.sliceOf(x.Bytes, slice)
	switch {
	case rk.cts != nil:
		// Out of the FIFO slot it landed in: added in, or copied.
		c.ctsApply(rk, imm, x, off, n)
	case x.Reduce:
		c.reduce(rk, rk.dst+uint64(x.Land+off), uint64(x.Offset+off), int(n))
	}
	rk.arrived[imm] = true
	rk.recvs++
	if collHook != nil {
		collHook.apply(rk.index, imm)
	}
	if c.window > 0 {
		c.maybeFree(rk, int(imm))
	}
}

// sendsDone reports whether the own sends slot imm must wait for (defersOf)
// have completed.
func (c *collective) sendsDone(rk *collRank, imm uint32) bool {
	for _, i := range rk.deferIdx[rk.defer0[imm]:rk.defer1[imm]] {
		if !rk.sendDone[i] {
			return false
		}
	}
	return true
}

// applyDeferred applies rank r's deferred slots whose sends have completed,
// in the order they landed.
func (c *collective) applyDeferred(r int) {
	rk := c.ranks[r]
	kept := rk.deferred[:0]
	for _, imm := range rk.deferred {
		if c.sendsDone(rk, imm) && (rk.cts == nil || c.ctsSendSlotFree(rk, int32(imm))) {
			c.apply(rk, imm)
		} else {
			kept = append(kept, imm)
		}
	}
	rk.deferred = kept
}

// defersOf returns, per arrival slot of rank r, the own sends (indexes in
// sends) that must complete before the slot's data is added in: in the
// same step, the slices of r's send whose bytes the received slice adds
// into. Only an exchange has any (recursive doubling sends its vector and
// adds the partner's into it); the ring and Rabenseifner send and receive
// disjoint bytes in a step. The lists are runs of idx: slot k's is
// idx[from[k]:to[k]].
func (c *collective) defersOf(r int, sends []sliceSend) (from, to, idx []int32) {
	slots := len(c.sched.Steps) * c.maxSlices
	from, to = make([]int32, slots), make([]int32, slots)
	// r's sends of step t are sends[first[t]:first[t+1]] (posting order is
	// step order).
	first := make([]int, len(c.sched.Steps)+1)
	for t, i := 0, 0; t <= len(c.sched.Steps); t++ {
		for i < len(sends) && sends[i].xfer.Step < t {
			i++
		}
		first[t] = i
	}
	for t := range c.sched.Steps {
		x := c.recvOf[t][r]
		if x == nil || !x.Reduce {
			continue
		}
		for k := 0; k < c.sliceCount(x.Bytes); k++ {
			off, n := c.sliceOf(x.Bytes, k)
			lo, hi := x.Offset+off, x.Offset+off+n
			slot := c.slot(t, k)
			from[slot] = int32(len(idx))
			for i := first[t]; i < first[t+1]; i++ {
				y := &sends[i]
				ylo, yhi := y.xfer.Offset+y.off, y.xfer.Offset+y.off+y.n
				if n > 0 && y.n > 0 && lo < yhi && ylo < hi {
					idx = append(idx, int32(i))
				}
			}
			to[slot] = int32(len(idx))
		}
	}
	return from, to, idx
}

// reduce adds the n landed bytes at address land (the landing area, or
// a FIFO slot) into the data buffer at off (uint8 sum, wrapping, as
// nccl-tests -d uint8 -o sum) and charges the thread for it.
func (c *collective) reduce(rk *collRank, land, off uint64, n int) {
	if cap(c.scratch) < n {
		c.scratch = make([]byte, n)
	}
	in := c.scratch[:n]
	rk.dev.Mem.Read(land, in)
	// Added into the data where it is stored, a page at a time: no copy
	// of the data out and back.
	rk.dev.Mem.Update(rk.src+off, n, func(b []byte, at int) { addBytes(b, in[at:]) })
	// The landed bytes are added in and no one reads them again (every
	// reduced receive has a landing place of its own, Transfer.Land): their
	// pages go back to the host memory for the landings still to come, so
	// a rank's landing area costs the process the slices in flight, not S
	// bytes of fresh memory.
	rk.dev.Mem.Discard(land, n)
	if c.run.ReduceGBps > 0 {
		ns := float64(n) / c.run.ReduceGBps
		rk.dev.ChargeCPU(ib.FromNanoseconds(ns))
		rk.reduceNs += ns
	}
}

func (c *collective) checkWC(r int, wc hca.WC) {
	if wc.Status != hca.WCSuccess {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: completion wr %d on qp 0x%x: %v", r, wc.WRID, wc.QPN, wc.Status))
	}
}

// verify checks every rank's buffer: all-reduce, the elementwise uint8 sum
// of every rank's initial data; reduce-scatter, that sum in the rank's own
// block; all-gather, every block its owner's initial data; broadcast, every
// byte the root's; reduce, the sum at the root;
// all-to-all, block i of rank j's receive buffer equal to block j of rank
// i's send buffer.
func (c *collective) verify() { c.verifyRanks(-1) }

// verifyRanks is verify for rank only, or every rank (-1); one rank is
// checked only in the schedules that do not exchange all-to-all.
func (c *collective) verifyRanks(only int) {
	n := len(c.ranks)
	size := c.sched.Bytes
	if op := c.sched.Op; op != CollAllToAll {
		// All-reduce: every rank's array must equal the bytewise sum of
		// all ranks' streams. Reduce-scatter: block r of rank r's, the
		// rest is scratch. All-gather: block j of every rank's, block j
		// of rank j's stream. What each wants was kept at the set-up
		// (c.want, fill); the buffers are read a chunk at a time.
		block := size / int64(n) // all-gather and reduce-scatter: n whole blocks
		if op == CollAllReduce || op == CollBroadcast || op == CollReduce {
			block = size // one piece: every byte is the sum, or the root's
		}
		got := make([]byte, streamChunk)
		type diff struct {
			at        int64 // first differing byte, -1 none
			got, want byte
		}
		bad := make([]diff, n)
		for r := range bad {
			bad[r].at = -1
		}
		for off := int64(0); off < size; off += streamChunk {
			w := c.want[off : off+min(streamChunk, size-off)]
			for r, rk := range c.ranks {
				if bad[r].at >= 0 || op == CollReduce && r != c.sched.Root || only >= 0 && r != only {
					continue // a reduce's result is the root's alone
				}
				g := got[:len(w)]
				rk.dev.Mem.Read(rk.src+uint64(off), g)
				// The chunk in pieces of one block each.
				for lo := off; lo < off+int64(len(w)); {
					j := lo / block
					hi := min(off+int64(len(w)), (j+1)*block)
					if op == CollReduceScatter && j != int64(r) {
						lo = hi
						continue
					}
					exp := w[lo-off : hi-off]
					if k := firstDiff(g[lo-off:hi-off], exp); k >= 0 {
						bad[r] = diff{lo + int64(k), g[lo-off+int64(k)], exp[k]}
						break
					}
					lo = hi
				}
			}
		}
		what := map[string]string{CollAllReduce: "after all-reduce, want the sum", CollReduceScatter: "after reduce-scatter, want the sum",
			CollAllGather: "after all-gather, want its owner's", CollBroadcast: "after broadcast, want the root's",
			CollReduce: "after reduce, want the sum"}[op]
		for r, d := range bad {
			if d.at >= 0 {
				c.errs = append(c.errs, fmt.Sprintf("rank %d: byte %d is %d %s %d", r, d.at, d.got, what, d.want))
			}
		}
		return
	}
	// All-to-all: block j of rank i's stream must be in rank j's receive
	// half at block i. Rank i's stream is walked once, a chunk at a time;
	// the first difference of each (receiver, sender) block is kept and
	// reported in receiver order, then sender order.
	block := size / int64(n)
	bad := map[[2]int]int64{}
	buf, got := make([]byte, streamChunk), make([]byte, streamChunk)
	for i := 0; i < n; i++ {
		g := c.rankStream(i)
		for off := int64(0); off < int64(n)*block; {
			b := g.next(buf[:min(streamChunk, int64(n)*block-off)])
			for k := int64(0); k < int64(len(b)); {
				j, within := int((off+k)/block), (off+k)%block
				seg := min(int64(len(b))-k, block-within)
				if _, seen := bad[[2]int{j, i}]; !seen {
					gs := got[:seg]
					c.ranks[j].dev.Mem.Read(c.ranks[j].dst+uint64(int64(i)*block+within), gs)
					if d := firstDiff(gs, b[k:k+seg]); d >= 0 {
						bad[[2]int{j, i}] = within + int64(d)
					}
				}
				k += seg
			}
			off += int64(len(b))
		}
	}
	keys := slices.SortedFunc(maps.Keys(bad), func(a, b [2]int) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	for _, key := range keys {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: block from rank %d differs at byte %d after all-to-all", key[0], key[1], bad[key]))
	}
}

// addBytes adds b into a bytewise (uint8, wrapping; len(b) ≥ len(a)),
// eight bytes at a time: the low seven bits of each byte are added without
// a carry out of the byte, and each byte's top bit is the sum of the two
// top bits and that carry, mod 2 — the same bytes as a byte-by-byte sum.
func addBytes(a, b []byte) {
	const low7, top = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	b = b[:len(a)]
	add := func(x, y uint64) uint64 { return ((x & low7) + (y & low7)) ^ ((x ^ y) & top) }
	// Four words a step through 32-byte windows of constant length: the
	// compiler proves every access in range, so the step pays one slice
	// advance and no bounds check per word.
	for len(a) >= 32 && len(b) >= 32 {
		s, t := a[:32:32], b[:32:32]
		le := binary.LittleEndian
		le.PutUint64(s[0:], add(le.Uint64(s[0:]), le.Uint64(t[0:])))
		le.PutUint64(s[8:], add(le.Uint64(s[8:]), le.Uint64(t[8:])))
		le.PutUint64(s[16:], add(le.Uint64(s[16:]), le.Uint64(t[16:])))
		le.PutUint64(s[24:], add(le.Uint64(s[24:]), le.Uint64(t[24:])))
		a, b = a[32:], b[32:]
	}
	for len(a) >= 8 && len(b) >= 8 {
		binary.LittleEndian.PutUint64(a, add(binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)))
		a, b = a[8:], b[8:]
	}
	for i := range a {
		a[i] += b[i]
	}
}

// firstDiff returns the first index where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1 // the usual case, compared by the runtime's vector loop
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// metrics returns the run's results. Bandwidths follow nccl-tests
// (doc/PERFORMANCE.md): algbw = S / t, busbw = algbw × BusBWFactor; the
// _gbps keys are in Gb/s like every other rate hcasim reports (comparable
// with link_data_rate_gbps), the _gbytes_per_s keys in GB/s as nccl-tests
// prints them.
func (c *collective) metrics() map[string]any {
	t := c.end - c.start
	var loop map[string]any
	if c.b2b {
		loop = map[string]any{}
		t = c.ctsMetrics(loop)
	} else if c.run.looped() {
		// Per timed iteration, as nccl-tests reports: the mean.
		loop = map[string]any{}
		t = c.iterationMetrics(loop)
	}
	var writes int
	var timeouts, naks, rnr int64
	var reduceNs float64
	var mttHits, mttMisses int64
	var ctx ctxTally // QP, CQ, SRQ and EQ contexts, over every HCA
	for _, rk := range c.ranks {
		writes += len(rk.sends)
		timeouts += rk.dev.Counters.Timeouts
		naks += rk.dev.Counters.Naks
		rnr += rk.dev.Counters.RNRNaks
		reduceNs = max(reduceNs, rk.reduceNs)
		if mc := rk.dev.MTTCache(); mc != nil {
			mttHits, mttMisses = mttHits+mc.Hits, mttMisses+mc.Misses
		}
		ctx.add(rk.dev)
	}
	m := map[string]any{
		"op":            c.sched.Op,
		"ranks":         len(c.ranks),
		"size_bytes":    c.sched.Bytes,
		"steps":         len(c.sched.Steps),
		"slice_bytes":   c.slice,
		"rdma_writes":   writes,
		"time_us":       t.Nanoseconds() / 1000,
		"data_verified": len(c.errs) == 0,
		"timeouts":      timeouts,
		"naks":          naks,
		"rnr_naks":      rnr,
		"reduce_ns_max": reduceNs,
		"sim_time_ns":   c.s.Now().Nanoseconds(),
		"events":        c.s.Events(),
	}
	if c.sched.Algorithm != "" {
		m["algorithm"] = c.sched.Algorithm
	}
	if c.sched.Root != 0 {
		// Only when set, so that a root-0 run reports what it did before
		// workload.root existed.
		m["root"] = c.sched.Root
	}
	if t > 0 {
		alg, bus := c.sched.AlgBW(t), c.sched.BusBW(t)
		m["algbw_gbps"], m["busbw_gbps"] = alg*8, bus*8
		m["algbw_gbytes_per_s"], m["busbw_gbytes_per_s"] = alg, bus
	}
	if len(c.errs) > 0 {
		m["data_errors"] = c.errs[:min(len(c.errs), 10)]
	}
	maps.Copy(m, loop)
	if c.run.looped() {
		// Summed over the timed iterations: per iteration, as time_us.
		m["reduce_ns_max"] = reduceNs / float64(c.run.timedIterations())
	}
	if c.run.Channels > 1 {
		m["channels"] = c.run.Channels
	}
	if c.lines {
		// Only LL and LL128, so a run without the key reports what it did.
		m["protocol"] = c.proto
	}
	if c.sharp != nil {
		c.sharpMetrics(m)
	}
	if mttHits+mttMisses > 0 {
		// Address translation (hca.mtt_cache_entries): the pages looked up
		// that missed, over every HCA.
		m["mtt_cache_miss_rate"] = float64(mttMisses) / float64(mttHits+mttMisses)
	}
	ctx.put(m, "")
	return m
}
