package components

import "fmt"

// FIFO is a fixed-capacity first-in first-out ring: the Go model of a
// synchronous hardware FIFO (rtl/verilog/sync_fifo.v). All storage is
// allocated by NewFIFO; Push and Pop never allocate, so a FIFO can sit on a
// per-packet hot path.
//
// In one hardware cycle the emitted sync_fifo accepts a push only when it was
// not full at the start of the cycle and a pop only when it was not empty, so
// a full FIFO does not accept a push in the cycle it is popped. A caller that
// models that cycle does Pop before Push only after sampling Full.
type FIFO[T any] struct {
	slots []T // ring storage; len(slots) is the capacity in entries
	head  int // index of the oldest entry
	count int // entries held, 0..len(slots)
}

// NewFIFO returns an empty FIFO that holds up to capacity entries. It panics
// if capacity < 1.
func NewFIFO[T any](capacity int) *FIFO[T] {
	f := MakeFIFO[T](capacity)
	return &f
}

// MakeFIFO is NewFIFO as a value, for a block that keeps the FIFO's ends
// inside its own struct (in a line it touches anyway).
func MakeFIFO[T any](capacity int) FIFO[T] {
	if capacity < 1 {
		panic(fmt.Sprintf("components.NewFIFO: capacity %d, want >= 1", capacity))
	}
	return FIFO[T]{slots: make([]T, capacity)}
}

// Push appends v at the tail and reports true, or reports false and leaves
// the FIFO unchanged when it is full (back-pressure, not an error).
func (f *FIFO[T]) Push(v T) bool {
	if f.count == len(f.slots) {
		return false
	}
	tail := f.head + f.count
	if tail >= len(f.slots) {
		tail -= len(f.slots)
	}
	f.slots[tail] = v
	f.count++
	return true
}

// Pop removes and returns the oldest entry, or the zero value and false when
// the FIFO is empty. The vacated slot is zeroed so the ring keeps no stale
// references.
func (f *FIFO[T]) Pop() (T, bool) {
	var zero T
	if f.count == 0 {
		return zero, false
	}
	v := f.slots[f.head]
	f.slots[f.head] = zero
	f.head++
	if f.head == len(f.slots) {
		f.head = 0
	}
	f.count--
	return v, true
}

// Peek returns the oldest entry without removing it, or the zero value and
// false when the FIFO is empty.
func (f *FIFO[T]) Peek() (T, bool) {
	if f.count == 0 {
		var zero T
		return zero, false
	}
	return f.slots[f.head], true
}

// At returns the i-th oldest entry (0 = head) without removing it. It panics
// if i is outside [0, Len()).
func (f *FIFO[T]) At(i int) T {
	if i < 0 || i >= f.count {
		panic(fmt.Sprintf("components.FIFO.At: index %d outside [0, %d)", i, f.count))
	}
	j := f.head + i
	if j >= len(f.slots) {
		j -= len(f.slots)
	}
	return f.slots[j]
}

// Len returns the number of entries held.
func (f *FIFO[T]) Len() int { return f.count }

// Cap returns the capacity in entries.
func (f *FIFO[T]) Cap() int { return len(f.slots) }

// Full reports whether Push would be refused.
func (f *FIFO[T]) Full() bool { return f.count == len(f.slots) }

// Empty reports whether Pop would find nothing.
func (f *FIFO[T]) Empty() bool { return f.count == 0 }
