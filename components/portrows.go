package components

import "math/bits"

// PortRows is a table of port sets of one width, stored row after row in one
// slice: row r is words w[r*Words() : (r+1)*Words()], bit i of the row is
// member i. The width is the fewest 64-bit words that hold the members a
// row may have (NewPortRows), so a radix-16 or radix-64 switch keeps a set
// in one word where a PortSet takes four.
//
// It is what the crossbar allocators and a switch's allocation rounds keep
// per input and per output: at 1,024 hosts the fabric outgrows the caches,
// and the 24 bytes of a PortSet a radix-16 switch never uses were a third
// of its round state (docs/performance-data.md, twenty-first session). A
// PortRows is a value holding a slice: copies share the rows.
type PortRows struct {
	w     []uint64
	words int // words per row, 1..MaxPorts/64
}

// NewPortRows returns rows empty sets that hold members 0..members-1
// (members in [1, MaxPorts]). It panics otherwise: a size is our choice,
// never a user's.
func NewPortRows(rows, members int) PortRows {
	if rows < 0 || members < 1 || members > MaxPorts {
		panic("components.NewPortRows: rows " + itoa(rows) + ", members " + itoa(members) + " outside [1, 256]")
	}
	words := (members + 63) >> 6
	return PortRows{w: make([]uint64, rows*words), words: words}
}

// PortRowsOf returns the sets as rows that hold members 0..members-1; a
// member of a set at members or above is dropped. For tests and tools that
// build their requests as PortSets; it allocates.
func PortRowsOf(sets []PortSet, members int) PortRows {
	r := NewPortRows(len(sets), members)
	for row := range sets {
		r.SetRow(row, sets[row])
	}
	return r
}

// Rows returns the number of rows.
func (r PortRows) Rows() int {
	if r.words == 0 {
		return 0
	}
	return len(r.w) / r.words
}

// Words returns the 64-bit words per row.
func (r PortRows) Words() int { return r.words }

// Has reports whether row holds member i; a member outside
// [0, 64·Words()) is never held (as PortSet.Has).
func (r PortRows) Has(row, i int) bool {
	k := uint(i) >> 6
	if k >= uint(r.words) {
		return false
	}
	return r.w[uint(row*r.words)+k]&(1<<(uint(i)&63)) != 0
}

// Set adds member i to row; it panics if i is outside [0, 64·Words()),
// where it would land in another row.
func (r PortRows) Set(row, i int) {
	k := uint(i) >> 6
	if k >= uint(r.words) {
		panic(memberError{i, r.words})
	}
	r.w[uint(row*r.words)+k] |= 1 << (uint(i) & 63)
}

// memberError is Set's panic: a value, so that Set stays small enough to
// inline; the message is built only if it fires.
type memberError struct{ member, words int }

func (e memberError) Error() string {
	return "components.PortRows: member " + itoa(e.member) + " outside [0, " + itoa(e.words<<6) + ")"
}

// ClearRow empties row.
func (r PortRows) ClearRow(row int) {
	if r.words == 1 {
		r.w[row] = 0
		return
	}
	clear(r.w[row*r.words : (row+1)*r.words])
}

// Any reports whether row has a member.
func (r PortRows) Any(row int) bool {
	if r.words == 1 {
		return r.w[row] != 0
	}
	var or uint64
	for _, x := range r.w[row*r.words : (row+1)*r.words] {
		or |= x
	}
	return or != 0
}

// Count returns the number of members of row.
func (r PortRows) Count(row int) int {
	if r.words == 1 {
		return bits.OnesCount64(r.w[row])
	}
	n := 0
	for _, x := range r.w[row*r.words : (row+1)*r.words] {
		n += bits.OnesCount64(x)
	}
	return n
}

// Word returns word w of row, its members 64w to 64w+63 (w < Words()): a
// loop over a row's words and their bits walks no words a PortSet has
// beyond the row's.
func (r PortRows) Word(row, w int) uint64 { return r.w[row*r.words+w] }

// Row returns row as a PortSet (a copy), to walk with All or hand to a
// RoundRobin.
func (r PortRows) Row(row int) PortSet {
	var s PortSet
	if r.words == 1 {
		s[0] = r.w[row]
		return s
	}
	copy(s[:], r.w[row*r.words:(row+1)*r.words])
	return s
}

// SetRow makes row equal s, less any member at 64·Words() or above.
func (r PortRows) SetRow(row int, s PortSet) {
	copy(r.w[row*r.words:(row+1)*r.words], s[:r.words])
}

// AndNot removes the members of s from row.
func (r PortRows) AndNot(row int, s PortSet) {
	if r.words == 1 {
		r.w[row] &^= s[0]
		return
	}
	for w := range r.words {
		r.w[row*r.words+w] &^= s[w]
	}
}
