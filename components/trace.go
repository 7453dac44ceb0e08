package components

import (
	"strconv"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/ib"
)

// HookPosTrace is the hook position at which every hcasim block announces a
// TraceEvent. The hook context's Item is a *TraceEvent that is valid only for
// the duration of the call: a hook that keeps it must copy it (Clone).
//
// A block announces an event only when something listens, so tracing costs
// nothing when no hook is attached, and fills its Sim's reusable event with
// fields from its own reused buffer, so tracing allocates nothing:
//
//	if c.NumHooks() > 0 {
//		ev := c.s.TraceEvent(now, c.Name(), components.TraceTxStart)
//		ev.Fields = ev.AppendPacket(c.fieldBuf[:0], pkt)
//		c.InvokeHook(sim.HookCtx{Domain: c, Pos: components.HookPosTrace, Item: ev})
//		c.fieldBuf = ev.Fields[:0]
//	}
var HookPosTrace = &sim.HookPos{Name: "Trace"}

// TraceKind names what happened. The set is fixed: the trace format
// (docs/trace-format.md) lists every kind with its fields, and a reader
// rejects a kind it does not know.
type TraceKind uint8

// The trace kinds. Link-level kinds are about one port and one VL; transport
// kinds are about one QP; inject and deliver bracket a packet's life in the
// fabric and feed the lossless checker.
const (
	TraceInvalid TraceKind = iota

	// Link level (stream: path + vl).
	TraceTxStart      // first bit of a packet leaves a port
	TraceTxEnd        // last bit of a packet leaves a port
	TraceRxHead       // first bit of a packet arrives at a port
	TraceRxTail       // last bit of a packet arrives at a port
	TraceCreditUpdate // a transmitter's credit count for a VL changed
	TraceFCSend       // a receiver sends a flow-control packet (FCTBS/FCCL)
	TraceBufEnq       // a packet enters a per-VL buffer
	TraceBufDeq       // a packet leaves a per-VL buffer
	TraceArbGrant     // an arbiter grants a VL / input (stream: path only)

	// Transport (stream: path + qpn).
	TraceWQEFetch // a WQE is read from a send or receive queue
	TraceKeyCheck // an L_Key / R_Key check, result pass or fail
	TraceDMARead  // payload bytes read from host memory
	TraceDMAWrite // payload bytes written to host memory
	TraceAck      // an ACK is sent or received
	TraceNak      // a NAK is sent or received
	TraceCQE      // a completion queue entry is written

	// Packet life (stream: path + vl).
	TraceInject  // a source hands a new packet to the fabric
	TraceDeliver // a destination accepts a packet from the fabric
	TraceDrop    // a packet is discarded (reason field says why)

	// Pipeline (stream: path + stage).
	TraceStage // a pipeline stage's valid / ready changed (stage, valid, ready)

	numTraceKinds
)

// Reasons of the drops a link port announces: link discards, the only
// losses a lossless fabric allows (link.ber > 0).
const (
	// DropVCRC: a data packet arrived corrupted (its VCRC and ICRC checks
	// failed) and the receiving port discarded it at its tail.
	DropVCRC = "vcrc"
	// DropLPCRC: a flow-control packet arrived corrupted (its LPCRC check
	// failed) and the receiving port ignored it.
	DropLPCRC = "lpcrc"
)

var traceKindNames = [numTraceKinds]string{
	TraceInvalid:      "invalid",
	TraceTxStart:      "tx_start",
	TraceTxEnd:        "tx_end",
	TraceRxHead:       "rx_head",
	TraceRxTail:       "rx_tail",
	TraceCreditUpdate: "credit_update",
	TraceFCSend:       "fc_send",
	TraceBufEnq:       "buf_enq",
	TraceBufDeq:       "buf_deq",
	TraceArbGrant:     "arb_grant",
	TraceWQEFetch:     "wqe_fetch",
	TraceKeyCheck:     "key_check",
	TraceDMARead:      "dma_read",
	TraceDMAWrite:     "dma_write",
	TraceAck:          "ack",
	TraceNak:          "nak",
	TraceCQE:          "cqe",
	TraceInject:       "inject",
	TraceDeliver:      "deliver",
	TraceDrop:         "drop",
	TraceStage:        "stage",
}

// String returns the kind's name as written in a trace ("tx_start").
func (k TraceKind) String() string {
	if k < numTraceKinds {
		return traceKindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Valid reports whether k is one of the defined kinds.
func (k TraceKind) Valid() bool { return k > TraceInvalid && k < numTraceKinds }

// IsTransport reports whether k is about one QP (its stream key uses qpn).
func (k TraceKind) IsTransport() bool { return k >= TraceWQEFetch && k <= TraceCQE }

// ParseTraceKind returns the kind named s, and false if there is none.
func ParseTraceKind(s string) (TraceKind, bool) {
	for k := TraceInvalid + 1; k < numTraceKinds; k++ {
		if traceKindNames[k] == s {
			return k, true
		}
	}
	return TraceInvalid, false
}

// TraceKinds returns every valid kind in declaration order.
func TraceKinds() []TraceKind {
	ks := make([]TraceKind, 0, numTraceKinds-1)
	for k := TraceInvalid + 1; k < numTraceKinds; k++ {
		ks = append(ks, k)
	}
	return ks
}

// TraceField is one key=value of an event: an integer, or a string when IsStr.
// Keys are lower-case identifiers; docs/trace-format.md lists the standard ones.
type TraceField struct {
	Key   string
	Int   int64
	Str   string
	IsStr bool
}

// IntField returns an integer field.
func IntField(key string, v int64) TraceField { return TraceField{Key: key, Int: v} }

// StrField returns a string field.
func StrField(key, v string) TraceField { return TraceField{Key: key, Str: v, IsStr: true} }

// TraceEvent is one thing that happened at one component at one time.
// Identify packets by model fields (seq, slid, qpn, psn), never by Akita IDs,
// which change with what else ran in the process.
type TraceEvent struct {
	Time   ib.PS  // when, in integer picoseconds
	Path   string // component name, Akita form: "Fabric.Leaf[2].Port[5]"; no spaces
	Kind   TraceKind
	Fields []TraceField // any order; the recorder writes them in FieldRank order
	// Pkt is the packet a port's tx_start announces (nil on every other
	// event), for observers that need more than the fields: the pcapng
	// export encodes its headers and payload. Like the event, it is valid
	// only during the hook call (packets are pooled).
	Pkt *ib.Packet
	// Corrupt, on a tx_start, says the wire corrupts the packet (link.ber):
	// its receiver discards it at its tail. Not a trace field: the trace
	// shows the discard where it happens.
	Corrupt bool
}

// Field returns the field named key and whether it is present.
func (e *TraceEvent) Field(key string) (TraceField, bool) {
	for _, f := range e.Fields {
		if f.Key == key {
			return f, true
		}
	}
	return TraceField{}, false
}

// Int returns the integer field named key and whether it is present as an integer.
func (e *TraceEvent) Int(key string) (int64, bool) {
	f, ok := e.Field(key)
	if !ok || f.IsStr {
		return 0, false
	}
	return f.Int, true
}

// Str returns the string field named key and whether it is present as a string.
func (e *TraceEvent) Str(key string) (string, bool) {
	f, ok := e.Field(key)
	if !ok || !f.IsStr {
		return "", false
	}
	return f.Str, true
}

// Clone returns a deep copy of e, for hooks that keep events past the call.
func (e *TraceEvent) Clone() TraceEvent {
	c := *e
	c.Fields = append([]TraceField(nil), e.Fields...)
	return c
}

// AppendPacket appends the standard packet fields of p to dst and returns it:
// seq vl sl slid dlid op qpn psn bytes credits icrc, and fecn and becn (1)
// when the packet carries them. A flow-control packet gets
// vl fctbs fccl instead. Emitters pass a reused buffer so tracing a packet
// does not allocate.
//
// icrc is the CRC the source stamped (p.SourceICRC), except on a deliver event
// (set e.Kind first): there it is the ICRC the destination computes over
// what arrived (ib.ComputeICRC), as a receiving HCA checks it, so a payload
// byte or header field changed on the way shows as a changed icrc. Echoing
// the stamp let a corrupted payload pass the lossless checker.
func (e *TraceEvent) AppendPacket(dst []TraceField, p *ib.Packet) []TraceField {
	if p.Kind == ib.FlowControl {
		return append(dst,
			IntField("vl", int64(p.VL)),
			IntField("fctbs", int64(p.FCTBS)),
			IntField("fccl", int64(p.FCCL)))
	}
	icrc := p.SourceICRC()
	if e.Kind == TraceDeliver {
		icrc = ib.ComputeICRC(p)
	}
	dst = append(dst,
		IntField("seq", int64(p.Seq)),
		IntField("vl", int64(p.VL)),
		IntField("sl", int64(p.SL)),
		IntField("slid", int64(p.SLID)),
		IntField("dlid", int64(p.DLID)),
		StrField("op", p.Opcode.String()),
		IntField("qpn", int64(p.DestQP)),
		IntField("psn", int64(p.PSN)),
		IntField("bytes", int64(p.WireBytes())),
		IntField("credits", int64(p.Credits())),
		IntField("icrc", int64(icrc)))
	// The congestion bits only when set (IBA Annex A10): a run without
	// congestion control never sets them and traces what it traced before.
	if p.FECN {
		dst = append(dst, IntField("fecn", 1))
	}
	if p.BECN {
		dst = append(dst, IntField("becn", 1))
	}
	return dst
}

// fieldOrder is the fixed order in which a trace writes the standard keys.
// Keys not listed follow, sorted by name.
var fieldOrder = []string{
	"seq", "vl", "sl", "slid", "dlid", "op", "qpn", "psn", "psns", "bytes", "credits",
	"fctbs", "fccl", "avail", "free", "occ", "cap", "in", "out",
	"stage", "valid", "ready",
	"queue", "wqe", "key", "addr", "len", "result",
	"syndrome", "msn", "status", "icrc", "crc", "reason",
	"fecn", "becn",
}

var fieldRank = func() map[string]int {
	m := make(map[string]int, len(fieldOrder))
	for i, k := range fieldOrder {
		m[k] = i
	}
	return m
}()

// StandardFieldKeys returns the standard keys in the order a trace writes them.
func StandardFieldKeys() []string { return append([]string(nil), fieldOrder...) }

// FieldRank returns the position of a standard key in the written order, or
// len(StandardFieldKeys()) for any other key (those are written after, by name).
func FieldRank(key string) int {
	if r, ok := fieldRank[key]; ok {
		return r
	}
	return len(fieldOrder)
}

// StreamKey returns the stream an event belongs to; a trace diff compares
// events stream by stream, so events of different streams may interleave
// differently without being a mismatch. The convention:
//
//   - arb_grant: the path alone (an arbiter's grant sequence across VLs is
//     what it decides, so it is one stream);
//   - transport kinds (wqe_fetch … cqe) with a qpn field: "path qpn=N";
//   - stage with a stage field: "path stage=NAME";
//   - any other kind with a vl field: "path vl=N" (one link direction, one VL:
//     the path of a port's transmitter or receiver is the link direction);
//   - otherwise the path alone.
func (e *TraceEvent) StreamKey() string { return string(e.AppendStreamKey(nil)) }

// AppendStreamKey appends e's StreamKey to dst: a diff of large traces looks
// every event's stream up without building a string per event.
func (e *TraceEvent) AppendStreamKey(dst []byte) []byte {
	dst = append(dst, e.Path...)
	if e.Kind == TraceArbGrant {
		return dst
	}
	if e.Kind.IsTransport() {
		if q, ok := e.Int("qpn"); ok {
			dst = append(dst, " qpn="...)
			return strconv.AppendInt(dst, q, 10)
		}
		return dst
	}
	if e.Kind == TraceStage {
		if st, ok := e.Str("stage"); ok {
			dst = append(dst, " stage="...)
			return append(dst, st...)
		}
		return dst
	}
	if vl, ok := e.Int("vl"); ok {
		dst = append(dst, " vl="...)
		return strconv.AppendInt(dst, vl, 10)
	}
	return dst
}
