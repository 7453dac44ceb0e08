package rtl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMulticastRefused: the RTL's route stage has no MFT, so a multicast
// design point is refused on one line naming the key.
func TestMulticastRefused(t *testing.T) {
	_, err := LoadDesign("examples/multicast.yaml", []string{"sweep={}"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "workload.kind: multicast is not supported by the RTL, whose route stage has a linear forwarding table only (no MFT, no replication)")
}
