package rtl

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_rx_ack's receive checks (ICRC, length, DLID, TVer, P_Key) in reqTB ----
//
// The requester's end-to-end run (reqRun, TestRequesterCosim's harness)
// with, just before each ACKNOWLEDGE on rx_*, a copy of it with one
// corruption (reqBad): the copy is made a remote access error NAK, so a
// hca_rx_ack that acted on it would fail the QP (and shift every later
// ACK's index in the log), and the completions, compared with the model's
// on the good ACKs alone, would differ. Each copy must be dropped at its
// last beat and counted on the counter of the first check it fails, and
// the run must otherwise pass as it does without the copies.

// reqBad is a corrupted copy of an ACKNOWLEDGE on rx_*.
type reqBad struct {
	before  int // offered just before acks[before], with the same gate
	kind    string
	grh     bool
	wire    []byte // LRH through VCRC (a beat more for "len")
	counter int    // the counter it must count on: 0 icrc_err, 1 hdr_err, 2 pkey_viol, 3 not_req (a raw packet)
}

// reqBadKinds are the corruptions, taken in turn, local and then with a
// GRH:
//   - icrc: a byte of the PSN, the syndrome or the ICRC flipped, the VCRC
//     sealed again (a switch that rewrote the VCRC over a corrupted
//     packet: only the ICRC shows it) -> icrc_err;
//   - dlidflip: a bit of LRH.DLID flipped, the VCRC sealed again: a
//     local packet's ICRC covers its LRH but the VL, so the ICRC fails,
//     and the DLID is wrong too -> icrc_err alone (the first check that
//     fails); with a GRH the LRH is outside the ICRC (a router rewrites
//     it): the ICRC holds and the DLID is another port's -> hdr_err;
//   - len: a beat of zeros after the packet (PktLen disagrees with the
//     length; both CRCs right) -> icrc_err;
//   - dlid: LRH.DLID another port's, both CRCs right (a misrouted packet)
//     -> hdr_err;
//   - tver: BTH.TVer 1..15 -> hdr_err;
//   - ackpay: 4..16 bytes of payload after the AETH (a PktLen past the
//     headers' 7 or 17 words: not an ACKNOWLEDGE's) -> hdr_err;
//   - pkey: a P_Key of another partition (low 15 bits differ), full
//     member -> pkey_viol;
//   - limited: the port's partition as a limited member, against a
//     limited port key -> pkey_viol (two limited members may not talk).
//     Against a full port key it matches: then no copy is made, and the
//     ACK itself carries the limited P_Key and must be acted on.
var reqBadKinds = []string{"icrc", "dlidflip", "len", "dlid", "tver", "ackpay", "pkey", "limited"}

// reqBadPerACK is the corrupted copies before each ACKNOWLEDGE: the
// mutants' run of reqMutantItems items has 6 ACKNOWLEDGEs, and every kind
// is to come local and with a GRH (16 copies or more).
const reqBadPerACK = 3

// addBad sets the port's P_Key and puts reqBadPerACK corrupted copies
// before every ACKNOWLEDGE of the run (kinds in turn, reqBadKinds, local
// for a round of the kinds, then with a GRH), and before every other one
// a raw packet (rawPacket); its draws come from a stream of their own, so
// the run's stimulus is unchanged.
func (run *reqRun) addBad(seed uint64, portPKey uint16) {
	r := rand.New(rand.NewPCG(seed, 0xbad0))
	run.portPKey = portPKey
	for n := range reqBadPerACK * len(run.acks) {
		i := n / reqBadPerACK
		if n%(2*reqBadPerACK) == 0 {
			run.bad = append(run.bad, reqBad{before: i, kind: "raw", wire: rawPacket(r), counter: 3})
		}
		kind := reqBadKinds[n%len(reqBadKinds)]
		grh := n/len(reqBadKinds)%2 == 1
		if kind == "limited" && portPKey&0x8000 != 0 {
			run.acks[i].pkey = portPKey & 0x7FFF
			continue
		}
		c := run.acks[i]
		c.grh, c.syn, c.pkey = grh, hca.SynNAKAccess, 0
		p := c.packet()
		if kind == "ackpay" {
			p.PayloadLen = 4 * (1 + r.IntN(4))
		}
		w := ib.AppendWire(nil, p)
		bth := bthAt(w)
		b := reqBad{before: i, kind: kind, grh: grh}
		switch kind {
		case "icrc":
			at := []int{bth + 9, bth + 10, bth + 11, bth + 12, len(w) - 6, len(w) - 5, len(w) - 4, len(w) - 3}[r.IntN(8)]
			w[at] ^= 1 << r.IntN(8)
			resealWire(w, false)
		case "dlidflip":
			w[2+r.IntN(2)] ^= 1 << r.IntN(8)
			resealWire(w, false)
			if grh {
				b.counter = 1
			}
		case "len":
			w = append(w, make([]byte, BlockBytes)...)
		case "dlid":
			binary.BigEndian.PutUint16(w[2:], reqPortLID^uint16(1+r.IntN(0xFFFF)))
			resealWire(w, true)
			b.counter = 1
		case "tver":
			w[bth+1] |= byte(1 + r.IntN(15))
			resealWire(w, true)
			b.counter = 1
		case "ackpay":
			b.counter = 1
		case "pkey":
			binary.BigEndian.PutUint16(w[bth+2:], 0x8000|(portPKey&0x7FFF)^uint16(1+r.IntN(0x7FFF)))
			resealWire(w, true)
			b.counter = 2
		case "limited":
			binary.BigEndian.PutUint16(w[bth+2:], portPKey)
			resealWire(w, true)
			b.counter = 2
		}
		b.wire = w
		run.bad = append(run.bad, b)
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

// rxCheckRuns are the two runs of the checks: a full port key with the
// limited-member ACKs to act on, and a limited one, with the counters
// started one short of saturation.
var rxCheckRuns = []struct {
	name string
	pkey uint16
	sat  bool
}{{"full", 0xFFFF, false}, {"limited", 0x7FFF, true}}

func newRxCheckRun(pkey uint16, sat bool) *reqRun {
	run := newReqRun(cosimSeeds[0], reqMutantItems)
	run.addBad(cosimSeeds[0], pkey)
	run.sat = sat
	return run
}

// TestRequesterRxCheckCosim: every corrupted copy is dropped and counted
// on its counter, and the good ACKs complete as the model's (reqCheck:
// the log's ACK indices, the completions, the counters), under a full and
// a limited port key, one Icarus compile for both.
func TestRequesterRxCheckCosim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	files := writeReqBench(t, dir, nil)
	cmd, args := buildSim(t, ctx, dir, "icarus", files)
	for _, rc := range rxCheckRuns {
		run := newRxCheckRun(rc.pkey, rc.sat)
		run.write(t, dir)
		res := runReq(t, ctx, dir, rc.name, run, cmd, args...)
		res.passes(t, run, rc.name)
		// What the copies exercise: every kind, local and global, and a
		// counter past saturation in the saturated run.
		kinds := map[string]int{}
		var perCounter [4]int
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
			if k == "limited" && rc.pkey&0x8000 != 0 {
				continue
			}
			assert.Positive(t, kinds[k], "%s: %s copies", rc.name, k)
			if k == "icrc" || k == "dlidflip" || k == "len" {
				assert.Positive(t, kinds[k+"+grh"], "%s: %s copies with a GRH (two beats: decided at the second)", rc.name, k)
			}
		}
		limitedACKs := 0
		for _, a := range run.acks {
			if a.pkey != 0 {
				limitedACKs++
			}
		}
		if rc.pkey&0x8000 != 0 {
			assert.Positive(t, limitedACKs, "%s: ACKs with a limited P_Key, acted on", rc.name)
		}
		if rc.sat {
			for k, n := range perCounter[:3] {
				assert.GreaterOrEqual(t, n, 2, "%s: drops on counter %d (one more than saturation needs)", rc.name, k)
			}
		}
		t.Logf("%s: %d ACKs (%d with a limited P_Key), %d copies dropped %v (icrc_err, hdr_err, pkey_viol: %v), %d completions",
			rc.name, len(run.acks), limitedACKs, len(run.bad), kinds, res.drop, res.cplChecked)
	}
}

// TestRequesterRxCheckMutantsFail: each slip in hca_rx_ack's checks fails
// the run it names (Icarus).
func TestRequesterRxCheckMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	dir := t.TempDir()
	const f = "hca_rx_ack.v"
	for _, m := range []struct {
		cosimMutant
		run int // rxCheckRuns index
	}{
		{cosimMutant{"the ICRC error ignored", f, "wire crc_bad = c_len_err || (k_ib && c_icrc_err);", "wire crc_bad = c_len_err;"}, 1},
		{cosimMutant{"a raw packet's missing ICRC counted", f, "wire crc_bad = c_len_err || (k_ib && c_icrc_err);",
			"wire crc_bad = c_len_err || c_icrc_err;"}, 0},
		{cosimMutant{"the length error ignored", f, "wire crc_bad = c_len_err || (k_ib && c_icrc_err);", "wire crc_bad = k_ib && c_icrc_err;"}, 1},
		{cosimMutant{"the DLID compare dropped", f, "wire         hdr_bad  = dlid != port_lid ||", "wire         hdr_bad  ="}, 1},
		{cosimMutant{"TVer not checked", f, "(is_ib && tver != 4'd0) ||", "1'b0 ||"}, 1},
		{cosimMutant{"an ACK's PktLen not checked", f, "(is_ack && pktlen != (global ? 11'd17 : 11'd7))", "1'b0"}, 1},
		{cosimMutant{"the P_Key's member bit ignored", f, "pkey[14:0] == port_pkey[14:0] && (pkey[15] || port_pkey[15])",
			"pkey[14:0] == port_pkey[14:0]"}, 1},
		{cosimMutant{"a full member required of the packet", f, "pkey[14:0] == port_pkey[14:0] && (pkey[15] || port_pkey[15])",
			"pkey[14:0] == port_pkey[14:0] && pkey[15]"}, 0},
		{cosimMutant{"the ACK decided at its first beat", f, "wire done = take && c_eop;", "wire done = take && c_sop;"}, 1},
		{cosimMutant{"the first beat's decode not held to the last", f, "wire         k_ack   = c_sop ? is_ack   : p_ack;",
			"wire         k_ack   = is_ack;"}, 0},
		{cosimMutant{"the ICRC counter not saturating", f, "if (d_icrc && icrc_err != 16'hFFFF)", "if (d_icrc)"}, 1},
		{cosimMutant{"the P_Key counter not saturating", f, "if (d_pkey && pkey_viol != 16'hFFFF)", "if (d_pkey)"}, 1},
		{cosimMutant{"a bad ICRC counted as a header error too", f, "wire d_hdr   = done && !crc_bad && k_hdr;", "wire d_hdr   = done && k_hdr;"}, 0},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := filepath.Join(dir, strings.ReplaceAll(m.name, " ", "_"))
			require.NoError(t, os.MkdirAll(d, 0o755))
			files := writeReqBench(t, d, mutatedSource(t, m.file, m.old, m.new))
			rc := rxCheckRuns[m.run]
			run := newRxCheckRun(rc.pkey, rc.sat)
			run.write(t, d)
			_, err := runTool(ctx, d, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
			require.NoError(t, err)
			res := runReq(t, ctx, d, "m", run, "vvp", "-n", filepath.Join(d, "sim.vvp"))
			bad := res.errors + res.werr + res.cerr + res.verr + res.gaps
			assert.True(t, bad > 0 || res.checked != res.wantBeats || res.acks != len(run.acks),
				"the %s run passes an hca_rx_ack with %s", rc.name, m.name)
			t.Logf("%s run: %d mismatches, counters %v, %d of %d ACKs taken: %s", rc.name, res.errors, res.drop, res.acks,
				len(run.acks), strings.Join(res.first, "; "))
		})
	}
}
