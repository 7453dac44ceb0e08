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
// MPT cache (CACHE_ENTRIES > 0; hca.key_cache_entries): the entries read,
// fully associative, tagged by key index (key[31:8]: the 8-bit variant
// selects no other entry), least recently used out: the model's
// hca.KeyCache, whose hit/miss sequence rtl/cosim_keycheck_test.go drives
// the co-simulation with. A check looks its index up in the cycle after it
// is taken (S_LOOK): a hit checks the cached entry and reads nothing; a
// miss reads the MPT as without a cache and keeps the entry, in a free
// slot (the lowest) or the least recently used one's. Recency is an age
// per entry (0 the most recent; the valid entries' ages are a permutation
// of 0..n-1): an access makes its entry 0 and ages the entries younger
// than it was. Like the model's cache it is never invalidated: an entry
// the driver changes (re-registration) keeps its cached copy (TODO: an
// invalidate port for DESTROY_MKEY). The data array is a register file
// read combinationally (a memory in Yosys' count: the report's SRAM table).
// TODO: more than one check in flight (the model looks keys up under a
// miss).
module hca_key_check #(
    parameter integer TAG_W = 24,        // request tag, returned with the result (e.g. the QPN)
    parameter integer CACHE_ENTRIES = 0  // MPT cache entries (hca.key_cache_entries); 0 = none
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
    localparam [2:0] S_IDLE = 3'd0, S_READ = 3'd1, S_WAIT = 3'd2, S_RESP = 3'd3, S_LOOK = 3'd4;
    localparam integer CE    = (CACHE_ENTRIES > 0) ? CACHE_ENTRIES : 1;
    localparam integer AGE_W = (CE > 1) ? $clog2(CE) : 1;
    localparam integer OLD_I = CE - 1;
    localparam [AGE_W-1:0] OLDEST = OLD_I[AGE_W-1:0];

    reg [2:0]  state;
    reg [31:0] key, pd;
    reg [3:0]  need;
    reg [63:0] addr, len;

    assign req_ready     = state == S_IDLE;
    assign mpt_req_valid = state == S_READ;
    assign mpt_req_index = key[31:8];
    assign rsp_valid     = state == S_RESP;

    // The cache: per entry a tag, a valid bit and an age in flops (one
    // always block per entry, so synthesis sees CE small registers rather
    // than part-selects of one wide vector), the entries in a register file.
    wire [CE-1:0]       c_valid;
    wire [CE*AGE_W-1:0] c_age;
    reg  [255:0]        c_data [0:CE-1];
    // One-hot vectors, encoded by OR trees (onehot_encode): the entry
    // holding key's index; the slot a fill takes, the lowest free one
    // (x & -x of the free slots) or, when all are valid, the oldest (the
    // one entry of age CE - 1).
    wire [CE-1:0] hit_oh, oldest_oh;
    wire [CE-1:0]    free_oh  = ~c_valid & (c_valid + 1'b1); // lowest free slot
    wire [CE-1:0]    fill_oh  = (&c_valid) ? oldest_oh : free_oh;
    wire             c_hit    = |hit_oh;
    wire [AGE_W-1:0] c_hit_i, c_fill_i;
    onehot_encode #(.N(CE), .IDX_W(AGE_W)) u_hit_enc (.onehot(hit_oh), .idx(c_hit_i));
    onehot_encode #(.N(CE), .IDX_W(AGE_W)) u_fill_enc (.onehot(fill_oh), .idx(c_fill_i));
    wire [255:0] cached = c_data[c_hit_i];

    wire        hit_now  = (CACHE_ENTRIES > 0) && state == S_LOOK && c_hit;
    wire        fill_now = (CACHE_ENTRIES > 0) && state == S_WAIT && mpt_rsp_valid;
    // The entry an access makes the most recent, and the age it had (a
    // fill of a free slot counts as the oldest, so every valid entry ages).
    wire [CE-1:0]    acc_oh  = hit_now ? hit_oh : fill_oh;
    wire [AGE_W-1:0] acc_i   = hit_now ? c_hit_i : c_fill_i;
    wire [AGE_W-1:0] acc_age = (hit_now || c_valid[acc_i]) ? c_age[acc_i*AGE_W +: AGE_W] : OLDEST;
    genvar g;
    generate
        for (g = 0; g < CE; g = g + 1) begin : g_entry
            reg [23:0]       tag;
            reg              valid;
            reg [AGE_W-1:0]  age;
            assign c_valid[g]              = valid;
            assign c_age[g*AGE_W +: AGE_W] = age;
            assign hit_oh[g]    = valid && tag == key[31:8];
            assign oldest_oh[g] = age == OLDEST;
            always @(posedge clk or negedge rst_n) begin
                if (!rst_n) begin
                    tag   <= 24'd0;
                    valid <= 1'b0;
                    age   <= {AGE_W{1'b0}};
                end else if (hit_now || fill_now) begin
                    if (acc_oh[g]) age <= {AGE_W{1'b0}};
                    else if (valid && age < acc_age) age <= age + 1'b1;
                    if (fill_now && acc_oh[g]) begin
                        valid <= 1'b1;
                        tag   <= key[31:8];
                    end
                end
            end
        end
    endgenerate
    always @(posedge clk)
        if (fill_now) c_data[acc_i] <= mpt_rsp_entry;

    // The entry checked: the cached one in S_LOOK, the memory's in S_WAIT.
    wire [255:0] entry = (state == S_LOOK) ? cached : mpt_rsp_entry;
    wire        e_valid  = entry[255];
    wire [63:0] e_base   = entry[63:0];
    wire [63:0] e_length = entry[127:64];
    wire [31:0] e_pd     = entry[159:128];
    wire [31:0] e_key    = entry[191:160];
    wire [3:0]  e_access = entry[195:192];
    wire [63:0] req_end  = addr + len;
    wire [63:0] e_end    = e_base + e_length;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [58:0] reserved = entry[254:196]; // [254:196] reserved
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
                    state   <= (CACHE_ENTRIES > 0) ? S_LOOK : S_READ;
                end
                S_LOOK: if (c_hit) begin
                    rsp_result <= result;
                    state      <= S_RESP;
                end else begin
                    state      <= S_READ;
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
