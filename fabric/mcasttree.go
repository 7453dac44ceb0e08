package fabric

import (
	"fmt"
	"slices"
)

// MulticastGroup is one multicast group as the subnet manager programmed
// it: its MLID, its member hosts and the spanning tree its packets follow.
type MulticastGroup struct {
	MLID    uint16
	Members []int // host indices (Topology.Hosts order), increasing
	// Root is the switch node the tree was grown from, or -1 when the
	// members share one switch (the tree is that switch alone).
	Root int
	// Switches are the tree's switch nodes, in node order; Ports[k] the
	// IB port numbers (1-based) of Switches[k]'s MFT entry, increasing:
	// its tree links and its member hosts' ports.
	Switches []int
	Ports    [][]int
}

// AddMulticastGroup programs a multicast group of the member hosts (host
// indices, at least two): it takes the next MLID from 0xC000 and writes an
// MFT entry in every switch of a loop-free tree spanning the members' switches.
//
// The tree is grown as OpenSM's default multicast manager grows its
// spanning tree from a root switch (osm_mcast_mgr.c: a breadth-first tree
// from the root, pruned to the branches that lead to members): a
// breadth-first tree over the switches from one root, cut down to the
// paths between the members' switches. The root is a switch of rank 0
// (the top tier of a built tree, a topology file's roots), chosen by the
// MLID (the k-th group takes root k mod the number of roots), so groups
// spread over the spines. After pruning, a root that leads to only one
// branch and has no member is cut off too, so a group whose members sit on
// one leaf never leaves it.
//
// A switch's entry holds each of its tree links and its member hosts'
// ports. The switch sends a packet out of every port of the entry but the
// one it arrived on, so every member but the sender receives each packet
// once: the tree has no cycle, and each tree link carries a packet once in
// the direction away from its sender. The sender does not get its own
// packet back from the fabric (IBA leaves that to the CA's own loopback:
// an HCA copies a multicast send to its own attached QPs, hca/mcast.go;
// the synthetic workload's packet endpoints have no QPs).
func (s *Subnet) AddMulticastGroup(members []int) (*MulticastGroup, error) {
	t := s.Topo
	if len(members) < 2 {
		return nil, fmt.Errorf("subnet: a multicast group needs at least two members, got %d", len(members))
	}
	mlid := uint16(0xC000 + len(s.mcast))
	if len(s.mcast) > 0xFFFE-0xC000 {
		return nil, fmt.Errorf("subnet: no multicast LID left (0xC000..0xFFFE)")
	}
	m := slices.Clone(members)
	slices.Sort(m)
	m = slices.Compact(m)
	if len(m) != len(members) {
		return nil, fmt.Errorf("subnet: multicast group members %v name a host twice", members)
	}
	// Each member's switch and the port it is cabled to.
	hostPorts := map[int][]int{} // switch node → its member hosts' ports
	var memberSw []int
	for _, h := range m {
		if h < 0 || h >= len(s.hosts) {
			return nil, fmt.Errorf("subnet: multicast group member %d is not a host (0..%d)", h, len(s.hosts)-1)
		}
		q, ok := t.Peer(PortRef{s.hosts[h], 1})
		if !ok || t.Nodes[q.Node].Kind != Switch {
			return nil, fmt.Errorf("subnet: multicast group member %s is not cabled to a switch", t.Nodes[s.hosts[h]].Name)
		}
		if _, seen := hostPorts[q.Node]; !seen {
			memberSw = append(memberSw, q.Node)
		}
		hostPorts[q.Node] = append(hostPorts[q.Node], q.Port)
	}
	g := &MulticastGroup{MLID: mlid, Members: m, Root: -1}
	// The tree's links, as (node, port) ends on both sides.
	inTree := map[int]map[int]bool{}
	addPort := func(n, p int) {
		if inTree[n] == nil {
			inTree[n] = map[int]bool{}
		}
		inTree[n][p] = true
	}
	if len(memberSw) > 1 {
		root := s.roots[int(mlid-0xC000)%len(s.roots)]
		// parent[n] is the port of n towards its breadth-first parent
		// (ports in increasing order: the first switch reaching n wins).
		parent := make([]int, len(t.Nodes))
		for i := range parent {
			parent[i] = -1
		}
		parent[root] = 0
		queue := []int{root}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for p := 1; p <= t.Nodes[x].Ports; p++ {
				q, ok := t.Peer(PortRef{x, p})
				if ok && t.Nodes[q.Node].Kind == Switch && parent[q.Node] < 0 {
					parent[q.Node] = q.Port
					queue = append(queue, q.Node)
				}
			}
		}
		// Every member switch's path to the root.
		for _, n := range memberSw {
			for x := n; x != root; {
				if parent[x] < 0 {
					return nil, fmt.Errorf("subnet: %s cannot reach the multicast root %s", t.Nodes[x].Name, t.Nodes[root].Name)
				}
				up := PortRef{x, parent[x]}
				q, _ := t.Peer(up)
				if inTree[x][up.Port] {
					break // the rest of the way is in the tree already
				}
				addPort(x, up.Port)
				addPort(q.Node, q.Port)
				x = q.Node
			}
		}
		// Cut off a root (and the roots below it) that leads to one branch
		// and has no member: the members' paths meet below it.
		for {
			if len(inTree[root]) != 1 || len(hostPorts[root]) > 0 {
				break
			}
			var p int
			for p = range inTree[root] {
			}
			q, _ := t.Peer(PortRef{root, p})
			delete(inTree, root)
			delete(inTree[q.Node], q.Port)
			root = q.Node
		}
		g.Root = root
	}
	for n, ps := range hostPorts {
		for _, p := range ps {
			addPort(n, p)
		}
	}
	for n := range inTree {
		g.Switches = append(g.Switches, n)
	}
	slices.Sort(g.Switches)
	for _, n := range g.Switches {
		var ps []int
		for p := range inTree[n] {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		g.Ports = append(g.Ports, ps)
	}
	s.mcast = append(s.mcast, g)
	return g, nil
}

// MulticastGroups returns the groups AddMulticastGroup programmed, in MLID
// order.
func (s *Subnet) MulticastGroups() []*MulticastGroup { return s.mcast }

// MFT returns switch node n's multicast forwarding table entries: per
// group whose tree holds n, its MLID and the IB ports (1-based) of n's
// entry.
func (s *Subnet) MFT(n int) (mlids []uint16, ports [][]int) {
	for _, g := range s.mcast {
		if k, ok := slices.BinarySearch(g.Switches, n); ok {
			mlids = append(mlids, g.MLID)
			ports = append(ports, g.Ports[k])
		}
	}
	return mlids, ports
}
