package hca

import "github.com/hcasim/hcasim/ib"

// The QP context cache (hca.qp_cache_entries) is a ContextCache of QP
// contexts (QPC), keyed by QP number. ConnectX keeps every QP's context
// in ICM, host memory the HCA owns, and caches the contexts of the QPs it
// is working on in on-chip SRAM; a QP whose context is not cached waits
// for a PCIe read of it (Kalia, Kaminsky and Andersen, "Design Guidelines
// for High Performance RDMA Systems", USENIX ATC 2016), and a context its
// uses modified is written back to ICM when it is evicted.
//
// Which uses modify the context: the fields of mlx5's QPC
// (mlx5_ifc_qpc_bits) that move with traffic are the send side's
// next_send_psn, ssn and hw_sq_wqebb_counter (the send queue's consumer
// index), moved by every packet granted; last_acked_psn and the retry
// counters cur_retry_count and cur_rnr_retry, moved by an ACK, NAK or
// response the requester acts on and by the local ACK timer's expiry; and
// the receive side's next_rcv_psn, rmsn and hw_rq_counter, moved by a
// request packet taken in sequence (a receive WQE taken from the QP's own
// receive queue moves hw_rq_counter; one from an SRQ moves the SRQ's
// context instead). A use that changes
// none of them — a duplicate or RNR-NAKed request, a stale ACK, a
// datagram dropped or received through an SRQ — only reads the context.

// QPCache returns the QP context cache, nil when QP contexts are not
// modelled (hca.qp_cache_entries 0).
func (d *Device) QPCache() *ContextCache { return d.qpc }

// QPCBase is the bus address at which the model puts the QPC table in ICM:
// QP n's context at QPCBase + n × hca.qp_context_bytes (a power of two, so
// each context is aligned to its size and its read splits into requests
// only when it is larger than MRRS). ConnectX's ICM layout is not
// published; a table indexed by QP number, as the InfiniHost PRM's QPC
// table is, is the assumption. 2^24 QPs of at most 4096 bytes take 2^36
// bytes, between the MPT (2^30 bytes from MPTBase) and MTTBase.
const QPCBase = 1<<60 + 1<<57

// QPContextAddr returns the bus address of QP qpn's context for contexts
// of ctxBytes (QPCBase).
func QPContextAddr(qpn uint32, ctxBytes int) uint64 {
	return ContextAddr(QPCBase, qpn, ctxBytes)
}

// qpContext returns when qp's context is on chip for a use asked for at t:
// at t when QP contexts are not modelled or it is cached (and its read, if
// one brought it, is done), else when the read of its
// hca.qp_context_bytes from ICM that this miss issues at t completes
// (after the write-back of a modified context it evicts: contextUse). The
// HCA uses a QP's context where it takes up the QP's work: the scheduler's
// grant of each request packet (schedule, grantUD), a request packet
// arriving for it (respond, receiveUD), and an ACK, NAK or response
// arriving for its requester (complete), and its local ACK timer expiring
// with something to resend or fail (timeout). That use of the QP waits; other
// QPs go on where the pipeline lets them (the stages' per-QP slots and the
// PCIe link's time order; the transmit queue of a VL is one FIFO in grant
// order, "Simplifications (known)"). A use that modifies the context says
// so with qpModified.
func (d *Device) qpContext(qp *QP, t ib.PS) ib.PS {
	if d.qpc == nil {
		return t // small enough to inline: a run without the cache pays a test
	}
	return d.contextUse(d.qpc, t, qp.Num)
}

// qpModified records that the use of qp's context just made moved a field
// of it (the package comment above says which uses do), so that its
// eviction writes it back.
func (d *Device) qpModified(qp *QP) {
	if d.qpc != nil {
		d.qpc.modified(qp.Num)
	}
}
