// Smoke testbench for the emitted radix-2, 2-VL switch_top (rtl/smoke_test.go):
// forces the (TODO) link of port 1 to deliver three 2-block packets on VLs
// 0, 1, 0 (SLs 0, 1, 0) for DLID 1, lets port 0's link always accept, and counts what port 0
// sends. Before the packets it writes the one route they need, DLID 1 -> port 0, through the
// forwarding-table write port once the tables have cleared (LFT_TOP 1: two cycles).
`timescale 1ns/1ps
module smoke_tb;
    localparam integer DATA_W = 512;
    reg clk = 1'b0;
    reg rst_n = 1'b0;
    always #5 clk = ~clk;
    wire [2*4*64-1:0] serdes_tx;
    wire [1:0] link_up;
    reg [64*12-1:0] high, low;
    reg        lft_we = 1'b0;
    reg [15:0] lft_dlid = 16'd0;
    wire       lft_ready;
    switch_top #(.LFT_TOP(1)) dut (
        .clk(clk), .rst_n(rst_n), .serdes_rx({(2*4*64){1'b0}}), .serdes_tx(serdes_tx), .link_up(link_up),
        .vlarb_high(high), .vlarb_low(low), .vlarb_limit(8'd0),
        .lft_we(lft_we), .lft_dlid(lft_dlid), .lft_valid(1'b1), .lft_port(1'd0), .lft_ready(lft_ready)
    );
    reg rx_valid, rx_sop, rx_eop;
    reg [DATA_W-1:0] rx_data;
    reg [3:0] rx_vl;
    initial begin
        force dut.g_port[1].u_link.rx_valid = rx_valid;
        force dut.g_port[1].u_link.rx_sop = rx_sop;
        force dut.g_port[1].u_link.rx_eop = rx_eop;
        force dut.g_port[1].u_link.rx_data = rx_data;
        force dut.g_port[1].u_link.rx_vl = rx_vl;
        force dut.g_port[0].u_link.tx_ready = 1'b1;
        force dut.g_port[0].u_link.fc_tx_ready = 1'b1;
    end
    integer blocks, sops, eops, fcs, pk, b;
    always @(posedge clk) begin
        if (dut.g_port[0].tx_valid && dut.g_port[0].tx_ready) begin
            blocks = blocks + 1;
            if (dut.g_port[0].tx_sop) sops = sops + 1;
            if (dut.g_port[0].tx_eop) eops = eops + 1;
        end
        if (dut.g_port[0].fc_tx_valid) fcs = fcs + 1;
    end
    initial begin
        blocks = 0; sops = 0; eops = 0; fcs = 0;
        high = 0; low = 0;
        low[11:0] = {8'd4, 4'd0};   // low entry 0: VL0 weight 4
        low[23:12] = {8'd4, 4'd1};  // low entry 1: VL1 weight 4
        rx_valid = 0; rx_sop = 0; rx_eop = 0; rx_data = 0; rx_vl = 0;
        @(negedge clk); @(negedge clk); rst_n = 1;
        wait (lft_ready);
        @(negedge clk); lft_we = 1; lft_dlid = 16'd1;
        @(negedge clk); lft_we = 0;
        for (pk = 0; pk < 3; pk = pk + 1) begin
            for (b = 0; b < 2; b = b + 1) begin
                @(negedge clk);
                rx_valid = 1; rx_sop = (b == 0); rx_eop = (b == 1); rx_vl = pk % 2;
                rx_data = 0;
                rx_data[DATA_W-38 -: 11] = 11'd20; // PktLen 20 words: (20 + 16) >> 4 = 2 blocks
                // LRH.VL and LRH.SL: SL pk % 2 on the VL the default table
                // (SL i -> VL i & 1 with 2 VLs) gives, as a host sends it.
                rx_data[DATA_W-1 -: 4] = pk % 2;
                rx_data[DATA_W-9 -: 4] = pk % 2;
                rx_data[DATA_W-17 -: 16] = 16'd1; // LRH.DLID
            end
        end
        @(negedge clk); rx_valid = 0;
        repeat (40) @(negedge clk);
        $display("SMOKE blocks=%0d sops=%0d eops=%0d fctbs0=%0d fctbs1=%0d fcs=%0d", blocks, sops, eops,
                 dut.g_port[0].u_out.g_vl[0].u_credit.fctbs, dut.g_port[0].u_out.g_vl[1].u_credit.fctbs, fcs);
        $finish;
    end
endmodule
