package hca

import (
	"fmt"
	"syscall"

	"github.com/hcasim/hcasim/ib"
)

// MW is a memory window as the application holds it (struct ibv_mw).
type MW struct {
	Type MWType
	PD   uint32
	// RKey is the window's key: at allocation, then after each BindMW (a
	// type 2 window's application keeps the key of its BIND_MW itself,
	// as verbs leaves ibv_mw.rkey to it).
	RKey uint32
}

// AllocMW allocates a memory window of type typ in pd (ibv_alloc_mw), an
// MPT entry of window type, unbound. A type other than 1 or 2 is refused
// with EINVAL.
func (d *Device) AllocMW(pd uint32, typ MWType) (*MW, error) {
	if typ != MWType1 && typ != MWType2 {
		return nil, fmt.Errorf("hca: %s alloc_mw: type %d is not a memory window type (1, 2): %w", d.Name, typ, syscall.EINVAL)
	}
	if err := d.checkLive(pd); err != nil {
		return nil, err
	}
	return &MW{Type: typ, PD: pd, RKey: d.Keys.AllocWindow(pd, typ)}, nil
}

// DeallocMW frees mw (ibv_dealloc_mw), bound or not: a bound window is
// unbound first, so its region may then be deregistered, and its R_Key
// names nothing after (a remote access with it fails with a remote access
// error, as on hardware: rdma-unit-test's MwType2AdvancedTest.Dealloc
// expects REM_ACCESS_ERR at the readers of a window deallocated under
// them). A WQE still in the send queue that names it (a bind, a local
// invalidate) completes in error when it runs. The MPT entry is freed at
// the call: the destroy-mkey command's firmware time is not modelled, nor
// is the key cache's copy of the context (a later lookup of the key may
// hit it; the check that follows refuses the key all the same). A window
// already deallocated is refused with ENOENT, as the kernel refuses a
// handle it does not know (rdma-unit-test MwTest.DeallocUnknown).
func (d *Device) DeallocMW(mw *MW) error {
	if !d.Keys.FreeWindow(mw.RKey) {
		return fmt.Errorf("hca: %s dealloc_mw: key %#x names no memory window: %w", d.Name, mw.RKey, syscall.ENOENT)
	}
	return nil
}

// MWBind is a type 1 window's bind (struct ibv_mw_bind): the work
// request's id and signalling, the region, range and rights.
type MWBind struct {
	WRID     uint64
	Signaled bool
	MR       MR     // bind_info.mr; the zero MR with Length 0 unbinds
	Addr     uint64 // first byte of the window
	Length   uint64 // bytes
	Access   int    // remote rights (Access*)
}

// BindMW binds type 1 window mw through qp's send queue (ibv_bind_mw): as
// libmlx5's mlx5_bind_mw, it posts a BIND_MW work request with the
// window's key advanced (IncRKey) and, once posted, gives mw that key;
// the HCA executes the bind in order with the queue's other WQEs, and a
// bind its rules refuse completes with MW_BIND_ERR. Refused at once: a
// type 2 window (libibverbs: EINVAL, those are bound by a BIND_MW work
// request), a range without a region (EINVAL), a region of another PD
// (EPERM), and what PostSend refuses.
func (d *Device) BindMW(qp *QP, mw *MW, b MWBind) error {
	if mw.Type != MWType1 {
		return fmt.Errorf("qp 0x%x: bind_mw of a type %d window (type 1 only; bind a type 2 with a BIND_MW work request): %w", qp.Num, mw.Type, syscall.EINVAL)
	}
	if b.Access&AccessZeroBased != 0 {
		// libmlx5 mlx5_bind_mw: a type 1 window is not zero-based.
		return fmt.Errorf("qp 0x%x: bind_mw of a type 1 window with IBV_ACCESS_ZERO_BASED: %w", qp.Num, syscall.EINVAL)
	}
	if b.MR.LKey == 0 && (b.Addr != 0 || b.Length != 0) {
		return fmt.Errorf("qp 0x%x: bind_mw of a range without a region: %w", qp.Num, syscall.EINVAL)
	}
	if b.MR.LKey != 0 && b.MR.PD != mw.PD {
		return fmt.Errorf("qp 0x%x: bind_mw: window of pd %d, region of pd %d: %w", qp.Num, mw.PD, b.MR.PD, syscall.EPERM)
	}
	key := IncRKey(mw.RKey)
	wr := SendWR{ID: b.WRID, Opcode: WRBindMW, Signaled: b.Signaled,
		Bind: BindReq{MWKey: mw.RKey, NewKey: key, MRKey: b.MR.LKey, Addr: b.Addr, Length: b.Length, Access: b.Access}}
	if err := d.PostSend(qp, &wr); err != nil {
		return err
	}
	mw.RKey = key
	return nil
}

// checkLocalWR refuses a BIND_MW or LOCAL_INV that verbs would: one with
// a data buffer (a local operation has none) or a bind granting rights a
// window cannot (libmlx5 takes only remote read, write and atomic, and
// IBV_ACCESS_ZERO_BASED, which ibv_bind_mw refuses for a type 1 window).
func checkLocalWR(qp *QP, wr *SendWR) error {
	if wr.SGL != nil || wr.Inline || wr.Length != 0 || wr.LocalAddr != 0 || wr.LKey != 0 {
		return fmt.Errorf("qp 0x%x: %v work request with a data buffer (it has none): %w", qp.Num, wr.Opcode, syscall.EINVAL)
	}
	if wr.Opcode == WRRegMR {
		return qp.dev.checkRegWR(qp, wr.Reg)
	}
	if wr.Opcode == WRBindMW && wr.Bind.Access&^mwBindAccess != 0 {
		return fmt.Errorf("qp 0x%x: BIND_MW with access %#x (a window grants remote read 4, write 2, atomic 8 only, zero-based 32 for type 2): %w",
			qp.Num, wr.Bind.Access, syscall.EINVAL)
	}
	return nil
}

// localLookups runs the key-check lookups of a local WQE from t and
// returns when they are done: a bind reads the window's MKey context and
// the region's (each a key-cache lookup, a miss reading the context from
// ICM: keyCheck), issued back to back as a gather list's keys are; an
// invalidate reads the window's. Their checks are made when the WQE runs,
// in order (runLocal): an earlier WQE of the queue may change them.
func (d *Device) localLookups(qp *QP, t ib.PS, w *SendWQE) ib.PS {
	if w.Opcode == WRLocalInv {
		return d.keyCheck(qp, t, w.Imm)
	}
	if w.Opcode == WRRegMR {
		r := w.reg()
		return d.regLookups(qp, t, &r)
	}
	ready := d.keyCheck(qp, t, w.Bind.MWKey)
	if w.Bind.Length > 0 {
		ready = max(ready, d.keyCheck(qp, t, w.Bind.MRKey))
	}
	return ready
}

// runLocal executes a local WQE as it reaches the requester, in posting
// order: the bind or invalidate changes the window's MPT entry on chip at
// once, and the HCA writes the 64-byte context back to ICM, a posted
// write (a later miss of the key reads it after that write: PCIe reads do
// not pass posted writes). The WQE completes in order behind the messages
// before it (Requester.EnqueueLocal). A refused bind completes with
// MW_BIND_ERR, a refused invalidate with LOC_QP_OP_ERR (rxe's
// do_local_ops), and the QP goes to ERR.
func (d *Device) runLocal(qp *QP, w SendWQE, now ib.PS) {
	if qp.req.State != QPErr {
		// Not traced as a key_check: the verif protection checker takes a
		// passing one as a DMA window opened, and a bind moves no data.
		st := WCSuccess
		switch w.Opcode {
		case WRBindMW:
			if _, ok := d.Keys.Bind(*w.Bind, qp.Num, qp.PD); !ok {
				st = WCMWBindErr
			}
		case WRLocalInv:
			if !d.invalidate(w.Imm) {
				st = WCLocQPOpErr
			}
		case WRRegMR:
			// rxe's do_local_ops: a refused registration is LOC_QP_OP_ERR.
			if !d.Keys.FastReg(w.reg(), qp.PD, d.pageShift) {
				st = WCLocQPOpErr
			}
		}
		if st != WCSuccess {
			d.failWQE(qp, w, st, now)
			return
		}
		if _, ok := d.PCIe.Post(now, MKeyContextBytes, WriteNote{Kind: writeMKey}); !ok {
			d.flushAt(now)
		}
		if w.Opcode == WRRegMR {
			r := w.reg()
			d.writeMTT(&r, now)
		}
	}
	for _, c := range qp.req.EnqueueLocal(w, 0) {
		d.sendCompletion(qp, c, now)
	}
}

// remoteInvalidate runs the invalidation a SEND_WITH_INVALIDATE asks for
// (the R_Key of its last packet's IETH, in a.Imm) as that packet
// completes the receive, from t: a key-cache lookup of the window's
// context (keyCheck), then Invalidate's rules, and the context written
// back to ICM. It returns when the CQE may be written. A key it may not
// invalidate completes the receive with REM_INV_REQ_ERR, and the QP goes
// to ERR once the packet is done (rxe_resp.c: RESPST_ERR_INVALIDATE_RKEY,
// class J: the receive completes in error, the packet is acknowledged,
// then the QP errs).
func (d *Device) remoteInvalidate(qp *QP, t ib.PS, a *RespAction) ib.PS {
	t = d.keyCheck(qp, t, a.Imm)
	if d.invalidate(a.Imm) {
		if _, booked := d.PCIe.Post(t, MKeyContextBytes, WriteNote{Kind: writeMKey}); !booked {
			d.flushAt(t)
		}
	} else {
		a.RecvStatus = WCRemInvReqErr
		qp.resp.State = QPErr
	}
	return t
}
