package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIncastParkingLot: the per-host accepted loads and Jain's index of a
// saturated incast on a radix-4 two-level fat tree (4 leaves of 2 hosts and
// 2 up-links, 2 spines; EDR, 4 KiB packets), D-mod-K routing. Every host
// sends to host 0 (leaf 0); host 0 sends nothing.
//
// D-mod-K sends all traffic for host 0 up on up-port (0 / 1) mod 2 = 0 of
// every leaf, to spine 0, and down the one cable from spine 0 to leaf 0.
// Each output serves its busy inputs round robin, one packet each, all
// packets the same size, so a saturated output splits its link equally
// among them:
//   - leaf 0's port to host 0: two inputs (host 1; spine 0) → host 1 gets
//     1/2 of the sink's link;
//   - spine 0's port to leaf 0 runs at the 1/2 leaf 0 takes from it, split
//     over three inputs (leaves 1, 2, 3) → 1/6 each;
//   - each of those leaves' up-link splits its 1/6 over its two hosts →
//     1/12 each.
//
// So the seven senders get 1/2 and six × 1/12 of a link (sum 1: the sink's
// link is full), mean 1/7, and Jain's index (Σx)² / (n Σx²) = 1 / (7 ×
// (1/4 + 6/144)) = 0.4898. The classic parking-lot unfairness: a fair
// arbiter at every hop is not fair end to end.
func TestIncastParkingLot(t *testing.T) {
	for _, q := range []string{"fifo", "voq"} {
		l, err := Load([]byte(`
seed: 1
link: {generation: EDR, width: 4x, length_m: 2, mtu: 4096}
switch: {radix: 4, vls: 1}
topology: {kind: fat-tree-2, routing: dmodk}
workload: {kind: incast, size: 4096, offered_load: 1.0, warmup_ns: 20000, measure_ns: 200000}
`), []string{"switch.queueing=" + q})
		require.NoError(t, err)
		m, err := Run(l, RunOptions{})
		require.NoError(t, err)
		h := m["host_accepted_load"].(map[string]any)
		assert.InEpsilon(t, 0.5, h["max"], 0.01, q)
		assert.InEpsilon(t, 1.0/12, h["min"], 0.02, q)
		assert.InEpsilon(t, 1.0/7, h["mean"], 0.002, q)
		assert.Equal(t, m["accepted_load"], h["mean"])
		assert.InEpsilon(t, 1/(7*(0.25+6.0/144)), m["fairness_jain"], 0.01, q)
	}
}
