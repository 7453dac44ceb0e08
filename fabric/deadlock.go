package fabric

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Channel is one direction of a link on one VL, named by the port the packets
// leave from. A credit-based lossless link can only send on a channel when the
// buffer at its far end has room, so a packet holding one channel while
// waiting for the next makes the second a dependency of the first.
type Channel struct {
	Port PortRef
	VL   uint8
}

// channelIndex numbers every (port, VL) of the fabric densely.
type channelIndex struct {
	base []int // node → id of its port 1, VL 0
	vls  int
}

func newChannelIndex(t *Topology, vls int) channelIndex {
	ci := channelIndex{base: make([]int, len(t.Nodes)+1), vls: vls}
	for n, node := range t.Nodes {
		ci.base[n+1] = ci.base[n] + node.Ports*vls
	}
	return ci
}

func (ci channelIndex) id(c Channel) int {
	return ci.base[c.Port.Node] + (c.Port.Port-1)*ci.vls + int(c.VL)
}

func (ci channelIndex) channel(id int) Channel {
	n, _ := slices.BinarySearch(ci.base, id+1)
	n-- // base[n] <= id < base[n+1]
	off := id - ci.base[n]
	return Channel{Port: PortRef{n, off/ci.vls + 1}, VL: uint8(off % ci.vls)}
}

func (ci channelIndex) count() int { return ci.base[len(ci.base)-1] }

// channelName names a channel by its egress port, and its VL when the fabric
// has more than one.
func (s *Subnet) channelName(c Channel) string {
	name := s.Topo.PortName(c.Port)
	if s.VLs > 1 {
		name += " VL" + strconv.Itoa(int(c.VL))
	}
	return name
}

// DependencyGraph returns the channel dependency graph (Dally and Seitz,
// "Deadlock-Free Message Routing in Multiprocessor Interconnection Networks",
// IEEE Trans. Computers C-36(5), 1987) of every host-to-host route for each
// service level in sls (nil means SL 0 only): for an SL adaptive routing
// applies to (AdaptiveSL) every route its AR groups allow, for any other
// SL the LFTs' routes alone. The graph is the union over the SLs (their
// packets share the channels of the VLs they map to): for each channel,
// the channels a packet holding it may wait for next, sorted. Routes to switch LIDs are left
// out: they carry subnet management on VL15, which has no flow control
// (ib-facts.md §3, C7-18) and so cannot block. With multicast groups
// (AddMulticastGroup) the copies' dependencies along their trees join the
// union on every SL of sls (multicastDependencies).
func (s *Subnet) DependencyGraph(sls []uint8) ([]Channel, [][]int, error) {
	if len(sls) == 0 {
		sls = []uint8{0}
	}
	return s.dependencyGraph(sls, sls)
}

// dependencyGraph is DependencyGraph with the unicast routes on the SLs
// of sls (none when empty) and the multicast trees on those of mcastSLs.
func (s *Subnet) dependencyGraph(sls, mcastSLs []uint8) ([]Channel, [][]int, error) {
	t := s.Topo
	ci := newChannelIndex(t, s.VLs)
	nch := ci.count()
	// succ holds, per channel, a bitset over the (port, VL) channels of the
	// node it leads into: the channels a packet on it may wait for next.
	// succOff[c] is where channel c's words start.
	succOff := make([]int, nch+1)
	for id := range nch {
		words := 0
		if far, ok := t.Peer(ci.channel(id).Port); ok {
			words = (t.Nodes[far.Node].Ports*ci.vls + 63) / 64
		}
		succOff[id+1] = succOff[id] + words
	}
	succ := make([]uint64, succOff[nch])
	seen := make([]int32, nch) // stamp of the (SL, destination) pass that walked a channel
	stamp := int32(0)
	addDep := func(pid int, x int, next Channel) {
		bit := ci.id(next) - ci.base[x]
		succ[succOff[pid]+bit/64] |= 1 << (bit % 64)
	}
	for _, sl := range sls {
		if sl > 15 {
			return nil, nil, fmt.Errorf("deadlock check: SL %d is not a service level (0..15)", sl)
		}
		if s.AdaptiveSL(sl) {
			// This SL's packets may take every port of an AR group; the
			// other SLs' follow the LFTs alone (the walk below).
			if err := s.adaptiveDependencies(sl, ci, seen, &stamp, addDep); err != nil {
				return nil, nil, err
			}
			continue
		}
		for _, d := range s.hosts {
			stamp++
			dlid := s.lid[d]
			for _, h := range s.hosts {
				if h == d {
					continue
				}
				prev := Channel{Port: PortRef{h, 1}, VL: s.VL(h, 0, 1, sl)}
				if int(prev.VL) >= s.VLs {
					break // VL15 for a data SL at the source: nothing enters the fabric
				}
				for hop := 0; ; hop++ {
					pid := ci.id(prev)
					if seen[pid] == stamp {
						break // the rest of this route is already in the graph
					}
					seen[pid] = stamp
					in, ok := t.Peer(prev.Port)
					if !ok {
						return nil, nil, fmt.Errorf("deadlock check: route %s to %s: %s has no cable", t.Nodes[h].Name, t.Nodes[d].Name, t.PortName(prev.Port))
					}
					x := in.Node
					if x == d {
						break
					}
					if t.Nodes[x].Kind == Host || hop > len(t.Nodes) {
						_, err := s.Path(h, d)
						if err == nil {
							panic(fmt.Sprintf("fabric: deadlock walk from %s to %s went astray at %s but Path found no fault", t.Nodes[h].Name, t.Nodes[d].Name, t.Nodes[x].Name))
						}
						return nil, nil, fmt.Errorf("deadlock check: %w", err)
					}
					out := s.Egress(x, dlid)
					if out == NoPort || out == 0 {
						return nil, nil, fmt.Errorf("deadlock check: route %s to %s: %s has no route to LID %d", t.Nodes[h].Name, t.Nodes[d].Name, t.Nodes[x].Name, dlid)
					}
					next := Channel{Port: PortRef{x, int(out)}, VL: s.VL(x, in.Port, int(out), sl)}
					if int(next.VL) >= s.VLs {
						break // VL15 in a data SL's entry: the switch drops the packet
					}
					addDep(pid, x, next)
					prev = next
				}
			}
		}
	}
	if err := s.multicastDependencies(mcastSLs, ci, seen, &stamp, addDep); err != nil {
		return nil, nil, err
	}
	adj := make([][]int, nch)
	for id := range nch {
		far, ok := t.Peer(ci.channel(id).Port)
		if !ok {
			continue
		}
		for w, word := range succ[succOff[id]:succOff[id+1]] {
			for ; word != 0; word &= word - 1 {
				adj[id] = append(adj[id], ci.base[far.Node]+w*64+bits.TrailingZeros64(word))
			}
		}
	}
	chans := make([]Channel, nch)
	for i := range chans {
		chans[i] = ci.channel(i)
	}
	return chans, adj, nil
}

// adaptiveDependencies adds, for service level sl, the dependencies of
// every route a packet may take under adaptive routing: from each channel
// a packet for destination d holds, every port of the next switch's AR
// group for d (or its LFT port) is a channel it may wait for. The walk goes
// over the channels reachable from every source host, each once per
// destination (seen, stamped per pass).
func (s *Subnet) adaptiveDependencies(sl uint8, ci channelIndex, seen []int32, stamp *int32,
	addDep func(pid, x int, next Channel)) error {
	t := s.Topo
	var stack []Channel
	var one [1]uint16
	for _, d := range s.hosts {
		*stamp++
		dlid := s.lid[d]
		stack = stack[:0]
		for _, h := range s.hosts {
			if h == d {
				continue
			}
			c := Channel{Port: PortRef{h, 1}, VL: s.VL(h, 0, 1, sl)}
			if int(c.VL) >= s.VLs {
				break // VL15 for a data SL at the source: nothing enters the fabric
			}
			stack = append(stack, c)
		}
		for len(stack) > 0 {
			prev := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			pid := ci.id(prev)
			if seen[pid] == *stamp {
				continue
			}
			seen[pid] = *stamp
			in, ok := t.Peer(prev.Port)
			if !ok {
				return fmt.Errorf("deadlock check: route to %s: %s has no cable", t.Nodes[d].Name, t.PortName(prev.Port))
			}
			x := in.Node
			if x == d {
				continue
			}
			if t.Nodes[x].Kind == Host {
				return fmt.Errorf("deadlock check: a route to %s ends at %s", t.Nodes[d].Name, t.Nodes[x].Name)
			}
			for _, out := range s.egressesFrom(x, in.Port, dlid, sl, &one) {
				if out == NoPort || out == 0 {
					return fmt.Errorf("deadlock check: route to %s: %s has no route to LID %d", t.Nodes[d].Name, t.Nodes[x].Name, dlid)
				}
				next := Channel{Port: PortRef{x, int(out)}, VL: s.VL(x, in.Port, int(out), sl)}
				if int(next.VL) >= s.VLs {
					continue // VL15 in a data SL's entry: the switch drops the packet (and AR never picks such a port)
				}
				addDep(pid, x, next)
				stack = append(stack, next)
			}
		}
	}
	return nil
}

// multicastDependencies adds, for every multicast group the subnet
// manager programmed (AddMulticastGroup) and every SL of sls, the
// dependencies of its copies: a copy that entered switch x on port a and
// leaves on port b of the entry holds the channel it arrived on while it
// waits for b's (a replicating switch keeps the packet in its input buffer
// until every copy has left, switch.md). The walk starts at every member,
// as any member may send to its group (more than the run's senders, as the
// unicast walk covers every host pair), and follows the entries as the
// switches forward: every port of the entry but the arrival port. A tree
// alone gives no cycle; with the unicast routes on the same VL, or with
// other groups' trees, the union may.
func (s *Subnet) multicastDependencies(sls []uint8, ci channelIndex, seen []int32, stamp *int32,
	addDep func(pid, x int, next Channel)) error {
	t := s.Topo
	var stack []Channel
	for _, sl := range sls {
		for _, g := range s.mcast {
			for _, h := range g.Members {
				*stamp++
				src := Channel{Port: PortRef{s.hosts[h], 1}, VL: s.VL(s.hosts[h], 0, 1, sl)}
				if int(src.VL) >= s.VLs {
					continue // VL15 for a data SL at the source: nothing enters the fabric
				}
				stack = append(stack[:0], src)
				for len(stack) > 0 {
					prev := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					pid := ci.id(prev)
					if seen[pid] == *stamp {
						continue
					}
					seen[pid] = *stamp
					in, ok := t.Peer(prev.Port)
					if !ok {
						return fmt.Errorf("deadlock check: multicast group %#x: %s has no cable", g.MLID, t.PortName(prev.Port))
					}
					x := in.Node
					if t.Nodes[x].Kind == Host {
						continue
					}
					k, ok := slices.BinarySearch(g.Switches, x)
					if !ok {
						return fmt.Errorf("deadlock check: multicast group %#x reaches %s, which is not in its tree", g.MLID, t.Nodes[x].Name)
					}
					for _, out := range g.Ports[k] {
						if out == in.Port {
							continue
						}
						next := Channel{Port: PortRef{x, out}, VL: s.VL(x, in.Port, out, sl)}
						if int(next.VL) >= s.VLs {
							continue // VL15 in a data SL's entry: the switch drops the copy
						}
						addDep(pid, x, next)
						stack = append(stack, next)
					}
				}
			}
		}
	}
	return nil
}

// CheckDeadlock builds the channel dependency graph of the routes (see
// DependencyGraph) and returns an error naming the channels of a cycle if it
// has one. An acyclic graph means the routing cannot deadlock on credits
// (Dally and Seitz 1987); a cycle means it can, given enough traffic.
func (s *Subnet) CheckDeadlock(sls []uint8) error {
	chans, adj, err := s.DependencyGraph(sls)
	if err != nil {
		return err
	}
	cycle := s.cycleNames(chans, adj)
	if cycle == "" {
		return nil
	}
	with := ""
	if len(sls) == 0 {
		sls = []uint8{0}
	}
	for _, sl := range sls {
		if s.AdaptiveSL(sl) {
			with = " with adaptive routing"
		}
	}
	if n := len(s.mcast); n > 0 {
		with += fmt.Sprintf(" with the trees of %d multicast group", n)
		if n > 1 {
			with += "s"
		}
	}
	return fmt.Errorf("deadlock: %s routing%s has a cycle of %s", s.Routing, with, cycle)
}

// cycleNames returns a cycle of the graph as "N channels in its channel
// dependency graph: a -> b -> a", or "" when it has none.
func (s *Subnet) cycleNames(chans []Channel, adj [][]int) string {
	cycle := findCycle(adj)
	if cycle == nil {
		return ""
	}
	names := make([]string, 0, len(cycle)+1)
	for _, c := range cycle {
		names = append(names, s.channelName(chans[c]))
	}
	names = append(names, names[0])
	return fmt.Sprintf("%d channels in its channel dependency graph: %s", len(cycle), strings.Join(names, " -> "))
}

// CheckMulticastDeadlock checks a multicast run's packets as they go: the
// programmed groups' trees on mcastSL and, when unicastSLs is not empty,
// the unicast routes on those SLs (a background's), in one channel
// dependency graph. Each SL goes on the VLs its SL-to-VL tables give it,
// so a background on another VL shares no channel with the trees.
func (s *Subnet) CheckMulticastDeadlock(mcastSL uint8, unicastSLs []uint8) error {
	chans, adj, err := s.dependencyGraph(unicastSLs, []uint8{mcastSL})
	if err != nil {
		return err
	}
	cycle := s.cycleNames(chans, adj)
	if cycle == "" {
		return nil
	}
	what := fmt.Sprintf("the trees of %d multicast group", len(s.mcast))
	if len(s.mcast) > 1 {
		what += "s"
	}
	if len(unicastSLs) > 0 {
		what = fmt.Sprintf("%s routing with %s", s.Routing, what)
	}
	return fmt.Errorf("deadlock: %s on SL %d has a cycle of %s", what, mcastSL, cycle)
}

// staticDeadlockFree reports whether the LFTs alone, without the AR
// groups, route without a cycle: whether a cycle of an adaptive routing
// fabric is adaptive routing's.
func (s *Subnet) staticDeadlockFree(sls []uint8) bool {
	ar, arOf, arSLs := s.ar, s.arOf, s.arSLs
	s.ar, s.arOf, s.arSLs = nil, nil, 0
	err := s.CheckDeadlock(sls)
	s.ar, s.arOf, s.arSLs = ar, arOf, arSLs
	return err == nil
}

// findCycle returns the nodes of one cycle of the directed graph adj, in
// order, or nil. The search starts from the lowest node and follows
// successors in order, so the answer is deterministic.
func findCycle(adj [][]int) []int {
	const (
		white = iota
		grey
		black
	)
	colour := make([]uint8, len(adj))
	type frame struct{ node, next int }
	var stack []frame
	for start := range adj {
		if colour[start] != white {
			continue
		}
		stack = append(stack[:0], frame{start, 0})
		colour[start] = grey
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == len(adj[f.node]) {
				colour[f.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			m := adj[f.node][f.next]
			f.next++
			switch colour[m] {
			case white:
				colour[m] = grey
				stack = append(stack, frame{m, 0})
			case grey:
				i := len(stack) - 1
				for stack[i].node != m {
					i--
				}
				cycle := make([]int, 0, len(stack)-i)
				for _, fr := range stack[i:] {
					cycle = append(cycle, fr.node)
				}
				return cycle
			}
		}
	}
	return nil
}
