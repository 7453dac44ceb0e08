package rtl

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

var update = flag.Bool("update", false, "rewrite testdata/*.v.golden from the emitter")

const testVersion = "0.0.0-test"

// lintDesigns are the designs whose emitted tree must lint clean and compile,
// besides the shipped edr/ndr/xdr configs (configs_test.go): a multi-VL
// EDR-class switch (radix 36 like an SB7800, 8 VLs) and the odd ones issue 7
// names.
var lintDesigns = []struct {
	key string
	d   Design
}{
	{"edr", Design{Name: "edr", Radix: 36, VLs: 8, VLBufferBytes: 16384, HCAVLBufferBytes: 65536, MTU: 4096, LinkGeneration: "EDR", LinkWidth: 4,
		RetryCnt: 7, RNRRetry: 7, RetryTimeout: 14, // hca.retry_cnt, rnr_retry and retry_timeout's defaults (perftest's)
		MaxInline: 236}}, // hca.max_inline_bytes' default (perftest's RC inline size)
	{"r7v2", Design{Name: "radix7-vl2", Radix: 7, VLs: 2, VLBufferBytes: 8192, HCAVLBufferBytes: 8192, MTU: 2048, LinkGeneration: "HDR", LinkWidth: 2,
		WQEPrefetchDepth: 1, KeyCacheEntries: 1, // the smallest window: one-bit in-flight counts; a one-entry MPT cache
		RetryCnt: 3, RNRRetry: 2, RetryTimeout: 31, // the widest local ACK timer: 4096 x 2^31 cycles, 44 bits
		MaxInline: hca.MaxInlineLimit}}, // the most inline bytes a WQE holds (988): 16 WQEBBs kept per message
	{"r36v1", Design{Name: "radix36-vl1", Radix: 36, VLs: 1, VLBufferBytes: 4800, HCAVLBufferBytes: 4352, MTU: 4096, LinkGeneration: "EDR", LinkWidth: 1,
		PCIeOutstandingReads: 8, KeyCacheEntries: 4, // 8 read tags and a 4-entry MPT cache keep TestReportYosys quick
		RetryCnt: 3, RNRRetry: 2, RetryTimeout: 14, // retry counters that move (at 7 they are constants), the default timer
		MaxInline: 236}}, // hca.max_inline_bytes' default: 5 WQEBBs kept per message
	{"r64v15", Design{Name: "radix64-vl15", Radix: 64, VLs: 15, VLBufferBytes: 1024, HCAVLBufferBytes: 2048, MTU: 256, LinkGeneration: "NDR", LinkWidth: 12,
		WQEPrefetchDepth:     256,                       // the largest window: hca_wqe_fetch's widest counts
		PCIeOutstandingReads: 768, PCIeMRRSBytes: 128}}, // the most read tags: PCIe 10-bit tags 256..1023
}

// goldenDesigns have their generated (non-primitive) files checked against
// testdata/<key>_<file>.golden.
var goldenDesigns = []string{"edr", "r7v2"}

func designByKey(t *testing.T, key string) Design {
	t.Helper()
	for _, ld := range lintDesigns {
		if ld.key == key {
			return ld.d
		}
	}
	t.Fatalf("no design %q", key)
	return Design{}
}

func isPrimitive(name string) bool {
	for _, p := range PrimitiveFiles {
		if p == name {
			return true
		}
	}
	return false
}

func TestEmitGolden(t *testing.T) {
	for _, key := range goldenDesigns {
		files, err := Emit(designByKey(t, key), testVersion)
		require.NoError(t, err)
		n := 0
		for _, f := range files {
			if isPrimitive(f.Name) {
				continue
			}
			n++
			path := filepath.Join("testdata", key+"_"+f.Name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(f.Text), 0o644))
				continue
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./rtl -run TestEmitGolden -update")
			assert.Equal(t, string(want), f.Text, "%s differs from %s (go test ./rtl -run TestEmitGolden -update rewrites it)", f.Name, path)
		}
		// 7 templates + sw_sl2vl + 2 TODO-bodied blocks.
		assert.Equal(t, len(templateFiles)+1+len(stubModules), n)
	}
}

var generatedLine = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

func TestEmitHeaderAndModules(t *testing.T) {
	d := designByKey(t, "r7v2")
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	seen := map[string]bool{}
	moduleDecl := regexp.MustCompile(`(?m)^module (\w+)`)
	for _, f := range files {
		first, _, _ := strings.Cut(f.Text, "\n")
		assert.Regexp(t, generatedLine, first, f.Name)
		assert.Contains(t, first, `"radix7-vl2"`, f.Name)
		assert.Contains(t, first, "hcasim "+testVersion, f.Name)
		// One module per file, named like the file.
		m := moduleDecl.FindAllStringSubmatch(f.Text, -1)
		require.Len(t, m, 1, f.Name)
		assert.Equal(t, strings.TrimSuffix(f.Name, ".v"), m[0][1])
		seen[m[0][1]] = true
	}
	// The hierarchy issue 7 asks for.
	for _, mod := range []string{
		"hca_top", "hca_doorbell", "hca_wqe_fetch", "hca_key_check", "hca_dma_engine", "hca_transport", "hca_cqe_writer",
		"switch_top", "sw_input_unit", "ib_rx_vl_buffers", "vl_arbiter", "sw_xbar_alloc", "sw_crossbar", "ib_tx_vl_port",
		"credit_sender", "credit_receiver", "sync_fifo", "rr_arbiter", "ib_link", "hca_wqe_parse", "hca_tx_packetizer", "hca_tx_assemble", "ib_icrc", "hca_tx_path", "hca_requester",
	} {
		assert.True(t, seen[mod], mod)
	}
}

func TestParams(t *testing.T) {
	d := designByKey(t, "r7v2")
	p := d.Params()
	// Radix 7 needs 3 port-select bits (2^3 = 8 >= 7); 2 VLs need 1 bit.
	assert.Equal(t, 3, p.PortW)
	assert.Equal(t, 1, p.VLW)
	// 8192 B per VL / 64 B per block = 128 entries, 7 address bits.
	assert.Equal(t, 128, p.BufDepth)
	assert.Equal(t, 7, p.BufAddrW)
	// MTU 2048, RDMA WRITE with immediate and no GRH (the simulator's largest
	// packet): 8+12+16+4+2048+4+2 = 2094 B = ceil(2094/64) = 33 blocks.
	assert.Equal(t, 33, p.MaxPktBlocks)
	assert.Equal(t, 2, p.Lanes)

	p = designByKey(t, "r64v15").Params()
	// 15 VLs need 4 bits; 64 ports 6 bits; 1024/64 = 16 entries, 4 bits.
	assert.Equal(t, 4, p.VLW)
	assert.Equal(t, 6, p.PortW)
	assert.Equal(t, 16, p.BufDepth)
	assert.Equal(t, 4, p.BufAddrW)
	assert.Equal(t, 64, p.VLArbEntries)
	// hca_dma_engine: the HCA defaults (64 tags, MRRS 512 = 8 blocks a
	// request) give 8-bit tags and reorder rings of 64 × 8 = 512 blocks;
	// 512 tags need PCIe's 10-bit tags; one tag at MRRS 128 still gets a
	// ring of 2^clog2(2 + 1) = 4 blocks (two requests' worth).
	p = designByKey(t, "edr").Params()
	assert.Equal(t, 8, p.TagW)
	assert.Equal(t, 512, p.ROBBlocks)
	d = designByKey(t, "edr")
	d.PCIeOutstandingReads, d.PCIeMRRSBytes = 512, 512
	assert.Equal(t, 10, d.Params().TagW)
	d.PCIeOutstandingReads, d.PCIeMRRSBytes = 1, 128
	assert.Equal(t, 4, d.Params().ROBBlocks)
	// MPS_BYTES: edr.yaml's cx5 keeps the HCA default, 256.
	assert.Equal(t, 256, p.MPS)
	d.PCIeMPSBytes = 4096
	assert.Equal(t, 4096, d.Params().MPS)
	// RNR_TICK: 10 us in core cycles, rounded. 1 GHz (the default): a
	// 1000 ps cycle, 10^7 / 1000 = 10000; 1500 MHz: ib.CyclePS rounds the
	// period to 667 ps, 10^7 / 667 = 14992.5, rounded 14993. RETRY_CNT
	// and RNR_RETRY are the config's.
	assert.Equal(t, 10000, p.RNRTick)
	assert.Equal(t, 7, p.RetryCnt)
	assert.Equal(t, 7, p.RNRRetry)
	// RETRY_TIMEOUT is hca.retry_timeout (edr.yaml keeps the default, 14:
	// 4.096 us x 2^14 = 67 ms); ACK_TICK is 4.096 us in core cycles,
	// rounded: 4096 at 1 GHz, 4096000 / 667 = 6140.9, rounded 6141, at
	// 1500 MHz.
	assert.Equal(t, 14, p.RetryTimeout)
	assert.Equal(t, 4096, p.ACKTick)
	// RD_RES is hca.max_rd_atomic (edr.yaml keeps the default, 16); a
	// Design literal's 0 builds 16 too.
	assert.Equal(t, 16, p.RdRes)
	d.MaxRdAtomic = 4
	assert.Equal(t, 4, d.Params().RdRes)
	d.HCAClockMHz = 1500
	assert.Equal(t, 14993, d.Params().RNRTick)
	assert.Equal(t, 6141, d.Params().ACKTick)
	// One data VL: a one-entry VL arbitration table.
	assert.Equal(t, 1, designByKey(t, "r36v1").Params().VLArbEntries)
}

func TestValidate(t *testing.T) {
	ok := designByKey(t, "edr")
	tests := []struct {
		name   string
		change func(*Design)
		want   string
	}{
		{"datapath", func(d *Design) { d.DatapathBytes = 128 }, "switch.datapath_bytes: 128 is not supported by the RTL skeleton, which moves one 64-byte credit block per cycle (64)"},
		{"mrrs", func(d *Design) { d.PCIeMRRSBytes = 64 }, "hca.pcie.mrrs_bytes: 64 is not 128, 256, 512, 1024, 2048 or 4096"},
		{"mps", func(d *Design) { d.PCIeMPSBytes = 8192 }, "hca.pcie.mps_bytes: 8192 is not 128, 256, 512, 1024, 2048 or 4096"},
		{"max inline", func(d *Design) { d.MaxInline = 2000 }, "hca.max_inline_bytes: 2000 is not an inline size a send WQE holds (0..988)"},
		{"negative inline", func(d *Design) { d.MaxInline = -1 }, "hca.max_inline_bytes: -1 is not an inline size a send WQE holds (0..988)"},
		{"responder resources", func(d *Design) { d.MaxRdAtomic = 300 }, "hca.max_rd_atomic: 300 is not a responder resource count (1..255)"},
		{"read tags", func(d *Design) { d.PCIeOutstandingReads = 1024 }, "hca.pcie.outstanding_reads: 1024 is outside 1..768, the tags the RTL's DMA engine numbers (8-bit tags, or PCIe's 10-bit tags 256..1023)"},
		{"radix", func(d *Design) { d.Radix = 1 }, "switch.radix: 1 is outside 2..256 (IBA 1.6 allows up to 256 ports)"},
		{"vls", func(d *Design) { d.VLs = 3 }, "switch.vls: 3 is not a VL count an IB port supports (1, 2, 4, 8, 15)"},
		{"mtu", func(d *Design) { d.MTU = 1500 }, "link.mtu: 1500 is not an IB MTU (256, 512, 1024, 2048, 4096)"},
		{"generation", func(d *Design) { d.LinkGeneration = "gdr" }, `link.generation: "gdr" is not an IB generation (sdr, ddr, qdr, fdr10, fdr, edr, hdr, ndr, xdr)`},
		{"width", func(d *Design) { d.LinkWidth = 3 }, "link.width: 3x is not an IB link width (1x, 2x, 4x, 8x, 12x)"},
		{"2x before hdr", func(d *Design) { d.LinkWidth = 2 }, "link.width: 2x exists only from HDR on, not with EDR (1x, 4x, 8x, 12x)"},
		{"shared pool", func(d *Design) { d.SharedBufferBytes = 65536 }, "switch.shared_buffer_bytes: 65536 is not supported by the RTL, whose VL buffers are static with no shared pool (0)"},
		{"voq", func(d *Design) { d.Queueing = "voq" }, `switch.queueing: "voq" is not supported by the RTL, whose input unit keeps one FIFO per VL (fifo: --set switch.queueing=fifo exports that design; the simulator's default is voq)`},
		{"wavefront", func(d *Design) { d.Allocator = "wavefront" }, `switch.allocator: "wavefront" is not supported by the RTL, whose allocator is a round-robin arbiter per output (separable, islip)`},
		{"speedup", func(d *Design) { d.Speedup = 2 }, "switch.speedup: 2 is not supported by the RTL, where an input holds one crossbar connection at a time (1)"},
		{"store and forward", func(d *Design) { d.StoreAndForward = true }, "switch.cut_through: false is not supported by the RTL, which forwards each block as it arrives (true)"},
		{"adaptive routing", func(d *Design) { d.AdaptiveRouting = true }, "topology.adaptive_routing: true is not supported by the RTL, whose route stage takes the LFT's port alone, with no AR groups or load-based choice (false)"},
		{"buffer granularity", func(d *Design) { d.VLBufferBytes = 5000 }, "switch.vl_buffer_bytes: 5000 is not a multiple of 64 (one credit block)"},
		// MTU 4096: largest packet 8+12+16+4+4096+4+2 = 4142 B = 65 blocks = 4160 B.
		{"buffer below one packet", func(d *Design) { d.HCAVLBufferBytes = 4096 }, "hca.vl_buffer_bytes: 4096 is outside 4160..131072 (one largest packet at MTU 4096, up to the 2048-block credit window)"},
		{"buffer above window", func(d *Design) { d.VLBufferBytes = 131136 }, "switch.vl_buffer_bytes: 131136 is outside 4160..131072 (one largest packet at MTU 4096, up to the 2048-block credit window)"},
		{"prefetch above 256", func(d *Design) { d.WQEPrefetchDepth = 257 }, "hca.wqe_prefetch_depth: 257 is outside 1..256"},
		{"retry_cnt", func(d *Design) { d.RetryCnt = 8 }, "hca.retry_cnt: 8 is not a retry count hca_requester's 3-bit counter holds (0..7, 7 infinite)"},
		{"rnr_retry", func(d *Design) { d.RNRRetry = -1 }, "hca.rnr_retry: -1 is not a retry count hca_requester's 3-bit counter holds (0..7, 7 infinite)"},
		{"retry_timeout", func(d *Design) { d.RetryTimeout = 32 }, "hca.retry_timeout: 32 is not a local ACK timeout exponent (0..31: 4.096 us x 2^t, 0 none)"},
	}
	require.NoError(t, ok.Validate())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := ok
			tc.change(&d)
			assert.EqualError(t, d.Validate(), tc.want)
			_, err := Emit(d, testVersion)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// TestLint emits every lint design and requires `verilator --lint-only -Wall`
// to print nothing and `iverilog -g2005` to compile, for each top.
func TestLint(t *testing.T) {
	t.Parallel()
	for _, ld := range lintDesigns {
		t.Run(ld.key, func(t *testing.T) {
			t.Parallel()
			lintTree(t, ld.d)
		})
	}
}

// lintTree emits d and lints and compiles it, for each top.
func lintTree(t *testing.T, d Design) {
	t.Helper()
	needTool(t, "verilator", "iverilog")
	files, err := Emit(d, testVersion)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, WriteTree(dir, files))
	ctx := context.Background()
	hdr := Header(d, testVersion) + "\n"
	// Each run reads the tree and writes at most its own file (<top>.vvp),
	// so the four are parallel subtests: the two cores share a design's
	// long runs (radix 64 x 15 VLs: switch_top takes 33-44 s of Verilator and
	// 24-38 s of Icarus CPU, by the load).
	for _, top := range Tops {
		names := topFiles(files, top)
		t.Run(top+" verilator", func(t *testing.T) {
			t.Parallel()
			out, err := lintRun(ctx, dir, files, names, hdr, "verilator", append([]string{"--lint-only", "-Wall", "--top-module", top}, names...)...)
			require.NoError(t, err)
			assert.Empty(t, strings.TrimSpace(out), "verilator -Wall output for %s", top)
		})
		t.Run(top+" iverilog", func(t *testing.T) {
			t.Parallel()
			out, err := lintRun(ctx, dir, files, names, hdr, "iverilog", append([]string{"-g2005", "-s", top, "-o", top + ".vvp"}, names...)...)
			require.NoError(t, err)
			assert.Empty(t, strings.TrimSpace(out), "iverilog output for %s", top)
		})
	}
}

// topFiles returns, in the tree's order, the files of the modules under
// top: each file holds the module it is named after, and a module needs
// every module whose name occurs as a word in its file (an instance; a
// name in a comment only adds a file). hca_top reaches every file, so its
// runs still parse the whole tree; switch_top's leave out hca_top.v,
// hca_transport.v and the HCA blocks, which its lint never reached
// (--top-module drops the modules outside it after parsing) and which the
// hca_top runs parse. A file missing here could not pass unseen: Icarus
// fails on the unknown module, and Verilator reads <module>.v from the
// run's directory, where the whole tree is.
func topFiles(files []File, top string) []string {
	text := map[string]string{}
	for _, f := range files {
		text[strings.TrimSuffix(f.Name, ".v")] = f.Text
	}
	need := map[string]bool{top: true}
	for stack := []string{top}; len(stack) > 0; {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range verilogWord.FindAllString(text[m], -1) {
			if _, ok := text[w]; ok && !need[w] {
				need[w] = true
				stack = append(stack, w)
			}
		}
	}
	var names []string
	for _, f := range files {
		if need[strings.TrimSuffix(f.Name, ".v")] {
			names = append(names, f.Name)
		}
	}
	return names
}

var verilogWord = regexp.MustCompile(`[A-Za-z_][A-Za-z_0-9$]*`)

// toolComment matches the words with which a comment speaks to a tool
// (// verilator lint_off, // synopsys translate_off, ...).
var toolComment = regexp.MustCompile(`(?i)verilator|synopsys|synthesis|pragma|translate|lint_`)

// lintRuns keeps every lint run of the process by lintKey, so that two
// designs whose top has the same sources (edr.yaml's and xdr.yaml's
// switch_top differ in the header comments alone: their HCAs differ, in
// the PCIe profile and the clock) run each tool once; the second test takes the
// first's output, which the tool would print again, and asserts on it.
var lintRuns sync.Map // lintKey -> *lintResult

type lintResult struct {
	once sync.Once
	dir  string // where it ran
	out  string
	err  error
}

// lintRun runs tool in dir with args, whose sources are names of files,
// or returns the output of the process's earlier run of the same tool and
// arguments on the same sources. The sources are compared without the
// generated header (hdr, four comment lines the same length in every
// design), unless the header holds a word a tool reads in a comment.
func lintRun(ctx context.Context, dir string, files []File, names []string, hdr, tool string, args ...string) (string, error) {
	inKey := map[string]bool{}
	for _, n := range names {
		inKey[n] = true
	}
	var key strings.Builder
	key.WriteString(tool + "\x00" + strings.Join(args, "\x00"))
	pragma := toolComment.MatchString(hdr)
	for _, f := range files {
		if !inKey[f.Name] {
			continue
		}
		text := f.Text
		if !pragma {
			text = strings.TrimPrefix(text, hdr)
		}
		key.WriteString("\x00" + f.Name + "\x00" + text)
	}
	v, _ := lintRuns.LoadOrStore(key.String(), &lintResult{})
	r := v.(*lintResult)
	r.once.Do(func() {
		r.dir = dir
		r.out, r.err = runTool(ctx, dir, tool, args...)
	})
	if r.dir != dir && r.err != nil {
		return r.out, fmt.Errorf("%w (run in %s on the same sources)", r.err, r.dir)
	}
	return r.out, r.err
}

// TestHeaderRegenerate checks that the header's regenerate command repeats
// the --set overrides as shell words a shell turns back into the same
// arguments (bash's printf prints each between NULs), on one comment line.
func TestHeaderRegenerate(t *testing.T) {
	d := designByKey(t, "r7v2")
	d.Overrides = []string{
		"switch.vls=2",                  // bare
		"name=it's a test",              // single quote and spaces
		"switch.sl2vl=[0, 1, 0, 1]",     // glob characters
		"name=two\nlines\tand \\ $HOME", // control characters, backslash, $
		"name=caf\u00e9 \u2028",         // UTF-8 and a line separator
	}
	hdr := Header(d, testVersion)
	lines := strings.Split(strings.TrimSuffix(hdr, "\n"), "\n")
	require.Len(t, lines, 4, "the header keeps its four lines: %q", hdr)
	cmd := lines[1]
	const pre, post = "// Regenerate: hcasim rtl -config <that config> ", " -o <dir>; edit the config, not this file."
	require.True(t, strings.HasPrefix(cmd, pre) && strings.HasSuffix(cmd, post), cmd)
	assert.Contains(t, cmd, " --set switch.vls=2 --set 'name=it'\\''s a test' --set 'switch.sl2vl=[0, 1, 0, 1]' ")
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to check the quoting with")
	}
	words := strings.TrimSuffix(strings.TrimPrefix(cmd, pre), post)
	out, err := exec.Command("bash", "-c", `printf '%s\0' `+words).Output()
	require.NoError(t, err)
	var want []string
	for _, o := range d.Overrides {
		want = append(want, "--set", o)
	}
	assert.Equal(t, want, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"))

	d.Overrides = nil
	assert.Contains(t, Header(d, testVersion), "\n// Regenerate: hcasim rtl -config <that config> -o <dir>; edit")
}

// TestLintRunShares: lintTree's runs are shared exactly between trees whose
// top has the same sources. The tool here is sh printing its process id, so
// two outputs are equal only if one run served both. Two designs that
// differ in name (the header) and in the HCA's read tags
// (hca.pcie.outstanding_reads, an hca_top parameter: the switch is the
// same) share switch_top's run and not hca_top's; a design of another
// radix shares neither.
func TestLintRunShares(t *testing.T) {
	needTool(t, "sh")
	a := designByKey(t, "edr")
	b := a
	b.Name, b.PCIeOutstandingReads = "edr-128-tags", 128
	c := designByKey(t, "r7v2")
	ctx := context.Background()
	run := func(d Design, top string) string {
		files, err := Emit(d, testVersion)
		require.NoError(t, err)
		dir := t.TempDir()
		require.NoError(t, WriteTree(dir, files))
		names := topFiles(files, top)
		out, err := lintRun(ctx, dir, files, names, Header(d, testVersion)+"\n", "sh", "-c", "echo $$ "+top+" TestLintRunShares")
		require.NoError(t, err)
		return out
	}
	assert.Equal(t, run(a, "switch_top"), run(b, "switch_top"), "the same switch_top sources: one run")
	assert.NotEqual(t, run(a, "hca_top"), run(b, "hca_top"), "hca_top differs in its read tags")
	assert.NotEqual(t, run(a, "switch_top"), run(c, "switch_top"), "another radix")

	// switch_top's files: its modules, without the HCA's.
	files, err := Emit(a, testVersion)
	require.NoError(t, err)
	st := topFiles(files, "switch_top")
	for _, f := range []string{"switch_top.v", "ib_link.v", "ib_vcrc.v", "sw_xbar_alloc.v", "sw_route_lookup.v", "sync_fifo.v", "rr_arbiter.v"} {
		assert.Contains(t, st, f)
	}
	for _, f := range []string{"hca_top.v", "hca_transport.v", "hca_requester.v", "hca_dma_engine.v"} {
		assert.NotContains(t, st, f)
	}
	assert.Len(t, topFiles(files, "hca_top"), len(files), "hca_top reaches every file")
}
