package rtl

import (
	"embed"
	"fmt"
)

// verilogFS holds the hand-written, synthesizable primitives. They are copied
// into every emitted tree behind the generated-file header.
//
//go:embed verilog/*.v
var verilogFS embed.FS

// PrimitiveFiles lists the implemented primitive sources, in emission order.
var PrimitiveFiles = []string{
	"sync_fifo.v",
	"onehot_encode.v",
	"rr_arbiter.v",
	"vl_arb_table.v",
	"vl_arbiter.v",
	"credit_sender.v",
	"credit_receiver.v",
	"fc_scheduler.v",
	"sw_route_lookup.v",
	"hca_key_check.v",
	"hca_wqe_parse.v",
	"hca_cqe_writer.v",
	"hca_doorbell.v",
	"hca_wqe_fetch.v",
	"hca_rq.v",
	"hca_rd_merge.v",
	"hca_dma_engine.v",
	"ib_vcrc.v",
	"ib_fc_codec.v",
	"hca_tx_packetizer.v",
	"hca_tx_assemble.v",
	"ib_icrc.v",
	"hca_tx_path.v",
	"hca_requester.v",
	"hca_rx_ack.v",
	"hca_responder.v",
	"hca_share_arb.v",
	"hca_ack_tx.v",
	"hca_cpl_arb.v",
}

// PrimitiveSource returns the Verilog text of one file in PrimitiveFiles. It
// panics on a name that is not one: the list is fixed at build time.
func PrimitiveSource(file string) string {
	b, err := verilogFS.ReadFile("verilog/" + file)
	if err != nil {
		panic(fmt.Sprintf("rtl.PrimitiveSource: %q: %v", file, err))
	}
	return string(b)
}
