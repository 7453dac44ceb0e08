package rtl

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_requester's gather: multi-SGE SENDs and WRITEs <-> the model ----
//
// The emitted hca_transport (retryTransport) in reqTB with +hostfn (the
// host answers a read by its address, reqHostBlock), on one context of
// MTU 256 whose WQEs are the model's decode of hca.EncodeSendWQE's WQEs
// with gather lists, offered on dec_* with their segments on dec_sge_*
// as hca_wqe_parse offers them. The replay (retryCheck) is the model's
// hca.Requester with the payload hca.Device.schedule gathers
// (reqGather): every packet the model's, byte for byte, every completion
// the model's. A sequence error NAK inside the 30-element SEND makes the
// requester resend it from a packet whose first byte lies inside an
// element (the walk steps over k x MTU bytes across the elements).

// gatherWR is one work request of the gather plan.
type gatherWR struct {
	wr   hca.SendWR
	gate int
}

// gatherSGL30 is the 30-element SEND's list: lengths cycling 0, 17, 64,
// 255, 1, 256 (a zero-byte element every sixth), element i at
// 0x0100_0000 x (i + 1) + (7i mod 64), so the elements start at every
// lane alignment and none shares a block with another.
func gatherSGL30() []hca.SGE {
	lens := []uint32{0, 17, 64, 255, 1, 256}
	l := make([]hca.SGE, hca.MaxSendSGE)
	for i := range l {
		l[i] = hca.SGE{Addr: 0x0100_0000*uint64(i+1) + uint64(7*i%64), Length: lens[i%len(lens)], LKey: 0x300 + uint32(i)}
	}
	return l
}

// newGatherPlan builds the run. Derivation (MTU 256, first PSN 0x20):
//
//	G0 a WRITE of 3 elements, 100 B at 0x10_0000 + 60, 300 B at
//	   0x20_0000 + 1, 113 B at 0x30_0000: 513 B, ceil(513 / 256) = 3
//	   packets, PSNs 0x20..0x22. Packet 0 is bytes 0..255 of the
//	   message: element 0 whole (100) and element 1's first 156; packet
//	   1 is bytes 256..511: element 1's last 144 and element 2's first
//	   112; packet 2 is byte 512, element 2's last. The reads: element 0
//	   from lane 60 through lane 63 of its third block (60 + 100 = 160 B
//	   from its first block: 3 blocks), element 1 ceil((1 + 300) / 64) =
//	   5 blocks, element 2 ceil(113 / 64) = 2.
//	G1 a SEND of 30 elements (gatherSGL30): 5 x (0 + 17 + 64 + 255 + 1 +
//	   256) = 2965 B, 12 packets, PSNs 0x23..0x2e.
//	G2 a SEND_IMM of an empty list: written as one zero-byte segment, a
//	   SEND_ONLY_IMM without payload, PSN 0x2f.
//	G3 a WRITE of 256 B at 0x40_0000 and 257 B at 0x41_0000 + 63: the
//	   first element is packet 0 exactly, the second packets 1 and 2
//	   (256 + 1), PSNs 0x30..0x32.
//
// Once the 19 packets have left, a sequence error NAK at 0x28, G1's
// packet 5: G0's PSNs lie before it (completed), G1 is resent from packet
// 5, message bytes 1280.. (1280 = 2 x 593 + 94: the third group's 0, 17
// and 64 make 81, so the byte is element 15's 13th, 1280 - 1267), then
// G2 and G3 whole: PSNs 0x28..0x32 again. Then an ACK through 0x32
// completes G1, G2 and G3.
//
// The reads (the model's, hca.Device.schedule and gather: each packet's
// bytes, one read per part of them in an element, at the element's
// address plus the bytes of it before): G0's packet 0 reads 100 B at
// 0x10_0000 + 60 and 156 B at 0x20_0000 + 1, packet 1 144 B at
// 0x20_0000 + 157 and 112 B at 0x30_0000, packet 2 1 B at 0x30_0000 +
// 112; G2 none; G3 256 B at 0x40_0000, 256 B at 0x41_0000 + 63, 1 B at
// 0x41_0000 + 319. The NAK's resend reads again (the model grants the
// packets again): G1's packet 5 first, 242 B at element 15 + 13, 1 B at
// element 16, 13 B at element 17, then the rest of G1 and G3's three.
//
// Then, on the context's PD 0x77, G4 a WRITE of 3 elements whose second's
// L_Key is in another PD (hca.KeyTable.Check: PD mismatch): the model
// fails it with LOC_PROT_ERR before any read (hca.Device.wqeReady: the
// QP to ERR, nothing sent), and G5, a SEND of 10 B after it, completes
// with WR_FLUSH_ERR, unsent. Every element of G0..G3 passes its check
// (their keys the testbench answers 0 for).
func newGatherPlan() (*retryPlan, []payRead) {
	p := &retryPlan{run: &reqRun{}}
	run := p.run
	cfgs := []*reqItem{{cfg: true, qix: 0, qpn: 0x3450, dlid: 0x51, slid: 0x61, sl: 1, vl: 2, rqpn: 0xC0000, psn: 0x20, mtuCode: 1, cqn: 3, pd: 0x77}}
	qps := p.addQPs(cfgs)
	wrs := []hca.SendWR{
		{Opcode: hca.WRRDMAWrite, RemoteAddr: 0x7000_0000, RKey: 0x55, SGL: []hca.SGE{
			{Addr: 0x10_0000 + 60, Length: 100, LKey: 0x101}, {Addr: 0x20_0000 + 1, Length: 300, LKey: 0x102},
			{Addr: 0x30_0000, Length: 113, LKey: 0x103}}},
		{Opcode: hca.WRSend, SGL: gatherSGL30()},
		{Opcode: hca.WRSendImm, Imm: 0xC0DE0002, SGL: []hca.SGE{}},
		{Opcode: hca.WRRDMAWrite, RemoteAddr: 0x7100_0000, RKey: 0x56, SGL: []hca.SGE{
			{Addr: 0x40_0000, Length: 256, LKey: 0x104}, {Addr: 0x41_0000 + 63, Length: 257, LKey: 0x105}}},
	}
	for i, wr := range wrs {
		wr.Signaled = true
		var buf [16 * hca.WQEBBBytes]byte
		hca.EncodeSendWQE(buf[:], &wr, uint16(i), cfgs[0].qpn, nil)
		w, err := hca.DecodeSendWQE(buf[:])
		if err != nil {
			panic(err)
		}
		it := &reqItem{qix: 0, qpn: cfgs[0].qpn, every: retryEvery, wqe: w, sent: true}
		run.items = append(run.items, it)
		for _, c := range qps[0].enqueue(w) {
			p.status = append(p.status, c.Status)
		}
	}
	p.drain(qps)
	for _, a := range []struct {
		psn uint32
		syn uint8
	}{{0x28, hca.SynNAKSeq}, {0x32, hca.SynACK}} {
		run.acks = append(run.acks, reqAck{gate: len(run.wires), qpn: cfgs[0].qpn, psn: a.psn, syn: a.syn, msn: 1})
		res := qps[0].req.OnAck(a.psn, a.syn)
		for _, c := range res.Completions {
			p.status = append(p.status, c.Status)
		}
		p.drain(qps)
	}
	// G4 and G5, once both ACKs are taken (gate 2).
	var kt hca.KeyTable
	mr0 := kt.Register(0x77, 0x50_0000, 4096, 0)
	mr1 := kt.Register(0x78, 0x51_0000, 4096, 0) // another PD's region
	mr2 := kt.Register(0x77, 0x52_0000, 4096, 0)
	g4 := []hca.SGE{{Addr: 0x50_0000, Length: 100, LKey: mr0.LKey}, {Addr: 0x51_0000 + 8, Length: 200, LKey: mr1.LKey},
		{Addr: 0x52_0000, Length: 300, LKey: mr2.LKey}}
	for i, wr := range []hca.SendWR{
		{Opcode: hca.WRRDMAWrite, RemoteAddr: 0x7200_0000, RKey: 0x57, SGL: g4, Signaled: true},
		{Opcode: hca.WRSend, LocalAddr: 0x50_0000 + 200, Length: 10, LKey: mr0.LKey, Signaled: true}, // a good key
	} {
		var buf [16 * hca.WQEBBBytes]byte
		hca.EncodeSendWQE(buf[:], &wr, uint16(len(wrs)+i), cfgs[0].qpn, nil)
		w, err := hca.DecodeSendWQE(buf[:])
		if err != nil {
			panic(err)
		}
		it := &reqItem{qix: 0, qpn: cfgs[0].qpn, every: retryEvery, wqe: w, gate: 2}
		for _, e := range it.elems() {
			it.keyRes = append(it.keyRes, kt.Check(e.LKey, 0x77, 0, e.Addr, uint64(e.Length)))
		}
		run.items = append(run.items, it)
		if i == 0 {
			for _, c := range qps[0].req.FlushAll() {
				p.status = append(p.status, c.Status)
			}
			p.status = append(p.status, hca.WCLocProtErr)
			continue
		}
		for _, c := range qps[0].enqueue(w) {
			p.status = append(p.status, c.Status)
		}
	}
	run.beats = 1 << 20 // the control's cycles end the run
	for range 3000 {
		run.ctrl = append(run.ctrl, [5]uint64{0x71f, 2048, 2048, 2048, 2048})
	}
	// The model's payload reads of every packet it sent, the resend's
	// among them (retryQP.send, packetPayReads).
	return p, qps[0].reads
}

// wirePayload is the payload of a packet in whole beats (ib.AppendWire's
// bytes, zero padded): parsed from its LRH.PktLen words and the VCRC.
func wirePayload(t *testing.T, w []byte) []byte {
	t.Helper()
	n := int(binary.BigEndian.Uint16(w[4:])&0x7FF)*4 + ib.VCRCBytes
	pkt, err := ib.ParseWire(w[:n])
	require.NoError(t, err)
	return pkt.Payload
}

// TestGatherPlan: the model does in the run what newGatherPlan's comment
// derives: the PSNs, the completions, and the bytes of the packets the
// derivation names, from the host's bytes at each element's address.
func TestGatherPlan(t *testing.T) {
	p, reads := newGatherPlan()
	var psns []uint32
	for k := uint32(0x20); k <= 0x32; k++ {
		psns = append(psns, k)
	}
	for k := uint32(0x28); k <= 0x32; k++ {
		psns = append(psns, k)
	}
	assert.Equal(t, psns, p.psns[0], "PSNs: 19 first sends, then 0x28..0x32 again")
	assert.Equal(t, []hca.WCStatus{hca.WCSuccess, hca.WCSuccess, hca.WCSuccess, hca.WCSuccess, hca.WCLocProtErr, hca.WCWRFlushErr}, p.status,
		"G0 on the NAK, G1..G3 on the ACK, G4's bad key, G5 flushed")
	// G4's keys: the second element's region is in PD 0x78.
	assert.Equal(t, []hca.KeyResult{hca.KeyOK, hca.KeyPDMismatch, hca.KeyOK}, p.run.items[len(p.run.items)-2].keyRes, "G4's checks")
	require.Len(t, p.run.wires, 30)
	h := reqHostBytes
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	// G0: packets 0..2.
	assert.Equal(t, cat(h(0x10_0000+60, 100), h(0x20_0000+1, 156)), wirePayload(t, p.run.wires[0]), "G0 packet 0")
	assert.Equal(t, cat(h(0x20_0000+1+156, 144), h(0x30_0000, 112)), wirePayload(t, p.run.wires[1]), "G0 packet 1")
	assert.Equal(t, h(0x30_0000+112, 1), wirePayload(t, p.run.wires[2]), "G0 packet 2")
	// G2: no payload. G3: its first element exactly, then the second.
	assert.Empty(t, wirePayload(t, p.run.wires[15]), "G2")
	assert.Equal(t, h(0x40_0000, 256), wirePayload(t, p.run.wires[16]), "G3 packet 0")
	assert.Equal(t, h(0x41_0000+63, 256), wirePayload(t, p.run.wires[17]), "G3 packet 1")
	assert.Equal(t, h(0x41_0000+63+256, 1), wirePayload(t, p.run.wires[18]), "G3 packet 2")
	// The resend's first packet (G1's packet 5): element 15 from its 13th
	// byte (255 - 13 = 242), element 16 (1 B), element 17's first 13
	// (242 + 1 + 13 = 256).
	l := gatherSGL30()
	assert.Equal(t, cat(h(l[15].Addr+13, 242), h(l[16].Addr, 1), h(l[17].Addr, 13)), wirePayload(t, p.run.wires[19]), "G1 resent from packet 5")
	// The reads, as derived: G0's five parts first, G3's three ending the
	// first sends, the resend's from G1's packet 5, G3's three again.
	assert.Equal(t, []payRead{{0x10_0000 + 60, 100}, {0x20_0000 + 1, 156}, {0x20_0000 + 157, 144}, {0x30_0000, 112},
		{0x30_0000 + 112, 1}}, reads[:5], "G0's reads")
	g3 := []payRead{{0x40_0000, 256}, {0x41_0000 + 63, 256}, {0x41_0000 + 319, 1}}
	i := slices.Index(reads, g3[0])
	require.Positive(t, i, "G3's first read")
	assert.Equal(t, g3, reads[i:i+3], "G3's reads")
	assert.Equal(t, []payRead{{l[15].Addr + 13, 242}, {l[16].Addr, 1}, {l[17].Addr, 13}}, reads[i+3:i+6], "the resend's first")
	assert.Equal(t, g3, reads[len(reads)-3:], "G3's reads again")
	// Every read inside one element, of 1..256 bytes (a packet's part).
	for _, r := range reads {
		assert.True(t, r.n >= 1 && r.n <= 256, "read %v", r)
	}
}

// TestRequesterGatherCosim: hca_requester sends the gather plan's
// messages as the model does, byte for byte, resends the 30-element SEND
// from inside an element, completes as the model; the reads are the
// model's (each packet's parts, exactly their bytes, at their elements'
// addresses, the resend's again: newGatherPlan); each mutant of the
// gather fails.
func TestRequesterGatherCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	p, reads := newGatherPlan()
	dir := t.TempDir()
	for _, m := range []struct{ name, old, new string }{
		{name: "unmutated"},
		{"every element read at the first's address", "(g_il ? {57'd0, g_ioff} : g_el[63:0]) + {32'd0, g_skip};",
			"(g_il ? {57'd0, g_ioff} : sg_mem[{g_ix, 5'd0}][63:0]) + {32'd0, g_skip};"},
		{"an element's end lane one short", "{1'b0, g_hi} + 7'd1, g_blocks}", "{1'b0, g_hi}, g_blocks}"},
		{"the walk ends an element early", "&& {1'b0, g_e} + 6'd1 == g_n ||", "&& {1'b0, g_e} + 6'd2 == g_n ||"},
		{"a resend's skip not carried past an element", "g_skip <= g_past ? g_skip - g_len :", "g_skip <= g_past ? 32'd0 :"},
		{"a zero-byte element read", "wire             g_past   = g_skip >= g_len;", "wire             g_past   = g_skip > g_len;"},
		// The model reads a resent packet again (the scheduler grants it again).
		{"a resend that does not read again", "end else if (rp_take && rp_pay) begin", "end else if (1'b0) begin"},
		{"a resend's reads from the message's first byte", "g_skip <= rp_off;", "g_skip <= 32'd0;"},
		{"the packer's rotation one lane off", "wire [5:0]   pk_r     = pk_lo[5:0] - pk_f;", "wire [5:0]   pk_r     = pk_lo[5:0] - pk_f + 6'd1;"},
		{"a segment kept one place on", "sg_mem[{d_ix, s_k[4:0]}]", "sg_mem[{d_ix, s_k[4:0] + 5'd1}]"},
		{"every element's L_Key the first's", "assign kc_req_key    = dec_sge_lkey;", "assign kc_req_key    = sg_mem[{d_ix, 5'd0}][95:64];"},
		{"a failed L_Key check ignored", "if (kc_rsp_result != 3'd0) s_bad <= 1'b1;", "s_bad <= 1'b0;"},
		{"the check's length the WQE's", "assign kc_req_len    = {32'd0, dec_sge_len};", "assign kc_req_len    = {32'd0, dec_length};"},
	} {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d, _, res := runRetryMutant(t, ctx, dir, p, "g", m.name, m.old, m.new)
			got := logPayReads(t, filepath.Join(d, "log_g.txt"))
			if m.old != "" {
				assert.True(t, res.errors > 0 || !slices.Equal(got, reads), "the gather co-simulation passes a requester with %s", m.name)
				t.Logf("%d mismatches: %s", res.errors, strings.Join(res.first, "; "))
				return
			}
			assert.Zero(t, res.errors, "mismatches: %s", strings.Join(res.first, "; "))
			assert.Equal(t, 2, res.acks, "the NAK and the ACK taken")
			// Every packet compared: the model's 30, and the statuses of
			// newGatherPlan's derivation on cpl_*.
			assert.Equal(t, p.psns[0], res.psns[0], "the PSNs committed")
			beats := 0
			for _, w := range p.run.wires {
				beats += len(w) / BlockBytes
			}
			assert.Equal(t, beats, res.checked, "beats compared")
			assert.Equal(t, p.status, res.status, "completions")
			assert.Equal(t, reads, got, "the reads: the model's, each packet's parts, the resend's again")
		})
	}
}
