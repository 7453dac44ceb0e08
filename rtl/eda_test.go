package rtl

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// rtlTestsPerCPU is how many parallel tests run at once per CPU by
// default (go test's is one). Nearly every test here waits on one
// single-threaded tool process at a time (iverilog, vvp, Verilator, Yosys)
// and, between its tools, writes traces and reads their output in Go or
// waits for a run another test shares (a synthesis, a lint, a compile): with
// one test per CPU the CPU idles then. Two keep both cores of the CI
// machine busy through those gaps (docs/rtl.md, "Tests and tools").
const rtlTestsPerCPU = 2

// needTool skips the test when an EDA tool is missing, or fails it when
// HCASIM_REQUIRE_EDA=1 (set by .ci/run, which installs the tools).
func needTool(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := toolPath(name); err != nil {
			if os.Getenv(RequireEDAEnv) == "1" {
				t.Fatalf("%v; %s=1 requires it", err, RequireEDAEnv)
			}
			t.Skipf("skipping: %v; set %s=1 to make this a failure", err, RequireEDAEnv)
		}
	}
}

// TestMain runs the tests rtlTestsPerCPU to a CPU unless -test.parallel
// (go test -parallel) says otherwise, and removes what the tests share
// across the process (the Verilator runtime objects, buildVerilator) once
// they have all run.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(rtlTestsPerCPU*runtime.GOMAXPROCS(0))); err != nil {
			panic(fmt.Sprintf("rtl.TestMain: -test.parallel: %v", err))
		}
	}
	code := m.Run()
	verilatorRuntimeCleanup()
	os.Exit(code)
}
