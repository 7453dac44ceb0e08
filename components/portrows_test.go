package components

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPortRowsWidth: a row is the fewest 64-bit words that hold its
// members, ⌈members/64⌉: one word up to radix 64, two at 65, four at 256.
func TestPortRowsWidth(t *testing.T) {
	for _, tc := range []struct{ members, words int }{{1, 1}, {16, 1}, {64, 1}, {65, 2}, {128, 2}, {129, 3}, {256, 4}} {
		r := NewPortRows(3, tc.members)
		assert.Equal(t, tc.words, r.Words(), "members %d", tc.members)
		assert.Equal(t, 3, r.Rows())
		assert.Len(t, r.w, 3*tc.words, "members %d: the table is rows × words", tc.members)
	}
	assert.Panics(t, func() { NewPortRows(1, 0) })
	assert.Panics(t, func() { NewPortRows(1, MaxPorts+1) })
}

// TestPortRowsNeighbours: a member of one row is no member of the next,
// at the last bit of a one-word row (63, beside the next row's 0) and
// across the words of a wide row; a member past the row's words is not
// read from, nor written to, the next row.
func TestPortRowsNeighbours(t *testing.T) {
	r := NewPortRows(3, 16)
	r.Set(1, 63)
	r.Set(1, 0)
	assert.False(t, r.Any(0))
	assert.False(t, r.Any(2))
	assert.Equal(t, 2, r.Count(1))
	assert.True(t, r.Has(1, 63))
	assert.False(t, r.Has(2, 0))
	// Member 64 of row 0 would be bit 0 of row 1's word, which is set:
	// Has says no, Set panics.
	assert.False(t, r.Has(0, 64))
	assert.False(t, r.Has(0, -1))
	assert.Panics(t, func() { r.Set(0, 64) })
	assert.Panics(t, func() { r.Set(0, -1) })

	w := NewPortRows(2, 256)
	w.Set(0, 255)
	w.Set(1, 64)
	assert.True(t, w.Has(0, 255))
	assert.False(t, w.Has(1, 255))
	assert.Equal(t, 64, w.Row(1).NextAtOrAfter(0))
	w.ClearRow(0)
	assert.False(t, w.Any(0))
	assert.True(t, w.Any(1), "clearing row 0 left row 1")
}

// TestPortRowsModel: random operations on rows of every width agree with
// the same operations on a slice of PortSets, the type whose behaviour
// rows keep (members below 64·Words(); PortRowsOf drops the others).
func TestPortRowsModel(t *testing.T) {
	for _, members := range []int{1, 16, 63, 64, 65, 100, 200, 256} {
		rng := rand.New(rand.NewPCG(uint64(members), 7))
		const rows = 5
		r := NewPortRows(rows, members)
		model := make([]PortSet, rows)
		for step := 0; step < 2000; step++ {
			row, i := rng.IntN(rows), rng.IntN(members)
			switch rng.IntN(6) {
			case 0, 1:
				r.Set(row, i)
				model[row].Set(i)
			case 2:
				assert.Equal(t, model[row].Has(i), r.Has(row, i))
			case 3:
				if rng.IntN(8) == 0 {
					r.ClearRow(row)
					model[row] = PortSet{}
				}
			case 4:
				var s PortSet
				for k := rng.IntN(4); k > 0; k-- {
					s.Set(rng.IntN(members))
				}
				r.AndNot(row, s)
				for w := range model[row] {
					model[row][w] &^= s[w]
				}
			case 5:
				var s PortSet
				for k := rng.IntN(6); k > 0; k-- {
					s.Set(rng.IntN(members))
				}
				r.SetRow(row, s)
				model[row] = s
			}
			assert.Equal(t, model[row], r.Row(row), "members %d step %d", members, step)
			assert.Equal(t, model[row].Count(), r.Count(row))
			assert.Equal(t, model[row].Any(), r.Any(row))
		}
		assert.Equal(t, model, rowsAsSets(r), "members %d", members)
		assert.Equal(t, model, rowsAsSets(PortRowsOf(model, members)))
	}
	// PortRowsOf keeps what the rows' words hold: members 0..63 of a
	// one-word row, dropping 64 and 255.
	var s PortSet
	for _, i := range []int{3, 63, 64, 255} {
		s.Set(i)
	}
	r := PortRowsOf([]PortSet{s}, 16)
	assert.Equal(t, 2, r.Count(0))
	assert.True(t, r.Has(0, 63))
}

func rowsAsSets(r PortRows) []PortSet {
	out := make([]PortSet, r.Rows())
	for i := range out {
		out[i] = r.Row(i)
	}
	return out
}
