// hca_rx_ack: the receive side of hca_transport's requester: it checks each received packet as IBA
// requires of a channel adapter before acting on it (the ICRC and the length, LRH.DLID against
// the port's LIDs, BTH.TVer, the P_Key against the port's P_Key table, a unicast DLID), decodes its
// headers and hands every RC ACKNOWLEDGE (BTH opcode 0x11: an ACK or a NAK), RDMA READ response
// (0x0D..0x10) and ATOMIC ACKNOWLEDGE (0x12) that passed to hca_requester's ack_* port, and every
// RC RDMA WRITE request (FIRST 0x06, MIDDLE 0x07, LAST 0x08, ONLY 0x0A; LAST 0x09 and ONLY 0x0B with
// immediate), RDMA READ request (0x0C) and SEND (FIRST 0x00, MIDDLE 0x01, LAST 0x02, ONLY 0x04; LAST
// 0x03 and ONLY 0x05 with immediate) and atomic (CMP_SWAP 0x13, FETCH_ADD 0x14) to hca_responder's
// rq_* port, in the order they came;
// everything else it consumes and drops, counted.
// Go model: hca.Device.complete, hca.Requester.OnAck(BTH.PSN, AETH.Syndrome), OnReadResponse and
// OnAtomicAck on the QP BTH.DestQP names (the model delivers only good packets to the port they name, with LMC 0,
// the P_Key 0xFFFF on every packet and every port, and multicast only to UD QPs, so it has no
// drop here and checks none of the LID, P_Key and multicast rules: every packet it makes passes
// them; the GRH and length rules are its parser's, ib.ParseWire's); rtl/cosim_req_test.go sends
// the responder's ACKs and NAKs as ib.AppendWire's bytes on rx_*, among them copies with one
// corruption each (rtl/cosim_rxcheck_test.go), and requires the completions on cpl_* to be the
// model's and every corrupted copy dropped and counted.
//
// rx_*: the packets ib_rx_vl_buffers gives out (store and forward: a packet whose VCRC or length
// failed never comes), a 64-byte beat a cycle, byte 0 in bits 511:504, valid/ready. They go first
// through an ib_icrc in its check mode (out_icrc_err, out_len_err with out_eop), here rather than
// in hca_transport or hca_top because the decision it feeds is this block's: the packet's fate is
// known only at its last beat, and this block holds what its first beat said until then. The ICRC
// is IBA's end-to-end check (ib/wire.go "ICRC (confirmed)"; ib-facts.md §2): a switch that
// rewrote a variant field reseals only the VCRC, so a packet corrupted before that passes
// ib_link's VCRC check and only the ICRC catches it. ib_icrc adds one cycle: the decoder below
// sees its output register (c_*), and rx_ready is the decoder's ready (ib_icrc's in_ready is its
// out_ready).
//
// Every header this block reads is in a packet's first beat: LRH (8 bytes), then with LRH.LNH =
// 2 (IBA local) the BTH at byte 8 and the AETH at byte 20, with LNH = 3 (IBA global) a GRH of 40
// bytes first, so the BTH at byte 48 and the AETH at byte 60, its last 4 bytes (ib/wire.go;
// ib-facts.md §2). The fields, big-endian: LRH.DLID (bytes 2..3), PktLen (bytes 4..5, bits 10:0),
// BTH.OpCode (BTH byte 0), TVer (BTH byte 1 bits 3:0), P_Key (BTH bytes 2..3), DestQP (bytes
// 5..7), PSN (bytes 9..11), AETH.Syndrome (AETH byte 0). A packet with another LNH (raw) carries
// no BTH and no ICRC: only its DLID and length are checked, and it is dropped as not_req.
//
// The checks, in this order; a packet counts on the first it fails, and only there:
// - icrc_err: the ICRC the packet carried is not the one of its bytes (ib_icrc's out_icrc_err;
//   not for a raw packet, which has none), or PktLen disagrees with the packet's length
//   (out_len_err). The headers of such a packet cannot be trusted, so it is judged on nothing
//   else (Linux rxe_rcv drops a packet whose ICRC fails; ib/wire.go ParseWire refuses it).
// - hdr_err: a unicast LRH.DLID (below 0xC000) not one of the port's: with its low port_lmc bits
//   cleared it is not port_lid (IBA ch. 7, the link layer's DLID check: a CA port owns the
//   2^LMC LIDs from its base LID, PortInfo.LID and PortInfo.LMC, and masks the LMC's low bits
//   before it compares; ib-facts.md §4; Linux qib_ib_rcv's "lid &= ~((1 << ppd->lmc) - 1)"; the
//   subnet manager gives a base LID whose low LMC bits are 0, and one that has them set matches
//   nothing with LMC > 0 here, as in qib), BTH.TVer not 0 (IBA ch. 9, the only transport version;
//   Linux rxe hdr_check's "bad tver"), or an ACKNOWLEDGE's PktLen not its headers' (7 words local,
//   17 global: it carries no payload, ib/wire.go's Opcode.Headers for Acknowledge: BTH and AETH
//   only). A misrouted packet: the fabric's forwarding tables deliver only the port's LIDs.
//   Also hdr_err, ib.ParseWire's rules for a well-formed packet, so the RTL refuses what the
//   model's parser refuses: an IBA packet whose PktLen leaves no room for its LRH, GRH, BTH and
//   ICRC (6 words local, 16 global); a GRH whose IPVer is not 6, NxtHdr not 0x1B (IBA's BTH
//   next) or PayLen not the bytes from the BTH through the ICRC (PktLen x 4 - 48); an RDMA READ
//   response whose PktLen leaves no room for its AETH (FIRST, LAST, ONLY: 7 words local, 17
//   global; MIDDLE has none) and PadCnt's pad bytes; an ATOMIC ACKNOWLEDGE whose PktLen is not
//   its headers' (9 words local, 19 global: stricter than ParseWire, as for an ACK). A READ
//   response's payload against the QP's path MTU (FIRST and MIDDLE carry exactly one, LAST 1..PMTU
//   bytes) is TODO with the response path, which has the QP context. An RDMA WRITE or SEND request
//   whose PktLen leaves no room for its RETH (WRITE FIRST, ONLY, ONLY with immediate: 4 words more;
//   ParseWire's rule), its ImmDt (the four _WITH_IMMEDIATE opcodes: 1 word more) and PadCnt's
//   bytes, or whose payload is above 4096 bytes (no IB path MTU is larger: the payload FIFO and
//   hca_responder take at most 64 blocks a packet; the RTL's rule, ParseWire has none): hdr_err.
// - pkey_viol: BTH.P_Key matches no valid entry of the port's P_Key table (PKEY_N entries,
//   written through pkey_cfg_*). IBA ch. 10's partition rule, as Linux rxe's pkey_match: an entry
//   matches when the low 15 bits (the partition) are equal, not 0, and at least one of the two is
//   a full member (bit 15 set); two limited members of a partition may not talk. A P_Key whose low
//   15 bits are 0 (0x0000, 0x8000) is IBA's invalid P_Key (C10-116, as OpenSM's ib_types.h
//   ib_pkey_is_invalid quotes it: a CI regards it as invalid), never matching, not even an entry
//   that holds it: one test (the entry's low bits not 0) refuses both sides, since the low bits
//   must be equal to match. IBA PortInfo counts these in P_KeyViolations (rxe: bad_pkey_cntr,
//   saturating at 0xFFFF). After reset the table holds 0xFFFF at index 0 (the default partition,
//   full member: the model's wire convention, ib/wire.go "Conventions of ours", docs/pcap.md) and
//   0x0000, invalid, elsewhere, so a port whose table is never written matches the model's
//   packets. A write (pkey_cfg_valid: entry pkey_cfg_index, 16 bits as IBA's P_Key index, gets
//   pkey_cfg_key; an index past the table is ignored) counts for the packets whose first beat
//   comes after the cycle it is taken in (the match is decided at the first beat).
// - mcast_drop: a multicast DLID (0xC000..0xFFFE) or the permissive DLID 0xFFFF. The link layer
//   accepts them (a multicast packet comes to a port because its switch's MFT sends it there;
//   the permissive LID reaches a port whatever its LID, IBA ch. 7), but this block feeds an RC
//   requester, and IBA's multicast is for unreliable datagrams (a multicast packet's DestQP is
//   0xFFFFFF; hca.Device.deliverMcast takes one only for a UD QP attached to its group), and the
//   permissive DLID for subnet management packets to QP0 (directed route). Neither is an error
//   of the packet's headers: a counter of its own, not hdr_err (PortRcvErrors' kind), so a UD
//   receive path can take them later without changing what hdr_err means. Decided after the
//   P_Key, which IBA checks on multicast packets too.
// - Then: an ACKNOWLEDGE, a READ response or an atomic ACK goes to ack_*; an RDMA WRITE, RDMA READ,
//   SEND or atomic request to rq_*; a CNP counts on rsp_todo; anything else on not_req. One for a QPN no context holds is
//   hca_requester's or hca_responder's to count (their no_qp: the contexts are there).
// Decisions:
// - A packet is decided at its last beat (eop), when ib_icrc's flags are known: what its first
//   beat (sop) said is held in seven flags meanwhile (p_*). An ACKNOWLEDGE is one beat local (8 + 12
//   + 4 + ICRC 4 + VCRC 2 = 30 bytes), two global (70 bytes: the second beat holds only the CRCs):
//   a local ACK reaches ack_* a cycle later than before this check, a global one two.
// - An ACKNOWLEDGE, READ response or atomic ACK that passes goes out on ack_* (an output register,
//   valid/ready: ack_qpn = DestQP, ack_psn = PSN, ack_syn = the AETH syndrome, whatever it says:
//   hca_requester decides what a syndrome does, as OnAck does, and reads none for a response, as
//   OnReadResponse and OnAtomicAck read none (a MIDDLE has no AETH: ack_syn is then its first
//   payload byte); ack_op = BTH.OpCode; ack_len = a READ response's payload bytes, PktLen x 4 less
//   its headers (LRH, GRH, BTH, the AETH but for a MIDDLE), its ICRC and PadCnt's pad bytes;
//   ack_orig = an atomic ACK's AtomicAckETH, the original remote value, bytes 24..31 local, with a
//   GRH bytes 64..71, the first 8 of the packet's second beat, loaded there; hca_requester
//   writes it to the atomic's local address); ack_blk = the blocks of a READ response's payload left in the payload
//   FIFO (pd_*, below), which hca_requester takes for wr0 or drops, ack_blk of them, after it
//   has taken the header. The QPN, PSN and syndrome are loaded at its sop, while ack_valid
//   is 0 or the requester takes the previous ACK in the same cycle, and ack_valid rises at its
//   eop, so no second copy of them is needed. The decoder's ready is 0 while the register holds
//   an ACK ack_ready has not taken, for every beat: the packet stream waits (ib_rx_vl_buffers
//   holds the credits meanwhile).
// - A sequence error NAK (syndrome 0x60) or an RNR NAK (0x20..0x3F) also counts on nak_retry:
//   hca_requester completes what it implicitly acknowledges and retries go-back-N (after the RNR
//   wait), or fails the QP when its retry counters are spent (its header).
// - CNPs (0x80, congestion control's; ours) count on rsp_todo and are dropped: TODO with
//   congestion control.
// - An RC RDMA WRITE request that passes goes out on rq_* (an output register, valid/ready, as
//   ack_*: loaded at its sop, or for a RETH with a GRH, which ends in the second beat, at that
//   beat; rq_valid rises at its eop): rq_qpn = DestQP, rq_psn = PSN, rq_op = BTH.OpCode, rq_ackreq
//   = BTH.A, the RETH's VA, R_Key and DMA length (bytes 20..35 local, 60..75 with a GRH; read by
//   hca_responder on a FIRST or ONLY only), rq_len = the payload's bytes (as ack_len: PktLen x 4
//   less LRH, GRH, BTH, the RETH on FIRST/ONLY, the ICRC and PadCnt's bytes). Its payload goes into
//   the same payload FIFO as a READ response's (below), for hca_responder (rpd_*).
// - A SEND (FIRST, MIDDLE, LAST, ONLY, the last two with immediate too) and an RDMA WRITE LAST or
//   ONLY with immediate go out on rq_* the same way, their payload into the same FIFO; rq_imm = the
//   ImmDt (IBA 9.3.3.2: the 4 bytes after the BTH, or after the RETH on WRITE ONLY with immediate,
//   big-endian: bytes 20..23 local, 60..63 with a GRH; WRITE ONLY with immediate 36..39 local, 76..79
//   with a GRH, the second beat's bytes 12..15, loaded there as the RETH's end is), the payload after
//   it (24, 40 local; 64, 80 global). rq_imm is loaded only for the four opcodes with an ImmDt and
//   holds the last one's else (hca_responder reads it only for them). No RETH on a SEND: rq_va,
//   rq_rkey and rq_dlen keep the last RETH's, and the responder does not read them.
// - An RC RDMA READ request (0x0C) that passes goes out on rq_* the same way, its RETH read as a
//   WRITE FIRST's (bytes 20..35, 60..75 with a GRH), rq_len 0, no payload blocks (PktLen must
//   leave room for the RETH and PadCnt's bytes, ib.ParseWire's rule; bytes past it are not looked
//   at, as the model's responder ignores a READ request's payload).
// - An RC atomic (CMP_SWAP 0x13, FETCH_ADD 0x14) that passes goes out on rq_* the same way: rq_va,
//   rq_rkey, rq_swap and rq_cmp from its AtomicETH (bytes 20..47 local; 60..87 with a GRH, the VA's
//   high half in the first beat, the rest the second beat's bytes 0..23, loaded there), rq_len 0,
//   no payload blocks. PktLen must leave room for the AtomicETH and PadCnt's bytes (13 words local,
//   23 global at least; ib.ParseWire's rules, else hdr_err); bytes past it are not looked at, as
//   the model's responder ignores them (IBA gives an atomic no payload; the model's parser takes
//   any as one and Responder.Receive never reads it).
// - Every other packet counts on not_req and is dropped: RC requests hca_responder does not take
//   yet (SEND with invalidate: TODO), UD and other transports, a raw LNH. not_req: "not for the requester nor the responder".
// The counters are 16 bits and saturate at 65535, as ib_link's rcv_errors and IBA's PortInfo
// P_KeyViolations.
// Not checked here (TODO): the GRH's DGID against the port's GIDs (the model's parser does not
// check it either), the QP context's P_Key index (IBA checks a packet against the entry its
// QP uses; here any valid entry passes it, as a port with one partition per QP would), the
// reserved DLID 0 on a port whose port_lid is 0 (not yet given a LID: it matches here), PktLen
// against the headers of requests not taken yet (SEND with invalidate), a READ response's payload
// against the path MTU.
module hca_rx_ack #(
    parameter integer PKEY_N = 4    // entries of the P_Key table (NodeInfo.PartitionCap)
) (
    input  wire         clk,
    input  wire         rst_n,
    input  wire [15:0]  port_lid,   // the port's base LID (PortInfo.LID, set by the subnet manager)
    input  wire [2:0]   port_lmc,   // PortInfo.LMC: the port owns port_lid .. port_lid + 2^LMC - 1
    input  wire         pkey_cfg_valid, // the P_Key table: entry pkey_cfg_index gets pkey_cfg_key
    input  wire [15:0]  pkey_cfg_index,
    input  wire [15:0]  pkey_cfg_key,
    input  wire         rx_valid,
    output wire         rx_ready,
    input  wire [511:0] rx_data,
    input  wire         rx_sop,
    input  wire         rx_eop,
    output reg          ack_valid,
    input  wire         ack_ready,
    output reg  [23:0]  ack_qpn,
    output reg  [23:0]  ack_psn,
    output reg  [7:0]   ack_syn,
    output reg  [7:0]   ack_op,     // BTH.OpCode: 0x11 ACKNOWLEDGE, 0x0D..0x10 a READ response, 0x12 an atomic ACK
    output reg  [12:0]  ack_len,    // a READ response's payload bytes (PktLen x 4 less its headers, ICRC and PadCnt)
    output reg  [63:0]  ack_orig,   // an atomic ACK's AtomicAckETH: the original remote value
    output reg  [6:0]   ack_blk,    // a READ response's payload blocks it left in the payload FIFO (pd_*)
    output reg          rq_valid,   // an RC RDMA WRITE request's header (hca_responder's rq_*)
    input  wire         rq_ready,
    output reg  [23:0]  rq_qpn,
    output reg  [23:0]  rq_psn,
    output reg  [7:0]   rq_op,
    output reg          rq_ackreq,  // BTH.A
    output reg  [63:0]  rq_va,      // the RETH (FIRST, ONLY)
    output reg  [31:0]  rq_rkey,
    output reg  [31:0]  rq_dlen,
    output reg  [12:0]  rq_len,     // the payload's bytes (0..4096)
    output reg  [31:0]  rq_imm,     // the ImmDt (SEND LAST/ONLY and WRITE LAST/ONLY with immediate)
    output reg  [63:0]  rq_swap,    // an atomic's AtomicETH: swap (CMP_SWAP) or add (FETCH_ADD) data
    output reg  [63:0]  rq_cmp,     // an atomic's AtomicETH: compare data (CMP_SWAP)
    output wire         pd_valid,   // the payload FIFO's head block, when a READ response's (the requester's)
    output wire [511:0] pd_data,    // the head block, for either consumer
    input  wire         pd_pop,
    output wire         rpd_valid,  // the payload FIFO's head block, when an RDMA WRITE request's (the responder's)
    input  wire         rpd_pop,
    output reg  [15:0]  nak_retry,  // sequence error and RNR NAKs passed on (hca_requester retries)
    output reg  [15:0]  rsp_todo,   // CNPs: dropped (TODO)
    output reg  [15:0]  not_req,    // packets not for the requester: dropped
    output reg  [15:0]  icrc_err,   // ICRC or length wrong: dropped
    output reg  [15:0]  hdr_err,    // unicast DLID not the port's, TVer not 0, an ACK's PktLen not its headers': dropped
    output reg  [15:0]  pkey_viol,  // P_Key matching no valid table entry (P_KeyViolations): dropped
    output reg  [15:0]  mcast_drop  // multicast or permissive DLID (not for an RC requester): dropped
);
    // The ICRC and length check: one cycle, its output register the decoder's input.
    wire         c_valid, c_sop, c_eop, c_icrc_err, c_len_err;
    wire [511:0] c_data; // as received but for the ICRC's word, which ib_icrc rewrites (not read here)
    // The stream moves while the ACK register is free (or being taken) and the payload FIFO has room
    // for a block (a beat pushes at most one).
    wire         pd_room;
    wire         c_ready = (!ack_valid || ack_ready) && (!rq_valid || rq_ready) && pd_room;
    ib_icrc u_icrc (
        .clk(clk), .rst_n(rst_n),
        .in_valid(rx_valid), .in_ready(rx_ready), .in_data(rx_data), .in_sop(rx_sop), .in_eop(rx_eop),
        .out_valid(c_valid), .out_ready(c_ready), .out_data(c_data), .out_sop(c_sop), .out_eop(c_eop),
        .out_icrc_err(c_icrc_err), .out_len_err(c_len_err)
    );

    // The P_Key table (PKEY_N x 16 flops, entry i in bits 16i+15:16i): 0xFFFF at index 0 after reset,
    // 0x0000 (invalid) elsewhere.
    reg  [16*PKEY_N-1:0] pkey_tab;
    integer      pi;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            for (pi = 0; pi < PKEY_N; pi = pi + 1) pkey_tab[16*pi +: 16] <= pi == 0 ? 16'hFFFF : 16'h0000;
        end else if (pkey_cfg_valid) begin
            for (pi = 0; pi < PKEY_N; pi = pi + 1)
                if (pkey_cfg_index == pi[15:0]) pkey_tab[16*pi +: 16] <= pkey_cfg_key;
        end
    end

    // Byte i of the beat is c_data[511 - 8i -: 8]. Meaningful at a first beat (c_sop).
    wire [1:0]   lnh    = c_data[497:496];                   // LRH byte 1, bits 1:0
    wire         global = lnh == 2'd3;
    wire         is_ib  = lnh[1];                            // LNH 2 or 3
    wire [15:0]  dlid   = c_data[511-8*2 -: 16];             // LRH bytes 2..3
    wire [10:0]  pktlen = c_data[474:464];                   // LRH bytes 4..5, bits 10:0
    // The BTH and AETH: local at bytes 8 and 20, global 40 bytes later (bytes 48 and 60).
    wire [95:0]  bth    = global ? c_data[511-8*48 -: 96] : c_data[511-8*8 -: 96];
    wire [7:0]   syn    = global ? c_data[511-8*60 -: 8]  : c_data[511-8*20 -: 8];
    wire [7:0]   opcode = bth[95:88];                        // BTH byte 0
    wire [3:0]   tver   = bth[83:80];                        // BTH byte 1, bits 3:0
    wire [1:0]   padcnt = bth[85:84];                        // BTH byte 1, bits 5:4
    wire [15:0]  pkey   = bth[79:64];                        // BTH bytes 2..3
    wire [23:0]  dqpn   = bth[55:32];                        // BTH bytes 5..7
    wire [23:0]  psn    = bth[23:0];                         // BTH bytes 9..11
    // For the requester (ack_*): an ACKNOWLEDGE, a READ response, an atomic ACK.
    wire         rd_rsp = is_ib && opcode >= 8'h0D && opcode <= 8'h10;
    wire         at_ack = is_ib && opcode == 8'h12;
    wire         is_ack = is_ib && opcode == 8'h11;
    wire         to_req = is_ack || rd_rsp || at_ack;
    wire         is_rsp = is_ib && opcode == 8'h80;             // a CNP: congestion control's, TODO
    wire         retry  = is_ack && (syn == 8'h60 || syn[7:5] == 3'b001);
    // For the responder (rq_*): an RC RDMA WRITE without immediate, FIRST, MIDDLE, LAST, ONLY; the
    // RETH on FIRST and ONLY.
    wire         wr_req = is_ib && (opcode == 8'h06 || opcode == 8'h07 || opcode == 8'h08 || opcode == 8'h0A);
    wire         wr_reth = opcode == 8'h06 || opcode == 8'h0A;
    // An RDMA READ request (0x0C): its RETH, no payload; to rq_* with rq_len 0 and no blocks.
    wire         rd_req = is_ib && opcode == 8'h0C;
    // A SEND (0x00..0x05: FIRST, MIDDLE, LAST, LAST with immediate, ONLY, ONLY with immediate) and an
    // RDMA WRITE with immediate (0x09 LAST, 0x0B ONLY: its RETH); the four with an ImmDt.
    wire         sd_req = is_ib && (opcode <= 8'h05 || opcode == 8'h09 || opcode == 8'h0B);
    wire         imm    = opcode == 8'h03 || opcode == 8'h05 || opcode == 8'h09 || opcode == 8'h0B;
    wire         wi_reth = opcode == 8'h0B;
    // An atomic (0x13 CMP_SWAP, 0x14 FETCH_ADD): its AtomicETH (VA 8, R_Key 4, swap/add 8, compare
    // 8 bytes), no payload; to rq_* with rq_len 0 and no blocks.
    wire         at_req = is_ib && (opcode == 8'h13 || opcode == 8'h14);
    wire         pay_req = wr_req || sd_req;                  // a request with a payload
    wire         rq_req = pay_req || rd_req || at_req;
    wire         rq_reth = (wr_req && wr_reth) || rd_req || (sd_req && wi_reth);
    wire         rq_imm_w = sd_req && imm;                    // an ImmDt after the BTH (and RETH)
    wire         ackreq = bth[31];                           // BTH byte 8, bit 7 (A)
    // 0xC000..0xFFFF: the multicast LIDs and the permissive LID, the two top bits set.
    wire         mc     = dlid[15:14] == 2'b11;
    wire [15:0]  lmc_keep = 16'hFFFF << port_lmc;            // the bits above the LMC's path bits
    wire         lid_ok = (dlid & lmc_keep) == port_lid;
    // The GRH (bytes 8..47 of a global packet): IPVer (byte 8, bits 7:4) 6, NxtHdr (byte 14) 0x1B
    // (a BTH next), PayLen (bytes 12..13) the bytes from the BTH through the ICRC, PktLen x 4 - 48.
    wire [3:0]   g_ipver  = c_data[511-8*8 -: 4];
    wire [15:0]  g_paylen = c_data[511-8*12 -: 16];
    wire [7:0]   g_nxthdr = c_data[511-8*14 -: 8];
    wire         grh_bad  = global && (g_ipver != 4'd6 || g_nxthdr != 8'h1B ||
                                       g_paylen != {3'd0, pktlen, 2'b00} - 16'd48);
    // The words a packet's headers take with its ICRC (LRH 2, GRH 10, BTH 3, ICRC 1; a READ
    // response's AETH 1 but MIDDLE's; a WRITE's RETH 4 on FIRST and ONLY; an atomic ACK's AETH and
    // AtomicAckETH 3; an atomic request's AtomicETH 7): PktLen must leave room for them and for
    // PadCnt's bytes (ib.ParseWire's rules), and is exactly them for an atomic ACK, which carries no
    // payload (as an ACK: 7 words local, 17 global). A READ request or an atomic carries no payload
    // either (IBA), but ParseWire takes bytes past its headers as a payload and the model's responder
    // ignores them, so here too: only room for the headers and PadCnt's bytes is required (an
    // atomic: 13 words local, 23 global at least).
    wire         has_pay  = rd_rsp || pay_req;               // a packet whose payload goes into the FIFO
    wire         is_mid   = opcode == 8'h0E;
    wire [10:0]  base_w   = global ? 11'd16 : 11'd6;
    wire [10:0]  rsp_w    = base_w + {10'd0, rd_rsp && !is_mid} + {8'd0, rq_reth, 2'b00} + {10'd0, rq_imm_w} +
                            (at_req ? 11'd7 : 11'd0);
    // A READ response's or WRITE request's payload: the words past its headers and ICRC, less
    // PadCnt's bytes (taken on a packet that passes the length rule above, so never below 0).
    wire [12:0]  rsp_pay  = {pktlen - rsp_w, 2'b00} - {11'd0, padcnt};
    wire         rsp_bad  = (has_pay && (pktlen < rsp_w || (pktlen == rsp_w && padcnt != 2'd0))) ||
                            (pay_req && rsp_pay > 13'd4096) ||
                            ((rd_req || at_req) && (pktlen < rsp_w || (pktlen == rsp_w && padcnt != 2'd0))) ||
                            (at_ack && pktlen != base_w + 11'd3);
    wire         hdr_bad  = (!mc && !lid_ok) || (is_ib && tver != 4'd0) ||
                            (is_ib && pktlen < base_w) || grh_bad || rsp_bad ||
                            (is_ack && pktlen != (global ? 11'd17 : 11'd7));
    reg          pkey_ok;
    integer      pm;
    always @* begin
        pkey_ok = 1'b0;
        for (pm = 0; pm < PKEY_N; pm = pm + 1)
            if (pkey_tab[16*pm +: 15] != 15'd0 && pkey[14:0] == pkey_tab[16*pm +: 15] && (pkey[15] || pkey_tab[16*pm+15]))
                pkey_ok = 1'b1;
    end
    wire         pkey_bad = is_ib && !pkey_ok;

    // What the first beat said, held to the last: the flags below at sop, p_* after it.
    reg          p_ib, p_hdr, p_pkey, p_mc, p_ack, p_retry, p_rsp, p_gat, p_wrq, p_grq, p_gim, p_gaq;
    wire         k_ib    = c_sop ? is_ib    : p_ib;
    wire         k_hdr   = c_sop ? hdr_bad  : p_hdr;
    wire         k_pkey  = c_sop ? pkey_bad : p_pkey;
    wire         k_mc    = c_sop ? mc       : p_mc;
    wire         k_ack   = c_sop ? to_req   : p_ack;
    wire         k_retry = c_sop ? retry    : p_retry;
    wire         k_rsp   = c_sop ? is_rsp   : p_rsp;
    wire         k_wrq   = c_sop ? rq_req   : p_wrq;

    wire take = c_valid && c_ready;
    wire head = take && c_sop;
    wire done = take && c_eop;                                // the packet is decided here
    wire crc_bad = c_len_err || (k_ib && c_icrc_err);
    wire d_icrc  = done && crc_bad;
    wire d_hdr   = done && !crc_bad && k_hdr;
    wire d_pkey  = done && !crc_bad && !k_hdr && k_pkey;
    wire d_mc    = done && !crc_bad && !k_hdr && !k_pkey && k_mc;
    wire d_ok    = done && !crc_bad && !k_hdr && !k_pkey && !k_mc;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            ack_valid  <= 1'b0;
            rq_valid   <= 1'b0;
            nak_retry  <= 16'd0;
            rsp_todo   <= 16'd0;
            not_req    <= 16'd0;
            icrc_err   <= 16'd0;
            hdr_err    <= 16'd0;
            pkey_viol  <= 16'd0;
            mcast_drop <= 16'd0;
        end else begin
            if (d_ok && k_ack) ack_valid <= 1'b1;
            else if (ack_ready) ack_valid <= 1'b0;
            if (d_ok && k_wrq) rq_valid <= 1'b1;
            else if (rq_ready) rq_valid <= 1'b0;
            if (d_ok && k_ack && k_retry && nak_retry != 16'hFFFF) nak_retry <= nak_retry + 16'd1;
            if (d_ok && !k_ack && k_rsp && rsp_todo != 16'hFFFF) rsp_todo <= rsp_todo + 16'd1;
            if (d_ok && !k_ack && !k_wrq && !k_rsp && not_req != 16'hFFFF) not_req <= not_req + 16'd1;
            if (d_icrc && icrc_err != 16'hFFFF) icrc_err <= icrc_err + 16'd1;
            if (d_hdr && hdr_err != 16'hFFFF) hdr_err <= hdr_err + 16'd1;
            if (d_pkey && pkey_viol != 16'hFFFF) pkey_viol <= pkey_viol + 16'd1;
            if (d_mc && mcast_drop != 16'hFFFF) mcast_drop <= mcast_drop + 16'd1;
        end
    end

    always @(posedge clk) begin
        if (head) begin
            p_ib    <= is_ib;
            p_hdr   <= hdr_bad;
            p_pkey  <= pkey_bad;
            p_mc    <= mc;
            p_ack   <= to_req;
            p_retry <= retry;
            p_rsp   <= is_rsp;
            p_gat   <= global && at_ack;
            p_wrq   <= rq_req;
            p_grq   <= global && rq_reth;
            p_gim   <= global && rq_imm_w && wi_reth;
            p_gaq   <= global && at_req;
        end
        if (head && to_req) begin
            ack_qpn <= dqpn;
            ack_psn <= psn;
            ack_syn <= syn;
            ack_op  <= opcode;
            ack_len <= rsp_pay;
            // The AtomicAckETH after the AETH: bytes 24..31 local; with a GRH bytes 64..71, the
            // second beat's first 8 (below).
            ack_orig <= c_data[511-8*24 -: 64];
        end
        if (take && !c_sop && p_gat) ack_orig <= c_data[511 -: 64];
        // An RDMA WRITE request: the RETH at bytes 20..35 local; with a GRH at bytes 60..75, the first
        // beat's last 4 (the VA's high half) and the second beat's first 12, loaded there.
        if (head && rq_req) begin
            rq_qpn    <= dqpn;
            rq_psn    <= psn;
            rq_op     <= opcode;
            rq_ackreq <= ackreq;
            rq_len    <= (rd_req || at_req) ? 13'd0 : rsp_pay;
            if (global) rq_va[63:32] <= c_data[511-8*60 -: 32];
            else {rq_va, rq_rkey, rq_dlen} <= c_data[511-8*20 -: 128];
        end
        if (take && !c_sop && p_grq && p_beat == 7'd1) {rq_va[31:0], rq_rkey, rq_dlen} <= c_data[511 -: 96];
        // An atomic's AtomicETH: local at bytes 20..47 (VA 20..27, R_Key 28..31, swap/add 32..39,
        // compare 40..47), all in the first beat; with a GRH at bytes 60..87: the VA's high half in
        // the first beat (loaded above, as a RETH's), the rest the second beat's bytes 0..23.
        if (head && at_req && !global) {rq_va, rq_rkey, rq_swap, rq_cmp} <= c_data[511-8*20 -: 224];
        if (take && !c_sop && p_gaq && p_beat == 7'd1) {rq_va[31:0], rq_rkey, rq_swap, rq_cmp} <= c_data[511 -: 192];
        // The ImmDt: after the BTH (bytes 20..23 local, 60..63 global) or after a WRITE ONLY's RETH
        // (36..39 local; 76..79 global, the second beat's bytes 12..15).
        if (head && rq_imm_w && !(global && wi_reth))
            rq_imm <= c_data[511-8*(global ? 60 : (wi_reth ? 36 : 20)) -: 32];
        if (take && !c_sop && p_gim && p_beat == 7'd1) rq_imm <= c_data[511-8*12 -: 32];
    end

    // ---- READ response and RDMA WRITE payloads, realigned to blocks, into the payload FIFO ----
    // A READ response's payload starts 20 bytes into the packet (a MIDDLE, local: LRH 8, BTH 12), 24
    // (FIRST, LAST, ONLY: the AETH 4 more), 60 or 64 (with a GRH); a WRITE's 20 (MIDDLE, LAST) or 36
    // (FIRST, ONLY: the RETH 16 more), 60 or 76 with a GRH; a SEND's 20, with an ImmDt 24, a WRITE LAST
    // with immediate 24, ONLY with immediate 40 (RETH and ImmDt), 40 more with a GRH: block i is the payload's bytes 64i..64i+63,
    // the bytes from the offset in one beat and the rest from the next, pushed when the next beat
    // comes, at most one a beat, and not past the payload's blocks (at most 64: an MTU of 4096). A
    // payload that ends inside a block may have that last block start in the packet's last beat
    // (one beat at most: the blocks before it were complete by then), with no beat to come: a
    // packet that passes pushes it in the cycle after its last beat (p_tail), from that beat alone
    // (the next beat's bytes taken as 0). That cycle's beat, if any, is a next packet's first,
    // which pushes nothing, so one push a cycle still holds. ack_blk says how many were pushed,
    // the tail's included: ceil(payload / 64) for a READ response that passes (hca_responder counts
    // a WRITE's blocks from rq_len: the same ceil(rq_len / 64)). Those of a packet dropped at its
    // last beat are taken back (the FIFO's drop); a dropped packet pushes no tail.
    // Two consumers, one FIFO: each block carries a tag (1: an RDMA WRITE's, for hca_responder on
    // rpd_*; 0: a READ response's, for hca_requester on pd_*), and each consumer sees and pops the
    // head only when it is its own. Headers leave one at a time in arrival order (the stream waits
    // while ack_* or rq_* holds one), and a packet's blocks are contiguous in the FIFO (all pushed
    // by the cycle after its eop, before the next packet's first), so a consumer whose header is
    // taken finds its blocks at the head once the other has taken those of the packets before it;
    // neither waits on the other for anything but that.
    wire [6:0]   pay_at  = (global ? 7'd48 : 7'd8) + 7'd12 + {4'd0, rd_rsp && !is_mid, 2'b00} +
                           {2'd0, pay_req && rq_reth, 4'd0} +
                           {4'd0, rq_imm_w, 2'b00};            // the payload's first byte in the packet
    wire [5:0]   sh_code = pay_at[5:0];                        // its offset in its beat: 0, 12, 16, 20, 24, 36, 40, 60
    wire         sh_late = pay_at[6];                          // in the second beat (64, 76, 80)
    wire [13:0]  nb_up   = {1'b0, rsp_pay} + 14'd63;
    wire [6:0]   nb_cap  = nb_up[13:6] > 8'd64 ? 7'd64 : nb_up[12:6];
    reg  [511:0] prev;      // the packet's previous beat
    reg  [5:0]   p_sh;      // the payload's offset in its first beat: 20, 24, 36, 40, 60, or 0, 12, 16 in the second (64, 76, 80)
    reg          p_late;    // the payload starts in the second beat
    reg  [6:0]   p_nb;      // its blocks (at most 64)
    reg  [6:0]   p_blk;     // blocks pushed
    reg  [6:0]   p_beat;    // beats taken before this one (saturating)
    reg          p_rdp;     // the packet carries a payload for the FIFO (a READ response, a WRITE or SEND request)
    reg          p_tail;    // the last block of the packet before is still to push, from prev alone
    wire [511:0] nxt     = p_tail ? 512'd0 : c_data;
    reg  [511:0] blk;
    always @* begin
        case (p_sh)
            6'd12:   blk = {prev[415:0], nxt[511:416]};  // 76 bytes on: 12 into the second beat
            6'd16:   blk = {prev[383:0], nxt[511:384]};  // 80 bytes on: 16 into the second beat
            6'd20:   blk = {prev[351:0], nxt[511:352]};  // 20 bytes on
            6'd24:   blk = {prev[319:0], nxt[511:320]};  // 24
            6'd36:   blk = {prev[223:0], nxt[511:224]};  // 36
            6'd40:   blk = {prev[191:0], nxt[511:192]};  // 40
            6'd60:   blk = {prev[31:0],  nxt[511:32]};   // 60
            default: blk = prev;                           // 64: whole beats from the second
        endcase
    end
    wire         ok_now  = !crc_bad && !k_hdr && !k_pkey && !k_mc;  // at the last beat: the packet passes
    wire [6:0]   p_from  = p_late ? 7'd2 : 7'd1;                     // the first beat that completes block 0
    wire         pd_beat = take && !c_sop && p_rdp && p_beat >= p_from && p_blk < p_nb && (!c_eop || ok_now);
    wire         pd_push = pd_beat || (p_tail && pd_push_ready);
    wire         pd_drop = done && !c_sop && p_rdp && !ok_now && p_blk != 7'd0;
    // At a passing last beat: the packet's blocks pushed by then (a one-beat packet's p_* are not
    // loaded yet: its first beat's decode), and whether its last is still to come (the tail).
    wire         k_rdp   = c_sop ? has_pay : p_rdp;
    wire [6:0]   k_blk   = (c_sop ? 7'd0 : p_blk) + {6'd0, pd_beat};
    wire         t_need  = done && ok_now && k_rdp && k_blk < (c_sop ? nb_cap : p_nb);
    wire [7:0]   pd_count;
    wire         pd_push_ready;
    assign pd_room = pd_push_ready;
    localparam integer PD_DEPTH = 128;  // two responses' payloads at MTU 4096 (rtl.RxPayBlocks)
    wire         f_valid, f_tag;
    assign pd_valid  = f_valid && !f_tag;
    assign rpd_valid = f_valid && f_tag;
    sync_fifo #(.WIDTH(513), .DEPTH(PD_DEPTH)) u_payload (
        .clk(clk), .rst_n(rst_n),
        .push_valid(pd_push), .push_ready(pd_push_ready), .push_data({p_wrq, blk}),
        .pop_valid(f_valid), .pop_ready((pd_pop && pd_valid) || (rpd_pop && rpd_valid)), .pop_data({f_tag, pd_data}),
        .count(pd_count),
        .drop_valid(pd_drop), .drop_count({1'b0, p_blk})
    );
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) p_tail <= 1'b0;
        else if (t_need) p_tail <= 1'b1;
        else if (pd_push_ready) p_tail <= 1'b0;
    end
    always @(posedge clk) begin
        if (take) prev <= c_data;
        if (head) begin
            p_sh   <= sh_code;
            p_late <= sh_late;
            p_nb   <= nb_cap;
            p_rdp  <= has_pay;
            p_blk  <= 7'd0;
            p_beat <= 7'd1;
        end else if (take) begin
            if (pd_beat) p_blk <= p_blk + 7'd1;
            if (p_beat != 7'h7F) p_beat <= p_beat + 7'd1;
        end
        // The blocks a READ response left in the FIFO, with its header (set at its last beat; 0 for a
        // packet of one beat, or not a READ response).
        if (done) ack_blk <= k_rdp ? k_blk + {6'd0, t_need} : 7'd0;   // (read for a READ response only)
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ok = &{1'b0, c_data, nxt[31:0], bth[87:84], bth[63:56], bth[30:24], pd_count, nb_up[5:0], 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule
