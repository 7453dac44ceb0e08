package switchasic

import (
	"math"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// arOwner owns the ports of an adaptive routing switch (Builder.WithAR): its
// route stage, where a static switch looks up the LFT, takes for a data
// packet whose DLID has an AR group, on a service level AR applies to
// (ARTable.Adaptive), the group's least-loaded port; a packet on another
// SL takes the LFT's port, and counts in its load like any other. A static
// switch's ports deliver to the Switch itself, whose PacketArrived knows
// nothing of AR, so static runs execute exactly what they did before.
type arOwner struct{ *Switch }

// PacketArrived implements link.Owner for an AR switch. VL15 packets, and
// packets the switch drops (no route, or SL-to-VL 15 on every port it could
// take), go the static way; every other packet is routed here, so that each
// one routed to output o on VL v counts in o's queued[v] until its grant.
func (a arOwner) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	sw := a.Switch
	i := int(p.Index)
	inVL := int(pkt.VL)
	if inVL == ib.ManagementVL {
		sw.PacketArrived(p, pkt, head, tail)
		return
	}
	o := sw.lft.Lookup(pkt.DLID)
	if g, minimal := sw.ar.Split(pkt.DLID); len(g) >= 2 && sw.ar.Adaptive(pkt.SL) {
		if sw.flowlets != nil {
			o = sw.flowlet(i, pkt, head, o, g, minimal)
		} else {
			o = sw.arChoose(i, pkt, o, g, minimal)
		}
	}
	if o == NoPort || o >= sw.radix {
		sw.PacketArrived(p, pkt, head, tail) // drops it: no route
		return
	}
	outVL := sw.sl2vl.VL(i, o, pkt.SL)
	q := sw.inputVL(i, inVL)
	if outVL == ib.ManagementVL || q == nil {
		sw.PacketArrived(p, pkt, head, tail) // drops it (SL-to-VL), or the model's panic
		return
	}
	// From here as Switch.PacketArrived for a packet it forwards.
	blocks := pkt.Credits()
	sw.counters.Received++
	q.occ.Add(head, int64(blocks))
	ready := sw.ceilCycle(head) + sw.routePS
	if !sw.cutThrough {
		ready = sw.ceilCycle(tail) + sw.routePS
	}
	if sw.cc != nil {
		sw.markFECN(o, int(outVL), pkt)
	}
	sw.out[o].vl[outVL].queued += int32(blocks)
	sw.enqueue(i, inVL, entry{pkt: pkt, tail: tail, ready: ready, out: int16(o), outVL: outVL, blocks: int32(blocks)})
	if sw.NumHooks() > 0 {
		sw.trace(head, p.Name, components.TraceBufEnq, pkt, i, o, "")
	}
	sw.wake(max(ready, sw.inFreeBy[i]-sw.allocPS))
}

// adaptive returns the port of group g (lftPort's DLID's AR group, 0-based
// ports) that a data packet arriving on input i leaves on: the least loaded.
//
// The load of port p for the packet is, on the VL the packet would leave p
// on (SL-to-VL for (i, p)),
//
//	queued + pending − credits
//
// in 64-byte blocks: packets at this switch's inputs routed to p on that VL
// and not yet granted (outVLCounts.queued), plus those granted and not yet
// on the wire (pending), less the credits p's peer has advertised and not
// yet been sent (CreditsAvailable). It is what the switch knows at this
// instant of its backlog for that output VL, net of the room the next hop
// has: an idle port with an empty downstream buffer scores −buffer, one
// that streams a flow scores the blocks in flight on its link and waiting
// behind it, one whose next hop is backed up the blocks it holds there.
// NVIDIA documents only that AR "selects the output port based on the
// port's load" (InfiniBand Cluster Bring-up Procedure, "Adaptive
// Routing"); the Mellanox OMNeT++ flit model's forwarding interface has the
// input buffers report the flits queued per output queue
// (Pktfwd::repQueuedFlits) as the load its AR selection reads, which is the
// queued + pending part here.
//
// Ties go to the first port of the group in cyclic port order from the LFT
// port, so an idle fabric routes exactly as the static tables do, and the
// choice depends only on the switch's own state (no pointer that moves),
// which keeps a run deterministic, serial and partitioned alike. A port
// whose SL-to-VL entry drops the packet's SL is never chosen; if every
// port does, the LFT's port is returned (and drops it, as a static switch
// would). Nothing is allocated.
func (sw *Switch) adaptive(i int, pkt *ib.Packet, lftPort int, g []int16) int {
	best, _ := sw.leastLoaded(i, pkt, lftPort, g)
	return best
}

// arChoose returns the port of group g (pkt's DLID's AR group, whose
// first minimal ports are minimal: ARTable.Split) a data packet arriving
// on input i leaves on. A group without detours (every
// group but a Dragonfly+ spine's under topology.nonminimal) is Switch.adaptive's
// choice. With detours, a packet from an input that may not detour
// (ARTable.DetourFrom) chooses among the minimal ports alone; one that may
// takes the least loaded detour port only when the least loaded minimal
// port's load exceeds it by more than the bias:
//
//	detour  iff  load(min) − load(detour) > bias
//
// UGAL-L's rule (Singh, "Load-Balanced Routing in Interconnection
// Networks", Stanford PhD thesis, 2005; Kim et al., ISCA 2008, §4.2) with
// its hop weighting turned into an additive bias: a detour's extra global
// hop costs a fixed latency, which the bias expresses in blocks of
// backlog (the subnet manager's derivation, fabric). Minimal ports win
// ties, so an idle fabric routes minimally. Nothing is allocated.
func (sw *Switch) arChoose(i int, pkt *ib.Packet, lftPort int, g []int16, minimal int) int {
	if minimal == len(g) {
		return sw.adaptive(i, pkt, lftPort, g)
	}
	best, bestLoad := sw.leastLoaded(i, pkt, lftPort, g[:minimal])
	if !sw.ar.DetourFrom(i) {
		return best
	}
	detour, detourLoad := sw.leastLoaded(i, pkt, -1, g[minimal:])
	if detourLoad != math.MaxInt64 && (bestLoad == math.MaxInt64 || bestLoad-detourLoad > sw.ar.DetourBias()) {
		return detour
	}
	return best
}

// leastLoaded returns the least loaded port of g for a packet arriving on
// input i (Switch.adaptive's load and tie rule) and its load; lftPort
// when every port of g drops the packet's SL, with load math.MaxInt64.
// lftPort −1 (not in g) starts the ties at g's first port.
func (sw *Switch) leastLoaded(i int, pkt *ib.Packet, lftPort int, g []int16) (int, int64) {
	start := 0
	for k, p := range g {
		if int(p) == lftPort {
			start = k
			break
		}
	}
	best, bestLoad := lftPort, int64(math.MaxInt64)
	for k := range g {
		p := int(g[(start+k)%len(g)])
		v := int(sw.sl2vl.VL(i, p, pkt.SL))
		if v == ib.ManagementVL {
			continue
		}
		out := &sw.out[p]
		load := int64(out.vl[v].queued) + int64(out.vl[v].pending) - int64(sw.ports[p].CreditsAvailable(v))
		if load < bestLoad {
			best, bestLoad = p, load
		}
	}
	return best, bestLoad
}
