package rtl

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hcasim/hcasim/credit"
)

// ---- fc_scheduler <-> the link port's flow-control schedule ----

// fcSchedDUT is the schedule by which the simulator's link port sends
// flow-control packets (link/port.go), counted in cycles of the port's
// clock instead of picoseconds, cycle k being time k:
//
//   - requestFC: a change of the VL's advertised FCCL owes a packet, sent
//     at once if the VL never sent one or its last one left at least
//     MIN_CYCLES ago, else when that interval has passed (evFCDeferred);
//   - evFCRefresh: at times R, 2R, … (R = REFRESH_CYCLES) every VL owes
//     one, whatever its last one's age;
//   - sendFC: the lowest owing VL goes, and sending clears what it owed
//     (fcOwed = false: the packet carries the FCCL current then).
//
// The port's wire is the link's: fc_ready says whether it takes a packet
// this cycle (the model's "if the wire is idle"; a busy wire holds the
// packet, as evTxDone does). FCCL changes come from a plausible receive
// side (a credit.Receiver taking and releasing packets, now and then a
// jump as when ABR syncs to a lost packet's FCTBS), in phases from quiet
// to every cycle, so that both the minimum interval and the refresh
// decide.
type fcSchedDUT struct {
	vls, refresh, minGap int

	rx    []credit.Receiver
	held  [][]int
	pend  []bool
	sent  []bool
	last  []uint16
	since []int
	c     int

	pChange, pReady float64
	// coverage
	refreshSends, deferred, changeSends, firstSends, stalled int
}

func newFCSchedDUT(vls, refresh, minGap int) *fcSchedDUT {
	d := &fcSchedDUT{vls: vls, refresh: refresh, minGap: minGap}
	d.rx = make([]credit.Receiver, vls)
	for v := range d.rx {
		d.rx[v] = credit.NewReceiver(200)
	}
	d.held = make([][]int, vls)
	d.pend, d.sent = make([]bool, vls), make([]bool, vls)
	d.last, d.since = make([]uint16, vls), make([]int, vls)
	return d
}

func (d *fcSchedDUT) module() string  { return "fc_scheduler" }
func (d *fcSchedDUT) files() []string { return []string{"onehot_encode.v", "fc_scheduler.v"} }
func (d *fcSchedDUT) params() []Param {
	return []Param{{"VLS", d.vls}, {"VL_W", idxWidth(d.vls)}, {"REFRESH_CYCLES", d.refresh}, {"MIN_CYCLES", d.minGap}}
}
func (d *fcSchedDUT) inputs() []Signal {
	return []Signal{{Name: "fccl_adv", Width: 12 * d.vls}, {Name: "fc_ready", Width: 1}}
}
func (d *fcSchedDUT) outputs() []Signal {
	return []Signal{{Name: "fc_valid", Width: 1}, {Name: "fc_vl", Width: idxWidth(d.vls), ValidWhen: "fc_valid"}}
}

// owes reports whether VL v owes a packet at the start of the cycle.
func (d *fcSchedDUT) owes(v int) bool {
	changed := d.rx[v].FCCL() != d.last[v]
	aged := !d.sent[v] || d.since[v] >= d.minGap
	return d.pend[v] || (changed && aged)
}

func (d *fcSchedDUT) cycle(r *rand.Rand, in, out []Value) {
	if d.c%256 == 0 {
		d.pChange = []float64{0, 0.02, 0.2, 1}[r.IntN(4)]
		d.pReady = []float64{0.2, 0.8, 1, 1}[r.IntN(4)]
	}
	adv := make(Value, (12*d.vls+63)/64)
	for v := 0; v < d.vls; v++ {
		f := uint64(d.rx[v].FCCL())
		for b := 0; b < 12; b++ {
			if f&(1<<b) != 0 {
				i := 12*v + b
				adv[i/64] |= 1 << (uint(i) % 64)
			}
		}
	}
	vl := -1
	for v := 0; v < d.vls; v++ {
		if d.owes(v) {
			vl = v
			break
		}
	}
	ready := r.Float64() < d.pReady
	in[0], in[1] = adv, b2v(ready)
	out[0], out[1] = b2v(vl >= 0), U(uint64(max(vl, 0)))
	for v := 0; v < d.vls; v++ {
		if !d.pend[v] && d.rx[v].FCCL() != d.last[v] && d.sent[v] && d.since[v] < d.minGap {
			d.deferred++
		}
	}
	if vl >= 0 && !ready {
		d.stalled++
	}

	// The rising edge.
	refresh := d.c%d.refresh == d.refresh-1
	for v := 0; v < d.vls; v++ {
		if v == vl && ready {
			switch {
			case d.pend[v]:
				d.refreshSends++
			case !d.sent[v]:
				d.firstSends++
			default:
				d.changeSends++
			}
			d.last[v], d.sent[v], d.since[v], d.pend[v] = d.rx[v].FCCL(), true, min(1, d.minGap), refresh
			continue
		}
		d.since[v] = min(d.since[v]+1, d.minGap)
		if refresh {
			d.pend[v] = true
		}
	}
	// The receive side moves after the edge: what it advertises next cycle.
	for v := 0; v < d.vls; v++ {
		if r.Float64() >= d.pChange {
			continue
		}
		switch x := r.IntN(10); {
		case x < 4 && len(d.held[v]) > 0:
			d.rx[v].Release(d.held[v][0])
			d.held[v] = d.held[v][1:]
		case x < 8:
			if n := 1 + r.IntN(17); n <= d.rx[v].Free() {
				d.rx[v].Receive(n) // ABR moves; FCCL = ABR + free does not
				d.held[v] = append(d.held[v], n)
			}
		default:
			// A lost packet: ABR jumps to the peer's FCTBS, and the limit
			// with it.
			d.rx[v].SyncFCTBS(uint16((int(d.rx[v].ABR()) + 1 + r.IntN(30)) % credit.Modulus))
		}
	}
	d.c++
}

// TestFCSchedulerStimulusCovers: every case's first seed sends packets for
// each reason (the link-up packet, a change, a refresh), holds changes for
// the minimum interval where there is one, and stalls on a busy wire.
func TestFCSchedulerStimulusCovers(t *testing.T) {
	for _, c := range []struct{ vls, refresh, minGap int }{{1, 1, 0}, {4, 97, 5}, {15, 300, 40}} {
		d := newFCSchedDUT(c.vls, c.refresh, c.minGap)
		r := rand.New(rand.NewPCG(cosimSeeds[0], 0x7e57))
		in, out := make([]Value, 2), make([]Value, 2)
		for i := 0; i < cosimCycles; i++ {
			d.cycle(r, in, out)
		}
		t.Logf("%+v: link-up %d, change %d, refresh %d packets; %d VL-cycles deferred, %d stalled",
			c, d.firstSends, d.changeSends, d.refreshSends, d.deferred, d.stalled)
		assert.GreaterOrEqual(t, d.refreshSends, 20, "%+v: refresh packets", c)
		assert.GreaterOrEqual(t, d.stalled, 20, "%+v: cycles a packet waited for the wire", c)
		if c.refresh > 1 {
			// (With a refresh at every edge every packet is a refresh's.)
			assert.Equal(t, c.vls, d.firstSends, "%+v: link-up packets", c)
			assert.GreaterOrEqual(t, d.changeSends, 20, "%+v: packets for a change", c)
		}
		if c.minGap > 0 {
			assert.GreaterOrEqual(t, d.deferred, 100, "%+v: VL-cycles a change waited out the minimum interval", c)
		}
	}
}

// TestFCSchedulerMutantsFail: each slip fails the co-simulation.
func TestFCSchedulerMutantsFail(t *testing.T) {
	runMutants(t, func() cosimDUT { return newFCSchedDUT(4, 97, 5) }, []cosimMutant{
		{"the highest owing VL first", "fc_scheduler.v",
			"wire [VLS-1:0] lowest = due & (~due + 1'b1);",
			"wire [VLS-1:0] lowest = due[VLS-1] ? (1 << (VLS-1)) : due & (~due + 1'b1);"},
		{"a refresh a cycle late", "fc_scheduler.v",
			"localparam integer LAST_I = REFRESH_CYCLES - 1;", "localparam integer LAST_I = REFRESH_CYCLES;"},
		{"no minimum interval", "fc_scheduler.v",
			"assign aged[v] = !sent[v] || since[v*MW +: MW] >= MINV;", "assign aged[v] = 1'b1;"},
		{"the interval counted from the cycle after the packet", "fc_scheduler.v",
			"since[k*MW +: MW] <= ONE;", "since[k*MW +: MW] <= {MW{1'b0}};"},
		{"a refresh held by the minimum interval", "fc_scheduler.v",
			"assign due[v] = pend[v] || (changed && aged[v]);", "assign due[v] = (pend[v] || changed) && aged[v];"},
		{"a refresh that does not outlast a packet in its cycle", "fc_scheduler.v",
			"pend[k]           <= refresh;", "pend[k]           <= 1'b0;"},
		{"no link-up packet", "fc_scheduler.v",
			"assign aged[v] = !sent[v] || since[v*MW +: MW] >= MINV;", "assign aged[v] = sent[v] && since[v*MW +: MW] >= MINV;"},
		{"no periodic refresh", "fc_scheduler.v",
			"if (refresh) pend[k] <= 1'b1;", "if (1'b0) pend[k] <= 1'b1;"},
	})
}
