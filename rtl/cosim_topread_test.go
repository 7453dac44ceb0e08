package rtl

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_top answering RDMA READs: hca_rx_ack, hca_responder, hca_ack_tx, hca_share_arb ----
//
// TestTopReadCosim runs cosim_top_test.go's bench (topTB, topPlan) on two
// QPs whose far ends send RDMA READ requests to the HCA's responder
// through the whole hca_top: hca_rx_ack decodes them, hca_responder checks
// the R_Key (hca_key_check, the MPT) and takes a responder resource,
// hca_ack_tx cuts each reply into responses, reads their payload from host
// memory through hca_share_arb's third arbiter on the requester's DMA
// client rd1 (so the responder's reads and the requester's payload reads
// share it) and sends them on the link beside the requester's packets.
// Among the READs: one of 0 bytes at an odd address, duplicates (whole,
// and from inside: the responder replays them from its resources, MIDDLE
// ... LAST), an R_Key failure (a READ running past its region: NAK remote
// access error, the context to ERR) and a WRITE after it (dropped). Each
// QP also sends messages of its own (an RDMA WRITE, a SEND, a READ), so
// hca_ack_tx's responses meet the requester's packets on the link and
// hca_share_arb serves both on rd1.
//
// Expected, from the model: the far end's requests from a hca.Requester
// (a duplicate made from its original as hca.Requester.Next resends a
// READ), the HCA's side a hca.Responder per QP (R_Keys
// hca.KeyTable.CheckRemote in the QP's PD); each READ's responses
// (NextReadResponse) with their payload from the host image, addressed as
// hca.Device.address does, ib.AppendWire's bytes. Checked as for every
// topPlan: every responder packet on the link byte for byte in its QP's
// order, apart from the QP's requests; rsp_acks, rsp_naks and rsp_dup
// equal the model's ACKs, NAKs and duplicates; rsp_errdrop the packets
// for a context in ERR; host memory unchanged but for what the model
// writes (a READ writes nothing at the responder).

// topReadScenario: QP 0 (MTU 256, VL 0) and QP 1 (MTU 4096, VL 1), each
// sending three messages of its own and receiving the far end's READs.
func topReadScenario() []*topQP {
	pay := func(q int, off uint64) uint64 { return topPayBase + uint64(q)*topPayStep + off }
	w := func(op hca.WROpcode, q int, off uint64, n uint32) hca.SendWR {
		return hca.SendWR{Opcode: op, Signaled: true, LocalAddr: pay(q, off), Length: n, RemoteAddr: 0x7200_0000_0000 + uint64(q)<<32 + off*3,
			RKey: 0x4400 + uint32(q), Imm: 0xC0D0E000 | uint32(q)<<8 | uint32(off&0xff)}
	}
	rd := func(off uint64, n uint32) topIn { return topIn{op: hca.WRRDMARead, off: off, n: n} }
	return []*topQP{
		// QP 0 at MTU 256: READs of 600 bytes (3 responses), 0 bytes at an
		// odd address, 1 byte, with an RDMA WRITE of 100 among them; the
		// first READ again whole, then from its response 1 (PSN 1, 344
		// bytes: MIDDLE, LAST); a READ of 300 bytes running 0x10 bytes
		// past the 8 KiB region (NAK remote access error, ERR); a WRITE
		// after it (dropped).
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000C30, dlid: 0x41, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xF0000, psn: 0x300, mtuCode: 1, cqn: 0},
			msgs:  []topMsg{{wr: w(hca.WRRDMAWrite, 0, 0x40, 2000)}, {wr: w(hca.WRSend, 0, 0x900, 300)}, {wr: w(hca.WRRDMARead, 0, 0x1000, 700)}},
			batch: 2,
			in: []topIn{rd(0x105, 600), {op: hca.WRRDMAWrite, off: 0x1000, n: 100}, rd(0x803, 0), rd(0x9FF, 1),
				{op: hca.WRRDMARead, dup: 1}, {op: hca.WRRDMARead, dup: 1, from: 1},
				rd(0x1F00, 0x110), {op: hca.WRRDMAWrite, off: 0x1800, n: 8}}},
		// QP 1 at MTU 4096, its inbound region open to remote reads only:
		// a READ of 5000 bytes at an odd address (2 responses), a READ of 64
		// at an aligned one, the first again from its response 1 (904
		// bytes: LAST alone).
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001D31, dlid: 0x42, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xF0001, psn: 0xFFFFF0, mtuCode: 5, cqn: 1},
			msgs:  []topMsg{{wr: w(hca.WRSend, 1, 0x11, 5000)}, {wr: w(hca.WRRDMAWriteImm, 1, 0x2000, 64)}, {wr: w(hca.WRRDMARead, 1, 0x3000, 100)}},
			batch: 1, inAccess: hca.AccessRemoteRead,
			in: []topIn{rd(0x203, 5000), rd(0x1800, 64), {op: hca.WRRDMARead, dup: 1, from: 1}}},
	}
}

func newTopReadPlan(seed uint64) *topPlan { return newTopPlanOf(seed, topReadScenario(), 0, false) }

// TestTopReadPlan: the model does in the scenario what its comment says.
func TestTopReadPlan(t *testing.T) {
	p := newTopReadPlan(1)
	type rsp struct {
		op  ib.Opcode
		psn uint32
		n   int   // payload bytes
		syn uint8 // the AETH syndrome (FIRST, LAST, ONLY, ACKNOWLEDGE)
	}
	parse := func(q int) []rsp {
		var out []rsp
		for _, w := range p.qps[q].acks {
			pk, err := ib.ParseWire(w[:wireLen(w)])
			require.NoError(t, err)
			out = append(out, rsp{op: pk.Opcode, psn: pk.PSN, n: len(pk.Payload), syn: pk.AETH.Syndrome})
		}
		return out
	}
	// QP 0 (MTU 256), PSNs from 0: READ 600 takes 0..2 (ceil(600 / 256) =
	// 3), the WRITE 3 (one packet, AckReq: an ACK at PSN 3, MSN 2), READ 0
	// bytes 4 (one response of none), READ 1 byte 5; the duplicate whole
	// at 0 (FIRST, MIDDLE, LAST again), from 1 at PSN 1 (MIDDLE 256, LAST
	// 88); the READ of 0x110 bytes at 0x1F00 ends at 0x2010, 0x10 past the
	// region: NAK remote access error (0x60 | 2) at its PSN, 6; the WRITE
	// after it is dropped (ERR).
	nak := uint8(hca.SynNAKAccess)
	assert.Equal(t, []rsp{
		{ib.RDMAReadResponseFirst, 0, 256, 0x1F}, {ib.RDMAReadResponseMiddle, 1, 256, 0}, {ib.RDMAReadResponseLast, 2, 88, 0x1F},
		{ib.Acknowledge, 3, 0, 0x1F},
		{ib.RDMAReadResponseOnly, 4, 0, 0x1F},
		{ib.RDMAReadResponseOnly, 5, 1, 0x1F},
		{ib.RDMAReadResponseFirst, 0, 256, 0x1F}, {ib.RDMAReadResponseMiddle, 1, 256, 0}, {ib.RDMAReadResponseLast, 2, 88, 0x1F},
		{ib.RDMAReadResponseMiddle, 1, 256, 0}, {ib.RDMAReadResponseLast, 2, 88, 0x1F},
		{ib.Acknowledge, 6, 0, nak},
	}, parse(0))
	// QP 1 (MTU 4096): READ 5000 at PSN 0, 1 (FIRST 4096, LAST 904), READ
	// 64 at 2 (ONLY), the duplicate from 1: PSN 1, LAST of 904 (a replay
	// from inside goes MIDDLE ... LAST: its only response is the LAST).
	assert.Equal(t, []rsp{
		{ib.RDMAReadResponseFirst, 0, 4096, 0x1F}, {ib.RDMAReadResponseLast, 1, 904, 0x1F},
		{ib.RDMAReadResponseOnly, 2, 64, 0x1F},
		{ib.RDMAReadResponseLast, 1, 904, 0x1F},
	}, parse(1))
	// The responses' payload is the host's bytes at the READ's VA: QP 1's
	// duplicate's LAST carries bytes 4096..4999 of the READ at 0x203 of
	// its region (topInBase + 0x2000).
	last := p.qps[1].acks[3]
	pk, err := ib.ParseWire(last[:wireLen(last)])
	require.NoError(t, err)
	for i, v := range pk.Payload {
		a := topInBase + topInStep + 0x203 + 4096 + i
		require.Equal(t, p.mem[a/BlockBytes][a%BlockBytes], v, "byte %d", i)
	}
	// Counters: ACKs 1 (the WRITE's), NAKs 1, duplicates 3 (QP 0's two,
	// QP 1's one); the WRITE after the failure is dropped in ERR (no ACK,
	// its 8 bytes not written).
	assert.Equal(t, 1, p.rnaks)
	assert.Equal(t, 3, p.rdups)
	assert.Equal(t, 1, p.rerrs)
	// Host blocks the run changes: the QPs' CQEs (3 + 3), the READs'
	// payloads their own requests fetch (700 bytes at 0x3000: 11 blocks,
	// 100 at 0x9000: 2), QP 0's inbound WRITE of 100 at 0x15000 (2
	// blocks); no responder READ writes anything.
	changed := 0
	for b := range p.mem {
		if string(p.mem[b]) != string(p.want[b]) {
			changed++
		}
	}
	assert.Equal(t, 6+11+2+2, changed)
}

// TestTopReadCosim: the bench on the READ scenario, seeds 1 and 2.
func TestTopReadCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	files := hcaTopTree(t)
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			p := newTopReadPlan(seed)
			dir := t.TempDir()
			if d := os.Getenv("TOP_DIR"); d != "" && seed == 1 {
				dir = d
			}
			res := p.run(t, t.Context(), dir, seed, files, nil)
			assert.Empty(t, p.judge(res))
			t.Logf("%s", res.summary)
		})
	}
}
