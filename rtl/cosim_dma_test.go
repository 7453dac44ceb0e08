package rtl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
)

// ---- hca_dma_engine <-> hca.ReadRequest and a host model ----

// dmaCycles is each seed's run: random traffic, then dmaDrain cycles in
// which no client asks anything new and the host answers at once, so every
// read must be delivered and every write sent by the end (no deadlock).
const (
	dmaCycles = 4000
	dmaDrain  = 1500
	// dmaBacklog is the most blocks a read client has asked and not yet
	// received when it asks again (a client's buffer is finite), so the
	// drain can finish what is left: the host answers one block a cycle.
	dmaBacklog = 400
)

// dmaRead is one client read request on both sides: what the client asked,
// its host requests by hca.ReadRequests, and the blocks host memory held
// at each request's address when the host took that request.
type dmaRead struct {
	addr   uint64 // as asked (bits 5:0 ignored by the block)
	len    int    // as asked (0 = 65536)
	chunks []hca.ReadChunk
	data   [][]Value // per chunk, filled when the host takes it
	issued int       // chunks the host has taken
	wseq   int       // writes accepted before it (at or before its cycle)
	acc    int       // the cycle the block took it
}

// dmaPending is a host request the host has taken and is answering.
type dmaPending struct {
	tag    int
	cli    int // for the coverage counts: which client, which request, in issue order
	order  int
	blocks []Value
	blk    uint64 // its first block address (address / 64)
	sent   int
	at     int // the first cycle it may be answered
}

// dmaWrite is a write beat a client gave the block.
type dmaWrite struct {
	addr uint64 // 64-byte aligned
	data Value
}

// dmaDUT drives hca_dma_engine as its four clients and the host would.
// Clients rd0 and rd1 ask reads of random lengths (1 byte to 64 KiB,
// across MRRS and 4 KiB boundaries, at the top of the 64-bit space, with
// random low address bits) with random gaps; wr0 and wr1 write random beats,
// many into the blocks the reads read, so a read that passed an earlier
// write would return stale data. The host takes requests and writes when
// host_rd_ready / host_wr_ready (stalling in phases), answers each request
// after a random delay with completions of read_completion_bytes (split at
// RCB-aligned addresses, as PCIe's completer does), choosing among the
// requests it may answer at random, so completions interleave across tags;
// now and then it sends a completion for a tag not in flight, which the
// block must ignore.
//
// The Go side keeps the block's state (the splitters, the rings, the tags,
// the three round-robin pointers, the registers) cycle by cycle, so the
// trace states every output; and on that state a scoreboard checks what
// the RTL must do whatever its timing: every host request is the next of
// its client's hca.ReadRequests chunks (at most MRRS, no MRRS or 4 KiB
// boundary crossed), with a tag not in flight, never more than OUTSTANDING
// in flight; it is taken after every write accepted before its client
// request has been taken; each client's blocks are host memory at its
// requests' addresses, in request order; host writes are the clients'
// beats in acceptance order. The RTL matching the trace every cycle is
// then held to the same.
type dmaDUT struct {
	tags, mrrs, rcb int
	big             int // the client asking one 64 KiB read (len 0 for rd0, 65535 for rd1), -1 none
	ncycles, drain  int // cycles per seed, the last drain of them draining
	backlog         int // dmaBacklog, or less for a short run
	tagW, tagBase   int
	cb, rob         int // blocks per request at most; ring blocks
	clearLeft       int // cycles of the clear after reset still to come (dmaClearCycles)
	// holdInClear: the clients present a read each and a write each from
	// the first cycle of the clear and hold them until taken (the shared
	// cases wait out the clear without drawing)
	holdInClear bool
	// fillTags: every read is a 64 KiB one at an MRRS-aligned address
	// until each client has asked its ring's worth and 1024 blocks more;
	// the host answers nothing until every tag is in flight (once), then
	// the oldest request first, so every tag is used and each ring's head
	// waits at unfilled slots all over its first lap
	fillTags   bool
	allTags    int // the cycle every tag was first in flight at once, 0 before
	firstWrite int // the cycle the block took its first write, -1 before
	// lapWait[c][w]: ring c's head waited, on the first lap, at an
	// unfilled slot of lap word w (so the 1s the clear wrote there decided
	// a cycle's delivery)
	lapWait   [2][]bool
	firstTags []int // the host's tags in the order it took them, the first d.tags

	// block state
	hwV            bool
	hwAddr         uint64
	hwData         Value
	wrArb, rdArb   *components.RoundRobin
	tagPtr         int
	spBusy, spWait [2]bool
	spBlk          [2]uint64 // 58 bits
	spLeft         [2]int
	spReq          [2]int // the client request the splitter works on (index into reads)
	spChunk        [2]int
	tail, head     [2]int
	rv             [2][]bool
	ring           [2][]Value
	tBusy          []bool
	tCli, tPos     []int
	tLeft          []int
	hrV            bool
	hrAddr         uint64
	hrLen, hrTag   int
	hrCli, hrReq   int
	hrChunk        int
	rspV           [2]bool
	rspData        [2]Value

	// clients and host
	c                        int
	reads                    [2][]*dmaRead
	pres                     [2]*dmaRead // request presented, not yet taken
	wpres                    [2]*dmaWrite
	writes                   []dmaWrite // accepted, in order
	wTaken                   []int      // cycle each accepted write was taken by the host
	deliv                    [2]struct{ req, chunk, blk int }
	mem                      map[uint64]Value
	salt                     uint64
	pending                  []*dmaPending
	cur                      *dmaPending
	curLeft                  int
	hostBusy                 map[int]bool
	order                    int
	pRd, pWr                 [2]float64
	pRdReady, pWrReady, pCpl float64
	longDelay                bool
	asked, got               [2]int // blocks read clients asked and received
	lastW                    uint64 // the address of the write last offered
	bigDone                  bool   // the 64 KiB read asked
	errs                     []string

	// coverage and checked items, for TestDMAStimulusCovers
	nHostReads, nBlocks, nWrites, nOOO, nTagStall, nRingStall, nWaitStall int
	nUnaligned, nCross4K, nTop, nMax, nOdd, nRAW, nStray, maxInFlight     int
	nClearWait                                                            int // cycles a read request waited for the clear
}

func newDMADUT(tags, mrrs, rcb, big int) *dmaDUT {
	d := &dmaDUT{tags: tags, mrrs: mrrs, rcb: rcb, big: big, cb: mrrs / 64, rob: robBlocks(tags, mrrs), clearLeft: dmaClearCycles(robBlocks(tags, mrrs)), ncycles: dmaCycles, drain: dmaDrain, backlog: dmaBacklog,
		wrArb: components.NewRoundRobin(2), rdArb: components.NewRoundRobin(2),
		tBusy: make([]bool, tags), tCli: make([]int, tags), tPos: make([]int, tags), tLeft: make([]int, tags),
		mem: map[uint64]Value{}, hostBusy: map[int]bool{}, tagW: 8, firstWrite: -1}
	if tags > 256 {
		d.tagW, d.tagBase = 10, 256
	}
	for c := range 2 {
		d.rv[c] = make([]bool, d.rob)
		d.ring[c] = make([]Value, d.rob)
		d.rspData[c] = make(Value, 8)
	}
	d.hwData = make(Value, 8)
	return d
}

func (d *dmaDUT) module() string { return "hca_dma_engine" }
func (d *dmaDUT) files() []string {
	return []string{"hca_dma_engine.v", "rr_arbiter.v", "onehot_encode.v"}
}
func (d *dmaDUT) params() []Param {
	return []Param{{"OUTSTANDING", d.tags}, {"MRRS", d.mrrs}, {"TAG_W", d.tagW}}
}
func (d *dmaDUT) cycles() int { return d.ncycles + dmaClearCycles(d.rob) }
func (d *dmaDUT) inputs() []Signal {
	return []Signal{
		{Name: "rd0_req_valid", Width: 1}, {Name: "rd0_req_addr", Width: 64}, {Name: "rd0_req_len", Width: 16},
		{Name: "rd1_req_valid", Width: 1}, {Name: "rd1_req_addr", Width: 64}, {Name: "rd1_req_len", Width: 16},
		{Name: "wr0_valid", Width: 1}, {Name: "wr0_addr", Width: 64}, {Name: "wr0_data", Width: 512},
		{Name: "wr1_valid", Width: 1}, {Name: "wr1_addr", Width: 64}, {Name: "wr1_data", Width: 512},
		{Name: "host_rd_ready", Width: 1},
		{Name: "host_cpl_valid", Width: 1}, {Name: "host_cpl_tag", Width: d.tagW}, {Name: "host_cpl_data", Width: 512},
		{Name: "host_wr_ready", Width: 1},
	}
}
func (d *dmaDUT) outputs() []Signal {
	return []Signal{
		{Name: "rd0_req_ready", Width: 1}, {Name: "rd0_rsp_valid", Width: 1}, {Name: "rd0_rsp_data", Width: 512, ValidWhen: "rd0_rsp_valid"},
		{Name: "rd1_req_ready", Width: 1}, {Name: "rd1_rsp_valid", Width: 1}, {Name: "rd1_rsp_data", Width: 512, ValidWhen: "rd1_rsp_valid"},
		{Name: "wr0_ready", Width: 1}, {Name: "wr1_ready", Width: 1},
		{Name: "host_rd_valid", Width: 1}, {Name: "host_rd_addr", Width: 64, ValidWhen: "host_rd_valid"},
		{Name: "host_rd_len", Width: 16, ValidWhen: "host_rd_valid"}, {Name: "host_rd_tag", Width: d.tagW, ValidWhen: "host_rd_valid"},
		{Name: "host_wr_valid", Width: 1}, {Name: "host_wr_addr", Width: 64, ValidWhen: "host_wr_valid"},
		{Name: "host_wr_data", Width: 512, ValidWhen: "host_wr_valid"},
	}
}

const blkMask = 1<<58 - 1 // block addresses: 58 bits, wrapping as 64-bit byte addresses do

// memBlock is host memory at block address b: what a write left there, or
// a pattern of the block's address.
func (d *dmaDUT) memBlock(b uint64) Value {
	if v, ok := d.mem[b]; ok {
		return v
	}
	v := make(Value, 8)
	for w := range v {
		x := b*8 + uint64(w) + d.salt
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		v[w] = x ^ x>>31
	}
	return v
}

// dmaBlocks is the blocks a client request of len bytes asks (0 = 65536).
func dmaBlocks(len int) int {
	if len == 0 {
		return 1024
	}
	return (len + 63) / 64
}

// shared is the region most reads and writes use, so reads meet earlier
// writes to their blocks: 64 blocks just below a 4 KiB boundary and above.
const dmaShared = 0x7_0000_0000 - 2048

// newRead draws a client read request.
func (d *dmaDUT) newRead(r *rand.Rand, c int) *dmaRead {
	rd := &dmaRead{}
	switch x := r.IntN(40); {
	case x < 5: // the block a write client has just offered
		rd.addr, rd.len = d.lastW, 64*(1+r.IntN(2))
	case x < 14: // small, in the shared region
		rd.addr, rd.len = dmaShared+uint64(r.IntN(64))*64, 64*(1+r.IntN(4))
	case x < 20: // around MRRS multiples, anywhere
		rd.addr, rd.len = r.Uint64()&^63&(1<<40-1), d.mrrs*(1+r.IntN(2))+64*(r.IntN(3)-1)
	case x < 26: // ending a little past a 4 KiB boundary
		rd.addr = (r.Uint64()&(1<<40-1))&^4095 + 4096 - uint64(64*(1+r.IntN(4)))
		rd.len = 64 * (2 + r.IntN(8))
	case x < 30: // odd lengths (a partial last block is read whole)
		rd.addr, rd.len = dmaShared+uint64(r.IntN(64))*64, 1+r.IntN(700)
	case x < 33: // the top of the 64-bit space, wrapping to 0
		rd.addr, rd.len = -uint64(64*(1+r.IntN(6))), 64*(1+r.IntN(12))
	default: // mid-size anywhere
		rd.addr, rd.len = r.Uint64(), 64*(1+r.IntN(min(3*d.cb, 48)))
	}
	if d.fillTags {
		rd.addr, rd.len = r.Uint64()&(1<<40-1)&^uint64(d.mrrs-1), 0
	}
	if d.bigDue(c) {
		d.bigDone = true
		// The largest reads, once per client and seed: len 0 is 65536
		// bytes, and 65535 rounds up to the same 1024 blocks.
		rd.addr, rd.len = r.Uint64()&(1<<40-1), []int{0, 65535}[c]
	}
	rd.addr |= uint64(r.IntN(64)) // ignored low bits
	n := dmaBlocks(rd.len)
	d.asked[c] += n
	rd.chunks = hca.ReadRequests(nil, rd.addr&^63, n*64, d.mrrs)
	rd.data = make([][]Value, len(rd.chunks))
	if rd.addr&^63%uint64(d.mrrs) != 0 && n*64 > d.mrrs-int(rd.addr&^63%uint64(d.mrrs)) {
		d.nUnaligned++
	}
	if (rd.addr&^63)/4096 != (rd.addr&^63+uint64(n*64)-1)/4096 {
		d.nCross4K++
	}
	if rd.addr&^63+uint64(n*64) < rd.addr&^63 || rd.addr&^63+uint64(n*64) == 0 {
		d.nTop++
	}
	if n == 1024 {
		d.nMax++
	}
	if rd.len%64 != 0 {
		d.nOdd++
	}
	return rd
}

// bigDue: client c is to ask the 64 KiB read, from cycle 100 as soon as it
// presents nothing.
func (d *dmaDUT) bigDue(c int) bool {
	return d.big == c && !d.bigDone && d.c >= 100
}

func (d *dmaDUT) errorf(format string, args ...any) {
	if len(d.errs) < 10 {
		d.errs = append(d.errs, fmt.Sprintf("cycle %d: ", d.c)+fmt.Sprintf(format, args...))
	}
}

func (d *dmaDUT) cycle(r *rand.Rand, in, out []Value) {
	if d.clearLeft > 0 && !d.holdInClear {
		// The clear after reset: the clients and the host wait, drawing
		// nothing, so what follows is the run a block without a clear had;
		// the block takes nothing and shows nothing meanwhile.
		for i := range in {
			in[i] = U(0)
		}
		for i := range out {
			out[i] = U(0)
		}
		d.clearLeft--
		return
	}
	drain := d.c >= d.ncycles-d.drain
	if d.c%256 == 0 {
		for c := range 2 {
			d.pRd[c] = []float64{0.02, 0.1, 0.5}[r.IntN(3)]
			d.pWr[c] = []float64{0, 0.1, 0.4, 0.9}[r.IntN(4)]
		}
		d.pRdReady = []float64{0.3, 0.8, 1}[r.IntN(3)]
		d.pWrReady = []float64{0.2, 0.7, 1}[r.IntN(3)]
		d.pCpl = []float64{0.5, 0.9, 1}[r.IntN(3)]
		d.longDelay = r.IntN(2) == 0
	}
	if drain {
		d.pRd, d.pWr = [2]float64{}, [2]float64{}
		d.pRdReady, d.pWrReady, d.pCpl, d.longDelay = 1, 1, 1, false
	}

	// ---- stimulus ----
	for c := range 2 {
		hold := d.holdInClear && d.c == 0 // a read and a write on each client from the clear's first cycle
		// (a random ask draws only while nothing is presented, as ever)
		ask := func() bool {
			if d.fillTags {
				return d.asked[c] < d.rob+1024 && !drain
			}
			return r.Float64() < d.pRd[c] && d.asked[c]-d.got[c] < d.backlog
		}
		if d.pres[c] == nil && (hold || ask() || d.bigDue(c)) {
			d.pres[c] = d.newRead(r, c)
		}
		if d.wpres[c] == nil && (hold || r.Float64() < d.pWr[c]) {
			w := &dmaWrite{addr: dmaShared + uint64(r.IntN(64))*64, data: randomBlock(r)}
			if r.IntN(4) == 0 {
				w.addr = r.Uint64() &^ 63
			}
			d.wpres[c] = w
			d.lastW = w.addr
		}
	}
	hostRdReady := r.Float64() < d.pRdReady
	hostWrReady := r.Float64() < d.pWrReady
	cplV, cplTag, cplData := false, 0, randomBlock(r)
	if d.cur == nil || d.curLeft == 0 {
		d.cur = nil
		var ready []int
		for i, p := range d.pending {
			if p.at <= d.c && (!d.fillTags || d.allTags > 0) {
				ready = append(ready, i)
			}
		}
		if len(ready) > 0 {
			p := d.pending[ready[0]] // the oldest (fillTags: the head waits all over its ring)
			if !d.fillTags {
				p = d.pending[ready[r.IntN(len(ready))]]
			}
			u := d.rcb / 64
			d.cur, d.curLeft = p, min(len(p.blocks)-p.sent, u-int((p.blk+uint64(p.sent))%uint64(u)))
		}
	}
	var cplP *dmaPending
	if d.cur != nil && r.Float64() < d.pCpl {
		cplP = d.cur
		cplV, cplTag, cplData = true, d.cur.tag, d.cur.blocks[d.cur.sent]
	} else if !drain && r.IntN(300) == 0 {
		// A stray completion: a tag not in flight (or past the tags).
		// (not one the block has issued either: a completion never comes
		// before its request)
		t := r.IntN(1 << d.tagW)
		if i := t - d.tagBase; !d.hostBusy[t] && (i < 0 || i >= d.tags || !d.tBusy[i]) {
			cplV, cplTag = true, t
			d.nStray++
		}
	}
	in[0], in[1], in[2] = U(0), U(r.Uint64()), U(uint64(r.IntN(1<<16)))
	in[3], in[4], in[5] = U(0), U(r.Uint64()), U(uint64(r.IntN(1<<16)))
	for c := range 2 {
		if p := d.pres[c]; p != nil {
			in[3*c], in[3*c+1], in[3*c+2] = U(1), U(p.addr), U(uint64(p.len))
		}
	}
	in[6], in[7], in[8] = U(0), U(r.Uint64()), randomBlock(r)
	in[9], in[10], in[11] = U(0), U(r.Uint64()), randomBlock(r)
	for c := range 2 {
		if w := d.wpres[c]; w != nil {
			in[6+3*c], in[7+3*c], in[8+3*c] = U(1), U(w.addr|uint64(r.IntN(64))), w.data
		}
	}
	in[12], in[13], in[14], in[15], in[16] = b2v(hostRdReady), b2v(cplV), U(uint64(cplTag)), cplData, b2v(hostWrReady)

	// ---- this cycle's outputs, from the state at its start ----
	clearing := d.clearLeft > 0
	wrSlot := !clearing && (!d.hwV || hostWrReady)
	var wreq components.PortSet
	for c := range 2 {
		if d.wpres[c] != nil && wrSlot {
			wreq.Set(c)
		}
	}
	wg := d.wrArb.Pick(wreq)
	wrHeld := wg >= 0 || (d.hwV && !hostWrReady)
	var n [2]int
	var fits, last [2]bool
	for c := range 2 {
		n[c] = min(d.spLeft[c], d.cb-int(d.spBlk[c]%uint64(d.cb)))
		fits[c] = d.tail[c]-d.head[c]+n[c] <= d.rob
		last[c] = d.spLeft[c] == n[c]
	}
	tg := -1
	for i := range d.tags {
		if t := (d.tagPtr + i) % d.tags; !d.tBusy[t] {
			tg = t
			break
		}
	}
	rdSlot := !d.hrV || hostRdReady
	var can components.PortSet
	for c := range 2 {
		switch {
		case !d.spBusy[c] || !rdSlot:
		case d.spWait[c]:
			d.nWaitStall++
		case !fits[c]:
			d.nRingStall++
		case tg < 0:
			d.nTagStall++
		default:
			can.Set(c)
		}
	}
	rg := d.rdArb.Pick(can)
	var ready [2]bool
	for c := range 2 {
		ready[c] = !d.spBusy[c] || (rg == c && last[c])
	}
	for c := range 2 {
		ready[c] = ready[c] && !clearing
		if clearing && d.pres[c] != nil {
			d.nClearWait++
		}
	}
	for i := range out {
		out[i] = U(0)
	}
	out[0], out[1], out[3], out[4] = b2v(ready[0]), b2v(d.rspV[0]), b2v(ready[1]), b2v(d.rspV[1])
	out[2], out[5] = make(Value, 8), make(Value, 8)
	for c := range 2 {
		if d.rspV[c] {
			out[2+3*c] = d.rspData[c]
		}
	}
	out[6], out[7] = b2v(wg == 0), b2v(wg == 1)
	out[8], out[12], out[14] = b2v(d.hrV), b2v(d.hwV), make(Value, 8)
	if d.hrV {
		out[9], out[10], out[11] = U(d.hrAddr), U(uint64(d.hrLen)), U(uint64(d.hrTag+d.tagBase))
	}
	if d.hwV {
		out[13], out[14] = U(d.hwAddr), d.hwData
	}
	d.scoreDeliveries()

	// ---- the rising edge ----
	// The host takes a write, then a read request (it applies the write
	// first; the block never offers a read it must order after that write
	// in the same cycle).
	wrTaken := d.hwV && hostWrReady
	if wrTaken {
		k := len(d.wTaken)
		if k >= len(d.writes) || d.writes[k].addr != d.hwAddr || !valueEq(d.writes[k].data, d.hwData) {
			d.errorf("host write %d at %#x is not the clients' write %d", k, d.hwAddr, k)
		}
		d.wTaken = append(d.wTaken, d.c)
		d.mem[d.hwAddr>>6&blkMask] = d.hwData
		d.nWrites++
	}
	if d.hrV && hostRdReady {
		d.hostTakesRead(r)
	}
	if wg >= 0 {
		w := d.wpres[wg]
		d.hwV, d.hwAddr, d.hwData = true, w.addr, w.data
		if len(d.writes) == 0 {
			d.firstWrite = d.c
		}
		d.writes = append(d.writes, *w)
		d.wpres[wg] = nil
		d.wrArb.Commit(wg)
	} else if hostWrReady {
		d.hwV = false
	}
	// completions fill their slots; delivery reads each ring's head
	var deliver [2]bool
	for c := range 2 {
		deliver[c] = d.rv[c][d.head[c]%d.rob]
		if !deliver[c] && d.head[c] < d.rob && d.lapWait[c] != nil {
			d.lapWait[c][d.head[c]/dmaLapSlots(d.rob)] = true
		}
	}
	if cplV {
		t := cplTag - d.tagBase
		if t >= 0 && t < d.tags && d.tBusy[t] {
			c, pos := d.tCli[t], d.tPos[t]
			d.ring[c][pos], d.rv[c][pos] = cplData, true
			d.tPos[t], d.tLeft[t] = (pos+1)%d.rob, d.tLeft[t]-1
			if d.tLeft[t] == 0 {
				d.tBusy[t] = false
			}
		}
		if cplP != nil {
			d.hostSends(cplP)
		}
	}
	for c := range 2 {
		d.rspV[c] = deliver[c]
		if deliver[c] {
			d.rspData[c] = d.ring[c][d.head[c]%d.rob]
			d.rv[c][d.head[c]%d.rob] = false
			d.head[c]++
		}
	}
	if wrTaken {
		d.spWait = [2]bool{} // the write they waited for has gone
	}
	if rg >= 0 {
		c, k := rg, n[rg]
		d.hrV, d.hrAddr, d.hrLen, d.hrTag = true, d.spBlk[c]<<6, k*64, tg
		d.hrCli, d.hrReq, d.hrChunk = c, d.spReq[c], d.spChunk[c]
		d.tBusy[tg], d.tCli[tg], d.tPos[tg], d.tLeft[tg] = true, c, d.tail[c]%d.rob, k
		d.tail[c] += k
		d.spBlk[c] = (d.spBlk[c] + uint64(k)) & blkMask
		d.spLeft[c] -= k
		d.spChunk[c]++
		if last[c] {
			d.spBusy[c] = false
		}
		d.rdArb.Commit(rg)
		d.tagPtr = (tg + 1) % d.tags
	} else if hostRdReady {
		d.hrV = false
	}
	for c := range 2 {
		if p := d.pres[c]; p != nil && ready[c] {
			p.wseq, p.acc = len(d.writes), d.c // a write taken this cycle counts as earlier
			d.reads[c] = append(d.reads[c], p)
			d.spBusy[c], d.spBlk[c], d.spLeft[c], d.spWait[c] = true, p.addr>>6&blkMask, dmaBlocks(p.len), wrHeld
			d.spReq[c], d.spChunk[c] = len(d.reads[c])-1, 0
			d.pres[c] = nil
		}
	}
	if clearing {
		d.clearLeft--
	}
	d.c++
}

// hostTakesRead checks the host read request in the register and starts
// answering it.
func (d *dmaDUT) hostTakesRead(r *rand.Rand) {
	tag := d.hrTag + d.tagBase
	rd := d.reads[d.hrCli][d.hrReq]
	switch {
	case d.hrChunk != rd.issued || d.hrChunk >= len(rd.chunks):
		d.errorf("client %d request %d: host request %d out of order (%d taken)", d.hrCli, d.hrReq, d.hrChunk, rd.issued)
		return
	case rd.chunks[d.hrChunk] != hca.ReadChunk{Addr: d.hrAddr, N: d.hrLen}:
		d.errorf("client %d request %d: host request %#x+%d, hca.ReadRequests says %+v", d.hrCli, d.hrReq, d.hrAddr, d.hrLen, rd.chunks[d.hrChunk])
	case d.hrLen > d.mrrs || d.hrLen == 0 || d.hrLen%64 != 0 || d.hrAddr/uint64(d.mrrs) != (d.hrAddr+uint64(d.hrLen)-1)/uint64(d.mrrs):
		d.errorf("host request %#x+%d is not a legal read at MRRS %d", d.hrAddr, d.hrLen, d.mrrs)
	case d.hostBusy[tag] || tag < d.tagBase || tag >= d.tagBase+d.tags:
		d.errorf("host request with tag %d, in flight or outside the tags", tag)
	}
	for k := range rd.wseq {
		if k >= len(d.wTaken) || d.wTaken[k] >= d.c {
			d.errorf("client %d request %d passed write %d accepted before it", d.hrCli, d.hrReq, k)
			break
		}
	}
	// A write to one of its blocks accepted before the read and still on
	// its way when the read was accepted: the order decided the data.
	for k := range rd.wseq {
		b := d.writes[k].addr >> 6 & blkMask
		if k < len(d.wTaken) && d.wTaken[k] >= rd.acc && (b-d.hrAddr>>6)&blkMask < uint64(d.hrLen/64) {
			d.nRAW++
			break
		}
	}
	rd.issued++
	d.hostBusy[tag] = true
	d.maxInFlight = max(d.maxInFlight, len(d.hostBusy))
	if len(d.firstTags) < d.tags {
		d.firstTags = append(d.firstTags, tag)
	}
	if d.allTags == 0 && len(d.hostBusy) == d.tags {
		d.allTags = d.c
	}
	if len(d.hostBusy) > d.tags {
		d.errorf("%d reads in flight, more than %d tags", len(d.hostBusy), d.tags)
	}
	p := &dmaPending{tag: tag, cli: d.hrCli, order: d.order, blk: d.hrAddr >> 6, blocks: make([]Value, d.hrLen/64)}
	d.order++
	for i := range p.blocks {
		p.blocks[i] = d.memBlock((p.blk + uint64(i)) & blkMask)
	}
	rd.data[d.hrChunk] = p.blocks
	delay := 1 + r.IntN(8)
	if d.longDelay {
		delay = 10 + r.IntN(60)
	}
	p.at = d.c + 1 + delay
	d.pending = append(d.pending, p)
	d.nHostReads++
}

// hostSends records a completion beat of p.
func (d *dmaDUT) hostSends(p *dmaPending) {
	for _, q := range d.pending {
		if q.order < p.order && q.sent < len(q.blocks) {
			d.nOOO++ // an earlier request still has beats to come
			break
		}
	}
	p.sent++
	d.curLeft--
	if p.sent == len(p.blocks) {
		delete(d.hostBusy, p.tag)
		for i, q := range d.pending {
			if q == p {
				d.pending = append(d.pending[:i], d.pending[i+1:]...)
				break
			}
		}
	}
}

// scoreDeliveries checks the blocks the clients get this cycle against
// their requests' blocks, in request order.
func (d *dmaDUT) scoreDeliveries() {
	for c := range 2 {
		if !d.rspV[c] {
			continue
		}
		p := &d.deliv[c]
		if p.req >= len(d.reads[c]) {
			d.errorf("client %d got a block it did not ask for", c)
			continue
		}
		rd := d.reads[c][p.req]
		blocks := rd.data[p.chunk]
		if blocks == nil {
			d.errorf("client %d request %d: a block of host request %d before the host took it", c, p.req, p.chunk)
		} else if p.blk >= len(blocks) {
			d.errorf("client %d request %d: block %d of host request %d, which read %d", c, p.req, p.blk, p.chunk, len(blocks))
		} else if !valueEq(blocks[p.blk], d.rspData[c]) {
			d.errorf("client %d request %d: block %d of host request %d is not host memory's", c, p.req, p.blk, p.chunk)
		}
		d.nBlocks++
		d.got[c]++
		if p.blk++; p.blk == rd.chunks[p.chunk].N/64 {
			p.blk = 0
			if p.chunk++; p.chunk == len(rd.chunks) {
				p.chunk, p.req = 0, p.req+1
			}
		}
	}
}

// done checks that every read was delivered and every write sent.
func (d *dmaDUT) done() {
	for c := range 2 {
		if d.deliv[c].req != len(d.reads[c]) || d.pres[c] != nil {
			d.errorf("client %d: %d of %d reads delivered at the end (one presented: %v)", c, d.deliv[c].req, len(d.reads[c]), d.pres[c] != nil)
		}
		if d.wpres[c] != nil {
			d.errorf("write client %d still waiting at the end", c)
		}
	}
	if len(d.wTaken) != len(d.writes) || len(d.hostBusy) != 0 {
		d.errorf("at the end: %d of %d writes sent, %d tags in flight", len(d.wTaken), len(d.writes), len(d.hostBusy))
	}
}

func valueEq(a, b Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dmaCase is one set of the block's parameters the co-simulation runs.
type dmaCase struct {
	name            string
	tags, mrrs, rcb int
	big             int  // the client asking a 64 KiB read, -1 none
	short           bool // 800 cycles a seed, 350 draining, a backlog of 80 (a slow case)
	fill            bool // holdInClear and fillTags, over dmaFillCycles
}

func (tc dmaCase) dut() *dmaDUT {
	d := newDMADUT(tc.tags, tc.mrrs, tc.rcb, tc.big)
	if tc.short {
		d.ncycles, d.drain, d.backlog = 800, 350, 80
	}
	if tc.fill {
		d.holdInClear, d.fillTags = true, true
		for c := range 2 {
			d.lapWait[c] = make([]bool, dmaClearCycles(d.rob))
		}
		d.ncycles, d.drain = dmaFillCycles(d.rob), dmaDrain
	}
	return d
}

// dmaCases: 4 tags at MRRS 128 (a request is at most 2 blocks, the ring 8:
// tags and ring run out), 5 tags (not a power of two) at 256 with RCB 128,
// 8 tags at 512 with a 64 KiB read (len 0), 64 tags at MRRS 4096 (a request per 4
// KiB; a 64 KiB read of len 65535), and 260 tags: PCIe 10-bit tags from 256 (short: 260 tags cost
// Icarus about 7 ms a cycle when the tag table and lap bits were flops).
var dmaCases = []dmaCase{
	{"dma_t4_m128", 4, 128, 64, -1, false, false},
	{"dma_t5_m256_rcb128", 5, 256, 128, -1, false, false},
	{"dma_t8_m512", 8, 512, 64, 0, false, false},
	{"dma_t64_m4096", 64, 4096, 64, 1, false, false},
	{"dma_t260_m128", 260, 128, 64, -1, true, false},
}

// dmaFillCase is cx8's DMA engine (xdr.yaml: 512 tags, MRRS 512, rings of
// 4096 blocks, so 64 words of lap bits to clear), its clients presenting
// from the clear's first cycle and reading 64 KiB at a time, the host
// holding its answers until every tag is in flight (TestDMAClear).
var dmaFillCase = dmaCase{"dma_t512_m512_fill", 512, 512, 64, -1, false, true}

// dmaFillCycles is a fill run's length for rings of rob blocks: each
// client asks rob + 1024 blocks, which the host returns at one beat a
// cycle at best (2 (rob + 1024) cycles), answering about one cycle in
// 1.5 of those it could (its random phases), and dmaDrain more.
func dmaFillCycles(rob int) int {
	return 3*(rob+1024) + dmaDrain
}

// dmaCaseNamed returns the case called name.
func dmaCaseNamed(name string) dmaCase {
	for _, tc := range dmaCases {
		if tc.name == name {
			return tc
		}
	}
	panic("rtl: no DMA case " + name)
}

// runDMA runs the Go side of one case and seed alone, as the trace does.
func runDMA(tc dmaCase, seed uint64) *dmaDUT {
	r := rand.New(rand.NewPCG(seed, 0x7e57))
	d := tc.dut()
	in := make([]Value, len(d.inputs()))
	out := make([]Value, len(d.outputs()))
	for range d.cycles() {
		d.cycle(r, in, out)
	}
	d.done()
	return d
}

// TestDMAScoreboard: on every case and seed of the co-simulation the
// scoreboard finds nothing wrong with the behaviour the trace expects of
// the RTL, has checked items in the numbers below, and every read was
// delivered and every write sent by the end (no deadlock). The numbers
// are floors from the stimulus: a read client asks about one block in 8
// cycles and the write clients offer one beat in 20, host requests carry
// at most 70 cycles' worth; a run that checks fewer has stopped early.
func TestDMAScoreboard(t *testing.T) {
	for _, tc := range dmaCases {
		for _, seed := range cosimSeeds {
			d := runDMA(tc, seed)
			msg := []any{"%s seed %d", tc.name, seed}
			require.Empty(t, d.errs, msg...)
			assert.GreaterOrEqual(t, d.nBlocks, d.ncycles/8, msg...)
			assert.GreaterOrEqual(t, d.nWrites, d.ncycles/20, msg...)
			assert.GreaterOrEqual(t, d.nHostReads, d.ncycles/70, msg...)
		}
	}
}

// TestDMAStimulusCovers: per seed, completions arrive out of request order
// (a beat of a later request while an earlier one has beats to come) 50
// times, a read waits for an earlier write (50 cycles per case), 5 reads split at an MRRS
// boundary before their end and 5 across 4 KiB, and a length that is not a
// multiple of 64; with 8 tags or fewer every tag is in flight at once and
// reads wait for a tag 100 cycles, and where the ring holds exactly the
// tags' requests (4 and 8 tags) they wait for ring room 20 times per case.
// Per case: 10 reads wrap past 2^64, 5 return a block an earlier write,
// still on its way when the read was taken, had changed, 3 stray
// completions are ignored, and the 64 KiB read is asked on every seed of
// the cases that ask it. So a block that mishandled one of these could not
// match the trace by luck.
func TestDMAStimulusCovers(t *testing.T) {
	for _, tc := range dmaCases {
		var top, raw, stray, maxReads, ringStall, wait int
		for _, seed := range cosimSeeds {
			d := runDMA(tc, seed)
			msg := []any{"%s seed %d", tc.name, seed}
			assert.GreaterOrEqual(t, d.nOOO, 50, msg...)
			assert.Positive(t, d.nWaitStall, msg...)
			assert.GreaterOrEqual(t, d.nUnaligned, 5, msg...)
			assert.GreaterOrEqual(t, d.nCross4K, 5, msg...)
			assert.GreaterOrEqual(t, d.nOdd, 1, msg...)
			if tc.tags <= 8 {
				assert.Equal(t, tc.tags, d.maxInFlight, msg...)
				assert.GreaterOrEqual(t, d.nTagStall, 100, msg...)
			}
			top += d.nTop
			wait += d.nWaitStall
			raw += d.nRAW
			stray += d.nStray
			maxReads += d.nMax
			ringStall += d.nRingStall
		}
		assert.GreaterOrEqual(t, top, 10, tc.name)
		assert.GreaterOrEqual(t, wait, 50, tc.name)
		assert.GreaterOrEqual(t, raw, 5, tc.name)
		assert.GreaterOrEqual(t, stray, 3, tc.name)
		if tc.big >= 0 {
			assert.Equal(t, len(cosimSeeds), maxReads, tc.name)
		}
		if tc.tags <= 8 && robBlocks(tc.tags, tc.mrrs) == tc.tags*tc.mrrs/64 {
			assert.GreaterOrEqual(t, ringStall, 20, tc.name)
		}
	}
}

// TestDMAMutantsFail: each slip below, the kind an RTL engineer makes in a
// DMA engine, fails the co-simulation of the first seed of 8 tags at MRRS
// 512 (tags and ring run out there, and it asks a 64 KiB read).
func TestDMAMutantsFail(t *testing.T) {
	const f = "hca_dma_engine.v"
	runMutants(t, func() cosimDUT { return dmaCaseNamed("dma_t8_m512").dut() }, []cosimMutant{
		{"a request split at MRRS + 64", f, "to_bnd0 = CB_C - {1'b0, sp_blk[0][CBL-1:0]}", "to_bnd0 = CB_C + 1'b1 - {1'b0, sp_blk[0][CBL-1:0]}"},
		{"split by count, across the MRRS (and 4 KiB) boundary", f, "to_bnd0 = CB_C - {1'b0, sp_blk[0][CBL-1:0]}", "to_bnd0 = CB_C"},
		{"a tag freed at its first beat, reused while in flight", f, "if (cpl_ok && cpl_left == {{(CB_W-1){1'b0}}, 1'b1}) tag_busy[ct] <= 1'b0;", "if (cpl_ok) tag_busy[ct] <= 1'b0;"},
		{"a busy tag allocated", f, "tag_free = ~tag_busy[OUTSTANDING-1:0];", "tag_free = {OUTSTANDING{1'b1}};"},
		{"one tag fewer", f, "tag_free = ~tag_busy[OUTSTANDING-1:0];", "tag_free = ~tag_busy[OUTSTANDING-1:0] & ({OUTSTANDING{1'b1}} >> 1);"},
		{"the ring delivers a slot before its data arrive", f, "wire deliver0 = !clearing && hw0[hd0[LAP_LW-1:0]] == rb_head[0][ROB_AW];", "wire deliver0 = !clearing && rb_tail[0] != rb_head[0];"},
		{"the clear writes lap bits 0: the first lap's slots look filled", f, "lap0[clr_word] <= {LAP_W{1'b1}};", "lap0[clr_word] <= {LAP_W{1'b0}};"},
		{"a request's beats all written at its first slot", f, "tag_mem[ct] <= {cpl_cli, cpl_cnt + 1'b1, cpl_left - 1'b1};", "tag_mem[ct] <= {cpl_cli, cpl_cnt, cpl_left - 1'b1};"},
		{"the ring's room check one block short", f, "fits0 = {1'b0, used0} + {{(ROB_AW+2-CB_W){1'b0}}, n0} <= ROB_C;", "fits0 = {1'b0, used0} + {{(ROB_AW+2-CB_W){1'b0}}, n0} < ROB_C;"},
		{"a read passes an earlier write", f, "sp_wwait[0] <= wr_held;", "sp_wwait[0] <= 1'b0;"},
		{"a write taken in the read's own cycle not waited for", f, "wire wr_held = wg_valid || (host_wr_valid && !host_wr_ready);", "wire wr_held = host_wr_valid && !host_wr_ready;"},
		{"the read arbiter's pointer never passes rd1 (rd0 first always)", f, ".commit(issue), .commit_idx(rg)", ".commit(issue), .commit_idx(1'b1)"},
		{"the write arbiter's pointer never moves", f, ".commit(wg_valid), .commit_idx(wg)", ".commit(1'b0), .commit_idx(wg)"},
		{"a length rounded down to blocks", f, "{1'b0, len[15:6]} + {10'd0, (len[5:0] != 6'd0)}", "{1'b0, len[15:6]}"},
		{"len 0 taken as no blocks", f, "blocks_of = 11'd1024;", "blocks_of = 11'd0;"},
	})
}

// TestDMAClear: the clear after reset and every tag and ring slot after
// it, at cx8's parameters (dmaFillCase; TestCosimIcarus runs its RTL on
// the same trace). The clear is 4096 slots / 64 a lap word = 64 cycles:
// both read clients and both write clients present from its first cycle
// and wait all of it (2 x 64 read-client cycles), and each client's first
// request and the first write are taken in cycle 64, the clear's first
// cycle after. Then the host answers nothing until every tag is in
// flight: the first 512 host requests carry tags 256..767 in order (the
// tag pointer starts at 0, every tag free, 10-bit tags from 256), so each
// tag's table entry is written and read, and reads wait 100 cycles for a
// tag (which the shared cases' host never lets happen above 8 tags). Each
// client receives its ring's 4096 blocks and more, and as the host answers
// the oldest request first, each ring's head waits at an unfilled slot in
// every one of its 64 lap words on the first lap, where the 1s the clear
// wrote, not data, decide the cycle. Every read is delivered by the end.
func TestDMAClear(t *testing.T) {
	t.Parallel()
	tc := dmaFillCase
	rob := robBlocks(tc.tags, tc.mrrs)
	require.Equal(t, 4096, rob, "cx8: 512 tags x 512 / 64 blocks")
	clear := rob / 64
	require.Equal(t, clear, dmaClearCycles(rob))
	for _, seed := range cosimSeeds {
		d := runDMA(tc, seed)
		msg := []any{"%s seed %d", tc.name, seed}
		require.Empty(t, d.errs, msg...)
		assert.Equal(t, 2*clear, d.nClearWait, msg...)
		for c := range 2 {
			require.NotEmpty(t, d.reads[c], msg...)
			assert.Equal(t, clear, d.reads[c][0].acc, msg...)
			assert.GreaterOrEqual(t, d.got[c], rob, msg...)
		}
		assert.Equal(t, clear, d.firstWrite, msg...)
		assert.Positive(t, d.allTags, msg...)
		assert.Equal(t, tc.tags, d.maxInFlight, msg...)
		// (then reads wait for a tag, as with 8 tags or fewer in the shared cases)
		assert.GreaterOrEqual(t, d.nTagStall, 100, msg...)
		want := make([]int, tc.tags)
		for i := range want {
			want[i] = 256 + i
		}
		assert.Equal(t, want, d.firstTags, msg...)
		for c := range 2 {
			n := 0
			for _, w := range d.lapWait[c] {
				if w {
					n++
				}
			}
			assert.Equal(t, clear, n, "%s seed %d: lap words ring %d waited in on the first lap", tc.name, seed, c)
		}
	}
}

// TestDMAClearMutantsFail: each slip below in the clear after reset or the
// tag table fails the co-simulation of the first seed of dmaFillCase
// (cx8's 512 tags: 64 lap words to clear, every tag and every slot used).
func TestDMAClearMutantsFail(t *testing.T) {
	const f = "hca_dma_engine.v"
	runMutants(t, func() cosimDUT { return dmaFillCase.dut() }, []cosimMutant{
		{"a read request taken during the clear", f, "assign rd0_req_ready = !clearing && (", "assign rd0_req_ready = ("},
		{"a write taken during the clear", f, "wire       wr_slot = !clearing && (", "wire       wr_slot = ("},
		{"the clear over after its first word", f, "if (clr_word == LAST_WORD[LAP_AW-1:0]) clearing <= 1'b0;", "if (1'b1) clearing <= 1'b0;"},
		{"ring 1's last lap word not cleared", f, "lap1[clr_word] <= {LAP_W{1'b1}};", "if (clr_word != LAST_WORD[LAP_AW-1:0]) lap1[clr_word] <= {LAP_W{1'b1}};"},
		{"the tag table one entry short (the last tag's entry lost)", f, "reg  [TE_W-1:0]   tag_mem [0:OUTSTANDING-1];", "reg  [TE_W-1:0]   tag_mem [0:OUTSTANDING-2];"},
		{"a beat's lap written into the next slot's bit", f, "lap0[cpl_word][cpl_pos[LAP_LW-1:0]] <= cpl_lap;", "lap0[cpl_word][cpl_pos[LAP_LW-1:0] + 1'b1] <= cpl_lap;"},
	})
}
