package rtl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
)

// LoadDesign is the LoadFunc for Main: it reads the config (a path, or the
// name of a shipped config), applies the --set overrides, decodes and
// validates it with the simulator's own rules (fabric.Load), and takes the
// keys the RTL needs (docs/rtl.md lists them). Its errors are user errors.
func LoadDesign(path string, sets []string) (Design, error) {
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
