package workload

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
)

// collSwitch builds n hosts (LIDs 1..n) with HCAs on one switch over lc.
func collSwitch(t *testing.T, n int, lc link.Config, h hca.Config) (*components.Sim, []*hca.Device) {
	s := components.NewSim()
	lft := switchasic.NewLFT(n + 1)
	for i := 0; i < n; i++ {
		lft.Set(uint16(i+1), i)
	}
	scfg := switchasic.Defaults()
	scfg.Radix = max(n, 2)
	sw, err := switchasic.MakeBuilder().WithSim(s).WithConfig(scfg).WithLFT(lft).WithFlowControl(lc).Build("Fabric.Switch[0]")
	require.NoError(t, err)
	tm := lc.Timing(lc.LengthM)
	var devs []*hca.Device
	for i := 0; i < n; i++ {
		d := hca.NewDevice(s, fmt.Sprintf("Fabric.Host[%d].HCA", i), uint16(i+1), h)
		link.Connect(sw.Port(i), d.AttachPortVLs(&lc, scfg.VLs), tm)
		devs = append(devs, d)
	}
	return s, devs
}

func TestCollectiveSmoke(t *testing.T) {
	for _, tc := range []struct {
		op    string
		n     int
		bytes int64
		slice int64
	}{
		{CollAllReduce, 4, 100000, 0}, {CollAllReduce, 4, 100000, 8192}, {CollAllReduce, 8, 3, 0},
		{CollAllReduce, 2, 5000, 0}, {CollAllToAll, 4, 100000, 0}, {CollAllToAll, 5, 5000, 1000},
	} {
		t.Run(fmt.Sprintf("%s/%d/%d/%d", tc.op, tc.n, tc.bytes, tc.slice), func(t *testing.T) {
			s, devs := collSwitch(t, tc.n, perftestLink("EDR"), hca.Defaults())
			m, err := RunCollectiveOn(s, devs, CollectiveRun{Op: tc.op, Bytes: tc.bytes, MTU: 4096, SliceBytes: tc.slice, Seed: 1})
			require.NoError(t, err)
			t.Logf("%v", m)
			assert.Equal(t, true, m["data_verified"], "%v", m["data_errors"])
		})
	}
}
