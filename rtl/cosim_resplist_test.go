package rtl

import (
	"testing"

	"github.com/hcasim/hcasim/hca"
)

// ---- hca_responder: SENDs into receive WQEs of several elements ----
//
// The model: hca.Responder.Receive with a receive WQE whose SGL holds the
// list (hca.DecodeRecvWQE of a stride of several segments): the SEND's
// length checked against the elements' sum (LOC_LEN_ERR), every element's
// L_Key checked at the first packet in order up to the first that fails
// (LOC_PROT_ERR, NAK remote operational error), each packet's bytes
// scattered from the message's offset over the list (RespAction.RecvSGL,
// ScatterOff), one write per element part as hca.Device.scatter writes
// them (sglSlice: elements of no byte in the range left out).

// newRespRunLists is newRespRunSends with half the receive WQEs posted
// lists (postRecvList): the other draws as in the send runs, so the
// responder meets lists beside single elements, empty lists and WRITEs.
func newRespRunLists(seed uint64, coalesce int) *respRun {
	run := newRespRunSends(seed, coalesce)
	run.lists = true
	return run
}

// postRecvList posts to q a receive WQE of 2 to 8 elements (1 in 8: up
// to 32, hca.MaxRecvSGE) for a message of n bytes: their lengths a random
// cut of n to n + 299 bytes (1 in 12 fewer than n: LOC_LEN_ERR against the
// sum), one in six elements of 0 bytes (passed over by the scatter, its
// L_Key still checked), each at a random place in a region of q's PD with
// LOCAL_WRITE (1 in 5 the PD's region with LOCAL_WRITE only); 1 in 10 one
// element, any of them, with an L_Key that fails a rule (a stale variant,
// another PD's region, a region without LOCAL_WRITE, one byte past its
// region's end, a deregistered region). The WQE is what hca.DecodeRecvWQE
// reads from the segments hca.EncodeRecvWQE writes in the smallest stride
// that holds them (so the model takes the list as hca_rq hands it over).
func (run *respRun) postRecvList(q *respQP, n uint32) {
	r := run.r
	if len(q.rq) >= 48 {
		return
	}
	mr := run.region(q.pd)
	if r.IntN(5) == 0 {
		mr = run.localRegions[pdIndex(run.pds, q.pd)]
	}
	cnt := 2 + r.IntN(7)
	if r.IntN(8) == 0 {
		cnt = 2 + r.IntN(hca.MaxRecvSGE-1)
	}
	total := n + uint32(r.IntN(300))
	if n > 0 && r.IntN(12) == 0 {
		total = uint32(r.IntN(int(n)))
	}
	// cnt - 1 random cuts of [0, total], sorted: the elements' lengths.
	cuts := make([]uint32, cnt+1)
	cuts[cnt] = total
	for i := 1; i < cnt; i++ {
		cuts[i] = uint32(r.IntN(int(total) + 1))
	}
	for i := 1; i < cnt; i++ {
		for j := i + 1; j < cnt; j++ {
			if cuts[j] < cuts[i] {
				cuts[i], cuts[j] = cuts[j], cuts[i]
			}
		}
	}
	wr := hca.RecvWR{SGL: make([]hca.SGE, cnt)}
	for i := range wr.SGL {
		l := cuts[i+1] - cuts[i]
		if r.IntN(6) == 0 {
			l = 0
		}
		l = min(l, uint32(mr.Length))
		wr.SGL[i] = hca.SGE{Addr: mr.Addr + uint64(r.IntN(int(mr.Length)-int(l)+1)), Length: l, LKey: mr.LKey}
	}
	if r.IntN(10) == 0 {
		e := &wr.SGL[r.IntN(cnt)]
		switch r.IntN(5) {
		case 0:
			e.LKey ^= uint32(1 + r.IntN(255))
		case 1:
			o := run.region(run.pds[(r.IntN(2)+1+pdIndex(run.pds, q.pd))%3])
			e.Addr, e.LKey = o.Addr, o.LKey
		case 2:
			e.Addr, e.LKey = run.regions[8].Addr, run.regions[8].LKey
		case 3:
			e.Length = max(e.Length, 1)
			e.Addr = mr.Addr + mr.Length - uint64(e.Length) + 1
		case 4:
			e.Addr, e.LKey = run.regions[9].Addr, run.regions[9].LKey
		}
	}
	segs := 1
	for segs < cnt {
		segs *= 2
	}
	b := make([]byte, segs*hca.RecvWQEBytes)
	hca.EncodeRecvWQE(b, &wr)
	w := hca.DecodeRecvWQE(b)
	w.Index = q.rqIdx
	run.postAs(q, w, hca.RecvWR{Addr: wr.SGL[0].Addr, Length: w.Length, LKey: wr.SGL[0].LKey})
	run.byKind["list posted"]++
}

// scatter places a SEND packet's payload into its receive WQE's list as
// hca.Device.scatter does: the bytes [a.ScatterOff, + len(pay)) of the
// list's concatenation, one write per element part (hca sglSlice: each
// element's bytes in the range, at its address + the bytes of it before;
// elements of none left out), counting the kinds the RTL's part engine
// meets: a packet of several parts, a part whose address's lane is below
// its first payload byte's (the RTL reads that block before its first
// beat), a part ending inside a payload block the next part starts in
// (the block kept for it), an element of no byte passed over.
func (run *respRun) scatter(a hca.RespAction, pay []byte) {
	off, n := a.ScatterOff, uint64(len(pay))
	var start uint64 // the element's first byte in the message
	parts := 0
	p0 := uint64(0) // the part's first byte in the packet
	for _, e := range a.RecvSGL {
		if n == 0 {
			break
		}
		end := start + uint64(e.Length)
		if e.Length == 0 && off == start && parts > 0 {
			run.byKind["list element of 0 bytes passed over"]++
		}
		if off < end {
			skip := off - start
			take := min(uint64(e.Length)-skip, n)
			addr := e.Addr + skip
			for k := range take {
				run.mem[addr+k] = pay[p0+k]
			}
			run.writes++
			parts++
			if addr%64 < p0%64 {
				run.byKind["list part primed (its lane below its first byte's)"]++
			}
			if (p0+take)%64 != 0 && p0+take != uint64(len(pay)) {
				run.byKind["list part ending inside a block the next takes"]++
			}
			off += take
			n -= take
			p0 += take
		}
		start = end
	}
	if parts > 1 {
		run.byKind["list packet of several parts"]++
	}
	if a.ScatterOff > 0 {
		run.byKind["list packet after the first"]++
	}
}

// TestResponderListCosim: random streams with half the receive WQEs lists
// (newRespRunLists) through the model and hca_responder with the receive
// queue stand-in answering rw_rsp_nsge and rw_sge_* as hca_rq does,
// ACK_COALESCE 3 and 1: the ACKs and NAKs, the receive completions (each
// after the writes before it), the host bytes written by each element part
// and the counters equal the model's; every kind of list decision
// happens.
func TestResponderListCosim(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	respRandomRuns(t, newRespRunLists, nil,
		"list posted", "list packet of several parts", "list packet after the first",
		"list part primed (its lane below its first byte's)", "list part ending inside a block the next takes",
		"list element of 0 bytes passed over", "receive CQE opcode 2 SUCCESS", "receive CQE opcode 3 SUCCESS",
		"receive CQE opcode 2 LOC_LEN_ERR", "receive CQE opcode 2 LOC_PROT_ERR", "RNR NAK")
}

// TestResponderListMutantsFail: each slip in the responder's list
// handling fails a list run (ACK_COALESCE 3, the first
// seed; 200 steps: every slip fails within them). Four slips are left out
// because they hang the bench rather than differ (its 4-million-cycle
// timeout, minutes of Icarus each): a part whose address's lane is below
// its first byte's not primed (its beats read one block fewer than it
// counts), a block two parts share popped by the first, one kept when the
// part ends at its end (the payload stream's blocks and the packets' out
// of step), and the cursor passing over two elements where it should pass
// over one (a WQE's bytes run past its list).
func TestResponderListMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	const f = "hca_responder.v"
	for _, m := range []cosimMutant{
		{"", "", "", ""},
		{"an element's L_Key check skipped", f, "if (k_next) h_kk <= h_kk + 5'd1;", "if (k_next) h_kk <= h_kk + 5'd2;"},
		{"the split one byte late", f, "? e_left[12:0] : k_left;", "? e_left[12:0] + 13'd1 : k_left;"},
		{"every L_Key check of the first element", f, "assign rw_sge_k     = state == S_KREQ ? h_kk : ctx_rk[ix];", "assign rw_sge_k     = state == S_KREQ ? 5'd0 : ctx_rk[ix];"},
		{"only the first element's L_Key checked", f, "{1'b0, h_kk} + 6'd1 < h_nsge;", "{1'b0, h_kk} + 6'd1 < 6'd1;"},
		{"every part primed (a block read before its first beat whatever its lanes)", f, "x_prime <= k_wrap;", "x_prime <= 1'b1;"},
		{"the offset in an element kept at the next", f, "ctx_rk[ix]  <= ctx_rk[ix] + 5'd1;\n                ctx_reo[ix] <= 32'd0;", "ctx_rk[ix]  <= ctx_rk[ix] + 5'd1;"},
		{"a part rotated by its address only", f, "x_rot <= k_a[5:0] - x_pdone[5:0];", "x_rot <= k_a[5:0];"},
		{"a part's first lanes from its rotation", f, "(x_first ? ge_a : {64{1'b1}})", "(x_first ? ge_s : {64{1'b1}})"},
		{"the offset in the element not kept across packets", f, "ctx_reo[ix] <= ctx_reo[ix] + {19'd0, k_take};", "ctx_reo[ix] <= {19'd0, k_take};"},
		{"a list written as one element", f, "x_list <= sendp && ctx_rlist[ix] && h_len != 13'd0;\n                x_nx <= sendp && ctx_rlist[ix] && h_len != 13'd0;", "x_list <= 1'b0;\n                x_nx <= 1'b0;"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			respFirstFailing(t, m, []func() *respRun{
				func() *respRun { r := newRespRunLists(cosimSeeds[0], 3); r.fill(200); return r },
			}, "the list run passes a responder with %s")
		})
	}
}
