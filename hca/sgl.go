package hca

// sglSlice appends to dst the pieces of the bytes [off, off+n) of the
// concatenation of sgl's elements, in order: each piece is the part of one
// element those bytes cover (its address advanced to the first byte, its
// length the bytes in it), elements of no byte in the range left out. The
// bytes past the list's end are not covered: the caller checks lengths.
// It is the gather (payload reads) and scatter (payload writes) rule of a
// WR with several scatter/gather elements.
func sglSlice(dst, sgl []SGE, off, n uint64) []SGE {
	var start uint64 // offset of the element's first byte in the message
	for _, e := range sgl {
		if n == 0 {
			break
		}
		end := start + uint64(e.Length)
		if off < end {
			skip := off - start
			take := min(uint64(e.Length)-skip, n)
			dst = append(dst, SGE{Addr: e.Addr + skip, Length: uint32(take), LKey: e.LKey})
			off += take
			n -= take
		}
		start = end
	}
	return dst
}
