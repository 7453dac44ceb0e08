package fabric

import (
	"fmt"
	"slices"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
	"github.com/hcasim/hcasim/workload"
)

// mcastRun drives synthetic multicast traffic (workload.kind multicast):
// one group, its senders injecting at the offered load, every member a
// sink; the switches replicate by the subnet manager's MFTs.
type mcastRun struct {
	s     *components.Sim
	net   *Network
	hosts []*workload.McastHost // members of every group, in host order
	idle  []*workload.IdleHost  // the hosts in no group, when no background runs
	// slotSends is the group each member sends to (hosts' index → groups'
	// index), -1 for a member that only receives.
	slotSends []int32
	// slotJoined is each member's groups, increasing, with its position
	// among each group's slots (a host may be in several groups).
	slotJoined [][]mcastJoin
	group      *MulticastGroup  // the first group
	groups     []*mcastGroupRun // every group, in MLID order
	bg         *synthRun        // the unicast background (workload.background), or nil
	t0, t1     ib.PS
	view       *Simulation
	check      bool
	timing     link.Timing // every link's (host cables of another speed are refused)
	drain      ib.PS       // workload.drain_ns: the cap on the drain after the window

	stopped, drained bool
	// flights are the packets some member has yet to receive, by seq:
	// copies still due, and when and whether the packet was measured.
	flights map[uint64]mcastFlight

	injected, measuredOut  uint64
	copies, measuredCopies uint64 // copies delivered (measured: of measured packets)
	complete               uint64 // measured packets every member received
	memberCopies           []uint64
	memberWire             []windowSum // wire bytes in the window, per member
	latCopy, latLast       workload.Latencies
	lastDeliver            ib.PS
}

type mcastFlight struct {
	left    int32
	group   int32 // the packet's group (mcastRun.groups)
	inject  ib.PS
	measure bool
}

// mcastGroupRun is one group's share of a multicast run: its members and
// the counters of its packets, for the per-group metrics.
type mcastGroupRun struct {
	g       *MulticastGroup
	slots   []int // its members' positions in mcastRun.hosts, in host order
	senders int
	expect  int32 // copies per packet: every member but the sender
	// wire is the group's wire bytes received in the window, per member
	// (by position in slots): a member in several groups receives each
	// group's share.
	wire []windowSum

	injected, measuredOut  uint64
	copies, measuredCopies uint64
	complete               uint64
	latCopy, latLast       workload.Latencies
}

// mcastJoin is one group a member host has joined: the group's index
// and the host's position among the group's slots (mcastGroupRun.wire).
type mcastJoin struct {
	group, pos int32
}

// mcastSpec is one group as the config gives it: members and senders,
// host indices, increasing.
type mcastSpec struct {
	members, senders []int
}

const (
	evMcastMeasureStart uint8 = iota + 1
	evMcastMeasureEnd
	evMcastDrainCap
)

// validateMulticast checks what a multicast run cannot do, before it is
// built: each refusal names the key that asks for it.
func (c *Config) validateMulticast() error {
	if err := c.refuseWithMulticast("workload.kind: multicast", "workload.kind multicast"); err != nil {
		return err
	}
	w := &c.Workload
	if w.Sizes != "" {
		return fmt.Errorf("workload.sizes: %q with workload.kind multicast is not supported; give one payload in workload.size", w.Sizes)
	}
	size := w.Size // the largest payload of any group
	if len(w.GroupSizes) > 0 {
		size = 0
		for k, sz := range w.GroupSizes {
			if sz < 1 || sz > c.Link.MTU {
				return fmt.Errorf("workload.group_sizes[%d]: %d is out of range for a multicast packet (1 to link.mtu %d)", k, sz, c.Link.MTU)
			}
			size = max(size, sz)
		}
	} else if w.Size < 1 || w.Size > c.Link.MTU {
		return fmt.Errorf("workload.size: %d is out of range for a multicast packet (1 to link.mtu %d)", w.Size, c.Link.MTU)
	}
	return c.holdsMcastPacket(size)
}

// mcastGroups returns the run's groups, members and senders (host
// indices), from workload.group or workload.groups and workload.senders or
// workload.group_senders on a fabric of hosts. A host may be in several
// groups; it sends to one, so workload.senders may name only hosts in one
// group, and workload.group_senders says which group the others send to.
func mcastGroups(w *workload.Config, hosts int) ([]mcastSpec, error) {
	if len(w.Groups) == 0 {
		members, senders, err := mcastMembers(w, hosts)
		if err != nil {
			return nil, err
		}
		return []mcastSpec{{members: members, senders: senders}}, nil
	}
	if len(w.Groups) > workload.MaxMulticastGroups {
		return nil, fmt.Errorf("workload.groups: %d groups is more than the %d multicast LIDs 0xC000 to 0xFFFE", len(w.Groups), workload.MaxMulticastGroups)
	}
	groupsOf := make([][]int, hosts) // host → its groups' indices, increasing
	specs := make([]mcastSpec, len(w.Groups))
	for k, list := range w.Groups {
		key := fmt.Sprintf("workload.groups[%d]", k)
		members, err := workload.ParseHostList(list, key, hosts)
		if err != nil {
			return nil, err
		}
		if len(members) < 2 {
			return nil, fmt.Errorf("%s: %q has %d member; a group needs at least two (a sender and a receiver)", key, list, len(members))
		}
		for _, h := range members {
			groupsOf[h] = append(groupsOf[h], k)
		}
		specs[k].members = members
	}
	sendsTo := make([]int, hosts) // host → 1 + the group it sends to, 0 for none
	switch {
	case len(w.GroupSenders) > 0:
		if len(w.GroupSenders) != len(w.Groups) {
			return nil, fmt.Errorf("workload.group_senders: %d lists for the %d of workload.groups; give one host list per group, in its order", len(w.GroupSenders), len(w.Groups))
		}
		for k, list := range w.GroupSenders {
			key := fmt.Sprintf("workload.group_senders[%d]", k)
			senders, err := workload.ParseHostList(list, key, hosts)
			if err != nil {
				return nil, err
			}
			for _, h := range senders {
				if !slices.Contains(specs[k].members, h) {
					return nil, fmt.Errorf("%s: host %d is not a member of workload.groups[%d] %q (a port sends to a group it has joined)", key, h, k, w.Groups[k])
				}
				if o := sendsTo[h]; o != 0 {
					return nil, fmt.Errorf("%s: host %d already sends to workload.groups[%d] %q; a host sends to one group (one stream a host is modelled)", key, h, o-1, w.Groups[o-1])
				}
				sendsTo[h] = k + 1
			}
			specs[k].senders = senders
		}
	case w.Senders == "":
		for k := range specs {
			h := specs[k].members[0]
			if o := sendsTo[h]; o != 0 {
				return nil, fmt.Errorf("workload.groups[%d]: its first member, host %d, is the first of workload.groups[%d] %q too, and a host sends to one group; name each group's senders in workload.group_senders", k, h, o-1, w.Groups[o-1])
			}
			sendsTo[h] = k + 1
			specs[k].senders = specs[k].members[:1]
		}
	default:
		senders, err := workload.ParseHostList(w.Senders, "workload.senders", hosts)
		if err != nil {
			return nil, err
		}
		for _, h := range senders {
			switch in := groupsOf[h]; len(in) {
			case 0:
				return nil, fmt.Errorf("workload.senders: host %d is in none of workload.groups (a port sends to a group it has joined)", h)
			case 1:
				specs[in[0]].senders = append(specs[in[0]].senders, h)
			default:
				return nil, fmt.Errorf("workload.senders: host %d is in workload.groups[%d] %q and workload.groups[%d] %q; say which it sends to in workload.group_senders (one host list per group) instead", h, in[0], w.Groups[in[0]], in[1], w.Groups[in[1]])
			}
		}
	}
	for k := range specs {
		if len(specs[k].senders) == 0 {
			return nil, fmt.Errorf("workload.senders: %q names no host of workload.groups[%d] %q; give each group a sender", w.Senders, k, w.Groups[k])
		}
	}
	return specs, nil
}

// mcastMembers returns the group's members and senders (host indices)
// from workload.group and workload.senders on a fabric of hosts.
func mcastMembers(w *workload.Config, hosts int) (members, senders []int, err error) {
	if w.Group == "" {
		for h := 0; h < hosts; h++ {
			members = append(members, h)
		}
	} else if members, err = workload.ParseHostList(w.Group, "workload.group", hosts); err != nil {
		return nil, nil, err
	}
	if len(members) < 2 {
		return nil, nil, fmt.Errorf("workload.group: %q has %d member; a group needs at least two (a sender and a receiver)", w.Group, len(members))
	}
	if w.Senders == "" {
		senders = members[:1]
	} else if senders, err = workload.ParseHostList(w.Senders, "workload.senders", hosts); err != nil {
		return nil, nil, err
	}
	in := map[int]bool{}
	for _, m := range members {
		in[m] = true
	}
	for _, s := range senders {
		if !in[s] {
			return nil, nil, fmt.Errorf("workload.senders: host %d is not a member of workload.group %q (a port sends to a group it has joined)", s, w.Group)
		}
	}
	return members, senders, nil
}

// mcastBackgroundSeed is mixed into the seed of a multicast run's unicast
// background, so that its sources' PCG streams (numbered by background
// host) are not the multicast senders' (numbered by host index).
const mcastBackgroundSeed = 0x6d63617374626721 // "mcastbg!"

func runMulticast(cfg *Config, opts RunOptions) (map[string]any, error) {
	w := cfg.Workload
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return nil, err
	}
	nHosts := len(topo.Hosts())
	specs, err := mcastGroups(&w, nHosts)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	for _, c := range topo.Cables {
		if c.HasBER && c.BER > 0 {
			return nil, &UnsupportedError{Msg: fmt.Sprintf("topology: a cable's ber=%g with workload.kind multicast is not modelled (an unreliable datagram lost to a link error is not resent, and the checker has no rule for it); give its line ber=0 or none", c.BER)}
		}
	}
	if hostTimings(cfg, topo, topo.Hosts()) != nil {
		return nil, &UnsupportedError{Msg: "topology: host cables of another speed than the link section's with workload.kind multicast are not supported"}
	}
	r := &mcastRun{flights: map[uint64]mcastFlight{}}
	groupsOf := make([][]int32, nHosts) // host → its groups, increasing
	sendsTo := make([]int, nHosts)      // host → 1 + the group it sends to, 0 for none
	for k, sp := range specs {
		group, err := sub.AddMulticastGroup(sp.members)
		if err != nil {
			return nil, &UnsupportedError{Msg: err.Error()}
		}
		r.groups = append(r.groups, &mcastGroupRun{g: group, senders: len(sp.senders), expect: int32(len(sp.members) - 1)})
		for _, h := range sp.members {
			groupsOf[h] = append(groupsOf[h], int32(k))
		}
		for _, h := range sp.senders {
			sendsTo[h] = k + 1
		}
	}
	r.group = r.groups[0].g
	// The copies' channel dependencies along the trees, with the unicast
	// routes (ConfigureFabric checked those alone) and the other trees.
	var unicastSLs []uint8
	if w.Background {
		unicastSLs = []uint8{uint8(w.BackgroundServiceLevel())}
	}
	if err := sub.CheckMulticastDeadlock(uint8(w.SL), unicastSLs); err != nil {
		key, fix := "workload.group", "other members"
		if len(w.Groups) > 0 {
			key, fix = "workload.groups", "other groups"
		}
		if w.Background {
			fix += ", or the background an SL on another VL (workload.background_sl)"
		}
		return nil, &UnsupportedError{Msg: fmt.Sprintf("%s: %v; give %s", key, err, fix)}
	}
	allSend := w.Background && w.BackgroundHosts == workload.BackgroundAll
	var bgHosts []int // the background's hosts: those in no group, or all
	bgIndex := make([]int, nHosts)
	for h := range nHosts {
		if len(groupsOf[h]) == 0 || allSend {
			bgIndex[h] = len(bgHosts)
			bgHosts = append(bgHosts, h)
		}
	}
	timing := cfg.Link.Timing(cfg.Link.LengthM)
	gbps := timing.DataRateBps() / 1e9
	r.s = newSim(cfg)
	var sources []*workload.Source
	if w.Background {
		if len(bgHosts) == 0 { // every host in a group, and background_hosts others
			return nil, &UnsupportedError{Msg: fmt.Sprintf("workload.background: true, but every one of the fabric's %d hosts is in a multicast group; background traffic needs hosts in none (smaller groups, more topology.hosts), or workload.background_hosts: all", nHosts)}
		}
		r.bg = &synthRun{s: r.s, timing: timing}
		r.bg.parts = []*synthPart{{r: r.bg, s: r.s}}
		tc := w.Traffic()
		tc.OfferedLoad = w.MulticastBackgroundLoad()
		tc.Beside = fmt.Sprintf(" besides the %d multicast group members", nHosts-len(bgHosts))
		if allSend {
			tc.Beside = " (workload.background_hosts: all)"
		}
		if sources, err = r.bg.backgroundSources(cfg, topo, bgHosts, tc, cfg.Seed^mcastBackgroundSeed); err != nil {
			return nil, &UnsupportedError{Msg: err.Error()}
		}
	}
	sl2vl := cfg.Switch.SL2VLTable()
	net, err := BuildNetworkOn(cfg, r.s, topo, sub, func(i int, lid uint16, name string) HostDevice {
		in := groupsOf[i]
		if len(in) == 0 {
			if sources == nil {
				h := workload.NewIdleHost(r.s, name)
				r.idle = append(r.idle, h)
				return h
			}
			e := workload.NewEndpoint(r.s, name, bgIndex[i], lid, sources[bgIndex[i]])
			r.bg.eps = append(r.bg.eps, e)
			return e
		}
		var inj workload.Injector
		k := in[0] // the group it sends to, or its first
		if sendsTo[i] != 0 {
			k = int32(sendsTo[i] - 1)
			if load := w.GroupLoad(int(k)); w.Injection == workload.InjectOnOff {
				inj = workload.NewOnOff(load, w.BurstPackets, gbps)
			} else {
				inj = workload.NewBernoulli(load, gbps)
			}
		}
		h := workload.NewMcastHost(r.s, name, i, lid, r.groups[k].g.MLID, w.GroupSize(int(k)), inj, cfg.Seed)
		h.SL, h.VL = uint8(w.SL), sl2vl[w.SL]
		slot := len(r.hosts)
		h.OnDeliver = func(pkt *ib.Packet, tail ib.PS) { r.deliver(slot, pkt, tail) }
		r.hosts = append(r.hosts, h)
		r.slotSends = append(r.slotSends, int32(sendsTo[i]-1))
		var joined []mcastJoin
		for _, gk := range in {
			g := r.groups[gk]
			joined = append(joined, mcastJoin{group: gk, pos: int32(len(g.slots))})
			g.slots = append(g.slots, slot)
			if gk != k {
				h.Also = append(h.Also, g.g.MLID)
			}
		}
		r.slotJoined = append(r.slotJoined, joined)
		if allSend {
			e := workload.NewEndpoint(r.s, name, bgIndex[i], lid, sources[bgIndex[i]])
			r.bg.eps = append(r.bg.eps, e)
			return &mcastMixedHost{m: h, e: e}
		}
		return h
	})
	if err != nil {
		return nil, err
	}
	r.net = net
	r.memberCopies, r.memberWire = make([]uint64, len(r.hosts)), make([]windowSum, len(r.hosts))
	for _, g := range r.groups {
		g.wire = make([]windowSum, len(g.slots))
	}
	for _, h := range r.hosts {
		h.OnInject = r.inject
	}
	r.t0 = ib.FromNanoseconds(w.WarmupNs)
	r.t1 = r.t0 + ib.FromNanoseconds(w.MeasureNs)
	r.timing, r.drain = timing, ib.FromNanoseconds(w.DrainNs)
	if bg := r.bg; bg != nil {
		bg.net, bg.t0, bg.t1 = net, r.t0, r.t1
		part := bg.parts[0]
		part.eps = bg.eps // the switches' statistics are the run's (HandleEvent)
		bg.indexHosts()
		bg.wireBackground(cfg, net, bgHosts)
		for _, e := range bg.eps {
			// The run ends when the groups' packets and the background's
			// have all landed.
			deliver := e.OnDeliver
			e.OnDeliver = func(pkt *ib.Packet, tail ib.PS) {
				deliver(pkt, tail)
				r.maybeFinish()
			}
		}
		r.s.Schedule(r.t0, part, evSynthMeasureStart)
		r.s.Schedule(r.t1, part, evSynthStatsEnd)
	}
	r.view = &Simulation{Sim: r.s, Ports: net.Ports, Net: net, Blocks: net.Blocks()}
	r.check = cfg.Sim.Check
	if opts.Observe != nil {
		opts.Observe(r.view)
	}
	if opts.Started != nil {
		opts.Started(r.view)
	}
	for _, h := range r.hosts {
		h.Start(r.t0, r.t1)
	}
	if r.bg != nil {
		for _, e := range r.bg.eps {
			e.Start(r.t0, r.t1)
		}
	}
	r.s.Schedule(r.t0, r, evMcastMeasureStart)
	r.s.Schedule(r.t1, r, evMcastMeasureEnd)
	r.s.StopAt(ib.FromNanoseconds(cfg.Sim.MaxTimeNs))
	if err := r.s.Run(); err != nil {
		return nil, err
	}
	senders := 0
	for _, g := range r.groups {
		senders += g.senders
	}
	return r.metrics(cfg, timing.DataRateBps(), senders), nil
}

// groupOfMLID returns the group of a multicast LID the run programmed.
func (r *mcastRun) groupOfMLID(mlid uint16) int32 {
	return int32(mlid - r.group.MLID)
}

func (r *mcastRun) inject(pkt *ib.Packet) {
	r.injected++
	if pkt.Measure {
		r.measuredOut++
	}
	k := r.groupOfMLID(pkt.DLID)
	g := r.groups[k]
	g.injected++
	if pkt.Measure {
		g.measuredOut++
	}
	r.flights[pkt.Seq] = mcastFlight{left: g.expect, group: k, inject: pkt.InjectAt, measure: pkt.Measure}
}

func (r *mcastRun) deliver(k int, pkt *ib.Packet, tail ib.PS) {
	r.copies++
	r.memberCopies[k]++
	r.lastDeliver = tail
	if ser := r.timing.Serialization(pkt.WireBytes()); tail > r.t0 && tail-ser < r.t1 {
		r.memberWire[k].add(int64(pkt.WireBytes()), tail, ser, r.t0, r.t1)
		// The group's share, by the copy's MLID: a copy at a host outside
		// its group (a broken MFT) counts for none (the checker names it).
		gk := r.groupOfMLID(pkt.DLID)
		for _, j := range r.slotJoined[k] {
			if j.group == gk {
				r.groups[gk].wire[j.pos].add(int64(pkt.WireBytes()), tail, ser, r.t0, r.t1)
			}
		}
	}
	f, ok := r.flights[pkt.Seq]
	if !ok {
		return // a copy beyond the group's count: the checker names it
	}
	g := r.groups[f.group]
	g.copies++
	f.left--
	if f.measure {
		r.measuredCopies++
		r.latCopy.Add(tail - f.inject)
		g.measuredCopies++
		g.latCopy.Add(tail - f.inject)
	}
	if f.left > 0 {
		r.flights[pkt.Seq] = f
	} else {
		delete(r.flights, pkt.Seq)
		if f.measure {
			r.complete++
			r.latLast.Add(tail - f.inject)
			g.complete++
			g.latLast.Add(tail - f.inject)
		}
	}
	r.maybeFinish()
}

// maybeFinish ends a stopped run at the delivery that settles it.
func (r *mcastRun) maybeFinish() {
	if r.stopped && !r.drained && r.settled() {
		r.finish()
	}
}

// settled reports whether every packet injected reached every member (and
// every background packet its destination) and no source holds a packet.
func (r *mcastRun) settled() bool {
	if len(r.flights) > 0 {
		return false
	}
	for _, h := range r.hosts {
		if h.Queued() > 0 {
			return false
		}
	}
	return r.bg == nil || r.bg.settled()
}

func (r *mcastRun) finish() {
	r.drained = true
	r.view.finish(r.check)
}

// HandleEvent implements components.EventHandler: the window's phases.
func (r *mcastRun) HandleEvent(ev *components.Event) {
	switch ev.Kind {
	case evMcastMeasureStart:
		for _, sw := range r.net.Switches {
			sw.ResetStats()
		}
	case evMcastMeasureEnd:
		for _, sw := range r.net.Switches {
			sw.FreezeStats()
		}
		for _, h := range r.hosts {
			h.StopInjecting()
		}
		if r.bg != nil {
			for _, e := range r.bg.eps {
				e.StopInjecting()
			}
		}
		r.stopped = true
		if r.settled() {
			r.finish()
			return
		}
		r.s.Schedule(r.s.Now()+r.drain, r, evMcastDrainCap)
	case evMcastDrainCap:
		// The drain's limit: some member still misses a packet. The run
		// ends undrained; with checkers it first settles (a quiet window
		// with no data moving is an idle fabric), so they can name a
		// packet that never reached a member (a broken MFT) rather than
		// say nothing.
		if !r.drained {
			r.view.finish(r.check)
		}
	}
}

func (r *mcastRun) metrics(cfg *Config, rateBps float64, senders int) map[string]any {
	endAt, endEvents := r.view.end()
	for _, sw := range r.net.Switches {
		sw.EndStatsAt(endAt)
	}
	var created, skipped, wrong, expected uint64
	for _, h := range r.hosts {
		created += h.Created
		skipped += h.Skipped
		wrong += h.WrongDest
	}
	for _, h := range r.idle {
		wrong += h.WrongDest
	}
	treeSwitches := map[int]bool{}
	for _, g := range r.groups {
		expected += g.injected * uint64(g.expect)
		for _, n := range g.g.Switches {
			treeSwitches[n] = true
		}
	}
	m := map[string]any{
		"offered_load":        cfg.Workload.OfferedLoad,
		"hosts":               len(r.net.Hosts),
		"switches":            len(r.net.Switches),
		"sim_time_ns":         endAt.Nanoseconds(),
		"events":              endEvents,
		"link_data_rate_gbps": rateBps / 1e9,
		"drain_complete":      r.drained,
		"mcast_mlid":          int(r.group.MLID),
		"mcast_members":       len(r.hosts),
		"mcast_senders":       senders,
		"mcast_tree_switches": len(treeSwitches),
		"packets_created":     created,
		"packets_skipped":     skipped,
		"packets_sent":        r.injected,
		"packets_measured":    r.measuredOut,
		"packets_complete":    r.complete,
		"packets_misrouted":   wrong,
		"copies_expected":     expected,
		"copies_delivered":    r.copies,
		"latency_ns":          r.latCopy.SummaryNs(),
		"latency_last_ns":     r.latLast.SummaryNs(),
	}
	window := float64(r.t1 - r.t0)
	// loneSender: the member slot k sends to group gk and is its only
	// sender, so it receives none of gk's packets.
	loneSender := func(k int, gk int32) bool {
		return r.slotSends[k] == gk && r.groups[gk].senders == 1
	}
	// receivers sums over the members in slots that receive something:
	// of every group they joined (wire nil), or of group gk (wire its
	// per-member sums, by position in its slots).
	receivers := func(slots []int, gk int32, wire []windowSum) (lo, hi uint64, gLo, gSum, gHi float64, n int) {
		for pos, k := range slots {
			if wire != nil && loneSender(k, gk) {
				continue
			}
			if wire == nil && len(r.slotJoined[k]) == 1 && loneSender(k, r.slotJoined[k][0].group) {
				continue // a lone sender of its one group receives nothing
			}
			c := r.memberCopies[k]
			sum := &r.memberWire[k]
			if wire != nil {
				sum = &wire[pos]
			}
			g := sum.value() * 8 / window * 1000 // bytes per ps → Gb/s
			if n == 0 {
				lo, hi, gLo, gHi = c, c, g, g
			}
			lo, hi = min(lo, c), max(hi, c)
			gLo, gHi = min(gLo, g), max(gHi, g)
			gSum += g
			n++
		}
		return lo, hi, gLo, gSum, gHi, n
	}
	// Per receiving member: copies over the run, and wire throughput over
	// the window.
	all := make([]int, len(r.hosts))
	for k := range all {
		all[k] = k
	}
	lo, hi, gLo, gSum, gHi, n := receivers(all, -1, nil)
	m["member_copies"] = map[string]any{"min": lo, "max": hi}
	if window > 0 && n > 0 {
		m["member_throughput_gbps"] = map[string]any{"min": gLo, "mean": gSum / float64(n), "max": gHi}
		m["member_accepted_load"] = gSum / float64(n) / (rateBps / 1e9)
	}
	if len(r.groups) > 1 {
		// The breakdown by group (with one group it is the whole above).
		m["mcast_groups"] = len(r.groups)
		for k, g := range r.groups {
			p := fmt.Sprintf("group%d_", k)
			m[p+"mlid"] = int(g.g.MLID)
			if len(cfg.Workload.GroupLoads) > 0 {
				m[p+"offered_load"] = cfg.Workload.GroupLoads[k]
			}
			if len(cfg.Workload.GroupSizes) > 0 {
				m[p+"payload_bytes"] = cfg.Workload.GroupSizes[k]
			}
			m[p+"members"] = len(g.slots)
			m[p+"senders"] = g.senders
			m[p+"tree_switches"] = len(g.g.Switches)
			m[p+"packets_sent"] = g.injected
			m[p+"packets_complete"] = g.complete
			m[p+"copies_expected"] = g.injected * uint64(g.expect)
			m[p+"copies_delivered"] = g.copies
			m[p+"latency_ns"] = g.latCopy.SummaryNs()
			m[p+"latency_last_ns"] = g.latLast.SummaryNs()
			if _, _, _, gSum, _, n := receivers(g.slots, int32(k), g.wire); window > 0 && n > 0 {
				m[p+"member_accepted_load"] = gSum / float64(n) / (rateBps / 1e9)
			}
		}
	}
	if r.bg != nil {
		r.backgroundMetrics(m, cfg, rateBps)
	}
	(&synthRun{net: r.net}).switchMetrics(m)
	mcastSwitchMetrics(r.net, m)
	r.view.addLinkErrors(m)
	return m
}

// mcastSwitchMetrics adds the switches' replication figures, summed over
// the switches (docs/metrics.md): packets, copies, grant rounds (and under
// switch.mcast_replication hold, the packets that held back), and per
// packet whose last copy was granted its fanout, its rounds (above 1 when
// fanouts were split) and its buffer hold.
func mcastSwitchMetrics(net *Network, m map[string]any) {
	var pkts, done, copies, rounds, holdNs, held float64
	holdPolicy := false
	for _, sw := range net.Switches {
		sm := sw.Metrics()
		if h, ok := sm["mcast_held_packets"]; ok {
			held += h
			holdPolicy = true
		}
		pkts += sm["mcast_packets_received"]
		done += sm["mcast_packets_done"]
		copies += sm["mcast_copies"]
		rounds += sm["mcast_grant_rounds"]
		holdNs += sm["mcast_hold_mean_ns"] * sm["mcast_packets_done"]
	}
	m["switch_mcast_packets"] = pkts
	m["switch_mcast_copies"] = copies
	m["switch_mcast_grant_rounds"] = rounds
	if holdPolicy {
		// switch.mcast_replication: hold only, so split runs report what
		// they did.
		m["switch_mcast_held_packets"] = held
	}
	if done > 0 {
		m["switch_mcast_fanout_per_packet"] = copies / done
		m["switch_mcast_rounds_per_packet"] = rounds / done
		m["switch_mcast_hold_mean_ns"] = holdNs / done
	}
}

// backgroundMetrics adds the unicast background's statistics, as a
// synthetic run reports them, under background_ names (latency_ns and the
// like are the multicast packets').
func (r *mcastRun) backgroundMetrics(m map[string]any, cfg *Config, rateBps float64) {
	bm := r.bg.metrics(cfg, rateBps)
	for _, k := range []string{"accepted_load", "goodput_gbps", "latency_ns", "packets_sent", "packets_delivered",
		"credit_stall_ns", "hops_mean", "hosts", "host_accepted_load"} {
		if v, ok := bm[k]; ok {
			m["background_"+k] = v
		}
	}
	m["background_offered_load"] = cfg.Workload.MulticastBackgroundLoad()
}

// refuseWithMulticast refuses what neither multicast run models, the
// synthetic one (workload.kind: multicast) and the HCAs' (workload.mcg):
// lead names the multicast key as a sentence's subject, with as a phrase
// ("... with workload.mcg").
func (c *Config) refuseWithMulticast(lead, with string) error {
	switch {
	case c.Topology.Kind == KindBackToBack:
		return fmt.Errorf("%s needs switches to replicate the group's packets; topology.kind back-to-back has none", lead)
	case c.Switch.Queueing != switchasic.QueueFIFO:
		return fmt.Errorf("switch.queueing: %q with %s: replication is modelled for fifo input queueing only (set switch.queueing: fifo)", c.Switch.Queueing, with)
	case c.Topology.AdaptiveRouting:
		return fmt.Errorf("topology.adaptive_routing: true with %s is not modelled (the MFT is static); set it to false", with)
	case c.CC.Enable:
		return fmt.Errorf("cc.enable: true with %s is not modelled; set it to false", with)
	case c.Link.BER > 0:
		return fmt.Errorf("link.ber: %v with %s is not modelled (a datagram lost to a link error is not resent, and the checker has no rule for it); use link.ber: 0", c.Link.BER, with)
	case c.Link.PreFECBER > 0:
		return fmt.Errorf("link.pre_fec_ber: %v with %s is not modelled (a datagram lost to a failed codeword is not resent, and the checker has no rule for it); use link.pre_fec_ber: 0", c.Link.PreFECBER, with)
	}
	return nil
}

// holdsMcastPacket refuses switch and HCA VL buffers that cannot hold one
// multicast packet of a size-byte payload with its GRH, as both multicast
// runs need.
func (c *Config) holdsMcastPacket(size int) error {
	bytes := ib.Credits(workload.McastWireBytes(size)) * ib.CreditBytes
	if c.Switch.VLBufferBytes < bytes {
		return fmt.Errorf("switch.vl_buffer_bytes: %d cannot hold one %d-byte multicast packet (a %d-byte payload with a GRH); give at least %d", c.Switch.VLBufferBytes, workload.McastWireBytes(size), size, bytes)
	}
	if c.HCA.VLBufferBytes < bytes {
		return fmt.Errorf("hca.vl_buffer_bytes: %d cannot hold one %d-byte multicast packet (a %d-byte payload with a GRH); give at least %d", c.HCA.VLBufferBytes, workload.McastWireBytes(size), size, bytes)
	}
	return nil
}
