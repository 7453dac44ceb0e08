package switchasic

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// twoVLNet: host 0 floods VL0 and host 1 floods VL1, both to host 2, with
// 256-byte packets (230 payload + 26 header = 4 blocks). The output to host
// 2 is the bottleneck (two line-rate inputs), so both VLs are always ready
// there and the VL arbiter alone decides who goes.
func twoVLNet(t *testing.T, cfg Config, o netOpts) *testNet {
	n := newTestNet(t, cfg, o)
	for src, vl := range []uint8{0, 1} {
		src, vl := src, vl
		n.eps[src].backlog = func(e *endpoint) *ib.Packet { return n.packet(src, 2, vl, 228) }
		n.eps[src].trySend()
	}
	return n
}

// runs returns the lengths of maximal runs of equal VLs in the sink's
// arrival order from index from on, as (vl, length) pairs; the last run,
// which the stop may cut, is left out.
func runs(got []arrival, from int) [][2]int {
	var r [][2]int
	for i := from; i < len(got); {
		j := i
		for j < len(got) && got[j].vl == got[i].vl {
			j++
		}
		if j < len(got) {
			r = append(r, [2]int{int(got[i].vl), j - i})
		}
		i = j
	}
	return r
}

// TestVLArbWeights: low table {VL0 weight 8, VL1 weight 24} in 64-byte
// units. A packet that starts with weight left completes, so with 4-block
// packets VL0 sends ⌈8/4⌉ = 2 packets per turn and VL1 ⌈24/4⌉ = 6: the
// output carries runs of exactly 2 and 6, a 1:3 share of the bandwidth.
func TestVLArbWeights(t *testing.T) {
	cfg := smallConfig(3, 2)
	cfg.VLArbHigh = nil
	cfg.VLArbLow = []VLArbConfig{{VL: 0, Weight: 8}, {VL: 1, Weight: 24}}
	n := twoVLNet(t, cfg, netOpts{timing: ndr(13000)})
	n.s.StopAt(100 * ib.Microsecond)
	require.NoError(t, n.s.Run())
	got := n.eps[2].got
	require.Greater(t, len(got), 1000)
	rs := runs(got, 200) // skip warm-up
	require.Greater(t, len(rs), 100)
	for _, r := range rs[1:] { // the first run may be a partial turn
		want := map[int]int{0: 2, 1: 6}[r[0]]
		require.Equal(t, want, r[1], "run of VL%d", r[0])
	}
	var count [2]int
	for _, a := range got[200:] {
		count[a.vl]++
	}
	// 1:3 within one turn (8 packets).
	assert.InDelta(t, 3*count[0], count[1], 8)
}

// TestVLArbDefaultsFolded: the default tables (high {0:4}, low {1..14:4},
// vl_high_limit 0) with every VL the port has saturated: host v floods VL v
// to the last host with 254-byte packets (228 payload + 26 header, 4 blocks).
// OpenSM writes each entry's VL as vl & mask (mask = vls − 1, 15 for 15
// VLs), so the low table the port runs is 1..14 folded onto its VLs.
//
// Weight 4 lets exactly one 4-block packet go per entry turn, and limit 0
// lets one high packet go before a low one, so the output alternates a VL0
// packet (high) with the next low entry's VL: per 28 packets VL0 gets 14 plus
// the low entries that fold to 0, and VL v > 0 the entries that fold to v.
// Low entries 1..14 & mask:
//
//	vls 2 (mask 1):  1 0 1 0 1 0 1 0 1 0 1 0 1 0  → VL0 14+7, VL1 7 (0.75/0.25)
//	vls 4 (mask 3):  1 2 3 0 1 2 3 0 1 2 3 0 1 2  → 14+3, 4, 4, 3
//	vls 8 (mask 7):  1 2 3 4 5 6 7 0 1 2 3 4 5 6  → 14+1, 2 × 6, 1
//	vls 15 (mask 15): 1 .. 14                       → 14, 1 each
//
// (Without the fold, entries for VLs the port lacks were never ready, and
// with 2 VLs the output ran 0.5/0.5.) The sequence repeats every 28
// packets, so any 28k consecutive arrivals hold exactly k times these counts.
func TestVLArbDefaultsFolded(t *testing.T) {
	tests := []struct {
		vls  int
		want []int // packets per VL in 28
	}{
		{2, []int{21, 7}},
		{4, []int{17, 4, 4, 3}},
		{8, []int{15, 2, 2, 2, 2, 2, 2, 1}},
		{15, []int{14, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("vls %d", tc.vls), func(t *testing.T) {
			cfg := smallConfig(tc.vls+1, tc.vls)
			require.Equal(t, Defaults().VLArbLow, cfg.VLArbLow)
			sink := tc.vls
			n := newTestNet(t, cfg, netOpts{timing: ndr(13000)})
			for src := 0; src < tc.vls; src++ {
				vl := uint8(src)
				n.eps[src].backlog = func(e *endpoint) *ib.Packet {
					p := n.packet(src, sink, vl, 228)
					require.Equal(t, 4, p.Credits())
					return p
				}
				n.eps[src].trySend()
			}
			n.s.StopAt(60 * ib.Microsecond)
			require.NoError(t, n.s.Run())
			const skip, k = 500, 100 // warm-up, periods counted
			got := n.eps[sink].got
			require.GreaterOrEqual(t, len(got), skip+28*k)
			count := make([]int, tc.vls)
			for _, a := range got[skip : skip+28*k] {
				count[a.vl]++
			}
			for v := range tc.want {
				assert.Equal(t, k*tc.want[v], count[v], "VL%d", v)
			}
		})
	}
}

// TestVLArbHighLimit: high table {VL0 weight 255}, low {VL1 weight 4}.
// High-priority packets may start while the high count is below
// LimitOfHighPriority × 4096 bytes = limit × 64 blocks, and limit 0 still
// lets one go; so with 4-block packets a low packet gets through after
// max(1, limit·64/4) high packets, and limit 255 (unbounded) starves VL1.
func TestVLArbHighLimit(t *testing.T) {
	for _, limit := range []int{0, 1, 2, 255} {
		cfg := smallConfig(3, 2)
		cfg.VLArbHigh = []VLArbConfig{{VL: 0, Weight: 255}}
		cfg.VLArbLow = []VLArbConfig{{VL: 1, Weight: 4}}
		cfg.VLHighLimit = limit
		n := twoVLNet(t, cfg, netOpts{timing: ndr(13000)})
		n.s.StopAt(60 * ib.Microsecond)
		require.NoError(t, n.s.Run())
		got := n.eps[2].got
		require.Greater(t, len(got), 1000)
		if limit == 255 {
			low := 0
			for _, a := range got[200:] {
				if a.vl == 1 {
					low++
				}
			}
			assert.Zero(t, low, "limit 255: the low table never sends while VL0 is ready")
			continue
		}
		wantHigh := max(1, limit*64/4)
		rs := runs(got, 200)
		require.Greater(t, len(rs), 10)
		for _, r := range rs[1:] {
			want := map[int]int{0: wantHigh, 1: 1}[r[0]]
			require.Equal(t, want, r[1], "limit %d: run of VL%d", limit, r[0])
		}
	}
}

// TestCreditStallOneVL: the sink on port 2 never frees VL1 (held), so VL1
// stops after exactly its buffer (200 blocks = 50 four-block packets) and
// stays credit-stalled at the switch output, while VL0 from host 0 goes on
// at its input's line rate: one 254-byte packet per 254 × 20 ps = 5.08 ns.
func TestCreditStallOneVL(t *testing.T) {
	cfg := smallConfig(3, 2)
	cfg.VLArbHigh = nil
	cfg.VLArbLow = []VLArbConfig{{VL: 0, Weight: 4}, {VL: 1, Weight: 4}}
	n := twoVLNet(t, cfg, netOpts{timing: ndr(13000), epBlocks: 200})
	n.eps[2].held = 1 << 1
	const w0, w1 = 10 * ib.Microsecond, 60 * ib.Microsecond
	n.at(w0, n.sw.ResetStats)
	n.s.StopAt(w1)
	require.NoError(t, n.s.Run())
	var vl0, vl1 int
	for _, a := range n.eps[2].got {
		switch {
		case a.vl == 1:
			vl1++
		case a.head > w0:
			vl0++
		}
	}
	assert.Equal(t, 200/4, vl1, "VL1 delivers exactly the sink's buffer")
	ser := ib.PS(254 * 20)
	lineRate := float64(w1-w0) / float64(ser)
	assert.Greater(t, float64(vl0), 0.99*lineRate, "VL0 keeps its line rate")
	assert.LessOrEqual(t, float64(vl0), lineRate+1)
	st := n.sw.VLStats(2, 1)
	assert.InDelta(t, float64(w1-w0), float64(st.CreditStallPS), float64(ib.Microsecond), "VL1 stalled the whole window")
	assert.Zero(t, n.sw.VLStats(2, 0).CreditStallPS, "VL0 never stalled")
}

// TestOneVLPick: with one data VL the switch skips its VL arbiters and picks
// VL15 if ready, else VL 0 (oneVLPick). That is exact whatever the tables
// and whatever the arbiter's state: random valid one-VL configs (tables of
// up to 8 entries naming VLs 0–14 with weights 0–255 in both tables, any
// high limit; Validate keeps those with a VL 0 entry of weight > 0) run
// through components.VLArbiter with random ready sets of VL 0 and VL15 and
// packet sizes give the same pick at every step, the arbiter committing
// each packet as the switch did before the skip.
func TestOneVLPick(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	table := func() []VLArbConfig {
		out := make([]VLArbConfig, rng.IntN(9))
		for i := range out {
			out[i] = VLArbConfig{VL: rng.IntN(15), Weight: rng.IntN(256)}
			if rng.IntN(3) == 0 {
				out[i].VL = 0
			}
		}
		return out
	}
	readies := []uint16{1, 1 << ib.ManagementVL, 1 | 1<<ib.ManagementVL}
	configs := 0
	for configs < 200 {
		cfg := Defaults()
		cfg.VLs = 1
		cfg.VLArbHigh, cfg.VLArbLow, cfg.VLHighLimit = table(), table(), rng.IntN(256)
		if cfg.Validate() != nil {
			continue
		}
		configs++
		high, low := cfg.VLArbTables()
		arb := components.NewVLArbiter(high, low, uint8(cfg.VLHighLimit))
		for step := 0; step < 500; step++ {
			ready := readies[rng.IntN(len(readies))]
			got := arb.Pick(ready)
			require.Equal(t, oneVLPick(ready), got, "config %+v step %d ready %#x", cfg, step, ready)
			arb.Commit(got, 1+rng.IntN(64))
		}
	}
}
