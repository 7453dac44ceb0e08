package rtl

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verilatorBinaryOpts are the options every co-simulation testbench is
// built with (the sources follow): --binary is --main --exe --build
// --timing, and --build runs `make -C obj -f Vtb.mk -j 1`.
var verilatorBinaryOpts = []string{"--main", "--exe", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style",
	"--top-module", "tb", "-o", "Vtb", "--Mdir", "obj", "-j", "1", "-O0"}

// verilatorRuntimeObjs are the objects of Verilator's C++ runtime that a
// --build compiles into every model's obj directory (VM_GLOBAL_FAST in
// Vtb_classes.mk). They are built from Verilator's own sources with the
// flags the options give, whatever the design: about 9 of a co-simulation
// build's 14 s of CPU.
var verilatorRuntimeObjs = []string{"verilated", "verilated_threads", "verilated_timing"}

// verilatorPCH is the header every model's C++ begins with (Vtb.h and
// Vtb___024root.h include these two first): precompiled once per process
// beside the runtime objects (verilatorRuntimeDir) and put in front of each
// model's compile with -include, so that g++ reads the ~1.8 s of CPU these
// headers take to parse (libstdc++ and the coroutines) once, not in every
// build: a model's Vtb__ALL.o went from 2.4-3.7 s to 1.4-2.3 s of CPU,
// with the optimisation (-Os, Verilator's OPT_FAST) unchanged, since an
// -O0 model runs the 512-tag DMA case's 3000 cycles in 8.0 s, not 2.4.
const verilatorPCH = "hcasim_vl_pch.h"

// verilatorPCHMake is a makefile read after the model's Vtb.mk (which
// includes verilated.mk), so the header is compiled by the rule and with
// the very flags that compile Vtb__ALL.o: g++ refuses a precompiled header
// built otherwise (-Winvalid-pch says so; buildVerilator logs it) and reads
// the text header instead, which is slower but the same program.
const verilatorPCHMake = verilatorPCH + ".gch: " + verilatorPCH + "\n" +
	"\t$(OBJCACHE) $(CXX) $(CXXFLAGS) $(CPPFLAGS) $(OPT_FAST) -x c++-header -o $@ $<\n"

// verilatorRuntimePrefix names the runtime's directory in the temp
// directory: the prefix, the test process's ID, a dash and MkdirTemp's
// random part.
const verilatorRuntimePrefix = "hcasim-verilator-runtime-"

// removeStaleRuntimeDirs removes the runtime directories of test processes
// that have ended without their TestMain's cleanup (a test binary that hit
// its -timeout panics past it), so timed-out runs do not pile them up. A
// process is known alive by /proc/PID; without /proc nothing is removed.
// A directory of another live process, or of an older name without a
// process ID, is left alone.
func removeStaleRuntimeDirs() {
	if _, err := os.Stat("/proc/self"); err != nil {
		return
	}
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := runtimeDirPID(e.Name())
		if !ok || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
}

// runtimeDirPID returns the process ID in a runtime directory's name
// (verilatorRuntimePrefix, digits, a dash), and whether it has one.
func runtimeDirPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, verilatorRuntimePrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// verilatorRuntime holds the runtime objects compiled once per test process.
var verilatorRuntime struct {
	once sync.Once
	dir  string // obj directory of a one-module build; "" until built
	err  error
}

// verilatorRuntimeDir builds a model of an empty testbench with
// verilatorBinaryOpts, once per test process, and returns its obj
// directory, which holds verilatorRuntimeObjs. The testbench waits one
// time step, as every co-simulation testbench does, so that the build
// needs --timing's runtime (verilated_timing) too.
func verilatorRuntimeDir(ctx context.Context) (string, error) {
	rt := &verilatorRuntime
	rt.once.Do(func() {
		removeStaleRuntimeDirs()
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", verilatorRuntimePrefix, os.Getpid()))
		if err != nil {
			rt.err = err
			return
		}
		verilatorRuntimeCleanup = func() { os.RemoveAll(dir) }
		if err := os.WriteFile(filepath.Join(dir, "tb.v"), []byte("module tb;\ninitial #1 $finish;\nendmodule\n"), 0o644); err != nil {
			rt.err = err
			return
		}
		if _, err := runTool(ctx, dir, "verilator", append(slices.Clone(verilatorBinaryOpts), "tb.v")...); err != nil {
			rt.err = err
			return
		}
		if _, err := runTool(ctx, dir, "make", "-C", "obj", "-f", "Vtb.mk", "-j", "1"); err != nil {
			rt.err = err
			return
		}
		obj := filepath.Join(dir, "obj")
		if err := os.WriteFile(filepath.Join(obj, verilatorPCH), []byte("#include \"verilated.h\"\n#include \"verilated_timing.h\"\n"), 0o644); err != nil {
			rt.err = err
			return
		}
		if err := os.WriteFile(filepath.Join(obj, "pch.mk"), []byte(verilatorPCHMake), 0o644); err != nil {
			rt.err = err
			return
		}
		if _, err := runTool(ctx, dir, "make", "-C", "obj", "-f", "Vtb.mk", "-f", "pch.mk", verilatorPCH+".gch"); err != nil {
			rt.err = err
			return
		}
		rt.dir = obj
	})
	return rt.dir, rt.err
}

// verilatorRuntimeCleanup removes the runtime's directory (TestMain).
var verilatorRuntimeCleanup = func() {}

// buildSim compiles a testbench's files in dir for sim, "icarus" or
// "verilator", and returns the command and arguments that run it; under
// -short a Verilator build is skipped (Icarus runs the same testbench).
func buildSim(t *testing.T, ctx context.Context, dir, sim string, files []string) (string, []string) {
	t.Helper()
	if sim == "icarus" {
		needTool(t, "iverilog", "vvp")
		_, err := runTool(ctx, dir, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
		require.NoError(t, err)
		return "vvp", []string{"-n", "sim.vvp"}
	}
	if testing.Short() {
		t.Skip("-short: Verilator co-simulation builds C++; Icarus runs the same testbench")
	}
	needTool(t, "verilator", "make", "g++")
	return buildVerilator(t, ctx, dir, files), nil
}

// buildVerilator builds the testbench files in dir (tb first) into
// dir/obj/Vtb and returns its path. It does what `verilator --binary` with
// the same options does, Verilate, then make, except that make finds
// Verilator's runtime objects already compiled, by the same compiler with
// the same flags (the Vtb binary was byte for byte the one a plain --binary
// build makes: checked for every cosimTable case with Verilator 5.006), and
// that the model's C++ begins with the precompiled verilatorPCH (the same
// declarations its own includes bring, read from the .gch). The copies are
// newer than Vtb.mk, which the runtime objects depend on, so make takes
// them as they are.
func buildVerilator(t *testing.T, ctx context.Context, dir string, files []string) string {
	t.Helper()
	rt, err := verilatorRuntimeDir(ctx)
	require.NoError(t, err)
	_, err = runTool(ctx, dir, "verilator", append(slices.Clone(verilatorBinaryOpts), files...)...)
	require.NoError(t, err)
	obj := filepath.Join(dir, "obj")
	for _, o := range verilatorRuntimeObjs {
		for _, ext := range []string{".o", ".d"} {
			require.NoError(t, copyFile(filepath.Join(rt, o+ext), filepath.Join(obj, o+ext)))
		}
	}
	out, err := runTool(ctx, dir, "make", "-C", "obj", "-f", "Vtb.mk", "-j", "1",
		"USER_CPPFLAGS=-include "+filepath.Join(rt, verilatorPCH)+" -Winvalid-pch")
	require.NoError(t, err)
	for _, o := range verilatorRuntimeObjs {
		// A runtime object compiled again would be correct but slow: say so.
		if strings.Contains(out, " -o "+o+".o ") {
			t.Logf("make compiled %s.o again; the shared runtime saved nothing", o)
		}
	}
	// So would the headers parsed again (-Winvalid-pch: "not used because").
	if strings.Contains(out, verilatorPCH+".gch") {
		t.Logf("g++ did not use the precompiled header:\n%s", tail(out, 10))
	}
	return filepath.Join(obj, "Vtb")
}

// copyFile copies src to a new file dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// TestRemoveStaleRuntimeDirs: a runtime directory whose process has ended
// is removed; one of a live process (this one, and PID 1) and names that
// carry no process ID stay.
func TestRemoveStaleRuntimeDirs(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc: stale runtime directories are not removed here")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// A process that has ended: its PID has no /proc entry once waited for
	// (until the kernel reuses it, which takes a full turn of the PID space).
	done := exec.Command("true")
	require.NoError(t, done.Run())
	dead := done.Process.Pid
	names := map[string]bool{ // name → kept
		fmt.Sprintf("%s%d-123", verilatorRuntimePrefix, dead):        false,
		fmt.Sprintf("%s%d-456", verilatorRuntimePrefix, os.Getpid()): true,
		verilatorRuntimePrefix + "1-789":                             true,
		verilatorRuntimePrefix + "2881000000":                        true, // the old name: no PID
		verilatorRuntimePrefix + "x-1":                               true,
		verilatorRuntimePrefix + "0-1":                               true, // no process has PID 0
		"other-dir":                                                  true,
	}
	for n := range names {
		require.NoError(t, os.Mkdir(filepath.Join(tmp, n), 0o755))
	}
	removeStaleRuntimeDirs()
	for n, kept := range names {
		_, err := os.Stat(filepath.Join(tmp, n))
		assert.Equal(t, kept, err == nil, n)
	}
}
