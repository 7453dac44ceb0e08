package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
}
