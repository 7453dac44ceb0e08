package workload_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/workload"
)

// fatTree builds run on the fabric of
// configs/examples/allreduce-tree-cts.yaml (16 cx7 hosts on a two-level
// NDR fat tree), an HCA on every host, as fabric's runCollective does.
func fatTree(t *testing.T, run workload.CollectiveRun) (*workload.Collective, []*hca.Device) {
	t.Helper()
	data, err := os.ReadFile("../configs/examples/allreduce-tree-cts.yaml")
	require.NoError(t, err)
	l, err := fabric.LoadSweepBase(data, nil)
	require.NoError(t, err)
	cfg := &l.Config
	s := components.NewSimOn(cfg.Sim.Engine)
	topo, sub, err := fabric.ConfigureFabric(cfg, cfg.Seed)
	require.NoError(t, err)
	var devs []*hca.Device
	_, err = fabric.BuildNetworkOn(cfg, s, topo, sub, func(_ int, lid uint16, name string) fabric.HostDevice {
		h := fabric.NewHCAHost(s, cfg, lid, name)
		devs = append(devs, h.Device)
		return h
	})
	require.NoError(t, err)
	run.MTU, run.Seed = cfg.Link.MTU, cfg.Seed
	c, err := workload.BuildCollectiveOn(s, devs, run)
	require.NoError(t, err)
	return c, devs
}

func TestTreeCTSWarmIteration(t *testing.T) { workload.TreeCTSWarmIteration(t, fatTree) }

func TestTreeCTSWarmIterationMutantsAreCaught(t *testing.T) {
	workload.TreeCTSWarmIterationMutants(t, fatTree)
}
