package link

import (
	"fmt"
	"strings"

	"github.com/hcasim/hcasim/ib"
)

// Generation is an InfiniBand link speed.
type Generation string

// Supported generations (ib-facts.md §1).
const (
	SDR   Generation = "SDR"
	DDR   Generation = "DDR"
	QDR   Generation = "QDR"
	FDR10 Generation = "FDR10"
	FDR   Generation = "FDR"
	EDR   Generation = "EDR"
	HDR   Generation = "HDR"
	NDR   Generation = "NDR"
	XDR   Generation = "XDR"
)

// FEC is a forward-error-correction mode.
type FEC string

// FEC modes (ib-facts.md §1, mlxlink_maps.cpp).
const (
	FECNone    FEC = "none"
	FECRS528   FEC = "rs528"   // RS(528,514) "KR4"
	FECRS544   FEC = "rs544"   // RS(544,514) "KP4"
	FECLLRS271 FEC = "llrs271" // low-latency RS(271,257)
)

// Medium is the cable's transmission medium.
type Medium string

// Media.
const (
	Copper Medium = "copper"
	Fibre  Medium = "fibre"
)

// GenInfo describes one generation per lane.
type GenInfo struct {
	LaneKbps   int64 // lane signalling rate, kb/s
	EncNum     int64 // encoding efficiency numerator
	EncDen     int64 // encoding efficiency denominator
	DefaultFEC FEC
	Min2x      bool // 2x width exists (HDR onwards)
	Encoding   string
}

// Generations lists every generation's lane rate and encoding. Lane rates
// from mlxlink_maps.cpp's PRBS table; efficiencies: 8b/10b; 64b/66b; for the
// PAM4 generations 256b/257b transcoding with RS(544,514) gives
// 64/66 × 33/34 = 16/17 of the signalling rate (ib-facts.md §1, HDR row:
// 50 G × 66/64 × 34/33 = 53.125 G).
var Generations = map[Generation]GenInfo{
	SDR:   {2_500_000, 8, 10, FECNone, false, "NRZ 8b/10b"},
	DDR:   {5_000_000, 8, 10, FECNone, false, "NRZ 8b/10b"},
	QDR:   {10_000_000, 8, 10, FECNone, false, "NRZ 8b/10b"},
	FDR10: {10_312_500, 64, 66, FECNone, false, "NRZ 64b/66b"},
	FDR:   {14_062_500, 64, 66, FECNone, false, "NRZ 64b/66b"},
	// EDR default no FEC: the FEC-less mode mlxlink reports for short passive
	// copper; RS(528,514) and LL RS(271,257) are selectable.
	EDR: {25_781_250, 64, 66, FECNone, false, "NRZ 64b/66b"},
	HDR: {53_125_000, 16, 17, FECRS544, true, "PAM4 256b/257b + RS(544,514)"},
	NDR: {106_250_000, 16, 17, FECRS544, true, "PAM4 256b/257b + RS(544,514)"},
	XDR: {212_500_000, 16, 17, FECRS544, true, "PAM4 256b/257b + RS(544,514)"},
}

// GenerationNames lists the generations in speed order, for messages.
var GenerationNames = []string{"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"}

// Widths lists the port widths in lanes.
var Widths = map[string]int{"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}

// WidthNames lists widths for messages.
var WidthNames = []string{"1x", "2x", "4x", "8x", "12x"}

// fecCodewordBits is the codeword length of each RS code in bits (10-bit symbols).
var fecCodewordBits = map[FEC]int64{FECNone: 0, FECRS528: 5280, FECRS544: 5440, FECLLRS271: 2710}

// FECNames lists FEC modes for messages.
var FECNames = []string{"none", "rs528", "rs544", "llrs271"}

// genFECs lists, per generation, the FEC modes whose parity the
// generation's data rate (GenInfo's encoding efficiency) is right for.
// SDR–FDR: no RS code (8b/10b, 64b/66b as is). EDR: none, or RS(528,514)
// and LL RS(271,257), which mlxlink reports on EDR at the same 25.78125 Gb/s
// lane rate (RS(528,514) carries exactly the 64b/66b payload: 80 × 66-bit
// blocks in 5280 bits). HDR–XDR: RS(544,514) only, which the 16/17
// efficiency already counts; PAM4 lanes run with it (ib-facts.md §1), and
// "none" would charge its parity without its latency. A link without FEC
// latency is link.fec_latency_ns: 0.
var genFECs = map[Generation][]FEC{
	SDR: {FECNone}, DDR: {FECNone}, QDR: {FECNone}, FDR10: {FECNone}, FDR: {FECNone},
	EDR: {FECNone, FECRS528, FECLLRS271},
	HDR: {FECRS544}, NDR: {FECRS544}, XDR: {FECRS544},
}

// FECModes returns the FEC modes gen may run (besides "default").
func FECModes(gen Generation) []FEC { return genFECs[gen] }

// Timing is a link direction's derived timing, all integer picoseconds.
type Timing struct {
	Lanes int32
	// The wire time of one byte at the data rate (after encoding and FEC) is
	// psNum/psDen picoseconds, a fraction in lowest terms kept exact: 20/1 at
	// 4x NDR, 440/3 at 4x FDR, 10/3 at 12x XDR (psDen is at most 9 for every
	// generation and width).
	psDen       int32
	psNum       int64
	FEC         ib.PS // FEC latency added to each packet's head
	Propagation ib.PS // cable flight time
}

// NewTiming derives a link's timing from its parameters.
func NewTiming(gen Generation, lanes int, fecLatency ib.PS, lengthM float64, psPerM int64) Timing {
	g, ok := Generations[gen]
	if !ok {
		panic(fmt.Sprintf("link: unknown generation %q", gen))
	}
	// One byte takes 8 bits / (lanes × lane kb/s × 1000 × EncNum/EncDen) s
	// = 8 × 10^12 × EncDen / (lanes × lane kb/s × 1000 × EncNum) ps.
	num := 8 * 1_000_000_000_000 * g.EncDen
	den := int64(lanes) * g.LaneKbps * 1000 * g.EncNum
	d := gcd(num, den)
	return Timing{
		Lanes:       int32(lanes),
		psNum:       num / d,
		psDen:       int32(den / d),
		FEC:         fecLatency,
		Propagation: ib.PS(lengthM*float64(psPerM) + 0.5),
	}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// DataRateBps returns the data rate in bits per second.
func (t Timing) DataRateBps() float64 { return 8e12 * float64(t.psDen) / float64(t.psNum) }

// Serialization returns the wire time of bytes at the data rate, rounded to
// the nearest picosecond: bytes × 8 × 10^12 / rate.
func (t Timing) Serialization(bytes int) ib.PS {
	ser, _ := t.serialize(bytes, 0)
	return ser
}

// serialize returns the wire time, rounded to the nearest picosecond, of
// bytes that start carry/psDen ps after an integer picosecond, and the
// carry of their end: the exact end minus the rounded one, in 1/psDen ps
// (|carry| ≤ psDen/2). A port passes the carry of one transmission to the
// next that starts the picosecond the first ends, so a wire kept busy
// moves exactly bytes × 8 / rate in total; rounding each packet alone
// would gain or lose up to half a picosecond per packet, always the same
// way for one size (113 ps instead of 113.33 for 34 bytes at 12x XDR: the
// wire would carry 0.3 % more than its data rate).
func (t Timing) serialize(bytes int, carry int64) (ib.PS, int64) {
	return serializeFrac(t.psNum, t.psDen, bytes, carry)
}

// serializeFrac is Timing.serialize for a byte time of psNum/psDen ps.
func serializeFrac(psNum int64, psDen int32, bytes int, carry int64) (ib.PS, int64) {
	x := int64(bytes)*psNum + carry
	den := int64(psDen)
	ser := (x + den/2) / den
	return ib.PS(ser), x - ser*den
}

// Latency returns FEC + propagation: the delay from a packet's start on the
// wire to its head's arrival.
func (t Timing) Latency() ib.PS { return t.FEC + t.Propagation }

// DefaultFECLatency returns the FEC latency default for a mode on a port: the
// time to accumulate one codeword at the port's signalling rate, the part of
// the decoder delay fixed by the code itself (ib-facts.md §1 [D]: RS(528,514)
// on 4x EDR 51.2 ns; RS(544,514) on 4x NDR 12.8 ns). Decoder pipeline time is
// implementation specific (≈100 ns total quoted for KP4 at 100G/lane [S]); set
// link.fec_latency_ns to model it.
func DefaultFECLatency(gen Generation, lanes int, fec FEC) ib.PS {
	bits := fecCodewordBits[fec]
	if bits == 0 {
		return 0
	}
	g := Generations[gen]
	// bits / (lanes × kb/s × 1000) seconds → ps = bits × 10^9 / (lanes × kb/s).
	den := int64(lanes) * g.LaneKbps
	return ib.PS((bits*1_000_000_000 + den/2) / den)
}

// ParseGeneration maps a case-insensitive name to a Generation.
func ParseGeneration(s string) (Generation, bool) {
	g := Generation(strings.ToUpper(s))
	_, ok := Generations[g]
	return g, ok
}
