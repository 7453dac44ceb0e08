package hca

import "github.com/hcasim/hcasim/ib"

// QPCache is the HCA's QP context cache: the QP contexts (QPC) it holds
// on chip, least recently used out (hca.qp_cache_entries). ConnectX keeps
// every QP's context in ICM, host memory the HCA owns, and caches the
// contexts of the QPs it is working on in on-chip SRAM; a QP whose
// context is not cached waits for a PCIe read of it (Kalia, Kaminsky and
// Andersen, "Design Guidelines for High Performance RDMA Systems", USENIX
// ATC 2016). Entries are keyed by QP number; an entry is allocated at the
// miss and filled when its read completes, so a use of the QP meanwhile
// hits and waits for that read (lru).
type QPCache struct{ lru[uint32] }

// QPCache returns the QP context cache, nil when QP contexts are not
// modelled (hca.qp_cache_entries 0).
func (d *Device) QPCache() *QPCache { return d.qpc }

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
	return QPCBase + uint64(qpn)*uint64(ctxBytes)
}

// qpContext returns when qp's context is on chip for a use asked for at t:
// at t when QP contexts are not modelled or it is cached (and its read, if
// one brought it, is done), else when the read of its
// hca.qp_context_bytes from ICM that this miss issues at t completes. The
// HCA uses a QP's context where it takes up the QP's work: the scheduler's
// grant of each request packet (schedule, grantUD), a request packet
// arriving for it (respond, receiveUD), and an ACK, NAK or response
// arriving for its requester (complete). That use of the QP waits; other
// QPs go on where the pipeline lets them (the stages' per-QP slots and the
// PCIe link's time order; the transmit queue of a VL is one FIFO in grant
// order, "Simplifications (known)").
func (d *Device) qpContext(qp *QP, t ib.PS) ib.PS {
	if d.qpc == nil {
		return t // small enough to inline: a run without the cache pays a test
	}
	return d.qpContextFetch(qp, t)
}

// qpContextFetch is qpContext's access to the cache.
func (d *Device) qpContextFetch(qp *QP, t ib.PS) ib.PS {
	n := d.Cfg.QPContextBytes
	return d.qpc.fetch(d.PCIe, t, qp.Num, QPContextAddr(qp.Num, n), n, 0)
}
