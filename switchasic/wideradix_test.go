package switchasic

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TestWideRadixIncast: a round's sets (candidates per output, requests per
// input) take a 64-bit word per 64 ports (components.PortRows), so a radix
// above 64 crosses word boundaries. On switches of radix 64 (one word), 65
// (two) and 256 (four, the last output port 255), inputs on both sides of
// each boundary (0, 63, 64, 127, 128, 255 where they exist) all send to
// the last port, and inputs 1 and 62 to port 63 (one word's last bit),
// under each allocator, fifo and voq, speedup 1 and 2 (speedup runs a
// second pass over the requests less the matched outputs).
//
// Derived checks: every packet reaches the host its DLID names (host i has
// LID i+1 on port i) and only that host, in order per source; the switch
// received and forwarded them all and dropped none; and the incast output
// is the bottleneck, so from its first head to its last tail at least
// (n−1) packets of 26+256 = 282 bytes went back to back on its wire at
// 20 ps a byte (4x NDR).
func TestWideRadixIncast(t *testing.T) {
	const each, payload = 12, 256
	for _, radix := range []int{64, 65, 256} {
		for _, alloc := range components.AllocatorNames() {
			for _, queueing := range []string{QueueFIFO, QueueVOQ} {
				for _, speedup := range []int{1, 2} {
					name := fmt.Sprintf("radix%d/%s/%s/speedup%d", radix, alloc, queueing, speedup)
					t.Run(name, func(t *testing.T) {
						cfg := smallConfig(radix, 1)
						cfg.Allocator = alloc
						cfg.Queueing = queueing
						cfg.Speedup = speedup
						n := newTestNet(t, cfg, netOpts{timing: ndr(21352)})
						last := radix - 1
						var toLast []int
						for _, i := range []int{0, 63, 64, 127, 128, 255} {
							if i < last {
								toLast = append(toLast, i)
							}
						}
						senders := map[int][]int{last: toLast, 63: {1, 62}}
						total := 0
						for dst, srcs := range senders {
							for _, src := range srcs {
								for k := 0; k < each; k++ {
									n.eps[src].send(n.packet(src, dst, 0, payload))
									total++
								}
							}
						}
						n.s.StopAt(ib.Millisecond) // a safety net: the counts fail if it is reached
						require.NoError(t, n.s.Run())
						for h, e := range n.eps {
							srcs, ok := senders[h]
							if !ok {
								assert.Empty(t, e.got, "host %d was sent nothing", h)
								continue
							}
							require.Len(t, e.got, len(srcs)*each, "host %d", h)
							lastSeq := map[int32]uint64{}
							for _, a := range e.got {
								assert.Contains(t, srcs, int(a.src), "host %d got a packet from %d", h, a.src)
								assert.Greater(t, a.seq, lastSeq[a.src], "host %d: source %d out of order", h, a.src)
								lastSeq[a.src] = a.seq
							}
						}
						got := n.eps[last].got
						assert.GreaterOrEqual(t, got[len(got)-1].tail-got[0].head, ib.PS((len(got)-1)*(26+payload)*20))
						c := n.sw.Counters()
						assert.Equal(t, uint64(total), c.Received)
						assert.Equal(t, uint64(total), c.Forwarded)
						assert.Zero(t, c.DropRoute+c.DropSL2VL)
					})
				}
			}
		}
	}
}
