package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"gonum.org/v1/gonum/stat/distuv"
)

// SeedKey is the param that tells a point's replica: points that differ in
// it alone are replicas of one design.
const SeedKey = "seed"

// Confidence is the confidence level of a summary's intervals.
const Confidence = 0.95

// The files a replicated sweep writes beside results.json and results.csv.
const (
	SummaryJSON = "summary.json"
	SummaryCSV  = "summary.csv"
)

// Summary is a replicated sweep's points reduced to one entry per design:
// the replicas' mean, sample standard deviation and the half-width of the
// Confidence interval of the mean, per numeric metric.
type Summary struct {
	Tool       string  `json:"tool"`
	Version    string  `json:"version"`
	Config     string  `json:"config"`
	Seed       uint64  `json:"seed"`
	Confidence float64 `json:"confidence"`
	// Designs are in the order of their first point in the results.
	Designs []Design `json:"designs"`
}

// Design is one design of a replicated sweep: the points whose params
// differ only in SeedKey.
type Design struct {
	// Params are the points' params without SeedKey.
	Params map[string]any `json:"params"`
	// Seeds are the seed values of the design's points, in point order.
	Seeds []any `json:"seeds"`
	// N is how many replicas succeeded; Failures how many have an error
	// (they are left out of the statistics).
	N        int `json:"n"`
	Failures int `json:"failures"`
	// Metrics are the statistics of every numeric metric, by its flattened
	// name (latency_ns_p50, as results.csv names its column).
	Metrics map[string]Stat `json:"metrics"`

	cells map[string]string // Params as results.csv wrote them
}

// Stat is one metric over a design's successful replicas.
type Stat struct {
	// N is how many of the successful replicas report the metric (N of the
	// design unless some did not).
	N int `json:"n"`
	// Mean is the replicas' mean.
	Mean float64 `json:"mean"`
	// SD is the sample standard deviation (divisor N − 1); nil for N = 1.
	SD *float64 `json:"sd"`
	// CI95 is the half-width of the 95 % confidence interval of the mean,
	// t(0.975, N − 1) × SD / √N (Student's t); nil for N = 1, where no
	// interval can be had.
	CI95 *float64 `json:"ci95"`
}

// Replicated reports whether the points hold two or more values of SeedKey:
// then they are replicas and Summarise reduces them.
func Replicated(points []Point) bool {
	seen := map[string]bool{}
	for _, p := range points {
		if v, ok := p.Params[SeedKey]; ok {
			seen[FormatValue(v)] = true
		}
	}
	return len(seen) > 1
}

// Summarise groups r's points into designs — the points that differ only in
// SeedKey — and computes each design's statistics; nil when r is not
// replicated. cells, if given, are the points' results.csv cells (merge
// reads them back), from which summary.csv takes the params as results.csv
// wrote them; without it they are formatted from the params.
//
// The metrics are normalised first (Normalize, as results.json writes
// them), so a summary computed from a run's points and one computed from
// its results.json read back (hcasim merge) are computed from the same
// numbers and agree to the bit.
func Summarise(r *Result, cells []map[string]string) *Summary {
	if !Replicated(r.Points) {
		return nil
	}
	s := &Summary{Tool: r.Tool, Version: r.Version, Config: r.Config, Seed: r.Seed, Confidence: Confidence, Designs: []Design{}}
	type group struct {
		design *Design
		values map[string][]float64
	}
	var groups []*group
	byID := map[string]*group{}
	for i, p := range r.Points {
		keys := make([]string, 0, len(p.Params))
		for k := range p.Params {
			if k != SeedKey {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for j, k := range keys {
			parts[j] = k + "=" + FormatValue(p.Params[k])
		}
		id := strings.Join(parts, "\x00")
		g, ok := byID[id]
		if !ok {
			d := &Design{Params: map[string]any{}, Seeds: []any{}, cells: map[string]string{}}
			for _, k := range keys {
				d.Params[k] = p.Params[k]
				if cells != nil {
					d.cells[k] = cells[i][k]
				} else {
					d.cells[k] = FormatValue(p.Params[k])
				}
			}
			g = &group{design: d, values: map[string][]float64{}}
			byID[id] = g
			groups = append(groups, g)
		}
		g.design.Seeds = append(g.design.Seeds, p.Params[SeedKey])
		if p.Error != "" {
			g.design.Failures++
			continue
		}
		g.design.N++
		Normalize(p.Metrics)
		flat := map[string]float64{}
		flattenNumbers("", p.Metrics, flat)
		for k, v := range flat {
			g.values[k] = append(g.values[k], v)
		}
	}
	for _, g := range groups {
		g.design.Metrics = map[string]Stat{}
		for k, vs := range g.values {
			g.design.Metrics[k] = stats(vs)
		}
		s.Designs = append(s.Designs, *g.design)
	}
	return s
}

// stats computes the mean, the sample standard deviation and the
// Confidence half-width of the mean of vs (at least one value), each
// rounded as results are (Round). The values are summed in point order,
// so the result does not depend on how the points were run.
func stats(vs []float64) Stat {
	// Deviations from the first value (the shifted-data algorithm): equal
	// values give a mean of exactly that value and a deviation of exactly
	// 0, where summing 468.472 five times and dividing by 5 would leave a
	// last-bit residue and a spurious 6e-14 of spread.
	n := float64(len(vs))
	shift, sum := vs[0], 0.0
	for _, v := range vs {
		sum += v - shift
	}
	dmean := sum / n
	st := Stat{N: len(vs), Mean: Round(shift + dmean)}
	if len(vs) < 2 {
		return st
	}
	ss := 0.0
	for _, v := range vs {
		d := v - shift - dmean
		ss += d * d
	}
	sd := math.Sqrt(ss / (n - 1))
	hw := TQuantile(len(vs)-1) * sd / math.Sqrt(n)
	sd, hw = Round(sd), Round(hw)
	st.SD, st.CI95 = &sd, &hw
	return st
}

// TQuantile is the two-sided Confidence quantile of Student's t with df
// degrees of freedom: t(0.975, df), the factor of a 95 % interval's
// half-width over the standard error of the mean (gonum's distuv, which
// inverts the regularised incomplete beta function).
func TQuantile(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - (1-Confidence)/2)
}

// flattenNumbers is Flatten for the numeric metrics: the same column names,
// the values as float64; strings and bools are left out.
func flattenNumbers(prefix string, v any, out map[string]float64) {
	walkLeaves(prefix, v, func(key string, v any) {
		if f, ok := Number(v); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			out[key] = f
		}
	})
}

// columns returns the summary's param columns and metric names, sorted.
func (s *Summary) columns() (params, metrics []string) {
	ps, ms := map[string]bool{}, map[string]bool{}
	for _, d := range s.Designs {
		for k := range d.Params {
			ps[k] = true
		}
		for k := range d.Metrics {
			ms[k] = true
		}
	}
	return slices.Sorted(maps.Keys(ps)), slices.Sorted(maps.Keys(ms))
}

// WriteSummaryCSV writes one row per design: its params, n, failures, then
// METRIC_mean, METRIC_sd and METRIC_ci95 for every numeric metric (empty
// where the design has no such number: no sd or ci95 with one success).
func WriteSummaryCSV(w io.Writer, s *Summary) error {
	params, metrics := s.columns()
	header := append(append([]string{}, params...), "n", "failures")
	for _, m := range metrics {
		header = append(header, m+"_mean", m+"_sd", m+"_ci95")
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return FormatValue(*v)
	}
	for _, d := range s.Designs {
		row := make([]string, 0, len(header))
		for _, k := range params {
			row = append(row, d.cells[k])
		}
		row = append(row, strconv.Itoa(d.N), strconv.Itoa(d.Failures))
		for _, m := range metrics {
			st, ok := d.Metrics[m]
			if !ok {
				row = append(row, "", "", "")
				continue
			}
			row = append(row, FormatValue(st.Mean), opt(st.SD), opt(st.CI95))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSummaryFiles writes summary.json and summary.csv into dir.
func WriteSummaryFiles(dir string, s *Summary) error {
	var jb, cb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	if err := WriteSummaryCSV(&cb, s); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, SummaryJSON), jb.Bytes()); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, SummaryCSV), cb.Bytes())
}

// WriteSummaryTable writes one row per design: its params, n, failures and
// the chosen metrics (all when cols is empty) as mean ± half-width of the
// 95 % interval, the half-width to two significant digits and the mean to
// the same decimal place (the digits beyond are noise at this n).
func WriteSummaryTable(w io.Writer, s *Summary, cols []string) error {
	params, metrics := s.columns()
	if len(cols) > 0 {
		metrics = intersect(cols, metrics)
	}
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	header := make([]any, 0, len(params)+len(metrics)+2)
	for _, k := range params {
		header = append(header, k)
	}
	header = append(header, "n", "failures")
	for _, k := range metrics {
		header = append(header, k)
	}
	t.Header(header...)
	for _, d := range s.Designs {
		row := make([]any, 0, len(header))
		for _, k := range params {
			row = append(row, d.cells[k])
		}
		row = append(row, strconv.Itoa(d.N), strconv.Itoa(d.Failures))
		for _, m := range metrics {
			st, ok := d.Metrics[m]
			if !ok {
				row = append(row, "")
				continue
			}
			row = append(row, PlusMinus(st))
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	return t.Render()
}

// PlusMinus renders a statistic for people: "391.68 ± 0.12" — the
// half-width to two significant digits, the mean to the same decimal
// place; the mean alone (as results print it) when there is no interval.
func PlusMinus(st Stat) string {
	if st.CI95 == nil {
		return FormatValue(st.Mean)
	}
	hw := *st.CI95
	if hw == 0 {
		return FormatValue(st.Mean) + " ± 0"
	}
	// The decimal place of the half-width's second significant digit.
	place := int(math.Floor(math.Log10(hw))) - 1
	if math.Round(hw/math.Pow10(place)) >= 100 {
		place++ // it rounds up to the next power of ten: 0.998 is 1.0
	}
	if place >= 0 {
		unit := math.Pow10(place)
		return strconv.FormatFloat(math.Round(st.Mean/unit)*unit, 'f', 0, 64) + " ± " +
			strconv.FormatFloat(math.Round(hw/unit)*unit, 'f', 0, 64)
	}
	return strconv.FormatFloat(st.Mean, 'f', -place, 64) + " ± " + strconv.FormatFloat(hw, 'f', -place, 64)
}

// SummaryPoints are the summary's designs as points for plotting: each
// design's params and its metrics' means, with the half-widths beside
// them for the error bars.
func (s *Summary) points() []Point {
	out := make([]Point, len(s.Designs))
	for i, d := range s.Designs {
		m := map[string]any{}
		ci := map[string]float64{}
		for k, st := range d.Metrics {
			m[k] = st.Mean
			if st.CI95 != nil {
				ci[k] = *st.CI95
			}
		}
		out[i] = Point{Params: d.Params, Metrics: m, ci: ci, labels: d.cells}
	}
	return out
}
