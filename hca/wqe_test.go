package hca

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

func TestSendWQERoundTrip(t *testing.T) {
	tests := []struct {
		name string
		wr   SendWR
		bbs  int // ctrl 16 + raddr 16 + atomic 16 + data 16, rounded to 64 (ib-facts §7)
	}{
		{"send", SendWR{Opcode: WRSend, Length: 100, LKey: 0x105, LocalAddr: 0x1000, Signaled: true}, 1},
		{"write imm", SendWR{Opcode: WRRDMAWriteImm, Length: 5000, LKey: 7, LocalAddr: 9, RemoteAddr: 0xabc, RKey: 0x201, Imm: 0x1234}, 1},
		{"read", SendWR{Opcode: WRRDMARead, Length: 64, RemoteAddr: 1 << 40, RKey: 3}, 1},
		{"fetch add", SendWR{Opcode: WRFetchAdd, LocalAddr: 8, RemoteAddr: 16, RKey: 5, CompareAdd: 42}, 1},
		{"cmp swap", SendWR{Opcode: WRCompSwap, LocalAddr: 8, RemoteAddr: 16, RKey: 5, CompareAdd: 1, Swap: 2}, 1},
		// inline 236: ctrl 16 + 4 + 236 = 256 → 4 WQEBBs.
		{"inline send 236", SendWR{Opcode: WRSend, Inline: true, Length: 236}, 4},
		// inline write 220: 16 + 16 + 4 + 220 = 256 → 4 WQEBBs.
		{"inline write 220", SendWR{Opcode: WRRDMAWrite, Inline: true, Length: 220}, 4},
		// inline 2: 16 + (4+2 → 16) = 32 → 1 WQEBB.
		{"inline 2", SendWR{Opcode: WRSend, Inline: true, Length: 2}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inl := make([]byte, tc.wr.Length)
			for i := range inl {
				inl[i] = byte(i + 1)
			}
			if !tc.wr.Inline {
				inl = nil
			}
			buf := make([]byte, 1024)
			n := EncodeSendWQE(buf, &tc.wr, 77, 0x123456, inl)
			assert.Equal(t, tc.bbs*WQEBBBytes, n)
			w, err := DecodeSendWQE(buf)
			require.NoError(t, err)
			assert.Equal(t, tc.wr.Opcode, w.Opcode)
			assert.Equal(t, uint16(77), w.Index)
			assert.Equal(t, uint32(0x123456), w.QPN)
			assert.Equal(t, tc.wr.Signaled, w.Signaled)
			assert.Equal(t, tc.bbs, w.BBs)
			if tc.wr.Opcode.isAtomic() {
				assert.Equal(t, uint32(8), w.Length)
			} else {
				assert.Equal(t, tc.wr.Length, w.Length)
			}
			if tc.wr.Inline {
				assert.Equal(t, inl, buf[w.InlineOff:w.InlineOff+w.InlineLen])
			} else {
				assert.Equal(t, tc.wr.LKey, w.LKey)
				assert.Equal(t, tc.wr.LocalAddr, w.LocalAddr)
			}
			if tc.wr.Opcode.hasRemote() {
				assert.Equal(t, tc.wr.RemoteAddr, w.RemoteAddr)
				assert.Equal(t, tc.wr.RKey, w.RKey)
			}
			switch tc.wr.Opcode {
			case WRFetchAdd:
				assert.Equal(t, tc.wr.CompareAdd, w.SwapAdd)
			case WRCompSwap:
				assert.Equal(t, tc.wr.Swap, w.SwapAdd)
				assert.Equal(t, tc.wr.CompareAdd, w.Compare)
			case WRRDMAWriteImm:
				assert.Equal(t, tc.wr.Imm, w.Imm)
			}
		})
	}
	// The mlx5 opcode byte and the ctrl layout (ib-facts §7): RDMA_WRITE_IMM 0x09.
	buf := make([]byte, 64)
	EncodeSendWQE(buf, &SendWR{Opcode: WRRDMAWriteImm, Length: 1}, 0x0102, 5, nil)
	assert.Equal(t, []byte{0x00, 0x01, 0x02, 0x09}, buf[0:4])
	assert.Equal(t, byte(3), buf[7], "3 data segments: ctrl, raddr, data")
	buf[3] = 0x7f
	_, err := DecodeSendWQE(buf)
	assert.EqualError(t, err, "wqe: opcode 0x7f is not supported")
}

func TestRecvWQEAndCQERoundTrip(t *testing.T) {
	buf := make([]byte, 16)
	EncodeRecvWQE(buf, &RecvWR{Addr: 0xdead0000, Length: 4096, LKey: 0x301})
	assert.Equal(t, RecvWQE{Addr: 0xdead0000, Length: 4096, LKey: 0x301}, DecodeRecvWQE(buf))

	cqes := []CQE{
		{Opcode: CQEReq, WROp: WRRDMAWrite, QPN: 0xabcdef, Counter: 9, Owner: true},
		{Opcode: CQERespSendImm, QPN: 7, Counter: 1, ByteCnt: 32, Imm: 0x55, HasImm: true, Receiver: true},
		{Opcode: CQEReqErr, Status: WCRemAccessErr, WROp: WRRDMAWrite, QPN: 7, Counter: 3},
		{Opcode: CQEReqErr, Status: WCWRFlushErr, WROp: WRSend, QPN: 7, Counter: 4},
		{Opcode: CQERespErr, Status: WCLocLenErr, QPN: 7, Receiver: true},
		// A good requester CQE of a WR with immediate has IB_WC_WITH_IMM,
		// derived from the WQE opcode (mlx5 handle_good_req); an error CQE
		// does not (mlx5_handle_error_cqe sets no flags).
		{Opcode: CQEReq, WROp: WRSendImm, QPN: 7, Counter: 5, HasImm: true},
		{Opcode: CQEReq, WROp: WRRDMAWriteImm, QPN: 7, Counter: 6, HasImm: true},
		{Opcode: CQEReqErr, Status: WCRemAccessErr, WROp: WRRDMAWriteImm, QPN: 7, Counter: 7},
	}
	for _, c := range cqes {
		b := make([]byte, CQEBytes)
		EncodeCQE(b, &c)
		assert.Equal(t, c, DecodeCQE(b), "%+v", c)
	}
	// REM_ACCESS_ERR is syndrome 0x13 in byte 55; opcode REQ_ERR 13 in op_own[7:4].
	b := make([]byte, CQEBytes)
	EncodeCQE(b, &cqes[2])
	assert.Equal(t, byte(0x13), b[55])
	assert.Equal(t, byte(13<<4), b[63])
	// sop_drop_qpn[31:24] is the requester's WQE opcode (mlx5 RDMA_WRITE
	// 0x08); a responder CQE has none and carries 0 there.
	EncodeCQE(b, &cqes[0])
	assert.Equal(t, []byte{0x08, 0xab, 0xcd, 0xef}, b[56:60])
	EncodeCQE(b, &cqes[1])
	assert.Equal(t, []byte{0, 0, 0, 7}, b[56:60])
}

// TestLargestWQE: the ctrl segment counts a WQE's 16-byte segments in six
// bits (MLX5_WQE_CTRL_DS_MASK 0x3f, ib-facts §7), so a WQE is at most 63
// segments, 1008 bytes. An RDMA WRITE's headers are ctrl 16 + raddr 16 +
// inline header 4, leaving 972 inline bytes; a UD SEND's ctrl 16 +
// datagram 48 + 4 leave 940; an RC SEND's 16 + 4 leave 988. One byte more
// is refused by post_send (it was encoded with a DS count that wrapped to
// 0, or overran the WQE buffer: a panic either way).
func TestLargestWQE(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   WROpcode
		ud   bool
		max  int
	}{
		{"RC WRITE", WRRDMAWrite, false, 972},
		{"RC SEND", WRSend, false, 988},
		{"UD SEND", WRSend, true, 940},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.max, InlineLimit(tc.op, tc.ud))
			cfg := Defaults()
			cfg.MaxInlineBytes = MaxInlineLimit
			s := components.NewSim()
			a, b := BackToBack(s, edrLink(), cfg, cfg)
			pd := a.AllocPD()
			cq := a.CreateCQ(16)
			var qa *QP
			if tc.ud {
				qa = a.CreateUDQP(pd, cq, cq, 64, 16, 7)
				require.NoError(t, a.ModifyQP(qa, QPAttr{State: QPInit}))
				require.NoError(t, a.ModifyQP(qa, QPAttr{State: QPRTR, MTU: 4096}))
				require.NoError(t, a.ModifyQP(qa, QPAttr{State: QPRTS}))
			} else {
				qb := b.CreateQP(b.AllocPD(), b.CreateCQ(16), b.CreateCQ(16), 64, 16)
				qa = a.CreateQP(pd, cq, cq, 64, 16)
				require.NoError(t, ConnectRC(qa, qb, 4096, 1, 2))
			}
			buf := a.Malloc(4096)
			wr := SendWR{Opcode: tc.op, Inline: true, LocalAddr: buf, Length: uint32(tc.max), UD: tc.ud}
			require.NoError(t, a.PostSend(qa, &wr))
			// The WQE as written: 63 segments in 16 WQEBBs, decoded whole.
			var wqe [16 * WQEBBBytes]byte
			qa.readSQ(0, wqe[:])
			w, err := decodeSendWQE(wqe[:], tc.ud, nil)
			require.NoError(t, err)
			assert.Equal(t, 16, w.BBs)
			assert.Equal(t, tc.max, w.InlineLen)
			wr.Length++
			err = a.PostSend(qa, &wr)
			if tc.max == MaxInlineLimit {
				// hca.max_inline_bytes cannot exceed the largest, the RC SEND's.
				assert.EqualError(t, err, fmt.Sprintf("qp 0x%x: inline length %d exceeds hca.max_inline_bytes %d", qa.Num, tc.max+1, tc.max))
				return
			}
			assert.EqualError(t, err, fmt.Sprintf("qp 0x%x: inline length %d makes a %d-byte WQE, more than a WQE holds (1008 bytes, 63 16-byte segments; at most %d inline bytes for this one)",
				qa.Num, tc.max+1, 1024, tc.max))
		})
	}
}

// TestWQEBBsOfCtrl: the blocks a WQE takes come from its DS count alone,
// DS × 16 bytes rounded up to 64 (ib-facts §7), at least one; the two top
// bits of byte 7 are not part of the count (MLX5_WQE_CTRL_DS_MASK 0x3f).
func TestWQEBBsOfCtrl(t *testing.T) {
	for _, tc := range []struct {
		ds7  byte
		want int
	}{
		{0, 1},     // no segments: still the first block
		{1, 1},     // 16 B
		{4, 1},     // 64 B
		{5, 2},     // 80 B
		{8, 2},     // 128 B
		{63, 16},   // 1008 B: the largest WQE
		{0xc3, 1},  // DS 3 with the top bits set
		{0x40, 1},  // DS 0 with bit 6 set
		{0x7f, 16}, // DS 63 with bit 6 set
	} {
		ctrl := make([]byte, 16)
		ctrl[7] = tc.ds7
		assert.Equal(t, tc.want, WQEBBsOfCtrl(ctrl), "byte 7 = 0x%02x", tc.ds7)
	}
	// The encoder's sizes agree: a 236-byte inline SEND is 4 WQEBBs.
	buf := make([]byte, 1024)
	wr := SendWR{Opcode: WRSend, Inline: true, Length: 236}
	EncodeSendWQE(buf, &wr, 0, 1, make([]byte, 236))
	assert.Equal(t, WQEBBs(&wr), WQEBBsOfCtrl(buf))
}
