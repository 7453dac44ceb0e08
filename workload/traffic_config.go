package workload

import (
	"fmt"
	"math"
	"strings"
)

// MinOfferedLoad is the smallest offered load the injectors take.
const MinOfferedLoad = 0.001

// TrafficConfig holds the synthetic-traffic knobs. Its keys are those of the
// `workload:` section (Config carries the same fields; Config.Traffic copies
// them out), so errors name workload.* keys.
type TrafficConfig struct {
	// Pattern is the destination pattern: uniform, permutation, shift,
	// bitcomp, hotspot, incast. It is the workload.kind key.
	Pattern string `yaml:"kind"`
	// Size is the fixed payload in bytes when Sizes is empty.
	Size int `yaml:"size"`
	// OfferedLoad is the fraction of the link's data rate each host offers,
	// 0 < x ≤ 1.
	OfferedLoad float64 `yaml:"offered_load"`
	// Injection is the arrival process: bernoulli | onoff.
	Injection string `yaml:"injection"`
	// BurstPackets is the on-off process's mean burst length in packets, ≥ 1.
	BurstPackets float64 `yaml:"burst_packets"`
	// Sizes is a payload size distribution "size:weight,…" in bytes, e.g.
	// "256:0.5,4096:0.5"; empty = every packet Size bytes.
	Sizes string `yaml:"sizes"`
	// HotspotFraction is the share of every other host's packets that go to
	// host 0 under the hotspot pattern, 0..1.
	HotspotFraction float64 `yaml:"hotspot_fraction"`
	// Shift is the shift pattern's distance: host i sends to i+shift mod N.
	Shift int `yaml:"shift"`
	// Background says the traffic is a perftest's background
	// (workload.background_pattern) among the hosts other than the test
	// pair: NewSources's errors then name that key and those hosts.
	Background bool `yaml:"-"`
	// PerftestHosts is, for a background, how many hosts the perftest
	// takes (0: the two of one pair), for NewSources's errors.
	PerftestHosts int `yaml:"-"`
	// Beside ends, for a background beside another workload than a
	// perftest, NewSources's count of its hosts (" besides the 16
	// multicast group members"); empty for a perftest's.
	Beside string `yaml:"-"`
}

// DefaultTraffic returns the synthetic-traffic defaults.
func DefaultTraffic() TrafficConfig {
	return TrafficConfig{
		// Uniform random: the standard first pattern of interconnect studies
		// (Dally and Towles 2004, §3.2).
		Pattern: PatternUniform,
		// 4096 bytes: the largest IB MTU (ib-facts.md §2), as workload.size's default.
		Size: 4096,
		// Half the link rate, as workload.offered_load's default.
		OfferedLoad: 0.5,
		// Bernoulli: memoryless per-slot injection (Dally and Towles §23.2).
		Injection: InjectBernoulli,
		// 8 packets: as workload.burst_packets's default; a modelling choice,
		// not a measured burst length.
		BurstPackets: 8,
		// 0.2 of packets to the hot host, as workload.hotspot_fraction's
		// default; a modelling choice.
		HotspotFraction: 0.2,
		// 1: each host sends to its neighbour.
		Shift: 1,
	}
}

// Traffic returns the synthetic-traffic knobs of a workload section.
func (c *Config) Traffic() TrafficConfig {
	return TrafficConfig{
		Pattern:         c.Kind,
		Size:            c.Size,
		OfferedLoad:     c.OfferedLoad,
		Injection:       c.Injection,
		BurstPackets:    c.BurstPackets,
		Sizes:           c.Sizes,
		HotspotFraction: c.HotspotFraction,
		Shift:           c.Shift,
	}
}

// Validate checks the keys on their own; NewSources checks them against the
// host count, CheckMTU against link.mtu.
func (c *TrafficConfig) Validate() error {
	ok := false
	for _, p := range Patterns {
		ok = ok || p == c.Pattern
	}
	if !ok {
		return fmt.Errorf("workload.kind: %q is not a synthetic pattern (%s)", c.Pattern, strings.Join(Patterns, ", "))
	}
	if c.Sizes == "" && (c.Size < 1 || c.Size > maxPayload) {
		return fmt.Errorf("workload.size: %d is not a packet payload (1 to %d bytes)", c.Size, maxPayload)
	}
	// The injectors draw a geometric gap one slot at a time (integer draws,
	// the same on every machine), 1/load draws a packet: below 0.001 that
	// is over a thousand draws per packet.
	if math.IsNaN(c.OfferedLoad) || c.OfferedLoad < MinOfferedLoad || c.OfferedLoad > 1 {
		return fmt.Errorf("workload.offered_load: %v is out of range (%v to 1)", c.OfferedLoad, MinOfferedLoad)
	}
	if c.Injection != InjectBernoulli && c.Injection != InjectOnOff {
		return fmt.Errorf("workload.injection: %q is not an injection process (bernoulli, onoff)", c.Injection)
	}
	if math.IsNaN(c.BurstPackets) || c.BurstPackets < 1 || c.BurstPackets > 1e6 {
		return fmt.Errorf("workload.burst_packets: %v is out of range (1 to 1e6)", c.BurstPackets)
	}
	if math.IsNaN(c.HotspotFraction) || c.HotspotFraction < 0 || c.HotspotFraction > 1 {
		return fmt.Errorf("workload.hotspot_fraction: %v is out of range (0 to 1)", c.HotspotFraction)
	}
	if _, err := c.SizeDist(); err != nil {
		return err
	}
	return nil
}

// SizeDist returns the payload size distribution: Sizes parsed, or Size fixed.
func (c *TrafficConfig) SizeDist() (SizeDist, error) {
	if c.Sizes == "" {
		return FixedSize(c.Size), nil
	}
	return ParseSizes(c.Sizes, "workload.sizes")
}

// CheckMTU reports a payload larger than the path MTU (link.mtu), which one
// packet cannot carry.
func (c *TrafficConfig) CheckMTU(mtu int) error {
	d, err := c.SizeDist()
	if err != nil {
		return err
	}
	if m := d.Max(); m > mtu {
		key := "workload.size"
		if c.Sizes != "" {
			key = "workload.sizes"
		}
		return fmt.Errorf("%s: a %d-byte payload is more than link.mtu %d (a synthetic packet carries at most one MTU)", key, m, mtu)
	}
	return nil
}
