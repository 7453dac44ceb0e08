package rtl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_tx_packetizer <-> hca.Requester.Next, ib.AppendWire ----

// pktzPacket is one packet the model's requester sends for a message: its
// header bytes as ib.AppendWire writes them (LRH through the last
// extension header, zero padded to the 64-byte beat) and where its payload
// lies.
type pktzPacket struct {
	hdr      []byte // 64 bytes
	hdrBytes int
	payLen   int
	payOff   int
	last     bool
	op       ib.Opcode
	psn      uint32
	ackReq   bool
	padCnt   int
}

// pktzMsg is one message on msg_* and the packets the model sends for it.
type pktzMsg struct {
	wqe        hca.SendWQE
	dlid, slid uint16
	sl, vl     uint8
	dqpn, psn  uint32
	mtuCode    int // IBA path MTU code: 1 256 .. 5 4096
	every      int // hca.ack_req_every
	lenKind    string
	// skip: a go-back-N resend from packet skip (msg_skip): pkts are
	// the packets the model sends after a sequence error NAK at the
	// message's first PSN + skip.
	skip int
	pkts []pktzPacket
}

func pktzMTU(code int) int { return 128 << code }

// pktzModel fills m.pkts from the model: a requester of the message's QP
// (hca.NewRequester at the path MTU and first PSN, AckReqEvery from the
// config) given the WQE (Requester.Enqueue), each packet's addressing as
// hca.Device.address sets it on a request packet, its transport headers
// from Requester.Next (the call the device's scheduler makes per packet),
// its bytes from ib.AppendWire. The payload offset is the scheduler's:
// packet index x MTU. With m.skip > 0 every packet is sent first, then a
// sequence error NAK at PSN first + skip (Requester.OnAck: the go-back-N
// rewind, hca.Requester.rewind) and m.pkts are the packets Next sends
// after it: the resend, from packet skip. It panics if the packet count
// is not hca.PacketCount's (one for a READ or an atomic) less skip.
func pktzModel(m *pktzMsg) {
	cfg := hca.Defaults()
	cfg.AckReqEvery = m.every
	mtu := pktzMTU(m.mtuCode)
	req := hca.NewRequester(&cfg, mtu, m.psn)
	req.Enqueue(m.wqe, 0)
	m.pkts = m.pkts[:0]
	if m.skip > 0 {
		for req.HasWork() {
			req.Next(&ib.Packet{})
		}
		if res := req.OnAck((m.psn+uint32(m.skip))&0xFFFFFF, hca.SynNAKSeq); !res.Rewound {
			panic("rtl: pktzModel: the sequence error NAK did not rewind the requester")
		}
	}
	for req.HasWork() {
		pkt := ib.Packet{SLID: m.slid, DLID: m.dlid, SL: m.sl, VL: m.vl, DestQP: m.dqpn}
		tx := req.Next(&pkt)
		wire := ib.AppendWire(nil, &pkt)
		n := pkt.HeaderBytes() - ib.ICRCBytes - ib.VCRCBytes
		hdr := make([]byte, BlockBytes)
		copy(hdr, wire[:n])
		m.pkts = append(m.pkts, pktzPacket{hdr: hdr, hdrBytes: n, payLen: pkt.PayloadLen, payOff: tx.Index * mtu,
			op: pkt.Opcode, psn: pkt.PSN, ackReq: pkt.AckReq, padCnt: pkt.PadCnt()})
	}
	m.pkts[len(m.pkts)-1].last = true
	want := 1
	if m.wqe.Opcode <= hca.WRSendImm {
		want = hca.PacketCount(m.wqe.Length, mtu)
	}
	if len(m.pkts) != want-m.skip {
		panic(fmt.Sprintf("rtl: the requester sent %d packets of a %s of %d bytes at MTU %d from packet %d, PacketCount says %d",
			len(m.pkts), m.wqe.Opcode, m.wqe.Length, mtu, m.skip, want))
	}
}

// pktzEvery are the AckReq intervals drawn: every packet, small ones that
// fall inside the messages drawn, the default and the largest.
var pktzEvery = []int{1, 2, 3, 4, 5, 64, 1 << 16}

// newPktzMsg draws a message of WR opcode op (hca.WROpcode 0..6) at path
// MTU code mtuCode, of length kind lenKind ("" = drawn): its fields random,
// its first PSN near the 2^24 wrap a quarter of the time.
func newPktzMsg(r *rand.Rand, op hca.WROpcode, mtuCode int, lenKind string) pktzMsg {
	mtu := pktzMTU(mtuCode)
	if lenKind == "" {
		lenKind = []string{"0", "1", "mtu-1", "mtu", "mtu+1", "2mtu", "many", "many", "many", "rand", "rand"}[r.IntN(11)]
	}
	var length int
	switch lenKind {
	case "0":
		length = 0
	case "1":
		length = 1
	case "mtu-1":
		length = mtu - 1
	case "mtu":
		length = mtu
	case "mtu+1":
		length = mtu + 1
	case "2mtu":
		length = 2*mtu - r.IntN(4) // two packets, the last with every pad
	case "many":
		length = (3+r.IntN(10))*mtu + r.IntN(3) - 1
	case "rand":
		length = r.IntN(8 * mtu)
	}
	if op >= hca.WRRDMARead && r.IntN(4) == 0 {
		// One packet whatever the length: up to IBA's 2^31.
		length = r.IntN(1<<31 + 1)
		lenKind = "huge"
	}
	psn := r.Uint32() & 0xFFFFFF
	if r.IntN(4) == 0 {
		psn = 0xFFFFFF - uint32(r.IntN(6))
	}
	m := pktzMsg{
		wqe: hca.SendWQE{Opcode: op, Length: uint32(length), RemoteAddr: r.Uint64(), RKey: r.Uint32(), Imm: r.Uint32(),
			SwapAdd: r.Uint64(), Compare: r.Uint64()},
		dlid: uint16(r.Uint32()), slid: uint16(r.Uint32()), sl: uint8(r.IntN(16)), vl: uint8(r.IntN(15)),
		dqpn: r.Uint32() & 0xFFFFFF, psn: psn, mtuCode: mtuCode, every: pktzEvery[r.IntN(len(pktzEvery))],
		lenKind: lenKind,
	}
	pktzModel(&m)
	if n := len(m.pkts); op <= hca.WRSendImm && (lenKind == "many" || lenKind == "rand") && n >= 2 && m.wqe.Imm%4 == 0 {
		// A quarter of them resent from a packet past the first (drawn
		// from fields already drawn, so the seeds' other draws stay).
		m.skip = 1 + int(m.wqe.RKey%uint32(n-1))
		pktzModel(&m)
	}
	return m
}

// pktzDirected are the messages every seed sends first: each SEND and
// WRITE variant at each length edge (0, 1, MTU-1, MTU, MTU+1, two
// packets) at a random MTU, each at every MTU with many packets, the READ
// and the atomics; the PSN starts just below the wrap for half of them and
// AckReq comes every 2 or 3 packets for a third.
func pktzDirected(r *rand.Rand) []pktzMsg {
	var ms []pktzMsg
	add := func(op hca.WROpcode, code int, kind string) {
		m := newPktzMsg(r, op, code, kind)
		if r.IntN(2) == 0 {
			m.psn = 0xFFFFFF - uint32(r.IntN(3))
		}
		if r.IntN(3) == 0 {
			m.every = 2 + r.IntN(2)
		}
		pktzModel(&m)
		ms = append(ms, m)
	}
	for op := hca.WRRDMAWrite; op <= hca.WRSendImm; op++ {
		for _, kind := range []string{"0", "1", "mtu-1", "mtu", "mtu+1", "2mtu"} {
			add(op, 1+r.IntN(5), kind)
		}
		for code := 1; code <= 5; code++ {
			add(op, code, "many")
		}
	}
	for op := hca.WRRDMARead; op <= hca.WRFetchAdd; op++ {
		add(op, 1+r.IntN(5), "")
	}
	return ms
}

// pktzDUT offers messages (pktzDirected, then random ones of every WR
// opcode, MTU and length) to hca_tx_packetizer and expects, for each
// packet the model's requester sends, its header beat and payload length
// and offset on out_*, in order, under an out_ready that stalls in phases;
// the block's timing is its header's (a packet moves into the output
// register when it is empty or taken; msg_ready also in the cycle the
// last packet of a message moves).
type pktzDUT struct {
	queue []pktzMsg // messages still to offer, the next first
	held  bool      // a message was offered last cycle and not taken

	busy     bool
	cur      pktzMsg
	skipLeft int // packets of cur still to step through unsent (msg_skip), one a cycle
	next     int // packets of cur moved into the output register
	outValid bool
	out      pktzPacket

	c            int
	pMsg, pReady float64
	sent         []pktzPacket // packets taken at out_*
	msgs         []pktzMsg    // messages taken
	stalled      int          // cycles a packet waited for out_ready
	backToBack   int          // messages taken in the cycle the previous one's last packet moved
}

func newPktzDUT(r *rand.Rand) *pktzDUT { return &pktzDUT{queue: pktzDirected(r)} }

func (d *pktzDUT) module() string  { return "hca_tx_packetizer" }
func (d *pktzDUT) files() []string { return []string{"hca_tx_packetizer.v"} }
func (d *pktzDUT) params() []Param { return nil }
func (d *pktzDUT) inputs() []Signal {
	return []Signal{
		{Name: "msg_valid", Width: 1}, {Name: "msg_opcode", Width: 3}, {Name: "msg_length", Width: 32},
		{Name: "msg_raddr", Width: 64}, {Name: "msg_rkey", Width: 32}, {Name: "msg_imm", Width: 32},
		{Name: "msg_swap_add", Width: 64}, {Name: "msg_compare", Width: 64},
		{Name: "msg_dlid", Width: 16}, {Name: "msg_slid", Width: 16}, {Name: "msg_sl", Width: 4}, {Name: "msg_vl", Width: 4},
		{Name: "msg_dest_qpn", Width: 24}, {Name: "msg_psn", Width: 24}, {Name: "msg_mtu", Width: 3},
		{Name: "msg_ack_every", Width: 17}, {Name: "msg_skip", Width: 24}, {Name: "out_ready", Width: 1},
	}
}
func (d *pktzDUT) outputs() []Signal {
	return []Signal{
		{Name: "msg_ready", Width: 1}, {Name: "out_valid", Width: 1},
		{Name: "out_hdr", Width: 512, ValidWhen: "out_valid"}, {Name: "out_hdr_bytes", Width: 6, ValidWhen: "out_valid"},
		{Name: "out_pay_len", Width: 13, ValidWhen: "out_valid"}, {Name: "out_pay_off", Width: 32, ValidWhen: "out_valid"},
		{Name: "out_last", Width: 1, ValidWhen: "out_valid"},
	}
}

// randomPktzMsg draws any WR opcode at any MTU.
func randomPktzMsg(r *rand.Rand) pktzMsg {
	return newPktzMsg(r, hca.WROpcode(r.IntN(int(hca.WRFetchAdd)+1)), 1+r.IntN(5), "")
}

func (d *pktzDUT) cycle(r *rand.Rand, in, out []Value) {
	pMsg := phaseProb(r, d.c, &d.pMsg)
	pReady := max(phaseProb(r, d.c, &d.pReady), 0.2)
	d.c++
	ready := r.Float64() < pReady
	if len(d.queue) == 0 {
		d.queue = append(d.queue, randomPktzMsg(r))
	}
	valid := d.held || r.Float64() < pMsg // an offered message stays until taken
	m := &d.queue[0]
	if valid {
		w := &m.wqe
		in[0], in[1], in[2] = U(1), U(uint64(w.Opcode)), U(uint64(w.Length))
		in[3], in[4], in[5], in[6], in[7] = U(w.RemoteAddr), U(uint64(w.RKey)), U(uint64(w.Imm)), U(w.SwapAdd), U(w.Compare)
		in[8], in[9], in[10], in[11] = U(uint64(m.dlid)), U(uint64(m.slid)), U(uint64(m.sl)), U(uint64(m.vl))
		in[12], in[13], in[14], in[15] = U(uint64(m.dqpn)), U(uint64(m.psn)), U(uint64(m.mtuCode)), U(uint64(m.every))
		in[16] = U(uint64(m.skip))
	} else {
		// Not valid: anything on the wires, which the block must ignore.
		in[0], in[1], in[2] = U(0), U(uint64(r.IntN(8))), U(uint64(r.Uint32()))
		in[3], in[4], in[5], in[6], in[7] = U(r.Uint64()), U(uint64(r.Uint32())), U(uint64(r.Uint32())), U(r.Uint64()), U(r.Uint64())
		in[8], in[9], in[10], in[11] = U(uint64(r.Uint32()&0xFFFF)), U(uint64(r.Uint32()&0xFFFF)), U(uint64(r.IntN(16))), U(uint64(r.IntN(16)))
		in[12], in[13], in[14], in[15] = U(uint64(r.Uint32()&0xFFFFFF)), U(uint64(r.Uint32()&0xFFFFFF)), U(uint64(r.IntN(8))), U(uint64(r.IntN(1<<17)))
		in[16] = U(uint64(r.Uint32() & 0xFFFFFF))
	}
	in[17] = b2v(ready)

	// Outputs, from the state at the start of the cycle.
	load := d.busy && d.skipLeft == 0 && (!d.outValid || ready)
	lastMoves := load && d.cur.pkts[d.next].last
	msgReady := !d.busy || lastMoves
	out[0], out[1] = b2v(msgReady), b2v(d.outValid)
	for i := 2; i < 7; i++ {
		out[i] = U(0)
	}
	if d.outValid {
		p := &d.out
		out[2], out[3], out[4] = bytesValue(p.hdr), U(uint64(p.hdrBytes)), U(uint64(p.payLen))
		out[5], out[6] = U(uint64(p.payOff)), b2v(p.last)
	}

	// The edge.
	if d.outValid && !ready {
		d.stalled++
	}
	if d.outValid && ready {
		d.sent = append(d.sent, d.out)
	}
	if d.busy && d.skipLeft > 0 {
		d.skipLeft--
	}
	switch {
	case load:
		d.outValid, d.out = true, d.cur.pkts[d.next]
		d.next++
		d.busy = d.next < len(d.cur.pkts)
	case ready:
		d.outValid = false
	}
	d.held = valid && !msgReady
	if valid && msgReady {
		if lastMoves {
			d.backToBack++
		}
		d.busy, d.cur, d.next, d.skipLeft = true, *m, 0, m.skip
		d.msgs = append(d.msgs, *m)
		d.queue = d.queue[1:]
	}
}

// TestPktzStimulusCovers: per seed, the packets taken at out_* had every
// request opcode the requester sends (SEND and RDMA WRITE FIRST, MIDDLE,
// LAST, ONLY and the _WITH_IMMEDIATE ones, READ request, both atomics),
// every path MTU on a message of several packets, every length edge for
// each SEND and WRITE variant, two-packet messages of each, a PSN wrap
// inside a message, AckReq on a packet before the last (the every-N
// rule), every PadCnt, a 2^31-byte READ, and back-pressure and
// back-to-back messages.
func TestPktzStimulusCovers(t *testing.T) {
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := newPktzDUT(r)
		directed := len(d.queue)
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		for range cosimCycles {
			d.cycle(r, in, out)
		}
		name := fmt.Sprintf("seed %d", seed)
		require.Greater(t, len(d.msgs), directed+50, "%s: messages taken", name)
		ops, pads := map[ib.Opcode]bool{}, map[int]bool{}
		midAck := 0
		var prev *pktzPacket
		wraps := 0
		for i := range d.sent {
			p := &d.sent[i]
			ops[p.op], pads[p.padCnt] = true, true
			if p.ackReq && !p.last {
				midAck++
			}
			if prev != nil && !prev.last && prev.psn == 0xFFFFFF && p.psn == 0 {
				wraps++
			}
			prev = p
		}
		assert.Len(t, ops, 15, "%s: request opcodes sent", name)
		assert.Len(t, pads, 4, "%s: PadCnt values", name)
		assert.GreaterOrEqual(t, wraps, 5, "%s: PSN wraps inside a message", name)
		assert.GreaterOrEqual(t, midAck, 20, "%s: AckReq before the last packet", name)
		mtus, edges := map[int]bool{}, map[string]bool{}
		huge, resends := 0, 0
		for _, m := range d.msgs {
			if m.skip > 0 {
				// A resend starts inside the message: MIDDLE or LAST,
				// no RETH (pktzModel's packets, which the block must send).
				resends++
				require.NotContains(t, []ib.Opcode{ib.SendFirst, ib.SendOnly, ib.SendOnlyImm, ib.RDMAWriteFirst, ib.RDMAWriteOnly,
					ib.RDMAWriteOnlyImm}, m.pkts[0].op, "%s: a resend's first packet", name)
			}
			if len(m.pkts) > 2 {
				mtus[m.mtuCode] = true
			}
			if m.wqe.Opcode <= hca.WRSendImm {
				edges[fmt.Sprintf("%d %s", m.wqe.Opcode, m.lenKind)] = true
				if len(m.pkts) == 2 {
					edges[fmt.Sprintf("%d two", m.wqe.Opcode)] = true
				}
			}
			if m.lenKind == "huge" && m.wqe.Length >= 1<<30 {
				huge++
			}
		}
		assert.Len(t, mtus, 5, "%s: MTUs with many packets", name)
		for op := hca.WRRDMAWrite; op <= hca.WRSendImm; op++ {
			for _, k := range []string{"0", "1", "mtu-1", "mtu", "mtu+1", "two"} {
				assert.True(t, edges[fmt.Sprintf("%d %s", op, k)], "%s: %s of length %s", name, op, k)
			}
		}
		assert.Positive(t, huge, "%s: READ or atomic of 2^30 bytes or more", name)
		assert.GreaterOrEqual(t, resends, 5, "%s: go-back-N resends from a packet past the first (msg_skip)", name)
		assert.GreaterOrEqual(t, d.stalled, 100, "%s: packets held by out_ready", name)
		assert.GreaterOrEqual(t, d.backToBack, 20, "%s: messages taken as the last packet moved", name)
	}
}

// TestPktzMutantsFail: each slip of the requester's packet rules fails the
// co-simulation.
//
// 1000 cycles of the 3000: each mutant first mismatched by cycle 132
// (Icarus, 2026-12-02).
func TestPktzMutantsFail(t *testing.T) {
	runMutantsFor(t, 1000, func() cosimDUT { return newPktzDUT(rand.New(rand.NewPCG(cosimSeeds[0], 0x7e57))) }, []cosimMutant{
		{"the PSN held at 2^24 - 1 instead of wrapping", "hca_tx_packetizer.v",
			"st_psn        <= st_psn + 24'd1;", "st_psn        <= (st_psn == 24'hFFFFFF) ? st_psn : st_psn + 24'd1;"},
		{"a RETH on every packet of a WRITE", "hca_tx_packetizer.v",
			"(is_write && st_first);", "is_write;"},
		{"the ImmDt on the first packet instead of the last", "hca_tx_packetizer.v",
			"wire has_imm    = is_imm && last;", "wire has_imm    = is_imm && st_first;"},
		{"PktLen without the ICRC", "hca_tx_packetizer.v",
			"wire [10:0] pktlen = 11'd6 +", "wire [10:0] pktlen = 11'd5 +"},
		{"PadCnt one more", "hca_tx_packetizer.v",
			"wire [1:0]  pad = 2'd0 - pay[1:0];", "wire [1:0]  pad = 2'd1 - pay[1:0];"},
		{"MIDDLE for the second packet of a two-packet message", "hca_tx_packetizer.v",
			"wire opc_last = last;", "wire opc_last = last && st_off != {19'd0, st_mtu};"},
		{"AckReq one packet late in the every-N rule", "hca_tx_packetizer.v",
			"wire ackreq = one_req || last || st_ack == st_every - 17'd1;", "wire ackreq = one_req || last || st_ack == st_every;"},
		{"no AckReq on a message's last packet", "hca_tx_packetizer.v",
			"wire ackreq = one_req || last ||", "wire ackreq = one_req ||"},
		{"a resend sent from the message's first packet (msg_skip ignored)", "hca_tx_packetizer.v",
			"wire skip = busy && st_skip != 24'd0;", "wire skip = 1'b0;"},
		{"a resend one packet short (the skip not ending at packet k)", "hca_tx_packetizer.v",
			"st_skip  <= msg_skip;", "st_skip  <= msg_skip + {23'd0, msg_skip != 24'd0};"},
		{"the payload offset not advanced", "hca_tx_packetizer.v",
			"st_off        <= st_off + {19'd0, st_mtu};", "st_off        <= st_off;"},
	})
}
