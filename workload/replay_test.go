package workload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// buildReplay parses trace for n hosts on one EDR switch and builds its
// replay, not yet run.
func buildReplay(t *testing.T, n int, trace string) *Replay {
	t.Helper()
	tr, err := ParseTrace(strings.NewReader(trace), "t.trace", n)
	require.NoError(t, err)
	s, devs := collSwitch(t, n, perftestLink("EDR"), hca.Defaults())
	rp, err := BuildReplayOn(s, devs, tr, ReplayRun{MTU: 4096, Seed: 1})
	require.NoError(t, err)
	return rp
}

// atomicsTrace: hosts 1, 2 and 3 each aim three fetch_adds and two
// cmp_swaps at host 0, all at once (open loop), so host 0's responder
// executes atomics from three QPs in an order the fabric decides; host 0
// aims one of each back at host 1.
func atomicsTrace() string {
	var b strings.Builder
	for src := 1; src <= 3; src++ {
		for range 3 {
			fmt.Fprintf(&b, "0 %d 0 fetch_add 8\n", src)
		}
		for range 2 {
			fmt.Fprintf(&b, "0 %d 0 cmp_swap 8\n", src)
		}
	}
	b.WriteString("0 0 1 fetch_add 8\n0 0 1 cmp_swap 8\n")
	return b.String()
}

// TestReplayAtomicsLeaveTheirWordsRight: nine fetch_adds of 1 aimed at
// host 0 leave its counter at 9 and return 0 … 8, each once; of six
// cmp_swaps from 0 to their tags exactly one (the first executed) finds 0
// and the word holds its tag, the five others return that tag. The
// end-of-run check (checkAtomics) passes, and the test re-derives it from
// host memory.
func TestReplayAtomicsLeaveTheirWordsRight(t *testing.T) {
	rp := buildReplay(t, 4, atomicsTrace())
	m, err := rp.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["completions_ok"], "%v", m["completion_errors"])
	r := rp.r
	h0 := r.hosts[0]
	assert.Equal(t, uint64(9), h0.dev.Mem.ReadU64(h0.atomics))
	var fa []uint64
	zeros, word := 0, h0.dev.Mem.ReadU64(h0.atomics+8)
	for i, msg := range r.tr.Msgs {
		if msg.Dst != 0 {
			continue
		}
		if msg.Op == ReplayFetchAdd {
			fa = append(fa, r.msgs[i].orig)
		} else if r.msgs[i].orig == 0 {
			zeros++
		} else {
			assert.Equal(t, word, r.msgs[i].orig, "line %d", msg.Line)
		}
	}
	assert.ElementsMatch(t, []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8}, fa)
	assert.Equal(t, 1, zeros)
	assert.NotZero(t, word)
	h1 := r.hosts[1]
	assert.Equal(t, uint64(1), h1.dev.Mem.ReadU64(h1.atomics))
	assert.Equal(t, cmpSwapTag(int32(len(r.tr.Msgs)-1)), h1.dev.Mem.ReadU64(h1.atomics+8), "host 0's cmp_swap, alone, wins")
}

// TestReplayAtomicsCheckFails: the end-of-run check can fail. A word
// changed behind the driver's back before the run (as a corrupting bug
// would) leaves it wrong, and the run ends in one line of internal error
// naming it: host 0's counter starting at 5, nine fetch_adds leave 14, not
// 9, and return 5 … 13, of which 9 … 13 are outside 0 … 8; its swap word
// starting at 7, no cmp_swap finds 0.
func TestReplayAtomicsCheckFails(t *testing.T) {
	for _, tc := range []struct {
		name      string
		off, word uint64
		want      []string
	}{
		{"counter", 0, 5, []string{"internal error", "host 0: counter word holds 14 after 9 fetch_adds of 1 from 0",
			"host 0: the fetch_add of line"}},
		{"swap word", 8, 7, []string{"internal error", "host 0: 0 of the 6 cmp_swaps aimed at it found the word 0, want exactly 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := buildReplay(t, 4, atomicsTrace())
			h0 := rp.r.hosts[0]
			h0.dev.Mem.WriteU64(h0.atomics+tc.off, tc.word)
			_, err := rp.Run()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestReplayAtomicsNeedRemoteAtomicAccess: the key-check unit demands
// IBV_ACCESS_REMOTE_ATOMIC of an atomic's target region. Registered
// without it, every atomic completes in error at its source (the
// responder NAKs it: remote access error) and the run says so.
func TestReplayAtomicsNeedRemoteAtomicAccess(t *testing.T) {
	saved := replayAccess
	defer func() { replayAccess = saved }()
	replayAccess &^= hca.AccessRemoteAtomic
	rp := buildReplay(t, 2, "0 0 1 fetch_add 8\n")
	m, err := rp.Run()
	require.NoError(t, err, "a failed completion is reported, not taken for a model bug")
	assert.Equal(t, false, m["completions_ok"])
	assert.Contains(t, fmt.Sprint(m["completion_errors"]), "REM_ACCESS_ERR")
}

// runReplayTrace builds trace for n hosts on one EDR switch, runs it and
// returns the replay's state for its post and poll times.
func runReplayTrace(t *testing.T, n int, trace string) *replay {
	t.Helper()
	rp := buildReplay(t, n, trace)
	m, err := rp.Run()
	require.NoError(t, err)
	require.Equal(t, true, m["completions_ok"], "%v", m["completion_errors"])
	return rp.r
}

// hostCosts are the application thread's per-post and per-poll-turn
// costs (host.post_ns, host.poll_ns) of hca.Defaults, in ps.
func hostCosts() (post, poll ib.PS) {
	h := hca.Defaults().Host
	return ib.FromNanoseconds(h.PostNS), ib.FromNanoseconds(h.PollNS)
}

// TestReplayComputeSerializesOnTheThread: hosts 1 and 2 each send host 0
// an 8-byte write_imm at time 0; their receive completions are polled in
// one turn of host 0's loop, at T. Host 0 then has two messages due, A
// after the first and B after the second, each with C of compute. The
// thread computes A's C from T (it is idle: its set-up ended 5 µs before
// the timed start) and posts A at T + C (a message's post time is when the
// thread starts ibv_post_send); the post costs host.post_ns P, so B's
// compute runs from T + C + P and B is posted at T + 2C + P: C + P after A.
// With delay_ns=C instead, both are due at T + C and posted in one walk,
// A at T + C and B one post later, T + C + P: the compute adds exactly C
// between them, and A, first either way, is posted at the same instant.
func TestReplayComputeSerializesOnTheThread(t *testing.T) {
	const c = 1000 * ib.Nanosecond
	post, _ := hostCosts()
	trace := func(field string) string {
		return fmt.Sprintf("0 1 0 write_imm 8 id=1\n0 2 0 write_imm 8 id=2\n0 0 1 write 8 after=1 %s=1000\n0 0 2 write 8 after=2 %s=1000\n", field, field)
	}
	comp := runReplayTrace(t, 3, trace("compute_ns"))
	T := comp.msgs[0].seenAt
	require.NotZero(t, T)
	require.Equal(t, T, comp.msgs[1].seenAt, "both dependencies polled in one turn")
	assert.Equal(t, T+c, comp.msgs[2].postAt)
	assert.Equal(t, T+2*c+post, comp.msgs[3].postAt)

	delay := runReplayTrace(t, 3, trace("delay_ns"))
	require.Equal(t, T, delay.msgs[0].seenAt, "the same run up to T")
	require.Equal(t, T, delay.msgs[1].seenAt)
	assert.Equal(t, T+c, delay.msgs[2].postAt)
	assert.Equal(t, T+c+post, delay.msgs[3].postAt)
}

// TestReplayCompletionWaitsForTheCompute: host 0 computes C = 10 µs for A
// from T, the turn that polled host 1's write_imm; host 2's write_imm
// (start_ns 2000) arrives during that compute. Its CQE waits in the CQ:
// the thread ends the compute at T + C, posts A (P, host.post_ns), and
// only then polls (Q, host.poll_ns, a turn's cost from the thread being
// free): the receive completion is taken at T + C + P + Q, and B, after
// it, is posted in that turn. With delay_ns=C instead the thread is free
// and polls it on arrival, before T + C.
func TestReplayCompletionWaitsForTheCompute(t *testing.T) {
	const c = 10000 * ib.Nanosecond
	post, poll := hostCosts()
	trace := func(field string) string {
		return fmt.Sprintf("0 1 0 write_imm 8 id=1\n2000 2 0 write_imm 8 id=2\n0 0 1 write 8 after=1 %s=10000\n0 0 2 write 8 after=2\n", field)
	}
	comp := runReplayTrace(t, 3, trace("compute_ns"))
	T := comp.msgs[0].seenAt
	assert.Equal(t, T+c, comp.msgs[2].postAt)
	assert.Equal(t, T+c+post+poll, comp.msgs[1].seenAt)
	assert.Equal(t, T+c+post+poll, comp.msgs[3].postAt)

	delay := runReplayTrace(t, 3, trace("delay_ns"))
	require.Equal(t, T, delay.msgs[0].seenAt)
	assert.Less(t, delay.msgs[1].seenAt, T+c, "host 2's write_imm arrives during the compute")
	assert.Greater(t, delay.msgs[1].seenAt, T)
}

// TestReplayDueMessageWaitsForTheCompute: a message due by its start_ns
// (5 µs) while the thread computes A (C = 10 µs from T, the turn that
// polled A's dependency, T < 5 µs < T + C) cannot be posted meanwhile:
// after the compute the thread posts A at T + C, then the due message one
// post later, T + C + P. Without compute (delay_ns) it goes at its
// start_ns.
func TestReplayDueMessageWaitsForTheCompute(t *testing.T) {
	const c = 10000 * ib.Nanosecond
	post, _ := hostCosts()
	trace := func(field string) string {
		return fmt.Sprintf("0 1 0 write_imm 8 id=1\n0 0 1 write 8 after=1 %s=10000\n5000 0 2 write 8\n", field)
	}
	comp := runReplayTrace(t, 3, trace("compute_ns"))
	T, start := comp.msgs[0].seenAt, comp.start+5000*ib.Nanosecond
	require.True(t, T < start && start < T+c, "T = %d, start_ns at %d", T, start)
	assert.Equal(t, T+c, comp.msgs[1].postAt)
	assert.Equal(t, T+c+post, comp.msgs[2].postAt)

	delay := runReplayTrace(t, 3, trace("delay_ns"))
	assert.Equal(t, start, delay.msgs[2].postAt)
}

// TestReplayComputeWaitsForTheQueuedPoll: a message whose compute falls
// due while a poll turn is queued computes after that turn (the thread
// finishes the poll it has begun). Run once without it to learn T, the
// turn that polls host 1's write_imm, and TE, the turn that polls host
// 2's (start_ns 3000): host 0 is idle then, so TE's turn was queued at
// its CQE, TE − host.poll_ns (40 ns). A, after host 1's write_imm with
// delay_ns = (TE − T in whole ns, rounded down) − 20, falls due 20 to 21
// ns before TE, inside that queued turn; it computes C = 5 µs from TE
// and is posted at TE + C. The turn at TE is unchanged.
func TestReplayComputeWaitsForTheQueuedPoll(t *testing.T) {
	_, poll := hostCosts()
	const c = 5000 * ib.Nanosecond
	base := "0 1 0 write_imm 8 id=1\n3000 2 0 write_imm 8 id=2\n"
	first := runReplayTrace(t, 3, base)
	T, TE := first.msgs[0].seenAt, first.msgs[1].seenAt
	delay := (TE-T)/ib.Nanosecond - 20
	due := T + delay*ib.Nanosecond
	require.True(t, due > TE-poll && due < TE, "A falls due inside the queued turn: %d in (%d, %d)", due, TE-poll, TE)
	r := runReplayTrace(t, 3, base+fmt.Sprintf("0 0 1 write 8 after=1 delay_ns=%d compute_ns=5000\n", delay))
	require.Equal(t, T, r.msgs[0].seenAt)
	require.Equal(t, TE, r.msgs[1].seenAt)
	assert.Equal(t, TE+c, r.msgs[2].postAt)
}
