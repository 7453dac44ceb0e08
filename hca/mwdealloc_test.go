package hca

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeallocBoundWindow: ibv_dealloc_mw of a bound type 2 window
// succeeds (ibv_alloc_mw(3): it "unbinds in case was previously bound";
// rdma-unit-test MwType2AdvancedTest.Dealloc). Before it the region cannot
// be deregistered (a window is bound in it); after it a WRITE with the
// window's last key, which passed just before, fails with REM_ACCESS_ERR
// and writes nothing, a bind naming the window completes with MW_BIND_ERR,
// a second dealloc is ENOENT, and the region may be deregistered.
func TestDeallocBoundWindow(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	bind, key := p.bindWR(0, 4096, AccessRemoteWrite)
	p.a.Mem.Write(p.bufA, fill(64, 9))
	w := SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 64, LKey: p.mrA.LKey,
		RemoteAddr: p.bufB + 128, RKey: key}
	before := make([]byte, 4096)
	rebind := bind
	rebind.Bind.MWKey, rebind.Bind.NewKey = key, IncRKey(key)
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: bind},
		mwStep{d: p.a, q: p.qa, wr: w},
		mwStep{d: p.a, q: p.qa, wr: w, pre: func() {
			require.ErrorIs(t, p.b.Keys.Deregister(p.mr.LKey), syscall.EINVAL, "the window holds the region")
			require.NoError(t, p.b.DeallocMW(p.mw))
			assert.ErrorIs(t, p.b.DeallocMW(p.mw), syscall.ENOENT)
			p.b.Mem.Write(p.bufB, make([]byte, 4096))
		}},
		mwStep{d: p.b, q: p.qb2, wr: rebind, pre: func() { p.b.Mem.Read(p.bufB, before) }},
	)
	assert.Equal(t, WCSuccess, wcs[0].Status)
	assert.Equal(t, WCSuccess, wcs[1].Status, "the window serves before the dealloc")
	assert.Equal(t, WCRemAccessErr, wcs[2].Status, "and its key names nothing after")
	assert.Equal(t, make([]byte, 4096), before, "nothing written through the freed window")
	assert.Equal(t, WCMWBindErr, wcs[3].Status)
	assert.Equal(t, KeyInvalid, p.b.Keys.CheckRemote(key, p.qb.PD, p.qb.Num, AccessRemoteWrite, p.bufB, 64))
	assert.NoError(t, p.b.Keys.Deregister(p.mr.LKey), "no window bound in the region any more")
}

// TestDeallocUnboundAndType1Windows: an unbound type 2 window and a bound
// type 1 window are freed alike: afterwards neither key passes a remote
// check, and the region a type 1 window was bound in may be deregistered.
func TestDeallocUnboundAndType1Windows(t *testing.T) {
	var kt KeyTable
	mr := kt.Register(1, 0x10000, 8192, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	w2 := kt.AllocWindow(1, MWType2)
	require.True(t, kt.FreeWindow(w2))
	assert.False(t, kt.FreeWindow(w2), "freed already")
	_, ok := kt.Bind(BindReq{MWKey: w2, NewKey: IncRKey(w2), MRKey: mr.LKey, Addr: 0x10000, Length: 64, Access: AccessRemoteWrite}, 5, 1)
	assert.False(t, ok, "a freed window cannot be bound")

	w1 := kt.AllocWindow(1, MWType1)
	k1, ok := kt.Bind(BindReq{MWKey: w1, NewKey: IncRKey(w1), MRKey: mr.LKey, Addr: 0x10000, Length: 4096, Access: AccessRemoteWrite}, 5, 1)
	require.True(t, ok)
	require.Equal(t, KeyOK, kt.CheckRemote(k1, 1, 5, AccessRemoteWrite, 0x10000, 64))
	require.Error(t, kt.Deregister(mr.LKey))
	// Freed by any key of its index: the application's handle may hold
	// an older tag than the window's current one.
	require.True(t, kt.FreeWindow(w1))
	assert.Equal(t, KeyInvalid, kt.CheckRemote(k1, 1, 5, AccessRemoteWrite, 0x10000, 64))
	assert.False(t, kt.Invalidate(k1))
	assert.NoError(t, kt.Deregister(mr.LKey))
	assert.False(t, kt.FreeWindow(mr.LKey), "a region is no window")
}
