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
