package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAllReduceSharpExample: the shipped examples/allreduce-sharp.yaml
// (ring, tree and SHARP, 4 sizes) passes the checkers with every point's
// data verified, twice with byte-identical JSON, and docs/fabric.md's
// table is what the model prints (time and busbw as the docs round them).
func TestAllReduceSharpExample(t *testing.T) {
	res, doc := runDocumentedExample(t, "examples/allreduce-sharp.yaml", 12)
	sizes := map[float64]string{8: "8 B", 65536: "64 KiB", 1048576: "1 MiB", 8388608: "8 MiB"}
	for _, p := range res.Points {
		m := p.Metrics
		alg, size := p.Params["workload.algorithm"], p.Params["workload.size"].(float64)
		assert.Equal(t, true, m["data_verified"], "%v", p.Params)
		assert.Equal(t, true, m["end_checks_run"], "%v", p.Params)
		row := fmt.Sprintf("| %v, %s | %.2f | %.1f |", alg, sizes[size], m["time_us"], m["busbw_gbps"])
		assert.Contains(t, doc, row, "%v", p.Params)
	}
}
