package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
)

// scalePoint is one size of a scale measurement: the overrides that give
// it its hosts (and, past two levels' reach, a third level), and what its
// two runs measured.
type scalePoint struct {
	hosts int
	kind  string   // topology.kind it ran with
	sets  []string // the user's overrides, then topology.kind and topology.hosts
	cpu   [2]float64
	hops  [2]float64 // 64-byte block-hops of each run
}

// marginalNS is the CPU time per block-hop between p's two runs, in
// nanoseconds: what the longer window's extra simulated time cost, with the
// set-up both runs share (building the fabric, routing, the warm-up)
// cancelled out. ok is false when the longer window forwarded no more
// blocks than the shorter one (nothing to divide by).
func (p *scalePoint) marginalNS() (ns float64, ok bool) {
	dh := p.hops[1] - p.hops[0]
	if dh <= 0 {
		return 0, false
	}
	return (p.cpu[1] - p.cpu[0]) * 1e9 / dh, true
}

// scalePoints resolves the sizes of --scale for the benchmark at path: for
// each, the user's overrides plus topology.hosts, and, when the benchmark is
// a two-level fat tree whose switches cannot reach that many hosts, a
// three-level one (what an architect would build; the table says which).
// Every point is loaded, with both windows, before anything runs.
func scalePoints(name, path string, sets []string, hosts []int, windows [2]int) ([]scalePoint, error) {
	data, err := config.ReadFile(path, configs.Lookup)
	if err != nil {
		return nil, userErrorf("bench: %s: %s", name, err)
	}
	base, err := fabric.Load(data, sets)
	if err != nil {
		if b, err2 := fabric.Load(data, scaleSets(sets, hosts[0])); err2 == nil {
			base, err = b, nil
		}
	}
	if err != nil {
		return nil, userErrorf("bench: %s: %s", name, err)
	}
	kind := base.Config.Topology.Kind
	switch kind {
	case fabric.KindSingleSwitch, fabric.KindFatTree2, fabric.KindFatTree3, fabric.KindDragonflyPlus:
	default:
		return nil, userErrorf("bench: --scale: %s has topology.kind %s; --scale sets topology.hosts, which only single-switch, fat-tree-2, fat-tree-3 and dragonfly-plus take", name, kind)
	}
	var pts []scalePoint
	for _, h := range hosts {
		p := scalePoint{hosts: h, kind: kind}
		try := func(k string) error {
			p.kind = k
			p.sets = scaleSets(append(append([]string(nil), sets...), "topology.kind="+k), h)
			for _, w := range windows {
				if _, err := fabric.Load(data, append(p.sets, "workload.measure_ns="+strconv.Itoa(w))); err != nil {
					return err
				}
			}
			return nil
		}
		err := try(kind)
		if err != nil && kind == fabric.KindFatTree2 {
			// Past two levels' reach: a third. When three cannot reach
			// them either, that is the refusal to show (the two-level
			// one would suggest the third level just tried).
			err = try(fabric.KindFatTree3)
			if err != nil {
				return nil, userErrorf("bench: --scale %d: %s: %s; --set switch.radix=R for larger switches", h, name, err)
			}
		}
		if err != nil {
			return nil, userErrorf("bench: --scale %d: %s: %s", h, name, err)
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// benchScale runs the benchmark at path at every size of pts, twice each
// (workload.measure_ns = windows[0], then windows[1]), prints per size the
// marginal CPU time per block-hop and its ratio to the first size's, and
// returns the runs' CSV rows (their benchmark column names the size and
// window). Cost linear in hosts × simulated time is a ratio near 1: the
// work per block-hop does not grow with the fabric.
func benchScale(self, rev, name, path string, pts []scalePoint, windows [2]int, stop *stopRequest, stdout, stderr io.Writer) ([][]string, int) {
	var rows [][]string
	t := tablewriter.NewTable(stdout, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("hosts", "topology", "cpu_s", "block_hops", "ns_cpu_per_block_hop", "vs_first")
	first := 0.0
	var noisy, idle []int
	for i := range pts {
		p := &pts[i]
		for k, w := range windows {
			if stop.signal() != nil {
				// Stopped: the sizes measured whole are in the table; a
				// size's first window alone is kept in the rows.
				renderScale(t, i > 0)
				return rows, 0
			}
			row, hops, err := runBench(self, rev, path, append(p.sets, "workload.measure_ns="+strconv.Itoa(w)))
			if benchAfterRun != nil {
				benchAfterRun()
			}
			if err != nil && stop.signal() != nil {
				renderScale(t, i > 0)
				return rows, 0
			}
			if err != nil {
				// The points loaded before anything ran: a failure now is
				// the child's own; the sizes already measured are kept.
				fmt.Fprintf(stderr, "hcasim: bench --scale %d: %s: %v\n", p.hosts, name, err)
				renderScale(t, len(rows) > 0)
				return rows, 1
			}
			row[2] = fmt.Sprintf("%s hosts=%d measure_ns=%d", row[2], p.hosts, w)
			rows = append(rows, row)
			p.cpu[k], _ = strconv.ParseFloat(row[4], 64)
			p.hops[k] = hops
		}
		ns, ok := p.marginalNS()
		cell, vs := "-", "-"
		switch {
		case ok && ns > 0:
			cell = strconv.FormatFloat(ns, 'f', 0, 64)
			if first == 0 {
				first = ns // the smallest size measured
			}
			vs = strconv.FormatFloat(ns/first, 'f', 2, 64) + "×"
		case ok:
			noisy = append(noisy, p.hosts)
		default:
			idle = append(idle, p.hosts)
		}
		_ = t.Append(strconv.Itoa(p.hosts), p.kind,
			fmt.Sprintf("%.3f / %.3f", p.cpu[0], p.cpu[1]),
			groupDigits(int64(p.hops[0]))+" / "+groupDigits(int64(p.hops[1])), cell, vs)
	}
	renderScale(t, true)
	for _, h := range noisy {
		fmt.Fprintf(stdout, "%d hosts: the longer window took no more CPU time than the shorter one (noise larger than its work): lengthen --windows\n", h)
	}
	for _, h := range idle {
		fmt.Fprintf(stdout, "%d hosts: the longer window forwarded no more blocks than the shorter one (a workload that does not run for workload.measure_ns?)\n", h)
	}
	return rows, 0
}

func renderScale(t *tablewriter.Table, any bool) {
	if any {
		_ = t.Render()
	}
}

// scaleSets is sets with topology.hosts at h: a benchmark with the user's
// overrides may load only at --scale's sizes (a dragonfly-plus built from a
// 64-host fat-tree benchmark needs two groups, 128 hosts of radix 16).
func scaleSets(sets []string, h int) []string {
	return append(append([]string(nil), sets...), "topology.hosts="+strconv.Itoa(h))
}

// checkScaleFlags checks --scale and --windows: at least two sizes of two
// hosts or more, increasing (each is compared with the first, the
// smallest); two windows, the first shorter; --windows only with --scale,
// and --scale for one benchmark.
func checkScaleFlags(scale, windows []int, windowsSet bool, names int) ([2]int, error) {
	var w [2]int
	if len(scale) == 0 {
		if windowsSet {
			return w, userErrorf("bench: --windows is set without --scale (it sets the two measurement windows of --scale's runs)")
		}
		return w, nil
	}
	if names != 1 {
		return w, userErrorf("bench: --scale measures one benchmark at several sizes; name one (%d given)", names)
	}
	if len(scale) < 2 {
		return w, userErrorf("bench: --scale %s: give at least two sizes (numbers of hosts, increasing), e.g. --scale 128,1024", intList(scale))
	}
	for i, h := range scale {
		if h < 2 || i > 0 && h <= scale[i-1] {
			return w, userErrorf("bench: --scale %s: %d is not allowed (numbers of hosts, each at least 2, increasing)", intList(scale), h)
		}
	}
	if len(windows) != 2 || windows[0] <= 0 || windows[1] <= windows[0] {
		return w, userErrorf("bench: --windows %s: give two measurement windows in ns, the first positive and shorter than the second, e.g. --windows 10000,30000", intList(windows))
	}
	return [2]int{windows[0], windows[1]}, nil
}

// intList writes a list flag's numbers as the user gives them, comma
// separated (128,64), not as Go prints a slice ([128 64]).
func intList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}
