// Package fabric builds the simulated InfiniBand fabric from a design point:
// the topology (hosts, switches and the cables between their ports), what a
// subnet manager would leave in it, and the whole simulation on top.
//
// The topology is a plain graph (Topology). Builders make the standard shapes
// — back to back, one switch, two- and three-level fat trees, and a ring for
// the deadlock demonstration — and a topology file describes anything else.
// Names follow Akita: Fabric.Leaf[2], Fabric.Spine[0], Fabric.Host[17], and a
// port Fabric.Leaf[2].Port[5] with IB port numbers (1..radix; a switch's
// port 0 is its management port).
//
// The subnet manager (Subnet) is computed once, before the run, like OpenSM
// at subnet bring-up: LIDs, a linear forwarding table per switch from one of
// four routing engines (minhop, dmodk, updown, random), and SL-to-VL tables.
// CheckDeadlock builds the channel dependency graph of the routes and
// refuses, naming a cycle of channels, a routing that could deadlock on
// credits.
//
// Topology, routing and the deadlock check are pure logic with no simulation
// import; docs/fabric.md describes them with their sources.
package fabric
