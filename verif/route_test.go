package verif

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// fakeRoutes is one switch, Fabric.Leaf[0], that routes DLID 5 to output 2
// or, adaptively, 3, and every other DLID to output 0.
type fakeRoutes struct{ asked int }

func (f *fakeRoutes) RouteSwitch(path string) int {
	f.asked++
	if path == "Fabric.Leaf[0].Port[2]" || path == "Fabric.Leaf[0].Port[3]" || path == "Fabric.Leaf[0].Port[1]" {
		return 7
	}
	return -1
}

func (f *fakeRoutes) RouteAllowed(id int, dlid uint16, out int) bool {
	if id != 7 {
		panic("unknown switch")
	}
	if dlid == 5 {
		return out == 2 || out == 3
	}
	return out == 0
}

func grant(path string, dlid, out int64) *components.TraceEvent {
	return ev(100, path, components.TraceArbGrant, components.IntField("seq", 1),
		components.IntField("dlid", dlid), components.IntField("in", 0), components.IntField("out", out))
}

// TestRouteCheck: a grant to any port of the DLID's route passes; one to
// a port outside it is a route violation; paths that are no switch's are
// left alone, and each path's switch is asked for once.
func TestRouteCheck(t *testing.T) {
	f := &fakeRoutes{}
	c := NewCheckers(CheckConfig{Routes: f})
	c.Observe(grant("Fabric.Leaf[0].Port[2]", 5, 2))
	c.Observe(grant("Fabric.Leaf[0].Port[3]", 5, 3))
	c.Observe(grant("Fabric.Leaf[0].Port[2]", 5, 2))
	c.Observe(grant("Fabric.Host[0].Port[1]", 5, 9))
	require.NoError(t, c.Err())
	assert.Equal(t, 3, f.asked)
	c.Observe(grant("Fabric.Leaf[0].Port[1]", 5, 1))
	require.Error(t, c.Err())
	require.Len(t, c.Violations(), 1)
	v := c.Violations()[0]
	assert.Equal(t, InvRoute, v.Invariant)
	assert.Equal(t, "packet seq 1 for dlid 5 granted to output 1, which is neither the dlid's LFT port nor in its adaptive routing group (misrouted)", v.Detail)
	// Without Routes, no route check.
	c = NewCheckers(CheckConfig{})
	c.Observe(grant("Fabric.Leaf[0].Port[1]", 5, 1))
	assert.NoError(t, c.Err())
}
