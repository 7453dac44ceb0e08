package sweep

import (
	"go.yaml.in/yaml/v3"

	"github.com/hcasim/hcasim/fabric"
)

// AxisChange is the first sweep axis found to change what a caller
// compares: its key and the value at which it does.
type AxisChange struct {
	Key   string
	Value any
}

// AxesThatChange expands root's sweep as a run would (the keys of sets
// pinned) and tries each unpinned axis on its own, the others held at the
// base point's values (a search axis at both ends of its range). same
// reports whether a point is the same as the base for the caller (the
// RTL's design, the fabric's cables). It returns the first axis one of
// whose values gives a point same rejects, or nil, and the axes none of
// whose values does.
func AxesThatChange(root *yaml.Node, sets []string, same func(*fabric.Loaded) (bool, error)) (*AxisChange, []string, error) {
	pins := PinnedKeys(sets)
	all, err := Expand(root, Options{Pinned: pins})
	if err != nil {
		return nil, nil, err
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
		sw, err := Expand(root, Options{Pinned: alone})
		if err != nil {
			return nil, nil, err
		}
		probes := []float64{0}
		if sw.Search != nil {
			probes = []float64{sw.Search.Search.From, sw.Search.Search.To}
		}
		for _, dp := range sw.Designs {
			for _, x := range probes {
				p, err := sw.Point(dp, x)
				if err != nil {
					return nil, nil, err
				}
				ok, err := same(p.Loaded)
				if err != nil {
					return nil, nil, err
				}
				if !ok {
					return &AxisChange{Key: axis.Key, Value: p.Params[axis.Key]}, nil, nil
				}
			}
		}
		ignored = append(ignored, axis.Key)
	}
	return nil, ignored, nil
}
