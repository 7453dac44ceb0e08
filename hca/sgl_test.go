package hca

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

func TestSGLSliceCutsTheConcatenation(t *testing.T) {
	sgl := []SGE{{Addr: 0x1000, Length: 100, LKey: 1}, {Addr: 0x5000, Length: 0, LKey: 2}, {Addr: 0x9000, Length: 300, LKey: 3}}
	cases := []struct {
		name   string
		off, n uint64
		want   []SGE
	}{
		{"all", 0, 400, []SGE{{0x1000, 100, 1}, {0x9000, 300, 3}}},
		{"inside the first", 10, 20, []SGE{{0x100a, 20, 1}}},
		// bytes 90 … 189: the first element's last 10, the third's first 90
		{"across", 90, 100, []SGE{{0x105a, 10, 1}, {0x9000, 90, 3}}},
		{"from the third", 100, 300, []SGE{{0x9000, 300, 3}}},
		{"nothing", 50, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, sglSlice(nil, sgl, c.off, c.n))
		})
	}
}

func TestSendWQEWithSGLRoundTrip(t *testing.T) {
	sgl := func(n int) []SGE {
		s := make([]SGE, n)
		for i := range s {
			s[i] = SGE{Addr: 0x10_0000 + uint64(i)<<12 + uint64(i), Length: uint32(100 + i), LKey: 0x200 + uint32(i)}
		}
		return s
	}
	total := func(s []SGE) (n uint32) {
		for _, e := range s {
			n += e.Length
		}
		return n
	}
	cases := []struct {
		name string
		wr   SendWR
		// segments: ctrl 16, datagram 48 (UD), raddr 16 (not SEND), atomic
		// 16, and one 16-byte data segment per SGE (ib-facts §7).
		ds, bbs int
	}{
		{"WRITE 4 SGEs", SendWR{Opcode: WRRDMAWrite, SGL: sgl(4), RemoteAddr: 0x77, RKey: 9}, 1 + 1 + 4, 2},  // 96 B
		{"SEND 3 SGEs", SendWR{Opcode: WRSend, SGL: sgl(3)}, 1 + 3, 1},                                       // 64 B
		{"READ 30 SGEs", SendWR{Opcode: WRRDMARead, SGL: sgl(30), RemoteAddr: 0x88, RKey: 7}, 1 + 1 + 30, 8}, // 512 B
		{"UD SEND 30 SGEs", SendWR{Opcode: WRSend, UD: true, SGL: sgl(30), DLID: 5, RemoteQPN: 0x123, RemoteQKey: 0x11}, 1 + 3 + 30, 9},
		{"SEND no SGE", SendWR{Opcode: WRSend, SGL: []SGE{}}, 1 + 1, 1}, // one zero-byte segment
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wr := c.wr
			wr.Length = total(wr.SGL) // as PostSend gives EncodeSendWQE
			var buf [maxWQEBBs * WQEBBBytes]byte
			n := EncodeSendWQE(buf[:], &wr, 7, 0x1234, nil)
			assert.Equal(t, c.bbs*WQEBBBytes, n)
			assert.Equal(t, c.bbs, WQEBBs(&wr))
			assert.Equal(t, c.ds, int(buf[7]&0x3f), "ctrl DS count")
			assert.Equal(t, c.bbs, WQEBBsOfCtrl(buf[:]))
			w, err := decodeSendWQE(buf[:n], wr.UD, nil)
			require.NoError(t, err)
			assert.Equal(t, c.bbs, w.BBs)
			assert.Equal(t, total(wr.SGL), w.Length)
			if len(wr.SGL) > 1 {
				assert.Equal(t, wr.SGL, w.SGL)
				assert.Zero(t, w.LKey)
			} else {
				assert.Nil(t, w.SGL)
				assert.Equal(t, uint32(0), w.Length)
			}
			assert.Equal(t, wr.RemoteAddr, w.RemoteAddr)
			assert.Equal(t, wr.RemoteQPN, w.RemoteQPN)
		})
	}
}

func TestRecvWQEStrideAndRoundTrip(t *testing.T) {
	list := []SGE{{Addr: 0x1000, Length: 10, LKey: 0x301}, {Addr: 0x2000, Length: 20, LKey: 0x303}, {Addr: 0x3000, Length: 30, LKey: 0x305}}
	for _, c := range []struct {
		maxSGE, stride int // stride: 16 × the power of two at or above maxSGE
		sgl            []SGE
	}{
		{1, 16, list[:1]}, {2, 32, list[:2]}, {3, 64, list}, {4, 64, list}, {32, 512, list[:2]},
		{1, 16, []SGE{}}, {4, 64, []SGE{}}, // num_sge 0: the terminator alone
	} {
		buf := make([]byte, c.stride)
		EncodeRecvWQE(buf, &RecvWR{SGL: c.sgl})
		w := DecodeRecvWQE(buf)
		var n uint32
		for _, e := range c.sgl {
			n += e.Length
		}
		assert.Equal(t, n, w.Length)
		if len(c.sgl) == 1 {
			assert.Equal(t, RecvWQE{Length: 10, LKey: 0x301, Addr: 0x1000}, w)
		} else {
			require.NotNil(t, w.SGL)
			assert.Equal(t, c.sgl, w.SGL)
		}
		// The same first element as a single-element WR (SGL nil), into a
		// stride holding old bytes: a list of one, ended by the terminator.
		for i := range buf {
			buf[i] = 0xAB
		}
		EncodeRecvWQE(buf, &RecvWR{Addr: 0x1000, Length: 10, LKey: 0x301})
		assert.Equal(t, RecvWQE{Length: 10, LKey: 0x301, Addr: 0x1000}, DecodeRecvWQE(buf), "single element, stride %d", c.stride)
		s := components.NewSim()
		a, _ := BackToBack(s, edrLink(), Defaults(), Defaults())
		cq := a.CreateCQ(2)
		qp, err := a.CreateQPCap(a.AllocPD(), cq, cq, 8, 8, QPCap{MaxRecvSGE: c.maxSGE})
		require.NoError(t, err)
		assert.Equal(t, c.stride, qp.RecvStride())
	}
}

// sglPair is two hosts back to back with one RC QP each, B's receive WQEs
// taking maxRecvSGE elements, and a region of bufBytes on each.
func sglPair(t *testing.T, cfg Config, bufBytes, maxRecvSGE int) *pair {
	s := components.NewSim()
	a, b := BackToBack(s, edrLink(), cfg, cfg)
	p := &pair{s: s, a: a, b: b}
	pdA, pdB := a.AllocPD(), b.AllocPD()
	p.qa = a.CreateQP(pdA, a.CreateCQ(1024), a.CreateCQ(1024), 512, 512)
	var err error
	p.qb, err = b.CreateQPCap(pdB, b.CreateCQ(1024), b.CreateCQ(1024), 512, 512, QPCap{MaxRecvSGE: maxRecvSGE})
	require.NoError(t, err)
	require.NoError(t, ConnectRC(p.qa, p.qb, 4096, 0x10, 0x20))
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic
	p.bufA, p.bufB = a.Malloc(bufBytes), b.Malloc(bufBytes)
	p.mrA = a.RegMR(pdA, p.bufA, bufBytes, acc)
	p.mrB = b.RegMR(pdB, p.bufB, bufBytes, acc)
	return p
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*seed + 7)
	}
	return b
}

// writeTimeSGL posts a 256-byte WRITE from the start of A's region twice
// on a fresh pair (the first warms both key caches), as one SGE in the
// single-element fields when parts is 1, else as a list of parts equal
// parts. It returns, for the second, the time from its post to its
// payload visible at B and A's PCIe read requests for it, and checks the
// bytes landed.
func writeTimeSGL(t *testing.T, cfg Config, parts int) (ib.PS, int64) {
	const size = 256
	p := sglPair(t, cfg, 1<<16, 1)
	src := pattern(size, 3)
	p.a.Mem.Write(p.bufA, src)
	wr := SendWR{Opcode: WRRDMAWrite, Signaled: true, RemoteAddr: p.bufB, RKey: p.mrB.RKey}
	if parts == 1 {
		wr.LocalAddr, wr.Length, wr.LKey = p.bufA, size, p.mrA.LKey
	} else {
		for k := 0; k < parts; k++ {
			wr.SGL = append(wr.SGL, SGE{Addr: p.bufA + uint64(k*size/parts), Length: size / uint32(parts), LKey: p.mrA.LKey})
		}
	}
	var visible ib.PS
	p.b.OnMemWrite = func(_ uint64, _ int, now ib.PS) { visible = now }
	// The second WR is posted when the first's CQE is seen, in the run.
	var posted ib.PS
	var before int64
	done := 0
	require.NoError(t, p.a.PostSend(p.qa, &wr))
	p.runUntil(t, func() bool {
		var wc [1]WC
		if p.a.PollCQ(p.qa.SendCQ, wc[:]) == 0 {
			return false
		}
		require.Equal(t, WCSuccess, wc[0].Status)
		require.Equal(t, uint32(size), wc[0].ByteLen)
		if done++; done == 1 {
			posted, before = p.s.Now(), p.a.PCIe.ReadRequests
			require.NoError(t, p.a.PostSend(p.qa, &wr))
		}
		return done == 2
	})
	require.Equal(t, 2, done)
	took, reqs := visible-posted, p.a.PCIe.ReadRequests-before
	got := make([]byte, size)
	p.b.Mem.Read(p.bufB, got)
	require.Equal(t, src, got, "the bytes landed in order")
	return took, reqs
}

// TestFourSGEWriteCostsItsBlockKeysAndReads: a 256-byte WRITE from one
// region as 4 SGEs of 64 bytes and as one SGE, warm key caches, so both
// go by BlueFlame (96 and 48 bytes ≤ hca.blueflame_bytes) and each key
// lookup hits. From post to payload visible at B the 4-SGE one takes
// longer by exactly:
//
//   - one WQEBB more to parse (16 + 16 + 4 × 16 = 96 B is 2 WQEBBs, 48 B
//     is 1): wqe_fetch.latency_cycles;
//   - three L_Key lookups more, issued one interval apart after the
//     first: 3 × key_check.interval_cycles;
//   - the gather: part k is a DMA read of its own, issued k dma intervals
//     after the first; its one request (64 bytes inside a 512-byte MRRS
//     unit) leaves reqPS later and its one 84-byte completion (64 + 20)
//     arrives read_completion_latency later and queues behind the
//     previous part's on the downstream link. A single request of 256
//     bytes brings the same four completions back to back. So the last
//     part's completion ends at f3 with f_k = max(a_k, f_{k−1}) + c,
//     a_k = a_0 + k × interval, against a_0 + 4c for one SGE.
//
// With the defaults (2-cycle interval, c = 5.333 ns) the parts' requests
// come faster than the completions drain and the gather costs nothing
// but three request TLPs upstream; with a 10-cycle interval each part
// waits for its own issue: 3 × 10 − 3c = 14.001 ns more.
func TestFourSGEWriteCostsItsBlockKeysAndReads(t *testing.T) {
	for _, dmaII := range []int{2, 10} {
		cfg := Defaults()
		cfg.DMA.IntervalCycles = dmaII
		cyc := ib.CyclePS(cfg.CoreClockMHz)
		pcie := NewPCIe(cfg.PCIe)
		c := pcie.SerPS(cfg.PCIe.ReadCompletionBytes + cfg.PCIe.CompletionOverheadBytes)
		ii := ib.PS(dmaII) * cyc
		require.LessOrEqual(t, pcie.SerPS(cfg.PCIe.TLPOverheadBytes), ii, "requests do not queue upstream")
		var a0, f ib.PS
		for k := 0; k < 4; k++ {
			f = max(a0+ib.PS(k)*ii, f) + c
		}
		gather := f - (a0 + 4*c)
		want := ib.PS(cfg.WQEFetch.LatencyCycles)*cyc + 3*ib.PS(cfg.KeyCheck.IntervalCycles)*cyc + gather

		p1, r1 := writeTimeSGL(t, cfg, 1)
		p4, r4 := writeTimeSGL(t, cfg, 4)
		t.Logf("dma interval %d cycles: 1 SGE %d ps, 4 SGEs %d ps, derived difference %d ps", dmaII, p1, p4, want)
		assert.Equal(t, want, p4-p1, "dma interval %d cycles", dmaII)
		assert.Equal(t, int64(1), r1, "256 bytes at a page start: one request")
		assert.Equal(t, int64(4), r4, "four parts, each inside one MRRS unit")
	}
}

// TestBadLKeyInSecondSGEFailsTheWR: a WRITE whose second SGE lies past its
// region's end fails as a single SGE of the same 300 bytes past its
// region does: LOC_PROT_ERR at
// the requester, the QP in ERR, no payload read, nothing on the wire, no
// byte written at B. The same WR with the second SGE inside the region
// succeeds (the check can pass).
func TestBadLKeyInSecondSGEFailsTheWR(t *testing.T) {
	run := func(t *testing.T, mk func(p *pair) SendWR) (WC, *pair) {
		p := sglPair(t, Defaults(), 8192, 1)
		p.a.Mem.Write(p.bufA, pattern(8192, 5))
		wr := mk(p)
		wr.Opcode, wr.Signaled, wr.RemoteAddr, wr.RKey = WRRDMAWrite, true, p.bufB, p.mrB.RKey
		require.NoError(t, p.a.PostSend(p.qa, &wr))
		var wc [1]WC
		p.runUntil(t, func() bool { return p.a.PollCQ(p.qa.SendCQ, wc[:]) > 0 })
		return wc[0], p
	}
	list := func(second uint64) func(p *pair) SendWR {
		return func(p *pair) SendWR {
			return SendWR{SGL: []SGE{{Addr: p.bufA, Length: 100, LKey: p.mrA.LKey}, {Addr: p.bufA + second, Length: 200, LKey: p.mrA.LKey}}}
		}
	}
	single, ps := run(t, func(p *pair) SendWR { return SendWR{LocalAddr: p.bufA + 7900, Length: 300, LKey: p.mrA.LKey} })
	require.Equal(t, WCLocProtErr, single.Status)
	bad, p := run(t, list(8100)) // 8100 + 200 > 8192
	assert.Equal(t, single, bad, "the error CQE a single bad SGE gives")
	assert.Equal(t, QPErr, p.qa.State)
	// The cold key's 64-byte MKey context is the only read, as for one SGE.
	assert.Equal(t, int64(MKeyContextBytes), ps.a.PCIe.ReadBytes)
	assert.Equal(t, int64(MKeyContextBytes), p.a.PCIe.ReadBytes, "no payload read")
	assert.Zero(t, p.a.Counters.ReqPackets, "nothing on the wire")
	assert.Zero(t, p.b.Counters.PayloadRx, "no byte written")
	got := make([]byte, 8192)
	p.b.Mem.Read(p.bufB, got)
	assert.Equal(t, make([]byte, 8192), got)

	// An L_Key of another region's variant (a wrong key) in the second
	// SGE fails the same way.
	wrongKey, p2 := run(t, func(p *pair) SendWR {
		return SendWR{SGL: []SGE{{Addr: p.bufA, Length: 100, LKey: p.mrA.LKey}, {Addr: p.bufA + 100, Length: 200, LKey: p.mrA.LKey ^ 0x2}}}
	})
	assert.Equal(t, single, wrongKey)
	assert.Zero(t, p2.b.Counters.PayloadRx)

	good, pg := run(t, list(4000))
	assert.Equal(t, WCSuccess, good.Status)
	want := append(pattern(8192, 5)[:100:100], pattern(8192, 5)[4000:4200]...)
	got = make([]byte, 300)
	pg.b.Mem.Read(pg.bufB, got)
	assert.Equal(t, want, got)
}

// TestSendScattersAcrossThreeRecvSGEs: a 9000-byte SEND (three packets at
// MTU 4096: 4096, 4096, 808) into a receive WQE of three SGEs of 1000,
// 3000 and 6000 bytes in two regions lands byte for byte in order: bytes
// 0 … 999 in the first, 1000 … 3999 in the second, 4000 … 8999 in the
// first 5000 of the third; the first packet's bytes cross from the first
// element into the second, the second packet's from the second into the
// third. The receive queue's stride is 64 bytes (3 segments round up to
// 4), so B's prefetch of the one posted WQE reads 64 bytes; the
// first packet checks both regions' keys. A 10001-byte
// SEND into the same list is too long: LOC_LEN_ERR at B, as one SGE of
// 10000 bytes gives.
func TestSendScattersAcrossThreeRecvSGEs(t *testing.T) {
	for _, size := range []int{9000, 10001} {
		p := sglPair(t, Defaults(), 1<<15, 3)
		other := p.b.Malloc(8192)
		mrO := p.b.RegMR(p.qb.PD, other, 8192, AccessLocalWrite)
		src := pattern(size, 11)
		p.a.Mem.Write(p.bufA, src)
		sgl := []SGE{{Addr: p.bufB + 100, Length: 1000, LKey: p.mrB.LKey}, {Addr: other + 10, Length: 3000, LKey: mrO.LKey},
			{Addr: p.bufB + 20000, Length: 6000, LKey: p.mrB.LKey}}
		readBefore := p.b.PCIe.ReadBytes
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 9, SGL: sgl}))
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRSend, Signaled: true, LocalAddr: p.bufA, Length: uint32(size), LKey: p.mrA.LKey}))
		_, rb := p.pollBoth(t, 1, 1)
		// B reads: the receive WQE, its stride of 64 bytes, and the MKey
		// contexts of the two cold L_Keys (64 bytes each).
		assert.Equal(t, int64(64+2*MKeyContextBytes), p.b.PCIe.ReadBytes-readBefore, "one receive WQE of stride 64, two key contexts")
		if size > 10000 {
			assert.Equal(t, WCLocLenErr, rb[0].Status)
			continue
		}
		require.Equal(t, WCSuccess, rb[0].Status)
		assert.Equal(t, uint32(size), rb[0].ByteLen)
		got := make([]byte, 0, size)
		for _, e := range sgl {
			b := make([]byte, min(int(e.Length), size-len(got)))
			p.b.Mem.Read(e.Addr, b)
			got = append(got, b...)
		}
		assert.Equal(t, src, got)
		// The bytes around the elements are untouched.
		edge := make([]byte, 100)
		p.b.Mem.Read(p.bufB, edge)
		assert.Equal(t, make([]byte, 100), edge)
	}
}

// TestReadAndAtomicLandInTheLocalSGL: an 8192-byte READ (two responses of
// 4096) into SGEs of 5000 and 3192 bytes, so the first response fills the
// first element's start and the second crosses into the second element;
// and a FETCH_ADD whose 8-byte result lands in two SGEs of 4 bytes (the
// old value's low half in the first, little-endian as host memory).
func TestReadAndAtomicLandInTheLocalSGL(t *testing.T) {
	p := sglPair(t, Defaults(), 1<<15, 1)
	src := pattern(8192, 13)
	p.b.Mem.Write(p.bufB, src)
	sgl := []SGE{{Addr: p.bufA + 3, Length: 5000, LKey: p.mrA.LKey}, {Addr: p.bufA + 16384, Length: 3192, LKey: p.mrA.LKey}}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMARead, Signaled: true, SGL: sgl, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	const old = 0x1122334455667788
	p.b.Mem.WriteU64(p.bufB+24576, old)
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRFetchAdd, Signaled: true, CompareAdd: 5,
		SGL:        []SGE{{Addr: p.bufA + 30000, Length: 4, LKey: p.mrA.LKey}, {Addr: p.bufA + 31000, Length: 4, LKey: p.mrA.LKey}},
		RemoteAddr: p.bufB + 24576, RKey: p.mrB.RKey}))
	sa, _ := p.pollBoth(t, 2, 0)
	require.Equal(t, WCSuccess, sa[0].Status)
	assert.Equal(t, uint32(8192), sa[0].ByteLen)
	require.Equal(t, WCSuccess, sa[1].Status)
	got := make([]byte, 8192)
	p.a.Mem.Read(sgl[0].Addr, got[:5000])
	p.a.Mem.Read(sgl[1].Addr, got[5000:])
	assert.Equal(t, src, got)
	lo, hi := p.a.Mem.ReadU32(p.bufA+30000), p.a.Mem.ReadU32(p.bufA+31000)
	assert.Equal(t, uint64(old), uint64(hi)<<32|uint64(lo))
	assert.Equal(t, uint64(old+5), p.b.Mem.ReadU64(p.bufB+24576))
}

func TestSGLRefusedAtPost(t *testing.T) {
	p := sglPair(t, Defaults(), 4096, 2)
	e := SGE{Addr: p.bufA, Length: 8, LKey: p.mrA.LKey}
	many := make([]SGE, MaxSendSGE+1)
	for i := range many {
		many[i] = e
	}
	err := p.a.PostSend(p.qa, &SendWR{Opcode: WRSend, SGL: many})
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ENOMEM, "libmlx5 post_send: num_sge > max_gs")
	assert.NoError(t, p.a.PostSend(p.qa, &SendWR{Opcode: WRSend, SGL: many[:MaxSendSGE]}), "30 is the limit")
	err = p.a.PostSend(p.qa, &SendWR{Opcode: WRSend, SGL: []SGE{e}, Length: 8})
	assert.ErrorContains(t, err, "both SGL and LocalAddr/Length/LKey")
	err = p.a.PostSend(p.qa, &SendWR{Opcode: WRFetchAdd, SGL: []SGE{e, e}, RemoteAddr: p.bufB, RKey: p.mrB.RKey})
	assert.ErrorContains(t, err, "an atomic's result is 8 bytes")
	err = p.b.PostRecv(p.qb, &RecvWR{SGL: []SGE{e, e, e}})
	assert.ErrorIs(t, err, syscall.EINVAL, "3 SGEs on a QP made for 2")
	assert.NoError(t, p.b.PostRecv(p.qb, &RecvWR{SGL: []SGE{e, e}}))
	err = p.b.PostRecv(p.qb, &RecvWR{SGL: []SGE{e}, Addr: 1})
	assert.ErrorContains(t, err, "both SGL and Addr/Length/LKey")
	_, err = p.b.CreateQPCap(p.qb.PD, p.qb.SendCQ, p.qb.RecvCQ, 8, 8, QPCap{MaxRecvSGE: MaxRecvSGE + 1})
	assert.ErrorContains(t, err, "max_recv_sge 33 is not 1 … 32")
}

// TestUDSendGathersItsSGL: a UD SEND of three elements (5, 300 and 700
// bytes from two places of one region) arrives as the one 1005-byte
// datagram they make, after the receive's 40-byte GRH area; a UD receive
// of two elements is refused at post (a UD QP takes one: the GRH area's
// scatter is not modelled).
func TestUDSendGathersItsSGL(t *testing.T) {
	p := newUDPair(t, edrLink())
	s, a, b, qa, qb := p.s, p.a, p.b, p.qa, p.qb
	bufA, bufB, mrA, mrB := p.bufA, p.bufB, p.mrA, p.mrB
	src := pattern(8192, 17)
	a.Mem.Write(bufA, src)
	sgl := []SGE{{Addr: bufA + 4000, Length: 5, LKey: mrA.LKey}, {Addr: bufA + 10, Length: 300, LKey: mrA.LKey}, {Addr: bufA + 6000, Length: 700, LKey: mrA.LKey}}
	// A UD QP is made for one receive element (CreateUDQP).
	assert.ErrorIs(t, b.PostRecv(qb, &RecvWR{SGL: []SGE{{Addr: bufB, Length: 40, LKey: mrB.LKey}, {Addr: bufB + 64, Length: 2000, LKey: mrB.LKey}}}),
		syscall.EINVAL)
	require.NoError(t, b.PostRecv(qb, &RecvWR{ID: 3, Addr: bufB, Length: 2048, LKey: mrB.LKey}))
	require.NoError(t, a.PostSend(qa, &SendWR{ID: 1, Opcode: WRSend, Signaled: true, SGL: sgl, UD: true, DLID: b.LID, RemoteQPN: qb.Num, RemoteQKey: 0x2222}))
	s.StopAt(50 * ib.Microsecond)
	require.NoError(t, s.Run())
	var wb [2]WC
	require.Equal(t, 1, b.PollCQ(qb.RecvCQ, wb[:]))
	require.Equal(t, WCSuccess, wb[0].Status)
	assert.Equal(t, uint32(UDGRHBytes+1005), wb[0].ByteLen)
	want := append(append(append([]byte{}, src[4000:4005]...), src[10:310]...), src[6000:6700]...)
	got := make([]byte, 1005)
	b.Mem.Read(bufB+UDGRHBytes, got)
	assert.Equal(t, want, got)
}

// TestEmptySGLIsAZeroByteMessage: num_sge 0 on both sides, as verbs
// allows: a SEND of no element into a receive of no element completes
// with 0 bytes and checks no key (the empty send list's one segment
// carries MLX5_INVALID_LKEY, which no region has). On a one-segment
// receive stride the empty list is the terminator alone.
func TestEmptySGLIsAZeroByteMessage(t *testing.T) {
	for _, stride := range []int{1, 4} {
		p := sglPair(t, Defaults(), 4096, stride)
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: 4, SGL: []SGE{}}))
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRSend, Signaled: true, SGL: []SGE{}}))
		sa, rb := p.pollBoth(t, 1, 1)
		assert.Equal(t, WCSuccess, sa[0].Status)
		assert.Equal(t, WCSuccess, rb[0].Status)
		assert.Equal(t, uint32(0), rb[0].ByteLen)
		// No MKey context is read (cold caches would read one per key
		// looked up): A reads nothing (its WQE came by BlueFlame), B its
		// one receive WQE, a stride of 16 × 1 or 16 × 4 bytes, once, by
		// the prefetch: the SEND arrives before that read is back and
		// waits for it, not reading the WQE again.
		assert.Zero(t, p.a.PCIe.ReadBytes)
		assert.Equal(t, int64(16*stride), p.b.PCIe.ReadBytes)
	}
}

// TestBadLKeyInARecvSGEFailsTheSEND: a receive list whose third element
// reaches past its region fails the SEND landing in it as one receive
// element past its region does: LOC_PROT_ERR in B's receive CQE, NAK to
// A (REM_OP_ERR there), no byte written, whichever element is bad.
func TestBadLKeyInARecvSGEFailsTheSEND(t *testing.T) {
	run := func(sgl func(p *pair) RecvWR) (WC, WC, *pair) {
		p := sglPair(t, Defaults(), 8192, 3)
		p.a.Mem.Write(p.bufA, pattern(8192, 7))
		wr := sgl(p)
		require.NoError(t, p.b.PostRecv(p.qb, &wr))
		require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRSend, Signaled: true, LocalAddr: p.bufA, Length: 500, LKey: p.mrA.LKey}))
		sa, rb := p.pollBoth(t, 1, 1)
		return sa[0], rb[0], p
	}
	sa1, rb1, _ := run(func(p *pair) RecvWR { return RecvWR{ID: 5, Addr: p.bufB + 8000, Length: 600, LKey: p.mrB.LKey} })
	require.Equal(t, WCLocProtErr, rb1.Status)
	sa3, rb3, p := run(func(p *pair) RecvWR {
		return RecvWR{ID: 5, SGL: []SGE{{Addr: p.bufB, Length: 100, LKey: p.mrB.LKey}, {Addr: p.bufB + 200, Length: 100, LKey: p.mrB.LKey},
			{Addr: p.bufB + 8000, Length: 400, LKey: p.mrB.LKey}}}
	})
	assert.Equal(t, rb1.Status, rb3.Status)
	assert.Equal(t, sa1.Status, sa3.Status)
	assert.Zero(t, p.b.Counters.PayloadRx, "no byte written")
}
