package fabric

import (
	"runtime"
	"testing"
)

// BenchmarkStream runs a saturating NDR 4x stream of 1 KiB packets for 1 ms of
// simulated time and reports simulated packets per wall-second.
func BenchmarkStream(b *testing.B) {
	l, err := Load(nil, []string{"topology.kind=back-to-back", "workload.kind=stream", "switch.vls=1",
		"workload.size=1024", "workload.warmup_ns=0", "workload.measure_ns=1000000"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var packets int
	for i := 0; i < b.N; i++ {
		m, err := Run(l, RunOptions{})
		if err != nil {
			b.Fatal(err)
		}
		packets += m["packets_delivered"].(int)
	}
	b.ReportMetric(float64(packets)/b.Elapsed().Seconds(), "packets/s")
}

// BenchmarkFatTree64 (issue 5): a 64-host two-level fat tree of radix-16
// switches (8 leaves × 8 hosts, 8 spines), uniform traffic at 50 % load with
// 1 KiB packets, 20 µs measured. Reports simulated 64-byte block-hops per
// wall-second and the heap the built fabric holds per host.
func BenchmarkFatTree64(b *testing.B) {
	l, err := Load(nil, []string{"topology.kind=fat-tree-2", "switch.radix=16", "topology.hosts=64",
		"topology.routing=dmodk", "switch.vls=1", "workload.kind=uniform", "workload.size=1024",
		"workload.offered_load=0.5", "workload.warmup_ns=2000", "workload.measure_ns=20000"})
	if err != nil {
		b.Fatal(err)
	}
	var blockHops uint64
	var heapPerHost float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m, err := Run(l, RunOptions{Observe: func(*Simulation) {
			runtime.ReadMemStats(&after)
		}})
		if err != nil {
			b.Fatal(err)
		}
		blockHops += uint64(m["block_hops"].(int64))
		heapPerHost = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / 64
	}
	b.ReportMetric(float64(blockHops)/b.Elapsed().Seconds(), "block-hops/s")
	b.ReportMetric(heapPerHost, "heap-bytes/host")
}
