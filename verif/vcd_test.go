package verif

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// vcdDump is what a VCD file says: timescale, and per full signal name
// ("Bench.Src.Port_0.busy") its value changes in time order.
type vcdDump struct {
	timescale string
	changes   map[string][]vcdPoint
}

type vcdPoint struct {
	t ib.PS
	v uint64
}

// vcdX is how parseVCD gives an x (unknown) value.
const vcdX = ^uint64(0)

// parseVCD reads the subset of VCD that GTKWave's fst2vcd prints: nested
// scopes, wire vars, #time, scalar and b-vector changes.
func parseVCD(t *testing.T, text string) vcdDump {
	t.Helper()
	d := vcdDump{changes: map[string][]vcdPoint{}}
	names := map[string]string{}
	var scope []string
	var now ib.PS
	toks := strings.Fields(text)
	for i := 0; i < len(toks); i++ {
		switch tok := toks[i]; {
		case tok == "$timescale":
			d.timescale = toks[i+1]
		case tok == "$scope":
			scope = append(scope, toks[i+2])
		case tok == "$upscope":
			scope = scope[:len(scope)-1]
		case tok == "$var":
			names[toks[i+3]] = strings.Join(append(append([]string{}, scope...), toks[i+4]), ".")
			i += 4
		case strings.HasPrefix(tok, "#"):
			n, err := strconv.ParseInt(tok[1:], 10, 64)
			require.NoError(t, err)
			now = ib.PS(n)
		case strings.HasPrefix(tok, "b"):
			v := vcdX
			if tok != "bx" {
				var err error
				v, err = strconv.ParseUint(tok[1:], 2, 64)
				require.NoError(t, err)
			}
			name := names[toks[i+1]]
			d.changes[name] = append(d.changes[name], vcdPoint{now, v})
			i++
		case (tok[0] == '0' || tok[0] == '1') && names[tok[1:]] != "":
			d.changes[names[tok[1:]]] = append(d.changes[names[tok[1:]]], vcdPoint{now, uint64(tok[0] - '0')})
		case tok[0] == 'x' && names[tok[1:]] != "":
			d.changes[names[tok[1:]]] = append(d.changes[names[tok[1:]]], vcdPoint{now, vcdX})
		}
	}
	return d
}

func TestVCDWriterCoalescesAndNests(t *testing.T) {
	var buf bytes.Buffer
	w := NewVCDWriter(&buf)
	busy := w.Declare("A.Port[1]", "busy", 1)
	cr := w.Declare("A.Port[1]", "credits_vl0", 16)
	other := w.Declare("B", "x", 4)
	w.Begin("unit")
	w.Change(10, busy, 1)
	w.Change(10, busy, 0) // same time: last value wins, and it equals the old value: nothing written
	w.Change(10, cr, 5)
	w.Change(20, other, 0x1f) // masked to 4 bits: 0xf
	require.NoError(t, w.Close(30))
	d := parseVCD(t, buf.String())
	assert.Equal(t, "1ps", d.timescale)
	assert.Equal(t, []vcdPoint{{0, 0}}, d.changes["A.Port_1.busy"])
	assert.Equal(t, []vcdPoint{{0, 0}, {10, 5}}, d.changes["A.Port_1.credits_vl0"])
	assert.Equal(t, []vcdPoint{{0, 0}, {20, 15}}, d.changes["B.x"])
	assert.True(t, strings.HasSuffix(buf.String(), "#30\n"))
	assert.Panics(t, func() { w.Change(5, busy, 1) }, "time going backwards is a bug")
}

func TestVCDIDsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for n := 0; n < 94*94+200; n++ {
		id := vcdID(n)
		require.False(t, seen[id], "id %q repeats at %d", id, n)
		seen[id] = true
		for _, c := range id {
			require.True(t, c >= '!' && c <= '~')
		}
	}
}

// TestVCDReadByGTKWave runs the link bench with a VCD recorder, converts
// the file with GTKWave's vcd2fst (its VCD reader) and back with fst2vcd,
// and checks the waveforms against the run's trace.
func TestVCDReadByGTKWave(t *testing.T) {
	vcd2fst, err1 := exec.LookPath("vcd2fst")
	fst2vcd, err2 := exec.LookPath("fst2vcd")
	if err1 != nil || err2 != nil {
		// Same switch as the rtl package's EDA tools: CI sets it and
		// installs the Debian package gtkwave, so there a missing reader fails.
		if os.Getenv("HCASIM_REQUIRE_EDA") == "1" {
			t.Fatal("vcd2fst/fst2vcd not found: .ci/run installs the Debian package gtkwave")
		}
		t.Skip("GTKWave tools not installed (apt-get install gtkwave)")
	}
	cfg := &benchConfig{Timing: qdr4x(), BufferBlocks: 4, HoldPS: 100 * ib.Nanosecond}
	for psn := uint32(0); psn < 3; psn++ {
		cfg.Packets = append(cfg.Packets, writePacket(psn, 64))
	}
	b := newBench(cfg)
	vr := NewVCDRecorder(Filter{})
	var trace bytes.Buffer
	rec := NewRecorder(&trace, testHeader, Filter{})
	AttachHook(vr, b.hookables()...)
	AttachHook(rec, b.hookables()...)
	require.NoError(t, b.s.Run())
	require.NoError(t, rec.Flush())

	dir := t.TempDir()
	vcdPath := filepath.Join(dir, "run.vcd")
	f, err := os.Create(vcdPath)
	require.NoError(t, err)
	require.NoError(t, vr.WriteTo(f, "bench", b.s.Now()))
	require.NoError(t, f.Close())
	fstPath := filepath.Join(dir, "run.fst")
	out, err := exec.Command(vcd2fst, vcdPath, fstPath).CombinedOutput()
	require.NoError(t, err, "vcd2fst: %s", out)
	back, err := exec.Command(fst2vcd, fstPath).Output()
	require.NoError(t, err)
	d := parseVCD(t, string(back))
	assert.Equal(t, "1ps", d.timescale)

	// Expected waveforms, from the trace of the same run: busy rises at
	// each tx_start and falls at each tx_end; credits follow avail.
	tr, err := ReadTrace(&trace)
	require.NoError(t, err)
	// The source starts with the sink's whole buffer as credit.
	busy := []vcdPoint{{0, 0}}
	credits := []vcdPoint{{0, uint64(cfg.BufferBlocks)}}
	onWire := 0
	for _, e := range tr.Events {
		if e.Path != "Bench.Src.Port[0]" {
			continue
		}
		switch e.Kind {
		case components.TraceTxStart:
			onWire++
		case components.TraceTxEnd:
			onWire--
		}
		if e.Kind == components.TraceTxStart || e.Kind == components.TraceTxEnd {
			v := uint64(0)
			if onWire > 0 {
				v = 1
			}
			busy = appendChange(busy, e.Time, v)
		}
		if a, ok := e.Int("avail"); ok {
			credits = appendChange(credits, e.Time, uint64(a))
		}
	}
	// Hand check: a 106-byte packet takes 106 × 8 / 32 Gb/s = 26.5 ns on a
	// QDR 4x wire and 2 of the sink's 4 credits, so packets 1 and 2 go back
	// to back (the wire is busy from 0 to 53 ns without a dip: tx_end and
	// the next tx_start share 26.5 ns) and packet 3 waits for credit.
	require.GreaterOrEqual(t, len(busy), 2)
	assert.Equal(t, []vcdPoint{{0, 1}, {53000, 0}}, busy[:2])
	// Credits follow the port's credit_update events; once the sink has
	// released everything the source again has the sink's whole buffer.
	require.NotEmpty(t, credits)
	assert.Equal(t, uint64(cfg.BufferBlocks), credits[len(credits)-1].v)
	assert.Equal(t, busy, d.changes["Bench.Src.Port_0.busy"])
	assert.Equal(t, credits, d.changes["Bench.Src.Port_0.credits_vl0"])
	assert.NotEmpty(t, d.changes["Bench.Dst.Port_0.occ_vl0"])
}

// appendChange adds (t, v) as a VCD writer would: a change at the same time
// replaces the previous one, and a value equal to the last is no change.
func appendChange(ps []vcdPoint, t ib.PS, v uint64) []vcdPoint {
	if n := len(ps); n > 0 && ps[n-1].t == t {
		ps = ps[:n-1]
	}
	if n := len(ps); n > 0 && ps[n-1].v == v {
		return ps
	}
	return append(ps, vcdPoint{t, v})
}

func TestVCDRecorderSignals(t *testing.T) {
	r := NewVCDRecorder(Filter{Paths: []string{"S.*"}})
	obs := func(tm ib.PS, path string, kind components.TraceKind, fs ...components.TraceField) {
		r.Observe(&components.TraceEvent{Time: tm, Path: path, Kind: kind, Fields: fs})
	}
	obs(10, "S.Port[2]", components.TraceArbGrant, fI("vl", 3), fI("in", 1))
	obs(20, "S.Port[2]", components.TraceArbGrant, fI("vl", 3), fI("in", 0)) // same VL again: the pulse shows it
	obs(30, "S.Hca", components.TraceStage, fS("stage", "wqefetch"), fI("valid", 1), fI("ready", 0))
	obs(40, "S.Hca", components.TraceStage, fS("stage", "wqefetch"), fI("valid", 0), fI("ready", 1))
	obs(50, "S.Port[1]", components.TraceBufEnq, fI("seq", 1), fI("vl", 2), fI("occ", 5), fI("cap", 8))
	obs(60, "Other.Port[0]", components.TraceTxStart, fI("vl", 0)) // not selected by the path filter
	var buf bytes.Buffer
	require.NoError(t, r.WriteTo(&buf, "unit", 100))
	d := parseVCD(t, buf.String())
	assert.Equal(t, []vcdPoint{{0, vcdX}, {10, 3}}, d.changes["S.Port_2.grant"], "no grant before the first")
	assert.Equal(t, []vcdPoint{{0, 0}, {10, 1}, {20, 0}}, d.changes["S.Port_2.grant_pulse"])
	assert.Equal(t, []vcdPoint{{0, 0}, {30, 1}, {40, 0}}, d.changes["S.Hca.wqefetch_valid"])
	assert.Equal(t, []vcdPoint{{0, 1}, {30, 0}, {40, 1}}, d.changes["S.Hca.wqefetch_ready"], "an idle stage is ready")
	assert.Equal(t, []vcdPoint{{0, 0}, {50, 5}}, d.changes["S.Port_1.occ_vl2"])
	assert.NotContains(t, buf.String(), "Other")
}

// TestVCDWriterEndsAtEnd: a Change that writes nothing still moves the
// writer's time; Close's end is compared with the last timestamp written.
func TestVCDWriterEndsAtEnd(t *testing.T) {
	var buf bytes.Buffer
	w := NewVCDWriter(&buf)
	s := w.Declare("A", "busy", 1)
	w.Begin("unit")
	w.Change(10, s, 1)
	w.Change(20, s, 1) // no change: nothing written at 20
	require.NoError(t, w.Close(20))
	assert.True(t, strings.HasSuffix(buf.String(), "#10\n1!\n#20\n"), "got %q", buf.String())
}

// TestVCDStartValues: each signal starts at #0 from the model's state at
// time 0 where it is known, else x.
func TestVCDStartValues(t *testing.T) {
	r := NewVCDRecorder(Filter{})
	obs := func(tm ib.PS, path string, kind components.TraceKind, fs ...components.TraceField) {
		r.Observe(&components.TraceEvent{Time: tm, Path: path, Kind: kind, Fields: fs})
	}
	// A port's first tx_start: 512 − 65 blocks left of the peer's 512,
	// so it held all 512 before.
	obs(2300, "P.Port[1]", components.TraceTxStart, fI("seq", 1), fI("vl", 0), fI("avail", 447), fI("cap", 512))
	obs(2400, "P.Port[1]", components.TraceTxEnd, fI("seq", 1), fI("vl", 0))
	// A credit_update first: its cap is the one the update brought (a
	// shared pool changes it), so the credits before it are not known.
	obs(500, "P.Port[2]", components.TraceCreditUpdate, fI("vl", 1), fI("avail", 600), fI("cap", 600))
	// Announced out of time order: the earlier credit_update decides.
	obs(900, "P.Port[3]", components.TraceTxStart, fI("seq", 2), fI("vl", 0), fI("avail", 10), fI("cap", 12))
	obs(100, "P.Port[3]", components.TraceCreditUpdate, fI("vl", 0), fI("avail", 14), fI("cap", 14))
	obs(700, "P.Port[4]", components.TraceRxHead, fI("seq", 3), fI("vl", 0), fI("occ", 2), fI("cap", 8))
	obs(800, "P.Hca", components.TraceStage, fS("stage", "dma"), fI("valid", 1), fI("ready", 1))
	obs(900, "P.Sw.Port[1]", components.TraceArbGrant, fI("vl", 0), fI("in", 2))
	var buf bytes.Buffer
	require.NoError(t, r.WriteTo(&buf, "unit", 3000))
	d := parseVCD(t, buf.String())
	for _, c := range []struct {
		signal string
		want   []vcdPoint
	}{
		{"P.Port_1.credits_vl0", []vcdPoint{{0, 512}, {2300, 447}}},
		{"P.Port_1.busy", []vcdPoint{{0, 0}, {2300, 1}, {2400, 0}}},
		{"P.Port_2.credits_vl1", []vcdPoint{{0, vcdX}, {500, 600}}},
		{"P.Port_3.credits_vl0", []vcdPoint{{0, vcdX}, {100, 14}, {900, 10}}},
		{"P.Port_4.occ_vl0", []vcdPoint{{0, 0}, {700, 2}}},
		{"P.Hca.dma_valid", []vcdPoint{{0, 0}, {800, 1}}},
		{"P.Hca.dma_ready", []vcdPoint{{0, 1}}},
		{"P.Sw.Port_1.grant", []vcdPoint{{0, vcdX}, {900, 0}}},
		{"P.Sw.Port_1.grant_pulse", []vcdPoint{{0, 0}, {900, 1}}},
	} {
		assert.Equal(t, c.want, d.changes[c.signal], c.signal)
	}
}
