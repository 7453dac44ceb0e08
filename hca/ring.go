package hca

import "github.com/hcasim/hcasim/components"

// ring is a first-in first-out queue on a components.FIFO that grows by
// doubling when full and never shrinks: after its first pushes it stays at
// the most it has held, and a push or pop allocates nothing. It stands for
// the queues of the receive path that a slice re-sliced at its front and
// appended to modelled before, re-allocating each time the append reached
// the backing array's end (once per message at one message in flight):
//
//   - the on-chip cache of prefetched receive WQEs, an RQ's (QP.rqCache)
//     or an SRQ's (SRQ.cache): at most the prefetch window,
//     hca.wqe_prefetch_depth 64-byte blocks of WQEs, since a read issues
//     only for room in the window beyond the next WQE to take, and a
//     read's WQEs taken meanwhile are not kept (RecvReadStride, srqFetch);
//   - the CQEs posted to PCIe, not yet visible (Device.cqeQ).
//
// The storage is made at the first push, for the size the caller expects
// (a QP that never receives keeps none).
type ring[T any] struct {
	fifo components.FIFO[T]
}

// push puts v at the tail; the first push makes room for size entries.
func (r *ring[T]) push(v T, size int) {
	if r.fifo.Cap() == 0 {
		r.fifo = components.MakeFIFO[T](max(1, size))
	}
	if r.fifo.Push(v) {
		return
	}
	grown := components.MakeFIFO[T](2 * r.fifo.Cap())
	for {
		w, ok := r.fifo.Pop()
		if !ok {
			break
		}
		grown.Push(w)
	}
	grown.Push(v)
	r.fifo = grown
}

// len returns the entries held.
func (r *ring[T]) len() int { return r.fifo.Len() }

// front returns the oldest entry, false when none.
func (r *ring[T]) front() (T, bool) { return r.fifo.Peek() }

// pop removes and returns the oldest entry, false when none.
func (r *ring[T]) pop() (T, bool) { return r.fifo.Pop() }

// clear drops every entry, keeping the storage.
func (r *ring[T]) clear() {
	for r.fifo.Len() > 0 {
		r.fifo.Pop()
	}
}
