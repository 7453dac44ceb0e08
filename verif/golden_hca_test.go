package verif

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// hcaPair is two back-to-back HCAs (hca.BackToBack) with one RC QP each and
// a registered 64 KiB buffer on each side, on EDR 4x over 0.5 m of copper
// with a 4096-byte MTU.
type hcaPair struct {
	s          *components.Sim
	lc         link.Config
	a, b       *hca.Device
	qa, qb     *hca.QP
	bufA, bufB uint64
	mrA, mrB   hca.MR
}

const hcaBufBytes = 1 << 16

func newHCAPair(t testing.TB) *hcaPair {
	lc := link.Defaults()
	lc.Generation, lc.Width, lc.LengthM, lc.MTU = "EDR", "4x", 0.5, 4096
	lc.FCRefreshNs = 1e9 // no refresh inside the run: the run ends with the traffic
	s := components.NewSim()
	cfg := hca.Defaults()
	a, b := hca.BackToBack(s, lc, cfg, cfg)
	p := &hcaPair{s: s, lc: lc, a: a, b: b}
	pdA, pdB := a.AllocPD(), b.AllocPD()
	p.qa = a.CreateQP(pdA, a.CreateCQ(64), a.CreateCQ(64), 64, 64)
	p.qb = b.CreateQP(pdB, b.CreateCQ(64), b.CreateCQ(64), 64, 64)
	require.NoError(t, hca.ConnectRC(p.qa, p.qb, lc.MTU, 0x10, 0x20))
	acc := hca.AccessLocalWrite | hca.AccessRemoteWrite | hca.AccessRemoteRead
	p.bufA, p.bufB = a.Malloc(hcaBufBytes), b.Malloc(hcaBufBytes)
	p.mrA = a.RegMR(pdA, p.bufA, hcaBufBytes, acc)
	p.mrB = b.RegMR(pdB, p.bufB, hcaBufBytes, acc)
	return p
}

func (p *hcaPair) String() string {
	return fmt.Sprintf("hca back-to-back %s %s %vm mtu=%d defaults", p.lc.Generation, p.lc.Width, p.lc.LengthM, p.lc.MTU)
}

// pattern returns n bytes that differ from their neighbours and from zero.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + 7)
	}
	return b
}

// hcaScenario runs one work request on a fresh pair with the recorder and
// the checkers attached, until the requester's CQE, and returns the trace,
// the pair and the checkers (Finish not yet called).
func hcaScenario(t *testing.T, setup func(p *hcaPair) hca.SendWR) ([]byte, *hcaPair, *Checkers) {
	p := newHCAPair(t)
	wr := setup(p)
	var buf bytes.Buffer
	rec := NewRecorder(&buf, Header{Version: TraceVersion, Config: ConfigHash([]byte(p.String())), Seed: 0}, Filter{})
	blocks := []sim.Hookable{p.a.Port, p.a, p.b.Port, p.b}
	AttachHook(rec, blocks...)
	chk := AttachCheckers(CheckConfig{OnViolation: func(*Violation) { p.s.Stop() }}, blocks...)
	var wcs [4]hca.WC
	n := 0
	p.a.OnCQE = func(*hca.CQ, ib.PS) {
		n += p.a.PollCQ(p.qa.SendCQ, wcs[n:])
		if n > 0 {
			p.s.Stop()
		}
	}
	require.NoError(t, p.a.PostSend(p.qa, &wr))
	p.s.StopAt(ib.Millisecond)
	require.NoError(t, p.s.Run())
	require.NoError(t, chk.Err())
	require.Equal(t, 1, n, "one completion")
	require.NoError(t, rec.Flush())
	return buf.Bytes(), p, chk
}

const hcaMsgBytes = 5000 // two packets at a 4096-byte MTU: 4096 + 904

func runRDMAWriteGolden(t *testing.T) []byte {
	src := pattern(hcaMsgBytes)
	out, p, chk := hcaScenario(t, func(p *hcaPair) hca.SendWR {
		p.a.Mem.Write(p.bufA, src)
		return hca.SendWR{ID: 1, Opcode: hca.WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: hcaMsgBytes,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB + 64, RKey: p.mrB.RKey}
	})
	dst := make([]byte, hcaMsgBytes)
	p.b.Mem.Read(p.bufB+64, dst)
	chk.CompareData(p.s.Now(), p.b.Name, "RDMA WRITE A→B", src, dst)
	require.NoError(t, chk.Err())
	return out
}

func runRDMAReadGolden(t *testing.T) []byte {
	src := pattern(hcaMsgBytes)
	out, p, chk := hcaScenario(t, func(p *hcaPair) hca.SendWR {
		p.b.Mem.Write(p.bufB+128, src)
		return hca.SendWR{ID: 2, Opcode: hca.WRRDMARead, Signaled: true, LocalAddr: p.bufA, Length: hcaMsgBytes,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB + 128, RKey: p.mrB.RKey}
	})
	dst := make([]byte, hcaMsgBytes)
	p.a.Mem.Read(p.bufA, dst)
	chk.CompareData(p.s.Now(), p.a.Name, "RDMA READ B→A", src, dst)
	require.NoError(t, chk.Err())
	return out
}

func runRKeyViolationGolden(t *testing.T) []byte {
	out, _, chk := hcaScenario(t, func(p *hcaPair) hca.SendWR {
		p.a.Mem.Write(p.bufA, pattern(hcaMsgBytes))
		ro := p.b.RegMR(p.qb.PD, p.bufB, 4096, hca.AccessRemoteRead) // no REMOTE_WRITE
		return hca.SendWR{ID: 3, Opcode: hca.WRRDMAWrite, Signaled: true, LocalAddr: p.bufA, Length: hcaMsgBytes,
			LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: ro.RKey}
	})
	require.NoError(t, chk.Err(), "the HCA refuses the write: protection holds")
	return out
}
