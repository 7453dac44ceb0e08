package rtl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_top receiving SENDs into receive WQEs of several elements ----
//
// TestTopRecvListCosim runs cosim_top_test.go's bench (topTB, topPlan) on
// two QPs whose receive queues have strides of several 16-byte segments
// (rq_cfg_log_stride, hca_top's MAX_RSGE 32): software posts receive WQEs
// of lists (hca.EncodeRecvWQE in the queue's stride: the elements, the
// terminator after fewer than the stride holds), the far end sends SENDs
// into them, and the whole top answers: hca_rq reads the WQEs
// (hca.RecvReadStride's bytes, judgeRQReads) and decodes them, the
// responder checks every element's L_Key through hca_key_check and the
// MPT and scatters the bytes over the list through wr0. Checked as for
// every topPlan: the host bytes (each SEND's scattered as
// hca.Device.scatter places them, nothing else changed but the CQ rings),
// every CQE (status, byte_len, index), every ACK and NAK byte for byte.

// topRecvListScenario gives QP 0 (MTU 256) a stride of 2^(1 + seed mod 4)
// segments (4 and 8 at the test's seeds 1 and 2; TestRQStrideCosim covers
// every stride at the block) and QP 1 (MTU 512) one of 32, the largest
// (MAX_RSGE 32: a WQE of 512 bytes, four host reads of MRRS 128); the
// lists' sizes and places are drawn from seed. It posts to
// each, in this order, receive WQEs of:
//
//   - a list of 2 to 2^rls − 1 elements (a terminator after them), one in
//     three of 0 bytes, for a SEND of at least half its bytes, several
//     packets;
//   - a full list (2^rls elements, no terminator) for a SEND with
//     immediate of all its bytes;
//   - one element (sgl nil: a terminator follows it in the stride) for a
//     SEND of part of it;
//   - mlx5's empty list for a SEND of 0 bytes;
//   - a list taken by an RDMA WRITE with immediate (its buffer untouched);
//   - the failure: QP 0 a list shorter than its SEND (LOC_LEN_ERR, NAK
//     invalid request), QP 1 a list whose last element passes its region's
//     end (LOC_PROT_ERR, NAK remote operational error);
//   - one more, flushed (WR_FLUSH_ERR) once the QP is in ERR.
//
// The elements lie one after another in the QP's inbound region with gaps
// of 0 to 40 bytes, at any byte address.
func topRecvListScenario(seed uint64) []*topQP {
	r := rand.New(rand.NewPCG(seed, 0x1157))
	w := topWRs(0x7000_0000_0000, 3, 0xA0B0C000)
	qps := []*topQP{
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000A10, dlid: 0x21, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xD0000, psn: 0x10, mtuCode: 1, cqn: 0},
			msgs: []topMsg{{wr: w(hca.WRSend, 0, 0x40, 100)}}, batch: 1, rls: 1 + int(seed%4)},
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001B01, dlid: 0x22, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xD0001, psn: 0x200, mtuCode: 2, cqn: 1},
			msgs: []topMsg{{wr: w(hca.WRRDMAWrite, 1, 0x11, 200)}}, batch: 1, rls: 5},
	}
	for q, qp := range qps {
		cur := uint64(r.IntN(64)) // the next free byte of the inbound region
		list := func(cnt, most int) []topIn {
			l := make([]topIn, cnt)
			for i := range l {
				cur += uint64(r.IntN(41))
				l[i] = topIn{off: cur, n: uint32(1 + r.IntN(most))}
				if r.IntN(3) == 0 {
					l[i].n = 0
				}
				cur += uint64(l[i].n)
			}
			return l
		}
		sum := func(l []topIn) uint32 {
			s := uint32(0)
			for _, e := range l {
				s += e.n
			}
			return s
		}
		segs := 1 << qp.rls
		// A list with a terminator; a SEND of half its bytes or more.
		// (2 to segs − 1 elements; in a stride of two, one: the terminator
		// takes the second segment.)
		l1 := list(max(1, 2+r.IntN(max(1, segs-2))), 300)
		l1[0].n = max(l1[0].n, 1)
		s1 := sum(l1)
		qp.recv = append(qp.recv, topIn{sgl: l1})
		qp.in = append(qp.in, topIn{n: s1/2 + uint32(r.IntN(int(s1-s1/2)+1)), op: hca.WRSend})
		// A full list: every segment an element.
		l2 := list(segs, 1200/segs)
		s2 := sum(l2)
		qp.recv = append(qp.recv, topIn{sgl: l2})
		qp.in = append(qp.in, topIn{n: s2, op: hca.WRSendImm, imm: 0x5150_0000 + uint32(q)})
		// One element.
		cur += uint64(r.IntN(41))
		one := topIn{off: cur, n: uint32(100 + r.IntN(400))}
		cur += uint64(one.n)
		qp.recv = append(qp.recv, one)
		qp.in = append(qp.in, topIn{n: uint32(1 + r.IntN(int(one.n))), op: hca.WRSend})
		// mlx5's empty list, a SEND of 0 bytes.
		qp.recv = append(qp.recv, topIn{sgl: []topIn{}})
		qp.in = append(qp.in, topIn{n: 0, op: hca.WRSend})
		// A WRITE with immediate takes a list and writes at its RETH.
		qp.recv = append(qp.recv, topIn{sgl: list(2, 50)})
		cur += uint64(r.IntN(41))
		qp.in = append(qp.in, topIn{off: cur, n: uint32(1 + r.IntN(300)), op: hca.WRRDMAWriteImm, imm: 0x7EA0_0000 + uint32(q)})
		cur += 300
		// The failure.
		bad := list(2+r.IntN(3), 200)
		if q == 0 {
			qp.in = append(qp.in, topIn{n: sum(bad) + 1 + uint32(r.IntN(200)), op: hca.WRSend})
		} else {
			// The last element's bytes pass the region's end by 1 to 16.
			bad = append(bad, topIn{off: topInStep - uint64(8+r.IntN(8)), n: 24})
			qp.in = append(qp.in, topIn{n: 1 + uint32(r.IntN(int(sum(bad[:len(bad)-1])+1))), op: hca.WRSend})
		}
		qp.recv = append(qp.recv, topIn{sgl: bad})
		// One more, flushed.
		qp.recv = append(qp.recv, topIn{sgl: list(2, 100)})
		if cur > topInStep-64 {
			panic(fmt.Sprintf("topRecvListScenario: QP %d's elements reach byte %d of its %d-byte region", q, cur, topInStep))
		}
	}
	return qps
}

func newTopRecvListPlan(seed uint64) *topPlan {
	return newTopPlanOf(seed, topRecvListScenario(seed), 0, false)
}

// TestTopRecvListPlan: the model does in the scenario what its comment
// says, for both seeds.
func TestTopRecvListPlan(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		p := newTopRecvListPlan(seed)
		for q, qp := range p.qps {
			msg := fmt.Sprintf("seed %d QP %d (stride %d)", seed, q, 1<<qp.rls)
			require.Len(t, qp.in, 6, msg)
			// Receive CQEs in order, the receive WQE index k for message
			// k: the four SENDs' RESP_SEND (2) or RESP_SEND_IMM (3) with
			// byte_len their bytes and status 0; the WRITE with
			// immediate's RESP_WR_IMM (1), the RETH's length; the failure
			// with LOC_LEN_ERR or LOC_PROT_ERR; then WQE 6, flushed.
			require.Len(t, qp.rcqes, 7, msg)
			for k, c := range qp.rcqes[:5] {
				got := hca.DecodeCQE(c)
				assert.Equal(t, uint16(k), got.Counter, msg)
				assert.Equal(t, qp.in[k].n, got.ByteCnt, "%s: CQE %d", msg, k)
				assert.Equal(t, hca.WCSuccess, got.Status, "%s: CQE %d", msg, k)
			}
			assert.Equal(t, uint8(hca.CQERespSendImm), hca.DecodeCQE(qp.rcqes[1]).Opcode, msg)
			assert.Equal(t, uint8(hca.CQERespWrImm), hca.DecodeCQE(qp.rcqes[4]).Opcode, msg)
			fail := hca.DecodeCQE(qp.rcqes[5])
			flush := hca.DecodeCQE(qp.rcqes[6])
			assert.Equal(t, uint16(5), fail.Counter, msg)
			assert.Equal(t, uint16(6), flush.Counter, msg)
			assert.Equal(t, hca.WCWRFlushErr, flush.Status, msg)
			// The NAK ends the QP's responses: syndrome 0x61 (invalid
			// request, the length error) or 0x63 (remote operational
			// error, the L_Key), at the failing SEND's first PSN.
			last := qp.acks[len(qp.acks)-1]
			want := map[int]byte{0: 0x61, 1: 0x63}[q]
			assert.Equal(t, want, last[8+12], "%s: the NAK's AETH syndrome", msg)
			if q == 0 {
				assert.Equal(t, hca.WCLocLenErr, fail.Status, msg)
			} else {
				assert.Equal(t, hca.WCLocProtErr, fail.Status, msg)
			}
			// The scatter, from first principles, for SENDs 0 and 1 (a
			// list with a terminator, a full list): byte j of the SEND
			// (the far end's payload, topRemoteBytes of its address: the
			// far requester's WR at the region's base + off, 0) lands in
			// the element whose lengths before it sum to at most j, at
			// its address plus the rest; elements of 0 bytes take none.
			base := uint64(topInBase + q*topInStep)
			img := func(a uint64) byte { return p.want[a/BlockBytes][a%BlockBytes] }
			for k := range 2 {
				sgl, n := qp.recv[k].sgl, int(qp.in[k].n)
				pay := topRemoteBytes(base+qp.in[k].off, n)
				j := 0
				for _, e := range sgl {
					for b := 0; b < int(e.n) && j < n; b++ {
						require.Equal(t, pay[j], img(base+e.off+uint64(b)), "%s: SEND %d's byte %d", msg, k, j)
						j++
					}
				}
				assert.Equal(t, n, j, msg)
			}
		}
	}
}

// TestTopRecvListCosim: the bench on the list scenario, seeds 1 and 2.
func TestTopRecvListCosim(t *testing.T) {
	topSeeds(t, hcaTopTree, newTopRecvListPlan, func(t *testing.T, p *topPlan, res *topResult) {
		// Per QP 7 receive CQEs and 1 send CQE; 2 NAKs (one a QP).
		assert.Equal(t, 2*(7+1), res.counters["cqes"])
		assert.Equal(t, 2, res.counters["rsp_naks"])
		t.Logf("strides %d, %d: %s", 1<<p.qps[0].rls, 1<<p.qps[1].rls, res.summary)
	})
}
