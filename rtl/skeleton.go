package rtl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// stubPort is one port of a skeleton module whose body is still TODO.
type stubPort struct {
	out   bool   // output (else input)
	name  string // Verilog name
	width string // bits: a number or a parameter expression; "" = 1
	doc   string // comment line placed above the port, if any
}

// stubModule is a large block emitted as its interface contract: ports,
// parameters, a TODO body that keeps outputs idle and marks inputs used, so
// the tree lints clean while the block is being written.
type stubModule struct {
	name   string
	doc    string   // what the block is and its contract; one paragraph per line
	params []string // parameter names, defaults from Params
	ports  []stubPort
	// The part already written: Verilog placed before the idle outputs,
	// the outputs it drives (not tied to 0), the inputs it reads (not
	// gathered as unused) and its own signals that wait for a TODO part
	// (gathered as unused).
	body       string
	driven     []string
	consumed   []string
	bodyUnused []string
}

func portIn(name, width, doc string) stubPort { return stubPort{name: name, width: width, doc: doc} }
func portOut(name, width, doc string) stubPort {
	return stubPort{out: true, name: name, width: width, doc: doc}
}

// stubModules are the skeleton blocks with TODO bodies.
var stubModules = []stubModule{
	{
		name: "ib_link",
		doc: `ib_link: the link / SerDes wrapper of one IB port: LANES lanes of LANE_W bits per cycle on the
serial side, 64-byte blocks and flow-control packets on the core side.
Receive: one block per rx_valid beat, no back-pressure; a flow-control packet raises fc_rx_valid for
one cycle. Transmit: tx_* and fc_tx_* are valid/ready streams; a data packet is never interrupted by
another data packet, nor by a flow-control packet (the transmit port charges FCTBS with all of a
packet's blocks at its head, so an FC packet sent mid-packet would overstate them); the head's
LRH.VL is already tx_vl (the switch's SL-to-VL table may have changed it), which the VCRC must cover.
Written, on the core side: transmit packets go through ib_vcrc, which writes each one's VCRC (over
the LRH with its new VL through the ICRC), and flow-control packets through ib_fc_codec's encoder
(6 bytes with their LPCRC), both towards the PCS; received flow-control packets come from the PCS
through ib_fc_codec's decoder, and fc_rx_valid rises only for Op 0 with a good LPCRC (IBA: a bad one
is ignored). Received data packets come from the PCS through a second ib_vcrc (out_ready 1, a
cycle's latency, as the decoder's) onto rx_*: rx_vl is LRH.VL of the packet's first beat, and
rx_err rises with rx_eop when the packet's VCRC or length failed (the buffers drop it there,
ib_rx_vl_fifos). rcv_errors counts those packets (PortRcvErrors; link.Port's Errors.Packets) and
fc_rcv_errors the flow-control packets whose LPCRC failed (Errors.FCPackets), 16 bits each,
saturating at 65535 as IBA's PortCounters do. The PCS is TODO, so its ready (pcs_tx_ready,
pcs_fc_ready) is tied 0 and tx_ready and fc_tx_ready stay 0 (a testbench forces them), and it
delivers no packet (pcs_rx_*, pcs_fc_rx_* idle: a testbench forces them).
TODO: the PCS (64b/66b, or 256b/257b with RS(544,514) FEC from HDR on; ib-facts.md §1), lane
deskew, link training and the link state machine, packet framing; IBA's end-bad-packet delimiter
for a bad packet whose head a cut-through switch already forwarded (ib_rx_vl_fifos passes it on, and
the transmit ib_vcrc reseals it with a good VCRC); VL15 and the link packet types.`,
		body: `    // Transmit: the VCRC and the flow-control packets' encoding, towards the PCS (TODO).
    wire              pcs_tx_ready = 1'b0; // TODO: the PCS takes a beat
    wire              pcs_fc_ready = 1'b0; // TODO: the PCS takes a flow-control packet
    wire              pcs_tx_valid, pcs_tx_sop, pcs_tx_eop;
    wire [DATA_W-1:0] pcs_tx_data;
    wire              tx_vcrc_err, tx_len_err; // the VCRC a transmit packet came with is not checked
    wire              pcs_fc_valid;
    wire [47:0]       pcs_fc_pkt;
    ib_vcrc u_tx_vcrc (
        .clk(clk), .rst_n(rst_n),
        .in_valid(tx_valid), .in_ready(tx_ready), .in_data(tx_data), .in_sop(tx_sop), .in_eop(tx_eop),
        .out_valid(pcs_tx_valid), .out_ready(pcs_tx_ready), .out_data(pcs_tx_data), .out_sop(pcs_tx_sop),
        .out_eop(pcs_tx_eop), .out_vcrc_err(tx_vcrc_err), .out_len_err(tx_len_err)
    );
    // Received flow-control packets from the PCS (TODO: it delivers none yet), passed on with Op 0
    // and a good LPCRC only.
    wire              pcs_fc_rx_valid = 1'b0;
    wire [47:0]       pcs_fc_rx_pkt = 48'd0;
    wire              fc_dec_valid, fc_dec_err;
    wire [3:0]        fc_dec_op;
    ib_fc_codec u_fc (
        .clk(clk), .rst_n(rst_n),
        .enc_valid(fc_tx_valid), .enc_ready(fc_tx_ready), .enc_fctbs(fc_tx_fctbs), .enc_vl(fc_tx_vl),
        .enc_fccl(fc_tx_fccl), .enc_out_valid(pcs_fc_valid), .enc_out_ready(pcs_fc_ready), .enc_out_pkt(pcs_fc_pkt),
        .dec_valid(pcs_fc_rx_valid), .dec_pkt(pcs_fc_rx_pkt), .dec_out_valid(fc_dec_valid), .dec_out_op(fc_dec_op),
        .dec_out_fctbs(fc_rx_fctbs), .dec_out_vl(fc_rx_vl), .dec_out_fccl(fc_rx_fccl), .dec_out_lpcrc_err(fc_dec_err)
    );
    assign fc_rx_valid = fc_dec_valid && !fc_dec_err && fc_dec_op == 4'd0;
    // Received data packets from the PCS (TODO: it delivers none yet), checked: the VCRC and
    // PktLen's agreement with the length, flagged with the last beat.
    wire              pcs_rx_valid = 1'b0;
    wire              pcs_rx_sop = 1'b0;
    wire              pcs_rx_eop = 1'b0;
    wire [DATA_W-1:0] pcs_rx_data = {DATA_W{1'b0}};
    wire              rx_vcrc_err, rx_len_err;
    wire              rx_in_ready; // always 1: out_ready is 1
    ib_vcrc u_rx_vcrc (
        .clk(clk), .rst_n(rst_n),
        .in_valid(pcs_rx_valid), .in_ready(rx_in_ready), .in_data(pcs_rx_data), .in_sop(pcs_rx_sop),
        .in_eop(pcs_rx_eop), .out_valid(rx_valid), .out_ready(1'b1), .out_data(rx_data), .out_sop(rx_sop),
        .out_eop(rx_eop), .out_vcrc_err(rx_vcrc_err), .out_len_err(rx_len_err)
    );
    assign rx_err = rx_valid && rx_eop && (rx_vcrc_err || rx_len_err);
    // LRH byte 0 is VL(4) | LVer(4): the first beat's VL, held for the packet's other beats.
    reg  [3:0]        rx_vl_q;
    assign rx_vl = (rx_valid && rx_sop) ? rx_data[DATA_W-1 -: 4] : rx_vl_q;
    // PortRcvErrors and the bad flow-control packets, saturating.
    reg  [15:0]       rcv_errors_q, fc_rcv_errors_q;
    assign rcv_errors = rcv_errors_q;
    assign fc_rcv_errors = fc_rcv_errors_q;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            rx_vl_q         <= 4'd0;
            rcv_errors_q    <= 16'd0;
            fc_rcv_errors_q <= 16'd0;
        end else begin
            if (rx_valid && rx_sop) rx_vl_q <= rx_data[DATA_W-1 -: 4];
            if (rx_err && rcv_errors_q != 16'hFFFF) rcv_errors_q <= rcv_errors_q + 16'd1;
            if (fc_dec_valid && fc_dec_err && fc_rcv_errors_q != 16'hFFFF) fc_rcv_errors_q <= fc_rcv_errors_q + 16'd1;
        end
    end
`,
		driven: []string{"tx_ready", "fc_tx_ready", "fc_rx_valid", "fc_rx_vl", "fc_rx_fctbs", "fc_rx_fccl",
			"rx_valid", "rx_data", "rx_sop", "rx_eop", "rx_vl", "rx_err", "rcv_errors", "fc_rcv_errors"},
		consumed: []string{"tx_valid", "tx_data", "tx_sop", "tx_eop", "fc_tx_valid", "fc_tx_vl", "fc_tx_fctbs", "fc_tx_fccl"},
		bodyUnused: []string{"pcs_tx_valid", "pcs_tx_sop", "pcs_tx_eop", "pcs_tx_data", "tx_vcrc_err", "tx_len_err",
			"pcs_fc_valid", "pcs_fc_pkt", "rx_in_ready"},
		params: []string{"LANES", "LANE_W", "DATA_W"},
		ports: []stubPort{
			portIn("serdes_rx", "LANES*LANE_W", "serial side: parallel lane data from the SerDes"),
			portOut("serdes_tx", "LANES*LANE_W", ""),
			portOut("link_up", "", "link state: LinkUp/Active"),
			portOut("rx_valid", "", "received packets, one 64-byte block per beat"),
			portOut("rx_data", "DATA_W", ""),
			portOut("rx_sop", "", ""),
			portOut("rx_eop", "", ""),
			portOut("rx_vl", "4", "LRH.VL of the packet"),
			portOut("rx_err", "", "with rx_eop: the packet's VCRC or length failed; drop it"),
			portOut("rcv_errors", "16", "PortRcvErrors: data packets with rx_err, saturating"),
			portOut("fc_rcv_errors", "16", "flow-control packets whose LPCRC failed, saturating"),
			portOut("fc_rx_valid", "", "received flow-control packet (Op, FCTBS, VL, FCCL)"),
			portOut("fc_rx_vl", "4", ""),
			portOut("fc_rx_fctbs", "12", ""),
			portOut("fc_rx_fccl", "12", ""),
			portIn("tx_valid", "", "packets to send"),
			portIn("tx_data", "DATA_W", ""),
			portIn("tx_sop", "", ""),
			portIn("tx_eop", "", ""),
			portIn("tx_vl", "4", ""),
			portOut("tx_ready", "", ""),
			portIn("fc_tx_valid", "", "flow-control packet to send"),
			portIn("fc_tx_vl", "4", ""),
			portIn("fc_tx_fctbs", "12", ""),
			portIn("fc_tx_fccl", "12", ""),
			portOut("fc_tx_ready", "", ""),
		},
	},
	{
		name: "hca_transport",
		doc: `hca_transport: the RC/UC/UD transport: segments messages into MTU packets with LRH/BTH and
extension headers (ib-facts.md §2), PSNs, ACK/NAK and retransmission, responder checks, and
completions. It takes each send WQE parsed by hca_wqe_fetch (dec_*: the fields of hca.SendWQE,
dec_err != 0 for a WQE the parser rejects, to complete with LOC_QP_OP_ERR) and the WQE's blocks
(wqe_*, whose inline data starts dec_inline_off bytes into the WQE), and asks hca_key_check for
every key a message uses: a gather element's L_Key at decode (need local write for READ and
atomics), an R_Key (with the RETH range) or a receive WQE's L_Key at the responder, and fails the
WQE or NAKs the request on a result other than 0 (ib-facts.md §6). Completions go to
hca_cqe_writer (cpl_*: the fields of hca.CQE that hca.EncodeCQE writes, and the CQ's number).
tx_vl_waiting says which VLs have a packet ready whose length fits the VL's credits (tx_vl_credit:
(FCCL - FCTBS) mod 4096 per VL; a head of b blocks fits when (credit - b) mod 4096 <= 2048, as
credit.Sender.CanSend); the packet may start on
tx_pick_vl when tx_pick_valid (ib_tx_vl_port arbitrates and holds the credits); a head
that starts after the pick cycle needs tx_pick_taken in the pick cycle (ib_tx_vl_port's contract).
Written: the requester's send side for RC SEND, RDMA WRITE, READ requests and atomics,
hca_requester (its header has the contract): QP contexts (2^QPN_W, indexed by a QPN's low bits,
written through qp_cfg_*: QPN, DLID, SLID, SL, VL, remote QPN, next PSN, path MTU, send CQ, receive CQ;
ack_req_every is hca.ack_req_every), the parsed WQEs taken in order from dec_* (one for a context
that does not hold its QPN is dropped: no CQ to complete into; one with dec_err, opcode 7, an
inline length past MAX_INLINE (hca.max_inline_bytes) or the inline flag on a READ or atomic,
a gather list longer than 30 or a READ's or atomic's list of more than one element completes with
LOC_QP_OP_ERR after its context's outstanding messages are flushed, and puts the
context in ERR, where WQEs complete with WR_FLUSH_ERR unsent), each message's first
PSN from its context and the PSNs it takes, its payload read through DMA client rd1 (pay_rd_*,
pay_rsp_*) as the model reads it, a read of each packet's bytes, one per part of them in an element
of its gather list (dec_sge_*: each part at its element's address, each element's L_Key checked first through kc_* in the QP's PD, qp_cfg_pd: a failure
completes the WQE with LOC_PROT_ERR, unsent) into a payload buffer that never takes more
reads than it has room for, packed into one contiguous message, hca_tx_path
(hca_tx_packetizer -> hca_tx_assemble -> ib_icrc) on them, and one packet queue for every VL
(store and forward) offering whole packets on tx_*. Every WQE block on wqe_* is taken (wqe_ready = 1:
hca_wqe_fetch moves a block when both it and the parser can take it) into hca_requester, which keeps
each WQE's first blocks and sends an inline SEND's or WRITE's bytes from them (dec_inline_off on),
copied with its ring entry for resends, through the same payload buffer, no rd1 read. The receive
path: hca_rx_ack checks each packet on rx_* as IBA requires of a CA before acting on it, in this
order, and drops and counts one that fails at its last beat: the ICRC and PktLen against the length
(its own ib_icrc in check mode) on rx_icrc_err; a unicast LRH.DLID that is not one of the port's
2^LMC LIDs (its low port_lmc bits cleared, not port_lid), BTH.TVer not 0, an ACKNOWLEDGE's or an
atomic ACK's PktLen not its headers', or what ib.ParseWire refuses (a GRH's IPVer not 6, NxtHdr not
0x1B or PayLen not PktLen x 4 - 48; a PktLen with no room for the BTH, or for a READ response's AETH
and pad) on rx_hdr_err; BTH.P_Key matching no valid entry of the port's P_Key table (PKEY_N
entries written through pkey_cfg_*, 0xFFFF at index 0 and invalid 0x0000 elsewhere after reset; an
entry matches when the low 15 bits are equal and not 0, IBA's invalid P_Keys 0x0000 and 0x8000
never matching, and one of the two is a full member) on rx_pkey_viol (PortInfo's P_KeyViolations);
a multicast or the permissive DLID (0xC000..0xFFFF: UD's and subnet management's, not an RC
requester's) on rx_mcast_drop. port_lid and port_lmc are the port's base LID and LMC as the subnet
manager set them: the QP contexts' qp_cfg_slid is the SLID their packets carry, which an integrator
sets from the same LIDs (the RTL does not compare them). A packet that passes is decoded
(LRH, GRH when LNH = 3, BTH, AETH, AtomicAckETH): every RC ACKNOWLEDGE, RDMA READ response and
ATOMIC ACKNOWLEDGE goes to hca_requester (QP, PSN, syndrome, opcode, a READ response's payload
length, an atomic ACK's original value) at its last beat, in order (one for a QPN no context holds
is dropped there, counted on rx_no_qp); every RC RDMA WRITE (with or without immediate), RDMA
READ, SEND and atomic (CMP_SWAP, FETCH_ADD) request goes to hca_responder (QP, PSN, opcode, AckReq,
the RETH, the ImmDt, the AtomicETH, a WRITE's or SEND's payload through the same payload FIFO, each
block tagged with its consumer); the rest is dropped and counted: CNPs on rx_rsp_todo (TODO), the
requests the responder does not take yet (SEND with invalidate) and other transports on
rx_not_req; sequence error and RNR NAKs also count on rx_nak_retry. The responder
(hca_responder's header): contexts written with the requester's by qp_cfg_* (its expected PSN
qp_cfg_rqpsn, its path MTU qp_cfg_mtu; a write waits while an ACK waits in its output register or a
READ reply is under way), the PSN and opcode-sequence checks, the R_Key over the RETH range through
kc_* and a WRITE's payload through wr0, both shared with the requester (hca_share_arb: a key check
held until its response, a write whole), READs (RD_RES = hca.max_rd_atomic responder resources per
QP, duplicates replayed from them), its ACKs and NAKs as ACKNOWLEDGE packets and its READ replies as
READ RESPONSE packets, their payload read through rd1 (shared with the requester's payload reads in
hca_share_arb), on tx_* (hca_ack_tx: addressed from the QP's path, through one store-and-forward
response queue in the model's order, ahead of the requester's packets on their VL), its counters on
rsp_*. Completions (cpl_*): an ACK
completes the QP's outstanding SENDs and WRITEs it covers, in order, a CQE for each signaled one;
a READ or atomic completes on its responses (hca.Requester.OnReadResponse, OnAtomicAck): one in
sequence for the message holding its PSN acknowledges the SENDs and WRITEs before it, and the
READ's last (the atomic's only) completes it; one the model drops (out of sequence, a duplicate,
the wrong kind) acknowledges nothing; one past a READ or atomic never answered is the implied NAK
(a retry); a READ response's payload goes to host memory through DMA client wr0 (pay_wr_*) at
exactly LocalAddr + the READ's responses before x MTU through its length, and an atomic's original
value to its local address (8 bytes, least significant first), each realigned to its host byte
lanes with byte enables (pay_wr_be) on the write's first and last beats, its CQE after its last
byte; a NAK completes those before its PSN, and one
with code 1, 2 or 3+ fails the message holding its PSN (REM_INV_REQ_ERR, REM_ACCESS_ERR,
REM_OP_ERR), flushes the rest and puts the QP in ERR (hca.Requester.OnAck); a sequence error or
RNR NAK (or one past a READ or atomic never answered: the implied NAK) makes the requester purge
the QP's packets not yet sent and resend go-back-N from the NAK's packet, after the RNR timer
(RNR_TICK cycles per 10 us) for an RNR NAK, counting RETRY_CNT and RNR_RETRY (hca.retry_cnt,
hca.rnr_retry; 7 infinite): spent, the QP fails with RETRY_EXC_ERR or RNR_RETRY_EXC_ERR. A local
ACK timer per QP (ACK_TICK x 2^RETRY_TIMEOUT cycles: hca.retry_timeout's 4.096 us x 2^t; 0 none)
resends go-back-N from the oldest unacknowledged PSN when it expires, spending RETRY_CNT; a READ
resent after part of its responses asks for the rest (PSN, VA and DMA length moved by the bytes
received, which are summed from the responses' payloads, as the model's readGot); a response in
sequence for a message behind an unanswered READ or atomic is taken as the model takes it (its
data written, the SENDs and WRITEs before it done, done messages not resent, retired in order), and
an ACK marks the SENDs and WRITEs it covers behind one done and, past it, is the implied NAK.
A READ or atomic waits on dec_* while its context has RD_RES (hca.max_rd_atomic) READs and atomics
taken and not retired (hca_requester's MAX_RD_ATOMIC: the model's max_rd_atomic), and the WQEs
behind it on dec_* wait with it (the model holds its own QP only).
TODO: the GRH's DGID and the QP's P_Key index on receive,
max_rd_atomic's hold per QP in hca_wqe_fetch, a queue per VL
(one queue holds every VL's packets behind a head waiting for credits) and the model's transmit buffer
(hca.tx_buffer_bytes), the model's round robin over QPs per packet (a message goes whole here),
UD's SEND_ONLY with a DETH. The responder's atomics (hca_responder's header) read their block
through rd1 (client c of hca_share_arb), write the result through wr0 and answer with an ATOMIC
ACKNOWLEDGE (hca_ack_tx: AETH and AtomicAckETH). The responder's receive completions (rc_*)
share cpl_* with the requester's through hca_cpl_arb (round robin, a waiting pick held), into the
QP's receive CQ, qp_cfg_rcqn (hca.QP.RecvCQ), a context field hca_cpl_arb keeps per QP. The responder takes receive WQEs through rw_* from hca_rq (in hca_top:
the receive queues, their doorbells and prefetch); a context in ERR (rsp_qp_err: its responder
failed, or its requester did, hca_requester's qp_err once the failure's CQEs are out,
hca.Device.requesterErr) has its WQEs flushed through rw_* (rw_flush, rw_req_flush), each
completed with WR_FLUSH_ERR on rc_* (hca.Device.flushRecvs), and its packets dropped.`,
		body: `    // The receive path into the requester: each ACKNOWLEDGE (an ACK or a NAK), READ response and
    // atomic ACK on rx_* whose ICRC, length, DLID, TVer and P_Key pass onto hca_requester's ack_*,
    // a READ response's payload blocks on pd_*; every other packet dropped and counted (hca_rx_ack's
    // header). The requester writes READ responses' payloads and atomics' original values through
    // wr0 (pay_wr_*, with byte enables).
    wire        ack_valid, ack_ready;
    wire [23:0] ack_qpn, ack_psn;
    wire [7:0]  ack_syn, ack_op;
    wire [12:0] ack_len;
    wire [63:0] ack_orig;
    wire [6:0]  ack_blk;
    wire        pd_valid, pd_pop;
    wire [511:0] pd_data;
    // RC RDMA WRITE, READ and SEND requests (hca_rx_ack's rq_*, the ImmDt on rq_imm) into the
    // responder, their payload blocks from the same FIFO (rpd_*: the blocks tagged as a request's).
    wire        rq_valid, rq_ready, rq_ackreq, rpd_valid, rpd_pop;
    wire [23:0] rq_qpn, rq_psn;
    wire [7:0]  rq_op;
    wire [63:0] rq_va;
    wire [31:0] rq_rkey, rq_dlen, rq_imm;
    wire [63:0] rq_swap, rq_cmp; // an atomic's AtomicETH data
    wire [12:0] rq_len;
    hca_rx_ack #(.PKEY_N(PKEY_N)) u_rx_ack (
        .clk(clk), .rst_n(rst_n), .port_lid(port_lid), .port_lmc(port_lmc),
        .pkey_cfg_valid(pkey_cfg_valid), .pkey_cfg_index(pkey_cfg_index), .pkey_cfg_key(pkey_cfg_key),
        .rx_valid(rx_valid), .rx_ready(rx_ready), .rx_data(rx_data), .rx_sop(rx_sop), .rx_eop(rx_eop),
        .ack_valid(ack_valid), .ack_ready(ack_ready), .ack_qpn(ack_qpn), .ack_psn(ack_psn), .ack_syn(ack_syn),
        .ack_op(ack_op), .ack_len(ack_len), .ack_orig(ack_orig), .ack_blk(ack_blk),
        .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_qpn(rq_qpn), .rq_psn(rq_psn), .rq_op(rq_op),
        .rq_ackreq(rq_ackreq), .rq_va(rq_va), .rq_rkey(rq_rkey), .rq_dlen(rq_dlen), .rq_len(rq_len), .rq_imm(rq_imm),
        .rq_swap(rq_swap), .rq_cmp(rq_cmp),
        .pd_valid(pd_valid), .pd_data(pd_data), .pd_pop(pd_pop), .rpd_valid(rpd_valid), .rpd_pop(rpd_pop),
        .nak_retry(rx_nak_retry), .rsp_todo(rx_rsp_todo), .not_req(rx_not_req),
        .icrc_err(rx_icrc_err), .hdr_err(rx_hdr_err), .pkey_viol(rx_pkey_viol), .mcast_drop(rx_mcast_drop)
    );
    // One QP context write (qp_cfg_*) configures the requester's context, the responder's (its
    // QPN, first expected PSN qp_cfg_rqpsn, PD) and the ACK packets' (the path), taken when both
    // engines can take it and no ACK waits in the responder's output register, which is built into
    // a packet with the context of the QP that made it (hca.Device.ModifyQP: the responder at RTR
    // with RQPSN, the requester at RTS with SQPSN, the same PD).
    wire        q_cfg_ready, r_cfg_ready, rs_ack_valid, rs_ack_ready, at_busy;
    wire        cfg_free = !rs_ack_valid && !at_busy;
    assign qp_cfg_ready = q_cfg_ready && r_cfg_ready && cfg_free;
    // The requester (client a) and the responder (client b) share hca_key_check and wr0
    // (hca_share_arb: a key check held until its response, a write whole).
    wire        a_kc_req_valid, a_kc_req_ready, a_kc_rsp_valid, a_kc_rsp_ready;
    wire        b_kc_req_valid, b_kc_req_ready, b_kc_rsp_valid, b_kc_rsp_ready;
    wire [31:0] a_kc_req_key, a_kc_req_pd, b_kc_req_key, b_kc_req_pd;
    wire [3:0]  a_kc_req_need, b_kc_req_need;
    wire [63:0] a_kc_req_addr, a_kc_req_len, b_kc_req_addr, b_kc_req_len;
    wire        a_wr_valid, a_wr_ready, b_wr_valid, b_wr_ready;
    wire [63:0] a_wr_addr, b_wr_addr, a_wr_be, b_wr_be;
    wire [15:0] a_wr_len, b_wr_len;
    wire [511:0] a_wr_data, b_wr_data;
    // DMA client rd1: the requester's payload reads (client a), hca_ack_tx's READ response
    // payloads (client b) and the responder's atomic blocks (client c), each response block routed
    // to the client whose read it answers.
    wire        a_rd_valid, a_rd_ready, a_rd_rsp_valid, b_rd_valid, b_rd_ready, b_rd_rsp_valid;
    wire        c_rd_valid, c_rd_ready, c_rd_rsp_valid;
    wire [63:0] a_rd_addr, b_rd_addr, c_rd_addr;
    wire [15:0] a_rd_len, b_rd_len, c_rd_len;
    hca_share_arb u_share (
        .clk(clk), .rst_n(rst_n),
        .a_kc_req_valid(a_kc_req_valid), .a_kc_req_ready(a_kc_req_ready), .a_kc_req_key(a_kc_req_key),
        .a_kc_req_pd(a_kc_req_pd), .a_kc_req_need(a_kc_req_need), .a_kc_req_addr(a_kc_req_addr),
        .a_kc_req_len(a_kc_req_len), .a_kc_rsp_valid(a_kc_rsp_valid), .a_kc_rsp_ready(a_kc_rsp_ready),
        .b_kc_req_valid(b_kc_req_valid), .b_kc_req_ready(b_kc_req_ready), .b_kc_req_key(b_kc_req_key),
        .b_kc_req_pd(b_kc_req_pd), .b_kc_req_need(b_kc_req_need), .b_kc_req_addr(b_kc_req_addr),
        .b_kc_req_len(b_kc_req_len), .b_kc_rsp_valid(b_kc_rsp_valid), .b_kc_rsp_ready(b_kc_rsp_ready),
        .kc_req_valid(kc_req_valid), .kc_req_ready(kc_req_ready), .kc_req_key(kc_req_key), .kc_req_pd(kc_req_pd),
        .kc_req_need(kc_req_need), .kc_req_addr(kc_req_addr), .kc_req_len(kc_req_len),
        .kc_rsp_valid(kc_rsp_valid), .kc_rsp_ready(kc_rsp_ready),
        .a_wr_valid(a_wr_valid), .a_wr_ready(a_wr_ready), .a_wr_addr(a_wr_addr), .a_wr_len(a_wr_len),
        .a_wr_data(a_wr_data), .a_wr_be(a_wr_be),
        .b_wr_valid(b_wr_valid), .b_wr_ready(b_wr_ready), .b_wr_addr(b_wr_addr), .b_wr_len(b_wr_len),
        .b_wr_data(b_wr_data), .b_wr_be(b_wr_be),
        .wr_valid(pay_wr_valid), .wr_ready(pay_wr_ready), .wr_addr(pay_wr_addr), .wr_len(pay_wr_len),
        .wr_data(pay_wr_data), .wr_be(pay_wr_be),
        .a_rd_req_valid(a_rd_valid), .a_rd_req_ready(a_rd_ready), .a_rd_req_addr(a_rd_addr),
        .a_rd_req_len(a_rd_len), .a_rd_rsp_valid(a_rd_rsp_valid),
        .b_rd_req_valid(b_rd_valid), .b_rd_req_ready(b_rd_ready), .b_rd_req_addr(b_rd_addr),
        .b_rd_req_len(b_rd_len), .b_rd_rsp_valid(b_rd_rsp_valid),
        .c_rd_req_valid(c_rd_valid), .c_rd_req_ready(c_rd_ready), .c_rd_req_addr(c_rd_addr),
        .c_rd_req_len(c_rd_len), .c_rd_rsp_valid(c_rd_rsp_valid),
        .rd_req_valid(pay_rd_valid), .rd_req_ready(pay_rd_ready), .rd_req_addr(pay_rd_addr),
        .rd_req_len(pay_rd_len), .rd_rsp_valid(pay_rsp_valid)
    );
    // The responder for RC RDMA WRITE and READ (hca_responder's header): its ACKs, NAKs and READ
    // replies into hca_ack_tx,
    // its counters on rsp_*.
    wire [23:0] rs_ack_qpn, rs_ack_psn, rs_ack_msn;
    wire [7:0]  rs_ack_syn;
    wire        rs_ack_read, rs_ack_mid;
    wire [63:0] rs_ack_va;
    wire [31:0] rs_ack_len;
    wire [2:0]  rs_ack_mtu;
    // Its SEND and WRITE-with-immediate side: hca_rx_ack hands it SENDs and WRITEs with immediate (and
    // their ImmDt), its min_rnr_timer comes per QP with the context (qp_cfg_rnr), and it takes each
    // message's receive WQE through rw_* from hca_rq (hca_top's receive queues: none posted, an RNR NAK
    // with the QP's timer, as the model's responder); its receive completions on rc_* go to cpl_*
    // through hca_cpl_arb (below), into the QP's receive CQ.
    wire        rs_rc_valid, rs_rc_ready;
    wire [23:0] rs_rc_qpn;
    wire [3:0]  rs_rc_opcode;
    wire [7:0]  rs_rc_status;
    wire [15:0] rs_rc_index;
    wire [31:0] rs_rc_len, rs_rc_imm;
    // Its atomics (FETCH_ADD, CMP_SWAP from hca_rx_ack, with their AtomicETH): the block read
    // through rd1 (client c of hca_share_arb), the result written through wr0, the ATOMIC
    // ACKNOWLEDGE (ack_atomic, ack_orig) built by hca_ack_tx.
    wire        rs_ack_atomic;
    wire [63:0] rs_ack_orig;
    // A QP whose requester goes to ERR (a NAK that fails a message, retries spent, a WQE that cannot
    // be sent) is in ERR on its receive side too once the failure's completions are out
    // (hca.Device.requesterErr): the responder drops its packets and flushes its receive WQEs.
    wire [(1<<QPN_W)-1:0] req_qp_err;
    // A READ reply's resource and last PSN go with it into hca_ack_tx, which gives them back on
    // fin_* when that response is picked by the port: the resource is free for a new READ or atomic
    // (hca.Responder.claimRes; one still in use: NAK invalid request).
    wire [7:0]  rs_ack_res, rs_fin_res;
    wire [23:0] rs_ack_last, rs_fin_qpn, rs_fin_psn;
    wire        rs_fin_valid;
    hca_responder #(.QPN_W(QPN_W), .ACK_COALESCE(ACK_COALESCE), .RD_RES(RD_RES)) u_responder (
        .clk(clk), .rst_n(rst_n),
        .cfg_valid(qp_cfg_valid && q_cfg_ready && cfg_free), .cfg_ready(r_cfg_ready), .cfg_qpn(qp_cfg_qpn),
        .cfg_psn(qp_cfg_rqpsn), .cfg_pd(qp_cfg_pd), .cfg_mtu(qp_cfg_mtu), .cfg_rnr(qp_cfg_rnr),
        .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_qpn(rq_qpn), .rq_psn(rq_psn), .rq_op(rq_op),
        .rq_ackreq(rq_ackreq), .rq_va(rq_va), .rq_rkey(rq_rkey), .rq_dlen(rq_dlen), .rq_len(rq_len),
        .rq_imm(rq_imm), .rq_swap(rq_swap), .rq_cmp(rq_cmp),
        .rd_req_valid(c_rd_valid), .rd_req_ready(c_rd_ready), .rd_req_addr(c_rd_addr), .rd_req_len(c_rd_len),
        .rd_rsp_valid(c_rd_rsp_valid), .rd_rsp_data(pay_rsp_data),
        .rw_req_valid(rw_req_valid), .rw_req_ready(rw_req_ready), .rw_req_qpn(rw_req_qpn), .rw_rsp_valid(rw_rsp_valid),
        .rw_rsp_ready(rw_rsp_ready), .rw_rsp_ok(rw_rsp_ok), .rw_rsp_index(rw_rsp_index), .rw_rsp_addr(rw_rsp_addr),
        .rw_rsp_len(rw_rsp_len), .rw_rsp_lkey(rw_rsp_lkey), .rw_rsp_nsge(rw_rsp_nsge),
        .rw_sge_valid(rw_sge_valid), .rw_sge_q(rw_sge_q), .rw_sge_index(rw_sge_index), .rw_sge_k(rw_sge_k),
        .rw_sge_addr(rw_sge_addr), .rw_sge_len(rw_sge_len), .rw_sge_lkey(rw_sge_lkey),
        .rw_req_flush(rw_req_flush), .rw_flush(rw_flush), .qp_err(rsp_qp_err), .req_err(req_qp_err),
        .rc_valid(rs_rc_valid), .rc_ready(rs_rc_ready), .rc_qpn(rs_rc_qpn), .rc_opcode(rs_rc_opcode),
        .rc_status(rs_rc_status), .rc_index(rs_rc_index), .rc_len(rs_rc_len), .rc_imm(rs_rc_imm),
        .pd_valid(rpd_valid), .pd_data(pd_data), .pd_ready(rpd_pop),
        .kc_req_valid(b_kc_req_valid), .kc_req_ready(b_kc_req_ready), .kc_req_key(b_kc_req_key),
        .kc_req_pd(b_kc_req_pd), .kc_req_need(b_kc_req_need), .kc_req_addr(b_kc_req_addr),
        .kc_req_len(b_kc_req_len), .kc_rsp_valid(b_kc_rsp_valid), .kc_rsp_ready(b_kc_rsp_ready),
        .kc_rsp_result(kc_rsp_result),
        .wr_valid(b_wr_valid), .wr_addr(b_wr_addr), .wr_len(b_wr_len), .wr_data(b_wr_data), .wr_be(b_wr_be),
        .wr_ready(b_wr_ready),
        .ack_valid(rs_ack_valid), .ack_ready(rs_ack_ready), .ack_qpn(rs_ack_qpn), .ack_psn(rs_ack_psn),
        .ack_syn(rs_ack_syn), .ack_msn(rs_ack_msn), .ack_read(rs_ack_read), .ack_va(rs_ack_va),
        .ack_len(rs_ack_len), .ack_mtu(rs_ack_mtu), .ack_mid(rs_ack_mid),
        .ack_atomic(rs_ack_atomic), .ack_orig(rs_ack_orig), .ack_res(rs_ack_res), .ack_last(rs_ack_last),
        .fin_valid(rs_fin_valid), .fin_qpn(rs_fin_qpn), .fin_res(rs_fin_res), .fin_psn(rs_fin_psn),
        .cnt_acks(rsp_acks), .cnt_naks(rsp_naks), .cnt_dup(rsp_dup), .cnt_seq_drop(rsp_seq_drop),
        .cnt_err_drop(rsp_err_drop), .cnt_no_qp(rsp_no_qp), .cnt_todo(rsp_todo)
    );
    // The responder's ACKs and NAKs as ACKNOWLEDGE packets on tx_*, ahead of the requester's packets
    // on their VL (hca_ack_tx's header); the requester's transmit port goes through it.
    wire [VLS-1:0]  r_vl_waiting;
    wire            r_pick_valid, r_pick_taken, r_tx_valid, r_tx_sop, r_tx_eop, r_tx_ready;
    wire [511:0]    r_tx_data;
    wire [VL_W-1:0] r_tx_vl;
    hca_ack_tx #(.QPN_W(QPN_W), .VLS(VLS), .VL_W(VL_W)) u_ack_tx (
        .clk(clk), .rst_n(rst_n),
        .cfg_valid(qp_cfg_valid && qp_cfg_ready), .cfg_qpn(qp_cfg_qpn), .cfg_dlid(qp_cfg_dlid), .cfg_slid(qp_cfg_slid),
        .cfg_sl(qp_cfg_sl), .cfg_vl(qp_cfg_vl), .cfg_rqpn(qp_cfg_rqpn), .busy(at_busy),
        .ack_valid(rs_ack_valid), .ack_ready(rs_ack_ready), .ack_qpn(rs_ack_qpn), .ack_psn(rs_ack_psn),
        .ack_syn(rs_ack_syn), .ack_msn(rs_ack_msn), .ack_read(rs_ack_read), .ack_va(rs_ack_va),
        .ack_len(rs_ack_len), .ack_mtu(rs_ack_mtu), .ack_mid(rs_ack_mid),
        .ack_atomic(rs_ack_atomic), .ack_orig(rs_ack_orig), .ack_res(rs_ack_res), .ack_last(rs_ack_last),
        .fin_valid(rs_fin_valid), .fin_qpn(rs_fin_qpn), .fin_res(rs_fin_res), .fin_psn(rs_fin_psn),
        .rd_req_valid(b_rd_valid), .rd_req_ready(b_rd_ready), .rd_req_addr(b_rd_addr), .rd_req_len(b_rd_len),
        .rd_rsp_valid(b_rd_rsp_valid), .rd_rsp_data(pay_rsp_data),
        .r_vl_waiting(r_vl_waiting), .r_pick_valid(r_pick_valid), .r_pick_taken(r_pick_taken),
        .r_tx_valid(r_tx_valid), .r_tx_data(r_tx_data), .r_tx_sop(r_tx_sop), .r_tx_eop(r_tx_eop), .r_tx_vl(r_tx_vl),
        .r_tx_ready(r_tx_ready),
        .tx_vl_waiting(tx_vl_waiting), .tx_vl_credit(tx_vl_credit), .tx_pick_valid(tx_pick_valid),
        .tx_pick_vl(tx_pick_vl), .tx_pick_taken(tx_pick_taken),
        .tx_valid(tx_valid), .tx_data(tx_data), .tx_sop(tx_sop), .tx_eop(tx_eop), .tx_vl(tx_vl), .tx_ready(tx_ready)
    );
    // The requester's send side and completions (hca_requester's header); its completions on q_cpl_*.
    wire             q_cpl_valid, q_cpl_ready;
    wire [CQN_W-1:0] q_cpl_cqn;
    wire [7:0]       q_cpl_status;
    wire [2:0]       q_cpl_wr_op;
    wire [23:0]      q_cpl_qpn;
    wire [15:0]      q_cpl_wqe_counter;
    wire [31:0]      q_cpl_byte_count;
    hca_requester #(.QPN_W(QPN_W), .VLS(VLS), .VL_W(VL_W), .CQN_W(CQN_W), .RETRY_CNT(RETRY_CNT),
                    .RNR_RETRY(RNR_RETRY), .RNR_TICK(RNR_TICK), .ACK_TICK(ACK_TICK),
                    .RETRY_TIMEOUT(RETRY_TIMEOUT), .MAX_INLINE(MAX_INLINE), .MAX_RD_ATOMIC(RD_RES)) u_requester (
        .clk(clk), .rst_n(rst_n),
        .qp_cfg_valid(qp_cfg_valid && r_cfg_ready && cfg_free), .qp_cfg_ready(q_cfg_ready), .qp_cfg_qpn(qp_cfg_qpn), .qp_cfg_dlid(qp_cfg_dlid),
        .qp_cfg_slid(qp_cfg_slid), .qp_cfg_sl(qp_cfg_sl), .qp_cfg_vl(qp_cfg_vl), .qp_cfg_rqpn(qp_cfg_rqpn),
        .qp_cfg_psn(qp_cfg_psn), .qp_cfg_mtu(qp_cfg_mtu), .qp_cfg_cqn(qp_cfg_cqn), .qp_cfg_pd(qp_cfg_pd),
        .ack_req_every(ack_req_every),
        .dec_valid(dec_valid), .dec_ready(dec_ready), .dec_err(dec_err), .dec_opcode(dec_opcode),
        .dec_index(dec_index), .dec_qpn(dec_qpn), .dec_signaled(dec_signaled), .dec_fm(dec_fm), .dec_imm(dec_imm),
        .dec_raddr(dec_raddr), .dec_rkey(dec_rkey),
        .dec_swap_add(dec_swap_add), .dec_compare(dec_compare), .dec_inline(dec_inline),
        .dec_inline_off(dec_inline_off), .dec_length(dec_length), .dec_laddr(dec_laddr), .dec_sges(dec_sges),
        .dec_sge_valid(dec_sge_valid), .dec_sge_ready(dec_sge_ready), .dec_sge_len(dec_sge_len),
        .dec_sge_lkey(dec_sge_lkey), .dec_sge_addr(dec_sge_addr), .dec_sge_last(dec_sge_last),
        .wqe_valid(wqe_valid), .wqe_data(wqe_data),
        .fence_busy(fence_busy), .qp_err(req_qp_err),
        .kc_req_valid(a_kc_req_valid), .kc_req_ready(a_kc_req_ready), .kc_req_key(a_kc_req_key),
        .kc_req_pd(a_kc_req_pd), .kc_req_need(a_kc_req_need), .kc_req_addr(a_kc_req_addr),
        .kc_req_len(a_kc_req_len), .kc_rsp_valid(a_kc_rsp_valid), .kc_rsp_ready(a_kc_rsp_ready),
        .kc_rsp_result(kc_rsp_result),
        .rd_req_valid(a_rd_valid), .rd_req_addr(a_rd_addr), .rd_req_len(a_rd_len),
        .rd_req_ready(a_rd_ready), .rd_rsp_valid(a_rd_rsp_valid), .rd_rsp_data(pay_rsp_data),
        .tx_vl_waiting(r_vl_waiting), .tx_vl_credit(tx_vl_credit), .tx_pick_valid(r_pick_valid),
        .tx_pick_vl(tx_pick_vl), .tx_pick_taken(r_pick_taken),
        .tx_valid(r_tx_valid), .tx_data(r_tx_data), .tx_sop(r_tx_sop), .tx_eop(r_tx_eop), .tx_vl(r_tx_vl),
        .tx_ready(r_tx_ready),
        .ack_valid(ack_valid), .ack_ready(ack_ready), .ack_qpn(ack_qpn), .ack_psn(ack_psn), .ack_syn(ack_syn),
        .ack_op(ack_op), .ack_len(ack_len), .ack_orig(ack_orig), .ack_blk(ack_blk),
        .pd_valid(pd_valid), .pd_data(pd_data), .pd_pop(pd_pop),
        .wr_valid(a_wr_valid), .wr_addr(a_wr_addr), .wr_len(a_wr_len), .wr_data(a_wr_data),
        .wr_be(a_wr_be), .wr_ready(a_wr_ready),
        .no_qp(rx_no_qp),
        .cpl_valid(q_cpl_valid), .cpl_ready(q_cpl_ready), .cpl_cqn(q_cpl_cqn), .cpl_status(q_cpl_status),
        .cpl_wr_op(q_cpl_wr_op), .cpl_qpn(q_cpl_qpn), .cpl_wqe_counter(q_cpl_wqe_counter),
        .cpl_byte_count(q_cpl_byte_count)
    );
    // Completions: the requester's (send CQ, its context's; REQ, REQ_ERR by hca_cqe_writer when the
    // status is not 0, no immediate, as hca.Device.sendCompletion) and the responder's receive
    // completions (the QP's receive CQ, qp_cfg_rcqn, kept per context in hca_cpl_arb) share cpl_*
    // round robin (hca_cpl_arb's header).
    hca_cpl_arb #(.QPN_W(QPN_W), .CQN_W(CQN_W)) u_cpl_arb (
        .clk(clk), .rst_n(rst_n),
        .cfg_valid(qp_cfg_valid && qp_cfg_ready), .cfg_qpn(qp_cfg_qpn), .cfg_rcqn(qp_cfg_rcqn),
        .a_valid(q_cpl_valid), .a_ready(q_cpl_ready), .a_cqn(q_cpl_cqn), .a_status(q_cpl_status),
        .a_wr_op(q_cpl_wr_op), .a_qpn(q_cpl_qpn), .a_wqe_counter(q_cpl_wqe_counter), .a_byte_count(q_cpl_byte_count),
        .b_valid(rs_rc_valid), .b_ready(rs_rc_ready), .b_qpn(rs_rc_qpn), .b_opcode(rs_rc_opcode),
        .b_status(rs_rc_status), .b_index(rs_rc_index), .b_len(rs_rc_len), .b_imm(rs_rc_imm),
        .cpl_valid(cpl_valid), .cpl_ready(cpl_ready), .cpl_cqn(cpl_cqn), .cpl_opcode(cpl_opcode),
        .cpl_status(cpl_status), .cpl_receiver(cpl_receiver), .cpl_wr_op(cpl_wr_op), .cpl_qpn(cpl_qpn),
        .cpl_wqe_counter(cpl_wqe_counter), .cpl_byte_count(cpl_byte_count), .cpl_imm(cpl_imm),
        .cpl_src_qp(cpl_src_qp)
    );
    // WQE blocks: every one taken (hca_wqe_fetch moves a block when both the parser and this take
    // it); the requester keeps each WQE's first blocks for its inline data (hca_requester's header).
    assign wqe_ready = 1'b1;
`,
		driven: []string{"qp_cfg_ready", "wqe_ready", "dec_ready", "dec_sge_ready", "fence_busy", "rw_req_valid", "rw_req_qpn", "rw_rsp_ready", "rw_req_flush", "rsp_qp_err",
			"rw_sge_valid", "rw_sge_q", "rw_sge_index", "rw_sge_k", "kc_req_valid", "kc_req_key", "kc_req_pd",
			"kc_req_need", "kc_req_addr", "kc_req_len", "kc_rsp_ready", "pay_rd_valid", "pay_rd_addr", "pay_rd_len",
			"pay_wr_valid", "pay_wr_addr", "pay_wr_len", "pay_wr_data", "pay_wr_be", "tx_vl_waiting",
			"tx_pick_taken", "tx_valid", "tx_data", "tx_sop", "tx_eop", "tx_vl", "rx_ready", "rx_nak_retry", "rx_rsp_todo",
			"rx_not_req", "rx_icrc_err", "rx_hdr_err", "rx_pkey_viol", "rx_mcast_drop", "rx_no_qp", "rsp_acks", "rsp_naks", "rsp_dup", "rsp_seq_drop", "rsp_err_drop",
			"rsp_no_qp", "rsp_todo", "cpl_valid", "cpl_cqn",
			"cpl_opcode", "cpl_status", "cpl_receiver", "cpl_wr_op", "cpl_qpn", "cpl_wqe_counter", "cpl_byte_count",
			"cpl_imm", "cpl_src_qp"},
		consumed: []string{"qp_cfg_valid", "qp_cfg_qpn", "qp_cfg_dlid", "qp_cfg_slid", "qp_cfg_sl", "qp_cfg_vl",
			"qp_cfg_rqpn", "qp_cfg_psn", "qp_cfg_rqpsn", "qp_cfg_rnr", "qp_cfg_mtu", "qp_cfg_cqn", "qp_cfg_rcqn", "qp_cfg_pd", "ack_req_every", "dec_valid", "dec_err", "dec_opcode",
			"dec_index", "dec_qpn", "dec_signaled", "dec_fm", "dec_imm", "dec_raddr", "dec_rkey", "dec_swap_add", "dec_compare", "dec_inline",
			"dec_inline_off", "wqe_valid", "wqe_data", "dec_length", "dec_laddr", "dec_sges", "dec_sge_valid", "dec_sge_len", "dec_sge_lkey", "dec_sge_addr", "dec_sge_last",
			"rw_req_ready", "rw_rsp_valid", "rw_rsp_ok", "rw_rsp_index", "rw_rsp_addr", "rw_rsp_len", "rw_rsp_lkey", "rw_flush",
			"rw_rsp_nsge", "rw_sge_addr", "rw_sge_len", "rw_sge_lkey", "kc_req_ready", "kc_rsp_valid", "kc_rsp_result", "pay_rd_ready", "pay_rsp_valid", "pay_rsp_data", "pay_wr_ready", "tx_vl_credit",
			"tx_pick_valid", "tx_pick_vl", "tx_ready", "port_lid", "port_lmc", "pkey_cfg_valid", "pkey_cfg_index",
			"pkey_cfg_key", "rx_valid", "rx_data", "rx_sop", "rx_eop", "cpl_ready"},
		params: []string{"VLS", "VL_W", "DATA_W", "CQN_W", "QPN_W", "RETRY_CNT", "RNR_RETRY", "RNR_TICK", "ACK_TICK", "RETRY_TIMEOUT",
			"PKEY_N", "ACK_COALESCE", "MAX_INLINE", "RD_RES"},
		ports: []stubPort{
			portIn("qp_cfg_valid", "", "QP contexts (hca_requester): the path, remote QPN, next PSN and path MTU (IBA code 1..5)"),
			portOut("qp_cfg_ready", "", "taken while no completion work or ACK is under way and none of the context's messages is between dec_* and tx_*, the responder is between packets and no ACK waits in it"),
			portIn("qp_cfg_qpn", "24", ""),
			portIn("qp_cfg_dlid", "16", ""),
			portIn("qp_cfg_slid", "16", ""),
			portIn("qp_cfg_sl", "4", ""),
			portIn("qp_cfg_vl", "VL_W", ""),
			portIn("qp_cfg_rqpn", "24", ""),
			portIn("qp_cfg_psn", "24", "the requester's next PSN (ModifyQP's SQPSN)"),
			portIn("qp_cfg_rqpsn", "24", "the responder's first expected PSN (ModifyQP's RQPSN at RTR)"),
			portIn("qp_cfg_rnr", "5", "the responder's min_rnr_timer (ModifyQP's at RTR; IBA's RNR timer code, hca.min_rnr_timer), in its RNR NAKs"),
			portIn("qp_cfg_mtu", "3", ""),
			portIn("qp_cfg_cqn", "CQN_W", "the QP's send CQ"),
			portIn("qp_cfg_rcqn", "CQN_W", "the QP's receive CQ (hca.QP.RecvCQ): the responder's receive completions"),
			portIn("qp_cfg_pd", "32", "the QP's protection domain: its gather elements' L_Keys are checked in it"),
			portIn("ack_req_every", "17", "hca.ack_req_every: AckReq on every Nth packet of a message (1..65536)"),
			portIn("wqe_valid", "", "WQE blocks from hca_wqe_fetch (inline data)"),
			portIn("wqe_qpn", "24", ""),
			portIn("wqe_data", "DATA_W", ""),
			portOut("wqe_ready", "", ""),
			portIn("dec_valid", "", "parsed send WQEs from hca_wqe_fetch (hca_wqe_parse's out_* ports)"),
			portOut("dec_ready", "", ""),
			portIn("dec_err", "2", "0 parsed, 1 opcode not supported, 2 no room for the data segment"),
			portIn("dec_opcode", "3", "ibv_wr_opcode"),
			portIn("dec_index", "16", ""),
			portIn("dec_qpn", "24", ""),
			portIn("dec_bbs", "5", ""),
			portIn("dec_signaled", "", ""),
			portIn("dec_fm", "3", "the fence mode (hca.SendWQE.FenceMode): modes 2 and 4 wait for the QP's earlier READs and atomics"),
			portIn("dec_imm", "32", ""),
			portIn("dec_raddr", "64", ""),
			portIn("dec_rkey", "32", ""),
			portIn("dec_swap_add", "64", ""),
			portIn("dec_compare", "64", ""),
			portIn("dec_inline", "", ""),
			portIn("dec_inline_len", "31", ""),
			portIn("dec_inline_off", "7", ""),
			portIn("dec_length", "32", ""),
			portIn("dec_lkey", "32", ""),
			portIn("dec_laddr", "64", ""),
			portIn("dec_dlid", "16", ""),
			portIn("dec_rqpn", "24", ""),
			portIn("dec_qkey", "32", ""),
			portIn("dec_sges", "6", "the WQE's data segments (0: inline or an error)"),
			portIn("dec_sge_valid", "", "its data segments, one a beat (hca_wqe_parse's sge_*): hca_requester's gather list (L_Keys unchecked: kc_* TODO)"),
			portOut("dec_sge_ready", "", ""),
			portIn("dec_sge_len", "32", ""),
			portIn("dec_sge_lkey", "32", ""),
			portIn("dec_sge_addr", "64", ""),
			portIn("dec_sge_last", "", ""),
			portOut("fence_busy", "(1<<QPN_W)", "per context: a READ or atomic unanswered in its ring, so hca_wqe_fetch keeps a fenced WQE of it in its QP's buffer"),
			portOut("rw_req_valid", "", "the responder's receive WQE takes (hca_rq's rw_*): the next WQE of QP rw_req_qpn"),
			portIn("rw_req_ready", "", ""),
			portOut("rw_req_qpn", "24", ""),
			portIn("rw_rsp_valid", "", ""),
			portOut("rw_rsp_ready", "", ""),
			portIn("rw_rsp_ok", "", "0: none posted (nothing taken); 1: the WQE below, taken with the answer"),
			portIn("rw_rsp_index", "16", "the WQE's index in its queue (the CQE's wqe_counter)"),
			portIn("rw_rsp_addr", "64", "its first scatter element's address, its elements' summed length, the first's L_Key"),
			portIn("rw_rsp_len", "32", ""),
			portIn("rw_rsp_lkey", "32", ""),
			portIn("rw_rsp_nsge", "6", "its elements (hca.DecodeRecvWQE's): 0 none (mlx5's empty list), 2 or more a list read on rw_sge_*"),
			portOut("rw_sge_valid", "", "the responder reads element rw_sge_k of WQE rw_sge_index of context rw_sge_q (hca_rq's store, combinationally; between takes)"),
			portOut("rw_sge_q", "QPN_W", ""),
			portOut("rw_sge_index", "16", ""),
			portOut("rw_sge_k", "5", ""),
			portIn("rw_sge_addr", "64", ""),
			portIn("rw_sge_len", "32", ""),
			portIn("rw_sge_lkey", "32", ""),
			portOut("rw_req_flush", "", "a flush take (a context in ERR): the oldest WQE not taken, answered at once, completed WR_FLUSH_ERR"),
			portIn("rw_flush", "(1<<QPN_W)", "per context: WQEs announced and not taken while in ERR (hca_rq's)"),
			portOut("rsp_qp_err", "(1<<QPN_W)", "per context: the QP in ERR, its responder's or its requester's failure (hca_rq's rq_err: no more WQE reads, its WQEs flushed)"),
			portOut("kc_req_valid", "", "key checks (hca_key_check): each gather element's L_Key at WQE decode (hca_requester; kc_req_tag 0), an RDMA WRITE's R_Key at the responder (hca_share_arb between the two)"),
			portIn("kc_req_ready", "", ""),
			portOut("kc_req_key", "32", ""),
			portOut("kc_req_pd", "32", ""),
			portOut("kc_req_need", "4", ""),
			portOut("kc_req_addr", "64", ""),
			portOut("kc_req_len", "64", ""),
			portOut("kc_req_tag", "24", ""),
			portIn("kc_rsp_valid", "", ""),
			portOut("kc_rsp_ready", "", ""),
			portIn("kc_rsp_result", "3", "0 pass, 1 invalid key, 2 PD mismatch, 3 access denied, 4 out of bounds"),
			portIn("kc_rsp_tag", "24", ""),
			portOut("pay_rd_valid", "", "payload reads (DMA client rd1)"),
			portOut("pay_rd_addr", "64", ""),
			portOut("pay_rd_len", "16", ""),
			portIn("pay_rd_ready", "", ""),
			portIn("pay_rsp_valid", "", ""),
			portIn("pay_rsp_data", "DATA_W", ""),
			portOut("pay_wr_valid", "", "payload writes (DMA client wr0): READ responses' payloads, atomics' original values (hca_requester), RDMA WRITE payloads (hca_responder)"),
			portOut("pay_wr_addr", "64", ""),
			portOut("pay_wr_len", "16", "bytes, on a write's first beat (whole blocks; hca_dma_engine)"),
			portOut("pay_wr_data", "DATA_W", ""),
			portOut("pay_wr_be", "64", "the beat's byte enables: bit 63 - k for the byte at data[511-8k -: 8]"),
			portIn("pay_wr_ready", "", ""),
			portOut("tx_vl_waiting", "VLS", "transmit: VLs with a packet ready, and the VL arbiter's choice"),
			portIn("tx_vl_credit", "VLS*12", ""),
			portIn("tx_pick_valid", "", ""),
			portIn("tx_pick_vl", "VL_W", ""),
			portOut("tx_pick_taken", "", ""),
			portOut("tx_valid", "", "transmit packets, one block per beat"),
			portOut("tx_data", "DATA_W", ""),
			portOut("tx_sop", "", ""),
			portOut("tx_eop", "", ""),
			portOut("tx_vl", "VL_W", ""),
			portIn("tx_ready", "", ""),
			portIn("port_lid", "16", "the port's base LID (PortInfo.LID, from the subnet manager): a received unicast LRH.DLID with its low port_lmc bits cleared must be it"),
			portIn("port_lmc", "3", "PortInfo.LMC: the port owns the 2^LMC LIDs from port_lid (0: one)"),
			portIn("pkey_cfg_valid", "", "the port's P_Key table (PKEY_N entries; 0xFFFF at index 0, 0x0000 elsewhere after reset): entry pkey_cfg_index gets pkey_cfg_key; a received BTH.P_Key must match a valid entry"),
			portIn("pkey_cfg_index", "16", "an index past the table is ignored"),
			portIn("pkey_cfg_key", "16", ""),
			portIn("rx_valid", "", "received packets from the VL buffers"),
			portIn("rx_data", "DATA_W", ""),
			portIn("rx_sop", "", ""),
			portIn("rx_eop", "", ""),
			portIn("rx_vl", "VL_W", ""),
			portOut("rx_ready", "", ""),
			portOut("rx_nak_retry", "16", "received sequence error and RNR NAKs, which hca_requester retries (saturating)"),
			portOut("rx_rsp_todo", "16", "received CNPs, dropped: TODO (saturating)"),
			portOut("rx_not_req", "16", "received packets neither for the requester nor for the responder (requests other than RDMA WRITE, other transports), dropped (saturating)"),
			portOut("rx_icrc_err", "16", "received packets whose ICRC or length failed, dropped (saturating)"),
			portOut("rx_hdr_err", "16", "received packets whose unicast DLID is not one of the port's LIDs, TVer not 0, GRH or length malformed (hca_rx_ack's header), dropped (saturating)"),
			portOut("rx_pkey_viol", "16", "received packets whose P_Key matches no valid P_Key table entry, dropped: P_KeyViolations (saturating)"),
			portOut("rx_mcast_drop", "16", "received packets to a multicast or the permissive DLID (0xC000..0xFFFF), dropped: not for an RC requester (saturating)"),
			portOut("rx_no_qp", "16", "received ACKNOWLEDGEs and responses for a QPN no QP context holds, dropped (saturating)"),
			portOut("rsp_acks", "16", "the responder's counters (hca_responder's cnt_*; saturating): ACKs sent (as ACKNOWLEDGE packets on tx_*)"),
			portOut("rsp_naks", "16", "NAKs sent"),
			portOut("rsp_dup", "16", "duplicate WRITE packets re-ACKed"),
			portOut("rsp_seq_drop", "16", "packets ahead dropped after their gap's sequence NAK"),
			portOut("rsp_err_drop", "16", "packets for a context in ERR, dropped"),
			portOut("rsp_no_qp", "16", "WRITE requests for a QPN no context holds, dropped"),
			portOut("rsp_todo", "16", "requests of a kind the responder does not handle yet, dropped"),
			portOut("cpl_valid", "", "completions (hca_cqe_writer's cpl_* ports)"),
			portIn("cpl_ready", "", ""),
			portOut("cpl_cqn", "CQN_W", ""),
			portOut("cpl_opcode", "4", "CQE opcode on success: 0 REQ, 1 RESP_WR_IMM, 2 RESP_SEND, 3 RESP_SEND_IMM"),
			portOut("cpl_status", "8", "ibv_wc_status"),
			portOut("cpl_receiver", "", ""),
			portOut("cpl_wr_op", "3", ""),
			portOut("cpl_qpn", "24", ""),
			portOut("cpl_wqe_counter", "16", ""),
			portOut("cpl_byte_count", "32", ""),
			portOut("cpl_imm", "32", ""),
			portOut("cpl_src_qp", "24", ""),
		},
	},
}

// value returns the default of a named Verilog parameter.
func (p Params) value(name string) int {
	switch name {
	case "PORTS":
		return p.Ports
	case "PORT_W":
		return p.PortW
	case "VLS":
		return p.VLs
	case "VL_W":
		return p.VLW
	case "DATA_W":
		return p.DataW
	case "LANES":
		return p.Lanes
	case "LANE_W":
		return p.LaneW
	case "CQN_W":
		return p.CQNW
	case "QPN_W":
		return p.QPNW
	case "RETRY_CNT":
		return p.RetryCnt
	case "RNR_RETRY":
		return p.RNRRetry
	case "RNR_TICK":
		return p.RNRTick
	case "ACK_TICK":
		return p.ACKTick
	case "RETRY_TIMEOUT":
		return p.RetryTimeout
	case "PKEY_N":
		return p.PKeyN
	case "ACK_COALESCE":
		return p.AckCoalesce
	case "MAX_INLINE":
		return p.MaxInline
	case "RD_RES":
		return p.RdRes
	}
	panic(fmt.Sprintf("rtl.Params.value: unknown parameter %q", name))
}

// render writes the module text (without the file header).
func (m stubModule) render(p Params) string {
	var b strings.Builder
	for _, line := range strings.Split(m.doc, "\n") {
		b.WriteString("// " + line + "\n")
	}
	b.WriteString("module " + m.name)
	if len(m.params) > 0 {
		b.WriteString(" #(\n")
		for i, name := range m.params {
			sep := ","
			if i == len(m.params)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "    parameter integer %s = %d%s\n", name, p.value(name), sep)
		}
		b.WriteString(")")
	}
	b.WriteString(" (\n")
	decl := func(s stubPort) string {
		dir := "input "
		if s.out {
			dir = "output"
		}
		rng := ""
		switch {
		case s.width == "":
		case isNumber(s.width):
			n, _ := strconv.Atoi(s.width)
			rng = fmt.Sprintf("[%d:0] ", n-1)
		default:
			rng = fmt.Sprintf("[%s-1:0] ", s.width)
		}
		return fmt.Sprintf("    %s wire %s%s", dir, rng, s.name)
	}
	lines := []string{"    input  wire clk", "    input  wire rst_n"}
	for _, s := range m.ports {
		if s.doc != "" {
			lines = append(lines, "    // "+s.doc)
		}
		lines = append(lines, decl(s))
	}
	// Commas go after every declaration except the last; comment lines carry none.
	last := len(lines) - 1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "//") {
			b.WriteString(l + "\n")
			continue
		}
		if i == last {
			b.WriteString(l + "\n")
		} else {
			b.WriteString(l + ",\n")
		}
	}
	b.WriteString(");\n")
	b.WriteString(m.body)
	b.WriteString("    // Skeleton body: outputs stay idle until the TODO above is written.\n")
	var sinks []string
	if m.body == "" {
		sinks = append(sinks, "clk", "rst_n")
	}
	for _, s := range m.ports {
		if !s.out {
			if !slices.Contains(m.consumed, s.name) {
				sinks = append(sinks, s.name)
			}
			continue
		}
		if slices.Contains(m.driven, s.name) {
			continue
		}
		zero := "1'b0"
		switch {
		case s.width == "":
		case isNumber(s.width):
			zero = s.width + "'d0"
		default:
			zero = fmt.Sprintf("{(%s){1'b0}}", s.width)
		}
		fmt.Fprintf(&b, "    assign %s = %s;\n", s.name, zero)
	}
	sinks = append(sinks, m.bodyUnused...)
	b.WriteString("    /* verilator lint_off UNUSEDSIGNAL */\n")
	fmt.Fprintf(&b, "    wire unused_ok = &{1'b0, %s, 1'b0};\n", strings.Join(sinks, ", "))
	b.WriteString("    /* verilator lint_on UNUSEDSIGNAL */\n")
	b.WriteString("endmodule\n")
	return b.String()
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
