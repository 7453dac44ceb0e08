package rtl

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/ib"
)

// ---- atomics wired: hca_rx_ack -> hca_responder -> hca_ack_tx, rd1 shared ----
//
// The block run's atomics (newRespRunAtomics: WRITEs, READs and FETCH_ADD
// and CMP_SWAP among them, their duplicates, misaligned VAs, key failures,
// PSN gaps; RD_RES 4) go as wire packets through hca_rx_ack (its AtomicETH
// decode, local and behind a GRH; one atomic in eight with bytes past the
// AtomicETH, which the model ignores; malformed atomics, PktLen short of
// the AtomicETH or of PadCnt's bytes, which ib.ParseWire refuses and
// hca_rx_ack drops on hdr_err) into hca_responder, whose atomic reads go
// through rd1 as hca_share_arb's client c (with hca_ack_tx's READ payload
// reads and the requester's stand-in reads) and whose ATOMIC ACKNOWLEDGEs
// hca_ack_tx builds. respWire's checks hold (cosim_respwire_test.go): the
// packets on tx_* are ib.AppendWire's of the model's, ATOMIC ACKNOWLEDGEs
// included (respOutWire), host memory's atomic words are the model's
// (the testbench's atomic memory takes every wr0 byte and answers rd1
// from it), each atomic read is its model atomic's block, in order, and
// hca_rx_ack counts the malformed atomics on hdr_err, nothing on not_req
// but the requests the responder does not take.

// newRespWireAtomics is a wired run with atomics, and the requester's
// stand-in reading through rd1 (as newRespWireReads).
func newRespWireAtomics(seed uint64, steps int) *respWire {
	w := newRespWireRun(newRespRunAtomics(seed, 1, 4), seed, steps)
	for range steps / 2 {
		mr := w.run.readRegions[w.r.IntN(3)]
		n := uint64(1 + w.r.IntN(600))
		w.rdq = append(w.rdq, [2]uint64{mr.Addr + uint64(w.r.IntN(int(mr.Length)-int(n))), n})
	}
	return w
}

// respWireAtomicSteps is the wired atomic run's length; the mutant runs'
// is respWireAtomicMutantSteps.
const (
	respWireAtomicSteps       = 250
	respWireAtomicMutantSteps = 160
)

// TestResponderWiredAtomicCosim: one seed of the wired atomic run against
// the model (respWire's checks, above). The run must exercise what it is
// for: atomics executed (CMP_SWAP hits and misses, FETCH_ADDs) and replayed,
// misaligned, each opcode local and behind a GRH, some with bytes past the
// AtomicETH, malformed atomics dropped, atomic reads sharing rd1.
func TestResponderWiredAtomicCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	seed := cosimSeeds[0]
	w := newRespWireAtomics(seed, respWireAtomicSteps)
	res := runRespWire(t, context.Background(), t.TempDir(), w, seed, nil)
	assert.Empty(t, w.check(res))
	atomAcks, reads := 0, 0
	for _, o := range w.run.out {
		if o.rsp == nil && o.ack.rd == 4 {
			atomAcks++
		}
	}
	for _, d := range res.reads {
		if d[0] == 2 {
			reads++
		}
	}
	t.Logf("%d rx entries, %d cycles; %d responder packets on tx_* (%d ATOMIC ACKNOWLEDGEs), %d atomic reads on rd1, "+
		"%d malformed atomics dropped; atomics %v; %v", len(w.ents), res.resp.cycles, len(w.run.out), atomAcks, reads, w.bad, w.atoms, w.run.byKind)
	for _, k := range []string{"atomic", "atomic duplicate", "CMP_SWAP hit", "CMP_SWAP miss", "atomic misaligned", "READ < MTU"} {
		assert.Positive(t, w.run.byKind[k], "decisions of kind %q", k)
	}
	for _, op := range []ib.Opcode{ib.FetchAdd, ib.CompareSwap} {
		for _, g := range []bool{false, true} {
			assert.Positive(t, w.atoms[respWireSendKind(op, g)], "atomics %q", respWireSendKind(op, g))
		}
	}
	past := 0
	for k, n := range w.atoms {
		if strings.HasSuffix(k, "with bytes past it") {
			past += n
		}
	}
	assert.Positive(t, past, "atomics with bytes past the AtomicETH")
	assert.Positive(t, w.bad, "malformed atomics")
	assert.Positive(t, atomAcks, "ATOMIC ACKNOWLEDGEs on tx_*")
	assert.Equal(t, len(w.run.atomReads), reads, "atomic reads on rd1")
}

// TestResponderWiredAtomicMutantsFail: slips in the atomics' wiring (the
// decode, the routing, the ATOMIC ACKNOWLEDGE, rd1's third client) each
// fail a wired atomic run of respWireAtomicMutantSteps steps; the
// unmutated blocks pass it.
func TestResponderWiredAtomicMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const rx, arb, atx = "hca_rx_ack.v", "hca_share_arb.v", "hca_ack_tx.v"
	for _, m := range []cosimMutant{
		{"unmutated", "", "", ""},
		{"atomics not routed to the responder (counted on not_req)", rx, "wire         rq_req = pay_req || rd_req || at_req;", "wire         rq_req = pay_req || rd_req;"},
		{"a CMP_SWAP routed as a FETCH_ADD", rx, "rq_op     <= opcode;", "rq_op     <= opcode == 8'h13 ? 8'h14 : opcode;"},
		{"swap and compare data exchanged", rx, "{rq_va, rq_rkey, rq_swap, rq_cmp} <= c_data[511-8*20 -: 224];", "{rq_va, rq_rkey, rq_cmp, rq_swap} <= c_data[511-8*20 -: 224];"},
		{"the AtomicETH behind a GRH not loaded from the second beat", rx, "if (take && !c_sop && p_gaq && p_beat == 7'd1)", "if (1'b0)"},
		{"the AtomicETH's length not required", rx, "(at_req ? 11'd7 : 11'd0)", "11'd0"},
		{"an atomic's PadCnt bytes not required", rx, "((rd_req || at_req) && (pktlen < rsp_w || (pktlen == rsp_w && padcnt != 2'd0)))",
			"((rd_req || at_req) && (pktlen < rsp_w))"},
		{"the ATOMIC ACKNOWLEDGE sent as an ACKNOWLEDGE", atx, "ack_atomic ? 8'h12 : 8'h11", "8'h11"},
		{"the ATOMIC ACKNOWLEDGE's PktLen an ACK's", atx, "ack_atomic ? 11'd9 : 11'd7", "11'd7"},
		{"the AtomicAckETH little-endian", atx, "ack_atomic ? ack_orig : 64'd0",
			"ack_atomic ? {ack_orig[7:0], ack_orig[15:8], ack_orig[23:16], ack_orig[31:24], ack_orig[39:32], ack_orig[47:40], ack_orig[55:48], ack_orig[63:56]} : 64'd0"},
		{"rd1's client c never granted", arb, ".b_req_valid(c_rd_req_valid),", ".b_req_valid(1'b0),"},
		// As hca_responder read before rd1's reads were bytes: the
		// atomic's whole block, not the model's 8 bytes (checkReads).
		{"an atomic's whole 64-byte block read", "hca_responder.v",
			"assign rd_req_addr  = h_va; ", "assign rd_req_addr  = {h_va[63:6], 6'd0}; "},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			respWireFirstFailing(t, m, respWireAtomicMutantSteps, func(steps int) *respWire { return newRespWireAtomics(cosimSeeds[0], steps) },
				"the wired atomic co-simulation passes with %s")
		})
	}
}
