package switchasic

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

type traceRecorder struct{ events []components.TraceEvent }

func (r *traceRecorder) Func(ctx sim.HookCtx) {
	r.events = append(r.events, ctx.Item.(*components.TraceEvent).Clone())
}

// TestMetricsAndTrace: three packets from host 0 to host 1 and one to an
// unrouted DLID. Each forwarded packet is traced buf_enq at its head
// arrival, then arb_grant (on the output port) and buf_deq (on the input
// port) at its allocation round; the unrouted one is traced drop. The
// metrics count 4 received, 3 forwarded, 1 dropped, 3 packets of 33 blocks
// out of port 1, and port 0's VL0 buffer peaks at 3 × 33 blocks: heads
// arrive at 13 + 41k ns; the first packet leaves the buffer when its tail is
// through the crossbar, 13 + 80 + 33 = 126 ns, after the third head (95 ns)
// and before the fourth (136 ns).
func TestMetricsAndTrace(t *testing.T) {
	cfg := smallConfig(4, 1)
	n := newTestNet(t, cfg, netOpts{timing: ndr(13000)})
	rec := &traceRecorder{}
	n.sw.AcceptHook(rec)
	for k := 0; k < 3; k++ {
		n.eps[0].send(n.packet(0, 1, 0, 2024))
	}
	bad := n.packet(0, 1, 0, 2024)
	bad.DLID = 99
	n.eps[0].send(bad)
	n.s.StopAt(5 * ib.Microsecond)
	require.NoError(t, n.s.Run())
	require.Len(t, n.eps[1].got, 3)

	kinds := map[components.TraceKind]int{}
	for _, ev := range rec.events {
		kinds[ev.Kind]++
	}
	assert.Equal(t, 3, kinds[components.TraceBufEnq])
	assert.Equal(t, 3, kinds[components.TraceArbGrant])
	assert.Equal(t, 3, kinds[components.TraceBufDeq])
	assert.Equal(t, 1, kinds[components.TraceDrop])
	assert.Equal(t, "Fabric.Switch[0].Port[1]", rec.events[1].Path)
	out, _ := rec.events[1].Int("out")
	assert.Equal(t, int64(1), out)

	m := n.sw.Metrics()
	assert.Equal(t, 4.0, m["packets_received"])
	assert.Equal(t, 3.0, m["packets_forwarded"])
	assert.Equal(t, 1.0, m["packets_dropped_no_route"])
	assert.Equal(t, 3.0, m["port1_tx_packets"])
	assert.Equal(t, 99.0, m["port1_tx_blocks"])
	assert.Equal(t, 3*33.0, m["port0_vl0_buf_peak_blocks"])
	// Link utilisation of port 1: 3 × 41 ns of data over the window, which
	// ends at the last event handled.
	assert.InDelta(t, 3*41000.0/float64(n.s.Now()), m["port1_link_util"], 1e-9)
	keys := MetricKeys(m)
	assert.IsIncreasing(t, keys)
	assert.Contains(t, keys, "port0_vl0_buf_mean_blocks")
}

// TestArbLossesAndConflicts: hosts 0 and 1 each send one packet to host 2 at
// the same instant. Both heads are ready on the same edge, so the first
// round sees two requests for output 2 (one conflict) and grants one; the
// loser is not a candidate again until output 2 can take another packet,
// and then it is alone. Totals: 1 conflict, 1 loss.
func TestArbLossesAndConflicts(t *testing.T) {
	cfg := smallConfig(3, 1)
	n := newTestNet(t, cfg, netOpts{timing: ndr(13000)})
	n.eps[0].send(n.packet(0, 2, 0, 2024))
	n.eps[1].send(n.packet(1, 2, 0, 2024))
	n.s.StopAt(2 * ib.Microsecond)
	require.NoError(t, n.s.Run())
	require.Len(t, n.eps[2].got, 2)
	m := n.sw.Metrics()
	assert.Equal(t, 1.0, m["port2_xbar_conflicts"])
	assert.Equal(t, 1.0, m["port0_vl0_arb_losses"]+m["port1_vl0_arb_losses"])
}
