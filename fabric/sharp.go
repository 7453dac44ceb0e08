package fabric

import (
	"fmt"
	"math"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/switchasic"
	"github.com/hcasim/hcasim/workload"
)

// validateSharp refuses what the in-network all-reduce does not model,
// one line each.
func (c *Config) validateSharp() error {
	switch {
	case c.Topology.Kind == KindBackToBack:
		return fmt.Errorf("workload.algorithm: sharp reduces in the switches; topology.kind back-to-back has none")
	case c.Switch.Queueing != switchasic.QueueFIFO:
		return fmt.Errorf("switch.queueing: %q with workload.algorithm sharp: the result goes down by multicast replication, modelled for fifo input queueing only (set switch.queueing: fifo)", c.Switch.Queueing)
	case c.Topology.AdaptiveRouting:
		return fmt.Errorf("topology.adaptive_routing: true with workload.algorithm sharp is not modelled (the aggregation tree is static); set it to false")
	case c.CC.Enable:
		return fmt.Errorf("cc.enable: true with workload.algorithm sharp is not modelled; set it to false")
	case c.Link.BER > 0:
		return fmt.Errorf("link.ber: %v with workload.algorithm sharp is not modelled (a fragment lost to a link error is not resent); use link.ber: 0", c.Link.BER)
	case c.Link.PreFECBER > 0:
		return fmt.Errorf("link.pre_fec_ber: %v with workload.algorithm sharp is not modelled (a fragment lost to a failed codeword is not resent); use link.pre_fec_ber: 0", c.Link.PreFECBER)
	case c.Sim.Partitions > 1:
		return fmt.Errorf("sim.partitions: %d with workload.algorithm sharp is not modelled (the aggregation nodes run on one engine); use sim.partitions: 1", c.Sim.Partitions)
	case c.Workload.ReduceGBps != 0:
		return fmt.Errorf("workload.reduce_gbps: %v with workload.algorithm sharp: the hosts reduce nothing (the switches' ALUs do: workload.sharp_alu_gbps); remove it", c.Workload.ReduceGBps)
	case c.Workload.SliceBytes != 0:
		return fmt.Errorf("workload.slice_bytes: %d with workload.algorithm sharp: the vector goes in fragments (workload.sharp_fragment_bytes); remove it", c.Workload.SliceBytes)
	case c.Workload.SharpFragmentBytes > c.Link.MTU:
		return fmt.Errorf("workload.sharp_fragment_bytes: %d is more than link.mtu %d (a fragment is one packet)", c.Workload.SharpFragmentBytes, c.Link.MTU)
	}
	return c.holdsMcastPacket(c.sharpFragmentBytes())
}

// sharpFragmentBytes is the fragment payload in force.
func (c *Config) sharpFragmentBytes() int {
	if c.Workload.SharpFragmentBytes > 0 {
		return c.Workload.SharpFragmentBytes
	}
	return c.Link.MTU
}

// sharpTree is the aggregation tree the Aggregation Manager sets up over
// every host: the SM's multicast tree of the result group (grown from a
// root switch, pruned to the members' switches), each of its switches an
// aggregation node whose children are its tree ports away from the root
// and its member hosts' ports.
type sharpTree struct {
	group  *MulticastGroup
	root   int             // switch node
	parent map[int]PortRef // switch node → its port towards the root (1-based)
	aggs   map[int]switchasic.AggConfig
}

// buildSharpTree programs the result group and derives every AN's
// configuration. A tree whose up-links the LFT does not follow (a parent
// reached through another switch) is refused: a fragment must reach its
// parent AN by the port the tree gives it.
func buildSharpTree(cfg *Config, sub *Subnet) (*sharpTree, error) {
	t := sub.Topo
	hosts := len(sub.Hosts())
	members := make([]int, hosts)
	for i := range members {
		members[i] = i
	}
	g, err := sub.AddMulticastGroup(members)
	if err != nil {
		return nil, err
	}
	st := &sharpTree{group: g, root: g.Root, parent: map[int]PortRef{}, aggs: map[int]switchasic.AggConfig{}}
	if st.root < 0 {
		st.root = g.Switches[0] // one switch: the tree is that switch alone
	}
	inTree := map[int][]int{}
	for k, n := range g.Switches {
		inTree[n] = g.Ports[k]
	}
	// Walk the tree from the root: a switch's parent is the tree neighbour
	// it was reached from.
	queue := []int{st.root}
	seen := map[int]bool{st.root: true}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, p := range inTree[x] {
			q, ok := t.Peer(PortRef{x, p})
			if !ok || t.Nodes[q.Node].Kind != Switch || seen[q.Node] {
				continue
			}
			seen[q.Node] = true
			st.parent[q.Node] = q
			queue = append(queue, q.Node)
		}
	}
	alu := ib.PS(0)
	if g := cfg.Workload.SharpALUGBps; g > 0 {
		alu = ib.PS(math.Round(1000 / g)) // ps per byte at g GB/s
	}
	osts := cfg.Workload.SharpOSTs
	if osts == 0 {
		osts = workload.DefaultSharpOSTs
	}
	for _, x := range g.Switches {
		a := switchasic.AggConfig{LID: sub.LID(x), QPN: workload.SharpAggQPN, OSTs: osts,
			FragmentBytes: cfg.sharpFragmentBytes(), ALUPSPerByte: alu, ALULatency: ib.FromNanoseconds(cfg.Workload.SharpALUNs)}
		up, hasParent := st.parent[x]
		for _, p := range inTree[x] {
			if !hasParent || p != up.Port {
				a.Children.Set(p - 1)
			}
		}
		if hasParent {
			q, _ := t.Peer(up)
			a.ParentLID = sub.LID(q.Node)
			if e := sub.Egress(x, a.ParentLID); int(e) != up.Port {
				return nil, fmt.Errorf("workload.algorithm: sharp: the LFT of %s sends to its aggregation parent %s by port %d, not the tree's port %d (a topology whose routes leave the multicast tree is not modelled)",
					t.Nodes[x].Name, t.Nodes[q.Node].Name, e, up.Port)
			}
		} else {
			a.ResultMLID = g.MLID
		}
		st.aggs[x] = a
	}
	return st, nil
}

// runSharp runs workload.algorithm sharp: an HCA on every host, the
// aggregation tree over the fat tree, every switch of it an aggregation
// node, and the ranks' fragments through it (workload.BuildSharpAllReduceOn).
func runSharp(cfg *Config, opts RunOptions, run workload.CollectiveRun) (map[string]any, error) {
	if err := cfg.validateSharp(); err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	s := newSim(cfg)
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return nil, err
	}
	tree, err := buildSharpTree(cfg, sub)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	if err := sub.CheckMulticastDeadlock(uint8(cfg.Workload.SL), []uint8{uint8(cfg.Workload.SL)}); err != nil {
		return nil, &UnsupportedError{Msg: fmt.Sprintf("workload.algorithm: sharp: %v", err)}
	}
	leafLID := make([]uint16, len(topo.Hosts()))
	for h, n := range topo.Hosts() {
		q, _ := topo.Peer(PortRef{n, 1})
		leafLID[h] = sub.LID(q.Node)
	}
	sr := workload.SharpRun{LeafLID: leafLID, ResultMLID: tree.group.MLID, OSTs: tree.aggs[tree.root].OSTs,
		FragmentBytes: cfg.sharpFragmentBytes()}
	var aggSwitches []*switchasic.Switch
	m, err := runOnHCAs(cfg, opts, s, topo, sub, func(devs []*hca.Device) (hcaDriver, error) {
		coll, err := workload.BuildSharpAllReduceOn(s, devs, run, sr)
		if err != nil {
			return hcaDriver{}, err
		}
		return hcaDriver{run: coll.Run, onEnd: &coll.OnEnd}, nil
	}, func(net *Network) error {
		for k, node := range topo.Switches() {
			if a, ok := tree.aggs[node]; ok {
				if err := net.Switches[k].SetAggNode(a); err != nil {
					return err
				}
				aggSwitches = append(aggSwitches, net.Switches[k])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sharpSwitchMetrics(m, aggSwitches)
	return m, nil
}

// sharpSwitchMetrics adds the aggregation nodes' counts, summed or the
// largest over the tree's switches.
func sharpSwitchMetrics(m map[string]any, sws []*switchasic.Switch) {
	var in, reduced, stalls uint64
	var stallPS, slotPS ib.PS
	slotsMax := 0
	for _, sw := range sws {
		c, _ := sw.AggCounters()
		in += c.FragmentsIn
		reduced += c.Reduced
		stalls += c.Stalls
		stallPS += c.StallPS
		slotPS += c.SlotPS
		slotsMax = max(slotsMax, c.SlotsMax)
	}
	m["sharp_aggregation_nodes"] = len(sws)
	m["sharp_fragments_in"] = in
	m["sharp_fragments_reduced"] = reduced
	m["sharp_ost_stalls"] = stalls
	m["sharp_ost_stall_ns"] = stallPS.Nanoseconds()
	m["sharp_osts_used_max"] = slotsMax
	if t, ok := m["time_us"].(float64); ok && t > 0 && len(sws) > 0 {
		// Mean slots in use per AN over the run's time (set-up holds none).
		m["sharp_osts_used_mean"] = slotPS.Nanoseconds() / (t * 1000) / float64(len(sws))
	}
}
