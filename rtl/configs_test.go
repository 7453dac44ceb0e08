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
	t.Parallel()
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
		{[]string{"switch.queueing=voq"}, `switch.queueing: "voq" is not supported by the RTL, whose input unit keeps one FIFO per VL (fifo: --set switch.queueing=fifo exports that design; the simulator's default is voq)`},
		// The default (the config sweeps switch.queueing, so the sweep goes).
		{[]string{"sweep={}"}, `switch.queueing: "voq" is not supported by the RTL, whose input unit keeps one FIFO per VL (fifo: --set switch.queueing=fifo exports that design; the simulator's default is voq)`},
		{[]string{fifo, "switch.allocator=wavefront"}, `switch.allocator: "wavefront" is not supported by the RTL, whose allocator is a round-robin arbiter per output (separable, islip)`},
		{[]string{fifo, "switch.speedup=2"}, "switch.speedup: 2 is not supported by the RTL, where an input holds one crossbar connection at a time (1)"},
		{[]string{fifo, "switch.cut_through=false"}, "switch.cut_through: false is not supported by the RTL, which forwards each block as it arrives (true)"},
		{[]string{fifo, "switch.datapath_bytes=32"}, "switch.datapath_bytes: 32 is not supported by the RTL skeleton, which moves one 64-byte credit block per cycle (64)"},
		// Built, or not the RTL's to build (docs/rtl.md says why for each).
		{[]string{fifo}, ""},
		{[]string{fifo, "switch.allocator=separable"}, ""},
		{[]string{fifo, "switch.allocator=islip", "switch.islip_iterations=4"}, ""},
		// With several VLs an input requests an output per VL head, and only
		// one iSLIP iteration is what sw_xbar_alloc grants
		// (TestAllocatorsTheRTLTakes).
		// (hol-blocking.yaml runs islip_iterations 2.)
		{[]string{fifo, "switch.vls=2", "switch.islip_iterations=1"}, ""},
		{[]string{fifo, "switch.vls=4", "switch.allocator=islip", "switch.islip_iterations=1"}, ""},
		{[]string{fifo, "switch.vls=2"},
			"switch.islip_iterations: 2 is not supported by the RTL with switch.vls 2, whose allocator runs one iSLIP iteration over a request per input VL (1; any with one VL)"},
		{[]string{fifo, "switch.vls=8", "switch.allocator=separable"},
			`switch.allocator: "separable" is not supported by the RTL with switch.vls 8, whose allocator is one iSLIP iteration over a request per input VL (islip; separable only with one VL)`},
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
		// Multicast replication is not built (a multicast design point
		// is refused, TestMulticastRefused), so its policy changes no
		// unicast design.
		{[]string{fifo, "switch.mcast_replication=hold"}, ""},
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
		// The DMA engine's parameters: hca.pcie.mrrs_bytes (default 512),
		// hca.pcie.mps_bytes and hca.pcie.outstanding_reads (cx7, ndr.yaml's profile: 256) are design axes now;
		// another PCIe key it does not build (the completion size the host
		// chooses) is not.
		{"ndr.yaml", []string{fifo, "sweep={hca.pcie.mrrs_bytes: [256, 512]}"}, "ndr.yaml: sweep.hca.pcie.mrrs_bytes: the RTL is one design point, and this axis changes it (at 256)" +
			pin("hca.pcie.mrrs_bytes"), nil},
		{"ndr.yaml", []string{fifo, "sweep={hca.pcie.outstanding_reads: [256, 128]}"}, "ndr.yaml: sweep.hca.pcie.outstanding_reads: the RTL is one design point, and this axis changes it (at 128)" +
			pin("hca.pcie.outstanding_reads"), nil},
		// hca.retry_timeout is hca_requester's RETRY_TIMEOUT (default 14).
		{"ndr.yaml", []string{fifo, "sweep={hca.retry_timeout: [14, 2]}"}, "ndr.yaml: sweep.hca.retry_timeout: the RTL is one design point, and this axis changes it (at 2)" +
			pin("hca.retry_timeout"), nil},
		{"ndr.yaml", []string{fifo, "sweep={hca.pcie.mrrs_bytes: [256, 512]}", "hca.pcie.mrrs_bytes=1024"}, "", nil},
		// hca.pcie.mps_bytes (cx7: 512) sizes the write TLPs (MPS_BYTES).
		{"ndr.yaml", []string{fifo, "sweep={hca.pcie.mps_bytes: [512, 256]}"}, "ndr.yaml: sweep.hca.pcie.mps_bytes: the RTL is one design point, and this axis changes it (at 256)" +
			pin("hca.pcie.mps_bytes"), nil},
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

// TestAllocatorsTheRTLTakes backs the switch.allocator and
// switch.islip_iterations decisions. The switch model's allocation round
// (switchasic: collectCandidates, match, doGrant) and rtlXbarAlloc, the Go
// description of sw_xbar_alloc, are driven side by side with the same
// random heads (every input VL's, as both input units offer them) and the
// same VL arbiter picks, round after round, and must grant the same output
// and input VL to every input. With one VL an input requests one output,
// and separable input-first and iSLIP with any number of iterations all
// reduce to the RTL's per-output round robin; with several VLs an input
// requests several outputs and only iSLIP with one iteration is the RTL's
// (the rest differ, so Design.Validate refuses them there). Wavefront
// differs always.
func TestAllocatorsTheRTLTakes(t *testing.T) {
	for _, tc := range []struct {
		vls        int
		name       string
		iterations int
		same       bool
	}{
		{1, components.AllocSeparable, 1, true},
		{1, components.AllocISLIP, 1, true},
		{1, components.AllocISLIP, 3, true},
		{1, components.AllocWavefront, 1, false},
		{2, components.AllocISLIP, 1, true},
		{4, components.AllocISLIP, 1, true},
		{8, components.AllocISLIP, 1, true},
		{4, components.AllocISLIP, 2, false},
		{4, components.AllocSeparable, 1, false},
		{4, components.AllocWavefront, 1, false},
	} {
		t.Run(fmt.Sprintf("vls%d_%s%d", tc.vls, tc.name, tc.iterations), func(t *testing.T) {
			st := compareWithRTLAllocator(t, tc.vls, tc.name, tc.iterations)
			require.Greater(t, st.grants, st.rounds, "the comparison saw grants")
			if tc.vls > 1 {
				// The cases one request per input never shows: an input
				// offered two outputs (one waits), and two VLs of an input
				// wanting the granted output on its picked VL (in.rr).
				require.Greater(t, st.multiOffers, 100, "inputs granted by two outputs or more")
				require.Greater(t, st.ties, 100, "grants with two input VLs for the output VL")
			}
			if tc.same {
				assert.Zero(t, st.differ, "rounds whose grants differ")
			} else {
				assert.NotZero(t, st.differ, "rounds whose grants differ")
			}
		})
	}
}

// allocHead is one input VL's head as an allocation round sees it: ready,
// and fitting its output VL's credits (the RTL's counted request, the
// model's candidate), for output out on output VL vl.
type allocHead struct {
	ok      bool
	out, vl int
}

// rtlXbarAlloc is the Go description of sw_xbar_alloc, one rr_arbiter
// (components.RoundRobin) for each of its arbiters: a grant arbiter per
// output over the inputs, an accept arbiter per input over the outputs,
// and a VL arbiter per input over its VLs.
type rtlXbarAlloc struct {
	grant, accept, vlSel []*components.RoundRobin
}

func newRTLXbarAlloc(ports, vls int) *rtlXbarAlloc {
	a := &rtlXbarAlloc{}
	for range ports {
		a.grant = append(a.grant, components.NewRoundRobin(ports))
		a.accept = append(a.accept, components.NewRoundRobin(ports))
		a.vlSel = append(a.vlSel, components.NewRoundRobin(vls))
	}
	return a
}

// round is one cycle of sw_xbar_alloc: heads[i][v] is input i's VL v's
// request (not counted when !ok), pick[o] output o's VL arbiter pick (-1:
// no pick, or the output is busy). It writes, per input, the output and
// input VL granted, or -1, and returns how many inputs were offered two
// outputs or more and how many grants had two input VLs to choose from.
func (a *rtlXbarAlloc) round(heads [][]allocHead, pick []int, out, inVL []int) (multiOffers, ties int) {
	ports := len(heads)
	// Requests: input i requests output o when a VL of it wants o on o's pick.
	cand := make([]components.PortSet, ports)
	for i, hs := range heads {
		for _, h := range hs {
			if h.ok && pick[h.out] == h.vl {
				cand[h.out].Set(i)
			}
		}
	}
	// Grant: every output's arbiter picks from its pointer.
	offer := make([]components.PortSet, ports)
	gnt := make([]int, ports)
	for o := range cand {
		if gnt[o] = a.grant[o].Pick(cand[o]); gnt[o] >= 0 {
			offer[gnt[o]].Set(o)
		}
	}
	// Accept, then the input VL; the pointers move at the edge, after
	// every arbiter has picked from the old ones.
	for i := range heads {
		out[i], inVL[i] = -1, -1
		if offer[i].Count() >= 2 {
			multiOffers++
		}
		o := a.accept[i].Pick(offer[i])
		if o < 0 {
			continue
		}
		var vlReq components.PortSet
		for v, h := range heads[i] {
			if h.ok && h.out == o && h.vl == pick[o] {
				vlReq.Set(v)
			}
		}
		if vlReq.Count() >= 2 {
			ties++
		}
		v := a.vlSel[i].Pick(vlReq)
		out[i], inVL[i] = o, v
		a.accept[i].Commit(o)
		a.grant[o].Commit(i)
		a.vlSel[i].Commit(v)
	}
	return multiOffers, ties
}

// modelAlloc is the switch model's allocation round over the same heads,
// as switchasic does it for fifo input units: collectCandidates takes each
// input's VLs in the order in.rr, in.rr+1, ... (mod 16) and keeps the first
// VL per (output, output VL); match gives each output's picked VL's
// candidates to the allocator; doGrant moves in.rr past the input VL
// granted.
type modelAlloc struct {
	alloc components.Allocator
	rr    []int // per input: in.rr
}

func (m *modelAlloc) round(cycle int64, heads [][]allocHead, pick []int, out, inVL []int) {
	ports := len(heads)
	// candInVL[(vl*ports+o)*ports+i]: input i's VL that is the candidate.
	candInVL := make(map[[3]int]int)
	req := make([]components.PortSet, ports)
	for i, hs := range heads {
		for k := range 16 {
			v := (m.rr[i] + k) & 15
			if v >= len(hs) || !hs[v].ok {
				continue
			}
			key := [3]int{hs[v].vl, hs[v].out, i}
			if _, seen := candInVL[key]; !seen {
				candInVL[key] = v
			}
		}
	}
	for i := range heads {
		for o := range ports {
			if _, ok := candInVL[[3]int{pick[o], o, i}]; ok && pick[o] >= 0 {
				req[i].Set(o)
			}
		}
	}
	if c, ok := m.alloc.(components.ClockedAllocator); ok {
		c.SetCycle(cycle)
	}
	m.alloc.Allocate(req, out)
	for i, o := range out {
		inVL[i] = -1
		if o >= 0 {
			inVL[i] = candInVL[[3]int{pick[o], o, i}]
			m.rr[i] = (inVL[i] + 1) & 15
		}
	}
}

// allocStats counts what compareWithRTLAllocator saw.
type allocStats struct {
	rounds, differ, grants, multiOffers, ties int
}

// compareWithRTLAllocator runs the model's round with the named allocator
// and rtlXbarAlloc side by side on random rounds of a radix-7 switch with
// vls VLs: each input VL holds a head now and then, for a random output on
// a random output VL (per-pair SL-to-VL tables can send two input VLs to
// one output VL), fitting its credits mostly; an output is busy now and
// then (no pick, as the model's busy output has no candidates); each
// output's pick is one of the output VLs its candidates want (what the VL
// arbiter picks from, whichever it picks). It counts the rounds whose
// grants differ, the grants, and the cases one request per input lacks.
func compareWithRTLAllocator(t *testing.T, vls int, name string, iterations int) allocStats {
	const ports = 7
	st := allocStats{rounds: 2000}
	alloc, err := components.NewAllocator(name, ports, ports, iterations)
	require.NoError(t, err)
	model := &modelAlloc{alloc: alloc, rr: make([]int, ports)}
	rtl := newRTLXbarAlloc(ports, vls)
	rng := rand.New(rand.NewPCG(1, uint64(vls)))
	heads := make([][]allocHead, ports)
	pick := make([]int, ports)
	got, gotVL, want, wantVL := make([]int, ports), make([]int, ports), make([]int, ports), make([]int, ports)
	for r := range st.rounds {
		busy := make([]bool, ports)
		for o := range busy {
			busy[o] = rng.IntN(5) == 0
		}
		wanted := make([]components.PortSet, ports) // per output: the output VLs candidates want
		for i := range heads {
			heads[i] = make([]allocHead, vls)
			for v := range heads[i] {
				if rng.IntN(4) == 0 { // an empty VL now and then
					continue
				}
				h := allocHead{ok: rng.IntN(8) > 0, out: rng.IntN(ports), vl: rng.IntN(vls)}
				if busy[h.out] {
					h.ok = false // the model looks at no head for a busy output
				}
				heads[i][v] = h
				if h.ok {
					wanted[h.out].Set(h.vl)
				}
			}
		}
		for o := range pick {
			pick[o] = -1
			if n := wanted[o].Count(); n > 0 {
				k := rng.IntN(n)
				for v := range wanted[o].All() {
					if k == 0 {
						pick[o] = v
						break
					}
					k--
				}
			}
		}
		model.round(int64(r), heads, pick, want, wantVL)
		mo, ties := rtl.round(heads, pick, got, gotVL)
		st.multiOffers += mo
		st.ties += ties
		for _, o := range got {
			if o >= 0 {
				st.grants++
			}
		}
		if !slices.Equal(want, got) || !slices.Equal(wantVL, gotVL) {
			st.differ++
		}
	}
	return st
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

// TestKeyCacheFromTheConfig: hca_key_check's MPT cache is the model's
// (hca.key_cache_entries, default 256); one the RTL does not build (more
// than 256 fully associative entries) is refused on one line.
func TestKeyCacheFromTheConfig(t *testing.T) {
	path := filepath.Join("..", "configs", "examples", "hol-blocking.yaml")
	for _, tc := range []struct {
		set  []string
		want int
	}{{nil, 256}, {[]string{"hca.key_cache_entries=16"}, 16}, {[]string{"hca.key_cache_entries=1"}, 1}} {
		d, err := LoadDesign(path, append([]string{fifo, "sweep={}"}, tc.set...))
		require.NoError(t, err)
		require.NoError(t, d.Validate())
		assert.Equal(t, tc.want, d.Params().KeyCache, "%v", tc.set)
	}
	d, err := LoadDesign(path, []string{fifo, "sweep={}", "hca.key_cache_entries=4096"})
	require.NoError(t, err)
	assert.EqualError(t, d.Validate(), "hca.key_cache_entries: 4096 is more than the RTL's MPT cache builds (1..256: fully associative, least recently used out, as the model's)")
}
