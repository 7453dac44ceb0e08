package rtl

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_top receiving atomics: hca_rx_ack, hca_responder, rd1 and wr0, hca_ack_tx ----
//
// TestTopAtomicCosim runs cosim_top_test.go's bench (topTB, topPlan) on a
// scenario whose far ends send FETCH_ADD and CMP_SWAP requests to the
// HCA's responder from the wire: hca_rx_ack decodes their AtomicETH,
// hca_responder checks the R_Key (REMOTE_ATOMIC) and the alignment, reads
// the word's block through rd1 (hca_share_arb's client c, through
// hca_dma_engine from host memory), writes the result through wr0 and
// answers with an ATOMIC ACKNOWLEDGE that hca_ack_tx builds. Checked, as
// for every topPlan: every packet on the link byte for byte (the ATOMIC
// ACKNOWLEDGEs are the model's hca.Device.atomic answer, ib.AppendWire's
// bytes), host memory at the end (the atomics' results at their words,
// nothing else changed but the WRITE's bytes and the CQ rings), the
// counters.

// topImageWord is the little-endian word at host address a in the image.
func topImageWord(mem [][]byte, a uint64) uint64 {
	var b [8]byte
	for i := range b {
		x := a + uint64(i)
		b[i] = mem[x/BlockBytes][x%BlockBytes]
	}
	return binary.LittleEndian.Uint64(b[:])
}

// topAtomic executes the atomic pkt the model's responder accepted (or
// answers its duplicate) as hca.Device.atomic does, on host memory as the
// run leaves it so far (placed over the image mem), and returns the
// ATOMIC ACKNOWLEDGE the QP's responder sends: syndrome 0x1F, the MSN
// after it, the original value, addressed from the QP's context, whole
// beats.
func topAtomic(qp *topQP, pkt *ib.Packet, act *hca.RespAction, ours *hca.Responder, mem [][]byte, placed map[uint64]byte) []byte {
	var orig uint64
	if act.AtomicReplay {
		orig, _ = ours.LastAtomic(pkt.PSN)
	} else {
		var b [8]byte
		for i := range b {
			x := act.XlateAddr + uint64(i)
			v, ok := placed[x]
			if !ok {
				v = mem[x/BlockBytes][x%BlockBytes]
			}
			b[i] = v
		}
		orig = binary.LittleEndian.Uint64(b[:])
		nv := orig + pkt.Atomic.SwapAdd
		if pkt.Opcode == ib.CompareSwap {
			nv = orig
			if orig == pkt.Atomic.Compare {
				nv = pkt.Atomic.SwapAdd
			}
		}
		binary.LittleEndian.PutUint64(b[:], nv)
		for i := range b {
			placed[act.XlateAddr+uint64(i)] = b[i]
		}
		ours.SaveAtomic(pkt.PSN, orig)
	}
	w := ib.AppendWire(nil, &ib.Packet{Opcode: ib.AtomicAcknowledge, DLID: qp.it.dlid, SLID: qp.it.slid, SL: qp.it.sl, VL: qp.it.vl,
		DestQP: qp.it.rqpn, PSN: pkt.PSN, AETH: ib.AETH{Syndrome: hca.SynACKNoLimit, MSN: ours.MSN()}, AtomicAck: orig})
	b := make([]byte, (len(w)+BlockBytes-1)/BlockBytes*BlockBytes)
	copy(b, w)
	return b
}

// topAtomicScenario: QP 0 at MTU 256 receives FETCH_ADD 0x0102030405060708
// at +0x108 of its inbound region, a CMP_SWAP that hits at +0x110 (swap
// 0x1122334455667788), a CMP_SWAP that misses at +0x118 (compare 0), an
// RDMA WRITE of 300 bytes at +0x300 (two packets), FETCH_ADD 2^63 at +0x108 again and a
// FETCH_ADD at +0x124 (misaligned: NAK invalid request, ERR); QP 1 at MTU
// 512 a CMP_SWAP that hits at +0x3F8 (a block's last word). Each QP sends
// a SEND of its own, so the requester's traffic shares rd1, wr0 and the
// link with the atomics.
func topAtomicScenario() []*topQP {
	w := func(q int, off uint64, n uint32) hca.SendWR {
		return hca.SendWR{Opcode: hca.WRSend, Signaled: true, LocalAddr: topPay(q, off), Length: n}
	}
	return []*topQP{
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000A10, dlid: 0x21, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xD0000, psn: 0x10, mtuCode: 1, cqn: 0},
			msgs: []topMsg{{wr: w(0, 0x40, 300)}}, batch: 1,
			in: []topIn{
				{off: 0x108, n: 8, op: hca.WRFetchAdd, swap: 0x0102030405060708},
				{off: 0x110, n: 8, op: hca.WRCompSwap, swap: 0x1122334455667788, hit: true},
				{off: 0x118, n: 8, op: hca.WRCompSwap, swap: 0xDEAD, cmp: 0},
				{off: 0x300, n: 300, op: hca.WRRDMAWrite},
				{off: 0x108, n: 8, op: hca.WRFetchAdd, swap: 1 << 63},
				{off: 0x124, n: 8, op: hca.WRFetchAdd, swap: 1},
			}},
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001B01, dlid: 0x22, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xD0001, psn: 0x200, mtuCode: 2, cqn: 1},
			msgs: []topMsg{{wr: w(1, 0x800, 64)}}, batch: 1,
			in: []topIn{{off: 0x3F8, n: 8, op: hca.WRCompSwap, swap: 0x0F0E0D0C0B0A0908, hit: true}}},
	}
}

func newTopAtomicPlan(seed uint64) *topPlan { return newTopPlanOf(seed, topAtomicScenario(), 0, false) }

// TestTopAtomicPlan: the model does in the scenario what its comment says,
// derived by hand from the image's words.
func TestTopAtomicPlan(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		p := newTopAtomicPlan(seed)
		q0, q1 := p.qps[0], p.qps[1]
		in0, in1 := uint64(topInBase), uint64(topInBase+topInStep)
		w := func(a uint64) uint64 { return topImageWord(p.mem, a) }
		end := func(a uint64) uint64 { return topImageWord(p.want, a) }
		require.NotZero(t, w(in0+0x118), "seed %d: the miss's word is not its compare 0", seed)
		// The responder's answers, QP 0: four ATOMIC ACKNOWLEDGEs with the
		// original values (w(0x108); w(0x110); w(0x118); w(0x108) +
		// 0x0102030405060708, the first's result) at PSNs 0, 1, 2 and 5 with
		// the MSNs 1, 2, 3, 5 (the WRITE of 300 bytes is two packets at MTU
		// 256, PSNs 3 and 4, MSN 4, AckReq on its last only (ack_req_every
		// 3): one ACK at PSN 4), then NAK invalid request (0x61) at the
		// misaligned one's PSN 6 with the MSN still 5. QP 1: one, w(0x3F8),
		// PSN 0, MSN 1.
		type ans struct {
			op        ib.Opcode
			syn       uint8
			psn, msn  uint32
			orig      uint64
			withValue bool
		}
		want := []ans{
			{ib.AtomicAcknowledge, 0x1F, 0, 1, w(in0 + 0x108), true},
			{ib.AtomicAcknowledge, 0x1F, 1, 2, w(in0 + 0x110), true},
			{ib.AtomicAcknowledge, 0x1F, 2, 3, w(in0 + 0x118), true},
			{ib.Acknowledge, 0x1F, 4, 4, 0, false},
			{ib.AtomicAcknowledge, 0x1F, 5, 5, w(in0+0x108) + 0x0102030405060708, true},
			{ib.Acknowledge, 0x61, 6, 5, 0, false},
		}
		check := func(q int, acks [][]byte, want []ans) {
			require.Len(t, acks, len(want), "seed %d QP %d", seed, q)
			for k, a := range want {
				pk, err := ib.ParseWire(acks[k][:wireLen(acks[k])])
				require.NoError(t, err)
				assert.Equal(t, a.op, pk.Opcode, "seed %d QP %d answer %d", seed, q, k)
				assert.Equal(t, a.syn, pk.AETH.Syndrome, "seed %d QP %d answer %d", seed, q, k)
				assert.Equal(t, a.psn, pk.PSN, "seed %d QP %d answer %d", seed, q, k)
				assert.Equal(t, a.msn, pk.AETH.MSN, "seed %d QP %d answer %d", seed, q, k)
				if a.withValue {
					assert.Equal(t, a.orig, pk.AtomicAck, "seed %d QP %d answer %d", seed, q, k)
				}
			}
		}
		check(0, q0.acks, want)
		check(1, q1.acks, []ans{{ib.AtomicAcknowledge, 0x1F, 0, 1, w(in1 + 0x3F8), true}})
		assert.Equal(t, 1, p.rnaks, "seed %d: the misaligned atomic's NAK", seed)
		// Memory after: w(0x108) + 0x0102030405060708 + 2^63; the swap at
		// 0x110 and at QP 1's 0x3F8; w(0x118) unchanged (a miss writes the
		// original back); the misaligned word untouched.
		assert.Equal(t, w(in0+0x108)+0x0102030405060708+1<<63, end(in0+0x108))
		assert.Equal(t, uint64(0x1122334455667788), end(in0+0x110))
		assert.Equal(t, w(in0+0x118), end(in0+0x118))
		assert.Equal(t, w(in0+0x120), end(in0+0x120))
		assert.Equal(t, w(in0+0x128), end(in0+0x128))
		assert.Equal(t, uint64(0x0F0E0D0C0B0A0908), end(in1+0x3F8))
		// Host blocks the run changes: the atomics' block at +0x100, the
		// WRITE's five (+0x300..+0x42B: blocks +0x300 .. +0x400), QP 1's
		// block at +0x3C0, and the two SENDs' CQEs.
		changed := 0
		for b := range p.mem {
			if string(p.mem[b]) != string(p.want[b]) {
				changed++
			}
		}
		assert.Equal(t, 1+5+1+2, changed, "seed %d", seed)
		assert.Equal(t, 2, p.ncqe, "seed %d", seed)
	}
}

// TestTopAtomicCosim: the bench on the atomic scenario, seeds 1 and 2.
func TestTopAtomicCosim(t *testing.T) {
	topSeeds(t, hcaTopTree, newTopAtomicPlan, func(t *testing.T, p *topPlan, res *topResult) {
		assert.Equal(t, 1, res.counters["rsp_naks"], "the misaligned atomic's NAK")
		t.Logf("%s", res.summary)
	})
}

// TestTopAtomicMutantsFail: slips in hca_transport's atomic wiring each
// fail the atomic scenario's run (seed 1): the AtomicETH's swap/add data
// not wired into the responder (every FETCH_ADD adds 0, every CMP_SWAP
// that hits writes 0), the responder's rd1 blocks not wired (every
// original value 0), the ATOMIC ACKNOWLEDGE flag not wired into
// hca_ack_tx (each atomic answered as an ACKNOWLEDGE).
func TestTopAtomicMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	files := hcaTopTree(t)
	const tr = "hca_transport.v"
	topMutantsFail(t, files, newTopAtomicPlan, []cosimMutant{
		{"hca_transport: the swap/add data not wired", tr, ".rq_imm(rq_imm), .rq_swap(rq_swap)", ".rq_imm(rq_imm), .rq_swap(64'd0)"},
		{"hca_transport: the responder's rd1 blocks not wired", tr, ".rd_rsp_valid(c_rd_rsp_valid), .rd_rsp_data(pay_rsp_data)",
			".rd_rsp_valid(c_rd_rsp_valid), .rd_rsp_data(512'd0)"},
		{"hca_transport: ack_atomic not wired into hca_ack_tx", tr, ".ack_atomic(rs_ack_atomic), .ack_orig(rs_ack_orig), .ack_res(rs_ack_res), .ack_last(rs_ack_last),\n" +
			"        .fin_valid(rs_fin_valid), .fin_qpn(rs_fin_qpn), .fin_res(rs_fin_res), .fin_psn(rs_fin_psn),\n        .rd_req_valid(b_rd_valid)",
			".ack_atomic(1'b0), .ack_orig(rs_ack_orig), .ack_res(rs_ack_res), .ack_last(rs_ack_last),\n" +
				"        .fin_valid(rs_fin_valid), .fin_qpn(rs_fin_qpn), .fin_res(rs_fin_res), .fin_psn(rs_fin_psn),\n        .rd_req_valid(b_rd_valid)"},
	})
}
