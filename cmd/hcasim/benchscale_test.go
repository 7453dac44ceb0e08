package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchScale: --scale runs one benchmark at each size with both
// windows, prints a row per size and appends a CSV row per run, named by
// size and window.
//
// The block-hops the table prints are the model's, and the difference
// between a size's two runs is the longer window's extra traffic, which
// follows from the benchmark: every host offers 50 % of NDR 4x's 400 Gb/s
// data rate (ib-facts §1), 25 bytes/ns, in 1 KiB packets of 1,050 wire
// bytes (LRH 8 + BTH 12 + payload 1,024 + ICRC 4 + VCRC 2), 17 credits of
// 64 bytes each, and each packet crosses two links (host to switch, switch
// to host): 2 × 17 × 25 / 1,050 = 0.8095 block-hops per ns per host, so
// the 20,000 ns between the windows add 16,190 per host (±10 %: uniform
// traffic draws its gaps at random, ±2.3 % for the 1,900 packets of four
// hosts). A run that ignored its window would add none.
//
// CPU time cannot be asserted (a shared machine); the printed cost per
// block-hop must be what the printed CPU times and block-hops give.
func TestBenchScale(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	csvPath := filepath.Join(t.TempDir(), "bench.csv")
	code, out, errOut := run("bench", "switch16-uniform-50", "--scale", "4,8", "--windows", "10000,30000",
		"--set", "workload.warmup_ns=1000", "--csv", csvPath)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rows [][]string
	for _, l := range lines {
		cells := strings.Split(l, "│")
		if len(cells) == 8 && strings.TrimSpace(cells[1]) != "hosts" {
			var c []string
			for _, x := range cells[1:7] {
				c = append(c, strings.TrimSpace(x))
			}
			rows = append(rows, c)
		}
	}
	require.Len(t, rows, 2, out)
	perHost := 2.0 * 17 * 25 / 1050 * 20000
	for i, h := range []int{4, 8} {
		r := rows[i]
		assert.Equal(t, strconv.Itoa(h), r[0])
		assert.Equal(t, "single-switch", r[1])
		cpu := splitPair(t, r[2])
		hops := splitPair(t, r[3])
		dh := hops[1] - hops[0]
		assert.InEpsilon(t, perHost*float64(h), dh, 0.10, "block-hops the longer window added, %d hosts", h)
		dc := cpu[1] - cpu[0]
		// The table's CPU times are rounded to the millisecond, each by
		// up to 0.5 ms; the cost to the nanosecond.
		slack := 2*0.0005*1e9/dh + 0.5
		if r[4] == "-" {
			// No cost is printed only when the CPU time did not grow,
			// which the rounded times show as no growth within the
			// rounding.
			assert.LessOrEqual(t, dc, 0.001, "%d hosts: no cost printed, but the CPU time grew", h)
			continue
		}
		// Equal rounded times can hide a growth under 1 ms, which has a
		// cost (under a loaded machine a short window's did).
		ns, err := strconv.ParseFloat(r[4], 64)
		require.NoError(t, err, r[4])
		assert.Greater(t, ns, 0.0, "%d hosts: a printed cost is of a CPU time that grew", h)
		assert.InDelta(t, dc*1e9/dh, ns, slack, "%d hosts: cost = Δcpu / Δblock-hops", h)
	}
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 5, "header and four runs")
	var names []string
	for _, r := range recs[1:] {
		names = append(names, r[2])
	}
	assert.Equal(t, []string{
		"switch16-uniform-50 hosts=4 measure_ns=10000", "switch16-uniform-50 hosts=4 measure_ns=30000",
		"switch16-uniform-50 hosts=8 measure_ns=10000", "switch16-uniform-50 hosts=8 measure_ns=30000",
	}, names)
}

// splitPair reads a table cell "a / b" (digit groups allowed).
func splitPair(t *testing.T, cell string) [2]float64 {
	t.Helper()
	a, b, ok := strings.Cut(cell, " / ")
	require.True(t, ok, cell)
	var v [2]float64
	for i, s := range []string{a, b} {
		x, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
		require.NoError(t, err, cell)
		v[i] = x
	}
	return v
}

// TestBenchScaleGrowsATreeALevel: a two-level fat-tree benchmark asked for
// more hosts than its radix-16 switches reach in two levels (16 leaves of 8
// host ports: 128) runs them on three levels, and the table says so.
func TestBenchScaleGrowsATreeALevel(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	code, out, errOut := run("bench", "fattree64-uniform-30", "--scale", "128,136", "--windows", "500,1000",
		"--set", "workload.warmup_ns=500", "--csv", filepath.Join(t.TempDir(), "b.csv"))
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `│ 128\s+│ fat-tree-2 │`, out)
	assert.Regexp(t, `│ 136\s+│ fat-tree-3 │`, out)
}

// TestBenchScaleDragonflyPlus: a dragonfly-plus takes --scale's hosts as
// groups of its radix-16 switches: 8 leaves of 8 hosts, 64 hosts a group,
// so 128 and 192 hosts are 2 and 3 groups. The block-hops the longer
// window adds follow from the traffic and the minimal routes: each host
// offers 30 % of NDR 4x's 50 bytes/ns, 15 bytes/ns, in packets of 1,050
// wire bytes and 17 credits (TestBenchScale), and a packet crosses 2 links
// to its 7 leaf mates, 4 to the group's other 56 hosts (leaf, spine, leaf)
// and 5 to the 64 hosts of each other group (leaf, spine, global cable,
// spine, leaf), uniform over the N − 1 others:
//
//	128 hosts: (7·2 + 56·4 + 64·5) / 127 = 558/127 = 4.394 links
//	192 hosts: (7·2 + 56·4 + 128·5) / 191 = 878/191 = 4.597 links
//
// so 15/1,050 × 17 × links block-hops per ns per host over the 2,000 ns
// between the windows (±10 %: gaps drawn at random, ≈3,700 packets at 128
// hosts). Random routing: minhop's LID-order choices put a spine's remote
// destinations on one of its global cables (TestDragonflyPlusMinhopAliasing).
func TestBenchScaleDragonflyPlus(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	code, out, errOut := run("bench", "fattree64-uniform-30", "--scale", "128,192", "--windows", "1000,3000",
		"--set", "topology.routing=random", "--set", "topology.kind=dragonfly-plus", "--set", "workload.warmup_ns=1000",
		"--csv", filepath.Join(t.TempDir(), "b.csv"))
	require.Equal(t, 0, code, errOut)
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		cells := strings.Split(l, "│")
		if len(cells) == 8 && strings.TrimSpace(cells[1]) != "hosts" {
			rows = append(rows, []string{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2]), strings.TrimSpace(cells[4])})
		}
	}
	require.Len(t, rows, 2, out)
	for i, c := range []struct {
		hosts int
		links float64
	}{{128, 558.0 / 127}, {192, 878.0 / 191}} {
		assert.Equal(t, strconv.Itoa(c.hosts), rows[i][0])
		assert.Equal(t, "dragonfly-plus", rows[i][1])
		hops := splitPair(t, rows[i][2])
		want := 15.0 / 1050 * 17 * c.links * 2000 * float64(c.hosts)
		assert.InEpsilon(t, want, hops[1]-hops[0], 0.10, "block-hops the longer window added, %d hosts", c.hosts)
	}
}

// TestBenchScalePastThreeLevels: 2,048 hosts do not fit radix-16 switches
// in three levels either (k³/4 = 16³/4 = 1,024): the refusal is the
// three-level one, with the way out, before anything runs; exit 2.
func TestBenchScalePastThreeLevels(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	csv := filepath.Join(t.TempDir(), "b.csv")
	code, out, errOut := run("bench", "fattree64-uniform-30", "--scale", "128,2048", "--csv", csv)
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "hcasim: bench: --scale 2048: fattree64-uniform-30: topology.hosts: 2048 does not fit a three-level fat tree of radix 16 (2..1024 = k³/4); --set switch.radix=R for larger switches\n", errOut)
	assert.NoFileExists(t, csv)
}

// TestScaleMarginal: the cost per block-hop is the CPU time the longer
// window added over the block-hops it added: (3 − 1) s / (3e9 − 1e9) = 1 ns;
// none when it added no block-hops.
func TestScaleMarginal(t *testing.T) {
	p := scalePoint{cpu: [2]float64{1, 3}, hops: [2]float64{1e9, 3e9}}
	ns, ok := p.marginalNS()
	assert.True(t, ok)
	assert.InDelta(t, 1.0, ns, 1e-12)
	p.hops[1] = p.hops[0]
	_, ok = p.marginalNS()
	assert.False(t, ok)
}

// TestBenchScaleBadInput: --scale and --windows are checked before
// anything runs: one line naming the flag, the value and what is allowed,
// exit 2, no CSV.
func TestBenchScaleBadInput(t *testing.T) {
	t.Setenv("HCASIM_TEST_AS_CLI", "1")
	csvPath := filepath.Join(t.TempDir(), "bench.csv")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scale", "128"}, "--scale 128: give at least two sizes"},
		{[]string{"--scale", "128,64"}, "--scale 128,64: 64 is not allowed (numbers of hosts, each at least 2, increasing)"},
		{[]string{"--scale", "1,64"}, "--scale 1,64: 1 is not allowed"},
		{[]string{"--scale", "16,32", "--windows", "30000,10000"}, "--windows 30000,10000: give two measurement windows"},
		{[]string{"--scale", "16,32", "--windows", "10000"}, "--windows 10000: give two measurement windows"},
		{[]string{"--windows", "1000,2000"}, "--windows is set without --scale"},
		{[]string{"--scale", "16,32", "switch16-uniform-50"}, "--scale measures one benchmark at several sizes; name one (2 given)"},
		{[]string{"--scale", "2,4", "b2b-ndr-write-bw"}, "--scale: b2b-ndr-write-bw has topology.kind back-to-back; --scale sets topology.hosts, which only single-switch, fat-tree-2, fat-tree-3 and dragonfly-plus take"},
		{[]string{"--scale", "16,32"}, "bench: --scale 32: switch16-uniform-50: topology.hosts: 32"},
		{[]string{"--scale", "4,8", "--set", "topology.hosts=8"}, "bench: --set topology.hosts=8 with --scale 4,8: --scale sets topology.hosts at each size; drop the --set"},
	} {
		args := append([]string{"bench"}, c.args...)
		if !strings.Contains(strings.Join(c.args, " "), "b2b") {
			args = append(args, "switch16-uniform-50")
		}
		code, out, errOut := run(append(args, "--csv", csvPath)...)
		assert.Equal(t, 2, code, "%v: %s", c.args, errOut)
		assert.Empty(t, out)
		assert.Contains(t, errOut, c.want)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, errOut)
		_, err := os.Stat(csvPath)
		assert.True(t, os.IsNotExist(err), "no CSV when nothing was measured")
	}
}
