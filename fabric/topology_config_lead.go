package fabric

// TEMPORARY until the fabric developer lands TopologyConfig (topology_config.go).

import (
	"fmt"
	"math"
)

// TopologyConfig is the `topology:` section.
type TopologyConfig struct {
	Kind             string  `yaml:"kind"`             // back-to-back | single-switch | fat-tree-2 | fat-tree-3 | file
	Hosts            int     `yaml:"hosts"`            // hosts; 0 = fill the topology
	Radix            int     `yaml:"radix"`            // switch radix for builders; 0 = switch.radix
	Oversubscription float64 `yaml:"oversubscription"` // fat-tree-2 leaf down:up ratio
	Leaves           int     `yaml:"leaves"`           // fat-tree-2 leaves; 0 = as the hosts need
	Spines           int     `yaml:"spines"`           // fat-tree-2 spines; 0 = one per up-port
	File             string  `yaml:"file"`             // topology file for kind file
	Routing          string  `yaml:"routing"`          // minhop | dmodk | updown | random
	CableLengthM     float64 `yaml:"cable_length_m"`   // switch-to-switch cables; 0 = link.length_m
}

// DefaultTopology returns the default topology: two hosts back to back.
func DefaultTopology() TopologyConfig {
	return TopologyConfig{Kind: "back-to-back", Hosts: 0, Oversubscription: 1, Routing: RoutingMinHop}
}

// Validate checks the topology keys.
func (t *TopologyConfig) Validate() error {
	switch t.Kind {
	case "back-to-back", "single-switch", "fat-tree-2", "fat-tree-3", "file":
	default:
		return fmt.Errorf("topology.kind: %q is not a topology (back-to-back, single-switch, fat-tree-2, fat-tree-3, file)", t.Kind)
	}
	if t.Hosts < 0 || t.Hosts > 100000 {
		return fmt.Errorf("topology.hosts: %d is out of range (0 to 100000)", t.Hosts)
	}
	if t.Radix < 0 || t.Radix > MaxRadix {
		return fmt.Errorf("topology.radix: %d is out of range (0 for switch.radix, up to %d)", t.Radix, MaxRadix)
	}
	ok := false
	for _, r := range RoutingEngines {
		ok = ok || r == t.Routing
	}
	if !ok {
		return fmt.Errorf("topology.routing: %q is not a routing engine (minhop, dmodk, updown, random)", t.Routing)
	}
	if math.IsNaN(t.CableLengthM) || t.CableLengthM < 0 || t.CableLengthM > 10000 {
		return fmt.Errorf("topology.cable_length_m: %v is out of range (0 to 10000 m)", t.CableLengthM)
	}
	if t.Kind == "file" && t.File == "" {
		return fmt.Errorf("topology.file: empty, but topology.kind is file (give a topology file path)")
	}
	return nil
}
