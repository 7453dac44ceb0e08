package hca

import (
	"fmt"
	"syscall"

	"github.com/hcasim/hcasim/ib"
)

// CQ moderation (ibv_modify_cq with IBV_CQ_ATTR_MODERATE) and CQ resize
// (ibv_resize_cq), as mlx5 builds them.
//
// Moderation: an armed CQ whose CQ context carries cq_max_count and
// cq_period (mlx5_core_modify_cq_moderation writes both with
// MLX5_CQ_MODIFY_PERIOD | MLX5_CQ_MODIFY_COUNT) does not fire on the
// first CQE that satisfies its arm: it holds the event until count such
// CQEs have come since the arm, or period µs have passed since the first
// of them, whichever is first (ib_modify_cq: "cq_count: number of CQEs
// that will trigger an event; cq_period: max period of time in usec
// before triggering an event"). 0 for either turns that trigger off; 0/0
// (the default) is no moderation: every satisfying CQE fires, as
// cqevent.go does. The ranges are mlx5's CQ context fields: cq_max_count
// 16 bits (MLX5_MAX_CQ_COUNT 65535), cq_period 12 bits (MLX5_MAX_CQ_PERIOD
// 4095; mlx5_ib_modify_cq refuses a larger period with EINVAL).
//
// The model's timer starts at the first held CQE's issue on PCIe (or, for
// an arm that finds unpolled CQEs held already, at the arm's arrival)
// and is not restarted by later CQEs; its expiry passes the EQE through
// the cqe stage, as an arm that fires at once does. mlx5 has two period
// modes, the timer started at the last EQE (the default) or restarted by
// every CQE (net/mlx5e "CQE based moderation"); the first-held-CQE rule
// here is the model's, unconfirmed against the PRM's wording.

// MaxCQModCount and MaxCQModPeriodUS are the largest cq_count and
// cq_period ModifyCQ takes: mlx5's cqc.cq_max_count (16 bits) and
// cqc.cq_period (12 bits).
const (
	MaxCQModCount    = 1<<16 - 1
	MaxCQModPeriodUS = 1<<12 - 1
)

// MaxCQDepth is the most CQEs a CQ holds: 2^log_max_cq_sz, 22 on
// ConnectX (hca.cq_depth's bound).
const MaxCQDepth = 1 << 22

// cqMod is a CQ's moderation state (part of its HCA context).
type cqMod struct {
	count  uint32 // cq_max_count: satisfying CQEs per event; 0: no count trigger
	period ib.PS  // cq_period; 0: no timer
	// held counts the CQEs that satisfy the arm and have not fired it.
	held uint32
	// gen numbers the arm's timer: a timer event of an older generation
	// (its arm fired or was re-armed since) is stale.
	gen uint32
}

// on reports whether moderation holds events.
func (m *cqMod) on() bool { return m.count > 1 || m.period > 0 }

// ModifyCQ sets cq's event moderation (ibv_modify_cq with
// IBV_CQ_ATTR_MODERATE): count CQEs per event, periodUS µs at most
// between the first held CQE and its event; 0/0 turns it off. Out of
// mlx5's ranges (count 0 … 65535, period 0 … 4095 µs) is EINVAL, as is a
// destroyed CQ. The values take effect from the next CQE; a timer
// already running keeps its expiry.
func (d *Device) ModifyCQ(cq *CQ, count, periodUS int) error {
	if cq == nil || cq.dev != d || cq.destroyed {
		return fmt.Errorf("hca: %s modify_cq: no such CQ: %w", d.Name, syscall.EINVAL)
	}
	if count < 0 || count > MaxCQModCount {
		return fmt.Errorf("cq %d: modify_cq: cq_count %d is not 0 … %d: %w", cq.Num, count, MaxCQModCount, syscall.EINVAL)
	}
	if periodUS < 0 || periodUS > MaxCQModPeriodUS {
		return fmt.Errorf("cq %d: modify_cq: cq_period %d µs is not 0 … %d: %w", cq.Num, periodUS, MaxCQModPeriodUS, syscall.EINVAL)
	}
	m := &cq.notify.mod
	m.count, m.period = uint32(count), ib.PS(periodUS)*ib.Microsecond
	return nil
}

// Moderation returns cq's cq_count and cq_period (µs).
func (cq *CQ) Moderation() (count, periodUS int) {
	return int(cq.notify.mod.count), int(cq.notify.mod.period / ib.Microsecond)
}

// holdCQE: a CQE issued at issue satisfies cq's arm under moderation. It
// fires when it is the count-th held; the first held starts the timer.
func (d *Device) holdCQE(cq *CQ, issue ib.PS) {
	m := &cq.notify.mod
	m.held++
	if m.count > 0 && m.held >= m.count {
		d.fireEvent(cq, issue)
		return
	}
	if m.held == 1 {
		d.startModTimer(cq, issue)
	}
}

// holdAtArm: an arm reaching the HCA finds held CQEs past its consumer
// index (held of them; 1 for a solicited-only arm, whose solicited CQEs
// past the index are not counted): the CQ stays armed, holding them,
// unless they reach count, when it fires at once.
func (d *Device) holdAtArm(cq *CQ, held uint32, solicitedOnly bool) {
	n := &cq.notify
	n.armed, n.solicited = true, solicitedOnly
	n.mod.held = held
	if n.mod.count > 0 && held >= n.mod.count {
		d.fireEvent(cq, max(d.stages[StageCQE].accept(d.s.Now(), 0), n.lastIssue))
		return
	}
	d.startModTimer(cq, d.s.Now())
}

// startModTimer starts cq's moderation timer at t, if it has a period.
func (d *Device) startModTimer(cq *CQ, t ib.PS) {
	m := &cq.notify.mod
	if m.period == 0 {
		return
	}
	e := d.at(t+m.period, evCQModTimer)
	e.Arg = int64(cq.Num)<<32 | int64(m.gen)
}

// modTimeout: cq's moderation timer of generation gen expires. If its arm
// still holds CQEs the event fires, its EQE through the cqe stage and
// behind the CQ's last CQE.
func (d *Device) modTimeout(cq *CQ, gen uint32) {
	n := &cq.notify
	if cq.destroyed || !n.armed || n.mod.gen != gen || n.mod.held == 0 {
		return
	}
	d.fireEvent(cq, max(d.stages[StageCQE].accept(d.s.Now(), 0), n.lastIssue))
}

// ResizeCQ gives cq a ring of depth CQEs (ibv_resize_cq). depth must be a
// power of two (the model's rings are; libmlx5 rounds cqe + 1 up to one),
// 2 … MaxCQDepth, and at least the CQEs written and not yet polled (the
// man page's "cqe must be at least the number of unpolled entries";
// mlx5's firmware refuses with BAD_SIZE_OUTS_CQES, EINVAL): otherwise
// EINVAL. The same depth does nothing (libmlx5 returns at once).
//
// The unpolled CQEs are copied to the new ring in order, each at its
// index modulo the new depth with that lap's owner bit
// (mlx5_cq_resize_copy_cqes), and the HCA writes later CQEs to the new
// ring. A CQE issued before the call and not yet visible lands in the new
// ring, after the copied ones: mlx5 switches rings by a MODIFY_CQ command
// after which the HCA writes a RESIZE_CQ CQE to the old ring behind every
// CQE it issued to it, and libmlx5 copies up to that marker, so when
// ibv_resize_cq returns every CQE is in the new ring in order. The model
// collapses that command's time to none: the switch is at the call, and
// a CQE takes its ring address when it becomes visible.
func (d *Device) ResizeCQ(cq *CQ, depth int) error {
	if cq == nil || cq.dev != d || cq.destroyed {
		return fmt.Errorf("hca: %s resize_cq: no such CQ: %w", d.Name, syscall.EINVAL)
	}
	if depth < 2 || depth > MaxCQDepth || depth&(depth-1) != 0 {
		return fmt.Errorf("cq %d: resize_cq: depth %d is not a power of two 2 … %d: %w", cq.Num, depth, MaxCQDepth, syscall.EINVAL)
	}
	unpolled := cq.pi - cq.ci
	if uint32(depth) < unpolled {
		return fmt.Errorf("cq %d: resize_cq: depth %d is below the %d CQEs not polled: %w", cq.Num, depth, unpolled, syscall.EINVAL)
	}
	if depth == cq.Depth {
		return nil
	}
	buf := d.Malloc(depth * CQEBytes)
	var b [CQEBytes]byte
	b[cqeOpOwnOff] = CQEInvalid << 4
	for i := 0; i < depth; i++ {
		d.Mem.Write(buf+uint64(i)*CQEBytes, b[:])
	}
	nd := uint32(depth)
	for i := cq.ci; i != cq.pi; i++ {
		d.Mem.Read(cq.buf+uint64(i%uint32(cq.Depth))*CQEBytes, b[:])
		b[cqeOpOwnOff] = b[cqeOpOwnOff]&^1 | byte((i/nd)&1)
		d.Mem.Write(buf+uint64(i%nd)*CQEBytes, b[:])
	}
	cq.buf, cq.Depth = buf, depth
	return nil
}
