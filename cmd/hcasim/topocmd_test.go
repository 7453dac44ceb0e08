package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dflyBase is a Dragonfly+ design point: radix 8 gives each group 4 leaves
// of 4 hosts and 4 spines with 4 global ports each; 5 groups share a
// group's 16 global ports 4 ways, so 4 cables join every pair of groups.
const dflyBase = `name: dfly
seed: 1
link: {generation: NDR, width: 4x, length_m: 2, mtu: 4096}
switch: {radix: 8, vls: 1, vl_buffer_bytes: 16640}
workload: {kind: uniform, size: 4096, offered_load: 0.6, warmup_ns: 2000, measure_ns: 5000}
`

// metricsOf runs a config and returns its single point's metrics.
func metricsOf(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := run(append(args, "--format", "json", "--quiet")...)
	require.Equal(t, 0, code, errs)
	var res struct {
		Points []struct {
			Metrics map[string]any `json:"metrics"`
		} `json:"points"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Points, 1)
	delete(res.Points[0].Metrics, "wall_s")
	return res.Points[0].Metrics
}

// TestTopologyCommandRoundTrip: `hcasim topology` writes the fabric a
// builder makes as a topology file, and a run on that file is the run on
// the builder's fabric, metric for metric, for the dragonfly-plus (minhop)
// and for ndr.yaml's fat tree (dmodk, HCAs and background traffic).
//
// Counts of the dragonfly-plus, from its shape: switches 5 groups × (4
// leaves + 4 spines) = 40; cables = 80 host cables + 5 × 4 leaves × 4
// up-ports = 80 leaf–spine + C(5,2) = 10 pairs × 4 = 40 global = 200.
func TestTopologyCommandRoundTrip(t *testing.T) {
	dir := t.TempDir()
	built := filepath.Join(dir, "built.yaml")
	require.NoError(t, os.WriteFile(built, []byte(dflyBase+
		"topology: {kind: dragonfly-plus, groups: 5, global_cable_length_m: 10}\n"), 0o644))
	topo := filepath.Join(dir, "dfly.topo")
	code, out, errs := run("topology", "-config", built, "-o", topo)
	require.Equal(t, 0, code, errs)
	assert.Empty(t, out)
	assert.Equal(t, "hcasim topology: 80 hosts, 40 switches, 200 cables written to "+topo+"\n", errs)
	text, err := os.ReadFile(topo)
	require.NoError(t, err)
	assert.Equal(t, 40, strings.Count(string(text), "\nswitch ")+boolInt(strings.HasPrefix(string(text), "switch ")))
	assert.Equal(t, 200, strings.Count(string(text), "\ncable "))
	// The 40 global cables are the 10 m fibre ones, the rest 2 m copper.
	assert.Equal(t, 40, strings.Count(string(text), " 10m fibre\n"))
	// Without -o the same text goes to stdout.
	code, out, errs = run("topology", "-config", built)
	require.Equal(t, 0, code, errs)
	assert.Equal(t, string(text), out)

	onFile := filepath.Join(dir, "file.yaml")
	require.NoError(t, os.WriteFile(onFile, []byte(dflyBase+"topology: {kind: file, file: "+topo+"}\n"), 0o644))
	assert.Equal(t, metricsOf(t, "-config", built), metricsOf(t, "-config", onFile))

	// Non-minimal routing finds the file's groups from its cables (the
	// spines, switches without hosts, cabled to other groups): the run on
	// the file is the builder's, metric for metric. Every host sending to
	// the next group (shift 16) on minimal routes has 4 cables for a
	// group's 16 hosts, at most 0.25 of a link each; above that, the
	// detours carried the difference.
	nm := []string{"--set", "switch.vls=2", "--set", "topology.adaptive_routing=true", "--set", "topology.nonminimal=true",
		"--set", "workload.kind=shift", "--set", "workload.shift=16"}
	onBuilder := metricsOf(t, append([]string{"-config", built}, nm...)...)
	assert.Equal(t, onBuilder, metricsOf(t, append([]string{"-config", onFile}, nm...)...))
	assert.Greater(t, onBuilder["accepted_load"], 0.3)

	// Groups of unequal size, which the builder does not make: the same
	// file without group 0's first leaf and its 4 hosts (76 hosts, group
	// 0 with 3 leaves). The checked runs (lossless, credits, routes by
	// input) pass with and without detours, and with them packets take
	// more links on average: some took the 6-link detour.
	var kept []string
	drop := regexp.MustCompile(`Fabric\.(Leaf\[0\]|Host\[[0-3]\])[.\s]|Fabric\.(Leaf\[0\]|Host\[[0-3]\])$`)
	for _, line := range strings.Split(string(text), "\n") {
		if !drop.MatchString(line) {
			kept = append(kept, line)
		}
	}
	uneq := filepath.Join(dir, "uneq.topo")
	require.NoError(t, os.WriteFile(uneq, []byte(strings.Join(kept, "\n")), 0o644))
	// 5 removed node lines and 4 host cables + 4 leaf-spine cables.
	require.Equal(t, len(strings.Split(string(text), "\n"))-13, len(kept))
	hops := map[string]float64{}
	for _, on := range []string{"false", "true"} {
		m := metricsOf(t, "-config", onFile, "--set", "topology.file="+uneq, "--check", "--set", "switch.vls=2",
			"--set", "topology.adaptive_routing=true", "--set", "topology.nonminimal="+on, "--set", "workload.offered_load=1")
		assert.Equal(t, true, m["end_checks_run"], on)
		hops[on] = m["hops_mean"].(float64)
	}
	assert.Greater(t, hops["true"], hops["false"])

	// ndr.yaml: its sweep's axes (buffer, load) leave the fabric alone.
	ftopo := filepath.Join(dir, "ndr.topo")
	code, _, errs = run("topology", "-config", "ndr.yaml", "-o", ftopo)
	require.Equal(t, 0, code, errs)
	// 16 hosts on radix-8 leaves of 4 host ports: 4 leaves, 4 spines;
	// cables 16 + 4 × 4 = 32.
	assert.Equal(t, "hcasim topology: 16 hosts, 8 switches, 32 cables written to "+ftopo+"\n", errs)
	short := []string{"--set", "sweep={}", "--set", "workload.measure_ns=20000", "--set", "workload.iterations=50"}
	onFtopo := []string{"-config", "ndr.yaml", "--set", "topology.kind=file", "--set", "topology.file=" + ftopo,
		"--set", "topology.hosts=0", "--set", "topology.cable_length_m=0"}
	onBuilder = metricsOf(t, append([]string{"-config", "ndr.yaml"}, short...)...)
	assert.Equal(t, onBuilder, metricsOf(t, append(onFtopo, short...)...))
	// The form docs/fabric.md gives: the section set whole, its routing
	// given again.
	assert.Equal(t, onBuilder, metricsOf(t, append([]string{"-config", "ndr.yaml",
		"--set", "topology={kind: file, file: " + ftopo + ", routing: dmodk}"}, short...)...))

	// A fat tree's file is one group (leaves and spines joined by
	// switch-to-switch cables, no spine-to-spine ones): no Dragonfly+.
	code, out, errs = run(append(onFtopo, append(short, "--set", "switch.vls=2", "--set", "topology.adaptive_routing=true",
		"--set", "topology.nonminimal=true", "--set", "workload.kind=uniform", "--set", "topology.routing=minhop")...)...)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "hcasim: ndr.yaml: topology.nonminimal: true, but this fabric has 1 group (a Dragonfly+ has two or more "+
		"leaf/spine groups joined by spine-to-spine global cables); use a dragonfly-plus (or a topology file of one), or remove the key\n", errs)

	// Two groups of a leaf and a spine, the spines cabled together: two
	// groups, but no third group to detour through.
	two := writeFile(t, "two.yaml", dflyBase+`topology:
  kind: file
  adaptive_routing: true
  nonminimal: true
  text: |
    host H0
    host H1
    switch L0 8
    switch L1 8
    switch S0 8
    switch S1 8
    cable H0.Port[1] L0.Port[1] 2m copper
    cable H1.Port[1] L1.Port[1] 2m copper
    cable L0.Port[5] S0.Port[1] 2m copper
    cable L1.Port[5] S1.Port[1] 2m copper
    cable S0.Port[5] S1.Port[5] 10m fibre
`)
	code, out, errs = run("-config", two, "--set", "switch.vls=2", "--quiet")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "hcasim: "+two+": topology.nonminimal: true, but no spine of this fabric's 2 groups has a detour (a switch "+
		"without hosts cabled to another group and to a third group's spine cabled to that group, as a Dragonfly+'s spines are); "+
		"use a dragonfly-plus (or a topology file of one), or remove the key\n", errs)

	// Three groups of a leaf and a spine, the spines cabled in a triangle
	// (so detours exist), and group 0 with a second spine cabled to its
	// first: that cable joins one group's spines, not two groups.
	same := writeFile(t, "same.yaml", dflyBase+`topology:
  kind: file
  adaptive_routing: true
  nonminimal: true
  text: |
    host H0
    host H1
    host H2
    switch L0 8
    switch L1 8
    switch L2 8
    switch S0 8
    switch S0b 8
    switch S1 8
    switch S2 8
    cable H0.Port[1] L0.Port[1] 2m copper
    cable H1.Port[1] L1.Port[1] 2m copper
    cable H2.Port[1] L2.Port[1] 2m copper
    cable L0.Port[5] S0.Port[1] 2m copper
    cable L0.Port[6] S0b.Port[1] 2m copper
    cable L1.Port[5] S1.Port[1] 2m copper
    cable L2.Port[5] S2.Port[1] 2m copper
    cable S0.Port[5] S1.Port[5] 10m fibre
    cable S1.Port[6] S2.Port[5] 10m fibre
    cable S2.Port[6] S0.Port[6] 10m fibre
    cable S0.Port[7] S0b.Port[7] 10m fibre
`)
	code, out, errs = run("-config", same, "--set", "switch.vls=2", "--quiet")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "hcasim: "+same+": topology.nonminimal: true, but S0 and S0b, spines of one group (joined through "+
		"its leaves), are cabled to each other (S0.Port[7]); a Dragonfly+'s spine-to-spine cables join different groups; "+
		"use a dragonfly-plus (or a topology file of one), or remove the key\n", errs)
	// Without that cable the same fabric builds and runs checked.
	noSame := writeFile(t, "nosame.yaml", strings.Replace(readText(t, same), "    cable S0.Port[7] S0b.Port[7] 10m fibre\n", "", 1))
	code, _, errs = run("-config", noSame, "--set", "switch.vls=2", "--set", "workload.measure_ns=5000", "--check", "--quiet")
	assert.Equal(t, 0, code, errs)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestTopologyCommandRefuses: a sweep axis that changes the fabric, and bad
// flags, are one line and exit 2; pinned with --set, the axis is accepted.
func TestTopologyCommandRefuses(t *testing.T) {
	cfg := writeFile(t, "sweep.yaml", dflyBase+"topology: {kind: dragonfly-plus, groups: 5}\n"+
		"sweep:\n  switch.vl_buffer_bytes: [16640, 66560]\n  topology.global_cable_length_m: [10, 100]\n")
	code, out, errs := run("topology", "-config", cfg)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "hcasim: topology: "+cfg+": sweep.topology.global_cable_length_m: a topology file is one fabric, "+
		"and this axis changes it (at 10); pin it with --set topology.global_cable_length_m=VALUE (or drop the sweep with --set sweep={})\n", errs)
	code, out, errs = run("topology", "-config", cfg, "--set", "topology.global_cable_length_m=100")
	assert.Equal(t, 0, code, errs)
	assert.Contains(t, out, "m fibre\n")
	assert.Equal(t, 40, strings.Count(out, " 100m fibre\n"))

	dir := t.TempDir()
	pinned := []string{"topology", "-config", cfg, "--set", "topology.global_cable_length_m=100", "-o"}
	for _, c := range []struct {
		args []string
		want string
	}{
		// -o names the file the user gave, not the temporary one beside
		// it, and a directory is refused as one.
		{append(pinned[:len(pinned):len(pinned)], dir), "hcasim: topology: -o: " + dir + " is a directory (give a file name, e.g. " + filepath.Join(dir, "fabric.topo") + ")\n"},
		{append(pinned[:len(pinned):len(pinned)], filepath.Join(dir, "no", "f.topo")),
			"hcasim: topology: -o: " + filepath.Join(dir, "no", "f.topo") + " cannot be created: its directory " + filepath.Join(dir, "no") + " does not exist (give a file in a directory that does)\n"},
		{[]string{"topology"}, "hcasim: topology: -config: missing (usage: " + topologyUsage + ")\n"},
		{[]string{"topology", "-config", cfg, "extra"}, "hcasim: topology: unexpected argument \"extra\" (usage: " + topologyUsage + ")\n"},
		{[]string{"topology", "-config", cfg, "-o", ""}, "hcasim: topology: -o: an empty path (name the file to write, or leave -o out for stdout)\n"},
		{[]string{"topology", "-config", cfg, "--set", "topology.groups=40"}, "hcasim: topology: " + cfg +
			": topology.groups: 40 is out of range (2..17: every pair of groups needs a global cable, and a group has 4 spines × 4 global links = 16)\n"},
	} {
		code, out, errs := run(c.args...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Empty(t, out, "%v", c.args)
		assert.Equal(t, c.want, errs, "%v", c.args)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
