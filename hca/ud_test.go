package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// udPair is two back-to-back devices on link lc, each with one UD QP
// (Q_Keys 0x1111 and 0x2222) in RTS and an 8 KiB buffer registered for
// local write.
type udPair struct {
	s          *components.Sim
	a, b       *Device
	qa, qb     *QP
	bufA, bufB uint64
	mrA, mrB   MR
}

func newUDPair(t *testing.T, lc link.Config) udPair { return newUDPairCfg(t, lc, Defaults()) }

// newUDPairCfg is newUDPair with both devices built from cfg.
func newUDPairCfg(t *testing.T, lc link.Config, cfg Config) udPair {
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	pa, pb := a.AllocPD(), b.AllocPD()
	qa := a.CreateUDQP(pa, a.CreateCQ(16), a.CreateCQ(16), 64, 64, 0x1111)
	qb := b.CreateUDQP(pb, b.CreateCQ(16), b.CreateCQ(16), 64, 64, 0x2222)
	for _, x := range []struct {
		d  *Device
		qp *QP
	}{{a, qa}, {b, qb}} {
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPInit}))
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPRTR, MTU: lc.MTU}))
		require.NoError(t, x.d.ModifyQP(x.qp, QPAttr{State: QPRTS, SQPSN: 7}))
	}
	bufA, bufB := a.Malloc(8192), b.Malloc(8192)
	return udPair{s: s, a: a, b: b, qa: qa, qb: qb, bufA: bufA, bufB: bufB,
		mrA: a.RegMR(pa, bufA, 8192, AccessLocalWrite), mrB: b.RegMR(pb, bufB, 8192, AccessLocalWrite)}
}

func TestUDSend(t *testing.T) {
	lc := edrLink()
	lc.MTU = 1024
	p := newUDPair(t, lc)
	s, a, b, qa, qb := p.s, p.a, p.b, p.qa, p.qb
	bufA, bufB, mrA, mrB := p.bufA, p.bufB, p.mrA, p.mrB
	a.Mem.Write(bufA, []byte("datagram!"))
	// Two receives of 1024 + 40 bytes.
	for i := 0; i < 2; i++ {
		require.NoError(t, b.PostRecv(qb, &RecvWR{ID: uint64(10 + i), Addr: bufB + uint64(i)*2048, Length: 1064, LKey: mrB.LKey}))
	}
	ud := func(id uint64, n uint32, qkey uint32, op WROpcode) *SendWR {
		return &SendWR{ID: id, Opcode: op, Signaled: true, LocalAddr: bufA, Length: n, LKey: mrA.LKey,
			UD: true, DLID: b.LID, RemoteQPN: qb.Num, RemoteQKey: qkey, Imm: 0x77}
	}
	require.NoError(t, a.PostSend(qa, ud(1, 9, 0x2222, WRSend)))    // lands in receive 10
	require.NoError(t, a.PostSend(qa, ud(2, 9, 0x9999, WRSend)))    // wrong Q_Key: dropped
	require.NoError(t, a.PostSend(qa, ud(3, 4, 0x2222, WRSendImm))) // lands in receive 11
	require.NoError(t, a.PostSend(qa, ud(4, 9, 0x2222, WRSend)))    // no receive left: dropped
	require.NoError(t, a.PostSend(qa, ud(5, 1025, 0x2222, WRSend))) // longer than the MTU
	// An RC-only operation is refused at post.
	assert.EqualError(t, a.PostSend(qa, &SendWR{Opcode: WRRDMAWrite, UD: true}),
		"qp 0x100: RDMA_WRITE work request on a UD QP (UD QPs take UD SENDs only)")
	var wa, wb [8]WC
	s.StopAt(50 * ib.Microsecond)
	require.NoError(t, s.Run())
	na := a.PollCQ(qa.SendCQ, wa[:])
	nb := b.PollCQ(qb.RecvCQ, wb[:])
	// UD completes a send when its packet leaves: all four sends succeed
	// from the sender's view; the fifth fails its length check.
	require.Equal(t, 5, na)
	for i := 0; i < 4; i++ {
		assert.Equal(t, WCSuccess, wa[i].Status, "wr %d", wa[i].WRID)
	}
	assert.Equal(t, WCLocLenErr, wa[4].Status)
	assert.Equal(t, QPErr, qa.State)
	require.Equal(t, 2, nb)
	// byte_len counts the 40-byte GRH area; the source QP comes from the DETH.
	assert.Equal(t, WC{WRID: 10, Opcode: WCRecv, ByteLen: 40 + 9, QPN: qb.Num, SrcQP: qa.Num}, wb[0])
	assert.Equal(t, WC{WRID: 11, Opcode: WCRecv, ByteLen: 40 + 4, Imm: 0x77, HasImm: true, QPN: qb.Num, SrcQP: qa.Num}, wb[1])
	got := make([]byte, 9)
	b.Mem.Read(bufB+UDGRHBytes, got)
	assert.Equal(t, []byte("datagram!"), got)
	b.Mem.Read(bufB+2048+UDGRHBytes, got[:4])
	assert.Equal(t, []byte("data"), got[:4])
	assert.Equal(t, int64(2), b.Counters.UDDrops)
	assert.Equal(t, int64(0), b.Counters.Acks, "UD sends no ACKs")
}
