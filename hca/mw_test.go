package hca

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestWindowBindRules binds windows of a table against each rule of
// rxe_check_bind_mw (and the key match of rxe_bind_mw): each bind differs
// from one that succeeds in the one field the rule is about, so each
// refusal is that rule's.
func TestWindowBindRules(t *testing.T) {
	const pd, otherPD, qpn = 1, 2, 0x100
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessMWBind
	cases := []struct {
		name string
		edit func(kt *KeyTable, r *BindReq)
		pd   uint32 // the QP's PD
		ok   bool
	}{
		{"good", func(*KeyTable, *BindReq) {}, pd, true},
		{"stale window key", func(_ *KeyTable, r *BindReq) { r.MWKey = IncRKey(r.MWKey) }, pd, false},
		{"region without MW_BIND (C10-73)", func(kt *KeyTable, r *BindReq) {
			r.MRKey = kt.Register(pd, 0x1000, 0x1000, AccessLocalWrite|AccessRemoteWrite).LKey
		}, pd, false},
		{"writable window, region without local write (C10-74)", func(kt *KeyTable, r *BindReq) {
			r.MRKey = kt.Register(pd, 0x1000, 0x1000, AccessMWBind|AccessRemoteRead).LKey
		}, pd, false},
		{"read-only window, region without local write", func(kt *KeyTable, r *BindReq) {
			r.MRKey = kt.Register(pd, 0x1000, 0x1000, AccessMWBind|AccessRemoteRead).LKey
			r.Access = AccessRemoteRead
		}, pd, true},
		{"window past the region's end (C10-75)", func(_ *KeyTable, r *BindReq) { r.Length = 0x1000 - 0x100 + 1 }, pd, false},
		{"window before the region (C10-75)", func(_ *KeyTable, r *BindReq) { r.Addr = 0xfff }, pd, false},
		{"window to the region's last byte", func(_ *KeyTable, r *BindReq) { r.Length = 0x1000 - 0x100 }, pd, true},
		{"type 2 of length 0 (o10-37.2.40)", func(_ *KeyTable, r *BindReq) { r.Length = 0 }, pd, false},
		{"QP of another PD (C10-72)", func(*KeyTable, *BindReq) {}, otherPD, false},
		{"region of another PD", func(kt *KeyTable, r *BindReq) {
			r.MRKey = kt.Register(otherPD, 0x1000, 0x1000, acc).LKey
		}, pd, false},
		{"a local right", func(_ *KeyTable, r *BindReq) { r.Access |= AccessLocalWrite }, pd, false},
		{"region key that is a window", func(kt *KeyTable, r *BindReq) { r.MRKey = kt.AllocWindow(pd, MWType2) }, pd, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var kt KeyTable
			mr := kt.Register(pd, 0x1000, 0x1000, acc)
			mw := kt.AllocWindow(pd, MWType2)
			r := BindReq{MWKey: mw, NewKey: IncRKey(mw), MRKey: mr.LKey, Addr: 0x1100, Length: 0x100,
				Access: AccessRemoteWrite | AccessRemoteRead}
			tc.edit(&kt, &r)
			key, ok := kt.Bind(r, qpn, tc.pd)
			require.Equal(t, tc.ok, ok)
			if !ok {
				// A refused bind leaves the window free: its key grants nothing.
				assert.Equal(t, KeyInvalid, kt.CheckRemote(mw, pd, qpn, 0, r.Addr, 1))
				return
			}
			// The bound key is the window's index with the new tag.
			assert.Equal(t, mw&^0xff|r.NewKey&0xff, key)
			// A second bind of a bound type 2 window is refused (o10-37.2.30).
			r.MWKey, r.NewKey = key, IncRKey(key)
			_, again := kt.Bind(r, qpn, tc.pd)
			assert.False(t, again)
		})
	}
}

// TestWindowRemoteCheck checks R_Keys against a bound type 2 window: the
// window's range, rights and QP decide, not the region's (which grants
// more); a window key is no L_Key; an invalidated or rebound window's old
// key is dead; its region cannot be deregistered while it is bound.
func TestWindowRemoteCheck(t *testing.T) {
	const pd, qpn = 1, 0x100
	var kt KeyTable
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic | AccessMWBind
	mr := kt.Register(pd, 0x1000, 0x1000, acc)
	mw := kt.AllocWindow(pd, MWType2)
	key, ok := kt.Bind(BindReq{MWKey: mw, NewKey: IncRKey(mw), MRKey: mr.LKey, Addr: 0x1100, Length: 0x100,
		Access: AccessRemoteRead}, qpn, pd)
	require.True(t, ok)
	cases := []struct {
		name       string
		key, pd    uint32
		qpn        uint32
		need       int
		addr, n    uint64
		want       KeyResult
		regionWant KeyResult // the region's own R_Key for the same access
	}{
		{"read inside", key, pd, qpn, AccessRemoteRead, 0x1100, 0x100, KeyOK, KeyOK},
		{"read one byte past the window (inside the region)", key, pd, qpn, AccessRemoteRead, 0x1100, 0x101, KeyOutOfBounds, KeyOK},
		{"read one byte before the window", key, pd, qpn, AccessRemoteRead, 0x10ff, 1, KeyOutOfBounds, KeyOK},
		{"write the window does not grant", key, pd, qpn, AccessRemoteWrite, 0x1100, 8, KeyAccessDenied, KeyOK},
		{"another QP (type 2)", key, pd, qpn + 1, AccessRemoteRead, 0x1100, 8, KeyQPMismatch, KeyOK},
		{"another PD", key, pd + 1, qpn, AccessRemoteRead, 0x1100, 8, KeyPDMismatch, KeyPDMismatch},
		{"the window's allocation key (old tag)", mw, pd, qpn, AccessRemoteRead, 0x1100, 8, KeyInvalid, KeyOK},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, kt.CheckRemote(tc.key, tc.pd, tc.qpn, tc.need, tc.addr, tc.n), tc.name)
		assert.Equal(t, tc.regionWant, kt.CheckRemote(mr.RKey, tc.pd, tc.qpn, tc.need, tc.addr, tc.n), tc.name+": region")
	}
	assert.Equal(t, KeyInvalid, kt.Check(key, pd, 0, 0x1100, 8), "a window key is no L_Key")
	region, isWindow := kt.regionKey(key)
	assert.True(t, isWindow)
	assert.Equal(t, mr.LKey, region)

	err := kt.Deregister(mr.LKey)
	require.ErrorIs(t, err, syscall.EINVAL, "a region with a window bound")
	assert.False(t, kt.Invalidate(mr.RKey), "LOCAL_INV of a region")
	assert.False(t, kt.Invalidate(IncRKey(key)), "LOCAL_INV with a stale tag")
	require.True(t, kt.Invalidate(key))
	assert.False(t, kt.Invalidate(key), "twice")
	assert.Equal(t, KeyInvalid, kt.CheckRemote(key, pd, qpn, AccessRemoteRead, 0x1100, 8))

	// Bound again with the next tag: the old key stays dead.
	key2, ok := kt.Bind(BindReq{MWKey: key, NewKey: IncRKey(key), MRKey: mr.LKey, Addr: 0x1000, Length: 0x1000,
		Access: AccessRemoteWrite}, qpn, pd)
	require.True(t, ok)
	assert.NotEqual(t, key, key2)
	assert.Equal(t, KeyInvalid, kt.CheckRemote(key, pd, qpn, AccessRemoteWrite, 0x1000, 8))
	assert.Equal(t, KeyOK, kt.CheckRemote(key2, pd, qpn, AccessRemoteWrite, 0x1000, 0x1000))
	require.True(t, kt.Invalidate(key2))
	require.NoError(t, kt.Deregister(mr.LKey), "no window bound any more")
}

// TestType1Window: a type 1 window is valid from allocation but of length
// 0 (grants nothing), may be bound again while bound, is bound to no QP,
// and LOCAL_INV does not invalidate it (o10-37.2.26); a bind of length 0
// unbinds it.
func TestType1Window(t *testing.T) {
	const pd = 1
	var kt KeyTable
	mr := kt.Register(pd, 0x1000, 0x1000, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	mw := kt.AllocWindow(pd, MWType1)
	assert.Equal(t, KeyInvalid, kt.CheckRemote(mw, pd, 0x100, AccessRemoteWrite, 0x1000, 1))
	k1, ok := kt.Bind(BindReq{MWKey: mw, NewKey: IncRKey(mw), MRKey: mr.LKey, Addr: 0x1000, Length: 0x10, Access: AccessRemoteWrite}, 0x100, pd)
	require.True(t, ok)
	assert.Equal(t, KeyOK, kt.CheckRemote(k1, pd, 0x999, AccessRemoteWrite, 0x1000, 0x10), "any QP of the PD")
	k2, ok := kt.Bind(BindReq{MWKey: k1, NewKey: IncRKey(k1), MRKey: mr.LKey, Addr: 0x1800, Length: 0x10, Access: AccessRemoteWrite}, 0x100, pd)
	require.True(t, ok, "rebound while bound")
	assert.Equal(t, KeyInvalid, kt.CheckRemote(k1, pd, 0x100, AccessRemoteWrite, 0x1000, 1))
	assert.False(t, kt.Invalidate(k2))
	k3, ok := kt.Bind(BindReq{MWKey: k2, NewKey: IncRKey(k2)}, 0x100, pd)
	require.True(t, ok, "a bind of length 0 unbinds")
	assert.Equal(t, KeyInvalid, kt.CheckRemote(k3, pd, 0x100, AccessRemoteWrite, 0x1800, 1))
	require.NoError(t, kt.Deregister(mr.LKey), "no window bound after the unbind")
}

// TestBindWQERoundTrip: a BIND_MW WQE is 3 WQEBBs (144 bytes: ctrl 16,
// UMR ctrl 48, mkey context 64, one KLM 16) and decodes to its bind; a
// LOCAL_INV is one, its key in the ctrl's imm.
func TestBindWQERoundTrip(t *testing.T) {
	b := BindReq{MWKey: 0x1234_56_07, NewKey: 0x1234_56_08, MRKey: 0x77_01, Addr: 0x1_0000_1000, Length: 0x2_0000_0000, Access: AccessRemoteRead | AccessRemoteAtomic}
	wr := SendWR{Opcode: WRBindMW, Signaled: true, Bind: b}
	require.Equal(t, 3, WQEBBs(&wr))
	var buf [maxWQEBBs * WQEBBBytes]byte
	n := EncodeSendWQE(buf[:], &wr, 5, 0x101, nil)
	require.Equal(t, 3*WQEBBBytes, n)
	w, err := DecodeSendWQE(buf[:n])
	require.NoError(t, err)
	assert.Equal(t, WRBindMW, w.Opcode)
	require.NotNil(t, w.Bind)
	assert.Equal(t, b, *w.Bind)
	assert.Equal(t, uint32(0), w.Length)

	inv := SendWR{Opcode: WRLocalInv, InvalidateRKey: 0xabcdef}
	require.Equal(t, 1, WQEBBs(&inv))
	n = EncodeSendWQE(buf[:], &inv, 6, 0x101, nil)
	w, err = DecodeSendWQE(buf[:n])
	require.NoError(t, err)
	assert.Equal(t, WRLocalInv, w.Opcode)
	assert.Equal(t, uint32(0xabcdef), w.Imm)
}

// mwPair is a pair whose B side has a second QP, connected to a second
// QP of A's, and a type 2 window.
type mwPair struct {
	*pair
	qa2, qb2 *QP
	mw       *MW
	mr       MR // B's region the window is bound in: [bufB, bufB + 64 KiB)
}

func newMWPair(t *testing.T, mrAccess int) *mwPair {
	p := &mwPair{pair: newPair(t, edrLink(), Defaults(), 1<<16)}
	p.qa2 = p.a.CreateQP(p.qa.PD, p.qa.SendCQ, p.qa.RecvCQ, 64, 64)
	p.qb2 = p.b.CreateQP(p.qb.PD, p.b.CreateCQ(64), p.b.CreateCQ(64), 64, 64)
	require.NoError(t, ConnectRC(p.qa2, p.qb2, 4096, 0x30, 0x40))
	p.mr = p.b.RegMR(p.qb.PD, p.bufB, 1<<16, mrAccess)
	var err error
	p.mw, err = p.b.AllocMW(p.qb.PD, MWType2)
	require.NoError(t, err)
	return p
}

// mwStep is one work request of a test's script: posted on d's QP q
// once the step before it has completed, after pre runs (if set).
type mwStep struct {
	d   *Device
	q   *QP
	wr  SendWR
	pre func()
	// verb posts the step's WR instead of PostSend (a verb that posts
	// one, such as BindMW).
	verb func() error
}

// script posts each step's WR when the one before it has its CQE on its
// QP's send CQ (from inside the simulation, in the CQE callback) and
// returns the CQEs, one a step.
func (p *mwPair) script(t *testing.T, steps ...mwStep) []WC {
	wcs := make([]WC, 0, len(steps))
	i := 0
	post := func() {
		if steps[i].pre != nil {
			steps[i].pre()
		}
		if steps[i].verb != nil {
			require.NoError(t, steps[i].verb())
			return
		}
		require.NoError(t, steps[i].d.PostSend(steps[i].q, &steps[i].wr))
	}
	post()
	var wc [1]WC
	p.runUntil(t, func() bool {
		for i < len(steps) && steps[i].d.PollCQ(steps[i].q.SendCQ, wc[:]) == 1 {
			wcs = append(wcs, wc[0])
			if i++; i < len(steps) {
				post()
			}
		}
		return i == len(steps)
	})
	require.Len(t, wcs, len(steps))
	return wcs
}

// bindWR is a signaled BIND_MW of p's window to [bufB+off, +n) with
// rights acc, and the key it gives the window.
func (p *mwPair) bindWR(off, n uint64, acc int) (SendWR, uint32) {
	key := IncRKey(p.mw.RKey)
	return SendWR{ID: 7, Opcode: WRBindMW, Signaled: true,
		Bind: BindReq{MWKey: p.mw.RKey, NewKey: key, MRKey: p.mr.LKey, Addr: p.bufB + off, Length: n, Access: acc}}, key
}

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)*7 + seed
	}
	return b
}

// TestWindowWriteAndRead binds a 4 KiB window at offset 8 KiB of B's 64
// KiB region and writes through it from A: a WRITE inside lands; a READ
// inside returns what is there; then a WRITE one byte past the window's
// end (well inside the region) is a remote access error and writes
// nothing, while the region's own R_Key reaches those bytes (on the
// other QP pair: the first is in ERR).
func TestWindowWriteAndRead(t *testing.T) {
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessMWBind
	p := newMWPair(t, acc)
	bind, key := p.bindWR(8192, 4096, AccessRemoteWrite|AccessRemoteRead)
	src := fill(4096, 3)
	p.a.Mem.Write(p.bufA, src)
	before, after := make([]byte, 1<<16), make([]byte, 1<<16)
	var rx int64
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: bind},
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 4096,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB + 8192, RKey: key}},
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 2, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA + 16384, Length: 1000,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB + 8192 + 3096, RKey: key}},
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 3, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 100,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB + 8192 + 4096 - 99, RKey: key},
			pre: func() { p.b.Mem.Read(p.bufB, before); rx = p.b.Counters.PayloadRx }},
		mwStep{d: p.a, q: p.qa2, wr: SendWR{ID: 4, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 100,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB + 8192 + 4096 - 99, RKey: p.mr.RKey},
			pre: func() { p.b.Mem.Read(p.bufB, after); assert.Equal(t, rx, p.b.Counters.PayloadRx) }},
	)
	assert.Equal(t, WC{WRID: 7, Status: WCSuccess, Opcode: WCBindMW, QPN: p.qb.Num}, wcs[0])
	assert.Equal(t, WCSuccess, wcs[1].Status)
	got := make([]byte, 4096)
	p.b.Mem.Read(p.bufB+8192, got)
	assert.Equal(t, src, before[8192:8192+4096])
	assert.Equal(t, WCSuccess, wcs[2].Status)
	p.a.Mem.Read(p.bufA+16384, got[:1000])
	assert.Equal(t, src[3096:], got[:1000])
	assert.Equal(t, WCRemAccessErr, wcs[3].Status)
	assert.Equal(t, before, after, "nothing written by the refused WRITE")
	assert.Equal(t, WCSuccess, wcs[4].Status)
	p.b.Mem.Read(p.bufB+8192+4096-99, got[:100])
	assert.Equal(t, src[:100], got[:100])
}

// TestType2WindowIsItsQPs: a window bound on B's QP qb is refused to a
// WRITE arriving on B's other QP qb2 (same PD), and still serves qb.
func TestType2WindowIsItsQPs(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	bind, key := p.bindWR(0, 4096, AccessRemoteWrite)
	w := SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 64, LKey: p.mrA.LKey,
		RemoteAddr: p.bufB, RKey: key}
	wcs := p.script(t, mwStep{d: p.b, q: p.qb, wr: bind}, mwStep{d: p.a, q: p.qa2, wr: w}, mwStep{d: p.a, q: p.qa, wr: w})
	assert.Equal(t, WCSuccess, wcs[0].Status)
	assert.Equal(t, WCRemAccessErr, wcs[1].Status, "another QP")
	assert.Equal(t, WCSuccess, wcs[2].Status, "the window's QP")
}

// TestLocalInvalidateKillsWindow: after LOCAL_INV of the window's key a
// WRITE through it fails; LOCAL_INV of the region's key, which the model
// cannot invalidate, completes with LOC_QP_OP_ERR and the QP goes to ERR.
func TestLocalInvalidateKillsWindow(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	bind, key := p.bindWR(0, 4096, AccessRemoteWrite)
	w := SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 64, LKey: p.mrA.LKey,
		RemoteAddr: p.bufB, RKey: key}
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: bind},
		mwStep{d: p.a, q: p.qa, wr: w},
		mwStep{d: p.b, q: p.qb, wr: SendWR{ID: 9, Opcode: WRLocalInv, Signaled: true, InvalidateRKey: key}},
		mwStep{d: p.a, q: p.qa, wr: w},
		mwStep{d: p.b, q: p.qb2, wr: SendWR{ID: 10, Opcode: WRLocalInv, Signaled: true, InvalidateRKey: p.mr.RKey}},
	)
	assert.Equal(t, WCSuccess, wcs[1].Status)
	assert.Equal(t, WC{WRID: 9, Status: WCSuccess, Opcode: WCLocalInv, QPN: p.qb.Num}, wcs[2])
	assert.Equal(t, WCRemAccessErr, wcs[3].Status)
	assert.Equal(t, WCLocQPOpErr, wcs[4].Status)
	assert.Equal(t, QPErr, p.qb2.State)
}

// TestBindWithoutMWBindFails: a bind on a region registered without
// MW_BIND completes with MW_BIND_ERR, the QP goes to ERR and a WR posted
// behind it is flushed; the window stays unbound.
func TestBindWithoutMWBindFails(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite)
	key := IncRKey(p.mw.RKey)
	require.NoError(t, p.b.PostSend(p.qb, &SendWR{ID: 7, Opcode: WRBindMW, Signaled: true,
		Bind: BindReq{MWKey: p.mw.RKey, NewKey: key, MRKey: p.mr.LKey, Addr: p.bufB, Length: 64, Access: AccessRemoteWrite}}))
	require.NoError(t, p.b.PostSend(p.qb, &SendWR{ID: 8, Opcode: WRSend, Signaled: true, LocalAddr: p.bufB, Length: 8, LKey: p.mr.LKey}))
	var wcs [2]WC
	n := 0
	p.runUntil(t, func() bool { n += p.b.PollCQ(p.qb.SendCQ, wcs[n:]); return n == 2 })
	require.Equal(t, 2, n)
	assert.Equal(t, WC{WRID: 7, Status: WCMWBindErr, Opcode: WCBindMW, QPN: p.qb.Num}, wcs[0])
	assert.Equal(t, WCWRFlushErr, wcs[1].Status)
	assert.Equal(t, QPErr, p.qb.State)
	assert.Equal(t, KeyInvalid, p.b.Keys.CheckRemote(key, p.qb.PD, p.qb.Num, AccessRemoteWrite, p.bufB, 8))
}

// TestBindVerbErrors: what verbs refuse at once.
func TestBindVerbErrors(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	_, err := p.b.AllocMW(p.qb.PD, 3)
	assert.ErrorIs(t, err, syscall.EINVAL)
	err = p.b.PostSend(p.qb, &SendWR{Opcode: WRBindMW, Bind: BindReq{MWKey: p.mw.RKey, MRKey: p.mr.LKey, Length: 8, Access: AccessLocalWrite}})
	assert.ErrorIs(t, err, syscall.EINVAL, "a local right")
	err = p.b.PostSend(p.qb, &SendWR{Opcode: WRLocalInv, InvalidateRKey: 1, LocalAddr: p.bufB, Length: 8, LKey: p.mr.LKey})
	assert.ErrorIs(t, err, syscall.EINVAL, "a data buffer")
	assert.ErrorIs(t, p.b.BindMW(p.qb, p.mw, MWBind{MR: p.mr, Addr: p.bufB, Length: 8}), syscall.EINVAL, "type 2 by the verb")
	w1, err := p.b.AllocMW(p.qb.PD, MWType1)
	require.NoError(t, err)
	other := p.b.RegMR(p.b.AllocPD(), p.bufB, 64, AccessMWBind)
	assert.ErrorIs(t, p.b.BindMW(p.qb, w1, MWBind{MR: other, Addr: p.bufB, Length: 8}), syscall.EPERM)
	assert.ErrorIs(t, p.b.BindMW(p.qb, w1, MWBind{Length: 8}), syscall.EINVAL, "a range without a region")
	// Nothing was posted: the QP's queue is untouched.
	assert.Equal(t, uint16(0), p.qb.NextWQEIndex())
}

// TestType1WindowByVerb binds a type 1 window with the verb; any QP of
// the PD may use it.
func TestType1WindowByVerb(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	w1, err := p.b.AllocMW(p.qb.PD, MWType1)
	require.NoError(t, err)
	old := w1.RKey
	key := IncRKey(old)
	w := SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 128, LKey: p.mrA.LKey,
		RemoteAddr: p.bufB, RKey: key}
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, verb: func() error {
			return p.b.BindMW(p.qb, w1, MWBind{WRID: 5, Signaled: true, MR: p.mr, Addr: p.bufB, Length: 128, Access: AccessRemoteWrite})
		}},
		mwStep{d: p.a, q: p.qa2, wr: w}, mwStep{d: p.a, q: p.qa, wr: w})
	assert.Equal(t, key, w1.RKey)
	assert.Equal(t, WC{WRID: 5, Status: WCSuccess, Opcode: WCBindMW, QPN: p.qb.Num}, wcs[0])
	assert.Equal(t, WCSuccess, wcs[1].Status)
	assert.Equal(t, WCSuccess, wcs[2].Status)
}

// TestBindCompletesInOrder: a signaled bind posted behind a WRITE on the
// same QP completes after it (completions in posting order), though it
// sends nothing; the bind took effect when it reached the requester.
func TestBindCompletesInOrder(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	key := IncRKey(p.mw.RKey)
	require.NoError(t, p.b.PostSend(p.qb, &SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufB,
		Length: 20000, LKey: p.mr.LKey, RemoteAddr: p.bufA, RKey: p.mrA.RKey}))
	require.NoError(t, p.b.PostSend(p.qb, &SendWR{ID: 2, Opcode: WRBindMW, Signaled: true,
		Bind: BindReq{MWKey: p.mw.RKey, NewKey: key, MRKey: p.mr.LKey, Addr: p.bufB, Length: 64, Access: AccessRemoteWrite}}))
	var wcs [2]WC
	n := 0
	p.runUntil(t, func() bool { n += p.b.PollCQ(p.qb.SendCQ, wcs[n:]); return n == 2 })
	require.Equal(t, 2, n)
	assert.Equal(t, uint64(1), wcs[0].WRID)
	assert.Equal(t, WCRDMAWrite, wcs[0].Opcode)
	assert.Equal(t, WC{WRID: 2, Status: WCSuccess, Opcode: WCBindMW, QPN: p.qb.Num}, wcs[1])
	assert.Equal(t, int64(0), int64(p.qb.Requester().Pending()))
}

// TestBindLookupCost: a bind's WQE waits for two key-check lookups, the
// window's context and the region's, issued back to back.
//
// Warm (both contexts in the key cache): the window's lookup starts at
// t and ends key_check latency 10 cycles later; the region's takes the
// next issue slot, one interval (1 cycle) later, and ends 10 cycles
// after it: at t + 11 cycles = 11 ns at 1 GHz.
//
// Cold, the PCIe link idle: each miss reads its 64-byte context
// (TestColdKeyMissIsAContextRead: request TLP 1524 ps up, 533 ns host
// read latency, completion 5333 ps down). The window's request goes up
// at t + 10 ns, done 1524 ps later; the region's lookup ends at t + 11
// ns, but its request waits for the link and goes up in [t + 11.524, t +
// 13.048] ns. The window's completion is down at t + 10 + 1.524 + 533 +
// 5.333 = t + 549.857 ns (its miss time); the region's data are ready at
// t + 13.048 + 533 = t + 546.048 ns, but the downstream link is busy with
// the first completion until t + 549.857 ns: it ends at t + 549.857 +
// 5.333 = t + 555.190 ns, when the bind may run.
func TestBindLookupCost(t *testing.T) {
	cfg := Defaults()
	require.Equal(t, 10, cfg.KeyCheck.LatencyCycles)
	require.Equal(t, 1, cfg.KeyCheck.IntervalCycles)
	require.Equal(t, 1000.0, cfg.CoreClockMHz)
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	w := SendWQE{Opcode: WRBindMW, Bind: &BindReq{MWKey: p.mw.RKey, MRKey: p.mr.LKey, Addr: p.bufB, Length: 64}}
	var cold, warm ib.PS
	at := 10 * ib.Microsecond
	p.s.Schedule(at, &poster{fn: func() { cold = p.b.localLookups(p.qb, p.s.Now(), &w) }}, 0)
	p.s.Schedule(at+5*ib.Microsecond, &poster{fn: func() { warm = p.b.localLookups(p.qb, p.s.Now(), &w) }}, 0)
	p.s.StopAt(20 * ib.Microsecond)
	require.NoError(t, p.s.Run())
	assert.Equal(t, at+555_190, cold)
	assert.Equal(t, at+5*ib.Microsecond+11_000, warm)
	assert.Equal(t, int64(2), p.b.KeyCache().Misses)
}

// recvB waits for one completion on B's QP q's receive CQ.
func (p *mwPair) recvB(t *testing.T, q *QP) WC {
	var wc [1]WC
	n := p.b.PollCQ(q.RecvCQ, wc[:])
	if n == 0 {
		p.runUntil(t, func() bool { n += p.b.PollCQ(q.RecvCQ, wc[n:]); return n > 0 })
	}
	require.Equal(t, 1, n)
	return wc[0]
}

// TestSendWithInvalidate: a 10000-byte SEND_WITH_INV from A (three
// packets at MTU 4096: SEND_FIRST, SEND_MIDDLE, SEND_LAST_WITH_INVALIDATE)
// naming the window's key lands in B's receive, whose completion is a
// RECV with IBV_WC_WITH_INV and the key; the window is then dead to
// WRITEs.
func TestSendWithInvalidate(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	require.Equal(t, 3, PacketCount(10000, 4096))
	assert.Equal(t, ib.SendLastInv, RequestOpcode(WRSendInv, 2, 3))
	assert.Equal(t, ib.SendOnlyInv, RequestOpcode(WRSendInv, 0, 1))
	bind, key := p.bindWR(0, 4096, AccessRemoteWrite)
	src := fill(10000, 9)
	p.a.Mem.Write(p.bufA, src)
	require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 50, Addr: p.bufB + 32768, Length: 16384, LKey: p.mr.LKey}))
	w := SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 64, LKey: p.mrA.LKey,
		RemoteAddr: p.bufB, RKey: key}
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: bind},
		mwStep{d: p.a, q: p.qa, wr: w},
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 2, Opcode: WRSendInv, Signaled: true, LocalAddr: p.bufA, Length: 10000,
			LKey: p.mrA.LKey, InvalidateRKey: key}},
		mwStep{d: p.a, q: p.qa, wr: w},
	)
	assert.Equal(t, WCSuccess, wcs[1].Status)
	assert.Equal(t, WC{WRID: 2, Status: WCSuccess, Opcode: WCSend, ByteLen: 10000, QPN: p.qa.Num}, wcs[2])
	assert.Equal(t, WCRemAccessErr, wcs[3].Status, "the window was invalidated")
	assert.Equal(t, WC{WRID: 50, Status: WCSuccess, Opcode: WCRecv, ByteLen: 10000, QPN: p.qb.Num,
		HasInv: true, InvalidatedRKey: key}, p.recvB(t, p.qb))
	got := make([]byte, 10000)
	p.b.Mem.Read(p.bufB+32768, got)
	assert.Equal(t, src, got)

}

// TestSendWithInvalidateOfARegion: a SEND_WITH_INV naming a region's key
// (which may not be invalidated) completes B's receive with
// REM_INV_REQ_ERR and puts B's QP in ERR; A's SEND was received and is
// acknowledged.
func TestSendWithInvalidateOfARegion(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 50, Addr: p.bufB, Length: 64, LKey: p.mr.LKey}))
	wcs := p.script(t, mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 2, Opcode: WRSendInv, Signaled: true, LocalAddr: p.bufA,
		Length: 8, LKey: p.mrA.LKey, InvalidateRKey: p.mr.RKey}})
	assert.Equal(t, WCSuccess, wcs[0].Status)
	rc := p.recvB(t, p.qb)
	assert.Equal(t, WCRemInvReqErr, rc.Status)
	assert.Equal(t, uint64(50), rc.WRID)
	assert.Equal(t, QPErr, p.qb.State)
	assert.Equal(t, KeyOK, p.b.Keys.CheckRemote(p.mr.RKey, p.qb.PD, p.qb.Num, AccessRemoteWrite, p.bufB, 8), "the region lives")
}

// TestWindowAccessReadsTwoContexts: at the responder a one-packet WRITE
// through a window looks up two MKey contexts, the window's and then its
// region's (whose translation the access uses), where one through the
// region's own R_Key looks up one: B's key-cache lookups (hits + misses)
// grow by 2 and by 1. Nothing else at B looks a key up meanwhile (the
// ACK needs none).
func TestWindowAccessReadsTwoContexts(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	bind, key := p.bindWR(0, 4096, AccessRemoteWrite)
	lookups := func() int64 { return p.b.KeyCache().Hits + p.b.KeyCache().Misses }
	var before [2]int64
	w := SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 64, LKey: p.mrA.LKey,
		RemoteAddr: p.bufB, RKey: key}
	wr := w
	wr.RKey = p.mr.RKey
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: bind},
		mwStep{d: p.a, q: p.qa, wr: w, pre: func() { before[0] = lookups() }},
		mwStep{d: p.a, q: p.qa, wr: wr, pre: func() { before[1] = lookups() }},
	)
	require.Equal(t, WCSuccess, wcs[1].Status)
	require.Equal(t, WCSuccess, wcs[2].Status)
	assert.Equal(t, int64(2), before[1]-before[0], "through the window")
	assert.Equal(t, int64(1), lookups()-before[1], "through the region's key")
}

// TestBindLatencyDerived: a signaled BIND_MW on a fresh device, from the
// post to its CQE in host memory, stage by stage. Its 3-WQEBB WQE (192
// bytes, under blueflame_bytes 256) comes with the doorbell by BlueFlame:
// no fetch, but the fetch stage parses its three blocks one after the
// other. Then the two cold context lookups (TestBindLookupCost: 555.190
// ns on an idle link), the bind runs as the WQE reaches the requester
// (nothing before it) and completes at once: the CQE stage, then its
// 64-byte posted write (88 bytes with the TLP header), which starts on
// the upstream link after the window's 64-byte context write-back posted
// 10 ns before it has left (5.586 ns), so it waits for nothing.
func TestBindLatencyDerived(t *testing.T) {
	cfg := Defaults()
	require.True(t, cfg.PreferBlueFlame)
	require.Equal(t, 256, cfg.BlueFlameBytes)
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	bind, _ := p.bindWR(0, 4096, AccessRemoteWrite)
	require.Equal(t, 3, WQEBBs(&bind))
	var cqeAt ib.PS
	p.b.OnCQE = func(_ *CQ, now ib.PS) { cqeAt = now; p.s.Stop() }
	require.NoError(t, p.b.PostSend(p.qb, &bind))
	p.s.StopAt(ib.Millisecond)
	require.NoError(t, p.s.Run())

	ns := func(f float64) ib.PS { return ib.PS(f * 1000) }
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	pcie := NewPCIe(cfg.PCIe)
	want := ns(cfg.Host.PostNS) + // the CPU writes the WQE and rings
		ns(cfg.PCIe.MMIOLatencyNS) + // BlueFlame write reaches the HCA
		ib.PS(cfg.Doorbell.LatencyCycles)*cyc + // doorbell stage
		3*ib.PS(cfg.WQEFetch.LatencyCycles)*cyc + // parse three WQEBBs in turn
		555_190 + // the window's and the region's contexts, cold (TestBindLookupCost)
		ib.PS(cfg.CQE.LatencyCycles)*cyc + // CQE stage
		pcie.SerPS(CQEBytes+cfg.PCIe.TLPOverheadBytes) + ns(cfg.PCIe.WriteLatencyNS) // the CQE lands
	// 60 + 308 + 20 + 30 + 555.190 + 10 + 5.586 (88 B × 63.4765625 ps,
	// rounded up) + 200 ns.
	assert.Equal(t, ib.PS(1_188_776), want)
	assert.Equal(t, want, cqeAt)
	var wc [1]WC
	require.Equal(t, 1, p.b.PollCQ(p.qb.SendCQ, wc[:]))
	assert.Equal(t, WCBindMW, wc[0].Opcode)
	// B wrote the window's context back (64 bytes) and the CQE (64).
	assert.Equal(t, int64(MKeyContextBytes+CQEBytes), p.b.PCIe.WrittenBytes)
}
