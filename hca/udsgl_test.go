package hca

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// udSGLRig is A's UD QP sending to B's UD QP, whose receives take up to
// three scatter elements: from its own RQ (CreateUDQPCap) or from an SRQ
// of max_sge 3 (CreateUDQPSRQ). B has two registered regions of 8 KiB,
// bufB (mrB) and bufB2 (mrB2), filled with 0xEE before anything lands.
type udSGLRig struct {
	udPair
	srq          *SRQ
	bufB2        uint64
	mrB2         MR
	rec          traceRecorder // B's trace events
	sendA, recvB *CQ
}

const udFill = 0xEE

func newUDSGLRig(t *testing.T, onSRQ bool) *udSGLRig {
	return newUDSGLRigCfg(t, onSRQ, Defaults())
}

// newUDSGLRigCfg is newUDSGLRig with both devices built from cfg.
func newUDSGLRigCfg(t *testing.T, onSRQ bool, cfg Config) *udSGLRig {
	lc := edrLink()
	lc.MTU = 1024
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	pa, pb := a.AllocPD(), b.AllocPD()
	r := &udSGLRig{sendA: a.CreateCQ(16), recvB: b.CreateCQ(16)}
	qa := a.CreateUDQP(pa, r.sendA, a.CreateCQ(16), 64, 64, 0x1111)
	var qb *QP
	var err error
	if onSRQ {
		r.srq, err = b.CreateSRQ(pb, 7, 3)
		require.NoError(t, err)
		qb, err = b.CreateUDQPSRQ(pb, b.CreateCQ(16), r.recvB, 64, r.srq, 0x2222)
	} else {
		qb, err = b.CreateUDQPCap(pb, b.CreateCQ(16), r.recvB, 64, 8, 0x2222, QPCap{MaxRecvSGE: 3})
	}
	require.NoError(t, err)
	for _, x := range []struct {
		d  *Device
		qp *QP
	}{{a, qa}, {b, qb}} {
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPInit}))
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPRTR, MTU: lc.MTU}))
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPRTS, SQPSN: 7}))
	}
	bufA, bufB, bufB2 := a.Malloc(8192), b.Malloc(8192), b.Malloc(8192)
	r.udPair = udPair{s: s, a: a, b: b, qa: qa, qb: qb, bufA: bufA, bufB: bufB,
		mrA: a.RegMR(pa, bufA, 8192, AccessLocalWrite), mrB: b.RegMR(pb, bufB, 8192, AccessLocalWrite)}
	r.bufB2, r.mrB2 = bufB2, b.RegMR(pb, bufB2, 8192, AccessLocalWrite)
	b.Mem.Write(bufB, bytes.Repeat([]byte{udFill}, 8192))
	b.Mem.Write(bufB2, bytes.Repeat([]byte{udFill}, 8192))
	b.AcceptHook(&r.rec)
	return r
}

func (r *udSGLRig) postRecv(t *testing.T, wr *RecvWR) {
	if r.srq != nil {
		require.NoError(t, r.b.PostSRQRecv(r.srq, wr))
		return
	}
	require.NoError(t, r.b.PostRecv(r.qb, wr))
}

// send posts a datagram of payload n (pattern(n, seed) from bufA) to B,
// with a GRH if grh, the k-th of a run (they are posted 5 µs apart).
func (r *udSGLRig) send(t *testing.T, k int, n uint32, seed int, grh bool) {
	r.s.Schedule(ib.PS(k+1)*gap, &poster{fn: func() {
		at := r.bufA + uint64(k)*2048
		r.a.Mem.Write(at, pattern(int(n), seed))
		require.NoError(t, r.a.PostSend(r.qa, &SendWR{ID: uint64(k), Opcode: WRSend, Signaled: true, LocalAddr: at, Length: n,
			LKey: r.mrA.LKey, UD: true, GRH: grh, DLID: r.b.LID, RemoteQPN: r.qb.Num, RemoteQKey: 0x2222}))
	}}, 1)
}

func (r *udSGLRig) run(t *testing.T, sends int) []WC {
	r.s.StopAt(ib.PS(sends+2) * gap)
	require.NoError(t, r.s.Run())
	var wa, wb [8]WC
	require.Equal(t, sends, r.a.PollCQ(r.sendA, wa[:]))
	n := r.b.PollCQ(r.recvB, wb[:])
	return wb[:n]
}

// events returns B's trace events of kind as [addr, len, result] rows
// (result "" for a DMA write).
func (r *udSGLRig) events(kind components.TraceKind) [][3]any {
	var rows [][3]any
	for i := range r.rec.events {
		e := &r.rec.events[i]
		if e.Kind != kind {
			continue
		}
		addr, _ := e.Int("addr")
		n, _ := e.Int("len")
		res, _ := e.Str("result")
		rows = append(rows, [3]any{uint64(addr), n, res})
	}
	return rows
}

func (r *udSGLRig) read(addr uint64, n int) []byte {
	b := make([]byte, n)
	r.b.Mem.Read(addr, b)
	return b
}

// TestUDRecvScattersGRHAreaAndPayload: a datagram's message is its 40-byte
// GRH area and then its payload, scattered over the receive's list in
// order. The list is a 40-byte element at g = bufB, 100 bytes at p1 =
// bufB + 1000 and 200 bytes at p2 = bufB2 (another region); a payload of
// 250 bytes is the message [0, 290): [0, 40) is g's, [40, 140) p1's (the
// payload's first 100 bytes), [140, 290) the first 150 of p2 (the
// payload's bytes 100 … 249), and p2's last 50 are not reached. So B's
// DMA writes are exactly (p1, 100) and (p2, 150): the model writes no
// GRH (it carries no GIDs), so g keeps its 0xEE whether the packet has a
// GRH or not, and byte_len is 290 either way. Every element's L_Key is
// looked up once, over the whole element, as an RC SEND's list.
func TestUDRecvScattersGRHAreaAndPayload(t *testing.T) {
	for _, tc := range []struct {
		name       string
		onSRQ, grh bool
	}{{"RQ", false, false}, {"RQ GRH", false, true}, {"SRQ", true, false}, {"SRQ GRH", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newUDSGLRig(t, tc.onSRQ)
			g, p1, p2 := r.bufB, r.bufB+1000, r.bufB2
			sgl := []SGE{{Addr: g, Length: UDGRHBytes, LKey: r.mrB.LKey}, {Addr: p1, Length: 100, LKey: r.mrB.LKey},
				{Addr: p2, Length: 200, LKey: r.mrB2.LKey}}
			r.postRecv(t, &RecvWR{ID: 9, SGL: sgl})
			r.send(t, 0, 250, 3, tc.grh)
			wcs := r.run(t, 1)
			require.Len(t, wcs, 1)
			assert.Equal(t, WC{WRID: 9, Opcode: WCRecv, ByteLen: 290, QPN: r.qb.Num, SrcQP: r.qa.Num}, wcs[0])
			payload := pattern(250, 3)
			assert.Equal(t, bytes.Repeat([]byte{udFill}, 40), r.read(g, 40), "the GRH area is left as it was")
			assert.Equal(t, payload[:100], r.read(p1, 100))
			assert.Equal(t, payload[100:], r.read(p2, 150))
			assert.Equal(t, bytes.Repeat([]byte{udFill}, 50), r.read(p2+150, 50), "past the message")
			assert.Equal(t, [][3]any{{p1, int64(100), ""}, {p2, int64(150), ""}}, r.events(components.TraceDMAWrite))
			assert.Equal(t, [][3]any{{g, int64(40), "pass"}, {p1, int64(100), "pass"}, {p2, int64(200), "pass"}},
				r.events(components.TraceKeyCheck))
		})
	}
}

// TestUDRecvLongerThanTheListIsLocLenErr: the list 40 + 100 + 100 holds a
// message of 240 bytes, so a payload of 200 (40 + 200 = 240) fits to the
// byte and one of 201 is a datagram too long: it completes LOC_LEN_ERR, as
// a single element too short does (TestUDSend's model: the CQE's status,
// no byte written, the QP stays usable), and the next datagram lands.
// The 201-byte one comes first: a receive of it writing anything would
// show in the second's buffers or in PayloadRx (200 in all).
func TestUDRecvLongerThanTheListIsLocLenErr(t *testing.T) {
	r := newUDSGLRig(t, false)
	list := func(base uint64) []SGE {
		return []SGE{{Addr: base, Length: UDGRHBytes, LKey: r.mrB.LKey}, {Addr: base + 100, Length: 100, LKey: r.mrB.LKey},
			{Addr: base + 300, Length: 100, LKey: r.mrB.LKey}}
	}
	r.postRecv(t, &RecvWR{ID: 1, SGL: list(r.bufB)})
	r.postRecv(t, &RecvWR{ID: 2, SGL: list(r.bufB + 1024)})
	r.send(t, 0, 201, 5, false)
	r.send(t, 1, 200, 6, false)
	wcs := r.run(t, 2)
	require.Len(t, wcs, 2)
	assert.Equal(t, WCLocLenErr, wcs[0].Status)
	assert.Equal(t, uint64(1), wcs[0].WRID)
	assert.Equal(t, WC{WRID: 2, Opcode: WCRecv, ByteLen: 240, QPN: r.qb.Num, SrcQP: r.qa.Num}, wcs[1])
	assert.Equal(t, QPRTS, r.qb.State)
	assert.Equal(t, bytes.Repeat([]byte{udFill}, 1024), r.read(r.bufB, 1024), "the too-long datagram wrote nothing")
	p := pattern(200, 6)
	assert.Equal(t, p[:100], r.read(r.bufB+1024+100, 100))
	assert.Equal(t, p[100:], r.read(r.bufB+1024+300, 100))
	assert.Equal(t, int64(200), r.b.Counters.PayloadRx)
}

// TestUDRecvBadElementKey: an element whose L_Key check fails (here its
// bounds: 400 bytes from bufB + 8000 pass the region's 8192) fails the
// datagram LOC_PROT_ERR with no byte written, as a single element's does,
// even when the element would take none of the message's bytes (the GRH
// element: the model writes no GRH, but the element is checked). The
// lookups stop at the failing element, as an RC SEND's.
func TestUDRecvBadElementKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bad     int
		lookups int
	}{{"third", 2, 3}, {"GRH area", 0, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newUDSGLRig(t, false)
			sgl := []SGE{{Addr: r.bufB, Length: UDGRHBytes, LKey: r.mrB.LKey}, {Addr: r.bufB + 100, Length: 100, LKey: r.mrB.LKey},
				{Addr: r.bufB + 300, Length: 100, LKey: r.mrB.LKey}}
			sgl[tc.bad].Addr = r.bufB + 8000
			sgl[tc.bad].Length = 400
			r.postRecv(t, &RecvWR{ID: 1, SGL: sgl})
			r.send(t, 0, 100, 5, false)
			wcs := r.run(t, 1)
			require.Len(t, wcs, 1)
			assert.Equal(t, WCLocProtErr, wcs[0].Status)
			assert.Zero(t, r.b.Counters.PayloadRx, "no byte written")
			checks := r.events(components.TraceKeyCheck)
			require.Len(t, checks, tc.lookups)
			assert.Equal(t, KeyOutOfBounds.String(), checks[tc.lookups-1][2])
		})
	}
}

// TestUDQPCapRefuses: a UD QP's receive cap follows CreateQPCap's rules
// (1 … MaxRecvSGE), and a receive WR of more elements than the cap is
// EINVAL, as for an RC QP; CreateUDQP's QP still takes one.
func TestUDQPCapRefuses(t *testing.T) {
	r := newUDSGLRig(t, false)
	pd := r.qb.PD
	_, err := r.b.CreateUDQPCap(pd, r.recvB, r.recvB, 64, 8, 1, QPCap{MaxRecvSGE: MaxRecvSGE + 1})
	assert.Error(t, err)
	e := SGE{Addr: r.bufB, Length: 64, LKey: r.mrB.LKey}
	err = r.b.PostRecv(r.qb, &RecvWR{SGL: []SGE{e, e, e, e}})
	assert.True(t, errors.Is(err, syscall.EINVAL), "%v", err)
	one := r.b.CreateUDQP(pd, r.recvB, r.recvB, 64, 8, 1)
	require.NoError(t, r.b.ModifyQP(one, QPAttr{State: QPInit}))
	err = r.b.PostRecv(one, &RecvWR{SGL: []SGE{e, e}})
	assert.True(t, errors.Is(err, syscall.EINVAL), "%v", err)
}

// TestQPMaxSendSGE: a QP's send WRs carry at most its max_send_sge
// elements. libmlx5 keeps the cap asked for as sq.max_gs
// (mlx5_calc_sq_size) and _mlx5_post_send refuses num_sge > max_gs with
// ENOMEM; a cap above the device's is EINVAL at create. A cap of 0 is the
// device's 30, so CreateQP and every QPCap written before the field
// existed keep the limit they had: 30 posts, 31 does not.
func TestQPMaxSendSGE(t *testing.T) {
	p := sglPair(t, Defaults(), 8192, 1)
	pd := p.qa.PD
	cq := p.a.CreateCQ(16)
	for _, bad := range []int{-1, MaxSendSGE + 1} {
		_, err := p.a.CreateQPCap(pd, cq, cq, 64, 8, QPCap{MaxRecvSGE: 1, MaxSendSGE: bad})
		assert.True(t, errors.Is(err, syscall.EINVAL), "max_send_sge %d: %v", bad, err)
	}
	list := func(n int) []SGE {
		l := make([]SGE, n)
		for i := range l {
			l[i] = SGE{Addr: p.bufA + uint64(i)*8, Length: 8, LKey: p.mrA.LKey}
		}
		return l
	}
	for _, tc := range []struct{ cap, ok int }{{2, 2}, {7, 7}, {0, MaxSendSGE}} {
		q, err := p.a.CreateQPCap(pd, cq, cq, 64, 8, QPCap{MaxRecvSGE: 1, MaxSendSGE: tc.cap})
		require.NoError(t, err)
		assert.Equal(t, tc.ok, q.MaxSendSGE())
		q2, err := p.b.CreateQPCap(p.qb.PD, p.b.CreateCQ(16), p.b.CreateCQ(16), 64, 8, QPCap{MaxRecvSGE: 1})
		require.NoError(t, err)
		require.NoError(t, ConnectRC(q, q2, 4096, 1, 2))
		wr := func(n int) *SendWR {
			return &SendWR{Opcode: WRRDMAWrite, SGL: list(n), RemoteAddr: p.bufB, RKey: p.mrB.RKey}
		}
		assert.NoError(t, p.a.PostSend(q, wr(tc.ok)), "cap %d", tc.cap)
		err = p.a.PostSend(q, wr(tc.ok+1))
		assert.True(t, errors.Is(err, syscall.ENOMEM), "cap %d, %d SGEs: %v", tc.cap, tc.ok+1, err)
	}
	assert.Equal(t, MaxSendSGE, p.qa.MaxSendSGE(), "CreateQP: the device's")
}

// TestUDRecvOneElementOnAListQP: a receive WR of one element (Addr,
// Length, LKey) on a QP created for three is a list of one: the datagram
// lands 40 bytes in, as on a QP of one element (TestUDSend), byte_len 40
// + 9. (The WQE's stride holds four segments; the rest must not read as
// elements: an element of key 0 fails its L_Key check.)
func TestUDRecvOneElementOnAListQP(t *testing.T) {
	for _, onSRQ := range []bool{false, true} {
		r := newUDSGLRig(t, onSRQ)
		r.postRecv(t, &RecvWR{ID: 4, Addr: r.bufB, Length: 1064, LKey: r.mrB.LKey})
		r.send(t, 0, 9, 2, false)
		wcs := r.run(t, 1)
		require.Len(t, wcs, 1)
		assert.Equal(t, WC{WRID: 4, Opcode: WCRecv, ByteLen: 40 + 9, QPN: r.qb.Num, SrcQP: r.qa.Num}, wcs[0], "srq %v", onSRQ)
		assert.Equal(t, pattern(9, 2), r.read(r.bufB+UDGRHBytes, 9))
	}
}
