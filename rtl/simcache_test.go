package rtl

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Icarus compiles shared across the test process. Many tests compile the
// same bench (the same tb.v, sources and -P parameters) in directories of
// their own: a random run and a directed run of one block, a mutant table's
// unmutated case and a co-simulation's seed. iverilog's output depends only
// on its arguments and the bytes of the files it reads, so the first
// compile of a key is kept (the .vvp's bytes and iverilog's output) and the
// others get a copy written where their -o names, then run it with vvp as
// before: every run still happens, on its own trace, in its own directory.
// A mutant's source differs from the original's in its bytes, so it has a
// key of its own and is compiled into the design its test runs.

func init() { toolCache = cachedIcarusCompile }

// icarusCompile is one key's compile, made once.
type icarusCompile struct {
	once   sync.Once
	vvp    []byte // the -o file iverilog wrote
	out    string // iverilog's combined output
	err    error
	reused atomic.Int64 // compiles answered with vvp
}

var icarusCompiles sync.Map // icarusKey -> *icarusCompile

// icarusUncacheable are the iverilog options that read files or directories
// not named as sources (command files, include and library paths): a
// compile with one of them is not keyed, it always runs.
var icarusUncacheable = []string{"-c", "-f", "-I", "-y", "-Y", "-l", "-M", "-m"}

// icarusKey is the compile's key: the arguments in order and, for each
// argument that names a readable file in dir (not the -o output), its bytes.
// ok is false for a compile that must not be shared: an option in
// icarusUncacheable, a source with `include (its included file is not
// hashed), or no -o.
func icarusKey(dir string, args []string) (key string, ok bool) {
	h := sha256.New()
	hasOut := false
	for i, a := range args {
		for _, u := range icarusUncacheable {
			if strings.HasPrefix(a, u) {
				return "", false
			}
		}
		writeField(h, []byte(a))
		if i > 0 && args[i-1] == "-o" {
			hasOut = true
			continue // the output, which an earlier compile may have left
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, a))
		if err != nil {
			// Not a file here (a top name after -s, or a source that is
			// missing, which iverilog will report): the name alone.
			writeField(h, []byte{0})
			continue
		}
		if strings.Contains(string(b), "`include") {
			return "", false
		}
		writeField(h, []byte{1})
		writeField(h, b)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), hasOut
}

// writeField writes b to h with its length first, so that fields cannot
// run into each other.
func writeField(h interface{ Write([]byte) (int, error) }, b []byte) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// cachedIcarusCompile is toolCache for the tests: it answers iverilog
// compiles (ok true) and leaves every other tool run to runTool.
func cachedIcarusCompile(ctx context.Context, dir, name string, args []string) (string, bool, error) {
	if name != "iverilog" {
		return "", false, nil
	}
	key, ok := icarusKey(dir, args)
	if !ok {
		return "", false, nil
	}
	outName := ""
	for i := 1; i < len(args); i++ {
		if args[i-1] == "-o" {
			outName = args[i]
		}
	}
	v, _ := icarusCompiles.LoadOrStore(key, &icarusCompile{})
	c := v.(*icarusCompile)
	ran := false
	c.once.Do(func() {
		ran = true
		c.out, c.err = runToolUncached(ctx, dir, name, args...)
		if c.err == nil {
			c.vvp, c.err = os.ReadFile(filepath.Join(dir, outName))
		}
	})
	if ran || c.err != nil {
		// The compile ran here, or failed where it ran: the same sources
		// fail the same way (the error names the first directory).
		return c.out, true, c.err
	}
	start := time.Now()
	if err := os.WriteFile(filepath.Join(dir, outName), c.vvp, 0o755); err != nil {
		return "", true, err
	}
	c.reused.Add(1)
	logTool(start, dir, "iverilog-reused", args, nil)
	return c.out, true, nil
}

// icarusKeyProblems checks a compile key function against what sharing
// needs, and returns what it gets wrong: the same compile in two
// directories shares one key, so the cache is used at all; a source's
// bytes, a -P parameter and the order of the sources each change it, so a
// mutant or another configuration is never served another design; the -o
// file an earlier compile left does not; and compiles that read files the
// key cannot see (`include, -I, -y, -c) and compiles without -o are not
// shared.
func icarusKeyProblems(t *testing.T, key func(dir string, args []string) (string, bool)) []string {
	t.Helper()
	var problems []string
	mk := func(files map[string]string) string {
		d := t.TempDir()
		for n, text := range files {
			require.NoError(t, os.WriteFile(filepath.Join(d, n), []byte(text), 0o644))
		}
		return d
	}
	src := map[string]string{"tb.v": "module tb; a u(); endmodule\n", "a.v": "module a; parameter P = 1; endmodule\n"}
	args := []string{"-g2005", "-Ptb.u.P=2", "-o", "sim.vvp", "tb.v", "a.v"}
	d1, d2 := mk(src), mk(src)
	k1, ok1 := key(d1, args)
	k2, ok2 := key(d2, args)
	if !ok1 || !ok2 || k1 != k2 {
		problems = append(problems, "the same compile in two directories is not shared")
	}
	differ := func(what, dir string, args []string) {
		if k, ok := key(dir, args); ok && k == k1 {
			problems = append(problems, what+" does not change the key")
		}
	}
	mutant := map[string]string{"tb.v": src["tb.v"], "a.v": "module a; parameter P = 3; endmodule\n"}
	differ("a source's bytes", mk(mutant), args)
	differ("a -P value", d1, []string{"-g2005", "-Ptb.u.P=3", "-o", "sim.vvp", "tb.v", "a.v"})
	differ("the sources' order", d1, []string{"-g2005", "-Ptb.u.P=2", "-o", "sim.vvp", "a.v", "tb.v"})
	stale := mk(src)
	require.NoError(t, os.WriteFile(filepath.Join(stale, "sim.vvp"), []byte("an earlier compile's output"), 0o644))
	if k, ok := key(stale, args); !ok || k != k1 {
		problems = append(problems, "an earlier -o file changes the key")
	}
	notShared := func(what, dir string, args []string) {
		if _, ok := key(dir, args); ok {
			problems = append(problems, what+" is shared")
		}
	}
	notShared("a compile with `include", mk(map[string]string{"tb.v": "`include \"x.vh\"\nmodule tb; a u(); endmodule\n", "a.v": src["a.v"]}), args)
	notShared("a compile with -I", d1, append([]string{"-Iinc"}, args...))
	notShared("a compile with -y", d1, append([]string{"-ylib"}, args...))
	notShared("a compile with a command file", d1, append([]string{"-c", "files.txt"}, args...))
	notShared("a compile without -o", d1, []string{"-g2005", "tb.v", "a.v"})
	return problems
}

// TestIcarusKey: icarusKey passes icarusKeyProblems, and each deliberate
// slip in a key function below fails it (the key's own mutant table).
func TestIcarusKey(t *testing.T) {
	t.Parallel()
	assert.Empty(t, icarusKeyProblems(t, icarusKey))
	argsOnly := func(dir string, args []string) (string, bool) { return strings.Join(args, "\x00"), true }
	for _, m := range []struct {
		name string
		key  func(dir string, args []string) (string, bool)
	}{
		{"the arguments alone (a mutant served the original)", argsOnly},
		{"the sources' bytes alone, in any order", func(dir string, args []string) (string, bool) {
			var texts []string
			for _, a := range args {
				if b, err := os.ReadFile(filepath.Join(dir, a)); err == nil && a != "sim.vvp" {
					texts = append(texts, string(b))
				}
			}
			slices.Sort(texts)
			return strings.Join(texts, "\x00"), slices.Contains(args, "-o")
		}},
		{"the -o file hashed", func(dir string, args []string) (string, bool) {
			k, ok := icarusKey(dir, args)
			b, _ := os.ReadFile(filepath.Join(dir, "sim.vvp"))
			return k + string(b), ok
		}},
		{"every compile shared", func(dir string, args []string) (string, bool) {
			k, _ := icarusKey(dir, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "-c" || a == "files.txt" }))
			return k + fmt.Sprint(len(args)), true
		}},
		{"nothing shared", func(string, []string) (string, bool) { return "", false }},
	} {
		t.Run(m.name, func(t *testing.T) {
			assert.NotEmpty(t, icarusKeyProblems(t, m.key), "icarusKeyProblems passes a key with %s", m.name)
		})
	}
}

// TestIcarusCompileShared: a bench compiled in two directories runs
// iverilog once, the second directory gets the same .vvp and its run
// passes the co-simulation; the bench with a slip in its block is compiled
// apart and fails it.
func TestIcarusCompileShared(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	ctx := context.Background()
	// A FIFO no other test builds: width 9, depth 3.
	dut := func() cosimDUT { return newFIFODUT(9, 3) }
	run := func(replace map[string]string) (vvp []byte, checked, errors int, c *icarusCompile) {
		dir := t.TempDir()
		d := dut()
		files := writeCosimBench(t, dir, d)
		for f, text := range replace {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644))
		}
		args := append([]string{"-g2005", "-o", "sim.vvp"}, files...)
		_, err := runTool(ctx, dir, "iverilog", args...)
		require.NoError(t, err)
		key, ok := icarusKey(dir, args)
		require.True(t, ok)
		v, ok := icarusCompiles.Load(key)
		require.True(t, ok, "the compile is kept")
		vvp, err = os.ReadFile(filepath.Join(dir, "sim.vvp"))
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(cosimSeeds[0], 0x7e57))
		trace := filepath.Join(dir, "trace.hex")
		n := writeCosimTraceN(t, trace, d, r, 1000)
		out, err := runTool(ctx, dir, "vvp", "-n", "sim.vvp", "+trace="+trace)
		require.NoError(t, err)
		m := cosimResult.FindStringSubmatch(out)
		require.NotNil(t, m, "testbench printed no COSIM line:\n%s", tail(out, 30))
		checked, _ = strconv.Atoi(m[1])
		errors, _ = strconv.Atoi(m[2])
		require.Equal(t, n, checked)
		return vvp, checked, errors, v.(*icarusCompile)
	}
	vvp1, _, errs1, c1 := run(nil)
	vvp2, _, errs2, c2 := run(nil)
	assert.True(t, c1 == c2, "one entry for both directories")
	assert.Equal(t, int64(1), c1.reused.Load(), "the second compile is the first's")
	assert.Equal(t, vvp1, vvp2)
	assert.Zero(t, errs1)
	assert.Zero(t, errs2)
	// The FIFO's count never moves on a pop: the co-simulation must see it.
	mut := mutatedSource(t, "sync_fifo.v", "else if (do_pop && !do_push) cnt <= cnt - 1'b1;", "")
	_, _, errs3, c3 := run(mut)
	assert.True(t, c1 != c3, "the mutant has a compile of its own")
	assert.Positive(t, errs3, "the mutant's run fails")
}
