package rtl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_responder's claimRes: a READ or atomic beyond max_rd_atomic ----
//
// The model (hca.Responder.claimRes) gives a new READ or atomic the QP's
// oldest responder resource (a ring of max_rd_atomic), unless that holds a
// READ one of whose responses has never gone to the wire (rdAtomicRes.
// inUse: ReadResponseSent has not seen its last PSN): then the requester
// has more than max_rd_atomic outstanding, and the responder NAKs it
// invalid request at its PSN with the current MSN, the QP to ERR (class
// C). hca_responder frees a resource when hca_ack_tx says its READ's last
// response was picked by the port (fin_*). respTB with HOLD 1 keeps each
// reply's fin_* until the stream's release entry, and the run holds the
// model's ReadResponseSent until the same point (respRun.holdFins), so
// whether a resource is free when a request claims it is the stream's
// doing, not the timing's.

// respClaimDirected is the directed run on context 0 (MTU 256, PD 0's
// REMOTE_READ region, RD_RES 2, ACK_COALESCE 1), its expected answers
// derived by hand in TestResponderClaimCosim: the run, the QPN, the first
// QP's first PSN and the second's.
func respClaimDirected(seed uint64) (run *respRun, qpn, p0, q1, r1 uint32) {
	run = newRespRunReads(seed, 1, 2)
	run.holdFins = true
	run.abase = 0x7654_3200 // 512-aligned, below every WRITE region
	q := run.directedStart(256, run.cfg.MinRNRTimer)
	qpn, p0 = q.qpn, q.next
	rr := run.readRegions[0] // PD 0's
	am := run.table.Register(q.pd, run.abase, 512, hca.AccessRemoteAtomic)
	psn := func(base uint32, k uint32) uint32 { return (base + k) & 0xffffff }
	read := func(p uint32, off uint64, n uint32) {
		run.send(q, &respPkt{qpn: q.qpn, psn: p, op: ib.RDMAReadRequest, ackReq: true, va: rr.Addr + off, rkey: rr.RKey, dlen: n})
	}
	fadd := func(p uint32, off uint64) {
		run.send(q, &respPkt{qpn: q.qpn, psn: p, op: ib.FetchAdd, ackReq: true, va: run.abase + off, rkey: am.RKey, swap: 1})
	}
	// 1: READ A of 600 bytes at P (P..P+2): resource 0, reply held.
	read(p0, 0x100, 600)
	// 2: READ B of 100 at P+3: resource 1, held.
	read(psn(p0, 3), 0x500, 100)
	// 3: A's responses sent: resource 0 free.
	run.release()
	// 4: READ C of 0 bytes at P+4 (no key check): resource 0 again.
	read(psn(p0, 4), 0, 0)
	// 5: READ D of 300 at P+5: resource 1 still holds B, unsent: NAK
	// invalid request at P+5, ERR.
	read(psn(p0, 5), 0x800, 300)
	// 6: D again: dropped in ERR.
	read(psn(p0, 5), 0x800, 300)
	// 7: a new QP at Q (its resources empty): READ E of 512 at Q (Q, Q+1):
	// resource 0, held; FETCH_ADD at Q+2: resource 1; FETCH_ADD at Q+3:
	// resource 0 holds E, unsent: NAK invalid request at Q+3, ERR.
	q = run.directedReconfig(256, run.cfg.MinRNRTimer)
	q1 = q.next
	read(q1, 0x1000, 512)
	fadd(psn(q1, 2), 8)
	fadd(psn(q1, 3), 16)
	// 8: a new QP at R: READ G of 256 at R (resource 0), released; G
	// again (a duplicate: replayed whole from resource 0, its fin held);
	// READ H of 100 at R+1 (resource 1); READ I of 64 at R+2 takes
	// resource 0 again (G was sent); G's replay released (its fin names
	// G's last PSN, R: stale, resource 0 holds I, whose last is R+2, unsent),
	// H released; READ J of 32 at R+3 takes resource 1; READ K of 16 at
	// R+4 finds resource 0 holding I: NAK.
	// First the three replies still held (B, C, E: the earlier QPs'),
	// oldest first: their resources were emptied by the context write,
	// so their fins free nothing.
	q = run.directedReconfig(256, run.cfg.MinRNRTimer)
	r1 = q.next
	run.release()
	run.release()
	run.release()
	read(r1, 0x2000, 256)
	run.release()
	read(r1, 0x2000, 256)
	read(psn(r1, 1), 0x2100, 100)
	read(psn(r1, 2), 0x2200, 64)
	run.release()
	run.release()
	read(psn(r1, 3), 0x2300, 32)
	read(psn(r1, 4), 0x2400, 16)
	run.stream[len(run.stream)-1].gap = true
	return run, qpn, p0 & 0xffffff, q1, r1
}

// TestResponderClaimCosim: the directed claimRes cases through the model
// and hca_responder (respTB, HOLD 1); the model's answers are first
// checked against the values derived by hand, then the RTL's against the
// model's.
func TestResponderClaimCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	run, a, p, q, r := respClaimDirected(cosimSeeds[0])
	at := func(base, k uint32) uint32 { return (base + k) & 0xffffff }
	rr := run.readRegions[0]
	want := []respAck{
		{a, at(p, 0), 0x1F, 1, 1, rr.Addr + 0x100, 600},       // 1: A's reply (resource 0), MSN 1
		{a, at(p, 3), 0x1F, 2, 1, rr.Addr + 0x500, 100},       // 2: B's reply (resource 1), MSN 2
		{a, at(p, 4), 0x1F, 3, 1, rr.Addr, 0},                 // 4: C's reply: resource 0, freed by A's release, MSN 3
		{a, at(p, 5), 0x61, 3, 0, 0, 0},                       // 5: D: resource 1 holds B unsent: NAK invalid request at D's PSN, MSN 3
		{a, at(q, 0), 0x1F, 1, 1, rr.Addr + 0x1000, 512},      // 7: E's reply (resource 0), MSN 1
		{a, at(q, 2), 0x1F, 2, 4, respWord(run.abase + 8), 0}, // the FETCH_ADD at Q+2 (resource 1): its original value, MSN 2
		{a, at(q, 3), 0x61, 2, 0, 0, 0},                       // the FETCH_ADD at Q+3: resource 0 holds E unsent: NAK, MSN 2
		{a, at(r, 0), 0x1F, 1, 1, rr.Addr + 0x2000, 256},      // 8: G's reply, MSN 1
		{a, at(r, 0), 0x1F, 1, 1, rr.Addr + 0x2000, 256},      //    G's replay: the current MSN, from its FIRST (its PSN is G's first)
		{a, at(r, 1), 0x1F, 2, 1, rr.Addr + 0x2100, 100},      //    H (resource 1), MSN 2
		{a, at(r, 2), 0x1F, 3, 1, rr.Addr + 0x2200, 64},       //    I (resource 0 again), MSN 3
		{a, at(r, 3), 0x1F, 4, 1, rr.Addr + 0x2300, 32},       //    J (resource 1, H released), MSN 4
		{a, at(r, 4), 0x61, 4, 0, 0, 0},                       //    K: resource 0 holds I unsent (the replay's fin was stale): NAK, MSN 4
	}
	assert.Equal(t, want, run.acks, "the model's ACKs, NAKs and replies")
	// Dropped in ERR: D again (6). NAKs: D's, the FETCH_ADD's and K's; a
	// duplicate: G's.
	assert.Equal(t, respCounts{naks: 3, errDrop: 1, dup: 1}, run.want, "the model's counts")
	res := runResp(t, context.Background(), t.TempDir(), run, 1, nil)
	assert.Empty(t, run.check(res), "hca_responder against the model")
	t.Logf("%d entries, %d cycles, %d ACKs/NAKs", len(run.stream), res.cycles, len(res.acks))
}

// TestResponderClaimMutantsFail: each slip in claimRes fails the directed
// run (respClaimDirected).
func TestResponderClaimMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const f = "hca_responder.v"
	for _, m := range []cosimMutant{
		// The oldest resource recycled whatever it holds (the RTL before):
		// D and the second FETCH_ADD accepted.
		{"a resource in use recycled", f, "wire         r_busy  = res_used[r_e] && !res_atom[r_e] && !res_sent[r_e];", "wire         r_busy  = 1'b0;"},
		// Freed too early: at the READ's acceptance, not its last
		// response's fin.
		{"a resource freed at its READ's acceptance", f, "res_sent[r_e] <= 1'b0;   // after fin_hit", "res_sent[r_e] <= 1'b1;   // after fin_hit"},
		// Freed too late: never (the fin ignored): C NAKed.
		{"a resource never freed", f, "if (fin_hit) res_sent[fin_e] <= 1'b1;", ""},
		// The fin frees the resource after its own (an index slip): A's
		// frees resource 1 (B's, while B is unsent), so C finds resource
		// 0 in use (NAK) and D finds resource 1 free.
		{"the fin frees the next resource", f, "fin_qpn[QPN_W-1:0]} * RD_RES + {24'd0, fin_res};", "fin_qpn[QPN_W-1:0]} * RD_RES + {24'd0, fin_res} + 32'd1;"},
		{"the NAK's syndrome remote access error", f, "if (a_mis || r_full) p_syn <= SYN_INV;", "if (a_mis) p_syn <= SYN_INV; else if (r_full) p_syn <= SYN_ACC;"},
		{"the NAK at the READ's last PSN", f, "if (a_mis || r_full) p_syn <= SYN_INV;", "if (a_mis || r_full) begin p_syn <= SYN_INV; if (r_full) p_psn <= rd_last; end"},
		{"a READ beyond max_rd_atomic leaves the QP out of ERR", f, "            if (a_mis || r_full) begin\n                ctx_err[ix] <= 1'b1;", "            if (a_mis || r_full) begin\n                ctx_err[ix] <= a_mis;"},
		// A stale fin (G's replay, after I took resource 0) taken as
		// I's: K accepted.
		{"the fin's PSN not compared", f, "res_last[fin_e] == fin_psn;", "1'b1;"},
		{"an atomic's resource in use not looked at", f, "wire         a_mis   = a_ok && (h_va[2:0] != 3'd0 || r_busy);", "wire         a_mis   = a_ok && h_va[2:0] != 3'd0;"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			respFirstFailing(t, m, []func() *respRun{func() *respRun {
				run, _, _, _, _ := respClaimDirected(cosimSeeds[0])
				return run
			}}, "the claim run passes hca_responder with %s")
		})
	}
}

// TestResponderWiredClaimMutantsFail: slips in hca_ack_tx's fin_* each
// fail a wired READ run (newRespWireReads, RD_RES 4, respWireFirstFailing:
// 40 steps, then 80), through the fin check (respWire.checkFins: each fin
// is the model's ReadResponseSent of a reply's last response, its QPN,
// resource and PSN, at that response's pick), not through the
// responder's claim, which these runs rarely reach (their QPs' READs
// seldom come back to a resource before a context write empties it, and
// the model's replies, sent at once, leave nothing for a claim to find).
// The responder's own use of fin_* is the directed run's
// (TestResponderClaimMutantsFail).
func TestResponderWiredClaimMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const atx = "hca_ack_tx.v"
	for _, m := range []cosimMutant{
		// Its tracking stays busy: no further READ reply is taken, the
		// run stops short (the testbench's timeout) and the fins are
		// fewer than the replies.
		{"hca_ack_tx: fin never given", atx, "assign fin_valid = f_pend && f_pos == 8'd1 && a_commit;", "assign fin_valid = 1'b0;"},
		// A reply of several responses names its first PSN: the
		// responder's compare with the READ's last would never free it.
		{"hca_ack_tx: fin with the reply's first PSN", atx, "f_psn <= ack_last;", "f_psn <= ack_psn;"},
		// Another resource freed (the right one for each QP's first READ
		// and one in four after, not for the rest).
		{"hca_ack_tx: fin naming resource 0 whatever the reply's", atx, "f_res <= ack_res;", "f_res <= 8'd0;"},
		// The tracking armed at the reply's take: the next packet to end
		// in the queue is its first response, and the fin, with the
		// right fields, comes at that response's pick, before the rest
		// are sent.
		{"hca_ack_tx: fin at the reply's first response, not its last", atx, "if (m_last) f_arm <= 1'b1;", "if (e_take) f_arm <= 1'b1;"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			respWireFirstFailing(t, m, respWireReadMutantSteps, func(steps int) *respWire { return newRespWireReads(cosimSeeds[0], steps, 4) },
				"the wired READ run passes with %s")
		})
	}
}
