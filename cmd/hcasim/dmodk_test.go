package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/fabric"
)

// TestDModKRefused: dmodk routes a fat tree and a Dragonfly+ (the
// dragonfly-plus builder's, or a topology file of that shape; docs/fabric.md,
// "D-mod-K on a Dragonfly+"). A fabric it does not route is refused on one
// line, exit 2, naming the key, what is wrong and the engines that route
// it: a ring file (switches cabled at one tier), and a Dragonfly+ file with
// one leaf–spine cable taken out, which D-mod-K cannot balance. The same
// file with the cable runs (exit 0), as does the builder's fabric.
func TestDModKRefused(t *testing.T) {
	built, err := fabric.DragonflyPlus(fabric.DragonflyPlusSpec{Radix: 8, Oversubscription: 1, Groups: 3, Spines: 2},
		fabric.CableSpec{LengthM: 2}, fabric.CableSpec{LengthM: 2}, fabric.CableSpec{LengthM: 30, Medium: fabric.Fibre})
	require.NoError(t, err)
	var topo strings.Builder
	require.NoError(t, fabric.FormatTopology(&topo, built))
	const cut = "cable Fabric.Leaf[0].Port[7] Fabric.Spine[0].Port[2] 2m copper\n"
	require.Contains(t, topo.String(), cut)
	ring, err := filepath.Abs("../../fabric/testdata/ring5.topo")
	require.NoError(t, err)
	dfly := writeFile(t, "dfly.topo", topo.String())
	uneven := writeFile(t, "uneven.topo", strings.Replace(topo.String(), cut, "", 1))
	t.Chdir(t.TempDir()) // the runs that work write hcasim-out/ here
	config := func(topology string) string {
		return writeFile(t, "c.yaml", "seed: 1\nswitch: {radix: 8, vls: 1}\ntopology: {"+topology+", routing: dmodk}\n"+
			"workload: {kind: uniform, offered_load: 0.2, warmup_ns: 200, measure_ns: 500}\n")
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"ring", ring, "topology.routing: dmodk needs a fat tree or a Dragonfly+, but Fabric.Switch[0] and Fabric.Switch[1] are cabled at the same tier (minhop, updown, random)"},
		{"uneven Dragonfly+", uneven, "topology.routing: dmodk needs every leaf of a Dragonfly+ cabled to every spine of its group by the same number of cables, but Fabric.Leaf[0] has 2 to Fabric.Spine[1], not 1 (minhop, updown, random)"},
	} {
		code, stdout, stderr := run("-config", config("kind: file, file: "+tc.file))
		assert.Equal(t, 2, code, tc.name)
		assert.Empty(t, stdout, tc.name)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "%s: one line: %q", tc.name, stderr)
		assert.Contains(t, stderr, tc.want, tc.name)
	}
	for _, topology := range []string{"kind: file, file: " + dfly, "kind: dragonfly-plus, spines: 2, groups: 3"} {
		code, _, stderr := run("-config", config(topology), "--quiet")
		assert.Equal(t, 0, code, "%s: %s", topology, stderr)
	}
}
