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

// standaloneBlocks are the emitted modules no top instantiates yet (the lead
// chains them into hca_transport later). A tree's lint names a top
// (--top-module, iverilog -s), and Verilator and Icarus then elaborate only
// what that top reaches, so these are linted here, each as its own top, from
// the emitted tree.
var standaloneBlocks = []string{"hca_tx_packetizer", "hca_tx_assemble", "ib_icrc"}

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
	for _, top := range standaloneBlocks {
		t.Run(top, func(t *testing.T) {
			t.Parallel()
			src := top + ".v"
			_, err := os.Stat(filepath.Join(dir, src))
			require.NoError(t, err, "the tree has %s", src)
			out, err := runTool(ctx, dir, "verilator", "--lint-only", "-Wall", "--top-module", top, src)
			require.NoError(t, err)
			assert.Empty(t, strings.TrimSpace(out), "verilator -Wall output for %s", top)
			out, err = runTool(ctx, dir, "iverilog", "-g2005", "-s", top, "-o", top+".vvp", src)
			require.NoError(t, err)
			assert.Empty(t, strings.TrimSpace(out), "iverilog output for %s", top)
		})
	}
}
