package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/pflag"

	"github.com/hcasim/hcasim/report"
	"github.com/hcasim/hcasim/sweep"
)

func init() {
	subcommands["merge"] = mergeMain
}

// mergeMain is `hcasim merge DIR... [--out DIR] [--format F] [--quiet]`:
// it merges the output directories of `--shard I/N` runs into exactly what
// the unsharded run writes (results.json and results.csv byte for byte,
// plots, knee.csv) and prints the merged table. Exit 0 when every point
// succeeded, 1 when some point failed (its error is in the results: a
// shard does not record whether it was the user's or a bug), 2 when the
// directories do not form one whole sweep.
func mergeMain(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("hcasim merge", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "", "")
	format := fs.String("format", "table", "")
	quiet := fs.Bool("quiet", false, "")
	if err := fs.Parse(normalizeArgs(args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: hcasim merge DIR... [--out DIR] [--format table|csv|json] [--quiet]")
			fmt.Fprintln(stdout, "\nMerges the outputs of a sweep's shards (hcasim --shard I/N --out DIR) into one result; docs/sweeps.md.")
			fmt.Fprintln(stdout, "--quiet leaves out the stderr summary (shards and points merged, a knee search's knees); failures are still reported.")
			return 0
		}
		return fail(stderr, userErrorf("merge: %s (usage: hcasim merge DIR... [--out DIR] [--format table|csv|json] [--quiet])", err))
	}
	switch *format {
	case "table", "csv", "json":
	default:
		return fail(stderr, userErrorf("merge: --format: %q is not a format (table, csv, json)", *format))
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		return fail(stderr, userErrorf("merge: no directories given (usage: hcasim merge DIR... [--out DIR])"))
	}
	if fs.Changed("out") && *out == "" {
		return fail(stderr, userErrorf("merge: --out: an empty path (name the directory to write the merged result into)"))
	}
	if *out != "" {
		if err := outIsNoShard(*out, dirs); err != nil {
			return fail(stderr, err)
		}
	}
	res, rows, knee, err := mergeShards(dirs)
	if err != nil {
		return fail(stderr, err)
	}
	// The merged table is printed even when --out cannot be written: the
	// files' error is reported after it.
	ex := &sweepExtras{knee: knee, cells: rows}
	if knee == nil {
		// From the shards' cells, so that summary.csv's params read as the
		// unsharded run writes them (summary.json's numbers are the same
		// either way: results.json keeps them to the bit).
		ex.summary = report.Summarise(res, rows)
	}
	var werr error
	if *out != "" {
		// The shards are untouched, so nothing is lost when this fails.
		err := report.WriteMerged(*out, res, rows)
		if err == nil {
			err = writePlots(*out, res, ex)
		}
		if err != nil {
			werr = outError("merge: --out", *out, err)
		}
	}
	var perr error
	switch *format {
	case "json":
		perr = report.WriteJSON(stdout, res)
	case "csv":
		perr = report.WriteCSVCells(stdout, res.Points, rows)
	default:
		if ex.summary != nil {
			perr = report.WriteSummaryTable(stdout, ex.summary, tableColumns(res))
			break
		}
		perr = report.WriteTable(stdout, res, tableColumns(res))
	}
	if werr != nil {
		return fail(stderr, werr)
	}
	if perr != nil {
		return fail(stderr, perr)
	}
	failed := 0
	for _, p := range res.Points {
		if p.Error != "" {
			failed++
		}
	}
	if failed > 0 && failed == len(res.Points) {
		// As a sweep none of whose points ran: one line, no summary of
		// points that computed nothing.
		fmt.Fprintf(stderr, "hcasim: merge: all %d points of the %d shards failed (each has its error in the results)\n", failed, len(dirs))
		return 1
	}
	if !*quiet {
		fmt.Fprintf(stderr, "hcasim: merge: %d shards, %d points\n", len(dirs), len(res.Points))
		if knee != nil {
			for _, k := range sweep.Knees(res.Points, knee.Key, knee.Epsilon) {
				fmt.Fprintf(stderr, "hcasim: merge: %s%s\n", designText(k.Design), k.Describe(knee.Key))
			}
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "hcasim: merge: %d of %d points failed (each has its error in the results)\n", failed, len(res.Points))
		return 1
	}
	return 0
}

// mergeShards reads the shards' manifests and results, checks they are the
// whole of one sweep, and puts their points back in the unsharded order:
// by design, and within a design (a knee search's probes) as the shard
// wrote them.
func mergeShards(dirs []string) (*report.Result, []map[string]string, *sweep.KneeManifest, error) {
	ms := make([]*sweep.Manifest, len(dirs))
	parts := make([]*report.Part, len(dirs))
	for i, d := range dirs {
		if r, err := report.ReadJSON(filepath.Join(d, resultsJSON)); err == nil && r.Interrupted != nil {
			return nil, nil, nil, userErrorf("merge: %s was interrupted (%s) with %d of its %d points not run: finish it first, with its command and --resume",
				d, r.Interrupted.Signal, r.Interrupted.NotRun, len(r.Points))
		}
		m, err := sweep.ReadManifest(d)
		if err != nil {
			return nil, nil, nil, userErrorf("merge: %s", err)
		}
		p, err := report.ReadPart(d)
		if err != nil {
			return nil, nil, nil, userErrorf("merge: %s: %v", d, err)
		}
		if len(p.Result.Points) != len(m.PointDesigns) {
			return nil, nil, nil, userErrorf("merge: %s: results.json has %d points, %s lists %d", d, len(p.Result.Points), sweep.ManifestFile, len(m.PointDesigns))
		}
		ms[i], parts[i] = m, p
	}
	if err := sweep.Check(dirs, ms); err != nil {
		return nil, nil, nil, err
	}
	h := parts[0].Result
	for i, p := range parts {
		r := p.Result
		if r.Tool != h.Tool || r.Version != h.Version || r.Config != h.Config || r.Seed != h.Seed {
			return nil, nil, nil, userErrorf("merge: %s was written by %s %s for %s seed %d, %s by %s %s for %s seed %d: not shards of one run",
				dirs[i], r.Tool, r.Version, r.Config, r.Seed, dirs[0], h.Tool, h.Version, h.Config, h.Seed)
		}
	}
	type item struct {
		design int
		point  report.Point
		row    map[string]string
	}
	var items []item
	for i, p := range parts {
		for j, pt := range p.Result.Points {
			items = append(items, item{ms[i].PointDesigns[j], pt, p.Rows[j]})
		}
	}
	// Each design ran in exactly one shard (Check), so a stable sort by
	// design keeps a search's probes in the shard's order.
	sort.SliceStable(items, func(a, b int) bool { return items[a].design < items[b].design })
	res := &report.Result{Tool: h.Tool, Version: h.Version, Config: h.Config, Seed: h.Seed, Points: []report.Point{}}
	rows := make([]map[string]string, 0, len(items))
	for _, it := range items {
		res.Points = append(res.Points, it.point)
		rows = append(rows, it.row)
	}
	return res, rows, ms[0].Knee, nil
}

// outIsNoShard refuses an --out that is one of the shard directories being
// merged: writing there would overwrite the shard's results and remove its
// shard.json, so it could not be merged again.
func outIsNoShard(out string, dirs []string) error {
	st, err := os.Stat(out)
	if err != nil {
		return nil // not there yet: no shard; WriteMerged reports a bad path
	}
	for _, d := range dirs {
		if ds, err := os.Stat(d); err == nil && os.SameFile(st, ds) {
			return userErrorf("merge: --out %s is the shard directory %s; name another directory (writing there would replace the shard)", out, d)
		}
	}
	return nil
}
