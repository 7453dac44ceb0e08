package hca

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// eventPair is two back-to-back hosts, A sending to B, with B's receive
// CQ (and A's send CQ) on completion channels.
type eventPair struct {
	s        *components.Sim
	a, b     *Device
	qa, qb   *QP
	chA, chB *CompChannel
	bufA     uint64
	bufB     uint64
	mrA, mrB MR
}

func newEventPair(t *testing.T, cfg Config) *eventPair {
	s := components.NewSim()
	a, b := BackToBack(s, edrLink(), cfg, cfg)
	p := &eventPair{s: s, a: a, b: b, chA: a.CreateCompChannel(), chB: b.CreateCompChannel()}
	pdA, pdB := a.AllocPD(), b.AllocPD()
	p.qa = a.CreateQP(pdA, a.CreateCQChannel(64, p.chA), a.CreateCQ(64), 64, 64)
	p.qb = b.CreateQP(pdB, b.CreateCQ(64), b.CreateCQChannel(64, p.chB), 64, 64)
	require.NoError(t, ConnectRC(p.qa, p.qb, 4096, 1, 2))
	acc := AccessLocalWrite | AccessRemoteWrite
	p.bufA, p.bufB = a.Malloc(4096), b.Malloc(4096)
	p.mrA, p.mrB = a.RegMR(pdA, p.bufA, 4096, acc), b.RegMR(pdB, p.bufB, 4096, acc)
	return p
}

// at runs fn as a simulation event at t.
func (p *eventPair) at(t ib.PS, fn func()) { p.s.Schedule(t, &poster{fn: fn}, 1) }

// send posts an 8-byte SEND from A, solicited or not, at t.
func (p *eventPair) send(t *testing.T, at ib.PS, solicited bool) {
	p.at(at, func() {
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{Opcode: WRSend, LocalAddr: p.bufA, Length: 8, LKey: p.mrA.LKey, Solicited: solicited}))
	})
}

// run runs to t.
func (p *eventPair) run(t *testing.T, until ib.PS) {
	p.s.StopAt(until)
	require.NoError(t, p.s.Run())
}

// TestReqNotifyCQOneEventPerArm: an arm is spent by the first CQE that
// follows it (ibv_req_notify_cq is "one shot"); an arm whose consumer
// index is behind CQEs already written fires at once (mlx5's arm
// doorbell carries the consumer index, closing the arm-then-poll race);
// an arm with nothing unconsumed waits.
func TestReqNotifyCQOneEventPerArm(t *testing.T) {
	p := newEventPair(t, Defaults())
	rcq := p.qb.RecvCQ
	for i := 0; i < 4; i++ {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: uint64(i), Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	}
	var got []*CQ
	p.chB.OnEvent = func(cq *CQ, now ib.PS) {
		c, ok := p.b.GetCQEvent(p.chB)
		require.True(t, ok)
		require.NoError(t, p.b.AckCQEvents(c, 1))
		got = append(got, c)
	}
	require.NoError(t, p.b.ReqNotifyCQ(rcq, false))
	// Three SENDs 5 µs apart: three receive CQEs, one event.
	for i := 0; i < 3; i++ {
		p.send(t, ib.PS(i+1)*5*ib.Microsecond, false)
	}
	// counts[i] is how many events had come at checkpoint i.
	var counts []int
	check := func(at ib.PS) { p.at(at, func() { counts = append(counts, len(got)) }) }
	check(50 * ib.Microsecond)
	// Nothing polled yet (ci 0, three written): a new arm fires at once.
	p.at(60*ib.Microsecond, func() { require.NoError(t, p.b.ReqNotifyCQ(rcq, false)) })
	check(80 * ib.Microsecond)
	// Poll all three, arm: nothing new, no event until the fourth SEND.
	p.at(90*ib.Microsecond, func() {
		var wcs [4]WC
		require.Equal(t, 3, p.b.PollCQ(rcq, wcs[:]))
		require.NoError(t, p.b.ReqNotifyCQ(rcq, false))
	})
	check(120 * ib.Microsecond)
	p.send(t, 130*ib.Microsecond, false)
	p.run(t, 160*ib.Microsecond)
	assert.Equal(t, int64(4), p.b.Counters.CQEs)
	assert.Equal(t, []int{1, 2, 2}, counts, "one event per arm; an arm behind unconsumed CQEs fires at once; one with every CQE consumed waits")
	assert.Equal(t, []*CQ{rcq, rcq, rcq}, got)
	assert.Equal(t, int64(3), p.b.Counters.EQEs)
	assert.Equal(t, int64(3), p.b.Counters.Interrupts)
	delivered, acked := rcq.CQEvents()
	assert.Equal(t, uint32(3), delivered)
	assert.Equal(t, uint32(3), acked)
	assert.Equal(t, int64(3), p.b.Counters.CQEvents)
	assert.Equal(t, int64(0), p.a.Counters.Interrupts, "A's CQ was never armed")
}

// TestSolicitedOnlyArm: a solicited-only arm ignores a successful
// unsolicited CQE and fires on a receive CQE of a message sent with
// IBV_SEND_SOLICITED (its packet's BTH.SE), and on an error CQE: "A CQE is
// solicited if it is a receive completion for a message with the
// Solicited Event header bit set, or if the status is not successful. All
// other successful receive completions, or any successful send completion
// is unsolicited" (ibv_req_notify_cq(3)).
func TestSolicitedOnlyArm(t *testing.T) {
	p := newEventPair(t, Defaults())
	for i := 0; i < 2; i++ {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: uint64(i), Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	}
	events := 0
	p.chB.OnEvent = func(*CQ, ib.PS) { events++ }
	var counts []int
	check := func(at ib.PS, n *int) { p.at(at, func() { counts = append(counts, *n) }) }
	require.NoError(t, p.b.ReqNotifyCQ(p.qb.RecvCQ, true))
	p.send(t, 5*ib.Microsecond, false)
	check(20*ib.Microsecond, &events) // an unsolicited successful CQE does not fire a solicited-only arm
	p.send(t, 25*ib.Microsecond, true)
	check(40*ib.Microsecond, &events) // a solicited receive CQE fires it

	// A's send CQ, solicited-only: a signaled WRITE's success does not
	// fire; a WRITE whose gather element lies outside its region completes
	// with LOC_PROT_ERR, which does.
	evA := 0
	p.chA.OnEvent = func(*CQ, ib.PS) { evA++ }
	var status []WCStatus
	poll := func(at ib.PS) {
		p.at(at, func() {
			var wcs [2]WC
			require.Equal(t, 1, p.a.PollCQ(p.qa.SendCQ, wcs[:]))
			status = append(status, wcs[0].Status)
		})
	}
	p.at(45*ib.Microsecond, func() {
		require.NoError(t, p.a.ReqNotifyCQ(p.qa.SendCQ, true))
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 8,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	})
	poll(60 * ib.Microsecond)
	check(60*ib.Microsecond, &evA) // a successful send CQE is unsolicited
	p.at(65*ib.Microsecond, func() {
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA + 4000, Length: 200,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	})
	poll(80 * ib.Microsecond)
	p.run(t, 90*ib.Microsecond)
	assert.Equal(t, []WCStatus{WCSuccess, WCLocProtErr}, status)
	assert.Equal(t, []int{0, 1, 0}, counts)
	assert.Equal(t, 1, evA, "an error CQE fires a solicited-only arm")
	assert.Equal(t, int64(2), p.b.Counters.CQEs)
}

// TestCompChannelSeveralCQs: one channel serves two CQs; GetCQEvent
// returns each event's CQ in delivery order, and each CQ's events are
// acknowledged on it. A CQ without a channel cannot be armed, and
// acknowledging more events than were delivered is refused.
func TestCompChannelSeveralCQs(t *testing.T) {
	cfg := Defaults()
	s := components.NewSim()
	a, b := BackToBack(s, edrLink(), cfg, cfg)
	ch := b.CreateCompChannel()
	pdA, pdB := a.AllocPD(), b.AllocPD()
	var qa, qb [2]*QP
	for i := range qa {
		qa[i] = a.CreateQP(pdA, a.CreateCQ(16), a.CreateCQ(16), 64, 64)
		qb[i] = b.CreateQP(pdB, b.CreateCQ(16), b.CreateCQChannel(16, ch), 64, 64)
		require.NoError(t, ConnectRC(qa[i], qb[i], 4096, 1, 2))
		assert.Same(t, ch, qb[i].RecvCQ.Channel())
	}
	bufA, bufB := a.Malloc(4096), b.Malloc(4096)
	mrA, mrB := a.RegMR(pdA, bufA, 4096, AccessLocalWrite), b.RegMR(pdB, bufB, 4096, AccessLocalWrite)
	for i := range qb {
		require.NoError(t, b.PostRecv(qb[i], &RecvWR{Addr: bufB, Length: 64, LKey: mrB.LKey}))
		require.NoError(t, b.ReqNotifyCQ(qb[i].RecvCQ, false))
	}
	require.Error(t, b.ReqNotifyCQ(qb[0].SendCQ, false), "a CQ without a channel")
	// QP 1 sends first, QP 0 10 µs later: the events come in that order.
	for k, i := range []int{1, 0} {
		qp := qa[i]
		s.Schedule(ib.PS(k+1)*10*ib.Microsecond, &poster{fn: func() {
			require.NoError(t, a.PostSend(qp, &SendWR{Opcode: WRSend, LocalAddr: bufA, Length: 8, LKey: mrA.LKey}))
		}}, 1)
	}
	s.StopAt(50 * ib.Microsecond)
	require.NoError(t, s.Run())
	first, ok := b.GetCQEvent(ch)
	require.True(t, ok)
	second, ok := b.GetCQEvent(ch)
	require.True(t, ok)
	_, ok = b.GetCQEvent(ch)
	assert.False(t, ok, "two events, no third")
	assert.Same(t, qb[1].RecvCQ, first)
	assert.Same(t, qb[0].RecvCQ, second)
	require.Error(t, b.AckCQEvents(first, 2), "one event delivered on it")
	require.NoError(t, b.AckCQEvents(first, 1))
	require.NoError(t, b.AckCQEvents(second, 1))
	assert.Equal(t, int64(2), b.Counters.CQEvents)
}

// TestEventBehindCQEOnPCIe: the EQE and the MSI-X message are posted
// writes issued with the CQE, so on the otherwise idle link they follow
// its TLP back to back: the interrupt reaches the host one EQE TLP and
// one MSI-X TLP after the CQE, then the thread wakes
// host.interrupt_to_wakeup_ns later. Gen3 x16 moves a byte in 8000 × 130
// / (8 × 16 × 128) = 63.4765625 ps: the EQE's 64 + 24 bytes take 5586 ps,
// the MSI-X's 4 + 24 bytes 1777.3 → 1778 ps (rounded up). Both writes
// take the posted-write latency, as the CQE did, so the event comes
// 5586 + 1778 ps + W after the CQE is visible, to the picosecond.
func TestEventBehindCQEOnPCIe(t *testing.T) {
	for _, w := range []float64{0, 1234.5} {
		cfg := Defaults()
		cfg.Host.InterruptToWakeupNS = w
		p := newEventPair(t, cfg)
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
		require.NoError(t, p.b.ReqNotifyCQ(p.qb.RecvCQ, false))
		var cqeAt, eventAt ib.PS
		p.b.OnCQE = func(cq *CQ, now ib.PS) {
			if cq == p.qb.RecvCQ {
				cqeAt = now
			}
		}
		p.chB.OnEvent = func(_ *CQ, now ib.PS) { eventAt = now }
		written := p.b.PCIe.WrittenBytes
		p.send(t, 5*ib.Microsecond, false)
		p.run(t, 30*ib.Microsecond)
		require.NotZero(t, cqeAt)
		pcie := NewPCIe(cfg.PCIe)
		eqe, msix := pcie.SerPS(EQEBytes+cfg.PCIe.TLPOverheadBytes), pcie.SerPS(MSIXBytes+cfg.PCIe.TLPOverheadBytes)
		assert.Equal(t, ib.PS(5586), eqe)
		assert.Equal(t, ib.PS(1778), msix)
		assert.Equal(t, cqeAt+eqe+msix+ib.FromNanoseconds(w), eventAt, "W %v ns", w)
		// The SEND's 8 payload bytes, its CQE, the EQE and the MSI-X.
		assert.Equal(t, int64(8+CQEBytes+EQEBytes+MSIXBytes), p.b.PCIe.WrittenBytes-written)
	}
}

// TestSolicitedBitOnTheWire: IBV_SEND_SOLICITED sets the ctrl segment's
// solicited bit (MLX5_WQE_CTRL_SOLICITED 0x02) and BTH.SE on a SEND's last
// packet only; a WRITE without immediate never carries it.
func TestSolicitedBitOnTheWire(t *testing.T) {
	var buf [64]byte
	EncodeSendWQE(buf[:], &SendWR{Opcode: WRSend, Solicited: true, Length: 8}, 0, 1, nil)
	assert.Equal(t, byte(ctrlSolicited), buf[11]&ctrlSolicited)
	w, err := DecodeSendWQE(buf[:])
	require.NoError(t, err)
	assert.True(t, w.Solicited)
	for _, tc := range []struct {
		op   WROpcode
		len  uint32
		want []bool
	}{
		{WRSend, 10000, []bool{false, false, true}}, // 3 packets at MTU 4096
		{WRSendImm, 8, []bool{true}},
		{WRRDMAWriteImm, 5000, []bool{false, true}},
		{WRRDMAWrite, 5000, []bool{false, false}},
	} {
		cfg := Defaults()
		r := NewRequester(&cfg, 4096, 0)
		r.Enqueue(SendWQE{Opcode: tc.op, Length: tc.len, Solicited: true}, 0)
		var got []bool
		for r.HasWork() {
			var pkt ib.Packet
			r.Next(&pkt)
			got = append(got, pkt.SE)
		}
		assert.Equal(t, tc.want, got, "%v", tc.op)
	}
}

// TestSolicitedUDSend: a UD SEND with IBV_SEND_SOLICITED fires the
// receiver's solicited-only arm; one without does not.
func TestSolicitedUDSend(t *testing.T) {
	cfg := Defaults()
	s := components.NewSim()
	a, b := BackToBack(s, edrLink(), cfg, cfg)
	ch := b.CreateCompChannel()
	pa, pb := a.AllocPD(), b.AllocPD()
	qa := a.CreateUDQP(pa, a.CreateCQ(16), a.CreateCQ(16), 64, 64, 0x1111)
	qb := b.CreateUDQP(pb, b.CreateCQ(16), b.CreateCQChannel(16, ch), 64, 64, 0x2222)
	for _, x := range []struct {
		d  *Device
		qp *QP
	}{{a, qa}, {b, qb}} {
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPInit}))
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPRTR, MTU: 4096}))
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPRTS}))
	}
	bufA, bufB := a.Malloc(4096), b.Malloc(4096)
	mrA, mrB := a.RegMR(pa, bufA, 4096, AccessLocalWrite), b.RegMR(pb, bufB, 4096, AccessLocalWrite)
	for i := 0; i < 2; i++ {
		require.NoError(t, b.PostRecv(qb, &RecvWR{Addr: bufB, Length: 1064, LKey: mrB.LKey}))
	}
	require.NoError(t, b.ReqNotifyCQ(qb.RecvCQ, true))
	var eventAt []ib.PS
	ch.OnEvent = func(_ *CQ, now ib.PS) { eventAt = append(eventAt, now) }
	var cqeAt []ib.PS
	b.OnCQE = func(_ *CQ, now ib.PS) { cqeAt = append(cqeAt, now) }
	for i, sol := range []bool{false, true} {
		s.Schedule(ib.PS(i+1)*10*ib.Microsecond, &poster{fn: func() {
			require.NoError(t, a.PostSend(qa, &SendWR{Opcode: WRSend, LocalAddr: bufA, Length: 8, LKey: mrA.LKey,
				UD: true, DLID: b.LID, RemoteQPN: qb.Num, RemoteQKey: 0x2222, Solicited: sol}))
		}}, 1)
	}
	s.StopAt(40 * ib.Microsecond)
	require.NoError(t, s.Run())
	require.Len(t, cqeAt, 2)
	require.Len(t, eventAt, 1, "the unsolicited datagram's CQE does not fire")
	assert.Greater(t, eventAt[0], cqeAt[1], "the solicited one's does")
}

// TestDestroyCQWithEvents: what DestroyCQ does with its completion events
// (each case: B's receive CQ armed, one SEND, B's QP destroyed first so
// that the CQ has no user).
//   - in flight: destroyed right after its CQE is written, the event (the
//     EQE, the MSI-X and the 5 µs wake-up still ahead) reaches no channel
//     (mlx5_eq_comp_int drops a completion event for a CQ no longer there);
//   - queued, not read: the event is taken off the channel
//     (ib_uverbs_release_ucq);
//   - read, not acknowledged: EBUSY (ibv_destroy_cq would wait for
//     ibv_ack_cq_events), and after the ack it goes.
func TestDestroyCQWithEvents(t *testing.T) {
	for _, tc := range []string{"in flight", "queued", "read"} {
		t.Run(tc, func(t *testing.T) {
			cfg := Defaults()
			cfg.Host.InterruptToWakeupNS = 5000
			p := newEventPair(t, cfg)
			cq := p.qb.RecvCQ
			require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
			require.NoError(t, p.b.ReqNotifyCQ(cq, false))
			delivered := 0
			p.chB.OnEvent = func(*CQ, ib.PS) { delivered++ }
			destroyed := false
			if tc == "in flight" {
				p.b.OnCQE = func(c *CQ, now ib.PS) {
					if c == cq {
						p.at(now+1, func() {
							require.NoError(t, p.b.DestroyQP(p.qb))
							require.NoError(t, p.b.DestroyCQ(cq))
							destroyed = true
						})
					}
				}
			}
			p.send(t, 5*ib.Microsecond, false)
			p.run(t, 30*ib.Microsecond)
			switch tc {
			case "in flight":
				require.True(t, destroyed)
				assert.Zero(t, delivered)
				assert.Zero(t, p.b.Counters.CQEvents)
			case "queued":
				require.Equal(t, 1, delivered)
				require.NoError(t, p.b.DestroyQP(p.qb))
				require.NoError(t, p.b.DestroyCQ(cq))
			case "read":
				require.Equal(t, 1, delivered)
				got, ok := p.b.GetCQEvent(p.chB)
				require.True(t, ok)
				require.Equal(t, cq, got)
				require.NoError(t, p.b.DestroyQP(p.qb))
				require.ErrorIs(t, p.b.DestroyCQ(cq), syscall.EBUSY)
				require.NoError(t, p.b.AckCQEvents(cq, 1))
				require.NoError(t, p.b.DestroyCQ(cq))
			}
			_, ok := p.b.GetCQEvent(p.chB)
			assert.False(t, ok, "an event of the destroyed CQ is still on the channel")
		})
	}
}
