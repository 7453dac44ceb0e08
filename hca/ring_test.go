package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// recvCycleRig sends one SEND at a time from A to B: each round B posts a
// receive (to its own RQ, or to its SRQ), A posts a SEND, the simulation
// runs until both are complete, and both CQs are polled. In steady state
// (the key caches warm, the rings at their size) a round is what a
// perftest send_bw iteration does on each side.
type recvCycleRig struct {
	s        *components.Sim
	a, b     *Device
	qa, qb   *QP
	srq      *SRQ
	mrA, mrB MR
	bufA     uint64
	bufB     uint64
	wc       [4]WC
	rounds   int
	pause    *poster // pauses the engine: the end of a round
	// shape, if set, changes each round's SEND before it is posted (by
	// value: a pointer handed to a func value would move the WR to the
	// heap, an allocation per round of the test's own).
	shape func(SendWR) SendWR
}

func newRecvCycleRig(t *testing.T, useSRQ bool) *recvCycleRig {
	return newRecvCycleRigCfg(t, useSRQ, Defaults())
}

// newRecvCycleRigCfg is newRecvCycleRig with both hosts on cfg.
func newRecvCycleRigCfg(t *testing.T, useSRQ bool, cfg Config) *recvCycleRig {
	lc := edrLink()
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	r := &recvCycleRig{s: s, a: a, b: b}
	r.pause = &poster{fn: s.Engine.Pause}
	pdA, pdB := a.AllocPD(), b.AllocPD()
	r.qa = a.CreateQP(pdA, a.CreateCQ(64), a.CreateCQ(64), 64, 64)
	if useSRQ {
		srq, err := b.CreateSRQ(pdB, 63, 1)
		require.NoError(t, err)
		r.srq = srq
		r.qb, err = b.CreateQPSRQ(pdB, b.CreateCQ(64), b.CreateCQ(64), 64, srq)
		require.NoError(t, err)
	} else {
		r.qb = b.CreateQP(pdB, b.CreateCQ(64), b.CreateCQ(64), 64, 64)
	}
	require.NoError(t, ConnectRC(r.qa, r.qb, lc.MTU, 0x10, 0x20))
	acc := AccessLocalWrite | AccessRemoteWrite
	r.bufA, r.bufB = a.Malloc(4096), b.Malloc(4096)
	r.mrA, r.mrB = a.RegMR(pdA, r.bufA, 4096, acc), b.RegMR(pdB, r.bufB, 4096, acc)
	return r
}

// round runs one message end to end; it fails t if a post is refused or a
// completion is missing.
func (r *recvCycleRig) round(t *testing.T) {
	rwr := RecvWR{ID: uint64(r.rounds), Addr: r.bufB, Length: 256, LKey: r.mrB.LKey}
	var err error
	if r.srq != nil {
		err = r.b.PostSRQRecv(r.srq, &rwr)
	} else {
		err = r.b.PostRecv(r.qb, &rwr)
	}
	if err != nil {
		t.Fatal(err)
	}
	swr := SendWR{ID: uint64(r.rounds), Opcode: WRSend, Signaled: true, LocalAddr: r.bufA, Length: 64, LKey: r.mrA.LKey}
	if r.shape != nil {
		swr = r.shape(swr)
	}
	if err := r.a.PostSend(r.qa, &swr); err != nil {
		t.Fatal(err)
	}
	// The run pauses 20 µs on: a 64-byte SEND lands and is ACKed in
	// about 1.3 µs with cold key caches (TestSRQSharedByThreeQPs' gap);
	// the link's periodic flow-control packets keep the event queue from
	// ever emptying, so Run alone would not return.
	r.s.Schedule(r.s.Now()+20*ib.Microsecond, r.pause, 1)
	r.s.Engine.Continue()
	if err := r.s.Run(); err != nil {
		t.Fatal(err)
	}
	if r.b.PollCQ(r.qb.RecvCQ, r.wc[:]) != 1 || r.wc[0].Status != WCSuccess || r.wc[0].WRID != uint64(r.rounds) {
		t.Fatalf("round %d: receive completion %+v", r.rounds, r.wc[0])
	}
	if r.a.PollCQ(r.qa.SendCQ, r.wc[:]) != 1 || r.wc[0].Status != WCSuccess {
		t.Fatalf("round %d: send completion %+v", r.rounds, r.wc[0])
	}
	r.rounds++
}

// TestSteadyReceiveAllocatesNothing: a message received through the
// on-chip receive WQE cache, of the QP's own RQ or of an SRQ, allocates
// nothing once warm (the cache a ring, not a slice re-sliced at its front
// and appended to, which re-allocated each time it reached its backing
// array's end: one allocation per message at one message in flight).
func TestSteadyReceiveAllocatesNothing(t *testing.T) {
	for _, useSRQ := range []bool{false, true} {
		name := "rq"
		if useSRQ {
			name = "srq"
		}
		t.Run(name, func(t *testing.T) {
			r := newRecvCycleRig(t, useSRQ)
			for i := 0; i < 200; i++ { // warm: key caches, rings, pools
				r.round(t)
			}
			allocs := testing.AllocsPerRun(100, func() { r.round(t) })
			assert.Zero(t, allocs, "allocations per message")
		})
	}
}

// TestRingKeepsOrderAcrossWrapAndGrowth: entries come out in the order
// pushed while the ring wraps (pushes and pops interleaved past its end)
// and when it grows (a push to a full ring), and clear empties it.
func TestRingKeepsOrderAcrossWrapAndGrowth(t *testing.T) {
	var r ring[int]
	next, want := 0, 0
	pop := func() {
		v, ok := r.pop()
		require.True(t, ok)
		assert.Equal(t, want, v)
		want++
	}
	// Size 3: push 2, pop 1, repeated, wraps the ring's end many times.
	for i := 0; i < 10; i++ {
		r.push(next, 3)
		next++
		r.push(next, 3)
		next++
		pop()
	}
	// 10 held now: the ring grew from 3 to 12 on the way (3 → 6 → 12).
	assert.Equal(t, 10, r.len())
	assert.Equal(t, 12, r.fifo.Cap())
	for r.len() > 0 {
		pop()
	}
	assert.Equal(t, next, want)
	_, ok := r.pop()
	assert.False(t, ok)
	r.push(1, 3)
	r.clear()
	assert.Zero(t, r.len())
}
