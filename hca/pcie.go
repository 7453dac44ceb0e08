package hca

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// pcieGenRate is a generation's per-lane transfer rate and line-code
// efficiency effNum/effDen.
type pcieGenRate struct {
	gts            int64 // GT/s per lane (bits per ns)
	effNum, effDen int64 // payload bits per line bit
}

// pcieGens: Gen3–5 use 128b/130b (ib-facts §8); Gen6 uses 256-byte FLITs
// of which 236 bytes carry TLPs (6 B DLP, 8 B CRC, 6 B FEC; PCIe 6.0 FLIT
// layout from a secondary source, muditbhargava66.github.io notes "Gen6 vs
// Legacy PCIe", the specification being members-only; ib-facts §8 marks
// the FLIT efficiency unconfirmed and gives ~121–126 GB/s, this gives
// 118 GB/s at x16; docs/validation.md has the correction).
var pcieGens = map[int]pcieGenRate{
	3: {8, 128, 130},
	4: {16, 128, 130},
	5: {32, 128, 130},
	6: {64, 236, 256},
}

// tlpSpan is a stretch of one PCIe direction that TLPs hold, [start, end)
// in ps; TLPs booked back to back share one span.
type tlpSpan struct{ start, end ib.PS }

// pcieDir is one direction of the PCIe link, booked in time order: a TLP
// takes the first stretch at or after its own time (and after the TLPs it
// may not pass, which the caller puts into that time) that no TLP booked
// before holds, as a link serving TLPs as they become ready would, so a
// TLP booked for a later time does not hold back one booked afterwards
// for an earlier time. A TLP once booked is not moved: a TLP booked for
// an earlier time than TLPs booked before it waits for those of them that
// hold the stretch it would take, where in strict time order it would
// have gone first and they after it. Bookings in time order get the FIFO
// times (each at max(t, end of the previous)).
type pcieDir struct {
	// spans are the stretches held before the last one, disjoint and
	// ascending; spans[:head] ended by now, when they were forgotten.
	spans []tlpSpan
	head  int
	// [tailStart, last) is the last stretch held, kept out of spans: most
	// bookings extend it (bookTail). last is the latest end booked: the
	// direction is idle after it.
	tailStart, last ib.PS
	busy            ib.PS // total time spent serialising TLPs
}

// book gives a TLP of dur that may start at t the first stretch at or
// after t that no TLP booked before holds, and returns its start.
func (d *pcieDir) book(t, dur ib.PS) ib.PS {
	if start, ok := d.bookTail(t, dur); ok {
		return start
	}
	// t is before the last stretch: search them all, the last included.
	d.spans = append(d.spans, tlpSpan{d.tailStart, d.last})
	live := d.spans[d.head:]
	// From the first span that ends after t (ends ascend with starts), move
	// past every span the TLP would overlap.
	i := len(live)
	for i > 0 && live[i-1].end > t {
		i--
	}
	start := t
	for i < len(live) && live[i].start < start+dur {
		start = max(start, live[i].end)
		i++
	}
	end := start + dur
	d.busy += dur
	if dur > 0 {
		joinPrev := i > 0 && live[i-1].end == start
		joinNext := i < len(live) && live[i].start == end
		switch {
		case joinPrev && joinNext:
			live[i-1].end = live[i].end
			copy(live[i:], live[i+1:])
			d.spans = d.spans[:len(d.spans)-1]
		case joinPrev:
			live[i-1].end = end
		case joinNext:
			live[i].start = start
		default:
			d.spans = append(d.spans, tlpSpan{})
			live = d.spans[d.head:]
			copy(live[i+1:], live[i:])
			live[i] = tlpSpan{start, end}
		}
	}
	// The last span is the tail again.
	n := len(d.spans) - 1
	d.tailStart, d.last = d.spans[n].start, d.spans[n].end
	d.spans = d.spans[:n]
	return start
}

// bookTail books dur at the end of what is booked, where book would put
// it, when no search is needed: t is within or after the last stretch
// held (the direction is busy from t until last without a gap, then
// free), so the TLP, or a train of TLPs that go back to back, starts at
// max(t, last). It reports false, booking nothing, when t is before it.
func (d *pcieDir) bookTail(t, dur ib.PS) (ib.PS, bool) {
	if t < d.tailStart {
		return 0, false
	}
	start := max(t, d.last)
	if dur == 0 {
		return start, true
	}
	d.busy += dur
	if start != d.last {
		// A gap before the new TLP: the old tail joins the list.
		if d.last > d.tailStart {
			d.spans = append(d.spans, tlpSpan{d.tailStart, d.last})
		}
		d.tailStart = start
	}
	d.last = start + dur
	return start, true
}

// forget drops the spans that ended by now: bookings are for now or later,
// so they hold back none.
func (d *pcieDir) forget(now ib.PS) {
	for d.head < len(d.spans) && d.spans[d.head].end <= now {
		d.head++
	}
	if d.head > 64 && 2*d.head > len(d.spans) {
		n := copy(d.spans, d.spans[d.head:])
		d.spans, d.head = d.spans[:n], 0
	}
}

// PostedWrite is a posted write the device issues at Issue, N bytes, and
// what it does when the write's end is known (Note, the device's).
type PostedWrite struct {
	Issue ib.PS
	N     int
	Note  WriteNote
}

// WriteNote is what the device does once a posted write is booked: its
// kind and arguments (device.go, postedBooked).
type WriteNote struct {
	Kind   uint8
	VL     int8
	Timed  bool  // the write ends a Timeline's message
	Blocks int32 // receive-buffer blocks its packet holds
	Addr   uint64
	Len    int32
}

// postedMark says that the posted writes issued at or before issue end by
// doneBy (ps).
type postedMark struct{ issue, doneBy ib.PS }

// clock is the simulation's time, what the link needs to forget its past.
type clock interface{ Now() ib.PS }

// PCIe is the timing of the HCA's PCIe link, pure arithmetic with state: per
// direction the link holds stretches of time for TLPs, so concurrent DMAs
// share its bandwidth. Upstream (HCA to host) carries posted writes and read
// requests; downstream (host to HCA) carries read completions. Doorbells
// (MMIO) are a fixed latency: a few bytes that do not load the link
// measurably.
//
// TLPs are served in the order of the times they are issued, not of the
// calls (pcieDir): the device books some reads ahead of now (a key-cache
// miss's context read after the lookup, MTT entries after a key check,
// reads issued when the DMA stage will accept them). Within that, the
// ordering PCIe requires and the model relies on holds (PCIe Base
// Specification, transaction ordering, with relaxed ordering off): a
// posted write does not pass a posted write issued before it, nor a read
// request a posted write issued before it; a read's completions return in
// order. Calls must not be for a time before now. Posted writes are booked
// in the order of their issue times (Post): a write issued later than
// now + horizon is kept until no write issued before it can still come,
// or until a read request issued at or after it needs its end, so that
// no posted write passes another (the device decides on some before
// others issued earlier: a payload write behind its key miss). Write
// books at once (an atomic's result, and tests).
type PCIe struct {
	cfg          PCIeConfig
	psNum, psDen int64 // picoseconds per byte = psNum / psDen
	up, down     pcieDir
	clock        clock // nil: now is 0 (a link used alone, in tests)
	forgotAt     ib.PS // the now of the last forget
	// posted are the posted writes booked upstream, ascending by issue
	// time, each mark the latest end of a write issued at or before it;
	// posted[:postedHead] are marks of the past, which the mark at
	// postedHead (issued by now) covers.
	posted     []postedMark
	postedHead int
	// pending are the posted writes the device has decided on but not yet
	// booked (Post), ascending by issue time, ties in call order;
	// pending[:pendingHead] were booked. horizon: no write is posted for
	// an issue time before now + horizon (the device's shortest stage
	// latency before a write), so a write issued by now + horizon can be
	// booked: every write issued before it has been posted.
	pending     []PostedWrite
	pendingHead int
	horizon     ib.PS
	// onBooked is told each pending write's end (ps, its last TLP's) when
	// it is booked.
	onBooked func(w *PostedWrite, end ib.PS)
	// bookedIssue is the latest issue time of a posted write booked so far.
	bookedIssue ib.PS
	// WritesBookedLate counts posted writes booked after a write issued
	// later than them: those a read request or an atomic made the link
	// book before their time (flushPending). Such a write may take the
	// gaps around the later-issued one and end after it.
	WritesBookedLate int64
	// tagBusy are the times the read tags in use free, ascending;
	// tagBusy[:tagHead] freed by now. The others of the tags are free.
	tagBusy []ib.PS
	tagHead int
	tags    int // hca.pcie.outstanding_reads
	// reqPS, cplPS and mpsPS are the times of a read request, a full
	// completion (read_completion_bytes) and a full posted-write TLP
	// (mps_bytes), each with its overhead: SerPS of them, computed once.
	reqPS, cplPS, mpsPS ib.PS
	mrrsCplPS           ib.PS // the completions of a full MRRS request, back to back
	queuePS             ib.PS // posted_write_queue_bytes on the link: a received payload frees its buffer this long before its write ends
	readLat             ib.PS
	writeLat            ib.PS
	mmioLat             ib.PS
	ReadBytes           int64 // payload bytes read by the HCA
	WrittenBytes        int64 // payload bytes written by the HCA
	ReadRequests        int64 // read request TLPs sent
	TagStallPS          ib.PS // time read requests waited for a free tag
}

// NewPCIe builds the link model; cfg must have passed Validate.
func NewPCIe(cfg PCIeConfig) *PCIe {
	g, ok := pcieGens[cfg.Gen]
	if !ok {
		panic(fmt.Sprintf("hca: PCIe gen %d has no rate (config not validated)", cfg.Gen))
	}
	p := &PCIe{
		cfg: cfg,
		// ps/byte = 8 bits × 1000 ps/ns / (GT/s × lanes × eff)
		psNum:    8000 * g.effDen,
		psDen:    g.gts * int64(cfg.Lanes) * g.effNum,
		tags:     cfg.OutstandingReads,
		readLat:  ib.FromNanoseconds(cfg.ReadLatencyNS),
		writeLat: ib.FromNanoseconds(cfg.WriteLatencyNS),
		mmioLat:  ib.FromNanoseconds(cfg.MMIOLatencyNS),
	}
	p.reqPS = p.SerPS(cfg.TLPOverheadBytes)
	p.cplPS = p.SerPS(cfg.ReadCompletionBytes + cfg.CompletionOverheadBytes)
	p.mpsPS = p.SerPS(cfg.MPSBytes + cfg.TLPOverheadBytes)
	p.mrrsCplPS = p.trainPS(cfg.MRRSBytes)
	p.queuePS = p.SerPS(cfg.PostedWriteQueueBytes)
	return p
}

// SerPS returns the time to serialise bytes on one direction, rounded up.
func (p *PCIe) SerPS(bytes int) ib.PS {
	return ib.PS((int64(bytes)*p.psNum + p.psDen - 1) / p.psDen)
}

// PayloadGbps returns one direction's raw data rate in Gb/s (after line code).
func (p *PCIe) PayloadGbps() float64 { return 8000 / (float64(p.psNum) / float64(p.psDen)) }

// MMIO returns when a doorbell stored by the CPU at t reaches the HCA.
func (p *PCIe) MMIO(t ib.PS) ib.PS { return t + p.mmioLat }

// forget drops what no booking from now on can be held back by: spans that
// ended, posted marks covered by a later one issued by now, tags freed.
func (p *PCIe) forget() ib.PS {
	if p.clock == nil {
		return 0
	}
	now := p.clock.Now()
	if now == p.forgotAt {
		return now
	}
	p.forgotAt = now
	p.up.forget(now)
	p.down.forget(now)
	for p.postedHead+1 < len(p.posted) && p.posted[p.postedHead+1].issue <= now {
		p.postedHead++
	}
	if p.postedHead > 64 && 2*p.postedHead > len(p.posted) {
		n := copy(p.posted, p.posted[p.postedHead:])
		p.posted, p.postedHead = p.posted[:n], 0
	}
	p.retireTags(now)
	return now
}

// postedDone returns when the posted writes issued at or before t end (0
// if none is booked): what a TLP issued at t that may not pass them waits
// for.
func (p *PCIe) postedDone(t ib.PS) ib.PS {
	for i := len(p.posted) - 1; i >= p.postedHead; i-- {
		if p.posted[i].issue <= t {
			return p.posted[i].doneBy
		}
	}
	return 0
}

// notePosted records a posted-write TLP issued at issue that ends at end:
// the writes issued at or after issue end no earlier.
func (p *PCIe) notePosted(issue, end ib.PS) {
	m := p.posted[p.postedHead:]
	i := len(m)
	for i > 0 && m[i-1].issue > issue {
		m[i-1].doneBy = max(m[i-1].doneBy, end)
		i--
	}
	if i > 0 && m[i-1].issue == issue {
		m[i-1].doneBy = max(m[i-1].doneBy, end)
		return
	}
	if i > 0 {
		end = max(end, m[i-1].doneBy)
	}
	p.posted = append(p.posted, postedMark{})
	m = p.posted[p.postedHead:]
	copy(m[i+1:], m[i:])
	m[i] = postedMark{issue, end}
}

// Write posts n bytes from the HCA to host memory starting at t, split into
// MPS-sized TLPs; it returns when the last byte is visible in memory.
// Posted writes do not pass one another: each TLP starts after the posted
// writes issued at or before t.
func (p *PCIe) Write(t ib.PS, n int) ib.PS {
	if now := p.forget(); t < now {
		panic(fmt.Sprintf("hca: PCIe write booked at %d ps, before now %d ps", t, now))
	}
	p.flushPending(t)
	return p.write(t, n)
}

// write books a posted write issued at t (Write, flushPending).
func (p *PCIe) write(t ib.PS, n int) ib.PS {
	if t < p.bookedIssue {
		p.WritesBookedLate++
	}
	p.bookedIssue = max(p.bookedIssue, t)
	p.WrittenBytes += int64(n)
	if n <= 0 {
		return t + p.writeLat
	}
	at := max(t, p.postedDone(t))
	full, rest := n/p.cfg.MPSBytes, n%p.cfg.MPSBytes
	restPS := ib.PS(0)
	if rest > 0 {
		restPS = p.SerPS(rest + p.cfg.TLPOverheadBytes)
	}
	// At the end of what is booked the TLPs go back to back: one span
	// (what booking them one by one gives there).
	start, ok := p.up.bookTail(at, ib.PS(full)*p.mpsPS+restPS)
	end := start + ib.PS(full)*p.mpsPS + restPS
	if !ok {
		end = at
		for k := 0; k < full; k++ {
			end = p.up.book(end, p.mpsPS) + p.mpsPS
		}
		if rest > 0 {
			end = p.up.book(end, restPS) + restPS
		}
	}
	p.notePosted(t, end)
	return end + p.writeLat
}

// Post is Write for a write the device decides on before it issues it
// (its issue time t is later than now + horizon): posted writes are
// serialised in the order of their issue times, and a write posted later
// may be issued earlier. Post books a write issued by now + horizon at
// once and returns its end (when its data are visible) and true;
// otherwise it keeps the write, returns false, and books it when Flush is
// called at t − horizon (the device schedules that) or when a read
// request or atomic issued at or after it needs its end (flushPending),
// telling onBooked.
func (p *PCIe) Post(t ib.PS, n int, note WriteNote) (ib.PS, bool) {
	now := p.forget()
	if t < now {
		panic(fmt.Sprintf("hca: PCIe write posted at %d ps, before now %d ps", t, now))
	}
	if t <= now+p.horizon {
		p.flushPending(t)
		return p.write(t, n), true
	}
	w := PostedWrite{t, n, note}
	if p.pendingHead > 64 && 2*p.pendingHead > len(p.pending) {
		k := copy(p.pending, p.pending[p.pendingHead:])
		p.pending, p.pendingHead = p.pending[:k], 0
	}
	i := len(p.pending)
	for i > p.pendingHead && p.pending[i-1].Issue > t {
		i--
	}
	p.pending = append(p.pending, w)
	if i < len(p.pending)-1 {
		copy(p.pending[i+1:], p.pending[i:])
		p.pending[i] = w
	}
	return 0, false
}

// Flush books the kept writes issued by now + horizon: no write issued
// before them can be posted any more.
func (p *PCIe) Flush() {
	p.flushPending(p.forget() + p.horizon)
}

// flushPending books the kept writes issued at or before t, in issue
// order, telling onBooked each end: a TLP issued at t may not pass them.
func (p *PCIe) flushPending(t ib.PS) {
	for p.pendingHead < len(p.pending) && p.pending[p.pendingHead].Issue <= t {
		w := &p.pending[p.pendingHead]
		p.pendingHead++
		end := p.write(w.Issue, w.N)
		p.onBooked(w, end)
	}
}

// NextPending returns the earliest issue time of a kept write and whether
// there is one.
func (p *PCIe) NextPending() (ib.PS, bool) {
	if p.pendingHead == len(p.pending) {
		return 0, false
	}
	return p.pending[p.pendingHead].Issue, true
}

// PendingUntil returns the latest issue time of a kept write (0 if none).
func (p *PCIe) PendingUntil() ib.PS {
	if p.pendingHead == len(p.pending) {
		return 0
	}
	return p.pending[len(p.pending)-1].Issue
}

// WriteQueuedUntil returns when the upstream direction would finish n
// bytes of posted writes offered at t behind the TLPs booked on it until
// t (t at or after the last of them). The device frees a received
// packet's buffer by it when the packet's payload is not written (a
// duplicate, a NAKed request); a written payload frees by its write's
// own end.
func (p *PCIe) WriteQueuedUntil(t ib.PS, n int) ib.PS {
	tlps := (n + p.cfg.MPSBytes - 1) / p.cfg.MPSBytes
	return t + p.SerPS(n+tlps*p.cfg.TLPOverheadBytes)
}

// Read fetches n bytes of host memory at bus address addr for the HCA
// starting at t: one read request per ReadRequest chunk (at most MRRS, never
// across an MRRS-aligned address, so never across 4 KiB, as PCIe requires),
// each needing a free tag, answered after the read completion latency by
// completions of ReadCompletionBytes. It returns when the last completion has
// arrived at the HCA. A request does not pass the posted writes issued at or
// before its issue; its completions return in order, each after the previous.
func (p *PCIe) Read(t ib.PS, addr uint64, n int) ib.PS {
	if now := p.forget(); t < now {
		panic(fmt.Sprintf("hca: PCIe read booked at %d ps, before now %d ps", t, now))
	}
	p.flushPending(t)
	p.ReadBytes += int64(n)
	done := t
	issue := t
	// The first request runs to the first MRRS-aligned address (or the
	// read's end); from there every request is a whole MRRS but the last:
	// ReadRequest's chunks, with one division per read.
	mrrs := p.cfg.MRRSBytes
	r := ReadRequest(addr, n, mrrs)
	for rest := n; rest > 0; r = min(rest, mrrs) {
		rest -= r
		// The DMA engine issues one read's requests in order, each when
		// it has a tag.
		issue = p.takeTag(issue)
		reqAt := p.up.book(max(issue, p.postedDone(issue)), p.reqPS) + p.reqPS
		p.ReadRequests++
		end := p.completions(reqAt+p.readLat, r)
		p.releaseTag(end)
		done = max(done, end)
	}
	return done
}

// completions books the completions of a read request of r bytes due at
// t, each after the previous, and returns when the last ends.
func (p *PCIe) completions(t ib.PS, r int) ib.PS {
	train := p.mrrsCplPS
	if r != p.cfg.MRRSBytes {
		train = p.trainPS(r)
	}
	if start, ok := p.down.bookTail(t, train); ok {
		return start + train
	}
	full, rest := r/p.cfg.ReadCompletionBytes, r%p.cfg.ReadCompletionBytes
	end := t
	for k := 0; k < full; k++ {
		end = p.down.book(end, p.cplPS) + p.cplPS
	}
	if rest > 0 {
		restPS := p.SerPS(rest + p.cfg.CompletionOverheadBytes)
		end = p.down.book(end, restPS) + restPS
	}
	return end
}

// trainPS returns the time the completions of a read request of r bytes
// take back to back.
func (p *PCIe) trainPS(r int) ib.PS {
	full, rest := r/p.cfg.ReadCompletionBytes, r%p.cfg.ReadCompletionBytes
	train := ib.PS(full) * p.cplPS
	if rest > 0 {
		train += p.SerPS(rest + p.cfg.CompletionOverheadBytes)
	}
	return train
}

// takeTag returns when a read request ready at t gets a tag: at t if a
// tag is free then, the earliest free first (one free since before now,
// else the tag in use that frees first, if by t), else when the first tag
// in use frees. Tags are kept as the times they free, so a tag taken for a
// read booked ahead of now counts as in use from now, not from that read's
// issue: a read booked afterwards for an earlier time may wait for a tag
// it could have used meanwhile (only when every tag is in use).
func (p *PCIe) takeTag(t ib.PS) ib.PS {
	if len(p.tagBusy)-p.tagHead < p.tags {
		return t
	}
	free := p.tagBusy[p.tagHead]
	p.tagHead++
	if free > t {
		p.TagStallPS += free - t
		return free
	}
	return t
}

// releaseTag notes a tag in use until at.
func (p *PCIe) releaseTag(at ib.PS) {
	if p.tagHead > 64 && 2*p.tagHead > len(p.tagBusy) {
		n := copy(p.tagBusy, p.tagBusy[p.tagHead:])
		p.tagBusy, p.tagHead = p.tagBusy[:n], 0
	}
	n := len(p.tagBusy)
	if n == p.tagHead || p.tagBusy[n-1] <= at {
		// Reads booked in time order free their tags in that order.
		p.tagBusy = append(p.tagBusy, at)
		return
	}
	i := n - 1
	for i > p.tagHead && p.tagBusy[i-1] > at {
		i--
	}
	p.tagBusy = append(p.tagBusy, 0)
	copy(p.tagBusy[i+1:], p.tagBusy[i:n])
	p.tagBusy[i] = at
}

// Utilization returns the busy fraction of the upstream (HCA to host) and
// downstream (host to HCA) directions over [0, until].
func (p *PCIe) Utilization(until ib.PS) (up, down float64) {
	if until <= 0 {
		return 0, 0
	}
	return float64(p.up.busy) / float64(until), float64(p.down.busy) / float64(until)
}

// ReadBoundGbps returns the payload rate a stream of large DMA reads can
// reach: the smaller of the completion-efficiency bound raw × C / (C + O)
// and the tag bound tags × MRRS / round trip (Little's law).
// DLLPs (Ack, UpdateFC) are not modelled and would lower it slightly.
func (p *PCIe) ReadBoundGbps() float64 {
	c := float64(p.cfg.ReadCompletionBytes)
	o := float64(p.cfg.CompletionOverheadBytes)
	link := p.PayloadGbps() * c / (c + o)
	rtt := float64(p.SerPS(p.cfg.TLPOverheadBytes)+p.readLat) +
		float64(p.SerPS(p.cfg.MRRSBytes+p.cfg.CompletionOverheadBytes*p.cfg.MRRSBytes/p.cfg.ReadCompletionBytes))
	tags := float64(p.cfg.OutstandingReads) * float64(p.cfg.MRRSBytes) * 8 / rtt * 1000 // Gb/s
	return min(link, tags)
}

// retireTags frees the tags of reads whose completions are in by t.
func (p *PCIe) retireTags(t ib.PS) {
	for p.tagHead < len(p.tagBusy) && p.tagBusy[p.tagHead] <= t {
		p.tagHead++
	}
}

// TagsFree returns how many read requests may be issued at t without
// waiting for a tag.
func (p *PCIe) TagsFree(t ib.PS) int {
	p.forget()
	busy := p.tagBusy[p.tagHead:]
	i := 0
	for i < len(busy) && busy[i] <= t {
		i++
	}
	return p.tags - (len(busy) - i)
}

// NextTagFree returns when the first tag in use after t frees (t if none
// is).
func (p *PCIe) NextTagFree(t ib.PS) ib.PS {
	p.forget()
	for _, at := range p.tagBusy[p.tagHead:] {
		if at > t {
			return at
		}
	}
	return t
}

// BusyUntil returns when the link finishes the last TLP reserved on
// either direction: a received packet's buffer frees no later than the
// write its payload waits for, so after this the HCA holds no buffer space
// for work already booked.
func (p *PCIe) BusyUntil() ib.PS { return max(p.up.last, p.down.last) }

// Tags returns the number of read tags (hca.pcie.outstanding_reads).
func (p *PCIe) Tags() int { return p.tags }

// ReadRequestsAt returns the read requests Read makes for n bytes at addr:
// the MRRS-aligned units [addr, addr+n) touches, one more than by count
// (⌈n / MRRS⌉) when an unaligned read spans an extra boundary.
func (p *PCIe) ReadRequestsAt(addr uint64, n int) int {
	if n <= 0 {
		return 0
	}
	m := p.cfg.MRRSBytes // a power of two
	return (int(addr&uint64(m-1)) + n + m - 1) / m
}
