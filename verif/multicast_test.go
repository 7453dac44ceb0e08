package verif

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TestMulticastLossless: with the group of MLID 0xC000 = {A, B, C}, a
// packet A sends must reach B and C once each: the checker passes that,
// and fails a copy at a non-member (before or after every member had it:
// misrouted either way), a second copy at a member, a copy back at the
// sender, a copy after every member had one, and (at Finish on an idle
// fabric) a member that never got it.
func TestMulticastLossless(t *testing.T) {
	f := func(seq int64) []components.TraceField {
		return []components.TraceField{components.IntField("seq", seq), components.IntField("slid", 1),
			components.IntField("dlid", 0xC000), components.StrField("op", "UD_SEND_ONLY"),
			components.IntField("qpn", 0xFFFFFF), components.IntField("psn", seq), components.IntField("icrc", 7)}
	}
	inject := func(t ib.PS, seq int64) *components.TraceEvent { return ev(t, "A", components.TraceInject, f(seq)...) }
	deliver := func(t ib.PS, at string, seq int64) *components.TraceEvent {
		return ev(t, at, components.TraceDeliver, f(seq)...)
	}
	groups := map[uint16][]string{0xC000: {"A", "B", "C"}}
	tests := []struct {
		name   string
		events []*components.TraceEvent
		want   string // "" = clean
	}{
		{"every member once", []*components.TraceEvent{inject(1, 1), deliver(2, "C", 1), deliver(3, "B", 1)}, ""},
		{"non-member", []*components.TraceEvent{inject(1, 1), deliver(2, "D", 1)}, "delivered at D, which is not a member of the group (misrouted)"},
		{"twice to a member", []*components.TraceEvent{inject(1, 1), deliver(2, "B", 1), deliver(3, "B", 1)}, "delivered twice to B (a duplicate)"},
		{"back to the sender", []*components.TraceEvent{inject(1, 1), deliver(2, "A", 1)}, "delivered back to its sender A"},
		{"after every member", []*components.TraceEvent{inject(1, 1), deliver(2, "B", 1), deliver(3, "C", 1), deliver(4, "C", 1)}, "after every member of its group had it (a duplicate)"},
		{"non-member after every member", []*components.TraceEvent{inject(1, 1), deliver(2, "B", 1), deliver(3, "C", 1), deliver(4, "D", 1)}, "for MLID 0xc000 delivered at D, which is not a member of the group (misrouted)"},
		{"a member missed it", []*components.TraceEvent{inject(1, 1), deliver(2, "B", 1)}, "never reached C (1 members missing it)"},
		{"unknown group", []*components.TraceEvent{ev(1, "A", components.TraceInject, append(f(1)[:2:2], components.IntField("dlid", 0xC001))...)}, "sent to MLID 0xc001, which no multicast group has"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCheckers(CheckConfig{Multicast: groups})
			for _, e := range tc.events {
				c.Observe(e)
			}
			c.Finish(100, true)
			if tc.want == "" {
				assert.NoError(t, c.Err())
				return
			}
			require.Error(t, c.Err())
			assert.Equal(t, InvLossless, c.Violations()[0].Invariant)
			assert.Contains(t, c.Violations()[0].Detail, tc.want)
		})
	}
	// Without the groups, a multicast packet is held to one delivery.
	c := NewCheckers(CheckConfig{})
	for _, e := range []*components.TraceEvent{inject(1, 1), deliver(2, "B", 1), deliver(3, "C", 1)} {
		c.Observe(e)
	}
	require.Error(t, c.Err())
	assert.Contains(t, c.Violations()[0].Detail, "delivered twice")
}
