package hca

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// MTTEntryBytes is the size of one MTT entry, the translation of one page
// of a registered region to a bus address: the mlx5 PRM's struct mlx5_mtt
// (Linux include/linux/mlx5/device.h) is one __be64 ptag.
const MTTEntryBytes = 8

// MTTCache is the HCA's address-translation cache: the MTT entries of the
// pages its DMAs touched, least recently used out (hca.mtt_cache_entries).
// Entries are tagged by virtual page number: real MTTs belong to a region,
// which differs only when one page is registered twice.
type MTTCache struct {
	lru[uint64]
	// EntriesRead counts the MTT entries read from host memory: each read
	// spans the first to the last page a translation missed, so it can
	// exceed Misses when a page inside that span hit.
	EntriesRead int64
}

// MTTCache returns the address-translation cache, nil when translation is
// not modelled (hca.mtt_cache_entries 0).
func (d *Device) MTTCache() *MTTCache { return d.mtt }

// MTTBase is the bus address at which the model puts the MTTs in ICM:
// region i's entries, one per page from the page of its first byte, at
// MTTBase + i << 32, so each region's MTT starts 4 KiB-aligned (MRRS ≤
// 4096 divides it) and a read of its entries splits where the region's
// page index crosses a multiple of MRRS / 8 (64 pages at MRRS 512).
// ConnectX's placement is the firmware's and not published; mlx4 allocates
// a region's MTT from a buddy allocator (mlx4_alloc_mtt_range), naturally
// aligned to its power-of-two size, which splits the region's reads the
// same way. 2^32 bytes of entries per region: 2^29 pages.
const MTTBase = 1<<60 + 1<<58

// mttEntryAddr returns the bus address of the MTT entry of virtual page
// vpn (page number at hca.mtt_page_bytes) of the region whose key is key.
func (d *Device) mttEntryAddr(key uint32, vpn uint64) uint64 {
	if r, ok := d.Keys.regionKey(key); ok {
		key = r // a memory window's accesses use its region's MTT
	}
	mr := d.Keys.lookup(key)
	if mr == nil {
		// translate follows a key check that passed, and the device never
		// deregisters a region.
		panic(fmt.Sprintf("hca: %s: MTT read for key %#x, which names no region", d.Name, key))
	}
	return MTTBase + uint64(key>>8)<<32 + (vpn-mr.Addr>>d.pageShift)*MTTEntryBytes
}

// unread marks, within one translate, an entry it missed and whose read it
// has yet to issue.
const unread ib.PS = -1

// translate returns when the MTT entries of the pages that [addr, addr+n)
// touches are on chip, asked for at t; key is the region's, which passed
// its check (its MTT's address, MTTBase). The HCA translates a range when it
// has checked the key that covers it: a gather element at WQE decode, a
// WRITE's or READ's remote range at the message's first packet (its later
// packets then DMA without further lookups), an atomic's 8 bytes; and, as
// it scatters, the bytes each SEND packet or UD datagram writes into its
// receive buffer, at that packet. Pages not cached are read from host memory
// (ICM) in one PCIe read of the entries from the first missing page to
// the last, issued at t through the same PCIe model as the payload (a tag,
// request TLPs up, the read latency, completions down), so translations
// take PCIe bandwidth from payload reads; a page whose entry is still
// being read waits for that read.
func (d *Device) translate(t ib.PS, key uint32, addr, n uint64) ib.PS {
	c := d.mtt
	if c == nil || n <= 0 {
		return t
	}
	first, last := addr>>d.pageShift, (addr+n-1)>>d.pageShift
	// One pass decides hit or miss as it allocates: a range with more
	// pages than the cache has entries evicts its own pages as it goes, so
	// which pages miss can only be known in the order they are looked up.
	lo, hi := last+1, first // the missing pages' span; empty when lo > hi
	ready := t
	for p := first; p <= last; p++ {
		if hit, at := c.lookup(p); hit {
			ready = max(ready, at)
		} else {
			lo, hi = min(lo, p), max(hi, p)
			c.fill(p, unread)
		}
	}
	if lo > hi {
		return ready
	}
	c.EntriesRead += int64(hi - lo + 1)
	done := d.PCIe.Read(t, d.mttEntryAddr(key, lo), int(hi-lo+1)*MTTEntryBytes)
	for p := lo; p <= hi; p++ {
		// The pages this pass missed (and has not evicted since) arrive
		// with the read; a page of the span that hit keeps its own time.
		if i, ok := c.slot[p]; ok && c.slots[i].readyAt == unread {
			c.slots[i].readyAt = done
		}
	}
	return max(ready, done)
}
