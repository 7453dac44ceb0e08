package switchasic

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"math/rand/v2"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// CCMarking is a switch's congestion control marking setup (IBA Annex A10
// Switch Congestion Setting, the same for every port and VL): the
// threshold, in the model's terms, and the marking rate.
type CCMarking struct {
	// ThresholdBlocks: an output VL is congested while more than this many
	// 64-byte blocks of packets routed to it wait at the switch's inputs,
	// not yet granted (outVLCounts.queued, before the packet being forwarded
	// joins it).
	ThresholdBlocks int
	// MarkingRate: after marking a packet, this many eligible packets leave
	// the same output VL unmarked (IBA Marking_Rate; 0 marks every one).
	// With Random it is the mean number between marks instead.
	MarkingRate int
	// Random marks each eligible packet with probability 1/(MarkingRate+1),
	// drawn from the switch's own stream (Seed and the switch's name), so
	// the number of eligible packets from one mark to the next is
	// geometric with mean MarkingRate+1, IBA's "mean number of packets
	// between markings". False: the countdown, exactly MarkingRate between.
	Random bool
	// Seed is the run's seed (Random only).
	Seed uint64
	// VictimMarks is, per port (0-based), whether the port marks while its
	// output VL is a victim of congestion rather than its root (IBA's
	// Victim_Mask bit for the port; victim: the output VL has fewer
	// downstream credits than the packet needs, markFECN). Nil:
	// every port does (cc.victim_mask all), and the victim state is never
	// looked at, so the marking is what it was before the mask existed.
	VictimMarks []bool
}

// ccMarker is the marking state: the setup and a countdown per output VL,
// or with random marking the switch's stream.
type ccMarker struct {
	threshold int32
	rate      int32
	countdown []int32 // [out*MaxVLs + vl]: eligible packets still to pass unmarked
	marked    uint64  // packets marked over the whole run (not reset with the window's statistics)
	// random: an eligible packet is marked when a draw from pcg is below
	// markBelow = ⌊2^64 / (rate+1)⌋: probability 1/(rate+1) to within
	// 2^-64, in integers, so every machine draws the same marks.
	random    bool
	markBelow uint64
	pcg       rand.PCG
	// victimMarks is CCMarking.VictimMarks: per port, whether it marks
	// while a victim; nil when every port does (no victim check at all).
	victimMarks []bool
	// victimUnmarked counts the packets over the threshold that found
	// their output VL a victim at a port whose victimMarks bit is clear,
	// so were not eligible (over the whole run, as marked).
	victimUnmarked uint64
}

// FECNMarked returns the packets this switch set FECN on since the run
// began (0 without congestion control).
func (sw *Switch) FECNMarked() uint64 {
	if sw.cc == nil {
		return 0
	}
	return sw.cc.marked
}

// VictimUnmarked returns the packets this switch did not consider for
// marking since the run began because their output VL was over the
// threshold only as a victim of congestion (no downstream credits for the
// packet) at a port whose Victim_Mask bit is clear, and whether the switch
// checks at all (false without congestion control, or with every port's
// bit set, cc.victim_mask all).
func (sw *Switch) VictimUnmarked() (n uint64, checked bool) {
	if sw.cc == nil || sw.cc.victimMarks == nil {
		return 0, false
	}
	return sw.cc.victimUnmarked, true
}

// newCCMarker makes the marking state of the switch name with radix ports.
func newCCMarker(m CCMarking, radix int, name string) *ccMarker {
	c := &ccMarker{threshold: int32(m.ThresholdBlocks), rate: int32(m.MarkingRate),
		countdown: make([]int32, radix*link.MaxVLs)}
	if m.VictimMarks != nil {
		if len(m.VictimMarks) != radix {
			panic(fmt.Sprintf("switchasic: %s: %d victim mask bits for %d ports", name, len(m.VictimMarks), radix))
		}
		c.victimMarks = append([]bool(nil), m.VictimMarks...)
	}
	// At rate 0 both modes mark every eligible packet: no draws.
	if m.Random && m.MarkingRate > 0 {
		c.random = true
		c.markBelow, _ = bits.Div64(1, 0, uint64(m.MarkingRate)+1)
		// The switch's own stream, as a link's bit errors have theirs
		// (link/biterrors.go): the draws depend only on the order of the
		// eligible packets at this switch, which a partitioned run keeps.
		h := fnv.New64a()
		h.Write([]byte(name))
		c.pcg.Seed(m.Seed, h.Sum64()^0x63636d61_726b696e) // "ccmarkin"
	}
	return c
}

// mark decides whether an eligible packet for output o, VL v is marked:
// the countdown's turn, or a draw.
func (m *ccMarker) mark(o, v int) bool {
	if m.random {
		return m.pcg.Uint64() < m.markBelow
	}
	c := &m.countdown[o*link.MaxVLs+v]
	if *c > 0 {
		*c--
		return false
	}
	*c = m.rate
	return true
}

// markFECN is called as a data packet that arrived is routed to output o,
// data VL v (the switch forwards it there), before its own blocks join o's
// queued count: if what already waits for o on v is over the threshold,
// the packet is eligible, and every (rate+1)-th eligible packet gets FECN
// (with random marking, each with probability 1/(rate+1)).
// A packet that already carries FECN (marked upstream) keeps it and is not
// counted again; a CNP is never marked (it is the notification itself, and
// IBA marks only packets of at least Packet_Size, which a 0-payload CNP is
// below).
//
// The congestion state is the output VL's backlog at the instant the packet
// is forwarded to it (IBA Annex A10 marks packets forwarded to a congested
// port; the threshold's meaning in blocks is this model's,
// docs/congestion.md). Marking as the packet joins the backlog, rather than
// as it leaves, tells the source a queueing delay sooner.
//
// Root or victim: at that same instant the congested output VL is a
// victim of congestion when its next hop has not advertised room for this
// packet (the credits the downstream port advertised, less those promised
// to granted packets not yet on the wire, are fewer than the packet's
// blocks: hasCredits fails, so the backlog waits on the buffer beyond the
// link), and the root of it otherwise (the backlog is the link's own
// oversubscription). A port whose Victim_Mask bit is clear (victimMarks)
// does not mark as a victim: the packet is not eligible, takes no turn of
// the countdown and no draw, and counts in victimUnmarked. With every bit
// set (victimMarks nil, cc.victim_mask all: LLNL's OpenSM settings set the
// bit of every port) nothing is checked. The marking lives in the port
// owners (ccOwner, arOwner), so a switch without congestion control
// executes none of it.
func (sw *Switch) markFECN(o, v int, pkt *ib.Packet) {
	m := sw.cc
	if pkt.FECN || pkt.Opcode == ib.CNP || sw.out[o].vl[v].queued <= m.threshold {
		return
	}
	if m.victimMarks != nil && !m.victimMarks[o] && !sw.hasCredits(o, v, pkt.Credits()) {
		m.victimUnmarked++
		return
	}
	if !m.mark(o, v) {
		return
	}
	pkt.FECN = true
	m.marked++
}

// ccOwner owns the ports of a static switch with congestion control: it
// routes the packet as Switch.PacketArrived will, marks it (markFECN), hands
// it to Switch.PacketArrived, and counts it in its output's queued blocks
// (on an AR switch arOwner does all this), which every grant takes off, so
// queued is the backlog markFECN compares with the threshold. A switch
// without congestion control never reads queued and runs exactly what it
// ran before.
type ccOwner struct{ *Switch }

// PacketArrived implements link.Owner.
func (c ccOwner) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	sw := c.Switch
	if int(pkt.VL) == ib.ManagementVL {
		sw.PacketArrived(p, pkt, head, tail)
		return
	}
	// The route Switch.PacketArrived takes: a packet it drops (no route,
	// or SL-to-VL 15) is never granted, not marked and not counted.
	o := sw.lft.Lookup(pkt.DLID)
	if o == NoPort || o >= sw.radix {
		sw.PacketArrived(p, pkt, head, tail)
		return
	}
	v := sw.sl2vl.VL(int(p.Index), o, pkt.SL)
	if v == ib.ManagementVL {
		sw.PacketArrived(p, pkt, head, tail)
		return
	}
	sw.markFECN(o, int(v), pkt)
	blocks := int32(pkt.Credits())
	sw.PacketArrived(p, pkt, head, tail)
	sw.out[o].vl[v].queued += blocks
}
