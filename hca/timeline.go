package hca

import "github.com/hcasim/hcasim/ib"

// Timeline records when one traced message passed each point of the
// pipeline at both ends (0 = not reached; Posted, which a post at the
// run's start leaves at 0, has Started). Both devices of a run share it;
// the workload reads it for the per-stage latency breakdown.
type Timeline struct {
	Active   bool
	dev      *Device // the requester's device
	QPN      uint32  // requester QP
	WQEIndex uint16  // the traced WQE's index (its first WQEBB)

	DestQPN  uint32 // responder QP, learned when the first packet is built
	FirstPSN uint32
	LastPSN  uint32
	psnSet   bool

	Posted        ib.PS // application calls post_send
	posted        bool  // Posted is recorded: a post at the run's start is at time 0
	DoorbellStore ib.PS // CPU's doorbell store leaves (after the post's CPU time)
	Doorbell      ib.PS // doorbell reaches the HCA (MMIO)
	DoorbellDone  ib.PS // doorbell stage done
	WQEReady      ib.PS // WQE fetched (or BlueFlame-parsed) and key-checked
	Granted       ib.PS // scheduler grants the first packet
	DMAReadDone   ib.PS // first packet's payload read from host memory
	TxReady       ib.PS // first packet built, ready for the wire
	WireStart     ib.PS // first packet starts on the wire
	RxTail        ib.PS // its tail arrives at the responder
	RxDone        ib.PS // responder transport-rx stage done
	RespKey       ib.PS // responder key check done
	RespWrite     ib.PS // last packet's payload visible in responder memory
	RespCQEIssue  ib.PS // responder CQE write issued
	RespCQE       ib.PS // responder CQE visible
	AckRx         ib.PS // requester completes the WQE (ACK or response processed)
	ReqCQE        ib.PS // requester CQE visible
}

// Trace starts recording the WQE with index idx on qp (the requester).
func (tl *Timeline) Trace(qp *QP, idx uint16) {
	*tl = Timeline{Active: true, dev: qp.dev, QPN: qp.Num, WQEIndex: idx}
}

// Started reports whether the traced WQE has been posted. Posted alone
// cannot say: a bandwidth test posts its first send queue's worth of WRs
// at time 0.
func (tl *Timeline) Started() bool { return tl.posted }

// atRequester reports whether d's qp is the traced requester.
func (tl *Timeline) atRequester(d *Device, qpn uint32) bool {
	return tl != nil && tl.Active && tl.dev == d && tl.QPN == qpn
}

// atResponder reports whether pkt, arriving at d, belongs to the traced message.
func (tl *Timeline) atResponder(d *Device, pkt *ib.Packet) bool {
	return tl != nil && tl.dev != d && tl.matchesRequest(pkt)
}

func (tl *Timeline) notePSNs(dest, first uint32, n int) {
	if tl.psnSet {
		return
	}
	tl.DestQPN, tl.FirstPSN, tl.LastPSN, tl.psnSet = dest, first, psnAdd(first, n-1), true
}

// matchesRequest reports whether pkt is a request packet of the traced message.
func (tl *Timeline) matchesRequest(pkt *ib.Packet) bool {
	return tl.Active && tl.psnSet && pkt.DestQP == tl.DestQPN && pkt.Opcode.IsRequest() &&
		psnDiff(pkt.PSN, tl.FirstPSN) >= 0 && psnDiff(pkt.PSN, tl.LastPSN) <= 0
}
