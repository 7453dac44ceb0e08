package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// KindMulticast is workload.kind multicast: synthetic multicast traffic,
// members of one group (workload.group) sending to it (workload.senders)
// by an injection process at workload.offered_load, workload.size bytes a
// packet; the switches replicate it (switchasic's MFT).
const KindMulticast = "multicast"

// McastQPN is the destination QP of a multicast packet (IBA 9.8.1: QP
// 0xFFFFFF, delivered to every QP of the port attached to the group).
const McastQPN = 0xFFFFFF

// checkMulticastKeys checks workload.group and workload.senders on their
// own (their hosts against the fabric's count: ParseHostList at build).
func (c *Config) checkMulticastKeys(prefix string) error {
	for _, k := range []struct{ key, v string }{{"group", c.Group}, {"senders", c.Senders}} {
		if k.v == "" {
			continue
		}
		if _, err := ParseHostList(k.v, prefix+"."+k.key, 1<<20); err != nil {
			return err
		}
	}
	if len(c.Groups) > MaxMulticastGroups {
		return fmt.Errorf("%s.groups: %d groups is more than the %d multicast LIDs 0xC000 to 0xFFFE", prefix, len(c.Groups), MaxMulticastGroups)
	}
	for k, g := range c.Groups {
		if _, err := ParseHostList(g, fmt.Sprintf("%s.groups[%d]", prefix, k), 1<<20); err != nil {
			return err
		}
	}
	for k, g := range c.GroupSenders {
		if _, err := ParseHostList(g, fmt.Sprintf("%s.group_senders[%d]", prefix, k), 1<<20); err != nil {
			return err
		}
	}
	if len(c.GroupSenders) > 0 {
		switch {
		case len(c.Groups) == 0:
			return fmt.Errorf("%s.group_senders: %d lists are set without %s.groups; they name each group's senders, so give the groups too (or use %s.senders)", prefix, len(c.GroupSenders), prefix, prefix)
		case len(c.GroupSenders) != len(c.Groups):
			return fmt.Errorf("%s.group_senders: %d lists for the %d of %s.groups; give one host list per group, in its order", prefix, len(c.GroupSenders), len(c.Groups), prefix)
		case c.Senders != "":
			return fmt.Errorf("%s.senders: %q is set beside %s.group_senders; name the senders in one of the two", prefix, c.Senders, prefix)
		}
	}
	for _, k := range []struct {
		key string
		n   int
	}{{"group_loads", len(c.GroupLoads)}, {"group_sizes", len(c.GroupSizes)}} {
		switch {
		case k.n == 0:
		case len(c.Groups) == 0:
			return fmt.Errorf("%s.%s: %d entries are set without %s.groups; they are per group, so give the groups too (or use %s.%s)", prefix, k.key, k.n, prefix, prefix, map[string]string{"group_loads": "offered_load", "group_sizes": "size"}[k.key])
		case k.n != len(c.Groups):
			return fmt.Errorf("%s.%s: %d entries for the %d of %s.groups; give one per group, in its order", prefix, k.key, k.n, len(c.Groups), prefix)
		}
	}
	for k, l := range c.GroupLoads {
		if math.IsNaN(l) || l < MinOfferedLoad || l > 1 {
			return fmt.Errorf("%s.group_loads[%d]: %v is out of range (%v to 1, a fraction of the link)", prefix, k, l, MinOfferedLoad)
		}
	}
	if len(c.Groups) > 0 && c.Group != "" {
		return fmt.Errorf("%s.group: %q is set beside %s.groups; give the one group in groups, or use group alone", prefix, c.Group, prefix)
	}
	if l := c.BackgroundLoad; math.IsNaN(l) || l < 0 || l > 1 {
		return fmt.Errorf("%s.background_load: %v is out of range (0 for workload.offered_load, or above 0 up to 1)", prefix, l)
	}
	if h := c.BackgroundHosts; h != "" && h != BackgroundOthers && h != BackgroundAll {
		return fmt.Errorf("%s.background_hosts: %q is not a choice (others: the hosts in no multicast group; all: every host)", prefix, h)
	}
	if l := c.BackgroundLoad; l > 0 && l < MinOfferedLoad {
		return fmt.Errorf("%s.background_load: %v is below the smallest load the injectors take, %v", prefix, l, MinOfferedLoad)
	}
	return nil
}

// Which hosts send a multicast run's unicast background
// (workload.background_hosts).
const (
	BackgroundOthers = "others" // the hosts in no group (the default)
	BackgroundAll    = "all"    // every host, group members too
)

// GroupLoad returns multicast group k's senders' offered load:
// workload.group_loads[k], or workload.offered_load.
func (c *Config) GroupLoad(k int) float64 {
	if len(c.GroupLoads) > 0 {
		return c.GroupLoads[k]
	}
	return c.OfferedLoad
}

// GroupSize returns multicast group k's payload bytes:
// workload.group_sizes[k], or workload.size.
func (c *Config) GroupSize(k int) int {
	if len(c.GroupSizes) > 0 {
		return c.GroupSizes[k]
	}
	return c.Size
}

// MaxMulticastGroups is how many groups the multicast LIDs 0xC000 to
// 0xFFFE number (IBA 1.2 §4.1.1; ib-facts.md §4).
const MaxMulticastGroups = 0xFFFE - 0xC000 + 1

// ParseHostList parses a host list, "0-7,12" (host indices, ranges
// inclusive), for key; hosts is the fabric's host count. The result is
// increasing, without repeats.
func ParseHostList(s, key string, hosts int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%s: %q in %q is not a host index or range (e.g. 0-7,12)", key, item, s)
		}
		if b >= hosts {
			return nil, fmt.Errorf("%s: host %d in %q is beyond the fabric's %d hosts (0 to %d)", key, b, s, hosts, hosts-1)
		}
		for h := a; h <= b; h++ {
			if seen[h] {
				return nil, fmt.Errorf("%s: host %d appears twice in %q", key, h, s)
			}
			seen[h] = true
			out = append(out, h)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// McastHost is a host of synthetic multicast traffic: a group member that
// accepts every packet at its tail and, if it is a sender, injects UD SEND
// ONLY packets to the group's MLID by an injection process into a source
// queue (latency counts from creation, as for Endpoint). A multicast packet
// carries a GRH, as a verbs address handle for a group must (the MGID is
// its DGID): 74 bytes of headers and CRCs with the DETH.
type McastHost struct {
	tracer
	Name  string
	Index int    // host index
	LID   uint16 // this host's LID
	MLID  uint16 // the group's multicast LID (the one it sends to)
	// Also are the multicast LIDs of the other groups the host has joined
	// (nil for a host in one group): their copies are for it too.
	Also []uint16
	// SL is the service level of every packet; VL the host port's VL for it.
	SL, VL uint8
	// OnDeliver is called for each packet accepted here.
	OnDeliver func(pkt *ib.Packet, tail ib.PS)
	// OnInject is called for each packet put on the wire.
	OnInject func(pkt *ib.Packet)

	s      *components.Sim
	port   *link.Port
	inject Injector // nil: not a sender
	rng    *rand.Rand
	size   int // payload bytes
	queue  *components.FIFO[*ib.Packet]
	psn    uint32
	next   ib.PS // gap before the next creation

	injecting            bool
	sharedWire           bool // SharePort
	measureLo, measureHi ib.PS

	Created   uint64 // packets created by the injection process
	Skipped   uint64 // creations skipped because the source queue was full
	Sent      uint64
	Received  uint64
	WrongDest uint64 // packets for another LID or MLID
}

// McastWireBytes is a multicast packet's size on the wire for payload
// bytes: LRH, GRH, BTH, DETH, payload (padded to 4), ICRC and VCRC.
func McastWireBytes(payload int) int {
	p := ib.Packet{Opcode: ib.UDSendOnly, GRH: true, PayloadLen: payload}
	return p.WireBytes()
}

// NewMcastHost makes a group member; a sender (inject non-nil) draws its
// gaps from its own PCG stream of seed, as Source does.
func NewMcastHost(s *components.Sim, name string, index int, lid, mlid uint16, size int, inject Injector, seed uint64) *McastHost {
	return &McastHost{tracer: tracer{path: name}, Name: name, Index: index, LID: lid, MLID: mlid, s: s,
		inject: inject, size: size, rng: rand.New(rand.NewPCG(seed, hostStream+uint64(index))),
		queue: components.NewFIFO[*ib.Packet](MaxSourceQueue)}
}

// Attach gives the host its port.
func (h *McastHost) Attach(p *link.Port) { h.port = p }

// Sender reports whether the host injects.
func (h *McastHost) Sender() bool { return h.inject != nil }

// Start begins injection at the process's first gap; packets created in
// [lo, hi) are marked for measurement.
func (h *McastHost) Start(lo, hi ib.PS) {
	h.measureLo, h.measureHi = lo, hi
	if h.inject == nil {
		return
	}
	h.injecting = true
	h.next = h.inject.Next(h.rng, McastWireBytes(h.size))
	h.s.Schedule(h.s.Now()+h.next, h, evInject)
}

// StopInjecting ends the injection process.
func (h *McastHost) StopInjecting() { h.injecting = false }

// Queued returns the packets waiting in the source queue.
func (h *McastHost) Queued() int { return h.queue.Len() }

// HandleEvent implements components.EventHandler: one packet creation.
func (h *McastHost) HandleEvent(ev *components.Event) {
	if !h.injecting {
		return
	}
	now := h.s.Now()
	if h.queue.Full() {
		h.Skipped++
	} else {
		pkt := h.s.NewPacket()
		pkt.Opcode = ib.UDSendOnly
		pkt.GRH = true
		pkt.SL, pkt.VL = h.SL, h.VL
		pkt.SLID, pkt.DLID = h.LID, h.MLID
		pkt.PayloadLen = h.size
		pkt.InjectAt = now
		pkt.Src, pkt.Dst = int32(h.Index), -1
		pkt.Measure = now >= h.measureLo && now < h.measureHi
		pkt.DestQP = McastQPN
		pkt.DETH = ib.DETH{SrcQP: uint32(h.Index) + 1}
		pkt.PSN = h.psn
		h.psn = (h.psn + 1) & 0xFFFFFF
		pkt.ICRC = ib.ComputeICRC(pkt)
		h.Created++
		h.queue.Push(pkt)
		h.trySend()
	}
	h.next = h.inject.Next(h.rng, McastWireBytes(h.size))
	h.s.Schedule(now+h.next, h, evInject)
}

func (h *McastHost) trySend() {
	pkt, ok := h.queue.Peek()
	if !ok || !h.port.Idle() || !h.port.HasCredits(int(pkt.VL), pkt.Credits()) {
		return
	}
	h.queue.Pop()
	h.Sent++
	if h.OnInject != nil {
		h.OnInject(pkt)
	}
	h.tracePacket(h.s.Now(), components.TraceInject, pkt)
	if h.sharedWire || h.queue.Len() > 0 {
		h.port.Send(pkt) // the next one goes when this one's tail has left
	} else {
		h.port.SendQuiet(pkt) // an injection tries the wire: no news needed
	}
}

// SharePort is Endpoint.SharePort for a multicast host.
func (h *McastHost) SharePort() { h.sharedWire = true }

// PortReady implements link.Owner.
func (h *McastHost) PortReady(*link.Port) { h.trySend() }

// PacketArrived implements link.Owner: the host accepts the packet at its
// tail; its blocks free then.
func (h *McastHost) PacketArrived(_ *link.Port, pkt *ib.Packet, _, tail ib.PS) {
	if pkt.DLID != h.MLID && pkt.DLID != h.LID && !slices.Contains(h.Also, pkt.DLID) {
		h.WrongDest++
	}
	h.Received++
	ev := h.s.Schedule(tail, (*mcastSink)(h), 0)
	ev.Pkt = pkt
}

// mcastSink handles a host's tail-arrival events.
type mcastSink McastHost

// HandleEvent releases the packet's blocks and reports the delivery.
func (k *mcastSink) HandleEvent(ev *components.Event) {
	h := (*McastHost)(k)
	pkt := ev.Pkt
	h.port.Release(int(pkt.VL), pkt.Credits())
	h.tracePacket(ev.At(), components.TraceDeliver, pkt)
	if h.OnDeliver != nil {
		h.OnDeliver(pkt, ev.At())
	}
	h.s.FreePacket(pkt)
}
