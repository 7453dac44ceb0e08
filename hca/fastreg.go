package hca

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/hcasim/hcasim/ib"
)

// Fast memory registration (IBA vol 1's Fast Registration work request
// on a Memory Region, the kernel verbs' ib_alloc_mr(IB_MR_TYPE_MEM_REG)
// and IB_WR_REG_MR, as
// the NVMe-oF, iSER and SRP initiators and targets and NFS/RDMA's FRWR
// use them): a region allocated with room for maxPages page
// translations and no mapping, its key FREE; a REG_MR work request on
// the send queue maps it (the new key's low 8 bits the consumer's
// variant, ib_update_fast_reg_key), a LOCAL_INV or a received
// SEND_WITH_INV frees it again. The rules are rdma-core rxe's
// (drivers/infiniband/sw/rxe/rxe_mr.c rxe_reg_fast_mr and
// rxe_invalidate_mr), as for memory windows (mw.go); docs/hca.md lists
// them and what mlx5 does.

// WRRegMR is the fast-register work request (the kernel's IB_WR_REG_MR,
// 0x20; user verbs have none). Its WQE is mlx5's UMR (opcode 0x25), as
// a BIND_MW's is.
const WRRegMR WROpcode = 0x20

// WCRegMR is its completion opcode (the kernel's IB_WC_REG_MR).
const WCRegMR WCOpcode = 10

// RegReq is a fast registration (struct ib_reg_wr): the region, its new
// key, mapping and rights.
type RegReq struct {
	// Key is the region's key after the registration: its index (upper
	// 24 bits) names the region, its low 8 bits are the new variant
	// (ib_reg_wr.key, after ib_update_fast_reg_key).
	Key uint32
	// Addr and Length are the mapping (ib_mr.iova and length, as
	// ib_map_mr_sg sets them): contiguous host memory in the model,
	// translated at PageBytes per page.
	Addr   uint64
	Length uint64
	// PageBytes is the page size of the page list (ib_mr.page_size); it
	// must be hca.mtt_page_bytes (a region's own page size is not
	// modelled).
	PageBytes uint32
	Access    int // ib_reg_wr.access: Access* flags of a region
}

// regAccess are the rights a fast registration may grant: a region's.
const regAccess = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic | AccessMWBind

// pages returns how many pages of 1 << shift bytes [Addr, Addr+Length)
// touches (0 for an empty mapping).
func (r *RegReq) pages(shift uint) uint64 {
	if r.Length == 0 {
		return 0
	}
	return (r.Addr+r.Length-1)>>shift - r.Addr>>shift + 1
}

func log2(n uint32) uint {
	s := uint(0)
	for n > 1 {
		n >>= 1
		s++
	}
	return s
}

// maxFastRegPages caps AllocMR's max_num_sg: the MTT address space the
// model gives a region (MTTBase: 2^29 pages).
const maxFastRegPages = 1 << 29

// AllocFastReg adds a fast-registration region of pd with room for
// maxPages translations, FREE: its key names no access until a REG_MR
// (rxe_alloc_mr: RXE_MR_STATE_FREE; mlx5 creates the mkey with free 1).
func (t *KeyTable) AllocFastReg(pd uint32, maxPages uint32) MR {
	mr := t.Register(pd, 0, 0, 0)
	e := &t.entries[mr.LKey>>8]
	e.valid, e.frPages = false, maxPages
	mr.valid, mr.frPages = false, maxPages
	return mr
}

// FastReg maps the fast-registration region req.Key's index names, for
// a QP of protection domain pd, its pages at 1 << shift bytes, and
// reports whether its rules allowed it (rxe_reg_fast_mr, in order; a
// refusal changes nothing): the index must name a fast-registration
// region, FREE ("user can only register MR in free state"), of the QP's
// PD, and the mapping must fit in its page list (ib_map_mr_sg maps at
// most max_num_sg pages) without wrapping past 2^64. The key takes the
// new variant; the rights and range are the request's.
func (t *KeyTable) FastReg(req RegReq, pd uint32, shift uint) bool {
	idx := req.Key >> 8
	if int(idx) >= len(t.entries) {
		return false
	}
	e := &t.entries[idx]
	if e.frPages == 0 || e.Window != 0 || e.valid || e.PD != pd {
		return false
	}
	if req.Addr+req.Length < req.Addr || req.pages(shift) > uint64(e.frPages) {
		return false
	}
	e.LKey, e.RKey = req.Key, req.Key
	e.Addr, e.Length, e.Access, e.valid = req.Addr, req.Length, req.Access, true
	return true
}

// invalidateRegion frees the fast-registration region whose current key
// is key (LOCAL_INV, SEND_WITH_INV: rxe_invalidate_mr) and returns its
// mapping, or ok false, changing nothing, for a key that names none: a
// region not of fast registration, a FREE one, a stale variant, or one
// with memory windows bound (rxe: "attempt to invalidate an MR while
// bound to MWs").
func (t *KeyTable) invalidateRegion(key uint32) (addr, length uint64, ok bool) {
	e := t.lookup(key)
	if e == nil || e.Window != 0 || e.frPages == 0 || e.windows > 0 {
		return 0, 0, false
	}
	e.valid = false
	return e.Addr, e.Length, true
}

// AllocMR allocates a fast-registration region of pd with room for
// maxPages page translations (ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG,
// max_num_sg)), its key FREE until a REG_MR work request maps it. A
// maxPages of 0 or above 2^29 is refused with EINVAL, a freed PD too.
func (d *Device) AllocMR(pd uint32, maxPages int) (MR, error) {
	if maxPages < 1 || maxPages > maxFastRegPages {
		return MR{}, fmt.Errorf("hca: %s alloc_mr: max_num_sg %d is not in 1..%d: %w", d.Name, maxPages, maxFastRegPages, syscall.EINVAL)
	}
	if err := d.checkLive(pd); err != nil {
		return MR{}, err
	}
	return d.Keys.AllocFastReg(pd, uint32(maxPages)), nil
}

// checkRegWR refuses a REG_MR that the kernel verbs or the driver would
// before posting: rights a region cannot have (EINVAL), or a page size
// other than the model's MTT page (EINVAL: per-region page sizes are not
// modelled).
func (d *Device) checkRegWR(qp *QP, r *RegReq) error {
	if r == nil {
		return fmt.Errorf("qp 0x%x: REG_MR without a registration (SendWR.Reg nil): %w", qp.Num, syscall.EINVAL)
	}
	if r.Access&^regAccess != 0 {
		return fmt.Errorf("qp 0x%x: REG_MR with access %#x (a region takes local write 1, remote write 2, read 4, atomic 8, mw bind 16): %w",
			qp.Num, r.Access, syscall.EINVAL)
	}
	if int(r.PageBytes) != d.Cfg.MTTPageBytes {
		return fmt.Errorf("qp 0x%x: REG_MR page size %d: the model translates at hca.mtt_page_bytes %d only: %w",
			qp.Num, r.PageBytes, d.Cfg.MTTPageBytes, syscall.EINVAL)
	}
	return nil
}

// REG_MR WQE layout. mlx5's set_reg_wr (drivers/infiniband/hw/mlx5/wr.c)
// writes ctrl 16 bytes (the mkey in imm), mlx5_wqe_umr_ctrl_seg 48,
// mlx5_mkey_seg 64, then the page list: inline, padded to 64 bytes, when
// it is at most MLX5_IB_SQ_UMR_INLINE_THRESHOLD (64) bytes, 8 pages of
// 8-byte MTT entries; otherwise one 16-byte data segment that points at
// it (the driver's DMA-mapped descriptor list), which the HCA reads.
const (
	regUMRInlineBytes = 64                            // MLX5_IB_SQ_UMR_INLINE_THRESHOLD
	regHdrBytes       = dsBytes + 48 + 64             // ctrl, UMR ctrl, mkey context
	regMkeyOff        = dsBytes + 48                  // the mkey segment
	regListOff        = regHdrBytes                   // inline entries or the data segment
	umrInline         = 1 << 7                        // MLX5_UMR_INLINE, umr ctrl flags
	accessModeMTT     = 1                             // MLX5_MKC_ACCESS_MODE_MTT
	regPageListBase   = uint64(1)<<60 + uint64(1)<<57 // driver memory of the page lists
	regPageListStride = 32                            // log2 bytes per region's list
)

// regWRBytes is regWQEBytes for the registration r (nil: none, the
// shortest WQE; PostSend refuses it).
func regWRBytes(r *RegReq) int {
	if r == nil {
		return regWQEBytes(0)
	}
	return regWQEBytes(r.pages(r.pageShift()))
}

// regInline reports whether a page list of n pages goes inline (an
// empty one does not: its WQE is the shortest, 144 bytes, which the
// decoder takes as the least a REG_MR has).
func regInline(n uint64) bool { return n > 0 && n*MTTEntryBytes <= regUMRInlineBytes }

// regWQEBytes is the REG_MR WQE size for a page list of n pages: 192
// bytes inline (3 WQEBBs), 144 with a pointer (3 WQEBBs): either way 3.
func regWQEBytes(n uint64) int {
	if regInline(n) {
		return regHdrBytes + regUMRInlineBytes
	}
	return regHdrBytes + dsBytes
}

// regPageListAddr is the bus address of the page list of the region
// at index idx (mlx5_alloc_priv_descs: one per MR, MLX5_UMR_ALIGN
// aligned; the model spaces them 4 GiB apart outside HostMemory).
func regPageListAddr(idx uint32) uint64 {
	return regPageListBase + uint64(idx)<<regPageListStride
}

// pageShift is the page shift a REG_MR WQE encodes (log2 PageBytes).
func (r *RegReq) pageShift() uint { return log2(r.PageBytes) }

// encodeReg writes a REG_MR into its UMR WQE: the key in the ctrl's imm;
// in the UMR ctrl the inline flag and xlt_octowords; in the mkey segment
// the rights (byte 2, the verbs flags as a bind's), the access mode MTT
// (byte 3: the model's place for it, mlx5 puts it in flags' low bits,
// which a bind's rights take here), the variant, start_addr, len,
// xlt_oct_size and log2_page_size; then the MTT entries inline (each the
// page's address: host memory is flat) or the data segment pointing at
// the list.
func encodeReg(buf []byte, r *RegReq) {
	be := binary.BigEndian
	shift := r.pageShift()
	n := r.pages(shift)
	be.PutUint32(buf[12:], r.Key)
	octo := uint16((n*MTTEntryBytes + 15) / 16)
	if regInline(n) {
		buf[dsBytes] = umrInline
	}
	be.PutUint16(buf[dsBytes+2:], octo)
	m := buf[regMkeyOff:]
	m[2] = uint8(r.Access)
	m[3] = accessModeMTT
	be.PutUint32(m[4:], 0xffffff00|r.Key&0xff)
	be.PutUint64(m[16:], r.Addr)
	be.PutUint64(m[24:], r.Length)
	be.PutUint32(m[52:], uint32(octo))
	m[59] = uint8(shift)
	if regInline(n) {
		first := r.Addr >> shift
		for i := uint64(0); i < n; i++ {
			be.PutUint64(buf[regListOff+int(i)*MTTEntryBytes:], (first+i)<<shift)
		}
		return
	}
	be.PutUint32(buf[regListOff:], uint32(n*MTTEntryBytes))
	be.PutUint64(buf[regListOff+8:], regPageListAddr(r.Key>>8))
}

// isRegWQE reports whether a UMR WQE is a REG_MR (access mode MTT) rather
// than a bind (KLM).
func isRegWQE(buf []byte) bool { return buf[regMkeyOff+3] == accessModeMTT }

// decodeReg reads the registration of a REG_MR WQE (encodeReg) into w's
// remote-address fields, which a local WQE has no other use for (reg):
// SendWQE keeps no field of its own for it, since every message's WQE is
// copied through the pipeline at SendWQE's size.
func decodeReg(w *SendWQE, buf []byte) {
	be := binary.BigEndian
	m := buf[regMkeyOff:]
	w.RKey, w.RemoteAddr, w.SwapAdd = be.Uint32(buf[12:]), be.Uint64(m[16:]), be.Uint64(m[24:])
	w.Compare = uint64(m[59])<<8 | uint64(m[2])
}

// reg returns the registration of a decoded REG_MR WQE (decodeReg).
func (w *SendWQE) reg() RegReq {
	return RegReq{Key: w.RKey, Addr: w.RemoteAddr, Length: w.SwapAdd, PageBytes: 1 << (w.Compare >> 8),
		Access: int(w.Compare & 0xff)}
}

// regLookups runs a REG_MR's fetches from t and returns when they are
// done: the region's MKey context (a key-cache lookup, keyCheck) and,
// for a page list too long to go inline, the list's read from host
// memory (n × 8 bytes, issued at t beside the lookup, as a gather
// list's keys and the WQE's other reads are). The rules are checked when
// the WQE runs (runReg).
func (d *Device) regLookups(qp *QP, t ib.PS, r *RegReq) ib.PS {
	ready := d.keyCheck(qp, t, r.Key)
	if n := r.pages(d.pageShift); !regInline(n) {
		ready = max(ready, d.PCIe.Read(t, regPageListAddr(r.Key>>8), int(n)*MTTEntryBytes))
	}
	return ready
}

// writeMTT writes a REG_MR's MTT entries to ICM at now (8 bytes a page,
// one posted write after the MKey context's, which runLocal writes): the
// UMR's translation update (the rules passed: KeyTable.FastReg).
func (d *Device) writeMTT(r *RegReq, now ib.PS) {
	if n := r.pages(d.pageShift); n > 0 {
		if _, ok := d.PCIe.Post(now, int(n)*MTTEntryBytes, WriteNote{Kind: writeMKey}); !ok {
			d.flushAt(now)
		}
	}
}

// invalidate runs a LOCAL_INV's or SEND_WITH_INV's key: a type 2
// window's (KeyTable.Invalidate) or a fast-registration region's, whose
// pages' translations then leave the MTT cache (a later registration of
// the region maps other pages to them). It reports whether either rule
// allowed it.
func (d *Device) invalidate(key uint32) bool {
	if d.Keys.Invalidate(key) {
		return true
	}
	addr, n, ok := d.Keys.invalidateRegion(key)
	if ok && d.mtt != nil && n > 0 {
		for p := addr >> d.pageShift; p <= (addr+n-1)>>d.pageShift; p++ {
			d.mtt.drop(p)
		}
	}
	return ok
}

// noteReg records whether the WQE at send-queue slot is a REG_MR (QP.sqReg).
func noteReg(qp *QP, slot uint32, reg bool) {
	if qp.sqReg == nil {
		qp.sqReg = make([]bool, qp.sqBBs)
	}
	qp.sqReg[slot] = reg
}

// recheckKeys checks again, as a WQE with the small fence (fence mode 1,
// or 4: what libmlx5 and mlx5_ib put on the WQE after a UMR or local
// invalidate) reaches the requester, the local keys its decode checked:
// the small fence holds it until the local WQEs before it have run, so
// a key a REG_MR just made valid passes, and one a LOCAL_INV just
// invalidated fails (LOC_PROT_ERR). The model looked the keys up at
// decode, beside the local WQE's own lookups; the wait the fence adds is
// the local WQE's execution, which the queue's order already gives, and
// a key that passes only now has its gather pages translated at the
// first DMA rather than ahead (not charged here).
func (d *Device) recheckKeys(qp *QP, dw *decodedWQE) {
	w := &dw.wqe
	if w.Opcode.isLocal() || w.Inline {
		return
	}
	need := 0
	if w.Opcode == WRRDMARead || w.Opcode.isAtomic() {
		need = AccessLocalWrite
	}
	bad := false
	check := func(key uint32, addr uint64, n uint64) {
		if n == 0 {
			return
		}
		r := d.Keys.Check(key, qp.PD, need, addr, n)
		if r != KeyOK {
			bad = true
		}
		if (r != KeyOK) != dw.keyErr {
			d.traceKeyCheck(qp.Num, key, r, addr, n)
		}
	}
	if w.SGL != nil {
		for _, e := range w.SGL {
			check(e.LKey, e.Addr, uint64(e.Length))
		}
	} else {
		check(w.LKey, w.LocalAddr, uint64(w.Length))
	}
	dw.keyErr = bad
}
