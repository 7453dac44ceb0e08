package hca

// WQERead is the chunking rule of the send-queue WQE fetch: the next DMA
// read a QP's send queue issues, given its counters. posted is the producer
// count the doorbells announced (WQEBBs), fetched the WQEBBs whose read was
// issued, inFlight the WQEBBs read but not yet parsed (the prefetch
// window's use), depth the prefetch window (hca.wqe_prefetch_depth) and
// ringBBs the ring's size in WQEBBs. The read covers n WQEBBs from ring slot
// slot (at sq base + slot × 64 bytes):
//
//	n = min(posted − fetched, depth − inFlight, ringBBs − fetched mod ringBBs)
//
// so a read never runs past the ring's end (the rest follows from slot 0)
// and never takes the window past depth. n = 0 means no read now: nothing
// is posted but unfetched, or the window is full. The counters are free
// running and compared modulo 2^32 (posted − fetched is at most ringBBs).
// Device.fetchWQEs and the RTL's hca_wqe_fetch share this rule.
func WQERead(posted, fetched uint32, inFlight, depth, ringBBs int) (n, slot int) {
	slot = int(fetched % uint32(ringBBs))
	if posted == fetched || inFlight >= depth {
		return 0, slot
	}
	return min(int(posted-fetched), depth-inFlight, ringBBs-slot), slot
}

// RecvRead is the chunking rule of the receive-queue prefetch: the next DMA
// read of a QP's receive queue, given its counters. Receive WQEs are
// RecvWQEBytes (16) each, four to a 64-byte block, and the prefetch window is
// depth blocks (hca.wqe_prefetch_depth), so depth × 4 WQEs. posted is the
// producer count the doorbells announced (WQEs), fetched the WQEs whose read
// was issued, held the WQEs read and not yet taken by the responder (on chip
// or in flight) and ringWQEs the ring's size in WQEs. The read covers n WQEs
// from ring slot slot (at rq base + slot × 16 bytes):
//
//	n = min(posted − fetched, depth × 4 − held, ringWQEs − fetched mod ringWQEs)
//
// so a read never runs past the ring's end nor takes the window past depth
// blocks. n = 0 means no read now. The counters are free running and
// compared modulo 2^32. (Before calling it, Device.recvFetch moves fetched
// up to the WQEs a QP in ERR flushed before their read.)
func RecvRead(posted, fetched uint32, held, depth, ringWQEs int) (n, slot int) {
	return RecvReadStride(posted, fetched, held, depth, ringWQEs, RecvWQEBytes)
}

// RecvWindow is the receive prefetch window in WQEs: depth 64-byte
// blocks of WQEs of stride bytes, at least one.
func RecvWindow(depth, stride int) int { return max(1, depth*WQEBBBytes/stride) }

// RecvReadStride is RecvRead for a receive queue of stride bytes per WQE
// (16 × a power of two, QP.RecvStride): the window of depth 64-byte blocks
// holds depth × 64 / stride WQEs, at least one, and a read of n WQEs is
// n × stride bytes.
func RecvReadStride(posted, fetched uint32, held, depth, ringWQEs, stride int) (n, slot int) {
	window := RecvWindow(depth, stride)
	slot = int(fetched % uint32(ringWQEs))
	if posted == fetched || held >= window {
		return 0, slot
	}
	return min(int(posted-fetched), window-held, ringWQEs-slot), slot
}
