package verif

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// hcasim writes VCD itself. No Go VCD library was found that is kept up
// and writes files (the one maintained Go VCD package found is a parser
// built on participle and cgo SQLite); the subset needed here — nested
// scopes, wire vectors, a picosecond timescale — is IEEE 1364-2005 §18.2
// and fits in this file. Files are checked with GTKWave's reader in tests.

// VCDSignal is one declared variable of a VCDWriter.
type VCDSignal struct {
	Scope string // dotted component path, e.g. "Fabric.Leaf[0].Port[3]"
	Name  string // variable name inside the scope, e.g. "credits_vl0"
	Width int    // bits, 1..64
	id    string
	index int
	// init is the value before the first change ($dumpvars), unless
	// unknown: then it starts as x.
	init    uint64
	unknown bool
}

// VCDWriter writes a Value Change Dump with a 1 ps timescale. Declare every
// signal (and give its initial value with SetInitial or SetUnknown), then
// call Begin, then Change in non-decreasing time, then Close.
// Changes at one time are coalesced: the last value at a time is written, and
// only if it differs from the signal's previous value.
type VCDWriter struct {
	w       *bufio.Writer
	signals []*VCDSignal
	begun   bool
	now     ib.PS
	written []uint64 // last value written per signal
	xNow    []bool   // the last value written per signal is x
	// stamp is the last timestamp written (#0 with the dump), which Close
	// compares its end with: now moves with every Change, even one that
	// writes nothing.
	stamp   ib.PS
	pending []uint64 // value at the current time per signal
	dirty   []int    // signals changed at the current time
	isDirty []bool
	// needDump: the $dumpvars block is still to be written (at the first
	// flush, so that values set at time 0 are the initial values).
	needDump bool
	err      error
}

// NewVCDWriter returns a writer to w.
func NewVCDWriter(w io.Writer) *VCDWriter { return &VCDWriter{w: bufio.NewWriter(w)} }

// Declare adds a signal; all signals are declared before Begin.
func (v *VCDWriter) Declare(scope, name string, width int) *VCDSignal {
	if v.begun {
		panic(fmt.Sprintf("verif: VCD signal %s.%s declared after Begin", scope, name))
	}
	if width < 1 || width > 64 {
		panic(fmt.Sprintf("verif: VCD signal %s.%s of width %d (allowed 1..64)", scope, name, width))
	}
	s := &VCDSignal{Scope: scope, Name: name, Width: width, id: vcdID(len(v.signals)), index: len(v.signals)}
	v.signals = append(v.signals, s)
	return s
}

// SetInitial gives s the value it holds before its first change (the
// default is 0).
func (v *VCDWriter) SetInitial(s *VCDSignal, value uint64) {
	v.checkUnbegun(s)
	if s.Width < 64 {
		value &= 1<<s.Width - 1
	}
	s.init, s.unknown = value, false
}

// SetUnknown makes s start as x: its value before its first change is not
// known.
func (v *VCDWriter) SetUnknown(s *VCDSignal) {
	v.checkUnbegun(s)
	s.unknown = true
}

func (v *VCDWriter) checkUnbegun(s *VCDSignal) {
	if v.begun {
		panic(fmt.Sprintf("verif: VCD signal %s.%s given an initial value after Begin", s.Scope, s.Name))
	}
}

// vcdID returns the n-th identifier code: base 94 over the printable ASCII
// characters '!'..'~'.
func vcdID(n int) string {
	var b []byte
	for {
		b = append(b, byte('!'+n%94))
		n /= 94
		if n == 0 {
			return string(b)
		}
		n--
	}
}

// vcdName makes a component-path part safe as a VCD identifier: '[' and ']'
// would read as a bit range, so "Port[3]" becomes "Port_3".
func vcdName(s string) string {
	r := strings.NewReplacer("[", "_", "]", "", " ", "_")
	return r.Replace(s)
}

type vcdScope struct {
	name     string
	children []*vcdScope
	byName   map[string]*vcdScope
	vars     []*VCDSignal
}

// Begin writes the header and the declarations (scopes nested by the dots
// of each signal's Scope, in declaration order). The initial values follow
// with the first time step: the value a signal is given at time 0, else its
// initial value (SetInitial, SetUnknown; 0 by default).
func (v *VCDWriter) Begin(comment string) {
	if v.begun {
		panic("verif: VCD Begin called twice")
	}
	v.begun = true
	root := &vcdScope{byName: map[string]*vcdScope{}}
	for _, s := range v.signals {
		node := root
		for _, part := range strings.Split(s.Scope, ".") {
			child, ok := node.byName[part]
			if !ok {
				child = &vcdScope{name: part, byName: map[string]*vcdScope{}}
				node.byName[part] = child
				node.children = append(node.children, child)
			}
			node = child
		}
		node.vars = append(node.vars, s)
	}
	fmt.Fprintf(v.w, "$comment %s $end\n$timescale 1ps $end\n", comment)
	var walk func(n *vcdScope)
	walk = func(n *vcdScope) {
		fmt.Fprintf(v.w, "$scope module %s $end\n", vcdName(n.name))
		for _, s := range n.vars {
			fmt.Fprintf(v.w, "$var wire %d %s %s $end\n", s.Width, s.id, vcdName(s.Name))
		}
		for _, c := range n.children {
			walk(c)
		}
		v.w.WriteString("$upscope $end\n")
	}
	for _, c := range root.children {
		walk(c)
	}
	v.w.WriteString("$enddefinitions $end\n")
	n := len(v.signals)
	v.written = make([]uint64, n)
	v.xNow = make([]bool, n)
	v.pending = make([]uint64, n)
	v.isDirty = make([]bool, n)
	v.needDump = true
}

// Change sets s to value at time t.
func (v *VCDWriter) Change(t ib.PS, s *VCDSignal, value uint64) {
	if !v.begun {
		panic("verif: VCD Change before Begin")
	}
	if t < v.now {
		panic(fmt.Sprintf("verif: VCD change of %s.%s at %d ps, before %d ps", s.Scope, s.Name, t, v.now))
	}
	if t > v.now {
		v.flush()
		v.now = t
	}
	if s.Width < 64 {
		value &= 1<<s.Width - 1
	}
	v.pending[s.index] = value
	if !v.isDirty[s.index] {
		v.isDirty[s.index] = true
		v.dirty = append(v.dirty, s.index)
	}
}

// flush writes the changes of the current time that differ from what was
// last written, in signal order.
func (v *VCDWriter) flush() {
	sort.Ints(v.dirty)
	if v.needDump {
		// Initial values: the value set at time 0, else the declared
		// initial value or x, so a signal has one point at #0 and not two.
		v.needDump = false
		v.w.WriteString("#0\n$dumpvars\n")
		for i, s := range v.signals {
			switch {
			case v.now == 0 && v.isDirty[i]:
				v.writeValue(s, v.pending[i])
			case s.unknown:
				v.writeX(s)
			default:
				v.writeValue(s, s.init)
			}
		}
		v.w.WriteString("$end\n")
		if v.now == 0 {
			for _, i := range v.dirty {
				v.isDirty[i] = false
			}
			v.dirty = v.dirty[:0]
			return
		}
	}
	stamped := false
	for _, i := range v.dirty {
		v.isDirty[i] = false
		if v.pending[i] == v.written[i] && !v.xNow[i] {
			continue
		}
		if !stamped {
			fmt.Fprintf(v.w, "#%d\n", v.now)
			v.stamp = v.now
			stamped = true
		}
		v.writeValue(v.signals[i], v.pending[i])
	}
	v.dirty = v.dirty[:0]
}

func (v *VCDWriter) writeValue(s *VCDSignal, value uint64) {
	v.written[s.index], v.xNow[s.index] = value, false
	if s.Width == 1 {
		fmt.Fprintf(v.w, "%d%s\n", value&1, s.id)
		return
	}
	fmt.Fprintf(v.w, "b%s %s\n", strconv.FormatUint(value, 2), s.id)
}

func (v *VCDWriter) writeX(s *VCDSignal) {
	v.xNow[s.index] = true
	if s.Width == 1 {
		fmt.Fprintf(v.w, "x%s\n", s.id)
		return
	}
	fmt.Fprintf(v.w, "bx %s\n", s.id)
}

// Close writes the last changes and flushes; end is the simulation's end
// time, written as a final timestamp so viewers show the whole run.
func (v *VCDWriter) Close(end ib.PS) error {
	if !v.begun {
		v.Begin("hcasim")
	}
	if end < v.now {
		end = v.now
	}
	v.flush()
	if v.needDump { // the dump at time 0 had nothing dirty
		v.flush()
	}
	if end > v.stamp {
		fmt.Fprintf(v.w, "#%d\n", end)
	}
	if err := v.w.Flush(); err != nil {
		return err
	}
	return v.err
}

// VCDRecorder is a sim.Hook that turns trace events into waveforms, each
// starting at #0 from the model's state at time 0 where that is known
// exactly, else from x:
//
//   - <path>.credits_vl<N>: the avail field of any event with vl and avail
//     (transmitter credits, 64-byte blocks). A port starts with the peer
//     buffer's whole size: the cap of its first tx_start on the VL, when no
//     credit_update came before it (an update may change cap, with a
//     shared pool); else x;
//   - <path>.occ_vl<N>: the occ field of any event with vl and occ (buffer
//     occupancy, blocks); buffers start empty, 0;
//   - <path>.busy: 1 from tx_start to tx_end (the link direction carries a
//     data packet); an idle wire, 0;
//   - <path>.grant: the vl (or in) field of the last arb_grant, x before the
//     first; <path>.grant_pulse toggles on each grant, from 0, so
//     back-to-back grants of the same VL stay visible;
//   - <path>.<stage>_valid, <path>.<stage>_ready: the stage kind's fields;
//     an idle stage holds nothing and is ready, 0 and 1.
//
// Signals appear as the run discovers them; the file is written at Close,
// header first, so only the changes are held in memory. Limit a large run
// with the path filter.
type VCDRecorder struct {
	paths   pathSelector
	signals map[string]int // "scope\x00name" → index into decl
	decl    []vcdDecl
	changes []vcdChange
	pulse   map[string]uint64
	onWire  map[string]int // packets between tx_start and tx_end, per path
}

type vcdDecl struct {
	scope, name string
	width       int
	init        vcdStart // from the earliest change (events may come out of time order)
	first       ib.PS    // that change's time
}

// vcdStart is a signal's value before its first change.
type vcdStart struct {
	value   uint64
	unknown bool
}

var vcdUnknown = vcdStart{unknown: true}

type vcdChange struct {
	t      ib.PS
	signal int
	value  uint64
}

// NewVCDRecorder returns a recorder of the components selected by f's path
// globs. f.Kinds is ignored: a signal needs every kind it comes from (busy:
// tx_start and tx_end; credits: tx_start and credit_update), and the CLI
// refuses --trace-kind without --trace.
func NewVCDRecorder(f Filter) *VCDRecorder {
	return &VCDRecorder{paths: newPathSelector(f.Paths), signals: map[string]int{}, pulse: map[string]uint64{}, onWire: map[string]int{}}
}

// Func implements sim.Hook.
func (r *VCDRecorder) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace {
		return
	}
	ev, ok := ctx.Item.(*components.TraceEvent)
	if !ok {
		panic(fmt.Sprintf("verif: HookPosTrace item is %T, want *components.TraceEvent", ctx.Item))
	}
	r.Observe(ev)
}

// Observe records the signal changes ev implies.
func (r *VCDRecorder) Observe(ev *components.TraceEvent) {
	if !r.paths.selected(ev.Path) {
		return
	}
	vl, hasVL := ev.Int("vl")
	if hasVL {
		suffix := "_vl" + strconv.FormatInt(vl, 10)
		if a, ok := ev.Int("avail"); ok {
			// Before its first event the port held the credits link-up
			// gave it, the peer buffer's size, which a tx_start's cap still
			// is; a credit_update's cap is the one it brought.
			init := vcdUnknown
			if c, ok := ev.Int("cap"); ok && ev.Kind == components.TraceTxStart {
				init = vcdStart{value: uint64(c)}
			}
			r.set(ev.Time, ev.Path, "credits"+suffix, 16, init, uint64(a))
		}
		if o, ok := ev.Int("occ"); ok {
			r.set(ev.Time, ev.Path, "occ"+suffix, 16, vcdStart{}, uint64(o))
		}
	}
	switch ev.Kind {
	case components.TraceTxStart, components.TraceTxEnd:
		// Count packets on the wire rather than toggling, so a tx_end and
		// the next tx_start at the same picosecond give "busy" in either
		// order (the engine's tie order is not the model's behaviour).
		if ev.Kind == components.TraceTxStart {
			r.onWire[ev.Path]++
		} else if r.onWire[ev.Path] > 0 {
			r.onWire[ev.Path]--
		}
		busy := uint64(0)
		if r.onWire[ev.Path] > 0 {
			busy = 1
		}
		r.set(ev.Time, ev.Path, "busy", 1, vcdStart{}, busy)
	case components.TraceArbGrant:
		g, ok := ev.Int("vl")
		if !ok {
			g, _ = ev.Int("in")
		}
		r.set(ev.Time, ev.Path, "grant", 8, vcdUnknown, uint64(g))
		r.pulse[ev.Path] ^= 1
		r.set(ev.Time, ev.Path, "grant_pulse", 1, vcdStart{}, r.pulse[ev.Path])
	case components.TraceStage:
		st, ok := ev.Str("stage")
		if !ok {
			return
		}
		if v, ok := ev.Int("valid"); ok {
			r.set(ev.Time, ev.Path, st+"_valid", 1, vcdStart{}, uint64(v))
		}
		if v, ok := ev.Int("ready"); ok {
			r.set(ev.Time, ev.Path, st+"_ready", 1, vcdStart{value: 1}, uint64(v))
		}
	}
}

// set records name's change to value at t; init, its value before its
// first change, counts only from the earliest change (in time, then in
// announcement order, as WriteTo sorts them).
func (r *VCDRecorder) set(t ib.PS, scope, name string, width int, init vcdStart, value uint64) {
	key := scope + "\x00" + name
	i, ok := r.signals[key]
	if !ok {
		i = len(r.decl)
		r.signals[key] = i
		r.decl = append(r.decl, vcdDecl{scope, name, width, init, t})
	} else if t < r.decl[i].first {
		r.decl[i].init, r.decl[i].first = init, t
	}
	r.changes = append(r.changes, vcdChange{t, i, value})
}

// WriteTo writes the VCD: signals declared sorted by scope and name (so the
// file does not depend on discovery order), changes in time order, and a
// last timestamp at end.
func (r *VCDRecorder) WriteTo(w io.Writer, comment string, end ib.PS) error {
	order := make([]int, len(r.decl))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		da, db := r.decl[order[a]], r.decl[order[b]]
		if da.scope != db.scope {
			return da.scope < db.scope
		}
		return da.name < db.name
	})
	vw := NewVCDWriter(w)
	sigs := make([]*VCDSignal, len(r.decl))
	for _, i := range order {
		d := r.decl[i]
		sigs[i] = vw.Declare(d.scope, d.name, d.width)
		if d.init.unknown {
			vw.SetUnknown(sigs[i])
		} else {
			vw.SetInitial(sigs[i], d.init.value)
		}
	}
	vw.Begin(comment)
	changes := r.changes
	sort.SliceStable(changes, func(a, b int) bool { return changes[a].t < changes[b].t })
	for _, c := range changes {
		vw.Change(c.t, sigs[c.signal], c.value)
	}
	return vw.Close(end)
}
