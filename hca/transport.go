package hca

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// PSNs are 24 bits and wrap (ib-facts.md §5).
const psnMask = 0xFFFFFF

// psnAdd returns p + n modulo 2^24.
func psnAdd(p uint32, n int) uint32 { return (p + uint32(n)) & psnMask }

// psnDiff returns a − b as a signed distance in the 24-bit PSN space
// (valid while the window is under 2^23, ib-facts.md §5).
func psnDiff(a, b uint32) int32 {
	d := (a - b) & psnMask
	if d&0x800000 != 0 {
		return int32(d) - 1<<24
	}
	return int32(d)
}

// AETH syndromes (ib-facts.md §5, rxe_hdr.h / ib_hdrs.h).
const (
	SynACK        = 0x00 // | credit count
	SynACKNoLimit = 0x1F // ACK with unlimited end-to-end credit
	SynRNRNAK     = 0x20 // | RNR timer code
	SynNAKSeq     = 0x60 // PSN sequence error
	SynNAKInvReq  = 0x61 // invalid request
	SynNAKAccess  = 0x62 // remote access error
	SynNAKOpErr   = 0x63 // remote operational error
	synTypeMask   = 0xE0
)

// QPState is the verbs QP state (ibv_qp_state, ib-facts.md §5).
type QPState uint8

// QP states the model uses.
const (
	QPReset QPState = iota
	QPInit
	QPRTR
	QPRTS
	QPErr QPState = 6
)

var qpStateNames = map[QPState]string{QPReset: "RESET", QPInit: "INIT", QPRTR: "RTR", QPRTS: "RTS", QPErr: "ERR"}

// String returns the state's verbs name.
func (s QPState) String() string { return qpStateNames[s] }

// PacketCount returns how many PSNs a message of length bytes uses at mtu:
// a zero-byte message still takes one packet (ib-facts.md §2).
func PacketCount(length uint32, mtu int) int {
	if length == 0 {
		return 1
	}
	return int((length + uint32(mtu) - 1) / uint32(mtu))
}

// RequestOpcode returns the BTH opcode of packet i of n of a request.
func RequestOpcode(op WROpcode, i, n int) ib.Opcode {
	first, last := i == 0, i == n-1
	switch op {
	case WRSend, WRSendImm, WRSendInv:
		imm, inv := op == WRSendImm, op == WRSendInv
		switch {
		case first && last && imm:
			return ib.SendOnlyImm
		case first && last && inv:
			return ib.SendOnlyInv
		case first && last:
			return ib.SendOnly
		case first:
			return ib.SendFirst
		case last && imm:
			return ib.SendLastImm
		case last && inv:
			return ib.SendLastInv
		case last:
			return ib.SendLast
		}
		return ib.SendMiddle
	case WRRDMAWrite, WRRDMAWriteImm:
		imm := op == WRRDMAWriteImm
		switch {
		case first && last && imm:
			return ib.RDMAWriteOnlyImm
		case first && last:
			return ib.RDMAWriteOnly
		case first:
			return ib.RDMAWriteFirst
		case last && imm:
			return ib.RDMAWriteLastImm
		case last:
			return ib.RDMAWriteLast
		}
		return ib.RDMAWriteMiddle
	case WRRDMARead:
		return ib.RDMAReadRequest
	case WRCompSwap:
		return ib.CompareSwap
	case WRFetchAdd:
		return ib.FetchAdd
	}
	panic(fmt.Sprintf("hca: no request opcode for WR opcode %d", op))
}

// ReadResponseOpcode returns the opcode of read response packet i of n.
func ReadResponseOpcode(i, n int) ib.Opcode {
	switch {
	case n == 1:
		return ib.RDMAReadResponseOnly
	case i == 0:
		return ib.RDMAReadResponseFirst
	case i == n-1:
		return ib.RDMAReadResponseLast
	}
	return ib.RDMAReadResponseMiddle
}

// sendMsg is one send-queue message as the requester tracks it.
type sendMsg struct {
	wqe      SendWQE
	firstPSN uint32
	npsn     int    // PSNs the message uses
	npkts    int    // request packets to send (1 for READ and atomics)
	sent     int    // next request packet to send
	everSent bool   // the request went on the wire at least once
	readGot  uint32 // READ: response bytes received in order
	done     bool
	status   WCStatus
	inline   []byte // inline payload, copied from the WQE
	// acked counts a SEND's or WRITE's request packets, from its first,
	// that an ACK or NAK has acknowledged: a retry resends from packet
	// acked (rxe comp.psn). The responder ACKs mid-message at the AckReq
	// points and on every duplicate, so a message that takes longer to
	// send than the retry timeout still makes progress.
	acked int
	// Posted is when the application posted the WR (for latency breakdowns).
	Posted ib.PS
}

func (m *sendMsg) lastPSN() uint32 { return psnAdd(m.firstPSN, m.npsn-1) }

func (m *sendMsg) isRdAtomic() bool { return m.wqe.Opcode == WRRDMARead || m.wqe.Opcode.isAtomic() }

// Completion is a finished send WQE, in posting order.
type Completion struct {
	WQE    SendWQE
	Status WCStatus
	Posted ib.PS
}

// Requester is the send side of an RC QP (IBA ch. 9 requester, rxe_req.c /
// rxe_comp.c): it numbers packets, sets AckReq, matches ACKs, NAKs and
// responses, retries go-back-N, and completes WQEs in order.
type Requester struct {
	MTU         int
	AckReqEvery int
	MaxRdAtomic int
	RetryCnt    int
	RNRRetry    int

	State   QPState
	nextPSN uint32     // PSN of the next new message
	msgs    []*sendMsg // uncompleted messages, oldest first
	sendIdx int        // index in msgs of the message being transmitted
	// rdAtomic counts READ/atomic messages sent at least once and not yet
	// retired. A message holds its slot from its first send until it
	// completes in order, across retries (rxe wqe->has_rd_atomic, released
	// in complete_ack): so the responder never executes more than
	// max_rd_atomic READ/atomics from the oldest unfinished one on, and its
	// resources still hold every one the requester may retry.
	rdAtomic  int
	retryLeft int
	rnrLeft   int
	// startedRetry: a retry sequence (sequence NAK, implied NAK or
	// timeout) is under way and nothing has progressed since (rxe
	// comp.started_retry). Further NAKs and implied NAKs start no new one.
	startedRetry bool
	// RNRWaitCode is the RNR timer code of the last RNR NAK; the device
	// holds transmission for that long.
	RNRWaitCode int
	// Retries counts go-back-N rewinds (timeouts, sequence NAKs, RNR NAKs).
	Retries int64

	free    []*sendMsg   // retired messages for reuse
	compBuf []Completion // the Completions slice handed out, reused
}

// NewRequester returns an RTS requester starting at psn.
func NewRequester(cfg *Config, mtu int, psn uint32) *Requester {
	return &Requester{MTU: mtu, AckReqEvery: cfg.AckReqEvery, MaxRdAtomic: cfg.MaxRdAtomic,
		RetryCnt: cfg.RetryCnt, RNRRetry: cfg.RNRRetry, State: QPRTS, nextPSN: psn & psnMask,
		retryLeft: cfg.RetryCnt, rnrLeft: cfg.RNRRetry}
}

// Enqueue adds a decoded WQE to the send queue. A QP in ERR completes it
// with WR_FLUSH_ERR at once.
func (r *Requester) Enqueue(w SendWQE, posted ib.PS) []Completion {
	if r.State == QPErr {
		return []Completion{{WQE: w, Status: WCWRFlushErr, Posted: posted}}
	}
	n := PacketCount(w.Length, r.MTU)
	m := r.newMsg()
	*m = sendMsg{wqe: w, firstPSN: r.nextPSN, npsn: n, npkts: n, Posted: posted, inline: m.inline[:0]}
	if m.isRdAtomic() {
		m.npkts = 1
		if w.Opcode.isAtomic() {
			m.npsn = 1
		}
	}
	r.nextPSN = psnAdd(r.nextPSN, m.npsn)
	r.msgs = append(r.msgs, m)
	return nil
}

// newMsg returns a message from the free list, or a new one.
func (r *Requester) newMsg() *sendMsg {
	if k := len(r.free); k > 0 {
		m := r.free[k-1]
		r.free = r.free[:k-1]
		return m
	}
	return new(sendMsg)
}

// EnqueueLocal adds a local operation the HCA has executed (a bind, a
// local invalidate) to the send queue: it sends no packet and holds no
// PSN, and completes in order, once every message before it has (IBA
// completions are in posting order). A QP in ERR flushes it.
func (r *Requester) EnqueueLocal(w SendWQE, posted ib.PS) []Completion {
	if r.State == QPErr {
		return []Completion{{WQE: w, Status: WCWRFlushErr, Posted: posted}}
	}
	m := r.newMsg()
	// No packets: nothing to send (skipSent passes it) and no PSN (its
	// last PSN is the one before, which find never matches).
	*m = sendMsg{wqe: w, firstPSN: r.nextPSN, Posted: posted, inline: m.inline[:0],
		everSent: true, done: true, status: WCSuccess}
	r.msgs = append(r.msgs, m)
	r.skipSent()
	out := r.retire(r.compBuf[:0])
	r.compBuf = out[:0]
	return out
}

// Outstanding reports whether any message awaits an ACK or response.
func (r *Requester) Outstanding() bool {
	return r.sendIdx > 0 || (len(r.msgs) > 0 && r.msgs[0].sent > 0)
}

// rdAtomicUnfinished reports whether a READ or atomic on the queue has
// not yet had its answer (sent or not): what a fenced WQE waits for.
func (r *Requester) rdAtomicUnfinished() bool {
	for _, m := range r.msgs {
		if !m.done && m.isRdAtomic() {
			return true
		}
	}
	return false
}

// Pending returns the uncompleted messages (sent or not).
func (r *Requester) Pending() int { return len(r.msgs) }

// HasWork reports whether a packet may be sent now.
func (r *Requester) HasWork() bool {
	if r.State != QPRTS || r.sendIdx >= len(r.msgs) {
		return false
	}
	m := r.msgs[r.sendIdx]
	return !(!m.everSent && m.isRdAtomic() && r.rdAtomic >= r.MaxRdAtomic)
}

// TxPacket describes the next request packet: the message and its packet
// index. Payload offset = Index × MTU.
type TxPacket struct {
	Msg   *sendMsg
	Index int
}

// Next takes the next request packet to send and fills pkt's transport
// headers (not LIDs, VL or payload bytes). Call only when HasWork.
func (r *Requester) Next(pkt *ib.Packet) TxPacket {
	m := r.msgs[r.sendIdx]
	i := m.sent
	w := &m.wqe
	pkt.Opcode = RequestOpcode(w.Opcode, i, m.npkts)
	pkt.PSN = psnAdd(m.firstPSN, i)
	pkt.AckReq = i == m.npkts-1 || (i+1)%r.AckReqEvery == 0
	// SE on the last packet of a SEND or WRITE with immediate (the
	// messages that consume a receive WQE), when the WR asked for it.
	pkt.SE = w.Solicited && i == m.npkts-1 && (w.Opcode == WRSend || w.Opcode == WRSendImm || w.Opcode == WRSendInv || w.Opcode == WRRDMAWriteImm)
	switch w.Opcode {
	case WRRDMARead:
		// A READ retried after some of its responses came asks for the
		// rest: from the first PSN not answered, the VA and length
		// advanced by the bytes received (rxe req_retry: req.psn =
		// comp.psn, iova += npsn × mtu, resid kept). The responder
		// replays that part from the READ's resource.
		got := m.readGot
		pkt.PSN = psnAdd(m.firstPSN, int(got)/r.MTU)
		pkt.RETH = ib.RETH{VA: w.RemoteAddr + uint64(got), RKey: w.RKey, Length: w.Length - got}
		pkt.AckReq = true
	case WRCompSwap, WRFetchAdd:
		pkt.Atomic = ib.AtomicETH{VA: w.RemoteAddr, RKey: w.RKey, SwapAdd: w.SwapAdd, Compare: w.Compare}
		pkt.AckReq = true
	default:
		off := uint32(i * r.MTU)
		pkt.PayloadLen = int(min(uint32(r.MTU), w.Length-off))
		if i == 0 && pkt.Opcode.Headers()&ib.HasRETH != 0 {
			pkt.RETH = ib.RETH{VA: w.RemoteAddr, RKey: w.RKey, Length: w.Length}
		}
		if pkt.Opcode.Headers()&ib.HasImmDt != 0 {
			pkt.Imm = w.Imm
		} else if w.Opcode == WRSendInv && i == m.npkts-1 {
			pkt.IETH = w.Imm // the last packet's IETH names the R_Key
		}
	}
	if !m.everSent && m.isRdAtomic() {
		r.rdAtomic++
	}
	m.sent++
	m.everSent = true
	r.skipSent()
	return TxPacket{Msg: m, Index: i}
}

// skipSent moves sendIdx past messages with nothing left to send: the one
// just finished, and any a rewind left acknowledged.
func (r *Requester) skipSent() {
	for r.sendIdx < len(r.msgs) && r.msgs[r.sendIdx].sent == r.msgs[r.sendIdx].npkts {
		r.sendIdx++
	}
}

// ackThrough marks every message whose PSNs all lie before psn (exclusive
// when inclusive is false) as acknowledged, except READ and atomics, which
// only their responses complete. A SEND or WRITE that psn lies inside has
// its packets before psn (through psn when inclusive) acknowledged. It
// reports whether that added acknowledged packets to the oldest unfinished
// message without completing it: progress, when an ACK did it.
//
// A message being resent after a rewind completes as soon as an ACK covers
// it, and sends nothing more: the responder has every packet of it. (rxe
// ignores an ACK past a WQE it is resending until the WQE's last packet has
// gone again, which only adds duplicates.)
func (r *Requester) ackThrough(psn uint32, inclusive bool) (advanced bool) {
	oldest := true // every message before m is complete
	completed := false
	for _, m := range r.msgs {
		if !m.everSent {
			break
		}
		d := psnDiff(m.lastPSN(), psn)
		if d > 0 || (d == 0 && !inclusive) {
			k := int(psnDiff(psn, m.firstPSN))
			if inclusive {
				k++
			}
			if !m.isRdAtomic() && k > m.acked {
				m.acked = k
				advanced = oldest
			}
			break
		}
		if !m.done && !m.isRdAtomic() {
			m.done, m.status = true, WCSuccess
			m.acked, m.sent = m.npkts, m.npkts
			completed = true
		}
		oldest = oldest && m.done
	}
	if completed {
		r.skipSent()
	}
	return advanced
}

// settle retires completed messages. Retiring any is progress: the retry
// timer restarts and the retry counters are restored (rxe
// reset_retry_counters). Messages completed behind an unfinished one are
// not: they wait, and so does the timer.
func (r *Requester) settle(res *AckResult) {
	n := len(res.Completions)
	res.Completions = r.retire(res.Completions)
	if len(res.Completions) > n {
		r.progressed(res)
	}
}

// progressed records progress of the oldest unfinished message.
func (r *Requester) progressed(res *AckResult) {
	res.Progress = true
	r.retryLeft, r.rnrLeft = r.RetryCnt, r.RNRRetry
	r.startedRetry = false
}

// retire pops completed messages off the front, in order.
func (r *Requester) retire(out []Completion) []Completion {
	k := 0
	for k < len(r.msgs) && r.msgs[k].done {
		m := r.msgs[k]
		out = append(out, Completion{WQE: m.wqe, Status: m.status, Posted: m.Posted})
		if m.isRdAtomic() {
			r.rdAtomic--
		}
		r.free = append(r.free, m)
		k++
	}
	if k > 0 {
		// Shift down rather than reslice, so appends reuse the array.
		n := copy(r.msgs, r.msgs[k:])
		clear(r.msgs[n:])
		r.msgs = r.msgs[:n]
		r.sendIdx = max(0, r.sendIdx-k)
	}
	return out
}

// find returns the index of the message holding psn, or -1.
func (r *Requester) find(psn uint32) int {
	for i, m := range r.msgs {
		if psnDiff(psn, m.firstPSN) >= 0 && psnDiff(psn, m.lastPSN()) <= 0 {
			return i
		}
	}
	return -1
}

// rewind restarts transmission at psn (go-back-N): the message holding it
// resends from that packet (a READ asks for the responses it lacks, an
// atomic goes again), every later one from its start, except those
// already acknowledged. Those only an implied NAK can leave behind the
// restart point: WRITEs and SENDs an ACK covered, and READs or atomics
// whose responses came, after a READ or atomic whose response was lost.
// The responder has executed them, so skipping them changes nothing there
// (the go-back-N resend of them would only be duplicates it ACKs or
// replays).
func (r *Requester) rewind(psn uint32) {
	i := r.find(psn)
	if i < 0 {
		return
	}
	r.Retries++
	m := r.msgs[i]
	if m.isRdAtomic() {
		// The request goes again. A READ keeps the response bytes it has
		// and asks only for the rest (Next); an atomic has none.
		m.sent = 0
	} else {
		m.sent = int(psnDiff(psn, m.firstPSN))
	}
	for _, later := range r.msgs[i+1:] {
		if later.done {
			later.sent = later.npkts
			continue
		}
		later.sent = 0
		later.readGot = 0
	}
	r.sendIdx = i
	r.skipSent()
}

// retry starts a go-back-N retry at psn (rxe COMPST_ERROR_RETRY). A
// timeout always retries; a sequence NAK or an implied NAK only when no
// retry sequence is under way (rxe comp.started_retry, cleared by
// progress), so the NAKs, ACKs and responses still in flight from before
// the rewind start no second one. Each retry sequence spends one of
// retry_cnt (7 is infinite, as rxe does); with none left the message
// holding psn fails with RETRY_EXC_ERR.
func (r *Requester) retry(psn uint32, timeout bool, res *AckResult) {
	if r.startedRetry && !timeout {
		return
	}
	if r.RetryCnt != 7 {
		if r.retryLeft == 0 {
			res.Completions = r.fail(r.find(psn), WCRetryExcErr, res.Completions)
			return
		}
		r.retryLeft--
	}
	r.startedRetry = true
	r.rewind(psn)
	res.Rewound = true
}

// impliedNAK retries from the oldest unfinished message at once when it is
// a READ or atomic whose request is out and an ACK, NAK or response
// arrives for a later PSN. Responses come back in PSN order, so that one's
// response was lost: an implied NAK (rxe check_psn: a response past a
// pending READ/atomic WQE is COMPST_ERROR_RETRY). It reports whether it
// applied, even when a retry already under way absorbs it.
func (r *Requester) impliedNAK(psn uint32, res *AckResult) bool {
	if r.State == QPErr || len(r.msgs) == 0 {
		return false
	}
	h := r.msgs[0]
	if !h.isRdAtomic() || h.sent == 0 || psnDiff(psn, h.lastPSN()) <= 0 {
		return false
	}
	r.retry(h.firstPSN, false, res)
	return true
}

// fail completes the message at index i with status and flushes the rest;
// the QP goes to ERR (ib-facts.md §5, completion ordering).
func (r *Requester) fail(i int, status WCStatus, out []Completion) []Completion {
	nak := r.msgs[i]
	for j, m := range r.msgs {
		if j < i && !m.done && m.wqe.Opcode != WRRDMARead && !m.wqe.Opcode.isAtomic() {
			// Earlier messages the NAK implicitly acknowledged. A READ or
			// atomic is completed only by its answer, never by a later
			// PSN's ACK or NAK: one whose answer was lost stays
			// incomplete, and with the QP now in error it is flushed
			// (completing it as successful would report data that never
			// arrived).
			m.done, m.status = true, WCSuccess
		}
	}
	out = r.retire(out)
	r.State = QPErr
	for _, m := range r.msgs {
		st := WCWRFlushErr
		if m == nak {
			st = status
		}
		out = append(out, Completion{WQE: m.wqe, Status: st, Posted: m.Posted})
	}
	r.msgs = r.msgs[:0]
	r.sendIdx = 0
	r.rdAtomic = 0
	return out
}

// AckResult tells the device what an ACK, NAK or response did.
type AckResult struct {
	Completions []Completion
	Progress    bool // something was acknowledged: restart the retry timer
	RNRWait     bool // hold transmission for the RNR timer (RNRWaitCode)
	Rewound     bool // transmission restarts at an earlier PSN
}

// OnAck handles an ACK or NAK (opcode ACKNOWLEDGE) carrying AETH syndrome
// syn for psn.
func (r *Requester) OnAck(psn uint32, syn uint8) AckResult {
	res := AckResult{Completions: r.compBuf[:0]}
	defer func() { r.compBuf = res.Completions[:0] }()
	if r.State == QPErr {
		return res
	}
	switch syn & synTypeMask {
	case SynACK:
		advanced := r.ackThrough(psn, true)
		r.settle(&res)
		if advanced && !res.Progress {
			// Part of the oldest message acknowledged: progress, as rxe's
			// check_ack counts every ACK at or past comp.psn (it resets
			// the retry counters, and the timer restarts).
			r.progressed(&res)
		}
		r.impliedNAK(psn, &res)
	case SynRNRNAK:
		r.ackThrough(psn, false)
		r.settle(&res)
		if r.impliedNAK(psn, &res) {
			// The lost response comes first; the RNR NAK is not acted on
			// (rxe checks the PSN before the syndrome). The resent SEND
			// meets the empty receive queue again if it still is.
			break
		}
		i := r.find(psn)
		if i < 0 {
			break
		}
		if r.RNRRetry != 7 {
			if r.rnrLeft == 0 {
				res.Completions = r.fail(i, WCRNRRetryExcErr, res.Completions)
				return res
			}
			r.rnrLeft--
		}
		r.rewind(psn)
		r.RNRWaitCode = int(syn &^ synTypeMask)
		res.RNRWait, res.Rewound = true, true
	case SynNAKSeq & synTypeMask:
		r.ackThrough(psn, false)
		r.settle(&res)
		i := r.find(psn)
		switch syn {
		case SynNAKSeq:
			if !r.impliedNAK(psn, &res) && i >= 0 {
				r.retry(psn, false, &res)
			}
		case SynNAKInvReq:
			if i >= 0 {
				res.Completions = r.fail(i, WCRemInvReqErr, res.Completions)
			}
		case SynNAKAccess:
			if i >= 0 {
				res.Completions = r.fail(i, WCRemAccessErr, res.Completions)
			}
		default:
			if i >= 0 {
				res.Completions = r.fail(i, WCRemOpErr, res.Completions)
			}
		}
	}
	return res
}

// Placement says where a response's payload lands at the requester: at
// Addr, or, for a WR with a scatter list, at offset Off of the message in
// SGL (Addr is then Off).
type Placement struct {
	Addr uint64
	SGL  []SGE
	Off  uint64
}

// OnReadResponse handles a read response packet. It returns the local
// placement of its payload and whether to place it. A response out of
// order within its READ is dropped; one past an earlier READ or atomic
// still unanswered is placed, and retries that one (implied NAK).
func (r *Requester) OnReadResponse(pkt *ib.Packet) (pl Placement, ok bool, res AckResult) {
	if r.State == QPErr {
		return pl, false, res
	}
	if i := r.find(pkt.PSN); i >= 0 {
		m := r.msgs[i]
		idx := int(psnDiff(pkt.PSN, m.firstPSN))
		if m.wqe.Opcode == WRRDMARead && m.sent > 0 && uint32(idx*r.MTU) == m.readGot {
			// A response implicitly acknowledges every earlier PSN.
			r.ackThrough(pkt.PSN, false)
			pl, ok = Placement{Addr: m.wqe.LocalAddr + uint64(m.readGot), SGL: m.wqe.SGL, Off: uint64(m.readGot)}, true
			m.readGot += uint32(pkt.PayloadLen)
			if m.readGot >= m.wqe.Length {
				m.done, m.status = true, WCSuccess
			}
			r.settle(&res)
			if !res.Progress && r.msgs[0] == m {
				r.progressed(&res) // data for the oldest message
			}
		}
	}
	r.impliedNAK(pkt.PSN, &res)
	return pl, ok, res
}

// OnAtomicAck handles an ATOMIC_ACKNOWLEDGE; it returns where the
// original value goes (Placement). Like a read response, it retries an earlier
// READ or atomic still unanswered (implied NAK).
func (r *Requester) OnAtomicAck(pkt *ib.Packet) (pl Placement, ok bool, res AckResult) {
	if r.State == QPErr {
		return pl, false, res
	}
	if i := r.find(pkt.PSN); i >= 0 {
		m := r.msgs[i]
		if m.wqe.Opcode.isAtomic() && m.sent > 0 && !m.done {
			r.ackThrough(pkt.PSN, false)
			m.done, m.status = true, WCSuccess
			pl, ok = Placement{Addr: m.wqe.LocalAddr, SGL: m.wqe.SGL}, true
			r.settle(&res)
		}
	}
	r.impliedNAK(pkt.PSN, &res)
	return pl, ok, res
}

// OnTimeout handles the local ACK timer expiring with messages
// outstanding: resend from the oldest unacknowledged PSN, or give up with
// RETRY_EXC_ERR when retry_cnt is spent.
func (r *Requester) OnTimeout() AckResult {
	var res AckResult
	if r.State == QPErr || len(r.msgs) == 0 || !r.msgs[0].everSent {
		return res
	}
	// The oldest message is not complete; the packets of it an ACK or NAK
	// covered are (rxe req_retry restarts at comp.psn and skips them in
	// the first WQE). A READ asks again for the responses it lacks; an
	// atomic goes again.
	h := r.msgs[0]
	psn := h.firstPSN
	if !h.isRdAtomic() {
		psn = psnAdd(psn, h.acked)
	}
	r.retry(psn, true, &res)
	return res
}

// FlushAll moves the QP to ERR and completes everything with WR_FLUSH_ERR
// (a local error or the application's modify to ERR).
func (r *Requester) FlushAll() []Completion {
	r.State = QPErr
	var out []Completion
	for _, m := range r.msgs {
		out = append(out, Completion{WQE: m.wqe, Status: WCWRFlushErr, Posted: m.Posted})
	}
	r.msgs = r.msgs[:0]
	r.sendIdx, r.rdAtomic = 0, 0
	return out
}

// RNRTimerPS returns the delay of RNR timer code c (ib-facts.md §5 table,
// kernel enum ib_rnr_timeout).
func RNRTimerPS(c int) ib.PS {
	us := [32]float64{655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280,
		1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
		163840, 245760, 327680, 491520}
	return ib.PS(us[c&31] * 1e6)
}

// RetryTimeoutPS returns the local ACK timeout 4.096 µs × 2^t (ib-facts.md
// §5); t = 0 means infinite and returns 0.
func RetryTimeoutPS(t int) ib.PS {
	if t == 0 {
		return 0
	}
	return 4096 * ib.Nanosecond << t
}
