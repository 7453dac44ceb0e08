package sweep

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/hcasim/hcasim/report"
)

// AcceptedMetric is the metric a knee search compares with the offered
// load: the fraction of link rate delivered (docs/metrics.md).
const AcceptedMetric = "accepted_load"

// Bisect searches [From, To] for the saturation knee. probe runs the point
// at an offered load and says whether it saturated; an error from probe
// stops the search and is returned. The ends are probed first: saturated at
// From means the knee lies below the range, unsaturated at To means above
// it; otherwise the bracket [unsaturated, saturated] is halved until it is
// at most Tolerance wide. It assumes what bisection must, that a load above
// a saturated one is saturated too.
func (k KneeSpec) Bisect(probe func(offered float64) (saturated bool, err error)) (Knee, error) {
	kn := Knee{Below: math.NaN(), Above: math.NaN()}
	sat, err := probe(k.From)
	if err != nil {
		return kn, err
	}
	if sat {
		kn.Above = k.From
		return kn, nil
	}
	lo := k.From
	sat, err = probe(k.To)
	if err != nil {
		return kn, err
	}
	if !sat {
		kn.Below = k.To
		return kn, nil
	}
	hi := k.To
	// The width is compared at the 12 digits the probes are rounded to:
	// the raw float64 difference of two decimals is off in the last bit
	// (0.4 − 0.3 = 0.10000000000000003), which would ask a tolerance that
	// divides the range exactly for one more probe than it needs.
	for round12(hi-lo) > k.Tolerance {
		mid := round12((lo + hi) / 2)
		if mid <= lo || mid >= hi {
			break // the bracket is as narrow as 12 digits go
		}
		sat, err := probe(mid)
		if err != nil {
			return Knee{Below: lo, Above: hi}, err
		}
		if sat {
			hi = mid
		} else {
			lo = mid
		}
	}
	return Knee{Below: lo, Above: hi}, nil
}

// Knee brackets a saturation knee: Below is the highest offered load found
// unsaturated, Above the lowest found saturated; NaN when the range holds
// no such point (the knee lies outside it).
type Knee struct {
	Below float64
	Above float64
}

// Saturated reports whether a point at this offered load is saturated: its
// accepted_load is below offered × (1 − epsilon).
func Saturated(metrics map[string]any, offered, epsilon float64) (bool, error) {
	v, ok := metrics[AcceptedMetric]
	if !ok {
		return false, fmt.Errorf("the point reports no %s metric (this workload.kind has no offered load to search)", AcceptedMetric)
	}
	acc, ok := report.Number(v)
	if !ok {
		return false, fmt.Errorf("the point's %s is %v, not a number", AcceptedMetric, v)
	}
	return acc < offered*(1-epsilon), nil
}

// DesignKnee is the knee of one design: the params other than the searched
// key, and the bracket.
type DesignKnee struct {
	Design map[string]any
	Knee
}

// Knees finds each design's knee in a result's points: points are grouped by
// every param but key (in order of first appearance) and each group's
// bracket is its lowest saturated offered load and the highest unsaturated
// one below it. Failed points add nothing to a bracket, but a design whose
// every point failed is still listed, with no bracket ("no point measured"),
// so that every design has its row in knee.csv and its line on stderr.
func Knees(points []report.Point, key string, epsilon float64) []DesignKnee {
	var order []string
	groups := map[string]*DesignKnee{}
	for _, p := range points {
		x, ok := report.Number(p.Params[key])
		if !ok {
			continue
		}
		id, design := designOf(p.Params, key)
		g, ok := groups[id]
		if !ok {
			g = &DesignKnee{Design: design, Knee: Knee{Below: math.NaN(), Above: math.NaN()}}
			groups[id] = g
			order = append(order, id)
		}
		if p.Error != "" {
			continue
		}
		sat, err := Saturated(p.Metrics, x, epsilon)
		if err != nil {
			continue
		}
		if sat && !(x >= g.Above) {
			g.Above = x
		}
	}
	// A second pass: the highest unsaturated load below the lowest
	// saturated one.
	for _, p := range points {
		x, ok := report.Number(p.Params[key])
		if p.Error != "" || !ok {
			continue
		}
		sat, err := Saturated(p.Metrics, x, epsilon)
		if err != nil || sat {
			continue
		}
		id, _ := designOf(p.Params, key)
		g := groups[id]
		if (math.IsNaN(g.Above) || x < g.Above) && !(x <= g.Below) {
			g.Below = x
		}
	}
	out := make([]DesignKnee, len(order))
	for i, id := range order {
		out[i] = *groups[id]
	}
	return out
}

func designOf(params map[string]any, key string) (string, map[string]any) {
	keys := make([]string, 0, len(params))
	for k := range params {
		if k != key {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	design := map[string]any{}
	parts := make([]string, len(keys))
	for i, k := range keys {
		design[k] = params[k]
		parts[i] = k + "=" + report.FormatValue(params[k])
	}
	return strings.Join(parts, ", "), design
}

// Describe renders a knee for people: "0.62 < knee ≤ 0.64".
func (k Knee) Describe(key string) string {
	switch {
	case math.IsNaN(k.Below) && math.IsNaN(k.Above):
		return "no point measured"
	case math.IsNaN(k.Above):
		return fmt.Sprintf("not saturated up to %s %s (the knee is above the range)", key, FormatFloat(k.Below))
	case math.IsNaN(k.Below):
		return fmt.Sprintf("saturated already at %s %s (the knee is below the range)", key, FormatFloat(k.Above))
	}
	return fmt.Sprintf("knee between %s %s (unsaturated) and %s (saturated)", key, FormatFloat(k.Below), FormatFloat(k.Above))
}

// SaturationSure reports whether Saturated's answer for these metrics,
// rounded to the 9 significant digits results.json keeps (report.Round),
// is the answer for every value that rounds to them: a resumed knee search
// reuses a probe read back from results.json only when it is, so that the
// search takes the steps the uninterrupted one took. Rounding to 9
// digits moves a value v by at most half a unit in its ninth digit,
// 5 × 10⁻⁹ × |v|; a threshold farther than twice that is on the same side
// of the value either way.
func SaturationSure(metrics map[string]any, offered, epsilon float64) bool {
	acc, ok := report.Number(metrics[AcceptedMetric])
	if !ok {
		return false
	}
	return math.Abs(acc-offered*(1-epsilon)) > 1e-8*math.Abs(acc)
}
