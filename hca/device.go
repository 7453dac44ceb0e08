package hca

import (
	"fmt"
	"math/bits"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// Event kinds the device schedules for itself.
const (
	evDoorbell uint8 = iota + 1
	evWQEFetched
	evWQEReady
	evRecvDoorbell
	evRecvFetched
	evSchedule
	evTrySend
	evRxTail
	evRxDone
	evCQEVisible
	evMemVisible
	evTimeout
	evStageEdge
	evRxRelease  // a received packet's VL buffer space frees (VL, Arg = blocks)
	evCCTick     // congestion control: a CCTI_Timer expiry (cc.go)
	evPostWrites // PCIe: book the posted writes issued by now + horizon (PCIe.Flush)
	evLoopback   // a multicast packet's copy for the sending HCA's own attached QPs reaches transport-rx (mcast.go)
	evLoopbackDone
	evSRQDoorbell // an SRQ's doorbell (Arg: srqArg, the WQEs posted)
	evSRQFetched  // SRQ WQEs read (Arg: srqArg, the first's number; Port: how many)
	evArmCQ       // a CQ's arm doorbell reaches the HCA (Arg: CQ number << 32 | consumer index; VL 1: solicited only; cqevent.go)
	evCQEvent     // a completion event reaches its channel, the thread awake (Arg: CQ number; cqevent.go)
	evCQModTimer  // a CQ's moderation timer expires (Arg: CQ number << 32 | timer generation; cqmod.go)
)

// Kinds of WriteNote: what a posted write booked late does at its end.
const (
	writeCQE     uint8 = iota + 1 // a CQE: it lands when visible (cqeQ)
	writePayload                  // a received packet's payload: its buffer frees, hooks see it
	writeMKey                     // an MKey context written back to ICM (a bind, an invalidate): nothing at its end
	writeEQE                      // an event queue entry (cqevent.go): nothing at its end
	writeMSIX                     // an MSI-X message (Addr: the CQ number): the interrupt reaches the host at its end
	writeContext                  // a CQ or SRQ context written back to ICM at its eviction (ctxcache.go): nothing at its end
)

// txEntry is a packet waiting for the wire.
type txEntry struct {
	pkt     *ib.Packet
	readyAt ib.PS
	qp      *QP
	// udWQE is the UD send this packet completes when it leaves (UD has no
	// ACK: the WQE is done once its packet is on the wire). An entry with no
	// packet only completes udWQE with udStatus, in queue order.
	udWQE    *SendWQE
	udStatus WCStatus
	// readRes, when not 0, makes the entry a READ reply of qp's responder
	// resource readRes−1: it stays at the head of the response queue until
	// the reply's last response leaves, readyAt the time its next response
	// is ready, pkt that response once built.
	readRes int
}

// txQueue is a FIFO of packets in the order they were built.
type txQueue struct {
	items []txEntry
	head  int
}

func (q *txQueue) push(e txEntry) { q.items = append(q.items, e) }
func (q *txQueue) len() int       { return len(q.items) - q.head }
func (q *txQueue) peek() *txEntry { return &q.items[q.head] }
func (q *txQueue) pop() txEntry {
	e := q.items[q.head]
	q.items[q.head] = txEntry{}
	q.head++
	if q.head > 1024 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		q.items = q.items[:n]
		q.head = 0
	}
	return e
}

// pendingCQE is a CQE on its way to host memory; CQE writes are posted and
// ordered, so they become visible in the order they were issued.
type pendingCQE struct {
	cq  *CQ
	cqe CQE
}

// Counters are a device's event counts.
type Counters struct {
	ReqPackets  int64 // request packets sent (including retransmissions)
	RespPackets int64 // ACK, NAK and response packets sent
	RxPackets   int64
	Acks        int64 // ACKs sent
	Naks        int64 // NAKs sent (sequence, invalid, access, RNR)
	RNRNaks     int64
	AcksDropped int64 // by the fault-injection hook
	Timeouts    int64
	CQEs        int64
	CQOverruns  int64
	PayloadTx   int64 // payload bytes of request and read-response packets sent
	PayloadRx   int64 // payload bytes placed in host memory
	// RecvWQEWaits are receive WQEs a packet took while their prefetch
	// read was still in flight, and waited for.
	RecvWQEWaits int64
	UDDrops      int64 // UD packets dropped: bad Q_Key, no receive WQE, wrong QP type
	// NoQPDrops are unicast packets dropped for want of a QP to take them:
	// a QPN the device has no QP of, or a destroyed one's (DestroyQP), or
	// a QP not yet ready to receive (RESET, INIT).
	NoQPDrops int64
	// McastCopies are the copies of multicast packets handed to attached
	// QPs (a packet to a group with k QPs attached makes k; a copy a QP
	// drops for want of a receive WQE counts here and in UDDrops).
	McastCopies int64
	// McastDrops are multicast packets dropped whole: no QP attached to
	// the group, or not a UD SEND with a GRH to QP 0xFFFFFF.
	McastDrops int64
	// McastLoopback are multicast packets this HCA sent to a group it has
	// QPs attached to, copied to them inside the HCA (mcast.go, loopback).
	McastLoopback int64
	// EQEs are the event queue entries written (one per completion event
	// an armed CQ fired, cqevent.go); Interrupts the MSI-X messages sent
	// (one per EQE: no interrupt moderation); CQEvents the completion
	// events delivered to their channels.
	EQEs, Interrupts, CQEvents int64
}

// Device is one HCA with its host: CPU-side verbs, host memory, the PCIe
// link and the HCA pipeline, attached to one IB port.
type Device struct {
	// sglPieces is scratch for the parts of a scatter/gather list one
	// packet reads or writes (gather, scatter): no allocation per packet.
	sglPieces []SGE
	// inlineCopy is the CPU's copy of an inline post's bytes (PostSend),
	// kept so that a post allocates nothing.
	inlineCopy []byte
	sim.HookableBase

	// Stage handshake state for waveforms (stageEdge); touched only while a
	// hook listens.
	stageItems, stageBusy  [NumStages]int
	stageValid, stageReady [NumStages]int64
	stageTrace             bool // EnableStageTrace was called

	Name  string
	LID   uint16
	Cfg   Config
	Mem   *HostMemory
	Alloc *Allocator
	PCIe  *PCIe
	Keys  KeyTable
	Port  *link.Port

	// sl2vl is the port's SL-to-VL table (SetPortQoS): a QP's packets go on
	// the VL its SL maps to (a CA port maps SL to VL as a switch port does;
	// OpenSM programs it alike). The zero table puts every SL on VL 0.
	sl2vl [16]uint8

	// mcast is the multicast table: the groups QPs are attached to
	// (AttachMcast, mcast.go).
	mcast []mcastGroup

	s        *components.Sim
	cycle    ib.PS
	stages   [NumStages]stage
	keyCache *KeyCache
	// missExtraPS is on-chip time a key-cache miss adds after its context
	// read (hca.key_miss_extra_ns), ps.
	missExtraPS ib.PS
	// mtt is the address-translation cache (hca.mtt_cache_entries), nil
	// when translation is not modelled; pageShift is log2 of
	// hca.mtt_page_bytes.
	mtt       *MTTCache
	pageShift uint
	// qpc is the QP context cache (hca.qp_cache_entries, qpcache.go), nil
	// when QP contexts are not modelled.
	qpc *ContextCache
	// cqc, srqc and eqc are the CQ, SRQ and EQ context caches
	// (hca.cq_cache_entries, hca.srq_cache_entries, hca.eq_cache_entries;
	// ctxcache.go), nil when those contexts are not modelled.
	cqc, srqc, eqc *ContextCache

	qps  []*QP
	cqs  []*CQ
	srqs []*SRQ
	// channels are the completion channels (CreateCompChannel).
	channels []*CompChannel
	// asyncEvents are the affiliated asynchronous events raised and not
	// yet read (GetAsyncEvent).
	asyncEvents []AsyncEvent
	nextPD      uint32
	freedPDs    map[uint32]bool // PDs DeallocPD freed
	rr          int             // round-robin pointer over qps
	// mayWork has bit i set when qps[i]'s requester may have a packet to
	// send: markWork sets it at every change that can give a QP work, and
	// pickQP clears it when it finds the QP idle. It holds every QP the
	// round-robin scan would find eligible (and maybe more), so pickQP
	// walks only its members and picks exactly what the scan would.
	mayWork []uint64

	// tx is the transmit side per data VL (txarb.go): each VL's request
	// and response queues and its share of the transmit buffer, so a VL
	// short of credits holds back only its own packets.
	tx        txPort
	wakeAt    ib.PS            // an evTrySend is queued for this time (0 = none)
	schedAt   ib.PS            // an evSchedule is queued for this time (0 = none)
	rxPending int              // packets between tail arrival and processing
	cqeQ      ring[pendingCQE] // CQEs posted to PCIe, not yet visible, in issue order
	// rxWriteEnd is when the payload write of the packet being received
	// ends on the PCIe link (ps; 0: none yet): its buffer frees by it.
	rxWriteEnd ib.PS
	// rxVL and rxBlocks are the VL and receive-buffer blocks of the packet
	// being received, for a payload write booked late (postedBooked).
	rxVL     int8
	rxBlocks int32
	// postAt is when the queued evPostWrites books the earliest posted
	// write the PCIe link keeps (0: none queued).
	postAt    ib.PS
	postFlush bool   // evPostWrites is booking them
	main      Thread // the application thread QPs post on unless moved (SetThread)

	// DropAcks makes the device discard the next n ACKs it receives: the
	// fault-injection hook for the retry test.
	DropAcks int
	// OnCQE is called when a CQE becomes visible in host memory.
	OnCQE func(cq *CQ, now ib.PS)
	// OnMemWrite is called when payload written by the HCA becomes visible
	// (write_lat polls the buffer's last byte).
	OnMemWrite func(addr uint64, n int, now ib.PS)
	// Timeline, if set, records one message's passage (shared by both ends).
	Timeline *Timeline

	Counters  Counters
	fieldBuf  []components.TraceField
	statsFrom ib.PS

	// cc is congestion control's state (cc.go), nil when off.
	cc *ccState
	// atomics serialises the responder's atomics on one word (atomicunit.go).
	atomics atomicUnit
}

// NewDevice builds a device; cfg must have passed Validate. Attach a port
// with AttachPort before running.
func NewDevice(s *components.Sim, name string, lid uint16, cfg Config) *Device {
	d := &Device{Name: name, LID: lid, Cfg: cfg, s: s, Mem: NewHostMemory(),
		Alloc: NewAllocator(0x10_0000), PCIe: NewPCIe(cfg.PCIe), cycle: ib.CyclePS(cfg.CoreClockMHz),
		keyCache: NewKeyCache(cfg.KeyCacheEntries), missExtraPS: ib.FromNanoseconds(cfg.KeyMissExtraNS), nextPD: 1,
		pageShift: uint(bits.TrailingZeros(uint(cfg.MTTPageBytes)))}
	d.PCIe.clock = s
	// Every posted write passes the dma or the cqe stage (an atomic's
	// result write comes after its read, later still), so none is posted
	// for an issue time sooner than the shorter of their latencies.
	d.PCIe.horizon = ib.PS(min(cfg.DMA.LatencyCycles, cfg.CQE.LatencyCycles)) * d.cycle
	d.PCIe.onBooked = d.postedBooked
	if cfg.MTTCacheEntries > 0 {
		d.mtt = &MTTCache{lru: newLRU[uint64](cfg.MTTCacheEntries)}
	}
	if cfg.QPCacheEntries > 0 {
		d.qpc = newContextCache(cfg.QPCacheEntries, QPCBase, cfg.QPContextBytes)
	}
	if cfg.CQCacheEntries > 0 {
		d.cqc = newContextCache(cfg.CQCacheEntries, CQCBase, cfg.CQContextBytes)
	}
	if cfg.SRQCacheEntries > 0 {
		d.srqc = newContextCache(cfg.SRQCacheEntries, SRQCBase, cfg.SRQContextBytes)
	}
	if cfg.EQCacheEntries > 0 {
		d.eqc = newContextCache(cfg.EQCacheEntries, EQCBase, cfg.EQContextBytes)
	}
	scs := [NumStages]StageConfig{cfg.Doorbell, cfg.WQEFetch, cfg.KeyCheck, cfg.DMA, cfg.TransportTx, cfg.TransportRx, cfg.CQE}
	for i, sc := range scs {
		d.stages[i] = newStage(sc, d.cycle)
		d.stages[i].dev, d.stages[i].idx = d, i
		d.stages[i].gapFill = i == StageTransportTx || i == StageDMA || i == StageKeyCheck || i == StageWQEFetch
	}
	return d
}

// AttachPort makes the device's IB port with one data VL and
// hca.vl_buffer_bytes of receive buffer.
func (d *Device) AttachPort(lc *link.Config) *link.Port { return d.AttachPortVLs(lc, 1) }

// AttachPortVLs makes the device's IB port with vls data VLs (a port facing
// a switch has the switch's VL count), each with hca.vl_buffer_bytes. Each
// QP sends on the VL its SL maps to (SetPortQoS; VL 0 for every SL unless
// programmed).
func (d *Device) AttachPortVLs(lc *link.Config, vls int) *link.Port {
	d.Port = link.NewPort(d.s, d, d.Name+".Port[1]", 1, link.PortConfig{
		VLs: vls, BufferBlocks: d.Cfg.VLBufferBytes / ib.CreditBytes,
		FCRefresh: lc.FCRefresh(), FCMinInterval: lc.FCMinInterval()})
	return d.Port
}

// Sim returns the simulation the device runs in.
func (d *Device) Sim() *components.Sim { return d.s }

// CyclePS returns the core clock period.
func (d *Device) CyclePS() ib.PS { return d.cycle }

// StageStats returns each stage's activity since ResetStats.
func (d *Device) StageStats() [NumStages]StageStats {
	var out [NumStages]StageStats
	span := d.s.Now() - d.statsFrom
	for i := range d.stages {
		out[i] = d.stages[i].stats(span)
	}
	return out
}

// ResetStats starts the statistics window now (end of warm-up).
func (d *Device) ResetStats() {
	for i := range d.stages {
		st := &d.stages[i]
		st.busy, st.residency, st.items = 0, 0, 0
	}
	d.PCIe.up.busy, d.PCIe.down.busy = 0, 0
	d.statsFrom = d.s.Now()
	d.Counters = Counters{}
}

// PCIeUtilization returns the busy fraction of each PCIe direction since
// ResetStats.
func (d *Device) PCIeUtilization() (up, down float64) {
	return d.PCIe.Utilization(d.s.Now() - d.statsFrom)
}

// PostedWritesUntil returns when the device's PCIe link finishes the work
// booked on it (PCIe.BusyUntil): after that it holds no receive buffer
// space for it, so a fabric is idle only once every HCA is past it.
func (d *Device) PostedWritesUntil() ib.PS { return max(d.PCIe.BusyUntil(), d.PCIe.PendingUntil()) }

// KeyCache returns the translation cache (for its hit and miss counts).
func (d *Device) KeyCache() *KeyCache { return d.keyCache }

func (d *Device) at(t ib.PS, kind uint8) *components.Event {
	return d.s.Schedule(max(t, d.s.Now()), d, kind)
}

// trace announces a transport event to hooks, if any listen.
func (d *Device) trace(kind components.TraceKind, qpn uint32, fields ...components.TraceField) {
	if d.NumHooks() == 0 {
		return
	}
	ev := d.s.TraceEvent(d.s.Now(), d.Name, kind)
	ev.Fields = append(d.fieldBuf[:0], components.IntField("qpn", int64(qpn)))
	ev.Fields = append(ev.Fields, fields...)
	d.InvokeHook(sim.HookCtx{Domain: d, Pos: components.HookPosTrace, Item: ev})
	d.fieldBuf = ev.Fields[:0]
}

// traceKeyCheck announces a key check's result: key for an access of
// length bytes at addr (the fields are built only when traced).
func (d *Device) traceKeyCheck(qpn, key uint32, r KeyResult, addr, length uint64) {
	if d.NumHooks() == 0 {
		return
	}
	d.trace(components.TraceKeyCheck, qpn, components.IntField("key", int64(key)),
		components.StrField("result", r.String()), components.IntField("addr", int64(addr)),
		components.IntField("len", int64(length)))
}

// tracePacket announces a packet's inject (handed to the fabric) or
// deliver (accepted from it) with the standard packet fields; a delivered
// RDMA READ request also says how many PSNs it consumes.
func (d *Device) tracePacket(kind components.TraceKind, pkt *ib.Packet) {
	if d.NumHooks() == 0 {
		return
	}
	ev := d.s.TraceEvent(d.s.Now(), d.Name, kind)
	ev.Fields = ev.AppendPacket(d.fieldBuf[:0], pkt)
	if kind == components.TraceDeliver && pkt.Opcode == ib.RDMAReadRequest {
		if qp := d.qpByNum(pkt.DestQP); qp != nil && qp.resp != nil {
			ev.Fields = append(ev.Fields, components.IntField("psns", int64(PacketCount(pkt.RETH.Length, qp.resp.MTU))))
		}
	}
	d.InvokeHook(sim.HookCtx{Domain: d, Pos: components.HookPosTrace, Item: ev})
	d.fieldBuf = ev.Fields[:0]
}

// keyCheck runs one key through the key-check stage and returns when the
// check is done. The lookup takes the stage's latency; on a miss the HCA
// then reads the key's MKey context from host memory (ConnectX keeps it in
// ICM): a read request TLP up, the host's read latency, a completion of
// MKeyContextBytes down, through the same PCIe model as WQE and payload
// reads, so the read takes a tag and its TLPs share each direction with
// the others, served in time order (pcie.go). The context is checked as it
// arrives (no second pass through the stage), plus hca.key_miss_extra_ns.
// The read is the translation unit's, not the DMA engine's: it does not
// take a DMA-stage slot. A miss leaves the issue slot after one interval,
// so later keys are looked up while it waits (hit under miss); a later
// lookup of the key being read hits the allocated entry and waits for the
// same read to fill it.
func (d *Device) keyCheck(qp *QP, t ib.PS, key uint32) ib.PS {
	st := &d.stages[StageKeyCheck]
	start := st.issueQP(t, &qp.keySlot)
	done := start + st.lat
	done = d.keyCache.fetch(d.PCIe, done, key>>8, MKeyContextAddr(key), MKeyContextBytes, d.missExtraPS)
	return st.leave(t, start, done)
}

// qpArg packs a QP's number and a 32-bit value (a producer index, a WQE
// counter) into an event's Arg; eventQP and uint32(ev.Arg) take them apart.
func qpArg(qp *QP, v uint32) int64 { return int64(qp.Num)<<32 | int64(v) }

// eventQP returns the QP an event's Arg names (qpArg), nil when it was
// destroyed since the event was queued (DestroyQP: it does nothing more).
func (d *Device) eventQP(ev *components.Event) *QP {
	qp := d.qpByNum(uint32(uint64(ev.Arg) >> 32))
	if qp == nil {
		panic(fmt.Sprintf("hca: %s: event kind %d names no QP (arg %#x)", d.Name, ev.Kind, ev.Arg))
	}
	if qp.destroyed {
		return nil
	}
	return qp
}

// HandleEvent implements components.EventHandler.
func (d *Device) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case evStageEdge:
		d.stageEdge(int(ev.Port), ev.Arg)
	case evDoorbell:
		if qp := d.eventQP(ev); qp != nil {
			d.doorbell(qp, uint32(ev.Arg), int(ev.Port))
		}
	case evWQEFetched:
		if qp := d.eventQP(ev); qp != nil {
			d.wqeFetched(qp, uint32(ev.Arg), int(ev.Port))
		}
	case evWQEReady:
		if qp := d.eventQP(ev); qp != nil {
			d.wqeReady(qp)
		}
	case evRecvDoorbell:
		if qp := d.eventQP(ev); qp != nil {
			d.recvDoorbell(qp, uint32(ev.Arg))
		}
	case evRecvFetched:
		if qp := d.eventQP(ev); qp != nil {
			d.recvFetched(qp, uint32(ev.Arg), int(ev.Port))
		}
	case evSRQDoorbell:
		d.srqDoorbell(d.eventSRQ(ev.Arg), uint32(ev.Arg))
	case evSRQFetched:
		d.srqFetched(d.eventSRQ(ev.Arg), uint32(ev.Arg), int(ev.Port))
	case evSchedule:
		if d.schedAt == d.s.Now() {
			d.schedAt = 0
		}
		d.schedule()
	case evTrySend:
		if d.wakeAt == d.s.Now() {
			d.wakeAt = 0
		}
		d.trySend()
	case evRxTail:
		done := d.stages[StageTransportRx].accept(d.s.Now(), 0)
		e := d.at(done, evRxDone)
		e.Pkt = ev.Pkt
	case evRxDone:
		d.rxPending--
		d.receive(ev.Pkt)
	case evRxRelease:
		d.Port.Release(int(ev.VL), int(ev.Arg))
	case evLoopback:
		e := d.at(d.stages[StageTransportRx].accept(d.s.Now(), 0), evLoopbackDone)
		e.Pkt = ev.Pkt
	case evLoopbackDone:
		d.receiveLoopback(ev.Pkt)
	case evCQEVisible:
		d.cqeVisible()
	case evMemVisible:
		if d.OnMemWrite != nil {
			d.OnMemWrite(uint64(ev.Arg), int(ev.Port), d.s.Now())
		}
	case evTimeout:
		if qp := d.eventQP(ev); qp != nil {
			d.timeout(qp)
		}
	case evCCTick:
		d.ccTick()
	case evArmCQ:
		d.armCQ(d.cqs[uint64(ev.Arg)>>32], uint32(ev.Arg), ev.VL == 1)
	case evCQEvent:
		d.deliverEvent(uint32(ev.Arg))
	case evCQModTimer:
		d.modTimeout(d.cqs[uint64(ev.Arg)>>32], uint32(ev.Arg))
	case evPostWrites:
		if d.s.Now() == d.postAt {
			d.postAt = 0
			d.postFlush = true
			d.PCIe.Flush()
			d.postFlush = false
			if next, ok := d.PCIe.NextPending(); ok {
				d.flushAt(next)
			}
		}
	default:
		panic(fmt.Sprintf("hca: %s got event kind %d", d.Name, ev.Kind))
	}
}

// PacketArrived implements link.Owner: the HCA is store-and-forward (the
// ICRC covers the whole packet), so processing starts at the tail.
func (d *Device) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	d.rxPending++
	e := d.at(tail, evRxTail)
	e.Pkt = pkt
	if tl := d.Timeline; tl.atResponder(d, pkt) && tl.RxTail == 0 {
		tl.RxTail = tail
	}
}

// PortReady implements link.Owner.
func (d *Device) PortReady(p *link.Port) { d.trySend() }

// ---- transmit side ----

// wake makes sure an evTrySend runs at t.
func (d *Device) wake(t ib.PS) {
	if d.wakeAt != 0 && d.wakeAt <= t {
		return
	}
	d.wakeAt = t
	d.at(t, evTrySend)
}

// trySend puts the next ready packet on the wire. Each VL offers one head
// packet: its response queue's if that is ready (responses and ACKs go
// first), else its request queue's. Of the VLs whose head is ready and has
// credits the port's VL arbiter picks one (txPort.pick), so a VL waiting
// for credits never holds another VL's packets back.
func (d *Device) trySend() {
	limit := d.Cfg.TxBufferBytes
next:
	for {
		now := d.s.Now()
		if d.tx.markers > 0 {
			d.completeMarkers(now)
		}
		if d.Port == nil || !d.Port.Idle() {
			return
		}
		if d.cc != nil && d.ccBeforeSend(now) {
			continue // a CNP goes ahead of data (cc.go)
		}
		// ready: VLs whose head may start now; wait: the earliest time a
		// VL with no head ready yet will have one.
		var ready uint16
		wait := ib.PS(-1)
		var lastQ *txQueue // the queue of the last VL found ready
		lastVL := 0
		for m := d.tx.used; m != 0; m &= m - 1 {
			vl := bits.TrailingZeros16(m)
			q := d.tx.vl[vl].head(now)
			if q == nil {
				wait = d.tx.vl[vl].nextReady(wait)
				continue
			}
			e := q.peek()
			if e.readRes != 0 && e.pkt == nil {
				if !e.qp.resp.Replying(e.readRes - 1) {
					q.pop() // the QP was reset since: its reply went with it
					continue next
				}
				d.nextReadResponse(e)
			}
			if d.Port.HasCredits(vl, e.pkt.Credits()) {
				ready |= 1 << uint(vl)
				lastQ, lastVL = q, vl
			}
		}
		if ready == 0 {
			// Credits call again through PortReady; a head not yet ready
			// needs a wake-up.
			if wait > now {
				d.wake(wait)
			}
			return
		}
		portVLs := d.Port.VLs()
		vl := 0 // a port of one VL has no choice to make
		if portVLs > 1 {
			vl = d.tx.pick(ready)
		}
		tv := &d.tx.vl[vl]
		q := lastQ
		if vl != lastVL {
			q = tv.head(now)
		}
		e := q.peek()
		var entry txEntry
		if e.readRes != 0 {
			entry = *e
			e.pkt = nil
			slot := e.readRes - 1
			e.qp.resp.ReadResponseSent(slot, entry.pkt.PSN)
			if e.qp.resp.Replying(slot) {
				e.readyAt = e.qp.readReady[slot][e.qp.resp.ReadCursor(slot)]
			} else {
				q.pop()
			}
		} else {
			entry = q.pop()
		}
		pkt := entry.pkt
		if d.cc != nil && q == &tv.resp {
			d.ccResponded(entry.qp, pkt, now)
		}
		// The end-to-end CRC over the invariant fields and the payload, so
		// the checkers can tell a corrupted packet from a delivered one;
		// computed when an observer first reads it (a run that no trace or
		// checker watches never does).
		pkt.DeferICRC()
		d.tracePacket(components.TraceInject, pkt)
		if pkt.GRH && len(d.mcast) > 0 {
			// Before Send: the port owns the packet after it.
			d.loopback(pkt)
		}
		d.Port.Send(pkt)
		if d.tx.arb != nil && portVLs > 1 {
			d.tx.arb.Commit(vl, pkt.Credits())
		}
		d.Counters.PayloadTx += int64(pkt.PayloadLen)
		if entry.udWQE != nil {
			d.sendCompletion(entry.qp, Completion{WQE: *entry.udWQE, Status: WCSuccess}, now)
		}
		if q == &tv.req {
			d.Counters.ReqPackets++
			d.tx.freed(vl, pkt.WireBytes(), limit)
			if tl := d.Timeline; tl != nil && tl.dev == d && tl.matchesRequest(pkt) && tl.WireStart == 0 {
				tl.WireStart = now
			}
			d.schedule()
		} else {
			d.Counters.RespPackets++
		}
	}
}

// completeMarkers writes the CQEs of the UD completion markers at the
// heads of the request queues: no packet, just the CQE, in queue order.
func (d *Device) completeMarkers(now ib.PS) {
	for m := d.tx.used; m != 0; m &= m - 1 {
		v := &d.tx.vl[bits.TrailingZeros16(m)]
		for v.req.len() > 0 && v.req.peek().pkt == nil && v.req.peek().readyAt <= now {
			e := v.req.pop()
			d.tx.markers--
			d.sendCompletion(e.qp, Completion{WQE: *e.udWQE, Status: e.udStatus}, now)
		}
	}
}

// head returns the queue whose head packet the VL offers now: the
// response queue's if ready, else the request queue's if ready, else nil.
func (v *txVL) head(now ib.PS) *txQueue {
	if v.resp.len() > 0 && v.resp.peek().readyAt <= now {
		return &v.resp
	}
	if v.req.len() > 0 && v.req.peek().readyAt <= now {
		return &v.req
	}
	return nil
}

// nextReady returns the earlier of t (−1: none) and the time the VL's
// first queued head becomes ready.
func (v *txVL) nextReady(t ib.PS) ib.PS {
	if v.resp.len() > 0 && (t < 0 || v.resp.peek().readyAt < t) {
		t = v.resp.peek().readyAt
	}
	if v.req.len() > 0 && (t < 0 || v.req.peek().readyAt < t) {
		t = v.req.peek().readyAt
	}
	return t
}

// newPacket returns a packet addressed to qp's peer.
func (d *Device) newPacket(qp *QP) *ib.Packet {
	pkt := d.s.NewPacket()
	d.address(pkt, qp)
	return pkt
}

// address fills pkt's addressing to qp's peer.
func (d *Device) address(pkt *ib.Packet, qp *QP) {
	pkt.SLID, pkt.DLID = d.LID, qp.remoteLID
	pkt.SL, pkt.VL = qp.sl, qp.vl
	pkt.DestQP = qp.remoteQPN
	pkt.InjectAt = d.s.Now()
}

// schedule grants request packets to QPs with work, round robin, while the
// transmit buffer has room: each VL has hca.tx_buffer_bytes of it, and a
// QP whose VL's share is full is passed over (txPort). A grant issues the payload's DMA read (or takes
// inline data from the WQE), then the packet is built by the transport
// stage and queued for the wire.
func (d *Device) schedule() {
	now := d.s.Now()
grants:
	for d.tx.anyRoom() {
		qp := d.pickQP(now)
		if qp == nil {
			break
		}
		if qp.UD {
			if !d.grantUD(qp, now) {
				break
			}
			continue
		}
		m := qp.req.msgs[qp.req.sendIdx]
		w := &m.wqe
		off := m.sent * qp.req.MTU
		needDMA := !w.Inline && !w.Opcode.isAtomic() && w.Opcode != WRRDMARead && w.Length > 0
		plen := 0
		if needDMA {
			plen = int(min(uint32(qp.req.MTU), w.Length-uint32(off)))
			// The packet's reads must be able to issue at once. When they
			// are more than there are tags, that never happens (waiting for
			// it spun forever at one picosecond): the packet then starts
			// as soon as a tag is free, and Read issues the rest as the
			// oldest reads complete, which keeps every tag busy.
			var reqs int
			if w.SGL == nil {
				reqs = d.PCIe.ReadRequestsAt(w.LocalAddr+uint64(off), plen)
			} else {
				reqs = d.sglReadRequests(w.SGL, uint64(off), plen)
			}
			if reqs > d.PCIe.Tags() {
				reqs = 1
			}
			if d.PCIe.TagsFree(now) < reqs {
				t := d.PCIe.NextTagFree(now)
				if d.schedAt == 0 || t < d.schedAt {
					d.schedAt = t
					d.at(t, evSchedule)
				}
				break grants
			}
		}
		// The packet is built from the QP's context: with QP contexts
		// modelled, its payload read (or, with none, the packet) waits
		// for the context when it is not on chip (qpContext). The grant
		// moves the context's next_send_psn (and, at a message's first
		// packet, its SQ consumer index).
		at := d.qpContext(qp, now)
		d.qpModified(qp)
		pkt := d.newPacket(qp)
		tx := qp.req.Next(pkt)
		ready, dmaDone := at, at
		if needDMA && w.SGL != nil {
			pkt.Payload = sized(pkt.Payload, plen)
			ready = d.gather(qp, at, w.SGL, uint64(off), pkt)
			dmaDone = ready
		} else if needDMA {
			issue := d.stages[StageDMA].acceptQP(at, &qp.dmaSlot, 0)
			// The bus sees the physical address; the model has none, but a
			// page (hca.mtt_page_bytes ≥ 4 KiB) is physically aligned to
			// its size, a multiple of MRRS, so the virtual address splits
			// into the same requests.
			ready = d.PCIe.Read(issue, w.LocalAddr+uint64(off), plen)
			dmaDone = ready
			pkt.Payload = sized(pkt.Payload, plen)
			d.Mem.Read(w.LocalAddr+uint64(off), pkt.Payload)
			d.trace(components.TraceDMARead, qp.Num, components.IntField("psn", int64(pkt.PSN)),
				components.IntField("addr", int64(w.LocalAddr)+int64(off)), components.IntField("len", int64(plen)))
		} else if w.Inline && pkt.PayloadLen > 0 {
			pkt.Payload = append(pkt.Payload[:0], m.inline[off:off+pkt.PayloadLen]...)
		}
		ready = d.stages[StageTransportTx].accept(ready, 0)
		if tl := d.Timeline; tl.atRequester(d, qp.Num) && tl.WQEIndex == w.Index {
			tl.notePSNs(qp.remoteQPN, m.firstPSN, m.npsn)
			if tx.Index == 0 && tl.TxReady == 0 {
				tl.Granted, tl.DMAReadDone, tl.TxReady = now, dmaDone, ready
			}
		}
		d.tx.vl[qp.vl].req.push(txEntry{pkt: pkt, readyAt: ready, qp: qp})
		d.tx.held(qp.vl, pkt.WireBytes(), d.Cfg.TxBufferBytes)
		if d.cc != nil {
			d.ccGranted(qp, pkt.WireBytes(), now)
		}
		if !qp.timerArmed {
			d.armTimer(qp)
		}
		if ready > now {
			d.wake(ready)
		}
	}
	d.trySend()
}

// grantUD builds the next UD packet of qp: one SEND_ONLY with a DETH per
// message. It returns false when it must wait for PCIe read tags.
func (d *Device) grantUD(qp *QP, now ib.PS) bool {
	dw := &qp.udPending[0]
	w := dw.wqe
	if qp.State == QPErr || dw.status != WCSuccess {
		st := dw.status
		if qp.State == QPErr {
			st = WCWRFlushErr
		}
		if qp.State != QPErr {
			qp.State = QPErr
			defer d.requesterErr(qp, now)
		}
		qp.udPending = qp.udPending[1:]
		d.tx.vl[qp.vl].req.push(txEntry{readyAt: now, qp: qp, udWQE: &w, udStatus: st})
		d.tx.markers++
		d.wake(now)
		return true
	}
	needDMA := !w.Inline && w.Length > 0
	if needDMA {
		reqs := 0
		if w.SGL == nil {
			reqs = d.PCIe.ReadRequestsAt(w.LocalAddr, int(w.Length))
		} else {
			reqs = d.sglReadRequests(w.SGL, 0, int(w.Length))
		}
		if d.PCIe.TagsFree(now) < reqs {
			t := d.PCIe.NextTagFree(now)
			if d.schedAt == 0 || t < d.schedAt {
				d.schedAt = t
				d.at(t, evSchedule)
			}
			return false
		}
	}
	at := d.qpContext(qp, now) // as an RC grant (schedule)
	d.qpModified(qp)
	pkt := d.s.NewPacket()
	pkt.SLID, pkt.DLID, pkt.DestQP = d.LID, w.DLID, w.RemoteQPN
	// A datagram to a multicast LID carries a GRH, its DGID the group's
	// MGID (ib.MGID): 40 bytes more on the wire, in the transmit buffer
	// and in the receiver's credits (WireBytes); so does one whose address
	// handle is global (the av's grh bit).
	pkt.GRH = w.GRH || ib.IsMulticastLID(w.DLID)
	pkt.SL, pkt.VL = qp.sl, qp.vl
	pkt.InjectAt = now
	pkt.Opcode = ib.UDSendOnly
	pkt.SE = w.Solicited
	if w.Opcode == WRSendImm {
		pkt.Opcode, pkt.Imm = ib.UDSendOnlyImm, w.Imm
	}
	pkt.PSN = qp.udPSN
	qp.udPSN = psnAdd(qp.udPSN, 1)
	pkt.DETH = ib.DETH{QKey: w.RemoteQKey, SrcQP: qp.Num}
	pkt.PayloadLen = int(w.Length)
	ready, dmaDone := at, at
	if needDMA && w.SGL != nil {
		pkt.Payload = sized(pkt.Payload, pkt.PayloadLen)
		ready = d.gather(qp, at, w.SGL, 0, pkt)
		dmaDone = ready
	} else if needDMA {
		ready = d.PCIe.Read(d.stages[StageDMA].acceptQP(at, &qp.dmaSlot, 0), w.LocalAddr, pkt.PayloadLen)
		dmaDone = ready
		pkt.Payload = sized(pkt.Payload, pkt.PayloadLen)
		d.Mem.Read(w.LocalAddr, pkt.Payload)
		d.trace(components.TraceDMARead, qp.Num, components.IntField("psn", int64(pkt.PSN)),
			components.IntField("addr", int64(w.LocalAddr)), components.IntField("len", int64(pkt.PayloadLen)))
	} else if pkt.PayloadLen > 0 {
		pkt.Payload = append(pkt.Payload[:0], dw.inline...)
	}
	ready = d.stages[StageTransportTx].accept(ready, 0)
	if tl := d.Timeline; tl.atRequester(d, qp.Num) && tl.WQEIndex == w.Index && tl.TxReady == 0 {
		// The same stamps as an RC message's first packet: a UD message is
		// one packet, addressed by its DETH destination.
		tl.notePSNs(w.RemoteQPN, pkt.PSN, 1)
		tl.Granted, tl.DMAReadDone, tl.TxReady = now, dmaDone, ready
	}
	wqe := w
	qp.udPending = qp.udPending[1:]
	d.tx.vl[qp.vl].req.push(txEntry{pkt: pkt, readyAt: ready, qp: qp, udWQE: &wqe})
	d.tx.held(qp.vl, pkt.WireBytes(), d.Cfg.TxBufferBytes)
	if d.cc != nil {
		d.ccGranted(qp, pkt.WireBytes(), now)
	}
	if ready > now {
		d.wake(ready)
	}
	return true
}

// pickQP returns the next QP, round robin from d.rr, whose requester may
// send now: the first QP at or after the pointer, wrapping, that sendable
// says may, as a scan over every QP would find, but visiting only the
// members of mayWork (a 1,022-QP HCA of a 512-rank all-to-all has a few
// with work at a time). A member found idle leaves the set; one waiting
// out an RNR NAK or its congestion control delay (holdUntil) stays, since
// time alone makes it eligible again.
func (d *Device) pickQP(now ib.PS) *QP {
	start := d.rr
	var picked *QP
	// Two laps: members in [start, len(qps)), then in [0, start). Each
	// walks mayWork a word at a time, lowest bit first.
	lo, hi := start, len(d.qps)
laps:
	for lo < hi {
		w := lo >> 6
		word := d.mayWork[w] &^ (1<<(uint(lo)&63) - 1)
		for {
			for ; word != 0; word &= word - 1 {
				i := w<<6 | bits.TrailingZeros64(word)
				if i >= hi {
					break
				}
				qp := d.qps[i]
				if qp.sendable(now) {
					if !d.tx.roomFor(qp.vl) {
						// Its VL's share of the transmit buffer is
						// full: it stays a member until a packet of
						// that VL leaves and the scheduler runs again.
						continue
					}
					picked = qp
					if d.rr = i + 1; d.rr == len(d.qps) {
						d.rr = 0
					}
					break laps
				}
				if now >= qp.holdUntil {
					d.mayWork[w] &^= 1 << (uint(i) & 63)
				}
			}
			if w++; w<<6 >= hi {
				break
			}
			word = d.mayWork[w]
		}
		if lo == 0 {
			break // the second lap, or a first from 0
		}
		lo, hi = 0, start
	}
	if pickCheck != nil {
		pickCheck(d, start, now, picked)
	}
	return picked
}

// markWork puts qp in mayWork if it has work, an RNR wait aside: call it
// after every change that can let qp's requester send (a WQE handed on, an
// ACK, NAK, response or timeout processed, a modify), before the scheduler
// next runs. Leaving out a QP with nothing to send spares the pick a visit.
func (d *Device) markWork(qp *QP) {
	if qp.UD && len(qp.udPending) == 0 || !qp.UD && (qp.req == nil || !qp.req.HasWork()) {
		return
	}
	i := int(qp.Num - qpBase)
	d.mayWork[i>>6] |= 1 << (uint(i) & 63)
}

// sendable reports whether qp's requester may send a packet now: an RC QP
// with a packet to send (within its READ/atomic window) and no RNR wait
// under way, a UD QP in RTS or ERR with WQEs queued (in ERR they flush in
// order).
func (qp *QP) sendable(now ib.PS) bool {
	if r := qp.req; r != nil { // RC: a UD QP never has a requester
		return r.HasWork() && now >= qp.holdUntil
	}
	return qp.UD && (qp.State == QPRTS || qp.State == QPErr) && len(qp.udPending) > 0 && now >= qp.holdUntil
}

// pickCheck, when set (tests only), is told of every pick: the pointer it
// started from, the time and the QP picked (nil for none).
var pickCheck func(d *Device, rr int, now ib.PS, picked *QP)

// purge drops qp's queued request packets after a go-back-N rewind: they
// will be rebuilt from the rewound PSN.
func (d *Device) purge(qp *QP) {
	q := &d.tx.vl[qp.vl].req
	kept := q.items[:q.head]
	for _, e := range q.items[q.head:] {
		if e.qp == qp {
			d.tx.freed(int(qp.vl), e.pkt.WireBytes(), d.Cfg.TxBufferBytes)
			d.s.FreePacket(e.pkt)
			continue
		}
		kept = append(kept, e)
	}
	q.items = kept
}

// ---- retry timer ----

func (d *Device) armTimer(qp *QP) {
	to := RetryTimeoutPS(d.Cfg.RetryTimeout)
	if to == 0 {
		qp.timerArmed = false
		return
	}
	qp.timerArmed = true
	qp.timerDeadline = d.s.Now() + to
	// One timer event per QP is in the queue at a time: re-arming only moves
	// the deadline, and an early event re-queues itself for the deadline, so
	// restarting the timer on every ACK leaves no stale events behind.
	if !qp.timerQueued {
		qp.timerQueued = true
		e := d.at(qp.timerDeadline, evTimeout)
		e.Arg = qpArg(qp, 0)
	}
}

func (d *Device) timeout(qp *QP) {
	qp.timerQueued = false
	if !qp.timerArmed {
		return
	}
	if now := d.s.Now(); now < qp.timerDeadline {
		qp.timerQueued = true
		e := d.at(qp.timerDeadline, evTimeout)
		e.Arg = qpArg(qp, 0)
		return
	}
	qp.timerArmed = false
	d.Counters.Timeouts++
	res := qp.req.OnTimeout()
	t := d.s.Now()
	if res.Rewound || len(res.Completions) > 0 {
		// The expiry moves cur_retry_count and the PSN to resend from, or
		// fails the QP: a use of its context that modifies it. What it
		// writes (an error CQE) waits for the context when that is not on
		// chip, as an ACK's does (complete); the resend's grant uses the
		// context again when it comes.
		t = d.qpContext(qp, t)
		d.qpModified(qp)
	}
	d.purge(qp)
	d.afterAck(qp, res, t)
}

// afterAck carries out what an ACK, NAK, response or timeout did to a
// requester: CQEs, the timer, RNR waits, rescheduling.
func (d *Device) afterAck(qp *QP, res AckResult, t ib.PS) {
	if qp.req == nil {
		return
	}
	toErr := qp.req.State == QPErr && qp.State != QPErr
	if toErr {
		qp.State = QPErr
	}
	for _, c := range res.Completions {
		d.sendCompletion(qp, c, t)
	}
	if toErr {
		d.requesterErr(qp, t)
	}
	if res.Progress || res.Rewound || len(res.Completions) > 0 {
		qp.timerArmed = false
		if qp.req.Outstanding() && qp.req.State != QPErr {
			d.armTimer(qp)
		}
	}
	if res.RNRWait {
		// The RNR wait replaces a congestion control delay under way
		// (10 µs and more, against a CCT delay of at most a few µs with
		// the default table).
		qp.holdUntil = d.s.Now() + RNRTimerPS(qp.req.RNRWaitCode)
		d.at(qp.holdUntil, evSchedule)
	}
	if res.Rewound {
		d.purge(qp)
	}
	if qp.fenceWait {
		d.releaseFence(qp, d.s.Now())
	}
	d.markWork(qp)
	d.schedule()
}

// ---- completions ----

// sendCompletion writes a send-queue CQE when the WQE asked for one or
// failed (errors always complete, ib-facts.md §5).
func (d *Device) sendCompletion(qp *QP, c Completion, t ib.PS) {
	cqe, ok := RequesterCQE(qp.Num, c)
	if !ok {
		return
	}
	d.writeCQE(qp.SendCQ, cqe, t)
	if tl := d.Timeline; tl.atRequester(d, qp.Num) && tl.WQEIndex == c.WQE.Index && tl.AckRx == 0 {
		tl.AckRx = d.s.Now()
	}
}

// RequesterCQE returns the send-queue CQE that completion c of QP qpn
// writes, and whether it writes one: a success of an unsignaled WQE
// writes none; an error always does (ib-facts.md §5). The RTL's
// requester (rtl, hca_requester) is checked against it.
func RequesterCQE(qpn uint32, c Completion) (CQE, bool) {
	if c.Status == WCSuccess && !c.WQE.Signaled {
		return CQE{}, false
	}
	return CQE{Opcode: CQEReq, Status: c.Status, WROp: c.WQE.Opcode, QPN: qpn, Counter: c.WQE.Index,
		ByteCnt: c.WQE.Length, HasImm: c.Status == WCSuccess && wrHasImm(c.WQE.Opcode)}, true
}

// ResponderCQE returns the receive-queue CQE of a responder's action a
// on QP qpn that completes a receive WQE (a.RecvDone), se the solicited
// bit of the packet that completed it. The RTL's receive completions
// (rtl, hca_responder's rc_* through hca_cpl_arb) are checked against it.
func ResponderCQE(qpn uint32, a *RespAction, se bool) CQE {
	return CQE{Opcode: a.RecvOpcode, Status: a.RecvStatus, QPN: qpn,
		Counter: uint16(a.Recv.Index), ByteCnt: a.RecvLen, Imm: a.Imm, Receiver: true,
		HasImm: a.RecvOpcode == CQERespSendImm || a.RecvOpcode == CQERespWrImm, Solicited: se}
}

// cqeQueueSize is the room the queue of posted CQEs starts with (it grows
// to the most posted at once, ring).
const cqeQueueSize = 16

// writeCQE passes a CQE through the CQE stage and posts its 64-byte write.
// With CQ contexts modelled the CQE waits for its CQ's context (the
// producer index, the ring's address, the arm state and the EQ live
// there: cqContext) before it enters the stage; the stage serves in offer
// order, so the CQEs offered after it wait too (docs/hca.md, "CQ and SRQ
// context caches").
func (d *Device) writeCQE(cq *CQ, c CQE, t ib.PS) {
	if d.cqc != nil {
		t = d.contextModify(d.cqc, t, cq.Num)
	}
	issue := d.stages[StageCQE].accept(t, 0)
	d.cqeQ.push(pendingCQE{cq: cq, cqe: c}, cqeQueueSize)
	if vis, ok := d.PCIe.Post(issue, CQEBytes, WriteNote{Kind: writeCQE}); ok {
		d.at(vis, evCQEVisible)
	} else {
		d.flushAt(issue)
	}
	if cq.notify.ch != nil {
		d.noteCQE(cq, &c, issue)
	}
}

// flushAt makes sure the PCIe link books the posted write issued at issue
// it keeps by issue − horizon: one evPostWrites is queued for the earliest
// kept write (postAt); one queued for a later time and overtaken is stale
// when it comes.
func (d *Device) flushAt(issue ib.PS) {
	if due := issue - d.PCIe.horizon; d.postAt == 0 || due < d.postAt {
		d.postAt = due
		d.at(due, evPostWrites)
	}
}

// postedBooked schedules what a posted write the PCIe link booked late
// (PCIe.Post) does at its end, vis: what writeCQE and writePayload do when
// it is booked at once. The CQEs land in cqeQ's order: the cqe stage
// issues them in that order, and posted writes are booked in issue order.
// A payload's buffer frees when the write is within the posted-write
// queue's bytes of its end, but not before the write is booked.
func (d *Device) postedBooked(w *PostedWrite, vis ib.PS) {
	switch w.Note.Kind {
	case writeCQE:
		d.at(vis, evCQEVisible)
	case writePayload:
		n := w.Note
		if n.Blocks > 0 {
			// Not before the DMA engine takes the payload from the
			// receive buffer: the dma stage's start, its latency before
			// the write issues (booked at once, that is by now).
			release := max(vis-d.PCIe.writeLat-d.PCIe.queuePS, w.Issue-d.stages[StageDMA].lat)
			if release <= d.s.Now() && d.postFlush {
				// Booked by evPostWrites, not inside another block's work.
				d.Port.Release(int(n.VL), int(n.Blocks))
			} else {
				e := d.at(release, evRxRelease)
				e.VL, e.Arg = n.VL, int64(n.Blocks)
			}
		}
		if d.OnMemWrite != nil {
			e := d.at(vis, evMemVisible)
			e.Arg, e.Port = int64(n.Addr), n.Len
		}
		if n.Timed {
			d.Timeline.RespWrite = vis
		}
	case writeMKey, writeEQE, writeContext:
	case writeMSIX:
		d.interruptAt(uint32(w.Note.Addr), vis)
	default:
		panic(fmt.Sprintf("hca: %s: a posted write of kind %d", d.Name, w.Note.Kind))
	}
}

// cqeVisible lands the oldest posted CQE in its CQ ring.
func (d *Device) cqeVisible() {
	p, ok := d.cqeQ.pop()
	if !ok {
		panic(fmt.Sprintf("hca: %s: a CQE became visible with none posted", d.Name))
	}
	if qp := d.qpByNum(p.cqe.QPN); qp != nil && qp.destroyed {
		// Issued before DestroyQP: it would have landed before the destroy
		// command completed, and libmlx5's __mlx5_cq_clean removed it.
		return
	}
	cq := p.cq
	slot, owner, room := CQESlot(cq.Depth, cq.pi, cq.ci)
	if !room {
		// The consumer has not freed a slot: CQ overrun (the CQ goes to
		// error in hardware; the model counts it and drops the CQE).
		cq.Overrun = true
		d.Counters.CQOverruns++
		return
	}
	c := p.cqe
	c.Owner = owner
	var buf [CQEBytes]byte
	EncodeCQE(buf[:], &c)
	d.Mem.Write(cq.buf+uint64(slot)*CQEBytes, buf[:])
	cq.pi++
	d.Counters.CQEs++
	queue := "sq"
	if c.Receiver {
		queue = "rq"
	}
	d.trace(components.TraceCQE, c.QPN, components.StrField("queue", queue), components.IntField("wqe", int64(c.Counter)),
		components.StrField("status", c.Status.String()))
	if tl := d.Timeline; tl != nil && tl.Active {
		if !c.Receiver && tl.atRequester(d, c.QPN) && c.Counter == tl.WQEIndex && tl.ReqCQE == 0 {
			tl.ReqCQE = d.s.Now()
		}
		if c.Receiver && tl.dev != d && c.QPN == tl.DestQPN && tl.RespCQE == 0 && tl.RespCQEIssue != 0 {
			tl.RespCQE = d.s.Now()
		}
	}
	if d.OnCQE != nil {
		d.OnCQE(cq, d.s.Now())
	}
}

// writePayload places bytes in host memory through the DMA engine and
// returns when the write issues. The packet being received (receive: its
// VL and blocks in rxVL, rxBlocks) frees its buffer by the write's end;
// timed says the write ends the Timeline's message (RespWrite). A write
// issued later than the PCIe link can book yet is booked when no write
// issued before it can still come (PCIe.Post), and postedBooked then
// does what the rest of this does.
func (d *Device) writePayload(qp *QP, t ib.PS, addr uint64, data []byte, timed bool) (issue ib.PS) {
	issue = d.stages[StageDMA].acceptQP(t, &qp.dmaSlot, 0)
	vis, ok := d.PCIe.Post(issue, len(data), WriteNote{Kind: writePayload, VL: d.rxVL, Timed: timed,
		Blocks: d.rxBlocks, Addr: addr, Len: int32(len(data))})
	d.Mem.Write(addr, data)
	d.Counters.PayloadRx += int64(len(data))
	d.trace(components.TraceDMAWrite, qp.Num, components.IntField("addr", int64(addr)), components.IntField("len", int64(len(data))))
	if !ok {
		d.rxWriteEnd = -1
		d.flushAt(issue)
		return issue
	}
	d.rxWriteEnd = vis - d.PCIe.writeLat
	if timed {
		d.Timeline.RespWrite = vis
	}
	if d.OnMemWrite != nil {
		// The write names itself: the dma stage serves QPs in time order,
		// so writes become visible in an order other than this call's.
		e := d.at(vis, evMemVisible)
		e.Arg, e.Port = int64(addr), int32(len(data))
	}
	return issue
}

// sglReadRequests returns the PCIe read requests the bytes [off, off+n)
// of a gather list take: each element's part split at MRRS-aligned
// addresses (ReadRequest), the parts never merged, as each is a read of
// its own.
func (d *Device) sglReadRequests(sgl []SGE, off uint64, n int) int {
	d.sglPieces = sglSlice(d.sglPieces[:0], sgl, off, uint64(n))
	reqs := 0
	for _, p := range d.sglPieces {
		reqs += d.PCIe.ReadRequestsAt(p.Addr, int(p.Length))
	}
	return reqs
}

// gather reads a packet's payload, the bytes [off, off+len(pkt.Payload))
// of the list, from each element's part in order: each part is a DMA read
// of its own, taking a dma-stage slot (the engine issues one descriptor
// per interval) and PCIe requests split at MRRS-aligned addresses. It
// returns when the last completion is in.
func (d *Device) gather(qp *QP, now ib.PS, sgl []SGE, off uint64, pkt *ib.Packet) ib.PS {
	d.sglPieces = sglSlice(d.sglPieces[:0], sgl, off, uint64(len(pkt.Payload)))
	ready, at := now, 0
	for _, p := range d.sglPieces {
		issue := d.stages[StageDMA].acceptQP(now, &qp.dmaSlot, 0)
		ready = max(ready, d.PCIe.Read(issue, p.Addr, int(p.Length)))
		d.Mem.Read(p.Addr, pkt.Payload[at:at+int(p.Length)])
		at += int(p.Length)
		d.trace(components.TraceDMARead, qp.Num, components.IntField("psn", int64(pkt.PSN)),
			components.IntField("addr", int64(p.Addr)), components.IntField("len", int64(p.Length)))
	}
	return ready
}

// scatter writes data, the bytes [off, off+len(data)) of a message, into
// the list's elements in order, one posted write per part (writePayload),
// and returns the last write's issue. The packet's receive buffer frees by
// its last write (they end in issue order): only that write carries the
// packet's blocks, as only one of a multicast packet's copies does.
func (d *Device) scatter(qp *QP, t ib.PS, sgl []SGE, off uint64, data []byte, timed bool) ib.PS {
	d.sglPieces = sglSlice(d.sglPieces[:0], sgl, off, uint64(len(data)))
	blocks, at, issue := d.rxBlocks, 0, t
	for i, p := range d.sglPieces {
		last := i == len(d.sglPieces)-1
		if !last {
			d.rxBlocks = 0
		} else {
			d.rxBlocks = blocks
		}
		issue = d.writePayload(qp, t, p.Addr, data[at:at+int(p.Length)], timed && last)
		at += int(p.Length)
	}
	d.rxBlocks = blocks
	return issue
}

// place writes a response's data where the requester's WR puts it (pl):
// at pl.Addr, or from offset pl.Off on in the WR's list pl.SGL.
func (d *Device) place(qp *QP, t ib.PS, pl Placement, data []byte) ib.PS {
	if pl.SGL == nil {
		return d.writePayload(qp, t, pl.Addr, data, false)
	}
	return d.scatter(qp, t, pl.SGL, pl.Off, data, false)
}

// sized returns b resized to n bytes, reusing its storage when it can (the
// caller overwrites every byte).
func sized(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// Stage handshake edges for waveforms, scheduled only while a hook listens.
// A stage is valid while it holds an item (offered, not yet left) and ready
// while its issue slot is free; Arg is +1/−1 on the item count (edgeItem) or
// on the busy slot count (edgeBusy).
const (
	edgeItemIn int64 = iota
	edgeItemOut
	edgeBusyOn
	edgeBusyOff
)

// EnableStageTrace makes the device announce its stages' valid/ready edges
// (stage events) while hooks listen: for waveforms and traces. Checkers do
// not need them, so they are off unless asked for.
func (d *Device) EnableStageTrace() { d.stageTrace = true }

func (d *Device) stageEdges(i int, offered, start, slotFree, leave ib.PS) {
	now := d.s.Now()
	for _, e := range [4]struct {
		t    ib.PS
		kind int64
	}{{offered, edgeItemIn}, {start, edgeBusyOn}, {slotFree, edgeBusyOff}, {leave, edgeItemOut}} {
		ev := d.s.ScheduleObserver(max(e.t, now), d, evStageEdge)
		ev.Port, ev.Arg = int32(i), e.kind
	}
}

func (d *Device) stageEdge(i int, kind int64) {
	switch kind {
	case edgeItemIn:
		d.stageItems[i]++
	case edgeItemOut:
		d.stageItems[i]--
	case edgeBusyOn:
		d.stageBusy[i]++
	case edgeBusyOff:
		d.stageBusy[i]--
	}
	valid, ready := int64(0), int64(1)
	if d.stageItems[i] > 0 {
		valid = 1
	}
	if d.stageBusy[i] > 0 {
		ready = 0
	}
	if d.NumHooks() == 0 || (valid == d.stageValid[i] && ready == d.stageReady[i]) {
		return
	}
	d.stageValid[i], d.stageReady[i] = valid, ready
	ev := d.s.TraceEvent(d.s.Now(), d.Name, components.TraceStage)
	ev.Fields = append(d.fieldBuf[:0], components.StrField("stage", StageNames[i]),
		components.IntField("valid", valid), components.IntField("ready", ready))
	d.InvokeHook(sim.HookCtx{Domain: d, Pos: components.HookPosTrace, Item: ev})
	d.fieldBuf = ev.Fields[:0]
}
