package components

import (
	"iter"
	"math/bits"
)

// MaxPorts is the largest input, port or VL index set a PortSet holds: IBA 1.6
// allows 256-port switches (ib-facts.md §4, "Radix").
const MaxPorts = 256

// PortSet is a set of small indices (inputs, ports, VLs), bit i = member i,
// for i < MaxPorts. It is a value type: copying it copies the set, and it
// never allocates, so arbiters can take and return it on the hot path.
type PortSet [4]uint64

// Set adds i to the set. It panics if i is outside [0, MaxPorts).
func (s *PortSet) Set(i int) {
	checkPortIndex(i)
	s[i>>6] |= 1 << (uint(i) & 63)
}

// Clear removes i from the set. It panics if i is outside [0, MaxPorts).
func (s *PortSet) Clear(i int) {
	checkPortIndex(i)
	s[i>>6] &^= 1 << (uint(i) & 63)
}

// Has reports whether i is in the set; an index outside [0, MaxPorts) is never
// a member.
func (s PortSet) Has(i int) bool {
	if i < 0 || i >= MaxPorts {
		return false
	}
	return s[i>>6]&(1<<(uint(i)&63)) != 0
}

// Any reports whether the set has at least one member.
func (s PortSet) Any() bool { return s[0]|s[1]|s[2]|s[3] != 0 }

// Count returns the number of members.
func (s PortSet) Count() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) +
		bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
}

// All yields the members in increasing order, from the words as they were
// when the loop began: for i := range s.All() { ... }. It is the cheap way
// to walk a set (a word at a time, lowest bit first) when the loop does
// not add members ahead of itself.
func (s PortSet) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for w, word := range s {
			for ; word != 0; word &= word - 1 {
				if !yield(w<<6 | bits.TrailingZeros64(word)) {
					return
				}
			}
		}
	}
}

// NextAtOrAfter returns the smallest member >= from, or -1 if there is none.
// from may be negative (treated as 0).
func (s PortSet) NextAtOrAfter(from int) int {
	if from < 0 {
		from = 0
	}
	for w := from >> 6; w < len(s); w++ {
		word := s[w]
		if w == from>>6 {
			word &^= (1 << (uint(from) & 63)) - 1
		}
		if word != 0 {
			return w<<6 + bits.TrailingZeros64(word)
		}
	}
	return -1
}

// Bits returns the low n members as a little-endian bit string of n bits, one
// bit per index, for traces: index i is character n-1-i ("0"/"1"), so the
// string reads like a Verilog vector literal [n-1:0].
func (s PortSet) Bits(n int) string {
	b := make([]byte, n)
	for i := 0; i < n; i++ {
		c := byte('0')
		if s.Has(i) {
			c = '1'
		}
		b[n-1-i] = c
	}
	return string(b)
}

// checkPortIndex panics with a value, not a message built in place, so
// that Set and Clear stay small enough to inline.
func checkPortIndex(i int) {
	if uint(i) >= MaxPorts {
		panic(indexError(i))
	}
}

// indexError is a PortSet index outside [0, MaxPorts).
type indexError int

func (e indexError) Error() string {
	return "components.PortSet: index " + itoa(int(e)) + " outside [0, 256)"
}

// itoa avoids strconv in panic paths that must not allocate on the hot path
// unless they fire.
func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b [20]byte
	p := len(b)
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		p--
		b[p] = '-'
	}
	return string(b[p:])
}
