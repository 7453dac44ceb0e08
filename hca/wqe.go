package hca

import (
	"encoding/binary"
	"fmt"
)

// WQE and doorbell formats after the mlx5 layout (ib-facts.md §7, rdma-core
// providers/mlx5/mlx5dv.h). Multi-byte fields are big-endian, as the HCA
// reads them.
const (
	// WQEBBBytes is a send WQE basic block (MLX5_SEND_WQE_BB).
	WQEBBBytes = 64
	// dsBytes is one data-segment unit (MLX5_SEND_WQE_DS).
	dsBytes = 16
	// maxWQEBBs is the largest send WQE in basic blocks (1 KiB).
	maxWQEBBs = 16
	// MaxWQEBytes is the largest send WQE: the ctrl segment counts its
	// 16-byte segments in six bits (MLX5_WQE_CTRL_DS_MASK 0x3f), so 63 of
	// them, 1008 bytes, in 16 WQEBBs.
	MaxWQEBytes = 63 * dsBytes
	// RecvWQEBytes is one receive WQE of one scatter element: a single
	// 16-byte data segment. A QP created for more (QPCap.MaxRecvSGE) has
	// a receive stride of a power of two of them (QP.RecvStride).
	RecvWQEBytes = 16
	// MaxSendSGE is the most gather elements a send WR may carry (the
	// device's max_send_sge). Linux mlx5 (drivers/infiniband/hw/mlx5,
	// get_send_sge and mlx5_ib_query_device) caps a send descriptor at
	// 512 bytes for this count: (512 − ctrl 16 − raddr 16) / 16 = 30, the
	// "max_sge: 30" ibv_devinfo shows on ConnectX. Every send WQE of 30
	// SGEs fits the 63 segments a ctrl DS count allows (a UD one is 34).
	MaxSendSGE = 30
	// MaxRecvSGE is the most scatter elements a receive WR may carry (the
	// device's max_recv_sge): mlx5_ib_query_device gives max_wqe_sz_rq /
	// 16, a firmware capability our sources do not give for ConnectX; the
	// model assumes the send side's 512-byte descriptor, 32 segments.
	MaxRecvSGE = 32
	// invalidLKey ends a receive WQE's scatter list shorter than its
	// stride (MLX5_INVALID_LKEY, as mlx5's post_recv writes it). The key
	// table never issues it: a key's variant byte is odd.
	invalidLKey = 0x100
	// MaxInlineLimit is the most inline bytes any WQE holds, an RC SEND's:
	// 1008 − ctrl 16 − inline header 4. A WRITE holds 16 fewer (raddr), a
	// UD SEND 48 fewer (datagram segment); InlineLimit gives each.
	MaxInlineLimit = MaxWQEBytes - dsBytes - 4
	// inlineFlag marks an inline data segment's byte count (MLX5_INLINE_SEG).
	inlineFlag = 0x80000000
	// ctrlCQUpdate asks for a CQE (MLX5_WQE_CTRL_CQ_UPDATE).
	ctrlCQUpdate = 0x08
	// ctrlSolicited asks for the solicited-event bit (MLX5_WQE_CTRL_SOLICITED,
	// IBV_SEND_SOLICITED; ib-facts.md §7).
	ctrlSolicited = 0x02
	// Fence modes, the ctrl segment's fm_ce_se bits 7:5 (mlx5dv.h
	// MLX5_FENCE_MODE_*, ib-facts.md §7). libmlx5 writes ctrlFence
	// (MLX5_WQE_CTRL_FENCE, 4 << 5: fence and initiator small fence) for
	// IBV_SEND_FENCE, and ctrlSmallFence (MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE,
	// 1 << 5) on the WQE after a BIND_MW or LOCAL_INV (_mlx5_post_send's
	// next_fence, kept across posts in qp->fm_cache).
	ctrlFenceMask  = 0xe0
	ctrlSmallFence = 1 << 5
	ctrlFence      = 4 << 5
)

// WROpcode is the verbs work-request opcode (ibv_wr_opcode, ib-facts.md §7).
type WROpcode uint8

// Work-request opcodes.
const (
	WRRDMAWrite    WROpcode = 0
	WRRDMAWriteImm WROpcode = 1
	WRSend         WROpcode = 2
	WRSendImm      WROpcode = 3
	WRRDMARead     WROpcode = 4
	WRCompSwap     WROpcode = 5
	WRFetchAdd     WROpcode = 6
	WRLocalInv     WROpcode = 7
	WRBindMW       WROpcode = 8
	WRSendInv      WROpcode = 9
)

var wrNames = map[WROpcode]string{
	WRRDMAWrite: "RDMA_WRITE", WRRDMAWriteImm: "RDMA_WRITE_WITH_IMM", WRSend: "SEND",
	WRSendImm: "SEND_WITH_IMM", WRRDMARead: "RDMA_READ", WRCompSwap: "ATOMIC_CMP_AND_SWP",
	WRFetchAdd: "ATOMIC_FETCH_AND_ADD", WRLocalInv: "LOCAL_INV", WRBindMW: "BIND_MW",
	WRSendInv: "SEND_WITH_INV", WRRegMR: "REG_MR",
}

// String returns the verbs name.
func (o WROpcode) String() string {
	if n, ok := wrNames[o]; ok {
		return n
	}
	return fmt.Sprintf("WR(%d)", uint8(o))
}

// mlx5 WQE opcodes (mlx5dv.h).
const (
	mlx5OpRDMAWrite    = 0x08
	mlx5OpRDMAWriteImm = 0x09
	mlx5OpSend         = 0x0a
	mlx5OpSendImm      = 0x0b
	mlx5OpRDMARead     = 0x10
	mlx5OpAtomicCS     = 0x11
	mlx5OpAtomicFA     = 0x12
	mlx5OpSendInval    = 0x01
	mlx5OpLocalInval   = 0x1b
	// mlx5OpUMR: libmlx5 posts a bind as a user-mode memory registration
	// WQE that rewrites the window's MKey context.
	mlx5OpUMR = 0x25
)

var wrToMlx5 = [...]uint8{
	WRRDMAWrite: mlx5OpRDMAWrite, WRRDMAWriteImm: mlx5OpRDMAWriteImm, WRSend: mlx5OpSend,
	WRSendImm: mlx5OpSendImm, WRRDMARead: mlx5OpRDMARead, WRCompSwap: mlx5OpAtomicCS,
	WRFetchAdd: mlx5OpAtomicFA, WRLocalInv: mlx5OpLocalInval, WRBindMW: mlx5OpUMR,
	WRSendInv: mlx5OpSendInval, WRRegMR: mlx5OpUMR,
}

func mlx5ToWR(op uint8) (WROpcode, bool) {
	// Up to SEND_WITH_INV: past it the table has gaps (0) before REG_MR,
	// a UMR as a bind is, which decodeSendWQE tells apart.
	for wr, m := range wrToMlx5[:WRSendInv+1] {
		if m == op {
			return WROpcode(wr), true
		}
	}
	return 0, false
}

// SGE is one scatter/gather element (ibv_sge): Length bytes at Addr in
// the memory region of LKey.
type SGE struct {
	Addr   uint64
	Length uint32 // bytes
	LKey   uint32
}

// SendWR is a send work request as the application posts it (ibv_send_wr).
// Its local buffer is either one scatter/gather element, LocalAddr, Length
// and LKey (SGL nil), or the list SGL (ibv_send_wr.sg_list, num_sge =
// len(SGL); a non-nil empty list is num_sge 0, a zero-byte message), never
// both: PostSend refuses a WR with SGL set and any of the three non-zero.
type SendWR struct {
	ID       uint64
	Opcode   WROpcode
	Signaled bool // ask for a CQE on success (errors always complete)
	Inline   bool // copy the payload into the WQE
	// Fence is the fence indicator (IBV_SEND_FENCE, RC only): the HCA
	// starts the WR only once every RDMA READ and atomic posted before it
	// on the queue has completed (its responses received). Its WQE carries
	// MLX5_WQE_CTRL_FENCE in the ctrl segment's fence mode.
	Fence bool
	// Solicited sets the solicited-event bit (IBV_SEND_SOLICITED): the
	// last packet of a SEND or RDMA WRITE with immediate carries BTH.SE,
	// and the responder's receive CQE is solicited (an arm that is
	// solicited-only fires on it; cqevent.go).
	Solicited bool
	// Local buffer (for READ and atomics: where the result lands).
	LocalAddr uint64
	Length    uint32 // bytes; atomics are always 8
	LKey      uint32
	// SGL is the local buffer as a gather list (for READ and atomics a
	// scatter list), in order: the message is the concatenation of its
	// elements, at most MaxSendSGE of them.
	SGL []SGE
	// Remote buffer.
	RemoteAddr uint64
	RKey       uint32
	Imm        uint32 // immediate data (…_WITH_IMM)
	// Atomic operands: CompareAdd is the add value (FETCH_ADD) or the compare
	// value (CMP_SWAP); Swap is the swap value.
	CompareAdd uint64
	Swap       uint64
	// UD: the address handle and the remote QP (SEND only). A UD WQE has a
	// 48-byte datagram segment after the ctrl segment (mlx5_wqe_av).
	UD         bool
	DLID       uint16
	RemoteQPN  uint32
	RemoteQKey uint32
	// GRH makes a UD datagram to a unicast LID carry a GRH (the address
	// handle's is_global); one to a multicast LID always does.
	GRH bool
	// Bind is a BIND_MW's bind (ibv_send_wr.bind_mw: the window's key, the
	// new key, the region and range).
	Bind BindReq
	// InvalidateRKey is the R_Key a LOCAL_INV invalidates, or that a
	// SEND_WITH_INV asks the responder to (ibv_send_wr.invalidate_rkey).
	InvalidateRKey uint32
	// Reg is a REG_MR's registration (ib_reg_wr, fastreg.go), nil for
	// other opcodes (a pointer: a WR is built per message on the hot path).
	Reg *RegReq
}

// RecvWR is a receive work request (ibv_recv_wr): one scatter element,
// Addr, Length and LKey (SGL nil), or the list SGL (num_sge = len(SGL), at
// most the QP's QPCap.MaxRecvSGE), never both.
type RecvWR struct {
	ID     uint64
	Addr   uint64
	Length uint32
	LKey   uint32
	SGL    []SGE
}

// sgeCount returns how many data segments wr's WQE carries: one for the
// single-element form, len(SGL) for a list, and one for an empty list
// (EncodeSendWQE writes a zero-byte segment for it, as the RTL's WQE
// parser needs a data segment; a WQE without one fails to decode).
func (wr *SendWR) sgeCount() int {
	if wr.SGL == nil {
		return 1
	}
	return max(1, len(wr.SGL))
}

// sglLength returns the bytes of a list: the sum of its elements.
func sglLength(sgl []SGE) uint64 {
	var n uint64
	for _, e := range sgl {
		n += uint64(e.Length)
	}
	return n
}

// isAtomic reports whether op is an atomic.
func (o WROpcode) isAtomic() bool { return o == WRCompSwap || o == WRFetchAdd }

// hasRemote reports whether op carries a remote address segment.
func (o WROpcode) hasRemote() bool { return uint32(1)<<o&remoteOps != 0 }

// remoteOps has bit op set for each opcode with a remote address segment
// (a shift by 32 or more gives 0: an opcode past them has none).
const remoteOps = 1<<WRRDMAWrite | 1<<WRRDMAWriteImm | 1<<WRRDMARead | 1<<WRCompSwap | 1<<WRFetchAdd

// isLocal reports whether op is a local operation: one the HCA executes
// on its own tables, sending no packet (BIND_MW, LOCAL_INV, REG_MR).
func (o WROpcode) isLocal() bool { return o-WRLocalInv <= WRBindMW-WRLocalInv || o == WRRegMR }

// Local WQE sizes. A LOCAL_INV is its ctrl segment alone, the key in the
// ctrl's imm field (as mlx5's ctrl segment carries it). A BIND_MW is the
// UMR WQE libmlx5 builds for it: ctrl 16, mlx5_wqe_umr_ctrl_seg 48,
// mlx5_wqe_mkey_context_seg 64 (mlx5dv.h) and one 16-byte KLM entry that
// points the window at its region: 144 bytes, 3 WQEBBs (libmlx5 pads the
// KLM list to 64 bytes, which makes 192: 3 WQEBBs either way).
const (
	localInvWQEBytes = dsBytes
	bindWQEBytes     = dsBytes + 48 + 64 + dsBytes
	// offsets in a bind WQE (the model's fields in mlx5's segments)
	bindMkeyOff = dsBytes + 48     // the mkey context segment
	bindKLMOff  = bindMkeyOff + 64 // the KLM entry
)

// WQEBBs returns how many 64-byte blocks the WQE of wr occupies.
func WQEBBs(wr *SendWR) int {
	return (wqeBytes(wr) + WQEBBBytes - 1) / WQEBBBytes
}

// InlineLimit returns the most inline bytes a WQE of opcode op (on a UD QP
// if ud) holds: MaxWQEBytes less its segments before the data and the
// 4-byte inline header.
func InlineLimit(op WROpcode, ud bool) int {
	hdr := wqeBytes(&SendWR{Opcode: op, UD: ud}) - dsBytes // less the data segment
	return MaxWQEBytes - hdr - 4
}

// datagramBytes is the UD address vector segment (struct mlx5_wqe_av).
const datagramBytes = 48

// avGRH is the mlx5_wqe_av grh_gid_fl bit that says a GRH is present.
const avGRH = 1 << 30

func wqeBytes(wr *SendWR) int {
	switch wr.Opcode {
	case WRBindMW:
		return bindWQEBytes
	case WRLocalInv:
		return localInvWQEBytes
	case WRRegMR:
		return regWRBytes(wr.Reg)
	}
	n := dsBytes // ctrl
	if wr.UD {
		n += datagramBytes
	}
	if wr.Opcode.hasRemote() {
		n += dsBytes
	}
	if wr.Opcode.isAtomic() {
		n += dsBytes
	}
	if wr.Inline {
		n += (4 + int(wr.Length) + dsBytes - 1) / dsBytes * dsBytes
	} else {
		n += dsBytes * wr.sgeCount()
	}
	return n
}

// EncodeSendWQE writes wr as an mlx5-style WQE into buf (a whole number of
// WQEBBs, zeroed first). inline is the payload when wr.Inline. It returns the
// WQE size in bytes (rounded to WQEBBs).
func EncodeSendWQE(buf []byte, wr *SendWR, wqeIndex uint16, qpn uint32, inline []byte) int {
	size := WQEBBs(wr) * WQEBBBytes
	clear(buf[:size])
	ds := wqeBytes(wr) / dsBytes
	be := binary.BigEndian
	be.PutUint32(buf[0:], uint32(wqeIndex)<<8|uint32(wrToMlx5[wr.Opcode]))
	be.PutUint32(buf[4:], qpn<<8|uint32(ds))
	if wr.Signaled {
		buf[11] = ctrlCQUpdate
	}
	if wr.Fence {
		buf[11] |= ctrlFence
	}
	if wr.Solicited {
		buf[11] |= ctrlSolicited
	}
	be.PutUint32(buf[12:], wr.Imm)
	switch wr.Opcode {
	case WRSendInv:
		be.PutUint32(buf[12:], wr.InvalidateRKey)
	case WRLocalInv:
		be.PutUint32(buf[12:], wr.InvalidateRKey)
		return size
	case WRBindMW:
		encodeBind(buf, &wr.Bind)
		return size
	case WRRegMR:
		encodeReg(buf, wr.Reg)
		return size
	}
	off := dsBytes
	if wr.UD {
		// mlx5_wqe_av: qkey at 0, dqp_dct at 8, rlid at 14, grh_gid_fl
		// at 28 (bit 30: the GRH is present, as mlx5_create_ah sets it
		// for an is_global address handle).
		be.PutUint32(buf[off:], wr.RemoteQKey)
		be.PutUint32(buf[off+8:], wr.RemoteQPN&0xFFFFFF)
		be.PutUint16(buf[off+14:], wr.DLID)
		if wr.GRH {
			be.PutUint32(buf[off+28:], avGRH)
		}
		off += datagramBytes
	}
	if wr.Opcode.hasRemote() {
		be.PutUint64(buf[off:], wr.RemoteAddr)
		be.PutUint32(buf[off+8:], wr.RKey)
		off += dsBytes
	}
	if wr.Opcode.isAtomic() {
		// mlx5_wqe_atomic_seg: swap_add then compare. For FETCH_ADD swap_add
		// holds the add value; for CMP_SWAP swap_add is the swap value.
		if wr.Opcode == WRFetchAdd {
			be.PutUint64(buf[off:], wr.CompareAdd)
		} else {
			be.PutUint64(buf[off:], wr.Swap)
			be.PutUint64(buf[off+8:], wr.CompareAdd)
		}
		off += dsBytes
	}
	switch {
	case wr.Inline:
		be.PutUint32(buf[off:], uint32(len(inline))|inlineFlag)
		copy(buf[off+4:], inline)
	case len(wr.SGL) > 0:
		// One mlx5_wqe_data_seg per element, in order.
		for _, e := range wr.SGL {
			be.PutUint32(buf[off:], e.Length)
			be.PutUint32(buf[off+4:], e.LKey)
			be.PutUint64(buf[off+8:], e.Addr)
			off += dsBytes
		}
	case wr.SGL != nil:
		// num_sge 0: one segment of zero bytes and no key.
		be.PutUint32(buf[off+4:], invalidLKey)
	default:
		be.PutUint32(buf[off:], wr.Length)
		be.PutUint32(buf[off+4:], wr.LKey)
		be.PutUint64(buf[off+8:], wr.LocalAddr)
	}
	return size
}

// encodeBind writes a bind into a BIND_MW WQE: the window's key in the
// ctrl's imm (the mkey the UMR rewrites); in the mkey context segment the
// rights (access_flags, byte 2), the new tag (qpn_mkey[7:0]), start_addr
// (0 for a zero-based window, as libmlx5's set_umr_mkey_seg writes it)
// and len; in the KLM entry the region's key and the first byte's region
// address, which decodeBind takes the window's Addr from. The
// segments and the fields' places are mlx5's; the access bits are the
// verbs flags, not mlx5's encoding of them.
func encodeBind(buf []byte, b *BindReq) {
	be := binary.BigEndian
	be.PutUint32(buf[12:], b.MWKey)
	buf[bindMkeyOff+2] = uint8(b.Access)
	be.PutUint32(buf[bindMkeyOff+4:], 0xffffff00|b.NewKey&0xff)
	if b.Access&AccessZeroBased == 0 {
		be.PutUint64(buf[bindMkeyOff+16:], b.Addr) // a zero-based window starts at 0
	}
	be.PutUint64(buf[bindMkeyOff+24:], b.Length)
	be.PutUint32(buf[bindKLMOff:], uint32(min(b.Length, 1<<32-1)))
	be.PutUint32(buf[bindKLMOff+4:], b.MRKey)
	be.PutUint64(buf[bindKLMOff+8:], b.Addr)
}

// decodeBind reads the bind of a BIND_MW WQE (encodeBind).
func decodeBind(buf []byte) *BindReq {
	be := binary.BigEndian
	mw := be.Uint32(buf[12:])
	return &BindReq{MWKey: mw, NewKey: mw&^0xff | be.Uint32(buf[bindMkeyOff+4:])&0xff,
		MRKey: be.Uint32(buf[bindKLMOff+4:]), Addr: be.Uint64(buf[bindKLMOff+8:]),
		Length: be.Uint64(buf[bindMkeyOff+24:]), Access: int(buf[bindMkeyOff+2])}
}

// SendWQE is a send WQE as the HCA decodes it from host memory.
type SendWQE struct {
	Index    uint16 // wqe_index from the ctrl segment
	QPN      uint32
	Opcode   WROpcode
	Signaled bool
	// Solicited: the ctrl segment's solicited bit (SendWR.Solicited).
	Solicited bool
	// FenceMode is the ctrl segment's fence mode (fm_ce_se bits 7:5,
	// MLX5_FENCE_MODE_*): 0 none, 1 initiator small fence, 2 fence, 3
	// strong ordering, 4 fence and small fence (what IBV_SEND_FENCE
	// writes). Fenced tells which wait for earlier READs and atomics.
	FenceMode uint8
	// Imm is the immediate data (…_WITH_IMM), or a LOCAL_INV's or
	// SEND_WITH_INV's R_Key to invalidate: the ctrl segment's imm field
	// carries either.
	Imm uint32
	// Remote address segment.
	RemoteAddr uint64
	RKey       uint32
	// Atomic segment.
	SwapAdd, Compare uint64
	// Data: a gather element or inline bytes. Length is the message's
	// bytes (the sum over SGL when the WQE has several data segments).
	Inline    bool
	InlineLen int
	InlineOff int // offset of the inline data in the WQE
	Length    uint32
	LKey      uint32
	LocalAddr uint64
	// SGL holds the data segments when there are more than one (LKey and
	// LocalAddr are then 0); nil for one, which LKey and LocalAddr give.
	SGL []SGE
	// BBs is the WQE's size in basic blocks.
	BBs int
	// Bind is a BIND_MW's bind, nil for other opcodes. (A REG_MR's
	// registration travels in the remote-address fields: SendWQE.reg.)
	Bind *BindReq
	// UD datagram segment.
	DLID       uint16
	RemoteQPN  uint32
	RemoteQKey uint32
	GRH        bool // the av's grh bit (is_global)
}

// Fenced reports whether the WQE waits for every earlier RDMA READ and
// atomic of its queue to complete before it starts: fence mode 2 (fence)
// or 4 (fence and initiator small fence, what IBV_SEND_FENCE writes).
// Mode 1, the small fence libmlx5 puts on the WQE after a bind or local
// invalidate, waits for earlier local WQEs only; the model executes those
// as they reach the requester, in order, so it waits for nothing. Mode 3
// (strong ordering: every earlier WQE) is not modelled; no verb posts it.
func (w *SendWQE) Fenced() bool { return w.FenceMode == 2 || w.FenceMode == 4 }

// WQEBBsOfCtrl returns how many WQEBBs the send WQE whose ctrl segment
// starts ctrl occupies: its DS count (the low six bits of byte 7) × 16
// bytes, rounded up to 64, and at least one (a WQE with a DS count of 0
// still takes its first block, and fails to decode).
func WQEBBsOfCtrl(ctrl []byte) int {
	ds := int(ctrl[7] & 0x3f)
	return max(1, (ds*dsBytes+WQEBBBytes-1)/WQEBBBytes)
}

// DecodeSendWQE parses the RC WQE at the start of buf (at least its ctrl
// segment's DS count × 16 bytes). A malformed WQE is an error (the HCA
// would complete it with a local QP operation error).
func DecodeSendWQE(buf []byte) (SendWQE, error) { return decodeSendWQE(buf, false, nil) }

// DecodeUDSendWQE parses a UD send WQE (with its datagram segment).
func DecodeUDSendWQE(buf []byte) (SendWQE, error) { return decodeSendWQE(buf, true, nil) }

func decodeSendWQE(buf []byte, ud bool, sgl []SGE) (SendWQE, error) {
	be := binary.BigEndian
	var w SendWQE
	c0 := be.Uint32(buf[0:])
	op, ok := mlx5ToWR(uint8(c0))
	if !ok {
		return w, fmt.Errorf("wqe: opcode 0x%02x is not supported", uint8(c0))
	}
	w.Opcode = op
	w.Index = uint16(c0 >> 8)
	c1 := be.Uint32(buf[4:])
	w.QPN = c1 >> 8
	ds := int(c1 & 0x3f)
	w.BBs = (ds*dsBytes + WQEBBBytes - 1) / WQEBBBytes
	w.Signaled = buf[11]&ctrlCQUpdate != 0
	w.Solicited = buf[11]&ctrlSolicited != 0
	w.FenceMode = buf[11] & ctrlFenceMask >> 5
	w.Imm = be.Uint32(buf[12:])
	if op == WRBindMW && ds*dsBytes >= regHdrBytes && isRegWQE(buf) {
		w.Opcode, op = WRRegMR, WRRegMR
	}
	if op.isLocal() {
		if ds*dsBytes < wqeBytes(&SendWR{Opcode: op}) {
			return w, fmt.Errorf("wqe: %v of %d data segments is short", op, ds)
		}
		if op == WRBindMW {
			w.Bind = decodeBind(buf)
		}
		if op == WRRegMR {
			decodeReg(&w, buf)
		}
		return w, nil
	}
	off := dsBytes
	if ud {
		w.RemoteQKey = be.Uint32(buf[off:])
		w.RemoteQPN = be.Uint32(buf[off+8:]) & 0xFFFFFF
		w.DLID = be.Uint16(buf[off+14:])
		w.GRH = be.Uint32(buf[off+28:])&avGRH != 0
		off += datagramBytes
	}
	if op.hasRemote() {
		w.RemoteAddr = be.Uint64(buf[off:])
		w.RKey = be.Uint32(buf[off+8:])
		off += dsBytes
	}
	if op.isAtomic() {
		w.SwapAdd = be.Uint64(buf[off:])
		w.Compare = be.Uint64(buf[off+8:])
		off += dsBytes
	}
	if off+4 > ds*dsBytes {
		return w, fmt.Errorf("wqe: %d data segments leave no room for data at byte %d", ds, off)
	}
	bc := be.Uint32(buf[off:])
	if bc&inlineFlag != 0 {
		w.Inline = true
		w.InlineLen = int(bc &^ inlineFlag)
		w.InlineOff = off + 4
		w.Length = uint32(w.InlineLen)
	} else if segs := (ds*dsBytes - off) / dsBytes; segs > 1 {
		if cap(sgl) >= segs {
			w.SGL = sgl[:segs]
		} else {
			w.SGL = make([]SGE, segs)
		}
		var n uint32
		for i := range w.SGL {
			at := off + i*dsBytes
			w.SGL[i] = SGE{Length: be.Uint32(buf[at:]), LKey: be.Uint32(buf[at+4:]), Addr: be.Uint64(buf[at+8:])}
			n += w.SGL[i].Length
		}
		w.Length = n
	} else {
		w.Length = bc
		w.LKey = be.Uint32(buf[off+4:])
		w.LocalAddr = be.Uint64(buf[off+8:])
	}
	if op.isAtomic() {
		w.Length = 8
	}
	return w, nil
}

// EncodeRecvWQE writes a receive WQE into buf, whose length is the
// queue's stride (a power of two of 16-byte data segments): one data
// segment per scatter element and, when they are fewer than the stride
// holds, a segment of key MLX5_INVALID_LKEY after them that ends the list
// (mlx5 post_recv). A single-element WR (SGL nil) is a list of one: in a
// stride of one segment it fills it, in a longer one the terminator
// follows, as mlx5 writes it after num_sge < max_gs elements (without it
// the stride's other segments would read as elements).
func EncodeRecvWQE(buf []byte, wr *RecvWR) {
	be := binary.BigEndian
	if wr.SGL == nil {
		be.PutUint32(buf[0:], wr.Length)
		be.PutUint32(buf[4:], wr.LKey)
		be.PutUint64(buf[8:], wr.Addr)
		if len(buf) > dsBytes {
			clear(buf[dsBytes:])
			be.PutUint32(buf[dsBytes+4:], invalidLKey)
		}
		return
	}
	clear(buf)
	off := 0
	for _, e := range wr.SGL {
		be.PutUint32(buf[off:], e.Length)
		be.PutUint32(buf[off+4:], e.LKey)
		be.PutUint64(buf[off+8:], e.Addr)
		off += dsBytes
	}
	if off < len(buf) {
		be.PutUint32(buf[off+4:], invalidLKey)
	}
}

// RecvWQE is a receive WQE as the HCA decodes it. Length is the bytes
// its scatter list holds; SGL is the list when it has other than one
// element (Addr and LKey are then 0), nil for one.
type RecvWQE struct {
	Index  uint32 // position in the receive queue (producer count)
	Length uint32
	LKey   uint32
	Addr   uint64
	SGL    []SGE
}

// DecodeRecvWQE parses a receive WQE of len(buf) bytes (the stride): its
// data segments up to the first of key MLX5_INVALID_LKEY or the stride's
// end.
func DecodeRecvWQE(buf []byte) RecvWQE {
	be := binary.BigEndian
	segs := len(buf) / dsBytes
	if segs == 1 && (be.Uint32(buf[4:]) != invalidLKey || be.Uint32(buf[0:]) != 0) {
		// One element fills a stride of one segment (mlx5 writes the
		// terminator only after fewer elements than max_recv_sge: there,
		// an empty list).
		return RecvWQE{Length: be.Uint32(buf[0:]), LKey: be.Uint32(buf[4:]), Addr: be.Uint64(buf[8:])}
	}
	n := 0
	for n < segs && be.Uint32(buf[n*dsBytes+4:]) != invalidLKey {
		n++
	}
	if n == 1 {
		return RecvWQE{Length: be.Uint32(buf[0:]), LKey: be.Uint32(buf[4:]), Addr: be.Uint64(buf[8:])}
	}
	w := RecvWQE{SGL: make([]SGE, n)}
	for i := range w.SGL {
		at := i * dsBytes
		w.SGL[i] = SGE{Length: be.Uint32(buf[at:]), LKey: be.Uint32(buf[at+4:]), Addr: be.Uint64(buf[at+8:])}
		w.Length += w.SGL[i].Length
	}
	return w
}
