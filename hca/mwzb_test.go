package hca

import (
	"encoding/binary"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TestZeroBasedWindowCheck: a type 2 window bound zero-based
// (IBV_ACCESS_ZERO_BASED) to the region bytes [0x1100, 0x1200) takes
// remote addresses as offsets from its first byte: [0, 0x100) passes,
// checked as the region bytes they name; an offset past its end, one whose
// end passes it, one that wraps, and the region address of its first
// byte (an offset of 0x1100) and an offset that wraps round past 2^64
// are out of bounds. Its ZeroBase is 0x1100; a
// window bound with the same range without the flag keeps region
// addresses (ZeroBase 0), as does a region's own key. A type 1 window
// cannot be bound zero-based (o10-36.2.2).
func TestZeroBasedWindowCheck(t *testing.T) {
	const pd, qpn = 1, 0x100
	var kt KeyTable
	mr := kt.Register(pd, 0x1000, 0x1000, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead|AccessMWBind)
	mw := kt.AllocWindow(pd, MWType2)
	zb, ok := kt.Bind(BindReq{MWKey: mw, NewKey: IncRKey(mw), MRKey: mr.LKey, Addr: 0x1100, Length: 0x100,
		Access: AccessRemoteWrite | AccessZeroBased}, qpn, pd)
	require.True(t, ok)
	assert.Equal(t, uint64(0x1100), kt.ZeroBase(zb))
	for _, c := range []struct {
		addr, n uint64
		want    KeyResult
	}{
		{0, 0x100, KeyOK},
		{0xff, 1, KeyOK},
		{0x100, 1, KeyOutOfBounds},
		{0xf0, 0x11, KeyOutOfBounds},
		{1 << 63, 1, KeyOutOfBounds},
		{0x10, ^uint64(0) - 8, KeyOutOfBounds},
		{0x1100, 1, KeyOutOfBounds},
		// An offset that, added to the window's first byte, wraps round
		// past 2^64 (to 0x10, a byte before the window).
		{^uint64(0x1100) + 1 + 0x10, 1, KeyOutOfBounds},
	} {
		assert.Equal(t, c.want, kt.CheckRemote(zb, pd, qpn, AccessRemoteWrite, c.addr, c.n), "offset %#x len %#x", c.addr, c.n)
	}
	assert.Equal(t, KeyAccessDenied, kt.CheckRemote(zb, pd, qpn, AccessRemoteRead, 0, 1), "the window's rights, not the region's")

	va := kt.AllocWindow(pd, MWType2)
	vk, ok := kt.Bind(BindReq{MWKey: va, NewKey: IncRKey(va), MRKey: mr.LKey, Addr: 0x1100, Length: 0x100,
		Access: AccessRemoteWrite}, qpn, pd)
	require.True(t, ok)
	assert.Zero(t, kt.ZeroBase(vk))
	assert.Zero(t, kt.ZeroBase(mr.RKey))
	assert.Equal(t, KeyOK, kt.CheckRemote(vk, pd, qpn, AccessRemoteWrite, 0x1100, 0x100))
	assert.Equal(t, KeyOutOfBounds, kt.CheckRemote(vk, pd, qpn, AccessRemoteWrite, 0, 1))

	t1 := kt.AllocWindow(pd, MWType1)
	_, ok = kt.Bind(BindReq{MWKey: t1, NewKey: IncRKey(t1), MRKey: mr.LKey, Addr: 0x1100, Length: 0x100,
		Access: AccessRemoteWrite | AccessZeroBased}, qpn, pd)
	assert.False(t, ok, "type 1 zero-based")
	// Zero-based, the range must still lie in the region (the KLM entry
	// names region bytes).
	w2 := kt.AllocWindow(pd, MWType2)
	_, ok = kt.Bind(BindReq{MWKey: w2, NewKey: IncRKey(w2), MRKey: mr.LKey, Addr: 0x1f80, Length: 0x100,
		Access: AccessRemoteWrite | AccessZeroBased}, qpn, pd)
	assert.False(t, ok, "past the region's end")
}

// TestZeroBasedBindWQE: a zero-based bind's WQE carries start_addr 0 in
// its mkey context (libmlx5 set_umr_mkey_seg) and the first byte's region
// address in its KLM entry, from which it decodes back whole.
func TestZeroBasedBindWQE(t *testing.T) {
	b := BindReq{MWKey: 0x1234_56_07, NewKey: 0x1234_56_08, MRKey: 0x77_01, Addr: 0x1_0000_1000, Length: 0x2000,
		Access: AccessRemoteRead | AccessZeroBased}
	wr := SendWR{Opcode: WRBindMW, Signaled: true, Bind: b}
	var buf [maxWQEBBs * WQEBBBytes]byte
	n := EncodeSendWQE(buf[:], &wr, 5, 0x101, nil)
	assert.Zero(t, binary.BigEndian.Uint64(buf[bindMkeyOff+16:]), "start_addr")
	assert.Equal(t, b.Addr, binary.BigEndian.Uint64(buf[bindKLMOff+8:]), "the KLM's address")
	w, err := DecodeSendWQE(buf[:n])
	require.NoError(t, err)
	require.NotNil(t, w.Bind)
	assert.Equal(t, b, *w.Bind)
}

// TestZeroBasedWindowOnDevice: B binds a type 2 window zero-based over
// its bytes [bufB+8192, +4096) with write, read and atomic rights; A then
// writes 4096 bytes at remote address 0, reads 1000 at 3096, fetch-adds 5
// at 8, all through the window's key, and writes 100 at 4000 (past the
// window's 4096 bytes, inside the region). The first three land at, read
// from and add at bufB + 8192 + the offset; the last fails with
// REM_ACCESS_ERR and changes nothing. B's key_check trace for the WRITE
// names the address written (bufB + 8192), and its dma_write the same.
func TestZeroBasedWindowOnDevice(t *testing.T) {
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic | AccessMWBind
	p := newMWPair(t, acc)
	var rb traceRecorder
	p.b.AcceptHook(&rb)
	bind, key := p.bindWR(8192, 4096, AccessRemoteWrite|AccessRemoteRead|AccessRemoteAtomic|AccessZeroBased)
	src := fill(4096, 5)
	p.a.Mem.Write(p.bufA, src)
	base := p.bufB + 8192
	var before, after []byte
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: bind},
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 4096,
			LKey: p.mrA.LKey, RemoteAddr: 0, RKey: key}},
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 2, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA + 16384, Length: 1000,
			LKey: p.mrA.LKey, RemoteAddr: 3096, RKey: key}},
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 3, Opcode: WRFetchAdd, Signaled: true, LocalAddr: p.bufA + 32768,
			LKey: p.mrA.LKey, RemoteAddr: 8, RKey: key, CompareAdd: 5}},
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 4, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: 100,
			LKey: p.mrA.LKey, RemoteAddr: 4000, RKey: key},
			pre: func() { before = make([]byte, 1<<16); p.b.Mem.Read(p.bufB, before) }},
	)
	after = make([]byte, 1<<16)
	p.b.Mem.Read(p.bufB, after)
	for i := 0; i < 3; i++ {
		assert.Equal(t, WCSuccess, wcs[i].Status, "WR %d", i)
	}
	assert.Equal(t, WCSuccess, wcs[3].Status)
	// The WRITE landed at the window's first byte; the READ read from
	// offset 3096 of it (before the FETCH_ADD changed bytes 8..15).
	got := make([]byte, 1000)
	p.a.Mem.Read(p.bufA+16384, got)
	assert.Equal(t, src[3096:], got)
	orig := binary.LittleEndian.Uint64(src[8:])
	assert.Equal(t, orig, p.a.Mem.ReadU64(p.bufA+32768), "FETCH_ADD returns the original at offset 8")
	assert.Equal(t, orig+5, binary.LittleEndian.Uint64(before[8192+8:]), "and adds there")
	want := append([]byte(nil), src...)
	binary.LittleEndian.PutUint64(want[8:], orig+5)
	assert.Equal(t, want, before[8192:8192+4096])
	assert.Equal(t, WCRemAccessErr, wcs[4].Status)
	assert.Equal(t, before, after, "nothing written past the window")

	var checked, written []int64
	for _, e := range rb.events {
		k, _ := e.Int("key")
		if e.Kind == components.TraceKeyCheck && uint32(k) == key {
			if r, _ := e.Str("result"); r == KeyOK.String() {
				a, _ := e.Int("addr")
				checked = append(checked, a)
			}
		}
		if e.Kind == components.TraceDMAWrite {
			a, _ := e.Int("addr")
			written = append(written, a)
		}
	}
	require.NotEmpty(t, checked)
	assert.Equal(t, int64(base), checked[0], "the WRITE's check names the address it opens")
	assert.Contains(t, written, int64(base))
}

// TestZeroBasedBindVerbs: ibv_bind_mw refuses a zero-based type 1 bind
// (EINVAL, libmlx5 mlx5_bind_mw); a BIND_MW work request may carry the
// flag.
func TestZeroBasedBindVerbs(t *testing.T) {
	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	mw1, err := p.b.AllocMW(p.qb.PD, MWType1)
	require.NoError(t, err)
	err = p.b.BindMW(p.qb, mw1, MWBind{MR: p.mr, Addr: p.bufB, Length: 64, Access: AccessRemoteWrite | AccessZeroBased})
	assert.ErrorIs(t, err, syscall.EINVAL)
	bind, _ := p.bindWR(0, 64, AccessRemoteWrite|AccessZeroBased)
	assert.NoError(t, p.b.PostSend(p.qb, &bind))
	bind.Bind.Access |= AccessLocalWrite
	assert.ErrorIs(t, p.b.PostSend(p.qb, &bind), syscall.EINVAL)
}

// TestZeroBasedReadRetried: a READ through a zero-based window whose
// middle response is lost is asked again (implied NAK, by the ACK of a
// WRITE behind it); B answers the retried request, a duplicate, from the
// window's bytes at the offset it names as it did the first: A gets
// bufB + 8192 + [0, 12288) whole.
func TestZeroBasedReadRetried(t *testing.T) {
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessMWBind
	p := newMWPair(t, acc)
	data := fill(3*4096, 11)
	p.b.Mem.Write(p.bufB+8192, data)
	bind, key := p.bindWR(8192, 3*4096, AccessRemoteRead|AccessRemoteWrite|AccessZeroBased)
	lose := tapPort(p.a)
	lose.drop = func(pkt *ib.Packet) bool {
		return pkt.Opcode == ib.RDMAReadResponseMiddle && lose.dropped == 0
	}
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: bind},
		mwStep{d: p.a, q: p.qa, verb: func() error {
			if err := p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA,
				Length: uint32(len(data)), LKey: p.mrA.LKey, RemoteAddr: 0, RKey: key}); err != nil {
				return err
			}
			return p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA + 0x8000,
				Length: 64, LKey: p.mrA.LKey, RemoteAddr: 0, RKey: key})
		}},
	)
	assert.Equal(t, WCSuccess, wcs[1].Status)
	assert.Equal(t, uint64(1), wcs[1].WRID)
	assert.Equal(t, 1, lose.dropped)
	assert.Equal(t, int64(1), p.qa.Requester().Retries)
	got := make([]byte, len(data))
	p.a.Mem.Read(p.bufA, got)
	assert.Equal(t, data, got)
}
