package rtl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_requester's inline WQEs <-> the model ----
//
// The emitted hca_transport (retryTransport, its MAX_INLINE set to
// inlineMax) in reqTB with +hostfn, on three contexts. Every WQE is
// hca.EncodeSendWQE's, its blocks offered on wqe_* before its header (as
// hca_wqe_fetch forks them to the parser and to hca_transport) and its
// decode (hca.DecodeSendWQE) on dec_*, its segments on dec_sge_*. The
// replay (retryCheck) is the model's hca.Requester with the payload
// hca.Device.schedule takes: an inline WQE's bytes copied from the WQE
// (sendMsg.inline[off:off+len]), no read; a gather list's from host memory.
// Every packet must be ib.AppendWire's of the model's, byte for byte, every
// completion the model's, and rd1 must read only the non-inline WQEs'
// blocks.

// inlineMax is the run's MAX_INLINE (hca.max_inline_bytes): the most
// inline bytes any WQE holds, an RC SEND's, so the run has WQEs whose
// inline data fills all 16 WQEBBs.
const inlineMax = hca.MaxInlineLimit

// inlineSizes are the run's inline lengths: empty; 1; either side of a
// 16-byte segment (15, 16, 17); 60 and 64 (the data from WQE byte 20 of a
// SEND or 36 of a WRITE ends in block 1: 20 + 60 = 80, 36 + 64 = 100);
// perftest's 200, write_lat's 220 and send_lat's 236 (hca.max_inline_bytes'
// default); the most a WRITE holds (hca.InlineLimit: 1008 − 16 − 16 − 4 =
// 972) and a SEND (inlineMax, 1008 − 16 − 4 = 988).
var inlineSizes = []int{0, 1, 15, 16, 17, 60, 64, 200, 220, 236, hca.MaxInlineLimit - 16, inlineMax}

// inlineSeeds are the co-simulation's seeds (the WQEs' order, contexts,
// opcodes and bytes, the stalls).
var inlineSeeds = []uint64{1, 2}

// inlinePlan is one seed's run and what the checks need besides.
type inlinePlan struct {
	*retryPlan
	reads  []payRead   // the first sends' reads, in order: the non-inline WQEs' (modelPayReads)
	dma    [][2]uint64 // every non-inline element's bytes [first, end): no read may fall outside
	big    *reqItem    // the 988-byte inline SEND on context 0
	bigPSN uint32      // and its first PSN
}

// complete adds the statuses of the completions that make a CQE (signaled,
// or an error: hca.RequesterCQE), what cpl_* gives.
func (p *inlinePlan) complete(q *retryQP, comps []hca.Completion) {
	for _, c := range comps {
		if _, ok := hca.RequesterCQE(q.item.qpn, c); ok {
			p.status = append(p.status, c.Status)
		}
	}
}

// newInlinePlan builds seed's run. Derivation (contexts 0 and 2 at MTU
// 256, context 1 at MTU 1024):
//
//	The WQEs: an inline WQE of each of inlineSizes, a random one of SEND,
//	SEND_IMM, WRITE, WRITE_IMM (a SEND for 988, more than a WRITE holds;
//	a WRITE for 972), three single-element SENDs or WRITEs read from the
//	host (1..1500 B at any lane) and three gather lists (2..4 elements),
//	in a random order. The 988-byte SEND is on context 0 (a SEND's data
//	from WQE byte 20, ctrl 16 + byte count 4, through byte 1007, the
//	63rd 16-byte segment's last: all 16 blocks; ceil(988 / 256) = 4
//	packets, 256, 256, 256 and 220 B), the 972-byte WRITE on context 2
//	(from byte 36 through 1007; 4 packets, the last 204 B); the rest on a random context, at most 7 a context
//	(OQ_DEPTH 8: no ACK comes before every WQE is sent).
//
// Once every packet has left: a sequence error NAK at the 988-byte
// SEND's packet 2 (first PSN + 2): the model completes what lies before
// it and resends from that packet (message byte 512, WQE byte 532: block 8
// from lane 20) and the context's later messages whole; on contexts 1 and
// 2 a sequence error NAK at the first PSN of the context's last inline
// message with a payload: it and what follows resent whole (its bytes
// again, from its ring entry's copy). Then an ACK at each context's last
// PSN completes the rest.
func newInlinePlan(seed uint64) *inlinePlan {
	r := rand.New(rand.NewPCG(seed, 0x1a11e))
	p := &inlinePlan{retryPlan: &retryPlan{run: &reqRun{}}}
	run := p.run
	cfgs := []*reqItem{
		{cfg: true, qix: 0, qpn: 0x5670, dlid: 0x31, slid: 0x41, sl: 2, vl: 1, rqpn: 0xB0000, psn: 0xFFFFFE, mtuCode: 1, cqn: 2},
		{cfg: true, qix: 1, qpn: 0x5671, dlid: 0x32, slid: 0x42, sl: 5, vl: 3, rqpn: 0xB0001, psn: 0x000200, mtuCode: 3, cqn: 3},
		{cfg: true, qix: 2, qpn: 0x5672, dlid: 0x33, slid: 0x43, sl: 0, vl: 0, rqpn: 0xB0002, psn: 0x7FFFF0, mtuCode: 1, cqn: 4},
	}
	qps := p.addQPs(cfgs)
	type spec struct {
		q      int
		inline int // -1: not inline
		list   bool
	}
	var specs []spec
	per := [3]int{}
	for _, n := range inlineSizes {
		switch n {
		case inlineMax:
			specs = append(specs, spec{q: 0, inline: n})
			per[0]++
		case hca.MaxInlineLimit - 16:
			specs = append(specs, spec{q: 2, inline: n})
			per[2]++
		default:
			specs = append(specs, spec{q: -1, inline: n})
		}
	}
	for i := range 6 {
		specs = append(specs, spec{q: -1, inline: -1, list: i >= 3})
	}
	for i := range specs {
		if specs[i].q >= 0 {
			continue
		}
		q := r.IntN(3)
		for per[q] >= 7 {
			q = (q + 1) % 3
		}
		specs[i].q = q
		per[q]++
	}
	perm := r.Perm(len(specs))
	index := uint16(0x100)
	for _, k := range perm {
		sp := specs[k]
		qp := qps[sp.q]
		ops := []hca.WROpcode{hca.WRSend, hca.WRSendImm, hca.WRRDMAWrite, hca.WRRDMAWriteImm}
		wr := hca.SendWR{Opcode: ops[r.IntN(4)], RemoteAddr: r.Uint64(), RKey: r.Uint32(), Imm: r.Uint32(), Signaled: r.IntN(4) != 0}
		var inl []byte
		switch {
		case sp.inline == inlineMax:
			wr.Opcode = hca.WRSend
		case sp.inline == hca.MaxInlineLimit-16:
			wr.Opcode = hca.WRRDMAWrite
		}
		switch {
		case sp.inline >= 0:
			wr.Inline, wr.Length = true, uint32(sp.inline)
			inl = make([]byte, sp.inline)
			for i := range inl {
				inl[i] = byte(r.Uint32())
			}
		case sp.list:
			wr.SGL = make([]hca.SGE, 2+r.IntN(3))
			for e := range wr.SGL {
				wr.SGL[e] = hca.SGE{Addr: 0x4000_0000 + r.Uint64()&0xFFF_FFFF, Length: uint32(r.IntN(700)), LKey: r.Uint32()}
			}
		default:
			wr.LocalAddr, wr.Length, wr.LKey = 0x4000_0000+r.Uint64()&0xFFF_FFFF, uint32(1+r.IntN(1500)), r.Uint32()
		}
		var buf [16 * hca.WQEBBBytes]byte
		n := hca.EncodeSendWQE(buf[:], &wr, index, qp.item.qpn, inl)
		index++
		w, err := hca.DecodeSendWQE(buf[:])
		if err != nil {
			panic(err)
		}
		it := &reqItem{qix: sp.q, qpn: qp.item.qpn, every: retryEvery, wqe: w, sent: true, inl: inl}
		for b := 0; b < n; b += hca.WQEBBBytes {
			it.bbs = append(it.bbs, buf[b:b+hca.WQEBBBytes])
		}
		run.items = append(run.items, it)
		p.complete(qp, qp.enqueueInline(w, inl))
		if w.InlineLen == inlineMax {
			p.big, p.bigPSN = it, qp.first[len(qp.first)-1]
		}
		for _, e := range it.elems() {
			if e.Length > 0 {
				p.dma = append(p.dma, [2]uint64{e.Addr, e.Addr + uint64(e.Length)})
			}
		}
		p.reads = append(p.reads, modelPayReads(w, pktzMTU(qp.item.mtuCode), 0)...)
	}
	p.drain(qps)
	// The NAKs: context 0 at the big SEND's packet 2, contexts 1 and 2 at
	// their last inline message with a payload.
	type nak struct {
		q   int
		psn uint32
	}
	var naks []nak
	for q, qp := range qps {
		for k := len(qp.wqes) - 1; k >= 0; k-- {
			w := qp.wqes[k]
			if q == 0 && w.InlineLen == inlineMax {
				naks = append(naks, nak{q, (qp.first[k] + 2) & 0xFFFFFF})
				break
			}
			if q > 0 && w.Inline && w.Length > 0 {
				naks = append(naks, nak{q, qp.first[k]})
				break
			}
		}
	}
	ack := func(q int, psn uint32, syn uint8) {
		run.acks = append(run.acks, reqAck{gate: len(run.wires), qpn: qps[q].item.qpn, psn: psn, syn: syn, msn: 1})
		p.complete(qps[q], qps[q].req.OnAck(psn, syn).Completions)
		p.drain(qps)
	}
	for _, k := range naks {
		ack(k.q, k.psn, hca.SynNAKSeq)
	}
	for q, qp := range qps {
		ack(q, (qp.next-1)&0xFFFFFF, hca.SynACK)
	}
	// Random stalls: each handshake's ready (or valid) with its own odds a
	// cycle (reqTB's control bits: 0 an item offered, 1 rd1's request
	// ready, 2 a response block, 3 ib_vcrc's out_ready, 4 a pick, 5..6 the
	// VL it starts from, 8 cpl_ready, 9 a received packet, 10 wr0 ready, 11
	// a WQE block offered), plenty of credit.
	odds := []struct{ bit, pct int }{{0, 80}, {1, 75}, {2, 70}, {3, 85}, {4, 90}, {8, 80}, {9, 85}, {10, 100}, {11, 65}}
	for range 12000 {
		w := uint64(r.IntN(4)) << 5
		for _, o := range odds {
			if r.IntN(100) < o.pct {
				w |= 1 << o.bit
			}
		}
		run.ctrl = append(run.ctrl, [5]uint64{w, 2048, 2048, 2048, 2048})
	}
	return p
}

// TestInlinePlan: the model does in the run what newInlinePlan's comment
// derives: the big SEND's WQE fills 16 WQEBBs, its four packets carry its
// bytes 0..255, 256..511, 512..767, 768..987, the NAK resends from its
// packet 2, and every signaled WQE completes with success.
func TestInlinePlan(t *testing.T) {
	ops := map[hca.WROpcode]int{} // inline WQEs with a payload, by opcode, over the seeds
	defer func() {
		for _, op := range []hca.WROpcode{hca.WRSend, hca.WRSendImm, hca.WRRDMAWrite, hca.WRRDMAWriteImm} {
			assert.Positive(t, ops[op], "an inline %s with a payload in the seeds", op)
		}
	}()
	for _, seed := range inlineSeeds {
		p := newInlinePlan(seed)
		require.NotNil(t, p.big)
		assert.Len(t, p.big.bbs, 16, "a 988-byte inline SEND: ctrl 16 + 4 + 988 = 1008 bytes, ceil(1008 / 64) = 16 blocks")
		assert.Equal(t, 20, p.big.wqe.InlineOff, "a SEND's inline data after ctrl 16 and its byte count 4")
		// The big SEND's packets: context 0's (DestQP 0xB0000, BTH bytes
		// 5..7) with a PSN from its first through first + 3.
		var got [][]byte
		for _, w := range p.run.wires {
			if uint32(w[13])<<16|uint32(w[14])<<8|uint32(w[15]) == 0xB0000 && (psnAt(w)-p.bigPSN)&0xFFFFFF < 4 {
				got = append(got, wirePayload(t, w))
			}
		}
		inl := p.big.inl
		want := [][]byte{inl[:256], inl[256:512], inl[512:768], inl[768:], inl[512:768], inl[768:]}
		assert.Equal(t, want, got, "seed %d: the big SEND's packets, then its resend from packet 2", seed)
		n := 0
		for _, it := range p.run.items {
			if it.wqe.Inline && it.wqe.Length > 0 {
				ops[it.wqe.Opcode]++
			}
			if !it.cfg && it.wqe.Signaled {
				n++
			}
		}
		assert.Len(t, p.status, n, "seed %d: a CQE per signaled WQE", seed)
		for _, s := range p.status {
			assert.Equal(t, hca.WCSuccess, s)
		}
	}
}

// inlineTransport is retryTransport with MAX_INLINE = inlineMax.
func inlineTransport(t *testing.T) string {
	t.Helper()
	src := retryTransport(t)
	old := fmt.Sprintf("parameter integer MAX_INLINE = %d", reqMaxInline)
	require.Equal(t, 1, strings.Count(src, old), "hca_transport's %q", old)
	return strings.Replace(src, old, fmt.Sprintf("parameter integer MAX_INLINE = %d", inlineMax), 1)
}

// TestRequesterInlineCosim: hca_requester sends inline SENDs and WRITEs
// (with and without immediate) of every size of inlineSizes from the
// WQEs' own blocks, mixed with messages read from the host and gather
// lists, on three contexts, under random stalls, and resends them after
// sequence error NAKs (the big SEND from inside its data), as the model
// does, byte for byte, with the model's completions; rd1 reads the
// non-inline WQEs' blocks only, the first sends' in order. Each mutant of
// the inline path fails.
func TestRequesterInlineCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	dir := t.TempDir()
	type mutant struct{ name, old, new string }
	cases := []struct {
		seed uint64
		m    mutant
	}{}
	for _, seed := range inlineSeeds {
		cases = append(cases, struct {
			seed uint64
			m    mutant
		}{seed, mutant{name: "unmutated"}})
	}
	for _, m := range []mutant{
		{"every inline WQE refused", "wire             il_bad   = dec_inline && (is_rdat ||", "wire             il_bad   = dec_inline && (1'b1 ||"},
		{"a WQE's blocks kept one place on", "if (wq_k == ib[4:0]) il_stage", "if (wq_k == ib[4:0] + 5'd1) il_stage"},
		{"a WQE's blocks counted without rounding the DS count up", "wire [6:0]       wq_up    = {1'b0, wq_ds} + 7'd3;",
			"wire [6:0]       wq_up    = {1'b0, wq_ds} + 7'd0;"},
		{"the inline data from its segment, not past its byte count", "(g_il ? {57'd0, g_ioff} : g_el[63:0])",
			"(g_il ? {57'd0, g_ioff - 7'd4} : g_el[63:0])"},
		{"a resend's inline bytes from the word's first block", "il_blk  <= g_a[10:6];", "il_blk  <= 5'd0;"},
		{"a resend's inline offset a SEND's", "g_ioff <= rp_iof[6:0];", "g_ioff <= 7'd20;"},
		{"the inline bytes from the staging register, not the ring entry's copy",
			"wire [IL_W-1:0]  il_word  = il_mem[g_ix];", "wire [IL_W-1:0]  il_word  = il_stage;"},
		{"inline blocks pushed while a read is outstanding",
			"assign il_push = il_left != 5'd0 && {{(32-PB_CW){1'b0}}, pay_count} == res32 &&",
			"assign il_push = il_left != 5'd0 &&"},
		{"an inline message read through rd1", "if (g_step && !g_past && !g_il) begin", "if (g_step && !g_past) begin"},
		// The next WQE's first block comes in the cycle the inline WQE is
		// taken (the testbench does so, as the parser may): a copy a cycle
		// later takes that block in place of the inline WQE's first.
		{"the inline copy a cycle after the take",
			"    always @(posedge clk) begin\n        if (send && dec_inline) il_mem[{dix, d_tl[OQ_W-1:0]}] <= il_stage;",
			"    reg il_wr_d;\n    reg [QPN_W+OQ_W-1:0] il_wx_d;\n    always @(posedge clk) begin\n" +
				"        il_wr_d <= send && dec_inline;\n        il_wx_d <= {dix, d_tl[OQ_W-1:0]};\n        if (il_wr_d) il_mem[il_wx_d] <= il_stage;"},
	} {
		cases = append(cases, struct {
			seed uint64
			m    mutant
		}{inlineSeeds[0], m})
	}
	for _, c := range cases {
		name := strings.ReplaceAll(c.m.name, " ", "_")
		if c.m.old == "" {
			name += "_seed" + strconv.FormatUint(c.seed, 10)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newInlinePlan(c.seed)
			d, replace := requesterMutant(t, dir, name, c.m.old, c.m.new)
			files := writeReqBench(t, d, replace)
			require.NoError(t, os.WriteFile(filepath.Join(d, "hca_transport.v"), []byte(inlineTransport(t)), 0o644))
			p.run.write(t, d)
			_, err := runTool(ctx, d, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
			require.NoError(t, err)
			out, err := runTool(ctx, d, "vvp", append([]string{"-n", filepath.Join(d, "sim.vvp")}, append(p.run.args(d, "i"), "+hostfn")...)...)
			require.NoError(t, err)
			res := retryCheck(t, p.retryPlan, out, filepath.Join(d, "beats_i.txt"), filepath.Join(d, "log_i.txt"))
			reads := logPayReads(t, filepath.Join(d, "log_i.txt"))
			// Every read lies in a non-inline element's bytes: an inline
			// message reads nothing (its "addresses" would be its offsets
			// in the WQE, bytes 0..1023, far from every element).
			outside := 0
			for _, a := range reads {
				if !slices.ContainsFunc(p.dma, func(r [2]uint64) bool { return a.addr >= r[0] && a.addr+uint64(a.n) <= r[1] }) {
					outside++
				}
			}
			first := reads[:min(len(reads), len(p.reads))]
			if c.m.old != "" {
				bad := res.errors > 0 || res.checked != p.run.beats || res.acks != len(p.run.acks) || outside > 0 ||
					!slices.Equal(first, p.reads) || !slices.Equal(p.status, res.status)
				assert.True(t, bad, "the inline co-simulation passes a requester with %s", c.m.name)
				t.Logf("%d mismatches, %d of %d beats, %d reads outside: %s", res.errors, res.checked, p.run.beats, outside,
					strings.Join(res.first, "; "))
				return
			}
			t.Logf("%s", reqResult.FindString(out))
			t.Logf("%d beats, %d reads, %d packets", res.checked, len(reads), len(p.run.wires))
			assert.Zero(t, res.errors, "mismatches: %s", strings.Join(res.first, "; "))
			assert.Equal(t, p.run.beats, res.checked, "beats compared: every packet of the model's")
			assert.Equal(t, len(p.run.acks), res.acks, "the NAKs and ACKs taken")
			assert.Equal(t, p.psns, res.psns, "the PSNs committed, per context")
			assert.Equal(t, p.status, res.status, "completions")
			assert.Zero(t, outside, "reads outside the non-inline WQEs' elements")
			assert.Equal(t, p.reads, first, "the first sends' reads: the model's, each packet's bytes of the non-inline WQEs, in order")
		})
	}
}
