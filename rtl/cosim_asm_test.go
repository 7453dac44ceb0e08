package rtl

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_tx_assemble <-> hca.Requester.Next, host memory, ib.AppendWire ----

// asmCycles is the case's cycles per seed: about 100 messages of up to a
// few MTUs under back-pressure on both sides.
const asmCycles = 4000

// asmMsg is one message through hca_tx_assemble: the packetizer's
// descriptors of its packets (pktzMsg), its payload as host blocks, and
// the bytes the model sends for each packet.
type asmMsg struct {
	pktzMsg
	start  int      // LocalAddr mod 64: the payload's byte in its first block
	blocks [][]byte // the host blocks rd1 returns for the payload, in address order
	first  int      // the stream's index of blocks[0]
	wires  [][]byte // per packet: ib.AppendWire's bytes, ICRC and VCRC zeroed, zero to the beat's end
}

// asmModel fills a.wires from the model: a requester of the message's QP
// (as pktzModel) whose packets carry the payload the device's scheduler
// reads, host memory at LocalAddr + index x MTU for the packet's length
// (hca.Device.schedule), encoded by ib.AppendWire. The ICRC's 4 bytes and
// the VCRC's 2, the last 6 of every data packet, are zeroed: ib_icrc and
// ib_vcrc write them downstream. The packet is padded with zeros to a
// whole beat: the VCRC's beat, as ib_vcrc takes a packet. It panics if
// the header bytes differ from the packetizer's descriptors (pktzModel's).
func asmModel(a *asmMsg, host []byte, base uint64) {
	cfg := hca.Defaults()
	cfg.AckReqEvery = a.every
	mtu := pktzMTU(a.mtuCode)
	req := hca.NewRequester(&cfg, mtu, a.psn)
	req.Enqueue(a.wqe, 0)
	a.wires = a.wires[:0]
	for req.HasWork() {
		pkt := ib.Packet{SLID: a.slid, DLID: a.dlid, SL: a.sl, VL: a.vl, DestQP: a.dqpn}
		tx := req.Next(&pkt)
		if pkt.PayloadLen > 0 {
			addr := a.wqe.LocalAddr + uint64(tx.Index*mtu) - base // hca.Device.schedule's read
			pkt.Payload = host[addr : addr+uint64(pkt.PayloadLen)]
		}
		wire := ib.AppendWire(nil, &pkt)
		clear(wire[len(wire)-ib.ICRCBytes-ib.VCRCBytes:])
		beats := make([]byte, (len(wire)+BlockBytes-1)/BlockBytes*BlockBytes)
		copy(beats, wire)
		i := len(a.wires)
		if i >= len(a.pkts) || !bytes.Equal(beats[:a.pkts[i].hdrBytes], a.pkts[i].hdr[:a.pkts[i].hdrBytes]) {
			panic(fmt.Sprintf("rtl: packet %d of a %s: the model's header is not the packetizer's", i, a.wqe.Opcode))
		}
		a.wires = append(a.wires, beats)
	}
	if len(a.wires) != len(a.pkts) {
		panic(fmt.Sprintf("rtl: %d packets with payload, %d descriptors", len(a.wires), len(a.pkts)))
	}
}

// asmDirected are the messages every seed sends first: each SEND and
// WRITE variant of 0, 1 and 4096 bytes and of a length whose one packet
// ends at a beat's end, its VCRC alone in the next (-1), a READ and both atomics (their
// lengths newPktzMsg's).
var asmDirected = func() (ds []struct {
	op     hca.WROpcode
	length int
}) {
	for op := hca.WRRDMAWrite; op <= hca.WRSendImm; op++ {
		for _, n := range []int{0, 1, 4096, -1} {
			ds = append(ds, struct {
				op     hca.WROpcode
				length int
			}{op, n})
		}
	}
	for op := hca.WRRDMARead; op <= hca.WRFetchAdd; op++ {
		ds = append(ds, struct {
			op     hca.WROpcode
			length int
		}{op, 0})
	}
	return ds
}()

// newAsmMsg draws a message: a SEND or WRITE variant nine times in ten
// (lengths 0, 1..64, 1..4096, MTU - 1..MTU + 1, 2 or 3 MTUs and a few
// bytes, 4096), else a READ or an atomic (no payload); the path MTU any
// of 256..4096; the payload's first byte at byte start of its host block,
// the rest of the blocks random host bytes. directed, if not nil, is the
// opcode and length (asmDirected).
func newAsmMsg(r *rand.Rand, start int, directed *hca.WROpcode, directedLen int) *asmMsg {
	op := hca.WROpcode(r.IntN(int(hca.WRSendImm) + 1))
	if r.IntN(10) == 0 {
		op = hca.WRRDMARead + hca.WROpcode(r.IntN(3))
	}
	if directed != nil {
		op = *directed
	}
	code := 1 + r.IntN(5)
	mtu := pktzMTU(code)
	a := &asmMsg{pktzMsg: newPktzMsg(r, op, code, "0"), start: start}
	if op <= hca.WRSendImm {
		var length int
		switch k := r.IntN(20); {
		case directed != nil && directedLen >= 0:
			length = directedLen
		case directed != nil:
			// One packet of H + P + PadCnt + ICRC 4 = 64 or 128 bytes:
			// P + PadCnt = 60 - H or 124 - H, H the ONLY packet's header.
			a.wqe.Length = 1
			pktzModel(&a.pktzMsg)
			length = 60 + 64*r.IntN(2) - a.pkts[0].hdrBytes - r.IntN(4)
		case k == 0:
			length = 0
		case k < 5:
			length = 1 + r.IntN(64)
		case k < 12:
			length = 1 + r.IntN(4096)
		case k < 15:
			length = mtu - 1 + r.IntN(3)
		case k < 19:
			length = (2+r.IntN(2))*mtu - 3 + r.IntN(7)
		default:
			length = 4096
		}
		a.wqe.Length = uint32(length)
		pktzModel(&a.pktzMsg)
	}
	// Host memory: the payload's blocks, random; LocalAddr anywhere with
	// its low 6 bits start (the top of the space now and then).
	base := r.Uint64() &^ 63
	if r.IntN(8) == 0 {
		base = -uint64(BlockBytes * (1 + r.IntN(4)))
	}
	n := 0
	if op <= hca.WRSendImm && a.wqe.Length > 0 {
		n = (start + int(a.wqe.Length) + BlockBytes - 1) / BlockBytes
	}
	host := make([]byte, max(n, 1)*BlockBytes)
	for i := range host {
		host[i] = byte(r.Uint32())
	}
	a.wqe.LocalAddr = base + uint64(start)
	for i := range n {
		a.blocks = append(a.blocks, host[i*BlockBytes:(i+1)*BlockBytes])
	}
	asmModel(a, host, base)
	return a
}

// asmDUT offers packet descriptors (the packetizer's, valid/ready) and the
// messages' payload blocks (valid/ready, gaps in phases) to
// hca_tx_assemble and expects each packet's beats, in order, with
// out_ready stalling in phases. Its timing is the block's (the file's
// header): a packet is taken with its beat 0; a window of two blocks; a
// beat goes when the window holds the blocks its payload bytes lie in and
// the output register is free; after
// it the window drops the blocks before the next beat's first payload
// byte (after the packet's last beat, all its blocks but one shared with
// the next packet of its message). Blocks are numbered over the whole
// stream.
type asmDUT struct {
	msgs   []*asmMsg
	starts []int // payload start offsets still to use (a permutation of 0..63, refilled)
	blocks int   // blocks of the stream drawn so far

	pm, pp    int  // the next descriptor: message, packet
	pktHeld   bool // offered last cycle and not taken
	bm, bb    int  // the next block: message, block
	blockHeld bool

	busy     bool // beats 1.. of cur's packet under way
	cur      *asmMsg
	pkt      int // its packet
	beat     int // the next beat
	s        int // the stream byte of the packet's first payload byte
	recv     int // blocks taken into the window
	dropped  int // blocks dropped from it
	outValid bool
	out      []byte
	sop, eop bool

	c                  int
	pPkt, pPay, pReady float64
	taken              []*asmMsg    // messages whose last packet was sent
	pktsOut            []asmPktStat // packets sent
	stalled            int          // cycles a beat waited for out_ready
	waitedForStream    int          // cycles a beat waited for its blocks
	twoBlocks          int          // beats whose payload lies in two blocks
	backToBackInMsg    int          // packets whose beat 0 went the cycle after their message's previous packet's last
	finalAt            int          // the cycle of the last packet's last beat
	finalMsg           *asmMsg      // its message
	full               bool         // this phase: every input valid, out_ready 1
	fullBeats          int          // beats sent in such phases
	fullGapsInMsg      int          // cycles in them without a beat between two beats of a message
	fullGapsAtMsg      int          // cycles in them without a beat before a message's first beat
}

// asmPktStat is what TestAsmStimulusCovers counts of a packet sent.
type asmPktStat struct {
	op       ib.Opcode
	h, p     int
	pos      int // its payload's byte in its first block
	pad      int
	beats    int
	shared   bool // its last block went on to the next packet
	vcrcBeat bool // the VCRC alone at the start of its beat (4 PktLen mod 64 = 0)
}

func newAsmDUT() *asmDUT { return &asmDUT{} }

func (d *asmDUT) module() string  { return "hca_tx_assemble" }
func (d *asmDUT) files() []string { return []string{"hca_tx_assemble.v"} }
func (d *asmDUT) params() []Param { return nil }
func (d *asmDUT) cycles() int     { return asmCycles }
func (d *asmDUT) inputs() []Signal {
	return []Signal{
		{Name: "pkt_valid", Width: 1}, {Name: "pkt_hdr", Width: 512}, {Name: "pkt_hdr_bytes", Width: 6},
		{Name: "pkt_pay_len", Width: 13}, {Name: "pkt_pay_off", Width: 32}, {Name: "pkt_last", Width: 1},
		{Name: "pay_valid", Width: 1}, {Name: "pay_data", Width: 512}, {Name: "pay_start", Width: 6},
		{Name: "out_ready", Width: 1},
	}
}
func (d *asmDUT) outputs() []Signal {
	return []Signal{
		{Name: "pkt_ready", Width: 1}, {Name: "pay_ready", Width: 1}, {Name: "out_valid", Width: 1},
		{Name: "out_data", Width: 512, ValidWhen: "out_valid"},
		{Name: "out_sop", Width: 1, ValidWhen: "out_valid"}, {Name: "out_eop", Width: 1, ValidWhen: "out_valid"},
	}
}

// draw appends a message, its blocks numbered after the stream's so far.
func (d *asmDUT) draw(r *rand.Rand) {
	if len(d.starts) == 0 {
		d.starts = r.Perm(BlockBytes)
	}
	var a *asmMsg
	if i := len(d.msgs); i < len(asmDirected) {
		a = newAsmMsg(r, d.starts[0], &asmDirected[i].op, asmDirected[i].length)
	} else {
		a = newAsmMsg(r, d.starts[0], nil, 0)
	}
	if len(a.blocks) > 0 {
		d.starts = d.starts[1:]
	}
	a.first = d.blocks
	d.blocks += len(a.blocks)
	d.msgs = append(d.msgs, a)
}

// window returns, for beat b of the current packet, the stream blocks its
// payload bytes lie in (ok false: none), and the blocks dropped after it.
func (d *asmDUT) window(b int) (lo, hi int, ok bool, dropTo int) {
	p := &d.cur.pkts[d.pkt]
	h, n := p.hdrBytes, p.payLen
	from, to := max(BlockBytes*b, h), min(BlockBytes*(b+1), h+n) // packet bytes of payload in the beat
	if ok = from < to; ok {
		lo, hi = (d.s+from-h)/BlockBytes, (d.s+to-1-h)/BlockBytes
	}
	if n == 0 {
		return lo, hi, ok, d.dropped
	}
	end := d.s + n
	limit := (end + BlockBytes - 1) / BlockBytes
	if !p.last && end%BlockBytes != 0 {
		limit = end / BlockBytes // the next packet of the message starts in it
	}
	if BlockBytes*(b+1) >= len(d.cur.wires[d.pkt]) { // the packet's last beat
		return lo, hi, ok, max(d.dropped, limit)
	}
	return lo, hi, ok, max(d.dropped, min((d.s+BlockBytes*(b+1)-h)/BlockBytes, limit))
}

func (d *asmDUT) cycle(r *rand.Rand, in, out []Value) {
	pPkt := max(phaseProb(r, d.c, &d.pPkt), 0.3)
	pPay := max(phaseProb(r, d.c, &d.pPay), 0.5)
	pReady := max(phaseProb(r, d.c, &d.pReady), 0.4)
	if d.c%256 == 0 {
		d.full = r.IntN(4) == 0
	}
	if d.full {
		// Every input valid, out_ready 1: the block's own rate.
		pPkt, pPay, pReady = 1, 1, 1
	}
	d.c++
	ready := r.Float64() < pReady
	for len(d.msgs)-d.pm < 3 || len(d.msgs)-d.bm < 3 {
		d.draw(r)
	}
	// The next block: skip messages without payload.
	for len(d.msgs[d.bm].blocks) == d.bb {
		d.bm, d.bb = d.bm+1, 0
		for len(d.msgs)-d.bm < 3 {
			d.draw(r)
		}
	}

	// Inputs: anything on the wires that are not valid.
	pktValid := d.pktHeld || r.Float64() < pPkt
	desc := &d.msgs[d.pm].pkts[d.pp]
	in[0] = b2v(pktValid)
	if pktValid {
		in[1], in[2], in[3] = bytesValue(desc.hdr), U(uint64(desc.hdrBytes)), U(uint64(desc.payLen))
		in[4], in[5] = U(uint64(desc.payOff)), b2v(desc.last)
	} else {
		junk := make([]byte, BlockBytes)
		for i := range junk {
			junk[i] = byte(r.Uint32())
		}
		in[1], in[2], in[3] = bytesValue(junk), U(uint64(r.IntN(64))), U(uint64(r.IntN(1<<13)))
		in[4], in[5] = U(uint64(r.Uint32())), b2v(r.IntN(2) == 0)
	}
	payValid := d.blockHeld || r.Float64() < pPay
	bm := d.msgs[d.bm]
	in[6] = b2v(payValid)
	if payValid {
		in[7] = bytesValue(bm.blocks[d.bb])
		start := r.IntN(BlockBytes) // ignored but with a message's first block
		if d.bb == 0 {
			start = bm.start
		}
		in[8] = U(uint64(start))
	} else {
		junk := make([]byte, BlockBytes)
		for i := range junk {
			junk[i] = byte(r.Uint32())
		}
		in[7], in[8] = bytesValue(junk), U(uint64(r.IntN(BlockBytes)))
	}
	in[9] = b2v(ready)

	// Outputs, from the state at the start of the cycle. The packet is the
	// one whose beats 1.. are under way or, with none, the one offered: it
	// is taken with its beat 0.
	if !d.busy && pktValid {
		m := d.msgs[d.pm]
		d.cur, d.pkt, d.beat = m, d.pp, 0
		d.s = BlockBytes*m.first + m.start + m.pkts[d.pp].payOff
	}
	emit, final, dropTo := false, false, d.dropped
	if d.busy || pktValid {
		lo, hi, need, to := d.window(d.beat)
		if need && lo < d.dropped {
			panic(fmt.Sprintf("rtl: asm model: beat %d needs block %d, dropped through %d", d.beat, lo, d.dropped))
		}
		have := !need || d.recv > hi
		if !have && (!d.outValid || ready) {
			d.waitedForStream++
		}
		emit = have && (!d.outValid || ready)
		final = BlockBytes*(d.beat+1) >= len(d.cur.wires[d.pkt])
		if d.full && d.c%256 > 4 && !emit { // the window refilled from the phase before
			if d.beat > 0 || d.pkt > 0 {
				d.fullGapsInMsg++
			} else {
				d.fullGapsAtMsg++
			}
		}
		if emit {
			dropTo = to
			if need && hi > lo {
				d.twoBlocks++
			}
		}
	}
	pktReady := !d.busy && emit
	payReady := d.recv-dropTo < 2
	out[0], out[1], out[2] = b2v(pktReady), b2v(payReady), b2v(d.outValid)
	out[3], out[4], out[5] = U(0), U(0), U(0)
	if d.outValid {
		out[3], out[4], out[5] = bytesValue(d.out), b2v(d.sop), b2v(d.eop)
	}

	// The edge.
	if d.outValid && !ready {
		d.stalled++
	}
	switch {
	case emit:
		if d.full {
			d.fullBeats++
		}
		w := d.cur.wires[d.pkt]
		d.outValid, d.out = true, w[BlockBytes*d.beat:BlockBytes*(d.beat+1)]
		d.sop, d.eop = d.beat == 0, final
		if !d.busy { // taken
			if d.c == d.finalAt+1 && d.cur == d.finalMsg {
				d.backToBackInMsg++
			}
			if d.pp++; d.pp == len(d.msgs[d.pm].pkts) {
				d.pm, d.pp = d.pm+1, 0
			}
		}
		d.beat++
		d.busy = !final
		d.dropped = dropTo
		if final {
			d.finalAt, d.finalMsg = d.c, d.cur
			p := &d.cur.pkts[d.pkt]
			end := d.s + p.payLen
			d.pktsOut = append(d.pktsOut, asmPktStat{op: p.op, h: p.hdrBytes, p: p.payLen, pos: d.s % BlockBytes, pad: p.padCnt,
				beats: len(w) / BlockBytes, shared: p.payLen > 0 && !p.last && end%BlockBytes != 0,
				vcrcBeat: (p.hdrBytes+p.payLen+p.padCnt+ib.ICRCBytes)%BlockBytes == 0})
			if p.last {
				d.taken = append(d.taken, d.cur)
			}
		}
	case ready:
		d.outValid = false
	}
	d.pktHeld = pktValid && !pktReady
	d.blockHeld = payValid && !payReady
	if payValid && payReady {
		d.recv++
		d.bb++
	}
}

// TestAsmStimulusCovers: per seed, the packets sent had every request
// opcode, every header length with a payload (20 SEND and the MIDDLE and
// LAST packets, 24 with an immediate, 36 WRITE FIRST/ONLY, 40 WRITE ONLY
// with immediate) and the payload-less ones (READ 36, atomics 48), every
// PadCnt, payloads starting before and after the header's end within
// their beat, 40 start offsets, lengths 0, 1 and 4096, packets that hand
// their last block on, beats over two blocks, both kinds of
// back-pressure and packets following each other without a gap, and at
// full rate (every input valid, out_ready 1) a beat every cycle inside a
// message (from a phase's fifth cycle: the window refills from the
// phase before); over the
// five seeds, every start offset 0..63, payloads starting at the header's
// end (shift 0), the VCRC alone in its beat and messages of three packets
// or more at every MTU.
func TestAsmStimulusCovers(t *testing.T) {
	atH, vcrc := 0, 0
	mtus, allStarts := map[int]bool{}, map[int]bool{}
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := newAsmDUT()
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		for range asmCycles {
			d.cycle(r, in, out)
		}
		name := fmt.Sprintf("seed %d", seed)
		require.GreaterOrEqual(t, len(d.taken), 50, "%s: messages sent", name)
		ops, pads, hs, starts := map[ib.Opcode]bool{}, map[int]bool{}, map[int]int{}, map[int]bool{}
		before, after, shared := 0, 0, 0
		for _, p := range d.pktsOut {
			ops[p.op] = true
			if p.p > 0 {
				pads[p.pad] = true
				hs[p.h]++
				switch {
				case p.pos < p.h:
					before++
				case p.pos > p.h:
					after++
				default:
					atH++
				}
			} else {
				hs[-p.h]++
			}
			if p.shared {
				shared++
			}
			if p.vcrcBeat {
				vcrc++
			}
		}
		lens := map[uint32]bool{}
		for _, m := range d.taken {
			if len(m.blocks) > 0 {
				starts[m.start], allStarts[m.start] = true, true
			}
			if m.wqe.Opcode <= hca.WRSendImm {
				lens[m.wqe.Length] = true
				if len(m.pkts) >= 3 {
					mtus[m.mtuCode] = true
				}
			}
		}
		assert.Len(t, ops, 15, "%s: request opcodes sent", name)
		assert.Len(t, pads, 4, "%s: PadCnt values with a payload", name)
		for _, h := range []int{20, 24, 36, 40, -36, -48} {
			assert.Positive(t, hs[h], "%s: packets with %d header bytes (negative: no payload)", name, h)
		}
		assert.GreaterOrEqual(t, len(starts), 40, "%s: payload start offsets", name)
		assert.True(t, lens[0] && lens[1] && lens[4096], "%s: SEND or WRITE of 0, 1 and 4096 bytes", name)
		assert.GreaterOrEqual(t, before, 30, "%s: payloads starting before the header's end in the beat", name)
		assert.GreaterOrEqual(t, after, 50, "%s: payloads starting after it (two blocks for beat 0)", name)
		assert.GreaterOrEqual(t, shared, 50, "%s: packets handing their last block to the next", name)
		assert.GreaterOrEqual(t, d.twoBlocks, 1000, "%s: beats over two blocks", name)
		assert.GreaterOrEqual(t, d.stalled, 500, "%s: beats held by out_ready", name)
		assert.GreaterOrEqual(t, d.waitedForStream, 200, "%s: cycles a beat waited for the payload stream", name)
		assert.GreaterOrEqual(t, d.backToBackInMsg, 50, "%s: packets whose beat 0 followed the last beat of their message's previous one", name)
		// At full rate (every input valid, out_ready 1) the window keeps
		// up inside a message: a beat every cycle from a phase's fifth.
		assert.GreaterOrEqual(t, d.fullBeats, 300, "%s: beats at full rate", name)
		assert.Zero(t, d.fullGapsInMsg, "%s: cycles without a beat inside a message at full rate", name)
	}
	assert.GreaterOrEqual(t, atH, 3, "payloads starting at the header's end (shift 0)")
	assert.GreaterOrEqual(t, vcrc, 20, "packets whose VCRC starts a beat")
	assert.Len(t, allStarts, BlockBytes, "payload start offsets")
	assert.Len(t, mtus, 5, "MTUs with messages of three packets or more")
}

// TestAsmMutantsFail: each slip of the assembly fails the co-simulation.
func TestAsmMutantsFail(t *testing.T) {
	runMutants(t, func() cosimDUT { return newAsmDUT() }, []cosimMutant{
		{"the shift one byte long", "hca_tx_assemble.v",
			"wire [1023:0] sh0 = {q0, hi_blk};", "wire [1023:0] sh0 = {8'd0, q0, hi_blk[511:8]};"},
		{"the pad bytes not zeroed", "hca_tx_assemble.v",
			"wire [12:0]   pay_end = {7'd0, st_h} + st_p;", "wire [12:0]   pay_end = {7'd0, st_h} + {pad4[12:2], 2'b00};"},
		{"the ICRC slot not zeroed", "hca_tx_assemble.v",
			"wire [12:0]   pay_end = {7'd0, st_h} + st_p;", "wire [12:0]   pay_end = {7'd0, st_h} + st_p + 13'd4;"},
		{"no beat for a VCRC that starts one", "hca_tx_assemble.v",
			"wire        final_beat = st_beat == tlen[12:6];", "wire        final_beat = st_beat == tlen[12:6] - {6'd0, tlen[5:0] == 6'd0};"},
		{"a packet's last block not handed to the next", "hca_tx_assemble.v",
			"wire        shared = !st_last &&", "wire        shared = 1'b0 &&"},
		{"a message's start taken from where the last ended", "hca_tx_assemble.v",
			"(st_beat == 7'd0 && msg_new) ? q0_start : st_pos", "st_pos"},
		{"a payload at the header's end taken as two blocks", "hca_tx_assemble.v",
			"wire        c    = pos > st_h;", "wire        c    = pos >= st_h;"},
		{"the header on every beat", "hca_tx_assemble.v",
			"(busy ? 512'd0 : pkt_hdr)", "pkt_hdr"},
		{"no block taken in the cycle one leaves", "hca_tx_assemble.v",
			"assign pay_ready = left != 2'd2;", "assign pay_ready = qn != 2'd2;"},
	})
}
