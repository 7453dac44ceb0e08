package verif

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

// fakeRoutes is one switch, Fabric.Leaf[0], that routes DLID 5 to output 2
// or, adaptively on SL 1 only, 3, and every other DLID to output 0.
type fakeRoutes struct{ asked int }

func (f *fakeRoutes) RouteSwitch(path string) int {
	f.asked++
	if path == "Fabric.Leaf[0].Port[2]" || path == "Fabric.Leaf[0].Port[3]" || path == "Fabric.Leaf[0].Port[1]" {
		return 7
	}
	return -1
}

func (f *fakeRoutes) RouteAllowed(id int, dlid uint16, sl uint8, out int) bool {
	if id != 7 {
		panic("unknown switch")
	}
	if dlid == 5 {
		return out == 2 || (out == 3 && sl == 1)
	}
	return out == 0
}

func grant(path string, dlid, out int64, sl ...int64) *components.TraceEvent {
	f := []components.TraceField{components.IntField("seq", 1)}
	for _, s := range sl {
		f = append(f, components.IntField("sl", s))
	}
	f = append(f, components.IntField("dlid", dlid), components.IntField("in", 0), components.IntField("out", out))
	return ev(100, path, components.TraceArbGrant, f...)
}

// TestRouteCheck: a grant to any port of the DLID's route on the packet's
// SL passes; one to a port outside it is a route violation; paths that are
// no switch's are left alone, and each path's switch is asked for once.
func TestRouteCheck(t *testing.T) {
	f := &fakeRoutes{}
	c := NewCheckers(CheckConfig{Routes: f})
	c.Observe(grant("Fabric.Leaf[0].Port[2]", 5, 2, 1))
	c.Observe(grant("Fabric.Leaf[0].Port[3]", 5, 3, 1))
	c.Observe(grant("Fabric.Leaf[0].Port[2]", 5, 2, 0))
	c.Observe(grant("Fabric.Host[0].Port[1]", 5, 9))
	require.NoError(t, c.Err())
	assert.Equal(t, 3, f.asked)
	c.Observe(grant("Fabric.Leaf[0].Port[1]", 5, 1, 1))
	require.Error(t, c.Err())
	require.Len(t, c.Violations(), 1)
	v := c.Violations()[0]
	assert.Equal(t, InvRoute, v.Invariant)
	assert.Equal(t, "packet seq 1 for dlid 5 on SL 1 granted to output 1, which is neither the dlid's LFT port nor, on an SL adaptive routing applies to, in its adaptive routing group (misrouted)", v.Detail)
	// Without Routes, no route check.
	c = NewCheckers(CheckConfig{})
	c.Observe(grant("Fabric.Leaf[0].Port[1]", 5, 1))
	assert.NoError(t, c.Err())
}

// TestRouteCheckPerSL: output 3 is in DLID 5's group, which only SL 1's
// packets may take; a packet on SL 0 (or with no sl field, taken as SL 0,
// IB's default) granted to it left by a port other than its LFT's.
func TestRouteCheckPerSL(t *testing.T) {
	for _, g := range []*components.TraceEvent{
		grant("Fabric.Leaf[0].Port[3]", 5, 3, 0),
		grant("Fabric.Leaf[0].Port[3]", 5, 3),
	} {
		c := NewCheckers(CheckConfig{Routes: &fakeRoutes{}})
		c.Observe(grant("Fabric.Leaf[0].Port[3]", 5, 3, 1))
		require.NoError(t, c.Err(), "SL 1 may take the group")
		c.Observe(g)
		require.Len(t, c.Violations(), 1)
		assert.Equal(t, InvRoute, c.Violations()[0].Invariant)
		assert.Contains(t, c.Violations()[0].Detail, "for dlid 5 on SL 0 granted to output 3")
	}
}

// TestOrderingPerSL: with ReorderSLs naming SL 1 (adaptive routing on SL 1
// only), a request that overtook an earlier one of its connection passes
// on SL 1 and is a gap on SL 0; with no ReorderSLs it is a gap on both.
func TestOrderingPerSL(t *testing.T) {
	const wr = "RDMA_WRITE_ONLY"
	// PSN 10 then 12 on one connection: 11 was overtaken (or lost).
	gap := func(sl int64) []*components.TraceEvent {
		return cat(flow(10, 1, 10, wr, fI("sl", sl)), flow(20, 2, 12, wr, fI("sl", sl)))
	}
	for _, tc := range []struct {
		reorder uint16
		sl      int64
		ok      bool
	}{
		{1 << 1, 1, true},
		{1 << 1, 0, false},
		{0, 1, false},
		{0xFFFF, 0, true},
	} {
		c := NewCheckers(CheckConfig{ReorderSLs: tc.reorder})
		for _, e := range gap(tc.sl) {
			c.Observe(e)
		}
		if tc.ok {
			assert.NoError(t, c.Err(), "ReorderSLs %#x, SL %d", tc.reorder, tc.sl)
			continue
		}
		require.Len(t, c.Violations(), 1, "ReorderSLs %#x, SL %d", tc.reorder, tc.sl)
		assert.Equal(t, InvOrdering, c.Violations()[0].Invariant)
		assert.Equal(t, "QP 9 request PSN 12 arrived, expected 11 (a gap of 1)", c.Violations()[0].Detail)
	}
}

// fakeRoutesFrom is fakeRoutes whose output 3 for DLID 5 (on SL 1) is a
// detour only a packet from input 0 may take.
type fakeRoutesFrom struct{ fakeRoutes }

func (f *fakeRoutesFrom) RouteAllowedFrom(id, in int, dlid uint16, sl uint8, out int) bool {
	if dlid == 5 && out == 3 && in != 0 {
		return false
	}
	return f.RouteAllowed(id, dlid, sl, out)
}

// TestRouteCheckFrom: with RoutesFrom the check holds a grant to the part
// of the group its input may take: output 3 from input 0 passes, from
// input 1 is a route violation naming the input; a grant without an in
// field is held to RouteAllowed alone, which allows output 3 on SL 1.
func TestRouteCheckFrom(t *testing.T) {
	from := func(in int64) *components.TraceEvent {
		return ev(100, "Fabric.Leaf[0].Port[3]", components.TraceArbGrant, components.IntField("seq", 1),
			components.IntField("sl", 1), components.IntField("dlid", 5), components.IntField("in", in), components.IntField("out", 3))
	}
	c := NewCheckers(CheckConfig{Routes: &fakeRoutesFrom{}})
	c.Observe(from(0))
	c.Observe(ev(100, "Fabric.Leaf[0].Port[3]", components.TraceArbGrant, components.IntField("seq", 1),
		components.IntField("sl", 1), components.IntField("dlid", 5), components.IntField("out", 3)))
	require.NoError(t, c.Err())
	c.Observe(from(1))
	require.Len(t, c.Violations(), 1)
	v := c.Violations()[0]
	assert.Equal(t, InvRoute, v.Invariant)
	assert.Equal(t, "packet seq 1 for dlid 5 on SL 1 from input 1 granted to output 3, a detour of its adaptive routing group that a packet from that input may not take (misrouted)", v.Detail)
	// A port outside the group keeps RouteAllowed's message.
	c = NewCheckers(CheckConfig{Routes: &fakeRoutesFrom{}})
	c.Observe(grant("Fabric.Leaf[0].Port[1]", 5, 1, 1))
	require.Len(t, c.Violations(), 1)
	assert.Contains(t, c.Violations()[0].Detail, "in its adaptive routing group (misrouted)")
}
