package hca

import (
	"fmt"
	"slices"
	"syscall"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// CQ is a completion queue: a ring of 64-byte CQEs in host memory.
type CQ struct {
	Num   uint32
	Depth int
	buf   uint64 // host address of the CQE ring
	pi    uint32 // CQEs the HCA wrote
	ci    uint32 // CQEs the application consumed
	// Overrun is set when the HCA found the ring full (the CQ is in error).
	Overrun   bool
	dev       *Device
	destroyed bool // DestroyCQ
	// notify is the CQ's completion-event state (cqevent.go).
	notify cqNotify
	// eqn is the event queue its completion events go to (mlx5
	// cqc.c_eqn): the completion vector it was created with
	// (CreateCQVector), one completion EQ per vector as mlx5 makes them.
	eqn uint32
}

// QP is an RC queue pair: the application's send and receive queues in host
// memory and the HCA's QP context.
type QP struct {
	Num    uint32
	PD     uint32
	SendCQ *CQ
	RecvCQ *CQ
	State  QPState
	dev    *Device

	sqBuf   uint64 // send queue ring, sqBBs × 64 bytes
	sqBBs   int
	rqBuf   uint64 // receive queue ring, rqDepth × rqStride bytes
	rqDepth int
	// rqStride is one receive WQE's bytes: 16 × the power of two at or
	// above the QP's max_recv_sge (mlx5's receive WQE shift), so a WQE's
	// read costs its whole stride whatever its SGEs.
	rqStride   int
	maxRecvSGE int // QPCap.MaxRecvSGE
	// maxSendSGE is the most gather elements a send WR may carry: the
	// QP's QPCap.MaxSendSGE, or the device's MaxSendSGE for a cap of 0.
	maxSendSGE int
	// maxInlineData is the inline limit libmlx5 derives from the QP's
	// caps (QPInlineLimit); 0 for a cap of 0, the device's limit only.
	maxInlineData int
	// srq is the shared receive queue the QP takes its receive WQEs from
	// (CreateQPSRQ); nil for a QP with its own RQ.
	srq *SRQ
	// lastWQE: EventQPLastWQEReached was raised (the QP went to ERR on an
	// SRQ); a QP raises it once.
	lastWQE bool
	// destroyed: DestroyQP ran. The QP is in RESET, does nothing more, and
	// keeps its number (never given again).
	destroyed bool
	dbr       uint64 // doorbell record: [0] RQ counter, [1] SQ counter

	// Application side.
	sqPI   uint32   // WQEBBs posted
	sqCI   uint32   // WQEBBs known complete
	sqWrid []uint64 // wr_id by first WQEBB index
	// sqReg marks the first WQEBBs of REG_MR WQEs, nil until the first:
	// a UMR's CQE names no verb, so the provider keeps which it posted
	// (mlx5's wq->wr_data, get_umr_comp).
	sqReg  []bool
	sqNext []uint32 // producer count after the WQE at an index
	// sqSGL holds, by first WQEBB index, the gather list decoded from the
	// WQE there, reused by the next WQE with a list at that index: the
	// HCA is done with a WQE before software can post over it (sqCI
	// passes it only when a CQE at or after it is polled), so a list
	// allocates once per index, not once per message. Nil until the QP's
	// first WQE with more than one data segment.
	sqSGL  [][]SGE
	rqPI   uint32
	rqCI   uint32
	rqWrid []uint64
	// nextFence is the fence mode the next WQE gets unless it asks for a
	// fence: the initiator small fence after a BIND_MW or LOCAL_INV
	// (libmlx5's qp->fm_cache, kept across posts).
	nextFence uint8

	// HCA side.
	// dmaSlot and keySlot are the starts of the QP's last items in the
	// dma and key_check stages (ps): the stages serve in time order, but
	// each QP's items in the order offered (stage.acceptQP), so that a
	// packet's payload write does not pass the previous packet's, nor the
	// key check before it.
	dmaSlot, keySlot ib.PS
	// sqParseSlot and rqParseSlot are the starts of the send and the
	// receive queue's last items in the wqe_fetch stage (ps): the parser
	// takes WQEs as they come on chip, from any queue, each queue's in
	// the order they were read (stage.acceptQP), so a send WQE whose read
	// is back is not parsed after another queue's read still on the way.
	sqParseSlot, rqParseSlot ib.PS
	// rqFetchSlot is dmaSlot for the receive queue's prefetch reads: the
	// prefetcher is a DMA requester of its own, as an SRQ's is. In the
	// QP's order it would wait behind the payload writes of packets that
	// wait for its own reads, one read per window of messages.
	rqFetchSlot   ib.PS
	sqDB          uint32 // producer count from doorbells
	sqFetch       uint32 // WQEBBs whose fetch was issued
	sqFetched     uint32 // WQEBBs on chip
	sqDecoded     uint32 // WQEBBs decoded
	fetchInflight int
	decoded       []decodedWQE
	inlineArena   []byte        // inline payloads of decoded WQEs not yet handed on
	rqDB          uint32        // receive WQEs the HCA knows are posted
	rqFetch       uint32        // receive WQEs whose prefetch was issued
	rqCache       ring[RecvWQE] // receive WQEs on chip, in posting order
	rqTaken       uint32        // receive WQEs consumed by the responder
	rqDone        uint32
	// rqReadDone holds, by receive WQE index modulo the prefetch window,
	// when the prefetch read of that WQE puts it on chip; rqWait, for the
	// WQE the responder just took, when it may use it: a WQE taken while
	// its prefetch read is in flight waits for that read, as the
	// responder would, instead of reading it again.
	rqReadDone []ib.PS
	rqWait     ib.PS
	// srqTook is set when the responder has just taken a WQE from the
	// QP's SRQ with SRQ contexts modelled: the packet's work then waits
	// for the SRQ's context too (recvWQEAt).
	srqTook bool
	thread  *Thread // the application thread its posts run on
	// xlateAt is when the address translation of the inbound message
	// being received is on chip: the responder translates a message's
	// range at its key check, and its later packets' DMAs wait for that.
	xlateAt ib.PS

	req  *Requester
	resp *Responder
	// readReady[slot][k]: when response k (from the READ's first PSN) of
	// responder resource slot is read from host memory and built, ready
	// for the wire (fetchRead); readSeq[slot][k] its packet number;
	// readData[slot] holds its payload at k × MTU.
	readReady [][]ib.PS
	readSeq   [][]uint64
	readData  [][]byte
	remoteLID uint16
	remoteQPN uint32
	// sl is the service level of the QP's address vector (ModifyQP to RTR:
	// ibv_qp_attr.ah_attr.sl, perftest --sl), carried in every packet's LRH;
	// vl the data VL the port's SL-to-VL table maps it to.
	sl, vl uint8

	// UD: no connection, no ACKs. QKey is the QP's Q_Key; udPending the
	// checked WQEs waiting for the scheduler; udPSN the next BTH PSN.
	UD        bool
	QKey      uint32
	udMTU     int
	udPending []decodedWQE
	udPSN     uint32

	// fenceWait: the first WQE of decoded is fenced and waits for an
	// earlier READ or atomic to complete; the requester's answer to its
	// last one hands it on (releaseFence).
	fenceWait bool

	timerArmed    bool  // the local ACK timer runs
	timerDeadline ib.PS // when it expires
	timerQueued   bool  // an evTimeout is in the event queue
	// holdUntil: the requester may be granted no packet before it: an RNR
	// NAK's wait, or with congestion control (cc.go) the CCT inter-packet
	// delay. pickQP keeps a QP waiting it in mayWork.
	holdUntil ib.PS
	// respHold: with congestion control (cc.go), the QP's next response
	// (READ response, atomic ACK, ACK or NAK) may start no sooner: its
	// previous response's start + serialization + CCT[index]. 0 until a
	// response leaves at a delay above zero.
	respHold ib.PS
	// ccScan marks the QP in a response queue scan (ccGateResponses).
	ccScan uint32
}

// decodedWQE is a send WQE on chip, waiting for its key check.
type decodedWQE struct {
	wqe     SendWQE
	inline  []byte
	readyAt ib.PS
	keyErr  bool
	status  WCStatus // UD: a local error found before sending
}

// Requester returns the QP's requester state (nil before RTS).
func (qp *QP) Requester() *Requester { return qp.req }

// Responder returns the QP's responder state (nil before RTR).
func (qp *QP) Responder() *Responder { return qp.resp }

// AllocPD returns a new protection domain handle.
func (d *Device) AllocPD() uint32 {
	pd := d.nextPD
	d.nextPD++
	return pd
}

// RegMR registers [addr, addr+length) in pd with access flags.
func (d *Device) RegMR(pd uint32, addr uint64, length int, access int) MR {
	return d.Keys.Register(pd, addr, uint64(length), access)
}

// Malloc returns a fresh host buffer of n bytes, 4 KiB aligned.
func (d *Device) Malloc(n int) uint64 { return d.Alloc.Alloc(n, pageBytes) }

// CreateCQ makes a completion queue of depth CQEs (a power of two).
func (d *Device) CreateCQ(depth int) *CQ {
	if depth < 2 || depth&(depth-1) != 0 {
		panic(fmt.Sprintf("hca: %s CQ depth %d is not a power of two", d.Name, depth))
	}
	cq := &CQ{Num: uint32(len(d.cqs)), Depth: depth, buf: d.Malloc(depth * CQEBytes), dev: d}
	var inv [CQEBytes]byte
	inv[cqeOpOwnOff] = CQEInvalid << 4
	for i := 0; i < depth; i++ {
		d.Mem.Write(cq.buf+uint64(i)*CQEBytes, inv[:])
	}
	d.cqs = append(d.cqs, cq)
	return cq
}

// QPCap is what a QP is created for beyond its queue sizes (ibv_qp_cap).
type QPCap struct {
	// MaxRecvSGE is the most scatter elements a receive WR may carry,
	// 1 … MaxRecvSGE; it sets the receive stride (QP.RecvStride).
	MaxRecvSGE int
	// MaxSendSGE is the most gather elements a send WR may carry, 1 …
	// MaxSendSGE (libmlx5 keeps it as sq.max_gs and refuses a post of
	// more with ENOMEM). 0 leaves the device's MaxSendSGE (30), the limit
	// every QP had before the cap existed: a QPCap written without it
	// keeps its behaviour.
	MaxSendSGE int
	// MaxInlineData is the most inline bytes a send WR may carry, 1 …
	// hca.max_inline_bytes (ibv_qp_cap.max_inline_data). libmlx5 sizes
	// the send WQE for it and MaxSendSGE and gives the QP what that WQE
	// holds (QPInlineLimit, at least the bytes asked for); a post of more
	// is refused with ENOMEM. 0 leaves the device's hca.max_inline_bytes,
	// the limit every QP had before the cap existed.
	MaxInlineData int
}

// MaxInlineData returns the most inline bytes a send WR on the QP may
// carry: QPInlineLimit for its caps, within hca.max_inline_bytes, or
// hca.max_inline_bytes for a cap of 0.
func (qp *QP) MaxInlineData() int {
	if qp.maxInlineData > 0 {
		return min(qp.maxInlineData, qp.dev.Cfg.MaxInlineBytes)
	}
	return qp.dev.Cfg.MaxInlineBytes
}

// MaxSendSGE returns the most gather elements a send WR on the QP may
// carry (QPCap.MaxSendSGE, or the device's MaxSendSGE for 0).
func (qp *QP) MaxSendSGE() int { return qp.maxSendSGE }

// RecvStride returns the QP's receive WQE size in bytes.
func (qp *QP) RecvStride() int { return qp.rqStride }

// qpBase is the first QP number (QPs 0 and 1 are special in IB).
const qpBase = 0x100

// CreateQP makes an RC QP in RESET with a send queue of sqBBs WQEBBs and a
// receive queue of rqDepth WQEs (both powers of two).
func (d *Device) CreateQP(pd uint32, scq, rcq *CQ, sqBBs, rqDepth int) *QP {
	qp, err := d.CreateQPCap(pd, scq, rcq, sqBBs, rqDepth, QPCap{MaxRecvSGE: 1})
	if err != nil {
		panic(err)
	}
	return qp
}

// CreateQPCap makes an RC QP as CreateQP does, for the capabilities c: its
// receive WQEs take c.MaxRecvSGE scatter elements, a stride of 16 × that
// rounded up to a power of two bytes; its send WRs at most c.MaxSendSGE
// gather elements (0: the device's MaxSendSGE); its inline sends at most
// QPInlineLimit bytes for c.MaxInlineData (0: hca.max_inline_bytes). A
// count outside 1 … MaxRecvSGE, outside 0 … MaxSendSGE, or an inline cap
// outside 0 … hca.max_inline_bytes, is refused, as ibv_create_qp refuses
// a cap above the device's (libmlx5's mlx5_calc_send_wqe: EINVAL).
func (d *Device) CreateQPCap(pd uint32, scq, rcq *CQ, sqBBs, rqDepth int, c QPCap) (*QP, error) {
	return d.createQPCap(pd, scq, rcq, sqBBs, rqDepth, c, false)
}

// createQPCap is CreateQPCap for an RC or (ud) a UD QP: the inline limit
// depends on the transport's send WQE overhead.
func (d *Device) createQPCap(pd uint32, scq, rcq *CQ, sqBBs, rqDepth int, c QPCap, ud bool) (*QP, error) {
	if err := d.checkLive(pd, scq, rcq); err != nil {
		return nil, err
	}
	if c.MaxRecvSGE < 1 || c.MaxRecvSGE > MaxRecvSGE {
		return nil, fmt.Errorf("hca: %s max_recv_sge %d is not 1 … %d", d.Name, c.MaxRecvSGE, MaxRecvSGE)
	}
	if err := d.checkSendCap(c); err != nil {
		return nil, err
	}
	stride := RecvWQEBytes
	for stride < c.MaxRecvSGE*RecvWQEBytes {
		stride *= 2
	}
	if rqDepth < 1 || rqDepth&(rqDepth-1) != 0 {
		panic(fmt.Sprintf("hca: %s QP queues %d / %d are not powers of two", d.Name, sqBBs, rqDepth))
	}
	qp := d.newQP(pd, scq, rcq, sqBBs, rqDepth, stride, c.MaxRecvSGE)
	qp.setSendCap(c, ud)
	return qp, nil
}

// checkSendCap refuses send caps above the device's: max_send_sge outside
// 0 … MaxSendSGE, max_inline_data outside 0 … hca.max_inline_bytes
// (libmlx5's mlx5_calc_send_wqe: EINVAL).
func (d *Device) checkSendCap(c QPCap) error {
	if c.MaxSendSGE < 0 || c.MaxSendSGE > MaxSendSGE {
		return fmt.Errorf("hca: %s max_send_sge %d is not 1 … %d (or 0, the device's %d): %w",
			d.Name, c.MaxSendSGE, MaxSendSGE, MaxSendSGE, syscall.EINVAL)
	}
	if c.MaxInlineData < 0 || c.MaxInlineData > d.Cfg.MaxInlineBytes {
		return fmt.Errorf("hca: %s max_inline_data %d is not 1 … hca.max_inline_bytes %d (or 0, the device's): %w",
			d.Name, c.MaxInlineData, d.Cfg.MaxInlineBytes, syscall.EINVAL)
	}
	return nil
}

// setSendCap gives an RC or (ud) a UD QP the send caps c (checkSendCap
// passed): its max_send_sge, and the inline limit libmlx5 derives from
// both (QPInlineLimit); a cap of 0 leaves the device's.
func (qp *QP) setSendCap(c QPCap, ud bool) {
	if c.MaxSendSGE > 0 {
		qp.maxSendSGE = c.MaxSendSGE
	}
	if c.MaxInlineData > 0 {
		qp.maxInlineData = QPInlineLimit(ud, qp.maxSendSGE, c.MaxInlineData)
	}
	qp.UD = ud
}

// newQP makes a QP in RESET with a send queue of sqBBs WQEBBs and a
// receive queue of rqDepth WQEs of stride bytes (none for rqDepth 0: a QP
// on an SRQ).
func (d *Device) newQP(pd uint32, scq, rcq *CQ, sqBBs, rqDepth, stride, maxRecvSGE int) *QP {
	if sqBBs < 1 || sqBBs&(sqBBs-1) != 0 {
		panic(fmt.Sprintf("hca: %s QP queues %d / %d are not powers of two", d.Name, sqBBs, rqDepth))
	}
	qp := &QP{Num: qpBase + uint32(len(d.qps)), PD: pd, SendCQ: scq, RecvCQ: rcq, State: QPReset, dev: d, thread: &d.main,
		sqBBs: sqBBs, rqDepth: rqDepth, sqWrid: make([]uint64, sqBBs), sqNext: make([]uint32, sqBBs),
		rqWrid: make([]uint64, rqDepth), rqStride: stride, maxRecvSGE: maxRecvSGE, maxSendSGE: MaxSendSGE}
	qp.sqBuf = d.Malloc(sqBBs * WQEBBBytes)
	if rqDepth > 0 {
		qp.rqBuf = d.Malloc(rqDepth * stride)
	}
	qp.dbr = d.Malloc(8)
	d.qps = append(d.qps, qp)
	if len(d.qps) > 64*len(d.mayWork) {
		d.mayWork = append(d.mayWork, 0)
	}
	return qp
}

// CreateUDQP makes a UD QP in RESET with Q_Key qkey, its receives of one
// scatter element.
func (d *Device) CreateUDQP(pd uint32, scq, rcq *CQ, sqBBs, rqDepth int, qkey uint32) *QP {
	qp := d.CreateQP(pd, scq, rcq, sqBBs, rqDepth)
	qp.UD, qp.QKey = true, qkey
	return qp
}

// CreateUDQPCap makes a UD QP as CreateUDQP does, for the capabilities c
// (CreateQPCap's rules): a receive of up to c.MaxRecvSGE elements takes a
// datagram's GRH area and payload across them (receiveUD).
func (d *Device) CreateUDQPCap(pd uint32, scq, rcq *CQ, sqBBs, rqDepth int, qkey uint32, c QPCap) (*QP, error) {
	qp, err := d.createQPCap(pd, scq, rcq, sqBBs, rqDepth, c, true)
	if err != nil {
		return nil, err
	}
	qp.QKey = qkey
	return qp, nil
}

// UDGRHBytes is the room a UD receive buffer keeps for a GRH before the
// payload (verbs: the first 40 bytes of a UD receive are the GRH area).
const UDGRHBytes = 40

func (d *Device) qpByNum(n uint32) *QP {
	i := int(n) - qpBase
	if i < 0 || i >= len(d.qps) {
		return nil
	}
	return d.qps[i]
}

// QPAttr is what ModifyQP sets (ibv_qp_attr, the fields RC needs).
type QPAttr struct {
	State   QPState
	MTU     int    // path MTU (RTR)
	DestLID uint16 // RTR
	DestQPN uint32 // RTR
	RQPSN   uint32 // RTR: first PSN expected
	SQPSN   uint32 // RTS: first PSN sent
	// SL is the service level of the address vector (RTR), 0..15. A UD
	// QP's datagrams all carry it: the model gives a UD QP one address
	// vector SL, as perftest's single address handle has.
	SL uint8
}

// ModifyQP moves qp through RESET → INIT → RTR → RTS, or to ERR (which
// flushes outstanding work) or back to RESET.
func (d *Device) ModifyQP(qp *QP, a QPAttr) error {
	if qp.destroyed {
		return fmt.Errorf("qp 0x%x: modify of a destroyed QP: %w", qp.Num, syscall.EINVAL)
	}
	bad := func() error {
		return fmt.Errorf("qp 0x%x: modify from %v to %v is not allowed", qp.Num, qp.State, a.State)
	}
	switch a.State {
	case QPInit:
		if qp.State != QPReset {
			return bad()
		}
	case QPRTR:
		if qp.State != QPInit {
			return bad()
		}
		if !ib.ValidMTU(a.MTU) {
			return fmt.Errorf("qp 0x%x: path mtu %d is not an IB MTU (256, 512, 1024, 2048, 4096)", qp.Num, a.MTU)
		}
		if err := d.setSL(qp, a.SL); err != nil {
			return err
		}
		if qp.UD {
			qp.udMTU = a.MTU // UD has no peer: the MTU bounds each message
			break
		}
		qp.remoteLID, qp.remoteQPN = a.DestLID, a.DestQPN
		qp.resp = NewResponder(&d.Cfg, a.MTU, a.RQPSN)
	case QPRTS:
		if qp.State != QPRTR {
			return bad()
		}
		if qp.UD {
			qp.udPSN = a.SQPSN & psnMask
			break
		}
		qp.req = NewRequester(&d.Cfg, qp.resp.MTU, a.SQPSN)
	case QPErr:
		d.flushUD(qp)
		defer d.flushRecvs(qp, d.s.Now())
		if qp.req != nil {
			for _, c := range qp.req.FlushAll() {
				d.sendCompletion(qp, c, d.s.Now())
			}
			d.purge(qp)
		}
		if qp.fenceWait {
			d.releaseFence(qp, d.s.Now()) // the waiting WQEs flush
		}
		if qp.resp != nil {
			qp.resp.State = QPErr
		}
	case QPReset:
		qp.req, qp.resp = nil, nil
		qp.fenceWait = false
	default:
		return bad()
	}
	qp.State = a.State
	d.markWork(qp)
	return nil
}

// setSL gives qp service level sl and the VL the port maps it to; a VL the
// port cannot send on (15, or beyond its VLs) is refused, as a port drops
// packets on such a VL.
func (d *Device) setSL(qp *QP, sl uint8) error {
	if sl > 15 {
		return fmt.Errorf("qp 0x%x: SL %d is not a service level (0 to 15)", qp.Num, sl)
	}
	vl := d.sl2vl[sl]
	if vl == ib.ManagementVL {
		return fmt.Errorf("qp 0x%x: SL %d maps to VL 15 (drop) in %s's SL-to-VL table; a data SL needs a data VL", qp.Num, sl, d.Name)
	}
	if d.Port != nil && int(vl) >= d.Port.VLs() {
		return fmt.Errorf("qp 0x%x: SL %d maps to VL %d, but %s has %d data VLs", qp.Num, sl, vl, d.Port.Name, d.Port.VLs())
	}
	qp.sl, qp.vl = sl, vl
	d.tx.used |= 1 << vl
	return nil
}

// SL returns the QP's service level (0 before RTR).
func (qp *QP) SL() uint8 { return qp.sl }

// VL returns the data VL the QP's packets go on.
func (qp *QP) VL() uint8 { return qp.vl }

// ConnectRC takes two RESET QPs to RTS facing each other, on SL 0.
func ConnectRC(a, b *QP, mtu int, psnA, psnB uint32) error {
	return ConnectRCSL(a, b, mtu, psnA, psnB, 0)
}

// ConnectRCSL takes two RESET QPs to RTS facing each other with service
// level sl in both address vectors (perftest --sl gives both sides the
// same SL), so requests and responses travel on sl.
func ConnectRCSL(a, b *QP, mtu int, psnA, psnB uint32, sl uint8) error {
	for _, x := range []struct {
		qp, peer *QP
		sq, rq   uint32
	}{{a, b, psnA, psnB}, {b, a, psnB, psnA}} {
		d := x.qp.dev
		for _, attr := range []QPAttr{
			{State: QPInit},
			{State: QPRTR, MTU: mtu, DestLID: x.peer.dev.LID, DestQPN: x.peer.Num, RQPSN: x.rq, SL: sl},
			{State: QPRTS, SQPSN: x.sq},
		} {
			if err := d.ModifyQP(x.qp, attr); err != nil {
				return err
			}
		}
	}
	return nil
}

// Thread is an application thread on the host (a CPU core running one
// process's verbs calls): its posts and poll-loop work run one after
// another. Every QP starts on its device's main thread; processes that
// share a host (the perftest pairs of an incast server) each take their
// own (NewThread, SetThread), as each runs on its own core.
type Thread struct{ freeAt ib.PS }

// NewThread returns a new application thread on the device's host, free.
func (d *Device) NewThread() *Thread { return &Thread{} }

// SetThread moves qp's posts to thread t.
func (qp *QP) SetThread(t *Thread) { qp.thread = t }

// Thread returns the application thread qp's posts run on.
func (qp *QP) Thread() *Thread { return qp.thread }

// cpuPost charges qp's application thread for one post and returns when
// its doorbell store leaves the CPU.
func (d *Device) cpuPost(qp *QP) ib.PS {
	t := qp.thread
	t.freeAt = max(d.s.Now(), t.freeAt) + ib.FromNanoseconds(d.Cfg.Host.PostNS)
	return t.freeAt
}

// FreeAt returns when thread t is next free, at the earliest now.
func (t *Thread) FreeAt(now ib.PS) ib.PS { return max(t.freeAt, now) }

// Charge makes thread t busy for dt from when it is free (poll-loop work
// the workload models), returning when it is done.
func (t *Thread) Charge(now, dt ib.PS) ib.PS {
	t.freeAt = t.FreeAt(now) + dt
	return t.freeAt
}

// CPUFreeAt returns when the device's main application thread is next free.
func (d *Device) CPUFreeAt() ib.PS { return d.main.FreeAt(d.s.Now()) }

// ChargeCPU makes the main application thread busy for dt from when it is
// free (poll-loop work the workload models), returning when it is done.
func (d *Device) ChargeCPU(dt ib.PS) ib.PS { return d.main.Charge(d.s.Now(), dt) }

// PostSend writes wr's WQE into the send queue, updates the doorbell record
// and rings the doorbell (ibv_post_send). A WQE of at most
// hca.blueflame_bytes goes through BlueFlame with the doorbell, so the HCA
// need not fetch it: an inline one always, any other when
// hca.prefer_blueflame (libmlx5's default).
func (d *Device) PostSend(qp *QP, wr *SendWR) error {
	if qp.State != QPRTS && qp.State != QPErr {
		return fmt.Errorf("qp 0x%x: post_send in state %v (RTS required)", qp.Num, qp.State)
	}
	if wr.Opcode.isLocal() {
		if err := checkLocalWR(qp, wr); err != nil {
			return err
		}
	} else if wr.SGL != nil {
		if err := checkSGL(qp, wr); err != nil {
			return err
		}
		// The WQE's length is the list's; the caller's WR is not changed.
		c := *wr
		c.Length = uint32(sglLength(wr.SGL))
		wr = &c
	}
	if wr.Inline && int(wr.Length) > d.Cfg.MaxInlineBytes {
		return fmt.Errorf("qp 0x%x: inline length %d exceeds hca.max_inline_bytes %d", qp.Num, wr.Length, d.Cfg.MaxInlineBytes)
	}
	if wr.Inline && qp.maxInlineData > 0 && int(wr.Length) > qp.maxInlineData {
		// libmlx5's set_data_inl_seg: inl > qp->max_inline_data is ENOMEM.
		return fmt.Errorf("qp 0x%x: inline length %d exceeds the QP's max_inline_data %d: %w", qp.Num, wr.Length, qp.maxInlineData, syscall.ENOMEM)
	}
	if wr.Opcode.isAtomic() {
		wr.Length = 8
		wr.Inline = false
	}
	if qp.UD != wr.UD || qp.UD && wr.Opcode != WRSend && wr.Opcode != WRSendImm {
		return fmt.Errorf("qp 0x%x: %v work request on a %s QP (UD QPs take UD SENDs only)", qp.Num, wr.Opcode, qpKind(qp))
	}
	if n := wqeBytes(wr); n > MaxWQEBytes {
		return fmt.Errorf("qp 0x%x: inline length %d makes a %d-byte WQE, more than a WQE holds (%d bytes, 63 16-byte segments; at most %d inline bytes for this one)",
			qp.Num, wr.Length, WQEBBs(wr)*WQEBBBytes, MaxWQEBytes, InlineLimit(wr.Opcode, wr.UD))
	}
	bbs := WQEBBs(wr)
	if int(qp.sqPI+uint32(bbs)-qp.sqCI) > qp.sqBBs {
		return fmt.Errorf("qp 0x%x: send queue full (%d WQEBBs)", qp.Num, qp.sqBBs)
	}
	var inline []byte
	if wr.Inline {
		// The CPU's copy, through a buffer the device keeps: EncodeSendWQE
		// copies it into the WQE, so it is free again when that returns.
		d.inlineCopy = slices.Grow(d.inlineCopy[:0], int(wr.Length))[:wr.Length]
		inline = d.inlineCopy
		if wr.SGL == nil {
			d.Mem.Read(wr.LocalAddr, inline)
		} else {
			// The CPU copies each element's bytes into the WQE, in order.
			at := 0
			for _, e := range wr.SGL {
				d.Mem.Read(e.Addr, inline[at:at+int(e.Length)])
				at += int(e.Length)
			}
		}
	}
	var buf [maxWQEBBs * WQEBBBytes]byte
	idx := uint16(qp.sqPI)
	n := EncodeSendWQE(buf[:], wr, idx, qp.Num, inline)
	if !wr.Fence {
		buf[11] |= qp.nextFence
	}
	qp.nextFence = 0
	if wr.Opcode.isLocal() {
		qp.nextFence = ctrlSmallFence
	}
	qp.writeSQ(qp.sqPI, buf[:n])
	slot := qp.sqPI % uint32(qp.sqBBs)
	qp.sqWrid[slot] = wr.ID
	if qp.sqReg != nil || wr.Opcode == WRRegMR {
		noteReg(qp, slot, wr.Opcode == WRRegMR)
	}
	qp.sqNext[slot] = qp.sqPI + uint32(bbs)
	qp.sqPI += uint32(bbs)
	d.Mem.WriteU32(qp.dbr+4, qp.sqPI&0xffff)
	store := d.cpuPost(qp)
	// One WR per post (nreq 1): mlx5's post_send_db writes the whole WQE
	// to the BlueFlame register if it fits and is inline or the provider
	// prefers BlueFlame (its default; hca.prefer_blueflame).
	bf := (wr.Inline || d.Cfg.PreferBlueFlame) && d.Cfg.BlueFlameBytes > 0 && n <= d.Cfg.BlueFlameBytes
	e := d.at(d.PCIe.MMIO(store), evDoorbell)
	e.Arg = qpArg(qp, qp.sqPI)
	if bf {
		e.VL = 1
		e.Port = int32(bbs)
	}
	if tl := d.Timeline; tl.atRequester(d, qp.Num) && tl.WQEIndex == idx && !tl.posted {
		tl.Posted, tl.posted = d.s.Now(), true
		tl.DoorbellStore = store
	}
	return nil
}

// writeSQ copies WQE bytes into the ring at WQEBB index pi, wrapping.
func (qp *QP) writeSQ(pi uint32, b []byte) {
	for len(b) > 0 {
		slot := pi % uint32(qp.sqBBs)
		qp.dev.Mem.Write(qp.sqBuf+uint64(slot)*WQEBBBytes, b[:WQEBBBytes])
		b = b[WQEBBBytes:]
		pi++
	}
}

// readSQ reads n WQEBBs from index pi, wrapping.
func (qp *QP) readSQ(pi uint32, dst []byte) {
	for off := 0; off < len(dst); off += WQEBBBytes {
		slot := pi % uint32(qp.sqBBs)
		qp.dev.Mem.Read(qp.sqBuf+uint64(slot)*WQEBBBytes, dst[off:off+WQEBBBytes])
		pi++
	}
}

// PostRecv writes a receive WQE and updates the doorbell record
// (ibv_post_recv). The HCA learns of it MMIO latency after the CPU's store
// (a modelling choice: mlx5 reads the record on demand; the model
// prefetches from the doorbell, PopRecv).
func (d *Device) PostRecv(qp *QP, wr *RecvWR) error {
	if qp.State == QPReset {
		return fmt.Errorf("qp 0x%x: post_recv in state RESET (INIT or later required)", qp.Num)
	}
	if qp.srq != nil {
		return fmt.Errorf("qp 0x%x: post_recv on a QP of srq %d, which has no receive queue of its own (post to the SRQ): %w", qp.Num, qp.srq.Num, syscall.EINVAL)
	}
	if int(qp.rqPI-qp.rqCI) >= qp.rqDepth {
		return fmt.Errorf("qp 0x%x: receive queue full (%d WQEs)", qp.Num, qp.rqDepth)
	}
	if wr.SGL != nil {
		if wr.Addr != 0 || wr.Length != 0 || wr.LKey != 0 {
			return fmt.Errorf("qp 0x%x: receive WR sets both SGL and Addr/Length/LKey (give one scatter element or a list)", qp.Num)
		}
		if len(wr.SGL) > qp.maxRecvSGE {
			// mlx5 post_recv refuses num_sge > rq.max_gs with EINVAL
			// (Linux drivers/infiniband/hw/mlx5).
			return fmt.Errorf("qp 0x%x: receive WR with %d SGEs, more than the QP's max_recv_sge %d: %w", qp.Num, len(wr.SGL), qp.maxRecvSGE, syscall.EINVAL)
		}
		if sglLength(wr.SGL) > 1<<31 {
			return fmt.Errorf("qp 0x%x: receive WR's SGEs hold %d bytes, more than a message's 2^31", qp.Num, sglLength(wr.SGL))
		}
	}
	var b [MaxRecvSGE * RecvWQEBytes]byte
	EncodeRecvWQE(b[:qp.rqStride], wr)
	slot := qp.rqPI % uint32(qp.rqDepth)
	d.Mem.Write(qp.rqBuf+uint64(slot)*uint64(qp.rqStride), b[:qp.rqStride])
	qp.rqWrid[slot] = wr.ID
	qp.rqPI++
	d.Mem.WriteU32(qp.dbr, qp.rqPI&0xffff)
	store := d.cpuPost(qp)
	e := d.at(d.PCIe.MMIO(store), evRecvDoorbell)
	e.Arg = qpArg(qp, qp.rqPI)
	return nil
}

// PollCQ reads up to len(wcs) completions from cq's ring in host memory
// (ibv_poll_cq) and returns how many it found.
func (d *Device) PollCQ(cq *CQ, wcs []WC) int {
	n := 0
	var b [CQEBytes]byte
	for n < len(wcs) {
		d.Mem.Read(cq.buf+uint64(cq.ci%uint32(cq.Depth))*CQEBytes, b[:])
		c := DecodeCQE(b[:])
		if c.Opcode == CQEInvalid || c.Owner != ((cq.ci/uint32(cq.Depth))&1 == 1) {
			break
		}
		qp := d.qpByNum(c.QPN)
		wc := WC{Status: c.Status, ByteLen: c.ByteCnt, Imm: c.Imm, HasImm: c.HasImm, QPN: c.QPN, SrcQP: c.SrcQP}
		if c.HasInv {
			wc.Imm, wc.HasInv, wc.InvalidatedRKey = 0, true, c.Imm
		}
		if c.Receiver {
			if s := qp.srq; s != nil {
				// wqe_counter is the SRQ slot; polling frees the WQE
				// (mlx5 handle_responder: srq->wrid[wqe_ctr], then
				// mlx5_free_srq_wqe).
				slot := uint16(uint32(c.Counter) % uint32(s.depth))
				wc.WRID = s.wrid[slot]
				s.freeWQE(slot)
			} else {
				wc.WRID = qp.rqWrid[uint32(c.Counter)%uint32(qp.rqDepth)]
				qp.rqCI++
			}
			wc.Opcode = WCRecv
			if c.Opcode == CQERespWrImm {
				wc.Opcode = WCRecvRDMAImm
			}
		} else {
			slot := uint32(c.Counter) % uint32(qp.sqBBs)
			wc.WRID = qp.sqWrid[slot]
			wc.Opcode = wcOfWR(c.WROp)
			if c.WROp == WRBindMW && qp.sqReg != nil && qp.sqReg[slot] {
				wc.Opcode = WCRegMR
			}
			qp.sqCI = qp.sqNext[slot]
		}
		wcs[n] = wc
		n++
		cq.ci++
	}
	return n
}

// ---- HCA side of the queues ----

// doorbell: the doorbell stage decodes the doorbell; a BlueFlame doorbell
// carries its WQE, anything else starts a WQE fetch.
func (d *Device) doorbell(qp *QP, pi uint32, bfBBs int) {
	now := d.s.Now()
	t := d.stages[StageDoorbell].accept(now, 0)
	if cntDiff(pi, qp.sqDB) > 0 {
		qp.sqDB = pi
	}
	if tl := d.Timeline; tl.atRequester(d, qp.Num) && tl.Doorbell == 0 && tl.posted && cntDiff(pi, qp.sqPIAt(tl.WQEIndex)) >= 0 {
		tl.Doorbell, tl.DoorbellDone = now, t
	}
	d.trace(components.TraceWQEFetch, qp.Num, components.StrField("queue", "sq_doorbell"), components.IntField("wqe", int64(pi&0xffff)))
	d.fetchWQEs(qp, t, bfBBs)
}

// fetchWQEs issues DMA reads of posted WQEBBs, up to the prefetch depth.
// bfBBs is the size of a WQE that came by BlueFlame with the doorbell (0
// for none); it needs no fetch if it is the only WQE not yet fetched.
func (d *Device) fetchWQEs(qp *QP, t ib.PS, bfBBs int) {
	if bfBBs > 0 && int(qp.sqDB-qp.sqFetch) == bfBBs {
		// BlueFlame: the whole WQE came with the doorbell (mlx5's
		// post_send_db copies it, wrapping at the ring's end, into the
		// BlueFlame register); parse it only. It is not read, so neither
		// the prefetch window (which bounds reads in flight) nor the ring's
		// end splits it: a wrapping WQE, or one larger than the window, was
		// read from host memory before, in pieces a round trip apart.
		// Its parse books the fetch stage after any fetch still in flight,
		// so WQEs are still decoded in posting order.
		d.parseFetched(qp, t, bfBBs)
		return
	}
	for {
		n, slot := WQERead(qp.sqDB, qp.sqFetch, qp.fetchInflight, d.Cfg.WQEPrefetchDepth, qp.sqBBs)
		if n == 0 {
			return
		}
		// The read is at the ring slot's address, as hca_wqe_fetch's
		// rd_req_addr (base + slot × 64): a read from a slot that is not
		// MRRS-aligned is split where the ring crosses an MRRS boundary.
		at := qp.sqBuf + uint64(slot)*WQEBBBytes
		d.parseFetched(qp, d.PCIe.Read(d.stages[StageDMA].acceptQP(t, &qp.dmaSlot, 0), at, n*WQEBBBytes), n)
	}
}

// parseFetched runs n WQEBBs that are on chip at t (read back, or written
// by BlueFlame) through the fetch stage and announces them decoded.
func (d *Device) parseFetched(qp *QP, t ib.PS, n int) {
	start := qp.sqFetch
	done := t
	for i := 0; i < n; i++ {
		done = d.stages[StageWQEFetch].acceptQP(done, &qp.sqParseSlot, 0)
	}
	qp.sqFetch += uint32(n)
	qp.fetchInflight += n
	e := d.at(done, evWQEFetched)
	e.Arg = qpArg(qp, start)
	e.Port = int32(n)
}

// wqeFetched decodes the whole WQEs now on chip and runs the L_Key check of
// each gather element.
func (d *Device) wqeFetched(qp *QP, start uint32, n int) {
	now := d.s.Now()
	qp.fetchInflight -= n
	qp.sqFetched = start + uint32(n)
	var buf [maxWQEBBs * WQEBBBytes]byte
	last := now
	for qp.sqDecoded != qp.sqFetched {
		qp.readSQ(qp.sqDecoded, buf[:WQEBBBytes])
		bbs := WQEBBsOfCtrl(buf[:WQEBBBytes])
		if cntDiff(qp.sqFetched, qp.sqDecoded+uint32(bbs)) < 0 {
			break // the rest of this WQE is still being fetched
		}
		qp.readSQ(qp.sqDecoded, buf[:bbs*WQEBBBytes])
		// A direct call (not through a func value) keeps buf on the stack.
		var sgl []SGE
		if qp.sqSGL != nil {
			sgl = qp.sqSGL[qp.sqDecoded%uint32(qp.sqBBs)]
		}
		w, err := decodeSendWQE(buf[:bbs*WQEBBBytes], qp.UD, sgl)
		if err != nil {
			panic(fmt.Sprintf("hca: %s qp 0x%x: WQE at %d: %v", d.Name, qp.Num, qp.sqDecoded, err))
		}
		dw := decodedWQE{wqe: w, readyAt: now}
		if w.Opcode.isLocal() {
			dw.readyAt = d.localLookups(qp, now, &w)
		} else if w.Inline {
			// Inline bytes wait in a per-QP arena until the WQE reaches the
			// requester (which copies them): no allocation per message.
			at := len(qp.inlineArena)
			qp.inlineArena = append(qp.inlineArena, buf[w.InlineOff:w.InlineOff+w.InlineLen]...)
			dw.inline = qp.inlineArena[at:len(qp.inlineArena):len(qp.inlineArena)]
		} else if w.SGL != nil {
			if cap(w.SGL) > cap(sgl) {
				if qp.sqSGL == nil {
					qp.sqSGL = make([][]SGE, qp.sqBBs)
				}
				qp.sqSGL[qp.sqDecoded%uint32(qp.sqBBs)] = w.SGL
			}
			need := 0
			if w.Opcode == WRRDMARead || w.Opcode.isAtomic() {
				need = AccessLocalWrite
			}
			dw.readyAt, dw.keyErr = d.checkSGL(qp, now, need, w.SGL)
		} else if w.Length > 0 {
			need := 0
			if w.Opcode == WRRDMARead || w.Opcode.isAtomic() {
				need = AccessLocalWrite
			}
			dw.readyAt = d.keyCheck(qp, now, w.LKey)
			r := d.Keys.Check(w.LKey, qp.PD, need, w.LocalAddr, uint64(w.Length))
			dw.keyErr = r != KeyOK
			d.traceKeyCheck(qp.Num, w.LKey, r, w.LocalAddr, uint64(w.Length))
			if !dw.keyErr {
				// The gather element's pages are translated before the
				// WQE reaches the requester, so its packets' DMAs find
				// them on chip (translate).
				dw.readyAt = d.translate(dw.readyAt, w.LKey, w.LocalAddr, uint64(w.Length))
			}
		}
		last = max(last, dw.readyAt)
		qp.decoded = append(qp.decoded, dw)
		qp.sqDecoded += uint32(bbs)
		d.trace(components.TraceWQEFetch, qp.Num, components.IntField("wqe", int64(w.Index)), components.StrField("queue", "sq"))
	}
	e := d.at(last, evWQEReady)
	e.Arg = qpArg(qp, 0)
	d.fetchWQEs(qp, now, 0)
}

// wqeReady hands checked WQEs to the requester, in order.
func (d *Device) wqeReady(qp *QP) {
	now := d.s.Now()
	k := 0
	for ; k < len(qp.decoded) && qp.decoded[k].readyAt <= now; k++ {
		dw := qp.decoded[k]
		if tl := d.Timeline; tl.atRequester(d, qp.Num) && tl.WQEIndex == dw.wqe.Index && tl.WQEReady == 0 {
			tl.WQEReady = now
		}
		if qp.UD {
			d.udReady(qp, dw, now)
			continue
		}
		if dw.wqe.FenceMode != 0 {
			if dw.wqe.Fenced() && qp.req.rdAtomicUnfinished() {
				// Fenced: the WQE waits here, and every WQE behind it, until
				// the READs and atomics before it have their answers.
				qp.fenceWait = true
				break
			}
			if dw.wqe.FenceMode != 2 {
				d.recheckKeys(qp, &dw) // the small fence (fastreg.go)
			}
		}
		if dw.keyErr && qp.req.State != QPErr {
			// Local protection error: the QP goes to ERR; what was
			// outstanding is flushed, this WQE fails, later ones flush.
			// On a QP already in ERR a bad key is not looked at: the WQE
			// is flushed (WR_FLUSH_ERR) as any other (rxe_comp.c; the
			// model's UD path and the RTL requester do the same).
			d.failWQE(qp, dw.wqe, WCLocProtErr, now)
			continue
		}
		if dw.wqe.Opcode.isLocal() {
			d.runLocal(qp, dw.wqe, now)
			continue
		}
		for _, c := range qp.req.Enqueue(dw.wqe, 0) {
			d.sendCompletion(qp, c, now)
		}
		if dw.inline != nil && qp.req.State != QPErr {
			m := qp.req.msgs[len(qp.req.msgs)-1]
			m.inline = append(m.inline[:0], dw.inline...)
		}
	}
	if k == len(qp.decoded) {
		qp.decoded = qp.decoded[:0] // reuse the storage
		if len(qp.udPending) == 0 {
			qp.inlineArena = qp.inlineArena[:0]
		}
	} else {
		qp.decoded = qp.decoded[k:]
	}
	d.markWork(qp)
	d.schedule()
}

// releaseFence hands on the fenced WQE waiting at the head of qp's
// decoded WQEs once no READ or atomic before it is unfinished: the last
// one's answer came (responses in order complete the requester's READs
// and atomics in order), or the QP went to ERR (flushed, they are gone;
// the fenced WQE and those behind it then flush as wqeReady hands them
// on).
func (d *Device) releaseFence(qp *QP, now ib.PS) {
	if qp.req != nil && qp.req.rdAtomicUnfinished() {
		return
	}
	qp.fenceWait = false
	e := d.at(now, evWQEReady)
	e.Arg = qpArg(qp, 0)
}

// failWQE completes w with status, an error found before it was sent: the
// QP goes to ERR, what was outstanding is flushed, w fails, later WQEs
// flush.
func (d *Device) failWQE(qp *QP, w SendWQE, status WCStatus, now ib.PS) {
	for _, c := range qp.req.FlushAll() {
		d.sendCompletion(qp, c, now)
	}
	d.purge(qp)
	toErr := qp.State != QPErr
	qp.State = QPErr
	d.sendCompletion(qp, Completion{WQE: w, Status: status}, now)
	if toErr {
		d.requesterErr(qp, now)
	}
}

// requesterErr is the rest of a QP's move to ERR from its send side (a
// completion in error, a retry count spent, a WQE that cannot be sent):
// IBA's Error state is the whole QP's, so its responder drops what
// arrives from now on and its posted receives are flushed (WR_FLUSH_ERR,
// after the send side's error CQE), as ModifyQP to ERR and a responder
// error do (rxe: qp_error flushes both queues).
func (d *Device) requesterErr(qp *QP, t ib.PS) {
	if qp.resp != nil {
		qp.resp.State = QPErr
	}
	d.flushRecvs(qp, t)
}

// recvDoorbell: the HCA learns of newly posted receive WQEs and prefetches
// them (4 per 64-byte block, up to the prefetch depth in blocks).
func (d *Device) recvDoorbell(qp *QP, pi uint32) {
	if cntDiff(pi, qp.rqDB) > 0 {
		qp.rqDB = pi
	}
	if qp.State == QPErr {
		d.flushRecvs(qp, d.s.Now())
		return
	}
	d.recvFetch(qp, d.s.Now())
}

func (d *Device) recvFetch(qp *QP, t ib.PS) {
	if cntDiff(qp.rqFetch, qp.rqTaken) < 0 {
		// Flushed (flushRecvs) before the prefetch got there: a packet
		// takes only a WQE read or being read (PopRecv).
		qp.rqFetch = qp.rqTaken
	}
	for {
		// Held: the WQEs read or being read that the responder has not
		// taken, [rqTaken, rqFetch). A read still in flight for WQEs
		// taken meanwhile (waiting for it, rqWait) holds none.
		n, slot := RecvReadStride(qp.rqDB, qp.rqFetch, int(cntDiff(qp.rqFetch, qp.rqTaken)), d.Cfg.WQEPrefetchDepth, qp.rqDepth, qp.rqStride)
		if n == 0 {
			return
		}
		at := qp.rqBuf + uint64(slot)*uint64(qp.rqStride)
		done := d.PCIe.Read(d.stages[StageDMA].acceptQP(t, &qp.rqFetchSlot, 0), at, n*qp.rqStride)
		done = d.stages[StageWQEFetch].acceptQP(done, &qp.rqParseSlot, 0)
		if qp.rqReadDone == nil {
			qp.rqReadDone = make([]ib.PS, RecvWindow(d.Cfg.WQEPrefetchDepth, qp.rqStride))
		}
		for i := range n {
			// A read starts only for room in the window, [rqTaken,
			// rqTaken + window), so no index in flight shares a place.
			qp.rqReadDone[(qp.rqFetch+uint32(i))%uint32(len(qp.rqReadDone))] = done
		}
		e := d.at(done, evRecvFetched)
		e.Arg = qpArg(qp, qp.rqFetch)
		e.Port = int32(n)
		qp.rqFetch += uint32(n)
	}
}

func (d *Device) recvFetched(qp *QP, start uint32, n int) {
	var b [MaxRecvSGE * RecvWQEBytes]byte
	for i := 0; i < n; i++ {
		idx := start + uint32(i)
		if cntDiff(idx, qp.rqTaken) < 0 {
			continue // taken while this read was in flight (rqWait), or flushed
		}
		slot := idx % uint32(qp.rqDepth)
		d.Mem.Read(qp.rqBuf+uint64(slot)*uint64(qp.rqStride), b[:qp.rqStride])
		w := DecodeRecvWQE(b[:qp.rqStride])
		w.Index = idx
		qp.rqCache.push(w, max(1, d.Cfg.WQEPrefetchDepth*WQEBBBytes/qp.rqStride))
		d.trace(components.TraceWQEFetch, qp.Num, components.IntField("wqe", int64(idx&0xffff)), components.StrField("queue", "rq"))
	}
	d.recvFetch(qp, d.s.Now())
}

// RKeyBase implements ResponderEnv: a zero-based window's first byte.
func (qp *QP) RKeyBase(rkey uint32) uint64 { return qp.dev.Keys.ZeroBase(rkey) }

// CheckRKey implements ResponderEnv: a region's R_Key, or a memory
// window's, which must be bound to this QP if it is of type 2.
func (qp *QP) CheckRKey(rkey uint32, need int, addr, n uint64) KeyResult {
	return qp.dev.Keys.CheckRemote(rkey, qp.PD, qp.Num, need, addr, n)
}

// CheckLKey implements ResponderEnv.
func (qp *QP) CheckLKey(lkey uint32, addr, n uint64) KeyResult {
	return qp.dev.Keys.Check(lkey, qp.PD, AccessLocalWrite, addr, n)
}

// PopRecv implements ResponderEnv: the next receive WQE, from the on-chip
// cache or, if its prefetch read is in flight, waiting for that read
// (rqWait). The prefetch asks for every WQE the HCA knows is posted, at
// its doorbell or at the take before it (the window has room for at
// least one), so a WQE known posted is on chip or being read when a
// packet takes it: one that is neither is a model bug (recvInvariant).
func (qp *QP) PopRecv() (RecvWQE, bool) {
	if qp.srq != nil {
		w, ok := qp.popSRQ()
		// A take uses the SRQ's context (its WQE counter and limit),
		// read once the QP's context, which names the SRQ, is in
		// (recvWQEAt).
		qp.srqTook = ok && qp.dev.srqc != nil
		return w, ok
	}
	d := qp.dev
	if w, ok := qp.rqCache.pop(); ok {
		if w.Index != qp.rqTaken {
			// The cache holds [rqTaken, …) in order: a WQE taken while its
			// read was in flight is never put on chip (recvFetched).
			d.recvInvariant(qp, int64(w.Index))
		}
		qp.rqTaken++
		d.recvFetch(qp, d.s.Now())
		return w, true
	}
	if cntDiff(qp.rqDB, qp.rqTaken) <= 0 {
		return RecvWQE{}, false
	}
	if cntDiff(qp.rqFetch, qp.rqTaken) <= 0 {
		d.recvInvariant(qp, -1)
	}
	// The cache is empty and every WQE of [rqTaken, rqFetch) is on chip
	// or being read: this one's read is in flight. Wait for it.
	var b [MaxRecvSGE * RecvWQEBytes]byte
	slot := qp.rqTaken % uint32(qp.rqDepth)
	d.Mem.Read(qp.rqBuf+uint64(slot)*uint64(qp.rqStride), b[:qp.rqStride])
	w := DecodeRecvWQE(b[:qp.rqStride])
	w.Index = qp.rqTaken
	qp.rqWait = qp.rqReadDone[qp.rqTaken%uint32(len(qp.rqReadDone))]
	qp.rqTaken++
	// The prefetch goes on from the WQE after it, as after a WQE taken
	// from the cache.
	d.recvFetch(qp, d.s.Now())
	return w, true
}

// recvInvariant stops the run at a broken receive-queue invariant: a
// model bug, not a user's error, with the QP's counters (the CLI reports
// it as an internal error, exit 1). front is the index of the WQE found
// at the cache's front instead of the next to take, or −1 for a WQE
// posted but neither on chip nor being read. No checker can see either:
// the trace has no event for a receive WQE taken, and the HCA would go on
// with timing no hardware has (a WQE used before any read of it). Kept
// out of line, so the take's hot path carries none of the message's
// formatting.
//
//go:noinline
func (d *Device) recvInvariant(qp *QP, front int64) {
	what := fmt.Sprintf("WQE %d is posted (doorbell %d) but neither on chip nor being read (prefetch at %d)", qp.rqTaken, qp.rqDB, qp.rqFetch)
	if front >= 0 {
		what = fmt.Sprintf("the cache's front is WQE %d, the next to take %d", front, qp.rqTaken)
	}
	panic(fmt.Sprintf("hca: %s qp 0x%x: receive queue invariant broken (a model bug): %s; taken %d, fetch %d, doorbell %d",
		d.Name, qp.Num, what, qp.rqTaken, qp.rqFetch, qp.rqDB))
}

// cntDiff returns a − b for 32-bit wrapping queue counters.
func cntDiff(a, b uint32) int32 { return int32(a - b) }

// NextWQEIndex returns the index the next posted send WQE will get.
func (qp *QP) NextWQEIndex() uint16 { return uint16(qp.sqPI) }

// Device returns the device the QP lives on.
func (qp *QP) Device() *Device { return qp.dev }

// sqPIAt returns the producer count just after the WQE at 16-bit index idx
// (the doorbell that announces it carries at least this).
func (qp *QP) sqPIAt(idx uint16) uint32 {
	return qp.sqNext[uint32(idx)%uint32(qp.sqBBs)]
}

func qpKind(qp *QP) string {
	if qp.UD {
		return "UD"
	}
	return "RC"
}

// udReady queues a checked UD WQE for the scheduler. One that failed its
// L_Key check (LOC_PROT_ERR) or is longer than the MTU (LOC_LEN_ERR) keeps
// its place and completes with that status when its turn comes, moving the
// QP to ERR; send completions stay in posting order.
func (d *Device) udReady(qp *QP, dw decodedWQE, now ib.PS) {
	switch {
	case dw.keyErr:
		dw.status = WCLocProtErr
	case int(dw.wqe.Length) > qp.udMTU:
		dw.status = WCLocLenErr
	}
	qp.udPending = append(qp.udPending, dw)
	d.markWork(qp)
	d.schedule()
}

// flushUD completes every queued UD WQE with WR_FLUSH_ERR.
func (d *Device) flushUD(qp *QP) {
	for _, dw := range qp.udPending {
		d.sendCompletion(qp, Completion{WQE: dw.wqe, Status: WCWRFlushErr}, d.s.Now())
	}
	qp.udPending = qp.udPending[:0]
}

// checkSGL refuses a send WR's scatter/gather list as verbs would: the
// list and the single-element fields both set, more elements than the
// QP's max_send_sge (libmlx5's _mlx5_post_send returns ENOMEM for
// num_sge > sq.max_gs, rdma-core providers/mlx5/qp.c; mlx5_calc_sq_size
// sets max_gs to the cap asked for, verbs.c), an atomic's list not of 8
// bytes.
func checkSGL(qp *QP, wr *SendWR) error {
	if wr.LocalAddr != 0 || wr.Length != 0 || wr.LKey != 0 {
		return fmt.Errorf("qp 0x%x: send WR sets both SGL and LocalAddr/Length/LKey (give one scatter/gather element or a list)", qp.Num)
	}
	if len(wr.SGL) > qp.maxSendSGE {
		return fmt.Errorf("qp 0x%x: send WR with %d SGEs, more than the QP's max_send_sge %d: %w", qp.Num, len(wr.SGL), qp.maxSendSGE, syscall.ENOMEM)
	}
	n := sglLength(wr.SGL)
	if n > 1<<31 {
		return fmt.Errorf("qp 0x%x: send WR's SGEs hold %d bytes, more than a message's 2^31", qp.Num, n)
	}
	if wr.Opcode.isAtomic() && n != 8 {
		return fmt.Errorf("qp 0x%x: %v with SGEs of %d bytes (an atomic's result is 8 bytes)", qp.Num, wr.Opcode, n)
	}
	return nil
}

// checkSGL runs the L_Key check of each element of a WR's list from t, in
// order, each a lookup in the key_check stage (PD, access need, bounds:
// the single element's rules), an element of no bytes skipped as a
// single one is. It returns when the last check (and, with translation
// modelled, the last element's translation) is done and whether one
// failed: a WR with a bad element fails whole, and no byte of it moves.
func (d *Device) checkSGL(qp *QP, t ib.PS, need int, sgl []SGE) (ready ib.PS, bad bool) {
	ready = t
	for _, e := range sgl {
		if e.Length == 0 {
			continue
		}
		done := d.keyCheck(qp, t, e.LKey)
		r := d.Keys.Check(e.LKey, qp.PD, need, e.Addr, uint64(e.Length))
		d.traceKeyCheck(qp.Num, e.LKey, r, e.Addr, uint64(e.Length))
		if r != KeyOK {
			bad = true
		} else {
			done = d.translate(done, e.LKey, e.Addr, uint64(e.Length))
		}
		ready = max(ready, done)
	}
	return ready, bad
}
