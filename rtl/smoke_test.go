package rtl

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSwitchSmoke checks that the emitted port logic (buffers, credit
// counters, allocator, crossbar, VL arbiter, output unit) moves packets end
// to end.
func TestSwitchSmoke(t *testing.T) {
	t.Parallel()
	d := Design{Name: "smoke", Radix: 2, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 4}
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	// testdata/smoke_tb.v writes the route DLID 1 -> port 0 into the
	// forwarding tables, forces the (TODO) link of port 1 to deliver three
	// 2-block packets for DLID 1 on VLs 0, 1, 0 and counts what port 0 sends.
	tb, err := os.ReadFile(filepath.Join("testdata", "smoke_tb.v"))
	require.NoError(t, err)
	out := runIcarus(t, append(files, File{Name: "smoke_tb.v", Text: string(tb)}), "smoke_tb")
	m := regexp.MustCompile(`SMOKE blocks=(\d+) sops=(\d+) eops=(\d+) fctbs0=(\d+) fctbs1=(\d+) fcs=(\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	// 3 packets x 2 blocks (PktLen 20 words: (4*20 + 2) B = 82 B = 2 blocks).
	assert.Equal(t, 6, n(1), "blocks out of port 0")
	assert.Equal(t, 3, n(2), "packet starts")
	assert.Equal(t, 3, n(3), "packet ends")
	// FCTBS counts blocks sent per VL: VL0 carried packets 0 and 2, VL1 packet 1.
	assert.Equal(t, 2*2, n(4), "FCTBS VL0")
	assert.Equal(t, 1*2, n(5), "FCTBS VL1")
	// Each VL's FCCL advertisement differs from the reset value, so at least
	// one flow-control packet per VL goes out.
	assert.GreaterOrEqual(t, n(6), 2, "flow-control packets")
}

// runIcarus compiles files with Icarus Verilog, top being the testbench
// module, runs the simulation and returns what it printed.
func runIcarus(t *testing.T, files []File, top string) string {
	t.Helper()
	needTool(t, "iverilog", "vvp")
	dir := t.TempDir()
	require.NoError(t, WriteTree(dir, files))
	ctx := context.Background()
	_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-s", top, "-o", "tb.vvp"}, FileNames(files)...)...)
	require.NoError(t, err)
	out, err := runTool(ctx, dir, "vvp", "-n", "tb.vvp")
	require.NoError(t, err)
	return out
}
