package link

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"math/rand/v2"
	"sync"

	"github.com/hcasim/hcasim/ib"
)

// rsCode is a Reed–Solomon FEC's shape: n symbols a codeword, k of them
// message, m bits a symbol. It corrects any t = (n − k)/2 symbol errors in
// a codeword (ib-facts.md §1; IEEE 802.3 clause 91 for RS(528,514) and
// RS(544,514), both over GF(2^10); the low-latency RS(271,257) is 2,710
// bits, 271 ten-bit symbols, as fecCodewordBits has it).
type rsCode struct{ n, k, m int }

// rsCodes lists the RS FEC modes.
var rsCodes = map[FEC]rsCode{
	FECRS528:   {528, 514, 10},
	FECRS544:   {544, 514, 10},
	FECLLRS271: {271, 257, 10},
}

// RSFEC reports whether fec is a Reed–Solomon code (what link.pre_fec_ber
// needs).
func RSFEC(fec FEC) bool { _, ok := rsCodes[fec]; return ok }

// correctable returns t, the symbol errors a codeword survives.
func (c rsCode) correctable() int { return (c.n - c.k) / 2 }

// dataBytes returns the link-layer bytes one codeword carries: its k·m
// message bits hold 256b/257b-transcoded blocks (20 of them in RS(544,514)
// and RS(528,514), 10 in RS(271,257)), each 256 data bits, so k·m × 256/257
// bits: 640 bytes (5,120 bits) for k = 514, 320 for k = 257. That is the
// share of the model's data-rate byte stream one codeword covers: at 4x
// NDR, 640 bytes × 20 ps = 12.8 ns, one codeword's time (DefaultFECLatency).
func (c rsCode) dataBytes() int64 { return int64(c.k*c.m) * 256 / 257 / 8 }

// MaxPreFECBER is the largest link.pre_fec_ber: at 1e-2 a 10-bit symbol is
// wrong with probability 1 − 0.99^10 ≈ 9.6 %, 52 of RS(544,514)'s 544
// (t = 15), and every RS code here fails nearly every codeword
// (docs/fabric.md, "Link errors").
const MaxPreFECBER = 1e-2

// cwPrec is the precision, in bits, of the failure probability's sums: the
// terms are all positive, so the only loss is rounding, about 544 × 2^-256
// relative, far below the 2^-64 the draws resolve.
const cwPrec = 256

// CodewordFailure returns P_cw, the probability that a codeword of fec is
// uncorrectable when each wire bit is flipped independently with
// probability preBER: a symbol of m bits is wrong with probability
// ps = 1 − (1 − preBER)^m and a codeword is lost when more than t of its
// n symbols are, P_cw = Σ_{j=t+1..n} C(n,j) ps^j (1 − ps)^(n−j).
func CodewordFailure(fec FEC, preBER float64) float64 {
	f, _ := codewordFailure(mustRS(fec), preBER).Float64()
	return f
}

func mustRS(fec FEC) rsCode {
	c, ok := rsCodes[fec]
	if !ok {
		panic(fmt.Sprintf("link: FEC %q is not a Reed–Solomon code", fec))
	}
	return c
}

// codewordFailure is CodewordFailure in big.Float arithmetic: every step a
// correctly rounded +, −, ×, ÷ (no Exp or Log, whose last bits differ
// between machines), so every machine gets the same value. The sum's terms
// come from the first by the ratio of consecutive binomial terms,
// term(j+1) = term(j) × (n − j)/(j + 1) × ps/(1 − ps).
func codewordFailure(c rsCode, preBER float64) *big.Float {
	nf := func() *big.Float { return new(big.Float).SetPrec(cwPrec) }
	one := nf().SetInt64(1)
	intactBit := nf().Sub(one, nf().SetFloat64(preBER)) // exact: 1 − a float64
	intactSym := nf().Set(one)
	for range c.m {
		intactSym.Mul(intactSym, intactBit)
	}
	ps := nf().Sub(one, intactSym)
	t := c.correctable()
	// The first term, j = t + 1.
	term := nf().SetInt(new(big.Int).Binomial(int64(c.n), int64(t+1)))
	for range t + 1 {
		term.Mul(term, ps)
	}
	for range c.n - t - 1 {
		term.Mul(term, intactSym)
	}
	ratio := nf().Quo(ps, intactSym)
	sum := nf().Set(term)
	for j := t + 1; j < c.n; j++ {
		term.Mul(term, ratio)
		term.Mul(term, nf().SetInt64(int64(c.n-j)))
		term.Quo(term, nf().SetInt64(int64(j+1)))
		sum.Add(sum, term)
	}
	return sum
}

// CodewordModel is what every port of one FEC mode and pre-FEC bit error
// rate shares: the codeword's failure probability and the thresholds its
// draws compare against. It is immutable.
//
// The gap between failed codewords (the good ones in between) is geometric,
// P(G = g) = (1 − P_cw)^g P_cw, and is drawn bit by bit: with q = 1 − P_cw,
// the binary digits of G are independent, digit j being 1 with probability
// q^(2^j) / (1 + q^(2^j)) — since Π_j (1 + q^(2^j)) = 1/(1 − q), the product
// of those digits' probabilities is (1 − q) q^g for g = Σ b_j 2^j. Each
// probability is kept in 0.64 fixed point, computed once here in big.Float,
// so a draw is a few integer comparisons, the same on every machine, and
// costs one PCG output per digit whose threshold is not zero: about
// log2(44/P_cw) of them (45 at P_cw = 1e-12, 7 at 0.5), made only when a
// failed codeword is reached.
type CodewordModel struct {
	FEC       FEC
	PreFECBER float64
	// Failure is P_cw, rounded to float64 (for reports and tests).
	Failure float64
	// cwBytes is the link-layer bytes one codeword carries (rsCode.dataBytes).
	cwBytes int64
	digits  int        // digits of G whose threshold is not zero
	thr     [64]uint64 // P(digit j = 1) × 2^64, rounded
}

var codewordModels sync.Map // modelKey → *CodewordModel

type modelKey struct {
	fec FEC
	ber float64
}

// CodewordModelFor returns the shared model of fec (an RS code) at pre-FEC
// bit error rate preBER (0 < preBER ≤ MaxPreFECBER). Models are made once
// per pair in a process (a millisecond of big.Float sums each).
func CodewordModelFor(fec FEC, preBER float64) *CodewordModel {
	if !(preBER > 0 && preBER <= MaxPreFECBER) {
		panic(fmt.Sprintf("link: pre-FEC bit error rate %v outside (0, %g]", preBER, MaxPreFECBER))
	}
	key := modelKey{fec, preBER}
	if m, ok := codewordModels.Load(key); ok {
		return m.(*CodewordModel)
	}
	c := mustRS(fec)
	pcw := codewordFailure(c, preBER)
	m := &CodewordModel{FEC: fec, PreFECBER: preBER, cwBytes: c.dataBytes()}
	m.Failure, _ = pcw.Float64()
	one := new(big.Float).SetPrec(cwPrec).SetInt64(1)
	x := new(big.Float).SetPrec(cwPrec).Sub(one, pcw) // q^(2^j), j = 0
	half := new(big.Float).SetPrec(cwPrec).SetFloat64(0.5)
	for j := range 64 {
		p := new(big.Float).SetPrec(cwPrec).Add(one, x)
		p.Quo(x, p)
		p.SetMantExp(p, 64).Add(p, half) // × 2^64, rounded below by Uint64
		v, acc := p.Uint64()
		if acc == big.Above { // 2^64 or more: as near one as 0.64 gets
			v = math.MaxUint64
		}
		if v == 0 {
			break // every later digit's is smaller still
		}
		m.thr[j] = v
		m.digits = j + 1
		x.Mul(x, x)
	}
	actual, _ := codewordModels.LoadOrStore(key, m)
	return actual.(*CodewordModel)
}

// maxGap caps a drawn gap: 2^62 codewords is longer than any run (at 1x
// SDR's slowest RS-free rates there is no FEC; at 1x EDR a codeword is
// 205 ns), and keeps indices far from overflowing int64.
const maxGap = 1 << 62

// codewordErrors decides which packets one wire direction corrupts when its
// FEC fails whole codewords. The wire's data stream (at the data rate, from
// time 0, idles included) is cut into codewords of cwBytes each; codeword c
// covers the exact times [c·period, (c+1)·period) in 1/psDen ps. Codewords
// fail independently with probability P_cw, and a failed one corrupts every
// packet, data or flow control, with a bit in it. Draws come from the
// transmitting port's own stream (seeded from the run's seed and the port's
// name) in the order of its own packets, as bitErrors'.
type codewordErrors struct {
	model  *CodewordModel
	pcg    rand.PCG
	period int64 // one codeword's time, 1/psDen ps: cwBytes × psNum
	psDen  int64
	// nextBad is the first failed codeword not yet reached: every codeword
	// from the last packet's first to nextBad − 1 is good, except lastBad.
	// −1 before the first packet.
	nextBad int64
	// lastBad is the last failed codeword a packet reached (−1: none). A
	// packet that starts in it shares it with the one before and is
	// corrupted too.
	lastBad int64
	// failedAt holds when each failed codeword that carried packet bits
	// began, in time order (FailedCodewordsBefore): 8 bytes per failure.
	failedAt []ib.PS
}

func newCodewordErrors(m *CodewordModel, t Timing, seed uint64, name string) *codewordErrors {
	h := fnv.New64a()
	h.Write([]byte(name))
	e := &codewordErrors{model: m, period: m.cwBytes * t.psNum, psDen: int64(t.psDen), nextBad: -1, lastBad: -1}
	// Another stream constant than the bit errors' and the sources'.
	e.pcg.Seed(seed, h.Sum64()^0x636f6465_776f7264) // "codeword"
	return e
}

// gap draws the number of good codewords before the next failed one.
func (e *codewordErrors) gap() int64 {
	var g uint64
	for j := range e.model.digits {
		if e.pcg.Uint64() < e.model.thr[j] {
			g |= 1 << j
		}
	}
	return int64(min(g, maxGap))
}

// corrupt reports whether a packet whose bits span the exact times
// [start, end) (1/psDen ps, start ≥ the previous packet's end) meets a
// failed codeword. Failures in the idle stretch before it are not drawn:
// whether codewords fail is independent from one to the next, so the first
// failure at or after the packet's first codeword is that codeword's index
// plus a fresh geometric gap, whatever fell before.
func (e *codewordErrors) corrupt(start, end int64) bool {
	c0, c1 := start/e.period, (end-1)/e.period
	hit := e.lastBad >= c0 // the codeword it shares with the packet before
	if e.nextBad < c0 {
		e.nextBad = c0 + e.gap()
	}
	for e.nextBad <= c1 {
		hit = true
		e.lastBad = e.nextBad
		e.failedAt = append(e.failedAt, ib.PS(e.lastBad*e.period/e.psDen))
		e.nextBad += 1 + e.gap()
	}
	return hit
}
