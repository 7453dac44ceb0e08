package switchasic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// TestInputVLsShareAnOutputVL: two input VLs of one input whose head
// packets leave on the same output VL (a per-pair SL-to-VL table merges
// them) are served in turn. Host 0 sends SL0 on VL0 and SL1 on VL1 (the
// 2-VL default table), 400 packets of each queued at time 0; the pair
// (port 0 → port 1) maps both SLs to VL 0. Port 1's link is 4x HDR (40 ps a
// byte) against 4x NDR (20 ps) into port 0, so the output drains at half
// the input's rate: after a few packets both input VLs always hold a ready
// head for (output 1, VL 0), and only one of them can be that output VL's
// candidate in a round. The input's VL pointer moves past the VL granted,
// so the grants alternate: in any 200 consecutive deliveries from the 10th
// on, exactly 100 are SL0 and 100 SL1 (±1 for where the window starts).
//
// The pointer used to advance once per round over all 16 VL positions: VL 1
// came first only when it stood at 1, and SL1 got about 1 grant in 16.
// It also depended on how many rounds ran, so per-cycle rounds could give
// other grants than event-driven ones; the test runs both.
func TestInputVLsShareAnOutputVL(t *testing.T) {
	for _, perCycle := range []bool{false, true} {
		cfg := smallConfig(2, 2)
		cfg.VLArbHigh = nil
		cfg.VLArbLow = []VLArbConfig{{VL: 0, Weight: 4}, {VL: 1, Weight: 4}}
		cfg.VLBufferBytes = 8 * 1088 // 8 packets of 17 blocks
		hdr := link.NewTiming(link.HDR, 4, 13000, 0, link.CopperPsPerM)
		n := newTestNet(t, cfg, netOpts{perPort: []link.Timing{ndr(13000), hdr}, perCycle: perCycle})
		merge := cfg.SL2VLTable()
		merge[1] = 0
		n.sw.sl2vl.SetPair(0, 1, merge)
		for k := 0; k < 400; k++ {
			for _, sl := range []uint8{0, 1} {
				n.eps[0].send(n.packet(0, 1, sl, 1000)) // 1026 wire bytes: 17 blocks
			}
		}
		n.s.StopAt(30 * ib.Microsecond)
		require.NoError(t, n.s.Run())
		got := n.eps[1].got
		require.GreaterOrEqual(t, len(got), 210, "30 µs at 41.04 ns a packet delivers about 700")
		var perSL [2]int
		for _, a := range got[10:210] {
			assert.Equal(t, uint8(0), a.vl, "both SLs leave on VL 0")
			perSL[a.sl]++
		}
		assert.InDelta(t, 100, perSL[0], 1, "per-cycle %v: SL0 %d, SL1 %d of 200", perCycle, perSL[0], perSL[1])
	}
}
