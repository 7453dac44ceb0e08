package rtl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// standaloneBlocks are the emitted modules no top instantiates yet
// (hca_transport will take hca_tx_path, which chains the other three), each
// with the files it needs, its own first. A tree's lint names a top
// (--top-module, iverilog -s), and Verilator and Icarus then elaborate only
// what that top reaches, so these are linted here, each as its own top, from
// the emitted tree.
var standaloneBlocks = []struct {
	top   string
	files []string
}{
	{"hca_tx_packetizer", []string{"hca_tx_packetizer.v"}},
	{"hca_tx_assemble", []string{"hca_tx_assemble.v"}},
	{"ib_icrc", []string{"ib_icrc.v"}},
	{"hca_tx_path", []string{"hca_tx_path.v", "hca_tx_packetizer.v", "hca_tx_assemble.v", "ib_icrc.v"}},
}

// TestStandaloneBlocksLint: verilator --lint-only -Wall prints nothing and
// iverilog -g2005 compiles, for each standalone block of an emitted tree.
func TestStandaloneBlocksLint(t *testing.T) {
	t.Parallel()
	needTool(t, "verilator", "iverilog")
	files, err := Emit(designByKey(t, "r7v2"), testVersion)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, WriteTree(dir, files))
	ctx := context.Background()
	for _, b := range standaloneBlocks {
		top := b.top
		t.Run(top, func(t *testing.T) {
			t.Parallel()
			for _, src := range b.files {
				_, err := os.Stat(filepath.Join(dir, src))
				require.NoError(t, err, "the tree has %s", src)
			}
			out, err := runTool(ctx, dir, "verilator", append([]string{"--lint-only", "-Wall", "--top-module", top}, b.files...)...)
			require.NoError(t, err)
			assert.Empty(t, strings.TrimSpace(out), "verilator -Wall output for %s", top)
			out, err = runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-s", top, "-o", top + ".vvp"}, b.files...)...)
			require.NoError(t, err)
			assert.Empty(t, strings.TrimSpace(out), "iverilog output for %s", top)
		})
	}
}
