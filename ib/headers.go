package ib

import "fmt"

// Header and trailer sizes in bytes (ib-facts.md §2: kernel ib_pack.h, ib_hdrs.h,
// wireshark packet-infiniband.c).
const (
	LRHBytes          = 8
	GRHBytes          = 40
	BTHBytes          = 12
	RDETHBytes        = 4
	DETHBytes         = 8
	RETHBytes         = 16
	AtomicETHBytes    = 28
	AETHBytes         = 4
	AtomicAckETHBytes = 8
	ImmDtBytes        = 4
	IETHBytes         = 4
	ICRCBytes         = 4
	VCRCBytes         = 2
	// FlowControlBytes is the size of a link-level flow-control packet:
	// Op 4 | FCTBS 12 | VL 4 | FCCL 12 | LPCRC 16 bits.
	FlowControlBytes = 6
	// CreditBytes is one flow-control block (ib-facts.md §3, opensm QoS doc).
	CreditBytes = 64
	// CreditModulus is the range of the 12-bit FCTBS / FCCL counters.
	CreditModulus = 4096
	// ManagementVL is VL15: subnet management, never flow-controlled (C7-18).
	ManagementVL = 15
)

// Credits returns the number of 64-byte flow-control blocks that bytes occupy:
// ceil(bytes / 64).
func Credits(bytes int) int { return (bytes + CreditBytes - 1) / CreditBytes }

// ValidMTU reports whether mtu is an IB path MTU: 256, 512, 1024, 2048 or 4096
// (rdma-core verbs.h enum ibv_mtu).
func ValidMTU(mtu int) bool {
	switch mtu {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}

// VLMask returns the mask OpenSM applies to every VL it programs into a port
// operating vls data VLs (1, 2, 4, 8 or 15): vl_mask = (1 << (OperationalVLs
// − 1)) − 1, where OperationalVLs is the PortInfo code 1..5 for those counts
// (opensm osm_qos.c vlarb_update_table_block and sl2vl_update_table). That is
// vls − 1 for 1, 2, 4 and 8 VLs and 15 for 15, so vl & VLMask(vls) is one of
// the port's data VLs for every vl in 0..14. It panics on another count.
func VLMask(vls int) uint8 {
	switch vls {
	case 1, 2, 4, 8:
		return uint8(vls - 1)
	case 15:
		return 15
	}
	panic(fmt.Sprintf("ib.VLMask: %d is not a data-VL count (1, 2, 4, 8, 15)", vls))
}

// ValidVLCount reports whether n is a data-VL count a port can support: 1, 2,
// 4, 8 or 15 (VLCap codes 1..5, rdma-core devinfo.c).
func ValidVLCount(n int) bool {
	switch n {
	case 1, 2, 4, 8, 15:
		return true
	}
	return false
}
