package ib

// Opcode is the BTH opcode: transport in bits [7:5], operation in bits [4:0]
// (kernel include/rdma/ib_pack.h).
type Opcode uint8

// RC opcodes (ib-facts.md §2, kernel rxe_opcode.c).
const (
	SendFirst              Opcode = 0x00
	SendMiddle             Opcode = 0x01
	SendLast               Opcode = 0x02
	SendLastImm            Opcode = 0x03
	SendOnly               Opcode = 0x04
	SendOnlyImm            Opcode = 0x05
	RDMAWriteFirst         Opcode = 0x06
	RDMAWriteMiddle        Opcode = 0x07
	RDMAWriteLast          Opcode = 0x08
	RDMAWriteLastImm       Opcode = 0x09
	RDMAWriteOnly          Opcode = 0x0A
	RDMAWriteOnlyImm       Opcode = 0x0B
	RDMAReadRequest        Opcode = 0x0C
	RDMAReadResponseFirst  Opcode = 0x0D
	RDMAReadResponseMiddle Opcode = 0x0E
	RDMAReadResponseLast   Opcode = 0x0F
	RDMAReadResponseOnly   Opcode = 0x10
	Acknowledge            Opcode = 0x11
	AtomicAcknowledge      Opcode = 0x12
	CompareSwap            Opcode = 0x13
	FetchAdd               Opcode = 0x14
	SendLastInv            Opcode = 0x16
	SendOnlyInv            Opcode = 0x17

	// UDSendOnly and UDSendOnlyImm are the UD transport's sends (prefix 0x60).
	UDSendOnly    Opcode = 0x64
	UDSendOnlyImm Opcode = 0x65

	// CNP is the congestion notification packet (IBA Annex A10; kernel
	// ib_pack.h IB_OPCODE_CNP = 0x80): no payload, BECN set, from the
	// destination that received a FECN back to the source.
	CNP Opcode = 0x80
)

// Extension-header flags: which headers follow the BTH for an opcode.
const (
	HasRETH uint8 = 1 << iota
	HasAETH
	HasAtomicETH
	HasAtomicAckETH
	HasImmDt
	HasIETH
	HasDETH
	HasPayload
)

type opInfo struct {
	name    string
	headers uint8
}

// opTable is indexed by opcode; rows follow kernel rxe_opcode.c rxe_opcode[].
var opTable = [256]opInfo{
	SendFirst:              {"SEND_FIRST", HasPayload},
	SendMiddle:             {"SEND_MIDDLE", HasPayload},
	SendLast:               {"SEND_LAST", HasPayload},
	SendLastImm:            {"SEND_LAST_WITH_IMMEDIATE", HasImmDt | HasPayload},
	SendOnly:               {"SEND_ONLY", HasPayload},
	SendOnlyImm:            {"SEND_ONLY_WITH_IMMEDIATE", HasImmDt | HasPayload},
	RDMAWriteFirst:         {"RDMA_WRITE_FIRST", HasRETH | HasPayload},
	RDMAWriteMiddle:        {"RDMA_WRITE_MIDDLE", HasPayload},
	RDMAWriteLast:          {"RDMA_WRITE_LAST", HasPayload},
	RDMAWriteLastImm:       {"RDMA_WRITE_LAST_WITH_IMMEDIATE", HasImmDt | HasPayload},
	RDMAWriteOnly:          {"RDMA_WRITE_ONLY", HasRETH | HasPayload},
	RDMAWriteOnlyImm:       {"RDMA_WRITE_ONLY_WITH_IMMEDIATE", HasRETH | HasImmDt | HasPayload},
	RDMAReadRequest:        {"RDMA_READ_REQUEST", HasRETH},
	RDMAReadResponseFirst:  {"RDMA_READ_RESPONSE_FIRST", HasAETH | HasPayload},
	RDMAReadResponseMiddle: {"RDMA_READ_RESPONSE_MIDDLE", HasPayload},
	RDMAReadResponseLast:   {"RDMA_READ_RESPONSE_LAST", HasAETH | HasPayload},
	RDMAReadResponseOnly:   {"RDMA_READ_RESPONSE_ONLY", HasAETH | HasPayload},
	Acknowledge:            {"ACKNOWLEDGE", HasAETH},
	AtomicAcknowledge:      {"ATOMIC_ACKNOWLEDGE", HasAETH | HasAtomicAckETH},
	CompareSwap:            {"COMPARE_SWAP", HasAtomicETH},
	FetchAdd:               {"FETCH_ADD", HasAtomicETH},
	SendLastInv:            {"SEND_LAST_WITH_INVALIDATE", HasIETH | HasPayload},
	SendOnlyInv:            {"SEND_ONLY_WITH_INVALIDATE", HasIETH | HasPayload},
	UDSendOnly:             {"UD_SEND_ONLY", HasDETH | HasPayload},
	UDSendOnlyImm:          {"UD_SEND_ONLY_WITH_IMMEDIATE", HasDETH | HasImmDt | HasPayload},
	CNP:                    {"CNP", 0},
}

// Valid reports whether op is an opcode this model knows.
func (op Opcode) Valid() bool { return opTable[op].name != "" }

// String returns the IBA name of the opcode.
func (op Opcode) String() string {
	if n := opTable[op].name; n != "" {
		return n
	}
	return "UNKNOWN"
}

// Headers returns the extension-header flags (HasRETH, ...) for op.
func (op Opcode) Headers() uint8 { return opTable[op].headers }

// ExtHeaderBytes returns the bytes of the extension headers op carries between
// the BTH and the payload.
func (op Opcode) ExtHeaderBytes() int {
	h := opTable[op].headers
	n := 0
	if h&HasRETH != 0 {
		n += RETHBytes
	}
	if h&HasAETH != 0 {
		n += AETHBytes
	}
	if h&HasAtomicETH != 0 {
		n += AtomicETHBytes
	}
	if h&HasAtomicAckETH != 0 {
		n += AtomicAckETHBytes
	}
	if h&HasImmDt != 0 {
		n += ImmDtBytes
	}
	if h&HasIETH != 0 {
		n += IETHBytes
	}
	if h&HasDETH != 0 {
		n += DETHBytes
	}
	return n
}

// IsRequest reports whether op is sent by a requester (not a response or ACK).
func (op Opcode) IsRequest() bool {
	switch op {
	case RDMAReadResponseFirst, RDMAReadResponseMiddle, RDMAReadResponseLast,
		RDMAReadResponseOnly, Acknowledge, AtomicAcknowledge, CNP:
		return false
	}
	return true
}
