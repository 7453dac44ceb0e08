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
	return LoadDesignWith(path, sets, nil)
}

// LoadDesignWith is LoadDesign with fix applied to the loaded config and to
// every sweep point it tries before reading their design (nil: none): the
// CLI's readers of the files the config names (a topology.file relative to
// the config's directory), as its runs read them.
func LoadDesignWith(path string, sets []string, fix func(*fabric.Loaded)) (Design, error) {
	if fix == nil {
		fix = func(*fabric.Loaded) {}
	}
	data, err := config.ReadFile(path, configs.Lookup)
	if err != nil {
		return Design{}, fmt.Errorf("%s: %s", path, err)
	}
	l, err := fabric.Load(data, sets)
	if err != nil {
		return Design{}, fmt.Errorf("%s: %s", path, err)
	}
	fix(l)
	d, err := designOf(&l.Config)
	if err != nil {
		return Design{}, fmt.Errorf("%s: %s", path, err)
	}
	if sweep.Has(l.Node) {
		if d.SweepIgnored, err = sweepAxesTheRTLIgnores(l.Node, sets, d, fix); err != nil {
			return Design{}, fmt.Errorf("%s: %s", path, err)
		}
	}
	return d, nil
}

func designOf(c *fabric.Config) (Design, error) {
	// Every RTL port has link.width's lanes (Params.Lanes, one parameter
	// for the whole design), so a fabric of mixed speeds has no RTL.
	if err := c.CheckOneLinkSpeed("the RTL's ports all have link.width's lanes at link.generation; export a design point whose cables run at one speed"); err != nil {
		return Design{}, err
	}
	if c.Workload.Kind == "multicast" {
		// The simulator's switches replicate by an MFT (switchasic,
		// multicast.go); sw_route_lookup.v has no MFT and no replication.
		return Design{}, fmt.Errorf("workload.kind: multicast is not supported by the RTL, whose route stage has a linear forwarding table only (no MFT, no replication)")
	}
	sets, err := sl2vlOf(c)
	if err != nil {
		return Design{}, err
	}
	return Design{
		Name:                 c.Name,
		Radix:                c.Switch.Radix,
		VLs:                  c.Switch.VLs,
		VLBufferBytes:        c.Switch.VLBufferBytes,
		HCAVLBufferBytes:     c.HCA.VLBufferBytes,
		WQEPrefetchDepth:     c.HCA.WQEPrefetchDepth,
		PCIeMRRSBytes:        c.HCA.PCIe.MRRSBytes,
		PCIeMPSBytes:         c.HCA.PCIe.MPSBytes,
		PCIeOutstandingReads: c.HCA.PCIe.OutstandingReads,
		KeyCacheEntries:      c.HCA.KeyCacheEntries,
		RetryCnt:             c.HCA.RetryCnt,
		RNRRetry:             c.HCA.RNRRetry,
		RetryTimeout:         c.HCA.RetryTimeout,
		AckCoalesce:          c.HCA.AckCoalesce,
		MaxInline:            c.HCA.MaxInlineBytes,
		MaxRdAtomic:          c.HCA.MaxRdAtomic,
		MTU:                  c.Link.MTU,
		LinkGeneration:       c.Link.Generation,
		LinkWidth:            c.Link.Lanes(),
		DatapathBytes:        c.Switch.DatapathBytes,
		SwitchClockMHz:       c.Switch.CoreClockMHz,
		HCAClockMHz:          c.HCA.CoreClockMHz,
		FCRefreshNs:          c.Link.FCRefreshNs,
		FCMinIntervalNs:      c.Link.FCMinIntervalNs,

		SharedBufferBytes: c.Switch.SharedBufferBytes,
		Queueing:          c.Switch.Queueing,
		Allocator:         c.Switch.Allocator,
		ISLIPIterations:   c.Switch.ISLIPIterations,
		Speedup:           c.Switch.Speedup,
		StoreAndForward:   !c.Switch.CutThrough,
		AdaptiveRouting:   c.Topology.AdaptiveRouting,
		SL2VL:             sets,
	}, nil
}

// sl2vlOf resolves the switches' SL-to-VL tables as a run does: with
// switch.sl2vl_pairs, the subnet manager of the run's own fabric
// (fabric.ConfigureFabric, seeded as the run) programs every switch and
// fabric.Subnet.SL2VL gives each pair's table, so the classes, port lists
// and globs are matched by the simulator's code, not again here; without,
// every pair of every switch has switch.sl2vl's table.
func sl2vlOf(c *fabric.Config) ([]SL2VLSet, error) {
	if len(c.Switch.SL2VLPairs) == 0 {
		return []SL2VLSet{{Default: c.Switch.SL2VLTable()}}, nil
	}
	topo, sub, err := fabric.ConfigureFabric(c, c.Seed)
	if err != nil {
		return nil, err
	}
	radix := c.Switch.Radix
	var names []string
	var tables [][][16]uint8
	for _, n := range topo.Switches() {
		ports := topo.Nodes[n].Ports
		if ports > radix {
			return nil, fmt.Errorf("switch.radix: %d is below the %d ports of %s, whose SL-to-VL tables the RTL could not hold (at least %d)",
				radix, ports, topo.Nodes[n].Name, ports)
		}
		t := make([][16]uint8, radix*radix)
		for in := 0; in < radix; in++ {
			for out := 0; out < radix; out++ {
				// Ports the switch lacks (a topology file's smaller
				// switch) keep its default table, as port 0's pairs do.
				a, b := in+1, out+1
				if a > ports || b > ports {
					a, b = 0, 0
				}
				t[in*radix+out] = *sub.SL2VL(n, a, b)
			}
		}
		names = append(names, topo.Nodes[n].Name)
		tables = append(tables, t)
	}
	if len(names) == 0 {
		return []SL2VLSet{{Default: c.Switch.SL2VLTable()}}, nil
	}
	return groupSL2VL(names, tables, radix), nil
}

// sweepAxesTheRTLIgnores expands root's sweep as a run would (the keys of
// sets pinned) and returns the unpinned axes none of whose values changes
// base; an axis one of whose values does is an error. Each axis is tried on
// its own, the others held at the base point's values, so the error names
// the axis that changes the design and the value that does.
func sweepAxesTheRTLIgnores(root *yaml.Node, sets []string, base Design, fix func(*fabric.Loaded)) ([]string, error) {
	change, ignored, err := sweep.AxesThatChange(root, sets, func(l *fabric.Loaded) (bool, error) {
		fix(l)
		d, err := designOf(&l.Config)
		return err == nil && reflect.DeepEqual(d, base), err
	})
	if err != nil {
		return nil, err
	}
	if change != nil {
		return nil, fmt.Errorf("sweep.%s: the RTL is one design point, and this axis changes it (at %v); "+
			"pin it with --set %s=VALUE (or drop the sweep with --set sweep={})",
			change.Key, change.Value, change.Key)
	}
	return ignored, nil
}
