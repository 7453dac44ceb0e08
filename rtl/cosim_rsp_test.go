package rtl

import (
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// modelRx is what the model's requester does with a packet hca_rx_ack hands
// the requester (hca.Device.complete): OnAck for an ACKNOWLEDGE,
// OnReadResponse for a READ response, OnAtomicAck for an atomic ACK.
func modelRx(req *hca.Requester, a reqAck) hca.AckResult {
	if a.rsp == nil {
		return req.OnAck(a.psn, a.syn)
	}
	p := a.packet()
	if p.Opcode == ib.AtomicAcknowledge {
		_, _, res := req.OnAtomicAck(p)
		return res
	}
	_, _, res := req.OnReadResponse(p)
	return res
}
