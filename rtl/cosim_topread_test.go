package rtl

import (
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
	w := topWRs(0x7200_0000_0000, 3, 0xC0D0E000)
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
		// bytes: LAST alone). Its CQ has 2 entries and software consumes
		// none: its third CQE overruns it.
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001D31, dlid: 0x42, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xF0001, psn: 0xFFFFF0, mtuCode: 5, cqn: 1},
			msgs:  []topMsg{{wr: w(hca.WRSend, 1, 0x11, 5000)}, {wr: w(hca.WRRDMAWriteImm, 1, 0x2000, 64)}, {wr: w(hca.WRRDMARead, 1, 0x3000, 100)}},
			batch: 1, inAccess: hca.AccessRemoteRead, cqLog: 1, overrun: true,
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
	// QP 1's CQ of 2 entries, nothing consumed: its SEND's and WRITE with
	// immediate's CQEs at slots 0 and 1 (hca.CQESlot: pi - ci < 2), the
	// READ's third finds it full: dropped, CQ 1's overrun flag set.
	assert.Equal(t, []int{0, 1}, p.qps[1].slots)
	assert.Equal(t, 1<<1, p.overruns)
	// Host blocks the run changes: the QPs' CQEs (3 + 2), the READs'
	// payloads their own requests fetch (700 bytes at 0x3000: 11 blocks,
	// 100 at 0x9000: 2), QP 0's inbound WRITE of 100 at 0x15000 (2
	// blocks); no responder READ writes anything.
	changed := 0
	for b := range p.mem {
		if string(p.mem[b]) != string(p.want[b]) {
			changed++
		}
	}
	assert.Equal(t, 5+11+2+2, changed)
}

// TestTopReadCosim: the bench on the READ scenario, seeds 1 and 2.
func TestTopReadCosim(t *testing.T) {
	topSeeds(t, hcaTopTree, newTopReadPlan, func(t *testing.T, p *topPlan, res *topResult) {
		t.Logf("%s", res.summary)
	})
}

// ---- hca_top's requester retrying its READs: a response the wire loses ----
//
// TestTopReadRetryCosim runs the bench on TestTopRetryCosim's design
// (RETRY_CNT 3, the local ACK timer of 1024 cycles) with READ responses
// the wire loses on their way to the HCA (topQP.rxLose): the requester
// drops the responses after a gap inside a READ and asks again for the
// rest when its timer expires, or at once when a later message's ACK
// arrives (an implied NAK), as hca.Requester.OnTimeout, impliedNAK and
// Next do: a READ request from the first PSN not answered, its VA and
// length advanced by the bytes received; the far end replays that part
// from its responder resource (MIDDLE ... LAST). Expected: the model's
// requester and far end run in turn (newTopPlanOf), every packet, CQE and
// host byte checked as in the other runs.

// topReadRetryScenario: three QPs, each a READ whose reply loses one
// response.
func topReadRetryScenario() []*topQP {
	w := topWRs(0x7400_0000_0000, 11, 0xE0F0A000)
	return []*topQP{
		// A middle response lost, the timer: a READ of 1000 bytes into an
		// odd address (4 responses), its second lost; a SEND posted once
		// it is complete.
		{it: &reqItem{cfg: true, qix: 0, qpn: 0x000B50, dlid: 0x61, slid: topPortLID, sl: 0, vl: 0, rqpn: 0xB0000, psn: 0x700, mtuCode: 1, cqn: 0},
			msgs:  []topMsg{{wr: w(hca.WRRDMARead, 0, 0x1003, 1000)}, {wr: w(hca.WRSend, 0, 0x40, 30)}},
			batch: 1, late: true, rxLose: []int{1}},
		// The last response lost, an implied NAK: a READ of 3000 bytes (3
		// responses), the last lost, and a SEND behind it, whose ACK
		// arrives past the READ (the READ asks again for its last
		// response; the SEND, acknowledged, is not resent).
		{it: &reqItem{cfg: true, qix: 1, qpn: 0x001C51, dlid: 0x62, slid: topPortLID, sl: 3, vl: 1, rqpn: 0xB0001, psn: 0xFFFFFE, mtuCode: 3, cqn: 1},
			msgs:  []topMsg{{wr: w(hca.WRRDMARead, 1, 0x800, 3000)}, {wr: w(hca.WRSend, 1, 0x2000, 100)}},
			batch: 2, rxLose: []int{2}},
		// The first response lost, the timer: a READ of 5000 bytes (2
		// responses), the FIRST lost, so the LAST is dropped and the
		// whole READ goes again.
		{it: &reqItem{cfg: true, qix: 2, qpn: 0x002D52, dlid: 0x63, slid: topPortLID, sl: 5, vl: 1, rqpn: 0xB0002, psn: 0x123456, mtuCode: 5, cqn: 2},
			msgs:  []topMsg{{wr: w(hca.WRRDMARead, 2, 0x201, 5000)}},
			batch: 1, rxLose: []int{0}},
	}
}

func newTopReadRetryPlan(seed uint64) *topPlan {
	p := newTopPlanOf(seed, topReadRetryScenario(), topRetryCnt, true)
	// QP 1's implied NAK must resend at once: within half the local ACK
	// timeout (topAckTick x 2^topRetryExp = 1024 cycles), sooner than the
	// timer could (it restarted at the READ's last response taken, just
	// before the ACK).
	p.promptWithin = topAckTick << topRetryExp / 2
	return p
}

// TestTopReadRetryPlan: the model does in the scenario what its comment
// says.
func TestTopReadRetryPlan(t *testing.T) {
	p := newTopReadRetryPlan(1)
	type req struct {
		op  ib.Opcode
		psn uint32
		va  uint64 // a READ request's RETH
		n   uint32
	}
	reqs := func(q int) []req {
		var out []req
		for _, w := range p.qps[q].wires {
			pk, err := ib.ParseWire(w[:wireLen(w)])
			require.NoError(t, err)
			out = append(out, req{pk.Opcode, pk.PSN, pk.RETH.VA, pk.RETH.Length})
		}
		return out
	}
	va := func(q int) uint64 { return p.qps[q].wqes[0].RemoteAddr }
	// QP 0 at MTU 256: the READ at 700 takes PSNs 700..703 (ceil(1000 /
	// 256) = 4); response 701 lost, 702 and 703 dropped (out of order
	// inside the READ); the timer: the READ again from 701, VA + 256,
	// 744 bytes; the far end replays 701..703 (MIDDLE, MIDDLE, LAST).
	// Then the late SEND, 704.
	assert.Equal(t, []req{{ib.RDMAReadRequest, 0x700, va(0), 1000}, {ib.RDMAReadRequest, 0x701, va(0) + 256, 744},
		{op: ib.SendOnly, psn: 0x704}}, reqs(0))
	// QP 1 at MTU 1024 from FFFFFE: the READ takes FFFFFE, FFFFFF, 0
	// (ceil(3000 / 1024) = 3), the SEND 1. Response 0 (the LAST) lost; the
	// SEND's ACK at 1 is past the READ: it acknowledges the SEND, and is an
	// implied NAK for the READ: go-back-N from the READ, its request for
	// the rest (PSN 0, VA + 2048, 952 bytes); the SEND, acknowledged, is
	// not sent again (hca.Requester.ackThrough, skipSent).
	assert.Equal(t, []req{{ib.RDMAReadRequest, 0xFFFFFE, va(1), 3000}, {op: ib.SendOnly, psn: 1},
		{ib.RDMAReadRequest, 0, va(1) + 2048, 952}}, reqs(1))
	// QP 2 at MTU 4096: the READ takes 123456, 123457; the FIRST lost, the
	// LAST dropped; the timer: the READ again whole.
	assert.Equal(t, []req{{ib.RDMAReadRequest, 0x123456, va(2), 5000}, {ib.RDMAReadRequest, 0x123456, va(2), 5000}}, reqs(2))
	// Two timeouts (QP 0's and QP 2's), no NAK; every WQE completes with
	// success.
	assert.Equal(t, 2, p.timeouts)
	// The ACK that is QP 1's implied NAK (its far end's packet 2: FIRST,
	// MIDDLE, then the ACK; the LAST lost) is the one resend judge times.
	assert.Equal(t, map[int]bool{2: true}, p.qps[1].prompt)
	assert.Nil(t, p.qps[0].prompt)
	assert.Nil(t, p.qps[2].prompt)
	assert.Equal(t, 0, p.naks)
	for q, qp := range p.qps {
		for k, c := range qp.cqes {
			assert.Equal(t, [2]byte{0, 0}, [2]byte{c[63] >> 4, c[55]}, "QP %d's CQE %d: a success", q, k)
		}
	}
	assert.Equal(t, 2+2+1, p.ncqe)
	// The READs' payloads at their local addresses, each byte once: 1000
	// bytes at 0x3003 (bytes 3..1002 of blocks 0x3000..0x33C0: 16), 3000
	// at 0x6800 (47), 5000 at 0xA201 (bytes 1..5000 of 79); and the 5
	// CQEs' slots.
	changed := 0
	for b := range p.mem {
		if string(p.mem[b]) != string(p.want[b]) {
			changed++
		}
	}
	assert.Equal(t, 16+47+79+5, changed)
	assert.Equal(t, 1000+3000+5000, p.nread)
}

// TestTopReadRetryCosim: the bench on the READ retry scenario (topRetryTree),
// seeds 1 and 2.
func TestTopReadRetryCosim(t *testing.T) {
	topSeeds(t, topRetryTree, newTopReadRetryPlan, func(t *testing.T, p *topPlan, res *topResult) {
		// QP 1's implied NAK: the ACK's last beat in to the READ's
		// resend on the link (judge: within promptWithin).
		errs, gaps := p.judgeRNRWaits(res)
		assert.Empty(t, errs)
		assert.Len(t, gaps, 1)
		t.Logf("%s; implied NAK to resend: %v cycles", res.summary, gaps)
	})
}
