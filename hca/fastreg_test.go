package hca

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// frPair is an mwPair with a fast-registration region on B of room for
// 16 pages, and more connected QP pairs (a remote access error puts both
// ends of a pair in ERR; a fast-registration region serves every QP of
// its PD, so a later step of a script continues on a fresh pair).
type frPair struct {
	*mwPair
	fr       MR // FREE at first
	qa3, qb3 *QP
	qa4, qb4 *QP
}

func newFRPair(t *testing.T) *frPair {
	p := &frPair{mwPair: newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)}
	var err error
	p.fr, err = p.b.AllocMR(p.qb.PD, 16)
	require.NoError(t, err)
	p.qa3, p.qb3 = p.extraPair(t, 0x50, 0x60)
	p.qa4, p.qb4 = p.extraPair(t, 0x70, 0x80)
	return p
}

func (p *frPair) extraPair(t *testing.T, psnA, psnB uint32) (*QP, *QP) {
	qa := p.a.CreateQP(p.qa.PD, p.qa.SendCQ, p.qa.RecvCQ, 64, 64)
	qb := p.b.CreateQP(p.qb.PD, p.b.CreateCQ(64), p.b.CreateCQ(64), 64, 64)
	require.NoError(t, ConnectRC(qa, qb, 4096, psnA, psnB))
	return qa, qb
}

// regWR is a signaled REG_MR of p's fast-registration region with key
// key over [bufB+off, +n) at 4 KiB pages, rights acc.
func (p *frPair) regWR(key uint32, off, n uint64, acc int) SendWR {
	return SendWR{ID: 20, Opcode: WRRegMR, Signaled: true,
		Reg: &RegReq{Key: key, Addr: p.bufB + off, Length: n, PageBytes: 4096, Access: acc}}
}

func (p *frPair) write(id uint64, q *QP, off uint64, n uint32, key uint32) mwStep {
	return mwStep{d: p.a, q: q, wr: SendWR{ID: id, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: n,
		LKey: p.mrA.LKey, RemoteAddr: p.bufB + off, RKey: key}}
}

// TestFastRegCycle runs the fast-register / invalidate cycle an NVMe-oF
// or iSER target runs per I/O, each outcome from the rules:
//   - ib_alloc_mr leaves the key FREE: a WRITE with it before any REG_MR
//     is refused (the R_Key names no valid region: the responder's R_Key
//     check, rxe_resp.c RESPST_CHK_RKEY, NAK 0x62 and REM_ACCESS_ERR at
//     the requester, ib-facts.md §6 "Remote key checks", "On R_Key
//     violation").
//   - REG_MR with variant k1 maps [bufB, +8 KiB) with remote write and
//     read: a WRITE and a READ with k1 inside it succeed and move the
//     bytes; it completes with IBV_WC_REG_MR.
//   - LOCAL_INV of k1 frees the region: a WRITE with k1 is then refused.
//   - A new REG_MR with variant k2 = k1 + 1 (ib_inc_rkey) maps it again:
//     a WRITE with k1 is refused (the key's variant no longer matches,
//     the point of the variant), one with k2 succeeds.
func TestFastRegCycle(t *testing.T) {
	p := newFRPair(t)
	k0 := p.fr.LKey
	k1 := IncRKey(k0)
	k2 := IncRKey(k1)
	require.NotEqual(t, k0>>8, p.mr.LKey>>8)
	src := fill(4096, 5)
	p.a.Mem.Write(p.bufA, src)
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead
	wcs := p.script(t,
		p.write(1, p.qa4, 0, 64, k0), // FREE key
		mwStep{d: p.b, q: p.qb, wr: p.regWR(k1, 0, 8192, acc)},
		p.write(2, p.qa, 4096, 4096, k1),
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 3, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA + 16384, Length: 1000,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB + 4096 + 100, RKey: k1}},
		mwStep{d: p.b, q: p.qb, wr: SendWR{ID: 4, Opcode: WRLocalInv, Signaled: true, InvalidateRKey: k1}},
		p.write(5, p.qa, 0, 64, k1),
		mwStep{d: p.b, q: p.qb2, wr: p.regWR(k2, 0, 8192, acc)},
		p.write(6, p.qa2, 0, 64, k1),
		p.write(7, p.qa3, 0, 64, k2),
	)
	assert.Equal(t, WCRemAccessErr, wcs[0].Status, "a FREE key")
	assert.Equal(t, WC{WRID: 20, Status: WCSuccess, Opcode: WCRegMR, QPN: p.qb.Num}, wcs[1])
	assert.Equal(t, WCSuccess, wcs[2].Status)
	got := make([]byte, 4096)
	p.b.Mem.Read(p.bufB+4096, got)
	assert.Equal(t, src, got, "the WRITE through k1 landed")
	assert.Equal(t, WCSuccess, wcs[3].Status)
	p.a.Mem.Read(p.bufA+16384, got[:1000])
	assert.Equal(t, src[100:1100], got[:1000], "the READ through k1 returned B's bytes")
	assert.Equal(t, WC{WRID: 4, Status: WCSuccess, Opcode: WCLocalInv, QPN: p.qb.Num}, wcs[4])
	assert.Equal(t, WCRemAccessErr, wcs[5].Status, "k1 after LOCAL_INV")
	assert.Equal(t, WC{WRID: 20, Status: WCSuccess, Opcode: WCRegMR, QPN: p.qb2.Num}, wcs[6])
	assert.Equal(t, WCRemAccessErr, wcs[7].Status, "k1 after the region is registered again with k2")
	assert.Equal(t, WCSuccess, wcs[8].Status, "k2")
}

// TestFastRegBoundsAndAccess: a registration grants its rights over its
// range only (the R_Key check's access and bounds rules, rxe_resp.c
// RESPST_CHK_RKEY, ib-facts.md "Remote key checks"): [bufB+4 KiB, +4 KiB) with remote read only refuses a
// WRITE inside it (access), a READ one byte past its end (bounds; the
// bytes are inside B's buffer, so only the registration's bounds refuse
// it), and serves a READ inside it.
func TestFastRegBoundsAndAccess(t *testing.T) {
	p := newFRPair(t)
	k1 := IncRKey(p.fr.LKey)
	read := func(id uint64, q *QP, off uint64, n uint32) mwStep {
		return mwStep{d: p.a, q: q, wr: SendWR{ID: id, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufA, Length: n,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB + off, RKey: k1}}
	}
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: p.regWR(k1, 4096, 4096, AccessRemoteRead)},
		p.write(1, p.qa, 4096, 64, k1),
		read(2, p.qa2, 8192-99, 100),
		read(3, p.qa3, 4096, 4096),
	)
	assert.Equal(t, WCSuccess, wcs[0].Status)
	assert.Equal(t, WCRemAccessErr, wcs[1].Status, "no remote write")
	assert.Equal(t, WCRemAccessErr, wcs[2].Status, "past the end")
	assert.Equal(t, WCSuccess, wcs[3].Status, "inside")
}

// TestFastRegRules checks KeyTable.FastReg's rules one by one on a
// FREE region of pd 1 with room for 4 pages (of 4 KiB): each refusal
// leaves the entry as it was; the last, accepted, makes the key valid
// with the request's range and rights.
func TestFastRegRules(t *testing.T) {
	var kt KeyTable
	plain := kt.Register(1, 0x10000, 4096, AccessLocalWrite)
	fr := kt.AllocFastReg(1, 4)
	k := IncRKey(fr.LKey)
	ok := RegReq{Key: k, Addr: 0x20000, Length: 4 * 4096, PageBytes: 4096, Access: AccessRemoteRead}
	assert.Equal(t, KeyInvalid, kt.CheckRemote(fr.LKey, 1, 0, 0, 0, 0), "FREE at allocation")
	for _, c := range []struct {
		name string
		req  RegReq
		pd   uint32
	}{
		{"not a fast-registration region", RegReq{Key: plain.LKey, Addr: 0x10000, Length: 4096, PageBytes: 4096}, 1},
		{"another PD", ok, 2},
		// 4 pages from a page's second byte touch 5 pages.
		{"more pages than max_num_sg", RegReq{Key: k, Addr: 0x20001, Length: 4 * 4096, PageBytes: 4096}, 1},
		{"wraps past 2^64", RegReq{Key: k, Addr: 1<<64 - 4096, Length: 8192, PageBytes: 4096}, 1},
		{"no such index", RegReq{Key: 99 << 8, Length: 1, PageBytes: 4096}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.False(t, kt.FastReg(c.req, c.pd, 12))
			assert.Equal(t, KeyInvalid, kt.CheckRemote(k, 1, 0, AccessRemoteRead, 0x20000, 1))
		})
	}
	require.True(t, kt.FastReg(ok, 1, 12))
	assert.Equal(t, KeyOK, kt.CheckRemote(k, 1, 0, AccessRemoteRead, 0x20000, 4*4096))
	assert.Equal(t, KeyInvalid, kt.CheckRemote(fr.LKey, 1, 0, AccessRemoteRead, 0x20000, 1), "the old variant")
	// Registered (VALID), it must be invalidated before it is registered
	// again (rxe_reg_fast_mr: "user can only register MR in free state").
	again := ok
	again.Key = IncRKey(k)
	assert.False(t, kt.FastReg(again, 1, 12), "a VALID region")
	assert.Equal(t, KeyOK, kt.CheckRemote(k, 1, 0, AccessRemoteRead, 0x20000, 1), "still the first registration")
	_, _, inv := kt.invalidateRegion(again.Key)
	assert.False(t, inv, "a stale variant does not invalidate")
	_, _, inv = kt.invalidateRegion(plain.LKey)
	assert.False(t, inv, "a region not of fast registration is not invalidated")
	addr, n, inv := kt.invalidateRegion(k)
	require.True(t, inv)
	assert.Equal(t, [2]uint64{0x20000, 4 * 4096}, [2]uint64{addr, n})
	assert.True(t, kt.FastReg(again, 1, 12))
}

// TestFastRegErrorCompletes: a REG_MR the rules refuse completes with
// LOC_QP_OP_ERR (rxe do_local_ops: a failed rxe_reg_fast_mr), the QP goes
// to ERR and the WR posted behind it is flushed; the region stays as it
// was. On qb: REG_MR k1 (accepted), REG_MR k2 of the same region, still
// VALID (never invalidated: refused), LOCAL_INV k1 (flushed). On qb2: a
// REG_MR of a second FREE region, mapping one byte more than its 16
// pages hold (64 KiB + 1 byte touch 17 pages: refused).
func TestFastRegErrorCompletes(t *testing.T) {
	p := newFRPair(t)
	fr2, err := p.b.AllocMR(p.qb.PD, 16)
	require.NoError(t, err)
	k1 := IncRKey(p.fr.LKey)
	k2 := IncRKey(k1)
	acc := AccessRemoteWrite | AccessLocalWrite
	reg := func(id uint64, key uint32, n uint64) *SendWR {
		return &SendWR{ID: id, Opcode: WRRegMR, Signaled: true,
			Reg: &RegReq{Key: key, Addr: p.bufB, Length: n, PageBytes: 4096, Access: acc}}
	}
	require.NoError(t, p.b.PostSend(p.qb, reg(20, k1, 4096)))
	require.NoError(t, p.b.PostSend(p.qb, reg(21, k2, 4096)))
	require.NoError(t, p.b.PostSend(p.qb, &SendWR{ID: 22, Opcode: WRLocalInv, Signaled: true, InvalidateRKey: k1}))
	require.NoError(t, p.b.PostSend(p.qb2, reg(23, IncRKey(fr2.LKey), 16*4096+1)))
	var got []WC
	p.runUntil(t, func() bool {
		var wc [4]WC
		got = append(got, wc[:p.b.PollCQ(p.qb.SendCQ, wc[:])]...)
		got = append(got, wc[:p.b.PollCQ(p.qb2.SendCQ, wc[:])]...)
		return len(got) == 4
	})
	require.Len(t, got, 4)
	byID := map[uint64]WC{}
	for _, w := range got {
		byID[w.WRID] = w
	}
	assert.Equal(t, WC{WRID: 20, Status: WCSuccess, Opcode: WCRegMR, QPN: p.qb.Num}, byID[20])
	assert.Equal(t, WC{WRID: 21, Status: WCLocQPOpErr, Opcode: WCRegMR, QPN: p.qb.Num}, byID[21])
	assert.Equal(t, WCWRFlushErr, byID[22].Status)
	assert.Equal(t, WC{WRID: 23, Status: WCLocQPOpErr, Opcode: WCRegMR, QPN: p.qb2.Num}, byID[23])
	assert.Equal(t, QPErr, p.qb.State)
	assert.Equal(t, QPErr, p.qb2.State)
	assert.Equal(t, KeyOK, p.b.Keys.CheckRemote(k1, p.qb.PD, p.qb.Num, AccessRemoteWrite, p.bufB, 4096), "k1's registration stands")
	assert.Equal(t, KeyInvalid, p.b.Keys.CheckRemote(IncRKey(fr2.LKey), p.qb.PD, p.qb.Num, AccessRemoteWrite, p.bufB, 1), "fr2 still FREE")
}

// TestSendWithInvalidateOfFastReg: a SEND_WITH_INV naming the region's
// key (the responder invalidates the R_Key the IETH carries, ib-facts.md
// IETH and SEND_LAST_WITH_INVALIDATE; rxe_resp.c invalidate_rkey) frees it: B's receive completes with IBV_WC_WITH_INV and the
// key, and a WRITE with it is refused after.
func TestSendWithInvalidateOfFastReg(t *testing.T) {
	p := newFRPair(t)
	k1 := IncRKey(p.fr.LKey)
	require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 50, Addr: p.bufB + 32768, Length: 64, LKey: p.mr.LKey}))
	wcs := p.script(t,
		mwStep{d: p.b, q: p.qb, wr: p.regWR(k1, 0, 4096, AccessLocalWrite|AccessRemoteWrite)},
		p.write(1, p.qa, 0, 64, k1),
		mwStep{d: p.a, q: p.qa, wr: SendWR{ID: 2, Opcode: WRSendInv, Signaled: true, LocalAddr: p.bufA, Length: 8,
			LKey: p.mrA.LKey, InvalidateRKey: k1}},
		p.write(3, p.qa, 0, 64, k1),
	)
	assert.Equal(t, WCSuccess, wcs[1].Status)
	assert.Equal(t, WCSuccess, wcs[2].Status)
	assert.Equal(t, WCRemAccessErr, wcs[3].Status, "invalidated by the SEND")
	assert.Equal(t, WC{WRID: 50, Status: WCSuccess, Opcode: WCRecv, ByteLen: 8, QPN: p.qb.Num,
		HasInv: true, InvalidatedRKey: k1}, p.recvB(t, p.qb))
}

// TestRegMRWQE: the REG_MR WQE is mlx5's UMR (opcode 0x25) of ctrl 16 +
// UMR ctrl 48 + mkey context 64 bytes and the page list: up to 8 pages
// (64 bytes of 8-byte MTT entries, MLX5_IB_SQ_UMR_INLINE_THRESHOLD) inline
// in 64 bytes, 192 bytes in all; more through a 16-byte pointer, 144.
// Both are 3 WQEBBs. Decoding gives back the registration, and tells it
// from a bind (the same opcode).
func TestRegMRWQE(t *testing.T) {
	for _, c := range []struct {
		pages  uint64
		inline bool
		bytes  int
	}{{1, true, 192}, {8, true, 192}, {9, false, 144}, {512, false, 144}} {
		r := RegReq{Key: 0x1234_56, Addr: 0x40000, Length: c.pages * 4096, PageBytes: 4096, Access: AccessRemoteWrite | AccessLocalWrite}
		wr := SendWR{Opcode: WRRegMR, Reg: &r, Signaled: true}
		assert.Equal(t, c.bytes, wqeBytes(&wr), "%d pages", c.pages)
		assert.Equal(t, 3, WQEBBs(&wr))
		var buf [maxWQEBBs * WQEBBBytes]byte
		n := EncodeSendWQE(buf[:], &wr, 7, 0x99, nil)
		require.Equal(t, 3*WQEBBBytes, n)
		assert.Equal(t, uint8(mlx5OpUMR), buf[3])
		assert.Equal(t, c.inline, buf[dsBytes]&umrInline != 0)
		w, err := DecodeSendWQE(buf[:n])
		require.NoError(t, err)
		assert.Equal(t, WRRegMR, w.Opcode)
		assert.Equal(t, r, w.reg())
		assert.Nil(t, w.Bind)
	}
	bind := SendWR{Opcode: WRBindMW, Bind: BindReq{MWKey: 0x500, NewKey: 0x501, MRKey: 0x300, Addr: 0x1000, Length: 64, Access: AccessRemoteWrite}}
	var buf [maxWQEBBs * WQEBBBytes]byte
	n := EncodeSendWQE(buf[:], &bind, 1, 0x99, nil)
	w, err := DecodeSendWQE(buf[:n])
	require.NoError(t, err)
	assert.Equal(t, WRBindMW, w.Opcode, "a bind is still a bind")
}

// TestRegMRLatencyDerived posts a 2-page REG_MR (inline page list) and a
// 16-page one (page list read from host memory) on an idle B and derives
// each one's CQE time, as TestBindLatencyDerived does a bind's.
//
// Both WQEs are 3 WQEBBs (192 and 144 bytes), under hca.blueflame_bytes
// 256: they reach the HCA with the doorbell, no fetch. Then:
//
//	CPU post 60 ns + BlueFlame MMIO 308 ns + doorbell stage 20 ns
//	+ WQE parse 3 × 10 ns
//	+ the region's MKey context, a cold key-cache miss: 549.857 ns
//	  (TestColdKeyMissIsAContextRead: lookup 10 ns, request TLP 1.524,
//	  read latency 533, 84-byte completion 5.333)
//	+ CQE stage 10 ns + the CQE's write, 88 B × 63.4765625 ps = 5.586 ns,
//	  + write latency 200 ns
//
// = 1 183 443 ps for 2 pages. The 16-page list (128 bytes) is read
// beside the context: its request goes at the lookup's start (0 to 1.524
// ns), its two 64-byte completions (read_completion_bytes 64, 84 B each,
// 5.333 ns) are due at 534.524 ns; the first goes then, the second would
// overlap the context's completion, booked first (544.524 to 549.857:
// its request left after the 10 ns lookup), so it follows it: the list is
// in at 555.190 ns, 5.333 ns after the context. The UMR then writes, at
// the same instant, the 64-byte MKey context (88 B on the link, 5.586
// ns) and 16 × 8 = 128 bytes of MTT entries (152 B, 9.649 ns) upstream:
// 15.235 ns of link, past the CQE's issue 10 ns later, so the CQE's write
// waits 5.235 ns: 1 183 443 + 5 333 + 5 235 = 1 194 011 ps. The 2-page
// MTT write (16 + 24 = 40 B, 2.540 ns) ends at 8.126 ns, before it.
func TestRegMRLatencyDerived(t *testing.T) {
	cfg := Defaults()
	require.True(t, cfg.PreferBlueFlame)
	require.Equal(t, 256, cfg.BlueFlameBytes)
	ns := func(f float64) ib.PS { return ib.PS(f * 1000) }
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	pcie := NewPCIe(cfg.PCIe)
	base := ns(cfg.Host.PostNS) + ns(cfg.PCIe.MMIOLatencyNS) + ib.PS(cfg.Doorbell.LatencyCycles)*cyc +
		3*ib.PS(cfg.WQEFetch.LatencyCycles)*cyc + 549_857 + ib.PS(cfg.CQE.LatencyCycles)*cyc
	cqeWrite := pcie.SerPS(CQEBytes+cfg.PCIe.TLPOverheadBytes) + ns(cfg.PCIe.WriteLatencyNS)
	mkeyW := pcie.SerPS(MKeyContextBytes + cfg.PCIe.TLPOverheadBytes)
	mtt16 := pcie.SerPS(16*MTTEntryBytes + cfg.PCIe.TLPOverheadBytes)
	require.Equal(t, ib.PS(5586), mkeyW)
	require.Equal(t, ib.PS(9649), mtt16)
	wait16 := mkeyW + mtt16 - ib.PS(cfg.CQE.LatencyCycles)*cyc                            // the CQE waits behind the UMR's writes
	list16 := pcie.SerPS(cfg.PCIe.ReadCompletionBytes + cfg.PCIe.CompletionOverheadBytes) // the list's second completion
	require.Equal(t, ib.PS(5333), list16)
	for _, c := range []struct {
		pages uint64
		want  ib.PS
		lit   ib.PS
		read  int64 // bytes B reads: the context, and the list when not inline
	}{
		{2, base + cqeWrite, 1_183_443, MKeyContextBytes},
		{16, base + list16 + wait16 + cqeWrite, 1_194_011, MKeyContextBytes + 16*MTTEntryBytes},
	} {
		p := newFRPair(t)
		wr := p.regWR(IncRKey(p.fr.LKey), 0, c.pages*4096, AccessRemoteWrite|AccessLocalWrite)
		require.Equal(t, 3, WQEBBs(&wr))
		var cqeAt ib.PS
		p.b.OnCQE = func(_ *CQ, now ib.PS) { cqeAt = now; p.s.Stop() }
		require.NoError(t, p.b.PostSend(p.qb, &wr))
		p.s.StopAt(ib.Millisecond)
		require.NoError(t, p.s.Run())
		assert.Equal(t, c.lit, c.want, "%d pages", c.pages)
		assert.Equal(t, c.want, cqeAt, "%d pages", c.pages)
		var wc [1]WC
		require.Equal(t, 1, p.b.PollCQ(p.qb.SendCQ, wc[:]))
		assert.Equal(t, WC{WRID: 20, Status: WCSuccess, Opcode: WCRegMR, QPN: p.qb.Num}, wc[0])
		assert.Equal(t, c.read, p.b.PCIe.ReadBytes)
		// The context, the MTT entries, the CQE.
		assert.Equal(t, int64(MKeyContextBytes+int(c.pages)*MTTEntryBytes+CQEBytes), p.b.PCIe.WrittenBytes)
	}
}

// TestAllocMRErrors: max_num_sg 0 is EINVAL, as is a REG_MR whose page
// size is not hca.mtt_page_bytes or whose rights are not a region's.
func TestAllocMRErrors(t *testing.T) {
	p := newFRPair(t)
	_, err := p.b.AllocMR(p.qb.PD, 0)
	assert.ErrorContains(t, err, "max_num_sg 0")
	wr := p.regWR(IncRKey(p.fr.LKey), 0, 4096, AccessRemoteWrite)
	wr.Reg.PageBytes = 8192
	assert.ErrorContains(t, p.b.PostSend(p.qb, &wr), "page size 8192")
	wr = p.regWR(IncRKey(p.fr.LKey), 0, 4096, AccessZeroBased)
	assert.ErrorContains(t, p.b.PostSend(p.qb, &wr), "REG_MR with access 0x20")
	assert.ErrorContains(t, p.b.PostSend(p.qb, &SendWR{Opcode: WRRegMR}), "without a registration")
}

// TestRegMRThenUseOnSameQueue: the WRITE posted right behind a REG_MR on
// the same send queue, from the region it maps (its L_Key k1), runs
// after the registration (the send queue executes in order; mlx5 puts
// the small fence on the WQE after a UMR, fence mode 1, for this): it
// succeeds and moves B's bytes to A.
func TestRegMRThenUseOnSameQueue(t *testing.T) {
	p := newFRPair(t)
	k1 := IncRKey(p.fr.LKey)
	src := fill(4096, 11)
	p.b.Mem.Write(p.bufB, src)
	reg := p.regWR(k1, 0, 4096, AccessLocalWrite)
	require.NoError(t, p.b.PostSend(p.qb, &reg))
	require.NoError(t, p.b.PostSend(p.qb, &SendWR{ID: 30, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufB, Length: 4096,
		LKey: k1, RemoteAddr: p.bufA, RKey: p.mrA.RKey}))
	var wcs [2]WC
	n := 0
	p.runUntil(t, func() bool { n += p.b.PollCQ(p.qb.SendCQ, wcs[n:]); return n == 2 })
	require.Equal(t, 2, n)
	assert.Equal(t, WCSuccess, wcs[0].Status)
	assert.Equal(t, WC{WRID: 30, Status: WCSuccess, Opcode: WCRDMAWrite, ByteLen: 4096, QPN: p.qb.Num}, wcs[1])
	got := make([]byte, 4096)
	p.a.Mem.Read(p.bufA, got)
	assert.Equal(t, src, got)
}

// TestLocalInvThenUseOnSameQueue: the converse. A WRITE posted right
// behind a LOCAL_INV of its own L_Key runs after the invalidation: its
// key names no valid region then, so it completes with LOC_PROT_ERR (an
// invalid L_Key is a local protection error, as the model's other L_Key
// failures, rxe_comp.c) and sends nothing.
// The LOCAL_INV is fenced behind an RDMA READ, so it waits at the
// requester for the READ's response (a round trip) while the WRITE
// behind it is fetched and decoded, its key still valid then: only the
// small fence (a re-check when the WRITE reaches the requester) catches
// it.
func TestLocalInvThenUseOnSameQueue(t *testing.T) {
	p := newFRPair(t)
	k1 := IncRKey(p.fr.LKey)
	rx := p.a.Counters.PayloadRx
	none := mwStep{d: p.b, q: p.qb, verb: func() error { return nil }} // waits for the next CQE
	wcs := p.script(t, mwStep{d: p.b, q: p.qb, wr: p.regWR(k1, 0, 4096, AccessLocalWrite)}, mwStep{d: p.b, q: p.qb, verb: func() error {
		if err := p.b.PostSend(p.qb, &SendWR{ID: 30, Opcode: WRRDMARead, Signaled: true, LocalAddr: p.bufB + 32768, Length: 8,
			LKey: p.mr.LKey, RemoteAddr: p.bufA, RKey: p.mrA.RKey}); err != nil {
			return err
		}
		if err := p.b.PostSend(p.qb, &SendWR{ID: 31, Opcode: WRLocalInv, Signaled: true, Fence: true, InvalidateRKey: k1}); err != nil {
			return err
		}
		return p.b.PostSend(p.qb, &SendWR{ID: 32, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufB, Length: 4096,
			LKey: k1, RemoteAddr: p.bufA, RKey: p.mrA.RKey})
	}}, none, none)
	require.Equal(t, WCSuccess, wcs[0].Status)
	require.Equal(t, WCSuccess, wcs[1].Status, "the READ")
	require.Equal(t, WC{WRID: 31, Status: WCSuccess, Opcode: WCLocalInv, QPN: p.qb.Num}, wcs[2])
	assert.Equal(t, uint64(32), wcs[3].WRID)
	assert.Equal(t, WCLocProtErr, wcs[3].Status)
	assert.Equal(t, rx, p.a.Counters.PayloadRx, "nothing written to A")
}

// TestLRUDrop: dropping an entry frees its slot (the next miss fills it
// without evicting) and keeps the use order of the others: with capacity
// 3 holding 1, 2, 3 (3 most recent), dropping 2 then missing 4 evicts
// nothing; a fifth tag then evicts the least recently used, 1.
func TestLRUDrop(t *testing.T) {
	c := newLRU[uint64](3)
	for _, tag := range []uint64{1, 2, 3} {
		c.lookup(tag)
	}
	assert.True(t, c.drop(2))
	assert.False(t, c.drop(2), "gone")
	hit, _ := c.lookup(4)
	assert.False(t, hit)
	for _, tag := range []uint64{1, 3, 4} {
		_, ok := c.slot[tag]
		assert.True(t, ok, "tag %d kept", tag)
	}
	c.lookup(5) // evicts 1, the least recently used
	_, ok := c.slot[1]
	assert.False(t, ok)
	for _, tag := range []uint64{3, 4, 5} {
		_, ok := c.slot[tag]
		assert.True(t, ok, "tag %d kept", tag)
	}
	assert.Len(t, c.slots, 3)
}

// TestInvalidateDropsTranslations: with the MTT cache on, a WRITE through
// a fast-registered 2-page mapping leaves its 2 pages' translations
// cached at B; LOCAL_INV of the region takes them out (the next
// registration maps other pages to those addresses), and a page of B's
// other region stays.
func TestInvalidateDropsTranslations(t *testing.T) {
	for _, how := range []string{"LOCAL_INV", "dereg_mr"} {
		t.Run(how, func(t *testing.T) { invalidateDropsTranslations(t, how == "dereg_mr") })
	}
}

// invalidateDropsTranslations is TestInvalidateDropsTranslations with the
// region invalidated by LOCAL_INV or (dereg) deregistered while mapped.
func invalidateDropsTranslations(t *testing.T, dereg bool) {
	cfg := Defaults()
	cfg.MTTCacheEntries = 64
	p := &frPair{mwPair: &mwPair{pair: newPair(t, edrLink(), cfg, 1<<16)}}
	p.qa2, p.qb2 = p.a.CreateQP(p.qa.PD, p.qa.SendCQ, p.qa.RecvCQ, 64, 64), p.b.CreateQP(p.qb.PD, p.b.CreateCQ(64), p.b.CreateCQ(64), 64, 64)
	require.NoError(t, ConnectRC(p.qa2, p.qb2, 4096, 0x30, 0x40))
	p.mr = p.mrB
	var err error
	p.fr, err = p.b.AllocMR(p.qb.PD, 16)
	require.NoError(t, err)
	k1 := IncRKey(p.fr.LKey)
	// The FR mapping is B's buffer's first two pages; B's own region's
	// page 4 is written through its own key.
	steps := []mwStep{
		{d: p.b, q: p.qb, wr: p.regWR(k1, 0, 8192, AccessLocalWrite|AccessRemoteWrite)},
		p.write(1, p.qa, 0, 8192, k1),
		p.write(2, p.qa, 4*4096, 64, p.mrB.RKey),
	}
	if !dereg {
		steps = append(steps, mwStep{d: p.b, q: p.qb, wr: SendWR{ID: 3, Opcode: WRLocalInv, Signaled: true, InvalidateRKey: k1}})
	}
	wcs := p.script(t, steps...)
	for _, w := range wcs {
		require.Equal(t, WCSuccess, w.Status)
	}
	c := p.b.MTTCache()
	if dereg {
		_, ok := c.slot[p.bufB>>12]
		require.True(t, ok, "mapped and used: the first page is cached before the dereg")
		require.NoError(t, p.b.DeregMR(p.fr))
	}
	page := func(off uint64) bool { _, ok := c.slot[(p.bufB+off)>>12]; return ok }
	assert.False(t, page(0), "first page dropped")
	assert.False(t, page(4096), "second page dropped")
	assert.True(t, page(4*4096), "the other region's page kept")
}

// TestDeregFastReg: ib_dereg_mr of a region from ib_alloc_mr destroys its
// mkey by the handle, FREE or mapped (the handle names the MR, not the key
// variant a REG_MR gave it); a deregistered region is mapped by no later
// REG_MR and deregistered no second time (EINVAL, as a plain region's);
// while allocated it keeps its PD busy (ib_alloc_mr raises the PD's usecnt
// as a registration does), and a mapped one's translations leave the MTT
// cache as at an invalidation.
func TestDeregFastReg(t *testing.T) {
	var kt KeyTable
	free, mapped := kt.AllocFastReg(1, 4), kt.AllocFastReg(1, 4)
	_, busy := kt.inPD(1)
	assert.True(t, busy, "a FREE fast-registration region is in its PD")
	k := IncRKey(mapped.LKey)
	require.True(t, kt.FastReg(RegReq{Key: k, Addr: 0x20000, Length: 4096, PageBytes: 4096, Access: AccessRemoteRead}, 1, 12))

	require.NoError(t, kt.Deregister(free.LKey), "FREE")
	assert.False(t, kt.FastReg(RegReq{Key: IncRKey(free.LKey), Addr: 0x30000, Length: 4096, PageBytes: 4096}, 1, 12),
		"a deregistered region mapped again")
	assert.ErrorIs(t, kt.Deregister(free.LKey), syscall.EINVAL, "deregistered twice")

	addr, n, err := kt.deregister(mapped.LKey) // the handle: variant 0, not k
	require.NoError(t, err, "mapped")
	assert.Equal(t, [2]uint64{0x20000, 4096}, [2]uint64{addr, n}, "the mapping whose pages leave the MTT cache")
	assert.Equal(t, KeyInvalid, kt.CheckRemote(k, 1, 0, AccessRemoteRead, 0x20000, 1), "its key after dereg")
	_, busy = kt.inPD(1)
	assert.False(t, busy, "nothing left in the PD")

	// On a device: the PD is busy until the region is deregistered.
	s := components.NewSim()
	_, d := BackToBack(s, edrLink(), Defaults(), Defaults())
	pd := d.AllocPD()
	mr, err := d.AllocMR(pd, 4)
	require.NoError(t, err)
	assert.ErrorIs(t, d.DeallocPD(pd), syscall.EBUSY)
	require.NoError(t, d.DeregMR(mr))
	assert.NoError(t, d.DeallocPD(pd))
}
