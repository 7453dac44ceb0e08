package rtl

import (
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/sweep"
)

// LoadDesign is the LoadFunc for Main: it reads the config (a path, or the
// name of a shipped config), applies the --set overrides, decodes and
// validates it with the simulator's own rules (fabric.Load), and takes the
// keys the RTL needs or must refuse (docs/rtl.md lists every switch and HCA
// key and what the RTL does with it). Its errors are user errors.
//
// The RTL is one design point: the config's own values, after --set. A
// sweep: axis that would change the design (its values give another Design
// than the base point's) is refused, naming the axis, until --set pins it;
// an axis that changes nothing the RTL reads (workload.*, cable lengths,
// stage latencies) is only listed in Design.SweepIgnored.
func LoadDesign(path string, sets []string) (Design, error) {
	data, err := config.ReadFile(path, configs.Lookup)
	if err != nil {
		return Design{}, fmt.Errorf("%s: %s", path, err)
	}
	l, err := fabric.Load(data, sets)
	if err != nil {
		return Design{}, fmt.Errorf("%s: %s", path, err)
	}
	d := designOf(&l.Config)
	if sweep.Has(l.Node) {
		if d.SweepIgnored, err = sweepAxesTheRTLIgnores(l.Node, sets, d); err != nil {
			return Design{}, fmt.Errorf("%s: %s", path, err)
		}
	}
	return d, nil
}

func designOf(c *fabric.Config) Design {
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
		SL2VLPairs:        len(c.Switch.SL2VLPairs),
	}
}

// sweepAxesTheRTLIgnores expands root's sweep as a run would (the keys of
// sets pinned) and returns the unpinned axes none of whose values changes
// base; an axis one of whose values does is an error. Each axis is tried on
// its own, the others held at the base point's values, so the error names
// the axis that changes the design and the value that does.
func sweepAxesTheRTLIgnores(root *yaml.Node, sets []string, base Design) ([]string, error) {
	pins := sweep.PinnedKeys(sets)
	all, err := sweep.Expand(root, sweep.Options{Pinned: pins})
	if err != nil {
		return nil, err
	}
	var ignored []string
	for _, axis := range all.Axes {
		if axis.Pinned {
			continue
		}
		alone := append([]string(nil), pins...)
		for _, other := range all.Axes {
			if other.Key != axis.Key {
				alone = append(alone, other.Key)
			}
		}
		sw, err := sweep.Expand(root, sweep.Options{Pinned: alone})
		if err != nil {
			return nil, err
		}
		probes := []float64{0}
		if sw.Search != nil {
			probes = []float64{sw.Search.Search.From, sw.Search.Search.To}
		}
		for _, dp := range sw.Designs {
			for _, x := range probes {
				p, err := sw.Point(dp, x)
				if err != nil {
					return nil, err
				}
				if d := designOf(&p.Loaded.Config); !reflect.DeepEqual(d, base) {
					return nil, fmt.Errorf("sweep.%s: the RTL is one design point, and this axis changes it (at %v); "+
						"pin it with --set %s=VALUE (or drop the sweep with --set sweep={})",
						axis.Key, p.Params[axis.Key], axis.Key)
				}
			}
		}
		ignored = append(ignored, axis.Key)
	}
	return ignored, nil
}
