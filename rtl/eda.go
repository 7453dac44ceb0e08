package rtl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// RequireEDAEnv is the environment variable CI sets to 1 so that tests fail,
// instead of skipping, when verilator, iverilog or yosys is missing.
const RequireEDAEnv = "HCASIM_REQUIRE_EDA"

// EDAInstallHint says how to get the tools.
const EDAInstallHint = "apt-get install -y verilator iverilog yosys"

// toolPath finds an EDA tool on PATH.
func toolPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH (install: %s)", name, EDAInstallHint)
	}
	return p, nil
}

// runTool runs an EDA tool in dir and returns its combined output; a non-zero
// exit is an error carrying the output's last lines.
func runTool(ctx context.Context, dir, name string, args ...string) (string, error) {
	if toolCache != nil {
		if out, ok, err := toolCache(ctx, dir, name, args); ok {
			return out, err
		}
	}
	return runToolUncached(ctx, dir, name, args...)
}

// toolCache, when set, may answer a tool run from an identical earlier one
// in the process (ok true) instead of running the tool again. Only the
// tests set it (simcache_test.go: Icarus compiles); the CLI runs every tool.
var toolCache func(ctx context.Context, dir, name string, args []string) (out string, ok bool, err error)

// runToolUncached is runTool without toolCache.
func runToolUncached(ctx context.Context, dir, name string, args ...string) (string, error) {
	p, err := toolPath(name)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	start := time.Now()
	err = cmd.Run()
	logTool(start, dir, name, args, cmd.ProcessState)
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(out.String(), 40))
	}
	return out.String(), nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// EDALogEnv names a file to which runTool appends one line per tool run,
// tab-separated: wall and CPU seconds, the tool, its directory, its
// arguments (cut at 200 characters) and the Unix time it started (ms). It
// is how the tests' time is attributed to tools, and with the start times
// how many tools ran at once (docs/rtl.md, "Tests and tools").
const EDALogEnv = "HCASIM_EDA_LOG"

var edaLogMu sync.Mutex

// logTool appends a run to the EDALogEnv file, if one is named.
func logTool(start time.Time, dir, name string, args []string, ps *os.ProcessState) {
	path := os.Getenv(EDALogEnv)
	if path == "" {
		return
	}
	cpu := 0.0 // no process: a run answered by toolCache, or one that did not start
	if ps != nil {
		cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	a := strings.Join(args, " ")
	if len(a) > 200 {
		a = a[:200] + "..."
	}
	line := fmt.Sprintf("%.3f\t%.3f\t%s\t%s\t%s\t%.3f\n", time.Since(start).Seconds(), cpu, name, dir, a,
		float64(start.UnixMilli())/1000)
	edaLogMu.Lock()
	defer edaLogMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(line)
}
