package credit

import "fmt"

// Modulus is the range of the 12-bit FCTBS, FCCL and ABR counters.
const Modulus = 4096

const mask = Modulus - 1

// halfRange is the largest modular distance read as "FCCL is ahead".
const halfRange = Modulus / 2

// Sender is the transmit side of one VL's flow control.
type Sender struct {
	fctbs uint16 // blocks sent on the VL, mod 4096
	fccl  uint16 // credit limit last advertised by the receiver, mod 4096
}

// NewSender returns a sender that may send initialBlocks before the first
// flow-control packet arrives (the receiver's buffer at link-up; IB links
// start with FCCL from the first FC packet, the model starts with the buffer
// size so that link training need not be simulated).
func NewSender(initialBlocks int) Sender {
	if initialBlocks < 0 || initialBlocks > halfRange {
		panic(fmt.Sprintf("credit: initial credit %d outside 0..%d", initialBlocks, halfRange))
	}
	return Sender{fccl: uint16(initialBlocks)}
}

// CanSend reports whether a packet of blocks 64-byte blocks may start:
// (FCCL − (FCTBS + blocks)) mod 4096 ≤ 2048.
func (s *Sender) CanSend(blocks int) bool {
	return (int(s.fccl)-int(s.fctbs)-blocks)&mask <= halfRange
}

// Available returns the blocks the sender may still send: (FCCL − FCTBS) mod
// 4096, read as zero when the limit is behind.
func (s *Sender) Available() int {
	d := (int(s.fccl) - int(s.fctbs)) & mask
	if d > halfRange {
		return 0
	}
	return d
}

// Send records that a packet of blocks blocks started on the wire.
// Sending without credit is a bug in the caller.
func (s *Sender) Send(blocks int) {
	if !s.CanSend(blocks) {
		panic(fmt.Sprintf("credit: send of %d blocks with FCTBS=%d FCCL=%d", blocks, s.fctbs, s.fccl))
	}
	s.fctbs = uint16((int(s.fctbs) + blocks) & mask)
}

// Update takes the FCCL of an arriving flow-control packet.
func (s *Sender) Update(fccl uint16) { s.fccl = fccl & mask }

// FCTBS returns the total blocks sent, mod 4096.
func (s *Sender) FCTBS() uint16 { return s.fctbs }

// FCCL returns the current credit limit, mod 4096.
func (s *Sender) FCCL() uint16 { return s.fccl }

// Receiver is the receive side of one VL's flow control: its buffer
// accounting and the limit it advertises.
//
// Both counts are at most 2048 (NewReceiver, Grow), so they are kept in 16
// bits: a port keeps a VL's sender, receiver and timers in 32 bytes, part
// of the few cache lines each packet's hop touches (link.Port).
type Receiver struct {
	abr      uint16 // adjusted blocks received, mod 4096
	capacity int16  // buffer size in blocks, 0..2048
	free     int16  // blocks not holding packet data, 0..capacity
}

// NewReceiver returns a receiver with an empty buffer of capacityBlocks.
func NewReceiver(capacityBlocks int) Receiver {
	if capacityBlocks < 0 || capacityBlocks > halfRange {
		panic(fmt.Sprintf("credit: buffer of %d blocks outside 0..%d", capacityBlocks, halfRange))
	}
	return Receiver{capacity: int16(capacityBlocks), free: int16(capacityBlocks)}
}

// Receive accounts a packet of blocks arriving into the buffer. Arrival into a
// full buffer means the sender broke the credit rule: the model's bug.
func (r *Receiver) Receive(blocks int) {
	if blocks > int(r.free) {
		panic(fmt.Sprintf("credit: %d blocks arrived with %d free (buffer overflow)", blocks, r.free))
	}
	r.free -= int16(blocks)
	r.abr = uint16((int(r.abr) + blocks) & mask)
}

// Release frees blocks when a packet leaves the buffer.
func (r *Receiver) Release(blocks int) {
	if int(r.free)+blocks > int(r.capacity) {
		panic(fmt.Sprintf("credit: release of %d blocks with %d of %d free", blocks, r.free, r.capacity))
	}
	r.free += int16(blocks)
}

// SyncFCTBS sets ABR to the FCTBS of an arriving flow-control packet.
func (r *Receiver) SyncFCTBS(fctbs uint16) { r.abr = fctbs & mask }

// FCCL returns the limit to advertise: (ABR + free) mod 4096.
func (r *Receiver) FCCL() uint16 { return uint16((int(r.abr) + int(r.free)) & mask) }

// Free returns the free blocks.
func (r *Receiver) Free() int { return int(r.free) }

// Used returns the blocks holding packet data.
func (r *Receiver) Used() int { return int(r.capacity) - int(r.free) }

// Capacity returns the buffer size in blocks.
func (r *Receiver) Capacity() int { return int(r.capacity) }

// ABR returns the adjusted blocks received, mod 4096.
func (r *Receiver) ABR() uint16 { return r.abr }

// Grow adds n blocks lent from a shared pool: free space, and so the
// advertised limit, rise by n. The buffer may not exceed 2048 blocks, the
// reach of a 12-bit limit.
func (r *Receiver) Grow(n int) {
	if n < 0 || int(r.capacity)+n > halfRange {
		panic(fmt.Sprintf("credit: grow by %d blocks from %d (at most %d)", n, r.capacity, halfRange))
	}
	r.capacity += int16(n)
	r.free += int16(n)
}

// ReleaseShrink frees blocks when a packet leaves the buffer and hands back
// k of them (k ≤ blocks) to the shared pool they were lent from. The
// advertised limit rises by blocks − k and never falls: credits once
// advertised are never taken back.
func (r *Receiver) ReleaseShrink(blocks, k int) {
	if k < 0 || k > blocks {
		panic(fmt.Sprintf("credit: give back %d of %d released blocks", k, blocks))
	}
	r.Release(blocks)
	r.capacity -= int16(k)
	r.free -= int16(k)
}
