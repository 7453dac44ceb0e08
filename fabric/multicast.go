package fabric

import (
	"fmt"

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
	s      *components.Sim
	net    *Network
	hosts  []*workload.McastHost // members, by member position
	group  *MulticastGroup
	t0, t1 ib.PS
	view   *Simulation
	check  bool
	timing link.Timing // every link's (host cables of another speed are refused)
	drain  ib.PS       // workload.drain_ns: the cap on the drain after the window

	stopped, drained bool
	// flights are the packets some member has yet to receive, by seq:
	// copies still due, and when and whether the packet was measured.
	flights map[uint64]mcastFlight
	expect  int32 // copies per packet: every member but the sender

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
	inject  ib.PS
	measure bool
}

const (
	evMcastMeasureStart uint8 = iota + 1
	evMcastMeasureEnd
	evMcastDrainCap
)

// validateMulticast checks what a multicast run cannot do, before it is
// built: each refusal names the key that asks for it.
func (c *Config) validateMulticast() error {
	switch {
	case c.Topology.Kind == KindBackToBack:
		return fmt.Errorf("workload.kind: multicast needs switches to replicate; topology.kind back-to-back has none")
	case c.Switch.Queueing != switchasic.QueueFIFO:
		return fmt.Errorf("switch.queueing: %q with workload.kind multicast: replication is modelled for fifo input queueing only (set switch.queueing: fifo)", c.Switch.Queueing)
	case c.Topology.AdaptiveRouting:
		return fmt.Errorf("topology.adaptive_routing: true with workload.kind multicast is not modelled (the MFT is static); set it to false")
	case c.CC.Enable:
		return fmt.Errorf("cc.enable: true with workload.kind multicast is not modelled; set it to false")
	case c.Link.BER > 0:
		return fmt.Errorf("link.ber: %v with workload.kind multicast is not modelled (an unreliable datagram lost to a link error is not resent, and the checker has no rule for it); use link.ber: 0", c.Link.BER)
	case c.Link.PreFECBER > 0:
		return fmt.Errorf("link.pre_fec_ber: %v with workload.kind multicast is not modelled (an unreliable datagram lost to a failed codeword is not resent, and the checker has no rule for it); use link.pre_fec_ber: 0", c.Link.PreFECBER)
	}
	w := &c.Workload
	if w.Sizes != "" {
		return fmt.Errorf("workload.sizes: %q with workload.kind multicast is not supported; give one payload in workload.size", w.Sizes)
	}
	if w.Size < 1 || w.Size > c.Link.MTU {
		return fmt.Errorf("workload.size: %d is out of range for a multicast packet (1 to link.mtu %d)", w.Size, c.Link.MTU)
	}
	bytes := ib.Credits(workload.McastWireBytes(w.Size)) * ib.CreditBytes
	if c.Switch.VLBufferBytes < bytes {
		return fmt.Errorf("switch.vl_buffer_bytes: %d cannot hold one %d-byte multicast packet (a %d-byte payload with a GRH); give at least %d", c.Switch.VLBufferBytes, workload.McastWireBytes(w.Size), w.Size, bytes)
	}
	if c.HCA.VLBufferBytes < bytes {
		return fmt.Errorf("hca.vl_buffer_bytes: %d cannot hold one %d-byte multicast packet (a %d-byte payload with a GRH); give at least %d", c.HCA.VLBufferBytes, workload.McastWireBytes(w.Size), w.Size, bytes)
	}
	return nil
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

func runMulticast(cfg *Config, opts RunOptions) (map[string]any, error) {
	w := cfg.Workload
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return nil, err
	}
	members, senders, err := mcastMembers(&w, len(topo.Hosts()))
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
	group, err := sub.AddMulticastGroup(members)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	timing := cfg.Link.Timing(cfg.Link.LengthM)
	gbps := timing.DataRateBps() / 1e9
	isSender := map[int]bool{}
	for _, h := range senders {
		isSender[h] = true
	}
	member := map[int]int{} // host index → member position
	for k, h := range members {
		member[h] = k
	}
	r := &mcastRun{group: group, flights: map[uint64]mcastFlight{}, expect: int32(len(members) - 1),
		memberCopies: make([]uint64, len(members)), memberWire: make([]windowSum, len(members))}
	r.s = components.NewSimOn(cfg.Sim.Engine)
	sl2vl := cfg.Switch.SL2VLTable()
	net, err := BuildNetworkOn(cfg, r.s, topo, sub, func(i int, lid uint16, name string) HostDevice {
		k, ok := member[i]
		if !ok {
			return idleHost{}
		}
		var inj workload.Injector
		if isSender[i] {
			if w.Injection == workload.InjectOnOff {
				inj = workload.NewOnOff(w.OfferedLoad, w.BurstPackets, gbps)
			} else {
				inj = workload.NewBernoulli(w.OfferedLoad, gbps)
			}
		}
		h := workload.NewMcastHost(r.s, name, i, lid, group.MLID, w.Size, inj, cfg.Seed)
		h.SL, h.VL = uint8(w.SL), sl2vl[w.SL]
		h.OnDeliver = func(pkt *ib.Packet, tail ib.PS) { r.deliver(k, pkt, tail) }
		r.hosts = append(r.hosts, h)
		return h
	})
	if err != nil {
		return nil, err
	}
	r.net = net
	for _, h := range r.hosts {
		h.OnInject = r.inject
	}
	r.t0 = ib.FromNanoseconds(w.WarmupNs)
	r.t1 = r.t0 + ib.FromNanoseconds(w.MeasureNs)
	r.timing, r.drain = timing, ib.FromNanoseconds(w.DrainNs)
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
	r.s.Schedule(r.t0, r, evMcastMeasureStart)
	r.s.Schedule(r.t1, r, evMcastMeasureEnd)
	r.s.StopAt(ib.FromNanoseconds(cfg.Sim.MaxTimeNs))
	if err := r.s.Run(); err != nil {
		return nil, err
	}
	return r.metrics(cfg, timing.DataRateBps(), len(senders)), nil
}

func (r *mcastRun) inject(pkt *ib.Packet) {
	r.injected++
	if pkt.Measure {
		r.measuredOut++
	}
	r.flights[pkt.Seq] = mcastFlight{left: r.expect, inject: pkt.InjectAt, measure: pkt.Measure}
}

func (r *mcastRun) deliver(k int, pkt *ib.Packet, tail ib.PS) {
	r.copies++
	r.memberCopies[k]++
	r.lastDeliver = tail
	if ser := r.timing.Serialization(pkt.WireBytes()); tail > r.t0 && tail-ser < r.t1 {
		r.memberWire[k].add(int64(pkt.WireBytes()), tail, ser, r.t0, r.t1)
	}
	f, ok := r.flights[pkt.Seq]
	if !ok {
		return // a copy beyond the group's count: the checker names it
	}
	f.left--
	if f.measure {
		r.measuredCopies++
		r.latCopy.Add(tail - f.inject)
	}
	if f.left > 0 {
		r.flights[pkt.Seq] = f
	} else {
		delete(r.flights, pkt.Seq)
		if f.measure {
			r.complete++
			r.latLast.Add(tail - f.inject)
		}
	}
	if r.stopped && !r.drained && r.settled() {
		r.finish()
	}
}

// settled reports whether every packet injected reached every member and
// no source holds a packet.
func (r *mcastRun) settled() bool {
	if len(r.flights) > 0 {
		return false
	}
	for _, h := range r.hosts {
		if h.Queued() > 0 {
			return false
		}
	}
	return true
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
	var created, skipped, wrong uint64
	for _, h := range r.hosts {
		created += h.Created
		skipped += h.Skipped
		wrong += h.WrongDest
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
		"mcast_tree_switches": len(r.group.Switches),
		"packets_created":     created,
		"packets_skipped":     skipped,
		"packets_sent":        r.injected,
		"packets_measured":    r.measuredOut,
		"packets_complete":    r.complete,
		"packets_misrouted":   wrong,
		"copies_expected":     r.injected * uint64(r.expect),
		"copies_delivered":    r.copies,
		"latency_ns":          r.latCopy.SummaryNs(),
		"latency_last_ns":     r.latLast.SummaryNs(),
	}
	// Per receiving member (a lone sender receives nothing): copies over
	// the run, and wire throughput over the window.
	window := float64(r.t1 - r.t0)
	var lo, hi uint64
	var gLo, gHi, gSum float64
	n := 0
	for k, h := range r.hosts {
		if h.Sender() && senders == 1 {
			continue
		}
		c := r.memberCopies[k]
		g := r.memberWire[k].value() * 8 / window * 1000 // bytes per ps → Gb/s
		if n == 0 {
			lo, hi, gLo, gHi = c, c, g, g
		}
		lo, hi = min(lo, c), max(hi, c)
		gLo, gHi = min(gLo, g), max(gHi, g)
		gSum += g
		n++
	}
	m["member_copies"] = map[string]any{"min": lo, "max": hi}
	if window > 0 && n > 0 {
		m["member_throughput_gbps"] = map[string]any{"min": gLo, "mean": gSum / float64(n), "max": gHi}
		m["member_accepted_load"] = gSum / float64(n) / (rateBps / 1e9)
	}
	(&synthRun{net: r.net}).switchMetrics(m)
	var pkts, done, copies, rounds, holdNs float64
	for _, sw := range r.net.Switches {
		sm := sw.Metrics()
		pkts += sm["mcast_packets_received"]
		done += sm["mcast_packets_done"]
		copies += sm["mcast_copies"]
		rounds += sm["mcast_grant_rounds"]
		holdNs += sm["mcast_hold_mean_ns"] * sm["mcast_packets_done"]
	}
	m["switch_mcast_packets"] = pkts
	m["switch_mcast_copies"] = copies
	m["switch_mcast_grant_rounds"] = rounds
	if done > 0 {
		m["switch_mcast_fanout_per_packet"] = copies / done
		m["switch_mcast_rounds_per_packet"] = rounds / done
		m["switch_mcast_hold_mean_ns"] = holdNs / done
	}
	r.view.addLinkErrors(m)
	return m
}
