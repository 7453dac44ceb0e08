package cc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

// testParams: a packet time S of 1600 ps makes the default table's entry i
// i × 1600 / 16 = 100·i ps exactly; increase 3, limit 20, min 2.
func testParams() *Params {
	c := Defaults()
	c.CCTIIncrease, c.CCTILimit, c.CCTIMin, c.CCTITimerNs = 3, 20, 2, 1
	p := c.Resolve(1600)
	return &p
}

// TestThrottleArithmetic: the index after k BECNs is min(Min + k·Increase,
// Limit); each timer expiry lowers it by one, never below Min; the delay is
// CCT[index].
func TestThrottleArithmetic(t *testing.T) {
	p := testParams()
	require.Len(t, p.CCT, DefaultCCTEntries)
	th := NewThrottle(p, 4)
	assert.Equal(t, 2, th.Index(1), "every flow starts at CCTI_Min")
	assert.Equal(t, ib.PS(200), th.Delay(1), "CCT[2] = 2 × 100 ps")
	assert.False(t, th.Active())

	assert.True(t, th.BECN(1, 0), "the first BECN starts the timer")
	for k := 2; k <= 4; k++ {
		assert.False(t, th.BECN(1, 0), "the timer already runs")
	}
	// 4 BECNs: 2 + 4·3 = 14.
	assert.Equal(t, 14, th.Index(1))
	assert.Equal(t, ib.PS(1400), th.Delay(1))
	assert.Equal(t, 2, th.Index(0), "other flows are untouched")
	// 3 more: 2 + 7·3 = 23, capped at the limit 20.
	for k := 0; k < 3; k++ {
		th.BECN(1, 0)
	}
	assert.Equal(t, 20, th.Index(1))

	// Another flow at 2 + 3 = 5. t expiries lower both by t, down to 2.
	th.BECN(2, 0)
	for tick := 1; tick <= 3; tick++ {
		assert.True(t, th.Tick(ib.PS(tick)))
	}
	assert.Equal(t, 17, th.Index(1))
	assert.Equal(t, 2, th.Index(2), "5 − 3 = 2 = Min")
	for tick := 4; tick < 18; tick++ {
		assert.True(t, th.Tick(ib.PS(tick)), "tick %d: flow 1 still above Min", tick)
	}
	// 17 − 15 = 2 after the 18th expiry overall: the timer stops.
	assert.False(t, th.Tick(18))
	assert.Equal(t, 2, th.Index(1))
	assert.False(t, th.Active())
	st := th.Stats(18)
	assert.Equal(t, 2, st.Throttled)
	assert.Equal(t, uint64(8), st.BECNs, "7 to flow 1, 1 to flow 2")
	assert.Equal(t, 20, st.Max)
}

// TestThrottleTimeAverage: over a window of 1000 ps, a flow at index 5 for
// its first half and 4 for its second averages 4.5.
func TestThrottleTimeAverage(t *testing.T) {
	th := NewThrottle(testParams(), 1)
	th.SetWindow(100, 1100)
	th.BECN(0, 100) // 2 → 5 as the window opens
	th.Tick(600)    // 5 → 4 halfway
	assert.InDelta(t, 4.5, th.FlowMean(0, 5000), 1e-12)
	st := th.Stats(5000)
	assert.InDelta(t, 4.5, st.IndexSum, 1e-12)
	assert.Equal(t, 5, st.Max)
}

// TestDefaultCCTSpacing: entry 16k of the default table is k packet times,
// so a flow of MTU packets at index 16k leaves k idle packet times after
// each: it runs at 1/(1+k) of the link.
func TestDefaultCCTSpacing(t *testing.T) {
	const S = ib.PS(82_992) // a 4122-byte packet at NDR's 397.3 Gb/s, about
	cct := DefaultCCT(S)
	for k := 1; k <= 7; k++ {
		d := cct[16*k]
		assert.Equal(t, ib.PS(k)*S, d, "index %d", 16*k)
		assert.InDelta(t, 1/float64(1+k), float64(S)/float64(S+d), 1e-12)
	}
	assert.Equal(t, ib.PS(0), cct[0], "index 0: no delay")
}

func TestConfigValidate(t *testing.T) {
	d := Defaults()
	require.NoError(t, d.Validate())
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.ThresholdBlocks = -1 }, "cc.threshold_blocks: -1"},
		{func(c *Config) { c.MarkingRate = 70000 }, "cc.marking_rate: 70000"},
		{func(c *Config) { c.Marking = "sometimes" }, `cc.marking: "sometimes" is not a marking mode (deterministic, random)`},
		{func(c *Config) { c.VictimMask = "spine" }, `cc.victim_mask: "spine" is not a victim mask (all, none, host_ports, switch_ports)`},
		{func(c *Config) { c.VictimMask = "" }, `cc.victim_mask: "" is not a victim mask`},
		{func(c *Config) { c.CCTIIncrease = 0 }, "cc.ccti_increase: 0"},
		{func(c *Config) { c.CCTITimerNs = 0 }, "cc.ccti_timer_ns: 0"},
		{func(c *Config) { c.CCTILimit = 128 }, "cc.ccti_limit: 128"},
		{func(c *Config) { c.CCTIMin = 30; c.CCTILimit = 20 }, "cc.ccti_min: 30"},
		{func(c *Config) { c.CCTNs = []float64{0, 10, 5} }, "cc.cct_ns: entry 2, 5, is below entry 1"},
		{func(c *Config) { c.CCTNs = []float64{0, -1} }, "cc.cct_ns: entry 1, -1"},
		{func(c *Config) { c.CCTNs = []float64{0, 10}; c.CCTILimit = 2 }, "cc.ccti_limit: 2"},
	} {
		c := Defaults()
		tc.set(&c)
		err := c.Validate()
		if assert.Error(t, err, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	c := Defaults()
	assert.True(t, c.IsZero())
	c.Enable = true
	assert.False(t, c.IsZero())
	c = Defaults()
	c.Marking = MarkingRandom
	assert.False(t, c.IsZero(), "random marking shows in the effective config")
	for _, v := range []VictimMask{VictimNone, VictimHostPorts, VictimSwitchPorts} {
		c = Defaults()
		c.VictimMask = v
		require.NoError(t, c.Validate())
		assert.False(t, c.IsZero(), "cc.victim_mask %s shows in the effective config", v)
	}
}
