package workload

import "github.com/hcasim/hcasim/hca"

// ctxTally sums the QP, CQ, SRQ and EQ context caches' counts over HCAs
// (hca.qp_cache_entries, hca.cq_cache_entries, hca.srq_cache_entries,
// hca.eq_cache_entries; docs/hca.md, "QP context cache", "CQ and SRQ
// context caches").
type ctxTally struct {
	qp, cq, srq, eq ctxCount
}

// ctxCount is one kind of context's uses that hit and missed, and the
// evicted contexts written back.
type ctxCount struct{ hits, misses, writeBacks int64 }

func (c *ctxCount) add(cc *hca.ContextCache) {
	if cc != nil {
		c.hits, c.misses, c.writeBacks = c.hits+cc.Hits, c.misses+cc.Misses, c.writeBacks+cc.WriteBacks
	}
}

// add counts d's caches (those modelled).
func (t *ctxTally) add(d *hca.Device) {
	t.qp.add(d.QPCache())
	t.cq.add(d.CQCache())
	t.srq.add(d.SRQCache())
	t.eq.add(d.EQCache())
}

// put sets, for each kind modelled and used, prefix +
// "{qp,cq,srq,eq}_cache_miss_rate" (the uses that missed), "_cache_misses"
// and "_cache_write_backs".
func (t *ctxTally) put(m map[string]any, prefix string) {
	for _, k := range [...]struct {
		name string
		c    ctxCount
	}{{"qp", t.qp}, {"cq", t.cq}, {"srq", t.srq}, {"eq", t.eq}} {
		if n := k.c.hits + k.c.misses; n > 0 {
			m[prefix+k.name+"_cache_miss_rate"] = float64(k.c.misses) / float64(n)
			m[prefix+k.name+"_cache_misses"] = k.c.misses
			m[prefix+k.name+"_cache_write_backs"] = k.c.writeBacks
		}
	}
}
