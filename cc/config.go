package cc

import (
	"fmt"
	"math"

	"github.com/hcasim/hcasim/ib"
)

// Config is the `cc:` section: IBA Annex A10 congestion control for the
// synthetic workloads. Every field's source is in docs/congestion.md.
type Config struct {
	// Enable turns congestion control on: switches mark FECN, destinations
	// return CNPs, sources throttle. Off by default, as OpenSM's
	// congestion_control option is.
	Enable bool `yaml:"enable"`
	// Report adds the hotspot/victim split of the accepted load to a
	// hotspot run's metrics even with Enable off, so a sweep over
	// cc.enable compares like with like.
	Report bool `yaml:"report"`
	// ThresholdBlocks is the switch's congestion threshold: an output VL is
	// congested while more than this many 64-byte blocks of packets routed
	// to it wait, not yet granted, at the switch's inputs. IBA's 4-bit
	// Threshold leaves the mapping to the vendor; this is the model's.
	ThresholdBlocks int `yaml:"threshold_blocks"`
	// MarkingRate is IBA's Marking_Rate: after a packet is marked, this
	// many eligible packets leave the same output VL unmarked (0: every
	// eligible packet is marked).
	MarkingRate int `yaml:"marking_rate"`
	// Marking is how MarkingRate spaces the marks: MarkingDeterministic
	// (exactly MarkingRate eligible packets unmarked after each mark) or
	// MarkingRandom (each eligible packet marked with probability
	// 1/(MarkingRate+1), from the switch's seeded stream: MarkingRate is
	// then the mean number between marks, as IBA words it). omitempty: the
	// default is left out of the effective config (MarkingMode.IsZero), so
	// a config's hash, and its traces' headers, are what they were before
	// the key existed.
	Marking MarkingMode `yaml:"marking,omitempty"`
	// VictimMask is which switch ports mark FECN while they are only a
	// victim of congestion (the output VL is over the threshold but has no
	// downstream credits for the packet: its next hop's buffer is full),
	// IBA's Victim_Mask in the model's terms: VictimAll (every port, the
	// default, as LLNL's OpenSM settings and the model before the key
	// existed), VictimNone, VictimHostPorts (ports cabled to a channel
	// adapter) or VictimSwitchPorts (ports cabled to another switch). A
	// port marks as the root of congestion (credits available) whatever
	// the mask. omitempty: the default is left out of the effective config
	// (VictimMask.IsZero), so configs hash as they did before the key.
	VictimMask VictimMask `yaml:"victim_mask,omitempty"`
	// CCTIIncrease is added to a flow's CCT index on each BECN.
	CCTIIncrease int `yaml:"ccti_increase"`
	// CCTILimit is the largest CCT index; 0 = the table's last entry.
	CCTILimit int `yaml:"ccti_limit"`
	// CCTIMin is the smallest CCT index, where every flow starts.
	CCTIMin int `yaml:"ccti_min"`
	// CCTITimerNs is the CCTI_Timer period in ns: each expiry lowers every
	// index above CCTIMin by one.
	CCTITimerNs float64 `yaml:"ccti_timer_ns"`
	// CCTNs is the Congestion Control Table: entry i is the inter-packet
	// delay, in ns, a flow at index i leaves after each packet. Empty =
	// the default table (DefaultCCT).
	CCTNs []float64 `yaml:"cct_ns"`
}

// MarkingMode is a cc.marking value.
type MarkingMode string

// The cc.marking values.
const (
	MarkingDeterministic MarkingMode = "deterministic"
	MarkingRandom        MarkingMode = "random"
)

// IsZero reports whether m is the default, deterministic (yaml's omitempty
// asks it).
func (m MarkingMode) IsZero() bool { return m == MarkingDeterministic }

// VictimMask is a cc.victim_mask value: which switch ports mark FECN while
// they are a victim of congestion.
type VictimMask string

// The cc.victim_mask values.
const (
	VictimAll         VictimMask = "all"
	VictimNone        VictimMask = "none"
	VictimHostPorts   VictimMask = "host_ports"
	VictimSwitchPorts VictimMask = "switch_ports"
)

// IsZero reports whether v is the default, all (yaml's omitempty asks it).
func (v VictimMask) IsZero() bool { return v == VictimAll }

// Limits of the IBA fields the keys stand for (Annex A10 attribute
// layouts, as OpenSM's ib_types.h and the 2008 OpenFabrics CC MAD draft
// give them).
const (
	maxMarkingRate = 0xFFFF // Marking_Rate: 16 bits
	maxIncrease    = 0xFF   // CCTI_Increase: 8 bits
	maxMin         = 0xFF   // CCTI_Min: 8 bits
	// MaxCCTEntries is the most CCT entries: CCTI_Limit is 16 bits, and the
	// table is read 64 entries a block; 16384 entries (256 blocks) bound
	// memory and the config's size.
	MaxCCTEntries = 16384
	// DefaultCCTEntries is the default table's length, as the table LLNL's
	// OpenSM tuning script generates (128 entries).
	DefaultCCTEntries = 128
	maxTimerNs        = 65535 * 1024 // CCTI_Timer: 16 bits of 1.024 µs
	maxDelayNs        = 1e9
)

// Defaults returns the section's defaults: off.
func Defaults() Config {
	return Config{
		// Two 4 KiB packets (65 blocks each) waiting for one output VL:
		// the queue of an output that two or more inputs contend for at
		// once. An assumption (IBA leaves the mapping of its 4-bit
		// Threshold to the vendor).
		ThresholdBlocks: 130,
		// Every eligible packet (IBA: 0 = mark every one).
		MarkingRate: 0,
		// A countdown: results do not depend on draws (and are those of
		// the model before the key existed).
		Marking: MarkingDeterministic,
		// Every port marks as a victim too: LLNL's OpenSM settings set
		// every external port's Victim_Mask bit, and the results are
		// those of the model before the key existed.
		VictimMask: VictimAll,
		// 1: LLNL's OpenSM congestion-control settings.
		CCTIIncrease: 1,
		CCTILimit:    0,
		CCTIMin:      0,
		// 4 IBA CCTI_Timer units (4.096 µs). A flow at its fair share 1/N
		// of a hotspot gets, with every packet marked, a BECN per N packet
		// times S; its index climbs only while that outpaces the timer,
		// T > N·S. At NDR (S = 83 ns for 4 KiB) and the default table's
		// deepest share (N = 8.9) that is 740 ns; 4.096 µs leaves room for
		// the spells in which the queue dips below the threshold and
		// nothing is marked. An assumption from that arithmetic (sweep it).
		CCTITimerNs: 4096,
	}
}

// Validate checks the keys on their own.
func (c *Config) Validate() error {
	if c.ThresholdBlocks < 0 || c.ThresholdBlocks > 1<<20 {
		return fmt.Errorf("cc.threshold_blocks: %d is out of range (0 to 1048576 blocks of 64 bytes)", c.ThresholdBlocks)
	}
	if c.MarkingRate < 0 || c.MarkingRate > maxMarkingRate {
		return fmt.Errorf("cc.marking_rate: %d is out of range (0 to %d: the 16-bit Marking_Rate)", c.MarkingRate, maxMarkingRate)
	}
	if c.Marking != MarkingDeterministic && c.Marking != MarkingRandom {
		return fmt.Errorf("cc.marking: %q is not a marking mode (%s, %s)", c.Marking, MarkingDeterministic, MarkingRandom)
	}
	switch c.VictimMask {
	case VictimAll, VictimNone, VictimHostPorts, VictimSwitchPorts:
	default:
		return fmt.Errorf("cc.victim_mask: %q is not a victim mask (%s, %s, %s, %s)", c.VictimMask, VictimAll, VictimNone, VictimHostPorts, VictimSwitchPorts)
	}
	if c.CCTIIncrease < 1 || c.CCTIIncrease > maxIncrease {
		return fmt.Errorf("cc.ccti_increase: %d is out of range (1 to %d: the 8-bit CCTI_Increase)", c.CCTIIncrease, maxIncrease)
	}
	if math.IsNaN(c.CCTITimerNs) || c.CCTITimerNs < 1 || c.CCTITimerNs > maxTimerNs {
		return fmt.Errorf("cc.ccti_timer_ns: %v is out of range (1 to %d ns: the 16-bit CCTI_Timer in 1.024 µs units)", c.CCTITimerNs, maxTimerNs)
	}
	n := len(c.CCTNs)
	if n > MaxCCTEntries {
		return fmt.Errorf("cc.cct_ns: %d entries is more than %d", n, MaxCCTEntries)
	}
	for i, d := range c.CCTNs {
		if math.IsNaN(d) || d < 0 || d > maxDelayNs {
			return fmt.Errorf("cc.cct_ns: entry %d, %v, is out of range (0 to 1e9 ns)", i, d)
		}
		if i > 0 && d < c.CCTNs[i-1] {
			return fmt.Errorf("cc.cct_ns: entry %d, %v, is below entry %d, %v; a CCT's delays grow with the index", i, d, i-1, c.CCTNs[i-1])
		}
	}
	if n == 0 {
		n = DefaultCCTEntries
	}
	if c.CCTILimit < 0 || c.CCTILimit >= n {
		return fmt.Errorf("cc.ccti_limit: %d is out of range (0 for the table's last index, up to %d: the CCT has %d entries)", c.CCTILimit, n-1, n)
	}
	limit := c.limit(n)
	if c.CCTIMin < 0 || c.CCTIMin > maxMin || c.CCTIMin > limit {
		return fmt.Errorf("cc.ccti_min: %d is out of range (0 to %d: at most cc.ccti_limit, and the 8-bit CCTI_Min)", c.CCTIMin, min(limit, maxMin))
	}
	return nil
}

func (c *Config) limit(entries int) int {
	if c.CCTILimit == 0 {
		return entries - 1
	}
	return c.CCTILimit
}

// Params are the section resolved for one fabric: times in picoseconds.
type Params struct {
	ThresholdBlocks int
	MarkingRate     int
	Increase        int
	Limit           int   // largest index
	Min             int   // smallest index, where flows start
	Timer           ib.PS // CCTI_Timer period
	CCT             []ib.PS
}

// Resolve returns the parameters for a fabric whose host links put an
// MTU-sized synthetic packet on the wire in mtuSer (the default table's
// unit).
func (c *Config) Resolve(mtuSer ib.PS) Params {
	cct := DefaultCCT(mtuSer)
	if len(c.CCTNs) > 0 {
		cct = make([]ib.PS, len(c.CCTNs))
		for i, d := range c.CCTNs {
			cct[i] = ib.FromNanoseconds(d)
		}
	}
	return Params{
		ThresholdBlocks: c.ThresholdBlocks,
		MarkingRate:     c.MarkingRate,
		Increase:        c.CCTIIncrease,
		Limit:           c.limit(len(cct)),
		Min:             c.CCTIMin,
		Timer:           ib.FromNanoseconds(c.CCTITimerNs),
		CCT:             cct,
	}
}

// DefaultCCT is the default table: DefaultCCTEntries entries, entry i =
// i × mtuSer / 16 (rounded to the picosecond), where mtuSer is the wire
// time of one MTU-sized packet on the host link. A flow of MTU packets at
// index 16k then leaves k packet times idle after each packet: it runs at
// 1/(1+k) of the link (index 16: 1/2, 48: 1/4, 112: 1/8, 127: 1/8.94). A
// linear table is an assumption; IBA leaves the table's contents to the
// subnet manager (LLNL's generated one grows quadratically).
func DefaultCCT(mtuSer ib.PS) []ib.PS {
	t := make([]ib.PS, DefaultCCTEntries)
	for i := range t {
		t[i] = (ib.PS(i)*mtuSer + 8) / 16
	}
	return t
}

// IsZero reports whether c is the defaults (yaml's omitempty asks it): a
// config that leaves congestion control alone marshals without a `cc:`
// section, so its effective config, and the config hash in its traces,
// are what they were before the section existed.
func (c Config) IsZero() bool {
	d := Defaults()
	return len(c.CCTNs) == 0 && c.Enable == d.Enable && c.Report == d.Report &&
		c.ThresholdBlocks == d.ThresholdBlocks && c.MarkingRate == d.MarkingRate && c.Marking == d.Marking && c.VictimMask == d.VictimMask &&
		c.CCTIIncrease == d.CCTIIncrease && c.CCTILimit == d.CCTILimit &&
		c.CCTIMin == d.CCTIMin && c.CCTITimerNs == d.CCTITimerNs
}
