package verif

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// The pcapng export: every data packet the selected link ports transmit,
// as its bytes cross the wire, in a pcapng file Wireshark and tshark read
// with their InfiniBand dissector (docs/pcap.md). Block layouts are those of
// the pcapng specification (IETF draft-ietf-opsawg-pcapng): a Section
// Header Block, one Interface Description Block per port, then one
// Enhanced Packet Block per packet, all little-endian, each block's length
// repeated at its end and its body padded to 4 bytes.
//
// Each packet is an ERF record (Endace's Extensible Record Format, link
// type 197) of type INFINIBAND, as Mellanox's ibdump writes them: Wireshark
// 4.0 reads LINKTYPE_INFINIBAND (247) as an unknown network type, and
// reaches its InfiniBand dissector through ERF.

// LinkTypeERF is LINKTYPE_ERF (tcpdump.org link-layer header types).
const LinkTypeERF = 197

// erfTypeInfiniBand is the ERF record type of an InfiniBand packet, LRH
// through VCRC (Endace ERF types; Wireshark's erf dissector).
const erfTypeInfiniBand = 21

// erfHeaderBytes is an ERF record's header: timestamp 8 (little-endian),
// type 1, flags 1, rlen 2, lctr 2, wlen 2 (big-endian).
const erfHeaderBytes = 16

const (
	blockSHB = 0x0A0D0D0A
	blockIDB = 0x00000001
	blockEPB = 0x00000006

	byteOrderMagic = 0x1A2B3C4D

	optEnd         = 0
	optComment     = 1
	optSHBUserAppl = 4
	optIfName      = 2
	optIfDesc      = 3
	optIfSpeed     = 8
	optIfTSResol   = 9
	optEPBFlags    = 2
	optEPBPacketID = 5

	// tsResolPS is if_tsresol for picoseconds: 10^-12, the model's own
	// unit, so a timestamp is the simulated time exactly.
	tsResolPS = 12
	// epbOutbound is epb_flags' direction bits (0-1) for an outbound
	// packet: every packet is captured as its port sends it.
	epbOutbound = 2
)

// corruptComment is the packet comment (opt_comment) of a packet the wire
// corrupts: the capture is the transmitter's, whose bytes are good; the
// receiver's CRC check fails at the tail and discards it.
const corruptComment = "corrupted on the wire (link.ber): the receiver discards it at its tail"

// PcapPort is one capture interface: a link port whose transmitted packets
// the file holds.
type PcapPort struct {
	Name        string // the port's path, e.g. Fabric.Leaf[2].Port[5]: the interface's if_name
	Description string // if_description, e.g. what the port is cabled to
	SpeedBps    uint64 // if_speed: the link's data rate in bits per second (0: not written)
}

// PcapRecorder is a hook that writes the data packets its ports transmit
// (their tx_start events) to a pcapng file, timestamped in integer
// picoseconds at the packet's first bit on the wire. Each Enhanced Packet
// Block carries the packet's model sequence number as its packet ID
// (epb_packetid), the same number a trace's seq field holds, so a packet
// in Wireshark can be found in the trace and followed hop by hop.
type PcapRecorder struct {
	w       *bufio.Writer
	snaplen int
	ifaces  map[string]uint32
	encode  func([]byte, *ib.Packet) []byte
	frame   []byte // the packet's wire bytes, reused
	block   []byte // the block being built, reused
	packets uint64
	err     error
}

// NewPcapRecorder writes the section header (comment: a line naming the
// run) and one interface per port, in the order given, and returns the
// recorder; encode turns a packet into its wire bytes (ib.AppendWire).
// snaplen > 0 keeps at most that many bytes of each packet (the original
// length is still recorded); 0 keeps them whole.
func NewPcapRecorder(w io.Writer, comment string, ports []PcapPort, snaplen int,
	encode func([]byte, *ib.Packet) []byte) *PcapRecorder {
	r := &PcapRecorder{w: bufio.NewWriterSize(w, 1<<16), snaplen: snaplen, ifaces: make(map[string]uint32, len(ports)),
		encode: encode}
	var body []byte
	body = binary.LittleEndian.AppendUint32(body, byteOrderMagic)
	body = binary.LittleEndian.AppendUint16(body, 1) // major version
	body = binary.LittleEndian.AppendUint16(body, 0) // minor version
	body = binary.LittleEndian.AppendUint64(body, math.MaxUint64)
	body = appendOpt(body, optComment, []byte(comment))
	body = appendOpt(body, optSHBUserAppl, []byte("hcasim"))
	body = appendOpt(body, optEnd, nil)
	r.writeBlock(blockSHB, body)
	for i, p := range ports {
		r.ifaces[p.Name] = uint32(i)
		body = body[:0]
		body = binary.LittleEndian.AppendUint16(body, LinkTypeERF)
		body = binary.LittleEndian.AppendUint16(body, 0) // reserved
		if snaplen > 0 {
			body = binary.LittleEndian.AppendUint32(body, uint32(erfHeaderBytes+snaplen))
		} else {
			body = binary.LittleEndian.AppendUint32(body, 0)
		}
		body = appendOpt(body, optIfName, []byte(p.Name))
		if p.Description != "" {
			body = appendOpt(body, optIfDesc, []byte(p.Description))
		}
		if p.SpeedBps > 0 {
			body = appendOpt(body, optIfSpeed, binary.LittleEndian.AppendUint64(nil, p.SpeedBps))
		}
		body = appendOpt(body, optIfTSResol, []byte{tsResolPS})
		body = appendOpt(body, optEnd, nil)
		r.writeBlock(blockIDB, body)
	}
	return r
}

// Func implements sim.Hook: a tx_start of one of the recorder's ports
// becomes an Enhanced Packet Block.
func (r *PcapRecorder) Func(ctx sim.HookCtx) {
	if ctx.Pos != components.HookPosTrace || r.err != nil {
		return
	}
	ev := ctx.Item.(*components.TraceEvent)
	if ev.Kind != components.TraceTxStart || ev.Pkt == nil || ev.Pkt.Kind != ib.Data {
		return
	}
	id, ok := r.ifaces[ev.Path]
	if !ok {
		return
	}
	r.frame = r.encode(r.frame[:0], ev.Pkt)
	data := r.frame
	if r.snaplen > 0 && len(data) > r.snaplen {
		data = data[:r.snaplen]
	}
	ts := uint64(ev.Time)
	b := r.block[:0]
	b = binary.LittleEndian.AppendUint32(b, id)
	b = binary.LittleEndian.AppendUint32(b, uint32(ts>>32))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts))
	b = binary.LittleEndian.AppendUint32(b, uint32(erfHeaderBytes+len(data)))
	b = binary.LittleEndian.AppendUint32(b, uint32(erfHeaderBytes+len(r.frame)))
	b = appendERFHeader(b, ev.Time, len(data), len(r.frame))
	b = append(b, data...)
	b = pad4(b)
	var flags [4]byte
	var pid [8]byte
	binary.LittleEndian.PutUint32(flags[:], epbOutbound)
	binary.LittleEndian.PutUint64(pid[:], ev.Pkt.Seq)
	b = appendOpt(b, optEPBFlags, flags[:])
	b = appendOpt(b, optEPBPacketID, pid[:])
	if ev.Corrupt {
		b = appendOpt(b, optComment, []byte(corruptComment))
	}
	b = appendOpt(b, optEnd, nil)
	r.block = b
	r.writeBlock(blockEPB, b)
	r.packets++
}

// Packets returns how many packets the recorder has written.
func (r *PcapRecorder) Packets() uint64 { return r.packets }

// Flush writes what is buffered and returns the first write error.
func (r *PcapRecorder) Flush() error {
	if r.err != nil {
		return r.err
	}
	if err := r.w.Flush(); err != nil {
		r.err = err
	}
	return r.err
}

// writeBlock writes one block: type, total length, body, total length.
func (r *PcapRecorder) writeBlock(typ uint32, body []byte) {
	if r.err != nil {
		return
	}
	if len(body)%4 != 0 {
		panic(fmt.Sprintf("verif: pcapng block body of %d bytes is not padded", len(body)))
	}
	var hdr [8]byte
	total := uint32(len(body) + 12)
	binary.LittleEndian.PutUint32(hdr[:4], typ)
	binary.LittleEndian.PutUint32(hdr[4:], total)
	if _, err := r.w.Write(hdr[:]); err != nil {
		r.err = err
		return
	}
	if _, err := r.w.Write(body); err != nil {
		r.err = err
		return
	}
	if _, err := r.w.Write(hdr[4:]); err != nil {
		r.err = err
	}
}

// appendERFHeader appends an ERF record header: the timestamp as seconds
// (high 32 bits) and a binary fraction of a second (low 32 bits, rounded
// down: 2^-32 s is about 233 ps; the block's own timestamp is exact), type
// INFINIBAND, flags 0 (interface 0, no errors), rlen the record's bytes,
// no loss, wlen the packet's bytes on the wire.
func appendERFHeader(b []byte, t ib.PS, captured, wire int) []byte {
	// frac × 2^32 / 10^12 = frac × 2^20 / 5^12 (10^12 = 2^12 × 5^12), which
	// stays inside 64 bits for frac < 10^12 < 2^40.
	const psPerS, fivePow12 = 1_000_000_000_000, 244_140_625
	sec, frac := uint64(t)/psPerS, uint64(t)%psPerS
	b = binary.LittleEndian.AppendUint64(b, sec<<32|frac<<20/fivePow12)
	b = append(b, erfTypeInfiniBand, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(erfHeaderBytes+captured))
	b = binary.BigEndian.AppendUint16(b, 0)
	return binary.BigEndian.AppendUint16(b, uint16(wire))
}

// appendOpt appends one option: code, length, value padded to 4 bytes.
func appendOpt(b []byte, code uint16, v []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	return pad4(append(b, v...))
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
