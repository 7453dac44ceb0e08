package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
)

// A one-switch fabric of four hosts as a topology file (hcasim topology's
// form), and a short synthetic run on it.
const fourHostTopo = `switch Fabric.Switch[0] 4 tier=1
host Fabric.Host[0]
host Fabric.Host[1]
host Fabric.Host[2]
host Fabric.Host[3]
root Fabric.Switch[0]
cable Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] 0.5m copper
cable Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2] 0.5m copper
cable Fabric.Host[2].Port[1] Fabric.Switch[0].Port[3] 0.5m copper
cable Fabric.Host[3].Port[1] Fabric.Switch[0].Port[4] 0.5m copper
`

const onFourHostTopo = `name: on-file
link: {generation: EDR}
switch: {radix: 4, vls: 1}
topology: {kind: file, file: four.topo}
workload: {kind: uniform, size: 1024, warmup_ns: 500, measure_ns: 3000, drain_ns: 20000}
`

// stripConfig removes results.json's "config" line, the one field that
// names where the config came from, and "wall_s", the machine's time.
func stripConfig(t *testing.T, js string) string {
	t.Helper()
	var keep []string
	for _, l := range strings.Split(js, "\n") {
		if f := strings.TrimSpace(l); !strings.HasPrefix(f, `"config":`) && !strings.HasPrefix(f, `"wall_s":`) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestFilePathsResolve: a relative topology.file written in a config file
// is read from the config file's directory, as workload.trace_file always
// was, so the config runs from any directory; one given with --set is
// read from the current directory (a shell user's meaning), for both keys;
// a config read from stdin (-config -) reads its files from the current
// directory. The same fabric gives the same results whichever way it was
// found (a run is a function of the config and the file's bytes).
func TestFilePathsResolve(t *testing.T) {
	confDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(confDir, "four.topo"), []byte(fourHostTopo), 0o644))
	cfg := filepath.Join(confDir, "on-file.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(onFourHostTopo), 0o644))

	// The reference: run where the file is (the old cwd rule's only
	// working place, and the config's directory).
	t.Chdir(confDir)
	code, want, stderr := run("-config", "on-file.yaml", "--format", "json", "--quiet")
	require.Equal(t, 0, code, stderr)
	want = stripConfig(t, want)
	require.Contains(t, want, `"accepted_load"`)

	// From elsewhere: the config's own directory, not the cwd.
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	code, got, stderr := run("-config", cfg, "--format", "json", "--quiet")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, want, stripConfig(t, got))
	// So does each point of a sweep (checked, then run).
	code, _, stderr = run("-config", cfg, "--set", "sweep.workload.offered_load=[0.2, 0.4]", "--out", filepath.Join(elsewhere, "sweep"), "--quiet")
	require.Equal(t, 0, code, stderr)
	// So do hcasim topology and hcasim rtl, which build the same fabric.
	code, topo, stderr := run("topology", "-config", cfg)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, fourHostTopo, topo)
	code, _, stderr = run("rtl", "-config", cfg, "--set", "switch.queueing=fifo", "-o", filepath.Join(elsewhere, "rtl"))
	require.Equal(t, 0, code, stderr)

	// --set topology.file: from the current directory first, then (a name
	// not there) beside the config, as -config takes a file before a
	// shipped name. Here the current directory's four.topo has 100 m
	// cables (propagation 100 m × 4.276 ns/m = 428 ns more per cable),
	// so its run is another.
	far := strings.ReplaceAll(fourHostTopo, "0.5m", "100m")
	mine := metricsOf(t, "-config", cfg, "--set", "topology.file="+filepath.Join(confDir, "four.topo"))
	code, _, stderr = run("-config", cfg, "--set", "topology.file=four.topo", "--quiet")
	require.Equal(t, 0, code, "beside the config: %s", stderr)
	assert.Equal(t, mine, metricsOf(t, "-config", cfg, "--set", "topology.file=four.topo"))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "four.topo"), []byte(far), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "mine.topo"), []byte(far), 0o644))
	farRun := metricsOf(t, "-config", cfg, "--set", "topology.file="+filepath.Join(elsewhere, "mine.topo"))
	assert.NotEqual(t, mine["latency_ns"], farRun["latency_ns"], "the 100 m cables show")
	for _, set := range []string{"topology.file=four.topo", "topology.file=mine.topo", "topology={kind: file, file: four.topo}"} {
		assert.Equal(t, farRun, metricsOf(t, "-config", cfg, "--set", set), "%s: the current directory's", set)
	}
	assert.Equal(t, mine, metricsOf(t, "-config", cfg), "the config's own value: its directory's, whatever the current one holds")
	code, _, stderr = run("-config", cfg, "--set", "topology.file=nope.topo", "--quiet")
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim: "+cfg+": topology.file: nope.topo: no such file in the current directory, nor beside the config "+cfg+
		" (a relative path given with --set is from the current directory, else the config's)\n", stderr)

	// --set workload.trace_file likewise: a trace in the current
	// directory, beside a shipped config (whose own traces are embedded).
	halo, ok := configs.Beside("examples/replay-halo.yaml", "replay-halo.trace")
	require.True(t, ok)
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "my.trace"), halo, 0o644))
	replay := []string{"-config", "examples/replay-halo.yaml", "--set", "sweep={}", "--quiet"}
	shipped := metricsOf(t, replay...)
	myTrace := metricsOf(t, append(replay, "--set", "workload.trace_file=my.trace")...)
	assert.Equal(t, shipped, myTrace, "the same trace's bytes, the same run")
	code, _, stderr = run(append(replay, "--set", "workload.trace_file=nope.trace")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "workload.trace_file: nope.trace: no such file in the current directory, nor beside the config examples/replay-halo.yaml")

	// -config -: the config from stdin, its files from the current
	// directory.
	stdinConfig := func(text string) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		_, err = w.WriteString(text)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		saved := os.Stdin
		os.Stdin = r
		t.Cleanup(func() { os.Stdin = saved; r.Close() })
	}
	t.Chdir(t.TempDir())
	stdinConfig(onFourHostTopo)
	code, _, stderr = run("-config", "-", "--quiet")
	assert.Equal(t, 2, code)
	assert.Equal(t, "hcasim: -: topology.file: four.topo: no such file (the config is read from stdin: a relative path is from the current directory)\n", stderr)
	t.Chdir(confDir)
	stdinConfig(onFourHostTopo)
	code, got, stderr = run("-config", "-", "--format", "json", "--quiet")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, want, stripConfig(t, got))
	assert.Contains(t, got, `"config": "-"`)

	// A sweep from stdin whose config has no name writes hcasim-out/stdin.
	t.Chdir(t.TempDir())
	stdinConfig(strings.Replace(onFourHostTopo, "name: on-file\n", "", 1) + "sweep:\n  workload.offered_load: [0.2, 0.4]\n")
	code, _, stderr = run("-config", "-", "--set", "topology.file="+filepath.Join(confDir, "four.topo"))
	require.Equal(t, 0, code, stderr)
	assert.FileExists(t, filepath.Join("hcasim-out", "stdin", "results.json"))
}
