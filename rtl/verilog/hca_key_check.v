// hca_key_check: the HCA's key-check unit (IBA memory protection;
// ib-facts.md §6). Go model: hca.KeyTable.Check (hca/keycheck.go), whose
// results rtl/cosim_test.go compares with this block's cycle by cycle.
//
// One check at a time. A request {key, pd, need, addr, len, tag} is taken
// when req_valid && req_ready. The unit reads the key's MPT entry (index =
// key[31:8]) through mpt_req_* / mpt_rsp_* (one read outstanding, any
// latency; mpt_rsp_valid is looked at only while a read is outstanding),
// checks it in rxe order (rxe_resp.c RESPST_CHK_RKEY) and offers {result,
// tag} on rsp_* until taken:
//   1 invalid key:    the entry is not valid, or its key differs (a stale
//                     8-bit variant fails);
//   2 PD mismatch:    the entry's PD is not the requester's;
//   3 access denied:  an access flag in need is not in the entry's flags;
//   4 out of bounds:  addr < base, addr + len > base + length, or addr + len
//                     < addr, in 64-bit wrapping arithmetic as the model;
//   0 pass.
// MPT entry, 256 bits: [63:0] base address, [127:64] length, [159:128] PD,
// [191:160] key (index << 8 | variant), [195:192] access flags (1 local
// write, 2 remote write, 4 remote read, 8 remote atomic; local read is
// always allowed), [254:196] reserved, [255] valid.
// TODO: an MPT cache in front of the read (the model's hca.key_cache_entries,
// least recently used out), and more than one check in flight.
module hca_key_check #(
    parameter integer TAG_W = 24 // request tag, returned with the result (e.g. the QPN)
) (
    input  wire             clk,
    input  wire             rst_n,
    input  wire             req_valid,
    output wire             req_ready,
    input  wire [31:0]      req_key,
    input  wire [31:0]      req_pd,
    input  wire [3:0]       req_need,
    input  wire [63:0]      req_addr,
    input  wire [63:0]      req_len,
    input  wire [TAG_W-1:0] req_tag,
    output wire             mpt_req_valid,
    input  wire             mpt_req_ready,
    output wire [23:0]      mpt_req_index,
    input  wire             mpt_rsp_valid,
    input  wire [255:0]     mpt_rsp_entry,
    output wire             rsp_valid,
    input  wire             rsp_ready,
    output reg  [2:0]       rsp_result,
    output reg  [TAG_W-1:0] rsp_tag
);
    localparam [1:0] S_IDLE = 2'd0, S_READ = 2'd1, S_WAIT = 2'd2, S_RESP = 2'd3;

    reg [1:0]  state;
    reg [31:0] key, pd;
    reg [3:0]  need;
    reg [63:0] addr, len;

    assign req_ready     = state == S_IDLE;
    assign mpt_req_valid = state == S_READ;
    assign mpt_req_index = key[31:8];
    assign rsp_valid     = state == S_RESP;

    wire        e_valid  = mpt_rsp_entry[255];
    wire [63:0] e_base   = mpt_rsp_entry[63:0];
    wire [63:0] e_length = mpt_rsp_entry[127:64];
    wire [31:0] e_pd     = mpt_rsp_entry[159:128];
    wire [31:0] e_key    = mpt_rsp_entry[191:160];
    wire [3:0]  e_access = mpt_rsp_entry[195:192];
    wire [63:0] req_end  = addr + len;
    wire [63:0] e_end    = e_base + e_length;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [58:0] reserved = mpt_rsp_entry[254:196]; // [254:196] reserved
    /* verilator lint_on UNUSEDSIGNAL */
    wire [2:0]  result   = (!e_valid || e_key != key)                          ? 3'd1 :
                           (e_pd != pd)                                        ? 3'd2 :
                           ((e_access & need) != need)                         ? 3'd3 :
                           (addr < e_base || req_end > e_end || req_end < addr) ? 3'd4 : 3'd0;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            state      <= S_IDLE;
            key        <= 32'd0;
            pd         <= 32'd0;
            need       <= 4'd0;
            addr       <= 64'd0;
            len        <= 64'd0;
            rsp_result <= 3'd0;
            rsp_tag    <= {TAG_W{1'b0}};
        end else begin
            case (state)
                S_IDLE: if (req_valid) begin
                    key     <= req_key;
                    pd      <= req_pd;
                    need    <= req_need;
                    addr    <= req_addr;
                    len     <= req_len;
                    rsp_tag <= req_tag;
                    state   <= S_READ;
                end
                S_READ: if (mpt_req_ready) state <= S_WAIT;
                S_WAIT: if (mpt_rsp_valid) begin
                    rsp_result <= result;
                    state      <= S_RESP;
                end
                default: if (rsp_ready) state <= S_IDLE; // S_RESP
            endcase
        end
    end
endmodule
