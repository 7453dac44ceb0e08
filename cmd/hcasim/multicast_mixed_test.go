package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runExampleTwice runs a shipped config's sweep with the checkers twice,
// requires byte-identical JSON with points points, and returns the results.
func runExampleTwice(t *testing.T, config string, points int) replayResults {
	t.Helper()
	args := []string{"-config", config, "--check", "--quiet", "--format", "json", "--out", t.TempDir()}
	code, out1, errs := run(args...)
	require.Equal(t, 0, code, errs)
	code, out2, errs := run(args...)
	require.Equal(t, 0, code, errs)
	assert.Equal(t, out1, out2)
	res := decodeResults(t, out1)
	require.Len(t, res.Points, points)
	return res
}

// runDocumentedExample runs a shipped example with --check twice, requires
// byte-identical JSON with points points, and returns the results and
// docs/fabric.md, whose table the caller holds to them.
func runDocumentedExample(t *testing.T, config string, points int) (replayResults, string) {
	t.Helper()
	res := runExampleTwice(t, config, points)
	doc, err := os.ReadFile("../../docs/fabric.md")
	require.NoError(t, err)
	return res, string(doc)
}

// TestMulticastMixedExample: the shipped examples/multicast-mixed.yaml
// (four groups beside a unicast background, 8 points) passes the checkers
// with every point drained (every copy and background packet landed),
// twice with byte-identical JSON, and docs/fabric.md's table is what the
// model prints (each row's members' load, last-member p50 and background
// load, as the docs round them). The trends the docs explain hold on each
// SL: from 0.1 of background up, more background leaves the members less
// and holds the roots' inputs longer.
func TestMulticastMixedExample(t *testing.T) {
	res, doc := runDocumentedExample(t, "examples/multicast-mixed.yaml", 8)
	prev := map[float64]map[string]any{} // by SL: the point of the load before
	for _, p := range res.Points {
		m := p.Metrics
		load, sl := p.Params["workload.background_load"].(float64), p.Params["workload.background_sl"].(float64)
		assert.Equal(t, true, m["end_checks_run"], "%v", p.Params)
		assert.Equal(t, true, m["drain_complete"], "%v", p.Params)
		assert.Equal(t, m["copies_expected"], m["copies_delivered"], "%v", p.Params)
		assert.Equal(t, m["background_packets_sent"], m["background_packets_delivered"], "%v", p.Params)
		assert.Equal(t, float64(4), m["mcast_groups"])
		assert.Equal(t, float64(32), m["background_hosts"])
		row := fmt.Sprintf("| %v, %v | %.3f | %.0f / ", load, sl, m["member_accepted_load"], m["latency_last_ns"].(map[string]any)["p50"])
		assert.True(t, strings.Contains(doc, row), "docs/fabric.md has no row starting %q", row)
		assert.Contains(t, doc, fmt.Sprintf("| %.3f | ", m["background_accepted_load"]), "%v", p.Params)
		if q := prev[sl]; q != nil && load > 0.1 {
			assert.Less(t, m["member_accepted_load"], q["member_accepted_load"], "%v", p.Params)
			assert.Greater(t, m["switch_mcast_hold_mean_ns"], q["switch_mcast_hold_mean_ns"], "%v", p.Params)
		}
		prev[sl] = m
	}
}
