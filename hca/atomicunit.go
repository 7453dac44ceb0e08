package hca

import "github.com/hcasim/hcasim/ib"

// atomicUnit serialises atomics on one 8-byte word. The responder executes
// an atomic as a PCIe read of the word and a posted write of its new value
// (Device.atomic); a second atomic on the same word must read what the
// first wrote, so its read request may go upstream only once the first's
// write is on the link ahead of it (PCIe: a read does not pass a posted
// write issued before it). Atomics on different words overlap, each QP's
// limited by max_rd_atomic. Which words a real HCA serialises — only the
// same word, or words that share a lock bucket — is not published for
// ConnectX; the model takes the exact word.
//
// Held words are few (at most the atomics in flight), so a short slice
// scanned per atomic serves; entries whose write left before now are
// dropped as the slice is walked.
type atomicUnit struct {
	held []heldWord
}

// heldWord is one word whose last atomic's write leaves the HCA's PCIe
// link at free.
type heldWord struct {
	va   uint64 // 8-byte aligned host virtual address
	free ib.PS  // when the write of the word's last atomic has left the link
}

// wait returns when an atomic on va, ready at t, may issue its read.
func (u *atomicUnit) wait(va uint64, t, now ib.PS) ib.PS {
	va &^= 7
	kept := u.held[:0]
	for _, h := range u.held {
		if h.free <= now {
			continue
		}
		if h.va == va {
			t = max(t, h.free)
		}
		kept = append(kept, h)
	}
	clear(u.held[len(kept):])
	u.held = kept
	return t
}

// hold records that va's last atomic writes until free.
func (u *atomicUnit) hold(va uint64, free ib.PS) {
	va &^= 7
	for i := range u.held {
		if u.held[i].va == va {
			u.held[i].free = max(u.held[i].free, free)
			return
		}
	}
	u.held = append(u.held, heldWord{va: va, free: free})
}
