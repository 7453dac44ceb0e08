package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// TestFenceWQEEncoding: IBV_SEND_FENCE writes fence mode 4 (MLX5_WQE_CTRL_FENCE,
// 4 << 5) into the ctrl segment's fm_ce_se byte beside the CQ_UPDATE bit,
// and decodes back as a fenced WQE; no fence writes mode 0. Through
// PostSend, the WQE after a BIND_MW or LOCAL_INV gets the initiator small
// fence (mode 1, 1 << 5) as libmlx5's next_fence gives it, across posts,
// unless it asks for a fence itself; the WQE after that gets none again.
func TestFenceWQEEncoding(t *testing.T) {
	for _, op := range []WROpcode{WRRDMAWrite, WRSend, WRRDMARead, WRFetchAdd, WRLocalInv, WRBindMW} {
		for _, fence := range []bool{false, true} {
			wr := SendWR{Opcode: op, Fence: fence, Signaled: true, Length: 64, LKey: 0x101, LocalAddr: 0x1000,
				RemoteAddr: 0x2000, RKey: 0x203}
			if op.isLocal() {
				wr.Length, wr.LKey, wr.LocalAddr = 0, 0, 0
			}
			var buf [maxWQEBBs * WQEBBBytes]byte
			n := EncodeSendWQE(buf[:], &wr, 5, 0x11, nil)
			want := uint8(ctrlCQUpdate)
			if fence {
				want |= 0x80
			}
			assert.Equal(t, want, buf[11], "%v fence %v: fm_ce_se", op, fence)
			w, err := DecodeSendWQE(buf[:n])
			require.NoError(t, err)
			assert.Equal(t, fence, w.Fenced(), "%v fence %v", op, fence)
			assert.True(t, w.Signaled)
		}
	}
	// Modes 1 (small fence) and 3 (strong ordering) do not wait for READs.
	for mode, fenced := range map[uint8]bool{0: false, 1: false, 2: true, 3: false, 4: true} {
		assert.Equal(t, fenced, (&SendWQE{FenceMode: mode}).Fenced(), "mode %d", mode)
	}

	p := newMWPair(t, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
	bind, _ := p.bindWR(0, 4096, AccessRemoteWrite)
	write := SendWR{Opcode: WRRDMAWrite, LocalAddr: p.bufB, Length: 8, LKey: p.mrB.LKey, RemoteAddr: p.bufA, RKey: p.mrA.RKey}
	fenced := write
	fenced.Fence = true
	inv := SendWR{Opcode: WRLocalInv, InvalidateRKey: 0x1234}
	steps := []struct {
		wr   SendWR
		mode uint8
	}{
		{bind, 0},   // nothing before it
		{write, 1},  // after a bind: small fence
		{write, 0},  // after a WRITE: none
		{inv, 0},    //
		{fenced, 4}, // after a LOCAL_INV but fenced: fence and small fence
		{inv, 0},    //
		{write, 1},  // after a LOCAL_INV: small fence
	}
	for i, s := range steps {
		pi := p.qb.sqPI
		require.NoError(t, p.b.PostSend(p.qb, &s.wr))
		var ctrl [WQEBBBytes]byte
		p.qb.readSQ(pi, ctrl[:])
		assert.Equal(t, s.mode, ctrl[11]>>5, "WR %d (%v): fence mode", i, s.wr.Opcode)
	}
}

// fenceRun posts the work requests wrs gives on A's QP of a fresh EDR
// pair (0.5 m, MTU 4096, defaults), runs until each has completed and
// returns A's trace events and completions.
func fenceRun(t *testing.T, mk func(p *pair) []SendWR) (*pair, []components.TraceEvent, []WC) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	var ra traceRecorder
	p.a.AcceptHook(&ra)
	wrs := mk(p)
	for i := range wrs {
		wrs[i].ID = uint64(i + 1)
		wrs[i].Signaled = true
		require.NoError(t, p.a.PostSend(p.qa, &wrs[i]))
	}
	wcs := make([]WC, len(wrs))
	n := 0
	p.runUntil(t, func() bool { n += p.a.PollCQ(p.qa.SendCQ, wcs[n:]); return n == len(wrs) })
	require.Equal(t, len(wrs), n)
	return p, ra.events, wcs
}

// packetTimes returns the times of the events of kind whose packet opcode
// is op, in order.
func packetTimes(evs []components.TraceEvent, kind components.TraceKind, op ib.Opcode) []ib.PS {
	var ts []ib.PS
	for _, e := range evs {
		if s, ok := e.Str("op"); ok && e.Kind == kind && s == op.String() {
			ts = append(ts, e.Time)
		}
	}
	return ts
}

// TestFencedWriteWaitsForRead: A posts an 8192-byte RDMA READ (two
// responses at MTU 4096), then an inline 8-byte RDMA WRITE, both by
// BlueFlame.
//
// Without the fence the WRITE follows the READ request at once: the READ
// WQE waits for its cold L_Key lookup, the WRITE (posted 60 ns later, no
// key to check) is decoded by then and waits behind it in order; both
// reach the requester together and are granted together. The WRITE's
// packet is built one transport-stage issue interval (4 cycles, 4 ns)
// after the READ request's and goes on the wire when that is done and the
// READ request's 42 bytes (LRH 8 + BTH 12 + RETH 16 + ICRC 4 + VCRC 2)
// have left (3.36 ns at EDR 4x's 12.5 bytes/ns): inject(WRITE) =
// inject(READ) + max(4 ns, 3.36 ns).
//
// With the fence the WRITE waits in the requester until the READ's last
// response has been taken in: it is handed on as that response is
// delivered, built by the transport stage, and leaves at once (the port
// is idle: A sends nothing while it waits): inject(WRITE) =
// deliver(READ_RESPONSE_LAST) + transport_tx latency. Its first response
// arriving is not enough: the WRITE is not on the wire then. The READ
// request's departure and its last response's arrival are derived stage
// by stage below, so the fenced WRITE's departure is too: 3262.578 ns
// after the posts, against 991.857 ns without the fence.
func TestFencedWriteWaitsForRead(t *testing.T) {
	cfg := Defaults()
	lc := edrLink()
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	timing := lc.Timing(lc.LengthM)
	readReq := ib.Packet{Opcode: ib.RDMAReadRequest}
	require.Equal(t, 42, readReq.WireBytes())

	run := func(fence bool) (readInject, firstResp, lastResp, writeInject ib.PS) {
		_, evs, wcs := fenceRun(t, func(p *pair) []SendWR {
			return []SendWR{
				{Opcode: WRRDMARead, LocalAddr: p.bufA, Length: 8192, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey},
				{Opcode: WRRDMAWrite, Inline: true, LocalAddr: p.bufA + 16384, Length: 8, RemoteAddr: p.bufB + 16384,
					RKey: p.mrB.RKey, Fence: fence},
			}
		})
		assert.Equal(t, WCSuccess, wcs[0].Status)
		assert.Equal(t, WCRDMARead, wcs[0].Opcode)
		assert.Equal(t, WCSuccess, wcs[1].Status)
		r := packetTimes(evs, components.TraceInject, ib.RDMAReadRequest)
		first := packetTimes(evs, components.TraceDeliver, ib.RDMAReadResponseFirst)
		last := packetTimes(evs, components.TraceDeliver, ib.RDMAReadResponseLast)
		w := packetTimes(evs, components.TraceInject, ib.RDMAWriteOnly)
		require.Len(t, r, 1)
		require.Len(t, first, 1)
		require.Len(t, last, 1)
		require.Len(t, w, 1)
		return r[0], first[0], last[0], w[0]
	}

	readInject, _, lastResp, writeInject := run(false)
	// The READ request leaves as TestOneMessageLatencyDerivedStageByStage's
	// WRITE does, but its WQE has an L_Key to look up, cold: post 60 +
	// BlueFlame MMIO 308 + doorbell 20 + parse 10 + the lookup's miss
	// (10-cycle lookup, 24-byte request 1.524, read latency 533, 84-byte
	// completion 5.333) + transport_tx 40 = 987.857 ns.
	ns := func(f float64) ib.PS { return ib.PS(f * 1000) }
	pcie := NewPCIe(cfg.PCIe)
	wantRead := ns(cfg.Host.PostNS) + ns(cfg.PCIe.MMIOLatencyNS) + ib.PS(cfg.Doorbell.LatencyCycles)*cyc +
		ib.PS(cfg.WQEFetch.LatencyCycles)*cyc +
		ib.PS(cfg.KeyCheck.LatencyCycles)*cyc + pcie.SerPS(cfg.PCIe.TLPOverheadBytes) + ns(cfg.PCIe.ReadLatencyNS) +
		pcie.SerPS(MKeyContextBytes+cfg.PCIe.CompletionOverheadBytes) +
		ib.PS(cfg.TransportTx.LatencyCycles)*cyc
	require.Equal(t, ib.PS(987_857), wantRead)
	assert.Equal(t, wantRead, readInject)
	// Its last response's arrival at A: the request crosses (cable and
	// FEC latency, 42 bytes) and is parsed (transport_rx 40); B looks its
	// R_Key up, cold (the same miss, 549.857 ns), the dma stage (10
	// cycles) issues the 16 read requests of 512 bytes for the 8192 bytes
	// back to back, and the host answers the first 533 ns after its
	// request: from then the downstream link carries the 128 completions
	// of 64 bytes (84 with the header, 5.333 ns each) back to back, so the
	// second response's payload is on chip 682.624 ns later; built
	// (transport_tx 40), it crosses (4126 bytes, 330.08 ns at 12.5
	// bytes/ns) and is parsed (40). 2850.360 + 2.138 + 330.080 + 40 =
	// 3222.578 ns.
	keyMiss := ib.PS(cfg.KeyCheck.LatencyCycles)*cyc + pcie.SerPS(cfg.PCIe.TLPOverheadBytes) + ns(cfg.PCIe.ReadLatencyNS) +
		pcie.SerPS(MKeyContextBytes+cfg.PCIe.CompletionOverheadBytes)
	reqAtB := wantRead + timing.Latency() + timing.Serialization(42) + ib.PS(cfg.TransportRx.LatencyCycles)*cyc
	require.Equal(t, 64, cfg.PCIe.ReadCompletionBytes)
	require.Equal(t, 512, cfg.PCIe.MRRSBytes)
	cpls := ib.PS(8192/cfg.PCIe.ReadCompletionBytes) * pcie.SerPS(cfg.PCIe.ReadCompletionBytes+cfg.PCIe.CompletionOverheadBytes)
	lastOnChip := reqAtB + keyMiss + ib.PS(cfg.DMA.LatencyCycles)*cyc + pcie.SerPS(cfg.PCIe.TLPOverheadBytes) +
		ns(cfg.PCIe.ReadLatencyNS) + cpls
	resp := ib.Packet{Opcode: ib.RDMAReadResponseLast, PayloadLen: 4096}
	require.Equal(t, 4126, resp.WireBytes())
	wantLast := lastOnChip + ib.PS(cfg.TransportTx.LatencyCycles)*cyc + timing.Latency() + timing.Serialization(4126) +
		ib.PS(cfg.TransportRx.LatencyCycles)*cyc
	require.Equal(t, ib.PS(3_222_578), wantLast)
	assert.Equal(t, wantLast, lastResp)
	gap := max(timing.Serialization(42), ib.PS(cfg.TransportTx.IntervalCycles)*cyc)
	assert.Equal(t, ib.PS(4000), gap)
	assert.Equal(t, readInject+gap, writeInject, "unfenced: right behind the READ request")
	assert.Less(t, writeInject, lastResp)

	readInject2, firstResp, lastResp2, fencedInject := run(true)
	assert.Equal(t, readInject, readInject2, "the READ goes as before")
	assert.Equal(t, wantLast, lastResp2, "and is answered as before")
	assert.Less(t, firstResp, lastResp2)
	assert.Equal(t, wantLast+ib.PS(cfg.TransportTx.LatencyCycles)*cyc, fencedInject,
		"fenced: built as the READ's last response is taken in")
	assert.Equal(t, ib.PS(3_262_578), fencedInject)
}

// TestFencedWriteWaitsForAtomic: a FETCH_ADD, then a fenced inline WRITE:
// as behind a READ, the WRITE is built as the ATOMIC_ACKNOWLEDGE is
// delivered (inject = deliver + transport_tx latency) and not before;
// without the fence it follows the atomic's request at once, before its
// answer is back.
func TestFencedWriteWaitsForAtomic(t *testing.T) {
	cfg := Defaults()
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	for _, fence := range []bool{false, true} {
		_, evs, wcs := fenceRun(t, func(p *pair) []SendWR {
			return []SendWR{
				{Opcode: WRFetchAdd, LocalAddr: p.bufA, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey, CompareAdd: 5},
				{Opcode: WRRDMAWrite, Inline: true, LocalAddr: p.bufA + 64, Length: 8, RemoteAddr: p.bufB + 64,
					RKey: p.mrB.RKey, Fence: fence},
			}
		})
		assert.Equal(t, WCFetchAdd, wcs[0].Opcode)
		assert.Equal(t, WCSuccess, wcs[0].Status)
		assert.Equal(t, WCSuccess, wcs[1].Status)
		ack := packetTimes(evs, components.TraceDeliver, ib.AtomicAcknowledge)
		w := packetTimes(evs, components.TraceInject, ib.RDMAWriteOnly)
		require.Len(t, ack, 1)
		require.Len(t, w, 1)
		if fence {
			assert.Equal(t, ack[0]+ib.PS(cfg.TransportTx.LatencyCycles)*cyc, w[0])
		} else {
			assert.Less(t, w[0], ack[0])
		}
	}
}

// TestFenceWithoutReadsWaitsForNothing: a fence waits for READs and
// atomics only. A WRITE, then a fenced WRITE (the first unacknowledged
// when the second is ready) leave at exactly the times a WRITE and an
// unfenced WRITE do.
func TestFenceWithoutReadsWaitsForNothing(t *testing.T) {
	var times [2][]ib.PS
	for i, fence := range []bool{false, true} {
		_, evs, _ := fenceRun(t, func(p *pair) []SendWR {
			return []SendWR{
				{Opcode: WRRDMAWrite, LocalAddr: p.bufA, Length: 6000, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey},
				{Opcode: WRRDMAWrite, Inline: true, LocalAddr: p.bufA + 8192, Length: 8, RemoteAddr: p.bufB + 8192,
					RKey: p.mrB.RKey, Fence: fence},
			}
		})
		times[i] = packetTimes(evs, components.TraceInject, ib.RDMAWriteOnly)
		require.Len(t, times[i], 1)
		acks := packetTimes(evs, components.TraceDeliver, ib.Acknowledge)
		require.NotEmpty(t, acks)
		assert.Less(t, times[i][0], acks[0], "the second WRITE leaves before the first is acknowledged")
	}
	assert.Equal(t, times[0], times[1])
}

// TestFencedBindHoldsTheQueue: a fenced BIND_MW behind a READ waits as a
// fenced WRITE does, and the WQEs behind it wait with it (the send queue
// is in order): an inline WRITE after the bind, itself not fenced, is
// built as the READ's last response is delivered. Without the fence the
// WRITE leaves before the READ's first response is back.
func TestFencedBindHoldsTheQueue(t *testing.T) {
	cfg := Defaults()
	cyc := ib.CyclePS(cfg.CoreClockMHz)
	for _, fence := range []bool{false, true} {
		_, evs, wcs := fenceRun(t, func(p *pair) []SendWR {
			region := p.a.RegMR(p.qa.PD, p.bufA+32768, 4096, AccessLocalWrite|AccessRemoteWrite|AccessMWBind)
			mw, err := p.a.AllocMW(p.qa.PD, MWType2)
			require.NoError(t, err)
			return []SendWR{
				{Opcode: WRRDMARead, LocalAddr: p.bufA, Length: 8192, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey},
				{Opcode: WRBindMW, Fence: fence, Bind: BindReq{MWKey: mw.RKey, NewKey: IncRKey(mw.RKey), MRKey: region.LKey,
					Addr: region.Addr, Length: 4096, Access: AccessRemoteWrite}},
				{Opcode: WRRDMAWrite, Inline: true, LocalAddr: p.bufA + 16384, Length: 8, RemoteAddr: p.bufB + 16384, RKey: p.mrB.RKey},
			}
		})
		for i, wc := range wcs {
			assert.Equal(t, WCSuccess, wc.Status, "WR %d", i)
		}
		assert.Equal(t, WCBindMW, wcs[1].Opcode)
		first := packetTimes(evs, components.TraceDeliver, ib.RDMAReadResponseFirst)
		last := packetTimes(evs, components.TraceDeliver, ib.RDMAReadResponseLast)
		w := packetTimes(evs, components.TraceInject, ib.RDMAWriteOnly)
		require.Len(t, first, 1)
		require.Len(t, last, 1)
		require.Len(t, w, 1)
		if fence {
			assert.Equal(t, last[0]+ib.PS(cfg.TransportTx.LatencyCycles)*cyc, w[0])
		} else {
			assert.Less(t, w[0], first[0])
		}
	}
}

// TestFencedWRFlushedWhenReadFails: a READ with a bad R_Key, then a fenced
// WRITE: the READ's remote access error NAK puts the QP in ERR, and the
// WRITE waiting on it is flushed (WR_FLUSH_ERR), not left waiting for an
// answer that will not come. Nothing but the READ request is sent.
func TestFencedWRFlushedWhenReadFails(t *testing.T) {
	_, evs, wcs := fenceRun(t, func(p *pair) []SendWR {
		return []SendWR{
			{Opcode: WRRDMARead, LocalAddr: p.bufA, Length: 8192, LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey ^ 0x80},
			{Opcode: WRRDMAWrite, Inline: true, LocalAddr: p.bufA + 16384, Length: 8, RemoteAddr: p.bufB + 16384,
				RKey: p.mrB.RKey, Fence: true},
		}
	})
	assert.Equal(t, WCRemAccessErr, wcs[0].Status)
	assert.Equal(t, WCWRFlushErr, wcs[1].Status)
	assert.Empty(t, packetTimes(evs, components.TraceInject, ib.RDMAWriteOnly))
	assert.Len(t, packetTimes(evs, components.TraceInject, ib.RDMAReadRequest), 1)
}

// TestFencedWRFlushedByModifyToErr: the application moves the QP to ERR
// while a fenced WRITE waits behind a READ: both flush at once, before the
// READ's responses (which still come, and are dropped) are back.
func TestFencedWRFlushedByModifyToErr(t *testing.T) {
	p := newPair(t, edrLink(), Defaults(), 1<<16)
	var ra traceRecorder
	p.a.AcceptHook(&ra)
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMARead, LocalAddr: p.bufA, Length: 8192,
		LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 2, Opcode: WRRDMAWrite, Inline: true, LocalAddr: p.bufA + 16384,
		Length: 8, RemoteAddr: p.bufB + 16384, RKey: p.mrB.RKey, Fence: true}))
	// 1.5 µs after the posts the READ request has left (at about 988 ns,
	// TestFencedWriteWaitsForRead) and its first response is not back:
	// the WRITE waits. The application then modifies the QP.
	waited := false
	p.s.Schedule(1500*ib.Nanosecond, &poster{fn: func() {
		waited = p.qa.fenceWait
		require.NoError(t, p.a.ModifyQP(p.qa, QPAttr{State: QPErr}))
	}}, 0)
	var wcs [2]WC
	n := 0
	var flushedAt ib.PS
	p.a.OnCQE = func(_ *CQ, now ib.PS) { flushedAt = now }
	p.s.StopAt(ib.Millisecond)
	require.NoError(t, p.s.Run())
	n += p.a.PollCQ(p.qa.SendCQ, wcs[n:])
	require.Equal(t, 2, n)
	assert.True(t, waited, "the WRITE waited behind the READ")
	assert.Equal(t, uint64(1), wcs[0].WRID)
	assert.Equal(t, WCWRFlushErr, wcs[0].Status)
	assert.Equal(t, uint64(2), wcs[1].WRID)
	assert.Equal(t, WCWRFlushErr, wcs[1].Status)
	first := packetTimes(ra.events, components.TraceDeliver, ib.RDMAReadResponseFirst)
	require.NotEmpty(t, first, "the responses still come")
	assert.Less(t, flushedAt, first[0], "the WRITE flushed without waiting for them")
	assert.Empty(t, packetTimes(ra.events, components.TraceInject, ib.RDMAWriteOnly))
}
