package rtl

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
)

// ---- hca_wqe_fetch <-> hca.WQERead ----

// fetchSQ is one send queue on both sides: the context the block keeps
// (what the co-simulation expects it to hold), and the driver's ring in
// host memory.
type fetchSQ struct {
	// The context (hca_wqe_fetch's flops; the model's QP fields sqDB,
	// sqFetch, fetchInflight).
	on      bool
	qpn     uint32
	base    uint64
	logSize int
	ud      bool
	prod    uint32 // producer count from doorbells
	fetched uint32 // WQEBBs whose read was issued
	inFl    int    // read, not yet given to the parser

	// The driver: WQEBBs written (posted), announced by a doorbell
	// (rung), and handed to the parser (freed: the driver may write the
	// slot again). ring[slot] is the host memory of the ring.
	posted, rung, freed uint32
	ring                [][hca.WQEBBBytes]byte

	blocks []fetchedBlock // the QP's block buffer, oldest first
	waited int            // reads of other QPs since it could last read (-1: it cannot read now)
}

// fetchedBlock is a block in a QP's block buffer: the read's n on its
// last block, 0 on the others.
type fetchedBlock struct {
	tag  int
	data Value
}

func (q *fetchSQ) ringBBs() int { return 1 << q.logSize }

// hostRead is one read's block on its way back from host memory.
type hostRead struct {
	at   int // the first cycle it may come back
	q    int // the QP that read it
	tag  int // the read's n on its last block, else 0
	data Value
}

// wqeFetchDUT drives hca_wqe_fetch as a driver and host memory would:
// QPs of several ring sizes (1 to 2^15 WQEBBs) are created, random send
// WQEs (hca.EncodeSendWQE, 1 to 16 WQEBBs) are written into their rings
// and announced by doorbells (batched, repeated, stale and for QPNs
// without a context), and host memory answers each read in order after 1
// to 24 cycles, a block a beat with gaps. Now and then one QP hogs the
// fetcher's attention: it posts nearly every cycle while the others post
// now and then. It expects each read request to be the one hca.WQERead
// gives for the counters of the QP whose turn it is (round robin among the
// QPs that can read, one read per turn), and the blocks handed to the
// parser (wqe_*) and its decode (dec_*) to be each ring's WQEs in order,
// whole. Its bookkeeping mirrors the block's (the two arbiters, the
// request register, the QPs' block buffers, the parser's lock and output
// register), cycle by cycle.
type wqeFetchDUT struct {
	qpnW, depth int
	sqs         []fetchSQ
	arb         *components.RoundRobin // whose read is next
	srcArb      *components.RoundRobin // whose WQE goes to the parser next

	reqV    bool
	reqAddr uint64
	reqLen  int
	reqQ    int // the QP and slot of the request register's read
	reqSlot int
	reqN    int

	host []hostRead // read blocks host memory has yet to return, in order

	// The parser: the QP whose WQE it is part way through (lock, ps,
	// pleft blocks still to go), blocks of the WQE it is taking, and its
	// output register.
	lock        bool
	ps, pleft   int
	parseBlocks []byte
	outValid    bool
	out         wqeItem

	toCreate                                     []int // contexts still to create after reset
	retiring                                     int   // a context to create again once idle (-1 none); nothing is posted to it
	hog                                          int   // a QP posting nearly every cycle (-1 none)
	c                                            int
	pPost, pReqReady, pRsp, pWQEReady, pDecReady float64
	pBusy                                        float64 // each context's fence_busy bit, drawn each cycle

	// The fence: WQEs the parser took from one QP while another's fenced
	// head was held (passed), and fenced WQEs taken (not held).
	fencePassed, fencedTaken int
	rdatHeld                 int // cycles a fenced head was held for its QP's READ or atomic on dec_* alone

	// Coverage, for TestWQEFetchStimulusCovers.
	nReads, ringEnd, windowFull, windowBound, stale, foreign, recreated, switches, parsed int
	maxRead, foreignOn                                                                    int
	// Fairness: the most reads of other QPs a QP that could read waited
	// for; reads of other QPs while the hog had WQEBBs posted and not
	// fetched (where a fetcher held until its QP caught up would serve
	// the hog only); WQEs the parser
	// waited inside for the rest of their blocks while another QP's
	// blocks were buffered.
	maxWait, hogOthers, splitWaits int
	lastRead                       int // the QP of the last read (-1 none yet)
}

func newWQEFetchDUT(qpnW, depth int) *wqeFetchDUT {
	n := 1 << qpnW
	d := &wqeFetchDUT{qpnW: qpnW, depth: depth, sqs: make([]fetchSQ, n), arb: components.NewRoundRobin(n),
		srcArb: components.NewRoundRobin(n), retiring: -1, hog: -1, lastRead: -1}
	for k := range n {
		if k != n-1 || n == 2 {
			d.toCreate = append(d.toCreate, k) // the last context stays empty (with 4 QPs or more)
		}
	}
	return d
}

func (d *wqeFetchDUT) module() string { return "hca_wqe_fetch" }
func (d *wqeFetchDUT) files() []string {
	return []string{"hca_wqe_fetch.v", "hca_wqe_parse.v", "sync_fifo.v", "rr_arbiter.v", "onehot_encode.v"}
}
func (d *wqeFetchDUT) params() []Param {
	return []Param{{"QPN_W", d.qpnW}, {"WQE_PREFETCH_DEPTH", d.depth}}
}
func (d *wqeFetchDUT) inputs() []Signal {
	return []Signal{
		{Name: "sq_cfg_valid", Width: 1}, {Name: "sq_cfg_qpn", Width: 24}, {Name: "sq_cfg_base", Width: 64},
		{Name: "sq_cfg_log_size", Width: 4}, {Name: "sq_cfg_ud", Width: 1},
		{Name: "db_valid", Width: 1}, {Name: "db_qpn", Width: 24}, {Name: "db_producer", Width: 16},
		{Name: "rd_req_ready", Width: 1}, {Name: "rd_rsp_valid", Width: 1}, {Name: "rd_rsp_data", Width: 512},
		{Name: "wqe_ready", Width: 1}, {Name: "dec_ready", Width: 1},
		// The gather list's segments, always taken: the WQEs posted here
		// have one data segment or none, so the parser holds each WQE only
		// until its header is taken, as before it had a list (its lists:
		// the parser's own co-simulation).
		{Name: "dec_sge_ready", Width: 1},
		// hca_requester's per-context fence state: random, in phases.
		{Name: "fence_busy", Width: 1 << d.qpnW},
	}
}
func (d *wqeFetchDUT) outputs() []Signal {
	const hdr = "dec_valid && dec_err != 2'd1"
	return []Signal{
		{Name: "db_ready", Width: 1}, {Name: "rd_req_valid", Width: 1},
		{Name: "rd_req_addr", Width: 64, ValidWhen: "rd_req_valid"}, {Name: "rd_req_len", Width: 16, ValidWhen: "rd_req_valid"},
		{Name: "wqe_valid", Width: 1}, {Name: "wqe_qpn", Width: 24, ValidWhen: "wqe_valid"},
		{Name: "wqe_data", Width: 512, ValidWhen: "wqe_valid"},
		{Name: "dec_valid", Width: 1}, {Name: "dec_err", Width: 2, ValidWhen: "dec_valid"},
		{Name: "dec_opcode", Width: 3, ValidWhen: hdr}, {Name: "dec_index", Width: 16, ValidWhen: hdr},
		{Name: "dec_qpn", Width: 24, ValidWhen: hdr}, {Name: "dec_bbs", Width: 5, ValidWhen: hdr},
		{Name: "dec_length", Width: 32, ValidWhen: "dec_valid && dec_err == 2'd0"},
	}
}

// fetchRingLogs are the ring sizes (log2 WQEBBs) contexts are created
// with: a one-block ring (every read one block, every WQE one block),
// rings that a few WQEs wrap, and the largest, 2^15 (once in 16).
var fetchRingLogs = []int{0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 6, 6, 15}

// create draws a context for k: a QPN whose low bits are k, a ring base
// (now and then at the top of the 64-bit space, so base + slot * 64
// wraps), a size, RC or UD.
func (d *wqeFetchDUT) create(r *rand.Rand, k int) fetchSQ {
	q := fetchSQ{on: true, qpn: (r.Uint32()&0xffffff)&^(1<<d.qpnW-1) | uint32(k), logSize: fetchRingLogs[r.IntN(len(fetchRingLogs))], ud: r.IntN(4) == 0}
	q.base = r.Uint64() &^ 63
	if r.IntN(4) == 0 {
		q.base = ^uint64(0)&^63 - uint64(r.IntN(4))<<6
	}
	q.ring = make([][hca.WQEBBBytes]byte, q.ringBBs())
	return q
}

// post writes a random WQE (of the QP's type, at most the ring's free
// blocks) into the ring, as ibv_post_send does; false if it has no room.
func (d *wqeFetchDUT) post(r *rand.Rand, q *fetchSQ) bool {
	free := q.ringBBs() - int(q.posted-q.freed)
	if free == 0 {
		return false
	}
	c := randomWQECase(r)
	c.mutate = nil
	w := c.wr
	w.UD = q.ud
	if q.ud && w.Opcode != hca.WRSend && w.Opcode != hca.WRSendImm {
		w.Opcode = hca.WRSend
	}
	if w.Inline {
		w.Length = min(w.Length, uint32(hca.InlineLimit(w.Opcode, w.UD)))
	}
	if hca.WQEBBs(&w) > free {
		// The smallest WQE of the QP's type: a zero-length SEND.
		w = hca.SendWR{Opcode: hca.WRSend, UD: q.ud, Signaled: true, Length: 0, LKey: 7}
		if hca.WQEBBs(&w) > free {
			return false
		}
	}
	// A fence mode: IBV_SEND_FENCE (4), mode 2 (a fence without the
	// small fence), the small fence (1: not a fence) or none.
	fm := []byte{4, 2, 1, 0, 0, 0}[r.IntN(6)]
	var buf [16 * hca.WQEBBBytes]byte
	var inline []byte
	if w.Inline {
		inline = make([]byte, w.Length)
		for i := range inline {
			inline[i] = byte(r.Uint32())
		}
	}
	n := hca.EncodeSendWQE(buf[:], &w, uint16(q.posted), q.qpn, inline) / hca.WQEBBBytes
	setFence(fm)(buf[:])
	for b := range n {
		copy(q.ring[int(q.posted+uint32(b))%q.ringBBs()][:], buf[b*hca.WQEBBBytes:])
	}
	q.posted += uint32(n)
	return true
}

func (d *wqeFetchDUT) cycle(r *rand.Rand, in, out []Value) {
	if d.c%256 == 0 {
		d.pPost = []float64{0.02, 0.1, 0.3}[r.IntN(3)]
		d.pReqReady = []float64{0.2, 0.7, 1}[r.IntN(3)]
		d.pRsp = []float64{0.3, 0.8, 1}[r.IntN(3)]
		d.pWQEReady = []float64{0.3, 0.9, 1}[r.IntN(3)]
		d.pDecReady = []float64{0.2, 0.8, 1}[r.IntN(3)]
		d.pBusy = []float64{0, 0, 0.3, 0.8}[r.IntN(4)]
		// Every other phase QP 0 (whose ring is large) hogs: it posts
		// nearly every cycle, so it has WQEBBs posted and not fetched
		// nearly all the time; then the request port is slow now and
		// then, so the others' reads queue behind its.
		d.hog = -1
		if r.IntN(2) == 0 && d.sqs[0].on && d.retiring != 0 {
			d.hog = 0
			d.pReqReady = []float64{0.2, 0.5, 1}[r.IntN(3)]
		}
	}
	d.c++
	nq := len(d.sqs)

	// Create a context: each after reset, then now and then one that was
	// used and is idle (nothing posted unfetched, nothing in flight, not
	// fetching) again, with a new ring.
	cfg, cfgK := false, 0
	var cfgSQ fetchSQ
	if len(d.toCreate) > 0 {
		cfg, cfgK = true, d.toCreate[0]
		d.toCreate = d.toCreate[1:]
	} else if d.retiring < 0 {
		if k := r.IntN(nq); d.sqs[k].on && d.sqs[k].fetched > 0 && k != d.hog && r.IntN(200) == 0 {
			d.retiring = k // the driver stops posting to it
		}
	} else if q := &d.sqs[d.retiring]; q.prod == q.fetched && q.inFl == 0 && q.posted == q.rung {
		cfg, cfgK = true, d.retiring
		d.retiring = -1
		d.recreated++
	}
	if cfg {
		cfgSQ = d.create(r, cfgK)
		if cfgK == 0 && len(d.sqs) > 2 {
			// The hog's ring: 2^6 to 2^9 WQEBBs, so it can keep posting
			// (and wraps). With two QPs it keeps a drawn size: the other
			// QP's reads bind at the ring's end often enough then.
			cfgSQ.logSize = 6 + r.IntN(4)
			cfgSQ.ring = make([][hca.WQEBBBytes]byte, cfgSQ.ringBBs())
		}
	}

	// The driver posts WQEs and rings doorbells: for the QP's newest
	// producer count (after one or several WQEs, some posted without a
	// doorbell of their own), again for an old one, or for a QPN the
	// block has no context for.
	db, dbQPN, dbProd := false, uint32(0), uint16(0)
	k, p := r.IntN(nq), d.pPost
	if d.hog >= 0 {
		// Half the cycles the hog posts, nearly always; in the others
		// the rest post as in a busy phase, so they want reads too.
		if r.IntN(2) == 0 {
			k, p = d.hog, 0.9
		} else {
			p = 0.3
		}
	}
	if d.sqs[k].on && !(cfg && cfgK == k) && k != d.retiring && r.Float64() < p {
		q := &d.sqs[k]
		for range 1 + r.IntN(2) {
			d.post(r, q)
		}
		switch x := r.IntN(24); {
		case x < 16:
			db, dbQPN, dbProd = true, q.qpn, uint16(q.posted)
			q.rung = q.posted
		case x < 20:
			// A doorbell not ahead of the context's producer: 0 to 40
			// behind, or exactly 2^15 ahead (as far behind).
			db, dbQPN, dbProd = true, q.qpn, uint16(q.rung)-uint16(r.IntN(41))
			if x == 19 {
				dbProd = uint16(q.rung) + 0x8000
			}
			d.stale++
		default:
			// The context's index bits with another QPN, or a context
			// never created.
			db, dbQPN, dbProd = true, q.qpn^(1<<(d.qpnW+r.IntN(24-d.qpnW))), uint16(r.Uint32())
			if nq > 2 && r.IntN(2) == 0 {
				dbQPN = r.Uint32()&0xffffff | uint32(nq-1)
			}
			d.foreign++
			if d.sqs[int(dbQPN)&(nq-1)].on {
				d.foreignOn++ // the index of a created context
			}
		}
	}

	reqReady := r.Float64() < d.pReqReady
	rsp := len(d.host) > 0 && d.host[0].at <= d.c && r.Float64() < d.pRsp
	wqeReady := r.Float64() < d.pWQEReady
	decReady := r.Float64() < d.pDecReady

	in[0], in[1], in[2], in[3], in[4] = b2v(cfg), U(uint64(cfgSQ.qpn)), U(cfgSQ.base), U(uint64(cfgSQ.logSize)), b2v(cfgSQ.ud)
	if !cfg {
		in[1], in[2], in[3], in[4] = U(uint64(r.Uint32()&0xffffff)), U(r.Uint64()), U(uint64(r.IntN(16))), b2v(r.IntN(2) == 0)
	}
	in[5], in[6], in[7] = b2v(db), U(uint64(dbQPN)), U(uint64(dbProd))
	if !db {
		in[6], in[7] = U(uint64(d.sqs[r.IntN(nq)].qpn)), U(uint64(r.Uint32()&0xffff)) // ignored
	}
	in[8], in[9] = b2v(reqReady), b2v(rsp)
	if rsp {
		in[10] = d.host[0].data
	} else {
		in[10] = randomBlock(r)
	}
	in[11], in[12], in[13] = b2v(wqeReady), b2v(decReady), b2v(true)
	var busy uint64
	for k := range nq {
		if r.Float64() < d.pBusy {
			busy |= 1 << k
		}
	}
	in[14] = U(busy)

	// The outputs of this cycle, from the state at its start. The
	// parser's source: the QP whose WQE it is part way through, else the
	// next QP round robin with a block buffered.
	parseInReady := !d.outValid || decReady
	// A QP whose head (a WQE's first block unless the parser is part
	// way through one of its WQEs) is fenced (hca.SendWQE.Fenced), on an
	// RC QP whose context is busy, or whose READ or atomic (opcode bit 2:
	// 4 READ, 5 and 6 the atomics) is offered on dec_* (not yet in the
	// requester's ring), is not offered.
	inBusy := busy
	if d.outValid && d.out.err != 1 && uint64(d.out.want.Opcode)&4 != 0 {
		busy |= 1 << (d.out.want.QPN & uint32(nq-1))
	}
	var buffered components.PortSet
	held := false
	for k, q := range d.sqs {
		if len(q.blocks) > 0 {
			if fm := headFenceMode(q.blocks[0].data); (fm == 2 || fm == 4) && !q.ud && busy>>k&1 == 1 {
				held = true
				if inBusy>>k&1 == 0 {
					d.rdatHeld++ // held for the READ or atomic on dec_* alone
				}
				continue
			}
			buffered.Set(k)
		}
	}
	src := d.ps
	if !d.lock {
		src = d.srcArb.Pick(buffered)
	}
	bbValid := src >= 0 && len(d.sqs[src].blocks) > 0
	for i := range out {
		out[i] = U(0)
	}
	out[0], out[1] = U(1), b2v(d.reqV)
	if d.reqV {
		out[2], out[3] = U(d.reqAddr), U(uint64(d.reqLen))
	}
	out[4] = b2v(bbValid && parseInReady)
	out[6] = make(Value, 8)
	if bbValid && parseInReady {
		out[5], out[6] = U(uint64(d.sqs[src].qpn)), d.sqs[src].blocks[0].data
	}
	out[7] = b2v(d.outValid)
	if d.outValid {
		w, e := d.out.want, d.out.err
		out[8] = U(uint64(e))
		if e != 1 {
			out[9], out[10], out[11], out[12] = U(uint64(w.Opcode)), U(uint64(w.Index)), U(uint64(w.QPN)), U(uint64(w.BBs))
		}
		if e == 0 {
			out[13] = U(uint64(w.Length))
		}
	}
	if d.lock && !bbValid && buffered.Any() {
		d.splitWaits++ // the rest of a WQE not back yet, another QP's blocks waiting
	}

	// The rising edge: every decision from the state at the start of the
	// cycle, as the block's flops. The fetcher: the next QP round robin
	// among those that can read (hca.WQERead gives n > 0), one read per
	// turn.
	var canRead components.PortSet
	for k, q := range d.sqs {
		if q.on && q.prod != q.fetched && q.inFl < d.depth {
			canRead.Set(k)
		}
	}
	rq := d.arb.Pick(canRead)
	issue := rq >= 0 && (!d.reqV || reqReady)
	var n, slot int
	if issue {
		q := &d.sqs[rq]
		n, slot = hca.WQERead(q.prod, q.fetched, q.inFl, d.depth, q.ringBBs())
		if n == 0 {
			panic("rtl: wqeFetchDUT: a QP that can read reads nothing")
		}
		d.count(q, n, slot)
		d.arb.Commit(rq)
		d.fair(rq, canRead)
	}
	drain := bbValid && parseInReady && wqeReady

	if d.reqV && reqReady {
		// Host memory returns the read's blocks, in order after those
		// of earlier reads, from 1 to 24 cycles on; the last carries n.
		rq := &d.sqs[d.reqQ]
		at := d.c + 1 + r.IntN(24)
		for b := range d.reqN {
			h := hostRead{at: at, q: d.reqQ, data: bytesValue(rq.ring[(d.reqSlot+b)%rq.ringBBs()][:])}
			if b == d.reqN-1 {
				h.tag = d.reqN
			}
			d.host = append(d.host, h)
		}
		d.reqV = false
	}
	if d.outValid && decReady {
		d.outValid = false
	}
	if drain {
		q := &d.sqs[src]
		blk := q.blocks[0]
		q.blocks = q.blocks[1:]
		if !d.lock {
			// A WQE's first block: the parser stays with its QP for
			// the rest (hca.WQEBBsOfCtrl of this block).
			d.srcArb.Commit(src)
			if held {
				d.fencePassed++
			}
			if fm := headFenceMode(blk.data); (fm == 2 || fm == 4) && !q.ud {
				d.fencedTaken++
			}
			var b [hca.WQEBBBytes]byte
			for w := range 8 {
				binary.BigEndian.PutUint64(b[64-8*(w+1):], blk.data[w])
			}
			if bbs := hca.WQEBBsOfCtrl(b[:]); bbs > 1 {
				d.lock, d.ps, d.pleft = true, src, bbs-1
			}
		} else if d.pleft--; d.pleft == 0 {
			d.lock = false
		}
		d.take(q, blk.data)
		q.freed++
		// A read's blocks are all parsed: its n leave the window
		// (hca.Device.wqeFetched).
		q.inFl -= blk.tag
	}
	if issue {
		q := &d.sqs[rq]
		d.reqV, d.reqAddr, d.reqLen = true, q.base+uint64(slot)*hca.WQEBBBytes, n*hca.WQEBBBytes
		d.reqQ, d.reqSlot, d.reqN = rq, slot, n
		q.fetched += uint32(n)
		q.inFl += n
	}
	if rsp {
		h := d.host[0]
		d.host = d.host[1:]
		q := &d.sqs[h.q]
		q.blocks = append(q.blocks, fetchedBlock{tag: h.tag, data: h.data})
		if len(q.blocks) > d.depth {
			panic("rtl: wqeFetchDUT: a block buffer overflowed")
		}
	}
	if db {
		k := int(dbQPN) & (nq - 1)
		if t := &d.sqs[k]; t.on && t.qpn == dbQPN {
			if ahead := dbProd - uint16(t.prod); ahead != 0 && ahead < 0x8000 {
				t.prod += uint32(ahead)
			}
		}
	}
	if cfg {
		d.sqs[cfgK] = cfgSQ
	}
}

// fair records, for the read just given to QP rq, how many reads of other
// QPs each QP that could read has waited for (TestWQEFetchStimulusCovers
// bounds the most by 2^QPN_W - 1: the RTL's reads are compared with these).
func (d *wqeFetchDUT) fair(rq int, canRead components.PortSet) {
	if d.lastRead >= 0 && d.lastRead != rq {
		d.switches++
	}
	d.lastRead = rq
	if h := d.hog; h >= 0 && rq != h && d.sqs[h].prod != d.sqs[h].fetched {
		d.hogOthers++
	}
	for k := range d.sqs {
		q := &d.sqs[k]
		switch {
		case k == rq || !canRead.Has(k):
			q.waited = 0
		default:
			q.waited++
			d.maxWait = max(d.maxWait, q.waited)
		}
	}
}

// take is the parser (hca_wqe_parse) taking one block of the fetching
// QP: after a WQE's last block (hca.WQEBBsOfCtrl of its first) its
// decode is in the output register.
func (d *wqeFetchDUT) take(q *fetchSQ, block Value) {
	var b [hca.WQEBBBytes]byte
	for w := range 8 {
		binary.BigEndian.PutUint64(b[64-8*(w+1):], block[w])
	}
	d.parseBlocks = append(d.parseBlocks, b[:]...)
	if len(d.parseBlocks)/hca.WQEBBBytes < hca.WQEBBsOfCtrl(d.parseBlocks) {
		return
	}
	var buf [16 * hca.WQEBBBytes]byte
	copy(buf[:], d.parseBlocks)
	it := wqeItem{ud: q.ud}
	var err error
	if q.ud {
		it.want, err = hca.DecodeUDSendWQE(buf[:])
	} else {
		it.want, err = hca.DecodeSendWQE(buf[:])
	}
	switch {
	case err == nil:
	case strings.Contains(err.Error(), "is not supported"):
		it.err = 1
	default:
		it.err = 2
	}
	d.outValid, d.out = true, it
	d.parseBlocks = d.parseBlocks[:0]
	d.parsed++
}

// count records a read for the coverage test: which of hca.WQERead's
// three terms bound it.
func (d *wqeFetchDUT) count(q *fetchSQ, n, slot int) {
	d.nReads++
	d.maxRead = max(d.maxRead, n)
	unfetched := int(q.prod - q.fetched)
	if n == q.ringBBs()-slot && n < unfetched && q.ringBBs() > 1 {
		d.ringEnd++
	}
	if n == d.depth-q.inFl && n < unfetched {
		d.windowBound++
		if q.inFl > 0 {
			d.windowFull++ // the window partly used by an earlier read
		}
	}
}

// headFenceMode is a WQE's fence mode, fm_ce_se bits 7:5 (byte 11) of its
// first block (byte 0 in the top bits of word 7).
func headFenceMode(block Value) int {
	return int(block[6]>>(64-8*4+5)) & 7 // byte 11: byte 3 of word 6 (bytes 8..15)
}

func randomBlock(r *rand.Rand) Value {
	v := make(Value, 8)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

// TestWQEFetchStimulusCovers: every seed's run sends stale and foreign
// doorbells and parses dozens of WQEs; over the five seeds of a case the
// ring's end binds reads with more posted behind it, the fetcher moves
// between QPs, the window binds reads (with depth > 1 also after an
// earlier read used part of it), a read takes the whole window, doorbells
// name a created context's index with another QPN, and QPs are created
// again. So a block that got one of them wrong could not match the model
// by luck. (The mutants run on the first seed of 4 QPs with a 3-block
// window, where every kind occurs.)
//
// Fairness: while a hog QP posts nearly every cycle, the other QPs' reads
// go while it has WQEBBs posted and not fetched (hogOthers: a fetcher held
// by its QP until that QP caught up would give them none), no QP that can
// read waits for more than 2^QPN_W - 1 reads of others, and with 4 QPs or
// more some wait for two (the bound is tested under contention, not only
// with an idle fetcher); the parser waits inside a WQE for its rest
// while another QP's blocks are buffered (a read that ended inside a WQE
// was followed by another QP's).
func TestWQEFetchStimulusCovers(t *testing.T) {
	for _, tc := range []struct{ qpnW, depth int }{{1, 1}, {2, 3}, {qpnW, 8}, {2, 16}} {
		var ringEnd, switches, windowBound, windowFull, recreated, foreignOn, maxRead, maxWait, splitWaits, hogOthers int
		var fencePassed, fencedTaken, rdatHeld int
		for _, seed := range cosimSeeds {
			r := rand.New(rand.NewPCG(seed, 0x7e57))
			d := newWQEFetchDUT(tc.qpnW, tc.depth)
			in := make([]Value, len(d.inputs()))
			out := make([]Value, len(d.outputs()))
			for range cosimCycles {
				d.cycle(r, in, out)
			}
			msg := []any{"qpn_w %d depth %d seed %d", tc.qpnW, tc.depth, seed}
			assert.GreaterOrEqual(t, d.nReads, 60, msg...)
			assert.GreaterOrEqual(t, d.parsed, 50, msg...)
			ringEnd += d.ringEnd
			assert.GreaterOrEqual(t, d.stale, 10, msg...)
			assert.GreaterOrEqual(t, d.foreign, 10, msg...)
			assert.LessOrEqual(t, d.maxWait, 1<<tc.qpnW-1, msg...)
			switches += d.switches
			windowBound += d.windowBound
			windowFull += d.windowFull
			recreated += d.recreated
			foreignOn += d.foreignOn
			maxRead = max(maxRead, d.maxRead)
			maxWait = max(maxWait, d.maxWait)
			splitWaits += d.splitWaits
			hogOthers += d.hogOthers
			fencePassed += d.fencePassed
			fencedTaken += d.fencedTaken
			rdatHeld += d.rdatHeld
		}
		msg := []any{"qpn_w %d depth %d", tc.qpnW, tc.depth}
		assert.GreaterOrEqual(t, ringEnd, 20, msg...)
		assert.GreaterOrEqual(t, switches, 100, msg...)
		assert.GreaterOrEqual(t, windowBound, 20, msg...)
		if tc.depth > 1 {
			// A one-block window is never partly used.
			assert.GreaterOrEqual(t, windowFull, 5, msg...)
		}
		assert.GreaterOrEqual(t, recreated, 3, msg...)
		assert.GreaterOrEqual(t, foreignOn, 20, msg...)
		assert.Equal(t, tc.depth, maxRead, msg...)
		assert.GreaterOrEqual(t, hogOthers, 30, msg...)
		assert.GreaterOrEqual(t, maxWait, min(2, 1<<tc.qpnW-1), msg...)
		assert.GreaterOrEqual(t, splitWaits, 20, msg...)
		// The fence: WQEs of other QPs pass a held fenced one, and fenced
		// WQEs go when their context is not busy.
		assert.GreaterOrEqual(t, fencePassed, 5, msg...)
		assert.GreaterOrEqual(t, fencedTaken, 20, msg...)
		assert.Positive(t, rdatHeld, msg...)
		t.Logf("qpn_w %d depth %d: %d WQEs passed a held fenced one, %d fenced WQEs taken, %d cycles a fenced head held by its QP's READ or atomic on dec_* alone",
			tc.qpnW, tc.depth, fencePassed, fencedTaken, rdatHeld)
	}
}

// TestWQEFetchMutantsFail: each slip below, the kind an RTL engineer
// makes in a WQE fetch unit, fails the co-simulation of the first seed.
func TestWQEFetchMutantsFail(t *testing.T) {
	const f = "hca_wqe_fetch.v"
	runMutants(t, func() cosimDUT { return newWQEFetchDUT(2, 3) }, []cosimMutant{
		{"a read one block past the ring's end", f, "{1'b0, ring_mask} + 17'd1 - {1'b0, slot}", "{1'b0, ring_mask} + 17'd2 - {1'b0, slot}"},
		{"a read one block short of the ring's end", f, "{1'b0, ring_mask} + 17'd1 - {1'b0, slot}", "{1'b0, ring_mask} - {1'b0, slot}"},
		{"the window check <= instead of <", f, "(sq_infl[g] < DEPTH)", "(sq_infl[g] <= DEPTH)"},
		{"the window ignored in n", f, "(n_ring < room) ? n_ring : room", "n_ring"},
		{"the slot not scaled to 64 bytes", f, "{sq_base[rq] + {42'd0, slot}, 6'd0}", "{sq_base[rq], 6'd0} + {48'd0, slot}"},
		{"the base of the QP with the lowest index", f, "{sq_base[rq] + {42'd0, slot}, 6'd0}", "{sq_base[0] + {42'd0, slot}, 6'd0}"},
		{"in flight not decremented", f, " - (bq_pop[i] ? bb_tag : {FLT_W{1'b0}})", ""},
		{"in flight decremented per block", f, " - (bq_pop[i] ? bb_tag : {FLT_W{1'b0}})", " - (bq_pop[i] ? ONE : {FLT_W{1'b0}})"},
		{"every block tagged with its read's n", f, "rt_last ? rt_n : {FLT_W{1'b0}}", "rt_n"},
		{"a stale doorbell taken", f, "db_ahead != 16'd0 && !db_ahead[15]", "db_ahead != 16'd0"},
		{"a doorbell's QPN not checked", f, "sq_on[db_idx] && sq_qpn[db_idx] == db_qpn &&", "sq_on[db_idx] &&"},
		{"the fetcher never handed over (the QP read keeps its turn)", f, ".commit(issue), .commit_idx(rq)", ".commit(issue), .commit_idx(rq - 1'b1)"},
		{"the fetcher's pointer never moves", f, ".commit(issue), .commit_idx(rq)", ".commit(1'b0), .commit_idx(rq)"},
		{"a read issued with the request register full", f, "rq_valid && (!rd_req_valid || rd_req_ready)", "rq_valid"},
		{"a read's blocks counted one too many", f, "rt_got + ONE == rt_n", "rt_got == rt_n"},
		{"the parser not held to a WQE's QP", f, "wire [QPN_W-1:0] src      = plock ? ps : sg;", "wire [QPN_W-1:0] src      = sg;"},
		{"the parser's hold one block short", f, "pleft <= bb_bbs - 5'd1;", "pleft <= bb_bbs - 5'd2;"},
		{"the parser's QP order not round robin", f, ".commit(first), .commit_idx(sg)", ".commit(1'b0), .commit_idx(sg)"},
		{"creation leaves the fetched count", f, "                sq_fetch[sq_cfg_qpn[QPN_W-1:0]] <= 16'd0;\n", ""},
		{"a fenced WQE never held", f, ".req(bq_valid & ~fence_held)", ".req(bq_valid)"},
		{"a fenced WQE held while any context is busy", f, "!sq_ud[g] && (fence_busy[g] || dec_rdat[g]);", "!sq_ud[g] && (|fence_busy || dec_rdat[g]);"},
		{"every QP held while a fenced head is", f, ".req(bq_valid & ~fence_held)", ".req(|fence_held ? {QPS{1'b0}} : bq_valid)"},
		{"fence mode 2 not held", f, "(hfm == 3'd2 || hfm == 3'd4)", "(hfm == 3'd4)"},
		{"a UD QP's fenced WQE held", f, "&& !sq_ud[g] && (fence_busy[g]", "&& (fence_busy[g]"},
		{"a READ or atomic on dec_* not holding its QP's fenced WQE", f, "&& (fence_busy[g] || dec_rdat[g]);", "&& fence_busy[g];"},
		{"the fence mode from byte 12", f, "bq_data[g*ENT_W + DATA_W - 89 -: 3]", "bq_data[g*ENT_W + DATA_W - 97 -: 3]"},
	})
}
