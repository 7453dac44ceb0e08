package fabric

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
	"github.com/hcasim/hcasim/workload"
)

// HostDevice is what sits on a host's port: a packet endpoint or an HCA.
type HostDevice interface {
	link.Owner
	Attach(p *link.Port)
}

// Network is a built fabric: topology, subnet, switches and host devices
// joined by link ports.
type Network struct {
	Sim      *components.Sim // the simulation (partition 0's in a partitioned run)
	Topo     *Topology
	Subnet   *Subnet
	Switches []*switchasic.Switch // by switch order in Topo.Switches()
	Hosts    []HostDevice         // by host index
	Ports    []*link.Port         // every port, in build order
	switchOf map[int]*switchasic.Switch
	portNode []int // per port (Ports order): its node
	// switchNode maps a switch's name to its node, for the route check
	// (RouteSwitch); read-only once built, so partitions may share it.
	switchNode map[string]int
}

// BuildNetwork builds the whole fabric in s: the subnet manager configures
// it (LIDs, forwarding, SL-to-VL), the deadlock check runs on its routes,
// switches are made from switch.*, and mkHost makes each host's device.
func BuildNetwork(cfg *Config, s *components.Sim, seed uint64,
	mkHost func(index int, lid uint16, name string) HostDevice) (*Network, error) {
	topo, sub, err := ConfigureFabric(cfg, seed)
	if err != nil {
		return nil, err
	}
	return BuildNetworkOn(cfg, s, topo, sub, mkHost)
}

// ConfigureFabric builds the topology and runs the subnet manager and the
// deadlock check, as the switches' SL-to-VL table routes every SL the run
// sends on (workload.sl for packet endpoints, SL 0 for HCAs).
func ConfigureFabric(cfg *Config, seed uint64) (*Topology, *Subnet, error) {
	sl2vl := SL2VLTable(cfg.Switch.SL2VLTable())
	topo, sub, err := cfg.Topology.buildFabric(cfg.Switch.Radix, hostCable(cfg),
		SubnetOptions{Seed: seed, VLs: cfg.Switch.VLs, SL2VL: &sl2vl, SL2VLPairs: cfg.Switch.SL2VLPairs}, cfg.wireSLs(), cfg.slFlows)
	var drop *PairDropError
	if errors.As(err, &drop) {
		return nil, nil, &UnsupportedError{Msg: cfg.pairDropMessage(drop)}
	}
	if err != nil {
		return nil, nil, &UnsupportedError{Msg: err.Error()}
	}
	if err := cfg.checkCableRefresh(topo); err != nil {
		return nil, nil, &UnsupportedError{Msg: err.Error()}
	}
	if err := cfg.checkCablePreFEC(topo); err != nil {
		return nil, nil, &UnsupportedError{Msg: err.Error()}
	}
	return topo, sub, nil
}

// checkCableRefresh is Validate's link.fc_refresh_ns check for each cable
// that runs at its own speed: a refresh puts one flow-control packet per
// data VL ahead of data, and on a slower cable they take longer (4×
// on a 1x cable of a 4x link). Cables at the link section's speed were
// checked by Validate.
func (c *Config) checkCableRefresh(topo *Topology) error {
	vls := ib.PS(c.Switch.VLs)
	for _, cb := range topo.Cables {
		if !cb.Mixed() {
			continue
		}
		fcWire := cableTiming(c, cb).Serialization(ib.FlowControlBytes) * vls
		if c.Link.FCRefresh() < 2*fcWire {
			return fmt.Errorf("link.fc_refresh_ns: %v is too short for the cable %s to %s (%s): each refresh puts a flow-control packet per data VL ahead of data, %.3f ns of its wire for switch.vls %d; give at least %.3f ns (refreshes at most half the wire)",
				c.Link.FCRefreshNs, topo.PortName(cb.A), topo.PortName(cb.B), cableSpeedName(c.Link, cb), float64(fcWire)/1000, c.Switch.VLs, float64(2*fcWire)/1000)
		}
	}
	return nil
}

// checkCablePreFEC is Validate's link.pre_fec_ber check for each cable
// that runs at its own speed: its FEC mode must be an RS code, unless the
// cable gives its own post-FEC rate (a topology file's ber=, which puts it
// on the independent bit model). Cables at the link section's speed were
// checked by Validate.
func (c *Config) checkCablePreFEC(topo *Topology) error {
	if c.Link.PreFECBER == 0 {
		return nil
	}
	for _, cb := range topo.Cables {
		if !cb.Mixed() || cb.HasBER {
			continue
		}
		if lc := cableLink(c.Link, cb); !link.RSFEC(lc.FECMode()) {
			fec := lc.FECMode()
			return fmt.Errorf("link.pre_fec_ber: %v needs a Reed-Solomon FEC, and the cable %s to %s runs %s with FEC %s; give it an RS fec= or its own post-FEC ber=",
				c.Link.PreFECBER, topo.PortName(cb.A), topo.PortName(cb.B), cableSpeedName(c.Link, cb), fec)
		}
	}
	return nil
}

// cableSpeedName returns "4x NDR" for the speed cable cb runs at.
func cableSpeedName(lc link.Config, cb Cable) string {
	l := cableLink(lc, cb)
	return l.Width + " " + string(l.GenerationValue())
}

// slFlows returns which of a fabric's hosts send to one another on which
// SL: every host on workload.sl for synthetic traffic and collectives; a
// perftest's HCAs (the first and last host, or the hosts of
// workload.pattern's pairs, all taken as one flow, which checks more
// routes than the pairs use) on workload.sl, and with background traffic
// the other hosts on workload.background_sl.
func (c *Config) slFlows(hosts int) []slHosts {
	w := &c.Workload
	switch w.Kind {
	case "perftest":
		pairs, err := perftestPairs(c, hosts)
		if err != nil {
			// Refused when the perftest is built; check the default pair.
			pairs = []workload.PerftestPair{{Client: 0, Server: hosts - 1}}
		}
		inPair, bg := perftestHosts(pairs, hosts)
		var hcas []int
		for h, in := range inPair {
			if in {
				hcas = append(hcas, h)
			}
		}
		flows := []slHosts{{sl: uint8(w.SL), hosts: hcas}}
		if w.Background && len(bg) > 0 {
			flows = append(flows, slHosts{sl: uint8(w.BackgroundServiceLevel()), hosts: bg})
		}
		return flows
	case workload.KindMulticast:
		if w.Background && w.BackgroundServiceLevel() != w.SL {
			// The background hosts are those in no group: every host
			// taken (more routes than the background uses, as for the
			// multicast SL's).
			return []slHosts{{sl: uint8(w.SL)}, {sl: uint8(w.BackgroundServiceLevel())}}
		}
	}
	return []slHosts{{sl: uint8(w.SL)}}
}

// pairDropMessage says why the run sends on the SL a switch.sl2vl_pairs
// entry drops: workload.sl (the HCAs' or the packet endpoints'), or a
// perftest's background on workload.background_sl.
func (c *Config) pairDropMessage(e *PairDropError) string {
	w := &c.Workload
	why := fmt.Sprintf("workload.sl %d", e.SL)
	switch {
	case hasBackground(w) && int(e.SL) != w.SL:
		why = fmt.Sprintf("the background's workload.background_sl %d", e.SL)
	case e.SL == 0 && hcaDriven(w.Kind):
		why = fmt.Sprintf("the HCAs of workload.kind %s send on SL 0", w.Kind)
	}
	return fmt.Sprintf("switch.sl2vl_pairs[%d].sl2vl[%d]: SL %d maps to VL 15 (drop) on %s from port %d to port %d, which the route from %s to %s takes on SL %d (%s), so the switch would drop those packets; map SL %d to a data VL (below switch.vls %d) on that pair, or leave the pair out of the entry",
		e.Rule, e.SL, e.SL, e.Switch, e.In, e.Out, e.Src, e.Dst, e.SL, why, e.SL, c.Switch.VLs)
}

// BuildNetworkOn builds the simulation of an already configured fabric.
func BuildNetworkOn(cfg *Config, s *components.Sim, topo *Topology, sub *Subnet,
	mkHost func(index int, lid uint16, name string) HostDevice) (*Network, error) {
	return buildNetwork(cfg, []*components.Sim{s}, make([]int, len(topo.Nodes)), topo, sub,
		func(index int, lid uint16, name string, _ *components.Sim) HostDevice {
			return mkHost(index, lid, name)
		})
}

// buildNetwork builds the fabric with node i's blocks in sims[part[i]].
func buildNetwork(cfg *Config, sims []*components.Sim, part []int, topo *Topology, sub *Subnet,
	mkHost func(index int, lid uint16, name string, s *components.Sim) HostDevice) (*Network, error) {
	n := &Network{Sim: sims[0], Topo: topo, Subnet: sub, switchOf: map[int]*switchasic.Switch{}, switchNode: map[string]int{}}
	hostPC := PortConfig(cfg, cfg.HCA.VLBufferBytes)
	// ports[node][ibPort] → the link port.
	ports := make([][]*link.Port, len(topo.Nodes))
	for i, node := range topo.Hosts() {
		nd := topo.Nodes[node]
		s := sims[part[node]]
		dev := mkHost(i, sub.LID(node), nd.Name, s)
		p := link.NewPort(s, dev, nd.Name+".Port[1]", 1, hostPC)
		dev.Attach(p)
		n.Hosts = append(n.Hosts, dev)
		ports[node] = []*link.Port{nil, p}
		n.Ports = append(n.Ports, p)
		n.portNode = append(n.portNode, node)
	}
	b := switchasic.MakeBuilder().WithFlowControl(cfg.Link)
	if cfg.Sim.PerCycle {
		b = b.WithRoundsEveryCycle()
	}
	var mark *switchasic.CCMarking
	if cfg.CC.Enable {
		mark = &switchasic.CCMarking{ThresholdBlocks: cfg.CC.ThresholdBlocks, MarkingRate: cfg.CC.MarkingRate,
			Random: cfg.CC.Marking == cc.MarkingRandom, Seed: cfg.Seed}
		b = b.WithCC(mark)
	}
	for _, node := range topo.Switches() {
		nd := topo.Nodes[node]
		swCfg := cfg.Switch
		swCfg.Radix = nd.Ports
		table := sub.LFT(node)
		lft := switchasic.NewLFT(len(table) - 1)
		for lid, p := range table {
			if lid == 0 || p == NoPort || p == 0 {
				continue
			}
			lft.Set(uint16(lid), int(p)-1)
		}
		sb := b.WithSim(sims[part[node]]).WithConfig(swCfg).WithLFT(lft).WithSL2VL(pairTables(sub, node))
		if len(sub.MulticastGroups()) > 0 {
			// With multicast groups every switch has an MFT (empty off
			// the trees, as a real switch's); without, none has one, and
			// unicast runs build exactly what they built before.
			mlids, ports := sub.MFT(node)
			mft := switchasic.NewMFT()
			for k, mlid := range mlids {
				var mask components.PortSet
				for _, p := range ports[k] {
					mask.Set(p - 1)
				}
				mft.Set(mlid, mask)
			}
			sb = sb.WithMFT(mft)
		}
		if mark != nil && cfg.CC.VictimMask != cc.VictimAll {
			m := *mark
			m.VictimMarks = victimMarks(topo, node, cfg.CC.VictimMask)
			sb = sb.WithCC(&m)
		}
		if sub.AdaptiveRouting() {
			sb = sb.WithAR(arTable(cfg, sub, node)).WithARFlowlet(ib.FromNanoseconds(cfg.Topology.ARFlowletGapNs))
		}
		sw, err := sb.Build(nd.Name)
		if err != nil {
			return nil, &UnsupportedError{Msg: err.Error()}
		}
		n.Switches = append(n.Switches, sw)
		n.switchOf[node] = sw
		n.switchNode[nd.Name] = node
		ports[node] = make([]*link.Port, nd.Ports+1)
		for p := 1; p <= nd.Ports; p++ {
			ports[node][p] = sw.Port(p - 1)
			n.Ports = append(n.Ports, sw.Port(p-1))
			n.portNode = append(n.portNode, node)
		}
	}
	for _, c := range topo.Cables {
		link.Connect(ports[c.A.Node][c.A.Port], ports[c.B.Node][c.B.Port], cableTiming(cfg, c))
	}
	setBitErrors(cfg, topo, ports)
	return n, nil
}

// victimMarks returns switch node's Victim_Mask (cc.victim_mask) as
// switchasic takes it: per port, 0-based, whether the port marks FECN while
// it is a victim of congestion. host_ports sets the bits of the ports
// cabled to a channel adapter, switch_ports those cabled to another
// switch, none no bit; a port without a cable carries no traffic and
// keeps its bit clear.
func victimMarks(topo *Topology, node int, mask cc.VictimMask) []bool {
	marks := make([]bool, topo.Nodes[node].Ports)
	for p := range marks {
		peer, ok := topo.Peer(PortRef{Node: node, Port: p + 1})
		if !ok {
			continue
		}
		switch kind := topo.Nodes[peer.Node].Kind; mask {
		case cc.VictimHostPorts:
			marks[p] = kind == Host
		case cc.VictimSwitchPorts:
			marks[p] = kind == Switch
		}
	}
	return marks
}

// RouteSwitch implements verif.Routes: the node of the switch whose output
// port is path (a switchasic port name, "Fabric.Leaf[0].Port[3]"), or -1.
func (n *Network) RouteSwitch(path string) int {
	i := strings.LastIndex(path, ".Port[")
	if i < 0 {
		return -1
	}
	if node, ok := n.switchNode[path[:i]]; ok {
		return node
	}
	return -1
}

// RouteAllowed implements verif.Routes: whether switch node may send a
// packet on sl for dlid out of its switchasic output out (IB port out+1):
// the LFT's port, or, on an SL adaptive routing applies to, a port of the
// DLID's adaptive routing group.
func (n *Network) RouteAllowed(node int, dlid uint16, sl uint8, out int) bool {
	var one [1]uint16
	for _, p := range n.Subnet.Egresses(node, dlid, sl, &one) {
		if int(p) == out+1 {
			return true
		}
	}
	return false
}

// RouteAllowedFrom implements verif.RoutesFrom: RouteAllowed for a packet
// that entered switch node on its switchasic input in (IB port in+1),
// without the detour ports of its AR group when it may not detour there
// (Subnet.DetourFrom: non-minimal routing's once-only rule).
func (n *Network) RouteAllowedFrom(node, in int, dlid uint16, sl uint8, out int) bool {
	var one [1]uint16
	for _, p := range n.Subnet.egressesFrom(node, in+1, dlid, sl, &one) {
		if int(p) == out+1 {
			return true
		}
	}
	return false
}

// MulticastAllowed reports whether switch node may send a packet for
// multicast LID mlid out of its switchasic output out (IB port out+1): a
// port of the node's MFT entry for the group, as the subnet manager
// programmed it (the route check's multicast half, verif.MulticastRoutes).
func (n *Network) MulticastAllowed(node int, mlid uint16, out int) bool {
	mlids, ports := n.Subnet.MFT(node)
	for k, id := range mlids {
		if id == mlid {
			return slices.Contains(ports[k], out+1)
		}
	}
	return false
}

// MulticastMembers returns, per multicast group's MLID, the names (trace
// paths) of its member hosts: what the lossless check holds replication
// to (verif.CheckConfig.Multicast).
func (n *Network) MulticastMembers() map[uint16][]string {
	groups := n.Subnet.MulticastGroups()
	if len(groups) == 0 {
		return nil
	}
	m := map[uint16][]string{}
	for _, g := range groups {
		for _, h := range g.Members {
			name := n.Topo.Nodes[n.Subnet.Hosts()[h]].Name
			if d, ok := n.Hosts[h].(HCAHost); ok {
				name = d.Device.Name // an HCA traces under its own name
			}
			m[g.MLID] = append(m[g.MLID], name)
		}
	}
	return m
}

// arTable returns switch node's adaptive routing groups as the subnet
// manager computed them, ports 0-based for switchasic, applied to the SLs
// adaptive routing is on for (the others keep the LFT's port).
func arTable(cfg *Config, sub *Subnet, node int) *switchasic.ARTable {
	t := switchasic.NewARTable()
	var ports []int
	for lid := 1; lid <= int(sub.MaxLID()); lid++ {
		g, minimal := sub.ARSplit(node, uint16(lid))
		if g == nil {
			continue
		}
		ports = ports[:0]
		for _, p := range g {
			ports = append(ports, int(p)-1)
		}
		t.SetSplit(uint16(lid), ports, minimal)
	}
	t.SetStaticSLs(^sub.ARSLs())
	if global := sub.GlobalPorts(node); len(global) > 0 {
		nd := sub.Topo.Nodes[node]
		in := make([]bool, nd.Ports)
		for p := 1; p <= nd.Ports; p++ {
			in[p-1] = sub.DetourFrom(node, p)
		}
		t.SetDetourInputs(in)
		t.SetDetourBias(detourBias(cfg, sub.Topo, PortRef{node, global[0]}))
	}
	return t
}

// detourBias is the UGAL bias (switchasic Switch.arChoose) of a Dragonfly+
// spine whose global port is g, in 64-byte blocks: what a detour's extra
// global hop costs over the minimal route, a spine traversal at zero load
// (switch.PipelinePS) plus the global cable's FEC and flight, expressed
// as the backlog that drains in that time on the cable, rounded up:
//
//	bias = ⌈(pipeline + FEC + flight) / (64 B at the cable's rate)⌉
//
// So a packet detours only when the minimal port's backlog would hold it
// back longer than the detour's extra hop does. Every global cable of a
// built Dragonfly+ has one length and speed; g's stands for them.
func detourBias(cfg *Config, t *Topology, g PortRef) int64 {
	c, _ := t.CableAt(g)
	tm := cableTiming(cfg, c)
	extra := cfg.Switch.PipelinePS() + tm.Latency()
	block := tm.Serialization(ib.CreditBytes)
	return int64((extra + block - 1) / block)
}

// pairTables returns switch node's SL-to-VL mapping as the subnet manager
// programmed it, for switchasic.Builder.WithSL2VL (ports 0-based there), or
// nil when every pair uses the default table, so such a switch keeps no
// per-pair array.
func pairTables(sub *Subnet, node int) *switchasic.SL2VL {
	if !sub.HasPairTables(node) {
		return nil
	}
	ports := sub.Topo.Nodes[node].Ports
	def := sub.sl2vl[node].tables[0]
	m := switchasic.NewSL2VL(ports, def)
	for in := 1; in <= ports; in++ {
		for out := 1; out <= ports; out++ {
			if t := sub.SL2VL(node, in, out); *t != def {
				m.SetPair(in-1, out-1, *t)
			}
		}
	}
	return m
}

// Blocks returns every block that announces trace events: ports, switches
// and host devices.
func (n *Network) Blocks() []sim.Hookable {
	out, _ := n.blocks(nil)
	return out
}

// blocks returns Blocks and, given each node's partition, each block's.
func (n *Network) blocks(part []int) ([]sim.Hookable, []int) {
	var out []sim.Hookable
	var parts []int
	add := func(b sim.Hookable, node int) {
		out = append(out, b)
		if part != nil {
			parts = append(parts, part[node])
		}
	}
	for i, p := range n.Ports {
		add(p, n.portNode[i])
	}
	sws, hosts := n.Topo.Switches(), n.Topo.Hosts()
	for i, sw := range n.Switches {
		add(sw, sws[i])
	}
	for i, h := range n.Hosts {
		if hk, ok := h.(sim.Hookable); ok {
			add(hk, hosts[i])
		}
	}
	return out, parts
}

// cableTiming is the timing of cable c: the link config with the cable's
// medium, width, generation and FEC (cableLink), at its length.
func cableTiming(cfg *Config, c Cable) link.Timing {
	lc := cableLink(cfg.Link, c)
	return lc.Timing(c.LengthM)
}

// hostCable is the length and medium of host cables (link.length_m,
// link.medium), and the link section cables are checked against.
func hostCable(cfg *Config) CableSpec {
	medium, _ := ParseMedium(cfg.Link.Medium)
	return CableSpec{LengthM: cfg.Link.LengthM, Medium: medium, Link: cfg.Link}
}

// HostLID returns host i's LID.
func (n *Network) HostLID(i int) uint16 { return n.Subnet.HostLID(i) }

// MaxPacketBytes is the largest data packet at an MTU (RDMA WRITE ONLY with
// immediate, no GRH).
func MaxPacketBytes(mtu int) int {
	p := ib.Packet{Opcode: ib.RDMAWriteOnlyImm, PayloadLen: mtu}
	return p.WireBytes()
}

// Partition splits the fabric's nodes into parts groups for a partitioned
// run: switches by tier (hops from the nearest host: leaves 1, the next
// tier 2, ...), each tier's switches in build order cut into parts
// contiguous blocks, so every partition holds a like share of every tier
// (in a fat tree, whole pods where the counts allow); each host goes with
// the switch its cable reaches. It returns each node's partition.
func Partition(topo *Topology, parts int) []int {
	part := make([]int, len(topo.Nodes))
	tier := make([]int, len(topo.Nodes)) // hosts are tier 0
	adj := make([][]int, len(topo.Nodes))
	for _, c := range topo.Cables {
		adj[c.A.Node] = append(adj[c.A.Node], c.B.Node)
		adj[c.B.Node] = append(adj[c.B.Node], c.A.Node)
	}
	seen := make([]bool, len(topo.Nodes))
	frontier := topo.Hosts()
	for _, h := range frontier {
		seen[h] = true
	}
	for d := 1; len(frontier) > 0; d++ {
		var next []int
		for _, u := range frontier {
			for _, v := range adj[u] {
				if !seen[v] {
					seen[v] = true
					tier[v] = d
					next = append(next, v)
				}
			}
		}
		frontier = next
	}
	byTier := map[int][]int{}
	for _, sw := range topo.Switches() {
		byTier[tier[sw]] = append(byTier[tier[sw]], sw)
	}
	for _, sws := range byTier {
		for i, sw := range sws {
			part[sw] = i * parts / len(sws)
		}
	}
	for _, h := range topo.Hosts() {
		if len(adj[h]) > 0 {
			part[h] = part[adj[h][0]]
		}
	}
	return part
}
