package hca

import (
	"os"
	"strings"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
)

type traceRecorder struct{ events []components.TraceEvent }

func (r *traceRecorder) Func(ctx sim.HookCtx) {
	if ctx.Pos == components.HookPosTrace {
		r.events = append(r.events, ctx.Item.(*components.TraceEvent).Clone())
	}
}

func TestTraceEvents(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	var ra, rb traceRecorder
	p.a.AcceptHook(&ra)
	p.b.AcceptHook(&rb)
	p.a.EnableStageTrace()
	p.b.EnableStageTrace()
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA,
		Length: 5000, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	var wcs [1]WC
	p.runUntil(t, func() bool { return p.a.PollCQ(p.qa.SendCQ, wcs[:]) > 0 })
	kinds := func(r *traceRecorder, path string) map[string]int {
		m := map[string]int{}
		lastValid := map[string]int64{}
		for _, e := range r.events {
			if e.Kind == components.TraceStage {
				// Waveform handshakes, checked below: not transport events.
				st, ok := e.Str("stage")
				require.True(t, ok, "a stage event names its stage")
				lastValid[st], _ = e.Int("valid")
				continue
			}
			m[e.Kind.String()]++
			if e.Kind == components.TraceInject || e.Kind == components.TraceDeliver {
				_, ok := e.Int("seq")
				assert.True(t, ok, "packet events carry the packet fields")
				continue
			}
			_, ok := e.Int("qpn")
			assert.True(t, ok, "every transport event names its QP")
			assert.Equal(t, path, e.Path)
		}
		// Every stage that held an item announced it, and is empty (valid
		// 0) once the message has completed.
		assert.NotEmpty(t, lastValid, "stage valid/ready edges announced")
		for st, v := range lastValid {
			assert.Zero(t, v, "stage %s still valid at the end", st)
		}
		return m
	}
	// Requester: the doorbell (queue sq_doorbell) and the WQE fetch, one
	// L_Key check, two payload reads (5000 B = 4096 + 904), the received
	// ACK, the CQE.
	// Two packets injected, one ACK delivered.
	assert.Equal(t, map[string]int{"wqe_fetch": 2, "key_check": 1, "dma_read": 2, "ack": 1, "cqe": 1,
		"inject": 2, "deliver": 1}, kinds(&ra, "Fabric.Host[0].HCA"))
	// Responder: two packets delivered, one R_Key check, two payload
	// writes, one ACK sent (injected).
	assert.Equal(t, map[string]int{"key_check": 1, "dma_write": 2, "ack": 1, "deliver": 2, "inject": 1},
		kinds(&rb, "Fabric.Host[1].HCA"))
	for i := 1; i < len(ra.events); i++ {
		assert.GreaterOrEqual(t, ra.events[i].Time, ra.events[i-1].Time)
	}
}

func TestSchedulerRoundRobin(t *testing.T) {
	// A transmit buffer of one packet makes every grant contended, so the
	// scheduler's choice shows in the wire order.
	cfg := Defaults()
	cfg.TxBufferBytes = 4200
	p := newPair(t, edrLink(), cfg, 1<<16)
	// A second connected QP pair on the same hosts.
	qa2 := p.a.CreateQP(p.qa.PD, p.qa.SendCQ, p.qa.RecvCQ, 64, 64)
	qb2 := p.b.CreateQP(p.qb.PD, p.qb.SendCQ, p.qb.RecvCQ, 64, 64)
	require.NoError(t, ConnectRC(qa2, qb2, 4096, 100, 200))
	var rb traceRecorder
	p.b.AcceptHook(&rb)
	for _, qp := range []*QP{p.qa, qa2} {
		require.NoError(t, p.a.PostSend(qp, &SendWR{Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA,
			Length: 4 * 4096, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	}
	var wcs [2]WC
	n := 0
	p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[n:]); return n == 2 })
	var order []int64
	for _, e := range rb.events {
		if e.Kind == components.TraceDMAWrite {
			q, _ := e.Int("qpn")
			order = append(order, q)
		}
	}
	// Once both QPs have their WQEs, grants alternate packet by packet.
	// The QPs' WQEs become ready at different times (the first one's L_Key
	// check misses the key cache, the second hits), so one may get the
	// first grants alone.
	require.Len(t, order, 8)
	b1, b2 := int64(p.qb.Num), int64(qb2.Num)
	alternations := 0
	for i := 1; i < len(order); i++ {
		if order[i] != order[i-1] {
			alternations++
		}
	}
	assert.ElementsMatch(t, []int64{b1, b1, b1, b1, b2, b2, b2, b2}, order)
	t.Logf("order %v", order)
	assert.GreaterOrEqual(t, alternations, 5, "order %v", order)
}

// TestTraceFormatDocsListStages: the stage row of docs/trace-format.md names
// the HCA as the emitter of stage events and lists every stage name a
// stage event can carry.
func TestTraceFormatDocsListStages(t *testing.T) {
	doc, err := os.ReadFile("../docs/trace-format.md")
	require.NoError(t, err)
	var row string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| `stage` |") {
			row = l
		}
	}
	require.NotEmpty(t, row, "docs/trace-format.md has a stage row")
	assert.Contains(t, row, "(HCA")
	for _, st := range StageNames {
		assert.Contains(t, row, "`"+st+"`")
	}
}
