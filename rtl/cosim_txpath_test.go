package rtl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// ---- hca_tx_path + ib_vcrc <-> hca.Requester.Next, host memory, ib.AppendWire, ib.ParseWire ----
//
// The end-to-end test of the requester's transmit datapath: messages and
// their payload blocks go into hca_tx_path, its stream through ib_vcrc (as
// ib_link's transmit side will take it), and every packet that comes out
// must be ib.AppendWire's bytes of the model's packet, ICRC and VCRC
// included, and ib.ParseWire must take it. Unlike the blocks' cycle-exact
// traces (each block's timing is its own test's), the testbench here is
// self-timed: it offers the messages, blocks and out_ready as a per-cycle
// control trace says, writes every beat ib_vcrc sends to a file, and the
// Go side compares the packets, whenever they came.

// txPathMsgs is the messages per seed: asmDirected's 19, then random ones
// (newAsmMsg: every request opcode, MTU 256..4096, lengths 0 to a few
// MTUs, every start offset); txPathMutantMsgs the mutants' shorter run.
const (
	txPathMsgs       = 50
	txPathMutantMsgs = 24
)

// txPathFiles are the sources the testbench needs, besides tb.v.
var txPathFiles = []string{"hca_tx_path.v", "hca_tx_packetizer.v", "hca_tx_assemble.v", "ib_icrc.v", "ib_vcrc.v"}

// txPathRun is one seed's stimulus and what must come out.
type txPathRun struct {
	msgs  []*asmMsg
	wires [][]byte // per packet, in order: ib.AppendWire's bytes, zero padded to whole beats
	beats int      // of all packets
	ctrl  []byte   // per cycle: bit 0 offer a message, bit 1 offer a block, bit 2 out_ready
	// For TestTxPathStimulusCovers: cycles with out_ready 0, cycles without a block offered.
	stalls, gaps int
}

// txPathWires is the model's packets of message a with the payload the
// scheduler reads (hca.Device.schedule: LocalAddr + index x MTU, the
// packet's length; here a's host blocks), encoded whole by ib.AppendWire
// and padded to the beat. It panics where the bytes differ from
// asmModel's but for the ICRC and VCRC, which asmModel zeroes: the two
// tests expect the same packets.
func txPathWires(a *asmMsg) [][]byte {
	cfg := hca.Defaults()
	cfg.AckReqEvery = a.every
	mtu := pktzMTU(a.mtuCode)
	req := hca.NewRequester(&cfg, mtu, a.psn)
	req.Enqueue(a.wqe, 0)
	host := bytes.Join(a.blocks, nil)
	var wires [][]byte
	for req.HasWork() {
		pkt := ib.Packet{SLID: a.slid, DLID: a.dlid, SL: a.sl, VL: a.vl, DestQP: a.dqpn}
		tx := req.Next(&pkt)
		if pkt.PayloadLen > 0 {
			off := a.start + tx.Index*mtu
			pkt.Payload = host[off : off+pkt.PayloadLen]
		}
		wire := ib.AppendWire(nil, &pkt)
		beats := make([]byte, (len(wire)+BlockBytes-1)/BlockBytes*BlockBytes)
		copy(beats, wire)
		i := len(wires)
		zeroed := bytes.Clone(beats)
		clear(zeroed[len(wire)-ib.ICRCBytes-ib.VCRCBytes : len(wire)])
		if i >= len(a.wires) || !bytes.Equal(zeroed, a.wires[i]) {
			panic(fmt.Sprintf("rtl: packet %d of a %s: not the assembler test's packet", i, a.wqe.Opcode))
		}
		wires = append(wires, beats)
	}
	return wires
}

// newTxPathRun draws n messages (asmDirected first) and a control trace
// long enough for all of them: offers and out_ready in 256-cycle phases
// (phaseProb, floored so a run ends), a quarter of the phases at full rate.
func newTxPathRun(seed uint64, n int) *txPathRun {
	r := rand.New(rand.NewPCG(seed, 0x7a9a))
	run := &txPathRun{}
	var starts []int
	for i := range n {
		if len(starts) == 0 {
			starts = r.Perm(BlockBytes)
		}
		var a *asmMsg
		if i < len(asmDirected) {
			a = newAsmMsg(r, starts[0], &asmDirected[i].op, asmDirected[i].length)
		} else {
			a = newAsmMsg(r, starts[0], nil, 0)
		}
		if len(a.blocks) > 0 {
			starts = starts[1:]
		}
		run.msgs = append(run.msgs, a)
		for _, w := range txPathWires(a) {
			run.wires = append(run.wires, w)
			run.beats += len(w) / BlockBytes
		}
	}
	var pMsg, pPay, pReady float64
	full := false
	for c := range 8*run.beats + 2000 {
		pm := max(phaseProb(r, c, &pMsg), 0.2)
		pp := max(phaseProb(r, c, &pPay), 0.4)
		pr := max(phaseProb(r, c, &pReady), 0.3)
		if c%256 == 0 {
			full = r.IntN(4) == 0
		}
		if full {
			pm, pp, pr = 1, 1, 1
		}
		var bits byte
		if r.Float64() < pm {
			bits |= 1
		}
		if r.Float64() < pp {
			bits |= 2
		} else {
			run.gaps++
		}
		if r.Float64() < pr {
			bits |= 4
		} else {
			run.stalls++
		}
		run.ctrl = append(run.ctrl, bits)
	}
	return run
}

// write writes the run's input files into dir: msgs.hex (one message a
// line, the testbench's field layout), pays.hex ({pay_start, 8 bits;
// the block}), ctrl.hex (a digit a cycle).
func (run *txPathRun) write(t *testing.T, dir string) {
	t.Helper()
	var msgs, pays, ctrl strings.Builder
	for _, a := range run.msgs {
		w := &a.wqe
		fmt.Fprintf(&msgs, "%01x%08x%016x%08x%08x%016x%016x%04x%04x%01x%01x%06x%06x%01x%05x\n",
			uint8(w.Opcode), w.Length, w.RemoteAddr, w.RKey, w.Imm, w.SwapAdd, w.Compare,
			a.dlid, a.slid, a.sl, a.vl, a.dqpn, a.psn, a.mtuCode, a.every)
		for i, b := range a.blocks {
			start := 0
			if i == 0 {
				start = a.start
			}
			fmt.Fprintf(&pays, "%02x%s\n", start, hex.EncodeToString(b))
		}
	}
	for _, c := range run.ctrl {
		fmt.Fprintf(&ctrl, "%x\n", c)
	}
	for name, text := range map[string]string{"msgs.hex": msgs.String(), "pays.hex": pays.String(), "ctrl.hex": ctrl.String()} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
}

// args are the testbench's plusargs for the run's files in dir, its
// output to out.
func (run *txPathRun) args(dir, out string) []string {
	blocks := 0
	for _, a := range run.msgs {
		blocks += len(a.blocks)
	}
	return []string{
		"+msgs=" + filepath.Join(dir, "msgs.hex"), "+pays=" + filepath.Join(dir, "pays.hex"), "+ctrl=" + filepath.Join(dir, "ctrl.hex"),
		"+out=" + out, "+nmsg=" + strconv.Itoa(len(run.msgs)), "+npay=" + strconv.Itoa(blocks),
		"+ncyc=" + strconv.Itoa(len(run.ctrl)), "+nbeat=" + strconv.Itoa(run.beats),
	}
}

// txPathTB is the testbench: hca_tx_path, its out_* into ib_vcrc. After
// each falling edge it applies the handshakes of the cycle before (an
// offer stays until taken), drives this cycle's offers and out_ready from
// the control trace, and 1 ns later writes the beat ib_vcrc sends, if it
// sends one: "sop eop len_err data". When every expected beat came or the
// trace ends it runs 64 cycles more with nothing offered and out_ready 1,
// so a beat past the model's packets is written too.
const txPathTB = "`timescale 1ns/1ps\n" + `
module tb;
    localparam MAXMSG = 4096, MAXPAY = 65536, MAXCYC = 1048576;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    reg [403:0] msgs [0:MAXMSG-1];
    reg [519:0] pays [0:MAXPAY-1];
    reg [3:0]   ctrl [0:MAXCYC-1];
    reg [8*1024-1:0] path;
    integer nmsg, npay, ncyc, nbeat, fo, c, k, mi, pi, got;
    reg msg_valid, pay_valid, out_ready, take_msg, take_pay;
    reg [403:0] m;
    reg [519:0] pw;
    wire msg_ready, pay_ready;
    wire p_valid, p_ready, p_sop, p_eop;
    wire [511:0] p_data;
    wire v_valid, v_sop, v_eop, v_vcrc_err, v_len_err;
    wire [511:0] v_data;

    hca_tx_path dut (
        .clk(clk), .rst_n(rst_n),
        .msg_valid(msg_valid), .msg_ready(msg_ready),
        .msg_opcode(m[402:400]), .msg_length(m[399:368]), .msg_raddr(m[367:304]), .msg_rkey(m[303:272]),
        .msg_imm(m[271:240]), .msg_swap_add(m[239:176]), .msg_compare(m[175:112]),
        .msg_dlid(m[111:96]), .msg_slid(m[95:80]), .msg_sl(m[79:76]), .msg_vl(m[75:72]),
        .msg_dest_qpn(m[71:48]), .msg_psn(m[47:24]), .msg_mtu(m[22:20]), .msg_ack_every(m[16:0]), .msg_skip(24'd0),
        .pay_valid(pay_valid), .pay_ready(pay_ready), .pay_data(pw[511:0]), .pay_start(pw[517:512]),
        .out_valid(p_valid), .out_ready(p_ready), .out_data(p_data), .out_sop(p_sop), .out_eop(p_eop));
    ib_vcrc vcrc (
        .clk(clk), .rst_n(rst_n),
        .in_valid(p_valid), .in_ready(p_ready), .in_data(p_data), .in_sop(p_sop), .in_eop(p_eop),
        .out_valid(v_valid), .out_ready(out_ready), .out_data(v_data), .out_sop(v_sop), .out_eop(v_eop),
        .out_vcrc_err(v_vcrc_err), .out_len_err(v_len_err));

    always #5 clk = ~clk;

    initial begin
        if (!$value$plusargs("nmsg=%d", nmsg) || !$value$plusargs("npay=%d", npay) ||
            !$value$plusargs("ncyc=%d", ncyc) || !$value$plusargs("nbeat=%d", nbeat)) begin
            $display("TXPATH missing plusargs");
            $finish;
        end
        if ($value$plusargs("msgs=%s", path)) $readmemh(path, msgs, 0, nmsg - 1);
        if (npay > 0 && $value$plusargs("pays=%s", path)) $readmemh(path, pays, 0, npay - 1);
        if ($value$plusargs("ctrl=%s", path)) $readmemh(path, ctrl, 0, ncyc - 1);
        if (!$value$plusargs("out=%s", path)) path = "beats.txt";
        fo = $fopen(path, "w");
        msg_valid = 1'b0; pay_valid = 1'b0; out_ready = 1'b0; take_msg = 1'b0; take_pay = 1'b0;
        m = 404'd0; pw = 520'd0;
        mi = 0; pi = 0; got = 0;
        repeat (3) @(posedge clk);
        @(negedge clk) rst_n = 1'b1;
        for (c = 0; c < ncyc && got < nbeat; c = c + 1) begin
            @(negedge clk);
            if (take_msg) mi = mi + 1;
            if (take_pay) pi = pi + 1;
            msg_valid = mi < nmsg && (msg_valid && !take_msg || ctrl[c][0]);
            pay_valid = pi < npay && (pay_valid && !take_pay || ctrl[c][1]);
            out_ready = ctrl[c][2];
            m = msg_valid ? msgs[mi] : 404'd0;
            pw = pay_valid ? pays[pi] : 520'd0;
            #1;
            take_msg = msg_valid && msg_ready;
            take_pay = pay_valid && pay_ready;
            if (v_valid && out_ready) begin
                $fdisplay(fo, "%b %b %b %h", v_sop, v_eop, v_len_err, v_data);
                got = got + 1;
            end
        end
        // Then 64 cycles with nothing offered and out_ready 1: a beat
        // more than the model's packets shows.
        for (k = 0; k < 64; k = k + 1) begin
            @(negedge clk);
            if (take_msg) mi = mi + 1;
            if (take_pay) pi = pi + 1;
            msg_valid = 1'b0; pay_valid = 1'b0; out_ready = 1'b1;
            #1;
            take_msg = 1'b0; take_pay = 1'b0;
            if (v_valid) begin
                $fdisplay(fo, "%b %b %b %h", v_sop, v_eop, v_len_err, v_data);
                got = got + 1;
            end
        end
        $fclose(fo);
        $display("TXPATH beats=%0d cycles=%0d msgs=%0d blocks=%0d", got, c, mi, pi);
        $finish;
    end
endmodule
`

var txPathResult = regexp.MustCompile(`(?m)^TXPATH beats=(\d+) cycles=(\d+) msgs=(\d+) blocks=(\d+)$`)

// writeTxPathBench writes tb.v and the sources into dir, each source
// replaced by replace's text if it names it, and returns the file names.
func writeTxPathBench(t *testing.T, dir string, replace map[string]string) []string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tb.v"), []byte(txPathTB), 0o644))
	files := []string{"tb.v"}
	for _, f := range txPathFiles {
		text, ok := replace[f]
		if !ok {
			text = PrimitiveSource(f)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644))
		files = append(files, f)
	}
	return files
}

// txPathCheck reads the beats the testbench wrote and compares them with
// the run's packets: it returns the beats compared and the mismatches
// (a packet whose bytes differ from ib.AppendWire's, that ib.ParseWire
// refuses, with ib_vcrc's length flag, a beat out of place), with the
// first few described.
func txPathCheck(t *testing.T, run *txPathRun, beatsFile string) (checked, errors int, first []string) {
	t.Helper()
	f, err := os.Open(beatsFile)
	require.NoError(t, err)
	defer f.Close()
	fail := func(format string, args ...any) {
		errors++
		if len(first) < 5 {
			first = append(first, fmt.Sprintf(format, args...))
		}
	}
	var cur []byte
	pkt := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 4096)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		require.Len(t, fields, 4, "beat line %q", sc.Text())
		data, err := hex.DecodeString(fmt.Sprintf("%0128s", fields[3]))
		if err != nil || len(data) != BlockBytes {
			fail("beat %d: data %q is not 64 bytes of hex", checked, fields[3])
			checked++
			continue
		}
		sop, eop, lenErr := fields[0] == "1", fields[1] == "1", fields[2] == "1"
		if sop != (len(cur) == 0) {
			fail("packet %d: beat %d: sop %v", pkt, len(cur)/BlockBytes, sop)
		}
		cur = append(cur, data...)
		checked++
		if !eop {
			continue
		}
		if lenErr {
			fail("packet %d: ib_vcrc's out_len_err", pkt)
		}
		switch {
		case pkt >= len(run.wires):
			fail("packet %d: more packets than the model's %d", pkt, len(run.wires))
		case !bytes.Equal(cur, run.wires[pkt]):
			at := 0
			for at < min(len(cur), len(run.wires[pkt])) && cur[at] == run.wires[pkt][at] {
				at++
			}
			fail("packet %d: %d bytes, the model's %d; first difference at byte %d", pkt, len(cur), len(run.wires[pkt]), at)
		default:
			n := 4*int(binary.BigEndian.Uint16(cur[4:6])&0x7FF) + ib.VCRCBytes
			if _, err := ib.ParseWire(cur[:n]); err != nil {
				fail("packet %d: ib.ParseWire: %v", pkt, err)
			}
		}
		cur, pkt = cur[:0], pkt+1
	}
	require.NoError(t, sc.Err())
	if len(cur) > 0 {
		fail("a packet without eop at the end (%d bytes)", len(cur))
	}
	return checked, errors, first
}

// runTxPath runs a built testbench (cmd and its arguments before the
// plusargs) on run in dir and returns the check's result.
func runTxPath(t *testing.T, ctx context.Context, dir, tag string, run *txPathRun, cmd string, args ...string) (checked, errors int, first []string) {
	t.Helper()
	beats := filepath.Join(dir, "beats_"+tag+".txt")
	out, err := runTool(ctx, dir, cmd, append(args, run.args(dir, beats)...)...)
	require.NoError(t, err)
	m := txPathResult.FindStringSubmatch(out)
	require.NotNil(t, m, "testbench printed no TXPATH line:\n%s", tail(out, 30))
	return txPathCheck(t, run, beats)
}

// TestTxPathCosim: every packet hca_tx_path sends through ib_vcrc is
// ib.AppendWire's of the model's packet, ICRC and VCRC included, byte for
// byte, and ib.ParseWire takes it; every beat came. Icarus on two seeds,
// Verilator on a third (its build is the cost; -short skips it).
func TestTxPathCosim(t *testing.T) {
	t.Parallel()
	cases := []struct {
		sim   string
		seeds []uint64
	}{{"icarus", cosimSeeds[:2]}, {"verilator", cosimSeeds[2:3]}}
	for _, tc := range cases {
		t.Run(tc.sim, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			files := writeTxPathBench(t, dir, nil)
			cmd, args := buildSim(t, ctx, dir, tc.sim, files)
			for _, seed := range tc.seeds {
				run := newTxPathRun(seed, txPathMsgs)
				run.write(t, dir)
				checked, errors, first := runTxPath(t, ctx, dir, strconv.FormatUint(seed, 10), run, cmd, args...)
				assert.Equal(t, run.beats, checked, "seed %d: beats received (of %d packets)", seed, len(run.wires))
				assert.Zero(t, errors, "seed %d: mismatches: %s", seed, strings.Join(first, "; "))
			}
		})
	}
}

// TestTxPathStimulusCovers: per seed simulated, the messages had every
// request opcode, every PadCnt, 30 payload start offsets, lengths 0, 1 and
// 4096, and the control trace held out_ready low and left the payload
// stream idle for 500 cycles each; over the three seeds, every path MTU on
// a message of three packets or more.
func TestTxPathStimulusCovers(t *testing.T) {
	mtus := map[int]bool{}
	for _, seed := range cosimSeeds[:3] {
		run := newTxPathRun(seed, txPathMsgs)
		name := fmt.Sprintf("seed %d", seed)
		ops, pads, starts, lens := map[ib.Opcode]bool{}, map[int]bool{}, map[int]bool{}, map[uint32]bool{}
		for _, a := range run.msgs {
			for _, p := range a.pkts {
				ops[p.op] = true
				if p.payLen > 0 {
					pads[p.padCnt] = true
				}
			}
			if len(a.pkts) >= 3 {
				mtus[a.mtuCode] = true
			}
			if len(a.blocks) > 0 {
				starts[a.start] = true
			}
			if a.wqe.Opcode <= hca.WRSendImm {
				lens[a.wqe.Length] = true
			}
		}
		assert.Len(t, ops, 15, "%s: request opcodes", name)
		assert.Len(t, pads, 4, "%s: PadCnt values with a payload", name)
		assert.GreaterOrEqual(t, len(starts), 30, "%s: payload start offsets", name)
		assert.True(t, lens[0] && lens[1] && lens[4096], "%s: SEND or WRITE of 0, 1 and 4096 bytes", name)
		assert.GreaterOrEqual(t, run.stalls, 500, "%s: cycles with out_ready 0", name)
		assert.GreaterOrEqual(t, run.gaps, 500, "%s: cycles without a block offered", name)
	}
	assert.Len(t, mtus, 5, "MTUs with messages of three packets or more, over the seeds simulated")
}

// TestTxPathMutantsFail: the path with its ICRC block bypassed (the
// assembler's beats straight out: ICRC zero) and with the assembler's pad
// bytes not zeroed each fail the end-to-end test (Icarus, a shorter run).
func TestTxPathMutantsFail(t *testing.T) {
	t.Parallel()
	needTool(t, "iverilog", "vvp")
	run := newTxPathRun(cosimSeeds[0], txPathMutantMsgs)
	dir := t.TempDir()
	run.write(t, dir)
	for _, m := range []cosimMutant{
		{"unmutated", "", "", ""}, // the run passes without a slip: the failures are the mutants'
		{"the ICRC block bypassed", "hca_tx_path.v",
			"= {icrc_valid, icrc_data, icrc_sop, icrc_eop};", "= {asm_valid, asm_data, asm_sop, asm_eop};"},
		{"the assembler's pad bytes not zeroed", "hca_tx_assemble.v",
			"wire [12:0]   pay_end = {7'd0, st_h} + st_p;", "wire [12:0]   pay_end = {7'd0, st_h} + {pad4[12:2], 2'b00};"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := filepath.Join(dir, strings.ReplaceAll(m.name, " ", "_"))
			require.NoError(t, os.MkdirAll(d, 0o755))
			replace := mutatedSource(t, m.file, m.old, m.new)
			files := writeTxPathBench(t, d, replace)
			_, err := runTool(ctx, d, "iverilog", append([]string{"-g2005", "-o", "sim.vvp"}, files...)...)
			require.NoError(t, err)
			checked, errors, first := runTxPath(t, ctx, dir, filepath.Base(d), run, "vvp", "-n", filepath.Join(d, "sim.vvp"))
			if m.file == "" {
				assert.Equal(t, run.beats, checked, "beats received")
				assert.Zero(t, errors, "mismatches: %s", strings.Join(first, "; "))
				return
			}
			assert.True(t, errors > 0 || checked != run.beats, "the end-to-end test passes a path with %s", m.name)
			t.Logf("%d of %d beats, %d mismatches: %s", checked, run.beats, errors, strings.Join(first, "; "))
		})
	}
}
