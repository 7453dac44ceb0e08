// fc_scheduler: when a transmit port sends its flow-control packets, per
// data VL, by the rules of the simulator's link port (link/port.go:
// requestFC, evFCRefresh, evFCDeferred, sendFC; docs/fabric.md); co-simulated
// cycle by cycle by rtl/cosim_fc_test.go.
//
//  - A VL whose advertised FCCL (fccl_adv, from the port's receive side)
//    differs from the one its last flow-control packet carried owes one,
//    no sooner than MIN_CYCLES after that packet (link.fc_min_interval_ns:
//    updates in between coalesce); a VL that has sent none since reset
//    sends at once (the link-up packet that replaces the PEER_DEPTH the
//    peer starts with).
//  - Every REFRESH_CYCLES after reset (link.fc_refresh_ns) every VL owes
//    one, changed or not, whatever its last packet's age: the periodic
//    resend IBA requires, so a lost flow-control packet (LPCRC error) or a
//    lost data packet (whose blocks ABR never saw) cannot leave the peer
//    short of credits longer than one period.
//  - The lowest owing VL goes first (fc_valid, fc_vl combinational), one a
//    cycle the link takes (fc_ready). Sending a VL's packet clears what it
//    owed; a refresh in the same cycle makes it owe again.
//  - A change of the port's FCTBS (a data packet sent) owes nothing: the
//    packet carries the FCTBS current when it is sent, as the model's do.
module fc_scheduler #(
    parameter integer VLS            = 1,
    parameter integer VL_W           = 1,
    parameter integer REFRESH_CYCLES = 6000,
    parameter integer MIN_CYCLES     = 0
) (
    input  wire              clk,
    input  wire              rst_n,
    input  wire [VLS*12-1:0] fccl_adv,
    output wire              fc_valid,
    output wire [VL_W-1:0]   fc_vl,
    input  wire              fc_ready
);
    localparam integer RW    = $clog2(REFRESH_CYCLES);
    localparam integer TW    = (RW > 0) ? RW : 1;
    localparam integer LAST_I = REFRESH_CYCLES - 1;
    localparam [TW-1:0] LAST = LAST_I[TW-1:0];
    // since counts cycles from a VL's last packet up to MIN_CYCLES.
    localparam integer MW    = (MIN_CYCLES > 0) ? $clog2(MIN_CYCLES + 1) : 1;
    localparam [MW-1:0] MINV = MIN_CYCLES[MW-1:0];
    localparam [MW-1:0] ONE  = 1;  // (unread without a minimum interval)

    reg  [TW-1:0]     tick;    // cycles since the last refresh, 0..REFRESH_CYCLES-1
    reg  [VLS-1:0]    pend;    // owed by a refresh
    reg  [VLS-1:0]    sent;    // the VL has sent a packet since reset
    reg  [VLS*12-1:0] last;    // the FCCL its last packet carried
    reg  [VLS*MW-1:0] since;   // cycles since that packet, saturating at MIN_CYCLES
    wire [VLS-1:0]    due;
    wire              refresh = (tick == LAST);
    wire              go      = fc_valid && fc_ready;

    // aged[v]: the VL's last packet left at least MIN_CYCLES ago, or it
    // has sent none (with no minimum interval, always).
    wire [VLS-1:0] aged;
    genvar v;
    generate
        for (v = 0; v < VLS; v = v + 1) begin : g_vl
            wire changed = fccl_adv[v*12 +: 12] != last[v*12 +: 12];
            if (MIN_CYCLES > 0) begin : g_min
                assign aged[v] = !sent[v] || since[v*MW +: MW] >= MINV;
            end else begin : g_nomin
                assign aged[v] = 1'b1;
            end
            assign due[v] = pend[v] || (changed && aged[v]);
        end
    endgenerate

    wire [VLS-1:0] lowest = due & (~due + 1'b1);
    assign fc_valid = (due != {VLS{1'b0}});
    onehot_encode #(.N(VLS), .IDX_W(VL_W)) u_enc (.onehot(lowest), .idx(fc_vl));

    integer k;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            tick  <= {TW{1'b0}};
            pend  <= {VLS{1'b0}};
            sent  <= {VLS{1'b0}};
            last  <= {(VLS*12){1'b0}};
            since <= {(VLS*MW){1'b0}};
        end else begin
            tick <= refresh ? {TW{1'b0}} : tick + 1'b1;
            for (k = 0; k < VLS; k = k + 1) begin
                if (go && lowest[k]) begin
                    last[k*12 +: 12]  <= fccl_adv[k*12 +: 12];
                    sent[k]           <= 1'b1;
                    since[k*MW +: MW] <= ONE;
                    pend[k]           <= refresh;
                end else begin
                    if (!aged[k]) since[k*MW +: MW] <= since[k*MW +: MW] + 1'b1;
                    if (refresh) pend[k] <= 1'b1;
                end
            end
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */
    // (Without a minimum interval neither sent nor since is read.)
    wire unused_ok = &{1'b0, sent, since, 1'b0};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule
