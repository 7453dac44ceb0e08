package switchasic

import (
	"fmt"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// Builder makes switches. It is a value type: each WithX returns a changed
// copy, so one partly configured builder can make many switches.
//
//	sw, err := switchasic.MakeBuilder().
//		WithSim(s).
//		WithConfig(cfg).
//		WithLFT(lft).
//		WithFlowControl(linkCfg).
//		Build("Fabric.Leaf[0]")
//	link.Connect(sw.Port(3), host.Port(), linkCfg.Timing(2))
type Builder struct {
	everyCycle    bool
	s             *components.Sim
	cfg           Config
	lft           *LFT
	mft           *MFT
	sl2vl         *SL2VL
	ar            *ARTable
	flowletGap    ib.PS // AR flowlet gap (WithARFlowlet); 0 = a port for every packet
	cc            *CCMarking
	fcRefresh     ib.PS
	fcMinInterval ib.PS
	mtu           int // link MTU in payload bytes; 0 = no packet-size check
}

// MakeBuilder returns a builder with Defaults() and no simulation, LFT or
// SL-to-VL override.
func MakeBuilder() Builder {
	d := link.Defaults()
	return Builder{cfg: Defaults()}.WithFlowControl(d)
}

// WithRoundsEveryCycle makes the switch run an allocation round on every core
// clock edge, as a per-cycle model would, instead of only on the edges where
// something changed. It is the reference the event-driven rounds must equal
// (fabric's TestPerCycleRoundsAgree); it is slower and changes no result but
// the number of rounds.
func (b Builder) WithRoundsEveryCycle() Builder { b.everyCycle = true; return b }

// WithSim sets the simulation the switch runs in (required).
func (b Builder) WithSim(s *components.Sim) Builder { b.s = s; return b }

// WithConfig sets the switch knobs.
func (b Builder) WithConfig(cfg Config) Builder { b.cfg = cfg; return b }

// WithLFT sets the linear forwarding table (required). The switch keeps the
// pointer, so the fabric may fill the table after Build and before Run.
func (b Builder) WithLFT(lft *LFT) Builder { b.lft = lft; return b }

// WithMFT sets the multicast forwarding table: a packet whose DLID is a
// multicast LID with an entry is copied to the entry's ports (but never
// back out of its arrival port; multicast.go). nil (the default) forwards
// no multicast: such a packet has no LFT entry and is dropped, as before.
// The switch keeps the pointer. Replication is modelled for FIFO input
// queueing only, static routing and no congestion control: Build refuses
// the others.
func (b Builder) WithMFT(t *MFT) Builder { b.mft = t; return b }

// WithSL2VL sets per-(input, output) SL-to-VL tables; without it every pair
// uses Config.SL2VLTable().
func (b Builder) WithSL2VL(m *SL2VL) Builder { b.sl2vl = m; return b }

// WithAR turns adaptive routing on with the subnet manager's groups: a data
// packet whose DLID has a group leaves on the least-loaded port of it
// (Switch.adaptive) instead of its LFT port. nil (the default) is static
// routing. The switch keeps the pointer.
func (b Builder) WithAR(t *ARTable) Builder { b.ar = t; return b }

// WithARFlowlet makes an adaptive routing switch (WithAR) keep a flow's
// port while the flow's packets arrive less than gap apart, choosing again
// only after an idle gap (flowlet.go). 0 (the default) chooses a port for
// every packet, as before flowlets existed.
func (b Builder) WithARFlowlet(gap ib.PS) Builder { b.flowletGap = gap; return b }

// WithCC turns congestion control's FECN marking on (IBA Annex A10;
// marking.go). nil (the default) marks nothing, and the switch runs the code
// it ran before congestion control existed.
func (b Builder) WithCC(m *CCMarking) Builder { b.cc = m; return b }

// WithFlowControl takes what the switch needs from the links its ports sit
// on: the flow-control packet intervals (link.fc_refresh_ns,
// link.fc_min_interval_ns) and the MTU, against which Build checks that one
// VL's buffer holds the largest packet.
func (b Builder) WithFlowControl(c link.Config) Builder {
	b.fcRefresh = c.FCRefresh()
	b.fcMinInterval = c.FCMinInterval()
	b.mtu = c.MTU
	return b
}

// MaxPacketBytes is the largest data packet at an MTU that the buffer check
// assumes: RDMA WRITE ONLY with immediate (RETH + ImmDt), no GRH — traffic
// inside one subnet (ib-facts.md §2).
func MaxPacketBytes(mtu int) int {
	p := ib.Packet{Opcode: ib.RDMAWriteOnlyImm, PayloadLen: mtu}
	return p.WireBytes()
}

// Build makes the switch and its Radix ports, named name+".Port[i]". A bad
// config is a user error and is returned; a missing simulation or LFT is a
// caller bug and panics.
func (b Builder) Build(name string) (*Switch, error) {
	if b.s == nil || b.lft == nil {
		panic(fmt.Sprintf("switchasic.Builder.Build %s: WithSim and WithLFT are required", name))
	}
	if err := b.cfg.Validate(); err != nil {
		return nil, err
	}
	if b.mtu > 0 {
		if err := b.cfg.CheckPacketFits(MaxPacketBytes(b.mtu)); err != nil {
			return nil, err
		}
	}
	if b.mft != nil {
		switch {
		case b.cfg.Queueing != QueueFIFO:
			return nil, fmt.Errorf("switch.queueing: %q with multicast traffic: replication is modelled for fifo input queueing only (a multicast packet at a VOQ input is not)", b.cfg.Queueing)
		case b.ar != nil:
			return nil, fmt.Errorf("topology.adaptive_routing: multicast traffic with adaptive routing is not modelled (the MFT is static)")
		case b.cc != nil:
			return nil, fmt.Errorf("cc.enable: multicast traffic with congestion control is not modelled")
		}
	}
	alloc, err := components.NewAllocator(b.cfg.Allocator, b.cfg.Radix, b.cfg.Radix, b.cfg.ISLIPIterations)
	if err != nil {
		return nil, fmt.Errorf("switch.allocator: %w", err)
	}
	sl2vl := b.sl2vl
	if sl2vl == nil {
		sl2vl = NewSL2VL(b.cfg.Radix, b.cfg.SL2VLTable())
	}
	sw := newSwitch(name, b.s, b.cfg, b.lft, b.mft, sl2vl, b.ar, b.cc, alloc, b.fcRefresh, b.fcMinInterval)
	if b.ar != nil && b.flowletGap > 0 {
		sw.flowlets = newFlowletTable(b.flowletGap, FlowletEntries)
	}
	if b.everyCycle {
		sw.everyCycle = true
		sw.scheduleRound(sw.ceilCycle(b.s.Now()))
	}
	return sw, nil
}
