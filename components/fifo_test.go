package components

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFIFOOrderAndCapacity(t *testing.T) {
	for _, capacity := range []int{1, 3, 8} {
		f := NewFIFO[int](capacity)
		require.True(t, f.Empty())
		// Fill to capacity; the next push is refused.
		for i := 0; i < capacity; i++ {
			require.True(t, f.Push(i))
		}
		assert.True(t, f.Full())
		assert.False(t, f.Push(99))
		assert.Equal(t, capacity, f.Len())
		assert.Equal(t, capacity, f.Cap())
		// Pop half, push more, so the ring wraps; order is preserved.
		next := 0
		for i := 0; i < (capacity+1)/2; i++ {
			v, ok := f.Pop()
			require.True(t, ok)
			assert.Equal(t, next, v)
			next++
		}
		pushed := capacity
		for !f.Full() {
			require.True(t, f.Push(pushed))
			pushed++
		}
		head, ok := f.Peek()
		require.True(t, ok)
		assert.Equal(t, next, head)
		assert.Equal(t, next+1 < pushed, f.Len() > 1)
		if f.Len() > 1 {
			assert.Equal(t, next+1, f.At(1))
		}
		for !f.Empty() {
			v, _ := f.Pop()
			assert.Equal(t, next, v)
			next++
		}
		assert.Equal(t, pushed, next, "every pushed value popped once, in order")
		_, ok = f.Pop()
		assert.False(t, ok)
		_, ok = f.Peek()
		assert.False(t, ok)
	}
	assert.Panics(t, func() { NewFIFO[int](0) })
}

func TestFIFONoAllocation(t *testing.T) {
	f := NewFIFO[[2]int](4)
	allocs := testing.AllocsPerRun(100, func() {
		f.Push([2]int{1, 2})
		f.Pop()
	})
	assert.Zero(t, allocs)
}
