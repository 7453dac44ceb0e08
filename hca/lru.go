package hca

import "github.com/hcasim/hcasim/ib"

// lru is an on-chip cache of context entries (key contexts, address
// translations), least recently used out, each with the time its content
// arrives: an entry is allocated at the miss and filled when its read
// completes, so a lookup meanwhile hits and waits for the same read. The
// entries sit in a fixed array of capacity slots on a doubly linked list
// in order of use (most recent first), so a hit and an eviction are O(1)
// and the victim is exactly the least recently used entry.
type lru[K comparable] struct {
	capacity int
	slot     map[K]int32 // tag → slot
	slots    []lruEntry[K]
	mru, lru int32 // ends of the use list; -1 when empty
	Hits     int64
	Misses   int64
	// evicted is set by a lookup that evicted a modified entry (modified),
	// with the time its content had arrived (victimReady): the context
	// caches write it back (ctxcache.go); the others never modify an
	// entry.
	evicted     bool
	victimReady ib.PS
}

// lruEntry is one cached entry.
type lruEntry[K comparable] struct {
	tag        K
	prev, next int32 // neighbours on the use list (prev: more recent)
	readyAt    ib.PS // when the content is on chip (its read's completion); 0 = at once
	// dirty: a use modified the content since it came on chip, so ICM's
	// copy is stale until it is written back (ContextCache).
	dirty bool
}

func newLRU[K comparable](capacity int) lru[K] {
	return lru[K]{capacity: capacity, slot: make(map[K]int32, capacity),
		slots: make([]lruEntry[K], 0, capacity), mru: -1, lru: -1}
}

// unlink takes slot i off the use list.
func (c *lru[K]) unlink(i int32) {
	e := &c.slots[i]
	if e.prev >= 0 {
		c.slots[e.prev].next = e.next
	} else {
		c.mru = e.next
	}
	if e.next >= 0 {
		c.slots[e.next].prev = e.prev
	} else {
		c.lru = e.prev
	}
}

// pushFront puts slot i at the most recent end of the use list.
func (c *lru[K]) pushFront(i int32) {
	e := &c.slots[i]
	e.prev, e.next = -1, c.mru
	if c.mru >= 0 {
		c.slots[c.mru].prev = i
	} else {
		c.lru = i
	}
	c.mru = i
}

// lookup reports whether tag is cached and, if so, when its content is on
// chip; a miss allocates it, evicting the least recently used entry when
// full, ready at once unless fill says when its content arrives.
func (c *lru[K]) lookup(tag K) (hit bool, readyAt ib.PS) {
	if i, ok := c.slot[tag]; ok {
		c.Hits++
		if i != c.mru {
			c.unlink(i)
			c.pushFront(i)
		}
		return true, c.slots[i].readyAt
	}
	c.Misses++
	var i int32
	if len(c.slots) < c.capacity {
		i = int32(len(c.slots))
		c.slots = append(c.slots, lruEntry[K]{})
	} else {
		i = c.lru
		c.evicted, c.victimReady = c.slots[i].dirty, c.slots[i].readyAt
		delete(c.slot, c.slots[i].tag)
		c.unlink(i)
	}
	c.slots[i] = lruEntry[K]{tag: tag}
	c.slot[tag] = i
	c.pushFront(i)
	return false, 0
}

// fetch is an access to tag's context asked for at t, where a miss reads n
// bytes at bus address addr from host memory (ICM) through p, a PCIe read
// like any other (a tag, a request TLP up, the read latency, completions
// down), and extra is on-chip time after it: it returns when the context
// is on chip. A hit is ready at t, or when the read that allocated the
// entry completes if that is later (a hit under the miss waits for the
// same read; no second read). The key cache uses it (keyCheck).
func (c *lru[K]) fetch(p *PCIe, t ib.PS, tag K, addr uint64, n int, extra ib.PS) ib.PS {
	if hit, readyAt := c.lookup(tag); hit {
		return max(t, readyAt)
	}
	return c.read(p, t, tag, addr, n, extra)
}

// read is fetch's miss: the read of tag's context, and its fill. Kept out
// of line so that fetch, inlined into keyCheck, adds little to a hit
// (scripts/instructions.sh: +0.2 % on bench/b2b-ndr-write-bw.yaml with the
// miss inlined, +0.1 % without).
//
//go:noinline
func (c *lru[K]) read(p *PCIe, t ib.PS, tag K, addr uint64, n int, extra ib.PS) ib.PS {
	done := p.Read(t, addr, n) + extra
	c.fill(tag, done)
	return done
}

// modified marks tag's entry, if cached, as modified by a use: its
// eviction writes it back (ContextCache). The entry is almost always the
// one just used, the most recent; a lookup of another tag between the use
// and the mark would make this find it by its tag.
func (c *lru[K]) modified(tag K) {
	if i := c.mru; i >= 0 && c.slots[i].tag == tag {
		c.slots[i].dirty = true
	} else if i, ok := c.slot[tag]; ok {
		c.slots[i].dirty = true
	}
}

// fill records when the content of tag, just missed, arrives on chip.
func (c *lru[K]) fill(tag K, readyAt ib.PS) {
	if i, ok := c.slot[tag]; ok {
		c.slots[i].readyAt = readyAt
	}
}

// drop takes tag out of the cache, if it is there (its content is stale:
// a fast-registration region invalidated), and reports whether it was.
// The last slot moves into the freed one, so the slots stay dense and the
// next miss refills without evicting.
func (c *lru[K]) drop(tag K) bool {
	i, ok := c.slot[tag]
	if !ok {
		return false
	}
	c.unlink(i)
	delete(c.slot, tag)
	if last := int32(len(c.slots) - 1); i != last {
		e := c.slots[last]
		c.slots[i] = e
		if e.prev >= 0 {
			c.slots[e.prev].next = i
		} else {
			c.mru = i
		}
		if e.next >= 0 {
			c.slots[e.next].prev = i
		} else {
			c.lru = i
		}
		c.slot[e.tag] = i
	}
	c.slots = c.slots[:len(c.slots)-1]
	return true
}
