package ib

import "encoding/binary"

// Multicast addressing (ib-facts.md §4: opensm ib_types.h
// IB_LID_MCAST_START/END; IBA 9.8.1 for the QP number).
const (
	// FirstMulticastLID and LastMulticastLID bound the multicast LIDs;
	// 0xFFFF, the permissive LID, is not one.
	FirstMulticastLID = 0xC000
	LastMulticastLID  = 0xFFFE
	// MulticastQPN is the BTH DestQP of a multicast packet: the packet is
	// for every QP of the port attached to the group.
	MulticastQPN = 0xFFFFFF
)

// IsMulticastLID reports whether lid is a multicast LID.
func IsMulticastLID(lid uint16) bool { return lid >= FirstMulticastLID && lid <= LastMulticastLID }

// MGID returns the multicast GID the model gives the group of mlid, as
// the GRH's DGID carries it: ff12::/16 (0xFF, flags 1 = transient, scope
// 2 = link-local, IBA 4.1.1's multicast GID layout) with the MLID as the
// last 16 bits of the group ID. A convention of ours, as the unicast GIDs
// are (wire.go): the model carries no GIDs, and within one subnet the SM
// maps MGIDs to MLIDs one to one, so a function of the MLID names the
// group as well as an MGID would. perftest's own MGID (ff01:0:0:2:c985::,
// multicast_resources.h MCG_GID) is not used.
func MGID(mlid uint16) [16]byte {
	var g [16]byte
	g[0], g[1] = 0xFF, 0x12
	binary.BigEndian.PutUint16(g[14:], mlid)
	return g
}
