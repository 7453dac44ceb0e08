package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
)

// throughSwitch builds host 0 (LID 1) — switch — host 1 (LID 2) on run.Link.
func throughSwitch(t *testing.T, run PerftestRun) *Perftest {
	s := components.NewSim()
	lft := switchasic.NewLFT(8)
	lft.Set(1, 0)
	lft.Set(2, 1)
	scfg := switchasic.Defaults()
	sw, err := switchasic.MakeBuilder().WithSim(s).WithConfig(scfg).WithLFT(lft).WithFlowControl(run.Link).Build("Fabric.Leaf[0]")
	require.NoError(t, err)
	a := hca.NewDevice(s, "Fabric.Host[0].HCA", 1, run.HCA)
	b := hca.NewDevice(s, "Fabric.Host[1].HCA", 2, run.HCA)
	tm := run.Link.Timing(run.Link.LengthM)
	link.Connect(sw.Port(0), a.AttachPortVLs(&run.Link, scfg.VLs), tm)
	link.Connect(sw.Port(1), b.AttachPortVLs(&run.Link, scfg.VLs), tm)
	p, err := BuildPerftestOn(s, a, b, run, func() (*Perftest, error) { return throughSwitch(t, run), nil })
	require.NoError(t, err)
	return p
}

func TestPerftestThroughASwitch(t *testing.T) {
	for _, tc := range []struct {
		test string
		size int
	}{{"send_lat", 32}, {"write_bw", 65536}, {"read_lat", 2}} {
		t.Run(tc.test, func(t *testing.T) {
			run := edrRun(tc.test, tc.size, 200)
			m, err := throughSwitch(t, run).Run()
			require.NoError(t, err)
			assert.Equal(t, true, m["data_verified"])
			direct, err := RunPerftest(run)
			require.NoError(t, err)
			if lat, ok := m["lat_us"].(map[string]any); ok {
				// The switch adds its port-to-port latency plus a second
				// cable each way: the result must be strictly above back to
				// back, by less than a microsecond per direction.
				d := direct["lat_us"].(map[string]any)["typical"].(float64)
				sw := lat["typical"].(float64)
				t.Logf("%s: back to back %.4f µs, through the switch %.4f µs", tc.test, d, sw)
				assert.Greater(t, sw, d)
				assert.Less(t, sw, d+2)
			} else {
				// A cut-through switch does not limit bandwidth: the same
				// PCIe bound.
				bound := hca.NewPCIe(run.HCA.PCIe).ReadBoundGbps()
				assert.LessOrEqual(t, m["bw_gbps"].(float64), bound)
				assert.Greater(t, m["bw_gbps"].(float64), 0.97*bound)
			}
		})
	}
}
