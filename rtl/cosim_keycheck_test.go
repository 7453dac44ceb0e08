package rtl

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_key_check <-> hca.KeyTable.Check ----

// keyCheckDUT drives hca_key_check with checks of the keys of a table of
// regions the simulator's own hca.KeyTable holds, plays the MPT memory
// (entries encoded from KeyTable.Entry, after a random latency), and
// expects each check's result to be KeyTable.Check's. Its state machine
// mirrors the block's: idle → read the entry → wait for it → offer the
// result until taken. With an MPT cache the block looks the key's index up
// first, and whether it hits is the simulator's own hca.KeyCache's answer
// (least recently used out, keyed by index): a hit offers the result with
// no read, a miss reads as without a cache.
type keyCheckDUT struct {
	table   hca.KeyTable
	regions []hca.MR
	pds     []uint32 // the regions' protection domains
	maxLat  int
	entries int           // CACHE_ENTRIES; 0 = no cache
	cache   *hca.KeyCache // nil without a cache
	hits    int
	evicted int // misses with the cache full
	filled  map[uint32]bool

	state          int // 0 idle, 1 read, 2 wait, 3 respond
	key, pd        uint32
	need           int
	addr, length   uint64
	result, tag    uint64
	rspIn          int // cycles until the memory answers; -1 = no read out
	pReq, pRspTake float64
	c              int
}

// newKeyCacheDUT is newKeyCheckDUT with an MPT cache of entries entries.
func newKeyCacheDUT(r *rand.Rand, maxLat, entries int) *keyCheckDUT {
	d := newKeyCheckDUT(r, maxLat)
	d.entries, d.cache, d.filled = entries, hca.NewKeyCache(entries), map[uint32]bool{}
	return d
}

func newKeyCheckDUT(r *rand.Rand, maxLat int) *keyCheckDUT {
	d := &keyCheckDUT{maxLat: maxLat, rspIn: -1}
	// Regions in three protection domains with random 32-bit handles and
	// random access flags. A third are large (4 GiB to 1 TiB) anywhere in
	// the 64-bit space, so the block's address and length comparisons
	// matter in every bit; one lies near the top of the address space (its
	// end wraps in 64 bits, where the bounds rule's wrapping arithmetic
	// matters); one is deregistered.
	for range 3 {
		d.pds = append(d.pds, r.Uint32()|1)
	}
	for i := range 12 {
		base := uint64(r.IntN(1<<20)) << 12
		length := uint64(1 + r.IntN(1<<16))
		if i%3 == 0 {
			base, length = r.Uint64()&^0xfff, 1<<32+r.Uint64N(1<<40)
			if i%2 == 0 {
				base |= 1 << 63 // half of them in the top half
			}
			base = min(base, ^uint64(0)-length) // ends below 2^64
		}
		if i == 5 {
			base, length = ^uint64(0)-uint64(r.IntN(4096)), uint64(8192)
		}
		d.regions = append(d.regions, d.table.Register(d.pds[r.IntN(3)], base, length, r.IntN(16)))
	}
	d.table.Deregister(d.regions[7].LKey)
	return d
}

func (d *keyCheckDUT) module() string  { return "hca_key_check" }
func (d *keyCheckDUT) files() []string { return []string{"onehot_encode.v", "hca_key_check.v"} }
func (d *keyCheckDUT) params() []Param {
	return []Param{{"TAG_W", 24}, {"CACHE_ENTRIES", d.entries}}
}
func (d *keyCheckDUT) inputs() []Signal {
	return []Signal{
		{Name: "req_valid", Width: 1}, {Name: "req_key", Width: 32}, {Name: "req_pd", Width: 32},
		{Name: "req_need", Width: 4}, {Name: "req_addr", Width: 64}, {Name: "req_len", Width: 64},
		{Name: "req_tag", Width: 24}, {Name: "mpt_req_ready", Width: 1}, {Name: "mpt_rsp_valid", Width: 1},
		{Name: "mpt_rsp_entry", Width: 256}, {Name: "rsp_ready", Width: 1},
	}
}
func (d *keyCheckDUT) outputs() []Signal {
	return []Signal{
		{Name: "req_ready", Width: 1}, {Name: "mpt_req_valid", Width: 1}, {Name: "mpt_req_index", Width: 24},
		{Name: "rsp_valid", Width: 1}, {Name: "rsp_result", Width: 3}, {Name: "rsp_tag", Width: 24},
	}
}

// entryValue encodes MPT entry idx as the block reads it.
func (d *keyCheckDUT) entryValue(idx uint32) Value {
	e, ok := d.table.Entry(idx)
	if !ok {
		return Value{0, 0, 0, 0}
	}
	return Value{e.Addr, e.Length, uint64(e.PD) | uint64(e.LKey)<<32, uint64(e.Access) | 1<<63}
}

// request draws a check that hits each rule's edge often.
func (d *keyCheckDUT) request(r *rand.Rand) (key, pd uint32, need int, addr, length uint64) {
	bounds := r.IntN(8) // how the range is drawn (below)
	mr := d.regions[r.IntN(len(d.regions))]
	if bounds == 4 {
		mr = d.regions[3*r.IntN(4)] // a large region (newKeyCheckDUT)
	}
	key, pd, need = mr.LKey, mr.PD, r.IntN(16)&mr.Access
	// Each rule is broken on its own draw, so checks often break several
	// at once and only the rules' order decides the result.
	// The high-bit range draws (4, 5) leave the key, PD and access valid,
	// so that the bounds rule alone decides.
	if bounds != 4 && bounds != 5 {
		switch r.IntN(10) {
		case 0:
			key ^= uint32(1 + r.IntN(255)) // a stale variant
		case 1:
			key = uint32(len(d.regions)+r.IntN(100))<<8 | uint32(r.IntN(256)) // no such index
		}
		switch r.IntN(4) {
		case 0:
			pd = d.pds[r.IntN(3)] // maybe another domain
		case 1:
			// A domain that differs in some bits only: the top bit (half
			// the time), one bit anywhere, or any above the lowest two.
			flip := []uint32{1 << 31, 1 << 31, 1 << r.IntN(32), r.Uint32() &^ 3}[r.IntN(4)]
			if flip == 0 {
				flip = 1 << 31
			}
			pd ^= flip
		}
		if r.IntN(3) == 0 {
			need = r.IntN(16) // maybe a flag the region lacks
		}
	}
	addr = mr.Addr + r.Uint64N(mr.Length+1)
	length = r.Uint64N(mr.Length + 1)
	switch bounds {
	case 0:
		addr = mr.Addr - uint64(r.IntN(2)) // at the base, or one below
	case 1:
		addr = mr.Addr + uint64(r.IntN(64))
		length = mr.Length - (addr - mr.Addr) + uint64(r.IntN(2)) // to the end, or one past
	case 2:
		length = ^uint64(0) - uint64(r.IntN(1<<20)) // wraps past 2^64
	case 3:
		addr, length = r.Uint64(), r.Uint64()
	case 4:
		// Far below the base, by 2^k for k the base's top bit or one of
		// the 16 above bit 47 that the base has room for, and ending
		// inside the region: only addr < base fails it.
		top := 63 - bits.LeadingZeros64(mr.Addr)
		below := uint64(1) << []int{top, min(top, 48+r.IntN(16))}[r.IntN(2)]
		addr = mr.Addr - below
		length = below + r.Uint64N(mr.Length+1)
	case 5:
		// A length that fits but for a bit at 2^32 or above: past the end
		// of a small region, or of a large one when the bit is above its
		// length's.
		length = r.Uint64N(mr.Addr+mr.Length-addr+1) + uint64(1)<<(32+r.IntN(32))
	}
	return
}

func (d *keyCheckDUT) cycle(r *rand.Rand, in, out []Value) {
	d.c++
	if d.c%256 == 1 {
		d.pReq = []float64{0.1, 0.5, 0.9}[r.IntN(3)]
		d.pRspTake = []float64{0.2, 0.6, 1}[r.IntN(3)]
	}
	// The outputs of this cycle: the state's.
	out[0], out[1], out[2] = b2v(d.state == 0), b2v(d.state == 1), U(uint64(d.key>>8))
	out[3], out[4], out[5] = b2v(d.state == 3), U(d.result), U(d.tag)

	reqValid := r.Float64() < d.pReq
	key, pd, need, addr, length := d.request(r)
	tag := uint64(r.IntN(1 << 24))
	mptReady := r.IntN(3) > 0
	rspTake := r.Float64() < d.pRspTake
	// The memory answers rspIn cycles after it took the read; otherwise
	// it drives garbage the block must ignore.
	rspValid := d.state == 2 && d.rspIn == 0
	entry := Value{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
	if rspValid {
		entry = d.entryValue(d.key >> 8)
	} else if d.state != 2 && r.IntN(4) == 0 {
		rspValid = true // a stray valid outside a read: ignored
	}
	in[0], in[1], in[2], in[3] = b2v(reqValid), U(uint64(key)), U(uint64(pd)), U(uint64(need))
	in[4], in[5], in[6], in[7] = U(addr), U(length), U(tag), b2v(mptReady)
	in[8], in[9], in[10] = b2v(rspValid), entry, b2v(rspTake)

	// The rising edge.
	switch d.state {
	case 0:
		if reqValid {
			d.key, d.pd, d.need, d.addr, d.length, d.tag = key, pd, need, addr, length, tag
			d.state = 1
			if d.cache != nil {
				d.state = 4
			}
		}
	case 4:
		full := len(d.filled) >= d.entries // entries are never freed
		if d.cache.Access(d.key) {
			d.hits++
			d.result = uint64(d.table.Check(d.key, d.pd, d.need, d.addr, d.length))
			d.state = 3
		} else {
			if full {
				d.evicted++
			}
			d.filled[d.key>>8] = true
			d.state = 1
		}
	case 1:
		if mptReady {
			d.state, d.rspIn = 2, r.IntN(d.maxLat+1)
		}
	case 2:
		if rspValid {
			d.result = uint64(d.table.Check(d.key, d.pd, d.need, d.addr, d.length))
			d.state, d.rspIn = 3, -1
		} else {
			d.rspIn--
		}
	case 3:
		if rspTake {
			d.state = 0
		}
	}
}

// TestKeyCheckStimulusCoversEveryRule: the co-simulation's checks end in
// every result, each many times, so a block that got one rule wrong (or
// checked them in another order) could not match on all of them by luck.
func TestKeyCheckStimulusCoversEveryRule(t *testing.T) {
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := newKeyCheckDUT(r, 6)
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		var seen [5]int
		for range cosimCycles {
			before := d.state
			d.cycle(r, in, out)
			if before == 2 && d.state == 3 {
				seen[d.result]++
			}
		}
		for res, n := range seen {
			assert.GreaterOrEqual(t, n, 10, "seed %d: result %v", seed, hca.KeyResult(res))
		}
	}
}

// TestKeyCheckStimulusSeesEveryBit: the co-simulation only proves the
// block's comparisons as wide as its stimulus makes them matter. Each
// mutant below is the check with one field compared in fewer bits than it
// has (an RTL slip the cosim must catch); the stimulus must make it answer
// differently from hca.KeyTable.Check many times per seed. With PDs 1 … 3,
// region lengths below 2^16 and bases below 2^32, a block comparing PDs in
// 2 bits, addresses in 48 or lengths in 32 matched the model on every
// check.
func TestKeyCheckStimulusSeesEveryBit(t *testing.T) {
	type check struct {
		key, pd      uint32
		need         int
		addr, length uint64
	}
	// mutant is KeyTable.Check with pd, addresses and lengths masked as
	// a narrower comparator would see them.
	mutant := func(tb *hca.KeyTable, c check, pdMask, addrMask, lenMask uint64) hca.KeyResult {
		e, ok := tb.Entry(c.key >> 8)
		switch {
		case !ok || e.LKey != c.key:
			return hca.KeyInvalid
		case uint64(e.PD)&pdMask != uint64(c.pd)&pdMask:
			return hca.KeyPDMismatch
		case e.Access&c.need != c.need:
			return hca.KeyAccessDenied
		}
		addr, base := c.addr&addrMask, e.Addr&addrMask
		end, eEnd := c.addr+c.length&lenMask, e.Addr+e.Length&lenMask
		if addr < base || end > eEnd || end < c.addr {
			return hca.KeyOutOfBounds
		}
		return hca.KeyOK
	}
	all := ^uint64(0)
	mutants := []struct {
		name                      string
		pdMask, addrMask, lenMask uint64
	}{
		{"PD in 2 bits", 3, all, all},
		{"PD in 16 bits", 1<<16 - 1, all, all},
		{"PD in 31 bits", 1<<31 - 1, all, all},
		{"address in 48 bits", all, 1<<48 - 1, all},
		{"address in 63 bits", all, 1<<63 - 1, all},
		{"length in 32 bits", all, all, 1<<32 - 1},
		{"length in 48 bits", all, all, 1<<48 - 1},
	}
	for _, seed := range cosimSeeds {
		r := rand.New(rand.NewPCG(seed, 0x7e57))
		d := newKeyCheckDUT(r, 6)
		in := make([]Value, len(d.inputs()))
		out := make([]Value, len(d.outputs()))
		var checks []check
		for range cosimCycles {
			before := d.state
			d.cycle(r, in, out)
			if before == 2 && d.state == 3 {
				checks = append(checks, check{d.key, d.pd, d.need, d.addr, d.length})
			}
		}
		for _, m := range mutants {
			caught := 0
			for _, c := range checks {
				if mutant(&d.table, c, m.pdMask, m.addrMask, m.lenMask) != d.table.Check(c.key, c.pd, c.need, c.addr, c.length) {
					caught++
				}
			}
			assert.GreaterOrEqual(t, caught, 5, "seed %d: a check with %s differs from the model on only %d checks", seed, m.name, caught)
		}
	}
}

// TestKeyCacheStimulusCovers: with a cache, each seed's checks hit, miss
// into a free slot and miss into a full cache (an eviction) many times, so
// the replacement order decides the hits that follow.
func TestKeyCacheStimulusCovers(t *testing.T) {
	for _, entries := range []int{1, 4, 16} {
		for _, seed := range cosimSeeds {
			r := rand.New(rand.NewPCG(seed, 0x7e57))
			d := newKeyCacheDUT(r, 3, entries)
			in := make([]Value, len(d.inputs()))
			out := make([]Value, len(d.outputs()))
			misses := 0
			for range cosimCycles {
				before := d.state
				d.cycle(r, in, out)
				if before == 4 && d.state == 1 {
					misses++
				}
			}
			t.Logf("entries %d seed %d: %d hits, %d misses, %d evictions", entries, seed, d.hits, misses, d.evicted)
			assert.GreaterOrEqual(t, d.hits, 10, "entries %d seed %d: hits", entries, seed)
			assert.GreaterOrEqual(t, misses-d.evicted, min(entries, 5), "entries %d seed %d: misses into a free slot", entries, seed)
			assert.GreaterOrEqual(t, d.evicted, 20, "entries %d seed %d: evictions", entries, seed)
		}
	}
}

// TestKeyCacheMutantsFail: each slip in the cache fails the co-simulation.
//
// 1000 cycles of the 3000: each mutant first mismatched by cycle 164
// (Icarus, 2026-12-02).
func TestKeyCacheMutantsFail(t *testing.T) {
	runMutantsFor(t, 1000, func() cosimDUT { return newKeyCacheDUT(rand.New(rand.NewPCG(cosimSeeds[0], 0x7e57)), 3, 4) }, []cosimMutant{
		{"the most recent entry evicted", "hca_key_check.v",
			"assign oldest_oh[g] = age == OLDEST;", "assign oldest_oh[g] = age == {AGE_W{1'b0}};"},
		{"a hit leaves the order (first in, first out)", "hca_key_check.v",
			"end else if (hit_now || fill_now) begin", "end else if (fill_now) begin"},
		{"entries younger than the hit not aged", "hca_key_check.v",
			"else if (valid && age < acc_age)", "else if (valid && age < acc_age - 1'b1)"},
		{"tagged by the key with its variant's bits", "hca_key_check.v",
			"assign hit_oh[g]    = valid && tag == key[31:8];", "assign hit_oh[g]    = valid && tag == key[23:0];"},
		{"a hit still reads the MPT", "hca_key_check.v",
			"S_LOOK: if (c_hit) begin", "S_LOOK: if (1'b0) begin"},
		{"a fill into a free slot ages nothing", "hca_key_check.v",
			": OLDEST;\n", ": {AGE_W{1'b0}};\n"},
	})
}
