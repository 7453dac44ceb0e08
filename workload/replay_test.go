package workload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
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
