package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/ib"
)

// TestRunProgress: the single-point progress display draws the simulated
// time against the measurement window's end (warm-up 1 µs + measurement
// 30 µs = 31 µs here), reaches it and clears itself, and a run showing it gives exactly the
// results of one that does not (it only reads the published time), serial
// and in two partitions. A perftest, which runs to a count, gets a spinner
// with the time alone.
func TestRunProgress(t *testing.T) {
	for _, parts := range []string{"1", "2"} {
		sets := []string{"workload.warmup_ns=1000", "workload.measure_ns=30000", "sim.partitions=" + parts}
		load := func() *fabric.Loaded {
			l, err := loadConfig(&runFlags{config: "bench/fattree64-uniform-30.yaml", sets: sets})
			require.NoError(t, err)
			return l
		}
		plain, err := fabric.Run(load(), fabric.RunOptions{})
		require.NoError(t, err)

		var buf bytes.Buffer
		l := load()
		p := newRunProgress(&buf, &l.Config, time.Millisecond)
		shown, err := fabric.Run(l, fabric.RunOptions{Started: p.start})
		p.stop()
		require.NoError(t, err)
		delete(plain, "wall_s")
		delete(shown, "wall_s")
		assert.Equal(t, plain, shown, "partitions %s", parts)
		assert.True(t, strings.Contains(buf.String(), "of 31.0 µs"), "partitions %s: drawn", parts)
		assert.GreaterOrEqual(t, p.view.Progress(), ib.PS(31_000_000), "partitions %s: the display reached the window's end", parts)
		assert.True(t, strings.HasSuffix(buf.String(), "\r"), "partitions %s: cleared at the end", parts)
	}

	var buf bytes.Buffer
	l, err := loadConfig(&runFlags{config: "edr.yaml", sets: []string{"workload.iterations=50"}})
	require.NoError(t, err)
	p := newRunProgress(&buf, &l.Config, time.Millisecond)
	_, err = fabric.Run(l, fabric.RunOptions{Started: p.start})
	p.stop()
	require.NoError(t, err)
	assert.True(t, strings.Contains(buf.String(), "simulated "), "drawn")
	assert.False(t, strings.Contains(buf.String(), " of "), "a spinner has no end")
}
