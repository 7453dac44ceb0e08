package hca

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TestSteadySendAllocatesNothing: posting and sending a message whose
// payload is inline, or given as a gather list, allocates nothing once
// warm. The CPU's copy of an inline payload goes through a buffer the
// device keeps (it was a new slice per post), and a WQE's decoded gather
// list reuses the one decoded at its WQEBB index before (it was a new
// slice per WQE): one allocation per message each before.
func TestSteadySendAllocatesNothing(t *testing.T) {
	for _, name := range []string{"inline", "list"} {
		t.Run(name, func(t *testing.T) {
			r := newRecvCycleRig(t, false)
			sgl := []SGE{{Addr: r.bufA, Length: 32, LKey: r.mrA.LKey}, {Addr: r.bufA + 32, Length: 32, LKey: r.mrA.LKey}}
			r.shape = func(wr SendWR) SendWR {
				if name == "inline" {
					wr.Inline = true
					return wr
				}
				wr.LocalAddr, wr.Length, wr.LKey, wr.SGL = 0, 0, 0, sgl
				return wr
			}
			for i := 0; i < 200; i++ { // warm, and past the 64-WQEBB ring's end twice
				r.round(t)
			}
			allocs := testing.AllocsPerRun(100, func() { r.round(t) })
			assert.Zero(t, allocs, "allocations per message")
		})
	}
}

// TestReusedGatherListsCarryTheirOwnBytes: gather lists of 2, 3 and 4
// elements decoded at the same WQEBB indexes, with up to five WQEs on chip
// at once, each deliver their own bytes. A 16-WQEBB send queue holds a
// burst of five SENDs (a SEND WQE is a 16-byte ctrl segment and one
// 16-byte data segment an element: 48, 64 or 80 bytes, one or two
// WQEBBs), so over twelve bursts every index is reused by lists of other
// lengths; were the lists of two WQEs on chip at once one buffer, the
// later decode would overwrite the earlier WQE's addresses and its
// receive buffer would hold the other message's bytes.
func TestReusedGatherListsCarryTheirOwnBytes(t *testing.T) {
	lc := edrLink()
	s := components.NewSim()
	a, b := BackToBack(s, lc, Defaults(), Defaults())
	pdA, pdB := a.AllocPD(), b.AllocPD()
	qa := a.CreateQP(pdA, a.CreateCQ(64), a.CreateCQ(64), 16, 64)
	qb := b.CreateQP(pdB, b.CreateCQ(64), b.CreateCQ(64), 16, 64)
	require.NoError(t, ConnectRC(qa, qb, lc.MTU, 0x10, 0x20))
	const src, dst = 64 * 1024, 8 * 256
	bufA, bufB := a.Malloc(src), b.Malloc(dst)
	acc := AccessLocalWrite | AccessRemoteWrite
	mrA, mrB := a.RegMR(pdA, bufA, src, acc), b.RegMR(pdB, bufB, dst, acc)
	var wc [8]WC
	pause := &poster{fn: s.Engine.Pause}
	msg := 0
	for burst := 0; burst < 12; burst++ {
		want := make([][]byte, 5)
		for i := range want {
			rwr := RecvWR{ID: uint64(msg), Addr: bufB + uint64(i*256), Length: 256, LKey: mrB.LKey}
			require.NoError(t, b.PostRecv(qb, &rwr))
			// Message msg: 2 + msg%3 elements of 16 + 8j bytes, each at
			// its own place in A's buffer, filled with bytes that name
			// the message and the element.
			var sgl []SGE
			for j := 0; j < 2+msg%3; j++ {
				e := SGE{Addr: bufA + uint64(msg*512+j*128), Length: uint32(16 + 8*j), LKey: mrA.LKey}
				data := make([]byte, e.Length)
				for k := range data {
					data[k] = byte(msg*16 + j*4 + k)
				}
				a.Mem.Write(e.Addr, data)
				want[i] = append(want[i], data...)
				sgl = append(sgl, e)
			}
			swr := SendWR{ID: uint64(msg), Opcode: WRSend, Signaled: true, SGL: sgl}
			require.NoError(t, a.PostSend(qa, &swr))
			msg++
		}
		s.Schedule(s.Now()+50*ib.Microsecond, pause, 1)
		s.Engine.Continue()
		require.NoError(t, s.Run())
		require.Equal(t, 5, b.PollCQ(qb.RecvCQ, wc[:]), "burst %d: receive completions", burst)
		require.Equal(t, 5, a.PollCQ(qa.SendCQ, wc[:]), "burst %d: send completions", burst)
		for i, w := range want {
			got := make([]byte, len(w))
			b.Mem.Read(bufB+uint64(i*256), got)
			assert.Equal(t, w, got, fmt.Sprintf("burst %d, message %d", burst, i))
		}
	}
}
