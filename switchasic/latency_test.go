package switchasic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

func smallConfig(radix, vls int) Config {
	c := Defaults()
	c.Radix = radix
	c.VLs = vls
	c.ISLIPIterations = 1
	return c
}

// sendOne sends one packet from host 0 to host 1 at time 0 on an idle
// switch and returns what the sink saw.
func sendOne(t *testing.T, cfg Config, o netOpts, payload int) arrival {
	n := newTestNet(t, cfg, o)
	n.eps[1].onGet = func(arrival) { n.s.Stop() }
	n.eps[0].send(n.packet(0, 1, 0, payload))
	require.NoError(t, n.s.Run())
	require.Len(t, n.eps[1].got, 1)
	return n.eps[1].got[0]
}

// TestZeroLoadLatency: on an idle switch the head of a packet leaves the
// output at the first clock edge after its head (cut-through) or tail
// (store-and-forward) arrived, plus (route + alloc + xbar) cycles — the
// stage sum — plus max(0, ⌈bytes/64⌉ cycles − serialization): the crossbar
// moves whole 64-byte cycles and the output may not outrun it, so a packet
// shorter on the wire than in the crossbar waits for its tail. That term is
// zero for every packet here but the minimal one: 26 bytes of headers take
// one 1000-ps cycle in the crossbar and 26 × 20 = 520 ps on the wire, so
// the head leaves 480 ps late. The sink sees it one link latency later.
func TestZeroLoadLatency(t *testing.T) {
	ceil := func(x, p ib.PS) ib.PS { return (x + p - 1) / p * p }
	tests := []struct {
		name          string
		cut           bool
		route, al, xb int
		mhz           float64
		latency       ib.PS
		payload       int
	}{
		{"ct default stages", true, 40, 40, 40, 1000, 13000, 2024},
		{"saf default stages", false, 40, 40, 40, 1000, 13000, 2024},
		{"ct unaligned head", true, 3, 5, 7, 1000, 13500, 100},
		{"saf unaligned head", false, 3, 5, 7, 1000, 13500, 100},
		{"ct 800 MHz", true, 10, 20, 30, 800, 21352, 4096},
		{"saf 800 MHz", false, 10, 20, 30, 800, 21352, 4096},
		{"ct minimal packet", true, 40, 40, 40, 1000, 13000, 0},
		{"saf minimal packet", false, 40, 40, 40, 1000, 13000, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig(4, 1)
			cfg.CutThrough = tc.cut
			cfg.RouteCycles, cfg.AllocCycles, cfg.XbarCycles = tc.route, tc.al, tc.xb
			cfg.CoreClockMHz = tc.mhz
			tm := ndr(tc.latency)
			a := sendOne(t, cfg, netOpts{timing: tm}, tc.payload)

			bytes := 26 + tc.payload
			ser := ib.PS(bytes * 20) // 4x NDR: 400 Gb/s = 20 ps per byte
			require.Equal(t, ser, tm.Serialization(bytes))
			p := cfg.CyclePS()
			stages := ib.PS(tc.route+tc.al+tc.xb) * p
			head := tc.latency // head at the switch input
			edge := ceil(head, p)
			if !tc.cut {
				edge = ceil(head+ser, p)
			}
			xbarCycles := ib.PS((bytes + cfg.DatapathBytes - 1) / cfg.DatapathBytes)
			late := max(0, xbarCycles*p-ser) // the output waits for the crossbar's tail
			if tc.payload == 0 {
				require.Equal(t, ib.PS(480), late, "26 bytes: one 1000-ps cycle against 520 ps")
			} else {
				require.Zero(t, late)
			}
			assert.Equal(t, edge+stages+late+tc.latency, a.head, "sink head")
			assert.Equal(t, edge+stages+late+tc.latency+ser, a.tail, "sink tail")
		})
	}
}

// TestCutThroughVsStoreAndForward: with the head and tail of the packet on
// clock edges (latency 13 ns, 2050 bytes = 41 ns at 20 ps/byte, 1 GHz),
// store-and-forward delivers exactly one serialization time after the head
// later than cut-through.
func TestCutThroughVsStoreAndForward(t *testing.T) {
	o := netOpts{timing: ndr(13000)}
	cfg := smallConfig(4, 1)
	ct := sendOne(t, cfg, o, 2024)
	cfg.CutThrough = false
	saf := sendOne(t, cfg, o, 2024)
	ser := ib.PS(2050 * 20)
	assert.Equal(t, ser, saf.head-ct.head)
	assert.Equal(t, ser, saf.tail-ct.tail)
}

// TestCutThroughSlowInput: a packet from a 4x EDR host (100 Gb/s, 80 ps per
// byte) to a 4x NDR host (20 ps per byte). Cut-through must not let the
// output outrun the input: the tail leaves the output no earlier than it
// came through the crossbar (its arrival at the input, on a clock edge, plus
// the crossbar traversal), so the head start is delayed to
// tailIn + xbar − ser_out.
func TestCutThroughSlowInput(t *testing.T) {
	cfg := smallConfig(4, 1)
	edr := link.NewTiming(link.EDR, 4, 13000, 0, link.CopperPsPerM)
	fast := ndr(13000)
	o := netOpts{perPort: []link.Timing{edr, fast, fast, fast}}
	a := sendOne(t, cfg, o, 2024)
	bytes := 2050
	serIn, serOut := ib.PS(bytes*80), ib.PS(bytes*20)
	require.Equal(t, serIn, edr.Serialization(bytes))
	// Head at the switch 13 ns, tail 13 ns + 164 ns = 177 ns (on an edge).
	tailIn := 13000 + serIn
	stages := cfg.PipelinePS()
	headStart := max(13000+stages, tailIn+ib.PS(cfg.XbarCycles)*1000-serOut)
	assert.Equal(t, tailIn+40000-serOut, headStart, "the tail bound is the binding one here")
	assert.Equal(t, headStart+13000, a.head)
	assert.Equal(t, headStart+serOut+13000, a.tail)
}
