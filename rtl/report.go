package rtl

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
)

// BufferUse is one kind of buffer memory in the design.
type BufferUse struct {
	Block       string // where it lives
	Entries     int    // words per array
	Width       int    // bits per word
	ArraysPort  int    // arrays per port
	Ports       int    // ports that have it
	BitsPerPort int    // Entries × Width × ArraysPort
	TotalBits   int    // BitsPerPort × Ports
	Note        string
}

// CellUse is the Yosys synthesis result of one primitive at the parameters
// this design instantiates it with.
type CellUse struct {
	Module    string
	Params    []Param
	Role      string // what the instances do
	Instances int    // instances in switch_top + hca_top
	Cells     int    // generic gate-level cells, flops included, memory arrays excluded
	Flops     int    // flip-flop bits
	Memories  int    // inferred memory arrays (counted as SRAM above, not as cells)
}

// Report is the resource report of a design.
type Report struct {
	Design  Design
	Params  Params
	Buffers []BufferUse
	Cells   []CellUse // empty when synthesis was not run
}

// NewReport sizes the buffers of d; with synth it also synthesises each
// primitive with Yosys (at most two at a time) at the parameters the emitted
// tree uses. It returns an error when d is invalid or Yosys fails.
func NewReport(ctx context.Context, d Design, synth bool) (*Report, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	p := d.Params()
	entryW := p.DataW + 2 // {sop, eop, data}
	r := &Report{Design: d, Params: p}
	add := func(b BufferUse) {
		b.BitsPerPort = b.Entries * b.Width * b.ArraysPort
		b.TotalBits = b.BitsPerPort * b.Ports
		r.Buffers = append(r.Buffers, b)
	}
	add(BufferUse{Block: "switch input VL buffers (sync_fifo)", Entries: p.BufDepth, Width: entryW, ArraysPort: p.VLs, Ports: p.Ports,
		Note: fmt.Sprintf("%d B/VL = %d blocks of 64 B + sop/eop", d.VLBufferBytes, p.BufDepth)})
	add(BufferUse{Block: "switch LFT (sw_route_lookup)", Entries: p.LFTTop + 1, Width: p.PortW + 1, ArraysPort: 1, Ports: p.Ports,
		Note: fmt.Sprintf("one copy per input, DLIDs 0..0x%X (LFT_TOP), {route valid, port} per entry", p.LFTTop)})
	add(BufferUse{Block: "HCA receive VL buffers (sync_fifo)", Entries: p.HCABufDepth, Width: entryW, ArraysPort: p.VLs, Ports: 1,
		Note: fmt.Sprintf("%d B/VL = %d blocks of 64 B + sop/eop", d.HCAVLBufferBytes, p.HCABufDepth)})
	// hca_wqe_fetch: one block buffer per send queue context, each entry
	// a block and FLT_W bits (its read's n on the read's last block), and
	// the reads in flight ({QP, n}) that route host memory's responses.
	fltW := bits.Len(uint(p.WQEPrefetch)) // $clog2(WQE_PREFETCH_DEPTH + 1)
	qps := 1 << p.QPNW
	add(BufferUse{Block: "HCA WQE block buffers (sync_fifo)", Entries: p.WQEPrefetch, Width: BlockBytes*8 + fltW, ArraysPort: qps, Ports: 1,
		Note: fmt.Sprintf("one per SQ context (%d), hca.wqe_prefetch_depth = %d WQEBBs of 64 B in flight + the read's n (%d bits)", qps, p.WQEPrefetch, fltW)})
	add(BufferUse{Block: "HCA WQE reads in flight (sync_fifo)", Entries: qps * p.WQEPrefetch, Width: p.QPNW + fltW, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("{QP, n} of each read host memory has yet to return: at most %d per QP", p.WQEPrefetch)})
	// hca_dma_engine: a reorder ring per read client (rd0, rd1), a block
	// per slot, room for every tag's largest request (robBlocks).
	add(BufferUse{Block: "HCA DMA reorder rings (hca_dma_engine)", Entries: p.ROBBlocks, Width: BlockBytes * 8, ArraysPort: 2, Ports: 1,
		Note: fmt.Sprintf("one per read client (rd0, rd1): %d tags (hca.pcie.outstanding_reads) x MRRS %d / 64 blocks, to a power of two", p.ReadTags, p.MRRS)})
	// Beside each ring its lap bits (a bit per slot, dmaLapSlots a word),
	// and the tag table: register files the block reads combinationally.
	lapSlots := dmaLapSlots(p.ROBBlocks)
	add(BufferUse{Block: "HCA DMA ring lap bits (hca_dma_engine)", Entries: p.ROBBlocks / lapSlots, Width: lapSlots, ArraysPort: 2, Ports: 1,
		Note: fmt.Sprintf("a bit per ring slot, %d slots a word: the clear after reset writes a word a cycle, %d cycles", lapSlots, dmaClearCycles(p.ROBBlocks))})
	add(BufferUse{Block: "HCA DMA tag table (hca_dma_engine)", Entries: p.ReadTags, Width: dmaTagEntryBits(p.ROBBlocks, p.MRRS), ArraysPort: 1, Ports: 1,
		Note: "per read tag: {client, next beat's ring count, beats to come} (in flight: flops)"})
	add(BufferUse{Block: "HCA MPT cache (hca_key_check)", Entries: p.KeyCache, Width: 256, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("hca.key_cache_entries = %d MPT entries of 256 bits (tags and ages in flops)", p.KeyCache)})
	// hca_requester (in hca_transport): the QP contexts (2^QPN_W of QPN
	// 24, DLID 16, SLID 16, SL 4, VL VL_W, remote QPN 24, next PSN 24,
	// MTU code 3, send CQ CQN_W, with the valid and ERR bits in flops),
	// the payload buffer (a 64-byte block an entry), the start queue
	// ({blocks 27, start 6} a message), the packet queue ({context, sop,
	// eop, data}: the context for the purge), the outstanding messages
	// (ReqOutDepth a context) and the message contexts' queue (a
	// context index a message, between dec_* and the path's output).
	add(BufferUse{Block: "HCA requester QP contexts (hca_requester)", Entries: qps, Width: reqCtxBits(p.VLW, p.CQNW), ArraysPort: 1, Ports: 1,
		Note: "per context index: QPN, DLID, SLID, SL, VL, remote QPN, next PSN, path MTU, send CQ (valid and ERR bits in flops)"})
	add(BufferUse{Block: "HCA requester payload buffer (sync_fifo)", Entries: ReqPayBlocks, Width: BlockBytes * 8, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("rd1's blocks for hca_tx_path: %d blocks of 64 B, reads issued only with room for them", ReqPayBlocks)})
	add(BufferUse{Block: "HCA requester start queue (sync_fifo)", Entries: ReqMsgDepth, Width: 27 + 6, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("{blocks, start} of %d messages between dec_* and the packer's output (start 0: the packer starts a message at lane 0)", ReqMsgDepth)})
	add(BufferUse{Block: "HCA requester packet queue (sync_fifo)", Entries: ReqPktBlocks, Width: entryW + p.QPNW + 1, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("%d beats of {resend, context, sop, eop, data}, store and forward, one queue for every VL: two largest packets at MTU 4096 (65 beats each)", ReqPktBlocks)})
	add(BufferUse{Block: "HCA requester outstanding messages (hca_requester)", Entries: qps * ReqOutDepth, Width: ReqOutBits, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("%d a context, until ACKed or flushed: {READ or atomic, signaled, opcode, index, length, first and last PSN} (ring pointers in flops)", ReqOutDepth)})
	add(BufferUse{Block: "HCA requester resend copies (hca_requester)", Entries: qps * ReqOutDepth, Width: ReqWQEBits, ArraysPort: 1, Ports: 1,
		Note: "beside each outstanding message, what a go-back-N resend needs: {remote address, R_Key, immediate, swap/add, compare, local address}"})
	add(BufferUse{Block: "HCA requester READ bytes received (hca_requester)", Entries: qps * ReqOutDepth, Width: 32, ArraysPort: 1, Ports: 1,
		Note: "beside each outstanding message, a READ's response bytes taken in sequence (the model's readGot) or a SEND's or WRITE's packets acknowledged (acked); valid and done bits in flops"})
	add(BufferUse{Block: "HCA requester message contexts (sync_fifo)", Entries: ReqMsgDepth, Width: p.QPNW + 1, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("the context index of %d messages between dec_* and the path's output and whether each is a resend, for the packet queue's beats (the purge)", ReqMsgDepth)})
	// hca_rx_ack (in hca_transport): READ responses' and RDMA WRITE
	// requests' payloads, each block tagged with its consumer.
	add(BufferUse{Block: "HCA receive payload FIFO (sync_fifo in hca_rx_ack)", Entries: RxPayBlocks, Width: BlockBytes*8 + 1, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("READ responses' and RDMA WRITE requests' payloads realigned to 64-byte blocks, %d blocks (two packets at MTU 4096), and a bit a block naming its consumer (the requester or the responder), until written to wr0 or dropped", RxPayBlocks)})
	// Gather lists: the parser keeps a WQE's blocks (its data segments
	// past the first 112 bytes); the requester keeps each sent SEND's or
	// WRITE's list beside its ring entry ({length, address} an element,
	// ReqSGLSlots an entry), the list's length, and the element queue
	// between the walk and the packer.
	add(BufferUse{Block: "HCA WQE parser blocks (hca_wqe_parse)", Entries: 16, Width: BlockBytes * 8, ArraysPort: 1, Ports: 1,
		Note: "a WQE's WQEBBs (up to 16), for its data segments on sge_*"})
	add(BufferUse{Block: "HCA requester gather lists (hca_requester)", Entries: qps * ReqOutDepth * ReqSGLSlots, Width: 32 + 64, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("beside each outstanding message, its gather list, %d elements of {length, address} (MAX_SGE = hca.MaxSendSGE = 30 used), for its sends and resends", ReqSGLSlots)})
	add(BufferUse{Block: "HCA requester gather list lengths (hca_requester)", Entries: qps * ReqOutDepth, Width: 6, ArraysPort: 1, Ports: 1,
		Note: "beside each outstanding message, its list's elements"})
	add(BufferUse{Block: "HCA requester element queue (sync_fifo)", Entries: ReqElDepth, Width: 41, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("{message's last, first lane, end lane, blocks} of %d elements whose reads are issued, for the packer", ReqElDepth)})
	// Inline data: beside each outstanding message the first WQEBBs of an
	// inline WQE (every inline segment MAX_INLINE allows lies in them),
	// copied whole from the staging register (flops) at the take, and
	// {inline, the data's offset}: the model's sendMsg.inline.
	ilb := ReqInlineBlocks(p.MaxInline)
	add(BufferUse{Block: "HCA requester inline copies (hca_requester)", Entries: qps * ReqOutDepth, Width: ilb * BlockBytes * 8, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("beside each outstanding message, an inline WQE's first %d WQEBBs (hca.max_inline_bytes = %d from WQE byte 20 or 36), for its send and resends", ilb, p.MaxInline)})
	add(BufferUse{Block: "HCA requester inline offsets (hca_requester)", Entries: qps * ReqOutDepth, Width: 8, ArraysPort: 1, Ports: 1,
		Note: "beside each outstanding message, {inline, the data's byte offset in its WQE}"})
	// hca_rq (in hca_top): the receive WQEs on chip in 16-byte segments
	// of {length, L_Key, address}, per QP the window (4 x
	// hca.wqe_prefetch_depth segments) and, with strides of more than one
	// segment (MAX_RSGE > 1), the largest WQE once more (the one taken
	// last, whose elements a SEND scatters into): 2^SLOT_W slots,
	// SLOT_W = clog2(max(window, stride) + stride) (rqSlots); its reads in
	// flight ({QP, first lane, segments}); and rd0's order queue in
	// hca_rd_merge ({client, blocks} of every read the send and receive
	// WQE fetches can have in flight).
	win := 4 * p.WQEPrefetch
	rstride := rqStride(p.MaxRSGE)
	slots := rqSlots(win, rstride)
	add(BufferUse{Block: "HCA receive WQE store (hca_rq)", Entries: qps * slots, Width: 128, ArraysPort: 1, Ports: 1,
		Note: fmt.Sprintf("per RQ context (%d), %d segment slots (4 x hca.wqe_prefetch_depth = %d segments held and a WQE of up to MAX_RSGE = %d elements, a stride of %d, to a power of two) of {length, L_Key, address}, four banks by slot mod 4", qps, slots, win, p.MaxRSGE, rstride)})
	add(BufferUse{Block: "HCA receive WQE reads in flight (sync_fifo in hca_rq)", Entries: qps * p.WQEPrefetch, Width: p.QPNW + 2 + bits.Len(uint(max(win, rstride))), ArraysPort: 1, Ports: 1,
		Note: "{QP, first segment's lane, segments} of each read host memory has yet to return"})
	add(BufferUse{Block: "HCA rd0 order queue (sync_fifo in hca_rd_merge)", Entries: 2 * qps * p.WQEPrefetch, Width: 12, ArraysPort: 1, Ports: 1,
		Note: "{client, blocks} of every read the send and receive WQE fetches can have in flight"})
	if !synth {
		return r, nil
	}
	perPortVL := p.Ports*p.VLs + p.VLs // switch ports + the HCA port
	uses := []CellUse{
		{Module: "sync_fifo", Params: []Param{{"WIDTH", entryW}, {"DEPTH", p.BufDepth}}, Role: "switch VL buffer", Instances: p.Ports * p.VLs},
		{Module: "sync_fifo", Params: []Param{{"WIDTH", entryW}, {"DEPTH", p.HCABufDepth}}, Role: "HCA VL buffer", Instances: p.VLs},
		{Module: "rr_arbiter", Params: []Param{{"N", p.Ports}}, Role: "allocator: grant per output, accept per input", Instances: 2 * p.Ports},
		// Switch port: route select and the allocator's input-VL select;
		// HCA port: VL select. (Flow-control packets: fc_scheduler.)
		{Module: "rr_arbiter", Params: []Param{{"N", p.VLs}}, Role: "VL selects: 2 per switch port, 1 HCA", Instances: 2*p.Ports + 1},
		{Module: "fc_scheduler", Params: []Param{{"VLS", p.VLs}, {"VL_W", p.VLW}, {"REFRESH_CYCLES", p.SwFCRefreshCycles}, {"MIN_CYCLES", p.SwFCMinCycles}},
			Role: "switch flow-control packets, one per port", Instances: p.Ports},
		{Module: "fc_scheduler", Params: []Param{{"VLS", p.VLs}, {"VL_W", p.VLW}, {"REFRESH_CYCLES", p.HCAFCRefreshCycles}, {"MIN_CYCLES", p.HCAFCMinCycles}},
			Role: "HCA flow-control packets", Instances: 1},
		{Module: "credit_sender", Params: []Param{{"INIT_CREDITS", p.PeerDepth}}, Role: "per port per VL", Instances: perPortVL},
		{Module: "credit_receiver", Params: []Param{{"CAPACITY", p.BufDepth}}, Role: "switch, per port per VL", Instances: p.Ports * p.VLs},
		{Module: "credit_receiver", Params: []Param{{"CAPACITY", p.HCABufDepth}}, Role: "HCA, per VL", Instances: p.VLs},
		{Module: "sw_route_lookup", Params: []Param{{"PORTS", p.Ports}, {"PORT_W", p.PortW}, {"LFT_TOP", p.LFTTop}},
			Role: "forwarding table, one per input", Instances: p.Ports},
		{Module: "hca_key_check", Params: []Param{{"TAG_W", 24}, {"CACHE_ENTRIES", p.KeyCache}}, Role: "HCA key check, MPT cache tags and ages in flops", Instances: 1},
		{Module: "hca_doorbell", Role: "HCA send doorbell decode", Instances: 1},
		{Module: "hca_wqe_fetch", Params: []Param{{"QPN_W", p.QPNW}, {"WQE_PREFETCH_DEPTH", p.WQEPrefetch}},
			Role: "HCA WQE fetch: SQ contexts in flops, reads (parser apart)", Instances: 1},
		{Module: "hca_wqe_parse", Role: "HCA send WQE parse (in hca_wqe_fetch)", Instances: 1},
		{Module: "hca_rq", Params: []Param{{"QPN_W", p.QPNW}, {"WQE_PREFETCH_DEPTH", p.WQEPrefetch}, {"MAX_RSGE", p.MaxRSGE}},
			Role: "HCA receive queues: RQ contexts in flops, prefetch reads, the WQE store", Instances: 1},
		{Module: "hca_rd_merge", Params: []Param{{"DEPTH", 2 * qps * p.WQEPrefetch}}, Role: "HCA rd0 shared by the send and receive WQE fetches", Instances: 1},
		{Module: "hca_cqe_writer", Params: []Param{{"CQN_W", p.CQNW}}, Role: "HCA CQE writer, CQ contexts in flops", Instances: 1},
		{Module: "hca_dma_engine", Params: []Param{{"OUTSTANDING", p.ReadTags}, {"MRRS", p.MRRS}, {"MPS", p.MPS}, {"TAG_W", p.TagW}},
			Role: "HCA DMA engine: splitters, tag search; tables in memories", Instances: 1},
		// In ib_link: the VCRC of each side (transmit: written; receive:
		// checked) and the flow-control codec, per switch port and the HCA's.
		{Module: "ib_vcrc", Role: "link VCRC (transmit and receive), two per port", Instances: 2 * (p.Ports + 1)},
		{Module: "ib_fc_codec", Role: "link flow-control packets, one per port", Instances: p.Ports + 1},
		// hca_transport's transmit path (hca_requester's hca_tx_path).
		{Module: "hca_tx_packetizer", Role: "HCA requester packet headers (in hca_tx_path)", Instances: 1},
		{Module: "hca_tx_assemble", Role: "HCA packet assembly: headers + payload (the requester's in hca_tx_path, the READ responses' in hca_ack_tx)", Instances: 2},
		{Module: "ib_icrc", Role: "HCA ICRC: transmit (in hca_tx_path, in hca_ack_tx) and receive check (in hca_rx_ack)", Instances: 3},
		// The three above chained: its own logic only, the blocks black
		// boxes, so they are not counted twice.
		{Module: "hca_tx_path", Role: "HCA requester transmit path: the three above wired (blocks apart)", Instances: 1},
		// hca_transport's requester: contexts, reads, queues; hca_tx_path a
		// black box (its line above).
		{Module: "hca_requester", Params: []Param{{"QPN_W", p.QPNW}, {"VLS", p.VLs}, {"VL_W", p.VLW}, {"CQN_W", p.CQNW},
			{"RETRY_CNT", p.RetryCnt}, {"RNR_RETRY", p.RNRRetry}, {"RNR_TICK", p.RNRTick},
			{"ACK_TICK", p.ACKTick}, {"RETRY_TIMEOUT", p.RetryTimeout}, {"MAX_INLINE", p.MaxInline}, {"MAX_RD_ATOMIC", p.RdRes}},
			Role: "HCA requester: QP contexts, payload reads, packet queue, completions, go-back-N resends (path apart)", Instances: 1},
		// hca_transport's receive side: received packets checked (ICRC,
		// length, DLID, TVer, P_Key) and their headers decoded, ACKs and
		// NAKs into the requester, the rest counted and dropped; its
		// ib_icrc a black box (the line above).
		{Module: "hca_rx_ack", Role: "HCA receive: checks, ACK/NAK, response and RDMA WRITE decode into the requester and the responder, drop counters (ICRC apart)", Instances: 1},
		// hca_transport's responder for RDMA WRITE and the arbiters it
		// shares hca_key_check and wr0 through with the requester.
		{Module: "hca_responder", Params: []Param{{"QPN_W", p.QPNW}, {"ACK_COALESCE", p.AckCoalesce}, {"RD_RES", p.RdRes}},
			Role: "HCA responder for RDMA WRITE and READ: contexts, PSN checks, R_Key checks, payload writes, READ resources, ACKs", Instances: 1},
		{Module: "hca_share_arb", Role: "HCA key-check, wr0 and rd1 arbiters between the requester and the responder", Instances: 1},
		{Module: "hca_cpl_arb", Params: []Param{{"QPN_W", p.QPNW}, {"CQN_W", p.CQNW}},
			Role: "HCA completions: the requester's and the responder's into the CQE writer, round robin; receive CQ per QP in flops", Instances: 1},
		{Module: "hca_ack_tx", Params: []Param{{"QPN_W", p.QPNW}, {"VLS", p.VLs}, {"VL_W", p.VLW}},
			Role: "HCA responder's ACK and READ response packets: path contexts, headers, payload reads and buffer, the response queue, the transmit port shared with the requester (ICRC and assembler apart)", Instances: 1},
	}
	if p.VLs > 1 {
		// With one data VL ib_tx_vl_port builds no VL arbiter (VL 0 goes
		// whenever ready).
		uses = slices.Insert(uses, 4, CellUse{Module: "vl_arbiter", Params: []Param{{"HIGH_ENTRIES", p.VLArbEntries}, {"LOW_ENTRIES", p.VLArbEntries}},
			Role: "output VL arbiter, one per port", Instances: p.Ports + 1})
	}
	dir, err := os.MkdirTemp("", "hcasim-yosys-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, f := range PrimitiveFiles {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(PrimitiveSource(f)), 0o644); err != nil {
			return nil, err
		}
	}
	// Identical (module, params) pairs are synthesised once.
	type result struct {
		cells, flops, mems int
		err                error
	}
	results := map[string]*result{}
	var keys []string
	for _, u := range uses {
		k := synthKey(u.Module, u.Params)
		if results[k] == nil {
			results[k] = &result{}
			keys = append(keys, k)
		}
	}
	byKey := map[string]CellUse{}
	for _, u := range uses {
		byKey[synthKey(u.Module, u.Params)] = u
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			u := byKey[k]
			res := results[k]
			res.cells, res.flops, res.mems, res.err = synthesized(ctx, dir, fmt.Sprintf("stat%d.txt", i), u.Module, u.Params)
		}()
	}
	wg.Wait()
	for _, k := range keys {
		if err := results[k].err; err != nil {
			return nil, err
		}
	}
	for _, u := range uses {
		res := results[synthKey(u.Module, u.Params)]
		u.Cells, u.Flops, u.Memories = res.cells, res.flops, res.mems
		r.Cells = append(r.Cells, u)
	}
	return r, nil
}

// hca_requester's fixed sizes (its parameters' defaults, which
// hca_transport keeps): the payload buffer's blocks, the start queue's
// messages, the packet queue's beats, the messages outstanding per
// context (OQ_DEPTH) and the bits of one: READ or atomic 1, signaled 1,
// opcode 3, index 16, length 32, first PSN 24 (a NAK's PSN is found in
// the ring by it), last PSN 24.
const (
	// RxPayBlocks is hca_rx_ack's payload FIFO (PD_DEPTH): two READ
	// responses' payloads at MTU 4096 (64 blocks each), the one the
	// requester is judging and the next one arriving.
	RxPayBlocks  = 128
	ReqPayBlocks = 128
	ReqMsgDepth  = 4
	ReqPktBlocks = 130
	ReqOutDepth  = 8
	ReqSGLSlots  = 32 // gather list elements kept per outstanding message (a power of two >= MAX_SGE)
	ReqElDepth   = 4  // hca_requester's EL_DEPTH
	ReqOutBits   = 1 + 1 + 3 + 16 + 32 + 24 + 24
	// ReqWQEBits is a resend copy: remote address 64, R_Key 32, immediate
	// 32, swap/add 64, compare 64, local address 64 (the model keeps the
	// WQE in its sendMsg).
	ReqWQEBits = 64 + 32 + 32 + 64 + 64 + 64
)

// ReqInlineBlocks is hca_requester's IL_BLOCKS for MAX_INLINE maxInline:
// the WQEBBs from a WQE's start through its last inline byte when the data
// starts latest, an RC WRITE's at byte 36 (ctrl 16, raddr 16, the inline
// segment's byte count 4), at most a WQE's 16.
func ReqInlineBlocks(maxInline int) int { return min(16, (36+maxInline+BlockBytes-1)/BlockBytes) }

// reqCtxBits is one requester QP context in memory: QPN 24, DLID 16, SLID
// 16, SL 4, VL vlW, remote QPN 24, next PSN 24, MTU code 3, send CQ cqnW.
func reqCtxBits(vlW, cqnW int) int { return 24 + 16 + 16 + 4 + vlW + 24 + 24 + 3 + cqnW }

func synthKey(module string, params []Param) string {
	var b strings.Builder
	b.WriteString(module)
	for _, p := range params {
		fmt.Fprintf(&b, " %s=%d", p.Name, p.Value)
	}
	return b.String()
}

// synthesis is one primitive's Yosys statistics, kept for the process.
type synthesis struct {
	mu                 sync.Mutex // held while Yosys runs, so a key is synthesised once
	done               bool
	cells, flops, mems int
}

// syntheses holds every successful synthesis of the process by synthKey.
// The key fixes the result: the sources are the embedded primitives and
// the script is built from the module and its parameters alone. The CLI
// makes one report per process, so this serves callers that make several
// (the tests: TestCLI's report and TestReportYosys synthesise the same
// ib_vcrc, hca_cqe_writer, hca_wqe_fetch, ... once, not twice). A failure
// is not kept: the next report tries again.
var syntheses sync.Map // synthKey -> *synthesis

// synthesized returns synthesize's result for (module, params), running
// Yosys only the first time in the process.
func synthesized(ctx context.Context, dir, statFile, module string, params []Param) (cells, flops, mems int, err error) {
	v, _ := syntheses.LoadOrStore(synthKey(module, params), &synthesis{})
	s := v.(*synthesis)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		if s.cells, s.flops, s.mems, err = synthesize(ctx, dir, statFile, module, params); err != nil {
			return 0, 0, 0, err
		}
		s.done = true
	}
	return s.cells, s.flops, s.mems, nil
}

// synthesize runs Yosys on one primitive: coarse synthesis with memories
// kept as arrays, then a generic gate mapping (techmap + abc), and reads the
// statistics. Cells exclude the memory arrays; flops count flip-flop bits.
func synthesize(ctx context.Context, dir, statFile, module string, params []Param) (cells, flops, mems int, err error) {
	var files []string
	lib := ""
	switch module {
	case "rr_arbiter", "fc_scheduler", "hca_key_check":
		files = []string{"onehot_encode.v", module + ".v"}
	case "vl_arbiter":
		files = []string{"onehot_encode.v", "vl_arb_table.v", "vl_arbiter.v"}
	case "hca_dma_engine":
		files = []string{"onehot_encode.v", "rr_arbiter.v", "hca_dma_engine.v"}
	case "hca_rq":
		files = []string{"sync_fifo.v", "onehot_encode.v", "rr_arbiter.v", "hca_rq.v"}
	case "hca_rd_merge":
		files = []string{"sync_fifo.v", "hca_rd_merge.v"}
	case "hca_share_arb":
		// Its rd1 arbiter is an hca_rd_merge (DEPTH 16), counted here.
		files = []string{"sync_fifo.v", "hca_rd_merge.v", "hca_share_arb.v"}
	case "hca_wqe_fetch":
		files = []string{"sync_fifo.v", "onehot_encode.v", "rr_arbiter.v", "hca_wqe_fetch.v"}
		// Its hca_wqe_parse has a line of its own: here a black box (one
		// cell, no flops), so the parser is not counted twice.
		lib = "read_verilog -lib hca_wqe_parse.v; "
	case "hca_requester":
		// Its hca_tx_path (and the three blocks in it) have lines of
		// their own: a black box here.
		files = []string{"sync_fifo.v", "hca_requester.v"}
		lib = "read_verilog -lib hca_tx_path.v; "
	case "hca_rx_ack":
		// Its ib_icrc has a line of its own: a black box here.
		files = []string{"sync_fifo.v", module + ".v"}
		lib = "read_verilog -lib ib_icrc.v; "
	case "hca_ack_tx":
		// Its ib_icrc and hca_tx_assemble have lines of their own: black
		// boxes here.
		files = []string{"sync_fifo.v", module + ".v"}
		lib = "read_verilog -lib ib_icrc.v hca_tx_assemble.v; "
	case "hca_tx_path":
		// Its three blocks have lines of their own: black boxes here (a
		// cell each), so the line is the wiring's own logic.
		files = []string{"hca_tx_path.v"}
		lib = "read_verilog -lib hca_tx_packetizer.v hca_tx_assemble.v ib_icrc.v; "
	default:
		files = []string{module + ".v"}
	}
	var chparam strings.Builder
	for _, p := range params {
		fmt.Fprintf(&chparam, " -set %s %d", p.Name, p.Value)
	}
	script := fmt.Sprintf("%sread_verilog %s; chparam%s %s; synth -top %s -flatten -run begin:fine; "+
		"opt -fast -full; techmap; opt -fast; abc -fast; opt -fast; tee -q -o %s stat",
		lib, strings.Join(files, " "), chparam.String(), module, module, statFile)
	if _, err := runTool(ctx, dir, "yosys", "-q", "-p", script); err != nil {
		return 0, 0, 0, err
	}
	f, err := os.Open(filepath.Join(dir, statFile))
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	return parseYosysStat(f)
}

var (
	statCells = regexp.MustCompile(`^\s*Number of cells:\s+(\d+)`)
	statCell  = regexp.MustCompile(`^\s+(\$\S+)\s+(\d+)$`)
)

// parseYosysStat reads `stat` output of a flattened design: the total cell
// count, the flip-flop cells (gate-level $_DFF*, $_SDFF*, $_ALDFF*, $_DLATCH*
// are one bit each) and the memory arrays ($mem, $mem_v2), which it takes out
// of the cell count.
func parseYosysStat(r io.Reader) (cells, flops, mems int, err error) {
	sc := bufio.NewScanner(r)
	found := false
	for sc.Scan() {
		line := sc.Text()
		if m := statCells.FindStringSubmatch(line); m != nil {
			cells, _ = strconv.Atoi(m[1])
			found = true
			continue
		}
		m := statCell.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		switch t := m[1]; {
		case strings.HasPrefix(t, "$_DFF"), strings.HasPrefix(t, "$_SDFF"), strings.HasPrefix(t, "$_ALDFF"), strings.HasPrefix(t, "$_DLATCH"):
			flops += n
		case t == "$mem" || t == "$mem_v2":
			mems += n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, err
	}
	if !found {
		return 0, 0, 0, fmt.Errorf("yosys stat: no \"Number of cells\" line")
	}
	return cells - mems, flops, mems, nil
}

// WriteText prints the report as aligned tables.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	d := r.Design
	fmt.Fprintf(w, "hcasim rtl resource report for config %q\n", d.Name)
	fmt.Fprintf(w, "switch radix %d, %d data VLs, MTU %d, %s %dx\n\n", d.Radix, d.VLs, d.MTU, strings.ToUpper(r.Params.Generation), d.LinkWidth)
	fmt.Fprintln(w, "Buffer SRAM")
	fmt.Fprintln(tw, "block\tentries\twidth\tarrays/port\tbits/port\tports\ttotal bits\tKiB total\t")
	total := 0
	for _, b := range r.Buffers {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t\n", b.Block, b.Entries, b.Width, b.ArraysPort, b.BitsPerPort, b.Ports, b.TotalBits, float64(b.TotalBits)/8/1024)
		total += b.TotalBits
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t\t%d\t%.1f\t\n", total, float64(total)/8/1024)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range r.Buffers {
		fmt.Fprintf(w, "  %s: %s\n", b.Block, b.Note)
	}
	if len(r.Cells) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nPrimitives (Yosys generic gates; memory arrays counted above, not here)")
	fmt.Fprintln(tw, "module\tparameters\trole\tcells\tflops\tinstances\tcells total\tflops total\t")
	var cells, flops int
	for _, c := range r.Cells {
		var ps []string
		for _, p := range c.Params {
			ps = append(ps, fmt.Sprintf("%s=%d", p.Name, p.Value))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", c.Module, strings.Join(ps, " "), c.Role, c.Cells, c.Flops, c.Instances, c.Cells*c.Instances, c.Flops*c.Instances)
		cells += c.Cells * c.Instances
		flops += c.Flops * c.Instances
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t\t%d\t%d\t\n", cells, flops)
	return tw.Flush()
}

// rqStride is hca_rq's RSTRIDE: the largest receive stride in 16-byte
// segments, MAX_RSGE rounded up to a power of two (1 << $clog2(MAX_RSGE)).
func rqStride(maxRSGE int) int { return 1 << bits.Len(uint(max(maxRSGE, 1)-1)) }

// rqSlots is 2^SLOT_W, hca_rq's segment slots per QP: the window of win
// segments and, above a stride of one, one largest WQE more (the one taken
// last), to a power of two: $clog2(max(WIN, RSTRIDE) + RSTRIDE), or
// $clog2(WIN) at RSTRIDE 1.
func rqSlots(win, rstride int) int {
	n := win
	if rstride > 1 {
		n = max(win, rstride) + rstride
	}
	return 1 << bits.Len(uint(n-1))
}
