package rtl

import (
	"context"
	"fmt"
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

// ---- hca_requester's payload reads <-> hca.Device.schedule's ----
//
// The model reads a message's payload per packet, when the scheduler
// grants the packet (hca/device.go, schedule and gather): packet i of a
// message of L bytes at MTU m is its bytes [i m, i m + min(m, L - i m)),
// read as one d.PCIe.Read(issue, LocalAddr + i m, that length) for a WQE
// of one data segment, or, for a gather list, as one read per part of
// those bytes in an element (hca.sglSlice: each element's part from its
// address plus the bytes of it before, elements of no byte in the range,
// zero-byte ones among them, left out), in the list's order. An inline
// WQE reads nothing (the bytes are the WQE's), nor does a READ request,
// an atomic or a zero-byte message. A go-back-N resend from packet k
// grants packets k.. again, so it reads them again, by the same rule; a
// message a later response completed is not resent and reads nothing.
// Each read is split into PCIe read requests by hca.ReadRequest (the DMA
// engine's split); hca_requester issues the reads on rd1, the DMA engine
// splits them.

// payRead is one host read of payload bytes: its first byte's address
// and its length in bytes.
type payRead struct {
	addr uint64
	n    int
}

func (r payRead) String() string { return fmt.Sprintf("%#x+%d", r.addr, r.n) }

// modelPayReads is the reads the model makes for packets from.. of the
// message w at MTU mtu, in order (the rule above).
func modelPayReads(w hca.SendWQE, mtu, from int) []payRead {
	var rs []payRead
	for i := from; i*mtu < int(w.Length); i++ {
		rs = packetPayReads(rs, w, mtu, i)
	}
	return rs
}

// packetPayReads appends to dst the reads the model makes when it grants
// packet i of the message w at MTU mtu: none for an inline WQE, a READ
// request or an atomic; else the packet's bytes [i mtu, i mtu + plen),
// plen = min(mtu, L - i mtu), one read at LocalAddr + i mtu, or one per
// part of them in a gather list's element (hca.sglSlice).
func packetPayReads(dst []payRead, w hca.SendWQE, mtu, i int) []payRead {
	off := i * mtu
	if w.Inline || w.Opcode >= hca.WRRDMARead || off >= int(w.Length) {
		return dst
	}
	plen := min(mtu, int(w.Length)-off)
	if w.SGL == nil {
		return append(dst, payRead{w.LocalAddr + uint64(off), plen})
	}
	start, n := 0, plen // start: the element's first byte in the message
	for _, e := range w.SGL {
		if n == 0 {
			break
		}
		end := start + int(e.Length)
		if off < end {
			skip := off - start
			take := min(int(e.Length)-skip, n)
			dst = append(dst, payRead{e.Addr + uint64(skip), take})
			off += take
			n -= take
		}
		start = end
	}
	return dst
}

// hostRegion is host memory a run's payload lies in: bytes from the
// block-aligned address base (modulo 2^64).
type hostRegion struct {
	base uint64
	host []byte
}

// block returns the 64-byte host block at the aligned address a, from
// the region that holds it.
func regionBlock(regions []hostRegion, a uint64) []byte {
	for _, g := range regions {
		if off := a - g.base; off < uint64(len(g.host)) {
			return g.host[off : off+BlockBytes]
		}
	}
	panic(fmt.Sprintf("rtl: no host region holds block %#x", a))
}

// addReads appends the model's reads of the sent item it (its first send,
// every packet) to the run, and the blocks rd1 returns for each, in order:
// a read of n bytes at a is answered by the ceil((a mod 64 + n) / 64)
// blocks its bytes lie in (hca_dma_engine's client contract), so a block
// two packets' reads share comes twice.
func (run *reqRun) addReads(it *reqItem, mtu int) {
	for _, rd := range modelPayReads(it.wqe, mtu, 0) {
		run.reads = append(run.reads, rd)
		nb := (int(rd.addr%BlockBytes) + rd.n + BlockBytes - 1) / BlockBytes
		for i := range nb {
			run.pays = append(run.pays, regionBlock(it.regions, rd.addr&^63+uint64(i*BlockBytes)))
		}
	}
}

// logPayReads is the rd1 reads the testbench's log names (R lines: the
// address and the length, hex), in order.
func logPayReads(t *testing.T, logFile string) []payRead {
	t.Helper()
	log, err := os.ReadFile(logFile)
	require.NoError(t, err)
	var got []payRead
	for _, line := range strings.Split(string(log), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "R" {
			continue
		}
		addr, _ := strconv.ParseUint(fields[1], 16, 64)
		n, _ := strconv.ParseUint(fields[2], 16, 16)
		got = append(got, payRead{addr, int(n)})
	}
	return got
}

// TestRequesterPayReadsMutantsFail: each slip in the per-packet reads
// fails the end-to-end test (reqCheck compares every rd1 read with the
// model's, modelPayReads) on TestRequesterMutantsFail's runs with gather
// lists (newReqRunOf: half the SENDs and WRITEs with a payload carry a
// list), the half-length run first, the whole one only for a mutant that
// passes it. The host answers from pays.hex in order, so a read at the
// wrong address still gets the model's bytes: only the read check sees
// it.
func TestRequesterPayReadsMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	runs := []*reqRun{newReqRunOf(cosimSeeds[0], reqMutantItems/2, true), newReqRunOf(cosimSeeds[0], reqMutantItems, true)}
	dir := t.TempDir()
	const f = "hca_requester.v"
	for _, m := range []cosimMutant{
		{"unmutated", "", "", ""},
		{"a packet's read one packet late", f, "rd_a    <= g_a;", "rd_a    <= g_a + {51'd0, g_mtu};"},
		{"a packet's read one packet early", f, "rd_a    <= g_a;", "rd_a    <= g_a - {51'd0, g_mtu};"},
		{"a read one byte long", f, "rd_len  <= g_take[12:0];", "rd_len  <= g_take[12:0] + 13'd1;"},
		{"a read one byte short", f, "rd_len  <= g_take[12:0];", "rd_len  <= g_take[12:0] - 13'd1;"},
		{"whole blocks read (the reads before they were bytes)", f,
			"rd_req_addr  <= rd_a;\n                rd_req_len   <= {3'd0, rd_len};",
			"rd_req_addr  <= {rd_a[63:6], 6'd0};\n                rd_req_len   <= {rd_left[9:0], 6'd0};"},
		{"a read per element, not per packet", f, "wire             g_cut    = !g_il && {19'd0, g_pk} < g_take1;",
			"wire             g_cut    = 1'b0;"},
		{"each part taken as a packet's first", f, "if (!g_past) g_pk  <= g_pkdone ? g_mtu : g_pk - g_take[12:0];",
			"if (!g_past) g_pk  <= g_mtu;"},
		// A message's last packet whose last block holds more of its
		// bytes than its first block's lanes left spills into a block
		// more (the packer's flush).
		{"the packer's last spill forgotten", f, "pk_flush <= pk_mend && pk_fn[5:0] != 6'd0;", "pk_flush <= 1'b0;"},
	} {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := buildReqMutant(t, ctx, dir, m.name, m.file, m.old, m.new)
			var judges []func() []string
			for i, run := range runs {
				judges = append(judges, func() []string {
					run.write(t, d)
					res := runReq(t, ctx, d, strconv.Itoa(i), run, "vvp", "-n", filepath.Join(d, "sim.vvp"))
					if m.file == "" {
						res.passes(t, run, fmt.Sprintf("unmutated, %d items", len(run.items)))
						assert.Positive(t, len(run.reads), "reads compared")
						return nil
					}
					bad := res.errors + res.werr + res.cerr + res.verr + res.gaps
					if bad == 0 && res.checked == res.wantBeats {
						return nil
					}
					return []string{fmt.Sprintf("%d of %d beats, %d mismatches: %s", res.checked, res.wantBeats, res.errors,
						strings.Join(res.first, "; "))}
				})
			}
			firstFailing(t, m.file != "", judges, "the end-to-end test passes a requester with "+m.name)
		})
	}
}

// newPayRoomPlan is a run that fills the payload buffer: one context of
// MTU 4096, one RDMA WRITE of 8 x 4096 + 100 B at 0x20_0000 + 1 (nine
// packets, PSNs 0x40..0x48), the port given no credit for its first 2000
// cycles (a 4096-byte packet's (PktLen + 16) >> 4 = 260 blocks never fit a
// credit of 0: (0 - 260) mod 4096 > 2048) while the host answers at once,
// then plenty; an ACK through 0x48 completes it. Each of packets 0..7
// reads 4096 B from lane 1: ceil((1 + 4096) / 64) = 65 blocks. While the
// port waits, the packet queue (130 beats) takes packet 0 (4096 + 28 + 4
// ICRC + 2 VCRC = 4130 B: 65 beats) and most of packet 1, and the reads
// go on as far as the walk's queue lets them (EL_DEPTH = 4 parts whose
// blocks the packer has not all taken, and one more loaded): 4 x 65 =
// 260 blocks asked for, past the buffer's 128, unless each read waits for
// its room (the buffer holds one whole part of 65 at any lane, so a read
// always gets it once the parts before have drained).
func newPayRoomPlan() (*retryPlan, []payRead) {
	p := &retryPlan{run: &reqRun{}}
	run := p.run
	cfgs := []*reqItem{{cfg: true, qix: 0, qpn: 0x5670, dlid: 0x52, slid: 0x62, sl: 2, vl: 1, rqpn: 0xD0000, psn: 0x40, mtuCode: 5, cqn: 2}}
	qps := p.addQPs(cfgs)
	wr := hca.SendWR{Opcode: hca.WRRDMAWrite, RemoteAddr: 0x7300_0000, RKey: 0x58, LocalAddr: 0x20_0000 + 1,
		Length: 8*4096 + 100, LKey: 0x106, Signaled: true}
	var buf [16 * hca.WQEBBBytes]byte
	hca.EncodeSendWQE(buf[:], &wr, 0, cfgs[0].qpn, nil)
	w, err := hca.DecodeSendWQE(buf[:])
	if err != nil {
		panic(err)
	}
	run.items = append(run.items, &reqItem{qix: 0, qpn: cfgs[0].qpn, every: retryEvery, wqe: w, sent: true})
	for _, c := range qps[0].enqueue(w) {
		p.status = append(p.status, c.Status)
	}
	p.drain(qps)
	run.acks = append(run.acks, reqAck{gate: len(run.wires), qpn: cfgs[0].qpn, psn: 0x48, syn: hca.SynACK, msn: 1})
	for _, c := range qps[0].req.OnAck(0x48, hca.SynACK).Completions {
		p.status = append(p.status, c.Status)
	}
	run.beats = 1 << 20 // the control's cycles end the run
	for c := range 5000 {
		cred := uint64(2048)
		if c < 2000 {
			cred = 0
		}
		run.ctrl = append(run.ctrl, [5]uint64{0x71f, cred, cred, cred, cred})
	}
	return p, qps[0].reads
}

// TestRequesterPayRoomCosim: with the port stalled and the host fast,
// hca_requester's per-packet reads stop at the payload buffer's room and
// the message goes out as the model's, byte for byte, from the model's
// reads; a requester that reads past the room loses blocks (rd1 cannot
// wait) and fails. (TestRequesterMutantsFail's runs do not fill the buffer
// since the reads are per packet: the walk's queue of parts bounds them
// there.)
func TestRequesterPayRoomCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	p, reads := newPayRoomPlan()
	require.Len(t, reads, 9, "a read per packet")
	for i, r := range reads {
		// Packet i: bytes i x 4096 on, 4096 of them but the last's 100.
		assert.Equal(t, payRead{0x20_0000 + 1 + uint64(i*4096), min(4096, 8*4096+100-i*4096)}, r, "packet %d's read", i)
	}
	dir := t.TempDir()
	for _, m := range []struct{ name, old, new string }{
		{name: "unmutated"},
		{"reads past the payload buffer's room", "res32 + n32 <= PAY_BLOCKS;", "1'b1;"},
	} {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d, _, res := runRetryMutant(t, ctx, dir, p, "b", m.name, m.old, m.new)
			got := logPayReads(t, filepath.Join(d, "log_b.txt"))
			beats := 0
			for _, w := range p.run.wires {
				beats += len(w) / BlockBytes
			}
			if m.old != "" {
				assert.True(t, res.errors > 0 || res.checked != beats || !slices.Equal(p.status, res.status),
					"the co-simulation passes a requester with %s", m.name)
				t.Logf("%d mismatches: %s", res.errors, strings.Join(res.first, "; "))
				return
			}
			assert.Zero(t, res.errors, "mismatches: %s", strings.Join(res.first, "; "))
			assert.Equal(t, beats, res.checked, "beats compared")
			assert.Equal(t, p.status, res.status, "completions")
			assert.Equal(t, reads, got, "the reads: the model's, a packet each")
		})
	}
}

// judgePayReads checks, for hca_top's runs, the host read requests in
// each QP's payload region (topPayBase + q x topPayStep, topPayStep
// bytes: its WQEs' local buffers) against the model's: each model read
// (topQP.preads, packetPayReads) split by hca.ReadRequests at the
// design's MRRS (topDesign: 128 B, so a packet's read is several), in order, as hca_dma_engine issues
// them for hca_requester's rd1 reads. Only for a QP whose model sent
// every packet once, lost none on the wire either way and had no R_Key
// refused: with a resend, the RTL's reads run ahead of its packets (it
// reads a message when it takes it, the model when it grants a packet),
// so where a resend's reads fall among the later messages' is timing.
// res.payReads counts the requests compared.
func (p *topPlan) judgePayReads(res *topResult) []string {
	var errs []string
	mrrs := topDesign().PCIeMRRSBytes
	for q, qp := range p.qps {
		if qp.resent || len(qp.lose) > 0 || len(qp.rxLose) > 0 || qp.refuse != 0 || qp.farRNR != 0 {
			continue
		}
		var want []hca.ReadChunk
		for _, r := range qp.preads {
			want = hca.ReadRequests(want, r.addr, r.n, mrrs)
		}
		lo := uint64(topPayBase + q*topPayStep)
		var got []hca.ReadChunk
		for _, h := range res.hreads {
			if h.Addr >= lo && h.Addr < lo+topPayStep {
				got = append(got, h)
			}
		}
		for i := range max(len(got), len(want)) {
			switch {
			case i >= len(want):
				errs = append(errs, fmt.Sprintf("QP %d: host read %d %#x+%d past the model's %d", q, i, got[i].Addr, got[i].N, len(want)))
			case i >= len(got):
				errs = append(errs, fmt.Sprintf("QP %d: %d host reads of its payload, the model's %d", q, len(got), len(want)))
			case got[i] != want[i]:
				errs = append(errs, fmt.Sprintf("QP %d: host read %d %#x+%d, the model's %#x+%d", q, i, got[i].Addr, got[i].N, want[i].Addr, want[i].N))
			}
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				break
			}
		}
		res.payReads += min(len(got), len(want))
	}
	return errs
}

// TestTopPayReadsMutantFails: hca_top's run (seed 1) fails an
// hca_requester that reads whole blocks (its reads before they were the
// model's bytes): the packets are the same bytes (the requester packs
// them from the blocks' lanes), so only judgePayReads's comparison of the
// host's read requests, split at MRRS by hca_dma_engine, with the
// model's sees it.
func TestTopPayReadsMutantFails(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	topMutantsFail(t, hcaTopTree(t), newTopPlan, []cosimMutant{
		{"whole blocks read", "hca_requester.v", "rd_req_addr  <= rd_a;\n                rd_req_len   <= {3'd0, rd_len};",
			"rd_req_addr  <= {rd_a[63:6], 6'd0};\n                rd_req_len   <= {rd_left[9:0], 6'd0};"},
	})
}
