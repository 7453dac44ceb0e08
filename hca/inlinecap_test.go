package hca

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQPInlineLimit: libmlx5's max_inline_data for a QP's caps, worked out
// from mlx5_calc_send_wqe and mlx5_calc_sq_size with sq_overhead RC 192
// (the UMR WQE: ctrl 16 + umr_ctrl 48 + mkey_context 64 + 64) and UD 64
// (ctrl 16 + datagram 48):
//
//	RC, 1 SGE, 64 inline: size 192 + 16 = 208; inl 192 + align16(4 + 64)
//	  = 272; WQE align64(272) = 320; limit 320 − 192 − 4 = 124.
//	RC, 1 SGE, 125 inline: inl 192 + align16(129) = 336 → 384; 188.
//	RC, 1 SGE, 1 inline: inl 192 + 16 = 208 → 256; 60.
//	RC, 16 SGEs, 1 inline: size 192 + 256 = 448 → 448; 252 (the SGEs
//	  size the WQE).
//	UD, 1 SGE, 64 inline: size 80; inl 64 + 80 = 144 → 192; 124.
//	UD, 4 SGEs, 20 inline: size 128; inl 64 + 32 = 96 → 128; 60.
//
// Both overheads are multiples of 64, so RC and UD come to the same limit
// for the same caps; their WQE sizes differ by 128.
func TestQPInlineLimit(t *testing.T) {
	for _, tc := range []struct {
		ud             bool
		sge, inl       int
		wqeSize, limit int
	}{
		{false, 1, 64, 320, 124},
		{false, 1, 125, 384, 188},
		{false, 1, 1, 256, 60},
		{false, 16, 1, 448, 252},
		{true, 1, 64, 192, 124},
		{true, 4, 20, 128, 60},
	} {
		assert.Equal(t, tc.wqeSize, SendWQESize(tc.ud, tc.sge, tc.inl), "%+v", tc)
		assert.Equal(t, tc.limit, QPInlineLimit(tc.ud, tc.sge, tc.inl), "%+v", tc)
	}
}

// TestQPMaxInlineData: a QP created for max_inline_data n posts inline
// SENDs up to QPInlineLimit (TestQPInlineLimit's values) and refuses one
// byte more with ENOMEM, as libmlx5's set_data_inl_seg does; a limit
// above hca.max_inline_bytes (236) leaves the device's; 0 is the device's
// 236; −1 and 237 are EINVAL at create.
func TestQPMaxInlineData(t *testing.T) {
	p := sglPair(t, Defaults(), 8192, 1)
	pd := p.qa.PD
	cq := p.a.CreateCQ(16)
	max := p.a.Cfg.MaxInlineBytes
	require.Equal(t, 236, max)
	for _, bad := range []int{-1, max + 1} {
		_, err := p.a.CreateQPCap(pd, cq, cq, 64, 8, QPCap{MaxRecvSGE: 1, MaxInlineData: bad})
		assert.True(t, errors.Is(err, syscall.EINVAL), "max_inline_data %d: %v", bad, err)
	}
	send := func(n int) *SendWR {
		return &SendWR{Opcode: WRSend, Inline: true, LocalAddr: p.bufA, Length: uint32(n), LKey: p.mrA.LKey}
	}
	for _, tc := range []struct{ sge, inl, ok int }{{1, 64, 124}, {1, 125, 188}, {1, 1, 60}, {16, 1, max}, {1, 0, max}} {
		q, err := p.a.CreateQPCap(pd, cq, cq, 64, 8, QPCap{MaxRecvSGE: 1, MaxSendSGE: tc.sge, MaxInlineData: tc.inl})
		require.NoError(t, err)
		assert.Equal(t, tc.ok, q.MaxInlineData(), "%+v", tc)
		q2, err := p.b.CreateQPCap(p.qb.PD, p.b.CreateCQ(16), p.b.CreateCQ(16), 64, 8, QPCap{MaxRecvSGE: 1})
		require.NoError(t, err)
		require.NoError(t, ConnectRC(q, q2, 4096, 1, 2))
		assert.NoError(t, p.a.PostSend(q, send(tc.ok)), "%+v", tc)
		err = p.a.PostSend(q, send(tc.ok+1))
		require.Error(t, err)
		if tc.ok < max {
			assert.True(t, errors.Is(err, syscall.ENOMEM), "%+v, %d bytes: %v", tc, tc.ok+1, err)
		} else {
			assert.Contains(t, err.Error(), "hca.max_inline_bytes")
		}
	}
	assert.Equal(t, max, p.qa.MaxInlineData(), "CreateQP: the device's")

	// UD, 4 SGEs, 20 inline bytes: 60.
	r := newUDSGLRig(t, false)
	q, err := r.a.CreateUDQPCap(r.qa.PD, r.sendA, r.a.CreateCQ(16), 64, 8, 0x1111, QPCap{MaxRecvSGE: 1, MaxSendSGE: 4, MaxInlineData: 20})
	require.NoError(t, err)
	assert.Equal(t, 60, q.MaxInlineData())
	require.NoError(t, r.a.ModifyQP(q, QPAttr{State: QPInit}))
	require.NoError(t, r.a.ModifyQP(q, QPAttr{State: QPRTR, MTU: 1024}))
	require.NoError(t, r.a.ModifyQP(q, QPAttr{State: QPRTS}))
	ud := func(n int) *SendWR {
		return &SendWR{Opcode: WRSend, Inline: true, LocalAddr: r.bufA, Length: uint32(n), LKey: r.mrA.LKey,
			UD: true, DLID: r.b.LID, RemoteQPN: r.qb.Num, RemoteQKey: 0x2222}
	}
	assert.NoError(t, r.a.PostSend(q, ud(60)))
	assert.True(t, errors.Is(r.a.PostSend(q, ud(61)), syscall.ENOMEM))
}
