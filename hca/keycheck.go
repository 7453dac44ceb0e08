package hca

import (
	"fmt"
	"syscall"

	"github.com/hcasim/hcasim/ib"
)

// Access flags of a memory region (ibv_access_flags, ib-facts.md §6).
const (
	AccessLocalWrite   = 1
	AccessRemoteWrite  = 2
	AccessRemoteRead   = 4
	AccessRemoteAtomic = 8
	// AccessMWBind lets memory windows be bound to the region
	// (IBV_ACCESS_MW_BIND, C10-73).
	AccessMWBind = 16
	// AccessZeroBased makes a type 2 window's bind zero-based
	// (IBV_ACCESS_ZERO_BASED): a remote address is an offset from the
	// window's first byte (mw.go). Regions do not take it here.
	AccessZeroBased = 32
)

// KeyResult is the outcome of a key check.
type KeyResult uint8

// Key check outcomes. Each failure names the rule it broke (rxe_resp.c
// RESPST_CHK_RKEY order: valid key, PD, access, bounds; ib-facts.md §6).
const (
	KeyOK KeyResult = iota
	KeyInvalid
	KeyPDMismatch
	KeyAccessDenied
	KeyOutOfBounds
	// KeyQPMismatch: the R_Key names a type 2 memory window bound to
	// another QP (rxe_lookup_mw: mw->qp != qp).
	KeyQPMismatch
)

var keyResultNames = [...]string{"pass", "invalid_key", "pd_mismatch", "access_denied", "out_of_bounds", "qp_mismatch"}

// String returns the result's trace name.
func (r KeyResult) String() string { return keyResultNames[r] }

// MR is an MPT entry: a registered memory region or, with Window set, a
// memory window (mw.go).
type MR struct {
	Addr   uint64 // first byte, host virtual address
	Length uint64 // bytes
	Access int    // Access* flags; local read is always allowed
	PD     uint32 // protection domain handle
	LKey   uint32 // index << 8 | key
	RKey   uint32 // equal to LKey (mlx5 uses one mkey for both)
	// valid: a region is registered; a window is bound (rxe
	// RXE_MW_STATE_VALID): an unbound window's key resolves to nothing.
	valid bool
	// Window is the entry's memory window type, 0 for a region. A
	// window's Addr, Length and Access are those of its bind.
	Window MWType
	// qpn is the QP a bound type 2 window is bound to: only requests
	// arriving on it may use the window (rxe_lookup_mw).
	qpn uint32
	// region is a bound window's region, its index in the table: the MR
	// whose translation the window's accesses use.
	region uint32
	// windows counts the windows bound to a region (rxe mr->num_mw): a
	// region with windows cannot be deregistered nor invalidated.
	windows int32
	// frPages is a fast-registration region's page-list capacity
	// (ib_alloc_mr's max_num_sg), 0 for any other entry (fastreg.go).
	frPages uint32
}

// KeyTable is the HCA's memory protection table: entries by 24-bit index.
type KeyTable struct {
	entries []MR
}

// Register adds a region and returns its keys: index (24 bit) << 8 | an
// 8-bit variant (ib-facts.md §6). The variant is derived from the index so
// runs are reproducible, and is never 0 so a zero key is never valid.
func (t *KeyTable) Register(pd uint32, addr, length uint64, access int) MR {
	idx := uint32(len(t.entries))
	if idx >= 1<<24 {
		panic(fmt.Sprintf("hca: key table full at %d entries", idx))
	}
	variant := uint32(idx*37+0x5b)&0xff | 1
	key := idx<<8 | variant
	mr := MR{Addr: addr, Length: length, Access: access, PD: pd, LKey: key, RKey: key, valid: true}
	t.entries = append(t.entries, mr)
	return mr
}

// Deregister invalidates the region with key. A region that memory
// windows are bound to is refused (rxe_dereg_mr: "attempt to dereg an MR
// that is still bound to memory windows", EINVAL), as is a key that names
// no live region.
func (t *KeyTable) Deregister(key uint32) error {
	_, _, err := t.deregister(key)
	return err
}

// deregister is Deregister; for a fast-registration region it also
// returns the mapping the region had (length 0 when it was FREE), whose
// translations must leave the MTT cache. A fast-registration region is
// found by its index, as the handle names it (ib_dereg_mr takes the MR,
// not a key), FREE or mapped; deregistered, it can be neither mapped nor
// deregistered again (frPages 0).
func (t *KeyTable) deregister(key uint32) (addr, length uint64, err error) {
	if idx := key >> 8; int64(idx) < int64(len(t.entries)) && t.entries[idx].frPages > 0 {
		e := &t.entries[idx]
		if e.windows > 0 {
			return 0, 0, fmt.Errorf("hca: dereg_mr: region %#x has %d memory windows bound: %w", e.LKey, e.windows, syscall.EINVAL)
		}
		if e.valid {
			addr, length = e.Addr, e.Length
		}
		e.valid, e.frPages = false, 0
		return addr, length, nil
	}
	return 0, 0, t.deregisterPlain(key)
}

// deregisterPlain deregisters a region registered with Register.
func (t *KeyTable) deregisterPlain(key uint32) error {
	e := t.lookup(key)
	if e == nil || e.Window != 0 {
		return fmt.Errorf("hca: dereg_mr: key %#x names no registered region: %w", key, syscall.EINVAL)
	}
	if e.windows > 0 {
		return fmt.Errorf("hca: dereg_mr: region %#x has %d memory windows bound: %w", key, e.windows, syscall.EINVAL)
	}
	e.valid = false
	return nil
}

// Entry returns the MPT entry at index idx and whether it holds a live
// region (registered, not deregistered): what an MPT read returns to the
// key-check unit (rtl hca_key_check reads it so in co-simulation).
func (t *KeyTable) Entry(idx uint32) (MR, bool) {
	if int64(idx) >= int64(len(t.entries)) {
		return MR{}, false
	}
	e := t.entries[idx]
	// A window is not a region the RTL's key check knows (docs/rtl.md).
	return e, e.valid && e.Window == 0
}

func (t *KeyTable) lookup(key uint32) *MR {
	idx := key >> 8
	if int(idx) >= len(t.entries) {
		return nil
	}
	e := &t.entries[idx]
	if !e.valid || e.LKey != key {
		return nil
	}
	return e
}

// Check checks key for an access of length bytes at addr needing the access
// flags need (0 for a local read) from protection domain pd: an L_Key, or
// the R_Key of a region. A window's key is not an L_Key (a window grants
// remote access only, IBA 10.6.7): it is invalid here (CheckRemote).
func (t *KeyTable) Check(key, pd uint32, need int, addr, length uint64) KeyResult {
	e := t.lookup(key)
	if e == nil || e.Window != 0 {
		return KeyInvalid
	}
	return e.grants(pd, need, addr, length)
}

// grants checks an access by the entry's own rules, in rxe's order:
// protection domain, access flags, then bounds (a wrap past 2^64 is out).
func (e *MR) grants(pd uint32, need int, addr, length uint64) KeyResult {
	if e.PD != pd {
		return KeyPDMismatch
	}
	if e.Access&need != need {
		return KeyAccessDenied
	}
	if addr < e.Addr || addr+length > e.Addr+e.Length || addr+length < addr {
		return KeyOutOfBounds
	}
	return KeyOK
}

// MKeyContextBytes is the size of one memory key's context, the entry a
// key-cache miss reads from host memory (ICM): the mlx5 PRM's MKey context,
// struct mlx5_ifc_mkc_bits in Linux include/linux/mlx5/mlx5_ifc.h, whose
// last field ends at bit 0x200 (reserved_at_1e0[0x20]): 512 bits. It holds
// the access flags, PD, start address, length and the translation size;
// the MTT entries that translate an address are another table, not read on
// a miss here (docs/hca.md).
const MKeyContextBytes = 64

// MPTBase is the bus address at which the model puts the MPT, the table of
// MKey contexts in ICM (host memory the HCA owns, outside HostMemory):
// context i at MPTBase + i × MKeyContextBytes, i the key's index (key >>
// 8, the index the RTL's hca_key_check reads, mpt_req_index = key[31:8]).
// ConnectX's ICM layout is not published; a table of 64-byte entries from
// a page-aligned base is the assumption. Every context is then 64-byte
// aligned, inside one MRRS unit (MRRS ≥ 128), so its read is one request
// wherever the table lies.
const MPTBase = 1 << 60

// MKeyContextAddr returns the bus address of key's MKey context, what a
// key-cache miss reads (MPTBase).
func MKeyContextAddr(key uint32) uint64 {
	return MPTBase + uint64(key>>8)*MKeyContextBytes
}

// KeyCache is the HCA's key cache: the MPT entries (key contexts) it
// holds on chip, least recently used out, each with the time its context
// arrives (an entry is allocated at the miss and filled when its read
// completes). Entries are keyed by the key's index (its upper 24 bits):
// the 8-bit variant does not select another context.
type KeyCache struct{ lru[uint32] }

// NewKeyCache returns an empty cache of capacity entries.
func NewKeyCache(capacity int) *KeyCache { return &KeyCache{newLRU[uint32](capacity)} }

// Access looks key's index up and reports whether it hit; a miss allocates
// it, evicting the least recently used entry when full, ready at once
// unless Fill says when its context arrives.
func (c *KeyCache) Access(key uint32) bool {
	hit, _ := c.Lookup(key)
	return hit
}

// Lookup is Access that also returns, on a hit, when the entry's context
// is on chip: a hit on an entry whose miss is still being read waits for
// that read rather than reading again.
func (c *KeyCache) Lookup(key uint32) (hit bool, readyAt ib.PS) { return c.lru.lookup(key >> 8) }

// Fill records when the context of key, just missed, arrives on chip.
func (c *KeyCache) Fill(key uint32, readyAt ib.PS) { c.lru.fill(key>>8, readyAt) }
