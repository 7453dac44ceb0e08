package main

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metricDocPages are the pages that define metrics: metrics.md, and the
// pages it sends HCA, switch, collective and sweep metrics to.
var metricDocPages = []string{"metrics.md", "hca.md", "switch.md", "fabric.md", "sweeps.md"}

// indexed turns the numbers of per-host, per-port, per-VL and per-bucket
// names into one placeholder, as the docs write them: host0_ud_drops and
// host{0,1}_ud_drops, port12_vl0_buf_hist3_ps and port<i>_vl<v>_buf_hist<k>_ps,
// group1_mlid and group<k>_mlid.
var indexed = regexp.MustCompile(`(^|[^a-z])(host|port|vl|hist|group)(\d+|\{0,1\}|<[a-z]>)`)

func normalizeMetric(s string) string { return indexed.ReplaceAllString(s, "$1$2#") }

// metricRuns is one small run of every workload kind and perftest test,
// the shapes that add metrics (a fabric, background traffic, UD, lossy
// links, --check), and a sweep point.
var metricRuns = [][]string{
	{"--set", "workload.test=write_lat"}, {"--set", "workload.test=write_bw"},
	{"--set", "workload.test=read_lat"}, {"--set", "workload.test=read_bw"},
	{"--set", "workload.test=send_lat"}, {"--set", "workload.test=send_bw"},
	{"--set", "workload.test=atomic_lat"},
	{"--set", "workload.test=send_bw", "--set", "workload.connection=UD", "--set", "workload.size=2048"},
	{"--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "workload.background=true"},
	{"--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "workload.background=true", "--set", "cc.enable=true"},
	{"--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.pattern=incast", "--set", "workload.test=read_lat"},
	{"--set", "workload.kind=stream", "--set", "workload.size=4096"},
	{"--set", "workload.kind=uniform", "--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "workload.size=1024"},
	{"--set", "workload.kind=uniform", "--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "workload.size=1024", "--set", "link.ber=1e-6", "--check"},
	{"--set", "workload.kind=uniform", "--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "workload.size=1024", "--set", "link.fec=rs528", "--set", "link.pre_fec_ber=5e-4", "--check"},
	{"--set", "workload.kind=uniform", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=1024", "--set", "topology.host_link_width=1x", "--set", "topology.degraded_links=[{cable: \"Fabric.Host[0].Port[1]\", width: 4x}]"},
	{"--set", "workload.kind=incast", "--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "workload.size=1024"},
	{"--set", "workload.kind=hotspot", "--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "workload.size=1024", "--set", "workload.offered_load=0.9", "--set", "cc.enable=true"},
	{"--set", "workload.kind=uniform", "--set", "topology.kind=fat-tree-2", "--set", "topology.hosts=16", "--set", "switch.radix=8", "--set", "workload.size=1024"},
	{"--set", "workload.kind=permutation", "--set", "topology.kind=fat-tree-2", "--set", "topology.hosts=16", "--set", "switch.radix=8", "--set", "workload.size=1024", "--set", "topology.adaptive_routing=true", "--set", "topology.ar_flowlet_gap_ns=1000"},
	{"--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.pattern=incast", "--set", "workload.test=write_bw", "--set", "cc.enable=true"},
	{"--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.pattern=incast", "--set", "workload.test=write_bw", "--set", "cc.enable=true", "--set", "cc.victim_mask=none"},
	{"--set", "workload.kind=allreduce", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536"},
	{"--set", "workload.kind=allreduce", "--set", "topology.kind=single-switch", "--set", "topology.hosts=5", "--set", "workload.size=65536", "--set", "workload.algorithm=rabenseifner"},
	{"--set", "workload.kind=allreduce", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536", "--set", "workload.algorithm=sharp", "--set", "switch.queueing=fifo"},
	{"--set", "workload.kind=allreduce", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536",
		"--set", "workload.collective_iterations=2", "--set", "workload.collective_warmup=1", "--set", "workload.channels=2"},
	{"--set", "workload.kind=allreduce", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536",
		"--set", "workload.collective_iterations=2", "--set", "workload.collective_warmup=1", "--set", "workload.flow_control=cts"},
	{"--set", "workload.kind=allreduce", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536",
		"--set", "workload.flow_control=cts", "--set", "workload.protocol=ll"},
	{"--set", "workload.kind=alltoall", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536"},
	{"--set", "workload.kind=allgather", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536"},
	{"--set", "workload.kind=reducescatter", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536"},
	{"--set", "workload.kind=broadcast", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536"},
	{"--set", "workload.kind=reduce", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536"},
	{"--set", "workload.kind=broadcast", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "workload.size=65536", "--set", "workload.root=2"},
	{"--set", "workload.kind=replay", "--set", "workload.trace_file=examples/replay-halo.trace", "--set", "topology.kind=fat-tree-2", "--set", "topology.hosts=16", "--set", "switch.radix=8"},
	{"--set", "workload.kind=multicast", "--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "switch.queueing=fifo", "--set", "workload.size=1024", "--set", "workload.senders=0,3"},
	{"--set", "workload.kind=multicast", "--set", "topology.kind=single-switch", "--set", "topology.hosts=8", "--set", "switch.queueing=fifo", "--set", "workload.size=1024",
		"--set", `workload.groups=["0,1","2-4"]`, "--set", "workload.background=true"},
	{"--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "switch.queueing=fifo", "--set", "workload.test=send_bw",
		"--set", "workload.connection=UD", "--set", "workload.mcg=true", "--set", "workload.size=1024"},
	{"--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "switch.queueing=fifo", "--set", "workload.test=send_lat",
		"--set", "workload.connection=UD", "--set", "workload.mcg=true", "--set", "workload.size=32"},
	{"--set", "topology.kind=single-switch", "--set", "topology.hosts=4", "--set", "switch.queueing=fifo", "--set", "workload.test=send_bw",
		"--set", "workload.connection=UD", "--set", "workload.mcg=true", "--set", "workload.size=1024", "--set", "switch.mcast_replication=hold"},
	{"--set", "sweep={workload.size: [1024, 2048]}", "--set", "workload.size=1024", "--set", "workload.kind=uniform", "--set", "topology.kind=single-switch", "--set", "topology.hosts=4"},
}

// TestMetricsDocumented: every metric a run of any workload kind emits is
// defined in the docs, and every metric docs/metrics.md tabulates is emitted
// by one of those runs. Metrics had been added (host{0,1}_ud_drops) and
// renamed without the docs following.
func TestMetricsDocumented(t *testing.T) {
	var docs strings.Builder
	for _, f := range metricDocPages {
		b, err := os.ReadFile("../../docs/" + f)
		require.NoError(t, err)
		docs.Write(b)
	}
	text := normalizeMetric(docs.String())

	emitted := map[string]bool{} // normalized keys; nested ones as parent.child
	for _, extra := range metricRuns {
		args := append([]string{"-config", "edr.yaml", "--quiet", "--format", "json", "--set", "workload.iterations=50",
			"--out", t.TempDir()}, extra...)
		code, out, errs := run(args...)
		require.Equal(t, 0, code, "%v: %s", extra, errs)
		var res struct {
			Points []struct {
				Metrics map[string]any `json:"metrics"`
			} `json:"points"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.NotEmpty(t, res.Points)
		for _, p := range res.Points {
			require.NotEmpty(t, p.Metrics, "%v", extra)
			collectMetricKeys(p.Metrics, "", emitted)
		}
	}

	documented := func(key string) bool {
		leaf := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(key, ".") {
			// A top-level metric is named in backticks, alone or with its
			// fields (`stages.host{0,1}.<stage>`).
			return strings.Contains(text, "`"+leaf+"`") || strings.Contains(text, "`"+leaf+".")
		}
		// A field of an object metric is listed with it (lat_us {min, …});
		// a switch's per-port and per-VL statistic is named in full or as
		// the suffix after port<i>_vl<v>.
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(leaf) + `\b`).MatchString(text) {
			return true
		}
		for _, pre := range []string{"port#_vl#", "port#"} {
			if rest, ok := strings.CutPrefix(leaf, pre); ok && strings.Contains(text, "`"+rest+"`") {
				return true
			}
		}
		return false
	}
	keys := make([]string, 0, len(emitted))
	for k := range emitted {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		assert.True(t, documented(k), "metric %s (# for an index) is emitted but not defined in docs/ (%s)", k, strings.Join(metricDocPages, ", "))
	}

	// The other way: every row of metrics.md's tables names a metric some run
	// emits.
	page, err := os.ReadFile("../../docs/metrics.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)`(?: / `([a-z0-9_]+)`)?")
	rows := row.FindAllStringSubmatch(string(page), -1)
	require.Greater(t, len(rows), 20, "docs/metrics.md has metric tables")
	for _, r := range rows {
		for _, name := range r[1:] {
			if name != "" {
				assert.True(t, emitted[name], "docs/metrics.md defines %s, which no run emits", name)
			}
		}
	}
}

// collectMetricKeys adds every key of m, objects' fields as parent.field,
// normalized.
func collectMetricKeys(m map[string]any, prefix string, into map[string]bool) {
	for k, v := range m {
		key := prefix + normalizeMetric(k)
		into[key] = true
		if sub, ok := v.(map[string]any); ok {
			collectMetricKeys(sub, key+".", into)
		}
	}
}
