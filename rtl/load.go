package rtl

import (
	"fmt"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
)

// LoadDesign is the LoadFunc for Main: it reads the config (a path, or the
// name of a shipped config), applies the --set overrides, decodes and
// validates it with the simulator's own rules (fabric.Load), and takes the
// keys the RTL needs or must refuse (docs/rtl.md lists every switch and HCA
// key and what the RTL does with it). Its errors are user errors.
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
	return Design{
		Name:             c.Name,
		Radix:            c.Switch.Radix,
		VLs:              c.Switch.VLs,
		VLBufferBytes:    c.Switch.VLBufferBytes,
		HCAVLBufferBytes: c.HCA.VLBufferBytes,
		MTU:              c.Link.MTU,
		LinkGeneration:   c.Link.Generation,
		LinkWidth:        c.Link.Lanes(),
		DatapathBytes:    c.Switch.DatapathBytes,

		SharedBufferBytes: c.Switch.SharedBufferBytes,
		Queueing:          c.Switch.Queueing,
		Allocator:         c.Switch.Allocator,
		Speedup:           c.Switch.Speedup,
		StoreAndForward:   !c.Switch.CutThrough,
	}, nil
}
