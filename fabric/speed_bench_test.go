package fabric

import (
	"testing"
)

// BenchmarkFatTree runs the benchmark fat trees of configs/bench at short
// windows and reports simulated 64-byte block-hops and events per second of
// benchmark time (b.Elapsed: wall time, so compare runs on a quiet machine or
// by CPU time, as docs/performance-data.md does). The 256-host point shows
// the per-event cost rising once the model outgrows the caches, and its
// partitioned twin what two threads make of it.
func BenchmarkFatTree(b *testing.B) {
	for _, bc := range []struct {
		name string
		sets []string
	}{
		{"hosts64-uniform30-1KiB", []string{"topology.kind=fat-tree-2", "topology.hosts=64", "workload.size=1024",
			"workload.offered_load=0.3", "workload.measure_ns=20000"}},
		{"hosts64-uniform80-4KiB", []string{"topology.kind=fat-tree-2", "topology.hosts=64", "workload.size=4096",
			"workload.offered_load=0.8", "workload.measure_ns=20000"}},
		{"hosts256-uniform30-1KiB", []string{"topology.kind=fat-tree-3", "topology.hosts=256", "workload.size=1024",
			"workload.offered_load=0.3", "workload.measure_ns=5000"}},
		// The same in two partitions (sim.partitions, one thread each up to
		// GOMAXPROCS): block-hops per wall-second show the parallel gain.
		{"hosts256-uniform30-1KiB-2partitions", []string{"topology.kind=fat-tree-3", "topology.hosts=256", "workload.size=1024",
			"workload.offered_load=0.3", "workload.measure_ns=5000", "sim.partitions=2"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l, err := Load(nil, append([]string{"switch.radix=16", "switch.vls=1", "topology.routing=dmodk",
				"workload.kind=uniform", "workload.warmup_ns=5000"}, bc.sets...))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var blockHops, events int64
			for i := 0; i < b.N; i++ {
				m, err := Run(l, RunOptions{})
				if err != nil {
					b.Fatal(err)
				}
				blockHops += m["block_hops"].(int64)
				events += int64(m["events"].(uint64))
			}
			b.ReportMetric(float64(blockHops)/b.Elapsed().Seconds(), "blockhops/s")
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
