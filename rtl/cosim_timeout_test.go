package rtl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_requester's local ACK timer <-> hca.Device's retry timer, hca.Requester.OnTimeout ----
//
// The emitted hca_transport with RETRY_CNT 3 (retryTransport) and a short
// local ACK timeout, in reqTB, on a run of two contexts whose responder
// loses what the requester needs: on context 0 an ACK that acknowledges
// only the first packet of a message (the rest of its ACKs lost), then a
// sequence error NAK, then nothing; on context 1 nothing at all (its only
// message's ACK lost). The model's timer fires (OnTimeout) and the
// requester resends from the oldest unacknowledged PSN until retry_cnt,
// shared with the sequence NAK, is spent and the head fails with
// RETRY_EXC_ERR. The replay (retryCheck with retryTimer) runs the model's
// timer on the RTL's events: every timeout the RTL takes must come when
// the model's expires (or up to tmoSlack cycles later), every one the
// model's takes must come from the RTL, the resent packets must be the
// model's Next byte for byte, and the completions the model's.

const (
	// tmoExp is hca.retry_timeout of the run: 4.096 us x 2^3 = 32.768 us.
	tmoExp = 3
	// tmoTick is ACK_TICK of the run: cycles in 4.096 us. The emitter
	// derives it from hca.core_clock_mhz (4096 at 1 GHz); 64, a 64 ns
	// clock (15.625 MHz), keeps the run short with the model's exponent.
	tmoTick = 64
)

// tmoCycles is the timeout in the run's cycles: hca.RetryTimeoutPS(3)
// (32.768 us) over the 64 ns cycle: 512 = ACK_TICK x 2^3.
var tmoCycles = int(hca.RetryTimeoutPS(tmoExp) / (hca.RetryTimeoutPS(1) / 2 / tmoTick))

// newTimeoutPlan builds the run. The PSNs and statuses it expects are
// derived in the comments (T = 512 cycles; cycles approximate where they
// do not matter, exact where they do: the ACK's offer).
func newTimeoutPlan() *retryPlan {
	p := &retryPlan{run: &reqRun{}, toCycles: tmoCycles}
	run := p.run
	cfgs := []*reqItem{
		{cfg: true, qix: 0, qpn: 0x3450, dlid: 0x51, slid: 0x61, sl: 1, vl: 0, rqpn: 0xC0000, psn: 0xFFFFFE, mtuCode: 1, cqn: 3},
		{cfg: true, qix: 1, qpn: 0x3451, dlid: 0x52, slid: 0x62, sl: 4, vl: 1, rqpn: 0xC0001, psn: 0x000200, mtuCode: 2, cqn: 4},
		{cfg: true, qix: 2, qpn: 0x3452, dlid: 0x53, slid: 0x63, sl: 0, vl: 2, rqpn: 0xC0002, psn: 0x7FFFF0, mtuCode: 1, cqn: 5},
	}
	run.items = append(run.items, cfgs...)
	index := uint16(0x10)
	wqe := func(it *reqItem, op hca.WROpcode, length int, laddr uint64) {
		w := hca.SendWQE{Opcode: op, Length: uint32(length), RemoteAddr: 0x6000_0000 + uint64(index)<<12, RKey: 0x4400 + uint32(index),
			LocalAddr: laddr, QPN: it.qpn, Index: index, Signaled: true}
		index++
		run.items = append(run.items, &reqItem{qix: it.qix, qpn: it.qpn, every: retryEvery, wqe: w, sent: true})
	}
	// Context 0, MTU 256, from FFFFFE: M0 a SEND of 600 B (3 packets:
	// FFFFFE FFFFFF 000000), M1 a SEND of 100 B (000001). The timer arms
	// at M0's first commit, c0 (a few tens of cycles in).
	wqe(cfgs[0], hca.WRSend, 600, 0x11_0000+8)
	wqe(cfgs[0], hca.WRSend, 100, 0x12_0000)
	// Context 1, MTU 512, from 000200: W a WRITE of 700 B (200 201). Its
	// timer arms at W's first commit, c1.
	wqe(cfgs[1], hca.WRRDMAWrite, 700, 0x13_0000+3)
	// Context 2, MTU 256, from 7FFFF0: X a SEND of 700 B (7FFFF0 7FFFF1
	// 7FFFF2). Its timer arms at X's first commit, c2.
	wqe(cfgs[2], hca.WRSend, 700, 0x14_0000+40)
	// a0, offered at cycle 300 (once the first packet is out): an ACK of
	// FFFFFE only, M0's first packet: acknowledged 1, progress (ackThrough's
	// advanced), so the timer restarts at 300: deadline 812, not c0 + 512.
	run.acks = append(run.acks, reqAck{gate: 1, qpn: cfgs[0].qpn, psn: 0xFFFFFE, syn: hca.SynACK, msn: 1})
	// a1, offered from cycle 600 (once the 4 first packets are out): a
	// sequence error NAK at FFFFFF: no new packet acknowledged, no progress;
	// a retry (retry_cnt 3 -> 2, a sequence under way), resend FFFFFF
	// 000000 000001; M0 has a packet sent, so the timer restarts at 600:
	// deadline 1112.
	run.acks = append(run.acks, reqAck{gate: 4, qpn: cfgs[0].qpn, psn: 0xFFFFFF, syn: hca.SynNAKSeq, msn: 1})
	// a2, offered once 17 packets are out: the 9 first, context 1's and
	// context 2's first timeout resends (2 and 3, at about c1 + 512 and
	// c2 + 512, before 600) and a1's (3, after 600); an ACK of 7FFFF0,
	// X's first packet, after X's first timeout spent one of retry_cnt
	// (3 -> 2): progress, the counters restored (3) and the timer
	// restarted (X has packets sent).
	run.acks = append(run.acks, reqAck{gate: 17, qpn: cfgs[2].qpn, psn: 0x7FFFF0, syn: hca.SynACK, msn: 1})
	// Context 0 then hears nothing. At 1112 OnTimeout retries from the
	// oldest unacknowledged PSN, FFFFFE + 1 = FFFFFF, whatever the sequence
	// under way (retry_cnt 2 -> 1), resend FFFFFF 000000 000001, restart:
	// 1624, the same (1 -> 0), 2136: none left, M0 fails with
	// RETRY_EXC_ERR and M1 is flushed (WR_FLUSH_ERR), context 0 in ERR.
	//
	// Context 1 hears nothing. At c1 + 512 OnTimeout retries from 200 (no
	// packet acknowledged; retry_cnt 3 -> 2): W resent from its first
	// packet, so nothing is outstanding (Outstanding: W's sent is 0) and
	// the timer stops, to arm again at the resend's first commit; twice
	// more (2 -> 1 -> 0), and the fourth expiry fails W with RETRY_EXC_ERR,
	// about c1 + 4 x 530.
	//
	// Context 2 then hears nothing: OnTimeout retries from 7FFFF1 (one
	// packet acknowledged) with retry_cnt 3 -> 2 -> 1 -> 0 (three resends
	// of 7FFFF1 7FFFF2), and the fourth expiry after a2 fails X with
	// RETRY_EXC_ERR, five timeouts in all (four, and a resend fewer, if
	// a2's progress did not restore the counters).
	//
	// Control: every handshake ready, credit plenty; rx_* offered only at
	// cycle 300 and from 600 (cw[9]), so a0 and a1 come when the plan says.
	for c := range 3300 {
		cw := uint64(0x31f)
		if c != 300 && c < 600 {
			cw = 0x11f
		}
		run.ctrl = append(run.ctrl, [5]uint64{cw, 2048, 2048, 2048, 2048})
	}
	run.beats = 1 << 20 // never reached: the control's cycles end the run
	return p
}

// timeoutTransport is retryTransport with the run's ACK_TICK and
// RETRY_TIMEOUT.
func timeoutTransport(t *testing.T) string {
	t.Helper()
	src := retryTransport(t)
	for _, r := range [][2]string{
		{"parameter integer ACK_TICK = 4096", fmt.Sprintf("parameter integer ACK_TICK = %d", tmoTick)},
		{"parameter integer RETRY_TIMEOUT = 0", fmt.Sprintf("parameter integer RETRY_TIMEOUT = %d", tmoExp)},
	} {
		require.Equal(t, 1, strings.Count(src, r[0]), "hca_transport's %q", r[0])
		src = strings.Replace(src, r[0], r[1], 1)
	}
	return src
}

// TestTimeoutCycles: the run's timeout in cycles is the parameters' ACK_TICK
// x 2^RETRY_TIMEOUT, and the emitter's ACK_TICK at 1 GHz is 4.096 us in
// 1 ns cycles.
func TestTimeoutCycles(t *testing.T) {
	assert.Equal(t, tmoTick<<tmoExp, tmoCycles)
	assert.Equal(t, 4096, ackTick(1000))
	// 1.5 GHz: the period rounds to 667 ps, 4096000 / 667 = 6140.9,
	// rounded 6141.
	assert.Equal(t, 6141, ackTick(1500))
}

// runTimeoutBench builds the requester (the named mutant; unmutated for
// an empty old) with the timeout test's transport, runs plan p in Icarus
// and returns the replay's result.
func runTimeoutBench(t *testing.T, dir string, p *retryPlan, name, old, new string) *retryResult {
	t.Helper()
	ctx := context.Background()
	d, replace := requesterMutant(t, dir, name, old, new)
	files := writeReqBench(t, d, replace)
	require.NoError(t, os.WriteFile(filepath.Join(d, "hca_transport.v"), []byte(timeoutTransport(t)), 0o644))
	p.run.write(t, d)
	_, err := runTool(ctx, d, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
	require.NoError(t, err)
	return runRetry(t, ctx, d, "r", p, "vvp", "-n", filepath.Join(d, "sim.vvp"))
}

// timeoutControl gives run 3100 cycles of control: every handshake
// ready, credit plenty, rx_* offered only at cycle 100 and from 200
// (cw[9]); the control's end ends the run, not its beats.
func timeoutControl(run *reqRun) {
	for c := range 3100 {
		cw := uint64(0x31f)
		if c != 100 && c < 200 {
			cw = 0x11f
		}
		run.ctrl = append(run.ctrl, [5]uint64{cw, 2048, 2048, 2048, 2048})
	}
	run.beats = 1 << 20 // never reached: the control's cycles end the run
}

// TestRequesterTimeoutCosim: hca_requester's timeouts come when the model's
// timer expires, its resends are the model's packet for packet and byte
// for byte, its completions the model's (RETRY_EXC_ERR when retry_cnt is
// spent); each mutant of the timer fails.
func TestRequesterTimeoutCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	p := newTimeoutPlan()
	dir := t.TempDir()
	for _, m := range []struct{ name, old, new string }{
		{name: "unmutated"},
		{"the timer never armed at a commit", "RETRY_TIMEOUT != 0 && commit && head_ctx == q[QPN_W-1:0] && !to_on[q]", "1'b0"},
		{"the timer not restarted on progress", "end else if (e_prog || w_adv || rewind) begin", "end else if (rewind) begin"},
		{"a timeout's retry from the head's first PSN", "e_tmo ? h_ent[47:24] + (h_rdat ? 24'd0 : e_hack) : e_psn;", "e_tmo ? h_ent[47:24] : e_psn;"},
		{"a timeout not spending the shared retry_cnt", "wire [2:0]       r_rl     = e_prog ? RETRY_CNT[2:0] : retry_left[e_ctx*3 +: 3];",
			"wire [2:0]       r_rl     = (e_prog || e_tmo) ? RETRY_CNT[2:0] : retry_left[e_ctx*3 +: 3];"},
		{"a partial ACK's progress not restoring the counters", "if (e_prog || w_adv) begin", "if (e_prog) begin"},
		{"a timeout absorbed by a retry sequence under way", "wire             r_start  = started[e_ctx] && !e_prog && !e_tmo;", "wire             r_start  = started[e_ctx] && !e_prog;"},
	} {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			res := runTimeoutBench(t, dir, p, m.name, m.old, m.new)
			// The plan's derivation: context 0 sends its 4 packets, the
			// NAK's resend and two timeouts' (3 each); context 1 W's 2
			// packets and three timeouts' resends of them.
			want0 := []uint32{0xFFFFFE, 0xFFFFFF, 0, 1, 0xFFFFFF, 0, 1, 0xFFFFFF, 0, 1, 0xFFFFFF, 0, 1}
			want1 := []uint32{0x200, 0x201, 0x200, 0x201, 0x200, 0x201, 0x200, 0x201}
			want2 := []uint32{0x7FFFF0, 0x7FFFF1, 0x7FFFF2, 0x7FFFF0, 0x7FFFF1, 0x7FFFF2,
				0x7FFFF1, 0x7FFFF2, 0x7FFFF1, 0x7FFFF2, 0x7FFFF1, 0x7FFFF2}
			wantSt := []hca.WCStatus{hca.WCRetryExcErr, hca.WCWRFlushErr, hca.WCRetryExcErr, hca.WCRetryExcErr}
			if m.old != "" {
				bad := res.errors > 0 || res.acks != len(p.run.acks) || !assert.ObjectsAreEqual(want0, res.psns[0]) ||
					!assert.ObjectsAreEqual(want1, res.psns[1]) || !assert.ObjectsAreEqual(want2, res.psns[2])
				assert.True(t, bad, "the timeout co-simulation passes a requester with %s", m.name)
				t.Logf("%d mismatches: %s", res.errors, strings.Join(res.first, "; "))
				return
			}
			assert.Zero(t, res.errors, "mismatches: %s", strings.Join(res.first, "; "))
			assert.Equal(t, len(p.run.acks), res.acks, "ACKs and NAKs taken")
			assert.Equal(t, want0, res.psns[0], "context 0's PSNs")
			assert.Equal(t, want1, res.psns[1], "context 1's PSNs")
			assert.Equal(t, want2, res.psns[2], "context 2's PSNs")
			// Timeouts: context 0's at 1112, 1624, 2136; context 1's four,
			// context 2's five.
			assert.Equal(t, [3]int{3, 4, 5}, res.tmos, "timeouts taken per context")
			// Which context fails first is the RTL's timing; the statuses are
			// M0's and M1's and W's.
			assert.ElementsMatch(t, wantSt, res.status, "completion statuses")
			assert.Positive(t, res.checked, "beats compared")
		})
	}
}

// newTimeoutRNRPlan is a run in which an ACK makes progress while the
// context waits out an RNR NAK to resend the ring's head from its first
// packet: the model's timer then stops (hca.Requester.Outstanding is
// false: the head's sent is 0) and arms again at the resend's first
// commit, so a requester that restarts it at the ACK times out during
// the wait. On context 0 (MTU 256, from 000040) three SENDs of 1 packet
// (40 41 42), then:
//   - a0, offered at cycle 100: an RNR NAK at 41, timer code 10 (32 x 10
//     us: 640 cycles at RNR_TICK 20): M0 completes (progress), M1 and M2
//     rewound (sent 0), rnr_retry 2 -> 1, the timer stops;
//   - a1, offered from cycle 200: an ACK through 41: M1 completes (it was
//     sent once), progress; the head M2 has sent 0, so the timer stays
//     stopped (the RTL's restart is the mutant);
//   - M2 resent after the wait (about cycle 740), the timer armed at its
//     commit; nothing more: timeouts about 512 cycles after each resend's
//     commit retry from 42 (retry_cnt 3 -> 2 -> 1 -> 0), and the fourth
//     fails M2 with RETRY_EXC_ERR.
//
// PSNs 40 41 42, then 42 four times; statuses success, success,
// RETRY_EXC_ERR; four timeouts.
func newTimeoutRNRPlan() *retryPlan {
	p := &retryPlan{run: &reqRun{}, toCycles: tmoCycles}
	run := p.run
	cfg := &reqItem{cfg: true, qix: 0, qpn: 0x4560, dlid: 0x71, slid: 0x81, sl: 2, vl: 1, rqpn: 0xD0000, psn: 0x40, mtuCode: 1, cqn: 6}
	run.items = append(run.items, cfg)
	for i := range 3 {
		w := hca.SendWQE{Opcode: hca.WRSend, Length: 100, LocalAddr: 0x15_0000 + uint64(i)<<12, QPN: cfg.qpn, Index: uint16(i), Signaled: true}
		run.items = append(run.items, &reqItem{qix: 0, qpn: cfg.qpn, every: retryEvery, wqe: w, sent: true})
	}
	run.acks = append(run.acks,
		reqAck{gate: 3, qpn: cfg.qpn, psn: 0x41, syn: hca.SynRNRNAK | 10, msn: 1},
		reqAck{gate: 3, qpn: cfg.qpn, psn: 0x41, syn: hca.SynACK, msn: 2})
	timeoutControl(run)
	return p
}

// TestRequesterTimeoutRNRCosim: an ACK's progress during an RNR wait
// leaves the timer stopped until the resend's first commit, as the
// model's; a requester that counts the rewound head as sent fails.
func TestRequesterTimeoutRNRCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	p := newTimeoutRNRPlan()
	dir := t.TempDir()
	for _, m := range []struct{ name, old, new string }{
		{name: "unmutated"},
		{"a rewound head counted as sent", "(e_cnt_w > unsent[e_ctx*IF_W +: IF_W] && !ep_head)", "(e_cnt_w > unsent[e_ctx*IF_W +: IF_W])"},
	} {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			res := runTimeoutBench(t, dir, p, m.name, m.old, m.new)
			want := []uint32{0x40, 0x41, 0x42, 0x42, 0x42, 0x42, 0x42}
			if m.old != "" {
				bad := res.errors > 0 || res.acks != len(p.run.acks) || !assert.ObjectsAreEqual(want, res.psns[0])
				assert.True(t, bad, "the timeout co-simulation passes a requester with %s", m.name)
				t.Logf("%d mismatches: %s", res.errors, strings.Join(res.first, "; "))
				return
			}
			assert.Zero(t, res.errors, "mismatches: %s", strings.Join(res.first, "; "))
			assert.Equal(t, len(p.run.acks), res.acks, "ACKs and NAKs taken")
			assert.Equal(t, want, res.psns[0], "context 0's PSNs")
			assert.Equal(t, [3]int{4, 0, 0}, res.tmos, "timeouts taken per context")
			assert.Equal(t, []hca.WCStatus{hca.WCSuccess, hca.WCSuccess, hca.WCRetryExcErr}, res.status, "completion statuses")
			assert.Equal(t, 1, res.waits, "RNR waits checked")
		})
	}
}

// newTimeoutAckedPlan is a run in which an ACK acknowledges part of a
// WRITE behind an unanswered READ: the model keeps the WRITE's
// acknowledged packets (ackThrough's acked of a later message) through
// the implied NAK's rewind (rewind leaves acked), and once the READ is
// answered and the WRITE is the head, its local ACK timeout resends from
// there (OnTimeout: first + acked) and an ACK of fewer packets is no
// progress. On context 0 (MTU 256, from 000300) R a READ of 0 B (300) and
// W a WRITE of 700 B (three packets: 301 302 303), then:
//   - a0, offered at cycle 100 once the 4 packets are out: an ACK through
//     302, W's second packet. R's PSN lies before it and R is not
//     answered: R stays, W has acked = 302 - 301 + 1 = 2 (not the oldest
//     message, so no progress); then the implied NAK, a retry from R
//     (retry_cnt 3 -> 2): R and W go again whole (300 301 302 303);
//   - a1, offered from cycle 200 once those 4 are out too: R's ONLY of
//     no payload at 300 (readGot 0 >= 0): R completes, retired, progress
//     (retry_cnt back to 3, the timer restarted: W has packets sent);
//   - the timer expires 512 cycles later: OnTimeout retries from 301 + 2
//     = 303 (retry_cnt 3 -> 2), W resent from its third packet (303);
//   - a2, offered once that packet is out: an ACK through 301, W's first:
//     1 packet is not more than W's 2, so no progress: the counters are
//     not restored and the timer not restarted;
//   - two more expiries resend 303 (2 -> 1 -> 0), the fourth fails W with
//     RETRY_EXC_ERR.
//
// PSNs 300 301 302 303, 300 301 302 303, 303 three times; statuses
// success (R), RETRY_EXC_ERR (W); four timeouts.
func newTimeoutAckedPlan() *retryPlan {
	p := &retryPlan{run: &reqRun{}, toCycles: tmoCycles}
	run := p.run
	cfg := &reqItem{cfg: true, qix: 0, qpn: 0x4570, dlid: 0x72, slid: 0x82, sl: 3, vl: 1, rqpn: 0xD0100, psn: 0x300, mtuCode: 1, cqn: 7}
	run.items = append(run.items, cfg)
	for i, w := range []hca.SendWQE{
		{Opcode: hca.WRRDMARead, Length: 0, LocalAddr: 0x16_0000, RemoteAddr: 0x6100_0000, RKey: 0x4501},
		{Opcode: hca.WRRDMAWrite, Length: 700, LocalAddr: 0x17_0000 + 5, RemoteAddr: 0x6200_0000, RKey: 0x4502},
	} {
		w.QPN, w.Index, w.Signaled = cfg.qpn, uint16(0x20+i), true
		run.items = append(run.items, &reqItem{qix: 0, qpn: cfg.qpn, every: retryEvery, wqe: w, sent: true})
	}
	rsp := readRsp(0, 1, 0x300, 0, false)
	rsp.gate, rsp.qpn, rsp.msn = 8, cfg.qpn, 1
	run.acks = append(run.acks,
		reqAck{gate: 4, qpn: cfg.qpn, psn: 0x302, syn: hca.SynACK, msn: 1},
		rsp,
		reqAck{gate: 9, qpn: cfg.qpn, psn: 0x301, syn: hca.SynACK, msn: 1})
	timeoutControl(run)
	return p
}

// TestRequesterTimeoutAckedCosim: a WRITE acknowledged in part behind an
// unanswered READ keeps its acknowledged packets, as the model's acked,
// so its timeout resends from there once it is the head and a smaller
// ACK is no progress; each mutant of that fails.
func TestRequesterTimeoutAckedCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	p := newTimeoutAckedPlan()
	dir := t.TempDir()
	for _, m := range []struct{ name, old, new string }{
		{name: "unmutated"},
		// main's: only the head's acknowledged packets kept.
		{"a partial ACK behind the head not kept", "a_upd    = walk_end && !e_rsp && !e_tmo && e_mpart && m_in;",
			"a_upd    = walk_end && !e_rsp && !e_tmo && e_mpart && m_in && m_pos == {PW{1'b0}};"},
		{"a rewind clearing a WRITE's acknowledged packets", "if (rp_take && rp_ptr != rp_hd && oq_rd[rp_ix]) oq_gv[rp_ix] <= 1'b0;",
			"if (rp_take && rp_ptr != rp_hd) oq_gv[rp_ix] <= 1'b0;"},
		{"an ACK's progress judged against no packet acknowledged", "w_more   = w_part && (e_rsp || w_k > e_hack);", "w_more   = w_part && (e_rsp || w_k > 24'd0);"},
	} {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			res := runTimeoutBench(t, dir, p, m.name, m.old, m.new)
			want := []uint32{0x300, 0x301, 0x302, 0x303, 0x300, 0x301, 0x302, 0x303, 0x303, 0x303, 0x303}
			if m.old != "" {
				bad := res.errors > 0 || res.acks != len(p.run.acks) || !assert.ObjectsAreEqual(want, res.psns[0])
				assert.True(t, bad, "the timeout co-simulation passes a requester with %s", m.name)
				t.Logf("%d mismatches: %s; PSNs %x", res.errors, strings.Join(res.first, "; "), res.psns[0])
				return
			}
			assert.Zero(t, res.errors, "mismatches: %s", strings.Join(res.first, "; "))
			assert.Equal(t, len(p.run.acks), res.acks, "ACKs and responses taken")
			assert.Equal(t, want, res.psns[0], "context 0's PSNs")
			assert.Equal(t, [3]int{4, 0, 0}, res.tmos, "timeouts taken per context")
			assert.Equal(t, []hca.WCStatus{hca.WCSuccess, hca.WCRetryExcErr}, res.status, "completion statuses")
		})
	}
}
