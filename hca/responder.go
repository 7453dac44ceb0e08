package hca

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// ResponderEnv is what the responder needs from its QP: keys and receive WQEs.
type ResponderEnv interface {
	// CheckRKey checks an R_Key for need (Access* flags) on [addr, addr+n).
	CheckRKey(rkey uint32, need int, addr, n uint64) KeyResult
	// RKeyBase returns what to add to a remote address carried with an
	// R_Key that passed CheckRKey to get the address accessed: a
	// zero-based window's first byte, 0 for any other key.
	RKeyBase(rkey uint32) uint64
	// CheckLKey checks a receive buffer's L_Key for a local write.
	CheckLKey(lkey uint32, addr, n uint64) KeyResult
	// PopRecv takes the next receive WQE; false when the receive queue is
	// empty (the responder answers RNR NAK).
	PopRecv() (RecvWQE, bool)
}

// RespAction is what the responder decided for one incoming request packet.
// The device carries it out with timing: DMA the payload, send the ACK/NAK,
// generate read responses, run the atomic, write the receive CQE.
type RespAction struct {
	Drop bool // the packet changes nothing (duplicate handled by Ack, or ignored)

	// Payload placement: PayloadLen bytes of the packet go to WriteAddr,
	// or, with RecvSGL (a SEND into a receive WQE of several scatter
	// elements), to the message's bytes from ScatterOff on in that list.
	Write     bool
	WriteAddr uint64
	// RecvSGL is the receive WQE's scatter list when it has other than
	// one element: the key check (KeyChecked) covers each element, and the
	// packet's write and translation scatter over it from ScatterOff.
	RecvSGL    []SGE
	ScatterOff uint64

	// An ACK or NAK to send now: syndrome and PSN.
	Ack    bool
	AckSyn uint8
	AckPSN uint32
	MSN    uint32

	// A receive completion (SEND LAST/ONLY, WRITE with immediate).
	RecvDone   bool
	Recv       RecvWQE
	RecvLen    uint32
	RecvOpcode uint8 // CQERespSend, CQERespSendImm, CQERespSendInv, CQERespWrImm
	Imm        uint32
	RecvStatus WCStatus

	// A READ reply to start: Len bytes from VA, response PSNs from PSN,
	// generated one response at a time from responder resource ReadRes
	// (NextReadResponse). The payloads of responses FetchLo ≤ k < FetchHi
	// (indices from the resource's first PSN) are to be read from host
	// memory now; the others of the reply were read for an earlier reply
	// of the same resource and are still held.
	Read             bool
	ReadVA           uint64
	ReadLen          uint32
	ReadPSN          uint32
	ReadRes          int
	FetchLo, FetchHi int
	// DropReply: resource ReadRes had a reply under way, queued for the
	// wire; take it out (a duplicate READ replaces it, or a new request
	// recycled the resource).
	DropReply bool

	// An atomic to execute at VA; the result goes back in an atomic ACK.
	Atomic bool
	// AtomicReplay: a duplicate atomic; answer with LastAtomic, do not re-execute.
	AtomicReplay bool

	// KeyChecked is the R_Key or L_Key this packet checked (for timing and
	// traces) and its result.
	KeyChecked bool
	Xlate      bool // the packet translates [XlateAddr, XlateAddr+XlateLen)
	Key        uint32
	KeyResult  KeyResult
	KeyAddr    uint64 // the range checked
	KeyLen     uint64
	// XlateAddr and XlateLen, with Xlate: the range the packet translates,
	// its DMA waiting for that translation. A WRITE, READ or atomic
	// translates the range its key check covered, at its first packet, and
	// the WRITE's later packets (no Xlate) wait for that; every SEND packet
	// translates the bytes it writes into the receive buffer, as it arrives
	// (the message's length is not known before its last packet), so the
	// receive WQE's key check at the first packet covers more than that
	// packet translates.
	XlateAddr uint64
	XlateLen  uint64
	XlateKey  uint32 // the key whose region holds the range (its MTT's address)
}

// Responder is the receive side of an RC QP (IBA ch. 9 responder,
// rxe_resp.c): PSN checks, NAKs, key checks, placement, ACK coalescing.
type Responder struct {
	MTU         int
	AckCoalesce int
	MinRNRTimer int
	MaxRdAtomic int // responder resources for READ + atomics in progress

	State QPState
	ePSN  uint32 // next expected PSN
	msn   uint32 // completed messages, 24 bit

	inMsg   bool   // inside a multi-packet SEND or WRITE
	inSend  bool   // the message is a SEND (else a WRITE)
	writeVA uint64 // WRITE: next byte's address
	// writeLen is the WRITE's RETH DMA length, bytes, saved at FIRST/ONLY:
	// a WRITE_WITH_IMM's receive completion reports it as byte_len.
	writeLen uint32
	// writeOff is the WRITE's bytes placed so far, from its FIRST/ONLY:
	// its packets must end exactly at writeLen (packetLengthOK).
	writeOff uint32
	recv     RecvWQE
	hasRecv  bool
	recvOff  uint32
	nakSent  bool // a sequence NAK was sent for ePSN (send it once)

	pendingAckReqs int    // AckReq packets not yet acknowledged (coalescing)
	pendingAckPSN  uint32 // the PSN a coalesced ACK would carry

	// res holds the responder resources (rxe struct resp_res): the last
	// MaxRdAtomic READ and atomic requests executed, as a ring, resNext the
	// slot the next one overwrites. The requester keeps at most
	// max_rd_atomic of them outstanding, so every READ or atomic it may
	// still retry has its resource here; a duplicate with none is dropped.
	res     []rdAtomicRes
	resNext int
}

// rdAtomicRes is one responder resource: a READ or atomic as first
// executed, which a duplicate request must match to be answered, and a
// READ's reply in progress. The reply is a cursor (rxe res->cur_psn,
// res->read.va, res->read.resid): the device takes one response at a time
// from it as the wire takes them, so a resource has at most one reply
// under way however many duplicates arrive; a duplicate re-points it.
type rdAtomicRes struct {
	used     bool
	atomic   bool
	firstPSN uint32 // the request's PSN
	lastPSN  uint32 // READ: its last response PSN; atomic: firstPSN
	va       uint64 // READ: the original RETH VA
	length   uint32 // READ: the original RETH DMA length, bytes
	rkey     uint32 // READ: the original R_Key
	orig     uint64 // atomic: the original value it returned

	replying  bool   // READ: a reply is under way (queued at the device)
	curPSN    uint32 // the next response's PSN
	curVA     uint64 // its payload's address
	resid     uint32 // bytes from curVA to the reply's end
	replyPSN  uint32 // the reply's first PSN (its FIRST or ONLY response)
	replyPkts int    // responses in the reply
	replyMSN  uint32 // the MSN its responses carry
	// aligned: the reply's packets are the original READ's (its VA is the
	// original's plus whole MTUs for its PSN, and it ends where the
	// original does), so a later reply may reuse payloads read for it.
	aligned bool
	// fetchedTo: the read engine holds the payloads of responses from the
	// cursor up to this index (from firstPSN), read and not yet sent.
	fetchedTo int
	// sentTo: every response before this index (from firstPSN) has gone
	// to the wire at least once; below lastPSN the requester cannot have
	// the whole READ, so the resource is still in use.
	sentTo int
}

// inUse reports whether a resource still holds a READ the requester cannot
// have completed: some of its responses never went to the wire.
func (e *rdAtomicRes) inUse() bool {
	return e.used && !e.atomic && e.sentTo <= int(psnDiff(e.lastPSN, e.firstPSN))
}

// NewResponder returns an RTR responder expecting psn.
func NewResponder(cfg *Config, mtu int, psn uint32) *Responder {
	return &Responder{MTU: mtu, AckCoalesce: cfg.AckCoalesce, MinRNRTimer: cfg.MinRNRTimer,
		MaxRdAtomic: cfg.MaxRdAtomic, State: QPRTR, ePSN: psn & psnMask,
		res: make([]rdAtomicRes, cfg.MaxRdAtomic)}
}

// ExpectedPSN returns the next PSN the responder accepts.
func (r *Responder) ExpectedPSN() uint32 { return r.ePSN }

// MSN returns the message sequence number.
func (r *Responder) MSN() uint32 { return r.msn }

// claimRes returns the slot a new READ or atomic takes: the oldest
// resource (rxe rxe_prepare_res recycles the ring the same way). A READ or
// atomic from a requester that keeps within max_rd_atomic finds that
// resource's READ complete at the requester, so every response of it has
// been sent; one whose responses have not all gone means the requester has
// more than max_rd_atomic outstanding: false, and the caller NAKs invalid
// request (IBA responder resources; ib-facts.md §5, rxe
// RESPST_ERR_TOO_MANY_RDMA_ATM_REQ). A replay still under way there is
// useless to the requester and is dropped (dropReply).
func (r *Responder) claimRes() (slot int, dropReply, ok bool) {
	slot = r.resNext
	e := &r.res[slot]
	if e.inUse() {
		return slot, false, false
	}
	return slot, e.replying, true
}

// saveRes records a READ or atomic just accepted in slot (from claimRes).
func (r *Responder) saveRes(slot int, e rdAtomicRes) {
	e.used = true
	r.res[slot] = e
	r.resNext = (slot + 1) % len(r.res)
}

// findRes returns the slot of the resource whose PSNs hold psn, or -1 (rxe
// find_resource).
func (r *Responder) findRes(psn uint32) int {
	for i := range r.res {
		e := &r.res[i]
		if e.used && psnDiff(psn, e.firstPSN) >= 0 && psnDiff(psn, e.lastPSN) <= 0 {
			return i
		}
	}
	return -1
}

// startReply points resource slot's cursor at psn for n bytes from va and
// fills a's READ fields: which responses' payloads must be read now. A
// reply under way that this one replaces has read the payloads from its
// cursor on; when both replies cut the READ into the same packets, those
// are kept, and only the responses before its cursor (already sent) are
// read again: so however many duplicates arrive, the read engine reads at
// most what the wire has taken since, plus one READ.
func (r *Responder) startReply(slot int, psn uint32, va uint64, n uint32, a *RespAction) {
	e := &r.res[slot]
	p := int(psnDiff(psn, e.firstPSN))
	pkts := PacketCount(n, r.MTU)
	end := p + pkts
	aligned := va == e.va+uint64(p)*uint64(r.MTU) && end == int(psnDiff(e.lastPSN, e.firstPSN))+1
	fetchHi := end
	if e.replying && e.aligned && aligned {
		cur := int(psnDiff(e.curPSN, e.firstPSN))
		fetchHi = max(p, min(cur, end))
	}
	a.DropReply = a.DropReply || e.replying
	e.replying = true
	e.curPSN, e.curVA, e.resid = psn, va, n
	e.replyPSN, e.replyPkts, e.replyMSN = psn, pkts, r.msn
	e.aligned, e.fetchedTo = aligned, end
	a.Read, a.ReadVA, a.ReadLen, a.ReadPSN = true, va, n, psn
	a.ReadRes, a.FetchLo, a.FetchHi = slot, p, fetchHi
}

// ReadCursor returns the index, from its first PSN, of the next response
// of resource slot's reply: the one NextReadResponse builds next.
func (r *Responder) ReadCursor(slot int) int {
	e := &r.res[slot]
	return int(psnDiff(e.curPSN, e.firstPSN))
}

// Replying reports whether resource slot has a reply under way.
func (r *Responder) Replying(slot int) bool { return r.res[slot].replying }

// NextReadResponse fills pkt's transport fields (opcode, PSN, AETH,
// payload length) with the next response of resource slot's reply and
// moves the cursor past it (rxe read_reply). It returns the response's
// index from the READ's first PSN and whether the reply has more.
func (r *Responder) NextReadResponse(slot int, pkt *ib.Packet) (k int, more bool) {
	e := &r.res[slot]
	if !e.replying {
		panic(fmt.Sprintf("hca: responder: NextReadResponse on resource %d, which has no reply under way", slot))
	}
	i := int(psnDiff(e.curPSN, e.replyPSN))
	pkt.Opcode = ReadResponseOpcode(i, e.replyPkts)
	if e.replyPSN != e.firstPSN {
		// A replay from inside the READ continues its response sequence,
		// MIDDLE … LAST (rxe read_reply: rdatm_res_state_replay); the
		// requester has the FIRST already.
		pkt.Opcode = ib.RDMAReadResponseMiddle
		if i == e.replyPkts-1 {
			pkt.Opcode = ib.RDMAReadResponseLast
		}
	}
	pkt.PSN = e.curPSN
	pkt.AETH = ib.AETH{Syndrome: SynACKNoLimit, MSN: e.replyMSN}
	pkt.PayloadLen = int(min(uint32(r.MTU), e.resid))
	k = int(psnDiff(e.curPSN, e.firstPSN))
	e.curPSN = psnAdd(e.curPSN, 1)
	e.curVA += uint64(pkt.PayloadLen)
	e.resid -= uint32(pkt.PayloadLen)
	e.replying = i+1 < e.replyPkts
	return k, e.replying
}

// ReadResponseSent records that the response at psn of resource slot went
// to the wire.
func (r *Responder) ReadResponseSent(slot int, psn uint32) {
	e := &r.res[slot]
	e.sentTo = max(e.sentTo, int(psnDiff(psn, e.firstPSN))+1)
}

// SaveAtomic records the original value the atomic at psn returned, for
// replay. The atomic's resource was saved when Receive accepted it.
func (r *Responder) SaveAtomic(psn uint32, v uint64) {
	i := r.findRes(psn)
	if i < 0 || !r.res[i].atomic {
		panic(fmt.Sprintf("hca: responder: SaveAtomic for PSN %#x, which has no atomic resource", psn))
	}
	r.res[i].orig = v
}

// LastAtomic returns the saved atomic result for a duplicate at psn.
func (r *Responder) LastAtomic(psn uint32) (uint64, bool) {
	if i := r.findRes(psn); i >= 0 && r.res[i].atomic {
		return r.res[i].orig, true
	}
	return 0, false
}

func (r *Responder) nak(a *RespAction, syn uint8, psn uint32, fatal bool) RespAction {
	a.Ack, a.AckSyn, a.AckPSN, a.MSN = true, syn, psn, r.msn
	a.Drop = true
	a.Write = false
	if fatal {
		// Class C errors move the responder QP to ERR (ib-facts.md §5).
		r.State = QPErr
	}
	return *a
}

// FlushAck returns a coalesced ACK still owed, if any; the device calls it
// when no further packet is waiting in the receive pipeline.
func (r *Responder) FlushAck() (psn, msn uint32, ok bool) {
	if r.pendingAckReqs == 0 {
		return 0, 0, false
	}
	r.pendingAckReqs = 0
	return r.pendingAckPSN, r.msn, true
}

// respContext is the responder's part of the QP context that a request
// packet may move (mlx5 qpc next_rcv_psn; rmsn and the state inside a
// multi-packet message move only with it), the sequence NAK owed or sent,
// and the QP's state: a packet that leaves it as it was only read the
// context (qpModified).
type respContext struct {
	ePSN    uint32
	nakSent bool
	state   QPState
}

func (r *Responder) context() respContext {
	return respContext{r.ePSN, r.nakSent, r.State}
}

// Receive processes one request packet that passed the link checks.
func (r *Responder) Receive(pkt *ib.Packet, env ResponderEnv) RespAction {
	var a RespAction
	if r.State == QPErr {
		a.Drop = true
		return a
	}
	d := psnDiff(pkt.PSN, r.ePSN)
	if d > 0 {
		// Out of sequence: one NAK per gap, then drop (class B).
		if r.nakSent {
			a.Drop = true
			return a
		}
		r.nakSent = true
		return r.nak(&a, SynNAKSeq, r.ePSN, false)
	}
	if d < 0 {
		return r.duplicate(pkt, env)
	}
	r.nakSent = false
	op := pkt.Opcode
	hdr := op.Headers()
	first := op == ib.SendFirst || op == ib.SendOnly || op == ib.SendOnlyImm || op == ib.SendOnlyInv ||
		op == ib.RDMAWriteFirst || op == ib.RDMAWriteOnly || op == ib.RDMAWriteOnlyImm ||
		op == ib.RDMAReadRequest || op == ib.CompareSwap || op == ib.FetchAdd
	if first == r.inMsg {
		// A FIRST/ONLY inside a message, or a MIDDLE/LAST outside one.
		return r.nak(&a, SynNAKInvReq, pkt.PSN, true)
	}
	if r.inMsg && r.inSend != isSend(op) {
		return r.nak(&a, SynNAKInvReq, pkt.PSN, true)
	}
	last := op == ib.SendLast || op == ib.SendLastImm || op == ib.SendOnly || op == ib.SendOnlyImm ||
		op == ib.SendLastInv || op == ib.SendOnlyInv ||
		op == ib.RDMAWriteLast || op == ib.RDMAWriteLastImm || op == ib.RDMAWriteOnly || op == ib.RDMAWriteOnlyImm

	switch {
	case op == ib.RDMAReadRequest:
		var base uint64
		if a.KeyResult, base = checkRETH(pkt, env, AccessRemoteRead, &a); a.KeyResult != KeyOK {
			return r.nak(&a, SynNAKAccess, pkt.PSN, true)
		}
		slot, drop, ok := r.claimRes()
		if !ok {
			return r.nak(&a, SynNAKInvReq, pkt.PSN, true)
		}
		a.DropReply = drop
		n := PacketCount(pkt.RETH.Length, r.MTU)
		r.saveRes(slot, rdAtomicRes{firstPSN: pkt.PSN, lastPSN: psnAdd(pkt.PSN, n-1),
			va: pkt.RETH.VA, length: pkt.RETH.Length, rkey: pkt.RETH.RKey})
		r.ePSN = psnAdd(r.ePSN, n)
		r.msn = (r.msn + 1) & psnMask
		r.startReply(slot, pkt.PSN, pkt.RETH.VA+base, pkt.RETH.Length, &a)
		return a
	case op == ib.CompareSwap || op == ib.FetchAdd:
		a.KeyChecked, a.Key, a.KeyAddr, a.KeyLen = true, pkt.Atomic.RKey, pkt.Atomic.VA, 8
		a.KeyResult = env.CheckRKey(pkt.Atomic.RKey, AccessRemoteAtomic, pkt.Atomic.VA, 8)
		if a.KeyResult != KeyOK {
			return r.nak(&a, SynNAKAccess, pkt.PSN, true)
		}
		a.KeyAddr += env.RKeyBase(pkt.Atomic.RKey) // the address it resolves to
		a.Xlate, a.XlateAddr, a.XlateLen, a.XlateKey = true, a.KeyAddr, 8, pkt.Atomic.RKey
		slot, drop, ok := r.claimRes()
		if a.KeyAddr%8 != 0 || !ok {
			return r.nak(&a, SynNAKInvReq, pkt.PSN, true)
		}
		a.Atomic = true
		a.DropReply, a.ReadRes = drop, slot
		r.saveRes(slot, rdAtomicRes{atomic: true, firstPSN: pkt.PSN, lastPSN: pkt.PSN})
		r.ePSN = psnAdd(r.ePSN, 1)
		r.msn = (r.msn + 1) & psnMask
		return a
	}

	// SEND and WRITE packets. A receive WQE is needed by every SEND and by a
	// WRITE's immediate: take it before touching memory, so an RNR NAK
	// leaves nothing behind. The RNR check comes before the R_Key check, as
	// in rxe_resp.c (check_resource, then check_rkey).
	needRecv := (isSend(op) && first) || op == ib.RDMAWriteOnlyImm || op == ib.RDMAWriteLastImm
	var recv RecvWQE
	if needRecv {
		var ok bool
		recv, ok = env.PopRecv()
		if !ok {
			a.Ack, a.AckSyn, a.AckPSN, a.MSN = true, SynRNRNAK|uint8(r.MinRNRTimer), pkt.PSN, r.msn
			a.Drop = true
			return a
		}
	}
	if write := isWrite(op); (write || isSend(op)) && !r.packetLengthOK(pkt, first, last, write) {
		return r.lengthError(&a, pkt, first, needRecv, recv)
	}
	if hdr&ib.HasRETH != 0 {
		var base uint64
		if a.KeyResult, base = checkRETH(pkt, env, AccessRemoteWrite, &a); a.KeyResult != KeyOK {
			if needRecv {
				// RDMA_WRITE_ONLY_WITH_IMM took a receive WQE above: it
				// completes with the error rather than vanishing (rxe
				// do_class_ac_error then do_complete with
				// IB_WC_REM_ACCESS_ERR; ib-facts.md §6). A multi-packet
				// WRITE fails on its FIRST, before any WQE is taken, and
				// its receives are flushed with the QP.
				a.RecvDone, a.Recv, a.RecvStatus, a.RecvOpcode = true, recv, WCRemAccessErr, CQERespWrImm
			}
			return r.nak(&a, SynNAKAccess, pkt.PSN, true)
		}
		r.writeVA, r.writeLen = pkt.RETH.VA+base, pkt.RETH.Length
	}
	if isSend(op) {
		if first {
			r.recv, r.hasRecv, r.recvOff = recv, true, 0
		}
		end := uint64(r.recvOff) + uint64(pkt.PayloadLen)
		if end > uint64(r.recv.Length) {
			// Longer than the receive buffer: local length error at the
			// responder, NAK invalid request to the requester.
			a.RecvDone, a.Recv, a.RecvStatus, a.RecvOpcode = true, r.recv, WCLocLenErr, CQERespSend
			return r.nak(&a, SynNAKInvReq, pkt.PSN, true)
		}
		if r.recv.SGL != nil {
			a.RecvSGL, a.ScatterOff = r.recv.SGL, uint64(r.recvOff)
		}
		if first && r.recv.SGL != nil {
			// Every element's L_Key is checked over the whole element, in
			// order; the first that fails fails the message, as a single
			// element's does (KeyChecked names it).
			a.KeyChecked, a.KeyResult = len(r.recv.SGL) > 0, KeyOK
			for _, e := range r.recv.SGL {
				a.Key, a.KeyAddr, a.KeyLen = e.LKey, e.Addr, uint64(e.Length)
				if a.KeyResult = env.CheckLKey(e.LKey, e.Addr, uint64(e.Length)); a.KeyResult != KeyOK {
					break
				}
			}
			if a.KeyResult != KeyOK {
				a.RecvDone, a.Recv, a.RecvStatus, a.RecvOpcode = true, r.recv, WCLocProtErr, CQERespSend
				return r.nak(&a, SynNAKOpErr, pkt.PSN, true)
			}
		} else if first {
			a.KeyChecked, a.Key, a.KeyAddr, a.KeyLen = true, r.recv.LKey, r.recv.Addr, uint64(r.recv.Length)
			a.KeyResult = env.CheckLKey(r.recv.LKey, r.recv.Addr, uint64(r.recv.Length))
			if a.KeyResult != KeyOK {
				a.RecvDone, a.Recv, a.RecvStatus, a.RecvOpcode = true, r.recv, WCLocProtErr, CQERespSend
				return r.nak(&a, SynNAKOpErr, pkt.PSN, true)
			}
		}
		if pkt.PayloadLen > 0 {
			a.Write, a.WriteAddr = true, r.recv.Addr+uint64(r.recvOff)
		}
		// Each packet translates what it writes, as a real HCA translates
		// as it scatters (the first packet's key check covers the whole
		// buffer, its translation only its own bytes).
		a.Xlate, a.XlateAddr, a.XlateLen, a.XlateKey = true, r.recv.Addr+uint64(r.recvOff), uint64(pkt.PayloadLen), r.recv.LKey
		r.recvOff = uint32(end)
	} else {
		if pkt.PayloadLen > 0 {
			a.Write, a.WriteAddr = true, r.writeVA
		}
		r.writeVA += uint64(pkt.PayloadLen)
		if first {
			r.writeOff = 0
		}
		r.writeOff += uint32(pkt.PayloadLen)
	}
	r.inMsg, r.inSend = !last, isSend(op)
	r.ePSN = psnAdd(r.ePSN, 1)
	if last {
		r.msn = (r.msn + 1) & psnMask
		switch {
		case isSend(op):
			a.RecvDone, a.Recv, a.RecvLen, a.RecvStatus = true, r.recv, r.recvOff, WCSuccess
			a.RecvOpcode = CQERespSend
			if op == ib.SendLastImm || op == ib.SendOnlyImm {
				a.RecvOpcode, a.Imm = CQERespSendImm, pkt.Imm
			} else if op == ib.SendLastInv || op == ib.SendOnlyInv {
				// The device invalidates the IETH's R_Key (rx.go).
				a.RecvOpcode, a.Imm = CQERespSendInv, pkt.IETH
			}
			r.hasRecv = false
		case op == ib.RDMAWriteLastImm || op == ib.RDMAWriteOnlyImm:
			// byte_len is the whole WRITE's length, from its RETH: rxe
			// do_complete reports qp->resp.length (set from reth_len in
			// check_rkey), mlx5 the CQE's byte_cnt.
			a.RecvDone, a.Recv, a.RecvStatus, a.RecvOpcode, a.Imm = true, recv, WCSuccess, CQERespWrImm, pkt.Imm
			a.RecvLen = r.writeLen
		}
	}
	if pkt.AckReq {
		r.pendingAckReqs++
		r.pendingAckPSN = pkt.PSN
		if r.pendingAckReqs >= r.AckCoalesce {
			r.pendingAckReqs = 0
			a.Ack, a.AckSyn, a.AckPSN, a.MSN = true, SynACKNoLimit, pkt.PSN, r.msn
		}
	}
	return a
}

// duplicate answers a packet whose PSN is before ePSN (rxe
// duplicate_request): every SEND/WRITE packet gets an ACK for the last PSN
// received, AckReq or not ("Ack again", C9-105, as rxe has done since
// "RDMA/rxe: Fix missing acks from responder"). A requester resending after
// a timeout starts at its first unacknowledged PSN, often a packet with no
// AckReq: the ACK tells it how far the responder got, so a message longer
// than the timeout still advances. A
// READ or atomic is answered only from its responder resource: a duplicate
// READ must carry the original's R_Key and lie within the original's VA
// range, and its region is checked again (it may have been deregistered
// since); a duplicate atomic gets its saved result. A duplicate READ or
// atomic without a matching resource is a class D error: dropped silently,
// never executed. A duplicate READ re-points its resource's reply to the
// duplicate's PSN, VA and length (rxe duplicate_request; IBA: the
// responder restarts the READ response at the PSN requested): a reply of
// it still under way is replaced, not joined by a second one, and the new
// reply goes behind the responses already queued, in the order the
// requests came (a go-back-N retry resends its READs in PSN order, and
// their replies keep it).
func (r *Responder) duplicate(pkt *ib.Packet, env ResponderEnv) RespAction {
	var a RespAction
	a.Drop = true
	switch pkt.Opcode {
	case ib.RDMAReadRequest:
		slot := r.findRes(pkt.PSN)
		if slot < 0 {
			return a
		}
		e := &r.res[slot]
		va, n := pkt.RETH.VA, uint64(pkt.RETH.Length)
		// Its responses must also stay within the READ's PSNs, or they
		// would reuse PSNs of the requests after it.
		last := psnAdd(pkt.PSN, PacketCount(pkt.RETH.Length, r.MTU)-1)
		if e.atomic || va < e.va || n > uint64(e.length) ||
			va+n > e.va+uint64(e.length) || pkt.RETH.RKey != e.rkey ||
			psnDiff(last, e.lastPSN) > 0 {
			return a
		}
		// The region is checked again on replay, as rxe read_reply does
		// (rxe_recheck_mr, then the copy's range check): a failure is an
		// R_Key violation, NAK remote access error, class C.
		var base uint64
		if a.KeyResult, base = checkRETH(pkt, env, AccessRemoteRead, &a); a.KeyResult != KeyOK {
			return r.nak(&a, SynNAKAccess, pkt.PSN, true)
		}
		a.Drop = false
		r.startReply(slot, pkt.PSN, va+base, pkt.RETH.Length, &a)
	case ib.CompareSwap, ib.FetchAdd:
		if _, ok := r.LastAtomic(pkt.PSN); ok {
			a.Drop = false
			a.AtomicReplay = true
		}
	default:
		a.Ack, a.AckSyn, a.AckPSN, a.MSN = true, SynACKNoLimit, psnAdd(r.ePSN, -1), r.msn
	}
	return a
}

// checkRETH checks a READ's or WRITE's R_Key for need over its whole DMA
// length and records the check in a. A zero-length READ or WRITE accesses no
// memory, so its R_Key and VA are not checked (IBA ch. 9 responder rules, as
// rxe_resp.c check_rkey has it: "A zero-byte op is not required to set an
// addr or rkey"): the requester may leave them 0. No key-check stage time
// either. A zero-length WRITE_WITH_IMM still takes a receive WQE. A key
// that passes also gives base, what the RETH's VA is an offset from (a
// zero-based window's first byte, else 0: ResponderEnv.RKeyBase); the
// check's recorded address and the translation are the address accessed.
func checkRETH(pkt *ib.Packet, env ResponderEnv, need int, a *RespAction) (r KeyResult, base uint64) {
	if pkt.RETH.Length == 0 {
		return KeyOK, 0
	}
	a.KeyChecked, a.Key, a.KeyAddr, a.KeyLen = true, pkt.RETH.RKey, pkt.RETH.VA, uint64(pkt.RETH.Length)
	r = env.CheckRKey(pkt.RETH.RKey, need, pkt.RETH.VA, uint64(pkt.RETH.Length))
	if r == KeyOK {
		base = env.RKeyBase(pkt.RETH.RKey)
		a.KeyAddr += base
		a.Xlate, a.XlateAddr, a.XlateLen, a.XlateKey = true, a.KeyAddr, a.KeyLen, a.Key
	}
	return r, base
}

// lengthError answers a SEND or WRITE packet that broke a length rule
// (packetLengthOK): NAK invalid request, class C (rxe RESPST_ERR_LENGTH;
// ib-facts.md §5). Receive checks the rules after the receive WQE is
// taken and before the R_Key and the receive buffer, as rxe's
// check_length comes after check_resource and before check_rkey and
// execute. The receive WQE the message holds completes with
// REM_INV_REQ_ERR (rxe_responder: RESPST_ERR_LENGTH on RC is
// do_class_ac_error(AETH_NAK_INVALID_REQ, IB_WC_REM_INV_REQ_ERR), then
// do_complete on qp->resp.wqe, which fills byte_len and the immediate only
// on success, so both are 0): a SEND's, taken at its FIRST or ONLY (recv,
// just taken) and held after (r.recv), a WRITE with immediate's, taken at
// its LAST or ONLY (recv). A WRITE's FIRST or MIDDLE holds none. Out of
// Receive, a path the model's own requester never takes.
func (r *Responder) lengthError(a *RespAction, pkt *ib.Packet, first, needRecv bool, recv RecvWQE) RespAction {
	switch op := pkt.Opcode; {
	case isSend(op) && first:
		a.RecvDone, a.Recv, a.RecvStatus, a.RecvOpcode = true, recv, WCRemInvReqErr, CQERespSend
	case isSend(op):
		a.RecvDone, a.Recv, a.RecvStatus, a.RecvOpcode = true, r.recv, WCRemInvReqErr, CQERespSend
	case needRecv:
		a.RecvDone, a.Recv, a.RecvStatus, a.RecvOpcode = true, recv, WCRemInvReqErr, CQERespWrImm
	}
	return r.nak(a, SynNAKInvReq, pkt.PSN, true)
}

// packetLengthOK reports whether a SEND or RDMA WRITE packet (first:
// FIRST or ONLY; last: LAST or ONLY; write: a WRITE's; with immediate or
// not) keeps IBA's length rules for its payload: a FIRST or MIDDLE carries
// exactly the path MTU, a LAST 1..MTU bytes, an ONLY 0..MTU (rxe
// check_length, for every opcode); and a WRITE's packets carry exactly its
// RETH's DMA length: none
// passes it, and the LAST or ONLY ends it (rxe check_rkey's per-packet
// test of the bytes left, which lets a LAST of a whole MTU end a WRITE
// short; here it may not). A SEND has no length of its own to keep: its
// receive buffer bounds it (the LOC_LEN_ERR in Receive). A requester that
// segments at the QP's path MTU always keeps them; a peer at another MTU
// breaks the first.
func (r *Responder) packetLengthOK(pkt *ib.Packet, first, last, write bool) bool {
	n, mtu := uint64(pkt.PayloadLen), uint64(r.MTU)
	switch {
	case first && last:
		if n > mtu {
			return false
		}
	case !last:
		if n != mtu {
			return false
		}
	default:
		if n == 0 || n > mtu {
			return false
		}
	}
	if !write {
		return true
	}
	total, done := uint64(r.writeLen), uint64(r.writeOff)+n
	if first {
		total, done = uint64(pkt.RETH.Length), n
	}
	return done <= total && (!last || done == total)
}

// isWrite: RDMA WRITE FIRST, MIDDLE, LAST or ONLY, with immediate or not.
func isWrite(op ib.Opcode) bool { return uint32(1)<<op&writeOps != 0 }

// writeOps has bit op set for each RC RDMA WRITE opcode.
const writeOps = 1<<ib.RDMAWriteFirst | 1<<ib.RDMAWriteMiddle | 1<<ib.RDMAWriteLast | 1<<ib.RDMAWriteLastImm |
	1<<ib.RDMAWriteOnly | 1<<ib.RDMAWriteOnlyImm

func isSend(op ib.Opcode) bool { return uint32(1)<<op&sendOps != 0 }

// sendOps has bit op set for each RC SEND opcode (a shift by 32 or more
// gives 0: the opcodes past them are no RC SEND).
const sendOps = 1<<ib.SendFirst | 1<<ib.SendMiddle | 1<<ib.SendLast | 1<<ib.SendLastImm |
	1<<ib.SendOnly | 1<<ib.SendOnlyImm | 1<<ib.SendLastInv | 1<<ib.SendOnlyInv
