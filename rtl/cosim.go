package rtl

import (
	"fmt"
	"math/rand/v2"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/credit"
)

// cosimDUT adapts one Go model to the ports of its Verilog primitive: it
// draws each cycle's stimulus, computes the outputs the model says the
// hardware shows in that cycle, then advances the model across the clock
// edge exactly as the RTL does.
type cosimDUT interface {
	module() string   // Verilog module name
	files() []string  // PrimitiveFiles it needs
	params() []Param  // parameter overrides
	inputs() []Signal // in trace order
	outputs() []Signal
	// cycle fills in and out for one clock cycle and advances the model.
	cycle(r *rand.Rand, in, out []Value)
}

// b2v turns a bool into a 1-bit Value.
func b2v(b bool) Value {
	if b {
		return U(1)
	}
	return U(0)
}

// idxWidth is the Verilog ($clog2(n) or 1) width of an index into n things.
func idxWidth(n int) int {
	w := 0
	for (1 << w) < n {
		w++
	}
	return max(w, 1)
}

// cntWidth is $clog2(n+1): the width of a count 0..n.
func cntWidth(n int) int {
	w := 0
	for (1 << w) < n+1 {
		w++
	}
	return w
}

// phaseProb returns a probability that changes every 256 cycles, so random
// stimulus spends long stretches near full, near empty and in between.
func phaseProb(r *rand.Rand, c int, cur *float64) float64 {
	if c%256 == 0 {
		*cur = []float64{0.1, 0.5, 0.9, 0.3, 0.7}[r.IntN(5)]
	}
	return *cur
}

// ---- sync_fifo <-> components.FIFO ----

type fifoDUT struct {
	width, depth int
	model        *components.FIFO[uint64]
	c            int
	pPush, pPop  float64
}

func newFIFODUT(width, depth int) *fifoDUT {
	if width > 64 {
		panic(fmt.Sprintf("rtl.newFIFODUT: width %d > 64", width))
	}
	return &fifoDUT{width: width, depth: depth, model: components.NewFIFO[uint64](depth)}
}

func (d *fifoDUT) module() string  { return "sync_fifo" }
func (d *fifoDUT) files() []string { return []string{"sync_fifo.v"} }
func (d *fifoDUT) params() []Param {
	return []Param{{"WIDTH", d.width}, {"DEPTH", d.depth}}
}
func (d *fifoDUT) inputs() []Signal {
	// drop_* stay 0 here: components.FIFO has no drop; the drop is
	// co-simulated inside ib_rx_vl_fifos (cosim_rxdrop_test.go).
	return []Signal{{Name: "push_valid", Width: 1}, {Name: "push_data", Width: d.width}, {Name: "pop_ready", Width: 1},
		{Name: "drop_valid", Width: 1}, {Name: "drop_count", Width: cntWidth(d.depth)}}
}
func (d *fifoDUT) outputs() []Signal {
	return []Signal{
		{Name: "push_ready", Width: 1}, {Name: "pop_valid", Width: 1},
		{Name: "pop_data", Width: d.width, ValidWhen: "pop_valid"},
		{Name: "count", Width: cntWidth(d.depth)},
	}
}

func (d *fifoDUT) cycle(r *rand.Rand, in, out []Value) {
	pPush := phaseProb(r, d.c, &d.pPush)
	pPop := phaseProb(r, d.c, &d.pPop)
	d.c++
	push := r.Float64() < pPush
	pop := r.Float64() < pPop
	data := r.Uint64()
	if d.width < 64 {
		data &= 1<<d.width - 1
	}
	in[0], in[1], in[2], in[3], in[4] = b2v(push), U(data), b2v(pop), U(0), U(0)
	// Outputs come from the state at the start of the cycle.
	full, empty := d.model.Full(), d.model.Empty()
	head, _ := d.model.Peek()
	out[0], out[1], out[2], out[3] = b2v(!full), b2v(!empty), U(head), U(uint64(d.model.Len()))
	// The rising edge: pop if it was not empty, push if it was not full.
	if pop && !empty {
		d.model.Pop()
	}
	if push && !full {
		d.model.Push(data)
	}
}

// ---- rr_arbiter <-> components.RoundRobin ----

type rrDUT struct {
	n     int
	model *components.RoundRobin
	c     int
	pReq  float64
}

func newRRDUT(n int) *rrDUT { return &rrDUT{n: n, model: components.NewRoundRobin(n)} }

func (d *rrDUT) module() string  { return "rr_arbiter" }
func (d *rrDUT) files() []string { return []string{"onehot_encode.v", "rr_arbiter.v"} }
func (d *rrDUT) params() []Param { return []Param{{"N", d.n}} }
func (d *rrDUT) inputs() []Signal {
	return []Signal{{Name: "req", Width: d.n}, {Name: "commit", Width: 1}, {Name: "commit_idx", Width: idxWidth(d.n)}}
}
func (d *rrDUT) outputs() []Signal {
	return []Signal{{Name: "grant_valid", Width: 1}, {Name: "grant_idx", Width: idxWidth(d.n), ValidWhen: "grant_valid"}}
}

func (d *rrDUT) cycle(r *rand.Rand, in, out []Value) {
	p := phaseProb(r, d.c, &d.pReq)
	d.c++
	// Sparse phases matter most: they exercise the wrap-around search.
	p *= p
	var req components.PortSet
	for i := 0; i < d.n; i++ {
		if r.Float64() < p {
			req.Set(i)
		}
	}
	g := d.model.Pick(req)
	// Commit the grant most of the time (an accepted iSLIP grant); sometimes
	// commit another index (the accept stage chose a different output) or none.
	commit, idx := false, 0
	switch x := r.IntN(10); {
	case x < 6 && g >= 0:
		commit, idx = true, g
	case x < 8:
		commit, idx = true, r.IntN(d.n)
	}
	in[0], in[1], in[2] = Value(req[:(d.n+63)/64]), b2v(commit), U(uint64(idx))
	out[0], out[1] = b2v(g >= 0), U(uint64(max(g, 0)))
	if commit {
		d.model.Commit(idx)
	}
}

// ---- vl_arbiter <-> components.VLArbiter ----

type vlArbDUT struct {
	highN, lowN int
	vls         int // data VLs the random tables and ready masks use
	high, low   []components.VLArbEntry
	limit       uint8
	model       *components.VLArbiter
	c           int
	pReady      float64
	// saturated: every data VL ready every cycle and LimitOfHighPriority
	// 255, so the high table sends for thousands of cycles while the low
	// table could send: the high-priority count passes 254 × 64 blocks,
	// where only "255 = unbounded" keeps the low table waiting.
	saturated bool
}

// newVLArbDUT draws random tables (per seed) of highN and lowN entries over
// vls data VLs; weights are mostly small so that packets of 1..66 blocks
// exhaust them often, with some zeros (skipped entries).
func newVLArbDUT(r *rand.Rand, highN, lowN, vls int) *vlArbDUT {
	table := func(n int) []components.VLArbEntry {
		t := make([]components.VLArbEntry, n)
		for i := range t {
			t[i].VL = uint8(r.IntN(vls))
			switch x := r.IntN(8); {
			case x == 0:
				t[i].Weight = 0
			case x < 6:
				t[i].Weight = uint8(1 + r.IntN(32))
			default:
				t[i].Weight = uint8(1 + r.IntN(255))
			}
		}
		return t
	}
	d := &vlArbDUT{highN: highN, lowN: lowN, vls: vls, high: table(highN), low: table(lowN)}
	d.limit = []uint8{0, 1, 2, 5, components.HighLimitUnbounded}[r.IntN(5)]
	d.model = components.NewVLArbiter(d.high, d.low, d.limit)
	return d
}

// newSaturatedVLArbDUT is newVLArbDUT with every data VL always ready and
// LimitOfHighPriority 255 (see vlArbDUT.saturated).
func newSaturatedVLArbDUT(r *rand.Rand, highN, lowN, vls int) *vlArbDUT {
	d := newVLArbDUT(r, highN, lowN, vls)
	d.saturated, d.limit = true, components.HighLimitUnbounded
	d.model = components.NewVLArbiter(d.high, d.low, d.limit)
	return d
}

func (d *vlArbDUT) module() string { return "vl_arbiter" }
func (d *vlArbDUT) files() []string {
	return []string{"onehot_encode.v", "vl_arb_table.v", "vl_arbiter.v"}
}
func (d *vlArbDUT) params() []Param {
	return []Param{{"HIGH_ENTRIES", d.highN}, {"LOW_ENTRIES", d.lowN}}
}
func (d *vlArbDUT) inputs() []Signal {
	return []Signal{
		{Name: "ready", Width: 16}, {Name: "high_table", Width: 12 * d.highN},
		{Name: "low_table", Width: 12 * d.lowN}, {Name: "limit", Width: 8},
		{Name: "commit", Width: 1}, {Name: "commit_blocks", Width: 8},
	}
}
func (d *vlArbDUT) outputs() []Signal {
	return []Signal{{Name: "pick_valid", Width: 1}, {Name: "pick_vl", Width: 4, ValidWhen: "pick_valid"}}
}

// packTable packs entry k as [12k+3:12k] VL, [12k+11:12k+4] weight.
func packTable(t []components.VLArbEntry) Value {
	v := make(Value, (12*len(t)+63)/64)
	for k, e := range t {
		field := uint64(e.VL) | uint64(e.Weight)<<4
		for b := 0; b < 12; b++ {
			if field&(1<<b) != 0 {
				i := 12*k + b
				v[i/64] |= 1 << (uint(i) % 64)
			}
		}
	}
	return v
}

func (d *vlArbDUT) cycle(r *rand.Rand, in, out []Value) {
	p := phaseProb(r, d.c, &d.pReady)
	d.c++
	var ready uint16
	for v := 0; v < d.vls; v++ {
		if d.saturated || r.Float64() < p {
			ready |= 1 << v
		}
	}
	if r.IntN(50) == 0 {
		ready |= 1 << 15 // an occasional management packet
	}
	vl := d.model.Pick(ready)
	commit := r.IntN(10) < 7
	blocks := 1 + r.IntN(66) // 64..4182 bytes: up to a 4 KiB-MTU packet
	in[0], in[1], in[2], in[3] = U(uint64(ready)), packTable(d.high), packTable(d.low), U(uint64(d.limit))
	in[4], in[5] = b2v(commit), U(uint64(blocks))
	out[0], out[1] = b2v(vl >= 0), U(uint64(max(vl, 0)))
	if commit && vl >= 0 {
		d.model.Commit(vl, blocks)
	}
}

// ---- credit_sender <-> credit.Sender ----

type creditSenderDUT struct {
	init  int
	model credit.Sender
	peer  credit.Receiver // a plausible receiver, so most updates are realistic
	held  []int           // packets in the peer's buffer
}

func newCreditSenderDUT(initCredits int) *creditSenderDUT {
	return &creditSenderDUT{init: initCredits, model: credit.NewSender(initCredits), peer: credit.NewReceiver(initCredits)}
}

func (d *creditSenderDUT) module() string  { return "credit_sender" }
func (d *creditSenderDUT) files() []string { return []string{"credit_sender.v"} }
func (d *creditSenderDUT) params() []Param { return []Param{{"INIT_CREDITS", d.init}} }
func (d *creditSenderDUT) inputs() []Signal {
	return []Signal{
		{Name: "check_blocks", Width: 12}, {Name: "send", Width: 1}, {Name: "send_blocks", Width: 12},
		{Name: "update", Width: 1}, {Name: "update_fccl", Width: 12},
	}
}
func (d *creditSenderDUT) outputs() []Signal {
	return []Signal{
		{Name: "can_send", Width: 1}, {Name: "available", Width: 12},
		{Name: "fctbs", Width: 12}, {Name: "fccl", Width: 12},
	}
}

func (d *creditSenderDUT) cycle(r *rand.Rand, in, out []Value) {
	check := 1 + r.IntN(66)
	switch r.IntN(20) {
	case 0:
		check = r.IntN(4096) // the whole 12-bit range, including 0
	case 1:
		// The edge of the send rule: (FCCL - (FCTBS + check)) mod 4096 is
		// 2047, 2048 (allowed) or 2049 (refused), which random checks
		// almost never hit.
		check = (int(d.model.FCCL()) - int(d.model.FCTBS()) - 2048 + r.IntN(3) - 1) & (credit.Modulus - 1)
	}
	can := d.model.CanSend(check)
	out[0], out[1] = b2v(can), U(uint64(d.model.Available()))
	out[2], out[3] = U(uint64(d.model.FCTBS())), U(uint64(d.model.FCCL()))
	// Send the packet checked (realistic sizes only, so the peer can take it).
	send := can && check >= 1 && check <= 66 && check <= d.peer.Free() && r.IntN(3) > 0
	update, fccl := false, uint16(0)
	switch x := r.IntN(10); {
	case x < 3:
		// The peer frees its oldest packet and advertises the new limit.
		if len(d.held) > 0 {
			d.peer.Release(d.held[0])
			d.held = d.held[1:]
		}
		update, fccl = true, d.peer.FCCL()
	case x == 3 && r.IntN(10) == 0:
		update, fccl = true, uint16(r.IntN(4096)) // any 12-bit value, ahead or behind
	}
	in[0], in[1], in[2] = U(uint64(check)), b2v(send), U(uint64(check))
	in[3], in[4] = b2v(update), U(uint64(fccl))
	if send {
		d.model.Send(check)
		d.peer.Receive(check)
		d.held = append(d.held, check)
	}
	if update {
		d.model.Update(fccl)
	}
}

// ---- credit_receiver <-> credit.Receiver ----

type creditReceiverDUT struct {
	capacity int
	model    credit.Receiver
	held     []int // packets in the buffer, oldest first
	fctbs    uint16
}

func newCreditReceiverDUT(capacity int) *creditReceiverDUT {
	return &creditReceiverDUT{capacity: capacity, model: credit.NewReceiver(capacity)}
}

func (d *creditReceiverDUT) module() string  { return "credit_receiver" }
func (d *creditReceiverDUT) files() []string { return []string{"credit_receiver.v"} }
func (d *creditReceiverDUT) params() []Param { return []Param{{"CAPACITY", d.capacity}} }
func (d *creditReceiverDUT) inputs() []Signal {
	return []Signal{
		{Name: "sync", Width: 1}, {Name: "sync_fctbs", Width: 12},
		{Name: "receive", Width: 1}, {Name: "recv_blocks", Width: 12},
		{Name: "release_blocks", Width: 1}, {Name: "rel_blocks", Width: 12},
	}
}
func (d *creditReceiverDUT) outputs() []Signal {
	return []Signal{{Name: "abr", Width: 12}, {Name: "free", Width: 12}, {Name: "fccl", Width: 12}}
}

func (d *creditReceiverDUT) cycle(r *rand.Rand, in, out []Value) {
	out[0], out[1], out[2] = U(uint64(d.model.ABR())), U(uint64(d.model.Free())), U(uint64(d.model.FCCL()))
	// A flow-control packet carries the sender's FCTBS; now and then it is
	// far off (lost blocks), which ABR must simply take.
	sync := r.IntN(8) == 0
	if sync && r.IntN(10) == 0 {
		d.fctbs = uint16(r.IntN(4096))
	}
	n := 1 + r.IntN(min(66, max(d.capacity, 1)))
	receive := d.capacity > 0 && n <= d.model.Free() && r.IntN(2) == 0
	release := len(d.held) > 0 && r.IntN(2) == 0
	rel := 0
	if release {
		rel = d.held[0]
	}
	in[0], in[1] = b2v(sync), U(uint64(d.fctbs))
	in[2], in[3] = b2v(receive), U(uint64(n))
	in[4], in[5] = b2v(release), U(uint64(rel))
	// The rising edge, in the RTL's order: sync, receive, release.
	if sync {
		d.model.SyncFCTBS(d.fctbs)
	}
	if receive {
		d.model.Receive(n)
		d.fctbs = uint16((int(d.fctbs) + n) % credit.Modulus)
	}
	if release {
		d.model.Release(rel)
		d.held = d.held[1:]
	}
	if receive {
		d.held = append(d.held, n)
	}
}
