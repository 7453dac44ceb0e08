package workload

import "fmt"

// RingAllReduceChannels returns the ring all-reduce of bytes bytes over n
// ranks on nch NCCL channels (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS =
// nch): the vector is cut into nch contiguous parts (chunk: the first
// bytes mod nch one byte longer), and part c is all-reduced by a ring of
// its own (RingAllReduce's steps, which are this schedule's one channel,
// on that part), in lane c: its own
// connection (RC QP) to the next rank, posted independently of the other
// channels' (Transfer.Lane), as NCCL runs each channel on its own thread
// block and connects each channel to its ring peers separately. Every
// channel's ring is the same, rank i to i+1: NCCL's rings on one NIC per
// node follow the node order in every channel (the search finds one ring
// and duplicates it, docs/fabric.md). Channel c's steps are c·2(n−1) …
// (c+1)·2(n−1)−1, labels only: a rank receives once a step, and a channel
// waits only on its own steps. One channel is RingAllReduce, step for
// step. A part of zero bytes (bytes < nch) is still a ring of signals, as a
// zero-byte chunk of the ring is.
func RingAllReduceChannels(n, nch int, bytes int64) (Schedule, error) {
	if nch < 1 || nch > MaxChannels {
		return Schedule{}, fmt.Errorf("workload.channels: %d is out of range (1 to %d)", nch, MaxChannels)
	}
	if err := checkCollective(CollAllReduce, n, bytes); err != nil {
		return Schedule{}, err
	}
	s := Schedule{Op: CollAllReduce, Algorithm: AlgRing, Ranks: n, Bytes: bytes, Landing: bytes}
	steps := 2 * (n - 1)
	for ch := range nch {
		base, part := chunk(bytes, nch, ch)
		for t := range steps {
			step := make([]Transfer, n)
			for i := range n {
				c := ((i-t)%n + n) % n
				off, length := chunk(part, n, c)
				wait := NoWait
				if t > 0 {
					wait = ch*steps + t - 1
				}
				step[i] = Transfer{Step: ch*steps + t, Src: i, Dst: (i + 1) % n, Offset: base + off, Bytes: length,
					Reduce: t < n-1, WaitStep: wait, Land: base + off, Lane: ch}
			}
			s.Steps = append(s.Steps, step)
		}
	}
	return s, nil
}
