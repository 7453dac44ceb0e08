package hca_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/hca"
)

// TestPickMatchesScanOnWorkloads runs whole design points — perftest's
// tests back to back, collectives on fat trees — with every scheduler pick
// checked against the scan over all QPs (TestMain in pick_test.go).
func TestPickMatchesScanOnWorkloads(t *testing.T) {
	perftest := []string{"workload.kind=perftest", "workload.iterations=200"}
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"read_bw", append(perftest, "workload.test=read_bw", "workload.size=65536")},
		{"write_bw", append(perftest, "workload.test=write_bw", "workload.size=65536")},
		{"send_bw", append(perftest, "workload.test=send_bw", "workload.size=8192")},
		{"send_lat", append(perftest, "workload.test=send_lat", "workload.size=64")},
		{"atomic_lat", append(perftest, "workload.test=atomic_lat")},
		{"read_lat", append(perftest, "workload.test=read_lat", "workload.size=4096")},
		{"allreduce 8 ranks", []string{"topology.kind=fat-tree-2", "switch.radix=4", "topology.routing=dmodk", "hca.profile=cx7",
			"workload.kind=allreduce", "workload.size=262144"}},
		{"alltoall 32 ranks", []string{"topology.kind=fat-tree-2", "switch.radix=8", "topology.routing=dmodk", "hca.profile=cx7",
			"workload.kind=alltoall", "workload.size=1048576"}},
		{"alltoall 32 ranks small buffers", []string{"topology.kind=fat-tree-2", "switch.radix=8", "topology.routing=dmodk",
			"hca.profile=cx5", "hca.tx_buffer_bytes=8192", "hca.max_rd_atomic=1", "workload.kind=alltoall", "workload.size=262144"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := hca.PicksMade()
			l, err := fabric.Load(nil, tc.sets)
			require.NoError(t, err)
			m, err := fabric.Run(l, fabric.RunOptions{})
			require.NoError(t, err)
			if v, ok := m["data_verified"]; ok {
				assert.Equal(t, true, v)
			}
			picks := hca.PicksMade() - before
			t.Logf("%d picks checked", picks)
			assert.Greater(t, picks, int64(100), "picks checked")
		})
	}
}
