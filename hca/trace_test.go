package hca

import (
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
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true, LocalAddr: p.bufA,
		Length: 5000, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	var wcs [1]WC
	p.runUntil(t, func() bool { return p.a.PollCQ(p.qa.SendCQ, wcs[:]) > 0 })
	kinds := func(r *traceRecorder, path string) map[string]int {
		m := map[string]int{}
		for _, e := range r.events {
			m[e.Kind.String()]++
			_, ok := e.Int("qpn")
			assert.True(t, ok, "every transport event names its QP")
			assert.Equal(t, path, e.Path)
		}
		return m
	}
	// Requester: doorbell and WQE fetch, one L_Key check, two payload reads
	// (5000 B = 4096 + 904), the received ACK, the CQE.
	assert.Equal(t, map[string]int{"wqe_fetch": 2, "key_check": 1, "dma_read": 2, "ack": 1, "cqe": 1}, kinds(&ra, "Fabric.Host[0].HCA"))
	// Responder: one R_Key check, two payload writes, one ACK sent.
	assert.Equal(t, map[string]int{"key_check": 1, "dma_write": 2, "ack": 1}, kinds(&rb, "Fabric.Host[1].HCA"))
	for i := 1; i < len(ra.events); i++ {
		assert.GreaterOrEqual(t, ra.events[i].Time, ra.events[i-1].Time)
	}
}
