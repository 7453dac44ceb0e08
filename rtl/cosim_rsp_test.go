package rtl

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_requester's responses <-> hca.Requester.OnReadResponse, OnAtomicAck ----
//
// The emitted hca_transport (RETRY_CNT 3: retryTransport) in reqTB, on a
// directed run of three contexts whose responder answers READs and atomics:
// READ responses FIRST, MIDDLE, LAST and ONLY, atomic ACKs, responses that
// acknowledge the SENDs and WRITEs before them (the model's ackThrough in
// OnReadResponse and OnAtomicAck), responses the model drops (a duplicate,
// one out of sequence, one of the wrong kind for the message holding its
// PSN) and one past a READ never answered (the implied NAK: the READs go
// again). Every response is ib.AppendWire's bytes, some with a GRH, gated
// on the packets sent before it. The log is replayed into the model as
// TestRequesterRetryCosim replays it (retryCheck, modelRx): every packet
// the RTL commits is the model's Next then, byte for byte, and every
// completion on cpl_* the model's, in order, and made by the model by the
// point of the log where the RTL gives it.

// modelRx is what the model's requester does with a packet hca_rx_ack hands
// the requester (hca.Device.complete): OnAck for an ACKNOWLEDGE,
// OnReadResponse for a READ response, OnAtomicAck for an atomic ACK. ok
// is the model's "place the payload or the original value" at pl.
func modelRx(req *hca.Requester, a reqAck) (res hca.AckResult, pl hca.Placement, ok bool) {
	if a.rsp == nil {
		return req.OnAck(a.psn, a.syn), pl, false
	}
	p := a.packet()
	if p.Opcode == ib.AtomicAcknowledge {
		pl, ok, res = req.OnAtomicAck(p)
		return res, pl, ok
	}
	pl, ok, res = req.OnReadResponse(p)
	return res, pl, ok
}

// reqScatter writes data into mem where hca.Device.place puts it: at
// pl.Addr for a single element; for a list (pl.SGL), the bytes from
// offset pl.Off of the elements' concatenation, cut at the elements'
// bounds, each part at its own element's address (hca's sglSlice, as
// reqGather reads a gather list).
func reqScatter(mem map[uint64]byte, pl hca.Placement, data []byte) {
	if pl.SGL == nil {
		for i, v := range data {
			mem[pl.Addr+uint64(i)] = v
		}
		return
	}
	off, at := pl.Off, 0
	start := uint64(0) // the element's first byte in the message
	for _, e := range pl.SGL {
		end := start + uint64(e.Length)
		if off < end && at < len(data) {
			skip := off - start
			take := min(int(uint64(e.Length)-skip), len(data)-at)
			for i := range take {
				mem[e.Addr+skip+uint64(i)] = data[at+i]
			}
			off += uint64(take)
			at += take
		}
		start = end
	}
}

// rspPlan is a retryPlan whose run has responses; placed counts the
// responses the model accepted, dropped those it did not.
type rspPlan struct {
	*retryPlan
	placed, dropped int
	written         int // responses whose payload the RTL writes (p.mem)
	// keys is the key table the lists' L_Keys are checked in (wqe's sgl).
	keys hca.KeyTable
	// fm is the fence mode the next wqe gets (then 0 again); rdun, per
	// context, the model's READs and atomics posted and not yet completed
	// (the model's Requester.rdAtomicUnfinished is rdun > 0); held, the
	// WQEs the model's device holds behind a fenced one (hca.Device.wqeReady:
	// fenced while one is unanswered), oldest first, handed on (posted to
	// the model's requester) when the answers come; marks, ack and item
	// indices a plan's check looks up by name.
	fm    uint8
	rdun  [3]int
	held  []rspHeld
	marks map[string]int
}

// markAck names the last ACK or response delivered so far in p.marks,
// markItem the last item; gateFrom makes the items from k on wait until
// the requester has taken every ACK and response so far, so each phase of
// a plan starts after the last.
func (p *rspPlan) markAck(name string)  { p.mark(name, len(p.run.acks)-1) }
func (p *rspPlan) markItem(name string) { p.mark(name, len(p.run.items)-1) }
func (p *rspPlan) mark(name string, i int) {
	if p.marks == nil {
		p.marks = map[string]int{}
	}
	p.marks[name] = i
}
func (p *rspPlan) gateFrom(k int) {
	for _, it := range p.run.items[k:] {
		it.gate = len(p.run.acks)
	}
}

// rspHeld is a WQE held behind a fence: its context and item.
type rspHeld struct {
	q  int
	it *reqItem
}

// readRsp is READ response i of n at psn carrying length bytes (payload
// bytes drawn from psn, so each response's differ).
func readRsp(i, n int, psn uint32, length int, grh bool) reqAck {
	pay := make([]byte, length)
	for k := range pay {
		pay[k] = byte(int(psn)*7 + k*13)
	}
	return reqAck{psn: psn & 0xFFFFFF, grh: grh, rsp: &ib.Packet{Opcode: hca.ReadResponseOpcode(i, n), PayloadLen: length, Payload: pay,
		AETH: ib.AETH{Syndrome: hca.SynACKNoLimit, MSN: 1}}}
}

// atomicAck is an ATOMIC ACKNOWLEDGE at psn with original value orig.
func atomicAck(psn uint32, orig uint64, grh bool) reqAck {
	return reqAck{psn: psn & 0xFFFFFF, grh: grh, rsp: &ib.Packet{Opcode: ib.AtomicAcknowledge, AtomicAck: orig,
		AETH: ib.AETH{Syndrome: hca.SynACKNoLimit, MSN: 1}}}
}

// newRspPlan builds the run (derivations in the comments: MTU m, PSNs mod
// 2^24).
// newRspGen sets up a response run on the contexts cfgs and returns its
// plan and the helpers that build it: wqe posts a WQE (the model's
// Enqueue), deliver offers an ACK or response once every packet the
// model has sent so far has left (its gate) and runs the model on it,
// drain sends what the model has to send.
//
// wqe's sgl, when given, is the WQE's list (length and laddr are then
// its total and 0, as the parser's decode of a list): a READ's or
// atomic's scatter list. Its elements' L_Keys are checked as
// hca.Device.checkSGL checks them (p.keys, in the contexts' PD 0, LOCAL_WRITE, each
// element of more than 0 bytes); one failing, the WQE is not sent and
// completes as hca.Device.wqeReady completes it: the context's messages
// flushed (FlushAll), LOC_PROT_ERR, the context to ERR.
func newRspGen(cfgs []*reqItem) (p *rspPlan, wqe func(q int, op hca.WROpcode, length int, laddr uint64, signaled bool, sgl ...hca.SGE), deliver func(q int, a reqAck), drain func()) {
	p = &rspPlan{retryPlan: &retryPlan{run: &reqRun{}, mem: map[uint64]byte{}, bufs: map[uint16][][2]uint64{}}}
	run := p.run
	qps := p.addQPs(cfgs)
	drain = func() { p.drain(qps) }
	index := uint16(0x80)
	// post hands w to the model's requester of context q (Enqueue), its
	// completions (one in ERR: flushed) to the statuses.
	post := func(q int, w hca.SendWQE) {
		if rdAtomicOp(w.Opcode) {
			p.rdun[q]++
		}
		p.complete(q, qps[q].enqueue(w))
	}
	// release hands on the held WQEs, in order, up to a fenced one whose
	// context still has a READ or atomic unanswered (releaseFence).
	release := func() {
		for len(p.held) > 0 {
			h := p.held[0]
			if h.it.wqe.Fenced() && p.rdun[h.q] > 0 {
				return
			}
			p.held = p.held[1:]
			post(h.q, h.it.wqe)
		}
	}
	wqe = func(q int, op hca.WROpcode, length int, laddr uint64, signaled bool, sgl ...hca.SGE) {
		it := &reqItem{qix: q, qpn: qps[q].item.qpn, every: retryEvery, sent: true}
		it.wqe = hca.SendWQE{Opcode: op, Length: uint32(length), RemoteAddr: 0x5000_0000 + uint64(index)<<12, RKey: 0x6600 + uint32(index),
			Imm: 0xBEEF0000 + uint32(index), SwapAdd: 0x1111 * uint64(index), Compare: 0x2222 * uint64(index), LocalAddr: laddr,
			QPN: it.qpn, Index: index, Signaled: signaled, FenceMode: p.fm}
		index++
		p.fm = 0
		run.items = append(run.items, it)
		if len(p.held) > 0 || (it.wqe.Fenced() && p.rdun[q] > 0) {
			if sgl != nil {
				panic("rspPlan: a list behind a fence (not built)")
			}
			p.held = append(p.held, rspHeld{q, it})
			p.bufsOf(it.wqe, length, laddr)
			return
		}
		if sgl != nil {
			it.wqe.SGL, it.wqe.LocalAddr, it.wqe.Length = sgl, 0, 0
			for _, e := range sgl {
				it.wqe.Length += e.Length
				res := hca.KeyOK
				if e.Length > 0 {
					res = p.keys.Check(e.LKey, 0, hca.AccessLocalWrite, e.Addr, uint64(e.Length))
				}
				it.keyRes = append(it.keyRes, res)
				if e.Length > 0 {
					p.bufs[it.wqe.Index] = append(p.bufs[it.wqe.Index], [2]uint64{e.Addr, uint64(e.Length)})
				}
			}
			if it.keyBad() {
				it.sent = false
				p.complete(q, qps[q].req.FlushAll())
				p.status = append(p.status, hca.WCLocProtErr)
				delete(p.bufs, it.wqe.Index)
				return
			}
		}
		post(q, it.wqe)
		if sgl == nil {
			p.bufsOf(it.wqe, length, laddr)
		}
	}
	deliver = func(q int, a reqAck) {
		a.gate, a.qpn, a.msn = len(run.wires), qps[q].item.qpn, 1
		run.acks = append(run.acks, a)
		res, pl, ok := modelRx(qps[q].req, a)
		if a.rsp != nil {
			if ok {
				p.placed++
			} else {
				p.dropped++
			}
		}
		// The model's host write (hca.Device.complete): a READ response's
		// payload at the address OnReadResponse gives, when it has one; an
		// atomic's original value at the WQE's local address, 8 bytes,
		// least significant first (putLE64).
		if ok {
			var data []byte
			if a.rsp.Opcode == ib.AtomicAcknowledge {
				data = binary.LittleEndian.AppendUint64(nil, a.rsp.AtomicAck)
			} else {
				data = a.packet().Payload[:a.rsp.PayloadLen]
			}
			reqScatter(p.mem, pl, data)
			if len(data) > 0 {
				p.written++
			}
		}
		p.complete(q, res.Completions)
		release()
		drain()
	}
	return p, wqe, deliver, drain
}

// complete records the model's completions on context q: their statuses,
// and the READs and atomics among them answered (rdun).
func (p *rspPlan) complete(q int, comps []hca.Completion) {
	for _, c := range comps {
		p.status = append(p.status, c.Status)
		if rdAtomicOp(c.WQE.Opcode) {
			p.rdun[q]--
		}
	}
}

// bufsOf records the buffer a READ of length bytes at laddr, or an atomic
// (8 bytes), must hold at its successful completion.
func (p *rspPlan) bufsOf(w hca.SendWQE, length int, laddr uint64) {
	switch {
	case w.Opcode == hca.WRRDMARead && length > 0:
		p.bufs[w.Index] = [][2]uint64{{laddr, uint64(length)}}
	case w.Opcode == hca.WRCompSwap || w.Opcode == hca.WRFetchAdd:
		p.bufs[w.Index] = [][2]uint64{{laddr, 8}}
	}
}

func newRspPlan() *rspPlan {
	p, wqe, deliver, drain := newRspGen([]*reqItem{
		{cfg: true, qix: 0, qpn: 0x3450, dlid: 0x51, slid: 0x61, sl: 1, vl: 1, rqpn: 0xC0000, psn: 0xFFFFFE, mtuCode: 1, cqn: 3},
		{cfg: true, qix: 1, qpn: 0x3451, dlid: 0x52, slid: 0x62, sl: 5, vl: 3, rqpn: 0xC0001, psn: 0x000100, mtuCode: 3, cqn: 4},
		{cfg: true, qix: 2, qpn: 0x3452, dlid: 0x53, slid: 0x63, sl: 9, vl: 0, rqpn: 0xC0002, psn: 0x123456, mtuCode: 2, cqn: 9},
	})
	run := p.run
	// Context 0, MTU 256, from PSN FFFFFE: M0 a SEND of 100 B (FFFFFE),
	// M1 an unsignaled WRITE of 600 B (3 packets: FFFFFF 000000 000001,
	// across the wrap), M2 a READ of 700 B (3 PSNs 000002..000004, one
	// request packet at 000002), M3 a SEND of 10 B (000005).
	wqe(0, hca.WRSend, 100, 0x10_0000+3, true)
	wqe(0, hca.WRRDMAWrite, 600, 0x11_0000, false)
	wqe(0, hca.WRRDMARead, 700, 0x12_0000+64, true)
	wqe(0, hca.WRSend, 10, 0x13_0000, true)
	drain()
	// x0, M2's MIDDLE (000003) before its FIRST: out of sequence (index 1
	// x 256 is not readGot 0): dropped, and the model acknowledges
	// nothing with it (ackThrough only for a response in sequence): M0
	// and M1 stay.
	deliver(0, readRsp(1, 3, 0x000003, 256, false))
	// r0, M2's FIRST (000002, 256 B): in sequence (readGot 0); it
	// acknowledges every PSN before it: M0 completes (a CQE) and M1 (no
	// CQE: unsignaled); M2 has 256 B.
	deliver(0, readRsp(0, 3, 0x000002, 256, true))
	// r1, M2's LAST (000004) before its MIDDLE: out of sequence (index 2
	// x 256 is not readGot 256): dropped.
	deliver(0, readRsp(2, 3, 0x000004, 188, false))
	// r2, the MIDDLE (000003): in sequence, M2 has 512 B.
	deliver(0, readRsp(1, 3, 0x000003, 256, false))
	// r3, the MIDDLE again (a duplicate): 256 is not 512, dropped.
	deliver(0, readRsp(1, 3, 0x000003, 256, true))
	// r4, the LAST (000004, 700 - 512 = 188 B): M2 has its 700, complete.
	deliver(0, readRsp(2, 3, 0x000004, 188, false))
	// a5, an ACK through 000005: M3 completes.
	deliver(0, reqAck{psn: 0x000005, syn: hca.SynACK})
	// Context 1, MTU 1024, from 000100: A0 a fetch and add (000100), S a
	// SEND of 50 B (000101), A1 a compare and swap (000102), R a READ of
	// 0 B (one PSN, 000103: a READ response ONLY of no payload).
	wqe(1, hca.WRFetchAdd, 8, 0x20_0000, true)
	wqe(1, hca.WRSend, 50, 0x21_0000+17, true)
	wqe(1, hca.WRCompSwap, 8, 0x22_0000+8, true)
	wqe(1, hca.WRRDMARead, 0, 0x23_0000, true)
	drain()
	// r6, A0's atomic ACK (000100): complete.
	deliver(1, atomicAck(0x000100, 0x0123456789ABCDEF, false))
	// r7, A1's atomic ACK (000102): it acknowledges S (000101) first; S
	// and A1 complete, in order.
	deliver(1, atomicAck(0x000102, 0xFEDCBA9876543210, true))
	// r8, an atomic ACK at R's PSN (000103): R is a READ, not an atomic:
	// dropped (and no implied NAK: R holds the PSN).
	deliver(1, atomicAck(0x000103, 42, false))
	// r9, a READ response ONLY at A1's PSN, long retired: nothing holds
	// 000102, dropped.
	deliver(1, readRsp(0, 1, 0x000102, 0, false))
	// r10, R's ONLY (000103, 0 B): readGot 0 >= 0, R completes.
	deliver(1, readRsp(0, 1, 0x000103, 0, true))
	// Context 2, MTU 512, from 123456: R1 an unsignaled READ of 1024 B
	// (123456 123457), R2 a READ of 2048 B (123458..12345B), S2 a SEND of
	// 600 B (12345C 12345D). Both READs' local addresses and lengths are
	// multiples of 64: their payloads go to host memory through wr0.
	wqe(2, hca.WRRDMARead, 1024, 0x30_0000, false)
	wqe(2, hca.WRRDMARead, 2048, 0x31_0000, true)
	wqe(2, hca.WRSend, 600, 0x32_0000+1, true)
	drain()
	// r11, R2's FIRST (123458) while R1 has had nothing: R2 in sequence
	// (the model places its 512 B; the RTL drops them: the same bytes
	// come again with r14), but R1's response was lost: the implied NAK,
	// a retry from R1 (retry_cnt 3 -> 2): R1, R2 (its readGot back to 0)
	// and S2 go again (123456, 123458, 12345C 12345D).
	deliver(2, readRsp(0, 4, 0x123458, 512, false))
	// r12..r13: R1's FIRST and LAST (with a GRH: its payload starts a
	// beat in): R1 completes (progress: retry_cnt back to 3). Before r12
	// a copy of it with a payload byte flipped (its VCRC sealed again:
	// only the ICRC shows it): hca_rx_ack drops it at its last beat, and
	// the 8 blocks of it already in its payload FIFO with it.
	bad := readRsp(0, 2, 0x123456, 512, false)
	bad.qpn = run.items[2].qpn // context 2's configuration, the run's third item
	w := bad.wire()
	w[len(w)-ib.VCRCBytes-4-100] ^= 0x10
	resealWire(w, false)
	run.bad = append(run.bad, reqBad{before: len(run.acks), kind: "icrc", wire: w, counter: cntICRC})
	deliver(2, readRsp(0, 2, 0x123456, 512, false))
	deliver(2, readRsp(1, 2, 0x123457, 512, true))
	// r14..r17: R2's four, a MIDDLE local (20 bytes in), one with a GRH
	// (60 bytes in): R2 completes.
	deliver(2, readRsp(0, 4, 0x123458, 512, false))
	deliver(2, readRsp(1, 4, 0x123459, 512, false))
	deliver(2, readRsp(2, 4, 0x12345A, 512, true))
	deliver(2, readRsp(3, 4, 0x12345B, 512, false))
	// a18, an ACK through 12345D: S2 completes.
	deliver(2, reqAck{psn: 0x12345D, syn: hca.SynACK})
	// Payloads not at whole blocks, written at their host byte lanes with
	// byte enables (s = address mod 64, n bytes: ceil((s + n) / 64) beats).
	// Their WQEs wait until the requester has taken every ACK and response
	// so far (reqItem.gate): the responses' gates count packets sent, which
	// holds only while the RTL sends in the plan's order.
	gateFrom, ackGate := len(run.items), len(run.acks)
	// Context 0 (MTU 256, next PSN 000006): Ra a READ of 1 B at offset 5
	// (000006: its ONLY is one beat, 24 + 1 + 3 pad + ICRC + VCRC = 34
	// bytes, so its block is pushed after the packet's last beat; 1 beat),
	// Rb of 63 B at offset 5 (000007: lanes 5..63 and 0..3 of the next
	// block, 2 beats), Rc of 65 B at offset 63 (000008: lane 63, then a
	// whole block, 2 beats).
	wqe(0, hca.WRRDMARead, 1, 0x40_0000+5, true)
	wqe(0, hca.WRRDMARead, 63, 0x41_0000+5, true)
	wqe(0, hca.WRRDMARead, 65, 0x42_0000+63, true)
	drain()
	// r19..r21: their ONLYs (Rb's with a GRH: 64 bytes in, its payload
	// all in its second beat, whose block is pushed after it): each
	// completes its READ.
	deliver(0, readRsp(0, 1, 0x000006, 1, false))
	deliver(0, readRsp(0, 1, 0x000007, 63, true))
	deliver(0, readRsp(0, 1, 0x000008, 65, false))
	// Context 1 (MTU 1024, next PSN 000104): Rd a READ of 4099 B at
	// offset 60 (5 PSNs 000104..000108: 4 x 1024 + 3; across a 4 KiB
	// boundary), A2 a fetch and add at lane 56 (000109).
	wqe(1, hca.WRRDMARead, 4099, 0x43_0000+60, true)
	wqe(1, hca.WRFetchAdd, 8, 0x24_0000+56, true)
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// r22..r26: Rd's FIRST, three MIDDLEs (one with a GRH) and its LAST of
	// 3 B with a GRH (one beat of payload at 64 bytes in): each of the
	// four of 1024 B is 16 source blocks at s = 60, s + 63 > 63, so 17
	// beats; the LAST 1 beat (60 + 2 <= 63). Rd completes.
	deliver(1, readRsp(0, 5, 0x000104, 1024, false))
	deliver(1, readRsp(1, 5, 0x000105, 1024, false))
	deliver(1, readRsp(2, 5, 0x000106, 1024, true))
	deliver(1, readRsp(3, 5, 0x000107, 1024, false))
	deliver(1, readRsp(4, 5, 0x000108, 3, true))
	// r27, A2's atomic ACK: its value in lanes 56..63, A2 completes.
	deliver(1, atomicAck(0x000109, 0x8877665544332211, false))
	// Control: every handshake ready (wr0's too, bit 10), every VL's
	// credit plenty, a WQE or ACK offered whenever one is due.
	for range 1500 {
		run.ctrl = append(run.ctrl, [5]uint64{0x71f, 2048, 2048, 2048, 2048})
	}
	return p
}

// newRspRetryPlan is a second response run (docs/rtl.md, "Responses"):
// READs retried after part of their responses, responses whose payloads
// are not an MTU, and responses behind an unanswered READ or atomic. Its
// contexts start where newRspPlan's end (context 0 at PSN 000009,
// context 1 at 00010A), so the derivations read the same.
func newRspRetryPlan() *rspPlan {
	p, wqe, deliver, drain := newRspGen([]*reqItem{
		{cfg: true, qix: 0, qpn: 0x3450, dlid: 0x51, slid: 0x61, sl: 1, vl: 1, rqpn: 0xC0000, psn: 0x000009, mtuCode: 1, cqn: 3},
		{cfg: true, qix: 1, qpn: 0x3451, dlid: 0x52, slid: 0x62, sl: 5, vl: 3, rqpn: 0xC0001, psn: 0x00010A, mtuCode: 3, cqn: 4},
		{cfg: true, qix: 2, qpn: 0x3452, dlid: 0x53, slid: 0x63, sl: 9, vl: 0, rqpn: 0xC0002, psn: 0x000200, mtuCode: 2, cqn: 9},
	})
	run := p.run
	var gateFrom, ackGate int
	// READs retried after part of their responses, and responses whose
	// payloads are not an MTU: the model counts a READ's bytes (readGot,
	// the sum of the payloads it took), takes a response only at index x
	// MTU == readGot, writes it at LocalAddr + readGot, completes the READ
	// when readGot >= Length, and resends a READ from PSN first + readGot /
	// MTU with the RETH's VA + readGot and DMA length Length - readGot
	// (hca.Requester.Next, OnReadResponse). Context 0 (MTU 256, from PSN
	// 000009): Re a
	// READ of 700 B at offset 10 (000009..00000B), Sa a SEND of 20 B
	// (00000C), Rf a READ of 1000 B at offset 33 (00000D..000010), Rg a
	// READ of 600 B at offset 7 (000011..000013), Sb a SEND of 20 B
	// (000014).
	gateFrom, ackGate = len(run.items), len(run.acks)
	wqe(0, hca.WRRDMARead, 700, 0x44_0000+10, true)
	wqe(0, hca.WRSend, 20, 0x47_0000, true)
	wqe(0, hca.WRRDMARead, 1000, 0x45_0000+33, true)
	wqe(0, hca.WRRDMARead, 600, 0x46_0000+7, true)
	wqe(0, hca.WRSend, 20, 0x48_0000, true)
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// r0, Re's FIRST (000009, 256 B): readGot 0 -> 256, at +0.
	deliver(0, readRsp(0, 3, 0x000009, 256, false))
	// n1, a sequence error NAK at Sa (00000C): Re's PSNs all lie before
	// it, its MIDDLE and LAST lost: the implied NAK, a retry from Re
	// (retry_cnt 3 -> 2). Re asks for the rest: PSN 000009 + 256 / 256 =
	// 00000A, VA + 256, length 700 - 256 = 444; Sa, Rf, Rg and Sb go again
	// whole (00000C 00000D 000011 000014).
	deliver(0, reqAck{psn: 0x00000C, syn: hca.SynNAKSeq})
	// r2..r3, the responder's answer to that request, FIRST (00000A, 256
	// B) and LAST (00000B, 188 B): indexes 1 and 2 x 256 are readGot 256
	// and 512, at +256 and +512; 700 >= 700, Re completes.
	deliver(0, readRsp(0, 2, 0x00000A, 256, false))
	deliver(0, readRsp(1, 2, 0x00000B, 188, true))
	// a4, an ACK through 00000C: Sa completes.
	deliver(0, reqAck{psn: 0x00000C, syn: hca.SynACK})
	// r5, Rf's FIRST (00000D, 256 B), then r6 a MIDDLE at 00000E with
	// the other 744 B (longer than the MTU: IBA forbids it, and neither
	// the model nor hca_rx_ack checks it): in sequence (1 x 256 =
	// readGot), at +256; readGot 1000 >= 1000, Rf completes at its second
	// PSN of four.
	deliver(0, readRsp(0, 4, 0x00000D, 256, false))
	deliver(0, readRsp(1, 4, 0x00000E, 744, false))
	// r7, a LAST at Rf's last PSN (000010): no message holds it now,
	// dropped.
	deliver(0, readRsp(3, 4, 0x000010, 232, false))
	// r8, Rg's FIRST (000011, 256 B) at +0, r9 a MIDDLE of 100 B (shorter
	// than the MTU) at +256: readGot 356. r10, the LAST (000013): 2 x 256
	// is not 356, dropped.
	deliver(0, readRsp(0, 3, 0x000011, 256, false))
	deliver(0, readRsp(1, 3, 0x000012, 100, true))
	deliver(0, readRsp(2, 3, 0x000013, 244, false))
	// n11, a sequence error NAK at Sb (000014): the implied NAK, a retry
	// from Rg (retry_cnt back to 3 since r0's progress, now 2): Rg asks
	// from 000011 + 356 / 256 = 000012, VA + 356, 600 - 356 = 244 B; Sb
	// again (000014).
	deliver(0, reqAck{psn: 0x000014, syn: hca.SynNAKSeq})
	// r12, the answer, an ONLY at 000012 of 244 B: 1 x 256 is not 356,
	// dropped (the model's Rg can take no more responses).
	deliver(0, readRsp(0, 1, 0x000012, 244, false))
	// n13, a NAK invalid request at 000012: Rg fails (REM_INV_REQ_ERR), Sb
	// is flushed (WR_FLUSH_ERR), context 0 goes to ERR.
	deliver(0, reqAck{psn: 0x000012, syn: hca.SynNAKInvReq})
	// Responses behind an unanswered READ or atomic: the model takes a
	// response in sequence for a later READ or atomic (find, not the
	// head), acknowledges the SENDs and WRITEs before it (done, not sent
	// again: rewind skips a done message), keeps what it completes done
	// until the head completes, and retries from the head (the implied
	// NAK; absorbed while a retry sequence is under way, the later READ
	// keeping its readGot). Context 1 (MTU 1024, next PSN 00010A), once
	// every ACK and response before is taken: Ha a fetch and add
	// (00010A), Sx a SEND of 50 B (00010B), Ry a READ of 3072 B at
	// offset 20 (00010C..00010E), Az a compare and swap at lane 8
	// (00010F), Sw a SEND of 30 B (000110).
	gateFrom, ackGate = len(run.items), len(run.acks)
	wqe(1, hca.WRFetchAdd, 8, 0x4B_0000, true)
	wqe(1, hca.WRSend, 50, 0x4C_0000, true)
	wqe(1, hca.WRRDMARead, 3072, 0x49_0000+20, true)
	wqe(1, hca.WRCompSwap, 8, 0x4A_0000+8, true)
	wqe(1, hca.WRSend, 30, 0x4D_0000, true)
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// r14, Ry's FIRST (00010C, 1024 B) while Ha has had no answer: in
	// sequence for Ry (readGot 0), at +0, readGot 1024; Sx is
	// acknowledged (done); then the implied NAK, a retry from Ha
	// (retry_cnt 3 -> 2): Ha, Ry (its readGot back to 0), Az and Sw go
	// again (00010A 00010C 00010F 000110), Sx does not.
	// Its bytes are not those r16 brings for the same PSN (the remote
	// buffer written in between, by another QP): the model's host memory
	// ends with r16's.
	first := readRsp(0, 3, 0x00010C, 1024, false)
	for k := range first.rsp.Payload {
		first.rsp.Payload[k] ^= 0x5A
	}
	deliver(1, first)
	// r15, Az's atomic ACK (00010F), Ha still unanswered: Az done, its
	// value written; the implied NAK is absorbed (a retry sequence under
	// way, no progress since).
	deliver(1, atomicAck(0x00010F, 0x0A0B0C0D0E0F1011, false))
	// r16..r17, Ry's FIRST again (the answer to its resend; readGot 0, at
	// +0, readGot 1024) and its MIDDLE (1 x 1024 = readGot: at +1024,
	// readGot 2048): both behind Ha, the implied NAK absorbed each time,
	// so Ry keeps its bytes.
	deliver(1, readRsp(0, 3, 0x00010C, 1024, true))
	deliver(1, readRsp(1, 3, 0x00010D, 1024, false))
	// r18, Ha's atomic ACK (00010A): Ha completes, and Sx, done, after
	// it; Ry (2048 of 3072) is not done: the rest wait.
	deliver(1, atomicAck(0x00010A, 0x1213141516171819, true))
	// r19, Ry's LAST (00010E, 1024 B): 2 x 1024 = readGot, at +2048,
	// readGot 3072: Ry completes, and Az (done) after it.
	deliver(1, readRsp(2, 3, 0x00010E, 1024, false))
	// a20, an ACK through 000110: Sw completes.
	deliver(1, reqAck{psn: 0x000110, syn: hca.SynACK})
	// An ACK past an unanswered READ: the model's ackThrough marks the
	// SENDs and WRITEs it covers done behind the READ (it does not stop
	// at a READ), and its impliedNAK retries from the READ, the done ones
	// not sent again. Context 2 (MTU 512, from 000200), held until the
	// above are taken: Hr a READ of 512 B at offset 0 (000200), Wy a
	// WRITE of 1000 B (000201 000202), Sz a SEND of 10 B (000203).
	gateFrom, ackGate = len(run.items), len(run.acks)
	wqe(2, hca.WRRDMARead, 512, 0x4E_0000, true)
	wqe(2, hca.WRRDMAWrite, 1000, 0x4F_0000+9, true)
	wqe(2, hca.WRSend, 10, 0x50_0000, true)
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// a21, an ACK through 0001FF, before the ring (a late duplicate of
	// the QP's last ACK before these): it covers nothing and implies
	// nothing (Hr's PSNs are not before it).
	deliver(2, reqAck{psn: 0x0001FF, syn: hca.SynACK})
	// a22, an ACK through 000202 (Wy's last): Wy done behind Hr; Hr's
	// PSN lies before it: the implied NAK, a retry from Hr (retry_cnt 3
	// -> 2): Hr and Sz go again (000200 000203), Wy does not.
	deliver(2, reqAck{psn: 0x000202, syn: hca.SynACK})
	// r23, Hr's ONLY (000200, 512 B): Hr completes, and Wy after it.
	deliver(2, readRsp(0, 1, 0x000200, 512, false))
	// a24, an ACK through 000203: Sz completes.
	deliver(2, reqAck{psn: 0x000203, syn: hca.SynACK})
	// Scatter lists (hca.md "Scatter/gather lists"): a READ's response
	// bytes go to its list from byte readGot on, cut at the elements'
	// bounds, each part at its element's address (hca.Device.place,
	// sglSlice); an atomic's 8 bytes from byte 0. Every element's L_Key is
	// checked with LOCAL_WRITE (hca.Device.checkSGL): the lists' regions
	// are one of PD 0 with local write (mw), but for a region with none
	// (mr: local read only, so a gather from it would pass). Context 1
	// (MTU 1024, from 000111), held until the above are taken: Rs a READ
	// of 1500 + 1 + 1499 = 3000 B (000111..000113) and Ss a SEND of 20 B
	// (000114).
	mw := p.keys.Register(0, 0x51_0000, 0x10_0000, hca.AccessLocalWrite)
	mr := p.keys.Register(0, 0x55_0000, 0x1000, 0)
	rs := []hca.SGE{{Addr: 0x57_0000 + 17, Length: 1500, LKey: mw.LKey}, {Addr: 0x58_0000 + 63, Length: 1, LKey: mw.LKey},
		{Addr: 0x59_0000 + 2, Length: 1499, LKey: mw.LKey}}
	gateFrom, ackGate = len(run.items), len(run.acks)
	wqe(1, hca.WRRDMARead, 0, 0, true, rs...)
	wqe(1, hca.WRSend, 20, 0x5A_0000, true)
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// r25, Rs's FIRST (000111, 1024 B): all element 0's, bytes 0..1023.
	deliver(1, readRsp(0, 3, 0x000111, 1024, false))
	// n26, a sequence error NAK at Ss (000114): Rs's PSNs lie before it,
	// its MIDDLE and LAST lost: the implied NAK (retry_cnt 3 -> 2). Rs
	// asks for the rest (000112, VA + 1024, 1976 B), Ss goes again.
	deliver(1, reqAck{psn: 0x000114, syn: hca.SynNAKSeq})
	// r27, the MIDDLE (000112, 1024 B, readGot 1024): the list from byte
	// 1024, across both element bounds: element 0's last 476 B (at
	// +1024), element 1's byte, element 2's first 547 B.
	deliver(1, readRsp(1, 3, 0x000112, 1024, true))
	// r28, the LAST (000113, 952 B, readGot 2048): element 2's bytes
	// 547..1498. Rs completes.
	deliver(1, readRsp(2, 3, 0x000113, 952, false))
	// a29, an ACK through 000114: Ss completes.
	deliver(1, reqAck{psn: 0x000114, syn: hca.SynACK})
	// At a fetch and add (000115) whose original value goes to a list of
	// 3 + 5 B: its bytes 0..2 at lanes 62..64 (two beats), 3..7 at lanes
	// 10..14.
	gateFrom, ackGate = len(run.items), len(run.acks)
	wqe(1, hca.WRFetchAdd, 0, 0, true, hca.SGE{Addr: 0x5B_0000 + 62, Length: 3, LKey: mw.LKey}, hca.SGE{Addr: 0x5C_0000 + 10, Length: 5, LKey: mw.LKey})
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// r30, At's atomic ACK: At completes.
	deliver(1, atomicAck(0x000115, 0x2827262524232221, false))
	// Context 2 (MTU 512, from 000204): Sa2 a READ of 300 + 700 B
	// (000204 000205) and Sb2 a READ of 30 elements (sb: 1075 B,
	// 000206..000208), held until the above are taken.
	sb := rspSb2()
	for i := range sb {
		sb[i].LKey = mw.LKey
	}
	gateFrom, ackGate = len(run.items), len(run.acks)
	wqe(2, hca.WRRDMARead, 0, 0, true, hca.SGE{Addr: 0x51_0000 + 5, Length: 300, LKey: mw.LKey}, hca.SGE{Addr: 0x52_0000 + 40, Length: 700, LKey: mw.LKey})
	wqe(2, hca.WRRDMARead, 0, 0, true, sb...)
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// r31..r32, Sa2's FIRST (512 B: element 0's 300 and element 1's
	// first 212, its bound inside a packet and a beat) and LAST (488 B):
	// Sa2 completes.
	deliver(2, readRsp(0, 2, 0x000204, 512, false))
	deliver(2, readRsp(1, 2, 0x000205, 488, true))
	// r33..r35, Sb2's three (512, 512, 51 B): Sb2 completes.
	deliver(2, readRsp(0, 3, 0x000206, 512, true))
	deliver(2, readRsp(1, 3, 0x000207, 512, false))
	deliver(2, readRsp(2, 3, 0x000208, 51, false))
	// Sk a READ of 100 + 50 + 80 B whose middle element's region grants
	// no local write: LOC_PROT_ERR, nothing sent, the context to ERR; Sf
	// a SEND after it, flushed (WR_FLUSH_ERR), unsent.
	gateFrom, ackGate = len(run.items), len(run.acks)
	wqe(2, hca.WRRDMARead, 0, 0, true, hca.SGE{Addr: 0x54_0000, Length: 100, LKey: mw.LKey}, hca.SGE{Addr: 0x55_0000 + 8, Length: 50, LKey: mr.LKey},
		hca.SGE{Addr: 0x56_0000, Length: 80, LKey: mw.LKey})
	wqe(2, hca.WRSend, 10, 0x5D_0000, true)
	run.items[len(run.items)-1].sent = false
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// Bytes past a list's end: the model's sglSlice covers none, so a
	// response carrying more than the list holds writes the list's bytes
	// and drops the rest (hca.Device.scatter), and the READ completes, with
	// success, when readGot >= Length; a WQE of one data segment has no
	// list (its decode gives LocalAddr), so writePayload writes all its
	// bytes from LocalAddr + readGot, past its length too. Context 1 (MTU
	// 1024, from 000116), held until the above are taken: Ro a READ of a
	// list of 700 B at lane 30, 0 B, 500 B at lane 50 and 0 B (ro: 1200 B,
	// 000116 000117); Rp a READ of 10 B at lane 60 and 20 B at lane 0 (rp:
	// 30 B, 000118); Rq a READ of one element, 30 B at lane 0 (000119).
	ro, rp := rspRo(mw.LKey), rspRp(mw.LKey)
	gateFrom, ackGate = len(run.items), len(run.acks)
	wqe(1, hca.WRRDMARead, 0, 0, true, ro...)
	wqe(1, hca.WRRDMARead, 0, 0, true, rp...)
	wqe(1, hca.WRRDMARead, 30, 0x64_0000, true)
	for _, it := range run.items[gateFrom:] {
		it.gate = ackGate
	}
	drain()
	// r36, Ro's FIRST (000116, 1024 B): element 0's 700 B, element 2's
	// first 324. r37, its LAST (000117) of 400 B, not the 176 left: at
	// readGot 1024, element 2's last 176 B, the 224 past the list's end
	// (and its last element of 0 B) not written; readGot 1424 >= 1200, Ro
	// completes.
	deliver(1, readRsp(0, 2, 0x000116, 1024, false))
	deliver(1, readRsp(1, 2, 0x000117, 400, true))
	// r38, Rp's ONLY (000118) of 100 B: 10 B at lane 60, 20 at lane 0, 70
	// dropped; Rp completes.
	deliver(1, readRsp(0, 1, 0x000118, 100, false))
	// r39, Rq's ONLY (000119) of 40 B: all 40 at LocalAddr, 10 past its
	// 30; Rq completes.
	deliver(1, readRsp(0, 1, 0x000119, 40, false))
	// Control: every handshake ready (wr0's too, bit 10), every VL's
	// credit plenty, a WQE or ACK offered whenever one is due.
	for range 3000 {
		run.ctrl = append(run.ctrl, [5]uint64{0x71f, 2048, 2048, 2048, 2048})
	}
	return p
}

// stall replaces the run's control with one that holds every handshake
// back now and then: WQEs, ACKs and responses offered, rd1's ready and
// answers, out_ready, the picks, cpl_ready and wr0's ready, each in 256-cycle phases
// of 10 to 90 % (phaseProb), the credits plenty. The model's replay does
// not depend on the timing, so the run's expectations stay the plan's.
func (p *rspPlan) stall(seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x57a11))
	var ph [8]float64
	p.run.ctrl = p.run.ctrl[:0]
	for c := range 12000 {
		w := [5]uint64{0, 2048, 2048, 2048, 2048}
		for i, b := range []int{0, 1, 2, 3, 4, 8, 9, 10} {
			if r.Float64() < max(phaseProb(r, c, &ph[i]), 0.1) {
				w[0] |= 1 << b
			}
		}
		w[0] |= uint64(r.IntN(4)) << 5 // the VL the pick search starts at
		p.run.ctrl = append(p.run.ctrl, w)
	}
}

// TestRspPlan: the model does in the run what the plan's comments derive,
// so the co-simulation's comparison is against those numbers.
func TestRspPlan(t *testing.T) {
	p := newRspPlan()
	// Context 0: its 6 packets (SEND, WRITE x3, READ request, SEND), then
	// the READ requests of Ra, Rb, Rc.
	assert.Equal(t, []uint32{0xFFFFFE, 0xFFFFFF, 0, 1, 2, 5, 6, 7, 8}, p.psns[0], "context 0")
	// Context 1: A0, S, A1, R, then Rd's request (its 5 PSNs from 104)
	// and A2 at 109.
	assert.Equal(t, []uint32{0x100, 0x101, 0x102, 0x103, 0x104, 0x109}, p.psns[1], "context 1")
	// Context 2: R1, R2, S2 (2 packets), then again after the implied NAK.
	assert.Equal(t, []uint32{0x123456, 0x123458, 0x12345C, 0x12345D, 0x123456, 0x123458, 0x12345C, 0x12345D}, p.psns[2], "context 2")
	// Completions (signaled or not): M0 M1 on r0, M2 on r4, M3 on a5; A0
	// on r6, S A1 on r7, R on r10; R1 on r13, R2 on r17, S2 on a18; Ra Rb
	// Rc on r19..r21, Rd on r26, A2 on r27.
	want := make([]hca.WCStatus, 16)
	assert.Equal(t, want, p.status, "completion statuses (all WCSuccess)")
	// Placed: r0 r2 r4, r6 r7 r10, r11 r12 r13 r14 r15 r16 r17, r19..r27;
	// dropped: x0 r1 r3, r8 r9.
	assert.Equal(t, 22, p.placed, "responses the model accepts")
	assert.Equal(t, 5, p.dropped, "responses the model drops")
	assert.Equal(t, 29, len(p.run.acks), "ACKs and responses")
	// Written to host memory, every placed response with bytes (R's ONLY
	// of 0 B writes nothing): r0 r2 r4 M2's 700 B, r6 r7 A0's and A1's 8,
	// r11 and r14 the same 512 B at R2's start, r12 r13 R1's 1024,
	// r15..r17 the rest of R2's 2048, r19..r21 Ra Rb Rc's 1 + 63 + 65,
	// r22..r26 Rd's 4099, r27 A2's 8: 21 writes, the buffers disjoint.
	assert.Equal(t, 21, p.written, "responses the model writes")
	assert.Len(t, p.mem, 700+8+8+1024+2048+1+63+65+4099+8, "bytes written")
}

// TestRspRetryPlan: the same for newRspRetryPlan.
func TestRspRetryPlan(t *testing.T) {
	p := newRspRetryPlan()
	// Context 0: Re Sa Rf Rg Sb, again after n1 with Re's request for the
	// rest at 00000A, then Rg's for the rest at 000012 and Sb after n11.
	assert.Equal(t, []uint32{0x9, 0xC, 0xD, 0x11, 0x14, 0xA, 0xC, 0xD, 0x11, 0x14, 0x12, 0x14}, p.psns[0], "context 0")
	// Context 1: Ha Sx Ry Az Sw, and after r14 all but Sx again; Rs and
	// Ss, after n26 Rs's request for the rest at 000112 and Ss again,
	// then At; Ro (1200 B: two PSNs), Rp, Rq.
	assert.Equal(t, []uint32{0x10A, 0x10B, 0x10C, 0x10F, 0x110, 0x10A, 0x10C, 0x10F, 0x110, 0x111, 0x114, 0x112, 0x114, 0x115,
		0x116, 0x118, 0x119}, p.psns[1], "context 1")
	// Context 2: Hr, Wy (2 packets), Sz, and after a22 Hr and Sz again;
	// Sa2 and Sb2 (Sk and Sf never sent).
	assert.Equal(t, []uint32{0x200, 0x201, 0x202, 0x203, 0x200, 0x203, 0x204, 0x206}, p.psns[2], "context 2")
	// Re on r3, Sa on a4, Rf on r6; Rg failed and Sb flushed on n13; Ha
	// Sx on r18, Ry Az on r19, Sw on a20; Hr Wy on r23, Sz on a24; Rs on
	// r28, Ss on a29, At on r30, Sa2 on r32, Sb2 on r35; Sk's
	// LOC_PROT_ERR and Sf's WR_FLUSH_ERR at their decode; Ro on r37
	// (readGot 1424 past its 1200: success), Rp on r38, Rq on r39.
	assert.Equal(t, rspRetryStatus(), p.status, "completion statuses")
	// Placed: r0 r2 r3 r5 r6 r8 r9, r14..r19, r23, r25 r27 r28 r30..r35,
	// r36..r39; dropped: r7 r10 r12.
	assert.Equal(t, 14+9+4, p.placed, "responses the model accepts")
	assert.Equal(t, 3, p.dropped, "responses the model drops")
	assert.Equal(t, 25+11+4, len(p.run.acks), "ACKs and responses")
	// Written: Re's 256 + 256 + 188, Rf's 256 + 744, Rg's 256 + 100,
	// Ry's first 1024 twice (r14 and r16 at the same addresses, r16's
	// bytes last) and its other two 1024, Az's and Ha's 8, Hr's 512: 14
	// writes, the buffers disjoint; then Rs's 3000 in three, At's 8,
	// Sa2's 1000 in two, Sb2's 1075 in three; Ro's 1200 (the 224 B past
	// its list not), Rp's 30 (70 not), Rq's 40 (10 past its length).
	assert.Equal(t, 14+9+4, p.written, "responses the model writes")
	assert.Equal(t, 700+1000+356+3072+8+8+512+3000+8+1000+1075+1200+30+40, len(p.mem), "bytes written")
}

// rspRo and rspRp are Ro's and Rp's lists (newRspRetryPlan): 700 B at
// lane 30, 0 B, 500 B at lane 50, 0 B; 10 B at lane 60, 20 B at lane 0.
func rspRo(lkey uint32) []hca.SGE {
	return []hca.SGE{{Addr: 0x5E_0000 + 30, Length: 700, LKey: lkey}, {Addr: 0x5E_8000, Length: 0, LKey: lkey},
		{Addr: 0x5F_0000 + 50, Length: 500, LKey: lkey}, {Addr: 0x5F_8000 + 7, Length: 0, LKey: lkey}}
}

func rspRp(lkey uint32) []hca.SGE {
	return []hca.SGE{{Addr: 0x60_0000 + 60, Length: 10, LKey: lkey}, {Addr: 0x60_8000, Length: 20, LKey: lkey}}
}

// rspSb2 is Sb2's list (newRspRetryPlan), its L_Keys 0: 30 elements of
// 0, 17, 64, 1, 100 and 33 B in turn (5 x 215 = 1075 B), element i at
// lane 11i mod 64 of its own 256 bytes.
func rspSb2() []hca.SGE {
	sb := make([]hca.SGE, hca.MaxSendSGE)
	for i := range sb {
		sb[i] = hca.SGE{Addr: 0x53_0000 + uint64(i)*0x100 + uint64(i*11%64), Length: []uint32{0, 17, 64, 1, 100, 33}[i%6]}
	}
	return sb
}

// rspRetryStatus is newRspRetryPlan's completions' statuses, in order:
// Re Sa Rf, Rg's REM_INV_REQ_ERR and Sb's WR_FLUSH_ERR, Ha Sx Ry Az Sw,
// Hr Wy Sz, Rs Ss At Sa2 Sb2 (every WQE signaled), Sk's LOC_PROT_ERR and
// Sf's WR_FLUSH_ERR, Ro Rp Rq.
func rspRetryStatus() []hca.WCStatus {
	w := append(make([]hca.WCStatus, 3), hca.WCRemInvReqErr, hca.WCWRFlushErr)
	w = append(w, make([]hca.WCStatus, 8+5)...)
	w = append(w, hca.WCLocProtErr, hca.WCWRFlushErr)
	return append(w, make([]hca.WCStatus, 3)...)
}

// scatterBeats is the wr0 writes and beats of n response bytes placed
// from byte off of list sgl: a write per part (an element's bytes in
// the range; an element of none, or of 0 bytes, writes nothing), of
// ceil((a mod 64 + len) / 64) beats for a part of len bytes at a.
func scatterBeats(sgl []hca.SGE, off, n int) (writes, beats int) {
	start := 0
	for _, e := range sgl {
		end := start + int(e.Length)
		if off < end && n > 0 {
			take := min(end-off, n)
			a := int(e.Addr%BlockBytes) + off - start
			writes, beats = writes+1, beats+(a%BlockBytes+take+BlockBytes-1)/BlockBytes
			off, n = off+take, n-take
		}
		start = end
	}
	return writes, beats
}

// rspCase is a run of a response plan: unmutated (file ""), or file's old
// text replaced by new, which must fail it.
type rspCase struct{ name, file, old, new string }

// runRspCases runs each case of plan, in parallel, and check on each
// unmutated run's result; a name ending in "stalled" runs with the
// handshakes held back (rspPlan.stall), with cosimSeeds[0], or with
// cosimSeeds[k] for a name ending in "stalled, seed k" (a short plan
// whose completions the first seed's stalls all miss).
func runRspCases(t *testing.T, plan func() *rspPlan, cases []rspCase, check func(t *testing.T, p *rspPlan, res *retryResult)) {
	dir := t.TempDir()
	for _, m := range cases {
		t.Run(strings.NewReplacer(" ", "_", ",", "").Replace(m.name), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := plan()
			stalled := strings.HasSuffix(m.name, "stalled")
			if stalled {
				p.stall(cosimSeeds[0])
			}
			if i := strings.LastIndex(m.name, "stalled, seed "); i >= 0 {
				k, err := strconv.Atoi(m.name[i+len("stalled, seed "):])
				require.NoError(t, err, "the case's seed")
				stalled = true
				p.stall(cosimSeeds[k])
			}
			d := filepath.Join(dir, strings.NewReplacer(" ", "_", ",", "").Replace(m.name))
			require.NoError(t, os.MkdirAll(d, 0o755))
			res := runRetryCase(t, ctx, d, p.retryPlan, m.file, m.old, m.new, "the response co-simulation passes a requester with "+m.name)
			if res == nil {
				return
			}
			for q := range p.psns {
				assert.Equal(t, p.psns[q], res.psns[q], "context %d's PSNs", q)
			}
			check(t, p, res)
			if stalled {
				// The stalls reached the completions: some waited for
				// cpl_ready (the all-ready run's never do).
				assert.Positive(t, res.cplHeld, "cycles a completion waited for cpl_ready")
			} else {
				assert.Zero(t, res.cplHeld, "cycles a completion waited for cpl_ready with it always 1")
			}
		})
	}
}

// TestRequesterResponseCosim: hca_requester completes READs and atomics
// on their responses as the model does, and drops or retries on those the
// model drops or retries on; each mutant of the response logic fails.
func TestRequesterResponseCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	f, rx := "hca_requester.v", "hca_rx_ack.v"
	runRspCases(t, newRspPlan, []rspCase{
		{name: "unmutated"},
		{name: "unmutated, stalled"},
		{"responses not handed to the requester", rx, "wire         to_req = is_ack || rd_rsp || at_ack;", "wire         to_req = is_ack;"},
		{"a response out of sequence acknowledging what is before it", f, "h_cover  = h_acked && (!e_rsp || e_ok) && e_lim", "h_cover  = h_acked && e_lim"},
		{"a response out of sequence taken", f, "d_off[31:0] == h_got && (e_rrd || !oq_done[h_ix]);", "1'b1;"},
		{"a response of the wrong kind taken", f, "wire             h_kind   = e_rrd ? h_op == 3'd4 : h_op != 3'd4;", "wire             h_kind   = 1'b1;"},
		{"the scan stopping at the head", f, "else if (!s_end) e_sp <= e_sp + {{(PW-1){1'b0}}, 1'b1};", "else if (!s_end) e_sp <= e_sp;"},
		{"a READ's responses not counted", f, "oq_got[m_ix] <= e_rsp ? rg_sum[31:0] :", "oq_got[m_ix] <= e_rsp ? e_mgot :"},
		{"no implied NAK on a response", f, "((e_rnr || e_rsp || e_incl) && r_impl)", "((e_rnr || e_incl) && r_impl)"},
		// The payload.
		{"a MIDDLE's payload taken 24 bytes in", rx, "6'd20:   blk = {prev[351:0], nxt[511:352]};", "6'd20:   blk = {prev[319:0], nxt[511:320]};"},
		{"a GRH response's payload from its first beat", rx, "wire [6:0]   p_from  = p_late ? 7'd2 : 7'd1;", "wire [6:0]   p_from  = 7'd1;"},
		{"a bad packet's blocks kept", rx, "wire         pd_drop = done && !c_sop && p_rdp && !ok_now && p_blk != 7'd0;", "wire         pd_drop = 1'b0;"},
		{"a READ completing before its payload is written", f, "h_cover || (h_fin && !d_busy) || h_dn;", "h_cover || h_fin || h_dn;"},
		{"a response no message takes written", f, "wire             d_take   = m_take && e_any;", "wire             d_take   = e_any;"},
		{"the payload at the READ's start whatever came before", f, "sc_skip <= e_rrd ? e_mgot : 32'd0;", "sc_skip <= 32'd0;"},
		// The walk not run for a response: the SENDs and WRITEs before it
		// are only marked done, and retired by the next job's walk, their
		// CQEs a job late (the replay's not-late check at each take).
		{"a response acknowledging nothing before it", f, "h_cover  = h_acked && (!e_rsp || e_ok) && e_lim", "h_cover  = h_acked && !e_rsp && e_lim"},
		// Byte enables and the realignment to the host address.
		{"byte enables ignored (whole beats written)", f, "assign wr_be    = d_be_f & d_be_l;", "assign wr_be    = {64{1'b1}};"},
		{"the last beat's mask one byte long", f, "~({64{1'b1}} >> ({1'b0, d_e} + 7'd1))", "~({64{1'b1}} >> ({1'b0, d_e} + 7'd2))"},
		{"the first beat's mask from lane 0", f, "d_first ? d_gs :", "d_first ? {64{1'b1}} :"},
		{"the rotation's 1-byte stage skipped", f, "d_r0     = d_ra[0] ? {d_cur[7:0],   d_cur[511:8]}   : d_cur;", "d_r0     = d_cur;"},
		{"the lanes below s from this block, not the block before", f, "d_ge[63-dk] ? d_rot[511-8*dk -: 8] : d_prev[511-8*dk -: 8];", "d_rot[511-8*dk -: 8];"},
		{"the beat the shift spills into not written", f, "d_bt    <= pc_sn[12:6];", "d_bt    <= pc_sn[12:6] - {6'd0, pc_e < pc_r};"},
		{"a last block begun in the packet's last beat not pushed", rx, "wire         t_need  = done && ok_now", "wire         t_need  = 1'b0 && ok_now"},
		// An atomic's original value.
		{"an atomic's value byte-swapped (as on the wire)", f, "d_atm ? {e_orig[7:0], e_orig[15:8], e_orig[23:16], e_orig[31:24],\n                                         e_orig[39:32], e_orig[47:40], e_orig[55:48], e_orig[63:56], 448'd0}", "d_atm ? {e_orig, 448'd0}"},
		{"an atomic's value 8 bytes past its address", f, "d_addr  <= sc_a;", "d_addr  <= sc_a + {60'd0, d_atm, 3'd0};"},
		{"an atomic's value never written", f, "e_drn    <= (a_rrd && ack_blk != 7'd0) || (a_rsp && !a_rrd);", "e_drn    <= a_rrd && ack_blk != 7'd0;"},
	}, func(t *testing.T, _ *rspPlan, res *retryResult) {
		// The CQEs: the signaled completions of the plan (M0 M2 M3, A0
		// S A1 R, R2 S2, Ra Rb Rc Rd A2: M1 and R1 are unsignaled), each
		// success.
		assert.Equal(t, make([]hca.WCStatus, 14), res.status, fmt.Sprintf("completion statuses on cpl_* (%d)", len(res.status)))
		// wr0, a write per response written, ceil((s + n) / 64) beats at
		// lane s = address mod 64 for n bytes: M2's three (s 0: 256, 256,
		// 188 B: 4 + 4 + 3), A0 and A1 (1 + 1), r11 (R2's FIRST behind
		// R1: the model writes it, and again with r14), R1's two and R2's
		// four (512 B at s 0: 8 each), Ra (s 5, 1 B: 1), Rb (s 5, 63 B:
		// 2), Rc (s 63, 65 B: 2), Rd's four of 1024 B at s 60 (17 each)
		// and its LAST of 3 (1), A2 (s 56: 1).
		assert.Equal(t, 3+2+7+3+5+1, res.writes, "wr0 writes")
		assert.Equal(t, (4+4+3)+(1+1)+7*8+(1+2+2)+(4*17+1)+1, res.wbeats, "wr0 beats")
	})
}

// TestRequesterResponseRetryCosim: hca_requester counts a READ's bytes as
// the model's readGot, resends a READ for the rest, and takes responses
// behind an unanswered READ or atomic as the model does; each mutant of
// that logic fails.
func TestRequesterResponseRetryCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	f := "hca_requester.v"
	runRspCases(t, newRspRetryPlan, []rspCase{
		{name: "unmutated"},
		{name: "unmutated, stalled"},
		// Payload lengths summed (readGot), and a READ retried after part
		// of its responses asking for the rest.
		{"a response's bytes counted as an MTU", f, "oq_got[m_ix] <= e_rsp ? rg_sum[31:0] :", "oq_got[m_ix] <= e_rsp ? e_mgot + (32'd128 << ctx_mtu[e_ctx]) :"},
		{"the sequence checked in whole MTUs (readGot / MTU)", f, "d_off[31:0] == h_got &&",
			"{8'd0, n_from} == (h_got >> ({2'b0, ctx_mtu[e_ctx]} + 5'd7)) &&"},
		{"a READ completing only at its last PSN", f, "m_fin    = !e_rrd || rg_sum >= {1'b0, e_mlen};", "m_fin    = !e_rrd || h_d == 24'd0;"},
		// (The READ resent whole, rp_got 0, is the three below at once.)
		{"a resent READ from its first PSN", f, "m_psn       <= rp_ent[47:24] + rp_gpsn[23:0];", "m_psn       <= rp_ent[47:24];"},
		{"a resent READ's VA not moved", f, "m_raddr     <= rp_wqe[319:256] + {32'd0, rp_got};", "m_raddr     <= rp_wqe[319:256];"},
		{"a resent READ's DMA length whole", f, "m_length    <= rp_len - rp_got;", "m_length    <= rp_len;"},
		// Responses behind an unanswered READ or atomic.
		{"a response behind the head not taken", f, "m_take   = e_rsp && e_ok && e_lim != {IF_W{1'b0}};", "m_take   = e_rsp && e_ok && e_lim != {IF_W{1'b0}} && e_sp == e_hd;"},
		{"the SENDs and WRITEs before it not marked done", f, "m_mark[k] = m_rng && k[QPN_W+OQ_W-1:OQ_W] == e_ctx", "m_mark[k] = 1'b0 && k[QPN_W+OQ_W-1:OQ_W] == e_ctx"},
		{"a done message sent again", f, "wire             rp_dn    = oq_done[rp_ix];", "wire             rp_dn    = 1'b0;"},
		{"a done message not retired at the head", f, "h_ok     = h_cover || (h_fin && !d_busy) || h_dn;", "h_ok     = h_cover || (h_fin && !d_busy);"},
		{"a READ behind the head keeping no bytes", f, "h_got    = oq_gv[h_ix] ? oq_got[h_ix] : 32'd0;", "h_got    = (oq_gv[h_ix] && h_ptr == e_hd) ? oq_got[h_ix] : 32'd0;"},
		{"a READ resent behind the head keeping its bytes", f, "if (rp_take && rp_ptr != rp_hd && oq_rd[rp_ix]) oq_gv[rp_ix] <= 1'b0;", "if (1'b0) oq_gv[rp_ix] <= 1'b0;"},
		// An ACK past an unanswered READ.
		{"no implied NAK on an ACK", f, "((e_rnr || e_rsp || e_incl) && r_impl)", "((e_rnr || e_rsp) && r_impl)"},
		{"an old ACK's scan passing the ring (marking every message sent)", f, "wire             s_stop   = !h_d[23];", "wire             s_stop   = s_hold;"},
		{"an ACK not marking the message at its PSN done", f, "if (m_rng && m_in && !e_rsp && e_incl && e_meq) oq_done[m_ix] <= 1'b1;", "if (1'b0) oq_done[m_ix] <= 1'b1;"},
		// Scatter lists: the response's parts at their elements.
		{"every element's part at the first element's address", f, "wire [63:0]      sc_a     = sc_el[63:0] + {32'd0, sc_skip};",
			"wire [63:0]      sc_a     = sg_mem[{sc_ix, 5'd0}][63:0] + {32'd0, sc_skip};"},
		{"an element taking the whole payload", f, "sc_take  = (sc_one || sc_t0 > sc_r32) ? sc_r32 : sc_t0;", "sc_take  = sc_r32;"},
		{"a zero-byte element written", f, "sc_past  = !sc_end && sc_skip >= sc_len && !sc_one;", "sc_past  = !sc_end && sc_skip > sc_len && !sc_one;"},
		// Bytes past a list's end.
		{"a list's last element taking the bytes past its end (main's)", f, "sc_take  = (sc_one || sc_t0 > sc_r32) ? sc_r32 : sc_t0;",
			"sc_take  = (sc_one || {1'b0, sc_e} + 6'd1 >= sc_n || sc_t0 > sc_r32) ? sc_r32 : sc_t0;"},
		{"the blocks past a list's end not dropped", f, "sc_drop  = d_atm ? 7'd0 : e_blk - sc_took[6:0];", "sc_drop  = 7'd0;"},
		{"the blocks a list's pieces took counted as floor(bytes / 64)", f, "sc_drop  = d_atm ? 7'd0 : e_blk - sc_took[6:0];", "sc_drop  = d_atm ? 7'd0 : e_blk - sc_p[12:6];"},
		{"a single element dropping the bytes past its length", f, "wire             sc_one   = sc_n <= 6'd1;", "wire             sc_one   = 1'b0;"},
		{"the block before not rotated again at a bound inside it", f, "d_prime <= pc_q != 6'd0;", "d_prime <= 1'b0;"},
		{"a part's first beat from a new block when its first is the part before's", f, "d_reuse <= pc_q != 6'd0 && sc_a[5:0] >= pc_q;", "d_reuse <= 1'b0;"},
		{"a READ's elements neither kept nor key-checked (main's)", f, "wire             s_kept   = s_ok_ctx;", "wire             s_kept   = s_ok_ctx && !is_rdat;"},
		{"a scatter's L_Key checked for local read", f, "assign kc_req_need   = {3'd0, is_rdat};", "assign kc_req_need   = 4'd0;"},
	}, func(t *testing.T, _ *rspPlan, res *retryResult) {
		assert.Equal(t, rspRetryStatus(), res.status, "completion statuses on cpl_*")
		// wr0, ceil((s + n) / 64) beats a write: Re's three at s = 10
		// (each at LocalAddr + readGot, readGot a multiple of 64: 256 B
		// 5, 256 B 5, 188 B 4), Rf's two at s = 33 (256 B 5, 744 B
		// ceil(777 / 64) = 13), Rg's two at s = 7 (256 B 5, 100 B 2); Ry's
		// four of 1024 B at s = 20 (17 each), Az's value at lane 8 and
		// Ha's at lane 0 (1 each); Hr's 512 B at s = 0 (8).
		// The lists, a write per element part: Rs's FIRST one part
		// of 1024 B at s = 17 (17), its MIDDLE element 0's last 476 B at s
		// = 17 (8), element 1's byte at lane 63 (1), element 2's first 547 B
		// at s = 2 (9), its LAST 952 B at s = (2 + 547) mod 64 = 37 (16);
		// At's 3 B at lane 62 (2) and 5 B at lane 10 (1); Sa2's FIRST 300 B
		// at s = 5 (5) and 212 B at s = 40 (4), its LAST 488 B at s = (40 +
		// 212) mod 64 = 60 (9); Sb2's three by scatterBeats (the same rule
		// over its 30 elements).
		sbw, sbb := 0, 0
		for _, r := range [][2]int{{0, 512}, {512, 512}, {1024, 51}} {
			w, b := scatterBeats(rspSb2(), r[0], r[1])
			sbw, sbb = sbw+w, sbb+b
		}
		// Past a list's end, by scatterBeats too (it covers no byte past
		// the list): Ro's FIRST element 0's 700 B at s = 30 (12) and element
		// 2's 324 B at s = 50 (6), its LAST element 2's last 176 B at s =
		// (50 + 324) mod 64 = 54 (4); Rp's 10 B at s = 60 (2) and 20 B at
		// s = 0 (1); Rq, one element, all 40 B at s = 0 (1).
		pw, pb := 1, 1 // Rq
		for _, r := range []struct {
			sgl    []hca.SGE
			off, n int
		}{{rspRo(0), 0, 1024}, {rspRo(0), 1024, 400}, {rspRp(0), 0, 100}} {
			w, b := scatterBeats(r.sgl, r.off, r.n)
			pw, pb = pw+w, pb+b
		}
		require.Equal(t, [2]int{2 + 1 + 2 + 1, 12 + 6 + 4 + 2 + 1 + 1}, [2]int{pw, pb}, "scatterBeats against the comment's count")
		assert.Equal(t, 3+2+2+4+2+1+(1+3+1)+2+(2+1)+sbw+pw, res.writes, "wr0 writes")
		assert.Equal(t, (5+5+4)+(5+13)+(5+2)+4*17+2+8+(17+8+1+9+16)+(2+1)+(5+4+9)+sbb+pb, res.wbeats, "wr0 beats")
	})
}
