// hca_requester: the send side of hca_transport for RC SEND, RDMA WRITE, RDMA READ requests and
// atomics: the QP contexts, the next message from the parsed WQEs, the payload reads through DMA
// client rd1 into a payload buffer, hca_tx_path on them, a packet queue that offers whole
// packets to the port (tx_*, ib_tx_vl_port's contract), and the completions (cpl_*) of the WQEs it
// takes, on the ACKs, NAKs and responses ack_* brings (hca_rx_ack, from the received packets) or at decode. Go model: hca.Requester (Enqueue: the PSNs
// a message takes; Next: its packets) with hca.Device.address's addressing and the payload
// hca.Device.schedule reads, encoded by ib.AppendWire; rtl/cosim_req_test.go runs this block (inside
// the emitted hca_transport) with ib_vcrc after tx_* and requires every packet to be the model's,
// byte for byte, and ib.ParseWire to take it, and every completion on cpl_* to be the CQE
// hca.RequesterCQE makes of the model's (hca.Requester's Enqueue, OnAck, FlushAll), in order; the
// ACKs and NAKs come as ib.AppendWire's packets on hca_transport's rx_*, through hca_rx_ack.
//
// QP contexts: 2^QPN_W in flops, indexed by a QPN's low QPN_W bits (as hca_wqe_fetch's send queue
// contexts). qp_cfg_* (the modify to RTS: the path and the send PSN) writes one, valid from the next
// cycle: the QPN, DLID, SLID, SL, VL (< VLS: the port's queue offers VL < VLS only), remote QPN, the
// next PSN and the path MTU as IBA codes it (1 256 .. 5 4096; hca_tx_packetizer's msg_mtu) and the
// QP's send CQ. A write empties the context's outstanding messages (no completions: a new QP, or the
// modify back to RTS after an error) and clears its ERR state. qp_err names the contexts in ERR
// whose failure's completions are all out (hca_responder's req_err: the QP's receive side goes to
// ERR with it and its posted receives flush, hca.Device.requesterErr). qp_cfg_ready: the write is taken only
// while the completion engine is idle, no ACK is offered (an ACK goes first) and no message of the
// context is between dec_* and tx_* (so every message a purge counts is the current QP's); a WQE of
// the context on dec_* waits in the cycle a write of it is taken. ack_req_every is
// hca.ack_req_every (1..65536), latched with each message by the packetizer.
//
// Messages: one parsed WQE at a time from dec_* (hca_wqe_fetch's order: each QP's WQEs in ring
// order; a fenced WQE of a context with a READ or atomic unanswered, fence_busy, kept back there
// while the other contexts' pass), its data segments on dec_sge_* (hca_wqe_parse's sge_*) taken before it, one a cycle, each
// element of a WQE its context can send checked first (below). dec_ready = the message
// register is empty or being taken,
// every read of the previous message has been loaded (its gather walked), no segment of the previous
// WQE is left, and the start queue has room. A WQE whose context index does not hold its
// QPN is taken and dropped (no context, no CQ to complete into). A WQE on its context with dec_err,
// opcode 7, an inline length past MAX_INLINE (hca.max_inline_bytes: the driver refuses a longer
// post) or the inline flag on a READ or atomic, or a list longer than MAX_SGE
// (30, hca.MaxSendSGE: only a DS count past the encoder's makes one) cannot be taken: once the
// completion engine is idle and no ACK is offered, its context's outstanding messages are flushed
// (WR_FLUSH_ERR each, signaled or not, oldest first), it completes with LOC_QP_OP_ERR (rxe's status
// for a WQE its requester cannot build; the model's own path for a WQE that fails at decode, a key
// error's, hca.Device.wqeReady: FlushAll, then the WQE's status) and the context goes to ERR, where
// every WQE completes with WR_FLUSH_ERR unsent (hca.Requester.Enqueue in ERR). Any other WQE is
// sent, when its context has room for one more outstanding message (OQ_DEPTH). A sent message
// takes the context's PSN as its first and moves it by the PSNs it uses
// (hca.Requester.Enqueue): max(1, ceil(length / MTU)) for a SEND, WRITE or READ (a READ's response
// packets), 1 for an atomic, mod 2^24. A READ or atomic waits on dec_* while its context has
// MAX_RD_ATOMIC (hca.max_rd_atomic) READs and atomics taken and not retired (the model's max_rd_atomic,
// hca.Requester.HasWork: below, at rda_hold); nothing else waits for an ACK.
//
// Payload reads (rd1, hca_dma_engine's client contract: any byte address, 1 byte to 64 KiB, answered
// by the 64-byte blocks its bytes lie in, each byte at its address's lane, in request order, one a
// beat, no back-pressure): the model's reads, byte for byte (hca.Device.schedule and gather: each
// packet's bytes, LocalAddr + i x MTU, min(MTU, L - i x MTU) of them, read when the packet is granted;
// for a gather list one read per part of them in an element, at the element's address plus the bytes
// of it before: sglSlice). A SEND's or WRITE's payload of L > 0 bytes is its gather list, one element
// (the single data segment) or several (hca.md "Scatter/gather lists": the message is the elements'
// concatenation). A sent SEND's or WRITE's segments are kept with its ring entry (MAX_SGE a entry,
// {length, address}), and a walk goes through them in order, a part a cycle: the part is the
// element's bytes up to the end of the current packet (g_pk bytes of it left) or of the element,
// whichever comes first, so a packet boundary inside an element cuts it in two parts and a part is
// never more than the MTU (4096 B: ceil((63 + 4096) / 64) = 65 blocks); each part is one rd1 read of
// exactly its bytes (rd_a, rd_len), loaded once the previous part's read is issued; an element of 0
// bytes reads nothing. A read is issued only when the payload buffer (PAY_BLOCKS = 128 blocks: one
// part of 65 at any lane, and more) has room for its ceil((a mod 64 + n) / 64) blocks beside every
// block already asked for and not yet taken by the packer: so a response always finds room. A
// resend from packet k walks the same list from byte k x MTU (a packet's first byte): elements
// wholly before it are stepped over, the one holding it read from there, and every packet resent is
// read again, as the model's scheduler grants it again. The packer takes the buffer's blocks with
// each part's {first lane, end lane, blocks} (a queue of EL_DEPTH parts) and packs their bytes into
// one contiguous message from lane 0, hca_tx_path's pay_* (pay_start 0): a block goes out when the
// message's bytes reach its lane 63, the message's last with its last byte (one more cycle when that
// byte spills into a block more); its blocks per message, ceil(L / 64), come from a queue of
// MSG_DEPTH messages' {blocks, start 0}, pushed when a message is taken, popped with its last block.
// A block two packets' reads share (LocalAddr mod 64 != 0) comes twice, once with each read, and the
// packer takes each packet's bytes from its own copy; packets never share a block of pay_* (the MTU
// is a multiple of 64 and the message starts at lane 0), so hca_tx_assemble keeps none.
// A READ's or atomic's segments are its scatter list, kept the same way (below, "Responses").
// Inline data (hca.Device.schedule takes an inline WQE's payload from the bytes it copied out of
// the WQE, sendMsg.inline, and reads nothing): every WQE's blocks come on wqe_* (hca_wqe_fetch forks
// them to the parser and here, so before the WQE's header on dec_*; the next WQE's first no sooner
// than the cycle that header is taken); the first IL_BLOCKS of each are kept in a staging register
// (the blocks counted from the ctrl segment's DS count), copied whole at an inline WQE's take into
// its ring entry's word of il_mem, and the walk pushes the element {length, dec_inline_off} of that
// word into the payload buffer instead of reading it through rd1, a block a cycle, once every read
// issued before has returned, for the first send and every resend (below, "inline data").
// L_Key checks (kc_*, hca_key_check's contract): each kept element of more than 0 bytes, in the
// context's PD (qp_cfg_pd), local read for a gather, LOCAL_WRITE (1) for a READ's or atomic's
// scatter (hca.Device.checkSGL's need), its address and length, one check at a time, before the
// WQE's header is taken, so before any read; a WQE with a failed check is not sent: it completes
// with LOC_PROT_ERR (4) as a WQE that fails at decode does (the outstanding messages flushed first,
// the context to ERR: hca.Device.wqeReady's key error). A WQE on a context in ERR is not checked:
// it is flushed (IBA; the model's UD path, grantUD, does the same, but its RC path,
// hca.Device.wqeReady, checks it and completes a bad one with LOC_PROT_ERR).
//
// Transmit: hca_tx_path's packets (ICRC written, VCRC zero) go into a packet queue of PKT_BLOCKS
// beats (at least one largest packet, 65 beats at MTU 4096, or it deadlocks), store and forward, one
// queue for every VL: a packet is offered when its last beat is in. tx_vl_waiting has the head
// packet's VL (LRH.VL) when it fits the VL's credits ((credit - blocks) mod 4096 <= 2048, blocks =
// (PktLen + 16) >> 4, ib_tx_vl_port's rule); when the port picks that VL the head is committed
// (tx_pick_taken) and its beats go back to back as tx_ready takes them, tx_vl the committed VL.
// One queue means a head waiting for its VL's credits holds the other VLs' packets behind it
// (TODO: a queue per VL, as the model's per-VL request queues).
// Purge (hca.Device.purge after FlushAll or a rewind): each beat in the queue carries its message's context
// index (from a queue of MSG_DEPTH messages between dec_* and the path's output). When a WQE the
// requester cannot take sends its context to ERR, every message of that context between dec_* and
// the queue's output (counted per context) is marked, and its packets not yet committed to the port
// are popped at the queue's head a beat a cycle, never offered: none reaches tx_*. A packet already
// committed goes whole.
// Completions: each sent message is kept in its context's ring of OQ_DEPTH entries ({READ or
// atomic, signaled, opcode, index, length, first PSN, last PSN}) until an ACK or a flush takes it.
// An ACKNOWLEDGE on ack_* (QP ack_qpn, PSN ack_psn, AETH syndrome ack_syn: hca.Requester.OnAck) is
// taken when the completion engine is idle (ack_ready); it is dropped for a context that does not
// hold ack_qpn (counted on no_qp, 16 bits, saturating) or is in ERR (OnAck in ERR does nothing) and for a reserved syndrome (bits 7:5 010
// or 1xx: OnAck has no case). An ACK (000) acknowledges every PSN through ack_psn; for it the engine walks
// the ring from the oldest message, one a cycle: a SEND or WRITE whose last PSN is at or before
// ack_psn, modulo 2^24 (hca's psnDiff <= 0), leaves, with a completion when signaled; the walk stops
// at the first message not covered and at a READ or atomic (the model completes those on their
// responses only, below: they and everything behind them wait). One completion a cycle at
// most, into an output register (cpl_* valid/ready): CQN and QPN from the context, status 0
// (success), 2 (LOC_QP_OP_ERR) or 5 (WR_FLUSH_ERR), the WQE's opcode, index (wqe_counter) and
// length (byte count), as hca.RequesterCQE; hca_transport adds opcode REQ and zeros. The engine does
// one job at a time, an ACK's walk or a decode completion, in the order they are taken, so the
// completions come in the model's order. The walk also stops at a message none of whose packets
// had been committed to the port (or purged) when the ACK was taken (hca.Requester.ackThrough
// stops at a message never sent): per context a count of messages taken and not yet started,
// and at the ACK a snapshot of the ring's messages less those.
// NAKs (001 RNR, 011 with a code in bits 4:0) acknowledge every PSN before ack_psn (ackThrough not
// inclusive): the same walk, a message leaving only when its last PSN is strictly before. Then a NAK
// of code 1 (invalid request), 2 (remote access error) or 3 and above (remote operational error)
// fails the message holding ack_psn, when one in the ring does (hca.Requester.find: the PSN lies
// from the head's first PSN through the context's next PSN less one, modulo 2^24, the ring's PSNs
// being contiguous): the context goes to ERR, its messages between dec_* and tx_* are purged as at a
// decode error (the model's device stops building the QP's packets; the test's NAKs come after the
// QP's packets have left, so this purge is not exercised), and the engine completes every message
// left in the ring, oldest first, signaled or not, one a cycle: the one holding the PSN with status
// 9 (REM_INV_REQ_ERR), 10 (REM_ACCESS_ERR) or 11 (REM_OP_ERR), the others (a READ or atomic the walk
// stopped at among them) with WR_FLUSH_ERR (hca.Requester.fail). While the engine walks for such a
// NAK, a WQE of its context on dec_* waits, so it completes flushed if the NAK fails the context
// (the model's Enqueue after OnAck).
// Retries (hca.Requester.OnAck's sequence error and RNR cases, retry, rewind): after its walk, a
// sequence error NAK (011 00000) or an RNR NAK (001, timer code in bits 4:0) concerns the ring's
// head: it holds the PSN, or it is a READ or atomic already sent whose PSNs all lie before the PSN
// (its response was lost: the implied NAK, a retry from its first PSN by the sequence error's rules).
// A sequence error (or implied) retry does nothing while a retry sequence is under way and nothing
// has progressed (rxe comp.started_retry); else it spends one of the context's RETRY_CNT (7:
// infinite) and starts a sequence; none left: the head fails with RETRY_EXC_ERR (12), the rest
// flushed and the context to ERR, as a NAK's failure. An RNR NAK spends one of RNR_RETRY (7:
// infinite); none left: RNR_RETRY_EXC_ERR (13). A walk that retires a message is progress, and so
// is an ACK that acknowledges more packets of the oldest message than before (ackThrough's
// advanced; each message's acknowledged packets are kept with its ring entry, oq_got): both counters are
// restored and the sequence ends first (progressed). A retry or RNR NAK that goes on
// rewinds the context (go-back-N): its messages between dec_* and tx_* are purged as at an error,
// and the ring's messages are sent again from the head, oldest first, the head from the NAK's
// packet (PSN - first; an atomic from its request, a READ from its request for the responses it
// lacks: PSN first + readGot / MTU, the RETH's VA + readGot and DMA length - readGot, as the
// model's Next) and the rest whole, each as a message
// into hca_tx_path with msg_skip packets stepped over (the packetizer), its payload read again from
// LocalAddr + skip x MTU: the model resends from its WQE, kept per message, so each ring entry has
// a copy of the WQE's remote address, R_Key, immediate, atomic operands and local address. After
// an RNR NAK the context's resend waits RNR_TICK x (the code's delay in 10 us units, ib-facts.md
// §5, hca.RNRTimerPS) cycles (the model's holdUntil); other contexts go on meanwhile. A resend
// goes before any WQE on dec_*, one message at a time while the completion engine is idle; a WQE
// of a context whose resend is pending waits for its end. An ACK that takes the ring's head past
// the resend's place moves it to the head (the model completes a message being resent and sends no
// more of it). The lowest context with a resend ready goes first.
// Local ACK timeout (hca.Device's retry timer, hca.Requester.OnTimeout): per context a timer of
// ACK_TICK x 2^RETRY_TIMEOUT cycles (IBA's 4.096 us x 2^t; RETRY_TIMEOUT 0: none). It arms when a
// packet of the context is committed to the port and it is not running (the model: when a packet
// is granted); it restarts when an ACK's or NAK's walk ends having made progress (a message retired,
// or an ACK acknowledging more of the oldest message: ackThrough's advanced) or rewound the context,
// if a message of the context then has packets sent (hca.Requester.Outstanding), and stops
// otherwise, and at a failure (the model's afterAck). On expiry the completion engine takes it as a
// job (after an ACK offered and a decode completion): a retry from the oldest unacknowledged PSN,
// the head's first PSN plus its acknowledged packets (oq_got, kept per message: what ACKs and NAKs
// covered of it, at the head or behind an unanswered READ or atomic, the model's acked; a READ or
// atomic from its first), by the sequence error's rules except that
// a retry sequence under way does not absorb it, so it spends one of RETRY_CNT, shared with the
// sequence error NAKs; none left, the head fails with RETRY_EXC_ERR (12), the rest flushed, the
// context to ERR. A timer that expires on a context in ERR, or whose head has no packet committed,
// stops (the model's OnTimeout does nothing).
// Responses (ack_op 0x0D..0x10 a READ response, 0x12 an atomic ACK: hca.Requester.OnReadResponse,
// OnAtomicAck), taken as jobs like ACKs, in the order hca_rx_ack gives them; dropped, not looked at
// further, for a context that does not hold ack_qpn (counted on no_qp) or is in ERR. First a scan
// (a cycle an entry, from the head, through the messages sent when the response was taken) for
// the message holding its PSN: it takes the response when it is a READ for a READ response or an
// atomic for an atomic ACK and the response is in sequence for it (its index in the message x MTU
// equal to the bytes the READ has had, the model's readGot, kept per entry in oq_got, which holds a
// SEND's or WRITE's acknowledged packets otherwise). Only then does the
// walk run, not inclusive (ackThrough(psn, false)): the SENDs and WRITEs before the PSN leave as
// for a NAK, and, the message then at the head, the response adds its payload's bytes to readGot
// (progress: OnReadResponse's data for the oldest message), or, when readGot reaches the READ's
// length (at any PSN) or for an atomic,
// completes it in the walk, a CQE when signaled (byte count the WQE's length). Without the
// scan's match the walk retires nothing, as the model runs no ackThrough for a response it drops
// (a duplicate, one out of sequence, one of the wrong kind, one for a PSN no message holds). After
// the walk, the implied NAK as for a NAK: the head a READ or atomic already sent whose PSNs all lie
// before the response's, a retry from it by the sequence error's rules. A response's data is
// judged where the walk has no SEND or WRITE left to retire: written through DMA client wr0 (wr_*,
// hca_dma_engine's client contract, with byte enables) when the head takes the response, else a
// READ response's blocks (ack_blk on pd_*, hca_rx_ack's FIFO, realigned to the payload's start)
// are dropped. What the model's hca.Device.complete writes, at exactly its bytes: a READ
// response's ack_len bytes from byte readGot (the bytes of the responses the READ had before) of
// its scatter list, an atomic's original value (ack_orig, 8 bytes least significant first:
// putLE64) from byte 0 of its list (hca.Device.place, sglSlice: the list is the elements'
// concatenation, no byte past its end written, the blocks of those dropped; one element is
// LocalAddr + readGot, every byte written), one wr0 write per element part, each
// realigned to its host address's byte lanes, byte enables on its first and last beats (the
// drain, below). The walk waits until the write's last beat is taken, so a READ's or
// atomic's CQE leaves after its last byte went to wr0 (wr0 and wr1 keep acceptance order). A
// response dropped without a job (no context) has its blocks dropped at once; the next response
// is taken only when the drain is free. A response's payload length is not checked against the
// path MTU (nor in the model): a shorter or longer FIRST or MIDDLE moves readGot by its length, so
// the responses after it are out of sequence, as in the model.
// A response in sequence for a message behind an unanswered READ or atomic (the scan finds it
// past the head): taken as the model's OnReadResponse and OnAtomicAck take it (find, not the
// head): its data written at its LocalAddr + its readGot (kept per ring entry, oq_got), and at the
// walk's end every SEND and WRITE before it is done (the response acknowledges their PSNs: the
// model's ackThrough), and so is the message when the response completes it; a done message is
// not sent again by a rewind (the resend steps over it) and leaves, in order, with its CQE, when
// the walk reaches it at the head. A later READ's bytes are kept while the implied NAK is
// absorbed, and start afresh when a rewind resends it (the model's rewind clears its readGot).
// An ACK's or NAK's job scans the same way (to the first message whose last PSN is at or after its
// PSN), and at its walk's end marks the SENDs and WRITEs before that message done, and, for an ACK,
// that message when its last PSN is the ACK's: the model's ackThrough, which does not stop at a READ
// or atomic. An ACK past a READ or atomic already sent whose PSNs all lie before it is the implied
// NAK too, as a NAK or a response past it. The packets an ACK or NAK acknowledges of the SEND or
// WRITE holding its PSN (PSN - first, + 1 for an ACK) are kept in its entry when more than before,
// at the head or behind an unanswered READ or atomic (the model's acked of a later message), and a
// rewind leaves them, so a local ACK timeout resends such a message from there once it is the head,
// and an ACK acknowledging no more of it is no progress.
// Not here: the model's round robin over QPs
// per packet (here a message goes whole, in dec_* order, so packets of different QPs do not
// interleave, and a resend goes whole too), the model's transmit buffer accounting
// (hca.tx_buffer_bytes per VL), UD, responder traffic on tx_*.
module hca_requester #(
    parameter integer QPN_W       = 3,
    parameter integer VLS         = 1,
    parameter integer VL_W        = 1,
    parameter integer PAY_BLOCKS  = 128, // payload buffer, 64-byte blocks
    parameter integer PKT_BLOCKS  = 130, // packet queue, beats (>= 65)
    parameter integer MSG_DEPTH   = 4,   // messages with payload between dec_* and pay_*
    parameter integer CQN_W       = 4,
    parameter integer OQ_DEPTH    = 8,   // messages taken and not yet completed, per context (a power of two)
    parameter integer RETRY_CNT   = 7,   // hca.retry_cnt: retry sequences without progress, 0..7 (7 infinite)
    parameter integer RNR_RETRY   = 7,   // hca.rnr_retry: RNR NAKs without progress, 0..7 (7 infinite)
    parameter integer RNR_TICK    = 10000, // cycles in 10 us (the RNR timer's unit) at hca.core_clock_mhz
    parameter integer ACK_TICK    = 4096, // cycles in 4.096 us (the local ACK timeout's unit) at hca.core_clock_mhz
    parameter integer RETRY_TIMEOUT = 14, // hca.retry_timeout: the local ACK timeout is ACK_TICK x 2^t cycles, 0..31 (0 infinite)
    parameter integer MAX_SGE     = 30,  // gather elements kept per ring entry (hca.MaxSendSGE; at most 32): a longer list is refused
    parameter integer EL_DEPTH    = 4,   // elements whose reads are issued and whose blocks the packer has not all taken
    parameter integer MAX_INLINE  = 236, // hca.max_inline_bytes: the most inline bytes a WQE it sends may carry (0..988)
    parameter integer MAX_RD_ATOMIC = 16 // hca.max_rd_atomic: READs and atomics taken and not yet retired per context (1..255)
) (
    input  wire                  clk,
    input  wire                  rst_n,
    input  wire                  qp_cfg_valid,
    output wire                  qp_cfg_ready,
    input  wire [23:0]           qp_cfg_qpn,
    input  wire [15:0]           qp_cfg_dlid,
    input  wire [15:0]           qp_cfg_slid,
    input  wire [3:0]            qp_cfg_sl,
    input  wire [VL_W-1:0]       qp_cfg_vl,
    input  wire [23:0]           qp_cfg_rqpn,
    input  wire [23:0]           qp_cfg_psn,
    input  wire [2:0]            qp_cfg_mtu,
    input  wire [CQN_W-1:0]      qp_cfg_cqn,
    input  wire [31:0]           qp_cfg_pd,     // the QP's protection domain (its elements' L_Keys are checked in it)
    input  wire [16:0]           ack_req_every,
    input  wire                  dec_valid,
    output wire                  dec_ready,
    input  wire [1:0]            dec_err,
    input  wire [2:0]            dec_opcode,
    input  wire [15:0]           dec_index,
    input  wire [23:0]           dec_qpn,
    input  wire                  dec_signaled,
    input  wire [2:0]            dec_fm,    // the fence mode (hca_wqe_parse's out_fm): 2 and 4 fence
    output wire [(1<<QPN_W)-1:0] fence_busy, // per context: a fenced WQE waits (hca_wqe_fetch holds it in its QP's buffer)
    output reg  [(1<<QPN_W)-1:0] qp_err,     // per context: in ERR, its failure's completions all out (hca_responder's req_err)
    input  wire [31:0]           dec_imm,
    input  wire [63:0]           dec_raddr,
    input  wire [31:0]           dec_rkey,
    input  wire [63:0]           dec_swap_add,
    input  wire [63:0]           dec_compare,
    input  wire                  dec_inline,
    input  wire [6:0]            dec_inline_off, // the inline data's byte offset in the WQE (hca_wqe_parse's out_inline_off)
    input  wire [31:0]           dec_length,
    input  wire [63:0]           dec_laddr,
    input  wire [5:0]            dec_sges,  // the WQE's data segments (hca_wqe_parse's out_sges)
    input  wire                  dec_sge_valid, // and the segments themselves, one a beat (hca_wqe_parse's sge_*)
    output wire                  dec_sge_ready,
    input  wire [31:0]           dec_sge_len,
    input  wire [31:0]           dec_sge_lkey,
    input  wire [63:0]           dec_sge_addr,
    input  wire                  dec_sge_last,
    input  wire                  wqe_valid,     // every WQE's blocks, in dec_* order (hca_wqe_fetch's wqe_*; always taken)
    input  wire [511:0]          wqe_data,
    output wire                  kc_req_valid,  // an element's L_Key check (hca_key_check's req_*/rsp_*)
    input  wire                  kc_req_ready,
    output wire [31:0]           kc_req_key,
    output wire [31:0]           kc_req_pd,
    output wire [3:0]            kc_req_need,
    output wire [63:0]           kc_req_addr,
    output wire [63:0]           kc_req_len,
    input  wire                  kc_rsp_valid,
    output wire                  kc_rsp_ready,
    input  wire [2:0]            kc_rsp_result,
    output reg                   rd_req_valid,
    output reg  [63:0]           rd_req_addr,
    output reg  [15:0]           rd_req_len,
    input  wire                  rd_req_ready,
    input  wire                  rd_rsp_valid,
    input  wire [511:0]          rd_rsp_data,
    output wire [VLS-1:0]        tx_vl_waiting,
    input  wire [VLS*12-1:0]     tx_vl_credit,
    input  wire                  tx_pick_valid,
    input  wire [VL_W-1:0]       tx_pick_vl,
    output wire                  tx_pick_taken,
    output wire                  tx_valid,
    output wire [511:0]          tx_data,
    output wire                  tx_sop,
    output wire                  tx_eop,
    output wire [VL_W-1:0]       tx_vl,
    input  wire                  tx_ready,
    input  wire                  ack_valid,
    output wire                  ack_ready,
    input  wire [23:0]           ack_qpn,
    input  wire [23:0]           ack_psn,
    input  wire [7:0]            ack_syn,
    input  wire [7:0]            ack_op,    // BTH.OpCode: 0x11 ACKNOWLEDGE, 0x0D..0x10 a READ response, 0x12 an atomic ACK
    input  wire [12:0]           ack_len,   // a READ response's payload bytes (its write's length)
    input  wire [63:0]           ack_orig,  // an atomic ACK's original value (written to the WQE's local address)
    input  wire [6:0]            ack_blk,   // a READ response's payload blocks waiting on pd_* (hca_rx_ack)
    input  wire                  pd_valid,  // READ response payload blocks, in order (hca_rx_ack's FIFO)
    input  wire [511:0]          pd_data,
    output wire                  pd_pop,
    output wire                  wr_valid,  // payload writes: DMA client wr0 (hca_dma_engine's contract)
    output wire [63:0]           wr_addr,
    output wire [15:0]           wr_len,
    output wire [511:0]          wr_data,
    output wire [63:0]           wr_be,     // the beat's byte enables: bit 63 - k for the byte at wr_data[511-8k -: 8]
    input  wire                  wr_ready,
    output reg  [15:0]           no_qp,     // ACKNOWLEDGEs taken for a QPN no context holds, dropped (saturating)
    output reg                   cpl_valid,
    input  wire                  cpl_ready,
    output reg  [CQN_W-1:0]      cpl_cqn,
    output reg  [7:0]            cpl_status,
    output reg  [2:0]            cpl_wr_op,
    output reg  [23:0]           cpl_qpn,
    output reg  [15:0]           cpl_wqe_counter,
    output reg  [31:0]           cpl_byte_count
);
    localparam integer NQ    = 1 << QPN_W;
    localparam integer PB_CW = $clog2(PAY_BLOCKS + 1);
    localparam integer PQ_CW = $clog2(PKT_BLOCKS + 1);
    // Inline data: a WQE's first IL_BLOCKS blocks hold any inline segment it may carry (an RC WRITE's
    // data starts at byte 36: ctrl 16, raddr 16, the segment's byte count 4).
    localparam integer IL_B0     = (36 + MAX_INLINE + 63) / 64;
    localparam integer IL_BLOCKS = IL_B0 > 16 ? 16 : IL_B0;  // a WQE has 16 at most
    localparam integer IL_W      = IL_BLOCKS * 512;

    // ---- QP contexts ----
    reg  [NQ-1:0]   ctx_valid;
    reg  [23:0]     ctx_qpn  [0:NQ-1];
    reg  [15:0]     ctx_dlid [0:NQ-1];
    reg  [15:0]     ctx_slid [0:NQ-1];
    reg  [3:0]      ctx_sl   [0:NQ-1];
    reg  [VL_W-1:0] ctx_vl   [0:NQ-1];
    reg  [23:0]     ctx_rqpn [0:NQ-1];
    reg  [23:0]     ctx_psn  [0:NQ-1];
    reg  [2:0]      ctx_mtu  [0:NQ-1];
    reg  [CQN_W-1:0] ctx_cqn [0:NQ-1];
    reg  [31:0]     ctx_pd  [0:NQ-1];
    reg  [NQ-1:0]   ctx_err;   // the context is in ERR: its WQEs complete with WR_FLUSH_ERR, unsent

    // ---- the WQE on dec_*: sent or dropped ----
    wire [QPN_W-1:0] dix      = dec_qpn[QPN_W-1:0];
    wire [QPN_W-1:0] cix      = qp_cfg_qpn[QPN_W-1:0];
    wire [2:0]       d_mtu    = ctx_mtu[dix];
    wire             is_rdat  = dec_opcode[2];                              // READ, atomics
    wire             is_atom  = dec_opcode == 3'd5 || dec_opcode == 3'd6;
    wire             has_ctx  = ctx_valid[dix] && ctx_qpn[dix] == dec_qpn;
    reg  [5:0]       s_k;       // the WQE's segments taken so far (below, "the gather list")
    reg              s_bad;     // one of them failed its L_Key check
    reg              k_wait;    // a check is asked for and its result not yet in
    // A list longer than MAX_SGE cannot be taken.
    // An inline WQE is sent from the WQE's own blocks (below, "Inline data"): one of more than
    // MAX_INLINE bytes (the driver refuses such a post), or whose bytes end past the blocks kept, or
    // a READ's or atomic's (no payload to carry) cannot be taken.
    wire [32:0]      il_end   = {26'd0, dec_inline_off} + {1'b0, dec_length};
    wire             il_bad   = dec_inline && (is_rdat || dec_length > MAX_INLINE || il_end > IL_BLOCKS * 64);
    wire             bad_wqe  = dec_err != 2'd0 || dec_opcode == 3'd7 || il_bad || dec_sges > MAX_SGE[5:0];
    // A WQE one of whose elements' L_Key failed its check (s_bad, below) completes with LOC_PROT_ERR.
    wire             s_ok_ctx = !bad_wqe && has_ctx && !ctx_err[dix];
    wire             sendable = s_ok_ctx && !s_bad;
    // A WQE completed at decode: one the requester cannot take on its context (LOC_QP_OP_ERR, after
    // the context's outstanding WQEs are flushed), one with a bad L_Key (LOC_PROT_ERR, the same way),
    // or any on a context in ERR (WR_FLUSH_ERR).
    wire             to_eng   = has_ctx && (bad_wqe || ctx_err[dix] || s_bad);
    wire             fail_wqe = bad_wqe || s_bad;      // completed with an error of its own: the context to ERR
    // Packets (and PSNs of a SEND, WRITE or READ): max(1, ceil(L / MTU)), MTU = 128 << code.
    wire [32:0]      mtu_b    = 33'd128 << d_mtu;
    wire [32:0]      len_up   = {1'b0, dec_length} + mtu_b - 33'd1;
    wire [32:0]      npk      = len_up >> ({2'b0, d_mtu} + 5'd7);
    wire [23:0]      npsn     = (is_atom || npk == 33'd0) ? 24'd1 : npk[23:0];
    // Payload blocks after the packer (from lane 0): ceil(L / 64), none for L = 0, a READ or an atomic.
    wire [32:0]      pay_end  = {1'b0, dec_length} + 33'd63;
    wire             needs_pay = !is_rdat && dec_length != 32'd0;
    wire [26:0]      d_blocks = pay_end[32:6];

    // ---- the message register, into hca_tx_path's msg_* ----
    reg             m_valid;
    reg  [2:0]      m_opcode;
    reg  [31:0]     m_length, m_rkey, m_imm;
    reg  [63:0]     m_raddr, m_swap_add, m_compare;
    reg  [15:0]     m_dlid, m_slid;
    reg  [3:0]      m_sl;
    reg  [VL_W-1:0] m_vl;
    reg  [23:0]     m_rqpn, m_psn;
    reg  [2:0]      m_mtu;
    reg  [16:0]     m_ack_every;
    reg  [23:0]     m_skip;        // a resend's packets not sent again
    wire            msg_ready;

    // ---- payload reads ----
    reg  [26:0]      rd_left;   // blocks of the part whose read is not yet issued (0: none)
    reg  [63:0]      rd_a;      // that read's first byte's address
    reg  [12:0]      rd_len;    // and its bytes (1..4096: a packet's part, at most the MTU)
    reg  [PB_CW-1:0] reserved;  // blocks asked for and not yet taken by the packer
    reg              g_on;      // a message's gather list is being walked (below)
    reg  [4:0]       il_left;   // blocks of an inline message not yet pushed into the payload buffer (below)
    wire [31:0]      res32     = {{(32-PB_CW){1'b0}}, reserved};
    wire [31:0]      n32       = {5'd0, rd_left};
    wire             rd_load   = (!rd_req_valid || rd_req_ready) && rd_left != 27'd0 &&
                                 res32 + n32 <= PAY_BLOCKS;

    // The start queue: {blocks, start} of each message with payload, oldest first.
    wire        sq_push_ready, sq_valid;
    wire [32:0] sq_head;

    // ---- outstanding messages, per context: a ring of OQ_DEPTH entries in one memory ----
    localparam integer OQ_W = $clog2(OQ_DEPTH);
    localparam integer PW   = OQ_W + 1;           // a ring pointer with its lap bit
    localparam [PW-1:0] OQ_FULL = OQ_DEPTH[PW-1:0];
    // {READ or atomic, signaled, opcode, index, length, first PSN, last PSN}
    reg  [100:0]        oq_mem [0:NQ*OQ_DEPTH-1];
    // and what a resend needs besides: {remote address, R_Key, immediate, swap/add, compare, local address}
    reg  [319:0]        oq_wqe [0:NQ*OQ_DEPTH-1];
    reg  [NQ*PW-1:0]    oq_hd, oq_tl;
    // Per entry: a READ or atomic (a copy of oq_mem's bit, for the marking below), done (the model's
    // sendMsg.done for a message behind the head: a SEND or WRITE a later response acknowledged, a
    // READ or atomic its responses completed; popped, in order, when the walk reaches it), and
    // whether oq_got is valid (else 0: a message sent has had none, and a READ resent behind the
    // head starts afresh: the model's rewind clears a later READ's readGot, not a SEND's acked).
    reg  [NQ*OQ_DEPTH-1:0] oq_rd, oq_done, oq_gv;
    // Per entry: a READ's response bytes received in sequence (the model's sendMsg.readGot), a SEND's
    // or WRITE's packets an ACK or NAK acknowledged (sendMsg.acked, at the head or behind it).
    reg  [31:0]         oq_got [0:NQ*OQ_DEPTH-1];
    wire [PW-1:0]       d_hd    = oq_hd[dix*PW +: PW];
    wire [PW-1:0]       d_tl    = oq_tl[dix*PW +: PW];
    wire                oq_room = d_tl - d_hd != OQ_FULL;
    wire [23:0]         d_last  = ctx_psn[dix] + npsn - 24'd1;
    // The fence (hca.md "Fence"): a READ or atomic in the context's ring not yet answered (not done:
    // its responses have not completed it; one they did leaves the ring or is marked done), the
    // model's Requester.rdAtomicUnfinished. The ring holds every message taken and not retired, so
    // a READ or atomic taken before the WQE on dec_* is there until its answer.
    // Per context (rdun), for hca_wqe_fetch's hold (fence_busy, below) and this block's own check.
    reg  [NQ-1:0]       rdun;
    reg  [PW-1:0]       f_hd, f_tl;
    integer             fc, fj;
    always @(*) begin
        rdun = {NQ{1'b0}};
        for (fc = 0; fc < NQ; fc = fc + 1) begin
            f_hd = oq_hd[fc*PW +: PW];
            f_tl = oq_tl[fc*PW +: PW];
            for (fj = 0; fj < OQ_DEPTH; fj = fj + 1)
                if (fj[PW-1:0] < f_tl - f_hd && oq_rd[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}] &&
                    !oq_done[{fc[QPN_W-1:0], f_hd[OQ_W-1:0] + fj[OQ_W-1:0]}])
                    rdun[fc] = 1'b1;
        end
    end
    wire                d_rdun = rdun[dix];
    // fence_busy: the contexts a fenced WQE must not leave hca_wqe_fetch's block buffer for (a
    // function of the ring's flops only; the fetch adds the READ or atomic on dec_*, not yet here).
    assign fence_busy = rdun;
    // A fenced WQE (mode 2 or 4: hca.SendWQE.Fenced) of a context waits on dec_* while one is
    // (hca.Device.wqeReady: before its key error is looked at). A failure that sends the context to
    // ERR completes every message of the ring (flushed), so the WQE then goes on and flushes, as the
    // model's releaseFence. dec_* is one stream: hca_wqe_fetch keeps a fenced WQE in its QP's block
    // buffer while fence_busy has its context, so it never reaches dec_* while this holds and the
    // other contexts' WQEs pass it; this check is for a dec_* source without that hold.
    wire                fence_hold = (dec_fm == 3'd2 || dec_fm == 3'd4) && has_ctx && d_rdun;
    // max_rd_atomic (hca.Requester.HasWork, rdAtomic): a READ or atomic the context can send waits on
    // dec_* while its ring holds MAX_RD_ATOMIC READs and atomics. The ring holds every message taken
    // (so sent at least once: the model's everSent) and not yet retired; a READ or atomic done behind
    // an unanswered one still counts (the model's count falls only when retire pops it, in order), a
    // resend adds no entry (the model counts a message once, at its first send), and a failure or a
    // context write empties the ring (the model's fail and FlushAll reset the count). SENDs and
    // WRITEs are not held by it, only those behind a held READ or atomic (the model's send queue is in
    // order). dec_* is one stream, so a held WQE holds the other contexts' behind it too (the model
    // holds its own QP only): TODO, a hold in hca_wqe_fetch as fence_busy's.
    reg  [PW-1:0]       d_nrd;
    integer             rj;
    always @(*) begin
        d_nrd = {PW{1'b0}};
        for (rj = 0; rj < OQ_DEPTH; rj = rj + 1)
            if (rj[PW-1:0] < d_tl - d_hd && oq_rd[{dix, d_hd[OQ_W-1:0] + rj[OQ_W-1:0]}])
                d_nrd = d_nrd + 1'b1;
    end
    wire                rda_hold = is_rdat && {{(32-PW){1'b0}}, d_nrd} >= MAX_RD_ATOMIC;

    // ---- the completion engine: one job at a time, an ACK's walk or a WQE completed at decode ----
    reg              eng_busy, eng_ack;    // busy; the job is an ACK's or NAK's (else a decode completion)
    reg              e_nakf;               // the NAK's flush: its walk is over, the context's messages fail
    reg  [QPN_W-1:0] e_ctx;
    reg  [23:0]      e_psn;                // the ACK's PSN
    reg              e_incl;               // an ACK: its PSN is acknowledged too (a NAK's is not)
    reg              e_fatal;              // a NAK that fails the message holding its PSN
    reg  [7:0]       e_nst;                // its status: REM_INV_REQ_ERR, REM_ACCESS_ERR or REM_OP_ERR (or RETRY_EXC_ERR, RNR_RETRY_EXC_ERR)
    reg              e_seq, e_rnr;         // a sequence error NAK; an RNR NAK
    reg  [4:0]       e_code;               // the RNR NAK's timer code
    reg              e_prog;               // the walk retired a message: progress (the retry counters restored)
    reg              e_tmo;                // the job is a local ACK timeout's retry (hca.Requester.OnTimeout)
    reg              e_rsp;                // the job is a response's: a READ response or an atomic ACK
    reg              e_rrd;                // a READ response (else an atomic ACK)
    reg              e_scan;               // a response's scan: the ring read from the head for the message holding its PSN
    reg  [PW-1:0]    e_sp;                 // the scan's place in the ring
    reg              e_ok;                 // the scan found the message holding the PSN, and the response is in sequence for it
    reg  [31:0]      e_mgot, e_mlen;       // that message's response bytes before (readGot) and its length
    reg              e_meq;                // it is a SEND or WRITE whose last PSN is the job's (an ACK covers it)
    reg              e_mpart;              // an ACK or NAK: it is a SEND or WRITE holding the PSN, and its packets
    reg  [23:0]      e_mk;                 // the ACK or NAK acknowledges (e_mk) are more than before (its acked)
    reg              e_drn;                // a READ response's payload blocks still to be judged: written or dropped
    reg  [6:0]       e_blk;                // how many (ack_blk)
    reg  [12:0]      e_plen;               // the payload's bytes: a READ response's (ack_len), an atomic's 8
    reg  [63:0]      e_orig;               // an atomic ACK's original value (ack_orig)
    // ---- the payload drain: a response's blocks from pd_* (or an atomic's value) to wr0, or dropped ----
    reg  [6:0]       d_left;               // a dropped response's blocks still to take from pd_*
    reg              d_wr;                 // written through wr0 (else dropped)
    reg              d_atm;                // the source is the atomic's value, not pd_*
    reg              d_first;              // the write's next beat is its first
    reg  [5:0]       d_e;                  // the byte lane of its last byte, in the write's last beat
    reg  [511:0]     d_prev;               // the source block before, rotated by s (0 before the first)
    reg  [63:0]      d_addr;               // the write's address and length (wr0 reads them at its first beat)
    reg  [15:0]      d_len;
    reg  [6:0]       d_bt;                 // beats of the piece's write still to go
    reg              sc_on;                // a response's bytes are being placed over its message's list
    reg              d_prime;              // d_prev is rotated again for the next piece before its beats
    wire             d_busy   = e_drn || d_left != 7'd0 || sc_on || d_bt != 7'd0 || d_prime;
    reg              e_fhead;              // the failure is the head's (retries exhausted), not the PSN holder's
    reg              e_fpop;               // the flush has completed its first message
    reg              e_flush;              // the decode completion's status: WR_FLUSH_ERR, else LOC_QP_OP_ERR
    reg              e_prot;               // or LOC_PROT_ERR (an element's L_Key failed)
    reg  [2:0]       e_op;
    reg  [15:0]      e_idx;
    reg  [31:0]      e_len;
    wire             eng_idle = !eng_busy;

    // ---- purge: per context, the messages between dec_* and tx_* and how many of the oldest to drop ----
    localparam integer IF_W = $clog2(MSG_DEPTH + PKT_BLOCKS + 2);
    reg  [NQ*IF_W-1:0] inflight;  // taken and not yet out of the packet queue (their last packet)
    reg  [NQ*IF_W-1:0] purge_n;   // of those, the oldest to drop (taken before the context's error)
    reg  [NQ*IF_W-1:0] unsent;    // of those, the youngest whose first packet is not yet committed (or dropped)
    reg  [IF_W-1:0]    e_lim;     // the ACK's walk: messages sent when it was taken (hca.Requester: everSent)
    wire               tg_push_ready;

    // ---- go-back-N: per context, a resend pending from the ring's message at rs_ptr ----
    // A sequence error NAK or an RNR NAK that rewinds a context (hca.Requester.rewind) purges its
    // messages between dec_* and tx_* and sets rs_pend: its ring's messages are sent again, oldest
    // first, the first from packet rs_skip, once the RNR wait rs_wait has run out.
    localparam integer WAIT_W = 40;
    reg  [NQ-1:0]        rs_pend;   // a resend is pending (or under way)
    reg  [NQ*PW-1:0]     rs_ptr;    // the next ring message to resend
    reg  [NQ*24-1:0]     rs_skip;   // packets of that message not to send again (a SEND or WRITE's acknowledged ones)
    reg  [NQ*WAIT_W-1:0] rs_wait;   // cycles of the RNR wait left
    reg  [NQ*3-1:0]      retry_left, rnr_left; // retry_cnt and rnr_retry left (rxe's counters)
    reg  [NQ-1:0]        started;   // a retry sequence is under way (rxe comp.started_retry)

    // ---- the local ACK timer, per context (hca.Device.armTimer, timeout) ----
    // TO_LOAD = ACK_TICK x 2^RETRY_TIMEOUT cycles: IBA's 4.096 us x 2^t (hca.RetryTimeoutPS).
    localparam integer  TO_W    = $clog2(ACK_TICK + 1) + RETRY_TIMEOUT;
    localparam [63:0]   TO_T64  = ACK_TICK * 64'd1;
    localparam [63:0]   TO_L64  = TO_T64 << RETRY_TIMEOUT;
    localparam [TO_W-1:0] TO_LOAD = TO_L64[TO_W-1:0];
    reg  [NQ-1:0]        to_on;     // the timer runs
    reg  [NQ*TO_W-1:0]   to_cnt;    // its cycles left
    // The expired timer that goes next: the lowest context.
    reg              tmo_any;
    reg  [QPN_W-1:0] tq;
    integer          tqq;
    always @* begin
        tmo_any = 1'b0;
        tq      = {QPN_W{1'b0}};
        for (tqq = NQ - 1; tqq >= 0; tqq = tqq - 1)
            if (to_on[tqq] && to_cnt[tqq*TO_W +: TO_W] == {TO_W{1'b0}}) begin
                tmo_any = 1'b1;
                tq      = tqq[QPN_W-1:0];
            end
    end
    // The resend that goes next: the lowest context with one pending and no wait left.
    reg              rp_any;
    reg  [QPN_W-1:0] rq;
    integer          qq;
    always @* begin
        rp_any = 1'b0;
        rq     = {QPN_W{1'b0}};
        for (qq = NQ - 1; qq >= 0; qq = qq - 1)
            if (rs_pend[qq] && rs_wait[qq*WAIT_W +: WAIT_W] == {WAIT_W{1'b0}}) begin
                rp_any = 1'b1;
                rq     = qq[QPN_W-1:0];
            end
    end
    // An ACK may have taken the ring's head past rs_ptr: the resend goes on from the head (the model's
    // ackThrough completes a message being resent and sends nothing more of it), from its first packet.
    wire [PW-1:0]    rp_hd    = oq_hd[rq*PW +: PW];
    wire [PW-1:0]    rp_tl    = oq_tl[rq*PW +: PW];
    wire [PW-1:0]    rp_p0    = rs_ptr[rq*PW +: PW];
    wire             rp_behind = rp_p0 - rp_hd > rp_tl - rp_hd;
    wire [PW-1:0]    rp_ptr   = rp_behind ? rp_hd : rp_p0;
    wire [23:0]      rp_skip  = rp_behind ? 24'd0 : rs_skip[rq*24 +: 24];
    wire             rp_done  = rp_ptr == rp_tl;           // every message sent again: the resend is over
    wire             rp_valid = rp_any && !rp_done;
    wire [100:0]     rp_ent   = oq_mem[{rq, rp_ptr[OQ_W-1:0]}];
    wire [319:0]     rp_wqe   = oq_wqe[{rq, rp_ptr[OQ_W-1:0]}];
    wire [2:0]       rp_mtu   = ctx_mtu[rq];
    wire [31:0]      rp_len   = rp_ent[79:48];
    wire [63:0]      rp_laddr = rp_wqe[63:0];
    // From packet k: k x MTU bytes on, the payload blocks from there (MTU is a multiple of 64).
    wire [31:0]      rp_off   = {8'd0, rp_skip} << ({2'b0, rp_mtu} + 5'd7);
    wire [12:0]      rp_mtub  = 13'd128 << rp_mtu;                   // the MTU in bytes
    wire [63:0]      rp_addr  = rp_laddr + {32'd0, rp_off};
    wire [31:0]      rp_rlen  = rp_len - rp_off;
    wire [32:0]      rp_end   = {1'b0, rp_rlen} + 33'd63;
    wire [26:0]      rp_blocks = rp_end[32:6];
    wire             rp_pay   = !rp_ent[100] && rp_rlen != 32'd0;
    // A READ at the ring's head resent after some of its responses came asks for the rest
    // (hca.Requester.Next; rxe req_retry): from the first PSN not answered, first + readGot / MTU,
    // the RETH's VA and DMA length moved by the bytes received (oq_got: readGot, read at the take, as
    // the model's Next reads it at the send). A later READ has had none (the model's rewind clears
    // its readGot).
    wire [QPN_W+OQ_W-1:0] rp_ix   = {rq, rp_ptr[OQ_W-1:0]};
    wire [31:0]      rp_got   = (rp_ptr == rp_hd && rp_ent[98:96] == 3'd4 && oq_gv[rp_ix]) ? oq_got[rp_ix] : 32'd0;
    // A message a later response completed or acknowledged is not sent again (the model's rewind
    // leaves a done message sent): the resend steps over it, a cycle, sending nothing.
    wire             rp_dn    = oq_done[rp_ix];
    wire [31:0]      rp_gpsn  = rp_got >> ({2'b0, rp_mtu} + 5'd7);

    // A context write is taken while the engine is idle, no ACK is offered and none of the
    // context's messages is between dec_* and tx_*; a WQE of that context waits in its cycle.
    wire [IF_W-1:0] c_inflight = inflight[cix*IF_W +: IF_W];
    assign qp_cfg_ready = eng_idle && !ack_valid && c_inflight == {IF_W{1'b0}} &&
                          !(dec_valid && dix == cix && (s_k != 6'd0 || k_wait));
    wire cfg_take = qp_cfg_valid && qp_cfg_ready;
    // A WQE of the context a NAK that may fail it is being walked for waits for the walk's end: if the
    // NAK fails a message, the context is in ERR by then and the WQE completes flushed, unsent, as
    // the model's Enqueue after OnAck does.
    // A resend goes before any WQE, and a WQE of a context with a resend pending waits for its end
    // (the model's rewound messages go before the ones queued after them).
    assign dec_ready = (!m_valid || msg_ready) && rd_left == 27'd0 && il_left == 5'd0 && !g_on && s_k == dec_sges && !k_wait && sq_push_ready && tg_push_ready &&
                       !rp_valid && !rs_pend[dix] && !fence_hold &&
                       !(cfg_take && cix == dix) && !(eng_busy && eng_ack && (e_fatal || e_seq || e_rnr || e_rsp) && e_ctx == dix) &&
                       (to_eng ? eng_idle && !ack_valid : (!sendable || (oq_room && !rda_hold)));
    wire take = dec_valid && dec_ready;
    wire send = take && sendable;
    wire eng_take = take && to_eng;
    // A resend's message is taken under the same rules, and only while the completion engine is idle
    // (a rewind it does moves rs_ptr and purges what is in flight).
    wire rp_skp  = rp_valid && rp_dn && eng_idle && !(cfg_take && cix == rq);
    wire rp_take = rp_valid && !rp_dn && (!m_valid || msg_ready) && rd_left == 27'd0 && il_left == 5'd0 && !g_on && sq_push_ready && tg_push_ready &&
                   eng_idle && !(cfg_take && cix == rq);

    // ---- payload buffer -> the packer -> hca_tx_path's pay_* ----
    wire         pay_valid, pay_ready;
    wire [511:0] pay_data;
    wire         pk_valid;                         // the packer offers a message block
    wire [511:0] pk_data;
    wire         raw_pop;                          // the packer takes a block from the payload buffer
    wire         path_pay_valid = pk_valid && sq_valid; // sq_valid: always, with a block (pushed first)
    wire         pay_pop = path_pay_valid && pay_ready;
    reg  [26:0]  pop_cnt;                      // blocks of the head message already taken
    wire         pop_last = pop_cnt + 27'd1 == sq_head[32:6];

    always @(posedge clk) begin
        if (send) ctx_psn[dix] <= ctx_psn[dix] + npsn;
        if (cfg_take) begin
            ctx_qpn[cix]  <= qp_cfg_qpn;
            ctx_dlid[cix] <= qp_cfg_dlid;
            ctx_slid[cix] <= qp_cfg_slid;
            ctx_sl[cix]   <= qp_cfg_sl;
            ctx_vl[cix]   <= qp_cfg_vl;
            ctx_rqpn[cix] <= qp_cfg_rqpn;
            ctx_psn[cix]  <= qp_cfg_psn;
            ctx_mtu[cix]  <= qp_cfg_mtu;
            ctx_cqn[cix]  <= qp_cfg_cqn;
            ctx_pd[cix]   <= qp_cfg_pd;
        end
        if (send) oq_mem[{dix, d_tl[OQ_W-1:0]}] <= {is_rdat, dec_signaled, dec_opcode, dec_index, dec_length,
                                                    ctx_psn[dix], d_last};
        if (send) oq_wqe[{dix, d_tl[OQ_W-1:0]}] <= {dec_raddr, dec_rkey, dec_imm, dec_swap_add, dec_compare, dec_laddr};
        if (send) begin
            m_opcode    <= dec_opcode;
            m_length    <= dec_length;
            m_rkey      <= dec_rkey;
            m_imm       <= dec_imm;
            m_raddr     <= dec_raddr;
            m_swap_add  <= dec_swap_add;
            m_compare   <= dec_compare;
            m_dlid      <= ctx_dlid[dix];
            m_slid      <= ctx_slid[dix];
            m_sl        <= ctx_sl[dix];
            m_vl        <= ctx_vl[dix];
            m_rqpn      <= ctx_rqpn[dix];
            m_psn       <= ctx_psn[dix];
            m_mtu       <= d_mtu;
            m_ack_every <= ack_req_every;
            m_skip      <= 24'd0;
        end
        if (rp_take) begin
            // The ring's copy of the message, the context's path, from packet rp_skip.
            m_opcode    <= rp_ent[98:96];
            m_length    <= rp_len - rp_got;
            m_raddr     <= rp_wqe[319:256] + {32'd0, rp_got};
            m_rkey      <= rp_wqe[255:224];
            m_imm       <= rp_wqe[223:192];
            m_swap_add  <= rp_wqe[191:128];
            m_compare   <= rp_wqe[127:64];
            m_dlid      <= ctx_dlid[rq];
            m_slid      <= ctx_slid[rq];
            m_sl        <= ctx_sl[rq];
            m_vl        <= ctx_vl[rq];
            m_rqpn      <= ctx_rqpn[rq];
            m_psn       <= rp_ent[47:24] + rp_gpsn[23:0];
            m_mtu       <= rp_mtu;
            m_ack_every <= ack_req_every;
            m_skip      <= rp_skip;
        end
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            ctx_valid    <= {NQ{1'b0}};
            m_valid      <= 1'b0;
            rd_left      <= 27'd0;
            rd_a         <= 64'd0;
            rd_len       <= 13'd0;
            rd_req_valid <= 1'b0;
            rd_req_addr  <= 64'd0;
            rd_req_len   <= 16'd0;
            reserved     <= {PB_CW{1'b0}};
            pop_cnt      <= 27'd0;
        end else begin
            if (cfg_take) ctx_valid[cix] <= 1'b1;
            if (send || rp_take) m_valid <= 1'b1;
            else if (msg_ready) m_valid <= 1'b0;
            if (g_step && !g_past && !g_il) begin
                rd_left <= g_blocks;
                rd_a    <= g_a;
                rd_len  <= g_take[12:0];
            end else if (rd_load) begin
                rd_left <= 27'd0;
            end
            if (rd_load) begin
                rd_req_valid <= 1'b1;
                rd_req_addr  <= rd_a;
                rd_req_len   <= {3'd0, rd_len};
            end else if (rd_req_ready) begin
                rd_req_valid <= 1'b0;
            end
            reserved <= reserved + (rd_load ? rd_left[PB_CW-1:0] : {PB_CW{1'b0}}) + {{(PB_CW-1){1'b0}}, il_push}
                                 - {{(PB_CW-1){1'b0}}, raw_pop};
            if (pay_pop) pop_cnt <= pop_last ? 27'd0 : pop_cnt + 27'd1;
        end
    end

    wire [$clog2(MSG_DEPTH+1)-1:0] sq_count;
    sync_fifo #(.WIDTH(33), .DEPTH(MSG_DEPTH)) u_starts (
        .clk(clk), .rst_n(rst_n),
        .push_valid((send && needs_pay) || (rp_take && rp_pay)), .push_ready(sq_push_ready),
        .push_data(send ? {d_blocks, 6'd0} : {rp_blocks, 6'd0}),
        .pop_valid(sq_valid), .pop_ready(pay_pop && pop_last), .pop_data(sq_head),
        .count(sq_count),
        .drop_valid(1'b0), .drop_count({($clog2(MSG_DEPTH+1)){1'b0}})
    );

    // Responses always find room (reserved above), so push_ready is 1 whenever one comes. An inline
    // message's blocks come from il_mem instead (il_push, below: never in a cycle a response comes).
    wire             il_push;
    wire [511:0]     il_data;
    wire             pay_push_ready;
    wire [PB_CW-1:0] pay_count;
    sync_fifo #(.WIDTH(512), .DEPTH(PAY_BLOCKS)) u_payload (
        .clk(clk), .rst_n(rst_n),
        .push_valid(rd_rsp_valid || il_push), .push_ready(pay_push_ready), .push_data(il_push ? il_data : rd_rsp_data),
        .pop_valid(pay_valid), .pop_ready(raw_pop), .pop_data(pay_data),
        .count(pay_count),
        .drop_valid(1'b0), .drop_count({PB_CW{1'b0}})
    );

    // ---- the gather list (hca.md "Scatter/gather lists") ----
    // Intake: a WQE's segments come on dec_sge_* while its header waits on dec_*; the header is taken
    // after the last (s_k = dec_sges). A SEND's or WRITE's on a context that can send it are kept
    // with the ring entry it will take ({context, slot d_tl}, 32 an entry; taken only with room in
    // the ring, so the slot is free), and each of more than 0 bytes has its L_Key checked first
    // (hca_key_check: the context's PD, local read, its address and length), one at a time, the
    // segment taken with the result; after a failure the rest are taken unchecked (the model fails
    // the WR at its first bad element, before any payload read), and the WQE completes with
    // LOC_PROT_ERR, unsent. Others are taken and dropped, unchecked. A context write of the WQE's
    // context waits while its segments are being taken.
    localparam integer EX_W = QPN_W + OQ_W;
    reg  [95:0]      sg_mem [0:NQ*OQ_DEPTH*32-1];  // {length, address} of element e of entry x at {x, e}
    reg  [5:0]       oq_nsg [0:NQ*OQ_DEPTH-1];      // the entry's elements
    wire [EX_W-1:0]  d_ix     = {dix, d_tl[OQ_W-1:0]};
    wire             s_kept   = s_ok_ctx;                       // its segments are kept (when there is room)
    wire             s_chk    = dec_sge_len != 32'd0 && !s_bad; // this one is checked
    wire             s_go     = dec_valid && s_k != dec_sges && (s_kept ? oq_room : 1'b1);
    assign kc_req_valid  = s_go && s_kept && s_chk && dec_sge_valid && !k_wait;
    assign kc_req_key    = dec_sge_lkey;
    assign kc_req_pd     = ctx_pd[dix];
    assign kc_req_need   = {3'd0, is_rdat};                 // a gather reads (local read, always allowed); a READ's or atomic's scatter writes: LOCAL_WRITE (1)
    assign kc_req_addr   = dec_sge_addr;
    assign kc_req_len    = {32'd0, dec_sge_len};
    assign kc_rsp_ready  = k_wait;
    assign dec_sge_ready = s_go && (!s_kept || !s_chk || (k_wait && kc_rsp_valid));
    wire             sge_tk   = dec_sge_valid && dec_sge_ready;
    always @(posedge clk) begin
        if (sge_tk && s_kept) sg_mem[{d_ix, s_k[4:0]}] <= {dec_sge_len, dec_sge_addr};
        if (send) oq_nsg[d_ix] <= dec_sges;
    end

    // The walk: a message's elements in order, from its first byte, or, for a resend from packet k,
    // from k x MTU bytes on (an element wholly before that, or of 0 bytes, is stepped over, a cycle);
    // each element cut at the packets' boundaries (g_pk: the current packet's bytes left) into
    // parts, a part a cycle, each part's read loaded (rd_left, rd_a, rd_len) at its own address, once
    // the previous part's is issued, and its {message's last, first lane, end lane, blocks} queued
    // for the packer. The WQE's segments are all in before its header is taken.
    reg  [EX_W-1:0]  g_ix;
    reg  [4:0]       g_e;
    reg  [5:0]       g_n;                           // the list's elements
    reg  [31:0]      g_skip, g_rem;                 // bytes still to step over; bytes still to gather
    reg  [12:0]      g_pk;                          // bytes of the current packet still to gather (1..MTU)
    reg  [12:0]      g_mtu;                         // the message's MTU in bytes (128 << its code)
    reg              g_il;                          // the message is inline: one element, its WQE's bytes (below)
    reg  [6:0]       g_ioff;                        // and their offset in the WQE's blocks
    wire [95:0]      g_el     = sg_mem[{g_ix, g_e}];
    // An inline message's one element is the whole message: its length the bytes to step over and
    // to gather together, its "address" the data's offset in the WQE's blocks kept (il_mem).
    wire [31:0]      g_len    = g_il ? g_rem + g_skip : g_el[95:64];
    wire             g_past   = g_skip >= g_len;
    wire [31:0]      g_take0  = g_len - g_skip;
    wire [31:0]      g_take1  = (g_take0 < g_rem) ? g_take0 : g_rem;  // bytes of the message in it
    // A part: the element's bytes up to the current packet's end (hca.Device.schedule reads each
    // packet's bytes, sglSlice's parts of them, as reads of their own). An inline message is not
    // cut: it reads nothing, and its blocks go to the buffer once.
    wire             g_cut    = !g_il && {19'd0, g_pk} < g_take1;
    wire [31:0]      g_take   = g_cut ? {19'd0, g_pk} : g_take1;      // the part's bytes
    wire             g_eldone = g_take == g_take0;                    // the part ends the element
    wire [63:0]      g_a      = (g_il ? {57'd0, g_ioff} : g_el[63:0]) + {32'd0, g_skip}; // its first byte's address
    wire [32:0]      g_end    = {27'd0, g_a[5:0]} + {1'b0, g_take} + 33'd63;
    wire [26:0]      g_blocks = g_end[32:6];
    wire [5:0]       g_hi     = g_a[5:0] + g_take[5:0] - 6'd1;        // its last byte's lane
    wire             g_mlast  = g_take == g_rem;
    wire             g_pkdone = g_take == {19'd0, g_pk};               // and the packet
    wire             el_push_ready;
    wire             g_step   = g_on && rd_left == 27'd0 && il_left == 5'd0 && (g_past || el_push_ready);
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            s_k    <= 6'd0;
            s_bad  <= 1'b0;
            k_wait <= 1'b0;
            g_on   <= 1'b0;
            g_ix   <= {EX_W{1'b0}};
            g_e    <= 5'd0;
            g_n    <= 6'd0;
            g_skip <= 32'd0;
            g_rem  <= 32'd0;
            g_pk   <= 13'd0;
            g_mtu  <= 13'd0;
            g_il   <= 1'b0;
            g_ioff <= 7'd0;
        end else begin
            if (take) begin
                s_k   <= 6'd0;
                s_bad <= 1'b0;
            end else if (sge_tk) begin
                s_k <= s_k + 6'd1;
            end
            if (kc_req_valid && kc_req_ready) k_wait <= 1'b1;
            if (k_wait && kc_rsp_valid) begin
                k_wait <= 1'b0;
                if (kc_rsp_result != 3'd0) s_bad <= 1'b1;
            end
            if (send && needs_pay) begin
                g_on   <= 1'b1;
                g_ix   <= d_ix;
                g_e    <= 5'd0;
                g_n    <= dec_inline ? 6'd1 : dec_sges;
                g_skip <= 32'd0;
                g_rem  <= dec_length;
                g_pk   <= mtu_b[12:0];
                g_mtu  <= mtu_b[12:0];
                g_il   <= dec_inline;
                g_ioff <= dec_inline_off;
            end else if (rp_take && rp_pay) begin
                g_on   <= 1'b1;
                g_ix   <= {rq, rp_ptr[OQ_W-1:0]};
                g_e    <= 5'd0;
                g_n    <= rp_iof[7] ? 6'd1 : oq_nsg[{rq, rp_ptr[OQ_W-1:0]}];
                g_skip <= rp_off;
                g_rem  <= rp_rlen;
                g_pk   <= rp_mtub;                  // a resend starts at a packet's first byte
                g_mtu  <= rp_mtub;
                g_il   <= rp_iof[7];
                g_ioff <= rp_iof[6:0];
            end else if (g_step) begin
                // A part that ends its packet inside the element stays on it, the part's bytes
                // stepped over; else the walk goes to the next element.
                if (g_past || g_eldone) g_e <= g_e + 5'd1;
                g_skip <= g_past ? g_skip - g_len : g_eldone ? 32'd0 : g_skip + g_take;
                if (!g_past) g_rem <= g_rem - g_take;
                if (!g_past) g_pk  <= g_pkdone ? g_mtu : g_pk - g_take[12:0];
                if ((g_past || g_eldone) && {1'b0, g_e} + 6'd1 == g_n || (!g_past && g_mlast)) g_on <= 1'b0;
            end
        end
    end

    // ---- inline data (hca.md "Inline data"; hca.Device.schedule takes an inline WQE's payload from the
    // bytes copied out of the WQE, sendMsg.inline, and reads nothing) ----
    // Intake: hca_wqe_fetch forks every WQE block to the parser and to wqe_* (a block moves when both
    // take it; here always), so a WQE's blocks all come on wqe_* before its header is offered on
    // dec_*, and the next WQE's first block no sooner than the cycle that header is taken (the
    // parser's in_ready). The blocks are counted from the ctrl segment's DS count (byte 7 bits 5:0:
    // max(1, ceil(DS / 4)) blocks, hca.WQEBBsOfCtrl, as the fetch counts them) and the first
    // IL_BLOCKS of the WQE kept in il_stage: every inline segment the requester can send lies there.
    // When an inline WQE is sent, il_stage is copied whole into its ring entry's il_mem word, the
    // resend copy of its bytes (the model's sendMsg.inline); its element is {length, the data's offset
    // in the word}. The walk then pushes the element's blocks of the word into the payload buffer
    // instead of reading them through rd1, a block a cycle, once every read issued before has
    // returned (reserved = pay_count: no rd1 response can come in the same cycle, so the buffer's
    // write port is free, and the blocks stay in message order) and with room (reserved below
    // PAY_BLOCKS), counted in reserved as a read's; the packer takes them as any element's. A resend
    // walks the same word from byte k x MTU.
    reg  [IL_W-1:0]  il_stage;
    reg  [4:0]       wq_k;      // the WQE's blocks taken on wqe_* (0: the next is a WQE's first)
    reg  [4:0]       wq_n;      // its blocks
    wire [5:0]       wq_ds    = wqe_data[453:448];
    wire [6:0]       wq_up    = {1'b0, wq_ds} + 7'd3;
    wire [4:0]       wq_n0    = (wq_ds == 6'd0) ? 5'd1 : wq_up[6:2];
    wire [4:0]       wq_nn    = (wq_k == 5'd0) ? wq_n0 : wq_n;
    integer          ib;
    always @(posedge clk) begin
        if (wqe_valid)
            for (ib = 0; ib < IL_BLOCKS; ib = ib + 1)
                if (wq_k == ib[4:0]) il_stage[ib*512 +: 512] <= wqe_data;
    end
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            wq_k <= 5'd0;
            wq_n <= 5'd0;
        end else if (wqe_valid) begin
            wq_n <= wq_nn;
            wq_k <= (wq_k + 5'd1 == wq_nn) ? 5'd0 : wq_k + 5'd1;
        end
    end
    reg  [IL_W-1:0]  il_mem [0:NQ*OQ_DEPTH-1];    // per ring entry, an inline message's WQE blocks
    reg  [7:0]       oq_iof [0:NQ*OQ_DEPTH-1];    // per ring entry, {inline, the data's offset in them}
    wire [7:0]       rp_iof   = oq_iof[{rq, rp_ptr[OQ_W-1:0]}];
    always @(posedge clk) begin
        if (send && dec_inline) il_mem[{dix, d_tl[OQ_W-1:0]}] <= il_stage;
        if (send) oq_iof[{dix, d_tl[OQ_W-1:0]}] <= {dec_inline, dec_inline_off};
    end
    reg  [4:0]       il_blk;    // the next block of the word to push
    wire [IL_W-1:0]  il_word  = il_mem[g_ix];
    // The block il_blk of the word: an IL_BLOCKS-way select.
    reg  [511:0]     il_sel;
    integer          ik;
    always @(*) begin
        il_sel = il_word[511:0];
        for (ik = 1; ik < IL_BLOCKS; ik = ik + 1)
            if (il_blk == ik[4:0]) il_sel = il_word[ik*512 +: 512];
    end
    assign il_data = il_sel;
    assign il_push = il_left != 5'd0 && {{(32-PB_CW){1'b0}}, pay_count} == res32 && res32 < PAY_BLOCKS;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            il_left <= 5'd0;
            il_blk  <= 5'd0;
        end else if (g_step && !g_past && g_il) begin
            il_left <= g_blocks[4:0];
            il_blk  <= g_a[10:6];
        end else if (il_push) begin
            il_left <= il_left - 5'd1;
            il_blk  <= il_blk + 5'd1;
        end
    end

    // The packer: each part's blocks (a read's), in read order from the payload buffer, their bytes from
    // the part's lanes (its first block from its first byte's lane, its last through its last byte's)
    // into one contiguous message from lane 0 of its first block, hca_tx_path's pay_* (pay_start 0):
    // the message's bytes in order whatever the elements' alignments. A block in which the message's
    // bytes reach lane 63 goes out (pk_valid); the rest stay in pk_acc (pk_f bytes). The message's
    // last block goes out with its last byte, or, when that byte spills into a block more, the
    // full block first and the rest the next cycle (pk_flush); the packer waits for pay_ready to send.
    wire         el_valid;
    wire [40:0]  el_head;                          // {message's last, first lane, end lane 1..64, blocks}
    reg  [26:0]  pk_b;                             // blocks of the head element taken
    reg  [511:0] pk_acc;
    reg  [5:0]   pk_f;
    reg          pk_flush;
    wire         pk_first = pk_b == 27'd0;
    wire         pk_lastb = pk_b + 27'd1 == el_head[26:0];
    wire [6:0]   pk_lo    = pk_first ? {1'b0, el_head[39:34]} : 7'd0;
    wire [6:0]   pk_hi    = pk_lastb ? el_head[33:27] : 7'd64;
    wire [7:0]   pk_fn    = {2'b0, pk_f} + {1'b0, pk_hi - pk_lo};   // lanes filled after this block
    wire         pk_full  = pk_fn >= 8'd64;
    wire         pk_mend  = el_head[40] && pk_lastb;
    wire [5:0]   pk_r     = pk_lo[5:0] - pk_f;                      // rotation, mod 64 lanes
    wire [1023:0] pk_dd   = {pay_data, pay_data} << {pk_r, 3'b000};
    wire [511:0] pk_rot   = pk_dd[1023:512];                        // lane j: the block's lane j + r mod 64
    reg  [511:0] pk_merged;
    integer      pj;
    always @(*) begin
        for (pj = 0; pj < 64; pj = pj + 1)
            pk_merged[511-8*pj -: 8] = (pj >= pk_f && pj < pk_fn) ? pk_rot[511-8*pj -: 8] : pk_acc[511-8*pj -: 8];
    end
    wire         pk_have  = pay_valid && el_valid && !pk_flush;
    wire         pk_emit  = pk_have && (pk_full || pk_mend);
    assign pk_valid = pk_flush || pk_emit;
    assign pk_data  = pk_flush ? pk_acc : pk_merged;
    assign raw_pop  = pk_have && (!pk_emit || pay_pop);
    wire         el_pop   = raw_pop && pk_lastb;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            pk_b     <= 27'd0;
            pk_acc   <= 512'd0;
            pk_f     <= 6'd0;
            pk_flush <= 1'b0;
        end else begin
            if (pk_flush && pay_pop) begin
                pk_flush <= 1'b0;
                pk_f     <= 6'd0;
            end
            if (raw_pop) begin
                pk_b <= pk_lastb ? 27'd0 : pk_b + 27'd1;
                if (pk_full) begin
                    pk_acc   <= pk_rot;
                    pk_f     <= pk_mend ? 6'd0 : pk_fn[5:0];
                    pk_flush <= pk_mend && pk_fn[5:0] != 6'd0;
                    if (pk_mend && pk_fn[5:0] != 6'd0) pk_f <= pk_fn[5:0];
                end else begin
                    pk_acc <= pk_merged;
                    pk_f   <= pk_mend ? 6'd0 : pk_fn[5:0];
                end
            end
        end
    end
    wire [$clog2(EL_DEPTH+1)-1:0] el_count;
    sync_fifo #(.WIDTH(41), .DEPTH(EL_DEPTH)) u_elems (
        .clk(clk), .rst_n(rst_n),
        .push_valid(g_step && !g_past), .push_ready(el_push_ready),
        .push_data({g_mlast, g_a[5:0], {1'b0, g_hi} + 7'd1, g_blocks}),
        .pop_valid(el_valid), .pop_ready(el_pop), .pop_data(el_head),
        .count(el_count),
        .drop_valid(1'b0), .drop_count({($clog2(EL_DEPTH+1)){1'b0}})
    );

    // ---- the transmit datapath ----
    wire [31:0]  vl32 = {{(32-VL_W){1'b0}}, m_vl};
    wire         path_valid, path_ready, path_sop, path_eop;
    wire [511:0] path_data;
    hca_tx_path u_path (
        .clk(clk), .rst_n(rst_n),
        .msg_valid(m_valid), .msg_ready(msg_ready), .msg_opcode(m_opcode), .msg_length(m_length),
        .msg_raddr(m_raddr), .msg_rkey(m_rkey), .msg_imm(m_imm), .msg_swap_add(m_swap_add),
        .msg_compare(m_compare), .msg_dlid(m_dlid), .msg_slid(m_slid), .msg_sl(m_sl), .msg_vl(vl32[3:0]),
        .msg_dest_qpn(m_rqpn), .msg_psn(m_psn), .msg_mtu(m_mtu), .msg_ack_every(m_ack_every), .msg_skip(m_skip),
        .pay_valid(path_pay_valid), .pay_ready(pay_ready), .pay_data(pk_data), .pay_start(sq_head[5:0]),
        .out_valid(path_valid), .out_ready(path_ready), .out_data(path_data), .out_sop(path_sop),
        .out_eop(path_eop)
    );

    // The context of each message between dec_* and the path's output, oldest first: popped with the
    // eop of the message's last packet (BTH opcode not FIRST or MIDDLE: not 0, 1, 6, 7).
    // With each context index, whether the message is a resend (its first packet is not the one
    // the count of messages not yet started waits for).
    wire             tg_valid;
    wire [QPN_W:0]   tg_head;
    wire [4:0]       path_op   = path_data[444:440];               // BTH.OpCode, byte 8 (RC: high bits 0)
    wire             op_last_p = !(path_op == 5'd0 || path_op == 5'd1 || path_op == 5'd6 || path_op == 5'd7);
    reg              p_last;                                    // the path's current packet is its message's last
    wire             path_last = path_sop ? op_last_p : p_last;
    wire             path_beat = path_valid && path_ready;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) p_last <= 1'b0;
        else if (path_beat && path_sop) p_last <= op_last_p;
    end
    wire [$clog2(MSG_DEPTH+1)-1:0] tg_count;
    sync_fifo #(.WIDTH(QPN_W + 1), .DEPTH(MSG_DEPTH)) u_tags (
        .clk(clk), .rst_n(rst_n),
        .push_valid(send || rp_take), .push_ready(tg_push_ready), .push_data(send ? {1'b0, dix} : {1'b1, rq}),
        .pop_valid(tg_valid), .pop_ready(path_beat && path_eop && path_last), .pop_data(tg_head),
        .count(tg_count),
        .drop_valid(1'b0), .drop_count({($clog2(MSG_DEPTH+1)){1'b0}})
    );

    // ---- the packet queue, store and forward, into tx_* ----
    localparam integer PQ_W = 515 + QPN_W;
    wire         pq_valid, pq_pop;
    wire [PQ_W-1:0] pq_head;
    reg  [PQ_CW-1:0] pkts;     // whole packets in the queue
    reg              sending;  // the head packet is committed to the port
    reg  [VL_W-1:0]  cur_vl;
    wire [PQ_CW-1:0] pq_count;
    sync_fifo #(.WIDTH(PQ_W), .DEPTH(PKT_BLOCKS)) u_packets (
        .clk(clk), .rst_n(rst_n),
        .push_valid(path_valid), .push_ready(path_ready), .push_data({tg_head, path_sop, path_eop, path_data}),
        .pop_valid(pq_valid), .pop_ready(pq_pop), .pop_data(pq_head),
        .count(pq_count),
        .drop_valid(1'b0), .drop_count({PQ_CW{1'b0}})
    );
    wire [3:0]      head_vl4   = pq_head[511:508];               // LRH.VL, byte 0 bits 7:4
    wire [VL_W-1:0] head_vl    = head_vl4[VL_W-1:0];
    wire [10:0]     head_len   = pq_head[474:464];               // LRH.PktLen, bytes 4..5
    wire [11:0]     blk_sum    = {1'b0, head_len} + 12'd16;
    wire [11:0]     head_blks  = {4'd0, blk_sum[11:4]};
    wire [31:0]     head_vl32  = {28'd0, head_vl4};
    wire            vl_ok      = head_vl32 < VLS;
    wire [11:0]     head_cred  = vl_ok ? tx_vl_credit[head_vl*12 +: 12] : 12'd0;
    wire [11:0]     cred_left  = head_cred - head_blks;
    wire            fits       = vl_ok && cred_left <= 12'd2048;
    // The head packet's context, and whether the purge drops it: popped a beat a cycle, never offered.
    wire [QPN_W-1:0] head_ctx  = pq_head[PQ_W-2:514];
    wire            head_rp    = pq_head[PQ_W-1];               // a resend's packet
    wire            head_dead  = purge_n[head_ctx*IF_W +: IF_W] != {IF_W{1'b0}};
    reg             dropping;  // the head packet is being dropped
    wire            drop_beat  = pq_valid && !sending && (dropping || (pkts != {PQ_CW{1'b0}} && head_dead));
    wire [4:0]      head_op    = pq_head[444:440];
    wire            op_last_h  = !(head_op == 5'd0 || head_op == 5'd1 || head_op == 5'd6 || head_op == 5'd7);
    reg             h_last;    // the head packet is its message's last
    wire            head_last  = pq_head[513] ? op_last_h : h_last;
    wire            offer      = pkts != {PQ_CW{1'b0}} && !sending && !dropping && !head_dead && fits;
    wire            commit     = offer && tx_pick_valid && tx_pick_vl == head_vl;
    assign tx_pick_taken = commit;
    // The head packet starts its message (FIRST, ONLY, a READ request, an atomic: not MIDDLE or
    // LAST) and leaves now: committed to the port, or its first beat dropped.
    wire            head_first = !(head_op == 5'd1 || head_op == 5'd2 || head_op == 5'd3 ||
                                   head_op == 5'd7 || head_op == 5'd8 || head_op == 5'd9);
    wire            head_go    = commit || (drop_beat && !dropping);
    genvar v;
    generate
        for (v = 0; v < VLS; v = v + 1) begin : g_wait
            localparam integer VI = v;
            assign tx_vl_waiting[v] = offer && head_vl == VI[VL_W-1:0];
        end
    endgenerate
    assign tx_valid = pq_valid && (sending || commit);
    assign pq_pop   = (tx_valid && tx_ready) || drop_beat;
    assign tx_data  = pq_head[511:0];
    assign tx_sop   = pq_head[513];
    assign tx_eop   = pq_head[512];
    assign tx_vl    = sending ? cur_vl : head_vl;
    wire   in_eop   = path_valid && path_ready && path_eop;
    wire   out_eop  = pq_pop && pq_head[512];
    wire   out_msg  = out_eop && head_last;   // a message's last packet leaves the queue, sent or dropped
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            pkts     <= {PQ_CW{1'b0}};
            sending  <= 1'b0;
            cur_vl   <= {VL_W{1'b0}};
            dropping <= 1'b0;
            h_last   <= 1'b0;
        end else begin
            if (pq_pop && pq_head[513]) h_last <= op_last_h;
            if (drop_beat) dropping <= !pq_head[512];
            pkts <= pkts + {{(PQ_CW-1){1'b0}}, in_eop} - {{(PQ_CW-1){1'b0}}, out_eop};
            if (commit) cur_vl <= head_vl;
            if (out_eop) sending <= 1'b0;
            else if (commit) sending <= 1'b1;
        end
    end

    // ---- completions ----
    // An ACK (ack_*: the responder acknowledged every PSN through ack_psn on QP ack_qpn) is taken when
    // the engine is idle; for a context holding ack_qpn it walks the context's outstanding messages
    // from the oldest, one a cycle: a SEND or WRITE whose last PSN is at or before ack_psn (24-bit
    // modular: (last - psn) mod 2^24 is 0 or has bit 23) leaves, with a CQE when signaled; the walk
    // ends at the first message the ACK does not cover, or at a READ or atomic (only its response
    // completes it: TODO). A decode completion first flushes the context's outstanding messages
    // (WR_FLUSH_ERR each, signaled or not) and then completes its own WQE.
    // The syndrome (AETH bits 7:5): 000 an ACK, 001 an RNR NAK, 011 a NAK (code in bits 4:0); the
    // others are reserved, and OnAck's switch has no case for them: dropped. So is an ACK for a
    // context in ERR (OnAck in ERR does nothing).
    wire [QPN_W-1:0] aix      = ack_qpn[QPN_W-1:0];
    // A READ response (0x0D..0x10) or an atomic ACK (0x12): the model's OnReadResponse and
    // OnAtomicAck read no syndrome (a MIDDLE has no AETH), so none is refused.
    wire             a_rrd    = ack_op >= 8'h0D && ack_op <= 8'h10;
    wire             a_rsp    = a_rrd || ack_op == 8'h12;
    wire             a_known  = a_rsp || ack_syn[7:5] == 3'b000 || ack_syn[7:5] == 3'b001 || ack_syn[7:5] == 3'b011;
    wire             ack_hit  = ctx_valid[aix] && ctx_qpn[aix] == ack_qpn && !ctx_err[aix] && a_known;
    // The drain is free too: a response dropped without a job (no context) drains its blocks there.
    wire             ack_take = ack_valid && eng_idle && d_left == 7'd0;
    assign ack_ready = eng_idle && d_left == 7'd0;
    // An ACKNOWLEDGE for a QPN no context holds (none written at its index, or one of another QP:
    // a QP destroyed or its context written again) has nowhere to go: dropped, as the model drops
    // a packet for a QP it does not have (hca.Device.deliver), and counted here, where the
    // contexts are (the model counts nothing). One for a context in ERR or with a reserved
    // syndrome is dropped too but not counted: its QP exists.
    wire             no_ctx   = !(ctx_valid[aix] && ctx_qpn[aix] == ack_qpn);
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) no_qp <= 16'd0;
        else if (ack_take && no_ctx && no_qp != 16'hFFFF) no_qp <= no_qp + 16'd1;
    end
    wire [PW-1:0]    e_hd     = oq_hd[e_ctx*PW +: PW];
    wire [PW-1:0]    e_tl     = oq_tl[e_ctx*PW +: PW];
    wire             e_any    = e_hd != e_tl;
    // The ring entry the job reads: the head, or during a response's scan the scanned one (one read
    // port for both).
    wire [PW-1:0]    h_ptr    = e_scan ? e_sp : e_hd;
    wire [100:0]     h_ent    = oq_mem[{e_ctx, h_ptr[OQ_W-1:0]}];
    wire             h_rdat   = h_ent[100];
    wire [QPN_W+OQ_W-1:0] h_ix    = {e_ctx, h_ptr[OQ_W-1:0]};
    wire [31:0]      h_got    = oq_gv[h_ix] ? oq_got[h_ix] : 32'd0;
    // The head is done (a message a response behind an unanswered READ or atomic completed or
    // acknowledged): the walk takes it as an acknowledged one.
    wire             h_dn     = oq_done[{e_ctx, e_hd[OQ_W-1:0]}] && !e_scan && e_lim != {IF_W{1'b0}};
    wire             h_sig    = h_ent[99];
    // The PSN the job acts on: the ACK's or NAK's, or for a timeout the oldest unacknowledged one
    // (hca.Requester.OnTimeout: the head's first PSN plus its acknowledged packets; a READ or atomic
    // from its first).
    // The head's acknowledged packets: its entry's (oq_got), kept per message, so a SEND or WRITE an
    // ACK or NAK acknowledged in part behind an unanswered READ or atomic resends from there once it is
    // the head (the model's acked of a later message).
    wire [23:0]      e_hack   = h_got[23:0];
    wire [23:0]      e_pt     = e_tmo ? h_ent[47:24] + (h_rdat ? 24'd0 : e_hack) : e_psn;
    // An ACK covers a message whose last PSN is at or before its PSN, a NAK one strictly before
    // (ackThrough's inclusive): (last - psn) mod 2^24 is 0 (ACK only) or has bit 23.
    wire [23:0]      h_d      = h_ent[23:0] - e_pt;
    wire             h_acked  = !h_rdat && ((e_incl && h_d == 24'd0) || h_d[23]);
    // The PSN's place in the head: its packets before it (a NAK's find and resend, a response's
    // sequence check).
    wire [23:0]      n_from   = e_pt - h_ent[47:24];
    // A response the model takes (hca.Requester.OnReadResponse, OnAtomicAck), for the head: the scan
    // below found the message holding its PSN and the response in sequence for it (e_ok), and the
    // walk has brought that message to the ring's head (the head holds the PSN). Its sequence: the
    // PSN's index in the message x MTU is the bytes it has had (oq_got: the model's
    // readGot; none for an atomic). One that brings readGot to the READ's length (an atomic's only
    // one) completes it: the walk takes it as it takes an acknowledged SEND or WRITE.
    wire [2:0]       h_op     = h_ent[98:96];
    wire             h_kind   = e_rrd ? h_op == 3'd4 : h_op != 3'd4;
    wire             h_acc    = e_rsp && e_ok && e_lim != {IF_W{1'b0}} && !n_from[23] && !h_d[23];
    // A READ is done when its bytes received reach its length (the model's readGot >= Length), at
    // whatever PSN: the responses' payload lengths are summed, not counted as an MTU each.
    wire [32:0]      rg_sum   = {1'b0, e_mgot} + {20'd0, e_plen};
    wire             m_fin    = !e_rrd || rg_sum >= {1'b0, e_mlen};
    wire             h_fin    = h_acc && m_fin;
    // The message the scan matched takes the response, at the head or behind an unanswered READ or
    // atomic (the model's OnReadResponse, OnAtomicAck take it wherever find puts it).
    wire             m_take   = e_rsp && e_ok && e_lim != {IF_W{1'b0}};
    wire             walking  = eng_busy && eng_ack && !e_nakf && !e_scan;
    // A response's scan (before its walk, a cycle an entry from the head): the model acknowledges
    // the PSNs before a response's (ackThrough) only when the message holding its PSN (find) takes
    // it: a READ response for a READ, an atomic ACK for an atomic, already sent, in sequence (its
    // index x MTU the bytes it has had, uint32(idx x MTU) == readGot: oq_got, 0 for a READ not
    // answered since it was sent).
    // The scan ends at that message (e_ok: the response is in sequence for it), or past the
    // messages sent when the response was taken (e_lim), or at the ring's tail (none holds the PSN:
    // e_ok 0). Without e_ok the walk retires nothing; the implied NAK is judged as after any walk.
    wire [PW-1:0]    s_idx    = e_sp - e_hd;
    wire             s_end    = e_sp == e_tl || {{(IF_W-PW){1'b0}}, s_idx} >= e_lim;
    wire             s_hold   = !n_from[23] && !h_d[23];
    // The scan stops at the first message whose last PSN is at or after the PSN: it holds the PSN
    // (s_hold), or the PSN lies before the ring (an old ACK's: the ring's PSNs are contiguous), and
    // then nothing before it is covered.
    wire             s_stop   = !h_d[23];
    // The PSN's place in the message in bytes (its index x MTU, mod 2^32 as the model's uint32).
    wire [35:0]      d_off    = {12'd0, n_from} << ({2'b0, ctx_mtu[e_ctx]} + 5'd7);
    wire             s_in     = h_rdat && h_kind && d_off[31:0] == h_got && (e_rrd || !oq_done[h_ix]);
    // The walk stops at a message none of whose packets had left when the ACK was taken: the
    // model's ackThrough stops at a message never sent.
    // A response's payload is judged where the walk has no SEND or WRITE left to retire: written
    // through wr0 when the head takes the response (h_acc), else dropped. A READ response's goes to
    // LocalAddr + the bytes of the responses before (the model's LocalAddr + readGot), an atomic's original
    // value to LocalAddr (8 bytes, least significant first, as the model's putLE64), each at its
    // host byte lanes with byte enables on the write's first and last beats (below).
    // The walk waits for the drain: a READ's or atomic's completion leaves after its last beat was taken.
    wire             h_cover  = h_acked && (!e_rsp || e_ok) && e_lim != {IF_W{1'b0}};
    wire             d_dec    = walking && e_drn && !(e_any && h_cover);
    // The write at its decision: one wr0 write per piece of the response, the pieces cut at the
    // elements of its message's list (hca.Device.scatter, sglSlice: the response's bytes go to
    // the list from byte readGot on; an atomic's 8 from byte 0), a cycle an element walked (sc_*,
    // from the list's first, stepping over readGot bytes). A piece of n bytes at host address a from
    // payload byte p: s = a mod 64, p' = p mod 64, r = (s - p') mod 64; host lane k of its beat j holds
    // payload byte p - s + 64j + k, which is lane k - r mod 64 of one source block rotated by r: for
    // lanes k >= r the source block the beat takes (cur), for k < r the one before (d_prev, kept
    // rotated). ceil((s + n) / 64) beats; the last takes d_prev's lanes alone when its last lane
    // (s + n - 1) mod 64 is below r (nothing of a new block in it), and when p' > 0 the piece's first
    // source block is the piece before's last, already taken: d_prev is rotated again by the new r
    // less the old (a cycle, d_prime), and when s >= p' the first beat takes d_prev alone too. Only a
    // beat that takes a source block pops pd_* (an atomic's value is its one source block, never
    // popped). A list of more than one element takes no byte past its end: the walk ends past its
    // last element (sc_end) and the response's blocks no piece took are dropped from pd_* (d_left),
    // as sglSlice covers no byte past the list. A single element takes every byte (all at LocalAddr +
    // readGot, the model's writePayload for a WQE of one data segment, which writes past its length).
    wire             d_take   = m_take && e_any;
    reg  [EX_W-1:0]  sc_ix;                // the message's ring entry, its list
    reg  [4:0]       sc_e;                 // the element walked
    reg  [5:0]       sc_n;                 // the list's elements
    reg  [31:0]      sc_skip;              // list bytes still to step over (readGot)
    reg  [12:0]      sc_rem, sc_p;         // payload bytes still to place; the next piece's first
    reg              d_reuse, d_tlo;       // the piece's first beat, its last, take d_prev alone
    reg  [5:0]       d_r, d_rold;          // the piece's rotation, the piece before's
    wire [95:0]      sc_el    = sg_mem[{sc_ix, sc_e}];
    wire [31:0]      sc_len   = sc_el[95:64];
    wire             sc_one   = sc_n <= 6'd1;   // one data segment: it takes every byte
    // A list's last element passed with bytes left: the walk ends, the rest dropped (a walk that
    // places the last byte ends at that part, below).
    wire             sc_end   = !sc_one && {1'b0, sc_e} >= sc_n;
    wire             sc_past  = !sc_end && sc_skip >= sc_len && !sc_one;
    wire [31:0]      sc_t0    = sc_len - sc_skip;
    wire [31:0]      sc_r32   = {19'd0, sc_rem};
    wire [31:0]      sc_take  = (sc_one || sc_t0 > sc_r32) ? sc_r32 : sc_t0;
    wire [63:0]      sc_a     = sc_el[63:0] + {32'd0, sc_skip};
    wire             sc_step  = sc_on && d_bt == 7'd0 && !d_prime;
    wire             sc_load  = sc_step && !sc_past && !sc_end;
    // At the end, the blocks no piece took: a piece pops the blocks its bytes lie in but a first one
    // shared with the piece before, so the pieces of the payload's first sc_p bytes took
    // ceil(sc_p / 64); an atomic's value is not in pd_*.
    wire [7:0]       sc_took  = {1'b0, sc_p[12:6]} + {7'd0, sc_p[5:0] != 6'd0};
    wire [6:0]       sc_drop  = d_atm ? 7'd0 : e_blk - sc_took[6:0];
    wire [5:0]       pc_q     = sc_p[5:0];
    wire [5:0]       pc_r     = sc_a[5:0] - pc_q;
    wire [5:0]       pc_e     = sc_a[5:0] + sc_take[5:0] - 6'd1;
    wire [13:0]      pc_sn    = {8'd0, sc_a[5:0]} + {1'b0, sc_take[12:0]} + 14'd63;
    // The drain's wr0 writes: a piece's beats back to back as pd_* and wr_ready allow. One 512-bit
    // rotator of six byte stages (by r, or for d_prime by r less the old r, on d_prev) and a lane
    // select, not a 1024-bit shifter. An atomic's source block is its original value in lanes 0..7,
    // least significant byte first (the model's putLE64). Byte enables: the first beat from lane s
    // on, the last up to lane d_e, the rest whole.
    wire             d_pvo    = (d_first && d_reuse) || (d_bt == 7'd1 && d_tlo);  // d_prev's lanes alone
    wire [511:0]     d_cur    = d_prime ? d_prev :
                                d_atm ? {e_orig[7:0], e_orig[15:8], e_orig[23:16], e_orig[31:24],
                                         e_orig[39:32], e_orig[47:40], e_orig[55:48], e_orig[63:56], 448'd0} : pd_data;
    wire [5:0]       d_ra     = d_prime ? d_r - d_rold : d_r;
    wire [511:0]     d_r0     = d_ra[0] ? {d_cur[7:0],   d_cur[511:8]}   : d_cur;  // rotate by 1 byte
    wire [511:0]     d_r1     = d_ra[1] ? {d_r0[15:0],   d_r0[511:16]}   : d_r0;   // 2
    wire [511:0]     d_r2     = d_ra[2] ? {d_r1[31:0],   d_r1[511:32]}   : d_r1;   // 4
    wire [511:0]     d_r3     = d_ra[3] ? {d_r2[63:0],   d_r2[511:64]}   : d_r2;   // 8
    wire [511:0]     d_r4     = d_ra[4] ? {d_r3[127:0],  d_r3[511:128]}  : d_r3;   // 16
    wire [511:0]     d_rot    = d_ra[5] ? {d_r4[255:0],  d_r4[511:256]}  : d_r4;   // 32
    wire [63:0]      d_ge     = d_pvo ? 64'd0 : {64{1'b1}} >> d_r;   // bit 63 - k: lane k >= r, from cur
    wire [63:0]      d_gs     = {64{1'b1}} >> d_addr[5:0];           // lane k >= s
    reg  [511:0]     d_out;
    integer          dk;
    always @* begin
        for (dk = 0; dk < 64; dk = dk + 1)
            d_out[511-8*dk -: 8] = d_ge[63-dk] ? d_rot[511-8*dk -: 8] : d_prev[511-8*dk -: 8];
    end
    wire             d_lastb  = d_bt == 7'd1;
    wire [63:0]      d_be_f   = d_first ? d_gs : {64{1'b1}};
    wire [63:0]      d_be_l   = d_lastb ? ~({64{1'b1}} >> ({1'b0, d_e} + 7'd1)) : {64{1'b1}};
    wire             w_valid  = d_wr && d_bt != 7'd0 && !d_prime && (d_pvo || d_atm || pd_valid);
    wire             w_take   = w_valid && wr_ready;
    wire             h_ok     = h_cover || (h_fin && !d_busy) || h_dn;
    // A NAK that fails a message (REM_INV_REQ, REM_ACCESS, REM_OP): at the walk's end, when a message
    // in the ring holds its PSN (hca.Requester.find), so when the PSN lies from the head's first PSN
    // through the context's last (its next PSN less one: the ring's PSNs are contiguous), modulo
    // 2^24, the flush follows (hca.Requester.fail): every message left in the ring completes, oldest
    // first, signaled or not, the one holding the PSN with the NAK's status and the others with
    // WR_FLUSH_ERR, and the context goes to ERR (and its packets not yet committed are purged).
    wire [23:0]      n_to     = ctx_psn[e_ctx] - 24'd1 - e_pt;
    wire             walk_end = walking && !(e_any && h_ok) && !d_busy;
    wire             nak_fail = walk_end && e_fatal && e_any && !n_from[23] && !n_to[23];
    wire             h_holds  = !n_from[23] && !h_d[23];
    wire [PW-1:0]    a_cnt    = oq_tl[aix*PW +: PW] - oq_hd[aix*PW +: PW];
    wire [IF_W-1:0]  a_cnt_w  = {{(IF_W-PW){1'b0}}, a_cnt};
    wire [IF_W-1:0]  a_unsent = unsent[aix*IF_W +: IF_W];
    wire             out_free = !cpl_valid || cpl_ready;
    wire             pop      = eng_busy && !e_scan && e_any && (walking ? h_ok && (!h_sig || out_free) : out_free);
    wire             emit_hd  = pop && (!walking || h_sig);
    wire             emit_own = eng_busy && !eng_ack && !e_any && out_free;
    // A sequence error or RNR NAK, at the walk's end (hca.Requester.OnAck after its ackThrough and
    // settle). The message it concerns is the ring's head: the walk has retired every message wholly
    // before its PSN, and stopped at the first that is not, or at a READ or atomic. That head holds
    // the PSN (find), or is a READ or atomic already sent whose PSNs all lie before it: its response
    // was lost, an implied NAK (impliedNAK: the retry is from its first PSN, by the sequence error's
    // rules even for an RNR NAK). A retry (retry): none while a retry sequence is under way and no
    // progress has come since (started); else one of retry_cnt is spent (7: infinite), and with none
    // left the head fails with RETRY_EXC_ERR (12). An RNR NAK (not implied): one of rnr_retry spent,
    // none left: RNR_RETRY_EXC_ERR (13); it does not look at started. Progress (a message retired by
    // this walk: settle) restores both counters and clears started first (progressed).
    wire             r_impl   = e_any && h_rdat && e_lim != {IF_W{1'b0}} && h_d[23];
    wire             r_find   = e_any && !n_from[23] && !h_d[23];
    wire             r_seq    = (e_seq && (r_impl || r_find)) || ((e_rnr || e_rsp || e_incl) && r_impl);
    wire             r_rnr    = e_rnr && !r_impl && r_find;
    wire             r_start  = started[e_ctx] && !e_prog && !e_tmo;
    wire [2:0]       r_rl     = e_prog ? RETRY_CNT[2:0] : retry_left[e_ctx*3 +: 3];
    wire [2:0]       r_nl     = e_prog ? RNR_RETRY[2:0] : rnr_left[e_ctx*3 +: 3];
    wire             r_exc    = r_seq && !r_start && RETRY_CNT != 7 && r_rl == 3'd0;
    wire             n_exc    = r_rnr && RNR_RETRY != 7 && r_nl == 3'd0;
    wire             exc_fail = walk_end && (r_exc || n_exc);
    wire             rewind   = walk_end && ((r_seq && !r_start && !r_exc) || (r_rnr && !n_exc));
    // The failure of a NAK or of exhausted retries: the flush follows.
    wire             any_fail = nak_fail || exc_fail;
    wire             eng_done = e_scan ? 1'b0 : walking ? walk_end && !any_fail : (eng_ack ? !e_any : emit_own);
    // The head's packets the ACK or NAK acknowledges (hca.Requester.ackThrough on the message its PSN
    // lies in, the walk having stopped there): PSN - first, + 1 for an ACK. More than before is kept
    // (its entry's oq_got, a_upd); for an ACK it is progress (ackThrough's advanced: counters
    // restored, timer restarted). A response that does not complete the head READ (FIRST, MIDDLE)
    // is one more of its responses (oq_got, the model's readGot), and progress (OnReadResponse:
    // data for the oldest message).
    wire             w_part   = e_any && e_lim != {IF_W{1'b0}} && !n_from[23] && !h_d[23] && (e_rsp ? h_acc : !h_rdat);
    wire [23:0]      w_k      = n_from + {23'd0, e_incl};
    wire             w_more   = w_part && (e_rsp || w_k > e_hack);
    wire             w_adv    = w_more && (e_incl || e_rsp);
    // After the walk: does a message of the context have packets sent (hca.Requester.Outstanding)?
    // After a rewind only when the head resends from a later packet than its first (its sent > 0);
    // else when the ring holds a message whose first packet has been committed, unless a resend
    // still to go starts at the head from its first packet (an ACK may have taken the head past
    // rs_ptr: the resend then starts at the head), which leaves the head with nothing sent.
    wire [PW-1:0]    e_cnt    = e_tl - e_hd;
    wire [IF_W-1:0]  e_cnt_w  = {{(IF_W-PW){1'b0}}, e_cnt};
    wire [PW-1:0]    ep_p0    = rs_ptr[e_ctx*PW +: PW];
    wire             ep_head  = rs_pend[e_ctx] && (ep_p0 - e_hd > e_cnt ||
                                                   (ep_p0 == e_hd && rs_skip[e_ctx*24 +: 24] == 24'd0));
    wire             t_out    = rewind ? !(h_rdat || r_impl) && n_from != 24'd0 :
                                         (e_cnt_w > unsent[e_ctx*IF_W +: IF_W] && !ep_head) ||
                                         (commit && head_ctx == e_ctx);
    // A timer expired: taken as a job when the engine is idle and nothing else wants it (an ACK
    // offered, a decode completion, a context write), for a context in RTS whose ring's head has
    // a packet committed (else the model's OnTimeout does nothing: the timer just stops).
    wire [IF_W-1:0]  t_cnt_w  = {{(IF_W-PW){1'b0}}, oq_tl[tq*PW +: PW] - oq_hd[tq*PW +: PW]};
    wire [IF_W-1:0]  t_unsent = unsent[tq*IF_W +: IF_W];
    wire             tmo_take = tmo_any && eng_idle && !ack_valid && !eng_take && !cfg_take;
    wire             tmo_ok   = ctx_valid[tq] && !ctx_err[tq] && t_cnt_w > t_unsent;
    // The QP's move to ERR from its send side reaches its responder (qp_err, hca_responder's req_err,
    // hca_rq's rq_err through it) once the failure's completions are out: the walk that flushes the
    // context's messages over and its last CQE taken from cpl_* (hca.Device.requesterErr runs after
    // the send side's CQEs, so a receive CQE flushed into the same CQ lands after them; hca_cpl_arb
    // passes what cpl_* offers without a queue). Combinational: a context write clears it with
    // ctx_err, in the cycle the responder's context is written too.
    integer          qe;
    always @* begin
        for (qe = 0; qe < NQ; qe = qe + 1)
            qp_err[qe] = ctx_err[qe] && !(eng_busy && e_ctx == qe[QPN_W-1:0]) &&
                         !(cpl_valid && cpl_qpn[QPN_W-1:0] == qe[QPN_W-1:0]);
    end
    // The RNR timer: the code's delay (ib-facts.md §5; hca.RNRTimerPS) in 10 us units, times RNR_TICK:
    // a table of constants (a ROM), no multiplier.
    localparam [WAIT_W-1:0] TICK = RNR_TICK * 40'd1;
    function [WAIT_W-1:0] rnr_delay(input [4:0] c);
        case (c)
            5'd0: rnr_delay = TICK * 40'd65536;
            5'd1: rnr_delay = TICK * 40'd1;
            5'd2: rnr_delay = TICK * 40'd2;
            5'd3: rnr_delay = TICK * 40'd3;
            5'd4: rnr_delay = TICK * 40'd4;
            5'd5: rnr_delay = TICK * 40'd6;
            5'd6: rnr_delay = TICK * 40'd8;
            5'd7: rnr_delay = TICK * 40'd12;
            5'd8: rnr_delay = TICK * 40'd16;
            5'd9: rnr_delay = TICK * 40'd24;
            5'd10: rnr_delay = TICK * 40'd32;
            5'd11: rnr_delay = TICK * 40'd48;
            5'd12: rnr_delay = TICK * 40'd64;
            5'd13: rnr_delay = TICK * 40'd96;
            5'd14: rnr_delay = TICK * 40'd128;
            5'd15: rnr_delay = TICK * 40'd192;
            5'd16: rnr_delay = TICK * 40'd256;
            5'd17: rnr_delay = TICK * 40'd384;
            5'd18: rnr_delay = TICK * 40'd512;
            5'd19: rnr_delay = TICK * 40'd768;
            5'd20: rnr_delay = TICK * 40'd1024;
            5'd21: rnr_delay = TICK * 40'd1536;
            5'd22: rnr_delay = TICK * 40'd2048;
            5'd23: rnr_delay = TICK * 40'd3072;
            5'd24: rnr_delay = TICK * 40'd4096;
            5'd25: rnr_delay = TICK * 40'd6144;
            5'd26: rnr_delay = TICK * 40'd8192;
            5'd27: rnr_delay = TICK * 40'd12288;
            5'd28: rnr_delay = TICK * 40'd16384;
            5'd29: rnr_delay = TICK * 40'd24576;
            5'd30: rnr_delay = TICK * 40'd32768;
            default: rnr_delay = TICK * 40'd49152;
        endcase
    endfunction
    wire [WAIT_W-1:0] rnr_cycles = rnr_delay(e_code);

    // The per-entry bits. A response behind an unanswered READ or atomic (the model's ackThrough,
    // OnReadResponse, OnAtomicAck on a message not at the head): at its walk's end, when the message
    // it matched is still in the ring, every SEND and WRITE before that message is done (the
    // response acknowledges its PSNs), its readGot moves by the payload, and it is done when that
    // completes it. The walk later takes done messages at the head in order.
    wire [PW-1:0]    m_pos    = e_sp - e_hd;
    wire             m_in     = m_pos < e_tl - e_hd;
    wire             m_upd    = walk_end && m_take && m_in;
    // An ACK's or NAK's walk marks the same way (the model's ackThrough does not stop at a READ or
    // atomic): every SEND and WRITE before the message its scan found holding the PSN (or, none
    // holding it, every one sent), and, for an ACK, that message when its last PSN is the ACK's.
    // m_pos past the ring's count: the walk has taken the matched message (nothing is left before it).
    wire             m_rng    = walk_end && m_pos <= e_tl - e_hd && (e_rsp ? m_take : !e_tmo);
    wire [QPN_W+OQ_W-1:0] m_ix = {e_ctx, e_sp[OQ_W-1:0]};
    // An ACK's or NAK's walk keeps the packets it acknowledges of the SEND or WRITE holding its PSN
    // (ackThrough's acked, when more than before), at the head or behind an unanswered READ or
    // atomic: the entry the scan stopped at. One write port: a response's walk writes a READ's bytes.
    wire             a_upd    = walk_end && !e_rsp && !e_tmo && e_mpart && m_in;
    always @(posedge clk) begin
        if ((m_upd && e_rrd) || a_upd) oq_got[m_ix] <= e_rsp ? rg_sum[31:0] : {8'd0, e_mk};
    end
    integer k;
    reg [OQ_W-1:0]          k_off;
    reg [NQ*OQ_DEPTH-1:0]   m_mark;   // the SENDs and WRITEs before the matched message
    always @* begin
        for (k = 0; k < NQ*OQ_DEPTH; k = k + 1) begin
            k_off     = k[OQ_W-1:0] - e_hd[OQ_W-1:0];
            m_mark[k] = m_rng && k[QPN_W+OQ_W-1:OQ_W] == e_ctx && {1'b0, k_off} < m_pos && !oq_rd[k];
        end
    end
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            oq_rd   <= {(NQ*OQ_DEPTH){1'b0}};
            oq_done <= {(NQ*OQ_DEPTH){1'b0}};
            oq_gv   <= {(NQ*OQ_DEPTH){1'b0}};
        end else begin
            oq_done <= oq_done | m_mark;
            if (m_upd && m_fin) oq_done[m_ix] <= 1'b1;
            if (m_rng && m_in && !e_rsp && e_incl && e_meq) oq_done[m_ix] <= 1'b1;
            if ((m_upd && e_rrd) || a_upd) oq_gv[m_ix] <= 1'b1;
            // A resend of a READ behind the head starts it afresh (the model's rewind); a SEND or
            // WRITE keeps its acknowledged packets (rewind leaves acked).
            if (rp_take && rp_ptr != rp_hd && oq_rd[rp_ix]) oq_gv[rp_ix] <= 1'b0;
            if (send) begin
                oq_rd[{dix, d_tl[OQ_W-1:0]}]   <= is_rdat;
                oq_done[{dix, d_tl[OQ_W-1:0]}] <= 1'b0;
                oq_gv[{dix, d_tl[OQ_W-1:0]}]   <= 1'b0;
            end
            if (cfg_take) begin
                oq_done[cix*OQ_DEPTH +: OQ_DEPTH] <= {OQ_DEPTH{1'b0}};
                oq_gv[cix*OQ_DEPTH +: OQ_DEPTH]   <= {OQ_DEPTH{1'b0}};
            end
        end
    end

    integer q;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            ctx_err   <= {NQ{1'b0}};
            inflight  <= {(NQ*IF_W){1'b0}};
            unsent    <= {(NQ*IF_W){1'b0}};
            e_lim     <= {IF_W{1'b0}};
            rs_pend   <= {NQ{1'b0}};
            rs_ptr    <= {(NQ*PW){1'b0}};
            rs_skip   <= {(NQ*24){1'b0}};
            rs_wait   <= {(NQ*WAIT_W){1'b0}};
            retry_left <= {NQ{RETRY_CNT[2:0]}};
            rnr_left  <= {NQ{RNR_RETRY[2:0]}};
            started   <= {NQ{1'b0}};
            to_on     <= {NQ{1'b0}};
            to_cnt    <= {(NQ*TO_W){1'b0}};
            e_prog    <= 1'b0;
            e_fpop    <= 1'b0;
            purge_n   <= {(NQ*IF_W){1'b0}};
            oq_hd     <= {(NQ*PW){1'b0}};
            oq_tl     <= {(NQ*PW){1'b0}};
            eng_busy  <= 1'b0;
            eng_ack   <= 1'b0;
            e_nakf    <= 1'b0;
            e_scan    <= 1'b0;
            e_drn     <= 1'b0;
            d_left    <= 7'd0;
            d_bt      <= 7'd0;
            d_prime   <= 1'b0;
            sc_on     <= 1'b0;
            e_ctx     <= {QPN_W{1'b0}};
            cpl_valid <= 1'b0;
        end else begin
            for (q = 0; q < NQ; q = q + 1) begin
                if (cfg_take && cix == q[QPN_W-1:0]) begin
                    // A context write (the modify to RTS) starts the QP afresh: nothing outstanding.
                    oq_hd[q*PW +: PW] <= {PW{1'b0}};
                    oq_tl[q*PW +: PW] <= {PW{1'b0}};
                    ctx_err[q]        <= 1'b0;
                end else begin
                    if (send && dix == q[QPN_W-1:0]) oq_tl[q*PW +: PW] <= oq_tl[q*PW +: PW] + {{(PW-1){1'b0}}, 1'b1};
                    if (pop && e_ctx == q[QPN_W-1:0]) oq_hd[q*PW +: PW] <= oq_hd[q*PW +: PW] + {{(PW-1){1'b0}}, 1'b1};
                    if (eng_take && fail_wqe && dix == q[QPN_W-1:0]) ctx_err[q] <= 1'b1;
                    if (any_fail && e_ctx == q[QPN_W-1:0]) ctx_err[q] <= 1'b1;
                end
                // Resends: set by a rewind, cleared when done, by a context write or the context's error.
                if (cfg_take && cix == q[QPN_W-1:0]) begin
                    rs_pend[q]           <= 1'b0;
                    rs_wait[q*WAIT_W +: WAIT_W] <= {WAIT_W{1'b0}};
                    retry_left[q*3 +: 3] <= RETRY_CNT[2:0];
                    rnr_left[q*3 +: 3]   <= RNR_RETRY[2:0];
                    started[q]           <= 1'b0;
                    to_on[q]             <= 1'b0;
                end else begin
                    // The local ACK timer: counts down while it runs; arms at a commit of the
                    // context's packet when it is not running (hca.Device.schedule's armTimer); stops
                    // when its expiry is taken; at a walk's end (hca.Device.afterAck) stops at a
                    // failure, and restarts on progress or a rewind, running only with packets sent.
                    if (to_on[q] && to_cnt[q*TO_W +: TO_W] != {TO_W{1'b0}})
                        to_cnt[q*TO_W +: TO_W] <= to_cnt[q*TO_W +: TO_W] - {{(TO_W-1){1'b0}}, 1'b1};
                    if (tmo_take && tq == q[QPN_W-1:0]) to_on[q] <= 1'b0;
                    if (RETRY_TIMEOUT != 0 && commit && head_ctx == q[QPN_W-1:0] && !to_on[q]) begin
                        to_on[q]               <= 1'b1;
                        to_cnt[q*TO_W +: TO_W] <= TO_LOAD;
                    end
                    if (walk_end && e_ctx == q[QPN_W-1:0]) begin
                        if (any_fail) begin
                            to_on[q] <= 1'b0;
                        end else if (e_prog || w_adv || rewind) begin
                            to_on[q]               <= RETRY_TIMEOUT != 0 && t_out;
                            to_cnt[q*TO_W +: TO_W] <= TO_LOAD;
                        end
                    end
                    if (rs_wait[q*WAIT_W +: WAIT_W] != {WAIT_W{1'b0}})
                        rs_wait[q*WAIT_W +: WAIT_W] <= rs_wait[q*WAIT_W +: WAIT_W] - {{(WAIT_W-1){1'b0}}, 1'b1};
                    if ((rp_take || rp_skp) && rq == q[QPN_W-1:0]) begin
                        rs_ptr[q*PW +: PW]  <= rp_ptr + {{(PW-1){1'b0}}, 1'b1};
                        rs_skip[q*24 +: 24] <= 24'd0;
                    end
                    if (rp_any && rp_done && rq == q[QPN_W-1:0]) rs_pend[q] <= 1'b0;
                    if (walk_end && e_ctx == q[QPN_W-1:0]) begin
                        if (e_prog || w_adv) begin
                            retry_left[q*3 +: 3] <= RETRY_CNT[2:0];
                            rnr_left[q*3 +: 3]   <= RNR_RETRY[2:0];
                            started[q]           <= 1'b0;
                        end
                        if (rewind && r_seq) begin
                            retry_left[q*3 +: 3] <= r_rl - {2'd0, RETRY_CNT != 7};
                            started[q]           <= 1'b1;
                        end
                        if (rewind && r_rnr) rnr_left[q*3 +: 3] <= r_nl - {2'd0, RNR_RETRY != 7};
                        if (rewind) begin
                            // From the head (no pop in this cycle: the walk is over), the head's
                            // packets before the PSN acknowledged (a READ or atomic goes whole).
                            rs_pend[q]                  <= 1'b1;
                            rs_ptr[q*PW +: PW]          <= e_hd;
                            rs_skip[q*24 +: 24]         <= (h_rdat || r_impl) ? 24'd0 : n_from;
                            // A timeout leaves an RNR wait under way alone (the model's holdUntil).
                            if (!e_tmo) rs_wait[q*WAIT_W +: WAIT_W] <= r_rnr ? rnr_cycles : {WAIT_W{1'b0}};
                        end
                    end
                    if ((eng_take && fail_wqe && dix == q[QPN_W-1:0]) || (any_fail && e_ctx == q[QPN_W-1:0]))
                        rs_pend[q] <= 1'b0;
                end
            end
            for (q = 0; q < NQ; q = q + 1) begin
                // inflight: + a message taken, - a message's last packet out of the queue. purge_n: at
                // an error (a WQE the requester cannot take, a NAK's failure), every message of the
                // context in flight (less one leaving now, and one taken now); - each as it leaves.
                // A rewind purges the same way: its messages in flight are sent again from the ring.
                if ((eng_take && fail_wqe && dix == q[QPN_W-1:0]) || ((any_fail || rewind) && e_ctx == q[QPN_W-1:0]))
                    purge_n[q*IF_W +: IF_W] <= inflight[q*IF_W +: IF_W] -
                                              {{(IF_W-1){1'b0}}, out_msg && head_ctx == q[QPN_W-1:0]} +
                                              {{(IF_W-1){1'b0}}, send && dix == q[QPN_W-1:0]};
                else if (out_msg && head_ctx == q[QPN_W-1:0] && purge_n[q*IF_W +: IF_W] != {IF_W{1'b0}})
                    purge_n[q*IF_W +: IF_W] <= purge_n[q*IF_W +: IF_W] - {{(IF_W-1){1'b0}}, 1'b1};
                unsent[q*IF_W +: IF_W] <= unsent[q*IF_W +: IF_W]
                    + {{(IF_W-1){1'b0}}, send && dix == q[QPN_W-1:0]}
                    - {{(IF_W-1){1'b0}}, head_go && head_first && !head_rp && head_ctx == q[QPN_W-1:0]};
                inflight[q*IF_W +: IF_W] <= inflight[q*IF_W +: IF_W]
                    + {{(IF_W-1){1'b0}}, (send && dix == q[QPN_W-1:0]) || (rp_take && rq == q[QPN_W-1:0])}
                    - {{(IF_W-1){1'b0}}, out_msg && head_ctx == q[QPN_W-1:0]};
            end
            if (eng_busy) begin
                if (eng_done) eng_busy <= 1'b0;
                if (any_fail) e_nakf <= 1'b1;
                if (pop && walking) e_prog <= 1'b1;
                if (e_scan && (s_end || s_stop)) e_scan <= 1'b0;
                if (pop && e_nakf) e_fpop <= 1'b1;
            end else if (ack_take && ack_hit) begin
                eng_busy <= 1'b1;
                eng_ack  <= 1'b1;
                e_nakf   <= 1'b0;
                e_prog   <= 1'b0;
                e_fpop   <= 1'b0;
                e_ctx    <= aix;
                e_lim    <= (a_cnt_w > a_unsent) ? a_cnt_w - a_unsent : {IF_W{1'b0}};
                e_scan   <= 1'b1;   // a response's for the message taking it; an ACK's or NAK's for its marking
                e_drn    <= (a_rrd && ack_blk != 7'd0) || (a_rsp && !a_rrd);
            end else if (eng_take) begin
                eng_busy <= 1'b1;
                eng_ack  <= 1'b0;
                e_ctx    <= dix;
            end else if (tmo_take && tmo_ok) begin
                // A timeout's retry: a walk that retires nothing (its PSN is the head's oldest
                // unacknowledged), then the retry by the sequence error's rules.
                eng_busy <= 1'b1;
                eng_ack  <= 1'b1;
                e_nakf   <= 1'b0;
                e_prog   <= 1'b0;
                e_fpop   <= 1'b0;
                e_ctx    <= tq;
                e_lim    <= t_cnt_w - t_unsent;
            end
            if (pop && eng_ack) e_lim <= e_lim - {{(IF_W-1){1'b0}}, 1'b1};
            // The drain: a response dropped without a job drains at once; a job's at its decision.
            if (ack_take && !ack_hit) d_left <= a_rrd ? ack_blk : 7'd0;
            else if (d_dec) begin
                // A READ response's blocks dropped; written, the list walked for its pieces.
                d_left <= (e_rrd && !d_take) ? e_blk : 7'd0;
                sc_on  <= d_take;
                e_drn  <= 1'b0;
            end else if (sc_step && sc_end) d_left <= sc_drop;
            else if (d_left != 7'd0 && pd_valid) d_left <= d_left - 7'd1;
            if (sc_step && (sc_end || (!sc_past && sc_take == sc_r32))) sc_on <= 1'b0;
            if (sc_load) begin
                d_bt    <= pc_sn[12:6];
                d_prime <= pc_q != 6'd0;
            end else begin
                if (d_prime) d_prime <= 1'b0;
                if (w_take) d_bt <= d_bt - 7'd1;
            end
            if (emit_hd || emit_own) cpl_valid <= 1'b1;
            else if (cpl_ready) cpl_valid <= 1'b0;
        end
    end

    always @(posedge clk) begin
        if (eng_idle && ack_take) begin
            e_psn   <= ack_psn;
            // A response acknowledges every PSN before its own (OnReadResponse's ackThrough, not
            // inclusive), fails nothing and retries only on the implied NAK.
            e_incl  <= !a_rsp && ack_syn[7:5] == 3'b000;
            e_fatal <= !a_rsp && ack_syn[7:5] == 3'b011 && ack_syn[4:0] != 5'd0;
            // The NAK codes (IBA 9.7.5.2.4; hca.Requester.OnAck): 1 invalid request, 2 remote
            // access error, 3 and any other a remote operational error.
            e_nst   <= ack_syn[4:0] == 5'd1 ? 8'd9 : ack_syn[4:0] == 5'd2 ? 8'd10 : 8'd11;
            e_seq   <= !a_rsp && ack_syn == 8'h60;
            e_rnr   <= !a_rsp && ack_syn[7:5] == 3'b001;
            e_code  <= ack_syn[4:0];
            e_fhead <= 1'b0;
            e_tmo   <= 1'b0;
            e_rsp   <= a_rsp;
            e_rrd   <= a_rrd;
            e_blk   <= ack_blk;
            e_plen  <= a_rrd ? ack_len : 13'd8;
            e_orig  <= ack_orig;
            e_sp    <= oq_hd[aix*PW +: PW];
            e_ok    <= 1'b0;
            e_meq   <= 1'b0;
            e_mpart <= 1'b0;
        end
        if (ack_take && !ack_hit) begin
            d_wr  <= 1'b0;
            d_atm <= 1'b0;
        end
        if (d_dec) begin
            d_wr    <= d_take;
            d_atm   <= !e_rrd;
            d_prev  <= 512'd0;
            d_r     <= 6'd0;
            sc_ix   <= {e_ctx, e_sp[OQ_W-1:0]};
            sc_e    <= 5'd0;
            sc_n    <= oq_nsg[{e_ctx, e_sp[OQ_W-1:0]}];
            sc_skip <= e_rrd ? e_mgot : 32'd0;
            sc_rem  <= e_plen;
            sc_p    <= 13'd0;
        end
        if (sc_step) begin
            sc_e <= sc_e + 5'd1;
            if (sc_past) sc_skip <= sc_skip - sc_len;
            else begin
                sc_skip <= 32'd0;
                sc_rem  <= sc_rem - sc_take[12:0];
                sc_p    <= sc_p + sc_take[12:0];
            end
        end
        if (sc_load) begin
            d_addr  <= sc_a;
            d_len   <= {3'd0, pc_sn[12:6], 6'd0};
            d_e     <= pc_e;
            d_first <= 1'b1;
            d_reuse <= pc_q != 6'd0 && sc_a[5:0] >= pc_q;
            d_tlo   <= pc_e < pc_r;
            d_r     <= pc_r;
            d_rold  <= d_r;
        end
        if (d_prime) d_prev <= d_rot;
        if (w_take) begin
            d_first <= 1'b0;
            if (!d_pvo) d_prev <= d_rot;
        end
        if (eng_busy && e_scan) begin
            if (!s_end && s_stop) begin
                e_ok   <= s_in && s_hold;
                e_mgot <= h_got;
                e_mlen <= h_ent[79:48];
                e_meq  <= s_hold && !h_rdat && h_d == 24'd0;
                e_mpart <= !e_rsp && s_hold && !h_rdat && w_k > h_got[23:0];
                e_mk    <= w_k;
            end
            else if (!s_end) e_sp <= e_sp + {{(PW-1){1'b0}}, 1'b1};
        end
        if (eng_idle && tmo_take && tmo_ok) begin
            e_psn   <= 24'd0;  // e_pt is the head's oldest unacknowledged PSN
            e_incl  <= 1'b0;
            e_fatal <= 1'b0;
            e_seq   <= 1'b1;
            e_rnr   <= 1'b0;
            e_code  <= 5'd0;
            e_fhead <= 1'b0;
            e_tmo   <= 1'b1;
            e_rsp   <= 1'b0;
            e_rrd   <= 1'b0;
        end
        if (exc_fail) begin
            // Retries exhausted: the head fails (hca.Requester.fail at find(psn), the head here).
            e_nst   <= r_exc ? 8'd12 : 8'd13;
            e_fhead <= 1'b1;
        end
        if (eng_take) begin
            e_flush <= !fail_wqe;
            e_prot  <= !bad_wqe && s_bad;
            e_op    <= dec_opcode;
            e_idx   <= dec_index;
            e_len   <= dec_length;
        end
        if (emit_hd || emit_own) begin
            // hca.Device.sendCompletion's CQE: REQ (cpl_opcode 0, in hca_transport), the status, the
            // WQE's opcode, the QPN, its index as wqe_counter, its length as the byte count.
            cpl_cqn         <= ctx_cqn[e_ctx];
            cpl_qpn         <= ctx_qpn[e_ctx];
            cpl_status      <= emit_own ? (e_flush ? 8'd5 : e_prot ? 8'd4 : 8'd2) :
                               walking ? 8'd0 : (eng_ack && (e_fhead ? !e_fpop : h_holds)) ? e_nst : 8'd5;
            cpl_wr_op       <= emit_own ? e_op : h_ent[98:96];
            cpl_wqe_counter <= emit_own ? e_idx : h_ent[95:80];
            cpl_byte_count  <= emit_own ? e_len : h_ent[79:48];
        end
    end

    assign wr_valid = w_valid;
    assign wr_addr  = d_addr;
    assign wr_len   = d_len;
    assign wr_data  = d_out;
    assign wr_be    = d_be_f & d_be_l;
    assign pd_pop   = (d_left != 7'd0 && pd_valid) || (w_take && !d_pvo && !d_atm);

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, rp_addr, dec_sge_last, wq_up[1:0], el_count, g_end[5:0], pk_dd[511:0], pc_sn[13], pc_sn[5:0], sc_took[7], d_off[35:32], rp_gpsn[31:24], rg_sum[32], h_ptr[PW-1], rp_ent[99], rp_ent[95:80], rp_ent[23:0], rp_end[5:0], npk[32:24], pay_end[5:0], n_from[22:0], n_to[22:0], vl32[31:4], head_vl32, blk_sum[3:0],
                       pay_push_ready,
                       sq_count, pay_count, pq_count, tg_count, tg_valid, 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule
