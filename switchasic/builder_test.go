package switchasic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/link"
)

// TestBuildChecks: Build returns user errors for a bad config, a per-VL
// buffer smaller than the link MTU's largest packet (4096 + 46 bytes = 65
// blocks = 4160 bytes), and a shared pool; it names the ports Akita-style.
func TestBuildChecks(t *testing.T) {
	s := components.NewSim()
	lft := NewLFT(4)
	b := MakeBuilder().WithSim(s).WithLFT(lft)

	cfg := smallConfig(4, 1)
	cfg.Radix = 1
	_, err := b.WithConfig(cfg).Build("Fabric.Switch[0]")
	assert.EqualError(t, err, "switch.radix: 1 is out of range (2 to 256)")

	cfg = smallConfig(4, 1)
	cfg.VLBufferBytes = 64 * 64
	_, err = b.WithConfig(cfg).Build("Fabric.Switch[0]")
	assert.EqualError(t, err, "switch.vl_buffer_bytes: 4096 cannot hold one 4142-byte packet of the link MTU (at least 4160 bytes needed)")
	lc := link.Defaults()
	lc.MTU = 2048
	_, err = b.WithConfig(cfg).WithFlowControl(lc).Build("Fabric.Switch[0]")
	assert.NoError(t, err, "2048 + 46 bytes fit 4096")

	cfg = smallConfig(4, 1)
	cfg.SharedBufferBytes = 6400
	_, err = b.WithConfig(cfg).Build("Fabric.Switch[0]")
	assert.EqualError(t, err, "switch.shared_buffer_bytes: 6400 is not supported yet (0 only): link ports advertise fixed per-VL buffers")

	sw, err := b.WithConfig(smallConfig(4, 1)).Build("Fabric.Switch[1]")
	require.NoError(t, err)
	assert.Equal(t, "Fabric.Switch[1].Port[3]", sw.Port(3).Name)
	assert.Equal(t, 4, sw.Radix())
	assert.Panics(t, func() { _, _ = MakeBuilder().Build("X") })
}
