package rtl

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/switchasic"
)

// ---- sw_route_lookup <-> switchasic.LFT ----

// lftDUT drives sw_route_lookup with subnet-manager writes and head-packet
// lookups and expects each lookup to be the simulator's own table's:
// switchasic.LFT.Lookup, with the switch's rule that no port, or a port
// outside the radix, is no route (switchasic.Switch.PacketArrived drops the
// packet as no_route). Two things are the block's and not the table's, and
// the adapter plays them: the clear after reset (top+1 cycles in which
// lft_ready is 0, nothing is written and every lookup is no route), and the
// block's size: a write above LFT_TOP is not stored (LFT.Set would grow the
// table), so the model's table only ever covers DLIDs 0..top.
type lftDUT struct {
	ports, portW, top int
	model             *switchasic.LFT
	clearLeft         int // cycles of the clear still to come
	c                 int
	pWrite            float64
	written           []uint16 // DLIDs written so far, for reads that hit them
	lastLookup        int      // the model's port for the last cycle's read, before its edge
}

func newLFTDUT(ports, top int) *lftDUT {
	return &lftDUT{ports: ports, portW: idxWidth(ports), top: top, model: switchasic.NewLFT(top), clearLeft: top + 1}
}

// cycles: the clear, then cosimCycles of writes and lookups.
func (d *lftDUT) cycles() int { return d.top + 1 + cosimCycles }

func (d *lftDUT) module() string  { return "sw_route_lookup" }
func (d *lftDUT) files() []string { return []string{"sw_route_lookup.v"} }
func (d *lftDUT) params() []Param {
	return []Param{{"PORTS", d.ports}, {"PORT_W", d.portW}, {"LFT_TOP", d.top}}
}
func (d *lftDUT) inputs() []Signal {
	return []Signal{
		{Name: "dlid", Width: 16}, {Name: "lft_we", Width: 1}, {Name: "lft_dlid", Width: 16},
		{Name: "lft_valid", Width: 1}, {Name: "lft_port", Width: d.portW},
	}
}
func (d *lftDUT) outputs() []Signal {
	// out_port is defined (0) without a route, so it is compared always.
	return []Signal{{Name: "out_valid", Width: 1}, {Name: "out_port", Width: d.portW}, {Name: "lft_ready", Width: 1}}
}

// dlid draws a DLID that lands on the table's edges often: 0, 1, the top
// and one past it, the unicast/multicast boundary, the permissive LID, a
// DLID above the top whose low address bits name a stored entry (a lookup
// that ignored the range would read it), one written before, or any.
func (d *lftDUT) dlid(r *rand.Rand) uint16 {
	aw := idxWidth(d.top + 1)
	switch r.IntN(12) {
	case 0:
		return []uint16{0, 1, uint16(d.top - 1), uint16(d.top), uint16(d.top + 1), 0xBFFF, 0xC000, 0xFFFE, 0xFFFF}[r.IntN(9)]
	case 1:
		if aw < 16 {
			return uint16(r.IntN(d.top+1) | 1<<aw<<r.IntN(16-aw))
		}
	case 2:
		return uint16(r.IntN(1 << 16))
	case 3, 4, 5, 6:
		if len(d.written) > 0 {
			return d.written[r.IntN(len(d.written))]
		}
	}
	return uint16(r.IntN(d.top + 1))
}

func (d *lftDUT) cycle(r *rand.Rand, in, out []Value) {
	p := phaseProb(r, d.c, &d.pWrite)
	d.c++
	we := r.Float64() < p
	wdlid := d.dlid(r)
	valid := r.IntN(8) > 0
	port := r.IntN(1 << d.portW) // ports outside the radix too, when PORTS < 2^PORT_W
	rdlid := d.dlid(r)
	if we && r.IntN(3) == 0 {
		rdlid = wdlid // read the entry written in the same cycle
	}
	in[0], in[1], in[2], in[3], in[4] = U(uint64(rdlid)), b2v(we), U(uint64(wdlid)), b2v(valid), U(uint64(port))

	// The outputs of this cycle: the table at its start.
	clearing := d.clearLeft > 0
	o := d.model.Lookup(rdlid)
	d.lastLookup = o
	route := !clearing && o != switchasic.NoPort && o < d.ports
	out[0], out[1], out[2] = b2v(route), U(0), b2v(!clearing)
	if route {
		out[1] = U(uint64(o))
	}

	// The rising edge.
	if clearing {
		d.clearLeft--
		return
	}
	if we && int(wdlid) <= d.top {
		if valid {
			d.model.Set(wdlid, port)
		} else {
			d.model.Set(wdlid, switchasic.NoPort)
		}
		if len(d.written) < 64 {
			d.written = append(d.written, wdlid)
		} else {
			d.written[r.IntN(64)] = wdlid
		}
	}
}

// TestLFTStimulusCoversTheEdges: the co-simulation's lookups hit every
// case many times per seed: a route, no route for a DLID never written,
// no route removed by a write, a port outside the radix (where the radix
// leaves room), a DLID past the top, and a read of the entry written in
// the same cycle; so a block that got one of them wrong could not match by
// luck.
func TestLFTStimulusCoversTheEdges(t *testing.T) {
	for _, size := range [][2]int{{7, 64}, {36, lftTop}} {
		for _, seed := range cosimSeeds {
			lftCoverage(t, size[0], size[1], seed)
		}
	}
}

// lftCoverage counts one seed's lookups after the clear by kind.
func lftCoverage(t *testing.T, ports, top int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x7e57))
	d := newLFTDUT(ports, top)
	in := make([]Value, len(d.inputs()))
	out := make([]Value, len(d.outputs()))
	ever := map[uint16]bool{}
	seen := map[string]int{}
	for range d.cycles() {
		ready := d.clearLeft == 0
		d.cycle(r, in, out)
		if !ready {
			continue
		}
		dl := uint16(in[0][0])
		o := d.lastLookup
		switch {
		case int(dl) > d.top:
			seen["past top"]++
		case !ever[dl]:
			seen["never written"]++
		case o == switchasic.NoPort && ever[dl]:
			seen["removed"]++
		case o >= d.ports:
			seen["outside radix"]++
		default:
			seen["route"]++
		}
		if in[1][0] == 1 && in[2][0] == in[0][0] {
			seen["same-cycle write"]++
		}
		if in[1][0] == 1 && int(in[2][0]) <= d.top {
			ever[uint16(in[2][0])] = true
		}
	}
	for _, k := range []string{"route", "never written", "removed", "outside radix", "past top", "same-cycle write"} {
		assert.GreaterOrEqual(t, seen[k], 10, "radix %d top %d seed %d: %s", ports, top, seed, k)
	}
}
