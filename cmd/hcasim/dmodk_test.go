package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/fabric"
)

// TestDModKRefusedOffTree: dmodk routes a fat tree and a Dragonfly+ as the
// dragonfly-plus builder makes it (docs/fabric.md, "D-mod-K on a
// Dragonfly+"). A fabric it does not route is refused on one line, exit
// 2, naming the key, two switches cabled at one tier and what it routes: a
// ring file, and a Dragonfly+ read from a topology file, which carries no
// tiers. The builder's Dragonfly+ runs (exit 0).
func TestDModKRefusedOffTree(t *testing.T) {
	built, err := fabric.DragonflyPlus(fabric.DragonflyPlusSpec{Radix: 4, Oversubscription: 1},
		fabric.CableSpec{LengthM: 2}, fabric.CableSpec{LengthM: 2}, fabric.CableSpec{LengthM: 30, Medium: fabric.Fibre})
	require.NoError(t, err)
	var topo strings.Builder
	require.NoError(t, fabric.FormatTopology(&topo, built))
	ring, err := filepath.Abs("../../fabric/testdata/ring5.topo")
	require.NoError(t, err)
	dfly := writeFile(t, "dfly.topo", topo.String())
	t.Chdir(t.TempDir()) // the run that works writes hcasim-out/ here
	config := func(topology string) string {
		return writeFile(t, "c.yaml", "seed: 1\nswitch: {radix: 4, vls: 1}\ntopology: {"+topology+", routing: dmodk}\n"+
			"workload: {kind: uniform, offered_load: 0.2, warmup_ns: 200, measure_ns: 500}\n")
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"ring", ring, "topology.routing: dmodk needs a fat tree (or a Dragonfly+ as topology.kind dragonfly-plus builds it), but Fabric.Switch["},
		{"dragonfly-plus file", dfly, "topology.routing: dmodk needs a fat tree (or a Dragonfly+ as topology.kind dragonfly-plus builds it), but Fabric.Spine["},
	} {
		code, stdout, stderr := run("-config", config("kind: file, file: "+tc.file))
		assert.Equal(t, 2, code, tc.name)
		assert.Empty(t, stdout, tc.name)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "%s: one line: %q", tc.name, stderr)
		assert.Contains(t, stderr, tc.want, tc.name)
		assert.Contains(t, stderr, "are cabled at the same tier", tc.name)
	}
	code, _, stderr := run("-config", config("kind: dragonfly-plus"), "--quiet")
	assert.Equal(t, 0, code, stderr)
}
