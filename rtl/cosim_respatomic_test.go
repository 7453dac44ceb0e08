package rtl

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ---- hca_responder's atomics <-> hca.Responder + hca.Device.atomic ----
//
// FETCH_ADD and CMP_SWAP go to the model's Receive (its key check, the
// alignment check, the responder resource) and, accepted or a duplicate
// with its resource, are executed here as hca.Device.atomic does: the 8
// bytes at the VA read little-endian, the result written back, SaveAtomic,
// an ATOMIC ACKNOWLEDGE with the original value and the MSN after the
// atomic (a duplicate: the saved value, the current MSN, nothing written).
// In the testbench's log an atomic ACK is rd 4 with its original value
// in va.

// respAtomMem is host memory's byte at a as the run sees it: written, or
// respMemByte's pattern (the testbench's atomic memory starts with it).
func (run *respRun) respAtomMem(a uint64) byte {
	if b, ok := run.mem[a]; ok {
		return b
	}
	return respMemByte(a)
}

// atomic executes the atomic a accepted (or answers its duplicate).
func (run *respRun) atomic(q *respQP, pkt *ib.Packet, a hca.RespAction) {
	var orig uint64
	if a.AtomicReplay {
		orig, _ = q.resp.LastAtomic(pkt.PSN)
		run.byKind["atomic duplicate"]++
	} else {
		var b [8]byte
		for i := range b {
			b[i] = run.respAtomMem(a.XlateAddr + uint64(i))
		}
		orig = binary.LittleEndian.Uint64(b[:])
		nv := orig + pkt.Atomic.SwapAdd
		if pkt.Opcode == ib.CompareSwap {
			nv = orig
			run.byKind["CMP_SWAP miss"]++
			if orig == pkt.Atomic.Compare {
				nv = pkt.Atomic.SwapAdd
				run.byKind["CMP_SWAP hit"]++
				run.byKind["CMP_SWAP miss"]--
			}
		}
		binary.LittleEndian.PutUint64(b[:], nv)
		for i := range b {
			run.mem[a.XlateAddr+uint64(i)] = b[i]
		}
		run.writes++
		run.atomReads = append(run.atomReads, a.XlateAddr)
		q.resp.SaveAtomic(pkt.PSN, orig)
		run.byKind["atomic"]++
	}
	d := respAck{qpn: q.qpn, psn: pkt.PSN, syn: hca.SynACKNoLimit, msn: q.resp.MSN(), rd: 4, va: orig}
	run.acks = append(run.acks, d)
	run.out = append(run.out, respOutPkt{ack: d})
	run.ackAfter = append(run.ackAfter, run.writes)
}

// newRespRunAtomics is newRespRunReads with atomics: PD i's REMOTE_ATOMIC
// region 128 bytes at abase + 128 i (the testbench's atomic memory).
func newRespRunAtomics(seed uint64, coalesce, maxRdAtomic int) *respRun {
	run := newRespRunReads(seed, coalesce, maxRdAtomic)
	run.atomics = true
	run.abase = 0x7654_3200 // 512-aligned, away from the WRITE (0x10000 << 12 ...) and READ (0x3_0000_0000 ...) regions
	for i := range 3 {
		run.atomRegions = append(run.atomRegions, run.table.Register(run.pds[i], run.abase+uint64(128*i), 128, hca.AccessRemoteAtomic))
	}
	return run
}

// newAtomic starts a FETCH_ADD or CMP_SWAP on q at an aligned word of its
// PD's atomic region, its compare the word as the model's memory holds it
// half the time (a hit); 1 in 20 each: a misaligned VA, a region without
// REMOTE_ATOMIC, a stale R_Key, another PD's region; 1 in 12 a PSN gap.
// It joins q.past, so dupRead resends it now and then.
func (run *respRun) newAtomic(q *respQP) {
	r := run.r
	mr := run.atomRegions[pdIndex(run.pds, q.pd)]
	va, rkey := mr.Addr+uint64(8*r.IntN(16)), mr.RKey
	switch x := r.IntN(20); {
	case x == 0:
		va += uint64(1 + r.IntN(7))
	case x == 1:
		o := run.region(q.pd)
		va, rkey = o.Addr, o.RKey // REMOTE_WRITE only: access denied
	case x == 2:
		rkey ^= uint32(1 + r.IntN(255))
	case x == 3:
		o := run.atomRegions[(pdIndex(run.pds, q.pd)+1)%3]
		va, rkey = o.Addr, o.RKey // another PD's
	}
	op := ib.FetchAdd
	var cmp uint64
	if r.IntN(2) == 0 {
		op = ib.CompareSwap
		var b [8]byte
		for i := range b {
			b[i] = run.respAtomMem(va + uint64(i))
		}
		cmp = binary.LittleEndian.Uint64(b[:])
		if r.IntN(2) == 0 {
			cmp ^= 1 << r.IntN(64) // a miss
		}
	}
	p := &respPkt{qpn: q.qpn, psn: q.next, op: op, ackReq: true, va: va, rkey: rkey, swap: r.Uint64(), cmp: cmp}
	if r.IntN(12) == 0 {
		p.psn = (q.next + uint32(1+r.IntN(2))) & 0xffffff // a PSN gap
	}
	q.msg, q.pos, q.lost = []*respPkt{p}, 0, false
	q.next = (p.psn + 1) & 0xffffff
	q.past = append(q.past, p)
	if len(q.past) > 6 {
		q.past = q.past[1:]
	}
}

// respAtomicDirected: context 0 (MTU 256, PD 0) with an atomic region of
// 512 bytes (REMOTE_ATOMIC) at abase, the cases of
// TestResponderAtomicCosim.
func respAtomicDirected(seed uint64) (run *respRun, qpn, p0 uint32, abase uint64, q1 uint32) {
	run = newRespRun(seed, 1)
	run.abase = 0x7654_3200 // 512-aligned, below every WRITE region (0x10000 << 12 and up)
	q := run.directedStart(256, run.cfg.MinRNRTimer)
	qpn, p0 = q.qpn, q.next
	am := run.table.Register(q.pd, run.abase, 512, hca.AccessRemoteAtomic)
	wo := run.regions[0] // PD 0's, REMOTE_WRITE only
	psn := p0
	atom := func(op ib.Opcode, p uint32, va uint64, rkey uint32, swap, cmp uint64) {
		run.send(q, &respPkt{qpn: q.qpn, psn: p, op: op, ackReq: true, va: va, rkey: rkey, swap: swap, cmp: cmp})
	}
	// 1: FETCH_ADD 5 at abase + 8.
	atom(ib.FetchAdd, psn, run.abase+8, am.RKey, 5, 0)
	// 2: CMP_SWAP at abase + 16, compare = the word there (a hit): swap in 0x1122334455667788.
	atom(ib.CompareSwap, psn+1, run.abase+16, am.RKey, 0x1122334455667788, respWord(run.abase+16))
	// 3: CMP_SWAP at abase + 24 with a compare that misses (the word + 1): nothing changes.
	atom(ib.CompareSwap, psn+2, run.abase+24, am.RKey, 0xdead, respWord(run.abase+24)+1)
	// 4: a duplicate of 1: the saved original value, not executed again.
	atom(ib.FetchAdd, psn, run.abase+8, am.RKey, 5, 0)
	// 5: FETCH_ADD at abase + 8 again (block lane 8 again): adds to case 1's result.
	atom(ib.FetchAdd, psn+3, run.abase+8, am.RKey, 1<<63, 0)
	// 6: a misaligned VA (abase + 36): NAK invalid request, ERR.
	atom(ib.FetchAdd, psn+4, run.abase+36, am.RKey, 1, 0)
	// 7: a new QP (same QPN) at Q1: an R_Key without REMOTE_ATOMIC (a WRITE region): NAK remote access.
	q = run.directedReconfig(256, run.cfg.MinRNRTimer)
	q1 = q.next
	atom(ib.FetchAdd, q1, wo.Addr, wo.RKey, 1, 0)
	run.stream[len(run.stream)-1].gap = true
	return run, qpn, p0 & 0xffffff, run.abase, q1
}

// respWord is the little-endian word of respMemByte's pattern at a.
func respWord(a uint64) uint64 {
	var b [8]byte
	for i := range b {
		b[i] = respMemByte(a + uint64(i))
	}
	return binary.LittleEndian.Uint64(b[:])
}

// TestResponderAtomicCosim: the atomic cases through the model and
// hca_responder; the model's ACKs and memory are first checked against the
// values derived by hand, then the RTL's against the model's.
func TestResponderAtomicCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	run, a, p, base, q1 := respAtomicDirected(cosimSeeds[0])
	at := func(k uint32) uint32 { return (p + k) & 0xffffff }
	// The pattern's words: w(x) = the 8 bytes respMemByte(x..x+7), little-endian.
	w8, w16, w24 := respWord(base+8), respWord(base+16), respWord(base+24)
	want := []respAck{
		{a, at(0), 0x1F, 1, 4, w8, 0},     // 1: FETCH_ADD at P: the original w8, MSN 1
		{a, at(1), 0x1F, 2, 4, w16, 0},    // 2: CMP_SWAP hit: the original w16 (swapped), MSN 2
		{a, at(2), 0x1F, 3, 4, w24, 0},    // 3: CMP_SWAP miss: the original w24 (unchanged), MSN 3
		{a, at(0), 0x1F, 3, 4, w8, 0},     // 4: the duplicate of P: its saved w8, the current MSN 3
		{a, at(3), 0x1F, 4, 4, w8 + 5, 0}, // 5: FETCH_ADD at P+3: w8 + 5 (case 1's result), MSN 4
		{a, at(4), 0x61, 4, 0, 0, 0},      // 6: misaligned: NAK invalid request at P+4, the MSN still 4
		{a, q1, 0x62, 0, 0, 0, 0},         // 7: no REMOTE_ATOMIC: NAK remote access at Q1
	}
	assert.Equal(t, want, run.acks, "the model's ACKs")
	le := func(a uint64) uint64 {
		var b [8]byte
		for i := range b {
			b[i] = run.mem[a+uint64(i)]
		}
		return binary.LittleEndian.Uint64(b[:])
	}
	// Memory after: w8 + 5 + 2^63 (1 then 5), 0x1122334455667788 at +16, w24
	// written back unchanged at +24 (a CMP_SWAP miss still writes), 24 bytes in all.
	assert.Equal(t, w8+5+1<<63, le(base+8))
	assert.Equal(t, uint64(0x1122334455667788), le(base+16))
	assert.Equal(t, w24, le(base+24))
	assert.Len(t, run.mem, 24)
	assert.Equal(t, respCounts{acks: 0, naks: 2, dup: 1}, run.want)
	res := runResp(t, context.Background(), t.TempDir(), run, 1, nil)
	require.NotEmpty(t, res.acks)
	t.Logf("%d cycles, %d ACKs", res.cycles, len(res.acks))
	assert.Empty(t, run.check(res), "hca_responder against the model")
}

// TestResponderAtomicRandomCosim: random runs of WRITEs, READs and atomics
// (their duplicates, gaps, key failures, misaligned VAs) through the model
// and hca_responder (RD_RES 4, so resources recycle and an old atomic's
// duplicate finds none); ACK_COALESCE 3 and 1.
func TestResponderAtomicRandomCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	respRandomRuns(t, func(seed uint64, coalesce int) *respRun { return newRespRunAtomics(seed, coalesce, 4) }, nil,
		"atomic", "atomic duplicate", "atomic duplicate dropped", "atomic misaligned", "CMP_SWAP hit",
		"CMP_SWAP miss", "R_Key access_denied", "R_Key pd_mismatch", "READ < MTU", "ahead, NAK")
}
