package verif

import (
	"fmt"
	"sort"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// MulticastRoutes is what the route check asks, when CheckConfig.Routes
// also implements it, of a grant of a multicast packet: whether the
// switch's MFT entry for the group, as the subnet manager programmed it,
// holds the output. fabric.Network implements it.
type MulticastRoutes interface {
	MulticastAllowed(sw int, mlid uint16, out int) bool
}

// lastMulticastLID ends the multicast range; 0xFFFF is the permissive LID.
const lastMulticastLID = 0xFFFE

// mcGroup is one multicast group as the checkers know it: its members'
// block paths, each with its position.
type mcGroup struct {
	mlid    int64
	members map[string]int
	names   []string // by position
}

// has reports whether the block at path is a member.
func (g *mcGroup) has(path string) bool {
	_, ok := g.members[path]
	return ok
}

// mcFlight is one multicast packet in flight: its injected identity and
// the members that have yet to receive it.
type mcFlight struct {
	id    pktIdentity
	group *mcGroup
	due   []bool // by member position
	left  int
}

// isMulticast reports whether dlid is a multicast LID the checkers hold
// to its group (CheckConfig.Multicast set).
func (c *Checkers) isMulticast(dlid int64) bool {
	return c.cfg.Multicast != nil && dlid >= firstMulticastLID && dlid <= lastMulticastLID
}

// mcInject takes a packet to a multicast group into flight: every member
// but its sender must receive it once.
func (c *Checkers) mcInject(ev *components.TraceEvent, f *evFields, seq int64) {
	if _, dup := c.mcast[seq]; dup || c.delivered.has(seq) {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d injected twice", seq))
		return
	}
	id := c.identity(ev, f)
	g := c.mcGroups[id.dlid]
	if g == nil {
		names := c.cfg.Multicast[uint16(id.dlid)]
		if names == nil {
			c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d sent to MLID %#x, which no multicast group has", seq, id.dlid))
			return
		}
		g = &mcGroup{mlid: id.dlid, members: map[string]int{}, names: names}
		for k, n := range names {
			g.members[n] = k
		}
		c.mcGroups[id.dlid] = g
	}
	fl := &mcFlight{id: id, group: g, due: make([]bool, len(g.names))}
	for k, n := range g.names {
		if n != ev.Path {
			fl.due[k] = true
			fl.left++
		}
	}
	c.mcast[seq] = fl
}

// mcDeliver checks a multicast packet's delivery: to a member that has
// not had it yet (not the sender, not a host outside the group),
// uncorrupted; the last member's delivery takes it out of flight.
func (c *Checkers) mcDeliver(ev *components.TraceEvent, f *evFields, seq int64) {
	fl := c.mcast[seq]
	if fl == nil {
		switch g := c.mcGroups[f.or(fDLID, f.dlid, 0)]; {
		case c.delivered.has(seq) && g != nil && !g.has(ev.Path):
			// A copy its group's members all had, at a host outside the
			// group (a member of another group, say): misrouted, not a
			// duplicate.
			c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d for MLID %#x delivered at %s, which is not a member of the group (misrouted)", seq, g.mlid, ev.Path))
		case c.delivered.has(seq):
			c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d delivered at %s after every member of its group had it (a duplicate)", seq, ev.Path))
		default:
			c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d delivered but never injected", seq))
		}
		return
	}
	k, member := fl.group.members[ev.Path]
	switch {
	case !member:
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d for MLID %#x delivered at %s, which is not a member of the group (misrouted)", seq, fl.group.mlid, ev.Path))
		return
	case ev.Path == c.paths[fl.id.path].name:
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d for MLID %#x delivered back to its sender %s", seq, fl.group.mlid, ev.Path))
		return
	case !fl.due[k]:
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d for MLID %#x delivered twice to %s (a duplicate)", seq, fl.group.mlid, ev.Path))
		return
	}
	got := c.identity(ev, f)
	if name, want, had, bad := headerDiff(fl.id, got); bad {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d corrupted: %s injected %d, delivered %d", seq, name, want, had))
		return
	}
	if fl.id.op != got.op {
		c.fail(InvLossless, ev, fmt.Sprintf("packet seq %d corrupted: op injected %s, delivered %s", seq, fl.id.op, got.op))
		return
	}
	fl.due[k] = false
	fl.left--
	if fl.left == 0 {
		delete(c.mcast, seq)
		c.delivered.set(seq)
	}
}

// mcFinish reports, on an idle fabric, the multicast packets some member
// never received.
func (c *Checkers) mcFinish(now ib.PS) {
	if len(c.mcast) == 0 {
		return
	}
	seqs := make([]int64, 0, len(c.mcast))
	for s := range c.mcast {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	fl := c.mcast[seqs[0]]
	missing := ""
	for k, due := range fl.due {
		if due {
			missing = fl.group.names[k]
			break
		}
	}
	c.report(&Violation{Invariant: InvLossless, Path: c.paths[fl.id.path].name, Time: now,
		Detail: fmt.Sprintf("%d multicast packets not delivered to every member; first seq %d (MLID %#x psn %d, injected at %d ps) never reached %s (%d members missing it)",
			len(seqs), seqs[0], fl.group.mlid, fl.id.psn, fl.id.at, missing, fl.left)})
}

// checkMulticastRoute holds a multicast grant to the MFT the subnet
// manager programmed: a copy out of a port the group's entry does not
// hold (a loop, a duplicate) is misrouted even if no member sees it twice.
func (c *Checkers) checkMulticastRoute(ev *components.TraceEvent, f *evFields) {
	mr, ok := c.cfg.Routes.(MulticastRoutes)
	if !ok {
		return
	}
	sw := c.routeSwitch(ev)
	if sw < 0 {
		return
	}
	if !mr.MulticastAllowed(sw, uint16(f.dlid), int(f.out)) {
		c.fail(InvRoute, ev, fmt.Sprintf("packet seq %d for MLID %#x granted to output %d, which the group's MFT entry does not hold (misrouted)",
			f.or(fSeq, f.seq, -1), f.dlid, f.out))
	}
}
