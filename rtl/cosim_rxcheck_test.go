package rtl

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_rx_ack's receive checks (ICRC, length, DLID and LMC, TVer, P_Key table, multicast) in reqTB ----
//
// The requester's end-to-end run (reqRun, TestRequesterCosim's harness)
// with, just before each ACKNOWLEDGE on rx_*, copies of it with one
// corruption each (reqBad): a copy is made a remote access error NAK, so
// a hca_rx_ack that acted on it would fail the QP (and shift every later
// ACK's index in the log), and the completions, compared with the model's
// on the good ACKs alone, would differ. Each copy must be dropped at its
// last beat and counted on the counter of the first check it fails, and
// the run must otherwise pass as it does without the copies. The good
// ACKs themselves carry what the checks must let through: P_Keys that
// match an entry of the table by the member rule, at any index, and (with
// an LMC) path bits in their DLID.

// The counters a corrupted copy counts on (reqBad.counter): hca_rx_ack's
// drops in reqResultOf.drop's order, and not_req for a raw packet.
const (
	cntICRC = iota
	cntHdr
	cntPKey
	cntMcast
	cntNotReq
)

// reqBad is a corrupted copy of an ACKNOWLEDGE on rx_*.
type reqBad struct {
	before  int // offered just before acks[before], with the same gate
	kind    string
	grh     bool
	wire    []byte // LRH through VCRC (a beat more for "len")
	counter int    // the counter it must count on (cnt*)
}

// reqBadKinds are the corruptions, taken in turn, local and then with a
// GRH:
//   - icrc: a byte of the PSN, the syndrome or the ICRC flipped, the VCRC
//     sealed again (a switch that rewrote the VCRC over a corrupted
//     packet: only the ICRC shows it) -> icrc_err;
//   - dlidflip: a bit of LRH.DLID at or above the LMC's path bits flipped
//     (0x0B00 stays unicast whichever), the VCRC sealed again: a local
//     packet's ICRC covers its LRH but the VL, so the ICRC fails, and the
//     DLID is wrong too -> icrc_err alone (the first check that fails);
//     with a GRH the LRH is outside the ICRC (a router rewrites it): the
//     ICRC holds and the DLID is another port's -> hdr_err;
//   - len: a beat of zeros after the packet (PktLen disagrees with the
//     length; both CRCs right) -> icrc_err;
//   - dlid: LRH.DLID a unicast LID (1..0xBFFF) outside the port's 2^LMC,
//     both CRCs right (a misrouted packet) -> hdr_err;
//   - lmcout: LRH.DLID the port's with one of the 3 bits just above the
//     LMC's path bits flipped (one LMC too small a mask would take it) ->
//     hdr_err;
//   - tver: BTH.TVer 1..15 -> hdr_err;
//   - ackpay: 4..16 bytes of payload after the AETH (a PktLen past the
//     headers' 7 or 17 words: not an ACKNOWLEDGE's) -> hdr_err;
//   - pkey: a P_Key of a partition no entry holds, full member ->
//     pkey_viol;
//   - limited: the partition of a limited entry (one no full entry shares)
//     as a limited member -> pkey_viol (two limited members may not talk);
//   - invalid: a P_Key whose low 15 bits are 0 (0x0000 or 0x8000), which
//     the member rule alone would match with an entry that holds one (the
//     tables put 0x8000 or 0x0000 in an entry: rxCheckRuns) -> pkey_viol
//     (IBA C10-116: an invalid P_Key never matches);
//   - mcast: LRH.DLID a multicast LID (0xC000..0xFFFE) -> mcast_drop;
//   - perm: LRH.DLID the permissive LID 0xFFFF -> mcast_drop;
//   - ipver, nxthdr, paylen (with a GRH only): GRH IPVer not 6, NxtHdr not
//     0x1B, PayLen off by 4..64 bytes (ib.ParseWire refuses each) ->
//     hdr_err;
//   - short: an IBA packet (LNH 2 or 3) whose PktLen leaves no room for
//     its BTH (5 words local, the LRH, 8 bytes of a SEND ONLY's BTH and
//     the ICRC; with a GRH 15, its PayLen to match), both CRCs right ->
//     hdr_err (not not_req);
//   - rspaeth: a READ response FIRST, LAST or ONLY of no payload whose
//     PktLen leaves no room for its AETH (a MIDDLE's length, 6 or 16
//     words) -> hdr_err (not rsp_todo);
//   - rsppad: a READ response of no payload with PadCnt 1..3 (pad bytes
//     past the headers: a payload of less than 0 bytes) -> hdr_err;
//   - atomlen: an ATOMIC ACKNOWLEDGE with 4..16 bytes of payload (not its
//     headers' 9 or 19 words) -> hdr_err.
var reqBadKinds = []string{"icrc", "dlidflip", "len", "dlid", "lmcout", "tver", "ackpay", "pkey", "limited", "invalid", "mcast", "perm",
	"ipver", "nxthdr", "paylen", "short", "rspaeth", "rsppad", "atomlen"}

// grhOnly are the kinds that corrupt a GRH: every copy of them has one.
var grhOnly = map[string]bool{"ipver": true, "nxthdr": true, "paylen": true}

// reqBadPerACK is the corrupted copies before each ACKNOWLEDGE: the
// mutants' run of reqMutantItems items has 8 ACKNOWLEDGEs (two of them
// for no context, addBad), and every kind is to come local and with a GRH
// (38 copies).
const reqBadPerACK = 5

// pkeyMatch is IBA's P_Key rule at a CA port, the reference the tables
// and the copies are built against: key matches an entry when their low
// 15 bits (the partition) are equal and not 0 (C10-116: a P_Key whose
// low 15 bits are 0 is invalid; equal bits make one test serve both
// sides) and one of the two has bit 15 set (a full member; two limited
// members may not talk). Linux rxe's pkey_match is the same rule.
func pkeyMatch(table []uint16, key uint16) bool {
	for _, e := range table {
		if e&0x7FFF != 0 && e&0x7FFF == key&0x7FFF && (e|key)&0x8000 != 0 {
			return true
		}
	}
	return false
}

// addBad sets the port's P_Key table and LMC, gives the ACKs P_Keys that
// match the table (any entry, drawn among every key that does) and, with
// an LMC, path bits in their DLIDs, and puts reqBadPerACK corrupted copies
// before every ACKNOWLEDGE of the run (kinds in turn, reqBadKinds, local
// for a round of the kinds, then with a GRH), and before every other one
// a raw packet (rawPacket); its draws come from a stream of their own, so
// the run's stimulus is unchanged.
func (run *reqRun) addBad(seed uint64, table []uint16, lmc int) {
	r := rand.New(rand.NewPCG(seed, 0xbad0))
	run.pkeys, run.lmc = table, lmc
	// The keys a good ACK may carry: each valid entry's partition as a
	// full member, and as a limited one when the entry is full.
	var good []uint16
	for _, e := range table {
		if e&0x7FFF == 0 {
			continue
		}
		good = append(good, e|0x8000)
		if e&0x8000 != 0 {
			good = append(good, e&0x7FFF)
		}
	}
	// Two ACKs for a QPN no context ever holds (hca_requester drops them,
	// counted on rx_no_qp: two, so the saturated run passes 65535), among
	// the others.
	for range 2 {
		qpn := uint32(0)
		for qpn == 0 || run.wroteQPN(qpn) {
			qpn = r.Uint32() & 0xFFFFFF
		}
		j := r.IntN(len(run.acks) + 1)
		gate := run.acks[min(j, len(run.acks)-1)].gate
		run.insertAck(j, reqAck{gate: gate, qpn: qpn, psn: r.Uint32() & 0xFFFFFF, syn: hca.SynNAKAccess, grh: r.IntN(2) == 0})
	}
	for i := range run.acks {
		run.acks[i].pkey = good[r.IntN(len(good))]
		run.acks[i].dlid = reqPortLID | uint16(r.IntN(1<<lmc))
		if !pkeyMatch(table, run.acks[i].pkey) {
			panic(fmt.Sprintf("rtl: addBad: the ACK's P_Key %#04x matches no entry of %#04x", run.acks[i].pkey, table))
		}
	}
	// A partition no entry holds, and a limited entry no full one shares.
	taken := func(p uint16) bool {
		for _, e := range table {
			if e&0x7FFF == p&0x7FFF {
				return true
			}
		}
		return false
	}
	limited := uint16(0)
	for _, e := range table {
		if e&0x8000 == 0 && e != 0 && !pkeyMatch(table, e) {
			limited = e
		}
	}
	if limited == 0 {
		panic(fmt.Sprintf("rtl: addBad: the table %#04x has no limited entry alone in its partition", table))
	}
	for n := range reqBadPerACK * len(run.acks) {
		i := n / reqBadPerACK
		if n%(2*reqBadPerACK) == 0 {
			run.bad = append(run.bad, reqBad{before: i, kind: "raw", wire: rawPacket(r), counter: cntNotReq})
		}
		kind := reqBadKinds[n%len(reqBadKinds)]
		grh := n/len(reqBadKinds)%2 == 1 || grhOnly[kind]
		c := run.acks[i]
		c.grh, c.syn, c.rsp = grh, hca.SynNAKAccess, nil // an ACKNOWLEDGE's copy, also before a response
		p := c.packet()
		switch kind {
		case "ackpay":
			p.PayloadLen = 4 * (1 + r.IntN(4))
		case "rspaeth", "rsppad":
			// A READ response to the ACK's QP, no payload: MIDDLE's
			// length (no AETH) for rspaeth, retyped below.
			p.Opcode = ib.RDMAReadResponseMiddle
			if kind == "rsppad" {
				p.Opcode = ib.RDMAReadResponseFirst + ib.Opcode(r.IntN(4))
			}
		case "atomlen":
			p.Opcode, p.PayloadLen = ib.AtomicAcknowledge, 4*(1+r.IntN(4))
		}
		w := c.sealed(ib.AppendWire(nil, p))
		bth := bthAt(w)
		b := reqBad{before: i, kind: kind, grh: grh}
		setDLID := func(d uint16) {
			binary.BigEndian.PutUint16(w[2:], d)
			resealWire(w, true)
		}
		setPKey := func(k uint16) {
			if pkeyMatch(table, k) {
				panic(fmt.Sprintf("rtl: addBad: a %s copy's P_Key %#04x matches %#04x", kind, k, table))
			}
			binary.BigEndian.PutUint16(w[bth+2:], k)
			resealWire(w, true)
			b.counter = cntPKey
		}
		switch kind {
		case "icrc":
			at := []int{bth + 9, bth + 10, bth + 11, bth + 12, len(w) - 6, len(w) - 5, len(w) - 4, len(w) - 3}[r.IntN(8)]
			w[at] ^= 1 << r.IntN(8)
			resealWire(w, false)
		case "dlidflip":
			bit := lmc + r.IntN(16-lmc)
			binary.BigEndian.PutUint16(w[2:], binary.BigEndian.Uint16(w[2:])^1<<bit)
			resealWire(w, false)
			if grh {
				b.counter = cntHdr
			}
		case "len":
			w = append(w, make([]byte, BlockBytes)...)
		case "dlid":
			d := uint16(0)
			for d == 0 || d>>lmc == reqPortLID>>lmc {
				d = uint16(1 + r.IntN(0xBFFF))
			}
			setDLID(d)
			b.counter = cntHdr
		case "lmcout":
			setDLID(c.packet().DLID ^ 1<<(lmc+r.IntN(3)))
			b.counter = cntHdr
		case "tver":
			w[bth+1] |= byte(1 + r.IntN(15))
			resealWire(w, true)
			b.counter = cntHdr
		case "ackpay":
			b.counter = cntHdr
		case "pkey":
			k := uint16(0)
			for k == 0 || taken(k) {
				k = uint16(1 + r.IntN(0x7FFF))
			}
			setPKey(0x8000 | k)
		case "limited":
			setPKey(limited)
		case "invalid":
			// A key the member rule without C10-116 would match with the
			// table's invalid entry: 0x0000 or 0x8000 against an entry
			// 0x8000 (a full member), 0x8000 against an entry 0x0000.
			k := uint16(0x8000)
			for _, e := range table {
				if e == 0x8000 {
					k = uint16(r.IntN(2)) << 15
				}
			}
			setPKey(k)
		case "ipver":
			w[8] = w[8]&0x0F | byte([]int{4, 5, 7, 15, 0}[r.IntN(5)])<<4
			resealWire(w, true)
			b.counter = cntHdr
		case "nxthdr":
			w[14] = byte(0x1B ^ (1 + r.IntN(0xFF)))
			resealWire(w, true)
			b.counter = cntHdr
		case "paylen":
			d := uint16(4 * (1 + r.IntN(16)))
			if r.IntN(2) == 0 {
				d = -d
			}
			binary.BigEndian.PutUint16(w[12:], binary.BigEndian.Uint16(w[12:])+d)
			resealWire(w, true)
			b.counter = cntHdr
		case "short":
			// The LRH (and GRH), 8 bytes, the ICRC and the VCRC: PktLen
			// one word short of an LRH, (GRH,) BTH and ICRC.
			// The 8 bytes start a SEND ONLY with invalidate's BTH (an
			// ACK's would fail the ACK's own PktLen rule first, and so
			// would a SEND's or WRITE's, now the responder's, their
			// room for the ImmDt, RETH and PadCnt): without the room
			// check it would count on not_req.
			n := bth + 8 + 4
			w = append(w[:n:n], 0, 0)
			w[bth] = byte(ib.SendOnlyInv)
			binary.BigEndian.PutUint16(w[4:], uint16(n/4))
			if grh {
				binary.BigEndian.PutUint16(w[12:], uint16(n-48))
			}
			resealWire(w, true)
			b.counter = cntHdr
		case "rspaeth":
			w[bth] = byte([]ib.Opcode{ib.RDMAReadResponseFirst, ib.RDMAReadResponseLast, ib.RDMAReadResponseOnly}[r.IntN(3)])
			resealWire(w, true)
			b.counter = cntHdr
		case "rsppad":
			w[bth+1] |= byte(1+r.IntN(3)) << 4
			resealWire(w, true)
			b.counter = cntHdr
		case "atomlen":
			b.counter = cntHdr
		case "mcast":
			setDLID(uint16(0xC000 + r.IntN(0xFFFF-0xC000)))
			b.counter = cntMcast
		case "perm":
			setDLID(0xFFFF)
			b.counter = cntMcast
		}
		b.wire = w
		run.bad = append(run.bad, b)
	}
}

// wroteQPN reports whether a context write of the run gives QPN qpn.
func (run *reqRun) wroteQPN(qpn uint32) bool {
	for _, it := range run.items {
		if it.cfg && it.qpn == qpn {
			return true
		}
	}
	return false
}

// insertAck puts a into the ACKNOWLEDGEs at index j: the items' gates (a
// count of ACKs taken) past it and the other packets planned at or after
// it move by one, so each still waits for the same ACKs.
func (run *reqRun) insertAck(j int, a reqAck) {
	run.acks = append(run.acks[:j], append([]reqAck{a}, run.acks[j:]...)...)
	for _, it := range run.items {
		if it.gate > j {
			it.gate++
		}
	}
	for k := range run.other {
		if run.other[k].before >= j {
			run.other[k].before++
		}
	}
}

// rawPacket is a raw packet (LRH.LNH 0) to the port: an LRH and 16
// bytes, PktLen 6, its VCRC. A raw packet has no BTH and no ICRC, so
// hca_rx_ack checks only its DLID and length and counts it on not_req;
// ib_icrc, taking it as a local packet, finds the word where an ICRC
// would be wrong (made sure of here), which must not count.
func rawPacket(r *rand.Rand) []byte {
	w := make([]byte, 8+16+ib.VCRCBytes)
	w[1] = byte(r.IntN(16)) << 4 // SL, LNH 0
	binary.BigEndian.PutUint16(w[2:], reqPortLID)
	binary.BigEndian.PutUint16(w[4:], 6)
	binary.BigEndian.PutUint16(w[6:], uint16(r.Uint32()))
	for k := 8; k < 24; k++ {
		w[k] = byte(r.Uint32())
	}
	if binary.LittleEndian.Uint32(w[20:]) == ib.ICRC(w[:20]) {
		w[20] ^= 1
	}
	binary.LittleEndian.PutUint16(w[24:], ib.VCRC(w[:24]))
	return w
}

// rxCheckRuns are the two runs of the checks, each with a P_Key table of
// reqPKeyN entries and an LMC: "full", the default partition at index 0,
// IBA's invalid P_Key 0x8000 at index 1 (a full member of partition 0:
// the member rule alone would match 0x0000 and 0x8000 with it), a full
// and a limited member of two other partitions (0x1234, 0x0ABC), LMC 0;
// "limited", the default partition as a limited member, the invalid
// 0x0000, a limited and a full member of two others, LMC 5 (the ACKs'
// DLIDs carry 5 path bits), with the counters started one short of
// saturation.
var rxCheckRuns = []struct {
	name  string
	table []uint16
	lmc   int
	sat   bool
}{
	{"full", []uint16{0xFFFF, 0x8000, 0x9234, 0x0ABC}, 0, false},
	{"limited", []uint16{0x7FFF, 0x0000, 0x0ABC, 0x9234}, 5, true},
}

func newRxCheckRun(table []uint16, lmc int, sat bool) *reqRun {
	return newRxCheckRunOf(table, lmc, sat, reqMutantItems)
}

// newRxCheckRunOf is newRxCheckRun on a run of items items.
func newRxCheckRunOf(table []uint16, lmc int, sat bool, items int) *reqRun {
	run := newReqRun(cosimSeeds[0], items)
	run.addBad(cosimSeeds[0], table, lmc)
	run.sat = sat
	return run
}

// TestRequesterRxCheckCosim: every corrupted copy is dropped and counted
// on its counter, and the good ACKs complete as the model's (reqCheck:
// the log's ACK indices, the completions, the counters), under both
// tables and LMCs, one Icarus compile for both.
func TestRequesterRxCheckCosim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	files := writeReqBench(t, dir, nil)
	cmd, args := buildSim(t, ctx, dir, "icarus", files)
	for _, rc := range rxCheckRuns {
		require.Len(t, rc.table, reqPKeyN, "the design's PKEY_N")
		run := newRxCheckRun(rc.table, rc.lmc, rc.sat)
		run.write(t, dir)
		res := runReq(t, ctx, dir, rc.name, run, cmd, args...)
		res.passes(t, run, rc.name)
		// What the copies exercise: every kind, local and global, and a
		// counter past saturation in the saturated run.
		kinds := map[string]int{}
		var perCounter [cntNotReq + 1]int
		for _, b := range run.bad {
			k := b.kind
			if b.grh {
				k += "+grh"
			}
			kinds[k]++
			perCounter[b.counter]++
		}
		assert.Positive(t, kinds["raw"], "%s: raw packets", rc.name)
		for _, k := range reqBadKinds {
			if !grhOnly[k] {
				assert.Positive(t, kinds[k], "%s: %s copies", rc.name, k)
			}
			assert.Positive(t, kinds[k+"+grh"], "%s: %s copies with a GRH", rc.name, k)
		}
		// What the good ACKs exercise: keys that only an entry past
		// index 0 matches, limited keys (against a full entry), and with
		// an LMC DLIDs other than the base LID.
		past0, limitedACKs, pathACKs := 0, 0, 0
		for _, a := range run.acks {
			if !pkeyMatch(rc.table[:1], a.pkey) {
				past0++
			}
			if a.pkey&0x8000 == 0 {
				limitedACKs++
			}
			if a.dlid != reqPortLID {
				pathACKs++
			}
		}
		assert.Positive(t, past0, "%s: ACKs only an entry past index 0 lets through", rc.name)
		if rc.table[0]&0x8000 != 0 {
			assert.Positive(t, limitedACKs, "%s: ACKs with a limited P_Key, acted on", rc.name)
		}
		if rc.lmc > 0 {
			assert.Positive(t, pathACKs, "%s: ACKs with path bits in their DLID, acted on", rc.name)
		}
		if rc.sat {
			for k, n := range perCounter[:cntNotReq] {
				assert.GreaterOrEqual(t, n, 2, "%s: drops on counter %d (one more than saturation needs)", rc.name, k)
			}
		}
		// The two ACKs for no context reached the requester (reqCheck
		// compares rx_no_qp with the replay's count).
		assert.Equal(t, 2, res.staleAcks, "%s: ACKs for a QPN no context holds", rc.name)
		t.Logf("%s: %d ACKs (%d past entry 0, %d limited, %d with path bits), %d copies dropped %v (icrc_err, hdr_err, pkey_viol, mcast_drop: %v), %d ACKs for no context (no_qp %d), %d completions",
			rc.name, len(run.acks), past0, limitedACKs, pathACKs, len(run.bad), kinds, res.drop, res.staleAcks, res.noQP, res.cplChecked)
	}
}

// TestRequesterRxCheckMutantsFail: each slip in hca_rx_ack's checks fails
// the run it names (Icarus), at half its items or, if it passes that, at
// its whole reqMutantItems; the unmutated block passes both runs at both
// lengths.
func TestRequesterRxCheckMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	dir := t.TempDir()
	const f = "hca_rx_ack.v"
	const pkeyRule = "pkey_tab[16*pm +: 15] != 15'd0 && pkey[14:0] == pkey_tab[16*pm +: 15] && (pkey[15] || pkey_tab[16*pm+15])"
	for _, m := range []struct {
		cosimMutant
		run int // rxCheckRuns index
	}{
		// Both runs at both lengths pass: the failures below are the mutants'.
		{cosimMutant{"unmutated, full", "", "", ""}, 0},
		{cosimMutant{"unmutated, limited", "", "", ""}, 1},
		{cosimMutant{"the ICRC error ignored", f, "wire crc_bad = c_len_err || (k_ib && c_icrc_err);", "wire crc_bad = c_len_err;"}, 1},
		{cosimMutant{"a raw packet's missing ICRC counted", f, "wire crc_bad = c_len_err || (k_ib && c_icrc_err);",
			"wire crc_bad = c_len_err || c_icrc_err;"}, 0},
		{cosimMutant{"the length error ignored", f, "wire crc_bad = c_len_err || (k_ib && c_icrc_err);", "wire crc_bad = k_ib && c_icrc_err;"}, 1},
		{cosimMutant{"the DLID compare dropped", f, "wire         hdr_bad  = (!mc && !lid_ok) ||", "wire         hdr_bad  ="}, 1},
		{cosimMutant{"the LMC ignored", f, "wire [15:0]  lmc_keep = 16'hFFFF << port_lmc;", "wire [15:0]  lmc_keep = 16'hFFFF;"}, 1},
		{cosimMutant{"the LMC's mask a bit too wide", f, "wire [15:0]  lmc_keep = 16'hFFFF << port_lmc;",
			"wire [15:0]  lmc_keep = 16'hFFFF << (port_lmc + 3'd1);"}, 1},
		{cosimMutant{"the LMC's mask a bit too narrow", f, "wire [15:0]  lmc_keep = 16'hFFFF << port_lmc;",
			"wire [15:0]  lmc_keep = ((16'hFFFF << port_lmc) >> 1) | 16'h8000;"}, 1},
		{cosimMutant{"TVer not checked", f, "(is_ib && tver != 4'd0) ||", "1'b0 ||"}, 1},
		{cosimMutant{"an ACK's PktLen not checked", f, "(is_ack && pktlen != (global ? 11'd17 : 11'd7))", "1'b0"}, 1},
		{cosimMutant{"the GRH's IPVer not checked", f, "g_ipver != 4'd6 ||", "1'b0 ||"}, 0},
		{cosimMutant{"the GRH's NxtHdr not checked", f, "g_nxthdr != 8'h1B ||", "1'b0 ||"}, 0},
		{cosimMutant{"the GRH's PayLen not checked", f, "g_paylen != {3'd0, pktlen, 2'b00} - 16'd48);", "1'b0);"}, 0},
		{cosimMutant{"PktLen's room for the BTH not checked", f, "(is_ib && pktlen < base_w) ||", "1'b0 ||"}, 0},
		{cosimMutant{"a READ response's AETH not counted", f, "wire [10:0]  rsp_w    = base_w + {10'd0, rd_rsp && !is_mid} +",
			"wire [10:0]  rsp_w    = base_w +"}, 0},
		{cosimMutant{"a READ response's PadCnt not counted", f, "(has_pay && (pktlen < rsp_w || (pktlen == rsp_w && padcnt != 2'd0)))",
			"(has_pay && (pktlen < rsp_w || 1'b0))"}, 0},
		{cosimMutant{"an atomic ACK's PktLen not checked", f, "(at_ack && pktlen != base_w + 11'd3)", "1'b0"}, 0},
		{cosimMutant{"the P_Key's member bit ignored", f, pkeyRule, "pkey_tab[16*pm +: 15] != 15'd0 && pkey[14:0] == pkey_tab[16*pm +: 15]"}, 1},
		{cosimMutant{"a full member required of the packet", f, pkeyRule,
			"pkey_tab[16*pm +: 15] != 15'd0 && pkey[14:0] == pkey_tab[16*pm +: 15] && pkey[15]"}, 0},
		{cosimMutant{"the invalid P_Key matched (no C10-116)", f, pkeyRule,
			"pkey[14:0] == pkey_tab[16*pm +: 15] && (pkey[15] || pkey_tab[16*pm+15])"}, 0},
		{cosimMutant{"only the table's entry 0 compared", f, "for (pm = 0; pm < PKEY_N; pm = pm + 1)",
			"for (pm = 0; pm < 1; pm = pm + 1)"}, 0},
		{cosimMutant{"the table's last entry not compared", f, "for (pm = 0; pm < PKEY_N; pm = pm + 1)",
			"for (pm = 0; pm < PKEY_N - 1; pm = pm + 1)"}, 1},
		{cosimMutant{"a write to every entry", f, "if (pkey_cfg_index == pi[15:0]) pkey_tab[16*pi +: 16] <= pkey_cfg_key;",
			"pkey_tab[16*pi +: 16] <= pkey_cfg_key;"}, 0},
		{cosimMutant{"multicast DLIDs compared as unicast", f, "wire         hdr_bad  = (!mc && !lid_ok) ||",
			"wire         hdr_bad  = !lid_ok ||"}, 0},
		{cosimMutant{"the permissive LID taken as unicast", f, "wire         mc     = dlid[15:14] == 2'b11;",
			"wire         mc     = dlid[15:14] == 2'b11 && dlid != 16'hFFFF;"}, 0},
		{cosimMutant{"a multicast packet counted and acted on", f, "wire d_ok    = done && !crc_bad && !k_hdr && !k_pkey && !k_mc;",
			"wire d_ok    = done && !crc_bad && !k_hdr && !k_pkey;"}, 0},
		{cosimMutant{"the ACK decided at its first beat", f, "wire done = take && c_eop;", "wire done = take && c_sop;"}, 1},
		{cosimMutant{"the first beat's decode not held to the last", f, "wire         k_ack   = c_sop ? to_req   : p_ack;",
			"wire         k_ack   = to_req;"}, 0},
		{cosimMutant{"the multicast flag not held to the last beat", f, "wire         k_mc    = c_sop ? mc       : p_mc;",
			"wire         k_mc    = mc;"}, 0},
		{cosimMutant{"the ICRC counter not saturating", f, "if (d_icrc && icrc_err != 16'hFFFF)", "if (d_icrc)"}, 1},
		{cosimMutant{"the P_Key counter not saturating", f, "if (d_pkey && pkey_viol != 16'hFFFF)", "if (d_pkey)"}, 1},
		{cosimMutant{"the multicast counter not saturating", f, "if (d_mc && mcast_drop != 16'hFFFF)", "if (d_mc)"}, 1},
		{cosimMutant{"a bad ICRC counted as a header error too", f, "wire d_hdr   = done && !crc_bad && k_hdr;", "wire d_hdr   = done && k_hdr;"}, 0},
		// hca_requester's count of the ACKs for a QPN no context holds.
		{cosimMutant{"an ACK for no context not counted", "hca_requester.v", "else if (ack_take && no_ctx && no_qp != 16'hFFFF)",
			"else if (1'b0)"}, 0},
		{cosimMutant{"every ACK counted on no_qp", "hca_requester.v", "else if (ack_take && no_ctx && no_qp != 16'hFFFF)",
			"else if (ack_take && no_qp != 16'hFFFF)"}, 0},
		{cosimMutant{"no_qp not saturating", "hca_requester.v", "else if (ack_take && no_ctx && no_qp != 16'hFFFF)",
			"else if (ack_take && no_ctx)"}, 1},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := filepath.Join(dir, strings.ReplaceAll(m.name, " ", "_"))
			require.NoError(t, os.MkdirAll(d, 0o755))
			files := writeReqBench(t, d, mutatedSource(t, m.file, m.old, m.new))
			rc := rxCheckRuns[m.run]
			_, err := runTool(ctx, d, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
			require.NoError(t, err)
			// The run at half its items first, the whole run only if the
			// mutant passes that (firstFailing).
			var judges []func() []string
			for _, items := range []int{reqMutantItems / 2, reqMutantItems} {
				judges = append(judges, func() []string {
					run := newRxCheckRunOf(rc.table, rc.lmc, rc.sat, items)
					run.write(t, d)
					res := runReq(t, ctx, d, strconv.Itoa(items), run, "vvp", "-n", filepath.Join(d, "sim.vvp"))
					bad := res.errors + res.werr + res.cerr + res.verr + res.gaps
					if bad == 0 && res.checked == res.wantBeats && res.acks == len(run.acks) {
						return nil
					}
					return []string{fmt.Sprintf("%s run of %d items: %d mismatches, counters %v, %d of %d ACKs taken: %s", rc.name, items,
						res.errors, res.drop, res.acks, len(run.acks), strings.Join(res.first, "; "))}
				})
			}
			firstFailing(t, m.file != "", judges, fmt.Sprintf("the %s run passes an hca_rx_ack with %s", rc.name, m.name))
		})
	}
}
