package rtl

import (
	"bufio"
	"context"
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

// ---- hca_responder <-> hca.Responder.Receive, FlushAck ----
//
// A run is a stream of RC request packets (RDMA WRITE FIRST/MIDDLE/LAST/
// ONLY, and the wrong ones a responder must refuse) for the contexts of
// respQPs QPs, with context writes between them. It is made with the model
// in step: each packet goes into the QP's hca.Responder (Receive, the
// R_Key checked by hca.KeyTable.CheckRemote in the QP's PD, as
// hca.QP.CheckRKey does), whose action the run carries out as
// hca.Device.respond does: RespAction.Write's payload into a host memory of
// bytes, RespAction.Ack's ACK or NAK, and after a packet with no further
// one waiting (the stream's gap flag) FlushAck's coalesced ACK. The
// requester's side of the stream reads the model's expected PSN to resend
// go-back-N after a loss, as a requester does after the sequence NAK.
// The same packets go to hca_responder in respTB, its R_Key checks through a
// real hca_key_check reading the MPT entries hca.KeyTable.Entry gives;
// the log of its wr0 beats (byte enables applied to a host memory of its
// own), its ACKs and NAKs and its counters must be the model's.

const (
	respQPNW = 2 // hca_responder's QPN_W: 4 contexts
	respQPs  = 1 << respQPNW
)

// respPkt is one entry of the stream: a request packet or a context write.
type respPkt struct {
	cfg  bool // a context write: qpn, psn (the expected PSN), pd, rnr
	post bool // a receive WQE posted to qpn's queue: idx, va (its address), dlen (length), rkey (L_Key)
	// release: the oldest READ reply held (respRun.holdFins) has its last
	// response sent now: the testbench gives it back on fin_* (kind 3)
	release bool
	idx     uint32 // post: the WQE's index
	nsge    int    // post: its elements (hca.DecodeRecvWQE's: 0 for mlx5's empty list)
	// elem: element k of the list of WQE idx posted to qpn (va, dlen,
	// rkey its address, length and L_Key; kind 4)
	elem   bool
	k      int
	imm    uint32 // ImmDt
	rnr    int    // cfg: the QP's min_rnr_timer
	gap    bool   // no packet waits behind this one (the flush point)
	qpn    uint32 // BTH.DestQP
	psn    uint32
	op     ib.Opcode
	ackReq bool
	va     uint64 // RETH
	rkey   uint32
	dlen   uint32
	swap   uint64 // AtomicETH: swap or add data (va, rkey: its VA and R_Key)
	cmp    uint64 // AtomicETH: compare data
	pd     uint32 // cfg: the QP's PD
	mtu    int    // cfg: the QP's path MTU, bytes
	pay    []byte // the payload
}

// respAck is an ACK or NAK as hca_responder gives it: its QP's QPN, PSN,
// AETH syndrome and MSN; or a READ reply (rd bit 0; bit 1: a replay from
// inside the READ, MIDDLE ... LAST), its responses from psn, n bytes at va,
// the MSN their AETH carries.
type respAck struct {
	qpn, psn, syn, msn uint32
	rd                 uint32
	va                 uint64
	n                  uint32
}

// respCounts are hca_responder's counters.
type respCounts struct{ acks, naks, dup, seqDrop, errDrop, noQP, todo int }

// respQP is one QP of the run: the model's responder and the requester's
// view of it.
type respQP struct {
	qpn  uint32
	pd   uint32
	mtu  int
	resp *hca.Responder
	next uint32     // the requester's next PSN
	msg  []*respPkt // the message being sent, its packets
	pos  int        // the next of msg to send
	lost bool       // a packet of msg was lost: resend from the expected PSN at its end
	past []*respPkt // READ requests sent (the last 6), for duplicates
	// The receive queue (respsend runs): the WQEs posted and not taken,
	// the next one's index, and whether an RNR NAK asks for a post before
	// the resend.
	rq      []hca.RecvWQE
	rqIdx   uint32
	rnrPost bool
}

// respRun is one run: its key table, its QPs with their models, the
// stream, and what the model did with it (bytes, ACKs, counts).
type respRun struct {
	r        *rand.Rand
	coalesce int
	table    hca.KeyTable
	regions  []hca.MR
	pds      []uint32
	qps      [respQPs]*respQP
	stream   []*respPkt
	mem      map[uint64]byte // the model's host memory: the bytes written
	acks     []respAck
	// ackAfter[i]: the packets written before ACK i went (its own too).
	ackAfter []int
	writes   int
	want     respCounts
	// Coverage of the model's decisions.
	byKind   map[string]int
	blocks   int
	cfg      *hca.Config
	wantGap  bool // the next packet closes with a gap (a context write follows)
	cfgAfter int  // a context to rewrite after the next gap, -1 none
	// noSend: no SEND inside a WRITE (the wired runs without SENDs,
	// cosim_respwire_test.go, which keep the stream they had when
	// hca_rx_ack handed only RDMA WRITEs to the responder).
	noSend bool
	// reads: RDMA READ requests among the WRITEs (newRespRunReads), their
	// regions readRegions (REMOTE_READ, never written), host memory there
	// respMemByte's pattern.
	reads       bool
	readRegions []hca.MR
	// out is the responder's packets in the model's order (its response
	// queue, hca.Device.respond: the ACK or NAK, the READ reply's
	// responses, then the flushed ACK), with the response payloads.
	out []respOutPkt
	// reads of the READ replies: each response's payload address and
	// bytes, in order (the responder's host reads).
	readAddrs [][2]uint64
	// sends: SENDs and WRITEs with immediate among the WRITEs, receive
	// WQEs posted before them (newRespRunSends); cqes the receive
	// completions the model made, cqeAfter the packets written before each.
	sends bool
	// lists: half the receive WQEs posted are lists of 2 to 32 elements
	// (newRespRunLists; their draws only in such runs).
	lists        bool
	localRegions []hca.MR
	cqes         []respCQE
	cqeAfter     []int
	// abase: the testbench's atomic memory, [abase, abase + 512): bytes
	// respMemByte's pattern until written (atomics only go there).
	abase uint64
	// atomics: FETCH_ADD and CMP_SWAP requests among the READs and WRITEs
	// (newRespRunAtomics), into atomRegions (REMOTE_ATOMIC, one per PD,
	// 128 bytes each inside the testbench's atomic memory).
	atomics     bool
	atomRegions []hca.MR
	// atomReads: each atomic executed, the address it reads and writes
	// (the responder's read of its block: the wired runs check them).
	atomReads []uint64
	// holdFins: a READ reply's responses are not sent when it starts
	// (hca.Responder.ReadResponseSent waits) but at a release entry
	// (respRun.release), and the testbench (HOLD 1) gives its last
	// response's fin_* back to hca_responder only then; else each reply
	// is sent whole at once and its fin_* follows its take on ack_*.
	holdFins bool
	held     []respHeld
	// fins: the model's ReadResponseSent of each READ reply's last
	// response, in order (not with holdFins): what hca_ack_tx gives back
	// on fin_* (the wired runs check them, respWire.checkFins).
	fins []respFin
}

// respFin is the model's ReadResponseSent(res, psn) for a READ reply's
// last response on QP qpn, sent as the responder's packet out[out]. The
// model calls it for every response as the port takes it
// (hca.Device.trySend); only the last one's can take the resource out of
// use (rdAtomicRes.inUse: when its PSN is the READ's last, sentTo covers
// the READ), and hca_ack_tx reports that one alone, at that response's
// pick (hca_responder compares the PSN with the READ's last).
type respFin struct {
	qpn uint32
	res int
	psn uint32
	out int // its index in respRun.out
}

// respHeld is a READ reply whose responses are not sent yet: its QP, its
// resource and their PSNs.
type respHeld struct {
	q    *respQP
	slot int
	psns []uint32
}

// release sends the oldest held reply's responses (ReadResponseSent) and
// puts a release entry in the stream: the testbench gives its fin_* back.
func (run *respRun) release() {
	h := run.held[0]
	run.held = run.held[1:]
	for _, psn := range h.psns {
		h.q.resp.ReadResponseSent(h.slot, psn)
	}
	run.stream = append(run.stream, &respPkt{release: true})
}

// respCQE is a receive completion as hca_responder gives it on rc_*: the
// QPN, hca.RespAction's RecvOpcode, RecvStatus, the WQE's index (16 bits),
// RecvLen and Imm.
type respCQE struct{ qpn, op, status, idx, n, imm uint32 }

// respOutPkt is one packet the responder sends: an ACK/NAK (ack) or a READ
// response (rsp, its payload in it).
type respOutPkt struct {
	ack respAck
	rsp *ib.Packet
}

// respMemByte is host memory's byte at a in the READ regions: a pattern
// the testbenches compute the same way (the XOR of the address's four
// low bytes, then 0xA5), so every byte depends on its address.
func respMemByte(a uint64) byte {
	return byte(a) ^ byte(a>>8) ^ byte(a>>16) ^ byte(a>>24) ^ 0xA5
}

// newRespRunReads is newRespRun with READ requests: three regions with
// REMOTE_READ only, one per PD, away from the WRITE regions (their random
// draws after the others', so newRespRun's runs are unchanged), and
// maxRdAtomic responder resources per QP.
func newRespRunReads(seed uint64, coalesce, maxRdAtomic int) *respRun {
	run := newRespRun(seed, coalesce)
	run.reads = true
	run.cfg.MaxRdAtomic = maxRdAtomic
	for i := range 3 {
		base := uint64(0x3_0000_0000) + uint64(i)<<28 + uint64(run.r.IntN(1<<12))<<12
		run.readRegions = append(run.readRegions, run.table.Register(run.pds[i], base, uint64(16384+run.r.IntN(1<<14)), hca.AccessRemoteRead))
	}
	return run
}

// newRespRun makes the key table: regions in three PDs, most with
// REMOTE_WRITE, one without (access denied), one deregistered.
func newRespRun(seed uint64, coalesce int) *respRun {
	run := &respRun{r: rand.New(rand.NewPCG(seed, 0x7e57)), coalesce: coalesce, mem: map[uint64]byte{},
		byKind: map[string]int{}, cfgAfter: -1}
	c := hca.Defaults()
	run.cfg = &c
	run.cfg.AckCoalesce = coalesce
	for range 3 {
		run.pds = append(run.pds, run.r.Uint32()|1)
	}
	for i := range 10 {
		access := hca.AccessRemoteWrite | hca.AccessLocalWrite
		if i == 8 {
			access = hca.AccessRemoteRead // no REMOTE_WRITE
		}
		base := uint64(0x10000+run.r.IntN(1<<16)) << 12
		if i == 3 {
			base |= 1 << 47 // high address bits
		}
		run.regions = append(run.regions, run.table.Register(run.pds[i%3], base, uint64(16384+run.r.IntN(1<<16)), access))
	}
	run.table.Deregister(run.regions[9].LKey)
	return run
}

// config writes context slot with a new QP (a new QPN half the time) at a
// random PSN near the wrap now and then.
func (run *respRun) config(slot int) {
	r := run.r
	q := &respQP{qpn: uint32(r.IntN(1<<22))<<respQPNW | uint32(slot), pd: run.pds[r.IntN(3)], mtu: []int{256, 512, 1024, 4096}[r.IntN(4)]}
	if old := run.qps[slot]; old != nil && r.IntN(2) == 0 {
		q.qpn = old.qpn
	}
	q.next = r.Uint32() & 0xffffff
	if r.IntN(3) == 0 {
		q.next = 0xffffff - uint32(r.IntN(8)) // the PSN wraps inside the run
	}
	q.resp = hca.NewResponder(run.cfg, q.mtu, q.next)
	if run.sends {
		q.resp.MinRNRTimer = r.IntN(32) // the QP's own (ibv_modify_qp's min_rnr_timer)
	}
	run.qps[slot] = q
	run.stream = append(run.stream, &respPkt{cfg: true, qpn: q.qpn, psn: q.next, pd: q.pd, mtu: q.mtu, rnr: q.resp.MinRNRTimer})
}

// region picks one of pd's regions with REMOTE_WRITE (0..7: each PD has
// two or three).
func (run *respRun) region(pd uint32) hca.MR {
	for {
		mr := run.regions[run.r.IntN(8)]
		if mr.PD == pd {
			return mr
		}
	}
}

// message builds a WRITE of n bytes at va with rkey into q.msg: FIRST
// (RETH), MIDDLE, LAST at q.mtu bytes each, or ONLY; AckReq on the last
// packet and now and then on others.
func (run *respRun) message(q *respQP, va uint64, rkey, n uint32) {
	r := run.r
	pk := max(1, (int(n)+q.mtu-1)/q.mtu)
	q.msg, q.pos, q.lost = nil, 0, false
	for i := range pk {
		p := &respPkt{qpn: q.qpn, psn: (q.next + uint32(i)) & 0xffffff, ackReq: i == pk-1 || r.IntN(4) == 0}
		switch {
		case pk == 1:
			p.op = ib.RDMAWriteOnly
		case i == 0:
			p.op = ib.RDMAWriteFirst
		case i == pk-1:
			p.op = ib.RDMAWriteLast
		default:
			p.op = ib.RDMAWriteMiddle
		}
		if i == 0 {
			p.va, p.rkey, p.dlen = va, rkey, n
		}
		plen := min(q.mtu, int(n)-i*q.mtu)
		p.pay = make([]byte, max(plen, 0))
		for k := range p.pay {
			p.pay[k] = byte(r.Uint32())
		}
		q.msg = append(q.msg, p)
	}
	q.next = (q.next + uint32(pk)) & 0xffffff
}

// newMessage starts a message on q: a good WRITE mostly, else one whose
// R_Key check fails (each rule), a zero-length one with a bad key (not
// checked), or a wrong opcode.
func (run *respRun) newMessage(q *respQP) {
	r := run.r
	if run.atomics && r.IntN(4) == 0 {
		run.newAtomic(q)
		return
	}
	if run.reads && r.IntN(3) == 0 {
		run.newRead(q)
		return
	}
	if run.sends && r.IntN(2) == 0 {
		run.newSend(q)
		return
	}
	mr := run.region(q.pd)
	n := uint32(r.IntN(3*q.mtu + 1))
	if r.IntN(6) == 0 {
		n = uint32(r.IntN(200))
	}
	off := uint64(r.IntN(int(mr.Length) - int(n) + 1))
	va, rkey := mr.Addr+off, mr.RKey
	switch x := r.IntN(60); {
	case x == 0:
		rkey ^= uint32(1 + r.IntN(255)) // a stale variant: invalid key
	case x == 1:
		o := run.region(run.pds[(r.IntN(2)+1+pdIndex(run.pds, q.pd))%3])
		va, rkey = o.Addr, o.RKey // another PD's region
	case x == 2:
		va, rkey = run.regions[8].Addr, run.regions[8].RKey // no REMOTE_WRITE
	case x == 3:
		n = max(n, 1)
		va = mr.Addr + mr.Length - uint64(n) + 1 // one byte past the end
	case x == 4:
		va, rkey = run.regions[9].Addr, run.regions[9].RKey // deregistered
	case x == 5:
		n, rkey = 0, 0 // zero length: no check, accepted
	}
	run.message(q, va, rkey, n)
	if run.sends && r.IntN(3) == 0 {
		run.withImm(q)
	}
	switch x := r.IntN(100); {
	case x == 0 && len(q.msg) > 1:
		q.msg[1].op = ib.RDMAWriteFirst // a FIRST inside the message
	case x == 1 && len(q.msg) > 1 && !run.noSend:
		q.msg[1].op = ib.SendMiddle // a SEND inside the WRITE
	case x == 2:
		q.msg[0].op = ib.RDMAWriteMiddle // a MIDDLE outside a message
	case x == 3:
		q.msg[0].op = ib.RDMAWriteLast
	}
}

// newRead starts a READ request on q: from its PD's READ region, of 0
// bytes, less than the MTU, exactly the MTU or up to three MTUs, at any
// VA; 1 in 10 with a bad R_Key (a stale variant, a WRITE region without
// REMOTE_READ, one byte past the end, another PD's region); 1 in 12 with
// its PSN ahead of the requester's next (a PSN gap: one sequence NAK).
func (run *respRun) newRead(q *respQP) {
	r := run.r
	mr := run.readRegions[pdIndex(run.pds, q.pd)]
	var n uint32
	switch r.IntN(5) {
	case 0:
		n = 0
	case 1:
		n = uint32(1 + r.IntN(q.mtu-1))
	case 2:
		n = uint32(q.mtu)
	default:
		n = uint32(q.mtu + 1 + r.IntN(2*q.mtu))
	}
	off := uint64(r.IntN(int(mr.Length) - int(n) + 1))
	va, rkey := mr.Addr+off, mr.RKey
	if n == 0 && r.IntN(2) == 0 {
		va, rkey = 0, 0 // a zero-length READ need not name a region
	}
	switch x := r.IntN(40); {
	case x == 0:
		rkey ^= uint32(1 + r.IntN(255))
	case x == 1:
		o := run.region(q.pd)
		va, rkey = o.Addr, o.RKey // REMOTE_WRITE only: access denied
		n = max(n, 1)
	case x == 2:
		n = max(n, 1)
		va = mr.Addr + mr.Length - uint64(n) + 1
	case x == 3:
		o := run.readRegions[(pdIndex(run.pds, q.pd)+1)%3]
		va, rkey = o.Addr, o.RKey // another PD's
		n = max(n, 1)
	}
	p := &respPkt{qpn: q.qpn, psn: q.next, op: ib.RDMAReadRequest, ackReq: r.IntN(2) == 0, va: va, rkey: rkey, dlen: n}
	if r.IntN(12) == 0 {
		p.psn = (q.next + uint32(1+r.IntN(2))) & 0xffffff // a PSN gap
	}
	q.msg, q.pos, q.lost = []*respPkt{p}, 0, false
	q.next = (p.psn + uint32(hca.PacketCount(n, q.mtu))) & 0xffffff
	q.past = append(q.past, p)
	if len(q.past) > 6 {
		q.past = q.past[1:]
	}
}

// dupRead sends a duplicate of one of q's past READs: the whole READ, or
// (3 in 4 of several packets) from its response j: the rest (PSN + j, VA
// + j MTUs, j MTUs fewer bytes: a requester's resend after j responses)
// or, 1 in 3 of those, PSN + j with the whole READ's VA and length (its
// responses would pass the READ's last PSN: dropped); 1 in 5 with another
// R_Key (no resource matches it: dropped).
func (run *respRun) dupRead(q *respQP) {
	r := run.r
	o := q.past[r.IntN(len(q.past))]
	p := *o
	if pk := hca.PacketCount(o.dlen, q.mtu); pk > 1 && r.IntN(4) != 0 {
		j := 1 + r.IntN(pk-1)
		p.psn = (o.psn + uint32(j)) & 0xffffff
		if r.IntN(3) == 0 {
			// Its PSN moved but not its VA and length: its responses
			// would run past the READ's last PSN (dropped).
			run.byKind["READ duplicate, past the last PSN"]++
		} else {
			p.va += uint64(j * q.mtu)
			p.dlen -= uint32(j * q.mtu)
			run.byKind["READ duplicate, partial"]++
		}
	}
	if r.IntN(5) == 0 {
		p.rkey ^= 0x100 // another R_Key: no resource matches (dropped)
	}
	run.send(q, &p)
}

func pdIndex(pds []uint32, pd uint32) int {
	for i, p := range pds {
		if p == pd {
			return i
		}
	}
	return 0
}

// env is the QP's ResponderEnv: its R_Key checks as hca.QP.CheckRKey,
// its L_Key checks as hca.QP.CheckLKey, its receive queue q.rq.
type respEnv struct {
	table *hca.KeyTable
	pd    uint32
	qpn   uint32
	q     *respQP
}

func (e respEnv) CheckRKey(rkey uint32, need int, addr, n uint64) hca.KeyResult {
	return e.table.CheckRemote(rkey, e.pd, e.qpn, need, addr, n)
}

// RKeyBase: as hca.QP.RKeyBase (a zero-based window's first byte; the
// run binds none, so 0).
func (e respEnv) RKeyBase(rkey uint32) uint64 { return e.table.ZeroBase(rkey) }
func (e respEnv) CheckLKey(lkey uint32, addr, n uint64) hca.KeyResult {
	return e.table.Check(lkey, e.pd, hca.AccessLocalWrite, addr, n)
}

// PopRecv takes the oldest WQE posted (hca.QP.PopRecv's order).
func (e respEnv) PopRecv() (hca.RecvWQE, bool) {
	if len(e.q.rq) == 0 {
		return hca.RecvWQE{}, false
	}
	w := e.q.rq[0]
	e.q.rq = e.q.rq[1:]
	return w, true
}

// send appends p to the stream and runs it through q's model (q nil: no
// context holds its QPN).
func (run *respRun) send(q *respQP, p *respPkt) {
	cp := *p
	cp.gap = run.r.IntN(4) == 0 || run.wantGap
	run.wantGap = false
	run.stream = append(run.stream, &cp)
	run.blocks += (len(cp.pay) + 63) / 64
	if q == nil {
		run.want.noQP++
		run.byKind["no context"]++
		return
	}
	pkt := &ib.Packet{Opcode: cp.op, PSN: cp.psn, AckReq: cp.ackReq, DestQP: cp.qpn, Imm: cp.imm,
		RETH: ib.RETH{VA: cp.va, RKey: cp.rkey, Length: cp.dlen}, PayloadLen: len(cp.pay), Payload: cp.pay,
		Atomic: ib.AtomicETH{VA: cp.va, RKey: cp.rkey, SwapAdd: cp.swap, Compare: cp.cmp}}
	d := int32((cp.psn-q.resp.ExpectedPSN())<<8) >> 8 // psnDiff
	errState := q.resp.State == hca.QPErr
	a := q.resp.Receive(pkt, respEnv{&run.table, q.pd, q.qpn, q})
	if run.sends {
		run.recvKind(a)
	}
	switch {
	case errState:
		run.want.errDrop++
		run.byKind["in ERR"]++
	case d > 0 && !a.Ack:
		run.want.seqDrop++
		run.byKind["ahead, dropped"]++
	case d > 0:
		run.byKind["ahead, NAK"]++
	case d < 0:
		run.want.dup++
		run.byKind["duplicate"]++
		if cp.op == ib.RDMAReadRequest && !a.Read && !a.Ack {
			run.byKind["READ duplicate dropped"]++
		}
		if (cp.op == ib.CompareSwap || cp.op == ib.FetchAdd) && !a.AtomicReplay {
			run.byKind["atomic duplicate dropped"]++
		}
	case a.Ack && a.AckSyn == hca.SynNAKAccess:
		run.byKind["R_Key "+a.KeyResult.String()]++
	case a.Ack && a.AckSyn == hca.SynNAKInvReq:
		run.byKind["invalid request"]++
		if cp.op == ib.CompareSwap || cp.op == ib.FetchAdd {
			run.byKind["atomic misaligned"]++
		}
	case a.Write:
		run.byKind[fmt.Sprintf("written (VA mod 64 %s)", map[bool]string{true: "0", false: "> 0"}[a.WriteAddr%64 == 0])]++
	default:
		run.byKind["accepted, no payload"]++
	}
	if a.Write && a.RecvSGL != nil {
		// A SEND into a list: one write per element part (hca.Device.scatter).
		run.scatter(a, cp.pay)
	} else if a.Write {
		run.writes++
		for k, b := range cp.pay {
			run.mem[a.WriteAddr+uint64(k)] = b
		}
	}
	if a.RecvDone {
		run.cqes = append(run.cqes, respCQE{q.qpn, uint32(a.RecvOpcode), uint32(a.RecvStatus), a.Recv.Index & 0xffff, a.RecvLen, a.Imm})
		run.cqeAfter = append(run.cqeAfter, run.writes)
	}
	if !errState && q.resp.State == hca.QPErr {
		// A class C error: the QP goes to ERR and the receive WQEs posted
		// and not consumed are flushed in order, after the error's own
		// completion (hca.Device.respond's deferred flushRecvs).
		for _, w := range q.rq {
			run.flushRecv(q, w, "at the error")
		}
		q.rq = nil
	}
	if a.Ack {
		run.ack(q, a.AckSyn, a.AckPSN, a.MSN)
		if a.AckSyn&0xE0 == hca.SynRNRNAK {
			// The requester resends from the NAK's PSN after its RNR
			// timer, mostly with a receive WQE posted meanwhile.
			q.lost, q.rnrPost = true, true
		}
	}
	if a.Read {
		run.reply(q, a)
	}
	if a.Atomic || a.AtomicReplay {
		run.atomic(q, pkt, a)
	}
	if cp.gap {
		if psn, msn, ok := q.resp.FlushAck(); ok {
			run.byKind["flushed ACK"]++
			run.ack(q, hca.SynACKNoLimit, psn, msn)
		}
	}
}

// reply takes the READ reply a started, whole, as the device's transmit
// side takes it from the response queue (hca.Device.nextReadResponse,
// then ReadResponseSent): each response's fields from NextReadResponse,
// its payload read from host memory at the reply's VA + the bytes before
// it. The RTL's responder gives the reply as one entry on ack_*: its
// first PSN, VA, length, the MSN its responses carry, and whether it is a
// replay from inside the READ (its first response a MIDDLE or LAST).
func (run *respRun) reply(q *respQP, a hca.RespAction) {
	d := respAck{qpn: q.qpn, psn: a.ReadPSN, syn: hca.SynACKNoLimit, rd: 1, va: a.ReadVA, n: a.ReadLen}
	off := uint64(0)
	for i := 0; ; i++ {
		p := &ib.Packet{}
		_, more := q.resp.NextReadResponse(a.ReadRes, p)
		if i == 0 {
			d.msn = p.AETH.MSN
			if p.Opcode == ib.RDMAReadResponseMiddle || p.Opcode == ib.RDMAReadResponseLast {
				d.rd |= 2
			}
		}
		p.Payload = make([]byte, p.PayloadLen)
		for k := range p.Payload {
			p.Payload[k] = respMemByte(a.ReadVA + off + uint64(k))
		}
		if p.PayloadLen > 0 {
			run.readAddrs = append(run.readAddrs, [2]uint64{a.ReadVA + off, uint64(p.PayloadLen)})
		}
		off += uint64(p.PayloadLen)
		if run.holdFins {
			if i == 0 {
				run.held = append(run.held, respHeld{q: q, slot: a.ReadRes})
			}
			run.held[len(run.held)-1].psns = append(run.held[len(run.held)-1].psns, p.PSN)
		} else {
			q.resp.ReadResponseSent(a.ReadRes, p.PSN)
			if !more {
				run.fins = append(run.fins, respFin{qpn: q.qpn, res: a.ReadRes, psn: p.PSN, out: len(run.out)})
			}
		}
		run.out = append(run.out, respOutPkt{ack: d, rsp: p})
		if !more {
			break
		}
	}
	run.acks = append(run.acks, d)
	run.ackAfter = append(run.ackAfter, run.writes)
	switch {
	case d.rd&2 != 0:
		run.byKind["READ replay from inside"]++
	case a.ReadLen == 0:
		run.byKind["READ 0 bytes"]++
	case int(a.ReadLen) < q.mtu:
		run.byKind["READ < MTU"]++
	case int(a.ReadLen) == q.mtu:
		run.byKind["READ = MTU"]++
	default:
		run.byKind["READ > MTU"]++
	}
	if a.ReadVA%64 != 0 && a.ReadLen > 0 {
		run.byKind["READ VA mod 64 > 0"]++
	}
}

// mtuCode is IBA's path MTU code of mtu bytes (256: 1 ... 4096: 5).
func mtuCode(mtu int) uint64 {
	c := uint64(1)
	for m := 256; m < mtu; m <<= 1 {
		c++
	}
	return c
}

func (run *respRun) ack(q *respQP, syn uint8, psn, msn uint32) {
	a := respAck{qpn: q.qpn, psn: psn, syn: uint32(syn), msn: msn}
	run.acks = append(run.acks, a)
	run.out = append(run.out, respOutPkt{ack: a})
	run.ackAfter = append(run.ackAfter, run.writes)
	if syn == hca.SynACKNoLimit {
		run.want.acks++
	} else {
		run.want.naks++
	}
}

// step sends the next packet of slot's QP: a message's next packet, now
// and then lost (skipped), a duplicate of one already received, or a
// packet for a QPN no context holds; at a message's end, after a loss,
// the requester resends from the model's expected PSN (go-back-N).
func (run *respRun) step(slot int) {
	r := run.r
	q := run.qps[slot]
	if q == nil || q.resp.State == hca.QPErr {
		if run.cfgAfter < 0 && (q == nil || r.IntN(2) == 0) {
			run.cfgAfter, run.wantGap = slot, true
		}
		if q == nil {
			run.send(nil, &respPkt{qpn: uint32(r.IntN(1<<22))<<respQPNW | uint32(slot), op: ib.RDMAWriteOnly, psn: r.Uint32() & 0xffffff})
			return
		}
	}
	if r.IntN(40) == 0 {
		// The slot's index with other high bits: no context holds it.
		run.send(nil, &respPkt{qpn: q.qpn ^ uint32(1+r.IntN(1<<22))<<respQPNW, op: ib.RDMAWriteOnly, psn: q.next, pay: []byte{1}})
		return
	}
	if len(q.past) > 0 && r.IntN(6) == 0 {
		run.dupRead(q)
		return
	}
	if len(q.msg) > 0 && q.pos > 0 && r.IntN(15) == 0 {
		run.send(q, q.msg[r.IntN(q.pos)]) // a duplicate (or, after a loss, one still ahead)
		return
	}
	if q.pos >= len(q.msg) {
		e := q.resp.ExpectedPSN()
		if q.rnrPost {
			q.rnrPost = false
			if r.IntN(4) != 0 {
				run.postRecv(q, q.msgBytes())
			}
		}
		if q.lost && q.resp.State != hca.QPErr {
			// Go-back-N from the expected PSN, if the message holds it.
			for i, p := range q.msg {
				if p.psn == e {
					q.pos, q.lost = i, false
					break
				}
			}
		}
		if q.pos >= len(q.msg) {
			if q.resp.State != hca.QPErr && e != q.next {
				// The responder expects an earlier PSN than the
				// requester's next (the message's resend went wrong, a
				// duplicate ahead of the loss): go on from the expected
				// PSN, as a requester's go-back-N does.
				q.next = e
			}
			run.newMessage(q)
		}
	}
	p := q.msg[q.pos]
	q.pos++
	if r.IntN(20) == 0 && q.pos < len(q.msg) {
		q.lost = true // p never arrives
		run.byKind["lost"]++
		return
	}
	run.send(q, p)
}

// fill makes the run: every context written, n steps over random contexts,
// the contexts in ERR rewritten after a gap.
func (run *respRun) fill(n int) {
	for slot := range respQPs - 1 { // the last slot starts unwritten
		run.config(slot)
	}
	for range n {
		if run.cfgAfter >= 0 && len(run.stream) > 0 && run.stream[len(run.stream)-1].gap {
			run.config(run.cfgAfter)
			run.cfgAfter = -1
		}
		run.step(run.r.IntN(respQPs))
	}
	// The last packet is followed by nothing: a gap.
	if last := run.stream[len(run.stream)-1]; !last.cfg && !last.gap {
		last.gap = true
		for i := range run.qps {
			if q := run.qps[i]; q != nil && q.qpn == last.qpn {
				if psn, msn, ok := q.resp.FlushAck(); ok {
					run.ack(q, hca.SynACKNoLimit, psn, msn)
				}
			}
		}
	}
}

// write puts the stream, payload blocks and MPT into dir.
func (run *respRun) write(t *testing.T, dir string) {
	t.Helper()
	var ent, blk, mpt, atm strings.Builder
	for _, p := range run.stream {
		var w3, w2, w1, w0 uint64
		if p.cfg {
			w3 = 1<<60 | uint64(p.qpn)<<32 | uint64(p.psn)<<8
			w0 = uint64(p.pd) | mtuCode(p.mtu)<<32 | uint64(p.rnr)<<40
		} else if p.release {
			w3 = 3 << 60
		} else if p.post || p.elem {
			w3 = 2<<60 | uint64(p.qpn)<<32 | uint64(p.nsge)
			if p.elem {
				w3 = 4<<60 | uint64(p.qpn)<<32 | uint64(p.k)<<8
			}
			w2 = uint64(p.rkey)<<32 | uint64(p.dlen)
			w1, w0 = p.va, uint64(p.idx)
		} else {
			flags := uint64(0)
			if p.gap {
				flags |= 1
			}
			if p.ackReq {
				flags |= 2
			}
			w3 = flags<<56 | uint64(p.qpn)<<32 | uint64(p.psn)<<8 | uint64(p.op)
			w2 = uint64(len(p.pay))<<32 | uint64(p.dlen)
			w1, w0 = p.va, uint64(p.rkey)<<32|uint64(p.imm)
			for k := 0; k < len(p.pay); k += 64 {
				b := make([]byte, 64)
				copy(b, p.pay[k:])
				fmt.Fprintf(&blk, "%x\n", b)
			}
		}
		fmt.Fprintf(&ent, "%016x%016x%016x%016x\n", w3, w2, w1, w0)
		fmt.Fprintf(&atm, "%016x%016x\n", p.swap, p.cmp)
	}
	for i := range 64 {
		e, ok := run.table.Entry(uint32(i))
		if !ok {
			fmt.Fprintf(&mpt, "%064x\n", 0)
			continue
		}
		fmt.Fprintf(&mpt, "%016x%016x%016x%016x\n", uint64(e.Access)|1<<63, uint64(e.PD)|uint64(e.LKey)<<32, e.Length, e.Addr)
	}
	if blk.Len() == 0 {
		blk.WriteString(strings.Repeat("0", 128) + "\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ent.hex"), []byte(ent.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "blk.hex"), []byte(blk.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mpt.hex"), []byte(mpt.String()), 0o644))
	if atm.Len() == 0 {
		atm.WriteString(strings.Repeat("0", 32) + "\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "atm.hex"), []byte(atm.String()), 0o644))
}

// respResult is the testbench's log, read back.
type respResult struct {
	mem      map[uint64]byte
	acks     []respAck
	ackAfter []int // wr0 writes whose last beat was taken before each ACK was
	cqes     []respCQE
	cqeAfter []int // the same before each receive completion
	counts   respCounts
	beats    int
	writes   int
	contract []string // wr0 contract violations
	cycles   int
}

func parseResp(t *testing.T, out string) *respResult {
	t.Helper()
	res := &respResult{mem: map[uint64]byte{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var wAddr, wLen uint64
	wIdx := 0
	done := false
	hexU := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 16, 64)
		require.NoError(t, err, "%q", s)
		return v
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "W":
			addr, length, be, data := hexU(f[1]), hexU(f[2]), hexU(f[3]), f[4]
			if wIdx == 0 {
				wAddr, wLen = addr, length
				res.writes++
			} else if addr != wAddr || length != wLen {
				res.contract = append(res.contract, fmt.Sprintf("beat %d of a write: address %#x length %d, first beat %#x %d", wIdx, addr, length, wAddr, wLen))
			}
			res.beats++
			base := wAddr&^63 + uint64(64*wIdx)
			for k := range 64 {
				if be>>(63-k)&1 != 0 {
					b, _ := strconv.ParseUint(data[2*k:2*k+2], 16, 8)
					res.mem[base+uint64(k)] = byte(b)
				}
			}
			wIdx++
			if uint64(64*wIdx) >= wLen {
				wIdx = 0
			}
		case "A":
			res.acks = append(res.acks, respAck{uint32(hexU(f[1])), uint32(hexU(f[2])), uint32(hexU(f[3])), uint32(hexU(f[4])),
				uint32(hexU(f[5])), hexU(f[6]), uint32(hexU(f[7]))})
			done := res.writes
			if wIdx > 0 {
				done-- // a write under way
			}
			res.ackAfter = append(res.ackAfter, done)
		case "Q":
			res.cqes = append(res.cqes, respCQE{uint32(hexU(f[1])), uint32(hexU(f[2])), uint32(hexU(f[3])), uint32(hexU(f[4])),
				uint32(hexU(f[5])), uint32(hexU(f[6]))})
			done := res.writes
			if wIdx > 0 {
				done--
			}
			res.cqeAfter = append(res.cqeAfter, done)
		case "C":
			var c [7]int
			for i := range c {
				c[i], _ = strconv.Atoi(f[i+1])
			}
			res.counts = respCounts{c[0], c[1], c[2], c[3], c[4], c[5], c[6]}
		case "DONE":
			done = true
			res.cycles, _ = strconv.Atoi(f[1])
		case "TIMEOUT":
			t.Fatalf("testbench timed out: %s", sc.Text())
		}
	}
	require.True(t, done, "no DONE line:\n%s", tail(out, 20))
	return res
}

// check compares the RTL's log with the model's run and returns the first
// differences (empty: equal).
func (run *respRun) check(res *respResult) []string {
	var diffs []string
	diffs = append(diffs, res.contract...)
	for i := range max(len(run.acks), len(res.acks)) {
		var w, g respAck
		if i < len(run.acks) {
			w = run.acks[i]
		}
		if i < len(res.acks) {
			g = res.acks[i]
		}
		if w != g || i >= len(run.acks) || i >= len(res.acks) {
			diffs = append(diffs, fmt.Sprintf("ACK %d of %d (RTL %d): RTL %+v, model %+v", i, len(run.acks), len(res.acks), g, w))
			break
		}
	}
	// Each ACK leaves after the last beat of every write before it in the
	// model's order (its own packet's among them): a requester that sees
	// it may complete a WRITE whose bytes are all in host memory.
	for i := range min(len(run.ackAfter), len(res.ackAfter)) {
		if res.ackAfter[i] < run.ackAfter[i] {
			diffs = append(diffs, fmt.Sprintf("ACK %d taken after %d whole writes, before the %d that precede it", i, res.ackAfter[i], run.ackAfter[i]))
			break
		}
	}
	for i := range max(len(run.cqes), len(res.cqes)) {
		if i >= len(run.cqes) || i >= len(res.cqes) || run.cqes[i] != res.cqes[i] {
			var w, g respCQE
			if i < len(run.cqes) {
				w = run.cqes[i]
			}
			if i < len(res.cqes) {
				g = res.cqes[i]
			}
			diffs = append(diffs, fmt.Sprintf("receive CQE %d of %d (RTL %d): RTL %+v, model %+v", i, len(run.cqes), len(res.cqes), g, w))
			break
		}
	}
	// A receive completion leaves after its message's bytes are written.
	for i := range min(len(run.cqeAfter), len(res.cqeAfter)) {
		if res.cqeAfter[i] < run.cqeAfter[i] {
			diffs = append(diffs, fmt.Sprintf("receive CQE %d taken after %d whole writes, before the %d that precede it", i, res.cqeAfter[i], run.cqeAfter[i]))
			break
		}
	}
	bad := 0
	for a, b := range run.mem {
		if g, ok := res.mem[a]; !ok || g != b {
			if bad++; bad <= 3 {
				diffs = append(diffs, fmt.Sprintf("host byte %#x: RTL %#x (written %v), model %#x", a, g, ok, b))
			}
		}
	}
	for a, g := range res.mem {
		if _, ok := run.mem[a]; !ok {
			if bad++; bad <= 3 {
				diffs = append(diffs, fmt.Sprintf("host byte %#x written by the RTL (%#x), not by the model", a, g))
			}
		}
	}
	if res.counts != run.want {
		diffs = append(diffs, fmt.Sprintf("counters: RTL %+v, model %+v", res.counts, run.want))
	}
	return diffs
}

// respTB drives hca_responder and an hca_key_check (no cache) with the
// stream in ent.hex (one 256-bit entry each: [255:252] kind, 1 a context
// write, 2 a receive WQE posted; [249] AckReq; [248] gap; [247:224] QPN;
// [223:200] PSN; [199:192] opcode; [172:160] payload bytes; [159:128] DMA
// length; [127:64] VA; [63:32] R_Key; [31:0] PD, or the ImmDt of a
// packet; a context write's min_rnr_timer at [44:40]; a post's L_Key at
// [191:160], length [159:128], address [127:64], index [15:0], elements
// [197:192]; kind 4 a list's element k [204:200] of the WQE of index
// [15:0]: L_Key [191:160], length [159:128], address [127:64]), the
// payload blocks in blk.hex in order, the MPT in mpt.hex. A packet marked
// gap is followed by nothing until the responder is idle again (and 0..3
// cycles more); any other by the next entry at once. A post is taken while
// the responder is idle (so after the packet before it took its WQE) into
// its context's receive queue (64 entries each, emptied by a context
// write), which answers rw_* after 0..3 cycles. pd_valid, mpt_req_ready,
// the MPT's latency, wr_ready, ack_ready and rc_ready are random. It
// prints each wr0 beat taken (W addr len be data), each ACK taken (A qpn
// psn syn msn), each receive completion taken (Q qpn opcode status index
// len imm), the counters (C) and DONE cycles.
const respTB = "`timescale 1ns/1ps\n" + `
module tb;
    parameter integer ACK_COALESCE = 1;
    parameter integer RD_RES = 16;
    parameter integer SEED = 1;
    // HOLD 1: a READ reply's fin_* waits in a FIFO for a release entry (kind 3), oldest first; HOLD
    // 0: it follows the reply's take on ack_* (the reply sent whole at once, as the model's run).
    parameter integer HOLD = 0;
    reg clk = 1'b0, rst_n = 1'b0;
    always #1 clk = ~clk;
    reg [255:0] ent [0:4095];
    reg [511:0] blk [0:32767];
    reg [255:0] mpt [0:63];
    // Atomics: each entry's AtomicETH {swap/add, compare} in atm.hex; host memory's 64-bit words
    // at [ABASE, ABASE + 512), each byte respMemByte's pattern until written on wr0.
    parameter [63:0] ABASE = 64'h0;
    reg [127:0] atm [0:4095];
    reg [7:0] amem [0:511];
    reg rd_busy;
    reg [63:0] rd_a;
    reg [511:0] rd_blk;
    integer ne, nb, ei, bi, cyc, idle, hold, seed, lat, ak;
    reg rnd_pd, rnd_wr, rnd_ack, rnd_mpt;
    wire [255:0] e = ent[ei];
    wire is_cfg = e[255:252] == 4'd1;
    wire is_post = e[255:252] == 4'd2;
    wire is_rel = e[255:252] == 4'd3;
    wire is_elem = e[255:252] == 4'd4;
    wire more = ei < ne;
    wire cfg_valid = more && is_cfg && hold == 0;
    wire rq_valid  = more && !is_cfg && !is_post && !is_rel && !is_elem && hold == 0;
    wire [7:0] ack_res;
    wire [23:0] ack_last;
    reg fin_v;
    reg [55:0] fin_e;
    reg [55:0] fq [0:63];
    integer fq_w, fq_r;
    // A release waits until the packets before it are decided and their answers taken (the
    // responder idle, its output register empty); with no reply held it gives no fin.
    wire rel_take = more && is_rel && hold == 0 && rq_ready && !ack_valid;
    wire post_take;
    // The receive queues: {index, address, length, L_Key} per WQE.
    integer qi;
` + rqStandInDecl + `    wire cfg_ready, rq_ready, pd_ready;
    wire pd_valid = bi < nb && rnd_pd;
    wire kc_req_valid, kc_req_ready, kc_rsp_valid, kc_rsp_ready;
    wire [31:0] kc_req_key, kc_req_pd;
    wire [3:0] kc_req_need;
    wire [63:0] kc_req_addr, kc_req_len;
    wire [2:0] kc_rsp_result;
    wire mpt_req_valid;
    wire [23:0] mpt_req_index;
    reg  mpt_busy;
    reg  [23:0] mpt_ix;
    wire mpt_rsp_valid = mpt_busy && lat == 0;
    wire wr_valid, ack_valid;
    wire [63:0] wr_addr, wr_be;
    wire [15:0] wr_len;
    wire [511:0] wr_data;
    wire [23:0] ack_qpn, ack_psn, ack_msn;
    wire [7:0] ack_syn;
    wire ack_read, ack_mid, ack_atomic;
    wire [63:0] ack_orig;
    wire rd_req_valid;
    wire [63:0] rd_req_addr;
    wire [15:0] rd_req_len;
    reg rnd_rd;
    wire [63:0] ack_va;
    wire [31:0] ack_len;
    wire [2:0] ack_mtu;
    wire [15:0] c_acks, c_naks, c_dup, c_seq, c_err, c_noqp, c_todo;
    hca_responder #(.QPN_W(` + "2" + `), .ACK_COALESCE(ACK_COALESCE), .RD_RES(RD_RES)) dut (
        .clk(clk), .rst_n(rst_n),
        .cfg_valid(cfg_valid), .cfg_ready(cfg_ready), .cfg_qpn(e[247:224]), .cfg_psn(e[223:200]), .cfg_pd(e[31:0]),
        .cfg_mtu(e[34:32]), .cfg_rnr(e[44:40]),
        .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_qpn(e[247:224]), .rq_psn(e[223:200]), .rq_op(e[199:192]),
        .rq_ackreq(e[249]), .rq_va(e[127:64]), .rq_rkey(e[63:32]), .rq_dlen(e[159:128]), .rq_len(e[172:160]),
        .rq_imm(e[31:0]), .rq_swap(atm[ei][127:64]), .rq_cmp(atm[ei][63:0]),
        .rd_req_valid(rd_req_valid), .rd_req_ready(rnd_rd && !rd_busy), .rd_req_addr(rd_req_addr), .rd_req_len(rd_req_len),
        .rd_rsp_valid(rd_busy), .rd_rsp_data(rd_blk),
        .rw_req_valid(rw_req_valid), .rw_req_ready(!rw_busy), .rw_req_qpn(rw_req_qpn), .rw_rsp_valid(rw_rsp_valid),
        .rw_rsp_ready(rw_rsp_ready), .rw_rsp_ok(rw_ok), .rw_rsp_index(rw_w[143:128]), .rw_rsp_addr(rw_w[127:64]),
        .rw_rsp_len(rw_w[63:32]), .rw_rsp_lkey(rw_w[31:0]), .rw_rsp_nsge(rw_n),
        .rw_sge_valid(rw_sge_valid), .rw_sge_q(rw_sge_q), .rw_sge_index(rw_sge_index), .rw_sge_k(rw_sge_k),
        .rw_sge_addr(rw_e[63:0]), .rw_sge_len(rw_e[127:96]), .rw_sge_lkey(rw_e[95:64]),
        .rw_req_flush(rw_req_flush), .rw_flush(rw_flush), .qp_err(qp_err), .req_err(4'd0),
        .rc_valid(rc_valid), .rc_ready(rnd_rc), .rc_qpn(rc_qpn), .rc_opcode(rc_opcode), .rc_status(rc_status),
        .rc_index(rc_index), .rc_len(rc_len), .rc_imm(rc_imm),
        .pd_valid(pd_valid), .pd_data(blk[bi]), .pd_ready(pd_ready),
        .kc_req_valid(kc_req_valid), .kc_req_ready(kc_req_ready), .kc_req_key(kc_req_key), .kc_req_pd(kc_req_pd),
        .kc_req_need(kc_req_need), .kc_req_addr(kc_req_addr), .kc_req_len(kc_req_len),
        .kc_rsp_valid(kc_rsp_valid), .kc_rsp_ready(kc_rsp_ready), .kc_rsp_result(kc_rsp_result),
        .wr_valid(wr_valid), .wr_addr(wr_addr), .wr_len(wr_len), .wr_data(wr_data), .wr_be(wr_be), .wr_ready(rnd_wr),
        .ack_valid(ack_valid), .ack_ready(rnd_ack), .ack_qpn(ack_qpn), .ack_psn(ack_psn), .ack_syn(ack_syn), .ack_msn(ack_msn),
        .ack_read(ack_read), .ack_va(ack_va), .ack_len(ack_len), .ack_mtu(ack_mtu), .ack_mid(ack_mid),
        .ack_atomic(ack_atomic), .ack_orig(ack_orig), .ack_res(ack_res), .ack_last(ack_last),
        .fin_valid(fin_v), .fin_qpn(fin_e[55:32]), .fin_res(fin_e[31:24]), .fin_psn(fin_e[23:0]),
        .cnt_acks(c_acks), .cnt_naks(c_naks), .cnt_dup(c_dup), .cnt_seq_drop(c_seq), .cnt_err_drop(c_err),
        .cnt_no_qp(c_noqp), .cnt_todo(c_todo));
    hca_key_check #(.TAG_W(1), .CACHE_ENTRIES(0)) kc (
        .clk(clk), .rst_n(rst_n), .req_valid(kc_req_valid), .req_ready(kc_req_ready), .req_key(kc_req_key),
        .req_pd(kc_req_pd), .req_need(kc_req_need), .req_addr(kc_req_addr), .req_len(kc_req_len), .req_tag(1'b0),
        .mpt_req_valid(mpt_req_valid), .mpt_req_ready(rnd_mpt && !mpt_busy), .mpt_req_index(mpt_req_index),
        .mpt_rsp_valid(mpt_rsp_valid), .mpt_rsp_entry(mpt_ix < 24'd64 ? mpt[mpt_ix[5:0]] : 256'd0),
        .rsp_valid(kc_rsp_valid), .rsp_ready(kc_rsp_ready), .rsp_result(kc_rsp_result), .rsp_tag());
    initial begin
        if (!$value$plusargs("ne=%d", ne)) ne = 0;
        if (!$value$plusargs("nb=%d", nb)) nb = 0;
        seed = SEED;
        $readmemh("ent.hex", ent);
        $readmemh("blk.hex", blk);
        $readmemh("mpt.hex", mpt);
        $readmemh("atm.hex", atm);
        for (ak = 0; ak < 512; ak = ak + 1)
            amem[ak] = (ABASE[7:0] + ak[7:0]) ^ ((ABASE[15:0] + ak[15:0]) >> 8) ^ ((ABASE[23:0] + ak[23:0]) >> 16) ^
                       ((ABASE[31:0] + ak[31:0]) >> 24) ^ 8'hA5;
        rd_busy = 1'b0; rnd_rd = 1'b0;
        ei = 0; bi = 0; cyc = 0; idle = 0; hold = 0; lat = 0; mpt_busy = 1'b0;
        rnd_pd = 1'b0; rnd_wr = 1'b0; rnd_ack = 1'b0; rnd_mpt = 1'b0; rnd_rc = 1'b0; rw_busy = 1'b0; rw_lat = 0;
        rw_slot = 2'd0;
        fin_v = 1'b0; fin_e = 56'd0; fq_w = 0; fq_r = 0;
        for (qi = 0; qi < 4; qi = qi + 1) begin rq_head[qi] = 7'd0; rq_tail[qi] = 7'd0; end
        for (qi = 0; qi < 8192; qi = qi + 1) rqe[qi] = 128'd0; // no element posted: 0 bytes
        repeat (4) @(posedge clk);
        rst_n <= 1'b1;
    end
    assign post_take = more && is_post && hold == 0 && rq_ready;
    // A list's element (kind 4, after its post): {context, index mod 64, k} <= {length, L_Key, address}.
    wire elem_take = more && is_elem && hold == 0 && rq_ready;
    always @(posedge clk) if (rst_n) begin
        cyc <= cyc + 1;
        rnd_pd  <= ($random(seed) & 3) != 0;
        rnd_wr  <= ($random(seed) & 3) != 0;
        rnd_ack <= ($random(seed) & 1) != 0;
        rnd_mpt <= ($random(seed) & 1) != 0;
        rnd_rc  <= ($random(seed) & 1) != 0;
        rnd_rd  <= ($random(seed) & 1) != 0;
        // rd1: one block a request (an atomic's 8 bytes lie in one), answered the cycle after it
        // is taken, as hca_dma_engine returns it: the block the bytes lie in, lane k its address + k.
        if (rd_req_valid && rnd_rd && !rd_busy) begin
            rd_busy <= 1'b1;
            for (ak = 0; ak < 64; ak = ak + 1)
                rd_blk[511-8*ak -: 8] <= ({rd_req_addr[63:6], 6'd0} + ak >= ABASE && {rd_req_addr[63:6], 6'd0} + ak < ABASE + 512) ?
                    amem[{rd_req_addr[63:6], 6'd0} + ak - ABASE] : 8'h00;
        end else rd_busy <= 1'b0;
        if (wr_valid && rnd_wr)
            for (ak = 0; ak < 64; ak = ak + 1)
                if (wr_be[63-ak] && wr_addr + ak >= ABASE && wr_addr + ak < ABASE + 512)
                    amem[wr_addr + ak - ABASE] <= wr_data[511-8*ak -: 8];
        if (cfg_valid && cfg_ready) begin
            ei <= ei + 1;
            rq_head[e[225:224]] <= rq_tail[e[225:224]];
        end
        if (elem_take) begin
            ei <= ei + 1;
            rqe[{e[225:224], e[5:0], e[204:200]}] <= {e[159:128], e[191:160], e[127:64]};
        end
        if (post_take) begin
            ei <= ei + 1;
            rqm[{e[225:224], rq_tail[e[225:224]][5:0]}] <= {e[15:0], e[127:64], e[159:128], e[191:160]};
            rqn[{e[225:224], rq_tail[e[225:224]][5:0]}] <= e[197:192];
            rq_tail[e[225:224]] <= rq_tail[e[225:224]] + 7'd1;
        end
` + rqStandInStep + `        if (rc_valid && rnd_rc) $display("Q %h %h %h %h %h %h", rc_qpn, rc_opcode, rc_status, rc_index, rc_len, rc_imm);
        if (rq_valid && rq_ready) begin
            ei <= ei + 1;
            if (e[248]) hold <= -1;
        end
        if (hold == -1 && rq_ready) hold <= 1 + (($random(seed) & 32'h7fffffff) % 4);
        else if (hold > 0) hold <= hold - 1;
        if (pd_valid && pd_ready) bi <= bi + 1;
        // fin_*: a READ reply's last response sent, at its take (HOLD 0) or its release (HOLD 1).
        fin_v <= 1'b0;
        if (ack_valid && rnd_ack && ack_read) begin
            if (HOLD != 0) begin
                fq[fq_w % 64] <= {ack_qpn, ack_res, ack_last};
                fq_w <= fq_w + 1;
            end else begin
                fin_v <= 1'b1;
                fin_e <= {ack_qpn, ack_res, ack_last};
            end
        end
        if (rel_take) begin
            ei <= ei + 1;
            if (fq_w != fq_r) begin
                fin_v <= 1'b1;
                fin_e <= fq[fq_r % 64];
                fq_r <= fq_r + 1;
            end
        end
        if (mpt_req_valid && rnd_mpt && !mpt_busy) begin
            mpt_busy <= 1'b1; mpt_ix <= mpt_req_index; lat <= ($random(seed) & 32'h7fffffff) % 4;
        end else if (mpt_busy && lat == 0) mpt_busy <= 1'b0;
        else if (mpt_busy) lat <= lat - 1;
        if (wr_valid && rnd_wr) $display("W %h %h %h %h", wr_addr, wr_len, wr_be, wr_data);
        if (ack_valid && rnd_ack) $display("A %h %h %h %h %h %h %h", ack_qpn, ack_psn, ack_syn, ack_msn,
                                           {ack_atomic, ack_mid, ack_read}, ack_read ? ack_va : ack_atomic ? ack_orig : 64'd0,
                                           ack_read ? ack_len : 32'd0);
        idle <= (!more && rq_ready && !ack_valid && !rc_valid) ? idle + 1 : 0;
        if (idle == 8) begin
            if (bi != nb) $display("BLOCKS taken %0d of %0d", bi, nb);
            $display("C %0d %0d %0d %0d %0d %0d %0d", c_acks, c_naks, c_dup, c_seq, c_err, c_noqp, c_todo);
            $display("DONE %0d", cyc);
            $finish;
        end
        if (cyc > 4000000) begin
            $display("TIMEOUT at entry %0d of %0d, block %0d of %0d", ei, ne, bi, nb);
            $finish;
        end
    end
endmodule
`

// respFiles are the sources besides tb.v.
var respFiles = []string{"hca_responder.v", "onehot_encode.v", "hca_key_check.v"}

// writeRespBench writes tb.v and the sources into dir, replace's text in
// place of a source's, and returns the file names.
func writeRespBench(t *testing.T, dir string, replace map[string]string) []string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tb.v"), []byte(respTB), 0o644))
	files := []string{"tb.v"}
	for _, f := range respFiles {
		text, ok := replace[f]
		if !ok {
			text = PrimitiveSource(f)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644))
		files = append(files, f)
	}
	return files
}

// runResp compiles the bench in dir (ACK_COALESCE coalesce, the
// testbench's random seed seed) and runs run through it.
func runResp(t *testing.T, ctx context.Context, dir string, run *respRun, seed uint64, replace map[string]string) *respResult {
	t.Helper()
	files := writeRespBench(t, dir, replace)
	run.write(t, dir)
	_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp",
		fmt.Sprintf("-Ptb.ACK_COALESCE=%d", run.coalesce), fmt.Sprintf("-Ptb.RD_RES=%d", run.cfg.MaxRdAtomic),
		fmt.Sprintf("-Ptb.SEED=%d", seed), fmt.Sprintf("-Ptb.ABASE=64'h%x", run.abase), fmt.Sprintf("-Ptb.HOLD=%d", b2i(run.holdFins))}, files...)...)
	require.NoError(t, err)
	out, err := runTool(ctx, dir, "vvp", "-n", "sim.vvp", fmt.Sprintf("+ne=%d", len(run.stream)), fmt.Sprintf("+nb=%d", run.blocks))
	require.NoError(t, err)
	assert.NotContains(t, out, "BLOCKS", "every payload block taken")
	return parseResp(t, out)
}

// directedStart writes contexts 0..2 (config) and makes context 0's QP
// the directed runs' (directedQP: PD 0's, path MTU mtu, min_rnr_timer
// rnr).
func (run *respRun) directedStart(mtu, rnr int) *respQP {
	for slot := range respQPs - 1 {
		run.config(slot)
	}
	return run.directedQP(run.stream[0], 0, mtu, rnr)
}

// directedReconfig closes the stream with a gap (a context write follows
// only one) and writes a new QP into context 0 with the old QP's QPN at
// the PSN config draws, made the directed runs' QP as directedStart's.
func (run *respRun) directedReconfig(mtu, rnr int) *respQP {
	run.stream[len(run.stream)-1].gap = true
	old := run.qps[0]
	run.config(0)
	return run.directedQP(run.stream[len(run.stream)-1], old.qpn, mtu, rnr)
}

// directedQP makes the QP config just wrote into context 0, whose context
// write is c, a directed run's: QPN qpn (0: the one config drew), PD 0,
// path MTU mtu, min_rnr_timer rnr, a fresh model responder at its
// expected PSN; and c carries the same QPN, PD, MTU and min_rnr_timer, so
// the RTL's context is the model's. (Until 2026-12-03 the WRITE and
// atomic runs left in c the MTU config drew, whatever the model's: no
// WRITE or atomic decision reads the MTU, so the runs passed either way.)
func (run *respRun) directedQP(c *respPkt, qpn uint32, mtu, rnr int) *respQP {
	q := run.qps[0]
	if qpn != 0 {
		q.qpn = qpn
	}
	q.pd, q.mtu = run.pds[0], mtu
	q.resp = hca.NewResponder(run.cfg, q.mtu, q.next)
	q.resp.MinRNRTimer = rnr
	c.qpn, c.pd, c.mtu, c.rnr = q.qpn, q.pd, q.mtu, rnr
	return q
}

// respDirected is the directed run on context 0 (MTU 256, PD 0's region
// 0, ACK_COALESCE 1), each case's expected ACKs derived by hand in
// TestResponderDirectedCosim.
func respDirected(seed uint64) (run *respRun, qpn, p0 uint32, q123 []uint32) {
	run = newRespRun(seed, 1)
	q := run.directedStart(256, run.cfg.MinRNRTimer)
	qpn, p0 = q.qpn, q.next
	mr := run.regions[0] // PD 0's, REMOTE_WRITE
	sendAll := func(lose int) {
		for i, p := range q.msg {
			if i != lose {
				run.send(q, p)
			}
		}
	}
	reconfig := func(mtu int) {
		q = run.directedReconfig(mtu, run.cfg.MinRNRTimer)
		q123 = append(q123, q.next)
	}
	// 1: an ONLY of 100 bytes at an aligned VA.
	run.message(q, mr.Addr, mr.RKey, 100)
	sendAll(-1)
	// 2: 600 bytes at VA mod 64 = 13: FIRST 256, MIDDLE 256, LAST 88, AckReq on the LAST only.
	run.message(q, mr.Addr+0x1000+13, mr.RKey, 600)
	q.msg[0].ackReq, q.msg[1].ackReq = false, false
	sendAll(-1)
	// 3: the ONLY of case 1 again (a duplicate).
	run.send(q, &respPkt{qpn: q.qpn, psn: p0, op: ib.RDMAWriteOnly, ackReq: true, va: mr.Addr, rkey: mr.RKey, dlen: 100, pay: make([]byte, 100)})
	// 4: 3 packets, the FIRST lost: the MIDDLE is ahead (NAK), the LAST
	// dropped; then all three again.
	run.message(q, mr.Addr+0x2000+5, mr.RKey, 700)
	q.msg[0].ackReq, q.msg[1].ackReq = false, false
	sendAll(0)
	sendAll(-1)
	// 5: a stale R_Key variant: NAK, nothing written, the QP to ERR; the
	// next packet dropped.
	run.message(q, mr.Addr+0x3000, mr.RKey^0x80, 64)
	sendAll(-1)
	run.message(q, mr.Addr+0x3000, mr.RKey, 64)
	sendAll(-1)
	// 6: 600 bytes ending one byte past the region's end (the FIRST's
	// own 256 lie inside: the check covers the RETH's range); the MIDDLE
	// and LAST dropped in ERR.
	reconfig(256)
	run.message(q, mr.Addr+mr.Length-599, mr.RKey, 600)
	sendAll(-1)
	// 7: another PD's region.
	reconfig(256)
	o := run.regions[1] // PD 1's
	run.message(q, o.Addr, o.RKey, 64)
	sendAll(-1)
	// 8: a MIDDLE outside a message.
	reconfig(256)
	run.message(q, mr.Addr, mr.RKey, 64)
	q.msg[0].op = ib.RDMAWriteMiddle
	sendAll(-1)
	// 9: a SEND MIDDLE inside a WRITE, after its FIRST (no AckReq), at an
	// aligned VA; the LAST dropped in ERR.
	reconfig(256)
	run.message(q, mr.Addr+0x4000, mr.RKey, 600)
	q.msg[0].ackReq = false
	q.msg[1].op = ib.SendMiddle
	sendAll(-1)
	// 10: a new QP at Q5 with path MTU 512: 600 bytes at VA mod 64 = 7,
	// FIRST 512 and LAST 88, AckReq on the LAST only.
	reconfig(512)
	run.message(q, mr.Addr+0x800+7, mr.RKey, 600)
	q.msg[0].ackReq = false
	sendAll(-1)
	// 11: 600 bytes cut at 256 (a requester at MTU 256): FIRST 256,
	// MIDDLE 256, LAST 88; the FIRST is not the context's MTU; the MIDDLE
	// and LAST dropped in ERR.
	q.mtu = 256
	run.message(q, mr.Addr+0x2800, mr.RKey, 600)
	q.mtu = 512
	q.msg[0].ackReq = false
	sendAll(-1)
	// 12: a new QP at Q6, MTU 512: a RETH of 600 bytes at VA mod 64 = 3,
	// FIRST 512, then a LAST of 50 (not 88): it ends short of the DMA
	// length.
	reconfig(512)
	run.message(q, mr.Addr+0x1800+3, mr.RKey, 600)
	q.msg[0].ackReq = false
	q.msg[1].pay = q.msg[1].pay[:50]
	sendAll(-1)
	// 13: a new QP at Q7, MTU 1024: the 600 bytes are one ONLY (VA mod
	// 64 = 9).
	reconfig(1024)
	run.message(q, mr.Addr+0x3400+9, mr.RKey, 600)
	sendAll(-1)
	// 14: an ONLY of 1025 bytes, more than the MTU (RETH 1025).
	q.mtu = 2048
	run.message(q, mr.Addr+0x2800, mr.RKey, 1025)
	q.mtu = 1024
	sendAll(-1)
	// 15: a new QP at Q8, MTU 512: a RETH of 700 at VA mod 64 = 1, FIRST
	// 512, then a MIDDLE of 512 that passes it (512 + 512 > 700).
	reconfig(512)
	run.message(q, mr.Addr+0xC00+1, mr.RKey, 700)
	q.msg[0].ackReq = false
	q.msg[1].op = ib.RDMAWriteMiddle
	q.msg[1].pay = append(q.msg[1].pay, make([]byte, 512-len(q.msg[1].pay))...)
	sendAll(-1)
	// 16: a new QP at Q9, MTU 512: a RETH of 512 at VA mod 64 = 5, FIRST
	// 512, then a LAST of no bytes.
	reconfig(512)
	run.message(q, mr.Addr+0x1C00+5, mr.RKey, 1024)
	q.msg[0].ackReq, q.msg[0].dlen = false, 512
	q.msg[1].pay = nil
	sendAll(-1)
	run.stream[len(run.stream)-1].gap = true
	return run, qpn, p0, q123
}

// TestResponderDirectedCosim: the directed cases through the model and
// hca_responder; the model's ACKs, counters and bytes are first checked
// against the values derived by hand from IBA's responder rules (below),
// then the RTL's against the model's.
func TestResponderDirectedCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	run, a, p, q := respDirected(cosimSeeds[0])
	at := func(k uint32) uint32 { return (p + k) & 0xffffff }
	want := []respAck{
		{a, at(0), 0x1F, 1, 0, 0, 0},                 // 1: ONLY at P, AckReq: ACK P, one message done
		{a, at(3), 0x1F, 2, 0, 0, 0},                 // 2: P+1..P+3, AckReq on the LAST: ACK P+3, MSN 2
		{a, at(3), 0x1F, 2, 0, 0, 0},                 // 3: P again: a duplicate, ACK the expected PSN - 1 = P+3
		{a, at(4), 0x60, 2, 0, 0, 0},                 // 4: MIDDLE P+5 with P+4 expected: one sequence NAK for P+4 (the LAST P+6 dropped)
		{a, at(6), 0x1F, 3, 0, 0, 0},                 //    the resend P+4..P+6: ACK P+6, MSN 3
		{a, at(7), 0x62, 3, 0, 0, 0},                 // 5: a stale R_Key at P+7: remote access error (P+8 dropped in ERR)
		{a, q[0], 0x62, 0, 0, 0, 0},                  // 6: one byte past the region, a new QP at Q1: remote access error (the MIDDLE and LAST dropped)
		{a, q[1], 0x62, 0, 0, 0, 0},                  // 7: another PD's region
		{a, q[2], 0x61, 0, 0, 0, 0},                  // 8: a MIDDLE outside a message: invalid request
		{a, (q[3] + 1) & 0xffffff, 0x61, 0, 0, 0, 0}, // 9: the SEND MIDDLE at Q4+1: invalid request
		// MTU 512: 512 + 88 = 600, the RETH's length: accepted. Cut at
		// 256 the FIRST carries 256 ≠ 512; 512 + 50 = 562 ≠ 600 at the
		// LAST: length errors, NAK invalid request (hca packetLengthOK).
		{a, (q[4] + 1) & 0xffffff, 0x1F, 1, 0, 0, 0}, // 10: FIRST Q5, LAST Q5+1: ACK Q5+1, MSN 1
		{a, (q[4] + 2) & 0xffffff, 0x61, 1, 0, 0, 0}, // 11: the FIRST of 256 at Q5+2: invalid request, MSN still 1
		{a, (q[5] + 1) & 0xffffff, 0x61, 0, 0, 0, 0}, // 12: the short LAST at Q6+1: invalid request
		// MTU 1024: 600 ≤ 1024, one ONLY: accepted; an ONLY of 1025 > 1024
		// is not. MTU 512: 512 + 512 = 1024 > 700 at the MIDDLE; a LAST of
		// 0 bytes (512 + 0 = 512 is the RETH's length, but a LAST carries
		// 1..MTU).
		{a, q[6], 0x1F, 1, 0, 0, 0},                  // 13: the ONLY at Q7: ACK, MSN 1
		{a, (q[6] + 1) & 0xffffff, 0x61, 1, 0, 0, 0}, // 14: the ONLY of 1025 at Q7+1: invalid request
		{a, (q[7] + 1) & 0xffffff, 0x61, 0, 0, 0, 0}, // 15: the MIDDLE at Q8+1: invalid request
		{a, (q[8] + 1) & 0xffffff, 0x61, 0, 0, 0, 0}, // 16: the empty LAST at Q9+1: invalid request
	}
	assert.Equal(t, want, run.acks, "the model's ACKs and NAKs")
	// Dropped in ERR: P+8 (5), the MIDDLE and LAST (6), the LAST (9), the
	// MIDDLE and LAST (11).
	assert.Equal(t, respCounts{acks: 6, naks: 11, dup: 1, seqDrop: 1, errDrop: 6}, run.want, "the model's counts")
	assert.Len(t, run.mem, 100+600+700+256+600+512+600+512+512,
		"bytes written: cases 1, 2, 4, 9's FIRST, 10, 12's FIRST, 13, 15's and 16's FIRSTs")
	res := runResp(t, context.Background(), t.TempDir(), run, 1, nil)
	assert.Empty(t, run.check(res), "hca_responder against the model")
	t.Logf("%d entries, %d cycles, %d wr0 writes (%d beats), %d ACKs/NAKs", len(run.stream), res.cycles, res.writes, res.beats, len(res.acks))
	assert.Equal(t, 1+3+3+1+2+1+1+1+1, res.writes, "one wr0 write per packet written")
	// 100 bytes at lane 0: 2 beats; 256 at lane 13: 5, 256 at 13+256: 5,
	// 88 at 13+512 = lane 13: 2; 256 at lane 5: 5, 256 at 5: 5, 188 at 5:
	// 4; 256 at lane 0: 4; 512 at lane 7: ⌈519/64⌉ = 9, 88 at 7: 2; 512 at
	// lane 3: ⌈515/64⌉ = 9; 600 at lane 9: ⌈609/64⌉ = 10; 512 at lane 1:
	// ⌈513/64⌉ = 9; 512 at lane 5: ⌈517/64⌉ = 9.
	assert.Equal(t, 2+5+5+2+5+5+4+4+9+2+9+10+9+9, res.beats, "wr0 beats")
}

// TestResponderCosim: random streams (respRun.fill) through the model and
// hca_responder, ACK_COALESCE 1 (the default) and 3 (coalesced ACKs and
// the flush), two seeds each: the host bytes, ACKs and NAKs and counters
// equal. Every kind of decision happens in each configuration.
func TestResponderCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	for _, coalesce := range []int{1, 3} {
		t.Run(fmt.Sprintf("coalesce%d", coalesce), func(t *testing.T) {
			t.Parallel()
			kinds := map[string]int{}
			for _, seed := range cosimSeeds[:2] {
				run := newRespRun(seed, coalesce)
				run.fill(respSteps)
				res := runResp(t, context.Background(), t.TempDir(), run, seed, nil)
				assert.Empty(t, run.check(res), "seed %d", seed)
				t.Logf("seed %d: %d entries, %d blocks, %d cycles, %d wr0 writes (%d beats), %d ACKs/NAKs; %v",
					seed, len(run.stream), run.blocks, res.cycles, res.writes, res.beats, len(res.acks), run.byKind)
				for k, n := range run.byKind {
					kinds[k] += n
				}
			}
			for _, k := range []string{"written (VA mod 64 0)", "written (VA mod 64 > 0)", "accepted, no payload", "duplicate",
				"ahead, NAK", "ahead, dropped", "in ERR", "no context", "invalid request", "lost",
				"R_Key invalid_key", "R_Key pd_mismatch", "R_Key access_denied", "R_Key out_of_bounds"} {
				assert.Positive(t, kinds[k], "decisions of kind %q", k)
			}
			if coalesce > 1 {
				assert.Positive(t, kinds["flushed ACK"], "coalesced ACKs flushed")
			}
		})
	}
}

// respSteps is each random run's length in steps.
const respSteps = 400

// TestResponderMutantsFail: each slip in hca_responder fails the
// co-simulation of one random run (ACK_COALESCE 3, so coalescing and the
// flush count; respMutantSteps steps), of the directed run or of the
// atomic directed run (respAtomicDirected).
func TestResponderMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const f = "hca_responder.v"
	for _, m := range []cosimMutant{
		{"unmutated", "", "", ""},
		{"a duplicate ACKed with the expected PSN", f, "p_psn <= ctx_epsn[ix] - 24'd1;", "p_psn <= ctx_epsn[ix];"},
		{"every packet ahead NAKed", f, "if (ctx_naks[ix]) begin", "if (1'b0) begin"},
		{"the sequence NAK with the packet's PSN", f, "p_syn <= SYN_SEQ; p_psn <= ctx_epsn[ix];", "p_syn <= SYN_SEQ; p_psn <= h_psn;"},
		{"a PSN behind compared without the modulo", f, "wire         behind = d[23];", "wire         behind = h_psn < ctx_epsn[ix];"},
		{"a failed R_Key check written anyway", f, "(state == S_KRSP && kc_rsp_valid && kc_rsp_result == 3'd0 && !is_rd && !is_atm)", "(state == S_KRSP && kc_rsp_valid && !is_rd && !is_atm)"},
		{"the R_Key checked over the packet's bytes", f, ": {32'd0, h_dlen};", ": {51'd0, h_len};"},
		{"the R_Key checked for REMOTE_READ", f, "is_rd ? 4'd4 : is_atm ? 4'd8 : 4'd2", "4'd4"},
		{"the R_Key checked in context 0's PD", f, "assign kc_req_pd    = ctx_pd[ix];", "assign kc_req_pd    = ctx_pd[0];"},
		{"a zero-length WRITE's R_Key checked", f, "has_reth && h_dlen != 32'd0) ||", "has_reth) ||"},
		{"a key failure leaves the context out of ERR", f, "if (k_fail) begin\n                ctx_err[ix] <= 1'b1;\n", "if (k_fail) begin\n"},
		{"a SEND inside a WRITE taken", f, "first == ctx_inmsg[ix] || (ctx_inmsg[ix] && ctx_insend[ix] != is_send);", "first == ctx_inmsg[ix];"},
		{"the first beat's lanes below the VA enabled", f, "(x_first ? ge_a : {64{1'b1}})", "{64{1'b1}}"},
		{"the last beat one lane short", f, "({1'b0, x_e} + 7'd1)", "({1'b0, x_e})"},
		{"the previous block's lanes not kept", f, "ge_s[63-k] ? rot[511-8*k -: 8] : x_prev[511-8*k -: 8];", "rot[511-8*k -: 8];"},
		{"the WRITE's next byte not moved", f, "ctx_wva[ix] <= wva + {51'd0, h_len};", "ctx_wva[ix] <= wva;"},
		{"the MSN moved by every packet", f, "ctx_msn[ix] + {23'd0, last};", "ctx_msn[ix] + 24'd1;"},
		{"an ACK for every AckReq", f, "h_ackreq && ctx_pend[ix] + 11'd1 >= COAL;", "h_ackreq;"},
		{"no flush", f, "(hit && !rq_valid && ctx_pend[ix] != 11'd0)", "1'b0"},
		{"a flush with a packet waiting", f, "(hit && !rq_valid && ctx_pend[ix] != 11'd0)", "(hit && ctx_pend[ix] != 11'd0)"},
		// The WRITE length rules (the directed run's cases 10..16).
		{"a FIRST or MIDDLE not checked against the MTU", f, "!last ? len14 != mtu_b :", "!last ? 1'b0 :"},
		{"the MTU taken as 256 whatever the context's", f, "wire [13:0]  mtu_b    = 14'd1 << mtu_sh;", "wire [13:0]  mtu_b    = 14'd256;"},
		{"an ONLY past the MTU taken", f, "(first && last) ? len14 > mtu_b :", "(first && last) ? 1'b0 :"},
		{"a LAST of no bytes taken", f, "(h_len == 13'd0 || len14 > mtu_b)", "(len14 > mtu_b)"},
		{"a packet past the DMA length taken", f, "wire         dlen_bad = w_done > w_tot ||", "wire         dlen_bad ="},
		{"a LAST short of the DMA length taken", f, "|| (last && w_done != w_tot);", ";"},
		{"a WRITE's bytes placed not counted", f, "else if (is_pw) ctx_roff[ix] <= w_done[31:0];", ""},
		{"a length error written anyway", f, "in_seq && !bad_seq && !bad_len &&", "in_seq && !bad_seq &&"},
		// Atomics (the atomic directed run, TestResponderAtomicCosim's).
		{"FETCH_ADD adds nothing", f, "a_orig + h_swap", "a_orig"},
		{"CMP_SWAP swaps on a miss", f, "(a_orig == h_cmp ? h_swap : a_orig)", "h_swap"},
		{"a misaligned atomic executed", f, "wire         a_mis   = a_ok && (h_va[2:0] != 3'd0 || r_busy);", "wire         a_mis   = a_ok && r_busy;"},
		{"an atomic's R_Key checked for REMOTE_WRITE", f, "is_atm ? 4'd8", "is_atm ? 4'd2"},
		{"a duplicate atomic dropped", f, "wire         at_dup  = f_hit && is_atm && res_atom[f_e];", "wire         at_dup  = 1'b0;"},
		{"a duplicate answered with the result, not the original value", f, "res_orig[a_slot] <= a_orig;", "res_orig[a_slot] <= a_res;"},
		{"the 8 bytes read from lane 0", f, "a_sh    = rd_rsp_data << {a_o, 3'd0};", "a_sh    = rd_rsp_data;"},
		{"the 8 bytes big-endian", f, "a_orig[8*ai +: 8] = a_sh[511-8*ai -: 8];", "a_orig[63-8*ai -: 8] = a_sh[511-8*ai -: 8];"},
		{"the whole block written back", f, "{8'hFF, 56'd0} >> a_o", "{64{1'b1}}"},
		{"the atomic ACK with the MSN before it", f, "p_psn <= h_psn; p_msn <= msn_1;", "p_psn <= h_psn; p_msn <= ctx_msn[ix];"},
		{"an atomic takes no PSN", f, "ctx_msn[ix] <= msn_1;\n            ctx_epsn[ix] <= ctx_epsn[ix] + 24'd1;", "ctx_msn[ix] <= msn_1;\n            ctx_epsn[ix] <= ctx_epsn[ix];"},
		// Several edits, joined by respEdits' separator.
		{"the ACK before the payload's write", f,
			"state <= S_XFER;\n                if (!hit)" + respEdits + "S_KRSP: if (kc_rsp_valid) state <= acommit ? S_ARD : S_XFER;" + respEdits +
				"if (x_done) state <= S_ACK;" + respEdits + "S_ACK: if (!p_ack && !p_cqe) begin\n                state <= S_FLUSH;" + respEdits +
				"end\n                state <= S_FLUSH;",
			"state <= S_ACK;\n                if (!hit)" + respEdits + "S_KRSP: if (kc_rsp_valid) state <= acommit ? S_ARD : S_ACK;" + respEdits +
				"if (x_done) state <= S_FLUSH;" + respEdits + "S_ACK: if (!p_ack && !p_cqe) begin\n                state <= S_XFER;" + respEdits +
				"end\n                state <= S_XFER;"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			// The atomic directed run (11 entries) and the directed run
			// (45) first, the random run (about 200 entries, ten times
			// their Icarus time) last: a mutant stops at its first failing
			// run (respFirstFailing).
			respFirstFailing(t, m, []func() *respRun{
				func() *respRun { r, _, _, _, _ := respAtomicDirected(cosimSeeds[0]); return r },
				func() *respRun { r, _, _, _ := respDirected(cosimSeeds[0]); return r },
				func() *respRun { r := newRespRun(cosimSeeds[0], 3); r.fill(respMutantSteps); return r },
			}, "the co-simulation passes a responder with %s")
		})
	}
}

// respFirstFailing runs one case of a responder mutant table: the runs
// mks make, in order, each through hca_responder with m's edits, judged by
// firstFailing (msg, with m's name, when a mutant passes them all).
func respFirstFailing(t *testing.T, m cosimMutant, mks []func() *respRun, msg string) {
	t.Helper()
	replace := respMutated(t, m)
	var runs []func() []string
	for _, mk := range mks {
		runs = append(runs, func() []string {
			run := mk()
			return run.check(runResp(t, context.Background(), t.TempDir(), run, 1, replace))
		})
	}
	firstFailing(t, m.file != "", runs, fmt.Sprintf(msg, m.name))
}

// firstFailing runs one case of a mutant table whose runs the Go side
// judges after the run: each of runs runs the case's design on one
// stimulus and returns what it got wrong. The unmutated case (mutated
// false) runs them all and each must pass. A mutant needs only to fail,
// so it stops at its first run that differs (its first difference
// logged) and fails the test (msg) if none does. A run a mutant skips is
// one the unmutated block passes, so stopping hides nothing the table
// checks; a table puts its cheap runs first.
func firstFailing(t *testing.T, mutated bool, runs []func() []string, msg string) {
	t.Helper()
	for i, run := range runs {
		diffs := run()
		if !mutated {
			assert.Empty(t, diffs, "the unmutated design, run %d of %d", i+1, len(runs))
			continue
		}
		if len(diffs) > 0 {
			t.Logf("run %d of %d: %s", i+1, len(runs), diffs[0])
			return
		}
	}
	if mutated {
		require.Fail(t, msg)
	}
}

// respEdits separates the edits of a mutant that makes several.
const respEdits = "\x00"

// respMutated is mutatedSource for a mutant of one or more edits (old and
// new split at respEdits), each of whose old texts occurs once.
func respMutated(t *testing.T, m cosimMutant) map[string]string {
	t.Helper()
	if m.file == "" {
		return map[string]string{}
	}
	olds, news := strings.Split(m.old, respEdits), strings.Split(m.new, respEdits)
	require.Len(t, news, len(olds))
	src := PrimitiveSource(m.file)
	for i, o := range olds {
		require.Equal(t, 1, strings.Count(src, o), "the mutation's text %q occurs once in %s", o, m.file)
		src = strings.Replace(src, o, news[i], 1)
	}
	return map[string]string{m.file: src}
}

// respMutantSteps is the mutant runs' length: each mutant first differed
// within it (Icarus, 2026-12-03).
const respMutantSteps = 200

// TestResponderLint: hca_responder alone (TestLint reaches it in
// hca_top at the designs' parameters): Verilator -Wall prints nothing
// for it at the co-simulation's parameters and at the widest (QPN_W 8,
// ACK_COALESCE 1024) (the co-simulations compile it with Icarus), and
// Yosys synthesises it (the report's script, synthesized) to some cells
// and flops at the parameters of TestReportYosys's design, whose synthesis
// it shares.
func TestResponderLint(t *testing.T) {
	t.Parallel()
	needTool(t, "verilator", "yosys")
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hca_responder.v"), []byte(PrimitiveSource("hca_responder.v")), 0o644))
	// RD_RES: one resource, 16 (the default) and 255 (hca.max_rd_atomic's
	// largest, not a power of two).
	for _, g := range [][]string{{"-GQPN_W=2", "-GACK_COALESCE=3", "-GRD_RES=1"}, {"-GQPN_W=8", "-GACK_COALESCE=1024", "-GRD_RES=16"},
		{"-GQPN_W=3", "-GACK_COALESCE=1", "-GRD_RES=255"}} {
		out, err := runTool(ctx, dir, "verilator", append([]string{"--lint-only", "-Wall", "--top-module", "hca_responder"}, append(g, "hca_responder.v")...)...)
		require.NoError(t, err)
		assert.Empty(t, strings.TrimSpace(out), "verilator -Wall %v", g)
	}
	// Yosys at TestReportYosys's design's parameters, through the
	// process's syntheses: one Yosys run serves both tests (about 13 s of
	// CPU each).
	p := designByKey(t, "r36v1").Params()
	params := []Param{{"QPN_W", p.QPNW}, {"ACK_COALESCE", p.AckCoalesce}, {"RD_RES", p.RdRes}}
	cells, flops, _, err := synthesized(ctx, dir, "stat.txt", "hca_responder", params)
	require.NoError(t, err)
	t.Logf("hca_responder %v: %d cells, %d flops", params, cells, flops)
	assert.Positive(t, cells)
	assert.Positive(t, flops)
}

// respRandomRuns runs two seeds of random responder streams (mk's, ACK
// coalescing 3 then 1, respSteps steps) through the model and
// hca_responder, each equal to the model's (check, then each's own extra
// check when not nil), and asks that every kind of decision named was
// taken in one of them, so the runs cannot pass by not reaching a rule.
func respRandomRuns(t *testing.T, mk func(seed uint64, coalesce int) *respRun, check func(seed uint64, res *respResult), kinds ...string) {
	t.Helper()
	seen := map[string]int{}
	for i, seed := range cosimSeeds[:2] {
		run := mk(seed, []int{3, 1}[i])
		run.fill(respSteps)
		res := runResp(t, context.Background(), t.TempDir(), run, seed, nil)
		assert.Empty(t, run.check(res), "seed %d", seed)
		if check != nil {
			check(seed, res)
		}
		t.Logf("seed %d: %d entries, %d blocks, %d cycles, %d wr0 writes (%d beats), %d ACKs/NAKs/replies, %d completions; %v",
			seed, len(run.stream), run.blocks, res.cycles, res.writes, res.beats, len(res.acks), len(res.cqes), run.byKind)
		for k, n := range run.byKind {
			seen[k] += n
		}
	}
	for _, k := range kinds {
		assert.Positive(t, seen[k], "decisions of kind %q", k)
	}
}

// TestResponderReadCosim: random streams with RDMA READ requests among
// the WRITEs (newRespRunReads: 0 bytes, under, at and over the MTU, any
// VA, bad R_Keys, PSN gaps, whole and partial duplicates of the last six
// READs) through the model and hca_responder with RD_RES 4 responder
// resources (hca.max_rd_atomic 4, so older READs' resources are recycled
// and their duplicates dropped): the READ replies on ack_* (first PSN, VA,
// length, MSN, replay from inside) in order with the ACKs and NAKs, the
// host bytes and the counters equal the model's. ACK_COALESCE 3 and 1.
func TestResponderReadCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	respRandomRuns(t, func(seed uint64, coalesce int) *respRun { return newRespRunReads(seed, coalesce, 4) }, nil,
		"READ 0 bytes", "READ < MTU", "READ = MTU", "READ > MTU", "READ VA mod 64 > 0",
		"READ replay from inside", "READ duplicate, partial", "READ duplicate dropped", "duplicate", "ahead, NAK", "R_Key access_denied", "written (VA mod 64 > 0)")
}
