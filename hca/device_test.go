package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// edrLink is EDR 4x over 0.5 m of copper with a 4096-byte MTU.
func edrLink() link.Config {
	lc := link.Defaults()
	lc.Generation, lc.Width, lc.LengthM, lc.MTU = "EDR", "4x", 0.5, 4096
	return lc
}

// pair is two connected hosts with one RC QP each and registered buffers.
type pair struct {
	s          *components.Sim
	a, b       *Device
	qa, qb     *QP
	bufA, bufB uint64
	mrA, mrB   MR
}

func newPair(t *testing.T, lc link.Config, cfg Config, bufBytes int) *pair {
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	p := &pair{s: s, a: a, b: b}
	pdA, pdB := a.AllocPD(), b.AllocPD()
	p.qa = a.CreateQP(pdA, a.CreateCQ(1024), a.CreateCQ(1024), 512, 512)
	p.qb = b.CreateQP(pdB, b.CreateCQ(1024), b.CreateCQ(1024), 512, 512)
	require.NoError(t, ConnectRC(p.qa, p.qb, lc.MTU, 0x10, 0x20))
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic
	p.bufA, p.bufB = a.Malloc(bufBytes), b.Malloc(bufBytes)
	p.mrA = a.RegMR(pdA, p.bufA, bufBytes, acc)
	p.mrB = b.RegMR(pdB, p.bufB, bufBytes, acc)
	return p
}

// run runs until both CPUs have nothing left and stops the link timers.
func (p *pair) runUntil(t *testing.T, done func() bool) {
	var check func(now ib.PS)
	check = func(now ib.PS) {
		if done() {
			p.s.Stop()
		}
	}
	p.a.OnCQE = func(_ *CQ, now ib.PS) { check(now) }
	p.b.OnCQE = func(_ *CQ, now ib.PS) { check(now) }
	p.s.StopAt(10 * ib.Millisecond)
	require.NoError(t, p.s.Run())
}

func TestOneWriteMovesData(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	src := make([]byte, 10000)
	for i := range src {
		src[i] = byte(i*13 + 7)
	}
	p.a.Mem.Write(p.bufA, src)
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 42, Opcode: WRRDMAWrite, Signaled: true,
		LocalAddr: p.bufA, Length: uint32(len(src)), LKey: p.mrA.LKey, RemoteAddr: p.bufB + 8, RKey: p.mrB.RKey}))
	var wcs [4]WC
	n := 0
	p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[n:]); return n > 0 })
	require.Equal(t, 1, n)
	assert.Equal(t, WC{WRID: 42, Status: WCSuccess, Opcode: WCRDMAWrite, ByteLen: 10000, QPN: p.qa.Num}, wcs[0])
	got := make([]byte, len(src))
	p.b.Mem.Read(p.bufB+8, got)
	assert.Equal(t, src, got)
}
