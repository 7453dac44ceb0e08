package workload

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// Collective operation names, as workload.kind spells them.
const (
	CollAllReduce = "allreduce"
	CollAllToAll  = "alltoall"
)

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
}

// Schedule is a collective as data: for each step, the transfers every rank
// makes. A driver issues each rank's transfers in step order, each as an RDMA
// write, starting one when its WaitStep transfer has landed; the collective
// ends when the last transfer lands at every rank.
type Schedule struct {
	Op    string // allreduce | alltoall
	Ranks int
	// Bytes is the collective's size S as nccl-tests reports it: the
	// per-rank buffer (all-reduce: the array reduced; all-to-all: the whole
	// send buffer, n blocks of S/n).
	Bytes int64
	Steps [][]Transfer
}

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
	if err := checkCollective(CollAllReduce, n, bytes); err != nil {
		return Schedule{}, err
	}
	s := Schedule{Op: CollAllReduce, Ranks: n, Bytes: bytes}
	for t := 0; t < 2*(n-1); t++ {
		step := make([]Transfer, n)
		for i := range n {
			c := ((i-t)%n + n) % n
			off, length := chunk(bytes, n, c)
			wait := NoWait
			if t > 0 {
				wait = t - 1
			}
			step[i] = Transfer{Step: t, Src: i, Dst: (i + 1) % n, Offset: off, Bytes: length, Reduce: t < n-1, WaitStep: wait}
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
	s := Schedule{Op: CollAllToAll, Ranks: n, Bytes: block * int64(n)}
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
// all-reduce 2(n−1)/n, all-to-all (n−1)/n. Bus bandwidth is comparable with
// the link rate whatever n: a perfect collective's busbw equals the rate of
// each rank's link.
func BusBWFactor(op string, n int) float64 {
	switch op {
	case CollAllReduce:
		return 2 * float64(n-1) / float64(n)
	case CollAllToAll:
		return float64(n-1) / float64(n)
	}
	panic(fmt.Sprintf("workload: BusBWFactor: %q is not a collective (allreduce, alltoall)", op))
}

// BusBW is nccl-tests' bus bandwidth in GB/s: AlgBW × BusBWFactor.
func (s Schedule) BusBW(t ib.PS) float64 { return AlgBW(s.Bytes, t) * BusBWFactor(s.Op, s.Ranks) }

// AlgBW is the schedule's algorithm bandwidth for a run that took t.
func (s Schedule) AlgBW(t ib.PS) float64 { return AlgBW(s.Bytes, t) }
