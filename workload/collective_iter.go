package workload

import (
	"fmt"
	"slices"

	"github.com/hcasim/hcasim/ib"
)

// MaxCollectiveIterations bounds workload.collective_iterations and
// workload.collective_warmup each: a model limit (MaxCollectiveWrites
// bounds the writes of all iterations together; each iteration's receives
// are posted when the one before it ends, nextIteration). nccl-tests' defaults are -n 20 and
// -w 5 (src/common.cu, iters and warmup_iters).
const MaxCollectiveIterations = 1000

// MaxChannels bounds workload.channels: NCCL's MAXCHANNELS (32 in the
// NCCL 2.1x src/include/device.h the schedules were read against; later
// versions allow 64).
const MaxChannels = 32

// checkCollectiveLoop checks workload.collective_iterations,
// workload.collective_warmup and workload.channels: in range, and set only
// where a driver uses them (iterations and warm-up: every collective but
// SHARP's; channels: the ring all-reduce).
func checkCollectiveLoop(op, alg string, iters, warmup, channels int, prefix string) error {
	isColl := slices.Contains(Collectives, op)
	switch {
	case iters < 0 || iters > MaxCollectiveIterations:
		return fmt.Errorf("%s.collective_iterations: %d is out of range (0 or 1 for one timed iteration, up to %d)", prefix, iters, MaxCollectiveIterations)
	case warmup < 0 || warmup > MaxCollectiveIterations:
		return fmt.Errorf("%s.collective_warmup: %d is out of range (0 for none, up to %d)", prefix, warmup, MaxCollectiveIterations)
	case channels < 0 || channels > MaxChannels:
		return fmt.Errorf("%s.channels: %d is out of range (0 or 1 for one ring, up to %d, NCCL's MAXCHANNELS)", prefix, channels, MaxChannels)
	case iters > 1 && !isColl:
		return fmt.Errorf("%s.collective_iterations: %d is set, but %s.kind %s does not use it (a collective's nccl-tests -n; perftest's is %s.iterations: set %s.kind to a collective, or remove the key)", prefix, iters, prefix, op, prefix, prefix)
	case warmup > 0 && !isColl:
		return fmt.Errorf("%s.collective_warmup: %d is set, but %s.kind %s does not use it (a collective's nccl-tests -w: set %s.kind to a collective, or remove the key)", prefix, warmup, prefix, op, prefix)
	case (iters > 1 || warmup > 0) && alg == AlgSharp:
		return fmt.Errorf("%s.collective_iterations and collective_warmup with %s.algorithm sharp are not modelled (the aggregation nodes' state is built for one run); remove them or choose another algorithm", prefix, prefix)
	case channels > 1 && (op != CollAllReduce || alg != "" && alg != AlgRing):
		what := "workload.kind " + op
		if op == CollAllReduce {
			what = "workload.algorithm " + alg
		}
		return fmt.Errorf("%s.channels: %d is set, but %s does not use it (channels are modelled for the ring all-reduce only: set %s.kind: allreduce with %s.algorithm ring, or remove the key)", prefix, channels, what, prefix, prefix)
	}
	return nil
}

// iterations returns how many times the collective runs: warm-up and timed.
func (r *CollectiveRun) iterations() int { return r.Warmup + max(1, r.Iterations) }

// timedIterations returns how many of them are timed (nccl-tests -n).
func (r *CollectiveRun) timedIterations() int { return max(1, r.Iterations) }

// looped reports whether the run is more than one cold timed iteration,
// so that it reports the per-iteration metrics (a run of the defaults
// reports what it did before the keys existed).
func (r *CollectiveRun) looped() bool { return r.iterations() > 1 }

// nextIteration ends iteration c.iter (every rank done): its time is kept,
// its data checked, every rank's input restored and its progress cleared,
// its receives for the next iteration posted, and the next iteration
// starts on every rank at once, as the first does: setupSettle after the
// last of those posts, so their prefetches land first. Each iteration
// thus starts from the state the first started from but for what its
// predecessors left in the HCAs' caches (the memory keys): its receive
// queues hold its own receives, as the first's (receives posted ahead for
// later iterations are prefetched while it runs and change its time: a
// 1 MiB ring on two channels over 16 NDR ranks took 84.4 µs an iteration
// with them where it takes 70.3 without). Restoring the input makes every
// iteration compute the same result from the same data, as nccl-tests'
// out-of-place runs do (its sendbuff is never written); the writes are the
// model's, untimed (no host time). The time between one iteration's end
// and the next's start is not timed (docs/fabric.md).
func (c *collective) nextIteration() {
	c.checkIteration()
	c.fill(false)
	c.iter++
	c.finished = 0
	c.started = false
	var posted ib.PS
	for _, rk := range c.ranks {
		c.resetRank(rk)
		if rk.cts != nil {
			// Its receives go with its clear-to-sends (ctsGrant), which
			// begin posts.
			rk.cts.iter = c.iter
			continue
		}
		for i := range rk.recvQP {
			c.postRecvs(rk, i)
		}
		posted = max(posted, rk.dev.CPUFreeAt())
	}
	c.s.Schedule(max(c.end, posted)+setupSettle, c, evCollStart)
}

// checkIteration keeps iteration c.iter's time and checks its data; a
// looped run's data errors name the iteration.
func (c *collective) checkIteration() {
	c.iterTime = append(c.iterTime, c.end-c.start)
	c.iterWait = append(c.iterWait, c.end-c.firstDone)
	from := len(c.errs)
	c.verify()
	if c.run.looped() {
		for i := from; i < len(c.errs); i++ {
			c.errs[i] = fmt.Sprintf("iteration %d: %s", c.iter, c.errs[i])
		}
	}
}

// resetRank clears rank rk's progress for the next iteration: nothing
// posted, sent or landed. Its QPs, CQs, buffers and pre-posted receives
// stay (BuildCollectiveOn posts every iteration's).
func (c *collective) resetRank(rk *collRank) {
	rk.next, rk.sent, rk.recvs = 0, 0, 0
	rk.done, rk.pending, rk.doneAt = false, false, 0
	clear(rk.arrived)
	clear(rk.got)
	clear(rk.gotAt)
	clear(rk.sendDone)
	clear(rk.laneNext)
	rk.deferred = rk.deferred[:0]
	if c.window > 0 {
		clear(rk.readers)
		for _, k := range rk.waits {
			rk.readers[k]++
		}
		for k := range rk.creditAt {
			rk.creditAt[k] = noCredit
		}
		clear(rk.postedAt)
	}
}

// iterationMetrics adds a looped run's per-iteration metrics to m and
// returns the time per timed iteration, the mean, as nccl-tests divides
// the timed loop's time by its iterations.
func (c *collective) iterationMetrics(m map[string]any) ib.PS {
	timed := c.iterTime[c.run.Warmup:]
	var sum, lo, hi ib.PS
	lo = timed[0]
	for _, t := range timed {
		sum += t
		lo, hi = min(lo, t), max(hi, t)
	}
	us := make([]float64, len(c.iterTime))
	for i, t := range c.iterTime {
		us[i] = t.Nanoseconds() / 1000
	}
	m["iterations"] = len(timed)
	m["warmup_iterations"] = c.run.Warmup
	m["time_us_min"] = lo.Nanoseconds() / 1000
	m["time_us_max"] = hi.Nanoseconds() / 1000
	m["iteration_time_us"] = us
	// The longest a rank waited, in a timed iteration, for the last to
	// finish: what starting every iteration together costs at most against
	// nccl-tests' loop, which starts a rank's next iteration when it is
	// done (docs/fabric.md).
	var wait ib.PS
	for _, w := range c.iterWait[c.run.Warmup:] {
		wait = max(wait, w)
	}
	m["barrier_wait_us_max"] = wait.Nanoseconds() / 1000
	// The mean in whole picoseconds, rounded: the model's time unit.
	n := ib.PS(len(timed))
	return (sum + n/2) / n
}
