package ib

// Kind tells a data packet from a link-level flow-control packet.
type Kind uint8

// Packet kinds.
const (
	Data Kind = iota
	FlowControl
)

// RETH is the RDMA extended transport header (16 bytes).
type RETH struct {
	VA     uint64 // remote virtual address
	RKey   uint32 // remote key
	Length uint32 // DMA length of the whole message, bytes
}

// AETH is the ACK extended transport header (4 bytes).
type AETH struct {
	Syndrome uint8  // [7:5] 000 ACK, 001 RNR NAK, 011 NAK; [4:0] credit / timer / NAK code
	MSN      uint32 // 24-bit message sequence number
}

// AtomicETH is the atomic extended transport header (28 bytes).
type AtomicETH struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
}

// DETH is the datagram extended transport header (8 bytes).
type DETH struct {
	QKey  uint32
	SrcQP uint32 // 24 bit
}

// Packet is one InfiniBand packet on a link: LRH, optional GRH, BTH, the
// extension headers its opcode calls for, payload, ICRC and VCRC. A
// flow-control packet uses only Kind, VL, FCTBS and FCCL.
//
// Packets are passed by pointer and reused from pools; a block that keeps a
// packet beyond its handler owns it until it passes it on.
type Packet struct {
	// The fields every hop reads come first, in the packet's first cache
	// line (a Packet is 192 bytes, a multiple of 64, so the allocator puts
	// each one on a line boundary; TestPacketLayout): a fabric of 1,024
	// hosts outgrows the caches and each further line a hop touches is a
	// miss. The transport's and the endpoints' own fields (QP, PSN, source
	// and destination index), which no switch or link reads, follow in the
	// second line, so that the first holds a switch output's stage link.
	Kind Kind

	// LRH
	VL   uint8  // virtual lane, 4 bit; rewritten per hop from the SL-to-VL table
	SL   uint8  // service level, 4 bit; unchanged end to end
	GRH  bool   // a 40-byte GRH follows the LRH
	DLID uint16 // destination LID
	SLID uint16 // source LID

	// BTH
	Opcode Opcode
	SE     bool // solicited event
	AckReq bool
	// FECN and BECN are the BTH's congestion notification bits (IBA Annex
	// A10; ib-facts.md §2): a switch whose output VL is congested sets FECN
	// on a packet it forwards there, and the destination returns BECN to
	// the source. The ICRC leaves them out (switches change them on the
	// way), as ComputeICRC does.
	FECN bool
	BECN bool

	Measure bool // injected inside the measurement window
	// icrcDeferred: the source stamped the packet with DeferICRC and no one
	// has read the ICRC yet.
	icrcDeferred bool

	Hops int32 // links traversed so far
	Dst  int32 // index of the destination endpoint

	// PayloadLen is the payload in bytes before padding to 4 bytes.
	PayloadLen int

	// Model bookkeeping, never on the wire.
	Seq      uint64 // per-simulation packet number, for traces and checkers
	InjectAt PS     // when the source created the packet

	// StageNext and StageAt belong to the switch output that granted the
	// packet, until its head goes on that output's wire: the output keeps
	// its granted packets, in wire order, as a list through StageNext, and
	// StageAt is the earliest time the packet's head may go on the wire.
	// A grant and a send read the packet's first line anyway, so the stage
	// costs no line of its own (switchasic). Both are zero elsewhere.
	StageNext *Packet
	StageAt   PS

	Src    int32  // index of the source endpoint
	DestQP uint32 // 24 bit
	PSN    uint32 // 24 bit

	Imm  uint32 // ImmDt
	IETH uint32 // R_Key to invalidate

	// ICRC is the end-to-end CRC as computed by the source; read it with
	// SourceICRC, which computes it if the source deferred it (DeferICRC).
	ICRC uint32
	VCRC uint16 // per-hop CRC

	// Flow-control packet fields (Kind == FlowControl).
	FCTBS uint16 // 12 bit: blocks sent on VL, mod 4096
	FCCL  uint16 // 12 bit: credit limit advertised by the receiver

	// Extension headers; only those Opcode.Headers() names are on the wire.
	RETH      RETH
	AETH      AETH
	AtomicAck uint64 // AtomicAckETH: the original remote value
	Atomic    AtomicETH
	DETH      DETH

	// Payload holds the bytes when the model moves real data (HCA traffic);
	// synthetic traffic leaves it nil and carries only PayloadLen.
	Payload []byte
}

// DeferICRC stamps p with its source's ICRC as ComputeICRC would, computed
// only when SourceICRC first reads it: the CRC over the payload is most of
// a sending HCA's own work, and only an observer (a trace, the checkers)
// reads it. The fields it covers (ComputeICRC) must not change until then,
// and a copy that shares p's payload must read it first.
func (p *Packet) DeferICRC() { p.ICRC, p.icrcDeferred = 0, true }

// SourceICRC returns the ICRC the source stamped on p, computing a
// deferred one now.
func (p *Packet) SourceICRC() uint32 {
	if p.icrcDeferred {
		p.ICRC, p.icrcDeferred = ComputeICRC(p), false
	}
	return p.ICRC
}

// PadCnt returns the BTH pad count: payload padded to a multiple of 4 bytes.
func (p *Packet) PadCnt() int { return (4 - p.PayloadLen%4) % 4 }

// HeaderBytes returns the on-wire bytes that are not payload or pad:
// LRH [+ GRH] + BTH + extension headers + ICRC + VCRC.
func (p *Packet) HeaderBytes() int {
	if p.Kind == FlowControl {
		return FlowControlBytes
	}
	n := LRHBytes + BTHBytes + p.Opcode.ExtHeaderBytes() + ICRCBytes + VCRCBytes
	if p.GRH {
		n += GRHBytes
	}
	return n
}

// WireBytes returns the packet's size on the wire in bytes (ib-facts.md §2).
func (p *Packet) WireBytes() int {
	if p.Kind == FlowControl {
		return FlowControlBytes
	}
	return p.HeaderBytes() + p.PayloadLen + p.PadCnt()
}

// Credits returns the 64-byte blocks the packet occupies in a receive buffer.
func (p *Packet) Credits() int { return Credits(p.WireBytes()) }

// PktLen returns the LRH PktLen field: LRH through ICRC in 4-byte words (VCRC
// excluded), 11 bits.
func (p *Packet) PktLen() int { return (p.WireBytes() - VCRCBytes) / 4 }

// Reset clears p for reuse, keeping the payload buffer's capacity.
func (p *Packet) Reset() {
	buf := p.Payload[:0]
	*p = Packet{}
	p.Payload = buf
}
