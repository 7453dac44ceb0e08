package workload

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// The flow controls (workload.flow_control): FlowNone, the writes are
// posted as soon as their data is there, into landing buffers every
// iteration has to itself; FlowCTS, NCCL's net IB transport's
// clear-to-send.
const (
	FlowNone = "none"
	FlowCTS  = "cts"
)

// FlowControls lists workload.flow_control's values.
var FlowControls = []string{FlowNone, FlowCTS}

// The ways nccl-tests combines the ranks' times (its -a: 0 rank 0's,
// 1 the mean, its default, 2 the least, 3 the greatest; src/common.cu,
// BenchTime's Allreduce(args, &deltaSec, average)).
const (
	AvgRank0 = "rank0"
	AvgMean  = "avg"
	AvgMin   = "min"
	AvgMax   = "max"
)

// AverageModes lists workload.collective_average's values, in nccl-tests'
// -a order.
var AverageModes = []string{AvgRank0, AvgMean, AvgMin, AvgMax}

// ctsEntryBytes is one clear-to-send FIFO entry, NCCL's struct
// ncclIbSendFifo: addr (8 bytes), size (4), rkey (4), nreqs (4), tag (4),
// idx (8), 32 bytes (net_ib.cc static_asserts a multiple of 32, so an
// entry is never split; NCCL 2.19 and later pad it to 64 with a second
// rkey). The receiver RDMA-WRITEs it into the sender's FIFO
// (ncclIbPostFifo), not inline (NCCL_IB_USE_INLINE is 0 by default), on
// the connection's own QP, signaled once in its FIFO's turn (slot 0).
const ctsEntryBytes = 32

// ctsIdxOffset is where an entry's idx lies in it: the sender takes the
// entry once idx is its next write's number plus one (ncclIbIsend).
const ctsIdxOffset = 24

// ctsWRID marks a clear-to-send write's work request ID, so its
// completion is told from a data write's (whose IDs are send indexes).
const ctsWRID = 1 << 62

// ctsBBs is the send queue room of one clear-to-send write.
var ctsBBs = hca.WQEBBs(&hca.SendWR{Opcode: hca.WRRDMAWrite, Length: ctsEntryBytes})

// ctsAlgorithms lists the all-reduce algorithms the clear-to-send is
// modelled for: NCCL's two, which run over its net IB transport.
var ctsAlgorithms = []string{AlgRing, AlgTree}

// checkFlowControl checks workload.flow_control and
// workload.collective_average: known values, and set only where modelled
// (the clear-to-send: the ring and tree all-reduces; the averages: back
// to back).
func checkFlowControl(op, alg, fc, avg, prefix string) error {
	switch {
	case fc != "" && !slices.Contains(FlowControls, fc):
		return fmt.Errorf("%s.flow_control: %q is not a flow control (%s)", prefix, fc, strings.Join(FlowControls, ", "))
	case avg != "" && !slices.Contains(AverageModes, avg):
		return fmt.Errorf("%s.collective_average: %q is not an nccl-tests -a mode (%s)", prefix, avg, strings.Join(AverageModes, ", "))
	case fc == FlowCTS && (op != CollAllReduce || alg != "" && !slices.Contains(ctsAlgorithms, alg)):
		what := prefix + ".kind " + op
		if op == CollAllReduce {
			what = prefix + ".algorithm " + alg
		}
		return fmt.Errorf("%s.flow_control: cts is set, but %s does not use it (the clear-to-send is modelled for NCCL's all-reduces only, %s: set %s.kind: allreduce with %s.algorithm %s, or remove the key)",
			prefix, what, strings.Join(ctsAlgorithms, " and "), prefix, prefix, strings.Join(ctsAlgorithms, " or "))
	case avg != "" && fc != FlowCTS:
		return fmt.Errorf("%s.collective_average: %s is set, but without %s.flow_control: cts every iteration starts on every rank at once and its time is its last rank's (set %s.flow_control: cts, or remove the key)", prefix, avg, prefix, prefix)
	}
	return nil
}

// ctsRank is a rank's clear-to-send state (FlowCTS). NCCL's net IB
// transport (src/transport/net_ib.cc): a receiver posts a receive and
// RDMA-WRITEs a FIFO entry (ncclIbSendFifo: where the data goes, its
// size, key and number) into its sender's memory when it has a free slot
// of NCCL_STEPS for the data (ncclIbIrecv, ncclIbPostFifo); the sender
// polls its FIFO and posts its RDMA WRITE WITH IMMEDIATE, to that address,
// only once the entry is there (ncclIbIsend). Here the data lands in the
// receiver's FIFO slot and its thread adds it in, or copies it, from
// there. NCCL's GPU frees a receive slot once it has moved the data on:
// into its user buffer, or reduced into its send FIFO's next slot, which
// is free once the write NCCLSteps before it on that connection completed
// (prims_simple.h; the proxy frees a send slot on its write's
// completion). Here the data moves into the rank's buffer, which its
// forward reads: a landed slice is taken in (added in, with its
// reduction time, or copied) once each send that forwards it (the ring's
// one; a tree rank's broadcast to both children) has its own slot free
// (ctsSendSlotFree; landedSlot defers it till then), and its slot is
// consumed once it was taken in and the rest of its step is there (the
// tree's other child: ctsStepWhole, ctsAdvance); a write is posted once
// its clear-to-send is there and its send slot is free (ctsCleared). The
// tree's connections are its edges, one a direction in each tree, each
// with its own FIFO, as the ring's are one a channel.
type ctsRank struct {
	// iter is the iteration the rank runs (back to back, its own).
	iter int
	mr   hca.MR // the FIFOs below, one region
	// fifo is the rank's clear-to-send FIFO as a sender: per send
	// connection NCCLSteps entries the receiver writes into; local the
	// entries it writes from as a receiver, per receive connection
	// NCCLSteps; data the receive FIFOs, per receive connection NCCLSteps
	// slots of collective.slotBytes.
	fifo, local, data uint64
	// stage is, with LL and LL128, the send FIFOs: per send connection
	// NCCLSteps slots the rank writes its lines into and RDMA-writes from
	// (NCCL's GPU stores lines into its send buffer, the proxy sends them).
	stage   uint64
	stageMR hca.MR
	dataEnd uint64 // the end of the receive FIFOs (data)
	// lineWant and lineGot are, with LL and LL128, per receive connection
	// × slot, the wire bytes of the write granted into it and those that
	// became visible: the thread checks the lines' flags once all are
	// (llPoll), as often as NCCL's GPU would find them all set.
	lineWant, lineGot []int64
	sendSeq           []int64  // per send connection: writes posted on it over the run
	completed         []int64  // per send connection: its writes' completions polled
	sendK             []int64  // per send connection: writes an iteration
	sendPos           []int32  // by send: its place in its connection's writes of an iteration
	seen              []uint64 // per send connection × NCCLSteps: the idx of the entry last visible
	recv              []ctsRecv
	// By arrival slot: the receive connection it comes on and its place in
	// that connection's sequence within an iteration; where it landed.
	slotConn, slotSeq []int32
	fifoAt            []uint64
	// readBy and readByAlso are, by arrival slot, the sends that forward
	// it (indexes in collRank.sends), −1 none: the ring's one, or a tree
	// rank's two (its broadcast to both children, or the root's sum to
	// both); the slot is moved on only when both have a send slot free.
	readBy, readByAlso []int32
	// early holds writes of the rank's next iteration that landed before
	// it began it (its sender's clear-to-send came from its proxy).
	early   []ctsEarly
	iterEnd []ib.PS // per iteration: when the rank was done with it
	writes  int64   // clear-to-send writes posted in the timed part
}

// ctsRecv is one receive connection's clear-to-send state; its counters
// number the connection's writes over the whole run.
type ctsRecv struct {
	k     int64   // writes an iteration
	slots []int32 // the arrival slots of an iteration's writes, in order
	// granted: clear-to-sends posted; landed: writes landed; consumed:
	// writes consumed, in order (NCCL's head); cqes: receive completions
	// polled (SIMPLE lands a write at its completion, so cqes = landed;
	// LL and LL128 land it at its flags, and its completion may follow).
	granted, landed, consumed, cqes int64
	// ctsAddr and ctsRKey are the sender's FIFO for this connection.
	ctsAddr uint64
	ctsRKey uint32
}

// ctsEarly is a write that landed in FIFO slot at for the rank's next
// iteration.
type ctsEarly struct {
	imm uint32
	at  uint64
}

// ncclChunkSteps is how many FIFO slots one step of NCCL's ring
// all-reduce moves in one pass of its loop (ALLREDUCE_CHUNKSTEPS =
// NCCL_STEPS/2, src/include/collectives.h): a chunk is that many slots.
const ncclChunkSteps = NCCLSteps / 2

// ctsOrder puts rank rk's sends in NCCL's order: its ring kernel loops
// over the buffer a chunk of ncclChunkSteps slots a step at a time
// (src/device/all_reduce.h, runRing), every step of one loop's chunks
// before the next loop's, where the model without flow control posts a
// whole step's slices before the next step's. A connection's writes go
// in that order: with NCCLSteps slots, a step of more slices than slots
// would otherwise wait, around the ring, for slots its own later slices
// hold. Here a loop is ncclChunkSteps slices of every step; a step of at
// most that many slices (any size up to 2 MiB a chunk at the default
// slice) keeps the order of before. The ring forwards each slice as it
// received it (the same transfer, cut alike), so each send still waits
// only on sends before it.
//
// The tree keeps its order: each of a rank's lanes there carries one
// transfer (up to its parent, or down to one child, in one tree), which
// NCCL's tree kernel sends a chunk a step (runTreeSplit, ProtoSimple<1,
// 1>: a chunk is one FIFO slot), in order, the lanes independent.
func (c *collective) ctsOrder(rk *collRank) {
	if len(rk.deferIdx) > 0 {
		panic(fmt.Sprintf("workload: collective rank %d: the clear-to-send is modelled for schedules whose sends wait on no own send (the ring, the tree); this one has %d", rk.index, len(rk.deferIdx)))
	}
	if c.sched.Algorithm == AlgTree {
		return
	}
	// LL and LL128 loop a step a chunk (runRing: chunkSize is one step's
	// bytes, not ALLREDUCE_CHUNKSTEPS of them).
	chunk := ncclChunkSteps
	if c.lines {
		chunk = 1
	}
	slices.SortStableFunc(rk.sends, func(a, b sliceSend) int {
		return cmp.Or(cmp.Compare(a.slice/chunk, b.slice/chunk), cmp.Compare(a.xfer.Step, b.xfer.Step), cmp.Compare(a.slice, b.slice))
	})
}

// ctsSlotBytes is the size of one FIFO slot: the largest write, on the
// wire (LL and LL128: its lines).
func (c *collective) ctsSlotBytes() int64 {
	b := int64(1)
	for _, step := range c.sched.Steps {
		for _, x := range step {
			b = max(b, protoWire(c.proto, min(c.slice, x.Bytes)))
		}
	}
	return b
}

// hostSched is the schedule as checkHostBytes counts its memory: with the
// clear-to-send, a rank's landing area is its receive FIFOs, NCCLSteps
// slots on each of its receive connections (one a channel in the ring; in
// the tree, one from each child and one from the parent, in each tree),
// the most any rank has, not the schedule's landing bytes, which are not
// allocated.
func (c *collective) hostSched() Schedule {
	s := c.sched
	if c.cts {
		s.Landing = NCCLSteps * c.ctsSlotBytes() * int64(slices.Max(recvConnections(s)))
		if c.lines {
			// The send FIFOs the lines are written into: as many slots a
			// send connection (the ring's one a channel; a tree rank's
			// edges), counted as the receive ones.
			s.Landing += NCCLSteps * c.ctsSlotBytes() * int64(slices.Max(recvConnections(s)))
		}
	}
	return s
}

// recvConnections returns, by rank, how many connections the schedule
// gives it to receive on: one per sender and lane (setup's connections).
func recvConnections(s Schedule) []int {
	seen := map[[3]int]bool{} // (dst, src, lane); set-up only
	n := make([]int, s.Ranks)
	for _, step := range s.Steps {
		for _, x := range step {
			if k := [3]int{x.Dst, x.Src, x.Lane}; !seen[k] {
				seen[k] = true
				n[x.Dst]++
			}
		}
	}
	return n
}

// setupCTS gives every rank its FIFOs, in one region of its own, and
// numbers every connection's writes.
func (c *collective) setupCTS(pds []uint32) {
	c.slotBytes = c.ctsSlotBytes()
	for r, rk := range c.ranks {
		ns, nr := len(rk.sendQP), len(rk.recvQP)
		size := (ns+nr)*NCCLSteps*ctsEntryBytes + nr*NCCLSteps*int(c.slotBytes)
		ct := &ctsRank{}
		base := rk.dev.Malloc(size)
		ct.mr = rk.dev.RegMR(pds[r], base, size, hca.AccessLocalWrite|hca.AccessRemoteWrite)
		ct.fifo = base
		ct.local = base + uint64(ns*NCCLSteps*ctsEntryBytes)
		ct.data = ct.local + uint64(nr*NCCLSteps*ctsEntryBytes)
		ct.dataEnd = ct.data + uint64(nr*NCCLSteps)*uint64(c.slotBytes)
		if c.lines {
			// NCCL registers each protocol's buffers with the network on
			// their own (net.cc: regMr per buffs[p]): a region of their
			// own, whose key the first write looks up.
			sz := ns * NCCLSteps * int(c.slotBytes)
			ct.stage = rk.dev.Malloc(sz)
			ct.stageMR = rk.dev.RegMR(pds[r], ct.stage, sz, hca.AccessLocalWrite)
			ct.lineWant = make([]int64, nr*NCCLSteps)
			ct.lineGot = make([]int64, nr*NCCLSteps)
		}
		ct.sendSeq = make([]int64, ns)
		ct.seen = make([]uint64, ns*NCCLSteps)
		ct.recv = make([]ctsRecv, nr)
		slots := len(rk.arrived)
		ct.slotConn = make([]int32, slots)
		for k := range ct.slotConn {
			ct.slotConn[k] = -1
		}
		ct.slotSeq = make([]int32, slots)
		ct.fifoAt = make([]uint64, slots)
		ct.readBy, ct.readByAlso = make([]int32, slots), make([]int32, slots)
		for k := range ct.readBy {
			ct.readBy[k], ct.readByAlso[k] = -1, -1
		}
		for i := range rk.sends {
			for _, k := range rk.waits[rk.sends[i].w0:rk.sends[i].w1] {
				switch {
				case ct.readBy[k] < 0:
					ct.readBy[k] = int32(i)
				case ct.readByAlso[k] < 0:
					ct.readByAlso[k] = int32(i)
				default:
					panic(fmt.Sprintf("workload: collective rank %d: slot %d is forwarded by sends %d, %d and %d (the clear-to-send models two at most, a binary tree's)", r, k, ct.readBy[k], ct.readByAlso[k], i))
				}
			}
		}
		ct.completed = make([]int64, ns)
		ct.sendK = make([]int64, ns)
		ct.sendPos = make([]int32, len(rk.sends))
		for i := range rk.sends {
			cn := rk.sends[i].conn
			ct.sendPos[i] = int32(ct.sendK[cn])
			ct.sendK[cn]++
		}
		rk.cts = ct
	}
	recvOf := map[[2]int]int{} // (sender, its send connection) → receive connection
	for _, b := range c.ranks {
		for j, rc := range b.recvQP {
			a := c.ranks[rc.src]
			b.cts.recv[j].k = int64(rc.n)
			b.cts.recv[j].ctsAddr = a.cts.fifo + uint64(rc.srcConn*NCCLSteps*ctsEntryBytes)
			b.cts.recv[j].ctsRKey = a.cts.mr.RKey
			recvOf[[2]int{rc.src, rc.srcConn}] = j
		}
	}
	for _, a := range c.ranks {
		for i := range a.sends {
			s := &a.sends[i]
			b := c.ranks[s.xfer.Dst]
			j := recvOf[[2]int{a.index, int(s.conn)}]
			cr := &b.cts.recv[j]
			k := c.slot(s.xfer.Step, s.slice)
			b.cts.slotConn[k], b.cts.slotSeq[k] = int32(j), int32(len(cr.slots))
			cr.slots = append(cr.slots, int32(k))
		}
	}
	for r, rk := range c.ranks {
		for j := range rk.cts.recv {
			if int64(len(rk.cts.recv[j].slots)) != rk.cts.recv[j].k {
				panic(fmt.Sprintf("workload: collective rank %d: receive connection %d has %d writes an iteration, its QP %d receives", r, j, len(rk.cts.recv[j].slots), rk.cts.recv[j].k))
			}
		}
		r := r
		rk.dev.OnMemWrite = func(addr uint64, n int, now ib.PS) { c.ctsVisible(r, addr, n, now) }
	}
}

// ctsVisible notes the clear-to-send entries a write made visible in rank
// r's FIFO and wakes its thread, which polls the FIFO.
func (c *collective) ctsVisible(r int, addr uint64, n int, now ib.PS) {
	rk := c.ranks[r]
	ct := rk.cts
	lo, hi := ct.fifo, ct.local
	if c.lines && addr >= ct.data && addr < ct.dataEnd {
		c.lineVisible(r, addr, n, now)
		return
	}
	if addr+uint64(n) <= lo || addr >= hi {
		return
	}
	for e := (max(addr, lo) - lo) / ctsEntryBytes; lo+e*ctsEntryBytes < min(addr+uint64(n), hi); e++ {
		ct.seen[e] = rk.dev.Mem.ReadU64(lo + e*ctsEntryBytes + ctsIdxOffset)
	}
	c.wake(r, now)
}

// ctsCleared reports whether send s's clear-to-send is in the rank's FIFO:
// the entry of its connection's next write carries that write's number
// plus one.
func (c *collective) ctsCleared(rk *collRank, s *sliceSend) bool {
	ct := rk.cts
	g := ct.sendSeq[s.conn]
	return ct.completed[s.conn] > g-NCCLSteps && ct.seen[int(s.conn)*NCCLSteps+int(g%NCCLSteps)] == uint64(g+1)
}

// ctsTake reads send s's clear-to-send entry (ctsCleared) for where the
// write goes, and counts the write.
func (c *collective) ctsTake(rk *collRank, s *sliceSend) (addr uint64, rkey uint32) {
	ct := rk.cts
	g := ct.sendSeq[s.conn]
	e := ct.fifo + uint64((int(s.conn)*NCCLSteps+int(g%NCCLSteps))*ctsEntryBytes)
	addr, size, rkey := rk.dev.Mem.ReadU64(e), rk.dev.Mem.ReadU32(e+8), rk.dev.Mem.ReadU32(e+12)
	if int64(size) < protoWire(c.proto, s.n) {
		panic(fmt.Sprintf("workload: collective rank %d: write %d of %d bytes on connection %d, but its clear-to-send offers %d", rk.index, g, s.n, s.conn, size))
	}
	ct.sendSeq[s.conn]++
	return addr, rkey
}

// ctsGrant posts rank r's clear-to-sends that may go: on each receive
// connection, for the next writes whose FIFO slot is free (the write
// NCCLSteps before consumed), of an iteration the rank's proxy has (back
// to back: every iteration of the phase, as nccl-tests launches them all;
// barriered: the one running), and only once the iteration before is
// consumed on the connection (NCCL's proxy runs a connection's operations
// one after another: proxy.cc removeOp hands over to nextPeer).
func (c *collective) ctsGrant(r int) {
	rk := c.ranks[r]
	ct := rk.cts
	lim := int64(c.phaseEnd)
	if !c.b2b {
		lim = int64(c.iter + 1)
	}
	for j := range ct.recv {
		cr := &ct.recv[j]
		// A slot is free once its write is consumed and its receive
		// completed (net.cc recvProxyProgress: done advances while the
		// GPU's head is past it and transmitted > done; "LL and LL128 can
		// acknowledge 0-bytes send before they even happen").
		free := min(cr.consumed, cr.cqes)
		for g := cr.granted; g < lim*cr.k && g < free+NCCLSteps && g-g%cr.k <= cr.consumed; g = cr.granted {
			c.ctsPost(rk, j, g)
			cr.granted++
		}
	}
}

// ctsPost posts write g's receive and its clear-to-send on receive
// connection j of rank rk: the entry written into the rank's local copy,
// then RDMA-written into the sender's FIFO (ncclIbIrecv: post_recv, then
// ncclIbPostFifo).
func (c *collective) ctsPost(rk *collRank, j int, g int64) {
	ct := rk.cts
	cr := &ct.recv[j]
	qp := rk.recvQP[j].qp
	slot := int(g % NCCLSteps)
	at := ct.data + uint64((j*NCCLSteps+slot))*uint64(c.slotBytes)
	if err := rk.dev.PostRecv(qp, &hca.RecvWR{ID: uint64(g), Addr: at, LKey: ct.mr.LKey}); err != nil {
		panic(fmt.Sprintf("workload: collective: post_recv on rank %d: %v", rk.index, err))
	}
	var e [ctsEntryBytes]byte
	le := binary.LittleEndian
	le.PutUint64(e[0:], at)
	le.PutUint32(e[8:], uint32(c.slotBytes))
	le.PutUint32(e[12:], ct.mr.RKey)
	le.PutUint32(e[16:], 1)         // nreqs: one receive a write
	le.PutUint32(e[20:], uint32(j)) // tag
	le.PutUint64(e[ctsIdxOffset:], uint64(g+1))
	if c.lines {
		k := cr.slots[g%cr.k]
		x := c.recvOf[int(k)/c.maxSlices][rk.index]
		_, n := c.sliceOf(x.Bytes, int(k)%c.maxSlices)
		ct.lineWant[j*NCCLSteps+slot] = protoWire(c.proto, n)
		ct.lineGot[j*NCCLSteps+slot] = 0
	}
	local := ct.local + uint64((j*NCCLSteps+slot)*ctsEntryBytes)
	rk.dev.Mem.Write(local, e[:])
	w := hca.SendWR{ID: ctsWRID | uint64(g), Opcode: hca.WRRDMAWrite, Signaled: slot == 0,
		LocalAddr: local, Length: ctsEntryBytes, LKey: ct.mr.LKey,
		RemoteAddr: cr.ctsAddr + uint64(slot*ctsEntryBytes), RKey: cr.ctsRKey}
	if err := rk.dev.PostSend(qp, &w); err != nil {
		panic(fmt.Sprintf("workload: collective: clear-to-send on rank %d: %v", rk.index, err))
	}
	ct.writes++
}

// ctsLanded takes a write's landing in at rank rk: it must come in its
// connection's order, after its clear-to-send and into a slot already
// consumed (else the data is reported wrong: a sender wrote where it was
// not cleared to). It reports whether the write is the rank's running
// iteration's; one of its next is kept for then (early).
func (c *collective) ctsLanded(rk *collRank, imm uint32) bool {
	ct := rk.cts
	if int(imm) >= len(ct.slotConn) || ct.slotConn[imm] < 0 {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: unexpected immediate %d", rk.index, imm))
		return false
	}
	j := ct.slotConn[imm]
	cr := &ct.recv[j]
	src := rk.recvQP[j].src
	g := cr.landed
	cr.landed++
	cr.cqes++
	if g%cr.k != int64(ct.slotSeq[imm]) {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: write %d from rank %d landed out of order (immediate %d)", rk.index, g, src, imm))
		return false
	}
	return c.ctsLandedAt(rk, j, g, imm)
}

// ctsLandedAt takes write g of receive connection j (arrival slot imm) in
// at rank rk: it must have been cleared, and into a slot already
// consumed. It reports whether the write is the rank's running
// iteration's; one of its next is kept for then (early).
func (c *collective) ctsLandedAt(rk *collRank, j int32, g int64, imm uint32) bool {
	ct := rk.cts
	cr := &ct.recv[j]
	src := rk.recvQP[j].src
	if g >= cr.granted {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: write %d from rank %d landed before its clear-to-send", rk.index, g, src))
	}
	if g >= cr.consumed+NCCLSteps {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: write %d from rank %d landed in FIFO slot %d before write %d there was consumed", rk.index, g, src, g%NCCLSteps, cr.consumed))
	}
	at := ct.data + uint64((int64(j)*NCCLSteps+g%NCCLSteps)*c.slotBytes)
	if g/cr.k > int64(ct.iter) {
		ct.early = append(ct.early, ctsEarly{imm: imm, at: at})
		return false
	}
	ct.fifoAt[imm] = at
	return true
}

// ctsApply takes the n bytes of slot imm (offset off of transfer x) out of
// the FIFO slot they landed in: added into the data, or copied there,
// once the forward's send slot is free (ctsSendSlotFree), as NCCL's GPU
// reduces from the receive slot into the send slot. The copy is free, as
// the reduction is by default (a GPU's memory bandwidth is far above a
// link's).
func (c *collective) ctsApply(rk *collRank, imm uint32, x *Transfer, off, n int64) {
	at := rk.cts.fifoAt[imm]
	if x.Reduce {
		c.reduce(rk, at, uint64(x.Offset+off), int(n))
		return
	}
	if cap(c.scratch) < int(n) {
		c.scratch = make([]byte, n)
	}
	b := c.scratch[:n]
	rk.dev.Mem.Read(at, b)
	rk.dev.Mem.Write(rk.src+uint64(x.Offset+off), b)
	rk.dev.Mem.Discard(at, int(n))
}

// ctsAdvance moves each receive connection's head of rank rk over the
// writes consumed, in order: a write is consumed once it was taken in
// and each send forwarding it, if one does, has its send slot free (the
// write NCCLSteps before it on its connection completed) and all its
// other input there (ctsStepWhole).
func (c *collective) ctsAdvance(rk *collRank) {
	ct := rk.cts
	for j := range ct.recv {
		cr := &ct.recv[j]
		for end := int64(ct.iter+1) * cr.k; cr.consumed < end; cr.consumed++ {
			k := cr.slots[cr.consumed%cr.k]
			if !rk.arrived[k] || !c.ctsSendSlotFree(rk, k) || !c.ctsStepWhole(rk, k) {
				break
			}
		}
	}
}

// ctsStepWhole reports whether every slot the sends forwarding arrival
// slot k of rank rk read has been taken in. NCCL's GPU runs a tree step
// as one primitive over all its peers (prims_simple.h genericOp: each
// peer's waitPeer, a barrier, one reduceCopy of every receive slot into
// every send slot, then postPeer frees them all): a parent's step
// reduces both children's slots (recvReduceSend; the root's
// directRecvReduceCopySend), so one child's slot is freed only once the
// other child's slice is there as well. In the ring a forward reads only
// the slot itself, so this holds once it arrived.
func (c *collective) ctsStepWhole(rk *collRank, k int32) bool {
	ct := rk.cts
	for _, i := range [2]int32{ct.readBy[k], ct.readByAlso[k]} {
		if i < 0 {
			continue
		}
		for _, w := range rk.waits[rk.sends[i].w0:rk.sends[i].w1] {
			if !rk.arrived[w] {
				return false
			}
		}
	}
	return true
}

// ctsSendSlotFree reports whether each send that forwards arrival slot k
// of rank rk, if one does, has its own FIFO slot: the write NCCLSteps
// before it on its connection completed. NCCL's GPU moves a received
// slice on (reduces it, or copies it, into the send FIFOs: one in the
// ring, a tree rank's two children's in its broadcast) only then, and
// only then frees the receive slot (prims_simple.h waits on every peer's
// step before its reduce-copy); so the model takes a slot's data in
// (apply, and the reduction's time with workload.reduce_gbps) once this
// holds (landedSlot defers it), as well as consuming it (ctsAdvance).
func (c *collective) ctsSendSlotFree(rk *collRank, k int32) bool {
	ct := rk.cts
	for _, i := range [2]int32{ct.readBy[k], ct.readByAlso[k]} {
		if i < 0 {
			continue
		}
		cn := rk.sends[i].conn
		if ct.completed[cn] <= int64(ct.iter)*ct.sendK[cn]+int64(ct.sendPos[i])-NCCLSteps {
			return false
		}
	}
	return true
}

// rankIterDone ends rank r's iteration back to back: its time is kept,
// its data checked and its input restored (nccl-tests' sendbuff is never
// written, so every iteration computes the same result), and it begins
// its next iteration at once, as a GPU starts the next kernel on its
// stream, taking in what landed for it already. At the end of a phase
// (every rank done with the warm-up, or with the run) the run waits for
// the last rank: nccl-tests' barrier before its timed loop, or the end.
func (c *collective) rankIterDone(r int) {
	rk := c.ranks[r]
	ct := rk.cts
	for j := range ct.recv {
		if cr := &ct.recv[j]; cr.consumed != int64(ct.iter+1)*cr.k {
			panic(fmt.Sprintf("workload: collective rank %d done with iteration %d, but connection %d consumed %d of its %d writes", r, ct.iter, j, cr.consumed, int64(ct.iter+1)*cr.k))
		}
	}
	rk.doneAt = rk.dev.CPUFreeAt()
	ct.iterEnd = append(ct.iterEnd, rk.doneAt)
	from := len(c.errs)
	c.verifyRanks(r)
	if c.run.looped() {
		for i := from; i < len(c.errs); i++ {
			c.errs[i] = fmt.Sprintf("iteration %d: %s", ct.iter, c.errs[i])
		}
	}
	c.end = max(c.end, rk.doneAt)
	ct.iter++
	if ct.iter < c.run.iterations() {
		c.fillRank(r)
		c.resetRank(rk)
	}
	if ct.iter < c.phaseEnd {
		early := slices.Clone(ct.early)
		ct.early = ct.early[:0]
		for _, e := range early {
			ct.fifoAt[e.imm] = e.at
			c.landedSlot(r, e.imm)
		}
		c.wake(r, c.s.Now())
		return
	}
	rk.done = true
	c.finished++
	if c.finished < len(c.ranks) {
		return
	}
	if c.phaseEnd < c.run.iterations() {
		c.iter, c.phaseEnd = c.phaseEnd, c.run.iterations()
		c.finished, c.started = 0, false
		var free ib.PS
		for _, q := range c.ranks {
			free = max(free, q.dev.CPUFreeAt())
		}
		c.s.Schedule(max(c.end, free), c, evCollStart)
		return
	}
	c.stop()
}

// fillRank restores rank r's input (its stream) for its next iteration.
func (c *collective) fillRank(r int) {
	rk := c.ranks[r]
	g := c.rankStream(r)
	buf := make([]byte, streamChunk)
	for off := uint64(0); ; {
		b := g.next(buf)
		if len(b) == 0 {
			return
		}
		rk.dev.Mem.Write(rk.src+off, b)
		off += uint64(len(b))
	}
}

// ctsMetrics adds a back-to-back run's metrics to m and returns its time
// per iteration as nccl-tests takes it: each rank's time from the timed
// loop's start (after the barrier) to its end of the last iteration,
// divided by the timed iterations, combined over the ranks by
// run.Average (BenchTime: deltaSec = tim.elapsed()/iters, then
// Allreduce(args, &deltaSec, average)).
func (c *collective) ctsMetrics(m map[string]any) ib.PS {
	timed := ib.PS(c.run.timedIterations())
	n := ib.PS(len(c.ranks))
	per := make([]ib.PS, len(c.ranks))
	us := make([]float64, len(c.ranks))
	var writes int64
	for r, rk := range c.ranks {
		per[r] = (rk.cts.iterEnd[len(rk.cts.iterEnd)-1] - c.start + timed/2) / timed
		us[r] = per[r].Nanoseconds() / 1000
		writes += rk.cts.writes
	}
	mode := cmp.Or(c.run.Average, AvgMean)
	var t ib.PS
	switch mode {
	case AvgRank0:
		t = per[0]
	case AvgMin:
		t = slices.Min(per)
	case AvgMax:
		t = slices.Max(per)
	default:
		var sum ib.PS
		for _, p := range per {
			sum += p
		}
		t = (sum + n/2) / n
	}
	m["flow_control"] = FlowCTS
	m["collective_average"] = mode
	m["rank_time_us"] = us
	m["cts_writes"] = writes
	if !c.run.looped() {
		return t
	}
	// Iteration i's time: from the end of the one before (its last
	// rank's), or its phase's start, to its own last rank's end.
	iters := c.run.iterations()
	ends := make([]ib.PS, iters)
	for _, rk := range c.ranks {
		for i, e := range rk.cts.iterEnd {
			ends[i] = max(ends[i], e)
		}
	}
	it := make([]float64, iters)
	var timedIt []ib.PS
	prev := c.warmStart
	for i := range iters {
		if i == c.run.Warmup {
			prev = c.start
		}
		d := ends[i] - prev
		prev = ends[i]
		it[i] = d.Nanoseconds() / 1000
		if i >= c.run.Warmup {
			timedIt = append(timedIt, d)
		}
	}
	lo, hi := slices.Min(timedIt), slices.Max(timedIt)
	m["iterations"] = c.run.timedIterations()
	m["warmup_iterations"] = c.run.Warmup
	m["time_us_min"] = lo.Nanoseconds() / 1000
	m["time_us_max"] = hi.Nanoseconds() / 1000
	m["iteration_time_us"] = it
	return t
}
