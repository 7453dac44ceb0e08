package rtl

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hcasim/hcasim/components"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fifo is the override a shipped config needs to be exported: they all run
// the simulator's default VOQ input units, which the RTL does not build.
const fifo = "switch.queueing=fifo"

// TestShippedConfigs emits, lints and compiles the trees of the shipped
// edr, ndr and xdr configs through the real config loader, and checks that
// --set reaches the parameters.
func TestShippedConfigs(t *testing.T) {
	for name, sets := range map[string][]string{
		"edr.yaml": {fifo},
		// ndr.yaml sweeps switch.vl_buffer_bytes; its own value is 16640.
		"ndr.yaml": {fifo, "switch.vl_buffer_bytes=16640"},
		"xdr.yaml": {fifo},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, err := LoadDesign(name, sets)
			require.NoError(t, err)
			require.NoError(t, d.Validate())
			lintTree(t, d)
		})
	}
	t.Run("set", func(t *testing.T) {
		d, err := LoadDesign("ndr.yaml", []string{fifo, "switch.vl_buffer_bytes=16640", "switch.radix=8", "switch.vls=2", "link.width=2x"})
		require.NoError(t, err)
		p := d.Params()
		assert.Equal(t, 8, p.Ports)
		assert.Equal(t, 3, p.PortW)
		assert.Equal(t, 2, p.VLs)
		assert.Equal(t, 2, p.Lanes)
		_, err = LoadDesign("nope.yaml", nil)
		assert.Error(t, err)
	})
}

// TestBufferMinimumIsTheSimulators checks that the smallest VL buffer the
// simulator accepts at each MTU (one packet of its largest kind, probed
// through the real loader) is one the RTL accepts too, so every depth a
// sweep can choose is exportable; 64 bytes less is refused by both. At MTU
// 4096 that is 65 blocks: LRH 8 + BTH 12 + RETH 16 + ImmDt 4 + 4096 + ICRC 4
// + VCRC 2 = 4142 bytes, no GRH (ndr.yaml sweeps 4160).
func TestBufferMinimumIsTheSimulators(t *testing.T) {
	assert.Equal(t, 65, (8+12+16+4+4096+4+2+63)/64)
	for _, mtu := range []int{256, 512, 1024, 2048, 4096} {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			load := func(bytes int) (Design, error) {
				return LoadDesign("ndr.yaml", []string{
					fifo,
					fmt.Sprintf("link.mtu=%d", mtu),
					fmt.Sprintf("switch.vl_buffer_bytes=%d", bytes),
					fmt.Sprintf("hca.vl_buffer_bytes=%d", bytes),
				})
			}
			// The simulator's minimum: the smallest multiple of 64 it loads.
			minBytes := 0
			for b := 64; b <= 8192; b += 64 {
				if _, err := load(b); err == nil {
					minBytes = b
					break
				}
			}
			require.NotZero(t, minBytes, "the simulator accepts no buffer up to 8192 bytes")
			d, err := load(minBytes)
			require.NoError(t, err)
			assert.NoError(t, d.Validate())
			assert.Equal(t, minBytes/64, d.Params().MaxPktBlocks)
			d.VLBufferBytes -= 64
			assert.ErrorContains(t, d.Validate(), fmt.Sprintf("switch.vl_buffer_bytes: %d is outside %d..", minBytes-64, minBytes))
		})
	}
	d, err := LoadDesign("ndr.yaml", []string{fifo, "switch.vl_buffer_bytes=4160"})
	require.NoError(t, err)
	assert.NoError(t, d.Validate())
}

// TestSwitchKeysTheRTLDoesNotBuild goes through the real loader: a switch
// key whose value the RTL does not build is refused by name, with the value
// the RTL takes; the values it does build pass.
func TestSwitchKeysTheRTLDoesNotBuild(t *testing.T) {
	tests := []struct {
		set  []string
		want string // "" = accepted
	}{
		// The audit's case: a shared pool and VOQs, which emitted plain
		// per-VL FIFOs and a report without the pool's SRAM.
		{[]string{"switch.queueing=voq", "switch.shared_buffer_bytes=65536", "switch.vl_buffer_bytes=4224"},
			"switch.shared_buffer_bytes: 65536 is not supported by the RTL, whose VL buffers are static with no shared pool (0)"},
		{[]string{"switch.queueing=voq"}, `switch.queueing: "voq" is not supported by the RTL, whose input unit keeps one FIFO per VL (fifo)`},
		// The default (the config sweeps switch.queueing, so the sweep goes).
		{[]string{"sweep={}"}, `switch.queueing: "voq" is not supported by the RTL, whose input unit keeps one FIFO per VL (fifo)`},
		{[]string{fifo, "switch.allocator=wavefront"}, `switch.allocator: "wavefront" is not supported by the RTL, whose allocator is a round-robin arbiter per output (separable, islip)`},
		{[]string{fifo, "switch.speedup=2"}, "switch.speedup: 2 is not supported by the RTL, where an input holds one crossbar connection at a time (1)"},
		{[]string{fifo, "switch.cut_through=false"}, "switch.cut_through: false is not supported by the RTL, which forwards each block as it arrives (true)"},
		{[]string{fifo, "switch.datapath_bytes=32"}, "switch.datapath_bytes: 32 is not supported by the RTL skeleton, which moves one 64-byte credit block per cycle (64)"},
		// Built, or not the RTL's to build (docs/rtl.md says why for each).
		{[]string{fifo}, ""},
		{[]string{fifo, "switch.allocator=separable"}, ""},
		{[]string{fifo, "switch.allocator=islip", "switch.islip_iterations=4"}, ""},
		{[]string{fifo, "switch.speedup=1", "switch.cut_through=true", "switch.shared_buffer_bytes=0"}, ""},
		{[]string{fifo, "switch.core_clock_mhz=800", "switch.route_cycles=10", "switch.alloc_cycles=5", "switch.xbar_cycles=3"}, ""},
		{[]string{fifo, "switch.vl_high_limit=255", "hca.profile=cx5", "hca.tx_buffer_bytes=65536"}, ""},
		// hca_dma_engine numbers 8-bit tags, or PCIe's 10-bit tags
		// 256..1023: 768 at most (the model allows 1024).
		{[]string{fifo, "hca.pcie.outstanding_reads=769"},
			"hca.pcie.outstanding_reads: 769 is outside 1..768, the tags the RTL's DMA engine numbers (8-bit tags, or PCIe's 10-bit tags 256..1023)"},
		{[]string{fifo, "hca.pcie.outstanding_reads=768", "hca.pcie.mrrs_bytes=128"}, ""},
		// Per-pair SL-to-VL tables are built (sw_sl2vl); they used to be
		// refused.
		{[]string{fifo, "switch.sl2vl_pairs=[{in: host, sl2vl: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}]"}, ""},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
			d, err := LoadDesign(filepath.Join("..", "configs", "examples", "hol-blocking.yaml"), tc.set)
			require.NoError(t, err)
			if tc.want == "" {
				assert.NoError(t, d.Validate())
			} else {
				assert.EqualError(t, d.Validate(), tc.want)
			}
		})
	}
}

// TestSweepAxesTheRTLReads: the RTL is one design point, so a sweep: axis
// one of whose values gives another Design than the config's own is refused
// by name (the first such value, in the axis's order) until --set pins it;
// an axis that changes no Design field, whatever its key, is listed as
// ignored.
func TestSweepAxesTheRTLReads(t *testing.T) {
	pin := func(key string) string {
		return "; pin it with --set " + key + "=VALUE (or drop the sweep with --set sweep={})"
	}
	tests := []struct {
		config  string
		set     []string
		want    string   // the error; "" = loaded
		ignored []string // Design.SweepIgnored when loaded
	}{
		// ndr.yaml: switch.vl_buffer_bytes 16640 swept over
		// [4160, 8320, 16640, 33280]; 4160 is the first value that differs.
		{"ndr.yaml", []string{fifo}, "ndr.yaml: sweep.switch.vl_buffer_bytes: the RTL is one design point, and this axis changes it (at 4160)" +
			pin("switch.vl_buffer_bytes"), nil},
		{"ndr.yaml", []string{fifo, "switch.vl_buffer_bytes=16640"}, "", []string{"workload.offered_load"}},
		{"ndr.yaml", []string{fifo, "sweep={}"}, "", nil},
		// hca.vl_buffer_bytes is the HCA default 32768, swept from 8192.
		// link.length_m changes the cable's flight time, nothing the RTL
		// builds: not every key outside workload.* is refused.
		{"examples/buffer-sizing.yaml", []string{fifo}, "examples/buffer-sizing.yaml: sweep.hca.vl_buffer_bytes: the RTL is one design point, and this axis changes it (at 8192)" +
			pin("hca.vl_buffer_bytes"), nil},
		{"examples/buffer-sizing.yaml", []string{fifo, "hca.vl_buffer_bytes=32768"}, "", []string{"link.length_m"}},
		// A knee search is probed at both ends.
		{"examples/hotspot-knee.yaml", []string{fifo}, "", []string{"workload.hotspot_fraction", "workload.offered_load"}},
		// The DMA engine's parameters: hca.pcie.mrrs_bytes (default 512)
		// and hca.pcie.outstanding_reads (cx7, ndr.yaml's profile: 256) are design axes now;
		// another PCIe key it does not build (the completion size the host
		// chooses) is not.
		{"ndr.yaml", []string{fifo, "sweep={hca.pcie.mrrs_bytes: [256, 512]}"}, "ndr.yaml: sweep.hca.pcie.mrrs_bytes: the RTL is one design point, and this axis changes it (at 256)" +
			pin("hca.pcie.mrrs_bytes"), nil},
		{"ndr.yaml", []string{fifo, "sweep={hca.pcie.outstanding_reads: [256, 128]}"}, "ndr.yaml: sweep.hca.pcie.outstanding_reads: the RTL is one design point, and this axis changes it (at 128)" +
			pin("hca.pcie.outstanding_reads"), nil},
		{"ndr.yaml", []string{fifo, "sweep={hca.pcie.mrrs_bytes: [256, 512]}", "hca.pcie.mrrs_bytes=1024"}, "", nil},
		{"ndr.yaml", []string{fifo, "sweep={hca.pcie.read_completion_bytes: [64, 128]}"}, "", []string{"hca.pcie.read_completion_bytes"}},
		// switch.queueing is the default voq, swept over [fifo, voq].
		{"examples/hol-blocking.yaml", nil, "examples/hol-blocking.yaml: sweep.switch.queueing: the RTL is one design point, and this axis changes it (at fifo)" +
			pin("switch.queueing"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.config+" "+strings.Join(tc.set, ","), func(t *testing.T) {
			d, err := LoadDesign(tc.config, tc.set)
			if tc.want != "" {
				assert.EqualError(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.ignored, d.SweepIgnored)
			assert.NoError(t, d.Validate())
		})
	}
}

// TestAllocatorsTheRTLTakes backs the switch.allocator decision: when every
// input requests at most one output, as an RTL input unit does, separable
// input-first and iSLIP with any number of iterations grant exactly what one
// round-robin arbiter per output grants, pointer moved past each grant
// (sw_xbar_alloc: rr_arbiter, whose Go model is components.RoundRobin),
// round after round; the wavefront allocator does not.
func TestAllocatorsTheRTLTakes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		iterations int
		same       bool
	}{
		{components.AllocSeparable, 1, true},
		{components.AllocISLIP, 1, true},
		{components.AllocISLIP, 3, true},
		{components.AllocWavefront, 1, false},
	} {
		t.Run(fmt.Sprint(tc.name, tc.iterations), func(t *testing.T) {
			rounds, differ, grants := compareWithPerOutputRoundRobin(t, tc.name, tc.iterations)
			require.Greater(t, grants, rounds, "the comparison saw grants")
			if tc.same {
				assert.Zero(t, differ, "rounds whose grants differ")
			} else {
				assert.NotZero(t, differ, "rounds whose grants differ")
			}
		})
	}
}

// compareWithPerOutputRoundRobin runs the named allocator and one
// round-robin arbiter per output side by side on random rounds in which each
// input requests at most one output, and counts the rounds whose grants
// differ and the grants the arbiters made.
func compareWithPerOutputRoundRobin(t *testing.T, name string, iterations int) (rounds, differ, grants int) {
	const ports = 7
	rounds = 2000
	alloc, err := components.NewAllocator(name, ports, ports, iterations)
	require.NoError(t, err)
	perOutput := make([]*components.RoundRobin, ports)
	for o := range perOutput {
		perOutput[o] = components.NewRoundRobin(ports)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	req := make([]components.PortSet, ports)
	got, want := make([]int, ports), make([]int, ports)
	for range rounds {
		bids := make([]components.PortSet, ports)
		for i := range req {
			req[i] = components.PortSet{}
			if rng.IntN(4) > 0 { // an idle input now and then
				o := rng.IntN(ports)
				req[i].Set(o)
				bids[o].Set(i)
			}
		}
		alloc.Allocate(req, got)
		for i := range want {
			want[i] = -1
		}
		for o, arb := range perOutput {
			if i := arb.Pick(bids[o]); i >= 0 {
				want[i] = o
				arb.Commit(i)
				grants++
			}
		}
		if !slices.Equal(want, got) {
			differ++
		}
	}
	return rounds, differ, grants
}

// TestBitErrorsLeaveTheRTL: link.ber is the channel's, not the blocks': a
// lossy design emits the very files of the lossless one.
func TestBitErrorsLeaveTheRTL(t *testing.T) {
	sets := []string{fifo, "switch.vl_buffer_bytes=16640"}
	clean, err := LoadDesign("ndr.yaml", sets)
	require.NoError(t, err)
	lossy, err := LoadDesign("ndr.yaml", append(sets, "link.ber=1e-6"))
	require.NoError(t, err)
	a, err := Emit(clean, "test")
	require.NoError(t, err)
	b, err := Emit(lossy, "test")
	require.NoError(t, err)
	require.NotEmpty(t, a)
	assert.Equal(t, a, b)
}

// TestMixedLinkSpeedsRefused: every RTL port takes link.width's lanes, so
// a design point with a cable of its own speed has no RTL, and says so in
// one line naming the key and the cable; one whose per-cable keys repeat
// link.*'s speed exports as before.
func TestMixedLinkSpeedsRefused(t *testing.T) {
	base := []string{"switch.queueing=fifo", "switch.vl_buffer_bytes=16640"}
	_, err := LoadDesign("ndr.yaml", append(base, `topology.degraded_links=[{cable: "Fabric.Leaf[0].Port[5]", width: 1x}]`))
	require.Error(t, err)
	assert.Equal(t, `ndr.yaml: topology.degraded_links: the cable Fabric.Leaf[0].Port[5] to Fabric.Spine[0].Port[1] runs at 1x NDR rs544, not link.*'s 4x NDR rs544; the RTL's ports all have link.width's lanes at link.generation; export a design point whose cables run at one speed`, err.Error())
	_, err = LoadDesign("ndr.yaml", append(base, "topology.host_link_width=2x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ndr.yaml: topology.host_link_width: the cable Fabric.Host[0].Port[1] to Fabric.Leaf[0].Port[1] runs at 2x NDR rs544")
	_, err = LoadDesign("ndr.yaml", append(base, "topology.host_link_width=4x", "topology.host_link_generation=NDR"))
	assert.NoError(t, err)
}

// TestFCCyclesFromTheConfig: the flow-control schedule's periods are the
// link's, counted in each core's cycles as the simulator counts time (whole
// picoseconds, the clock period rounded to one: ib.CyclePS), the refresh
// rounded down and the minimum interval up, so the RTL refreshes at least
// as often and waits at least as long as the model. A sweep of either key,
// or of a clock, changes the design.
func TestFCCyclesFromTheConfig(t *testing.T) {
	load := func(t *testing.T, sets ...string) Params {
		t.Helper()
		d, err := LoadDesign(filepath.Join("..", "configs", "examples", "hol-blocking.yaml"), append([]string{fifo, "sweep={}"}, sets...))
		require.NoError(t, err)
		require.NoError(t, d.Validate())
		return d.Params()
	}
	// Defaults: 6000 ns at 1000 MHz (1000 ps) is 6000 cycles; no interval.
	p := load(t)
	assert.Equal(t, [4]int{6000, 0, 6000, 0}, [4]int{p.SwFCRefreshCycles, p.SwFCMinCycles, p.HCAFCRefreshCycles, p.HCAFCMinCycles})
	// A switch at 800 MHz: 1250 ps, 6e6 / 1250 = 4800 cycles; 256 ns =
	// 256000 / 1250 = 204.8, rounded up to 205. The cx7 HCA at 1500 MHz:
	// 1e6 / 1500 = 666.7, a 667 ps period; 6e6 / 667 = 8995.5, rounded
	// down to 8995; 256000 / 667 = 383.8, up to 384.
	p = load(t, "switch.core_clock_mhz=800", "hca.profile=cx7", "link.fc_min_interval_ns=256")
	assert.Equal(t, [4]int{4800, 205, 8995, 384}, [4]int{p.SwFCRefreshCycles, p.SwFCMinCycles, p.HCAFCRefreshCycles, p.HCAFCMinCycles})

	// 1e9 ns at 10 GHz (100 ps) is 1e10 cycles: beyond a Verilog integer.
	d, err := LoadDesign(filepath.Join("..", "configs", "examples", "hol-blocking.yaml"),
		[]string{fifo, "sweep={}", "link.fc_refresh_ns=1e9", "switch.core_clock_mhz=10000"})
	require.NoError(t, err)
	assert.EqualError(t, d.Validate(), "link.fc_refresh_ns: 1e+09 is 10000000000 cycles of switch.core_clock_mhz 10000, more than the RTL's 2147483647-cycle refresh counter counts (a Verilog integer parameter)")

	_, err = LoadDesign(filepath.Join("..", "configs", "examples", "hol-blocking.yaml"),
		[]string{fifo, "sweep={link.fc_refresh_ns: [6000, 3000]}"})
	assert.EqualError(t, err, "../configs/examples/hol-blocking.yaml: sweep.link.fc_refresh_ns: the RTL is one design point, and this axis changes it (at 3000); pin it with --set link.fc_refresh_ns=VALUE (or drop the sweep with --set sweep={})")
}
