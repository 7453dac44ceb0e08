package hca

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/ib"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestTimelineGolden records, for one message of each operation on an idle
// EDR pair with the default HCA, the picosecond at which it passed each
// point of the pipeline (hca.Timeline), and compares with
// testdata/timeline.golden. Any timing change in any stage shows here;
// rewrite with `go test ./hca -run TimelineGolden -update` when intended.
func TestTimelineGolden(t *testing.T) {
	ops := []struct {
		name string
		wr   SendWR
		recv bool
	}{
		{"write_inline_2", SendWR{Opcode: WRRDMAWrite, Inline: true, Length: 2}, false},
		{"write_10000", SendWR{Opcode: WRRDMAWrite, Length: 10000}, false},
		{"send_32", SendWR{Opcode: WRSend, Length: 32}, true},
		{"send_imm_inline_32", SendWR{Opcode: WRSendImm, Inline: true, Length: 32, Imm: 5}, true},
		{"read_5000", SendWR{Opcode: WRRDMARead, Length: 5000}, false},
		{"fetch_add", SendWR{Opcode: WRFetchAdd, CompareAdd: 3}, false},
		{"cmp_swap", SendWR{Opcode: WRCompSwap, CompareAdd: 0, Swap: 9}, false},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# hca.Timeline of one message on an idle EDR 4x 0.5 m pair, profile cx5, ps from post\n")
	fmt.Fprintf(&b, "# op doorbell_store doorbell doorbell_done wqe_ready granted dma_read_done tx_ready wire_start rx_tail rx_done resp_key resp_write resp_cqe_issue resp_cqe ack_rx req_cqe\n")
	for _, op := range ops {
		p := newPair(t, edrLink(), Defaults(), 1<<16)
		var tl Timeline
		p.a.Timeline, p.b.Timeline = &tl, &tl
		if op.recv {
			require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{Addr: p.bufB, Length: 4096, LKey: p.mrB.LKey}))
		}
		// Post at 10 µs, after the receive prefetch.
		w := op.wr
		w.Signaled = true
		w.LocalAddr, w.LKey = p.bufA, p.mrA.LKey
		w.RemoteAddr, w.RKey = p.bufB+64, p.mrB.RKey
		post := &poster{fn: func() {
			tl.Trace(p.qa, p.qa.NextWQEIndex())
			require.NoError(t, p.a.PostSend(p.qa, &w))
		}}
		p.s.Schedule(10*ib.Microsecond, post, 1)
		var wcs [1]WC
		p.runUntil(t, func() bool { return p.a.PollCQ(p.qa.SendCQ, wcs[:]) > 0 })
		require.Equal(t, WCSuccess, wcs[0].Status, op.name)
		rel := func(x ib.PS) int64 {
			if x == 0 {
				return -1
			}
			return int64(x - tl.Posted)
		}
		fmt.Fprintf(&b, "%s", op.name)
		for _, x := range []ib.PS{tl.DoorbellStore, tl.Doorbell, tl.DoorbellDone, tl.WQEReady, tl.Granted,
			tl.DMAReadDone, tl.TxReady, tl.WireStart, tl.RxTail, tl.RxDone, tl.RespKey, tl.RespWrite,
			tl.RespCQEIssue, tl.RespCQE, tl.AckRx, tl.ReqCQE} {
			fmt.Fprintf(&b, " %d", rel(x))
		}
		b.WriteString("\n")
	}
	const path = "testdata/timeline.golden"
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), b.String())
}
