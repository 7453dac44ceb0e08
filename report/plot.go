package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot names and the metrics they draw (docs/metrics.md).
const (
	// LatencyPlot is p50 (solid) and p99 (dashed) latency vs offered load,
	// one colour per design.
	LatencyPlot = "latency-vs-offered-load.svg"
	// AcceptedPlot is accepted vs offered load, with the diagonal a
	// lossless, unsaturated network would follow.
	AcceptedPlot = "accepted-vs-offered-load.svg"
	// throughputPlotPrefix + key + ".svg" is throughput vs a buffer-depth
	// key, or vs any other numeric swept key no plot above draws against.
	throughputPlotPrefix = "throughput-vs-"
	// latencyPlotPrefix + key + ".svg" is latency vs such a key.
	latencyPlotPrefix = "latency-vs-"
	// ClientsPlot is a perftest's aggregate bandwidth (solid) and its
	// slowest pair's (dashed) vs workload.clients.
	ClientsPlot = "bandwidth-vs-clients.svg"
	// BERPlot is throughput vs link.ber on a log axis, one colour per
	// design; a design's error-free point (ber 0, which a log axis cannot
	// show) is a dashed level across the plot.
	BERPlot = "throughput-vs-link.ber.svg"
	// berKey is the swept key BERPlot draws against.
	berKey = "link.ber"
)

// berMetrics are the throughput metrics BERPlot draws, the first the points
// report: synthetic traffic's and a stream's goodput, perftest's bandwidth,
// a collective's bus bandwidth (docs/metrics.md).
var berMetrics = []string{"goodput_gbps", "bw_gbps", "busbw_gbps", "throughput_gbps"}

// maxKeyPlotDesigns is the most designs (lines per series) a key's own
// plots draw.
const maxKeyPlotDesigns = 8

// latencySeries are the latency series a plot against a key of its own
// draws, the first set the points report: synthetic traffic's packet
// latency, a perftest latency test's typical and p99, a collective's time.
var latencySeries = []struct {
	ss   []series
	unit string
}{
	{[]series{{metric: "latency_ns.p50", label: "p50"}, {metric: "latency_ns.p99", label: "p99", dashed: true}}, "ns"},
	{[]series{{metric: "lat_us.typical", label: "typical"}, {metric: "lat_us.p99", label: "p99", dashed: true}}, "µs"},
	{[]series{{metric: "time_us"}}, "µs"},
}

// WritePlots draws the plots that the result's swept keys make meaningful
// into dir as SVG and returns the files written:
//   - an offered-load key (ending in offered_load) swept: LatencyPlot when
//     the points report latency_ns, AcceptedPlot when they report
//     accepted_load;
//   - each swept key ending in buffer_bytes: the throughput the points
//     report (throughputMetric) against it, throughput-vs-<key>.svg, and their
//     latency, latency-vs-<key>.svg, as for a key of its own (keyPlots),
//     either without the other;
//   - workload.clients swept: aggregate_bw_gbps and pair_bw_gbps.min
//     against it, ClientsPlot.
//   - link.ber swept: BERPlot, the throughput the points report.
//
// A key is swept when the points hold at least two values of it. Every
// other swept key splits the points into designs, one line each. Points
// with an error or without the metric are left out; a plot with no data is
// not written.
func WritePlots(dir string, r *Result) ([]string, error) {
	return writePlots(dir, r.Points, "")
}

// WriteMergedPlots is WritePlots for a result merged from shards: rows are
// its points' results.csv cells, as the shards wrote them, and the legends
// label the designs from them. The params themselves come back from
// results.json, where a float such as 1e-06 is written 0.000001: labelled
// from them, a merged link.ber sweep's legends read link.ber=0.000001
// where the unsharded run's read link.ber=1e-06.
func WriteMergedPlots(dir string, r *Result, rows []map[string]string) ([]string, error) {
	if len(rows) != len(r.Points) {
		panic(fmt.Sprintf("report: WriteMergedPlots with %d points and %d rows", len(r.Points), len(rows)))
	}
	points := make([]Point, len(r.Points))
	for i, p := range r.Points {
		p.labels = map[string]string{}
		for k := range p.Params {
			p.labels[k] = rows[i][k]
		}
		points[i] = p
	}
	return writePlots(dir, points, "")
}

// WriteSummaryPlots draws a replicated sweep's plots: those WritePlots
// draws for its points, with each design's replicas reduced to their mean
// and a 95 % confidence error bar (plotter.YErrorBars) in place of one line
// per seed. The seed is no design-splitting key there: the designs are
// the summary's, which hold no seed.
func WriteSummaryPlots(dir string, s *Summary) ([]string, error) {
	return writePlots(dir, s.points(), " (mean ± 95 % CI over seeds)")
}

// writePlots draws points' plots; note is appended to every title.
func writePlots(dir string, points []Point, note string) ([]string, error) {
	r := &Result{Points: points}
	swept := sweptKeys(r.Points)
	var written []string
	save := func(p *plot.Plot, name string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		p.Title.Text += note
		// p.Save would write the file in place; drawn first and written
		// whole, a plot is never left half-written (WriteFile).
		wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, strings.TrimPrefix(filepath.Ext(name), "."))
		if err != nil {
			return fmt.Errorf("plot %s: %v", name, err)
		}
		var buf bytes.Buffer
		if _, err := wt.WriteTo(&buf); err != nil {
			return fmt.Errorf("plot %s: %v", name, err)
		}
		if err := WriteFile(filepath.Join(dir, name), buf.Bytes()); err != nil {
			return err // names the file
		}
		written = append(written, name)
		return nil
	}
	for _, x := range swept {
		switch {
		case strings.HasSuffix(x, "offered_load"):
			if p, rows := linePlot(r.Points, x, swept, []series{
				{metric: "latency_ns.p50", label: "p50"},
				{metric: "latency_ns.p99", label: "p99", dashed: true},
			}); p != nil {
				who := latencyOwner(r.Points)
				p.Title.Text = capitalise(who+"latency") + " vs offered load"
				p.X.Label.Text = "offered load (fraction of link rate) — " + x
				p.Y.Label.Text = who + "latency (ns) — latency_ns.p50, latency_ns.p99"
				// Past saturation queues grow by orders of magnitude: a
				// linear axis would flatten every curve below the knee.
				if p.Y.Min > 0 && p.Y.Max >= 100*p.Y.Min {
					p.Y.Scale = plot.LogScale{}
					p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
					p.Y.Label.Text = who + "latency (ns, log scale) — latency_ns.p50, latency_ns.p99"
				}
				legendRoom(p, float64(rows))
				if err := save(p, LatencyPlot); err != nil {
					return written, err
				}
			}
			if p, rows := linePlot(r.Points, x, swept, []series{{metric: "accepted_load"}}); p != nil {
				diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
				if err != nil {
					return written, err
				}
				diag.Color = color.Gray{Y: 160}
				diag.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
				p.Add(diag)
				p.Legend.Add("accepted = offered", diag)
				p.Title.Text = "Accepted vs offered load"
				p.X.Label.Text = "offered load (fraction of link rate) — " + x
				p.Y.Label.Text = "accepted load (fraction of link rate)"
				legendRoom(p, float64(rows+1))
				if err := save(p, AcceptedPlot); err != nil {
					return written, err
				}
			}
		case x == "workload.clients":
			p, rows := linePlot(r.Points, x, swept, []series{
				{metric: "aggregate_bw_gbps", label: "aggregate"},
				{metric: "pair_bw_gbps.min", label: "slowest pair", dashed: true},
			})
			if p == nil {
				continue
			}
			p.Title.Text = "Perftest bandwidth vs clients"
			p.X.Label.Text = "clients — " + x
			p.Y.Label.Text = "bandwidth (Gb/s) — aggregate_bw_gbps, pair_bw_gbps.min"
			p.Y.Min = 0
			legendRoom(p, float64(rows))
			if t := valueTicks(r.Points, x); t != nil {
				p.X.Tick.Marker = t
			}
			if err := save(p, ClientsPlot); err != nil {
				return written, err
			}
		case strings.HasSuffix(x, "buffer_bytes"):
			if p := bufferPlot(r.Points, x, swept); p != nil {
				if err := save(p, throughputPlotPrefix+x+".svg"); err != nil {
					return written, err
				}
			}
			// A buffer's latency too (how deep for the p99 a design
			// wants), under the rules of a key's own plots, whether or
			// not the points report a throughput (a multicast run
			// reports latency_ns and no goodput_gbps).
			if keyGrid(r.Points, x, swept) {
				if err := latencyKeyPlot(r.Points, x, swept, save); err != nil {
					return written, err
				}
			}
		case x == berKey:
			p, err := berPlot(r.Points, swept)
			if err != nil {
				return written, err
			}
			if p != nil {
				if err := save(p, BERPlot); err != nil {
					return written, err
				}
			}
		case ownAxis(r.Points, x):
			if err := keyPlots(r.Points, x, swept, save); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// bufferPlot draws throughput-vs-KEY.svg against a buffer-depth key x:
// the throughput the points report (throughputMetric), or nil when they
// report none.
func bufferPlot(points []Point, x string, swept []string) *plot.Plot {
	if metric := throughputMetric(points); metric != "" {
		p, _ := linePlot(points, x, swept, []series{{metric: metric}})
		if p == nil {
			return nil
		}
		p.Title.Text = "Throughput vs buffer depth"
		p.X.Label.Text = x + " (bytes)"
		// The axis says the quantity and its unit, then the column it
		// comes from, as the offered-load plots' x axes do.
		p.Y.Label.Text = strings.TrimSuffix(metric, "_gbps") + " (Gb/s) — " + metric
		// Curves rise to the right and flatten at the top: the legend
		// goes bottom right, and the y axis starts at 0 so a shortfall
		// reads as the fraction it is.
		p.Legend.Top, p.Legend.Left = false, false
		p.Y.Min = 0
		p.Y.Max *= 1.05
		if logAxis(points, x) {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		if t := valueTicks(points, x); t != nil {
			p.X.Tick.Marker = t
		}
		return p
	}
	return nil
}

// throughputMetric is the throughput metric the plots draw for points:
// the first of berMetrics they report (synthetic goodput, a perftest's bw,
// a collective's busbw, a stream's throughput), or "" for none. A sweep
// of perftest latency tests alone (every point that ran reports lat_us)
// has no throughput: perftest prints no bandwidth for its latency tests,
// and their bw_gbps (a 64-byte send_lat "runs at" 0.30 Gb/s) reads as a
// fault, which is why the CLI's table leaves it out too.
func throughputMetric(points []Point) string {
	latencyOnly := false
	for _, pt := range points {
		if pt.Error != "" {
			continue
		}
		// A replicated sweep's design means are flat (lat_us_typical).
		if _, ok := metricValue(pt.Metrics, "lat_us.typical"); !ok {
			latencyOnly = false
			break
		}
		latencyOnly = true
	}
	for _, m := range berMetrics {
		if m == "bw_gbps" && latencyOnly {
			continue
		}
		if hasMetric(points, m) {
			return m
		}
	}
	return ""
}

// ownAxis reports whether swept key x gets plots of its own
// (throughput-vs-KEY.svg, latency-vs-KEY.svg): a model key (not the seed,
// whose replicas are summarised, nor a sim.* key, which changes how a
// point runs, not its results) whose every value is a number.
func ownAxis(points []Point, x string) bool {
	if x == "seed" || strings.HasPrefix(x, "sim.") {
		return false
	}
	for _, pt := range points {
		if v, ok := pt.Params[x]; ok {
			if _, num := Number(v); !num {
				return false
			}
		}
	}
	return true
}

// keyPlots draws throughput and latency against x, one line per design:
// the first throughput metric of berMetrics the points report, and the
// first latency series of latencySeries. A plot no point has data for is
// skipped, and so are both when the other swept keys make more than
// maxKeyPlotDesigns designs (a buffer-depth sweep of 15 values drew 15
// lines against a cable length of 3, under a legend that hid them) or
// when the points are not a grid over x and the designs.
func keyPlots(points []Point, x string, swept []string, save func(*plot.Plot, string) error) error {
	if !keyGrid(points, x, swept) {
		return nil
	}
	if metric := throughputMetric(points); metric != "" {
		if p, rows := linePlot(points, x, swept, []series{{metric: metric}}); p != nil {
			p.Title.Text = "Throughput vs " + x
			p.X.Label.Text = x
			p.Y.Label.Text = strings.TrimSuffix(metric, "_gbps") + " (Gb/s) — " + metric
			p.Y.Min = 0
			legendRoom(p, float64(rows))
			keyAxis(p, points, x)
			if err := save(p, throughputPlotPrefix+x+".svg"); err != nil {
				return err
			}
		}
	}
	return latencyKeyPlot(points, x, swept, save)
}

// keyGrid reports whether x may have plots of its own: at most
// maxKeyPlotDesigns designs, each at every value of x the points that ran
// hold (a grid). A knee
// search probes other loads for each design, so against another key its
// "designs" (the probed loads) hold a point or two each and draw no curve.
func keyGrid(points []Point, x string, swept []string) bool {
	var ok []Point // failed points leave a gap in a line, not a hole in the grid
	for _, pt := range points {
		if pt.Error == "" {
			ok = append(ok, pt)
		}
	}
	points = ok
	groups, designs := groupDesigns(points, x, swept)
	if len(designs) > maxKeyPlotDesigns {
		return false
	}
	all := map[string]bool{}
	for _, pt := range points {
		all[fmt.Sprint(pt.Params[x])] = true
	}
	for _, id := range designs {
		seen := map[string]bool{}
		for _, pt := range groups[id] {
			seen[fmt.Sprint(pt.Params[x])] = true
		}
		if len(seen) != len(all) {
			return false
		}
	}
	return true
}

// latencyKeyPlot draws latency-vs-KEY.svg: the first series of
// latencySeries the points report against x, one line per design.
func latencyKeyPlot(points []Point, x string, swept []string, save func(*plot.Plot, string) error) error {
	for _, ls := range latencySeries {
		if !hasMetric(points, ls.ss[0].metric) {
			continue
		}
		p, rows := linePlot(points, x, swept, ls.ss)
		if p == nil {
			break
		}
		names := make([]string, len(ls.ss))
		for i, s := range ls.ss {
			names[i] = s.metric
		}
		who := ""
		if ls.ss[0].metric == "latency_ns.p50" {
			who = latencyOwner(points)
		}
		p.Title.Text = capitalise(who+"latency") + " vs " + x
		p.X.Label.Text = x
		p.Y.Label.Text = who + "latency (" + ls.unit + ") — " + strings.Join(names, ", ")
		// A message size or a buffer swept over decades moves latency by
		// orders of magnitude: a linear axis flattens the small end.
		if p.Y.Min > 0 && p.Y.Max >= 100*p.Y.Min {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			p.Y.Label.Text = who + "latency (" + ls.unit + ", log scale) — " + strings.Join(names, ", ")
		}
		legendRoom(p, float64(rows))
		keyAxis(p, points, x)
		if err := save(p, latencyPlotPrefix+x+".svg"); err != nil {
			return err
		}
		break
	}
	return nil
}

// latencyOwner names whose packets latency_ns measures when that is not
// the points' headline latency: "background " for a perftest latency test
// beside workload.background traffic (configs/ndr.yaml), whose points
// report the pair's lat_us and, under the synthetic names, the
// background's latency_ns, which is what the plots draw; "" otherwise.
func latencyOwner(points []Point) string {
	if hasMetric(points, "lat_us.typical") && hasMetric(points, "background_hosts") {
		return "background "
	}
	return ""
}

// capitalise upper-cases s's first letter (ASCII), for a title.
func capitalise(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// keyAxis gives a plot against x a log axis when x's values span decades,
// and ticks at the values when they are few.
func keyAxis(p *plot.Plot, points []Point, x string) {
	if logAxis(points, x) {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if t := valueTicks(points, x); t != nil {
		p.X.Tick.Marker = t
	}
}

// berPlot draws throughput against link.ber. Error rates of interest span
// decades (1e-12 … 1e-4), so the x axis is logarithmic; the error-free
// point of each design, which a log axis cannot place, is drawn as a
// dashed level of the design's colour across the swept rates, the
// reference the lossy points fall from. Nil when no point has the data.
func berPlot(points []Point, swept []string) (*plot.Plot, error) {
	metric := throughputMetric(points)
	if metric == "" {
		return nil, nil
	}
	var lossy []Point
	zero := map[string]float64{} // design → its error-free throughput
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pt := range points {
		v, ok := Number(pt.Params[berKey])
		if !ok {
			continue
		}
		if v > 0 {
			lossy = append(lossy, pt)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
			continue
		}
		if y, ok := metricValue(pt.Metrics, metric); ok && pt.Error == "" && !math.IsNaN(y) && !math.IsInf(y, 0) {
			zero[designID(pt, berKey, swept)] = y
		}
	}
	p, _ := linePlot(lossy, berKey, swept, []series{{metric: metric}})
	if p == nil {
		return nil, nil
	}
	_, order := groupDesigns(lossy, berKey, swept)
	for ci, id := range order {
		y, ok := zero[id]
		if !ok {
			continue
		}
		level, err := plotter.NewLine(plotter.XYs{{X: lo, Y: y}, {X: hi, Y: y}})
		if err != nil {
			return nil, err
		}
		level.Color, _ = designStyle(ci)
		level.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(level)
		p.Legend.Add(strings.TrimPrefix(id+" "+berKey+" = 0", " "), level)
	}
	p.Y.Max = math.Max(p.Y.Max, maxValue(zero))
	p.Title.Text = "Throughput vs link bit error rate"
	p.X.Label.Text = "post-FEC bit error rate, log scale — " + berKey
	p.Y.Label.Text = strings.TrimSuffix(metric, "_gbps") + " (Gb/s) — " + metric
	// Throughput falls to the right: the legend goes bottom left, and the
	// y axis starts at 0 so a loss reads as the fraction it is.
	p.Legend.Top, p.Legend.Left = false, true
	p.Y.Min = 0
	p.Y.Max *= 1.05
	if hi > lo {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = decadeTicks{}
	}
	return p, nil
}

// decadeTicks marks a log axis at each power of ten, labelled as the
// config writes a rate (1e-06), with unlabelled ticks at 2 … 9 times it
// (gonum's LogTicks labels 1e-5 as 9.999999999999999e-06).
type decadeTicks struct{}

// Ticks returns the ticks between lo and hi.
func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		for k := 1; k <= 9; k++ {
			// k × 10^e as the nearest float, as "3e-05" parses: 10^-e is
			// exact, and one division rounds once (3 × 1e-5 would round
			// twice, to 3.0000000000000004e-05).
			v := float64(k) * math.Pow10(e)
			if e < 0 {
				v = float64(k) / math.Pow10(-e)
			}
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if k == 1 {
				t.Label = FormatValue(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// designID is the label groupDesigns gives pt's design: the values of the
// swept keys other than x.
func designID(pt Point, x string, swept []string) string {
	var parts []string
	for _, k := range swept {
		if k == x {
			continue
		}
		if v, ok := pt.labels[k]; ok {
			parts = append(parts, k+"="+v)
			continue
		}
		parts = append(parts, k+"="+FormatValue(pt.Params[k]))
	}
	return strings.Join(parts, ", ")
}

// maxValue is the largest value of m, 0 for none.
func maxValue(m map[string]float64) float64 {
	v := 0.0
	for _, y := range m {
		v = math.Max(v, y)
	}
	return v
}

// IsPlotFile reports whether name is one WritePlots may write, by its
// naming scheme: LatencyPlot, AcceptedPlot, ClientsPlot, BERPlot, or
// throughput-vs-KEY.svg or latency-vs-KEY.svg for a dotted KEY (PlotKey).
// The CLI removes such a file from --out when the run did not draw it, so
// that a plot of an earlier run is not taken for one of this run; it
// removes a KEY plot only when KEY is a config key, which no user's name
// for a copy (throughput-vs-link.ber.old.svg) is.
func IsPlotFile(name string) bool {
	if name == LatencyPlot || name == AcceptedPlot || name == ClientsPlot || name == BERPlot {
		return true
	}
	_, ok := PlotKey(name)
	return ok
}

// PlotKey returns the swept key a plot of a key's own is drawn against,
// KEY of throughput-vs-KEY.svg or latency-vs-KEY.svg, when name has that
// form with a dotted KEY (a config key always has a section: a name without
// a dot after the prefix is not one of ours).
func PlotKey(name string) (string, bool) {
	for _, prefix := range []string{throughputPlotPrefix, latencyPlotPrefix} {
		if key, ok := strings.CutPrefix(name, prefix); ok && strings.HasSuffix(key, ".svg") {
			key = strings.TrimSuffix(key, ".svg")
			if strings.Contains(key, ".") {
				return key, true
			}
		}
	}
	return "", false
}

// legendRoom raises the top of the y axis so that a top-left legend of n
// rows sits above the curves rather than on them: each row takes about 6 %
// of the plot's height (of its decades, on a log axis).
func legendRoom(p *plot.Plot, rows float64) {
	if rows == 0 || !(p.Y.Max > p.Y.Min) {
		return
	}
	share := min(0.06*rows, 0.6)
	if _, ok := p.Y.Scale.(plot.LogScale); ok && p.Y.Min > 0 {
		p.Y.Max *= math.Pow(p.Y.Max/p.Y.Min, share/(1-share))
		return
	}
	p.Y.Max += (p.Y.Max - p.Y.Min) * share / (1 - share)
}

// series is one metric drawn per design.
type series struct {
	metric string // dotted path into metrics: latency_ns.p50
	label  string // appended to the design's label when a plot has several series
	dashed bool
}

// linePlot draws y = metric against x, one line per design (combination of
// the other swept keys) and series, and returns the legend's rows; nil when
// no point has the data.
func linePlot(points []Point, x string, swept []string, ss []series) (*plot.Plot, int) {
	p := plot.New()
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	designs, order := groupDesigns(points, x, swept)
	drawn, legendRows := 0, 0
	for ci, id := range order {
		for _, s := range ss {
			var xys plotter.XYs
			var bars errorBars
			for _, pt := range designs[id] {
				xv, okx := Number(pt.Params[x])
				yv, oky := metricValue(pt.Metrics, s.metric)
				if pt.Error != "" || !okx || !oky || math.IsNaN(yv) || math.IsInf(yv, 0) {
					continue
				}
				xys = append(xys, plotter.XY{X: xv, Y: yv})
				if hw, ok := pt.ci[strings.ReplaceAll(s.metric, ".", "_")]; ok {
					bars.XYs = append(bars.XYs, plotter.XY{X: xv, Y: yv})
					bars.YErrors = append(bars.YErrors, struct{ Low, High float64 }{hw, hw})
				}
			}
			if len(xys) == 0 {
				continue
			}
			sort.SliceStable(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
			if len(bars.XYs) > 0 {
				// Drawn first, under the line and its points.
				eb, err := plotter.NewYErrorBars(bars)
				if err == nil {
					eb.Color, _ = designStyle(ci)
					p.Add(eb)
				}
			}
			line, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				continue
			}
			line.Color, pts.Shape = designStyle(ci)
			pts.Color = line.Color
			if s.dashed {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(line, pts)
			label := id
			if len(ss) > 1 {
				label = strings.TrimPrefix(id+" "+s.label, " ")
			}
			if label != "" {
				p.Legend.Add(label, line, pts)
				legendRows++
			}
			drawn++
		}
	}
	if drawn == 0 {
		return nil, 0
	}
	return p, legendRows
}

// errorBars are a design's means and the half-widths of their confidence
// intervals, for plotter.NewYErrorBars.
type errorBars struct {
	plotter.XYs
	plotter.YErrors
}

// designStyle is the colour and point shape of the ci-th design's lines.
// The palette has 7 colours; each further round of them takes the next
// shape (circles first), so 56 designs are told apart before any repeat
// (with colour alone the 8th design drew exactly as the 1st).
func designStyle(ci int) (color.Color, draw.GlyphDrawer) {
	n := len(plotutil.DefaultColors)
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
		draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}}
	return plotutil.Color(ci), shapes[(ci/n)%len(shapes)]
}

// sweptKeys are the params holding at least two values across points,
// sorted.
func sweptKeys(points []Point) []string {
	vals := map[string]map[string]bool{}
	for _, p := range points {
		for k, v := range p.Params {
			if vals[k] == nil {
				vals[k] = map[string]bool{}
			}
			vals[k][FormatValue(v)] = true
		}
	}
	var out []string
	for k, vs := range vals {
		if len(vs) > 1 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// groupDesigns splits points by the values of the swept keys other than x;
// order is by first appearance.
func groupDesigns(points []Point, x string, swept []string) (map[string][]Point, []string) {
	groups := map[string][]Point{}
	var order []string
	for _, p := range points {
		id := designID(p, x, swept)
		if _, ok := groups[id]; !ok {
			order = append(order, id)
		}
		groups[id] = append(groups[id], p)
	}
	return groups, order
}

func hasMetric(points []Point, metric string) bool {
	for _, p := range points {
		if _, ok := metricValue(p.Metrics, metric); ok {
			return true
		}
	}
	return false
}

// logAxis is true when x spans at least a factor of 16 over positive values.
func logAxis(points []Point, x string) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range points {
		v, ok := Number(p.Params[x])
		if !ok {
			continue
		}
		if v <= 0 {
			return false
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi >= 16*lo
}

// valueTicks marks the swept values themselves on the x axis when there are
// few of them (buffer sizes in powers of two read better than decades).
func valueTicks(points []Point, x string) plot.Ticker {
	seen := map[float64]bool{}
	var ticks plot.ConstantTicks
	for _, p := range points {
		v, ok := Number(p.Params[x])
		if !ok || seen[v] {
			continue
		}
		seen[v] = true
		label := FormatValue(v)
		if strings.HasSuffix(x, "size") || strings.HasSuffix(x, "_bytes") {
			label = byteLabel(v)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	if len(ticks) < 2 || len(ticks) > 12 {
		return nil
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value < ticks[j].Value })
	return ticks
}

// byteLabel writes a byte count in binary units when it is a whole number
// of them (16 KiB, 4 MiB), as sizes are swept; other counts (4160, a
// buffer of 65 blocks) as they are.
func byteLabel(v float64) string {
	for _, u := range []struct {
		name string
		size float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v >= u.size && math.Mod(v, u.size) == 0 {
			return FormatValue(v/u.size) + " " + u.name
		}
	}
	return FormatValue(v)
}

// metricValue looks a dotted metric path up ("latency_ns.p50"), falling
// back to the flattened name ("latency_ns_p50").
func metricValue(m map[string]any, path string) (float64, bool) {
	var v any = m
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case map[string]float64:
			f, ok := x[part]
			if !ok {
				v = nil
			} else {
				v = f
			}
		default:
			v = nil
		}
	}
	if f, ok := Number(v); ok {
		return f, true
	}
	return Number(m[strings.ReplaceAll(path, ".", "_")])
}
