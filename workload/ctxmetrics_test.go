package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPerftestContextCacheMetrics: 64-byte send_bw on 8 QPs whose
// receives are on one SRQ, with CQ and SRQ contexts modelled. perftest
// makes one send CQ and one receive CQ per host for all its QPs, so the
// server's 8 × 2000 receive completions all use its one receive CQ and
// its 16000 takes its one SRQ: one cold miss each, then hits (1 of
// 16000), and nothing evicted or written back; the client's send CQEs all
// use its one send CQ: one miss. Without the knobs no such metric is
// reported.
func TestPerftestContextCacheMetrics(t *testing.T) {
	run := edrRun("send_bw", 64, 2000)
	run.QPs, run.UseSRQ = 8, true
	off, err := RunPerftest(run)
	require.NoError(t, err)
	for _, k := range []string{"host0_cq_cache_miss_rate", "host1_cq_cache_miss_rate", "host1_srq_cache_misses"} {
		assert.NotContains(t, off, k)
	}
	run.HCA.CQCacheEntries, run.HCA.SRQCacheEntries = 4, 4
	on, err := RunPerftest(run)
	require.NoError(t, err)
	assert.Equal(t, true, on["data_verified"], "%v", on["data_errors"])
	msgs := float64(run.QPs * run.Iterations)
	assert.Equal(t, int64(1), on["host1_cq_cache_misses"])
	assert.Equal(t, 1/msgs, on["host1_cq_cache_miss_rate"], "one receive CQ for 16000 CQEs")
	assert.Equal(t, int64(0), on["host1_cq_cache_write_backs"])
	assert.Equal(t, int64(1), on["host1_srq_cache_misses"])
	assert.Equal(t, 1/msgs, on["host1_srq_cache_miss_rate"], "one SRQ for 16000 takes")
	assert.Equal(t, int64(1), on["host0_cq_cache_misses"], "one send CQ")
	assert.NotContains(t, on, "host0_srq_cache_misses", "the client takes no receive")
}
