package switchasic

import (
	"testing"

	"github.com/hcasim/hcasim/ib"
)

func TestRoundsPerPacket(t *testing.T) {
	cfg := smallConfig(16, 1)
	for _, load := range []float64{0.5, 0.9} {
		n := newTestNet(t, cfg, netOpts{timing: ndr(21352)})
		_ = n
		r := runUniform(t, cfg, load, 2048, 0, 50*ib.Microsecond)
		t.Logf("load %.1f events %d blockhops %d rounds %d packets %d", load, r.events, r.blockHops, r.rounds, r.packets)
	}
}
