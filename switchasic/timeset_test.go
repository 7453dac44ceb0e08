package switchasic

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// TestTimeSet: random pushes (times drawn from a few cycles ahead, so
// repeats are common, and now and then far ahead) and pops, each checked
// against a plain set of times: push reports exactly when the time is
// earlier than everything held (a repeat never is), min is the least held
// time, popThrough drops exactly the times at or before now.
func TestTimeSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	var h timeSet
	held := map[ib.PS]bool{}
	least := func() (ib.PS, bool) {
		if len(held) == 0 {
			return 0, false
		}
		ts := make([]ib.PS, 0, len(held))
		for x := range held {
			ts = append(ts, x)
		}
		return slices.Min(ts), true
	}
	now := ib.PS(0)
	for step := 0; step < 20000; step++ {
		if rng.IntN(3) == 0 {
			now += ib.PS(rng.IntN(4)) * 1000
			h.popThrough(now)
			for x := range held {
				if x <= now {
					delete(held, x)
				}
			}
		} else {
			at := now + ib.PS(rng.IntN(8))*1000
			if rng.IntN(20) == 0 {
				at += ib.PS(rng.IntN(1000)) * 1000
			}
			m, ok := least()
			want := !held[at] && (!ok || at < m)
			require.Equal(t, want, h.push(at), "step %d push %d", step, at)
			held[at] = true
		}
		m, ok := least()
		gm, gok := h.min()
		require.Equal(t, ok, gok, "step %d", step)
		require.Equal(t, m, gm, "step %d", step)
		require.Len(t, h.t, len(held), "step %d: every time once", step)
	}
}
