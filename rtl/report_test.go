package rtl

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/hca"
)

var fmtSscanf = fmt.Sscanf

func TestReportBuffers(t *testing.T) {
	d := designByKey(t, "edr")
	r, err := NewReport(context.Background(), d, false)
	require.NoError(t, err)
	require.Len(t, r.Buffers, 27)
	// Switch: 16384 B / 64 = 256 entries of 512 data + 2 (sop/eop) bits, 8 VLs:
	// 256 * 514 * 8 = 1052672 bits per port, times 36 ports.
	sw := r.Buffers[0]
	assert.Equal(t, 256*514*8, sw.BitsPerPort)
	assert.Equal(t, 256*514*8*36, sw.TotalBits)
	// The data part alone is the configured bytes: 16384 * 8 bits per VL.
	assert.Equal(t, 16384*8, sw.Entries*(sw.Width-2))
	// LFT: 0xC000 LIDs * 7 bits per input: a route-valid bit and 6 port
	// bits (36 ports need 6 select bits).
	assert.Equal(t, 0xC000*(1+6), r.Buffers[1].BitsPerPort)
	// HCA: 65536 / 64 = 1024 entries * 514 bits * 8 VLs, one port.
	assert.Equal(t, 1024*514*8, r.Buffers[2].TotalBits)
	// hca_wqe_fetch's block buffers: one per SQ context (QPN_W = 3: 8), each
	// hca.wqe_prefetch_depth (the default, 8) WQEBBs of 512 bits and the
	// read's n, clog2(8 + 1) = 4 bits.
	assert.Equal(t, 8*8*(512+4), r.Buffers[3].TotalBits)
	// Its reads in flight: at most 8 per QP, {QP 3 bits, n 4 bits}.
	assert.Equal(t, 8*8*(3+4), r.Buffers[4].TotalBits)
	// hca_dma_engine's reorder rings: the HCA defaults, 64 tags x MRRS 512
	// / 64 = 8 blocks = 512 blocks (a power of two) of 512 bits, two rings.
	assert.Equal(t, 2*512*512, r.Buffers[5].TotalBits)
	// Their lap bits: a bit per slot, 64 a word, so 8 words per ring,
	// cleared in 8 cycles.
	assert.Equal(t, 8, r.Buffers[6].Entries)
	assert.Equal(t, 2*512, r.Buffers[6].TotalBits)
	// The tag table: 64 entries of client 1 + ring count 10 (slot 9, lap
	// 1) + beats left 4 (0..8).
	assert.Equal(t, 64*(1+10+4), r.Buffers[7].TotalBits)
	// hca_key_check's MPT cache: hca.key_cache_entries (the default, 256)
	// entries of 256 bits.
	assert.Equal(t, 256*256, r.Buffers[8].TotalBits)
	// hca_requester: 8 QP contexts (QPN_W 3) of QPN 24 + DLID 16 + SLID 16
	// + SL 4 + VL 3 (8 VLs) + remote QPN 24 + PSN 24 + MTU code 3 + send
	// CQ 4 (CQN_W) = 118 bits; the payload buffer, 128 blocks of 512 bits;
	// the start queue, 4 messages of {blocks 27, start 6}; the packet
	// queue, 130 beats of 514 + the context 3 + the resend bit; the
	// outstanding messages, 8 a context (OQ_DEPTH, as the file says) of
	// READ or atomic 1 + signaled 1 + opcode 3 + index 16 + length 32 +
	// first PSN 24 + last PSN 24 = 101 bits; beside each its resend copy,
	// remote address 64 + R_Key 32 + immediate 32 + swap/add 64 + compare
	// 64 + local address 64 = 320 bits; beside each a READ's bytes
	// received, 32 bits (a WQE's length is 32 bits); the message contexts,
	// 4 of 3 bits and the resend bit.
	assert.Equal(t, 8*118, r.Buffers[9].TotalBits)
	assert.Equal(t, 128*512, r.Buffers[10].TotalBits)
	assert.Equal(t, 4*33, r.Buffers[11].TotalBits)
	assert.Equal(t, 130*518, r.Buffers[12].TotalBits)
	assert.Equal(t, 8*8*101, r.Buffers[13].TotalBits)
	assert.Equal(t, 8*8*320, r.Buffers[14].TotalBits)
	assert.Equal(t, 8*8*32, r.Buffers[15].TotalBits)
	assert.Equal(t, 4*4, r.Buffers[16].TotalBits)
	// hca_rx_ack's payload FIFO: RxPayBlocks (128: two READ responses or
	// WRITE requests of MTU 4096, 64 blocks each) blocks of 512 bits and
	// the bit naming the block's consumer (requester or responder).
	assert.Equal(t, 2*4096/64*(512+1), r.Buffers[17].TotalBits)
	// Gather lists: the parser's 16 blocks of 512 bits; per outstanding
	// message (8 contexts x 8) 32 elements of length 32 + address 64 and
	// the list's length, 6 bits (up to 62 segments); the element queue, 4
	// of {last 1, first lane 6, end lane 7, blocks 27}.
	assert.Equal(t, 16*512, r.Buffers[18].TotalBits)
	assert.Equal(t, 8*8*32*96, r.Buffers[19].TotalBits)
	assert.Equal(t, 8*8*6, r.Buffers[20].TotalBits)
	assert.Equal(t, 4*41, r.Buffers[21].TotalBits)
	// Inline data (MAX_INLINE 236, the default): an RC WRITE's inline
	// bytes start at WQE byte 36 (ctrl 16, raddr 16, byte count 4), so
	// 236 of them end at byte 271, in WQEBB 4: 5 blocks of 512 bits per
	// outstanding message (8 contexts x 8), and {inline 1, offset 7}.
	assert.Equal(t, 8*8*5*512, r.Buffers[22].TotalBits)
	assert.Equal(t, 8*8*8, r.Buffers[23].TotalBits)
	// hca_rq: 8 RQ contexts, MAX_RSGE 32 (hca.MaxRecvSGE: a stride of up
	// to 32 segments), each holding a window of 4 x 8 = 32 segments and
	// the WQE last taken, up to 32 segments more: 64 slots (a power of two
	// already) of length 32 + L_Key 32 + address 64 bits; its reads in
	// flight, 8 a QP, {QP 3, lane 2, segments clog2(max(32, 32) + 1) = 6};
	// rd0's order queue, every read both fetches can have in flight (2 x 8
	// x 8) of {client 1, blocks 11}.
	assert.Equal(t, 8*64*128, r.Buffers[24].TotalBits)
	assert.Equal(t, 8*8*(3+2+6), r.Buffers[25].TotalBits)
	assert.Equal(t, 2*8*8*12, r.Buffers[26].TotalBits)
	assert.Contains(t, PrimitiveSource("hca_rq.v"), "parameter integer WIN                = 4 * WQE_PREFETCH_DEPTH,")
	assert.Contains(t, PrimitiveSource("hca_rq.v"), "localparam integer     READS  = QPS * WQE_PREFETCH_DEPTH;")
	assert.Contains(t, PrimitiveSource("hca_rd_merge.v"), "sync_fifo #(.WIDTH(12), .DEPTH(DEPTH)) u_order (")
	assert.Contains(t, PrimitiveSource("hca_requester.v"), "localparam integer IL_B0     = (36 + MAX_INLINE + 63) / 64;")
	assert.Contains(t, PrimitiveSource("hca_requester.v"), "localparam integer IL_BLOCKS = IL_B0 > 16 ? 16 : IL_B0;")
	// The widest: 988 bytes from byte 20 (a SEND's) end at byte 1007, in a WQE's 16th block.
	assert.Equal(t, 16, ReqInlineBlocks(hca.MaxInlineLimit))
	assert.Contains(t, PrimitiveSource("hca_requester.v"), fmt.Sprintf("parameter integer EL_DEPTH    = %d,", ReqElDepth))
	assert.Contains(t, PrimitiveSource("hca_requester.v"), fmt.Sprintf("reg  [95:0]      sg_mem [0:NQ*OQ_DEPTH*%d-1];", ReqSGLSlots))
	assert.Contains(t, PrimitiveSource("hca_requester.v"), fmt.Sprintf("parameter integer OQ_DEPTH    = %d,", ReqOutDepth))
	assert.Contains(t, PrimitiveSource("hca_rx_ack.v"), fmt.Sprintf("localparam integer PD_DEPTH = %d;", RxPayBlocks))
	assert.Empty(t, r.Cells)

	var out bytes.Buffer
	require.NoError(t, r.WriteText(&out))
	assert.Contains(t, out.String(), "switch input VL buffers (sync_fifo)")
	assert.Contains(t, out.String(), fmt.Sprint(256*514*8*36+0xC000*(1+6)*36+1024*514*8+8*8*(512+4)+8*8*(3+4)+2*512*512+2*512+64*(1+10+4)+256*256+8*118+128*512+4*33+130*518+8*8*101+8*8*320+8*8*32+4*4+128*513+16*512+8*8*32*96+8*8*6+4*41+8*8*5*512+8*8*8+8*64*128+8*8*11+2*8*8*12), "total bits")
}

func TestParseYosysStat(t *testing.T) {
	stat := `
=== sync_fifo ===

   Number of wires:                115
   Number of cells:                139
     $_ANDNOT_                      30
     $_DFFE_PN0P_                   25
     $_SDFF_PP0_                     3
     $_XOR_                         26
     $mem_v2                         1
`
	cells, flops, mems, err := parseYosysStat(strings.NewReader(stat))
	require.NoError(t, err)
	assert.Equal(t, 138, cells, "139 cells less the memory array")
	assert.Equal(t, 25+3, flops)
	assert.Equal(t, 1, mems)
	_, _, _, err = parseYosysStat(strings.NewReader("nothing"))
	assert.Error(t, err)
}

// TestReportYosys synthesises the primitives at the parameters of a one-VL
// radix-36 design (one-entry VL arbitration tables keep Yosys fast) and
// checks the flop counts that follow from the RTL registers.
func TestReportYosys(t *testing.T) {
	t.Parallel()
	needTool(t, "yosys")
	d := designByKey(t, "r36v1")
	r, err := NewReport(context.Background(), d, true)
	require.NoError(t, err)
	p := d.Params()
	flops := map[string]int{}
	for _, c := range r.Cells {
		if c.Module == "rr_arbiter" && c.Params[0].Value == 1 {
			// One requester: grant = req, the pointer is constant 0; nothing is left.
			assert.Zero(t, c.Cells)
		} else {
			assert.Positive(t, c.Cells, "%s %v", c.Module, c.Params)
		}
		flops[synthKey(c.Module, c.Params)] = c.Flops
	}
	// sync_fifo: rd_ptr + wr_ptr (ADDR_W each) + count (CNT_W); the array is a memory.
	// 4800 B / 64 = 75 entries: ADDR_W = 7, CNT_W = clog2(76) = 7.
	assert.Equal(t, 7+7+7, flops[synthKey("sync_fifo", []Param{{"WIDTH", 514}, {"DEPTH", p.BufDepth}})])
	// rr_arbiter N=36: the pointer, 6 bits.
	assert.Equal(t, 6, flops[synthKey("rr_arbiter", []Param{{"N", 36}})])
	// fc_scheduler, one VL, 6000-cycle refresh, no minimum interval: the
	// refresh counter ($clog2(6000) = 13 bits), the VL's refresh flag and
	// the FCCL its last packet carried (12); sent and since are read by
	// nothing without an interval, so synthesis removes them.
	assert.Equal(t, 13+1+12, flops[synthKey("fc_scheduler", []Param{{"VLS", 1}, {"VL_W", 1}, {"REFRESH_CYCLES", 6000}, {"MIN_CYCLES", 0}})])
	// hca_key_check with a 4-entry MPT cache: per entry a tag (24 bits),
	// a valid bit and an age (2 bits); the check's registers, key 32, PD
	// 32, need 4, address 64, length 64, result 3, tag 24; and the five
	// states, one-hot after Yosys' FSM recoding. The entries are a memory.
	assert.Equal(t, 4*(24+1+2)+(32+32+4+64+64+3+24)+5, flops[synthKey("hca_key_check", []Param{{"TAG_W", 24}, {"CACHE_ENTRIES", 4}})])
	// credit_sender: FCTBS + FCCL, 12 bits each.
	assert.Equal(t, 24, flops[synthKey("credit_sender", []Param{{"INIT_CREDITS", p.PeerDepth}})])
	// credit_receiver: ABR + free, 12 bits each.
	assert.Equal(t, 24, flops[synthKey("credit_receiver", []Param{{"CAPACITY", p.BufDepth}})])
	// sw_route_lookup: the clear's address, clog2(0xBFFF + 1) = 16 bits, and
	// its running flag; the 49152-entry table is a memory.
	assert.Equal(t, 16+1, flops[synthKey("sw_route_lookup", []Param{{"PORTS", 36}, {"PORT_W", 6}, {"LFT_TOP", 0xBFFF}})])
	// hca_wqe_parse: the WQE's first 112 bytes (896 bits) less the 38 ctrl
	// bits the model does not read (opmod 8, DS bits 7:6, signature and
	// dci_stream_id 24, fm_ce_se but the fence mode and CQ_UPDATE 4),
	// out_valid, ud, the 4-bit beat count and the 5-bit block count: 858 +
	// 1 + 1 + 4 + 5; the
	// gather list's held flag, its 6-bit segment count and the 32-bit sum
	// of the byte counts (the 16 blocks of segments are a memory).
	assert.Equal(t, 858+1+1+4+5+1+6+32, flops[synthKey("hca_wqe_parse", nil)])
	// hca_cqe_writer, 16 CQs: each context is base 64 + log2 depth 5 + pi
	// 32 + ci 32 = 133 bits; cq_overrun 16, wr_valid 1, wr_addr 64; of the
	// 512-bit CQE only the bytes EncodeCQE fills can be nonzero: src_qp 24,
	// imm 32, byte_cnt 32, syndrome 8, sop_drop_qpn 32, wqe_counter 16,
	// op_own's opcode 4 and owner 1 = 149 bits, less the syndrome's bits 7:5
	// and 3 (no syndrome the table holds sets them: 0x01..0x16) and the
	// mlx5 opcode's bits 7:5 and 2 (0x08..0x12): 141.
	assert.Equal(t, 16*133+16+1+64+141, flops[synthKey("hca_cqe_writer", []Param{{"CQN_W", 4}})])
	// hca_doorbell: the output register, valid 1 + QPN 24 + producer 16.
	assert.Equal(t, 1+24+16, flops[synthKey("hca_doorbell", nil)])
	// hca_wqe_fetch, 8 QPs, window 8 (FLT_W = clog2(9) = 4), its parser a
	// black box: each SQ context is created 1 + QPN 24 + base 58 (bits
	// 63:6) + log2 size 4 + UD 1 + producer 16 + fetched 16 + in flight 4 =
	// 124 bits; the request register: valid 1, address 58 (bits 5:0 are
	// 0), length 10 (n * 64: bits 5:0 are 0); the blocks of the oldest
	// read returned, 4; the parser's hold: locked 1, QP 3, blocks left 5;
	// the reads-in-flight FIFO (64 entries: pointers 6 + 6, count
	// clog2(65) = 7) and the 8 block buffers' pointers and counts (3 + 3
	// + 4 each; the arrays are memories); the two arbiters' pointers, 3
	// each. The fence hold (a fenced head of a fence_busy context left
	// out of the parser's arbiter) is combinational: no flop.
	assert.Equal(t, 8*124+1+58+10+4+1+3+5+(6+6+7)+8*(3+3+4)+2*3,
		flops[synthKey("hca_wqe_fetch", []Param{{"QPN_W", 3}, {"WQE_PREFETCH_DEPTH", 8}})])
	// hca_rq, 8 QPs, a window of 32 WQEs: each RQ context is created 1 +
	// QPN 24 + base 58 (bits 63:6) + log2 size 4 + producer, fetched,
	// arrived and taken 16 each = 151 bits; the request register: valid
	// 1, address 60 (base x 64 + slot x 16: bits 3:0 are 0), length 12
	// (n[11:0] x 16: bits 3:0 are 0); the WQEs of the oldest read already returned, clog2(33) =
	// 6; the take: pending 1, QPN 24 (its context index is its low 3
	// bits), a flush take 1 (a QP in ERR); the reads-in-flight FIFO (64
	// entries: pointers 6 + 6, count 7); the fetcher's pointer 3. The four
	// banks are memories.
	// MAX_RSGE 32 (hca_top's, hca.MaxRecvSGE: strides up to 32 segments,
	// LS_W 5) adds per context the stride's log2, 3, and 5 arrived bits
	// (segments: 16 + 5), 8 x 8; and the take's walk over a WQE's rows
	// beyond the first (strides of 8, 16 and 32 segments): the row 3, the
	// elements counted 6, their bytes summed 32, the terminator seen 1,
	// the first segment's address 64 and L_Key 32 (its length is the sum's
	// start): 138. None of them is a constant at RSTRIDE 32.
	assert.Equal(t, 8*151+1+60+12+6+1+24+1+(6+6+7)+3+8*(3+5)+(3+6+32+1+64+32),
		flops[synthKey("hca_rq", []Param{{"QPN_W", 3}, {"WQE_PREFETCH_DEPTH", 8}, {"MAX_RSGE", 32}})])
	// hca_rd_merge, 128 reads in flight: the held pick, its client and the
	// last client served, 3; the head read's blocks delivered, 11; the
	// order queue's pointers 7 + 7 and count clog2(129) = 8.
	assert.Equal(t, 3+11+(7+7+8), flops[synthKey("hca_rd_merge", []Param{{"DEPTH", 128}})])
	// hca_dma_engine, 8 tags (3 index bits; the design's own choice, to
	// keep Yosys short), MRRS 512 (8 blocks a request: a count of 4
	// bits), rings of 8 x 8 = 64 blocks (6 address bits), the default MPS
	// 256 (4 blocks a TLP: a count 0..4 of mbW = 3 bits). The host write
	// register: valid 1, sop 1, last 1, address 58 (bits 5:0 are 0),
	// length mbW (n x 64, n <= 4), data 512, byte enables 64; per write client busy 1,
	// block address 58, beats left 11 (up to 1024); the open TLP: open 1,
	// client 1, beats left mbW; per read
	// client a splitter, busy 1 + byte address 64 + bytes left 17 (up to
	// 65536) + waiting for a write 1, and ring tail and head counts, 7 bits
	// each; per tag its busy bit (its client, ring count and beats left
	// are the tag table, a memory, as are the rings' lap bits); the clear's
	// running flag (a ring of 64 slots is one lap word: the word address is
	// constant 0 and synthesis removes it); the host read register: valid
	// 1, byte address 64, length 10 (1..512 bytes: bits 15:10 are 0), First
	// and Last DW BE 4 + 4, tag 3 (the tags 0..7); the
	// clients' rsp_valid, 2 (rsp_data is the rings' registered read port,
	// inside the memories); the arbiters' pointers: writes 1, reads 1,
	// tags 3.
	require.Equal(t, 256, p.MPS)
	mbW := cntWidth(p.MPS / 64)
	assert.Equal(t, (1+1+1+58+mbW+512+64)+2*(1+58+11)+(1+1+mbW)+2*(1+64+17+1)+4*7+8*1+1+(1+64+10+4+4+3)+2+(1+1+3),
		flops[synthKey("hca_dma_engine", []Param{{"OUTSTANDING", 8}, {"MRRS", 512}, {"MPS", p.MPS}, {"TAG_W", 8}})])
	// ib_vcrc: the output register, valid 1 + data 512 + sop, eop and the
	// two error flags 4; PktLen 11, the beat count 8, the CRC register 16,
	// the VCRC-seen and -bad flags 2.
	assert.Equal(t, 1+512+4+11+8+16+2, flops[synthKey("ib_vcrc", nil)])
	// ib_icrc: the output register, valid 1 + data 512 + sop, eop and the
	// two error flags 4; PktLen 11, the beat count 8, the CRC register 32,
	// the ICRC-seen and -bad flags 2.
	assert.Equal(t, 1+512+4+11+8+32+2, flops[synthKey("ib_icrc", nil)])
	// ib_fc_codec: the encoder's register, valid 1 + the packet's 48 bits
	// less Op (4 bits, always 0); the decoder's, valid 1 + Op 4 + FCTBS 12
	// + VL 4 + FCCL 12 + the LPCRC flag 1.
	assert.Equal(t, 1+44+1+4+12+4+12+1, flops[synthKey("ib_fc_codec", nil)])
	// hca_tx_assemble: the packet's fields after its beat 0 (its header
	// beat is read on pkt_hdr, not copied), H 6 + P 13 + last 1 + beat 7 +
	// busy 1; where its payload starts 6 and msg_new 1; the window, two
	// blocks 2 x 512 with their starts 2 x 6 and its count 2; the output
	// register, valid 1 + data 512 + sop and eop 2.
	assert.Equal(t, (6+13+1+7+1)+(6+1)+(2*512+2*6+2)+(1+512+2), flops[synthKey("hca_tx_assemble", nil)])
	// hca_tx_path: wiring only, no register of its own; its three blocks
	// are black boxes, one cell each, and nothing else is left.
	assert.Zero(t, flops[synthKey("hca_tx_path", nil)])
	for _, c := range r.Cells {
		if c.Module == "hca_tx_path" {
			assert.Equal(t, 3, c.Cells, "hca_tx_path: its three blocks")
		}
	}
	// hca_requester, 8 contexts (QPN_W 3), one VL (VL_W 1), its hca_tx_path
	// a black box. Flops with a reset: the contexts' valid bits 8; the
	// message register's valid 1; the read issuer (a read per packet's
	// part, its bytes exactly): the part's blocks 27, its address 64 and
	// length 13 (at most 4096), the request register's valid 1, address
	// 64 and length 13 (bits 15:13 are 0); blocks
	// reserved clog2(128 + 1) = 8; the head message's blocks taken 27; the
	// packet queue's whole packets clog2(130 + 1) = 8, sending 1, the
	// committed VL 1; the FIFOs' pointers and counts: the start queue (4)
	// 2 + 2 + 3, the payload buffer (128) 7 + 7 + 8, the packet queue
	// (130) 8 + 8 + 8. Without: the message register, opcode 3, length
	// 32, R_Key 32, immediate 32, remote address 64, swap/add 64, compare
	// 64, DLID 16, SLID 16, SL 4, VL 1, remote QPN 24, PSN 24, MTU 3, AckReq
	// every 17, less the fields loaded from a context and read by nothing
	// else (DLID, SLID, SL, VL, remote QPN: 61 bits), which Yosys makes the
	// context memories' registered read ports. The completions: with a
	// reset, the contexts' ERR bits 8, the outstanding rings' head and
	// tail pointers 8 x 2 x (3 + 1), the engine's busy, ACK-walk and
	// NAK-flush bits and its context 3, cpl_valid; without, the ACK's PSN
	// 24, whether it is an ACK 1 and a NAK that fails a message 1, that
	// NAK's status 2 (9, 10 or 11: bits 1:0 vary, the others constant),
	// the decode completion's flush bit, opcode 3, index 16 and length 32,
	// and the output register's WR opcode 3, counter 16 and byte count 32
	// and status 4 (its values 0, 2, 5, 9, 10 and 11: bits 7:4 are 0), its
	// CQN and QPN the context memories' registered read ports.
	// The purge, with a reset: per context the messages in flight, those
	// to drop and those not yet sent, 8 x 3 x clog2(4 + 130 + 2) = 8 x 3 x
	// 8, the dropping bit and the last-packet bits of the path's and the
	// queue head's packet 2, the message contexts' queue (4) 2 + 2 + 3,
	// and the ACK walk's count of messages sent 8.
	// The retries (r36v1: RETRY_CNT 3, RNR_RETRY 2), with a reset: per
	// context the resend pending 1, its ring pointer 3 + 1, the packets
	// to skip 24, the RNR wait 40, retry_cnt and rnr_retry left 3 + 3
	// (at 7 they never move and are constants), started 1: 8 x 76; the
	// walk's progress bit and the flush's first-completion bit 2.
	// Without: the NAK's kind 2 and RNR timer code 5, the head-failure
	// bit 1, one more bit of the failure status (12 and 13: bit 2 now
	// varies), the message register's packets to skip 24; and the 61
	// context bits above are flops again: the message register loads them
	// from two contexts (dec_*'s and the resend's), so they no longer fold
	// into the context memories' read ports.
	// The local ACK timer (r36v1: RETRY_TIMEOUT 14, ACK_TICK 4096), with a
	// reset: per context the timer's running bit 1 and its count,
	// clog2(4096 + 1) + 14 = 27 bits (the load 4096 x 2^14 = 2^26 needs
	// 27): 8 x 28; without, the job's timeout bit 1. (The acknowledged
	// packets of each message are in the READs' bytes memory, not 24
	// flops per context: below.)
	// The count of ACKs for a QPN no context holds (no_qp), 16 bits with
	// a reset.
	// The responses: with a reset, the scan's bit 1; without, the job's
	// response and READ-response bits 2, the scan's ring pointer 3 + 1
	// and its match bit 1. Their payload's drain: with a reset, the
	// job's blocks-to-judge bit 1 and the drain's blocks left 7; without,
	// the job's block count 7, the write bit 1, the write's address 64
	// and its length 7 (beats x 64, at most 65: bits 5:0 and 15:13 are
	// 0). Their placement at host byte lanes: without a reset, the
	// payload's length 13 (its low 6 bits for the last byte's lane, all 13
	// added to readGot), the atomic's original value 64, the atomic and
	// first-beat bits 2, the last byte's lane 6, and the source block
	// before, rotated, 512 (a beat that takes it alone takes lane 63 too).
	// Their scatter over a list, one write per element part: with a
	// reset, the part's beats left 7, the walk's busy bit and the
	// re-rotation bit 2; without, the walk's entry 3 + 3, element 5,
	// bytes to step over 32, bytes left 13 and the next part's first
	// byte 13 (its bits above 5 count the blocks the parts took, whose
	// rest a list's end drops: ceil(first / 64)),
	// the first- and last-beat-alone bits 2, the rotation and the one
	// before 6 + 6. The element count the walk reads (oq_nsg) is that
	// memory's registered read port, no flop. The READs' bytes and the responses behind an unanswered
	// READ or atomic: with a reset, per ring entry (8 x 8) READ or atomic,
	// done and bytes-valid bits 3 x 64; without, the matched message's
	// bytes before and length 32 + 32 and whether an ACK covers it at its
	// last PSN 1. A partial acknowledgement behind the head, without a
	// reset: whether the scanned message is a SEND or WRITE the ACK or NAK
	// acknowledges more of 1, and how many packets 24.
	// The gather (hca.md "Scatter/gather lists"), with a reset: the
	// segment intake's count of segments taken 6, its failed-check bit
	// and its check-pending bit 2; the walk's busy bit 1, its entry 3 + 3, element 5,
	// element count 6, bytes to step over 32 and to gather 32, the
	// packet's bytes left 13 and the MTU in bytes 6 (128 << code: bits
	// 12:7; bits 6:0 are 0); the
	// packer's blocks taken of its element 27, its held bytes 512, their
	// count 6 and the spill bit 1; the element queue's (4) pointers and
	// count 2 + 2 + 3. Without: the decode completion's LOC_PROT_ERR bit
	// 1.
	// Inline data (r36v1: MAX_INLINE 236, so IL_BLOCKS = ceil((36 + 236)
	// / 64) = 5): without a reset, the staging register of a WQE's first 5
	// blocks, 5 x 512; with, the count of the WQE's blocks taken on wqe_*
	// 5 and its blocks 5 (1..16), the walk's inline blocks left 5 and the
	// next one 5 (0..16), the walk's inline bit 1 and the data's offset 7.
	// The copies per ring entry and their offsets are memories.
	// The fence's state per context (fence_busy: each ring's unanswered
	// READs and atomics, and the one being taken) is combinational: no flop.
	// Memories: the 10 context fields (the PD the tenth), the outstanding messages, their
	// resend copies, the READs' bytes received, the five FIFOs (the
	// element queue the fifth), the RNR timer's table (a ROM), the gather
	// lists and their element counts.
	assert.Equal(t, (8+1+27+64+13+1+64+13+8+27+8+1+1+(2+2+3)+(7+7+8)+(8+8+8))+
		(3+32+32+32+64+64+64+16+16+4+1+24+24+3+17-61)+
		(8+8*2*4+1+1+1+3+1)+(24+1+1+2+1+3+16+32+3+16+32+4)+
		(8*3*8+1+2+(2+2+3)+8)+
		(8*(1+4+24+40+3+3+1)+2)+(2+5+1+1+24+61)+
		8*(1+27)+1+16+
		(1+2+4+1)+(1+7+7+1+64+7)+
		(13+64+2+6+512)+(7+2)+(3+3+5+32+13+13+2+6+6)+
		(3*64+32+32+1)+(1+24)+
		(6+1+1+1+3+3+5+6+32+32+13+6)+(27+512+6+1)+(2+2+3)+1+
		5*512+(5+5)+(5+5)+(1+7),
		flops[synthKey("hca_requester", []Param{{"QPN_W", 3}, {"VLS", 1}, {"VL_W", 1}, {"CQN_W", 4},
			{"RETRY_CNT", 3}, {"RNR_RETRY", 2}, {"RNR_TICK", 10000}, {"ACK_TICK", 4096}, {"RETRY_TIMEOUT", 14}, {"MAX_INLINE", 236},
			{"MAX_RD_ATOMIC", 16}})])
	// hca_rx_ack, its ib_icrc a black box (ib_icrc's line above, now two
	// instances): the ACK register, valid 1 + QPN 24 + PSN 24 + syndrome
	// 8 (loaded at the packet's first beat: no second copy for the last);
	// the seven counters, 16 bits each: the three it had (NAKs retried,
	// responses to do, not for the requester) and the four drops before
	// the decode (ICRC or length, header, P_Key, multicast); what the
	// first beat said, held to the last: raw or IBA, header bad, P_Key
	// bad, multicast, an ACKNOWLEDGE, a retried NAK, a response, 7 one-bit
	// flags; and the P_Key table, PKEY_N (4) entries of 16 bits. The
	// responses the register carries too: the opcode 8, a READ response's
	// payload bytes 13, an atomic ACK's original value 64, and the flag
	// of a global atomic ACK (its value is in its second beat) 1. The
	// payload's realigner: the previous beat 512, the offset's code 2
	// bits that Yosys's FSM pass re-encodes one-hot (4), the payload's
	// blocks 7, those pushed 7, the beat count 7, the READ-response flag
	// 1, the blocks handed on (ack_blk) 7; its FIFO's pointers, flattened
	// in: read and write 7 + 7 (RxPayBlocks = 128 entries) and count 8;
	// the tail block still to push after a packet's last beat, 1. The
	// RDMA WRITE requests for the responder: their register, valid 1 +
	// QPN 24 + PSN 24 + opcode 8 + AckReq 1 + the RETH's VA 64, R_Key 32
	// and DMA length 32 + payload bytes 13; the flags of a WRITE and of a
	// global FIRST or ONLY (its RETH ends in the second beat), 2 (the
	// FIFO's consumer bit is the WRITE flag); the payload's offset is now
	// its byte in the beat, 6 bits of which the low 2 are always 0 (20,
	// 24, 36, 40, 60, 0, 12, 16: the SENDs and WRITEs with immediate
	// added 40 and 16): 4, as the one-hot code before; and whether it
	// starts in the second beat, 1. The SENDs and WRITEs with immediate
	// (the same register: their header is a WRITE's): the ImmDt 32, and
	// the flag of a global WRITE ONLY with immediate (its ImmDt in the
	// second beat) 1. The atomics (the same register: VA and R_Key in the
	// RETH's): the AtomicETH's swap/add 64 and compare 64, and the flag of
	// a global atomic (its AtomicETH ends in the second beat) 1.
	assert.Equal(t, (1+24+24+8)+7*16+7+PKeyTableEntries*16+(8+13+64+1)+
		(512+4+7+7+7+1+7)+(7+7+8)+1+
		(1+24+24+8+1+64+32+32+13)+2+1+(32+1)+(64+64+1), flops[synthKey("hca_rx_ack", nil)])
	// hca_responder, 8 contexts (QPN_W 3), ACK_COALESCE 1: the ACK
	// register, valid 1 + QPN 24 + PSN 24 + syndrome 8 + MSN 24; the seven
	// counters, 16 bits each; four flags a context (valid, ERR, in a
	// message, NAKed), 4 x 8 (the contexts' other fields are memories:
	// QPN, expected PSN, MSN, PD, the WRITE's next byte, the coalescing
	// count, the coalesced ACK's PSN); the packet in hand, QPN 24 + PSN 24
	// + opcode 8 + AckReq 1 + VA 64 + R_Key 32 + DMA length 32 + bytes 13;
	// the ACK it owes, flag 1 + syndrome 8 + PSN 24 + MSN 24; the engine's
	// eight states, one-hot after Yosys's FSM pass, 8; the write, written
	// 1 + first beat 1 + address 64 + beats left 8 + blocks left 8 + the
	// last lane 6 + its beats 8 (wr_len's bits 13:6; the rest are 0); the
	// previous block's lanes 0..62, 63 x 8 (lane 63 is never below the
	// VA's offset, so never read from it). The READs: the output
	// register's reply fields, a READ 1 + VA 64 + length 32 + MTU code 3
	// + replay from inside 1; the reply owed, the same but the MTU (read
	// from the context when it leaves), 1 + 64 + 32 + 1; the resources'
	// valid bits, 8 contexts x RD_RES (the resources' PSNs, VA, length
	// and R_Key are memories, as the contexts' MTU code and next
	// resource); a ninth engine state (the duplicate's scan): the state,
	// 4 bits, is no longer re-encoded one-hot by Yosys's FSM pass (4, not
	// the 8 above); the scan's resource, log2 RD_RES bits, and the found
	// resource's first PSN 24. SEND and WRITE with immediate: a fifth
	// flag a context (a SEND under way), 8; the packet's ImmDt 32; the
	// receive completion owed, flag 1 + opcode 2 (1..3) + status 4 (0, 1,
	// 4, 9 or 10: bits 7:4 always 0; until the length errors' 9, bits 1
	// and 3 were both set only by 10, one flop, 3 in all) + WQE index 16
	// + byte_len 32 + immediate 32, and its
	// output register, valid 1 + QPN 24 + the same fields but the flag
	// (the new context fields, the receive WQE's address, length, L_Key
	// and index, the bytes placed, the WRITE's length and min_rnr_timer,
	// are memories). Atomics: the output register's ATOMIC ACKNOWLEDGE
	// flag 1 + original value 64, the same owed 1 + 64; the packet's
	// AtomicETH swap/add 64 + compare 64; the value written back 64; an
	// atomic flag per resource, 8 x RD_RES; the atomic's resource, the
	// index's log2(8 x RD_RES) bits (the original values are a memory).
	// The flush (branch rtlflush) adds two engine states, 16 in all:
	// Yosys's FSM pass re-encodes the state one-hot again, 16 flops for the
	// 4 (no other flop: the flushed context's QPN goes to the packet's
	// h_qpn, the completion to the rc_* register). claimRes (branch
	// rtlreqerr): a sent flag per resource, 8 x RD_RES; a reply's
	// resource index (log2 RD_RES bits: ack_res's upper bits are 0) and
	// last PSN 24 in the output register and in the reply owed, and the
	// duplicate's found resource's index (the PSN compare with fin_* is a
	// second read port of the res_last memory). Receive WQEs of several
	// elements (branch rtlrecvsgl): the part engine's rotation 6 + blocks
	// to read 8 + keep, priming, list and next-part flags 4 + the packet's
	// bytes placed 13; the packet's element count 6 and checked element
	// 5; a list flag a context, 8 (the cursor's element and offset are
	// memories).
	rw := bits.Len(uint(p.RdRes - 1))
	assert.Equal(t, (1+24+24+8+24)+7*16+4*8+(24+24+8+1+64+32+32+13)+(1+8+24+24)+16+(1+1+64+8+8+6+8)+63*8+
		(1+64+32+3+1)+(1+64+32+1)+8*p.RdRes+rw+24+
		8+32+(1+2+4+16+32+32)+(1+24+2+4+16+32+32)+
		(1+64)+(1+64)+(64+64)+64+8*p.RdRes+bits.Len(uint(8*p.RdRes-1))+
		8*p.RdRes+(rw+24)+(rw+24)+rw+
		(6+8+4+13)+(6+5)+8,
		flops[synthKey("hca_responder", []Param{{"QPN_W", 3}, {"ACK_COALESCE", p.AckCoalesce}, {"RD_RES", p.RdRes}})])
	// hca_share_arb: per arbiter of key checks and wr0 the pick held, busy,
	// the client picked and the one served last, 4 each; the wr0 arbiter's
	// beats left of the write under way, 10 (a write is at most 1023
	// blocks); the rd1 arbiter's pick held, client picked and the one
	// served last, 3, and its order queue of 16 reads (an hca_rd_merge
	// with DEPTH 16, its sync_fifo): write and read pointers 4 + 4, the
	// count 0..16 5, the head read's blocks delivered 11 (a read is at
	// most 1024 blocks; the queue's owners and block counts are a memory);
	// and a second hca_rd_merge of 16 in front of its client b, the same
	// 3 + (4 + 4 + 5 + 11), which merges hca_ack_tx's READ payload reads
	// with hca_responder's atomic reads (client c).
	assert.Equal(t, 4+4+10+2*(3+(4+4+5+11)), flops[synthKey("hca_share_arb", nil)])
	// hca_cpl_arb: the receive CQ of each QP context, 2^QPN_W x CQN_W = 8
	// x 4 (reset, so flops, as hca_cqe_writer's contexts), and the round
	// robin's side taken last, the pick held and the held side, 1 each.
	assert.Equal(t, 8*4+3, flops[synthKey("hca_cpl_arb", []Param{{"QPN_W", 3}, {"CQN_W", 4}})])
	// hca_ack_tx, its ib_icrc and hca_tx_assemble black boxes (lines of
	// their own): the READ reply under way, busy 1 + its QP's context
	// index 3 (QPN_W 3) + log2 MTU 4 + replay from inside 1 + MSN 24 +
	// responses not yet out of the assembler 24; the read sequencer, the
	// next response's VA 64, bytes left 32, responses left 24; the header
	// sequencer, PSN 24, bytes left 32, responses left 24, first 1; the
	// payload buffer's reserve, fill and read pointers 7 x 3 (128 blocks)
	// and its reserved and filled counts 8 x 2; the read being filled, its
	// blocks left 7 and start 6; the whole packets in the response queue
	// 8, whether a responder's or a requester's packet is under way 1 + 1
	// and the responder's VL 1 (VL_W 1); the response queue's pointers,
	// flattened in: read 8 + write 8 (130 entries) and count 8. The path
	// contexts, the payload buffer's blocks and tags and the queue's beats
	// are memories. The fin of a reply's last response (branch
	// rtlreqerr): armed 1, pending 1, its place in the queue 8, and the
	// QPN 24, resource 8 and last PSN 24 it gives back, less the QPN's low
	// 3 bits, loaded with the reply's context index above and merged with
	// it.
	assert.Equal(t, (1+3+4+1+24+24)+(64+32+24)+(24+32+24+1)+(7*3+8*2)+(7+6)+(8+1+1+1)+(8+8+8)+
		(1+1+8+(24-3)+8+24),
		flops[synthKey("hca_ack_tx", []Param{{"QPN_W", 3}, {"VLS", 1}, {"VL_W", 1}})])
	for _, c := range r.Cells {
		if c.Module == "ib_icrc" {
			assert.Equal(t, 3, c.Instances, "ib_icrc: transmit in hca_tx_path and hca_ack_tx, receive in hca_rx_ack")
		}
	}
	// One data VL: ib_tx_vl_port builds no vl_arbiter, so the report lists none.
	for _, c := range r.Cells {
		assert.NotEqual(t, "vl_arbiter", c.Module)
	}
	for _, c := range r.Cells {
		switch c.Module {
		case "sync_fifo", "sw_route_lookup", "hca_key_check":
			assert.Equal(t, 1, c.Memories, c.Module)
		case "hca_wqe_fetch":
			assert.Equal(t, 1+1<<qpnW, c.Memories, c.Module) // the reads in flight and a block buffer per QP
		case "hca_rq":
			assert.Equal(t, 1+4, c.Memories, c.Module) // the reads in flight and the four banks
		case "hca_rd_merge":
			assert.Equal(t, 1, c.Memories, c.Module) // the order queue
		case "hca_dma_engine":
			assert.Equal(t, 5, c.Memories, c.Module) // the two reorder rings, their lap bits, the tag table
		case "hca_requester":
			// the context fields, the outstanding messages, their copies and READ bytes, the five FIFOs, the RNR
			// table, the gather lists and their counts, the inline copies and their offsets
			assert.Equal(t, 10+1+1+1+5+1+2+2, c.Memories, c.Module)
		case "hca_wqe_parse":
			assert.Equal(t, 1, c.Memories, c.Module) // the WQE's blocks (its data segments)
		case "hca_ack_tx":
			assert.Equal(t, 5+4+1, c.Memories, c.Module) // the path contexts' DLID, SLID, SL, VL, remote QPN; the payload buffer's blocks, starts, block counts and fill-side starts; the response queue
		case "hca_responder":
			// the contexts' QPN, expected PSN, MSN, PD, next byte, coalescing count, ACK PSN; MTU code, next
			// resource; the resources' first and last PSN, VA, length, R_Key; the receive WQE's address,
			// length, L_Key, index, the bytes placed, the WRITE's length, min_rnr_timer; the atomics'
			// original values; a list's cursor, its element and the offset in it
			assert.Equal(t, 7+2+5+7+1+2, c.Memories, c.Module)
		}
	}
}
