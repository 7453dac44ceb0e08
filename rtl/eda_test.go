package rtl

import (
	"os"
	"testing"
)

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

// TestMain removes what the tests share across the process (the Verilator
// runtime objects, buildVerilator) once they have all run.
func TestMain(m *testing.M) {
	code := m.Run()
	verilatorRuntimeCleanup()
	os.Exit(code)
}
