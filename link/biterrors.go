package link

import (
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/hcasim/hcasim/ib"
)

// bitErrors decides which packets one wire direction corrupts: post-FEC bit
// errors, independent from bit to bit at a fixed rate, so a packet of b bits
// arrives intact with probability (1 − BER)^b. One draw per packet, from the
// transmitting port's own stream, seeded from the run's seed and the port's
// name: the draws depend only on the order of the packets this port sends,
// never on other ports, partitions or threads.
//
// The probability is kept in 0.64 fixed point and raised to the packet's
// bit count with integer multiplications, so every machine computes the
// same threshold bit for bit (math.Pow and math.Exp may differ in the last
// bit between architectures, and the draw compares against the threshold).
type bitErrors struct {
	pcg rand.PCG
	// intact is 1 − BER in 0.64 fixed point: the chance one bit arrives
	// unflipped, × 2^64 (rounded, at most 2^64 − 1).
	intact uint64
	// The last data packet size asked for and its threshold: a fabric's
	// packets come in few sizes, so the power is rarely recomputed.
	lastBytes int
	lastThr   uint64
	fcThr     uint64 // the threshold of a flow-control packet
}

// newBitErrors returns the error stream of the wire port name transmits on.
// ber must be in (0, MaxBER].
func newBitErrors(ber float64, seed uint64, name string) bitErrors {
	// ber × 2^64 is exact (a power-of-two scale); rounding it to an integer
	// is the one float step, and it is exact on every machine. A rate
	// smaller than 2^-64 still corrupts: one step of 2^-64.
	flip := max(uint64(math.Round(math.Ldexp(ber, 64))), 1)
	h := fnv.New64a()
	h.Write([]byte(name))
	e := bitErrors{intact: -flip, lastBytes: -1}
	// The stream constant tells this stream from the traffic sources'
	// (which use the seed with their host numbers).
	e.pcg.Seed(seed, h.Sum64()^0x62697465_72726f72) // "biterror"
	e.fcThr = e.threshold(ib.FlowControlBytes)
	return e
}

// threshold returns P(a packet of bytes wire bytes is corrupted) × 2^64,
// rounded down: 2^64 − intact^(8 × bytes), the power taken by squaring in
// 0.64 fixed point (each product rounded to nearest; the relative error of
// the result is below 2^-58 for any packet, far under any BER's precision).
func (e *bitErrors) threshold(bytes int) uint64 {
	n := uint64(bytes) * 8
	p := ^uint64(0) // 1 − 2^-64: one, as near as 0.64 fixed point gets
	x := e.intact
	for n > 0 {
		if n&1 != 0 {
			p = mulFixed(p, x)
		}
		x = mulFixed(x, x)
		n >>= 1
	}
	return ^p // 2^64 − 1 − p
}

// mulFixed multiplies two 0.64 fixed-point fractions, rounding to nearest.
func mulFixed(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if lo >= 1<<63 && hi != ^uint64(0) {
		hi++
	}
	return hi
}

// corrupt draws whether a data packet of bytes wire bytes arrives corrupted.
func (e *bitErrors) corrupt(bytes int) bool {
	if bytes != e.lastBytes {
		e.lastBytes, e.lastThr = bytes, e.threshold(bytes)
	}
	return e.pcg.Uint64() < e.lastThr
}

// corruptFC draws whether a flow-control packet arrives corrupted.
func (e *bitErrors) corruptFC() bool { return e.pcg.Uint64() < e.fcThr }
