package fabric

import (
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
