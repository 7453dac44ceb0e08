package hca

import (
	"encoding/binary"
	"fmt"
)

// CQEBytes is one completion queue entry (struct mlx5_cqe64, ib-facts.md §7).
const CQEBytes = 64

// CQE opcodes in op_own[7:4] (mlx5dv.h).
const (
	CQEReq         = 0
	CQERespWrImm   = 1
	CQERespSend    = 2
	CQERespSendImm = 3
	// CQERespSendInv: a SEND_WITH_INVALIDATE received; imm_inval_pkey
	// holds the R_Key it invalidated (libmlx5 handle_responder:
	// IBV_WC_WITH_INV, wc->invalidated_rkey).
	CQERespSendInv = 4
	CQEReqErr      = 13
	CQERespErr     = 14
	CQEInvalid     = 15
)

// Byte offsets in the 64-byte CQE (mlx5_cqe64 / mlx5_err_cqe).
const (
	cqeRQPNOff     = 28 // flags_rqpn: [23:0] the source QP of a UD receive
	cqeImmOff      = 36 // imm_inval_pkey, be32
	cqeByteCntOff  = 44 // byte_cnt, be32
	cqeVendorOff   = 54 // error CQE: vendor_err_synd
	cqeSyndromeOff = 55 // error CQE: syndrome
	cqeQPNOff      = 56 // sop_drop_qpn: [31:24] WQE opcode (requester), [23:0] QPN
	cqeCounterOff  = 60 // wqe_counter, be16
	cqeOpOwnOff    = 63 // op_own: opcode << 4 | owner
)

// WCStatus is ibv_wc_status (ib-facts.md §7).
type WCStatus uint8

// Work-completion statuses the model produces.
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCMWBindErr      WCStatus = 6
	WCBadRespErr     WCStatus = 7
	WCLocAccessErr   WCStatus = 8
	WCRemInvReqErr   WCStatus = 9
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
)

var wcNames = map[WCStatus]string{
	WCSuccess: "SUCCESS", WCLocLenErr: "LOC_LEN_ERR", WCLocQPOpErr: "LOC_QP_OP_ERR",
	WCLocProtErr: "LOC_PROT_ERR", WCWRFlushErr: "WR_FLUSH_ERR", WCMWBindErr: "MW_BIND_ERR", WCBadRespErr: "BAD_RESP_ERR",
	WCLocAccessErr: "LOC_ACCESS_ERR", WCRemInvReqErr: "REM_INV_REQ_ERR",
	WCRemAccessErr: "REM_ACCESS_ERR", WCRemOpErr: "REM_OP_ERR", WCRetryExcErr: "RETRY_EXC_ERR",
	WCRNRRetryExcErr: "RNR_RETRY_EXC_ERR",
}

// String returns the verbs name without the IBV_WC_ prefix.
func (s WCStatus) String() string {
	if n, ok := wcNames[s]; ok {
		return n
	}
	return fmt.Sprintf("WC(%d)", uint8(s))
}

// mlx5 error syndromes (mlx5dv.h) and the verbs status each maps to.
var syndromeOf = map[WCStatus]uint8{
	WCLocLenErr: 0x01, WCLocQPOpErr: 0x02, WCLocProtErr: 0x04, WCWRFlushErr: 0x05, WCMWBindErr: 0x06,
	WCBadRespErr: 0x10, WCLocAccessErr: 0x11, WCRemInvReqErr: 0x12, WCRemAccessErr: 0x13,
	WCRemOpErr: 0x14, WCRetryExcErr: 0x15, WCRNRRetryExcErr: 0x16,
}

func statusOfSyndrome(s uint8) WCStatus {
	for st, syn := range syndromeOf {
		if syn == s {
			return st
		}
	}
	return WCBadRespErr
}

// WCOpcode is ibv_wc_opcode.
type WCOpcode uint8

// Work-completion opcodes.
const (
	WCSend        WCOpcode = 0
	WCRDMAWrite   WCOpcode = 1
	WCRDMARead    WCOpcode = 2
	WCCompSwap    WCOpcode = 3
	WCFetchAdd    WCOpcode = 4
	WCBindMW      WCOpcode = 5
	WCLocalInv    WCOpcode = 6
	WCRecv        WCOpcode = 128
	WCRecvRDMAImm WCOpcode = 129
)

// wcOfWR maps a send WR opcode to the completion opcode.
func wcOfWR(op WROpcode) WCOpcode {
	switch op {
	case WRRDMAWrite, WRRDMAWriteImm:
		return WCRDMAWrite
	case WRRDMARead:
		return WCRDMARead
	case WRCompSwap:
		return WCCompSwap
	case WRFetchAdd:
		return WCFetchAdd
	case WRBindMW:
		return WCBindMW
	case WRLocalInv:
		return WCLocalInv
	case WRRegMR:
		return WCRegMR
	}
	return WCSend
}

// wrHasImm reports whether a send WR opcode carries immediate data.
func wrHasImm(op WROpcode) bool { return op == WRSendImm || op == WRRDMAWriteImm }

// CQE is a completion as the HCA writes it.
type CQE struct {
	Opcode   uint8 // CQEReq … CQERespErr
	Status   WCStatus
	WROp     WROpcode // requester: the WQE's opcode
	QPN      uint32
	Counter  uint16 // wqe_counter: send WQE index or receive WQE index
	ByteCnt  uint32
	Imm      uint32
	Owner    bool
	HasImm   bool
	HasInv   bool   // a SEND_WITH_INVALIDATE received: Imm is the R_Key it invalidated
	Receiver bool   // a receive-side completion
	SrcQP    uint32 // UD receive: the sender's QP (DETH)
	// Solicited: a receive completion of a message whose last packet had
	// the BTH's solicited-event bit (SE). Not in the CQE's bytes: the
	// HCA's own, for an arm that is solicited-only (cqevent.go).
	Solicited bool
}

// CQESlot returns where the HCA writes the next CQE of a ring of depth
// entries (a power of two) of which pi CQEs were written and ci consumed
// (both free-running 32-bit counts): the slot, pi mod depth; the owner bit
// of op_own, (pi / depth) mod 2, which flips on every pass over the ring so
// that the consumer tells a new CQE from last pass's (mlx5 cq.c); and
// whether the ring has room, pi − ci < depth. Without room the CQE is an
// overrun: it is not written and pi does not move.
func CQESlot(depth int, pi, ci uint32) (slot uint32, owner, room bool) {
	d := uint32(depth)
	return pi % d, (pi/d)&1 == 1, pi-ci < d
}

// EncodeCQE writes c into buf[:64].
func EncodeCQE(buf []byte, c *CQE) {
	clear(buf[:CQEBytes])
	be := binary.BigEndian
	be.PutUint32(buf[cqeRQPNOff:], c.SrcQP&0xFFFFFF)
	be.PutUint32(buf[cqeImmOff:], c.Imm)
	be.PutUint32(buf[cqeByteCntOff:], c.ByteCnt)
	op := c.Opcode
	if c.Status != WCSuccess {
		buf[cqeSyndromeOff] = syndromeOf[c.Status]
		if c.Receiver {
			op = CQERespErr
		} else {
			op = CQEReqErr
		}
	}
	// sop_drop_qpn[31:24] is the requester's WQE opcode. A responder CQE
	// has none: the provider reads only the QPN there (rdma-core mlx5
	// handle_responder_lazy), and the model writes 0 rather than an opcode
	// of a request it did not post. What ConnectX writes there is not
	// public; 0 is the model's choice.
	sop := uint32(wrToMlx5[c.WROp])
	if c.Receiver {
		sop = 0
	}
	be.PutUint32(buf[cqeQPNOff:], sop<<24|c.QPN&0xFFFFFF)
	be.PutUint16(buf[cqeCounterOff:], c.Counter)
	own := uint8(0)
	if c.Owner {
		own = 1
	}
	buf[cqeOpOwnOff] = op<<4 | own
}

// DecodeCQE parses a 64-byte CQE.
func DecodeCQE(buf []byte) CQE {
	be := binary.BigEndian
	c := CQE{
		SrcQP:   be.Uint32(buf[cqeRQPNOff:]) & 0xFFFFFF,
		Imm:     be.Uint32(buf[cqeImmOff:]),
		ByteCnt: be.Uint32(buf[cqeByteCntOff:]),
		Counter: be.Uint16(buf[cqeCounterOff:]),
		Opcode:  buf[cqeOpOwnOff] >> 4,
		Owner:   buf[cqeOpOwnOff]&1 == 1,
	}
	q := be.Uint32(buf[cqeQPNOff:])
	c.QPN = q & 0xFFFFFF
	c.WROp, _ = mlx5ToWR(uint8(q >> 24))
	switch c.Opcode {
	case CQEReq:
		// A requester CQE has no immediate flag: the provider derives
		// IB_WC_WITH_IMM from the WQE opcode in sop_drop_qpn (mlx5
		// handle_good_req; rxe make_send_cqe sets it the same way).
		c.HasImm = wrHasImm(c.WROp)
	case CQEReqErr, CQERespErr:
		c.Status = statusOfSyndrome(buf[cqeSyndromeOff])
		c.Receiver = c.Opcode == CQERespErr
	case CQERespSend, CQERespSendImm, CQERespWrImm:
		c.Receiver = true
		c.HasImm = c.Opcode != CQERespSend
	case CQERespSendInv:
		c.Receiver, c.HasInv = true, true
	}
	return c
}

// WC is a work completion as ibv_poll_cq returns it.
type WC struct {
	WRID    uint64
	Status  WCStatus
	Opcode  WCOpcode
	ByteLen uint32
	Imm     uint32
	HasImm  bool
	QPN     uint32
	SrcQP   uint32 // UD receive: the sender's QP
	// HasInv: the receive was a SEND_WITH_INVALIDATE (IBV_WC_WITH_INV)
	// that invalidated InvalidatedRKey.
	HasInv          bool
	InvalidatedRKey uint32
}
