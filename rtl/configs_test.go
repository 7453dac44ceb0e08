package rtl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShippedConfigs emits, lints and compiles the trees of the shipped
// edr, ndr and xdr configs through the real config loader, and checks that
// --set reaches the parameters.
func TestShippedConfigs(t *testing.T) {
	for _, name := range []string{"edr.yaml", "ndr.yaml", "xdr.yaml"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, err := LoadDesign(name, nil)
			require.NoError(t, err)
			require.NoError(t, d.Validate())
			lintTree(t, d)
		})
	}
	t.Run("set", func(t *testing.T) {
		d, err := LoadDesign("ndr.yaml", []string{"switch.radix=8", "switch.vls=2", "link.width=2x"})
		require.NoError(t, err)
		p := d.Params()
		assert.Equal(t, 8, p.Ports)
		assert.Equal(t, 3, p.PortW)
		assert.Equal(t, 2, p.VLs)
		assert.Equal(t, 2, p.Lanes)
		_, err = LoadDesign("nope.yaml", nil)
		assert.Error(t, err)
	})
}

// TestBufferMinimumIsTheSimulators checks that the smallest VL buffer the
// simulator accepts at each MTU (one packet of its largest kind, probed
// through the real loader) is one the RTL accepts too, so every depth a
// sweep can choose is exportable; 64 bytes less is refused by both. At MTU
// 4096 that is 65 blocks: LRH 8 + BTH 12 + RETH 16 + ImmDt 4 + 4096 + ICRC 4
// + VCRC 2 = 4142 bytes, no GRH (ndr.yaml sweeps 4160).
func TestBufferMinimumIsTheSimulators(t *testing.T) {
	assert.Equal(t, 65, (8+12+16+4+4096+4+2+63)/64)
	for _, mtu := range []int{256, 512, 1024, 2048, 4096} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			load := func(bytes int) (Design, error) {
				return LoadDesign("ndr.yaml", []string{
					fmt.Sprintf("link.mtu=%d", mtu),
					fmt.Sprintf("switch.vl_buffer_bytes=%d", bytes),
					fmt.Sprintf("hca.vl_buffer_bytes=%d", bytes),
				})
			}
			// The simulator's minimum: the smallest multiple of 64 it loads.
			minBytes := 0
			for b := 64; b <= 8192; b += 64 {
				if _, err := load(b); err == nil {
					minBytes = b
					break
				}
			}
			require.NotZero(t, minBytes, "the simulator accepts no buffer up to 8192 bytes")
			d, err := load(minBytes)
			require.NoError(t, err)
			assert.NoError(t, d.Validate())
			assert.Equal(t, minBytes/64, d.Params().MaxPktBlocks)
			d.VLBufferBytes -= 64
			assert.ErrorContains(t, d.Validate(), fmt.Sprintf("switch.vl_buffer_bytes: %d is outside %d..", minBytes-64, minBytes))
		})
	}
	d, err := LoadDesign("ndr.yaml", []string{"switch.vl_buffer_bytes=4160"})
	require.NoError(t, err)
	assert.NoError(t, d.Validate())
}
