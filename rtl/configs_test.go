package rtl

import (
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
