package switchasic

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the model")

// TestGoldenTrace pins the switch's trace for a small contended scenario
// (two inputs on VL0 and VL1 into one output, VL weights 8 and 4 blocks, one
// unrouted packet): every buf_enq, arb_grant, buf_deq and drop with its time
// in ps. Rewrite with -update after a deliberate timing change, and say why
// in the commit.
//
// Checked by hand: heads at 21352 ps → edge 22000 + 40 route cycles = first
// round at 62000 (VL0, seq 1, 4 of its 8 blocks). An output takes the next
// packet in the last round before its wire frees less than a cycle after
// round + 81 ns: seq 1 is on the wire 142000..147080 (254 B × 20 ps), so
// the next round is 67000 (VL0 seq 3, weight used up), then 72000 and 74000
// (VL1 seq 2 and 4, 2 blocks each against weight 4), 77000 (VL0 seq 5) and
// 82000 (VL1 seq 6). The unrouted packet is dropped at its head.
func TestGoldenTrace(t *testing.T) {
	cfg := smallConfig(4, 2)
	cfg.VLArbHigh = nil
	cfg.VLArbLow = []VLArbConfig{{VL: 0, Weight: 8}, {VL: 1, Weight: 4}}
	n := newTestNet(t, cfg, netOpts{timing: ndr(21352)})
	rec := &traceRecorder{}
	n.sw.AcceptHook(rec)
	for k := 0; k < 3; k++ {
		n.eps[0].send(n.packet(0, 2, 0, 228)) // 254 bytes, 4 blocks
		n.eps[1].send(n.packet(1, 2, 1, 100)) // 126 bytes, 2 blocks
	}
	lost := n.packet(3, 0, 0, 64)
	lost.DLID = 77
	n.eps[3].send(lost)
	n.s.StopAt(2 * ib.Microsecond)
	require.NoError(t, n.s.Run())

	var sb strings.Builder
	for _, ev := range rec.events {
		fmt.Fprintf(&sb, "%d %s %s", ev.Time, ev.Kind, ev.Path)
		for _, f := range ev.Fields {
			if f.IsStr {
				fmt.Fprintf(&sb, " %s=%s", f.Key, f.Str)
			} else {
				fmt.Fprintf(&sb, " %s=%d", f.Key, f.Int)
			}
		}
		sb.WriteByte('\n')
	}
	got := sb.String()
	require.NotEmpty(t, rec.events, "a golden comparison of nothing proves nothing")
	path := filepath.Join("testdata", "contended_two_vls.golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	assert.Equal(t, string(want), got)
}
