package workload

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/hcasim/hcasim/ib"
)

// NCCL's protocols (workload.protocol; NVIDIA/nccl src/include/device.h,
// src/device/prims_ll.h, prims_ll128.h, src/transport/net.cc; docs/fabric.md
// "Protocols"). ProtoSimple moves raw data through FIFO steps of
// NCCL_BUFFSIZE / NCCL_STEPS and its receiver learns of a step from the
// network's receive completion; ProtoLL and ProtoLL128 move data in lines
// that carry flags, which the receiver polls in the data itself. On IB all
// three go through the same proxy and clear-to-send FIFO (net.cc
// sendProxyProgress and recvProxyProgress post an isend and an irecv per
// step whatever the protocol).
const (
	ProtoSimple = "simple"
	ProtoLL     = "ll"
	ProtoLL128  = "ll128"
)

// Protocols lists workload.protocol's values.
var Protocols = []string{ProtoSimple, ProtoLL, ProtoLL128}

// LL: a 16-byte line (union ncclLLFifoLine: data1, flag1, data2, flag2,
// four uint32 each) carries 8 data bytes; a step is DEFAULT_LL_BUFFSIZE /
// NCCL_STEPS = NCCL_LL_LINES_PER_THREAD (8) × NCCL_LL_MAX_NTHREADS (512) ×
// 16 bytes = 64 KiB of lines, half of them data (ProtoLL::calcBytePerStep:
// buffSizes[LL] / NCCL_STEPS / 2). The GPU hands the proxy
// divUp(nelem, EltPerLine) lines (prims_ll.h LLGenericOp's waitSend).
const (
	llLineBytes     = 16
	llLineData      = 8
	llStepDataBytes = 8 * 512 * NCCLSteps * llLineBytes / NCCLSteps / 2
)

// LL128: a 128-byte line (NCCL_LL128_LINESIZE) of 16 uint64s, the last
// (NCCL_LL128_DATAELEMS = 15, the one net.cc checks) the flag, so 120
// data bytes. The GPU hands the proxy whole warp slices: WireWordPerSlice
// = WARP_SIZE × NCCL_LL128_SHMEM_ELEMS_PER_THREAD = 256 uint64s (2048
// bytes, 16 lines), 1920 of data (prims_ll128.h GenericOp's waitSend:
// divUp(nelem, DataEltPerSlice) × WireWordPerSlice × 8). A step is
// DEFAULT_LL128_BUFFSIZE / NCCL_STEPS = NCCL_LL128_ELEMS_PER_THREAD (120) ×
// NCCL_LL128_MAX_NTHREADS (640) × 8 bytes = 614400 bytes of lines, 15/16
// of them data (ProtoLL128::calcBytePerStep): 576000.
const (
	ll128LineBytes     = 128
	ll128LineData      = 120
	ll128SliceBytes    = 32 * 8 * 8
	ll128SliceData     = ll128SliceBytes / ll128LineBytes * ll128LineData
	ll128StepDataBytes = 120 * 640 * NCCLSteps * 8 / NCCLSteps * 15 / 16
)

// protoMutant, set only by tests, breaks one rule of the protocols so that
// the tests can show they catch it (TestProtocolMutantsAreCaught).
var protoMutant string

// The mutants.
const (
	mutStaleFlag   = "stale-flag"   // LL/LL128 senders write the flag of the write 8 before
	mutRawWire     = "raw-wire"     // LL/LL128 senders put the data bytes alone on the wire
	mutLandOnCQE   = "land-on-cqe"  // LL/LL128 receivers wait for the receive completion, as SIMPLE's
	mutSimpleSteps = "simple-steps" // LL/LL128 keep SIMPLE's 512 KiB step
)

// checkProtocol checks workload.protocol: a known value, and ll or ll128
// only where modelled (NCCL's ring and tree all-reduces, over its
// clear-to-send FIFO, whose slots are the protocol's steps).
func checkProtocol(op, alg, proto, fc string, slice int64, prefix string) error {
	switch {
	case proto == "" || proto == ProtoSimple:
		return nil
	case !slices.Contains(Protocols, proto):
		return fmt.Errorf("%s.protocol: %q is not an NCCL protocol (%s)", prefix, proto, strings.Join(Protocols, ", "))
	case op != CollAllReduce || alg != "" && !slices.Contains(ctsAlgorithms, alg):
		what := prefix + ".kind " + op
		if op == CollAllReduce {
			what = prefix + ".algorithm " + alg
		}
		return fmt.Errorf("%s.protocol: %s is set, but %s does not use it (NCCL's protocols are modelled for its all-reduces only, %s: set %s.kind: allreduce with %s.algorithm %s, or remove the key)",
			prefix, proto, what, strings.Join(ctsAlgorithms, " and "), prefix, prefix, strings.Join(ctsAlgorithms, " or "))
	case fc != FlowCTS:
		return fmt.Errorf("%s.protocol: %s is set, but %s.flow_control is %q; NCCL moves %s lines through its clear-to-send FIFO (the slots are the protocol's steps), so set %s.flow_control: cts, or remove the key",
			prefix, proto, prefix, cmpOr(fc, FlowNone), proto, prefix)
	case slice > protoStepData(proto):
		return fmt.Errorf("%s.slice_bytes: %d is more than a workload.protocol %s FIFO step carries (%d data bytes); set it to %d or less, or remove it for the step",
			prefix, slice, proto, protoStepData(proto), protoStepData(proto))
	}
	return nil
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// protoStepData is the data bytes one FIFO step of proto carries.
func protoStepData(proto string) int64 {
	switch proto {
	case ProtoLL:
		return llStepDataBytes
	case ProtoLL128:
		return ll128StepDataBytes
	}
	return DefaultSliceBytes
}

// protoWire is how many bytes a write of n data bytes puts on the wire
// under proto: whole LL lines, or whole LL128 warp slices.
func protoWire(proto string, n int64) int64 {
	if protoMutant == mutRawWire {
		return n
	}
	switch proto {
	case ProtoLL:
		return (n + llLineData - 1) / llLineData * llLineBytes
	case ProtoLL128:
		return (n + ll128SliceData - 1) / ll128SliceData * ll128SliceBytes
	}
	return n
}

// protoEncode writes data into wire (protoWire(proto, len(data)) bytes)
// as proto's lines, each carrying flag, the padding zero: LL's
// data1/flag1/data2/flag2 (prims_ll.h storeLL), LL128's 15 data words and
// the flag word (prims_ll128.h: the flag thread's second word).
func protoEncode(proto string, data, wire []byte, flag uint64) {
	le := binary.LittleEndian
	clear(wire)
	if protoMutant == mutRawWire {
		copy(wire, data)
		return
	}
	switch proto {
	case ProtoLL:
		for i := 0; i*llLineBytes < len(wire); i++ {
			line := wire[i*llLineBytes:]
			d := data[min(len(data), i*llLineData):min(len(data), (i+1)*llLineData)]
			copy(line[0:4], d[:min(len(d), 4)])
			if len(d) > 4 {
				copy(line[8:12], d[4:])
			}
			le.PutUint32(line[4:], uint32(flag))
			le.PutUint32(line[12:], uint32(flag))
		}
	case ProtoLL128:
		for i := 0; i*ll128LineBytes < len(wire); i++ {
			line := wire[i*ll128LineBytes:]
			copy(line[:ll128LineData], data[min(len(data), i*ll128LineData):min(len(data), (i+1)*ll128LineData)])
			le.PutUint64(line[ll128LineData:], flag)
		}
	}
}

// protoDecode checks every line of wire for flag and copies its data into
// data (len(data) bytes, the write's), every line's, whatever its flag. It
// returns the first line whose flag is not flag, and that flag, or −1
// (NCCL's receiver would wait on it for ever; the model reports it and
// goes on): what NCCL's receiver polls
// (prims_ll.h readLL: both flags; prims_ll128.h: the flag word) and
// what net.cc's send proxy checks before it sends a step from host memory.
func protoDecode(proto string, wire, data []byte, flag uint64) (bad int, got uint64) {
	le := binary.LittleEndian
	bad = -1
	note := func(i int, f uint64) {
		if bad < 0 {
			bad, got = i, f
		}
	}
	if protoMutant == mutRawWire {
		copy(data, wire)
		return -1, 0
	}
	switch proto {
	case ProtoLL:
		for i := 0; i*llLineBytes < len(wire); i++ {
			line := wire[i*llLineBytes:]
			if f1, f2 := le.Uint32(line[4:]), le.Uint32(line[12:]); f1 != uint32(flag) {
				note(i, uint64(f1))
			} else if f2 != uint32(flag) {
				note(i, uint64(f2))
			}
			d := data[min(len(data), i*llLineData):min(len(data), (i+1)*llLineData)]
			copy(d, line[0:4])
			if len(d) > 4 {
				copy(d[4:], line[8:12])
			}
		}
	case ProtoLL128:
		for i := 0; i*ll128LineBytes < len(wire); i++ {
			line := wire[i*ll128LineBytes:]
			if f := le.Uint64(line[ll128LineData:]); f != flag {
				note(i, f)
			}
			copy(data[min(len(data), i*ll128LineData):min(len(data), (i+1)*ll128LineData)], line[:ll128LineData])
		}
	}
	return bad, got
}

// lineVisible counts the bytes of a write that became visible in rank r's
// receive FIFO slot at addr (LL, LL128) and wakes the rank's thread once
// the whole write is there: NCCL's receiver polls the flags in the lines
// themselves, not the network's completion (prims_ll.h readLL,
// prims_ll128.h; net.cc writes recvTail for the GPU, which only SIMPLE
// reads).
func (c *collective) lineVisible(r int, addr uint64, n int, now ib.PS) {
	ct := c.ranks[r].cts
	q := int((addr - ct.data) / uint64(c.slotBytes))
	ct.lineGot[q] += int64(n)
	if ct.lineGot[q] >= ct.lineWant[q] && protoMutant != mutLandOnCQE {
		c.wake(r, now)
	}
}

// lineCQE takes a write's receive completion in at rank rk (LL, LL128):
// in its connection's order; it frees the slot once the write is
// consumed too (ctsGrant), and takes nothing in.
func (c *collective) lineCQE(rk *collRank, imm uint32) {
	ct := rk.cts
	if int(imm) >= len(ct.slotConn) || ct.slotConn[imm] < 0 {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: unexpected immediate %d", rk.index, imm))
		return
	}
	cr := &ct.recv[ct.slotConn[imm]]
	g := cr.cqes
	cr.cqes++
	if g%cr.k != int64(ct.slotSeq[imm]) {
		c.errs = append(c.errs, fmt.Sprintf("rank %d: write %d from rank %d completed out of order (immediate %d)", rk.index, g, rk.recvQP[ct.slotConn[imm]].src, imm))
	}
}

// linePoll lands, on each receive connection of rank r in order, every
// write whose lines are all visible (LL, LL128): their flags are checked
// (each must be the connection's write number plus one, NCCL's step + 1)
// and the data taken out of the lines to the slot's start, where the
// rank adds it in or copies it from as SIMPLE's. A write of no data has
// no lines to poll; it is taken in at its receive completion.
func (c *collective) linePoll(r int) {
	rk := c.ranks[r]
	ct := rk.cts
	for j := range ct.recv {
		cr := &ct.recv[j]
		for cr.landed < cr.granted {
			g := cr.landed
			q := j*NCCLSteps + int(g%NCCLSteps)
			want := ct.lineWant[q]
			if ct.lineGot[q] < want || (want == 0 || protoMutant == mutLandOnCQE) && cr.cqes <= g {
				break
			}
			imm := uint32(cr.slots[g%cr.k])
			x := c.recvOf[int(imm)/c.maxSlices][r]
			_, n := c.sliceOf(x.Bytes, int(imm)%c.maxSlices)
			at := ct.data + uint64(q)*uint64(c.slotBytes)
			if cap(c.wireBuf) < int(want) {
				c.wireBuf = make([]byte, want)
			}
			if cap(c.lineBuf) < int(n) {
				c.lineBuf = make([]byte, n)
			}
			wire, data := c.wireBuf[:want], c.lineBuf[:n]
			rk.dev.Mem.Read(at, wire)
			if bad, f := protoDecode(c.proto, wire, data, uint64(g+1)); bad >= 0 {
				c.errs = append(c.errs, fmt.Sprintf("rank %d: write %d from rank %d: line %d of its %s FIFO slot has flag %d, want %d", r, g, rk.recvQP[j].src, bad, c.proto, f, g+1))
			}
			if ct.lineGot[q] > want {
				c.errs = append(c.errs, fmt.Sprintf("rank %d: write %d from rank %d: %d bytes landed in its FIFO slot, its lines are %d", r, g, rk.recvQP[j].src, ct.lineGot[q], want))
			}
			rk.dev.Mem.Write(at, data)
			cr.landed++
			if c.ctsLandedAt(rk, int32(j), g, imm) {
				c.landedSlot(r, imm)
			}
		}
	}
}

// lineStage writes send s of rank rk (its connection's write g) as the
// protocol's lines, flag g + 1, into its send FIFO slot and returns where
// they are and how many bytes: what the write sends.
func (c *collective) lineStage(rk *collRank, s *sliceSend, g int64) (addr uint64, n int64) {
	flag := uint64(g + 1)
	if protoMutant == mutStaleFlag {
		flag -= NCCLSteps
	}
	n = protoWire(c.proto, s.n)
	if cap(c.lineBuf) < int(s.n) {
		c.lineBuf = make([]byte, s.n)
	}
	if cap(c.wireBuf) < int(n) {
		c.wireBuf = make([]byte, n)
	}
	data, wire := c.lineBuf[:s.n], c.wireBuf[:n]
	rk.dev.Mem.Read(rk.src+uint64(s.xfer.Offset+s.off), data)
	protoEncode(c.proto, data, wire, flag)
	addr = rk.cts.stage + uint64(int64(s.conn)*NCCLSteps+g%NCCLSteps)*uint64(c.slotBytes)
	rk.dev.Mem.Write(addr, wire)
	return addr, n
}

// treeLL128SliceBytes is the tree's LL128 chunk, in data bytes, when
// workload.slice_bytes is 0: NCCL's enqueue.cc (computeColl, the tree's
// LL128 case) starts from the step, DEFAULT_LL128_BUFFSIZE / NCCL_STEPS =
// 614400 bytes of lines, and halves it while a channel's bytes are fewer
// than nstepsLL128 × 64 / ppn chunks, down to 131072, then fewer than
// nstepsLL128 × 16 / ppn, down to 32768, where nstepsLL128 = 1 +
// log2i(nNodes) + 0.1 × ppn; its data is 15/16 of it (lastChunkSize).
// One rank a node here (ppn 1, nNodes the ranks), each tree one channel
// carrying S/2, as treeSliceBytes.
func treeLL128SliceBytes(bytes int64, n int) int64 {
	log2 := 0
	for 1<<(log2+1) <= n {
		log2++
	}
	steps := 1 + float64(log2) + 0.1
	chunk := int64(120 * 640 * NCCLSteps * 8 / NCCLSteps)
	perChannel := bytes / 2
	for float64(perChannel/chunk) < steps*64 && chunk > 131072 {
		chunk /= 2
	}
	for float64(perChannel/chunk) < steps*16 && chunk > 32768 {
		chunk /= 2
	}
	return chunk * 15 / 16
}
