package rtl

import "math/rand/v2"

// crcStream is the co-simulation of a stream CRC block (ib_vcrc, ib_icrc):
// the same ports (in_valid, in_data, in_sop, in_eop, out_ready in;
// in_ready, out_valid, out_data, out_sop, out_eop and two error flags
// out), latency 1 and in_ready = out_ready. It streams queue's packets,
// then random ones, and expects each beat a cycle after it is taken with
// what the packet wants there, and the errors with the last beat. Offers
// come in at least half the cycles; out_ready stalls in phases.
type crcStream[P any] struct {
	mod, errPort string // the module, and the name of its error flag beside out_len_err

	queue []P // packets still to send, the current one first
	next  int // beats of queue[0] taken
	held  bool

	// of returns a packet's input and expected bytes (whole beats), its
	// beats and the two error flags expected with its last one; random
	// draws the next packet when the queue is empty.
	of     func(*P) (in, want []byte, beats int, err, lenErr bool)
	random func(*rand.Rand) P

	outValid                      bool
	outData                       []byte
	outSop, outEop, outErr, outLE bool

	c            int
	pIn, pReady  float64
	done         []P // packets whose last beat was taken
	stalledBeats int // cycles a beat waited for out_ready
	gaps         int // cycles inside a packet with no beat offered
}

func newCRCStream[P any](mod, errPort string, queue []P, of func(*P) ([]byte, []byte, int, bool, bool),
	random func(*rand.Rand) P) crcStream[P] {
	return crcStream[P]{mod: mod, errPort: errPort, queue: queue, of: of, random: random, outData: make([]byte, BlockBytes)}
}

func (d *crcStream[P]) module() string  { return d.mod }
func (d *crcStream[P]) files() []string { return []string{d.mod + ".v"} }
func (d *crcStream[P]) params() []Param { return nil }
func (d *crcStream[P]) inputs() []Signal {
	return []Signal{{Name: "in_valid", Width: 1}, {Name: "in_data", Width: 512}, {Name: "in_sop", Width: 1},
		{Name: "in_eop", Width: 1}, {Name: "out_ready", Width: 1}}
}
func (d *crcStream[P]) outputs() []Signal {
	return []Signal{
		{Name: "in_ready", Width: 1}, {Name: "out_valid", Width: 1},
		{Name: "out_data", Width: 512, ValidWhen: "out_valid"}, {Name: "out_sop", Width: 1, ValidWhen: "out_valid"},
		{Name: "out_eop", Width: 1, ValidWhen: "out_valid"},
		{Name: d.errPort, Width: 1, ValidWhen: "out_valid && out_eop"},
		{Name: "out_len_err", Width: 1, ValidWhen: "out_valid && out_eop"},
	}
}

func (d *crcStream[P]) cycle(r *rand.Rand, in, out []Value) {
	// Offers in at least half the cycles: a seed's cycles then carry the
	// directed packets and a few hundred random ones.
	pIn := max(phaseProb(r, d.c, &d.pIn), 0.5)
	pReady := phaseProb(r, d.c, &d.pReady)
	d.c++
	ready := r.Float64() < pReady
	valid := d.held || r.Float64() < pIn // an offered beat stays until taken
	if len(d.queue) == 0 {
		d.queue = append(d.queue, d.random(r))
	}
	pk := &d.queue[0]
	pin, pwant, beats, perr, plen := d.of(pk)
	var data []byte
	var sop, eop bool
	if valid {
		data = pin[d.next*BlockBytes : (d.next+1)*BlockBytes]
		sop, eop = d.next == 0, d.next == beats-1
	} else {
		if d.next > 0 {
			d.gaps++
		}
		// Not valid: anything on the wires, which the block must ignore.
		data = make([]byte, BlockBytes)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		sop, eop = r.IntN(2) == 0, r.IntN(2) == 0
	}
	in[0], in[1], in[2], in[3], in[4] = b2v(valid), bytesValue(data), b2v(sop), b2v(eop), b2v(ready)
	// Outputs: the output register, as at the start of the cycle.
	out[0], out[1] = b2v(ready), b2v(d.outValid)
	out[2], out[3], out[4] = U(0), U(0), U(0)
	out[5], out[6] = U(0), U(0)
	if d.outValid {
		out[2], out[3], out[4] = bytesValue(d.outData), b2v(d.outSop), b2v(d.outEop)
		if d.outEop {
			out[5], out[6] = b2v(d.outErr), b2v(d.outLE)
		}
	}
	// The edge: the register moves when the consumer takes (in_ready = out_ready).
	d.held = valid && !ready
	if d.held {
		d.stalledBeats++
	}
	if !ready {
		return
	}
	d.outValid = valid
	if !valid {
		return
	}
	copy(d.outData, pwant[d.next*BlockBytes:])
	d.outSop, d.outEop = sop, eop
	d.outErr, d.outLE = eop && perr, eop && plen
	d.next++
	if eop {
		d.done = append(d.done, *pk)
		d.queue = d.queue[1:]
		d.next = 0
	}
}
