package rtl

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
)

// loadConfigDesign is the loader the CLI wires into Main (see docs/rtl.md):
// read the config (a path or a shipped name), apply --set overrides, decode
// and validate it with the simulator's own rules, and take the keys the RTL
// needs.
func loadConfigDesign(path string, sets []string) (Design, error) {
	data, err := config.ReadFile(path, configs.Lookup)
	if err != nil {
		return Design{}, fmt.Errorf("%s: %s", path, err)
	}
	l, err := fabric.Load(data, sets)
	if err != nil {
		return Design{}, fmt.Errorf("%s: %s", path, err)
	}
	c := l.Config
	lanes, err := strconv.Atoi(strings.TrimSuffix(strings.ToLower(c.Link.Width), "x"))
	if err != nil {
		return Design{}, fmt.Errorf("%s: link.width: %q is not a link width (1x, 2x, 4x, 8x, 12x)", path, c.Link.Width)
	}
	return Design{
		Name:             c.Name,
		Radix:            c.Switch.Radix,
		VLs:              c.Switch.VLs,
		VLBufferBytes:    c.Switch.VLBufferBytes,
		HCAVLBufferBytes: c.HCA.VLBufferBytes,
		MTU:              c.Link.MTU,
		LinkGeneration:   c.Link.Generation,
		LinkWidth:        lanes,
		DatapathBytes:    c.Switch.DatapathBytes,
	}, nil
}

// TestShippedConfigs emits, lints and compiles the trees of the shipped
// edr, ndr and xdr configs through the real config loader, and checks that
// --set reaches the parameters.
func TestShippedConfigs(t *testing.T) {
	for _, name := range []string{"edr.yaml", "ndr.yaml", "xdr.yaml"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, err := loadConfigDesign(name, nil)
			require.NoError(t, err)
			require.NoError(t, d.Validate())
			lintTree(t, d)
		})
	}
	t.Run("set", func(t *testing.T) {
		d, err := loadConfigDesign("ndr.yaml", []string{"switch.radix=8", "switch.vls=2", "link.width=2x"})
		require.NoError(t, err)
		p := d.Params()
		assert.Equal(t, 8, p.Ports)
		assert.Equal(t, 3, p.PortW)
		assert.Equal(t, 2, p.VLs)
		assert.Equal(t, 2, p.Lanes)
		_, err = loadConfigDesign("nope.yaml", nil)
		assert.Error(t, err)
	})
}
