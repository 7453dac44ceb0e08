package fabric

import (
	"fmt"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/switchasic"
)

// applySL2VLPairs programs switch.sl2vl_pairs: each entry's table on every
// (in, out) pair it selects on every switch its glob names, in order, so a
// later entry wins where two select one pair. The port classes come from
// the cables and the up/down ranks: host and switch by what the cable
// reaches, up and down by the direction updown routing gives the hop
// (isUp), so every cabled port of a switch is up or down. An entry that
// names no switch or selects no pair is refused: it would change nothing,
// which is a mistake to report, not a run to waste.
func (s *Subnet) applySL2VLPairs(rules []switchasic.SL2VLPairConfig) error {
	t := s.Topo
	switches := t.Switches()
	for i, r := range rules {
		key := fmt.Sprintf("switch.sl2vl_pairs[%d]", i)
		in, err := switchasic.ParsePortSelector(key+".in", string(r.In))
		if err != nil {
			return err
		}
		out, err := switchasic.ParsePortSelector(key+".out", string(r.Out))
		if err != nil {
			return err
		}
		if len(r.SL2VL) != 16 {
			return fmt.Errorf("%s.sl2vl: %d entries, want 16 (one VL per SL)", key, len(r.SL2VL))
		}
		var table SL2VLTable
		for sl, vl := range r.SL2VL {
			if vl != ib.ManagementVL && (vl < 0 || vl >= s.VLs) {
				return fmt.Errorf("%s.sl2vl[%d]: vl %d is not a data VL of this port (0 to %d) or 15 (drop)", key, sl, vl, s.VLs-1)
			}
			table[sl] = uint8(vl)
		}
		glob := r.Switches
		if glob == "" {
			glob = "*"
		}
		named, pairs := 0, 0
		for _, n := range switches {
			if !components.GlobMatch(glob, t.Nodes[n].Name) {
				continue
			}
			named++
			ins, err := s.selectPorts(n, in, key+".in")
			if err != nil {
				return err
			}
			outs, err := s.selectPorts(n, out, key+".out")
			if err != nil {
				return err
			}
			if len(ins) == 0 || len(outs) == 0 {
				continue
			}
			k := s.tableIndex(n, table, i)
			stride := t.Nodes[n].Ports + 1
			for _, a := range ins {
				for _, b := range outs {
					s.sl2vl[n].pair[a*stride+b] = k
				}
			}
			pairs += len(ins) * len(outs)
		}
		if named == 0 {
			return fmt.Errorf("%s.switches: %q matches no switch of this fabric (%s; '*' is any run of characters, '?' one)", key, glob, switchNames(t, switches))
		}
		if pairs == 0 {
			return fmt.Errorf("%s: in %q, out %q selects no port pair on the %d switch(es) %q names, so the entry would change nothing (up and down ports need switch-to-switch cables; a single switch has only host ports)",
				key, in.String(), out.String(), named, glob)
		}
	}
	return nil
}

// selectPorts returns the IB ports of switch n that sel selects; key names
// the field for an error (a port number beyond the switch's ports).
func (s *Subnet) selectPorts(n int, sel switchasic.PortSelector, key string) ([]int, error) {
	node := s.Topo.Nodes[n]
	if sel.Class == "" {
		for _, p := range sel.Ports {
			if p > node.Ports {
				return nil, fmt.Errorf("%s: port %d is beyond %s's %d ports", key, p, node.Name, node.Ports)
			}
		}
		return sel.Ports, nil
	}
	var ports []int
	for p := 1; p <= node.Ports; p++ {
		peer, cabled := s.Topo.Peer(PortRef{n, p})
		ok := false
		switch sel.Class {
		case switchasic.PortsAny:
			ok = true
		case switchasic.PortsHost:
			ok = cabled && s.Topo.Nodes[peer.Node].Kind == Host
		case switchasic.PortsSwitch:
			ok = cabled && s.Topo.Nodes[peer.Node].Kind == Switch
		case switchasic.PortsUp:
			ok = cabled && s.isUp(n, peer.Node)
		case switchasic.PortsDown:
			ok = cabled && !s.isUp(n, peer.Node)
		default:
			panic(fmt.Sprintf("fabric: port class %q passed validation", sel.Class))
		}
		if ok {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// switchNames lists a fabric's switches for an error: all of them when
// few, else the first and last few.
func switchNames(t *Topology, switches []int) string {
	if len(switches) == 0 {
		return "it has no switches"
	}
	names := make([]string, 0, 7)
	for i, n := range switches {
		if len(switches) > 6 && i == 3 {
			names = append(names, "…")
		}
		if len(switches) <= 6 || i < 3 || i >= len(switches)-3 {
			names = append(names, t.Nodes[n].Name)
		}
	}
	return fmt.Sprintf("its %d switches: %s", len(switches), strings.Join(names, ", "))
}

// PairDropError is a switch.sl2vl_pairs entry whose table drops (VL 15) an
// SL the run sends, on a port pair some host-to-host route takes.
type PairDropError struct {
	Rule     int    // index into switch.sl2vl_pairs
	SL       uint8  // the service level dropped
	Switch   string // the switch's name
	In, Out  int    // IB ports of the pair
	Src, Dst string // one route that takes the pair
}

func (e *PairDropError) Error() string {
	return fmt.Sprintf("switch.sl2vl_pairs[%d].sl2vl[%d]: SL %d maps to VL 15 (drop) on %s from port %d to port %d, which the route from %s to %s takes, so the switch would drop those packets; map SL %d to a data VL on that pair, or leave the pair out of the entry",
		e.Rule, e.SL, e.SL, e.Switch, e.In, e.Out, e.Src, e.Dst, e.SL)
}

// slHosts is a service level and the hosts that send to one another on it
// (indices into Subnet.Hosts; nil = every host).
type slHosts struct {
	sl    uint8
	hosts []int
}

// checkPairDrops walks every route between the hosts of each flow on its SL
// and returns a *PairDropError for the first switch hop whose port pair has
// a switch.sl2vl_pairs table mapping the SL to VL 15. Drops in a node's
// default table (switch.sl2vl) are the config's to refuse, and a table set
// with SetSL2VL is the caller's: neither is reported.
func (s *Subnet) checkPairDrops(flows []slHosts) error {
	custom := false
	for n := range s.sl2vl {
		custom = custom || len(s.sl2vl[n].tables) > 1
	}
	if !custom {
		return nil
	}
	t := s.Topo
	base := make([]int, len(t.Nodes)+1) // node → id of its port 1
	for n, node := range t.Nodes {
		base[n+1] = base[n] + node.Ports
	}
	seen := make([]int32, base[len(t.Nodes)]) // stamp of the (SL, destination) pass that walked an egress port
	stamp := int32(0)
	for _, f := range flows {
		sl := f.sl
		hosts := s.hosts
		if f.hosts != nil {
			hosts = make([]int, len(f.hosts))
			for i, x := range f.hosts {
				hosts[i] = s.hosts[x]
			}
		}
		for _, d := range hosts {
			stamp++
			dlid := s.lid[d]
			for _, h := range hosts {
				if h == d {
					continue
				}
				// A route's pairs from a port on depend only on the port
				// (forwarding is by DLID), so a port walked before in this
				// pass has had the rest of its route checked.
				prev := PortRef{h, 1}
				for hop := 0; hop <= len(t.Nodes); hop++ {
					id := base[prev.Node] + prev.Port - 1
					if seen[id] == stamp {
						break
					}
					seen[id] = stamp
					in, ok := t.Peer(prev)
					if !ok || t.Nodes[in.Node].Kind == Host {
						break // the deadlock check reports broken routes
					}
					x := in.Node
					out := s.Egress(x, dlid)
					if out == NoPort || out == 0 {
						break
					}
					p := &s.sl2vl[x]
					if p.pair != nil {
						k := p.pair[in.Port*(t.Nodes[x].Ports+1)+int(out)]
						if p.rule[k] >= 0 && int(p.tables[k][sl&15]) >= s.VLs {
							return &PairDropError{Rule: int(p.rule[k]), SL: sl, Switch: t.Nodes[x].Name,
								In: in.Port, Out: int(out), Src: t.Nodes[h].Name, Dst: t.Nodes[d].Name}
						}
					}
					prev = PortRef{x, int(out)}
				}
			}
		}
	}
	return nil
}
