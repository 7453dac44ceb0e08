package fabric

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./fabric -update to create %s", path)
	assert.Equal(t, string(want), string(got))
}

// TestGoldenTopologyAndTables pins a small two-level tree (radix 4: 4 leaves
// of 2 hosts, 2 spines) as a topology file and its forwarding tables under
// every engine, so a change in wiring or routing shows up as a diff. The
// files are also examples of both formats.
func TestGoldenTopologyAndTables(t *testing.T) {
	topo, err := FatTree2(FatTree2Spec{Radix: 4, Oversubscription: 1}, CableSpec{LengthM: 2, Medium: Copper})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, FormatTopology(&buf, topo))
	golden(t, "fat-tree-2-radix4.topo", buf.Bytes())
	for _, engine := range RoutingEngines {
		sn, err := NewSubnet(topo, SubnetOptions{Routing: engine, Seed: 1, VLs: 1})
		require.NoError(t, err)
		buf.Reset()
		require.NoError(t, sn.WriteLFTs(&buf))
		golden(t, "fat-tree-2-radix4."+engine+".lft", buf.Bytes())
	}
}
