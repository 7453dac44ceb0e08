// hca_dma_engine: the HCA's only host-bus master. Two read clients (rd0 WQE fetch, rd1 payload
// reads) and two write clients (wr0 payload writes, wr1 CQE writes) share one host bus: tagged
// read requests (host_rd_*), their completions by tag (host_cpl_*) and posted writes
// (host_wr_*), PCIe abstracted to 64-byte beats. Go model of the splitting rule:
// hca.ReadRequest (hca/readsplit.go); rtl/cosim_dma_test.go compares the block with a
// cycle-level Go model cycle by cycle and checks every request, beat and ordering rule on it.
//
// Reset, then a clear: after rst_n rises the block writes its rings' lap bits (below), one
// word of LAP_W = min(ROB_BLOCKS, 64) slots a cycle in both rings, ROB_BLOCKS / LAP_W cycles
// (8 at the HCA defaults, 64 at cx8's 512 tags). Until the last is written it takes nothing:
// rdN_req_ready and wrN_ready are 0; host_rd_valid, host_wr_valid and rdN_rsp_valid are 0; no
// tag is in flight, so a completion beat is ignored. Clients hold their requests (valid until
// ready), taken from the cycle after the clear; from there the block behaves, cycle by cycle,
// as it would from reset without a clear.
//
// Reads. A client request (rdN_req_*, valid/ready) names bytes: addr is any byte address, len
// is in bytes, and len = 0 is 65536 bytes (as a PCIe Length of 0 is 1024 DW), the largest read a
// client may ask. Each client has a splitter register {byte address, bytes left, wait-for-write};
// it takes the next request when it is empty or issuing its request's last host request in the
// cycle (so one-chunk requests go back to back). A host request is
//   k = min(bytes left, MRRS - (address mod MRRS))
// bytes (hca.ReadRequest, the model's split, which counts bytes), so it never exceeds MRRS and
// never crosses an MRRS-aligned address, hence never a 4 KiB one (MRRS <= 4096; PCIe forbids a
// read request crossing 4 KiB). Addresses wrap modulo 2^64, and 2^64 is MRRS-aligned, so no
// request straddles the wrap. host_rd_addr is its byte address and host_rd_len its bytes; PCIe
// reads whole DWs, so the request's DW address is host_rd_addr[63:2], its Length
// ceil((host_rd_addr mod 4 + host_rd_len) / 4) DW, and host_rd_fbe / host_rd_lbe are its First
// and Last DW BE (bit i: byte i of the DW; Last DW BE 0 for one DW), which the block computes.
// Data come back address-aligned (the layout of a PCIe core's address-aligned completion mode):
// a host request returns the n = ceil((address mod 64 + k) / 64) 64-byte blocks its bytes lie in
// (n <= MRRS/64: the request lies in one MRRS-aligned window), a beat each, each byte at its
// address's lane; lanes outside the request carry anything (a completer returns only the DWs
// asked, and a disabled byte's value is undefined), and the block passes them on as they come.
// A client read's response is so ceil((addr mod 64 + len) / 64) blocks (up to 1025), its bytes
// at their lanes: the clients pick their bytes out of the lanes (hca_rq its 16-byte WQEs,
// hca_tx_assemble a payload, hca_responder its atomic's 8 bytes), as they did when reads were
// whole blocks, so none needs a shifter and the block has none (a 512-bit realigning shifter
// per read client would cost more than the rest of the read path, and every client would then
// have to undo it to put bytes at their packet or host lanes).
// Each cycle the host request register (host_rd_*) is empty or taken, a round-robin arbiter
// (u_rd) picks a client whose splitter can issue: it has bytes left, no earlier write to wait
// for (below), a free tag exists, and its reorder ring has room for n blocks. The request takes
// the next free tag round robin (u_tag, one of OUTSTANDING; a busy bit per tag in flops), held
// until its last completion beat: a completion of a tag that is not in flight is ignored. The
// tag's client, next ring slot and beats to come are an entry of the tag table, a memory
// written at the tag issued and at a beat's tag (never the same: one is free, the other busy)
// and read at the beat's tag.
// Tags: OUTSTANDING <= 256 uses 8-bit tags 0..OUTSTANDING-1; up to 768 uses PCIe's 10-bit tags
// (TAG_W = 10), values 256..256+OUTSTANDING-1 (Tag[9:8] != 0, as 10-bit tag requesters use).
// Completions (host_cpl_*, one beat a cycle, no back-pressure) may interleave across tags in any
// order; a tag's beats come in address order (PCIe returns one request's completions in order).
// Reorder: each read client has a ring of ROB_BLOCKS = 2^clog2(OUTSTANDING * MRRS/64) blocks,
// at least two requests' worth (so the tags alone bound its reads in flight until delivered
// data waits behind a late request); a host request reserves its n slots at the ring's tail when issued, each beat is
// written at its tag's next slot, and the ring's head goes to the client (rdN_rsp_*, one block
// a beat, registered, no back-pressure) once its slot is filled (a lap bit per slot, below):
// every client gets its blocks in the order of its requests, whatever order the host answers
// in. A slot is free once delivered. The lap bits are a memory per ring, LAP_W slots a word
// (a bit-masked write at a beat's slot, a read of the head's word), which the clear sets to 1.
//
// Writes. A client write (wrN_*, valid/ready a beat) is ceil(len / 64) beats of 64 bytes at
// whole blocks: its first beat carries addr (addr[5:0] ignored) and len (bytes, rounded up to
// blocks; len = 0 is 65536, as for reads), which later beats' addr and len are not read. The
// block sends it as posted-write TLPs on host_wr_*: a TLP's beats one after another, its header
// (host_wr_addr, host_wr_len in bytes, whole blocks) with every beat, host_wr_sop on its first
// and host_wr_last on its last, and the beat's byte enables (host_wr_be, passed on from the
// client's wrN_be with its beat: bit 63 - k enables byte lane k, the byte at data[511-8k -: 8],
// at host address block + k). The host writes only the enabled bytes. The client's contract,
// which PCIe needs and the block does not check: a write's enabled bytes are one contiguous
// range, so only its first beat may have lanes disabled at the start and only its last at the
// end (every other beat all ones), and at least one byte is enabled. TLPs split at whole beats,
// so each TLP's enabled bytes are contiguous too: the PCIe core's DW address, Length, First DW BE
// and Last DW BE follow from its header and its first and last beats' masks. A TLP of a write's next beat at block
// address b with L blocks left is
//   n = min(L, MPS/64, 64 - b mod 64)
// blocks (hca.WriteTLP): at most MPS, never across 4 KiB (PCIe forbids a write to cross it),
// and otherwise MPS-sized from the write's address as the model counts its TLPs (a write TLP
// need not start MPS-aligned; hca.WriteTLP says where the model's count split is no legal
// TLP sequence). The host write register is loaded, when empty or taken, with the open TLP's
// next beat from its client, or, when no TLP is open, with the first beat of a TLP of the
// client a round-robin arbiter (u_wr) picks: wr0 and wr1 alternate per TLP, never within one,
// and a client that stalls mid-TLP holds the port (its TLP is not interleaved). Host beats are
// in acceptance order (one register).
// Ordering (PCIe, relaxed ordering off: a read request does not pass a posted write): a read
// request taken in a cycle in which a write beat is, or stays, in the host write register (a
// beat taken from a client in the same cycle counts as earlier), or a TLP is open (its first
// beat taken, its last not yet), waits until the host has taken that TLP's last beat: its host
// requests are loaded only from the cycle after. So every TLP with a beat taken before the
// read reaches the host whole before the read's requests. Writes never wait for reads (a
// posted write may pass a read request).
// TODO: gathering a TLP's beats before sending it (a client stalling mid-TLP now holds the write
// port and the reads behind it), relaxed ordering and ID-based ordering, completion timeouts and
// error completions (UR/CA), byte-granular writes' TLP headers (a write's header is whole blocks,
// its byte enables say which bytes land).
module hca_dma_engine #(
    parameter integer DATA_W      = 512, // one 64-byte block a beat (the block assumes 512)
    parameter integer OUTSTANDING = 64,  // read tags (hca.pcie.outstanding_reads, 1..768)
    parameter integer MRRS        = 512, // max read request bytes (hca.pcie.mrrs_bytes, 128..4096)
    parameter integer MPS         = 256, // max write TLP payload bytes (hca.pcie.mps_bytes, 128..4096)
    parameter integer TAG_W       = 8    // host_rd_tag bits: 8, or 10 above 256 tags
) (
    input  wire              clk,
    input  wire              rst_n,
    // client rd0: WQE fetch
    input  wire              rd0_req_valid,
    input  wire [63:0]       rd0_req_addr,
    input  wire [15:0]       rd0_req_len,
    output wire              rd0_req_ready,
    output reg               rd0_rsp_valid,
    output reg  [DATA_W-1:0] rd0_rsp_data,
    // client rd1: payload reads
    input  wire              rd1_req_valid,
    input  wire [63:0]       rd1_req_addr,
    input  wire [15:0]       rd1_req_len,
    output wire              rd1_req_ready,
    output reg               rd1_rsp_valid,
    output reg  [DATA_W-1:0] rd1_rsp_data,
    // client wr0: payload writes
    input  wire              wr0_valid,
    input  wire [63:0]       wr0_addr,
    input  wire [15:0]       wr0_len,
    input  wire [DATA_W-1:0] wr0_data,
    input  wire [63:0]       wr0_be,    // byte enables of the beat: bit 63 - k for byte lane k
    output wire              wr0_ready,
    // client wr1: CQE writes
    input  wire              wr1_valid,
    input  wire [63:0]       wr1_addr,
    input  wire [15:0]       wr1_len,
    input  wire [DATA_W-1:0] wr1_data,
    input  wire [63:0]       wr1_be,
    output wire              wr1_ready,
    // host bus: tagged read requests and their completions
    output reg               host_rd_valid,
    output reg  [63:0]       host_rd_addr,
    output reg  [15:0]       host_rd_len,   // bytes, 1..MRRS
    output reg  [3:0]        host_rd_fbe,   // First DW BE: bit i enables byte i of the first DW
    output reg  [3:0]        host_rd_lbe,   // Last DW BE (0 for a request within one DW)
    output reg  [TAG_W-1:0]  host_rd_tag,
    input  wire              host_rd_ready,
    input  wire              host_cpl_valid,
    input  wire [TAG_W-1:0]  host_cpl_tag,
    input  wire [DATA_W-1:0] host_cpl_data,
    // host bus: posted-write TLPs, a beat at a time, the header with every beat
    output reg               host_wr_valid,
    output reg               host_wr_sop,
    output reg               host_wr_last,
    output reg  [63:0]       host_wr_addr,
    output reg  [15:0]       host_wr_len,
    output reg  [DATA_W-1:0] host_wr_data,
    output reg  [63:0]       host_wr_be,   // the beat's byte enables, as its client gave them
    input  wire              host_wr_ready
);
    localparam integer CB       = MRRS / 64;                 // blocks per host request, at most
    localparam integer CBL      = $clog2(CB);                // MRRS is a power of two >= 128: CBL >= 1
    localparam integer CB_W     = CBL + 1;                   // bits of a count 0..CB
    localparam integer TAG_IW   = (OUTSTANDING > 1) ? $clog2(OUTSTANDING) : 1;
    localparam integer TAGS_P2  = 1 << TAG_IW;
    localparam integer TAG_BASE = (OUTSTANDING > 256) ? 256 : 0;
    // at least two requests' worth (one tag), so a count of n fits the ring's pointers
    localparam integer ROB_AW   = ($clog2(OUTSTANDING * CB) > CB_W) ? $clog2(OUTSTANDING * CB) : CB_W;
    localparam integer ROB_BLOCKS = 1 << ROB_AW;
    localparam integer KW       = CBL + 7;                   // bits of a byte count 0..MRRS
    localparam [KW-1:0]       MRRS_C  = MRRS[KW-1:0];
    localparam [ROB_AW+1:0]   ROB_C   = ROB_BLOCKS[ROB_AW+1:0];
    localparam [TAG_W-1:0]    BASE_C  = TAG_BASE[TAG_W-1:0];
    localparam [TAG_W:0]      OUT_C   = OUTSTANDING[TAG_W:0];

    reg clearing; // the clear after reset is under way (below, "reorder rings")

    // a client read's bytes: len, len 0 = 65536
    function [16:0] bytes_of;
        input [15:0] len;
        bytes_of = {(len == 16'd0), len};
    endfunction

    // a client write's blocks: ceil(len / 64), len 0 = 1024
    function [10:0] blocks_of;
        input [15:0] len;
        begin
            if (len == 16'd0) blocks_of = 11'd1024;
            else blocks_of = {1'b0, len[15:6]} + {10'd0, (len[5:0] != 6'd0)};
        end
    endfunction

    // ---- writes: TLPs through one register, round robin between wr0 and wr1 per TLP ----
    localparam integer MB   = MPS / 64;                  // blocks per write TLP, at most (2..64)
    localparam integer MB_W = $clog2(MB) + 1;            // bits of a count 0..MB
    localparam [10:0]  MB_C = MB[10:0];
    // per write client: where its write is (wc_busy: its first beat taken, beats left)
    reg        wc_busy [0:1];
    reg [57:0] wc_blk  [0:1]; // the next beat's block address
    reg [10:0] wc_left [0:1]; // beats left, 1..1024
    // the TLP on the host port: open from its first beat taken to its last taken
    reg            tlp_open;
    reg            tlp_cli;
    reg [MB_W-1:0] tlp_left;  // beats still to take
    // each client's next beat: in its write, or the first of the write it presents
    wire [57:0] wb0 = wc_busy[0] ? wc_blk[0] : wr0_addr[63:6];
    wire [57:0] wb1 = wc_busy[1] ? wc_blk[1] : wr1_addr[63:6];
    wire [10:0] wl0 = wc_busy[0] ? wc_left[0] : blocks_of(wr0_len);
    wire [10:0] wl1 = wc_busy[1] ? wc_left[1] : blocks_of(wr1_len);
    // the TLP a client's next beat would start: n = min(left, MPS/64, 64 - b mod 64) (hca.WriteTLP)
    wire [10:0] to4k0 = 11'd64 - {5'd0, wb0[5:0]};
    wire [10:0] to4k1 = 11'd64 - {5'd0, wb1[5:0]};
    wire [10:0] cap0  = (to4k0 < MB_C) ? to4k0 : MB_C;
    wire [10:0] cap1  = (to4k1 < MB_C) ? to4k1 : MB_C;
    wire [10:0] tn0   = (wl0 < cap0) ? wl0 : cap0;
    wire [10:0] tn1   = (wl1 < cap1) ? wl1 : cap1;

    // nothing is taken until the clear after reset is done (below)
    wire       wr_slot = !clearing && (!host_wr_valid || host_wr_ready);
    wire       wg_valid;   // a TLP starts: its first beat is taken
    wire [0:0] wg;
    rr_arbiter #(.N(2), .IDX_W(1)) u_wr (
        .clk(clk), .rst_n(rst_n), .req({wr1_valid, wr0_valid} & {2{wr_slot && !tlp_open}}),
        .grant_valid(wg_valid), .grant_idx(wg), .commit(wg_valid), .commit_idx(wg)
    );
    // the open TLP's next beat is taken
    wire       wc_valid = wr_slot && tlp_open && (tlp_cli ? wr1_valid : wr0_valid);
    wire       wsel     = wg_valid ? wg : tlp_cli;   // the client whose beat is taken
    wire       wtake    = wg_valid || wc_valid;
    assign wr0_ready = wtake && wsel == 1'b0;
    assign wr1_ready = wtake && wsel == 1'b1;
    wire [10:0] tn_g = (wg == 1'b0) ? tn0 : tn1;
    // a write beat is in the register after this cycle's edge, or its TLP is still open: a read
    // taken now waits for that TLP's last beat
    wire wr_held = wtake || (host_wr_valid && !host_wr_ready);
    wire wr_pend = wr_held || tlp_open;

    integer w;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            host_wr_valid <= 1'b0;
            host_wr_sop   <= 1'b0;
            host_wr_last  <= 1'b0;
            host_wr_addr  <= 64'd0;
            host_wr_len   <= 16'd0;
            host_wr_data  <= {DATA_W{1'b0}};
            host_wr_be    <= 64'd0;
            tlp_open      <= 1'b0;
            tlp_cli       <= 1'b0;
            tlp_left      <= {MB_W{1'b0}};
            for (w = 0; w < 2; w = w + 1) begin
                wc_busy[w] <= 1'b0;
                wc_blk[w]  <= 58'd0;
                wc_left[w] <= 11'd0;
            end
        end else begin
            if (wtake) begin
                host_wr_valid <= 1'b1;
                host_wr_data  <= (wsel == 1'b0) ? wr0_data : wr1_data;
                host_wr_be    <= (wsel == 1'b0) ? wr0_be : wr1_be;
                host_wr_sop   <= wg_valid;
                if (wg_valid) begin
                    host_wr_last <= tn_g == 11'd1;
                    host_wr_addr <= {(wg == 1'b0) ? wb0 : wb1, 6'd0};
                    host_wr_len  <= {{(10-MB_W){1'b0}}, tn_g[MB_W-1:0], 6'd0}; // n <= MPS/64
                    tlp_open     <= tn_g != 11'd1;
                    tlp_cli      <= wg;
                    tlp_left     <= tn_g[MB_W-1:0] - 1'b1;
                end else begin
                    host_wr_last <= tlp_left == {{(MB_W-1){1'b0}}, 1'b1};
                    tlp_left     <= tlp_left - 1'b1;
                    if (tlp_left == {{(MB_W-1){1'b0}}, 1'b1}) tlp_open <= 1'b0;
                end
                // the client's write moves a beat on
                wc_busy[wsel] <= ((wsel == 1'b0) ? wl0 : wl1) != 11'd1;
                wc_blk[wsel]  <= ((wsel == 1'b0) ? wb0 : wb1) + 58'd1;
                wc_left[wsel] <= ((wsel == 1'b0) ? wl0 : wl1) - 11'd1;
            end else if (host_wr_ready) begin
                host_wr_valid <= 1'b0;
            end
        end
    end

    // ---- read splitters, one per client ----
    reg        sp_busy  [0:1];
    reg [63:0] sp_addr  [0:1]; // next byte address
    reg [16:0] sp_left  [0:1]; // bytes left, 1..65536
    reg        sp_wwait [0:1]; // an earlier TLP has not yet left the host write register whole

    // reorder rings: tail (reserved) and head (delivered) counts
    reg [ROB_AW:0] rb_tail [0:1];
    reg [ROB_AW:0] rb_head [0:1];

    // The next host request: k bytes to the next MRRS-aligned address or the read's end
    // (hca.ReadRequest), and the n blocks they touch, which the host returns (at most CB: the
    // request lies inside one MRRS-aligned window).
    wire [KW-1:0]   to_bnd0 = MRRS_C - {1'b0, sp_addr[0][CBL+5:0]};
    wire [KW-1:0]   to_bnd1 = MRRS_C - {1'b0, sp_addr[1][CBL+5:0]};
    wire [KW-1:0]   k0 = (sp_left[0] < {{(17-KW){1'b0}}, to_bnd0}) ? sp_left[0][KW-1:0] : to_bnd0;
    wire [KW-1:0]   k1 = (sp_left[1] < {{(17-KW){1'b0}}, to_bnd1}) ? sp_left[1][KW-1:0] : to_bnd1;
    wire [KW:0]     span0 = {{(KW-5){1'b0}}, sp_addr[0][5:0]} + {1'b0, k0} + {{(KW-5){1'b0}}, 6'd63};
    wire [KW:0]     span1 = {{(KW-5){1'b0}}, sp_addr[1][5:0]} + {1'b0, k1} + {{(KW-5){1'b0}}, 6'd63};
    wire [CB_W-1:0] n0 = span0[CB_W+5:6];
    wire [CB_W-1:0] n1 = span1[CB_W+5:6];
    wire [ROB_AW:0] used0 = rb_tail[0] - rb_head[0];
    wire [ROB_AW:0] used1 = rb_tail[1] - rb_head[1];
    wire fits0 = {1'b0, used0} + {{(ROB_AW+2-CB_W){1'b0}}, n0} <= ROB_C;
    wire fits1 = {1'b0, used1} + {{(ROB_AW+2-CB_W){1'b0}}, n1} <= ROB_C;
    wire last0 = sp_left[0] == {{(17-KW){1'b0}}, k0};
    wire last1 = sp_left[1] == {{(17-KW){1'b0}}, k1};

    // ---- tags ----
    // Per tag: in flight (tag_busy, flops: the free search reads them all), and in the tag
    // table (tag_mem, below) the client the read is for, its next beat's ring count and its
    // beats still to come.
    localparam integer TE_W = 1 + (ROB_AW + 1) + CB_W;   // {client, ring count, beats left}
    reg  [TAGS_P2-1:0]        tag_busy;
    wire [OUTSTANDING-1:0]    tag_free = ~tag_busy[OUTSTANDING-1:0];
    wire              tg_valid;
    wire [TAG_IW-1:0] tg;

    // ---- which client issues: round robin among those that can ----
    wire       rd_slot = !host_rd_valid || host_rd_ready;
    wire [1:0] can_issue = {sp_busy[1] && !sp_wwait[1] && fits1,
                            sp_busy[0] && !sp_wwait[0] && fits0} & {2{tg_valid && rd_slot}};
    wire       issue;
    wire [0:0] rg;
    rr_arbiter #(.N(2), .IDX_W(1)) u_rd (
        .clk(clk), .rst_n(rst_n), .req(can_issue), .grant_valid(issue), .grant_idx(rg),
        .commit(issue), .commit_idx(rg)
    );
    rr_arbiter #(.N(OUTSTANDING), .IDX_W(TAG_IW)) u_tag (
        .clk(clk), .rst_n(rst_n), .req(tag_free), .grant_valid(tg_valid), .grant_idx(tg),
        .commit(issue), .commit_idx(tg)
    );
    wire [TAG_W-1:0] tg_w;
    generate
        if (TAG_W > TAG_IW) begin : g_tag_pad
            assign tg_w = {{(TAG_W-TAG_IW){1'b0}}, tg};
        end else begin : g_tag_full
            assign tg_w = tg;
        end
    endgenerate
    wire [CB_W-1:0] n_g    = (rg == 1'b0) ? n0 : n1;
    wire [KW-1:0]   k_g    = (rg == 1'b0) ? k0 : k1;
    wire [63:0]     a_g    = sp_addr[rg];
    wire            last_g = (rg == 1'b0) ? last0 : last1;
    // PCIe's DW form of the request (the core's Address[63:2] and Length follow from host_rd_addr
    // and host_rd_len): the first DW's byte enables from the address's bytes on, the last DW's
    // up to the request's last byte; a request within one DW has its bytes in the first DW's
    // enables and a last DW BE of 0 (PCIe: Length 1 DW needs Last DW BE 0000b).
    wire [1:0]      e_g    = a_g[1:0] + k_g[1:0] - 2'd1;   // the last byte's lane in its DW
    wire [KW:0]     dw_end = {{(KW-1){1'b0}}, a_g[1:0]} + {1'b0, k_g}; // <= 4: one DW
    wire [3:0]      fbe_all = 4'b1111 << a_g[1:0];
    wire [3:0]      lbe_all = 4'b1111 >> (2'd3 - e_g);
    wire            one_dw = dw_end <= {{(KW-2){1'b0}}, 3'd4};
    // nothing is taken until the clear after reset is done (below)
    assign rd0_req_ready = !clearing && (!sp_busy[0] || (issue && rg == 1'b0 && last0));
    assign rd1_req_ready = !clearing && (!sp_busy[1] || (issue && rg == 1'b1 && last1));

    // ---- completions ----
    wire [TAG_W:0]    cpl_rel = {1'b0, host_cpl_tag} - {1'b0, BASE_C};
    wire [TAG_IW-1:0] ct      = cpl_rel[TAG_IW-1:0];
    // below TAG_BASE the difference wraps past 2^TAG_W - TAG_BASE > OUTSTANDING
    wire              cpl_in  = cpl_rel < OUT_C;
    wire              cpl_ok  = host_cpl_valid && cpl_in && tag_busy[ct]; // none busy in the clear
    // the tag table: one entry per tag, written when the tag is issued and at each of its beats
    // (two write ports: the tag issued is free, a beat's tag is busy, never the same entry),
    // read at the beat's tag
    reg  [TE_W-1:0]   tag_mem [0:OUTSTANDING-1];
    wire [TE_W-1:0]   cpl_ent = tag_mem[ct];
    wire              cpl_cli = cpl_ent[TE_W-1];
    wire [ROB_AW:0]   cpl_cnt = cpl_ent[CB_W +: ROB_AW + 1];
    wire [CB_W-1:0]   cpl_left = cpl_ent[CB_W-1:0];
    wire [ROB_AW-1:0] cpl_pos = cpl_cnt[ROB_AW-1:0];
    wire              cpl_lap = cpl_cnt[ROB_AW];
    /* verilator lint_off UNUSEDSIGNAL */
    wire [TAG_W:0]    cpl_rel_all = cpl_rel;  // its low TAG_IW bits index the tag
    wire [5:0]        low_bits = wr0_addr[5:0] ^ wr1_addr[5:0]; // writes are whole blocks
    wire [KW:0]       span_hi  = span0 ^ span1;   // bits 5:0 (the rounding) and the top (never set) are not blocks
    /* verilator lint_on UNUSEDSIGNAL */

    // ---- reorder rings ----
    reg [DATA_W-1:0]     rob0 [0:ROB_BLOCKS-1];
    reg [DATA_W-1:0]     rob1 [0:ROB_BLOCKS-1];
    // A slot's lap bit is that of the ring count it was last filled for (ring counts have
    // ROB_AW + 1 bits: slot, lap). The head's slot is filled iff its lap bit is the head
    // count's: an unfilled slot still holds the lap before (the tail never runs a lap ahead of
    // the head), or, on the first lap, the 1 the clear after reset wrote. So delivery clears
    // nothing. The lap bits are a memory per ring, LAP_W slots a word (a bit-masked write at a
    // beat's slot, a read at the head), so the clear writes a word a cycle: LAP_WORDS cycles.
    localparam integer LAP_W     = (ROB_BLOCKS < 64) ? ROB_BLOCKS : 64;
    localparam integer LAP_LW    = $clog2(LAP_W);         // ROB_BLOCKS >= 4: LAP_LW >= 2
    localparam integer LAP_WORDS = ROB_BLOCKS / LAP_W;
    localparam integer LAP_AW    = (LAP_WORDS > 1) ? $clog2(LAP_WORDS) : 1;
    localparam integer LAST_WORD = LAP_WORDS - 1;
    reg [LAP_W-1:0]  lap0 [0:LAP_WORDS-1];
    reg [LAP_W-1:0]  lap1 [0:LAP_WORDS-1];
    reg [LAP_AW-1:0] clr_word;  // the lap word it writes this cycle
    wire [ROB_AW-1:0] hd0 = rb_head[0][ROB_AW-1:0];
    wire [ROB_AW-1:0] hd1 = rb_head[1][ROB_AW-1:0];
    // each ring count's lap word (its slot's bits above LAP_LW; 0 when one word holds the ring)
    wire [LAP_AW-1:0] hw0_a, hw1_a, cpl_word;
    generate
        if (LAP_WORDS > 1) begin : g_lap_words
            assign hw0_a    = hd0[ROB_AW-1:LAP_LW];
            assign hw1_a    = hd1[ROB_AW-1:LAP_LW];
            assign cpl_word = cpl_pos[ROB_AW-1:LAP_LW];
        end else begin : g_lap_word
            assign hw0_a    = 1'b0;
            assign hw1_a    = 1'b0;
            assign cpl_word = 1'b0;
        end
    endgenerate
    wire [LAP_W-1:0]  hw0 = lap0[hw0_a];
    wire [LAP_W-1:0]  hw1 = lap1[hw1_a];
    wire deliver0 = !clearing && hw0[hd0[LAP_LW-1:0]] == rb_head[0][ROB_AW];
    wire deliver1 = !clearing && hw1[hd1[LAP_LW-1:0]] == rb_head[1][ROB_AW];

    // a tag is busy from its issue to its last beat; tags past OUTSTANDING never go out
    integer t;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            for (t = 0; t < TAGS_P2; t = t + 1) tag_busy[t] <= (t >= OUTSTANDING);
        end else begin
            if (issue) tag_busy[tg] <= 1'b1;
            // a completion beat fills its slot; the tag's last beat frees it
            if (cpl_ok && cpl_left == {{(CB_W-1){1'b0}}, 1'b1}) tag_busy[ct] <= 1'b0;
        end
    end

    always @(posedge clk) begin
        if (issue) tag_mem[tg] <= {rg, rb_tail[rg], n_g};
        if (cpl_ok) tag_mem[ct] <= {cpl_cli, cpl_cnt + 1'b1, cpl_left - 1'b1};
    end

    // the clear after reset: every lap bit 1, a word a cycle; then requests are taken
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            clearing <= 1'b1;
            clr_word <= {LAP_AW{1'b0}};
        end else if (clearing) begin
            if (clr_word == LAST_WORD[LAP_AW-1:0]) clearing <= 1'b0;
            else clr_word <= clr_word + 1'b1;
        end
    end

    // a completion beat fills its slot and writes its lap (no beat comes in the clear: no tag
    // is busy); a slot being filled is never the head being delivered, filled already
    always @(posedge clk) begin
        if (clearing) begin
            lap0[clr_word] <= {LAP_W{1'b1}};
            lap1[clr_word] <= {LAP_W{1'b1}};
        end else if (cpl_ok) begin
            if (!cpl_cli) lap0[cpl_word][cpl_pos[LAP_LW-1:0]] <= cpl_lap;
            if (cpl_cli) lap1[cpl_word][cpl_pos[LAP_LW-1:0]] <= cpl_lap;
        end
    end

    always @(posedge clk) begin
        if (cpl_ok && !cpl_cli) rob0[cpl_pos] <= host_cpl_data;
        if (cpl_ok && cpl_cli) rob1[cpl_pos] <= host_cpl_data;
        rd0_rsp_data <= rob0[hd0];
        rd1_rsp_data <= rob1[hd1];
    end

    integer c;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            host_rd_valid <= 1'b0;
            host_rd_addr  <= 64'd0;
            host_rd_len   <= 16'd0;
            host_rd_fbe   <= 4'd0;
            host_rd_lbe   <= 4'd0;
            host_rd_tag   <= {TAG_W{1'b0}};
            rd0_rsp_valid <= 1'b0;
            rd1_rsp_valid <= 1'b0;
            for (c = 0; c < 2; c = c + 1) begin
                sp_busy[c]  <= 1'b0;
                sp_addr[c]  <= 64'd0;
                sp_left[c]  <= 17'd0;
                sp_wwait[c] <= 1'b0;
                rb_tail[c]  <= {(ROB_AW+1){1'b0}};
                rb_head[c]  <= {(ROB_AW+1){1'b0}};
            end
        end else begin
            // delivery: each ring's head, once filled
            rd0_rsp_valid <= deliver0;
            rd1_rsp_valid <= deliver1;
            if (deliver0) rb_head[0] <= rb_head[0] + 1'b1;
            if (deliver1) rb_head[1] <= rb_head[1] + 1'b1;
            // the last beat of an earlier TLP taken by the host releases the reads behind it
            if (host_wr_valid && host_wr_ready && host_wr_last) begin
                sp_wwait[0] <= 1'b0;
                sp_wwait[1] <= 1'b0;
            end
            // issue one host request
            if (issue) begin
                host_rd_valid <= 1'b1;
                host_rd_addr  <= a_g;
                host_rd_len   <= {{(16-KW){1'b0}}, k_g};
                host_rd_fbe   <= one_dw ? (fbe_all & lbe_all) : fbe_all;
                host_rd_lbe   <= one_dw ? 4'b0000 : lbe_all;
                host_rd_tag   <= BASE_C + tg_w;
                rb_tail[rg]   <= rb_tail[rg] + {{(ROB_AW+1-CB_W){1'b0}}, n_g};
                sp_addr[rg]   <= a_g + {{(64-KW){1'b0}}, k_g};
                sp_left[rg]   <= sp_left[rg] - {{(17-KW){1'b0}}, k_g};
                if (last_g) sp_busy[rg] <= 1'b0;
            end else if (host_rd_ready) begin
                host_rd_valid <= 1'b0;
            end
            // take client requests
            if (rd0_req_valid && rd0_req_ready) begin
                sp_busy[0]  <= 1'b1;
                sp_addr[0]  <= rd0_req_addr;
                sp_left[0]  <= bytes_of(rd0_req_len);
                sp_wwait[0] <= wr_pend;
            end
            if (rd1_req_valid && rd1_req_ready) begin
                sp_busy[1]  <= 1'b1;
                sp_addr[1]  <= rd1_req_addr;
                sp_left[1]  <= bytes_of(rd1_req_len);
                sp_wwait[1] <= wr_pend;
            end
        end
    end
endmodule
