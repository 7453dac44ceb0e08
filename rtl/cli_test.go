package rtl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeLoad stands in for the config package: "r7v2.yaml" and "r36v1.yaml"
// load those designs, --set switch.radix=N overrides the radix, anything
// else is a user error.
func fakeLoad(t *testing.T) LoadFunc {
	return func(path string, sets []string) (Design, error) {
		if path != "r7v2.yaml" && path != "r36v1.yaml" {
			return Design{}, errors.New("config: " + path + ": no such file")
		}
		d := designByKey(t, strings.TrimSuffix(path, ".yaml"))
		d.Name = ""
		for _, s := range sets {
			var n int
			switch {
			case strings.HasPrefix(s, "switch.radix="):
				fmtSscanf(s, "switch.radix=%d", &n)
				d.Radix = n
			case strings.HasPrefix(s, "switch.vls="):
				fmtSscanf(s, "switch.vls=%d", &n)
				d.VLs = n
			default:
				return Design{}, errors.New("config: --set " + s + ": unknown key")
			}
		}
		return d, nil
	}
}

func TestCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The tree: every primitive, every templated module, every skeleton
	// module and the SL-to-VL tables (Emit).
	treeFiles := len(PrimitiveFiles) + len(templateFiles) + len(stubModules) + 1
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // substring
		stderr   string // exact, for errors
		wantFile string
		// wantRegen: the --set words of the regenerate command in the tree's headers
		wantRegen string
		// report: with Yosys on PATH the exit code is 0 and stdout and
		// wantFile are both the loaded design's report, the one
		// NewReport makes of it.
		report bool
	}{
		{"writes tree", []string{"-config", "r7v2.yaml", "-o", filepath.Join(dir, "a")}, 0, fmt.Sprintf("wrote %d Verilog files", treeFiles), "", "a/switch_top.v", "", false},
		{"double-dash flags", []string{"--config", "r7v2.yaml", "--out", filepath.Join(dir, "b")}, 0, "tops: switch_top, hca_top", "", "b/hca_top.v", "", false},
		// -c, as a run takes it (hcasim help lists -c, --config).
		{"short config flag", []string{"-c", "r7v2.yaml", "-o", filepath.Join(dir, "e")}, 0, fmt.Sprintf("wrote %d", treeFiles), "", "e/switch_top.v", "", false},
		// TestReportYosys's design: every (module, parameters) its report
		// synthesises is TestReportYosys's, so Yosys runs once for both
		// (synthesized keeps them for the process; at r7v2's parameters
		// the report took about 50 s of Yosys CPU of its own, 2026-12-03).
		// Without Yosys the exit code is 2 after the SRAM part.
		{"report", []string{"-config", "r36v1.yaml", "--report", "-o", filepath.Join(dir, "c")}, -1, "Buffer SRAM", "", "c/resources.txt", "", true},
		{"overrides in header", []string{"-config", "r7v2.yaml", "--set", "switch.vls=1", "--set=switch.radix=9", "-o", filepath.Join(dir, "d")}, 0, fmt.Sprintf("wrote %d", treeFiles), "", "d/switch_top.v", " --set switch.vls=1 --set switch.radix=9", false},
		{"missing config", []string{"-o", dir}, 2, "", "hcasim rtl: -config: missing (usage: hcasim rtl -config FILE [-o DIR [--testbench [--testbench-packets N]]] [--report] [--set key=value]...)\n", "", "", false},
		{"nothing to do", []string{"-config", "r7v2.yaml"}, 2, "", "hcasim rtl: nothing to do: give -o DIR to write Verilog, --report for resources, or both\n", "", "", false},
		// -o "$OUT" with OUT unset: a path left out, not "nothing to do".
		{"empty out", []string{"-config", "r7v2.yaml", "-o", ""}, 2, "", "hcasim rtl: -o: empty path (give the directory to write the Verilog tree into)\n", "", "", false},
		{"empty out with report", []string{"-config", "r7v2.yaml", "--report", "--out="}, 2, "", "hcasim rtl: -o: empty path (give the directory to write the Verilog tree into)\n", "", "", false},
		{"bad flag", []string{"-config", "r7v2.yaml", "--frobnicate"}, 2, "", "hcasim rtl: unknown flag: --frobnicate (usage: hcasim rtl -config FILE [-o DIR [--testbench [--testbench-packets N]]] [--report] [--set key=value]...)\n", "", "", false},
		{"loader error", []string{"-config", "nope.yaml", "-o", dir}, 2, "", "hcasim rtl: config: nope.yaml: no such file\n", "", "", false},
		{"invalid design", []string{"-config", "r7v2.yaml", "--set", "switch.radix=300", "-o", dir}, 2, "", "hcasim rtl: r7v2.yaml: switch.radix: 300 is outside 2..256 (IBA 1.6 allows up to 256 ports)\n", "", "", false},
		{"stray argument", []string{"-config", "r7v2.yaml", "-o", dir, "extra"}, 2, "", "hcasim rtl: unexpected argument \"extra\" (usage: hcasim rtl -config FILE [-o DIR [--testbench [--testbench-packets N]]] [--report] [--set key=value]...)\n", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(tc.args, &stdout, &stderr, testVersion, fakeLoad(t))
			if tc.code >= 0 {
				assert.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			}
			assert.Contains(t, stdout.String(), tc.stdout)
			if tc.stderr != "" {
				assert.Equal(t, tc.stderr, stderr.String())
			}
			if tc.wantFile != "" {
				b, err := os.ReadFile(filepath.Join(dir, tc.wantFile))
				require.NoError(t, err)
				if strings.HasSuffix(tc.wantFile, ".v") {
					// The loader gave no name: the header names the config path.
					assert.Contains(t, string(b), `from config "r7v2.yaml"`)
				}
				if _, err := toolPath("yosys"); tc.report && err == nil {
					assert.Equal(t, 0, code, "stderr: %s", stderr.String())
					d := designByKey(t, "r36v1")
					d.Name = "r36v1.yaml" // the loader gave no name: the config path
					r, err := NewReport(context.Background(), d, true)
					require.NoError(t, err)
					var want strings.Builder
					require.NoError(t, r.WriteText(&want))
					// After the tree's "wrote ..." lines.
					assert.True(t, strings.HasSuffix(stdout.String(), "\n"+want.String()), "the report printed:\n%s\nwant it to end with:\n%s", stdout.String(), want.String())
					assert.Equal(t, want.String(), string(b), "the report written")
				}
				if tc.wantRegen != "" {
					b, err := os.ReadFile(filepath.Join(dir, filepath.Dir(tc.wantFile), "switch_top.v"))
					require.NoError(t, err)
					assert.Contains(t, string(b), "\n// Regenerate: hcasim rtl -config <that config>"+tc.wantRegen+" -o <dir>;")
				}
			}
		})
	}
}

// TestReportWithoutYosys: with no yosys on PATH, --report prints the SRAM
// part, then says on one line what is missing, and exits 2.
func TestReportWithoutYosys(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := Main([]string{"-config", "r7v2.yaml", "--report"}, &stdout, &stderr, testVersion, fakeLoad(t))
	assert.Equal(t, 2, code)
	assert.Contains(t, stdout.String(), "Buffer SRAM")
	assert.Equal(t, "hcasim rtl: --report: cell and flop counts need yosys, which is not on PATH (install: "+EDAInstallHint+")\n", stderr.String())
}

// TestStaleOutputsRemoved: a tree written over an earlier run's must not
// keep that run's modules (a *.v glob would compile them with the new
// ones) or its resource report (which would describe another design); a
// file the user put there stays.
func TestStaleOutputsRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("old_block.v", "// Code generated by hcasim rtl from config \"x.yaml\" (hcasim v0). DO NOT EDIT.\nmodule old_block; endmodule\n")
	write("resources.txt", "hcasim rtl resource report for config \"x\"\n")
	write("my_tb.v", "module my_tb; endmodule\n")
	write("notes.txt", "mine\n")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"-config", "r7v2.yaml", "--set", "switch.vls=1", "-o", dir}, &stdout, &stderr, testVersion, fakeLoad(t))
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "removed what an earlier run wrote there and this one does not: old_block.v, resources.txt\n")
	for name, want := range map[string]bool{"old_block.v": false, "resources.txt": false, "my_tb.v": true, "notes.txt": true, "switch_top.v": true} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.Equal(t, want, err == nil, name)
	}
	// A second run over its own tree removes nothing.
	stdout.Reset()
	require.Equal(t, 0, Main([]string{"-config", "r7v2.yaml", "--set", "switch.vls=1", "-o", dir}, &stdout, &stderr, testVersion, fakeLoad(t)))
	assert.NotContains(t, stdout.String(), "removed")
}
