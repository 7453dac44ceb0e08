package hca

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// Shared receive queues (ibv_srq), laid out as libmlx5 lays them out
// (rdma-core providers/mlx5/srq.c, mlx5_alloc_srq_buf, mlx5_post_srq_recv,
// mlx5_free_srq_wqe; verbs.c mlx5_create_srq):
//
//   - The ring holds depth = the power of two at or above max_wr + 1 WQEs
//     (align_queue_size(max_wr + 1)), each of stride = the power of two at
//     or above max(32, 16 + 16 × max_sge) bytes: a 16-byte next segment
//     (struct mlx5_wqe_srq_next_seg: 2 reserved bytes, next_wqe_index
//     be16, signature, 11 reserved) and the data segments
//     (mlx5_wqe_data_seg, 16 bytes each), max_sge then (stride − 16) / 16.
//   - The WQEs form a linked list through next_wqe_index, not a ring: at
//     create slot i points to i + 1 (mod depth), head = 0, tail = depth −
//     1. A post writes the WQE at head and moves head to its next index;
//     head == tail is full (ENOMEM), so at most depth − 1 WQEs are
//     posted. Polling a receive CQE frees its WQE (wqe_counter is the
//     slot): the tail's next index is set to it and it becomes the tail.
//     So the WQEs are taken in the order posted, and their slots follow
//     the ring only while CQEs are polled in the order the WQEs were
//     taken.
//   - The doorbell record holds the count of WQEs posted (srq->counter).
//
// The HCA side: it learns of posted WQEs from the doorbell (as for an RQ,
// MMIO latency after the CPU's store; a modelling choice, mlx5 reads the
// record) and prefetches them into an on-chip cache shared by the SRQ's
// QPs, up to hca.wqe_prefetch_depth 64-byte blocks, each read a run of
// contiguous slots. It follows the list assuming it follows the ring (as
// it does after create, and while WQEs are freed in the order taken): the
// next slot is read without waiting for the WQE before it. Where the list
// leaves the ring, a read stops after the WQE whose next index is not the
// following slot (mod depth), and the read from that next index issues no
// sooner than the read that brings it completes. (A real prefetcher might read past the
// break speculatively and discard; the bytes of such a read are not
// modelled.) As for an RQ, the window holds the WQEs read or being read
// and not taken, [taken, fetch); the prefetch moves on after every take;
// a responder that takes a WQE whose read is in flight waits for that
// read (qp.rqWait). The prefetch asks for each WQE at its doorbell or at
// the take before it (the window has room for at least one), so a WQE the
// HCA knows is posted is always on chip or being read when a responder
// takes it; one that is neither is a model bug (srqInvariant).

// srqNextBytes is the next segment before an SRQ WQE's data segments
// (struct mlx5_wqe_srq_next_seg).
const srqNextBytes = 16

// MaxSRQWR is the most WQEs an SRQ may be created for (the device's
// max_srq_wr): mlx5_ib_query_device gives (1 << log_max_srq_sz) − 1;
// ConnectX's ibv_devinfo shows 32767 (assumed: not in our sources).
const MaxSRQWR = 32767

// MaxSRQSGE is the most scatter elements an SRQ WQE may carry (the
// device's max_srq_sge): mlx5_ib_query_device gives max_rq_sg − 1, the
// next segment taking one of a receive descriptor's 16-byte segments; with
// the model's 32 (MaxRecvSGE), 31.
const MaxSRQSGE = MaxRecvSGE - 1

// SRQ is a shared receive queue: a linked list of receive WQEs in host
// memory with its own doorbell record, and the HCA's SRQ context. QPs
// created on it (CreateQPSRQ) take their receive WQEs from it.
type SRQ struct {
	Num uint32
	PD  uint32
	// MaxWR is the most WQEs it holds posted: depth − 1 (ibv_create_srq
	// returns it in attr.max_wr, at least the max_wr asked for).
	MaxWR int
	// MaxSGE is the most scatter elements a WR may carry: (stride − 16) /
	// 16, at least the max_sge asked for.
	MaxSGE int
	dev    *Device
	thread *Thread // the application thread its posts run on
	// qps counts the QPs on it not destroyed (DestroySRQ refuses while
	// there are any); destroyed: DestroySRQ ran.
	qps       int
	destroyed bool

	buf    uint64 // the ring, depth × stride bytes
	depth  int    // WQE slots, a power of two
	stride int    // bytes per WQE, a power of two ≥ 32
	dbr    uint64 // doorbell record: WQEs posted

	// Application side (libmlx5's struct mlx5_srq).
	head, tail uint16   // the free list's ends (slots)
	counter    uint32   // WQEs posted
	wrid       []uint64 // wr_id by slot

	// HCA side.
	limit    int    // armed srq_limit (0: disarmed)
	db       uint32 // WQEs the HCA knows are posted
	fetch    uint32 // WQEs whose read was issued
	nextSlot uint16 // the slot of WQE number fetch (the list's next)
	// chainAt: the HCA knows nextSlot only from then (the read of the WQE
	// before it, whose next index broke the ring's order, completes).
	chainAt ib.PS
	slots   []uint16 // slot of WQE number n at n mod depth (read issued)
	// readDone holds, by WQE number modulo the prefetch window, when the
	// prefetch read of that WQE puts it on chip (as QP.rqReadDone): a
	// responder that takes a WQE whose read is in flight waits for it.
	readDone []ib.PS
	cache    ring[srqEntry] // WQEs on chip, in posting order
	taken    uint32         // WQEs taken by the responders
	dmaSlot  ib.PS          // start of the SRQ's last read in the dma stage (stage.acceptQP)
	// parseSlot is the start of the SRQ's last parse in the wqe_fetch
	// stage (ps; stage.acceptQP): its WQEs are parsed in the order read.
	parseSlot ib.PS
}

// srqEntry is a WQE in the SRQ's on-chip cache, seq its position in
// posting order.
type srqEntry struct {
	w   RecvWQE
	seq uint32
}

// AsyncEventType is ibv_event_type, the events the model raises.
type AsyncEventType uint8

// Asynchronous events.
const (
	// EventSRQLimitReached: the SRQ's WQEs fell below its armed limit
	// (IBV_EVENT_SRQ_LIMIT_REACHED).
	EventSRQLimitReached AsyncEventType = iota + 1
	// EventQPLastWQEReached: a QP on an SRQ went to ERR
	// (IBV_EVENT_QP_LAST_WQE_REACHED).
	EventQPLastWQEReached
)

// AsyncEvent is an affiliated asynchronous event (struct ibv_async_event):
// its type, the SRQ or QP it concerns and when the HCA raised it (ps).
type AsyncEvent struct {
	Type AsyncEventType
	SRQ  *SRQ
	QP   *QP
	At   ib.PS
}

// GetAsyncEvent returns the oldest asynchronous event not yet read, or
// false when there is none (ibv_get_async_event, without blocking). The
// event queue write and its interrupt are not timed: an event is there
// from when the HCA raised it.
func (d *Device) GetAsyncEvent() (AsyncEvent, bool) {
	if len(d.asyncEvents) == 0 {
		return AsyncEvent{}, false
	}
	e := d.asyncEvents[0]
	d.asyncEvents = d.asyncEvents[1:]
	return e, true
}

// CreateSRQ makes a shared receive queue in pd for maxWR WQEs of maxSGE
// scatter elements each (ibv_create_srq; its srq_limit is not armed). A
// count outside 1 … MaxSRQWR or 1 … MaxSRQSGE is refused with EINVAL, as
// mlx5_create_srq refuses one above the device's.
func (d *Device) CreateSRQ(pd uint32, maxWR, maxSGE int) (*SRQ, error) {
	if err := d.checkLive(pd); err != nil {
		return nil, err
	}
	if maxWR < 1 || maxWR > MaxSRQWR {
		return nil, fmt.Errorf("hca: %s srq max_wr %d is not 1 … %d: %w", d.Name, maxWR, MaxSRQWR, syscall.EINVAL)
	}
	if maxSGE < 1 || maxSGE > MaxSRQSGE {
		return nil, fmt.Errorf("hca: %s srq max_sge %d is not 1 … %d: %w", d.Name, maxSGE, MaxSRQSGE, syscall.EINVAL)
	}
	depth := 1
	for depth < maxWR+1 {
		depth *= 2
	}
	stride := 32
	for stride < srqNextBytes+maxSGE*dsBytes {
		stride *= 2
	}
	s := &SRQ{Num: uint32(len(d.srqs)), PD: pd, MaxWR: depth - 1, MaxSGE: (stride - srqNextBytes) / dsBytes,
		dev: d, thread: &d.main, depth: depth, stride: stride, tail: uint16(depth - 1),
		wrid: make([]uint64, depth), slots: make([]uint16, depth)}
	s.buf = d.Malloc(depth * stride)
	s.dbr = d.Malloc(8)
	var next [srqNextBytes]byte
	for i := 0; i < depth; i++ {
		binary.BigEndian.PutUint16(next[2:], uint16((i+1)&(depth-1)))
		d.Mem.Write(s.buf+uint64(i*stride), next[:])
	}
	d.srqs = append(d.srqs, s)
	return s, nil
}

// Stride returns the bytes of one of the SRQ's WQEs.
func (s *SRQ) Stride() int { return s.stride }

// Depth returns the SRQ's WQE slots (MaxWR + 1).
func (s *SRQ) Depth() int { return s.depth }

// SetThread moves the SRQ's posts to thread t.
func (s *SRQ) SetThread(t *Thread) { s.thread = t }

// nextIndex reads the next_wqe_index of the WQE at slot from host memory.
func (s *SRQ) nextIndex(slot uint16) uint16 {
	var b [2]byte
	s.dev.Mem.Read(s.buf+uint64(slot)*uint64(s.stride)+2, b[:])
	return binary.BigEndian.Uint16(b[:])
}

// ModifySRQ arms the SRQ's limit (ibv_modify_srq with IBV_SRQ_LIMIT): when
// a responder takes a WQE and fewer than limit are left posted, the HCA
// raises EventSRQLimitReached once and disarms it; a new ModifySRQ arms it
// again. 0 disarms. A limit of depth or more is refused with EINVAL (the
// kernel's mlx5_ib_modify_srq: srq_limit >= msrq.max). The limit takes
// effect at once (the firmware command's time is not modelled).
func (d *Device) ModifySRQ(s *SRQ, limit int) error {
	if limit < 0 || limit >= s.depth {
		return fmt.Errorf("srq %d: srq_limit %d is not 0 … %d (its max_wr): %w", s.Num, limit, s.MaxWR, syscall.EINVAL)
	}
	s.limit = limit
	return nil
}

// SRQAttr is what QuerySRQ returns (struct ibv_srq_attr).
type SRQAttr struct {
	MaxWR    int // WQEs it holds posted: depth − 1
	MaxSGE   int // scatter elements a WR may carry: (stride − 16) / 16
	SRQLimit int // the armed limit, 0 when disarmed (or once it fired)
}

// QuerySRQ returns the SRQ's attributes (ibv_query_srq; the kernel's
// mlx5_ib_query_srq: max_wr = msrq.max − 1, max_sge = msrq.max_gs, the
// values create returned, and srq_limit = the SRQ context's lwm). The
// limit reads 0 once the limit event has fired, the SRQ disarmed, as rxe's
// srq->limit (rxe_query_srq) does; that mlx5 firmware clears lwm there is
// assumed, not in our sources. The firmware command's time is not
// modelled.
func (d *Device) QuerySRQ(s *SRQ) SRQAttr {
	return SRQAttr{MaxWR: s.MaxWR, MaxSGE: s.MaxSGE, SRQLimit: s.limit}
}

// Posted returns the WQEs posted to the SRQ and not yet taken by a
// responder, as the HCA counts them (the doorbells it has seen).
func (s *SRQ) Posted() int { return int(cntDiff(s.db, s.taken)) }

// PostSRQRecv writes a receive WQE at the head of the SRQ's free list and
// updates its doorbell record (ibv_post_srq_recv, mlx5_post_srq_recv): more
// elements than MaxSGE is EINVAL, a full SRQ (head == tail) ENOMEM.
func (d *Device) PostSRQRecv(s *SRQ, wr *RecvWR) error {
	if s.destroyed {
		return fmt.Errorf("srq %d: post_srq_recv on a destroyed SRQ: %w", s.Num, syscall.EINVAL)
	}
	if wr.SGL != nil {
		if wr.Addr != 0 || wr.Length != 0 || wr.LKey != 0 {
			return fmt.Errorf("srq %d: receive WR sets both SGL and Addr/Length/LKey (give one scatter element or a list): %w", s.Num, syscall.EINVAL)
		}
		if len(wr.SGL) > s.MaxSGE {
			return fmt.Errorf("srq %d: receive WR with %d SGEs, more than the SRQ's max_sge %d: %w", s.Num, len(wr.SGL), s.MaxSGE, syscall.EINVAL)
		}
		if sglLength(wr.SGL) > 1<<31 {
			return fmt.Errorf("srq %d: receive WR's SGEs hold %d bytes, more than a message's 2^31: %w", s.Num, sglLength(wr.SGL), syscall.EINVAL)
		}
	}
	if s.head == s.tail {
		return fmt.Errorf("srq %d: full (%d WQEs posted, its max_wr): %w", s.Num, s.MaxWR, syscall.ENOMEM)
	}
	slot := s.head
	at := s.buf + uint64(slot)*uint64(s.stride)
	s.wrid[slot] = wr.ID
	s.head = s.nextIndex(slot)
	// The data segments after the next segment, which keeps its index.
	var b [MaxRecvSGE * RecvWQEBytes]byte
	n := s.stride - srqNextBytes
	EncodeRecvWQE(b[:n], wr)
	d.Mem.Write(at+srqNextBytes, b[:n])
	s.counter++
	d.Mem.WriteU32(s.dbr, s.counter&0xffff)
	s.thread.freeAt = max(d.s.Now(), s.thread.freeAt) + ib.FromNanoseconds(d.Cfg.Host.PostNS)
	e := d.at(d.PCIe.MMIO(s.thread.freeAt), evSRQDoorbell)
	e.Arg = int64(s.Num)<<32 | int64(s.counter)
	return nil
}

// freeSRQWQE puts the WQE at slot back at the tail of the free list
// (mlx5_free_srq_wqe), as polling its CQE does.
func (s *SRQ) freeWQE(slot uint16) {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], slot)
	s.dev.Mem.Write(s.buf+uint64(s.tail)*uint64(s.stride)+2, b[:])
	s.tail = slot
}

// CreateQPSRQ makes an RC QP as CreateQP does, with no receive queue of
// its own (CreateUDQPSRQ: a UD QP): its receives come from srq
// (ibv_qp_init_attr.srq). The SRQ must be in the QP's PD (the model checks
// a receive buffer's L_Key against the QP's PD). Its send caps are the
// device's (CreateQPSRQCap with a zero QPCap).
func (d *Device) CreateQPSRQ(pd uint32, scq, rcq *CQ, sqBBs int, srq *SRQ) (*QP, error) {
	return d.createQPSRQ(pd, scq, rcq, sqBBs, srq, QPCap{}, false)
}

// CreateQPSRQCap makes an RC QP on srq as CreateQPSRQ does, for the send
// caps c, by CreateQPCap's rules: at most c.MaxSendSGE gather elements a
// send WR (0: the device's MaxSendSGE), inline sends of at most
// QPInlineLimit bytes for c.MaxInlineData (0: hca.max_inline_bytes), a cap
// above the device's refused with EINVAL and a post beyond the QP's with
// ENOMEM. c.MaxRecvSGE is not looked at: a QP on an SRQ has no receive
// queue, its receives take the SRQ's elements (the kernel's mlx5
// set_rq_size, for a QP without an RQ, sets cap->max_recv_sge to 0 and
// checks nothing of it).
func (d *Device) CreateQPSRQCap(pd uint32, scq, rcq *CQ, sqBBs int, srq *SRQ, c QPCap) (*QP, error) {
	return d.createQPSRQ(pd, scq, rcq, sqBBs, srq, c, false)
}

// createQPSRQ is CreateQPSRQCap for an RC or (ud) a UD QP.
func (d *Device) createQPSRQ(pd uint32, scq, rcq *CQ, sqBBs int, srq *SRQ, c QPCap, ud bool) (*QP, error) {
	if srq == nil || srq.dev != d {
		return nil, fmt.Errorf("hca: %s: a QP's SRQ must be one of the device's SRQs", d.Name)
	}
	if srq.destroyed {
		return nil, fmt.Errorf("hca: %s: srq %d is destroyed: %w", d.Name, srq.Num, syscall.EINVAL)
	}
	if err := d.checkLive(pd, scq, rcq); err != nil {
		return nil, err
	}
	if srq.PD != pd {
		return nil, fmt.Errorf("hca: %s: srq %d is in PD %d, the QP in PD %d (the model needs one PD for both)", d.Name, srq.Num, srq.PD, pd)
	}
	if err := d.checkSendCap(c); err != nil {
		return nil, err
	}
	qp := d.newQP(pd, scq, rcq, sqBBs, 0, srq.stride, srq.MaxSGE)
	qp.srq = srq
	qp.setSendCap(c, ud)
	srq.qps++
	return qp, nil
}

// CreateUDQPSRQ makes a UD QP with Q_Key qkey on srq, as CreateUDQP does
// with its own RQ. A datagram's GRH area and payload are scattered over
// the SRQ WQE's elements as over an RQ WQE's (receiveUD).
func (d *Device) CreateUDQPSRQ(pd uint32, scq, rcq *CQ, sqBBs int, srq *SRQ, qkey uint32) (*QP, error) {
	return d.CreateUDQPSRQCap(pd, scq, rcq, sqBBs, srq, qkey, QPCap{})
}

// CreateUDQPSRQCap makes a UD QP on srq as CreateUDQPSRQ does, for the
// send caps c (CreateQPSRQCap's rules; the inline limit from a UD send
// WQE's overhead, as CreateUDQPCap's).
func (d *Device) CreateUDQPSRQCap(pd uint32, scq, rcq *CQ, sqBBs int, srq *SRQ, qkey uint32, c QPCap) (*QP, error) {
	qp, err := d.createQPSRQ(pd, scq, rcq, sqBBs, srq, c, true)
	if err != nil {
		return nil, err
	}
	qp.QKey = qkey
	return qp, nil
}

// SRQ returns the QP's shared receive queue (nil when it has its own RQ).
func (qp *QP) SRQ() *SRQ { return qp.srq }

// srqArg packs an SRQ's number and a 32-bit value into an event's Arg.
func srqArg(s *SRQ, v uint32) int64 { return int64(s.Num)<<32 | int64(v) }

// eventSRQ returns the SRQ an event's Arg names (srqArg).
func (d *Device) eventSRQ(arg int64) *SRQ {
	i := int(uint64(arg) >> 32)
	if i >= len(d.srqs) {
		panic(fmt.Sprintf("hca: %s: event names no SRQ (arg %#x)", d.Name, arg))
	}
	return d.srqs[i]
}

// srqDoorbell: the HCA learns of newly posted SRQ WQEs and prefetches them.
func (d *Device) srqDoorbell(s *SRQ, pi uint32) {
	if s.destroyed {
		return
	}
	if cntDiff(pi, s.db) > 0 {
		s.db = pi
	}
	d.srqFetch(s, d.s.Now())
}

// srqFetch issues reads of posted WQEs up to the prefetch window
// (hca.wqe_prefetch_depth 64-byte blocks, as an RQ's), each a run of
// contiguous slots along the list: it ends at the ring's end, or after a
// WQE whose next index is not the following slot, the read after it then
// waiting for that one.
func (d *Device) srqFetch(s *SRQ, t ib.PS) {
	if cntDiff(s.fetch, s.taken) < 0 {
		d.srqInvariant(s, -2)
	}
	window := d.srqWindow(s)
	if len(s.readDone) != window {
		s.readDone = make([]ib.PS, window)
	}
	mask := uint16(s.depth - 1)
	for {
		avail := int(cntDiff(s.db, s.fetch))
		// Held: the WQEs read or being read that no responder has taken,
		// [taken, fetch), as an RQ's (recvFetch). A read in flight for
		// WQEs taken meanwhile holds none.
		room := window - int(cntDiff(s.fetch, s.taken))
		if avail <= 0 || room <= 0 {
			return
		}
		first := s.nextSlot
		n := min(avail, room, s.depth-int(first))
		k, slot, next, broke := 0, first, first, false
		for k < n && !broke {
			s.slots[(s.fetch+uint32(k))%uint32(s.depth)] = slot
			next = s.nextIndex(slot)
			broke = next != (slot+1)&mask
			k++
			slot++
		}
		issue := max(t, s.chainAt)
		done := d.PCIe.Read(d.stages[StageDMA].acceptQP(issue, &s.dmaSlot, 0), s.buf+uint64(first)*uint64(s.stride), k*s.stride)
		done = d.stages[StageWQEFetch].acceptQP(done, &s.parseSlot, 0)
		for i := range k {
			// Reads start only for room in [taken, taken + window), so no
			// two WQE numbers in flight share a place.
			s.readDone[(s.fetch+uint32(i))%uint32(window)] = done
		}
		e := d.at(done, evSRQFetched)
		e.Arg = srqArg(s, s.fetch)
		e.Port = int32(k)
		s.fetch += uint32(k)
		s.nextSlot = next
		if broke {
			s.chainAt = done // the list leaves the ring's order here
		}
	}
}

// srqWindow returns how many WQEs the SRQ's prefetch holds on chip or in
// flight at most: hca.wqe_prefetch_depth 64-byte blocks of its stride.
func (d *Device) srqWindow(s *SRQ) int {
	return RecvWindow(d.Cfg.WQEPrefetchDepth, s.stride)
}

// srqFetched puts n WQEs read from number start on chip (those not taken
// while the read was in flight).
func (d *Device) srqFetched(s *SRQ, start uint32, n int) {
	if s.destroyed {
		return // its WQEs went with it
	}
	for i := 0; i < n; i++ {
		seq := start + uint32(i)
		if cntDiff(seq, s.taken) < 0 {
			continue // taken while this read was in flight (qp.rqWait)
		}
		slot := s.slots[seq%uint32(s.depth)]
		w := s.readWQE(slot)
		s.cache.push(srqEntry{w: w, seq: seq}, d.srqWindow(s))
		d.traceSRQFetch(s, slot)
	}
	d.srqFetch(s, d.s.Now())
}

// traceSRQFetch announces an SRQ WQE put on chip by the prefetch:
// wqe_fetch with srq (the SRQ's number), queue=srq and wqe (its slot, the
// receive CQE's wqe_counter), and no qpn (the WQE is no QP's until a
// responder takes it).
func (d *Device) traceSRQFetch(s *SRQ, slot uint16) {
	if d.NumHooks() == 0 {
		return
	}
	ev := d.s.TraceEvent(d.s.Now(), d.Name, components.TraceWQEFetch)
	ev.Fields = append(d.fieldBuf[:0], components.IntField("srq", int64(s.Num)),
		components.StrField("queue", "srq"), components.IntField("wqe", int64(slot)))
	d.InvokeHook(sim.HookCtx{Domain: d, Pos: components.HookPosTrace, Item: ev})
	d.fieldBuf = ev.Fields[:0]
}

// readWQE decodes the WQE at slot from host memory; its Index is the slot
// (the CQE's wqe_counter for an SRQ).
func (s *SRQ) readWQE(slot uint16) RecvWQE {
	var b [MaxRecvSGE * RecvWQEBytes]byte
	s.dev.Mem.Read(s.buf+uint64(slot)*uint64(s.stride)+srqNextBytes, b[:s.stride-srqNextBytes])
	w := DecodeRecvWQE(b[:s.stride-srqNextBytes])
	w.Index = uint32(slot)
	return w
}

// popSRQ takes qp's next receive WQE from its SRQ: the next in posting
// order, from the cache, or, if its prefetch read is in flight, waiting
// for that read (qp.rqWait). As for an RQ (PopRecv), the prefetch asks
// for every WQE the HCA knows is posted, at its doorbell or at the take
// before it, so one that is neither on chip nor being read is a model bug
// (srqInvariant). The prefetch then goes on after it.
func (qp *QP) popSRQ() (RecvWQE, bool) {
	s := qp.srq
	d := s.dev
	if e, ok := s.cache.pop(); ok {
		if e.seq != s.taken {
			// The cache holds [taken, …) in order: a WQE taken while its
			// read was in flight is never put on chip (srqFetched).
			d.srqInvariant(s, int64(e.seq))
		}
		s.taken++
		d.srqTook(s)
		d.srqFetch(s, d.s.Now())
		return e.w, true
	}
	if cntDiff(s.db, s.taken) <= 0 {
		return RecvWQE{}, false
	}
	if cntDiff(s.fetch, s.taken) <= 0 {
		d.srqInvariant(s, -1)
	}
	// The cache is empty and every WQE of [taken, fetch) is on chip or
	// being read: this one's read is in flight. Wait for it, as a
	// responder that has asked for a WQE does, not reading it again.
	slot := s.slots[s.taken%uint32(s.depth)]
	qp.rqWait = s.readDone[s.taken%uint32(len(s.readDone))]
	w := s.readWQE(slot)
	s.taken++
	d.srqTook(s)
	d.srqFetch(s, d.s.Now())
	return w, true
}

// srqInvariant stops the run at a broken SRQ invariant: a model bug
// (recvInvariant's reasons), with the SRQ's counters. front is the number
// of the WQE found at the cache's front instead of the next to take, −1
// for a WQE posted but neither on chip nor being read, −2 for the
// prefetch behind the takes.
//
//go:noinline
func (d *Device) srqInvariant(s *SRQ, front int64) {
	what := fmt.Sprintf("WQE number %d is posted but neither on chip nor being read", s.taken)
	switch {
	case front >= 0:
		what = fmt.Sprintf("the cache's front is WQE number %d, the next to take %d", front, s.taken)
	case front == -2:
		what = "fetch behind taken"
	}
	panic(fmt.Sprintf("hca: %s srq %d: shared receive queue invariant broken (a model bug): %s; taken %d, fetch %d, doorbell %d",
		d.Name, s.Num, what, s.taken, s.fetch, s.db))
}

// srqTook raises the SRQ limit event when a WQE taken leaves fewer than
// the armed limit posted, and disarms it (rxe get_srq_wqe: count <
// srq->limit after the take; the ibv_modify_srq man page: the event fires
// when the WQEs drop below srq_limit, once per arming).
func (d *Device) srqTook(s *SRQ) {
	if s.limit > 0 && int(cntDiff(s.db, s.taken)) < s.limit {
		s.limit = 0
		d.asyncEvents = append(d.asyncEvents, AsyncEvent{Type: EventSRQLimitReached, SRQ: s, At: d.s.Now()})
	}
}
