package rtl

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
)

// ---- hca_dma_engine <-> hca.ReadRequest, hca.WriteTLP and a host model ----

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
// its host requests by hca.ReadRequests (bytes), and the blocks host memory
// held where each request's bytes lie when the host took that request.
type dmaRead struct {
	addr   uint64 // as asked: any byte address
	len    int    // as asked, bytes (0 = 65536)
	chunks []hca.ReadChunk
	data   [][]Value // per chunk, filled when the host takes it
	issued int       // chunks the host has taken
	wseq   int       // write beats accepted before it (at or before its cycle)
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

// dmaWrite is a client write: what the client asked, its beats, its TLPs
// by hca.WriteTLPs, and how far the block and the host have got with it.
type dmaWrite struct {
	addr   uint64 // as asked (bits 5:0 ignored by the block)
	len    int    // as asked (0 = 65536)
	beats  []Value
	be     []uint64        // per beat, its byte enables (bit 63 - k: byte lane k)
	tlps   []hca.ReadChunk // hca.WriteTLPs of its blocks
	sent   int             // beats the block took
	tlpsIn int             // TLPs the host has taken whole
	landed []int           // per beat, how often it landed in host memory
}

// dmaBeat is a write beat the block took, in acceptance order: its write,
// its index there, and the TLP it opened or went on (a count of TLPs the
// block started, in order).
type dmaBeat struct {
	w   *dmaWrite
	k   int
	tlp int
}

// dmaHostTLP is the TLP the host is taking: its header, from its first
// beat, and the write whose beats it carries.
type dmaHostTLP struct {
	open bool
	addr uint64
	len  int
	got  int // beats taken
	w    *dmaWrite
}

// dmaDUT drives hca_dma_engine as its four clients and the host would.
// Clients rd0 and rd1 ask reads of random byte lengths (1 byte to 64 KiB,
// half of them any byte count, a few of 1 to 8 bytes, across MRRS and 4
// KiB boundaries, at the top of the 64-bit space) at any byte address with
// random gaps; wr0 and wr1 write 1 to 1024 random
// beats (around MPS multiples, across 4 KiB at every alignment, a 4 KiB
// page, wrapping past 2^64), many into the blocks the reads read, so a
// read that passed an earlier write would return stale data, with random
// gaps between a write's beats. The host takes requests and writes when
// host_rd_ready / host_wr_ready (stalling in phases), answers each request
// after a random delay with the 64-byte blocks the request's bytes lie in,
// each byte at its lane and junk in the lanes outside the request (a
// completer returns only the DWs asked, a disabled byte's value is
// undefined), as completions of read_completion_bytes (split at
// RCB-aligned addresses, as PCIe's completer does), choosing among the
// requests it may answer at random, so completions interleave across tags;
// now and then it sends a completion for a tag not in flight, which the
// block must ignore.
//
// The Go side keeps the block's state (the splitters, the rings, the tags,
// the three round-robin pointers, the registers) cycle by cycle, so the
// trace states every output; and on that state a scoreboard checks what
// the RTL must do whatever its timing: every host request is the next of
// its client's hca.ReadRequests chunks (its byte address and length; at
// most MRRS, no MRRS or 4 KiB boundary crossed) with the First and Last DW
// BE its bytes give, with a tag not in flight, never more than OUTSTANDING
// in flight; it is taken after the last beat of every TLP with a beat
// accepted before its client request has been taken; each client gets the
// blocks its requests' bytes lie in, in request order, and each of its
// bytes, at its address's lane, is host memory's; host
// write beats are the clients' beats in acceptance order, framed into TLPs
// whose headers are each write's next hca.WriteTLPs chunk (at most MPS,
// none across 4 KiB), a TLP's beats all of one write, and each beat lands
// at its TLP's address plus its offset, where the client wrote it, exactly
// once. The RTL matching the trace every cycle is then held to the same.
type dmaDUT struct {
	tags, mrrs, rcb int
	mps             int     // hca.pcie.mps_bytes: the largest write TLP
	wScale          float64 // scales the write clients' rates (a write TLP holds back reads taken behind it)
	big             int     // the client asking one 64 KiB read (len 0 for rd0, 65535 for rd1), -1 none
	bigW            int     // the client writing 64 KiB once (len 0 for wr0, 65535 for wr1), -1 none
	ncycles, drain  int     // cycles per seed, the last drain of them draining
	backlog         int     // dmaBacklog, or less for a short run
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
	hwV, hwSop     bool
	hwLast         bool
	hwAddr         uint64
	hwLen          int
	hwData         Value
	hwBe           uint64
	wcBusy         [2]bool
	wcBlk          [2]uint64
	wcLeft         [2]int
	tlpOpen        bool
	tlpCli         int
	tlpLeft        int
	ntlp           int // TLPs the block started
	lastTLPCli     int // the client of the TLP started last, -1 before
	wrArb, rdArb   *components.RoundRobin
	tagPtr         int
	spBusy, spWait [2]bool
	spAddr         [2]uint64 // the next byte address
	spLeft         [2]int    // bytes left
	spReq          [2]int    // the client request the splitter works on (index into reads)
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
	hrFbe, hrLbe   int // First and Last DW BE
	hrCli, hrReq   int
	hrChunk        int
	rspV           [2]bool
	rspData        [2]Value

	// clients and host
	c                        int
	reads                    [2][]*dmaRead
	pres                     [2]*dmaRead  // request presented, not yet taken
	wpres                    [2]*dmaWrite // the write a client is on, nil when none
	wShow                    [2]bool      // it shows its next beat (valid)
	pBeat                    [2]float64   // a client shows its write's next beat
	allW                     []*dmaWrite  // every write a client asked
	beats                    []dmaBeat    // beats accepted, in order
	wTaken                   []int        // cycle each accepted beat was taken by the host
	tlpEnd                   []int        // cycle the host took each TLP's last beat
	host                     dmaHostTLP
	bigWDone                 bool // the 64 KiB write asked
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
	lastW                    uint64 // the address of the write beat last accepted
	bigDone                  bool   // the 64 KiB read asked
	errs                     []string

	// coverage and checked items, for TestDMAStimulusCovers
	nHostReads, nBlocks, nWrites, nOOO, nTagStall, nRingStall, nWaitStall int
	nUnaligned, nCross4K, nTop, nMax, nOdd, nRAW, nStray, maxInFlight     int
	nClearWait                                                            int // cycles a read request waited for the clear
	// byte-granular reads: host requests at an address not 64-byte
	// aligned, with a First DW BE other than 1111b, a Last DW BE other
	// than 1111b and 0000b, within one DW, touching a block more than
	// their length's (the offset)
	nOffAddr, nFbe, nLbe, nOneDW, nExtraBlk int
	// writes: TLPs taken, full MPS ones, ones cut at 4 KiB short of MPS
	// and their write's end, writes whose count split (the model's) would
	// cross 4 KiB, writes of several TLPs, cycles the other client waited
	// at an open TLP, cycles an open TLP's client showed nothing, reads
	// taken while a TLP was open and no beat of it in the register
	nTLP, nTLPFull, nTLPCut, nCountIllegal, nMultiTLP, nHeldOff, nTLPGap, nTLPWait int
	nWWrap, nWMax, nPage                                                           int
	nRRBoth                                                                        int // TLP starts both clients asked for
	nPartialBE                                                                     int // host beats with bytes disabled
}

func newDMADUT(tags, mrrs, mps, rcb, big int) *dmaDUT {
	d := &dmaDUT{tags: tags, mrrs: mrrs, mps: mps, rcb: rcb, big: big, bigW: big, wScale: 1, cb: mrrs / 64, rob: robBlocks(tags, mrrs), clearLeft: dmaClearCycles(robBlocks(tags, mrrs)), ncycles: dmaCycles, drain: dmaDrain, backlog: dmaBacklog,
		wrArb: components.NewRoundRobin(2), rdArb: components.NewRoundRobin(2),
		lastTLPCli: -1, tBusy: make([]bool, tags), tCli: make([]int, tags), tPos: make([]int, tags), tLeft: make([]int, tags),
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
	return []Param{{"OUTSTANDING", d.tags}, {"MRRS", d.mrrs}, {"MPS", d.mps}, {"TAG_W", d.tagW}}
}
func (d *dmaDUT) cycles() int { return d.ncycles + dmaClearCycles(d.rob) }
func (d *dmaDUT) inputs() []Signal {
	return []Signal{
		{Name: "rd0_req_valid", Width: 1}, {Name: "rd0_req_addr", Width: 64}, {Name: "rd0_req_len", Width: 16},
		{Name: "rd1_req_valid", Width: 1}, {Name: "rd1_req_addr", Width: 64}, {Name: "rd1_req_len", Width: 16},
		{Name: "wr0_valid", Width: 1}, {Name: "wr0_addr", Width: 64}, {Name: "wr0_len", Width: 16}, {Name: "wr0_data", Width: 512},
		{Name: "wr1_valid", Width: 1}, {Name: "wr1_addr", Width: 64}, {Name: "wr1_len", Width: 16}, {Name: "wr1_data", Width: 512},
		{Name: "host_rd_ready", Width: 1},
		{Name: "host_cpl_valid", Width: 1}, {Name: "host_cpl_tag", Width: d.tagW}, {Name: "host_cpl_data", Width: 512},
		{Name: "host_wr_ready", Width: 1},
		{Name: "wr0_be", Width: 64}, {Name: "wr1_be", Width: 64},
	}
}
func (d *dmaDUT) outputs() []Signal {
	return []Signal{
		{Name: "rd0_req_ready", Width: 1}, {Name: "rd0_rsp_valid", Width: 1}, {Name: "rd0_rsp_data", Width: 512, ValidWhen: "rd0_rsp_valid"},
		{Name: "rd1_req_ready", Width: 1}, {Name: "rd1_rsp_valid", Width: 1}, {Name: "rd1_rsp_data", Width: 512, ValidWhen: "rd1_rsp_valid"},
		{Name: "wr0_ready", Width: 1}, {Name: "wr1_ready", Width: 1},
		{Name: "host_rd_valid", Width: 1}, {Name: "host_rd_addr", Width: 64, ValidWhen: "host_rd_valid"},
		{Name: "host_rd_len", Width: 16, ValidWhen: "host_rd_valid"}, {Name: "host_rd_tag", Width: d.tagW, ValidWhen: "host_rd_valid"},
		{Name: "host_wr_valid", Width: 1}, {Name: "host_wr_sop", Width: 1, ValidWhen: "host_wr_valid"},
		{Name: "host_wr_last", Width: 1, ValidWhen: "host_wr_valid"}, {Name: "host_wr_addr", Width: 64, ValidWhen: "host_wr_valid"},
		{Name: "host_wr_len", Width: 16, ValidWhen: "host_wr_valid"}, {Name: "host_wr_data", Width: 512, ValidWhen: "host_wr_valid"},
		{Name: "host_wr_be", Width: 64, ValidWhen: "host_wr_valid"},
		{Name: "host_rd_fbe", Width: 4, ValidWhen: "host_rd_valid"}, {Name: "host_rd_lbe", Width: 4, ValidWhen: "host_rd_valid"},
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

// dmaBytes is a client read's bytes: len, 0 = 65536.
func dmaBytes(len int) int {
	if len == 0 {
		return 65536
	}
	return len
}

// dmaSpan is the 64-byte blocks n bytes at addr lie in: the blocks a host
// request returns, and a client read's response.
func dmaSpan(addr uint64, n int) int {
	return (int(addr%64) + n + 63) / 64
}

// dmaBE is the First and Last DW BE of a read of n bytes (n >= 1) at addr,
// as the block's model computes them: the first DW's lanes from addr mod 4
// on, the last DW's up to the last byte's lane; a read within one DW has
// both ends in the first DW's and a Last DW BE of 0.
func dmaBE(addr uint64, n int) (fbe, lbe int) {
	a := int(addr % 4)
	e := (a + n - 1) % 4
	f, l := 0xF<<a&0xF, 0xF>>(3-e)
	if a+n <= 4 {
		return f & l, 0
	}
	return f, l
}

// dmaBlocks is the blocks a client write of len bytes gives (0 = 65536).
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
	case x < 5: // the block a write client has just given the block
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
	case x < 36: // a few bytes (at the random offset below: within a DW, or across two)
		rd.addr, rd.len = dmaShared+uint64(r.IntN(64))*64, 1+r.IntN(8)
	default: // mid-size anywhere
		rd.addr, rd.len = r.Uint64(), 64*(1+r.IntN(min(3*d.cb, 48)))
	}
	if r.IntN(2) == 0 {
		// a length of any byte count: up to 63 bytes short of the one drawn
		rd.len -= r.IntN(min(rd.len, 64))
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
	rd.addr |= uint64(r.IntN(64)) // any byte address
	nb := dmaBytes(rd.len)
	d.asked[c] += dmaSpan(rd.addr, nb)
	rd.chunks = hca.ReadRequests(nil, rd.addr, nb, d.mrrs)
	rd.data = make([][]Value, len(rd.chunks))
	if rd.addr%uint64(d.mrrs) != 0 && nb > d.mrrs-int(rd.addr%uint64(d.mrrs)) {
		d.nUnaligned++
	}
	if rd.addr/4096 != (rd.addr+uint64(nb)-1)/4096 {
		d.nCross4K++
	}
	if rd.addr+uint64(nb) < rd.addr || rd.addr+uint64(nb) == 0 {
		d.nTop++
	}
	if nb > 65536-64 {
		d.nMax++ // 1024 blocks' worth (len 0, or 65535)
	}
	if rd.len%64 != 0 {
		d.nOdd++
	}
	return rd
}

// newWrite draws a client write and its beats.
func (d *dmaDUT) newWrite(r *rand.Rand, c int) *dmaWrite {
	w := &dmaWrite{}
	// blocks in a full TLP, at most 8 for the lengths drawn (so that at
	// MPS 4096 the port is not mostly busy with long writes)
	mb := min(d.mps/64, 8)
	switch x := r.IntN(40); {
	case x < 16: // small, in the shared region (where the reads read)
		w.addr, w.len = dmaShared+uint64(r.IntN(64))*64, 64*(1+r.IntN(3))
	case x < 21: // around MPS multiples in the shared region, across its 4 KiB boundary at any alignment
		w.addr, w.len = dmaShared+uint64(r.IntN(64))*64, 64*mb*(1+r.IntN(2))+64*(r.IntN(3)-1)
	case x < 23: // a 4 KiB page (at MPS 256, 16 TLPs of 4 beats)
		w.addr, w.len = r.Uint64()&(1<<40-1)&^4095, 4096
	case x < 27: // ending a little past a 4 KiB boundary
		w.addr = r.Uint64()&(1<<40-1)&^4095 + 4096 - uint64(64*(1+r.IntN(mb+2)))
		w.len = 64 * (1 + r.IntN(2*mb+2))
	case x < 30: // odd lengths (a partial last block is written whole)
		w.addr, w.len = dmaShared+uint64(r.IntN(64))*64, 1+r.IntN(700)
	case x < 32: // the top of the 64-bit space, wrapping to 0
		w.addr, w.len = -uint64(64*(1+r.IntN(6))), 64*(1+r.IntN(12))
	default: // anywhere
		w.addr, w.len = r.Uint64(), 64*(1+r.IntN(2*mb+1))
	}
	if d.bigWDue(c) {
		// The largest writes, once per seed: len 0 is 65536 bytes, and
		// 65535 rounds up to the same 1024 blocks.
		d.bigWDone = true
		w.addr, w.len = r.Uint64()&(1<<40-1), []int{0, 65535}[c]
	}
	w.addr |= uint64(r.IntN(64)) // ignored low bits
	n := dmaBlocks(w.len)
	w.beats, w.landed = make([]Value, n), make([]int, n)
	for i := range w.beats {
		w.beats[i] = randomBlock(r)
	}
	// Byte enables as a client of a contiguous byte range gives them (no
	// draw, so the run is the one it was before the block had them): the
	// first beat from the address's low bits on, the last up to the
	// length's last byte, every other beat whole; a one-beat write whose
	// two ends cross keeps the first's.
	w.be = make([]uint64, n)
	for i := range w.be {
		w.be[i] = ^uint64(0)
	}
	w.be[0] = ^uint64(0) >> (w.addr % 64)
	last := ^uint64(0) << (63 - uint64(w.len+63)%64)
	if n > 1 || w.be[0]&last != 0 {
		w.be[n-1] &= last
	}
	base := w.addr &^ 63
	w.tlps = hca.WriteTLPs(nil, base, n*64, d.mps)
	// The model's split (hca.PCIe.write: by count, whatever the address)
	// would have a TLP across 4 KiB here, which WriteTLPs cuts.
	for k := 0; k*d.mps < n*64; k++ {
		a := base + uint64(k*d.mps)
		if a/4096 != (a+uint64(min(d.mps, n*64-k*d.mps))-1)/4096 {
			d.nCountIllegal++
			break
		}
	}
	if len(w.tlps) > 1 {
		d.nMultiTLP++
	}
	if end := base + uint64(n*64); end < base || end == 0 {
		d.nWWrap++
	}
	if n == 1024 {
		d.nWMax++
	}
	if base%4096 == 0 && n == 64 {
		d.nPage++ // a whole page: 4096 / MPS TLPs of MPS
	}
	d.allW = append(d.allW, w)
	return w
}

// bigWDue: write client c is to write 64 KiB, from cycle 1200 as soon as it
// is on no write.
func (d *dmaDUT) bigWDue(c int) bool {
	return d.bigW == c && !d.bigWDone && d.c >= 1200
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
			d.pWr[c] = d.wScale * []float64{0, 0.1, 0.3, 0.6}[r.IntN(4)]
			d.pBeat[c] = []float64{1, 0.8, 0.3}[r.IntN(3)]
		}
		d.pRdReady = []float64{0.3, 0.8, 1}[r.IntN(3)]
		d.pWrReady = []float64{0.2, 0.7, 1}[r.IntN(3)]
		d.pCpl = []float64{0.5, 0.9, 1}[r.IntN(3)]
		d.longDelay = r.IntN(2) == 0
	}
	if drain {
		d.pRd, d.pWr, d.pBeat = [2]float64{}, [2]float64{}, [2]float64{1, 1}
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
		if d.wpres[c] == nil && (hold || r.Float64() < d.pWr[c] || d.bigWDue(c) && !drain) {
			d.wpres[c] = d.newWrite(r, c)
		}
		// a write's first beat is shown at once and every beat held until
		// taken; between beats the client may show nothing (no data yet)
		if w := d.wpres[c]; w != nil && !d.wShow[c] {
			d.wShow[c] = w.sent == 0 || r.Float64() < d.pBeat[c]
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
	// (a write's address and length on beats other than its first, and
	// everything with valid 0, are noise the block must not read)
	in[6], in[7], in[8], in[9] = U(0), U(r.Uint64()), U(uint64(r.IntN(1<<16))), randomBlock(r)
	in[10], in[11], in[12], in[13] = U(0), U(r.Uint64()), U(uint64(r.IntN(1<<16))), randomBlock(r)
	for c := range 2 {
		if w := d.wpres[c]; w != nil && d.wShow[c] {
			in[6+4*c], in[9+4*c] = U(1), w.beats[w.sent]
			if w.sent == 0 {
				in[7+4*c], in[8+4*c] = U(w.addr), U(uint64(w.len))
			}
		}
	}
	in[14], in[15], in[16], in[17], in[18] = b2v(hostRdReady), b2v(cplV), U(uint64(cplTag)), cplData, b2v(hostWrReady)
	// byte enables: a shown beat's, else noise (the noise data's first word: no draw)
	in[19], in[20] = U(in[9][0]), U(in[13][0])
	for c := range 2 {
		if w := d.wpres[c]; w != nil && d.wShow[c] {
			in[19+c] = U(w.be[w.sent])
		}
	}

	// ---- this cycle's outputs, from the state at its start ----
	clearing := d.clearLeft > 0
	wrSlot := !clearing && (!d.hwV || hostWrReady)
	// each write client's next beat: its block address, beats left, and
	// the TLP it would start (hca.WriteTLP in blocks)
	var wb [2]uint64
	var wl, tn [2]int
	for c := range 2 {
		wb[c], wl[c] = d.wcBlk[c], d.wcLeft[c]
		if w := d.wpres[c]; !d.wcBusy[c] && w != nil {
			wb[c], wl[c] = w.addr>>6&blkMask, len(w.beats)
		}
		tn[c] = min(wl[c], d.mps/64, 64-int(wb[c]%64))
	}
	// a new TLP: round robin; an open TLP: its client's next beat
	var wreq components.PortSet
	for c := range 2 {
		if d.wShow[c] && wrSlot && !d.tlpOpen {
			wreq.Set(c)
		}
	}
	wg := d.wrArb.Pick(wreq)
	if wreq.Has(0) && wreq.Has(1) {
		// both clients start a TLP: round robin per TLP gives it to the
		// one that did not start the last
		d.nRRBoth++
		if d.lastTLPCli >= 0 && wg == d.lastTLPCli {
			d.errorf("write client %d starts a TLP after its own, client %d waiting", wg, 1-wg)
		}
	}
	wsel := wg
	if wrSlot && d.tlpOpen {
		if d.wShow[d.tlpCli] {
			wsel = d.tlpCli
		} else {
			d.nTLPGap++
		}
		if d.wShow[1-d.tlpCli] {
			d.nHeldOff++
		}
	}
	wrHeld := wsel >= 0 || (d.hwV && !hostWrReady)
	// a read taken now waits for the last beat of the TLP in the register
	// or open
	wrPend := wrHeld || d.tlpOpen
	// each splitter's next host request: k bytes to the next MRRS-aligned
	// address or the read's end, returning the n blocks they lie in
	var k, n [2]int
	var fits, last [2]bool
	for c := range 2 {
		k[c] = min(d.spLeft[c], d.mrrs-int(d.spAddr[c]%uint64(d.mrrs)))
		n[c] = dmaSpan(d.spAddr[c], k[c])
		fits[c] = d.tail[c]-d.head[c]+n[c] <= d.rob
		last[c] = d.spLeft[c] == k[c]
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
	out[6], out[7] = b2v(wsel == 0), b2v(wsel == 1)
	out[8], out[12], out[17] = b2v(d.hrV), b2v(d.hwV), make(Value, 8)
	if d.hrV {
		out[9], out[10], out[11] = U(d.hrAddr), U(uint64(d.hrLen)), U(uint64(d.hrTag+d.tagBase))
		out[19], out[20] = U(uint64(d.hrFbe)), U(uint64(d.hrLbe))
	}
	if d.hwV {
		out[13], out[14], out[15], out[16], out[17] = b2v(d.hwSop), b2v(d.hwLast), U(d.hwAddr), U(uint64(d.hwLen)), d.hwData
		out[18] = U(d.hwBe)
	}
	d.scoreDeliveries()

	// ---- the rising edge ----
	// The host takes a write, then a read request (it applies the write
	// first; the block never offers a read it must order after that write
	// in the same cycle).
	wrTaken := d.hwV && hostWrReady
	tlpTaken := wrTaken && d.hwLast // a TLP's last beat
	if wrTaken {
		d.hostTakesWrite()
	}
	if d.hrV && hostRdReady {
		d.hostTakesRead(r)
	}
	if wsel >= 0 {
		w := d.wpres[wsel]
		d.hwV, d.hwData, d.hwBe, d.hwSop = true, w.beats[w.sent], w.be[w.sent], wg >= 0
		if wg >= 0 {
			n := tn[wg]
			d.hwLast, d.hwAddr, d.hwLen = n == 1, wb[wg]<<6, n*64
			d.tlpOpen, d.tlpCli, d.tlpLeft = n != 1, wg, n-1
			d.ntlp++
			d.lastTLPCli = wg
			d.wrArb.Commit(wg)
		} else {
			d.hwLast = d.tlpLeft == 1
			d.tlpLeft--
			d.tlpOpen = d.tlpLeft > 0
		}
		d.wcBusy[wsel], d.wcBlk[wsel], d.wcLeft[wsel] = wl[wsel] != 1, (wb[wsel]+1)&blkMask, wl[wsel]-1
		if len(d.beats) == 0 {
			d.firstWrite = d.c
		}
		d.beats = append(d.beats, dmaBeat{w, w.sent, d.ntlp - 1})
		d.lastW = wb[wsel] << 6 // a read soon may ask it while it is on its way
		w.sent++
		d.wShow[wsel] = false
		if w.sent == len(w.beats) {
			d.wpres[wsel] = nil
		}
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
	if tlpTaken {
		d.spWait = [2]bool{} // the TLP they waited for has gone
	}
	if rg >= 0 {
		c := rg
		d.hrV, d.hrAddr, d.hrLen, d.hrTag = true, d.spAddr[c], k[c], tg
		d.hrFbe, d.hrLbe = dmaBE(d.spAddr[c], k[c])
		d.hrCli, d.hrReq, d.hrChunk = c, d.spReq[c], d.spChunk[c]
		d.tBusy[tg], d.tCli[tg], d.tPos[tg], d.tLeft[tg] = true, c, d.tail[c]%d.rob, n[c]
		d.tail[c] += n[c]
		d.spAddr[c] += uint64(k[c])
		d.spLeft[c] -= k[c]
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
			p.wseq, p.acc = len(d.beats), d.c // a beat taken this cycle counts as earlier
			if wrPend && !wrHeld {
				d.nTLPWait++ // only the open TLP holds it back
			}
			d.reads[c] = append(d.reads[c], p)
			d.spBusy[c], d.spAddr[c], d.spLeft[c], d.spWait[c] = true, p.addr, dmaBytes(p.len), wrPend
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
	case d.hrLen > d.mrrs || d.hrLen == 0 || d.hrAddr/uint64(d.mrrs) != (d.hrAddr+uint64(d.hrLen)-1)/uint64(d.mrrs) ||
		d.hrAddr/4096 != (d.hrAddr+uint64(d.hrLen)-1)/4096:
		d.errorf("host request %#x+%d is not a legal read at MRRS %d", d.hrAddr, d.hrLen, d.mrrs)
	case d.hostBusy[tag] || tag < d.tagBase || tag >= d.tagBase+d.tags:
		d.errorf("host request with tag %d, in flight or outside the tags", tag)
	}
	// PCIe's byte enables, byte by byte: the request reads the DWs from
	// its address's DW to its last byte's; byte i of its first DW is
	// enabled iff that byte is one of the request's, and so for its last
	// DW, whose enables are 0 when the first DW is the last (PCIe: a
	// request of Length 1 DW has Last DW BE 0000b).
	first, lastDW := d.hrAddr&^3, (d.hrAddr+uint64(d.hrLen)-1)&^3
	in := func(b uint64) bool { return b-d.hrAddr < uint64(d.hrLen) }
	fbe, lbe := 0, 0
	for i := range 4 {
		if in(first + uint64(i)) {
			fbe |= 1 << i
		}
		if lastDW != first && in(lastDW+uint64(i)) {
			lbe |= 1 << i
		}
	}
	if fbe != d.hrFbe || lbe != d.hrLbe {
		d.errorf("host request %#x+%d: First DW BE %04b, Last DW BE %04b; the request's bytes say %04b, %04b", d.hrAddr, d.hrLen, d.hrFbe, d.hrLbe, fbe, lbe)
	}
	if d.hrAddr%64 != 0 {
		d.nOffAddr++
	}
	if fbe != 0xF {
		d.nFbe++
	}
	if lbe != 0xF && lbe != 0 {
		d.nLbe++
	}
	if lastDW == first {
		d.nOneDW++
	}
	if dmaSpan(d.hrAddr, d.hrLen) > (d.hrLen+63)/64 {
		d.nExtraBlk++ // the offset makes it touch one block more than its length
	}
	for k := range rd.wseq {
		if k >= len(d.wTaken) || d.wTaken[k] >= d.c {
			d.errorf("client %d request %d passed write beat %d accepted before it", d.hrCli, d.hrReq, k)
			break
		}
	}
	// nor the rest of the TLP the last of those beats was in (PCIe orders
	// whole TLPs: the read would otherwise overtake it)
	if rd.wseq > 0 {
		if t := d.beats[rd.wseq-1].tlp; t >= len(d.tlpEnd) || d.tlpEnd[t] >= d.c {
			d.errorf("client %d request %d passed TLP %d, open when it was taken", d.hrCli, d.hrReq, t)
		}
	}
	// A write to one of its blocks accepted before the read and still on
	// its way when the read was accepted: the order decided the data.
	for k := range rd.wseq {
		bt := d.beats[k]
		b := (bt.w.addr>>6 + uint64(bt.k)) & blkMask
		if k < len(d.wTaken) && d.wTaken[k] >= rd.acc && (b-d.hrAddr>>6)&blkMask < uint64(dmaSpan(d.hrAddr, d.hrLen)) {
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
	// The host returns the blocks the request's bytes lie in, each byte at
	// its lane, and in the lanes outside the request bytes of no meaning
	// (a completer returns only the DWs asked, and a disabled byte's value
	// is undefined): the scoreboard keeps memory's blocks as they are now.
	nb := dmaSpan(d.hrAddr, d.hrLen)
	p := &dmaPending{tag: tag, cli: d.hrCli, order: d.order, blk: d.hrAddr >> 6, blocks: make([]Value, nb)}
	d.order++
	clean := make([]Value, nb)
	for i := range p.blocks {
		clean[i] = d.memBlock((p.blk + uint64(i)) & blkMask)
		lo, hi := dmaLanes(d.hrAddr, d.hrLen, i)
		p.blocks[i] = slices.Clone(clean[i])
		junk := d.memBlock((p.blk + uint64(i) + 0x5a5a5a5a) & blkMask)
		for l := range 64 {
			if l < lo || l >= hi {
				setLane(p.blocks[i], l, lane(junk, l))
			}
		}
	}
	rd.data[d.hrChunk] = clean
	delay := 1 + r.IntN(8)
	if d.longDelay {
		delay = 10 + r.IntN(60)
	}
	p.at = d.c + 1 + delay
	d.pending = append(d.pending, p)
	d.nHostReads++
}

// hostTakesWrite checks the host write beat in the register against the
// clients' beats in acceptance order and TLP rules, and puts it into host
// memory where its TLP's header says: the TLP's address plus 64 bytes a
// beat before it in the TLP.
func (d *dmaDUT) hostTakesWrite() {
	k := len(d.wTaken)
	d.wTaken = append(d.wTaken, d.c)
	d.nWrites++
	if k >= len(d.beats) {
		d.errorf("host write beat %d, more than the clients gave", k)
		return
	}
	b := d.beats[k]
	h := &d.host
	switch {
	case d.hwSop:
		if h.open {
			d.errorf("host write beat %d opens a TLP inside TLP %#x+%d (%d beats taken)", k, h.addr, h.len, h.got)
		}
		*h = dmaHostTLP{open: true, addr: d.hwAddr, len: d.hwLen, w: b.w}
		d.nTLP++
		switch {
		case b.w.tlpsIn >= len(b.w.tlps) || b.w.tlps[b.w.tlpsIn] != (hca.ReadChunk{Addr: d.hwAddr, N: d.hwLen}):
			d.errorf("TLP %#x+%d is not its write's next hca.WriteTLPs chunk (%d of %v)", d.hwAddr, d.hwLen, b.w.tlpsIn, b.w.tlps)
		case d.hwLen <= 0 || d.hwLen > d.mps || d.hwLen%64 != 0 || d.hwAddr/4096 != (d.hwAddr+uint64(d.hwLen)-1)/4096:
			d.errorf("TLP %#x+%d is not a legal write at MPS %d", d.hwAddr, d.hwLen, d.mps)
		}
		if d.hwLen == d.mps {
			d.nTLPFull++
		}
		if d.hwLen < min(d.mps, 64*(len(b.w.beats)-b.k)) {
			d.nTLPCut++ // cut at 4 KiB
		}
	case !h.open:
		d.errorf("host write beat %d outside a TLP", k)
		return
	case h.addr != d.hwAddr || h.len != d.hwLen:
		d.errorf("TLP %#x+%d shows header %#x+%d on beat %d", h.addr, h.len, d.hwAddr, d.hwLen, h.got)
	}
	if h.w != b.w {
		d.errorf("TLP %#x+%d carries a beat of another write (clients interleaved in a TLP)", h.addr, h.len)
	}
	at := h.addr + uint64(64*h.got)
	h.got++
	if want := b.w.addr&^63 + uint64(64*b.k); at != want || !valueEq(d.hwData, b.w.beats[b.k]) || d.hwBe != b.w.be[b.k] {
		d.errorf("host write beat %d lands at %#x; the client wrote %#x there, or other data or byte enables", k, at, want)
	}
	// Only the enabled bytes change (byte lane k is bits 511-8k..504-8k:
	// word 7 - k/8, byte 7 - k%8 of it).
	blk := at >> 6 & blkMask
	v := slices.Clone(d.memBlock(blk))
	for k := range 64 {
		if d.hwBe>>(63-k)&1 != 0 {
			sh := 8 * uint(7-k%8)
			v[7-k/8] = v[7-k/8]&^(0xFF<<sh) | d.hwData[7-k/8]&(0xFF<<sh)
		}
	}
	d.mem[blk] = v
	if d.hwBe != ^uint64(0) {
		d.nPartialBE++
	}
	b.w.landed[b.k]++
	if d.hwLast != (h.got == h.len/64) {
		d.errorf("TLP %#x+%d: last %v on its beat %d", h.addr, h.len, d.hwLast, h.got)
	}
	if d.hwLast || h.got >= h.len/64 {
		h.open = false
		h.w.tlpsIn++
		d.tlpEnd = append(d.tlpEnd, d.c)
	}
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
		ch := rd.chunks[p.chunk]
		if blocks == nil {
			d.errorf("client %d request %d: a block of host request %d before the host took it", c, p.req, p.chunk)
		} else if p.blk >= len(blocks) {
			d.errorf("client %d request %d: block %d of host request %d, which read %d", c, p.req, p.blk, p.chunk, len(blocks))
		} else {
			// the request's bytes in this block, at their lanes, are host
			// memory's; the other lanes mean nothing
			lo, hi := dmaLanes(ch.Addr, ch.N, p.blk)
			for l := lo; l < hi; l++ {
				if lane(blocks[p.blk], l) != lane(d.rspData[c], l) {
					d.errorf("client %d request %d: block %d of host request %#x+%d: lane %d is not host memory's", c, p.req, p.blk, ch.Addr, ch.N, l)
					break
				}
			}
		}
		d.nBlocks++
		d.got[c]++
		if p.blk++; p.blk == dmaSpan(ch.Addr, ch.N) {
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
	if len(d.wTaken) != len(d.beats) || len(d.hostBusy) != 0 || d.host.open {
		d.errorf("at the end: %d of %d write beats sent, %d tags in flight, a TLP open: %v", len(d.wTaken), len(d.beats), len(d.hostBusy), d.host.open)
	}
	// every beat of every write landed exactly once, in its write's TLPs
	for i, w := range d.allW {
		if w.tlpsIn != len(w.tlps) {
			d.errorf("write %d at %#x: %d of its %d TLPs taken", i, w.addr, w.tlpsIn, len(w.tlps))
		}
		for k, n := range w.landed {
			if n != 1 {
				d.errorf("write %d at %#x: beat %d landed %d times", i, w.addr, k, n)
				break
			}
		}
	}
}

// dmaLanes is the lanes [lo, hi) of block i of the blocks a read of n bytes
// at addr lies in that hold its bytes.
func dmaLanes(addr uint64, n, i int) (lo, hi int) {
	off := int(addr % 64) // the read's first byte, in its first block
	return max(off-64*i, 0), min(off+n-64*i, 64)
}

// lane is byte lane l of a block (the byte at data[511-8l -: 8], at the
// block's address + l: word 7 - l/8, byte 7 - l%8 of it).
func lane(v Value, l int) byte { return byte(v[7-l/8] >> (8 * uint(7-l%8))) }

// setLane sets byte lane l of a block.
func setLane(v Value, l int, b byte) {
	sh := 8 * uint(7-l%8)
	v[7-l/8] = v[7-l/8]&^(0xFF<<sh) | uint64(b)<<sh
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
	tags, mrrs, mps int
	rcb             int
	big             int  // the client asking a 64 KiB read and (below MPS 4096) writing 64 KiB, -1 none
	short           bool // 800 cycles a seed, 350 draining, a backlog of 80 (a slow case)
	fill            bool // holdInClear and fillTags, over dmaFillCycles
}

func (tc dmaCase) dut() *dmaDUT {
	d := newDMADUT(tc.tags, tc.mrrs, tc.mps, tc.rcb, tc.big)
	if tc.short {
		d.ncycles, d.drain, d.backlog = 800, 350, 80
	}
	if tc.mps == 4096 {
		// TLPs of up to 64 beats: fewer writes and no 64 KiB one (16
		// TLPs of 64 beats), so that the reads waiting behind them still
		// check what they check
		d.wScale, d.bigW = 0.25, -1
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
	{"dma_t4_m128", 4, 128, 128, 64, -1, false, false},
	{"dma_t5_m256_rcb128", 5, 256, 256, 128, -1, false, false},
	{"dma_t8_m512", 8, 512, 256, 64, 0, false, false},
	{"dma_t64_m4096", 64, 4096, 4096, 64, 1, false, false},
	{"dma_t260_m128", 260, 128, 128, 64, -1, true, false},
}

// dmaFillCase is cx8's DMA engine (xdr.yaml: 512 tags, MRRS 512, rings of
// 4096 blocks, so 64 words of lap bits to clear), its clients presenting
// from the clear's first cycle and reading 64 KiB at a time, the host
// holding its answers until every tag is in flight (TestDMAClear).
var dmaFillCase = dmaCase{"dma_t512_m512_fill", 512, 512, 512, 64, -1, false, true}

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
// at most 70 cycles' worth, and a write TLP at most 200 (64 beats at MPS
// 4096, with the host taking beats in phases as slow as one in 5 cycles
// and the client as slow as one in 3); a run that checks fewer has
// stopped early.
func TestDMAScoreboard(t *testing.T) {
	for _, tc := range dmaCases {
		for _, seed := range cosimSeeds {
			d := runDMA(tc, seed)
			msg := []any{"%s seed %d", tc.name, seed}
			require.Empty(t, d.errs, msg...)
			assert.GreaterOrEqual(t, d.nBlocks, d.ncycles/8, msg...)
			assert.GreaterOrEqual(t, d.nWrites, d.ncycles/20, msg...)
			assert.GreaterOrEqual(t, d.nHostReads, d.ncycles/70, msg...)
			assert.GreaterOrEqual(t, d.nTLP, d.ncycles/200, msg...)
		}
	}
}

// TestDMAStimulusCovers: per seed, completions arrive out of request order
// (a beat of a later request while an earlier one has beats to come) 50
// times (25 in the short 800-cycle case: its reads of any byte count are
// shorter than whole blocks were, seed 5 has 33), a read waits for an earlier write (50 cycles per case), 5 reads split at an MRRS
// boundary before their end and 5 across 4 KiB, and a length that is not a
// multiple of 64, and 1 in 100 cycles a write beat with bytes disabled (the
// host keeps its bytes there); with 8 tags or fewer every tag is in flight at once and
// reads wait for a tag 100 cycles, and where the ring holds exactly the
// tags' requests (4 and 8 tags) they wait for ring room 20 times per case.
// Per case: 5 reads wrap past 2^64 (half the lengths are trimmed by up to
// 63 bytes, so some of the reads drawn at the top end short of 2^64: the
// 64-tag case has 9), and byte-granular host requests: 20 at an address
// not 64-byte aligned, 20 with a First DW BE and 20 with a Last DW BE
// other than 1111b (and 0000b), 5 within one DW, 10 whose offset makes
// them return one block more than their length's; 5 return a block an earlier write,
// still on its way when the read was taken, had changed, 3 stray
// completions are ignored, and the 64 KiB read is asked on every seed of
// the cases that ask it. Writes, per case: 5 writes of several TLPs, 10
// TLPs of a full MPS, 5 TLPs cut short at 4 KiB (as many writes whose
// count split, the model's, would cross it), 3 whole 4 KiB pages, 3
// writes wrapping past 2^64, 50 cycles in which the other client waited at
// an open TLP and 50 in which the open TLP's client had no beat to give,
// 5 reads held back by an open TLP alone (no beat of it in the register),
// 20 TLPs both clients asked to start (the scoreboard requires the one
// that did not start the last to get it), and the 64 KiB write on every seed of the cases that ask it (the 8-tag
// one: MPS 256, so 256 TLPs of 4 beats). So a block
// that mishandled one of these could not match the trace by luck.
func TestDMAStimulusCovers(t *testing.T) {
	for _, tc := range dmaCases {
		var top, raw, stray, maxReads, ringStall, wait int
		var offAddr, fbe, lbe, oneDW, extra int
		var multi, full, cut, countIllegal, page, wwrap, heldOff, gap, tlpWait, maxWrites, rrBoth int
		for _, seed := range cosimSeeds {
			d := runDMA(tc, seed)
			msg := []any{"%s seed %d", tc.name, seed}
			assert.GreaterOrEqual(t, d.nOOO, min(50, d.ncycles/32), msg...)
			assert.Positive(t, d.nWaitStall, msg...)
			assert.GreaterOrEqual(t, d.nUnaligned, 5, msg...)
			assert.GreaterOrEqual(t, d.nCross4K, 5, msg...)
			assert.GreaterOrEqual(t, d.nOdd, 1, msg...)
			// Nearly every write's first beat has bytes disabled (its
			// address's low bits are random), and its reads' blocks are
			// host memory as those beats left it.
			assert.GreaterOrEqual(t, d.nPartialBE, d.ncycles/100, msg...)
			if tc.tags <= 8 {
				assert.Equal(t, tc.tags, d.maxInFlight, msg...)
				assert.GreaterOrEqual(t, d.nTagStall, 100, msg...)
			}
			top += d.nTop
			offAddr += d.nOffAddr
			fbe += d.nFbe
			lbe += d.nLbe
			oneDW += d.nOneDW
			extra += d.nExtraBlk
			wait += d.nWaitStall
			raw += d.nRAW
			stray += d.nStray
			maxReads += d.nMax
			ringStall += d.nRingStall
			multi += d.nMultiTLP
			full += d.nTLPFull
			cut += d.nTLPCut
			countIllegal += d.nCountIllegal
			page += d.nPage
			wwrap += d.nWWrap
			heldOff += d.nHeldOff
			gap += d.nTLPGap
			tlpWait += d.nTLPWait
			maxWrites += d.nWMax
			rrBoth += d.nRRBoth
		}
		assert.GreaterOrEqual(t, multi, 5, tc.name)
		assert.GreaterOrEqual(t, full, 10, tc.name)
		assert.GreaterOrEqual(t, cut, 5, tc.name)
		assert.GreaterOrEqual(t, countIllegal, 5, tc.name)
		assert.GreaterOrEqual(t, page, 3, tc.name)
		assert.GreaterOrEqual(t, wwrap, 3, tc.name)
		assert.GreaterOrEqual(t, heldOff, 50, tc.name)
		assert.GreaterOrEqual(t, gap, 50, tc.name)
		assert.GreaterOrEqual(t, tlpWait, 5, tc.name)
		assert.GreaterOrEqual(t, rrBoth, 20, tc.name)
		assert.GreaterOrEqual(t, top, 5, tc.name)
		assert.GreaterOrEqual(t, offAddr, 20, tc.name)
		assert.GreaterOrEqual(t, fbe, 20, tc.name)
		assert.GreaterOrEqual(t, lbe, 20, tc.name)
		assert.GreaterOrEqual(t, oneDW, 5, tc.name)
		assert.GreaterOrEqual(t, extra, 10, tc.name)
		assert.GreaterOrEqual(t, wait, 50, tc.name)
		assert.GreaterOrEqual(t, raw, 5, tc.name)
		assert.GreaterOrEqual(t, stray, 3, tc.name)
		if tc.big >= 0 {
			assert.Equal(t, len(cosimSeeds), maxReads, tc.name)
		}
		if tc.big >= 0 && tc.mps < 4096 {
			assert.Equal(t, len(cosimSeeds), maxWrites, tc.name)
		}
		if tc.tags <= 8 && robBlocks(tc.tags, tc.mrrs) == tc.tags*tc.mrrs/64 {
			assert.GreaterOrEqual(t, ringStall, 20, tc.name)
		}
	}
}

// TestDMAMutantsFail: each slip below, the kind an RTL engineer makes in a
// DMA engine, fails the co-simulation of the first seed of 8 tags at MRRS
// 512, MPS 256 (tags and ring run out there, and it asks a 64 KiB read and
// a 64 KiB write).
func TestDMAMutantsFail(t *testing.T) {
	const f = "hca_dma_engine.v"
	runMutants(t, func() cosimDUT { return dmaCaseNamed("dma_t8_m512").dut() }, []cosimMutant{
		{"the byte enables not passed on (every byte written)", f, "host_wr_be    <= (wsel == 1'b0) ? wr0_be : wr1_be;", "host_wr_be    <= {64{1'b1}};"},
		{"the other client's byte enables", f, "host_wr_be    <= (wsel == 1'b0) ? wr0_be : wr1_be;", "host_wr_be    <= (wsel == 1'b0) ? wr1_be : wr0_be;"},
		{"a request split at MRRS + 64", f, "to_bnd0 = MRRS_C - {1'b0, sp_addr[0][CBL+5:0]}", "to_bnd0 = MRRS_C + 7'd64 - {1'b0, sp_addr[0][CBL+5:0]}"},
		{"split by count, across the MRRS (and 4 KiB) boundary", f, "to_bnd0 = MRRS_C - {1'b0, sp_addr[0][CBL+5:0]}", "to_bnd0 = MRRS_C"},
		{"the split from the block address (the byte offset left out): a request across MRRS and 4 KiB", f, "to_bnd1 = MRRS_C - {1'b0, sp_addr[1][CBL+5:0]}", "to_bnd1 = MRRS_C - {1'b0, sp_addr[1][CBL+5:6], 6'd0}"},
		{"a wrong First DW BE (all four bytes)", f, "host_rd_fbe   <= one_dw ? (fbe_all & lbe_all) : fbe_all;", "host_rd_fbe   <= one_dw ? lbe_all : 4'b1111;"},
		{"a one-DW request's bytes in the First DW BE only from its address on", f, "host_rd_fbe   <= one_dw ? (fbe_all & lbe_all) : fbe_all;", "host_rd_fbe   <= fbe_all;"},
		{"a one-DW request's Last DW BE not 0000b", f, "host_rd_lbe   <= one_dw ? 4'b0000 : lbe_all;", "host_rd_lbe   <= lbe_all;"},
		{"the Last DW BE one byte short", f, "wire [1:0]      e_g    = a_g[1:0] + k_g[1:0] - 2'd1;", "wire [1:0]      e_g    = a_g[1:0] + k_g[1:0] - 2'd2;"},
		{"a host request one byte short (host_rd_len)", f, "host_rd_len   <= {{(16-KW){1'b0}}, k_g};", "host_rd_len   <= {{(16-KW){1'b0}}, k_g} - 16'd1;"},
		{"a client read one byte long", f, "bytes_of = {(len == 16'd0), len};", "bytes_of = {(len == 16'd0), len} + 17'd1;"},
		{"a read's len 0 taken as 0 bytes, not 65536", f, "bytes_of = {(len == 16'd0), len};", "bytes_of = {1'b0, len};"},
		{"a request's blocks from its length alone (the offset's extra block not returned)", f, "span0 = {{(KW-5){1'b0}}, sp_addr[0][5:0]} + {1'b0, k0}", "span0 = {1'b0, k0}"},
		{"the next request's address moved by blocks, not bytes", f, "sp_addr[rg]   <= a_g + {{(64-KW){1'b0}}, k_g};", "sp_addr[rg]   <= a_g + {{(58-CB_W){1'b0}}, n_g, 6'd0};"},
		{"a tag freed at its first beat, reused while in flight", f, "if (cpl_ok && cpl_left == {{(CB_W-1){1'b0}}, 1'b1}) tag_busy[ct] <= 1'b0;", "if (cpl_ok) tag_busy[ct] <= 1'b0;"},
		{"a busy tag allocated", f, "tag_free = ~tag_busy[OUTSTANDING-1:0];", "tag_free = {OUTSTANDING{1'b1}};"},
		{"one tag fewer", f, "tag_free = ~tag_busy[OUTSTANDING-1:0];", "tag_free = ~tag_busy[OUTSTANDING-1:0] & ({OUTSTANDING{1'b1}} >> 1);"},
		{"the ring delivers a slot before its data arrive", f, "wire deliver0 = !clearing && hw0[hd0[LAP_LW-1:0]] == rb_head[0][ROB_AW];", "wire deliver0 = !clearing && rb_tail[0] != rb_head[0];"},
		{"the clear writes lap bits 0: the first lap's slots look filled", f, "lap0[clr_word] <= {LAP_W{1'b1}};", "lap0[clr_word] <= {LAP_W{1'b0}};"},
		{"a request's beats all written at its first slot", f, "tag_mem[ct] <= {cpl_cli, cpl_cnt + 1'b1, cpl_left - 1'b1};", "tag_mem[ct] <= {cpl_cli, cpl_cnt, cpl_left - 1'b1};"},
		{"the ring's room check one block short", f, "fits0 = {1'b0, used0} + {{(ROB_AW+2-CB_W){1'b0}}, n0} <= ROB_C;", "fits0 = {1'b0, used0} + {{(ROB_AW+2-CB_W){1'b0}}, n0} < ROB_C;"},
		{"a read passes an earlier write", f, "sp_wwait[0] <= wr_pend;", "sp_wwait[0] <= 1'b0;"},
		{"a write taken in the read's own cycle not waited for", f, "wire wr_held = wtake || (host_wr_valid && !host_wr_ready);", "wire wr_held = host_wr_valid && !host_wr_ready;"},
		{"a read passes the rest of an open TLP", f, "sp_wwait[0] <= wr_pend;", "sp_wwait[0] <= wr_held;"},
		{"a read released by any beat of the TLP, not its last", f, "if (host_wr_valid && host_wr_ready && host_wr_last) begin", "if (host_wr_valid && host_wr_ready) begin"},
		{"a TLP one beat over MPS", f, "localparam [10:0]  MB_C = MB[10:0];", "localparam [10:0]  MB_C = MB[10:0] + 11'd1;"},
		{"split at MPS only, across 4 KiB", f, "wire [10:0] cap0  = (to4k0 < MB_C) ? to4k0 : MB_C;", "wire [10:0] cap0  = MB_C;"},
		{"split one beat late at 4 KiB", f, "wire [10:0] to4k1 = 11'd64 - {5'd0, wb1[5:0]};", "wire [10:0] to4k1 = 11'd65 - {5'd0, wb1[5:0]};"},
		{"clients interleaved mid-TLP (the write arbiter not held)", f, "& {2{wr_slot && !tlp_open}}", "& {2{wr_slot}}"},
		{"a TLP's beats counted one short of its header", f, "tlp_left     <= tn_g[MB_W-1:0] - 1'b1;", "tlp_left     <= tn_g[MB_W-1:0] - 2'd2;"},
		{"a later beat's address taken as a new write's", f, "wire [57:0] wb0 = wc_busy[0] ? wc_blk[0] : wr0_addr[63:6];", "wire [57:0] wb0 = wr0_addr[63:6];"},
		{"the read arbiter's pointer never passes rd1 (rd0 first always)", f, ".commit(issue), .commit_idx(rg)", ".commit(issue), .commit_idx(1'b1)"},
		{"the write arbiter's pointer never moves", f, ".commit(wg_valid), .commit_idx(wg)", ".commit(1'b0), .commit_idx(wg)"},
		{"a write's length rounded down to blocks", f, "{1'b0, len[15:6]} + {10'd0, (len[5:0] != 6'd0)}", "{1'b0, len[15:6]}"},
		{"a write's len 0 taken as no blocks", f, "blocks_of = 11'd1024;", "blocks_of = 11'd0;"},
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
