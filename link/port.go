package link

import (
	"fmt"
	"math"
	"slices"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/credit"
	"github.com/hcasim/hcasim/ib"
)

// MaxVLs is the number of VL slots a port keeps: data VLs 0–14 and VL15.
const MaxVLs = 16

// Owner is the device a port belongs to: an HCA, a switch, a packet endpoint.
type Owner interface {
	// PacketArrived is called when pkt's head arrives on p; its tail arrives
	// at tail. The blocks are already counted in p's receive buffer; the
	// owner calls p.Release when the packet leaves the buffer.
	PacketArrived(p *Port, pkt *ib.Packet, head, tail ib.PS)
	// PortReady is called when credits arrive (unless the owner said it
	// has nothing to send: Pending), and when p's wire goes idle after a
	// Send, or after a SendQuiet if the owner found the wire busy (Idle,
	// CanSend) or asked (WaitIdle) since: the owner may now be able to
	// send.
	PortReady(p *Port)
}

// Event kinds a port handles.
const (
	evArrive uint8 = iota + 1
	evTxDone
	evFCArrive
	evFCRefresh
	evFCDeferred
	evDiscard // a corrupted data packet's tail arrives: the receiver discards it
	evFCLost  // a corrupted flow-control packet arrives: the receiver ignores it
	evTxEnd   // a traced data packet's tail leaves (an observer's event: wireBusy)
)

// PortStats are a port's counters.
type PortStats struct {
	DataPackets uint64 // data packets sent
	DataBytes   uint64 // data packet wire bytes sent
	DataBlocks  uint64 // 64-byte blocks of the data packets sent (a packet's credits)
	FCPackets   uint64 // flow-control packets sent
	BusyPS      ib.PS  // time the outgoing wire carried bits (data + FC)
	RxPackets   uint64 // data packets whose head arrived
}

// portCounts are the low bits of a port's PortStats, in its hot lines:
// 16 bits for counts that grow by one packet's worth (packets by 1, blocks
// by at most 66, a 4 KiB-MTU packet's), 32 for bytes and picoseconds (a
// packet's wire time is at most ≈17 µs, 4,200-odd bytes at 1x SDR's 4 ns a
// byte). An add that carries out of a low part puts its 2^16 or 2^32 into
// the port's portCarries, on a cold line, so that Stats is the exact 64-bit
// count: a compare per add instead of two more lines per port.
type portCounts struct {
	dataPackets uint16
	dataBlocks  uint16
	fcPackets   uint16
	rxPackets   uint16
	dataBytes   uint32
	busyPS      uint32
}

// portCarries are the parts of a port's PortStats that carried out of its
// portCounts: multiples of 2^16 or 2^32.
type portCarries struct {
	dataPackets, dataBlocks, fcPackets, rxPackets, dataBytes, busyPS uint64
}

// add16 adds v to a count whose low 16 bits are lo and whose carries are
// hi: exact while v < 2^16, for the sum then wraps at most once, and it
// wrapped if and only if the new low part is below v.
func add16(lo *uint16, hi *uint64, v uint16) {
	n := *lo + v
	if n < v {
		*hi += 1 << 16
	}
	*lo = n
}

// add32 is add16 for a count whose low 32 bits are lo.
func add32(lo *uint32, hi *uint64, v uint32) {
	n := *lo + v
	if n < v {
		*hi += 1 << 32
	}
	*lo = n
}

// Stats returns the port's counters.
func (p *Port) Stats() PortStats {
	c, h := &p.count, &p.carried
	return PortStats{
		DataPackets: h.dataPackets + uint64(c.dataPackets),
		DataBytes:   h.dataBytes + uint64(c.dataBytes),
		DataBlocks:  h.dataBlocks + uint64(c.dataBlocks),
		FCPackets:   h.fcPackets + uint64(c.fcPackets),
		BusyPS:      p.busyPS(),
		RxPackets:   h.rxPackets + uint64(c.rxPackets),
	}
}

func (p *Port) busyPS() ib.PS { return ib.PS(p.carried.busyPS + uint64(p.count.busyPS)) }

// PortErrors are a port's receive errors (IBA PortRcvErrors, split by
// packet kind): packets that arrived corrupted and were discarded.
type PortErrors struct {
	Packets   uint64 // data packets discarded at their tail (bad VCRC/ICRC)
	FCPackets uint64 // flow-control packets ignored (bad LPCRC)
}

// Port is one end of a link on a device.
//
// The fields are ordered by how often events touch them: two cache lines
// hold everything a packet, a flow-control packet or a wire going idle
// reads or writes, from Owner to VL 0's state (the only VL of a single-VL
// fabric); what only timers, traces and set-up use lies outside them, the
// hook list among it (traced says whether it has a hook, so that an event
// does not read the list to learn that nothing is traced). A 1,024-host
// fabric has 6,144 ports and outgrows the caches, so each further line an
// event touches is a miss (TestPortLayout; docs/performance-data.md). To
// fit two lines the counters keep only their low bits there (portCounts)
// and the byte time its exact small fraction.
//
// Go puts an 8-byte header (the type, for the collector) ahead of an
// object of more than 512 bytes that holds pointers, in a slot that starts
// on a line, so a Port starts 8 bytes into a line: 56 bytes of cold fields
// fill it, and the hot lines start at Owner (TestPortAlignment).
type Port struct {
	Name string // Akita-style name, e.g. Fabric.Leaf[2].Port[5]
	// Errors counts the packets that arrived here corrupted.
	Errors PortErrors
	// OnDiscard, when set, is called with each data packet this port
	// discards as corrupted, before the packet goes back to the pool: a
	// run that counts its packets in and out counts these as lost.
	OnDiscard func(p *Port, pkt *ib.Packet)
	// cw, when set, is the outgoing wire's failed FEC codewords (in place
	// of errs): SetPreFECErrorRate.
	cw        *codewordErrors
	fcRefresh ib.PS // longest interval between FC packets per VL

	Owner     Owner
	s         *components.Sim
	peer      *Port
	busyUntil ib.PS // outgoing wire busy until (exclusive)
	// latency and psNum/psDen are timing's Latency() and byte time (psNum/psDen
	// ps), copied here so that a send reads no cold line.
	latency       ib.PS
	fcMinInterval ib.PS // shortest interval between event-driven FC packets per VL
	pool          int32 // shared-pool blocks not lent to any VL
	// idleSeq is the place (Sim.ReserveLow, never 0) the event for the
	// wire going idle at busyUntil holds among its picosecond's events,
	// kept until someone waits for the wire (armIdle); 0 once it is
	// queued, or when nothing is on the wire.
	idleSeq   uint32
	count     portCounts
	psNum     uint16 // at most 4000 (1x SDR): setTiming
	Index     uint16 // port number on the owner (at most fabric.MaxRadix)
	fcPending uint16 // VLs owing the peer a flow-control packet
	fcHeld    uint16 // VLs waiting out fcMinInterval
	lendChunk int16  // blocks lent at a time: one largest packet (at most 2048: NewPort)
	// serCarry is the exact end of the transmission that ends at busyUntil
	// minus busyUntil, in 1/psDen ps (Timing.serialize): the next one starts
	// there if it starts at busyUntil. |serCarry| ≤ psDen/2 ≤ 4.
	serCarry int8
	psDen    uint8 // at most 9 (12x FDR): setTiming
	vls      uint8 // data VLs in use (VL15 is always there)
	flags    portFlags

	// vl holds each VL's credit and buffer state together, so an event on
	// one VL touches one cache line, not one per array.
	vl [MaxVLs]vlState

	sim.HookableBase
	timing  Timing
	carried portCarries // the counters' high parts (portCounts)
	errs    bitErrors   // the outgoing wire's bit errors, when lossy and cw is nil
	// fcLostAt holds when each flow-control packet lost here arrived, in
	// time order (FCErrorsBefore): 8 bytes per loss, only on lossy links.
	fcLostAt []ib.PS

	// Trace scratch, used only when a hook listens.
	fieldBuf []components.TraceField
	lastTx   struct {
		seq   uint64
		end   ib.PS // when its tail leaves
		vl    uint8
		bytes int
		data  bool // a data packet whose tx_end is not written yet
	}
}

// portFlags are a port's yes-or-no facts, a bit each, in one hot byte.
type portFlags uint8

const (
	// remote: the peer is in another partition (components.Group).
	remote portFlags = 1 << iota
	// lossy: the outgoing wire corrupts packets (errs or cw): link.ber or
	// link.pre_fec_ber > 0.
	lossy
	// traced: a hook listens (AcceptHook).
	traced
	// ownerWaits: the owner found the wire busy or asked (WaitIdle) and
	// has not had its PortReady since; a flow-control packet that takes
	// the wire as it frees passes the wait on to its own end.
	ownerWaits
	// ownerIdle: the owner has nothing to send on this port (Pending), so
	// credits arriving are no news to it.
	ownerIdle
)

func (f portFlags) has(b portFlags) bool { return f&b != 0 }

// vlState is one VL's flow-control state at a port: 32 bytes, so that VL
// 0's ends the port's second hot line (TestPortLayout). The block counts
// are at most 2048 (credit.Receiver), so 16 bits hold them.
type vlState struct {
	tx credit.Sender // credits for the peer's buffer on this VL
	// peerCap is the peer's buffer on this VL as its last flow-control
	// packet gave it (the size at link-up before any): what traces show the
	// sender's credits against, known here without reading the peer, which
	// may be another partition's and, with a shared pool, changing.
	peerCap int32
	rx      credit.Receiver // this port's receive buffer on this VL
	// fcOwed: the VL's receive state changed since its last flow-control
	// packet (a deferred packet is still needed when its time comes).
	fcOwed bool
	lent   int16 // shared-pool blocks lent to the VL
	rxPeak int16 // most blocks the receive buffer has held
	fcLast ib.PS // when the last flow-control packet for the VL left
}

// AcceptHook adds a hook (sim.Hookable) and notes that the port is traced.
func (p *Port) AcceptHook(h sim.Hook) {
	p.HookableBase.AcceptHook(h)
	p.flags |= traced
}

// PortConfig sizes a port.
type PortConfig struct {
	VLs           int   // data VLs: 1, 2, 4, 8 or 15
	BufferBlocks  int   // receive buffer per data VL, 64-byte blocks
	FCRefresh     ib.PS // longest interval between FC packets per VL
	FCMinInterval ib.PS // shortest interval between event-driven FC packets per VL
	// SharedBlocks is a pool of 64-byte blocks shared by the port's data
	// VLs on top of each VL's BufferBlocks (0: no pool).
	SharedBlocks int
	// LendBlocks is how many pool blocks a VL borrows at a time: the
	// blocks of the largest packet (0: BufferBlocks).
	LendBlocks int
}

// NewPort makes a port of owner. It starts unconnected.
func NewPort(s *components.Sim, owner Owner, name string, index int, cfg PortConfig) *Port {
	if cfg.VLs < 1 || cfg.VLs > 15 {
		panic(fmt.Sprintf("link: port %s with %d VLs", name, cfg.VLs))
	}
	if cfg.SharedBlocks < 0 || cfg.SharedBlocks > math.MaxInt32 || cfg.LendBlocks < 0 || cfg.LendBlocks > credit.Modulus/2 {
		panic(fmt.Sprintf("link: port %s with a shared pool of %d blocks lent %d at a time (at most %d and %d)",
			name, cfg.SharedBlocks, cfg.LendBlocks, math.MaxInt32, credit.Modulus/2))
	}
	if index < 0 || index > math.MaxUint16 {
		panic(fmt.Sprintf("link: port %s with index %d", name, index))
	}
	p := &Port{Name: name, Index: uint16(index), Owner: owner, s: s, vls: uint8(cfg.VLs),
		fcRefresh: cfg.FCRefresh, fcMinInterval: cfg.FCMinInterval}
	for vl := 0; vl < cfg.VLs; vl++ {
		p.vl[vl].rx = credit.NewReceiver(cfg.BufferBlocks)
	}
	p.pool = int32(cfg.SharedBlocks)
	p.lendChunk = int16(cfg.LendBlocks)
	if p.lendChunk == 0 {
		p.lendChunk = int16(cfg.BufferBlocks) // at most 2048: NewReceiver
	}
	return p
}

// Connect joins a and b with a cable of the given timing (both directions
// alike) and gives each side the other's buffer as its initial credit, as
// the link-up exchange of flow-control packets would.
func Connect(a, b *Port, t Timing) {
	if a.peer != nil || b.peer != nil {
		panic(fmt.Sprintf("link: %s or %s already connected", a.Name, b.Name))
	}
	if a.vls != b.vls {
		panic(fmt.Sprintf("link: %s has %d VLs, %s has %d", a.Name, a.vls, b.Name, b.vls))
	}
	a.peer, b.peer = b, a
	if a.s != b.s {
		a.flags |= remote
		b.flags |= remote
	}
	a.setTiming(t)
	b.setTiming(t)
	for vl := 0; vl < int(a.vls); vl++ {
		a.vl[vl].tx = credit.NewSender(b.vl[vl].rx.Capacity())
		b.vl[vl].tx = credit.NewSender(a.vl[vl].rx.Capacity())
		a.vl[vl].peerCap = int32(b.vl[vl].rx.Capacity())
		b.vl[vl].peerCap = int32(a.vl[vl].rx.Capacity())
	}
	a.startRefresh()
	b.startRefresh()
}

func (p *Port) setTiming(t Timing) {
	p.timing = t
	// Every generation and width gives a byte time of at most 4000 ps (1x
	// SDR) over at most 9 (12x FDR: 440/9): TestPortByteTimes.
	if t.psNum > math.MaxUint16 || t.psDen > math.MaxUint8 {
		panic(fmt.Sprintf("link: %s: byte time %d/%d ps does not fit the port", p.Name, t.psNum, t.psDen))
	}
	p.psNum, p.psDen, p.latency = uint16(t.psNum), uint8(t.psDen), t.Latency()
}

func (p *Port) startRefresh() {
	if p.fcRefresh > 0 {
		p.s.Schedule(p.s.Now()+p.fcRefresh, p, evFCRefresh)
	}
}

// BusyThrough returns the time the outgoing wire has carried bits up to now:
// Stats().BusyPS counts a transmission whole when it starts, so the part of
// the one in progress that lies ahead of now is taken off.
func (p *Port) BusyThrough() ib.PS {
	return p.busyPS() - max(0, p.busyUntil-p.s.Now())
}

// SetBitErrorRate makes p's outgoing wire corrupt packets at the post-FEC
// bit error rate ber (0 < ber ≤ MaxBER; 0 leaves the wire error-free), with
// draws from p's own stream, seeded by seed and p's name. Call it on both
// ends of a cable, after Connect, before the run.
func (p *Port) SetBitErrorRate(ber float64, seed uint64) {
	if !(ber >= 0 && ber <= MaxBER) {
		panic(fmt.Sprintf("link: %s given bit error rate %v outside 0..%g", p.Name, ber, MaxBER))
	}
	p.flags &^= lossy
	p.cw = nil
	if ber > 0 {
		p.flags |= lossy
		p.errs = newBitErrors(ber, seed, p.Name)
	}
}

// SetPreFECErrorRate makes p's outgoing wire corrupt packets by whole
// uncorrectable codewords of its RS FEC: m (CodewordModelFor) gives the FEC
// mode and the pre-FEC bit error rate, and every packet with a bit in a
// failed codeword arrives corrupted (docs/fabric.md, "Link errors"). Draws
// come from p's own stream, seeded by seed and p's name. Call it on both
// ends of a cable, after Connect (the codewords' times come from the
// cable's data rate), before the run.
func (p *Port) SetPreFECErrorRate(m *CodewordModel, seed uint64) {
	if p.peer == nil {
		panic(fmt.Sprintf("link: %s given FEC codeword errors before Connect", p.Name))
	}
	p.flags |= lossy
	p.cw = newCodewordErrors(m, p.timing, seed, p.Name)
}

// Lossy reports whether p's outgoing wire corrupts packets (SetBitErrorRate,
// SetPreFECErrorRate).
func (p *Port) Lossy() bool { return p.flags.has(lossy) }

// CodewordErrors reports whether p's wire draws failed FEC codewords
// (SetPreFECErrorRate) rather than independent bit errors.
func (p *Port) CodewordErrors() bool { return p.cw != nil }

// FailedCodewordsBefore returns the uncorrectable codewords that carried
// bits of a packet p sent and began before t (0 on a wire without
// SetPreFECErrorRate). A failed codeword no packet touched (in an idle
// stretch) is not drawn, so not counted: a real port's uncorrectable-block
// counter counts those too.
func (p *Port) FailedCodewordsBefore(t ib.PS) uint64 {
	if p.cw == nil {
		return 0
	}
	n, _ := slices.BinarySearch(p.cw.failedAt, t)
	return uint64(n)
}

// corruptLast draws whether the data packet of bytes wire bytes just put on
// the wire (busyUntil and serCarry are its end) arrives corrupted.
func (p *Port) corruptLast(bytes int) bool {
	if p.cw == nil {
		return p.errs.corrupt(bytes)
	}
	end := int64(p.busyUntil)*int64(p.timing.psDen) + int64(p.serCarry)
	return p.cw.corrupt(end-int64(bytes)*p.timing.psNum, end)
}

// corruptLastFC is corruptLast for the flow-control packet just put on the
// wire.
func (p *Port) corruptLastFC() bool {
	if p.cw == nil {
		return p.errs.corruptFC()
	}
	end := int64(p.busyUntil)*int64(p.timing.psDen) + int64(p.serCarry)
	return p.cw.corrupt(end-ib.FlowControlBytes*p.timing.psNum, end)
}

// FCErrorsBefore returns the flow-control packets lost here that arrived
// before t: a partitioned run, which may run past the time its workload
// ended, counts exactly what the serial run did.
func (p *Port) FCErrorsBefore(t ib.PS) uint64 {
	n, _ := slices.BinarySearch(p.fcLostAt, t)
	return uint64(n)
}

// Peer returns the port at the other end.
func (p *Port) Peer() *Port { return p.peer }

// Timing returns the link's timing.
func (p *Port) Timing() Timing { return p.timing }

// FCRefresh returns the longest interval between flow-control packets per VL.
func (p *Port) FCRefresh() ib.PS { return p.fcRefresh }

// VLs returns the number of data VLs.
func (p *Port) VLs() int { return int(p.vls) }

// RxPeakBlocks returns the most 64-byte blocks VL vl's receive buffer has
// held since the port was made.
func (p *Port) RxPeakBlocks(vl int) int { return int(p.vl[vl].rxPeak) }

// Idle reports whether the outgoing wire is free now. When it is not, the
// owner's PortReady is called when it frees (WaitIdle).
func (p *Port) Idle() bool {
	if p.s.Now() >= p.busyUntil && p.fcPending == 0 {
		return true
	}
	p.WaitIdle()
	return false
}

// WaitIdle asks for the owner's PortReady when the wire frees, at
// BusyUntil (nothing, if no packet is on it: the owner may send now). The
// event for it holds the place in its picosecond that it would have held
// had it been queued when the wire's last packet started (Sim.Reserve),
// so a run is the same whether or not anybody waited: what is saved is
// the events for wires that go idle unwatched (most, below saturation).
func (p *Port) WaitIdle() {
	p.flags |= ownerWaits
	p.armIdle()
}

// Pending tells the port whether its owner has something to send on it.
// While it has not, a flow-control packet's credits reach the port without
// a PortReady: the owner, with nothing queued, would do nothing with them,
// and reads them when it next tries to send. An owner that never calls it
// is told of every credit arrival; one that does must say true before it
// next needs credits to arrive to go on (a packet queued, a packet waiting
// for credits). Under Sim.AllEvents every owner is told (the definition).
func (p *Port) Pending(on bool) {
	if on {
		p.flags &^= ownerIdle
	} else if p.s.Quiet() {
		p.flags |= ownerIdle
	}
}

// armIdle queues the event for the wire going idle in its reserved place,
// if it is not queued yet: for the owner (WaitIdle), or for a flow-control
// packet owed while the wire is busy.
func (p *Port) armIdle() {
	if p.idleSeq != 0 {
		p.s.ScheduleReservedLow(p.busyUntil, p, evTxDone, p.idleSeq)
		p.idleSeq = 0
	}
}

// wireBusy notes that the wire carries a packet until busyUntil: it takes
// the place of the event for the wire going idle (WaitIdle queues it), or
// queues the event now on an engine that cannot reserve places (Akita's).
// A traced data packet's tx_end is written when its tail leaves, by an
// observer's event next in order to the reserved place (nothing is queued
// between the two), so the trace has it where the wire's end would be,
// and a traced run counts the events an untraced one does.
func (p *Port) wireBusy(data bool) {
	if p.idleSeq = p.s.ReserveLow(); p.idleSeq == 0 {
		p.s.Schedule(p.busyUntil, p, evTxDone)
		return
	}
	if data && p.flags.has(traced) {
		p.s.ScheduleObserver(p.busyUntil, p, evTxEnd)
	}
}

// BusyUntil returns when the outgoing wire frees.
func (p *Port) BusyUntil() ib.PS { return p.busyUntil }

// HasCredits reports whether a packet of blocks may start on vl: the peer
// has advertised room for all of it. VL15 is not flow-controlled.
func (p *Port) HasCredits(vl int, blocks int) bool {
	if vl == ib.ManagementVL {
		return true
	}
	return p.vl[vl].tx.CanSend(blocks)
}

// CreditsAvailable returns the blocks the peer has room for on vl.
func (p *Port) CreditsAvailable(vl int) int { return p.vl[vl].tx.Available() }

// CanSend reports whether pkt may start on the wire now.
func (p *Port) CanSend(pkt *ib.Packet) bool {
	return p.Idle() && p.HasCredits(int(pkt.VL), pkt.Credits())
}

// Send puts pkt on the wire now and returns when its tail leaves; the
// owner's PortReady follows then. The caller must have checked CanSend;
// sending on a busy wire or without credit is a model bug.
func (p *Port) Send(pkt *ib.Packet) ib.PS {
	end := p.SendQuiet(pkt)
	p.WaitIdle()
	return end
}

// SendQuiet is Send without the PortReady at the packet's end unless the
// owner asks for it (Idle or CanSend finding the wire busy, or WaitIdle)
// before then: for an owner that tries the wire whenever it has something
// to send, to which a wire going idle with nothing waiting is no news.
// The run is the same as with Send (WaitIdle), with fewer events.
func (p *Port) SendQuiet(pkt *ib.Packet) ib.PS {
	now := p.s.Now()
	if now < p.busyUntil || p.fcPending != 0 {
		panic(fmt.Sprintf("link: %s sends packet %d at %d ps on a wire busy until %d ps", p.Name, pkt.Seq, now, p.busyUntil))
	}
	p.flags &^= ownerWaits // served: an owner with more to send asks again
	bytes := pkt.WireBytes()
	blocks := ib.Credits(bytes) // pkt.Credits(), without working out its bytes twice
	vl := int(pkt.VL)
	if vl != ib.ManagementVL {
		if vl >= int(p.vls) {
			panic(fmt.Sprintf("link: %s sends on VL %d with %d VLs", p.Name, vl, p.vls))
		}
		p.vl[vl].tx.Send(blocks)
	}
	add16(&p.count.dataBlocks, &p.carried.dataBlocks, uint16(blocks))
	ser := p.serialize(now, bytes)
	p.busyUntil = now + ser
	add16(&p.count.dataPackets, &p.carried.dataPackets, 1)
	add32(&p.count.dataBytes, &p.carried.dataBytes, uint32(bytes))
	add32(&p.count.busyPS, &p.carried.busyPS, uint32(ser))
	pkt.Hops++
	// The packet's fate is drawn once, here; the receiver learns it when
	// the tail's CRCs fail, and discards it then.
	corrupt := p.flags.has(lossy) && p.corruptLast(bytes)
	if p.flags.has(traced) {
		p.traceTxEnd()
		p.lastTx.seq, p.lastTx.end, p.lastTx.vl, p.lastTx.bytes, p.lastTx.data = pkt.Seq, p.busyUntil, pkt.VL, bytes, true
		p.tracePacket(now, components.TraceTxStart, pkt, corrupt)
	}
	head := now + p.latency
	at, kind := head, evArrive
	if corrupt {
		at, kind = head+ser, evDiscard
	}
	// The head arrival runs after same-time primary events, so a
	// flow-control packet that was on this wire just before the packet
	// (ending as its head arrives) is applied first (see ScheduleLate).
	ev := p.toPeer(at, kind, components.ClassLate)
	ev.Pkt = pkt
	ev.Tail = head + ser
	p.wireBusy(true)
	return p.busyUntil
}

// Release frees blocks of vl's receive buffer when a packet leaves it; the
// freed credit goes back to the peer in a flow-control packet.
func (p *Port) Release(vl int, blocks int) {
	if vl == ib.ManagementVL {
		return
	}
	if rx := &p.vl[vl].rx; blocks > rx.Used() {
		// Our bug, but one a verification engineer must be able to place:
		// the credit package's panic does not know the port.
		panic(fmt.Sprintf("link: %s releases %d blocks on VL %d with %d of %d in use: a credit returned twice", p.Name, blocks, vl, rx.Used(), rx.Capacity()))
	}
	// Lent blocks stay with the VL while nobody else needs them (a lone busy
	// VL keeps the whole pool); when another VL holding packets is short of
	// room and the pool cannot serve it, released lent blocks go back to
	// the pool instead of being advertised again. Advertised credit is never
	// taken back, so only blocks that just freed can return.
	back := 0
	if p.vl[vl].lent > 0 && p.pool < int32(p.lendChunk) && p.othersShort(vl) {
		back = min(int(p.vl[vl].lent), blocks)
	}
	if back == 0 {
		p.vl[vl].rx.Release(blocks)
		p.requestFC(vl)
		return
	}
	p.vl[vl].rx.ReleaseShrink(blocks, back)
	p.vl[vl].lent -= int16(back)
	p.pool += int32(back)
	if back < blocks {
		p.requestFC(vl)
	}
	p.lendToWaiting()
}

// othersShort reports whether a data VL other than vl holds packets and has
// no room for another largest packet.
func (p *Port) othersShort(vl int) bool {
	for v := 0; v < int(p.vls); v++ {
		if v != vl && p.vl[v].rx.Used() > 0 && p.vl[v].rx.Free() < int(p.lendChunk) {
			return true
		}
	}
	return false
}

// lend grows vl's buffer from the shared pool by one largest packet and
// advertises the new room. It is called when a packet arrives on vl (the
// VL's sender is busy, and a receiver cannot see whether it is short of
// credits, so every arrival borrows while the pool lasts) and when blocks
// come back to the pool for VLs short of room.
func (p *Port) lend(vl int) {
	if p.pool == 0 {
		return
	}
	g := min(int(p.lendChunk), int(p.pool), credit.Modulus/2-p.vl[vl].rx.Capacity())
	if g <= 0 {
		return
	}
	p.vl[vl].rx.Grow(g) // so lent + g stays at most 2048
	p.vl[vl].lent += int16(g)
	p.pool -= int32(g)
	p.requestFC(vl)
}

// lendToWaiting offers returned pool blocks to VLs that are short of room
// and hold packets (so their sender has more to send), lowest VL first.
func (p *Port) lendToWaiting() {
	for vl := 0; vl < int(p.vls) && p.pool > 0; vl++ {
		if p.vl[vl].rx.Used() > 0 && p.vl[vl].rx.Free() < int(p.lendChunk) {
			p.lend(vl)
		}
	}
}

// SharedFree returns the shared-pool blocks not lent to any VL.
func (p *Port) SharedFree() int { return int(p.pool) }

// BufferUsed returns the blocks of vl's receive buffer holding packets.
func (p *Port) BufferUsed(vl int) int { return p.vl[vl].rx.Used() }

// BufferCapacity returns vl's receive buffer in blocks.
func (p *Port) BufferCapacity(vl int) int { return p.vl[vl].rx.Capacity() }

// requestFC owes the peer a flow-control packet for vl, respecting the
// minimum interval, and sends it at once if the wire is idle.
func (p *Port) requestFC(vl int) {
	bit := uint16(1) << vl
	now := p.s.Now()
	p.vl[vl].fcOwed = true
	if p.fcMinInterval > 0 && p.vl[vl].fcLast > 0 && now < p.vl[vl].fcLast+p.fcMinInterval {
		if p.fcHeld&bit == 0 {
			p.fcHeld |= bit
			ev := p.s.Schedule(p.vl[vl].fcLast+p.fcMinInterval, p, evFCDeferred)
			ev.VL = int8(vl)
		}
		return
	}
	p.fcPending |= bit
	if now >= p.busyUntil {
		p.sendFC()
	} else {
		p.armIdle() // the packet goes when the wire frees
	}
}

// sendFC puts the lowest pending VL's flow-control packet on the idle wire.
// Flow-control packets go ahead of data: they are sent whenever the wire is
// between packets.
func (p *Port) sendFC() {
	vl := 0
	for p.fcPending&(1<<vl) == 0 {
		vl++
	}
	p.fcPending &^= 1 << vl
	now := p.s.Now()
	ser := p.serialize(now, ib.FlowControlBytes)
	p.busyUntil = now + ser
	p.vl[vl].fcLast = now
	p.vl[vl].fcOwed = false
	add16(&p.count.fcPackets, &p.carried.fcPackets, 1)
	add32(&p.count.busyPS, &p.carried.busyPS, uint32(ser))
	kind := evFCArrive
	if p.flags.has(lossy) && p.corruptLastFC() {
		kind = evFCLost
	}
	ev := p.toPeer(now+p.latency+ser, kind, components.ClassPrimary)
	ev.VL = int8(vl)
	// The packet carries this side's FCTBS for the VL (what it sent toward
	// the peer) and the FCCL of this side's receive buffer, and, for the
	// peer's traces and checkers, the buffer's size now.
	ev.Arg = int64(p.vl[vl].tx.FCTBS())<<16 | int64(p.vl[vl].rx.FCCL())
	ev.Port = int32(p.vl[vl].rx.Capacity())
	if p.flags.has(traced) {
		p.traceTxEnd()
		p.traceFC(now, components.TraceFCSend, vl, p.vl[vl].tx.FCTBS(), p.vl[vl].rx.FCCL(), "free", p.vl[vl].rx.Free(), p.vl[vl].rx.Capacity())
	}
	p.wireBusy(false)
	if p.fcPending != 0 {
		p.armIdle() // the next VL's packet goes when this one ends
	}
}

// serialize returns the wire time of bytes starting now and keeps the
// carry of its end: a transmission that starts as the previous one ends
// continues from that one's exact end, one after a gap from now.
func (p *Port) serialize(now ib.PS, bytes int) ib.PS {
	carry := int64(0)
	if now == p.busyUntil {
		carry = int64(p.serCarry)
	}
	ser, c := serializeFrac(int64(p.psNum), int32(p.psDen), bytes, carry)
	p.serCarry = int8(c) // |c| ≤ psDen/2: serializeFrac
	return ser
}

// Serialization is Timing().Serialization from the port's hot line.
func (p *Port) Serialization(bytes int) ib.PS {
	ser, _ := serializeFrac(int64(p.psNum), int32(p.psDen), bytes, 0)
	return ser
}

// toPeer queues an event for the peer port: in this Sim, or posted to the
// peer's partition when the cable crosses partitions (without reading the
// peer's cold lines otherwise).
func (p *Port) toPeer(at ib.PS, kind uint8, class components.Class) *components.Event {
	switch {
	case p.flags.has(remote):
		return p.s.Post(p.peer.s, at, p.peer, kind, class)
	case class == components.ClassLate:
		return p.s.ScheduleLate(at, p.peer, kind)
	}
	return p.s.Schedule(at, p.peer, kind)
}

// HandleEvent implements components.EventHandler.
func (p *Port) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case evArrive:
		pkt := ev.Pkt
		vl := int(pkt.VL)
		if vl != ib.ManagementVL {
			p.vl[vl].rx.Receive(pkt.Credits())
			if u := p.vl[vl].rx.Used(); u > int(p.vl[vl].rxPeak) {
				p.vl[vl].rxPeak = int16(u) // at most the capacity, 2048
			}
			if p.pool > 0 {
				p.lend(vl)
			}
		}
		add16(&p.count.rxPackets, &p.carried.rxPackets, 1)
		if p.flags.has(traced) {
			p.tracePacket(ev.At(), components.TraceRxHead, pkt, false)
		}
		p.Owner.PacketArrived(p, pkt, ev.At(), ev.Tail)
	case evTxDone:
		if p.s.Now() < p.busyUntil {
			// Superseded: a packet went on the wire at this picosecond
			// ahead of this event. An owner that waited, and did not send
			// it, waits for its end.
			if p.flags.has(ownerWaits) {
				p.armIdle()
			}
			return
		}
		if p.flags.has(traced) {
			p.traceTxEnd()
		}
		if p.fcPending != 0 {
			p.sendFC()
			// An owner that waited for the wire waits for the
			// flow-control packet's end, as when every wire's end was an
			// event.
			if p.flags.has(ownerWaits) {
				p.armIdle()
			}
			return
		}
		p.flags &^= ownerWaits
		p.Owner.PortReady(p)
	case evFCArrive:
		vl := int(ev.VL)
		p.vl[vl].tx.Update(uint16(ev.Arg & 0xFFFF))
		abr := p.vl[vl].rx.ABR()
		p.vl[vl].rx.SyncFCTBS(uint16(ev.Arg >> 16))
		p.vl[vl].peerCap = ev.Port
		if p.flags.has(traced) {
			p.traceFC(p.s.Now(), components.TraceCreditUpdate, vl, p.vl[vl].tx.FCTBS(), p.vl[vl].tx.FCCL(), "avail", p.vl[vl].tx.Available(), int(p.vl[vl].peerCap))
		}
		if p.vl[vl].rx.ABR() != abr {
			// Blocks the peer sent never arrived (a discarded packet): ABR
			// jumped to the peer's FCTBS, and with it the limit this port
			// advertises. The peer gets the new limit now (within
			// fc_min_interval), not at the next refresh. On a lossless
			// link ABR already equals FCTBS here: every block sent before
			// the flow-control packet arrived before it.
			p.requestFC(vl)
		}
		// Tell the owner even while the wire is busy: a switch grants a
		// packet ahead of the wire (allocation and crossbar take cycles),
		// so credits matter to it before the wire frees. An owner with
		// nothing to send (Pending) would do nothing with them now: the
		// event then reads the port's second line only.
		if !p.flags.has(ownerIdle) {
			p.Owner.PortReady(p)
		}
	case evTxEnd:
		// Unless written already: by the wire's end (WaitIdle), or by a
		// packet that started at this picosecond ahead of this event.
		if p.lastTx.data && p.lastTx.end == p.s.Now() {
			p.traceTxEnd()
		}
	case evDiscard:
		p.discard(ev)
	case evFCLost:
		p.Errors.FCPackets++
		p.fcLostAt = append(p.fcLostAt, p.s.Now())
		if p.flags.has(traced) {
			vl := int(ev.VL)
			t := p.s.TraceEvent(p.s.Now(), p.Name, components.TraceDrop)
			t.Fields = append(p.fieldBuf[:0], components.IntField("vl", int64(vl)), components.IntField("fctbs", ev.Arg>>16),
				components.IntField("fccl", ev.Arg&0xFFFF), components.StrField("reason", components.DropLPCRC))
			p.emit(t)
		}
	case evFCRefresh:
		// Every VL gets a flow-control packet each refresh period, changed
		// or not, so a lost update can never leave a sender starved longer
		// than one period plus a packet's wire time.
		for vl := 0; vl < int(p.vls); vl++ {
			p.fcPending |= 1 << vl
		}
		if p.fcPending != 0 {
			if p.s.Now() >= p.busyUntil {
				p.sendFC()
			} else {
				p.armIdle()
			}
		}
		p.s.Schedule(p.s.Now()+p.fcRefresh, p, evFCRefresh)
	case evFCDeferred:
		vl := int(ev.VL)
		now := p.s.Now()
		switch {
		case !p.vl[vl].fcOwed:
			// A refresh carried the change meanwhile: nothing is owed.
			p.fcHeld &^= 1 << vl
		case now < p.vl[vl].fcLast+p.fcMinInterval:
			// A refresh went out since the deferral, and the VL changed
			// after it: wait the minimum interval from that packet.
			p.s.Schedule(p.vl[vl].fcLast+p.fcMinInterval, p, evFCDeferred).VL = int8(vl)
		default:
			p.fcHeld &^= 1 << vl
			p.fcPending |= 1 << vl
			if now >= p.busyUntil {
				p.sendFC()
			} else {
				p.armIdle()
			}
		}
	default:
		panic(fmt.Sprintf("link: %s got event kind %d", p.Name, ev.Kind))
	}
}

// discard drops a data packet that arrived corrupted, at its tail: it takes
// no buffer space and no credit (ABR does not count its blocks; the next
// flow-control packet from the peer resynchronises ABR to the peer's FCTBS,
// IBA §7.9), and the owner never sees it.
func (p *Port) discard(ev *components.Event) {
	pkt := ev.Pkt
	p.Errors.Packets++
	if p.flags.has(traced) {
		t := p.s.TraceEvent(ev.At(), p.Name, components.TraceDrop)
		t.Fields = append(t.AppendPacket(p.fieldBuf[:0], pkt), components.StrField("reason", components.DropVCRC))
		p.emit(t)
	}
	if p.OnDiscard != nil {
		p.OnDiscard(p, pkt)
	}
	p.s.FreePacket(pkt)
}

// traceTxEnd writes the tx_end line the last data packet owes, if any: when
// its wire-idle event runs, or, when the next packet (data or flow control)
// starts in the same picosecond before that event has run, just ahead of
// that packet's line — every tx_start has its tx_end.
func (p *Port) traceTxEnd() {
	if !p.lastTx.data {
		return
	}
	p.lastTx.data = false
	ev := p.s.TraceEvent(p.lastTx.end, p.Name, components.TraceTxEnd)
	ev.Fields = append(p.fieldBuf[:0], components.IntField("seq", int64(p.lastTx.seq)),
		components.IntField("vl", int64(p.lastTx.vl)), components.IntField("bytes", int64(p.lastTx.bytes)))
	p.emit(ev)
}

func (p *Port) emit(ev *components.TraceEvent) {
	p.InvokeHook(sim.HookCtx{Domain: p, Pos: components.HookPosTrace, Item: ev})
	p.fieldBuf = ev.Fields[:0]
}

// tracePacket announces a packet's tx_start (with the packet, and whether
// the wire corrupts it) or rx_head.
func (p *Port) tracePacket(t ib.PS, kind components.TraceKind, pkt *ib.Packet, corrupt bool) {
	ev := p.s.TraceEvent(t, p.Name, kind)
	ev.Fields = ev.AppendPacket(p.fieldBuf[:0], pkt)
	if kind == components.TraceTxStart {
		ev.Pkt, ev.Corrupt = pkt, corrupt
	}
	if vl := int(pkt.VL); kind == components.TraceTxStart && vl != ib.ManagementVL {
		// The transmitter's credits for the VL after the packet took its
		// blocks, and the peer buffer they count against.
		ev.Fields = append(ev.Fields, components.IntField("avail", int64(p.vl[vl].tx.Available())),
			components.IntField("cap", int64(p.vl[vl].peerCap)))
	}
	if vl := int(pkt.VL); kind == components.TraceRxHead && vl != ib.ManagementVL {
		// The receive buffer's occupancy with the packet's blocks in it,
		// for waveforms and the buffer checker.
		ev.Fields = append(ev.Fields, components.IntField("occ", int64(p.vl[vl].rx.Used())),
			components.IntField("cap", int64(p.vl[vl].rx.Capacity())))
	}
	p.emit(ev)
}

// traceFC announces a flow-control packet sent (fc_send: this side's FCTBS
// and the FCCL of its receive buffer, free = its free blocks) or the credit
// state after one arrived (credit_update: FCTBS and FCCL of the transmit
// side, avail = blocks the sender may now send); cap is the buffer's size.
func (p *Port) traceFC(t ib.PS, kind components.TraceKind, vl int, fctbs, fccl uint16, countKey string, count, capacity int) {
	ev := p.s.TraceEvent(t, p.Name, kind)
	ev.Fields = append(p.fieldBuf[:0], components.IntField("vl", int64(vl)), components.IntField("fctbs", int64(fctbs)),
		components.IntField("fccl", int64(fccl)), components.IntField(countKey, int64(count)), components.IntField("cap", int64(capacity)))
	if kind == components.TraceFCSend {
		// The receive buffer's occupancy when it advertises its room.
		ev.Fields = append(ev.Fields, components.IntField("occ", int64(capacity-count)))
	}
	p.emit(ev)
}
