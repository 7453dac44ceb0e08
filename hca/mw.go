package hca

// Memory windows (IBA 10.6.7, verbs ibv_alloc_mw / ibv_bind_mw /
// IBV_WR_BIND_MW / IBV_WR_LOCAL_INV): an MPT entry of window type that
// grants remote access to a range of a region. The rules are rdma-core
// rxe's (Linux drivers/infiniband/sw/rxe/rxe_mw.c), which cites the IBA
// compliance statements it enforces; docs/hca.md lists them.

// MWType is a memory window's type (enum ibv_mw_type); 0 marks a region.
type MWType uint8

// Memory window types.
const (
	// MWType1 windows are bound with the ibv_bind_mw verb, belong to
	// their PD and are not invalidated by LOCAL_INV (o10-37.2.26).
	MWType1 MWType = 1
	// MWType2 windows are bound by a BIND_MW work request to the QP that
	// posts it, usable only on that QP, and invalidated by LOCAL_INV or a
	// SEND_WITH_INVALIDATE from the remote.
	MWType2 MWType = 2
)

// mwAccess are the access flags a window may grant (libmlx5 refuses a
// bind of others: the remote rights; a window grants no local access).
const mwAccess = AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic

// mwBindAccess are the flags a bind may carry: the rights and, for a type
// 2 window, zero-based addressing (libmlx5's set_umr_mkey_seg writes a
// start address of 0 for it; ibv_bind_mw refuses it for type 1).
const mwBindAccess = mwAccess | AccessZeroBased

// IncRKey returns key with its 8-bit tag advanced (ibv_inc_rkey): the
// key an application gives a window's next bind, so the R_Keys of its
// earlier binds no longer match.
func IncRKey(key uint32) uint32 { return key&^0xff | (key+1)&0xff }

// AllocWindow adds a window of type typ in pd, unbound: its key names
// no access until a bind (rxe_alloc_mw: a type 2 window starts FREE). A
// type 1 window starts valid but of length 0, which grants nothing
// either. The key is index << 8 | a variant, as a region's.
func (t *KeyTable) AllocWindow(pd uint32, typ MWType) uint32 {
	mr := t.Register(pd, 0, 0, 0)
	e := &t.entries[mr.LKey>>8]
	e.Window = typ
	e.valid = typ == MWType1
	return mr.LKey
}

// FreeWindow frees the window at key's index, whatever its tag and state
// (ibv_dealloc_mw "unbinds in case was previously bound and deallocates":
// rxe_mw_cleanup lets go of the region and the QP). A bound window's
// region no longer holds it, and no key resolves to the entry again: a
// remote access with its last R_Key then fails as any invalid key, a bind
// or invalidate naming it is refused. It reports false, changing nothing,
// when the index holds no window (never allocated, or freed already).
func (t *KeyTable) FreeWindow(key uint32) bool {
	w := t.window(key)
	if w == nil {
		return false
	}
	if w.valid && w.Length > 0 {
		t.entries[w.region].windows--
	}
	// Window 0 and not valid: the entry of a deregistered region, which
	// lookup, window and Entry all pass over. Indices are not reused.
	*w = MR{}
	return true
}

// window returns the window entry at key's index whatever its state, or
// nil when the index holds none.
func (t *KeyTable) window(key uint32) *MR {
	idx := key >> 8
	if int(idx) >= len(t.entries) || t.entries[idx].Window == 0 {
		return nil
	}
	return &t.entries[idx]
}

// BindReq is a bind of a window (struct ibv_mw_bind_info and the
// window's keys, as the BIND_MW WQE carries them).
type BindReq struct {
	MWKey  uint32 // the window's current R_Key (ibv_mw.rkey)
	NewKey uint32 // the key after the bind: its low 8 bits are the new tag
	MRKey  uint32 // the region's L_Key (bind_info.mr->lkey); 0 with Length 0
	Addr   uint64 // first byte of the window
	Length uint64 // bytes
	Access int    // bind_info.mw_access_flags: remote rights only
}

// Bind binds the window req.MWKey names, for QP qpn in protection domain
// pd, and returns its new R_Key, or ok false when a rule refuses it
// (rxe_bind_mw and rxe_check_bind_mw, in their order; a refusal leaves
// the window as it was). A type 1 window is bound anew whatever its state
// (a bind of length 0 unbinds it); a type 2 window must be free
// (o10-37.2.30), in the QP's PD (C10-72) and of a length above 0
// (o10-37.2.40); a type 1 window cannot be zero-based (o10-36.2.2). The
// region must be live, allow binds (C10-73), allow local write if the
// window grants remote write or atomics (C10-74), and hold the window's
// whole range (C10-75; a zero-based window's bytes are the region's
// [Addr, Addr + Length) as well, the KLM entry libmlx5 writes, so the
// same check: rxe checks only its length).
func (t *KeyTable) Bind(req BindReq, qpn, pd uint32) (uint32, bool) {
	w := t.window(req.MWKey)
	if w == nil || w.RKey != req.MWKey || req.Access&^mwBindAccess != 0 {
		return 0, false
	}
	if w.Window == MWType1 && req.Access&AccessZeroBased != 0 {
		// o10-36.2.2: a type 1 window is not zero-based (rxe_check_bind_mw).
		return 0, false
	}
	if w.Window == MWType2 && (w.valid || w.PD != pd || req.Length == 0) {
		return 0, false
	}
	var mr *MR
	if req.Length > 0 {
		if mr = t.lookup(req.MRKey); mr == nil || mr.Window != 0 || mr.PD != w.PD {
			return 0, false
		}
		if mr.Access&AccessMWBind == 0 {
			return 0, false
		}
		if req.Access&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && mr.Access&AccessLocalWrite == 0 {
			return 0, false
		}
		if req.Addr < mr.Addr || req.Addr+req.Length > mr.Addr+mr.Length || req.Addr+req.Length < req.Addr {
			return 0, false
		}
	}
	// rxe_do_bind_mw: the new tag, rights and range; the old region (a
	// type 1 rebind) lets go of the window, the new one holds it.
	if w.valid && w.Length > 0 {
		t.entries[w.region].windows--
	}
	key := w.RKey&^0xff | req.NewKey&0xff
	w.LKey, w.RKey = key, key
	w.Access, w.Addr, w.Length, w.valid = req.Access, req.Addr, req.Length, true
	w.qpn = 0
	if mr != nil {
		w.region = mr.LKey >> 8
		mr.windows++
	}
	if w.Window == MWType2 {
		w.qpn = qpn
	}
	return key, true
}

// Invalidate frees the type 2 window whose current R_Key is key (LOCAL_INV,
// or a SEND_WITH_INVALIDATE received): its key then names no access until
// the next bind. It reports false, changing nothing, for a key that names
// no bound type 2 window: a region (a fast-registration one, the only
// kind LOCAL_INV may invalidate, is KeyTable.invalidateRegion's, which
// Device.invalidate tries next), a type 1 window
// (o10-37.2.26), a free window or a stale tag (rxe_invalidate_mw).
func (t *KeyTable) Invalidate(key uint32) bool {
	w := t.window(key)
	if w == nil || w.Window != MWType2 || !w.valid || w.RKey != key {
		return false
	}
	t.entries[w.region].windows--
	w.valid, w.qpn, w.Access, w.Addr, w.Length = false, 0, 0, 0, 0
	return true
}

// CheckRemote checks an R_Key arriving on QP qpn of protection domain pd
// for an access of length bytes at addr needing need: Check's rules for a
// region; for a window (rxe_lookup_mw, then the region) it must be bound,
// on the QP for type 2, in the PD, grant need and hold the range, and
// its region must still be live (a bound region cannot be deregistered,
// so it is; checked all the same).
func (t *KeyTable) CheckRemote(key, pd, qpn uint32, need int, addr, length uint64) KeyResult {
	e := t.lookup(key)
	if e == nil {
		return KeyInvalid
	}
	if e.Window != 0 {
		return t.checkWindow(e, pd, qpn, need, addr, length)
	}
	return e.grants(pd, need, addr, length)
}

// checkWindow is CheckRemote for a bound window's entry e. A zero-based
// window's addr is an offset from its first byte (IBV_ACCESS_ZERO_BASED:
// the window's start address is 0, libmlx5 set_umr_mkey_seg); it is
// checked as the region address it names.
func (t *KeyTable) checkWindow(e *MR, pd, qpn uint32, need int, addr, length uint64) KeyResult {
	if e.Length == 0 {
		// A type 1 window bound with length 0 grants nothing (rxe_lookup_mw:
		// mw->length == 0).
		return KeyInvalid
	}
	if e.Window == MWType2 && e.qpn != qpn {
		return KeyQPMismatch
	}
	if e.Access&AccessZeroBased != 0 {
		// An offset that wraps past 2^64 names a byte before the window,
		// which grants finds out of bounds.
		addr += e.Addr
	}
	if r := e.grants(pd, need, addr, length); r != KeyOK {
		return r
	}
	if !t.entries[e.region].valid {
		return KeyInvalid
	}
	return KeyOK
}

// ZeroBase returns the region address a remote address carried with key
// is an offset from: a bound zero-based window's first byte, 0 for any
// other key (its addresses are the region's own). The responder adds it
// to a RETH's or AtomicETH's VA once the key has passed.
func (t *KeyTable) ZeroBase(key uint32) uint64 {
	idx := key >> 8
	if int(idx) >= len(t.entries) {
		return 0
	}
	if e := &t.entries[idx]; e.Access&AccessZeroBased != 0 && e.Window != 0 {
		return e.Addr
	}
	return 0
}

// regionKey returns the key of the region a bound window key lies in,
// and whether key is one: the second MPT entry a window's access reads
// (its translation is the region's).
func (t *KeyTable) regionKey(key uint32) (uint32, bool) {
	idx := key >> 8
	if int(idx) >= len(t.entries) {
		return 0, false
	}
	e := &t.entries[idx]
	if e.Window == 0 {
		return 0, false
	}
	return t.entries[e.region].LKey, true
}
