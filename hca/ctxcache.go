package hca

import "github.com/hcasim/hcasim/ib"

// ContextCache is an on-chip cache of one kind of context the HCA keeps in
// ICM, host memory it owns: QP contexts (hca.qp_cache_entries, qpcache.go),
// CQ contexts (hca.cq_cache_entries; the producer index moves with every
// CQE) and SRQ contexts (hca.srq_cache_entries; the WQE counter moves with
// every take). A use of one not on chip waits for a PCIe read of it, and
// the entry it evicts, if a use modified it, is written back to ICM first:
// a posted write of its bytes. Entries are keyed by QP, CQ or SRQ number,
// least recently used out; an entry is allocated at the miss and filled
// when its read completes, so a use meanwhile hits and waits for that
// read (lru).
//
// Each kind has its own cache: how ConnectX shares on-chip context memory
// between kinds is not published, and separate caches keep a CQ's
// misses from depending on how many QPs are active (docs/hca.md, "CQ and
// SRQ context caches").
type ContextCache struct {
	lru[uint32]
	base  uint64 // bus address of the context table in ICM
	bytes int    // one context's bytes, a power of two
	// WriteBacks counts the evicted contexts written back to ICM.
	WriteBacks int64
}

func newContextCache(entries int, base uint64, bytes int) *ContextCache {
	return &ContextCache{lru: newLRU[uint32](entries), base: base, bytes: bytes}
}

// CQCache returns the CQ context cache, nil when CQ contexts are not
// modelled (hca.cq_cache_entries 0).
func (d *Device) CQCache() *ContextCache { return d.cqc }

// SRQCache returns the SRQ context cache, nil when SRQ contexts are not
// modelled (hca.srq_cache_entries 0).
func (d *Device) SRQCache() *ContextCache { return d.srqc }

// EQCache returns the EQ context cache, nil when EQ contexts are not
// modelled (hca.eq_cache_entries 0).
func (d *Device) EQCache() *ContextCache { return d.eqc }

// CQCBase, SRQCBase and EQCBase are the bus addresses at which the model
// puts the CQ, SRQ and EQ context tables in ICM: context n at base + n ×
// its bytes (a power of two, so each is aligned to its size). ConnectX's
// ICM layout is not published; tables indexed by number, as the
// InfiniHost PRM's are, are the assumption. 2^24 contexts of at most 4096
// bytes take 2^36 bytes each, clear of the MPT (2^30 bytes from MPTBase),
// of each other and of QPCBase.
const (
	CQCBase  = 1<<60 + 1<<56
	SRQCBase = 1<<60 + 1<<55
	EQCBase  = 1<<60 + 1<<54
)

// ContextAddr returns the bus address of context n of a table at base
// whose contexts take ctxBytes each.
func ContextAddr(base uint64, n uint32, ctxBytes int) uint64 {
	return base + uint64(n)*uint64(ctxBytes)
}

// contextUse returns when context n of c is on chip for a use asked for
// at t: at t if cached (and its read, if one brought it, is done), else
// when the read of its bytes that this miss issues at t completes, after
// the write-back of the context it evicts if that one was modified.
// Callers test that the cache is modelled first (a nil field), so a run
// without it pays one branch. A use that modifies the context marks it
// (c.modified, or contextModify).
func (d *Device) contextUse(c *ContextCache, t ib.PS, n uint32) ib.PS {
	if hit, readyAt := c.lookup(n); hit {
		return max(t, readyAt)
	}
	return d.contextMiss(c, t, n)
}

// contextModify is contextUse for a use that always modifies the context
// (a CQE moves the CQ's producer index, a take the SRQ's WQE counter, an
// EQE the EQ's producer_counter and its state, armed to fired):
// the entry, now the most recently used, is marked for write-back.
func (d *Device) contextModify(c *ContextCache, t ib.PS, n uint32) ib.PS {
	t = d.contextUse(c, t, n)
	c.slots[c.mru].dirty = true
	return t
}

// contextMiss is contextUse's miss: the evicted context's write-back, if
// the miss evicted a modified one, and the read. The write-back is a
// posted write of the context's bytes issued at the miss, or when the
// victim's own read completes if that is later (its content is not on
// chip before). The read request issued at t does not pass a posted write
// issued at or before it (PCIe ordering: PCIe.Read), so it waits for the
// write-back's TLP on the upstream direction. A context only read since
// it came on chip (lru.modified never called) is dropped: ICM's copy is
// current.
//
//go:noinline
func (d *Device) contextMiss(c *ContextCache, t ib.PS, n uint32) ib.PS {
	if c.evicted {
		c.evicted = false
		c.WriteBacks++
		wb := max(t, c.victimReady)
		if _, booked := d.PCIe.Post(wb, c.bytes, WriteNote{Kind: writeContext}); !booked {
			d.flushAt(wb)
		}
	}
	done := d.PCIe.Read(t, ContextAddr(c.base, n, c.bytes), c.bytes)
	c.fill(n, done)
	return done
}
