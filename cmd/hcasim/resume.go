package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
)

// resumed is what --resume read from an interrupted sweep's --out: its
// finished points by pointKey, each with the results.csv cells it was
// written with, and which of them this run reused.
type resumed struct {
	path   string
	points map[string]resumedPoint

	mu     sync.Mutex
	reused map[string]bool
}

type resumedPoint struct {
	point  report.Point
	row    map[string]string
	design int // the index of its design (sweep.Design.Index)
}

// pointKey identifies a point by its params, as results.json writes them
// (a value read back as json.Number encodes as the text it was read from,
// which is what encoding/json wrote for the typed value). A point's seed
// is derived from the base seed (in the config hash) and these params, so
// equal keys under one config are one point.
func pointKey(params map[string]any) string {
	b, err := json.Marshal(params)
	if err != nil {
		panic(fmt.Sprintf("resume: params %v do not encode: %v", params, err))
	}
	return string(b)
}

// readResume reads dir's results.json for --resume and checks that it is
// an interrupted run of this sweep: written by this build, for this config
// (want's hash, --check, --shard), every point one of this sweep's. No
// results.json is no error: there is nothing to reuse (nil). Anything else
// amiss is the user's error, naming the file.
func readResume(dir string, sw *sweep.Sweep, run []int, want report.Interruption) (*resumed, error) {
	path := filepath.Join(dir, resultsJSON)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	part, err := report.ReadPart(dir)
	if err != nil {
		return nil, userErrorf("--resume: %v", err)
	}
	res := part.Result
	got := res.Interrupted
	if got == nil {
		return nil, userErrorf("--resume: %s is a finished run's (it records no interruption): nothing to resume; run without --resume to run the sweep again", path)
	}
	if got.Build != want.Build {
		return nil, userErrorf("--resume: %s was written by hcasim %s, this is %s: two builds may compute a point differently, so resume with the build that was interrupted, or run without --resume", path, got.Build, want.Build)
	}
	ok := sweepPoints(sw, run)
	designs := make([]int, len(res.Points))
	for i, p := range res.Points {
		d, in := ok(p.Params)
		designs[i] = d
		if !in {
			return nil, userErrorf("--resume: %s holds the point %s, which is no point of this sweep (another config, --set, --seed or --shard): run without --resume, or give another --out", path, pointText(p.Params))
		}
	}
	switch {
	case got.ConfigHash != want.ConfigHash:
		return nil, userErrorf("--resume: %s was written for another config (config hash %s, this one's %s): a key the sweep does not vary, or --set or --seed, differs; run without --resume, or give another --out", path, got.ConfigHash, want.ConfigHash)
	case got.Check != want.Check:
		with := map[bool]string{true: "with --check", false: "without --check"}
		return nil, userErrorf("--resume: %s was written %s, this run is %s: give the interrupted run's flags", path, with[got.Check], with[want.Check])
	case got.Shard != want.Shard:
		return nil, userErrorf("--resume: %s is of --shard %q, this run is of --shard %q: give the interrupted run's flags", path, got.Shard, want.Shard)
	}
	r := &resumed{path: path, points: map[string]resumedPoint{}, reused: map[string]bool{}}
	for i, p := range res.Points {
		if p.Error == "" {
			r.points[pointKey(p.Params)] = resumedPoint{p, part.Rows[i], designs[i]}
		}
	}
	return r, nil
}

// sweepPoints returns which of the designs run params belong to, and
// whether they are one of its points: a grid design's point, or a knee
// search's design at a load within its range.
func sweepPoints(sw *sweep.Sweep, designs []int) func(map[string]any) (design int, ok bool) {
	byKey := map[string]int{}
	var searchKey string
	var x float64
	if sw.Search != nil {
		searchKey, x = sw.Search.Key, sw.Search.Search.From
	}
	strip := func(params map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range params {
			if k != searchKey {
				out[k] = v
			}
		}
		return out
	}
	for _, d := range designs {
		p, _ := sw.Point(sw.Designs[d], x)
		byKey[pointKey(strip(p.Params))] = sw.Designs[d].Index
	}
	return func(params map[string]any) (int, bool) {
		d, ok := byKey[pointKey(strip(params))]
		if !ok || sw.Search == nil {
			return d, ok
		}
		v, isNum := report.Number(params[searchKey])
		return d, isNum && v >= sw.Search.Search.From && v <= sw.Search.Search.To
	}
}

// keepFinished returns an interrupted resumed run's outcomes with every
// point the earlier run finished kept: a point this run did not reach is
// its earlier outcome, not "not run", and a knee search's probes this run
// did not reach are added to their design. Without it, a resumed run
// interrupted again would lose the points it had not yet reused. Outcomes
// stay in design order, a search's probes by load.
func (r *resumed) keepFinished(sw *sweep.Sweep, outs []sweep.Outcome) []sweep.Outcome {
	if r == nil {
		return outs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	out := make([]sweep.Outcome, 0, len(outs))
	for _, o := range outs {
		k := pointKey(o.Params)
		if rp, ok := r.points[k]; ok && errors.Is(o.Err, sweep.ErrNotRun) {
			o.Metrics, o.Err = rp.point.Metrics, nil
			r.reused[k] = true
		}
		seen[k] = true
		out = append(out, o)
	}
	for k, rp := range r.points {
		if !seen[k] {
			r.reused[k] = true
			out = append(out, sweep.Outcome{Design: rp.design, Params: rp.point.Params, Metrics: rp.point.Metrics})
		}
	}
	var key string
	if sw.Search != nil {
		key = sw.Search.Key
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Design != out[j].Design {
			return out[i].Design < out[j].Design
		}
		if key == "" {
			return false
		}
		xi, _ := report.Number(out[i].Params[key])
		xj, _ := report.Number(out[j].Params[key])
		return xi < xj
	})
	return out
}

// runner returns run, but for a point finished in the interrupted run
// returns its metrics as results.json holds them. A knee search's probe is
// reused only when its saturation is sure at those 9 digits
// (sweep.SaturationSure); otherwise it runs again, so that the search
// probes what the uninterrupted one probed.
func (r *resumed) runner(sw *sweep.Sweep, run sweep.Runner) sweep.Runner {
	if r == nil {
		return run
	}
	return func(p *sweep.Point) (map[string]any, error) {
		k := pointKey(p.Params)
		rp, ok := r.points[k]
		if ok && sw.Search != nil {
			x, _ := report.Number(p.Params[sw.Search.Key])
			ok = sweep.SaturationSure(rp.point.Metrics, x, sw.Search.Search.Epsilon)
		}
		if !ok {
			return run(p)
		}
		r.mu.Lock()
		r.reused[k] = true
		r.mu.Unlock()
		return rp.point.Metrics, nil
	}
}

// rows returns the results.csv cells of the points: a reused point's as
// the interrupted run wrote them, another's from its values (report.Cells).
func (r *resumed) rows(points []report.Point) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := make([]map[string]string, len(points))
	for i, p := range points {
		k := pointKey(p.Params)
		if rp, ok := r.points[k]; ok && r.reused[k] && p.Error == "" {
			rows[i] = rp.row
			continue
		}
		rows[i] = report.Cells(p)
	}
	return rows
}

// count returns how many points this run reused.
func (r *resumed) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reused)
}
