package verif

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
)

// switchBench is a 3-port switch with a bench endpoint on each port: hosts
// 0 and 1 send to host 2, so the switch's Port[2] arbitrates between them.
type switchBench struct {
	s   *components.Sim
	sw  *switchasic.Switch
	eps []*benchEndpoint
}

func (b *switchBench) hookables() []sim.Hookable {
	hs := []sim.Hookable{b.sw}
	for i, e := range b.eps {
		hs = append(hs, b.sw.Port(i), e.port, e)
	}
	return hs
}

func (b *switchBench) String() string {
	c := b.sw.Config()
	return fmt.Sprintf("switch radix=%d vls=%d vlarb_high=%v vlarb_low=%v limit=%d clock=%v cut=%v hosts=3 link=qdr4x",
		c.Radix, c.VLs, c.VLArbHigh, c.VLArbLow, c.VLHighLimit, c.CoreClockMHz, c.CutThrough)
}

// newVLArbBench: host 0 sends n packets on VL0 (QP 17), host 1 n packets on
// VL1 (QP 18), all 254 bytes (RDMA WRITE ONLY: LRH 8 + BTH 12 + RETH 16 +
// 212 payload + ICRC 4 + VCRC 2 = 254, so ⌈254/64⌉ = 4 blocks), to host 2.
// Low-priority table {VL0: 8, VL1: 24}, no high table.
func newVLArbBench(t testing.TB, n int) *switchBench {
	s := components.NewSim()
	cfg := switchasic.Defaults()
	cfg.Radix, cfg.VLs = 3, 2
	cfg.VLArbHigh = nil
	cfg.VLArbLow = []switchasic.VLArbConfig{{VL: 0, Weight: 8}, {VL: 1, Weight: 24}}
	lft := switchasic.NewLFT(3)
	for i := 0; i < 3; i++ {
		lft.Set(uint16(i+1), i)
	}
	lc := link.Defaults()
	lc.FCRefreshNs = 1e9 // refresh after the run: the run ends when the traffic does
	sw, err := switchasic.MakeBuilder().WithSim(s).WithConfig(cfg).WithLFT(lft).WithFlowControl(lc).Build("Fabric.Switch[0]")
	require.NoError(t, err)
	b := &switchBench{s: s, sw: sw}
	bc := &benchConfig{}
	for i := 0; i < 3; i++ {
		e := &benchEndpoint{name: fmt.Sprintf("Fabric.Host[%d].Port[0]", i), s: s, cfg: bc, held: map[int64]*ib.Packet{}}
		e.port = link.NewPort(s, e, e.name, 0, link.PortConfig{VLs: 2, BufferBlocks: 64})
		link.Connect(e.port, sw.Port(i), qdr4x())
		b.eps = append(b.eps, e)
	}
	for k := 0; k < n; k++ {
		for src := 0; src < 2; src++ {
			p := s.NewPacket()
			seq := p.Seq
			*p = writePacket(uint32(k), 212)
			p.Seq = seq
			p.SLID, p.DLID = uint16(src+1), 3
			p.SL, p.VL = uint8(src), uint8(src)
			p.DestQP = uint32(17 + src)
			p.ICRC = ib.ComputeICRC(p)
			b.eps[src].queue = append(b.eps[src].queue, p)
		}
	}
	s.Schedule(0, b.eps[0], benchStart)
	s.Schedule(0, b.eps[1], benchStart)
	s.StopAt(100 * ib.Microsecond)
	return b
}

func runVLArbGolden(t *testing.T) []byte {
	b := newVLArbBench(t, 8)
	var buf bytes.Buffer
	rec := NewRecorder(&buf, Header{Version: TraceVersion, Config: ConfigHash([]byte(b.String())), Seed: 0}, Filter{})
	AttachHook(rec, b.hookables()...)
	chk := AttachCheckers(CheckConfig{OnViolation: func(*Violation) { b.s.Stop() }}, b.hookables()...)
	require.NoError(t, b.s.Run())
	chk.Finish(b.s.Now(), true)
	require.NoError(t, chk.Err())
	require.NoError(t, rec.Flush())
	return buf.Bytes()
}
