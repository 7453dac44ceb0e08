package fabric

import (
	"strings"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/verif"
)

// This file breaks the model on purpose, one fault at a time, and requires
// --check's checkers to report each fault with its invariant, the place and
// the time; the same run without the fault reports nothing. A fault class
// that passes silently here is a hole in the checkers.
//
// The run: configs/ndr.yaml as one design point, perftest ib_write_bw of
// 8 KiB RDMA WRITEs (two 4 KiB packets each at NDR's 4096-byte MTU) from
// host 0 to host 15, on different leaves, so every request crosses
// Leaf[0] → a spine → Leaf[3], beside the config's uniform background
// traffic between the other hosts.

// faultTap stands between a port and its owner and misbehaves once, on the
// first packet pick selects: act does the misdeed and says whether the
// packet is done with (true) or still goes to the owner (false).
type faultTap struct {
	link.Owner
	pick  func(pkt *ib.Packet) bool
	act   func(p *link.Port, pkt *ib.Packet, head, tail ib.PS) bool
	fired bool
	seq   uint64 // the picked packet's seq
	at    ib.PS  // its head arrival
}

// PacketArrived implements link.Owner.
func (f *faultTap) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	if !f.fired && f.pick(pkt) {
		f.fired, f.seq, f.at = true, pkt.Seq, head
		if f.act(p, pkt, head, tail) {
			return
		}
	}
	f.Owner.PacketArrived(p, pkt, head, tail)
}

// isWrite picks host 0's RDMA WRITE packets (they carry payload).
func isWrite(pkt *ib.Packet) bool {
	return pkt.SLID == 1 && (pkt.Opcode == ib.RDMAWriteFirst || pkt.Opcode == ib.RDMAWriteLast ||
		pkt.Opcode == ib.RDMAWriteOnly || pkt.Opcode == ib.RDMAWriteMiddle)
}

func portNamed(t *testing.T, s *Simulation, name string) *link.Port {
	t.Helper()
	for _, p := range s.Ports {
		if p.Name == name {
			return p
		}
	}
	require.FailNow(t, "no port "+name)
	return nil
}

// tapPort puts f between the named port and its owner.
func tapPort(t *testing.T, s *Simulation, name string, f *faultTap) {
	p := portNamed(t, s, name)
	f.Owner = p.Owner
	p.Owner = f
}

// cqeTwice is a hook between a block and the checkers that announces the
// first cqe twice: an HCA completing one WQE twice, as the trace shows it.
type cqeTwice struct {
	next  sim.Hook
	fired bool
}

func (h *cqeTwice) Func(ctx sim.HookCtx) {
	h.next.Func(ctx)
	if ev, ok := ctx.Item.(*components.TraceEvent); ok && !h.fired && ev.Kind == components.TraceCQE {
		h.fired = true
		h.next.Func(ctx)
	}
}

func TestCheckersCatchInjectedFaults(t *testing.T) {
	const (
		host0Port  = "Fabric.Host[0].Port[1]"
		host15Port = "Fabric.Host[15].Port[1]"
		host15HCA  = "Fabric.Host[15].HCA"
		leaf0In    = "Fabric.Leaf[0].Port[0]" // Leaf[0]'s port to host 0
	)
	type faultRun struct {
		s   *Simulation
		tap *faultTap
	}
	cases := []struct {
		name      string
		install   func(t *testing.T, r *faultRun)
		invariant string
		path      string // where the violation is reported
		detail    string // part of its detail
		atTap     bool   // the violation's time is the picked packet's delivery (its head, or later)
		panics    bool   // the model's own credit accounting stops the run first
	}{
		{name: "clean"},
		{name: "drop at a switch", install: func(t *testing.T, r *faultRun) {
			// Leaf[0] loses a WRITE packet at its input: the blocks free (so
			// credits keep flowing) and nothing is forwarded.
			r.tap = &faultTap{pick: isWrite, act: func(p *link.Port, pkt *ib.Packet, _, _ ib.PS) bool {
				p.Release(int(pkt.VL), pkt.Credits())
				return true
			}}
			tapPort(t, r.s, leaf0In, r.tap)
			// The next packet of the message reaches host 15 first: its PSN
			// is one past the one the responder expects.
		}, invariant: verif.InvOrdering, path: host15HCA, detail: "(a gap of 1)", atTap: true},
		{name: "duplicate", install: func(t *testing.T, r *faultRun) {
			// Host 15's port hands its HCA a second copy of a WRITE packet
			// (same seq). The copy rides VL 15, whose release is a no-op,
			// so the buffers stay consistent and only the duplicate is wrong.
			r.tap = &faultTap{pick: isWrite, act: func(p *link.Port, pkt *ib.Packet, head, tail ib.PS) bool {
				cp := r.s.Sim.NewPacket()
				*cp = *pkt
				cp.Payload = append([]byte(nil), pkt.Payload...)
				cp.VL = ib.ManagementVL
				r.tap.Owner.PacketArrived(p, pkt, head, tail)
				r.tap.Owner.PacketArrived(p, cp, head, tail)
				return true
			}}
			tapPort(t, r.s, host15Port, r.tap)
		}, invariant: verif.InvLossless, path: host15HCA, detail: "delivered twice", atTap: true},
		{name: "corrupt a payload byte", install: func(t *testing.T, r *faultRun) {
			// A bit flip in Leaf[0]'s buffer: the first payload byte of a
			// WRITE changes; headers and the stamped ICRC do not. The
			// receiver's ICRC over what arrived no longer matches.
			r.tap = &faultTap{pick: func(pkt *ib.Packet) bool { return isWrite(pkt) && len(pkt.Payload) > 0 },
				act: func(_ *link.Port, pkt *ib.Packet, _, _ ib.PS) bool {
					pkt.Payload[0] ^= 0x01
					return false
				}}
			tapPort(t, r.s, leaf0In, r.tap)
		}, invariant: verif.InvLossless, path: host15HCA, detail: "corrupted: icrc", atTap: true},
		{name: "invent a credit", panics: true, install: func(t *testing.T, r *faultRun) {
			// Leaf[0]'s input returns one block more than the packet took
			// (and never takes it back): host 0 ends with a credit its
			// peer's buffer does not have.
			r.tap = &faultTap{pick: isWrite, act: func(p *link.Port, pkt *ib.Packet, _, _ ib.PS) bool {
				p.Release(int(pkt.VL), 1)
				return false
			}}
			tapPort(t, r.s, leaf0In, r.tap)
		}, invariant: verif.InvCredit, path: host0Port, detail: "above the peer's buffer"}, // not reached: panics
		{name: "reorder two packets of one QP", install: func(t *testing.T, r *faultRun) {
			// Host 15's port holds the first WRITE packet back and hands it
			// over after the next one: the responder sees PSN n+1 before n.
			var held *ib.Packet
			r.tap = &faultTap{pick: isWrite, act: func(_ *link.Port, pkt *ib.Packet, _, _ ib.PS) bool {
				held = pkt
				return true
			}}
			tapPort(t, r.s, host15Port, r.tap)
			p := portNamed(t, r.s, host15Port)
			inner := p.Owner
			p.Owner = ownerFunc{Owner: inner, arrived: func(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
				inner.PacketArrived(p, pkt, head, tail)
				if held != nil && pkt != held && isWrite(pkt) {
					h := held
					held = nil
					r.tap.Owner.PacketArrived(p, h, head, tail)
				}
			}}
		}, invariant: verif.InvOrdering, path: host15HCA, detail: "request PSN", atTap: true},
		{name: "deliver to the wrong host", install: func(t *testing.T, r *faultRun) {
			// A WRITE for host 15 (LID 16) comes out at host 14, a
			// background endpoint: host 15's port frees its blocks and host
			// 14 accepts the packet (on VL 15, so its buffers stay right).
			// The requester's retry delivers the data to host 15 later.
			host14 := portNamed(t, r.s, "Fabric.Host[14].Port[1]")
			r.tap = &faultTap{pick: isWrite, act: func(p *link.Port, pkt *ib.Packet, head, tail ib.PS) bool {
				p.Release(int(pkt.VL), pkt.Credits())
				pkt.VL = ib.ManagementVL
				host14.Owner.PacketArrived(host14, pkt, head, tail)
				return true
			}}
			tapPort(t, r.s, host15Port, r.tap)
		}, invariant: verif.InvLossless, path: "Fabric.Host[14]", detail: "dlid 16", atTap: true},
		{name: "complete a WQE twice", invariant: verif.InvOrdering, path: "Fabric.Host[0].HCA", detail: "completion for WQE"},
	}
	yaml, ok := configs.Lookup("ndr.yaml")
	require.True(t, ok)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := Load(yaml, []string{"sweep={}", "workload.test=write_bw", "workload.size=8192",
				"workload.iterations=10", "sim.check=true"})
			require.NoError(t, err)
			r := &faultRun{}
			var chk *verif.Checkers
			run := func() {
				_, err = Run(l, RunOptions{Observe: func(s *Simulation) {
					r.s = s
					chk = verif.NewCheckers(verif.CheckConfig{OnViolation: func(*verif.Violation) { s.Stop() }})
					var hook sim.Hook = chk
					if c.name == "complete a WQE twice" {
						hook = &cqeTwice{next: chk}
					}
					verif.AttachHook(hook, s.Blocks...)
					if c.install != nil {
						c.install(t, r)
					}
				}})
			}
			if c.panics {
				// Leaf[0].Port[0] held one packet's 65 blocks (4096 + 40 header
				// bytes → ⌈4138/64⌉ = 65 blocks, ib-facts §3) less one freed
				// early: its own release finds 64 in use.
				assert.PanicsWithValue(t, "link: Fabric.Leaf[0].Port[0] releases 65 blocks on VL 0 with 64 of 260 in use: a credit returned twice", run)
				return
			}
			run()
			if chk.Err() == nil {
				// A violation stops the run, which then ends unfinished.
				require.NoError(t, err)
			}
			chk.Finish(r.s.Now(), r.s.Settled)
			if c.invariant == "" {
				require.True(t, r.s.Settled, "the clean run settled, so the end-of-run checks ran")
				assert.NoError(t, chk.Err())
				return
			}
			if r.tap != nil {
				require.True(t, r.tap.fired, "the fault happened")
			}
			require.Error(t, chk.Err(), "the fault passed --check silently")
			v := chk.Violations()[0]
			assert.Equal(t, c.invariant, v.Invariant, "%v", v)
			assert.Equal(t, c.path, v.Path, "%v", v)
			assert.Contains(t, v.Detail, c.detail)
			if c.atTap {
				// Reported when the faulty packet reaches its destination:
				// no earlier than the fault, and the same run, not its end.
				assert.GreaterOrEqual(t, v.Time, r.tap.at)
				assert.True(t, strings.Contains(v.Detail, "seq") || strings.Contains(v.Detail, "PSN"), v.Detail)
			}
		})
	}
}

// ownerFunc is a link.Owner whose PacketArrived is a function.
type ownerFunc struct {
	link.Owner
	arrived func(p *link.Port, pkt *ib.Packet, head, tail ib.PS)
}

func (o ownerFunc) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	o.arrived(p, pkt, head, tail)
}
