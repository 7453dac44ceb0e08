package fabric

// TEMPORARY until the fabric developer lands TopologyConfig: the keys the
// back-to-back run needs.

import "fmt"

// TopologyConfig is the `topology:` section.
type TopologyConfig struct {
	Kind  string `yaml:"kind"`
	Hosts int    `yaml:"hosts"`
}

// DefaultTopology returns the default topology: two hosts back to back.
func DefaultTopology() TopologyConfig { return TopologyConfig{Kind: "back-to-back", Hosts: 2} }

// Validate checks the topology keys.
func (t *TopologyConfig) Validate() error {
	if t.Kind != "back-to-back" {
		return fmt.Errorf("topology.kind: %q is not a topology (back-to-back)", t.Kind)
	}
	return nil
}
