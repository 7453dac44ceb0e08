package workload

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hcasim/hcasim/ib"
)

// Collective operation names, as workload.kind spells them.
const (
	CollAllReduce     = "allreduce"
	CollAllToAll      = "alltoall"
	CollAllGather     = "allgather"
	CollReduceScatter = "reducescatter"
	CollBroadcast     = "broadcast"
	CollReduce        = "reduce"
)

// Collectives lists the collective workload kinds.
var Collectives = []string{CollAllReduce, CollAllToAll, CollAllGather, CollReduceScatter, CollBroadcast, CollReduce}

// NoWait marks a transfer that needs no earlier receive before it starts.
const NoWait = -1

// Transfer is one point-to-point move of a collective: rank Src writes Bytes
// bytes to rank Dst, from and to offset Offset of the ranks' buffers.
type Transfer struct {
	Step     int   // step number; a rank issues its transfers in step order
	Src, Dst int   // ranks
	Offset   int64 // byte offset in the buffer (send buffer for all-to-all)
	Bytes    int64
	// Reduce says the receiver adds the data into its own chunk (ring
	// reduce-scatter) instead of storing it (all-gather, all-to-all).
	Reduce bool
	// WaitStep is the step whose incoming transfer Src must have fully
	// received before this one may start (the chunk it forwards), or NoWait.
	WaitStep int
	// WaitAlso lists further steps whose incoming transfers Src must have
	// received where they overlap this one's bytes: Rabenseifner's
	// reduce-scatter sends half of a range that every earlier step reduced
	// into, not only the last. nil for the ring and all-to-all.
	WaitAlso []int
	// Land is where a Reduce transfer lands in the receiver's landing area
	// (the receiver then adds it into its data at Offset). The ring lands
	// each chunk at its own offset; Rabenseifner gives each step's receive
	// its own place, since a later step's sender may write before an
	// earlier step's data arrived and was added.
	Land int64
	// Lane is the queue of its sender the transfer is posted from: the
	// driver posts a lane's slices in step and slice order, each after the
	// one before, but one lane never waits for another, and each lane has
	// its own connection (RC QP) to each peer, so not even the HCA's send
	// queue orders one lane's slices behind another's. The ring, its
	// halves, the chains and the MPI algorithms use lane 0 alone, so a
	// rank posts all it sends in order; the tree gives each of a rank's
	// transfers a lane of its own, as NCCL runs each tree on its own
	// channels and a tree's reduction and broadcast on separate threads.
	Lane int
}

// Schedule is a collective as data: for each step, the transfers every rank
// makes. A driver issues each rank's transfers in step order, each as an RDMA
// write, starting one when its WaitStep transfer has landed; the collective
// ends when the last transfer lands at every rank.
type Schedule struct {
	Op    string // one of Collectives
	Ranks int
	// Bytes is the collective's size S as nccl-tests reports it: the
	// per-rank buffer (all-reduce: the array reduced; all-to-all: the whole
	// send buffer, n blocks of S/n).
	Bytes int64
	// Algorithm is how an all-reduce is done (AllReduceAlgorithms), or
	// AlgRing for the ring's halves and chains (empty for all-to-all).
	Algorithm string
	// Landing is the size of each rank's landing area, where peers write
	// (Transfer.Land): S for the ring and all-to-all, at most two halves
	// for the tree (a rank's two children's in one tree), more for
	// Rabenseifner's algorithm on a number of ranks that is not a power of
	// two (its first step lands a whole vector, its later ones their halves).
	Landing int64
	// Root is a broadcast's source and a reduce's destination (0 for the
	// other operations).
	Root  int
	Steps [][]Transfer
}

// All-reduce algorithms, as workload.algorithm spells them.
const (
	AlgRing              = "ring"
	AlgRabenseifner      = "rabenseifner"
	AlgRecursiveDoubling = "recursive-doubling"
)

// AllReduceAlgorithms lists workload.algorithm's values.
var AllReduceAlgorithms = []string{AlgRing, AlgRabenseifner, AlgRecursiveDoubling, AlgTree, AlgSharp}

// chunk returns the offset and length of chunk c when bytes are split into n
// chunks as evenly as whole bytes allow (the first bytes mod n chunks get one
// byte more).
func chunk(bytes int64, n, c int) (offset, length int64) {
	base, rem := bytes/int64(n), bytes%int64(n)
	offset = int64(c)*base + min(int64(c), rem)
	length = base
	if int64(c) < rem {
		length++
	}
	return offset, length
}

// RingAllReduce returns the ring all-reduce of bytes bytes over n ranks
// (Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters
// of workstations", JPDC 69(2), 2009; the ring NCCL uses): the buffer is cut
// into n chunks; in step t = 0 … 2(n−1)−1 rank i sends chunk (i − t) mod n to
// rank i+1. The first n−1 steps are a reduce-scatter (the receiver adds the
// chunk into its own), after which rank i holds chunk (i+1) mod n fully
// reduced; the last n−1 steps are an all-gather that passes the reduced
// chunks on. From step 1 on, a rank forwards the chunk it received in the
// step before, so it waits for that receive. Every rank sends 2(n−1)·S/n
// bytes, the minimum nccl-tests' bus bandwidth assumes.
func RingAllReduce(n int, bytes int64) (Schedule, error) {
	return RingAllReduceChannels(n, 1, bytes)
}

// RingAllGather returns the ring all-gather of bytes bytes (nccl-tests'
// all_gather size: the gathered buffer) over n ranks: rank i contributes
// block i of bytes/n (whole bytes, as nccl-tests' count/nranks; the buffer
// is n blocks) and in step t = 0 … n−2 sends block (i − t) mod n to rank
// i+1, which stores it in place — the second half of the ring all-reduce.
// From step 1 a rank forwards the block it received in the step before.
// Each rank sends (n−1)·S/n bytes.
func RingAllGather(n int, bytes int64) (Schedule, error) {
	return ringHalf(CollAllGather, n, bytes)
}

// RingReduceScatter returns the ring reduce-scatter of bytes bytes
// (nccl-tests' reduce_scatter size: each rank's input) over n ranks: the
// input is n blocks of bytes/n, and rank i ends with block i summed over
// every rank. In step t = 0 … n−2 rank i sends block (i − t − 1) mod n to
// rank i+1, which adds it into its own — the first half of the ring
// all-reduce, turned one block so that each rank ends with its own
// (nccl's layout). Each rank sends (n−1)·S/n bytes.
func RingReduceScatter(n int, bytes int64) (Schedule, error) {
	return ringHalf(CollReduceScatter, n, bytes)
}

// RingBroadcast returns the ring broadcast of bytes bytes from rank root
// (nccl-tests' broadcast, -r root) over n ranks: in step t = 0 … n−2 rank
// root+t sends the whole buffer to rank root+t+1 (mod n), which stores it
// in place; from step 1 a rank forwards what it received in the step
// before, so the driver's slices pipeline down the chain (NCCL's ring
// broadcast, which starts at the root and runs the ring round). Every rank
// but the last sends S bytes.
func RingBroadcast(n, root int, bytes int64) (Schedule, error) {
	if err := checkCollective(CollBroadcast, n, bytes); err != nil {
		return Schedule{}, err
	}
	if err := checkRoot(CollBroadcast, n, root); err != nil {
		return Schedule{}, err
	}
	s := Schedule{Op: CollBroadcast, Algorithm: AlgRing, Ranks: n, Bytes: bytes, Root: root}
	for t := 0; t < n-1; t++ {
		wait := NoWait
		if t > 0 {
			wait = t - 1
		}
		s.Steps = append(s.Steps, []Transfer{{Step: t, Src: (root + t) % n, Dst: (root + t + 1) % n, Bytes: bytes, WaitStep: wait}})
	}
	return s, nil
}

// RingReduce returns the ring reduce of bytes bytes to rank root
// (nccl-tests' reduce, -r root) over n ranks: the broadcast's chain run
// backwards, in step t = 0 … n−2 rank root−1−t sends its buffer to rank
// root−t (mod n), which adds it into its own and forwards the sum in the
// next step; the driver's slices pipeline up the chain. The root ends
// with the sum; the other ranks' buffers hold partial sums. Every rank but
// the root sends S bytes. (NCCL's ring reduce runs the ring's way, from
// the root's successor round to the root: the same n−1 hops in the other
// direction round the ring.)
func RingReduce(n, root int, bytes int64) (Schedule, error) {
	if err := checkCollective(CollReduce, n, bytes); err != nil {
		return Schedule{}, err
	}
	if err := checkRoot(CollReduce, n, root); err != nil {
		return Schedule{}, err
	}
	s := Schedule{Op: CollReduce, Algorithm: AlgRing, Ranks: n, Bytes: bytes, Landing: bytes, Root: root}
	for t := 0; t < n-1; t++ {
		wait := NoWait
		if t > 0 {
			wait = t - 1
		}
		s.Steps = append(s.Steps, []Transfer{{Step: t, Src: (root + n - 1 - t) % n, Dst: (root + n - 2 - t) % n, Bytes: bytes, Reduce: true, WaitStep: wait}})
	}
	return s, nil
}

// checkRoot checks a broadcast's or reduce's root against the ranks.
func checkRoot(op string, n, root int) error {
	if root < 0 || root >= n {
		return fmt.Errorf("workload.root: %d is not a rank of the %s over %d ranks (0 to %d)", root, op, n, n-1)
	}
	return nil
}

func ringHalf(op string, n int, bytes int64) (Schedule, error) {
	if err := checkCollective(op, n, bytes); err != nil {
		return Schedule{}, err
	}
	block := bytes / int64(n)
	if block == 0 {
		return Schedule{}, fmt.Errorf("workload.size: %d bytes is less than one byte per rank for a %s over %d ranks", bytes, op, n)
	}
	s := Schedule{Op: op, Algorithm: AlgRing, Ranks: n, Bytes: block * int64(n)}
	reduce := op == CollReduceScatter
	if reduce {
		s.Landing = s.Bytes
	}
	for t := 0; t < n-1; t++ {
		step := make([]Transfer, n)
		for i := range n {
			b := ((i-t)%n + n) % n
			if reduce {
				b = ((i-t-1)%n + n) % n
			}
			wait := NoWait
			if t > 0 {
				wait = t - 1
			}
			off := int64(b) * block
			step[i] = Transfer{Step: t, Src: i, Dst: (i + 1) % n, Offset: off, Bytes: block, Reduce: reduce, WaitStep: wait, Land: off}
		}
		s.Steps = append(s.Steps, step)
	}
	return s, nil
}

// AllToAll returns the all-to-all of bytes bytes per rank over n ranks: rank i
// holds n blocks of bytes/n and sends block j to rank j. nccl-tests' alltoall
// posts every send at once; this schedule orders them as shifts — in step
// t = 1 … n−1 rank i sends to rank (i + t) mod n — so that in every step each
// rank sends one block and receives one (no step is an incast). Rank i's own
// block is a local copy and is not a transfer. Blocks are whole bytes:
// bytes/n each, as nccl-tests does with count/nranks.
func AllToAll(n int, bytes int64) (Schedule, error) {
	if err := checkCollective(CollAllToAll, n, bytes); err != nil {
		return Schedule{}, err
	}
	block := bytes / int64(n)
	if block == 0 {
		return Schedule{}, fmt.Errorf("workload.size: %d bytes is less than one byte per rank for an all-to-all over %d ranks", bytes, n)
	}
	s := Schedule{Op: CollAllToAll, Ranks: n, Bytes: block * int64(n), Landing: block * int64(n)}
	for t := 1; t < n; t++ {
		step := make([]Transfer, n)
		for i := range n {
			j := (i + t) % n
			step[i] = Transfer{Step: t - 1, Src: i, Dst: j, Offset: int64(j) * block, Bytes: block, WaitStep: NoWait}
		}
		s.Steps = append(s.Steps, step)
	}
	return s, nil
}

// RabenseifnerAllReduce returns Rabenseifner's all-reduce of bytes bytes
// over n ranks: a reduce-scatter by recursive halving, then an all-gather
// by recursive doubling (R. Thakur, R. Rabenseifner and W. Gropp,
// "Optimization of collective communication operations in MPICH", IJHPCA
// 19(1), 2005, §4.4; MPICH's MPIR_Allreduce_intra_reduce_scatter_allgather,
// whose exchange order this follows). It takes 2·log2(p) steps against the
// ring's 2(n−1), p the largest power of two ≤ n, and each rank still sends
// 2(p−1)/p·S bytes, so it wins where per-step latency dominates (small and
// medium sizes) and ties the ring's bandwidth at large ones.
//
// The vector is cut into p chunks. In reduce-scatter step k (mask 2^k,
// nearest partners first) rank r and r XOR mask split the range they hold:
// the lower rank keeps the lower half and sends the upper one, which the
// partner adds into its own; after log2(p) steps each rank holds one chunk
// reduced. The all-gather retraces the steps in reverse (masks from p/2
// down to 1), each rank sending the range it holds, which doubles. The
// data sent halves as the partner's distance doubles, so on a fat tree the
// large exchanges stay under one leaf. Ranks beyond p fold (mpiFold).
func RabenseifnerAllReduce(n int, bytes int64) (Schedule, error) {
	if err := checkCollective(CollAllReduce, n, bytes); err != nil {
		return Schedule{}, err
	}
	b := newMPIBuilder(AlgRabenseifner, n, bytes)
	p := b.p
	at := func(c int) int64 { // byte offset of chunk c (chunk p: the end)
		if c == p {
			return bytes
		}
		off, _ := chunk(bytes, p, c)
		return off
	}
	lo, hi := make([]int, p), make([]int, p) // each new rank's chunk range
	for nr := range p {
		hi[nr] = p
	}
	for mask := 1; mask < p; mask *= 2 {
		nlo, nhi := slices.Clone(lo), slices.Clone(hi)
		for nr := range p {
			peer := nr ^ mask
			mid := lo[nr] + (hi[nr]-lo[nr])/2
			sendLo, sendHi := mid, hi[nr] // the lower rank keeps the lower half
			if nr < peer {
				nhi[nr] = mid
			} else {
				sendLo, sendHi = lo[nr], mid
				nlo[nr] = mid
			}
			b.add(Transfer{Src: b.real(nr), Dst: b.real(peer), Offset: at(sendLo), Bytes: at(sendHi) - at(sendLo), Reduce: true})
		}
		lo, hi = nlo, nhi
		b.end()
	}
	for mask := p / 2; mask >= 1; mask /= 2 {
		nlo, nhi := slices.Clone(lo), slices.Clone(hi)
		for nr := range p {
			peer := nr ^ mask
			b.add(Transfer{Src: b.real(nr), Dst: b.real(peer), Offset: at(lo[nr]), Bytes: at(hi[nr]) - at(lo[nr])})
			nlo[nr], nhi[nr] = min(lo[nr], lo[peer]), max(hi[nr], hi[peer])
		}
		lo, hi = nlo, nhi
		b.end()
	}
	return b.done(), nil
}

// RecursiveDoublingAllReduce returns the recursive-doubling all-reduce of
// bytes bytes over n ranks (Thakur, Rabenseifner and Gropp 2005, §4.4;
// MPICH's MPIR_Allreduce_intra_recursive_doubling, its choice for short
// vectors): in step k (mask 2^k) rank r and r XOR mask exchange their whole
// vectors and each adds the other's into its own, so after log2(p) steps
// every rank holds the sum. The fewest steps of any all-reduce, p the
// largest power of two ≤ n, but each rank sends log2(p)·S bytes: it wins
// for the shortest vectors only. Ranks beyond p fold (mpiFold).
//
// A rank's send in a step reads the very bytes its receive adds into: the
// driver adds a received vector only once the rank's own send of that step
// has completed (its data read and acknowledged), as an MPI_Sendrecv into a
// scratch buffer followed by the local reduction does. Each step's receive
// lands in its own place, so the landing area is log2(p)·S (one step more
// on a folded rank).
func RecursiveDoublingAllReduce(n int, bytes int64) (Schedule, error) {
	if err := checkCollective(CollAllReduce, n, bytes); err != nil {
		return Schedule{}, err
	}
	b := newMPIBuilder(AlgRecursiveDoubling, n, bytes)
	for mask := 1; mask < b.p; mask *= 2 {
		for nr := range b.p {
			b.add(Transfer{Src: b.real(nr), Dst: b.real(nr ^ mask), Offset: 0, Bytes: bytes, Reduce: true})
		}
		b.end()
	}
	return b.done(), nil
}

// mpiBuilder builds the MPI algorithms' schedules over the p ranks that
// take part, p the largest power of two ≤ n. When n is not one the first
// 2·(n−p) ranks fold in pairs (MPICH's way): before the exchange each even
// one of them sends its whole vector to the odd one after it, which adds it
// in and takes part as one of the p; after it, the odd one sends the result
// back. Every transfer waits on every earlier receive of its sender (the
// driver keeps only those that overlap its bytes), and every reduced
// receive lands in a place of its own in the receiver's landing area.
type mpiBuilder struct {
	s     Schedule
	p     int
	rem   int
	step  []Transfer
	land  []int64 // each rank's landing area used so far
	waits [][]int // per rank: the steps it has received in
}

func newMPIBuilder(alg string, n int, bytes int64) *mpiBuilder {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	b := &mpiBuilder{s: Schedule{Op: CollAllReduce, Algorithm: alg, Ranks: n, Bytes: bytes},
		p: p, rem: n - p, land: make([]int64, n), waits: make([][]int, n)}
	if b.rem > 0 {
		for r := 0; r < 2*b.rem; r += 2 {
			b.add(Transfer{Src: r, Dst: r + 1, Offset: 0, Bytes: bytes, Reduce: true})
		}
		b.end()
	}
	return b
}

// real is the rank that takes part as new rank nr: the odd one of each
// folded pair, then the ranks past the pairs.
func (b *mpiBuilder) real(nr int) int {
	if nr < b.rem {
		return 2*nr + 1
	}
	return nr + b.rem
}

// add puts x in the step being built.
func (b *mpiBuilder) add(x Transfer) {
	x.Step = len(b.s.Steps)
	x.WaitStep = NoWait
	if w := b.waits[x.Src]; len(w) > 0 {
		x.WaitStep = w[len(w)-1]
		if len(w) > 1 {
			x.WaitAlso = slices.Clone(w[:len(w)-1])
		}
	}
	if x.Reduce {
		x.Land = b.land[x.Dst]
		b.land[x.Dst] += x.Bytes
	}
	b.step = append(b.step, x)
}

// end closes the step being built.
func (b *mpiBuilder) end() {
	for _, x := range b.step {
		b.waits[x.Dst] = append(b.waits[x.Dst], x.Step)
	}
	b.s.Steps = append(b.s.Steps, b.step)
	b.step = nil
}

// done adds the unfolding step and returns the schedule.
func (b *mpiBuilder) done() Schedule {
	if b.rem > 0 {
		for r := 0; r < 2*b.rem; r += 2 {
			b.add(Transfer{Src: r + 1, Dst: r, Offset: 0, Bytes: b.s.Bytes})
		}
		b.end()
	}
	b.s.Landing = max(b.s.Bytes, slices.Max(b.land))
	return b.s
}

// AllReduce returns the all-reduce schedule of algorithm alg (AlgRing when
// empty).
func AllReduce(alg string, n int, bytes int64) (Schedule, error) {
	switch alg {
	case "", AlgRing:
		return RingAllReduce(n, bytes)
	case AlgRabenseifner:
		return RabenseifnerAllReduce(n, bytes)
	case AlgRecursiveDoubling:
		return RecursiveDoublingAllReduce(n, bytes)
	case AlgTree:
		return TreeAllReduce(n, bytes)
	case AlgSharp:
		return Schedule{}, fmt.Errorf("workload.algorithm: sharp reduces in the switches and has no host schedule (it runs on a fabric: workload.kind allreduce)")
	}
	return Schedule{}, fmt.Errorf("workload.algorithm: %q is not an all-reduce algorithm (%s)", alg, strings.Join(AllReduceAlgorithms, ", "))
}

// checkAlgorithm checks workload.algorithm for workload.kind op (prefix:
// the config section).
func checkAlgorithm(op, alg, prefix string) error {
	if alg == "" {
		return nil
	}
	if op != CollAllReduce {
		return fmt.Errorf("%s.algorithm: %q is set, but workload.kind %s does not use it (an all-reduce's: %s; set workload.kind: allreduce, or remove the key)",
			prefix, alg, op, strings.Join(AllReduceAlgorithms, ", "))
	}
	if !slices.Contains(AllReduceAlgorithms, alg) {
		return fmt.Errorf("%s.algorithm: %q is not an all-reduce algorithm (%s)", prefix, alg, strings.Join(AllReduceAlgorithms, ", "))
	}
	return nil
}

// checkRootKind refuses a root for an operation that has none (prefix:
// the config section); the root's range needs the ranks (checkRoot).
func checkRootKind(op string, root int, prefix string) error {
	if root != 0 && op != CollBroadcast && op != CollReduce {
		return fmt.Errorf("%s.root: %d is set, but workload.kind %s has no root (a broadcast's or reduce's; set workload.kind: broadcast or reduce, or remove the key)", prefix, root, op)
	}
	if root < 0 {
		return fmt.Errorf("%s.root: %d is not a rank (0 to the topology's hosts − 1)", prefix, root)
	}
	return nil
}

func checkCollective(op string, n int, bytes int64) error {
	if n < 2 {
		return fmt.Errorf("workload.kind: %s needs at least 2 ranks (hosts), the topology has %d", op, n)
	}
	if bytes < 1 {
		return fmt.Errorf("workload.size: %d bytes is not a collective size (at least 1)", bytes)
	}
	return nil
}

// AlgBW is nccl-tests' algorithm bandwidth, size / time, in GB/s (10⁹ bytes
// per second) as nccl-tests prints it (NVIDIA/nccl-tests doc/PERFORMANCE.md,
// "algbw = S/t").
func AlgBW(bytes int64, t ib.PS) float64 {
	if t <= 0 {
		panic(fmt.Sprintf("workload: AlgBW(%d bytes, %d ps): time must be positive", bytes, t))
	}
	return float64(bytes) / t.Seconds() / 1e9
}

// BusBWFactor is nccl-tests' correction from algorithm to bus bandwidth for
// op over n ranks (NVIDIA/nccl-tests doc/PERFORMANCE.md, "Summary"):
// all-reduce 2(n−1)/n; all-to-all, all-gather and reduce-scatter (n−1)/n;
// broadcast and reduce 1. Bus bandwidth is comparable with
// the link rate whatever n: a perfect collective's busbw equals the rate of
// each rank's link.
func BusBWFactor(op string, n int) float64 {
	switch op {
	case CollAllReduce:
		return 2 * float64(n-1) / float64(n)
	case CollAllToAll, CollAllGather, CollReduceScatter:
		return float64(n-1) / float64(n)
	case CollBroadcast, CollReduce:
		return 1
	}
	panic(fmt.Sprintf("workload: BusBWFactor: %q is not a collective (%s)", op, strings.Join(Collectives, ", ")))
}

// BusBW is nccl-tests' bus bandwidth in GB/s: AlgBW × BusBWFactor.
func (s Schedule) BusBW(t ib.PS) float64 { return AlgBW(s.Bytes, t) * BusBWFactor(s.Op, s.Ranks) }

// AlgBW is the schedule's algorithm bandwidth for a run that took t.
func (s Schedule) AlgBW(t ib.PS) float64 { return AlgBW(s.Bytes, t) }
