package hca

import (
	"fmt"
	"syscall"

	"github.com/hcasim/hcasim/ib"
)

// Completion events: ibv_req_notify_cq, completion channels and the
// hardware path behind them, as mlx5 builds it.
//
// A CQ created on a completion channel can be armed (ReqNotifyCQ): the
// next CQE written to it — with solicitedOnly, the next solicited or
// error CQE — makes the HCA write an event queue entry (EQE, 64 bytes)
// to its event queue in host memory and then an MSI-X message (a 4-byte
// posted memory write to the interrupt controller's address), both
// through the PCIe posted-write path, so they take their bus time and,
// posted writes passing none issued before them, land behind the CQE.
// The arm is spent: one event per arm. The MSI-X write's arrival starts
// the host's side, the interrupt handler (mlx5_eq_comp_int reading the
// EQE, the uverbs completion handler queuing the event on the channel)
// and the wake-up of the thread asleep in ibv_get_cq_event:
// hca.host.interrupt_to_wakeup_ns, after which the event is in the
// channel (GetCQEvent) and CompChannel.OnEvent runs.
//
// The arm is a doorbell (mlx5_arm_cq: the arm doorbell record and a
// store to the UAR) and carries the consumer index: it reaches the HCA
// pcie.mmio_latency_ns after the CPU's store, and if the HCA has by then
// written to the CQ a CQE (solicitedOnly: a solicited or error one) past
// that index, it fires at once rather than waiting for the next. That is
// what lets an application arm, then poll, then sleep without losing a
// CQE that landed in between (the verbs rule: arm, poll the CQ empty,
// then wait; perftest's ctx_notify_events re-arms before it polls).
//
// CQ moderation (ModifyCQ) holds an arm's event for several CQEs or a
// period: cqmod.go. The EQ's context is read and written back as the
// CQ's is when hca.eq_cache_entries > 0 (fireEvent). Not modelled: EQ
// interrupt moderation (one MSI-X per EQE here), the EQ ring's own depth
// and overrun, the EQ's re-arm by the driver, and the CPU time of the arm
// and of the handler on the application's core.

// CQE, EQE and MSI-X sizes on PCIe.
const (
	// EQEBytes is one event queue entry (struct mlx5_eqe).
	EQEBytes = 64
	// MSIXBytes is an MSI-X message: a DWORD posted write of the
	// vector's data to its address.
	MSIXBytes = 4
)

// CompChannel is a completion channel (struct ibv_comp_channel): the
// queue of completion events of the CQs created on it, which a thread
// sleeps on in ibv_get_cq_event.
type CompChannel struct {
	Num uint32
	dev *Device
	// events are the CQs whose events were delivered and not yet read by
	// GetCQEvent, oldest first.
	events []*CQ
	// OnEvent, if set, is called when an event is delivered: the thread
	// asleep on the channel wakes (the model's ibv_get_cq_event return).
	OnEvent func(cq *CQ, now ib.PS)
}

// cqNotify is a CQ's completion-event state (the HCA's arm state and the
// application's event counts).
type cqNotify struct {
	ch *CompChannel // nil: the CQ has no channel, never fires
	// armed: the HCA holds an arm (ReqNotifyCQ reached it) not yet
	// spent; solicited: the arm is solicited-only.
	armed, solicited bool
	// written counts the CQEs the HCA has issued to the CQ;
	// solicitedAt is written after the last solicited or error one.
	written, solicitedAt uint32
	// lastIssue is when the last of them was issued on PCIe: an EQE the
	// arm fires at once goes no sooner.
	lastIssue ib.PS
	// events counts events delivered to the channel; acked those
	// AckCQEvents acknowledged.
	events, acked uint32
	// mod is the CQ's event moderation (ModifyCQ, cqmod.go).
	mod cqMod
}

// CreateCompChannel makes a completion channel (ibv_create_comp_channel).
func (d *Device) CreateCompChannel() *CompChannel {
	ch := &CompChannel{Num: uint32(len(d.channels)), dev: d}
	d.channels = append(d.channels, ch)
	return ch
}

// CreateCQChannel makes a CQ of depth CQEs whose completion events go to
// ch (ibv_create_cq with a comp_channel, comp_vector 0); a nil ch is
// CreateCQ.
func (d *Device) CreateCQChannel(depth int, ch *CompChannel) *CQ {
	return d.CreateCQVector(depth, ch, 0)
}

// CreateCQVector is CreateCQChannel with ibv_create_cq's comp_vector: the
// CQ's EQEs go to that vector's event queue (mlx5 makes one completion
// EQ per vector, and the CQ's context names it, cqc.c_eqn), which
// matters only when EQ contexts are modelled (hca.eq_cache_entries).
func (d *Device) CreateCQVector(depth int, ch *CompChannel, vector uint32) *CQ {
	if ch != nil && ch.dev != d {
		panic(fmt.Sprintf("hca: %s: completion channel %d belongs to %s", d.Name, ch.Num, ch.dev.Name))
	}
	cq := d.CreateCQ(depth)
	cq.notify.ch = ch
	cq.eqn = vector
	return cq
}

// Channel returns the completion channel cq was created on (nil: none).
func (cq *CQ) Channel() *CompChannel { return cq.notify.ch }

// ReqNotifyCQ arms cq for one completion event (ibv_req_notify_cq): the
// next CQE the HCA writes to it, or with solicitedOnly the next solicited
// or error CQE, fires one event on its channel. The arm reaches the HCA
// a doorbell's MMIO latency after the thread's store (now: the caller
// calls it when its thread runs), carrying the CQ's consumer index; a
// CQE past it already written fires then. Arming an
// armed CQ keeps one arm (a solicited-only arm widened to any CQE, as
// the later, wider request asks). A CQ without a channel cannot be
// armed: EINVAL in the verbs, an error here.
func (d *Device) ReqNotifyCQ(cq *CQ, solicitedOnly bool) error {
	if cq.destroyed {
		return fmt.Errorf("cq %d: req_notify_cq on a destroyed CQ: %w", cq.Num, syscall.EINVAL)
	}
	if cq.notify.ch == nil {
		return fmt.Errorf("cq %d: req_notify_cq on a CQ created without a completion channel", cq.Num)
	}
	e := d.at(d.PCIe.MMIO(d.s.Now()), evArmCQ)
	e.Arg = int64(cq.Num)<<32 | int64(cq.ci)
	if solicitedOnly {
		e.VL = 1
	}
	return nil
}

// GetCQEvent reads the oldest delivered event of ch (ibv_get_cq_event):
// the CQ it is for, and false if none is waiting. The model's thread
// does not block in it: it is woken by CompChannel.OnEvent and reads.
// Each event read must be acknowledged (AckCQEvents).
func (d *Device) GetCQEvent(ch *CompChannel) (*CQ, bool) {
	if len(ch.events) == 0 {
		return nil, false
	}
	cq := ch.events[0]
	ch.events = ch.events[1:]
	return cq, true
}

// AckCQEvents acknowledges n events of cq read by GetCQEvent
// (ibv_ack_cq_events). Acknowledging more than were delivered is an
// error (the verbs' would make ibv_destroy_cq wait forever, or never).
func (d *Device) AckCQEvents(cq *CQ, n int) error {
	if n < 0 || uint32(n) > cq.notify.events-cq.notify.acked {
		return fmt.Errorf("cq %d: ack_cq_events %d, but %d events are unacknowledged", cq.Num, n, cq.notify.events-cq.notify.acked)
	}
	cq.notify.acked += uint32(n)
	return nil
}

// CQEvents returns the completion events delivered for cq and how many of
// them were acknowledged.
func (cq *CQ) CQEvents() (delivered, acked uint32) { return cq.notify.events, cq.notify.acked }

// noteCQE is the HCA's event logic for a CQE issued to cq at issue:
// written for the arm's consumer-index check, and an armed CQ that this
// CQE satisfies fires (writeCQE calls it after posting the CQE, so the
// EQE and MSI-X go behind it).
func (d *Device) noteCQE(cq *CQ, c *CQE, issue ib.PS) {
	n := &cq.notify
	n.written++
	n.lastIssue = max(n.lastIssue, issue)
	solicited := c.Solicited || c.Status != WCSuccess
	if solicited {
		n.solicitedAt = n.written
	}
	if n.armed && (solicited || !n.solicited) {
		if n.mod.on() {
			d.holdCQE(cq, issue)
			return
		}
		d.fireEvent(cq, issue)
	}
}

// armCQ: an arm carrying consumer index ci reaches the HCA. A CQE past
// ci already written (solicited-only: a solicited or error one) fires at
// once, its EQE through the CQE stage and behind the CQ's last CQE;
// otherwise the CQ waits armed.
func (d *Device) armCQ(cq *CQ, ci uint32, solicitedOnly bool) {
	if cq.destroyed {
		return // the doorbell names a CQ no longer there (DestroyCQ)
	}
	n := &cq.notify
	pending := cntDiff(n.written, ci) > 0
	if solicitedOnly {
		pending = cntDiff(n.solicitedAt, ci) > 0
	}
	if n.armed {
		// One arm: the wider request stands.
		n.solicited = n.solicited && solicitedOnly
		return
	}
	if pending && n.mod.on() {
		held := uint32(cntDiff(n.written, ci))
		if solicitedOnly {
			held = 1
		}
		d.holdAtArm(cq, held, solicitedOnly)
		return
	}
	if pending {
		issue := max(d.stages[StageCQE].accept(d.s.Now(), 0), n.lastIssue)
		d.fireEvent(cq, issue)
		return
	}
	n.armed, n.solicited = true, solicitedOnly
}

// fireEvent spends cq's arm: the EQE, then the MSI-X message, posted at
// issue (the CQE's issue time), so each goes behind the writes issued
// before it, the CQE among them. With EQ contexts modelled the EQE waits
// for its EQ's context (the ring's address, producer_counter; the EQE
// moves the counter and the EQ's state, armed to fired), read from ICM
// when it is not on chip.
func (d *Device) fireEvent(cq *CQ, issue ib.PS) {
	cq.notify.armed = false
	cq.notify.mod.held = 0
	cq.notify.mod.gen++ // a moderation timer still running is stale
	if d.eqc != nil {
		issue = d.contextModify(d.eqc, issue, cq.eqn)
	}
	d.Counters.EQEs++
	if _, ok := d.PCIe.Post(issue, EQEBytes, WriteNote{Kind: writeEQE}); !ok {
		d.flushAt(issue)
	}
	d.Counters.Interrupts++
	if vis, ok := d.PCIe.Post(issue, MSIXBytes, WriteNote{Kind: writeMSIX, Addr: uint64(cq.Num)}); ok {
		d.interruptAt(cq.Num, vis)
	} else {
		d.flushAt(issue)
	}
}

// interruptAt schedules the event's delivery to the channel: the MSI-X
// message reaches the host at vis, the handler runs and the thread wakes
// host.interrupt_to_wakeup_ns later.
func (d *Device) interruptAt(cqNum uint32, vis ib.PS) {
	e := d.at(vis+ib.FromNanoseconds(d.Cfg.Host.InterruptToWakeupNS), evCQEvent)
	e.Arg = int64(cqNum)
}

// deliverEvent puts cq's event in its channel and wakes the thread.
func (d *Device) deliverEvent(cqNum uint32) {
	cq := d.cqs[cqNum]
	if cq.destroyed {
		return // the interrupt finds no CQ (DestroyCQ)
	}
	ch := cq.notify.ch
	cq.notify.events++
	d.Counters.CQEvents++
	ch.events = append(ch.events, cq)
	if ch.OnEvent != nil {
		ch.OnEvent(cq, d.s.Now())
	}
}
