package switchasic

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestLosslessStress: random packets (sizes 0..4096 payload bytes, random
// destinations and SLs on 4 VLs) from every host through small buffers, for
// every queueing discipline, allocator, speedup and forwarding mode. Nothing
// is lost, every flow (source, destination, SL) arrives in order, and at the
// end every switch buffer is empty again.
func TestLosslessStress(t *testing.T) {
	const radix, perHost = 6, 60
	for _, queueing := range []string{QueueFIFO, QueueVOQ} {
		for _, alloc := range []string{"separable", "islip", "wavefront"} {
			for _, speedup := range []int{1, 2} {
				for _, cut := range []bool{true, false} {
					name := fmt.Sprintf("%s_%s_s%d_ct%v", queueing, alloc, speedup, cut)
					t.Run(name, func(t *testing.T) {
						cfg := smallConfig(radix, 4)
						cfg.Queueing, cfg.Allocator, cfg.Speedup, cfg.CutThrough = queueing, alloc, speedup, cut
						cfg.ISLIPIterations = 2
						cfg.VLBufferBytes = ib.Credits(26+4096) * ib.CreditBytes // one MTU packet
						cfg.VLArbHigh = []VLArbConfig{{VL: 0, Weight: 16}}
						cfg.VLArbLow = []VLArbConfig{{VL: 1, Weight: 8}, {VL: 2, Weight: 64}, {VL: 3, Weight: 1}}
						cfg.VLHighLimit = 1
						n := newTestNet(t, cfg, netOpts{timing: ndr(21352), epBlocks: ib.Credits(26 + 4096)})
						rng := rand.New(rand.NewPCG(3, uint64(len(name))))
						total := radix * perHost
						delivered := 0
						for _, e := range n.eps {
							e.onGet = func(arrival) {
								delivered++
								if delivered == total {
									// Let the last tails leave the buffers.
									n.at(n.s.Now()+ib.Microsecond, n.s.Stop)
								}
							}
						}
						for k := 0; k < perHost; k++ {
							for src := 0; src < radix; src++ {
								dst := rng.IntN(radix - 1)
								if dst >= src {
									dst++
								}
								sl := uint8(rng.IntN(4))
								p := n.packet(src, dst, sl, 4*rng.IntN(1025))
								n.eps[src].send(p)
							}
						}
						n.s.StopAt(ib.Millisecond)
						require.NoError(t, n.s.Run())
						require.Equal(t, total, delivered)
						type flow struct{ src, dst int32 }
						last := map[flow]uint64{}
						for dst, e := range n.eps {
							for _, a := range e.got {
								f := flow{a.src, int32(dst)}
								// One SL per VL here, and a flow's packets share a VL
								// per SL; order must hold per (src, dst, VL).
								f.src = f.src*16 + int32(a.vl)
								assert.Greater(t, a.seq, last[f], "flow %v out of order", f)
								last[f] = a.seq
							}
						}
						c := n.sw.Counters()
						assert.Equal(t, uint64(total), c.Forwarded)
						for i := 0; i < radix; i++ {
							for vl := 0; vl < 4; vl++ {
								assert.Zero(t, n.sw.Port(i).BufferUsed(vl), "port %d vl %d", i, vl)
							}
						}
					})
				}
			}
		}
	}
}
