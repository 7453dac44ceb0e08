package link

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hcasim/hcasim/ib"
)

// Config is the `link:` section: every host and switch cable uses it unless
// a topology file names its own length.
type Config struct {
	Generation string  `yaml:"generation"` // SDR … XDR
	Width      string  `yaml:"width"`      // 1x, 2x, 4x, 8x, 12x
	LengthM    float64 `yaml:"length_m"`   // cable length, metres
	Medium     string  `yaml:"medium"`     // copper | fibre
	MTU        int     `yaml:"mtu"`        // path MTU, payload bytes: 256 … 4096
	// FEC mode: "default" takes the generation's usual mode.
	FEC string `yaml:"fec"`
	// FECLatencyNs overrides the FEC latency in ns; negative = derived
	// (one codeword's accumulation time, see DefaultFECLatency).
	FECLatencyNs float64 `yaml:"fec_latency_ns"`
	// PropagationPsPerM overrides the medium's flight time per metre; 0 = medium default.
	PropagationPsPerM int64 `yaml:"propagation_ps_per_m"`
	// FCRefreshNs is the longest interval between flow-control packets per
	// VL, sent even when nothing changed; ns.
	FCRefreshNs float64 `yaml:"fc_refresh_ns"`
	// FCMinIntervalNs is the shortest interval between event-driven
	// flow-control packets for one VL (updates in between coalesce); ns.
	FCMinIntervalNs float64 `yaml:"fc_min_interval_ns"`
	// BER is the post-FEC bit error rate of every cable, both directions:
	// a packet of b bits on the wire arrives corrupted with probability
	// 1 − (1 − BER)^b and its receiver discards it (docs/fabric.md, "Link
	// errors"). 0 = error-free, the lossless fabric; omitted from the
	// effective config then, so configs without it keep their hash.
	BER float64 `yaml:"ber,omitempty"`
	// PreFECBER is the bit error rate ahead of the RS FEC decoder, every
	// cable, both directions, in place of BER: bits flip independently at
	// this rate, a codeword with more wrong symbols than its FEC corrects
	// fails whole, and every packet with a bit in it arrives corrupted
	// (docs/fabric.md, "Link errors"). Needs an RS FEC mode; 0 = off,
	// omitted from the effective config then.
	PreFECBER float64 `yaml:"pre_fec_ber,omitempty"`
}

// MaxBER is the largest link.ber: at 1e-4 a 4 KiB-MTU packet (4,138 wire
// bytes) arrives corrupted with probability 1 − (1 − 1e-4)^33104 ≈ 96 %, so
// above it nothing useful gets through; real post-FEC rates are below 1e-12
// (docs/fabric.md).
const MaxBER = 1e-4

// Propagation delays per metre. Fibre: group index ≈ 1.468 (SMF at 1310 nm)
// → 1.468 / c = 4.897 ns/m. Copper twinax: velocity factor ≈ 0.78
// (foamed-PE dielectric, typical DAC data sheets; not in ib-facts.md) →
// 4.276 ns/m.
const (
	FibrePsPerM  = 4897
	CopperPsPerM = 4276
)

// Defaults returns the link defaults: an NDR 4x 2 m copper link with a
// 4096-byte MTU.
func Defaults() Config {
	return Config{
		Generation:   "NDR",
		Width:        "4x",
		LengthM:      2,
		Medium:       "copper",
		MTU:          4096,
		FEC:          "default",
		FECLatencyNs: -1,
		// 65,536 symbol times is the often-quoted IBA upper bound between FC
		// packets (ib-facts.md §3, unconfirmed); at NDR (106.25 Gb/s lanes,
		// 10-bit symbols) that is ≈ 6.2 µs. The model uses one fixed time.
		FCRefreshNs: 6000,
		// 0: a flow-control packet as soon as credits change. The Mellanox
		// flit model waits at least credMinTime = 256 ns between them
		// (ib-facts.md §3); set it to model that.
		FCMinIntervalNs: 0,
	}
}

// Normalize rewrites a generation or width given in another case to its
// canonical spelling (ndr → NDR, 4X → 4x), so that results and params show
// one form whatever was typed. A name that is none is left as written, for
// Validate to refuse.
func (c *Config) Normalize() {
	if g, ok := ParseGeneration(c.Generation); ok {
		c.Generation = string(g)
	}
	if w := strings.ToLower(c.Width); Widths[w] != 0 {
		c.Width = w
	}
}

// Validate checks ranges and combinations; prefix is the key path ("link").
func (c *Config) Validate(prefix string) error {
	g, ok := ParseGeneration(c.Generation)
	if !ok {
		return fmt.Errorf("%s.generation: %q is not a generation (%s)", prefix, c.Generation, strings.Join(GenerationNames, ", "))
	}
	lanes, ok := Widths[strings.ToLower(c.Width)]
	if !ok {
		return fmt.Errorf("%s.width: %q is not a width (%s)", prefix, c.Width, strings.Join(WidthNames, ", "))
	}
	if lanes == 2 && !Generations[g].Min2x {
		return fmt.Errorf("%s.width: 2x exists from HDR on, not for %s (1x, 4x, 8x, 12x)", prefix, g)
	}
	if math.IsNaN(c.LengthM) || c.LengthM < 0 || c.LengthM > 10000 {
		return fmt.Errorf("%s.length_m: %v is out of range (0 to 10000 m)", prefix, c.LengthM)
	}
	switch c.Medium {
	case "copper", "fibre":
	default:
		return fmt.Errorf("%s.medium: %q is not a medium (copper, fibre)", prefix, c.Medium)
	}
	if !ib.ValidMTU(c.MTU) {
		return fmt.Errorf("%s.mtu: %d is not an IB MTU (256, 512, 1024, 2048, 4096)", prefix, c.MTU)
	}
	if c.FEC != "default" {
		if _, ok := fecCodewordBits[FEC(c.FEC)]; !ok {
			return fmt.Errorf("%s.fec: %q is not a FEC mode (default, %s)", prefix, c.FEC, strings.Join(FECNames, ", "))
		}
		if modes := FECModes(g); !slices.Contains(modes, FEC(c.FEC)) {
			names := make([]string, len(modes))
			for i, m := range modes {
				names[i] = string(m)
			}
			return fmt.Errorf("%s.fec: %s is not a FEC mode of %s links (default, %s; link.fec_latency_ns sets the FEC latency)",
				prefix, c.FEC, g, strings.Join(names, ", "))
		}
	}
	if !(c.FECLatencyNs <= MaxFECLatencyNs) { // NaN fails too
		return fmt.Errorf("%s.fec_latency_ns: %v is out of range (negative for derived, 0 to 100000)", prefix, c.FECLatencyNs)
	}
	if c.PropagationPsPerM < 0 || c.PropagationPsPerM > 100000 {
		return fmt.Errorf("%s.propagation_ps_per_m: %d is out of range (0 for the medium default, up to 100000)", prefix, c.PropagationPsPerM)
	}
	if !(c.FCRefreshNs >= 10 && c.FCRefreshNs <= 1e9) {
		return fmt.Errorf("%s.fc_refresh_ns: %v is out of range (10 to 1e9)", prefix, c.FCRefreshNs)
	}
	if !(c.FCMinIntervalNs >= 0 && c.FCMinIntervalNs <= c.FCRefreshNs) {
		return fmt.Errorf("%s.fc_min_interval_ns: %v is out of range (0 to fc_refresh_ns)", prefix, c.FCMinIntervalNs)
	}
	if !(c.BER >= 0 && c.BER <= MaxBER) { // NaN fails too
		return fmt.Errorf("%s.ber: %v is out of range (0 for error-free links, up to %g: the post-FEC bit error rate)", prefix, c.BER, MaxBER)
	}
	if !(c.PreFECBER >= 0 && c.PreFECBER <= MaxPreFECBER) { // NaN fails too
		return fmt.Errorf("%s.pre_fec_ber: %v is out of range (0 for off, up to %g: the bit error rate ahead of the RS FEC)", prefix, c.PreFECBER, MaxPreFECBER)
	}
	if c.PreFECBER > 0 {
		if c.BER > 0 {
			return fmt.Errorf("%s.pre_fec_ber: %v and %s.ber %v are both set; give one (pre_fec_ber: failed RS codewords, ber: independent post-FEC bit errors)", prefix, c.PreFECBER, prefix, c.BER)
		}
		if fec := c.FECMode(); !RSFEC(fec) {
			return fmt.Errorf("%s.pre_fec_ber: %v needs a Reed-Solomon FEC, and %s links run %s here (%s); give %s.ber, the post-FEC rate, instead",
				prefix, c.PreFECBER, g, fec, rsChoice(g, prefix), prefix)
		}
	}
	return nil
}

// rsChoice says which RS FEC modes a generation offers, for messages.
func rsChoice(g Generation, prefix string) string {
	var rs []string
	for _, m := range FECModes(g) {
		if RSFEC(m) {
			rs = append(rs, string(m))
		}
	}
	if len(rs) == 0 {
		return fmt.Sprintf("%s has no RS FEC mode", g)
	}
	return fmt.Sprintf("%s.fec %s", prefix, strings.Join(rs, " or "))
}

// Lossy reports whether the links' wires may corrupt packets: link.ber or
// link.pre_fec_ber is set.
func (c *Config) Lossy() bool { return c.BER > 0 || c.PreFECBER > 0 }

// SetErrors gives port p's outgoing wire the errors c sets (link.ber or
// link.pre_fec_ber at c's FEC mode), drawn from seed; nothing on an
// error-free link. Call it after Connect, on both ends.
func (c *Config) SetErrors(p *Port, seed uint64) {
	switch {
	case c.PreFECBER > 0:
		p.SetPreFECErrorRate(CodewordModelFor(c.FECMode(), c.PreFECBER), seed)
	case c.BER > 0:
		p.SetBitErrorRate(c.BER, seed)
	}
}

// GenerationValue returns the parsed generation (call after Validate).
func (c *Config) GenerationValue() Generation { g, _ := ParseGeneration(c.Generation); return g }

// Lanes returns the width in lanes (call after Validate).
func (c *Config) Lanes() int { return Widths[strings.ToLower(c.Width)] }

// FECMode returns the FEC mode in force.
func (c *Config) FECMode() FEC {
	if c.FEC == "default" || c.FEC == "" {
		return Generations[c.GenerationValue()].DefaultFEC
	}
	return FEC(c.FEC)
}

// PsPerM returns the propagation delay per metre in force.
func (c *Config) PsPerM() int64 {
	if c.PropagationPsPerM > 0 {
		return c.PropagationPsPerM
	}
	if c.Medium == "fibre" {
		return FibrePsPerM
	}
	return CopperPsPerM
}

// MaxFECLatencyNs is the largest FEC latency a link or a cable may set.
const MaxFECLatencyNs = 100000.0

// FECLatency returns the FEC latency in force.
func (c *Config) FECLatency() ib.PS {
	if c.FECLatencyNs >= 0 {
		return ib.FromNanoseconds(c.FECLatencyNs)
	}
	return DefaultFECLatency(c.GenerationValue(), c.Lanes(), c.FECMode())
}

// FCRefresh returns link.fc_refresh_ns in picoseconds, rounded to the
// nearest: every port (host, HCA, switch) takes it from here, so both ends of
// a cable refresh on the same period (1.001 ns is 1000.9999… ps in float).
func (c *Config) FCRefresh() ib.PS { return ib.FromNanoseconds(c.FCRefreshNs) }

// FCMinInterval returns link.fc_min_interval_ns in picoseconds, rounded to
// the nearest (see FCRefresh).
func (c *Config) FCMinInterval() ib.PS { return ib.FromNanoseconds(c.FCMinIntervalNs) }

// Timing derives the timing of a cable of lengthM metres under this config.
func (c *Config) Timing(lengthM float64) Timing {
	return NewTiming(c.GenerationValue(), c.Lanes(), c.FECLatency(), lengthM, c.PsPerM())
}
