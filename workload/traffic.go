package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/hcasim/hcasim/ib"
)

// Injection process names, as workload.injection spells them.
const (
	InjectBernoulli = "bernoulli"
	InjectOnOff     = "onoff"
)

// Injector decides when a host's next packet is due. Next returns the time
// from the previous injection (or from the start of the run, for the first
// packet) to the injection of the next packet, which is wireBytes long on the
// wire. The gap is a pure function of the injector's state and the draws it
// takes from r.
//
// Both processes work in packet slots: the time the packet takes on the wire
// at the link's data rate, wireBytes × 8 / rate. That makes the offered load a
// fraction of the link's rate whatever the packet sizes: a host offering load
// L sends L × rate bytes per unit time on average.
type Injector interface {
	Next(r *rand.Rand, wireBytes int) ib.PS
}

// slotPS returns one packet slot in (fractional) picoseconds: wireBytes × 8
// bits at gbps Gb/s, i.e. wireBytes × 8000 / gbps ps.
func slotPS(wireBytes int, gbps float64) float64 { return float64(wireBytes) * 8000 / gbps }

// threshold turns a probability into a 64-bit comparison threshold, so a
// trial is r.Uint64() < threshold: integer draws, the same on every machine
// (no math.Log, whose assembly differs between architectures).
func threshold(p float64) uint64 {
	if p >= 1 {
		return math.MaxUint64
	}
	return uint64(p * (1 << 64))
}

// trials returns how many independent trials of success threshold thr it
// takes to get a success: a geometric count ≥ 1 with mean 1/p.
func trials(r *rand.Rand, thr uint64) int64 {
	if thr == math.MaxUint64 {
		return 1
	}
	n := int64(1)
	for r.Uint64() >= thr {
		n++
	}
	return n
}

// Bernoulli injects a packet in each packet slot with probability Load
// (Dally and Towles 2004, §23.2: Bernoulli process), so the gap is a
// geometric number of slots with mean 1/Load and the host offers Load × the
// link's data rate.
type Bernoulli struct {
	gbps float64
	thr  uint64
}

// NewBernoulli makes a Bernoulli injector at offered load (0 < load ≤ 1) of
// a link carrying gbps Gb/s of data.
func NewBernoulli(load, gbps float64) *Bernoulli {
	checkRate(load, gbps)
	return &Bernoulli{gbps: gbps, thr: threshold(load)}
}

// Next returns a geometric number of slots of a wireBytes packet.
func (b *Bernoulli) Next(r *rand.Rand, wireBytes int) ib.PS {
	return ib.PS(math.Round(float64(trials(r, b.thr)) * slotPS(wireBytes, b.gbps)))
}

// OnOff alternates bursts of back-to-back packets with idle periods (a
// two-state Markov-modulated process, Dally and Towles 2004, §23.2). Burst
// lengths are geometric with mean BurstPackets; idle periods are geometric
// with mean BurstPackets × (1 − Load) / Load slots, so over time the host is
// busy a fraction BurstPackets / (BurstPackets + idle) = Load of the slots.
type OnOff struct {
	gbps     float64
	cont     uint64 // threshold for "the burst goes on after this packet": 1 − 1/B
	stop     uint64 // threshold for "the idle period ends this slot": 1 / (1 + idle mean)
	inBurst  bool
	firstGap bool
}

// NewOnOff makes an on-off injector at offered load (0 < load ≤ 1) with mean
// burst length burst packets (≥ 1) on a link carrying gbps Gb/s of data.
func NewOnOff(load, burst, gbps float64) *OnOff {
	checkRate(load, gbps)
	if !(burst >= 1) {
		panic(fmt.Sprintf("workload: NewOnOff: burst %v packets is below 1", burst))
	}
	idleMean := burst * (1 - load) / load
	return &OnOff{
		gbps: gbps,
		cont: uint64((1 - 1/burst) * (1 << 64)), // 0 when burst = 1: bursts of one packet
		stop: threshold(1 / (1 + idleMean)),
	}
}

// Next returns one slot inside a burst; at the start of a burst, one slot
// plus the idle slots before it.
func (o *OnOff) Next(r *rand.Rand, wireBytes int) ib.PS {
	slots := int64(1)
	if !o.inBurst {
		slots += trials(r, o.stop) - 1 // idle slots: geometric ≥ 0
	}
	o.inBurst = o.cont > 0 && r.Uint64() < o.cont
	return ib.PS(math.Round(float64(slots) * slotPS(wireBytes, o.gbps)))
}

func checkRate(load, gbps float64) {
	if !(load > 0 && load <= 1) || !(gbps > 0) {
		panic(fmt.Sprintf("workload: injector: load %v must be in (0, 1] and rate %v Gb/s positive", load, gbps))
	}
}

// maxPayload is the largest packet payload: the largest IB MTU, 4096 bytes
// (ib-facts.md §2, rdma-core enum ibv_mtu). The path MTU (link.mtu) can be
// smaller; CheckMTU compares against it.
const maxPayload = 4096

// SizeDist is a packet payload size distribution: sizes with weights.
type SizeDist struct {
	sizes []int     // payload bytes
	cum   []float64 // cumulative weights
}

// FixedSize is the distribution with every payload n bytes.
func FixedSize(n int) SizeDist { return SizeDist{sizes: []int{n}, cum: []float64{1}} }

// ParseSizes parses a size distribution "size:weight,size:weight,…" (bytes;
// weights are relative and need not sum to 1), e.g. "256:0.5,4096:0.5"; key
// names the config key in errors.
func ParseSizes(s, key string) (SizeDist, error) {
	var d SizeDist
	total := 0.0
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		sz, wt, ok := strings.Cut(item, ":")
		if !ok {
			return SizeDist{}, fmt.Errorf("%s: %q is not size:weight (e.g. 256:0.5,4096:0.5)", key, item)
		}
		n, err := strconv.Atoi(strings.TrimSpace(sz))
		if err != nil || n < 1 || n > maxPayload {
			return SizeDist{}, fmt.Errorf("%s: size %q in %q is not a payload size (1 to %d bytes)", key, sz, item, maxPayload)
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(wt), 64)
		if err != nil || !(w > 0) || math.IsInf(w, 1) {
			return SizeDist{}, fmt.Errorf("%s: weight %q in %q is not a positive number", key, wt, item)
		}
		total += w
		d.sizes = append(d.sizes, n)
		d.cum = append(d.cum, total)
	}
	return d, nil
}

// Sample draws a payload size. A distribution of one size draws nothing.
func (d SizeDist) Sample(r *rand.Rand) int {
	if len(d.sizes) == 1 {
		return d.sizes[0]
	}
	u := r.Float64() * d.cum[len(d.cum)-1]
	for i, c := range d.cum {
		if u < c {
			return d.sizes[i]
		}
	}
	return d.sizes[len(d.sizes)-1]
}

// Mean returns the weighted mean payload in bytes.
func (d SizeDist) Mean() float64 {
	sum, prev := 0.0, 0.0
	for i, c := range d.cum {
		sum += float64(d.sizes[i]) * (c - prev)
		prev = c
	}
	return sum / d.cum[len(d.cum)-1]
}

// Max returns the largest payload in bytes.
func (d SizeDist) Max() int {
	m := 0
	for _, s := range d.sizes {
		m = max(m, s)
	}
	return m
}

// Source is one host's synthetic traffic: when its next packet is due, where
// it goes and how big it is. Each host draws from its own PCG stream, so
// adding hosts or changing one host's traffic does not change another's.
type Source struct {
	Host    int
	pattern Pattern
	inject  Injector
	sizes   SizeDist
	rng     *rand.Rand
	idle    bool
}

// Packet is what a Source asks the endpoint to inject next.
type Packet struct {
	Gap     ib.PS // time from the previous injection (or the start) to this one
	Dst     int   // destination host index
	Payload int   // payload bytes
}

// Idle reports whether the host sends nothing under its pattern (the incast
// target).
func (s *Source) Idle() bool { return s.idle }

// Next returns the host's next packet. wireBytes gives a packet's size on the
// wire for a payload (headers, pad and CRCs: the endpoint knows its opcode),
// which sets the length of the packet slot. It panics on an idle host.
func (s *Source) Next(wireBytes func(payload int) int) Packet {
	if s.idle {
		panic(fmt.Sprintf("workload: Source.Next on idle host %d", s.Host))
	}
	payload := s.sizes.Sample(s.rng)
	gap := s.inject.Next(s.rng, wireBytes(payload))
	return Packet{Gap: gap, Dst: s.pattern.Dest(s.Host, s.rng), Payload: payload}
}

// PCG stream constants: the second word of each PCG seed, so the streams a
// base seed feeds never overlap. Host h's stream is hostStream + h.
const (
	patternStream = 0x243f6a8885a308d3 // the permutation
	hostStream    = 0x13198a2e03707344 // per host: sizes, gaps, destinations
)

// NewSources makes every host's Source for the traffic config. hosts is the
// number of hosts, gbps the link's data rate in Gb/s (the slot length), seed
// the design point's seed. Same arguments, same traffic, on any machine.
func NewSources(c TrafficConfig, hosts int, gbps float64, seed uint64) ([]*Source, error) {
	rates := make([]float64, hosts)
	for i := range rates {
		rates[i] = gbps
	}
	return NewSourcesAt(c, rates, seed)
}

// NewSourcesAt is NewSources with each host's own link data rate, Gb/s
// (len(gbps) hosts): offered_load is a fraction of the sending host's own
// link, so a host on a slower cable offers fewer bytes.
func NewSourcesAt(c TrafficConfig, gbpsOf []float64, seed uint64) ([]*Source, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	hosts := len(gbpsOf)
	for _, gbps := range gbpsOf {
		if !(gbps > 0) {
			return nil, fmt.Errorf("workload: link data rate %v Gb/s must be positive", gbps)
		}
	}
	in := topologyHosts
	if c.Background {
		in = backgroundHosts
		if c.PerftestHosts > 2 {
			in.hosts = fmt.Sprintf("the fabric has %%d besides the %d perftest hosts", c.PerftestHosts)
		}
		if c.Beside != "" {
			in.hosts = "the fabric has %d" + strings.ReplaceAll(c.Beside, "%", "%%")
		}
	}
	pat, err := newPattern(c.Pattern, hosts, c.Shift, c.HotspotFraction, rand.New(rand.NewPCG(seed, patternStream)), in)
	if err != nil {
		return nil, err
	}
	sizes, err := c.SizeDist()
	if err != nil {
		return nil, err
	}
	out := make([]*Source, hosts)
	for h := range out {
		gbps := gbpsOf[h]
		var inj Injector
		if c.Injection == InjectOnOff {
			inj = NewOnOff(c.OfferedLoad, c.BurstPackets, gbps)
		} else {
			inj = NewBernoulli(c.OfferedLoad, gbps)
		}
		out[h] = &Source{
			Host:    h,
			pattern: pat,
			inject:  inj,
			sizes:   sizes,
			rng:     rand.New(rand.NewPCG(seed, hostStream+uint64(h))),
			idle:    c.Pattern == PatternIncast && pat.Dest(h, nil) == NoDest,
		}
	}
	return out, nil
}
