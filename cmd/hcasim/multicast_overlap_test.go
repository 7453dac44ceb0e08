package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMulticastOverlapExample: the shipped examples/multicast-overlap.yaml
// (every host in an all-hosts group and in one of two application groups,
// VL buffers of room for 1, 2, 4 and 8 application packets) passes the
// checkers with every copy delivered, twice with byte-identical JSON, and
// docs/fabric.md's table is what the model prints. The loads against
// first principles:
//   - room for one packet (66 credits: 4170 bytes on the wire): a buffer
//     can neither take the next packet before the one it holds has left,
//     nor send that one before the next hop's buffer is empty, so at most
//     every other buffer on a path holds a packet: under 1/2 of the line
//     rate whatever the offer (0.6);
//   - room for two or more: each application group carries its offer, 0.6,
//     within 4 σ of its sender's Bernoulli count: 50 µs / 83.4 ns = 599
//     slots, σ = √(0.6 · 0.4 / 599) = 0.020, so ±0.080;
//   - the all-hosts group (256-byte packets at 0.05) is never limited: 0.05
//     within 4 σ of its slots (256 + 74 = 330 bytes on the wire at 50 B/ns:
//     6.6 ns, 50000 / 6.6 = 7575 slots, σ = √(0.05 · 0.95 / 7575) = 0.0025).
func TestMulticastOverlapExample(t *testing.T) {
	res, doc := runDocumentedExample(t, "examples/multicast-overlap.yaml", 4)
	for _, p := range res.Points {
		m := p.Metrics
		buf := p.Params["switch.vl_buffer_bytes"].(float64)
		assert.Equal(t, true, m["end_checks_run"], "%v", p.Params)
		assert.Equal(t, true, m["drain_complete"], "%v", p.Params)
		assert.Equal(t, float64(3), m["mcast_groups"])
		for g := 0; g < 3; g++ {
			k := fmt.Sprintf("group%d_", g)
			assert.Equal(t, m[k+"copies_expected"], m[k+"copies_delivered"], "%v group %d", p.Params, g)
		}
		load := func(g int) float64 { return m[fmt.Sprintf("group%d_member_accepted_load", g)].(float64) }
		assert.InDelta(t, 0.05, load(0), 4*math.Sqrt(0.05*0.95/7575), "%v", p.Params)
		for g := 1; g <= 2; g++ {
			if buf/4224 < 2 {
				assert.Less(t, load(g), 0.5, "%v group %d", p.Params, g)
			} else {
				assert.InDelta(t, 0.6, load(g), 4*math.Sqrt(0.6*0.4/599), "%v group %d", p.Params, g)
			}
		}
		row := fmt.Sprintf("| %.0f (%.0f) | %.3f | %.3f | %.3f | %.0f |", buf, buf/4224, load(0), load(1), load(2),
			m["group1_latency_last_ns"].(map[string]any)["p50"])
		assert.True(t, strings.Contains(doc, row), "docs/fabric.md has no row %q", row)
	}
}
