package workload

import "slices"

// AlgTree is NCCL's double binary tree all-reduce (workload.algorithm:
// tree).
const AlgTree = "tree"

// btree returns rank's parent and children (-1: none) in NCCL's binary tree
// over n ranks rooted at 0 (the shape of ncclGetBtree, nccl
// src/graph/trees.cc, NCCL 2.4 on; the root's one child is its second, as
// from NCCL 2.7). Ranks are laid out in order and a rank's lowest set bit
// b says its height: odd ranks are leaves; rank r's parent is
// (r XOR b) | 2b, or r XOR b when that is past the last rank; its children
// are r − b/2 and the first of r + b/2, r + b/4, … that is a rank. Rank 0
// is the root, with the one child 2^(⌈log2 n⌉−1). The depth is ⌈log2 n⌉.
func btree(n, rank int) (up int, down [2]int) {
	bit := 1
	for bit < n && bit&rank == 0 {
		bit <<= 1
	}
	if rank == 0 {
		if n > 1 {
			return -1, [2]int{-1, bit >> 1}
		}
		return -1, [2]int{-1, -1}
	}
	up = rank ^ bit | bit<<1
	if up >= n {
		up = rank ^ bit
	}
	down = [2]int{-1, -1}
	if low := bit >> 1; low > 0 {
		down[0] = rank - low
		for ; low > 0 && rank+low >= n; low >>= 1 {
		}
		if low > 0 {
			down[1] = rank + low
		}
	}
	return up, down
}

// dtree returns rank's parent and children in tree t (0 or 1) of NCCL's
// double binary tree over n ranks (the shape of ncclGetDtree): tree 0 is
// btree; tree 1 is its mirror (rank r as n−1−r) when n is even and its
// shift by one (r as r−1 mod n) when n is odd. Either way a rank that is a
// leaf in one tree is, but for one rank when n is odd, inside the other,
// so the two trees' reductions load every rank's link about evenly.
func dtree(n, t, rank int) (up int, down [2]int) {
	if t == 0 {
		return btree(n, rank)
	}
	to, from := func(v int) int { return n - 1 - v }, func(r int) int { return n - 1 - r }
	if n%2 == 1 {
		to, from = func(v int) int { return (v + 1) % n }, func(r int) int { return (r - 1 + n) % n }
	}
	up, down = btree(n, from(rank))
	if up >= 0 {
		up = to(up)
	}
	for s, d := range down {
		if d >= 0 {
			down[s] = to(d)
		}
	}
	return up, down
}

// treeNode is a rank's place in one of the two trees.
type treeNode struct {
	up    int    // parent, -1 at the root
	down  [2]int // children, -1 where none
	depth int    // edges to the root
	side  int    // which of its parent's children it is (0, 1)
}

// doubleTree returns every rank's place in both trees of dtree.
func doubleTree(n int) (trees [2][]treeNode) {
	for t := range trees {
		nodes := make([]treeNode, n)
		for r := range nodes {
			nodes[r].up, nodes[r].down = dtree(n, t, r)
		}
		for r := range nodes {
			for a := nodes[r].up; a >= 0; a = nodes[a].up {
				nodes[r].depth++
			}
			if p := nodes[r].up; p >= 0 && nodes[p].down[1] == r {
				nodes[r].side = 1
			}
		}
		trees[t] = nodes
	}
	return trees
}

// TreeAllReduce returns NCCL's double binary tree all-reduce of bytes bytes
// over n ranks (NCCL 2.4 on; S. Jeaugey, "Massively Scale Your Deep
// Learning Training with NCCL 2.4", NVIDIA blog, 2019; the trees of
// dtree): the vector's two halves (chunk) go one to each tree. In each tree
// the ranks reduce up — a rank adds what each child sent into its own half
// and sends the sum to its parent — and the root's sum is broadcast back
// down, each rank storing it and passing it on to its children. The
// driver's slices pipeline both ways: a rank forwards a slice up once both
// children's have arrived and been added, and down once its parent's has
// landed, so with D = ⌈log2 n⌉ levels an 8-byte vector takes 2·D message
// latencies against the ring's 2(n−1). Every rank sends S/2 up in each
// tree and S/2 down to each child it has; inside one tree and a leaf in
// the other, it sends and receives 2S, about the ring's 2(n−1)/n·S.
//
// The schedule's steps are labels, not rounds: the reduction's come first,
// deepest level first, then the broadcast's, root first; each level of
// each tree takes two steps (a parent's two children in different ones, so
// no rank receives twice in a step). Every transfer of a rank has a lane
// of its own (Transfer.Lane), so a rank's two trees, and the reduction and
// broadcast of one, post independently of one another, as NCCL runs the
// trees on separate channels and a tree's up and down on separate threads.
// A rank's reduced receives land in places of their own (one per child a
// tree), S for a rank with two children in one tree.
func TreeAllReduce(n int, bytes int64) (Schedule, error) {
	if err := checkCollective(CollAllReduce, n, bytes); err != nil {
		return Schedule{}, err
	}
	s := Schedule{Op: CollAllReduce, Algorithm: AlgTree, Ranks: n, Bytes: bytes}
	trees := doubleTree(n)
	depth := 0
	for _, nodes := range trees {
		for _, nd := range nodes {
			depth = max(depth, nd.depth)
		}
	}
	var off, length [2]int64
	for t := range trees {
		off[t], length[t] = chunk(bytes, 2, t)
	}
	// upStep[t][r]: the step in which r's parent receives r's sum;
	// downStep[t][r]: the step in which r receives the tree's result.
	var upStep, downStep [2][]int
	land := make([]int64, n)
	// level adds the steps of one level of both trees, a step per tree and
	// side, calling x for each rank at that depth.
	level := func(at int, x func(t, r int, nd treeNode) Transfer) {
		for t, nodes := range trees {
			for side := range 2 {
				var step []Transfer
				for r, nd := range nodes {
					if nd.depth != at || nd.side != side {
						continue
					}
					tr := x(t, r, nd)
					tr.Step, tr.Offset, tr.Bytes = len(s.Steps), off[t], length[t]
					step = append(step, tr)
				}
				if len(step) > 0 {
					s.Steps = append(s.Steps, step)
				}
			}
		}
	}
	// waits sets x's WaitStep and WaitAlso to the steps given (-1: none).
	waits := func(x *Transfer, steps ...int) {
		x.WaitStep = NoWait
		for _, w := range steps {
			switch {
			case w < 0:
			case x.WaitStep == NoWait:
				x.WaitStep = w
			default:
				x.WaitAlso = append(x.WaitAlso, w)
			}
		}
	}
	childStep := func(t int, nd treeNode, c int) int {
		if nd.down[c] < 0 {
			return -1
		}
		return upStep[t][nd.down[c]]
	}
	for t := range trees {
		upStep[t], downStep[t] = make([]int, n), make([]int, n)
	}
	for at := depth; at >= 1; at-- {
		level(at, func(t, r int, nd treeNode) Transfer {
			x := Transfer{Src: r, Dst: nd.up, Reduce: true, Lane: 3 * t, Land: land[nd.up]}
			land[nd.up] += length[t]
			waits(&x, childStep(t, nd, 0), childStep(t, nd, 1))
			upStep[t][r] = len(s.Steps)
			return x
		})
	}
	for at := 1; at <= depth; at++ {
		level(at, func(t, r int, nd treeNode) Transfer {
			p := trees[t][nd.up]
			x := Transfer{Src: nd.up, Dst: r, Lane: 3*t + 1 + nd.side}
			if p.up < 0 { // the root sends its sum once its children's came
				waits(&x, childStep(t, p, 0), childStep(t, p, 1))
			} else {
				waits(&x, downStep[t][nd.up])
			}
			downStep[t][r] = len(s.Steps)
			return x
		})
	}
	s.Landing = slices.Max(land)
	return s, nil
}

// treeSliceBytes is the tree's slice when workload.slice_bytes is 0: NCCL's
// chunk for the tree's simple protocol (enqueue.cc, NCCL 2.4 on), which
// halves the FIFO step (DefaultSliceBytes) while a channel's share of the
// bytes is too few chunks to fill the tree's pipeline: below 8 × depth
// chunks down to 128 KiB, below 4 × depth down to 64 KiB, below depth down
// to 32 KiB. NCCL's depth for one rank a node is ⌊log2 n⌋ (connectTrees'
// "good approximation"); each tree here is one channel, so a channel
// carries S/2.
func treeSliceBytes(bytes int64, n int) int64 {
	depth := int64(0)
	for 1<<(depth+1) <= n {
		depth++
	}
	chunk := int64(DefaultSliceBytes)
	perChannel := bytes / 2
	for _, r := range []struct{ chunks, floor int64 }{{8, 128 << 10}, {4, 64 << 10}, {1, 32 << 10}} {
		for perChannel/chunk < r.chunks*depth && chunk > r.floor {
			chunk /= 2
		}
	}
	return chunk
}
