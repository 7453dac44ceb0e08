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

// BenchmarkSubnetDragonflyPlus times minhop, minhop with AR groups and the
// deadlock check on a dragonfly-plus of radix 16 with 17 groups: 8 leaves
// × 8 hosts and 8 spines a group, 1088 hosts, 272 switches, 4 global
// cables a group pair.
func BenchmarkSubnetDragonflyPlus(b *testing.B) {
	topo, err := DragonflyPlus(DragonflyPlusSpec{Radix: 16, Oversubscription: 1, Groups: 17}, testCable, testCable, testCable)
	if err != nil {
		b.Fatal(err)
	}
	for _, ar := range []bool{false, true} {
		name := "route/minhop"
		if ar {
			name += "+ar"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 1, AdaptiveRouting: ar}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, ar := range []bool{false, true} {
		sn, err := NewSubnet(topo, SubnetOptions{Routing: RoutingMinHop, VLs: 1, AdaptiveRouting: ar})
		if err != nil {
			b.Fatal(err)
		}
		name := "deadlock-check"
		if ar {
			name += "+ar"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := sn.CheckDeadlock(nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Non-minimal routing: the detours in the AR groups (2 VLs) and the
	// check that walks them.
	nonmin := SubnetOptions{Routing: RoutingMinHop, VLs: 2, AdaptiveRouting: true, NonMinimal: true}
	b.Run("route/minhop+ar+nonminimal", func(b *testing.B) {
		for b.Loop() {
			if _, err := NewSubnet(topo, nonmin); err != nil {
				b.Fatal(err)
			}
		}
	})
	sn, err := NewSubnet(topo, nonmin)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("deadlock-check+ar+nonminimal", func(b *testing.B) {
		for b.Loop() {
			if err := sn.CheckDeadlock(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
