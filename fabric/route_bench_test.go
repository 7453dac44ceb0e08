package fabric

import "testing"

// BenchmarkSubnet times the subnet manager and the deadlock check on a
// three-level fat tree of radix 16: 1024 hosts, 320 switches.
func BenchmarkSubnet(b *testing.B) {
	topo, err := FatTree3(16, 0, testCable)
	if err != nil {
		b.Fatal(err)
	}
	for _, engine := range RoutingEngines {
		b.Run("route/"+engine, func(b *testing.B) {
			for b.Loop() {
				if _, err := NewSubnet(topo, SubnetOptions{Routing: engine, Seed: 1, VLs: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingDModK, VLs: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("deadlock-check", func(b *testing.B) {
		for b.Loop() {
			if err := sn.CheckDeadlock(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
