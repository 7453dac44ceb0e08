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
	sp, err := b.WithConfig(cfg).Build("Fabric.Switch[0]")
	require.NoError(t, err)
	assert.Equal(t, 6400/64, sp.Port(2).SharedFree(), "each input port gets its own pool of shared_buffer_bytes")

	sw, err := b.WithConfig(smallConfig(4, 1)).Build("Fabric.Switch[1]")
	require.NoError(t, err)
	assert.Equal(t, "Fabric.Switch[1].Port[3]", sw.Port(3).Name)
	assert.Equal(t, 4, sw.Radix())
	assert.Panics(t, func() { _, _ = MakeBuilder().Build("X") })
}

// TestRadix256: the largest switch IBA 1.6 allows builds and forwards
// between its first and last ports with the zero-load latency of a small one
// (edge after the 13 ns head + 120 ns of stages + 13 ns to the sink).
func TestRadix256(t *testing.T) {
	cfg := smallConfig(256, 1)
	n := newTestNet(t, cfg, netOpts{timing: ndr(13000)})
	n.eps[255].onGet = func(arrival) { n.s.Stop() }
	n.eps[0].send(n.packet(0, 255, 0, 2024))
	require.NoError(t, n.s.Run())
	require.Len(t, n.eps[255].got, 1)
	assert.Equal(t, int64(13000+120000+13000), int64(n.eps[255].got[0].head))
}
